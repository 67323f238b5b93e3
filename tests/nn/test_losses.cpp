// nn::functional losses against naive per-element references (loops in
// double), known values, reductions, ignore_index, label smoothing, errors and
// gradcheck.
#include <brisk/nn.h>

#include <cmath>
#include <functional>
#include <limits>

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

std::vector<double> vec(const Tensor& t) { return t.to(kDouble).contiguous().to_vector<double>(); }

/// Applies a per-element reference to two same-shaped tensors (float64 result).
Tensor pointwise(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f) {
  auto x = vec(a), y = vec(b);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f(x[i], y[i]);
  return tensor(out, a.sizes());
}

/// Checks none / mean / sum of `loss` against a per-element reference.
template <class Loss, class Opt>
void check_reductions(Loss loss, const Tensor& x, const Tensor& y, const Tensor& ref) {
  EXPECT_TRUE(close(loss(x, y, Opt(nn::kNone)), ref, 1e-5, 1e-6));
  EXPECT_TRUE(close(loss(x, y, Opt(nn::kSum)), ref.sum(), 1e-5, 1e-5));
  EXPECT_TRUE(close(loss(x, y, Opt(nn::kMean)), ref.mean(), 1e-5, 1e-6));
  EXPECT_TRUE(close(loss(x, y, Opt()), ref.mean(), 1e-5, 1e-6));  // mean by default
}

/// Naive log-softmax of row n (classes along dim 1 of an (N, C) tensor).
std::vector<double> log_softmax_row(const std::vector<double>& x, int64_t n, int64_t C) {
  double m = -INFINITY;
  for (int64_t c = 0; c < C; ++c) m = std::max(m, x[n * C + c]);
  double s = 0;
  for (int64_t c = 0; c < C; ++c) s += std::exp(x[n * C + c] - m);
  std::vector<double> r(C);
  for (int64_t c = 0; c < C; ++c) r[c] = x[n * C + c] - m - std::log(s);
  return r;
}

}  // namespace

TEST(Losses, Regression) {
  manual_seed(0);
  Tensor x = randn({4, 5}) * 2, y = randn({4, 5}) * 2;
  check_reductions<decltype(&F::mse_loss), F::MSELossFuncOptions>(
      &F::mse_loss, x, y, pointwise(x, y, [](double a, double b) { return (a - b) * (a - b); }));
  check_reductions<decltype(&F::l1_loss), F::L1LossFuncOptions>(
      &F::l1_loss, x, y, pointwise(x, y, [](double a, double b) { return std::abs(a - b); }));
  check_reductions<decltype(&F::smooth_l1_loss), F::SmoothL1LossFuncOptions>(
      &F::smooth_l1_loss, x, y, pointwise(x, y, [](double a, double b) {
        const double d = std::abs(a - b);
        return d < 1.0 ? 0.5 * d * d : d - 0.5;
      }));
  check_reductions<decltype(&F::huber_loss), F::HuberLossFuncOptions>(
      &F::huber_loss, x, y, pointwise(x, y, [](double a, double b) {
        const double d = std::abs(a - b);
        return d < 1.0 ? 0.5 * d * d : d - 0.5;
      }));
  // beta and delta
  auto sl1 = [](double beta) {
    return [beta](double a, double b) {
      const double d = std::abs(a - b);
      return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
    };
  };
  EXPECT_TRUE(close(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions(nn::kNone).beta(2.5)),
                    pointwise(x, y, sl1(2.5)), 1e-5, 1e-6));
  EXPECT_TRUE(close(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(0.0)), F::l1_loss(x, y)));
  EXPECT_TRUE(close(F::huber_loss(x, y, F::HuberLossFuncOptions(nn::kNone).delta(0.5)),
                    pointwise(x, y, [](double a, double b) {
                      const double d = std::abs(a - b);
                      return d < 0.5 ? 0.5 * d * d : 0.5 * (d - 0.25);
                    }),
                    1e-5, 1e-6));
  // known values
  EXPECT_FLOAT_EQ(F::mse_loss(tensor<float>({1, 2, 3}), tensor<float>({1, 0, 0})).item<float>(), 13.f / 3.f);
  EXPECT_FLOAT_EQ(F::l1_loss(tensor<float>({1, 2, 3}), tensor<float>({1, 0, 0}), nn::kSum).item<float>(), 5.f);
}

