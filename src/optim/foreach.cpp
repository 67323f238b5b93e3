// The foreach ops (include/brisk/foreach.h): one arithmetic step over a list
// of tensors. Lists a multi-tensor kernel takes (one device and dtype it
// supports, contiguous, equal sizes at each index: optim/multi_tensor.h) go
// to the foreach_pointwise / foreach_norm rows of the op table (the CPU's
// backend/cpu/kernels/multi_tensor.cpp: one parallel pass over (tensor,
// range) pieces; CUDA's backend/cuda/foreach.cu); anything else runs the
// per-tensor op.
#include "brisk/foreach.h"

#include <cmath>
#include <initializer_list>
#include <limits>

#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/multi_tensor_plan.h"
#include "core/profile_hooks.h"
#include "optim/multi_tensor.h"

namespace brisk {
namespace {

using Op = multi_tensor::ForeachOp;

void check_lists(const char* op, std::initializer_list<const TensorList*> lists) {
  const size_t n = (*lists.begin())->size();
  size_t k = 0;
  for (const TensorList* l : lists) {
    BRISK_CHECK(l->size() == n, op, "tensor lists must have the same length, got ", n, " and ", l->size(),
                " (list ", k, ")");
    for (size_t i = 0; i < n; ++i) BRISK_CHECK((*l)[i].defined(), op, "tensor ", i, " of list ", k, " is undefined");
    ++k;
  }
}

void check_scalars(const char* op, const TensorList& self, const ScalarList& s) {
  BRISK_CHECK(s.size() == self.size(), op, "expected ", self.size(), " scalars (one per tensor), got ", s.size());
}

void bump(const TensorList& l) {
  for (const Tensor& t : l) t.bump_version();
}

TensorList empty_like_list(const TensorList& l) {
  TensorList r;
  r.reserve(l.size());
  for (const Tensor& t : l) r.push_back(empty_like(t));
  return r;
}

bool eligible(const TensorList& self, const TensorList* y, const TensorList* z) {
  return y ? (z ? detail::foreach_eligible(OpId::foreach_pointwise, {&self, y, z})
                : detail::foreach_eligible(OpId::foreach_pointwise, {&self, y}))
           : detail::foreach_eligible(OpId::foreach_pointwise, {&self});
}

/// self[i] = op(self[i], y[i], z[i]) on the multi-tensor kernel of self's
/// device; false when the lists do not qualify (the caller runs per tensor).
bool kernel_inplace(const char* name, Op op, const TensorList& self, const TensorList* y, const TensorList* z,
                    const Scalar& scalar, const ScalarList* scalars = nullptr) {
  if (!eligible(self, y, z)) return false;
  if (self.empty()) return true;
  kernel<OpId::foreach_pointwise>(self[0].device().type, name)(op, self, op == Op::Zero ? nullptr : &self, y, z,
                                                                scalar, scalars);
  bump(self);
  return true;
}

/// out[i] = op(x[i], y[i]) into new tensors; false when the lists do not qualify.
bool kernel_outplace(const char* name, Op op, TensorList& out, const TensorList& x, const TensorList* y,
                     const Scalar& scalar) {
  if (!eligible(x, y, nullptr)) return false;
  out = empty_like_list(x);
  if (!x.empty()) kernel<OpId::foreach_pointwise>(x[0].device().type, name)(op, out, &x, y, nullptr, scalar, nullptr);
  return true;
}

}  // namespace

// ---- add ---------------------------------------------------------------------------

void foreach_add_(const TensorList& self, const Scalar& scalar) {
  BRISK_PROFILE_OP("_foreach_add_", self);
  check_lists("foreach_add_", {&self});
  if (kernel_inplace("foreach_add_", Op::AddScalar, self, nullptr, nullptr, scalar)) return;
  NoGradGuard g;
  for (const Tensor& t : self) const_cast<Tensor&>(t).add_(scalar);
}

void foreach_add_(const TensorList& self, const ScalarList& scalars) {
  BRISK_PROFILE_OP("_foreach_add_", self);
  check_lists("foreach_add_", {&self});
  check_scalars("foreach_add_", self, scalars);
  if (kernel_inplace("foreach_add_", Op::AddScalar, self, nullptr, nullptr, 0.0, &scalars)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).add_(scalars[i]);
}

void foreach_add_(const TensorList& self, const TensorList& other, const Scalar& alpha) {
  BRISK_PROFILE_OP("_foreach_add_", self);
  check_lists("foreach_add_", {&self, &other});
  if (kernel_inplace("foreach_add_", Op::AddList, self, &other, nullptr, alpha)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).add_(other[i], alpha);
}

TensorList foreach_add(const TensorList& self, const TensorList& other, const Scalar& alpha) {
  BRISK_PROFILE_OP("_foreach_add", self);
  check_lists("foreach_add", {&self, &other});
  NoGradGuard g;
  TensorList r;
  if (kernel_outplace("foreach_add", Op::AddList, r, self, &other, alpha)) return r;
  for (size_t i = 0; i < self.size(); ++i) r.push_back(self[i].add(other[i], alpha));
  return r;
}

// ---- mul / div ---------------------------------------------------------------------

void foreach_mul_(const TensorList& self, const Scalar& scalar) {
  BRISK_PROFILE_OP("_foreach_mul_", self);
  check_lists("foreach_mul_", {&self});
  if (kernel_inplace("foreach_mul_", Op::MulScalar, self, nullptr, nullptr, scalar)) return;
  NoGradGuard g;
  for (const Tensor& t : self) const_cast<Tensor&>(t).mul_(scalar);
}

void foreach_mul_(const TensorList& self, const ScalarList& scalars) {
  BRISK_PROFILE_OP("_foreach_mul_", self);
  check_lists("foreach_mul_", {&self});
  check_scalars("foreach_mul_", self, scalars);
  if (kernel_inplace("foreach_mul_", Op::MulScalar, self, nullptr, nullptr, 0.0, &scalars)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).mul_(scalars[i]);
}

TensorList foreach_mul(const TensorList& self, const Scalar& scalar) {
  BRISK_PROFILE_OP("_foreach_mul", self);
  check_lists("foreach_mul", {&self});
  NoGradGuard g;
  TensorList r;
  if (kernel_outplace("foreach_mul", Op::MulScalar, r, self, nullptr, scalar)) return r;
  for (const Tensor& t : self) r.push_back(t.mul(scalar));
  return r;
}

void foreach_mul_(const TensorList& self, const TensorList& other) {
  BRISK_PROFILE_OP("_foreach_mul_", self);
  check_lists("foreach_mul_", {&self, &other});
  if (kernel_inplace("foreach_mul_", Op::MulList, self, &other, nullptr, 0.0)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).mul_(other[i]);
}

void foreach_div_(const TensorList& self, const ScalarList& scalars) {
  BRISK_PROFILE_OP("_foreach_div_", self);
  check_lists("foreach_div_", {&self});
  check_scalars("foreach_div_", self, scalars);
  if (kernel_inplace("foreach_div_", Op::DivScalar, self, nullptr, nullptr, 0.0, &scalars)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).div_(scalars[i]);
}

// ---- addcmul / addcdiv / lerp / maximum --------------------------------------------

void foreach_addcmul_(const TensorList& self, const TensorList& t1, const TensorList& t2, const Scalar& value) {
  BRISK_PROFILE_OP("_foreach_addcmul_", self);
  check_lists("foreach_addcmul_", {&self, &t1, &t2});
  if (kernel_inplace("foreach_addcmul_", Op::Addcmul, self, &t1, &t2, value)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).addcmul_(t1[i], t2[i], value);
}

void foreach_addcdiv_(const TensorList& self, const TensorList& t1, const TensorList& t2, const Scalar& value) {
  BRISK_PROFILE_OP("_foreach_addcdiv_", self);
  check_lists("foreach_addcdiv_", {&self, &t1, &t2});
  if (kernel_inplace("foreach_addcdiv_", Op::Addcdiv, self, &t1, &t2, value)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).addcdiv_(t1[i], t2[i], value);
}

void foreach_addcdiv_(const TensorList& self, const TensorList& t1, const TensorList& t2, const ScalarList& values) {
  BRISK_PROFILE_OP("_foreach_addcdiv_", self);
  check_lists("foreach_addcdiv_", {&self, &t1, &t2});
  check_scalars("foreach_addcdiv_", self, values);
  if (kernel_inplace("foreach_addcdiv_", Op::Addcdiv, self, &t1, &t2, 0.0, &values)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).addcdiv_(t1[i], t2[i], values[i]);
}

void foreach_lerp_(const TensorList& self, const TensorList& end, const Scalar& weight) {
  BRISK_PROFILE_OP("_foreach_lerp_", self);
  check_lists("foreach_lerp_", {&self, &end});
  if (kernel_inplace("foreach_lerp_", Op::Lerp, self, &end, nullptr, weight)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).lerp_(end[i], weight);
}

void foreach_maximum_(const TensorList& self, const TensorList& other) {
  BRISK_PROFILE_OP("_foreach_maximum_", self);
  check_lists("foreach_maximum_", {&self, &other});
  if (kernel_inplace("foreach_maximum_", Op::Maximum, self, &other, nullptr, 0.0)) return;
  NoGradGuard g;
  for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).copy_(maximum(self[i], other[i]));
}

