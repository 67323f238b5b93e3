// View ops: metadata changes over shared storage, never a copy.
//
// Autograd: every view op records its node (when an input requires grad)
// and marks its output as a view of its input (autograd::mark_view), so an
// in-place op on the view later rewrites the base's history (CopySlices).
// Views that pick a strided window of their input (select, narrow, slice,
// diagonal, unfold, as_strided) share one backward, strided_transfer: the
// gradient scattered into zeros of the input's shape through the window's
// geometry taken relative to a contiguous tensor of that shape.
#include <algorithm>
#include <numeric>

#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/tensor_create.h"
#include "ops/strided.h"
#include "profiler/record.h"

namespace brisk {

using detail::make_view;
using detail::wrap_dim;

namespace detail {
// ---- strided geometry ---------------------------------------------------------
Geom geom_of(const Tensor& t) {
  return {DimVector(t.sizes().begin(), t.sizes().end()), DimVector(t.strides().begin(), t.strides().end()),
          t.storage_offset()};
}
/// A contiguous tensor of `sizes` at offset 0: the frame in which a view's
/// geometry is expressed for its backward.
Geom contiguous_geom(IntArrayRef sizes) {
  return {DimVector(sizes.begin(), sizes.end()), detail::contiguous_strides(sizes), 0};
}
int64_t geom_numel(const Geom& g) {
  int64_t n = 1;
  for (size_t i = 0; i < g.sizes.size(); ++i) n *= g.sizes[i];
  return n;
}
/// Offset of the last element past g.offset (g non-empty, strides >= 0).
int64_t geom_extent(const Geom& g) {
  int64_t e = 0;
  for (size_t i = 0; i < g.sizes.size(); ++i) e += (g.sizes[i] - 1) * g.strides[i];
  return e;
}
/// True when no two elements of g share a memory location (sufficient test:
/// each stride, in increasing order, clears the span of the smaller ones).
bool geom_non_overlapping(const Geom& g) {
  std::vector<std::pair<int64_t, int64_t>> d;  // (stride, size) of the dims with size > 1
  for (size_t i = 0; i < g.sizes.size(); ++i) {
    if (g.sizes[i] == 0) return true;  // no elements (PyTorch makes 0 strides outside a dim of size 0)
    if (g.sizes[i] > 1) d.push_back({g.strides[i], g.sizes[i]});
  }
  std::sort(d.begin(), d.end());
  int64_t span = 0;
  for (auto [st, sz] : d) {
    if (st <= span) return false;
    span += (sz - 1) * st;
  }
  return true;
}

// strided_transfer: see src/ops/strided.h.
Tensor strided_transfer(const char* name, const Tensor& g, const Geom& src, const Geom& dst) {
  Tensor r;
  {
    NoGradGuard ng;
    if (geom_numel(dst) == 0 || geom_numel(src) == 0) {
      r = zeros(dst.sizes, g.options());
    } else {
      const int64_t lo = std::min(src.offset, dst.offset);
      const int64_t hi = std::max(src.offset + geom_extent(src), dst.offset + geom_extent(dst));
      Tensor buf = zeros({hi - lo + 1}, g.options());
      if (geom_non_overlapping(src)) {
        buf.as_strided(src.sizes, src.strides, src.offset - lo).copy_(g);
      } else {
        Tensor idx = arange(hi - lo + 1, TensorOptions(kLong).device(g.device()))
                         .as_strided(src.sizes, src.strides, src.offset - lo)
                         .reshape({-1});
        buf.index_add_(0, idx, g.reshape({-1}));
      }
      r = buf.as_strided(dst.sizes, dst.strides, dst.offset - lo);
    }
  }
  if (BRISK_UNLIKELY(autograd::should_record(g)))
    autograd::record(name, {r}, {g}, {}, [name, src, dst](autograd::BackwardCtx& c) -> TensorList {
      return {strided_transfer(name, c.grad(), dst, src)};
    });
  return r;
}

}  // namespace detail

using detail::contiguous_geom;
using detail::Geom;
using detail::geom_extent;
using detail::geom_numel;
using detail::geom_non_overlapping;
using detail::geom_of;
using detail::strided_transfer;

namespace {

// Geometry of each windowing view (arguments already checked and wrapped).
Geom geom_narrow(Geom g, int64_t d, int64_t start, int64_t length) {
  g.offset += start * g.strides[d];
  g.sizes[d] = length;
  return g;
}
Geom geom_select(Geom g, int64_t d, int64_t index) {
  g.offset += index * g.strides[d];
  g.sizes.erase(d);
  g.strides.erase(d);
  return g;
}
Geom geom_slice(Geom g, int64_t d, int64_t start, int64_t length, int64_t step) {
  g.offset += start * g.strides[d];
  g.sizes[d] = length;
  g.strides[d] *= step;
  return g;
}
Geom geom_diagonal(const Geom& in, int64_t offset, int64_t d1, int64_t d2) {
  Geom g;
  int64_t len;
  g.offset = in.offset;
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(in.sizes[d1], in.sizes[d2] - offset), 0);
    g.offset += offset * in.strides[d2];
  } else {
    len = std::max<int64_t>(std::min(in.sizes[d1] + offset, in.sizes[d2]), 0);
    g.offset -= offset * in.strides[d1];
  }
  if (len == 0) g.offset = in.offset;
  for (size_t d = 0; d < in.sizes.size(); ++d)
    if (static_cast<int64_t>(d) != d1 && static_cast<int64_t>(d) != d2) {
      g.sizes.push_back(in.sizes[d]);
      g.strides.push_back(in.strides[d]);
    }
  g.sizes.push_back(len);
  g.strides.push_back(in.strides[d1] + in.strides[d2]);
  return g;
}
Geom geom_unfold(Geom g, int64_t d, int64_t size, int64_t step) {
  if (g.sizes.empty()) {
    g.sizes.push_back(size);
    g.strides.push_back(1);
    return g;
  }
  const int64_t s = g.strides[d];
  g.sizes[d] = (g.sizes[d] - size) / step + 1;
  g.strides[d] = s * step;
  g.sizes.push_back(size);
  g.strides.push_back(s);
  return g;
}
Tensor view_with(const Tensor& x, const Geom& g) { return make_view(x, g.sizes, g.strides, g.offset); }

