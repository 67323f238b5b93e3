// The foreach ops (include/brisk/foreach.h): one arithmetic step over a list
// of tensors in one parallel pass over (tensor, range) pieces.
#include "brisk/foreach.h"

#include <cmath>
#include <initializer_list>
#include <limits>

#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "kernels/math.h"
#include "optim/cuda_hooks.h"
#include "optim/multi_tensor.h"
#include "profiler/record.h"

namespace brisk {
namespace {

using detail::Piece;

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

/// The fast path: CPU, contiguous, one float dtype, equal sizes at each index.
bool fast_path(std::initializer_list<const TensorList*> lists) {
  const TensorList& s = **lists.begin();
  if (s.empty()) return true;
  const ScalarType dt = s[0].dtype();
  if (dt != kFloat && dt != kDouble) return false;
  for (size_t i = 0; i < s.size(); ++i)
    for (const TensorList* l : lists) {
      const Tensor& t = (*l)[i];
      if (!t.is_cpu() || !t.is_contiguous() || t.dtype() != dt || !(t.sizes() == s[i].sizes())) return false;
    }
  return true;
}

template <class F>
void dispatch_float(ScalarType dt, const F& f) {
  if (dt == kDouble) f(double{});
  else f(float{});
}

/// Runs k(out, a, b, n, i) on every piece: out/a/b point at the piece's first
/// element of tensor i in `out`, `a` and `b` (null for absent lists).
template <class T, class K>
void apply(const TensorList& out, const TensorList* a, const TensorList* b, const K& k) {
  const size_t n = out.size();
  std::vector<int64_t> numels(n);
  std::vector<T*> po(n);
  std::vector<const T*> pa(a ? n : 0), pb(b ? n : 0);
  for (size_t i = 0; i < n; ++i) {
    numels[i] = out[i].numel();
    po[i] = static_cast<T*>(out[i].data_ptr());
    if (a) pa[i] = static_cast<const T*>((*a)[i].data_ptr());
    if (b) pb[i] = static_cast<const T*>((*b)[i].data_ptr());
  }
  detail::multi_tensor_apply(numels, [&](size_t i, int64_t begin, int64_t end) {
    k(po[i] + begin, a ? pa[i] + begin : nullptr, b ? pb[i] + begin : nullptr, end - begin, i);
  });
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

// CUDA lists (one device, one float dtype, contiguous, equal sizes) go to the
// multi-tensor kernels of backend/cuda/foreach.cu instead of the per-tensor
// fallback; everything else is unchanged.
using CudaOp = cuda::detail::ForeachOp;

/// self[i] = op(self[i], y[i], z[i]) on CUDA; false when the lists do not qualify.
bool cuda_inplace(CudaOp op, const TensorList& self, const TensorList* y, const TensorList* z, double scalar,
                  const ScalarList* scalars = nullptr) {
#ifdef BRISK_HAVE_CUDA
  const bool ok = y ? (z ? cuda::detail::foreach_cuda_eligible({&self, y, z})
                         : cuda::detail::foreach_cuda_eligible({&self, y}))
                    : cuda::detail::foreach_cuda_eligible({&self});
  if (!ok) return false;
  cuda::detail::foreach_cuda(op, self, op == CudaOp::Zero ? nullptr : &self, y, z, scalar, scalars);
  bump(self);
  return true;
#else
  (void)op, (void)self, (void)y, (void)z, (void)scalar, (void)scalars;
  return false;
#endif
}

/// out[i] = op(x[i], y[i]) into new tensors on CUDA; false when the lists do not qualify.
bool cuda_outplace(CudaOp op, TensorList& out, const TensorList& x, const TensorList* y, double scalar) {
#ifdef BRISK_HAVE_CUDA
  if (!(y ? cuda::detail::foreach_cuda_eligible({&x, y}) : cuda::detail::foreach_cuda_eligible({&x}))) return false;
  out = empty_like_list(x);
  cuda::detail::foreach_cuda(op, out, &x, y, nullptr, scalar, nullptr);
  return true;
#else
  (void)op, (void)out, (void)x, (void)y, (void)scalar;
  return false;
#endif
}

}  // namespace

// ---- add ---------------------------------------------------------------------------

void foreach_add_(const TensorList& self, const Scalar& scalar) {
  BRISK_PROFILE_OP("_foreach_add_", self);
  check_lists("foreach_add_", {&self});
  if (!fast_path({&self})) {
    if (cuda_inplace(CudaOp::AddScalar, self, nullptr, nullptr, scalar.to_double())) return;
    NoGradGuard g;
    for (const Tensor& t : self) const_cast<Tensor&>(t).add_(scalar);
    return;
  }
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    const T s = scalar.to<T>();
    apply<T>(self, nullptr, nullptr, [s](T* o, const T*, const T*, int64_t n, size_t) {
      for (int64_t j = 0; j < n; ++j) o[j] += s;
    });
  });
  bump(self);
}

