// Fused optimizer steps on CUDA (rows fused_adam and fused_sgd of the op table,
// core/multi_tensor_plan.h):
// Adam/AdamW and SGD over multi_tensor_apply, one pass over memory per step.
// The arithmetic is that of the CPU fused loops (src/optim/adam.cpp,
// sgd.cpp), in float for float32/float16/bfloat16 and double for float64.
// Flags are runtime values uniform over the launch (one kernel per dtype).
//
// Mixed precision (Note [Fused steps and grad scaling]): an optional
// one-element float32 `grad_scale` divides each gradient (multiplies by its
// reciprocal), and the unscaled gradient is stored back into the grad
// tensor, as PyTorch's fused optimizers do, so that code reading p.grad
// after the step sees real gradients. An optional `found_inf` that holds a
// nonzero value turns the whole step into a no-op (the gradients stay
// scaled), read by every block on the device: no host synchronisation.
#include <utility>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/float_io.cuh"
#include "backend/cuda/multi_tensor_apply.cuh"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/multi_tensor_plan.h"

namespace brisk::cuda::detail {

using ::brisk::multi_tensor::ForeachOp;
using ::brisk::multi_tensor::FusedAdamArgs;
using ::brisk::multi_tensor::FusedSgdArgs;

namespace {

using mta::kIlp;
// Adam lists: 0 param, 1 grad, 2 exp_avg, 3 exp_avg_sq, 4 max_exp_avg_sq (amsgrad).
// SGD lists: 0 param, 1 grad, 2 momentum buffer. Functors take either
// metadata layout (multi_tensor_apply.cuh).

/// Shared by the fused steps: the skip test and the gradient's unscale factor.
struct AmpArgs {
  const float* grad_scale;  ///< null: no unscaling
  const float* found_inf;   ///< null: never skip
  __device__ __forceinline__ bool skip() const { return found_inf != nullptr && *found_inf != 0.f; }
  template <class O>
  __device__ __forceinline__ O inv_scale() const {
    return grad_scale ? O(1) / O(*grad_scale) : O(1);
  }
};

template <class S>
struct AdamFunctor {
  double beta1, beta2, one_m_beta1, one_m_beta2, eps, wd, decay, step_size, bc2_sqrt;  // step_size < 0
  double lr;  // (device steps: step_size = -lr / (1 - beta1^step))
  AmpArgs amp;
  bool maximize, l2, decoupled, amsgrad, device_steps;

