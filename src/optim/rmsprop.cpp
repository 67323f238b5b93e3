// RMSprop (torch.optim.RMSprop, _single_tensor_rmsprop semantics):
//   g = maximize ? -grad : grad;  g += wd * p
//   sq = alpha * sq + (1 - alpha) * g * g
//   centered: ga = alpha * ga + (1 - alpha) * g;  avg = sqrt(sq - ga * ga) + eps
//   else: avg = sqrt(sq) + eps
//   momentum > 0: buf = momentum * buf + g / avg;  p += -lr * buf
//   else: p += -lr * g / avg
#include <cmath>
#include <type_traits>

#include "brisk/foreach.h"
#include "brisk/ops.h"
#include "brisk/optim.h"
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
  s.square_avg.mul_(h.alpha).addcmul_(g, g, 1 - h.alpha);
  Tensor avg;
  if (h.centered) {
    s.grad_avg.mul_(h.alpha).add_(g, 1 - h.alpha);
    avg = s.square_avg.addcmul(s.grad_avg, s.grad_avg, -1).sqrt_();
  } else {
    avg = s.square_avg.sqrt();
  }
  avg.add_(h.eps);
  if (h.momentum > 0) {
    s.momentum_buffer.mul_(h.momentum).addcdiv_(g, avg);
    p.add_(s.momentum_buffer, -h.lr);
  } else {
    p.addcdiv_(g, avg, -h.lr);
  }
}

void rmsprop_foreach(const RMSHyper& h, const TensorList& params, const TensorList& grads_in,
                     const std::vector<ParamState*>& states) {
  TensorList sq, ga, bufs;
  for (ParamState* s : states) {
    sq.push_back(s->square_avg);
    if (h.centered) ga.push_back(s->grad_avg);
    if (h.momentum > 0) bufs.push_back(s->momentum_buffer);
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

template <class T>
struct RMSLoopConsts {
  T lr, alpha, one_m_alpha, eps, wd, mom;
};
// One variant per flag combination: a straight-line loop over restrict
// pointers that the compiler vectorizes (see adam_loop in adam.cpp).
template <class T, bool kMax, bool kWd, bool kCentered, bool kMom>
void rmsprop_loop(T* __restrict p, const T* __restrict g, T* __restrict sq, T* __restrict ga, T* __restrict buf,
                  int64_t len, const RMSLoopConsts<T> k) {
  for (int64_t j = 0; j < len; ++j) {
    const T pj = p[j];
    T gj = kMax ? -g[j] : g[j];
    if constexpr (kWd) gj = gj + k.wd * pj;
    const T sj = sq[j] * k.alpha + k.one_m_alpha * gj * gj;
    sq[j] = sj;
    T avg;
    if constexpr (kCentered) {
      const T aj = ga[j] * k.alpha + k.one_m_alpha * gj;
      ga[j] = aj;
      avg = std::sqrt(sj + T(-1) * aj * aj) + k.eps;
    } else {
      avg = std::sqrt(sj) + k.eps;
    }
    if constexpr (kMom) {
      const T bj = buf[j] * k.mom + gj / avg;
      buf[j] = bj;
      p[j] = pj + k.lr * bj;
    } else {
      p[j] = pj + k.lr * (gj / avg);
    }
  }
}

template <class T>
void rmsprop_fused_kernel(const RMSHyper& h, const TensorList& params, const TensorList& grads,
                          const std::vector<ParamState*>& states) {
  const size_t n = params.size();
  struct Ptrs {
    T* p;
    const T* g;
    T* sq;
    T* ga;
    T* buf;
  };
  std::vector<Ptrs> ptrs(n);
  std::vector<int64_t> numels(n);
  for (size_t i = 0; i < n; ++i) {
    ParamState& s = *states[i];
    ptrs[i] = Ptrs{static_cast<T*>(params[i].data_ptr()), static_cast<const T*>(grads[i].data_ptr()),
                   static_cast<T*>(s.square_avg.data_ptr()),
                   h.centered ? static_cast<T*>(s.grad_avg.data_ptr()) : nullptr,
                   h.momentum > 0 ? static_cast<T*>(s.momentum_buffer.data_ptr()) : nullptr};
    numels[i] = params[i].numel();
  }
  const RMSLoopConsts<T> k{T(-h.lr), T(h.alpha), T(1 - h.alpha), T(h.eps), T(h.wd), T(h.momentum)};
  const bool use_wd = h.wd != 0, centered = h.centered, use_mom = h.momentum > 0, maximize = h.maximize;
  detail::multi_tensor_apply(numels, [&](size_t i, int64_t b, int64_t e) {
    const Ptrs& q = ptrs[i];
    T* p = q.p + b;
    const T* g = q.g + b;
    T* sq = q.sq + b;
    T* ga = centered ? q.ga + b : nullptr;
    T* buf = use_mom ? q.buf + b : nullptr;
    const int64_t len = e - b;
    using F = std::false_type;
    using Tr = std::true_type;
    auto run = [&](auto mx, auto wd, auto c, auto mo) {
      rmsprop_loop<T, decltype(mx)::value, decltype(wd)::value, decltype(c)::value, decltype(mo)::value>(
          p, g, sq, ga, buf, len, k);
    };
    auto with_mom = [&](auto mx, auto wd, auto c) { use_mom ? run(mx, wd, c, Tr{}) : run(mx, wd, c, F{}); };
    auto with_c = [&](auto mx, auto wd) { centered ? with_mom(mx, wd, Tr{}) : with_mom(mx, wd, F{}); };
    auto with_wd = [&](auto mx) { use_wd ? with_c(mx, Tr{}) : with_c(mx, F{}); };
    maximize ? with_wd(Tr{}) : with_wd(F{});
  });
  for (size_t i = 0; i < n; ++i) {
    params[i].bump_version();
    states[i]->square_avg.bump_version();
    if (h.centered) states[i]->grad_avg.bump_version();
    if (use_mom) states[i]->momentum_buffer.bump_version();
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
    if (!s.square_avg.defined()) {
      s.step = 0;
      s.square_avg = zeros_like(p, p.options());
    }
    if (h.momentum > 0 && !s.momentum_buffer.defined()) s.momentum_buffer = zeros_like(p, p.options());
    if (h.centered && !s.grad_avg.defined()) s.grad_avg = zeros_like(p, p.options());
    s.step += 1;
    states.push_back(&s);
    grads.push_back(p.grad());
  }
  if (o.impl() == Impl::Foreach) {
    rmsprop_foreach(h, params, grads, states);
    return;
  }
  for (ScalarType dt : {kFloat, kDouble}) {
    TensorList fp, fg;
    std::vector<ParamState*> fs;
    for (size_t i = 0; i < params.size(); ++i) {
      ParamState& s = *states[i];
      const bool fused = o.impl() == Impl::Fused &&
                         detail::fusable(params[i], {&grads[i], &s.square_avg, &s.grad_avg, &s.momentum_buffer});
      if (!fused) {
        if (dt == kFloat) rmsprop_for_loop(h, params[i], grads[i], s);  // once, in the first pass
        continue;
      }
      if (params[i].dtype() != dt) continue;
      fp.push_back(params[i]);
      fg.push_back(grads[i]);
      fs.push_back(&s);
    }
    if (fp.empty()) continue;
    if (dt == kFloat) rmsprop_fused_kernel<float>(h, fp, fg, fs);
    else rmsprop_fused_kernel<double>(h, fp, fg, fs);
  }
}

}  // namespace brisk::optim