TEST(Losses, NllLoss) {
  manual_seed(1);
  const int64_t N = 6, C = 4;
  Tensor logp = randn({N, C}).log_softmax(1);
  Tensor target = tensor<int64_t>({0, 3, 1, 3, 2, 1});
  Tensor weight = tensor<float>({0.5f, 2.f, 1.f, 3.f});
  auto lp = vec(logp);
  auto tg = target.to_vector<int64_t>();
  auto w = vec(weight);
  for (int64_t ignore : {-100, 3}) {
    for (bool weighted : {false, true}) {
      std::vector<double> per(N);
      double sum = 0, wsum = 0;
      for (int64_t n = 0; n < N; ++n) {
        const double wn = tg[n] == ignore ? 0.0 : (weighted ? w[tg[n]] : 1.0);
        per[n] = -lp[n * C + tg[n]] * wn;
        sum += per[n];
        wsum += wn;
      }
      auto opt = [&](nn::Reduction r) {
        F::NLLLossFuncOptions o(r);
        o.ignore_index(ignore);
        if (weighted) o.weight(weight);
        return o;
      };
      EXPECT_TRUE(close(F::nll_loss(logp, target, opt(nn::kNone)), tensor(per), 1e-5, 1e-6));
      EXPECT_NEAR(F::nll_loss(logp, target, opt(nn::kSum)).item<double>(), sum, 1e-5);
      EXPECT_NEAR(F::nll_loss(logp, target, opt(nn::kMean)).item<double>(), sum / wsum, 1e-5);
    }
  }
  // (N, C, d) layout equals the permuted (N*d, C) one
  Tensor lp3 = randn({2, C, 3}).log_softmax(1);
  Tensor t3 = tensor<int64_t>({{0, 1, 2}, {3, 3, 0}});
  EXPECT_TRUE(close(F::nll_loss(lp3, t3, nn::kNone).reshape({6}),
                    F::nll_loss(lp3.permute({0, 2, 1}).reshape({6, C}), t3.reshape({6}), nn::kNone)));
  // unbatched
  EXPECT_TRUE(close(F::nll_loss(logp[1], target[1]), -logp[1][3]));
  // errors name the function and the values
  expect_error([&] { F::nll_loss(logp, tensor<int64_t>({0, 4, 1, 0, 0, 0})); },
               {"nll_loss", "target 4", "out of bounds", "4 classes"});
  expect_error([&] { F::nll_loss(logp, target.to(kFloat)); }, {"nll_loss", "int64"});
  expect_error([&] { F::nll_loss(logp, tensor<int64_t>({0, 1})); }, {"nll_loss", "[6, 4]", "[2]"});
  expect_error([&] { F::nll_loss(logp, target, F::NLLLossFuncOptions().weight(ones({3}))); },
               {"nll_loss", "weight", "[4]"});
}

TEST(Losses, CrossEntropyKnownValue) {
  Tensor logits = tensor<float>({{1.f, 2.f, 3.f}});
  const double want = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;  // 0.4076059...
  EXPECT_NEAR(F::cross_entropy(logits, tensor<int64_t>({2})).item<double>(), want, 1e-6);
  // large logits stay finite (log_softmax, not log(softmax))
  Tensor big = tensor<float>({{1000.f, -1000.f}});
  EXPECT_NEAR(F::cross_entropy(big, tensor<int64_t>({1})).item<double>(), 2000.0, 1e-3);
  EXPECT_NEAR(F::cross_entropy(big, tensor<int64_t>({0})).item<double>(), 0.0, 1e-6);
  // Logits of large magnitude keep log softmax's digits (Note [Fused
  // cross_entropy]): x - lse rounded log 2 away next to a logit of 1e7 in
  // float32 (and 3e38 in float64: loss 0, p = 1 for each of two tied maxima).
  for (const auto& [m, dt] : std::vector<std::pair<double, ScalarType>>{{1e7, kFloat}, {3e38, kDouble}, {1e5, kFloat}}) {
    Tensor x = tensor({m, m, 0.0}, dt).view({1, 3}).requires_grad_(true);
    Tensor l = F::cross_entropy(x, tensor<int64_t>({0}));
    EXPECT_NEAR(l.item<double>(), std::log(2.0), 1e-6) << m;  // PyTorch: log 2
    l.backward();
    const std::vector<double> g = x.grad().to(kDouble).to_vector<double>();
    EXPECT_NEAR(g[0], -0.5, 1e-6) << m;  // p - 1
    EXPECT_NEAR(g[1], 0.5, 1e-6) << m;
    EXPECT_EQ(g[2], 0.0) << m;
    // with label smoothing and class weights too (where m - 1 and m - 2 are exact)
    if (m > 1e8) continue;
    Tensor y = tensor({m, m - 1.0, m - 2.0}, dt).view({1, 3});
    const double want_ls = F::cross_entropy(tensor({0.0, -1.0, -2.0}, kDouble).view({1, 3}), tensor<int64_t>({1}),
                                            F::CrossEntropyFuncOptions().label_smoothing(0.2).weight(
                                                tensor({1.0, 2.0, 0.5}, kDouble)))
                               .item<double>();
    EXPECT_NEAR(F::cross_entropy(y, tensor<int64_t>({1}),
                                 F::CrossEntropyFuncOptions().label_smoothing(0.2).weight(tensor({1.0, 2.0, 0.5}, dt)))
                    .item<double>(),
                want_ls, 1e-5)
        << m;
  }
}

