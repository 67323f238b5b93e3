// RMSprop (torch.optim.RMSprop, _single_tensor_rmsprop semantics):
//   g = maximize ? -grad : grad;  g += wd * p
//   sq = alpha * sq + (1 - alpha) * g * g
//   centered: ga = alpha * ga + (1 - alpha) * g;  avg = sqrt(sq - ga * ga) + eps
//   else: avg = sqrt(sq) + eps
//   momentum > 0: buf = momentum * buf + g / avg;  p += -lr * buf
//   else: p += -lr * g / avg
#include <cmath>
#include <array>

#include "brisk/foreach.h"
#include "brisk/ops.h"
#include "brisk/optim.h"
#include "core/dispatch.h"
#include "core/multi_tensor_plan.h"
#include "optim/multi_tensor.h"

namespace brisk::optim {
namespace {

struct RMSHyper {
  double lr, alpha, eps, wd, momentum;
  bool centered, maximize;
};

void rmsprop_for_loop(const RMSHyper& h, const Tensor& p_, const Tensor& grad, ParamState& s) {
  Tensor p = p_;
  Tensor g = h.maximize ? grad.neg() : grad;
  if (h.wd != 0) g = g.add(p, h.wd);
  s.square_avg().mul_(h.alpha).addcmul_(g, g, 1 - h.alpha);
  Tensor avg;
  if (h.centered) {
    s.grad_avg().mul_(h.alpha).add_(g, 1 - h.alpha);
    avg = s.square_avg().addcmul(s.grad_avg(), s.grad_avg(), -1).sqrt_();
  } else {
    avg = s.square_avg().sqrt();
  }
  avg.add_(h.eps);
  if (h.momentum > 0) {
    s.momentum_buffer().mul_(h.momentum).addcdiv_(g, avg);
    p.add_(s.momentum_buffer(), -h.lr);
  } else {
    p.addcdiv_(g, avg, -h.lr);
  }
}

void rmsprop_foreach(const RMSHyper& h, const TensorList& params, const TensorList& grads_in,
                     const std::vector<ParamState*>& states) {
  TensorList sq, ga, bufs;
  for (ParamState* s : states) {
    sq.push_back(s->square_avg());
    if (h.centered) ga.push_back(s->grad_avg());
    if (h.momentum > 0) bufs.push_back(s->momentum_buffer());
  }
  TensorList g = h.maximize ? foreach_mul(grads_in, -1.0) : grads_in;
  if (h.wd != 0) g = foreach_add(g, params, h.wd);
  foreach_mul_(sq, h.alpha);
  foreach_addcmul_(sq, g, g, 1 - h.alpha);
  TensorList avg;
  if (h.centered) {
    foreach_mul_(ga, h.alpha);
    foreach_add_(ga, g, 1 - h.alpha);
    avg = foreach_mul(sq, 1.0);  // a copy of sq
    foreach_addcmul_(avg, ga, ga, -1.0);
    foreach_sqrt_(avg);
  } else {
    avg = foreach_sqrt(sq);
  }
  foreach_add_(avg, h.eps);
  if (h.momentum > 0) {
    foreach_mul_(bufs, h.momentum);
    foreach_addcdiv_(bufs, g, avg);
    foreach_add_(params, bufs, -h.lr);
  } else {
    foreach_addcdiv_(params, g, avg, -h.lr);
  }
}

}  // namespace

RMSprop::RMSprop(std::vector<OptimizerParamGroup> groups, RMSpropOptions defaults)
    : Optimizer("RMSprop", std::make_unique<RMSpropOptions>(defaults)) {
  init(groups);
}

void RMSprop::check_options(const OptimizerOptions& base) const {
  const auto* o = dynamic_cast<const RMSpropOptions*>(&base);
  BRISK_CHECK(o, name_, "param group options are not RMSpropOptions");
  BRISK_CHECK(o->lr() >= 0, name_, "invalid learning rate ", o->lr(), " (must be >= 0)");
  BRISK_CHECK(o->eps() >= 0, name_, "invalid epsilon ", o->eps(), " (must be >= 0)");
  BRISK_CHECK(o->momentum() >= 0, name_, "invalid momentum ", o->momentum(), " (must be >= 0)");
  BRISK_CHECK(o->weight_decay() >= 0, name_, "invalid weight_decay ", o->weight_decay(), " (must be >= 0)");
  BRISK_CHECK(o->alpha() >= 0, name_, "invalid alpha ", o->alpha(), " (must be >= 0)");
}

void RMSprop::step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) {
  const auto& o = static_cast<const RMSpropOptions&>(group.options());
  const RMSHyper h{o.lr(), o.alpha(), o.eps(), o.weight_decay(), o.momentum(), o.centered(), o.maximize()};
  std::vector<ParamState*> states;
  TensorList grads;
  for (const Tensor& p : params) {
    ParamState& s = state(p);
    if (!s.square_avg().defined()) {
      s.step() = 0;
      s.square_avg() = zeros_like(p, p.options());
    }
    if (h.momentum > 0 && !s.momentum_buffer().defined()) s.momentum_buffer() = zeros_like(p, p.options());
    if (h.centered && !s.grad_avg().defined()) s.grad_avg() = zeros_like(p, p.options());
    s.step() += 1;
    states.push_back(&s);
    grads.push_back(p.grad());
  }
  if (o.impl() == Impl::Foreach) {
    rmsprop_foreach(h, params, grads, states);
    return;
  }
  // Fused candidates by device type (each device's kernel takes its lists whole).
  std::array<TensorList, kNumDeviceTypes> fp, fg, fsq, fga, fbufs;
  for (size_t i = 0; i < params.size(); ++i) {
    ParamState& s = *states[i];
    if (o.impl() != Impl::Fused || !detail::fusable(OpId::fused_rmsprop, params[i], {&grads[i], &s.square_avg(),
                                                                                     &s.grad_avg(), &s.momentum_buffer()})) {
      rmsprop_for_loop(h, params[i], grads[i], s);
      continue;
    }
    const int d = static_cast<int>(params[i].device().type);
    fp[d].push_back(params[i]);
    fg[d].push_back(grads[i]);
    fsq[d].push_back(s.square_avg());
    if (h.centered) fga[d].push_back(s.grad_avg());
    if (h.momentum > 0) fbufs[d].push_back(s.momentum_buffer());
  }
  for (int d = 0; d < kNumDeviceTypes; ++d)
    if (!fp[d].empty())
      kernel<OpId::fused_rmsprop>(static_cast<DeviceType>(d), "RMSprop")(
          {h.lr, h.alpha, h.eps, h.wd, h.momentum, h.centered, h.maximize}, fp[d], fg[d], fsq[d], fga[d], fbufs[d]);
}

}  // namespace brisk::optim
