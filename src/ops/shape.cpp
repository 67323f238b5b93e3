// Shape ops that allocate: cat/stack and friends, repeat/tile, flip, roll,
// tril/triu, pad, meshgrid. All are composites: an output is allocated and
// filled by copy_ into narrow() views of it (or by where()), so every dtype
// and device the copy and where kernels support works here too.
//
// Autograd: each op that allocates records one node of its own (its
// internals run under NoGradGuard); stacking variants, tile and meshgrid are
// built from recording ops and need none.
#include <algorithm>
#include <string>

#include "core/autocast.h"
#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"
#include "profiler/record.h"

namespace brisk {

using detail::wrap_dim;

namespace {

/// PyTorch keeps accepting 1-D tensors of size 0 in cat whatever the other
/// shapes are (they predate zero-size dims); they add nothing.
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

/// The checked plan of a cat: result shape and dtype, wrapped dim.
struct CatPlan {
  DimVector shape;
  ScalarType dtype = ScalarType::Undefined;
  int64_t dim = 0;
};

CatPlan plan_cat(const char* op, const std::vector<Tensor>& ts, int64_t dim) {
  BRISK_CHECK(!ts.empty(), op, "expected a non-empty list of Tensors");
  CatPlan p;
  const Tensor* ref = nullptr;
  size_t ref_index = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    BRISK_CHECK(t.defined(), op, "tensor number ", i, " in the list is undefined");
    BRISK_CHECK(t.dim() > 0, op, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    BRISK_CHECK(t.device() == ts[0].device(), op, "expected all tensors to be on the same device, but tensor number ",
                i, " is on ", t.device(), " and tensor number 0 on ", ts[0].device());
    p.dtype = i == 0 ? t.dtype() : promote_types(p.dtype, t.dtype());
    if (!ref && !is_legacy_empty(t)) ref = &t, ref_index = i;
  }
  if (!ref) {  // only legacy empty tensors: the result is one too
    wrap_dim(dim, 1, op);
    p.shape = DimVector{0};
    return p;
  }
  p.dim = wrap_dim(dim, ref->dim(), op);
  p.shape = DimVector(ref->sizes().begin(), ref->sizes().end());
  p.shape[p.dim] = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    if (is_legacy_empty(t)) continue;
    BRISK_CHECK(t.dim() == ref->dim(), op, "tensors must have the same number of dimensions: got ", ref->dim(),
                " (tensor number ", ref_index, ", shape ", ref->sizes(), ") and ", t.dim(), " (tensor number ", i,
                ", shape ", t.sizes(), ")");
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == p.dim) continue;
      BRISK_CHECK(t.size(d) == ref->size(d), op, "sizes of tensors must match except in dimension ", p.dim,
                  ". Expected size ", ref->size(d), " but got size ", t.size(d), " for tensor number ", i,
                  " in the list (shapes ", ref->sizes(), " and ", t.sizes(), ")");
    }
    p.shape[p.dim] += t.size(p.dim);
  }
  return p;
}

/// Copies the inputs one after the other along the plan's dim.
void fill_cat(Tensor& out, const std::vector<Tensor>& ts, const CatPlan& p) {
  int64_t offset = 0;
  for (const Tensor& t : ts) {
    if (is_legacy_empty(t)) continue;
    const int64_t len = t.size(p.dim);
    if (len > 0 && out.numel() > 0) out.narrow(p.dim, offset, len).copy_(t);
    offset += len;
  }
}

/// Whether two tensors touch a common byte of memory (by address ranges).
bool memory_overlaps(const Tensor& a, const Tensor& b) {
  if (!a.is_alias_of(b) || a.numel() == 0 || b.numel() == 0) return false;
  auto range = [](const Tensor& t) {
    int64_t lo = 0, hi = 0;
    for (int64_t d = 0; d < t.dim(); ++d) (t.stride(d) < 0 ? lo : hi) += (t.size(d) - 1) * t.stride(d);
    const int64_t es = static_cast<int64_t>(t.element_size());
    const char* base = static_cast<const char*>(t.data_ptr());
    return std::pair<const char*, const char*>(base + lo * es, base + (hi + 1) * es);
  };
  auto [a0, a1] = range(a);
  auto [b0, b1] = range(b);
  return a0 < b1 && b0 < a1;
}

