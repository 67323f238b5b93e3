// Multi-tensor ("foreach") ops: one arithmetic step applied to a whole list
// of tensors in one parallel pass, as torch._foreach_* does. The optimizers'
// Impl::Foreach path is written with these.
//
// Lists given together must have the same length (brisk::Error otherwise).
// Contiguous CPU float32/float64 tensors of equal sizes take the fast path:
// the total work is cut into (tensor, range) pieces split across brisk's
// threads. Anything else (other dtypes, views, broadcasting) falls back to the
// per-tensor brisk op. The in-place ops bump each tensor's version counter
// but never record autograd: they are for parameter updates under NoGradGuard.
#pragma once
#include <vector>

#include "brisk/tensor.h"

namespace brisk {

/// Per-tensor scalars (one per list element), as libtorch's ArrayRef<Scalar>.
using ScalarList = std::vector<double>;

/// self[i] += scalar
void foreach_add_(const TensorList& self, const Scalar& scalar);
/// self[i] += scalars[i]
void foreach_add_(const TensorList& self, const ScalarList& scalars);
/// self[i] += alpha * other[i]
void foreach_add_(const TensorList& self, const TensorList& other, const Scalar& alpha = 1);
/// self[i] + alpha * other[i] (new tensors)
TensorList foreach_add(const TensorList& self, const TensorList& other, const Scalar& alpha = 1);
/// self[i] *= scalar
void foreach_mul_(const TensorList& self, const Scalar& scalar);
/// self[i] *= scalars[i]
void foreach_mul_(const TensorList& self, const ScalarList& scalars);
/// self[i] *= other[i]
void foreach_mul_(const TensorList& self, const TensorList& other);
/// self[i] * scalar (new tensors)
TensorList foreach_mul(const TensorList& self, const Scalar& scalar);
/// self[i] /= scalars[i]
void foreach_div_(const TensorList& self, const ScalarList& scalars);
/// self[i] += value * t1[i] * t2[i]
void foreach_addcmul_(const TensorList& self, const TensorList& t1, const TensorList& t2, const Scalar& value = 1);
/// self[i] += value * t1[i] / t2[i]
void foreach_addcdiv_(const TensorList& self, const TensorList& t1, const TensorList& t2, const Scalar& value = 1);
/// self[i] += values[i] * t1[i] / t2[i]
void foreach_addcdiv_(const TensorList& self, const TensorList& t1, const TensorList& t2, const ScalarList& values);
/// self[i] = lerp(self[i], end[i], weight) (PyTorch's formula, exact at both ends)
void foreach_lerp_(const TensorList& self, const TensorList& end, const Scalar& weight);
/// self[i] = maximum(self[i], other[i]) (NaN propagates)
void foreach_maximum_(const TensorList& self, const TensorList& other);
/// sqrt(self[i]) (new tensors)
TensorList foreach_sqrt(const TensorList& self);
/// self[i] = sqrt(self[i])
void foreach_sqrt_(const TensorList& self);
/// The ord-norm of each tensor as a 0-dim tensor (ord 1, 2 or infinity on the
/// fast path; accumulated in double for float32).
TensorList foreach_norm(const TensorList& self, const Scalar& ord = 2);
/// self[i] = 0
void foreach_zero_(const TensorList& self);
/// PyTorch's torch._amp_foreach_non_finite_check_and_unscale_: sets
/// found_inf (a one-element float32 tensor) to 1 if any element of the
/// tensors is inf or NaN, and multiplies every tensor by inv_scale (a
/// one-element float32 tensor), in one pass over the memory where a kernel
/// exists (CPU float32/float64; elsewhere, op by op). The GradScaler's unscale_.
void amp_foreach_non_finite_check_and_unscale_(const TensorList& self, Tensor& found_inf, const Tensor& inv_scale);

}  // namespace brisk
