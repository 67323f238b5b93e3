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

#include "backend/cpu/vec_tables.h"

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
#define BRISK_SLEEF_F0(fn) Sleef_##fn##f16_avx512f
#define BRISK_SLEEF_D0(fn) Sleef_##fn##d8_avx512f
inline VF sqrt_(VF x) { return _mm512_sqrt_ps(x); }
inline VD sqrt_(VD x) { return _mm512_sqrt_pd(x); }
#elif BRISK_ISA_ID(BRISK_CPU_ISA) == 1
using VF = __m256;
using VD = __m256d;
#define BRISK_SLEEF_F(fn, u) Sleef_##fn##f8_##u##avx2
#define BRISK_SLEEF_D(fn, u) Sleef_##fn##d4_##u##avx2
#define BRISK_SLEEF_F0(fn) Sleef_##fn##f8_avx2
#define BRISK_SLEEF_D0(fn) Sleef_##fn##d4_avx2
inline VF sqrt_(VF x) { return _mm256_sqrt_ps(x); }
inline VD sqrt_(VD x) { return _mm256_sqrt_pd(x); }
#else
using VF = __m128;
using VD = __m128d;
#define BRISK_SLEEF_F(fn, u) Sleef_##fn##f4_##u##sse2
#define BRISK_SLEEF_D(fn, u) Sleef_##fn##d2_##u##sse2
#define BRISK_SLEEF_F0(fn) Sleef_##fn##f4_sse2
#define BRISK_SLEEF_D0(fn) Sleef_##fn##d2_sse2
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
/// A vector of x in every lane, exactly: t - (+0) is t for every t, -0.0
/// included (a sum with V{} would turn -0.0 into +0.0: x * -0.0 and
/// atan2(0, -0.0) then lost their signs in the vector body but not in the
/// tail). Not a store per lane: GCC folds that only for constants, and for
/// a value from a table (poly's coefficients) it emitted sixteen masked
/// broadcasts per call, which made every polynomial 5x slower.
template <class V>
inline V splat(double x) {
  using T = std::remove_reference_t<decltype(V{}[0])>;
  return static_cast<T>(x) - V{};
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
BRISK_VEC_FN(asinh, asinh, u10)
BRISK_VEC_FN(acosh, acosh, u10)
BRISK_VEC_FN(atanh, atanh, u10)
BRISK_VEC_FN(erf, erf, u10)
BRISK_VEC_FN(erfc, erfc, u15)
BRISK_VEC_FN(lgamma, lgamma, u10)
#undef BRISK_VEC_FN
// floor, ceil, trunc and rint (to nearest, ties to even): exact, NaN, inf
// and the sign of zero kept; one rounding instruction on AVX2 and AVX-512
// (SSE2 has none: Sleef's).
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
#define BRISK_VEC_ROUND(name, mode)                                                                     \
  inline VF name(VF x) { return _mm512_roundscale_ps(x, mode | _MM_FROUND_NO_EXC); }                   \
  inline VD name(VD x) { return _mm512_roundscale_pd(x, mode | _MM_FROUND_NO_EXC); }
#elif BRISK_ISA_ID(BRISK_CPU_ISA) == 1
#define BRISK_VEC_ROUND(name, mode)                                                  \
  inline VF name(VF x) { return _mm256_round_ps(x, mode | _MM_FROUND_NO_EXC); }     \
  inline VD name(VD x) { return _mm256_round_pd(x, mode | _MM_FROUND_NO_EXC); }
#else
#define BRISK_VEC_ROUND(name, mode)                                \
  inline VF name(VF x) { return BRISK_SLEEF_F0(name)(x); }         \
  inline VD name(VD x) { return BRISK_SLEEF_D0(name)(x); }
#endif
BRISK_VEC_ROUND(floor, _MM_FROUND_TO_NEG_INF)
BRISK_VEC_ROUND(ceil, _MM_FROUND_TO_POS_INF)
BRISK_VEC_ROUND(trunc, _MM_FROUND_TO_ZERO)
BRISK_VEC_ROUND(rint, _MM_FROUND_TO_NEAREST_INT)
#undef BRISK_VEC_ROUND

/// tanh: float64 through Sleef; float32 is brisk's own (tanh_f32 below).
inline VD tanh(VD x) { return BRISK_SLEEF_D(tanh, u10)(x); }

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
/// fmod, exact: Sleef's, which gives NaN where a / b passes the range
/// (3e38 fmod 1e-38; PyTorch's vector loop keeps that NaN); such lanes (and
/// the NaN results of NaN, inf or zero operands) take libm's fmod.
inline VF fmod_sleef(VF a, VF b) { return BRISK_SLEEF_F0(fmod)(a, b); }
inline VD fmod_sleef(VD a, VD b) { return BRISK_SLEEF_D0(fmod)(a, b); }
template <class V>
inline V fmod(V a, V b) {
  V r = fmod_sleef(a, b);
  const auto bad = r != r;
  if (__builtin_expect(any(bad), 0)) {
    constexpr int n = sizeof(V) / sizeof(a[0]);
    for (int i = 0; i < n; ++i)
      if (bad[i]) r[i] = std::fmod(a[i], b[i]);
  }
  return r;
}
/// Python's remainder (math::remainder): fmod, moved by b where its sign
/// differs from b's.
template <class V>
inline V remainder(V a, V b) {
  const V r = fmod(a, b);
  const auto fix = (r != V{}) & ((r < V{}) != (b < V{}));
  return fix ? r + b : r;
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
// The functions PyTorch's vector loops call for hypot, copysign and nextafter.
inline VF hypot(VF x, VF y) { return BRISK_SLEEF_F(hypot, u05)(x, y); }
inline VD hypot(VD x, VD y) { return BRISK_SLEEF_D(hypot, u05)(x, y); }
inline VF copysign(VF x, VF y) { return BRISK_SLEEF_F0(copysign)(x, y); }
inline VD copysign(VD x, VD y) { return BRISK_SLEEF_D0(copysign)(x, y); }
inline VF nextafter(VF x, VF y) { return BRISK_SLEEF_F0(nextafter)(x, y); }
inline VD nextafter(VD x, VD y) { return BRISK_SLEEF_D0(nextafter)(x, y); }
inline VF sqrt(VF x) { return sqrt_(x); }
inline VD sqrt(VD x) { return sqrt_(x); }

// ---- float32 functions computed in double vectors -------------------------------
// erf, erfc, erfinv and digamma of float32 are evaluated (wholly or where
// float would not do) in double vectors with cheap formulas whose relative
// error (< 5e-9) is far below a float ulp (6e-8), then rounded once to float:
// within 0.5 ulp + 0.07 of the exact value, and no FMA dependence (the base
// variant gives the same bound). Also inline float helpers (exp_inline,
// recip_1_2, neg_abs) for sigmoid and silu: a Sleef call inside a composite
// formula spills every vector register of the kernel loop.
// docs/design/vectorized_math.md has the formulas and the measured errors.

/// The two double halves of a float vector (lanes 0..N/2-1, N/2..N-1), and back
/// (rounded to nearest, subnormals kept).
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
inline VD lo_pd(VF x) { return _mm512_cvtps_pd(_mm512_castps512_ps256(x)); }
inline VD hi_pd(VF x) { return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))); }
inline VF pack_ps(VD lo, VD hi) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm512_cvtpd_ps(lo))),
                                             _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
}
#elif BRISK_ISA_ID(BRISK_CPU_ISA) == 1
inline VD lo_pd(VF x) { return _mm256_cvtps_pd(_mm256_castps256_ps128(x)); }
inline VD hi_pd(VF x) { return _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)); }
inline VF pack_ps(VD lo, VD hi) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
}
#else
inline VD lo_pd(VF x) { return _mm_cvtps_pd(x); }
inline VD hi_pd(VF x) { return _mm_cvtps_pd(_mm_movehl_ps(x, x)); }
inline VF pack_ps(VD lo, VD hi) { return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi)); }
#endif
/// f applied to both double halves of a float vector, rounded back to float.
template <class F>
inline VF via_double(VF x, F f) {
  return pack_ps(f(lo_pd(x)), f(hi_pd(x)));
}

