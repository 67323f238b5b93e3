// Activation modules of brisk::nn with libtorch's options, functionals and
// holders (torch::nn::LeakyReLU, F::leaky_relu, LeakyReLUOptions, ...).
// Each is an `XImpl` module and its holder `X`; they print as PyTorch does
// (`LeakyReLU(negative_slope=0.2, inplace=True)`). The functionals are
// compositions of brisk ops, so autograd and every backend come with them;
// gradients at kinks are PyTorch's (docs/porting.md, "Activations and losses").
#pragma once
#include <optional>
#include <string>

#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"

namespace brisk::nn {

// ---- options (libtorch's names and defaults) ---------------------------------------

struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT: implicit, as libtorch
  BRISK_ARG(bool, inplace);
};
struct ReLU6Options {
  ReLU6Options(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  BRISK_ARG(bool, inplace);
};
struct SELUOptions {
  SELUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  BRISK_ARG(bool, inplace);
};
struct LeakyReLUOptions {
  BRISK_ARG(double, negative_slope) = 1e-2;
  BRISK_ARG(bool, inplace) = false;
};
struct ELUOptions {
  BRISK_ARG(double, alpha) = 1.0;
  BRISK_ARG(bool, inplace) = false;
};
struct CELUOptions {
  BRISK_ARG(double, alpha) = 1.0;
  BRISK_ARG(bool, inplace) = false;
};
/// approximate: "none" (erf) or "tanh".
struct GELUOptions {
  BRISK_ARG(std::string, approximate) = "none";
};
struct GLUOptions {
  GLUOptions(int64_t dim = -1) : dim_(dim) {}  // NOLINT
  BRISK_ARG(int64_t, dim);
};
struct HardshrinkOptions {
  HardshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  BRISK_ARG(double, lambda);
};
struct SoftshrinkOptions {
  SoftshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  BRISK_ARG(double, lambda);
};
struct HardtanhOptions {
  BRISK_ARG(double, min_val) = -1.0;
  BRISK_ARG(double, max_val) = 1.0;
  BRISK_ARG(bool, inplace) = false;
};
struct HardswishOptions {
  HardswishOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  BRISK_ARG(bool, inplace);
};
struct HardsigmoidOptions {
  HardsigmoidOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  BRISK_ARG(bool, inplace);
};
/// Per-channel (num_parameters = C, channel dim 1) or shared (1) negative
/// slopes, initialized to `init`.
struct PReLUOptions {
  BRISK_ARG(int64_t, num_parameters) = 1;
  BRISK_ARG(double, init) = 0.25;
};
/// Negative slopes drawn from U(lower, upper) in training, (lower + upper) / 2 in eval.
struct RReLUOptions {
  BRISK_ARG(double, lower) = 1.0 / 8.0;
  BRISK_ARG(double, upper) = 1.0 / 3.0;
  BRISK_ARG(bool, inplace) = false;
};
struct SoftplusOptions {
  BRISK_ARG(double, beta) = 1.0;
  BRISK_ARG(double, threshold) = 20.0;
};
/// y = x where x > threshold, else value.
struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  BRISK_ARG(double, threshold);
  BRISK_ARG(double, value);
  BRISK_ARG(bool, inplace) = false;
};
struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  BRISK_ARG(int64_t, dim);
};
struct SoftminOptions {
  SoftminOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  BRISK_ARG(int64_t, dim);
};
struct LogSoftmaxOptions {
  LogSoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  BRISK_ARG(int64_t, dim);
};

namespace functional {

using ReLUFuncOptions = ReLUOptions;
using ReLU6FuncOptions = ReLU6Options;
using SELUFuncOptions = SELUOptions;
using LeakyReLUFuncOptions = LeakyReLUOptions;
using ELUFuncOptions = ELUOptions;
using CELUFuncOptions = CELUOptions;
using GELUFuncOptions = GELUOptions;
using GLUFuncOptions = GLUOptions;
using HardshrinkFuncOptions = HardshrinkOptions;
using SoftshrinkFuncOptions = SoftshrinkOptions;
using HardtanhFuncOptions = HardtanhOptions;
using HardswishFuncOptions = HardswishOptions;
using HardsigmoidFuncOptions = HardsigmoidOptions;
using SoftplusFuncOptions = SoftplusOptions;
using ThresholdFuncOptions = ThresholdOptions;
/// As RReLUOptions, with the mode: random slopes only when training.
struct RReLUFuncOptions {
  BRISK_ARG(double, lower) = 1.0 / 8.0;
  BRISK_ARG(double, upper) = 1.0 / 3.0;
  BRISK_ARG(bool, training) = false;
  BRISK_ARG(bool, inplace) = false;
};
/// dim, and the dtype the input is converted to first.
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  BRISK_ARG(int64_t, dim);
  BRISK_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};
struct SoftminFuncOptions {
  SoftminFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  BRISK_ARG(int64_t, dim);
  BRISK_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};
