// Device helpers shared by the CUDA reduction, scan and sort kernels
// (src/backend/cuda/{reduce,scan,sort}.cu): element loads/stores with the
// 16-bit floats computed in float, shuffles of any trivially copyable
// accumulator, and the merges of a block's lanes (Note [CUDA reduction
// layout] in reduce_plans.h). nvcc only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cuda/reduce_plans.h"
#include "brisk/dtype.h"

namespace brisk::cuda::rsk {

// ---- elements ----------------------------------------------------------------------
/// Reads one element in its compute type (float for Half and BFloat16).
template <class T>
__device__ __forceinline__ opmath_t<T> load(const T* p) {
  return *p;
}
template <>
__device__ __forceinline__ float load<Half>(const Half* p) {
  return __half2float(__ushort_as_half(p->x));
}
template <>
__device__ __forceinline__ float load<BFloat16>(const BFloat16* p) {
  return __bfloat162float(__ushort_as_bfloat16(p->x));
}

/// Writes v converted to T (round to nearest even for the 16-bit floats).
template <class T, class V>
__device__ __forceinline__ void store(T* p, V v) {
  *p = static_cast<T>(v);
}
template <class V>
__device__ __forceinline__ void store(Half* p, V v) {
  p->x = __half_as_ushort(__float2half_rn(static_cast<float>(v)));
}
template <class V>
__device__ __forceinline__ void store(BFloat16* p, V v) {
  p->x = __bfloat16_as_ushort(__float2bfloat16_rn(static_cast<float>(v)));
}

template <class M>
__device__ __forceinline__ bool is_nan(M v) {
  if constexpr (std::is_floating_point_v<M>)
    return v != v;
  else
    return false;
}

/// The smallest (lowest) and largest value of M: -inf / +inf for floats.
template <class M>
__device__ __forceinline__ M lowest_value() {
  if constexpr (std::numeric_limits<M>::has_infinity)
    return -std::numeric_limits<M>::infinity();
  else
    return std::numeric_limits<M>::lowest();
}
template <class M>
__device__ __forceinline__ M highest_value() {
  if constexpr (std::numeric_limits<M>::has_infinity)
    return std::numeric_limits<M>::infinity();
  else
    return std::numeric_limits<M>::max();
}

__device__ __forceinline__ float dsqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double dsqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float dpow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double dpow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float dexp(float x) { return expf(x); }
__device__ __forceinline__ double dexp(double x) { return exp(x); }
__device__ __forceinline__ float dlog(float x) { return logf(x); }
__device__ __forceinline__ double dlog(double x) { return log(x); }

// ---- shuffles ------------------------------------------------------------------------
template <class A>
struct Words {
  static constexpr int n = (sizeof(A) + 3) / 4;
};

/// __shfl_down_sync of any trivially copyable value (word by word).
template <class A>
__device__ __forceinline__ A shfl_down(const A& v, unsigned off, int width) {
  uint32_t w[Words<A>::n] = {};
  memcpy(w, &v, sizeof(A));
#pragma unroll
  for (int i = 0; i < Words<A>::n; ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], off, width);
  A r;
  memcpy(&r, w, sizeof(A));
  return r;
}
template <class A>
__device__ __forceinline__ A shfl_up(const A& v, unsigned off, int width) {
  uint32_t w[Words<A>::n] = {};
  memcpy(w, &v, sizeof(A));
#pragma unroll
  for (int i = 0; i < Words<A>::n; ++i) w[i] = __shfl_up_sync(0xffffffffu, w[i], off, width);
  A r;
  memcpy(&r, w, sizeof(A));
  return r;
}
template <class A>
__device__ __forceinline__ A shfl_idx(const A& v, int src, int width) {
  uint32_t w[Words<A>::n] = {};
  memcpy(w, &v, sizeof(A));
#pragma unroll
  for (int i = 0; i < Words<A>::n; ++i) w[i] = __shfl_sync(0xffffffffu, w[i], src, width);
  A r;
  memcpy(&r, w, sizeof(A));
  return r;
}

/// Merges the values of each group of `width` consecutive lanes (a power of
/// two <= 32) into the group's first lane. Every lane of the warp must call it.
template <class Op, class A>
__device__ __forceinline__ A group_reduce(const Op& op, A acc, int width) {
  for (int off = width / 2; off > 0; off >>= 1) {
    const A o = shfl_down(acc, static_cast<unsigned>(off), width);
    op.merge(acc, o);
  }
  return acc;
}

/// Merges the lanes of each output of a block laid out as in Note [CUDA
/// reduction layout]. Row mode: the result is in the thread with
/// threadIdx.x == 0 of each row; column mode: every thread of a column gets
/// it. smem: room for bx * by accumulators. Every thread of the block must
/// call it; it ends with a barrier when it used smem, so calls may follow
/// each other.
template <class Op, class A>
__device__ __forceinline__ A block_reduce(const Op& op, A acc, bool row, int bx, int by, A* smem) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (row) {
    if (bx <= 32) return group_reduce(op, acc, bx);
    acc = group_reduce(op, acc, 32);
    const int wpr = bx / 32;  // warps per row
    if ((tx & 31) == 0) smem[ty * wpr + (tx >> 5)] = acc;
    __syncthreads();
    if (tx < 32) {  // the row's first warp
      acc = tx < wpr ? smem[ty * wpr + tx] : op.identity();
      acc = group_reduce(op, acc, 32);
    }
    __syncthreads();
    return acc;
  }
  smem[ty * bx + tx] = acc;
  __syncthreads();
  for (int s = by / 2; s > 0; s >>= 1) {
    if (ty < s) {
      A m = smem[ty * bx + tx];
      op.merge(m, smem[(ty + s) * bx + tx]);
      smem[ty * bx + tx] = m;
    }
    __syncthreads();
  }
  const A r = smem[tx];
  __syncthreads();
  return r;
}

/// Gives every lane of a row (row mode) the value its lane 0 holds.
/// bcast: room for by values. Every thread of the block must call it.
template <class A>
__device__ __forceinline__ A row_broadcast(A v, int bx, A* bcast) {
  if (bx <= 32) return shfl_idx(v, 0, bx);
  if (threadIdx.x == 0) bcast[threadIdx.y] = v;
  __syncthreads();
  v = bcast[threadIdx.y];
  __syncthreads();
  return v;
}

/// gridDim.x at most (work items beyond it are looped over).
constexpr int64_t kMaxGridX = 0x7fffffff;

}  // namespace brisk::cuda::rsk