/// a * b + c, fused where the variant has FMA (avx2, avx512) whatever the
/// optimization level: the error bounds of the formulas below are measured
/// with it, and GCC contracts `a * b + c` by itself only from -O2 (a -O1
/// build such as the ASan preset's would otherwise round twice).
#if defined(__FMA__)
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
inline VF fmadd(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
inline VD fmadd(VD a, VD b, VD c) { return _mm512_fmadd_pd(a, b, c); }
#else
inline VF fmadd(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
inline VD fmadd(VD a, VD b, VD c) { return _mm256_fmadd_pd(a, b, c); }
#endif
#else
template <class V>
inline V fmadd(V a, V b, V c) {
  return a * b + c;
}
#endif

/// Horner: c[0] + c[1] x + ... (coefficients lowest first).
template <class V, size_t K>
inline V poly(V x, const double (&c)[K]) {
  V p = splat<V>(c[K - 1]);
  for (size_t i = K - 1; i-- > 0;) p = fmadd(p, x, splat<V>(c[i]));
  return p;
}

/// exp on double vectors for v in [-700, 700], relative error below 3e-10:
/// Cody-Waite reduction v = k ln2 + r (ln2's high part has 32 bits, so k ln2_hi
/// is exact), |r| <= 0.35, Taylor to r^8 (remainder < 2.1e-10), times 2^k built in
/// the exponent bits. Only for float results (Sleef's exp for float64 ops).
template <size_t K>
inline VD exp_poly(VD v, const double (&c)[K]) {
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
  const VD k = _mm512_roundscale_pd(v * splat<VD>(1.4426950408889634), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  VD r = v - k * splat<VD>(0.6931471803691238);
  r = r - k * splat<VD>(1.9082149292705877e-10);
  return _mm512_scalef_pd(poly(r, c), k);
#else
  using VI = long long __attribute__((vector_size(sizeof(VD))));
  const VD magic = splat<VD>(6755399441055744.0);  // 1.5 * 2^52: adding it rounds to an integer
  const VD kb = v * splat<VD>(1.4426950408889634) + magic;
  const VD k = kb - magic;
  const VI ki = (VI)kb - (VI)magic;
  VD r = v - k * splat<VD>(0.6931471803691238);
  r = r - k * splat<VD>(1.9082149292705877e-10);
  const VD two_k = (VD)((ki + 1023) << 52);
  return poly(r, c) * two_k;
#endif
}
inline VD exp_lite(VD v) {
  static constexpr double c[] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320};
  return exp_poly(v, c);
}
/// -|x| (one OR of the sign bit).
inline VF neg_abs(VF x) {
  using VI = int __attribute__((vector_size(sizeof(VF))));
  return (VF)((VI)x | std::numeric_limits<int>::min());
}
/// 1 / d for float d in [1, 2] (or nan): on AVX-512 the 14-bit reciprocal
/// estimate and one Newton step (relative error below 2^-27 before the last
/// rounding: within 1 ulp), where a division would bound the loop (vdivps
/// zmm); a division elsewhere.
inline VF recip_1_2(VF d) {
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
  const VF r = _mm512_rcp14_ps(d);
  return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, splat<VF>(1.0)), r);  // r + r (1 - d r), 1 - d r exact
#else
  return splat<VF>(1.0) / d;
#endif
}
/// exp on float vectors, inline (a Sleef call spills every vector register
/// of the caller's loop): exp_lite's reduction with ln2 in two float parts
/// (the high one has 16 bits), Taylor to r^7 (remainder < 5e-9), and 2^k
/// applied as two normal factors 2^(k/2) 2^(k - k/2), so subnormal results
/// (v down to -103.9) are rounded once and v > 88.72 gives inf. v is clamped
/// to [-104, 89] first (exp(-104) rounds to 0). Within 0.92 ulp with FMA,
/// 1.2 without (through sigmoid in tests/ops/test_vectorized_math.cpp).
inline VF exp_inline(VF v) {
  static constexpr double c[] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040};
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
  // vscalefps applies 2^k with one rounding, subnormal and overflow included.
  v = _mm512_max_ps(splat<VF>(-104.0), v);  // nan stays (max returns its second operand)
  v = _mm512_min_ps(splat<VF>(89.0), v);
  const VF k = _mm512_roundscale_ps(v * splat<VF>(1.4426950408889634), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  VF r = v - k * splat<VF>(0.693145751953125);
  r = r - k * splat<VF>(1.42860682030941723212e-6);
  return _mm512_scalef_ps(poly(r, c), k);
#else
  using VI = int __attribute__((vector_size(sizeof(VF))));
  v = select(v < splat<VF>(-104.0), splat<VF>(-104.0), v);  // nan stays
  v = select(v > splat<VF>(89.0), splat<VF>(89.0), v);
  const VF magic = splat<VF>(12582912.0);  // 1.5 * 2^23
  const VF kb = v * splat<VF>(1.4426950408889634) + magic;
  const VF k = kb - magic;
  const VI ki = (VI)kb - (VI)magic;
  VF r = v - k * splat<VF>(0.693145751953125);
  r = r - k * splat<VF>(1.42860682030941723212e-6);
  const VI k1 = ki >> 1, k2 = ki - k1;
  return (poly(r, c) * (VF)((k1 + 127) << 23)) * (VF)((k2 + 127) << 23);
#endif
}
/// exp on float vectors for v in [-87, 88], relative error below 7e-4 (the
/// reduction of exp_lite, Taylor to r^3): for Newton corrections only.
inline VF exp_rough(VF v) {
  using VI = int __attribute__((vector_size(sizeof(VF))));
  static constexpr double c[] = {1.0, 1.0, 1.0 / 2, 1.0 / 6};
  const VF magic = splat<VF>(12582912.0);  // 1.5 * 2^23
  const VF kb = v * splat<VF>(1.4426950408889634) + magic;
  const VF k = kb - magic;
  const VI ki = (VI)kb - (VI)magic;
  const VF r = v - k * splat<VF>(0.69314718055994531);
  return poly(r, c) * (VF)((ki + 127) << 23);
}