  template <class M>
  __device__ void operator()(const M& m, int block) const {
    using IO = FloatIo<S>;
    using O = typename IO::opmath;
    if (amp.skip()) return;
    const mta::BlockWork w = mta::block_work(m, block);
    double step_size_v = step_size, bc2_sqrt_v = bc2_sqrt;
    if constexpr (M::kDepthV > 5) {
      // capturable: list 5 holds each tensor's float32 step count (Note [Capturable Adam]);
      // the factors in float64 as on the host, so the step matches the host-count path
      if (device_steps) {
        const double t = double(*static_cast<const float*>(m.addr[5][w.slot]));
        step_size_v = -lr / (1.0 - ::pow(beta1, t));
        bc2_sqrt_v = ::sqrt(1.0 - ::pow(beta2, t));
      }
    }
    S* p = static_cast<S*>(m.addr[0][w.slot]) + w.begin;
    S* g = static_cast<S*>(m.addr[1][w.slot]) + w.begin;
    S* ea = static_cast<S*>(m.addr[2][w.slot]) + w.begin;
    S* eas = static_cast<S*>(m.addr[3][w.slot]) + w.begin;
    S* vmax = amsgrad ? static_cast<S*>(m.addr[4][w.slot]) + w.begin : nullptr;
    const int n = int(w.end - w.begin);
    const bool unscale = amp.grad_scale != nullptr;
    const O inv = amp.inv_scale<O>();
    const O b1 = O(beta1), b2 = O(beta2), omb1 = O(one_m_beta1), omb2 = O(one_m_beta2), ep = O(eps), wdv = O(wd),
            dec = O(decay), ss = O(step_size_v), bc2 = O(bc2_sqrt_v);
    const int step = int(blockDim.x) * kIlp;
    for (int base = int(threadIdx.x); base < n; base += step) {
      O rp[kIlp], rg[kIlp], rm[kIlp], rv[kIlp], rx[kIlp];
#pragma unroll
      for (int k = 0; k < kIlp; ++k) {
        const int i = base + k * int(blockDim.x);
        rp[k] = rg[k] = rm[k] = rv[k] = rx[k] = O(0);
        if (i < n) {
          rp[k] = IO::load(p, i);
          rg[k] = IO::load(g, i);
          rm[k] = IO::load(ea, i);
          rv[k] = IO::load(eas, i);
          if (amsgrad) rx[k] = IO::load(vmax, i);
        }
      }
#pragma unroll
      for (int k = 0; k < kIlp; ++k) {
        const int i = base + k * int(blockDim.x);
        if (i >= n) continue;
        O gj = rg[k];
        if (unscale) {
          gj = gj * inv;
          IO::store(g, i, gj);
        }
        if (maximize) gj = -gj;
        O pj = rp[k];
        if (decoupled) pj = pj * dec;
        if (l2) gj = gj + wdv * pj;
        const O mj = rm[k] * b1 + omb1 * gj;
        O vj = rv[k] * b2 + omb2 * gj * gj;
        IO::store(ea, i, mj);
        IO::store(eas, i, vj);
        if (amsgrad) {
          vj = rx[k] < vj || vj != vj ? vj : rx[k];
          IO::store(vmax, i, vj);
        }
        const O denom = ::sqrt(vj) / bc2 + ep;
        IO::store(p, i, pj + ss * (mj / denom));
      }
    }
  }
};

template <class S>
struct SgdFunctor {
  double lr, wd, momentum, damp;  // lr < 0; damp = 1 - dampening
  AmpArgs amp;
  bool maximize, use_wd, use_mom, nesterov, first;

