// Regression tests for divergences from PyTorch found by a differential run.
// Each test names the divergence; the expected values were obtained from
// PyTorch 1.13 (Debian's python3-torch) and PyTorch 2.x (a venv) and are
// written next to the assertion. Where the two versions differ, the test
// follows 2.x and says so.
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "test_util.h"

namespace brisk {
namespace {

using testing::close;
using testing::expect_error;

const double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

/// The values of a tensor as float64, flattened.
std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}
/// Exact equality that also checks the sign of zeros and matches nan to nan.
::testing::AssertionResult same_bits(const Tensor& got, const std::vector<double>& want) {
  std::vector<double> g = values(got);
  if (g.size() != want.size()) return ::testing::AssertionFailure() << "size " << g.size() << " vs " << want.size();
  for (size_t i = 0; i < g.size(); ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(want[i]);
    if (both_nan) continue;
    if (g[i] != want[i] || std::signbit(g[i]) != std::signbit(want[i]))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", expected " << want[i];
  }
  return ::testing::AssertionSuccess();
}
std::vector<int64_t> strides_of(const Tensor& t) { return std::vector<int64_t>(t.strides().begin(), t.strides().end()); }
std::vector<int64_t> sizes_of(const Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

// ---- 1. pow: gradients at base 0 -----------------------------------------------------

TEST(PyTorchDivergence, PowScalarZeroBaseGradIsZero) {
  // torch.pow(0.0, e) for e = [-1, 0, 0.5, 1, 2, 3] (float64):
  //   values [inf, 1, 0, 0, 0, 0], e.grad [-inf, 0, 0, 0, 0, 0] (1.13 and 2.x)
  Tensor e = tensor<double>({-1, 0, 0.5, 1, 2, 3}, kDouble).requires_grad_();
  Tensor r = pow(Scalar(0.0), e);
  EXPECT_TRUE(same_bits(r, {kInf, 1, 0, 0, 0, 0}));
  r.sum().backward();
  EXPECT_TRUE(same_bits(e.grad(), {-kInf, 0, 0, 0, 0, 0}));
  // An integer base 0 too: torch.pow(0, e), e = [0., 1., 2.]: grad [0, 0, 0]
  Tensor e2 = tensor<float>({0, 1, 2}).requires_grad_();
  pow(Scalar(0), e2).sum().backward();
  EXPECT_TRUE(same_bits(e2.grad(), {0, 0, 0}));
  // And a bool base False: torch 1.13 (False ** e).sum().backward() gives [0, 0] for e = [0.5, 2.];
  // torch 2.15 gives [nan, nan] (its base == 0 test misses a bool Scalar; difffuzz seed 32 case 1344)
  Tensor e3 = tensor<float>({0.5f, 2}).requires_grad_();
  Tensor r3 = pow(Scalar(false), e3);
  EXPECT_TRUE(same_bits(r3, {0, 0}));
  r3.sum().backward();
  EXPECT_TRUE(same_bits(e3.grad(), {0, 0}));
  // pow(x, False) is 1, so its gradient is 0 even at x = 0: torch (1.13 and 2.15)
  //   x = tensor([0., 1., 2.], dtype=bfloat16); torch.pow(x, False).sum().backward(): x.grad [nan, 0, 0]
  Tensor xb = tensor<float>({0, 1, 2}).to(kBFloat16).requires_grad_();
  pow(xb, Scalar(false)).sum().backward();
  EXPECT_TRUE(same_bits(xb.grad(), {0, 0, 0}));
}

TEST(PyTorchDivergence, PowScalarBaseOtherBasesGrad) {
  // torch.pow(-2.0, e): grad all nan; torch.pow(1.0, e): grad all 0;
  // torch.pow(2.0, e): grad 2^e * log(2) (1.13 and 2.x)
  for (double base : {-2.0, 1.0, 2.0}) {
    Tensor e = tensor<double>({-1, 0, 0.5, 1, 2, 3}, kDouble).requires_grad_();
    pow(Scalar(base), e).sum().backward();
    std::vector<double> want;
    for (double v : {-1.0, 0.0, 0.5, 1.0, 2.0, 3.0})
      want.push_back(base < 0 ? kNan : base == 1 ? 0.0 : std::pow(base, v) * std::log(base));
    EXPECT_TRUE(close(e.grad(), tensor(want, kDouble), 1e-12, 1e-12)) << "base " << base;
  }
  // finite differences where the function is smooth
  Tensor e = tensor<double>({-1.5, -0.3, 0.2, 1.7}, kDouble).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck([](const TensorList& in) { return pow(Scalar(2.5), in[0]); }, {e}));
  EXPECT_TRUE(autograd::gradcheck([](const TensorList& in) { return pow(Scalar(0.0), in[0]); },
                                  {tensor<double>({0.5, 1.5, 2.5}, kDouble).requires_grad_()}));
}

TEST(PyTorchDivergence, PowTensorZeroAndNegativeBaseGrads) {
  // x = [0, 0, 0, 0, -2, -2, -2, 2], e = [-1, 0, 0.5, 2, 2, 0.5, 0, 0] (float64):
  //   torch.pow(x, e)  = [inf, 1, 0, 0, 4, nan, 1, 1]
  //   x.grad           = [-inf, 0, inf, 0, -4, nan, 0, 0]
  //   e.grad           = [-inf, 0, 0, 0, nan, nan, nan, log 2]   (1.13 and 2.x)
  Tensor x = tensor<double>({0, 0, 0, 0, -2, -2, -2, 2}, kDouble).requires_grad_();
  Tensor e = tensor<double>({-1, 0, 0.5, 2, 2, 0.5, 0, 0}, kDouble).requires_grad_();
  Tensor r = pow(x, e);
  EXPECT_TRUE(same_bits(r, {kInf, 1, 0, 0, 4, kNan, 1, 1}));
  r.sum().backward();
  EXPECT_TRUE(same_bits(x.grad(), {-kInf, 0, kInf, 0, -4, kNan, 0, 0}));
  EXPECT_TRUE(same_bits(e.grad(), {-kInf, 0, 0, 0, kNan, kNan, kNan, std::log(2.0)}));
  // tensor ** scalar at x = [0, -2, 2]: torch gives
  //   e=0: [0, 0, 0]; e=0.5: [inf, nan, 0.35355...]; e=1: [1, 1, 1]; e=2: [0, -4, 4];
  //   e=-1: [-inf, -0.25, -0.25]; e=3: [0, 12, 12]
  const std::vector<std::pair<double, std::vector<double>>> cases = {
      {0.0, {0, 0, 0}},   {0.5, {kInf, kNan, 0.5 / std::sqrt(2.0)}}, {1.0, {1, 1, 1}},
      {2.0, {0, -4, 4}},  {-1.0, {-kInf, -0.25, -0.25}},             {3.0, {0, 12, 12}}};
  for (const auto& [ex, want] : cases) {
    Tensor xs = tensor<double>({0, -2, 2}, kDouble).requires_grad_();
    pow(xs, Scalar(ex)).sum().backward();
    EXPECT_TRUE(close(xs.grad(), tensor(want, kDouble), 1e-12, 1e-12)) << "exponent " << ex;
  }
  EXPECT_TRUE(autograd::gradcheck([](const TensorList& in) { return pow(in[0], in[1]); },
                                  {tensor<double>({0.5, 1.3, 2.0}, kDouble).requires_grad_(),
                                   tensor<double>({-1.2, 0.0, 2.5}, kDouble).requires_grad_()}));
}

// ---- 2. div with a rounding mode: zero gradients -----------------------------------------

TEST(PyTorchDivergence, DivRoundingModeBackwardIsZero) {
  // a (1, 3), b (2, 1), torch.div(a, b, rounding_mode="floor"/"trunc").sum().backward():
  //   a.grad = zeros(1, 3), b.grad = zeros(2, 1) (grad_fn DivBackward2; 1.13 and 2.x)
  for (RoundingMode m : {RoundingMode::Floor, RoundingMode::Trunc}) {
    Tensor a = tensor<float>({1.5f, -2.5f, 3.0f}).view({1, 3}).requires_grad_();
    Tensor b = tensor<float>({2.0f, 0.7f}).view({2, 1}).requires_grad_();
    div(a, b, m).sum().backward();
    ASSERT_TRUE(a.grad().defined() && b.grad().defined());
    EXPECT_EQ(sizes_of(a.grad()), (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(sizes_of(b.grad()), (std::vector<int64_t>{2, 1}));
    EXPECT_TRUE(same_bits(a.grad(), {0, 0, 0}));
    EXPECT_TRUE(same_bits(b.grad(), {0, 0}));

    // tensor / scalar: a.grad = zeros
    Tensor a2 = tensor<float>({1.5f, -2.5f, 3.0f}).requires_grad_();
    a2.div(2.0, m).sum().backward();
    EXPECT_TRUE(same_bits(a2.grad(), {0, 0, 0}));

    // in place on a non-leaf: c = a * 1; c.div_(b, rounding_mode=...): both grads zero
    Tensor a3 = tensor<float>({1.5f, -2.5f, 3.0f}).requires_grad_();
    Tensor b3 = tensor<float>({1.0f, 2.0f, 3.0f}).requires_grad_();
    Tensor c = a3 * 1;
    c.div_(b3, m);
    c.sum().backward();
    EXPECT_TRUE(same_bits(a3.grad(), {0, 0, 0}));
    EXPECT_TRUE(same_bits(b3.grad(), {0, 0, 0}));
    Tensor a4 = tensor<float>({1.5f, -2.5f, 3.0f}).requires_grad_();
    Tensor c4 = a4 * 1;
    c4.div_(2.0, m);
    c4.sum().backward();
    EXPECT_TRUE(same_bits(a4.grad(), {0, 0, 0}));
  }
  // The siblings: remainder/fmod backward. a = [1.5, -2.5, 3], b = [1, 2, 3]:
  //   remainder: a.grad [1, 1, 1], b.grad [-1, 2, -1]; fmod: b.grad [-1, 1, -1]
  Tensor a = tensor<float>({1.5f, -2.5f, 3.0f}).requires_grad_();
  Tensor b = tensor<float>({1.0f, 2.0f, 3.0f}).requires_grad_();
  remainder(a, b).sum().backward();
  EXPECT_TRUE(same_bits(a.grad(), {1, 1, 1}));
  EXPECT_TRUE(same_bits(b.grad(), {-1, 2, -1}));
  Tensor b2 = tensor<float>({1.0f, 2.0f, 3.0f}).requires_grad_();
  fmod(a.detach(), b2).sum().backward();
  EXPECT_TRUE(same_bits(b2.grad(), {-1, 1, -1}));
}

// ---- 3. arange / linspace on integer dtypes ------------------------------------------------

TEST(PyTorchDivergence, ArangeIntegerDtypeFractionalStart) {
  auto ints = [](const Tensor& t) {
    Tensor l = t.to(kInt64).contiguous();
    return std::vector<int64_t>(l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + l.numel());
  };
  using V = std::vector<int64_t>;
  // torch.arange(-2.5, 2.5, 1, dtype=torch.int32) = [-2, -1, 0, 1, 2]
  EXPECT_EQ(ints(arange(-2.5, 2.5, 1, kInt32)), (V{-2, -1, 0, 1, 2}));
  // int64: [-2, -1, 0, 1, 2] in 2.x (1.13 gave [-2, -1, 0, 1])
  EXPECT_EQ(ints(arange(-2.5, 2.5, 1, kInt64)), (V{-2, -1, 0, 1, 2}));
  // (0, 5, 1.5) int64: [0, 1, 2, 3] (2.x; 1.13 [0, 1, 2, 3, 4])
  EXPECT_EQ(ints(arange(0, 5, 1.5, kInt64)), (V{0, 1, 2, 3}));
  // (-0.3, 3, 1) int32: [0, 1, 2, 3]
  EXPECT_EQ(ints(arange(-0.3, 3, 1, kInt32)), (V{0, 1, 2, 3}));
  // (-3.7, 0, 1.2) int32: [-3, -2, -1, 0]
  EXPECT_EQ(ints(arange(-3.7, 0, 1.2, kInt32)), (V{-3, -2, -1, 0}));
  // (2.5, -2.5, -1) int32: [2, 1, 0, -1, -2]
  EXPECT_EQ(ints(arange(2.5, -2.5, -1, kInt32)), (V{2, 1, 0, -1, -2}));
  // (0.9, 5, 1.1) int64: [0, 1, 2, 3]
  EXPECT_EQ(ints(arange(0.9, 5, 1.1, kInt64)), (V{0, 1, 2, 3}));
  // uint8 (-2.5, 2.5, 1): [254, 255, 0, 1, 2]
  EXPECT_EQ(ints(arange(-2.5, 2.5, 1, kUInt8)), (V{254, 255, 0, 1, 2}));
  // A step that truncates to 0 repeats start (2.x): (0.7, 4.2, 0.9) int64 -> [0, 0, 0, 0]
  // (1.13 raised "step must be nonzero")
  EXPECT_EQ(ints(arange(0.7, 4.2, 0.9, kInt64)), (V{0, 0, 0, 0}));
  // Float dtypes are unchanged: torch.arange(-2.5, 2.5, 1) = [-2.5, -1.5, -0.5, 0.5, 1.5]
  EXPECT_TRUE(close(arange(-2.5, 2.5, 1), tensor<float>({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f})));
}

TEST(PyTorchDivergence, LinspaceIntegerDtype) {
  auto ints = [](const Tensor& t) {
    Tensor l = t.to(kInt64).contiguous();
    return std::vector<int64_t>(l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + l.numel());
  };
  using V = std::vector<int64_t>;
  // torch.linspace(..., dtype=int): the ends are converted to the dtype first (1.13 and 2.x)
  EXPECT_EQ(ints(linspace(-2.5, 2.5, 5, kInt32)), (V{-2, -1, 0, 1, 2}));
  EXPECT_EQ(ints(linspace(0, 10, 4, kInt64)), (V{0, 3, 6, 10}));
  EXPECT_EQ(ints(linspace(10, 0, 4, kInt64)), (V{10, 6, 3, 0}));
  EXPECT_EQ(ints(linspace(0, -7, 4, kInt32)), (V{0, -2, -4, -7}));
  EXPECT_EQ(ints(linspace(-7, 0, 5, kInt64)), (V{-7, -5, -3, -1, 0}));
  EXPECT_EQ(ints(linspace(0, 1, 7, kInt32)), (V{0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(ints(linspace(0.9, 3.1, 3, kInt64)), (V{0, 1, 3}));  // not [0, 2, 3]
  EXPECT_EQ(ints(linspace(-0.5, 2.5, 4, kInt32)), (V{0, 0, 1, 2}));
  EXPECT_EQ(ints(linspace(-3, 3, 4, kUInt8)), (V{253, 169, 86, 3}));
  EXPECT_EQ(ints(linspace(-3, 3, 1, kUInt8)), (V{253}));
  // linspace(-2.5, 2.5, 5, dtype=uint8) raises (value cannot be converted to uint8)
  expect_error([] { linspace(-2.5, 2.5, 5, kUInt8); }, {"[linspace]", "-2.5", "uint8"});
  expect_error([] { linspace(0, 1e10, 3, kInt32); }, {"[linspace]", "int32"});
  EXPECT_EQ(ints(linspace(0, 1e10, 3, kInt64)), (V{0, 5000000000, 10000000000}));
  // floating dtypes check the ends too: linspace(0, 1e5, 3, dtype=float16) raises (1.13 and 2.x)
  expect_error([] { linspace(0, 1e5, 3, kHalf); }, {"[linspace]", "float16"});
  expect_error([] { linspace(0, 1e39, 3, kFloat); }, {"[linspace]", "float32"});
  EXPECT_TRUE(close(linspace(0, 1e300, 3, kDouble), tensor<double>({0, 5e299, 1e300}, kDouble), 1e-15, 0));
}

// ---- 4. float16 / bfloat16 rounding division -----------------------------------------------

TEST(PyTorchDivergence, HalfTruncDivRoundsQuotientFirst) {
  const std::vector<double> a = {-7, 7, -7, 7, 5, -5, 1, 100, -100, 3};
  const std::vector<double> b = {-0.7, 0.7, 0.7, -0.7, 0.1, 0.1, 0.3, 0.3, 0.9, 0.3};
  // torch.div(a, b, rounding_mode=...) with both tensors float16 (1.13 and 2.x):
  //   trunc [10, 10, -10, -10, 50, -50, 3, 333, -111, 10]
  //   floor [9, 9, -10, -10, 50, -51, 3, 333, -112, 9]
  Tensor ah = tensor(a).to(kHalf), bh = tensor(b).to(kHalf);
  EXPECT_TRUE(same_bits(ah.div(bh, RoundingMode::Trunc), {10, 10, -10, -10, 50, -50, 3, 333, -111, 10}));
  EXPECT_TRUE(same_bits(ah.div(bh, RoundingMode::Floor), {9, 9, -10, -10, 50, -51, 3, 333, -112, 9}));
  // bfloat16: trunc [10, 10, -10, -10, 50, -50, 3, 332, -111, 10]
  //           floor [10, 10, -11, -11, 49, -50, 3, 332, -112, 9]
  Tensor ab = tensor(a).to(kBFloat16), bb = tensor(b).to(kBFloat16);
  EXPECT_TRUE(same_bits(ab.div(bb, RoundingMode::Trunc), {10, 10, -10, -10, 50, -50, 3, 332, -111, 10}));
  EXPECT_TRUE(same_bits(ab.div(bb, RoundingMode::Floor), {10, 10, -11, -11, 49, -50, 3, 332, -112, 9}));
  // A strided (non-contiguous) operand takes the same path.
  Tensor bt = tensor(b).to(kHalf).view({2, 5}).t().contiguous().t();
  EXPECT_TRUE(same_bits(ah.view({2, 5}).div(bt, RoundingMode::Trunc), {10, 10, -10, -10, 50, -50, 3, 333, -111, 10}));
  // A Python-scalar divisor: torch.div(tensor([-7.], dtype=float16), -0.7, rounding_mode="trunc") = [10]
  EXPECT_TRUE(same_bits(tensor<double>({-7}).to(kHalf).div(-0.7, RoundingMode::Trunc), {10}));
  // float32 is unchanged: torch.div(tensor([-7.]), tensor([-0.7]), rounding_mode="trunc") = [10]
  EXPECT_TRUE(same_bits(tensor<float>({-7.f}).div(tensor<float>({-0.7f}), RoundingMode::Trunc), {10}));
}

// ---- 5. the sign of zero in clamp / maximum / minimum ----------------------------------------

TEST(PyTorchDivergence, ClampAndMaximumKeepSignOfZero) {
  // nz = [-0., 0., -0., 0.], pz = [0., -0., -0., 0.] (every floating dtype, 1.13 and 2.x):
  //   nz.clamp(min=0), nz.clamp(max=0), nz.clamp(-0., 0.), nz.clamp(0., 0.),
  //   clamp_min(0.), clamp_max(0.), clamp(nz, zeros, zeros), maximum(nz, pz),
  //   minimum(nz, pz), relu(nz): all [-0., 0., -0., 0.] (the first operand on ties)
  const std::vector<double> want = {-0.0, 0.0, -0.0, 0.0};
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    Tensor nz = tensor<double>({-0.0, 0.0, -0.0, 0.0}).to(dt);
    Tensor pz = tensor<double>({0.0, -0.0, -0.0, 0.0}).to(dt);
    EXPECT_TRUE(same_bits(nz.clamp(0), want)) << dt;
    EXPECT_TRUE(same_bits(nz.clamp(0.0), want)) << dt;
    EXPECT_TRUE(same_bits(nz.clamp(-0.0), want)) << dt;
    EXPECT_TRUE(same_bits(nz.clamp(std::nullopt, 0), want)) << dt;
    EXPECT_TRUE(same_bits(nz.clamp(std::nullopt, -0.0), want)) << dt;
    EXPECT_TRUE(same_bits(nz.clamp(-0.0, 0.0), want)) << dt;
    EXPECT_TRUE(same_bits(nz.clamp(0.0, 0.0), want)) << dt;
    EXPECT_TRUE(same_bits(nz.clamp_min(0.0), want)) << dt;
    EXPECT_TRUE(same_bits(nz.clamp_max(-0.0), want)) << dt;
    EXPECT_TRUE(same_bits(clamp(nz, zeros({4}, dt), zeros({4}, dt)), want)) << dt;
    EXPECT_TRUE(same_bits(clamp(nz, pz, pz), want)) << dt;
    EXPECT_TRUE(same_bits(maximum(nz, pz), want)) << dt;
    EXPECT_TRUE(same_bits(minimum(nz, pz), want)) << dt;
    EXPECT_TRUE(same_bits(maximum(pz, nz), {0.0, -0.0, -0.0, 0.0})) << dt;
    EXPECT_TRUE(same_bits(minimum(pz, nz), {0.0, -0.0, -0.0, 0.0})) << dt;
    EXPECT_TRUE(same_bits(nz.relu(), want)) << dt;
    Tensor c = nz.clone();
    c.clamp_(0.0);
    EXPECT_TRUE(same_bits(c, want)) << dt;
  }
  // nan still propagates: maximum(nan, 1) = nan, clamp(nan, min=0) = nan
  Tensor n = tensor<float>({std::nanf(""), 1.f});
  EXPECT_TRUE(same_bits(maximum(n, tensor<float>({1.f, std::nanf("")})), {kNan, kNan}));
  EXPECT_TRUE(same_bits(n.clamp(0), {kNan, 1}));
}

// ---- 6. out-of-range scalars on integer (and other) dtypes ------------------------------------

TEST(PyTorchDivergence, IntegerScalarOverflowRaises) {
  auto u8 = [] { return tensor<int64_t>({1, 2, 250}).to(kUInt8); };
  auto i32 = [] { return tensor<int64_t>({1, 2, 3}).to(kInt32); };
  Tensor c = tensor<bool>({true, false, true});
  // PyTorch 2.x raises ("value cannot be converted to type uint8_t without overflow",
  // or for clamp "Clamp min value 300 is outside the representable range of Byte"):
  expect_error([&] { u8().clamp(300); }, {"[clamp]", "300", "uint8"});
  expect_error([&] { u8().clamp(std::nullopt, -1); }, {"[clamp]", "-1", "uint8"});
  expect_error([&] { u8().clamp_(300); }, {"[clamp_]", "300"});
  expect_error([&] { i32().clamp(int64_t(1) << 31); }, {"[clamp]", "2147483648", "int32"});
  expect_error([&] { u8().pow(300); }, {"[pow]", "300", "uint8"});
  expect_error([&] { u8().pow(256); }, {"[pow]", "256"});
  expect_error([&] { u8().pow_(300); }, {"[pow_]", "300"});
  expect_error([&] { i32().pow(int64_t(1) << 31); }, {"[pow]", "int32"});
  expect_error([&] { where(c, Scalar(300), u8()); }, {"[where]", "300", "uint8"});
  expect_error([&] { where(c, u8(), Scalar(300)); }, {"[where]", "300", "uint8"});
  expect_error([&] { where(c, Scalar(-256), u8()); }, {"[where]", "-256"});
  expect_error([&] { where(c, Scalar(int64_t(1) << 31), i32()); }, {"[where]", "int32"});
  expect_error([&] { u8().masked_fill(c, 300); }, {"[masked_fill]", "300", "uint8"});
  expect_error([&] { u8().masked_fill_(c, 256); }, {"[masked_fill_]", "256"});
  expect_error([&] { u8().masked_fill(c, -0.5); }, {"[masked_fill]", "-0.5"});
  expect_error([&] { u8().fill_(256); }, {"[fill_]", "256", "uint8"});
  expect_error([&] { u8().fill_(-256); }, {"[fill_]", "-256"});
  expect_error([&] { u8().fill_(-1e-9); }, {"[fill_]", "uint8"});
  expect_error([&] { zeros({0}, kUInt8).fill_(300); }, {"[fill_]", "300"});  // even with no elements
  expect_error([&] { i32().fill_(kNan); }, {"[fill_]", "nan", "int32"});
  expect_error([&] { i32().fill_(kInf); }, {"[fill_]", "int32"});
  expect_error([&] { i32().fill_(2147483648.0); }, {"[fill_]", "int32"});
  expect_error([&] { full({2}, 300, kUInt8); }, {"[full]", "300", "uint8"});
  expect_error([&] { full_like(u8(), 300); }, {"[full_like]", "300"});
  expect_error([&] { scalar_tensor(300, kUInt8); }, {"300", "uint8"});
  expect_error([&] { u8().add_(1, 300); }, {"[add_]", "300"});  // alpha
  expect_error([&] { u8().add(u8(), 300); }, {"[add]", "300"});
  expect_error([&] { u8().sub(u8(), 300); }, {"[sub]", "-300"});  // sub adds -alpha
  expect_error([] { ones({3}, kHalf).add(ones({3}, kHalf), 1e5); }, {"[add]", "float16"});
  // An integer divisor that wraps to 0 in the dtype divides by zero (torch: ZeroDivisionError)
  expect_error([&] { u8().div(256, RoundingMode::Floor); }, {"[div]", "ZeroDivisionError"});
  expect_error([&] { u8().remainder(-256); }, {"[remainder]", "ZeroDivisionError"});
  expect_error([&] { i32().fmod(int64_t(1) << 32); }, {"[fmod]", "ZeroDivisionError"});
  expect_error([&] { u8().addcmul(u8(), u8(), 300); }, {"[addcmul]", "300"});
  expect_error([&] { pad(u8(), {1, 1}, 300); }, {"[pad]", "300", "uint8"});
  expect_error([&] { Tensor x = u8(); x.index_put_({tensor<int64_t>({0})}, Scalar(300)); }, {"[index_put_]", "300"});
  expect_error([&] { Tensor x = u8(); x.index_put_({c}, Scalar(300)); }, {"[index_put_]", "300"});
  // 16-bit floats: torch raises for fill_/masked_fill/clamp/pow past the largest finite value
  expect_error([] { zeros({5}, kHalf).fill_(1e5); }, {"[fill_]", "float16"});
  expect_error([] { zeros({5}, kHalf).fill_(65519.0); }, {"[fill_]", "float16"});
  expect_error([] { zeros({5}, kHalf).masked_fill(ones({5}, kBool), 70000); }, {"[masked_fill]", "float16"});
  expect_error([] { zeros({5}, kHalf).clamp(-1e5); }, {"[clamp]", "float16"});
  expect_error([] { zeros({5}, kHalf).pow(1e5); }, {"[pow]", "float16"});
  expect_error([] { zeros({5}, kBFloat16).fill_(1e39); }, {"[fill_]", "bfloat16"});
  expect_error([] { zeros({5}, kFloat).fill_(1e39); }, {"[fill_]", "float32"});
  expect_error([] { where(ones({2}, kBool), Scalar(1e39), zeros({2})); }, {"[where]", "float32"});
}

TEST(PyTorchDivergence, IntegerScalarInRangeOrArithmeticWraps) {
  auto u8 = [] { return tensor<int64_t>({1, 2, 250}).to(kUInt8); };
  auto ints = [](const Tensor& t) {
    Tensor l = t.to(kInt64).contiguous();
    return std::vector<int64_t>(l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + l.numel());
  };
  using V = std::vector<int64_t>;
  Tensor c = tensor<bool>({true, false, true});
  // Arithmetic wraps without an error (1.13 and 2.x):
  EXPECT_EQ(ints(u8() + 300), (V{45, 46, 38}));
  EXPECT_EQ(ints(u8() - 300), (V{213, 214, 206}));
  EXPECT_EQ(ints(u8() * 300), (V{44, 88, 248}));
  EXPECT_EQ(ints(u8().add_(300)), (V{45, 46, 38}));
  EXPECT_EQ(ints(u8().div(300, RoundingMode::Floor)), (V{0, 0, 5}));
  EXPECT_EQ(ints(u8().remainder(300)), (V{1, 2, 30}));
  EXPECT_EQ(ints(u8().lt(300)), (V{1, 1, 0}));
  EXPECT_EQ(ints(pow(Scalar(300), u8())), (V{44, 144, 0}));  // the base wraps to 44
  EXPECT_EQ(ints(u8().bitwise_and(300)), (V{0, 0, 40}));
  // In range (uint8 takes -255..255, negatives wrap; floats truncate):
  EXPECT_EQ(ints(u8().pow(255)), (V{1, 0, 0}));
  EXPECT_EQ(ints(u8().fill_(-1)), (V{255, 255, 255}));
  EXPECT_EQ(ints(u8().fill_(-255)), (V{1, 1, 1}));
  EXPECT_EQ(ints(u8().fill_(255.9)), (V{255, 255, 255}));  // 2.x (1.13 raised)
  EXPECT_EQ(ints(u8().fill_(-0.0)), (V{0, 0, 0}));
  EXPECT_EQ(ints(u8().masked_fill(c, -1)), (V{255, 2, 255}));
  EXPECT_EQ(ints(where(c, Scalar(-1), u8())), (V{255, 2, 255}));
  EXPECT_EQ(ints(full({2}, -1, kUInt8)), (V{255, 255}));
  EXPECT_EQ(ints(full({2}, 2.5, kInt32)), (V{2, 2}));
  EXPECT_EQ(ints(zeros({2}, kBool).fill_(2.5)), (V{1, 1}));
  EXPECT_EQ(ints(full({2}, 300, kBool)), (V{1, 1}));
  EXPECT_EQ(ints(full({2}, -2147483648LL, kInt32)), (V{-2147483648LL, -2147483648LL}));
  // clamp on integers (2.x): bounds past the dtype's range saturate
  EXPECT_EQ(ints(u8().clamp(std::nullopt, 300)), (V{1, 2, 250}));
  EXPECT_EQ(ints(u8().clamp(-1)), (V{1, 2, 250}));  // 1.13 wrapped -1 to 255: [255, 255, 255]
  EXPECT_EQ(ints(u8().clamp(-5, 300)), (V{1, 2, 250}));
  EXPECT_EQ(ints(u8().clamp(10, 5)), (V{5, 5, 5}));
  EXPECT_EQ(ints(tensor<int64_t>({1, 2, 3}).to(kInt32).clamp(-(int64_t(1) << 40))), (V{1, 2, 3}));
  EXPECT_EQ(ints(tensor<int64_t>({1, 2, 3}).to(kInt32).clamp(std::nullopt, int64_t(1) << 40)), (V{1, 2, 3}));
  // A float bound promotes: uint8.clamp(2.5) = [2.5, 2.5, 250.] (float32)
  Tensor f = u8().clamp(2.5);
  EXPECT_EQ(f.dtype(), kFloat);
  EXPECT_TRUE(same_bits(f, {2.5, 2.5, 250}));
  // float32 takes any double exponent: tensor([1., 2., 3.]).pow(1e39) = [1, inf, inf]
  EXPECT_TRUE(same_bits(tensor<float>({1, 2, 3}).pow(1e39), {1, kInf, kInf}));
  // 16-bit floats: inf converts; where lets a large value overflow to inf (2.x; 1.13 raised)
  EXPECT_TRUE(same_bits(zeros({2}, kHalf).fill_(kInf), {kInf, kInf}));
  EXPECT_TRUE(same_bits(where(ones({2}, kBool), Scalar(1e5), zeros({2}, kHalf)), {kInf, kInf}));
  // addcmul's value is converted to the math type (float32 for 16-bit floats):
  // tensor.addcmul(ones, ones, value=1e5) in float16 = [inf, inf, inf] (2.x)
  EXPECT_TRUE(same_bits(ones({3}, kHalf).addcmul(ones({3}, kHalf), ones({3}, kHalf), 1e5), {kInf, kInf, kInf}));
  // int32: sub and rsub apply -alpha, which fits: tensor([1, 1, 1], int32).sub(ones, alpha=2**31)
  // = [-2147483647] * 3
  EXPECT_EQ(ints(ones({3}, kInt32).sub(ones({3}, kInt32), int64_t(1) << 31)), (V{-2147483647, -2147483647, -2147483647}));
  EXPECT_EQ(ints(rsub(ones({3}, kInt32), 1, int64_t(1) << 31)), (V{-2147483647, -2147483647, -2147483647}));
  // pad with an in-range value: F.pad(uint8 [1, 2, 250], (1, 1), value=2.5) = [2, 1, 2, 250, 2]
  EXPECT_EQ(ints(pad(u8(), {1, 1}, 2.5)), (V{2, 1, 2, 250, 2}));
}

// ---- 7. lenient where PyTorch raises ----------------------------------------------------------

TEST(PyTorchDivergence, IndexPutValueDtypeMustMatch) {
  // torch: x.index_put_((idx,), values) with values of another dtype raises
  // "Index put requires the source and destination dtypes match" (1.13 and 2.x)
  Tensor idx = tensor<int64_t>({0, 2});
  expect_error([&] { zeros({4}).index_put_({idx}, tensor<double>({1.0, 2.0}, kDouble)); },
               {"[index_put_]", "float64", "float32"});
  expect_error([&] { zeros({4}).index_put_({idx}, tensor<int64_t>({1, 2})); }, {"[index_put_]", "int64"});
  expect_error([&] { zeros({4}).index_put_({idx}, tensor<double>({1.5}, kDouble).view({})); },
               {"[index_put_]", "float64"});
  expect_error([&] { zeros({4}, kHalf).index_put_({idx}, tensor<float>({1.5f, 2.5f})); }, {"[index_put_]", "float16"});
  Tensor m2 = tensor<bool>({true, false, false, true}).view({2, 2});
  expect_error([&] { zeros({2, 2}).index_put_({m2}, tensor<double>({1.5, 2.5}, kDouble)); }, {"[index_put_]", "float64"});
  expect_error(
      [&] { zeros({2, 2}).index_put_({Slice(), tensor<int64_t>({0})}, tensor<double>({1.5, 2.5}, kDouble).view({2, 1})); },
      {"[index_put_]", "float64"});
  // Allowed: a single value through a boolean mask, x[mask] = tensor(1.5, dtype=float64)
  // -> [1.5, 0, 1.5, 0]; and basic indexing copies (x[0] = float64 row).
  Tensor m = tensor<bool>({true, false, true, false});
  Tensor x = zeros({4});
  x.index_put_({m}, tensor<double>({1.5}, kDouble).view({}));
  EXPECT_TRUE(same_bits(x, {1.5, 0, 1.5, 0}));
  Tensor y = zeros({2, 2});
  y.index_put_({0}, tensor<double>({1.5, 2.5}, kDouble));
  EXPECT_TRUE(same_bits(y, {1.5, 2.5, 0, 0}));
  Tensor z = zeros({4});
  z.index_put_({idx}, tensor<float>({1.f, 2.f}));
  EXPECT_TRUE(same_bits(z, {1, 0, 2, 0}));
}

TEST(PyTorchDivergence, TopkOnBoolRaises) {
  // torch: topk does not support bool (1.13 "topk_cpu" not implemented for 'Bool')
  expect_error([] { tensor<bool>({true, false, true}).topk(1); }, {"[topk]", "bool"});
  // sort takes bool: values [False, True, True], indices [1, 0, 2]
  auto [v, i] = tensor<bool>({true, false, true}).sort();
  EXPECT_TRUE(same_bits(v, {0, 1, 1}));
  EXPECT_TRUE(same_bits(i, {1, 0, 2}));
  // topk on uint8 works: values [3], indices [1]
  auto [tv, ti] = tensor<int64_t>({1, 3, 2}).to(kUInt8).topk(1);
  EXPECT_TRUE(same_bits(tv, {3}));
  EXPECT_TRUE(same_bits(ti, {1}));
}

TEST(PyTorchDivergence, CrossEntropyTargetDtype) {
  namespace F = nn::functional;
  Tensor logits = tensor<float>({0.1f, -0.3f, 0.7f, 1.2f, -1.0f, 0.0f, 0.5f, 0.2f, 2.0f, -0.5f, 0.3f, 0.1f}).view({3, 4});
  Tensor target = tensor<int64_t>({0, 1, 3});
  // torch: "expected target dtype to be Long or Byte, but got Int" (2.x; 1.13 "expected scalar type Long but found Int")
  expect_error([&] { F::cross_entropy(logits, target.to(kInt32)); }, {"[cross_entropy]", "int32"});
  expect_error([&] { F::nll_loss(logits.log_softmax(1), target.to(kInt32)); }, {"[nll_loss]", "int32"});
  expect_error([&] { F::cross_entropy(logits, target.to(kBool)); }, {"[cross_entropy]", "bool"});
  // uint8 targets are accepted and give the int64 result
  EXPECT_TRUE(close(F::cross_entropy(logits, target.to(kUInt8)), F::cross_entropy(logits, target)));
  EXPECT_TRUE(close(F::nll_loss(logits.log_softmax(1), target.to(kUInt8)), F::nll_loss(logits.log_softmax(1), target)));
}

TEST(PyTorchDivergence, LossWeightRequiringGradRaises) {
  namespace F = nn::functional;
  // torch (1.13 and 2.x) raises in the forward: "The function
  // 'binary_cross_entropy_with_logits' is not differentiable with respect to
  // argument 'weight'. This input cannot have requires_grad True."
  Tensor x = tensor<float>({0.3f, -1.2f, 2.0f}).requires_grad_();
  Tensor t = tensor<float>({0.0f, 1.0f, 0.5f});
  Tensor w = tensor<float>({0.5f, 1.0f, 2.0f}).requires_grad_();
  expect_error([&] { F::binary_cross_entropy_with_logits(x, t, F::BinaryCrossEntropyWithLogitsFuncOptions().weight(w)); },
               {"[binary_cross_entropy_with_logits]", "weight"});
  expect_error([&] {
    F::binary_cross_entropy_with_logits(x, t, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(w));
  }, {"[binary_cross_entropy_with_logits]", "pos_weight"});
  // even when the input does not require grad
  expect_error([&] {
    F::binary_cross_entropy_with_logits(x.detach(), t, F::BinaryCrossEntropyWithLogitsFuncOptions().weight(w));
  }, {"[binary_cross_entropy_with_logits]", "weight"});
  Tensor p = tensor<float>({0.3f, 0.8f, 0.5f}).requires_grad_();
  expect_error([&] { F::binary_cross_entropy(p, t, F::BinaryCrossEntropyFuncOptions().weight(w)); },
               {"[binary_cross_entropy]", "weight"});
  Tensor logits = tensor<float>({0.1f, -0.3f, 0.7f, 1.2f, -1.0f, 0.0f, 0.5f, 0.2f, 2.0f, -0.5f, 0.3f, 0.1f})
                      .view({3, 4}).requires_grad_();
  Tensor cw = tensor<float>({1.0f, 0.5f, 2.0f, 1.0f}).requires_grad_();
  Tensor target = tensor<int64_t>({0, 1, 3});
  expect_error([&] { F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().weight(cw)); },
               {"[cross_entropy]", "weight"});
  expect_error([&] { F::nll_loss(logits, target, F::NLLLossFuncOptions().weight(cw)); }, {"[nll_loss]", "weight"});
  // Fine: no grad mode, a detached weight, or class-probability targets
  // (torch differentiates cross_entropy's weight there).
  {
    NoGradGuard ng;
    F::binary_cross_entropy_with_logits(x, t, F::BinaryCrossEntropyWithLogitsFuncOptions().weight(w));
  }
  Tensor l = F::binary_cross_entropy_with_logits(x, t, F::BinaryCrossEntropyWithLogitsFuncOptions().weight(w.detach()));
  l.backward();
  EXPECT_TRUE(x.grad().defined());
  Tensor probs = tensor<float>({0.25f, 0.25f, 0.25f, 0.25f}).expand({3, 4});
  F::cross_entropy(logits, probs, F::CrossEntropyFuncOptions().weight(cw)).backward();
  EXPECT_TRUE(cw.grad().defined());
}

// ---- 8. *_like factories and clone keep the layout ------------------------------------------

TEST(PyTorchDivergence, EmptyLikePreservesStrides) {
  using V = std::vector<int64_t>;
  Tensor base = arange(24.0).reshape({2, 3, 4});
  struct Case {
    const char* name;
    Tensor x;
    V want;  // torch.empty_like(x).stride() (1.13 and 2.x)
  };
  Tensor cl = randn({2, 3, 4, 5}).contiguous(kChannelsLast);
  const std::vector<Case> cases = {
      {"transpose(0,2)", base.transpose(0, 2), {1, 4, 12}},
      {"permute(2,0,1)", base.permute({2, 0, 1}), {1, 12, 4}},
      {"slice step 2", base.slice(2, 0, 4, 2), {6, 2, 1}},
      {"narrow", base.narrow(1, 1, 2), {8, 4, 1}},
      {"expand", arange(3.0).reshape({3, 1}).expand({3, 4}), {4, 1}},
      {"t()", arange(6.0).reshape({2, 3}).t(), {1, 3}},
      {"channels_last", cl, {60, 1, 15, 3}},
      {"channels_last C=1", randn({2, 1, 4, 5}).contiguous(kChannelsLast), {20, 20, 5, 1}},
      {"channels_last sliced", cl.slice(2, 0, 4, 2), {30, 1, 15, 3}},
      {"size-1 dim", randn({1, 3}).t(), {1, 3}},
      {"zero-size transposed", randn({0, 3}).t(), {1, 3}},
      {"diagonal", randn({3, 3}).diagonal(), {1}},
      {"expanded and transposed", randn({3, 1, 4}).expand({3, 2, 4}).transpose(0, 2), {1, 4, 8}},
      {"overlapping unfold", arange(10.0).unfold(0, 4, 2), {4, 1}},
      {"5-d permuted", randn({2, 3, 4, 5, 6}).permute({0, 2, 3, 4, 1}), {360, 30, 6, 1, 120}},
      {"4-d transpose(2,3)", randn({2, 3, 4, 5}).transpose(2, 3), {60, 20, 1, 5}},
      {"4-d permute(1,0,2,3)", randn({2, 3, 4, 5}).permute({1, 0, 2, 3}), {20, 60, 5, 1}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(strides_of(empty_like(c.x)), c.want) << c.name;
    EXPECT_EQ(strides_of(zeros_like(c.x)), c.want) << c.name;
    EXPECT_EQ(strides_of(ones_like(c.x)), c.want) << c.name;
    EXPECT_EQ(strides_of(full_like(c.x, 2)), c.want) << c.name;
    EXPECT_EQ(strides_of(rand_like(c.x)), c.want) << c.name;
    EXPECT_EQ(strides_of(randn_like(c.x)), c.want) << c.name;
    EXPECT_EQ(strides_of(c.x.clone()), c.want) << c.name;
    EXPECT_EQ(strides_of(empty_like(c.x, kDouble)), c.want) << c.name;  // a dtype keeps the layout
    EXPECT_EQ(strides_of(c.x.to(kDouble)), c.want) << c.name;
    EXPECT_EQ(sizes_of(empty_like(c.x)), sizes_of(c.x)) << c.name;
    EXPECT_TRUE(equal(c.x.clone(), c.x)) << c.name;
    EXPECT_TRUE(equal(zeros_like(c.x), zeros(c.x.sizes()))) << c.name;
  }
  // clone(kContiguous) is contiguous whatever the input
  EXPECT_EQ(strides_of(base.transpose(0, 2).clone(kContiguous)), (V{6, 2, 1}));
}

TEST(PyTorchDivergence, LikeFactoriesKeepTheInputsDevice) {
  // libtorch: torch::zeros_like(x, torch::kFloat64) keeps x's device; only an
  // explicit device moves the result.
  EXPECT_FALSE(TensorOptions(kDouble).has_device_);
  EXPECT_TRUE(TensorOptions(kDouble).device(Device(kCPU)).has_device_);
  Tensor x = ones({2, 3});
  EXPECT_EQ(zeros_like(x, kDouble).device(), x.device());
  REQUIRE_CUDA();  // the device half of this test
  Tensor g = ones({2, 3}, TensorOptions().device(Device(kCUDA))).t();
  for (const Tensor& r : {zeros_like(g, kDouble), ones_like(g, kHalf), empty_like(g, kInt64), full_like(g, 2, kInt32),
                          rand_like(g, kDouble), randn_like(g, kDouble)}) {
    EXPECT_TRUE(r.is_cuda());
    EXPECT_EQ(strides_of(r), (std::vector<int64_t>{1, 3}));
  }
  EXPECT_TRUE(zeros_like(g, TensorOptions(kDouble).device(Device(kCPU))).is_cpu());
  EXPECT_TRUE(equal(full_like(g, 2, kInt32).cpu(), full({3, 2}, 2, kInt32)));
}

TEST(PyTorchDivergence, CudaMatchesCpuOnTheseFixes) {
  REQUIRE_CUDA();
  const TensorOptions gpu = TensorOptions().device(Device(kCUDA));
  auto same = [](const Tensor& g, const Tensor& c) { return same_bits(g.cpu(), values(c)); };
  // 16-bit truncating / floor division (the functor shared with the CPU, src/kernels/math.h)
  const std::vector<double> a = {-7, 7, -7, 7, 5, -5, 1, 100, -100, 3};
  const std::vector<double> b = {-0.7, 0.7, 0.7, -0.7, 0.1, 0.1, 0.3, 0.3, 0.9, 0.3};
  for (ScalarType dt : {kHalf, kBFloat16, kFloat}) {
    Tensor x = tensor(a).to(dt), y = tensor(b).to(dt);
    for (RoundingMode m : {RoundingMode::Trunc, RoundingMode::Floor})
      EXPECT_TRUE(same(x.to(Device(kCUDA)).div(y.to(Device(kCUDA)), m), x.div(y, m))) << dt;
  }
  // signed zeros
  for (ScalarType dt : {kFloat, kHalf, kBFloat16, kDouble}) {
    Tensor nz = tensor<double>({-0.0, 0.0, -0.0, 0.0}).to(dt), pz = tensor<double>({0.0, -0.0, -0.0, 0.0}).to(dt);
    Tensor gnz = nz.to(Device(kCUDA)), gpz = pz.to(Device(kCUDA));
    EXPECT_TRUE(same(gnz.clamp(0), nz.clamp(0))) << dt;
    EXPECT_TRUE(same(gnz.clamp(-0.0, 0.0), nz.clamp(-0.0, 0.0))) << dt;
    EXPECT_TRUE(same(clamp(gnz, gpz, gpz), clamp(nz, pz, pz))) << dt;
    EXPECT_TRUE(same(maximum(gnz, gpz), maximum(nz, pz))) << dt;
    EXPECT_TRUE(same(minimum(gnz, gpz), minimum(nz, pz))) << dt;
  }
  // integer bounds saturate on the device too
  Tensor u = tensor<int64_t>({1, 2, 250}).to(kUInt8);
  EXPECT_TRUE(same(u.to(Device(kCUDA)).clamp(-1), u.clamp(-1)));
  EXPECT_TRUE(same(u.to(Device(kCUDA)).clamp(-5, 300), u.clamp(-5, 300)));
  // integer arange / linspace filled on the device
  EXPECT_TRUE(same(arange(-2.5, 2.5, 1, gpu.dtype(kInt32)), arange(-2.5, 2.5, 1, kInt32)));
  EXPECT_TRUE(same(arange(-2.5, 2.5, 1, gpu.dtype(kUInt8)), arange(-2.5, 2.5, 1, kUInt8)));
  EXPECT_TRUE(same(arange(0.7, 4.2, 0.9, gpu.dtype(kInt64)), arange(0.7, 4.2, 0.9, kInt64)));
  EXPECT_TRUE(same(linspace(-3, 3, 4, gpu.dtype(kUInt8)), linspace(-3, 3, 4, kUInt8)));
  EXPECT_TRUE(same(linspace(0.9, 3.1, 3, gpu.dtype(kInt64)), linspace(0.9, 3.1, 3, kInt64)));
  // zero gradients of rounding division on the device
  Tensor ga = tensor<float>({1.5f, -2.5f, 3.0f}).to(Device(kCUDA)).requires_grad_();
  Tensor gb = tensor<float>({1.0f, 2.0f, 3.0f}).to(Device(kCUDA)).requires_grad_();
  ga.div(gb, RoundingMode::Floor).sum().backward();
  EXPECT_TRUE(same_bits(ga.grad().cpu(), {0, 0, 0}));
  EXPECT_TRUE(same_bits(gb.grad().cpu(), {0, 0, 0}));
}

// ---- 9. chunk / split edge cases -----------------------------------------------------------

// An in-place op computed in a wider dtype than self writes back through a
// staging tensor; that write-back recorded a copy_ and cut the gradient to
// self's old value (found by the fuzzer: x16.div_(y32) left x16.grad undefined).
TEST(PyTorchDivergence, PromotedInplaceOpKeepsSelfsGradient) {
  Tensor x = tensor({2.0f, -3.0f, 1.0f}).to(kHalf).requires_grad_();
  Tensor y = tensor({0.5f}).requires_grad_();
  Tensor v = x * 1.0;
  v.div_(y);
  (v * tensor({1.0f, 2.0f, 3.0f}).to(kHalf)).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 4, 6}));  // torch: [2, 4, 6]
  EXPECT_EQ(values(y.grad()), (std::vector<double>{4}));  // torch: [4] = -(2 - 6 + 3) / 0.25
  Tensor a = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor b = tensor({3.0}, kDouble).requires_grad_();
  Tensor w = a * 1;
  w.mul_(b);
  w.sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{3, 3}));  // torch: [3, 3]
  EXPECT_EQ(values(b.grad()), (std::vector<double>{3}));     // torch: [3.]
}

