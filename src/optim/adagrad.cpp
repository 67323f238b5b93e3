// Adagrad (torch.optim.Adagrad, _single_tensor_adagrad semantics):
//   step += 1
//   g = maximize ? -grad : grad;  g += wd * p
//   clr = lr / (1 + (step - 1) * lr_decay)
//   sum += g * g
//   p += -clr * g / (sqrt(sum) + eps)
#include "brisk/autograd.h"
#include "brisk/foreach.h"
#include "brisk/ops.h"
#include "brisk/optim.h"

namespace brisk::optim {
namespace {

struct AdagradHyper {
  double lr, lr_decay, wd, eps;
  bool maximize;
  double clr(int64_t step) const { return lr / (1 + double(step - 1) * lr_decay); }
};

// The reference: brisk ops, one parameter at a time.
void adagrad_for_loop(const AdagradHyper& h, const Tensor& p_, const Tensor& grad, ParamState& s) {
  Tensor p = p_;
  Tensor g = h.maximize ? grad.neg() : grad;
  if (h.wd != 0) g = g.add(p, h.wd);
  s.sum().addcmul_(g, g, 1);
  Tensor std = s.sum().sqrt().add_(h.eps);
  p.addcdiv_(g, std, -h.clr(s.step()));
}

// Each arithmetic step as one foreach op over the list (_multi_tensor_adagrad;
// the last step is one addcdiv with per-tensor scalars, as the for-loop's).
void adagrad_foreach(const AdagradHyper& h, const TensorList& params, const TensorList& grads_in,
                     const std::vector<ParamState*>& states) {
  TensorList sums;
  ScalarList minus_clr;
  for (ParamState* s : states) {
    sums.push_back(s->sum());
    minus_clr.push_back(-h.clr(s->step()));
  }
  TensorList g = h.maximize ? foreach_mul(grads_in, -1.0) : grads_in;
  if (h.wd != 0) g = foreach_add(g, params, h.wd);
  foreach_addcmul_(sums, g, g, 1);
  TensorList std = foreach_sqrt(sums);
  foreach_add_(std, h.eps);
  foreach_addcdiv_(params, g, std, minus_clr);
}

}  // namespace

Adagrad::Adagrad(std::vector<OptimizerParamGroup> groups, AdagradOptions defaults)
    : Optimizer("Adagrad", std::make_unique<AdagradOptions>(defaults)) {
  init(groups);
  // PyTorch makes the state of every parameter at construction, every group's
  // sum filled with the constructor's (the defaults') initial_accumulator_value,
  // as torch.optim.Adagrad and libtorch: a group's own value is not used.
  NoGradGuard ng;
  const double init = static_cast<const AdagradOptions&>(this->defaults()).initial_accumulator_value();
  for (OptimizerParamGroup& g : groups_) {
    for (const Tensor& p : g.params()) {
      ParamState& s = state(p);
      s.step() = 0;
      s.sum() = full_like(p, init, p.options());
    }
  }
}

void Adagrad::check_options(const OptimizerOptions& base) const {
  const auto* o = dynamic_cast<const AdagradOptions*>(&base);
  BRISK_CHECK(o, name_, "param group options are not AdagradOptions");
  BRISK_CHECK(o->lr() >= 0, name_, "invalid learning rate ", o->lr(), " (must be >= 0)");
  BRISK_CHECK(o->lr_decay() >= 0, name_, "invalid lr_decay ", o->lr_decay(), " (must be >= 0)");
  BRISK_CHECK(o->weight_decay() >= 0, name_, "invalid weight_decay ", o->weight_decay(), " (must be >= 0)");
  BRISK_CHECK(o->initial_accumulator_value() >= 0, name_, "invalid initial_accumulator_value ",
              o->initial_accumulator_value(), " (must be >= 0)");
  BRISK_CHECK(o->eps() >= 0, name_, "invalid epsilon ", o->eps(), " (must be >= 0)");
}

void Adagrad::step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) {
  const auto& o = static_cast<const AdagradOptions&>(group.options());
  const AdagradHyper h{o.lr(), o.lr_decay(), o.weight_decay(), o.eps(), o.maximize()};
  std::vector<ParamState*> states;
  TensorList grads;
  for (const Tensor& p : params) {
    ParamState& s = state(p);
    // A group added after construction gets its state here (the defaults'
    // value, as torch's lazy init).
    if (!s.sum().defined()) {
      s.step() = 0;
      s.sum() = full_like(p, static_cast<const AdagradOptions&>(defaults()).initial_accumulator_value(), p.options());
    }
    s.step() += 1;
    states.push_back(&s);
    grads.push_back(p.grad());
  }
  if (o.impl() == Impl::ForLoop) {
    for (size_t i = 0; i < params.size(); ++i) adagrad_for_loop(h, params[i], grads[i], *states[i]);
    return;
  }
  adagrad_foreach(h, params, grads, states);
}

const char* Adagrad::capture_hazard() const {
  for (const OptimizerParamGroup& g : groups_)
    if (static_cast<const AdagradOptions&>(g.options()).lr_decay() != 0)
      return "its step count (the learning-rate decay) is a host number, different at every step";
  return nullptr;
}

}  // namespace brisk::optim