/// Tensors viewed with at least n dims, as torch.atleast_{1,2,3}d.
Tensor atleast(const Tensor& t, int64_t n) {
  if (t.dim() >= n) return t;
  if (t.dim() == 0) return t.reshape(DimVector(static_cast<size_t>(n), 1));
  if (n == 2) return t.unsqueeze(0);                              // (k) -> (1, k)
  if (t.dim() == 1) return t.unsqueeze(0).unsqueeze(2);           // (k) -> (1, k, 1)
  return t.unsqueeze(2);                                          // (m, k) -> (m, k, 1)
}

std::vector<Tensor> atleast_all(const char* op, const std::vector<Tensor>& ts, int64_t n) {
  BRISK_CHECK(!ts.empty(), op, "expects a non-empty TensorList");
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    BRISK_CHECK(ts[i].defined(), op, "tensor number ", i, " in the list is undefined");
    out.push_back(atleast(ts[i], n));
  }
  return out;
}

/// Wraps dims and rejects repeats ("[flip] dim 0 appears multiple times").
std::vector<int64_t> wrap_dims_unique(const char* op, IntArrayRef dims, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim, op);
    BRISK_CHECK(std::find(out.begin(), out.end(), w) == out.end(), op, "dim ", w,
                " appears multiple times in the list of dims ", dims);
    out.push_back(w);
  }
  return out;
}

/// The band kept by tril (lower) or triu of x: (..., m, n); keep[i, j] =
/// (j - i <= diagonal) for tril, (j - i >= diagonal) for triu; (m, n).
Tensor triangle_band(const char* op, const Tensor& x, int64_t diagonal, bool lower) {
  BRISK_CHECK(x.defined(), op, "input is an undefined tensor");
  BRISK_CHECK(x.dim() >= 2, op, "input tensor must have at least 2 dimensions, but got shape ", x.sizes());
  const int64_t m = x.size(-2), n = x.size(-1);
  Tensor offset = arange(n, TensorOptions(kInt64).device(x.device())).unsqueeze(0) -
                  arange(m, TensorOptions(kInt64).device(x.device())).unsqueeze(1);
  return lower ? offset.le(diagonal) : offset.ge(diagonal);
}
/// x with 0 outside the band kept by tril (lower) or triu; x: (..., m, n).
Tensor triangle(const char* op, const Tensor& x, int64_t diagonal, bool lower) {
  return where(triangle_band(op, x, diagonal, lower), x, zeros({}, x.options()));
}

}  // namespace

// ---- cat and stacking ------------------------------------------------------------

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  BRISK_AUTOCAST(cat, cat, tensors, dim);
  BRISK_PROFILE_OP("cat", tensors);
  CatPlan p = plan_cat("cat", tensors, dim);
  Tensor out = empty(p.shape, TensorOptions(p.dtype).device(tensors[0].device()));
  if (BRISK_LIKELY(!autograd::should_record(tensors))) {
    fill_cat(out, tensors, p);
    detail::mark_new_version(out);  // Note [Version counters]
    return out;
  }
  {
    NoGradGuard ng;
    fill_cat(out, tensors, p);
  }
  detail::mark_new_version(out);
  // Input i's gradient is its slice of the output's gradient (legacy empty
  // inputs, marked by length -1, get an empty one).
  DimVector lens;
  for (const Tensor& t : tensors) lens.push_back(is_legacy_empty(t) ? -1 : t.size(p.dim));
  autograd::record("CatBackward0", TensorList{out}, tensors, {},
                   [d = p.dim, lens](autograd::BackwardCtx& c) -> TensorList {
                     const Tensor& g = c.grad();
                     TensorList gs(lens.size());
                     int64_t offset = 0;
                     for (size_t i = 0; i < lens.size(); ++i) {
                       if (lens[i] < 0) {
                         if (c.needs(i)) gs[i] = zeros({0}, g.options());
                         continue;
                       }
                       if (c.needs(i)) gs[i] = g.narrow(d, offset, lens[i]);
                       offset += lens[i];
                     }
                     return gs;
                   });
  return out;
}

