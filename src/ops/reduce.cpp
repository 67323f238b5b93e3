// Front ends of the reductions: sum, mean, prod, max/min, amax/amin,
// argmax/argmin, var/std/var_mean, norm, logsumexp, all/any.
#include <algorithm>
#include <cmath>
#include <limits>

#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/reduce_plan.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"

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
Tensor sum(const Tensor& x, std::optional<ScalarType> dtype) {
  return sum_like<OpId::sum>("sum", x, dims_mask("sum", x, {}), false, dtype);
}
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  return sum_like<OpId::sum>("sum", x, dims_mask("sum", x, dims), keepdim, dtype);
}
Tensor& sum_out(Tensor& out, const Tensor& x, IntArrayRef dims, bool keepdim) {
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
  return mean_impl(x, dims_mask("mean", x, {}), false, dtype);
}
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  return mean_impl(x, dims_mask("mean", x, dims), keepdim, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const { return brisk::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::mean(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::mean(*this, IntArrayRef(dim), keepdim, dtype);
}

Tensor prod(const Tensor& x, std::optional<ScalarType> dtype) {
  return sum_like<OpId::prod>("prod", x, dims_mask("prod", x, {}), false, dtype);
}
Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  return sum_like<OpId::prod>("prod", x, one_dim_mask("prod", x, dim), keepdim, dtype);
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const { return brisk::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::prod(*this, dim, keepdim, dtype);
}

// ---- max / min / amax / amin / argmax / argmin -------------------------------------
Tensor max(const Tensor& x) { return amax_impl<OpId::amax>("max", x, {}, false); }
Tensor min(const Tensor& x) { return amax_impl<OpId::amin>("min", x, {}, false); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return max_dim_impl<OpId::argmax>("max", x, dim, keepdim);
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return max_dim_impl<OpId::argmin>("min", x, dim, keepdim);
}
Tensor amax(const Tensor& x, IntArrayRef dims, bool keepdim) { return amax_impl<OpId::amax>("amax", x, dims, keepdim); }
Tensor amin(const Tensor& x, IntArrayRef dims, bool keepdim) { return amax_impl<OpId::amin>("amin", x, dims, keepdim); }
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return argmax_impl<OpId::argmax>("argmax", x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
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
Tensor var(const Tensor& x, std::optional<std::vector<int64_t>> dims, const Scalar& correction, bool keepdim) {
  return std::get<0>(var_impl("var", x, dims, correction, keepdim, VarMode::Var, false));
}
Tensor std(const Tensor& x, std::optional<std::vector<int64_t>> dims, const Scalar& correction, bool keepdim) {
  return std::get<0>(var_impl("std", x, dims, correction, keepdim, VarMode::Std, false));
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, std::optional<std::vector<int64_t>> dims,
                                    const Scalar& correction, bool keepdim) {
  return var_impl("var_mean", x, dims, correction, keepdim, VarMode::Var, true);
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
Tensor norm(const Tensor& x, const Scalar& p, IntArrayRef dims, bool keepdim) {
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
Tensor Tensor::norm(const Scalar& p) const { return brisk::norm(*this, p); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef dims, bool keepdim) const {
  return brisk::norm(*this, p, dims, keepdim);
}

// ---- logsumexp ------------------------------------------------------------------------
// max + log(sum(exp(x - max))), with an infinite max replaced by 0 so that
// all -inf gives -inf and any +inf gives +inf. Integers compute in the default
// float dtype. Composite: amax, sub, exp, sum, log, add.
Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim) {
  const Tensor xf = x.is_floating_point() ? x : x.to(default_dtype());
  const uint64_t mask = dims_mask("logsumexp", xf, dims);
  DimVector rdims;
  for (int64_t d = 0; d < xf.dim(); ++d)
    if (reduced(mask, d)) rdims.push_back(d);
  if (xf.numel() == 0) return xf.exp().sum(rdims, keepdim).log();  // log(0) = -inf
  Tensor m = xf.amax(rdims, true);
  m = where(m.isinf(), 0, m);
  Tensor r = (xf - m).exp().sum(rdims, true).log().add_(m);
  return keepdim ? r : r.view(reduced_shape(xf, mask, false));
}
Tensor Tensor::logsumexp(IntArrayRef dims, bool keepdim) const { return brisk::logsumexp(*this, dims, keepdim); }
Tensor Tensor::logsumexp(int64_t dim, bool keepdim) const {
  return brisk::logsumexp(*this, IntArrayRef(dim), keepdim);
}

// ---- all / any ----------------------------------------------------------------------------
Tensor all(const Tensor& x) { return all_any_impl<OpId::all>("all", x, dims_mask("all", x, {}), false); }
Tensor any(const Tensor& x) { return all_any_impl<OpId::any>("any", x, dims_mask("any", x, {}), false); }
Tensor all(const Tensor& x, int64_t dim, bool keepdim) {
  return all_any_impl<OpId::all>("all", x, one_dim_mask("all", x, dim), keepdim);
}
Tensor any(const Tensor& x, int64_t dim, bool keepdim) {
  return all_any_impl<OpId::any>("any", x, one_dim_mask("any", x, dim), keepdim);
}
Tensor Tensor::all() const { return brisk::all(*this); }
Tensor Tensor::any() const { return brisk::any(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return brisk::all(*this, dim, keepdim); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return brisk::any(*this, dim, keepdim); }

}  // namespace brisk
