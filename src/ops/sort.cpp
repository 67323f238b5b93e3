// Front ends of sort, argsort and topk along one dim, and of the order
// statistics built on sort: median and nanmedian.
//
// NaN sorts as larger than every number and equal keys keep their input
// order (a stable sort, in both directions), as in PyTorch. Indices are int64.
#include <cmath>
#include <limits>

#include "autograd/function.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "profiler/record.h"
#include "core/tensor_create.h"

namespace brisk {

namespace {
// 0-dim tensors behave as one-element rows; the kernels see a 1-D view.
Tensor as_row(const Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

// Gradient of sort/topk: the values' gradient scattered back to the positions
// the indices name (zero for the elements topk left out).
void record_select(const char* node, const Tensor& x, const Tensor& values, const Tensor& indices, int64_t dim) {
  using namespace autograd;
  record(node, {values}, {x}, {save(indices)},
         [sizes = to_dims(x.sizes()), dim](BackwardCtx& c) -> TensorList {
           const Tensor& g = c.grad();
           if (sizes.empty()) return {g};  // 0-dim: the one element
           Tensor z = zeros(sizes, g.options());
           if (g.numel() == 0) return {z};
           return {z.scatter(dim, c.saved(0), g)};
         });
}
}  // namespace

// x: any shape; values and indices: x's shape, sorted along dim.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  BRISK_PROFILE_OP("sort", x);
  BRISK_CHECK(x.defined(), "sort", "input is an undefined tensor");
  const int64_t d = detail::wrap_dim(dim, x.dim(), "sort");
  auto fn = kernel<OpId::sort>(x.device().type, "sort");
  Tensor values = detail::make_tensor(x.sizes(), {}, x.dtype(), x.device());
  Tensor indices = detail::make_tensor(x.sizes(), {}, kInt64, x.device());
  if (x.numel() != 0) {
    KernelArgs a;
    a.mode = descending ? 1 : 0;
    fn(as_row(values), as_row(indices), as_row(x), d, a);
  }
  if (BRISK_UNLIKELY(autograd::should_record(x))) record_select("SortBackward0", x, values, indices, d);
  return {values, indices};
}

// Indices only: no node for the values.
Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  BRISK_PROFILE_OP("argsort", x);
  if (BRISK_UNLIKELY(autograd::should_record(x))) {
    NoGradGuard g;
    return std::get<1>(sort(x, dim, descending));
  }
  return std::get<1>(sort(x, dim, descending));
}

// x: any shape; values and indices: x's shape with k along dim. `sorted`
// orders the k results best first; otherwise their order is unspecified.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  BRISK_PROFILE_OP("topk", x);
  BRISK_CHECK(x.defined(), "topk", "input is an undefined tensor");
  // As in PyTorch (sort does take bool).
  BRISK_CHECK(x.dtype() != kBool, "topk", "not implemented for bool tensors (convert to an integer dtype first)");
  const int64_t d = detail::wrap_dim(dim, x.dim(), "topk");
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  BRISK_CHECK(k >= 0 && k <= n, "topk", "selected index k out of range (k = ", k, ", but dim ", d, " of shape ",
              x.sizes(), " has size ", n, ")");
  auto fn = kernel<OpId::topk>(x.device().type, "topk");
  DimVector shape(x.sizes().begin(), x.sizes().end());
  if (x.dim() > 0) shape[static_cast<size_t>(d)] = k;
  Tensor values = detail::make_tensor(shape, {}, x.dtype(), x.device());
  Tensor indices = detail::make_tensor(shape, {}, kInt64, x.device());
  if (values.numel() != 0) {
    KernelArgs a;
    // A 0-dim input gives its element for k = 0 too (PyTorch: the result has
    // the input's shape, so there is one element to fill).
    a.i0 = x.dim() == 0 ? 1 : k;
    a.mode = (largest ? 1 : 0) | (sorted ? 2 : 0);
    fn(as_row(values), as_row(indices), as_row(x), d, a);
  }
  if (BRISK_UNLIKELY(autograd::should_record(x))) record_select("TopkBackward0", x, values, indices, d);
  return {values, indices};
}

