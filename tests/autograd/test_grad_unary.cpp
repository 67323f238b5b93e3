// Gradients of the unary ops, activations, softmax/log_softmax and
// cumsum/cumprod: gradcheck against finite differences (contiguous and
// non-contiguous float64 leaves), double backward, in-place and out= forms.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;
using brisk::testing::leaf_noncontig;

namespace {

using UnaryFn = std::function<Tensor(const Tensor&)>;
using InplaceFn = std::function<void(Tensor&)>;

struct UnaryCase {
  std::string name;
  UnaryFn fn;
  InplaceFn inplace;  // the in-place form, or empty
  double lo, hi;      // the input domain [lo, hi) where the op is smooth
  bool mixed_sign;    // evaluate at x * (+1, -1, +1, ...): both signs, away from 0
  const char* node;   // expected grad_fn name (PyTorch's)
  bool grad_grad;     // also check double backward
};

// +1, -1, +1, ... in the shape of t (a constant: no gradient).
Tensor sign_pattern(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 2 ? -1.0 : 1.0;
  return tensor(v).view(t.sizes());
}

// The function gradcheck sees: op(x) or op(x * pattern).
std::function<Tensor(const TensorList&)> wrap(const UnaryCase& c) {
  return [c](const TensorList& t) {
    Tensor x = c.mixed_sign ? t[0] * sign_pattern(t[0]) : t[0];
    return c.fn(x);
  };
}
std::function<Tensor(const TensorList&)> wrap_inplace(const UnaryCase& c) {
  return [c](const TensorList& t) {
    Tensor y = c.mixed_sign ? t[0] * sign_pattern(t[0]) : t[0] * 1;
    c.inplace(y);
    return y;
  };
}

#define U(op) [](const Tensor& x) { return x.op(); }, [](Tensor& x) { x.op##_(); }

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", U(neg), -1, 1, false, "NegBackward0", true},
      {"abs", U(abs), 0.2, 1, true, "AbsBackward0", true},
      {"sign", U(sign), 0.2, 1, true, "SignBackward0", false},
      {"exp", U(exp), -1, 1, false, "ExpBackward0", true},
      {"exp2", U(exp2), -1, 1, false, "Exp2Backward0", true},
      {"expm1", U(expm1), -1, 1, false, "Expm1Backward0", true},
      {"log", U(log), 0.1, 2, false, "LogBackward0", true},
      {"log2", U(log2), 0.1, 2, false, "Log2Backward0", true},
      {"log10", U(log10), 0.1, 2, false, "Log10Backward0", true},
      {"log1p", U(log1p), -0.5, 2, false, "Log1PBackward0", true},
      {"sqrt", U(sqrt), 0.1, 2, false, "SqrtBackward0", true},
      {"rsqrt", U(rsqrt), 0.2, 2, false, "RsqrtBackward0", true},
      {"square", U(square), -1, 1, false, "PowBackward0", true},
      {"reciprocal", U(reciprocal), 0.3, 1.5, true, "ReciprocalBackward0", true},
      {"sin", U(sin), -2, 2, false, "SinBackward0", true},
      {"cos", U(cos), -2, 2, false, "CosBackward0", true},
      {"tan", U(tan), -1, 1, false, "TanBackward0", true},
      {"asin", U(asin), -0.9, 0.9, false, "AsinBackward0", true},
      {"acos", U(acos), -0.9, 0.9, false, "AcosBackward0", true},
      {"atan", U(atan), -2, 2, false, "AtanBackward0", true},
      {"sinh", U(sinh), -1.5, 1.5, false, "SinhBackward0", true},
      {"cosh", U(cosh), -1.5, 1.5, false, "CoshBackward0", true},
      {"tanh", U(tanh), -2, 2, false, "TanhBackward0", true},
      {"sigmoid", U(sigmoid), -3, 3, false, "SigmoidBackward0", true},
      {"erf", U(erf), -1.5, 1.5, false, "ErfBackward0", true},
      {"erfc", U(erfc), -1.5, 1.5, false, "ErfcBackward0", true},
      {"relu", U(relu), 0.1, 1, true, "ReluBackward0", true},
      {"silu", U(silu), -3, 3, false, "SiluBackward0", true},
      {"floor", U(floor), 0.1, 0.9, true, "FloorBackward0", false},
      {"ceil", U(ceil), 0.1, 0.9, true, "CeilBackward0", false},
      {"round", U(round), 0.1, 0.4, true, "RoundBackward0", false},
      {"trunc", U(trunc), 0.1, 0.9, true, "TruncBackward0", false},
      {"frac", U(frac), 0.1, 0.9, true, "FracBackward0", false},
      {"gelu", [](const Tensor& x) { return x.gelu(); }, [](Tensor& x) { x.gelu_(); }, -3, 3, false,
       "GeluBackward0", true},
      {"gelu_tanh", [](const Tensor& x) { return x.gelu("tanh"); }, [](Tensor& x) { x.gelu_("tanh"); }, -3, 3,
       false, "GeluBackward0", true},
      {"softplus", [](const Tensor& x) { return x.softplus(); }, nullptr, -3, 3, false, "SoftplusBackward0", true},
      {"asinh", U(asinh), -2, 2, false, "AsinhBackward0", true},
      {"acosh", U(acosh), 1.2, 3, false, "AcoshBackward0", true},
      {"atanh", U(atanh), -0.8, 0.8, false, "AtanhBackward0", true},
      {"erfinv", U(erfinv), -0.8, 0.8, false, "ErfinvBackward0", true},
      {"lgamma", U(lgamma), 0.5, 3, false, "LgammaBackward0", true},
      {"digamma", U(digamma), 0.5, 3, false, "DigammaBackward0", true},  // d2: polygamma(2, x)
      {"mish", [](const Tensor& x) { return mish(x); }, [](Tensor& x) { mish_(x); }, -3, 3, false, "MishBackward0",
       true},
      {"logit", U(logit), 0.1, 0.9, false, "LogitBackward0", true},
      {"logit_eps", [](const Tensor& x) { return x.logit(0.2); }, [](Tensor& x) { x.logit_(0.2); }, 0.25, 0.75, false,
       "LogitBackward0", true},
      // beta * x above the threshold (identity) on the positive half, below it on the negative one
      {"softplus_beta_threshold", [](const Tensor& x) { return softplus(x, 2, 1); }, nullptr, 0.6, 1.5, true,
       "SoftplusBackward0", true},
  };
}
#undef U

