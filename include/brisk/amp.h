// brisk::amp: mixed precision (issue 16, in progress). What exists: the
// GradScaler (torch.amp.GradScaler), which scales the loss so that small
// float16 gradients do not underflow, unscales the gradients before the
// optimizer step, skips the step when a gradient is inf or NaN, and backs
// the scale off (or grows it after a run of good steps):
//
//   brisk::amp::GradScaler scaler;
//   for (auto& batch : loader) {
//     opt.zero_grad();
//     Tensor loss = loss_fn(model(batch.data), batch.target);
//     scaler.scale(loss).backward();
//     scaler.unscale_(opt);                       // optional: before clipping
//     nn::utils::clip_grad_norm_(model->parameters(), 1.0);
//     scaler.step(opt);                           // skipped on inf/NaN
//     scaler.update();
//   }
//
// See docs/design/amp.md.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "brisk/optim.h"
#include "brisk/tensor.h"

namespace brisk::amp {

/// torch.autocast as an RAII scope: inside it, on this thread, ops on
/// PyTorch's lists run in lower precision (matmul, linear, conv, attention
/// in `dtype`), in float32 (losses; on CUDA also exp, log, softmax, sums,
/// norms) or at the widest input dtype (cat, stack on the CPU; addcmul,
/// index_put on CUDA), per device type: a scope for kCPU casts ops on CPU
/// tensors only. `dtype` defaults to bfloat16 on the CPU and float16 on
/// CUDA (float16 and bfloat16 are accepted on both). Scopes nest (an inner
/// scope may disable autocast or change the dtype); `cache_enabled` casts
/// each parameter once per outermost scope. Run backward outside the scope
/// (inside it, backward is not autocast either). Lists and semantics:
/// docs/design/amp.md.
///
///   {
///     brisk::amp::autocast ac(brisk::kCPU);          // bfloat16
///     Tensor loss = criterion(model->forward(x), y); // linear in bfloat16, loss in float32
///   }
///   loss.backward();
class autocast {
 public:
  explicit autocast(DeviceType device_type, std::optional<ScalarType> dtype = std::nullopt, bool enabled = true,
                    std::optional<bool> cache_enabled = std::nullopt);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  DeviceType device_;
  bool prev_enabled_;
  ScalarType prev_dtype_;
  bool prev_cache_;
  bool counted_;
};

/// Whether autocast is on for a device type on this thread.
bool is_autocast_enabled(DeviceType device_type);
/// The dtype autocast lowers to on a device type on this thread (the
/// default when no scope set it: bfloat16 on the CPU, float16 on CUDA).
ScalarType get_autocast_dtype(DeviceType device_type);
/// Whether the weight-cast cache is on (this thread).
bool is_autocast_cache_enabled();
/// Drops this thread's cached parameter casts (leaving the outermost scope does).
void clear_autocast_cache();

struct GradScalerOptions {
  double init_scale = 65536.0;   ///< 2^16
  double growth_factor = 2.0;    ///< the scale's factor after growth_interval good steps
  double backoff_factor = 0.5;   ///< its factor after a step with inf/NaN gradients
  int64_t growth_interval = 2000;
  bool enabled = true;           ///< false: every method passes through (scale returns the loss)

  GradScalerOptions& set_init_scale(double v) { init_scale = v; return *this; }
  GradScalerOptions& set_growth_factor(double v) { growth_factor = v; return *this; }
  GradScalerOptions& set_backoff_factor(double v) { backoff_factor = v; return *this; }
  GradScalerOptions& set_growth_interval(int64_t v) { growth_interval = v; return *this; }
  GradScalerOptions& set_enabled(bool v) { enabled = v; return *this; }
};

/// torch.amp.GradScaler. The scale is a float32 0-dim tensor on the device
/// of the first loss scaled; unscale_ checks every gradient for inf/NaN and
/// multiplies it by 1/scale (float32 math, as PyTorch), per optimizer once
/// between two update() calls.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions opts = {});

  /// loss * scale, with ordinary type promotion against the float32 0-dim
  /// scale (as PyTorch's): a 0-dim bfloat16/float16 loss comes back float32,
  /// a loss with dimensions keeps its dtype.
  Tensor scale(const Tensor& loss);
  std::vector<Tensor> scale(const std::vector<Tensor>& losses);
  /// Divides the optimizer's gradients by the scale and records whether
  /// any was inf or NaN. At most once per optimizer between updates; call
  /// it before clipping gradients. float16 gradients are refused, as in
  /// PyTorch (keep float32 master parameters).
  void unscale_(optim::Optimizer& opt);
  /// unscale_ (if not done yet), then opt.step() unless a gradient was inf
  /// or NaN. Returns what opt.step() returned (undefined when skipped).
  /// With an optimizer that supports_amp_scaling() (fused SGD, fused Adam/AdamW
  /// with capturable = true) and every gradient on the scale's device, the
  /// unscale and the skip happen in its kernels on the device, with no host
  /// read of the inf flag (sync-free on CUDA); opt.step() then always runs
  /// and returns its value.
  Tensor step(optim::Optimizer& opt);
  /// The next scale: backoff_factor after a skipped step, growth_factor
  /// after growth_interval steps in a row without one; or `new_scale`.
  void update(std::optional<double> new_scale = std::nullopt);

  /// The current scale (init_scale before the first scale()); 1.0 disabled.
  double get_scale() const;
  int64_t get_growth_tracker() const;
  bool is_enabled() const { return opts_.enabled; }
  double get_growth_factor() const { return opts_.growth_factor; }
  double get_backoff_factor() const { return opts_.backoff_factor; }
  int64_t get_growth_interval() const { return opts_.growth_interval; }
  void set_growth_factor(double v);
  void set_backoff_factor(double v);
  void set_growth_interval(int64_t v);

  /// {"scale", "growth_factor", "backoff_factor", "growth_interval",
  /// "_growth_tracker"} as 0-dim float64 tensors (empty when disabled), as
  /// PyTorch's state_dict keys.
  optim::StateDict state_dict() const;
  void load_state_dict(const optim::StateDict& dict);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    std::map<std::string, Tensor> found_inf;  ///< per device ("cpu", "cuda:0"): float32 0-dim, 1 if inf/NaN
  };
  void lazy_init(const Device& device);
  void check_options() const;
  /// unscale_'s pass; unscale = false only records the inf flags (inv_scale 1)
  /// for a sync-free step (Note [Sync-free GradScaler step]).
  void check_and_unscale(optim::Optimizer& opt, bool unscale);
  void check_infs(optim::Optimizer& opt);

  GradScalerOptions opts_;
  Tensor scale_;            ///< float32 0-dim (undefined until the first scale())
  Tensor growth_tracker_;   ///< int32 0-dim
  int64_t init_growth_tracker_ = 0;  ///< (load_state_dict before the first scale())
  std::map<const optim::Optimizer*, PerOptimizer> per_opt_;
};

}  // namespace brisk::amp
