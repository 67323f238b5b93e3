// nn layers and init: shapes, initialization ranges and statistics, modes,
// gradients to every parameter, gradcheck in float64.
#include <brisk/nn.h>

#include <cmath>
#include <limits>

#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;

namespace {

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }

// Every parameter of `m` gets a finite, non-zero gradient from `loss`.
void expect_all_grads(nn::Module& m, const Tensor& loss) {
  m.zero_grad();
  loss.backward();
  for (const auto& [name, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name << " got no gradient";
    EXPECT_EQ(p.grad().sizes(), p.sizes()) << name;
    EXPECT_TRUE(p.grad().isfinite().all().item<bool>()) << name;
    EXPECT_GT(max_abs(p.grad()), 0.0) << name;
  }
}

}  // namespace

TEST(Linear, ShapesAndForward) {
  manual_seed(0);
  nn::Linear fc(5, 3);
  EXPECT_EQ(fc->weight.sizes(), IntArrayRef({3, 5}));
  EXPECT_EQ(fc->bias.sizes(), IntArrayRef({3}));
  Tensor x = randn({4, 5});
  EXPECT_TRUE(close(fc(x), x.matmul(fc->weight.t()) + fc->bias));
  // batched and 1-D inputs
  EXPECT_EQ(fc(randn({2, 7, 5})).sizes(), IntArrayRef({2, 7, 3}));
  Tensor v = randn({5});
  EXPECT_TRUE(close(fc(v), fc->weight.matmul(v) + fc->bias));
  nn::Linear nob(5, 3, false);
  EXPECT_FALSE(nob->bias.defined());
  EXPECT_EQ(nob->parameters().size(), 1u);
  EXPECT_TRUE(close(nob(x), x.matmul(nob->weight.t())));
  expect_error([&] { fc(randn({4, 6})); }, {"linear", "[4, 6]", "[3, 5]"});
}

TEST(Linear, DefaultInitRange) {
  manual_seed(1);
  nn::Linear fc(256, 512);
  // kaiming_uniform_(a=sqrt(5)) and the bias both give U(-1/sqrt(in), 1/sqrt(in))
  const double bound = 1.0 / std::sqrt(256.0);
  EXPECT_LE(max_abs(fc->weight), bound);
  EXPECT_GT(max_abs(fc->weight), 0.98 * bound);
  EXPECT_LE(max_abs(fc->bias), bound);
  // uniform statistics: mean 0, std bound / sqrt(3)
  EXPECT_NEAR(fc->weight.mean().item<double>(), 0.0, 0.01 * bound);
  EXPECT_NEAR(fc->weight.std().item<double>(), bound / std::sqrt(3.0), 0.01 * bound);
}

TEST(Linear, Deterministic) {
  manual_seed(7);
  nn::Linear a(3, 4);
  manual_seed(7);
  nn::Linear b(3, 4);
  EXPECT_TRUE(a->weight.equal(b->weight));
  EXPECT_TRUE(a->bias.equal(b->bias));
}

TEST(Init, Statistics) {
  manual_seed(2);
  Tensor w = empty({400, 300});
  nn::init::xavier_uniform_(w, 2.0);
  const double xa = 2.0 * std::sqrt(6.0 / 700.0);
  EXPECT_LE(max_abs(w), xa);
  EXPECT_GT(max_abs(w), 0.98 * xa);
  nn::init::xavier_normal_(w);
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / 700.0), 0.02 * std::sqrt(2.0 / 700.0));
  nn::init::kaiming_normal_(w, 0.0, nn::init::kFanOut, "relu");
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0) / std::sqrt(400.0), 0.02 * std::sqrt(2.0 / 400.0));
  nn::init::kaiming_uniform_(w, 0.0, nn::init::kFanIn, "relu");
  const double ku = std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(300.0);
  EXPECT_LE(max_abs(w), ku);
  EXPECT_GT(max_abs(w), 0.98 * ku);
  nn::init::normal_(w, 3.0, 0.5);
  EXPECT_NEAR(w.mean().item<double>(), 3.0, 0.01);
  EXPECT_NEAR(w.std().item<double>(), 0.5, 0.01);
  nn::init::uniform_(w, -2.0, -1.0);
  EXPECT_GE(w.min().item<double>(), -2.0);
  EXPECT_LE(w.max().item<double>(), -1.0);
  nn::init::constant_(w, 0.25);
  EXPECT_TRUE(w.equal(full({400, 300}, 0.25)));
  nn::init::ones_(w);
  EXPECT_TRUE(w.equal(ones({400, 300})));
  nn::init::zeros_(w);
  EXPECT_TRUE(w.equal(zeros({400, 300})));
  // conv-shaped weights count the receptive field
  auto [fi, fo] = nn::init::calculate_fan_in_and_fan_out(empty({8, 3, 5, 5}));
  EXPECT_EQ(fi, 75);
  EXPECT_EQ(fo, 200);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("linear"), 1.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("selu"), 0.75);
  expect_error([] { nn::init::calculate_gain("swish"); }, {"calculate_gain", "'swish'"});
  expect_error([] { nn::init::xavier_uniform_(empty({5})); }, {"init", "fewer than 2"});
}