/// 1 / d for double d >= 1 (or inf, nan): on AVX-512 the 14-bit estimate and
/// two Newton steps (relative error below 1e-16), where two divisions would
/// bound the loop (vdivpd zmm); a division elsewhere.
inline VD recip_pd(VD d) {
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
  VD t = _mm512_rcp14_pd(d);
  t = fmadd(t, fmadd(-d, t, splat<VD>(1.0)), t);
  return fmadd(t, fmadd(-d, t, splat<VD>(1.0)), t);
#else
  return splat<VD>(1.0) / d;
#endif
}
/// (tanh(x) / x - 1) / x^2 as a polynomial in s = x^2 for |x| <= 0.55
/// (relative error below 1.2e-9; fitted as erfc_core's g).
inline constexpr double kTanhSmall[] = {-0.33333333295053036, 0.13333324204439204, -0.05396470160817596,
                                        0.021818459834728847, -0.008526373340081602, 0.002526443807031289};
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
/// Each lane's entry of a 32-float table, at the lane's index in i (vpermt2ps).
inline VF tab32(const float* t, __m512i i) {
  return _mm512_permutex2var_ps(_mm512_load_ps(t), i, _mm512_load_ps(t + 16));
}
/// hi + lo + t (p0 + t (p1 + t (p2 + t p3))) with each lane's coefficients
/// from slot i of a table of vec_tables.h (its `Cubic`; tools/vmath/fit_tables.py).
template <class Table>
inline VF table_cubic(__m512i i, VF t) {
  VF p = fmadd(tab32(Table::kP3, i), t, tab32(Table::kP2, i));
  p = fmadd(p, t, tab32(Table::kP1, i));
  p = fmadd(p, t, tab32(Table::kP0, i));
  return tab32(Table::kHi, i) + fmadd(p, t, tab32(Table::kLo, i));
}
/// The slot of a in 32 intervals of width 1/8 from `start` (clamped to
/// 0..31; nan and values past 2^31 give slot 0), and t = a - the slot's centre.
inline __m512i slot8(VF a, double start, VF& t) {
  __m512i i = _mm512_cvttps_epi32((a - splat<VF>(start)) * splat<VF>(8.0));
  i = _mm512_min_epi32(_mm512_max_epi32(i, _mm512_setzero_si512()), _mm512_set1_epi32(31));
  t = a - fmadd(_mm512_cvtepi32_ps(i), splat<VF>(0.125), splat<VF>(start + 0.0625));  // nan stays nan
  return i;
}
#endif
/// tanh of float32 on a = |x|, x's sign put back (tanh(-0) = -0, nan stays
/// nan); below 0.5, a + a s Q(s) in float (the correction is at most a tenth
/// of the value, so its rounding costs under 0.3 ulp). On AVX-512 (within
/// 0.70 ulp over every float; 3x the speed of Sleef's tanhf, which is within
/// 1.0): from 0.5 to 4.5 a cubic in t around the centre of the lane's
/// 1/8-wide interval with coefficients picked per lane from 32-entry tables
/// (as erf's); from 4.5 (only when a lane needs it) 1 - 2 E (1 - E) in
/// float, E = exp(-2a) < 1.3e-4 (the E^3 term and E's float error are
/// under a thousandth of an ulp); a clamped at 10, where it rounds to 1.
/// Elsewhere (within 0.78 ulp): 1 - 2 / (exp(2a) + 1) in double from 0.55
/// (exp_lite's 3e-10 is far below float's ulp there).
inline VF tanh_f32(VF x) {
  using VI = int __attribute__((vector_size(sizeof(VF))));
  const VF a = abs(x);
  const VF s = a * a;
  const VF small = fmadd(a * s, poly(s, kTanhSmall), a);
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
  VF t;
  const __m512i i = slot8(a, 0.5, t);
  VF r = select(a < splat<VF>(0.5), small, table_cubic<::brisk::cpu::tanh_table::Cubic>(i, t));
  const auto far = a >= splat<VF>(4.5);
  if (any(far)) {  // 1 - 2 E / (1 + E) = 1 - 2 E (1 - E) + O(E^3), E = exp(-2a) < 1.3e-4
    const VF ac = select(a > splat<VF>(10.0), splat<VF>(10.0), a);
    const VF e = exp_inline(splat<VF>(-2.0) * ac);
    r = select(far, fmadd(splat<VF>(-2.0) * e, splat<VF>(1.0) - e, splat<VF>(1.0)), r);
  }
#else
  const VF ac = select(a > splat<VF>(10.0), splat<VF>(10.0), a);  // nan stays nan
  auto big = [](VD ad) {
    const VD t = recip_pd(exp_lite(ad + ad) + splat<VD>(1.0));
    return fmadd(splat<VD>(-2.0), t, splat<VD>(1.0));
  };
  const VF r = select(a < splat<VF>(0.55), small, pack_ps(big(lo_pd(ac)), big(hi_pd(ac))));
#endif
  return (VF)((VI)r | ((VI)x & std::numeric_limits<int>::min()));
}
inline VF tanh(VF x) { return tanh_f32(x); }