void foreach_add_(const TensorList& self, const ScalarList& scalars) {
  BRISK_PROFILE_OP("_foreach_add_", self);
  check_lists("foreach_add_", {&self});
  check_scalars("foreach_add_", self, scalars);
  if (!fast_path({&self})) {
    if (cuda_inplace(CudaOp::AddScalar, self, nullptr, nullptr, 0.0, &scalars)) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).add_(scalars[i]);
    return;
  }
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    apply<T>(self, nullptr, nullptr, [&](T* o, const T*, const T*, int64_t n, size_t i) {
      const T s = T(scalars[i]);
      for (int64_t j = 0; j < n; ++j) o[j] += s;
    });
  });
  bump(self);
}

namespace {
/// out[i] = self[i] + alpha * other[i]; out may be self.
void add_list(const char* op, const TensorList& out, const TensorList& self, const TensorList& other,
              const Scalar& alpha) {
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    const T al = alpha.to<T>();
    apply<T>(out, &self, &other, [al](T* o, const T* a, const T* b, int64_t n, size_t) {
      if (al == T(1))
        for (int64_t j = 0; j < n; ++j) o[j] = a[j] + b[j];
      else
        for (int64_t j = 0; j < n; ++j) o[j] = a[j] + al * b[j];
    });
  });
}
}  // namespace

void foreach_add_(const TensorList& self, const TensorList& other, const Scalar& alpha) {
  BRISK_PROFILE_OP("_foreach_add_", self);
  check_lists("foreach_add_", {&self, &other});
  if (!fast_path({&self, &other})) {
    if (cuda_inplace(CudaOp::AddList, self, &other, nullptr, alpha.to_double())) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).add_(other[i], alpha);
    return;
  }
  add_list("foreach_add_", self, self, other, alpha);
  bump(self);
}

TensorList foreach_add(const TensorList& self, const TensorList& other, const Scalar& alpha) {
  BRISK_PROFILE_OP("_foreach_add", self);
  check_lists("foreach_add", {&self, &other});
  NoGradGuard g;
  if (!fast_path({&self, &other})) {
    TensorList r;
    if (cuda_outplace(CudaOp::AddList, r, self, &other, alpha.to_double())) return r;
    for (size_t i = 0; i < self.size(); ++i) r.push_back(self[i].add(other[i], alpha));
    return r;
  }
  TensorList out = empty_like_list(self);
  add_list("foreach_add", out, self, other, alpha);
  return out;
}

// ---- mul / div ---------------------------------------------------------------------

namespace {
/// out[i] = self[i] * s[i]
template <class S>
void scale_list(const TensorList& out, const TensorList& self, const S& scalar_of) {
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    apply<T>(out, &self, nullptr, [&](T* o, const T* a, const T*, int64_t n, size_t i) {
      const T s = T(scalar_of(i));
      for (int64_t j = 0; j < n; ++j) o[j] = a[j] * s;
    });
  });
}
}  // namespace

void foreach_mul_(const TensorList& self, const Scalar& scalar) {
  BRISK_PROFILE_OP("_foreach_mul_", self);
  check_lists("foreach_mul_", {&self});
  if (!fast_path({&self})) {
    if (cuda_inplace(CudaOp::MulScalar, self, nullptr, nullptr, scalar.to_double())) return;
    NoGradGuard g;
    for (const Tensor& t : self) const_cast<Tensor&>(t).mul_(scalar);
    return;
  }
  const double s = scalar.to_double();
  scale_list(self, self, [s](size_t) { return s; });
  bump(self);
}

void foreach_mul_(const TensorList& self, const ScalarList& scalars) {
  BRISK_PROFILE_OP("_foreach_mul_", self);
  check_lists("foreach_mul_", {&self});
  check_scalars("foreach_mul_", self, scalars);
  if (!fast_path({&self})) {
    if (cuda_inplace(CudaOp::MulScalar, self, nullptr, nullptr, 0.0, &scalars)) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).mul_(scalars[i]);
    return;
  }
  scale_list(self, self, [&](size_t i) { return scalars[i]; });
  bump(self);
}

