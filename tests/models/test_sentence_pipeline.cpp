// The whole sentence-embedding pipeline from text, as examples/embed_sentences
// runs it: BertTokenizer.encode_batch (padding) -> BertModel -> mean_pool ->
// l2_normalize, against sentence-transformers' embeddings of the same
// sentences (tests/models/minilm_reference.txt), and with bfloat16 autocast
// and brisk::compile.
#include <gtest/gtest.h>

#include <brisk/amp.h>
#include <brisk/brisk.h>
#include <brisk/compile.h>
#include <brisk/models/bert.h>
#include <brisk/text.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/minilm_reference.h"

namespace fs = std::filesystem;
using namespace brisk;

namespace {

struct Pipeline {
  text::BertTokenizer tok;
  models::BertModel bert;
  explicit Pipeline(const std::string& dir)
      : tok(text::BertTokenizer::from_file(dir + "/vocab.txt")),
        bert(models::BertConfig::from_json_file(dir + "/config.json")) {
    bert->load_safetensors(dir + "/model.safetensors");
    bert->eval();
  }
};

Pipeline& pipeline() {
  static Pipeline p(minilm::model_dir());
  return p;
}

// Embeds all sentences in batches of `batch` with `forward`, returns the
// worst cosine similarity against the reference.
template <class F>
double worst_cosine(F&& forward, int64_t batch) {
  const auto texts = minilm::sentences();
  const auto ref = minilm::reference().emb;
  EXPECT_EQ(texts.size(), ref.size());
  EXPECT_GE(texts.size(), 50u);
  double worst = 1;
  InferenceMode guard;
  for (size_t start = 0; start < texts.size(); start += batch) {
    std::vector<std::string> chunk(texts.begin() + start, texts.begin() + std::min(texts.size(), start + batch));
    text::Encoding enc = pipeline().tok.encode_batch(chunk, /*pad_to_multiple_of=*/16);
    Tensor e = forward(enc.input_ids, enc.attention_mask).to(kFloat).contiguous();
    for (size_t r = 0; r < chunk.size(); ++r) {
      const double c = minilm::cosine(e[r].data_ptr<float>(), ref[start + r]);
      worst = std::min(worst, c);
    }
  }
  return worst;
}

Tensor embed(const Tensor& ids, const Tensor& mask) {
  return models::l2_normalize(models::mean_pool(pipeline().bert->forward(ids, mask), mask));
}

}  // namespace

TEST(SentencePipeline, Float32MatchesSentenceTransformers) {
  REQUIRE_MINILM();
  set_num_threads(1);
  const double worst = worst_cosine(embed, 16);
  EXPECT_GE(worst, 0.99999);
  std::printf("float32, batches of 16 padded to multiples of 16: worst cosine %.9f\n", worst);
}

TEST(SentencePipeline, CompiledForwardMatches) {
  REQUIRE_MINILM();
  set_num_threads(1);
  CompileOptions o;
  o.dynamic = true;
  o.cache_size_limit = 32;
  auto compiled = brisk::compile(embed, o);
  const double worst = worst_cosine([&](const Tensor& i, const Tensor& m) { return compiled(i, m); }, 16);
  EXPECT_GE(worst, 0.99999);
  EXPECT_EQ(compiled.stats().eager_calls, 0) << compiled.stats().last_break;
  EXPECT_GE(compiled.stats().cache_hits + compiled.stats().traces, 4);
}

// bfloat16 autocast: the GEMMs round their inputs to 8 bits of mantissa, so
// the embeddings move; they must stay close (sentence-transformers under
// torch.autocast("cpu", bfloat16) lands at the same distance).
TEST(SentencePipeline, Bfloat16AutocastStaysClose) {
  REQUIRE_MINILM();
  set_num_threads(1);
  const double worst = worst_cosine(
      [](const Tensor& i, const Tensor& m) {
        amp::autocast cast(kCPU, kBFloat16);
        return embed(i, m);
      },
      16);
  EXPECT_GE(worst, 0.99);
  EXPECT_LT(worst, 0.999999);  // it did run in bfloat16
  std::printf("bfloat16 autocast: worst cosine %.6f\n", worst);
}
