// The layers and options added for libtorch porting (issue 14): module
// construction with libtorch's options classes, parameter shapes and init,
// printing, modes, errors naming the module, and the composed 3-D
// convolutions against naive loops and finite differences. Values against
// libtorch are in tests/parity/test_parity_layers.cpp.
#include <brisk/nn.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::equal_values;
using brisk::testing::expect_error;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;

namespace {

struct Single : ::testing::Test {
  void SetUp() override { set_num_threads(1); }
};

// PyTorch's one-line printing of a leaf module: Name(extra_repr)
std::string repr(const nn::Module& m) { return m.name() + "(" + m.extra_repr() + ")"; }

// out[n, o, d, h, w] = b[o] + sum over c, kd, kh, kw (zero padded)
Tensor naive_conv3d(const Tensor& x, const Tensor& w, const Tensor& b, std::array<int64_t, 3> s,
                    std::array<int64_t, 3> p, std::array<int64_t, 3> dl, int64_t groups) {
  const int64_t N = x.size(0), C = x.size(1), D = x.size(2), H = x.size(3), W = x.size(4);
  const int64_t O = w.size(0), cg = w.size(1), og = O / groups;
  const int64_t k0 = w.size(2), k1 = w.size(3), k2 = w.size(4);
  const int64_t OD = (D + 2 * p[0] - dl[0] * (k0 - 1) - 1) / s[0] + 1;
  const int64_t OH = (H + 2 * p[1] - dl[1] * (k1 - 1) - 1) / s[1] + 1;
  const int64_t OW = (W + 2 * p[2] - dl[2] * (k2 - 1) - 1) / s[2] + 1;
  (void)C;
  Tensor xc = x.contiguous(), wc = w.contiguous();
  const double* xp = xc.data_ptr<double>();
  const double* wp = wc.data_ptr<double>();
  std::vector<double> out(size_t(N * O * OD * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = b.defined() ? b[o].item<double>() : 0.0;
            const int64_t g = o / og;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t a = 0; a < k0; ++a)
                for (int64_t bb = 0; bb < k1; ++bb)
                  for (int64_t cc = 0; cc < k2; ++cc) {
                    const int64_t id = od * s[0] - p[0] + a * dl[0], ih = oh * s[1] - p[1] + bb * dl[1],
                                  iw = ow * s[2] - p[2] + cc * dl[2];
                    if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                    const int64_t c = g * cg + ci;
                    acc += xp[(((n * x.size(1) + c) * D + id) * H + ih) * W + iw] *
                           wp[(((o * cg + ci) * k0 + a) * k1 + bb) * k2 + cc];
                  }
            out[size_t((((n * O + o) * OD + od) * OH + oh) * OW + ow)] = acc;
          }
  return tensor(out, {N, O, OD, OH, OW}, kDouble);
}

TEST_F(Single, Conv3dMatchesNaiveLoops) {
  manual_seed(1);
  const Tensor x = randn({2, 4, 6, 5, 7}, kDouble), w = randn({6, 2, 3, 2, 3}, kDouble), b = randn({6}, kDouble);
  const Tensor got = F::conv3d(x, w, b, {2, 1, 2}, {1, 0, 2}, {1, 2, 1}, 2);
  const Tensor want = naive_conv3d(x, w, b, {2, 1, 2}, {1, 0, 2}, {1, 2, 1}, 2);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(allclose(got, want, 1e-12, 1e-12));
  // float32 (oneDNN per depth tap) against the float64 loops
  const Tensor gf = F::conv3d(x.to(kFloat), w.to(kFloat), b.to(kFloat), {2, 1, 2}, {1, 0, 2}, {1, 2, 1}, 2);
  EXPECT_TRUE(allclose(gf.to(kDouble), want, 1e-4, 1e-4));
}

TEST_F(Single, ConvTranspose3dIsTheAdjointOfConv3d) {
  // <conv3d(x, w), y> == <x, conv_transpose3d(y, w)> for the same geometry
  manual_seed(2);
  const Tensor x = randn({2, 4, 7, 6, 5}, kDouble), w = randn({6, 2, 3, 2, 3}, kDouble);
  const Tensor y = F::conv3d(x, w, {}, {2, 2, 1}, {1, 0, 1}, {1, 1, 2}, 2);
  const Tensor r = randn(y.sizes(), kDouble);
  // output_padding recovers x's size
  const std::array<int64_t, 3> op{(7 + 2 - 3) % 2, (6 - 2) % 2, 0};
  const Tensor t = F::conv_transpose3d(r, w, {}, {2, 2, 1}, {1, 0, 1}, {op[0], op[1], op[2]}, 2, {1, 1, 2});
  ASSERT_EQ(t.sizes(), x.sizes());
  EXPECT_NEAR((y * r).sum().item<double>(), (x * t).sum().item<double>(), 1e-9);
}

TEST_F(Single, Conv3dGradcheck) {
  manual_seed(3);
  const Tensor x = randn({1, 2, 4, 3, 4}, kDouble).requires_grad_();
  const Tensor w = randn({2, 2, 2, 2, 3}, kDouble).requires_grad_();
  const Tensor b = randn({2}, kDouble).requires_grad_();
  autograd::GradcheckOptions o;
  o.check_grad_grad = true;
  EXPECT_TRUE(autograd::gradcheck(
      [](const TensorList& t) { return F::conv3d(t[0], t[1], t[2], {2, 1, 1}, {1, 0, 1}, 1, 1); }, {x, w, b}, o));
  const Tensor xt = randn({1, 2, 3, 2, 3}, kDouble).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck(
      [](const TensorList& t) { return F::conv_transpose3d(t[0], t[1], t[2], {2, 1, 2}, {0, 1, 1}, {1, 0, 1}, 1, 1); },
      {xt, w, b}, o));
}