// Note [Integer overflow wraps]: integer arithmetic wraps in two's
// complement, as in PyTorch, and is defined behaviour in brisk (-fwrapv; the
// sanitizer build flagged 3 * INT32_MIN in the mul kernel before).
TEST(PyTorchDivergence, IntegerOverflowWraps) {
  const int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  Tensor a = tensor({lo, hi, 7}).to(kInt32);
  EXPECT_EQ((a * 3).to_vector<int32_t>(), (std::vector<int32_t>{lo, 2147483645, 21}));  // torch: [-2147483648, 2147483645, 21]
  EXPECT_EQ((a + 1).to_vector<int32_t>(), (std::vector<int32_t>{lo + 1, lo, 8}));
  EXPECT_EQ((-a).to_vector<int32_t>(), (std::vector<int32_t>{lo, -hi, -7}));           // torch: -INT_MIN == INT_MIN
  Tensor b = tensor({std::numeric_limits<int64_t>::max(), int64_t{1}});
  EXPECT_EQ(b.sum().item<int64_t>(), std::numeric_limits<int64_t>::min());           // torch: -9223372036854775808
  EXPECT_EQ((b * b).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));              // torch: [1, 1]
}

TEST(PyTorchDivergence, ChunkOfEmptyDimGivesAllChunks) {
  auto shapes = [](const std::vector<Tensor>& ts) {
    std::vector<std::vector<int64_t>> r;
    for (const Tensor& t : ts) r.push_back(sizes_of(t));
    return r;
  };
  using S = std::vector<std::vector<int64_t>>;
  // torch.zeros(0, 2).chunk(2) -> 2 chunks of (0, 2); chunk(8) -> 8 (1.13 and 2.x)
  EXPECT_EQ(shapes(zeros({0, 2}).chunk(2)), (S{{0, 2}, {0, 2}}));
  EXPECT_EQ(shapes(zeros({0, 2}).chunk(1)), (S{{0, 2}}));
  EXPECT_EQ(zeros({0, 2}).chunk(8).size(), 8u);
  EXPECT_EQ(shapes(zeros({2, 0}).chunk(3, 1)), (S{{2, 0}, {2, 0}, {2, 0}}));
  // chunks > size: as many chunks as ceil-sized pieces
  EXPECT_EQ(shapes(zeros({1, 2}).chunk(4)), (S{{1, 2}}));
  EXPECT_EQ(shapes(zeros({2, 2}).chunk(3)), (S{{1, 2}, {1, 2}}));
  EXPECT_EQ(shapes(zeros({5, 2}).chunk(4)), (S{{2, 2}, {2, 2}, {1, 2}}));
  EXPECT_EQ(shapes(zeros({7, 2}).chunk(6)), (S{{2, 2}, {2, 2}, {2, 2}, {1, 2}}));
  EXPECT_EQ(shapes(zeros({7, 2}).chunk(3)), (S{{3, 2}, {3, 2}, {1, 2}}));
  EXPECT_EQ(shapes(zeros({7, 2}).chunk(8)).size(), 7u);
  // split: zeros(0).split(k) -> one empty piece; split(0) only on an empty dim
  EXPECT_EQ(shapes(zeros({0}).split(2)), (S{{0}}));
  EXPECT_EQ(shapes(zeros({0}).split(0)), (S{{0}}));
  EXPECT_EQ(shapes(zeros({5}).split(7)), (S{{5}}));
  EXPECT_EQ(shapes(zeros({3}).split(std::vector<int64_t>{0, 3})), (S{{0}, {3}}));
  EXPECT_EQ(shapes(zeros({0}).split(std::vector<int64_t>{})), S{});
  expect_error([] { zeros({5}).split(0); }, {"[split]"});
  expect_error([] { zeros({3}).chunk(0); }, {"[chunk]"});
  // 0-dim inputs are refused ("chunk expects at least a 1-dimensional tensor")
  expect_error([] { scalar_tensor(1.0).chunk(2); }, {"[chunk]", "0-dim"});
  expect_error([] { scalar_tensor(1.0).split(1); }, {"[split]", "0-dim"});
  expect_error([] { scalar_tensor(1.0).split(std::vector<int64_t>{1}); }, {"[split_with_sizes]", "0-dim"});
  // gradients flow through the empty chunks
  Tensor x = zeros({0, 2}).requires_grad_();
  auto parts = x.chunk(2);
  (parts[0].sum() + parts[1].sum()).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(sizes_of(x.grad()), (std::vector<int64_t>{0, 2}));
}

// ---- shape ops on 0-dim tensors -------------------------------------------------------

TEST(PyTorchDivergence, ZeroDimUnbindRollUnflattenRaiseMovedimWorks) {
  // torch.tensor(2.).unbind(0) / .unflatten(0, (1,)) / torch.roll(x, 1, 0):
  //   IndexError "Dimension specified as 0 but tensor has no dimensions" (1.13 and 2.x;
  //   unbind used to read out of bounds in brisk)
  Tensor x = scalar_tensor(2.0);
  expect_error([&] { x.unbind(0); }, {"[unbind]", "no dimensions"});
  expect_error([&] { x.unbind(-1); }, {"[unbind]", "no dimensions"});
  expect_error([&] { x.unflatten(0, {1}); }, {"[unflatten]", "no dimensions"});
  expect_error([&] { x.roll({1}, {0}); }, {"[roll]", "no dimensions"});
  expect_error([&] { x.roll({1}, {-1}); }, {"[roll]", "no dimensions"});
  // torch.roll(x, 1) (no dims) and x.movedim(0, 0) / movedim(-1, 0): tensor(2.)
  EXPECT_TRUE(same_bits(x.roll({1}), {2}));
  EXPECT_EQ(x.roll({1}).dim(), 0);
  for (auto [s, d] : {std::pair<int64_t, int64_t>{0, 0}, {-1, 0}, {0, -1}}) {
    Tensor m = x.movedim(s, d);
    EXPECT_EQ(m.dim(), 0);
    EXPECT_EQ(m.data_ptr(), x.data_ptr());
  }
  expect_error([&] { x.movedim(1, 0); }, {"[movedim]", "out of range"});
}

// ---- integer division of the minimum by -1 ----------------------------------------------

TEST(PyTorchDivergence, IntegerMinimumByMinusOneDoesNotTrap) {
  // min / -1 traps with SIGFPE in hardware (torch itself dies on it); brisk
  // wraps as two's complement does: trunc/floor give min, % and fmod give 0.
  for (ScalarType dt : {kInt64, kInt32}) {
    const int64_t mn = dt == kInt64 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
    // non-contiguous, as the fuzzer's case (the contiguous path did not trap)
    Tensor x = tensor<int64_t>({mn, 7, mn, -7, 5, 0}, {2, 3}).to(dt).t();
    // x = [[mn, -7], [7, 5], [mn, 0]]
    EXPECT_EQ(values(x.div(-1, RoundingMode::Trunc)), (std::vector<double>{double(mn), 7, -7, -5, double(mn), 0}));
    EXPECT_EQ(values(x.div(-1, RoundingMode::Floor)), (std::vector<double>{double(mn), 7, -7, -5, double(mn), 0}));
    EXPECT_EQ(values(x.remainder(-1)), (std::vector<double>(6, 0.0)));
    EXPECT_EQ(values(x.fmod(-1)), (std::vector<double>(6, 0.0)));
    EXPECT_EQ(values(x.fmod(full({3, 2}, -1, dt))), (std::vector<double>(6, 0.0)));
  }
  // A tensor divisor is checked as the kernel sees it: int32 -2^31 is 0 as
  // uint8 (torch.fmod(uint8 tensor, tensor(-2**31, dtype=int32)): ZeroDivisionError)
  Tensor u = tensor<int64_t>({3, 1, 0}).to(kUInt8);
  expect_error([&] { u.fmod(scalar_tensor(int64_t(-2147483648LL), kInt32)); }, {"[fmod]", "ZeroDivisionError"});
  // Nothing is divided in an empty result: torch.remainder(empty int32, 0) is empty
  EXPECT_EQ(zeros({0}, kInt32).remainder(0).numel(), 0);
  EXPECT_EQ(zeros({3, 0}, kInt32).fmod(zeros({1}, kInt32)).numel(), 0);
}

// ---- index ---------------------------------------------------------------------------------

TEST(PyTorchDivergence, IndexAddChecksIndicesOfEmptyOneDimSelf) {
  // torch.zeros(0).index_add_(0, tensor([0]), zeros(1)): "index out of range in self";
  // torch 2.x leaves an empty multi-dim self unchecked (zeros(0, 1).index_add_(0,
  // tensor([0, 0]), zeros(2, 1)) is fine; 1.13 raised there too)
  expect_error([] { zeros({0}).index_add_(0, tensor<int64_t>({0}), zeros({1})); }, {"[index_add_]", "out of bounds"});
  Tensor e = zeros({0, 1});
  e.index_add_(0, tensor<int64_t>({0, 0}), zeros({2, 1}));
  EXPECT_EQ(e.numel(), 0);
}

TEST(PyTorchDivergence, BoolIndexIsACopy) {
  // a = torch.zeros(2, 3); a[True].fill_(5); a[:, True].fill_(5); a[torch.tensor(True)].fill_(5)
  // all leave a alone: bools are advanced indices (1.13 and 2.x)
  Tensor a = zeros({2, 3});
  for (auto idx : {std::vector<TensorIndex>{true}, {Slice(), true}, {scalar_tensor(true)}, {true, Slice(), true}}) {
    Tensor v = a.index(idx);
    EXPECT_NE(v.data_ptr(), a.data_ptr());
    v.fill_(5);
    EXPECT_EQ(values(a), std::vector<double>(6, 0.0));
  }
  EXPECT_EQ(sizes_of(a.index({Slice(), true})), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(sizes_of(a.index({false})), (std::vector<int64_t>{0, 2, 3}));
  // The gradient of the copy still reaches a (IndexBackward0 in torch), and an
  // in-place change of a afterwards does not touch it:
  // x = torch.zeros(2, 3, requires_grad=True); b = x * 1; c = b[True]; d = c * 2;
  // b.mul_(3); d.sum().backward(): x.grad all 2
  Tensor x = zeros({2, 3}).requires_grad_();
  Tensor b = x * 1;
  Tensor d = b.index({true}) * 2;
  b.mul_(3);
  d.sum().backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>(6, 2.0));
  // index_put_ through bools writes into a; with other indices the values must
  // have a's dtype (torch: "Index put requires the source and destination dtypes
  // match"), a lone bool is torch's set_item fast path (converts; False does nothing)
  a.index_put_({0, true}, tensor<float>({1, 2, 3}));
  EXPECT_EQ(values(a), (std::vector<double>{1, 2, 3, 0, 0, 0}));
  expect_error([&] { a.index_put_({0, true}, tensor<double>({1, 2, 3}, kDouble)); }, {"[index_put_]", "dtype"});
  a.index_put_({true}, tensor<double>({7, 8, 9}, kDouble));
  EXPECT_EQ(values(a), (std::vector<double>{7, 8, 9, 7, 8, 9}));
  Tensor leaf = zeros({2}).requires_grad_();
  const uint32_t v0 = leaf._version();
  leaf.index_put_({false}, 1.0);  // torch: x[False] = 1 is a no-op even on a leaf
  EXPECT_EQ(leaf._version(), v0);
}

