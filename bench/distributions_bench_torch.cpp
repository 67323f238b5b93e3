// libtorch's side of brisk_distributions_bench: libtorch has no
// distributions, so this is what a libtorch user writes by hand.
#include <torch/torch.h>

#include <cmath>

#include "distributions_bench.h"

#include "timing.h"

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

using bench_timing::time_ms;

TorchDistributionsTimes torch_distributions_times(int threads, int rounds) {
  torch::set_num_threads(threads);
  at::set_num_interop_threads(1);
  if (openblas_set_num_threads) openblas_set_num_threads(threads);
  torch::manual_seed(0);
  TorchDistributionsTimes r;
  r.available = true;
  r.version = TORCH_VERSION;
  torch::NoGradGuard ng;
  const torch::Tensor logits = torch::randn({64, 1000});
  r.categorical_sample_ms = time_ms([&] { (void)torch::multinomial(torch::softmax(logits, -1), 1, true); }, rounds, 200);
  const torch::Tensor loc = torch::randn({1 << 20}), scale = torch::rand({1 << 20}) + 0.5;
  const double half_log_2pi = 0.5 * std::log(2 * M_PI);
  r.normal_rsample_log_prob_ms = time_ms(
      [&] {
        torch::Tensor x = loc + torch::randn({1 << 20}) * scale;
        (void)(-(x - loc).square() / (2 * scale.square()) - scale.log() - half_log_2pi);
      },
      rounds, 20);
  const torch::Tensor alpha = torch::rand({1 << 20}) * 5 + 0.1, rate = torch::rand({1 << 20}) * 30;
  const torch::Tensor count = (torch::rand({1 << 20}) * 100).floor(), prob = torch::rand({1 << 20});
  r.gamma_sample_ms = time_ms([&] { (void)torch::_standard_gamma(alpha); }, rounds, 3);
  r.poisson_sample_ms = time_ms([&] { (void)torch::poisson(rate); }, rounds, 3);
  r.binomial_sample_ms = time_ms([&] { (void)torch::binomial(count, prob); }, rounds, 3);
  return r;
}
