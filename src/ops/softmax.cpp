// Front ends of the ops along one dim that keep the input's shape:
// softmax, log_softmax, cumsum, cumprod.
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/tensor_create.h"

namespace brisk {

namespace {

// Runs a DimFn kernel on a contiguous copy (or view) of x in dtype `compute`;
// the output is contiguous.
template <OpId op>
Tensor run_dim_op(const char* name, const Tensor& x, int64_t dim, ScalarType compute) {
  const int64_t d = detail::wrap_dim(dim, x.dim(), name);
  const Tensor in = x.to(compute).contiguous();
  Tensor out = detail::make_tensor(in.sizes(), {}, compute, in.device());
  if (out.numel() != 0) kernel<op>(in.device().type, name)(out, in, in.dim() == 0 ? 0 : d, KernelArgs{});
  return out;
}

// softmax/log_softmax compute in `dtype` when given; the input must then be,
// or else already be, floating point.
template <OpId op>
Tensor softmax_impl(const char* name, const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  const ScalarType t = dtype ? *dtype : x.dtype();
  BRISK_CHECK(is_floating_point(t), name, "expected a floating point dtype, got ", t,
              " (pass dtype= to compute an integer input in a floating dtype)");
  return run_dim_op<op>(name, x, dim, t);
}

// cumsum/cumprod return dtype if given, int64 for integers and bool; integers
// accumulate in int64 (wrapping), so narrower results are exact modulo their width.
template <OpId op>
Tensor scan_impl(const char* name, const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  const ScalarType result = dtype ? *dtype : (is_integral(x.dtype(), true) ? kInt64 : x.dtype());
  const ScalarType compute = is_integral(result, true) ? kInt64 : result;
  Tensor r = run_dim_op<op>(name, x, dim, compute);
  return compute == result ? r : r.to(result);
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<OpId::softmax>("softmax", x, dim, dtype);
}
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<OpId::log_softmax>("log_softmax", x, dim, dtype);
}
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return scan_impl<OpId::cumsum>("cumsum", x, dim, dtype);
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return scan_impl<OpId::cumprod>("cumprod", x, dim, dtype);
}

Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const { return brisk::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return brisk::log_softmax(*this, dim, dtype);
}
Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const { return brisk::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const {
  return brisk::cumprod(*this, dim, dtype);
}

}  // namespace brisk