class GradUnary : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(GradUnary, Contiguous) {
  const UnaryCase& c = GetParam();
  Tensor x = leaf({3, 4}, c.lo, c.hi);
  Tensor y = wrap(c)({x});
  ASSERT_TRUE(y.requires_grad());
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), c.node);
  EXPECT_TRUE(gradcheck_ok(wrap(c), {x}));
}

TEST_P(GradUnary, NonContiguous) {
  const UnaryCase& c = GetParam();
  Tensor x = leaf_noncontig({3, 4}, c.lo, c.hi);
  EXPECT_TRUE(gradcheck_ok(wrap(c), {x}));
  Tensor x1 = leaf_noncontig({5}, c.lo, c.hi);  // a strided 1-D slice
  EXPECT_TRUE(gradcheck_ok(wrap(c), {x1}));
}

TEST_P(GradUnary, ZeroDim) {
  const UnaryCase& c = GetParam();
  EXPECT_TRUE(gradcheck_ok(wrap(c), {leaf({}, c.lo, c.hi)}));
}

// Second derivatives: every case but the piecewise-constant ones.
class GradUnarySecondOrder : public ::testing::TestWithParam<UnaryCase> {};
TEST_P(GradUnarySecondOrder, DoubleBackward) {
  const UnaryCase& c = GetParam();
  EXPECT_TRUE(gradcheck_ok(wrap(c), {leaf({2, 3}, c.lo, c.hi)}, /*grad_grad=*/true));
  EXPECT_TRUE(gradcheck_ok(wrap(c), {leaf_noncontig({2, 3}, c.lo, c.hi)}, /*grad_grad=*/true));
}

