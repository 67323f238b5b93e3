// exp without calls or branches, for loops the compiler vectorizes (the row
// ops: softmax, log_softmax, cross_entropy). Header-only, so each CPU kernel
// variant inlines it at its own vector width.
//
// Note [Vectorizable exp]
// exp(x) = 2^n * e^r with n = round(x / ln2) and r = x - n * ln2 in
// [-ln2/2, ln2/2] (ln2 split in a high part with trailing zero bits and a
// low part, so that n * ln2_hi is exact: Cody and Waite's reduction), e^r a
// polynomial: Cephes' degree-6 minimax for float, the degree-13 Taylor
// polynomial for double (its truncation error 0.35^14/14! < 5e-18). 2^n is
// applied as 2^(n/2) * 2^(n - n/2), two normal powers of two, so that the
// results in the subnormal range round once (in the last multiplication) and
// 2^128 * p overflows to inf instead of wrapping the exponent field.
// Measured against std::exp in long double (tests/nn/test_rowops.cpp): at
// most 1.02 ulp for float over [-104, 89], at most 1.002 ulp for double over
// [-745, 709.7] (the tests bound both by 1.1 ulp). Special values: NaN stays
// NaN, exp(-inf) = +0, exp(+inf) = +inf, results past the range overflow to
// inf (float x > 88.73) or underflow to 0 (x < -103.98).
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>

namespace brisk::cpu {
// Internal linkage: each CPU kernel variant (compiled with its own ISA
// flags) keeps its own copy; an inline function of external linkage would
// let the linker pick one variant's out-of-line copy for all of them.
namespace {

inline float exp_vec(float x) {
  // The clamps in the operand order of maxps / minps (one instruction each;
  // std::max/min were if-converted into masked copies of the whole
  // polynomial, 1.6x slower): a NaN x passes through both and makes every
  // later value NaN.
  float xc = (-104.0f > x) ? -104.0f : x;
  xc = (89.0f < xc) ? 89.0f : xc;
  // Round to nearest by adding 1.5 * 2^23 (floor/nearbyint would not
  // vectorize without -fno-trapping-math).
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;  // ln2_hi: 8 significant bits, n * ln2_hi exact
  r = r - n * -2.12194440e-4f;      // ln2 - ln2_hi
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // n as an integer (a NaN n is not converted: that would be undefined)
  const int32_t ni = static_cast<int32_t>(n == n ? n : 0.0f);  // [-150, 128]
  const int32_t n1 = ni >> 1, n2 = ni - n1;                    // each in [-75, 64]
  const float s1 = std::bit_cast<float>((n1 + 127) << 23);
  const float s2 = std::bit_cast<float>((n2 + 127) << 23);
  return (p * s1) * s2;  // NaN x: p is NaN
}

inline double exp_vec(double x) {
  double xc = (-746.0 > x) ? -746.0 : x;
  xc = (710.0 < xc) ? 710.0 : xc;
  const double n = (xc * 1.4426950408889634074 + 6755399441055744.0) - 6755399441055744.0;  // 1.5 * 2^52
  double r = xc - n * 6.93147180369123816490e-01;  // fdlibm's ln2_hi (trailing zero bits)
  r = r - n * 1.90821492927058770002e-10;          // ln2_lo
  // e^r - 1 - r by Horner on 1/k!, k = 2..13
  double p = 1.0 / 6227020800.0;  // 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r * r + r + 1.0;
  const int64_t ni = static_cast<int64_t>(n == n ? n : 0.0);  // [-1076, 1024]
  const int64_t n1 = ni >> 1, n2 = ni - n1;                   // each in [-538, 512]
  const double s1 = std::bit_cast<double>((n1 + 1023) << 52);
  const double s2 = std::bit_cast<double>((n2 + 1023) << 52);
  return (p * s1) * s2;
}

}  // namespace
}  // namespace brisk::cpu
