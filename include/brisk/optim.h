// brisk::optim: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS) with
// PyTorch's update rules and libtorch's API, and learning-rate schedulers.
//
//   optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-3).weight_decay(0.01));
//   for (...) { opt.zero_grad(); loss.backward(); opt.step(); }
//
// Each optimizer has three implementations (see docs/design/optim.md):
// Impl::ForLoop (one tensor at a time with brisk ops: the reference),
// Impl::Foreach (each step of the update as one foreach op over the list) and
// Impl::Fused (the default: the whole update in one pass over memory).
#pragma once
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "brisk/tensor.h"

namespace brisk::optim {

/// How an optimizer runs its update.
enum class Impl : int8_t {
  ForLoop,  ///< one parameter at a time, one brisk op per arithmetic step
  Foreach,  ///< one foreach op per arithmetic step over all parameters
  Fused,    ///< one pass over memory per chunk for the whole update (default)
};
const char* impl_name(Impl impl);

/// Declares an option `name` of type T with a chainable setter and a getter,
/// as libtorch's TORCH_ARG: `AdamOptions(1e-3).eps(1e-6).amsgrad(true)`.
#define BRISK_OPTIM_ARG(T, name, init)               \
 public:                                             \
  auto& name(const T& v) {                           \
    name##_ = v;                                     \
    return *this;                                    \
  }                                                  \
  const T& name() const { return name##_; }          \
                                                     \
 private:                                            \
  T name##_ = init;                                  \
                                                     \
 public:

/// Options of a param group. The numeric options are also exposed by name
/// (values()/set_value()) for state_dict.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  /// (name, value) of every option; bools and enums as numbers.
  virtual std::vector<std::pair<std::string, double>> values() const = 0;
  /// Sets the option `name` (an unknown name is an error).
  virtual void set_value(const std::string& name, double v) = 0;
};

/// A list of parameters sharing options. A group added without options
/// takes the optimizer's defaults.
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT: implicit as libtorch
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& o)
      : params_(o.params_), options_(o.options_ ? o.options_->clone() : nullptr), initial_lr_(o.initial_lr_) {}
  OptimizerParamGroup& operator=(const OptimizerParamGroup& o) {
    params_ = o.params_;
    options_ = o.options_ ? o.options_->clone() : nullptr;
    initial_lr_ = o.initial_lr_;
    return *this;
  }
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options() { return *options_; }
  const OptimizerOptions& options() const { return *options_; }
  void set_options(std::unique_ptr<OptimizerOptions> o) { options_ = std::move(o); }
  double lr() const { return options_->get_lr(); }
  void set_lr(double lr) { options_->set_lr(lr); }
  /// The lr when the first scheduler attached (PyTorch's group["initial_lr"]); < 0 if none yet.
  double initial_lr() const { return initial_lr_; }
  void set_initial_lr(double v) { initial_lr_ = v; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  double initial_lr_ = -1;
};

/// Base of per-parameter optimizer state (libtorch's OptimizerParamState).
class OptimizerParamState {
 public:
  virtual ~OptimizerParamState() = default;
  /// A copy sharing the tensors (as libtorch's clone).
  virtual std::unique_ptr<OptimizerParamState> clone() const = 0;
};