TEST_F(Single, ConvModulesWithOptions) {
  nn::Conv3d c(nn::Conv3dOptions(4, 8, {3, 1, 2}).stride(2).padding(1).bias(false));
  EXPECT_EQ(c->weight.sizes(), IntArrayRef({8, 4, 3, 1, 2}));
  EXPECT_FALSE(c->bias.defined());
  EXPECT_EQ(c(randn({2, 4, 5, 6, 7})).sizes(), IntArrayRef({2, 8, 3, 4, 4}));
  EXPECT_EQ(repr(*c), "Conv3d(4, 8, kernel_size=(3, 1, 2), stride=(2, 2, 2), padding=(1, 1, 1), bias=false)");
  // PyTorch's init: |w| <= 1/sqrt(fan_in), fan_in = 4 * 3 * 1 * 2
  EXPECT_LE(c->weight.abs().max().item<float>(), 1.0f / std::sqrt(24.0f) + 1e-6f);

  nn::ConvTranspose3d t(nn::ConvTranspose3dOptions(8, 4, 2).stride(2));
  EXPECT_EQ(t->weight.sizes(), IntArrayRef({8, 4, 2, 2, 2}));
  EXPECT_EQ(t(randn({1, 8, 2, 3, 4})).sizes(), IntArrayRef({1, 4, 4, 6, 8}));
  EXPECT_EQ(repr(*t), "ConvTranspose3d(8, 4, kernel_size=(2, 2, 2), stride=(2, 2, 2))");

  nn::ConvTranspose1d t1(nn::ConvTranspose1dOptions(6, 4, 3).stride(2).padding(1).output_padding(1).groups(2));
  EXPECT_EQ(t1->weight.sizes(), IntArrayRef({6, 2, 3}));
  EXPECT_EQ(t1(randn({2, 6, 5})).sizes(), IntArrayRef({2, 4, 10}));
  EXPECT_EQ(t1(randn({6, 5})).sizes(), IntArrayRef({4, 10}));
  EXPECT_EQ(repr(*t1),
            "ConvTranspose1d(6, 4, kernel_size=(3,), stride=(2,), padding=(1,), output_padding=(1,), groups=2)");

  nn::Conv2d circ(nn::Conv2dOptions(2, 2, 3).padding(1).padding_mode(kCircular));
  EXPECT_EQ(repr(*circ), "Conv2d(2, 2, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), padding_mode=circular)");
  EXPECT_EQ(circ(randn({1, 2, 5, 5})).sizes(), IntArrayRef({1, 2, 5, 5}));
  EXPECT_TRUE(nn::Conv2dOptions(1, 1, 1).padding_mode() == kZeros);
  expect_error([&] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(2, 2, 3).padding_mode(kReflect)); },
               {"ConvTranspose2d", "padding_mode"});
  expect_error([&] { nn::Conv2dOptions(1, 1, 1).padding_mode(kConstant); }, {"padding_mode"});
  expect_error([&] { c(randn({2, 3, 5, 6, 7})); }, {"conv3d", "channels"});
  expect_error([&] { c(randn({4, 5, 6})); }, {"conv3d", "5-D"});
  expect_error([&] { F::conv3d(randn({1, 1, 2, 4, 4}), randn({1, 1, 3, 1, 1})); }, {"conv3d", "depth"});
  expect_error([&] { nn::Conv3d(nn::Conv3dOptions(3, 4, 3).groups(2)); }, {"Conv3d", "divisible"});
  expect_error([&] { F::conv_transpose3d(randn({1, 2, 2, 2, 2}), randn({2, 1, 2, 2, 2}), {}, 1, 0, 1); },
               {"conv_transpose3d", "output_padding"});
}

