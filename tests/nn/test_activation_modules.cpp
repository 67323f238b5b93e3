// Activation modules and functionals (nn/activation.h) against PyTorch 2.x's
// values and gradients (tests/nn/activation_loss_ref.h, float64, kinks hit
// exactly), gradcheck away from kinks, in-place forms, PReLU's parameter,
// RReLU's random slopes, printing as PyTorch, and errors naming the op.
#include <brisk/nn.h>

#include <cmath>
#include <functional>
#include <sstream>

#include "autograd/grad_util.h"
#include "nn/activation_loss_ref.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;

namespace {

Tensor pt(const std::string& key, IntArrayRef shape) {
  const auto& m = activation_loss_ref::values();
  auto it = m.find(key);
  if (it == m.end()) {
    ADD_FAILURE() << "no reference value '" << key << "'";
    return zeros(shape, kDouble);
  }
  return tensor(it->second, shape, kDouble);
}
Tensor pt(const std::string& key) {
  const auto& m = activation_loss_ref::values();
  auto it = m.find(key);
  const int64_t n = it == m.end() ? 0 : static_cast<int64_t>(it->second.size());
  return pt(key, {n});
}

using Fn = std::function<Tensor(const Tensor&)>;

/// The functionals of the reference table, by the generator's names.
const std::vector<std::pair<std::string, Fn>>& activations() {
  static const std::vector<std::pair<std::string, Fn>> v = {
      {"relu", [](const Tensor& x) { return F::relu(x, F::ReLUFuncOptions()); }},
      {"relu6", [](const Tensor& x) { return F::relu6(x); }},
      {"leaky_relu", [](const Tensor& x) { return F::leaky_relu(x); }},
      {"leaky_relu.0.2", [](const Tensor& x) { return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)); }},
      {"elu", [](const Tensor& x) { return F::elu(x); }},
      {"elu.0.5", [](const Tensor& x) { return F::elu(x, F::ELUFuncOptions().alpha(0.5)); }},
      {"selu", [](const Tensor& x) { return F::selu(x); }},
      {"celu.2", [](const Tensor& x) { return F::celu(x, F::CELUFuncOptions().alpha(2.0)); }},
      {"gelu", [](const Tensor& x) { return F::gelu(x, F::GELUFuncOptions()); }},
      {"gelu.tanh", [](const Tensor& x) { return F::gelu(x, F::GELUFuncOptions().approximate("tanh")); }},
      {"hardshrink", [](const Tensor& x) { return F::hardshrink(x); }},
      {"hardshrink.1", [](const Tensor& x) { return F::hardshrink(x, 1.0); }},
      {"softshrink", [](const Tensor& x) { return F::softshrink(x); }},
      {"softshrink.1", [](const Tensor& x) { return F::softshrink(x, F::SoftshrinkFuncOptions(1.0)); }},
      {"hardtanh", [](const Tensor& x) { return F::hardtanh(x); }},
      {"hardtanh.-2.3", [](const Tensor& x) { return F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2).max_val(3)); }},
      {"hardswish", [](const Tensor& x) { return F::hardswish(x); }},
      {"hardsigmoid", [](const Tensor& x) { return F::hardsigmoid(x); }},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); }},
      {"softsign", [](const Tensor& x) { return F::softsign(x); }},
      {"tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }},
      {"softplus", [](const Tensor& x) { return F::softplus(x, F::SoftplusFuncOptions()); }},
      {"softplus.2.10", [](const Tensor& x) { return F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(10)); }},
      {"threshold.0.5.-7", [](const Tensor& x) { return F::threshold(x, F::ThresholdFuncOptions(0.5, -7.0)); }},
      {"silu", [](const Tensor& x) { return F::silu(x); }},
      {"mish", [](const Tensor& x) { return F::mish(x); }},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
      {"tanh", [](const Tensor& x) { return x.tanh(); }},
      {"rrelu.eval", [](const Tensor& x) { return F::rrelu(x); }},
      {"prelu.scalar", [](const Tensor& x) { return F::prelu(x, full({1}, 0.25, x.dtype())); }},
  };
  return v;
}