TensorList foreach_mul(const TensorList& self, const Scalar& scalar) {
  BRISK_PROFILE_OP("_foreach_mul", self);
  check_lists("foreach_mul", {&self});
  NoGradGuard g;
  if (!fast_path({&self})) {
    TensorList r;
    if (cuda_outplace(CudaOp::MulScalar, r, self, nullptr, scalar.to_double())) return r;
    for (const Tensor& t : self) r.push_back(t.mul(scalar));
    return r;
  }
  TensorList out = empty_like_list(self);
  const double s = scalar.to_double();
  scale_list(out, self, [s](size_t) { return s; });
  return out;
}

void foreach_mul_(const TensorList& self, const TensorList& other) {
  BRISK_PROFILE_OP("_foreach_mul_", self);
  check_lists("foreach_mul_", {&self, &other});
  if (!fast_path({&self, &other})) {
    if (cuda_inplace(CudaOp::MulList, self, &other, nullptr, 0.0)) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).mul_(other[i]);
    return;
  }
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    apply<T>(self, &other, nullptr, [](T* o, const T* a, const T*, int64_t n, size_t) {
      for (int64_t j = 0; j < n; ++j) o[j] *= a[j];
    });
  });
  bump(self);
}

void foreach_div_(const TensorList& self, const ScalarList& scalars) {
  BRISK_PROFILE_OP("_foreach_div_", self);
  check_lists("foreach_div_", {&self});
  check_scalars("foreach_div_", self, scalars);
  if (!fast_path({&self})) {
    if (cuda_inplace(CudaOp::DivScalar, self, nullptr, nullptr, 0.0, &scalars)) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).div_(scalars[i]);
    return;
  }
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    apply<T>(self, nullptr, nullptr, [&](T* o, const T*, const T*, int64_t n, size_t i) {
      const T s = T(scalars[i]);
      for (int64_t j = 0; j < n; ++j) o[j] /= s;  // a division, as div_: not a multiply by 1/s
    });
  });
  bump(self);
}

// ---- addcmul / addcdiv / lerp / maximum --------------------------------------------

void foreach_addcmul_(const TensorList& self, const TensorList& t1, const TensorList& t2, const Scalar& value) {
  BRISK_PROFILE_OP("_foreach_addcmul_", self);
  check_lists("foreach_addcmul_", {&self, &t1, &t2});
  if (!fast_path({&self, &t1, &t2})) {
    if (cuda_inplace(CudaOp::Addcmul, self, &t1, &t2, value.to_double())) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).addcmul_(t1[i], t2[i], value);
    return;
  }
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    const T v = value.to<T>();
    apply<T>(self, &t1, &t2, [v](T* o, const T* a, const T* b, int64_t n, size_t) {
      for (int64_t j = 0; j < n; ++j) o[j] = o[j] + v * a[j] * b[j];
    });
  });
  bump(self);
}

namespace {
template <class V>
void addcdiv_list(const TensorList& self, const TensorList& t1, const TensorList& t2, const V& value_of) {
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    apply<T>(self, &t1, &t2, [&](T* o, const T* a, const T* b, int64_t n, size_t i) {
      const T v = T(value_of(i));
      for (int64_t j = 0; j < n; ++j) o[j] = o[j] + v * (a[j] / b[j]);
    });
  });
  bump(self);
}
}  // namespace

void foreach_addcdiv_(const TensorList& self, const TensorList& t1, const TensorList& t2, const Scalar& value) {
  BRISK_PROFILE_OP("_foreach_addcdiv_", self);
  check_lists("foreach_addcdiv_", {&self, &t1, &t2});
  if (!fast_path({&self, &t1, &t2})) {
    if (cuda_inplace(CudaOp::Addcdiv, self, &t1, &t2, value.to_double())) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).addcdiv_(t1[i], t2[i], value);
    return;
  }
  const double v = value.to_double();
  addcdiv_list(self, t1, t2, [v](size_t) { return v; });
}

void foreach_addcdiv_(const TensorList& self, const TensorList& t1, const TensorList& t2, const ScalarList& values) {
  BRISK_PROFILE_OP("_foreach_addcdiv_", self);
  check_lists("foreach_addcdiv_", {&self, &t1, &t2});
  check_scalars("foreach_addcdiv_", self, values);
  if (!fast_path({&self, &t1, &t2})) {
    if (cuda_inplace(CudaOp::Addcdiv, self, &t1, &t2, 0.0, &values)) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).addcdiv_(t1[i], t2[i], values[i]);
    return;
  }
  addcdiv_list(self, t1, t2, [&](size_t i) { return values[i]; });
}