Tensor& cat_out(Tensor& out, const std::vector<Tensor>& tensors, int64_t dim) {
  BRISK_PROFILE_OP("cat_out", tensors);
  CatPlan p = plan_cat("cat_out", tensors, dim);
  BRISK_CHECK(out.defined(), "cat_out", "out is an undefined tensor");
  autograd::check_out("cat_out", tensors, out);
  BRISK_CHECK(can_cast(p.dtype, out.dtype()), "cat_out", "input types can't be cast to the desired output type ",
              out.dtype(), " (inputs promote to ", p.dtype, ")");
  BRISK_CHECK(out.device() == tensors[0].device(), "cat_out", "expected out on ", tensors[0].device(),
              ", but got ", out.device());
  for (size_t i = 0; i < tensors.size(); ++i)
    BRISK_CHECK(!memory_overlaps(out, tensors[i]), "cat_out",
                "unsupported operation: the input tensors cannot refer to any of the output memory locations "
                "(tensor number ", i, " does)");
  if (out.numel() == 0 && !(out.sizes() == IntArrayRef(p.shape))) detail::resize_(out, p.shape);
  BRISK_CHECK(out.sizes() == IntArrayRef(p.shape), "cat_out", "expected out to have shape ", IntArrayRef(p.shape),
              ", but got ", out.sizes());
  fill_cat(out, tensors, p);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  BRISK_AUTOCAST(stack, stack, tensors, dim);
  BRISK_PROFILE_OP("stack", tensors);
  BRISK_CHECK(!tensors.empty(), "stack", "expects a non-empty TensorList");
  for (size_t i = 0; i < tensors.size(); ++i) {
    BRISK_CHECK(tensors[i].defined(), "stack", "tensor number ", i, " in the list is undefined");
    BRISK_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack", "expects each tensor to be equal size, but got ",
                tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
  }
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  const bool rec = autograd::should_record(tensors);
  Tensor out;
  {
    NoGradGuard ng;
    std::vector<Tensor> parts;
    parts.reserve(tensors.size());
    for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
    out = cat(parts, d);
  }
  if (BRISK_UNLIKELY(rec))
    autograd::record("StackBackward0", TensorList{out}, tensors, {},
                     [d, n = tensors.size()](autograd::BackwardCtx& c) -> TensorList {
                       TensorList gs(n);
                       for (size_t i = 0; i < n; ++i)
                         if (c.needs(i)) gs[i] = c.grad().select(d, static_cast<int64_t>(i));
                       return gs;
                     });
  return out;
}

Tensor hstack(const std::vector<Tensor>& tensors) {
  BRISK_AUTOCAST(hstack, hstack, tensors);
  BRISK_PROFILE_OP("hstack", tensors);
  std::vector<Tensor> ts = atleast_all("hstack", tensors, 1);
  return cat(ts, ts[0].dim() == 1 ? 0 : 1);
}
Tensor vstack(const std::vector<Tensor>& tensors) {
  BRISK_AUTOCAST(vstack, vstack, tensors);
  BRISK_PROFILE_OP("vstack", tensors);
  return cat(atleast_all("vstack", tensors, 2), 0);
}
Tensor dstack(const std::vector<Tensor>& tensors) {
  BRISK_AUTOCAST(dstack, dstack, tensors);
  BRISK_PROFILE_OP("dstack", tensors);
  return cat(atleast_all("dstack", tensors, 3), 2);
}

// ---- repeat / tile -------------------------------------------------------------------