/// A state field with libtorch's accessors (`s.exp_avg()`, `s.step(3)`);
/// the getter of a non-const state returns a mutable reference.
#define BRISK_STATE_ARG(T, name, init)              \
 public:                                            \
  T& name() { return name##_; }                     \
  const T& name() const { return name##_; }         \
  auto& name(const T& v) {                          \
    name##_ = v;                                    \
    return *this;                                   \
  }                                                 \
                                                    \
 private:                                           \
  T name##_ = init;                                 \
                                                    \
 public:

/// Per-parameter state, one class for the optimizers that keep state per
/// parameter (libtorch has one class each: SGDParamState, AdamParamState,
/// ... are aliases of this one, so `static_cast<AdamParamState&>(*opt.state()[key])`
/// works as in libtorch). Which tensors are defined depends on the
/// optimizer: SGD momentum_buffer; Adam/AdamW exp_avg, exp_avg_sq
/// (max_exp_avg_sq with amsgrad); RMSprop square_avg (momentum_buffer,
/// grad_avg); Adagrad sum. LBFGS keeps its state in the optimizer
/// (LBFGS::lbfgs_state()).
class ParamState : public OptimizerParamState {
  BRISK_STATE_ARG(int64_t, step, 0)
  BRISK_STATE_ARG(Tensor, exp_avg, {})
  BRISK_STATE_ARG(Tensor, exp_avg_sq, {})
  BRISK_STATE_ARG(Tensor, max_exp_avg_sq, {})
  BRISK_STATE_ARG(Tensor, momentum_buffer, {})
  BRISK_STATE_ARG(Tensor, square_avg, {})
  BRISK_STATE_ARG(Tensor, grad_avg, {})
  BRISK_STATE_ARG(Tensor, sum, {})
  /// Capturable Adam's step count: a float32 0-dim tensor on the parameter's
  /// device (PyTorch's state["step"] tensor), counted on the device; step()
  /// is then stale and state_dict() reads this one (Note [Capturable Adam]).
  BRISK_STATE_ARG(Tensor, step_tensor, {})
 public:
  std::unique_ptr<OptimizerParamState> clone() const override { return std::make_unique<ParamState>(*this); }
};
#undef BRISK_STATE_ARG
using SGDParamState = ParamState;
using AdamParamState = ParamState;
using AdamWParamState = ParamState;
using RMSpropParamState = ParamState;
using AdagradParamState = ParamState;

/// The optimizer's state by parameter: key `p.impl()` (libtorch's
/// `p.unsafeGetTensorImpl()`), values ParamState.
using ParamStateMap = std::unordered_map<void*, std::unique_ptr<OptimizerParamState>>;

/// A flat, serializable state dict (brisk::io can save it as safetensors):
///   "state.<i>.step"                   0-dim float64 (i: index of the parameter
///   "state.<i>.exp_avg" (and the other  over all groups, in order)
///    ParamState tensors)
///   "param_groups.<g>.<option>"        0-dim float64
///   "param_groups.<g>.params"          1-D int64: the indices i of its parameters
using StateDict = std::map<std::string, Tensor>;

using LossClosure = std::function<Tensor()>;

/// Base of all optimizers.
class Optimizer {
 public:
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  /// Adds a group (options default to the optimizer's); checks its parameters.
  void add_param_group(const OptimizerParamGroup& group);
  /// Sets every gradient to none (default) or, with set_to_none = false, to zero.
  void zero_grad(bool set_to_none = true);
  /// One update of every parameter with a gradient (under NoGradGuard).
  /// A closure, if given, is called first with grad mode on; its loss is
  /// returned (libtorch's `optimizer.step(closure)`). LBFGS requires one.
  virtual Tensor step(LossClosure closure = nullptr);

  std::vector<OptimizerParamGroup>& param_groups() { return groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return groups_; }
  /// The options a group added without options gets (libtorch's defaults()).
  OptimizerOptions& defaults() { return *defaults_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  /// All parameters of all groups, in order.
  std::vector<Tensor> parameters() const;
  size_t size() const;
  /// State of a parameter (created empty on first use).
  ParamState& state(const Tensor& param);
  bool has_state(const Tensor& param) const { return state_.count(param.impl()) != 0; }
  /// All states, keyed by `p.impl()` (libtorch's `optimizer.state()`).
  ParamStateMap& state() noexcept { return state_; }
  const ParamStateMap& state() const noexcept { return state_; }

  virtual StateDict state_dict() const;
  /// Restores state and group options saved by state_dict() from an optimizer
  /// of the same kind with the same group sizes (tensors are copied).
  virtual void load_state_dict(const StateDict& dict);

  /// "SGD", "Adam", ...: the name errors start with.
  const char* name() const { return name_; }

  /// Whether the next step() can take a GradScaler's scale and inf flag
  /// (set_amp_scaling) and apply them on the device, with no host read:
  /// fused kernels that unscale the gradients and skip the whole step when
  /// the flag is set (fused SGD; fused Adam/AdamW with capturable = true,
  /// whose step counts live on the device). GradScaler::step uses it.
  virtual bool supports_amp_scaling() const { return false; }
  /// For GradScaler::step: the next step() divides the gradients by
  /// grad_scale (a one-element float32 tensor, or undefined when they are
  /// unscaled already) and changes nothing when found_inf (one float32
  /// element) is nonzero. Only where supports_amp_scaling(); consumed by
  /// that step() (also when it throws).
  void set_amp_scaling(Tensor grad_scale, Tensor found_inf);

 protected:
  Optimizer(const char* name, std::unique_ptr<OptimizerOptions> defaults)
      : name_(name), defaults_(std::move(defaults)) {}
  /// Checks the defaults and adds the groups; called by the derived
  /// constructor (check_options is virtual).
  void init(const std::vector<OptimizerParamGroup>& groups);
  /// Throws brisk::Error for invalid options.
  virtual void check_options(const OptimizerOptions& o) const = 0;
  /// Updates one group; params are those with a defined gradient.
  virtual void step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) = 0;
  /// Why this optimizer's step cannot be captured in a CUDA graph (a host
  /// number that changes per step would be frozen in the graph), or null.
  /// step() raises it during a capture.
  virtual const char* capture_hazard() const { return nullptr; }

  /// Every group's parameters with a gradient pass `ok(group, param)`.
  bool all_params_with_grad(const std::function<bool(const OptimizerParamGroup&, const Tensor&)>& ok) const;

  const char* name_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<OptimizerParamGroup> groups_;
  ParamStateMap state_;
  /// set_amp_scaling's tensors for the step() in progress (undefined otherwise).
  Tensor amp_grad_scale_, amp_found_inf_;
};

// ---- SGD ----------------------------------------------------------------------------

class SGDOptions : public OptimizerOptions {
 public:
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: implicit as libtorch
  BRISK_OPTIM_ARG(double, lr, 0.0)
  BRISK_OPTIM_ARG(double, momentum, 0.0)
  BRISK_OPTIM_ARG(double, dampening, 0.0)
  BRISK_OPTIM_ARG(double, weight_decay, 0.0)
  BRISK_OPTIM_ARG(bool, nesterov, false)
  BRISK_OPTIM_ARG(bool, maximize, false)
  BRISK_OPTIM_ARG(Impl, impl, Impl::Fused)
 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<SGDOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> values() const override;
  void set_value(const std::string& name, double v) override;
};

/// Stochastic gradient descent with momentum (torch.optim.SGD).
class SGD : public Optimizer {
 public:
  SGD(std::vector<OptimizerParamGroup> groups, SGDOptions defaults);
  SGD(std::vector<Tensor> params, SGDOptions defaults) : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}
  bool supports_amp_scaling() const override;

 protected:
  void check_options(const OptimizerOptions& o) const override;
  void step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) override;
};