  template <class M>
  __device__ void operator()(const M& m, int block) const {
    using IO = FloatIo<S>;
    using O = typename IO::opmath;
    const mta::BlockWork w = mta::block_work(m, block);
    S* p = static_cast<S*>(m.addr[0][w.slot]) + w.begin;
    S* g = static_cast<S*>(m.addr[1][w.slot]) + w.begin;
    S* buf = use_mom ? static_cast<S*>(m.addr[2][w.slot]) + w.begin : nullptr;
    const int n = int(w.end - w.begin);
    if (amp.skip()) {
      // A skipped first step still leaves the new buffer defined (zeros).
      if (use_mom && first)
        for (int i = int(threadIdx.x); i < n; i += int(blockDim.x)) IO::store(buf, i, O(0));
      return;
    }
    const bool unscale = amp.grad_scale != nullptr;
    const O inv = amp.inv_scale<O>();
    const O lrv = O(lr), wdv = O(wd), mom = O(momentum), dmp = O(damp);
    const int step = int(blockDim.x) * kIlp;
    for (int base = int(threadIdx.x); base < n; base += step) {
      O rp[kIlp], rg[kIlp], rb[kIlp];
#pragma unroll
      for (int k = 0; k < kIlp; ++k) {
        const int i = base + k * int(blockDim.x);
        rp[k] = rg[k] = rb[k] = O(0);
        if (i < n) {
          rp[k] = IO::load(p, i);
          rg[k] = IO::load(g, i);
          if (use_mom && !first) rb[k] = IO::load(buf, i);
        }
      }
#pragma unroll
      for (int k = 0; k < kIlp; ++k) {
        const int i = base + k * int(blockDim.x);
        if (i >= n) continue;
        O d = rg[k];
        if (unscale) {
          d = d * inv;
          IO::store(g, i, d);
        }
        if (maximize) d = -d;
        const O pj = rp[k];
        if (use_wd) d = d + wdv * pj;
        if (use_mom) {
          const O bj = first ? d : rb[k] * mom + dmp * d;
          IO::store(buf, i, bj);
          d = nesterov ? d + mom * bj : bj;
        }
        IO::store(p, i, pj + lrv * d);
      }
    }
  }
};

template <class F>
void dispatch_float(const char* op, ScalarType dt, const F& f) {
  switch (dt) {
    case kFloat: return f(float{});
    case kDouble: return f(double{});
    case kHalf: return f(__half{});
    case kBFloat16: return f(__nv_bfloat16{});
    default: BRISK_FAIL(op, "no fused CUDA kernel for dtype ", dt);
  }
}

/// The float32 scalar behind an optional grad_scale/found_inf tensor.
const float* amp_pointer(const char* op, const char* name, const Tensor& t, Device dev) {
  if (!t.defined()) return nullptr;
  BRISK_CHECK(t.device() == dev && t.dtype() == kFloat && t.numel() == 1, op, name,
              " must be a one-element float32 tensor on ", dev, ", got ", t.dtype(), " of ", t.numel(),
              " elements on ", t.device());
  return static_cast<const float*>(t.data_ptr());
}

/// Indices of the tensors grouped by (device, dtype, key), in first-seen
/// order. Groups are few (usually one): a linear search per tensor.
template <class Key>
std::vector<std::vector<size_t>> group_indices(const TensorList& params, const std::vector<Key>& keys) {
  struct Group {
    int device;
    ScalarType dtype;
    Key key;
    std::vector<size_t> idx;
  };
  std::vector<Group> groups;
  for (size_t i = 0; i < params.size(); ++i) {
    const int dev = params[i].device().index;
    const ScalarType dt = params[i].dtype();
    Group* g = nullptr;
    for (Group& c : groups)
      if (c.device == dev && c.dtype == dt && c.key == keys[i]) {
        g = &c;
        break;
      }
    if (!g) g = &groups.emplace_back(Group{dev, dt, keys[i], {}});
    g->idx.push_back(i);
  }
  std::vector<std::vector<size_t>> r;
  r.reserve(groups.size());
  for (Group& g : groups) r.push_back(std::move(g.idx));
  return r;
}

}  // namespace

void fused_adam_cuda(const FusedAdamArgs& a, const TensorList& params, const TensorList& grads,
                     const TensorList& exp_avgs, const TensorList& exp_avg_sqs, const TensorList& max_exp_avg_sqs,
                     const std::vector<double>& step_sizes, const std::vector<double>& bc2_sqrts,
                     const TensorList& state_steps, const Tensor& grad_scale, const Tensor& found_inf) {
  const char* op = a.decoupled ? "AdamW" : "Adam";
  const size_t n = params.size();
  const bool device_steps = !state_steps.empty();
  BRISK_INTERNAL_ASSERT(grads.size() == n && exp_avgs.size() == n && exp_avg_sqs.size() == n &&
                            (device_steps ? state_steps.size() == n
                                          : step_sizes.size() == n && bc2_sqrts.size() == n) &&
                            (a.amsgrad ? max_exp_avg_sqs.size() == n : max_exp_avg_sqs.empty()),
                        op, " fused step: lists of different lengths");
  if (n == 0) return;
  // device steps: one group per device and dtype (each tensor reads its own count)
  std::vector<std::pair<double, double>> keys(n);
  if (!device_steps)
    for (size_t i = 0; i < n; ++i) keys[i] = {step_sizes[i], bc2_sqrts[i]};
  for (const std::vector<size_t>& idx : group_indices(params, keys)) {
    const Device dev = params[idx[0]].device();
    DeviceGuard guard(dev);
    const size_t m = idx.size();
    std::vector<int64_t> numels(m);
    std::vector<void*> lp(m), lg(m), lm(m), lv(m), lx(a.amsgrad ? m : 0), ls(device_steps ? m : 0);
    for (size_t j = 0; j < m; ++j) {
      const size_t i = idx[j];
      numels[j] = params[i].numel();
      lp[j] = params[i].data_ptr();
      lg[j] = grads[i].data_ptr();
      lm[j] = exp_avgs[i].data_ptr();
      lv[j] = exp_avg_sqs[i].data_ptr();
      if (a.amsgrad) lx[j] = max_exp_avg_sqs[i].data_ptr();
      if (device_steps) {
        const Tensor& t = state_steps[i];
        BRISK_CHECK(t.device() == dev && t.dtype() == kFloat && t.numel() == 1, op,
                    "state steps must be one-element float32 tensors on ", dev, ", got ", t.dtype(), " on ",
                    t.device());
        ls[j] = t.data_ptr();
      }
    }
    void* const* lists[6] = {lp.data(), lg.data(), lm.data(), lv.data(), a.amsgrad ? lx.data() : nullptr,
                             device_steps ? ls.data() : nullptr};
    const AmpArgs amp{amp_pointer(op, "grad_scale", grad_scale, dev), amp_pointer(op, "found_inf", found_inf, dev)};
    const bool l2 = !a.decoupled && a.weight_decay != 0, decoupled = a.decoupled && a.weight_decay != 0;
    dispatch_float(op, params[idx[0]].dtype(), [&](auto tag) {
      using S = decltype(tag);
      const AdamFunctor<S> f{a.beta1, a.beta2, 1 - a.beta1, 1 - a.beta2, a.eps, a.weight_decay,
                             1 - a.lr * a.weight_decay, device_steps ? 0.0 : -step_sizes[idx[0]],
                             device_steps ? 1.0 : bc2_sqrts[idx[0]], a.lr, amp,
                             a.maximize, l2, decoupled, a.amsgrad, device_steps};
      if (device_steps)
        mta::launch<6, 0>(op, numels, lists, nullptr, [&](const mta::Launch&) { return f; });
      else
        mta::launch<5, 0>(op, numels, lists, nullptr, [&](const mta::Launch&) { return f; });
    });
  }
  for (size_t i = 0; i < n; ++i) {
    params[i].bump_version();
    exp_avgs[i].bump_version();
    exp_avg_sqs[i].bump_version();
    if (a.amsgrad) max_exp_avg_sqs[i].bump_version();
    if (grad_scale.defined()) grads[i].bump_version();
  }
}

void fused_sgd_cuda(const FusedSgdArgs& a, const TensorList& params, const TensorList& grads,
                    const TensorList& momentum_buffers, const std::vector<char>& first_step, const Tensor& grad_scale,
                    const Tensor& found_inf) {
  const char* op = "SGD";
  const size_t n = params.size();
  const bool use_mom = a.momentum != 0;
  BRISK_INTERNAL_ASSERT(grads.size() == n && first_step.size() == n &&
                            (use_mom ? momentum_buffers.size() == n : momentum_buffers.empty()),
                        op, " fused step: lists of different lengths");
  if (n == 0) return;
  std::vector<char> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = use_mom && first_step[i] != 0;
  for (const std::vector<size_t>& idx : group_indices(params, keys)) {
    const Device dev = params[idx[0]].device();
    DeviceGuard guard(dev);
    const size_t m = idx.size();
    std::vector<int64_t> numels(m);
    std::vector<void*> lp(m), lg(m), lb(use_mom ? m : 0);
    for (size_t j = 0; j < m; ++j) {
      const size_t i = idx[j];
      numels[j] = params[i].numel();
      lp[j] = params[i].data_ptr();
      lg[j] = grads[i].data_ptr();
      if (use_mom) lb[j] = momentum_buffers[i].data_ptr();
    }
    void* const* lists[3] = {lp.data(), lg.data(), use_mom ? lb.data() : nullptr};
    const AmpArgs amp{amp_pointer(op, "grad_scale", grad_scale, dev), amp_pointer(op, "found_inf", found_inf, dev)};
    const bool first = keys[idx[0]] != 0;
    dispatch_float(op, params[idx[0]].dtype(), [&](auto tag) {
      using S = decltype(tag);
      const SgdFunctor<S> f{-a.lr, a.weight_decay, a.momentum, 1 - a.dampening, amp,
                            a.maximize, a.weight_decay != 0, use_mom, a.nesterov, first};
      mta::launch<3, 0>(op, numels, lists, nullptr, [&](const mta::Launch&) { return f; });
    });
  }
  for (size_t i = 0; i < n; ++i) {
    params[i].bump_version();
    if (use_mom) momentum_buffers[i].bump_version();
    if (grad_scale.defined()) grads[i].bump_version();
  }
}

void register_optim_kernels() {
  const uint32_t fl = dtype_mask({kFloat, kDouble, kHalf, kBFloat16});
  register_kernel<OpId::fused_adam>(kCUDA, fused_adam_cuda, fl);
  register_kernel<OpId::fused_sgd>(kCUDA, fused_sgd_cuda, fl);
}

}  // namespace brisk::cuda::detail