struct LogSoftmaxFuncOptions {
  LogSoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  BRISK_ARG(int64_t, dim);
  BRISK_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};

// With `inplace`, the result is written into the input and the input is
// returned (libtorch's `F::relu(x, F::ReLUFuncOptions(true))`).

/// max(x, 0) (the one-argument F::relu is in functional.h).
Tensor relu(const Tensor& x, const ReLUFuncOptions& o);
/// min(max(x, 0), 6); gradient 0 at 0 and 6 (hardtanh's).
Tensor relu6(const Tensor& x, const ReLU6FuncOptions& o = {});
/// x where x > 0, else negative_slope * x (slope at 0).
Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& o = {});
/// x where x > 0, else alpha * (exp(x) - 1).
Tensor elu(const Tensor& x, const ELUFuncOptions& o = {});
/// scale * elu(x, alpha) with PyTorch's constants (alpha 1.6732632423543772,
/// scale 1.0507009873554805).
Tensor selu(const Tensor& x, const SELUFuncOptions& o = {});
/// x where x > 0, else alpha * (exp(x / alpha) - 1); alpha != 0.
Tensor celu(const Tensor& x, const CELUFuncOptions& o = {});
Tensor gelu(const Tensor& x, const GELUFuncOptions& o);
/// a * sigmoid(b) of the halves a, b of dim (which must have an even size).
Tensor glu(const Tensor& x, const GLUFuncOptions& o = {});
/// 0 where -lambda <= x <= lambda, else x (lambda >= 0).
Tensor hardshrink(const Tensor& x, const HardshrinkFuncOptions& o = {});
/// x - lambda above lambda, x + lambda below -lambda, else 0 (lambda >= 0).
Tensor softshrink(const Tensor& x, const SoftshrinkFuncOptions& o = {});
/// clamp(x, min_val, max_val); gradient 0 at and beyond the bounds.
Tensor hardtanh(const Tensor& x, const HardtanhFuncOptions& o = {});
/// x * relu6(x + 3) / 6.
Tensor hardswish(const Tensor& x, const HardswishFuncOptions& o = {});
/// relu6(x + 3) / 6.
Tensor hardsigmoid(const Tensor& x, const HardsigmoidFuncOptions& o = {});
/// log(sigmoid(x)), finite for any x.
Tensor logsigmoid(const Tensor& x);
/// x / (1 + |x|).
Tensor softsign(const Tensor& x);
/// x - tanh(x).
Tensor tanhshrink(const Tensor& x);
/// log(1 + exp(beta x)) / beta, or x where beta x > threshold.
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o = {});
/// x where x > threshold, else value.
Tensor threshold(const Tensor& x, const ThresholdFuncOptions& o);
/// x where x > 0, else weight * x; weight: (1), or (C) along dim 1 of an
/// input of 2 or more dims. Differentiable in both.
Tensor prelu(const Tensor& x, const Tensor& weight);
/// Random slopes U(lower, upper) where x <= 0 when training (brisk's
/// generator), else leaky_relu with slope (lower + upper) / 2.
Tensor rrelu(const Tensor& x, const RReLUFuncOptions& o = {});
Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& o);
/// softmax(-x).
Tensor softmin(const Tensor& x, const SoftminFuncOptions& o);
Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& o);

}  // namespace functional

// ---- modules ------------------------------------------------------------------------