// ---- Adam and AdamW -------------------------------------------------------------------

using Betas = std::tuple<double, double>;

#define BRISK_ADAM_OPTIONS(Name, default_weight_decay)                                              \
  BRISK_OPTIM_ARG(double, lr, 1e-3)                                                                   \
  BRISK_OPTIM_ARG(Betas, betas, Betas(0.9, 0.999))                                                    \
  BRISK_OPTIM_ARG(double, eps, 1e-8)                                                                  \
  BRISK_OPTIM_ARG(double, weight_decay, default_weight_decay)                                         \
  BRISK_OPTIM_ARG(bool, amsgrad, false)                                                               \
  BRISK_OPTIM_ARG(bool, maximize, false)                                                              \
  BRISK_OPTIM_ARG(Impl, impl, Impl::Fused)                                                            \
  /* step counts on the device: no host number per step (CUDA graphs, sync-free GradScaler) */       \
  BRISK_OPTIM_ARG(bool, capturable, false)                                                            \
 public:                                                                                              \
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<Name>(*this); } \
  double get_lr() const override { return lr_; }                                                     \
  void set_lr(double lr) override { lr_ = lr; }                                                      \
  std::vector<std::pair<std::string, double>> values() const override;                              \
  void set_value(const std::string& name, double v) override;

/// Adam's options (weight decay is L2: added to the gradient).
class AdamOptions : public OptimizerOptions {
 public:
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit as libtorch
  BRISK_ADAM_OPTIONS(AdamOptions, 0.0)
};

/// AdamW's options: Adam's, with decoupled weight decay, 1e-2 by default.
class AdamWOptions : public OptimizerOptions {
 public:
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit as libtorch
  BRISK_ADAM_OPTIONS(AdamWOptions, 1e-2)
};
#undef BRISK_ADAM_OPTIONS