TEST_F(Single, InstanceNormModules) {
  nn::InstanceNorm2d in(nn::InstanceNormOptions(3).affine(true).track_running_stats(true).eps(1e-3));
  EXPECT_EQ(in->weight.sizes(), IntArrayRef({3}));
  EXPECT_TRUE(in->running_mean.defined());
  EXPECT_EQ(repr(*in), "InstanceNorm2d(3, eps=0.001, momentum=0.1, affine=true, track_running_stats=true)");
  manual_seed(4);
  const Tensor x = randn({2, 3, 4, 5}) * 3 + 1;
  const Tensor y = in(x);
  // each instance normalized (weight 1, bias 0)
  EXPECT_TRUE(allclose(y.mean({2, 3}), zeros({2, 3}), 1e-5, 1e-5));
  EXPECT_EQ(in->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_GT(in->running_mean.abs().sum().item<float>(), 0.0f);
  in->eval();
  const Tensor ye = in(x);  // running statistics now
  EXPECT_FALSE(allclose(ye, y, 1e-3, 1e-3));
  // unbatched
  nn::InstanceNorm1d in1(4);
  EXPECT_EQ(repr(*in1), "InstanceNorm1d(4, eps=1e-05, momentum=0.1, affine=false, track_running_stats=false)");
  EXPECT_TRUE(in1->named_parameters().empty());
  EXPECT_EQ(in1(randn({4, 7})).sizes(), IntArrayRef({4, 7}));
  nn::InstanceNorm3d in3(nn::InstanceNormOptions(2).affine(true));
  EXPECT_EQ(in3(randn({2, 2, 3, 3, 3})).sizes(), IntArrayRef({2, 2, 3, 3, 3}));
  expect_error([&] { in3(randn({2, 3, 3, 3, 3})); }, {"InstanceNorm3d", "channels"});
  expect_error([&] { in3(randn({3, 3})); }, {"InstanceNorm3d", "input"});
}

TEST_F(Single, NormalizationOptions) {
  nn::LayerNorm ln(nn::LayerNormOptions({8}).eps(1e-6));
  EXPECT_EQ(ln->eps, 1e-6);
  EXPECT_EQ(ln->weight.sizes(), IntArrayRef({8}));
  nn::LayerNorm ln2(nn::LayerNormOptions({2, 4}).elementwise_affine(false));
  EXPECT_FALSE(ln2->weight.defined());
  nn::LayerNorm ln3(std::vector<int64_t>{5}, 1e-5, true);  // brisk's constructor stays
  EXPECT_TRUE(ln3->bias.defined());
  nn::RMSNorm rms(nn::RMSNormOptions({6}).eps(1e-4).elementwise_affine(false));
  EXPECT_EQ(*rms->eps, 1e-4);
  EXPECT_FALSE(rms->weight.defined());
  nn::GroupNorm gn(nn::GroupNormOptions(2, 4).eps(1e-3));
  EXPECT_EQ(gn->options.eps(), 1e-3);
  nn::CrossMapLRN2d cm(nn::CrossMapLRN2dOptions(3).alpha(0.05).k(2));
  EXPECT_EQ(repr(*cm), "CrossMapLRN2d(3, alpha=0.05, beta=0.75, k=2)");
  manual_seed(9);
  const Tensor xc = randn({2, 5, 2, 3}, kDouble).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck([&](const TensorList& t) { return cm(t[0]); }, {xc}));
  expect_error([&] { cm(randn({2, 5, 3})); }, {"CrossMapLRN2d", "4-D"});
  nn::LocalResponseNorm lrn(nn::LocalResponseNormOptions(3).alpha(0.01));
  EXPECT_EQ(repr(*lrn), "LocalResponseNorm(3, alpha=0.01, beta=0.75, k=1)");
  EXPECT_EQ(lrn(randn({2, 5, 4})).sizes(), IntArrayRef({2, 5, 4}));
}

