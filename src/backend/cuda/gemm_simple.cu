// Integer GEMM and empty sums on CUDA (gemm_simple.h): one 16x16 tile of the
// output per block, tiles of a and b staged through shared memory, any
// strides (int64 indexing). Integers accumulate in uint64, which wraps: the
// low bits of the result are those of the exact sum, as on the CPU.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/gemm_simple.h"
#include "backend/cuda/float_io.cuh"

namespace brisk::cuda::detail {
namespace {

constexpr int kTile = 16;

/// The accumulator of each dtype and the conversions to and from it.
template <class T>
struct Accum {  // integers
  using type = uint64_t;
  static __device__ __forceinline__ type load(const T* p, int64_t i) { return uint64_t(int64_t(p[i])); }
  static __device__ __forceinline__ void store(T* p, int64_t i, type v) { p[i] = T(v); }
};
template <class T>
struct FloatAccum {
  using type = typename FloatIo<T>::opmath;
  static __device__ __forceinline__ type load(const T* p, int64_t i) { return FloatIo<T>::load(p, i); }
  static __device__ __forceinline__ void store(T* p, int64_t i, type v) { FloatIo<T>::store(p, i, v); }
};
template <>
struct Accum<float> : FloatAccum<float> {};
template <>
struct Accum<double> : FloatAccum<double> {};
template <>
struct Accum<__half> : FloatAccum<__half> {};
template <>
struct Accum<__nv_bfloat16> : FloatAccum<__nv_bfloat16> {};

template <class T>
struct SimpleGemmArgs {
  using V = typename Accum<T>::type;
  T* out;
  const T* a;
  const T* b;
  int64_t batch, m, n, k;
  int64_t os0, os1, os2, as0, as1, as2, bs0, bs1, bs2;  // strides in elements
  V alpha, beta;
  bool beta_zero;
};

// out: (batch, m, n); a: (batch, m, k); b: (batch, k, n). Blocks loop over
// tiles beyond the grid (gridDim.y/z are capped at 65535).
template <class T>
__global__ void __launch_bounds__(kTile* kTile) gemm_simple_kernel(const SimpleGemmArgs<T> p) {
  using A = Accum<T>;
  using V = typename A::type;
  __shared__ V as[kTile][kTile + 1];
  __shared__ V bs[kTile][kTile + 1];
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const int64_t mt = (p.m + kTile - 1) / kTile, nt = (p.n + kTile - 1) / kTile;
  for (int64_t bi = blockIdx.z; bi < p.batch; bi += gridDim.z)
    for (int64_t ti = blockIdx.y; ti < mt; ti += gridDim.y)
      for (int64_t tj = blockIdx.x; tj < nt; tj += gridDim.x) {
        const int64_t i = ti * kTile + ty, j = tj * kTile + tx;
        const T* a = p.a + bi * p.as0;
        const T* b = p.b + bi * p.bs0;
        V acc = V(0);
        for (int64_t p0 = 0; p0 < p.k; p0 += kTile) {
          as[ty][tx] = (i < p.m && p0 + tx < p.k) ? A::load(a, i * p.as1 + (p0 + tx) * p.as2) : V(0);
          bs[ty][tx] = (p0 + ty < p.k && j < p.n) ? A::load(b, (p0 + ty) * p.bs1 + j * p.bs2) : V(0);
          __syncthreads();
#pragma unroll
          for (int q = 0; q < kTile; ++q) acc += as[ty][q] * bs[q][tx];
          __syncthreads();
        }
        if (i < p.m && j < p.n) {
          T* o = p.out + bi * p.os0;
          const int64_t oi = i * p.os1 + j * p.os2;
          V r = p.beta_zero ? V(0) : p.beta * A::load(o, oi);
          if (p.k > 0) r = r + p.alpha * acc;  // an empty sum adds nothing (not alpha * 0)
          A::store(o, oi, r);
        }
      }
}

template <class T>
void launch(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  using V = typename Accum<T>::type;
  SimpleGemmArgs<T> p{};
  p.out = static_cast<T*>(out.data_ptr());
  p.a = static_cast<const T*>(a.data_ptr());
  p.b = static_cast<const T*>(b.data_ptr());
  p.batch = out.size(0), p.m = out.size(1), p.n = out.size(2), p.k = a.size(2);
  p.os0 = out.stride(0), p.os1 = out.stride(1), p.os2 = out.stride(2);
  p.as0 = a.stride(0), p.as1 = a.stride(1), p.as2 = a.stride(2);
  p.bs0 = b.stride(0), p.bs1 = b.stride(1), p.bs2 = b.stride(2);
  if constexpr (std::is_same_v<V, uint64_t>) {
    p.alpha = uint64_t(alpha.to<int64_t>());
    p.beta = uint64_t(beta.to<int64_t>());
  } else {
    p.alpha = V(alpha.to_double());
    p.beta = V(beta.to_double());
  }
  p.beta_zero = beta.to_double() == 0.0;
  const int64_t mt = ceil_div(p.m, kTile), nt = ceil_div(p.n, kTile);
  const dim3 grid(unsigned(std::min<int64_t>(nt, INT32_MAX)), unsigned(std::min<int64_t>(mt, 65535)),
                  unsigned(std::min<int64_t>(p.batch, 65535)));
  gemm_simple_kernel<T><<<grid, dim3(kTile, kTile), 0, current_stream_handle()>>>(p);
  check_launch("matmul");
}

}  // namespace

void gemm_simple(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  if (out.numel() == 0) return;
  switch (out.dtype()) {
    case kUInt8: return launch<uint8_t>(out, a, b, alpha, beta);
    case kInt8: return launch<int8_t>(out, a, b, alpha, beta);
    case kInt16: return launch<int16_t>(out, a, b, alpha, beta);
    case kInt32: return launch<int32_t>(out, a, b, alpha, beta);
    case kInt64: return launch<int64_t>(out, a, b, alpha, beta);
    case kFloat: return launch<float>(out, a, b, alpha, beta);
    case kDouble: return launch<double>(out, a, b, alpha, beta);
    case kHalf: return launch<__half>(out, a, b, alpha, beta);
    case kBFloat16: return launch<__nv_bfloat16>(out, a, b, alpha, beta);
    default: BRISK_FAIL("matmul", "not supported for dtype ", out.dtype());
  }
}

}  // namespace brisk::cuda::detail