// In-place forms: the cases that have one.
class GradUnaryInPlace : public ::testing::TestWithParam<UnaryCase> {};
TEST_P(GradUnaryInPlace, InPlace) {
  const UnaryCase& c = GetParam();
  Tensor x = leaf({3, 4}, c.lo, c.hi);
  Tensor y = wrap_inplace(c)({x});
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), c.node);
  EXPECT_TRUE(gradcheck_ok(wrap_inplace(c), {x}));
  EXPECT_TRUE(gradcheck_ok(wrap_inplace(c), {leaf_noncontig({3, 4}, c.lo, c.hi)}));
  // the in-place gradient equals the out-of-place one
  Tensor go = randn({3, 4}, kDouble);
  Tensor g_out = autograd::grad({wrap(c)({x})}, {x}, {go})[0];
  Tensor g_in = autograd::grad({wrap_inplace(c)({x})}, {x}, {go})[0];
  EXPECT_TRUE(brisk::testing::close(g_in, g_out, 1e-12, 1e-12));
  // on a leaf that requires grad it is refused
  Tensor l = leaf({3}, c.lo, c.hi);
  expect_error([&] { c.inplace(l); }, {"leaf"});
}

TEST_P(GradUnaryInPlace, InPlaceOnView) {
  const UnaryCase& c = GetParam();
  // an in-place op on a row of a non-leaf rewrites the base's history
  auto f = [c](const TensorList& t) {
    Tensor y = c.mixed_sign ? t[0] * sign_pattern(t[0]) : t[0] * 1;
    Tensor row = y.select(0, 1);
    c.inplace(row);
    return y;
  };
  EXPECT_TRUE(gradcheck_ok(f, {leaf({3, 4}, c.lo, c.hi)}));
}

TEST_P(GradUnary, NoGrad) {
  const UnaryCase& c = GetParam();
  Tensor x = leaf({3}, c.lo, c.hi);
  {
    NoGradGuard ng;
    Tensor y = c.fn(x);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_FALSE(y.grad_fn());
  }
  Tensor plain = x.detach();
  EXPECT_FALSE(c.fn(plain).requires_grad());
}

