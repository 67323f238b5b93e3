// The CPU multi-tensor kernels: the foreach ops' pointwise steps and norm,
// and the fused Adam/AdamW, SGD and RMSprop steps (rows foreach_pointwise,
// foreach_norm, fused_adam, fused_sgd, fused_rmsprop of core/dispatch.h;
// contract in core/multi_tensor_plan.h). One parallel pass over (tensor,
// range) pieces (backend/cpu/multi_tensor.h); float32 and float64.
#include <cmath>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "backend/cpu/multi_tensor.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/multi_tensor_plan.h"
#include "kernels/math.h"

namespace brisk::cpu {
namespace BRISK_CPU_ISA {
namespace {

using multi_tensor::ForeachOp;

template <class F>
void dispatch_float(ScalarType dt, const F& f) {
  if (dt == kDouble) f(double{});
  else f(float{});
}

/// Runs k(out, a, b, c, n, i) on every piece: out/a/b/c point at the piece's
/// first element of tensor i in `out`, `a`, `b` and `c` (null for absent lists).
/// An in-place step (a is out) reads a through out's pointers.
template <class T, class K>
void apply(const TensorList& out, const TensorList* a, const TensorList* b, const TensorList* c, const K& k) {
  const size_t n = out.size();
  const bool a_is_out = a == &out;
  std::vector<int64_t> numels(n);
  std::vector<T*> po(n);
  std::vector<const T*> pa(a && !a_is_out ? n : 0), pb(b ? n : 0), pc(c ? n : 0);
  for (size_t i = 0; i < n; ++i) {
    numels[i] = out[i].numel();
    po[i] = static_cast<T*>(out[i].data_ptr());
    if (a && !a_is_out) pa[i] = static_cast<const T*>((*a)[i].data_ptr());
    if (b) pb[i] = static_cast<const T*>((*b)[i].data_ptr());
    if (c) pc[i] = static_cast<const T*>((*c)[i].data_ptr());
  }
  multi_tensor_apply(numels, [&](size_t i, int64_t begin, int64_t end) {
    const T* ap = a ? (a_is_out ? po[i] : pa[i]) + begin : nullptr;
    k(po[i] + begin, ap, b ? pb[i] + begin : nullptr, c ? pc[i] + begin : nullptr, end - begin, i);
  });
}

// ---- foreach ----------------------------------------------------------------------------
// The scalar is converted as the per-op loops always did: to<T>() for add,
// addcmul and lerp, through double for mul and addcdiv; per-tensor scalars
// (doubles) with T(s).

void foreach_kernel(ForeachOp op, const TensorList& out, const TensorList* x, const TensorList* y,
                    const TensorList* z, const Scalar& scalar, const std::vector<double>* scalars) {
  if (out.empty()) return;
  dispatch_float(out[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    switch (op) {
      case ForeachOp::AddScalar:
        if (scalars) {
          apply<T>(out, x, nullptr, nullptr, [&](T* o, const T* a, const T*, const T*, int64_t n, size_t i) {
            const T s = T((*scalars)[i]);
            for (int64_t j = 0; j < n; ++j) o[j] = a[j] + s;
          });
        } else {
          const T s = scalar.to<T>();
          apply<T>(out, x, nullptr, nullptr, [s](T* o, const T* a, const T*, const T*, int64_t n, size_t) {
            for (int64_t j = 0; j < n; ++j) o[j] = a[j] + s;
          });
        }
        break;
      case ForeachOp::AddList: {
        const T al = scalar.to<T>();
        apply<T>(out, x, y, nullptr, [al](T* o, const T* a, const T* b, const T*, int64_t n, size_t) {
          if (al == T(1))
            for (int64_t j = 0; j < n; ++j) o[j] = a[j] + b[j];
          else
            for (int64_t j = 0; j < n; ++j) o[j] = a[j] + al * b[j];
        });
        break;
      }
      case ForeachOp::MulScalar: {
        const double s0 = scalar.to_double();
        apply<T>(out, x, nullptr, nullptr, [&](T* o, const T* a, const T*, const T*, int64_t n, size_t i) {
          const T s = T(scalars ? (*scalars)[i] : s0);
          for (int64_t j = 0; j < n; ++j) o[j] = a[j] * s;
        });
        break;
      }
      case ForeachOp::MulList:
        apply<T>(out, x, y, nullptr, [](T* o, const T* a, const T* b, const T*, int64_t n, size_t) {
          for (int64_t j = 0; j < n; ++j) o[j] = a[j] * b[j];
        });
        break;
      case ForeachOp::DivScalar: {
        const double s0 = scalar.to_double();
        apply<T>(out, x, nullptr, nullptr, [&](T* o, const T* a, const T*, const T*, int64_t n, size_t i) {
          const T s = T(scalars ? (*scalars)[i] : s0);
          for (int64_t j = 0; j < n; ++j) o[j] = a[j] / s;  // a division, as div_: not a multiply by 1/s
        });
        break;
      }
      case ForeachOp::Addcmul: {
        const T v = scalar.to<T>();
        apply<T>(out, x, y, z, [v](T* o, const T* a, const T* b, const T* c, int64_t n, size_t) {
          for (int64_t j = 0; j < n; ++j) o[j] = a[j] + v * b[j] * c[j];
        });
        break;
      }
      case ForeachOp::Addcdiv: {
        const double v0 = scalar.to_double();
        apply<T>(out, x, y, z, [&](T* o, const T* a, const T* b, const T* c, int64_t n, size_t i) {
          const T v = T(scalars ? (*scalars)[i] : v0);
          for (int64_t j = 0; j < n; ++j) o[j] = a[j] + v * (b[j] / c[j]);
        });
        break;
      }
      case ForeachOp::Lerp: {
        const T w = scalar.to<T>();
        apply<T>(out, x, y, nullptr, [w](T* o, const T* a, const T* e, const T*, int64_t n, size_t) {
          for (int64_t j = 0; j < n; ++j) o[j] = math::lerp(a[j], e[j], w);
        });
        break;
      }
      case ForeachOp::Maximum:
        apply<T>(out, x, y, nullptr, [](T* o, const T* a, const T* b, const T*, int64_t n, size_t) {
          for (int64_t j = 0; j < n; ++j) o[j] = math::maximum(a[j], b[j]);
        });
        break;
      case ForeachOp::Sqrt:
        apply<T>(out, x, nullptr, nullptr, [](T* o, const T* a, const T*, const T*, int64_t n, size_t) {
          for (int64_t j = 0; j < n; ++j) o[j] = std::sqrt(a[j]);
        });
        break;
      case ForeachOp::Zero:
        apply<T>(out, nullptr, nullptr, nullptr, [](T* o, const T*, const T*, const T*, int64_t n, size_t) {
          for (int64_t j = 0; j < n; ++j) o[j] = T(0);
        });
        break;
    }
  });
}

/// Partial results per piece, combined in list order: the result does not
/// depend on the number of threads.
TensorList foreach_norm_kernel(const TensorList& self, double p) {
  const bool inf = std::isinf(p) && p > 0;
  BRISK_INTERNAL_ASSERT(p == 1 || p == 2 || inf, "foreach_norm kernel: ord ", p);
  std::vector<int64_t> numels;
  for (const Tensor& t : self) numels.push_back(t.numel());
  int64_t total = 0;
  std::vector<Piece> pieces = make_pieces(numels, &total);
  std::vector<double> partial(pieces.size());
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    for_each_piece(pieces, total, [&](int64_t k, const Piece& pc) {
      const T* x = static_cast<const T*>(self[size_t(pc.tensor)].data_ptr());
      double acc = 0;
      if (inf) {
        for (int64_t j = pc.begin; j < pc.end; ++j) {
          const double a = std::abs(double(x[j]));
          acc = (a > acc || a != a) ? a : acc;
        }
      } else if (p == 1) {
        for (int64_t j = pc.begin; j < pc.end; ++j) acc += std::abs(double(x[j]));
      } else {
        for (int64_t j = pc.begin; j < pc.end; ++j) acc += double(x[j]) * double(x[j]);
      }
      partial[size_t(k)] = acc;
    });
  });
  std::vector<double> acc(self.size(), 0.0);
  for (size_t k = 0; k < pieces.size(); ++k) {
    double& a = acc[size_t(pieces[k].tensor)];
    if (inf) a = (partial[k] > a || partial[k] != partial[k]) ? partial[k] : a;
    else a += partial[k];
  }
  TensorList r;
  r.reserve(self.size());
  for (size_t i = 0; i < self.size(); ++i)
    r.push_back(scalar_tensor(p == 2 ? std::sqrt(acc[i]) : acc[i], self[i].dtype()));
  return r;
}

/// found_inf = 1 if any element is inf or NaN; every element times
/// inv_scale in its math type (as x * float(inv) in PyTorch's kernel; a
/// float16 or bfloat16 element in float, rounded once). One pass: the check
/// reads the value the multiply reads.
// (an undefined inv_scale only checks: nothing written; detail::amp_foreach_non_finite_check_)
void amp_unscale_kernel(const TensorList& self, const Tensor& found_inf, const Tensor& inv_scale) {
  std::vector<int64_t> numels;
  for (const Tensor& t : self) numels.push_back(t.numel());
  int64_t total = 0;
  std::vector<Piece> pieces = make_pieces(numels, &total);
  std::vector<uint8_t> bad(pieces.size(), 0);
  const bool check_only = !inv_scale.defined();
  const float inv = check_only ? 1.0f : *static_cast<const float*>(inv_scale.data_ptr());
  auto run = [&](auto z) {
    using T = decltype(z);        // storage
    using M = opmath_t<T>;        // math: float for the 16-bit types
    const M s = static_cast<M>(inv);
    for_each_piece(pieces, total, [&](int64_t k, const Piece& pc) {
      T* x = static_cast<T*>(self[size_t(pc.tensor)].data_ptr());
      bool b = false;
      if (check_only) {
        for (int64_t j = pc.begin; j < pc.end; ++j) {
          const M v = static_cast<M>(x[j]);
          b |= !(v - v == M(0));
        }
      } else {
        for (int64_t j = pc.begin; j < pc.end; ++j) {
          const M v = static_cast<M>(x[j]);
          b |= !(v - v == M(0));  // inf - inf and NaN - NaN are NaN
          x[j] = static_cast<T>(v * s);
        }
      }
      bad[size_t(k)] = b;
    });
  };
  switch (self.empty() ? kFloat : self[0].dtype()) {
    case kDouble: run(double{}); break;
    case kHalf: run(Half{}); break;
    case kBFloat16: run(BFloat16{}); break;
    default: run(float{});
  }
  for (uint8_t b : bad)
    if (b) {
      *static_cast<float*>(found_inf.data_ptr()) = 1.0f;
      break;
    }
}

/// Calls f(T{}, indices) for the float32 tensors of `params`, then the float64 ones.
template <class F>
void by_dtype(const TensorList& params, const F& f) {
  for (ScalarType dt : {kFloat, kDouble}) {
    std::vector<size_t> idx;
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].dtype() == dt) idx.push_back(i);
    if (idx.empty()) continue;
    if (dt == kFloat) f(float{}, idx);
    else f(double{}, idx);
  }
}

