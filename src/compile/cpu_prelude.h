// What the kernels that compile's CPU code generator emits include
// (compile/codegen_cpu.cpp): block loads and stores, dtype rounding, and the
// vector forms of the composite ops exactly as the eager CPU kernels write
// them (backend/cpu/kernels/unary.cpp), so that generated code gives the
// eager kernels' values bit for bit.
//
// Compiled with the flags of the eager per-ISA kernel files
// (cmake/BriskCpuKernels.cmake, -DBRISK_CPU_ISA=<variant>; the preferred
// vector width excepted); not part of the library's own build. An
// installed brisk needs this header and the others of kPreludeHeaders in
// codegen_cpu.cpp (kernels/math.h, backend/cpu/vec_math.h, vec_tables.h,
// vec_composite.h, prefetch.h, brisk/half.h, brisk/dtype.h) installed with
// it.
//
// The composites come from backend/cpu/vec_composite.h, as the eager
// kernel's do (test_codegen_cpu still compares every one with the kernel).
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/prefetch.h"
#include "backend/cpu/vec_math.h"
#include "backend/cpu/vec_composite.h"
#include "brisk/dtype.h"
#include "kernels/math.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace cg {

// Blocks have 256 to 2048 elements (codegen_cpu.cpp picks one per kernel):
// multiples of every lane count.

/// A value the optimizer cannot see through: eager kernels take their
/// scalars (alpha, clamp bounds, ...) at run time, so the generated code must
/// not fold or contract them differently.
template <class T, class U>
inline T opaque(U bits) {
  static_assert(sizeof(T) == sizeof(U));
  asm("" : "+r"(bits));
  return std::bit_cast<T>(bits);
}

/// A node's value in a register run (Note [Register runs] in
/// codegen_cpu.cpp): x with its bits or-ed with z, an opaque zero of the
/// same width, so the next node's arithmetic cannot contract with the
/// arithmetic that made it (no FMA across nodes), as if it had been stored.
/// GCC vectorizes it (one vpord); __builtin_assoc_barrier would not do: the
/// vectorizer drops it.
template <class T, class U>
inline T seal(T x, U z) {
  static_assert(sizeof(T) == sizeof(U));
  return std::bit_cast<T>(static_cast<U>(std::bit_cast<U>(x) | z));
}

/// The value of a result stored as S and read back (the rounding an eager
/// kernel's store applies between two ops).
template <class S, class X>
inline opmath_t<S> to(X x) {
  return static_cast<opmath_t<S>>(static_cast<S>(x));
}

/// dst[i] = S at p + i * s, in the math type, i < n.
template <class S>
inline void ld(opmath_t<S>* __restrict dst, const char* p, int64_t s, int64_t n) {
  using M = opmath_t<S>;
  if (s == int64_t(sizeof(S))) {
    const S* q = reinterpret_cast<const S*>(p);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<M>(q[i]);
  } else if (s == 0) {
    S v;
    std::memcpy(&v, p, sizeof(S));
    const M m = static_cast<M>(v);
    for (int64_t i = 0; i < n; ++i) dst[i] = m;
  } else {
    for (int64_t i = 0; i < n; ++i) {
      S v;
      std::memcpy(&v, p + i * s, sizeof(S));
      dst[i] = static_cast<M>(v);
    }
  }
}
/// S at p + i * s = src[i], i < n.
template <class S>
inline void st(char* p, int64_t s, const opmath_t<S>* __restrict src, int64_t n) {
  if (s == int64_t(sizeof(S))) {
    S* q = reinterpret_cast<S*>(p);
    for (int64_t i = 0; i < n; ++i) q[i] = static_cast<S>(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const S v = static_cast<S>(src[i]);
      std::memcpy(p + i * s, &v, sizeof(S));
    }
  }
}
template <class T>
inline void fill(T* dst, T v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = v;
}

// Note [Vectors as eager forms them]
// A lane's result may depend on the other lanes of its vector: Sleef's sin,
// cos and tan take a slower range reduction for the whole vector when one
// lane is large, which can change the last bit of the others. So the vector
// ops here form vectors exactly as the eager loops (vec_loops.h) do: whole
// vectors from the start of a row (or of a 1-d range), and the last partial
// vector padded with zeros. Blocks start at such vector boundaries
// (codegen_cpu.h: split points).

inline constexpr auto kNoPrefetch = [](int64_t) {};
/// o[i] = f(a[i]), i < n, over whole vectors; a partial last vector padded
/// with zeros. pf(i) runs before each whole vector (the group's prefetches,
/// Note [Prefetching in generated kernels] in codegen_cpu.cpp; none by
/// default).
template <class T, class F, class P = decltype(kNoPrefetch)>
inline void vmap1(T* o, const T* a, int64_t n, const F& f, const P& pf = kNoPrefetch) {
  constexpr int N = vec::kLanes<T>;
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    pf(i);
    vec::storeu(o + i, f(vec::loadu(a + i)));
  }
  if (i < n) {
    alignas(64) T ta[N] = {}, r[N];
    for (int64_t k = i; k < n; ++k) ta[k - i] = a[k];
    vec::storeu(r, f(vec::loadu(ta)));
    for (int64_t k = i; k < n; ++k) o[k] = r[k - i];
  }
}
template <class T, class F, class P = decltype(kNoPrefetch)>
inline void vmap2(T* o, const T* a, const T* b, int64_t n, const F& f, const P& pf = kNoPrefetch) {
  constexpr int N = vec::kLanes<T>;
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    pf(i);
    vec::storeu(o + i, f(vec::loadu(a + i), vec::loadu(b + i)));
  }
  if (i < n) {
    alignas(64) T ta[N] = {}, tb[N] = {}, r[N];
    for (int64_t k = i; k < n; ++k) ta[k - i] = a[k], tb[k - i] = b[k];
    vec::storeu(r, f(vec::loadu(ta), vec::loadu(tb)));
    for (int64_t k = i; k < n; ++k) o[k] = r[k - i];
  }
}