Tensor Tensor::repeat(IntArrayRef repeats) const {
  BRISK_PROFILE_OP("repeat", *this);
  const int64_t nd = static_cast<int64_t>(repeats.size());
  BRISK_CHECK(nd >= dim(), "repeat", "number of dimensions of repeat dims (", nd,
              ") can not be smaller than number of dimensions of tensor (", dim(), ")");
  for (int64_t r : repeats)
    BRISK_CHECK(r >= 0, "repeat", "trying to create tensor with negative dimension ", r, ": repeats ", repeats);
  const int64_t lead = nd - dim();
  // out (r0*s0, r1*s1, ...) seen as (r0, s0, r1, s1, ...) receives x seen as
  // (r0, s0, ...) with stride 0 on each r. Dims with r = 1 or s = 1 need no split.
  DimVector out_sizes, split_sizes, src_sizes, src_strides, repeat_dims;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t s = i < lead ? 1 : size(i - lead), st = i < lead ? 0 : stride(i - lead), r = repeats[i];
    out_sizes.push_back(r * s);
    if (r != 1) {
      repeat_dims.push_back(static_cast<int64_t>(split_sizes.size()));
      split_sizes.push_back(r);
      src_sizes.push_back(r);
      src_strides.push_back(0);
    }
    if (s != 1 || r == 1) {
      split_sizes.push_back(s);
      src_sizes.push_back(s);
      src_strides.push_back(st);
    }
  }
  Tensor out = empty(out_sizes, options());
  if (out.numel() > 0) {
    NoGradGuard ng;
    Tensor src = detail::make_view(*this, src_sizes, src_strides, storage_offset());
    out.view(split_sizes).copy_(src);
  }
  detail::mark_new_version(out);
  if (BRISK_UNLIKELY(autograd::should_record(*this))) {
    // The output seen as (r0, s0, r1, s1, ...): sum over the r dims.
    autograd::record("RepeatBackward0", {out}, {*this}, {},
                     [split_sizes, repeat_dims, in = autograd::to_dims(sizes())](autograd::BackwardCtx& c)
                         -> TensorList {
                       Tensor g = c.grad().reshape(split_sizes);
                       if (!repeat_dims.empty()) g = g.sum(IntArrayRef(repeat_dims));
                       return {g.reshape(in)};
                     });
  }
  return out;
}

Tensor Tensor::tile(IntArrayRef reps) const {
  BRISK_PROFILE_OP("tile", *this);
  if (static_cast<int64_t>(reps.size()) >= dim()) return repeat(reps);
  DimVector full(static_cast<size_t>(dim() - static_cast<int64_t>(reps.size())), 1);
  for (int64_t r : reps) full.push_back(r);
  return repeat(full);
}

// ---- flip / roll -------------------------------------------------------------------

Tensor flip(const Tensor& x, IntArrayRef dims) {
  BRISK_PROFILE_OP("flip", x);
  BRISK_CHECK(x.defined(), "flip", "input is an undefined tensor");
  std::vector<int64_t> ds = wrap_dims_unique("flip", dims, std::max<int64_t>(x.dim(), 1));
  Tensor out = empty(x.sizes(), x.options());
  if (x.numel() == 0) {
    if (BRISK_UNLIKELY(autograd::should_record(x)))
      autograd::record("FlipBackward0", {out}, {x}, {},
                       [](autograd::BackwardCtx& c) -> TensorList { return {c.grad()}; });
    return out;
  }
  // A view walking the flipped dims backwards (negative strides), copied once.
  DimVector strides(x.strides().begin(), x.strides().end());
  int64_t offset = x.storage_offset();
  for (int64_t d : ds) {
    if (x.dim() == 0) break;
    offset += (x.size(d) - 1) * x.stride(d);
    strides[d] = -x.stride(d);
  }
  {
    NoGradGuard ng;
    out.copy_(detail::make_view(x, x.sizes(), strides, offset));
  }
  detail::mark_new_version(out);  // Note [Version counters]
  if (BRISK_UNLIKELY(autograd::should_record(x)))
    autograd::record("FlipBackward0", {out}, {x}, {},
                     [ds = autograd::to_dims(IntArrayRef(ds))](autograd::BackwardCtx& c) -> TensorList {
                       return {c.grad().flip(ds)};
                     });
  return out;
}
Tensor Tensor::flip(IntArrayRef dims) const { return brisk::flip(*this, dims); }