TEST(PyTorchDivergence, MaskedFillBroadcastsSelf) {
  // torch.tensor([1., 2., 3.]).masked_fill(tensor([[T, F, F], [F, F, T]]), -1):
  //   [[-1, 2, 3], [1, 2, -1]] (1.13 and 2.x)
  Tensor a = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor m = tensor<bool>({true, false, false, false, false, true}, {2, 3});
  Tensor r = a.masked_fill(m, -1);
  EXPECT_EQ(sizes_of(r), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(same_bits(r, {-1, 2, 3, 1, 2, -1}));
  r.sum().backward();
  EXPECT_TRUE(same_bits(a.grad(), {1, 2, 1}));  // torch: [1., 2., 1.]
  EXPECT_TRUE(same_bits(a, {1, 2, 3}));
}

TEST(PyTorchDivergence, ScatterScalarValueIsChecked) {
  // torch.zeros(3, dtype=uint8).scatter(0, tensor([1]), 300): "value cannot be converted";
  // with an empty index nothing is converted (fine), 1.13 and 2.x
  expect_error([] { zeros({3}, kUInt8).scatter(0, tensor<int64_t>({1}), Scalar(300)); }, {"[scatter]", "300"});
  expect_error([] { zeros({3}, kHalf).scatter_(0, tensor<int64_t>({1}), Scalar(1e10)); }, {"[scatter_]", "float16"});
  EXPECT_EQ(values(zeros({3}, kUInt8).scatter(0, zeros({0}, kInt64), Scalar(300))), std::vector<double>(3, 0.0));
}

// ---- writes into expanded and empty tensors -----------------------------------------------

TEST(PyTorchDivergence, InPlaceWritesIntoExpandedTensors) {
  // torch allows writes of one value into overlapping memory (1.13 and 2.x):
  // b = torch.tensor([1., 2., 3.])
  Tensor b = tensor<float>({1, 2, 3});
  b.expand({2, 3}).zero_();  // b = [0, 0, 0]
  EXPECT_TRUE(same_bits(b, {0, 0, 0}));
  b = tensor<float>({1, 2, 3});
  b.expand({2, 3}).fill_(4);  // [4, 4, 4]
  EXPECT_TRUE(same_bits(b, {4, 4, 4}));
  // masked_fill_: a location is written when any alias is masked: [9, 2, 9]
  b = tensor<float>({1, 2, 3});
  b.expand({2, 3}).masked_fill_(tensor<bool>({true, false, false, false, false, true}, {2, 3}), 9);
  EXPECT_TRUE(same_bits(b, {9, 2, 9}));
  // tril_/triu_ zero what is outside the band, in any alias:
  // b.unsqueeze(1).expand(3, 3).tril_() -> b = [0, 0, 3]; b.expand(3, 3).triu_(1) -> [0, 0, 0]
  b = tensor<float>({1, 2, 3});
  b.unsqueeze(1).expand({3, 3}).tril_();
  EXPECT_TRUE(same_bits(b, {0, 0, 3}));
  b = tensor<float>({1, 2, 3});
  b.expand({3, 3}).triu_(1);
  EXPECT_TRUE(same_bits(b, {0, 0, 0}));
  // arithmetic in place still refuses (torch: "unsupported operation: more than one element ...")
  expect_error([] { zeros({3}).expand({2, 3}).add_(1); }, {"[add_]", "single memory location"});
  // > 3 dims whose batch dims are not laid out as matrices: torch computes
  // apart and copies back, which refuses the overlap
  Tensor e = ones({2, 3}).expand({2, 2, 2, 3}).unfold(3, 2, 1);
  expect_error([&] { e.tril_(); }, {"[tril_]", "single memory location"});
  // An empty tensor has no overlap: torch.zeros(1, 0).expand(2, 0).mul_(2) is fine
  zeros({1, 0}).expand({2, 0}).mul_(2);
}

TEST(PyTorchDivergence, InPlaceOnEmptyTensorsIsStillAnInPlaceOp) {
  // torch.zeros(0, requires_grad=True).zero_() / .fill_(1) / .copy_(zeros(0)):
  //   "a leaf Variable that requires grad is being used in an in-place operation."
  Tensor leaf = zeros({0}).requires_grad_();
  expect_error([&] { leaf.zero_(); }, {"leaf"});
  expect_error([&] { leaf.fill_(1); }, {"leaf"});
  expect_error([&] { leaf.copy_(zeros({0})); }, {"leaf"});
  expect_error([&] { leaf.copy_(leaf); }, {"leaf"});
  // The version moves, so a saved empty tensor that was written fails at
  // backward: x = torch.zeros(4, 0, requires_grad=True); y = x + 0; z = y.pow(2);
  // y.zero_(); z.sum().backward(): "... modified by an inplace operation"
  for (int how = 0; how < 3; ++how) {
    Tensor x = zeros({4, 0}).requires_grad_();
    Tensor y = x.add(0);
    Tensor z = y.pow(2);  // saves y
    const uint32_t v = y._version();
    if (how == 0) y.zero_();
    if (how == 1) y.fill_(2);
    if (how == 2) y.copy_(zeros({4, 0}));
    EXPECT_GT(y._version(), v);
    expect_error([&] { z.sum().backward(); }, {"modified by an inplace operation"});
  }
  // copy_ still checks broadcasting: torch.zeros(2, 0, 3, 1).copy_(zeros(2, 0, 3, 2)):
  //   "output with shape [2, 0, 3, 1] doesn't match the broadcast shape [2, 0, 3, 2]"
  expect_error([] { zeros({2, 0, 3, 1}).copy_(zeros({2, 0, 3, 2})); }, {"[copy_]"});
}

// ---- scalar range checks as torch 2.x ------------------------------------------------------

TEST(PyTorchDivergence, ScalarRangeChecksFollowTorch2) {
  // One CPU element of a 16-bit float takes an out-of-range value as inf
  // (torch 2.x: torch.zeros(1, dtype=half).fill_(1e5) -> inf, torch.full((1,), 1e40,
  // dtype=bfloat16) -> inf, torch.scalar_tensor(1e5, dtype=half) -> inf, x[0] = 1e5
  // on a 1-D half x); more elements raise (torch.zeros(2, dtype=half).fill_(1e5))
  EXPECT_TRUE(same_bits(zeros({1}, kHalf).fill_(1e5), {kInf}));
  EXPECT_TRUE(same_bits(full({1}, 1e40, kBFloat16), {kInf}));
  EXPECT_TRUE(same_bits(scalar_tensor(-1e5, kHalf), {-kInf}));
  EXPECT_TRUE(same_bits(full_like(zeros({}, kHalf), int64_t(1) << 31), {kInf}));
  Tensor h = zeros({2}, kHalf);
  h.index_put_({0}, 1e5);
  EXPECT_TRUE(same_bits(h, {kInf, 0}));
  expect_error([] { zeros({2}, kHalf).fill_(1e5); }, {"[fill_]", "float16"});
  expect_error([] { full({4, 3}, 1e40, kBFloat16); }, {"[full]", "bfloat16"});
  expect_error([] { zeros({2, 3}, kHalf).index_put_({0}, 1e5); }, {"[fill_]", "float16"});
  expect_error([] { zeros({2}, kHalf).index_put_({tensor<int64_t>({0})}, 1e5); }, {"[index_put_]", "float16"});
  expect_error([] { zeros({1}, kFloat).fill_(1e40); }, {"[fill_]", "float32"});  // only 16-bit floats
  // pad converts its value only when it pads: F.pad(ones(2), [-1, 0], value=1e40) -> [1.]
  EXPECT_TRUE(same_bits(pad(ones({2}), {-1, 0}, 1e40), {1}));
  expect_error([] { pad(ones({2}), {1, 0}, 1e40); }, {"[pad]", "float32"});
  // ... and crops before padding: F.pad(zeros(0, 2), [0, 0, 1, -1]): "narrow(): length must be non-negative."
  expect_error([] { pad(zeros({0, 2}), {0, 0, 1, -1}); }, {"[pad]", "crops"});
  // linspace converts only what it uses: linspace(1e40, 3, 0) -> [], linspace(-3, 1e40, 1) -> [-3.],
  // linspace(-2**40, 3, 1, dtype=half) -> [-inf] (2.x)
  EXPECT_EQ(linspace(1e40, 3, 0).numel(), 0);
  EXPECT_TRUE(same_bits(linspace(-3, 1e40, 1), {-3}));
  EXPECT_TRUE(same_bits(linspace(-1099511627776.0, 3, 1, kHalf), {-kInf}));
  expect_error([] { linspace(1e40, 3, 2); }, {"[linspace]"});
  // clamp with a NaN bound gives NaN without converting the other bound:
  // torch.clamp(tensor([1, 2]), 1e40, nan) -> [nan, nan]
  EXPECT_TRUE(same_bits(tensor<int64_t>({1, 2}).clamp(1e40, kNan), {kNan, kNan}));
}

// ---- clamp gradients -------------------------------------------------------------------------

TEST(PyTorchDivergence, ClampGradientsAtTiesAndNan) {
  // torch 2.x conventions (Note [clamp gradients]); 1.13 gave the input the
  // whole gradient at ties. float64, x, lo, hi = (values below):
  //   torch.clamp(x, lo, hi) = [0, -1, 0, 1, 0, nan, nan, nan, nan]
  //   x.grad  = [1, .5, .5, .5, 0, 1, 1, 1, 0]
  //   lo.grad = [0, .5, 0, 0, 0, 0, 0, 0, 0]
  //   hi.grad = [0, 0, .5, .5, 1, 0, 1, 0, 0]
  Tensor x = tensor<double>({0, -1, 0, 1, 0.5, kNan, kNan, -1, 0}, kDouble).requires_grad_();
  Tensor lo = tensor<double>({0, -1, -1, 0, 1, 0, 1, kNan, 1}, kDouble).requires_grad_();
  Tensor hi = tensor<double>({0, 0, 0, 1, 0, 1, -1, 0, kNan}, kDouble).requires_grad_();
  Tensor y = clamp(x, lo, hi);
  EXPECT_TRUE(same_bits(y, {0, -1, 0, 1, 0, kNan, kNan, kNan, kNan}));
  y.sum().backward();
  EXPECT_TRUE(same_bits(x.grad(), {1, .5, .5, .5, 0, 1, 1, 1, 0}));
  EXPECT_TRUE(same_bits(lo.grad(), {0, .5, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(same_bits(hi.grad(), {0, 0, .5, .5, 1, 0, 1, 0, 0}));
  // One tensor bound (as maximum/minimum): x = [0, 1, -1, nan, .5], bound = [0, 0, 0, 0, nan]
  //   clamp(x, min=lo): x.grad [.5, 1, 0, 1, 1], lo.grad [.5, 0, 1, 1, 1]
  //   clamp(x, max=hi): x.grad [.5, 0, 1, 1, 1], hi.grad [.5, 1, 0, 1, 1]
  for (bool is_min : {true, false}) {
    Tensor x1 = tensor<double>({0, 1, -1, kNan, .5}, kDouble).requires_grad_();
    Tensor b = tensor<double>({0, 0, 0, 0, kNan}, kDouble).requires_grad_();
    Tensor y1 = is_min ? clamp(x1, b, Tensor()) : clamp(x1, Tensor(), b);
    EXPECT_TRUE(same_bits(y1, {0, is_min ? 1.0 : 0.0, is_min ? 0.0 : -1.0, kNan, kNan}));
    y1.sum().backward();
    EXPECT_TRUE(same_bits(x1.grad(), {.5, is_min ? 1.0 : 0.0, is_min ? 0.0 : 1.0, 1, 1}));
    EXPECT_TRUE(same_bits(b.grad(), {.5, is_min ? 0.0 : 1.0, is_min ? 1.0 : 0.0, 1, 1}));
  }
  // Scalar bounds pass the gradient strictly inside (lo, hi):
  // torch.clamp(x, 0., 1.) for x = [-1, 0, .5, 1, 2, nan]: x.grad [0, 0, 1, 0, 0, 0], clamp_ too
  Tensor xs = tensor<double>({-1, 0, .5, 1, 2, kNan}, kDouble).requires_grad_();
  xs.clamp(0.0, 1.0).sum().backward();
  EXPECT_TRUE(same_bits(xs.grad(), {0, 0, 1, 0, 0, 0}));
  Tensor xi = tensor<double>({-1, 0, .5, 1, 2, kNan}, kDouble).requires_grad_();
  xi.mul(1).clamp_(0.0, 1.0).sum().backward();
  EXPECT_TRUE(same_bits(xi.grad(), {0, 0, 1, 0, 0, 0}));
}

// ---- ternary dtype rules -------------------------------------------------------------------

TEST(PyTorchDivergence, LerpAddcdivAndAlphaDtypeRules) {
  // lerp: a weight with dims must have self's dtype ("expected dtype float for
  // `weight` but got dtype double"); a 0-dim weight is promoted (2.x:
  // torch.lerp(tensor([1, 2]), tensor([3, 5]), tensor(0.5)) -> [2., 3.5])
  expect_error([] { lerp(ones({2}), zeros({2}), full({2}, 0.5, kDouble)); }, {"[lerp]", "weight"});
  expect_error([] { ones({2}).lerp_(zeros({2}), full({2}, 1, kInt64)); }, {"[lerp_]", "weight"});
  EXPECT_TRUE(same_bits(lerp(tensor<int64_t>({1, 2}), tensor<int64_t>({3, 5}), scalar_tensor(0.5)), {2, 3.5}));
  EXPECT_EQ(lerp(ones({2}), zeros({2}), scalar_tensor(0.25, kDouble)).dtype(), kFloat);
  // addcdiv of two integral tensors: "Integer division with addcdiv is no longer supported"
  // even into a float self; one float tensor is fine
  expect_error([] { addcdiv(ones({2}), ones({2}, kInt64), ones({2}, kInt64)); }, {"[addcdiv]", "integer division"});
  expect_error([] { addcdiv(ones({2}), ones({2}, kBool), ones({2}, kUInt8)); }, {"[addcdiv]", "integer division"});
  EXPECT_TRUE(same_bits(addcdiv(ones({2}), ones({2}, kInt64), full({2}, 2.0)), {1.5, 1.5}));
  // addcdiv groups (value * t1) / t2 as torch's CPU kernel:
  // torch.addcdiv(tensor([inf, 1.]), tensor([3e38, 1.]), tensor([0.049, 0.]), value=0.) -> [inf, nan]
  EXPECT_TRUE(same_bits(addcdiv(tensor<float>({INFINITY, 1}), tensor<float>({3e38f, 1}), tensor<float>({0.049f, 0}), 0.0),
                        {kInf, kNan}));
  // A bool alpha needs a bool result: "Boolean alpha only supported for Boolean results."
  expect_error([] { add(ones({2}), ones({2}), true); }, {"[add]", "Boolean alpha"});
  expect_error([] { sub(ones({2}, kHalf), ones({2}, kUInt8), true); }, {"[sub]", "Boolean alpha"});
  expect_error([] { ones({2}, kHalf).add_(ones({2}, kUInt8), true); }, {"[add_]", "Boolean alpha"});
  EXPECT_EQ(values(add(ones({2}, kBool), zeros({2}, kBool), true)), (std::vector<double>{1, 1}));
  // sub keeps the sign of zero: torch.sub(tensor([-0.]), 0, alpha=0.) -> [-0.]
  EXPECT_TRUE(same_bits(sub(tensor<float>({-0.0f}), Scalar(0), 0.0), {-0.0}));
}

// ---- promotion: 16-bit floats with a scalar operand, rdiv, pow ----------------------------

TEST(PyTorchDivergence, ReducedFloatTimesScalarComputesInFloat) {
  // torch 2.x (Note [Reduced-float scalar operands]); 1.13 rounded the scalar to the dtype:
  //   h = torch.tensor([3., 1e-3, 2.5], dtype=half)
  //   h * 0.3  -> [0.89990234375, 0.0003001689910888672, 0.75]
  //   h * 1e5  -> [inf, 100.0625, inf]
  //   h / 0.3  -> [10.0, 0.00333404541015625, 8.3359375]
  //   div(h, 0.3, 'trunc') -> [10, 0, 8]; 'floor' -> [9, 0, 8]
  Tensor h = tensor<double>({3.0, 1e-3, 2.5}, kDouble).to(kHalf);
  EXPECT_TRUE(same_bits(h * 0.3, {0.89990234375, 0.0003001689910888672, 0.75}));
  EXPECT_TRUE(same_bits(h * 1e5, {kInf, 100.0625, kInf}));
  EXPECT_TRUE(same_bits(h / 0.3, {10.0, 0.00333404541015625, 8.3359375}));
  EXPECT_TRUE(same_bits(h.div(0.3, RoundingMode::Trunc), {10, 0, 8}));
  EXPECT_TRUE(same_bits(h.div(0.3, RoundingMode::Floor), {9, 0, 8}));
  Tensor hi = h.clone();
  hi.mul_(scalar_tensor(1e5, kDouble));  // a one-element CPU tensor counts as a scalar
  EXPECT_TRUE(same_bits(hi, {kInf, 100.0625, kInf}));
  // A 0-dim int64 operand: torch.mul(tensor(1.1920928955078125e-07, dtype=half), tensor(-2147483649)) -> -256.
  EXPECT_TRUE(same_bits(mul(scalar_tensor(1.1920928955078125e-07, kHalf), scalar_tensor(int64_t(-2147483649LL))), {-256}));
  // bfloat16: b * 0.3 -> [0.8984375, 0.0002994537353515625, 0.75]; with the scalar first it
  // is converted to bfloat16 (torch.tensor(0.3, dtype=double) * b -> [0.90234375, ...])
  Tensor b = tensor<double>({3.0, 1e-3, 2.5}, kDouble).to(kBFloat16);
  EXPECT_TRUE(same_bits(b * 0.3, {0.8984375, 0.0002994537353515625, 0.75}));
  EXPECT_TRUE(same_bits(mul(scalar_tensor(0.3, kDouble), b), {0.90234375, 0.000301361083984375, 0.75}));
  // An in-place op whose result cannot be cast to self still raises:
  // torch.ones(2, dtype=uint8).mul_(torch.tensor(2., dtype=half)): "result type Half can't be cast"
  expect_error([] { ones({2}, kUInt8).mul_(scalar_tensor(2.0, kHalf)); }, {"[mul_]", "can't be cast"});
}

TEST(PyTorchDivergence, ScalarDividedByTensorIsReciprocalTimesScalar) {
  // Python's s / t is t.reciprocal() * s: 0 / tensor([1e-40, 2., 0.]) -> [nan, 0., nan]
  // (1 / 1e-40 overflows float32 to inf)
  EXPECT_TRUE(same_bits(Scalar(0) / tensor<float>({1e-40f, 2, 0}), {kNan, 0, kNan}));
  // 3 / tensor([7.]) -> 0.4285714626312256 (float32), and the gradient still flows
  Tensor t = tensor<float>({7}).requires_grad_();
  Tensor r = Scalar(3) / t;
  EXPECT_TRUE(same_bits(r, {0.4285714626312256}));
  r.sum().backward();
  EXPECT_TRUE(close(t.grad(), tensor<float>({-3.0f / 49})));
}

TEST(PyTorchDivergence, PowSpecialCasesAsTorch) {
  // x ** 0.5 is sqrt and x ** -0.5 rsqrt in torch (1.13 and 2.x):
  //   torch.pow(tensor([-0., -inf, 4., -1.]), 0.5) -> [-0., nan, 2., nan]
  //   torch.pow(tensor([-0., -inf, 4.]), -0.5)     -> [-inf, nan, 0.5]
  EXPECT_TRUE(same_bits(tensor<float>({-0.0f, -INFINITY, 4, -1}).pow(0.5), {-0.0, kNan, 2, kNan}));
  EXPECT_TRUE(same_bits(tensor<float>({-0.0f, -INFINITY, 4}).pow(-0.5), {-kInf, kNan, 0.5}));
  // An exponent float32 cannot hold keeps its parity: d/dx x ** 2147483648 at -2 is
  // 2^31 * (-2)^(2^31 - 1) = -inf (torch: tensor([-inf]))
  Tensor x = tensor<float>({-2}).requires_grad_();
  x.pow(int64_t(2147483648LL)).sum().backward();
  EXPECT_TRUE(same_bits(x.grad(), {-kInf}));
  // The exponent's gradient logs an integer base in the result dtype:
  // torch.pow(tensor([3]), e) for e = tensor([0.4199870992782837], dtype=float64): e.grad 1.7427264566199798
  Tensor e = tensor<double>({0.4199870992782837}, kDouble).requires_grad_();
  pow(tensor<int64_t>({3}), e).sum().backward();
  EXPECT_TRUE(close(e.grad(), tensor<double>({1.7427264566199798}, kDouble), 1e-14, 0));
  // A bool tensor to a bool power stays bool (2.x): torch.pow(tensor([True, False]), False) -> [True, True]
  Tensor bt = tensor<bool>({true, false});
  EXPECT_EQ(bt.pow(false).dtype(), kBool);
  EXPECT_EQ(values(bt.pow(false)), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(bt.pow(true)), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(bt.clone().pow_(false)), (std::vector<double>{1, 1}));
  // sign_ of a bool tensor leaves it alone (torch.tensor([True, False]).sign_())
  Tensor bs = tensor<bool>({true, false});
  bs.sign_();
  EXPECT_EQ(values(bs), (std::vector<double>{1, 0}));
}

// The exponent's gradient at base 0 is g times the masked derivative, as torch
// groups it: an infinite g there gives NaN, not 0 (difffuzz chain:pow:grad-nan;
// torch 1.13 and 2.15: e = tensor(0.5); tensor([0., 2.]).pow(e).backward(tensor([inf, 1.]))
// -> e.grad nan; tensor([0.]).pow(e).pow(-0.5) = [inf], its sum's backward -> e.grad nan).
TEST(PyTorchDivergence, PowExponentGradientAtBaseZeroTimesInfinity) {
  Tensor e = scalar_tensor(0.5, kDouble).requires_grad_();
  tensor<double>({0.0, 2.0}, kDouble).pow(e).backward(tensor<double>({kInf, 1.0}, kDouble));
  EXPECT_TRUE(std::isnan(e.grad().item<double>()));
  Tensor e2 = scalar_tensor(0.5, kDouble).requires_grad_();
  Tensor z = tensor<double>({0.0}, kDouble).pow(e2).pow(-0.5);
  EXPECT_TRUE(same_bits(z, {kInf}));
  z.sum().backward();
  EXPECT_TRUE(std::isnan(e2.grad().item<double>()));
  // a finite g keeps 0 at base 0: tensor([0., 2.]).pow(e).backward(tensor([3., 1.])) -> e.grad log(2) * sqrt(2)
  Tensor e3 = scalar_tensor(0.5, kDouble).requires_grad_();
  tensor<double>({0.0, 2.0}, kDouble).pow(e3).backward(tensor<double>({3.0, 1.0}, kDouble));
  EXPECT_NEAR(e3.grad().item<double>(), std::log(2.0) * std::sqrt(2.0), 1e-15);
}

TEST(PyTorchDivergence, BackwardFormulasAtZeroDivisorsAndOrigins) {
  // atan2's gradient is 0 where x^2 + y^2 is 0 (torch 2.x; 1.13 gave nan):
  //   a = [0, -0, 1e-200, 1], b = [0, 0, 1e-200, 0] (float64)
  //   a.grad [0, 0, 0, 0], b.grad [-0, 0, -0, -1]
  Tensor a = tensor<double>({0, -0.0, 1e-200, 1}, kDouble).requires_grad_();
  Tensor b = tensor<double>({0, 0, 1e-200, 0}, kDouble).requires_grad_();
  atan2(a, b).sum().backward();
  EXPECT_TRUE(same_bits(a.grad(), {0, 0, 0, 0}));
  EXPECT_TRUE(same_bits(b.grad(), {-0.0, 0, -0.0, -1}));
  // div's second derivative at a zero divisor, grouped as torch groups it:
  //   x = tensor(-2.), y = tensor(0.); gx, gy = grad(x / y, [x, y], create_graph=True)
  //   gx = inf, gy = inf; grad(gy, [x, y]) = (-inf, -inf)
  Tensor x = scalar_tensor(-2.0).requires_grad_();
  Tensor y = scalar_tensor(0.0).requires_grad_();
  auto g = autograd::grad({x / y}, {x, y}, {}, /*retain_graph=*/true, /*create_graph=*/true);
  EXPECT_TRUE(same_bits(g[0], {kInf}));
  EXPECT_TRUE(same_bits(g[1], {kInf}));
  auto g2 = autograd::grad({g[1]}, {x, y});
  EXPECT_TRUE(same_bits(g2[0], {-kInf}));
  EXPECT_TRUE(same_bits(g2[1], {-kInf}));
  // index_put_'s gradient zeroes the written positions (an inf gradient there is
  // 0, not nan): v = x * 1; v[mask] = -inf; square(v).sum().backward(): x.grad [0, 0]
  Tensor xp = tensor<float>({0.5f, -0.25f}).requires_grad_();
  Tensor v = xp * 1;
  v.index_put_({tensor<bool>({true, true})}, -INFINITY);
  v.square().sum().backward();
  EXPECT_TRUE(same_bits(xp.grad(), {0, 0}));
}

// ---- layouts, squeeze, structural zeros, gradients torch gets wrong ---------------------

TEST(PyTorchDivergence, ElementwiseOutputLayoutAsPyTorch) {
  // Note [Output layout]. torch 2.x (1.13 the same), a = torch.zeros(4096).as_strided(...):
  auto strided = [](std::vector<int64_t> sz, std::vector<int64_t> st, ScalarType t = kFloat) {
    return zeros({4096}, t).as_strided(sz, st, 0);
  };
  // (3, 1, 2) strides (1, 3, 3): a.log1p() and a * 2.0 keep (1, 3, 3), and
  // a.log1p().view(2, 1, 3) raises "view size is not compatible ..."
  Tensor a = strided({3, 1, 2}, {1, 3, 3});
  EXPECT_EQ(strides_of(a.log1p()), (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(strides_of(a * 2.0), (std::vector<int64_t>{1, 3, 3}));
  expect_error([&] { a.log1p().view({2, 1, 3}); }, {"[view]"});
  // (2, 1) strides (1, 100) is contiguous: log1p and a + a give (1, 1); with a
  // Scalar the dims are ranked by stride: a * 2.0 gives (1, 2)
  Tensor c = strided({2, 1}, {1, 100});
  EXPECT_EQ(strides_of(c.log1p()), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(strides_of(c + c), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(strides_of(c * 2.0), (std::vector<int64_t>{1, 2}));
  // Inputs are ranked after the cast to the common dtype:
  //   a (3, 2, 1, 1) strides (4, 1, 4, 4), b strides (4, 2, 24, 4):
  //   (a + b.double()).stride() -> (2, 1, 1, 1), (a + b).stride() -> (2, 1, 6, 2)
  Tensor p = strided({3, 2, 1, 1}, {4, 1, 4, 4}), q = strided({3, 2, 1, 1}, {4, 2, 24, 4});
  EXPECT_EQ(strides_of(p + q.to(kDouble)), (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_EQ(strides_of(p + q), (std::vector<int64_t>{2, 1, 6, 2}));
  // channels_last inputs give channels_last: (3, 2, 1, 3) strides (6, 1, 1, 2) -> log1p (6, 1, 6, 2)
  EXPECT_EQ(strides_of(strided({3, 2, 1, 3}, {6, 1, 1, 2}).log1p()), (std::vector<int64_t>{6, 1, 6, 2}));
  // a transpose stays a transpose: torch.zeros(3, 2).t() + 1, + zeros(3), where(x > 0, x, 1.) -> (1, 2)
  Tensor t = zeros({3, 2}).t();
  EXPECT_EQ(strides_of(t + 1), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(strides_of(t + zeros({3})), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(strides_of(where(t > 0, t, Scalar(1.0))), (std::vector<int64_t>{1, 2}));
}

TEST(PyTorchDivergence, SqueezeDimOfZeroDimTensorIsChecked) {
  // torch.tensor(1.).squeeze(5): "Dimension out of range (expected to be in range of [-1, 0], but got 5)"
  Tensor x = scalar_tensor(1.0);
  expect_error([&] { x.squeeze(5); }, {"[squeeze]", "out of range"});
  expect_error([&] { x.squeeze(-2); }, {"[squeeze]", "out of range"});
  EXPECT_EQ(x.squeeze(0).dim(), 0);
  EXPECT_EQ(x.squeeze(-1).dim(), 0);
}

TEST(PyTorchDivergence, AbsSecondDerivativeIsAStructuralZero) {
  // abs's formula is grad * x.sgn(), and sgn's derivative is an "efficient zero" in torch:
  //   x = tensor([1.5, -2.], float64), b = tensor([False, False])
  //   g = grad((x / b).abs().sum(), x, create_graph=True) -> [inf, -inf]; grad(g.sum(), x) -> [0, 0]
  Tensor x = tensor<double>({1.5, -2.0}, kDouble).requires_grad_();
  Tensor b = tensor<bool>({false, false});
  auto g = autograd::grad({(x / b).abs().sum()}, {x}, {}, true, true);
  EXPECT_TRUE(same_bits(g[0], {kInf, -kInf}));
  EXPECT_TRUE(same_bits(autograd::grad({g[0].sum()}, {x})[0], {0, 0}));
  // g = grad(x.abs().sum(), x, create_graph=True) requires grad; grad(g.sum(), x) -> [0, 0]
  auto g1 = autograd::grad({x.abs().sum()}, {x}, {}, true, true);
  EXPECT_TRUE(g1[0].requires_grad());
  EXPECT_TRUE(same_bits(autograd::grad({g1[0].sum()}, {x})[0], {0, 0}));
  // sign itself has an ordinary zero derivative: (x / 0.).sign().sum().backward() -> x.grad [nan, nan];
  // (x / 0.).abs(): [inf, -inf]
  Tensor y = tensor<double>({1.5, -2.0}, kDouble).requires_grad_();
  (y / 0.0).sign().sum().backward();
  EXPECT_TRUE(same_bits(y.grad(), {kNan, kNan}));
  Tensor z = tensor<double>({1.5, -2.0}, kDouble).requires_grad_();
  (z / 0.0).abs().sum().backward();
  EXPECT_TRUE(same_bits(z.grad(), {kInf, -kInf}));
}

TEST(PyTorchDivergence, ReluSecondDerivativeAtAnInfinitePowIsTheLimit) {
  // relu's backward's derivative in its input is zero by construction (a structural zero, as
  // abs's above); it used to be a materialized zero that met pow's infinite factor (difffuzz
  // seed 179 case 8849). torch 2.15:
  //   x = tensor([inf, 2.], float64); e = tensor([0.425, 0.425], float64, requires_grad)
  //   v = x.pow(e); loss = (v * 0.25).sum() + (r(v) * 0.5).sum()
  //   g = grad(loss, e, create_graph=True); grad(g.sum(), e)
  //   r = identity or relu: g [inf, 0.6979502587495867], gg [inf, 0.48378225402336034]
  //   loss = x.pow(e).relu().sum(): g [inf, 0.930600344999449], gg [inf, 0.6450430053644804]
  for (int k = 0; k < 3; ++k) {
    Tensor x = tensor<double>({kInf, 2.0}, kDouble);
    Tensor e = tensor<double>({0.425, 0.425}, kDouble).requires_grad_();
    Tensor v = x.pow(e);
    Tensor loss = k == 2 ? v.relu().sum() : (v * 0.25).sum() + ((k == 1 ? v.relu() : v) * 0.5).sum();
    auto g = autograd::grad({loss}, {e}, {}, true, true);
    auto gg = autograd::grad({g[0].sum()}, {e});
    const std::vector<double> g2 = values(g[0]), gg2 = values(gg[0]);
    EXPECT_EQ(g2[0], kInf) << k;
    EXPECT_EQ(gg2[0], kInf) << k;
    EXPECT_NEAR(g2[1], k == 2 ? 0.930600344999449 : 0.6979502587495867, 1e-14) << k;
    EXPECT_NEAR(gg2[1], k == 2 ? 0.6450430053644804 : 0.48378225402336034, 1e-14) << k;
  }
  // relu's first and second derivatives elsewhere are unchanged: x = [-1., 0., 2.] requires grad,
  // g = grad(x.relu().pow(2).sum(), x, create_graph=True) -> [0, 0, 4]; grad(g.sum(), x) -> [0, 0, 2]
  Tensor x = tensor<double>({-1.0, 0.0, 2.0}, kDouble).requires_grad_();
  auto g = autograd::grad({x.relu().pow(2).sum()}, {x}, {}, true, true);
  EXPECT_TRUE(same_bits(g[0], {0, 0, 4}));
  EXPECT_TRUE(same_bits(autograd::grad({g[0].sum()}, {x})[0], {0, 0, 2}));
  // only relu's zero reaches x: a zero gradient with a graph, as torch's
  //   g = grad(x.relu().sum(), x, create_graph=True) -> [0, 0, 1]
  //   gg = grad(g.sum(), x, create_graph=True) -> [0, 0, 0] (requires grad); grad(gg.sum(), x) -> [0, 0, 0]
  auto h = autograd::grad({x.relu().sum()}, {x}, {}, true, true);
  EXPECT_TRUE(same_bits(h[0], {0, 0, 1}));
  auto hh = autograd::grad({h[0].sum()}, {x}, {}, true, true);
  EXPECT_TRUE(same_bits(hh[0], {0, 0, 0}));
  ASSERT_TRUE(hh[0].requires_grad());
  EXPECT_TRUE(same_bits(autograd::grad({hh[0].sum()}, {x})[0], {0, 0, 0}));
  // relu's zero is a materialized one, as torch's zeros_like(grad): met by an infinite factor
  // it is NaN in both (a = [1, -1] requires grad):
  //   grad(grad(relu(a * inf).sum(), a, create_graph=True)[0].sum(), a) -> [nan, nan]
  //   a = [1, 2]: the same for relu(a / 0.) -> [nan, nan]
  for (int k = 0; k < 2; ++k) {
    Tensor a = (k == 0 ? tensor<double>({1.0, -1.0}, kDouble) : tensor<double>({1.0, 2.0}, kDouble)).requires_grad_();
    Tensor w = k == 0 ? a * tensor<double>({kInf, kInf}, kDouble) : a / 0.0;
    auto ga = autograd::grad({w.relu().sum()}, {a}, {}, true, true);
    const std::vector<double> gg = values(autograd::grad({ga[0].sum()}, {a})[0]);
    EXPECT_TRUE(std::isnan(gg[0]) && std::isnan(gg[1])) << k << ": " << gg[0] << " " << gg[1];
  }
}

TEST(PyTorchDivergence, AbsSecondDerivativeThroughMatrixProductsStaysZero) {
  // abs's zero second derivative met by an infinite operand of a matrix product: torch 2.15's
  // matmul/mv (and F.bilinear) backward multiply its "efficient zero" by inf (NaN), while its
  // elementwise (a * b).sum(1) keeps the exact value (difffuzz seed 31 case 8683, seed 23 case 6897):
  //   a = tensor([[1., 2.], [inf, 3.]], float64, requires_grad); b = tensor([0.5, 2.], requires_grad)
  //   g = grad(f(a, b).abs().sum(), [a, b], create_graph=True); grad(g[0].sum(), b)
  //   f = matmul, mv -> [nan, 2.]; f = (a * b).sum(1) -> [2., 2.] (exact: sum_i sign(y_i))
  for (int k = 0; k < 5; ++k) {
    Tensor a = tensor<double>({1, 2, kInf, 3}, kDouble).view({2, 2}).requires_grad_();
    Tensor b = tensor<double>({0.5, 2}, kDouble).requires_grad_();
    Tensor y = k == 0 ? matmul(a, b) : k == 1 ? mv(a, b) : k == 2 ? (a * b).sum(1)
             : k == 3 ? mm(a, b.unsqueeze(1)) : addmm(zeros({2, 1}, kDouble), a, b.unsqueeze(1));
    auto g = autograd::grad({y.abs().sum()}, {a, b}, {}, true, true);
    EXPECT_TRUE(same_bits(autograd::grad({g[0].sum()}, {b})[0], {2, 2})) << "variant " << k;
  }
  // F.bilinear is linear in x2, so through abs its second derivative in x2 is 0; torch 2.15:
  //   x1 = tensor([[1., inf], [2., -1.]]); x2 = tensor([[0.5], [-3.]], requires_grad)
  //   w = tensor([[[1.], [2.]], [[-1.], [0.5]]]); g, = grad(F.bilinear(x1, x2, w).abs().sum(), x2,
  //   create_graph=True) -> [[inf], [-2.5]]; grad(g.sum(), x2) -> [[nan], [0.]]
  Tensor x1 = tensor<double>({1, kInf, 2, -1}, kDouble).view({2, 2});
  Tensor x2 = tensor<double>({0.5, -3}, kDouble).view({2, 1}).requires_grad_();
  Tensor w = tensor<double>({1, 2, -1, 0.5}, kDouble).view({2, 2, 1});
  auto gb = autograd::grad({nn::functional::bilinear(x1, x2, w).abs().sum()}, {x2}, {}, true, true);
  EXPECT_TRUE(same_bits(gb[0], {kInf, -2.5}));
  EXPECT_TRUE(same_bits(autograd::grad({gb[0].sum()}, {x2})[0], {0, 0}));
}

TEST(PyTorchDivergence, OverwrittenValuesGetZeroGradients) {
  // x = ones(2, requires_grad=True); y = x * 1; y.fill_(1); y.sum().backward(): x.grad [0., 0.]
  // (a leaf reached only by a structural zero gets zeros, not none)
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 1;
  y.fill_(1);
  y.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(same_bits(x.grad(), {0, 0}));
  // torch.autograd.grad((x * 1).fill_(2).sum(), x) -> (tensor([0., 0.]),)
  Tensor x2 = ones({2}).requires_grad_();
  auto g = autograd::grad({(x2 * 1).fill_(2).sum()}, {x2});
  EXPECT_TRUE(same_bits(g[0], {0, 0}));
}

TEST(PyTorchDivergence, SecondDerivativesTorchGetsWrong) {
  // d2/de2 0^e is 0 where e > 0 (0^e is constant there). torch (1.13 and 2.x):
  //   e = tensor([0.5, 2., 3., -1.], float64); g = grad(pow(0., e).sum(), e, create_graph=True)
  //   -> [0, 0, 0, -inf]; grad(g.sum(), e) -> [nan, nan, nan, inf] (0 * log(0) in its formula)
  Tensor e = tensor<double>({0.5, 2.0, 3.0, -1.0}, kDouble).requires_grad_();
  auto g = autograd::grad({pow(Scalar(0.0), e).sum()}, {e}, {}, true, true);
  EXPECT_TRUE(same_bits(g[0], {0, 0, 0, -kInf}));
  EXPECT_TRUE(same_bits(autograd::grad({g[0].sum()}, {e})[0], {0, 0, 0, kInf}));
  // A tensor base of 0 (here bool False) takes the tensor formula, whose second derivative is
  // NaN there in torch and in brisk (0 * log(0)): torch.pow(tensor([False, False]), e) ->
  // second derivative [nan, nan]. Only the Scalar base above differs.
  Tensor e2 = tensor<double>({0.5, 2.0}, kDouble).requires_grad_();
  auto g2 = autograd::grad({pow(tensor<bool>({false, false}), e2).sum()}, {e2}, {}, true, true);
  for (double v : autograd::grad({g2[0].sum()}, {e2})[0].to_vector<double>()) EXPECT_TRUE(std::isnan(v)) << v;
  // gelu of a large float32: torch gives gelu(3e38) = inf (x * (1 + erf(.)) overflows) and
  // second derivatives NaN at 3e38 and 1e38; in float64 torch gives 3e38 and 0, as brisk in float32:
  //   F.gelu(tensor([3e38, 1e38, -3e38, 2.])) -> [inf, 1e38, -0., 1.9545...]
  Tensor x = tensor<float>({3e38f, 1e38f, -3e38f, 2.0f}).requires_grad_();
  Tensor yg = gelu(x);
  EXPECT_TRUE(same_bits(yg.slice(0, 0, 3), {double(3e38f), double(1e38f), -0.0}));
  auto gg = autograd::grad({yg.sum()}, {x}, {}, true, true);
  Tensor second = autograd::grad({gg[0].sum()}, {x})[0];
  EXPECT_TRUE(same_bits(second.slice(0, 0, 3), {0, 0, 0}));
  // erfc'' = 4x / sqrt(pi) * exp(-x^2) is 0 at 3e38 (exp underflows); torch (1.13 and 2.15) groups
  // it as 0 * inf: x = tensor([3e38, 1.]), g, = grad(erfc(x).sum(), x, create_graph=True)
  //   -> [-0., -0.4151]; grad(g.sum(), x) -> [nan, 0.8302] (difffuzz seed 32 case 2658).
  // brisk gave 0 while its formula squared x as x * x; it is torch's exp(-(x.pow(2))) since
  // ErfGradientSquaresItsInputInOneOp (the square's gradient 2x overflows): NaN, as torch.
  Tensor xe = tensor<float>({3e38f, 1.0f}).requires_grad_();
  auto ge = autograd::grad({erfc(xe).sum()}, {xe}, {}, true, true);
  Tensor he = autograd::grad({ge[0].sum()}, {xe})[0];
  EXPECT_TRUE(std::isnan(he.to(kDouble)[0].item<double>()));
  EXPECT_NEAR(he.to(kDouble)[1].item<double>(), 4.0 / std::sqrt(M_PI) * std::exp(-1.0), 1e-6);
}

TEST(PyTorchDivergence, TorchBugsWithIntegerOperands) {
  // atan2 with an integer first operand: d/dx atan2(y, x) = -y / (x^2 + y^2). torch computes -y
  // in uint8 (wraps): y = tensor([254, 5], uint8), x = tensor([0.75, -2.], float64):
  //   torch x.grad [0.4384, 8.6552]; the derivative is [-0.003937..., -0.172413...]
  Tensor y = tensor<uint8_t>({254, 5});
  Tensor x = tensor<double>({0.75, -2.0}, kDouble).requires_grad_();
  atan2(y, x).sum().backward();
  EXPECT_TRUE(close(x.grad(), tensor<double>({-254.0 / (0.5625 + 254.0 * 254.0), -5.0 / 29.0}, kDouble), 1e-14, 0));
  // With an integer second operand, d/dy atan2(y, x) = x / (x^2 + y^2); torch squares x in uint8
  // (255^2 wraps to 1; difffuzz seed 31 case 8284): y = tensor([-2.453125, 1.5], float64),
  // x = tensor([255, 16], uint8): torch y.grad [36.336, 7.111]; the derivative is [0.0039212, 0.061955]
  Tensor y2 = tensor<double>({-2.453125, 1.5}, kDouble).requires_grad_();
  atan2(y2, tensor<uint8_t>({255, 16})).sum().backward();
  EXPECT_TRUE(close(y2.grad(),
                    tensor<double>({255.0 / (2.453125 * 2.453125 + 255.0 * 255.0), 16.0 / (2.25 + 256.0)}, kDouble),
                    1e-14, 0));
  // x[1:3] = v with an integer x and a float v that requires grad: torch marks x as requiring
  // grad (CopySlices) and a backward through it hits an internal assert; an integer tensor
  // never requires grad in brisk. x = tensor([6, 7, 8, 5], uint8); x[1:3] = tensor(2.4) -> [6, 2, 2, 5]
  Tensor xi = tensor<uint8_t>({6, 7, 8, 5});
  Tensor v = scalar_tensor(2.4).requires_grad_();
  xi.index_put_({indexing::Slice(1, 3)}, v);
  EXPECT_FALSE(xi.requires_grad());
  EXPECT_EQ(values(xi), (std::vector<double>{6, 2, 2, 5}));
}

TEST(PyTorchDivergence, Torch2ValuesWhere113Differs) {
  // masked_select's gradient of a non-contiguous self (torch 2.x; 1.13 scrambled it:
  // [[0, 0, 2, 4], [1, 0, 3, 5]]):
  //   v = tensor([[1., 2, 3, 4], [5, 6, 7, 8]]).t().contiguous().t(); m = tensor([[True, False, True, True]])
  //   (masked_select(v, m) * arange(6.)).sum().backward() -> v.grad [[0, 0, 1, 2], [3, 0, 4, 5]]
  Tensor v = tensor<float>({1, 2, 3, 4, 5, 6, 7, 8}).view({2, 4}).t().contiguous().t().requires_grad_();
  Tensor m = tensor<bool>({true, false, true, true}).view({1, 4});
  (masked_select(v, m) * arange(6, kFloat)).sum().backward();
  EXPECT_TRUE(same_bits(v.grad(), {0, 0, 1, 2, 3, 0, 4, 5}));
  // lerp with |weight| >= 0.5 takes end - (end - self) * (1 - weight) (2.x; 1.13 gave inf):
  //   torch.lerp(tensor([-2.5, 1.]), tensor([-inf, 3.]), -0.5) -> [nan, 0.]
  EXPECT_TRUE(same_bits(lerp(tensor<float>({-2.5f, 1}), tensor<float>({-INFINITY, 3}), -0.5), {kNan, 0}));
  // clamp of an integer tensor with a NaN bound is NaN (2.x; 1.13 ignored the bound):
  //   torch.clamp(tensor([-2147483648, 5], dtype=int32), None, nan) -> [nan, nan]
  Tensor ci = clamp(tensor<int32_t>({std::numeric_limits<int32_t>::min(), 5}), std::nullopt, kNan);
  EXPECT_TRUE(same_bits(ci, {kNan, kNan}));
  // bfloat16 log1p near the float32 maximum (2.x; 1.13 gave inf):
  //   torch.log1p(tensor([3e38, 1e30], dtype=bfloat16)) -> [88.5, 69.]
  EXPECT_TRUE(same_bits(log1p(tensor<double>({3e38, 1e30}, kDouble).to(kBFloat16)), {88.5, 69}));
  // bfloat16 divided by a one-element float32 tensor computes in float32 from the value as given
  // (2.x; 1.13 rounded 1e-40 to bfloat16 first: -10871635968):
  //   tensor([-9.98402083170343e-31, 2.515625], dtype=bfloat16).div_(tensor(9.99994610111476e-41))
  //   -> [-9999220736., inf]
  Tensor hb = tensor<double>({-9.98402083170343e-31, 2.515625}, kDouble).to(kBFloat16);
  hb.div_(scalar_tensor(9.99994610111476e-41, kFloat));
  EXPECT_TRUE(same_bits(hb, {-9999220736.0, kInf}));
}

TEST(PyTorchDivergence, AddmmChecksIntegerAlphaAndBeta) {
  // torch.addmm(c, a, b, alpha=-1.5) with uint8 tensors: "value cannot be converted to type
  // uint8_t without overflow" (1.13 and 2.x), as beta=300; alpha=0.5 truncates to 0 -> c
  Tensor a = ones({2, 2}, kByte), b = ones({2, 2}, kByte), c = ones({2, 2}, kByte);
  expect_error([&] { addmm(c, a, b, 1, -1.5); }, {"addmm"});
  expect_error([&] { addmm(c, a, b, 300, 1); }, {"addmm"});
  EXPECT_EQ(addmm(c, a, b, 1, 0.5).to(kInt).contiguous().to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 1, 1}));
  EXPECT_EQ(addmm(c, a, b, 1, 2).to(kInt).contiguous().to_vector<int32_t>(), (std::vector<int32_t>{5, 5, 5, 5}));
}

TEST(PyTorchDivergence, AddmmWithAlphaDoesNotOverflowBeforeTheProduct) {
  // torch 2.15 (difffuzz seed 36 case 8567): a = tensor([[1e-40, 3e38]]); b = tensor([[0.804], [0.0176]])
  //   torch.addmm(zeros(1, 1), a, b, beta=2, alpha=2) -> inf; 1.13 and alpha * mm(a, b): 1.056e37
  Tensor a = tensor<float>({1e-40f, 3e38f}).view({1, 2}), b = tensor<float>({0.804f, 0.0176f}).view({2, 1});
  Tensor r = addmm(zeros({1, 1}), a, b, 2, 2);
  EXPECT_TRUE(close(r.to(kDouble).reshape({-1}), tensor<double>({1.0559999798273836e+37}, kDouble), 1e-6, 0));
}

TEST(PyTorchDivergence, PowOfAZeroDimTensorExponentIsPow) {
  // torch 2.15, 18 elements (vector loops):
  //   x = tensor([-inf, -0., 4.] * 6)
  //   pow(x, tensor(-0.5)) -> [0, inf, 0.5]; pow(x, -0.5) -> [nan, -inf, 0.5]
  //   pow(x, tensor(0.5)) -> [inf, 0, 2];    pow(x, 0.5) -> [nan, -0., 2]
  std::vector<double> v;
  for (int i = 0; i < 6; ++i) v.insert(v.end(), {-kInf, -0.0, 4.0});
  Tensor x = tensor<double>(v, kDouble).to(kFloat);
  auto first3 = [](const Tensor& t) { return t.slice(0, 0, 3); };
  EXPECT_TRUE(same_bits(first3(pow(x, scalar_tensor(-0.5))), {0.0, kInf, 0.5}));
  EXPECT_TRUE(same_bits(first3(pow(x, Scalar(-0.5))), {kNan, -kInf, 0.5}));
  EXPECT_TRUE(same_bits(first3(pow(x, scalar_tensor(0.5))), {kInf, 0.0, 2.0}));
  EXPECT_TRUE(same_bits(first3(pow(x, Scalar(0.5))), {kNan, -0.0, 2.0}));
}

TEST(PyTorchDivergence, HalfMeanOfAWiderInputIsComputedInFloat) {
  // torch 2.15: tensor([3e38, -inf, 1.]).mean(dtype=half) -> -inf (1.13: nan; sum(dtype=half): nan)
  //   tensor([[1e-4] * 3000, [70000.] * 3000]).double().mean(1, dtype=half) -> [1.0002e-04, inf]
  //   tensor([3, 4, 5]).mean(dtype=half) -> 4.
  EXPECT_TRUE(same_bits(tensor<float>({3e38f, -INFINITY, 1.0f}).mean(kHalf).to(kDouble), {-kInf}));
  Tensor rows = cat({full({1, 3000}, 1e-4, kDouble), full({1, 3000}, 70000.0, kDouble)});
  Tensor m = rows.mean({1}, false, kHalf);
  EXPECT_EQ(m.dtype(), kHalf);
  EXPECT_NEAR(m.to(kDouble)[0].item<double>(), 1e-4, 1e-7);
  EXPECT_TRUE(std::isinf(m.to(kDouble)[1].item<double>()));
  EXPECT_EQ(tensor<int64_t>({3, 4, 5}).mean(kHalf).to(kDouble).item<double>(), 4.0);
}

TEST(PyTorchDivergence, AddcmulAddcdivGradientOfAnIntegerTensorIsFormedInFloat) {
  // difffuzz seed 31 case 9665 (torch 2.15): the tensor2 gradient is g * (tensor1 * value); an int64
  // tensor1 times a float value is float32 in torch, so 2^31 * 0 is 0 (brisk formed it in the
  // float16 g's dtype: inf * 0 = NaN).
  //   s = tensor([2.439453125, 1.], dtype=half); t1 = tensor([2147483648, -129]); t2 = tensor(-1.876, dtype=half)
  //   torch.addcmul(s, t1, t2, value=0.) -> [nan, 1.]; t2.grad -> 0.   (addcdiv: the same)
  //   torch.addcmul(s, t1, t2, value=0.5) -> [-inf, 122.]; t2.grad -> inf
  for (int div = 0; div < 2; ++div) {
    for (double v : {0.0, 0.5}) {
      if (div && v != 0.0) continue;
      Tensor s = tensor<double>({2.439453125, 1.0}, kDouble).to(kHalf).requires_grad_();
      Tensor t1 = tensor<int64_t>({int64_t(1) << 31, -129});
      Tensor t2 = scalar_tensor(-1.8759765625, kHalf).requires_grad_();
      Tensor y = div ? addcdiv(s, t1, t2, v) : addcmul(s, t1, t2, v);
      y.sum().backward();
      EXPECT_EQ(t2.grad().dtype(), kHalf);
      EXPECT_TRUE(same_bits(t2.grad(), {v == 0.0 ? 0.0 : kInf})) << "div " << div << " value " << v;
      EXPECT_TRUE(same_bits(s.grad(), {1, 1}));
    }
  }
  // addcdiv's tensor2 gradient -g * (value * t1 / (t2 * t2)) with an int64 t1 past float16's range
  // and t2 = inf is 0; torch (int value 1) forms value * t1 in int64, converts it to float16 (inf)
  // and gives inf / inf = NaN (difffuzz seed 33 case 9117). The forward rounds t1 to float16 in
  // both (NaN):
  //   torch.addcdiv(zeros(2, half), tensor([9223372036854775806, 3]), tensor([inf, 2.], half))
  //   -> [nan, 1.5]; t2.grad -> [nan, -0.75]
  Tensor s2 = zeros({2}, kHalf).requires_grad_();
  Tensor d2 = tensor<double>({kInf, 2.0}, kDouble).to(kHalf).requires_grad_();
  Tensor yd = addcdiv(s2, tensor<int64_t>({int64_t(9223372036854775806LL), 3}), d2);
  EXPECT_TRUE(same_bits(yd, {kNan, 1.5}));
  yd.sum().backward();
  EXPECT_TRUE(same_bits(d2.grad(), {-0.0, -0.75}));
  // An integer value: torch forms tensor1 * value in int32 and wraps (seed 41 case 49188):
  //   t1 = tensor([2147483647], dtype=int32); t2 = tensor([1.5], requires_grad)
  //   torch.addcmul(zeros(1), t1, t2, value=2).sum().backward(): t2.grad [-2.]; the derivative is 4294967294
  Tensor t2 = tensor<float>({1.5f}).requires_grad_();
  addcmul(zeros({1}), tensor<int32_t>({std::numeric_limits<int32_t>::max()}), t2, 2).sum().backward();
  EXPECT_TRUE(same_bits(t2.grad(), {double(4294967294.0f)}));
}

TEST(PyTorchDivergence, CrossEntropyOfNonContiguousInputHasSecondDerivatives) {
  // difffuzz seed 31 case 3765: the fused cross_entropy saved its contiguous copy of a
  // non-contiguous input, which has no history, so grad(create_graph=True) did not require grad
  // and the second derivative was silently missing. torch 2.15 (and 1.13):
  //   x = tensor([[0.5, 1.], [-1., 0.], [2., 3.]], dtype=float64).t().requires_grad_(); t = tensor([2, 0])
  //   g, = grad(F.cross_entropy(x, t), x, create_graph=True)
  //   grad((g * tensor([[1., 0, 0], [0, 0, 1]])).sum(), x)
  //   -> [[0.072281835282, -0.003428029153, -0.068853806129], [-0.048178653972, -0.017723936300, 0.065902590271]]
  for (bool contiguous : {false, true}) {
    Tensor x = tensor<double>({0.5, 1, -1, 0, 2, 3}, kDouble).view({3, 2}).t();
    if (contiguous) x = x.contiguous();
    x.requires_grad_();
    Tensor t = tensor<int64_t>({2, 0});
    auto g = autograd::grad({nn::functional::cross_entropy(x, t)}, {x}, {}, true, true);
    ASSERT_TRUE(g[0].requires_grad()) << "contiguous " << contiguous;
    Tensor u = tensor<double>({1, 0, 0, 0, 0, 1}, kDouble).view({2, 3});
    Tensor h = autograd::grad({(g[0] * u).sum()}, {x})[0];
    EXPECT_TRUE(close(h,
                      tensor<double>({0.072281835282, -0.003428029153, -0.068853806129, -0.048178653972,
                                      -0.017723936300, 0.065902590271}, kDouble).view({2, 3}),
                      1e-9, 1e-11))
        << "contiguous " << contiguous;
  }
}

TEST(PyTorchDivergence, MseAndSmoothL1LossOperandDtypes) {
  // torch's mse/smooth_l1/huber kernels promote a bool operand (difffuzz seed 33 case 12423);
  // l1_loss (and smooth_l1 with beta 0, which is l1_loss) subtract and refuse it, as huber does a
  // bool input. torch 2.15, b = tensor([False, True, True]), h = tensor([2.3125, 0.785, 2.4375], bfloat16):
  //   F.mse_loss(b, h) -> 2.484375 (bfloat16), F.mse_loss(h, b) too; F.smooth_l1_loss(b, h) -> 0.92578125;
  //   F.huber_loss(h, b) -> 0.92578125; F.l1_loss(b, h), F.smooth_l1_loss(b, h, beta=0),
  //   F.huber_loss(b, h) raise; x = h.requires_grad_(): F.mse_loss(x, b).backward(): x.grad
  //   [1.5469, -0.1436, 0.9609]
  namespace F = nn::functional;
  Tensor b = tensor<bool>({false, true, true});
  Tensor h = tensor<double>({2.3125, 0.785, 2.4375}, kDouble).to(kBFloat16);
  for (const Tensor& l : {F::mse_loss(b, h), F::mse_loss(h, b)}) {
    EXPECT_EQ(l.dtype(), kBFloat16);
    EXPECT_TRUE(same_bits(l, {2.484375}));
  }
  EXPECT_TRUE(same_bits(F::smooth_l1_loss(b, h), {0.92578125}));
  EXPECT_TRUE(same_bits(F::huber_loss(h, b), {0.92578125}));
  expect_error([&] { F::l1_loss(b, h); }, {"[sub]"});
  expect_error([&] { F::smooth_l1_loss(b, h, F::SmoothL1LossFuncOptions().beta(0.0)); }, {"[sub]"});
  expect_error([&] { F::huber_loss(b, h); }, {"[huber_loss]"});
  expect_error([&] { F::mse_loss(b, b); }, {"[mse_loss]"});
  // smooth_l1_loss with beta 0 is l1_loss, integers included (difffuzz seed 37 case 6259):
  //   a = tensor([[11, 11, 6, 11], [1, 6, 7, 7]], uint8); c = tensor([[8, 1, 11, 11], [11, 2, 7, 8]], uint8)
  //   F.smooth_l1_loss(a, c, reduction='none', beta=0.) -> [[3, 10, 251, 0], [246, 4, 0, 255]] (uint8);
  //   'sum' -> 769 (int64); beta=1.: "smooth_l1_cpu" not implemented for 'Byte'
  Tensor a = tensor<uint8_t>({11, 11, 6, 11, 1, 6, 7, 7}).view({2, 4});
  Tensor c = tensor<uint8_t>({8, 1, 11, 11, 11, 2, 7, 8}).view({2, 4});
  Tensor r = F::smooth_l1_loss(a, c, F::SmoothL1LossFuncOptions(nn::kNone).beta(0.0));
  EXPECT_EQ(r.dtype(), kByte);
  EXPECT_EQ(values(r), (std::vector<double>{3, 10, 251, 0, 246, 4, 0, 255}));
  EXPECT_EQ(F::smooth_l1_loss(a, c, F::SmoothL1LossFuncOptions(nn::kSum).beta(0.0)).item<int64_t>(), 769);
  expect_error([&] { F::smooth_l1_loss(a, c, F::SmoothL1LossFuncOptions().beta(1.0)); }, {"[smooth_l1_loss]"});
  Tensor x = h.clone().requires_grad_();
  F::mse_loss(x, b).backward();
  EXPECT_TRUE(close(x.grad().to(kDouble), tensor<double>({1.546875, -0.1435546875, 0.9609375}, kDouble), 1e-2, 0));
}

TEST(PyTorchDivergence, FmodOfAHugeQuotientIsExact) {
  // torch's vector loop forms a - b * trunc(a / b); a / b past float32's range gives NaN there,
  // while its scalar loop (short tensors) gives the exact fmod (difffuzz seed 34 cases 12722, 10998):
  //   torch.fmod(full((16,), 3e38), 0.1957309) -> nan (16 elements); full((1,), 3e38): 0.0404933...
  //   torch.fmod(full((16,), 1.8828125), full((16,), 1e-40)) -> nan; one element: 7.294038766503538e-41
  // brisk gives the exact value at every length.
  for (int64_t n : {1, 16, 67}) {
    EXPECT_TRUE(same_bits(fmod(full({n}, 3e38f), 0.1957309).slice(0, 0, 1), {double(std::fmod(3e38f, 0.1957309f))}));
    Tensor d = fmod(full({n}, 1.8828125f), full({n}, 1e-40f));
    EXPECT_TRUE(same_bits(d.slice(0, n - 1, n), {double(std::fmod(1.8828125f, 1e-40f))}));
    EXPECT_TRUE(same_bits(remainder(full({n}, 3e38f), 0.1957309).slice(0, 0, 1), {double(std::fmod(3e38f, 0.1957309f))}));
  }
}

TEST(PyTorchDivergence, MseLossGradientDoesNotOverflowBeforeTheIncomingGradient) {
  // d/dx (x - t)^2 * g = 2 (x - t) g; torch forms 2 (x - t) first, inf in float16 (difffuzz seed 34
  // case 8342): x = tensor([65504.], half, requires_grad); t = tensor([1.4287109375], half)
  //   F.mse_loss(x, t, reduction='none').backward(tensor([0.5], half)): x.grad [inf]; the exact 65502.57
  //   rounds to 65504
  Tensor x = tensor<double>({65504.0}, kDouble).to(kHalf).requires_grad_();
  Tensor t = tensor<double>({1.4287109375}, kDouble).to(kHalf);
  nn::functional::mse_loss(x, t, nn::functional::MSELossFuncOptions(nn::kNone))
      .backward(tensor<double>({0.5}, kDouble).to(kHalf));
  EXPECT_TRUE(same_bits(x.grad(), {65504.0}));
}

TEST(PyTorchDivergence, TrainingBatchNormGradientWithAStridedWeight) {
  // torch (1.13 and 2.15) reads a non-contiguous weight as contiguous in its CPU batch_norm backward
  // in training mode too (tools/fuzz TORCH_BUGS; difffuzz seed 35 case 8998): with
  //   x = tensor([[-1.25, .5, 3.], [2.75, 2.5, .25], [-2.25, -2., 1.25]], float64, requires_grad)
  //   w = zeros(6); w[::2] = tensor([-.5, 2.25, 1.5]); w = w[::2]
  //   (F.batch_norm(x, None, None, training=True, weight=w) * arange(9.).view(3, 3)).sum().backward()
  //   torch x.grad [0.7440, -0., -1.9159, ...] (weights -0.5, 0, 2.25); with w.contiguous():
  //   [0.7439616768, -3.5164184735, -1.2772648875, -0.1487920378, 1.9535598077, -2.2351599093,
  //    -0.5951696390, 1.5628586658, 3.5124247968], brisk's for both layouts
  const Tensor want = tensor<double>({0.7439616768, -3.5164184735, -1.2772648875, -0.1487920378, 1.9535598077,
                                      -2.2351599093, -0.5951696390, 1.5628586658, 3.5124247968},
                                     kDouble);
  const Tensor w_s = tensor<double>({-0.5, 0, 2.25, 0, 1.5, 0}, kDouble).slice(0, 0, 6, 2);
  ASSERT_FALSE(w_s.is_contiguous());
  for (const Tensor& w : {w_s, w_s.contiguous()}) {
    Tensor x = tensor<double>({-1.25, 0.5, 3.0, 2.75, 2.5, 0.25, -2.25, -2.0, 1.25}, kDouble).view({3, 3}).requires_grad_();
    (nn::functional::batch_norm(x, {}, {}, w, {}, true) * arange(9, kDouble).view({3, 3})).sum().backward();
    EXPECT_TRUE(close(x.grad().reshape({-1}), want, 0, 1e-9)) << "contiguous weight " << w.is_contiguous();
  }
}

TEST(PyTorchDivergence, FloatBatchNormOfValuesNearTheRangeEnd) {
  // float32 statistics whose squared deviations pass float32's range are summed in double
  // (difffuzz seed 7 cases 35533, 48631, nn family). torch 2.15:
  //   x = tensor([[.5, 1.], [70000., 2.], [3e38, 3.], [-2.5e38, 4.]]); w = tensor([-.25, 2.]); b = tensor([.5, -1.])
  //   y = F.batch_norm(x, None, None, w, b, training=True); (y * arange(8.).view(4, 2)).sum().backward()
  //   float64: y [0.5160375075, -3.6832708399, 0.5160375075, -1.8944236133, 0.1311373280,
  //               -0.1055763867, 0.8367876570, 1.6832708399]
  //            x.grad [3.8965e-39, -4.2931989983e-05, 1.3305e-39, -1.4310663328e-05, -2.3759e-39,
  //                    1.4310663328e-05, -2.8511e-39, 4.2931989983e-05]
  //   float32: y [0.5, ..., 0.5, ...] (the bias: the variance overflowed), x.grad [nan, ...]
  const Tensor want_y = tensor<double>({0.5160375075, -3.6832708399, 0.5160375075, -1.8944236133, 0.1311373280,
                                        -0.1055763867, 0.8367876570, 1.6832708399}, kDouble);
  const Tensor want_g = tensor<double>({3.8965203353e-39, -4.2931989983e-05, 1.3305191389e-39, -1.4310663328e-05,
                                        -2.3759270337e-39, 1.4310663328e-05, -2.8511124404e-39, 4.2931989983e-05},
                                       kDouble);
  const Tensor x64 = tensor<double>({0.5, 1, 70000, 2, 3e38, 3, -2.5e38, 4}, kDouble).view({4, 2});
  // (4, 2) is the interleaved layout; (4, 2, 1, 1) as NCHW-contiguous is planar. The denormal
  // gradients of the first channel (below 1.2e-38) lose their (x - mean) * B term, B ~ 1e-77 in float.
  for (bool planar : {false, true}) {
    Tensor x = x64.to(kFloat);
    if (planar) x = x.view({4, 2, 1, 1}).contiguous(kChannelsLast).contiguous();
    x.requires_grad_();
    Tensor y = nn::functional::batch_norm(x, {}, {}, tensor<float>({-0.25f, 2.0f}), tensor<float>({0.5f, -1.0f}), true);
    (y.reshape({4, 2}) * arange(8, kFloat).view({4, 2})).sum().backward();
    EXPECT_TRUE(close(y.reshape({-1}).to(kDouble), want_y, 1e-5, 1e-6)) << "planar " << planar;
    EXPECT_TRUE(close(x.grad().reshape({-1}).to(kDouble), want_g, 1e-3, 1.2e-38)) << "planar " << planar;
  }
}

TEST(PyTorchDivergence, BceWithLogitsGradientsAtInfinity) {
  // binary_cross_entropy_with_logits has PyTorch's backward formulas, one product with the incoming
  // gradient each (the composite's were inf - inf; difffuzz seed 34 case 5019). torch 2.15, float64:
  //   x = tensor([-inf, 1.5, -.5], requires_grad); t = tensor([.25, .5, 1.], requires_grad)
  //   pw = tensor([.5, 2., 3.]); l = F.binary_cross_entropy_with_logits(x, t, pos_weight=pw, reduction='none')
  //   -> [nan, 1.0521199170, 2.9222309525]; l.backward(tensor([1., inf, 1.]))
  //   x.grad [-0.125, inf, -1.8673779936], t.grad [inf, -inf, 2.4481539684]
  //   second derivatives: x2 = tensor([1.5, -.5]), t2 = tensor([.5, 1.]), pw[1:], mean:
  //   g = grad(l, [x2, t2], create_graph=True); grad(g[0].sum() + g[1].sum(), [x2, t2])
  //   -> x2 [-0.4793529229, -0.7699537629], t2 [-0.5912127619, -1.1224593312]
  namespace F = nn::functional;
  Tensor x = tensor<double>({-kInf, 1.5, -0.5}, kDouble).requires_grad_();
  Tensor t = tensor<double>({0.25, 0.5, 1.0}, kDouble).requires_grad_();
  const Tensor pw = tensor<double>({0.5, 2.0, 3.0}, kDouble);
  Tensor l = F::binary_cross_entropy_with_logits(x, t, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pw).reduction(nn::kNone));
  EXPECT_TRUE(close(l.slice(0, 1, 3), tensor<double>({1.0521199170, 2.9222309525}, kDouble), 1e-9, 0));
  l.backward(tensor<double>({1.0, kInf, 1.0}, kDouble));
  EXPECT_TRUE(same_bits(x.grad().slice(0, 0, 2), {-0.125, kInf}));
  EXPECT_NEAR(x.grad()[2].item<double>(), -1.8673779936, 1e-9);
  EXPECT_TRUE(same_bits(t.grad().slice(0, 0, 2), {kInf, -kInf}));
  EXPECT_NEAR(t.grad()[2].item<double>(), 2.4481539684, 1e-9);
  Tensor x2 = tensor<double>({1.5, -0.5}, kDouble).requires_grad_();
  Tensor t2 = tensor<double>({0.5, 1.0}, kDouble).requires_grad_();
  auto g = autograd::grad({F::binary_cross_entropy_with_logits(
                              x2, t2, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pw.slice(0, 1, 3)))},
                          {x2, t2}, {}, true, true);
  auto h = autograd::grad({g[0].sum() + g[1].sum()}, {x2, t2});
  EXPECT_TRUE(close(h[0], tensor<double>({-0.4793529229, -0.7699537629}, kDouble), 1e-9, 0));
  EXPECT_TRUE(close(h[1], tensor<double>({-0.5912127619, -1.1224593312}, kDouble), 1e-9, 0));
}

TEST(PyTorchDivergence, SetItemWithOnlyBoolsConvertsAScalarUnchecked) {
  // torch 2.15 (difffuzz seed 38 case 491), x = zeros(4, dtype=half):
  //   x[True, False] = 1e5 -> x unchanged (version bumped); x[True, True] = 1e5 -> [inf] * 4
  //   x[True] = 1e5, x2[0, False] = 1e5 (2-D): "value cannot be converted to type c10::Half without overflow"
  //   (torch 1.13 raises for all of them)
  Tensor x = zeros({4}, kHalf);
  const auto v0 = x._version();
  x.index_put_({true, false}, 1e5);
  EXPECT_TRUE(same_bits(x, {0, 0, 0, 0}));
  EXPECT_EQ(x._version(), v0 + 1);
  x.index_put_({true, true}, 1e5);
  EXPECT_TRUE(same_bits(x, {kInf, kInf, kInf, kInf}));
  expect_error([] { zeros({4}, kHalf).index_put_({true}, 1e5); }, {"out of range"});
  expect_error([] { zeros({2, 2}, kHalf).index_put_({0, false}, 1e5); }, {"[index_put_]", "out of range"});
  Tensor y = zeros({4}, kHalf);
  y.index_put_({true, true}, 2);
  EXPECT_TRUE(same_bits(y, {2, 2, 2, 2}));
}

TEST(PyTorchDivergence, HalfGeluGradientIsComputedInFloat) {
  // torch 2.15 (difffuzz seed 38 case 25803): x = tensor([65504., 1.5, -2., -65504.], dtype=half)
  //   F.gelu(x, approximate='tanh').sum().backward(): x.grad [1., 1.1279296875, -0.08612060546875, 0.]
  //   approximate='none': [1., 1.1279296875, -0.085205078125, 0.]
  // brisk formed x^2 in float16 (inf) and the tanh form's gradient at 65504 was NaN.
  for (const char* appr : {"tanh", "none"}) {
    Tensor x = tensor<double>({65504, 1.5, -2, -65504}, kDouble).to(kHalf).requires_grad_();
    gelu(x, appr).sum().backward();
    EXPECT_EQ(x.grad().dtype(), kHalf);
    EXPECT_TRUE(same_bits(x.grad(), {1.0, 1.1279296875, std::string(appr) == "tanh" ? -0.08612060546875 : -0.085205078125,
                                     0.0}))
        << appr;
  }
}

TEST(PyTorchDivergence, NllLossGradientOfAChannelsLastInput) {
  // torch 2.15 (difffuzz seed 38 case 9154): x = randn(1, 3, 1, 2).permute(3, 2, 1, 0).contiguous()
  //   .permute(3, 2, 1, 0).requires_grad_(); F.nll_loss(x, tensor([[[1, 2]]])).backward() raises
  //   "grad_input must be contiguous"; with x contiguous: x.grad[0, :, 0, :] = [[0, 0], [-.5, 0], [0, -.5]]
  Tensor x = tensor<double>({1.14, -2.80, -0.99, 0.75, 0.085, 2.33}, kDouble).view({1, 3, 1, 2});
  x = x.permute({3, 2, 1, 0}).contiguous().permute({3, 2, 1, 0}).requires_grad_();
  ASSERT_FALSE(x.is_contiguous());
  nn::functional::nll_loss(x, tensor<int64_t>({1, 2}).view({1, 1, 2})).backward();
  EXPECT_TRUE(same_bits(x.grad().contiguous(), {0, 0, -0.5, 0, 0, -0.5}));
}

TEST(PyTorchDivergence, LayerNormOfTwoValuesHasZeroGradient) {
  // Two values normalize to -1 and 1 whatever they are, so the gradient is 0. torch 2.15 (difffuzz
  // seed 27 case 7930): x = tensor([-1e-30, 0.], float64, requires_grad); y = F.layer_norm(x, [2],
  // eps=0.) -> [-1., 1.]; y.backward(tensor([.5, -.25])): x.grad [-70368744177664., 0.] (rounding
  // noise times rstd = 2e30)
  Tensor x = tensor<double>({-1e-30, 0.0}, kDouble).requires_grad_();
  Tensor y = nn::functional::layer_norm(x, {2}, {}, {}, 0.0);
  EXPECT_TRUE(same_bits(y, {-1, 1}));
  y.backward(tensor<double>({0.5, -0.25}, kDouble));
  EXPECT_TRUE(close(x.grad(), zeros({2}, kDouble), 0, 1e-12));
}

// sign_out / square_out of a bool input compute as torch (they raised
// "not supported for bool tensors"; found by the op rows).
TEST(PyTorchDivergence, SignAndSquareOutOfBool) {
  const Tensor b = tensor({true, false, true});
  Tensor o1 = empty({0}, kFloat);
  sign_out(o1, b);
  EXPECT_TRUE(o1.equal(tensor({1.f, 0.f, 1.f})));
  Tensor o2 = empty({3}, kBool);
  sign_out(o2, b);
  EXPECT_TRUE(o2.equal(b));
  Tensor o3 = empty({3}, kInt64);
  square_out(o3, b);
  EXPECT_TRUE(o3.equal(tensor({int64_t(1), int64_t(0), int64_t(1)})));
  Tensor o4 = empty({3}, kBool);  // int64 can't be cast to bool
  EXPECT_THROW(square_out(o4, b), Error);
}

// ---- found by difffuzz seed 47 (torch 2.15) ---------------------------------------------------

// add of bool tensors with alpha=False is self: the bool kernel ignored alpha
// (seed 47 case 203944). torch 2.15: torch.add(torch.zeros(3, dtype=torch.bool), True,
// alpha=False) -> [False, False, False]; alpha=True -> [True, True, True].
TEST(PyTorchDivergence, BoolAddWithFalseAlphaIsSelf) {
  const Tensor b = tensor({false, true, false});
  EXPECT_TRUE(b.add(Scalar(true), Scalar(false)).equal(b));
  EXPECT_TRUE(b.add(tensor({true, true, false}), Scalar(false)).equal(b));
  EXPECT_TRUE(b.add(tensor({true, false, false}), Scalar(true)).equal(tensor({true, true, false})));
  EXPECT_TRUE(b.add(tensor({true, false, false}), Scalar(int64_t(2))).equal(tensor({true, true, false})));
  Tensor out = empty({3}, kBool);
  add_out(out, b, tensor({true, true, true}), Scalar(false));
  EXPECT_TRUE(out.equal(b));
}

// relu's backward under create_graph multiplied the incoming gradient by the
// mask, so an infinite gradient where relu's result is 0 gave NaN; torch
// selects (threshold_backward) and gives 0 (seed 47 cases 376466, 642344).
// torch 2.15: v0 = tensor([-1.], float64, requires_grad); p = tensor([.6], float64,
// requires_grad); y = v0.relu().pow(p); autograd.grad(y.sum(), [v0, p], create_graph=True)
// -> ([0.], [0.]); the grad of the first with respect to v0 -> [0.].
TEST(PyTorchDivergence, ReluGradientSelectsUnderCreateGraph) {
  Tensor v0 = tensor<double>({-1.0, 2.0}, kDouble).requires_grad_();
  Tensor p = tensor<double>({0.6, 0.6}, kDouble).requires_grad_();
  Tensor y = v0.relu().pow(p);
  TensorList g = autograd::grad({y.sum()}, {v0, p}, {}, true, true);
  // d/dv0 at 2: 0.6 * 2^-0.4; at -1: 0 (pow's derivative at 0 is inf, relu's mask selects)
  EXPECT_TRUE(close(g[0], tensor<double>({0.0, 0.6 * std::pow(2.0, -0.4)}, kDouble), 1e-12, 0));
  EXPECT_TRUE(close(g[1], tensor<double>({0.0, std::pow(2.0, 0.6) * std::log(2.0)}, kDouble), 1e-12, 0));
  TensorList gg = autograd::grad({g[0].sum()}, {v0}, {}, true);
  // d2/dv0^2 at 2: 0.6 * -0.4 * 2^-1.4; at -1: 0
  EXPECT_TRUE(close(gg[0], tensor<double>({0.0, 0.6 * -0.4 * std::pow(2.0, -1.4)}, kDouble), 1e-12, 0));
  // without create_graph (the fused kernel) the same values
  Tensor v1 = tensor<double>({-1.0, 2.0}, kDouble).requires_grad_();
  v1.relu().pow(0.6).sum().backward();
  EXPECT_TRUE(close(v1.grad(), g[0].detach(), 1e-12, 0));
}

// cross_entropy's differentiable backward multiplied the incoming gradient into
// ignored rows before masking them, so an infinite gradient gave their second
// derivative NaN; torch gives 0 (seed 47 case 419917).
// torch 2.15: x = tensor([[1e30, .7654, -1e-30], [1., 1.0209, -2.155]], float64,
// requires_grad); l = F.cross_entropy(x, tensor([1, 0]), ignore_index=0, label_smoothing=.5);
// g, = autograd.grad(l.exp(), x, create_graph=True); autograd.grad(g.sum(), x)[0][1] -> [0., 0., 0.]
TEST(PyTorchDivergence, CrossEntropySecondDerivativeOfIgnoredRowsIsZero) {
  namespace F = nn::functional;
  Tensor x = tensor<double>({1e30, 0.7654, -1e-30, 1.0, 1.0209, -2.155}, kDouble).view({2, 3}).requires_grad_();
  Tensor l = F::cross_entropy(x, tensor<int64_t>({1, 0}), F::CrossEntropyFuncOptions().ignore_index(0).label_smoothing(0.5));
  TensorList g = autograd::grad({l.exp()}, {x}, {}, true, true);
  TensorList gg = autograd::grad({g[0].sum()}, {x}, {}, true);
  EXPECT_TRUE(same_bits(gg[0].select(0, 1), {0.0, 0.0, 0.0}));
  EXPECT_TRUE(same_bits(g[0].select(0, 1), {0.0, 0.0, 0.0}));
}

// flatten of a 0-dim tensor checks its dims against [-1, 0] (seed 47 case
// 655383). torch 2.15: torch.tensor(-1).flatten(5, -1) raises IndexError "Dimension
// out of range (expected to be in range of [-1, 0], but got 5)"; flatten(0, -1) -> tensor([-1]).
TEST(PyTorchDivergence, FlattenOfZeroDimChecksDims) {
  const Tensor s = scalar_tensor(-1, kInt32);
  expect_error([&] { s.flatten(5, -1); }, {"[flatten]", "5"});
  expect_error([&] { s.flatten(0, -2); }, {"[flatten]", "-2"});
  EXPECT_TRUE(s.flatten(0, -1).equal(tensor<int32_t>({-1})));
  EXPECT_TRUE(s.flatten(-1, 0).equal(tensor<int32_t>({-1})));
}

// ---- found by difffuzz seed 61 (torch 2.15) ---------------------------------------------------

// The backward of sigmoid, tanh, silu, mish and logit of float16/bfloat16
// inputs computes in float32 and rounds once, as torch's kernels do; as
// compositions of 16-bit ops brisk rounded after each op (one unit in the
// last place off; seed 61 case 135194). torch 2.15: h = tensor([1.1718462882856218],
// float64).half().requires_grad_(); torch.sigmoid(h).backward(torch.full((1,), .75,
// dtype=torch.half)): h.grad 0.1353759765625 (brisk gave 0.13525390625).
TEST(PyTorchDivergence, SixteenBitActivationGradientsRoundOnce) {
  Tensor h = tensor<double>({1.1718462882856218}, kDouble).to(kHalf).requires_grad_();
  h.sigmoid().backward(full({1}, 0.75, TensorOptions(kHalf)));
  EXPECT_TRUE(same_bits(h.grad(), {0.1353759765625}));
  // every such gradient is the float32 formula rounded once
  manual_seed(2);
  for (ScalarType dt : {kHalf, kBFloat16}) {
    const Tensor x = (randn({4096}) * 3).to(dt), g = randn({4096}).to(dt);
    const Tensor xf = x.to(kFloat), gf = g.to(kFloat);
    auto grad_of = [&](const std::function<Tensor(const Tensor&)>& f) {
      Tensor xi = x.detach().clone().requires_grad_();
      f(xi).backward(g);
      return xi.grad();
    };
    // the float32 kernels' values (the activation_backward slot computes
    // 16-bit operands in float32), rounded once; in float32 within two ulps
    // of the composite formula in torch's order (the kernel may contract a
    // product and a sum into one FMA, as torch's does)
    const Tensor sf = x.sigmoid().to(kFloat), tf = x.tanh().to(kFloat);
    const Tensor s_ref = sigmoid_backward(gf, sf), t_ref = tanh_backward(gf, tf), u_ref = silu_backward(gf, xf);
    EXPECT_TRUE(grad_of([](const Tensor& t) { return t.sigmoid(); }).equal(s_ref.to(dt))) << dt;
    EXPECT_TRUE(grad_of([](const Tensor& t) { return t.tanh(); }).equal(t_ref.to(dt))) << dt;
    EXPECT_TRUE(grad_of([](const Tensor& t) { return nn::functional::silu(t); }).equal(u_ref.to(dt))) << dt;
    const float ulp2 = 2 * std::numeric_limits<float>::epsilon();
    EXPECT_TRUE(s_ref.allclose(gf * (1 - sf) * sf, ulp2, 1e-30));
    EXPECT_TRUE(t_ref.allclose(gf * (1 - tf * tf), ulp2, 1e-30));
  }
}

// ---- found by difffuzz seed 73 (torch 2.15) ---------------------------------------------------

// The p-norm's gradient for p < 1 multiplies as torch does, left to right:
// the small |x|^(p-1) meets the incoming gradient before the large
// norm^(1-p), so no intermediate overflows where the gradient itself is
// finite. brisk grouped g * norm^(1-p) first: inf
// where torch gives 1.25e30 (seed 73 case 513796), and 0 * inf = NaN at a
// zero element of a float16 input where torch gives 0 (case 575671).
TEST(PyTorchDivergence, NormGradientGroupsAsTorch) {
  // float32: |x| = 1e30 next to small values; square(norm) makes g ~ 2e30
  Tensor x = tensor<double>({1e30, 70000.0, 1.2}, kDouble).to(kFloat).requires_grad_();
  x.norm(0.5, {0}, false).square().backward();
  const Tensor xd = tensor<double>({1e30, 70000.0, 1.2}, kDouble).requires_grad_();
  xd.norm(0.5, {0}, false).square().backward();
  // (the small elements' gradients are past float32's range: inf in both)
  const double g0 = x.grad()[0].item<double>(), want0 = xd.grad()[0].item<double>();
  EXPECT_TRUE(std::isfinite(g0)) << x.grad();
  EXPECT_NEAR(g0, want0, 1e-5 * want0) << x.grad() << xd.grad();
  EXPECT_TRUE(std::isinf(x.grad()[1].item<double>()) && xd.grad()[1].item<double>() > 3.5e38);
  // float16 with zeros: their gradient is 0 (torch's mask), not 0 * inf
  Tensor h = tensor<double>({2.0, 0.0, 1.0, 4.0, 0.0, 3.0, 1.5, 2.5}, kDouble).to(kHalf).requires_grad_();
  h.norm(0.5).square().mul(40.0).backward();
  const Tensor gh = h.grad().to(kDouble);
  EXPECT_EQ(gh[1].item<double>(), 0.0) << h.grad();
  EXPECT_EQ(gh[4].item<double>(), 0.0) << h.grad();
  EXPECT_TRUE(gh.isfinite().all().item<bool>()) << h.grad();
  // p >= 1: the same values where nothing overflows, and a second derivative
  // of 0 (not NaN) at a zero norm (seed 83 case 74931: norm(0, 3))
  Tensor z = zeros({1, 1}).requires_grad_();
  Tensor gz = autograd::grad({z.norm(3.0)}, {z}, {}, true, true)[0];
  Tensor ggz = autograd::grad({gz.sum()}, {z})[0];
  EXPECT_EQ(ggz.item<float>(), 0.0f) << ggz;
  // the norm of one denormal element is |x| (no underflow), and its gradient
  // sign(x), not 0 * inf (seed 89 case 90218: norm(1e-40, 3))
  Tensor d = tensor<double>({1e-40}, kDouble).to(kFloat).reshape({}).requires_grad_();
  d.norm(3.0, {0}, false).backward();
  EXPECT_EQ(d.grad().item<float>(), 1.0f) << d.grad();
  Tensor y = tensor<double>({3.0, -4.0, 1.0, 0.0}, kDouble).to(kFloat).requires_grad_();
  y.norm(3.0).mul(7.0).backward();
  const Tensor yd = tensor<double>({3.0, -4.0, 1.0, 0.0}, kDouble).requires_grad_();
  yd.norm(3.0).mul(7.0).backward();
  EXPECT_TRUE(y.grad().to(kDouble).allclose(yd.grad(), 1e-5, 0)) << y.grad() << yd.grad();
}

// ---- found by difffuzz seed 101 (torch 2.15) ------------------------------------------------

// Note [16-bit scatter accumulation]: torch's CPU scatter_add of 16-bit
// floats, and its index_add of bfloat16, accumulate in float32 and round
// once; brisk rounded after each addition (seed 101 case 297995: -2 plus
// four bfloat16 terms at one index, torch -0.0376, brisk gave -0.0469).
// index_add of float16 rounds each addition in torch, and still does here.
TEST(PyTorchDivergence, SixteenBitScatterAddAccumulatesInFloat) {
  const Tensor v0 = tensor<double>({-2.0}, kDouble).to(kBFloat16);
  const Tensor src = tensor<double>({-0.51171875, -0.08837890625, 2.0, 0.5625}, kDouble).to(kBFloat16);
  const Tensor idx = zeros({4}, TensorOptions(kInt64));
  EXPECT_TRUE(same_bits(scatter_add(v0, 0, idx, src), {-0.03759765625}));
  manual_seed(5);
  for (ScalarType dt : {kHalf, kBFloat16}) {
    const Tensor self = randn({3, 4}).to(dt), s = randn({200, 4}).to(dt);
    const Tensor i = randint(0, 3, {200, 4});
    const Tensor want = scatter_add(self.to(kFloat), 0, i, s.to(kFloat)).to(dt);
    EXPECT_TRUE(scatter_add(self, 0, i, s).equal(want)) << dt;
    // a strided self keeps its layout
    Tensor t = self.t().contiguous().t();
    t.scatter_add_(0, i, s);
    EXPECT_TRUE(t.equal(want)) << dt;
  }
  const Tensor b = randn({3, 4}).to(kBFloat16), bs = randn({300, 4}).to(kBFloat16);
  const Tensor bi = randint(0, 3, {300});
  EXPECT_TRUE(b.clone().index_add_(0, bi, bs, 0.5).equal(b.to(kFloat).index_add_(0, bi, bs.to(kFloat), 0.5).to(kBFloat16)));
  // float16 index_add: each addition rounded, as torch (1 + 2048 rounds back to 2048)
  const Tensor h = zeros({1}, TensorOptions(kHalf)), hs = full({3000}, 1.0, TensorOptions(kHalf));
  EXPECT_EQ(h.clone().index_add_(0, zeros({3000}, TensorOptions(kInt64)), hs).item<float>(), 2048.0f);
}

// ---- found by difffuzz seed 113 (torch 2.15) --------------------------------------------------

// rsqrt's gradient in torch's order, (-0.5 * grad) * result.pow(3): brisk
// multiplied grad * y^3 first, which passes float16's 65504 (387.5 * 211.8)
// and gave inf where torch gives -40960 (seed 113 case 1104155). brisk's
// -41024 is the exact gradient rounded (-41016); torch's float16 rsqrt is an
// ulp low here (5.95703125 against the correctly rounded 5.9609375 that
// brisk returns), hence its -40960.
TEST(PyTorchDivergence, RsqrtGradientInTorchsOrder) {
  Tensor x = tensor<double>({0.0281524658203125}, kDouble).to(kHalf).requires_grad_();
  Tensor y = x.rsqrt();
  EXPECT_TRUE(same_bits(y, {5.9609375}));
  y.backward(full({1}, 387.5, TensorOptions(kHalf)));
  EXPECT_TRUE(same_bits(x.grad(), {-41024.0})) << x.grad();
  // float32 and float64: the same formula
  for (ScalarType dt : {kFloat, kDouble}) {
    Tensor v = tensor<double>({0.0281524658203125, 2.5, 1e-3}, kDouble).to(dt).requires_grad_();
    const Tensor g = tensor<double>({387.5, -1.0, 3.0}, kDouble).to(dt);
    v.rsqrt().backward(g);
    const Tensor y = v.detach().rsqrt();
    EXPECT_TRUE(v.grad().equal(g * -0.5 * y.pow(3))) << dt;
    EXPECT_TRUE(v.grad().allclose(g * -0.5 * v.detach().pow(-1.5), 1e-5, 0)) << dt;
  }
}

// ---- found by difffuzz seed 131 (torch 2.15) --------------------------------------------------

// F::linear of a 16-bit input of more than two dims adds the bias inside the
// one GEMM (torch flattens the leading dims into addmm's rows); brisk
// rounded x @ W^T to float16 first and then added the bias (-1.2788 ->
// -1.279296875, minus the bias 1.279296875: 0 where the exact value is
// 3.961e-4; seed 131 case 1248247).
TEST(PyTorchDivergence, SixteenBitLinearOfThreeDimsAddsTheBiasBeforeRounding) {
  namespace F = nn::functional;
  const Tensor x = tensor<double>({-0.53125, -0.265869140625, -0.400146484375, 0.57861328125, 0.35009765625}, kDouble)
                       .to(kHalf)
                       .reshape({1, 1, 5});
  const Tensor w = tensor<double>({1.306640625, 0.552734375, 0.720703125, -0.331298828125, 0.12078857421875}, kDouble)
                       .to(kHalf)
                       .reshape({1, 5});
  const Tensor b = tensor<double>({1.279296875}, kDouble).to(kHalf);
  const Tensor y3 = F::linear(x, w, b), y2 = F::linear(x.reshape({1, 5}), w, b);
  EXPECT_EQ(y3.sizes(), (DimVector{1, 1, 1}));
  EXPECT_TRUE(same_bits(y3.reshape({1}), {3.9625167846679688e-04})) << y3;  // torch 2.15's value
  EXPECT_TRUE(y3.reshape({1, 1}).equal(y2));
  // 4-D and the gradients through it agree with the 2-D form too
  Tensor x4 = x.reshape({1, 1, 1, 5}).detach().requires_grad_(), xx = x.reshape({1, 5}).detach().requires_grad_();
  F::linear(x4, w, b).sum().backward();
  F::linear(xx, w, b).sum().backward();
  EXPECT_TRUE(x4.grad().reshape({1, 5}).equal(xx.grad()));
}

// cumsum(x, dtype=) sums its gradient in x's dtype (torch: cumsum_backward of
// grad.to(x.dtype())); brisk summed it in the result's 16-bit dtype and cast
// up (0.0 where torch gives 0.00217; seed 131 case 984394).
TEST(PyTorchDivergence, CumsumWithADtypeSumsTheGradientInTheInputsDtype) {
  Tensor x = zeros({1, 3}, TensorOptions(kDouble)).requires_grad_();
  const Tensor g = tensor<double>({256, 1, 1}, kDouble).reshape({1, 3}).to(kBFloat16);
  cumsum(x, 1, kBFloat16).backward(g);
  // reverse cumsum in float64: 258, 2, 1 (in bfloat16, 256 + 2 rounds to 256)
  EXPECT_EQ(x.grad().dtype(), kDouble);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{258, 2, 1}));
}

// The second derivative through sigmoid and tanh with an infinite incoming
// gradient: torch differentiates sigmoid_backward(g, y) in y as one product,
// g * gg * (1 - 2y); brisk's composite g * (1 - y) * y gave two terms,
// -inf + inf = NaN (seed 131 case 871658, through remainder_). torch 2.15:
// x = tensor([0.3, -0.3]); y = x.sigmoid(); gx, = grad(y, x, tensor([inf, 1.]),
// create_graph=True); grad(gx.sum(), x) -> [-inf, 0.0311...].
TEST(PyTorchDivergence, SigmoidAndTanhSecondDerivativesAreOneProduct) {
  Tensor x = tensor<double>({0.3, -0.3}, kDouble).requires_grad_();
  const Tensor g = tensor<double>({INFINITY, 1.0}, kDouble);
  for (bool tanh : {false, true}) {
    const Tensor y = tanh ? x.tanh() : x.sigmoid();
    const Tensor gx = autograd::grad({y}, {x}, {g}, true, true)[0];
    const Tensor h = autograd::grad({gx.sum()}, {x})[0];
    EXPECT_EQ(h[0].item<double>(), -INFINITY) << (tanh ? "tanh" : "sigmoid");
    // finite: the second derivative, y' (1 - 2y) for sigmoid, -2 y y' for tanh
    const double yv = tanh ? std::tanh(-0.3) : 1 / (1 + std::exp(0.3));
    const double d1 = tanh ? 1 - yv * yv : yv * (1 - yv);
    const double want = tanh ? -2 * yv * d1 : d1 * (1 - 2 * yv);
    EXPECT_NEAR(h[1].item<double>(), want, 1e-15) << (tanh ? "tanh" : "sigmoid");
  }
}

TEST(PyTorchDivergence, ErfGradientSquaresItsInputInOneOp) {
  // torch's erf backward is exp(-(self.pow(2))): one op, so its double backward sends one
  // gradient to self; brisk's v * v sent two, added to a large gradient one at a time in
  // float16 (difffuzz seed 191 case 100024). torch 2.15:
  //   x = tensor([-0.024627685546875], float16, requires_grad); v3 = x.square(); v4 = v3.sqrt()
  //   loss = (x * 0.375 + v3 * 0.125 + v4 * -0.125 + v4.erf() * -0.375) in float64, summed
  //   g = grad(loss, x, create_graph) -> 0.9169921875; grad((g * -0.875).sum(), x) -> -0.234375
  //   (float64 program: -0.23697571462759015; v * v gave -0.25)
  Tensor x = tensor<double>({-0.024627685546875}, kDouble).to(kHalf).requires_grad_();
  Tensor v3 = x.square(), v4 = v3.sqrt(), v5 = v4.erf();
  Tensor loss = (x.to(kDouble) * 0.375 + v3.to(kDouble) * 0.125 + v4.to(kDouble) * -0.125 +
                 v5.to(kDouble) * -0.375)
                    .sum();
  Tensor g = autograd::grad({loss}, {x}, {}, true, true)[0];
  EXPECT_EQ(g.item<double>(), 0.9169921875);
  Tensor gg = autograd::grad({(g.to(kDouble) * -0.875).sum()}, {x})[0];
  EXPECT_EQ(gg.item<double>(), -0.234375);
}

TEST(PyTorchDivergence, SixteenBitBilinearRoundsEachOutputOnce) {
  // F.bilinear contracts (x1 W) with x2 in one batched product that accumulates in float32
  // and rounds once (torch's _trilinear); brisk rounded each product to the 16-bit dtype
  // before the sum (difffuzz seed 191 case 900295). torch 2.15, bfloat16 and float16:
  //   F.bilinear([[1.]], [[1.0078125, 1.]], [[[1.0234375, -1.]]]) -> 0.031494140625 (bfloat16),
  //   0.03143310546875 (float16, exact); brisk gave 0.03125 in bfloat16
  Tensor x1 = tensor<double>({1.0}, {1, 1}, kDouble);
  Tensor x2 = tensor<double>({1.0078125, 1.0}, {1, 2}, kDouble);
  Tensor w = tensor<double>({1.0234375, -1.0}, {1, 1, 2}, kDouble);
  for (ScalarType dt : {kBFloat16, kHalf}) {
    Tensor y = nn::functional::bilinear(x1.to(dt), x2.to(dt), w.to(dt), Tensor());
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_EQ(y.item<double>(), dt == kBFloat16 ? 0.031494140625 : 0.03143310546875);
  }
  // integers stay integers, as before
  Tensor yi = nn::functional::bilinear(tensor<int64_t>({2}, {1, 1}, kInt64), tensor<int64_t>({3, -1}, {1, 2}, kInt64),
                                       tensor<int64_t>({5, 7}, {1, 1, 2}, kInt64), Tensor());
  EXPECT_EQ(yi.dtype(), kInt64);
  EXPECT_EQ(yi.item<int64_t>(), 2 * (5 * 3 + 7 * -1));
}

TEST(PyTorchDivergence, BinaryCrossEntropyGradientsAreTorchsFormulas) {
  namespace F = nn::functional;
  // At x = 0 or 1 (a sigmoid saturated in float32) torch's input gradient is
  // g (x - t) / max(x (1 - x), 1e-12) and its target gradient -logit(x) g; the composite's
  // clamped logs gave (1 - t) g and 100 g. torch 2.15, float32, reduction='sum':
  //   x = [0., 1., 0.5], t = [0.5, 0.25, 0.5]: x.grad [-499999997952., 750000013312., 0.],
  //   t.grad [inf, -inf, -0.]
  Tensor x = tensor<float>({0.0f, 1.0f, 0.5f}).requires_grad_();
  Tensor t = tensor<float>({0.5f, 0.25f, 0.5f}).requires_grad_();
  auto g = autograd::grad({F::binary_cross_entropy(x, t, F::BinaryCrossEntropyFuncOptions().reduction(nn::kSum))}, {x, t});
  EXPECT_TRUE(same_bits(g[0], {-499999997952.0, 750000013312.0, 0.0}));
  EXPECT_TRUE(same_bits(g[1], {kInf, -kInf, -0.0}));
  // An infinite incoming gradient is inf in both, not inf - inf (difffuzz seed 193 case 716697):
  //   grad(F.binary_cross_entropy(x, t, reduction='none'), [x, t], [inf, 1, 1]) at x = 0.3, t = 0.25
  //   -> x: [inf, 0.2381, 0.2381], t: [inf, 0.8473, 0.8473]
  Tensor x2 = full({3}, 0.3).requires_grad_(), t2 = full({3}, 0.25).requires_grad_();
  auto h = autograd::grad({F::binary_cross_entropy(x2, t2, F::BinaryCrossEntropyFuncOptions().reduction(nn::kNone))},
                          {x2, t2}, {tensor<float>({INFINITY, 1.0f, 1.0f})});
  EXPECT_EQ(h[0][0].item<double>(), kInf);
  EXPECT_EQ(h[1][0].item<double>(), kInf);
  EXPECT_NEAR(h[0][1].item<double>(), 0.05 / 0.21, 1e-6);
  EXPECT_NEAR(h[1][1].item<double>(), std::log(0.7 / 0.3), 1e-6);
  // Second derivatives, float64 with a weight and the mean:
  //   x = [0.3, 0.9], t = [0.25, 1.], w = [1.5, 0.5]; gx, gt = grad(bce(x, t, w), [x, t], create_graph)
  //   -> gx [0.17857142857142855, -0.2777777777777778], gt [0.6354733952904027, -0.5493061443340549]
  //   s = (gx * [1, -2]).sum() + (gt * [0.5, 0.25]).sum(); grad(s, [x, t])
  //   -> [1.445578231261744, -1.3117283950480119], [-3.5714285714285716, 5.555555555555556]
  Tensor x3 = tensor<double>({0.3, 0.9}, kDouble).requires_grad_();
  Tensor t3 = tensor<double>({0.25, 1.0}, kDouble).requires_grad_();
  Tensor w3 = tensor<double>({1.5, 0.5}, kDouble);
  auto g3 = autograd::grad({F::binary_cross_entropy(x3, t3, F::BinaryCrossEntropyFuncOptions().weight(w3))},
                           {x3, t3}, {}, true, true);
  EXPECT_TRUE(close(g3[0], tensor<double>({0.17857142857142855, -0.2777777777777778}, kDouble), 1e-14, 0));
  EXPECT_TRUE(close(g3[1], tensor<double>({0.6354733952904027, -0.5493061443340549}, kDouble), 1e-14, 0));
  Tensor s = (g3[0] * tensor<double>({1.0, -2.0}, kDouble)).sum() + (g3[1] * tensor<double>({0.5, 0.25}, kDouble)).sum();
  auto h3 = autograd::grad({s}, {x3, t3});
  EXPECT_TRUE(close(h3[0], tensor<double>({1.445578231261744, -1.3117283950480119}, kDouble), 1e-12, 0));
  EXPECT_TRUE(close(h3[1], tensor<double>({-3.5714285714285716, 5.555555555555556}, kDouble), 1e-12, 0));
}

// torch.igamma is a binary op with type promotion: result_type(a, x), where a
// 0-dim tensor does not lift a tensor with dims of its category, and an
// integer or bool argument takes the other's floating dtype. brisk promoted
// with promote_types (float64 for a 0-dim float64 a and float32 x; seed 211
// cases 414811, 187867, 661794) and refused integer and bool arguments
// (cases 25813, 134038, 226162, 102071, 62609). torch 2.15:
//   igamma(tensor(0.9997433320094531, float64), tensor([1.716581106185913, 2.3128185272216797]))
//     -> float32 [0.8203908205032349, 0.9010623097419739]
//   igamma(tensor([1.0478515625, 2.2109375], float16), tensor(0.28556469082832336))
//     -> float16 [0.2283935546875, 0.0210418701171875]
//   igamma(tensor(0.1875, bfloat16), tensor([0.5, 3.0], float16)) -> float16 [0.88671875, 0.99658203125]
//   igamma(tensor([False, True]), tensor([2.241037607192993, 0.5])) -> float32 [1.0, 0.39346936345100403]
//   igamma(tensor([1, 3], int32), tensor([2.5, 2.5])) -> float32 [0.9179149866104126, 0.456186980009079]
//   igamma(tensor([1, 2], uint8), tensor([2., 2.], float16)) -> float16 [0.86474609375, 0.59423828125]
//   igamma(tensor(2, int32), tensor([1.5], bfloat16)) -> bfloat16 [0.44140625]
//   igamma(tensor([1.5, 2.5], float64), tensor([2, 3])) -> float64 [0.7385358700508888, 0.6937810815867212]
//   igamma(tensor([1, 2]), tensor([1, 2])) -> RuntimeError: "igamma_cpu" not implemented for 'Long'
TEST(PyTorchDivergence, IgammaPromotesLikeABinaryOp) {
  auto check = [](const Tensor& a, const Tensor& x, ScalarType dt, const std::vector<double>& want, double tol) {
    const Tensor p = igamma(a, x);
    EXPECT_EQ(p.dtype(), dt) << a.dtype() << " " << x.dtype();
    const std::vector<double> got = values(p);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << a.dtype() << " " << x.dtype() << " " << i;
  };
  check(tensor<double>({0.9997433320094531}, {}, kDouble), tensor<double>({1.716581106185913, 2.3128185272216797}).to(kFloat),
        kFloat, {0.8203908205032349, 0.9010623097419739}, 1e-7);
  check(tensor<double>({1.0478515625, 2.2109375}).to(kHalf), tensor<double>({0.28556469082832336}, {}, kDouble).to(kFloat), kHalf,
        {0.2283935546875, 0.0210418701171875}, 1e-4);
  check(tensor<double>({0.1875}, {}, kDouble).to(kBFloat16), tensor<double>({0.5, 3.0}).to(kHalf), kHalf,
        {0.88671875, 0.99658203125}, 1e-3);
  check(tensor<int64_t>({0, 1}).to(kBool), tensor<double>({2.241037607192993, 0.5}).to(kFloat), kFloat,
        {1.0, 0.39346936345100403}, 1e-7);
  check(tensor<int64_t>({1, 3}).to(kInt32), tensor<double>({2.5, 2.5}).to(kFloat), kFloat,
        {0.9179149866104126, 0.456186980009079}, 1e-7);
  // P(2, 2) = 0.59399415... is a hair above the midpoint of two float16 values: torch's float32
  // rounds it up, brisk's float64 -> float32 -> float16 to the even one (0.59375): one ulp
  check(tensor<int64_t>({1, 2}).to(kUInt8), tensor<double>({2.0, 2.0}).to(kHalf), kHalf, {0.86474609375, 0.59423828125},
        5e-4);
  check(tensor<int64_t>({2}, {}, kInt64).to(kInt32), tensor<double>({1.5}).to(kBFloat16), kBFloat16, {0.44140625}, 1e-3);
  check(tensor<double>({1.5, 2.5}, kDouble), tensor<int64_t>({2, 3}), kDouble, {0.7385358700508888, 0.6937810815867212},
        1e-15);
  // no integer kernel, as in torch: two integer (or bool) arguments are refused
  expect_error([] { igamma(tensor<int64_t>({1, 2}), tensor<int64_t>({1, 2})); }, {"igamma", "floating point", "int64"});
  expect_error([] { igamma(tensor<int64_t>({1}).to(kBool), tensor<int64_t>({1})); }, {"igamma", "floating point"});
}

// igamma's edge values follow cephes' order, as torch's calc_igamma: x = 0
// gives 0 and x = inf gives 1 before a is looked at (a NaN included), a = inf
// gives 0 for any x but inf; brisk gave NaN for a NaN a (seed 211 case
// 384413). For a = x = 1e30 brisk's series gave NaN where torch's uniform
// asymptotic expansion gives 0.5 (case 212897). torch 2.15, float64, float32
// and bfloat16 alike:
//   igamma([nan, nan, inf, 0., nan, 1e30, 2.], [0., inf, nan, nan, 1., 1e30, -0.])
//     -> [0., 1., 0., nan, nan, 0.5 (0.5000000000000001 in float64), 0.]
TEST(PyTorchDivergence, IgammaEdgeValuesFollowCephes) {
  const std::vector<double> a = {kNan, kNan, kInf, 0.0, kNan, 1e30, 2.0};
  const std::vector<double> x = {0.0, kInf, kNan, kNan, 1.0, 1e30, -0.0};
  for (ScalarType dt : {kDouble, kFloat, kBFloat16}) {
    const std::vector<double> got = values(igamma(tensor<double>(a).to(dt), tensor<double>(x).to(dt)));
    EXPECT_EQ(got[0], 0.0) << dt;
    EXPECT_EQ(got[1], 1.0) << dt;
    EXPECT_EQ(got[2], 0.0) << dt;
    EXPECT_TRUE(std::isnan(got[3])) << dt;
    EXPECT_TRUE(std::isnan(got[4])) << dt;
    EXPECT_NEAR(got[5], 0.5, 2e-16) << dt;
    EXPECT_EQ(got[6], 0.0) << dt;
  }
}

// igamma's gradient in x was computed from detached copies of a and x, so it
// had no derivative of its own: no second derivative at all (seed 211 cases
// 527111, 245363, 84441) or one without igamma's term after sigmoid or square
// (cases 39706, 280193, 258559, 583159, 248954). torch 2.15 (formula
// grad * exp((a - 1) * log(x) - x - lgamma(a))), float64:
//   a = [2., 3., 1.538262128829956]; x = [0.5, 2., 0.8400624990463257] (requires grad)
//   g = grad(igamma(a, x).sum(), x, create_graph=True)
//     -> [0.3032653298563167, 0.2706705664732254, 0.4425681211043267]
//   grad(g.sum(), x) -> [0.3032653298563167, 0.0, -0.15899676862957224]
//   through sigmoid: g = grad(igamma(a, x).sigmoid().sum(), x, create_graph=True)
//     -> [0.07566231648019173, 0.0659295410551987, 0.10741765623263246]
//   grad(g.sum(), x) -> [0.07462811796914955, -0.0028600130468035946, -0.04670636440284016]
//   with an int64 a = [2] and x = [1.5] (float32): g -> 0.3346952497959137, its derivative
//   -> -0.11156508326530457
TEST(PyTorchDivergence, IgammaHasASecondDerivativeInX) {
  const Tensor a = tensor<double>({2.0, 3.0, 1.538262128829956}, kDouble);
  Tensor x = tensor<double>({0.5, 2.0, 0.8400624990463257}, kDouble).requires_grad_();
  Tensor g = autograd::grad({igamma(a, x).sum()}, {x}, {}, true, true)[0];
  EXPECT_TRUE(g.requires_grad());
  const std::vector<double> g_want = {0.3032653298563167, 0.2706705664732254, 0.4425681211043267};
  const std::vector<double> gg_want = {0.3032653298563167, 0.0, -0.15899676862957224};
  const std::vector<double> gv = values(g), ggv = values(autograd::grad({g.sum()}, {x})[0]);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(gv[i], g_want[i], 1e-15) << i;
    EXPECT_NEAR(ggv[i], gg_want[i], 1e-15) << i;
  }
  Tensor gs = autograd::grad({igamma(a, x).sigmoid().sum()}, {x}, {}, true, true)[0];
  const std::vector<double> gs_want = {0.07566231648019173, 0.0659295410551987, 0.10741765623263246};
  const std::vector<double> ggs_want = {0.07462811796914955, -0.0028600130468035946, -0.04670636440284016};
  const std::vector<double> gsv = values(gs), ggsv = values(autograd::grad({gs.sum()}, {x})[0]);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(gsv[i], gs_want[i], 1e-15) << i;
    EXPECT_NEAR(ggsv[i], ggs_want[i], 1e-15) << i;
  }
  // an integer a takes part in the formula as torch's does
  Tensor xf = tensor<double>({1.5}).to(kFloat).requires_grad_();
  Tensor gi = autograd::grad({igamma(tensor<int64_t>({2}), xf).sum()}, {xf}, {}, true, true)[0];
  EXPECT_EQ(gi.dtype(), kFloat);
  EXPECT_NEAR(gi.item<double>(), 0.3346952497959137, 1e-7);
  EXPECT_NEAR(autograd::grad({gi.sum()}, {xf})[0].item<double>(), -0.11156508326530457, 1e-7);
}

// ---- found by difffuzz seed 211 (torch 2.15) --------------------------------------------------

// digamma's second derivative is polygamma(2, x) (torch: grad * polygamma(1, self),
// polygamma(n)'s derivative polygamma(n + 1)); brisk refused ("double backward needs
// polygamma(2, x), which is not implemented"; seed 211 cases 87273, 535541, 174466). torch 2.15:
//   x = tensor([2.3530428409576416, -0.9959619045257568, 0.5, -2.5, 1e-3, 30., -1., 0., -0.], float64)
//   g = grad(digamma(x).sum(), x, create_graph); h = grad(g.sum(), x, create_graph); k = grad(h.sum(), x)
//   h [-0.27283047714236236, -30373878.54112892, -16.828796644234316, -0.1082040516417282,
//      -2000000002.3976321, -0.0011487652037285997, -inf, -inf, -inf]
//   k [0.27703547016885766, 22565497817.980743, 97.40909103400242, 194.74787621918756,
//      6000000000006.467, 7.786003664736127e-05, inf, inf, inf]
//   float32 2.3530428409576416: h -0.2728304862976074; float16 0.54296875: h -13.265625,
//   bfloat16 0.54296875: h -13.25
TEST(PyTorchDivergence, DigammaSecondDerivativeIsPolygammaOfTwo) {
  const std::vector<double> xs = {2.3530428409576416, -0.9959619045257568, 0.5, -2.5, 1e-3, 30.0, -1.0, 0.0, -0.0};
  const std::vector<double> h_want = {-0.27283047714236236, -30373878.54112892, -16.828796644234316,
                                      -0.1082040516417282,  -2000000002.3976321, -0.0011487652037285997,
                                      -kInf,                -kInf,               -kInf};
  const std::vector<double> k_want = {0.27703547016885766, 22565497817.980743, 97.40909103400242,
                                      194.74787621918756,  6000000000006.467,  7.786003664736127e-05,
                                      kInf,                kInf,               kInf};
  Tensor x = tensor<double>(xs, kDouble).requires_grad_();
  Tensor g = autograd::grad({x.digamma().sum()}, {x}, {}, true, true)[0];
  Tensor h = autograd::grad({g.sum()}, {x}, {}, true, true)[0];
  Tensor k = autograd::grad({h.sum()}, {x})[0];
  const std::vector<double> hv = values(h), kv = values(k);
  for (size_t i = 0; i < xs.size(); ++i) {
    if (std::isinf(h_want[i])) {
      EXPECT_EQ(hv[i], h_want[i]) << xs[i];
      EXPECT_EQ(kv[i], k_want[i]) << xs[i];
    } else {
      EXPECT_NEAR(hv[i], h_want[i], 4e-16 * std::fabs(h_want[i])) << xs[i];
      EXPECT_NEAR(kv[i], k_want[i], 4e-16 * std::fabs(k_want[i])) << xs[i];
    }
  }
  // the 16-bit and float32 cases of the run
  Tensor f = tensor<double>({2.3530428409576416}, kDouble).to(kFloat).requires_grad_();
  Tensor gf = autograd::grad({f.digamma().sum()}, {f}, {}, true, true)[0];
  EXPECT_NEAR(autograd::grad({gf.sum()}, {f})[0].item<double>(), -0.2728304862976074, 3e-8);
  for (ScalarType dt : {kHalf, kBFloat16}) {
    Tensor hx = tensor<double>({0.54296875}, kDouble).to(dt).requires_grad_();
    Tensor gh = autograd::grad({hx.digamma().sum()}, {hx}, {}, true, true)[0];
    EXPECT_EQ(autograd::grad({gh.sum()}, {hx})[0].item<double>(), dt == kHalf ? -13.265625 : -13.25) << dt;
  }
  // in place (digamma_, seed 211 case 174466), through the saved old value
  Tensor y = tensor<double>({-0.9959619045257568}, kDouble).requires_grad_();
  Tensor y2 = y * 1;
  y2.digamma_();
  Tensor gy = autograd::grad({y2.sum()}, {y}, {}, true, true)[0];
  EXPECT_NEAR(autograd::grad({gy.sum()}, {y})[0].item<double>(), -30373878.54112892, 1e-7);
}

// logit's gradient at 0 and 1 is grad * inf (+inf at -0.0 as at 0, for a positive grad), and at
// a nan x nan also with eps: torch's logit_backward kernel in its scalar loop (which runs small,
// strided and tail elements); brisk had taken its vector loop's grad / (x (1 - x)) (-inf at -0.0)
// and its 0 for a nan outside [eps, 1 - eps] (seed 211 cases 170242, 45359, 27461, 364128). torch 2.15:
//   x = tensor([-0., 0., 1., 0.3], float64): grad(logit(x), x, [0.625, -0.5, -0.5, 0.625])
//     -> [inf, -inf, -inf, 2.9761904761904763]
//   x = tensor([nan, 0.5, 2., 0.], float64): grad(logit(x, 1e-6), x, ones) -> [nan, 4, 0, 0]
//   logit_backward([1., 1., -1., 1.], [-0., nan, 0., 1.], None) -> [inf, nan, -inf, inf] (float16,
//   bfloat16, float32; eps=0: the same; eps=0.1: [0, nan, 0, 0])
//   under create_graph (infinitely_differentiable_logit_backward, a where of the quotient):
//     [-inf, -inf, -inf, 2.976...] and [0, 4, 0, 0]; brisk's composite gives those too
TEST(PyTorchDivergence, LogitGradientAtZeroOneAndNanIsTorchsScalarLoop) {
  for (bool create_graph : {false, true}) {
    Tensor x = tensor<double>({-0.0, 0.0, 1.0, 0.3}, kDouble).requires_grad_();
    Tensor g = autograd::grad({x.logit()}, {x}, {tensor<double>({0.625, -0.5, -0.5, 0.625}, kDouble)}, true,
                              create_graph)[0];
    const double first = create_graph ? -kInf : kInf;
    EXPECT_TRUE(same_bits(g.slice(0, 0, 3), {first, -kInf, -kInf})) << create_graph;
    EXPECT_NEAR(g[3].item<double>(), 2.9761904761904763, 1e-15);
    Tensor x2 = tensor<double>({kNan, 0.5, 2.0, 0.0}, kDouble).requires_grad_();
    Tensor g2 = autograd::grad({x2.logit(1e-6)}, {x2}, {ones({4}, TensorOptions(kDouble))}, true, create_graph)[0];
    EXPECT_TRUE(same_bits(g2, {create_graph ? 0.0 : kNan, 4, 0, 0})) << create_graph;
  }
  for (ScalarType dt : {kHalf, kBFloat16, kFloat}) {
    const Tensor g = tensor<double>({1, 1, -1, 1}, kDouble).to(dt);
    const Tensor v = tensor<double>({-0.0, kNan, 0.0, 1.0}, kDouble).to(dt);
    EXPECT_TRUE(same_bits(logit_backward(g, v), {kInf, kNan, -kInf, kInf})) << dt;
    EXPECT_TRUE(same_bits(logit_backward(g, v, 0.0), {kInf, kNan, -kInf, kInf})) << dt;
    EXPECT_TRUE(same_bits(logit_backward(g, v, 0.1), {0, kNan, 0, 0})) << dt;
  }
}

// logit(x, eps) of float16/bfloat16 clamps to eps and 1 - eps in the tensor's dtype, as torch's
// CPU kernels (scalar_t eps, scalar_t(1) - eps), forward and backward; brisk formed the bounds
// in float32 (seed 211 cases 349230, 218091, 65040, 181359). torch 2.15:
//   logit(tensor([2.341796875, 2.], float16), 1e-6) -> [inf, inf] (1 - eps is 1 in float16);
//     eps=0.01 -> [4.6171875, 4.6171875] (bfloat16: [4.4375, 4.4375]; float32 4.595120906829834)
//   x = tensor([0.990234375, 0.99072265625, 0.01000213623046875, 0.0099945068359375], float16):
//     grad(logit(x, 0.01), x, ones) -> [103.375, 0, 101, 0] (create_graph: the same); brisk had
//     [0, 0, 101, 0] (its float32 bound 0.99 left out 0.990234375, the float16 bound). (103.375:
//     torch rounds x (1 - x) to float16 first; brisk's kernel rounds once, 103.4375, the exact
//     103.41 rounded: one unit in the last place, not this test's subject.)
TEST(PyTorchDivergence, SixteenBitLogitClampsInItsDtype) {
  const Tensor x = tensor<double>({2.341796875, 2.0}, kDouble);
  EXPECT_TRUE(same_bits(x.to(kHalf).logit(1e-6), {kInf, kInf}));
  EXPECT_TRUE(same_bits(x.to(kHalf).logit(0.01), {4.6171875, 4.6171875}));
  EXPECT_TRUE(same_bits(x.to(kBFloat16).logit(0.01), {4.4375, 4.4375}));
  EXPECT_TRUE(same_bits(x.to(kFloat).logit(0.01), {4.595120906829834, 4.595120906829834}));
  Tensor ip = x.to(kHalf);
  ip.logit_(1e-6);
  EXPECT_TRUE(same_bits(ip, {kInf, kInf}));
  for (bool create_graph : {false, true}) {
    Tensor h = tensor<double>({0.990234375, 0.99072265625, 0.01000213623046875, 0.0099945068359375}, kDouble)
                   .to(kHalf)
                   .requires_grad_();
    Tensor g = autograd::grad({h.logit(0.01)}, {h}, {ones({4}, TensorOptions(kHalf))}, true, create_graph)[0];
    EXPECT_NEAR(g[0].item<double>(), 103.375, 0.0625) << create_graph;
    EXPECT_TRUE(same_bits(g.slice(0, 1, 4), {0, 101, 0})) << create_graph;
  }
}

TEST(PyTorchDivergence, MedianOfAllElementsAsTorch) {
  // Found by the fuzzer's nn2 family (seed 401 cases 9979, 307172, 552133). torch 2.15:
  //   x = tensor([1., 2., 3.], requires_grad); x.median().backward(inf) -> x.grad [0, inf, 0]
  //   (torch's CPU evenly_distribute_backward masks; brisk multiplied by the mask: inf * 0 = NaN)
  //   x = tensor([1., 2., 2., nan]); x.nanmedian().backward(nan) -> [0, nan, nan, 0]
  Tensor x = tensor<double>({1, 2, 3}, kDouble).requires_grad_();
  x.median().backward(full({}, kInf, kDouble));
  EXPECT_TRUE(same_bits(x.grad(), {0, kInf, 0}));
  Tensor y = tensor<double>({1, 2, 2, kNan}, kDouble).requires_grad_();
  y.nanmedian().backward(full({}, kNan, kDouble));
  EXPECT_TRUE(same_bits(y.grad(), {0, kNan, kNan, 0}));
  //   e = torch.empty(0, requires_grad=True); e.median() -> tensor(nan, grad_fn=<MedianBackward0>);
  //   backward() -> e.grad tensor([])
  Tensor e = empty({0}, kFloat).requires_grad_();
  Tensor m = e.median();
  EXPECT_TRUE(std::isnan(m.item<double>()));
  EXPECT_TRUE(m.requires_grad());
  m.backward();
  EXPECT_EQ(e.grad().numel(), 0);
  EXPECT_TRUE(e.nanmedian().requires_grad());
  //   torch.empty(0, dtype=d).median(): int8, int16, uint8 0; int32 -2147483648; int64 -2^63
  //   (the NaN cast through int32; brisk gave each dtype's lowest value)
  for (ScalarType dt : {kChar, kShort, kByte, kInt, kLong}) {
    const int64_t want = dt == kInt ? std::numeric_limits<int32_t>::min()
                         : dt == kLong ? std::numeric_limits<int64_t>::min()
                                       : 0;
    EXPECT_EQ(empty({0}, dt).median().item<int64_t>(), want) << dt;
    EXPECT_EQ(empty({0}, dt).nanmedian().item<int64_t>(), want) << dt;
  }
}

TEST(PyTorchDivergence, LossWeightsTakeTheLossDtypeAndEdgeShapes) {
  namespace F = nn::functional;
  // PyTorch multiplies weight and pos_weight into the loss in place: a float64 weight keeps a
  // float32 loss float32 (a review's find). torch 2.15, x = [0.3, 0.6] requiring grad, t = [0, 1],
  // weight = [1, 2] float64: bce -> float32 0.689163088798523, x.grad [0.7143, -1.6667];
  // bce_with_logits with pos_weight [2, 3] float64 -> float32 1.7396414279937744, x.grad [0.2872, -1.0630]
  const Tensor t = tensor<float>({0.0f, 1.0f});
  const Tensor w = tensor<double>({1.0, 2.0}, kDouble), pw = tensor<double>({2.0, 3.0}, kDouble);
  Tensor x = tensor<float>({0.3f, 0.6f}).requires_grad_();
  Tensor l = F::binary_cross_entropy(x, t, F::BinaryCrossEntropyFuncOptions().weight(w));
  EXPECT_EQ(l.dtype(), kFloat);
  EXPECT_NEAR(l.item<double>(), 0.689163088798523, 1e-6);
  l.backward();
  EXPECT_EQ(x.grad().dtype(), kFloat);
  EXPECT_TRUE(close(x.grad(), tensor<float>({0.5f / 0.7f, -1.0f / 0.6f}), 1e-5, 0));
  Tensor x2 = tensor<float>({0.3f, 0.6f}).requires_grad_();
  Tensor l2 = F::binary_cross_entropy_with_logits(x2, t, F::BinaryCrossEntropyWithLogitsFuncOptions().weight(w).pos_weight(pw));
  EXPECT_EQ(l2.dtype(), kFloat);
  EXPECT_NEAR(l2.item<double>(), 1.7396414279937744, 1e-6);
  l2.backward();
  EXPECT_EQ(x2.grad().dtype(), kFloat);
  EXPECT_TRUE(close(x2.grad(), tensor<float>({0.2872f, -1.0630f}), 0, 1e-4));
  // F.bilinear(ones(3, 2), ones(3, 4), ones(0, 2, 4)).shape -> (3, 0)
  EXPECT_EQ(F::bilinear(ones({3, 2}), ones({3, 4}), ones({0, 2, 4}), Tensor()).sizes(), IntArrayRef({3, 0}));
  // ctc_loss of an impossible sample (3 labels in 2 steps) without zero_infinity: loss inf, and
  // torch's log_probs gradient is NaN at its time steps: lp = linspace(-2, 0.5, 6, float64)
  // .reshape(2, 1, 3).log_softmax(2) (a leaf), ctc_loss(lp, [[1, 2, 1]], [2], [3], reduction='sum')
  Tensor lp = linspace(-2, 0.5, 6, kDouble).reshape({2, 1, 3}).log_softmax(2).detach().requires_grad_();
  Tensor c = F::ctc_loss(lp, tensor<int64_t>({1, 2, 1}).reshape({1, 3}), tensor<int64_t>({2}), tensor<int64_t>({3}),
                         F::CTCLossFuncOptions().reduction(nn::kSum));
  EXPECT_EQ(c.item<double>(), kInf);
  EXPECT_TRUE(autograd::grad({c}, {lp})[0].isnan().all().item<bool>());
}

TEST(PyTorchDivergence, IscloseRoundsEachStepToTheDtypeAndCastsIntegersToFloat) {
  // PyTorch's isclose is a composite of tensor ops: |x - y| and atol + |rtol * y| are each rounded
  // to a 16-bit dtype (found by the fuzzer, seed 233 case 279689), and integer inputs are compared
  // in the default float dtype. torch 2.15:
  //   a = [-0.5, 1, 100, 2, 65504, -65504, 0.1] float16, b = [1e-7, 1.001, 100.5, 2.002, -65504,
  //   65504, 0.1001] float16: isclose(a, b, 1e-3, 0.5) -> [T, T, T, T, F, F, T] (float32: first F)
  const Tensor a = tensor<double>({-0.5, 1.0, 100.0, 2.0, 65504.0, -65504.0, 0.1}, kDouble).to(kHalf);
  const Tensor b = tensor<double>({1e-7, 1.001, 100.5, 2.002, -65504.0, 65504.0, 0.1001}, kDouble).to(kHalf);
  const auto bools = [](const Tensor& t) {
    std::vector<bool> v;
    for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t[i].item<bool>());
    return v;
  };
  EXPECT_EQ(bools(isclose(a, b, 1e-3, 0.5)), (std::vector<bool>{true, true, true, true, false, false, true}));
  EXPECT_EQ(bools(isclose(a.to(kFloat), b.to(kFloat), 1e-3, 0.5)),
            (std::vector<bool>{false, true, true, true, false, false, true}));
  EXPECT_EQ(bools(isclose(a, b, 1e-3, 0.0)), (std::vector<bool>{false, true, false, true, false, false, false}));
  // bfloat16 [-0.5, 1] vs [1e-7, 1.0078125], atol 0.5 -> [T, T]
  EXPECT_EQ(bools(isclose(tensor<double>({-0.5, 1.0}, kDouble).to(kBFloat16),
                          tensor<double>({1e-7, 1.0078125}, kDouble).to(kBFloat16), 1e-5, 0.5)),
            (std::vector<bool>{true, true}));
  // int64: isclose([2^40 + 1], [2^40], rtol=1e-13, atol=0) -> T (float32), [16777217] vs [0] with
  // atol 16777216 -> T, int8 -128 vs 127 with atol 255 -> T; zero tolerances compare exactly
  const int64_t big = int64_t(1) << 40;
  EXPECT_TRUE(isclose(tensor<int64_t>({big + 1}), tensor<int64_t>({big}), 1e-13, 0).item<bool>());
  EXPECT_TRUE(isclose(tensor<int64_t>({16777217}), tensor<int64_t>({0}), 0, 16777216).item<bool>());
  EXPECT_TRUE(isclose(tensor<int64_t>({-128}).to(kInt8), tensor<int64_t>({127}).to(kInt8), 0, 255).item<bool>());
  EXPECT_FALSE(isclose(tensor<int64_t>({big + 1}), tensor<int64_t>({big}), 0, 0).item<bool>());
  EXPECT_EQ(isclose(tensor<int64_t>({3}), tensor<int64_t>({3}), 0, 0).dtype(), kBool);
  // torch: "rtol must be greater than or equal to zero, but got -1"
  expect_error([&] { isclose(a, b, -1.0, 0.0); }, {"[isclose]", "rtol must be greater than or equal to zero"});
  expect_error([&] { isclose(a, b, 0.0, -1.0); }, {"[isclose]", "atol must be greater than or equal to zero"});
}

TEST(PyTorchDivergence, SixteenBitConvolutionsRoundOnceWithTheirBias) {
  namespace F = nn::functional;
  const auto bf16 = [](std::vector<double> v, std::vector<int64_t> shape) {
    return tensor<double>(v, kDouble).reshape(shape).to(kBFloat16);
  };
  // conv_transpose3d sums 2-D convolutions over its depth taps: in bfloat16 each tap, partial sum
  // and the bias rounded (fuzzer, seed 233 case 103966). torch 2.15, element 31 of
  // conv_transpose3d(x, w, b) -> -0.000598907470703125 (float64 says the same); brisk gave 0.
  const Tensor x3 = bf16({0.0986328125, 0.26171875, -0.30859375, -0.2216796875, 0.265625, -0.87109375, -0.205078125,
                          1.09375, 0.07861328125, 1.2734375, -0.171875, -1.1171875, -0.8359375, 0.32421875,
                          -0.392578125, -0.08056640625, 0.007415771484375, -0.57421875, 0.0830078125, -1.2109375,
                          -0.234375, -0.2392578125, 0.119140625, 0.255859375, -0.162109375, 0.91015625, 0.1767578125,
                          -0.76953125, 0.6953125, 0.65625, 0.92578125, -0.953125, -0.1103515625, 1.34375, -1.125,
                          -0.259765625},
                         {2, 3, 3, 2});
  const Tensor w3 = bf16({-0.5859375, 0.08935546875, -0.421875, -0.447265625, -0.0201416015625, 0.70703125, 0.4765625,
                          -0.189453125},
                         {2, 1, 2, 2, 1});
  const Tensor b3 = bf16({-0.306640625}, {1});
  const Tensor y3 = F::conv_transpose3d(x3, w3, b3);
  ASSERT_EQ(y3.sizes(), IntArrayRef({1, 4, 4, 2}));
  EXPECT_EQ(y3.reshape({-1})[31].item<double>(), -0.000598907470703125);
  EXPECT_EQ(y3.reshape({-1})[0].item<double>(), -0.365234375);  // torch; brisk gave -0.3671875
  // conv_transpose2d in bfloat16 added its bias to the rounded product (seed 229 case 365384):
  // torch 2.15, element 56 of conv_transpose2d(x, w, b, stride=2, output_padding=1) -> 3.921875
  // (float64 3.9184; the product alone rounds to 4.1875, + b to 3.9375, brisk's)
  const Tensor x2 = bf16({-1.1953125, 0.30078125, -9.98402083170343e-31, 1.140625, -1.390625, -2.609375, -1.453125,
                          -2.5, 0.44921875, -1.0546875, -2.234375, -2.5, -1.8125, -9.98402083170343e-31, 1.0859375,
                          1.71875, 0.60546875, 1.2734375, -1.75, -2.5, 0.0, 1.5, 0.5, -0.91015625, 1.1796875,
                          -3.96875, 1.3046875, 2.734375, -0.1103515625, -1.7265625, -3.671875, -0.482421875, 3.21875,
                          0.96484375, 1.0011717677116394e-07, -2.328125},
                         {2, 3, 6});
  const Tensor w2 = bf16({0.07080078125, -0.306640625, -0.06591796875, -0.376953125, 0.205078125, -0.51953125,
                          -0.400390625, 0.07177734375, -0.08837890625, -0.84765625, -0.06591796875, -0.10498046875,
                          0.392578125, 0.3828125, 0.609375, 0.515625, 0.013671875, 0.7109375},
                         {2, 1, 3, 3});
  const Tensor b2 = bf16({-0.255859375}, {1});
  const Tensor y2 = F::conv_transpose2d(x2, w2, b2, 2, 0, 1);
  ASSERT_EQ(y2.sizes(), IntArrayRef({1, 8, 14}));
  EXPECT_EQ(y2.reshape({-1})[56].item<double>(), 3.921875);
  // Every 16-bit convolution with a bias equals the float computation rounded once (PyTorch's CPU
  // kernels accumulate in float and add the bias there).
  manual_seed(7);
  for (ScalarType dt : {kBFloat16, kHalf}) {
    const Tensor x = randn({2, 3, 5, 4, 4}).to(dt), b = randn({4}).to(dt);
    const auto once = [&](const Tensor& r) { return r.to(dt); };
    const auto f = [](const Tensor& t) { return t.to(kFloat); };
    const Tensor wc = randn({4, 3, 2, 3, 2}).to(dt), wt = randn({3, 4, 2, 3, 2}).to(dt);
    EXPECT_TRUE(equal(F::conv3d(x, wc, b, 1, 1), once(F::conv3d(f(x), f(wc), f(b), 1, 1)))) << dt;
    EXPECT_TRUE(equal(F::conv_transpose3d(x, wt, b, 2), once(F::conv_transpose3d(f(x), f(wt), f(b), 2)))) << dt;
    const Tensor x4 = x.select(2, 0), w4c = wc.select(2, 0), w4t = wt.select(2, 0);
    EXPECT_TRUE(equal(F::conv2d(x4, w4c, b, 1, 1), once(F::conv2d(f(x4), f(w4c), f(b), 1, 1)))) << dt;
    EXPECT_TRUE(equal(F::conv_transpose2d(x4, w4t, b, 2), once(F::conv_transpose2d(f(x4), f(w4t), f(b), 2)))) << dt;
    const Tensor x1 = x4.select(2, 0), w1t = w4t.select(2, 0);
    EXPECT_TRUE(equal(F::conv_transpose1d(x1, w1t, b, 2), once(F::conv_transpose1d(f(x1), f(w1t), f(b), 2)))) << dt;
  }
  // conv3d/conv_transpose3d with a float64 bias on float32 input gave a float64 result; torch:
  // "Input type (float) and bias type (double) should be the same"
  const Tensor xf = randn({1, 2, 3, 3, 3}), wf = randn({2, 2, 1, 1, 1}), bd = randn({2}).to(kDouble);
  expect_error([&] { F::conv3d(xf, wf, bd); }, {"[conv3d]", "bias", "same dtype"});
  expect_error([&] { F::conv_transpose3d(xf, wf, bd); }, {"[conv_transpose3d]", "bias", "same dtype"});
}

TEST(PyTorchDivergence, SixteenBitAddReadsAlphaInItsDtype) {
  // PyTorch's CPU add/sub read alpha as the tensor's dtype (3.3 is 3.30078125 in float16,
  // 3.296875 in bfloat16) and a scalar operand too, then form x + alpha * y in float and round once
  // (its vector loop; the scalar loop for a tail of < 32 elements also rounds alpha * y). brisk
  // used alpha in float: 1 ulp off in about 40% of elements. torch 2.15, 64-element tensors (the
  // first element set, the rest 0), alpha = 3.3:
  //   float16 1.439453125 + alpha * 1.2451171875 -> 5.55078125 (alpha in float: 5.546875)
  //   bfloat16 8.5625 + alpha * -1.9921875 -> 1.9921875 (1.984375)
  //   float16 -3.12890625 + alpha * 1.37 (a scalar) -> 1.3935546875 (1.392578125)
  //   bfloat16 -9.125 + alpha * 1.37 -> -4.625 (-4.59375)
  const auto first = [](double v, ScalarType dt) {
    Tensor t = zeros({64}, kDouble);
    t[0].fill_(v);
    return t.to(dt);
  };
  EXPECT_EQ(add(first(1.439453125, kHalf), first(1.2451171875, kHalf), 3.3)[0].item<double>(), 5.55078125);
  EXPECT_EQ(add(first(8.5625, kBFloat16), first(-1.9921875, kBFloat16), 3.3)[0].item<double>(), 1.9921875);
  EXPECT_EQ(add(first(-3.12890625, kHalf), Scalar(1.37), 3.3)[0].item<double>(), 1.3935546875);
  EXPECT_EQ(add(first(-9.125, kBFloat16), Scalar(1.37), 3.3)[0].item<double>(), -4.625);
  EXPECT_EQ(sub(first(-9.125, kBFloat16), Scalar(-1.37), 3.3)[0].item<double>(), -4.625);
  Tensor inplace = first(1.439453125, kHalf);
  inplace.add_(first(1.2451171875, kHalf), 3.3);
  EXPECT_EQ(inplace[0].item<double>(), 5.55078125);
  // The rule on random values: round(x + round16(alpha) * y), the product exact in float.
  manual_seed(3);
  for (ScalarType dt : {kHalf, kBFloat16}) {
    const Tensor x = (randn({512}) * 4).to(dt), y = (randn({512}) * 4).to(dt);
    for (double alpha : {3.3, -0.7, 1e-3}) {
      const double a16 = full({}, alpha, kDouble).to(dt).item<double>();
      EXPECT_TRUE(equal(add(x, y, alpha), (x.to(kFloat) + y.to(kFloat) * a16).to(dt))) << dt << " " << alpha;
      EXPECT_TRUE(equal(sub(x, y, alpha), (x.to(kFloat) - y.to(kFloat) * a16).to(dt))) << dt << " " << alpha;
    }
  }
}

TEST(PyTorchDivergence, MseLossGradientIsNormTimesDifferenceTimesGrad) {
  namespace F = nn::functional;
  // PyTorch's mse_loss_backward is norm * (x - t) * g in the dtype (Note [mse_loss's gradient]).
  // torch 2.15: bfloat16 x = [1.5, -2.25, 0.3], t = [0.7, 1.1, 0.3] (both requiring grad), mean,
  // backward(1.3) -> loss 3.9375, x.grad [0.6953125, -2.890625, 0.0], t.grad [-0.6953125,
  // 2.890625, 0.0] (+0: norm * (t - x) * g)
  Tensor x = tensor<double>({1.5, -2.25, 0.3}, kDouble).to(kBFloat16).requires_grad_();
  Tensor t = tensor<double>({0.7, 1.1, 0.3}, kDouble).to(kBFloat16).requires_grad_();
  Tensor l = F::mse_loss(x, t);
  EXPECT_EQ(l.item<double>(), 3.9375);
  l.backward(full({}, 1.3, kBFloat16));
  EXPECT_EQ(x.grad()[0].item<double>(), 0.6953125);
  EXPECT_EQ(x.grad()[1].item<double>(), -2.890625);
  EXPECT_EQ(t.grad()[0].item<double>(), -0.6953125);
  EXPECT_EQ(t.grad()[1].item<double>(), 2.890625);
  EXPECT_FALSE(std::signbit(t.grad()[2].item<double>()));
  EXPECT_FALSE(std::signbit(x.grad()[2].item<double>()));
  // float32, reduction none: x = [7, 1], t = [3e38, 1], backward([0.25, 1]): torch's x.grad is
  // [-inf, 0] (2 * (7 - 3e38) overflows before the 0.25; seed 239 case 106752); brisk keeps the
  // exact -1.5e38 there, as MseLossGradientDoesNotOverflowBeforeTheIncomingGradient. With g = 1
  // (sum, t requiring grad) the exact gradient overflows too: [inf, 0] in both.
  Tensor x2 = tensor<float>({7.0f, 1.0f}).requires_grad_();
  const Tensor t2 = tensor<float>({3e38f, 1.0f});
  F::mse_loss(x2, t2, F::MSELossFuncOptions(nn::kNone)).backward(tensor<float>({0.25f, 1.0f}));
  EXPECT_EQ(x2.grad()[0].item<float>(), -1.5e38f);
  EXPECT_EQ(x2.grad()[1].item<double>(), 0.0);
  Tensor t3 = tensor<float>({3e38f, 1.0f}).requires_grad_();
  F::mse_loss(tensor<float>({7.0f, 1.0f}), t3, F::MSELossFuncOptions(nn::kSum)).backward();
  EXPECT_EQ(t3.grad()[0].item<double>(), kInf);
  // The double backward: d/dx of sum(w * dL/dx) is norm * w * g (mean over 3: 2/3 * w)
  Tensor x4 = tensor<double>({1.0, 2.0, 4.0}, kDouble).requires_grad_();
  const Tensor t4 = tensor<double>({0.5, 0.0, 1.0}, kDouble);
  Tensor gx = autograd::grad({F::mse_loss(x4, t4)}, {x4}, {}, true, true)[0];
  Tensor gg = autograd::grad({(gx * tensor<double>({1.0, -2.0, 3.0}, kDouble)).sum()}, {x4})[0];
  EXPECT_TRUE(close(gg, tensor<double>({2.0 / 3, -4.0 / 3, 2.0}, kDouble), 1e-15, 0));
}

TEST(PyTorchDivergence, CosineEmbeddingLossBroadcastsAndLrnRefusesIntegers) {
  namespace F = nn::functional;
  // PyTorch's cosine_embedding_loss is a composite: input2 (1, D) broadcasts against input1 (N, D),
  // and a target (1) against the batch (fuzzer nn3, seed 1 case 1478: brisk required equal shapes).
  // torch 2.15: x1 = [[1, 2], [3, -1]], x2 = [[0.5, 1.5]] (both requiring grad), t = [1, -1],
  // margin -0.5, reduction none -> [0.010050535202026367, 0.5]; sum().backward() -> x1.grad
  // [[0.0565685, -0.0282843], [0.1, 0.3]], x2.grad [[0.5151472, -0.1717157]]; t = [1] -> [0.01005, 1.0]
  Tensor x1 = tensor<float>({1.0f, 2.0f, 3.0f, -1.0f}).reshape({2, 2}).requires_grad_();
  Tensor x2 = tensor<float>({0.5f, 1.5f}).reshape({1, 2}).requires_grad_();
  Tensor l = F::cosine_embedding_loss(x1, x2, tensor<float>({1.0f, -1.0f}),
                                      F::CosineEmbeddingLossFuncOptions().margin(-0.5).reduction(nn::kNone));
  EXPECT_TRUE(close(l, tensor<float>({0.010050535202026367f, 0.5f}), 1e-6, 0));
  l.sum().backward();
  EXPECT_TRUE(close(x1.grad(), tensor<float>({0.05656854808330536f, -0.02828425168991089f, 0.1f, 0.3f}).reshape({2, 2}),
                    1e-5, 1e-7));
  EXPECT_TRUE(close(x2.grad(), tensor<float>({0.5151472091674805f, -0.17171573638916016f}).reshape({1, 2}), 1e-5, 1e-7));
  EXPECT_TRUE(close(F::cosine_embedding_loss(x1, x2, tensor<float>({1.0f}),
                                             F::CosineEmbeddingLossFuncOptions().reduction(nn::kNone)),
                    tensor<float>({0.010050535202026367f, 1.0f}), 1e-6, 0));
  // local_response_norm: torch returns an empty input as it is (int16 stays int16), has no kernel
  // for most integer inputs ("avg_pool2d" not implemented for 'Short') and averages the others with
  // integer truncation; brisk refuses integers (it returned float32 values)
  EXPECT_EQ(F::local_response_norm(zeros({0, 3, 4}, kInt16), 2).dtype(), kInt16);
  expect_error([] { F::local_response_norm(ones({1, 3, 4}, kInt64), 2); },
               {"[local_response_norm]", "floating-point input", "int64"});
}

TEST(PyTorchDivergence, HingeLossesBlockTheGradientOfANanRow) {
  namespace F = nn::functional;
  // PyTorch's hinge losses clamp_min(z, 0): a NaN z stays NaN and gets gradient 0; brisk's where
  // passed the gradient on (fuzzer nn3, seed 501 case 139703). torch 2.15:
  //   a = [[0.5, 1], [2, -1]] (requires grad), p = [[1, 0], [1, 1]], n = [[nan, 0], [0, 0]]
  //   triplet_margin_loss(a, p, n, p=1, reduction='sum') -> nan, a.grad all 0 (row 1's hinge is 0)
  Tensor a = tensor<float>({0.5f, 1.0f, 2.0f, -1.0f}).reshape({2, 2}).requires_grad_();
  const Tensor pos = tensor<float>({1.0f, 0.0f, 1.0f, 1.0f}).reshape({2, 2});
  const Tensor neg = tensor<float>({NAN, 0.0f, 0.0f, 0.0f}).reshape({2, 2});
  Tensor l = F::triplet_margin_loss(a, pos, neg, F::TripletMarginLossFuncOptions().p(1.0).reduction(nn::kSum));
  EXPECT_TRUE(std::isnan(l.item<double>()));
  l.backward();
  EXPECT_TRUE(equal(a.grad(), zeros({2, 2})));
  //   x1 = [1, nan, 2] (requires grad), x2 = 0, target [-1, 1, 1], margin 0.5, none:
  //   margin_ranking_loss -> [1.5, nan, 0], x1.grad [1, 0, 0]
  Tensor x1 = tensor<float>({1.0f, NAN, 2.0f}).requires_grad_();
  Tensor m = F::margin_ranking_loss(x1, zeros({3}), tensor<float>({-1.0f, 1.0f, 1.0f}),
                                    F::MarginRankingLossFuncOptions().margin(0.5).reduction(nn::kNone));
  EXPECT_EQ(m[0].item<double>(), 1.5);
  EXPECT_TRUE(std::isnan(m[1].item<double>()));
  m.sum().backward();
  EXPECT_TRUE(equal(x1.grad(), tensor<float>({1.0f, 0.0f, 0.0f})));
  //   x = [0.5, nan, -0., 1] (requires grad), target -1, margin 1, none: hinge_embedding_loss ->
  //   [0.5, nan, 1, 0], x.grad [-1, 0, -1, 0]
  Tensor x = tensor<float>({0.5f, NAN, -0.0f, 1.0f}).requires_grad_();
  Tensor h = F::hinge_embedding_loss(x, full({4}, -1.0f),
                                     F::HingeEmbeddingLossFuncOptions().margin(1.0).reduction(nn::kNone));
  EXPECT_TRUE(std::isnan(h[1].item<double>()));
  h.sum().backward();
  EXPECT_TRUE(equal(x.grad(), tensor<float>({-1.0f, 0.0f, -1.0f, 0.0f})));
}

TEST(PyTorchDivergence, MultilabelSoftMarginLossIsPyTorchsComposite) {
  namespace F = nn::functional;
  // -(t logsigmoid(x) + (1 - t) logsigmoid(-x)) as PyTorch forms it (fuzzer nn3, seed 501 case
  // 142135). torch 2.15: x = [[-inf, 0.5, 1e30, -0.5]], t = [[1, 0, 0, 1]] float64, none -> [inf]
  // (brisk's (1 - t) x + softplus(-x) gave NaN); x = [[0.3, -1.2, 2.0]] float32 requiring grad,
  // t float64 [[1, 0, 1]] -> float64 0.3148552229007085, x.grad [[-0.14185, 0.07716, -0.03973]]
  const Tensor xi = tensor<double>({-kInf, 0.5, 1e30, -0.5}, kDouble).reshape({1, 4});
  const Tensor ti = tensor<double>({1.0, 0.0, 0.0, 1.0}, kDouble).reshape({1, 4});
  EXPECT_EQ(F::multilabel_soft_margin_loss(xi, ti, F::MultilabelSoftMarginLossFuncOptions().reduction(nn::kNone))
                .item<double>(),
            kInf);
  Tensor x = tensor<float>({0.3f, -1.2f, 2.0f}).reshape({1, 3}).requires_grad_();
  Tensor l = F::multilabel_soft_margin_loss(x, tensor<double>({1.0, 0.0, 1.0}, kDouble).reshape({1, 3}));
  EXPECT_EQ(l.dtype(), kDouble);
  EXPECT_NEAR(l.item<double>(), 0.3148552229007085, 1e-7);
  l.backward();
  EXPECT_TRUE(close(x.grad(), tensor<float>({-0.1418524980545044f, 0.07715840637683868f, -0.039734307676553726f})
                                  .reshape({1, 3}),
                    1e-5, 1e-7));
  // a bool target: torch refuses 1 - target ("Subtraction ... with a bool tensor is not supported")
  expect_error([&] { F::multilabel_soft_margin_loss(x, tensor<float>({1.0f, 0.0f, 1.0f}).reshape({1, 3}).to(kBool)); },
               {"bool"});
}

TEST(PyTorchDivergence, GaussianNllLossWithAnInfiniteVariance) {
  namespace F = nn::functional;
  // var clamped at eps with the gradient passing as through a clone (PyTorch's in-place clamp
  // under no_grad); an infinite var gave NaN (fuzzer nn3, seed 501 case 205095). torch 2.15:
  //   x = [0.5, -1, 2], t = [1.5, -2, 2], var = [inf, 1e-9, 0.5] (x, var requiring grad),
  //   full=True, none -> [inf, 499994.0, 0.5723649263381958]; x.grad [-0, 1e6, 0],
  //   var.grad [0, -499999506432.0, 1.0]
  Tensor x = tensor<float>({0.5f, -1.0f, 2.0f}).requires_grad_();
  Tensor v = tensor<float>({INFINITY, 1e-9f, 0.5f}).requires_grad_();
  Tensor l = F::gaussian_nll_loss(x, tensor<float>({1.5f, -2.0f, 2.0f}), v,
                                  F::GaussianNLLLossFuncOptions().full(true).reduction(nn::kNone));
  EXPECT_EQ(l[0].item<double>(), kInf);
  EXPECT_TRUE(close(l.slice(0, 1, 3), tensor<float>({499994.0f, 0.5723649263381958f}), 1e-6, 0));
  l.sum().backward();
  EXPECT_TRUE(equal(x.grad(), tensor<float>({-0.0f, 1e6f, 0.0f})));
  EXPECT_TRUE(close(v.grad(), tensor<float>({0.0f, -499999506432.0f, 1.0f}), 1e-6, 0));
}

TEST(PyTorchDivergence, TripletMarginAndFoldChecks) {
  namespace F = nn::functional;
  // torch 2.15 refuses these (fuzzer nn3, seed 501): triplet_margin_loss(margin=0) "margin must be
  // greater than 0, got 0.0"; unfold of [1, 2, 0, 3] and fold of [1, 0, 4] "... with possibly 0
  // batch size and other non-zero dimensions"; an empty batch is fine ([0, 2, 3, 3] unfolds to [0, 8, 4])
  const Tensor a = randn({2, 3});
  expect_error([&] { F::triplet_margin_loss(a, a, a, F::TripletMarginLossFuncOptions().margin(0.0)); },
               {"[triplet_margin_loss]", "margin to be greater than 0"});
  expect_error([] { F::unfold(zeros({1, 2, 0, 3}), F::UnfoldFuncOptions(1)); }, {"[unfold]", "non-zero"});
  expect_error([] { F::fold(zeros({1, 0, 4}), F::FoldFuncOptions({3, 3}, 2)); }, {"[fold]", "non-zero"});
  EXPECT_EQ(F::unfold(zeros({0, 2, 3, 3}), F::UnfoldFuncOptions(2)).sizes(), IntArrayRef({0, 8, 4}));
}

TEST(PyTorchDivergence, SoftplusSecondDerivativeAtTheThreshold) {
  // PyTorch's softplus double backward masks beta * x < threshold, so at beta * x == threshold the
  // slope is sigmoid(beta * x) and its derivative 0 (fuzzer nn3, seed 601 case 86567). torch 2.15,
  // x = [1, 0.5, 2, -1], beta 2, threshold 2: grad [0.8807971, 0.7310586, 1, 0.1192029],
  // second [0, 0.3932239, 0, 0.2099872]
  Tensor x = tensor<float>({1.0f, 0.5f, 2.0f, -1.0f}).requires_grad_();
  Tensor g = autograd::grad({nn::functional::softplus(x, nn::functional::SoftplusFuncOptions().beta(2).threshold(2)).sum()},
                            {x}, {}, true, true)[0];
  EXPECT_TRUE(close(g, tensor<float>({0.8807970881462097f, 0.7310585975646973f, 1.0f, 0.11920291930437088f}), 1e-6, 0));
  Tensor gg = autograd::grad({g.sum()}, {x})[0];
  EXPECT_TRUE(close(gg, tensor<float>({0.0f, 0.3932238519191742f, 0.0f, 0.20998716354370117f}), 1e-6, 1e-7));
  EXPECT_EQ(gg[0].item<double>(), 0.0);
}

TEST(PyTorchDivergence, CeilModePoolingWithAWindowLongerThanTheInput) {
  namespace F = nn::functional;
  // PyTorch's output size is floor((in + 2p - span + (ceil ? s - 1 : 0)) / s) + 1: with ceil_mode a
  // kernel longer than the input still gives one clipped window (fuzzer nn3, seed 601 case 12218).
  // torch 2.15: x = [[[-0.687456255886391], [-1.7450535459177468]]] float64 requiring grad,
  // lp_pool1d(x, 2, 3, ceil_mode=True) -> [[[1.1907091631763003], [3.022521403457766]]], grad -sqrt(3)
  Tensor x = tensor<double>({-0.687456255886391, -1.7450535459177468}, kDouble).reshape({1, 2, 1}).requires_grad_();
  Tensor y = F::lp_pool1d(x, F::LPPool1dFuncOptions(2.0, 3).ceil_mode(true));
  EXPECT_TRUE(close(y.reshape({-1}), tensor<double>({1.1907091631763003, 3.022521403457766}, kDouble), 1e-14, 0));
  y.sum().backward();
  EXPECT_TRUE(close(x.grad().reshape({-1}), full({2}, -std::sqrt(3.0), kDouble), 1e-14, 0));
  // max_pool1d([1, -2], 3, stride 2, ceil_mode) -> [1]; avg_pool1d([1, 2], 3, 2, ceil_mode) -> [1.5];
  // without ceil_mode torch refuses ("Invalid computed output size: 0")
  const Tensor x2 = tensor<float>({1.0f, -2.0f}).reshape({1, 1, 2});
  EXPECT_TRUE(equal(F::max_pool1d(x2, 3, 2, 0, 1, true), full({1, 1, 1}, 1.0f)));
  EXPECT_TRUE(equal(F::avg_pool1d(tensor<float>({1.0f, 2.0f}).reshape({1, 1, 2}), 3, 2, 0, true),
                    full({1, 1, 1}, 1.5f)));
  expect_error([&] { F::max_pool1d(x2, 3, 2); }, {"[max_pool1d]", "too small"});
  // avg_pool3d (only) also wants the unpadded input at least the kernel: torch refuses
  // avg_pool3d(randn(1, 1, 1, 1, 1), 2, padding=1) ("input image (T: 1 H: 1 W: 1) smaller than kernel size")
  expect_error([] { F::avg_pool3d(ones({1, 1, 1, 1, 1}), F::AvgPool3dFuncOptions(2).padding(1)); },
               {"[avg_pool3d]", "smaller than kernel_size"});
}

TEST(PyTorchDivergence, EmbeddingBagSelectsAwayPaddingInsteadOfMultiplyingByZero) {
  namespace F = nn::functional;
  // Padding slots and padding_idx entries were multiplied by 0, so a weight
  // row holding inf made the bag NaN (difffuzz seed 501 cases 3542 and 493010).
  // torch 2.15: weight [[inf, 1], [2, nan], [3, -inf], [4, 5]], input [1, 2, 3, 0, 1], offsets
  // [0, 2, 2, 4], padding_idx 0, backward([[1, 2], [3, 4], [5, 6], [7, 8]]), float and half:
  //   sum  [5, nan, 0, 0, 4, 5, 2, nan], weight.grad [0, 0, 8, 10, 1, 2, 5, 6]
  //   mean [2.5, nan, 0, 0, 4, 5, 2, nan], weight.grad [0, 0, 7.5, 9, 0.5, 1, 5, 6]
  //   max  [3, nan, 0, 0, 4, 5, 2, nan], weight.grad [0, 0, 7, 10, 1, 0, 5, 6]
  const std::vector<double> w0 = {kInf, 1, 2, kNan, 3, -kInf, 4, 5};
  const Tensor input = tensor<int64_t>({1, 2, 3, 0, 1}), offsets = tensor<int64_t>({0, 2, 2, 4});
  const std::vector<std::pair<nn::EmbeddingBagMode, std::vector<std::vector<double>>>> want = {
      {nn::kSum, {{5, kNan, 0, 0, 4, 5, 2, kNan}, {0, 0, 8, 10, 1, 2, 5, 6}}},
      {nn::kMean, {{2.5, kNan, 0, 0, 4, 5, 2, kNan}, {0, 0, 7.5, 9, 0.5, 1, 5, 6}}},
      {nn::kMax, {{3, kNan, 0, 0, 4, 5, 2, kNan}, {0, 0, 7, 10, 1, 0, 5, 6}}}};
  for (ScalarType dt : {kFloat, kHalf}) {
    for (const auto& [mode, v] : want) {
      Tensor w = tensor(w0, kDouble).view({4, 2}).to(dt).requires_grad_();
      Tensor y = F::embedding_bag(input, w, F::EmbeddingBagFuncOptions().offsets(offsets).mode(mode).padding_idx(0));
      EXPECT_TRUE(same_bits(y, v[0])) << dt << " " << nn::embedding_bag_mode_name(mode);
      y.backward(arange(1, 9, 1, kDouble).view({4, 2}).to(dt));
      EXPECT_TRUE(same_bits(w.grad(), v[1])) << dt << " " << nn::embedding_bag_mode_name(mode);
    }
  }
  // per_sample_weights [0.5, 2, -1, 3, 0] (sum, padding_idx 0, backward(ones)): torch 2.15
  // gives [7, nan, 0, 0, -4, -5, 0, nan], weight.grad [0, 0, 0.5, 0.5, 2, 2, -1, -1],
  // per_sample_weights.grad [nan, -inf, 9, 0, nan]
  Tensor w = tensor(w0, kDouble).view({4, 2}).to(kFloat).requires_grad_();
  Tensor psw = tensor<float>({0.5f, 2.0f, -1.0f, 3.0f, 0.0f}).requires_grad_();
  Tensor y = F::embedding_bag(
      input, w, F::EmbeddingBagFuncOptions().offsets(offsets).mode(nn::kSum).padding_idx(0).per_sample_weights(psw));
  EXPECT_TRUE(same_bits(y, {7, kNan, 0, 0, -4, -5, 0, kNan}));
  y.backward(ones({4, 2}));
  EXPECT_TRUE(same_bits(w.grad(), {0, 0, 0.5, 0.5, 2, 2, -1, -1}));
  EXPECT_TRUE(same_bits(psw.grad(), {kNan, -kInf, 9, 0, kNan}));
  // A padding_idx entry is skipped with its per-sample weight: an infinite weight there leaves
  // the bag finite, and its weight's gradient is 0 under a NaN incoming gradient (brisk formed
  // inf * 0 and g * 0, both NaN: difffuzz nn3 seed 641 case 476007). torch 2.15, psw
  // [0.5, 2, -1, inf, 0], backward([[1, 2], [3, 4], [nan, 1], [7, 8]]), float, half, bfloat16:
  // [7, nan, 0, 0, -4, -5, 0, nan], weight.grad [0, 0, 0.5, 1, 2, 4, nan, -1],
  // per_sample_weights.grad [nan, -inf, nan, 0, nan]
  for (ScalarType dt : {kFloat, kHalf, kBFloat16}) {
    Tensor wp = tensor(w0, kDouble).view({4, 2}).to(dt).requires_grad_();
    Tensor pswp = tensor<double>({0.5, 2, -1, kInf, 0}).to(dt).requires_grad_();
    Tensor yp = F::embedding_bag(
        input, wp, F::EmbeddingBagFuncOptions().offsets(offsets).mode(nn::kSum).padding_idx(0).per_sample_weights(pswp));
    EXPECT_TRUE(same_bits(yp, {7, kNan, 0, 0, -4, -5, 0, kNan})) << dt;
    yp.backward(tensor<double>({1, 2, 3, 4, kNan, 1, 7, 8}).view({4, 2}).to(dt));
    EXPECT_TRUE(same_bits(wp.grad(), {0, 0, 0.5, 1, 2, 4, kNan, -1})) << dt;
    EXPECT_TRUE(same_bits(pswp.grad(), {kNan, -kInf, kNan, 0, kNan})) << dt;
  }
  // Empty bags are 0 in every mode, without padding_idx too (weight[0] holds inf): input [3, 3],
  // offsets [0, 0, 2] -> sum [0, 0, 8, 10, 0, 0], mean and max [0, 0, 4, 5, 0, 0]
  const Tensor wf = tensor(w0, kDouble).view({4, 2}).to(kFloat);
  const auto bag = [&](nn::EmbeddingBagMode mode) {
    return F::embedding_bag(tensor<int64_t>({3, 3}), wf,
                            F::EmbeddingBagFuncOptions().offsets(tensor<int64_t>({0, 0, 2})).mode(mode));
  };
  EXPECT_TRUE(same_bits(bag(nn::kSum), {0, 0, 8, 10, 0, 0}));
  EXPECT_TRUE(same_bits(bag(nn::kMean), {0, 0, 4, 5, 0, 0}));
  EXPECT_TRUE(same_bits(bag(nn::kMax), {0, 0, 4, 5, 0, 0}));
}

TEST(PyTorchDivergence, EmbeddingBagMaxKeepsTheFirstRowAndSkipsLaterNans) {
  namespace F = nn::functional;
  // PyTorch's max starts from a bag's first kept row and takes only strictly greater values: a
  // NaN wins as the first row only, later NaNs are skipped, ties keep the first (the gradient
  // goes there). torch 2.15: weight [[1, nan], [nan, 2], [0, 3], [1, 3]], 2-D input
  // [[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 3, 2]], mode max, backward(arange(1, 9).view(4, 2)):
  // [1, nan, 1, 3, nan, 3, 1, nan], weight.grad [11, 10, 5, 0, 0, 10, 0, 0]
  Tensor w = tensor<float>({1, NAN, NAN, 2, 0, 3, 1, 3}).view({4, 2}).requires_grad_();
  const Tensor input = tensor<int64_t>({0, 1, 2, 2, 1, 0, 1, 0, 2, 0, 3, 2}).view({4, 3});
  Tensor y = F::embedding_bag(input, w, F::EmbeddingBagFuncOptions().mode(nn::kMax));
  EXPECT_TRUE(same_bits(y, {1, kNan, 1, 3, kNan, 3, 1, kNan}));
  y.backward(arange(1, 9, 1, kFloat).view({4, 2}));
  EXPECT_TRUE(same_bits(w.grad(), {11, 10, 5, 0, 0, 10, 0, 0}));
  // A padding_idx entry first, then -inf: the -inf row is the maximum and takes the gradient.
  // torch 2.15: weight [[5, 5], [-inf, -inf], [-inf, 2]], input [[0, 1, 2]], padding_idx 0,
  // backward([[1, 2]]) -> [-inf, 2], weight.grad [0, 0, 1, 0, 0, 2]
  Tensor w2 = tensor<float>({5, 5, -INFINITY, -INFINITY, -INFINITY, 2}).view({3, 2}).requires_grad_();
  Tensor y2 = F::embedding_bag(tensor<int64_t>({0, 1, 2}).view({1, 3}), w2,
                               F::EmbeddingBagFuncOptions().mode(nn::kMax).padding_idx(0));
  EXPECT_TRUE(same_bits(y2, {-kInf, 2}));
  y2.backward(tensor<float>({1, 2}).view({1, 2}));
  EXPECT_TRUE(same_bits(w2.grad(), {0, 0, 1, 0, 0, 2}));
}

TEST(PyTorchDivergence, MaxPool3dIndicesNameInputElementsNotPadding) {
  namespace F = nn::functional;
  // A window whose real taps are all -inf took its first tap, padding included, and returned its
  // negative index (difffuzz seed 501 case 311182). PyTorch starts from the first real tap and
  // takes val > max || isnan(val) (the last NaN). torch 2.15: x (1, 1, 2, 2, 2) all -inf but
  // x.flatten()[5] = nan, kernel 2, stride 1, padding 1, backward(ones):
  Tensor x = full({1, 1, 2, 2, 2}, -kInf, kFloat);
  x.view({-1})[5].fill_(kNan);
  x.requires_grad_();
  auto [y, idx] = F::max_pool3d_with_indices(x, F::MaxPool3dFuncOptions(2).stride(1).padding(1));
  const double n = kNan, m = -kInf;
  EXPECT_TRUE(same_bits(y, {m, m, m, m, m, m, m, m, m, m, n, n, m, n, n, m, m, m, m, n, n, m, n, n, m, m, m}));
  EXPECT_TRUE(same_bits(idx, {0, 0, 1, 0, 0, 1, 2, 2, 3, 0, 5, 5, 0, 5, 5, 2, 2, 3, 4, 5, 5, 4, 5, 5, 6, 6, 7}));
  y.backward(ones_like(y));
  EXPECT_TRUE(same_bits(x.grad(), {6, 2, 4, 2, 2, 8, 2, 1}));
  EXPECT_TRUE(same_bits(F::max_pool3d(x.detach(), F::MaxPool3dFuncOptions(2).stride(1).padding(1)),
                        values(y.detach())));
  // Dilation and ceil_mode: x [-inf, -inf, 3, -inf, nan, -inf, -inf] along W, kernel (1, 1, 3),
  // stride (1, 1, 2), padding (0, 0, 1), dilation (1, 1, 2), ceil_mode -> [-inf] * 3, indices
  // [1, 1, 3]
  const Tensor xb =
      tensor<float>({-INFINITY, -INFINITY, 3, -INFINITY, NAN, -INFINITY, -INFINITY}).view({1, 1, 1, 1, 7});
  auto [yb, ib] = F::max_pool3d_with_indices(
      xb, F::MaxPool3dFuncOptions({1, 1, 3}).stride({1, 1, 2}).padding({0, 0, 1}).dilation({1, 1, 2}).ceil_mode(true));
  EXPECT_TRUE(same_bits(yb, {m, m, m}));
  EXPECT_TRUE(same_bits(ib, {1, 1, 3}));
  // x (1, 1, 3, 1, 4) all -inf, kernel (3, 1, 2), stride (2, 1, 3), padding (1, 0, 1), ceil_mode
  // -> shape (1, 1, 2, 1, 2), indices [0, 2, 4, 6]
  auto [yc, ic] = F::max_pool3d_with_indices(
      full({1, 1, 3, 1, 4}, -kInf, kFloat),
      F::MaxPool3dFuncOptions({3, 1, 2}).stride({2, 1, 3}).padding({1, 0, 1}).ceil_mode(true));
  EXPECT_EQ(sizes_of(yc), (std::vector<int64_t>{1, 1, 2, 1, 2}));
  EXPECT_TRUE(same_bits(ic, {0, 2, 4, 6}));
  // With ceil_mode a window may be longer than the input (brisk refused it; seed 501 case
  // 116995). torch 2.15: x [1.5, 0.8] of shape (1, 1, 1, 2, 1), kernel (2, 1, 1), ceil_mode ->
  // values [1.5, 0.8], indices [0, 1], backward(ones) -> x.grad [1, 1]
  Tensor xo = tensor<double>({1.5, 0.8}, kDouble).view({1, 1, 1, 2, 1}).requires_grad_();
  auto [yo, io] = F::max_pool3d_with_indices(xo, F::MaxPool3dFuncOptions({2, 1, 1}).ceil_mode(true));
  EXPECT_TRUE(same_bits(yo, {1.5, 0.8}));
  EXPECT_TRUE(same_bits(io, {0, 1}));
  yo.sum().backward();
  EXPECT_TRUE(same_bits(xo.grad(), {1, 1}));
  // Adaptive windows have no padding; the same rules. torch 2.15: adaptive_max_pool1d of
  // [-inf, -inf, nan, 1, nan, -inf, 2] to 3 -> [nan] * 3, [2, 4, 4]; to 4 -> [-inf, nan, nan, 2],
  // [0, 2, 4, 6]; adaptive_max_pool2d of (1, 3, 3) -inf with nan at (1, 1) and (2, 2), to 2 ->
  // [nan] * 4, [4, 4, 4, 8]
  const Tensor xa = tensor<float>({-INFINITY, -INFINITY, NAN, 1, NAN, -INFINITY, 2}).view({1, 1, 7});
  auto [ya3, ia3] = F::adaptive_max_pool1d_with_indices(xa, F::AdaptiveMaxPool1dFuncOptions(3));
  EXPECT_TRUE(same_bits(ya3, {n, n, n}));
  EXPECT_TRUE(same_bits(ia3, {2, 4, 4}));
  auto [ya4, ia4] = F::adaptive_max_pool1d_with_indices(xa, F::AdaptiveMaxPool1dFuncOptions(4));
  EXPECT_TRUE(same_bits(ya4, {m, n, n, 2}));
  EXPECT_TRUE(same_bits(ia4, {0, 2, 4, 6}));
  Tensor x2 = full({1, 3, 3}, -kInf, kFloat);
  x2.view({-1})[4].fill_(kNan);
  x2.view({-1})[8].fill_(kNan);
  auto [y2, i2] = F::adaptive_max_pool2d_with_indices(x2, F::AdaptiveMaxPool2dFuncOptions(2));
  EXPECT_TRUE(same_bits(y2, {n, n, n, n}));
  EXPECT_TRUE(same_bits(i2, {4, 4, 4, 8}));
}

TEST(PyTorchDivergence, AdaptivePoolingToSizeZeroGivesAnEmptyOutput) {
  namespace F = nn::functional;
  // brisk refused output_size 0 (difffuzz seed 501 cases 194480, 29545, 1160, 79196, 282310,
  // 368107). torch 2.15 returns an empty output (with int64 indices of the same shape):
  // x (2, 3, 5): adaptive_avg_pool1d(x, 0) and adaptive_max_pool1d(x, 0) -> (2, 3, 0); x (2, 3,
  // 4, 5): adaptive_max_pool2d to (0, 2) -> (2, 3, 0, 2), adaptive_avg_pool2d to (2, 0) -> (2, 3,
  // 2, 0); x (2, 3, 4, 5, 6): adaptive_avg_pool3d / adaptive_max_pool3d to (2, 0, 3) -> (2, 3, 2,
  // 0, 3). Its backward then refuses the empty gradient; brisk's gives zeros.
  Tensor x1 = randn({2, 3, 5}).requires_grad_();
  const Tensor a1 = F::adaptive_avg_pool1d(x1, F::AdaptiveAvgPool1dFuncOptions(0));
  EXPECT_EQ(sizes_of(a1), (std::vector<int64_t>{2, 3, 0}));
  EXPECT_EQ(sizes_of(F::adaptive_max_pool1d(x1, F::AdaptiveMaxPool1dFuncOptions(0))), (std::vector<int64_t>{2, 3, 0}));
  auto [m1, i1] = F::adaptive_max_pool1d_with_indices(x1, F::AdaptiveMaxPool1dFuncOptions(0));
  EXPECT_EQ(sizes_of(m1), (std::vector<int64_t>{2, 3, 0}));
  EXPECT_EQ(sizes_of(i1), (std::vector<int64_t>{2, 3, 0}));
  EXPECT_EQ(i1.dtype(), kInt64);
  (a1.sum() + m1.sum()).backward();
  EXPECT_EQ(sizes_of(x1.grad()), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(x1.grad().abs().sum().item<double>(), 0.0);
  const Tensor x2 = randn({2, 3, 4, 5});
  EXPECT_EQ(sizes_of(F::adaptive_max_pool2d(x2, F::AdaptiveMaxPool2dFuncOptions({0, 2}))),
            (std::vector<int64_t>{2, 3, 0, 2}));
  auto [m2, i2] = F::adaptive_max_pool2d_with_indices(x2, F::AdaptiveMaxPool2dFuncOptions({0, 2}));
  EXPECT_EQ(sizes_of(i2), (std::vector<int64_t>{2, 3, 0, 2}));
  EXPECT_EQ(sizes_of(F::adaptive_avg_pool2d(x2, F::AdaptiveAvgPool2dFuncOptions({2, 0}))),
            (std::vector<int64_t>{2, 3, 2, 0}));
  const Tensor x3 = randn({2, 3, 4, 5, 6});
  EXPECT_EQ(sizes_of(F::adaptive_avg_pool3d(x3, F::AdaptiveAvgPool3dFuncOptions({2, 0, 3}))),
            (std::vector<int64_t>{2, 3, 2, 0, 3}));
  EXPECT_EQ(sizes_of(F::adaptive_max_pool3d(x3, F::AdaptiveMaxPool3dFuncOptions({2, 0, 3}))),
            (std::vector<int64_t>{2, 3, 2, 0, 3}));
  // The modules too (torch: nn.AdaptiveAvgPool1d(0)(x) has shape (2, 3, 0)).
  EXPECT_EQ(sizes_of(nn::AdaptiveAvgPool1d(nn::AdaptiveAvgPool1dOptions(0))->forward(x1.detach())),
            (std::vector<int64_t>{2, 3, 0}));
  EXPECT_EQ(sizes_of(nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({0, 2}))->forward(x2)),
            (std::vector<int64_t>{2, 3, 0, 2}));
}

TEST(PyTorchDivergence, EmbeddingBagWantsFloatWeights) {
  namespace F = nn::functional;
  // torch 2.15 refuses an integer or bool weight ("Expected tensor for argument #1 'weight' to have
  // one of the following scalar types: Half, BFloat16, Float, Double") and per_sample_weights of
  // another dtype than the weight's (fuzzer nn3, seed 1 case 1706: brisk summed a bool weight)
  const Tensor idx = tensor<int64_t>({1, 2, 4}), offsets = tensor<int64_t>({0, 2});
  expect_error([&] { F::embedding_bag(idx, ones({5, 3}, kInt64), F::EmbeddingBagFuncOptions().offsets(offsets)); },
               {"[embedding_bag]", "floating-point weight", "int64"});
  expect_error([&] { F::embedding_bag(idx, ones({5, 3}, kBool), F::EmbeddingBagFuncOptions().offsets(offsets)); },
               {"[embedding_bag]", "floating-point weight"});
  expect_error(
      [&] {
        F::embedding_bag(idx, ones({5, 3}),
                         F::EmbeddingBagFuncOptions().offsets(offsets).mode(nn::kSum).per_sample_weights(ones({3}, kDouble)));
      },
      {"[embedding_bag]", "per_sample_weights", "float64"});
}

TEST(PyTorchDivergence, HardswishIsXTimesZeroBelowMinusThree) {
  namespace F = nn::functional;
  // PyTorch's hardswish is x * min(max(x + 3, 0), 6) / 6: x * 0 from -3 down (fuzz nn3 seed 501
  // cases 224003, 395334, 362576). torch 2.15, float32 [-inf, -4, -3, -0., 0., nan, 2] ->
  // [nan, -0., -0., -0., 0., nan, 1.6666666269302368]; bfloat16 [-3, 0] -> [-0., 0.];
  // gradient at [-4, -3, -0., nan, -inf, inf] -> [0, 0, 0.5, 1, 0, 1] (a tensor this short runs
  // in PyTorch's scalar CPU loop, as its CUDA kernel: the vectorized loop gives nan at nan).
  const Tensor x = tensor<float>({-INFINITY, -4.0f, -3.0f, -0.0f, 0.0f, NAN, 2.0f});
  EXPECT_TRUE(same_bits(F::hardswish(x), {kNan, -0.0, -0.0, -0.0, 0.0, kNan, 1.6666666269302368}));
  EXPECT_TRUE(same_bits(F::hardswish(tensor<float>({-3.0f, 0.0f}).to(kBFloat16)), {-0.0, 0.0}));
  Tensor xg = tensor<float>({-4.0f, -3.0f, -0.0f, NAN, -INFINITY, INFINITY}).requires_grad_();
  F::hardswish(xg).sum().backward();
  EXPECT_TRUE(same_bits(xg.grad(), {0.0, 0.0, 0.5, 1.0, 0.0, 1.0}));
  // From 3 up torch computes x * 6 / 6 (in float for 16-bit types): inf where x * 6 overflows
  // (fuzz nn3 seed 777 cases 21054, 79018). torch 2.15, [3e38, 1e38, 5] -> float32 and bfloat16
  // [inf, inf, 5], gradient [1, 1, 1]; float16 [60000, 20000, 5] -> [60000, 20000, 5].
  for (ScalarType dt : {kFloat, kBFloat16}) {
    Tensor big = tensor<float>({3e38f, 1e38f, 5.0f}).to(dt).requires_grad_();
    Tensor y = F::hardswish(big);
    EXPECT_TRUE(same_bits(y, {kInf, kInf, 5.0})) << dt;
    y.sum().backward();
    EXPECT_TRUE(same_bits(big.grad(), {1.0, 1.0, 1.0})) << dt;
  }
  EXPECT_TRUE(same_bits(F::hardswish(tensor<float>({60000.0f, 20000.0f, 5.0f}).to(kHalf)), {60000.0, 20000.0, 5.0}));
}

TEST(PyTorchDivergence, HardsigmoidGradientIsZeroAtNaN) {
  namespace F = nn::functional;
  // PyTorch's hardsigmoid_backward is g / 6 only where -3 < x < 3 (fuzz nn3 seed 501 case 127584).
  // torch 2.15, float16 [nan, -inf, inf, -3, 3, 0, -0.], backward(0.625) -> values [nan, 0, 1, 0,
  // 1, 0.5, 0.5], gradient [0, 0, 0, 0, 0, 0.10418701171875, 0.10418701171875].
  Tensor x = tensor<float>({NAN, -INFINITY, INFINITY, -3.0f, 3.0f, 0.0f, -0.0f}).to(kHalf).requires_grad_();
  Tensor y = F::hardsigmoid(x);
  EXPECT_TRUE(same_bits(y, {kNan, 0.0, 1.0, 0.0, 1.0, 0.5, 0.5}));
  y.backward(full({7}, 0.625, kHalf));
  EXPECT_TRUE(same_bits(x.grad(), {0.0, 0.0, 0.0, 0.0, 0.0, 0.10418701171875, 0.10418701171875}));
}

TEST(PyTorchDivergence, HardtanhAndRelu6ReturnXItselfAtTheBounds) {
  namespace F = nn::functional;
  // PyTorch's hardtanh (and relu6 = hardtanh(0, 6)) is clamp: x itself unless x < min or x > max,
  // so -0. stays -0. (fuzz nn3 seed 501 cases 322919, 393365, 248526). torch 2.15:
  // relu6 float64 [-1, -0., 0., 6, 7, nan] -> [0., -0., 0., 6, 6, nan], gradient at
  // [-1, -0., 0., 6, 7, 3] -> [0, 0, 0, 0, 0, 1]; hardtanh(0, 6) float32 the same values;
  // hardtanh(-0., 6) float32 [-1, -0., 0.] -> [-0., -0., 0.].
  Tensor x = tensor<double>({-1.0, -0.0, 0.0, 6.0, 7.0, kNan}, kDouble);
  EXPECT_TRUE(same_bits(F::relu6(x), {0.0, -0.0, 0.0, 6.0, 6.0, kNan}));
  EXPECT_TRUE(same_bits(F::hardtanh(x.to(kFloat), F::HardtanhFuncOptions().min_val(0).max_val(6)),
                        {0.0, -0.0, 0.0, 6.0, 6.0, kNan}));
  EXPECT_TRUE(same_bits(F::hardtanh(tensor<float>({-1.0f, -0.0f, 0.0f}), F::HardtanhFuncOptions().min_val(-0.0).max_val(6)),
                        {-0.0, -0.0, 0.0}));
  Tensor xg = tensor<double>({-1.0, -0.0, 0.0, 6.0, 7.0, 3.0}, kDouble).requires_grad_();
  F::relu6(xg).sum().backward();
  EXPECT_TRUE(same_bits(xg.grad(), {0.0, 0.0, 0.0, 0.0, 0.0, 1.0}));
}

TEST(PyTorchDivergence, SoftshrinkIsPlusZeroInTheMiddleAndPassesNaNGradients) {
  namespace F = nn::functional;
  // PyTorch's CUDA softshrink and its vectorized CPU loop give +0 for |x| <= lambda (fuzz nn3 seed
  // 501 cases 188008, 283040); its scalar CPU loop, which runs on the tail of a tensor shorter
  // than a vector, gives x * 0 (-0 for x in [-lambda, -0]): brisk follows the first. torch 2.15,
  // float64 [-0.5, -0.25, -0., 0., 0.25, nan, 1.5, -1.5], lambda 0.5 (8 doubles: the vector
  // loop) -> [0., 0., 0., 0., 0., nan, 1, -1]. The gradient at nan is the incoming gradient in
  // PyTorch's scalar CPU and CUDA kernels (case 203381: [1.47, nan, 0.577, -0.], lambda 2.5 ->
  // gradient [0, 1, 0, 0]).
  const Tensor x = tensor<double>({-0.5, -0.25, -0.0, 0.0, 0.25, kNan, 1.5, -1.5}, kDouble);
  EXPECT_TRUE(same_bits(F::softshrink(x, 0.5), {0.0, 0.0, 0.0, 0.0, 0.0, kNan, 1.0, -1.0}));
  EXPECT_TRUE(same_bits(F::softshrink(x.to(kHalf), 0.5), {0.0, 0.0, 0.0, 0.0, 0.0, kNan, 1.0, -1.0}));
  Tensor xg = tensor<double>({1.4712481715518628, kNan, 0.5772045610173894, -0.0}, kDouble).requires_grad_();
  F::softshrink(xg, 2.5).sum().backward();
  EXPECT_TRUE(same_bits(xg.grad(), {0.0, 1.0, 0.0, 0.0}));
}

TEST(PyTorchDivergence, LogsigmoidIsPlusZeroWhereExpUnderflows) {
  namespace F = nn::functional;
  // PyTorch: min(x, 0) - log1p(exp(-|x|)), so 0 - 0 = +0 for large x (fuzz nn3 seed 501 cases
  // 43598, 498397). torch 2.15, float64 [inf, 800, 100, 0., -0., -inf] -> [0., 0.,
  // -3.720075976020836e-44, -0.6931471805599453, -0.6931471805599453, -inf]; float32 [inf, 200]
  // -> [0., 0.].
  EXPECT_TRUE(same_bits(F::logsigmoid(tensor<double>({kInf, 800.0, 100.0, 0.0, -0.0, -kInf}, kDouble)),
                        {0.0, 0.0, -3.720075976020836e-44, -0.6931471805599453, -0.6931471805599453, -kInf}));
  EXPECT_TRUE(same_bits(F::logsigmoid(tensor<float>({INFINITY, 200.0f})), {0.0, 0.0}));
}

TEST(PyTorchDivergence, EluFamilySecondDerivativeIsZeroAtZero) {
  namespace F = nn::functional;
  // PyTorch's elu_double_backward multiplies by (x < 0): at x == 0 the first derivative is the
  // negative branch's (alpha * scale * input_scale) but the second is 0 (fuzz nn3 seed 501 cases
  // 124209, 67156, 479863, 38381, 305927; seed 1 case 2014). At nan both come from the positive
  // branch. torch 2.15, float64, (d/dx, d2/dx2):
  //   elu: 0 -> (1, 0), -0. -> (1, 0), -1 -> (0.36787944117144233, same), nan -> (1, 0)
  //   elu alpha 2: 0 -> (2, 0); selu: 0 -> (1.7580993408473766, 0), nan -> (1.0507009873554805, 0)
  //   celu alpha 0.5: 0 -> (1, 0), -1 -> (0.1353352832366127, 0.2706705664732254)
  //   celu alpha 0.5, float16 x = 0, d/dx of -2.25 * celu'(x) -> -0. (brisk had -2.25)
  struct Case {
    std::function<Tensor(const Tensor&)> f;
    double x, d1, d2;
  };
  const std::vector<Case> cases = {
      {[](const Tensor& v) { return F::elu(v); }, 0.0, 1.0, 0.0},
      {[](const Tensor& v) { return F::elu(v); }, -0.0, 1.0, 0.0},
      {[](const Tensor& v) { return F::elu(v); }, -1.0, 0.36787944117144233, 0.36787944117144233},
      {[](const Tensor& v) { return F::elu(v); }, kNan, 1.0, 0.0},
      {[](const Tensor& v) { return F::elu(v, F::ELUFuncOptions().alpha(2.0)); }, 0.0, 2.0, 0.0},
      {[](const Tensor& v) { return F::selu(v); }, 0.0, 1.7580993408473766, 0.0},
      {[](const Tensor& v) { return F::selu(v); }, kNan, 1.0507009873554805, 0.0},
      {[](const Tensor& v) { return F::celu(v, F::CELUFuncOptions().alpha(0.5)); }, 0.0, 1.0, 0.0},
      {[](const Tensor& v) { return F::celu(v, F::CELUFuncOptions().alpha(0.5)); }, -1.0, 0.1353352832366127,
       0.2706705664732254},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Tensor x = full({}, cases[i].x, kDouble).requires_grad_();
    Tensor g = autograd::grad({cases[i].f(x)}, {x}, {}, true, true)[0];
    Tensor g2 = autograd::grad({g}, {x})[0];
    EXPECT_NEAR(g.item<double>(), cases[i].d1, 1e-15) << "case " << i;
    EXPECT_NEAR(g2.item<double>(), cases[i].d2, 1e-15) << "case " << i;
  }
  Tensor xh = full({}, 0.0, kHalf).requires_grad_();
  Tensor gh = autograd::grad({F::celu(xh, F::CELUFuncOptions().alpha(0.5))}, {xh}, {}, true, true)[0];
  EXPECT_EQ(gh.item<double>(), 1.0);
  EXPECT_EQ(autograd::grad({gh * -2.25}, {xh})[0].item<double>(), 0.0);
}

TEST(PyTorchDivergence, PreluHasNoCrossDerivativeAtZero) {
  namespace F = nn::functional;
  // PyTorch's prelu double backward masks with x >= 0 while its backward tests x > 0: at x == 0
  // dL/dx is w and dL/dw is x (the negative branch) but d2L/dxdw is 0 (fuzz nn3 seed 501 case
  // 29096). torch 2.15, float64 x = [0, -1, 2], w = [0.25]: gx = [0.25, 0.25, 1];
  // d/dw sum([1, 2, 3] * gx) = [2.] (brisk had 3); gw = [-1.], d gw / dx = [0, 1, 0].
  Tensor x = tensor<double>({0.0, -1.0, 2.0}, kDouble).requires_grad_();
  Tensor w = tensor<double>({0.25}, kDouble).requires_grad_();
  Tensor gx = autograd::grad({F::prelu(x, w).sum()}, {x}, {}, true, true)[0];
  EXPECT_TRUE(same_bits(gx, {0.25, 0.25, 1.0}));
  Tensor gxw = autograd::grad({(gx * tensor<double>({1.0, 2.0, 3.0}, kDouble)).sum()}, {w})[0];
  EXPECT_TRUE(same_bits(gxw, {2.0}));
  Tensor gw = autograd::grad({F::prelu(x, w).sum()}, {w}, {}, true, true)[0];
  EXPECT_TRUE(same_bits(gw, {-1.0}));
  EXPECT_TRUE(same_bits(autograd::grad({gw.sum()}, {x})[0], {0.0, 1.0, 0.0}));
}

TEST(PyTorchDivergence, ActivationsTakeIntegerInputs) {
  namespace F = nn::functional;
  // PyTorch runs hardtanh, relu6, threshold (result in the input's dtype, bounds truncated) and
  // softsign, tanhshrink (result float) on integers (fuzz nn3 seed 501 cases 439325, 45745,
  // 402556, 63261, 124176, 186979). torch 2.15:
  //   hardtanh int8 [-6, 6] -> int8 [-1, 1]; hardtanh(-2.7, 2.7) int64 [-7, -2, 2, 9] -> [-2, -2, 2, 2]
  //   relu6 int64 [-3, 0, 4, 9] -> [0, 0, 4, 6]; uint8 [0, 4, 200] -> [0, 4, 6]
  //   threshold(-2.5, 7) int64 [-3, -2, 0, 2, 5] -> [7, 7, 0, 2, 5] (threshold truncated to -2)
  //   threshold(2, -1) uint8 [0, 1, 3, 200] -> [255, 255, 3, 200] (-1 wraps)
  //   softsign uint8 [5, 12, 255, 0] -> float32 [0.8333333134651184, 0.9230769276618958, inf, 0.]
  //   (255 + 1 wraps to 0 in uint8); int64 [-3, 0, 4] -> float32 [-0.75, 0., 0.800000011920929]
  //   tanhshrink int32 [-2, 0, 3] -> float32 [-1.0359723567962646, 0., 2.0049452781677246]
  //   hardtanh uint8 (256, 257): "Clamp min value 256 is outside the representable range of Byte";
  //   threshold uint8 (256, 1): "value cannot be converted to type uint8_t without overflow"
  Tensor h = F::hardtanh(tensor<int8_t>({-6, 6}));
  EXPECT_EQ(h.dtype(), kInt8);
  EXPECT_TRUE(same_bits(h, {-1, 1}));
  EXPECT_TRUE(same_bits(F::hardtanh(tensor<int64_t>({-7, -2, 2, 9}), F::HardtanhFuncOptions().min_val(-2.7).max_val(2.7)),
                        {-2, -2, 2, 2}));
  Tensor r = F::relu6(tensor<int64_t>({-3, 0, 4, 9}));
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_TRUE(same_bits(r, {0, 0, 4, 6}));
  Tensor ru = F::relu6(tensor<uint8_t>({0, 4, 200}));
  EXPECT_EQ(ru.dtype(), kUInt8);
  EXPECT_TRUE(same_bits(ru, {0, 4, 6}));
  Tensor t = F::threshold(tensor<int64_t>({-3, -2, 0, 2, 5}), F::ThresholdFuncOptions(-2.5, 7));
  EXPECT_EQ(t.dtype(), kInt64);
  EXPECT_TRUE(same_bits(t, {7, 7, 0, 2, 5}));
  Tensor tu = F::threshold(tensor<uint8_t>({0, 1, 3, 200}), F::ThresholdFuncOptions(2, -1));
  EXPECT_EQ(tu.dtype(), kUInt8);
  EXPECT_TRUE(same_bits(tu, {255, 255, 3, 200}));
  Tensor s = F::softsign(tensor<uint8_t>({5, 12, 255, 0}));
  EXPECT_EQ(s.dtype(), kFloat);
  EXPECT_TRUE(same_bits(s, {0.8333333134651184, 0.9230769276618958, kInf, 0.0}));
  Tensor s64 = F::softsign(tensor<int64_t>({-3, 0, 4}));
  EXPECT_EQ(s64.dtype(), kFloat);
  EXPECT_TRUE(same_bits(s64, {-0.75, 0.0, 0.800000011920929}));
  Tensor ts = F::tanhshrink(tensor<int32_t>({-2, 0, 3}));
  EXPECT_EQ(ts.dtype(), kFloat);
  EXPECT_TRUE(same_bits(ts, {-1.0359723567962646, 0.0, 2.0049452781677246}));
  expect_error([] { F::hardtanh(tensor<uint8_t>({1}), F::HardtanhFuncOptions().min_val(256).max_val(257)); },
               {"[hardtanh]", "outside the representable range"});
  expect_error([] { F::threshold(tensor<uint8_t>({1}), F::ThresholdFuncOptions(256, 1)); }, {"[threshold]", "without overflow"});
  expect_error([] { F::softsign(tensor<bool>({true})); }, {"[softsign]", "bool"});
}

TEST(PyTorchDivergence, PreluRefusesMixedDtypes) {
  // torch 2.15: F.prelu(randn(2, 3), randn(1, dtype=float64)) -> "prelu: Type promoting not
  // supported. Got Float and Double"; brisk returned a float64 result (fuzzer nn3, seed 501)
  expect_error([] { nn::functional::prelu(randn({2, 3}), randn({1}).to(kDouble)); },
               {"[prelu]", "type promotion", "float64"});
  expect_error([] { nn::functional::prelu(randn({2, 3}), randn({1}).to(kHalf)); }, {"[prelu]", "type promotion"});
}

TEST(PyTorchDivergence, PreluWeightGradientNextToAnInfiniteInput) {
  // PyTorch's prelu weight gradient sums g * x over x <= 0 only; brisk's multiplied the masked
  // gradient by x, 0 * inf = NaN (fuzzer nn3, seed 603 case 43191). torch 2.15:
  //   x = [[inf, -1], [2, -3], [-inf, 0.5]], w = [0.25, -0.5] (both requiring grad),
  //   backward([[1, 2], [3, 4], [5, 6]]) -> y [[inf, 0.5], [2, 1.5], [-inf, 0.5]],
  //   x.grad [[1, -1], [3, -2], [1.25, 6]], w.grad [-inf, -14]
  Tensor x = tensor<float>({INFINITY, -1.0f, 2.0f, -3.0f, -INFINITY, 0.5f}).reshape({3, 2}).requires_grad_();
  Tensor w = tensor<float>({0.25f, -0.5f}).requires_grad_();
  Tensor y = nn::functional::prelu(x, w);
  EXPECT_TRUE(equal(y, tensor<float>({INFINITY, 0.5f, 2.0f, 1.5f, -INFINITY, 0.5f}).reshape({3, 2})));
  y.backward(tensor<float>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}).reshape({3, 2}));
  EXPECT_TRUE(equal(x.grad(), tensor<float>({1.0f, -1.0f, 3.0f, -2.0f, 1.25f, 6.0f}).reshape({3, 2})));
  EXPECT_TRUE(equal(w.grad(), tensor<float>({-INFINITY, -14.0f})));
}

TEST(PyTorchDivergence, SoftplusSecondDerivativeAtNanIsNan) {
  // PyTorch's softplus_double_backward multiplies the sigmoid's slope (NaN at a NaN input) by the
  // mask x * beta < threshold (0 there): NaN. brisk's gave 0 (fuzzer nn3, seed 603 cases 51696,
  // 64000). torch 2.15, float64 x = [nan, -0.4, 0.25, 3], beta 2, threshold 0.5:
  //   grad [nan, 0.31002551887238755, 0.6224593312018546, 1], second [nan, 0.42781939304058886, 0, 0]
  // soft_margin_loss (sum) of float32 [nan, 1.5, -0.5] with targets [1, 1, -1]:
  //   grad [nan, -0.18242551386356354, 0.3775406777858734], second [nan, 0.1491464525461197,
  //   0.23500372469425201]
  namespace F = nn::functional;
  Tensor x = tensor<double>({kNan, -0.4, 0.25, 3.0}, kDouble).requires_grad_();
  auto g = autograd::grad({F::softplus(x, F::SoftplusFuncOptions().beta(2.0).threshold(0.5)).sum()}, {x}, {}, true, true);
  EXPECT_TRUE(same_bits(g[0], {kNan, 0.31002551887238755, 0.6224593312018546, 1.0}));
  auto h = autograd::grad({g[0].sum()}, {x});
  EXPECT_TRUE(same_bits(h[0], {kNan, 0.42781939304058886, 0.0, 0.0}));
  Tensor xs = tensor<float>({NAN, 1.5f, -0.5f}).requires_grad_();
  Tensor ts = tensor<float>({1.0f, 1.0f, -1.0f});
  auto gs = autograd::grad({F::soft_margin_loss(xs, ts, F::SoftMarginLossFuncOptions(nn::kSum))}, {xs}, {}, true, true);
  EXPECT_TRUE(close(gs[0].slice(0, 1), tensor<float>({-0.18242551386356354f, 0.3775406777858734f}), 1e-6, 1e-7));
  EXPECT_TRUE(std::isnan(values(gs[0])[0]));
  auto hs = autograd::grad({gs[0].sum()}, {xs});
  EXPECT_TRUE(std::isnan(values(hs[0])[0]));
  EXPECT_TRUE(close(hs[0].slice(0, 1), tensor<float>({0.1491464525461197f, 0.23500372469425201f}), 1e-6, 1e-7));
}

TEST(PyTorchDivergence, GluMatchesPyTorchsKernels) {
  // Note [glu]. torch 2.15: float32 x = [[1e30, 2, 3e38, -1]], glu(x, -1) = [[1e30, 0.5378828644752502]],
  //   backward [[4e10, 1]] -> [[4e10, 0.2689414322376251, 0, 0.3932238817214966]] (brisk: NaN for
  //   the saturated gate: g * a = inf first, fuzzer nn3 seed 603 case 171111)
  namespace F = nn::functional;
  Tensor x = tensor<float>({1e30f, 2.0f, 3e38f, -1.0f}).reshape({1, 4}).requires_grad_();
  Tensor y = F::glu(x, F::GLUFuncOptions(-1));
  // (sigmoid(-1) is an ulp apart: brisk's float32 sigmoid forms e^-1 / (1 + e^-1))
  EXPECT_TRUE(close(y, tensor<float>({1e30f, 0.5378828644752502f}).reshape({1, 2}), 3e-7, 0));
  y.backward(tensor<float>({4e10f, 1.0f}).reshape({1, 2}));
  EXPECT_TRUE(same_bits(x.grad().narrow(1, 0, 1), {40000000000.0}));
  EXPECT_TRUE(same_bits(x.grad().narrow(1, 2, 1), {0.0}));
  EXPECT_TRUE(close(x.grad(), tensor<float>({4e10f, 0.2689414322376251f, 0.0f, 0.3932238817214966f}).reshape({1, 4}),
                    3e-7, 0));
  // 16 bits round once: glu of float16 [[-3.376953125, 3.861328125], [-3.7890625, -0.12158203125],
  // [1.796875, -2.28125]] (rows of (a, b), dim 1) is [-3.306640625, -1.779296875,
  // 0.16650390625]; a * sigmoid(b) rounded twice gave [-3.30859375, -1.7802734375, 0.1666259765625].
  // bfloat16 [[3.03125, 0.5390625], [-1.75, -0.498046875], [-1.8671875, 3.75]] -> [1.9140625,
  // -0.66015625, -1.828125] (twice rounded: 1.921875, -0.6640625, -1.8203125)
  Tensor h = tensor<double>({-3.376953125, 3.861328125, -3.7890625, -0.12158203125, 1.796875, -2.28125}, kDouble).reshape({3, 2});
  EXPECT_TRUE(same_bits(F::glu(h.to(kHalf), F::GLUFuncOptions(1)), {-3.306640625, -1.779296875, 0.16650390625}));
  Tensor b = tensor<double>({3.03125, 0.5390625, -1.75, -0.498046875, -1.8671875, 3.75}, kDouble).reshape({3, 2});
  EXPECT_TRUE(same_bits(F::glu(b.to(kBFloat16), F::GLUFuncOptions(1)), {1.9140625, -0.66015625, -1.828125}));
  // bfloat16 gradients: x = [[0.30078125, -1.703125, 2.90625, 0.609375], [1.296875, -0.400390625,
  // 0.76953125, 5]], glu(x, -1), backward [[0.7, -1.3], [2.1, 0.9]] (bfloat16) ->
  // [[0.6640625, -0.83984375, 0.0101318359375, 0.50390625], [1.4296875, 0.890625, 0.5859375,
  // -0.0027923583984375]]
  Tensor xb = tensor<double>({0.30078125, -1.703125, 2.90625, 0.609375, 1.296875, -0.400390625, 0.76953125, 5.0}, kDouble)
                  .reshape({2, 4}).to(kBFloat16).requires_grad_();
  F::glu(xb, F::GLUFuncOptions(-1)).backward(tensor<double>({0.7, -1.3, 2.1, 0.9}, kDouble).reshape({2, 2}).to(kBFloat16));
  EXPECT_TRUE(same_bits(xb.grad(), {0.6640625, -0.83984375, 0.0101318359375, 0.50390625, 1.4296875, 0.890625,
                                    0.5859375, -0.0027923583984375}));
  // Second derivatives are PyTorch's glu_double_backward{,_grad_output} (their order of
  // operations decides inf against NaN): torch 2.15, float32
  //   x = [[0.5, -1.25, 0.375, 2], [3e38, 1.5, 40, -0.75]], gO = [[1e30, -2], [0.5, 3]] (both
  //   requiring grad), g = autograd.grad(glu(x, -1), x, gO, create_graph) ->
  //   [[5.926666272277655e+29, -1.7615940570831299, 1.2070644516417413e+29, 0.262484073638916],
  //    [0.5, 0.9624638557434082, 0, 0.9805274605751038]];
  //   w = [[1, -0.5, 0.25, 2], [1e10, 0.75, -1.5, 0.5]], grad((g * w).sum(), [x, gO]) ->
  //   x: [[6.035322258208706e+28, -0.41997450590133667, 2.3582015392375387e+29, -0.2948189973831177],
  //       [-0, 0.3268424868583679, nan, 0.6659533977508545]]
  //   gO: [[0.6228432655334473, -0.7028825879096985], [1e10, 0.404037207365036]]
  const auto near = [](const Tensor& got, const std::vector<double>& want) {
    const std::vector<double> g = values(got);
    for (size_t i = 0; i < want.size(); ++i) {
      const bool ok = std::isnan(want[i]) ? std::isnan(g[i]) : std::fabs(g[i] - want[i]) <= 2e-6 * std::fabs(want[i]);  // sigmoid: an ulp apart
      if (!ok) return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", expected " << want[i];
    }
    return ::testing::AssertionSuccess();
  };
  Tensor x2 = tensor<float>({0.5f, -1.25f, 0.375f, 2.0f, 3e38f, 1.5f, 40.0f, -0.75f}).reshape({2, 4}).requires_grad_();
  Tensor go = tensor<float>({1e30f, -2.0f, 0.5f, 3.0f}).reshape({2, 2}).requires_grad_();
  auto g1 = autograd::grad({F::glu(x2, F::GLUFuncOptions(-1))}, {x2}, {go}, true, true);
  EXPECT_TRUE(near(g1[0], {5.926666272277655e+29, -1.7615940570831299, 1.2070644516417413e+29, 0.262484073638916, 0.5,
                           0.9624638557434082, 0.0, 0.9805274605751038}));
  Tensor w = tensor<float>({1.0f, -0.5f, 0.25f, 2.0f, 1e10f, 0.75f, -1.5f, 0.5f}).reshape({2, 4});
  auto g2 = autograd::grad({(g1[0] * w).sum()}, {x2, go});
  EXPECT_TRUE(near(g2[0], {6.035322258208706e+28, -0.41997450590133667, 2.3582015392375387e+29, -0.2948189973831177,
                           -0.0, 0.3268424868583679, kNan, 0.6659533977508545}));
  EXPECT_TRUE(near(g2[1], {0.6228432655334473, -0.7028825879096985, 1e10, 0.404037207365036}));
}

TEST(PyTorchDivergence, Float16PowByAHalfOnTheCpuIsPow) {
  // PyTorch's CPU kernel takes sqrt/rsqrt for x ** 0.5 and x ** -0.5 in float32, float64 and
  // bfloat16, but pow for float16: torch 2.15, float16 [-0, -inf, 4, 0] ** 0.5 = [0, inf, 2, 0],
  // ** -0.5 = [inf, 0, 0.5, inf]; float32 ** 0.5 = [-0, nan, 2, 0], ** -0.5 = [-inf, nan, 0.5, inf].
  // (brisk gave float32's for float16: lp_pool1d's second derivative at -0 had the wrong sign,
  // fuzzer nn3, seed 603 case 274587.)
  Tensor x = tensor<double>({-0.0, -kInf, 4.0, 0.0}, kDouble);
  EXPECT_TRUE(same_bits(x.to(kHalf).pow(0.5), {0.0, kInf, 2.0, 0.0}));
  EXPECT_TRUE(same_bits(x.to(kHalf).pow(-0.5), {kInf, 0.0, 0.5, kInf}));
  Tensor xi = x.to(kHalf);
  xi.pow_(0.5);
  EXPECT_TRUE(same_bits(xi, {0.0, kInf, 2.0, 0.0}));
  for (ScalarType t : {kFloat, kDouble, kBFloat16}) {
    EXPECT_TRUE(same_bits(x.to(t).pow(0.5), {-0.0, kNan, 2.0, 0.0})) << t;
    EXPECT_TRUE(same_bits(x.to(t).pow(-0.5), {-kInf, kNan, 0.5, kInf})) << t;
  }
}

TEST(PyTorchDivergence, CosineEmbeddingLossEpsilonIsAFloat) {
  // PyTorch adds its EPSILON 1e-12, a float (9.99999996e-13 in float64), to each squared
  // magnitude; brisk added the double 1e-12 (a float64 gradient at a zero input was 2e-9 off,
  // fuzzer nn3, seed 603 case 968). torch 2.15, float64 x1 = [[-1.2030907985909391], [0.5]],
  // x2 = [[-0.0], [1e-7]], targets [1, 1], reduction none: loss [1, 0.9004962807823698],
  // x2.grad of the sum [[1000000.0019975558], [-985185.3387494418]]
  namespace F = nn::functional;
  Tensor x1 = tensor<double>({-1.2030907985909391, 0.5}, kDouble).reshape({2, 1}).requires_grad_();
  Tensor x2 = tensor<double>({-0.0, 1e-7}, kDouble).reshape({2, 1}).requires_grad_();
  Tensor l = F::cosine_embedding_loss(x1, x2, tensor<double>({1.0, 1.0}, kDouble),
                                      F::CosineEmbeddingLossFuncOptions().reduction(nn::kNone));
  EXPECT_TRUE(close(l, tensor<double>({1.0, 0.9004962807823698}, kDouble), 1e-15, 0));
  l.sum().backward();
  EXPECT_TRUE(close(x2.grad(), tensor<double>({1000000.0019975558, -985185.3387494418}, kDouble).reshape({2, 1}), 1e-14, 0));
}

TEST(PyTorchDivergence, MarginLossesGroupTheirHingeAsPyTorch) {
  // PyTorch's margin kernels form margin - x[y] + x[i] (left to right); brisk's x[i] - x[y] +
  // margin lost x[i] = 1e-40 next to x[y] = 1 (z = 0, no gradient; fuzzer seed 607 case 56439).
  // torch 2.15, float64:
  //   multi_margin_loss([[1, -0.11, 1e-40, -1.19]], [0], reduction none) -> [2.5e-41],
  //     grad of the sum [[-0.25, 0, 0.25, 0]]
  //   multilabel_margin_loss([[1, 1e-40, -2, 0.5]], [[0, -1, 0, 0]], none) -> [0.125],
  //     grad [[-0.5, 0.25, 0, 0.25]]
  namespace F = nn::functional;
  Tensor x = tensor<double>({1.0, -0.11, 1e-40, -1.19}, kDouble).reshape({1, 4}).requires_grad_();
  Tensor l = F::multi_margin_loss(x, tensor<int64_t>({0}), F::MultiMarginLossFuncOptions().reduction(nn::kNone));
  EXPECT_TRUE(close(l, tensor<double>({2.5e-41}, kDouble), 1e-12, 0));
  l.sum().backward();
  EXPECT_TRUE(same_bits(x.grad(), {-0.25, 0.0, 0.25, 0.0}));
  Tensor x2 = tensor<double>({1.0, 1e-40, -2.0, 0.5}, kDouble).reshape({1, 4}).requires_grad_();
  Tensor l2 = F::multilabel_margin_loss(x2, tensor<int64_t>({0, -1, 0, 0}).reshape({1, 4}),
                                        F::MultilabelMarginLossFuncOptions(nn::kNone));
  EXPECT_TRUE(same_bits(l2, {0.125}));
  l2.sum().backward();
  EXPECT_TRUE(same_bits(x2.grad(), {-0.5, 0.25, 0.0, 0.25}));
}

TEST(PyTorchDivergence, LocalResponseNormOfAnEmptyInputIsTheInput) {
  // torch 2.15: F.local_response_norm(torch.empty(0, 1, 2), 0) returns the input (brisk checked
  // the size first; fuzzer seed 607 case 124891)
  Tensor e = empty({0, 1, 2});
  EXPECT_EQ(nn::functional::local_response_norm(e, 0).numel(), 0);
}

TEST(PyTorchDivergence, HardActivationsRoundAsPyTorchsKernels) {
  // hardsigmoid and hardswish compute PyTorch's formulas (min(max(x + 3, 0), 6) / 6 and
  // x * that * 6 / 6) in float for 16-bit inputs, rounded once, and their gradients as
  // PyTorch's kernels (g * float(1/6); g * (x / 3 + 0.5)). The mask composites they replaced
  // rounded every op: 10-18% of 16-bit values and 18-32% of float32 gradients an ulp off.
  // torch 2.15:
  //   hardsigmoid float16 [2.767578125, 1.400390625, 0.479248046875] -> [0.96142578125,
  //     0.7333984375, 0.580078125]; bfloat16 [2.765625, 0.478515625, 2.265625] -> [0.9609375,
  //     0.578125, 0.87890625]
  //   hardswish float16 [-1.7353515625, 2.767578125, -1.263671875] -> [-0.36572265625,
  //     2.66015625, -0.36572265625]; bfloat16 [2.765625, 1.234375, 2.265625] -> [2.65625,
  //     0.87109375, 1.9921875]
  //   float32 x = [0.1, -1.7, 2.3, 0.7], backward [0.3, 1.3, -0.7, 0.11]: hardsigmoid's grad
  //     [0.05000000447034836, 0.21666666865348816, -0.11666666716337204, 0.01833333447575569]
  //   hardswish of [0.1, -1.7, 2.3, 0.7, 7.412024021148682] -> [0.05166666582226753,
  //     -0.3683333396911621, 2.0316667556762695, 0.43166664242744446, 7.412024021148682],
  //     backward [0.3, 1.3, -0.7, 0.11, 1] -> [0.1600000113248825, -0.08666665852069855,
  //     -0.8866666555404663, 0.0806666687130928, 1]
  namespace F = nn::functional;
  auto t16 = [](std::vector<double> v, ScalarType dt) { return tensor<double>(v, {int64_t(v.size())}, kDouble).to(dt); };
  EXPECT_TRUE(same_bits(F::hardsigmoid(t16({2.767578125, 1.400390625, 0.479248046875}, kHalf)),
                        {0.96142578125, 0.7333984375, 0.580078125}));
  EXPECT_TRUE(same_bits(F::hardsigmoid(t16({2.765625, 0.478515625, 2.265625}, kBFloat16)), {0.9609375, 0.578125, 0.87890625}));
  EXPECT_TRUE(same_bits(F::hardswish(t16({-1.7353515625, 2.767578125, -1.263671875}, kHalf)),
                        {-0.36572265625, 2.66015625, -0.36572265625}));
  EXPECT_TRUE(same_bits(F::hardswish(t16({2.765625, 1.234375, 2.265625}, kBFloat16)), {2.65625, 0.87109375, 1.9921875}));
  Tensor x = tensor<float>({0.1f, -1.7f, 2.3f, 0.7f}).requires_grad_();
  F::hardsigmoid(x).backward(tensor<float>({0.3f, 1.3f, -0.7f, 0.11f}));
  EXPECT_TRUE(same_bits(x.grad(), {0.05000000447034836, 0.21666666865348816, -0.11666666716337204, 0.01833333447575569}));
  Tensor xw = tensor<float>({0.1f, -1.7f, 2.3f, 0.7f, 7.412024021148682f}).requires_grad_();
  Tensor yw = F::hardswish(xw);
  EXPECT_TRUE(same_bits(yw, {0.05166666582226753, -0.3683333396911621, 2.0316667556762695, 0.43166664242744446,
                             7.412024021148682}));
  yw.backward(tensor<float>({0.3f, 1.3f, -0.7f, 0.11f, 1.0f}));
  EXPECT_TRUE(same_bits(xw.grad(), {0.1600000113248825, -0.08666665852069855, -0.8866666555404663, 0.0806666687130928, 1.0}));
}

TEST(PyTorchDivergence, EluGradientIsExpNotExpm1PlusOne) {
  // Note [elu's gradient]: PyTorch's elu_backward is g * input_scale * negcoef * exp(x *
  // input_scale) below 0; brisk's composite took expm1's derivative (result + 1), which cancels:
  // 0 at x = -20 in float32, 5e-5 off at -8.46. torch 2.15, float32, backward of ones:
  //   elu [-20, -8.460877418518066, -1, 0, 2] -> [2.06115369216775e-09, 0.00021158634626772255,
  //     0.3678794503211975, 1, 1]
  //   selu -> values [-1.7580993175506592, -1.7577272653579712, -1.1113307476043701, 0,
  //     2.1014020442962646], grads [3.6237128853144895e-09, 0.0003719898231793195,
  //     0.6467686295509338, 1.7580993175506592, 1.0507010221481323]
  //   celu(alpha 2) float16 [-20, -8.5, -1, 0.5] -> [4.5418739318847656e-05, 0.0142669677734375,
  //     0.6064453125, 1]; elu(alpha 0.7) bfloat16 [-1.5, -0.3, 0.7] -> [-0.54296875,
  //     -0.181640625, 0.69921875]
  namespace F = nn::functional;
  const std::vector<float> xs = {-20.0f, -8.460877418518066f, -1.0f, 0.0f, 2.0f};
  Tensor x = tensor<float>(xs).requires_grad_();
  F::elu(x).backward(ones({5}));
  EXPECT_TRUE(close(x.grad(), tensor<float>({2.06115369216775e-09f, 0.00021158634626772255f, 0.3678794503211975f, 1.0f, 1.0f}),
                    2e-7, 0));
  Tensor x2 = tensor<float>(xs).requires_grad_();
  Tensor y2 = F::selu(x2);
  EXPECT_TRUE(same_bits(y2, {-1.7580993175506592, -1.7577272653579712, -1.1113307476043701, 0.0, 2.1014020442962646}));
  y2.backward(ones({5}));
  EXPECT_TRUE(close(x2.grad(), tensor<float>({3.6237128853144895e-09f, 0.0003719898231793195f, 0.6467686295509338f,
                                              1.7580993175506592f, 1.0507010221481323f}),
                    2e-7, 0));
  Tensor x3 = tensor<double>({-20.0, -8.5, -1.0, 0.5}, kDouble).to(kHalf).requires_grad_();
  F::celu(x3, F::CELUFuncOptions().alpha(2.0)).backward(ones({4}, kHalf));
  EXPECT_TRUE(same_bits(x3.grad(), {4.5418739318847656e-05, 0.0142669677734375, 0.6064453125, 1.0}));
  Tensor x4 = tensor<double>({-1.5, -0.3, 0.7}, kDouble).to(kBFloat16);
  EXPECT_TRUE(same_bits(F::elu(x4, F::ELUFuncOptions().alpha(0.7)), {-0.54296875, -0.181640625, 0.69921875}));
}

// Values from torch 2.15.0 (PyPI wheel, CPU):
//   F.softmin(uint8 [[[6, 5], [11, 3]], [[1, 12], [4, 0]]], 2, dtype=float32) ->
//     [0.2689414322376251, 0.7310585975646973, 0.00033535013790242374, 0.9996646642684937,
//      0.9999833106994629, 1.6701422282494605e-05, 1.0, 0.0]
//   F.softmin(int8 [[-128, 5], [127, -3]], 1, dtype=float64) ->
//     [3.817497188671175e-54, 1.0, 3.4811068399043105e-57, 1.0]
// PyTorch negates in the input's dtype first (uint8 -4 is 252, int8 -(-128) is -128), then casts.
TEST(PyTorchDivergence, SoftminNegatesInTheInputsDtype) {
  namespace F = nn::functional;
  const Tensor u = tensor<int64_t>({6, 5, 11, 3, 1, 12, 4, 0}).to(kUInt8).reshape({2, 2, 2});
  const Tensor su = F::softmin(u, F::SoftminFuncOptions(2).dtype(kFloat));
  EXPECT_EQ(su.dtype(), kFloat);
  EXPECT_TRUE(close(su.reshape({-1}), tensor<float>({0.2689414322376251f, 0.7310585975646973f, 0.00033535013790242374f,
                                                     0.9996646642684937f, 0.9999833106994629f, 1.6701422282494605e-05f,
                                                     1.0f, 0.0f}),
                    1e-6, 0));
  const Tensor i8 = tensor<int64_t>({-128, 5, 127, -3}).to(kInt8).reshape({2, 2});
  const Tensor si = F::softmin(i8, F::SoftminFuncOptions(1).dtype(kDouble));
  EXPECT_TRUE(close(si.reshape({-1}), tensor<double>({3.817497188671175e-54, 1.0, 3.4811068399043105e-57, 1.0}, kDouble),
                    1e-12, 0));
}

// Values from torch 2.15.0 (PyPI wheel, CPU), 4 elements (its scalar loop):
//   F.softshrink(float16 [1.0, -0.7001953125, 0.300048828125, 2.5], 0.3) ->
//     [0.7001953125, -0.400146484375, 0.0, 2.19921875]; F.hardshrink -> [1.0, -0.7001953125, 0.0, 2.5]
//   bfloat16 [1.0, -0.69921875, 0.30078125, 2.5]: softshrink -> [0.69921875, -0.3984375, 0.0, 2.203125],
//     hardshrink -> [1.0, -0.69921875, 0.0, 2.5]
//   F.logsigmoid(x).backward(ones): float16 x [2.767578125, 2.39453125, 0.73388671875, -1.970703125] ->
//     [0.05908203125, 0.08355712890625, 0.32421875, 0.87744140625]; bfloat16 x [7.09375, -1.109375,
//     4.90625, 1.4375] -> [0.00083160400390625, 0.75, 0.00732421875, 0.19140625]
// The shrinks read lambda in the input's dtype (float16 0.3 is 0.300048828125), and log_sigmoid's
// 16-bit gradient reads exp(-|x|) rounded to the dtype (PyTorch's CPU buffer); computing in float
// and rounding once gives [0.059112548828125, ...] and [0.000827789306640625, ...].
TEST(PyTorchDivergence, ShrinksAndLogSigmoidReadTheirScalarsInTheDtype) {
  namespace F = nn::functional;
  const Tensor h = tensor<double>({1.0, -0.7001953125, 0.300048828125, 2.5}, kDouble).to(kHalf);
  EXPECT_TRUE(same_bits(F::softshrink(h, 0.3), {0.7001953125, -0.400146484375, 0.0, 2.19921875}));
  EXPECT_TRUE(same_bits(F::hardshrink(h, 0.3), {1.0, -0.7001953125, 0.0, 2.5}));
  const Tensor b = tensor<double>({1.0, -0.69921875, 0.30078125, 2.5}, kDouble).to(kBFloat16);
  EXPECT_TRUE(same_bits(F::softshrink(b, 0.3), {0.69921875, -0.3984375, 0.0, 2.203125}));
  EXPECT_TRUE(same_bits(F::hardshrink(b, 0.3), {1.0, -0.69921875, 0.0, 2.5}));
  Tensor xh = tensor<double>({2.767578125, 2.39453125, 0.73388671875, -1.970703125}, kDouble).to(kHalf).requires_grad_();
  F::logsigmoid(xh).backward(ones({4}, kHalf));
  EXPECT_TRUE(same_bits(xh.grad(), {0.05908203125, 0.08355712890625, 0.32421875, 0.87744140625}));
  Tensor xb = tensor<double>({7.09375, -1.109375, 4.90625, 1.4375}, kDouble).to(kBFloat16).requires_grad_();
  F::logsigmoid(xb).backward(ones({4}, kBFloat16));
  EXPECT_TRUE(same_bits(xb.grad(), {0.00083160400390625, 0.75, 0.00732421875, 0.19140625}));
}

// Values from torch 2.15.0 (PyPI wheel, CPU): x = [inf, 0.5, -1, 30], y = F.softplus(x).square(),
// g = grad(y.sum(), x, create_graph=True), g.sum().backward():
//   float32 g [inf, 1.2126466035842896, 0.16849809885025024, 60], x.grad [nan, 1.2327346801757812,
//     0.2678409814834595, 2]
//   float16 g [inf, 1.212890625, 0.16845703125, 60], x.grad [nan, 1.232421875, 0.267822265625, 2]
// PyTorch's softplus_double_backward multiplies by its mask: at x = inf the infinite incoming gradient
// meets the zero slope, inf * 0 (fuzzer nn3, seed 613 case 229097; brisk's selects gave a finite value).
TEST(PyTorchDivergence, SoftplusSecondDerivativeMultipliesByItsMask) {
  namespace F = nn::functional;
  struct Want {
    ScalarType dt;
    std::vector<double> g, gg;
  };
  const std::vector<Want> wants = {
      {kFloat, {kInf, 1.2126466035842896, 0.16849809885025024, 60.0}, {kNan, 1.2327346801757812, 0.2678409814834595, 2.0}},
      {kHalf, {kInf, 1.212890625, 0.16845703125, 60.0}, {kNan, 1.232421875, 0.267822265625, 2.0}},
  };
  for (const Want& w : wants) {
    Tensor x = tensor<double>({kInf, 0.5, -1.0, 30.0}, kDouble).to(w.dt).requires_grad_();
    const Tensor y = F::softplus(x).square();
    const Tensor g = autograd::grad({y.sum()}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    g.sum().backward();
    // (float32 at x = -1: an ulp apart, brisk's sigmoid of a negative x)
    const double tol = w.dt == kFloat ? 1e-6 : 0.0;
    EXPECT_TRUE(std::isinf(g[0].item<double>()) && std::isnan(x.grad()[0].item<double>())) << w.dt;
    EXPECT_TRUE(close(g.narrow(0, 1, 3).to(kDouble), tensor<double>({w.g[1], w.g[2], w.g[3]}, kDouble), tol, 0)) << w.dt;
    EXPECT_TRUE(close(x.grad().narrow(0, 1, 3).to(kDouble), tensor<double>({w.gg[1], w.gg[2], w.gg[3]}, kDouble), tol, 0))
        << w.dt;
  }
}

// cosine_similarity's norms are clamped to eps in place under no_grad in
// PyTorch: the gradient flows through the norm as though unclamped. brisk's
// differentiable clamp dropped that path below eps and turned torch's NaN at
// a zero norm into inf (fuzzer nn3 seed 613 case 213981). Values from torch 2.15.
TEST(PyTorchDivergence, CosineSimilarityGradientIgnoresTheEpsClamp) {
  namespace F = nn::functional;
  Tensor x1 = brisk::tensor(std::vector<double>{3e-9, -4e-9, 0.0, 0.0, 1.0, 2.0}, std::vector<int64_t>{3, 2}, kDouble);
  Tensor x2 = brisk::tensor(std::vector<double>{1.0, 3.0, 2.0, 1.0, 0.0, 0.0}, std::vector<int64_t>{3, 2}, kDouble);
  x1.requires_grad_();
  x2.requires_grad_();
  Tensor y = F::cosine_similarity(x1, x2, F::CosineSimilarityFuncOptions().dim(1).eps(1e-8));
  Tensor w = brisk::tensor(std::vector<double>{1.0, -2.0, 0.5}, kDouble);
  TensorList g = autograd::grad({(y * w).sum()}, {x1, x2});
  const std::vector<double> want_y{-0.28460498941515416, 0.0, 0.0};
  const std::vector<double> want1{4.86990759665930346e+07, 7.20999306518390477e+07, -1.78885438199983180e+08,
                                  -8.94427190999915898e+07, 0.0, 0.0};
  const std::vector<double> want2{1.23328828746566782e-01, -4.11096095821889274e-02, 0.0, 0.0,
                                  2.23606797749978974e+07, 4.47213595499957949e+07};
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(y.detach()[i].item<double>(), want_y[size_t(i)], 1e-15);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(g[0].view({-1})[i].item<double>(), want1[size_t(i)], 1e-12 * std::abs(want1[size_t(i)])) << i;
    EXPECT_NEAR(g[1].view({-1})[i].item<double>(), want2[size_t(i)], 1e-12 * std::abs(want2[size_t(i)]) + 1e-15)
        << i;
  }
  // eps = 0 and a zero vector: 0 / 0 in the value and NaN in its gradient, as torch
  Tensor z = brisk::tensor(std::vector<double>{0.0, 2.0}, std::vector<int64_t>{1, 2}, kDouble);
  z.requires_grad_();
  Tensor one = brisk::ones({1, 2}, TensorOptions(kDouble));
  Tensor yz = F::cosine_similarity(z, one, F::CosineSimilarityFuncOptions().dim(0).eps(0.0));
  Tensor gz = autograd::grad({yz.sum()}, {z})[0];
  EXPECT_TRUE(std::isnan(gz[0][0].item<double>()));
  EXPECT_EQ(gz[0][1].item<double>(), 0.0);
}

// PyTorch's bfloat16 pow by 3 and -2 multiply in bfloat16 steps: x * x is
// rounded before it meets x or the division (brisk rounded once, a bfloat16
// ulp off in a fifth of the values; tools/bitexact). The same on 64 values
// (the vector loop) and on 8 (torch's scalar tail). Values from torch 2.15.
TEST(PyTorchDivergence, Bfloat16PowBy3AndMinus2RoundTheSquare) {
  const std::vector<double> xs{4.46875, -6.21875, -1.3671875, -2.453125, 1.765625, 0.5078125, 3.140625, -100.5};
  const std::vector<double> cube{89.5, -241.0, -2.546875, -14.8125, 5.53125, 0.130859375, 31.0, -1015808.0};
  const std::vector<double> inv_sq{0.050048828125, 0.0257568359375, 0.53515625, 0.166015625, 0.3203125, 3.875,
                                   0.10107421875, 9.870529174804688e-05};
  for (int64_t reps : {1, 8}) {
    Tensor x = tensor(xs, kDouble).to(kBFloat16).repeat({reps});
    Tensor c = x.pow(3).to(kDouble), q = x.pow(-2).to(kDouble);
    for (int64_t i = 0; i < x.numel(); ++i) {
      EXPECT_EQ(c[i].item<double>(), cube[size_t(i % 8)]) << i;
      EXPECT_EQ(q[i].item<double>(), inv_sq[size_t(i % 8)]) << i;
    }
  }
}

// PyTorch's triplet losses add the margin to the positive distance first,
// (margin + d(a, p)) - d(a, n): in bfloat16 the margin vanishes into a large
// distance and the loss is 0 (brisk formed d(a, p) - d(a, n) + margin, 1,
// and passed a gradient on; fuzzer nn3 seed 619 case 427942). torch 2.15:
//   a = [[-0, 70144]], p = [[-4.0625, 1.234375]], n = [[1e-7, -2.8125]] (bfloat16),
//   triplet_margin_loss(a, p, n, p=1.5, reduction='sum') -> 0, a.grad and p.grad 0
TEST(PyTorchDivergence, TripletMarginLossAddsTheMarginToThePositiveDistanceFirst) {
  namespace F = nn::functional;
  const Tensor a = tensor<float>({-0.0f, 70144.0f}).reshape({1, 2}).to(kBFloat16).requires_grad_();
  const Tensor p = tensor<float>({-4.0625f, 1.234375f}).reshape({1, 2}).to(kBFloat16).requires_grad_();
  const Tensor n = tensor<float>({1.0011717677116394e-07f, -2.8125f}).reshape({1, 2}).to(kBFloat16);
  Tensor l = F::triplet_margin_loss(a, p, n, F::TripletMarginLossFuncOptions().p(1.5).reduction(nn::kSum));
  EXPECT_EQ(l.item<double>(), 0.0);
  l.backward();
  EXPECT_TRUE(same_bits(a.grad(), {0.0, 0.0}));
  EXPECT_TRUE(same_bits(p.grad().abs(), {0.0, 0.0}));
  // The same order with a distance function.
  Tensor a2 = a.detach().requires_grad_();
  Tensor l2 = F::triplet_margin_with_distance_loss(
      a2, p.detach(), n,
      F::TripletMarginWithDistanceLossFuncOptions().reduction(nn::kSum).distance_function(
          [](const Tensor& x, const Tensor& y) {
            return F::pairwise_distance(x, y, F::PairwiseDistanceFuncOptions().p(1.5));
          }));
  EXPECT_EQ(l2.item<double>(), 0.0);
}

TEST(PyTorchDivergence, SoftMarginLossRoundsEachStepToTheInputDtype) {
  namespace F = nn::functional;
  // x = tensor([2., 0.5, -1., 3.], dtype=bfloat16), y = tensor([1., 1., 1., -1.], dtype=bfloat16)
  // F.soft_margin_loss(x, y, reduction='none') (torch 2.15): [0.126953125, 0.47265625, 1.3125, 3.046875]
  //   (one softplus rounded once gives 0.474609375 at 0.5); reduction='sum': 4.96875
  const Tensor x = tensor<float>({2.0f, 0.5f, -1.0f, 3.0f}).to(kBFloat16);
  const Tensor y = tensor<float>({1.0f, 1.0f, 1.0f, -1.0f}).to(kBFloat16);
  EXPECT_TRUE(same_bits(F::soft_margin_loss(x, y, F::SoftMarginLossFuncOptions(nn::kNone)),
                        {0.126953125, 0.47265625, 1.3125, 3.046875}));
  EXPECT_EQ(F::soft_margin_loss(x, y, F::SoftMarginLossFuncOptions(nn::kSum)).item<double>(), 4.96875);
  // A float64 target keeps the input's dtype: F.soft_margin_loss(tensor([0.25, 1.5]),
  // tensor([1., -1.], dtype=float64), reduction='none'): float32 [0.575939416885376, 1.7014132738113403]
  Tensor l = F::soft_margin_loss(tensor<float>({0.25f, 1.5f}), tensor<double>({1.0, -1.0}, kDouble),
                                 F::SoftMarginLossFuncOptions(nn::kNone));
  EXPECT_EQ(l.dtype(), kFloat);
  EXPECT_TRUE(same_bits(l, {0.575939416885376, 1.7014132738113403}));
}

TEST(PyTorchDivergence, MultilabelMarginLossSumsInDoubleAsPyTorchsKernel) {
  namespace F = nn::functional;
  const double e = std::ldexp(1.0, -23);
  // F.multilabel_margin_loss(tensor([[1., 1., e/2, e/2]]), tensor([[0, -1, 0, 0]]), reduction=r), e = 2**-23:
  // 0.2500000298023224 for 'none', 'mean' and 'sum', and for the 1-d input (torch 2.15: the row's
  // 1 + e/2 + e/2 summed in double; a float32 sum gave 0.25)
  const Tensor x = tensor<double>({1, 1, e / 2, e / 2}, kDouble).to(kFloat).reshape({1, 4});
  const Tensor t = tensor<int64_t>({0, -1, 0, 0}, kInt64).reshape({1, 4});
  for (auto r : {nn::kNone, nn::kMean, nn::kSum}) {
    EXPECT_TRUE(same_bits(F::multilabel_margin_loss(x, t, F::MultilabelMarginLossFuncOptions(r)), {0.2500000298023224}));
    EXPECT_TRUE(same_bits(F::multilabel_margin_loss(x.reshape({4}), t.reshape({4}), F::MultilabelMarginLossFuncOptions(r)),
                          {0.2500000298023224}));
  }
  // Rows [0, 1], [1, e], [1, e] with targets [0, -1]: 'none' [1.0, 5.960464477539063e-08,
  // 5.960464477539063e-08], 'mean' 0.3333333730697632 (the rows summed in double)
  const Tensor x3 = tensor<double>({0, 1, 1, e, 1, e}, kDouble).to(kFloat).reshape({3, 2});
  const Tensor t3 = tensor<int64_t>({0, -1, 0, -1, 0, -1}, kInt64).reshape({3, 2});
  EXPECT_TRUE(same_bits(F::multilabel_margin_loss(x3, t3, F::MultilabelMarginLossFuncOptions(nn::kNone)),
                        {1.0, 5.960464477539063e-08, 5.960464477539063e-08}));
  EXPECT_TRUE(same_bits(F::multilabel_margin_loss(x3, t3), {0.3333333730697632}));
}

TEST(PyTorchDivergence, MultiMarginLossReducesTheRowsInDouble) {
  namespace F = nn::functional;
  // X = tensor([[0., 1.], [1., e], [1., e]]), e = 2**-23, F.multi_margin_loss(X, tensor([0, 0, 0]), reduction=r)
  // (torch 2.15): 'none' [1.0, 5.960464477539063e-08, 5.960464477539063e-08], 'sum' 1.0000001192092896,
  // 'mean' 0.3333333730697632 (the row losses summed in double; in float32 the sum was 1)
  const double e = std::ldexp(1.0, -23);
  const Tensor x = tensor<double>({0, 1, 1, e, 1, e}, kDouble).to(kFloat).reshape({3, 2});
  const Tensor y = tensor<int64_t>({0, 0, 0}, kInt64);
  EXPECT_TRUE(same_bits(F::multi_margin_loss(x, y, F::MultiMarginLossFuncOptions().reduction(nn::kNone)),
                        {1.0, 5.960464477539063e-08, 5.960464477539063e-08}));
  EXPECT_TRUE(same_bits(F::multi_margin_loss(x, y, F::MultiMarginLossFuncOptions().reduction(nn::kSum)),
                        {1.0000001192092896}));
  EXPECT_TRUE(same_bits(F::multi_margin_loss(x, y), {0.3333333730697632}));
}

// PyTorch's CPU log_softmax of float16/bfloat16 rows over the last dim keeps
// the row's sum of exp and its log in the storage type (both rounded) and
// subtracts that log in float: outputs up to an ulp of log(sum) away from
// the float result rounded once, which brisk gave (tools/bitexact: a fifth of
// the values). Over another dim PyTorch's kernel stays in float, as brisk's.
// Values from torch 2.15.
TEST(PyTorchDivergence, HalfLogSoftmaxRowsRoundTheSumAndItsLog) {
  struct Case {
    ScalarType dt;
    std::vector<double> x, last, other;
  };
  const std::vector<Case> cases{
      {kBFloat16,
       {-2.453125, 0.1259765625, -1.96875, 0.9921875, 1.7578125, 0.44921875, 2.5625, 1.765625, -0.41015625, 3.171875,
        -1.15625, 0.2099609375, 2.09375, 9.1875, -5.875, -6.34375},
       {-5.875, -3.28125, -5.375, -2.40625, -1.6484375, -2.953125, -0.84375, -1.640625, -9.625, -6.0, -10.375, -9.0,
        -7.09375, 0.0, -15.0625, -15.5},
       {-5.875, -3.28125, -5.375, -2.421875, -1.6484375, -2.953125, -0.84765625, -1.640625, -9.625, -6.03125, -10.375,
        -9.0, -7.09375, -0.0034942626953125, -15.0625, -15.5625}},
      {kHalf,
       {-2.69140625, 3.4921875, 4.22265625, 0.71142578125, -0.92138671875, -1.5673828125, 2.173828125, -1.5810546875,
        -1.78515625, 2.9765625, 6.08203125, 13.640625, -6.125, -4.9375, 7.27734375, -2.20703125},
       {-7.41796875, -1.2333984375, -0.5029296875, -4.015625, -5.6484375, -6.29296875, -2.55078125, -6.3046875,
        -15.4296875, -10.6640625, -7.55859375, -0.0019512176513671875, -19.765625, -18.578125, -6.36328125,
        -15.8515625},
       {-7.41796875, -1.2333984375, -0.5029296875, -4.015625, -5.6484375, -6.29296875, -2.55078125, -6.3046875,
        -15.4296875, -10.6640625, -7.5625, -0.00226593017578125, -19.765625, -18.578125, -6.3671875, -15.8515625}},
  };
  for (const Case& c : cases) {
    const Tensor x = tensor(c.x, kDouble).to(c.dt).reshape({2, 8});
    EXPECT_TRUE(same_bits(x.log_softmax(1).reshape({16}), c.last)) << c.dt;
    EXPECT_TRUE(same_bits(x.t().contiguous().log_softmax(0).t().reshape({16}), c.other)) << c.dt;
  }
}

// PyTorch's cross_entropy of float16/bfloat16 logits is log_softmax (rounded
// as above) then nll_loss, and its gradient log_softmax's backward from the
// rounded log-probabilities; brisk's fused float kernel was up to 9% away
// from torch's gradient in most elements. Now the composite for 16-bit
// logits. torch 2.15: x (bfloat16, 3 x 6) below, targets [3, 2, 5],
// F.cross_entropy(x, t, reduction='none') and the gradient of its sum.
TEST(PyTorchDivergence, HalfCrossEntropyIsLogSoftmaxThenNll) {
  namespace F = nn::functional;
  const Tensor x = tensor<double>({-0.306640625, 1.4375, -2.0625, -6.59375, 4.1875, 2.09375, -0.66796875, 0.2119140625,
                                   1.6171875, 2.4375, 7.46875, -4.78125, 3.984375, 1.8359375, 9.75, -0.5859375, 1.9375,
                                   0.8203125},
                                  kDouble)
                       .to(kBFloat16)
                       .reshape({3, 6})
                       .requires_grad_();
  const Tensor t = tensor<int64_t>({3, 2, 5}, kInt64);
  const Tensor l = F::cross_entropy(x, t, F::CrossEntropyFuncOptions().reduction(nn::kNone));
  EXPECT_TRUE(same_bits(l, {10.9375, 5.84375, 8.9375}));
  const Tensor g = autograd::grad({l.sum()}, {x})[0];
  EXPECT_TRUE(same_bits(g.reshape({18}),
                        {0.00921630859375, 0.052978515625, 0.0016021728515625, -1.0, 0.83203125, 0.10205078125,
                         0.0002956390380859375, 0.00070953369140625, -0.99609375, 0.00653076171875, 0.9921875,
                         4.798173904418945e-06, 0.003082275390625, 0.0003681182861328125, 0.9921875,
                         3.314018249511719e-05, 0.00040435791015625, -1.0}));
}

// PyTorch's CPU logit of float16/bfloat16 computes in the dtype's steps:
// 1 - x and the quotient rounded before the log; its backward rounds 1 - x
// and x * (1 - x) before the division (brisk rounded once: a third of the
// values an ulp off, some more). CUDA's kernels round once, as brisk's.
// Values from torch 2.15 (y, g; logit(y) and the gradient g / ...).
TEST(PyTorchDivergence, HalfLogitComputesInTheDtypesSteps) {
  struct Case {
    ScalarType dt;
    std::vector<double> y, g, want, grad;
  };
  const std::vector<Case> cases{
      {kBFloat16,
       {0.85546875, 0.375, 0.90625, 0.45703125, 0.396484375, 0.251953125, 0.765625, 0.703125},
       {-1.953125, -0.55859375, 0.4296875, -2.265625, -0.2021484375, 1.0703125, 0.32421875, -0.068359375},
       {1.7734375, -0.5078125, 2.265625, -0.1748046875, -0.416015625, -1.09375, 1.1796875, 0.86328125},
       {-15.8125, -2.390625, 5.0625, -9.125, -0.84765625, 5.65625, 1.8046875, -0.326171875}},
      {kHalf,
       {0.3154296875, 0.430908203125, 0.89306640625, 0.82763671875, 0.338623046875, 0.041595458984375,
        0.142333984375, 0.11639404296875},
       {-0.491943359375, -0.464599609375, -0.05877685546875, 1.2626953125, 1.193359375, 1.5693359375,
        -0.8974609375, -0.1138916015625},
       {-0.77490234375, -0.278564453125, 2.123046875, 1.568359375, -0.6689453125, -3.13671875, -1.7958984375,
        -2.02734375},
       {-2.27734375, -1.8935546875, -0.615234375, 8.8515625, 5.33203125, 39.375, -7.3515625, -1.107421875}},
  };
  for (const Case& c : cases)
    for (int64_t reps : {1, 8}) {  // the scalar tail and the vector loop
      const Tensor y = tensor(c.y, kDouble).to(c.dt).repeat({reps}).requires_grad_();
      const Tensor g = tensor(c.g, kDouble).to(c.dt).repeat({reps});
      const Tensor l = y.logit();
      std::vector<double> want, grad;
      for (int64_t r = 0; r < reps; ++r) {
        want.insert(want.end(), c.want.begin(), c.want.end());
        grad.insert(grad.end(), c.grad.begin(), c.grad.end());
      }
      EXPECT_TRUE(same_bits(l, want)) << c.dt << " x" << reps;
      EXPECT_TRUE(same_bits(autograd::grad({l}, {y}, {g}, true)[0], grad)) << c.dt << " x" << reps;
      // the same in a second-order graph (act_grad's composite form)
      EXPECT_TRUE(same_bits(autograd::grad({l}, {y}, {g}, std::nullopt, true)[0], grad)) << c.dt << " x" << reps;
    }
}

// PyTorch's binary_cross_entropy_with_logits (Loss.cpp) works in place on
// (1 - target): the loss has the target's dtype (brisk promoted: a float64
// input with a bfloat16 target gave float64), -log_sigmoid(x) is not
// softplus(-x) to the ulp, and its backward includes the reduction and
// works in place in x's dtype (pos_weight * t's with a pos_weight), so a
// bfloat16 input's gradient is rounded at each step and the mean divides at
// the end (brisk's took 1/N rounded to the loss's dtype). Values from
// torch 2.15.
TEST(PyTorchDivergence, BceWithLogitsHasTheTargetsDtypeAndTorchsSteps) {
  namespace F = nn::functional;
  const Tensor x = tensor<double>({-0.5859375, 3.140625, 3.78125, -4.46875, 6.75, -3.578125}, kDouble)
                       .to(kBFloat16)
                       .requires_grad_();
  const Tensor t = tensor<float>({0, 1, 1, 0, 1, 0}).requires_grad_();
  const Tensor pw = tensor<double>({0.859375, 0.6171875, 1.3359375, 1.078125, 2.15625, 0.21875}, kDouble).to(kBFloat16);
  const Tensor l = F::binary_cross_entropy_with_logits(x, t, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pw));
  EXPECT_EQ(l.dtype(), kFloat);
  EXPECT_EQ(l.item<double>(), 0.08922576904296875);
  const auto g = autograd::grad({l}, {x, t});
  EXPECT_TRUE(same_bits(g[0], {0.0595703125, -0.004425048828125, -0.005218505859375, 0.00189208984375, 0.0,
                               0.004547119140625}));
  EXPECT_TRUE(same_bits(g[1], {0.07373046875, -0.52734375, -0.62890625, 0.80078125, -1.125, 0.126953125}));
  // the target's dtype: float64 logits, bfloat16 target
  const Tensor x2 = tensor<double>({-10.0, -5.0, 3.0}, kDouble).requires_grad_();
  const Tensor l2 = F::binary_cross_entropy_with_logits(x2, tensor<float>({0, 0, 1}).to(kBFloat16),
                                                        F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(nn::kNone));
  EXPECT_EQ(l2.dtype(), kBFloat16);
  EXPECT_TRUE(same_bits(l2, {4.5299530029296875e-05, 0.0067138671875, 0.048583984375}));
  EXPECT_TRUE(same_bits(autograd::grad({l2.sum()}, {x2})[0],
                        {4.5397868702434395e-05, 0.0066928509242848554, -0.047425873177566635}));
  // an integer target has no dtype for the loss (torch: "result type Float can't be cast to Long")
  expect_error([&] { F::binary_cross_entropy_with_logits(x2.detach(), tensor<int64_t>({0, 0, 1}, kInt64)); },
               {"[binary_cross_entropy_with_logits]", "floating point target"});
}