TEST(Losses, CrossEntropyIndices) {
  manual_seed(2);
  const int64_t N = 5, C = 3;
  Tensor x = randn({N, C}) * 2;
  Tensor target = tensor<int64_t>({2, 0, 1, 1, 0});
  Tensor weight = tensor<float>({1.5f, 0.5f, 2.f});
  auto xs = vec(x);
  auto tg = target.to_vector<int64_t>();
  auto w = vec(weight);
  for (double ls : {0.0, 0.2}) {
    for (bool weighted : {false, true}) {
      for (int64_t ignore : {-100, 1}) {
        // PyTorch's definition: (1-ls) * nll + ls/C * sum_c -w_c logp_c,
        // mean dividing both by the summed target weights.
        std::vector<double> nll(N), smooth(N);
        double wsum = 0;
        for (int64_t n = 0; n < N; ++n) {
          auto lp = log_softmax_row(xs, n, C);
          if (tg[n] == ignore) continue;
          const double wt = weighted ? w[tg[n]] : 1.0;
          nll[n] = -lp[tg[n]] * wt;
          for (int64_t c = 0; c < C; ++c) smooth[n] -= lp[c] * (weighted ? w[c] : 1.0);
          wsum += wt;
        }
        std::vector<double> none(N);
        double s_nll = 0, s_smooth = 0;
        for (int64_t n = 0; n < N; ++n) {
          none[n] = (1 - ls) * nll[n] + ls / C * smooth[n];
          s_nll += nll[n];
          s_smooth += smooth[n];
        }
        auto opt = [&](nn::Reduction r) {
          F::CrossEntropyFuncOptions o(r);
          o.ignore_index(ignore).label_smoothing(ls);
          if (weighted) o.weight(weight);
          return o;
        };
        SCOPED_TRACE("ls=" + std::to_string(ls) + " weighted=" + std::to_string(weighted) +
                     " ignore=" + std::to_string(ignore));
        EXPECT_TRUE(close(F::cross_entropy(x, target, opt(nn::kNone)), tensor(none), 1e-5, 1e-6));
        EXPECT_NEAR(F::cross_entropy(x, target, opt(nn::kSum)).item<double>(), s_nll * (1 - ls) + ls / C * s_smooth,
                    1e-5);
        EXPECT_NEAR(F::cross_entropy(x, target, opt(nn::kMean)).item<double>(),
                    ((1 - ls) * s_nll + ls / C * s_smooth) / wsum, 1e-5);
      }
    }
  }
  // cross_entropy = nll_loss(log_softmax) on (N, C, d)
  Tensor x3 = randn({2, C, 4});
  Tensor t3 = tensor<int64_t>({{0, 1, 2, 0}, {2, 2, 1, 0}});
  EXPECT_TRUE(close(F::cross_entropy(x3, t3), F::nll_loss(x3.log_softmax(1), t3)));
  // unbatched
  EXPECT_TRUE(close(F::cross_entropy(x[0], target[0]), F::cross_entropy(x.narrow(0, 0, 1), target.narrow(0, 0, 1))));
  EXPECT_EQ(F::cross_entropy(x[0], target[0], nn::kNone).dim(), 0);
}

