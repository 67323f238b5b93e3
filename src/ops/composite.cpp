// Ops PyTorch itself composes from others, composed here the same way (so
// that they go through dispatch as their parts, and their gradients come
// from the parts' formulas): repeat_interleave (index_select), diag and
// diag_embed (a zero tensor and a diagonal view), trace, nansum / nanmean,
// count_nonzero, fliplr / flipud / rot90, tril_indices / triu_indices, and
// the other names of transpose and sign.
#include <algorithm>
#include <vector>

#include "brisk/autograd.h"
#include "autograd/function.h"
#include "brisk/ops.h"
#include "core/tensor_iter.h"
#include "core/tensor_create.h"

namespace brisk {

namespace {

std::vector<int64_t> all_dims(const Tensor& x) {
  std::vector<int64_t> d(static_cast<size_t>(x.dim()));
  for (int64_t i = 0; i < x.dim(); ++i) d[static_cast<size_t>(i)] = i;
  return d;
}

// The repeat counts on the host (int64), checked as PyTorch checks them.
std::vector<int64_t> host_repeats(const char* op, const Tensor& repeats) {
  BRISK_CHECK(repeats.defined(), op, "repeats must be defined");
  BRISK_CHECK(repeats.dim() <= 1, op, "repeats must be 0-dim or 1-dim tensor, got ", repeats.dim(), " dims");
  BRISK_CHECK(repeats.dtype() == kInt64 || repeats.dtype() == kInt32, op,
              "repeats must be an int64 or int32 tensor, got ", repeats.dtype());
  const Tensor r = repeats.cpu().to(kInt64).contiguous().reshape({-1});
  std::vector<int64_t> v(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
  for (int64_t c : v) BRISK_CHECK(c >= 0, op, "repeats can not be negative, got ", c);
  return v;
}

// index i repeated counts[i] times, as an int64 tensor on device d.
Tensor repeated_indices(const char* op, const std::vector<int64_t>& counts, std::optional<int64_t> output_size,
                        Device d) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  if (output_size)
    BRISK_CHECK(*output_size == total, op, "output_size ", *output_size, " does not match the repeated size ", total);
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(total));
  for (size_t i = 0; i < counts.size(); ++i) idx.insert(idx.end(), static_cast<size_t>(counts[i]), int64_t(i));
  return tensor(idx, TensorOptions(kInt64).device(d));
}

Tensor repeat_interleave_impl(const Tensor& x, std::vector<int64_t> counts, std::optional<int64_t> dim,
                              std::optional<int64_t> output_size) {
  const char* op = "repeat_interleave";
  BRISK_CHECK(x.defined(), op, "input must be defined");
  // (a 0-dim input takes no dim in PyTorch: "dimension out of range")
  BRISK_CHECK(!dim || x.dim() > 0, op, "dimension out of range: a 0-dim input takes no dim, got ", *dim);
  const Tensor in = dim ? x : x.reshape({-1});
  const int64_t d = dim ? detail::wrap_dim(*dim, in.dim(), op) : 0;
  const Tensor src = in.dim() == 0 ? in.reshape({1}) : in;
  const int64_t n = src.size(d);
  if (counts.size() == 1) counts.assign(static_cast<size_t>(n), counts[0]);
  BRISK_CHECK(static_cast<int64_t>(counts.size()) == n, op,
              "repeats must have the same size as input along dim, but got repeats.size(0) = ", counts.size(),
              " and input.size(", d, ") = ", n);
  return src.index_select(d, repeated_indices(op, counts, output_size, x.device()));
}

}  // namespace

// ---- repeat_interleave ------------------------------------------------------------------

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  BRISK_CHECK(repeats >= 0, "repeat_interleave", "repeats must be non-negative, got ", repeats);
  return repeat_interleave_impl(x, {repeats}, dim, output_size);
}
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  return repeat_interleave_impl(x, host_repeats("repeat_interleave", repeats), dim, output_size);
}
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  BRISK_CHECK(repeats.defined() && repeats.dim() == 1, "repeat_interleave", "repeats must be a 1-dim tensor");
  return repeated_indices("repeat_interleave", host_repeats("repeat_interleave", repeats), output_size,
                          repeats.device());
}
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim, std::optional<int64_t> output_size) const {
  return brisk::repeat_interleave(*this, repeats, dim, output_size);
}
Tensor Tensor::repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim,
                                 std::optional<int64_t> output_size) const {
  return brisk::repeat_interleave(*this, repeats, dim, output_size);
}