/// The same activations as modules (holders), where one exists.
const std::vector<std::pair<std::string, nn::AnyModule>> modules() {
  return {
      {"relu", nn::ReLU()},
      {"relu6", nn::ReLU6()},
      {"leaky_relu", nn::LeakyReLU()},
      {"leaky_relu.0.2", nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2))},
      {"elu", nn::ELU()},
      {"elu.0.5", nn::ELU(nn::ELUOptions().alpha(0.5))},
      {"selu", nn::SELU()},
      {"celu.2", nn::CELU(nn::CELUOptions().alpha(2))},
      {"gelu", nn::GELU()},
      {"gelu.tanh", nn::GELU(nn::GELUOptions().approximate("tanh"))},
      {"hardshrink", nn::Hardshrink()},
      {"hardshrink.1", nn::Hardshrink(1.0)},
      {"softshrink", nn::Softshrink()},
      {"softshrink.1", nn::Softshrink(nn::SoftshrinkOptions(1.0))},
      {"hardtanh", nn::Hardtanh()},
      {"hardtanh.-2.3", nn::Hardtanh(nn::HardtanhOptions().min_val(-2).max_val(3))},
      {"hardswish", nn::Hardswish()},
      {"hardsigmoid", nn::Hardsigmoid()},
      {"logsigmoid", nn::LogSigmoid()},
      {"softsign", nn::Softsign()},
      {"tanhshrink", nn::Tanhshrink()},
      {"softplus", nn::Softplus()},
      {"softplus.2.10", nn::Softplus(nn::SoftplusOptions().beta(2).threshold(10))},
      {"threshold.0.5.-7", nn::Threshold(0.5, -7.0)},
      {"silu", nn::SiLU()},
      {"mish", nn::Mish()},
      {"sigmoid", nn::Sigmoid()},
      {"tanh", nn::Tanh()},
      {"prelu.scalar", nn::PReLU(nn::PReLUOptions(), kDouble)},  // PyTorch refuses a float32 weight on float64
  };
}

}  // namespace

class ActivationModules : public ::testing::Test {
 protected:
  void SetUp() override { set_num_threads(1); }
};

TEST_F(ActivationModules, ValuesAndGradientsMatchPyTorch) {
  const Tensor x0 = pt("act.x");
  for (const auto& [name, fn] : activations()) {
    SCOPED_TRACE(name);
    Tensor x = x0.clone().requires_grad_();
    Tensor y = fn(x);
    EXPECT_TRUE(close(y, pt("act." + name + ".y"), 1e-12, 1e-13));
    y.backward(ones_like(y));
    ASSERT_TRUE(x.grad().defined());
    // PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32,
    // even in float64; brisk uses 1/6 of the input's dtype.
    const double rtol = name == "hardsigmoid" ? 1e-7 : 1e-12;
    EXPECT_TRUE(close(x.grad(), pt("act." + name + ".dx"), rtol, 1e-13));
    // float32: the same values to float32 rounding
    Tensor yf = fn(x0.to(kFloat));
    EXPECT_EQ(yf.dtype(), kFloat);
    EXPECT_TRUE(close(yf, pt("act." + name + ".y"), 2e-6, 1e-6));
  }
}

TEST_F(ActivationModules, ModulesForwardTheirFunctional) {
  const Tensor x = pt("act.x");
  for (auto& [name, m] : modules()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(close(m.forward(x), pt("act." + name + ".y"), 1e-12, 1e-13));
  }
  nn::RReLU rr;
  rr->eval();
  EXPECT_TRUE(close(rr(x), pt("act.rrelu.eval.y"), 1e-12, 1e-13));
}