TEST_F(Single, LinearAndEmbeddingOptions) {
  nn::Linear lin(nn::LinearOptions(3, 4).bias(false));
  EXPECT_EQ(lin->weight.sizes(), IntArrayRef({4, 3}));
  EXPECT_FALSE(lin->bias.defined());

  nn::Embedding e(nn::EmbeddingOptions(10, 3).padding_idx(-1));
  EXPECT_EQ(*e->padding_idx, 9);
  EXPECT_EQ(e->weight[9].abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(repr(*e), "Embedding(10, 3, padding_idx=9)");

  const Tensor w = arange(12, kFloat).view({4, 3});
  nn::Embedding frozen = nn::Embedding::from_pretrained(w, nn::EmbeddingFromPretrainedOptions().padding_idx(1));
  EXPECT_FALSE(frozen->weight.requires_grad());
  EXPECT_EQ(frozen->weight.data_ptr<float>(), w.data_ptr<float>());  // shared, as PyTorch
  EXPECT_TRUE(equal(frozen(tensor({2, 0}, kInt64)), tensor({{6.f, 7.f, 8.f}, {0.f, 1.f, 2.f}})));
  nn::Embedding tuned = nn::Embedding::from_pretrained(w.clone(), nn::EmbeddingFromPretrainedOptions().freeze(false));
  EXPECT_TRUE(tuned->weight.requires_grad());
  tuned(tensor({1, 1, 3}, kInt64)).sum().backward();
  EXPECT_TRUE(equal(tuned->weight.grad().sum(1), tensor({0.f, 6.f, 0.f, 3.f})));

  // max_norm renormalizes the looked-up rows in place (2-norm 5 -> 1)
  nn::Embedding mn(nn::EmbeddingOptions(2, 2).max_norm(1.0)._weight(tensor({{3.f, 4.f}, {0.3f, 0.4f}})));
  {
    NoGradGuard g;
    mn(tensor({0}, kInt64));
  }
  EXPECT_TRUE(allclose(mn->weight, tensor({{0.6f, 0.8f}, {0.3f, 0.4f}}), 1e-5, 1e-5));
  expect_error([&] { nn::Embedding(nn::EmbeddingOptions(2, 2).sparse(true)); }, {"Embedding", "sparse"});
  expect_error([&] { nn::Embedding::from_pretrained(zeros({3})); }, {"from_pretrained", "2-D"});
}

TEST_F(Single, DropoutVariants) {
  manual_seed(5);
  const Tensor x = ones({64, 32, 4, 4});
  nn::Dropout2d d2(nn::Dropout2dOptions().p(0.25));
  const Tensor y = d2(x);
  // whole channels: every (n, c) plane is all 0 or all 1/(1-p)
  const Tensor mn = y.amin({2, 3}), mx = y.amax({2, 3});
  EXPECT_TRUE(equal(mn, mx));
  const double kept = (mn > 0).to(kDouble).mean().item<double>();
  EXPECT_NEAR(kept, 0.75, 0.03);
  EXPECT_NEAR(mx.max().item<float>(), 1.0f / 0.75f, 1e-6);
  d2->eval();
  EXPECT_TRUE(equal(d2(x), x));
  EXPECT_EQ(repr(*d2), "Dropout2d(p=0.25, inplace=false)");

  nn::Dropout3d d3(0.5);
  const Tensor y3 = d3(ones({8, 3, 2, 2, 2}));
  EXPECT_TRUE(equal(y3.amin({2, 3, 4}), y3.amax({2, 3, 4})));
  EXPECT_EQ(d3(ones({3, 2, 2, 2})).sizes(), IntArrayRef({3, 2, 2, 2}));
  nn::Dropout1d d1(0.5);
  const Tensor y1 = d1(ones({16, 5}));  // unbatched (C, L)
  EXPECT_TRUE(equal(y1.amin({1}), y1.amax({1})));

  // alpha dropout keeps mean 0 and variance 1 of a standard normal input
  const Tensor z = randn({200000});
  const Tensor a = F::alpha_dropout(z, F::AlphaDropoutFuncOptions().p(0.2));
  EXPECT_NEAR(a.mean().item<float>(), 0.0f, 0.02f);
  EXPECT_NEAR(a.var().item<float>(), 1.0f, 0.03f);
  const Tensor fa = F::feature_alpha_dropout(randn({100, 40, 8}), F::FeatureAlphaDropoutFuncOptions().p(0.5));
  EXPECT_EQ(fa.sizes(), IntArrayRef({100, 40, 8}));
  EXPECT_TRUE(equal(F::alpha_dropout(z, F::AlphaDropoutFuncOptions().training(false)), z));

  nn::Dropout d(nn::DropoutOptions().p(0.3).inplace(true));
  Tensor t = ones({1000});
  const Tensor r = d(t);
  EXPECT_EQ(r.data_ptr<float>(), t.data_ptr<float>());
  EXPECT_GT((t == 0).sum().item<int64_t>(), 0);
  // in place on an intermediate result: the gradient still flows (mask / (1 - p))
  const Tensor leaf = ones({4, 6, 3}).requires_grad_();
  Tensor mid = leaf * 2;
  const Tensor dropped = F::dropout2d(mid, F::Dropout2dFuncOptions().p(0.5).inplace(true));
  dropped.sum().backward();
  const Tensor g = leaf.grad();
  EXPECT_TRUE(equal(g, (mid != 0).to(kFloat) * 4.0f));
  expect_error([&] { nn::Dropout2d(1.5); }, {"Dropout2d", "p"});
  expect_error([&] { F::dropout2d(ones({3, 3})); }, {"dropout2d"});
}

TEST_F(Single, PaddingModules) {
  const Tensor x = arange(6, kFloat).view({1, 2, 3});
  nn::ReflectionPad1d r(2);
  EXPECT_TRUE(equal(r(x)[0][0], tensor({2.f, 1.f, 0.f, 1.f, 2.f, 1.f, 0.f})));
  EXPECT_EQ(repr(*r), "ReflectionPad1d((2, 2))");
  nn::ReplicationPad1d rp(nn::ReplicationPad1dOptions({1, 2}));
  EXPECT_TRUE(equal(rp(x)[0][1], tensor({3.f, 3.f, 4.f, 5.f, 5.f, 5.f})));
  nn::ZeroPad2d z(nn::ZeroPad2dOptions({1, 0, 0, 1}));
  EXPECT_EQ(z(x).sizes(), IntArrayRef({1, 3, 4}));
  EXPECT_EQ(repr(*z), "ZeroPad2d((1, 0, 0, 1))");
  nn::ConstantPad2d c(1, 3.5);
  EXPECT_EQ(repr(*c), "ConstantPad2d(padding=(1, 1, 1, 1), value=3.5)");
  EXPECT_EQ(c(x)[0][0][0].item<float>(), 3.5f);
  EXPECT_TRUE(equal(F::pad(x, F::PadFuncOptions({1, 1}).mode(kCircular))[0][0], tensor({2.f, 0.f, 1.f, 2.f, 0.f})));
  expect_error([&] { r(arange(2, kFloat).view({1, 1, 2})); }, {"pad", "reflect"});
  expect_error([&] { r(ones({2})); }, {"ReflectionPad1d", "input"});
  expect_error([&] { F::pad(x, F::PadFuncOptions({1})); }, {"pad", "even"});
}

TEST_F(Single, ShapeAndDistanceModules) {
  nn::PixelShuffle ps(2);
  nn::PixelUnshuffle pu(2);
  const Tensor x = randn({2, 8, 3, 5});
  EXPECT_EQ(ps(x).sizes(), IntArrayRef({2, 2, 6, 10}));
  EXPECT_TRUE(equal(pu(ps(x)), x));
  EXPECT_EQ(repr(*ps), "PixelShuffle(upscale_factor=2)");
  expect_error([&] { ps(randn({2, 6, 3, 3})); }, {"pixel_shuffle", "divisible"});
  nn::Unflatten u(nn::UnflattenOptions(1, {2, -1}));
  EXPECT_EQ(u(randn({3, 8})).sizes(), IntArrayRef({3, 2, 4}));
  EXPECT_EQ(repr(*u), "Unflatten(dim=1, unflattened_size=(2, -1))");
  nn::CosineSimilarity cs(nn::CosineSimilarityOptions().dim(0));
  EXPECT_NEAR(cs(tensor({1.f, 0.f}), tensor({1.f, 1.f})).item<float>(), std::sqrt(0.5f), 1e-6);
  nn::PairwiseDistance pd(nn::PairwiseDistanceOptions().p(1).eps(0));
  EXPECT_NEAR(pd(tensor({{1.f, 2.f}}), tensor({{0.f, 0.f}}))[0].item<float>(), 3.0f, 1e-6);
  EXPECT_EQ(repr(*pd), "PairwiseDistance(p=1, eps=0, keepdim=false)");
  brisk::ExpandingArray<2> ea(3);
  EXPECT_EQ(ea[1], 3);
}

}  // namespace

