// Normalization layers of brisk::nn: batch normalization (with running
// statistics), instance, group and local response normalization and
// RMSNorm, as functions and modules (LayerNorm is in layers.h).
//
//   brisk::nn::BatchNorm2d bn(32);   // weight, bias, running stats
//   brisk::Tensor y = bn->forward(x);                          // batch statistics in train()
//   bn->eval();                                                // running statistics in eval()
//   brisk::Tensor z = brisk::nn::F::group_norm(x, 4, w, b);
//
// Inputs are (N, C, *) with C at dim 1; a channels_last input gives a
// channels_last output. See docs/design/pooling_norm.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"

namespace brisk::nn {

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  BRISK_ARG(int64_t, num_features);
  BRISK_ARG(double, eps) = 1e-5;
  /// running = (1 - momentum) * running + momentum * batch statistic;
  /// nullopt: cumulative moving average (momentum 1 / num_batches_tracked).
  BRISK_ARG(std::optional<double>, momentum) = 0.1;
  /// Learnable per-channel weight (ones) and bias (zeros).
  BRISK_ARG(bool, affine) = true;
  /// Keep running_mean, running_var and num_batches_tracked (used in eval);
  /// without them batch statistics are used in both modes.
  BRISK_ARG(bool, track_running_stats) = true;
};

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  BRISK_ARG(int64_t, num_groups);
  BRISK_ARG(int64_t, num_channels);
  BRISK_ARG(double, eps) = 1e-5;
  BRISK_ARG(bool, affine) = true;
};

/// Options of InstanceNorm1d/2d/3d (libtorch's InstanceNormOptions): no
/// affine parameters and no running statistics by default.
struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}
  BRISK_ARG(int64_t, num_features);
  BRISK_ARG(double, eps) = 1e-5;
  BRISK_ARG(double, momentum) = 0.1;
  BRISK_ARG(bool, affine) = false;
  BRISK_ARG(bool, track_running_stats) = false;
};

/// Options of RMSNorm (libtorch's RMSNormOptions).
struct RMSNormOptions {
  RMSNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  BRISK_ARG(std::vector<int64_t>, normalized_shape);
  BRISK_ARG(std::optional<double>, eps);
  BRISK_ARG(bool, elementwise_affine) = true;
};

/// Options of LocalResponseNorm (PyTorch's defaults).
struct LocalResponseNormOptions {
  LocalResponseNormOptions(int64_t size) : size_(size) {}
  BRISK_ARG(int64_t, size);
  BRISK_ARG(double, alpha) = 1e-4;
  BRISK_ARG(double, beta) = 0.75;
  BRISK_ARG(double, k) = 1.0;
};

/// Options of CrossMapLRN2d (libtorch's legacy Lua-torch layer).
struct CrossMapLRN2dOptions {
  CrossMapLRN2dOptions(int64_t size) : size_(size) {}  // NOLINT
  BRISK_ARG(int64_t, size);
  BRISK_ARG(double, alpha) = 1e-4;
  BRISK_ARG(double, beta) = 0.75;
  BRISK_ARG(int64_t, k) = 1;
};

namespace functional {

struct InstanceNormFuncOptions {
  BRISK_ARG(Tensor, running_mean);
  BRISK_ARG(Tensor, running_var);
  BRISK_ARG(Tensor, weight);
  BRISK_ARG(Tensor, bias);
  /// Normalize with each instance's statistics (else with the running ones).
  BRISK_ARG(bool, use_input_stats) = true;
  BRISK_ARG(double, momentum) = 0.1;
  BRISK_ARG(double, eps) = 1e-5;
};

using LocalResponseNormFuncOptions = LocalResponseNormOptions;

struct NormalizeFuncOptions {
  BRISK_ARG(double, p) = 2.0;
  BRISK_ARG(int64_t, dim) = 1;
  BRISK_ARG(double, eps) = 1e-12;
};

/// x / max(||x||_p, eps) along dim, as torch.nn.functional.normalize: the
/// norm (keepdim) clamped by a differentiable clamp_min, so a vector shorter
/// than eps is divided by eps and its norm gets no gradient.
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& o = {});

/// Instance normalization of an (N, C, *) input: each (sample, channel)
/// normalized over its positions (biased variance), then weight (C) * x +
/// bias (C). With use_input_stats and running stats given, they are updated
/// in place with the batch's average of the per-instance statistics
/// (unbiased variance), as PyTorch; without use_input_stats the running
/// statistics normalize.
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& o = {});