// ---- diagonals --------------------------------------------------------------------------

Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const char* op = "diag_embed";
  BRISK_CHECK(x.defined(), op, "input must be defined");
  const int64_t nd = x.dim() + 1;
  const int64_t d1 = detail::wrap_dim(dim1, nd, op), d2 = detail::wrap_dim(dim2, nd, op);
  BRISK_CHECK(d1 != d2, op, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  const int64_t n = x.dim() == 0 ? 1 : x.size(-1);
  const int64_t m = n + (offset < 0 ? -offset : offset);
  // the shape: x's leading dims with two new dims of size m at d1 and d2
  std::vector<int64_t> shape;
  int64_t k = 0;
  for (int64_t i = 0; i < nd; ++i) shape.push_back(i == d1 || i == d2 ? m : x.size(k++));
  Tensor out = zeros(shape, x.options());
  // (a copy into the diagonal view of zeros, as PyTorch: the gradient is that
  // diagonal of the incoming one)
  out.diagonal(offset, d1, d2).copy_(x.dim() == 0 ? x.reshape({1}) : x);
  return out;
}
Tensor diag(const Tensor& x, int64_t diagonal) {
  const char* op = "diag";
  BRISK_CHECK(x.defined(), op, "input must be defined");
  BRISK_CHECK(x.dim() == 1 || x.dim() == 2, op, "supports 1-D or 2-D tensors, got ", x.dim(), "-D");
  if (x.dim() == 1) return diag_embed(x, diagonal, 0, 1);
  return x.diagonal(diagonal, 0, 1).clone();
}
Tensor trace(const Tensor& x) {
  const char* op = "trace";
  BRISK_CHECK(x.defined() && x.dim() == 2, op, "expected a matrix, got a tensor with ",
              x.defined() ? x.dim() : 0, " dims");
  BRISK_CHECK(x.dtype() != kBool, op, "not implemented for bool");
  const Tensor d = x.diagonal(0, 0, 1);
  if (!x.is_floating_point()) return d.sum(kInt64);
  // PyTorch's CPU kernel adds the diagonal left to right in acc_type (float32
  // in double, 16-bit in float32) and rounds once: the last element of a
  // scan, whose accumulators are those (cumsum's kernel)
  if (d.numel() == 0) return d.sum();  // 0, with the input's history
  return d.cumsum(0).select(0, -1);
}
Tensor Tensor::diag(int64_t diagonal) const { return brisk::diag(*this, diagonal); }
Tensor Tensor::diag_embed(int64_t offset, int64_t dim1, int64_t dim2) const {
  return brisk::diag_embed(*this, offset, dim1, dim2);
}
Tensor Tensor::trace() const { return brisk::trace(*this); }

namespace {
// rows r and columns c as a (2, n) tensor, int64 unless opts names a dtype
Tensor index_pairs(std::vector<int64_t> r, const std::vector<int64_t>& c, TensorOptions opts) {
  const int64_t n = static_cast<int64_t>(r.size());
  r.insert(r.end(), c.begin(), c.end());
  return tensor(r, {2, n}, opts.dtype_ ? opts : opts.dtype(kInt64));
}
}  // namespace

Tensor tril_indices(int64_t row, int64_t col, int64_t offset, TensorOptions opts) {
  BRISK_CHECK(row >= 0, "tril_indices", "row must be non-negative, got ", row);
  BRISK_CHECK(col >= 0, "tril_indices", "col must be non-negative, got ", col);
  std::vector<int64_t> r, c;
  for (int64_t i = 0; i < row; ++i)
    for (int64_t j = 0; j < col && j <= i + offset; ++j) {
      r.push_back(i);
      c.push_back(j);
    }
  return index_pairs(r, c, opts);
}
Tensor triu_indices(int64_t row, int64_t col, int64_t offset, TensorOptions opts) {
  BRISK_CHECK(row >= 0, "triu_indices", "row must be non-negative, got ", row);
  BRISK_CHECK(col >= 0, "triu_indices", "col must be non-negative, got ", col);
  std::vector<int64_t> r, c;
  for (int64_t i = 0; i < row; ++i)
    for (int64_t j = std::max<int64_t>(0, i + offset); j < col; ++j) {
      r.push_back(i);
      c.push_back(j);
    }
  return index_pairs(r, c, opts);
}