TEST(Init, WorksOnParametersAndRecordsNothing) {
  Tensor p = zeros({3, 3}).requires_grad_();
  nn::init::normal_(p);  // in place on a leaf that requires grad: fine under NoGradGuard
  EXPECT_TRUE(p.is_leaf());
  EXPECT_FALSE(p.grad_fn());
  EXPECT_GT(max_abs(p), 0.0);
}

TEST(Activations, MatchOps) {
  Tensor x = randn({4, 6});
  EXPECT_TRUE(close(nn::ReLU()(x), x.clamp_min(0)));
  EXPECT_TRUE(close(nn::Tanh()(x), x.tanh()));
  EXPECT_TRUE(close(nn::Sigmoid()(x), (x.neg().exp() + 1).reciprocal()));
  EXPECT_TRUE(close(nn::SiLU()(x), x * x.sigmoid()));
  EXPECT_TRUE(close(nn::GELU()(x), x * 0.5 * ((x / std::sqrt(2.0)).erf() + 1)));
  Tensor t = 0.5 * x * (1 + (std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3))).tanh());
  EXPECT_TRUE(close(nn::GELU("tanh")(x), t));
  expect_error([] { nn::GELU("fast"); }, {"GELU", "'fast'"});
  EXPECT_TRUE(close(nn::Softmax(1)(x).sum(1), ones({4})));
  EXPECT_TRUE(close(nn::LogSoftmax(0)(x).exp().sum(0), ones({6})));
  EXPECT_TRUE(nn::Identity()(x).is_same(x));
  EXPECT_EQ(nn::Flatten()(randn({2, 3, 4, 5})).sizes(), IntArrayRef({2, 60}));
  EXPECT_EQ(nn::Flatten(0, 1)(randn({2, 3, 4})).sizes(), IntArrayRef({6, 4}));
}

TEST(Dropout, TrainAndEval) {
  manual_seed(3);
  nn::Dropout d(0.25);
  Tensor x = ones({200, 200});
  Tensor y = d(x);
  // kept elements are scaled by 1/(1-p); about a quarter are zero
  Tensor kept = y.ne(0);
  EXPECT_TRUE(close(y.masked_select(kept), full({kept.sum().item<int64_t>()}, 1.0 / 0.75)));
  const double frac = 1.0 - kept.to(kDouble).mean().item<double>();
  EXPECT_NEAR(frac, 0.25, 0.01);
  EXPECT_NEAR(y.mean().item<double>(), 1.0, 0.02);  // expectation preserved
  d->eval();
  EXPECT_TRUE(d(x).is_same(x));
  // deterministic under manual_seed
  d->train();
  manual_seed(11);
  Tensor a = d(x);
  manual_seed(11);
  EXPECT_TRUE(a.equal(d(x)));
  EXPECT_TRUE(nn::Dropout(1.0)(x).equal(zeros_like(x)));
  EXPECT_TRUE(F::dropout(x, 0.0).equal(x));
  expect_error([] { nn::Dropout(1.5); }, {"Dropout", "1.5"});
  // gradient: the same mask, scaled
  Tensor w = ones({50}).requires_grad_();
  manual_seed(5);
  Tensor out = F::dropout(w, 0.5, true);
  out.sum().backward();
  EXPECT_TRUE(close(w.grad(), out.detach()));
}

