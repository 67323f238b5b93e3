// Adam and AdamW (torch.optim.Adam / AdamW, _single_tensor_adam semantics):
//   g = maximize ? -grad : grad
//   AdamW: p *= 1 - lr * wd            Adam: g += wd * p
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   vmax = max(vmax, v) (amsgrad; v below reads vmax)
//   p += -lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#include <array>
#include <cmath>
#include <map>
#include <string>

#include "brisk/foreach.h"
#include "brisk/ops.h"
#include "brisk/optim.h"
#include "core/dispatch.h"
#include "core/multi_tensor_plan.h"
#include "optim/multi_tensor.h"

namespace brisk::optim {
namespace {

struct AdamHyper {
  double lr, beta1, beta2, eps, wd;
  bool amsgrad, maximize, decoupled;
};

struct AdamStep {
  double step_size;  // lr / bias_correction1
  double bc2_sqrt;   // sqrt(bias_correction2)
};

AdamStep adam_step(const AdamHyper& h, int64_t step) {
  const double bc1 = 1 - std::pow(h.beta1, double(step));
  const double bc2 = 1 - std::pow(h.beta2, double(step));
  return AdamStep{h.lr / bc1, std::sqrt(bc2)};
}

// The reference's first half: weight decay and the two moments (and
// amsgrad's maximum); returns the second moment the denominator reads.
const Tensor& adam_moments(const AdamHyper& h, Tensor p, const Tensor& grad, ParamState& s) {
  Tensor g = h.maximize ? grad.neg() : grad;
  if (h.decoupled) {
    if (h.wd != 0) p.mul_(1 - h.lr * h.wd);
  } else if (h.wd != 0) {
    g = g.add(p, h.wd);
  }
  s.exp_avg().mul_(h.beta1).add_(g, 1 - h.beta1);
  s.exp_avg_sq().mul_(h.beta2).addcmul_(g, g, 1 - h.beta2);
  if (!h.amsgrad) return s.exp_avg_sq();
  maximum_out(s.max_exp_avg_sq(), s.max_exp_avg_sq(), s.exp_avg_sq());
  return s.max_exp_avg_sq();
}

// The reference: brisk ops, one parameter at a time.
void adam_for_loop(const AdamHyper& h, const Tensor& p_, const Tensor& grad, ParamState& s) {
  Tensor p = p_;
  const Tensor& v = adam_moments(h, p, grad, s);
  const AdamStep st = adam_step(h, s.step());
  const Tensor denom = (v.sqrt() / st.bc2_sqrt).add_(h.eps);
  p.addcdiv_(s.exp_avg(), denom, -st.step_size);
}

// Each arithmetic step as one foreach op over the list (_multi_tensor_adam).
void adam_foreach(const AdamHyper& h, const TensorList& params, const TensorList& grads_in,
                  std::vector<ParamState*>& states) {
  const size_t n = params.size();
  TensorList exp_avgs, exp_avg_sqs, max_sqs;
  ScalarList step_sizes, bc2_sqrts;
  for (ParamState* s : states) {
    exp_avgs.push_back(s->exp_avg());
    exp_avg_sqs.push_back(s->exp_avg_sq());
    if (h.amsgrad) max_sqs.push_back(s->max_exp_avg_sq());
    const AdamStep st = adam_step(h, s->step());
    step_sizes.push_back(-st.step_size);
    bc2_sqrts.push_back(st.bc2_sqrt);
  }
  TensorList grads = h.maximize ? foreach_mul(grads_in, -1.0) : grads_in;
  if (h.decoupled) {
    if (h.wd != 0) foreach_mul_(params, 1 - h.lr * h.wd);
  } else if (h.wd != 0) {
    grads = foreach_add(grads, params, h.wd);
  }
  foreach_mul_(exp_avgs, h.beta1);
  foreach_add_(exp_avgs, grads, 1 - h.beta1);
  foreach_mul_(exp_avg_sqs, h.beta2);
  foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - h.beta2);
  TensorList denom;
  if (h.amsgrad) {
    foreach_maximum_(max_sqs, exp_avg_sqs);
    denom = foreach_sqrt(max_sqs);
  } else {
    denom = foreach_sqrt(exp_avg_sqs);
  }
  foreach_div_(denom, bc2_sqrts);
  foreach_add_(denom, h.eps);
  foreach_addcdiv_(params, exp_avgs, denom, step_sizes);
  (void)n;
}

// Note [Capturable Adam]
// Adam's bias corrections depend on the step count. By default the count is
// a host integer (ParamState::step) and the step sizes are host numbers:
// exact and cheap, but a CUDA graph would freeze them, and a GradScaler that
// skips steps on the device could not keep the count right without reading
// its inf flag. With capturable = true (PyTorch's option) each parameter's
// count is a float32 0-dim tensor on its device (ParamState::step_tensor):
// the step adds 1 to it there, or 1 - found_inf when a GradScaler passed
// its flag (a skipped step does not count, as in PyTorch), and the fused
// kernels compute both factors from it on the device, in float64 as the
// host path does, so the two paths give the same bits (float32 holds counts
// exactly up to 2^24). The for-loop and foreach implementations compute
// the factors with tensor ops instead (one parameter at a time). Nothing in
// a capturable step reads the device, so it can be captured and it lets
// GradScaler::step stay sync-free (Optimizer::supports_amp_scaling).

/// One fused step over lists of one device type (core/multi_tensor_plan.h).
/// capturable: the counts are the states' step tensors (already counted).
void adam_fused(const AdamHyper& h, const TensorList& params, const TensorList& grads,
                const std::vector<ParamState*>& states, bool capturable, const Tensor& grad_scale,
                const Tensor& found_inf) {
  TensorList m, v, vmax, steps;
  std::vector<double> step_sizes, bc2_sqrts;
  int64_t last_step = -1;
  AdamStep st{};
  for (ParamState* s : states) {
    m.push_back(s->exp_avg());
    v.push_back(s->exp_avg_sq());
    if (h.amsgrad) vmax.push_back(s->max_exp_avg_sq());
    if (capturable) {
      steps.push_back(s->step_tensor());
      continue;
    }
    if (s->step() != last_step) st = adam_step(h, s->step()), last_step = s->step();  // usually one step count
    step_sizes.push_back(st.step_size);
    bc2_sqrts.push_back(st.bc2_sqrt);
  }
  kernel<OpId::fused_adam>(params[0].device().type, h.decoupled ? "AdamW" : "Adam")(
      {h.lr, h.beta1, h.beta2, h.eps, h.wd, h.amsgrad, h.maximize, h.decoupled}, params, grads, m, v, vmax,
      step_sizes, bc2_sqrts, steps, grad_scale, found_inf);
}

/// The reference with a device step count (Note [Capturable Adam]): the
/// factors as tensors, no host number that changes per step.
void adam_for_loop_capturable(const AdamHyper& h, const Tensor& p_, const Tensor& grad, ParamState& s) {
  Tensor p = p_;
  const Tensor& v = adam_moments(h, p, grad, s);
  const Tensor t = s.step_tensor().to(kDouble);
  const Tensor step_size = (h.lr / (1 - pow(Scalar(h.beta1), t))).to(p.dtype());
  const Tensor bc2_sqrt = (1 - pow(Scalar(h.beta2), t)).sqrt().to(p.dtype());
  const Tensor denom = (v.sqrt() / bc2_sqrt).add_(h.eps);
  p.sub_((s.exp_avg() / denom).mul_(step_size));
}

}  // namespace