/// The value behind an optional grad_scale / found_inf tensor (one float32
/// element on the CPU: no synchronisation), or `none`.
double amp_value(const char* op, const char* name, const Tensor& t, double none) {
  if (!t.defined()) return none;
  BRISK_CHECK(t.is_cpu() && t.dtype() == kFloat && t.numel() == 1, op, name,
              " must be a one-element float32 tensor on the CPU, got ", t.dtype(), " of ", t.numel(),
              " elements on ", t.device());
  return static_cast<const float*>(t.data_ptr())[0];
}

/// Divides the gradients by grad_scale in place (x * (1 / scale) in the
/// dtype, as the CUDA kernels), so that p.grad after the step holds real
/// gradients (Note [Fused steps and grad scaling] in backend/cuda/optim.cu).
void unscale_grads(const TensorList& grads, double scale) {
  by_dtype(grads, [&](auto zero, const std::vector<size_t>& idx) {
    using T = decltype(zero);
    const T inv = T(1) / T(scale);
    for (size_t i : idx) {
      T* g = static_cast<T*>(grads[i].data_ptr());
      const int64_t n = grads[i].numel();
      for (int64_t j = 0; j < n; ++j) g[j] = g[j] * inv;
      grads[i].bump_version();
    }
  });
}

/// The lists of a fused step have one entry per parameter (the front ends build them).
void check_lengths(const char* op, size_t n, std::initializer_list<size_t> sizes) {
  for (size_t s : sizes) BRISK_INTERNAL_ASSERT(s == n, op, ": fused step lists of different lengths");
}