TEST(Losses, CrossEntropyProbabilities) {
  manual_seed(3);
  const int64_t N = 4, C = 5;
  Tensor x = randn({N, C});
  Tensor p = randn({N, C}).softmax(1);
  Tensor weight = rand({C}) + 0.5;
  auto xs = vec(x), ps = vec(p), w = vec(weight);
  for (double ls : {0.0, 0.1}) {
    std::vector<double> none(N);
    for (int64_t n = 0; n < N; ++n) {
      auto lp = log_softmax_row(xs, n, C);
      for (int64_t c = 0; c < C; ++c) none[n] -= w[c] * (ps[n * C + c] * (1 - ls) + ls / C) * lp[c];
    }
    auto o = F::CrossEntropyFuncOptions(nn::kNone).weight(weight).label_smoothing(ls);
    EXPECT_TRUE(close(F::cross_entropy(x, p, o), tensor(none), 1e-5, 1e-6));
    EXPECT_TRUE(close(F::cross_entropy(x, p, o.reduction(nn::kMean)), tensor(none).mean(), 1e-5, 1e-6));
  }
  // one-hot probabilities equal index targets
  Tensor idx = tensor<int64_t>({4, 0, 2, 2});
  Tensor onehot = zeros({N, C}).scatter(1, idx.unsqueeze(1), 1.0);
  EXPECT_TRUE(close(F::cross_entropy(x, onehot), F::cross_entropy(x, idx)));
  expect_error([&] { F::cross_entropy(x, randn({N, C + 1})); }, {"cross_entropy", "[4, 6]", "[4, 5]"});
  expect_error([&] { F::cross_entropy(x, idx, F::CrossEntropyFuncOptions().label_smoothing(1.5)); },
               {"cross_entropy", "label_smoothing"});
}

TEST(Losses, BinaryCrossEntropy) {
  manual_seed(4);
  Tensor x = rand({3, 4}) * 0.98 + 0.01, t = rand({3, 4});
  Tensor ref = pointwise(x, t, [](double a, double b) { return -(b * std::log(a) + (1 - b) * std::log(1 - a)); });
  check_reductions<decltype(&F::binary_cross_entropy), F::BinaryCrossEntropyFuncOptions>(&F::binary_cross_entropy,
                                                                                          x, t, ref);
  Tensor w = rand({4});
  EXPECT_TRUE(close(F::binary_cross_entropy(x, t, F::BinaryCrossEntropyFuncOptions(nn::kNone).weight(w)), ref * w,
                    1e-5, 1e-6));
  // log clamped at -100 at the ends, gradient finite
  Tensor edge = tensor<float>({0.f, 1.f}).requires_grad_();
  Tensor l = F::binary_cross_entropy(edge, tensor<float>({1.f, 0.f}), nn::kNone);
  EXPECT_TRUE(close(l, tensor<float>({100.f, 100.f})));
  l.sum().backward();
  EXPECT_TRUE(edge.grad().isfinite().all().item<bool>());
  expect_error([&] { F::binary_cross_entropy(x + 1, t); }, {"binary_cross_entropy", "between 0 and 1"});
  // A NaN is not between 0 and 1 either: torch 2.15 raises for it in float32 and bfloat16
  for (ScalarType dt : {kFloat, kBFloat16})
    expect_error([&] { F::binary_cross_entropy(tensor<float>({0.5f, NAN}).to(dt), ones({2}, dt)); },
                 {"binary_cross_entropy", "between 0 and 1"});
}

TEST(Losses, BinaryCrossEntropyWithLogits) {
  manual_seed(5);
  Tensor x = randn({3, 4}) * 3, t = rand({3, 4});
  auto naive = [](double a, double b) {
    const double s = 1 / (1 + std::exp(-a));
    return -(b * std::log(s) + (1 - b) * std::log(1 - s));
  };
  Tensor ref = pointwise(x, t, naive);
  check_reductions<decltype(&F::binary_cross_entropy_with_logits), F::BinaryCrossEntropyWithLogitsFuncOptions>(
      &F::binary_cross_entropy_with_logits, x, t, ref);
  // agrees with binary_cross_entropy(sigmoid)
  EXPECT_TRUE(close(F::binary_cross_entropy_with_logits(x, t), F::binary_cross_entropy(x.sigmoid(), t), 1e-5));
  // pos_weight along the last dim
  Tensor pw = tensor<float>({1.f, 2.f, 0.5f, 3.f});
  auto pwv = vec(pw), xs = vec(x), ts = vec(t);
  std::vector<double> want(12);
  for (size_t i = 0; i < 12; ++i) {
    const double s = 1 / (1 + std::exp(-xs[i]));
    want[i] = -(pwv[i % 4] * ts[i] * std::log(s) + (1 - ts[i]) * std::log(1 - s));
  }
  EXPECT_TRUE(close(
      F::binary_cross_entropy_with_logits(x, t, F::BinaryCrossEntropyWithLogitsFuncOptions(nn::kNone).pos_weight(pw)),
      tensor(want, {3, 4}), 1e-5, 1e-6));
  // stable for huge logits, value and gradient
  Tensor big = tensor<float>({1000.f, -1000.f, 1000.f, -1000.f, 0.f}).requires_grad_();
  Tensor tb = tensor<float>({0.f, 1.f, 1.f, 0.f, 1.f});
  Tensor lb = F::binary_cross_entropy_with_logits(big, tb, nn::kNone);
  EXPECT_TRUE(close(lb, tensor<float>({1000.f, 1000.f, 0.f, 0.f, std::log(2.f)})));
  lb.sum().backward();
  EXPECT_TRUE(close(big.grad(), tensor<float>({1.f, -1.f, 0.f, 0.f, -0.5f})));  // sigmoid(x) - t
}

