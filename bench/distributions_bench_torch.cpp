// libtorch's side of brisk_distributions_bench: libtorch has no
// distributions, so this is what a libtorch user writes by hand.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "distributions_bench.h"

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <class F>
double time_ms(F&& f, int rounds, int iters) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const double a = now();
    for (int i = 0; i < iters; ++i) f();
    t.push_back((now() - a) * 1e3 / iters);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
}  // namespace

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
  return r;
}