/// erfc(a) for a in [0, 10.5] (or nan), relative error below 5e-9: the form of
/// Numerical Recipes' erfcc, erfc(a) = t exp(g(t) - a^2), t = 1 / (1 + 0.4 a),
/// with g a degree-10 polynomial fitted here (weighted least squares / Lawson on
/// Chebyshev nodes, against mpmath) to |error| < 4.1e-9 on t in [0.19, 1]. a^2
/// is exact in double for a float a. t0 is t to float precision (one float
/// division serves two double vectors); a Newton step makes it exact to 1e-15.
inline VD erfc_core(VD a, VD t0) {
  static constexpr double g[] = {-1.4886499749834297, 0.9997075990217179,  0.42505380544875937, 0.12826469680558378,
                                 0.2674457987704958,  -0.8865802046903537, 1.7977636239510613,  -2.8086958126186214,
                                 2.4600359527472353,  -1.086913877760562,  0.19256839736548162};
  const VD one = splat<VD>(1.0);
  const VD t = t0 + t0 * (one - (one + splat<VD>(0.4) * a) * t0);
  return t * exp_lite(poly(t, g) - a * a);
}
/// 1 / (1 + 0.4 a) in float, for erfc_core's t0.
inline VF erfc_t0(VF a) { return splat<VF>(1.0) / (splat<VF>(1.0) + splat<VF>(0.4) * a); }
/// erf(x) / x as a polynomial in s = x^2 for |x| <= 1.5 (relative error below 9e-10,
/// fitted as erfc_core's g).
inline constexpr double kErfSmall[] = {1.128379166176374,      -0.376126325752395,     0.11283718736726928,
                                       -0.026862889304994628,  0.0052164818871663285,  -0.0008450582614969726,
                                       0.00011288870416548136, -1.1272972157000405e-05, 6.144704296495718e-07};
