// The vector forms of the composite unary ops (sigmoid, silu, mish, gelu,
// erf/erfc/erfinv, digamma): one definition, used by the eager CPU kernels
// (backend/cpu/kernels/unary.cpp) and by the code compile generates
// (compile/cpu_prelude.h), so that both give the same bits by construction.
// Included by files compiled once per ISA (BRISK_CPU_ISA), after vec_math.h.
#pragma once
#include <cmath>

#include "backend/cpu/vec_math.h"
#include "kernels/math.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace composite {

template <class V>
inline V one() {
  return vec::splat<V>(1.0);
}

/// -|x|, float64 included.
template <class V>
inline V neg_abs_v(V x) {
  if constexpr (vec::is_float_vec<V>)
    return vec::neg_abs(x);
  else
    return -vec::abs(x);
}

// Composite ops on vectors (the formulas of kernels/math.h).
// sigmoid: 1 / (1 + exp(-x)) flushes to 0 below x = -88.7 in float32
// (PyTorch's does) although the value is normal down to -87.3 and subnormal
// to -103: lanes below -80 (-700 in double) take math::sigmoid, which goes
// through exp(-|x|) and never overflows (rare lanes: one mask test per vector).
//
// float32 computes math::sigmoid's form directly, e = exp(-|x|), 1/(1+e) or
// e/(1+e), with vec::exp_inline (right down to subnormal results) and
// 1/(1+e) by vec::recip_1_2 (1 + e is in [1, 2]): no call,
// no fixup (the fixup's spill of x and of the mask to the stack made the
// kernel loop 1.6x slower with an inline exp).
template <class V>
inline V sigmoid_v(V x) {
  if constexpr (vec::is_float_vec<V>) {
    const V e = vec::exp_inline(vec::neg_abs(x));  // exp(-|x|)
    const V d = one<V>() + e, d_err = e - (d - one<V>());  // 1 + e = d + d_err exactly
    V r = vec::recip_1_2(d);
    r = r - r * r * d_err;  // 1 / (d + d_err): half an ulp less error
    return vec::select(x < V{}, e * r, r);
  } else {
    const V r = one<V>() / (one<V>() + vec::exp(-x));
    return vec::fixup(x, r, x < vec::splat<V>(-700.0), [](auto v) { return math::sigmoid(v); });
  }
}
template <class V>
inline V silu_v(V x) {
  if constexpr (vec::is_float_vec<V>) {
    return x * sigmoid_v(x);
  } else {
    const V r = x / (one<V>() + vec::exp(-x));
    return vec::fixup(x, r, x < vec::splat<V>(-700.0), [](auto v) { return math::silu(v); });
  }
}
template <class V>
inline V mish_v(V x) {
  return x * vec::tanh(vec::log1p_full(vec::exp(x)));
}
// erfc for float32 gelu: the Chebyshev fit of Numerical Recipes (2nd ed.,
// 6.2, "erfcc"; relative error below 1.2e-7 everywhere) on vectors: one exp
// and one division, about 3x cheaper than Sleef's 1.5-ulp erfcf. Its
// polynomial in t = 1 / (1 + z/2) is evaluated in u = 1 - t = (z/2) t (the
// same polynomial, re-expanded exactly): in t its terms cancel near t = 1
// (their sum is 3e-8), which made gelu up to 7.3 ulp off near 0 (4.8 now).
template <class V>
inline V erfc_fast(V x) {
  V z = vec::abs(x);
  z = vec::select(z > vec::splat<V>(10.5), vec::splat<V>(10.5), z);  // erfc(10.5) underflows; u = inf * 0 past it; nan stays
  const V h = vec::splat<V>(0.5) * z;
  const V t = one<V>() / (one<V>() + h);
  const V u = h * t;
  V p = vec::splat<V>(-0.17087277);
  for (double c : {0.7157027, -1.06271775, 0.61745735, -0.2159216, 0.25736096, 0.15292371, -0.30267231,
                   -1.25677255, 3.00000001229872e-08})
    p = vec::fmadd(p, u, vec::splat<V>(c));
  V r;
  if constexpr (vec::is_float_vec<V>)
    r = t * vec::exp_inline(p - z * z);
  else
    r = t * vec::exp(p - z * z);
  return vec::select(x < V{}, vec::splat<V>(2.0) - r, r);
}
// gelu(x) = x/2 (1 + erf(x / sqrt 2)) = x/2 erfc(-x / sqrt 2): the erfc
// form has no cancellation for x < 0 (the erf one loses all digits below
// x = -5 in float32). float32 uses erfc_fast, float64 Sleef's erfc; x times
// (erfc / 2), so that a subnormal x is rounded once (halving it first was
// inexact).
template <class V>
inline V gelu_erf_v(V x) {
  const V z = x * vec::splat<V>(-0.70710678118654752440);
  if constexpr (vec::is_float_vec<V>)
    return x * (vec::splat<V>(0.5) * erfc_fast(z));
  else
    return vec::splat<V>(0.5) * x * vec::erfc(z);
}
// gelu_tanh(x) = x/2 (1 + tanh u) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3):
// the same function without the cancellation of 1 + tanh u for x < 0.
template <class V>
inline V gelu_tanh_v(V x) {
  const V u2 = vec::splat<V>(2 * 0.79788456080286535588) * (x + vec::splat<V>(0.044715) * x * x * x);
  return x * sigmoid_v(u2);
}