class ReLUImpl : public Module {
 public:
  explicit ReLUImpl(const ReLUOptions& options = {}) : Module("ReLU"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  ReLUOptions options;
};
BRISK_MODULE(ReLU);

class ReLU6Impl : public Module {
 public:
  explicit ReLU6Impl(const ReLU6Options& options = {}) : Module("ReLU6"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  ReLU6Options options;
};
BRISK_MODULE(ReLU6);

class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : Module("LeakyReLU"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  LeakyReLUOptions options;
};
BRISK_MODULE(LeakyReLU);

class ELUImpl : public Module {
 public:
  explicit ELUImpl(const ELUOptions& options = {}) : Module("ELU"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  ELUOptions options;
};
BRISK_MODULE(ELU);

class SELUImpl : public Module {
 public:
  explicit SELUImpl(const SELUOptions& options = {}) : Module("SELU"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  SELUOptions options;
};
BRISK_MODULE(SELU);

class CELUImpl : public Module {
 public:
  explicit CELUImpl(const CELUOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  CELUOptions options;
};
BRISK_MODULE(CELU);

/// approximate: "none" (erf) or "tanh"; `nn::GELU("tanh")` or
/// `nn::GELU(nn::GELUOptions().approximate("tanh"))`.
class GELUImpl : public Module {
 public:
  explicit GELUImpl(const GELUOptions& options = {});
  explicit GELUImpl(std::string approximate) : GELUImpl(GELUOptions().approximate(std::move(approximate))) {}
  explicit GELUImpl(const char* approximate) : GELUImpl(std::string(approximate)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  GELUOptions options;
};
BRISK_MODULE(GELU);

class GLUImpl : public Module {
 public:
  explicit GLUImpl(const GLUOptions& options = {}) : Module("GLU"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  GLUOptions options;
};
BRISK_MODULE(GLU);

class SiLUImpl : public Module {
 public:
  SiLUImpl() : Module("SiLU") {}
  Tensor forward(const Tensor& x) override;
};
BRISK_MODULE(SiLU);

/// x * tanh(softplus(x)) (torch.nn.Mish).
class MishImpl : public Module {
 public:
  explicit MishImpl(bool inplace = false) : Module("Mish"), inplace(inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  bool inplace;
};
BRISK_MODULE(Mish);

class TanhImpl : public Module {
 public:
  TanhImpl() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override;
};
BRISK_MODULE(Tanh);

class SigmoidImpl : public Module {
 public:
  SigmoidImpl() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
};
BRISK_MODULE(Sigmoid);

class LogSigmoidImpl : public Module {
 public:
  LogSigmoidImpl() : Module("LogSigmoid") {}
  Tensor forward(const Tensor& x) override;
};
BRISK_MODULE(LogSigmoid);

class SoftsignImpl : public Module {
 public:
  SoftsignImpl() : Module("Softsign") {}
  Tensor forward(const Tensor& x) override;
};
BRISK_MODULE(Softsign);

class TanhshrinkImpl : public Module {
 public:
  TanhshrinkImpl() : Module("Tanhshrink") {}
  Tensor forward(const Tensor& x) override;
};
BRISK_MODULE(Tanhshrink);

class HardshrinkImpl : public Module {
 public:
  explicit HardshrinkImpl(const HardshrinkOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  HardshrinkOptions options;
};
BRISK_MODULE(Hardshrink);

class SoftshrinkImpl : public Module {
 public:
  explicit SoftshrinkImpl(const SoftshrinkOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  SoftshrinkOptions options;
};
BRISK_MODULE(Softshrink);

class HardtanhImpl : public Module {
 public:
  explicit HardtanhImpl(const HardtanhOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  HardtanhOptions options;
};
BRISK_MODULE(Hardtanh);

class HardswishImpl : public Module {
 public:
  explicit HardswishImpl(const HardswishOptions& options = {}) : Module("Hardswish"), options(options) {}
  Tensor forward(const Tensor& x) override;
  HardswishOptions options;
};
BRISK_MODULE(Hardswish);

class HardsigmoidImpl : public Module {
 public:
  explicit HardsigmoidImpl(const HardsigmoidOptions& options = {}) : Module("Hardsigmoid"), options(options) {}
  Tensor forward(const Tensor& x) override;
  HardsigmoidOptions options;
};
BRISK_MODULE(Hardsigmoid);

/// Learnable negative slopes: `weight` (num_parameters), init 0.25.
class PReLUImpl : public Module {
 public:
  explicit PReLUImpl(const PReLUOptions& options = {}, TensorOptions opts = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset();
  PReLUOptions options;
  Tensor weight;  ///< (num_parameters)
};
BRISK_MODULE(PReLU);

/// Random slopes in training mode, their mean in eval mode.
class RReLUImpl : public Module {
 public:
  explicit RReLUImpl(const RReLUOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  RReLUOptions options;
};
BRISK_MODULE(RReLU);

class SoftplusImpl : public Module {
 public:
  explicit SoftplusImpl(const SoftplusOptions& options = {}) : Module("Softplus"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  SoftplusOptions options;
};
BRISK_MODULE(Softplus);

class ThresholdImpl : public Module {
 public:
  ThresholdImpl(double threshold, double value) : ThresholdImpl(ThresholdOptions(threshold, value)) {}
  explicit ThresholdImpl(const ThresholdOptions& options) : Module("Threshold"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  ThresholdOptions options;
};
BRISK_MODULE(Threshold);

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : SoftmaxImpl(SoftmaxOptions(dim)) {}
  explicit SoftmaxImpl(const SoftmaxOptions& options) : Module("Softmax"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  SoftmaxOptions options;
};
BRISK_MODULE(Softmax);

class SoftminImpl : public Module {
 public:
  explicit SoftminImpl(int64_t dim) : SoftminImpl(SoftminOptions(dim)) {}
  explicit SoftminImpl(const SoftminOptions& options) : Module("Softmin"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  SoftminOptions options;
};
BRISK_MODULE(Softmin);

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : LogSoftmaxImpl(LogSoftmaxOptions(dim)) {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options) : Module("LogSoftmax"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  LogSoftmaxOptions options;
};
BRISK_MODULE(LogSoftmax);

/// Softmax over the channels of (C, H, W) or (N, C, H, W) input (dim -3).
class Softmax2dImpl : public Module {
 public:
  Softmax2dImpl() : Module("Softmax2d") {}
  Tensor forward(const Tensor& x) override;
};
BRISK_MODULE(Softmax2d);

}  // namespace brisk::nn