TEST(Embedding, LookupAndGradient) {
  manual_seed(4);
  nn::Embedding emb(10, 3);
  EXPECT_EQ(emb->weight.sizes(), IntArrayRef({10, 3}));
  EXPECT_NEAR(emb->weight.std().item<double>(), 1.0, 0.5);
  Tensor idx = tensor<int64_t>({{1, 2, 1}, {9, 0, 5}});
  Tensor y = emb(idx);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 3, 3}));
  EXPECT_TRUE(y[1][0].equal(emb->weight[9]));
  EXPECT_TRUE(y[0][2].equal(emb->weight[1]));
  y.sum().backward();
  // row 1 looked up twice, rows 3, 4, 6, 7, 8 never
  Tensor counts = tensor<float>({1, 2, 1, 0, 0, 1, 0, 0, 0, 1}).unsqueeze(1).expand({10, 3});
  EXPECT_TRUE(close(emb->weight.grad(), counts));
  expect_error([&] { emb(tensor<int64_t>({10})); }, {"embedding", "10", "out of range"});
  expect_error([&] { emb(tensor<float>({1.f})); }, {"embedding", "int64"});
}

TEST(Embedding, PaddingIdx) {
  nn::Embedding emb(5, 2, /*padding_idx=*/-1);
  ASSERT_TRUE(emb->padding_idx.has_value());
  EXPECT_EQ(*emb->padding_idx, 4);
  EXPECT_TRUE(emb->weight[4].equal(zeros({2})));
  Tensor y = emb(tensor<int64_t>({4, 0, 4}));
  (y * 3).sum().backward();
  EXPECT_TRUE(emb->weight.grad()[4].equal(zeros({2})));
  EXPECT_TRUE(emb->weight.grad()[0].equal(full({2}, 3.0)));
}

TEST(LayerNorm, MatchesReference) {
  manual_seed(5);
  nn::LayerNorm ln(std::vector<int64_t>{4, 5});
  EXPECT_TRUE(ln->weight.equal(ones({4, 5})));
  EXPECT_TRUE(ln->bias.equal(zeros({4, 5})));
  Tensor x = randn({3, 4, 5}, kDouble) * 3 + 1;
  Tensor y = ln(x.to(kFloat));
  // normalized per sample: mean 0, biased std 1
  Tensor flat = y.reshape({3, 20}).to(kDouble);
  EXPECT_TRUE(close(flat.mean(1), zeros({3}, kDouble), 0, 1e-5));
  EXPECT_TRUE(close(flat.var(1, 0), ones({3}, kDouble), 1e-3, 1e-3));
  // naive reference in float64 with affine parameters
  nn::init::normal_(ln->weight);
  nn::init::normal_(ln->bias);
  ln->to(kDouble);
  Tensor xr = x.reshape({3, 20});
  Tensor mu = xr.mean(1, true), var = (xr - mu).square().mean(1, true);
  Tensor want = ((xr - mu) / (var + 1e-5).sqrt()).reshape({3, 4, 5}) * ln->weight + ln->bias;
  EXPECT_TRUE(close(ln(x), want, 1e-10, 1e-10));
  nn::LayerNorm plain(std::vector<int64_t>{5}, 1e-5, false);
  EXPECT_TRUE(plain->parameters().empty());
  expect_error([&] { ln(randn({3, 5, 4}, kDouble)); }, {"layer_norm", "[3, 5, 4]", "[4, 5]"});
}

// Regression (difffuzz nn:F.layer_norm:nan): a variance past float32's
// range (|x - mean| ~ 1e30) gave rstd = 0 and an output of exactly the bias;
// PyTorch (1.13 and 2.15) gives NaN for that row, as brisk now does. Other
// rows are untouched: layer_norm([[1e30, 0, 1, 2], [1, 2, 3, 4]], [4]).
TEST(LayerNorm, OverflowingVarianceIsNan) {
  const Tensor x = tensor({1e30, 0.0, 1.0, 2.0, 1.0, 2.0, 3.0, 4.0}).view({2, 4});
  const Tensor y = F::layer_norm(x, {4}, {}, tensor({0.5f, 0.5f, 0.5f, 0.5f}));
  EXPECT_TRUE(y[0].isnan().all().item<bool>());
  // torch: [-1.3416, -0.4472, 0.4472, 1.3416] + 0.5
  EXPECT_TRUE(close(y[1], tensor({-0.8416390, 0.0527864, 0.9472136, 1.8416390}), 1e-5, 1e-5));
}

