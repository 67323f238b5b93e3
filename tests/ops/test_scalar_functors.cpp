// The scalar functors of the pointwise rows (src/kernels/functors.h, Note
// [Scalar functors]): every pointwise row has one (or a reason not to), and
// each computes what the op computes: the CPU kernels (Sleef's vector math
// where the op has a vector form) against the functor on every element.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "core/dispatch.h"
#include "kernels/functors.h"

using namespace brisk;

namespace {

struct RowFunctor {
  const char* name;
  OpKind kind;
  bool defined;
};
constexpr RowFunctor kRows[] = {
#define BRISK_ROW_FUNCTOR(name, kind, slot, dtypes, amp, cpu_amp, flags) \
  {#name, OpKind::kind, math::ScalarFunctor<Op::name>::defined},
    BRISK_FORALL_OP_ROWS(BRISK_ROW_FUNCTOR)
#undef BRISK_ROW_FUNCTOR
};

// Pointwise rows without a scalar functor, and why.
const std::set<std::string> kNoFunctor = {
    "sgn",                 // sign for real dtypes (complex is not supported)
    "nan_to_num",          // composite of where/isnan (no kernel of its own)
    "threshold_backward",  // a backward helper, not fused
    "rsub",                // sub with the operands swapped
    "isclose",             // composite tolerances (rtol, atol, equal_nan)
    "masked_fill",         // where with a scalar
    "outer",               // mul of broadcast views
};

TEST(ScalarFunctors, EveryPointwiseRowHasOne) {
  for (const RowFunctor& r : kRows) {
    const bool pointwise = r.kind == OpKind::Unary || r.kind == OpKind::Binary || r.kind == OpKind::Ternary;
    if (!pointwise) {
      EXPECT_FALSE(r.defined) << r.name << " is not pointwise but has a scalar functor";
      continue;
    }
    if (kNoFunctor.count(r.name))
      EXPECT_FALSE(r.defined) << r.name << " has a functor now: drop it from kNoFunctor";
    else
      EXPECT_TRUE(r.defined) << "pointwise row " << r.name << " has no math::op functor (src/kernels/functors.h)";
  }
}

// Inputs covering each function's domain and its special values.
std::vector<double> inputs() {
  std::vector<double> v = {0.0, -0.0, 0.5, -0.5, 0.999, -0.999, 1.0, -1.0, 1.5, -1.5, 2.0, -2.5, 3.7, -7.25, 10.0, -30.0,
                           88.0, -88.0, 1e-3, -1e-3, 1e-30, 700.0, -700.0, INFINITY, -INFINITY, NAN};
  for (int i = 0; i < 64; ++i) v.push_back(-20.0 + 40.0 * i / 63.0 + 1e-3 * i);
  return v;
}

// |a - b| within `ulps` units in the last place of float64 (both nan, or
// both the same infinity, also agree).
bool close_ulps(double a, double b, double ulps) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  const double scale = std::max(std::fabs(a), std::fabs(b));
  const double ulp = scale > 0 ? std::ldexp(1.0, std::ilogb(scale) - 52) : std::numeric_limits<double>::denorm_min();
  return std::fabs(a - b) <= ulps * std::max(ulp, 1e-300);
}

// Each row of the unary list with a free function: the op on a float64
// tensor against its functor on every element. The vector forms are Sleef's
// (1 ulp) or brisk's own (documented bounds in docs/design/vectorized_math.md),
// the functors libm's: they agree to a few ulp, and on every special value.
struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  std::function<double(double)> functor;
  std::function<bool(double)> predicate;  // predicate rows
  double ulps;
};