TEST(Losses, KlDiv) {
  manual_seed(6);
  Tensor input = randn({3, 4}).log_softmax(1);
  Tensor target = randn({3, 4}).softmax(1);
  target.index_put_({0, 1}, 0.0);  // a zero target contributes 0
  Tensor ref = pointwise(input, target, [](double lp, double q) { return q > 0 ? q * (std::log(q) - lp) : 0.0; });
  EXPECT_TRUE(close(F::kl_div(input, target, nn::kNone), ref, 1e-5, 1e-6));
  EXPECT_TRUE(close(F::kl_div(input, target), ref.mean(), 1e-5, 1e-6));
  EXPECT_TRUE(close(F::kl_div(input, target, nn::kSum), ref.sum(), 1e-5, 1e-6));
  EXPECT_TRUE(close(F::kl_div(input, target, nn::kBatchMean), ref.sum() / 3.0, 1e-5, 1e-6));
  Tensor lt = randn({3, 4}).log_softmax(1);
  Tensor ref_log = pointwise(input, lt, [](double lp, double lq) { return std::exp(lq) * (lq - lp); });
  EXPECT_TRUE(close(F::kl_div(input, lt, F::KLDivFuncOptions(nn::kNone).log_target(true)), ref_log, 1e-5, 1e-6));
  // KL(p || p) = 0
  EXPECT_NEAR(F::kl_div(lt, lt, F::KLDivFuncOptions(nn::kSum).log_target(true)).item<double>(), 0.0, 1e-6);
  expect_error([&] { F::mse_loss(input, target, nn::kBatchMean); }, {"mse_loss", "batchmean"});
}

// Regression (difffuzz nn:F.huber_loss/smooth_l1_loss:grad-nan): the
// gradient is clamp(x - t, -delta, delta) (/ beta), finite for an infinite
// difference; where() sent 0 * (the square's infinite gradient) = NaN.
// torch 2.15, delta = beta = 2, x - t = [1, inf, -3, 0.5, inf (3e38 + 3e38), nan],
// g = [1, 2, 1, 1, 0.5, 1]: huber grad [1, 4, -2, 0.5, 1, nan], smooth_l1 grad [0.5, 2, -1, 0.25, 0.5, nan].
TEST(Losses, HuberAndSmoothL1GradientsAtInfinity) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (ScalarType dt : {kFloat, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = tensor({1.0, inf, -3.0, 0.5, 3e38, nan}, kDouble).to(dt).requires_grad_();
    const Tensor t = tensor({0.0, 1.0, 0.0, 0.0, -3e38, 0.0}, kDouble).to(dt);
    const Tensor g = tensor({1.0, 2.0, 1.0, 1.0, 0.5, 1.0}, kDouble).to(dt);
    const Tensor h = F::huber_loss(x, t, F::HuberLossFuncOptions(nn::kNone).delta(2.0));
    EXPECT_TRUE(close(h, tensor({0.5, inf, 4.0, 0.125, inf, nan}, kDouble), 0, 0));
    h.backward(g);
    EXPECT_TRUE(close(x.grad(), tensor({1.0, 4.0, -2.0, 0.5, 1.0, nan}, kDouble), 0, 0));
    x.mutable_grad() = Tensor();
    const Tensor s = F::smooth_l1_loss(x, t, F::SmoothL1LossFuncOptions(nn::kNone).beta(2.0));
    EXPECT_TRUE(close(s, tensor({0.25, inf, 2.0, 0.0625, inf, nan}, kDouble), 0, 0));
    s.backward(g);
    EXPECT_TRUE(close(x.grad(), tensor({0.5, 2.0, -1.0, 0.25, 0.5, nan}, kDouble), 0, 0));
  }
  // huber_loss has the input's dtype (torch: bfloat16 input, float64 target -> bfloat16)
  const Tensor hb = F::huber_loss(tensor({1.0, 2.0}, kBFloat16), tensor({0.5, 0.0}, kDouble));
  EXPECT_EQ(hb.dtype(), kBFloat16);
  EXPECT_EQ(F::huber_loss(zeros({0, 3}, kBFloat16), zeros({0, 3}, kDouble)).dtype(), kBFloat16);
}

