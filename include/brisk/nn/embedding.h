// EmbeddingBag of brisk::nn (nn::Embedding is in layers.h): sums, means or
// maxima of bags of embeddings, as F::embedding_bag and the module.
//
//   brisk::nn::EmbeddingBag bag(brisk::nn::EmbeddingBagOptions(10, 3).mode(brisk::nn::kSum));
//   brisk::Tensor y = bag(indices, offsets);                 // (bags, 3)
//   auto pre = brisk::nn::EmbeddingBag::from_pretrained(w);  // mean, frozen
//
// Composed of index_select, a gather of the bags into a padded (B, Lmax, D)
// block, and a masked sum or max, so autograd gives the gradients.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "brisk/nn/functional.h"
#include "brisk/nn/layers.h"
#include "brisk/nn/module.h"

namespace brisk::nn {

/// How EmbeddingBag reduces a bag: kSum, kMean (the Reduction constants) or kMax.
struct EmbeddingBagMode {
  enum class Kind : int8_t { Sum, Mean, Max };
  constexpr EmbeddingBagMode(Kind k) : kind(k) {}  // NOLINT: implicit, for kMax
  EmbeddingBagMode(Reduction r);                   // NOLINT: implicit, for kSum and kMean
  Kind kind;
  bool operator==(const EmbeddingBagMode& o) const { return kind == o.kind; }
};
inline constexpr EmbeddingBagMode::Kind kMax = EmbeddingBagMode::Kind::Max;
/// "sum", "mean" or "max".
const char* embedding_bag_mode_name(EmbeddingBagMode m);

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  BRISK_ARG(int64_t, num_embeddings);
  BRISK_ARG(int64_t, embedding_dim);
  BRISK_ARG(std::optional<double>, max_norm);
  BRISK_ARG(double, norm_type) = 2.0;
  /// Not supported: brisk refuses true.
  BRISK_ARG(bool, scale_grad_by_freq) = false;
  BRISK_ARG(EmbeddingBagMode, mode) = kMean;
  /// Not supported (no sparse gradients): brisk refuses true.
  BRISK_ARG(bool, sparse) = false;
  BRISK_ARG(Tensor, _weight);
  /// offsets has one more entry: the end of the last bag.
  BRISK_ARG(bool, include_last_offset) = false;
  /// Entries equal to it are left out of their bag (nor counted by the mean).
  BRISK_ARG(std::optional<int64_t>, padding_idx);
};

struct EmbeddingBagFromPretrainedOptions {
  BRISK_ARG(bool, freeze) = true;
  BRISK_ARG(std::optional<double>, max_norm);
  BRISK_ARG(double, norm_type) = 2.0;
  BRISK_ARG(bool, scale_grad_by_freq) = false;
  BRISK_ARG(EmbeddingBagMode, mode) = kMean;
  BRISK_ARG(bool, sparse) = false;
  BRISK_ARG(bool, include_last_offset) = false;
  BRISK_ARG(std::optional<int64_t>, padding_idx);
};

namespace functional {

/// int64 class indices -> int64 one-hot vectors: shape tensor.shape +
/// [num_classes], as torch.nn.functional.one_hot. num_classes = -1 takes the
/// largest index + 1 (an empty input then needs num_classes > 0). Indices
/// must be int64, non-negative and smaller than num_classes.
Tensor one_hot(const Tensor& tensor, int64_t num_classes = -1);

struct EmbeddingBagFuncOptions {
  /// Start of each bag in a 1-D input (must start at 0); undefined for a 2-D
  /// input (each row a bag).
  BRISK_ARG(Tensor, offsets);
  BRISK_ARG(std::optional<double>, max_norm);
  BRISK_ARG(double, norm_type) = 2.0;
  BRISK_ARG(bool, scale_grad_by_freq) = false;
  BRISK_ARG(EmbeddingBagMode, mode) = kMean;
  BRISK_ARG(bool, sparse) = false;
  /// A weight per input entry (mode sum only).
  BRISK_ARG(Tensor, per_sample_weights);
  BRISK_ARG(bool, include_last_offset) = false;
  BRISK_ARG(std::optional<int64_t>, padding_idx);
};

/// (bags, embedding_dim): per bag the sum, mean or max of weight's rows at
/// its indices (zeros for an empty bag).
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& o = {});

}  // namespace functional

class EmbeddingBagImpl : public Module {
 public:
  explicit EmbeddingBagImpl(const EmbeddingBagOptions& options, TensorOptions opts = {});
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  /// input: 2-D (bags, L), or 1-D with offsets; per_sample_weights: input's shape (mode sum).
  Tensor forward(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {});
  std::string extra_repr() const override;
  void reset_parameters();
  EmbeddingBagOptions options;
  Tensor weight;  ///< (num_embeddings, embedding_dim), N(0, 1) at init
};

class EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder<EmbeddingBagImpl>::ModuleHolder;
  using Impl [[maybe_unused]] = EmbeddingBagImpl;
  /// An EmbeddingBag whose weight is `embeddings` (2-D), shared.
  static EmbeddingBag from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options = {});
};

}  // namespace brisk::nn
