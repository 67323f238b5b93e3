// brisk::cuda::GraphRunner: bucketed CUDA-graph capture for serving (the
// pattern of SGLang's and vLLM's CUDA-graph runners, as a library).
//
//   brisk::cuda::GraphRunner runner(
//       [&](const TensorList& in) { return TensorList{model->forward(in[0])}; },
//       {torch_like_sample},                       // one sample per input: dim 0 is the batch
//       brisk::cuda::GraphRunnerOptions().set_buckets({1, 2, 4, 8, 16, 32}));
//   TensorList out = runner({x});                  // x: any batch size
//
// For each batch-size bucket a graph is captured once, largest first, into
// one shared private pool (the smaller graphs reuse the largest one's
// memory), over static input buffers of the largest bucket's size. A call
// copies its inputs into the first rows of the buffers, fills the rest of
// the bucket's rows with `pad_value`, replays the bucket's graph and
// returns views of the outputs' first rows. Those views alias the graph's
// output memory: the next call overwrites them (clone() what you keep).
// Batches above the largest bucket run the function eagerly.
//
// On the CPU there are no graphs: the runner pads into the static buffers
// and calls the function eagerly (the same padding, views and fallback:
// what the tests check without a GPU). See docs/design/cuda_graphs.md.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "brisk/cuda.h"
#include "brisk/tensor.h"

namespace brisk::cuda {

struct GraphRunnerOptions {
  /// Batch sizes to capture (sorted and deduplicated; all positive).
  std::vector<int64_t> buckets = default_buckets();
  /// Eager runs on the capture stream before the first capture (cuBLAS
  /// handles, workspaces, lazily built kernels, compile's traces).
  int warmup = 2;
  /// Value of the padding rows of every input.
  double pad_value = 0.0;

  GraphRunnerOptions& set_buckets(std::vector<int64_t> b) {
    buckets = std::move(b);
    return *this;
  }
  GraphRunnerOptions& set_warmup(int n) {
    warmup = n;
    return *this;
  }
  GraphRunnerOptions& set_pad_value(double v) {
    pad_value = v;
    return *this;
  }
  /// 1, 2, 4, 8, then 16, 24, ..., 160 (SGLang's default).
  static std::vector<int64_t> default_buckets();
};

/// What the runner did (report() prints it).
struct GraphRunnerStats {
  int64_t graphs = 0;            ///< captured (CUDA) or prepared (CPU) buckets
  double capture_seconds = 0;    ///< warm-up and capture, in all
  int64_t pool_bytes = 0;        ///< the shared pool's reserved bytes after capture (CUDA)
  int64_t replays = 0;           ///< calls served by a bucket
  int64_t padded_rows = 0;       ///< padding rows those calls computed
  int64_t eager_calls = 0;       ///< calls above the largest bucket
};

class GraphRunner {
 public:
  using Fn = std::function<TensorList(const TensorList&)>;

  /// `samples`: one tensor per input of `fn` (any batch size): their dtype,
  /// device and trailing dims are the inputs'. Captures every bucket now.
  GraphRunner(Fn fn, const TensorList& samples, GraphRunnerOptions options = {});
  ~GraphRunner();
  GraphRunner(const GraphRunner&) = delete;
  GraphRunner& operator=(const GraphRunner&) = delete;

  /// Runs `fn` on `inputs` (dim 0 the batch, the same for every input),
  /// through the smallest bucket that holds the batch.
  TensorList operator()(const TensorList& inputs);

  /// The bucket a batch of `batch` rows runs in; -1 above the largest.
  int64_t bucket_for(int64_t batch) const;
  const std::vector<int64_t>& buckets() const { return options_.buckets; }
  GraphRunnerStats stats() const { return stats_; }
  /// "GraphRunner: 23 graphs (1..160) captured in 1.24 s, pool 412.00 MiB; 1000 replays (...)".
  std::string report() const;
  /// Whether the buckets replay CUDA graphs (false on the CPU).
  bool uses_graphs() const { return use_graphs_; }

 private:
  void prepare(const TensorList& samples);
  TensorList run_bucket(size_t index, int64_t batch);

  Fn fn_;
  GraphRunnerOptions options_;
  bool use_graphs_ = false;
  TensorList static_inputs_;                  // (largest bucket, ...) each
  std::vector<TensorList> outputs_;           // per bucket: its graph's outputs
  std::vector<std::unique_ptr<CUDAGraph>> graphs_;  // per bucket (CUDA)
  MempoolId pool_;
  GraphRunnerStats stats_;
};

}  // namespace brisk::cuda
