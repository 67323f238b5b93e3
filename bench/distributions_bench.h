// The libtorch side of brisk_distributions_bench (distributions_bench_torch.cpp,
// or a stub without libtorch): milliseconds per call, medians over rounds.
#pragma once
#include <string>

struct TorchDistributionsTimes {
  bool available = false;
  std::string version;
  double categorical_sample_ms = 0;   ///< softmax(logits [64, 1000]) + multinomial(1, replacement)
  double normal_rsample_log_prob_ms = 0;  ///< loc + randn * scale, then log_prob, over 1M float32
  double gamma_sample_ms = 0;     ///< torch::_standard_gamma over 1M concentrations in [0.1, 5.1)
  double poisson_sample_ms = 0;   ///< torch::poisson over 1M rates in [0, 30)
  double binomial_sample_ms = 0;  ///< torch::binomial over 1M counts in [0, 100), probs in [0, 1)
};
TorchDistributionsTimes torch_distributions_times(int threads, int rounds);
