// Scalar math shared by every backend: each function is the definition of
// an op on one element (computed in the op's math type), usable from host
// and device code.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "brisk/half.h"

namespace brisk {
namespace math {

/// sigmoid through e = exp(-|x|) (never overflows): 1 / (1 + e) for x >= 0,
/// e / (1 + e) below; accurate down to the subnormal range.
template <class T>
BRISK_HOST_DEVICE inline T sigmoid(T x) {
  const T e = std::exp(-std::fabs(x));
  const T r = T(1) / (T(1) + e);
  return x < T(0) ? e * r : r;
}
template <class T>
BRISK_HOST_DEVICE inline T silu(T x) {
  return x * sigmoid(x);
}
template <class T>
// gelu's two forms as written without cancellation for x < 0 (the CPU
// kernels compute the same on vectors): x/2 (1 + erf(x / sqrt 2)) =
// x/2 erfc(-x / sqrt 2), and x/2 (1 + tanh u) = x sigmoid(2u).
BRISK_HOST_DEVICE inline T gelu_erf(T x) {
  return T(0.5) * x * std::erfc(x * T(-0.70710678118654752440));
}
template <class T>
BRISK_HOST_DEVICE inline T gelu_tanh(T x) {
  const T k = T(0.79788456080286535588);  // sqrt(2/pi)
  return x * sigmoid(T(2) * k * (x + T(0.044715) * x * x * x));
}
template <class T>
BRISK_HOST_DEVICE inline T softplus(T x, T beta, T threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}
/// mish(x) = x * tanh(softplus(x)), softplus without a threshold (as torch).
template <class T>
BRISK_HOST_DEVICE inline T mish(T x) {
  return x * std::tanh(std::log1p(std::exp(x)));
}
/// logit(x) = log(x / (1 - x)); with lo >= 0, x is first clamped to
/// [lo, hi] (nan stays nan). lo < 0 means no clamp (torch's eps=None). The
/// kernels take lo = eps and hi = 1 - eps rounded to the tensor's dtype, as
/// torch's CPU kernels (logit_bounds in ops/unary.cpp).
template <class T>
BRISK_HOST_DEVICE inline T logit(T x, T lo, T hi) {
  if (lo >= T(0)) x = x < lo ? lo : (x > hi ? hi : x);
  return std::log(x / (T(1) - x));
}
/// eps < 0 means no clamp; the bounds eps and 1 - eps in T.
template <class T>
BRISK_HOST_DEVICE inline T logit(T x, T eps) {
  return logit(x, eps, T(1) - eps);
}

// Note [Activation gradients]
// The backward of an activation in one pass, as PyTorch's *_backward kernels
// (sigmoid_backward, tanh_backward, silu_backward, mish_backward,
// gelu_backward, logit_backward, softplus_backward): g is the incoming
// gradient, v the saved value (the result for sigmoid and tanh, the input
// otherwise), computed in the math type (float for 16-bit) and rounded
// once. The modes are the `activation_backward` slot's KernelArgs::mode; s0
// and s1 carry logit's bounds (eps and 1 - eps in the operands' dtype; s0 < 0:
// none) and softplus' beta and threshold.
// The CPU kernels compute the same formulas on vectors
// (backend/cpu/vec_composite.h).
// The modes from hardswish on are PyTorch's hardswish_backward,
// hardsigmoid_backward, elu_backward (s0 alpha, s1 scale, s2 input_scale; v
// the input, or the result for elu_result), leaky_relu_backward (s0 the
// slope), softshrink_backward and hardshrink_backward (s0 lambda),
// log_sigmoid_backward and hardtanh_backward (s0, s1 the bounds), with
// their masks as PyTorch's scalar loops test them (a NaN input fails every
// comparison: Note [Activation kinks] in src/nn/activation.cpp).
// mse is mse_loss_backward from the saved difference v = x - t: norm * d * g
// with d = v for the input's gradient (s1 > 0) and 0 - v = t - x for the
// target's (s1 < 0: +0 where x == t, as PyTorch), s0 the norm in the dtype
// and s2 the dtype's rounding of norm * d (1 float16, 2 bfloat16, 0 none:
// PyTorch rounds that product). Where norm * d passes the range but the
// gradient does not, brisk keeps the exact value (Note [mse_loss's
// gradient] in src/nn/functional.cpp).
enum class ActGrad : int {
  sigmoid,
  tanh,
  silu,
  mish,
  gelu_erf,
  gelu_tanh,
  logit,
  softplus,
  hardswish,
  hardsigmoid,
  elu,
  elu_result,
  leaky_relu,
  softshrink,
  hardshrink,
  log_sigmoid,
  hardtanh,
  mse,
  kNumModes
};

/// 1/6 as PyTorch's hardsigmoid_backward multiplies by it: rounded to float
/// for float and 16-bit, and brisk divides by 6 in float64 (PyTorch's
/// float64 kernel rounds 1/6 to float: docs/design/nn.md).
template <class T>
BRISK_HOST_DEVICE inline T hardsigmoid_grad(T g) {
  if constexpr (std::is_same_v<T, double>)
    return g / T(6);
  else
    return g * T(1.0f / 6.0f);
}

/// z rounded to float16 (code 1) or bfloat16 (code 2), else z: PyTorch's
/// CPU log_sigmoid keeps exp(-|x|) in a buffer of the input's dtype, and its
/// backward reads that buffer (its CUDA kernels recompute it in float).
template <class T>
BRISK_HOST_DEVICE inline T round_buffer(T z, T code) {
  if (code == T(1)) return T(static_cast<float>(Half(static_cast<float>(z))));
  if (code == T(2)) return T(static_cast<float>(BFloat16(static_cast<float>(z))));
  return z;
}

template <class T>
BRISK_HOST_DEVICE inline T activation_grad(ActGrad mode, T g, T v, T s0, T s1, T s2 = T(0)) {
  switch (mode) {
    case ActGrad::sigmoid: return g * (T(1) - v) * v;  // torch's order
    case ActGrad::tanh: return g * (T(1) - v * v);
    case ActGrad::silu: {
      const T s = sigmoid(v);
      return g * s * (T(1) + v * (T(1) - s));
    }
    case ActGrad::mish: {
      const T s = sigmoid(v), t = std::tanh(std::log1p(std::exp(v)));
      return g * (t + v * s * (T(1) - t * t));
    }
    case ActGrad::gelu_erf: {  // Phi(x) + x phi(x), Phi by erfc (no cancellation below 0)
      const T cdf = T(0.5) * std::erfc(v * T(-0.70710678118654752440));
      const T pdf = std::exp(v * v * T(-0.5)) * T(0.39894228040143267794);
      return g * (cdf + v * pdf);
    }
    case ActGrad::gelu_tanh: {
      const T k = T(0.79788456080286535588), kappa = T(0.044715);  // sqrt(2/pi)
      const T x2 = v * v, t = std::tanh(k * (v + kappa * x2 * v));
      const T left = T(0.5) * v, dinner = k * (T(1) + T(3) * kappa * x2);
      return g * (T(0.5) * (T(1) + t) + left * (T(1) - t * t) * dinner);
    }
    case ActGrad::logit: {  // s0, s1: the bounds eps, 1 - eps; s0 < 0 for none
      // torch's scalar loop (logit_backward_kernel): outside [0, 1] nan,
      // outside [eps, 1 - eps] 0; at 0 and 1 g * inf (+inf at -0.0 as at
      // 0: the derivative's limit inside [0, 1]); a nan x gives nan. s2: a
      // rounding code (round_buffer's): torch's 16-bit CPU kernel rounds
      // 1 - v and v * (1 - v) to the dtype (0 on CUDA, whose kernel does not)
      const bool none = s0 < T(0);
      const T lo = none ? T(0) : s0, hi = none ? T(1) : s1;
      if (v < lo || v > hi) return none ? T(NAN) : T(0);
      if (v == T(0) || v == T(1)) return g * T(INFINITY);
      if constexpr (!std::is_same_v<T, double>)
        if (s2 != T(0)) return g / round_buffer(v * round_buffer(T(1) - v, s2), s2);
      return g / (v * (T(1) - v));
    }
    case ActGrad::softplus: {  // s0: beta, s1: threshold; slope sigmoid(beta x) below it
      const T bx = v * s0;
      return bx > s1 ? g : g * sigmoid(bx);
    }
    case ActGrad::hardswish: return v <= T(-3) ? T(0) : v < T(3) ? g * (v / T(3) + T(0.5)) : g;
    case ActGrad::hardsigmoid: return v > T(-3) && v < T(3) ? hardsigmoid_grad(g) : T(0);
    case ActGrad::elu: return v <= T(0) ? g * s2 * (s0 * s1) * std::exp(v * s2) : g * s1;
    case ActGrad::elu_result: return v <= T(0) ? g * s2 * (v + s0 * s1) : g * s1;
    case ActGrad::leaky_relu: return v > T(0) ? g : g * s0;
    case ActGrad::softshrink:
    case ActGrad::hardshrink: return v >= -s0 && v <= s0 ? T(0) : g;
    case ActGrad::log_sigmoid: {  // (max_deriv - sign * z / (1 + z)) * g, z = exp(-|x|) (s0: z's rounding)
      T z = std::exp(-std::fabs(v));
      if constexpr (!std::is_same_v<T, double>) z = round_buffer(z, s0);
      const T q = z / (T(1) + z);
      return (v < T(0) ? T(1) - q : q) * g;
    }
    case ActGrad::hardtanh: return v <= s0 || v >= s1 ? T(0) : g;
    case ActGrad::mse: {
      const T d = s1 < T(0) ? T(0) - v : v;
      const T p = s0 * d;
      if constexpr (!std::is_same_v<T, double>) {
        if (s2 != T(0)) {  // 16-bit in float: p is exact; the dtype's product unless it overflows
          const T r = round_buffer(p, s2);
          return (std::isinf(r) && !std::isinf(p) ? p : r) * g;
        }
      }
      // norm * d past the range (norm 2 and |d| past half the largest value):
      // d * g first, then the exact doubling
      return std::isinf(p) && !std::isinf(d) && !std::isnan(d) ? (d * g) * s0 : p * g;
    }
    default: return T(NAN);
  }
}

// Note [Activation forward modes]
// The activations with a slot of their own (slot `activation`, mode
// math::Act in KernelArgs::mode) as PyTorch's CPU kernels compute them in
// the math type (float for 16-bit, rounded once): hardswish x * min(max(x +
// 3, 0), 6) / 6; hardsigmoid min(max(x + 3, 0), 6) / 6; elu (s0 alpha, s1
// scale, s2 input_scale) x * scale above 0, expm1(x * input_scale) *
// (alpha * scale) at or below (selu and celu are elu with their
// constants); leaky_relu (s0 the slope); softshrink and hardshrink (s0
// lambda; +0 in the middle); log_sigmoid min(x, 0) - log1p(exp(-|x|)).
// A NaN input gives NaN. The CPU kernels compute the same on vectors
// (backend/cpu/vec_composite.h, activation_v).
enum class Act : int { hardswish, hardsigmoid, elu, leaky_relu, softshrink, hardshrink, log_sigmoid, kNumModes };

template <class T>
BRISK_HOST_DEVICE inline T clamp_0_6(T t) {  // NaN stays NaN
  return t < T(0) ? T(0) : t > T(6) ? T(6) : t;
}

template <class T>
BRISK_HOST_DEVICE inline T activation(Act mode, T x, T s0, T s1, T s2) {
  switch (mode) {
    case Act::hardswish: return x * clamp_0_6(x + T(3)) / T(6);
    case Act::hardsigmoid: return clamp_0_6(x + T(3)) / T(6);
    case Act::elu: return x > T(0) ? x * s1 : std::expm1(x * s2) * (s0 * s1);
    case Act::leaky_relu: return x > T(0) ? x : x * s0;
    case Act::softshrink: return x >= -s0 && x <= s0 ? T(0) : x > T(0) ? x - s0 : x + s0;
    case Act::hardshrink: return x >= -s0 && x <= s0 ? T(0) : x;
    case Act::log_sigmoid: return (x < T(0) ? x : T(0)) - std::log1p(std::exp(-std::fabs(x)));
    default: return T(NAN);
  }
}

// Note [digamma and erfinv]
// Neither is in libm or Sleef; both are defined here once for the host and
// the device. The host computes float through double (the CPU kernels run
// them as scalars, as PyTorch's do); the device uses CUDA's erfinv and a
// float digamma for float.

/// digamma (psi): the recurrence psi(x) = psi(x + 1) - 1 / x up to x >= 10,
/// then the asymptotic series; reflection for x < 0. PyTorch's values at the
/// poles: psi(+-0) = -+inf, psi(negative integer) = nan, psi(-inf) = nan.
template <class T>
BRISK_HOST_DEVICE inline T digamma_impl(T x) {
  constexpr T kPi = T(3.14159265358979323846);
  if (x == T(0)) return std::copysign(T(INFINITY), -x);
  if (x != x || x == T(-INFINITY)) return T(NAN);
  if (x == T(INFINITY)) return x;
  T result = T(0);
  if (x < T(0)) {
    if (x == std::floor(x)) return T(NAN);
    // psi(x) = psi(1 - x) - pi / tan(pi * x); tan has period 1: reduce to
    // r = x - nearest integer, exact and in [-1/2, 1/2] (x - floor(x)
    // rounds to 1 for tiny negative x).
    const T r = x - std::nearbyint(x);
    result = -kPi / std::tan(kPi * r);
    x = T(1) - x;
  }
  const T start = sizeof(T) >= 8 ? T(20) : T(10);
  while (x < start) {
    result -= T(1) / x;
    x += T(1);
  }
  const T z = T(1) / (x * x);
  // Bernoulli terms: 1/12, 1/120, 1/252, 1/240, 1/132, 691/32760, 1/12.
  const T series =
      z * (T(1.0 / 12) -
           z * (T(1.0 / 120) -
                z * (T(1.0 / 252) - z * (T(1.0 / 240) - z * (T(1.0 / 132) - z * (T(691.0 / 32760) - z * T(1.0 / 12)))))));
  return result + std::log(x) - T(0.5) / x - series;
}
template <class T>
BRISK_HOST_DEVICE inline T digamma(T x) {
#ifndef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(digamma_impl<double>(x));
#endif
  return digamma_impl(x);
}

/// trigamma (polygamma(1, x)), the derivative of digamma: recurrence up to
/// x >= 10, then the asymptotic series; reflection for x < 0.
template <class T>
BRISK_HOST_DEVICE inline T trigamma_impl(T x) {
  constexpr T kPi = T(3.14159265358979323846);
  if (x != x || x == T(-INFINITY)) return T(NAN);
  if (x == T(INFINITY)) return T(0);
  bool reflected = false;
  T refl = T(0);
  if (x <= T(0)) {
    if (x == std::floor(x)) return T(INFINITY);
    // psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x); sin^2 has period 1
    // (reduced as in digamma).
    const T s = std::sin(kPi * (x - std::nearbyint(x)));
    refl = kPi * kPi / (s * s);
    x = T(1) - x;
    reflected = true;
  }
  T acc = T(0);
  // Up to 20 in double: the series' first dropped term is 3e-18 there.
  const T start = sizeof(T) >= 8 ? T(20) : T(10);
  while (x < start) {
    acc += T(1) / (x * x);
    x += T(1);
  }
  const T z = T(1) / (x * x);
  // 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7) - 1/(30x^9) + 5/(66x^11)
  const T series = T(1) / x + z / T(2) +
                   (z / x) * (T(1.0 / 6) - z * (T(1.0 / 30) - z * (T(1.0 / 42) - z * (T(1.0 / 30) - z * T(5.0 / 66)))));
  const T psi1 = acc + series;
  return reflected ? refl - psi1 : psi1;
}
template <class T>
BRISK_HOST_DEVICE inline T trigamma(T x) {
#ifndef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(trigamma_impl<double>(x));
#endif
  return trigamma_impl(x);
}

/// The Hurwitz zeta function zeta(x, q) = sum_k (q + k)^-x, x > 1, in
/// double: Cephes' algorithm, as torch's (ATen/native/Math.h): the terms
/// while q + k <= 9 (at least nine), then the Euler-Maclaurin tail. At a
/// non-positive integer q inf (a pole); q <= 0 with x not an integer nan;
/// q = +inf 0 (the limit; Cephes' tail forms 0 * inf there).
BRISK_HOST_DEVICE inline double zeta_hurwitz(double x, double q) {
  constexpr double kMachEp = 1.11022302462515654042E-16;
  // Cephes' A[i]: (2i + 2)! / B_{2i + 2}
  const double A[12] = {12.0,
                        -720.0,
                        30240.0,
                        -1209600.0,
                        47900160.0,
                        -1.8924375803183791606e9,
                        7.47242496e10,
                        -2.950130727918164224e12,
                        1.1646782814350067249e14,
                        -4.5979787224074726105e15,
                        1.8152105401943546773e17,
                        -7.1661652561756670113e18};
  if (x != x || q != q) return NAN;
  if (x == 1.0) return INFINITY;
  if (x < 1.0) return NAN;
  if (q == INFINITY) return 0.0;
  if (q <= 0.0) {
    if (q == std::floor(q)) return INFINITY;
    if (x != std::floor(x)) return NAN;
  }
  double s = std::pow(q, -x), a = q, b = 0.0;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    i += 1;
    a += 1.0;
    b = std::pow(a, -x);
    s += b;
    if (-kMachEp * s < b && b < kMachEp * s) return s;
  }
  const double w = a;
  s += b * w / (x - 1.0);
  s -= 0.5 * b;
  a = 1.0;
  double k = 0.0;
  for (i = 0; i < 12; i++) {
    a *= x + k;
    b /= w;
    double t = a * b / A[i];
    s = s + t;
    t = std::fabs(t / s);
    if (t < kMachEp) return s;
    k += 1.0;
    a *= x + k;
    b /= w;
    k += 1.0;
  }
  return s;
}

/// polygamma(n, x), the n-th derivative of digamma, for n >= 2 (digamma and
/// trigamma above are n = 0 and 1): (-1)^(n + 1) n! zeta(n + 1, x), as
/// torch's calc_polygamma, in double (a float x too). At the poles (0 and
/// the negative integers) (-1)^(n + 1) inf, torch's value (the limit from the
/// right); at +inf the limit 0 (-0.0 for even n; torch gives nan); at -inf nan
/// (torch: (-1)^(n + 1) inf, as at a pole).
BRISK_HOST_DEVICE inline double polygamma_impl(int n, double x) {
  if (x == -INFINITY) return NAN;
  double factorial = 1.0;
  for (int i = 2; i <= n; ++i) factorial *= double(i);
  const double sign = n % 2 ? 1.0 : -1.0;
  return sign * factorial * zeta_hurwitz(double(n) + 1.0, x);
}
template <class T>
BRISK_HOST_DEVICE inline T polygamma(int n, T x) {
  return static_cast<T>(polygamma_impl(n, static_cast<double>(x)));
}

/// Inverse error function: Giles' single-precision approximation ("Approximating
/// the erfinv function", GPU Computing Gems, 2011) as the start, then Newton
/// steps on erf (|y| small) or on erfc (the tail, where 1 - |x| is exact),
/// in double: one step for float, three for double.
BRISK_HOST_DEVICE inline double erfinv_host(double x, int steps) {
  if (x != x || x < -1.0 || x > 1.0) return NAN;
  if (x == 1.0 || x == -1.0) return std::copysign(INFINITY, x);
  if (x == 0.0) return x;
  const double ax = std::fabs(x);
  double w = -std::log((1.0 - ax) * (1.0 + ax)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * ax;
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
  for (int i = 0; i < steps; ++i) {
    const double d = kTwoOverSqrtPi * std::exp(-y * y);
    if (d == 0.0) break;
    const double f = ax <= 0.5 ? std::erf(y) - ax : (1.0 - ax) - std::erfc(y);
    y -= f / d;
  }
  return std::copysign(y, x);
}
template <class T>
BRISK_HOST_DEVICE inline T erfinv(T x) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, float>)
    return ::erfinvf(x);
  else
    return ::erfinv(x);
#else
  return static_cast<T>(erfinv_host(static_cast<double>(x), std::is_same_v<T, float> ? 1 : 3));
#endif
}
template <class T>
BRISK_HOST_DEVICE inline T relu(T x) {
  return x < T(0) ? T(0) : x;  // nan passes through, as in PyTorch
}
template <class T>
BRISK_HOST_DEVICE inline T sign(T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x;
  } else if constexpr (std::is_unsigned_v<T>) {
    return x > 0 ? T(1) : T(0);
  } else {
    return T((T(0) < x) - (x < T(0)));  // nan gives 0, as in PyTorch 1.13
  }
}
template <class T>
BRISK_HOST_DEVICE inline T abs(T x) {
  if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>)
    return x;
  else if constexpr (std::is_floating_point_v<T>)
    return std::fabs(x);
  else
    return x < 0 ? T(uint64_t(0) - uint64_t(x)) : x;  // wraps at the minimum, without UB
}
/// Integer -x and x*x wrap like PyTorch's (two's complement), without UB.
template <class T>
BRISK_HOST_DEVICE inline T neg(T x) {
  if constexpr (std::is_integral_v<T>)
    return T(uint64_t(0) - uint64_t(x));
  else
    return -x;
}
template <class T>
BRISK_HOST_DEVICE inline T square(T x) {
  if constexpr (std::is_integral_v<T>)
    return T(uint64_t(x) * uint64_t(x));
  else
    return x * x;
}
/// Round half to even, like torch.round.
template <class T>
BRISK_HOST_DEVICE inline T round_even(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return std::nearbyint(x);
  else
    return x;
}
template <class T>
BRISK_HOST_DEVICE inline T rsqrt(T x) {
  return T(1) / std::sqrt(x);
}