TEST_F(ActivationModules, DimActivationsMatchPyTorch) {
  const Tensor x0 = pt("dim.x", {4, 6}), g = pt("dim.g", {4, 6});
  const std::vector<std::pair<std::string, Fn>> cases = {
      {"glu.-1", [](const Tensor& x) { return F::glu(x); }},
      {"glu.0", [](const Tensor& x) { return nn::GLU(0)(x); }},
      {"softmax.1", [](const Tensor& x) { return F::softmax(x, F::SoftmaxFuncOptions(1)); }},
      {"softmax.0", [](const Tensor& x) { return nn::Softmax(0)(x); }},
      {"softmin.1", [](const Tensor& x) { return nn::Softmin(nn::SoftminOptions(1))(x); }},
      {"log_softmax.1", [](const Tensor& x) { return F::log_softmax(x, F::LogSoftmaxFuncOptions(1)); }},
      {"softmax2d", [](const Tensor& x) { return nn::Softmax2d()(x.reshape({2, 3, 4})).reshape({4, 6}); }},
  };
  for (const auto& [name, fn] : cases) {
    SCOPED_TRACE(name);
    Tensor x = x0.clone().requires_grad_();
    Tensor y = fn(x);
    EXPECT_TRUE(close(y, pt("dim." + name + ".y", y.sizes()), 1e-12, 1e-13));
    y.backward(g.narrow(0, 0, y.size(0)).narrow(1, 0, y.size(1)));
    EXPECT_TRUE(close(x.grad(), pt("dim." + name + ".dx", {4, 6}), 1e-12, 1e-13));
  }
  // softmin's dtype option converts first, as softmax's
  Tensor sf = F::softmin(x0.to(kFloat), F::SoftminFuncOptions(1).dtype(kDouble));
  EXPECT_EQ(sf.dtype(), kDouble);
  EXPECT_TRUE(close(sf, pt("dim.softmin.1.y", {4, 6}), 1e-6, 1e-7));
}

TEST_F(ActivationModules, PReLUPerChannel) {
  const Tensor xr = pt("prelu.x", {2, 3, 4}), gr = pt("prelu.g", {2, 3, 4});
  nn::PReLU m(nn::PReLUOptions().num_parameters(3), kDouble);
  EXPECT_EQ(m->weight.sizes(), (std::vector<int64_t>{3}));
  EXPECT_TRUE(close(m->weight, full({3}, 0.25, kDouble)));
  EXPECT_EQ(m->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  {
    NoGradGuard g;
    m->weight.copy_(pt("prelu.w", {3}));
  }
  Tensor x = xr.clone().requires_grad_();
  Tensor y = m(x);
  EXPECT_TRUE(close(y, pt("prelu.y", {2, 3, 4}), 1e-12, 1e-13));
  y.backward(gr);
  EXPECT_TRUE(close(x.grad(), pt("prelu.dx", {2, 3, 4}), 1e-12, 1e-13));
  EXPECT_TRUE(close(m->weight.grad(), pt("prelu.dw", {3}), 1e-12, 1e-13));
  // a shared slope serves any input, 0-dim included
  nn::PReLU shared(nn::PReLUOptions().init(0.1));
  EXPECT_TRUE(close(shared(scalar_tensor(-2.0)), scalar_tensor(-0.2f), 1e-6));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::prelu(t[0], t[1]); },
                           {(rand({2, 3, 2}, kDouble) - 0.5).requires_grad_(), (rand({3}, kDouble)).requires_grad_()}));
  expect_error([&] { m(ones({3}, kDouble)); }, {"prelu", "3 parameters", "1 channel"});
  expect_error([&] { m(ones({2, 4}, kDouble)); }, {"prelu", "3 parameters", "4 channel"});
  expect_error([&] { m(ones({2, 3})); }, {"prelu", "type promotion"});
}

