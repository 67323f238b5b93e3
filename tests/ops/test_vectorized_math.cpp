// Accuracy of the vectorized CPU math (docs/design/vectorized_math.md): every
// function against a long double reference, in ulp of the result's dtype,
// over special values (zeros, denormals, infinities, nan, the overflow and
// underflow edges, domain edges) and random inputs across each function's
// range; float32 and float64 contiguous (vector body and scalar tail),
// strided inputs (the buffered path), float16 and bfloat16 (through float).
//
// The kernels are compiled once per ISA variant and one is picked at start-up
// (src/backend/cpu/register.cpp); CTest runs this binary once per variant
// built into the library with BRISK_CPU_CAPABILITY set (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "brisk/brisk.h"

namespace brisk::cpu {
const char* cpu_capability();
}

using namespace brisk;
using LD = long double;

namespace {

// ---- references (long double), with PyTorch's values at the poles ---------------
constexpr LD kPiL = 3.141592653589793238462643383279502884L;

LD ref_digamma(LD x) {
  if (x == 0) return std::copysign(std::numeric_limits<LD>::infinity(), -x);
  if (std::isnan(x) || x == -INFINITY) return NAN;
  if (x == INFINITY) return x;
  LD r = 0;
  if (x < 0) {
    if (x == std::floor(x)) return NAN;
    r = -kPiL / std::tan(kPiL * (x - std::nearbyint(x)));
    x = 1 - x;
  }
  while (x < 30) r -= 1 / x, x += 1;
  const LD z = 1 / (x * x);
  return r + std::log(x) - 0.5L / x -
         z * (1.0L / 12 - z * (1.0L / 120 - z * (1.0L / 252 - z * (1.0L / 240 - z * (1.0L / 132)))));
}
LD ref_erfinv(LD x) {
  if (std::isnan(x) || x < -1 || x > 1) return NAN;
  if (x == 1 || x == -1) return std::copysign(std::numeric_limits<LD>::infinity(), x);
  if (x == 0) return x;
  const LD ax = std::fabs(x);
  if (ax < 1e-10L) return std::sqrt(kPiL) / 2 * x * (1 + kPiL / 12 * x * x);  // the series
  // Newton on erf / erfc in long double from a crude start (bisection first).
  LD lo = 0, hi = 30;
  for (int i = 0; i < 80; ++i) {
    const LD mid = (lo + hi) / 2;
    const LD f = ax <= 0.5L ? std::erf(mid) - ax : (1 - ax) - std::erfc(mid);
    (f < 0 ? lo : hi) = mid;
  }
  LD y = (lo + hi) / 2;
  for (int i = 0; i < 3; ++i) {
    const LD d = 2 / std::sqrt(kPiL) * std::exp(-y * y);
    if (d == 0) break;
    y -= (ax <= 0.5L ? std::erf(y) - ax : (1 - ax) - std::erfc(y)) / d;
  }
  return std::copysign(y, x);
}
LD ref_gelu(LD x) { return 0.5L * x * std::erfc(-x / std::sqrt(2.0L)); }
LD ref_gelu_tanh(LD x) {
  const LD u = std::sqrt(2 / kPiL) * (x + 0.044715L * x * x * x);
  return x / (1 + std::exp(-2 * u));  // 0.5 x (1 + tanh u) without cancellation
}
LD ref_softplus(LD x) { return x > 20 ? x : std::log1p(std::exp(x)); }

// ---- ulp distance ----------------------------------------------------------------
template <class T>
LD ulp_of(LD ref) {
  const LD a = std::fabs(ref);
  const int digits = std::numeric_limits<T>::digits;  // 24, 53, 11 (half), 8 (bfloat16)
  const int min_exp = std::numeric_limits<T>::min_exponent;
  int e = 0;
  std::frexp(a == 0 ? LD(std::numeric_limits<T>::min()) : a, &e);
  return std::ldexp(LD(1), std::max(e, min_exp) - digits);
}

struct Spec {
  std::string name;
  std::function<Tensor(const Tensor&)> fn;
  std::function<LD(LD)> ref;
  double ulp_f, ulp_d;  // bounds for float32 and float64 (ulp of the result)
  double lo, hi;        // random inputs: uniform in [lo, hi)
  double abs_f = 0, abs_d = 0;  // or within this absolute error (cancellation near a zero of f)
  bool log_scale = false;       // also magnitudes 10^[-30, 30] (both signs) inside [lo, hi)
  double tail = 0, tail_pow = 2;  // for x < 0 the bound grows by tail * |x|^tail_pow ulp
                                  // (the ill-conditioned left tails of gelu)
};

template <class T>
struct Limits;
template <>
struct Limits<float> {
  static constexpr ScalarType dtype = kFloat;
};
template <>
struct Limits<double> {
  static constexpr ScalarType dtype = kDouble;
};

std::vector<double> special_values(bool is_float) {
  const double dmin = is_float ? double(std::numeric_limits<float>::denorm_min()) : std::numeric_limits<double>::denorm_min();
  const double nmin = is_float ? double(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min();
  const double big = is_float ? double(std::numeric_limits<float>::max()) : std::numeric_limits<double>::max();
  std::vector<double> v = {0.0, -0.0, dmin, -dmin, nmin, -nmin, 1e-30, -1e-30, 1e-7, -1e-7, 0.5, -0.5,
                           1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.999999, -0.999999, 1.000001, 10.0, -10.0, 20.0, 20.5,
                           30.0, -30.0, 88.0, 88.72, 88.73, 89.0, -87.3, -88.0, -103.9, -104.0, -105.0, 100.0,
                           -100.0, 709.7, 709.8, 710.0, -708.0, -745.0, -746.0, 1e10, -1e10, 1e30, -1e30, big, -big,
                           INFINITY, -INFINITY, NAN, -2.5, -0.25, 1.4616321449683623, 0.9, 0.1};
  return v;
}

template <class T>
std::vector<T> random_inputs(const Spec& s, int n, uint32_t seed) {
  std::mt19937_64 g(seed);
  std::vector<T> v;
  std::uniform_real_distribution<double> u(s.lo, s.hi);
  for (int i = 0; i < n; ++i) v.push_back(static_cast<T>(u(g)));
  if (s.log_scale) {
    std::uniform_real_distribution<double> e(-30, 30);
    for (int i = 0; i < n / 2; ++i) {
      double x = std::pow(10.0, e(g)) * (i % 2 ? -1 : 1);
      if (x >= s.lo && x < s.hi) v.push_back(static_cast<T>(x));
    }
  }
  return v;
}

// Checks got against the reference on each input; returns the worst ulp error
// seen (failures are reported through gtest, at most a few per case).
template <class T>
double check_values(const Spec& s, const std::vector<T>& in, const std::vector<T>& got, const std::string& where,
                    double bound, double abs_tol) {
  double worst = 0;
  int reported = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const LD r = s.ref(LD(in[i]));
    const T g = got[i];
    bool ok;
    double err = 0;
    const LD rt = LD(T(r));  // the reference rounded to T (overflow gives inf)
    if (std::isnan(r)) {
      ok = std::isnan(g);
    } else if (std::isinf(rt) || std::isinf(g)) {
      ok = LD(g) == rt;
    } else if (std::isnan(g)) {
      ok = false;
    } else {
      err = double(std::fabs(LD(g) - r) / ulp_of<T>(r));
      const double ax = std::fabs(double(in[i]));
      const double allowed = bound + (in[i] < 0 && s.tail > 0 ? s.tail * std::pow(ax, s.tail_pow) : 0.0);
      ok = err <= allowed * (1 + 1e-3) || double(std::fabs(LD(g) - r)) <= abs_tol;
      if (double(std::fabs(LD(g) - r)) > abs_tol) worst = std::max(worst, err);
    }
    if (!ok && reported++ < 5)
      ADD_FAILURE() << s.name << " " << where << " (" << brisk::cpu::cpu_capability() << "): x = "
                    << std::setprecision(20) << double(in[i]) << " got " << double(g) << " want " << double(r)
                    << " (" << err << " ulp, bound " << bound << ")";
  }
  return worst;
}

template <class T>
void run_case(const Spec& s) {
  const bool is_float = std::is_same_v<T, float>;
  const double bound = is_float ? s.ulp_f : s.ulp_d;
  const double abs_tol = is_float ? s.abs_f : s.abs_d;
  std::vector<T> in;
  for (double v : special_values(is_float)) in.push_back(static_cast<T>(v));
  for (T v : random_inputs<T>(s, 4000 + 13, 7)) in.push_back(v);  // not a multiple of any lane count
  const int64_t n = int64_t(in.size());
  Tensor x = tensor(in, TensorOptions().dtype(Limits<T>::dtype));
  // Contiguous: whole vectors and a tail.
  Tensor y = s.fn(x);
  ASSERT_EQ(y.dtype(), Limits<T>::dtype) << s.name;
  const double worst = check_values<T>(s, in, y.template to_vector<T>(), "contiguous", bound, abs_tol);
  // Each element alone (a tail of one): the same value as in the vector body.
  for (int64_t i : {int64_t(0), int64_t(5), n - 1}) {
    const T one = s.fn(x.slice(0, i, i + 1)).template to_vector<T>()[0];
    const T body = y.template to_vector<T>()[size_t(i)];
    EXPECT_TRUE(std::memcmp(&one, &body, sizeof(T)) == 0 || (one != one && body != body))
        << s.name << " element " << i << " alone " << double(one) << " in a run " << double(body);
  }
  // Strided: every other element of an interleaved buffer (the buffered path).
  Tensor wide = zeros({n, 2}, Limits<T>::dtype);
  wide.select(1, 0).copy_(x);
  Tensor ys = s.fn(wide.select(1, 0));
  check_values<T>(s, in, ys.contiguous().template to_vector<T>(), "strided", bound, abs_tol);
  ::testing::Test::RecordProperty(s.name + (is_float ? "_f32_max_ulp" : "_f64_max_ulp"), std::to_string(worst));
  std::printf("  %-14s %s max %.3f ulp (bound %.1f)\n", s.name.c_str(), is_float ? "float32" : "float64", worst,
              bound);
}

// float16 / bfloat16: computed in float, rounded once: within 1 ulp of the
// 16-bit type (or the case's float absolute tolerance).
void run_16bit(const Spec& s, ScalarType dt) {
  std::vector<float> vals;
  for (double v : special_values(true)) vals.push_back(float(v));
  for (float v : random_inputs<float>(s, 1000 + 5, 11)) vals.push_back(v);
  Tensor x16 = tensor(vals).to(dt);
  std::vector<float> in = x16.to(kFloat).to_vector<float>();  // the 16-bit values
  std::vector<float> got = s.fn(x16).to(kFloat).to_vector<float>();
  ASSERT_EQ(s.fn(x16).dtype(), dt);
  const int digits = dt == kHalf ? 11 : 8;
  const double max16 = dt == kHalf ? 65504.0 : 3.3895313892515355e38;
  int reported = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const LD r = s.ref(LD(in[i]));
    const float g = got[i];
    bool ok;
    if (std::isnan(r)) {
      ok = std::isnan(g);
    } else if (std::fabs(r) > max16 * (1 + std::ldexp(1.0, -digits)) || std::isinf(g)) {
      ok = std::isinf(g) ? std::fabs(r) >= max16 && std::signbit(g) == std::signbit(double(r)) : false;
    } else {
      int e = 0;
      std::frexp(double(std::fabs(r)) == 0 ? 6.1e-5 : double(std::fabs(r)), &e);
      const int min_exp = dt == kHalf ? -13 : -125;
      const double ulp = std::ldexp(1.0, std::max(e, min_exp) - digits);
      const double err = double(std::fabs(LD(g) - r));
      ok = err <= ulp || err <= s.abs_f;
    }
    if (!ok && reported++ < 5)
      ADD_FAILURE() << s.name << " " << dt << " (" << brisk::cpu::cpu_capability() << "): x = " << in[i] << " got "
                    << g << " want " << double(r);
  }
}

