// Distributions with CUDA parameters (issue 18): the samplers draw on the
// device what the CPU draws (Note [Samplers in one pass]), sampling never
// waits for the device (the sync debug mode raises at any synchronizing
// call), and invalid parameters are raised at the next sync as deferred
// device errors. Every test needs a GPU (skips without one); the CPU halves
// of these properties are tested in tests/ops/test_random.cpp (Samplers.*)
// and tests/distributions/test_distributions.cpp (SamplingHasNoSyncPoints).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
namespace D = brisk::distributions;
using brisk::testing::expect_error;

namespace {

const Device kGpu(kCUDA);

/// Share of equal elements of two same-shape tensors.
double equal_share(const Tensor& a, const Tensor& b) {
  return a.eq(b).to(kDouble).mean().item<double>();
}

struct SyncModeReset {
  ~SyncModeReset() { set_sync_debug_mode(SyncDebugMode::Off); }
};

}  // namespace

TEST(CudaDistributions, SamplersDrawWhatTheCpuDraws) {
  REQUIRE_CUDA();
  for (ScalarType dt : {kFloat, kDouble}) {
    const Tensor alpha = rand({20000}, dt) * 5 + 0.05, rate = rand({20000}, dt) * 40;
    const Tensor count = (rand({20000}, dt) * 100).floor(), prob = rand({20000}, dt);
    manual_seed(77);
    const Tensor g = _standard_gamma(alpha), p = poisson(rate), b = binomial(count, prob);
    manual_seed(77);
    const Tensor gg = _standard_gamma(alpha.to(kGpu)), pg = poisson(rate.to(kGpu)),
                 bg = binomial(count.to(kGpu), prob.to(kGpu));
    ASSERT_TRUE(gg.is_cuda());
    EXPECT_EQ(gg.dtype(), dt);
    // the same draws; libm and CUDA's log/lgamma may differ by an ulp, which
    // can move a rare acceptance test across its bound or the last bit of a
    // value (float64 on an H200: 98.8% bit-equal, every value within 1e-5)
    EXPECT_GT(equal_share(gg.cpu(), g), dt == kDouble ? 0.98 : 0.999);
    const Tensor near = (gg.cpu() - g).abs().le(g.abs() * 1e-5 + 1e-6);
    EXPECT_GT(near.to(kDouble).mean().item<double>(), 0.999);
    EXPECT_GT(equal_share(pg.cpu(), p), 0.999);
    EXPECT_GT(equal_share(bg.cpu(), b), 0.999);
  }
}

TEST(CudaDistributions, SamplingHasNoSyncPoints) {
  REQUIRE_CUDA();
  SyncModeReset reset;
  const TensorOptions o = TensorOptions(kFloat).device(kGpu);
  const Tensor a = tensor({0.4, 1.0, 7.5}, o), b = tensor({2.0, 0.5, 1.0}, o);
  const Tensor logits = randn({64, 1000}, o);
  std::vector<std::pair<std::string, D::DistributionPtr>> dists = {
      {"Gamma", D::share(D::Gamma(a, b))},
      {"Beta", D::share(D::Beta(a, b))},
      {"Dirichlet", D::share(D::Dirichlet(a))},
      {"StudentT", D::share(D::StudentT(a, b, b))},
      {"Poisson", D::share(D::Poisson(tensor({0.5, 4.0, 60.0}, o)))},
      {"Binomial", D::share(D::Binomial(tensor({10.0, 1000.0, 3.0}, o), D::probs(tensor({0.3, 0.6, 0.0}, o))))},
      {"Bernoulli", D::share(D::Bernoulli(D::probs(tensor({0.1, 0.9}, o))))},
      {"Categorical", D::share(D::Categorical(D::logits(logits)))},
      {"OneHotCategorical", D::share(D::OneHotCategorical(D::logits(logits)))},
      {"Multinomial", D::share(D::Multinomial(20, D::logits(logits)))},
      {"Normal", D::share(D::Normal(a, b))},
  };
  for (auto& [name, d] : dists) {
    set_sync_debug_mode(SyncDebugMode::Error);
    Tensor s;
    EXPECT_NO_THROW(s = d->sample({100})) << name;
    set_sync_debug_mode(SyncDebugMode::Off);
    ASSERT_TRUE(s.defined() && s.is_cuda()) << name;
    EXPECT_TRUE(s.isfinite().all().item<bool>()) << name;
  }
}

TEST(CudaDistributions, CategoricalDrawsWhatTheCpuDraws) {
  REQUIRE_CUDA();
  const Tensor probs = rand({16, 50}, kDouble);
  for (bool replacement : {true, false}) {
    manual_seed(9);
    const Tensor host = multinomial(probs, replacement ? 300 : 40, replacement);
    manual_seed(9);
    const Tensor dev = multinomial(probs.to(kGpu), replacement ? 300 : 40, replacement);
    ASSERT_TRUE(dev.is_cuda());
    EXPECT_GT(equal_share(dev.cpu(), host), 0.999) << "replacement " << replacement;
  }
}

TEST(CudaDistributions, InvalidParametersRaiseAtTheNextSync) {
  REQUIRE_CUDA();
  Tensor r = poisson(tensor({1.0, -2.0, 3.0}).to(kGpu));  // no wait here
  expect_error([&] { cuda::synchronize(); }, {"[poisson]", "rates >= 0", "flat index 1"});
  Tensor m = multinomial(tensor({{0.2, 0.8}, {0.5, -0.5}}).to(kGpu), 3, true);
  expect_error([&] { (void)m.cpu(); }, {"[multinomial]", "row 1"});
  // the device stays usable
  EXPECT_EQ(poisson(zeros({4}).to(kGpu)).sum().item<double>(), 0.0);
}

TEST(CudaDistributions, GammaGradientAndCdfOnTheDevice) {
  REQUIRE_CUDA();
  SyncModeReset reset;
  const Tensor a = rand({5000}, kDouble) * 8 + 0.05, x = rand({5000}, kDouble) * 12;
  EXPECT_LT((igamma(a.to(kGpu), x.to(kGpu)).cpu() - igamma(a, x)).abs().max().item<double>(), 1e-12);
  // relative to the gradient (up to ~10 here; an H200 differed by 4.9e-9 absolute)
  const Tensor dg = _standard_gamma_grad(a, x);
  EXPECT_LT(((_standard_gamma_grad(a.to(kGpu), x.to(kGpu)).cpu() - dg).abs() / (dg.abs() + 1)).max().item<double>(),
            1e-8);
  // rsample's backward (the implicit gradient) and cdf run on the device, no sync
  const Tensor c = tensor({0.4, 1.0, 7.5}, TensorOptions(kFloat).device(kGpu)).requires_grad_(true);
  const D::Gamma g(c, ones_like(c), /*validate_args=*/false);
  set_sync_debug_mode(SyncDebugMode::Error);
  EXPECT_NO_THROW(g.rsample({100}).sum().backward());
  EXPECT_NO_THROW((void)D::Gamma(c.detach(), ones_like(c), false).cdf(ones_like(c)));
  set_sync_debug_mode(SyncDebugMode::Off);
  EXPECT_TRUE(c.grad().isfinite().all().item<bool>());
}
