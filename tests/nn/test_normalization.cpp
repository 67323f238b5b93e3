// batch_norm / group_norm and BatchNorm1d/2d/3d / GroupNorm: values against
// naive loops, running statistics over several steps against hand-computed
// values, train/eval behaviour, state_dict keys, both memory layouts,
// gradcheck in float64 (first and second order) and error messages.
#include <brisk/nn.h>

#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;

namespace {

std::vector<double> values(const Tensor& x) { return x.to(kDouble).contiguous().to_vector<double>(); }

/// Per-channel statistics of x (N, C, *) in float64 loops: mean and biased
/// variance (two passes).
struct Stats {
  std::vector<double> mean, var;
  int64_t count;
};
Stats channel_stats(const Tensor& x) {
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  const std::vector<double> v = values(x);
  Stats s{std::vector<double>(C, 0.0), std::vector<double>(C, 0.0), N * S};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < S; ++i) s.mean[c] += v[(n * C + c) * S + i];
  for (double& m : s.mean) m /= double(N * S);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < S; ++i) {
        const double d = v[(n * C + c) * S + i] - s.mean[c];
        s.var[c] += d * d;
      }
  for (double& q : s.var) q /= double(N * S);
  return s;
}

/// (x - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c], NCHW order.
std::vector<double> ref_normalize(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& var,
                                  const std::vector<double>& w, const std::vector<double>& b, double eps) {
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  const std::vector<double> v = values(x);
  std::vector<double> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t k = (n * C + c) * S + i;
        out[k] = (v[k] - mean[c]) / std::sqrt(var[c] + eps) * w[c] + b[c];
      }
  return out;
}

/// group_norm in float64 loops: each (n, group) over its channels and positions.
std::vector<double> ref_group_norm(const Tensor& x, int64_t G, const std::vector<double>& w,
                                   const std::vector<double>& b, double eps) {
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C), D = C / G;
  const std::vector<double> v = values(x);
  std::vector<double> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const int64_t base = (n * C + g * D) * S, cnt = D * S;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < cnt; ++i) mean += v[base + i];
      mean /= double(cnt);
      for (int64_t i = 0; i < cnt; ++i) var += (v[base + i] - mean) * (v[base + i] - mean);
      var /= double(cnt);
      for (int64_t i = 0; i < cnt; ++i) {
        const int64_t c = g * D + i / S;
        out[base + i] = (v[base + i] - mean) / std::sqrt(var + eps) * w[c] + b[c];
      }
    }
  return out;
}

::testing::AssertionResult near(const Tensor& got, const std::vector<double>& want, double tol) {
  const std::vector<double> g = values(got);
  if (g.size() != want.size()) return ::testing::AssertionFailure() << "size " << g.size() << " vs " << want.size();
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - want[i]) <= tol * (1 + std::abs(want[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", expected " << want[i];
  return ::testing::AssertionSuccess();
}

bool is_cl(const Tensor& t) { return t.is_contiguous(kChannelsLast) && !t.is_contiguous(); }

}  // namespace

// ---- batch_norm (functional) --------------------------------------------------------------

TEST(BatchNorm, TrainingNormalizesWithBatchStatisticsInEveryLayout) {
  manual_seed(1);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{6, 5}, {4, 3, 7}, {3, 4, 5, 6}, {2, 3, 2, 3, 4}}) {
    const Tensor x = randn(shape, kDouble) * 3 + 1;
    const int64_t C = shape[1];
    const Tensor w = randn({C}, kDouble), b = randn({C}, kDouble);
    const Stats s = channel_stats(x);
    const std::vector<double> want = ref_normalize(x, s.mean, s.var, values(w), values(b), 1e-5);
    Tensor rm = zeros({C}, kDouble), rv = ones({C}, kDouble);
    EXPECT_TRUE(near(F::batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5), want, 1e-12));
    EXPECT_TRUE(near(F::batch_norm(x, {}, {}, w, b, true), want, 1e-12));  // no running stats
    if (shape.size() == 4) {
      const Tensor y = F::batch_norm(x.contiguous(kChannelsLast), rm, rv, w, b, true);
      EXPECT_TRUE(is_cl(y));
      EXPECT_TRUE(near(y, want, 1e-12));
      // neither contiguous nor channels_last: computed on a contiguous copy
      const Tensor t = x.transpose(2, 3).contiguous().transpose(2, 3);
      EXPECT_TRUE(near(F::batch_norm(t, rm, rv, w, b, true), want, 1e-12));
    }
  }
}

