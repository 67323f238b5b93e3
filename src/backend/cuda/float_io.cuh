// Loads and stores of brisk's floating dtypes in device code, computing in
// their "opmath" type: float for float32/float16/bfloat16, double for
// float64. brisk's Half/BFloat16 share the bit layout of __half and
// __nv_bfloat16, so device code reads their memory as those types.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace brisk::cuda::detail {

template <class S>
struct FloatIo;
template <>
struct FloatIo<float> {
  using opmath = float;
  static __device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
  static __device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
};
template <>
struct FloatIo<double> {
  using opmath = double;
  static __device__ __forceinline__ double load(const double* p, int64_t i) { return p[i]; }
  static __device__ __forceinline__ void store(double* p, int64_t i, double v) { p[i] = v; }
};
template <>
struct FloatIo<__half> {
  using opmath = float;
  static __device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
  static __device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
};
template <>
struct FloatIo<__nv_bfloat16> {
  using opmath = float;
  static __device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
  static __device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) {
    p[i] = __float2bfloat16_rn(v);
  }
};

}  // namespace brisk::cuda::detail
