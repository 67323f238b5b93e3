// The free functions of brisk/functions.h that are more than a forward.
#include "brisk/functions.h"

namespace brisk {

Tensor feature_dropout(const Tensor& input, double p, bool train) {
  BRISK_CHECK(input.defined(), "feature_dropout", "input is an undefined tensor");
  BRISK_CHECK(p >= 0.0 && p <= 1.0, "feature_dropout", "p must be in [0, 1], got ", p);
  BRISK_CHECK(input.dim() >= 2, "feature_dropout", "expects an input of 2 or more dims (N, C, ...), got shape ",
              input.sizes());
  if (!train || p == 0.0) return input;
  BRISK_CHECK(input.is_floating_point(), "feature_dropout", "expects a floating point input, got ", input.dtype());
  if (p == 1.0) return input * 0.0;
  // One draw per (sample, channel), broadcast over the other dims.
  DimVector noise_shape{input.size(0), input.size(1)};
  for (int64_t d = 2; d < input.dim(); ++d) noise_shape.push_back(1);
  Tensor noise = empty(noise_shape, input.options()).bernoulli_(1.0 - p);
  noise.mul_(1.0 / (1.0 - p));
  return input * noise;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                 bool sparse) {
  BRISK_CHECK(!scale_grad_by_freq, "embedding", "scale_grad_by_freq is not supported");
  BRISK_CHECK(!sparse, "embedding", "sparse gradients are not supported");
  return nn::functional::embedding(indices, weight,
                                   padding_idx < 0 ? std::nullopt : std::optional<int64_t>(padding_idx));
}

}  // namespace brisk