#define FN(expr) [](const Tensor& x) { return expr; }
#define REF(expr) [](LD x) -> LD { return expr; }

constexpr double kFltMin = 1.1754943508222875e-38, kDblMin = 2.2250738585072014e-308;

std::vector<Spec> specs() {
  const LD inf = std::numeric_limits<LD>::infinity();
  (void)inf;
  return {
      {"exp", FN(x.exp()), REF(std::exp(x)), 1.0, 1.0, -110, 90},
      {"expm1", FN(x.expm1()), REF(std::expm1(x)), 1.0, 1.0, -20, 90, 0, 0, true},
      {"exp2", FN(x.exp2()), REF(std::exp2(x)), 1.0, 1.0, -155, 130},
      {"log", FN(x.log()), REF(std::log(x)), 1.0, 1.0, -1, 1e30, 0, 0, true},
      {"log1p", FN(x.log1p()), REF(std::log1p(x)), 1.0, 1.0, -1, 1e30, 0, 0, true},
      {"log2", FN(x.log2()), REF(std::log2(x)), 1.0, 1.0, 0, 1e30, 0, 0, true},
      {"log10", FN(x.log10()), REF(std::log10(x)), 1.0, 1.0, 0, 1e30, 0, 0, true},
      {"sin", FN(x.sin()), REF(std::sin(x)), 1.0, 1.0, -1e4, 1e4, 0, 0, true},
      {"cos", FN(x.cos()), REF(std::cos(x)), 1.0, 1.0, -1e4, 1e4},
      {"tan", FN(x.tan()), REF(std::tan(x)), 1.0, 1.0, -1e4, 1e4, 0, 0, true},
      {"asin", FN(x.asin()), REF(std::asin(x)), 1.0, 1.0, -1, 1, 0, 0, true},
      {"acos", FN(x.acos()), REF(std::acos(x)), 1.0, 1.0, -1, 1},
      {"atan", FN(x.atan()), REF(std::atan(x)), 1.0, 1.0, -1e4, 1e4, 0, 0, true},
      {"sinh", FN(x.sinh()), REF(std::sinh(x)), 1.0, 1.0, -90, 90, 0, 0, true},
      {"cosh", FN(x.cosh()), REF(std::cosh(x)), 1.0, 1.0, -90, 90},
      {"tanh", FN(x.tanh()), REF(std::tanh(x)), 1.0, 1.0, -20, 20, 0, 0, true},
      {"asinh", FN(x.asinh()), REF(std::asinh(x)), 1.0, 1.0, -1e30, 1e30, 0, 0, true},
      {"acosh", FN(x.acosh()), REF(std::acosh(x)), 1.0, 1.0, 0.5, 1e4, 0, 0, true},
      {"atanh", FN(x.atanh()), REF(std::atanh(x)), 1.0, 1.0, -1, 1, 0, 0, true},
      {"erf", FN(x.erf()), REF(std::erf(x)), 1.0, 1.0, -6, 6, 0, 0, true},
      {"erfc", FN(x.erfc()), REF(std::erfc(x)), 1.0, 1.5, -3, 12},
      {"erfinv", FN(x.erfinv()), REF(ref_erfinv(x)), 1.0, 2.0, -1, 1, 0, 0, true},
      {"sigmoid", FN(x.sigmoid()), REF(1 / (1 + std::exp(-x))), 2.5, 2.5, -110, 40},
      {"logit", FN(x.logit()), REF(std::log(x / (1 - x))), 3.0, 3.0, -0.1, 1.1, 4e-7, 1e-15},
      {"logit_eps", FN(x.logit(0.25)),
       REF(std::isnan(x) ? x : std::log(std::clamp(x, 0.25L, 0.75L) / (1 - std::clamp(x, 0.25L, 0.75L)))),
       3.0, 3.0, -0.1, 1.1, 4e-7, 1e-15},
      {"softplus", FN(x.softplus()), REF(ref_softplus(x)), 2.5, 2.5, -110, 40},
      {"softplus_beta", FN(x.softplus(2, 5)), REF(x * 2 > 5 ? x : std::log1p(std::exp(2 * x)) / 2), 2.5, 2.5, -60, 20},
      // float32 gelu: 4.84 ulp over every float x >= 0 (at x = 0.06); before erfc_fast's
      // polynomial was evaluated in u = 1 - t, 7.3 there, under the 4.5 this row had
      {"gelu", FN(x.gelu()), REF(ref_gelu(x)), 5.0, 3.0, -15, 15, 0, 0, false, 2.0, 2},
      {"gelu_tanh", FN(x.gelu("tanh")), REF(ref_gelu_tanh(x)), 3.5, 3.5, -15, 15, 0, 0, false, 1.0, 3},
      // x * (a subnormal exp(x)): within |x| subnormal ulps below -87 (float)
      // float32: x * sigmoid(x), two roundings after sigmoid's (3.02 ulp in the dense sweep)
      {"silu", FN(x.silu()), REF(x / (1 + std::exp(-x))), 3.5, 2.5, -110, 90, 5e-43, 4e-321},
      {"mish", FN(mish(x)), REF(x * std::tanh(std::log1p(std::exp(x)))), 4.0, 4.0, -110, 90, 5e-43, 4e-321},
      {"sqrt", FN(x.sqrt()), REF(std::sqrt(x)), 0.5, 0.5, -1, 1e30, 0, 0, true},
      {"rsqrt", FN(x.rsqrt()), REF(1 / std::sqrt(x)), 1.5, 1.5, -1, 1e30, 0, 0, true},
      {"reciprocal", FN(x.reciprocal()), REF(1 / x), 0.5, 0.5, -1e30, 1e30, 0, 0, true},
      {"lgamma", FN(x.lgamma()), REF(std::lgamma(x)), 1.0, 1.0, 0, 1e4, 0, 0, true},
      // lgamma for x < 0 and near its zeros (1, 2): Sleef bounds the absolute error there
      {"lgamma_neg", FN(x.lgamma()), REF(std::lgamma(x)), 1.0, 1.0, -50, 3, 1e-6, 1e-14},
      // digamma: near its zero (1.4616...) and for x < 0 the error is absolute
      {"digamma", FN(x.digamma()), REF(ref_digamma(x)), 1.0, 4.0, -30, 1e4, 1e-6, 1e-14, true},
      {"pow_2.5", FN(x.pow(2.5)), REF(std::pow(x, 2.5L)), 1.0, 1.0, -1, 3e15},
      {"pow_-1.5", FN(x.pow(-1.5)), REF(std::pow(x, -1.5L)), 1.0, 1.0, -1, 1e10, 0, 0, true},
      {"pow_2", FN(x.pow(2)), REF(x * x), 0.5, 0.5, -1e19, 1e19},
      {"pow_3", FN(x.pow(3)), REF(x * x * x), 1.5, 1.5, -1e12, 1e12},
      {"pow_0.5", FN(x.pow(0.5)), REF(std::signbit(x) && x == 0 ? x : std::sqrt(x)), 0.5, 0.5, -1, 1e30},
      {"pow_-0.5", FN(x.pow(-0.5)), REF(1 / std::sqrt(x)), 1.5, 1.5, -1, 1e30},
      {"pow_-1", FN(x.pow(-1)), REF(1 / x), 0.5, 0.5, -1e30, 1e30},
      {"pow_-2", FN(x.pow(-2)), REF(1 / (x * x)), 1.5, 1.5, -1e15, 1e15},
      // tensor ** tensor (exponent x / 7 - 3) and atan2(x, 1.5 - x): binary vectors
      {"pow_tensor", FN(x.abs().pow(x * 0.0625)), REF(std::pow(std::fabs(x), x * 0.0625L)), 1.0, 1.0, -100, 100},
      {"atan2", FN(atan2(x, 1.5 - x)), REF(std::atan2(x, 1.5L - x)), 1.0, 1.0, -1e4, 1e4},
  };
}