// ---- sqrt / zero / norm ------------------------------------------------------------

TensorList foreach_sqrt(const TensorList& self) {
  BRISK_PROFILE_OP("_foreach_sqrt", self);
  check_lists("foreach_sqrt", {&self});
  NoGradGuard g;
  TensorList r;
  if (kernel_outplace("foreach_sqrt", Op::Sqrt, r, self, nullptr, 0.0)) return r;
  for (const Tensor& t : self) r.push_back(t.sqrt());
  return r;
}

void foreach_sqrt_(const TensorList& self) {
  BRISK_PROFILE_OP("_foreach_sqrt_", self);
  check_lists("foreach_sqrt_", {&self});
  if (kernel_inplace("foreach_sqrt_", Op::Sqrt, self, nullptr, nullptr, 0.0)) return;
  NoGradGuard g;
  for (const Tensor& t : self) const_cast<Tensor&>(t).sqrt_();
}

void foreach_zero_(const TensorList& self) {
  BRISK_PROFILE_OP("_foreach_zero_", self);
  check_lists("foreach_zero_", {&self});
  if (kernel_inplace("foreach_zero_", Op::Zero, self, nullptr, nullptr, 0.0)) return;
  NoGradGuard g;
  for (const Tensor& t : self) const_cast<Tensor&>(t).zero_();
}

