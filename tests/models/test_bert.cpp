// brisk::models::BertModel: all-MiniLM-L6-v2's embeddings against
// sentence-transformers' (tests/models/minilm_reference.txt, written by
// tools/models/minilm_reference.py from the token ids its tokenizer made), the
// padding invariance that batching relies on, loading by name and its errors,
// config parsing, and the encoder layer's gradients against finite
// differences.
#include <gtest/gtest.h>

#include <brisk/brisk.h>
#include <brisk/models/bert.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "models/minilm_reference.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace brisk;
using brisk::testing::expect_error;
using minilm::cosine;
using minilm::model_dir;

namespace {

models::BertModel& minilm_model() {
  static models::BertModel model = [] {
    const std::string dir = model_dir();
    models::BertModel m(models::BertConfig::from_json_file(dir + "/config.json"));
    m->load_safetensors(dir + "/model.safetensors");
    m->eval();
    return m;
  }();
  return model;
}

models::BertConfig tiny_config() {
  models::BertConfig c;
  c.vocab_size = 50;
  c.hidden_size = 8;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 12;
  c.max_position_embeddings = 16;
  c.layer_norm_eps = 1e-5;
  return c;
}

}  // namespace

TEST(MiniLM, EmbeddingsMatchSentenceTransformers) {
  REQUIRE_MINILM();
  set_num_threads(1);
  const minilm::Reference ref = minilm::reference();
  ASSERT_GE(ref.ids.size(), 50u);
  InferenceMode guard;
  double worst = 1;
  for (size_t i = 0; i < ref.ids.size(); ++i) {
    const auto& ids = ref.ids[i];
    Tensor t = tensor(ids, kLong).view({1, int64_t(ids.size())});
    Tensor mask = ones_like(t);
    Tensor e = models::l2_normalize(models::mean_pool(minilm_model()->forward(t, mask), mask));
    ASSERT_EQ(e.numel(), int64_t(ref.emb[i].size()));
    const double c = cosine(e.data_ptr<float>(), ref.emb[i]);
    EXPECT_GE(c, 0.99999) << "sentence " << i << " (" << ids.size() << " tokens)";
    EXPECT_NEAR(e.norm().item<double>(), 1.0, 1e-5);
    worst = std::min(worst, c);
  }
  std::cout << "worst cosine similarity over " << ref.ids.size() << " sentences: " << std::setprecision(9) << worst
            << "\n";
}

// Batching pads sentences to one length; the padded keys are masked out of
// attention and the mean, so each row must equal its sentence run alone.
TEST(MiniLM, PaddedBatchesGiveTheUnpaddedEmbeddings) {
  REQUIRE_MINILM();
  set_num_threads(1);
  const minilm::Reference ref = minilm::reference();
  InferenceMode guard;
  const std::vector<size_t> pick = {0, 4, 10, 20, 54, 56, 33, 7};  // 2 to 256 tokens, and an empty sentence
  int64_t len = 0;
  for (size_t p : pick) len = std::max<int64_t>(len, ref.ids[p].size());
  Tensor ids = zeros({int64_t(pick.size()), len}, kLong);
  Tensor mask = zeros({int64_t(pick.size()), len}, kLong);
  for (size_t r = 0; r < pick.size(); ++r) {
    const auto& v = ref.ids[pick[r]];
    ids[r].narrow(0, 0, v.size()).copy_(tensor(v, kLong));
    mask[r].narrow(0, 0, v.size()).fill_(1);
  }
  Tensor e = models::l2_normalize(models::mean_pool(minilm_model()->forward(ids, mask), mask)).contiguous();
  for (size_t r = 0; r < pick.size(); ++r)
    EXPECT_GE(cosine(e[r].data_ptr<float>(), ref.emb[pick[r]]), 0.99999) << "row " << r << ", sentence " << pick[r];
}