// Regression (difffuzz nn:F.mse_loss:grad-inf): the gradient g * 2 (x - t) / n
// is finite when 2 (x - t) alone is not (bfloat16 x - t = 3e38); torch 2.15:
// mse_loss([3e38, 1, -2, .5], [-1, 0, 1, .5]) backward(0.25) = [3.7551e+37, .125, -.375, 0].
TEST(Losses, MseGradientNearTheRangeLimit) {
  const Tensor x = tensor({3e38, 1.0, -2.0, 0.5}, kDouble).to(kBFloat16).requires_grad_();
  const Tensor t = tensor({-1.0, 0.0, 1.0, 0.5}, kDouble).to(kBFloat16);
  const Tensor l = F::mse_loss(x, t);
  EXPECT_TRUE(std::isinf(l.item<double>()));
  l.backward(scalar_tensor(0.25, kBFloat16));
  EXPECT_TRUE(close(x.grad(), tensor({3.7551e+37, 0.125, -0.375, 0.0}, kDouble), 4e-3, 0));
}

// Regression (difffuzz nn:F.cross_entropy/nll_loss:grad-nan): every target
// ignored makes the mean 0 / 0 = NaN, with a zero gradient (torch 2.15); the
// ignored positions multiplied the mean's infinite gradient by 0. A valid
// target of weight 0 does give NaN, in torch too.
TEST(Losses, AllTargetsIgnoredGiveNanLossAndZeroGradient) {
  for (double ls : {0.0, 0.2}) {
    const Tensor x = tensor({0.4, -0.8, -0.5, 1.0, 2.0, 3.0}).view({2, 3}).requires_grad_();
    const Tensor l =
        F::cross_entropy(x, tensor<int64_t>({1, 1}), F::CrossEntropyFuncOptions().ignore_index(1).label_smoothing(ls));
    EXPECT_TRUE(std::isnan(l.item<double>()));
    l.backward();
    EXPECT_TRUE(close(x.grad(), zeros({2, 3}), 0, 0, false)) << ls;
  }
  const Tensor x = tensor({0.4, -0.8, -0.5}).view({1, 3}).requires_grad_();
  const Tensor l = F::nll_loss(x, tensor<int64_t>({1}), F::NLLLossFuncOptions().ignore_index(1));
  EXPECT_TRUE(std::isnan(l.item<double>()));
  l.backward();
  EXPECT_TRUE(close(x.grad(), zeros({1, 3}), 0, 0, false));
  // weight 0 on the one valid target: torch's gradient [[0, nan, 0], [0, 0, 0]]
  const double nan = std::nan("");
  const Tensor x2 = tensor({0.4, -0.8, -0.5, 1.0, 2.0, 3.0}).view({2, 3}).requires_grad_();
  F::nll_loss(x2, tensor<int64_t>({1, 0}), F::NLLLossFuncOptions().weight(tensor({1.0f, 0.0f, 1.0f})).ignore_index(0))
      .backward();
  EXPECT_TRUE(close(x2.grad(), tensor({0.0, nan, 0.0, 0.0, 0.0, 0.0}).view({2, 3}), 0, 0));
}

TEST(Losses, ShapeAndDtypeErrors) {
  Tensor a = randn({2, 3});
  expect_error([&] { F::mse_loss(a, randn({3, 2})); }, {"mse_loss", "[2, 3]", "[3, 2]"});
  expect_error([&] { F::l1_loss(a, randn({2})); }, {"l1_loss", "[2, 3]", "[2]"});
  expect_error([&] { F::huber_loss(a, a, F::HuberLossFuncOptions().delta(0)); }, {"huber_loss", "delta"});
  expect_error([&] { F::smooth_l1_loss(a, a, F::SmoothL1LossFuncOptions().beta(-1)); }, {"smooth_l1_loss", "beta"});
  expect_error([&] { F::mse_loss(ones({2}, kInt64), ones({2}, kInt64)); }, {"mse_loss", "floating"});
  expect_error([&] { F::kl_div(a, randn({3})); }, {"kl_div", "[2, 3]"});
  expect_error([&] { F::binary_cross_entropy_with_logits(a, randn({2, 1})); }, {"binary_cross_entropy_with_logits"});
  expect_error([&] { F::cross_entropy(a, tensor<int64_t>({0, 3})); }, {"cross_entropy", "target 3", "out of bounds"});
}