// Several steps of training: running_mean and running_var follow
// (1 - m) * running + m * stat, the variance with the unbiased estimate,
// computed here by hand from the batches.
TEST(BatchNorm, RunningStatisticsOverSeveralSteps) {
  manual_seed(2);
  const int64_t C = 3;
  Tensor rm = zeros({C}), rv = ones({C});
  std::vector<double> em(C, 0.0), ev(C, 1.0);
  for (int step = 0; step < 4; ++step) {
    const Tensor x = randn({5, C, 4}) * (step + 1) + step;
    F::batch_norm(x, rm, rv, {}, {}, true, 0.3, 1e-5);
    const Stats s = channel_stats(x);
    for (int64_t c = 0; c < C; ++c) {
      em[c] = 0.7 * em[c] + 0.3 * s.mean[c];
      ev[c] = 0.7 * ev[c] + 0.3 * s.var[c] * double(s.count) / double(s.count - 1);
    }
    EXPECT_TRUE(near(rm, em, 1e-6)) << "step " << step;
    EXPECT_TRUE(near(rv, ev, 1e-6)) << "step " << step;
  }
  // eval normalizes with the running statistics and leaves them alone
  const Tensor x = randn({4, C, 2});
  const Tensor before = rm.clone();
  const Tensor y = F::batch_norm(x, rm, rv, {}, {}, false, 0.3, 1e-5);
  EXPECT_TRUE(near(y, ref_normalize(x, em, ev, {1, 1, 1}, {0, 0, 0}, 1e-5), 1e-5));
  EXPECT_TRUE(rm.equal(before));
}

TEST(BatchNorm, Float32ChannelsLastAndLargeOffsets) {
  manual_seed(3);
  // a mean 10^4 standard deviations from zero: the shifted sums and the
  // two-pass variance keep float32 accurate
  const Tensor x = randn({8, 16, 9, 9}) * 0.01 + 100;
  const Tensor w = rand({16}) + 0.5, b = randn({16});
  const Stats s = channel_stats(x);
  const std::vector<double> want = ref_normalize(x, s.mean, s.var, values(w), values(b), 1e-5);
  Tensor rm = zeros({16}), rv = ones({16});
  EXPECT_TRUE(near(F::batch_norm(x, rm, rv, w, b, true), want, 2e-3));
  EXPECT_TRUE(near(F::batch_norm(x.contiguous(kChannelsLast), rm, rv, w, b, true), want, 2e-3));
  for (ScalarType dt : {kHalf, kBFloat16}) {
    const Tensor xr = randn({4, 6, 5, 5}).to(dt);
    const Stats sr = channel_stats(xr);
    const Tensor y = F::batch_norm(xr, {}, {}, {}, {}, true);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_TRUE(near(y, ref_normalize(xr, sr.mean, sr.var, std::vector<double>(6, 1), std::vector<double>(6, 0), 1e-5),
                     3e-2));
  }
}

// Statistics are summed in fixed chunks in a fixed order: results do not
// depend on the number of threads.
TEST(BatchNorm, SameBitsForAnyThreadCount) {
  manual_seed(4);
  const int old = get_num_threads();
  const Tensor x = randn({64, 8, 20, 20}).requires_grad_();
  const Tensor w = rand({8}).requires_grad_();
  const Tensor g = randn({64, 8, 20, 20});
  std::vector<Tensor> outs, grads;
  for (int nt : {1, 2, 3}) {
    set_num_threads(nt);
    for (bool cl : {false, true}) {
      const Tensor xi = cl ? x.detach().contiguous(kChannelsLast).requires_grad_() : x;
      const Tensor y = F::batch_norm(xi, {}, {}, w, {}, true);
      const TensorList gs = autograd::grad({y}, {xi, w}, {g});
      outs.push_back(y.contiguous());
      grads.push_back(gs[0].contiguous());
      grads.push_back(gs[1]);
    }
  }
  set_num_threads(old);
  for (size_t i = 2; i < outs.size(); ++i) EXPECT_TRUE(outs[i].equal(outs[i % 2])) << i;
  for (size_t i = 4; i < grads.size(); ++i) EXPECT_TRUE(grads[i].equal(grads[i % 4])) << i;
}

TEST(BatchNorm, GradcheckTrainEvalAffineLayouts) {
  manual_seed(5);
  for (bool training : {true, false})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 3}, {3, 2, 4}, {2, 3, 3, 2}}) {
      const int64_t C = shape[1];
      const Tensor rm = randn({C}, kDouble), rv = rand({C}, kDouble) + 0.5;
      auto fn = [&](const TensorList& in) { return F::batch_norm(in[0], rm, rv, in[1], in[2], training, 0.1, 1e-5); };
      EXPECT_TRUE(gradcheck_ok(fn, {leaf(shape), leaf({C}), leaf({C})}, /*grad_grad=*/true))
          << "training=" << training << " dims=" << shape.size();
      auto fn_plain = [&](const TensorList& in) { return F::batch_norm(in[0], rm, rv, {}, {}, training); };
      EXPECT_TRUE(gradcheck_ok(fn_plain, {leaf(shape)}, true));
      if (shape.size() == 4) {
        const Tensor xcl = leaf(shape).detach().contiguous(kChannelsLast).requires_grad_();
        EXPECT_TRUE(gradcheck_ok(fn, {xcl, leaf({C}), leaf({C})}, true));
      }
    }
}