std::vector<UnaryCase> unary_cases_where(bool (*keep)(const UnaryCase&)) {
  std::vector<UnaryCase> v;
  for (const UnaryCase& c : unary_cases())
    if (keep(c)) v.push_back(c);
  return v;
}
const auto case_name = [](const ::testing::TestParamInfo<UnaryCase>& i) { return i.param.name; };
INSTANTIATE_TEST_SUITE_P(Ops, GradUnary, ::testing::ValuesIn(unary_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Ops, GradUnarySecondOrder,
                         ::testing::ValuesIn(unary_cases_where([](const UnaryCase& c) { return c.grad_grad; })),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Ops, GradUnaryInPlace,
                         ::testing::ValuesIn(unary_cases_where([](const UnaryCase& c) { return c.inplace != nullptr; })),
                         case_name);

// ---- out= --------------------------------------------------------------------
TEST(GradUnaryOut, OutRefusesInputsThatRequireGrad) {
  Tensor x = leaf({3, 4}, 0.1, 2);
  Tensor out = empty({3, 4}, kDouble);
  expect_error([&] { exp_out(out, x); }, {"out="});
  expect_error([&] { log_out(out, x); }, {"out="});
  expect_error([&] { tanh_out(out, x); }, {"out="});
  expect_error([&] { sigmoid_out(out, x); }, {"out="});
  expect_error([&] { relu_out(out, x); }, {"out="});
  expect_error([&] { floor_out(out, x); }, {"out="});
  // allowed without grad mode, and for inputs that don't require grad
  {
    NoGradGuard ng;
    exp_out(out, x);
  }
  EXPECT_TRUE(brisk::testing::close(out, x.detach().exp(), 1e-15, 0));
  exp_out(out, x.detach());
  EXPECT_FALSE(out.requires_grad());
  // predicates have no gradient: no error, nothing recorded
  Tensor b = empty({3, 4}, kBool);
  isnan_out(b, x);
  EXPECT_FALSE(b.requires_grad());
  EXPECT_FALSE(x.isnan().requires_grad());
  EXPECT_FALSE(x.isfinite().requires_grad());
}

// ---- saved tensors -------------------------------------------------------------
TEST(GradUnarySaved, ModifyingASavedInputIsAnError) {
  Tensor x = leaf({4}, 0.1, 1);
  Tensor y = x * 1;
  Tensor z = y.sin();  // saves y
  y.add_(1);
  expect_error([&] { z.backward(ones_like(z)); }, {"modified by an inplace operation"});
}

TEST(GradUnarySaved, ModifyingASavedOutputIsAnError) {
  Tensor x = leaf({4}, 0.1, 1);
  Tensor z = x.exp();  // saves z
  z.mul_(2);
  expect_error([&] { z.backward(ones_like(z)); }, {"modified by an inplace operation"});
}

TEST(GradUnarySaved, InPlaceChainMatchesOutOfPlace) {
  // ops that save a copy of the old value can be chained in place; the last
  // one may save its output
  Tensor x = leaf({2, 3}, -1, 1);
  Tensor y = x * 1;
  y.sin_();
  y.atan_();
  y.square_();
  y.tanh_();
  Tensor go = randn({2, 3}, kDouble);
  Tensor g1 = autograd::grad({y}, {x}, {go})[0];
  Tensor g2 = autograd::grad({x.sin().atan().square().tanh()}, {x}, {go})[0];
  EXPECT_TRUE(brisk::testing::close(g1, g2, 1e-12, 1e-12));
  // an op that saves its output is invalidated by a later in-place op
  Tensor z = x * 1;
  z.exp_();
  z.sin_();
  expect_error([&] { z.backward(ones_like(z)); }, {"modified by an inplace operation"});
}

TEST(GradUnary, ExplicitValues) {
  // hand-checked derivatives at a few points
  Tensor x = tensor({-1.0, 0.5, 2.0}).requires_grad_();
  Tensor gx = autograd::grad({x.relu().sum() + x.abs().sum()}, {x})[0];
  EXPECT_EQ(gx.to_vector<double>(), (std::vector<double>{-1, 2, 2}));
  Tensor ge = autograd::grad({x.exp()}, {x}, {ones_like(x)})[0];
  EXPECT_TRUE(brisk::testing::close(ge, x.detach().exp(), 1e-15, 1e-15));
  Tensor gs = autograd::grad({x.sigmoid()}, {x}, {ones_like(x)})[0];
  Tensor s = x.detach().sigmoid();
  EXPECT_TRUE(brisk::testing::close(gs, s * (1 - s), 1e-15, 1e-15));
}

TEST(GradUnary, ReluBackwardIsThresholdBackward) {
  // zero where the result is <= 0, the gradient where it is > 0 or nan
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor g = tensor({1.f, 2.f, 3.f, 4.f, 5.f});
  Tensor r = tensor({-1.f, 0.f, 0.5f, nan, 2.f});
  EXPECT_EQ(threshold_backward(g, r, 0).to_vector<float>(), (std::vector<float>{0, 0, 3, 4, 5}));
  EXPECT_EQ(threshold_backward(g, r, 1).to_vector<float>(), (std::vector<float>{0, 0, 0, 4, 5}));
  // ReLU's gradient through it, nan inputs pass the gradient as in torch
  Tensor x = tensor({-1.f, 0.f, 0.5f, nan}).requires_grad_();
  x.relu().backward(tensor({1.f, 1.f, 1.f, 1.f}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 0, 1, 1}));
  expect_error([&] { threshold_backward(tensor({1, 2}), tensor({1, 2}), 0); }, {"[threshold_backward]"});
}

