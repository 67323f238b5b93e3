// brisk::nn::functional (alias brisk::nn::F): stateless layers and losses,
// written as compositions of brisk ops (autograd gives the gradients).
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "brisk/reduction.h"
#include "brisk/tensor.h"

namespace brisk::nn {

// The loss reductions live in the top namespace (brisk/reduction.h:
// brisk::kSum, brisk::Reduction::Sum, as libtorch's torch::kSum); these
// names are the same enum and constants.
using brisk::Reduction;
using brisk::kNone;
using brisk::kMean;
using brisk::kSum;
using brisk::kBatchMean;

/// An option with a chainable setter and a getter, as libtorch's TORCH_ARG:
/// `CrossEntropyFuncOptions().ignore_index(0).label_smoothing(0.1)`.
#define BRISK_ARG(T, name)                     \
 public:                                       \
  auto& name(const T& v) {                     \
    this->name##_ = v;                         \
    return *this;                              \
  }                                            \
  const T& name() const { return name##_; }    \
                                               \
 private:                                      \
  T name##_

namespace functional {

// ---- layers --------------------------------------------------------------------
/// x W^T + b; W: (out, in), b: (out) or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
/// x1: (..., in1), x2: (..., in2), W: (out, in1, in2) -> (..., out).
Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias = {});
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
Tensor silu(const Tensor& x);
/// x * tanh(softplus(x)); in place when inplace.
Tensor mish(const Tensor& x, bool inplace = false);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
/// Zeroes with probability p and scales by 1/(1-p) when training, else x.
/// Draws from brisk's generator (deterministic under manual_seed).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);
/// Normalizes over the trailing dims normalized_shape (biased variance).
Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
/// Root-mean-square normalization over the trailing dims normalized_shape,
/// as torch.nn.functional.rms_norm (PyTorch 2.x): x / sqrt(mean(x^2) + eps)
/// times weight when given, computed in float32 for 16-bit x and rounded
/// once to x's dtype (the result has x's dtype, whatever the weight's).
/// eps = nullopt: the machine epsilon of the compute dtype (float32's for
/// float16/bfloat16/float32, float64's for float64).
Tensor rms_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
/// weight rows picked by integer indices: indices.shape + [dim]. The
/// padding_idx row gets no gradient.
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);

// ---- losses ----------------------------------------------------------------------
// Each takes (input, target, options); an options struct converts implicitly
// from a Reduction: mse_loss(x, y, nn::kSum). Input and target must have the
// same shape (PyTorch would broadcast with a warning).

struct MSELossFuncOptions {
  MSELossFuncOptions(Reduction r = kMean) : reduction_(r) {}
  BRISK_ARG(Reduction, reduction);
};
struct L1LossFuncOptions {
  L1LossFuncOptions(Reduction r = kMean) : reduction_(r) {}
  BRISK_ARG(Reduction, reduction);
};
struct SmoothL1LossFuncOptions {
  SmoothL1LossFuncOptions(Reduction r = kMean) : reduction_(r) {}
  BRISK_ARG(Reduction, reduction);
  BRISK_ARG(double, beta) = 1.0;
};
struct HuberLossFuncOptions {
  HuberLossFuncOptions(Reduction r = kMean) : reduction_(r) {}
  BRISK_ARG(Reduction, reduction);
  BRISK_ARG(double, delta) = 1.0;
};
struct NLLLossFuncOptions {
  NLLLossFuncOptions(Reduction r = kMean) : reduction_(r) {}
  BRISK_ARG(Reduction, reduction);
  BRISK_ARG(Tensor, weight);  ///< (C) per-class weights, or undefined
  BRISK_ARG(int64_t, ignore_index) = -100;
};
struct CrossEntropyFuncOptions {
  CrossEntropyFuncOptions(Reduction r = kMean) : reduction_(r) {}
  BRISK_ARG(Reduction, reduction);
  BRISK_ARG(Tensor, weight);
  BRISK_ARG(int64_t, ignore_index) = -100;
  BRISK_ARG(double, label_smoothing) = 0.0;
};
struct BinaryCrossEntropyFuncOptions {
  BinaryCrossEntropyFuncOptions(Reduction r = kMean) : reduction_(r) {}
  BRISK_ARG(Reduction, reduction);
  BRISK_ARG(Tensor, weight);  ///< broadcast to the input
};
struct BinaryCrossEntropyWithLogitsFuncOptions {
  BinaryCrossEntropyWithLogitsFuncOptions(Reduction r = kMean) : reduction_(r) {}
  BRISK_ARG(Reduction, reduction);
  BRISK_ARG(Tensor, weight);      ///< broadcast to the input
  BRISK_ARG(Tensor, pos_weight);  ///< weight of positive examples, broadcast along the last dim
};
struct KLDivFuncOptions {
  KLDivFuncOptions(Reduction r = kMean) : reduction_(r) {}
  BRISK_ARG(Reduction, reduction);
  BRISK_ARG(bool, log_target) = false;
};

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o = {});
/// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta = 0: l1).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o = {});
/// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta).
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o = {});
/// input: log-probabilities (N, C), (N, C, d1, ...) or (C); target: int64
/// class indices (N), (N, d1, ...) or (). Mean divides by the summed weight
/// of the non-ignored targets.
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o = {});
/// input: logits (N, C, ...) or (C). target: int64 class indices (as
/// nll_loss) or floating probabilities of the input's shape.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o = {});
/// input: probabilities in [0, 1]; logs are clamped at -100 as in PyTorch.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o = {});
/// Numerically stable for any logit magnitude (softplus form).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& o = {});
/// input: log-probabilities; target: probabilities (log-probabilities with
/// log_target). Pointwise target * (log target - input), 0 where target = 0.
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o = {});

}  // namespace functional

namespace F = functional;

}  // namespace brisk::nn