/// log(x / (1 - x)) in a 16-bit dtype's steps, as PyTorch's CPU kernel: 1 - x
/// and the quotient computed in float32 and rounded to H, then log
/// (composite::logit_v); with eps, x first clamped to [0.25, 0.75].
template <class H>
LD logit_steps(LD x, bool eps) {
  if (std::isnan(x)) return x;
  if (eps) x = std::clamp(x, 0.25L, 0.75L);
  const float xf = static_cast<float>(x);
  const float d = static_cast<float>(H(1.0f - xf));
  return std::log(LD(static_cast<float>(H(xf / d))));
}

class VectorizedMath : public ::testing::TestWithParam<Spec> {
 protected:
  void SetUp() override { set_num_threads(1); }
};

TEST_P(VectorizedMath, Float32) { run_case<float>(GetParam()); }
TEST_P(VectorizedMath, Float64) { run_case<double>(GetParam()); }
TEST_P(VectorizedMath, Float16) {
  // float16 x ** +-0.5 is pow, not sqrt, as PyTorch's CPU kernel: (-inf) ** 0.5 = inf
  Spec s = GetParam();
  if (s.name == "pow_0.5") s.ref = REF(std::pow(x, 0.5L));
  if (s.name == "pow_-0.5") s.ref = REF(std::pow(x, -0.5L));
  // logit in float16 steps, as PyTorch's CPU kernel
  if (s.name == "logit") s.ref = REF(logit_steps<Half>(x, false));
  if (s.name == "logit_eps") s.ref = REF(logit_steps<Half>(x, true));
  run_16bit(s, kHalf);
}
TEST_P(VectorizedMath, BFloat16) {
  // bfloat16 x ** 3 and x ** -2 round x * x to bfloat16 first, as PyTorch's CPU kernel
  Spec s = GetParam();
  if (s.name == "pow_3") s.ref = REF(LD(static_cast<float>(BFloat16(static_cast<float>(x * x)))) * x);
  if (s.name == "pow_-2") s.ref = REF(1 / LD(static_cast<float>(BFloat16(static_cast<float>(x * x)))));
  // logit in bfloat16 steps, as PyTorch's CPU kernel
  if (s.name == "logit") s.ref = REF(logit_steps<BFloat16>(x, false));
  if (s.name == "logit_eps") s.ref = REF(logit_steps<BFloat16>(x, true));
  run_16bit(s, kBFloat16);
}