// ---- vector runs (Note [Vector runs] in codegen_cpu.cpp) ----------------------
/// A value of a vector run as a vector: a vector as it is, a scalar (a
/// constant, a per-block broadcast) in every lane exactly.
template <class V>
inline V vv(V x) {
  return x;
}
template <class V, class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
inline V vv(T x) {
  return vec::splat<V>(x);
}
/// The unsigned integer vector of V's lanes (V is this variant's vec::VF or
/// vec::VD), for bit operations.
using UF = uint32_t __attribute__((vector_size(sizeof(vec::VF))));
using UD = uint64_t __attribute__((vector_size(sizeof(vec::VD))));
template <class V>
using Bits = std::conditional_t<vec::is_float_vec<V>, UF, UD>;
/// seal() on a vector: its lanes' bits or-ed with the opaque zero z.
template <class V, class U>
inline V vseal(V x, U z) {
  static_assert(sizeof(U) == sizeof(x[0]));
  return std::bit_cast<V>(static_cast<Bits<V>>(std::bit_cast<Bits<V>>(x) | z));
}
/// The scalar forms' selects on vectors, lane by lane the same value
/// (kernels/math.h): std::fabs (the sign bit cleared, -0 and NaNs
/// included), math::relu, math::maximum and math::minimum (NaN: a + b).
template <class V>
inline V vfabs(V x) {
  using U = std::remove_reference_t<decltype(Bits<V>{}[0])>;
  return std::bit_cast<V>(static_cast<Bits<V>>(std::bit_cast<Bits<V>>(x) & (~U(0) >> 1)));
}
template <class V>
inline V vrelu(V x) {
  return vec::select(x < V{}, V{}, x);
}
template <class V>
inline V vmaximum(V a, V b) {
  return vec::select((a != a) | (b != b), a + b, vec::select(a < b, b, a));
}
template <class V>
inline V vminimum(V a, V b) {
  return vec::select((a != a) | (b != b), a + b, vec::select(b < a, b, a));
}
/// The m < N elements at p, zeros in the other lanes (a partial vector as
/// vmap1/vmap2 pad it); never reads past p + m.
template <class T>
inline vec::Vec<T> load_part(const T* p, int64_t m) {
  alignas(64) T t[vec::kLanes<T>] = {};
  for (int64_t k = 0; k < m; ++k) t[k] = p[k];
  return vec::loadu(t);
}
/// Stores the first m lanes of v at p.
template <class T>
inline void store_part(T* p, vec::Vec<T> v, int64_t m) {
  alignas(64) T t[vec::kLanes<T>];
  vec::storeu(t, v);
  for (int64_t k = 0; k < m; ++k) p[k] = t[k];
}
/// v with the lanes from m on set to +0 (the padding of a partial vector).
template <class V>
inline V zero_pad(V v, int64_t m) {
  using T = std::remove_cv_t<std::remove_reference_t<decltype(v[0])>>;
  alignas(64) T t[sizeof(V) / sizeof(T)];
  std::memcpy(t, &v, sizeof(V));
  for (int64_t k = m; k < int64_t(sizeof(V) / sizeof(T)); ++k) t[k] = T(0);
  std::memcpy(&v, t, sizeof(V));
  return v;
}

/// Elements a generated kernel prefetches ahead of the one it is at, per
/// operand (Note [Prefetching in generated kernels] in codegen_cpu.cpp).
inline constexpr int64_t kPrefetchAhead = 1024;
/// Calls over fewer elements do not prefetch (their data is mostly in cache,
/// and the prefetches past their end would be wasted).
inline constexpr int64_t kPrefetchMin = 65536;
/// The step of an operand's prefetch address per element: its stride when
/// that is at most 16 bytes (a row read element after element) and the call
/// covers `count` >= kPrefetchMin elements, else 0 (the prefetch then
/// touches the block's own first element, a cache hit).
inline int64_t prefetch_step(int64_t stride, int64_t count) {
  return count >= kPrefetchMin && stride > 0 && stride <= 16 ? stride : 0;
}

// ---- the composite ops of backend/cpu/kernels/unary.cpp, on vectors ----------
// (one definition for both: backend/cpu/vec_composite.h)
using namespace composite;
// logit_v, logit_eps_v: composite's (a rounding code for 16-bit dtypes)
template <class V>
inline V softplus_v(V x, V vb, V vt) {
  const V xb = x * vb;
  return vec::select(xb > vt, x, vec::log1p_full(vec::exp(xb)) / vb);
}

}  // namespace cg
}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