TEST(Losses, Gradcheck) {
  manual_seed(7);
  Tensor y = leaf({3, 4}).detach();
  auto ok = [](const std::function<Tensor(const TensorList&)>& f, const TensorList& in) { return gradcheck_ok(f, in); };
  EXPECT_TRUE(ok([y](const TensorList& t) { return F::mse_loss(t[0], y); }, {leaf({3, 4})}));
  EXPECT_TRUE(ok([](const TensorList& t) { return F::mse_loss(t[0], t[1], nn::kSum); }, {leaf({3, 4}), leaf({3, 4})}));
  EXPECT_TRUE(ok([y](const TensorList& t) { return F::l1_loss(t[0], y, nn::kNone); }, {leaf({3, 4})}));
  EXPECT_TRUE(ok([y](const TensorList& t) { return F::smooth_l1_loss(t[0], y, F::SmoothL1LossFuncOptions().beta(0.5)); },
                 {leaf({3, 4})}));
  EXPECT_TRUE(ok([y](const TensorList& t) { return F::huber_loss(t[0], y, F::HuberLossFuncOptions().delta(0.3)); },
                 {leaf({3, 4})}));
  Tensor target = tensor<int64_t>({0, 2, 1, 2, 3});
  Tensor w = tensor<double>({0.5, 1.0, 2.0, 1.5});
  EXPECT_TRUE(ok(
      [&](const TensorList& t) {
        return F::cross_entropy(t[0], target,
                                F::CrossEntropyFuncOptions().weight(w).ignore_index(1).label_smoothing(0.1));
      },
      {leaf({5, 4})}));
  EXPECT_TRUE(ok([&](const TensorList& t) { return F::cross_entropy(t[0], t[1].softmax(1)); },
                 {leaf({5, 4}), leaf({5, 4})}));
  EXPECT_TRUE(ok([&](const TensorList& t) { return F::nll_loss(t[0], target, F::NLLLossFuncOptions(nn::kSum).weight(w)); },
                 {leaf({5, 4})}));
  Tensor tb = rand({3, 4}, kDouble);
  EXPECT_TRUE(ok([tb](const TensorList& t) { return F::binary_cross_entropy(t[0], tb); }, {leaf({3, 4}, 0.1, 0.9)}));
  // pos_weight takes no gradient (PyTorch refuses one that requires grad).
  Tensor pw = rand({4}, kDouble) * 1.5 + 0.5;
  EXPECT_TRUE(ok(
      [tb, pw](const TensorList& t) {
        return F::binary_cross_entropy_with_logits(t[0], tb, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pw));
      },
      {leaf({3, 4}, -3, 3)}));
  Tensor q = rand({3, 4}, kDouble).softmax(1);
  EXPECT_TRUE(ok([q](const TensorList& t) { return F::kl_div(t[0], q, nn::kBatchMean); }, {leaf({3, 4})}));
  EXPECT_TRUE(ok(
      [](const TensorList& t) { return F::kl_div(t[0], t[1], F::KLDivFuncOptions(nn::kSum).log_target(true)); },
      {leaf({3, 4}), leaf({3, 4})}));
}

TEST(Losses, ModuleTrainingStepReducesLoss) {
  // A tiny classifier: a few SGD steps on cross entropy lower the loss.
  manual_seed(8);
  auto net = std::make_shared<nn::SequentialImpl>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::LinearImpl>(4, 16), std::make_shared<nn::ReLUImpl>(), std::make_shared<nn::LinearImpl>(16, 3)});
  Tensor x = randn({32, 4});
  Tensor y = x.narrow(1, 0, 3).argmax(1);
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    net->zero_grad();
    Tensor loss = F::cross_entropy(net->forward(x), y);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    loss.backward();
    NoGradGuard ng;
    for (auto& p : net->parameters()) p.add_(p.grad(), -0.5);
  }
  EXPECT_LT(last, 0.5 * first);
}

// huber/smooth_l1 have their own node (a finite gradient at an infinite
// difference, NaN at a NaN one); first and second derivatives against finite
// differences, in both inputs.
TEST(Losses, HuberAndSmoothL1Gradcheck) {
  Tensor x = (rand({3, 4}, kDouble) * 6 - 3).requires_grad_();
  Tensor t = (rand({3, 4}, kDouble) * 2 - 1).requires_grad_();
  EXPECT_TRUE(brisk::testing::gradcheck_ok(
      [](const TensorList& in) { return F::huber_loss(in[0], in[1], F::HuberLossFuncOptions(nn::kSum).delta(1.5)); },
      {x, t}, /*grad_grad=*/true));
  EXPECT_TRUE(brisk::testing::gradcheck_ok(
      [](const TensorList& in) { return F::smooth_l1_loss(in[0], in[1], F::SmoothL1LossFuncOptions(nn::kMean).beta(0.7)); },
      {x, t}, /*grad_grad=*/true));
}