// ---- NaN-skipping and counting reductions -----------------------------------------------

Tensor nansum(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  BRISK_CHECK(x.defined(), "nansum", "input must be defined");
  const std::vector<int64_t> every = all_dims(x);
  const IntArrayRef d = dims.empty() ? IntArrayRef(every) : dims;
  if (!x.is_floating_point()) return x.sum(d, keepdim, dtype);
  Tensor y;
  {
    NoGradGuard ng;
    y = where(x.isnan(), Scalar(0.0), x).sum(d, keepdim, dtype);
  }
  if (BRISK_UNLIKELY(autograd::should_record(x))) {
    // PyTorch's backward, grad * ~isnan(x): a multiply, so an infinite
    // incoming gradient gives NaN at the NaNs (a select would give 0)
    // (a 0-dim x takes dim 0 or -1: one slot, never read)
    std::vector<bool> reduced(static_cast<size_t>(std::max<int64_t>(x.dim(), 1)), false);
    for (int64_t k : d) reduced[static_cast<size_t>(detail::wrap_dim(k, x.dim(), "nansum"))] = true;
    autograd::record("NansumBackward0", {y}, {x}, {autograd::save(x)},
                     [reduced, keepdim](autograd::BackwardCtx& c) -> TensorList {
                       const Tensor& xs = c.saved(0);
                       Tensor g = c.grad();
                       if (!keepdim)
                         for (int64_t k = 0; k < xs.dim(); ++k)
                           if (reduced[static_cast<size_t>(k)]) g = g.unsqueeze(k);
                       return {(g.expand(xs.sizes()) * xs.isnan().logical_not()).to(xs.dtype())};
                     });
  }
  return y;
}
Tensor nanmean(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  BRISK_CHECK(x.defined(), "nanmean", "input must be defined");
  BRISK_CHECK(x.is_floating_point(), "nanmean", "expected input to have floating point dtype but got ", x.dtype());
  const std::vector<int64_t> every = all_dims(x);
  const IntArrayRef d = dims.empty() ? IntArrayRef(every) : dims;
  const Tensor kept = x.isnan().logical_not().sum(d, keepdim);
  return nansum(x, d, keepdim, dtype) / kept;
}
Tensor count_nonzero(const Tensor& x, IntArrayRef dims) {
  BRISK_CHECK(x.defined(), "count_nonzero", "input must be defined");
  const std::vector<int64_t> every = all_dims(x);
  return x.ne(0).sum(dims.empty() ? IntArrayRef(every) : dims, false, kInt64);
}
Tensor count_nonzero(const Tensor& x, int64_t dim) {
  const int64_t d[1] = {dim};
  return count_nonzero(x, IntArrayRef(d, 1));
}
Tensor Tensor::nansum(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::nansum(*this, dims, keepdim, dtype);
}
Tensor Tensor::nanmean(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) const {
  return brisk::nanmean(*this, dims, keepdim, dtype);
}
Tensor Tensor::count_nonzero(IntArrayRef dims) const { return brisk::count_nonzero(*this, dims); }
Tensor Tensor::count_nonzero(int64_t dim) const { return brisk::count_nonzero(*this, dim); }

// ---- flips and rotations ------------------------------------------------------------------