TEST(GradUnary, Float32InputGetsFloat32Grad) {
  Tensor x = randn({5}, kFloat).requires_grad_();
  Tensor y = x.tanh();
  y.backward(ones_like(y));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().dtype(), kFloat);
  Tensor t = x.detach().tanh();
  EXPECT_TRUE(brisk::testing::close(x.grad(), 1 - t * t, 1e-6, 1e-6));
}

// ---- softmax / log_softmax -------------------------------------------------------------
struct DimCase {
  std::string name;
  std::function<Tensor(const Tensor&, int64_t)> fn;
  const char* node;
  double lo, hi;
};

std::vector<DimCase> dim_cases() {
  return {
      {"softmax", [](const Tensor& x, int64_t d) { return x.softmax(d); }, "SoftmaxBackward0", -2, 2},
      {"log_softmax", [](const Tensor& x, int64_t d) { return x.log_softmax(d); }, "LogSoftmaxBackward0", -2, 2},
      {"cumsum", [](const Tensor& x, int64_t d) { return x.cumsum(d); }, "CumsumBackward0", -2, 2},
      {"cumprod", [](const Tensor& x, int64_t d) { return x.cumprod(d); }, "CumprodBackward0", 0.5, 1.5},
  };
}

class GradDim : public ::testing::TestWithParam<DimCase> {};

TEST_P(GradDim, AllDims) {
  const DimCase& c = GetParam();
  for (int64_t d : {0, 1, -1}) {
    SCOPED_TRACE("dim " + std::to_string(d));
    auto f = [c, d](const TensorList& t) { return c.fn(t[0], d); };
    Tensor x = leaf({3, 4}, c.lo, c.hi);
    Tensor y = f({x});
    ASSERT_TRUE(y.grad_fn());
    EXPECT_EQ(y.grad_fn()->name(), c.node);
    EXPECT_TRUE(gradcheck_ok(f, {x}));
    EXPECT_TRUE(gradcheck_ok(f, {leaf_noncontig({3, 4}, c.lo, c.hi)}));
    EXPECT_TRUE(gradcheck_ok(f, {leaf({2, 3, 2}, c.lo, c.hi)}));
  }
}

TEST_P(GradDim, DoubleBackward) {
  const DimCase& c = GetParam();
  for (int64_t d : {0, 1, -1}) {
    SCOPED_TRACE("dim " + std::to_string(d));
    auto f = [c, d](const TensorList& t) { return c.fn(t[0], d); };
    EXPECT_TRUE(gradcheck_ok(f, {leaf({3, 4}, c.lo, c.hi)}, /*grad_grad=*/true));
    EXPECT_TRUE(gradcheck_ok(f, {leaf_noncontig({3, 4}, c.lo, c.hi)}, /*grad_grad=*/true));
  }
}

TEST_P(GradDim, ZeroDimAndOneDim) {
  const DimCase& c = GetParam();
  auto f = [c](const TensorList& t) { return c.fn(t[0], 0); };
  EXPECT_TRUE(gradcheck_ok(f, {leaf({}, c.lo, c.hi)}));
  EXPECT_TRUE(gradcheck_ok(f, {leaf({6}, c.lo, c.hi)}));
  EXPECT_TRUE(gradcheck_ok(f, {leaf_noncontig({6}, c.lo, c.hi)}));
}

INSTANTIATE_TEST_SUITE_P(Ops, GradDim, ::testing::ValuesIn(dim_cases()),
                         [](const ::testing::TestParamInfo<DimCase>& i) { return i.param.name; });

TEST(GradSoftmax, DtypeArgument) {
  // a float32 input computed in float64: the gradient comes back as float32
  Tensor x = randn({3, 4}, kFloat).requires_grad_();
  Tensor xd = x.detach().to(kDouble).requires_grad_();
  Tensor go = randn({3, 4}, kDouble);
  for (int k = 0; k < 2; ++k) {
    Tensor y = k ? log_softmax(x, 1, kDouble) : softmax(x, 1, kDouble);
    Tensor yd = k ? log_softmax(xd, 1) : softmax(xd, 1);
    EXPECT_EQ(y.dtype(), kDouble);
    Tensor g = autograd::grad({y}, {x}, {go})[0];
    Tensor gd = autograd::grad({yd}, {xd}, {go})[0];
    EXPECT_EQ(g.dtype(), kFloat);
    EXPECT_TRUE(brisk::testing::close(g, gd.to(kFloat), 1e-6, 1e-5));
  }
}