/// Local response normalization across channels of an (N, C, *) input:
/// x / (k + alpha / size * sum of x^2 over the `size` neighbouring channels)^beta
/// (zero padded: size / 2 channels before, (size - 1) / 2 after).
Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& o);
Tensor local_response_norm(const Tensor& input, int64_t size, double alpha = 1e-4, double beta = 0.75,
                           double k = 1.0);

struct BatchNormFuncOptions {
  BRISK_ARG(Tensor, weight);
  BRISK_ARG(Tensor, bias);
  BRISK_ARG(bool, training) = false;
  /// Must be set when training updates running statistics (the cumulative
  /// average needs a batch count: nn::BatchNorm* keep one).
  BRISK_ARG(std::optional<double>, momentum) = 0.1;
  BRISK_ARG(double, eps) = 1e-5;
};

struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}
  BRISK_ARG(int64_t, num_groups);
  BRISK_ARG(Tensor, weight);
  BRISK_ARG(Tensor, bias);
  BRISK_ARG(double, eps) = 1e-5;
};

/// Batch normalization of an (N, C, *) input over every dim but C.
/// training: normalizes with the batch mean and biased variance and, when
/// running_mean / running_var are given, updates them in place with
/// `momentum` (the variance with the unbiased estimate, n / (n - 1)).
/// Otherwise (eval): normalizes with running_mean / running_var.
/// weight, bias: (C) or undefined; running stats: (C) or both undefined
/// (then training must be true).
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  std::optional<double> momentum = 0.1, double eps = 1e-5);
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o);

/// Group normalization of an (N, C, *) input: the C channels form
/// num_groups groups, each (sample, group) normalized over its channels and
/// positions (biased variance), then weight (C) * x + bias (C).
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o);

}  // namespace functional

/// The shared state of BatchNorm1d/2d/3d: parameters weight and bias
/// (affine), buffers running_mean, running_var and num_batches_tracked
/// (int64 scalar) when track_running_stats, so that state_dict() has
/// PyTorch's keys.
class BatchNormBase : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  /// running_mean = 0, running_var = 1, num_batches_tracked = 0.
  void reset_running_stats();
  /// reset_running_stats(), weight = 1, bias = 0.
  void reset_parameters();

  BatchNormOptions options;
  Tensor weight, bias;                                    ///< (C), undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  ///< undefined unless track_running_stats

 protected:
  BatchNormBase(std::string type_name, const BatchNormOptions& options, TensorOptions opts);
  /// Throws unless x has a dim count this module accepts.
  virtual void check_input_dim(const Tensor& x) const = 0;
};

/// Input (N, C) or (N, C, L).
class BatchNorm1dImpl : public BatchNormBase {
 public:
  explicit BatchNorm1dImpl(const BatchNormOptions& options, TensorOptions opts = {});
  explicit BatchNorm1dImpl(int64_t num_features) : BatchNorm1dImpl(BatchNormOptions(num_features)) {}

 protected:
  void check_input_dim(const Tensor& x) const override;
};
BRISK_MODULE(BatchNorm1d);

/// Input (N, C, H, W), contiguous or channels_last.
class BatchNorm2dImpl : public BatchNormBase {
 public:
  explicit BatchNorm2dImpl(const BatchNormOptions& options, TensorOptions opts = {});
  explicit BatchNorm2dImpl(int64_t num_features) : BatchNorm2dImpl(BatchNormOptions(num_features)) {}

 protected:
  void check_input_dim(const Tensor& x) const override;
};
BRISK_MODULE(BatchNorm2d);

/// Input (N, C, D, H, W).
class BatchNorm3dImpl : public BatchNormBase {
 public:
  explicit BatchNorm3dImpl(const BatchNormOptions& options, TensorOptions opts = {});
  explicit BatchNorm3dImpl(int64_t num_features) : BatchNorm3dImpl(BatchNormOptions(num_features)) {}

 protected:
  void check_input_dim(const Tensor& x) const override;
};
BRISK_MODULE(BatchNorm3d);

/// GroupNorm(num_groups, num_channels): weight (ones) and bias (zeros) of
/// shape (C) when affine.
class GroupNormImpl : public Module {
 public:
  explicit GroupNormImpl(const GroupNormOptions& options, TensorOptions opts = {});
  GroupNormImpl(int64_t num_groups, int64_t num_channels) : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  GroupNormOptions options;
  Tensor weight, bias;
};
BRISK_MODULE(GroupNorm);

