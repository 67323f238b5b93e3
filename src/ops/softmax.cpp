// Front ends of the ops along one dim that keep the input's shape:
// softmax, log_softmax, cumsum, cumprod.
#include <vector>

#include "core/autocast.h"
#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/dispatch.h"
#include "profiler/record.h"
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

// The fused backward of softmax/log_softmax (Note [Row ops on the CPU]):
// gradient and output contiguous, in the output's dtype.
template <OpId op>
Tensor run_dim_backward(const char* name, const Tensor& g, const Tensor& y, int64_t d) {
  const Tensor yc = y.contiguous();
  const Tensor gc = g.to(yc.dtype()).contiguous();
  Tensor gx = detail::make_tensor(yc.sizes(), {}, yc.dtype(), yc.device());
  if (gx.numel() != 0) kernel<op>(yc.device().type, name)(gx, gc, yc, yc.dim() == 0 ? 0 : d, KernelArgs{});
  return gx;
}

/// The fused kernel unless the backward itself is recorded (create_graph:
/// the composite formula is differentiable) or the device has none.
template <OpId op>
bool fused_backward(const Tensor& y) {
  return !GradMode::is_enabled() && supports(op, y.device().type);
}

// softmax/log_softmax compute in `dtype` when given; the input must then be,
// or else already be, floating point.
template <OpId op>
Tensor softmax_impl(const char* name, const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  BRISK_PROFILE_OP(name, x);
  const ScalarType t = dtype ? *dtype : x.dtype();
  BRISK_CHECK(is_floating_point(t), name, "expected a floating point dtype, got ", t,
              " (pass dtype= to compute an integer input in a floating dtype)");
  if (BRISK_LIKELY(!autograd::should_record(x))) return run_dim_op<op>(name, x, dim, t);
  Tensor r;
  {
    NoGradGuard ng;  // the cast and the contiguous copy inside record nothing
    r = run_dim_op<op>(name, x, dim, t);
  }
  using namespace autograd;
  // The formulas hold for a 0-dim x too (the sum over dim 0 is the element):
  // softmax of one element is the constant 1, but its gradient is NaN where
  // y is (softmax(-inf), softmax(nan)) or g is infinite, as in torch.
  const int64_t d = x.dim() == 0 ? 0 : detail::wrap_dim(dim, x.dim(), name);
  if constexpr (op == OpId::softmax) {
    // dx = y * (g - sum(g * y))
    record("SoftmaxBackward0", {r}, {x}, {save_output(r)}, [d](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      const Tensor y = c.saved(0);
      if (fused_backward<OpId::softmax_backward>(y))
        return {run_dim_backward<OpId::softmax_backward>("softmax_backward", g, y, d)};
      const Tensor gy = g * y;
      return {gy - y * gy.sum(d, /*keepdim=*/true)};
    });
  } else {
    // dx = g - exp(y) * sum(g)
    record("LogSoftmaxBackward0", {r}, {x}, {save_output(r)}, [d](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      const Tensor y = c.saved(0);
      if (fused_backward<OpId::log_softmax_backward>(y))
        return {run_dim_backward<OpId::log_softmax_backward>("log_softmax_backward", g, y, d)};
      return {g - y.exp() * g.sum(d, /*keepdim=*/true)};
    });
  }
  return r;
}

// cumsum/cumprod return dtype if given, int64 for integers and bool; integers
// accumulate in int64 (wrapping), so narrower results are exact modulo their width.
template <OpId op>
Tensor scan_run(const char* name, const Tensor& x, int64_t dim, ScalarType result) {
  const ScalarType compute = is_integral(result, true) ? kInt64 : result;
  Tensor r = run_dim_op<op>(name, x, dim, compute);
  return compute == result ? r : r.to(result);
}

// Sum from position i to the end of dim d.
Tensor reverse_cumsum(const Tensor& t, int64_t d) { return t.flip({d}).cumsum(d).flip({d}); }