TEST(MiniLM, LoadsEveryTensorByName) {
  REQUIRE_MINILM();
  const std::string dir = model_dir();
  StateDict file = load(dir + "/model.safetensors");
  StateDict mine = minilm_model()->state_dict();
  EXPECT_EQ(mine.size(), file.size());
  for (const auto& [name, t] : mine) {
    const Tensor* f = file.find(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(equal(t, *f)) << name;
  }
  EXPECT_EQ(minilm_model()->config.hidden_size, 384);
  EXPECT_EQ(minilm_model()->config.num_hidden_layers, 6);
}

TEST(Bert, SaveAndLoadRoundTripsAndTheBertPrefixIsStripped) {
  set_num_threads(1);
  manual_seed(1);
  const auto cfg = tiny_config();
  models::BertModel a(cfg), b(cfg);
  a->eval();
  b->eval();
  const fs::path dir = fs::temp_directory_path() / ("brisk_bert_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  save(a, (dir / "a.safetensors").string());
  b->load_safetensors((dir / "a.safetensors").string());
  Tensor ids = tensor(std::vector<int64_t>{101 % 50, 7, 9, 3, 0, 0}, kLong).view({2, 3});
  Tensor mask = tensor(std::vector<int64_t>{1, 1, 1, 1, 0, 0}, kLong).view({2, 3});
  EXPECT_TRUE(equal(a->forward(ids, mask), b->forward(ids, mask)));

  // A BertForMaskedLM-style file: every key under "bert.", plus a head.
  StateDict prefixed;
  for (const auto& [name, t] : a->state_dict()) prefixed.insert("bert." + name, t.clone());
  prefixed.insert("cls.predictions.bias", zeros({cfg.vocab_size}));
  save(prefixed, (dir / "p.safetensors").string());
  models::BertModel c(cfg);
  c->eval();
  c->load_safetensors((dir / "p.safetensors").string());
  EXPECT_TRUE(equal(a->forward(ids, mask), c->forward(ids, mask)));

  // Missing and mis-shaped tensors are errors naming them.
  StateDict partial = a->state_dict();
  partial.erase("encoder.layer.1.output.dense.weight");
  save(partial, (dir / "m.safetensors").string());
  expect_error([&] { c->load_safetensors((dir / "m.safetensors").string()); },
               {"BertModel", "lacks 1", "encoder.layer.1.output.dense.weight"});
  auto bigger = cfg;
  bigger.hidden_size = 12;
  models::BertModel d(bigger);
  expect_error([&] { d->load_safetensors((dir / "a.safetensors").string()); }, {"shape"});
  auto deeper = cfg;
  deeper.num_hidden_layers = 1;
  models::BertModel e(deeper);
  expect_error([&] { e->load_safetensors((dir / "a.safetensors").string()); },
               {"BertModel", "has tensors this BERT does not", "encoder.layer.1."});
  fs::remove_all(dir);
}

TEST(Bert, ConfigFromJsonAndItsErrors) {
  const fs::path dir = fs::temp_directory_path() / ("brisk_bert_cfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& text) {
    std::ofstream(dir / "config.json") << text;
    return (dir / "config.json").string();
  };
  auto c = models::BertConfig::from_json_file(
      write(R"({"architectures": ["BertModel"], "hidden_size": 384, "num_attention_heads": 12, "hidden_act": "gelu",
               "intermediate_size": 1536, "num_hidden_layers": 6, "layer_norm_eps": 1e-12, "model_type": "bert",
               "nested": {"a": [1, {"b": null}]}, "use_cache": true})"));
  EXPECT_EQ(c.hidden_size, 384);
  EXPECT_EQ(c.num_hidden_layers, 6);
  EXPECT_EQ(c.intermediate_size, 1536);
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-12);
  expect_error([&] { models::BertConfig::from_json_file(write(R"({"hidden_act": "swish"})")); },
               {"BertConfig", "hidden_act \"swish\""});
  expect_error([&] { models::BertConfig::from_json_file(write(R"({"model_type": "roberta"})")); },
               {"BertConfig", "\"roberta\""});
  expect_error([&] { models::BertConfig::from_json_file(write(R"({"hidden_size": 10, "num_attention_heads": 3})")); },
               {"BertConfig", "not a multiple"});
  expect_error([&] { models::BertConfig::from_json_file(write(R"({"hidden_size": -4})")); },
               {"BertConfig", "hidden_size"});
  expect_error([&] { models::BertConfig::from_json_file(write(R"({"hidden_size": 4,)")); }, {"BertConfig"});
  // unknown keys are skipped however deeply they nest (no recursion to overflow)
  const std::string deep = std::string(R"({"x": )") + std::string(200000, '[') + std::string(200000, ']') + "}";
  EXPECT_EQ(models::BertConfig::from_json_file(write(deep)).hidden_size, 768);
  expect_error([&] { models::BertConfig::from_json_file(write(R"({"x": )" + std::string(200000, '[') + "}")); },
               {"BertConfig", "invalid JSON"});
  expect_error([&] { models::BertConfig::from_json_file((dir / "absent.json").string()); },
               {"BertConfig", "cannot open"});
  fs::remove_all(dir);
}

TEST(Bert, BadInputsAreClearErrors) {
  models::BertModel m(tiny_config());
  Tensor ids = zeros({2, 3}, kLong);
  expect_error([&] { m->forward(zeros({3}, kLong)); }, {"BertEmbeddings", "(batch, seq)"});
  expect_error([&] { m->forward(zeros({1, 17}, kLong)); }, {"BertEmbeddings", "max_position_embeddings"});
  expect_error([&] { m->forward(ids, ones({2, 4}, kLong)); }, {"BertModel", "attention_mask"});
  expect_error([&] { models::mean_pool(zeros({2, 3, 4}), ones({2, 4})); }, {"mean_pool"});
  auto no_pooler = tiny_config();
  no_pooler.add_pooling_layer = false;
  models::BertModel n(no_pooler);
  expect_error([&] { n->pool(zeros({1, 2, 8})); }, {"BertModel", "without a pooler"});
}

// mean_pool and l2_normalize against hand-computed values.
TEST(Bert, MeanPoolAndNormalizeKnownValues) {
  Tensor h = tensor(std::vector<float>{1, 2, 3, 4, 100, 100, /*row 2*/ 2, 0, 0, 2, 5, 5}).view({2, 3, 2});
  Tensor m = tensor(std::vector<int64_t>{1, 1, 0, 1, 0, 0}).view({2, 3});
  Tensor p = models::mean_pool(h, m);
  EXPECT_TRUE(brisk::testing::close(p, tensor(std::vector<float>{2, 3, 2, 0}).view({2, 2})));
  Tensor n = models::l2_normalize(tensor(std::vector<float>{3, 4, 0, 0}).view({2, 2}));
  EXPECT_TRUE(brisk::testing::close(n, tensor(std::vector<float>{0.6f, 0.8f, 0, 0}).view({2, 2})));
  // no tokens at all: zeros, not NaN (the count is clamped)
  Tensor z = models::mean_pool(h, zeros({2, 3}, kLong));
  EXPECT_TRUE(equal(z, zeros({2, 2})));
}

// The encoder layer's gradients (attention, masks, LayerNorm, gelu) against
// finite differences in float64.
TEST(Bert, EncoderLayerGradcheck) {
  set_num_threads(1);
  manual_seed(3);
  auto cfg = tiny_config();
  cfg.hidden_dropout_prob = 0;
  cfg.attention_probs_dropout_prob = 0;
  models::BertLayer layer(cfg);
  layer->to(kDouble);
  Tensor x = randn({2, 4, 8}, kDouble).requires_grad_();
  Tensor mask = tensor(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 0, 0}, kLong).view({2, 4}).ne(0).view({2, 1, 1, 4});
  EXPECT_TRUE(autograd::gradcheck([&](const TensorList& in) { return layer->forward(in[0], mask); }, {x}));
  // and into the parameters: the query projection's weight
  Tensor w = layer->attention->self->query->weight;
  EXPECT_TRUE(autograd::gradcheck(
      [&](const TensorList& in) {
        Tensor saved = layer->attention->self->query->weight;
        layer->attention->self->query->weight = in[0];
        Tensor y = layer->forward(x.detach(), mask);
        layer->attention->self->query->weight = saved;
        return y;
      },
      {w.detach().clone().requires_grad_()}));
}