/// Float lanes rounded to bfloat16's precision (to nearest, ties to even;
/// NaN stays NaN): what a PyTorch bfloat16 kernel that computes in
/// bfloat16 steps (pow by 3 and -2) rounds between them.
inline vec::VF round_bf16_v(vec::VF z) {
  using VI = uint32_t __attribute__((vector_size(sizeof(vec::VF))));
  VI u = (VI)z;
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  return vec::select(z != z, z, (vec::VF)u);
}

/// Float lanes rounded to float16's precision and range (to nearest, ties
/// to even; multiples of 2^-24 below 2^-14, inf past 65504; NaN stays).
inline vec::VF round_half_v(vec::VF z) {
  using VI = uint32_t __attribute__((vector_size(sizeof(vec::VF))));
  const vec::VF a = vec::abs(z), half = vec::splat<vec::VF>(0.5);
  VI u = (VI)a;
  u = (u + 0xFFFu + ((u >> 13) & 1u)) & ~0x1FFFu;
  vec::VF r = vec::select(a < vec::splat<vec::VF>(6.103515625e-05), (a + half) - half, (vec::VF)u);
  r = vec::select(r > vec::splat<vec::VF>(65504.0), vec::splat<vec::VF>(INFINITY), r);
  r = vec::select(a != a, a, r);
  return (vec::VF)((VI)r | ((VI)z & 0x80000000u));
}

/// math::round_buffer on float vectors: code 1 rounds to float16, code 2
/// to bfloat16, 0 leaves z.
inline vec::VF round_buffer_v(vec::VF z, vec::VF code) {
  if (vec::any(code == one<vec::VF>())) return round_half_v(z);
  if (vec::any(code == vec::splat<vec::VF>(2.0))) return round_bf16_v(z);
  return z;
}

/// logit(x) = log(x / (1 - x)) on vectors, x first clamped to [lo, hi] in
/// logit_eps_v. PyTorch's CPU kernel computes float16 and bfloat16 in the
/// dtype's steps, 1 - x and the quotient each rounded (Vectorized<Half> and
/// c10::BFloat16 arithmetic), then log: `code` is round_buffer_v's (1
/// float16, 2 bfloat16, 0 once at the end; its CUDA kernel rounds once).
template <class V>
inline V logit_v(V x, V code = V{}) {
  if constexpr (vec::is_float_vec<V>)
    if (vec::any(code != V{})) return vec::log(round_buffer_v(x / round_buffer_v(one<V>() - x, code), code));
  return vec::log(x / (one<V>() - x));
}
template <class V>
inline V logit_eps_v(V x, V lo, V hi, V code = V{}) {
  x = vec::select(x < lo, lo, vec::select(x > hi, hi, x));
  return logit_v(x, code);
}

