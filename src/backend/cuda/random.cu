// CUDA kernels of the random fills: uniform, normal, bernoulli, randint.
// Each fills a contiguous tensor from (seed, offset) with the values the CPU
// kernels produce for the same (seed, offset): one thread per Philox counter
// block, the element values from random_fill.h (Note [Random fills on the
// GPU]). One kernel per dtype; the op is a runtime switch.
#include <algorithm>
#include <limits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_errors.cuh"
#include "backend/cuda/random_fill.h"
#include "kernels/samplers.h"
#include "core/dispatch.h"

namespace brisk::detail {
/// Whether this thread captures a CUDA graph (src/profiler/profiler.cpp).
bool thread_capturing();
/// The captured graph's (seed, base offset) in device memory, or null
/// (Note [Random draws in a CUDA graph], core/generator.h).
const uint64_t* graph_random_state();
}  // namespace brisk::detail

namespace brisk::cuda::detail {
namespace {

constexpr int kRandomThreads = 256;

/// The graph's device state when this thread captures, else null. A capture
/// without one (a stream captured by hand, not through CUDAGraph) would
/// replay the same numbers: refused.
const uint64_t* graph_state_for_launch(const char* name) {
  if (!brisk::detail::thread_capturing()) return nullptr;
  const uint64_t* st = brisk::detail::graph_random_state();
  BRISK_CHECK(st != nullptr, name,
              "a random op in a CUDA stream capture that is not a brisk::cuda::CUDAGraph's: its numbers would be the "
              "same on every replay");
  return st;
}

__global__ void set_graph_state_kernel(uint64_t* state, uint64_t seed, uint64_t offset) {
  state[0] = seed;
  state[1] = offset;
}

/// Block b of the fill writes elements [b * per, b * per + per) (fewer in
/// the last block). Grid-stride over blocks; block indices are 64-bit.
template <class T>
__global__ void __launch_bounds__(kRandomThreads)
    random_kernel(const RandomParams p, uint64_t seed, uint64_t offset, const uint64_t* graph_state, T* out,
                  int64_t nblocks) {
  if (graph_state != nullptr) {  // in a graph: offset is relative to the replay's base
    seed = graph_state[0];
    offset += graph_state[1];
  }
  const int per = random_per_block(p);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kRandomThreads;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * kRandomThreads + threadIdx.x; b < nblocks; b += stride) {
    uint32_t r[4];
    philox::block(seed, offset + static_cast<uint64_t>(b), r);
    const int64_t first = b * per;
    const int64_t left = p.n - first;
    const int count = left < per ? static_cast<int>(left) : per;
    T vals[4];
    random_fill_block<T>(p, r, vals, count);
    for (int j = 0; j < 4; ++j)
      if (j < count) out[first + j] = vals[j];
  }
}

void launch(const Tensor& out, uint64_t seed, uint64_t offset, const RandomParams& p, const char* name) {
  if (p.n == 0) return;
  // in a capture, (seed, offset) come from the graph's device state at
  // replay (Note [Random draws in a CUDA graph])
  const uint64_t* graph_state = graph_state_for_launch(name);
  BRISK_CHECK(out.is_contiguous(), name, "internal: the random kernels fill contiguous tensors");
  DeviceGuard g(out.device().index);
  const int64_t nblocks = static_cast<int64_t>(philox::blocks_for(p.n, p.wide));
  const int64_t max_grid = static_cast<int64_t>(sm_count()) * 16;
  const int grid = static_cast<int>(std::min(ceil_div(nblocks, kRandomThreads), max_grid));
  cudaStream_t s = current_stream_handle(out.device().index);
  BRISK_DISPATCH_ALL(out.dtype(), name, [&] {
    random_kernel<scalar_t><<<grid, kRandomThreads, 0, s>>>(p, seed, offset, graph_state,
                                                            static_cast<scalar_t*>(out.data_ptr()), nblocks);
  });
  check_launch(name);
}

RandomParams base_params(const Tensor& out, RandomOp op, const KernelArgs& a) {
  RandomParams p;
  p.op = static_cast<int>(op);
  p.wide = a.mode == 1;
  p.n = out.numel();
  return p;
}

// s0 = from, s1 = to (mode 1: float64, wide draws).
void uniform_kernel(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& a) {
  BRISK_CHECK(is_floating_point(out.dtype()), "uniform_", "expected a floating point dtype, got ", out.dtype());
  RandomParams p = base_params(out, RandomOp::uniform, a);
  p.from = a.s0.to_double();
  p.to = a.s1.to_double();
  launch(out, seed, offset, p, "uniform_");
}

// s0 = mean, s1 = std.
void normal_kernel(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& a) {
  BRISK_CHECK(is_floating_point(out.dtype()), "normal_", "expected a floating point dtype, got ", out.dtype());
  RandomParams p = base_params(out, RandomOp::normal, a);
  p.mean = a.s0.to_double();
  p.sd = a.s1.to_double();
  launch(out, seed, offset, p, "normal_");
}

// s0 = p; any dtype; always 32-bit draws.
void bernoulli_kernel(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& a) {
  RandomParams p = base_params(out, RandomOp::bernoulli, a);
  p.wide = false;
  p.threshold = a.s0.to_double() * 4294967296.0;
  launch(out, seed, offset, p, "bernoulli_");
}

// i0 = low, i1 = high; mode 1: 64-bit draws (range of 2^32 or more).
void randint_kernel(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& a) {
  RandomParams p = base_params(out, RandomOp::randint, a);
  p.low = static_cast<uint64_t>(a.i0);
  p.range = static_cast<uint64_t>(a.i1) - p.low;
  BRISK_CHECK(p.range > 0 && (p.wide || p.range < (uint64_t{1} << 32)), "random_",
              "internal: bad range for the draw width");
  launch(out, seed, offset, p, "random_");
}

// The per-element samplers (Note [Samplers in one pass]): a thread per
// element, each running its rejection loop to the end on the device; the
// launch returns at once, nothing is read back.
// An invalid parameter gives NaN and is reported as a deferred device error
// (raised at the next sync; Note [Deferred index errors]).
template <class T>
__global__ void __launch_bounds__(kRandomThreads)
    sample_kernel_t(int which, const T* a, const T* b, T* out, int64_t n, uint64_t seed, uint64_t offset,
                    const uint64_t* graph_state, double tiny, DeviceErrorSlot err) {
  if (graph_state != nullptr) {
    seed = graph_state[0];
    offset += graph_state[1];
  }
  const auto sampler = static_cast<samplers::Sampler>(which);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kRandomThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kRandomThreads + threadIdx.x; i < n; i += stride) {
    const double ai = static_cast<double>(a[i]), bi = b ? static_cast<double>(b[i]) : 0.0;
    if (!samplers::valid_params(sampler, ai, bi)) {
      const DeviceErrorOp op = sampler == samplers::Sampler::standard_gamma ? DeviceErrorOp::standard_gamma
                               : sampler == samplers::Sampler::poisson      ? DeviceErrorOp::poisson
                                                                            : DeviceErrorOp::binomial;
      report_index_error(err, op, i, 0, 0);
      out[i] = static_cast<T>(samplers::kNaN);
      continue;
    }
    double v = samplers::sample_one(sampler, ai, bi, seed, offset, static_cast<uint64_t>(i));
    if (which == static_cast<int>(samplers::Sampler::standard_gamma) && v < tiny) v = tiny;
    out[i] = static_cast<T>(v);
  }
}

