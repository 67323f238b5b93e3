// The CUDA elementwise engine: runs a functor over a built TensorIter.
//
//   gpu_kernel<Out, In0, In1>(it, "add", AddOp<float>{...});
//
// Out and In... are device storage types (float, double, __half,
// __nv_bfloat16, int64_t, int32_t, int16_t, int8_t, uint8_t, bool; see storage_t). The functor
// is called with each input in its math type (float for the 16-bit floats)
// and its result is converted to Out. The engine owns the loops
// (Note [CUDA elementwise loops]); kernels only pick types and a functor.
// Included by the .cu files of the backend only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_types.cuh"
#include "backend/cuda/iter_plan.h"
#include "core/tensor_iter.h"

namespace brisk::cuda::detail {

/// An input read with its runtime dtype (TensorIter::dtypes) and converted to
/// Out's math type the way the CPU's copy does: through the input's opmath
/// type, then static_cast. Used by copy's converting kernels only (strided
/// loop; no vector loads).
template <class Out>
struct AnyDtype {};

template <class S>
struct Loader {
  using value_t = math_t<S>;
  static constexpr bool kDynamic = false;
  static constexpr int64_t kSize = sizeof(S);
  __device__ static value_t load(const char* p, int8_t) { return to_math(*reinterpret_cast<const S*>(p)); }
  __device__ static value_t from_bits(uint64_t bits, int8_t) { return to_math(bits_as<S>(bits)); }
};

template <class Out>
struct Loader<AnyDtype<Out>> {
  using value_t = math_t<Out>;
  static constexpr bool kDynamic = true;
  static constexpr int64_t kSize = 0;

