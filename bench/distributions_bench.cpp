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
  if (t.available) {
    std::printf("libtorch_version %s\n", t.version.c_str());
    out("libtorch_categorical_sample_ms", t.categorical_sample_ms);
    out("libtorch_normal_rsample_log_prob_ms", t.normal_rsample_log_prob_ms);
  }
  return 0;
}
