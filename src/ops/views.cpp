// View ops: metadata changes over shared storage, never a copy.
#include <algorithm>
#include <numeric>

#include "brisk/ops.h"
#include "core/tensor_create.h"

namespace brisk {

using detail::make_view;
using detail::wrap_dim;

namespace {
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

Tensor Tensor::view(IntArrayRef shape) const {
  DimVector sz = infer_size(shape, numel(), "view");
  DimVector st;
  BRISK_CHECK(view_strides(sizes(), strides(), sz, st), "view",
              "view size is not compatible with input tensor's size and stride (shape ", sizes(), ", strides ",
              strides(), " -> ", IntArrayRef(sz),
              "): at least one dimension spans across two contiguous subspaces. Use .reshape(...) instead.");
  return make_view(*this, sz, st, storage_offset());
}

Tensor Tensor::reshape(IntArrayRef shape) const {
  DimVector sz = infer_size(shape, numel(), "reshape");
  DimVector st;
  if (view_strides(sizes(), strides(), sz, st)) return make_view(*this, sz, st, storage_offset());
  return contiguous().view(sz);
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
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
  d = wrap_dim(d, dim(), "unflatten");
  BRISK_CHECK(!parts.empty(), "unflatten", "sizes must be non-empty");
  DimVector inner = infer_size(parts, size(d), "unflatten");
  DimVector sz;
  for (int64_t i = 0; i < d; ++i) sz.push_back(size(i));
  for (int64_t v : inner) sz.push_back(v);
  for (int64_t i = d + 1; i < dim(); ++i) sz.push_back(size(i));
  return view(sz);
}

Tensor Tensor::squeeze() const {
  DimVector sz, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (size(d) != 1) {
      sz.push_back(size(d));
      st.push_back(stride(d));
    }
  return make_view(*this, sz, st, storage_offset());
}

Tensor Tensor::squeeze(int64_t d) const {
  if (dim() == 0) return make_view(*this, sizes(), strides(), storage_offset());
  d = wrap_dim(d, dim(), "squeeze");
  if (size(d) != 1) return make_view(*this, sizes(), strides(), storage_offset());
  DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
  sz.erase(d);
  st.erase(d);
  return make_view(*this, sz, st, storage_offset());
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
  const int64_t s = d < dim() ? stride(d) * size(d) : 1;
  sz.insert(d, 1);
  st.insert(d, s);
  return make_view(*this, sz, st, storage_offset());
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  if (dim() == 0) return make_view(*this, sizes(), strides(), storage_offset());
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
  std::swap(sz[d0], sz[d1]);
  std::swap(st[d0], st[d1]);
  return make_view(*this, sz, st, storage_offset());
}

Tensor Tensor::permute(IntArrayRef dims) const {
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
  return make_view(*this, sz, st, storage_offset());
}

Tensor Tensor::movedim(int64_t src, int64_t dst) const {
  src = wrap_dim(src, dim(), "movedim");
  dst = wrap_dim(dst, dim(), "movedim");
  std::vector<int64_t> order;
  for (int64_t d = 0; d < dim(); ++d)
    if (d != src) order.push_back(d);
  order.insert(order.begin() + dst, src);
  return permute(order);
}

Tensor Tensor::t() const {
  BRISK_CHECK(dim() <= 2, "t", "expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  return dim() < 2 ? make_view(*this, sizes(), strides(), storage_offset()) : transpose(0, 1);
}

Tensor Tensor::mT() const {
  BRISK_CHECK(dim() >= 2, "mT", "tensor.mT is only supported on matrices or batches of matrices. Got ", dim(),
              "-D tensor.");
  return transpose(-2, -1);
}

Tensor Tensor::expand(IntArrayRef shape) const {
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
  return make_view(*this, sz, st, storage_offset());
}

Tensor broadcast_to(const Tensor& x, IntArrayRef sizes) { return x.expand(sizes); }

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& ts) {
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

Tensor Tensor::as_strided(IntArrayRef sz, IntArrayRef st, std::optional<int64_t> offset) const {
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
  return make_view(*this, sz, st, off);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  BRISK_CHECK(dim() > 0, "narrow", "cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = size(d);
  if (start < 0) start += n;
  BRISK_CHECK(start >= 0 && start <= n, "narrow", "start (", start, ") out of range for dimension ", d,
              " of size ", n);
  BRISK_CHECK(length >= 0 && start + length <= n, "narrow", "start (", start, ") + length (", length,
              ") exceeds dimension size (", n, ")");
  DimVector sz(sizes().begin(), sizes().end());
  sz[d] = length;
  return make_view(*this, sz, strides(), storage_offset() + start * stride(d));
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  BRISK_CHECK(dim() > 0, "select", "cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = size(d);
  BRISK_CHECK(index >= -n && index < n, "select", "index ", index, " is out of bounds for dimension ", d,
              " with size ", n);
  if (index < 0) index += n;
  DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
  sz.erase(d);
  st.erase(d);
  return make_view(*this, sz, st, storage_offset() + index * stride(d));
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start_o, std::optional<int64_t> end_o, int64_t step) const {
  BRISK_CHECK(dim() > 0, "slice", "cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  BRISK_CHECK(step > 0, "slice", "step must be greater than zero, got ", step);
  const int64_t n = size(d);
  int64_t start = start_o.value_or(0), end = end_o.value_or(n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
  sz[d] = (end - start + step - 1) / step;
  st[d] *= step;
  return make_view(*this, sz, st, storage_offset() + start * stride(d));
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  BRISK_CHECK(dim() > 0, "split", "cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "split");
  BRISK_CHECK(split_size >= 0, "split", "split_size must be non-negative, got ", split_size);
  const int64_t n = size(d);
  BRISK_CHECK(split_size > 0 || n == 0, "split", "split_size can only be 0 if dimension size is 0");
  std::vector<Tensor> out;
  if (n == 0) return {*this};
  for (int64_t s = 0; s < n; s += split_size) out.push_back(narrow(d, s, std::min(split_size, n - s)));
  return out;
}

std::vector<Tensor> Tensor::split(IntArrayRef sizes_, int64_t d) const {
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
    out.push_back(narrow(d, s, len));
    s += len;
  }
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  BRISK_CHECK(chunks > 0, "chunk", "number of chunks must be positive, got ", chunks);
  d = wrap_dim(d, dim(), "chunk");
  const int64_t n = size(d);
  return split(std::max<int64_t>((n + chunks - 1) / chunks, n == 0 ? 0 : 1), d);
}

std::vector<Tensor> Tensor::unbind(int64_t d) const {
  d = wrap_dim(d, dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < size(d); ++i) out.push_back(select(d, i));
  return out;
}

Tensor Tensor::diagonal(int64_t offset, int64_t d1, int64_t d2) const {
  BRISK_CHECK(dim() >= 2, "diagonal", "expects a tensor with at least 2 dims, got ", dim());
  d1 = wrap_dim(d1, dim(), "diagonal");
  d2 = wrap_dim(d2, dim(), "diagonal");
  BRISK_CHECK(d1 != d2, "diagonal", "dimensions cannot be identical ", d1, ", ", d2);
  int64_t len, off = storage_offset();
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(size(d1), size(d2) - offset), 0);
    off += offset * stride(d2);
  } else {
    len = std::max<int64_t>(std::min(size(d1) + offset, size(d2)), 0);
    off -= offset * stride(d1);
  }
  if (len == 0) off = storage_offset();
  DimVector sz, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (d != d1 && d != d2) {
      sz.push_back(size(d));
      st.push_back(stride(d));
    }
  sz.push_back(len);
  st.push_back(stride(d1) + stride(d2));
  return make_view(*this, sz, st, off);
}

Tensor Tensor::unfold(int64_t d, int64_t sz_, int64_t step) const {
  d = wrap_dim(d, dim(), "unfold");
  const int64_t n = dim() == 0 ? 1 : size(d);
  BRISK_CHECK(sz_ >= 0 && sz_ <= n, "unfold", "maximum size for tensor at dimension ", d, " is ", n,
              " but size is ", sz_);
  BRISK_CHECK(step > 0, "unfold", "step is ", step, " but must be > 0");
  DimVector sz(sizes().begin(), sizes().end()), st(strides().begin(), strides().end());
  if (dim() == 0) {
    sz.push_back(sz_);
    st.push_back(1);
    return make_view(*this, sz, st, storage_offset());
  }
  const int64_t s = stride(d);
  sz[d] = (n - sz_) / step + 1;
  st[d] = s * step;
  sz.push_back(sz_);
  st.push_back(s);
  return make_view(*this, sz, st, storage_offset());
}

}  // namespace brisk