  template <class S>
  __device__ static value_t cvt(S v) {
    return static_cast<value_t>(to_math(v));
  }
  template <class Read>
  __device__ static value_t by_dtype(int8_t dt, const Read& read) {
    switch (static_cast<ScalarType>(dt)) {
      case ScalarType::Bool: return cvt(read(bool{}));
      case ScalarType::UInt8: return cvt(read(uint8_t{}));
      case ScalarType::Int8: return cvt(read(int8_t{}));
      case ScalarType::Int16: return cvt(read(int16_t{}));
      case ScalarType::Int32: return cvt(read(int32_t{}));
      case ScalarType::Int64: return cvt(read(int64_t{}));
      case ScalarType::Half: return cvt(read(__half{}));
      case ScalarType::BFloat16: return cvt(read(__nv_bfloat16{}));
      case ScalarType::Float: return cvt(read(float{}));
      default: return cvt(read(double{}));
    }
  }
  __device__ static value_t load(const char* p, int8_t dt) {
    return by_dtype(dt, [p](auto tag) { return *reinterpret_cast<const decltype(tag)*>(p); });
  }
  __device__ static value_t from_bits(uint64_t bits, int8_t dt) {
    return by_dtype(dt, [bits](auto tag) { return bits_as<decltype(tag)>(bits); });
  }
};

// ---- a minimal tuple for the inputs' values (std::tuple is host-only in places) ----
template <size_t I, class T>
struct ValueTupleLeaf {
  T value;
};
template <class Seq, class... T>
struct ValueTupleImpl;
template <size_t... I, class... T>
struct ValueTupleImpl<std::index_sequence<I...>, T...> : ValueTupleLeaf<I, T>... {};
template <class... T>
struct ValueTuple : ValueTupleImpl<std::index_sequence_for<T...>, T...> {};
template <size_t I, class T>
__device__ __forceinline__ T& tuple_get(ValueTupleLeaf<I, T>& l) {
  return l.value;
}

template <class S, int N>
struct alignas(sizeof(S) * N) AlignedVec {
  S v[N];
};
template <class T, int N>
struct ValueArray {
  T v[N];
};

/// Input pointers and host values, by value in the kernel parameters.
template <int NIN>
struct InputArgs {
  static constexpr int N = NIN > 0 ? NIN : 1;
  const char* ptr[N];
  uint64_t bits[N];      ///< the value of a host operand (Scalar or 0-dim CPU tensor)
  int8_t dtype[N];       ///< runtime dtypes (for AnyDtype inputs)
  uint32_t by_value = 0; ///< bit k: input k is a host operand, read from bits[k]
  uint32_t bcast = 0;    ///< bit k: input k has stride 0 on the contiguous loop
};

constexpr int kElementwiseThreads = 256;

// Note [CUDA elementwise loops]
// Three loops, all grid-stride (the grid is capped at a few waves):
//  - contiguous: one dim, every operand dense or stride 0. Flat index; with
//    `vec`, 4 elements per thread and iteration through aligned vector loads
//    and stores (16 bytes for float), then a scalar tail.
//  - strided, 32-bit: OffsetCalculator with uint32 indices and int32 byte
//    offsets, magic-number division; taken when numel and every operand's
//    extent in bytes fit in int32.
//  - strided, 64-bit: the same with 64-bit math.
// Stride-0 inputs and host operands are read once per thread before the loop.
template <class In>
__device__ __forceinline__ typename Loader<In>::value_t read_once(const char* p, uint64_t bits, int8_t dt,
                                                                  bool by_value) {
  return by_value ? Loader<In>::from_bits(bits, dt) : Loader<In>::load(p, dt);
}

template <class F, class Out, class... In, size_t... I>
__device__ __forceinline__ void contiguous_loop(const F& f, Out* out, const InputArgs<sizeof...(In)>& in, int64_t n,
                                                bool vec, std::index_sequence<I...>) {
  ValueTuple<typename Loader<In>::value_t...> once;
  ((tuple_get<I>(once) = (in.bcast >> I & 1u) ? read_once<In>(in.ptr[I], in.bits[I], in.dtype[I], in.by_value >> I & 1u)
                                        : typename Loader<In>::value_t{}),
   ...);
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t tail = 0;
  if (vec) {
    const int64_t nvec = n / kVecElems;
    for (int64_t v = tid; v < nvec; v += step) {
      ValueTuple<ValueArray<typename Loader<In>::value_t, kVecElems>...> vals;
      (
          [&] {
            auto& dst = tuple_get<I>(vals);
            if (in.bcast >> I & 1u) {
              for (int j = 0; j < kVecElems; ++j) dst.v[j] = tuple_get<I>(once);
            } else {
              using Vec = AlignedVec<In, kVecElems>;
              const Vec x = reinterpret_cast<const Vec*>(in.ptr[I])[v];
              for (int j = 0; j < kVecElems; ++j) dst.v[j] = to_math(x.v[j]);
            }
          }(),
          ...);
      AlignedVec<Out, kVecElems> r;
      BRISK_UNROLL
      for (int j = 0; j < kVecElems; ++j) r.v[j] = from_math<Out>(f(tuple_get<I>(vals).v[j]...));
      reinterpret_cast<AlignedVec<Out, kVecElems>*>(out)[v] = r;
    }
    tail = nvec * kVecElems;
  }
  for (int64_t i = tail + tid; i < n; i += step)
    out[i] = from_math<Out>(f(((in.bcast >> I & 1u) ? tuple_get<I>(once)
                                                     : Loader<In>::load(in.ptr[I] + i * Loader<In>::kSize, 0))...));
}

template <class F, class Out, class... In>
__global__ void __launch_bounds__(kElementwiseThreads)
    contiguous_kernel(F f, Out* out, InputArgs<sizeof...(In)> in, int64_t n, bool vec) {
  contiguous_loop<F, Out, In...>(f, out, in, n, vec, std::index_sequence_for<In...>{});
}

template <bool k32, class F, class Out, class... In, size_t... I>
__device__ __forceinline__ void strided_loop(const F& f, char* out, const InputArgs<sizeof...(In)>& in,
                                             const OffsetCalculator<sizeof...(In) + 1, k32>& oc,
                                             typename OffsetCalculator<sizeof...(In) + 1, k32>::index_t n,
                                             std::index_sequence<I...>) {
  using index_t = typename OffsetCalculator<sizeof...(In) + 1, k32>::index_t;
  ValueTuple<typename Loader<In>::value_t...> once;
  ((tuple_get<I>(once) = (in.by_value >> I & 1u) ? Loader<In>::from_bits(in.bits[I], in.dtype[I])
                                           : typename Loader<In>::value_t{}),
   ...);
  const index_t step = index_t(gridDim.x) * blockDim.x;
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const auto off = oc.get(i);
    const Out r = from_math<Out>(f(((in.by_value >> I & 1u) ? tuple_get<I>(once)
                                                            : Loader<In>::load(in.ptr[I] + off.v[I + 1], in.dtype[I]))...));
    *reinterpret_cast<Out*>(out + off.v[0]) = r;
  }
}

