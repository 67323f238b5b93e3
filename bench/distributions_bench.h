// The libtorch side of brisk_distributions_bench (distributions_bench_torch.cpp,
// or a stub without libtorch): milliseconds per call, medians over rounds.
#pragma once
#include <string>

struct TorchDistributionsTimes {
  bool available = false;
  std::string version;
  double categorical_sample_ms = 0;   ///< softmax(logits [64, 1000]) + multinomial(1, replacement)
  double normal_rsample_log_prob_ms = 0;  ///< loc + randn * scale, then log_prob, over 1M float32
};
TorchDistributionsTimes torch_distributions_times(int threads, int rounds);