// ---- Adam / AdamW -------------------------------------------------------------------------

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

template <class T>
void adam_typed(const multi_tensor::FusedAdamArgs& h, const std::vector<size_t>& idx, const TensorList& params,
                const TensorList& grads, const TensorList& exp_avgs, const TensorList& exp_avg_sqs,
                const TensorList& max_sqs, const std::vector<double>& step_sizes,
                const std::vector<double>& bc2_sqrts, const TensorList& state_steps) {
  const size_t n = idx.size();
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
  for (size_t k = 0; k < n; ++k) {
    const size_t i = idx[k];
    double step_size, bc2_sqrt;
    if (state_steps.empty()) {
      step_size = step_sizes[i];
      bc2_sqrt = bc2_sqrts[i];
    } else {  // the front end's arithmetic (adam.cpp adam_step), from the tensor's count
      const double t = static_cast<const float*>(state_steps[i].data_ptr())[0];
      step_size = h.lr / (1 - std::pow(h.beta1, t));
      bc2_sqrt = std::sqrt(1 - std::pow(h.beta2, t));
    }
    ptrs[k] = Ptrs{static_cast<T*>(params[i].data_ptr()), static_cast<const T*>(grads[i].data_ptr()),
                   static_cast<T*>(exp_avgs[i].data_ptr()), static_cast<T*>(exp_avg_sqs[i].data_ptr()),
                   h.amsgrad ? static_cast<T*>(max_sqs[i].data_ptr()) : nullptr, T(-step_size), T(bc2_sqrt)};
    numels[k] = params[i].numel();
  }
  const T beta1 = T(h.beta1), beta2 = T(h.beta2), one_m_beta1 = T(1 - h.beta1), one_m_beta2 = T(1 - h.beta2);
  const T eps = T(h.eps), wd = T(h.weight_decay), decay = T(1 - h.lr * h.weight_decay);
  const bool l2 = !h.decoupled && h.weight_decay != 0, decoupled = h.decoupled && h.weight_decay != 0;
  const bool maximize = h.maximize, amsgrad = h.amsgrad;
  multi_tensor_apply(numels, [&](size_t i, int64_t b, int64_t e) {
    const Ptrs& q = ptrs[i];
    T* __restrict p = q.p + b;
    const T* __restrict g = q.g + b;
    T* __restrict m = q.m + b;
    T* __restrict v = q.v + b;
    T* __restrict vmax = amsgrad ? q.vmax + b : nullptr;
    const int64_t len = e - b;
    const AdamLoopConsts<T> k{beta1, beta2, one_m_beta1, one_m_beta2, eps, wd, decay, q.step_size, q.bc2_sqrt};
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
}

void fused_adam_kernel(const multi_tensor::FusedAdamArgs& h, const TensorList& params, const TensorList& grads,
                       const TensorList& exp_avgs, const TensorList& exp_avg_sqs, const TensorList& max_sqs,
                       const std::vector<double>& step_sizes, const std::vector<double>& bc2_sqrts,
                       const TensorList& state_steps, const Tensor& grad_scale, const Tensor& found_inf) {
  const char* op = h.decoupled ? "AdamW" : "Adam";
  const bool device_steps = !state_steps.empty();
  check_lengths(op, params.size(),
                {grads.size(), exp_avgs.size(), exp_avg_sqs.size(),
                 device_steps ? state_steps.size() : step_sizes.size(),
                 device_steps ? params.size() : bc2_sqrts.size(), h.amsgrad ? max_sqs.size() : params.size()});
  for (const Tensor& t : state_steps)
    BRISK_CHECK(t.is_cpu() && t.dtype() == kFloat && t.numel() == 1, op,
                "state steps must be one-element float32 tensors on the CPU, got ", t.dtype(), " on ", t.device());
  if (amp_value(op, "found_inf", found_inf, 0) != 0) return;  // a skipped step changes nothing
  const double scale = amp_value(op, "grad_scale", grad_scale, 1);
  if (grad_scale.defined()) unscale_grads(grads, scale);
  by_dtype(params, [&](auto zero, const std::vector<size_t>& idx) {
    adam_typed<decltype(zero)>(h, idx, params, grads, exp_avgs, exp_avg_sqs, max_sqs, step_sizes, bc2_sqrts,
                               state_steps);
  });
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].bump_version();
    exp_avgs[i].bump_version();
    exp_avg_sqs[i].bump_version();
    if (h.amsgrad) max_sqs[i].bump_version();
  }
}