namespace {

TEST_F(Single, PoolingModules) {
  nn::MaxPool3d mp(nn::MaxPool3dOptions(2).stride(1));
  EXPECT_EQ(repr(*mp), "MaxPool3d(kernel_size=2, stride=1, padding=0, dilation=1, ceil_mode=false)");
  const Tensor x = arange(27, kFloat).view({1, 1, 3, 3, 3});
  auto [v, i] = mp->forward_with_indices(x);
  EXPECT_EQ(v.sizes(), IntArrayRef({1, 1, 2, 2, 2}));
  // the max of each 2x2x2 window is its last corner
  EXPECT_TRUE(equal(i.flatten(), tensor({13, 14, 16, 17, 22, 23, 25, 26}, kInt64)));
  EXPECT_TRUE(equal(v.flatten(), i.flatten().to(kFloat)));
  nn::AvgPool3d ap(nn::AvgPool3dOptions(3).stride(2).padding(1).count_include_pad(false));
  EXPECT_EQ(repr(*ap), "AvgPool3d(kernel_size=3, stride=2, padding=1, count_include_pad=false)");
  EXPECT_NEAR(ap(x).flatten()[0].item<float>(), (0 + 1 + 3 + 4 + 9 + 10 + 12 + 13) / 8.0f, 1e-5);
  nn::AdaptiveMaxPool2d am(nn::AdaptiveMaxPool2dOptions({1, 2}));
  EXPECT_EQ(repr(*am), "AdaptiveMaxPool2d(output_size=(1, 2))");
  auto [av, ai] = am->forward_with_indices(arange(12, kFloat).view({1, 3, 4}));
  EXPECT_TRUE(equal(av.flatten(), tensor({9.f, 11.f})));
  EXPECT_TRUE(equal(ai.flatten(), tensor({9, 11}, kInt64)));
  nn::AdaptiveMaxPool1d am1(3);
  EXPECT_EQ(am1(randn({2, 4, 10})).sizes(), IntArrayRef({2, 4, 3}));
  nn::AdaptiveAvgPool1d aa1(1);
  EXPECT_TRUE(allclose(aa1(arange(4, kFloat).view({1, 1, 4})), full({1, 1, 1}, 1.5f)));
  nn::AdaptiveAvgPool3d aa3(nn::AdaptiveAvgPool3dOptions({1, 2, 3}));
  EXPECT_EQ(aa3(randn({2, 5, 4, 4})).sizes(), IntArrayRef({2, 1, 2, 3}));
  nn::AdaptiveMaxPool3d am3(2);
  EXPECT_EQ(am3(randn({1, 2, 3, 4, 5})).sizes(), IntArrayRef({1, 2, 2, 2, 2}));
  // ties: the first element of the window (row-major) takes the value, index and gradient, as PyTorch
  const Tensor z = zeros({1, 1, 2, 2, 2}).requires_grad_();
  auto [zv, zi] = F::max_pool3d_with_indices(z, nn::MaxPool3dOptions(2));
  EXPECT_EQ(zi.item<int64_t>(), 0);
  zv.sum().backward();
  EXPECT_TRUE(equal(z.grad().flatten(), tensor({1.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f})));
  // NaN propagates (and its index is reported)
  const Tensor withnan = tensor({1.f, NAN, 3.f, 2.f}).view({1, 1, 4});
  auto [nv, ni] = F::adaptive_max_pool1d_with_indices(withnan, 1);
  EXPECT_TRUE(std::isnan(nv.item<float>()));
  EXPECT_EQ(ni.item<int64_t>(), 1);
  expect_error([&] { mp(randn({2, 3})); }, {"max_pool3d", "input"});
  expect_error([&] { F::max_pool3d(randn({1, 1, 4, 4, 4}), nn::MaxPool3dOptions(2).padding(2)); },
               {"max_pool3d", "padding"});
  expect_error([&] { nn::AdaptiveMaxPool2d(-1); }, {"AdaptiveMaxPool2d", "output_size"});
  // gradients of the gathered windows against finite differences
  manual_seed(7);
  const Tensor xd = randn({1, 2, 4, 5, 3}, kDouble).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck(
      [](const TensorList& t) { return F::avg_pool3d(t[0], nn::AvgPool3dOptions(2).stride(1).padding(1).ceil_mode(true)); },
      {xd}));
  EXPECT_TRUE(autograd::gradcheck(
      [](const TensorList& t) { return F::adaptive_max_pool3d(t[0], nn::AdaptiveMaxPool3dOptions({3, 2, 2})); }, {xd}));
}

}  // namespace

