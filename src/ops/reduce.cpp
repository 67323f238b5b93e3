// Front ends of the reductions: sum, mean, prod, max/min, amax/amin,
// argmax/argmin, var/std/var_mean, norm, logsumexp, all/any.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/autocast.h"
#include "autograd/function.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/reduce_plan.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"
#include "profiler/record.h"

namespace brisk {

namespace {

// Bit d set = dim d is reduced. An empty list means every dim (PyTorch's
// dim=[] for sum, amax, var, norm). A 0-dim tensor accepts dim 0 and -1 and
// has nothing to reduce.
uint64_t dims_mask(const char* op, const Tensor& x, IntArrayRef dims) {
  const int64_t nd = x.dim();
  BRISK_CHECK(nd <= 64, op, "tensors with more than 64 dims are not supported (got ", nd, ")");
  if (dims.empty()) return nd == 64 ? ~uint64_t(0) : (uint64_t(1) << nd) - 1;
  uint64_t m = 0;
  for (int64_t d : dims) {
    const int64_t w = detail::wrap_dim(d, nd, op);
    BRISK_CHECK(!((m >> w) & 1), op, "dim ", w, " appears multiple times in the list of dims");
    m |= uint64_t(1) << w;
  }
  return nd == 0 ? 0 : m;
}
uint64_t one_dim_mask(const char* op, const Tensor& x, int64_t dim) { return dims_mask(op, x, IntArrayRef(dim)); }
bool reduced(uint64_t mask, int64_t d) { return (mask >> d) & 1; }

// max/min/amax/amin/argmax/argmin have no identity: they reject empty reductions
// with PyTorch's messages.
void check_nonempty_reduction(const char* op, const Tensor& x, uint64_t mask, bool all_dims) {
  if (x.numel() != 0) return;
  BRISK_CHECK(!all_dims, op, "Expected reduction dim to be specified for input.numel() == 0. ",
              "Specify the reduction dim with the 'dim' argument.");
  for (int64_t d = 0; d < x.dim(); ++d)
    BRISK_CHECK(!(reduced(mask, d) && x.size(d) == 0), op, "Expected reduction dim ", d,
                " to have non-zero size.");
}

// ---- backward helpers ---------------------------------------------------------------
using autograd::BackwardCtx;
using autograd::save;
using autograd::save_output;

// Runs the forward of an op that records its own node with grad mode off, so
// that the ops it is made of (to, contiguous, copy_, ...) record nothing.
template <class F>
auto without_grad(F&& f) {
  NoGradGuard g;
  return f();
}

// The reduced dims of an nd-dim input as a list (all dims when every dim is reduced).
DimVector mask_dims(int64_t nd, uint64_t mask) {
  DimVector r;
  for (int64_t d = 0; d < nd; ++d)
    if (reduced(mask, d)) r.push_back(d);
  return r;
}
// A tensor of a reduction's result shape with the reduced dims put back as size 1.
Tensor unreduce(const Tensor& t, int64_t nd, uint64_t mask, bool keepdim) {
  if (keepdim || t.dim() == nd) return t;
  Tensor r = t;
  for (int64_t d = 0; d < nd; ++d)
    if (reduced(mask, d)) r = r.unsqueeze(d);
  return r;
}
// ... and expanded to the input's sizes: the gradient of a sum.
Tensor expand_back(const Tensor& g, IntArrayRef sizes, uint64_t mask, bool keepdim) {
  return unreduce(g, static_cast<int64_t>(sizes.size()), mask, keepdim).expand(sizes);
}
// Number of elements each output of the reduction reduces.
int64_t reduced_numel(IntArrayRef sizes, uint64_t mask) {
  int64_t n = 1;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (reduced(mask, static_cast<int64_t>(d))) n *= sizes[d];
  return n;
}
// What the gradient of a max-like reduction does where the result is NaN;
// PyTorch has three rules and users see all three.
enum class NanGrad {
  ToNans,  ///< max()/min(): split among the NaNs (torch's evenly_distribute_backward)
  Nan,     ///< amax/amin: NaN for every element of that slice (no element equals NaN: g / 0 * 0)
  Zero,    ///< the inf norms: zero for every element of that slice
};
// The gradient of max/min/amax/amin (and of the inf norms, given |x|): g split
// evenly among the elements equal to the result r (keepdim shape).
// max()/min() put the share where the mask holds and exact zeros elsewhere
// (torch's CPU masked_fill: a NaN gradient of the result reaches the NaNs
// only); amax/amin and the inf norms multiply by the mask (0 * NaN is NaN).
Tensor distribute_evenly(const Tensor& g, const Tensor& x, const Tensor& r, int64_t nd, uint64_t mask, NanGrad nan) {
  Tensor sel = nan == NanGrad::ToNans ? (x == r) | (x.isnan() & r.isnan()) : x == r;
  Tensor count = sel.sum(IntArrayRef(mask_dims(nd, mask)), true);
  if (nan == NanGrad::Zero) count = count.clamp_min(1);
  if (nan == NanGrad::ToNans) return where(sel, g / count, Scalar(0.0));
  return (g / count) * sel.to(g.dtype());
}
// Gradient of the values of sort/topk/max(dim)/min(dim): g scattered to the
// positions the indices name (zero elsewhere). g and indices have the same shape.
Tensor scatter_back(const Tensor& g, const Tensor& indices, IntArrayRef sizes, int64_t dim) {
  if (sizes.empty()) return g;  // 0-dim: the one element
  Tensor z = zeros(sizes, g.options());
  if (g.numel() == 0) return z;
  return z.scatter(dim, indices, g);
}
// Gradient of var along the reduced dims: 2 (x - mean) / (N - correction) * g.
// `all_form`: var over every element with no dims given (or of a 0-dim
// tensor), where torch 2.x takes N - correction <= 0 apart: g * (NaN where
// x equals the mean, else +inf), a factor constant in x (it has no
// derivative) times g, which may depend on x (a second derivative).
Tensor var_backward(const Tensor& g, const Tensor& x, int64_t nd, uint64_t mask, double correction,
                    bool all_form = false) {
  const auto n = static_cast<double>(reduced_numel(x.sizes(), mask));
  if (all_form && n - correction <= 0) {
    Tensor factor;
    {
      NoGradGuard ng;
      const Tensor at_mean = x == x.mean();
      factor = where(at_mean, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity())
                   .to(g.dtype());
    }
    return g * factor;
  }
  return (x - x.mean(IntArrayRef(mask_dims(nd, mask)), true)) * (g * (2.0 / (n - correction)));
}

// Note [Reduction layout]
// A reduction runs over a ReducePlan: the input read as a dense
// (outer, reduce, inner) array (Note [ReducePlan]). When the input is dense in
// some memory order (contiguous, transposed, channels-last, ...) and its
// reduced dims form one block in that order, the kernel reads it in place:
// reducing dim 1 of a contiguous (A, B, C) tensor is (A, B, C) with inner = C,
// and reducing dim 0 of an (N, M) matrix accumulates rows into a vector.
// Otherwise the input is copied once, kept dims first, so each output reduces
// one contiguous row. Outputs are contiguous in the result's shape (as in
// PyTorch); when the kept dims lie in another order in memory, the kernel
// writes a scratch buffer that is copied into the result afterwards.
class Reduction {
 public:
  /// `ordered`: the reduced positions must follow row-major order of the
  /// reduced dims (argmax over several dims returns flat indices).
  Reduction(const char* op, const Tensor& x, uint64_t mask, bool keepdim, bool ordered = false)
      : op_(op), mask_(mask), keepdim_(keepdim) {
    const int64_t nd = x.dim();
    int64_t kept = 1;
    for (int64_t d = 0; d < nd; ++d) {
      const int64_t s = x.size(d);
      if (reduced(mask, d)) {
        reduce_ *= s;
        keep_shape_.push_back(1);
        if (keepdim) shape_.push_back(1);
      } else {
        kept *= s;
        keep_shape_.push_back(s);
        shape_.push_back(s);
      }
    }
    plan_.device = x.device();
    if (x.numel() == 0) {  // nothing to read: outputs get the identity
      in_ = x;
      plan_.outer = kept;
      plan_.reduce = reduce_;
      plan_.inner = 1;
      return;
    }
    // Dims of size > 1, outermost first in memory.
    struct D {
      int64_t size, stride, dim;
    };
    D ds[64];
    int n = 0;
    for (int64_t d = 0; d < nd; ++d)
      if (x.size(d) != 1) ds[n++] = D{x.size(d), x.stride(d), d};
    std::stable_sort(ds, ds + n, [](const D& a, const D& b) { return a.stride > b.stride; });
    bool dense = true;
    int64_t expected = 1;
    for (int i = n; i-- > 0;) {
      if (ds[i].stride != expected) dense = false;
      expected *= ds[i].size;
    }
    int first = n, last = -1, count = 0;
    int64_t prev_reduced_dim = -1;
    bool in_order = true;
    for (int i = 0; i < n; ++i) {
      if (!reduced(mask, ds[i].dim)) continue;
      first = std::min(first, i);
      last = i;
      ++count;
      if (ds[i].dim < prev_reduced_dim) in_order = false;
      prev_reduced_dim = ds[i].dim;
    }
    const bool block = count == 0 || last - first + 1 == count;
    if (dense && block && (in_order || !ordered)) {
      in_ = x;
      if (count == 0) first = last = n;  // nothing of size > 1 is reduced: one element per output
      int64_t outer = 1, inner = 1;
      int64_t prev_kept_dim = -1;
      for (int i = 0; i < n; ++i) {
        if (i >= first && i <= last && count > 0) continue;
        (i < first ? outer : inner) *= ds[i].size;
        if (ds[i].dim < prev_kept_dim) natural_ = false;
        prev_kept_dim = ds[i].dim;
        kept_order_.push_back(ds[i].dim);
      }
      plan_.outer = outer;
      plan_.reduce = reduce_;
      plan_.inner = inner;
      return;
    }
    // Copy once: kept dims, then reduced dims, each in their order.
    DimVector perm;
    for (int64_t d = 0; d < nd; ++d)
      if (!reduced(mask, d)) perm.push_back(d);
    for (int64_t d = 0; d < nd; ++d)
      if (reduced(mask, d)) perm.push_back(d);
    in_ = x.permute(perm).contiguous();
    plan_.outer = kept;
    plan_.reduce = reduce_;
    plan_.inner = 1;
  }