TEST(BatchNorm, GradientsOnlyWhereNeeded) {
  const Tensor x = randn({4, 3, 5});
  const Tensor w = ones({3}).requires_grad_(), b = zeros({3}).requires_grad_();
  const Tensor y = F::batch_norm(x, {}, {}, w, b, true);
  EXPECT_EQ(y.grad_fn()->name(), "NativeBatchNormBackward0");
  (y * y).sum().backward();
  EXPECT_TRUE(w.grad().defined() && b.grad().defined());
  // with frozen weight the input gradient alone is computed
  const Tensor xg = randn({4, 3, 5}).requires_grad_();
  F::batch_norm(xg, {}, {}, ones({3}), zeros({3}), true).pow(3).sum().backward();
  EXPECT_EQ(xg.grad().sizes(), xg.sizes());
}

// Regression (difffuzz nn:F.batch_norm:grad-crash): the backward read the
// dtype of an absent weight for the bias gradient (SIGSEGV).
TEST(BatchNorm, BiasWithoutWeightHasGradients) {
  const Tensor x = tensor({1.0, 2.0, 3.0, 5.0, -1.0, 0.5}, kDouble).view({3, 2}).requires_grad_();
  const Tensor b = tensor({0.5, -0.5}, kDouble).requires_grad_();
  const Tensor g = tensor({1.0, -2.0, 0.5, 3.0, 2.0, 1.0}, kDouble).view({3, 2});
  F::batch_norm(x, {}, {}, {}, b, true).backward(g);
  // torch 2.15: F.batch_norm(x, None, None, None, b, True).backward(g)
  EXPECT_TRUE(close(x.grad(), tensor({-0.1020618813, -1.2599445275, 0.0510292183, 0.4199837151, 0.0510326629,
                                      0.8399608124}, kDouble).view({3, 2}), 1e-8, 1e-9));
  EXPECT_TRUE(close(b.grad(), tensor({3.5, 2.0}, kDouble)));
  // eval mode, and float32
  const Tensor xf = x.detach().to(kFloat).requires_grad_(), bf = b.detach().to(kFloat).requires_grad_();
  F::batch_norm(xf, tensor<double>({0.25, -1.0}, kFloat), tensor<double>({4.0, 0.25}, kFloat), {}, bf, false, 0.1, 0.0).backward(g.to(kFloat));
  EXPECT_TRUE(close(xf.grad(), tensor<double>({0.5, -4.0, 0.25, 6.0, 1.0, 2.0}).view({3, 2})));
  EXPECT_TRUE(close(bf.grad(), tensor<double>({3.5, 2.0})));
}

// Regression (difffuzz nn:F.batch_norm:grad-nan): in eval mode dx = dy * w *
// rstd does not read x, so a NaN or inf in x leaves dx finite (the kernel
// computed dy * A + (x - mean) * 0).
TEST(BatchNorm, EvalGradientIgnoresNonFiniteInput) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  for (ScalarType dt : {kDouble, kFloat, kBFloat16}) {
    const Tensor x = tensor({1.0, nan, inf, 5.0, -1.0, 0.5}, kDouble).view({3, 2}).to(dt).requires_grad_();
    const Tensor w = tensor({2.0, 3.0}, kDouble).to(dt).requires_grad_();
    const Tensor b = tensor({0.5, -0.5}, kDouble).to(dt).requires_grad_();
    const Tensor rm = tensor({0.25, -1.0}, kDouble).to(dt), rv = tensor({4.0, 0.25}, kDouble).to(dt);
    const Tensor g = tensor({1.0, -2.0, 0.5, 3.0, 2.0, 1.0}, kDouble).view({3, 2}).to(dt);
    F::batch_norm(x, rm, rv, w, b, false, 0.1, 0.0).backward(g);
    // torch 2.15: x.grad [[1, -12], [0.5, 18], [2, 6]], w.grad [inf, nan], b.grad [3.5, 2]
    EXPECT_TRUE(close(x.grad(), tensor({1.0, -12.0, 0.5, 18.0, 2.0, 6.0}, kDouble).view({3, 2}), 0, 0)) << dt;
    EXPECT_TRUE(close(w.grad(), tensor({inf, nan}, kDouble), 0, 0)) << dt;
    EXPECT_TRUE(close(b.grad(), tensor({3.5, 2.0}, kDouble), 0, 0)) << dt;
  }
}