/// erfc of float32 in double: erfc(|x|) for x >= 0, 2 - erfc(|x|) below
/// (within 0.51 ulp).
inline VF erfc_f32(VF x) {
  VF a = abs(x);
  a = select(a > splat<VF>(10.5), splat<VF>(10.5), a);  // erfc(10.5) < 1e-49 rounds to 0; nan stays
  const VF t0 = erfc_t0(a);
  auto half = [](VD xd, VD ad, VD td) {
    const VD c = erfc_core(ad, td);
    return select(xd < VD{}, splat<VD>(2.0) - c, c);
  };
  return pack_ps(half(lo_pd(x), lo_pd(a), lo_pd(t0)), half(hi_pd(x), hi_pd(a), hi_pd(t0)));
}
/// erf of float32. On AVX-512 (within 0.79 ulp over every float; 1.4x the
/// speed of the form below): a = |x|; a (c0 + s R(s)) in float below 0.5
/// (c0 a float pair; the correction is under a tenth of the value; computed
/// on a 2^24 a so that a * c0's low part stays normal), and from 0.5 to 4 a
/// cubic in t = a - c around the centre of the lane's 1/8-wide interval,
/// hi + lo + t P(t), its coefficients picked per lane from 32-entry tables
/// with one permute each (vec_tables.h, written by
/// tools/vmath/fit_tables.py); 1 from 4 (erf(4) rounds to 1); x's sign
/// put back. Elsewhere (within 0.51 ulp): x P(x^2) in double for |x| < 1.5
/// (kErfSmall), and +-(1 - exp(Q(|x| - 1.5))) in float for 1.5 <= |x| <= 4,
/// Q a degree-7 fit of log erfc on [1.5, 4] (|error| < 7e-8; erfc <= 0.034
/// there, so float's rounding of Q and exp cost a fraction of erf's ulp), 1
/// above 4 (erfc(4) < 2^-25).
inline VF erf_f32(VF x) {
#if BRISK_ISA_ID(BRISK_CPU_ISA) == 2
  namespace et = ::brisk::cpu::erf_table;
  using VI = int __attribute__((vector_size(sizeof(VF))));
  const VF a = abs(x), s = a * a;
  const VF as = a * splat<VF>(16777216.0);  // 2^24
  const VF small = fmadd(as, splat<VF>(et::kC0Hi), fmadd(as, splat<VF>(et::kC0Lo), (as * s) * poly(s, et::kSmall))) *
                   splat<VF>(5.9604644775390625e-08);
  VF t;
  const __m512i i = slot8(a, 0.0, t);  // slots 0..3 (a < 0.5) are not used
  const VF r = select(a < splat<VF>(0.5), small, select(a >= splat<VF>(4.0), splat<VF>(1.0), table_cubic<et::Cubic>(i, t)));
  return (VF)((VI)r | ((VI)x & std::numeric_limits<int>::min()));
#else
  static constexpr double q[] = {-3.384492155524058,     -3.5087973349756565,   -0.8926702316546486,
                                 -0.025725783127900095,  0.005847741271754525,  -0.0011182422147464344,
                                 0.0001508866500339323,  -1.0158389788905708e-05};
  const VF a = abs(x);
  const VF small = via_double(x, [](VD v) { return v * poly(v * v, kErfSmall); });
  const VF ac = select(a > splat<VF>(4.0), splat<VF>(4.0), a);  // nan stays nan
  const VF big = splat<VF>(1.0) - exp_inline(poly(ac - splat<VF>(1.5), q));
  return select(a < splat<VF>(1.5), small, select(x < VF{}, -big, big));
#endif
}

