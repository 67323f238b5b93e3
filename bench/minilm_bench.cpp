// all-MiniLM-L6-v2 sentence embeddings, brisk's side of bench/minilm_bench.py:
// each call tokenizes a batch of sentences (one per line of --sentences),
// runs the encoder under InferenceMode, mean-pools and normalizes; prints
// `key value` lines: the median and p99 call latency in ms, sentences per
// second, and (with --compile) the one-off compile time.
//
//   brisk_minilm_bench --model DIR --sentences FILE --batch 8 --threads 1 [--compile] [--bf16] [--calls N]
//                      [--device cpu|cuda] [--graphs] [--dump OUT.f32]
//
// --device cuda: the model on the GPU; each call still tokenizes on the CPU,
// copies the ids and mask to the device and copies the embeddings back to
// the CPU (a blocking copy: the timing includes the device's work).
// --graphs: one brisk::cuda::GraphRunner over the batch (its one bucket) for
// the length the sentences tokenize to, captured before the timing (on the
// CPU the runner pads the same way and runs eagerly). --dump writes the last
// call's embeddings as raw little-endian float32, (batch, 384) row-major.
#include <brisk/amp.h>
#include <brisk/brisk.h>
#include <brisk/compile.h>
#include <brisk/cuda.h>
#include <brisk/graph_runner.h>
#include <brisk/models/bert.h>
#include <brisk/text.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace brisk;

int main(int argc, char** argv) {
  std::string model, sentences, device_name = "cpu", dump;
  int threads = 1, calls = 20;
  int64_t batch = 1;
  bool compile = false, bf16 = false, graphs = false;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "missing value\n"), std::exit(2), ""); };
    if (!std::strcmp(argv[i], "--model")) model = next();
    else if (!std::strcmp(argv[i], "--sentences")) sentences = next();
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(next());
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(next());
    else if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(next());
    else if (!std::strcmp(argv[i], "--compile")) compile = true;
    else if (!std::strcmp(argv[i], "--bf16")) bf16 = true;
    else if (!std::strcmp(argv[i], "--graphs")) graphs = true;
    else if (!std::strcmp(argv[i], "--device")) device_name = next();
    else if (!std::strcmp(argv[i], "--dump")) dump = next();
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (device_name != "cpu" && device_name != "cuda") {
    std::fprintf(stderr, "--device is cpu or cuda, not '%s'\n", device_name.c_str());
    return 2;
  }
  const bool on_cuda = device_name == "cuda";
  if (on_cuda && !cuda::is_available()) {
    std::fprintf(stderr, "brisk_minilm_bench: --device cuda: no CUDA device is available (%s)\n",
                 cuda::unavailable_reason().c_str());
    return 1;
  }
  const Device device = on_cuda ? Device(kCUDA) : Device(kCPU);
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

  try {
    auto tok = text::BertTokenizer::from_file(model + "/vocab.txt");
    models::BertModel bert(models::BertConfig::from_json_file(model + "/config.json"));
    bert->load_safetensors(model + "/model.safetensors");
    bert->eval();
    if (on_cuda) bert->to(device);
    using Forward = std::function<Tensor(const Tensor&, const Tensor&)>;
    Forward forward = [&](const Tensor& ids, const Tensor& mask) {
      return models::l2_normalize(models::mean_pool(bert->forward(ids, mask), mask));
    };
    std::optional<Compiled<Forward>> compiled;
    if (compile) compiled.emplace(brisk::compile(forward));
    auto run = [&](const Tensor& ids, const Tensor& mask) {
      return compiled ? (*compiled)(ids, mask) : forward(ids, mask);
    };
    // --bf16: one scope around every call, as examples/embed_sentences holds
    // it, so that the weights are cast to bfloat16 once (the weight-cast cache
    // lives while a scope is open), not per call.
    std::optional<amp::autocast> weights_cast_once;
    if (bf16) weights_cast_once.emplace(device.type(), kBFloat16);
    // --graphs: one runner, its one bucket the batch, for the length the
    // sentences tokenize to (every call tokenizes the same texts), captured
    // here, before the timing.
    std::unique_ptr<cuda::GraphRunner> runner;
    if (graphs) {
      InferenceMode guard;
      const int64_t len = tok.encode_batch(texts).input_ids.size(1);
      Tensor sample = zeros({1, len}, TensorOptions().dtype(kLong).device(device));
      runner = std::make_unique<cuda::GraphRunner>(
          [&](const TensorList& x) { return TensorList{run(x[0], x[1])}; }, TensorList{sample, sample},
          cuda::GraphRunnerOptions().set_buckets({batch}));
    }
    auto call = [&] {
      InferenceMode guard;
      text::Encoding enc = tok.encode_batch(texts);
      std::optional<amp::autocast> cast;
      if (bf16) cast.emplace(device.type(), kBFloat16);
      Tensor ids = enc.input_ids, mask = enc.attention_mask;
      if (on_cuda) {
        ids = ids.to(device);
        mask = mask.to(device);
      }
      Tensor e = runner ? (*runner)({ids, mask})[0] : run(ids, mask);
      // on CUDA a blocking device-to-host copy: the call returns once the
      // device has finished the batch
      return on_cuda ? e.to(Device(kCPU), kFloat).contiguous() : e.to(kFloat).contiguous();
    };
    using Clock = std::chrono::steady_clock;
    const auto c0 = Clock::now();
    Tensor first = call();  // with --compile: the trace and code generation
    const double first_s = std::chrono::duration<double>(Clock::now() - c0).count();
    call();
    std::vector<double> ms;
    Tensor last;
    for (int i = 0; i < calls; ++i) {
      const auto a = Clock::now();
      Tensor e = call();
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
      last = std::move(e);
    }
    if (!dump.empty()) {
      std::ofstream f(dump, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(last.data_ptr<float>()),
              static_cast<std::streamsize>(last.numel() * sizeof(float)));
      if (!f) throw std::runtime_error("cannot write '" + dump + "'");
    }
    if (runner) std::fprintf(stderr, "%s\n", runner->report().c_str());
    double total = 0;
    for (double v : ms) total += v;
    std::sort(ms.begin(), ms.end());
    auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p / 100 * (ms.size() - 1) + 0.5))]; };
    std::printf("tokens %lld\n", static_cast<long long>(tok.encode(texts[0]).size()));
    std::printf("p50_ms %.4f\n", pct(50));
    std::printf("p99_ms %.4f\n", pct(99));
    std::printf("sentences_per_s %.4f\n", batch * 1e3 / (total / ms.size()));
    std::printf("first_call_s %.4f\n", first_s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk_minilm_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