TEST_F(ActivationModules, RReLUTrainingDrawsSlopesInRange) {
  manual_seed(3);
  nn::RReLU m(nn::RReLUOptions().lower(0.1).upper(0.3));
  ASSERT_TRUE(m->is_training());
  Tensor x = (rand({1000}, kDouble) - 0.5).requires_grad_();
  manual_seed(4);
  Tensor y = m(x);
  y.sum().backward();
  Tensor neg = x.detach().lt(0);
  Tensor slope = y.detach() / x.detach();
  Tensor s_neg = slope.masked_select(neg);
  EXPECT_GE(s_neg.min().item<double>(), 0.1);
  EXPECT_LE(s_neg.max().item<double>(), 0.3);
  EXPECT_NEAR(s_neg.mean().item<double>(), 0.2, 0.01);
  EXPECT_TRUE(close(y.detach().masked_select(neg.logical_not()), x.detach().masked_select(neg.logical_not())));
  // the gradient is the drawn slope
  EXPECT_TRUE(close(x.grad().masked_select(neg), s_neg, 1e-12));
  // deterministic under manual_seed
  manual_seed(4);
  EXPECT_TRUE(close(m(x.detach()), y.detach(), 0, 0));
  // eval: the mean slope
  m->eval();
  EXPECT_TRUE(close(m(x.detach()), F::leaky_relu(x.detach(), F::LeakyReLUFuncOptions().negative_slope(0.2))));
}

TEST_F(ActivationModules, GradcheckAwayFromKinks) {
  const std::vector<std::pair<std::string, Fn>> smooth = {
      {"elu", [](const Tensor& x) { return F::elu(x, F::ELUFuncOptions().alpha(0.7)); }},
      {"selu", [](const Tensor& x) { return F::selu(x); }},
      {"celu", [](const Tensor& x) { return F::celu(x, F::CELUFuncOptions().alpha(1.5)); }},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); }},
      {"softsign", [](const Tensor& x) { return F::softsign(x); }},
      {"tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }},
      {"hardswish", [](const Tensor& x) { return F::hardswish(x); }},
      {"hardsigmoid", [](const Tensor& x) { return F::hardsigmoid(x); }},
      {"softshrink", [](const Tensor& x) { return F::softshrink(x, 0.3); }},
      {"hardtanh", [](const Tensor& x) { return F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2).max_val(2.5)); }},
      {"glu", [](const Tensor& x) { return F::glu(x, 1); }},
      {"softmin", [](const Tensor& x) { return F::softmin(x, 0); }},
  };
  manual_seed(7);
  for (const auto& [name, fn] : smooth) {
    SCOPED_TRACE(name);
    // values in (-4, 4) off the kinks at 0, +-0.3, -2, 2.5, +-3 by more than the FD step
    Tensor x = (rand({3, 4}, kDouble) * 8 - 4);
    x = where(x.sub(x.round()).abs().lt(0.02), x + 0.05, x);
    x = where((x.abs() - 0.3).abs().lt(0.02), x + 0.05, x).detach().requires_grad_();
    EXPECT_TRUE(gradcheck_ok([&](const TensorList& t) { return fn(t[0]); }, {x}, /*grad_grad=*/true));
  }
}