  /// Number of elements each output reduces.
  int64_t reduce_size() const { return reduce_; }
  /// The result's shape.
  IntArrayRef shape() const { return shape_; }

  /// Adds an output the kernel writes as `kernel_dtype`; the result has
  /// `dtype`. `out` (out=) receives the result when given.
  void add_output(ScalarType kernel_dtype, ScalarType dtype, const Tensor* out = nullptr) {
    Output& o = outputs_[noutputs_++];
    if (out) {
      o.result = *out;
    } else {
      o.result = detail::make_tensor(shape_, {}, dtype, plan_.device);
    }
    const bool direct = natural_ && o.result.is_contiguous() && o.result.dtype() == kernel_dtype &&
                        !(out && out->is_alias_of(in_));
    o.target = direct ? o.result : detail::make_tensor({plan_.outer * plan_.inner}, {}, kernel_dtype, plan_.device);
  }

  /// Runs the kernel of `op` (args as it expects) and fills the results.
  template <OpId op>
  void run(const KernelArgs& args, bool second_only = false) {
    plan_.in = in_.data_ptr();
    plan_.in_dtype = in_.dtype();
    if (second_only) {
      plan_.out = nullptr;
      plan_.out2 = outputs_[0].target.data_ptr();
      plan_.out2_dtype = outputs_[0].target.dtype();
    } else {
      plan_.out = outputs_[0].target.data_ptr();
      plan_.out_dtype = outputs_[0].target.dtype();
      if (noutputs_ > 1) {
        plan_.out2 = outputs_[1].target.data_ptr();
        plan_.out2_dtype = outputs_[1].target.dtype();
      }
    }
    if (plan_.num_outputs() > 0) kernel<op>(plan_.device.type, op_)(plan_, args);
    for (int k = 0; k < noutputs_; ++k) copy_back(outputs_[k]);
  }

