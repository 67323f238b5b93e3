// brisk::cuda::GraphRunner: bucket choice, static buffers, padding and the
// eager fallback; the CUDA graphs themselves come from CUDAGraph. See
// include/brisk/graph_runner.h and docs/design/cuda_graphs.md.
#include "brisk/graph_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "brisk/error.h"
#include "brisk/ops.h"
#include "backend/cuda/block_allocator.h"  // format_size (host code only)
#include "brisk/profiler.h"
#include "core/profile_hooks.h"

namespace brisk::cuda {
namespace {

constexpr const char* kOp = "GraphRunner";

// Every output of the function has the bucket's rows as dim 0.
void check_outputs(const TensorList& out, int64_t rows) {
  for (size_t j = 0; j < out.size(); ++j)
    BRISK_CHECK(out[j].defined() && out[j].dim() >= 1 && out[j].size(0) == rows, kOp, "output ", j,
                " of the function must have the batch (", rows, ") as dim 0");
}

}  // namespace

std::vector<int64_t> GraphRunnerOptions::default_buckets() {
  std::vector<int64_t> b = {1, 2, 4, 8};
  for (int64_t n = 16; n <= 160; n += 8) b.push_back(n);
  return b;
}

GraphRunner::GraphRunner(Fn fn, const TensorList& samples, GraphRunnerOptions options)
    : fn_(std::move(fn)), options_(std::move(options)) {
  BRISK_CHECK(fn_ != nullptr, kOp, "the function is empty");
  auto& b = options_.buckets;
  BRISK_CHECK(!b.empty(), kOp, "no buckets were given");
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  BRISK_CHECK(b.front() >= 1, kOp, "bucket sizes must be positive, got ", b.front());
  BRISK_CHECK(options_.warmup >= 0, kOp, "warmup must be >= 0, got ", options_.warmup);
  prepare(samples);
}

GraphRunner::~GraphRunner() = default;

int64_t GraphRunner::bucket_for(int64_t batch) const {
  auto it = std::lower_bound(options_.buckets.begin(), options_.buckets.end(), batch);
  return it == options_.buckets.end() ? -1 : *it;
}

void GraphRunner::prepare(const TensorList& samples) {
  BRISK_CHECK(!samples.empty(), kOp, "give one sample tensor per input of the function");
  const Device device = samples[0].defined() ? samples[0].device() : Device(kCPU);
  for (size_t i = 0; i < samples.size(); ++i) {
    const Tensor& s = samples[i];
    BRISK_CHECK(s.defined() && s.dim() >= 1, kOp, "sample ", i, " must be a tensor with a batch dim (dim 0)");
    BRISK_CHECK(s.device() == device, kOp, "sample ", i, " is on ", s.device().str(), ", sample 0 on ",
                device.str(), ": the inputs must share one device");
  }
  use_graphs_ = device.is_cuda();
  const int64_t largest = options_.buckets.back();
  for (const Tensor& s : samples) {
    std::vector<int64_t> shape(s.sizes().begin(), s.sizes().end());
    shape[0] = largest;
    static_inputs_.push_back(full(shape, options_.pad_value, s.options()));
  }
  outputs_.resize(options_.buckets.size());
  graphs_.resize(options_.buckets.size());
  const auto t0 = std::chrono::steady_clock::now();
  auto views = [&](int64_t rows) {
    TensorList v;
    for (const Tensor& t : static_inputs_) v.push_back(t.narrow(0, 0, rows));
    return v;
  };
  if (use_graphs_) {
    // Warm-up and every capture on one side stream (cuda::capture_stream):
    // the warm-up makes its cuBLAS workspace, and the pool's blocks are kept
    // per stream, so the smaller graphs reuse what the larger ones freed.
    const Stream side = capture_stream(device.index);
    {
      side.wait(current_stream(device.index));
      StreamGuard guard(side);
      for (int i = 0; i < options_.warmup; ++i) (void)fn_(views(largest));
      side.synchronize();
    }
    pool_ = graph_pool_handle();
    // Largest first: the smaller graphs reuse the blocks it freed.
    for (size_t k = options_.buckets.size(); k-- > 0;) {
      auto g = std::make_unique<CUDAGraph>();
      TensorList out;
      {
        graph capture(*g, pool_, CaptureMode::Global, side);
        out = fn_(views(options_.buckets[k]));
      }
      check_outputs(out, options_.buckets[k]);
      outputs_[k] = std::move(out);
      graphs_[k] = std::move(g);
    }
    synchronize(device.index);
    stats_.pool_bytes = graph_pool_reserved(pool_, device.index);
  }
  stats_.graphs = static_cast<int64_t>(options_.buckets.size());
  stats_.capture_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TensorList GraphRunner::operator()(const TensorList& inputs) {
  BRISK_CHECK(inputs.size() == static_inputs_.size(), kOp, "expected ", static_inputs_.size(), " inputs, got ",
              inputs.size());
  BRISK_CHECK(inputs[0].defined() && inputs[0].dim() >= 1, kOp, "input 0 must be a tensor with a batch dim");
  const int64_t batch = inputs[0].size(0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    const Tensor& s = static_inputs_[i];
    BRISK_CHECK(x.defined() && x.dim() == s.dim(), kOp, "input ", i, " must have ", s.dim(), " dims (as its sample)");
    BRISK_CHECK(x.size(0) == batch, kOp, "input ", i, " has a batch of ", x.size(0), ", input 0 of ", batch);
    for (int64_t d = 1; d < s.dim(); ++d)
      BRISK_CHECK(x.size(d) == s.size(d), kOp, "input ", i, " has size ", x.size(d), " at dim ", d, ", its sample ",
                  s.size(d), " (only the batch may vary)");
    BRISK_CHECK(x.scalar_type() == s.scalar_type() && x.device() == s.device(), kOp, "input ", i, " is ",
                x.scalar_type(), " on ", x.device().str(), ", its sample ", s.scalar_type(), " on ", s.device().str());
  }
  BRISK_CHECK(batch >= 1, kOp, "the batch is empty");
  const int64_t bucket = bucket_for(batch);
  // Profiles show each call with its bucket ("GraphRunner.replay[8]", or
  // "GraphRunner.eager" above the largest).
  std::optional<profiler::record_function> event;
  if (BRISK_UNLIKELY(profiler::detail::active()))
    event.emplace(bucket < 0 ? std::string("GraphRunner.eager")
                             : "GraphRunner.replay[" + std::to_string(bucket) + "]");
  if (bucket < 0) {
    ++stats_.eager_calls;
    return fn_(inputs);
  }
  const size_t k = static_cast<size_t>(
      std::lower_bound(options_.buckets.begin(), options_.buckets.end(), bucket) - options_.buckets.begin());
  for (size_t i = 0; i < inputs.size(); ++i) {
    static_inputs_[i].narrow(0, 0, batch).copy_(inputs[i]);
    if (bucket > batch) static_inputs_[i].narrow(0, batch, bucket - batch).fill_(options_.pad_value);
  }
  ++stats_.replays;
  stats_.padded_rows += bucket - batch;
  return run_bucket(k, batch);
}

TensorList GraphRunner::run_bucket(size_t k, int64_t batch) {
  const int64_t rows = options_.buckets[k];
  TensorList out;
  if (use_graphs_) {
    graphs_[k]->replay();
    out = outputs_[k];  // (checked at capture)
  } else {
    TensorList v;
    for (const Tensor& t : static_inputs_) v.push_back(t.narrow(0, 0, rows));
    out = fn_(v);
    check_outputs(out, rows);
  }
  TensorList r;
  for (const Tensor& o : out) r.push_back(o.narrow(0, 0, batch));
  return r;
}

std::string GraphRunner::report() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "GraphRunner: %lld %s (%lld..%lld) in %.2f s%s%s; %lld replays (%lld padding rows), %lld eager calls",
                static_cast<long long>(stats_.graphs), use_graphs_ ? "graphs captured" : "buckets (CPU: no graphs)",
                static_cast<long long>(options_.buckets.front()), static_cast<long long>(options_.buckets.back()),
                stats_.capture_seconds, use_graphs_ ? ", pool " : "",
                use_graphs_ ? detail::format_size(stats_.pool_bytes).c_str() : "",
                static_cast<long long>(stats_.replays), static_cast<long long>(stats_.padded_rows),
                static_cast<long long>(stats_.eager_calls));
  return buf;
}

}  // namespace brisk::cuda
