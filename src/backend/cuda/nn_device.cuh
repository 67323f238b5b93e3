// Device-side helpers shared by the CUDA pooling and normalization kernels:
// brisk's host dtypes mapped to CUDA's, and reads/writes of small 1-D
// parameter tensors (weight, bias, running statistics) whose dtype is only
// known at run time (a switch, so the kernels reading them are not
// instantiated per parameter dtype).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "brisk/half.h"
#include "brisk/tensor.h"

namespace brisk::cuda::detail {

/// The device type of a brisk element type (same bits).
template <class S>
struct DevType {
  using type = S;
};
template <>
struct DevType<Half> {
  using type = __half;
};
template <>
struct DevType<BFloat16> {
  using type = __nv_bfloat16;
};

/// The type computed in: float for float and the 16-bit types, double for double.
template <class T>
struct DevAcc {
  using type = float;
};
template <>
struct DevAcc<double> {
  using type = double;
};

__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }
__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_acc(typename DevAcc<T>::type v);
template <>
__device__ __forceinline__ float from_acc<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ double from_acc<double>(double v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_acc<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// A 1-D floating tensor of any dtype and stride, read/written element i as
/// double (null: undefined tensor).
struct AnyVec {
  void* p = nullptr;
  int64_t stride = 0;
  int dtype = -1;
};

inline AnyVec any_vec(const Tensor& t) {
  AnyVec v;
  if (!t.defined()) return v;
  v.p = t.data_ptr();
  v.stride = t.dim() == 0 ? 0 : t.stride(0);
  v.dtype = static_cast<int>(t.dtype());
  return v;
}

/// v[i] as double, or `missing` when v is undefined.
__device__ __forceinline__ double any_load(const AnyVec& v, int64_t i, double missing) {
  if (v.p == nullptr) return missing;
  const int64_t o = i * v.stride;
  switch (v.dtype) {
    case static_cast<int>(ScalarType::Float): return static_cast<const float*>(v.p)[o];
    case static_cast<int>(ScalarType::Double): return static_cast<const double*>(v.p)[o];
    case static_cast<int>(ScalarType::Half): return __half2float(static_cast<const __half*>(v.p)[o]);
    case static_cast<int>(ScalarType::BFloat16): return __bfloat162float(static_cast<const __nv_bfloat16*>(v.p)[o]);
    default: return missing;
  }
}

/// v[i] = x, rounded as the CPU's scalar_t(double) (16-bit types through float).
__device__ __forceinline__ void any_store(const AnyVec& v, int64_t i, double x) {
  if (v.p == nullptr) return;
  const int64_t o = i * v.stride;
  switch (v.dtype) {
    case static_cast<int>(ScalarType::Float): static_cast<float*>(v.p)[o] = static_cast<float>(x); break;
    case static_cast<int>(ScalarType::Double): static_cast<double*>(v.p)[o] = x; break;
    case static_cast<int>(ScalarType::Half):
      static_cast<__half*>(v.p)[o] = __float2half_rn(static_cast<float>(x));
      break;
    case static_cast<int>(ScalarType::BFloat16):
      static_cast<__nv_bfloat16*>(v.p)[o] = __float2bfloat16_rn(static_cast<float>(x));
      break;
    default: break;
  }
}

}  // namespace brisk::cuda::detail