  Tensor result(int k = 0) const { return outputs_[k].result; }

 private:
  struct Output {
    Tensor result, target;
  };

  // target holds the outputs in the memory order of the kept dims; copy into
  // the result (converting dtype) unless the kernel wrote it directly.
  void copy_back(Output& o) {
    if (o.target.is_same(o.result) || o.result.numel() == 0) return;
    const int64_t nd = static_cast<int64_t>(keep_shape_.size());
    // A strided view of target with the keepdim shape.
    DimVector strides(nd, 0);
    if (natural_) {
      strides = detail::contiguous_strides(keep_shape_);
    } else {
      int64_t acc = 1;
      for (size_t i = kept_order_.size(); i-- > 0;) {
        strides[kept_order_[i]] = acc;
        acc *= keep_shape_[kept_order_[i]];
      }
    }
    Tensor src = detail::make_view(o.target, keep_shape_, strides, 0);
    // The result seen with the keepdim shape (reduced dims as size 1).
    Tensor dst = o.result;
    if (!keepdim_) {
      DimVector dst_strides(nd, 0);
      int64_t j = 0;
      for (int64_t d = 0; d < nd; ++d)
        if (!reduced(mask_, d)) dst_strides[d] = o.result.stride(j++);
      dst = detail::make_view(o.result, keep_shape_, dst_strides, o.result.storage_offset());
    }
    dst.copy_(src);
  }

  const char* op_;
  uint64_t mask_;
  bool keepdim_;
  bool natural_ = true;  // kept dims lie in memory in their logical order
  int64_t reduce_ = 1;
  DimVector shape_, keep_shape_;
  DimVector kept_order_;  // kept dims of size > 1, outermost in memory first
  Tensor in_;
  ReducePlan plan_;
  Output outputs_[2];
  int noutputs_ = 0;
};

// The dtype sum and prod return: dtype if given, int64 for integers and bool.
ScalarType sum_result_dtype(const Tensor& x, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_integral(x.dtype(), true) ? kInt64 : x.dtype();
}
// Integers accumulate in int64 (the kernels wrap modulo 2^64, so narrower
// results are exact modulo their width).
ScalarType sum_kernel_dtype(ScalarType result) { return is_integral(result, true) ? kInt64 : result; }

template <OpId op>
Tensor sum_like(const char* name, const Tensor& x, uint64_t mask, bool keepdim, std::optional<ScalarType> dtype,
                const Tensor* out = nullptr) {
  const ScalarType result = out ? out->dtype() : sum_result_dtype(x, dtype);
  const ScalarType compute = sum_kernel_dtype(result);
  Reduction r(name, x.to(compute), mask, keepdim);
  r.add_output(compute, result, out);
  KernelArgs a;
  a.mode = static_cast<int>(SumMode::Sum);
  r.run<op>(a);
  return r.result();
}

void check_out(const char* op, Tensor& out, IntArrayRef shape) {
  BRISK_CHECK(out.defined(), op, "out is an undefined tensor");
  if (out.numel() == 0 && !(out.sizes() == shape)) detail::resize_(out, shape);
  BRISK_CHECK(out.sizes() == shape, op, "output with shape ", out.sizes(), " doesn't match the reduction shape ",
              shape);
  check_no_internal_overlap(op, out);
}

DimVector reduced_shape(const Tensor& x, uint64_t mask, bool keepdim) {
  DimVector s;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!reduced(mask, d))
      s.push_back(x.size(d));
    else if (keepdim)
      s.push_back(1);
  }
  return s;
}

Tensor mean_impl(const Tensor& x, uint64_t mask, bool keepdim, std::optional<ScalarType> dtype) {
  if (dtype) {
    BRISK_CHECK(is_floating_point(*dtype), "mean",
                "could not infer output dtype. Optional dtype must be either a floating point or complex dtype. "
                "Got: ",
                *dtype);
  } else {
    BRISK_CHECK(x.is_floating_point(), "mean",
                "could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: ",
                x.dtype());
  }
  const ScalarType t = dtype ? *dtype : x.dtype();
  // torch 2.x: a float16/bfloat16 mean of another dtype is computed in
  // float32 and converted at the end (float32 input is not rounded to 16
  // bits first: mean([3e38, -inf], dtype=half) is -inf, not NaN).
  if (is_reduced_float(t) && x.dtype() != t) return mean_impl(x.to(kFloat), mask, keepdim, std::nullopt).to(t);
  Reduction r("mean", x.to(t), mask, keepdim);
  r.add_output(t, t);
  KernelArgs a;
  a.mode = static_cast<int>(SumMode::Mean);
  r.run<OpId::sum>(a);
  return r.result();
}