// The activation gradients of math::activation_grad (Note [Activation
// gradients] in kernels/math.h) on vectors, the mode a template argument:
// g the incoming gradient, v the saved value; s0, s1 logit's bounds (eps and
// 1 - eps in the operands' dtype, s0 < 0 for none) or softplus' beta and
// threshold.
template <math::ActGrad kMode, class V>
inline V activation_grad_v(V g, V v, V s0, V s1, V s2 = V{}) {
  using math::ActGrad;
  if constexpr (kMode == ActGrad::sigmoid) {
    return g * (one<V>() - v) * v;
  } else if constexpr (kMode == ActGrad::tanh) {
    return g * (one<V>() - v * v);
  } else if constexpr (kMode == ActGrad::silu) {
    const V s = sigmoid_v(v);
    return g * s * (one<V>() + v * (one<V>() - s));
  } else if constexpr (kMode == ActGrad::mish) {
    const V s = sigmoid_v(v), t = vec::tanh(vec::log1p_full(vec::exp(v)));
    return g * (t + v * s * (one<V>() - t * t));
  } else if constexpr (kMode == ActGrad::gelu_erf) {
    const V z = v * vec::splat<V>(-0.70710678118654752440);
    V cdf, e;
    if constexpr (vec::is_float_vec<V>) {
      cdf = vec::splat<V>(0.5) * erfc_fast(z);
      e = vec::exp_inline(v * v * vec::splat<V>(-0.5));
    } else {
      cdf = vec::splat<V>(0.5) * vec::erfc(z);
      e = vec::exp(v * v * vec::splat<V>(-0.5));
    }
    return g * (cdf + v * (e * vec::splat<V>(0.39894228040143267794)));
  } else if constexpr (kMode == ActGrad::gelu_tanh) {
    const V k = vec::splat<V>(0.79788456080286535588), kappa = vec::splat<V>(0.044715);
    const V x2 = v * v, t = vec::tanh(k * (v + kappa * x2 * v));
    const V left = vec::splat<V>(0.5) * v, dinner = k * (one<V>() + vec::splat<V>(3.0) * kappa * x2);
    return g * (vec::splat<V>(0.5) * (one<V>() + t) + left * (one<V>() - t * t) * dinner);
  } else if constexpr (kMode == ActGrad::logit) {
    // s0, s1: the bounds eps, 1 - eps (s0 < 0: none, nan outside [0, 1]; else
    // 0 outside them); g * inf at 0 and 1, a nan x nan (math::activation_grad)
    const V zero{};
    const auto none = s0 < zero;
    const V lo = vec::select(none, zero, s0), hi = vec::select(none, one<V>(), s1);
    // s2: a rounding code (round_buffer_v's): PyTorch's 16-bit CPU kernel
    // rounds 1 - v and v * (1 - v) to the dtype before the division
    V den = v * (one<V>() - v);
    if constexpr (vec::is_float_vec<V>) {
      if (vec::any(s2 != zero)) den = round_buffer_v(v * round_buffer_v(one<V>() - v, s2), s2);
    }
    V r = g / den;
    r = vec::select(v == zero || v == one<V>(), g * vec::splat<V>(INFINITY), r);
    return vec::select(v < lo || v > hi, vec::select(none, vec::splat<V>(NAN), zero), r);
  } else if constexpr (kMode == ActGrad::softplus) {
    const V bx = v * s0;
    return vec::select(bx > s1, g, g * sigmoid_v(bx));
  } else if constexpr (kMode == ActGrad::hardswish) {
    const V three = vec::splat<V>(3.0);
    const V mid = g * (v / three + vec::splat<V>(0.5));
    return vec::select(v <= -three, V{}, vec::select(v < three, mid, g));
  } else if constexpr (kMode == ActGrad::hardsigmoid) {
    const V three = vec::splat<V>(3.0);
    V scaled;
    if constexpr (vec::is_float_vec<V>)
      scaled = g * vec::splat<V>(1.0f / 6.0f);
    else
      scaled = g / vec::splat<V>(6.0);
    return vec::select(v > -three && v < three, scaled, V{});
  } else if constexpr (kMode == ActGrad::elu) {  // s0 alpha, s1 scale, s2 input_scale
    return vec::select(v <= V{}, g * s2 * (s0 * s1) * vec::exp(v * s2), g * s1);
  } else if constexpr (kMode == ActGrad::elu_result) {
    return vec::select(v <= V{}, g * s2 * (v + s0 * s1), g * s1);
  } else if constexpr (kMode == ActGrad::leaky_relu) {
    return vec::select(v > V{}, g, g * s0);
  } else if constexpr (kMode == ActGrad::softshrink || kMode == ActGrad::hardshrink) {
    return vec::select(v >= -s0 && v <= s0, V{}, g);
  } else if constexpr (kMode == ActGrad::log_sigmoid) {
    V z = vec::exp(neg_abs_v(v));
    if constexpr (vec::is_float_vec<V>) z = round_buffer_v(z, s0);
    const V q = z / (one<V>() + z);
    return vec::select(v < V{}, one<V>() - q, q) * g;
  } else if constexpr (kMode == ActGrad::hardtanh) {
    return vec::select(v <= s0 || v >= s1, V{}, g);
  } else {
    static_assert(kMode == ActGrad::mse);  // s0 norm, s1 the sign (t - x below 0), s2 the product's rounding
    const V d = vec::select(s1 < V{}, V{} - v, v);
    const V p = s0 * d;
    const V inf = vec::splat<V>(INFINITY);
    if constexpr (vec::is_float_vec<V>) {
      if (vec::any(s2 != V{})) {
        const V r = round_buffer_v(p, s2);
        return vec::select(vec::abs(r) == inf && vec::abs(p) != inf, p, r) * g;
      }
    }
    const V r = p * g;
    const auto over = vec::abs(p) == inf && vec::abs(d) < inf;
    return vec::any(over) ? vec::select(over, (d * g) * s0, r) : r;
  }
}