INSTANTIATE_TEST_SUITE_P(All, VectorizedMath, ::testing::ValuesIn(specs()),
                         [](const ::testing::TestParamInfo<Spec>& i) {
                           std::string n = i.param.name;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// The variant under test is the one CTest asked for (BRISK_CPU_CAPABILITY).
TEST(VectorizedMathVariant, PicksTheRequestedVariant) {
  const char* want = std::getenv("BRISK_CPU_CAPABILITY");
  const std::string got = brisk::cpu::cpu_capability();
  std::printf("  kernel variant: %s\n", got.c_str());
  if (want && (std::string(want) == "base" || std::string(want) == "avx2")) {
    if (std::string(want) == "base") EXPECT_EQ(got, "base");
    if (std::string(want) == "avx2") EXPECT_TRUE(got == "avx2" || got == "base");
  }
}

// float32 over a sweep of bit patterns (every 2^13th float, both signs, over
// each function's whole range; every 2^15th for erfinv, whose reference is
// slow): brisk's own float32 formulas (erf, erfc, erfinv, digamma, sigmoid,
// silu: vec_math.h) checked far more densely than by the random inputs above.
TEST(VectorizedMathDense, Float32Sweep) {
  set_num_threads(1);
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> fn;
    std::function<LD(LD)> ref;
    double ulp, abs_tol;
    uint32_t stride;
  };
  const std::vector<Case> cases = {
      {"erf", FN(x.erf()), REF(std::erf(x)), 1.0, 0, 1u << 13},
      {"erfc", FN(x.erfc()), REF(std::erfc(x)), 1.0, 0, 1u << 13},
      {"erfinv", FN(x.erfinv()), REF(ref_erfinv(x)), 1.0, 0, 1u << 15},
      {"digamma", FN(x.digamma()), REF(ref_digamma(x)), 1.0, 1e-6, 1u << 13},
      {"sigmoid", FN(x.sigmoid()), REF(1 / (1 + std::exp(-x))), 2.5, 0, 1u << 13},
      {"silu", FN(x.silu()), REF(x / (1 + std::exp(-x))), 3.5, 5e-43, 1u << 13},
      {"log1p", FN(x.log1p()), REF(std::log1p(x)), 1.0, 0, 1u << 11},
  };
  for (const Case& c : cases) {
    std::vector<float> in;
    for (uint64_t b = 0; b < (uint64_t(1) << 32); b += c.stride) {
      const uint32_t bits = uint32_t(b);
      float v;
      std::memcpy(&v, &bits, sizeof v);
      if (c.stride > (1u << 13) && !(std::fabs(v) <= 1.0f)) continue;  // erfinv: its domain
      in.push_back(v);
    }
    Spec s;
    s.name = c.name;
    s.ref = c.ref;
    Tensor x = tensor(in);
    const double worst = check_values<float>(s, in, c.fn(x).to_vector<float>(), "sweep", c.ulp, c.abs_tol);
    std::printf("  %-8s float32 sweep of %zu: max %.3f ulp (bound %.1f)\n", c.name, in.size(), worst, c.ulp);
  }
}

#undef FN
#undef REF

// PyTorch 2.15's values at the infinities and poles (checked with torch 2.15.0).
TEST(VectorizedMathSemantics, MatchesPyTorchAtSpecialValues) {
  set_num_threads(1);
  const float inf = INFINITY, nan = NAN;
  auto v = [](const Tensor& t) { return t.to_vector<float>(); };
  Tensor x = tensor(std::vector<float>{-inf, inf, nan, 0.0f, -0.0f});
  auto expect_same = [](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const bool same = (std::isnan(got[i]) && std::isnan(want[i])) ||
                        (got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]));
      EXPECT_TRUE(same) << what << "[" << i << "] = " << got[i] << ", PyTorch " << want[i];
    }
  };
  expect_same(v(x.sigmoid()), {0, 1, nan, 0.5f, 0.5f}, "sigmoid");
  expect_same(v(x.silu()), {nan, inf, nan, 0, -0.0f}, "silu");
  // torch 2.15 float32 gives nan at +inf (its float64 gives inf): brisk gives inf in both.
  expect_same(v(x.gelu()), {nan, inf, nan, 0, -0.0f}, "gelu");
  expect_same(v(x.gelu("tanh")), {nan, inf, nan, 0, -0.0f}, "gelu_tanh");
  expect_same(v(x.softplus()), {0, inf, nan, 0.693147182f, 0.693147182f}, "softplus");
  expect_same(v(mish(x)), {nan, inf, nan, 0, -0.0f}, "mish");
  expect_same(v(x.digamma()), {nan, inf, nan, -inf, inf}, "digamma");
  expect_same(v(x.lgamma()), {inf, inf, nan, inf, inf}, "lgamma");
  expect_same(v(x.rsqrt()), {nan, 0, nan, inf, -inf}, "rsqrt");
  expect_same(v(x.reciprocal()), {-0.0f, 0, nan, inf, -inf}, "reciprocal");
  Tensor u = tensor(std::vector<float>{-1, 1, 0, 2, nan, -0.0f});
  expect_same(v(u.erfinv()), {-inf, inf, 0, nan, nan, -0.0f}, "erfinv");
  expect_same(v(u.atanh()), {-inf, inf, 0, nan, nan, -0.0f}, "atanh");
  expect_same(v(u.logit()), {nan, inf, -inf, nan, nan, -inf}, "logit");
  expect_same(v(u.acosh()), {nan, 0, nan, 1.31695795f, nan, nan}, "acosh");
  expect_same(v(u.logit(1e-6)), {-13.8155098f, 13.8023176f, -13.8155098f, 13.8023176f, nan, -13.8155098f}, "logit eps");
  expect_same(v(u.log1p()), {-inf, 0.693147182f, 0, 1.09861231f, nan, -0.0f}, "log1p");
  // brisk's own float32 erf / erfc / digamma (vec_math.h) at their edges, as torch 2.15.0 gives them.
  const float dmin = std::numeric_limits<float>::denorm_min();
  Tensor e = tensor(std::vector<float>{-inf, inf, nan, 0.0f, -0.0f, dmin, -dmin, 10.5f, -10.5f});
  expect_same(v(e.erf()), {-1, 1, nan, 0, -0.0f, dmin, -dmin, 1, -1}, "erf");
  expect_same(v(e.erfc()), {2, 0, nan, 1, 1, 1, 1, 0, 2}, "erfc");
  Tensor g = tensor(std::vector<float>{dmin, -dmin, -1, 1e30f, -1e30f});
  expect_same(v(g.digamma()), {-inf, inf, nan, 69.0775528f, nan}, "digamma edges");
  expect_same(v(tensor(std::vector<float>{dmin, -dmin}).erfinv()), {dmin, -dmin}, "erfinv subnormal");
}