// smooth_l1_loss and huber_loss in PyTorch 2.15's roundings, which differ by
// dtype: smooth_l1 ((0.5 z) z) / beta (brisk's z^2 * (0.5 / beta) was an ulp
// off in a fifth of float32 values), float16 in float16 steps, bfloat16 in
// float32; huber's bfloat16 linear piece in bfloat16 steps; smooth_l1's
// gradient (x / beta) g, 16-bit in float32 from the unrounded difference.
// beta = delta = 0.3; values from torch 2.15.
TEST(PyTorchDivergence, SmoothL1AndHuberRoundAsPyTorch) {
  namespace F = nn::functional;
  struct Case {
    ScalarType dt;
    std::vector<double> smooth, grad, huber;
  };
  const std::vector<Case> cases{
      {kFloat,
       {0.013499999418854713, 0.29999998211860657, 0.44999995827674866, 1.350000023841858, 0.20000001788139343,
        0.14016665518283844},
       {0.21000000834465027, 1.2999999523162842, 0.8999999761581421, 1.100000023841858, -0.33000001311302185,
        -0.5799999833106995},
       {0.004050000105053186, 0.08999999612569809, 0.13499999046325684, 0.4050000309944153, 0.06000000610947609,
        0.04204999655485153}},
      {kHalf,
       {0.01348876953125, 0.2998046875, 0.4501953125, 1.349609375, 0.2000732421875, 0.14013671875},
       {0.2099609375, 1.2998046875, 0.89990234375, 1.099609375, -0.330078125, -0.580078125},
       {0.004047393798828125, 0.0899658203125, 0.135009765625, 0.405029296875, 0.05999755859375, 0.04205322265625}},
      {kBFloat16,
       {0.0135498046875, 0.30078125, 0.44921875, 1.3515625, 0.201171875, 0.1396484375},
       {0.2099609375, 1.296875, 0.8984375, 1.1015625, -0.330078125, -0.578125},
       {0.0040283203125, 0.08984375, 0.134765625, 0.40625, 0.060546875, 0.041748046875}},
  };
  for (const Case& c : cases) {
    const Tensor x = tensor<float>({0.1f, -0.25f, 0.7f, 2.0f, -0.05f, 0.29f}).to(c.dt).requires_grad_();
    const Tensor t = tensor<float>({0.01f, 0.2f, 0.1f, 0.5f, 0.3f, 0.0f}).to(c.dt);
    const Tensor g = tensor<float>({0.7f, -1.3f, 0.9f, 1.1f, 0.33f, -0.6f}).to(c.dt);
    const Tensor y = F::smooth_l1_loss(x, t, F::SmoothL1LossFuncOptions(nn::kNone).beta(0.3));
    EXPECT_TRUE(same_bits(y, c.smooth)) << c.dt;
    EXPECT_TRUE(same_bits(autograd::grad({y}, {x}, {g})[0], c.grad)) << c.dt;
    EXPECT_TRUE(same_bits(F::huber_loss(x.detach(), t, F::HuberLossFuncOptions(nn::kNone).delta(0.3)), c.huber)) << c.dt;
  }
  // the second derivative is g [|x - t| < beta] / beta: 0 at a NaN x (torch's
  // smooth_l1_loss_double_backward; fuzzer nn seed 641 case 309080)
  const Tensor xn = tensor<float>({NAN}).reshape({}).requires_grad_();
  const Tensor l = F::smooth_l1_loss(xn, tensor<float>({-0.314296156167984f}).reshape({}),
                                     F::SmoothL1LossFuncOptions().beta(2.0));
  const Tensor g1 = autograd::grad({l}, {xn}, {}, true, true)[0];
  EXPECT_TRUE(std::isnan(g1.item<double>()));
  EXPECT_EQ(autograd::grad({g1}, {xn})[0].item<double>(), 0.0);
}

