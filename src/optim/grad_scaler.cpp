// brisk::amp::GradScaler (include/brisk/amp.h, docs/design/amp.md).
#include <cmath>
#include <limits>

#include "brisk/amp.h"
#include "brisk/autograd.h"
#include "brisk/error.h"
#include "brisk/foreach.h"
#include "brisk/ops.h"
#include "optim/multi_tensor.h"

namespace brisk::amp {

namespace {
constexpr const char* kOp = "GradScaler";

std::string device_key(const Device& d) { return d.str(); }
double value_of(const Tensor& t) { return t.to(kCPU).to(kDouble).item<double>(); }
}  // namespace

GradScaler::GradScaler(GradScalerOptions opts) : opts_(opts) {
  if (opts_.enabled) check_options();
}

void GradScaler::check_options() const {
  BRISK_CHECK(opts_.init_scale > 0 && std::isfinite(opts_.init_scale), kOp, "init_scale must be positive and finite, got ",
              opts_.init_scale);
  BRISK_CHECK(opts_.growth_factor > 1.0, kOp, "the growth factor must be > 1.0, got ", opts_.growth_factor);
  BRISK_CHECK(opts_.backoff_factor < 1.0 && opts_.backoff_factor > 0.0, kOp,
              "the backoff factor must be in (0, 1), got ", opts_.backoff_factor);
  BRISK_CHECK(opts_.growth_interval > 0, kOp, "growth_interval must be positive, got ", opts_.growth_interval);
}

void GradScaler::set_growth_factor(double v) {
  opts_.growth_factor = v;
  check_options();
}
void GradScaler::set_backoff_factor(double v) {
  opts_.backoff_factor = v;
  check_options();
}
void GradScaler::set_growth_interval(int64_t v) {
  opts_.growth_interval = v;
  check_options();
}

void GradScaler::lazy_init(const Device& device) {
  NoGradGuard ng;
  scale_ = full({}, opts_.init_scale, TensorOptions(kFloat).device(device));
  growth_tracker_ = full({}, init_growth_tracker_, TensorOptions(kInt32).device(device));
}

Tensor GradScaler::scale(const Tensor& loss) {
  if (!opts_.enabled) return loss;
  BRISK_CHECK(loss.defined(), kOp, "scale() of an undefined tensor");
  if (!scale_.defined()) lazy_init(loss.device());
  const Tensor s = scale_.device() == loss.device() ? scale_ : scale_.to(loss.device());
  return loss * s;
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& losses) {
  std::vector<Tensor> r;
  r.reserve(losses.size());
  for (const Tensor& l : losses) r.push_back(scale(l));
  return r;
}

void GradScaler::unscale_(optim::Optimizer& opt) { check_and_unscale(opt, true); }
void GradScaler::check_infs(optim::Optimizer& opt) { check_and_unscale(opt, false); }

void GradScaler::check_and_unscale(optim::Optimizer& opt, bool unscale) {
  if (!opts_.enabled) return;
  BRISK_CHECK(scale_.defined(), kOp,
              "unscale_() before any scale(): call scaler.scale(loss) (and backward) earlier in the iteration");
  PerOptimizer& st = per_opt_[&opt];
  BRISK_CHECK(st.stage != Stage::Unscaled, kOp,
              "unscale_() has already been called on this optimizer since the last update()");
  BRISK_CHECK(st.stage != Stage::Stepped, kOp, "unscale_() is being called after step()");
  NoGradGuard ng;
  // the gradients by device, and by dtype within a device (the multi-tensor
  // passes take one dtype); found_inf is recorded per device
  std::map<std::string, std::map<int, std::vector<Tensor>>> by_device;
  std::map<std::string, Device> devices;
  for (const auto& group : opt.param_groups())
    for (const Tensor& p : group.params()) {
      const Tensor& g = p.grad();
      if (!g.defined()) continue;
      BRISK_CHECK(g.dtype() != kHalf, kOp,
                  "attempting to unscale float16 gradients: keep float32 parameters (autocast runs the float16 math)");
      BRISK_CHECK(is_floating_point(g.dtype()), kOp, "a gradient of dtype ", dtype_name(g.dtype()));
      by_device[device_key(g.device())][static_cast<int>(g.dtype())].push_back(g);
      devices.emplace(device_key(g.device()), g.device());
    }
  // 1 / scale in float64, rounded to float32, as PyTorch computes it
  const Tensor inv = unscale ? scale_.to(kDouble).reciprocal().to(kFloat) : Tensor();
  for (auto& [key, by_dtype] : by_device) {
    const Device dev = devices.at(key);
    // per device and dtype, one multi-tensor check-and-unscale (one pass
    // over the gradients where a kernel exists: CPU float32/float64;
    // elsewhere device ops with no host read)
    Tensor found = zeros({1}, TensorOptions(kFloat).device(dev));
    if (unscale) {
      const Tensor inv_d = inv.to(dev).reshape({1});
      for (auto& [dt, grads] : by_dtype) amp_foreach_non_finite_check_and_unscale_(grads, found, inv_d);
    } else {
      for (auto& [dt, grads] : by_dtype) detail::amp_foreach_non_finite_check_(grads, found);  // (nothing written)
    }
    st.found_inf[key] = found.reshape({});
  }
  // (a check alone leaves the stage Ready: step() passes the scale along)
  if (unscale) st.stage = Stage::Unscaled;
}

// Note [Sync-free GradScaler step]
// step() must skip the optimizer's step when a gradient is inf or NaN. The
// plain way reads found_inf on the host: a synchronisation on CUDA. An
// optimizer whose fused kernels take the scale and the flag
// (Optimizer::supports_amp_scaling: fused SGD, fused capturable Adam/AdamW)
// gets them instead, as PyTorch's fused optimizers do: step() checks the
// gradients without unscaling them (inv_scale 1; skipped when unscale_ ran
// already), hands the optimizer the scale (none when unscale_ ran) and the
// summed flag, and the kernels divide the gradients by the scale and skip
// the whole step on the device when the flag is set. Only when every
// gradient is on the scale's device (one flag, no copies between devices).
Tensor GradScaler::step(optim::Optimizer& opt) {
  if (!opts_.enabled) return opt.step();
  BRISK_CHECK(scale_.defined(), kOp,
              "step() before any scale(): call scaler.scale(loss) (and backward) earlier in the iteration");
  {
    auto it = per_opt_.find(&opt);
    BRISK_CHECK(it == per_opt_.end() || it->second.stage != Stage::Stepped, kOp,
                "step() has already been called since the last update()");
    const bool ready = it == per_opt_.end() || it->second.stage == Stage::Ready;
    bool one_device = true, any_grad = false;
    for (const auto& group : opt.param_groups())
      for (const Tensor& p : group.params())
        if (p.grad().defined()) {
          any_grad = true;
          one_device = one_device && p.grad().device() == scale_.device();
        }
    if (any_grad && one_device && opt.supports_amp_scaling()) {
      Tensor grad_scale;
      if (ready) {
        check_infs(opt);  // the flags, gradients left scaled
        grad_scale = scale_.reshape({1});
      }
      PerOptimizer& st = per_opt_[&opt];
      Tensor found;
      for (const auto& [key, f] : st.found_inf) found = found.defined() ? found + f : f;
      opt.set_amp_scaling(grad_scale, found.reshape({1}));
      Tensor r = opt.step();
      st.stage = Stage::Stepped;
      return r;
    }
    if (ready) unscale_(opt);
  }
  PerOptimizer& st = per_opt_[&opt];
  BRISK_CHECK(!st.found_inf.empty(), kOp, "no inf checks were recorded for this optimizer (no parameter has a gradient)");
  double found = 0;
  for (const auto& [key, f] : st.found_inf) found += value_of(f);  // (a host read: a sync on CUDA)
  Tensor r;
  if (found == 0) r = opt.step();
  st.stage = Stage::Stepped;
  return r;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!opts_.enabled) return;
  BRISK_CHECK(scale_.defined(), kOp,
              "update() before any scale(): call scaler.scale(loss) (and backward) earlier in the iteration");
  NoGradGuard ng;
  if (new_scale) {
    BRISK_CHECK(*new_scale > 0 && std::isfinite(*new_scale), kOp, "new_scale must be positive and finite, got ",
                *new_scale);
    scale_.fill_(*new_scale);
  } else {
    Tensor found;  // the sum over every optimizer's and device's checks, on the scale's device
    for (auto& [o, st] : per_opt_)
      for (auto& [key, f] : st.found_inf) {
        const Tensor fd = f.device() == scale_.device() ? f : f.to(scale_.device());
        found = found.defined() ? found + fd : fd;
      }
    BRISK_CHECK(found.defined(), kOp, "no inf checks were recorded prior to update(): call step() or unscale_() first");
    if (scale_.is_cpu()) {
      // PyTorch's _amp_update_scale_ on the CPU: float scale, double factors
      float s = scale_.item<float>();
      int32_t t = growth_tracker_.item<int32_t>();
      if (found.item<float>() != 0) {
        s = static_cast<float>(static_cast<double>(s) * opts_.backoff_factor);
        t = 0;
      } else if (t + 1 == opts_.growth_interval) {
        const float grown = static_cast<float>(static_cast<double>(s) * opts_.growth_factor);
        if (std::isfinite(grown)) s = grown;
        t = 0;
      } else {
        ++t;
      }
      scale_.fill_(static_cast<double>(s));
      growth_tracker_.fill_(static_cast<int64_t>(t));
    } else {
      // the same on the device, without a host read (float32 products:
      // exact for power-of-two factors, the defaults)
      const Tensor inf = found > 0;
      const Tensor next = where(inf, zeros_like(growth_tracker_), growth_tracker_ + 1);
      const Tensor grow = next == opts_.growth_interval;
      const Tensor grown = scale_ * opts_.growth_factor;
      const Tensor s = where(inf, scale_ * opts_.backoff_factor, where(grow.logical_and(isfinite(grown)), grown, scale_));
      scale_.copy_(s);
      growth_tracker_.copy_(where(grow, zeros_like(next), next));
    }
  }
  per_opt_.clear();
}