template <OpId op>
Tensor amax_impl(const char* name, const Tensor& x, IntArrayRef dims, bool keepdim) {
  const uint64_t mask = dims_mask(name, x, dims);
  check_nonempty_reduction(name, x, mask, dims.empty());
  Reduction r(name, x, mask, keepdim);
  r.add_output(x.dtype(), x.dtype());
  r.run<op>(KernelArgs{});
  return r.result();
}

// (values, indices) of max/min along dim.
template <OpId op>
std::tuple<Tensor, Tensor> max_dim_impl(const char* name, const Tensor& x, int64_t dim, bool keepdim) {
  const uint64_t mask = one_dim_mask(name, x, dim);
  check_nonempty_reduction(name, x, mask, false);
  Reduction r(name, x, mask, keepdim, /*ordered=*/true);
  r.add_output(x.dtype(), x.dtype());
  r.add_output(kInt64, kInt64);
  r.run<op>(KernelArgs{});
  return {r.result(0), r.result(1)};
}

template <OpId op>
Tensor argmax_impl(const char* name, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  // As in PyTorch (max(dim) does take bool).
  BRISK_CHECK(x.dtype() != kBool, name, "not implemented for 'Bool' (convert to an integer dtype first)");
  const uint64_t mask = dim ? one_dim_mask(name, x, *dim) : dims_mask(name, x, {});
  if (!dim) BRISK_CHECK(x.numel() != 0, name, "Expected reduction dim to be specified for input.numel() == 0.");
  check_nonempty_reduction(name, x, mask, false);
  // Without dim: the index into the flattened tensor.
  Reduction r(name, x, mask, keepdim, /*ordered=*/true);
  r.add_output(kInt64, kInt64);
  r.run<op>(KernelArgs{}, /*second_only=*/true);
  return r.result();
}

std::tuple<Tensor, Tensor> var_impl(const char* name, const Tensor& x, const std::optional<std::vector<int64_t>>& dims,
                                    const Scalar& correction, bool keepdim, VarMode mode, bool with_mean) {
  BRISK_CHECK(x.is_floating_point(), name, "std and var only support floating point and complex dtypes, got ",
              x.dtype());
  const uint64_t mask = dims ? dims_mask(name, x, IntArrayRef(*dims)) : dims_mask(name, x, {});
  Reduction r(name, x, mask, keepdim);
  r.add_output(x.dtype(), x.dtype());
  if (with_mean) r.add_output(x.dtype(), x.dtype());
  KernelArgs a;
  a.mode = static_cast<int>(mode);
  a.s0 = correction;
  r.run<OpId::var>(a);
  return {r.result(0), with_mean ? r.result(1) : Tensor()};
}

template <OpId op>
Tensor all_any_impl(const char* name, const Tensor& x, uint64_t mask, bool keepdim) {
  // The kernel reads bytes: bool and uint8 directly, other dtypes as x != 0.
  const bool bytes = x.dtype() == kBool || x.dtype() == kUInt8;
  Reduction r(name, bytes ? x : x.ne(0), mask, keepdim);
  // uint8 stays uint8, as in PyTorch.
  const ScalarType t = x.dtype() == kUInt8 ? kUInt8 : kBool;
  r.add_output(t, t);
  r.run<op>(KernelArgs{});
  return r.result();
}

}  // namespace