// ---- SGD ----------------------------------------------------------------------------------

template <class T>
void sgd_typed(const multi_tensor::FusedSgdArgs& h, const std::vector<size_t>& idx, const TensorList& params,
               const TensorList& grads, const TensorList& bufs, const std::vector<char>& first) {
  const size_t n = idx.size();
  struct Ptrs {
    T* p;
    const T* g;
    T* buf;
    bool first;
  };
  std::vector<Ptrs> ptrs(n);
  std::vector<int64_t> numels(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = idx[k];
    ptrs[k] = Ptrs{static_cast<T*>(params[i].data_ptr()), static_cast<const T*>(grads[i].data_ptr()),
                   h.momentum != 0 ? static_cast<T*>(bufs[i].data_ptr()) : nullptr, first[i] != 0};
    numels[k] = params[i].numel();
  }
  const T lr = T(-h.lr), wd = T(h.weight_decay), mom = T(h.momentum), damp = T(1 - h.dampening);
  const bool use_wd = h.weight_decay != 0, use_mom = h.momentum != 0, nesterov = h.nesterov,
             maximize = h.maximize;
  multi_tensor_apply(numels, [&](size_t i, int64_t b, int64_t e) {
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
}

void fused_sgd_kernel(const multi_tensor::FusedSgdArgs& h, const TensorList& params, const TensorList& grads,
                      const TensorList& bufs, const std::vector<char>& first, const Tensor& grad_scale,
                      const Tensor& found_inf) {
  check_lengths("SGD", params.size(),
                {grads.size(), first.size(), h.momentum != 0 ? bufs.size() : params.size()});
  if (amp_value("SGD", "found_inf", found_inf, 0) != 0) return;  // a skipped step changes nothing
  if (grad_scale.defined()) unscale_grads(grads, amp_value("SGD", "grad_scale", grad_scale, 1));
  by_dtype(params, [&](auto zero, const std::vector<size_t>& idx) {
    sgd_typed<decltype(zero)>(h, idx, params, grads, bufs, first);
  });
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].bump_version();
    if (h.momentum != 0) bufs[i].bump_version();
  }
}