TEST_F(ActivationModules, InPlaceWritesTheInput) {
  Tensor x = tensor({-2.0, -0.5, 0.0, 1.5, 7.0});
  Tensor r = F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.5).inplace(true));
  EXPECT_EQ(r.data_ptr(), x.data_ptr());
  EXPECT_TRUE(close(x, tensor({-1.0, -0.25, 0.0, 1.5, 7.0})));
  nn::ReLU6 relu6(true);
  relu6(x);
  EXPECT_TRUE(close(x, tensor({0.0, 0.0, 0.0, 1.5, 6.0})));
  Tensor h = tensor({-4.0, 1.0, 4.0});
  nn::Hardtanh(nn::HardtanhOptions().inplace(true))(h);
  EXPECT_TRUE(close(h, tensor({-1.0, 1.0, 1.0})));
  // through autograd: an in-place activation of an intermediate has the
  // out-of-place gradient (PyTorch's in-place forms all support backward)
  using IP = std::function<Tensor(const Tensor&, bool)>;
  const std::vector<std::pair<std::string, IP>> inplace = {
      {"relu", [](const Tensor& x, bool ip) { return F::relu(x, F::ReLUFuncOptions(ip)); }},
      {"relu6", [](const Tensor& x, bool ip) { return F::relu6(x, F::ReLU6FuncOptions(ip)); }},
      {"leaky_relu", [](const Tensor& x, bool ip) { return F::leaky_relu(x, F::LeakyReLUFuncOptions().inplace(ip)); }},
      {"elu", [](const Tensor& x, bool ip) { return F::elu(x, F::ELUFuncOptions().inplace(ip)); }},
      {"selu", [](const Tensor& x, bool ip) { return F::selu(x, F::SELUFuncOptions(ip)); }},
      {"celu", [](const Tensor& x, bool ip) { return F::celu(x, F::CELUFuncOptions().alpha(0.5).inplace(ip)); }},
      {"hardtanh", [](const Tensor& x, bool ip) { return F::hardtanh(x, F::HardtanhFuncOptions().inplace(ip)); }},
      {"hardswish", [](const Tensor& x, bool ip) { return F::hardswish(x, F::HardswishFuncOptions(ip)); }},
      {"hardsigmoid", [](const Tensor& x, bool ip) { return F::hardsigmoid(x, F::HardsigmoidFuncOptions(ip)); }},
      {"threshold", [](const Tensor& x, bool ip) {
         return F::threshold(x, F::ThresholdFuncOptions(0.1, 2.0).inplace(ip));
       }},
      {"rrelu.eval", [](const Tensor& x, bool ip) { return F::rrelu(x, F::RReLUFuncOptions().inplace(ip)); }},
  };
  for (const auto& [name, fn] : inplace) {
    SCOPED_TRACE(name);
    Tensor a = tensor({-2.0, -0.5, 0.25, 2.0}, kDouble).requires_grad_();
    Tensor b = a * 2;
    Tensor r = fn(b, true);
    EXPECT_EQ(r.data_ptr(), b.data_ptr());
    (b * b).sum().backward();
    Tensor a2 = a.detach().clone().requires_grad_();
    Tensor y = fn(a2 * 2, false);
    EXPECT_TRUE(close(b.detach(), y.detach(), 1e-12));
    (y * y).sum().backward();
    EXPECT_TRUE(close(a.grad(), a2.grad(), 1e-12));
  }
  // a leaf that requires grad cannot be written in place
  Tensor leafx = ones({2}).requires_grad_();
  EXPECT_THROW(F::relu(leafx, F::ReLUFuncOptions(true)), brisk::Error);
}

TEST_F(ActivationModules, NaNPropagates) {
  Tensor x = tensor({std::nan(""), 1.0});
  for (const auto& [name, fn] : activations()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(std::isnan(fn(x)[0].item<double>()));
  }
}