/// Records view op `name` producing r from x, and marks r as a view of x.
template <class F>
inline void record_view(const char* name, const Tensor& r, const Tensor& x, F&& fn) {
  autograd::record(name, {r}, {x}, {}, std::forward<F>(fn));
  autograd::mark_view(r, x);
}
/// Records a view that is a strided window of x whose geometry in a
/// contiguous frame of x's shape is `window`.
inline void record_window(const char* name, const char* backward_name, const Tensor& r, const Tensor& x,
                          Geom window) {
  record_view(name, r, x,
              [backward_name, window = std::move(window),
               in = contiguous_geom(x.sizes())](autograd::BackwardCtx& c) -> TensorList {
                return {strided_transfer(backward_name, c.grad(), window, in)};
              });
}

/// Replaces a -1 in shape by what makes numel match; checks the total.
DimVector infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  DimVector out(shape.begin(), shape.end());
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      BRISK_CHECK(infer < 0, op, "only one dimension can be inferred in shape ", shape);
      infer = static_cast<int64_t>(i);
    } else {
      BRISK_CHECK(out[i] >= 0, op, "invalid shape dimension ", out[i], " in ", shape);
      known *= out[i];
    }
  }
  if (infer >= 0) {
    BRISK_CHECK(known != 0 && numel % known == 0, op, "shape ", shape, " is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    BRISK_CHECK(known == numel, op, "shape ", shape, " is invalid for input of size ", numel);
  }
  return out;
}

/// Strides that view `sizes`/`strides` as `shape` without copying, if any.
bool view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef shape, DimVector& out) {
  out = DimVector(shape.size());
  // Empty tensors, and 0-dim tensors (whose new shape is all ones), take
  // any contiguous strides.
  if (multiply(sizes) == 0 || sizes.empty()) {
    out = detail::contiguous_strides(shape);
    return true;
  }
  // Walk old dims from the innermost, grouping dims that are contiguous with
  // each other into chunks; each chunk must map onto whole new dims.
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = strides.size() ? strides.back() : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}
}  // namespace

using autograd::BackwardCtx;
using autograd::to_dims;