// Gradient of y = cumprod(x) along d, as torch's cumprod_backward computes
// it (the same terms, grouped the same way, so that inf and NaN land where
// torch's do). Without zeros: dx_i = sum_{j>=i} g_j y_j / x_i. With zeros,
// per slice along d with its first zero at z1 and its second at z2:
// positions before z1 sum only the terms j < z1 (the others are 0 * inf or
// NaN in floating point, not the 0 they are mathematically); at z1,
// y_{z1-1} * sum_{z1<=j<z2} g_j prod_{z1<m<=j} x_m; after z1, zero.
// Under create_graph torch's O(n^2) form without division or masks instead:
// its derivative is right at the zeros too (dx_i for i > z1 is zero but its
// derivative with respect to x_z1 is not).
Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& y, int64_t d) {
  if (x.size(d) == 1) return g;  // y = x: no division by x (NaN, inf, 0), no dependence on x
  const Tensor w = y * g;
  const Tensor is_zero = x == 0;
  if (!is_zero.any().item<bool>()) return reverse_cumsum(w, d) / x;
  const int64_t n = x.size(d);
  if (GradMode::is_enabled()) {
    // dx_k = sum_{i>=k} g_i * (prod_{m<k} x_m * prod_{k<m<=i} x_m)
    std::vector<Tensor> parts;
    parts.reserve(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      Tensor omitted;  // for i >= k: the product of x_0..x_i without x_k
      if (k == 0) {
        omitted = cat({ones_like(x.narrow(d, 0, 1)), x.narrow(d, 1, n - 1).cumprod(d)}, d);
      } else {
        const Tensor until_k = x.narrow(d, 0, k).prod(d, /*keepdim=*/true);
        omitted = k == n - 1 ? until_k : cat({until_k, until_k * x.narrow(d, k + 1, n - k - 1).cumprod(d)}, d);
      }
      parts.push_back((g.narrow(d, k, n - k) * omitted).sum(d, /*keepdim=*/true));
    }
    return cat(parts, d);
  }
  const Tensor zeros_seen = is_zero.cumsum(d);  // int64: zeros at or before each position
  const Tensor before = zeros_seen == 0;        // [0, z1)
  const Tensor from_first = zeros_seen == 1;    // [z1, z2)
  const Tensor first_zero = is_zero.logical_and(from_first);
  const Tensor after_first = from_first.logical_and(first_zero.logical_not());  // (z1, z2)
  const Tensor before_part = reverse_cumsum(w.masked_fill(before.logical_not(), 0), d) / x;
  // y_{z1-1} at each position's next one (1 at position 0), read at z1
  const Tensor prefix = cat({ones_like(y.narrow(d, 0, 1)), y.narrow(d, 0, n - 1)}, d);
  const Tensor at_sum = (x.masked_fill(after_first.logical_not(), 1).cumprod(d) *
                         g.masked_fill(from_first.logical_not(), 0)).sum(d, /*keepdim=*/true);
  return where(before, before_part, where(first_zero, at_sum * prefix, 0));
}

template <OpId op>
Tensor scan_impl(const char* name, const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  BRISK_PROFILE_OP(name, x);
  const ScalarType result = dtype ? *dtype : (is_integral(x.dtype(), true) ? kInt64 : x.dtype());
  if (BRISK_LIKELY(!autograd::should_record(x))) return scan_run<op>(name, x, dim, result);
  autograd::check_differentiable_dtype(name, result);
  Tensor r;
  {
    NoGradGuard ng;
    r = scan_run<op>(name, x, dim, result);
  }
  using namespace autograd;
  const int64_t d = x.dim() == 0 ? 0 : detail::wrap_dim(dim, x.dim(), name);
  const bool scalar = x.dim() == 0;
  if constexpr (op == OpId::cumsum) {
    // torch sums the gradient in x's dtype: cumsum(x, dtype=bfloat16) of a
    // float64 x has a float64 gradient, not a bfloat16 one cast up
    record("CumsumBackward0", {r}, {x}, {}, [d, scalar, xt = x.dtype()](BackwardCtx& c) -> TensorList {
      const Tensor g = c.grad().to(xt);
      return {scalar ? g : reverse_cumsum(g, d)};
    });
  } else {
    // torch takes the gradient in x's dtype (cumprod(x, dtype=) is not cumprod(x.to(dtype))).
    record("CumprodBackward0", {r}, {x}, {save(x), save_output(r)}, [d, scalar](BackwardCtx& c) -> TensorList {
      const Tensor x = c.saved(0);
      const Tensor g = c.grad().to(x.dtype());
      if (scalar) return {g};
      return {cumprod_backward(g, x, c.saved(1), d)};
    });
  }
  return r;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  if (!dtype) BRISK_AUTOCAST(softmax, softmax, x, dim, dtype);
  return softmax_impl<OpId::softmax>("softmax", x, dim, dtype);
}
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  if (!dtype) BRISK_AUTOCAST(log_softmax, log_softmax, x, dim, dtype);
  return softmax_impl<OpId::log_softmax>("log_softmax", x, dim, dtype);
}
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  if (!dtype) BRISK_AUTOCAST(cumsum, cumsum, x, dim, dtype);
  return scan_impl<OpId::cumsum>("cumsum", x, dim, dtype);
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  if (!dtype) BRISK_AUTOCAST(cumprod, cumprod, x, dim, dtype);
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
