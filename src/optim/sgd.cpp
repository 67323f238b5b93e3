// SGD (torch.optim.SGD, _single_tensor_sgd semantics):
//   d = maximize ? -grad : grad;  d += wd * p
//   buf = first step ? d : momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf      (when momentum != 0)
//   p += -lr * d
#include <array>

#include "brisk/foreach.h"
#include "brisk/ops.h"
#include "brisk/optim.h"
#include "core/dispatch.h"
#include "core/multi_tensor_plan.h"
#include "optim/multi_tensor.h"

namespace brisk::optim {
namespace {

struct SGDHyper {
  double lr, momentum, dampening, wd;
  bool nesterov, maximize;
};

void sgd_for_loop(const SGDHyper& h, const Tensor& p_, const Tensor& grad, ParamState& s) {
  Tensor p = p_;
  Tensor d = h.maximize ? grad.neg() : grad;
  if (h.wd != 0) d = d.add(p, h.wd);
  if (h.momentum != 0) {
    if (!s.momentum_buffer().defined()) {
      s.momentum_buffer() = d.clone().detach();
    } else {
      s.momentum_buffer().mul_(h.momentum).add_(d, 1 - h.dampening);
    }
    d = h.nesterov ? d.add(s.momentum_buffer(), h.momentum) : s.momentum_buffer();
  }
  p.add_(d, -h.lr);
}

void sgd_foreach(const SGDHyper& h, const TensorList& params, const TensorList& grads,
                 const std::vector<ParamState*>& states) {
  TensorList d = grads;
  bool owned = false;  // d holds new tensors (not the gradients)
  if (h.maximize) {
    d = foreach_mul(grads, -1.0);
    owned = true;
  }
  if (h.wd != 0) {
    d = foreach_add(d, params, h.wd);
    owned = true;
  }
  if (h.momentum != 0) {
    TensorList bufs, old_bufs, old_d;
    for (size_t i = 0; i < params.size(); ++i) {
      ParamState& s = *states[i];
      if (!s.momentum_buffer().defined()) {
        s.momentum_buffer() = d[i].clone();
      } else {
        old_bufs.push_back(s.momentum_buffer());
        old_d.push_back(d[i]);
      }
      bufs.push_back(s.momentum_buffer());
    }
    foreach_mul_(old_bufs, h.momentum);
    foreach_add_(old_bufs, old_d, 1 - h.dampening);
    if (h.nesterov) {
      if (owned) foreach_add_(d, bufs, h.momentum);
      else d = foreach_add(d, bufs, h.momentum);
    } else {
      d = bufs;
    }
  }
  foreach_add_(params, d, -h.lr);
}

}  // namespace

SGD::SGD(std::vector<OptimizerParamGroup> groups, SGDOptions defaults)
    : Optimizer("SGD", std::make_unique<SGDOptions>(defaults)) {
  init(groups);
}

void SGD::check_options(const OptimizerOptions& base) const {
  const auto* o = dynamic_cast<const SGDOptions*>(&base);
  BRISK_CHECK(o, name_, "param group options are not SGDOptions");
  BRISK_CHECK(o->lr() >= 0, name_, "invalid learning rate ", o->lr(), " (must be >= 0)");
  BRISK_CHECK(o->momentum() >= 0, name_, "invalid momentum ", o->momentum(), " (must be >= 0)");
  BRISK_CHECK(o->weight_decay() >= 0, name_, "invalid weight_decay ", o->weight_decay(), " (must be >= 0)");
  BRISK_CHECK(!o->nesterov() || (o->momentum() > 0 && o->dampening() == 0), name_,
              "nesterov momentum requires a momentum > 0 and zero dampening (got momentum ", o->momentum(),
              ", dampening ", o->dampening(), ")");
}

// Under a GradScaler's sync-free step (set_amp_scaling) a first momentum
// step may be skipped on the device, which the host cannot know. With
// dampening 0 the buffer then starts at zero and every step takes the
// general formula: momentum * 0 + 1 * d is d, the first step's value, and a
// skipped step leaves a zero buffer that the next step starts from. With
// dampening != 0 that is not the first step's value, so such a step takes
// the host-read path until the buffers exist (supports_amp_scaling).
bool SGD::supports_amp_scaling() const {
  return all_params_with_grad([this](const OptimizerParamGroup& g, const Tensor& p) {
    const auto& o = static_cast<const SGDOptions&>(g.options());
    const bool buffer_ok = o.momentum() == 0 || o.dampening() == 0 ||
                           (has_state(p) && state_.at(p.impl()) &&
                            static_cast<const ParamState&>(*state_.at(p.impl())).momentum_buffer().defined());
    return o.impl() == Impl::Fused && buffer_ok && detail::fusable(OpId::fused_sgd, p, {&p.grad()});
  });
}

void SGD::step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) {
  const auto& o = static_cast<const SGDOptions&>(group.options());
  const SGDHyper h{o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov(), o.maximize()};
  std::vector<ParamState*> states;
  TensorList grads;
  for (const Tensor& p : params) {
    ParamState& s = state(p);
    s.step() += 1;
    states.push_back(&s);
    grads.push_back(p.grad());
  }
  if (o.impl() == Impl::Foreach) {
    sgd_foreach(h, params, grads, states);
    return;
  }
  // CUDA parameters: one multi-tensor kernel per device and dtype (backend/cuda/optim.cu).
  // Fused candidates by device type (each device's kernel takes its lists whole).
  std::array<TensorList, kNumDeviceTypes> fp, fg, fbufs;
  std::array<std::vector<char>, kNumDeviceTypes> ffirst;
  const bool amp = amp_found_inf_.defined();
  for (size_t i = 0; i < params.size(); ++i) {
    ParamState& s = *states[i];
    if (o.impl() != Impl::Fused || !detail::fusable(OpId::fused_sgd, params[i], {&grads[i], &s.momentum_buffer()})) {
      BRISK_CHECK(!amp, name_, "a GradScaler's scale reached a parameter the fused kernel cannot take (",
                  params[i].dtype(), " on ", params[i].device(), ")");
      sgd_for_loop(h, params[i], grads[i], s);
      continue;
    }
    const int d = static_cast<int>(params[i].device().type);
    const bool first = h.momentum != 0 && !s.momentum_buffer().defined();
    if (first && amp) {
      // a skippable first step: a zero buffer and the general formula (see supports_amp_scaling)
      BRISK_CHECK(h.dampening == 0, name_, "a GradScaler's scale reached a first momentum step with dampening");
      s.momentum_buffer() = zeros_like(params[i], params[i].options());
      ffirst[d].push_back(0);
    } else {
      ffirst[d].push_back(first);
      if (first) s.momentum_buffer() = empty_like(params[i], params[i].options());
    }
    fp[d].push_back(params[i]);
    fg[d].push_back(grads[i]);
    if (h.momentum != 0) fbufs[d].push_back(s.momentum_buffer());
  }
  for (int d = 0; d < kNumDeviceTypes; ++d)
    if (!fp[d].empty())
      kernel<OpId::fused_sgd>(static_cast<DeviceType>(d), "SGD")(
          {h.lr, h.momentum, h.dampening, h.wd, h.nesterov, h.maximize}, fp[d], fg[d], fbufs[d], ffirst[d],
          amp_grad_scale_, amp_found_inf_);
}

}  // namespace brisk::optim