/// Adam (torch.optim.Adam): weight decay is L2 (added to the gradient).
class Adam : public Optimizer {
 public:
  Adam(std::vector<OptimizerParamGroup> groups, AdamOptions defaults = {});
  Adam(std::vector<Tensor> params, AdamOptions defaults = {})
      : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

 protected:
  Adam(const char* name, std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
       bool decoupled);
  void check_options(const OptimizerOptions& o) const override;
  void step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) override;
  const char* capture_hazard() const override;

 public:
  bool supports_amp_scaling() const override;

 protected:
  bool decoupled_;  ///< AdamW: p *= 1 - lr * weight_decay before the update
};

/// AdamW (torch.optim.AdamW): decoupled weight decay.
class AdamW : public Adam {
 public:
  AdamW(std::vector<OptimizerParamGroup> groups, AdamWOptions defaults = {});
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = {})
      : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}
};

// ---- RMSprop ---------------------------------------------------------------------------

class RMSpropOptions : public OptimizerOptions {
 public:
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit as libtorch
  BRISK_OPTIM_ARG(double, lr, 1e-2)
  BRISK_OPTIM_ARG(double, alpha, 0.99)
  BRISK_OPTIM_ARG(double, eps, 1e-8)
  BRISK_OPTIM_ARG(double, weight_decay, 0.0)
  BRISK_OPTIM_ARG(double, momentum, 0.0)
  BRISK_OPTIM_ARG(bool, centered, false)
  BRISK_OPTIM_ARG(bool, maximize, false)
  BRISK_OPTIM_ARG(Impl, impl, Impl::Fused)
 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RMSpropOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> values() const override;
  void set_value(const std::string& name, double v) override;
};

/// RMSprop (torch.optim.RMSprop).
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<OptimizerParamGroup> groups, RMSpropOptions defaults = {});
  RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {})
      : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

 protected:
  void check_options(const OptimizerOptions& o) const override;
  void step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) override;
};

// ---- Adagrad ----------------------------------------------------------------------------

class AdagradOptions : public OptimizerOptions {
 public:
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit as libtorch
  BRISK_OPTIM_ARG(double, lr, 1e-2)
  BRISK_OPTIM_ARG(double, lr_decay, 0.0)
  BRISK_OPTIM_ARG(double, weight_decay, 0.0)
  BRISK_OPTIM_ARG(double, initial_accumulator_value, 0.0)
  BRISK_OPTIM_ARG(double, eps, 1e-10)
  BRISK_OPTIM_ARG(bool, maximize, false)
  /// No fused kernel yet: Fused runs the Foreach path.
  BRISK_OPTIM_ARG(Impl, impl, Impl::Foreach)
 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdagradOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> values() const override;
  void set_value(const std::string& name, double v) override;
};

/// Adagrad (torch.optim.Adagrad): sum += g * g; p -= clr * g / (sqrt(sum) + eps)
/// with clr = lr / (1 + (step - 1) * lr_decay). The state (`sum`, filled
/// with initial_accumulator_value, and `step`) exists from construction on,
/// as in PyTorch.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<OptimizerParamGroup> groups, AdagradOptions defaults = {});
  Adagrad(std::vector<Tensor> params, AdagradOptions defaults = {})
      : Adagrad(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

 protected:
  void check_options(const OptimizerOptions& o) const override;
  void step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) override;
  /// (only with an lr_decay: without one the step size is the constant lr)
  const char* capture_hazard() const override;
};

// ---- LBFGS -------------------------------------------------------------------------------

class LBFGSOptions : public OptimizerOptions {
 public:
  LBFGSOptions(double lr = 1) : lr_(lr) {}  // NOLINT: implicit as libtorch
  BRISK_OPTIM_ARG(double, lr, 1.0)
  BRISK_OPTIM_ARG(int64_t, max_iter, 20)
  /// Function evaluations per step(); none: max_iter * 5 / 4 (set by the constructor).
  BRISK_OPTIM_ARG(std::optional<int64_t>, max_eval, std::nullopt)
  BRISK_OPTIM_ARG(double, tolerance_grad, 1e-7)
  BRISK_OPTIM_ARG(double, tolerance_change, 1e-9)
  BRISK_OPTIM_ARG(int64_t, history_size, 100)
  /// None (a fixed step of lr) or "strong_wolfe".
  BRISK_OPTIM_ARG(std::optional<std::string>, line_search_fn, std::nullopt)
  BRISK_OPTIM_ARG(bool, maximize, false)
 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<LBFGSOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  /// max_eval as -1 when none, line_search_fn as 0 (none) or 1 (strong_wolfe).
  std::vector<std::pair<std::string, double>> values() const override;
  void set_value(const std::string& name, double v) override;
};