/// Giles' single-precision erfinv ("Approximating the erfinv function", GPU
/// Computing Gems, 2011) for |x| = ax, w = -log((1 - ax)(1 + ax)): relative
/// error about 1e-7 (more where w itself is rounded); the start of the Newton
/// steps below and in the kernels.
template <class V>
inline V erfinv_start(V ax, V w) {
  static constexpr double c1[] = {1.50140941,       0.246640727,   -0.00417768164, -0.00125372503, 0.00021858087,
                                  -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08};
  static constexpr double c2[] = {2.83297682,    1.00167406,     0.00943887047, -0.0076224613, 0.00573950773,
                                  -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257};
  V p = poly(w - splat<V>(2.5), c1);
  const auto tail = !(w < splat<V>(5.0));  // |x| > 0.9966 (or nan): rare, so only when a lane needs it
  if (any(tail)) p = select(tail, poly(sqrt_(w) - splat<V>(3.0), c2), p);
  return p * ax;
}
/// log(v) for float v > 0 (normal), relative error about 2e-7: exponent from
/// the bits, log(m) = u P(u) for m = 1 + u in [0.707, 1.414] (P a degree-7 fit
/// of log1p(u) / u). Inline (a Sleef call spills every vector register), for
/// erfinv's start, which Newton corrects anyway.
inline VF log_lite(VF v) {
  using VI = int __attribute__((vector_size(sizeof(VF))));
  static constexpr double c[] = {0.9999999453935307,   -0.5000036548387344, 0.33335056797144297, -0.24969883823758682,
                                 0.19900235644319902, -0.17251283412677917, 0.16222050641551108, -0.10104475528721324};
  const VI bits = (VI)v;
  // m in [sqrt(1/2), sqrt(2)): bias the exponent split by 0x3f3504f3 (sqrt(1/2))
  const VI off = bits - 0x3f3504f3;
  const VI e = off >> 23;  // arithmetic shift
  const VF m = (VF)((off & 0x007fffff) + 0x3f3504f3);
  const VF u = m - splat<VF>(1.0);
  return __builtin_convertvector(e, VF) * splat<VF>(0.69314718055994531) + u * poly(u, c);
}
/// erfinv of float32: Giles' start y0 in float, then one Newton step
/// y = y0 - f / erf'(y0) in double, where the residual f = erf(y0) - |x|
/// (y0 <= 1.85) or (1 - |x|) - erfc(y0) (the tail, where 1 - |x| is exact) is
/// computed with a polynomial / erfc_core (relative error < 5e-9): within
/// 0.5 ulp + 0.02 after the final rounding.
inline VF erfinv_f32(VF x) {
  const VF one = splat<VF>(1.0), ax = abs(x);
  const VF w = -log_lite((one - ax) * (one + ax));
  const VF y0 = erfinv_start(ax, w);
  // The tail residual (y0 > 1.85, |x| > 0.991; inf or nan) only when a lane needs it.
  const auto tail = !(y0 <= splat<VF>(1.85));
  VF t0 = one;
  if (any(tail)) t0 = erfc_t0(select(y0 > splat<VF>(10.5), splat<VF>(10.5), y0));
  // 1 / erf'(y0) = sqrt(pi)/2 exp(y0^2): the correction is ~1e-7 y, so a
  // 1e-3-accurate value is plenty.
  const VF dinv = splat<VF>(0.88622692545275801365) * exp_rough(y0 * y0);
  auto newton = [](VD y, VD ax, VD t0, VD dinv) {
    // erf(y) / y in y^2 on [0, 1.85] (|x| <= 0.991), relative error below 1.5e-10
    static constexpr double e[] = {1.1283791669569183,     -0.37612637937781246,   0.1128378080135995,
                                   -0.026865686944328133,  0.005222859702703355,   -0.0008533054882280478,
                                   0.00011923202093999143, -1.4175331905098842e-05, 1.3628191738584983e-06,
                                   -9.276288764903384e-08, 3.2399129490379153e-09};
    VD f = y * poly(y * y, e) - ax;
    const auto tail = !(y <= splat<VD>(1.85));
    if (any(tail)) {
      const VD yc = select(y > splat<VD>(10.5), splat<VD>(10.5), y);
      f = select(tail, (splat<VD>(1.0) - ax) - erfc_core(yc, t0), f);
    }
    return y - f * dinv;
  };
  VF y = pack_ps(newton(lo_pd(y0), lo_pd(ax), lo_pd(t0), lo_pd(dinv)),
                 newton(hi_pd(y0), hi_pd(ax), hi_pd(t0), hi_pd(dinv)));
  y = select(ax == one, splat<VF>(INFINITY), y);
  y = select(ax > one || ax != ax, splat<VF>(NAN), y);  // nan for |x| > 1 and nan
  y = select(x < VF{}, -y, y);
  return select(x == VF{}, x, y);  // keeps the sign of zero
}