// PyTorch's binary_cross_entropy is (t - 1) max(log1p(-x), -100) -
// t max(log(x), -100) in the dtype's steps (brisk's log(1 - x) was an ulp off
// in a sixth of bfloat16 losses), and its gradient includes the mean: g (x -
// t) / max(x (1 - x), eps) over numel at the end (brisk's mean node rounded
// 1 / N first). Values from torch 2.15.
TEST(PyTorchDivergence, BinaryCrossEntropyInTorchsStepsWithTheMeanInItsGradient) {
  namespace F = nn::functional;
  const Tensor p = tensor<double>({0.30078125, 0.8984375, 0.050048828125, 0.6015625, 1.0, 0.419921875}, kDouble)
                       .to(kBFloat16)
                       .requires_grad_();
  const Tensor t = tensor<float>({0, 1, 0, 1, 0, 1}).to(kBFloat16);
  EXPECT_TRUE(same_bits(F::binary_cross_entropy(p, t, F::BinaryCrossEntropyFuncOptions().reduction(nn::kNone)),
                        {0.357421875, 0.10693359375, 0.05126953125, 0.5078125, 100.0, 0.8671875}));
  const Tensor l = F::binary_cross_entropy(p, t);
  EXPECT_EQ(l.item<double>(), 17.0);
  EXPECT_TRUE(same_bits(autograd::grad({l}, {p})[0], {0.23828125, -0.1845703125, 0.17578125, -0.27734375,
                                                       166429982720.0, -0.396484375}));
  const Tensor pf = tensor<float>({0.3f, 0.9f, 0.05f, 0.6f, 0.999f, 0.42f}).requires_grad_();
  const Tensor lf = F::binary_cross_entropy(pf, tensor<float>({0, 1, 0, 1, 0, 1}));
  EXPECT_TRUE(same_bits(autograd::grad({lf}, {pf})[0],
                        {0.2380952388048172, -0.18518519401550293, 0.17543859779834747, -0.277777761220932,
                         166.66880798339844, -0.3968254029750824}));
}