// digamma and its gradient (trigamma) at known values.
TEST(VectorizedMathSemantics, DigammaKnownValues) {
  const double gamma = 0.57721566490153286061, pi = 3.14159265358979323846;
  Tensor x = tensor(std::vector<double>{1.0, 0.5, 2.0, -0.5}, TensorOptions().dtype(kDouble));
  auto d = x.digamma().to_vector<double>();
  EXPECT_NEAR(d[0], -gamma, 1e-15);
  EXPECT_NEAR(d[1], -gamma - 2 * std::log(2.0), 1e-15);
  EXPECT_NEAR(d[2], 1 - gamma, 1e-15);
  EXPECT_NEAR(d[3], -gamma - 2 * std::log(2.0) + 2, 1e-14);  // psi(-1/2) = psi(1/2) + 2
  Tensor xl = x.clone().requires_grad_(true);
  xl.digamma().sum().backward();
  auto g = xl.grad().to_vector<double>();
  EXPECT_NEAR(g[0], pi * pi / 6, 1e-14);
  EXPECT_NEAR(g[1], pi * pi / 2, 1e-14);
  EXPECT_NEAR(g[2], pi * pi / 6 - 1, 1e-14);
  EXPECT_NEAR(g[3], pi * pi / 2 + 4, 1e-13);  // psi1(-1/2) = psi1(1/2) + 4
}

