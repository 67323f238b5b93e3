// Adam and AdamW (torch.optim.Adam / AdamW, _single_tensor_adam semantics):
//   g = maximize ? -grad : grad
//   AdamW: p *= 1 - lr * wd            Adam: g += wd * p
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   vmax = max(vmax, v) (amsgrad; v below reads vmax)
//   p += -lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#include <array>
#include <cmath>

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

// The reference: brisk ops, one parameter at a time.
void adam_for_loop(const AdamHyper& h, const Tensor& p_, const Tensor& grad, ParamState& s) {
  Tensor p = p_;
  Tensor g = h.maximize ? grad.neg() : grad;
  if (h.decoupled) {
    if (h.wd != 0) p.mul_(1 - h.lr * h.wd);
  } else if (h.wd != 0) {
    g = g.add(p, h.wd);
  }
  s.exp_avg().mul_(h.beta1).add_(g, 1 - h.beta1);
  s.exp_avg_sq().mul_(h.beta2).addcmul_(g, g, 1 - h.beta2);
  const AdamStep st = adam_step(h, s.step());
  Tensor denom;
  if (h.amsgrad) {
    maximum_out(s.max_exp_avg_sq(), s.max_exp_avg_sq(), s.exp_avg_sq());
    denom = (s.max_exp_avg_sq().sqrt() / st.bc2_sqrt).add_(h.eps);
  } else {
    denom = (s.exp_avg_sq().sqrt() / st.bc2_sqrt).add_(h.eps);
  }
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

/// One fused step over lists of one device type (core/multi_tensor_plan.h).
void adam_fused(const AdamHyper& h, const TensorList& params, const TensorList& grads,
                const std::vector<ParamState*>& states) {
  TensorList m, v, vmax;
  std::vector<double> step_sizes, bc2_sqrts;
  int64_t last_step = -1;
  AdamStep st{};
  for (ParamState* s : states) {
    m.push_back(s->exp_avg());
    v.push_back(s->exp_avg_sq());
    if (h.amsgrad) vmax.push_back(s->max_exp_avg_sq());
    if (s->step() != last_step) st = adam_step(h, s->step()), last_step = s->step();  // usually one step count
    step_sizes.push_back(st.step_size);
    bc2_sqrts.push_back(st.bc2_sqrt);
  }
  kernel<OpId::fused_adam>(params[0].device().type, h.decoupled ? "AdamW" : "Adam")(
      {h.lr, h.beta1, h.beta2, h.eps, h.wd, h.amsgrad, h.maximize, h.decoupled}, params, grads, m, v, vmax,
      step_sizes, bc2_sqrts, Tensor(), Tensor());
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

void Adam::step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) {
  const AdamHyper h = decoupled_ ? hyper_of(static_cast<const AdamWOptions&>(group.options()), true)
                                 : hyper_of(static_cast<const AdamOptions&>(group.options()), false);
  const Impl impl = decoupled_ ? static_cast<const AdamWOptions&>(group.options()).impl()
                               : static_cast<const AdamOptions&>(group.options()).impl();
  std::vector<ParamState*> states;
  TensorList grads;
  for (const Tensor& p : params) {
    ParamState& s = state(p);
    if (!s.exp_avg().defined()) {
      s.step() = 0;
      s.exp_avg() = zeros_like(p, p.options());
      s.exp_avg_sq() = zeros_like(p, p.options());
    }
    if (h.amsgrad && !s.max_exp_avg_sq().defined()) s.max_exp_avg_sq() = zeros_like(p, p.options());
    s.step() += 1;
    states.push_back(&s);
    grads.push_back(p.grad());
  }
  if (impl == Impl::Foreach) {
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
      adam_for_loop(h, params[i], grads[i], s);
    }
  }
  for (int d = 0; d < kNumDeviceTypes; ++d)
    if (!fp[d].empty()) adam_fused(h, fp[d], fg[d], fs[d]);
}

}  // namespace brisk::optim