namespace {

TEST_F(Single, EmbeddingBagModule) {
  const Tensor w = arange(12, kFloat).view({4, 3});
  nn::EmbeddingBag sum = nn::EmbeddingBag::from_pretrained(w, nn::EmbeddingBagFromPretrainedOptions().mode(nn::kSum));
  EXPECT_FALSE(sum->weight.requires_grad());
  const Tensor y = sum(tensor({0, 1, 3}, kInt64), tensor({0, 2}, kInt64));
  EXPECT_TRUE(equal(y, tensor({{3.f, 5.f, 7.f}, {9.f, 10.f, 11.f}})));
  EXPECT_EQ(repr(*sum), "EmbeddingBag(4, 3, mode='sum')");
  nn::EmbeddingBag mx(nn::EmbeddingBagOptions(4, 3).mode(nn::kMax)._weight(w.clone()));
  EXPECT_TRUE(equal(mx(tensor({{0, 2}, {1, 1}}, kInt64)), tensor({{6.f, 7.f, 8.f}, {3.f, 4.f, 5.f}})));
  mx(tensor({{0, 2}}, kInt64)).sum().backward();
  EXPECT_TRUE(equal(mx->weight.grad().sum(1), tensor({0.f, 0.f, 3.f, 0.f})));  // to the maximum only
  nn::EmbeddingBag mean(5, 2);
  EXPECT_EQ(mean->options.mode(), nn::EmbeddingBagMode(nn::kMean));
  EXPECT_EQ(mean(tensor({1, 2, 3}, kInt64), tensor({0, 3, 3}, kInt64)).sizes(), IntArrayRef({3, 2}));
  expect_error([&] { mean(tensor({1, 2}, kInt64)); }, {"embedding_bag", "offsets"});
  expect_error([&] { mean(tensor({1, 2}, kInt64), tensor({0}, kInt64), ones({2})); },
               {"embedding_bag", "per_sample_weights", "sum"});
  expect_error([&] { mean(tensor({1, 7}, kInt64), tensor({0}, kInt64)); }, {"embedding_bag", "out of range"});
  expect_error([&] { mean(tensor({1, 2}, kInt64), tensor({1}, kInt64)); }, {"embedding_bag", "start at 0"});
}

}  // namespace