// ---- sum / mean / prod ------------------------------------------------------------
namespace {
// d sum / dx: the gradient expanded back over the reduced dims.
Tensor sum_front(const char* node, const Tensor& x, uint64_t mask, bool keepdim, std::optional<ScalarType> dtype) {
  if (!dtype) BRISK_AUTOCAST(sum, sum_front, node, x, mask, keepdim, dtype);
  BRISK_PROFILE_OP("sum", x);
  if (BRISK_LIKELY(!autograd::should_record(x))) return sum_like<OpId::sum>("sum", x, mask, keepdim, dtype);
  autograd::check_differentiable_dtype("sum", sum_result_dtype(x, dtype));
  Tensor r = without_grad([&] { return sum_like<OpId::sum>("sum", x, mask, keepdim, dtype); });
  autograd::record(node, {r}, {x}, {},
                   [sizes = autograd::to_dims(x.sizes()), mask, keepdim](BackwardCtx& c) -> TensorList {
                     return {expand_back(c.grad(), sizes, mask, keepdim)};
                   });
  return r;
}
// d mean / dx: the gradient expanded back, divided by the number of elements reduced.
Tensor mean_front(const char* node, const Tensor& x, uint64_t mask, bool keepdim, std::optional<ScalarType> dtype) {
  BRISK_PROFILE_OP("mean", x);
  if (BRISK_LIKELY(!autograd::should_record(x))) return mean_impl(x, mask, keepdim, dtype);
  Tensor r = without_grad([&] { return mean_impl(x, mask, keepdim, dtype); });
  autograd::record(node, {r}, {x}, {},
                   [sizes = autograd::to_dims(x.sizes()), mask, keepdim](BackwardCtx& c) -> TensorList {
                     const auto n = static_cast<double>(reduced_numel(sizes, mask));
                     return {expand_back(c.grad(), sizes, mask, keepdim) / n};
                   });
  return r;
}
// For each element, the product of the other elements along d: exclusive
// cumulative products from the left and from the right, multiplied.
Tensor product_of_others(const Tensor& x, int64_t d) {
  const int64_t n = x.size(d);
  if (n <= 1) return ones_like(x);
  const Tensor one = ones_like(x.narrow(d, 0, 1));
  const Tensor left = cat({one, x.narrow(d, 0, n - 1)}, d).cumprod(d);
  const Tensor right = cat({x.narrow(d, 1, n - 1), one}, d).flip({d}).cumprod(d).flip({d});
  return left * right;
}
int64_t lowest_dim(uint64_t mask) {
  int64_t d = 0;
  while (!((mask >> d) & 1)) ++d;
  return d;
}
// d prod / dx_i = the product of the other elements (torch's prod_backward):
// r / x_i when the input has no zero; otherwise the exclusive products (so
// one zero in a slice gives the product of the others at the zero's position
// and 0 elsewhere, two or more give 0). `full`: prod() over every element.
Tensor prod_front(const char* node, const Tensor& x, uint64_t mask, bool keepdim, std::optional<ScalarType> dtype,
                  bool full) {
  if (!dtype) BRISK_AUTOCAST(prod, prod_front, node, x, mask, keepdim, dtype, full);
  BRISK_PROFILE_OP("prod", x);
  if (BRISK_LIKELY(!autograd::should_record(x))) return sum_like<OpId::prod>("prod", x, mask, keepdim, dtype);
  autograd::check_differentiable_dtype("prod", sum_result_dtype(x, dtype));
  // prod(x, dtype=t) differentiates prod(x.to(t)) as torch does: the formulas
  // below see x in r's dtype (r / x is exactly 1 over a dim of size 1).
  if (dtype && *dtype != x.dtype()) return prod_front(node, x.to(*dtype), mask, keepdim, std::nullopt, full);
  Tensor r = without_grad([&] { return sum_like<OpId::prod>("prod", x, mask, keepdim, dtype); });
  autograd::record(node, {r}, {x}, {save(x), save_output(r)}, [mask, keepdim, full](BackwardCtx& c) -> TensorList {
    const Tensor x = c.saved(0);
    const int64_t nd = x.dim();
    if (nd == 0) return {c.grad()};  // r = x
    const Tensor g = unreduce(c.grad(), nd, mask, keepdim);
    const Tensor r = unreduce(c.saved(1), nd, mask, keepdim);
    const Tensor is_zero = x == 0;
    const int64_t zeros = is_zero.sum().item<int64_t>();
    if (zeros == 0) return {g * (r / x)};  // grouped as torch: g * r may overflow where r / x does not
    // With zeros, the product of the others as exclusive products from both
    // sides (torch's prod_safe_zeros_backward, for every slice): finite at
    // +-inf elements where r / x is inf / inf, and its own derivative is
    // right at any number of zeros (create_graph). prod() over all elements
    // with two or more zeros is 0 everywhere (outside create_graph).
    if (!full) return {g * product_of_others(x, lowest_dim(mask))};
    if (zeros > 1 && !GradMode::is_enabled()) return {zeros_like(x, g.options())};
    return {g * product_of_others(x.reshape({-1}), 0).view(x.sizes())};
  });
  return r;
}
}  // namespace

Tensor sum(const Tensor& x, std::optional<ScalarType> dtype) {
  return sum_front("SumBackward0", x, dims_mask("sum", x, {}), false, dtype);
}
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  return sum_front("SumBackward1", x, dims_mask("sum", x, dims), keepdim, dtype);
}
Tensor& sum_out(Tensor& out, const Tensor& x, IntArrayRef dims, bool keepdim) {
  BRISK_PROFILE_OP("sum_out", x);
  autograd::check_out("sum_out", x);
  const uint64_t mask = dims_mask("sum_out", x, dims);
  check_out("sum_out", out, reduced_shape(x, mask, keepdim));
  sum_like<OpId::sum>("sum_out", x, mask, keepdim, std::nullopt, &out);
  out.bump_version();
  return out;
}
Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return brisk::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::sum(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::sum(*this, IntArrayRef(dim), keepdim, dtype);
}