namespace {
Tensor roll_impl(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) {
  BRISK_CHECK(x.defined(), "roll", "input is an undefined tensor");
  BRISK_CHECK(!shifts.empty(), "roll", "`shifts` required");
  if (dims.empty()) {
    // Roll the flattened tensor, then restore the shape.
    BRISK_CHECK(shifts.size() == 1, "roll", "shifts and dimensions must align. shifts: ", shifts.size(),
                ", dims: 0 (without dims, shifts must be a single value)");
    return roll_impl(x.flatten(), shifts, {0}).view(x.sizes());
  }
  BRISK_CHECK(shifts.size() == dims.size(), "roll", "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims: ", dims.size());
  // Rolling one dim twice adds the shifts; normalise each to [0, size).
  std::vector<int64_t> rd, rs;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = detail::wrap_dim_nonscalar(dims[i], x.dim(), "roll");
    auto it = std::find(rd.begin(), rd.end(), d);
    if (it == rd.end()) {
      rd.push_back(d);
      rs.push_back(shifts[i]);
    } else {
      rs[static_cast<size_t>(it - rd.begin())] += shifts[i];
    }
  }
  Tensor out = empty(x.sizes(), x.options());
  if (x.numel() == 0) return out;
  std::vector<int64_t> dd, ss;
  for (size_t i = 0; i < rd.size(); ++i) {
    const int64_t n = x.size(rd[i]), s = ((rs[i] % n) + n) % n;
    if (s != 0) dd.push_back(rd[i]), ss.push_back(s);
  }
  // Each rolled dim splits into two blocks: out[s:] = x[:n-s], out[:s] = x[n-s:].
  // 2^k block copies for k rolled dims, with no temporaries.
  const size_t k = dd.size();
  for (size_t mask = 0; mask < (size_t(1) << k); ++mask) {
    Tensor dst = out, src = x;
    bool empty_block = false;
    for (size_t i = 0; i < k; ++i) {
      const int64_t n = x.size(dd[i]), s = ss[i];
      if (mask & (size_t(1) << i)) {
        dst = dst.narrow(dd[i], 0, s);
        src = src.narrow(dd[i], n - s, s);
      } else {
        dst = dst.narrow(dd[i], s, n - s);
        src = src.narrow(dd[i], 0, n - s);
      }
      empty_block = empty_block || dst.numel() == 0;
    }
    if (!empty_block) dst.copy_(src);
  }
  return detail::mark_new_version(std::move(out));
}
}  // namespace

Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) {
  BRISK_PROFILE_OP("roll", x);
  if (BRISK_LIKELY(!autograd::should_record(x))) return roll_impl(x, shifts, dims);
  Tensor out;
  {
    NoGradGuard ng;
    out = roll_impl(x, shifts, dims);
  }
  // Rolling back by the opposite shifts.
  DimVector back;
  for (int64_t s : shifts) back.push_back(-s);
  autograd::record("RollBackward0", {out}, {x}, {},
                   [back, ds = autograd::to_dims(dims)](autograd::BackwardCtx& c) -> TensorList {
                     return {c.grad().roll(back, ds)};
                   });
  return out;
}
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const { return brisk::roll(*this, shifts, dims); }

// ---- tril / triu -------------------------------------------------------------------