// The activations of the `activation` slot (math::activation, Note
// [Activation forward modes] in kernels/math.h) on vectors, the mode a
// template argument: s0 alpha / the slope / lambda, s1 elu's scale, s2 its
// input_scale.
template <math::Act kMode, class V>
inline V activation_v(V x, V s0, V s1, V s2) {
  using math::Act;
  if constexpr (kMode == Act::hardswish || kMode == Act::hardsigmoid) {
    V t = x + vec::splat<V>(3.0);  // min(max(t, 0), 6); NaN stays NaN
    t = vec::select(t < V{}, V{}, t);
    t = vec::select(t > vec::splat<V>(6.0), vec::splat<V>(6.0), t);
    if constexpr (kMode == Act::hardswish)
      return x * t / vec::splat<V>(6.0);
    else
      return t / vec::splat<V>(6.0);
  } else if constexpr (kMode == Act::elu) {
    return vec::select(x > V{}, x * s1, vec::expm1(x * s2) * (s0 * s1));
  } else if constexpr (kMode == Act::leaky_relu) {
    return vec::select(x > V{}, x, x * s0);
  } else if constexpr (kMode == Act::softshrink) {
    return vec::select(x >= -s0 && x <= s0, V{}, vec::select(x > V{}, x - s0, x + s0));
  } else if constexpr (kMode == Act::hardshrink) {
    return vec::select(x >= -s0 && x <= s0, V{}, x);
  } else {
    static_assert(kMode == Act::log_sigmoid);
    return vec::select(x < V{}, x, V{}) - vec::log1p(vec::exp(neg_abs_v(x)));
  }
}

