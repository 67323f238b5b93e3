// The bridge from the optimizers and foreach ops (src/optim) to their CUDA
// multi-tensor kernels (src/backend/cuda/foreach.cu, optim.cu).
//
// No CUDA header here. The eligibility checks are inline and exist in every
// build; the kernel entry points are defined only in builds with the CUDA
// backend (BRISK_HAVE_CUDA), and src/optim calls them under that #ifdef. They
// are declared weak so that a test can link against a build without the
// backend and check `&fn != nullptr` (it skips without a device anyway).
#pragma once
#include <initializer_list>
#include <vector>

#include "brisk/tensor.h"

namespace brisk::cuda::detail {

/// A dtype the CUDA multi-tensor kernels handle (float32/64, float16, bfloat16).
inline bool mta_dtype(ScalarType dt) { return dt == kFloat || dt == kDouble || dt == kHalf || dt == kBFloat16; }

/// True when a fused CUDA optimizer kernel can update `p` together with
/// `others` (undefined entries are skipped): all contiguous, on p's CUDA
/// device, of p's dtype and size.
inline bool fusable_cuda(const Tensor& p, std::initializer_list<const Tensor*> others) {
  if (!p.is_cuda() || !p.is_contiguous() || !mta_dtype(p.dtype())) return false;
  for (const Tensor* t : others)
    if (t->defined() && (t->device() != p.device() || !t->is_contiguous() || t->dtype() != p.dtype() ||
                         !(t->sizes() == p.sizes())))
      return false;
  return true;
}

/// True when the foreach kernels can run on the lists: non-empty, every
/// tensor contiguous on the first tensor's CUDA device and of its dtype, and
/// equal sizes at each index (no broadcasting).
inline bool foreach_cuda_eligible(std::initializer_list<const TensorList*> lists) {
  const TensorList& s = **lists.begin();
  if (s.empty() || !s[0].is_cuda() || !mta_dtype(s[0].dtype())) return false;
  const Device dev = s[0].device();
  const ScalarType dt = s[0].dtype();
  for (size_t i = 0; i < s.size(); ++i)
    for (const TensorList* l : lists) {
      const Tensor& t = (*l)[i];
      if (t.device() != dev || !t.is_contiguous() || t.dtype() != dt || !(t.sizes() == s[i].sizes())) return false;
    }
  return true;
}

/// The elementwise steps of the foreach kernel: out = f(x, y, z) with `s` the
/// scalar (or the per-tensor scalar).
enum class ForeachOp : int {
  AddScalar,  ///< x + s
  AddList,    ///< x + s * y
  MulScalar,  ///< x * s
  MulList,    ///< x * y
  DivScalar,  ///< x / s
  Addcmul,    ///< x + s * y * z
  Addcdiv,    ///< x + s * (y / z)
  Lerp,       ///< lerp(x, y, s)
  Maximum,    ///< maximum(x, y), NaN propagating
  Sqrt,       ///< sqrt(x)
  Zero,       ///< 0
};

/// out[i] = op(x[i], y[i], z[i]) over lists that foreach_cuda_eligible
/// accepted (out may be x; absent lists are null). `scalars`, when given,
/// holds one scalar per tensor and replaces `scalar`. Does not bump versions.
[[gnu::weak]] void foreach_cuda(ForeachOp op, const TensorList& out, const TensorList* x, const TensorList* y,
                                const TensorList* z, double scalar, const std::vector<double>* scalars);

/// The ord-norm (1, 2 or +inf) of each tensor as 0-dim tensors (views of one
/// buffer), accumulated in double.
[[gnu::weak]] TensorList foreach_norm_cuda(const TensorList& self, double ord);

/// Adam/AdamW hyper-parameters (see src/optim/adam.cpp for the update).
struct FusedAdamArgs {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;  ///< decoupled: AdamW
};

/// One fused Adam/AdamW step over CUDA tensors (fusable_cuda): one kernel
/// launch per device, dtype and distinct (step_size, bc2_sqrt), each
/// covering the whole list. step_sizes[i] = lr / (1 - beta1^step),
/// bc2_sqrts[i] = sqrt(1 - beta2^step): the step count stays on the host.
/// max_exp_avg_sqs is empty unless amsgrad.
///
/// Mixed precision: `grad_scale` (a one-element float32 tensor on the
/// params' device) divides the gradients, which are stored back unscaled;
/// when `found_inf` (likewise) is nonzero the kernel changes nothing. Both
/// are read on the device: no synchronisation. Bumps the versions of what it
/// writes.
[[gnu::weak]] void fused_adam_cuda(const FusedAdamArgs& args, const TensorList& params, const TensorList& grads,
                                   const TensorList& exp_avgs, const TensorList& exp_avg_sqs,
                                   const TensorList& max_exp_avg_sqs, const std::vector<double>& step_sizes,
                                   const std::vector<double>& bc2_sqrts, const Tensor& grad_scale = {},
                                   const Tensor& found_inf = {});

/// SGD hyper-parameters (see src/optim/sgd.cpp for the update).
struct FusedSgdArgs {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

/// One fused SGD step over CUDA tensors (fusable_cuda). momentum_buffers is
/// empty when momentum == 0; first_step[i] != 0 makes buffer i start as the
/// gradient (its contents are not read). grad_scale / found_inf as for
/// fused_adam_cuda; a skipped first step leaves the buffer zeroed.
[[gnu::weak]] void fused_sgd_cuda(const FusedSgdArgs& args, const TensorList& params, const TensorList& grads,
                                  const TensorList& momentum_buffers, const std::vector<char>& first_step,
                                  const Tensor& grad_scale = {}, const Tensor& found_inf = {});

}  // namespace brisk::cuda::detail