// A torch bug (tools/fuzz TORCH_BUGS; difffuzz nn:F.layer_norm:value/nan):
// over one element the normalized value is exactly 0, so the output is the
// bias and the input gradient 0. torch leaves rounding noise of its folded
// affine (1.7e-5 where 0 is right), and NaN for 1e30 (its E[x^2] overflows).
TEST(LayerNorm, OverOneElementIsTheBias) {
  for (ScalarType dt : {kFloat, kBFloat16, kDouble}) {
    const Tensor x = tensor({1e30, 0.0, 1.0, -0.3831}, kDouble).view({4, 1}).to(dt).requires_grad_();
    const Tensor y = F::layer_norm(x, {1}, full({1}, 2.0, dt), full({1}, 0.5, dt));
    EXPECT_TRUE(close(y, full({4, 1}, 0.5), 0, 0)) << dt;
    y.backward(tensor({1.0, -2.0, 3.0, 0.5}, kDouble).view({4, 1}).to(dt));
    EXPECT_TRUE(close(x.grad(), zeros({4, 1}), 0, 0)) << dt;
  }
}

// A torch bug (difffuzz nn:F.layer_norm:grad-value:half, allowlisted): torch's
// bfloat16 layer_norm backward over a row of small variance is off by its
// rounding (torch 2.15: x = [[-0.578125, -0.63671875]], g = [[1, -0.5]] gives
// x.grad [[-2.09375, -1.359375]]; float64 gives [[0.29312401, -0.29312401]]).
// brisk's sums run in float32 and round once.
TEST(LayerNorm, BFloat16GradientOfSmallVarianceRow) {
  const Tensor x = tensor({-0.578125, -0.63671875}, kDouble).view({1, 2}).to(kBFloat16).requires_grad_();
  F::layer_norm(x, {2}).backward(tensor({1.0, -0.5}, kDouble).view({1, 2}).to(kBFloat16));
  EXPECT_TRUE(close(x.grad(), tensor({0.2931240122371719, -0.2931240122370582}, kDouble).view({1, 2}), 1.6e-2, 0));
}

// A torch bug (tools/fuzz TORCH_BUGS; difffuzz nn:F.layer_norm:grad2-extra):
// without a weight, torch's double backward drops the bias gradient's
// dependence on the bias (through the ops after layer_norm): its second
// derivative is None. With weight=ones torch gives the right one, which brisk
// gives either way (torch 2.15, x = [0.25, -1.5, 2, 0.5], b = [0.125, -0.25,
// 0.375, 0.5], g = grad(sigmoid(layer_norm(x, [4], w, b)).sum(), b):
// grad(g.sum(), b) = [-0.0093182510, 0.0899971325, -0.0892825719, -0.0708388928]).
TEST(LayerNorm, BiasSecondDerivativeWithoutWeight) {
  const Tensor x = tensor({0.25, -1.5, 2.0, 0.5}, kDouble);
  for (bool with_weight : {false, true}) {
    const Tensor b = tensor({0.125, -0.25, 0.375, 0.5}, kDouble).requires_grad_();
    const Tensor w = with_weight ? ones({4}, kDouble) : Tensor();
    const Tensor y = F::layer_norm(x, {4}, w, b).sigmoid();
    const Tensor g = autograd::grad({y.sum()}, {b}, {}, std::nullopt, /*create_graph=*/true)[0];
    EXPECT_TRUE(close(g, tensor({0.24965171102719844, 0.12978165248100892, 0.12759712377722876, 0.2252807440946041}, kDouble),
                      1e-12, 0));
    EXPECT_TRUE(close(autograd::grad({g.sum()}, {b})[0],
                      tensor({-0.0093182510, 0.0899971325, -0.0892825719, -0.0708388928}, kDouble), 1e-8, 1e-10))
        << with_weight;
  }
}