double GradScaler::get_scale() const {
  if (!opts_.enabled) return 1.0;
  return scale_.defined() ? value_of(scale_) : opts_.init_scale;
}

int64_t GradScaler::get_growth_tracker() const {
  if (!opts_.enabled) return 0;
  return growth_tracker_.defined() ? static_cast<int64_t>(value_of(growth_tracker_)) : init_growth_tracker_;
}

optim::StateDict GradScaler::state_dict() const {
  if (!opts_.enabled) return {};
  auto t = [](double v) { return full({}, v, TensorOptions(kDouble)); };
  return {{"scale", t(get_scale())},
          {"growth_factor", t(opts_.growth_factor)},
          {"backoff_factor", t(opts_.backoff_factor)},
          {"growth_interval", t(static_cast<double>(opts_.growth_interval))},
          {"_growth_tracker", t(static_cast<double>(get_growth_tracker()))}};
}

void GradScaler::load_state_dict(const optim::StateDict& dict) {
  if (!opts_.enabled) return;
  BRISK_CHECK(!dict.empty(), kOp,
              "the source state dict is empty, possibly because it was saved from a disabled GradScaler");
  auto get = [&](const char* k) {
    auto it = dict.find(k);
    BRISK_CHECK(it != dict.end() && it->second.defined() && it->second.numel() == 1, kOp, "state dict has no '", k, "'");
    return value_of(it->second);
  };
  const double s = get("scale"), gf = get("growth_factor"), bf = get("backoff_factor"), gi = get("growth_interval"),
               gt = get("_growth_tracker");
  GradScalerOptions o = opts_;
  o.init_scale = s;
  o.growth_factor = gf;
  o.backoff_factor = bf;
  o.growth_interval = static_cast<int64_t>(gi);
  std::swap(o, opts_);
  try {
    check_options();
  } catch (...) {
    std::swap(o, opts_);
    throw;
  }
  init_growth_tracker_ = static_cast<int64_t>(gt);
  NoGradGuard ng;
  if (scale_.defined()) scale_.fill_(s);
  if (growth_tracker_.defined()) growth_tracker_.fill_(static_cast<int64_t>(gt));
}

}  // namespace brisk::amp
