// Loss modules of brisk::nn with libtorch's options, functionals and holders:
//
//   nn::CrossEntropyLoss loss(nn::CrossEntropyLossOptions().ignore_index(-100).reduction(nn::kSum));
//   Tensor l = loss(logits, labels);                      // loss->forward(logits, labels)
//   F::margin_ranking_loss(a, b, y, F::MarginRankingLossFuncOptions().margin(0.5));
//
// Each module keeps its options in `options` and prints as PyTorch
// (`CrossEntropyLoss()`); class weights (weight, pos_weight) are registered
// buffers, so `to(device)` and `state_dict()` carry them. The functionals
// are compositions of brisk ops (autograd gives the gradients); the losses
// of functional.h (mse_loss ... kl_div) are documented there.
#pragma once
#include <functional>
#include <optional>

#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"
#include "brisk/nn/pixelshuffle.h"  // pairwise_distance for the triplet losses

namespace brisk::nn {

// ---- options ------------------------------------------------------------------------
// The options of the losses in functional.h are the functionals' own structs,
// as in libtorch (where F::CrossEntropyFuncOptions = nn::CrossEntropyLossOptions).
using MSELossOptions = functional::MSELossFuncOptions;
using L1LossOptions = functional::L1LossFuncOptions;
using SmoothL1LossOptions = functional::SmoothL1LossFuncOptions;
using HuberLossOptions = functional::HuberLossFuncOptions;
using NLLLossOptions = functional::NLLLossFuncOptions;
using CrossEntropyLossOptions = functional::CrossEntropyFuncOptions;
using BCELossOptions = functional::BinaryCrossEntropyFuncOptions;
using BCEWithLogitsLossOptions = functional::BinaryCrossEntropyWithLogitsFuncOptions;
using KLDivLossOptions = functional::KLDivFuncOptions;

/// max(0, -target * (input1 - input2) + margin).
struct MarginRankingLossOptions {
  MarginRankingLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT: implicit, as libtorch
  BRISK_ARG(double, margin) = 0.0;
  BRISK_ARG(Reduction, reduction);
};
/// input where target = 1, max(0, margin - input) where target = -1.
struct HingeEmbeddingLossOptions {
  HingeEmbeddingLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(double, margin) = 1.0;
  BRISK_ARG(Reduction, reduction);
};
/// log(1 + exp(-target * input)).
struct SoftMarginLossOptions {
  SoftMarginLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(Reduction, reduction);
};
/// Binary cross entropy of each class (weight: (C)), averaged over the classes.
struct MultiLabelSoftMarginLossOptions {
  MultiLabelSoftMarginLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(Tensor, weight);
  BRISK_ARG(Reduction, reduction);
};
/// Hinge loss between each target class (the leading entries of the target
/// row before its first -1) and each non-target class.
struct MultiLabelMarginLossOptions {
  MultiLabelMarginLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(Reduction, reduction);
};
/// Multi-class hinge loss: p is 1 or 2; weight: (C) per target class.
struct MultiMarginLossOptions {
  MultiMarginLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(int64_t, p) = 1;
  BRISK_ARG(double, margin) = 1.0;
  BRISK_ARG(Tensor, weight);
  BRISK_ARG(Reduction, reduction);
};
/// 1 - cos(x1, x2) where target = 1, max(0, cos(x1, x2) - margin) where -1.
struct CosineEmbeddingLossOptions {
  CosineEmbeddingLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(double, margin) = 0.0;
  BRISK_ARG(Reduction, reduction);
};
/// max(0, margin + d(a, p) - d(a, n)) with d the p-norm pairwise distance.
struct TripletMarginLossOptions {
  TripletMarginLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(double, margin) = 1.0;
  BRISK_ARG(double, p) = 2.0;
  BRISK_ARG(double, eps) = 1e-6;
  BRISK_ARG(bool, swap) = false;
  BRISK_ARG(Reduction, reduction);
};
/// As TripletMarginLoss with any distance (default: pairwise_distance).
struct TripletMarginWithDistanceLossOptions {
  using distance_function_t = std::function<Tensor(const Tensor&, const Tensor&)>;
  TripletMarginWithDistanceLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(std::optional<distance_function_t>, distance_function) = std::nullopt;
  BRISK_ARG(double, margin) = 1.0;
  BRISK_ARG(bool, swap) = false;
  BRISK_ARG(Reduction, reduction);
};
/// exp(input) - target * input (log_input), else input - target * log(input + eps);
/// full adds Stirling's term where target > 1.
struct PoissonNLLLossOptions {
  PoissonNLLLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(bool, log_input) = true;
  BRISK_ARG(bool, full) = false;
  BRISK_ARG(double, eps) = 1e-8;
  BRISK_ARG(Reduction, reduction);
};
/// 0.5 (log(var) + (input - target)^2 / var), var clamped at eps (PyTorch's
/// torch.nn.GaussianNLLLoss; libtorch has none).
struct GaussianNLLLossOptions {
  GaussianNLLLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(bool, full) = false;
  BRISK_ARG(double, eps) = 1e-6;
  BRISK_ARG(Reduction, reduction);
};

/// Connectionist temporal classification: blank is the blank class;
/// zero_infinity sets infinite losses (inputs too short for their targets)
/// and their gradients to 0.
struct CTCLossOptions {
  CTCLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT
  BRISK_ARG(int64_t, blank) = 0;
  BRISK_ARG(Reduction, reduction);
  BRISK_ARG(bool, zero_infinity) = false;
};

namespace functional {

using CTCLossFuncOptions = CTCLossOptions;
using MarginRankingLossFuncOptions = MarginRankingLossOptions;
using HingeEmbeddingLossFuncOptions = HingeEmbeddingLossOptions;
using SoftMarginLossFuncOptions = SoftMarginLossOptions;
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;
using MultilabelMarginLossFuncOptions = MultiLabelMarginLossOptions;
using MultiMarginLossFuncOptions = MultiMarginLossOptions;
using CosineEmbeddingLossFuncOptions = CosineEmbeddingLossOptions;
using TripletMarginLossFuncOptions = TripletMarginLossOptions;
using TripletMarginWithDistanceLossFuncOptions = TripletMarginWithDistanceLossOptions;
using PoissonNLLLossFuncOptions = PoissonNLLLossOptions;
using GaussianNLLLossFuncOptions = GaussianNLLLossOptions;

// pairwise_distance and cosine_similarity: brisk/nn/pixelshuffle.h.

/// input1, input2, target: one shape (or broadcast to one), target +-1.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& o = {});
/// target: +-1, the input's shape.
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& o = {});
/// target: +-1, the input's shape.
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& o = {});
/// input, target: (N, C) or (C); target in {0, 1}. kNone gives (N).
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& o = {});
/// input: (N, C) or (C); target: int64 class indices of the same shape,
/// each row's targets ended by the first -1. kNone gives (N).
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, const MultilabelMarginLossFuncOptions& o = {});
/// input: (N, C) or (C); target: int64 (N) or (). kNone gives (N).
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& o = {});
/// input1, input2: (N, D) or (D); target: (N) or () of +-1.
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& o = {});
/// anchor, positive, negative: (N, D) or (D).
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& o = {});
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& o = {});
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& o = {});
/// var: the input's shape, or one dim short of it, or with one dim of size 1
/// where the input's differs; entries >= 0.
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         const GaussianNLLLossFuncOptions& o = {});