// gelu(inf) is inf in every dtype and for any length (torch 2.15's bfloat16
// and float32 vector loops give NaN: F.gelu(torch.full((20,), inf,
// dtype=torch.bfloat16)) is all NaN, F.gelu of one bfloat16 inf is inf;
// difffuzz chain:gelu:nan:half).
TEST(Gelu, OfInfinityIsInfinity) {
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType dt : {kBFloat16, kHalf, kFloat, kDouble})
    for (int64_t n : {1, 20}) {
      EXPECT_TRUE(close(F::gelu(full({n}, inf, dt)), full({n}, inf, kDouble), 0, 0)) << dt << " " << n;
      // gelu(-inf) = -inf * 0 is NaN, in torch too
      EXPECT_TRUE(F::gelu(full({n}, -inf, dt)).isnan().all().item<bool>()) << dt << " " << n;
    }
}

TEST(Bilinear, MatchesEinsum) {
  manual_seed(6);
  nn::Bilinear bl(3, 4, 2);
  Tensor a = randn({5, 3}), b = randn({5, 4});
  Tensor want = einsum("ni,oij,nj->no", {a, bl->weight, b}) + bl->bias;
  EXPECT_TRUE(close(bl(a, b), want, 1e-4, 1e-5));
  EXPECT_EQ(bl(randn({2, 5, 3}), randn({2, 5, 4})).sizes(), IntArrayRef({2, 5, 2}));
}

// Regression (difffuzz matmul:F.linear/F.bilinear:unsupported:int): linear
// and bilinear take integer tensors, as PyTorch's CPU ops do (wrapping like
// its integer GEMM); bool is refused by both. torch 2.15 values.
TEST(Linear, IntegerTensors) {
  const Tensor x = tensor({1, -2, 3, 4, 0, -1}, kInt32).view({2, 3});
  const Tensor w = tensor({1, 2, 3, -1, 0, 2}, kInt32).view({2, 3});
  const Tensor b = tensor({5, -5}, kInt32);
  const Tensor y = F::linear(x, w, b);
  EXPECT_EQ(y.dtype(), kInt32);
  EXPECT_TRUE(close(y, tensor({11, 0, 6, -11}, kInt32).view({2, 2}), 0, 0));
  const Tensor yu = F::linear(x.to(kUInt8), w.abs().to(kUInt8));  // 518 wraps to 6
  EXPECT_EQ(yu.dtype(), kUInt8);
  EXPECT_TRUE(close(yu, tensor({6, 7, 1, 2}, kInt64).view({2, 2}), 0, 0));
  const Tensor wb = (arange(18, kInt64) - 9).view({2, 3, 3});
  EXPECT_TRUE(close(F::bilinear(x.to(kInt64), x.to(kInt64), wb, b.to(kInt64)), tensor({1, 27, -100, -29}, kInt64).view({2, 2}),
                    0, 0));
  EXPECT_EQ(F::bilinear(x, x, wb.to(kInt32)).dtype(), kInt32);
  expect_error([&] { F::linear(x.to(kBool), w.to(kBool)); }, {"[linear]", "bool"});
  // mse/l1/smooth_l1 compute in the promoted dtype: an integer input with a float target is fine
  // (torch: smooth_l1_loss(tensor(2, int32), tensor(-1.0361624)) = 2.5362, mse_loss([1, 2, 3], [.5, 2, 5]) = 1.4167)
  EXPECT_NEAR(F::smooth_l1_loss(scalar_tensor(2, kInt32), scalar_tensor(-1.0361623764038086)).item<double>(), 2.5362, 1e-4);
  EXPECT_NEAR(F::mse_loss(tensor({1, 2, 3}, kInt64), tensor({0.5, 2.0, 5.0})).item<double>(), 1.4166667, 1e-6);
  expect_error([&] { F::mse_loss(tensor({1, 2}, kInt64), tensor({1, 2}, kInt64)); }, {"[mse_loss]", "floating point"});
}