Tensor Tensor::view(IntArrayRef shape) const {
  BRISK_PROFILE_OP("view", *this);
  DimVector sz = infer_size(shape, numel(), "view");
  DimVector st;
  BRISK_CHECK(view_strides(sizes(), strides(), sz, st), "view",
              "view size is not compatible with input tensor's size and stride (shape ", sizes(), ", strides ",
              strides(), " -> ", IntArrayRef(sz),
              "): at least one dimension spans across two contiguous subspaces. Use .reshape(...) instead.");
  Tensor r = make_view(*this, sz, st, storage_offset());
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_view("ViewBackward0", r, *this,
                [in = to_dims(sizes())](BackwardCtx& c) -> TensorList { return {c.grad().reshape(in)}; });
  return r;
}

Tensor Tensor::reshape(IntArrayRef shape) const {
  BRISK_PROFILE_OP("reshape", *this);
  DimVector sz = infer_size(shape, numel(), "reshape");
  DimVector st;
  if (view_strides(sizes(), strides(), sz, st)) {
    Tensor r = make_view(*this, sz, st, storage_offset());
    if (BRISK_UNLIKELY(autograd::should_record(*this)))
      record_view("ViewBackward0", r, *this,
                  [in = to_dims(sizes())](BackwardCtx& c) -> TensorList { return {c.grad().reshape(in)}; });
    return r;
  }
  // A copy, not a view of *this (PyTorch's _unsafe_view of a clone): the
  // result owns its fresh storage and is not tracked as a view.
  Tensor r;
  {
    NoGradGuard ng;
    r = contiguous().view(sz);
  }
  r.impl()->view_base.reset();
  if (BRISK_LIKELY(!autograd::should_record(*this))) return r;
  autograd::record("UnsafeViewBackward0", {r}, {*this}, {},
                   [in = to_dims(sizes())](BackwardCtx& c) -> TensorList { return {c.grad().reshape(in)}; });
  return r;
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  BRISK_PROFILE_OP("flatten", *this);
  // (a 0-dim tensor checks its dims too, against [-1, 0], as torch 2.x)
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  if (dim() == 0) return reshape({1});
  BRISK_CHECK(start <= end, "flatten", "start_dim ", start, " cannot come after end_dim ", end);
  if (start == end) return *this;
  DimVector sz;
  for (int64_t d = 0; d < start; ++d) sz.push_back(size(d));
  int64_t p = 1;
  for (int64_t d = start; d <= end; ++d) p *= size(d);
  sz.push_back(p);
  for (int64_t d = end + 1; d < dim(); ++d) sz.push_back(size(d));
  return reshape(sz);
}

Tensor Tensor::unflatten(int64_t d, IntArrayRef parts) const {
  BRISK_PROFILE_OP("unflatten", *this);
  d = detail::wrap_dim_nonscalar(d, dim(), "unflatten");
  BRISK_CHECK(!parts.empty(), "unflatten", "sizes must be non-empty");
  DimVector inner = infer_size(parts, size(d), "unflatten");
  DimVector sz;
  for (int64_t i = 0; i < d; ++i) sz.push_back(size(i));
  for (int64_t v : inner) sz.push_back(v);
  for (int64_t i = d + 1; i < dim(); ++i) sz.push_back(size(i));
  return view(sz);
}

Tensor Tensor::squeeze() const {
  BRISK_PROFILE_OP("squeeze", *this);
  DimVector sz, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (size(d) != 1) {
      sz.push_back(size(d));
      st.push_back(stride(d));
    }
  Tensor r = make_view(*this, sz, st, storage_offset());
  if (BRISK_UNLIKELY(autograd::should_record(*this))) {
    DimVector ones;  // the dims squeezed away, ascending
    for (int64_t d = 0; d < dim(); ++d)
      if (size(d) == 1) ones.push_back(d);
    record_view("SqueezeBackward0", r, *this, [ones](BackwardCtx& c) -> TensorList {
      Tensor g = c.grad();
      for (size_t i = 0; i < ones.size(); ++i) g = g.unsqueeze(ones[i]);
      return {g};
    });
  }
  return r;
}

Tensor Tensor::squeeze(int64_t d) const {
  BRISK_PROFILE_OP("squeeze", *this);
  Tensor r;
  bool squeezed = false;
  // A 0-dim tensor accepts dims -1 and 0, as in PyTorch (squeeze(5) raises).
  d = wrap_dim(d, dim(), "squeeze");
  if (dim() == 0) {
    r = make_view(*this, sizes(), strides(), storage_offset());
  } else {
    if (size(d) != 1) {
      r = make_view(*this, sizes(), strides(), storage_offset());
    } else {
      DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
      sz.erase(d);
      st.erase(d);
      r = make_view(*this, sz, st, storage_offset());
      squeezed = true;
    }
  }
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_view("SqueezeBackward1", r, *this, [d, squeezed](BackwardCtx& c) -> TensorList {
      return {squeezed ? c.grad().unsqueeze(d) : c.grad()};
    });
  return r;
}

