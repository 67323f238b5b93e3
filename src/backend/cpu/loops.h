// The CPU loops behind every elementwise kernel: a kernel is a lambda over
// scalars, this file walks the TensorIter's dims, picks the contiguous and
// scalar-broadcast fast paths (which the compiler vectorizes for the ISA the
// file is built for) and splits the range across threads.
//
// Included only by files compiled once per ISA (see cmake/BriskCpuKernels.cmake):
// everything here lives in the ISA namespace so variants never mix.
#pragma once
#include <algorithm>
#include <array>
#include <cstring>
#include <tuple>
#include <utility>

#include "backend/cpu/prefetch.h"
#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/tensor_iter.h"

#ifndef BRISK_CPU_ISA
#error "loops.h is for the per-ISA kernel files"
#endif

namespace brisk {
namespace cpu {
bool software_prefetch();  // backend/cpu/register.cpp
namespace BRISK_CPU_ISA {

// Note [Prefetching in the eager loops]
// On the 2-core Xeon of docs/performance.md one core streams memory at half
// its speed unless lines are asked for ahead (a copy of 2^24 floats 9.8 ms,
// 4.9 ms with software prefetches), so the contiguous loops over long runs
// (kPrefetchMinBytes or more in the widest operand) walk them in spans of kPrefetchSpan
// elements and prefetch, before each span, each operand's lines
// kPrefetchAhead bytes ahead: the inputs for reading, the output with
// prefetchw (the store then finds its line owned); an input that is the
// output (in place) only for writing. Shorter runs keep the plain loop
// (their data is mostly in cache; the spans cost there). The compiled
// kernels do the same (Note [Prefetching in generated kernels] in
// compile/codegen_cpu.cpp). Values do not change: a span runs the loop's
// own body. Prefetches past the end of a tensor do not fault. Measured on
// 2^24 floats, one thread: z = x * 2.5 9.2 -> 7.8 ms, exp 11.6 -> 8.0, erf
// 10.4 -> 8.3, sigmoid 10.2 -> 8.6, z = x + y 12.9 -> 12.2, x.add_(y)
// unchanged; two threads 10-20% too. 2 KiB and 8 KiB ahead were no better
// than 4 KiB. Stop 43 (the AMD Zen 4 VM) moved the threshold from 2^16
// elements to 16 MiB in the widest operand: below it the data is in the
// caches and the spans only cost (neg_out of 2^16 floats 7.9 -> 4.8 us,
// 2^20 126 -> 86 us, x * y of 2^20 182 -> 140 us, now under PyTorch
// 2.15's 5.9, 89 and 148), while from 2^22 floats on they still help
// (neg_out of 2^24: 5.3 ms without them, 3.9-4.1 with).
// BRISK_CPU_PREFETCH=0 turns them off.
inline constexpr int64_t kPrefetchMinBytes = int64_t(16) << 20;
inline constexpr int64_t kPrefetchSpan = 16;
inline constexpr int64_t kPrefetchAhead = 4096;
/// Runs body(i0, i1) over [0, n) in spans, prefetching ahead of each for
/// out (written) and ins (read), all contiguous with element sizes out_es
/// and in_es. Below kPrefetchMinBytes in the widest operand: body(0, n).
template <size_t K, class Body>
inline void prefetched_spans(int64_t n, const void* out, int64_t out_es, const std::array<const void*, K>& ins,
                             const std::array<int64_t, K>& in_es, const Body& body) {
  int64_t widest = out_es;
  for (size_t k = 0; k < K; ++k) widest = std::max(widest, in_es[k]);
  if (n * widest < kPrefetchMinBytes || !software_prefetch()) {
    body(int64_t(0), n);
    return;
  }
  // an input that is the output (in place) is prefetched once, for writing
  std::array<int64_t, K> step{};
  for (size_t k = 0; k < K; ++k) step[k] = ins[k] == out ? 0 : in_es[k];
  for (int64_t i0 = 0; i0 < n; i0 += kPrefetchSpan) {
    for (int64_t b = 0; b < kPrefetchSpan * out_es; b += 64)
      prefetch_write(static_cast<const char*>(out) + i0 * out_es + kPrefetchAhead + b);
    for (size_t k = 0; k < K; ++k)
      for (int64_t b = 0; b < kPrefetchSpan * step[k]; b += 64)
        prefetch_read(static_cast<const char*>(ins[k]) + i0 * in_es[k] + kPrefetchAhead + b);
    body(i0, std::min(i0 + kPrefetchSpan, n));
  }
}

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
    prefetched_spans<sizeof...(In)>(n, o, kOut, {p[I + 1]...}, {static_cast<int64_t>(sizeof(In))...},
                                    [&](int64_t i0, int64_t i1) {
                                      for (int64_t i = i0; i < i1; ++i)
                                        o[i] = static_cast<Out>(f(static_cast<opmath_t<In>>(std::get<I>(in)[i])...));
                                    });
    return;
  }
  if constexpr (sizeof...(In) == 2) {
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    using B = std::tuple_element_t<1, std::tuple<In...>>;
    if (s[0] == kOut && s[1] == static_cast<int64_t>(sizeof(A)) && s[2] == 0) {  // tensor op scalar
      Out* __restrict o = reinterpret_cast<Out*>(p[0]);
      const A* a = reinterpret_cast<const A*>(p[1]);
      const auto b = load<B>(p[2]);
      prefetched_spans<1>(n, o, kOut, {a}, {int64_t(sizeof(A))}, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) o[i] = static_cast<Out>(f(static_cast<opmath_t<A>>(a[i]), b));
      });
      return;
    }
    if (s[0] == kOut && s[1] == 0 && s[2] == static_cast<int64_t>(sizeof(B))) {  // scalar op tensor
      Out* __restrict o = reinterpret_cast<Out*>(p[0]);
      const auto a = load<A>(p[1]);
      const B* b = reinterpret_cast<const B*>(p[2]);
      prefetched_spans<1>(n, o, kOut, {b}, {int64_t(sizeof(B))}, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) o[i] = static_cast<Out>(f(a, static_cast<opmath_t<B>>(b[i])));
      });
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
