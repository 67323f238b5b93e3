// multi_tensor_apply: one kernel launch (or a few) applies a functor to every
// chunk of every tensor of up to kDepth lists. The launch metadata travels by
// value as the kernel parameter (Note [Multi-tensor launch metadata] in
// mta_plan.h); the planner splits lists that exceed one launch's capacity.
//
// Note [Large kernel parameters]
// CUDA 12.1 raised the kernel parameter limit from 4 KB to 32764 bytes on
// Volta and newer GPUs (with a 12.1+ driver). The metadata structs are sized
// at compile time. Built with CUDA >= 12.1 (brisk requires nvcc 13, whose
// runtime needs a 13.x driver and a Turing or newer GPU), each kernel exists
// in two layouts: 4 KB, used for short lists (one or two launches), and
// 32 KB, with 8x the tensors and blocks per launch, used for long ones, so a
// 500-parameter optimizer step is one launch instead of nine (Note [Parameter
// size and launch cost] in mta_plan.h). A build with an older toolkit has
// only the 4 KB layout. The first 32 KB launch checks the driver version (a
// 12.0 driver would reject it with an opaque error).
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/mta_plan.h"
#include "brisk/error.h"

namespace brisk::cuda::detail::mta {

#if CUDART_VERSION >= 12010
constexpr int kParamBytes = kLargeParamBytes;
#else
constexpr int kParamBytes = kClassicParamBytes;
#endif

/// The metadata of kDepth lists and kScalars per-tensor scalars in this
/// build's largest layout.
template <int kDepth, int kScalars>
using MetaFor = Meta<kDepth, kScalars, kParamBytes>;

/// Threads per block and elements each thread keeps in flight per iteration.
constexpr int kThreads = 512;
constexpr int kIlp = 4;

/// f(meta, block) for every block of a launch; `f` is the op's functor.
template <class M, class F>
__global__ void __launch_bounds__(kThreads) mta_kernel(const __grid_constant__ M meta, const __grid_constant__ F f) {
  f(meta, int(blockIdx.x));
}

inline void check_param_support(const char* op) {
  if constexpr (kParamBytes > kClassicParamBytes) {
    static const int driver = [] {
      int v = 0;
      if (cudaDriverGetVersion(&v) != cudaSuccess) {
        (void)cudaGetLastError();
        v = 0;
      }
      return v;
    }();
    BRISK_CHECK(driver >= 12010, op, "this build passes ", kParamBytes,
                "-byte kernel parameters, which need a CUDA 12.1 or newer driver (found version ", driver, ")");
  }
}

template <class M, class F>
void launch_plan(const char* op, const std::vector<Launch>& plan, const std::vector<int64_t>& numels,
                 void* const* const* lists, const double* const* scalars, const F& make_f) {
  using Fn = decltype(make_f(std::declval<const Launch&>()));
  static_assert(sizeof(Fn) <= kArgsReserve, "functor larger than the parameter space kept for it");
  static_assert(sizeof(M) + sizeof(Fn) <= size_t(M::kParamBytesV), "launch parameters exceed the layout's limit");
  auto meta = std::make_unique<M>();  // value-initialised: unused slots are zero
  cudaStream_t stream = current_stream_handle();
  for (const Launch& l : plan) {
    fill_meta(*meta, l, lists, numels.data(), scalars);
    mta_kernel<M, Fn><<<unsigned(l.blocks), kThreads, 0, stream>>>(*meta, make_f(l));
    check_launch(op);
  }
}

/// Runs the functor of each planned launch over tensors of sizes `numels`
/// with kDepth lists and kScalars per-tensor scalars. lists[d] holds the
/// addresses of list d's tensors (null: absent), scalars[k] the per-tensor
/// scalars. make_f(const Launch&) returns the functor of one launch (most
/// ignore the launch; a reduction uses its first_block); the functor's
/// operator() is a template over the metadata type, which is the 4 KB or the
/// 32 KB layout (Note [Parameter size and launch cost] in mta_plan.h).
/// Launches go on the current stream of the current device.
template <int kDepth, int kScalars, class MakeF>
void launch(const char* op, const std::vector<int64_t>& numels, void* const* const* lists,
            const double* const* scalars, const MakeF& make_f) {
  using Small = Meta<kDepth, kScalars, kClassicParamBytes>;
  using Large = MetaFor<kDepth, kScalars>;
  std::vector<Launch> plan;
  if constexpr (kParamBytes > kClassicParamBytes) {
    if (plan_small(numels, Small::kMaxTensors, Small::kMaxBlocks, plan)) {
      if (!plan.empty()) launch_plan<Small>(op, plan, numels, lists, scalars, make_f);
      return;
    }
  }
  plan = plan_launches(numels, Large::kMaxTensors, Large::kMaxBlocks);
  if (plan.empty()) return;
  check_param_support(op);
  launch_plan<Large>(op, plan, numels, lists, scalars, make_f);
}

/// Block-wide reduction of one double per thread with `op` (whose identity
/// is 0); the result is valid in thread 0. Once per kernel (one shared array).
template <class Op>
__device__ __forceinline__ double block_reduce(double v, Op op) {
  __shared__ double warp_vals[32];
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_vals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nwarps = int((blockDim.x + 31) >> 5);
    v = lane < nwarps ? warp_vals[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  }
  return v;
}

}  // namespace brisk::cuda::detail::mta
