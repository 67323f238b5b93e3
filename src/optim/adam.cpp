// Adam and AdamW (torch.optim.Adam / AdamW, _single_tensor_adam semantics):
//   g = maximize ? -grad : grad
//   AdamW: p *= 1 - lr * wd            Adam: g += wd * p
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   vmax = max(vmax, v) (amsgrad; v below reads vmax)
//   p += -lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#include <type_traits>
#include <cmath>

#include "brisk/foreach.h"
#include "brisk/ops.h"
#include "brisk/optim.h"
#include "optim/cuda_hooks.h"
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
  s.exp_avg.mul_(h.beta1).add_(g, 1 - h.beta1);
  s.exp_avg_sq.mul_(h.beta2).addcmul_(g, g, 1 - h.beta2);
  const AdamStep st = adam_step(h, s.step);
  Tensor denom;
  if (h.amsgrad) {
    maximum_out(s.max_exp_avg_sq, s.max_exp_avg_sq, s.exp_avg_sq);
    denom = (s.max_exp_avg_sq.sqrt() / st.bc2_sqrt).add_(h.eps);
  } else {
    denom = (s.exp_avg_sq.sqrt() / st.bc2_sqrt).add_(h.eps);
  }
  p.addcdiv_(s.exp_avg, denom, -st.step_size);
}