// soft_margin_loss's gradient is PyTorch's backward, in place in x's dtype:
// (t z) (-norm) / (z + 1) g with z = exp(-t x) (the composite's autograd was
// an ulp off in a third of float16 gradients); a target that requires grad
// raises, as in PyTorch. torch 2.15, reduction 'none', float16.
TEST(PyTorchDivergence, SoftMarginLossGradientIsTorchsBackward) {
  namespace F = nn::functional;
  const Tensor x = tensor<float>({0.5f, -1.25f, 2.0f, 0.1f, -3.0f, 1.7f}).to(kHalf).requires_grad_();
  const Tensor t = tensor<float>({1, -1, 1, -1, 1, -1}).to(kHalf);
  const Tensor g = tensor<float>({0.3f, -0.7f, 1.1f, 0.9f, -0.2f, 0.6f}).to(kHalf);
  const Tensor l = F::soft_margin_loss(x, t, F::SoftMarginLossFuncOptions(nn::kNone));
  EXPECT_TRUE(same_bits(autograd::grad({l}, {x}, {g})[0],
                        {-0.11328125, -0.1558837890625, -0.131103515625, 0.472412109375, 0.1904296875,
                         0.50732421875}));
  // the mean: -1 / N in the 16-bit dtype (torch's in-place mul_ rounds it); bfloat16
  const Tensor xb = x.detach().to(kBFloat16).requires_grad_();
  const Tensor lb = F::soft_margin_loss(xb, t.to(kBFloat16));
  EXPECT_EQ(lb.item<double>(), 1.0859375);
  EXPECT_TRUE(same_bits(autograd::grad({lb}, {xb})[0], {-0.06298828125, 0.037109375, -0.02001953125, 0.087890625,
                                                         -0.1591796875, 0.1416015625}));
  expect_error([&] { F::soft_margin_loss(x, t.detach().to(kFloat).requires_grad_()); },
               {"[soft_margin_loss]", "not differentiable with respect to the target"});
}