/// L-BFGS (torch.optim.LBFGS): each step(closure) runs up to max_iter
/// iterations of limited-memory BFGS over all parameters as one flat
/// vector, calling the closure (which must zero the gradients, compute the
/// loss, call backward and return the loss) once per function evaluation.
/// One param group; parameters of one dtype and device.
class LBFGS : public Optimizer {
 public:
  LBFGS(std::vector<OptimizerParamGroup> groups, LBFGSOptions defaults = {});
  LBFGS(std::vector<Tensor> params, LBFGSOptions defaults = {})
      : LBFGS(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  /// Returns the loss of the first evaluation of the closure.
  Tensor step(LossClosure closure) override;

  /// What PyTorch keeps in state[params[0]].
  struct State {
    int64_t func_evals = 0, n_iter = 0;
    Tensor d, prev_flat_grad;
    double t = 0, H_diag = 1, prev_loss = 0;
    bool has_prev_loss = false;
    std::deque<Tensor> old_dirs, old_stps;
    std::deque<double> ro;
    std::vector<double> al;
  };
  const State& lbfgs_state() const { return state_lbfgs_; }

  /// The base's groups and options, plus "state.0.<field>" for State (d,
  /// prev_flat_grad, old_dirs.<k>, old_stps.<k>, ro and al as 1-D float64,
  /// the numbers as 0-dim float64).
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& dict) override;

 protected:
  void check_options(const OptimizerOptions& o) const override;
  void step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) override;

 private:
  State state_lbfgs_;
};

// ---- learning-rate schedulers -------------------------------------------------------------
// As torch.optim.lr_scheduler: step() is chainable (PyTorch's get_lr): each
// scheduler updates the groups' CURRENT lr (StepLR multiplies it by gamma at
// its steps, CosineAnnealingLR's recursive form, ...), so two schedulers on
// one optimizer compose and an lr set by hand between steps is kept.
// step(epoch) jumps to that step with the closed form from the groups'
// initial lr (PyTorch's _get_closed_form_lr). Constructing a scheduler does
// its step 0, as PyTorch does.

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  /// Advances one step and sets every group's lr from its current lr
  /// (PyTorch's step()).
  virtual void step();
  /// Jumps to step `epoch` and sets every group's lr in closed form from the
  /// groups' initial lr (PyTorch's deprecated step(epoch); OneCycleLR, which
  /// has no closed form there, computes step `epoch` as step() does).
  virtual void step(int64_t epoch);
  /// Every group's lr after the last step.
  std::vector<double> get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }

 protected:
  /// The closed-form lr of group g at step `epoch` (from base_lrs_).
  virtual double lr_at(size_t g, int64_t epoch) const = 0;
  /// PyTorch's get_lr(): the lr of every group for step last_epoch_, from
  /// the groups' current lrs. The default is the closed form lr_at (a
  /// scheduler that overwrites the lr instead of chaining).
  virtual std::vector<double> get_lr();
  /// Whether step(epoch) uses lr_at (PyTorch: has _get_closed_form_lr) or get_lr().
  virtual bool has_closed_form() const { return true; }
  /// Does step 0 (PyTorch's _initial_step: step() with is_initial_ set);
  /// called at the end of the derived constructor.
  void initial_step();
  /// PyTorch's _update_lr: last_epoch_ + 1 and get_lr() without an epoch,
  /// else last_epoch_ = epoch and the closed form; sets the lrs and last_lr_.
  void update_lr(std::optional<int64_t> epoch);
  /// The current lr of every group.
  std::vector<double> group_lrs() const;
  friend class SequentialLR;

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;   ///< calls of step(), step(epoch) (PyTorch's _step_count)
  bool is_initial_ = false;  ///< inside initial_step()
};

/// Multiplies the lr by gamma every step_size steps;
/// closed form base * gamma^floor(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(size_t g, int64_t epoch) const override;
  std::vector<double> get_lr() override;
  int64_t step_size_;
  double gamma_;
};