// ---- median / nanmedian ---------------------------------------------------------
// Composites of sort and gather. Along a dim of n elements the median is the
// lower middle one, sorted position (n - 1) / 2; a row holding NaN gives NaN
// and the index of its first NaN (stable sort: the first NaN in input order
// is the first in sorted order). nanmedian skips the c NaNs of a row
// (position (n - c - 1) / 2) and gives NaN only for a row of NaNs. Among equal
// values the index is one of theirs (PyTorch leaves it unspecified too).
namespace {
void check_median_dtype(const char* name, const Tensor& x) {
  BRISK_CHECK(x.defined(), name, "input is an undefined tensor");
  BRISK_CHECK(x.dtype() != kBool, name, "not implemented for bool");
}

// values, indices: keepdim shape (dim of size 1), no graph.
std::tuple<Tensor, Tensor> median_rows(const Tensor& x, int64_t d, bool ignore_nan) {
  const int64_t n = x.size(d);
  auto [sorted, order] = sort(x, d);
  DimVector kshape(x.sizes().begin(), x.sizes().end());
  kshape[static_cast<size_t>(d)] = 1;
  Tensor k;
  if (x.is_floating_point()) {
    Tensor nans = x.isnan().sum(IntArrayRef(d), true);  // int64
    if (ignore_nan)
      k = (nans.neg() + (n - 1)).div(2, RoundingMode::Floor).clamp_min(0);
    else
      k = where(nans > 0, nans.neg() + n, Scalar((n - 1) / 2));
  } else {
    k = full(kshape, (n - 1) / 2, TensorOptions(kInt64).device(x.device()));
  }
  return {sorted.gather(d, k), order.gather(d, k)};
}

std::tuple<Tensor, Tensor> median_dim_impl(const char* name, const char* node, const Tensor& x, int64_t dim,
                                           bool keepdim, bool ignore_nan) {
  BRISK_PROFILE_OP(name, x);
  check_median_dtype(name, x);
  const int64_t d = detail::wrap_dim(dim, x.dim(), name);
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  BRISK_CHECK(n > 0, name, "expected reduction dim ", d, " to have non-zero size (input of shape ", x.sizes(), ")");
  const bool rec = autograd::should_record(x);
  Tensor values, indices;
  {
    NoGradGuard ng;  // the node below records the whole op
    std::tie(values, indices) = median_rows(as_row(x), d, ignore_nan);
    if (x.dim() == 0 || !keepdim) {
      values = values.squeeze(d);
      indices = indices.squeeze(d);
    }
  }
  if (BRISK_UNLIKELY(rec)) {
    // The gradient goes to the element the index names.
    using namespace autograd;
    record(node, {values}, {x}, {save(indices)},
           [sizes = to_dims(x.sizes()), d, keepdim](BackwardCtx& c) -> TensorList {
             Tensor g = c.grad(), idx = c.saved(0);
             if (sizes.empty()) return {g};  // 0-dim: the one element
             if (!keepdim) {
               g = g.unsqueeze(d);
               idx = idx.unsqueeze(d);
             }
             Tensor z = zeros(sizes, g.options());
             return {g.numel() == 0 ? z : z.scatter(d, idx, g)};
           });
  }
  return {values, indices};
}

// The whole tensor: a 0-dim result; NaN for an empty input, converted to the
// dtype as PyTorch's NaN cast on x86 (through int32 below 8 bytes: the int32
// minimum for int32, 0 for int8, int16 and uint8; the int64 minimum for int64),
// with a graph when the input requires grad, as torch's.
Tensor median_all_impl(const char* name, const char* node, const Tensor& x, bool ignore_nan) {
  BRISK_PROFILE_OP(name, x);
  check_median_dtype(name, x);
  const bool rec = autograd::should_record(x);
  Tensor r;
  {
    NoGradGuard ng;
    if (x.numel() == 0) {
      const Scalar empty_value = BRISK_DISPATCH_ALL(x.dtype(), name, [&] {
        if constexpr (std::is_integral_v<scalar_t> && sizeof(scalar_t) == 8)
          return Scalar(int64_t(std::numeric_limits<scalar_t>::lowest()));
        else if constexpr (std::is_integral_v<scalar_t>)
          return Scalar(int64_t(static_cast<scalar_t>(std::numeric_limits<int32_t>::min())));
        else
          return Scalar(NAN);
      });
      r = full({}, empty_value, x.options());
    } else {
      r = std::get<0>(median_rows(x.reshape({-1}), 0, ignore_nan)).reshape({});
    }
  }
  if (BRISK_UNLIKELY(rec)) {
    // As max() and torch's evenly_distribute_backward on the CPU: the gradient
    // split evenly among the elements equal to the result (a NaN result sends
    // it to the NaNs), 0 elsewhere even for an infinite or NaN gradient.
    using namespace autograd;
    record(node, {r}, {x}, {save(x), save_output(r)}, [](BackwardCtx& c) -> TensorList {
      Tensor x = c.saved(0), m = c.saved(1);
      Tensor hit = (x == m) | (x.isnan() & m.isnan());
      return {where(hit, c.grad() / hit.sum(), Scalar(0.0))};
    });
  }
  return r;
}
}  // namespace

Tensor median(const Tensor& x) { return median_all_impl("median", "MedianBackward0", x, false); }
Tensor nanmedian(const Tensor& x) { return median_all_impl("nanmedian", "NanmedianBackward0", x, true); }
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  return median_dim_impl("median", "MedianBackward1", x, dim, keepdim, false);
}
std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim) {
  return median_dim_impl("nanmedian", "NanmedianBackward1", x, dim, keepdim, true);
}
Tensor Tensor::median() const { return brisk::median(*this); }
Tensor Tensor::nanmedian() const { return brisk::nanmedian(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const {
  return brisk::median(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::nanmedian(int64_t dim, bool keepdim) const {
  return brisk::nanmedian(*this, dim, keepdim);
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return brisk::sort(*this, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const { return brisk::argsort(*this, dim, descending); }
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return brisk::topk(*this, k, dim, largest, sorted);
}

}  // namespace brisk