namespace {

TEST_F(Single, FoldLPPoolMaxUnpoolModules) {
  nn::Unfold unfold(nn::UnfoldOptions(2).stride(2));
  nn::Fold fold(nn::FoldOptions({4, 6}, 2).stride(2));
  const Tensor x = randn({2, 3, 4, 6});
  const Tensor cols = unfold(x);
  EXPECT_EQ(cols.sizes(), IntArrayRef({2, 12, 6}));
  EXPECT_TRUE(equal(fold(cols), x));  // non-overlapping blocks: fold inverts unfold
  EXPECT_EQ(repr(*unfold), "Unfold(kernel_size=2, dilation=1, padding=0, stride=2)");
  expect_error([&] { fold(randn({2, 12, 5})); }, {"fold", "blocks"});
  nn::LPPool2d lp(2, 2);
  EXPECT_NEAR(lp(full({1, 1, 2, 2}, 3.0f)).item<float>(), 6.0f, 1e-5);  // sqrt(4 * 9)
  EXPECT_EQ(repr(*lp), "LPPool2d(norm_type=2, kernel_size=2, stride=2, ceil_mode=false)");
  nn::MaxPool2d mp(2);
  nn::MaxUnpool2d up(2);
  const Tensor img = arange(16, kFloat).view({1, 1, 4, 4});
  auto [v, i] = mp->forward_with_indices(img);
  const Tensor u = up(v, i);
  EXPECT_EQ(u.sum().item<float>(), 5.f + 7.f + 13.f + 15.f);
  EXPECT_EQ(u[0][0][3][3].item<float>(), 15.f);
  expect_error([&] { up(v, i + 100); }, {"max_unpool2d", "out of range"});
}

}  // namespace