TEST(GradSoftmax, GradientRowsSumToZero) {
  // softmax's outputs sum to 1 along dim: the gradient of any sum along dim is 0
  Tensor x = leaf({3, 4});
  Tensor go = randn({3, 1}, kDouble).expand({3, 4}).contiguous();
  Tensor g = autograd::grad({x.softmax(1)}, {x}, {go})[0];
  EXPECT_TRUE(brisk::testing::close(g, zeros({3, 4}, kDouble), 1e-14, 1e-14));
}

// ---- cumsum / cumprod specifics --------------------------------------------------
TEST(GradScan, CumsumIsReversedCumsum) {
  Tensor x = leaf({4});
  Tensor g = autograd::grad({x.cumsum(0)}, {x}, {tensor({1.0, 2.0, 3.0, 4.0})})[0];
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{10, 9, 7, 4}));
}

TEST(GradScan, CumprodWithZeros) {
  // zeros first, in the middle, last, and two in one slice
  Tensor x = tensor({0.5, 0.0, 1.2, 0.7,  //
                     0.0, 0.9, 0.0, 1.1,  //
                     1.3, -0.8, 0.6, 0.0},
                    kDouble)
                 .view({3, 4})
                 .detach()
                 .requires_grad_();
  for (int64_t d : {0, 1, -1}) {
    SCOPED_TRACE("dim " + std::to_string(d));
    auto f = [d](const TensorList& t) { return t[0].cumprod(d); };
    EXPECT_TRUE(gradcheck_ok(f, {x}));
    EXPECT_TRUE(gradcheck_ok(f, {x}, /*grad_grad=*/true));
    // the create_graph form (no division) gives the same first derivative
    Tensor go = randn({3, 4}, kDouble);
    Tensor g1 = autograd::grad({f({x})}, {x}, {go})[0];
    Tensor g2 = autograd::grad({f({x})}, {x}, {go}, std::nullopt, /*create_graph=*/true)[0];
    EXPECT_TRUE(g2.requires_grad());
    EXPECT_TRUE(brisk::testing::close(g1, g2.detach(), 1e-12, 1e-12));
  }
  // 1-D by hand: x = (2, 0, 3, 0, 5), y = (2, 0, 0, 0, 0)
  Tensor v = tensor({2.0, 0.0, 3.0, 0.0, 5.0}).requires_grad_();
  Tensor g = autograd::grad({v.cumprod(0)}, {v}, {ones_like(v)})[0];
  // dy/dx0 = 1 (only y0); dy/dx1 = x0 * (1 + x2 + x2*x3 + ...) = 2 * (1 + 3 + 0 + 0) = 8; the rest 0
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{1, 8, 0, 0, 0}));
  Tensor z = zeros({3}, kDouble).requires_grad_();
  Tensor gz = autograd::grad({z.cumprod(0)}, {z}, {ones_like(z)})[0];
  EXPECT_EQ(gz.to_vector<double>(), (std::vector<double>{1, 0, 0}));
}

// An integer result of a tensor that requires grad is refused in grad mode
// (torch 2.x: "Autograd not support dtype: Long"); without grad mode it runs
// and records nothing.
TEST(GradScan, IntegerResultDoesNotRecord) {
  Tensor x = leaf({4}, 0, 3);
  brisk::testing::expect_error([&] { x.cumsum(0, kInt64); }, {"[cumsum]", "Autograd not support dtype: int64"});
  NoGradGuard g;
  Tensor y = x.cumsum(0, kInt64);
  EXPECT_FALSE(y.requires_grad());
}

}  // namespace