// Integer inputs (difffuzz nn:F.l1_loss:unsupported:int): torch computes
// |input - target| in the promoted integer dtype (wrapping), sums it in int64
// and refuses the mean (torch 2.15: l1_loss(int32 [[-2], [-5]], [[3], [-2]])
// = [[5], [3]], sum 8 (int64); as uint8: [[251], [253]]; mean raises
// "mean(): could not infer output dtype").
TEST(Losses, L1LossOfIntegers) {
  const Tensor a = tensor<int32_t>({-2, -5}, kInt32).view({2, 1}), b = tensor<int32_t>({3, -2}, kInt32).view({2, 1});
  const Tensor none = F::l1_loss(a, b, nn::kNone);
  EXPECT_EQ(none.dtype(), kInt32);
  EXPECT_TRUE(close(none, tensor({5.0, 3.0}, kDouble).view({2, 1}), 0, 0));
  const Tensor sum = F::l1_loss(a, b, nn::kSum);
  EXPECT_EQ(sum.dtype(), kInt64);
  EXPECT_EQ(sum.item<int64_t>(), 8);
  EXPECT_TRUE(close(F::l1_loss(a.to(kUInt8), b.to(kUInt8), nn::kNone), tensor({251.0, 253.0}, kDouble).view({2, 1}), 0, 0));
  brisk::testing::expect_error([&] { F::l1_loss(a, b); }, {"mean"});
}

// mse_loss's gradient (one kernel, ActGrad::mse) against a naive model of
// PyTorch's mse_loss_backward, norm * (x - t) * g with each product rounded
// to the dtype (Note [mse_loss's gradient]): both operands' gradients, every
// reduction, 300 elements (whole vectors and a tail), four dtypes, through
// mse_loss's node and through torch's free function mse_loss_backward.
TEST(Losses, MseGradientMatchesPyTorchsRoundings) {
  set_num_threads(1);
  manual_seed(5);
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    const Tensor x = (randn({300}) * 3).to(dt), t = (randn({300}) * 3).to(dt);
    {
      NoGradGuard ng;
      t.narrow(0, 10, 5).copy_(x.narrow(0, 10, 5));  // x == t: +0 in both gradients
    }
    for (int64_t red : {0, 1, 2}) {
      const Tensor g = red == 0 ? (randn({300}) * 2).to(dt) : full({}, 1.3, dt);
      const double norm = red == 1 ? 2.0 / 300 : 2.0;
      const double norm_dt = full({}, norm, dt).item<double>();
      // the model: each product computed exactly (in double) and rounded to dt
      auto model = [&](const Tensor& a, const Tensor& b) {
        const Tensor d = (a.to(kDouble) - b.to(kDouble)).to(dt).to(kDouble);
        const Tensor p = (d * norm_dt).to(dt).to(kDouble);
        return (p * g.to(kDouble)).to(dt);
      };
      Tensor xl = x.clone().requires_grad_(), tl = t.clone().requires_grad_();
      const nn::Reduction r = red == 0 ? nn::kNone : red == 1 ? nn::kMean : nn::kSum;
      F::mse_loss(xl, tl, F::MSELossFuncOptions(r)).backward(g);
      const Tensor want_x = model(x, t), want_t = model(t, x);
      EXPECT_TRUE(brisk::testing::close(xl.grad(), want_x, 0, 0)) << dt << " reduction " << red;
      EXPECT_TRUE(brisk::testing::close(tl.grad(), want_t, 0, 0)) << dt << " reduction " << red;
      EXPECT_TRUE(brisk::testing::close(mse_loss_backward(g, x, t, red), want_x, 0, 0)) << dt << " reduction " << red;
      for (int64_t i = 10; i < 15; ++i) {  // where x == t: +0 * g, the sign of g (t - x is +0, not -0)
        EXPECT_EQ(std::signbit(xl.grad()[i].item<double>()), std::signbit(want_x[i].item<double>())) << dt;
        EXPECT_EQ(std::signbit(tl.grad()[i].item<double>()), std::signbit(want_t[i].item<double>())) << dt;
      }
    }
  }
  expect_error([] { mse_loss_backward(ones({2}), ones({2}), ones({3}), 1); }, {"mse_loss_backward", "shape"});
  expect_error([] { mse_loss_backward(ones({2}), ones({2}), ones({2}), 3); }, {"mse_loss_backward", "reduction"});
  expect_error([] { mse_loss_backward(ones({2}, kDouble), ones({2}), ones({2}), 0); },
               {"mse_loss_backward", "dtype"});
}