// Regression (difffuzz nn:F.batch_norm:final-nan): the shifted sums started
// from a channel's first value; an infinite first value made the mean NaN
// (inf - inf) where PyTorch's is inf.
TEST(BatchNorm, InfiniteFirstValueGivesInfiniteMean) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = tensor({inf, 1.0, 3e38, 2.0, 1.0, 4.0, 2.0, -1.0}, kDouble).view({4, 2});
  const Tensor rm = tensor({0.5, 1.0}, kDouble), rv = tensor({1.0, 2.0}, kDouble);
  const Tensor y = F::batch_norm(x, rm, rv, {}, {}, true, 0.5);
  // torch 2.15: rm [inf, 1.25], rv [nan, 3.1666666667], y[:, 0] nan, y[:, 1] [-0.27734967, 0.27734967, 1.38674836, -1.38674836]
  EXPECT_TRUE(close(rm, tensor({inf, 1.25}, kDouble), 0, 0));
  EXPECT_TRUE(close(rv, tensor({std::nan(""), 3.1666666667}, kDouble), 1e-9));
  EXPECT_TRUE(close(y.select(1, 1), tensor({-0.2773496714, 0.2773496714, 1.3867483571, -1.3867483571}, kDouble), 1e-8));
  EXPECT_TRUE(y.select(1, 0).isnan().all().item<bool>());
  const Tensor xf = tensor<double>({-inf, 1.0, 3.0, 2.0, 1.0, 4.0, 2.0, -1.0}, kFloat).view({4, 2});
  const Tensor rmf = tensor<double>({0.5, 1.0}, kFloat), rvf = tensor<double>({1.0, 2.0}, kFloat);
  F::batch_norm(xf, rmf, rvf, {}, {}, true, 0.5);
  EXPECT_TRUE(close(rmf, tensor<double>({-inf, 1.25}), 0, 0));
}

// A torch bug (1.13 and 2.15, tools/fuzz TORCH_BUGS): its eval-mode CPU
// backward reads a non-contiguous running_mean, running_var or weight as if
// contiguous (difffuzz nn:F.batch_norm:grad-value; with a strided
// running_mean torch's weight gradient changes from run to run, 1e34 or
// -0.0488 where -1.1597 is right). The gradient does not depend on the
// layout: torch's own values for contiguous statistics, x.grad [[1, 6], [1, 6]]
// and weight.grad [1.5, 4].
TEST(BatchNorm, EvalGradientWithStridedStatistics) {
  const Tensor rm_c = tensor({0.5, -0.5}, kDouble);
  const Tensor rm_s = tensor({0.5, 0.0, -0.5, 0.0}, kDouble).slice(0, 0, 4, 2);
  const Tensor rv_c = tensor({4.0, 0.25}, kDouble);
  const Tensor rv_s = tensor({4.0, 0.0, 0.25, 0.0}, kDouble).slice(0, 0, 4, 2);
  const Tensor w_s = tensor({2.0, 0.0, 3.0, 0.0}, kDouble).slice(0, 0, 4, 2);
  ASSERT_FALSE(rv_s.is_contiguous());
  ASSERT_FALSE(rm_s.is_contiguous());
  for (const auto& [rm, rv, strided_w] : {std::tuple{rm_c, rv_s, true}, std::tuple{rm_s, rv_c, false}}) {
    const Tensor x = tensor({1.0, 2.0, 3.0, -1.0}, kDouble).view({2, 2}).requires_grad_();
    const Tensor w = (strided_w ? w_s : tensor({2.0, 3.0}, kDouble)).detach().requires_grad_();
    F::batch_norm(x, rm, rv, w, {}, false, 0.1, 0.0).sum().backward();
    EXPECT_TRUE(close(x.grad(), tensor({1.0, 6.0, 1.0, 6.0}, kDouble).view({2, 2}), 0, 0));
    EXPECT_TRUE(close(w.grad(), tensor({1.5, 4.0}, kDouble), 0, 0));
  }
}

// A torch bug (1.13 and 2.15, tools/fuzz TORCH_BUGS; difffuzz
// nn:F.batch_norm:grad-value:half): the backward of a channels_last input
// whose size-1 dims carry other strides, (1, 2, 1, 3) with strides
// (1, 1, 2, 2), differs from the same values in any other layout. brisk's
// does not depend on the layout (torch's contiguous value:
// [-0.134, -0.3205, 0.4545, -1.9821, ...]).
TEST(BatchNorm, GradientDoesNotDependOnSizeOneStrides) {
  const Tensor v = tensor({-3.5, 0.25, -0.85546875, -1.8125, -0.25, -2.0}, kDouble).view({1, 2, 1, 3});
  const Tensor g = (arange(6, kDouble) % 5.0 - 2.0).view({1, 2, 1, 3});
  auto grad = [&](const Tensor& x0) {
    const Tensor x = x0.detach().requires_grad_();
    F::batch_norm(x, {}, {}, tensor({0.875, -1.09375}, kDouble), {}, true).backward(g);
    return x.grad();
  };
  const Tensor odd = v.permute({3, 2, 1, 0}).contiguous().permute({3, 2, 1, 0});
  ASSERT_EQ(odd.strides(), IntArrayRef({1, 1, 2, 2}));
  const Tensor want = grad(v);
  EXPECT_TRUE(close(want.reshape({-1}).narrow(0, 0, 4), tensor({-0.134, -0.3205, 0.4545, -1.9821}, kDouble), 0, 1e-4));
  EXPECT_TRUE(close(grad(odd), want, 1e-12, 1e-12));
  EXPECT_TRUE(close(grad(v.contiguous(kChannelsLast)), want, 1e-12, 1e-12));
}

