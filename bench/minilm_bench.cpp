// all-MiniLM-L6-v2 sentence embeddings, brisk's side of bench/minilm_bench.py:
// each call tokenizes a batch of sentences (one per line of --sentences),
// runs the encoder under InferenceMode, mean-pools and normalizes; prints
// `key value` lines: the median and p99 call latency in ms, sentences per
// second, and (with --compile) the one-off compile time.
//
//   brisk_minilm_bench --model DIR --sentences FILE --batch 8 --threads 1 [--compile] [--bf16] [--calls N]
#include <brisk/amp.h>
#include <brisk/brisk.h>
#include <brisk/compile.h>
#include <brisk/models/bert.h>
#include <brisk/text.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

using namespace brisk;

int main(int argc, char** argv) {
  std::string model, sentences;
  int threads = 1, calls = 20;
  int64_t batch = 1;
  bool compile = false, bf16 = false;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "missing value\n"), std::exit(2), ""); };
    if (!std::strcmp(argv[i], "--model")) model = next();
    else if (!std::strcmp(argv[i], "--sentences")) sentences = next();
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(next());
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(next());
    else if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(next());
    else if (!std::strcmp(argv[i], "--compile")) compile = true;
    else if (!std::strcmp(argv[i], "--bf16")) bf16 = true;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  set_num_threads(threads);
  std::vector<std::string> lines;
  std::ifstream in(sentences);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  if (lines.empty() || batch < 1 || calls < 1) {
    std::fprintf(stderr, "need --sentences with lines, --batch >= 1, --calls >= 1\n");
    return 2;
  }
  std::vector<std::string> texts;
  for (int64_t i = 0; i < batch; ++i) texts.push_back(lines[i % lines.size()]);

  auto tok = text::BertTokenizer::from_file(model + "/vocab.txt");
  models::BertModel bert(models::BertConfig::from_json_file(model + "/config.json"));
  bert->load_safetensors(model + "/model.safetensors");
  bert->eval();
  using Forward = std::function<Tensor(const Tensor&, const Tensor&)>;
  Forward forward = [&](const Tensor& ids, const Tensor& mask) {
    return models::l2_normalize(models::mean_pool(bert->forward(ids, mask), mask));
  };
  std::optional<Compiled<Forward>> compiled;
  if (compile) compiled.emplace(brisk::compile(forward));
  auto call = [&] {
    InferenceMode guard;
    text::Encoding enc = tok.encode_batch(texts);
    std::optional<amp::autocast> cast;
    if (bf16) cast.emplace(kCPU, kBFloat16);
    Tensor e = compiled ? (*compiled)(enc.input_ids, enc.attention_mask) : forward(enc.input_ids, enc.attention_mask);
    return e.to(kFloat).contiguous();
  };
  // --bf16: one scope around every call, as examples/embed_sentences holds
  // it, so that the weights are cast to bfloat16 once (the weight-cast cache
  // lives while a scope is open), not per call.
  std::optional<amp::autocast> weights_cast_once;
  if (bf16) weights_cast_once.emplace(kCPU, kBFloat16);
  using Clock = std::chrono::steady_clock;
  const auto c0 = Clock::now();
  Tensor first = call();  // with --compile: the trace and code generation
  const double first_s = std::chrono::duration<double>(Clock::now() - c0).count();
  call();
  std::vector<double> ms;
  for (int i = 0; i < calls; ++i) {
    const auto a = Clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
  }
  double total = 0;
  for (double v : ms) total += v;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p / 100 * (ms.size() - 1) + 0.5))]; };
  std::printf("tokens %lld\n", static_cast<long long>(tok.encode(texts[0]).size()));
  std::printf("p50_ms %.4f\n", pct(50));
  std::printf("p99_ms %.4f\n", pct(99));
  std::printf("sentences_per_s %.4f\n", batch * 1e3 / (total / ms.size()));
  std::printf("first_call_s %.4f\n", first_s);
  return 0;
}