Tensor mean(const Tensor& x, std::optional<ScalarType> dtype) {
  return mean_front("MeanBackward0", x, dims_mask("mean", x, {}), false, dtype);
}
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  return mean_front("MeanBackward1", x, dims_mask("mean", x, dims), keepdim, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const { return brisk::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::mean(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::mean(*this, IntArrayRef(dim), keepdim, dtype);
}

Tensor prod(const Tensor& x, std::optional<ScalarType> dtype) {
  return prod_front("ProdBackward0", x, dims_mask("prod", x, {}), false, dtype, /*full=*/true);
}
Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  return prod_front("ProdBackward1", x, one_dim_mask("prod", x, dim), keepdim, dtype, /*full=*/x.dim() == 0);
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const { return brisk::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::prod(*this, dim, keepdim, dtype);
}

// ---- max / min / amax / amin / argmax / argmin -------------------------------------
namespace {
// max()/min()/amax/amin: the gradient split evenly among the elements equal
// to the result (ties share it; a NaN result sends it to the NaNs).
template <OpId op>
Tensor amax_front(const char* name, const char* node, const Tensor& x, IntArrayRef dims, bool keepdim, NanGrad nan) {
  BRISK_PROFILE_OP(name, x);
  if (BRISK_LIKELY(!autograd::should_record(x))) return amax_impl<op>(name, x, dims, keepdim);
  Tensor r = without_grad([&] { return amax_impl<op>(name, x, dims, keepdim); });
  const uint64_t mask = dims_mask(name, x, dims);
  autograd::record(node, {r}, {x}, {save(x), save_output(r)}, [mask, keepdim, nan](BackwardCtx& c) -> TensorList {
    const Tensor x = c.saved(0);
    const int64_t nd = x.dim();
    return {distribute_evenly(unreduce(c.grad(), nd, mask, keepdim), x, unreduce(c.saved(1), nd, mask, keepdim), nd,
                              mask, nan)};
  });
  return r;
}
// max(dim)/min(dim): the gradient goes to the element the index names.
template <OpId op>
std::tuple<Tensor, Tensor> max_dim_front(const char* name, const char* node, const Tensor& x, int64_t dim,
                                         bool keepdim) {
  BRISK_PROFILE_OP(name, x);
  if (BRISK_LIKELY(!autograd::should_record(x))) return max_dim_impl<op>(name, x, dim, keepdim);
  auto [values, indices] = without_grad([&] { return max_dim_impl<op>(name, x, dim, keepdim); });
  const int64_t d = x.dim() == 0 ? 0 : detail::wrap_dim(dim, x.dim(), name);
  autograd::record(node, {values}, {x}, {save(indices)},
                   [sizes = autograd::to_dims(x.sizes()), d, keepdim](BackwardCtx& c) -> TensorList {
                     Tensor g = c.grad(), idx = c.saved(0);
                     if (!keepdim && !sizes.empty()) {
                       g = g.unsqueeze(d);
                       idx = idx.unsqueeze(d);
                     }
                     return {scatter_back(g, idx, sizes, d)};
                   });
  return {values, indices};
}
}  // namespace

Tensor max(const Tensor& x) { return amax_front<OpId::amax>("max", "MaxBackward1", x, {}, false, NanGrad::ToNans); }
Tensor min(const Tensor& x) { return amax_front<OpId::amin>("min", "MinBackward1", x, {}, false, NanGrad::ToNans); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return max_dim_front<OpId::argmax>("max", "MaxBackward0", x, dim, keepdim);
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return max_dim_front<OpId::argmin>("min", "MinBackward0", x, dim, keepdim);
}
Tensor amax(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return amax_front<OpId::amax>("amax", "AmaxBackward0", x, dims, keepdim, NanGrad::Nan);
}
Tensor amin(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return amax_front<OpId::amin>("amin", "AminBackward0", x, dims, keepdim, NanGrad::Nan);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  BRISK_PROFILE_OP("argmax", x);
  return argmax_impl<OpId::argmax>("argmax", x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  BRISK_PROFILE_OP("argmin", x);
  return argmax_impl<OpId::argmin>("argmin", x, dim, keepdim);
}
Tensor Tensor::max() const { return brisk::max(*this); }
Tensor Tensor::min() const { return brisk::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return brisk::max(*this, dim, keepdim); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return brisk::min(*this, dim, keepdim); }
Tensor Tensor::amax(IntArrayRef dims, bool keepdim) const { return brisk::amax(*this, dims, keepdim); }
Tensor Tensor::amin(IntArrayRef dims, bool keepdim) const { return brisk::amin(*this, dims, keepdim); }
Tensor Tensor::amax(int64_t dim, bool keepdim) const { return brisk::amax(*this, IntArrayRef(dim), keepdim); }
Tensor Tensor::amin(int64_t dim, bool keepdim) const { return brisk::amin(*this, IntArrayRef(dim), keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return brisk::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return brisk::argmin(*this, dim, keepdim); }

// ---- var / std ----------------------------------------------------------------------
// d var / dx = 2 (x - mean) / (N - correction); d std = d var / (2 std), 0
// where std is 0 (torch's std_backward).
Tensor var(const Tensor& x, std::optional<std::vector<int64_t>> dims, const Scalar& correction, bool keepdim) {
  BRISK_PROFILE_OP("var", x);
  if (BRISK_LIKELY(!autograd::should_record(x)))
    return std::get<0>(var_impl("var", x, dims, correction, keepdim, VarMode::Var, false));
  Tensor r = without_grad([&] { return std::get<0>(var_impl("var", x, dims, correction, keepdim, VarMode::Var, false)); });
  const uint64_t mask = dims ? dims_mask("var", x, IntArrayRef(*dims)) : dims_mask("var", x, {});
  autograd::record("VarBackward0", {r}, {x}, {save(x)},
                   [mask, keepdim, corr = correction.to_double(), all = !dims || x.dim() == 0](BackwardCtx& c) -> TensorList {
                     const Tensor x = c.saved(0);
                     return {var_backward(unreduce(c.grad(), x.dim(), mask, keepdim), x, x.dim(), mask, corr, all)};
                   });
  return r;
}
Tensor std(const Tensor& x, std::optional<std::vector<int64_t>> dims, const Scalar& correction, bool keepdim) {
  BRISK_PROFILE_OP("std", x);
  if (BRISK_LIKELY(!autograd::should_record(x)))
    return std::get<0>(var_impl("std", x, dims, correction, keepdim, VarMode::Std, false));
  Tensor r = without_grad([&] { return std::get<0>(var_impl("std", x, dims, correction, keepdim, VarMode::Std, false)); });
  const uint64_t mask = dims ? dims_mask("std", x, IntArrayRef(*dims)) : dims_mask("std", x, {});
  autograd::record("StdBackward0", {r}, {x}, {save(x), save_output(r)},
                   [mask, keepdim, corr = correction.to_double(), all = !dims || x.dim() == 0](BackwardCtx& c) -> TensorList {
                     const Tensor x = c.saved(0);
                     const int64_t nd = x.dim();
                     const Tensor s = unreduce(c.saved(1), nd, mask, keepdim);
                     const Tensor g = where(s == 0, 0.0, unreduce(c.grad(), nd, mask, keepdim) / (s * 2));
                     return {var_backward(g, x, nd, mask, corr, all)};
                   });
  return r;
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, std::optional<std::vector<int64_t>> dims,
                                    const Scalar& correction, bool keepdim) {
  BRISK_PROFILE_OP("var_mean", x);
  if (BRISK_LIKELY(!autograd::should_record(x)))
    return var_impl("var_mean", x, dims, correction, keepdim, VarMode::Var, true);
  auto [v, m] = without_grad([&] { return var_impl("var_mean", x, dims, correction, keepdim, VarMode::Var, true); });
  const uint64_t mask = dims ? dims_mask("var_mean", x, IntArrayRef(*dims)) : dims_mask("var_mean", x, {});
  autograd::record("VarMeanBackward0", {v, m}, {x}, {save(x)},
                   [mask, keepdim, corr = correction.to_double(), all = !dims || x.dim() == 0](BackwardCtx& c) -> TensorList {
                     const Tensor x = c.saved(0);
                     const int64_t nd = x.dim();
                     const auto n = static_cast<double>(reduced_numel(x.sizes(), mask));
                     Tensor gx = var_backward(unreduce(c.grad(0), nd, mask, keepdim), x, nd, mask, corr, all);
                     return {gx + unreduce(c.grad(1), nd, mask, keepdim) / n};
                   });
  return {v, m};
}
Tensor Tensor::var(std::optional<std::vector<int64_t>> dims, const Scalar& correction, bool keepdim) const {
  return brisk::var(*this, std::move(dims), correction, keepdim);
}
Tensor Tensor::std(std::optional<std::vector<int64_t>> dims, const Scalar& correction, bool keepdim) const {
  return brisk::std(*this, std::move(dims), correction, keepdim);
}
Tensor Tensor::var(int64_t dim, const Scalar& correction, bool keepdim) const {
  return brisk::var(*this, std::vector<int64_t>{dim}, correction, keepdim);
}
Tensor Tensor::std(int64_t dim, const Scalar& correction, bool keepdim) const {
  return brisk::std(*this, std::vector<int64_t>{dim}, correction, keepdim);
}

// ---- norm -------------------------------------------------------------------------------
namespace {
Tensor norm_impl(const Tensor& x, const Scalar& p, IntArrayRef dims, bool keepdim) {
  BRISK_CHECK(x.is_floating_point(), "norm", "input dtype should be either floating point or complex. Got ",
              x.dtype(), " instead.");
  const double pv = p.to_double();
  NormMode mode = NormMode::General;
  if (pv == 2)
    mode = NormMode::L2;
  else if (pv == 1)
    mode = NormMode::L1;
  else if (pv == 0)
    mode = NormMode::L0;
  else if (pv == std::numeric_limits<double>::infinity())
    mode = NormMode::Inf;
  else if (pv == -std::numeric_limits<double>::infinity())
    mode = NormMode::NegInf;
  const uint64_t mask = dims_mask("norm", x, dims);
  // p < 0 and p = inf have no identity: an empty reduction is refused (torch 2.x; 1.13 returned a value).
  if (x.numel() == 0 && (pv < 0 || pv == std::numeric_limits<double>::infinity())) {
    BRISK_CHECK(!dims.empty() && x.dim() > 0, "norm", "linalg.vector_norm cannot compute the ", pv,
                " norm on an empty tensor because the operation does not have an identity");
    for (int64_t d = 0; d < x.dim(); ++d)
      BRISK_CHECK(!(reduced(mask, d) && x.size(d) == 0), "norm", "linalg.vector_norm cannot compute the ", pv,
                  " norm on the dimension ", d, " because this dimension is empty and the operation does not have an identity");
  }
  // One element per output (every reduced dim of size 1): the norm is |x|
  // exactly, as PyTorch returns it, where |x|^p would overflow or underflow
  // the float (the 3-norm of 1e30, the 2-norm of 3e38, of 1e-30 in float32).
  int64_t per_output = 1;
  DimVector rdims;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (reduced(mask, d)) {
      per_output *= x.size(d);
      rdims.push_back(d);
    }
  if (per_output == 1 && x.numel() > 0) {
    const Tensor v = mode == NormMode::L0 ? x.ne(0).to(x.dtype()) : x.abs();
    return v.sum(rdims, keepdim);  // removes (or keeps) the size-1 dims; exact
  }
  // 16-bit floats compute in float.
  const ScalarType compute = is_reduced_float(x.dtype()) ? kFloat : x.dtype();
  Reduction r("norm", x.to(compute), mask, keepdim);
  r.add_output(compute, x.dtype());
  KernelArgs a;
  a.mode = static_cast<int>(mode);
  a.s0 = pv;
  r.run<OpId::norm>(a);
  return r.result();
}

// torch's norm_backward with n the norm (keepdim shape) and g its gradient:
// p = 0: 0; p = 1: sign(x) g; p = +-inf: sign(x) g split evenly among the
// elements with |x| = n; otherwise sign(x) |x|^(p-1) g / n^(p-1), with 0 where
// n = 0 (so the 2-norm of a zero vector has gradient 0, not NaN).
Tensor norm_backward(const Tensor& g, const Tensor& x, const Tensor& n, double p, int64_t nd, uint64_t mask) {
  if (p == 0) return zeros_like(x, g.options());
  if (p == 1) return x.sign() * g;
  if (std::isinf(p)) return x.sign() * distribute_evenly(g, x.abs(), n, nd, mask, NanGrad::Zero);
  if (p == 2) return g * where(n == 0, 0.0, x / n);  // torch's grouping: a NaN g stays NaN at a zero norm
  if (p < 1) {
    // |x|^(p-1) is infinite at 0: those elements get 0.
    // (torch's grouping, left to right: the small |x|^(p-1) meets g before
    // the large norm^(1-p), so neither overflows where the result does not)
    const Tensor scaled = where(x == 0, 0.0, x.sign() * x.abs().pow(p - 1));
    return scaled * g * n.pow(1 - p);
  }
  // (the mask inside: its derivative at a zero norm stays 0, where a mask
  // around the quotient would give 0 * NaN in a second derivative). In
  // float64 for narrower dtypes: the norm is computed without underflow (the
  // norm of one denormal element is |x|), so |x|^(p-1) and norm^(p-1) must
  // not underflow either, or the gradient is 0 * inf = NaN where it is 1.
  if (x.dtype() == kFloat || x.dtype() == kHalf || x.dtype() == kBFloat16)
    return norm_backward(g.to(kDouble), x.to(kDouble), n.to(kDouble), p, nd, mask).to(x.dtype());
  const Tensor scaled = p < 2 ? x.sign() * x.abs().pow(p - 1) : x * x.abs().pow(p - 2);
  return scaled * where(n == 0, 0.0, g / n.pow(p - 1));
}
}  // namespace

Tensor norm(const Tensor& x, const Scalar& p, IntArrayRef dims, bool keepdim) {
  BRISK_AUTOCAST(norm, norm, x, p, dims, keepdim);
  BRISK_PROFILE_OP("norm", x, p);
  if (BRISK_LIKELY(!autograd::should_record(x))) return norm_impl(x, p, dims, keepdim);
  Tensor r = without_grad([&] { return norm_impl(x, p, dims, keepdim); });
  const uint64_t mask = dims_mask("norm", x, dims);
  autograd::record(dims.empty() ? "NormBackward0" : "NormBackward1", {r}, {x}, {save(x), save_output(r)},
                   [mask, keepdim, pv = p.to_double()](BackwardCtx& c) -> TensorList {
                     const Tensor x = c.saved(0);
                     const int64_t nd = x.dim();
                     return {norm_backward(unreduce(c.grad(), nd, mask, keepdim), x,
                                           unreduce(c.saved(1), nd, mask, keepdim), pv, nd, mask)};
                   });
  return r;
}
Tensor Tensor::norm(const Scalar& p) const { return brisk::norm(*this, p); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef dims, bool keepdim) const {
  return brisk::norm(*this, p, dims, keepdim);
}

// ---- logsumexp ------------------------------------------------------------------------
// max + log(sum(exp(x - max))), with an infinite max replaced by 0 so that
// all -inf gives -inf and any +inf gives +inf. Integers compute in the default
// float dtype. Its own node: d/dx = exp(x - logsumexp(x)).
namespace {
Tensor logsumexp_impl(const Tensor& x, IntArrayRef dims, bool keepdim) {
  const Tensor xf = x.is_floating_point() ? x : x.to(default_dtype());
  const uint64_t mask = dims_mask("logsumexp", xf, dims);
  DimVector rdims;
  for (int64_t d = 0; d < xf.dim(); ++d)
    if (reduced(mask, d)) rdims.push_back(d);
  if (xf.numel() == 0) return xf.exp().sum(rdims, keepdim).log();  // log(0) = -inf
  Tensor m = xf.amax(rdims, true);
  m = where(m.isinf(), 0, m);
  Tensor r = (xf - m).exp().sum(rdims, true).log().add_(m);
  detail::mark_new_version(r);  // Note [Version counters]
  return keepdim ? r : r.view(reduced_shape(xf, mask, false));
}
}  // namespace

Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim) {
  BRISK_AUTOCAST(logsumexp, logsumexp, x, dims, keepdim);
  BRISK_PROFILE_OP("logsumexp", x);
  if (BRISK_LIKELY(!autograd::should_record(x))) return logsumexp_impl(x, dims, keepdim);
  Tensor r = without_grad([&] { return logsumexp_impl(x, dims, keepdim); });
  const uint64_t mask = dims_mask("logsumexp", x, dims);
  autograd::record("LogsumexpBackward0", {r}, {x}, {save(x), save_output(r)},
                   [mask, keepdim](BackwardCtx& c) -> TensorList {
                     const Tensor x = c.saved(0);
                     const int64_t nd = x.dim();
                     return {unreduce(c.grad(), nd, mask, keepdim) * (x - unreduce(c.saved(1), nd, mask, keepdim)).exp()};
                   });
  return r;
}
Tensor Tensor::logsumexp(IntArrayRef dims, bool keepdim) const { return brisk::logsumexp(*this, dims, keepdim); }
Tensor Tensor::logsumexp(int64_t dim, bool keepdim) const {
  return brisk::logsumexp(*this, IntArrayRef(dim), keepdim);
}

// ---- all / any ----------------------------------------------------------------------------
Tensor all(const Tensor& x) {
  BRISK_PROFILE_OP("all", x);
  return all_any_impl<OpId::all>("all", x, dims_mask("all", x, {}), false);
}
Tensor any(const Tensor& x) {
  BRISK_PROFILE_OP("any", x);
  return all_any_impl<OpId::any>("any", x, dims_mask("any", x, {}), false);
}
Tensor all(const Tensor& x, int64_t dim, bool keepdim) {
  BRISK_PROFILE_OP("all", x);
  return all_any_impl<OpId::all>("all", x, one_dim_mask("all", x, dim), keepdim);
}
Tensor any(const Tensor& x, int64_t dim, bool keepdim) {
  BRISK_PROFILE_OP("any", x);
  return all_any_impl<OpId::any>("any", x, one_dim_mask("any", x, dim), keepdim);
}
Tensor Tensor::all() const { return brisk::all(*this); }
Tensor Tensor::any() const { return brisk::any(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return brisk::all(*this, dim, keepdim); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return brisk::any(*this, dim, keepdim); }

}  // namespace brisk