// ---- BatchNorm modules ---------------------------------------------------------------------------

TEST(BatchNormModule, StateDictTrainEvalAndMomentumNone) {
  manual_seed(6);
  nn::BatchNorm2d bn(4);
  EXPECT_EQ(bn->state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(bn->num_batches_tracked.dim(), 0);
  EXPECT_EQ(bn->parameters().size(), 2u);
  EXPECT_EQ(nn::to_string(bn), "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)  # 8 parameters");

  // cumulative moving average: after k steps the running mean is the mean of the k batch means
  nn::BatchNorm2d cma(nn::BatchNormOptions(4).momentum(std::nullopt));
  std::vector<double> sum_means(4, 0.0);
  for (int step = 1; step <= 3; ++step) {
    const Tensor x = randn({3, 4, 2, 2}) + step;
    cma->forward(x);
    const Stats s = channel_stats(x);
    for (int c = 0; c < 4; ++c) sum_means[c] += s.mean[c];
    EXPECT_EQ(cma->num_batches_tracked.item<int64_t>(), step);
  }
  for (double& m : sum_means) m /= 3;
  EXPECT_TRUE(near(cma->running_mean, sum_means, 1e-5));
  EXPECT_EQ(nn::to_string(cma), "BatchNorm2d(4, eps=1e-05, momentum=None, affine=true, track_running_stats=true)  # 8 parameters");

  // train uses batch statistics, eval the running ones (and counts nothing)
  const Tensor x = randn({3, 4, 2, 2}) * 2 + 1;
  bn->train();
  const Tensor yt = bn->forward(x);
  const Stats s = channel_stats(x);
  EXPECT_TRUE(near(yt, ref_normalize(x, s.mean, s.var, std::vector<double>(4, 1), std::vector<double>(4, 0), 1e-5), 1e-5));
  bn->eval();
  const Tensor ye = bn->forward(x);
  EXPECT_TRUE(near(ye, ref_normalize(x, values(bn->running_mean), values(bn->running_var), std::vector<double>(4, 1),
                                     std::vector<double>(4, 0), 1e-5),
                   1e-5));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_FALSE(ye.equal(yt));
}

TEST(BatchNormModule, NoRunningStatsUsesBatchStatisticsInEval) {
  manual_seed(7);
  nn::BatchNorm1d bn(nn::BatchNormOptions(3).track_running_stats(false).affine(false));
  EXPECT_TRUE(bn->state_dict().empty());
  EXPECT_FALSE(bn->running_mean.defined());
  bn->eval();
  const Tensor x = randn({6, 3});
  const Stats s = channel_stats(x);
  EXPECT_TRUE(near(bn->forward(x), ref_normalize(x, s.mean, s.var, {1, 1, 1}, {0, 0, 0}, 1e-5), 1e-5));
  EXPECT_EQ(nn::to_string(bn), "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=false, track_running_stats=false)");
}

TEST(BatchNormModule, Inputs1d2d3dAndGradients) {
  manual_seed(8);
  nn::BatchNorm1d b1(5);
  EXPECT_EQ(b1->forward(randn({4, 5})).sizes(), IntArrayRef({4, 5}));
  EXPECT_EQ(b1->forward(randn({4, 5, 7})).sizes(), IntArrayRef({4, 5, 7}));
  nn::BatchNorm3d b3(2);
  EXPECT_EQ(b3->forward(randn({2, 2, 3, 3, 3})).sizes(), IntArrayRef({2, 2, 3, 3, 3}));
  nn::BatchNorm2d b2(nn::BatchNormOptions(3).eps(1e-3).momentum(0.5));
  const Tensor x = randn({4, 3, 5, 5}).contiguous(kChannelsLast);
  const Tensor y = b2->forward(x);
  EXPECT_TRUE(is_cl(y));
  (y * randn({4, 3, 5, 5})).sum().backward();
  EXPECT_TRUE(b2->weight.grad().defined() && b2->bias.grad().defined());
  // to(kDouble) converts parameters and running stats, not the batch count
  b2->to(kDouble);
  EXPECT_EQ(b2->running_mean.dtype(), kDouble);
  EXPECT_EQ(b2->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(b2->forward(randn({2, 3, 4, 4}, kDouble)).dtype(), kDouble);
  // load_state_dict round trip
  nn::BatchNorm2d other(3);
  other->to(kDouble);
  other->load_state_dict(b2->state_dict());
  EXPECT_TRUE(other->running_var.equal(b2->running_var));
  EXPECT_EQ(other->num_batches_tracked.item<int64_t>(), 2);
}

// ---- group_norm -------------------------------------------------------------------------------------

TEST(GroupNorm, AgainstNaiveLoopInEveryLayout) {
  manual_seed(9);
  for (auto [shape, G] : {std::pair{std::vector<int64_t>{3, 6, 5, 4}, int64_t(3)}, {{2, 8, 7}, 2}, {{4, 6}, 6},
                          {{2, 4, 3, 3}, 1}, {{2, 4, 3, 3}, 4}}) {
    const int64_t C = shape[1];
    const Tensor x = randn(shape, kDouble) * 2 + 3;
    const Tensor w = randn({C}, kDouble), b = randn({C}, kDouble);
    const std::vector<double> want = ref_group_norm(x, G, values(w), values(b), 1e-5);
    EXPECT_TRUE(near(F::group_norm(x, G, w, b), want, 1e-12));
    EXPECT_TRUE(near(F::group_norm(x.to(kFloat), G, w.to(kFloat), b.to(kFloat)), want, 1e-5));
    if (shape.size() == 4) {
      const Tensor y = F::group_norm(x.contiguous(kChannelsLast), G, w, b);
      EXPECT_TRUE(is_cl(y));
      EXPECT_TRUE(near(y, want, 1e-12));
    }
  }
  // without affine
  const Tensor x = randn({2, 4, 3});
  EXPECT_TRUE(near(F::group_norm(x, 2), ref_group_norm(x, 2, {1, 1, 1, 1}, {0, 0, 0, 0}, 1e-5), 1e-5));
}

TEST(GroupNorm, GradcheckAndModule) {
  manual_seed(10);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 4, 3, 2}, {3, 6, 2}}) {
    const int64_t C = shape[1];
    auto fn = [](const TensorList& in) { return F::group_norm(in[0], 2, in[1], in[2], 1e-5); };
    EXPECT_TRUE(gradcheck_ok(fn, {leaf(shape), leaf({C}), leaf({C})}, true));
    if (shape.size() == 4) {
      const Tensor xcl = leaf(shape).detach().contiguous(kChannelsLast).requires_grad_();
      EXPECT_TRUE(gradcheck_ok(fn, {xcl, leaf({C}), leaf({C})}, true));
    }
    EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return F::group_norm(in[0], 1); }, {leaf(shape)}, true));
  }
  nn::GroupNorm gn(2, 6);
  EXPECT_EQ(nn::to_string(gn), "GroupNorm(2, 6, eps=1e-05, affine=true)  # 12 parameters");
  EXPECT_EQ(gn->state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  const Tensor x = randn({3, 6, 4, 4});
  const Tensor y = gn->forward(x);
  EXPECT_EQ(y.grad_fn()->name(), "NativeGroupNormBackward0");
  EXPECT_TRUE(near(y, ref_group_norm(x, 2, std::vector<double>(6, 1), std::vector<double>(6, 0), 1e-5), 1e-5));
  y.sum().backward();
  EXPECT_TRUE(gn->weight.grad().defined());
}