TEST_F(ActivationModules, PrintAsPyTorch) {
  const std::vector<std::pair<nn::ModulePtr, std::string>> cases = {
      {nn::GELU().ptr(), "GELU(approximate='none')"},
      {nn::GELU("tanh").ptr(), "GELU(approximate='tanh')"},
      {nn::ReLU(true).ptr(), "ReLU(inplace=True)"},
      {nn::ReLU().ptr(), "ReLU()"},
      {nn::ReLU6().ptr(), "ReLU6()"},
      {nn::ReLU6(true).ptr(), "ReLU6(inplace=True)"},
      {nn::LeakyReLU().ptr(), "LeakyReLU(negative_slope=0.01)"},
      {nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2).inplace(true)).ptr(),
       "LeakyReLU(negative_slope=0.2, inplace=True)"},
      {nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(1e-5)).ptr(), "LeakyReLU(negative_slope=1e-05)"},
      {nn::ELU().ptr(), "ELU(alpha=1.0)"},
      {nn::SELU().ptr(), "SELU()"},
      {nn::CELU(nn::CELUOptions().alpha(2)).ptr(), "CELU(alpha=2.0)"},
      {nn::PReLU().ptr(), "PReLU(num_parameters=1)  # 1 parameters"},
      {nn::PReLU(nn::PReLUOptions().num_parameters(3)).ptr(), "PReLU(num_parameters=3)  # 3 parameters"},
      {nn::Hardtanh().ptr(), "Hardtanh(min_val=-1.0, max_val=1.0)"},
      {nn::RReLU().ptr(), "RReLU(lower=0.125, upper=0.3333333333333333)"},
      {nn::Softplus().ptr(), "Softplus(beta=1.0, threshold=20.0)"},
      {nn::Softplus(nn::SoftplusOptions().beta(100000)).ptr(), "Softplus(beta=100000.0, threshold=20.0)"},
      {nn::Softshrink().ptr(), "Softshrink(0.5)"},
      {nn::Hardshrink().ptr(), "Hardshrink(0.5)"},
      {nn::Tanhshrink().ptr(), "Tanhshrink()"},
      {nn::Threshold(0.1, 20).ptr(), "Threshold(threshold=0.1, value=20.0)"},
      {nn::Hardswish().ptr(), "Hardswish()"},
      {nn::Hardsigmoid().ptr(), "Hardsigmoid()"},
      {nn::LogSigmoid().ptr(), "LogSigmoid()"},
      {nn::GLU().ptr(), "GLU(dim=-1)"},
      {nn::Softmin(1).ptr(), "Softmin(dim=1)"},
      {nn::Softmax(1).ptr(), "Softmax(dim=1)"},
      {nn::LogSoftmax(0).ptr(), "LogSoftmax(dim=0)"},
      {nn::Softmax2d().ptr(), "Softmax2d()"},
      {nn::Softsign().ptr(), "Softsign()"},
      {nn::Mish().ptr(), "Mish()"},
      {nn::SiLU().ptr(), "SiLU()"},
  };
  for (const auto& [m, want] : cases) EXPECT_EQ(nn::to_string(*m), want);
  nn::Sequential seq(nn::Linear(3, 4), nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)), nn::Linear(4, 2),
                     nn::Softmax(1));
  Tensor y = seq(ones({2, 3}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 2}));
  const std::string s = nn::to_string(*seq);
  EXPECT_NE(s.find("(1): LeakyReLU(negative_slope=0.2)"), std::string::npos) << s;
}

TEST_F(ActivationModules, ErrorsNameTheOp) {
  expect_error([] { F::glu(ones({2, 3})); }, {"glu", "even", "size 3"});
  expect_error([] { F::glu(scalar_tensor(1.0)); }, {"glu", "0-dim"});
  expect_error([] { F::glu(ones({2, 4}), 2); }, {"glu", "dim 2"});
  expect_error([] { F::softshrink(ones({2}), -1.0); }, {"softshrink", "lambda"});
  expect_error([] { nn::Softshrink(-0.5); }, {"Softshrink", "lambda"});
  expect_error([] { F::celu(ones({2}), F::CELUFuncOptions().alpha(0)); }, {"celu", "alpha"});
  expect_error([] { nn::CELU(nn::CELUOptions().alpha(0)); }, {"CELU", "alpha"});
  expect_error([] { nn::Hardtanh(nn::HardtanhOptions().min_val(2).max_val(1)); }, {"Hardtanh", "max_val"});
  expect_error([] { F::hardtanh(ones({2}), F::HardtanhFuncOptions().min_val(2).max_val(1)); }, {"hardtanh", "min_val"});
  expect_error([] { nn::RReLU(nn::RReLUOptions().lower(0.5).upper(0.1)); }, {"RReLU", "lower"});
  expect_error([] { nn::Softmax2d()(ones({2, 3})); }, {"Softmax2d", "3D or 4D", "got 2D"});
  expect_error([] { nn::GELU("fast"); }, {"GELU", "'fast'"});
  expect_error([] { F::leaky_relu(ones({2}, kInt64)); }, {"leaky_relu", "floating point"});
  expect_error([] { F::elu(ones({2}, kInt32)); }, {"elu", "floating point"});
  expect_error([] { nn::Hardswish()(ones({2}, kInt64)); }, {"hardswish", "floating point"});
  expect_error([] { nn::PReLU(nn::PReLUOptions().num_parameters(0)); }, {"PReLU", "num_parameters"});
}