/// RMSNorm(normalized_shape, eps, elementwise_affine), as torch.nn.RMSNorm:
/// F::rms_norm over the trailing dims normalized_shape with a weight (ones)
/// of that shape when elementwise_affine. eps = nullopt: the machine epsilon
/// of the input's compute dtype (see F::rms_norm).
class RMSNormImpl : public Module {
 public:
  explicit RMSNormImpl(const RMSNormOptions& options, TensorOptions opts = {})
      : RMSNormImpl(options.normalized_shape(), options.eps(), options.elementwise_affine(), opts) {}
  explicit RMSNormImpl(std::vector<int64_t> normalized_shape, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true, TensorOptions opts = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  /// weight = 1.
  void reset_parameters();

  std::vector<int64_t> normalized_shape;
  std::optional<double> eps;
  bool elementwise_affine;
  Tensor weight;  ///< normalized_shape, undefined unless elementwise_affine
};
BRISK_MODULE(RMSNorm);

/// The shared state of InstanceNorm1d/2d/3d: weight (ones) and bias (zeros)
/// of shape (C) when affine; running_mean, running_var and
/// num_batches_tracked when track_running_stats (used in eval()).
class InstanceNormBase : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_running_stats();
  void reset_parameters();

  InstanceNormOptions options;
  Tensor weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;

 protected:
  InstanceNormBase(std::string type_name, int64_t spatial_dims, const InstanceNormOptions& options, TensorOptions opts);
  int64_t spatial_dims_;
};

/// Input (N, C, L) or unbatched (C, L).
class InstanceNorm1dImpl : public InstanceNormBase {
 public:
  explicit InstanceNorm1dImpl(const InstanceNormOptions& options, TensorOptions opts = {})
      : InstanceNormBase("InstanceNorm1d", 1, options, opts) {}
  explicit InstanceNorm1dImpl(int64_t num_features) : InstanceNorm1dImpl(InstanceNormOptions(num_features)) {}
};
BRISK_MODULE(InstanceNorm1d);

/// Input (N, C, H, W) or unbatched (C, H, W).
class InstanceNorm2dImpl : public InstanceNormBase {
 public:
  explicit InstanceNorm2dImpl(const InstanceNormOptions& options, TensorOptions opts = {})
      : InstanceNormBase("InstanceNorm2d", 2, options, opts) {}
  explicit InstanceNorm2dImpl(int64_t num_features) : InstanceNorm2dImpl(InstanceNormOptions(num_features)) {}
};
BRISK_MODULE(InstanceNorm2d);

/// Input (N, C, D, H, W) or unbatched (C, D, H, W).
class InstanceNorm3dImpl : public InstanceNormBase {
 public:
  explicit InstanceNorm3dImpl(const InstanceNormOptions& options, TensorOptions opts = {})
      : InstanceNormBase("InstanceNorm3d", 3, options, opts) {}
  explicit InstanceNorm3dImpl(int64_t num_features) : InstanceNorm3dImpl(InstanceNormOptions(num_features)) {}
};
BRISK_MODULE(InstanceNorm3d);

/// LocalResponseNorm(2): F::local_response_norm; no parameters.
class LocalResponseNormImpl : public Module {
 public:
  explicit LocalResponseNormImpl(const LocalResponseNormOptions& options);
  explicit LocalResponseNormImpl(int64_t size) : LocalResponseNormImpl(LocalResponseNormOptions(size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  LocalResponseNormOptions options;
};
BRISK_MODULE(LocalResponseNorm);

/// CrossMapLRN2d(size): libtorch's cross-channel LRN of an (N, C, H, W)
/// input, x * (k + alpha / size * window sum of x^2)^-beta, with the
/// channel windows of its running-sum algorithm (see normalization.cpp).
class CrossMapLRN2dImpl : public Module {
 public:
  explicit CrossMapLRN2dImpl(const CrossMapLRN2dOptions& options);
  explicit CrossMapLRN2dImpl(int64_t size) : CrossMapLRN2dImpl(CrossMapLRN2dOptions(size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  CrossMapLRN2dOptions options;
};
BRISK_MODULE(CrossMapLRN2d);

}  // namespace brisk::nn