Adam::Adam(std::vector<OptimizerParamGroup> groups, AdamOptions defaults)
    : Adam("Adam", std::move(groups), std::make_unique<AdamOptions>(defaults), false) {}

Adam::Adam(const char* name, std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
           bool decoupled)
    : Optimizer(name, std::move(defaults)), decoupled_(decoupled) {
  init(groups);
}

AdamW::AdamW(std::vector<OptimizerParamGroup> groups, AdamWOptions defaults)
    : Adam("AdamW", std::move(groups), std::make_unique<AdamWOptions>(defaults), true) {}

namespace {
template <class O>
AdamHyper hyper_of(const O& o, bool decoupled) {
  return AdamHyper{o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay(),
                   o.amsgrad(), o.maximize(), decoupled};
}
}  // namespace

void Adam::check_options(const OptimizerOptions& base) const {
  AdamHyper h;
  if (decoupled_) {
    const auto* o = dynamic_cast<const AdamWOptions*>(&base);
    BRISK_CHECK(o, name_, "param group options are not AdamWOptions");
    h = hyper_of(*o, true);
  } else {
    const auto* o = dynamic_cast<const AdamOptions*>(&base);
    BRISK_CHECK(o, name_, "param group options are not AdamOptions");
    h = hyper_of(*o, false);
  }
  BRISK_CHECK(h.lr >= 0, name_, "invalid learning rate ", h.lr, " (must be >= 0)");
  BRISK_CHECK(h.eps >= 0, name_, "invalid epsilon ", h.eps, " (must be >= 0)");
  BRISK_CHECK(h.beta1 >= 0 && h.beta1 < 1, name_, "invalid beta1 ", h.beta1, " (must be in [0, 1))");
  BRISK_CHECK(h.beta2 >= 0 && h.beta2 < 1, name_, "invalid beta2 ", h.beta2, " (must be in [0, 1))");
  BRISK_CHECK(h.wd >= 0, name_, "invalid weight_decay ", h.wd, " (must be >= 0)");
}

