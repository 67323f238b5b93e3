// Front ends of sort, argsort and topk along one dim.
//
// NaN sorts as larger than every number and equal keys keep their input
// order (a stable sort, in both directions), as in PyTorch. Indices are int64.
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
    a.i0 = k;
    a.mode = (largest ? 1 : 0) | (sorted ? 2 : 0);
    fn(as_row(values), as_row(indices), as_row(x), d, a);
  }
  if (BRISK_UNLIKELY(autograd::should_record(x))) record_select("TopkBackward0", x, values, indices, d);
  return {values, indices};
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return brisk::sort(*this, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const { return brisk::argsort(*this, dim, descending); }
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return brisk::topk(*this, k, dim, largest, sorted);
}

}  // namespace brisk