// Each arithmetic step as one foreach op over the list (_multi_tensor_adam).
void adam_foreach(const AdamHyper& h, const TensorList& params, const TensorList& grads_in,
                  std::vector<ParamState*>& states) {
  const size_t n = params.size();
  TensorList exp_avgs, exp_avg_sqs, max_sqs;
  ScalarList step_sizes, bc2_sqrts;
  for (ParamState* s : states) {
    exp_avgs.push_back(s->exp_avg);
    exp_avg_sqs.push_back(s->exp_avg_sq);
    if (h.amsgrad) max_sqs.push_back(s->max_exp_avg_sq);
    const AdamStep st = adam_step(h, s->step);
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

template <class T>
struct AdamLoopConsts {
  T beta1, beta2, one_m_beta1, one_m_beta2, eps, wd, decay, step_size, bc2_sqrt;
};
template <class T, bool kMax, bool kDec, bool kL2, bool kAms>
void adam_loop(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, T* __restrict vmax,
               int64_t len, const AdamLoopConsts<T> k) {
  for (int64_t j = 0; j < len; ++j) {
    T gj = kMax ? -g[j] : g[j];
    T pj = p[j];
    if constexpr (kDec) pj = pj * k.decay;
    if constexpr (kL2) gj = gj + k.wd * pj;
    const T mj = m[j] * k.beta1 + k.one_m_beta1 * gj;
    T vj = v[j] * k.beta2 + k.one_m_beta2 * gj * gj;
    m[j] = mj;
    v[j] = vj;
    if constexpr (kAms) {
      vj = vmax[j] < vj || vj != vj ? vj : vmax[j];
      vmax[j] = vj;
    }
    const T denom = std::sqrt(vj) / k.bc2_sqrt + k.eps;
    p[j] = pj + k.step_size * (mj / denom);
  }
}

// The whole update in one pass: per element, p, g, m, v (, vmax) are loaded
// once, updated in registers and stored once.
template <class T>
void adam_fused_kernel(const AdamHyper& h, const TensorList& params, const TensorList& grads,
                       const std::vector<ParamState*>& states) {
  const size_t n = params.size();
  struct Ptrs {
    T* p;
    const T* g;
    T* m;
    T* v;
    T* vmax;
    T step_size, bc2_sqrt;
  };
  std::vector<Ptrs> ptrs(n);
  std::vector<int64_t> numels(n);
  for (size_t i = 0; i < n; ++i) {
    const AdamStep st = adam_step(h, states[i]->step);
    ptrs[i] = Ptrs{static_cast<T*>(params[i].data_ptr()), static_cast<const T*>(grads[i].data_ptr()),
                   static_cast<T*>(states[i]->exp_avg.data_ptr()), static_cast<T*>(states[i]->exp_avg_sq.data_ptr()),
                   h.amsgrad ? static_cast<T*>(states[i]->max_exp_avg_sq.data_ptr()) : nullptr,
                   T(-st.step_size), T(st.bc2_sqrt)};
    numels[i] = params[i].numel();
  }
  const T beta1 = T(h.beta1), beta2 = T(h.beta2), one_m_beta1 = T(1 - h.beta1), one_m_beta2 = T(1 - h.beta2);
  const T eps = T(h.eps), wd = T(h.wd), decay = T(1 - h.lr * h.wd);
  const bool l2 = !h.decoupled && h.wd != 0, decoupled = h.decoupled && h.wd != 0;
  const bool maximize = h.maximize, amsgrad = h.amsgrad;
  detail::multi_tensor_apply(numels, [&](size_t i, int64_t b, int64_t e) {
    const Ptrs& q = ptrs[i];
    T* __restrict p = q.p + b;
    const T* __restrict g = q.g + b;
    T* __restrict m = q.m + b;
    T* __restrict v = q.v + b;
    T* __restrict vmax = amsgrad ? q.vmax + b : nullptr;
    const T step_size = q.step_size, bc2_sqrt = q.bc2_sqrt;
    const int64_t len = e - b;
    // The flags become template arguments: each variant is a straight-line
    // loop over restrict pointers that the compiler vectorizes (a runtime
    // flag in the loop, or pointers reached through a closure, kept it scalar).
    const AdamLoopConsts<T> k{beta1, beta2, one_m_beta1, one_m_beta2, eps, wd, decay, step_size, bc2_sqrt};
    using F = std::false_type;
    using Tr = std::true_type;
    auto run = [&](auto mx, auto dc, auto l2c, auto am) {
      adam_loop<T, decltype(mx)::value, decltype(dc)::value, decltype(l2c)::value, decltype(am)::value>(
          p, g, m, v, vmax, len, k);
    };
    auto with_ams = [&](auto mx, auto dc, auto l2c) { amsgrad ? run(mx, dc, l2c, Tr{}) : run(mx, dc, l2c, F{}); };
    auto with_l2 = [&](auto mx, auto dc) { l2 ? with_ams(mx, dc, Tr{}) : with_ams(mx, dc, F{}); };
    auto with_dec = [&](auto mx) { decoupled ? with_l2(mx, Tr{}) : with_l2(mx, F{}); };
    maximize ? with_dec(Tr{}) : with_dec(F{});
  });
  for (size_t i = 0; i < n; ++i) {
    params[i].bump_version();
    states[i]->exp_avg.bump_version();
    states[i]->exp_avg_sq.bump_version();
    if (amsgrad) states[i]->max_exp_avg_sq.bump_version();
  }
}

/// The fused step of CUDA parameters: one multi-tensor kernel per device and
/// dtype (backend/cuda/optim.cu); the step counts stay here and reach the
/// kernel as bias corrections.
void adam_fused_cuda(const AdamHyper& h, const TensorList& params, const TensorList& grads,
                     const std::vector<ParamState*>& states) {
#ifdef BRISK_HAVE_CUDA
  TensorList m, v, vmax;
  std::vector<double> step_sizes, bc2_sqrts;
  int64_t last_step = -1;
  AdamStep st{};
  for (ParamState* s : states) {
    m.push_back(s->exp_avg);
    v.push_back(s->exp_avg_sq);
    if (h.amsgrad) vmax.push_back(s->max_exp_avg_sq);
    if (s->step != last_step) st = adam_step(h, s->step), last_step = s->step;  // usually one step count
    step_sizes.push_back(st.step_size);
    bc2_sqrts.push_back(st.bc2_sqrt);
  }
  cuda::detail::fused_adam_cuda({h.lr, h.beta1, h.beta2, h.eps, h.wd, h.amsgrad, h.maximize, h.decoupled}, params,
                                grads, m, v, vmax, step_sizes, bc2_sqrts);
#else
  (void)h, (void)params, (void)grads, (void)states;
  BRISK_FAIL("Adam", "CUDA parameters in a build without the CUDA backend");
#endif
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
    if (!s.exp_avg.defined()) {
      s.step = 0;
      s.exp_avg = zeros_like(p, p.options());
      s.exp_avg_sq = zeros_like(p, p.options());
    }
    if (h.amsgrad && !s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = zeros_like(p, p.options());
    s.step += 1;
    states.push_back(&s);
    grads.push_back(p.grad());
  }
  if (impl == Impl::Foreach) {
    adam_foreach(h, params, grads, states);
    return;
  }
  // Fused for eligible tensors, the reference for the rest (and for ForLoop).
  TensorList fp, fg, cp, cg;  // c*: CUDA tensors for the CUDA fused kernel
  std::vector<ParamState*> fs, cs;
  for (size_t i = 0; i < params.size(); ++i) {
    ParamState& s = *states[i];
    if (impl == Impl::Fused &&
        detail::fusable(params[i], {&grads[i], &s.exp_avg, &s.exp_avg_sq, &s.max_exp_avg_sq})) {
      fp.push_back(params[i]);
      fg.push_back(grads[i]);
      fs.push_back(&s);
    } else if (impl == Impl::Fused && cuda::detail::fusable_cuda(params[i], {&grads[i], &s.exp_avg, &s.exp_avg_sq,
                                                                               &s.max_exp_avg_sq})) {
      cp.push_back(params[i]);
      cg.push_back(grads[i]);
      cs.push_back(&s);
    } else {
      adam_for_loop(h, params[i], grads[i], s);
    }
  }
  if (!cp.empty()) adam_fused_cuda(h, cp, cg, cs);
  // One kernel per dtype: a group may mix float32 and float64 parameters.
  for (ScalarType dt : {kFloat, kDouble}) {
    TensorList dp, dg;
    std::vector<ParamState*> ds;
    for (size_t i = 0; i < fp.size(); ++i)
      if (fp[i].dtype() == dt) {
        dp.push_back(fp[i]);
        dg.push_back(fg[i]);
        ds.push_back(fs[i]);
      }
    if (dp.empty()) continue;
    if (dt == kFloat) adam_fused_kernel<float>(h, dp, dg, ds);
    else adam_fused_kernel<double>(h, dp, dg, ds);
  }
}

}  // namespace brisk::optim
