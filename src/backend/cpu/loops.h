// The CPU loops behind every elementwise kernel: a kernel is a lambda over
// scalars, this file walks the TensorIter's dims, picks the contiguous and
// scalar-broadcast fast paths (which the compiler vectorizes for the ISA the
// file is built for) and splits the range across threads.
//
// Included only by files compiled once per ISA (see cmake/BriskCpuKernels.cmake):
// everything here lives in the ISA namespace so variants never mix.
#pragma once
#include <cstring>
#include <tuple>
#include <utility>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/tensor_iter.h"

#ifndef BRISK_CPU_ISA
#error "loops.h is for the per-ISA kernel files"
#endif

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {

/// Calls inner(ptrs, inner_strides, n) over linear positions [begin, end).
template <class Inner>
inline void for_each_range(const TensorIter& it, int64_t begin, int64_t end, const Inner& inner) {
  const int nd = it.ndim, nops = it.noperands;
  char* ptrs[TensorIter::kMaxOperands];
  int64_t inner_strides[TensorIter::kMaxOperands];
  for (int k = 0; k < nops; ++k) inner_strides[k] = it.strides[k][0];
  if (nd == 1) {
    for (int k = 0; k < nops; ++k) ptrs[k] = it.data[k] + begin * inner_strides[k];
    inner(ptrs, inner_strides, end - begin);
    return;
  }
  int64_t idx[TensorIter::kMaxDims];
  int64_t rem = begin;
  for (int d = 0; d < nd; ++d) {
    idx[d] = rem % it.shape[d];
    rem /= it.shape[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    for (int k = 0; k < nops; ++k) {
      char* p = it.data[k];
      for (int d = 0; d < nd; ++d) p += idx[d] * it.strides[k][d];
      ptrs[k] = p;
    }
    const int64_t n = std::min(it.shape[0] - idx[0], end - pos);
    inner(ptrs, inner_strides, n);
    pos += n;
    idx[0] += n;
    for (int d = 0; d + 1 < nd && idx[d] >= it.shape[d]; ++d) {
      idx[d] = 0;
      ++idx[d + 1];
    }
  }
}

/// Runs inner over the whole iterator, in parallel above the grain size.
template <class Inner>
inline void run_parallel(const TensorIter& it, const Inner& inner, int64_t grain = kGrainSize) {
  if (it.numel == 0) return;
  parallel_for(0, it.numel, grain, [&](int64_t b, int64_t e) { for_each_range(it, b, e, inner); });
}

template <class T>
inline opmath_t<T> load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<opmath_t<T>>(v);
}

template <class Out, class... In, class F, size_t... I>
inline void elementwise_inner(char** p, const int64_t* s, int64_t n, const F& f, std::index_sequence<I...>) {
  constexpr int64_t kOut = sizeof(Out);
  if (s[0] == kOut && ((s[I + 1] == static_cast<int64_t>(sizeof(In))) && ...)) {
    Out* __restrict o = reinterpret_cast<Out*>(p[0]);
    std::tuple<const In*...> in(reinterpret_cast<const In*>(p[I + 1])...);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<opmath_t<In>>(std::get<I>(in)[i])...));
    return;
  }
  if constexpr (sizeof...(In) == 2) {
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    using B = std::tuple_element_t<1, std::tuple<In...>>;
    if (s[0] == kOut && s[1] == static_cast<int64_t>(sizeof(A)) && s[2] == 0) {  // tensor op scalar
      Out* __restrict o = reinterpret_cast<Out*>(p[0]);
      const A* a = reinterpret_cast<const A*>(p[1]);
      const auto b = load<B>(p[2]);
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<opmath_t<A>>(a[i]), b));
      return;
    }
    if (s[0] == kOut && s[1] == 0 && s[2] == static_cast<int64_t>(sizeof(B))) {  // scalar op tensor
      Out* __restrict o = reinterpret_cast<Out*>(p[0]);
      const auto a = load<A>(p[1]);
      const B* b = reinterpret_cast<const B*>(p[2]);
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(a, static_cast<opmath_t<B>>(b[i])));
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    Out r = static_cast<Out>(f(load<In>(p[I + 1] + i * s[I + 1])...));
    std::memcpy(p[0] + i * s[0], &r, sizeof(Out));
  }
}

/// out[i] = f(in0[i], in1[i], ...): inputs of types In..., computed in their
/// opmath types, the result converted to Out.
template <class Out, class... In, class F>
inline void elementwise(TensorIter& it, const F& f) {
  BRISK_ASSERT(it.noperands == static_cast<int>(sizeof...(In)) + 1);
  run_parallel(it, [&](char** p, const int64_t* s, int64_t n) {
    elementwise_inner<Out, In...>(p, s, n, f, std::index_sequence_for<In...>{});
  });
}

/// Shorthand: all inputs and the output of type T.
template <class T, class F>
inline void unary_kernel(TensorIter& it, const F& f) {
  elementwise<T, T>(it, f);
}
template <class T, class F>
inline void binary_kernel(TensorIter& it, const F& f) {
  elementwise<T, T, T>(it, f);
}
template <class T, class F>
inline void ternary_kernel(TensorIter& it, const F& f) {
  elementwise<T, T, T, T>(it, f);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