TEST(PyTorchDivergence, NormalizationParameterDtypesFollowPyTorch) {
  namespace F = nn::functional;
  // torch 2.15 (CPU): batch_norm, group_norm, layer_norm and instance_norm take parameters
  // (weight, bias, running statistics) of the input's dtype, or all float32 for a 16-bit input,
  // and return the input's dtype; other mixes raise. brisk promoted layer_norm's output
  // (bfloat16 x, float32 weight: float32) and took any mix in the others.
  struct Case {
    ScalarType x, w, b;  // kUndefined: absent
    bool ok;
  };
  const ScalarType no = ScalarType::Undefined;
  const std::vector<Case> cases = {
      {kBFloat16, kFloat, kFloat, true},     {kHalf, kFloat, no, true},           {kBFloat16, no, kFloat, true},
      {kBFloat16, kBFloat16, kBFloat16, true}, {kDouble, kDouble, no, true},      {kFloat, kBFloat16, no, false},
      {kFloat, kFloat, kDouble, false},      {kBFloat16, kBFloat16, kFloat, false}, {kBFloat16, kFloat, kBFloat16, false},
      {kHalf, kDouble, no, false},           {kDouble, kFloat, kFloat, false},    {kFloat, no, kHalf, false}};
  for (const Case& c : cases) {
    const Tensor x = randn({4, 6, 2}).to(c.x);
    const Tensor w = c.w == no ? Tensor() : ones({6}).to(c.w), b = c.b == no ? Tensor() : zeros({6}).to(c.b);
    const Tensor wl = c.w == no ? Tensor() : ones({2}).to(c.w), bl = c.b == no ? Tensor() : zeros({2}).to(c.b);
    const std::vector<std::pair<const char*, std::function<Tensor()>>> ops = {
        {"layer_norm", [&] { return F::layer_norm(x, {2}, wl, bl); }},
        {"group_norm", [&] { return F::group_norm(x, 3, w, b, 1e-5); }},
        {"batch_norm", [&] { return F::batch_norm(x, Tensor(), Tensor(), w, b, true, 0.1, 1e-5); }},
        {"instance_norm", [&] { return F::instance_norm(x, F::InstanceNormFuncOptions().weight(w).bias(b)); }}};
    for (const auto& [name, f] : ops) {
      if (c.ok) {
        Tensor y;
        EXPECT_NO_THROW(y = f()) << name << " " << c.x << " " << c.w << " " << c.b;
        if (y.defined()) {
          EXPECT_EQ(y.dtype(), c.x) << name;
        }
      } else {
        expect_error(f, {name, "mixed dtypes"});
      }
    }
  }
  // running statistics take part: a bfloat16 input with bfloat16 weight and float32 running_mean
  // raises in torch; float32 statistics with a float32 weight are its mixed kernel
  const Tensor xb = randn({4, 6}).to(kBFloat16);
  expect_error([&] { F::batch_norm(xb, zeros({6}), ones({6}), ones({6}, kBFloat16), Tensor(), false, 0.1, 1e-5); },
               {"batch_norm", "mixed dtypes", "running_mean float32"});
  EXPECT_EQ(F::batch_norm(xb, zeros({6}), ones({6}), ones({6}), Tensor(), false, 0.1, 1e-5).dtype(), kBFloat16);
}