/// digamma of float32 in double (lanes of one double vector): reflection
/// psi(x) = psi(1 - x) - pi / tan(pi r) for x < 0 (r = x - nearest integer,
/// exact; only when a lane is negative), the recurrence psi(x) = psi(x + 1) -
/// 1 / x up to x >= 10 carried as one fraction N / D (no division per step),
/// then the asymptotic series (next term below 5e-16 at x = 10). One division
/// for 1/x, 1/x^2 and N / D. PyTorch's values at the poles: psi(+-0) = -+inf,
/// psi(negative integer) = nan, psi(-inf) = nan.
inline VD digamma_f32d(VD x) {
  using VI = long long __attribute__((vector_size(sizeof(VD))));
  const VD one = splat<VD>(1.0), zero{};
  const auto neg = x < zero;
  VD xr = x, refl = zero;
  auto pole = x != x;  // all false
  if (any(neg)) {
    const VD magic = splat<VD>(6755399441055744.0);  // 1.5 * 2^52: (x + magic) - magic = nearbyint(x)
    const VD n = select(abs(x) < splat<VD>(4503599627370496.0), (x + magic) - magic, x);
    const VD r = x - n;
    constexpr double kPi = 3.14159265358979323846;
    refl = select(neg, splat<VD>(-kPi) / tan(splat<VD>(kPi) * r), zero);
    xr = select(neg, one - x, x);
    pole = neg && r == zero;  // negative integers (and -inf)
  }
  VD num = zero, den = one;  // sum of 1 / (x + i) so far = num / den
  for (int i = 0; i < 10; ++i) {
    const auto m = xr < splat<VD>(10.0);
    if (!any(m)) break;
    num = select(m, num * xr + den, num);
    den = select(m, den * xr, den);
    xr = select(m, xr + one, xr);
  }
  const VD q = one / (xr * den);
  const VD inv = q * den;  // 1 / xr
  const VD z = inv * inv;
  static constexpr double b[] = {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12};
  VD res = log(xr) - splat<VD>(0.5) * inv - z * poly(z, b) - num * xr * q + refl;
  res = select(x == splat<VD>(INFINITY), x, res);
  res = select(pole, splat<VD>(NAN), res);
  // +-0: -+inf (the sign bit of x flips that of -inf)
  const VD signed_inf = (VD)((VI)splat<VD>(-INFINITY) ^ ((VI)x & (VI{} + std::numeric_limits<long long>::min())));
  return select(x == zero, signed_inf, res);
}
inline VF digamma_f32(VF x) { return via_double(x, [](VD v) { return digamma_f32d(v); }); }