Tensor Tensor::unsqueeze(int64_t d) const {
  BRISK_PROFILE_OP("unsqueeze", *this);
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
  const int64_t s = d < dim() ? stride(d) * size(d) : 1;
  sz.insert(d, 1);
  st.insert(d, s);
  Tensor r = make_view(*this, sz, st, storage_offset());
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_view("UnsqueezeBackward0", r, *this,
                [d](BackwardCtx& c) -> TensorList { return {c.grad().squeeze(d)}; });
  return r;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  BRISK_PROFILE_OP("transpose", *this);
  Tensor r;
  if (dim() == 0) {
    r = make_view(*this, sizes(), strides(), storage_offset());
  } else {
    d0 = wrap_dim(d0, dim(), "transpose");
    d1 = wrap_dim(d1, dim(), "transpose");
    DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
    std::swap(sz[d0], sz[d1]);
    std::swap(st[d0], st[d1]);
    r = make_view(*this, sz, st, storage_offset());
  }
  if (BRISK_UNLIKELY(autograd::should_record(*this))) {
    const bool scalar = dim() == 0;
    record_view("TransposeBackward0", r, *this, [d0, d1, scalar](BackwardCtx& c) -> TensorList {
      return {scalar ? c.grad() : c.grad().transpose(d0, d1)};
    });
  }
  return r;
}

Tensor Tensor::permute(IntArrayRef dims) const {
  BRISK_PROFILE_OP("permute", *this);
  BRISK_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute", "number of dims don't match: tensor has ",
              dim(), " dims but ", dims.size(), " were given (", dims, ")");
  DimVector sz(dim()), st(dim());
  std::vector<bool> seen(dim(), false);
  for (int64_t i = 0; i < dim(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    BRISK_CHECK(!seen[d], "permute", "repeated dim ", d, " in ", dims);
    seen[d] = true;
    sz[i] = size(d);
    st[i] = stride(d);
  }
  Tensor r = make_view(*this, sz, st, storage_offset());
  if (BRISK_UNLIKELY(autograd::should_record(*this))) {
    DimVector inv(dim());  // out dim i is input dim dims[i]: the inverse permutation undoes it
    for (int64_t i = 0; i < dim(); ++i) inv[wrap_dim(dims[i], dim(), "permute")] = i;
    record_view("PermuteBackward0", r, *this,
                [inv](BackwardCtx& c) -> TensorList { return {c.grad().permute(inv)}; });
  }
  return r;
}

Tensor Tensor::movedim(int64_t src, int64_t dst) const {
  BRISK_PROFILE_OP("movedim", *this);
  src = wrap_dim(src, dim(), "movedim");
  dst = wrap_dim(dst, dim(), "movedim");
  if (dim() == 0) return permute({});  // dims 0 and -1 name the 0-dim tensor itself (PyTorch)
  std::vector<int64_t> order;
  for (int64_t d = 0; d < dim(); ++d)
    if (d != src) order.push_back(d);
  order.insert(order.begin() + dst, src);
  return permute(order);
}