// erf, erfc, erfinv: float32 (and float16 / bfloat16 through it) by brisk's
// own formulas in vec_math.h (within 0.62 ulp, 2-3x faster than Sleef's
// double-float ones); float64 through Sleef (erf, erfc) and three Newton
// steps on Sleef's erf / erfc from Giles' start (erfinv).
inline vec::VF erf_v(vec::VF x) { return vec::erf_f32(x); }
inline vec::VD erf_v(vec::VD x) { return vec::erf(x); }
inline vec::VF erfc_v(vec::VF x) { return vec::erfc_f32(x); }
inline vec::VD erfc_v(vec::VD x) { return vec::erfc(x); }
inline vec::VF erfinv_v(vec::VF x) { return vec::erfinv_f32(x); }
inline vec::VD erfinv_v(vec::VD x) {
  using V = vec::VD;
  const V ax = vec::abs(x);
  V y = vec::erfinv_start(ax, -vec::log((one<V>() - ax) * (one<V>() + ax)));
  const V half = vec::splat<V>(0.5), k = vec::splat<V>(1.12837916709551257390);  // 2 / sqrt(pi)
  for (int i = 0; i < 3; ++i) {
    const V d = k * vec::exp(-y * y);
    const V f = vec::select(ax <= half, vec::erf(y) - ax, (one<V>() - ax) - vec::erfc(y));
    y = vec::select(d > V{}, y - f / d, y);
  }
  const V inf = vec::splat<V>(INFINITY), nan = vec::splat<V>(NAN);
  y = vec::select(ax == one<V>(), inf, y);
  y = vec::select(ax > one<V>() || ax != ax, nan, y);  // nan for |x| > 1 and nan
  y = vec::select(x < V{}, -y, y);
  return vec::select(x == V{}, x, y);  // keeps the sign of zero
}
// digamma: float32 on double vectors (vec_math.h, 0.5 ulp); float64 per lane
// through math::digamma, as before.
inline vec::VF digamma_v(vec::VF x) { return vec::digamma_f32(x); }
inline vec::VD digamma_v(vec::VD x) {
  for (int i = 0; i < vec::kLanes<double>; ++i) x[i] = math::digamma(double(x[i]));
  return x;
}

// logaddexp and logaddexp2 as PyTorch's vector loops compute them
// (Note [Binary math modes] in kernels/math.h): max (NaN if either is) plus
// log1p(exp(-|a - b|)); equal infinities give themselves. logaddexp2's
// product and sum are one fused multiply-add, as GCC fuses them in
// PyTorch's AVX2/AVX-512 build.
template <class V>
inline V nan_max_v(V a, V b) {
  const V m = a < b ? b : a;
  return ((a != a) | (b != b)) ? a + b : m;
}
template <class V>
inline V logaddexp_v(V a, V b) {
  const V inf = vec::splat<V>(INFINITY);
  const V r = nan_max_v(a, b) + vec::log1p(vec::exp(neg_abs_v(a - b)));
  return ((a == b) & (vec::abs(a) == inf)) ? a : r;
}
template <class V>
inline V logaddexp2_v(V a, V b) {
  const V inf = vec::splat<V>(INFINITY);
  // 1 / ln 2 rounded to the element type, as PyTorch's constant
  const V inv_log_2 = vec::splat<V>(vec::is_float_vec<V> ? double(float(1.4426950408889634074)) : 1.4426950408889634074);
  const V l = vec::log1p(vec::exp2(neg_abs_v(a - b)));
  const V r = vec::fmadd(l, inv_log_2, nan_max_v(a, b));
  return ((a == b) & (vec::abs(a) == inf)) ? a : r;
}

}  // namespace composite
}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