/// Multiplies the lr by gamma at each milestone (gamma^k at a milestone
/// listed k times); closed form base * gamma^(number of milestones <= epoch).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  double lr_at(size_t g, int64_t epoch) const override;
  std::vector<double> get_lr() override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

/// Multiplies the lr by gamma every step; closed form base * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  double lr_at(size_t g, int64_t epoch) const override;
  std::vector<double> get_lr() override;
  double gamma_;
};

/// Cosine annealing in PyTorch's recursive form,
///   lr = eta_min + (lr - eta_min) * (1 + cos(pi * t / T_max)) / (1 + cos(pi * (t - 1) / T_max)),
/// (at t = T_max + 1 mod 2 T_max: lr + (base - eta_min) * (1 - cos(pi / T_max)) / 2);
/// closed form eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  double lr_at(size_t g, int64_t epoch) const override;
  std::vector<double> get_lr() override;
  int64_t T_max_;
  double eta_min_;
};

/// Scales the lr by start_factor at step 0, then by PyTorch's ratio
/// 1 + (end - start) / (total_iters * start + (t - 1) * (end - start)) up to
/// total_iters; closed form base * (start + (end - start) * min(epoch, total_iters) / total_iters).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  double lr_at(size_t g, int64_t epoch) const override;
  std::vector<double> get_lr() override;
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

struct OneCycleLROptions {
  BRISK_OPTIM_ARG(double, pct_start, 0.3)
  BRISK_OPTIM_ARG(bool, anneal_cos, true)  ///< false: linear annealing
  /// Cycle the momentum (SGD/RMSprop `momentum`, Adam/AdamW `betas` first
  /// element) opposite to the lr between max_momentum and base_momentum.
  BRISK_OPTIM_ARG(bool, cycle_momentum, true)
  BRISK_OPTIM_ARG(double, base_momentum, 0.85)
  BRISK_OPTIM_ARG(double, max_momentum, 0.95)
  BRISK_OPTIM_ARG(double, div_factor, 25.0)
  BRISK_OPTIM_ARG(double, final_div_factor, 1e4)
  BRISK_OPTIM_ARG(bool, three_phase, false)
};

/// The 1cycle policy (torch.optim.lr_scheduler.OneCycleLR): warm up from
/// max_lr / div_factor to max_lr, then anneal to initial_lr / final_div_factor
/// over total_steps (three_phase: back to initial_lr, then to the minimum).
/// With cycle_momentum (the default) the momentum goes the other way:
/// max_momentum -> base_momentum -> max_momentum (three_phase: then stays
/// at max_momentum); it is set to max_momentum at construction and the
/// optimizer must have a `momentum` or `beta1` option (SGD, RMSprop, Adam,
/// AdamW). Not chainable: it sets the lr. Stepping past total_steps throws.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, OneCycleLROptions options = {});

 protected:
  double lr_at(size_t g, int64_t epoch) const override;
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return false; }
  struct Phase {
    double end_step;
    int start, end;  // lr: 0 initial_lr, 1 max_lr, 2 min_lr
    int start_momentum, end_momentum;  // 0 max_momentum, 1 base_momentum
  };
  /// The phase of step `epoch` and its fraction done.
  std::pair<const Phase*, double> phase_at(int64_t epoch) const;
  double anneal(double start, double end, double pct) const;
  std::vector<Phase> phases_;
  double max_lr_;
  int64_t total_steps_;
  OneCycleLROptions options_;
  /// The option cycled: "momentum" or "beta1" (empty without cycle_momentum).
  std::string momentum_name_;
};

/// Runs schedulers one after another, as PyTorch's SequentialLR: the
/// constructor resets the lrs to the groups' initial lr, undoes the step 0
/// of every scheduler and redoes that of schedulers[0]; step() steps the
/// current scheduler, and at milestone k-1 sets schedulers[k] to its step 0
/// in closed form (PyTorch's scheduler.step(0)), e.g. LinearLR warm-up then
/// CosineAnnealingLR.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  /// A brisk extension (PyTorch's SequentialLR.step takes no epoch): puts the
  /// scheduler of step `epoch` at its own step epoch - milestone with its step(epoch).
  void step(int64_t epoch) override;

 protected:
  double lr_at(size_t g, int64_t epoch) const override;
  /// The index of the scheduler of step `epoch`.
  size_t index_at(int64_t epoch) const;
  void recursive_undo(LRScheduler& s);
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  // namespace brisk::optim