// Regression (difffuzz nn:F.group_norm:missing-error): PyTorch's F.group_norm
// refuses statistics of one value (the input seen as (N * C / G, G, *) has
// one value per channel), no channels and empty spatial dims; an empty batch
// is fine.
TEST(GroupNorm, RefusesWhatPyTorchRefuses) {
  expect_error([] { F::group_norm(randn({1, 3}), 3); },
               {"[group_norm]", "Expected more than 1 value per channel when training, got input size [1, 3]"});
  expect_error([] { F::group_norm(randn({1, 4, 1}), 4); }, {"[group_norm]", "input size [1, 4, 1]"});
  expect_error([] { F::group_norm(randn({1, 3}), 2); }, {"[group_norm]", "input size [1, 2]"});
  expect_error([] { F::group_norm(randn({2, 0, 3}), 1); }, {"[group_norm]", "number of channels to be greater than 0"});
  expect_error([] { F::group_norm(randn({1, 4, 2, 0}), 2); }, {"[group_norm]", "Expected HxW to be greater than 0, got 0"});
  expect_error([] { F::group_norm(randn({2, 4, 0}), 2); }, {"[group_norm]", "HxW"});
  EXPECT_EQ(F::group_norm(randn({0, 4, 2}), 2).sizes(), IntArrayRef({0, 4, 2}));
  EXPECT_EQ(F::group_norm(randn({2, 4, 1}), 4).sizes(), IntArrayRef({2, 4, 1}));  // two values per group's channel set
}