TEST_F(Single, NormalizeIsPyTorchs) {
  // torch 2.15: F.normalize(x, **kw) and x.grad after backward(g), g = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
  // (float32; the second row is shorter than eps = 1e-12, so it is divided by eps and its norm
  // gets no gradient through the clamp)
  const Tensor g = arange(1, 10, 1, kFloat).view({3, 3});
  struct Case {
    F::NormalizeFuncOptions o;
    std::vector<double> y, dx;
  };
  const std::vector<Case> cases = {
      {F::NormalizeFuncOptions(),
       {0.6000000238418579, 0.800000011920929, 0.0, 0.10000000149011612, 0.0, -0.20000000298023224,
        -0.3333333432674408, 0.6666666865348816, -0.6666666865348816},
       {-0.06399999558925629, 0.04800000786781311, 0.6000000238418579, 3999999983616.0, 4999999913984.0,
        6000000106496.0, 1.9999998807907104, 3.3333334922790527, 2.3333332538604736}},
      {F::NormalizeFuncOptions().p(1).dim(0),
       {0.75, 0.6666666865348816, 0.0, 2.499999956129175e-14, 0.0, -9.9999998245167e-14, -0.25, 0.3333333432674408,
        -1.0},
       {0.5, -0.3333333432674408, 1.5, 1.25, 0.8333333134651184, -1.5, 1.5, 0.6666666865348816, 0.0}},
      {F::NormalizeFuncOptions().p(3).dim(1).eps(0.5),
       {0.666971743106842, 0.8892956972122192, 0.0, 1.99999996490334e-13, 0.0, -3.99999992980668e-13,
        -0.38891109824180603, 0.7778221964836121, -0.7778221964836121},
       {-0.019544944167137146, 0.014658749103546143, 0.666971743106842, 8.0, 10.0, 12.0, 2.516483783721924,
        3.9348652362823486, 2.676623582839966}},
      {F::NormalizeFuncOptions().p(std::numeric_limits<double>::infinity()),
       {0.75, 1.0, 0.0, 0.10000000149011612, 0.0, -0.20000000298023224, -0.5, 1.0, -1.0},
       {0.25, -0.1875, 0.75, 3999999983616.0, 4999999913984.0, 6000000106496.0, 3.5, 5.125, 3.375}}};
  for (const Case& c : cases) {
    Tensor x = tensor<float>({3, 4, 0, 1e-13f, 0, -2e-13f, -1, 2, -2}).view({3, 3}).requires_grad_();
    Tensor y = F::normalize(x, c.o);
    EXPECT_TRUE(equal_values(y, c.y)) << "p=" << c.o.p() << " dim=" << c.o.dim();
    y.backward(g);
    // (the gradient sums the quotient's three terms per row: brisk's float32 sum order is not
    // torch's sequential one, an ulp apart in one element)
    EXPECT_TRUE(close(x.grad(), tensor(c.dx, kDouble).view({3, 3}).to(kFloat), 2.5e-7, 0))
        << "p=" << c.o.p() << " dim=" << c.o.dim();
  }
  // bfloat16: each step in the dtype; a zero row is 0 / 1e-12 (bfloat16 holds eps)
  Tensor xb = tensor<float>({3, 4, 0, 0, 0.1f, 0.2f}).view({3, 2}).to(kBFloat16).requires_grad_();
  Tensor yb = F::normalize(xb);
  EXPECT_EQ(yb.dtype(), kBFloat16);
  EXPECT_TRUE(equal_values(yb, {0.6015625, 0.80078125, 0.0, 0.0, 0.447265625, 0.89453125}));
  yb.backward(ones({3, 2}, kBFloat16));
  EXPECT_TRUE(equal_values(xb.grad(), {0.03125, -0.025390625, 996432412672.0, 996432412672.0, 1.78125, -0.90625}));
  // a 0-dim input normalizes over dim 0 (|x| / |x|); dims out of range and integers raise
  EXPECT_TRUE(equal_values(F::normalize(tensor(3.0), F::NormalizeFuncOptions().dim(0)), {1.0}));
  expect_error([] { F::normalize(ones({2})); }, {"[normalize]", "out of range"});
  expect_error([] { F::normalize(ones({2, 2}, kInt64)); }, {"[normalize]", "floating-point", "int64"});
}

TEST_F(Single, OneHotIsPyTorchs) {
  // torch 2.15: F.one_hot
  Tensor a = F::one_hot(tensor<int64_t>({0, 2, 1}));
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(a.sizes(), IntArrayRef({3, 3}));
  EXPECT_TRUE(equal_values(a, {1, 0, 0, 0, 0, 1, 0, 1, 0}));
  EXPECT_TRUE(equal_values(F::one_hot(tensor<int64_t>({0, 2, 1}), 5),
                           {1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}));
  Tensor b = F::one_hot(tensor<int64_t>({0, 1, 3, 2}).view({2, 2}));
  EXPECT_EQ(b.sizes(), IntArrayRef({2, 2, 4}));
  EXPECT_TRUE(equal_values(b, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0}));
  Tensor s = F::one_hot(scalar_tensor(2, kInt64), 4);  // a 0-dim index: one vector
  EXPECT_EQ(s.sizes(), IntArrayRef({4}));
  EXPECT_TRUE(equal_values(s, {0, 0, 1, 0}));
  Tensor e = F::one_hot(empty({0}, kInt64), 3);
  EXPECT_EQ(e.sizes(), IntArrayRef({0, 3}));
  expect_error([] { F::one_hot(tensor<int64_t>({0, 2, 1}), 2); }, {"[one_hot]", "smaller than num_classes"});
  expect_error([] { F::one_hot(tensor<int64_t>({0, 2, 1}), -2); }, {"[one_hot]", "smaller than num_classes"});
  expect_error([] { F::one_hot(tensor<int64_t>({0, -1, 1})); }, {"[one_hot]", "non-negative"});
  expect_error([] { F::one_hot(tensor<int64_t>({0, 1}).to(kInt32)); }, {"[one_hot]", "int64", "int32"});
  expect_error([] { F::one_hot(empty({0}, kInt64)); }, {"[one_hot]", "empty"});
  expect_error([] { F::one_hot(empty({0, 2}, kInt64), 0); }, {"[one_hot]", "empty"});
}