Tensor fliplr(const Tensor& x) {
  BRISK_CHECK(x.defined() && x.dim() >= 2, "fliplr", "input must be >= 2-d, got ", x.defined() ? x.dim() : 0, " dims");
  return x.flip({1});
}
Tensor flipud(const Tensor& x) {
  BRISK_CHECK(x.defined() && x.dim() >= 1, "flipud", "input must be >= 1-d, got ", x.defined() ? x.dim() : 0, " dims");
  return x.flip({0});
}
Tensor rot90(const Tensor& x, int64_t k, IntArrayRef dims) {
  const char* op = "rot90";
  BRISK_CHECK(x.defined(), op, "input must be defined");
  BRISK_CHECK(dims.size() == 2, op, "expected total rotation dims == 2, but got dims = ", dims.size());
  BRISK_CHECK(x.dim() >= 2, op, "expected total dims >= 2, but got total dims = ", x.dim());
  const int64_t a = detail::wrap_dim(dims[0], x.dim(), op), b = detail::wrap_dim(dims[1], x.dim(), op);
  BRISK_CHECK(a != b, op, "expected rotation dims to be different, but got dim0 = ", a, " and dim1 = ", b);
  switch (((k % 4) + 4) % 4) {
    case 1: return x.flip({b}).transpose(a, b);
    case 2: return x.flip({a, b});
    case 3: return x.flip({a}).transpose(a, b);
    default: return x.clone();
  }
}
Tensor Tensor::fliplr() const { return brisk::fliplr(*this); }
Tensor Tensor::flipud() const { return brisk::flipud(*this); }
Tensor Tensor::rot90(int64_t k, IntArrayRef dims) const { return brisk::rot90(*this, k, dims); }

// ---- gathers, differences, products and stacks (as PyTorch composes them) -----------------

// take_along_dim: gather after broadcasting input and indices over every
// dim but `dim` (the flattened input without a dim).
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  const char* op = "take_along_dim";
  BRISK_CHECK(x.defined() && indices.defined(), op, "input and indices must be defined");
  BRISK_CHECK(indices.dtype() == kInt64, op, "dtype of indices should be int64 but got ", indices.dtype());
  if (!dim) return x.reshape({-1}).gather(0, indices.reshape({-1}));
  BRISK_CHECK(x.dim() == indices.dim(), op, "input and indices should have the same number of dimensions, but got ",
              x.dim(), " dimensions for input, and ", indices.dim(), " dimensions for indices");
  BRISK_CHECK(x.dim() > 0, op, "dimension specified as ", *dim, " but tensor has no dimensions");
  const int64_t d = detail::wrap_dim(*dim, x.dim(), op);
  std::vector<int64_t> xs(x.sizes().begin(), x.sizes().end()), is(indices.sizes().begin(), indices.sizes().end());
  xs[size_t(d)] = 1;
  is[size_t(d)] = 1;
  DimVector shape = broadcast_shapes(xs, is, op);
  std::vector<int64_t> xshape(shape.begin(), shape.end()), ishape(shape.begin(), shape.end());
  xshape[size_t(d)] = x.size(d);
  ishape[size_t(d)] = indices.size(d);
  // PyTorch 2.x takes the indices modulo the dim's size (-1 is the last element)
  BRISK_CHECK(x.size(d) > 0 || indices.numel() == 0, op, "indices into an empty dim ", d);
  const Tensor idx = x.size(d) > 0 ? indices.remainder(x.size(d)) : indices;
  return x.expand(xshape).gather(d, idx.expand(ishape));
}
Tensor Tensor::take_along_dim(const Tensor& indices, std::optional<int64_t> dim) const {
  return brisk::take_along_dim(*this, indices, dim);
}

// diff: prepend/append concatenated, then n first differences (logical_xor for bool).
Tensor diff(const Tensor& x, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
            const std::optional<Tensor>& append) {
  const char* op = "diff";
  BRISK_CHECK(x.defined(), op, "input must be defined");
  BRISK_CHECK(x.dim() >= 1, op, "expects input to be at least one-dimensional");
  BRISK_CHECK(n >= 0, op, "order must be non-negative but got ", n);
  for (const auto* e : {&prepend, &append})
    if (*e && (*e)->defined())
      BRISK_CHECK((*e)->dim() == x.dim(), op, "expects prepend or append to be the same dimension as input (",
                  x.dim(), "), got ", (*e)->dim());
  // PyTorch: n = 0 is a copy of x (prepend and append ignored; the dim is
  // checked only when there is one of them to place)
  const bool ends = (prepend && prepend->defined()) || (append && append->defined());
  if (n == 0 && !ends) return x.clone();
  const int64_t d = detail::wrap_dim(dim, x.dim(), op);
  if (n == 0) return x.clone();
  Tensor t = x;
  if ((prepend && prepend->defined()) || (append && append->defined())) {
    std::vector<Tensor> parts;
    if (prepend && prepend->defined()) parts.push_back(*prepend);
    parts.push_back(x);
    if (append && append->defined()) parts.push_back(*append);
    t = cat(parts, d);
  }
  for (int64_t k = 0; k < n && t.size(d) > 0; ++k) {
    const int64_t m = t.size(d) - 1;
    const Tensor hi = t.narrow(d, 1, m), lo = t.narrow(d, 0, m);
    t = t.dtype() == kBool ? hi.logical_xor(lo) : hi - lo;
  }
  return t;
}
Tensor Tensor::diff(int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
                    const std::optional<Tensor>& append) const {
  return brisk::diff(*this, n, dim, prepend, append);
}

