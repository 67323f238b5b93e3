// SGD (torch.optim.SGD, _single_tensor_sgd semantics):
//   d = maximize ? -grad : grad;  d += wd * p
//   buf = first step ? d : momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf      (when momentum != 0)
//   p += -lr * d
#include "brisk/foreach.h"
#include "brisk/ops.h"
#include "brisk/optim.h"
#include "optim/cuda_hooks.h"
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
    if (!s.momentum_buffer.defined()) {
      s.momentum_buffer = d.clone().detach();
    } else {
      s.momentum_buffer.mul_(h.momentum).add_(d, 1 - h.dampening);
    }
    d = h.nesterov ? d.add(s.momentum_buffer, h.momentum) : s.momentum_buffer;
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
      if (!s.momentum_buffer.defined()) {
        s.momentum_buffer = d[i].clone();
      } else {
        old_bufs.push_back(s.momentum_buffer);
        old_d.push_back(d[i]);
      }
      bufs.push_back(s.momentum_buffer);
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

template <class T>
void sgd_fused_kernel(const SGDHyper& h, const TensorList& params, const TensorList& grads,
                      const std::vector<ParamState*>& states, const std::vector<char>& first) {
  const size_t n = params.size();
  struct Ptrs {
    T* p;
    const T* g;
    T* buf;
    bool first;
  };
  std::vector<Ptrs> ptrs(n);
  std::vector<int64_t> numels(n);
  for (size_t i = 0; i < n; ++i) {
    ptrs[i] = Ptrs{static_cast<T*>(params[i].data_ptr()), static_cast<const T*>(grads[i].data_ptr()),
                   h.momentum != 0 ? static_cast<T*>(states[i]->momentum_buffer.data_ptr()) : nullptr,
                   first[i] != 0};
    numels[i] = params[i].numel();
  }
  const T lr = T(-h.lr), wd = T(h.wd), mom = T(h.momentum), damp = T(1 - h.dampening);
  const bool use_wd = h.wd != 0, use_mom = h.momentum != 0, nesterov = h.nesterov, maximize = h.maximize;
  detail::multi_tensor_apply(numels, [&](size_t i, int64_t b, int64_t e) {
    const Ptrs& q = ptrs[i];
    T* __restrict p = q.p + b;
    const T* __restrict g = q.g + b;
    T* __restrict buf = use_mom ? q.buf + b : nullptr;
    const bool first_step = q.first;
    const int64_t len = e - b;
    for (int64_t j = 0; j < len; ++j) {
      const T pj = p[j];
      T d = maximize ? -g[j] : g[j];
      if (use_wd) d = d + wd * pj;
      if (use_mom) {
        const T bj = first_step ? d : buf[j] * mom + damp * d;
        buf[j] = bj;
        d = nesterov ? d + mom * bj : bj;
      }
      p[j] = pj + lr * d;
    }
  });
  for (size_t i = 0; i < n; ++i) {
    params[i].bump_version();
    if (h.momentum != 0) states[i]->momentum_buffer.bump_version();
  }
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

void SGD::step_group(OptimizerParamGroup& group, const std::vector<Tensor>& params) {
  const auto& o = static_cast<const SGDOptions&>(group.options());
  const SGDHyper h{o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov(), o.maximize()};
  std::vector<ParamState*> states;
  TensorList grads;
  for (const Tensor& p : params) {
    ParamState& s = state(p);
    s.step += 1;
    states.push_back(&s);
    grads.push_back(p.grad());
  }
  if (o.impl() == Impl::Foreach) {
    sgd_foreach(h, params, grads, states);
    return;
  }
  // CUDA parameters: one multi-tensor kernel per device and dtype (backend/cuda/optim.cu).
  TensorList cp, cg, cbufs;
  std::vector<char> cfirst;
  for (ScalarType dt : {kFloat, kDouble}) {
    TensorList fp, fg;
    std::vector<ParamState*> fs;
    std::vector<char> first;
    for (size_t i = 0; i < params.size(); ++i) {
      ParamState& s = *states[i];
      const bool fused =
          o.impl() == Impl::Fused && detail::fusable(params[i], {&grads[i], &s.momentum_buffer});
      if (!fused) {
        if (dt != kFloat) continue;  // the rest is handled once, in the first pass
        if (o.impl() == Impl::Fused && cuda::detail::fusable_cuda(params[i], {&grads[i], &s.momentum_buffer})) {
          cfirst.push_back(h.momentum != 0 && !s.momentum_buffer.defined());
          if (cfirst.back()) s.momentum_buffer = empty_like(params[i], params[i].options());
          cp.push_back(params[i]);
          cg.push_back(grads[i]);
          if (h.momentum != 0) cbufs.push_back(s.momentum_buffer);
        } else {
          sgd_for_loop(h, params[i], grads[i], s);
        }
        continue;
      }
      if (params[i].dtype() != dt) continue;
      first.push_back(h.momentum != 0 && !s.momentum_buffer.defined());
      if (first.back()) s.momentum_buffer = empty_like(params[i], params[i].options());
      fp.push_back(params[i]);
      fg.push_back(grads[i]);
      fs.push_back(&s);
    }
    if (fp.empty()) continue;
    if (dt == kFloat) sgd_fused_kernel<float>(h, fp, fg, fs, first);
    else sgd_fused_kernel<double>(h, fp, fg, fs, first);
  }
  if (!cp.empty()) {
#ifdef BRISK_HAVE_CUDA
    cuda::detail::fused_sgd_cuda({h.lr, h.momentum, h.dampening, h.wd, h.nesterov, h.maximize}, cp, cg, cbufs,
                                 cfirst);
#else
    BRISK_FAIL("SGD", "CUDA parameters in a build without the CUDA backend");
#endif
  }
}

}  // namespace brisk::optim