// Regression (difffuzz nn:F.group_norm:nan): a group whose sum of squares
// overflows float gave rstd = 0 and an output of exactly the bias. Such float
// sums are now summed again in double (norm_channels.cpp), so the group gets
// its float64 value; PyTorch (1.13 and 2.15) gives NaN for that group (its
// E[x^2] overflows: a torch bug, tools/fuzz TORCH_BUGS). torch's float64:
// [-2.9773503646, -2.9773503646, 1.0520508004, -1.2573502763, 0.6526491623,
//  0.6526685533, 2.8920507740, 0.5826314817]
TEST(GroupNorm, OverflowingFloatVarianceIsSummedInDouble) {
  const Tensor x = tensor({-0.49f, -0.28f, 1e30f, 1.01f, 0.73f, 1.28f, 65504.0f, 0.23f}).view({1, 4, 2});
  const Tensor b = tensor({-2.4f, -0.68f, 1.23f, 1.16f});
  const Tensor y = F::group_norm(x, 2, {}, b);
  EXPECT_TRUE(close(y.reshape({-1}).to(kDouble),
                    tensor({-2.9773503646, -2.9773503646, 1.0520508004, -1.2573502763, 0.6526491623, 0.6526685533,
                            2.8920507740, 0.5826314817},
                           kDouble),
                    1e-6, 1e-6));
}

// A torch bug (tools/fuzz TORCH_BUGS; difffuzz nn:F.group_norm:nan): torch's
// float statistics take E[x^2], which overflows for a group of equal values
// of 3e38 and gives NaN; the group has variance 0 and normalizes to 0
// (torch's float64 result: [[0, 0], [0.99997695, -0.99997695]]).
TEST(GroupNorm, HugeEqualValuesNormalizeToZero) {
  const Tensor x = tensor({3e38, 3e38, -0.06842740625143051, -1.0}, kDouble).view({2, 2});
  const Tensor y = F::group_norm(x.to(kFloat), 1);
  EXPECT_TRUE(close(y, tensor({0.0, 0.0, 0.9999769547, -0.9999769547}, kDouble).view({2, 2}), 1e-6, 1e-6));
}

// Regression (difffuzz nn:F.group_norm:grad2-value/grad2-nan): the
// create_graph backward of 16-bit inputs ran in 16 bits, and for a group of
// small variance its second derivatives were rounding noise (here -0.0078
// where float64 gives 3.0e-4; torch's float16 gives 9.8e-3). It runs in
// float32 now, as the kernels' sums do.
TEST(GroupNorm, HalfSecondDerivativeRunsInFloat) {
  const Tensor x64 = tensor({-2.619140625, -0.0, -0.95068359375, -1.2314453125, 2.02734375, 0.34814453125}, kDouble)
                         .view({1, 6, 1, 1});
  const Tensor u = tensor({1.0, -0.5, 0.25, 2.0, -1.5, 0.75}, kDouble).view({1, 6, 1, 1});
  auto second = [&](ScalarType dt, bool batch) {
    const Tensor x = x64.to(dt).requires_grad_();
    const Tensor y = batch ? F::batch_norm(x.view({3, 2}), {}, {}, {}, {}, true).view({1, 6, 1, 1}) : F::group_norm(x, 3);
    const Tensor loss = (y.to(kDouble) * (u * u)).sum();
    const TensorList g = autograd::grad({loss}, {x}, {}, std::nullopt, /*create_graph=*/true);
    return autograd::grad({(g[0].to(kDouble) * u).sum()}, {x})[0].to(kDouble);
  };
  for (bool batch : {false, true}) {
    const Tensor want = second(kDouble, batch);
    const double scale = want.abs().max().item<double>();
    EXPECT_TRUE(close(second(kHalf, batch), want, 0, 2e-3 * scale)) << (batch ? "batch_norm" : "group_norm");
  }
}

// A torch bug (tools/fuzz TORCH_BUGS; difffuzz nn:F.group_norm:value,
// nn:abs:value): a group of one element normalizes to exactly 0, so the
// output is the bias. torch's folded affine leaves rounding noise amplified by
// 1/sqrt(eps) (float32 torch 2.15: 0.5625 for 70000 and -0.27848133 for
// 1.0099 where the bias -0.27846071 is right; 1.13 likewise).
TEST(GroupNorm, GroupsOfOneElementGiveTheBias) {
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    const Tensor b = tensor({-0.27846071124076843}, kDouble).to(dt);
    const Tensor w = tensor({2.5831732749938965}, kDouble).to(dt);
    const Tensor x = tensor({70000.0, -0.852365255355835, 1.009917974472046, -0.10996001213788986}, kDouble)
                         .view({4, 1})
                         .to(dt)
                         .requires_grad_();
    const Tensor y = F::group_norm(x, 1, w, b);
    EXPECT_TRUE(close(y, b.expand({4, 1}), 0, 0)) << dt;
    y.backward(tensor({1.0, -2.0, 3.0, 0.5}, kDouble).view({4, 1}).to(dt));
    EXPECT_TRUE(close(x.grad(), zeros({4, 1}), 0, 0)) << dt;
  }
}