/// -a wrapping at the minimum (min / -1 is min, as two's complement gives
/// it; the hardware division traps with SIGFPE instead).
template <class T>
BRISK_HOST_DEVICE inline T neg_wrap(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(a));
}

/// Python's modulo: the result has the sign of the divisor.
template <class T>
BRISK_HOST_DEVICE inline T remainder(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    if (r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
    return r;
  } else if constexpr (std::is_same_v<T, bool>) {
    return a && !b;
  } else {
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return T(0);  // min % -1 traps in hardware (SIGFPE); the result is 0
    T r = a % b;
    if constexpr (std::is_signed_v<T>)
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}
template <class T>
BRISK_HOST_DEVICE inline T fmod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return std::fmod(a, b);
  else if constexpr (std::is_same_v<T, bool>)
    return a && !b;
  else if constexpr (std::is_signed_v<T>)
    return b == T(-1) ? T(0) : T(a % b);  // min % -1 traps (SIGFPE)
  else
    return a % b;
}
/// Floor division. For floats it rounds the true quotient carefully so
/// that a == b * floor_div(a, b) + remainder(a, b) holds as in Python.
template <class T>
BRISK_HOST_DEVICE inline T floor_div(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == T(0)) return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
    if (div == T(0)) return std::copysign(T(0), a / b);
    T fl = std::floor(div);
    if (div - fl > T(0.5)) fl += T(1);
    return fl;
  } else if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return neg_wrap(a);
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  } else {
    return a / b;
  }
}
/// Truncating division of values stored as S, computed in T (S's opmath
/// type). The quotient is rounded to S before it is truncated: PyTorch's
/// kernels compute trunc(a / b) in the 16-bit type itself, so for float16
/// -7 / -0.7 (= 9.997 in float) is 10, not 9. A no-op for float, double and
/// the integer types.
template <class S, class T>
BRISK_HOST_DEVICE inline T trunc_div(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return std::trunc(static_cast<T>(static_cast<S>(a / b)));
  else if constexpr (std::is_signed_v<T>)
    return b == T(-1) ? neg_wrap(a) : T(a / b);
  else
    return a / b;
}
/// isclose of two floats stored as S, computed in T (S's opmath type):
/// |x - y| <= atol + |rtol * y| as PyTorch's composite computes it, one
/// tensor op per step, so x - y, rtol * y and the sum are each rounded to S
/// (for bfloat16, -0.5 and 1e-7 are close under atol 0.5: -0.5 - 1e-7 rounds
/// to -0.5). rtol and atol are in T (PyTorch reads a Python scalar in the
/// opmath type). Equal values (inf included) are close, NaNs only to each
/// other under equal_nan, and an overflowing difference never is (PyTorch's
/// isfinite(actual_error)). Integer inputs are cast to the default float
/// dtype by the front end before they get here, as PyTorch's.
template <class S, class T>
BRISK_HOST_DEVICE inline bool isclose_float(T x, T y, T rtol, T atol, bool equal_nan) {
  if (x == y) return true;
  if (x != x || y != y) return equal_nan && x != x && y != y;
  const T err = std::abs(static_cast<T>(static_cast<S>(x - y)));
  if (!std::isfinite(err)) return false;
  const T rel = std::abs(static_cast<T>(static_cast<S>(rtol * y)));  // the abs keeps it out of an FMA
  return err <= static_cast<T>(static_cast<S>(atol + rel));
}
/// Integer power with PyTorch's rules for negative exponents.
template <class T>
BRISK_HOST_DEVICE inline T ipow(T base, T exp) {
  if constexpr (std::is_same_v<T, bool>) {
    return base || !exp;
  } else {
    if constexpr (std::is_signed_v<T>) {
      if (exp < 0) {
        if (base == 1) return 1;
        if (base == -1) return (exp & 1) ? T(-1) : T(1);
        return 0;
      }
    }
    // Unsigned 64-bit arithmetic wraps like PyTorch's integer pow, without UB.
    uint64_t r = 1, b = uint64_t(base);
    while (exp) {
      if (exp & 1) r *= b;
      exp >>= 1;
      if (exp) b *= b;
    }
    return T(r);
  }
}
template <class T>
BRISK_HOST_DEVICE inline T pow(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return std::pow(a, b);
  else
    return ipow(a, b);
}
/// minimum/maximum propagate nan. On a tie they return the first operand,
/// as PyTorch does: maximum(-0.0, 0.0) is -0.0, and clamp (built from them
/// with x first) keeps the sign of a zero input: clamp(-0.0, min=0) = -0.0.
/// Written as selects, without a branch or a short-circuit: loops over them
/// vectorize (with `||` and an early return, clamp ran 10x slower than
/// PyTorch's on the CPU).
template <class T>
BRISK_HOST_DEVICE inline T maximum(T a, T b) {
  const T r = a < b ? b : a;
  if constexpr (std::is_floating_point_v<T>) return ((a != a) | (b != b)) ? a + b : r;
  return r;
}
template <class T>
BRISK_HOST_DEVICE inline T minimum(T a, T b) {
  const T r = b < a ? b : a;
  if constexpr (std::is_floating_point_v<T>) return ((a != a) | (b != b)) ? a + b : r;
  return r;
}
// Note [Binary math modes]
// The rows of slot `binary_math` (KernelArgs::mode): PyTorch's hypot,
// logaddexp, logaddexp2, copysign, nextafter, xlogy and heaviside, each as
// PyTorch's CPU scalar loop computes it (BinaryOpsKernel.cpp), in the math
// type (float for 16-bit) and rounded once, except where PyTorch rounds in
// between: xlogy of a 16-bit dtype rounds log(y) to the dtype before the
// product (c10's std::log of a BFloat16/Half returns the 16-bit type), and
// nextafter steps in the dtype's own representation (nextafter16 below).
// The CPU kernels compute the vectorized ones on vectors with the Sleef
// functions PyTorch's vector loops call (backend/cpu/kernels/binary_math.cpp).
enum class BinaryMath : int { hypot, logaddexp, logaddexp2, copysign, nextafter, xlogy, heaviside, kNumModes };
template <class T>
BRISK_HOST_DEVICE inline T logaddexp(T a, T b) {
  if (std::isinf(a) && a == b) return a;
  const T m = a < b ? b : a;  // std::max: a NaN a or b gives NaN below
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}
template <class T>
BRISK_HOST_DEVICE inline T logaddexp2(T a, T b) {
  if (std::isinf(a) && a == b) return a;
  const T m = a < b ? b : a;
  const T inv_log_2 = T(1.4426950408889634074);  // 1 / ln 2, rounded to T
  const T l = std::log1p(std::exp2(-std::fabs(a - b)));
  return std::fma(l, inv_log_2, m);  // fused, as PyTorch's AVX2/AVX-512 and CUDA builds compute it
}
/// xlogy of a dtype stored as S computed in M: log(y) rounded to S before
/// the product (PyTorch's 16-bit CPU kernel; a no-op rounding for float/double).
template <class S, class M>
BRISK_HOST_DEVICE inline M xlogy_in(M x, M y) {
  if (y != y) return y;
  if (x == M(0)) return M(0);
  return x * static_cast<M>(static_cast<S>(std::log(y)));
}
/// x * log(y), 0 where x == 0 (even for y = 0 or inf), NaN for a NaN y.
template <class T>
BRISK_HOST_DEVICE inline T xlogy(T x, T y) {
  return xlogy_in<T>(x, y);
}
/// The step function: `values` where x == 0, else 1 for x > 0, 0 below (and for NaN).
template <class T>
BRISK_HOST_DEVICE inline T heaviside(T x, T values) {
  return x == T(0) ? values : T(x > T(0));
}
/// nextafter of a float16/bfloat16 in its own representation (PyTorch's
/// c10 nextafter for the 16-bit types): the neighbour of `from` toward `to`.
template <class H>
BRISK_HOST_DEVICE inline H nextafter16(H from, H to) {
  const float f = float(from), t = float(to);
  if (f != f || t != t) return H(f + t);
  if (f == t) return to;
  uint16_t u = from.x;
  if (f == 0.0f) {
    u = uint16_t((to.x & 0x8000u) | 1u);  // the smallest subnormal with to's sign
  } else if ((f < t) == (f > 0.0f)) {
    ++u;  // away from zero
  } else {
    --u;
  }
  H r;
  r.x = u;
  return r;
}

