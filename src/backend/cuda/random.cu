// CUDA kernels of the random fills: uniform, normal, bernoulli, randint.
// Each fills a contiguous tensor from (seed, offset) with the values the CPU
// kernels produce for the same (seed, offset): one thread per Philox counter
// block, the element values from random_fill.h (Note [Random fills on the
// GPU]). One kernel per dtype; the op is a runtime switch.
#include <algorithm>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/random_fill.h"
#include "core/dispatch.h"

namespace brisk::detail {
/// Whether this thread captures a CUDA graph (src/profiler/profiler.cpp).
bool thread_capturing();
}  // namespace brisk::detail

namespace brisk::cuda::detail {
namespace {

constexpr int kRandomThreads = 256;

/// Block b of the fill writes elements [b * per, b * per + per) (fewer in
/// the last block). Grid-stride over blocks; block indices are 64-bit.
template <class T>
__global__ void __launch_bounds__(kRandomThreads)
    random_kernel(const RandomParams p, uint64_t seed, uint64_t offset, T* out, int64_t nblocks) {
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
  // (seed, offset) are kernel arguments: a captured launch would replay the
  // same numbers every time. Until graphs read them on the device, refuse.
  BRISK_CHECK(!brisk::detail::thread_capturing(), name,
              "random ops inside a CUDA graph capture are not supported yet: the graph would draw the same numbers "
              "on every replay (docs/design/cuda_graphs.md)");
  BRISK_CHECK(out.is_contiguous(), name, "internal: the random kernels fill contiguous tensors");
  DeviceGuard g(out.device().index);
  const int64_t nblocks = static_cast<int64_t>(philox::blocks_for(p.n, p.wide));
  const int64_t max_grid = static_cast<int64_t>(sm_count()) * 16;
  const int grid = static_cast<int>(std::min(ceil_div(nblocks, kRandomThreads), max_grid));
  cudaStream_t s = current_stream_handle(out.device().index);
  BRISK_DISPATCH_ALL(out.dtype(), name, [&] {
    random_kernel<scalar_t><<<grid, kRandomThreads, 0, s>>>(p, seed, offset, static_cast<scalar_t*>(out.data_ptr()),
                                                            nblocks);
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

}  // namespace

void register_random_kernels() {
  register_kernel<OpId::uniform>(kCUDA, uniform_kernel);
  register_kernel<OpId::normal>(kCUDA, normal_kernel);
  register_kernel<OpId::bernoulli>(kCUDA, bernoulli_kernel);
  register_kernel<OpId::randint>(kCUDA, randint_kernel);
}

}  // namespace brisk::cuda::detail