#define BRISK_CASE_Full(name, group) BRISK_CASE_##group(name)
#define BRISK_CASE_NoInplace(name, group) BRISK_CASE_##group(name)
#define BRISK_CASE_FreeInplace(name, group) BRISK_CASE_##group(name)
#define BRISK_CASE_Custom(name, group)
#define BRISK_CASE_VALUE(name) \
  {#name, [](const Tensor& x) { return brisk::name(x); }, [](double x) { return math::op::name{}(x); }, nullptr, 8},
#define BRISK_CASE_Float(name) BRISK_CASE_VALUE(name)
#define BRISK_CASE_FloatOnly(name) BRISK_CASE_VALUE(name)
#define BRISK_CASE_Numeric(name) BRISK_CASE_VALUE(name)
#define BRISK_CASE_Integral(name)  // integers only: IntegralRowsMatchTheirFunctors
#define BRISK_CASE_Predicate(name) \
  {#name, [](const Tensor& x) { return brisk::name(x); }, nullptr, [](double x) { return math::op::name{}(x); }, 0},
#define BRISK_UNARY_CASE(ctx, name, group, dtypes, amp, forms) BRISK_CASE_##forms(name, group)
const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {BRISK_FORALL_UNARY_OPS(BRISK_UNARY_CASE, _)};
  return cases;
}

TEST(ScalarFunctors, UnaryRowsMatchTheirFunctors) {
  set_num_threads(1);
  const std::vector<double> v = inputs();
  const Tensor x = tensor(v, kFloat64);
  int checked = 0;
  for (const UnaryCase& c : unary_cases()) {
    const Tensor y = c.fn(x).contiguous();
    ASSERT_EQ(y.numel(), x.numel()) << c.name;
    for (size_t i = 0; i < v.size(); ++i) {
      if (c.predicate) {
        EXPECT_EQ(y[i].item<bool>(), c.predicate(v[i])) << c.name << "(" << v[i] << ")";
      } else {
        const double got = y[i].item<double>(), want = c.functor(v[i]);
        EXPECT_TRUE(close_ulps(got, want, c.ulps)) << c.name << "(" << v[i] << "): kernel " << got << ", functor " << want;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

TEST(ScalarFunctors, IntegerRowsMatchTheirFunctors) {
  set_num_threads(1);
  const std::vector<int64_t> v = {0, 1, -1, 7, -8, 100, -128, 127, 1 << 20, -(1 << 20)};
  const Tensor x = tensor(v, kInt32);
  auto check = [&](const char* name, const Tensor& y, auto f) {
    ASSERT_EQ(y.dtype(), kInt32) << name;
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(y[i].item<int64_t>(), f(int32_t(v[i]))) << name << "(" << v[i] << ")";
  };
  check("neg", brisk::neg(x), math::op::neg{});
  check("abs", brisk::abs(x), math::op::abs{});
  check("sign", brisk::sign(x), math::op::sign{});
  check("square", brisk::square(x), math::op::square{});
  check("relu", brisk::relu(x), math::op::relu{});
  check("floor", brisk::floor(x), math::op::floor{});
  check("round", brisk::round(x), math::op::round{});
  check("bitwise_not", brisk::bitwise_not(x), math::op::bitwise_not{});
}

TEST(ScalarFunctors, BinaryAndTernaryRowsMatchTheirFunctors) {
  set_num_threads(1);
  const std::vector<double> av = {0.0, -0.0, 1.5, -2.5, 3.0, 7.0, -7.0, 0.5, INFINITY, NAN, 2.0, -1.0};
  const std::vector<double> bv = {1.0, 2.0, -0.5, 0.0, 3.0, -2.0, 2.0, 0.25, 1.0, 1.0, -INFINITY, 0.5};
  const Tensor a = tensor(av, kFloat64), b = tensor(bv, kFloat64);
  auto check = [&](const char* name, const Tensor& y, auto f) {
    for (size_t i = 0; i < av.size(); ++i) {
      const double got = y[i].to(kFloat64).item<double>(), want = double(f(av[i], bv[i]));
      EXPECT_TRUE(close_ulps(got, want, 2)) << name << "(" << av[i] << ", " << bv[i] << "): kernel " << got
                                            << ", functor " << want;
    }
  };
  check("add", brisk::add(a, b), math::op::add{});
  check("sub", brisk::sub(a, b), math::op::sub{});
  check("mul", brisk::mul(a, b), math::op::mul{});
  check("div", brisk::div(a, b), math::op::div{});
  check("remainder", brisk::remainder(a, b), math::op::remainder{});
  check("fmod", brisk::fmod(a, b), math::op::fmod{});
  check("pow", brisk::pow(a, b), math::op::pow{});
  check("minimum", brisk::minimum(a, b), math::op::minimum{});
  check("maximum", brisk::maximum(a, b), math::op::maximum{});
  check("atan2", brisk::atan2(a, b), math::op::atan2{});
  check("hypot", brisk::hypot(a, b), math::op::hypot{});
  check("logaddexp", brisk::logaddexp(a, b), math::op::logaddexp{});
  check("logaddexp2", brisk::logaddexp2(a, b), math::op::logaddexp2{});
  check("copysign", brisk::copysign(a, b), math::op::copysign{});
  check("nextafter", brisk::nextafter(a, b), math::op::nextafter{});
  {  // one step is within two ulps: nextafter bit for bit
    const Tensor y = brisk::nextafter(a, b);
    for (size_t i = 0; i < av.size(); ++i) {
      const double want = math::op::nextafter{}(av[i], bv[i]), got = y[int64_t(i)].item<double>();
      EXPECT_TRUE((got != got && want != want) || got == want) << "nextafter(" << av[i] << ", " << bv[i] << ")";
    }
  }
  check("xlogy", brisk::xlogy(a, b), math::op::xlogy{});
  check("heaviside", brisk::heaviside(a, b), math::op::heaviside{});
  check("eq", brisk::eq(a, b), math::op::eq{});
  check("ne", brisk::ne(a, b), math::op::ne{});
  check("lt", brisk::lt(a, b), math::op::lt{});
  check("le", brisk::le(a, b), math::op::le{});
  check("gt", brisk::gt(a, b), math::op::gt{});
  check("ge", brisk::ge(a, b), math::op::ge{});
  check("logical_and", brisk::logical_and(a, b), math::op::logical_and{});
  check("logical_or", brisk::logical_or(a, b), math::op::logical_or{});
  check("logical_xor", brisk::logical_xor(a, b), math::op::logical_xor{});
  // ternary: the third operand 0.25 (a weight, a value, a bound)
  const Tensor w = full({int64_t(av.size())}, 0.25, kFloat64);
  auto check3 = [&](const char* name, const Tensor& y, auto f) {
    for (size_t i = 0; i < av.size(); ++i) {
      const double got = y[i].item<double>(), want = f(av[i], bv[i]);
      EXPECT_TRUE(close_ulps(got, want, 2)) << name << "(" << av[i] << ", " << bv[i] << "): kernel " << got
                                            << ", functor " << want;
    }
  };
  check3("lerp", brisk::lerp(a, b, w), [](double x, double y) { return math::op::lerp{}(x, y, 0.25); });
  check3("addcmul", brisk::addcmul(a, b, w, 3.0), [](double x, double y) { return math::op::addcmul{3.0}(x, y, 0.25); });
  check3("addcdiv", brisk::addcdiv(a, b, w, 3.0), [](double x, double y) { return math::op::addcdiv{3.0}(x, y, 0.25); });
  check3("clamp", brisk::clamp(a, b.minimum(w), b.maximum(w)),
         [](double x, double y) { return math::op::clamp{}(x, std::fmin(y, 0.25), std::fmax(y, 0.25)); });
  check3("where", brisk::where(a > b, a, w), [](double x, double y) { return math::op::where{}(x > y, x, 0.25); });
  // integer bitwise rows
  const std::vector<int64_t> iv = {0, 5, -6, 1 << 10, 255, -1}, jv = {3, 1, 2, 70, -1, 63};
  const Tensor i = tensor(iv, kInt64), j = tensor(jv, kInt64);
  auto checki = [&](const char* name, const Tensor& y, auto f) {
    for (size_t k = 0; k < iv.size(); ++k) EXPECT_EQ(y[k].item<int64_t>(), f(iv[k], jv[k])) << name << "(" << iv[k] << ", " << jv[k] << ")";
  };
  checki("bitwise_and", brisk::bitwise_and(i, j), math::op::bitwise_and{});
  checki("bitwise_or", brisk::bitwise_or(i, j), math::op::bitwise_or{});
  checki("bitwise_xor", brisk::bitwise_xor(i, j), math::op::bitwise_xor{});
  checki("bitwise_left_shift", brisk::bitwise_left_shift(i, j), math::op::bitwise_left_shift{});
  checki("bitwise_right_shift", brisk::bitwise_right_shift(i, j), math::op::bitwise_right_shift{});
}

// The activation gradients (slot activation_backward): the vector kernels
// against the scalar definition (math::activation_grad) on every pair of
// special values, in float32 and float64, and float16/bfloat16 as the
// float32 kernel rounded once.
TEST(ScalarFunctors, ActivationGradientsMatchTheirFunctors) {
  set_num_threads(1);
  const std::vector<double> sp = {0.0,  -0.0, 1.0,  -1.0, INFINITY, -INFINITY, NAN,  0.5,   2.0,    -2.0,  1e-30,
                                  0.05, 0.95, 0.12, 0.88, 30.0,     -30.0,     95.0, -95.0, 1000.0, 3e38,  1e-5};
  std::vector<double> gv, xv;
  for (double a : sp)
    for (double b : sp) gv.push_back(a), xv.push_back(b);
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
    std::function<double(double, double, bool)> f;  // (g, x, float32?)
  };
  auto fn = [](auto functor) {
    return [functor](double g, double x, bool f32) {
      return f32 ? double(functor(float(g), float(x))) : functor(g, x);
    };
  };
  const std::vector<Case> cases = {
      {"sigmoid_backward", [](auto& g, auto& x) { return sigmoid_backward(g, x); }, fn(math::op::sigmoid_backward{})},
      {"tanh_backward", [](auto& g, auto& x) { return tanh_backward(g, x); }, fn(math::op::tanh_backward{})},
      {"silu_backward", [](auto& g, auto& x) { return silu_backward(g, x); }, fn(math::op::silu_backward{})},
      {"mish_backward", [](auto& g, auto& x) { return mish_backward(g, x); }, fn(math::op::mish_backward{})},
      {"gelu_backward", [](auto& g, auto& x) { return gelu_backward(g, x); }, fn(math::op::gelu_backward{false})},
      {"gelu_backward.tanh", [](auto& g, auto& x) { return gelu_backward(g, x, "tanh"); },
       fn(math::op::gelu_backward{true})},
      {"logit_backward", [](auto& g, auto& x) { return logit_backward(g, x); }, fn(math::op::logit_backward{-1})},
      {"logit_backward.eps", [](auto& g, auto& x) { return logit_backward(g, x, 0.12); },
       fn(math::op::logit_backward{0.12})},
      {"softplus_backward", [](auto& g, auto& x) { return softplus_backward(g, x, 1.5, 4.0); },
       fn(math::op::softplus_backward{1.5, 4.0})},
      {"hardswish_backward", [](auto& g, auto& x) { return hardswish_backward(g, x); },
       fn(math::op::hardswish_backward{})},
      {"hardsigmoid_backward", [](auto& g, auto& x) { return hardsigmoid_backward(g, x); },
       fn(math::op::hardsigmoid_backward{})},
      {"elu_backward", [](auto& g, auto& x) { return elu_backward(g, 1.3, 1.2, 0.8, false, x); },
       fn(math::op::elu_backward{1.3, 1.2, 0.8, false})},
      {"elu_backward.result", [](auto& g, auto& y) { return elu_backward(g, 1.3, 1.2, 0.8, true, y); },
       fn(math::op::elu_backward{1.3, 1.2, 0.8, true})},
      {"leaky_relu_backward", [](auto& g, auto& x) { return leaky_relu_backward(g, x, 0.2); },
       fn(math::op::leaky_relu_backward{0.2})},
      {"softshrink_backward", [](auto& g, auto& x) { return softshrink_backward(g, x, 0.5); },
       fn(math::op::softshrink_backward{0.5})},
      {"hardshrink_backward", [](auto& g, auto& x) { return hardshrink_backward(g, x, 0.5); },
       fn(math::op::hardshrink_backward{0.5})},
      {"log_sigmoid_backward", [](auto& g, auto& x) { return log_sigmoid_backward(g, x); },
       fn(math::op::log_sigmoid_backward{})},
      {"hardtanh_backward", [](auto& g, auto& x) { return hardtanh_backward(g, x, -1.5, 2.0); },
       fn(math::op::hardtanh_backward{-1.5, 2.0})},
  };
  for (const Case& c : cases)
    for (ScalarType dt : {kFloat, kDouble}) {
      const Tensor g = tensor(gv, kDouble).to(dt), x = tensor(xv, kDouble).to(dt);
      const Tensor y = c.op(g, x).to(kDouble);
      ASSERT_EQ(y.dtype(), kDouble);
      for (size_t i = 0; i < gv.size(); ++i) {
        const double got = y[int64_t(i)].item<double>();
        // float32: within 16 float ulps (2^29 float64 ulps each) of the
        // definition in float64 on the same operands or of the functor in
        // float32 (mish's t + x s (1 - t^2) cancels to a fifth of its terms
        // near x = -1), or as far from both as subnormal intermediates allow
        // (sigmoid(-95) is one, then scaled by g); where float32 overflows
        // (1 - y^2 at y = 3e38) the same nan or infinity. float64: 64 ulps.
        const double gi = g[int64_t(i)].item<double>(), xi = x[int64_t(i)].item<double>();
        const double wd = c.f(gi, xi, false), wf = c.f(gi, xi, true);
        bool ok;
        if (dt == kDouble)
          ok = close_ulps(got, wd, 64.0);
        else if (!std::isfinite(wf))
          ok = close_ulps(got, wf, 0.0);
        else
          ok = close_ulps(got, wd, 16.0 * (1 << 29)) || close_ulps(got, wf, 16.0 * (1 << 29)) ||
               std::abs(got - wf) <= 1e-37 * std::max(1.0, std::abs(gi));
        EXPECT_TRUE(ok) << c.name << " " << dt << " (g " << gv[i] << ", x " << xv[i] << "): kernel " << got
                        << ", functor " << wd << " (float64), " << wf << " (float32)";
      }
      if (dt == kFloat)
        for (ScalarType h : {kHalf, kBFloat16}) {  // 16-bit: the float32 kernel on the rounded operands, rounded once
          const Tensor gh = g.to(h), xh = x.to(h);
          const Tensor got = c.op(gh, xh);
          Tensor want = c.op(gh.to(kFloat), xh.to(kFloat)).to(h);
          if (std::string(c.name).rfind("logit_backward", 0) == 0) {
            // PyTorch's 16-bit CPU kernel: g / (x * (1 - x)) with 1 - x and the
            // product rounded to the dtype (16-bit ops round each step)
            const Tensor steps = (gh.to(kFloat) / (xh * (1 - xh)).to(kFloat)).to(h);
            want = where(want.isnan().logical_or(want.isinf()).logical_or(want == 0), want, steps);
          }
          if (std::string(c.name) == "logit_backward.eps") {
            // its bounds are eps and 1 - eps in the 16-bit dtype (torch's scalar_t eps, scalar_t(1) - eps)
            const double lo = full({}, 0.12, TensorOptions(h)).item<double>();
            const double hi = (full({}, 1.0, TensorOptions(h)) - full({}, lo, TensorOptions(h))).item<double>();
            const Tensor in = (xh >= lo).logical_and(xh <= hi);
            const Tensor steps = (gh.to(kFloat) / (xh * (1 - xh)).to(kFloat)).to(h);
            want = where(in.logical_or(xh.isnan()), where(xh.isnan(), want, steps), zeros_like(want));
          }
          if (std::string(c.name) == "log_sigmoid_backward") {
            // PyTorch's CPU kernel reads exp(-|x|) from a buffer of the input's dtype (math::round_buffer)
            const Tensor xf = xh.to(kFloat), z = xf.abs().neg().exp().to(h).to(kFloat), q = z / (z + 1);
            want = (where(xf < 0, 1 - q, q) * gh.to(kFloat)).to(h);
          }
          auto no_nan = [](const Tensor& t) { return where(t.isnan(), zeros_like(t), t); };
          EXPECT_TRUE(got.isnan().equal(want.isnan()) && no_nan(got).equal(no_nan(want))) << c.name << " " << h;
        }
    }
}

// The activations of slot `activation`: the vector kernels against the
// scalar definition (math::activation) on special values, float32 and
// float64; float16/bfloat16 as the float32 kernel rounded once (the shrinks'
// lambda 0.5 is exact in every dtype).
TEST(ScalarFunctors, ActivationsMatchTheirFunctors) {
  set_num_threads(1);
  std::vector<double> v = {0.0,  -0.0, 1.0,   -1.0, INFINITY, -INFINITY, NAN,   0.5,  -0.5,  2.0,  -2.0, 3.0,
                           -3.0, 2.99, -2.99, 6.0,  1e-30,    -1e-30,    30.0,  -30.0, 95.0, -95.0, 3e38, -3e38,
                           0.49, 0.51, -0.51, 1e-5, -1e-5,    88.0,      -88.0, 100.0, -104.0};
  for (int i = 0; i < 200; ++i) v.push_back(-10.0 + 0.1 * i + 0.0123);
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<double(double, bool)> f;  // (x, float32?)
  };
  auto fn = [](auto functor) {
    return [functor](double x, bool f32) { return f32 ? double(functor(float(x))) : functor(x); };
  };
  const std::vector<Case> cases = {
      {"hardswish", [](auto& x) { return hardswish(x); }, fn(math::op::hardswish{})},
      {"hardsigmoid", [](auto& x) { return hardsigmoid(x); }, fn(math::op::hardsigmoid{})},
      {"elu", [](auto& x) { return elu(x, 1.3, 1.2, 0.8); }, fn(math::op::elu{1.3, 1.2, 0.8})},
      {"selu", [](auto& x) { return selu(x); }, fn(math::op::selu{})},
      {"celu", [](auto& x) { return celu(x, 0.7); }, fn(math::op::celu{0.7})},
      {"leaky_relu", [](auto& x) { return leaky_relu(x, 0.2); }, fn(math::op::leaky_relu{0.2})},
      {"softshrink", [](auto& x) { return softshrink(x, 0.5); }, fn(math::op::softshrink{0.5})},
      {"hardshrink", [](auto& x) { return hardshrink(x, 0.5); }, fn(math::op::hardshrink{0.5})},
      {"log_sigmoid", [](auto& x) { return log_sigmoid(x); }, fn(math::op::log_sigmoid{})},
  };
  for (const Case& c : cases)
    for (ScalarType dt : {kFloat, kDouble}) {
      const Tensor x = tensor(v, kDouble).to(dt);
      const Tensor y = c.op(x).to(kDouble);
      for (size_t i = 0; i < v.size(); ++i) {
        const double got = y[int64_t(i)].item<double>(), xi = x[int64_t(i)].item<double>();
        const double want = c.f(xi, dt == kFloat);
        // Sleef's expm1/exp/log1p against libm's: a few ulp (float32: or as
        // far as subnormal results allow, log_sigmoid(100) = -exp(-100))
        const bool ok = dt == kDouble ? close_ulps(got, want, 8.0)
                                      : close_ulps(got, want, 4.0 * (1 << 29)) || std::abs(got - want) <= 1e-44;
        EXPECT_TRUE(ok) << c.name << " " << dt << "(" << xi << "): kernel " << got << ", functor " << want;
      }
      if (dt == kFloat)
        for (ScalarType h : {kHalf, kBFloat16}) {
          const Tensor xh = x.to(h);
          const Tensor got = c.op(xh), want = c.op(xh.to(kFloat)).to(h);
          auto no_nan = [](const Tensor& t) { return where(t.isnan(), zeros_like(t), t); };
          EXPECT_TRUE(got.isnan().equal(want.isnan()) && no_nan(got).equal(no_nan(want))) << c.name << " " << h;
        }
    }
}

// The parametrised rows (logit's eps, gelu's approximation, softplus' beta
// and threshold) carry their arguments as members.
TEST(ScalarFunctors, ParametrisedRows) {
  set_num_threads(1);
  const std::vector<double> v = {-3.0, -0.5, 0.0, 0.1, 0.5, 0.9, 1.0, 2.0, 30.0};
  const Tensor x = tensor(v, kFloat64);
  const Tensor lg = logit(x, 0.2), ge = gelu(x), gt = gelu(x, "tanh"), sp = softplus(x, 2.0, 5.0);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_TRUE(close_ulps(lg[i].item<double>(), math::op::logit{0.2}(v[i]), 8)) << "logit " << v[i];
    EXPECT_TRUE(close_ulps(ge[i].item<double>(), math::op::gelu{false}(v[i]), 8)) << "gelu " << v[i];
    EXPECT_TRUE(close_ulps(gt[i].item<double>(), math::op::gelu{true}(v[i]), 8)) << "gelu tanh " << v[i];
    EXPECT_TRUE(close_ulps(sp[i].item<double>(), math::op::softplus{2.0, 5.0}(v[i]), 8)) << "softplus " << v[i];
  }
}

// UnaryMode and the op table's unary rows come from the list, with the
// forms each row declares.
TEST(ScalarFunctors, UnaryModeNamesFollowTheList) {
  EXPECT_STREQ(unary_mode_name(UnaryMode::exp), "exp");
  EXPECT_STREQ(unary_mode_name(UnaryMode::logit), "logit");
  EXPECT_STREQ(unary_mode_name(UnaryMode::trigamma), "trigamma");
  EXPECT_EQ(find_op("exp_out").out, true);
  EXPECT_EQ(find_op("isnan_").info, nullptr);  // no in-place form
  EXPECT_EQ(find_op("mish_").inplace, true);
}

}  // namespace