/// x << s and x >> s on integers as PyTorch 2 defines them, without UB: a
/// count outside [0, bit width of T) shifts everything out (0, or -1 for a
/// right shift of a negative x); left shifts wrap (two's complement).
/// PyTorch 1.13 masked the count instead (x << 65 == x << 1 for int64).
template <class T>
BRISK_HOST_DEVICE inline T shift_left(T x, T s) {
  if constexpr (std::is_same_v<T, bool>) {
    return x;  // not an op on bool (the front end refuses it)
  } else {
    using U = std::make_unsigned_t<T>;
    constexpr int bits = int(sizeof(T) * 8);
    if constexpr (std::is_signed_v<T>)
      if (s < 0) return T(0);
    if (s >= T(bits)) return T(0);
    return T(U(U(x) << int(s)));
  }
}
template <class T>
BRISK_HOST_DEVICE inline T shift_right(T x, T s) {
  if constexpr (std::is_same_v<T, bool>) {
    return x;
  } else {
    constexpr int bits = int(sizeof(T) * 8);
    if constexpr (std::is_signed_v<T>) {
      if (s < 0 || s >= T(bits)) return x < 0 ? T(-1) : T(0);  // the sign bit fills the result
    } else {
      if (s >= T(bits)) return T(0);
    }
    return T(x >> int(s));
  }
}
/// lerp as PyTorch computes it (exact at both ends).
template <class T>
BRISK_HOST_DEVICE inline T lerp(T a, T b, T w) {
  return std::abs(w) < T(0.5) ? a + w * (b - a) : b - (b - a) * (T(1) - w);
}

}  // namespace math
}  // namespace brisk