TEST(Layers, GradientsReachEveryParameter) {
  manual_seed(8);
  auto net = std::make_shared<nn::SequentialImpl>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::LinearImpl>(6, 8), std::make_shared<nn::LayerNormImpl>(std::vector<int64_t>{8}),
      std::make_shared<nn::GELUImpl>(), std::make_shared<nn::DropoutImpl>(0.1), std::make_shared<nn::LinearImpl>(8, 8),
      std::make_shared<nn::SiLUImpl>(), std::make_shared<nn::LinearImpl>(8, 3)});
  expect_all_grads(*net, net->forward(randn({4, 6})).square().sum());
  nn::Embedding emb(7, 6);
  Tensor idx = tensor<int64_t>({0, 1, 2, 3, 4, 5, 6});
  expect_all_grads(*emb, (emb(idx) * randn({7, 6})).sum());
  nn::Bilinear bl(3, 4, 2);
  expect_all_grads(*bl, bl(randn({5, 3}), randn({5, 4})).square().sum());
}

TEST(Layers, Gradcheck) {
  manual_seed(9);
  using brisk::testing::leaf;
  // functional forms in float64, every tensor input checked
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::linear(t[0], t[1], t[2]); },
                           {leaf({3, 4}), leaf({2, 4}), leaf({2})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::linear(t[0], t[1]); },
                           {leaf({2, 3, 4}), brisk::testing::leaf_noncontig({2, 4})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::layer_norm(t[0], {3, 4}, t[1], t[2]); },
                           {leaf({2, 3, 4}), leaf({3, 4}), leaf({3, 4})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::bilinear(t[0], t[1], t[2], t[3]); },
                           {leaf({3, 2}), leaf({3, 3}), leaf({2, 2, 3}), leaf({2})}));
  Tensor idx = tensor<int64_t>({{0, 2}, {2, 3}});
  EXPECT_TRUE(gradcheck_ok([idx](const TensorList& t) { return F::embedding(idx, t[0]); }, {leaf({4, 3})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::gelu(t[0], "tanh") + F::silu(t[0]); },
                           {leaf({3, 3})}));
  // a module converted to float64, gradcheck over its parameters and input
  nn::Linear fc(4, 3);
  fc->to(kDouble);
  Tensor x = leaf({2, 4});
  EXPECT_TRUE(gradcheck_ok(
      [&](const TensorList& t) { return F::linear(t[0], t[1], t[2]).tanh(); }, {x, fc->weight, fc->bias}));
}

TEST(Utils, ClipGradNorm) {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({3}).requires_grad_();
  a.mutable_grad() = tensor<float>({3.f, 0.f});
  b.mutable_grad() = tensor<float>({0.f, 4.f, 0.f});
  // total 2-norm 5, clipped to 1
  const double total = nn::utils::clip_grad_norm_({a, b}, 1.0);
  EXPECT_NEAR(total, 5.0, 1e-6);
  EXPECT_TRUE(close(a.grad(), tensor<float>({0.6f, 0.f}), 1e-5));
  EXPECT_TRUE(close(b.grad(), tensor<float>({0.f, 0.8f, 0.f}), 1e-5));
  // under the limit: unchanged
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 10.0), 1.0, 1e-5);
  EXPECT_TRUE(close(a.grad(), tensor<float>({0.6f, 0.f}), 1e-5));
  // inf norm
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 0.4, INFINITY), 0.8, 1e-6);
  EXPECT_TRUE(close(b.grad(), tensor<float>({0.f, 0.4f, 0.f}), 1e-5));
  // 1-norm
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 100.0, 1.0), 0.3 + 0.4, 1e-5);
  // non-finite totals throw only on request
  b.mutable_grad() = tensor<float>({NAN, 0.f, 0.f});
  expect_error([&] { nn::utils::clip_grad_norm_({a, b}, 1.0, 2.0, true); }, {"clip_grad_norm_", "non-finite"});
  EXPECT_TRUE(std::isnan(nn::utils::clip_grad_norm_({a, b}, 1.0)));
  // parameters without gradients are skipped
  EXPECT_EQ(nn::utils::clip_grad_norm_({zeros({2}).requires_grad_()}, 1.0), 0.0);
}

TEST(Utils, ClipGradValue) {
  Tensor a = zeros({4}).requires_grad_();
  a.mutable_grad() = tensor<float>({-3.f, -0.5f, 0.5f, 3.f});
  nn::utils::clip_grad_value_({a}, 1.0);
  EXPECT_TRUE(a.grad().equal(tensor<float>({-1.f, -0.5f, 0.5f, 1.f})));
}
