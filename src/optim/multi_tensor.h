// When the foreach ops and the optimizers can hand lists to a multi-tensor
// kernel of the op table (rows foreach_pointwise, foreach_norm, fused_adam,
// fused_sgd, fused_rmsprop; contract in core/multi_tensor_plan.h), whatever
// the device: the table says which devices and dtypes have one.
#pragma once
#include <initializer_list>

#include "brisk/tensor.h"
#include "core/dispatch.h"

namespace brisk::detail {

/// amp_foreach_non_finite_check_and_unscale_ without the unscale: found_inf
/// set when an element is inf or NaN, the tensors neither written nor bumped
/// (GradScaler's check before a sync-free step, Note [Sync-free GradScaler
/// step]; src/optim/foreach.cpp).
void amp_foreach_non_finite_check_(const TensorList& self, Tensor& found_inf);

/// True when a fused optimizer kernel (`op`) can update `p` together with
/// `others` (undefined entries are skipped): a kernel for p's device and
/// dtype, every tensor contiguous, on p's device, of p's dtype and size.
inline bool fusable(OpId op, const Tensor& p, std::initializer_list<const Tensor*> others) {
  if (!p.is_contiguous() || !supports(op, p.device().type, p.dtype())) return false;
  for (const Tensor* t : others)
    if (t->defined() && (t->device() != p.device() || !t->is_contiguous() || t->dtype() != p.dtype() ||
                         !(t->sizes() == p.sizes())))
      return false;
  return true;
}

/// True when the lists can go to the foreach kernel `op`: empty, or every
/// tensor contiguous on the first tensor's device and of its dtype (which
/// the kernel supports), with equal sizes at each index (no broadcasting).
inline bool foreach_eligible(OpId op, std::initializer_list<const TensorList*> lists) {
  const TensorList& s = **lists.begin();
  if (s.empty()) return true;
  const Device dev = s[0].device();
  const ScalarType dt = s[0].dtype();
  if (!supports(op, dev.type, dt)) return false;
  for (size_t i = 0; i < s.size(); ++i)
    for (const TensorList* l : lists) {
      const Tensor& t = (*l)[i];
      if (t.device() != dev || !t.is_contiguous() || t.dtype() != dt || !(t.sizes() == s[i].sizes())) return false;
    }
  return true;
}

}  // namespace brisk::detail