// ---- RMSprop ------------------------------------------------------------------------------

template <class T>
struct RMSLoopConsts {
  T lr, alpha, one_m_alpha, eps, wd, mom;
};
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
void rmsprop_typed(const multi_tensor::FusedRmspropArgs& h, const std::vector<size_t>& idx, const TensorList& params,
                   const TensorList& grads, const TensorList& square_avgs, const TensorList& grad_avgs,
                   const TensorList& bufs) {
  const size_t n = idx.size();
  struct Ptrs {
    T* p;
    const T* g;
    T* sq;
    T* ga;
    T* buf;
  };
  std::vector<Ptrs> ptrs(n);
  std::vector<int64_t> numels(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = idx[k];
    ptrs[k] = Ptrs{static_cast<T*>(params[i].data_ptr()), static_cast<const T*>(grads[i].data_ptr()),
                   static_cast<T*>(square_avgs[i].data_ptr()),
                   h.centered ? static_cast<T*>(grad_avgs[i].data_ptr()) : nullptr,
                   h.momentum > 0 ? static_cast<T*>(bufs[i].data_ptr()) : nullptr};
    numels[k] = params[i].numel();
  }
  const RMSLoopConsts<T> k{T(-h.lr), T(h.alpha), T(1 - h.alpha), T(h.eps), T(h.weight_decay), T(h.momentum)};
  const bool use_wd = h.weight_decay != 0, centered = h.centered, use_mom = h.momentum > 0, maximize = h.maximize;
  multi_tensor_apply(numels, [&](size_t i, int64_t b, int64_t e) {
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
}

void fused_rmsprop_kernel(const multi_tensor::FusedRmspropArgs& h, const TensorList& params, const TensorList& grads,
                          const TensorList& square_avgs, const TensorList& grad_avgs, const TensorList& bufs) {
  check_lengths("RMSprop", params.size(),
                {grads.size(), square_avgs.size(), h.centered ? grad_avgs.size() : params.size(),
                 h.momentum > 0 ? bufs.size() : params.size()});
  by_dtype(params, [&](auto zero, const std::vector<size_t>& idx) {
    rmsprop_typed<decltype(zero)>(h, idx, params, grads, square_avgs, grad_avgs, bufs);
  });
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].bump_version();
    square_avgs[i].bump_version();
    if (h.centered) grad_avgs[i].bump_version();
    if (h.momentum > 0) bufs[i].bump_version();
  }
}

}  // namespace

void register_multi_tensor_kernels() {
  const uint32_t fl = dtype_mask({kFloat, kDouble});
  register_kernel<OpId::foreach_pointwise>(kCPU, foreach_kernel, fl);
  register_kernel<OpId::foreach_norm>(kCPU, foreach_norm_kernel, fl);
  register_kernel<OpId::amp_unscale>(kCPU, amp_unscale_kernel, dtype_mask({kFloat, kDouble, kHalf, kBFloat16}));
  register_kernel<OpId::fused_adam>(kCPU, fused_adam_kernel, fl);
  register_kernel<OpId::fused_sgd>(kCPU, fused_sgd_kernel, fl);
  register_kernel<OpId::fused_rmsprop>(kCPU, fused_rmsprop_kernel, fl);
}

}  // namespace BRISK_CPU_ISA
}  // namespace brisk::cpu
