// SIMD vectors of float and double for the per-ISA kernel files, and the
// vectorized math functions on them (Sleef, see docs/design/vectorized_math.md).
//
// One native vector per ISA variant: avx512 16 floats / 8 doubles, avx2 8 / 4,
// base SSE2 4 / 2 (every x86-64 CPU has SSE2). The vectors are the compiler's
// own vector types (__m512 ...), so + - * / and comparisons are GCC vector
// operators; the transcendental functions call Sleef's entry point for the
// same ISA directly (Sleef_expf16_u10avx512f, ...), not its dispatcher.
//
// Included only by files compiled once per ISA (cmake/BriskCpuKernels.cmake).
#pragma once
#include <immintrin.h>
#include <sleef.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#ifndef BRISK_CPU_ISA
#error "vec_math.h is for the per-ISA kernel files"
#endif

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace vec {

// BRISK_ISA_ID_<isa> picks the vector width (the macro BRISK_CPU_ISA is the
// variant's namespace name: base, avx2 or avx512).
#define BRISK_ISA_ID_base 0
#define BRISK_ISA_ID_avx2 1
#define BRISK_ISA_ID_avx512 2
#define BRISK_ISA_ID_CAT(x) BRISK_ISA_ID_##x
#define BRISK_ISA_ID(x) BRISK_ISA_ID_CAT(x)

#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
using VF = __m512;
using VD = __m512d;
#define BRISK_SLEEF_F(fn, u) Sleef_##fn##f16_##u##avx512f
#define BRISK_SLEEF_D(fn, u) Sleef_##fn##d8_##u##avx512f
inline VF sqrt_(VF x) { return _mm512_sqrt_ps(x); }
inline VD sqrt_(VD x) { return _mm512_sqrt_pd(x); }
#elif BRISK_ISA_ID(BRISK_CPU_ISA) == 1
using VF = __m256;
using VD = __m256d;
#define BRISK_SLEEF_F(fn, u) Sleef_##fn##f8_##u##avx2
#define BRISK_SLEEF_D(fn, u) Sleef_##fn##d4_##u##avx2
inline VF sqrt_(VF x) { return _mm256_sqrt_ps(x); }
inline VD sqrt_(VD x) { return _mm256_sqrt_pd(x); }
#else
using VF = __m128;
using VD = __m128d;
#define BRISK_SLEEF_F(fn, u) Sleef_##fn##f4_##u##sse2
#define BRISK_SLEEF_D(fn, u) Sleef_##fn##d2_##u##sse2
inline VF sqrt_(VF x) { return _mm_sqrt_ps(x); }
inline VD sqrt_(VD x) { return _mm_sqrt_pd(x); }
#endif

/// Vector traits: V the native vector of T, N its lanes.
template <class T>
struct Traits;
template <>
struct Traits<float> {
  using V = VF;
  static constexpr int N = sizeof(VF) / sizeof(float);
};
template <>
struct Traits<double> {
  using V = VD;
  static constexpr int N = sizeof(VD) / sizeof(double);
};
template <class T>
using Vec = typename Traits<T>::V;
template <class T>
inline constexpr int kLanes = Traits<T>::N;

template <class T>
inline Vec<T> loadu(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <class T>
inline void storeu(T* p, Vec<T> v) {
  std::memcpy(p, &v, sizeof(v));
}
/// A vector of x in every lane.
template <class V>
inline V splat(double x) {
  using T = std::remove_reference_t<decltype(V{}[0])>;
  return V{} + static_cast<T>(x);
}
/// Lane-wise select: c ? a : b (c a comparison result).
template <class V, class C>
inline V select(C c, V a, V b) {
  return c ? a : b;
}

// Sleef entry points for this ISA, as overloads on the vector type. All are
// the 1.0-ulp (u10) variants except erfc (1.5 ulp, Sleef has no other); they
// are the ones PyTorch's Vectorized<float/double> calls.
#define BRISK_VEC_FN(name, fn, u)                                 \
  inline VF name(VF x) { return BRISK_SLEEF_F(fn, u)(x); }        \
  inline VD name(VD x) { return BRISK_SLEEF_D(fn, u)(x); }
BRISK_VEC_FN(exp, exp, u10)
BRISK_VEC_FN(exp2, exp2, u10)
BRISK_VEC_FN(expm1, expm1, u10)
BRISK_VEC_FN(log, log, u10)
BRISK_VEC_FN(log2, log2, u10)
BRISK_VEC_FN(log10, log10, u10)
BRISK_VEC_FN(log1p, log1p, u10)
BRISK_VEC_FN(sin, sin, u10)
BRISK_VEC_FN(cos, cos, u10)
BRISK_VEC_FN(tan, tan, u10)
BRISK_VEC_FN(asin, asin, u10)
BRISK_VEC_FN(acos, acos, u10)
BRISK_VEC_FN(atan, atan, u10)
BRISK_VEC_FN(sinh, sinh, u10)
BRISK_VEC_FN(cosh, cosh, u10)
BRISK_VEC_FN(tanh, tanh, u10)
BRISK_VEC_FN(asinh, asinh, u10)
BRISK_VEC_FN(acosh, acosh, u10)
BRISK_VEC_FN(atanh, atanh, u10)
BRISK_VEC_FN(erf, erf, u10)
BRISK_VEC_FN(erfc, erfc, u15)
BRISK_VEC_FN(lgamma, lgamma, u10)
#undef BRISK_VEC_FN

/// Lanes where `bad` holds get scalar(x) instead of r: Sleef's functions
/// leave some ranges to the caller (sinhf overflows to inf above 88.5 while
/// the result is finite up to 89.4, ...). Costs one test of the mask when no
/// lane is out of range.
/// Whether any lane of a comparison result is set (one movemask / kmask test).
template <class C>
inline bool any(C m) {
  constexpr bool wide = sizeof(m[0]) == 8;
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
  __m512i v;
  std::memcpy(&v, &m, sizeof(v));
  if constexpr (wide)
    return _mm512_movepi64_mask(v) != 0;
  else
    return _mm512_movepi32_mask(v) != 0;
#elif BRISK_ISA_ID(BRISK_CPU_ISA) == 1
  __m256i v;
  std::memcpy(&v, &m, sizeof(v));
  if constexpr (wide)
    return _mm256_movemask_pd(_mm256_castsi256_pd(v)) != 0;
  else
    return _mm256_movemask_ps(_mm256_castsi256_ps(v)) != 0;
#else
  __m128i v;
  std::memcpy(&v, &m, sizeof(v));
  if constexpr (wide)
    return _mm_movemask_pd(_mm_castsi128_pd(v)) != 0;
  else
    return _mm_movemask_ps(_mm_castsi128_ps(v)) != 0;
#endif
}

template <class V, class C, class F>
inline V fixup(V x, V r, C bad, F scalar) {
  if (__builtin_expect(any(bad), 0)) {
    constexpr int n = sizeof(V) / sizeof(x[0]);
    for (int i = 0; i < n; ++i)
      if (bad[i]) r[i] = scalar(x[i]);
  }
  return r;
}
template <class V>
inline V abs(V x) {
  return x < V{} ? -x : x;
}
template <class V>
inline constexpr bool is_float_vec = sizeof(V{}[0]) == 4;

// The ranges where the Sleef function is within its bound (its documentation
// and tests/ops/test_vectorized_math.cpp); outside them, libm per lane.
template <class V>
inline V sinh_full(V x) {
  const V lim = splat<V>(is_float_vec<V> ? 88.0 : 709.0);
  return fixup(x, sinh(x), abs(x) > lim, [](auto v) { return decltype(v)(std::sinh((long double)v)); });
}
template <class V>
inline V cosh_full(V x) {
  const V lim = splat<V>(is_float_vec<V> ? 88.0 : 709.0);
  return fixup(x, cosh(x), abs(x) > lim, [](auto v) { return decltype(v)(std::cosh((long double)v)); });
}
template <class V>
inline V asinh_full(V x) {
  const V lim = splat<V>(is_float_vec<V> ? 1e18 : 1e150);
  return fixup(x, asinh(x), abs(x) > lim, [](auto v) { return decltype(v)(std::asinh((long double)v)); });
}
template <class V>
inline V acosh_full(V x) {
  const V lim = splat<V>(is_float_vec<V> ? 1e18 : 1e150);
  return fixup(x, acosh(x), x > lim, [](auto v) { return decltype(v)(std::acosh((long double)v)); });
}
template <class V>
inline V log1p_full(V x) {
  const V lim = splat<V>(is_float_vec<V> ? 1e38 : 1e307);
  return fixup(x, log1p(x), x > lim, [](auto v) { return decltype(v)(std::log1p((long double)v)); });
}
inline VF pow(VF x, VF y) { return BRISK_SLEEF_F(pow, u10)(x, y); }
inline VD pow(VD x, VD y) { return BRISK_SLEEF_D(pow, u10)(x, y); }
inline VF atan2(VF y, VF x) { return BRISK_SLEEF_F(atan2, u10)(y, x); }
inline VD atan2(VD y, VD x) { return BRISK_SLEEF_D(atan2, u10)(y, x); }
inline VF sqrt(VF x) { return sqrt_(x); }
inline VD sqrt(VD x) { return sqrt_(x); }

}  // namespace vec
}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