/// log_probs: (T, N, C) log-probabilities (log_softmax output) or (T, C);
/// targets: (N, S) padded class indices, or all targets concatenated (1-d);
/// input_lengths, target_lengths: (N) integers (host values are read).
/// kMean divides each loss by its target length (at least 1), then averages
/// over the batch. A composite of the forward recursion in log space; the
/// gradient with respect to log_probs is PyTorch's, exp(log_probs) minus the
/// posterior (the exact one plus a term that the log_softmax before it
/// cancels).
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& o = {});

}  // namespace functional

// ---- modules ------------------------------------------------------------------------

/// A loss module of two inputs: forward(input, target) calls `Fn`.
#define BRISK_DETAIL_LOSS2(Name, Options)                                          \
  class Name##Impl : public Module {                                               \
   public:                                                                         \
    explicit Name##Impl(const Options& options = {});                              \
    Tensor forward(const Tensor& input, const Tensor& target);                     \
    Options options;                                                               \
  };                                                                               \
  BRISK_MODULE(Name)
/// A loss module of three inputs.
#define BRISK_DETAIL_LOSS3(Name, Options, A, B, C)                                 \
  class Name##Impl : public Module {                                               \
   public:                                                                         \
    explicit Name##Impl(const Options& options = {});                              \
    Tensor forward(const Tensor& A, const Tensor& B, const Tensor& C);             \
    Options options;                                                               \
  };                                                                               \
  BRISK_MODULE(Name)