namespace {
// The backward of tril/triu is the same band of the gradient.
template <bool Lower>
TensorList triangle_backward(int64_t diagonal, autograd::BackwardCtx& c) {
  return {Lower ? c.grad().tril(diagonal) : c.grad().triu(diagonal)};
}
template <bool Lower>
Tensor triangle_op(const char* op, const char* node, const Tensor& x, int64_t diagonal) {
  BRISK_PROFILE_OP(op, x);
  if (BRISK_LIKELY(!autograd::should_record(x))) return triangle(op, x, diagonal, Lower);
  Tensor r;
  {
    NoGradGuard ng;
    r = triangle(op, x, diagonal, Lower);
  }
  autograd::record(node, {r}, {x}, {},
                   [diagonal](autograd::BackwardCtx& c) { return triangle_backward<Lower>(diagonal, c); });
  return r;
}
template <bool Lower>
Tensor& triangle_inplace(const char* op, const char* node, Tensor& self, int64_t diagonal) {
  BRISK_PROFILE_OP(op, self);
  Tensor band = triangle_band(op, self, diagonal, Lower);
  if (has_internal_overlap(self) && self.dim() > 3) {
    // torch updates in place tensors of up to 3 dims, and bigger ones whose
    // batch dims are laid out as for contiguous matrices (dim 0 may be
    // expanded); others are computed apart and copied back, which refuses
    // overlapping memory.
    int64_t expected = self.size(-1) * self.size(-2);
    bool batch_dense = true;
    for (int64_t i = self.dim() - 3; i >= 0 && batch_dense; --i) {
      if (i == 0 && (self.stride(0) == 0 || self.size(0) == 1)) continue;
      batch_dense = self.stride(i) == expected;
      expected *= self.size(i);
    }
    if (!batch_dense) check_no_internal_overlap(op, self);
  }
  autograd::check_inplace(self, op);
  const bool rec = autograd::should_record(self);
  {
    // Zeros written outside the band, the band left alone: on an expanded
    // self (PyTorch allows it) a location is zeroed when any element
    // aliasing it is outside the band.
    NoGradGuard ng;
    self.masked_fill_(band.logical_not(), 0);
  }
  if (BRISK_UNLIKELY(rec))
    autograd::record_inplace(node, self, {self}, {},
                             [diagonal](autograd::BackwardCtx& c) { return triangle_backward<Lower>(diagonal, c); });
  return self;
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle_op<true>("tril", "TrilBackward0", x, diagonal); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle_op<false>("triu", "TriuBackward0", x, diagonal); }
Tensor Tensor::tril(int64_t diagonal) const { return brisk::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return brisk::triu(*this, diagonal); }
Tensor& Tensor::tril_(int64_t diagonal) const { return triangle_inplace<true>("tril_", "TrilBackward0", const_cast<Tensor&>(*this), diagonal); }
Tensor& Tensor::triu_(int64_t diagonal) const { return triangle_inplace<false>("triu_", "TriuBackward0", const_cast<Tensor&>(*this), diagonal); }

// ---- pad -------------------------------------------------------------------------------

namespace {
Tensor pad_impl(const Tensor& x, IntArrayRef pad, const Scalar& value) {
  BRISK_CHECK(x.defined(), "pad", "input is an undefined tensor");
  // The value is converted (checked) only when something is padded (torch):
  // negative pads alone crop.
  const bool grows = std::any_of(pad.begin(), pad.end(), [](int64_t p) { return p > 0; });
  if (grows) detail::check_scalar_fits("pad", value, x.dtype());
  BRISK_CHECK(pad.size() % 2 == 0, "pad", "padding length must be divisible by 2, got ", pad.size(), " values ",
              pad);
  const int64_t np = static_cast<int64_t>(pad.size()) / 2;
  BRISK_CHECK(np <= x.dim(), "pad", "padding length too large: ", pad, " pads ", np,
              " dimensions but the input has shape ", x.sizes());
  // pad = (left of dim -1, right of dim -1, left of dim -2, ...)
  DimVector out_sizes(x.sizes().begin(), x.sizes().end());
  for (int64_t i = 0; i < np; ++i) {
    const int64_t d = x.dim() - 1 - i, l = pad[2 * i], r = pad[2 * i + 1];
    out_sizes[d] = x.size(d) + l + r;
    BRISK_CHECK(out_sizes[d] >= 0, "pad", "the input size ", x.size(d), " of dimension ", d,
                ", plus negative padding ", l, " and ", r, ", gives a negative output size ", out_sizes[d]);
    // torch crops by the negative pads first: that part must exist too.
    BRISK_CHECK(x.size(d) + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0) >= 0, "pad", "the negative padding ",
                l, " and ", r, " of dimension ", d, " crops more than its size ", x.size(d));
  }
  Tensor out = grows ? full(out_sizes, value, x.options()) : empty(out_sizes, x.options());
  // The part of x that survives (negative pads crop) goes to its place in out.
  Tensor src = x, dst = out;
  for (int64_t i = 0; i < np; ++i) {
    const int64_t d = x.dim() - 1 - i, l = pad[2 * i], r = pad[2 * i + 1];
    const int64_t s0 = std::max<int64_t>(0, -l), d0 = std::max<int64_t>(0, l);
    const int64_t len = x.size(d) - s0 - std::max<int64_t>(0, -r);
    if (len <= 0) return detail::mark_new_version(std::move(out));
    src = src.narrow(d, s0, len);
    dst = dst.narrow(d, d0, len);
  }
  if (dst.numel() > 0) dst.copy_(src);
  return detail::mark_new_version(std::move(out));
}
}  // namespace