/// log1p of float32 in double (no call, no per-lane fixup): u = 1 + x is exact
/// in double for 2^-29 <= |x| < 2^53 (above, its relative rounding error 2^-53
/// is nothing next to log u >= 36), so no compensation term is needed; u =
/// 2^k m with m in [sqrt(1/2), sqrt(2)) from the bits (the exponent by a
/// logical shift of the biased bits: AVX2 and SSE2 have no 64-bit arithmetic
/// shift; k to double by the 2^52 trick), log m = f P(f) for f = m - 1 (exact),
/// P a degree-9 fit of log1p(f) / f on [-0.293, 0.415] (relative error below
/// 4.1e-9, weighted least squares / Lawson against mpmath; degree 10 gives
/// 6.5e-10 but costs 5% of the kernel's time), then rounded once to float:
/// within 0.5 ulp + 0.07 (0.567 measured over every float). |x| < 2^-29
/// (zeros and subnormals included) returns x, which is log1p(x) correctly
/// rounded (x^2 / 2 is below 2^-30 x); PyTorch's special values are selected:
/// log1p(-1) = -inf, nan below -1 (and for nan), log1p(inf) = inf.
inline VF log1p_f32(VF x) {
  auto half = [](VD xd) {
    using VI = long long __attribute__((vector_size(sizeof(VD))));
    using VU = unsigned long long __attribute__((vector_size(sizeof(VD))));
    static constexpr double c[] = {0.9999999999592092,   -0.4999998828967457,  0.33333325988387946,
                                   -0.2500158655839046,  0.20001968773509227, -0.1660901291211102,
                                   0.14181830412921897,  -0.13243456136155143, 0.1290468642216538,
                                   -0.07621159077230058};
    const VD u = xd + splat<VD>(1.0);
    const VI bits = (VI)u;
    const VI off = bits - 0x3FE6A09E667F3BCDLL;  // the bits of sqrt(1/2)
    // biased exponent of u / sqrt(1/2) rounded down: off + (1023 << 52), shifted
    const VI eb = (VI)((VU)(bits + 0x00095F619980C433LL) >> 52);
    const VD k = (VD)(eb | 0x4330000000000000LL) - splat<VD>(4503599627370496.0 + 1023.0);
    const VD m = (VD)((off & 0x000FFFFFFFFFFFFFLL) + 0x3FE6A09E667F3BCDLL);
    const VD f = m - splat<VD>(1.0);
    return k * splat<VD>(0.69314718055994531) + f * poly(f, c);
  };
  VF r = pack_ps(half(lo_pd(x)), half(hi_pd(x)));
  r = select(abs(x) < splat<VF>(0x1p-29), x, r);
  r = select(x == splat<VF>(-1.0), splat<VF>(-INFINITY), r);
  r = select(x == splat<VF>(INFINITY), x, r);
  return select(x >= splat<VF>(-1.0), r, splat<VF>(NAN));  // nan below -1 and for nan
}
/// log1p for the kernels: log1p_f32 for float, Sleef's (log1p_full) for double.
template <class V>
inline V log1p_fast(V x) {
  if constexpr (is_float_vec<V>)
    return log1p_f32(x);
  else
    return log1p_full(x);
}

}  // namespace vec
}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