// A torch bug (difffuzz nn:F.batch_norm:grad2-value:half, allowlisted): its
// float16 double backward of a training-mode batch_norm with weight and bias
// is rounding noise (-0.182 and 0.335 where float64 gives -0.0414 and 0.0414).
// brisk's float16 result is near its float64 one, which is torch's float64 one:
// d/dx [[6.661e-07, -0.041430040627, -0.0011198088927], [-6.661e-07, 0.041430040627, 0.0011198088927]],
// d/dw [3.382e-07, -0.0024465067392, -0.00012577431556].
TEST(BatchNorm, HalfSecondDerivativeWithAffine) {
  auto second = [](ScalarType dt) {
    auto in = [&](std::initializer_list<double> v) { return tensor(v, kDouble).to(dt); };
    const Tensor x = in({-0.397216796875, -0.40283203125, 1.490234375, 1.55078125, -0.6455078125, 0.998046875})
                         .view({2, 3})
                         .requires_grad_();
    const Tensor w = in({-1.318359375, -1.34765625, -1.43359375}).requires_grad_();
    const Tensor b = in({0.3837890625, 0.9970703125, -1.59765625}).requires_grad_();
    const Tensor rm = in({1.76171875, 1.3974609375, 0.5078125}), rv = in({1.4091796875, 1.9658203125, 2.2109375});
    const Tensor y = F::batch_norm(x, rm, rv, w, b, true);
    const TensorList g = autograd::grad({y}, {x, w}, {in({1.0, -0.5, 0.25, 0.75, -1.0, 0.5}).view({2, 3})},
                                        std::nullopt, /*create_graph=*/true);
    const Tensor s = (g[0].to(kDouble) * tensor({0.5, -1.0, 1.0, 0.25, 0.75, -0.5}, kDouble).view({2, 3})).sum() +
                     (g[1].to(kDouble) * tensor({1.0, -0.5, 0.25}, kDouble)).sum();
    const TensorList h = autograd::grad({s}, {x, w});
    return std::pair{h[0].to(kDouble), h[1].to(kDouble)};
  };
  const auto [hx, hw] = second(kDouble);
  EXPECT_TRUE(close(hx, tensor({6.66140539440691e-07, -0.041430040627415815, -0.0011198088926554477,
                                -6.66140539440691e-07, 0.041430040627415815, 0.0011198088926553922},
                               kDouble)
                            .view({2, 3}),
                    1e-9, 1e-15));
  EXPECT_TRUE(close(hw, tensor({3.3819531770048333e-07, -0.0024465067392436084, -0.00012577431556433336}, kDouble),
                    1e-9, 1e-15));
  const auto [hx16, hw16] = second(kHalf);
  EXPECT_TRUE(close(hx16, hx, 0, 2e-3 * 0.0414));
  EXPECT_TRUE(close(hw16, hw, 0, 2e-3 * 0.0414));
}

// ---- errors -----------------------------------------------------------------------------------------

TEST(NormErrors, NameTheOpAndTheProblem) {
  const Tensor x = randn({4, 3, 5});
  expect_error([&] { F::group_norm(x, 2); }, {"[group_norm]", "channels 3", "not divisible by num_groups 2"});
  expect_error([&] { F::group_norm(x, 0); }, {"[group_norm]", "num_groups must be positive"});
  expect_error([&] { F::group_norm(randn({4}), 1); }, {"[group_norm]", "(N, C, *)"});
  expect_error([&] { F::group_norm(x, 3, ones({4})); }, {"[group_norm]", "weight of shape [3]"});
  expect_error([&] { nn::GroupNorm(4, 6); }, {"[GroupNorm]", "divisible"});
  expect_error([&] { F::batch_norm(x, {}, {}, {}, {}, false); }, {"[batch_norm]", "required in eval mode"});
  expect_error([&] { F::batch_norm(x, zeros({3}), {}, {}, {}, true); }, {"[batch_norm]", "both"});
  expect_error([&] { F::batch_norm(x, zeros({4}), ones({4})); }, {"[batch_norm]", "running_mean of shape [3]"});
  expect_error([&] { F::batch_norm(randn({1, 3}), {}, {}, {}, {}, true); }, {"[batch_norm]", "more than 1 value per channel"});
  expect_error([&] { F::batch_norm(x, zeros({3}), ones({3}), {}, {}, true, std::nullopt); },
               {"[batch_norm]", "momentum=nullopt"});
  expect_error([&] { F::batch_norm(randn({3}), {}, {}, {}, {}, true); }, {"[batch_norm]", "(N, C, *)"});
  expect_error([&] { F::batch_norm(ones({4, 3}, kInt64), {}, {}, {}, {}, true); }, {"[batch_norm]", "floating point"});
  nn::BatchNorm2d bn(3);
  expect_error([&] { bn->forward(randn({4, 3, 5})); }, {"[BatchNorm2d]", "expected 4D"});
  expect_error([&] { bn->forward(randn({4, 5, 2, 2})); }, {"[BatchNorm2d]", "3 channels"});
  nn::BatchNorm1d b1(3);
  expect_error([&] { b1->forward(randn({4, 3, 2, 2})); }, {"[BatchNorm1d]", "expected 2D"});
  expect_error([&] { nn::BatchNorm2d(0); }, {"[BatchNorm2d]", "num_features must be positive"});
}