Tensor Tensor::t() const {
  BRISK_PROFILE_OP("t", *this);
  BRISK_CHECK(dim() <= 2, "t", "expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  Tensor r;
  if (dim() < 2) {
    r = make_view(*this, sizes(), strides(), storage_offset());
  } else {
    const DimVector& s0 = impl_->sizes;
    const DimVector& t0 = impl_->strides;
    const int64_t sz[2] = {s0[1], s0[0]}, st[2] = {t0[1], t0[0]};
    r = make_view(*this, IntArrayRef(sz, 2), IntArrayRef(st, 2), storage_offset());
  }
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_view("TBackward0", r, *this, [](BackwardCtx& c) -> TensorList { return {c.grad().t()}; });
  return r;
}

Tensor Tensor::mT() const {
  BRISK_PROFILE_OP("mT", *this);
  BRISK_CHECK(dim() >= 2, "mT", "tensor.mT is only supported on matrices or batches of matrices. Got ", dim(),
              "-D tensor.");
  return transpose(-2, -1);
}

Tensor Tensor::expand(IntArrayRef shape) const {
  BRISK_PROFILE_OP("expand", *this);
  BRISK_CHECK(static_cast<int64_t>(shape.size()) >= dim(), "expand", "the number of sizes provided (",
              shape.size(), ") must be greater or equal to the number of dimensions in the tensor (", dim(), ")");
  const int64_t nd = static_cast<int64_t>(shape.size()), off = nd - dim();
  DimVector sz(nd), st(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t d = i - off;
    int64_t want = shape[i];
    if (d < 0) {
      BRISK_CHECK(want >= 0, "expand", "the expanded size of the tensor (", want,
                  ") isn't allowed in a leading, non-existing dimension ", i);
      sz[i] = want;
      st[i] = 0;
      continue;
    }
    if (want == -1) want = size(d);
    if (size(d) == want) {
      sz[i] = want;
      st[i] = stride(d);
    } else {
      BRISK_CHECK(size(d) == 1, "expand", "the expanded size of the tensor (", want,
                  ") must match the existing size (", size(d), ") at non-singleton dimension ", i,
                  ".  Target sizes: ", shape, ".  Tensor sizes: ", sizes());
      sz[i] = want;
      st[i] = 0;
    }
  }
  Tensor r = make_view(*this, sz, st, storage_offset());
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_view("ExpandBackward0", r, *this, [in = to_dims(sizes())](BackwardCtx& c) -> TensorList {
      return {autograd::sum_to(c.grad(), in)};
    });
  return r;
}

Tensor broadcast_to(const Tensor& x, IntArrayRef sizes) { return x.expand(sizes); }

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& ts) {
  BRISK_PROFILE_OP("broadcast_tensors", ts);
  DimVector shape;
  for (auto& t : ts) shape = broadcast_shapes(shape, t.sizes(), "broadcast_tensors");
  std::vector<Tensor> out;
  for (auto& t : ts) out.push_back(t.expand(shape));
  return out;
}

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    BRISK_CHECK(da == db || da == 1 || db == 1, op, "shapes ", a, " and ", b, " cannot be broadcast (size ", da,
                " vs ", db, " at dim ", i, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Backward: the gradient is added at the storage locations the view reads
// (accumulating where the view overlaps itself), then read back at the
// input's locations. This is exact when the input's own elements do not
// overlap in memory; for an input that overlaps itself (e.g. an expanded
// tensor) each aliased element gets the whole gradient of its location,
// where PyTorch divides it among the aliases.
Tensor Tensor::as_strided(IntArrayRef sz, IntArrayRef st, std::optional<int64_t> offset) const {
  BRISK_PROFILE_OP("as_strided", *this);
  BRISK_CHECK(sz.size() == st.size(), "as_strided", "mismatch in length of strides and shape (", sz, " vs ", st,
              ")");
  const int64_t off = offset ? *offset : storage_offset();
  BRISK_CHECK(off >= 0, "as_strided", "negative storage offset ", off);
  int64_t extent = 0;
  bool empty = false;
  for (size_t i = 0; i < sz.size(); ++i) {
    BRISK_CHECK(sz[i] >= 0 && st[i] >= 0, "as_strided", "negative size or stride in ", sz, " / ", st);
    if (sz[i] == 0) empty = true;
    extent += (sz[i] - 1) * st[i];
  }
  if (!empty) {
    const int64_t need = (off + extent + 1) * static_cast<int64_t>(element_size());
    BRISK_CHECK(need <= static_cast<int64_t>(impl()->storage->nbytes), "as_strided", "setStorage: sizes ", sz,
                ", strides ", st, ", storage offset ", off, " and itemsize ", element_size(),
                " require a storage of size ", need, " but the storage has ", impl()->storage->nbytes, " bytes");
  }
  Tensor r = make_view(*this, sz, st, off);
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_view("AsStridedBackward0", r, *this,
                [in = geom_of(*this), out = geom_of(r)](BackwardCtx& c) -> TensorList {
                  return {strided_transfer("AsStridedBackwardBackward0", c.grad(), out, in)};
                });
  return r;
}

namespace {
/// narrow without checks or recording (d wrapped, range checked).
inline Tensor narrow_nr(const Tensor& x, int64_t d, int64_t start, int64_t length) {
  DimVector sz(x.sizes().begin(), x.sizes().end());
  sz[d] = length;
  return make_view(x, sz, x.strides(), x.storage_offset() + start * x.stride(d));
}
/// select without checks or recording (d wrapped, index in [0, size)).
inline Tensor select_nr(const Tensor& x, int64_t d, int64_t index) {
  const TensorImpl* xi = x.impl();
  DimVector sz, st;  // x's dims without d
  for (size_t i = 0; i < xi->sizes.size(); ++i) {
    if (static_cast<int64_t>(i) == d) continue;
    sz.push_back(xi->sizes[i]);
    st.push_back(xi->strides[i]);
  }
  return make_view(x, sz, st, xi->storage_offset + index * xi->strides[d]);
}
}  // namespace

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  BRISK_PROFILE_OP("narrow", *this);
  BRISK_CHECK(dim() > 0, "narrow", "cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = size(d);
  if (start < 0) start += n;
  BRISK_CHECK(start >= 0 && start <= n, "narrow", "start (", start, ") out of range for dimension ", d,
              " of size ", n);
  BRISK_CHECK(length >= 0 && start + length <= n, "narrow", "start (", start, ") + length (", length,
              ") exceeds dimension size (", n, ")");
  Tensor r = narrow_nr(*this, d, start, length);
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_window("SliceBackward0", "SliceBackwardBackward0", r, *this,
                  geom_narrow(contiguous_geom(sizes()), d, start, length));
  return r;
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  BRISK_PROFILE_OP("select", *this);
  BRISK_CHECK(dim() > 0, "select", "cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = impl_->sizes[d];
  BRISK_CHECK(index >= -n && index < n, "select", "index ", index, " is out of bounds for dimension ", d,
              " with size ", n);
  if (index < 0) index += n;
  Tensor r = select_nr(*this, d, index);
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_window("SelectBackward0", "SelectBackwardBackward0", r, *this,
                  geom_select(contiguous_geom(sizes()), d, index));
  return r;
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start_o, std::optional<int64_t> end_o, int64_t step) const {
  BRISK_PROFILE_OP("slice", *this);
  BRISK_CHECK(dim() > 0, "slice", "cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  BRISK_CHECK(step > 0, "slice", "step must be greater than zero, got ", step);
  const int64_t n = size(d);
  int64_t start = start_o.value_or(0), end = end_o.value_or(n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  const int64_t len = (end - start + step - 1) / step;
  DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
  sz[d] = len;
  st[d] *= step;
  Tensor r = make_view(*this, sz, st, storage_offset() + start * stride(d));
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_window("SliceBackward0", "SliceBackwardBackward0", r, *this,
                  geom_slice(contiguous_geom(sizes()), d, start, len, step));
  return r;
}

namespace {
/// One node for the outputs of split / split_with_sizes: the input's
/// gradient is the outputs' gradients concatenated along d (zeros where
/// none flowed).
void record_split(const char* name, const std::vector<Tensor>& outs, const Tensor& x, int64_t d) {
  DimVector lens;
  for (const Tensor& o : outs) lens.push_back(o.size(d));
  autograd::record(name, outs, TensorList{x}, {},
                   [d, lens, in = to_dims(x.sizes())](BackwardCtx& c) -> TensorList {
                     TensorOptions opts;
                     for (size_t i = 0; i < lens.size(); ++i)
                       if (c.grad(i).defined()) opts = c.grad(i).options();
                     std::vector<Tensor> gs;
                     for (size_t i = 0; i < lens.size(); ++i) {
                       if (c.grad(i).defined()) {
                         gs.push_back(c.grad(i));
                       } else {
                         DimVector s = in;
                         s[d] = lens[i];
                         gs.push_back(zeros(s, opts));
                       }
                     }
                     return {cat(gs, d)};
                   });
  for (const Tensor& o : outs) autograd::mark_view(o, x);
}
}  // namespace

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  BRISK_PROFILE_OP("split", *this);
  BRISK_CHECK(dim() > 0, "split", "cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "split");
  BRISK_CHECK(split_size >= 0, "split", "split_size must be non-negative, got ", split_size);
  const int64_t n = size(d);
  BRISK_CHECK(split_size > 0 || n == 0, "split", "split_size can only be 0 if dimension size is 0");
  std::vector<Tensor> out;
  if (n == 0) {
    out.push_back(make_view(*this, sizes(), strides(), storage_offset()));
  } else {
    for (int64_t s = 0; s < n; s += split_size) out.push_back(narrow_nr(*this, d, s, std::min(split_size, n - s)));
  }
  if (BRISK_UNLIKELY(autograd::should_record(*this))) record_split("SplitBackward0", out, *this, d);
  autograd::mark_multi_output_views(out);
  return out;
}

std::vector<Tensor> Tensor::split(IntArrayRef sizes_, int64_t d) const {
  BRISK_PROFILE_OP("split_with_sizes", *this);
  BRISK_CHECK(dim() > 0, "split_with_sizes", "cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : sizes_) {
    BRISK_CHECK(s >= 0, "split_with_sizes", "split sizes must be non-negative, got ", sizes_);
    total += s;
  }
  BRISK_CHECK(total == size(d), "split_with_sizes", "split sizes ", sizes_, " sum to ", total,
              " but dimension ", d, " has size ", size(d));
  std::vector<Tensor> out;
  int64_t s = 0;
  for (int64_t len : sizes_) {
    out.push_back(narrow_nr(*this, d, s, len));
    s += len;
  }
  if (BRISK_UNLIKELY(autograd::should_record(*this)) && !out.empty())
    record_split("SplitWithSizesBackward0", out, *this, d);
  autograd::mark_multi_output_views(out);
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  BRISK_PROFILE_OP("chunk", *this);
  BRISK_CHECK(dim() > 0, "chunk", "cannot be applied to a 0-dim tensor");
  BRISK_CHECK(chunks > 0, "chunk", "number of chunks must be positive, got ", chunks);
  d = wrap_dim(d, dim(), "chunk");
  const int64_t n = size(d);
  // An empty dim gives `chunks` empty chunks (torch), not one.
  if (n == 0) return split(std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split((n + chunks - 1) / chunks, d);
}

std::vector<Tensor> Tensor::unbind(int64_t d) const {
  BRISK_PROFILE_OP("unbind", *this);
  d = detail::wrap_dim_nonscalar(d, dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < size(d); ++i) out.push_back(select_nr(*this, d, i));
  if (BRISK_UNLIKELY(autograd::should_record(*this)) && !out.empty()) {
    // The input's gradient is the outputs' gradients stacked along d.
    autograd::record("UnbindBackward0", out, TensorList{*this}, {},
                     [d, n = out.size(), part = to_dims(out[0].sizes())](BackwardCtx& c) -> TensorList {
                       TensorOptions opts;
                       for (size_t i = 0; i < n; ++i)
                         if (c.grad(i).defined()) opts = c.grad(i).options();
                       std::vector<Tensor> gs;
                       for (size_t i = 0; i < n; ++i) gs.push_back(c.grad(i).defined() ? c.grad(i) : zeros(part, opts));
                       return {stack(gs, d)};
                     });
    for (const Tensor& o : out) autograd::mark_view(o, *this);
  }
  autograd::mark_multi_output_views(out);
  return out;
}

Tensor Tensor::diagonal(int64_t offset, int64_t d1, int64_t d2) const {
  BRISK_PROFILE_OP("diagonal", *this);
  BRISK_CHECK(dim() >= 2, "diagonal", "expects a tensor with at least 2 dims, got ", dim());
  d1 = wrap_dim(d1, dim(), "diagonal");
  d2 = wrap_dim(d2, dim(), "diagonal");
  BRISK_CHECK(d1 != d2, "diagonal", "dimensions cannot be identical ", d1, ", ", d2);
  Tensor r = view_with(*this, geom_diagonal(geom_of(*this), offset, d1, d2));
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_window("DiagonalBackward0", "DiagonalBackwardBackward0", r, *this,
                  geom_diagonal(contiguous_geom(sizes()), offset, d1, d2));
  return r;
}

Tensor Tensor::unfold(int64_t d, int64_t sz_, int64_t step) const {
  BRISK_PROFILE_OP("unfold", *this);
  d = wrap_dim(d, dim(), "unfold");
  const int64_t n = dim() == 0 ? 1 : size(d);
  BRISK_CHECK(sz_ >= 0 && sz_ <= n, "unfold", "maximum size for tensor at dimension ", d, " is ", n,
              " but size is ", sz_);
  BRISK_CHECK(step > 0, "unfold", "step is ", step, " but must be > 0");
  Tensor r = view_with(*this, geom_unfold(geom_of(*this), d, sz_, step));
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    record_window("UnfoldBackward0", "UnfoldBackwardBackward0", r, *this,
                  geom_unfold(contiguous_geom(sizes()), d, sz_, step));
  return r;
}

}  // namespace brisk