BRISK_DETAIL_LOSS2(MSELoss, MSELossOptions);
BRISK_DETAIL_LOSS2(L1Loss, L1LossOptions);
BRISK_DETAIL_LOSS2(SmoothL1Loss, SmoothL1LossOptions);
BRISK_DETAIL_LOSS2(HuberLoss, HuberLossOptions);
/// `weight` is a registered buffer when given.
BRISK_DETAIL_LOSS2(NLLLoss, NLLLossOptions);
/// `weight` is a registered buffer when given.
BRISK_DETAIL_LOSS2(CrossEntropyLoss, CrossEntropyLossOptions);
/// `weight` is a registered buffer when given.
BRISK_DETAIL_LOSS2(BCELoss, BCELossOptions);
/// `weight` and `pos_weight` are registered buffers when given.
BRISK_DETAIL_LOSS2(BCEWithLogitsLoss, BCEWithLogitsLossOptions);
BRISK_DETAIL_LOSS2(KLDivLoss, KLDivLossOptions);
BRISK_DETAIL_LOSS2(HingeEmbeddingLoss, HingeEmbeddingLossOptions);
BRISK_DETAIL_LOSS2(SoftMarginLoss, SoftMarginLossOptions);
/// `weight` is a registered buffer when given.
BRISK_DETAIL_LOSS2(MultiLabelSoftMarginLoss, MultiLabelSoftMarginLossOptions);
BRISK_DETAIL_LOSS2(MultiLabelMarginLoss, MultiLabelMarginLossOptions);
/// `weight` is a registered buffer when given.
BRISK_DETAIL_LOSS2(MultiMarginLoss, MultiMarginLossOptions);
BRISK_DETAIL_LOSS2(PoissonNLLLoss, PoissonNLLLossOptions);
BRISK_DETAIL_LOSS3(MarginRankingLoss, MarginRankingLossOptions, input1, input2, target);
BRISK_DETAIL_LOSS3(CosineEmbeddingLoss, CosineEmbeddingLossOptions, input1, input2, target);
BRISK_DETAIL_LOSS3(TripletMarginLoss, TripletMarginLossOptions, anchor, positive, negative);
BRISK_DETAIL_LOSS3(TripletMarginWithDistanceLoss, TripletMarginWithDistanceLossOptions, anchor, positive, negative);
BRISK_DETAIL_LOSS3(GaussianNLLLoss, GaussianNLLLossOptions, input, target, var);

/// forward(log_probs, targets, input_lengths, target_lengths).
class CTCLossImpl : public Module {
 public:
  explicit CTCLossImpl(const CTCLossOptions& options = {}) : Module("CTCLoss"), options(options) {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths);
  CTCLossOptions options;
};
BRISK_MODULE(CTCLoss);

#undef BRISK_DETAIL_LOSS2
#undef BRISK_DETAIL_LOSS3

}  // namespace brisk::nn
