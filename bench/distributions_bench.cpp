// brisk_distributions_bench: issue 18's figures. brisk's Categorical sample
// and Normal rsample + log_prob next to libtorch's hand-written equivalents
// in the same process (bench/distributions_bench.py adds Python PyTorch's
// torch.distributions).
//
//   brisk_distributions_bench [--threads N] [--quick]
//
// Prints `key value` lines (milliseconds per call, medians over rounds).
#include <brisk/brisk.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "distributions_bench.h"

#include "timing.h"

using namespace brisk;
namespace D = brisk::distributions;

using bench_timing::out;
using bench_timing::time_ms;

namespace {
}  // namespace

int main(int argc, char** argv) {
  const auto [threads, quick] = bench_timing::parse_args(argc, argv);
  const int rounds = quick ? 3 : 7;
  // libtorch first: its thread pools are sized before brisk's
  const TorchDistributionsTimes t = torch_distributions_times(threads, rounds);
  set_num_threads(threads);
  manual_seed(0);
  const Tensor logits = randn({64, 1000});
  out("brisk_categorical_sample_ms", time_ms([&] { (void)D::Categorical(D::logits(logits)).sample(); }, rounds, 200));
  const Tensor loc = randn({1 << 20}), scale = rand({1 << 20}) + 0.5;
  out("brisk_normal_rsample_log_prob_ms", time_ms(
                                              [&] {
                                                D::Normal n(loc, scale);
                                                (void)n.log_prob(n.rsample());
                                              },
                                              rounds, 20));
  // the rejection samplers (Note [Samplers in one pass])
  const Tensor alpha = rand({1 << 20}) * 5 + 0.1, rate = rand({1 << 20}) * 30;
  const Tensor count = (rand({1 << 20}) * 100).floor(), prob = rand({1 << 20});
  out("brisk_gamma_sample_ms", time_ms([&] { (void)D::Gamma(alpha, ones_like(alpha), false).sample(); }, rounds, 3));
  out("brisk_poisson_sample_ms", time_ms([&] { (void)D::Poisson(rate, false).sample(); }, rounds, 3));
  out("brisk_binomial_sample_ms",
      time_ms([&] { (void)D::Binomial(count, D::probs(prob), false).sample(); }, rounds, 3));
  if (t.available) {
    std::printf("libtorch_version %s\n", t.version.c_str());
    out("libtorch_categorical_sample_ms", t.categorical_sample_ms);
    out("libtorch_normal_rsample_log_prob_ms", t.normal_rsample_log_prob_ms);
    out("libtorch_gamma_sample_ms", t.gamma_sample_ms);
    out("libtorch_poisson_sample_ms", t.poisson_sample_ms);
    out("libtorch_binomial_sample_ms", t.binomial_sample_ms);
  }
  return 0;
}