// kron: a's and b's dims interleaved (leading 1s for the shorter), multiplied, merged.
Tensor kron(const Tensor& a, const Tensor& b) {
  BRISK_CHECK(a.defined() && b.defined(), "kron", "inputs must be defined");
  const int64_t nd = std::max(a.dim(), b.dim());
  std::vector<int64_t> as(size_t(nd - a.dim()), 1), bs(size_t(nd - b.dim()), 1);
  as.insert(as.end(), a.sizes().begin(), a.sizes().end());
  bs.insert(bs.end(), b.sizes().begin(), b.sizes().end());
  std::vector<int64_t> ai, bi, out;
  for (int64_t k = 0; k < nd; ++k) {
    ai.push_back(as[size_t(k)]), ai.push_back(1);
    bi.push_back(1), bi.push_back(bs[size_t(k)]);
    out.push_back(as[size_t(k)] * bs[size_t(k)]);
  }
  return (a.reshape(ai) * b.reshape(bi)).reshape(out);
}
Tensor Tensor::kron(const Tensor& o) const { return brisk::kron(*this, o); }

// cross: the 3-vectors along dim (linalg_cross: broadcast, dim -1; cross
// without a dim: the first dim of size 3, PyTorch's deprecated default).
Tensor linalg_cross(const Tensor& a, const Tensor& b, int64_t dim) {
  const char* op = "linalg_cross";
  BRISK_CHECK(a.defined() && b.defined(), op, "inputs must be defined");
  BRISK_CHECK(a.dim() == b.dim(), op, "the input tensors must have the same number of dimensions, got ", a.dim(),
              " and ", b.dim());
  BRISK_CHECK(a.dim() > 0, op, "the inputs have no dimensions");
  BRISK_CHECK(a.dtype() == b.dtype(), op, "expected both inputs of one dtype, got ", a.dtype(), " and ", b.dtype());
  const DimVector shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  const int64_t d = detail::wrap_dim(dim, int64_t(shape.size()), op);
  BRISK_CHECK(a.size(d) == 3 && b.size(d) == 3, op, "dimension ", dim, " does not have size 3");
  const Tensor x = a.expand(shape), y = b.expand(shape);
  auto c = [d](const Tensor& t, int64_t i) { return t.narrow(d, i, 1); };
  return cat({c(x, 1) * c(y, 2) - c(x, 2) * c(y, 1), c(x, 2) * c(y, 0) - c(x, 0) * c(y, 2),
              c(x, 0) * c(y, 1) - c(x, 1) * c(y, 0)},
             d);
}
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim) {
  BRISK_CHECK(a.defined() && b.defined(), "cross", "inputs must be defined");
  if (dim) return linalg_cross(a, b, *dim);
  // PyTorch: the first dim of size 3 of the input, then linalg_cross (which broadcasts)
  for (int64_t k = 0; k < a.dim(); ++k)
    if (a.size(k) == 3) return linalg_cross(a, b, k);
  BRISK_FAIL("cross", "no dimension of size 3 in input");
}
Tensor Tensor::cross(const Tensor& o, std::optional<int64_t> dim) const { return brisk::cross(*this, o, dim); }