TEST(PyTorchDivergence, SmoothL1AndHuberSecondDerivativeMasksTheRoundedDifference) {
  namespace F = nn::functional;
  // torch's double backward is g [|x - t| < beta] / beta with x - t in the input's dtype: a
  // bfloat16 difference 1.164 - 0.165 = 0.999 rounds to 1 = beta (second derivative 0), and
  // |x - t| = beta is outside in every dtype (brisk's huber took it in through clamp's
  // inclusive bounds; difffuzz nn seed 643 case 2181971). torch 2.15, x = [1.1640625, 0.5, 2, 1],
  // t = [0.1650390625, 0, 0, 0], reduction sum, d/dx sum(dloss/dx):
  //   bfloat16: [0, 1, 0, 0]; float16 and float32: [1, 1, 0, 0] (both losses)
  for (ScalarType dt : {kBFloat16, kHalf, kFloat})
    for (bool huber : {false, true}) {
      Tensor x = tensor<double>({1.1640625, 0.5, 2, 1}).to(dt).requires_grad_();
      const Tensor t = tensor<double>({0.1650390625, 0, 0, 0}).to(dt);
      Tensor l = huber ? F::huber_loss(x, t, F::HuberLossFuncOptions(nn::kSum))
                       : F::smooth_l1_loss(x, t, F::SmoothL1LossFuncOptions(nn::kSum));
      TensorList g = autograd::grad({l}, {x}, {}, true, true);
      TensorList gg = autograd::grad({g[0].sum()}, {x});
      const std::vector<double> want = dt == kBFloat16 ? std::vector<double>{0, 1, 0, 0} : std::vector<double>{1, 1, 0, 0};
      EXPECT_TRUE(same_bits(gg[0], want)) << dt << (huber ? " huber" : " smooth_l1");
    }
}

}  // namespace
}  // namespace brisk