template <bool k32, class F, class Out, class... In>
__global__ void __launch_bounds__(kElementwiseThreads)
    strided_kernel(F f, char* out, InputArgs<sizeof...(In)> in, OffsetCalculator<sizeof...(In) + 1, k32> oc,
                   typename OffsetCalculator<sizeof...(In) + 1, k32>::index_t n) {
  strided_loop<k32, F, Out, In...>(f, out, in, oc, n, std::index_sequence_for<In...>{});
}

/// Blocks for `items` work items of one thread each: enough to cover them,
/// at most 32 blocks of kElementwiseThreads per SM (the loops are grid-stride).
inline unsigned elementwise_grid(int64_t items) {
  const int64_t cap = int64_t(sm_count()) * 32;
  int64_t b = ceil_div(items, kElementwiseThreads);
  if (b > cap) b = cap;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

/// Runs out = f(in...) over a built TensorIter on its device, on the current
/// stream (asynchronous; no synchronisation).
template <class Out, class... In, class F>
void gpu_kernel(TensorIter& it, const char* op, const F& f) {
  constexpr int nin = static_cast<int>(sizeof...(In));
  constexpr bool dynamic = (Loader<In>::kDynamic || ... || false);
  BRISK_ASSERT(it.noperands == nin + 1);
  if (it.numel == 0) return;
  DeviceGuard guard(iter_device(it));
  const int64_t elem_size[TensorIter::kMaxOperands] = {int64_t(sizeof(Out)),
                                                        int64_t(element_size(it.dtypes[1 < it.noperands ? 1 : 0])),
                                                        int64_t(element_size(it.dtypes[2 < it.noperands ? 2 : 0])),
                                                        int64_t(element_size(it.dtypes[3 < it.noperands ? 3 : 0]))};
  InputArgs<nin> in{};
  for (int i = 0; i < nin; ++i) {
    const int k = i + 1;
    in.ptr[i] = it.data[k];
    in.dtype[i] = static_cast<int8_t>(it.dtypes[k]);
    in.bits[i] = 0;
    if (is_host_operand(it, k)) {
      in.by_value |= 1u << i;
      in.bcast |= 1u << i;
      in.bits[i] = host_operand_bits(it, k);
      in.ptr[i] = nullptr;
    } else if (it.ndim == 1 && it.strides[k][0] == 0) {
      in.bcast |= 1u << i;
    }
  }
  const LaunchPlan plan = plan_launch(it, elem_size);
  cudaStream_t stream = current_stream_handle();
  if constexpr (!dynamic) {
    if (plan.contiguous) {
      const int64_t items = plan.vectorize ? ceil_div(it.numel, kVecElems) : it.numel;
      contiguous_kernel<F, Out, In...><<<elementwise_grid(items), kElementwiseThreads, 0, stream>>>(
          f, reinterpret_cast<Out*>(it.data[0]), in, it.numel, plan.vectorize);
      check_launch(op);
      return;
    }
  }
  if (plan.index32) {
    strided_kernel<true, F, Out, In...><<<elementwise_grid(it.numel), kElementwiseThreads, 0, stream>>>(
        f, it.data[0], in, OffsetCalculator<nin + 1, true>(it), static_cast<uint32_t>(it.numel));
  } else {
    strided_kernel<false, F, Out, In...><<<elementwise_grid(it.numel), kElementwiseThreads, 0, stream>>>(
        f, it.data[0], in, OffsetCalculator<nin + 1, false>(it), static_cast<uint64_t>(it.numel));
  }
  check_launch(op);
}

}  // namespace brisk::cuda::detail
