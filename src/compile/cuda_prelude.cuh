// What compile's generated CUDA kernels include (src/compile/codegen_cuda.cpp,
// Note [Generated CUDA kernels]): the eager kernels' device functors and
// conversions, a kernel argument block and the loop over a 1- or 2-dim
// iteration space. Compiled by NVRTC only.
#pragma once
#include "backend/cuda/pointwise_ops.cuh"

namespace brisk::cg {

/// The kernel's arguments: per operand its first byte and byte strides over
/// the group's two dims (innermost first), and the dims' sizes.
template <int N>
struct Args {
  char* p[N];
  long long s0[N];
  long long s1[N];
  long long n0, n1;
};

template <class S>
__device__ __forceinline__ S ld(const char* p) {
  return *reinterpret_cast<const S*>(p);
}
template <class S>
__device__ __forceinline__ void st(char* p, S v) {
  *reinterpret_cast<S*>(p) = v;
}
template <class S>
__device__ __forceinline__ S from_bits(unsigned long long bits) {
  S v;
  memcpy(&v, &bits, sizeof(S));
  return v;
}

// A node's result as the eager kernel leaves it in memory: an opaque add of
// -0 with round-to-nearest (exact for every value; a NaN comes back quiet),
// so that neither NVVM nor ptxas contracts the multiply that ends one node
// into an add that starts the next (the eager kernels store in between).
#if defined(BRISK_CUDA_HOST_EMULATION)
// (tests/compile/cuda_host_emulation.h: the generated kernels compiled by the
// host compiler, to test their indexing and conversions without a GPU)
inline float seal(float x) { return x; }
inline double seal(double x) { return x; }
#else
__device__ __forceinline__ float seal(float x) {
  float y;
  asm volatile("add.rn.f32 %0, %1, 0f80000000;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ double seal(double x) {
  double y;
  asm volatile("add.rn.f64 %0, %1, 0d8000000000000000;" : "=d"(y) : "d"(x));
  return y;
}
#endif
template <class S>
__device__ __forceinline__ S seal(S x) {
  return x;
}

/// Calls f(i0, i1, v) for every element of the n0 x n1 space, L elements
/// per thread and iteration of a grid-stride loop (Note [Lanes of a
/// generated kernel] in codegen_cuda.cpp): lane k of the call at i is
/// element i + k * step, its coordinates in i0[k], i1[k]; v[k] is false
/// past the end (the coordinates are then element i's). 32-bit index
/// arithmetic when the space allows it.
template <int L, class I, class F>
__device__ __forceinline__ void lanes_loop(I n0, I n1, I total, I start, I step, const F& f) {
  for (I i = start; i < total; i += I(L) * step) {
    long long i0[L], i1[L];
    bool v[L];
    for (int k = 0; k < L; ++k) {
      I idx = i + I(k) * step;
      v[k] = idx < total;
      if (!v[k]) idx = i;
      if (n1 == 1) {
        i0[k] = static_cast<long long>(idx);
        i1[k] = 0;
      } else {
        const I q = idx / n0;
        i0[k] = static_cast<long long>(idx - q * n0);
        i1[k] = static_cast<long long>(q);
      }
    }
    f(i0, i1, v);
  }
}

template <int L, class F>
__device__ __forceinline__ void for_each_lanes(long long n0, long long n1, const F& f) {
  const long long total = n0 * n1;
  const long long start = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  if (total + L * step <= 0xffffffffLL)
    lanes_loop<L, unsigned>(static_cast<unsigned>(n0), static_cast<unsigned>(n1), static_cast<unsigned>(total),
                            static_cast<unsigned>(start), static_cast<unsigned>(step), f);
  else
    lanes_loop<L, long long>(n0, n1, total, start, step, f);
}

}  // namespace brisk::cg
