// Device storage and math types of brisk's dtypes, and the conversions the
// elementwise engine applies on load and store (loops.cuh). Also compiled by
// NVRTC into compile's generated kernels (src/compile/codegen_cuda.cpp), so
// it includes nothing but the CUDA half headers and the standard headers
// that src/compile/nvrtc_std/ stands in for.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "brisk/half.h"

namespace brisk::cuda::detail {

// ---- device storage and math types ----------------------------------------------------
template <class T>
struct DeviceStorage {
  using type = T;
};
template <>
struct DeviceStorage<Half> {
  using type = __half;
};
template <>
struct DeviceStorage<BFloat16> {
  using type = __nv_bfloat16;
};
/// The type a kernel reads and writes brisk's dtype type T as.
template <class T>
using storage_t = typename DeviceStorage<T>::type;

template <class S>
struct DeviceMath {
  using type = S;
};
template <>
struct DeviceMath<__half> {
  using type = float;
};
template <>
struct DeviceMath<__nv_bfloat16> {
  using type = float;
};
/// The type a kernel computes on storage type S in (opmath_t on the device).
template <class S>
using math_t = typename DeviceMath<S>::type;

template <class S>
__device__ __forceinline__ math_t<S> to_math(S v) {
  return v;
}
template <>
__device__ __forceinline__ float to_math<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_math<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

/// Converts a result to storage type S as the CPU's static_cast<S> does (the
/// 16-bit floats round from float to nearest even).
template <class S, class V>
__device__ __forceinline__ S from_math(V v) {
  if constexpr (std::is_same_v<S, __half>)
    return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __float2bfloat16_rn(static_cast<float>(v));
  else
    return static_cast<S>(v);
}

template <class S>
__device__ __forceinline__ S bits_as(uint64_t bits) {
  S v;
  memcpy(&v, &bits, sizeof(S));
  return v;
}

}  // namespace brisk::cuda::detail