namespace {
/// The check and unscale of amp_foreach_non_finite_check_and_unscale_; an
/// undefined inv_scale only checks (nothing written).
void amp_check_impl(const char* op, const TensorList& self, Tensor& found_inf, const Tensor& inv_scale) {
  check_lists(op, {&self});
  BRISK_CHECK(found_inf.defined() && found_inf.numel() == 1 && found_inf.dtype() == kFloat, op,
              "found_inf must be a one-element float32 tensor");
  for (const Tensor& t : self)
    BRISK_CHECK(t.is_floating_point(), op, "expected floating point tensors, got ", t.dtype());
  NoGradGuard g;
  const bool unscale = inv_scale.defined();
  if (!self.empty() && detail::foreach_eligible(OpId::amp_unscale, {&self}) &&
      found_inf.device() == self[0].device() && (!unscale || inv_scale.device() == self[0].device()) &&
      found_inf.is_contiguous()) {
    kernel<OpId::amp_unscale>(self[0].device().type, op)(self, found_inf, inv_scale);
    if (unscale)
      for (const Tensor& t : self) t.bump_version();
    found_inf.bump_version();
    return;
  }
  // op by op: found |= any(!isfinite(t)), t *= inv (device ops, no host read)
  for (const Tensor& t : self) {
    if (t.numel() == 0) continue;
    found_inf.copy_(maximum(found_inf, logical_not(isfinite(t)).any().to(kFloat).to(found_inf.device()).reshape(found_inf.sizes())));
    if (unscale) const_cast<Tensor&>(t).mul_(inv_scale.to(t.device()).reshape({}));
  }
}
}  // namespace

void amp_foreach_non_finite_check_and_unscale_(const TensorList& self, Tensor& found_inf, const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  BRISK_PROFILE_OP("_amp_foreach_non_finite_check_and_unscale_", self);
  BRISK_CHECK(inv_scale.defined() && inv_scale.numel() == 1 && inv_scale.dtype() == kFloat, op,
              "inv_scale must be a one-element float32 tensor");
  amp_check_impl(op, self, found_inf, inv_scale);
}

void detail::amp_foreach_non_finite_check_(const TensorList& self, Tensor& found_inf) {
  BRISK_PROFILE_OP("_amp_foreach_non_finite_check_and_unscale_", self);  // (its row)
  amp_check_impl("_amp_foreach_non_finite_check_", self, found_inf, Tensor());
}

TensorList foreach_norm(const TensorList& self, const Scalar& ord) {
  BRISK_PROFILE_OP("_foreach_norm", self);
  check_lists("foreach_norm", {&self});
  NoGradGuard g;
  const double p = ord.to_double();
  const bool inf = std::isinf(p) && p > 0;
  // As norm (and torch's _foreach_norm): p = inf and p < 0 have no identity for an empty tensor.
  if (inf || p < 0)
    for (const Tensor& t : self)
      BRISK_CHECK(t.numel() != 0, "foreach_norm", "cannot compute the ", p,
                  " norm on an empty tensor because the operation does not have an identity");
  if ((p == 1 || p == 2 || inf) && detail::foreach_eligible(OpId::foreach_norm, {&self})) {
    if (self.empty()) return {};
    return kernel<OpId::foreach_norm>(self[0].device().type, "foreach_norm")(self, p);
  }
  TensorList r;
  for (const Tensor& t : self) r.push_back(t.norm(ord));
  return r;
}

}  // namespace brisk