namespace {
Impl impl_of_group(const OptimizerParamGroup& g, bool decoupled) {
  return decoupled ? static_cast<const AdamWOptions&>(g.options()).impl()
                   : static_cast<const AdamOptions&>(g.options()).impl();
}
bool capturable_group(const OptimizerParamGroup& g, bool decoupled) {
  return decoupled ? static_cast<const AdamWOptions&>(g.options()).capturable()
                   : static_cast<const AdamOptions&>(g.options()).capturable();
}
}  // namespace

const char* Adam::capture_hazard() const {
  for (const OptimizerParamGroup& g : groups_)
    if (!capturable_group(g, decoupled_))
      return "its step count and bias corrections are host numbers, different at every step (construct it "
             "with capturable(true) to count steps on the device)";
  return nullptr;
}

bool Adam::supports_amp_scaling() const {
  return all_params_with_grad([this](const OptimizerParamGroup& g, const Tensor& p) {
    return impl_of_group(g, decoupled_) == Impl::Fused && capturable_group(g, decoupled_) &&
           detail::fusable(OpId::fused_adam, p, {&p.grad()});
  });
}

void Adam::step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) {
  const AdamHyper h = decoupled_ ? hyper_of(static_cast<const AdamWOptions&>(group.options()), true)
                                 : hyper_of(static_cast<const AdamOptions&>(group.options()), false);
  const Impl impl = impl_of_group(group, decoupled_);
  const bool capturable = capturable_group(group, decoupled_);
  std::vector<ParamState*> states;
  TensorList grads;
  for (const Tensor& p : params) {
    ParamState& s = state(p);
    if (!s.exp_avg().defined()) {
      s.step() = 0;
      s.step_tensor() = Tensor();
      s.exp_avg() = zeros_like(p, p.options());
      s.exp_avg_sq() = zeros_like(p, p.options());
    }
    if (h.amsgrad && !s.max_exp_avg_sq().defined()) s.max_exp_avg_sq() = zeros_like(p, p.options());
    if (capturable) {
      // the count moves to the device (from a loaded or host count); counted below
      if (!s.step_tensor().defined() || s.step_tensor().device() != p.device())
        s.step_tensor() = full({}, double(s.step()), TensorOptions(kFloat).device(p.device()));
    } else {
      if (s.step_tensor().defined()) {  // capturable was switched off: back to a host count (one read)
        s.step() = static_cast<int64_t>(s.step_tensor().to(kCPU).item<float>());
        s.step_tensor() = Tensor();
      }
      s.step() += 1;
    }
    states.push_back(&s);
    grads.push_back(p.grad());
  }
  const bool amp = amp_found_inf_.defined();
  if (capturable) {
    // + 1 on the device, or + (1 - found_inf): a step a GradScaler skips does not count
    std::map<std::string, TensorList> by_device;
    for (ParamState* s : states) by_device[s->step_tensor().device().str()].push_back(s->step_tensor());
    for (auto& [key, steps] : by_device) {
      if (amp) {
        const Tensor inc = 1 - amp_found_inf_.to(steps[0].device()).reshape({});
        foreach_add_(steps, TensorList(steps.size(), inc));
      } else {
        foreach_add_(steps, Scalar(1.0));
      }
    }
  }
  if (impl == Impl::Foreach && !capturable) {
    adam_foreach(h, params, grads, states);
    return;
  }
  // Fused for eligible tensors, the reference for the rest (and for ForLoop).
  // Fused candidates by device type (each device's kernel takes its lists whole).
  std::array<TensorList, kNumDeviceTypes> fp, fg;
  std::array<std::vector<ParamState*>, kNumDeviceTypes> fs;
  for (size_t i = 0; i < params.size(); ++i) {
    ParamState& s = *states[i];
    if (impl == Impl::Fused &&
        detail::fusable(OpId::fused_adam, params[i], {&grads[i], &s.exp_avg(), &s.exp_avg_sq(), &s.max_exp_avg_sq()})) {
      const int d = static_cast<int>(params[i].device().type);
      fp[d].push_back(params[i]);
      fg[d].push_back(grads[i]);
      fs[d].push_back(&s);
    } else {
      BRISK_CHECK(!amp, name_, "a GradScaler's scale reached a parameter the fused kernel cannot take (",
                  params[i].dtype(), " on ", params[i].device(), ")");
      capturable ? adam_for_loop_capturable(h, params[i], grads[i], s) : adam_for_loop(h, params[i], grads[i], s);
    }
  }
  for (int d = 0; d < kNumDeviceTypes; ++d)
    if (!fp[d].empty()) adam_fused(h, fp[d], fg[d], fs[d], capturable, amp_grad_scale_, amp_found_inf_);
}

}  // namespace brisk::optim