// block_diag: the matrices (a 0-dim tensor is 1x1, a 1-dim one a row) on
// the diagonal of zeros of the promoted dtype.
Tensor block_diag(const std::vector<Tensor>& tensors) {
  const char* op = "block_diag";
  int64_t rows = 0, cols = 0;
  ResultTypeState types;  // PyTorch's result_type over the list (0-dim inputs rank lower)
  std::vector<Tensor> mats;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    BRISK_CHECK(t.defined(), op, "input ", i, " is undefined");
    BRISK_CHECK(t.dim() <= 2, op, "input ", i, " must have 2 or fewer dimensions, got ", t.dim());
    const Tensor m = t.dim() == 0 ? t.reshape({1, 1}) : t.dim() == 1 ? t.reshape({1, -1}) : t;
    BRISK_CHECK(t.device() == tensors[0].device(), op, "input tensors must all be on the same device, got ",
                tensors[0].device(), " and ", t.device());
    rows += m.size(0);
    cols += m.size(1);
    types.update(t);
    mats.push_back(m);
  }
  const ScalarType dt = types.result();
  if (tensors.empty()) return empty({1, 0}, TensorOptions(default_dtype()));
  Tensor r = zeros({rows, cols}, TensorOptions(dt).device(tensors[0].device()));
  int64_t r0 = 0, c0 = 0;
  for (const Tensor& m : mats) {
    if (m.numel() > 0) r.narrow(0, r0, m.size(0)).narrow(1, c0, m.size(1)).copy_(m);
    r0 += m.size(0);
    c0 += m.size(1);
  }
  return r;
}

// cartesian_prod: the rows of every combination (meshgrid "ij", flattened, stacked).
Tensor cartesian_prod(const std::vector<Tensor>& tensors) {
  const char* op = "cartesian_prod";
  BRISK_CHECK(!tensors.empty(), op, "expects at least one tensor");
  for (size_t i = 0; i < tensors.size(); ++i)
    BRISK_CHECK(tensors[i].defined() && tensors[i].dim() == 1, op, "expects one-dimensional tensors, input ", i,
                " has ", tensors[i].defined() ? tensors[i].dim() : -1, " dimensions");
  if (tensors.size() == 1) return tensors[0];
  std::vector<Tensor> g = meshgrid(tensors, "ij");
  for (Tensor& t : g) t = t.reshape({-1});
  return stack(g, 1);
}

// atleast_Nd, column_stack (PyTorch's reshapes).
Tensor atleast_1d(const Tensor& x) { return x.dim() == 0 ? x.reshape({1}) : x; }
Tensor atleast_2d(const Tensor& x) {
  if (x.dim() == 0) return x.reshape({1, 1});
  if (x.dim() == 1) return x.unsqueeze(0);
  return x;
}
Tensor atleast_3d(const Tensor& x) {
  if (x.dim() == 0) return x.reshape({1, 1, 1});
  if (x.dim() == 1) return x.unsqueeze(0).unsqueeze(-1);
  if (x.dim() == 2) return x.unsqueeze(-1);
  return x;
}
Tensor column_stack(const std::vector<Tensor>& tensors) {
  BRISK_CHECK(!tensors.empty(), "column_stack", "expects a non-empty list of tensors");
  std::vector<Tensor> cols;
  for (const Tensor& t : tensors) cols.push_back(t.dim() <= 1 ? t.reshape({t.numel(), 1}) : t);
  return hstack(cols);
}

// clip: clamp's other name.
Tensor clip(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) { return clamp(x, min, max); }
Tensor clip(const Tensor& x, const Tensor& min, const Tensor& max) { return clamp(x, min, max); }
Tensor Tensor::clip(std::optional<Scalar> min, std::optional<Scalar> max) const { return clamp(min, max); }
Tensor& Tensor::clip_(std::optional<Scalar> min, std::optional<Scalar> max) const { return clamp_(min, max); }

// ---- other names --------------------------------------------------------------------------

Tensor swapdims(const Tensor& x, int64_t d0, int64_t d1) { return x.transpose(d0, d1); }
Tensor swapaxes(const Tensor& x, int64_t d0, int64_t d1) { return x.transpose(d0, d1); }
Tensor adjoint(const Tensor& x) { return x.mT(); }
Tensor sgn(const Tensor& x) { return x.sign(); }
Tensor Tensor::swapdims(int64_t d0, int64_t d1) const { return transpose(d0, d1); }
Tensor Tensor::adjoint() const { return mT(); }
Tensor Tensor::sgn() const { return sign(); }

}  // namespace brisk