TEST(VectorizedMathSemantics, IntegerInputsPromote) {
  Tensor i = tensor(std::vector<int64_t>{1, 2, 3});
  EXPECT_EQ(i.lgamma().dtype(), kFloat);
  EXPECT_EQ(i.erfinv().dtype(), kFloat);
  EXPECT_EQ(i.asinh().dtype(), kFloat);
  EXPECT_EQ(i.logit().dtype(), kFloat);
  EXPECT_THROW(mish(i), Error);
}

TEST(VectorizedMathSemantics, MishModule) {
  nn::Mish m;
  Tensor x = tensor(std::vector<float>{-1, 0, 2});
  auto y = m->forward(x).to_vector<float>();
  EXPECT_NEAR(y[0], -0.303401f, 1e-6);
  EXPECT_NEAR(y[2], 1.943959f, 1e-6);
  nn::Mish mi(true);
  Tensor x2 = x.clone();
  mi->forward(x2);
  EXPECT_NEAR(x2.to_vector<float>()[0], -0.303401f, 1e-6);
}

}  // namespace

// fmod and remainder on floats run Sleef's vectorized fmod, which gives NaN
// where a / b passes the range (3e38 fmod 1e-38); those lanes take libm's.
// Checked bit for bit against std::fmod over random bit patterns (huge and
// tiny quotients, subnormals, inf, NaN, signed zeros), contiguous and strided.
TEST(VectorizedMathBinary, FmodAndRemainderAreExact) {
  set_num_threads(1);
  auto run = [](auto tag) {
    using T = decltype(tag);
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    std::mt19937_64 rng(7);
    std::vector<T> a, b;
    auto bits = [&] {
      U u = static_cast<U>(rng());
      T f;
      std::memcpy(&f, &u, sizeof(T));
      return f;
    };
    const T specials[] = {T(0), T(-0.0), T(INFINITY), T(-INFINITY), T(NAN), T(1), T(-1), T(3e38), T(-3e38),
                          T(1e-38), T(5.5), T(-7.25), std::numeric_limits<T>::denorm_min()};
    for (T x : specials)
      for (T y : specials) a.push_back(x), b.push_back(y);
    for (int i = 0; i < 20000; ++i) {
      a.push_back(bits());
      b.push_back(i % 2 ? bits() : T(std::ldexp(double(rng() % 1000 + 1) / 1000.0, int(rng() % 60) - 30)));
    }
    const int64_t n = int64_t(a.size());
    const ScalarType dt = sizeof(T) == 4 ? kFloat : kDouble;
    Tensor ta = tensor(a, TensorOptions().dtype(dt)), tb = tensor(b, TensorOptions().dtype(dt));
    Tensor wa = zeros({n, 2}, dt), wb = zeros({n, 2}, dt);
    wa.select(1, 0).copy_(ta);
    wb.select(1, 1).copy_(tb);
    for (int strided = 0; strided < 2; ++strided) {
      const Tensor x = strided ? wa.select(1, 0) : ta, y = strided ? wb.select(1, 1) : tb;
      const std::vector<T> f = x.fmod(y).contiguous().template to_vector<T>();
      const std::vector<T> r = x.remainder(y).contiguous().template to_vector<T>();
      int bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T want_f = std::fmod(a[size_t(i)], b[size_t(i)]);
        T want_r = want_f;
        if (want_r != T(0) && ((want_r < T(0)) != (b[size_t(i)] < T(0)))) want_r += b[size_t(i)];
        const bool ok_f = (std::isnan(want_f) && std::isnan(f[size_t(i)])) || std::memcmp(&want_f, &f[size_t(i)], sizeof(T)) == 0;
        const bool ok_r = (std::isnan(want_r) && std::isnan(r[size_t(i)])) || std::memcmp(&want_r, &r[size_t(i)], sizeof(T)) == 0;
        if ((!ok_f || !ok_r) && bad++ < 5)
          ADD_FAILURE() << dt << (strided ? " strided" : "") << ": " << double(a[size_t(i)]) << " fmod "
                        << double(b[size_t(i)]) << " got " << double(f[size_t(i)]) << " / " << double(r[size_t(i)])
                        << " want " << double(want_f) << " / " << double(want_r);
      }
    }
  };
  run(float{});
  run(double{});
  // 16-bit: computed in float, exact, so the rounding back is exact too
  Tensor h = tensor<float>({65504.0f, -3.5f, 6e-8f, 1000.0f}).to(kHalf), d = tensor<float>({6e-8f, 2.0f, -3.0f, -7.0f}).to(kHalf);
  const std::vector<float> hf = h.fmod(d).to(kFloat).to_vector<float>(), hv = h.to(kFloat).to_vector<float>(),
                           dv = d.to(kFloat).to_vector<float>();
  for (size_t i = 0; i < hf.size(); ++i) EXPECT_EQ(hf[i], float(Half(std::fmod(hv[i], dv[i])))) << i;
}