void foreach_lerp_(const TensorList& self, const TensorList& end, const Scalar& weight) {
  BRISK_PROFILE_OP("_foreach_lerp_", self);
  check_lists("foreach_lerp_", {&self, &end});
  if (!fast_path({&self, &end})) {
    if (cuda_inplace(CudaOp::Lerp, self, &end, nullptr, weight.to_double())) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).lerp_(end[i], weight);
    return;
  }
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    const T w = weight.to<T>();
    apply<T>(self, &end, nullptr, [w](T* o, const T* e, const T*, int64_t n, size_t) {
      for (int64_t j = 0; j < n; ++j) o[j] = math::lerp(o[j], e[j], w);
    });
  });
  bump(self);
}

void foreach_maximum_(const TensorList& self, const TensorList& other) {
  BRISK_PROFILE_OP("_foreach_maximum_", self);
  check_lists("foreach_maximum_", {&self, &other});
  if (!fast_path({&self, &other})) {
    if (cuda_inplace(CudaOp::Maximum, self, &other, nullptr, 0.0)) return;
    NoGradGuard g;
    for (size_t i = 0; i < self.size(); ++i) const_cast<Tensor&>(self[i]).copy_(maximum(self[i], other[i]));
    return;
  }
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    apply<T>(self, &other, nullptr, [](T* o, const T* a, const T*, int64_t n, size_t) {
      for (int64_t j = 0; j < n; ++j) o[j] = math::maximum(o[j], a[j]);
    });
  });
  bump(self);
}

// ---- sqrt / zero / norm ------------------------------------------------------------

namespace {
void sqrt_list(const TensorList& out, const TensorList& self) {
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    apply<T>(out, &self, nullptr, [](T* o, const T* a, const T*, int64_t n, size_t) {
      for (int64_t j = 0; j < n; ++j) o[j] = std::sqrt(a[j]);
    });
  });
}
}  // namespace

TensorList foreach_sqrt(const TensorList& self) {
  BRISK_PROFILE_OP("_foreach_sqrt", self);
  check_lists("foreach_sqrt", {&self});
  NoGradGuard g;
  if (!fast_path({&self})) {
    TensorList r;
    if (cuda_outplace(CudaOp::Sqrt, r, self, nullptr, 0.0)) return r;
    for (const Tensor& t : self) r.push_back(t.sqrt());
    return r;
  }
  TensorList out = empty_like_list(self);
  sqrt_list(out, self);
  return out;
}

void foreach_sqrt_(const TensorList& self) {
  BRISK_PROFILE_OP("_foreach_sqrt_", self);
  check_lists("foreach_sqrt_", {&self});
  if (!fast_path({&self})) {
    if (cuda_inplace(CudaOp::Sqrt, self, nullptr, nullptr, 0.0)) return;
    NoGradGuard g;
    for (const Tensor& t : self) const_cast<Tensor&>(t).sqrt_();
    return;
  }
  sqrt_list(self, self);
  bump(self);
}

void foreach_zero_(const TensorList& self) {
  BRISK_PROFILE_OP("_foreach_zero_", self);
  check_lists("foreach_zero_", {&self});
  if (!fast_path({&self})) {
    if (cuda_inplace(CudaOp::Zero, self, nullptr, nullptr, 0.0)) return;
    NoGradGuard g;
    for (const Tensor& t : self) const_cast<Tensor&>(t).zero_();
    return;
  }
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    apply<T>(self, nullptr, nullptr, [](T* o, const T*, const T*, int64_t n, size_t) {
      for (int64_t j = 0; j < n; ++j) o[j] = T(0);
    });
  });
  bump(self);
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
  if (!fast_path({&self}) || !(p == 1 || p == 2 || inf)) {
#ifdef BRISK_HAVE_CUDA
    if ((p == 1 || p == 2 || inf) && cuda::detail::foreach_cuda_eligible({&self}))
      return cuda::detail::foreach_norm_cuda(self, p);
#endif
    TensorList r;
    for (const Tensor& t : self) r.push_back(t.norm(ord));
    return r;
  }
  // Partial results per piece, combined in list order: the result does not
  // depend on the number of threads.
  std::vector<int64_t> numels;
  for (const Tensor& t : self) numels.push_back(t.numel());
  int64_t total = 0;
  std::vector<Piece> pieces = detail::make_pieces(numels, &total);
  std::vector<double> partial(pieces.size());
  dispatch_float(self.empty() ? kFloat : self[0].dtype(), [&](auto z) {
    using T = decltype(z);
    detail::for_each_piece(pieces, total, [&](int64_t k, const Piece& pc) {
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

}  // namespace brisk