void sample_kernel(const Tensor& out, const Tensor& a, const Tensor& b, uint64_t seed, uint64_t offset, int which) {
  const int64_t n = out.numel();
  if (n == 0) return;
  // (the non-random functions of the slot reserve nothing and read no state)
  const bool random = samplers::is_random(static_cast<samplers::Sampler>(which));
  const uint64_t* graph_state = random ? graph_state_for_launch("sample") : nullptr;
  DeviceGuard g(out.device().index);
  const int64_t max_grid = static_cast<int64_t>(sm_count()) * 16;
  const int grid = static_cast<int>(std::min(ceil_div(n, kRandomThreads), max_grid));
  cudaStream_t s = current_stream_handle(out.device().index);
  const DeviceErrorSlot err = device_error_slot(out.device().index);
  BRISK_DISPATCH_FLOAT(out.dtype(), "sample", [&] {
    using L = std::numeric_limits<scalar_t>;
    sample_kernel_t<scalar_t><<<grid, kRandomThreads, 0, s>>>(
        which, static_cast<const scalar_t*>(a.data_ptr()),
        b.defined() ? static_cast<const scalar_t*>(b.data_ptr()) : nullptr, static_cast<scalar_t*>(out.data_ptr()), n,
        seed, offset, graph_state, static_cast<double>(L::min()), err);
  });
  check_launch("sample");
}

// multinomial's check of its probabilities (a thread per row): a row with an
// infinite, NaN or negative entry, or summing to 0, is a deferred device error.
template <class T>
__global__ void multinomial_check_t(const T* p, int64_t rows, int64_t ncat, DeviceErrorSlot err) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += stride) {
    double sum = 0;
    bool bad = false;
    for (int64_t c = 0; c < ncat; ++c) {
      const double v = static_cast<double>(p[r * ncat + c]);
      bad = bad || !(v >= 0 && v <= 1.79769313486231570815e308);
      sum += v;
    }
    if (bad || !(sum > 0)) report_index_error(err, DeviceErrorOp::multinomial, r, 0, 0);
  }
}

void multinomial_check(const Tensor& probs) {
  const int64_t rows = probs.size(0), ncat = probs.size(1);
  if (rows == 0 || ncat == 0) return;
  DeviceGuard g(probs.device().index);
  const DeviceErrorSlot err = device_error_slot(probs.device().index);
  const int grid = static_cast<int>(std::min<int64_t>(ceil_div(rows, int64_t{128}), int64_t{sm_count()} * 4));
  cudaStream_t s = current_stream_handle(probs.device().index);
  BRISK_DISPATCH_FLOAT(probs.dtype(), "multinomial", [&] {
    multinomial_check_t<scalar_t><<<grid, 128, 0, s>>>(static_cast<const scalar_t*>(probs.data_ptr()), rows, ncat,
                                                       err);
  });
  check_launch("multinomial");
}

}  // namespace

void register_random_kernels() {
  register_kernel<OpId::uniform>(kCUDA, uniform_kernel);
  register_kernel<OpId::normal>(kCUDA, normal_kernel);
  register_kernel<OpId::bernoulli>(kCUDA, bernoulli_kernel);
  register_kernel<OpId::randint>(kCUDA, randint_kernel);
  register_kernel<OpId::sample>(kCUDA, sample_kernel);
  register_kernel<OpId::multinomial_check>(kCUDA, multinomial_check);
}

/// Before a replay: the graph's kernels read (seed, offset) from `state`
/// (Note [Random draws in a CUDA graph]); a one-thread kernel on the replay
/// stream writes them, in stream order with the replays before and after.
void write_graph_random_state(uint64_t* state, uint64_t seed, uint64_t offset, cudaStream_t stream) {
  set_graph_state_kernel<<<1, 1, 0, stream>>>(state, seed, offset);
  check_launch("CUDAGraph.replay");
}

}  // namespace brisk::cuda::detail