Tensor pad(const Tensor& x, IntArrayRef pad, const Scalar& value) {
  BRISK_PROFILE_OP("pad", x, value);
  if (BRISK_LIKELY(!autograd::should_record(x))) return pad_impl(x, pad, value);
  Tensor out;
  {
    NoGradGuard ng;
    out = pad_impl(x, pad, value);
  }
  // The adjoint of padding by p is padding (cropping) by -p with zeros.
  DimVector back;
  for (int64_t p : pad) back.push_back(-p);
  autograd::record("ConstantPadNdBackward0", {out}, {x}, {},
                   [back](autograd::BackwardCtx& c) -> TensorList { return {brisk::pad(c.grad(), back, 0)}; });
  return out;
}

// ---- meshgrid --------------------------------------------------------------------------

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing) {
  BRISK_PROFILE_OP("meshgrid", tensors);
  BRISK_CHECK(!tensors.empty(), "meshgrid", "expects a non-empty TensorList");
  BRISK_CHECK(indexing == "ij" || indexing == "xy", "meshgrid", "indexing must be one of \"xy\" or \"ij\", but got: ",
              std::string(indexing));
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    BRISK_CHECK(t.defined(), "meshgrid", "tensor number ", i, " in the list is undefined");
    BRISK_CHECK(t.dim() <= 1, "meshgrid", "expected 0D or 1D tensor in the tensor list but got shape ", t.sizes(),
                " at position ", i);
    BRISK_CHECK(t.dtype() == tensors[0].dtype(), "meshgrid", "expects all tensors to have the same dtype, but got ",
                tensors[0].dtype(), " at position 0 and ", t.dtype(), " at position ", i);
    BRISK_CHECK(t.device() == tensors[0].device(), "meshgrid",
                "expects all tensors to have the same device, but got ", tensors[0].device(), " and ", t.device());
  }
  // "xy" is "ij" with the first two inputs swapped (so the grid shape starts
  // (len(y), len(x), ...)) and the first two outputs swapped back.
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  std::vector<Tensor> ts = tensors;
  if (swap) std::swap(ts[0], ts[1]);
  DimVector shape;
  for (const Tensor& t : ts) shape.push_back(t.numel());
  std::vector<Tensor> out;
  for (size_t i = 0; i < ts.size(); ++i) {
    DimVector view_shape(ts.size(), 1);
    view_shape[i] = ts[i].numel();
    Tensor g = ts[i].reshape(view_shape).expand(shape);  // a view, as in PyTorch
    out.push_back(g);
  }
  if (swap) std::swap(out[0], out[1]);
  return out;
}

}  // namespace brisk
