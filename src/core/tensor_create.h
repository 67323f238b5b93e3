// Internal constructors of tensors (used by every op front end).
#pragma once
#include "brisk/tensor.h"

namespace brisk {
namespace detail {

/// A fresh tensor with uninitialised memory. Empty `strides` = contiguous.
Tensor make_tensor(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device);
/// A new view of `base`'s storage with other sizes/strides/offset (shares
/// the version counter; inherits inference-ness).
Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
/// Gives `t` fresh contiguous storage of the given shape (out= resizing).
/// The version counter carries over.
void resize_(const Tensor& t, IntArrayRef sizes);
/// For an op handing out a tensor whose storage it made itself: its
/// _version() starts at 0 whatever in-place ops built it (full's fill, cat's
/// copies into slices, ...); see Note [Version counters]. Returns t.
inline const Tensor& mark_new_version(const Tensor& t) {
  StorageImpl* s = t.impl()->storage.get();
  s->version_base = s->version.load(std::memory_order_relaxed);
  return t;
}
inline Tensor mark_new_version(Tensor&& t) {
  mark_new_version(static_cast<const Tensor&>(t));
  return std::move(t);
}
/// Contiguous strides for sizes.
DimVector contiguous_strides(IntArrayRef sizes);
/// Channels-last strides for a 4-D shape (N, C, H, W) -> (C*H*W, 1, W*C, C).
DimVector channels_last_strides(IntArrayRef sizes);
/// True when t's elements fill a block of memory exactly once (no gaps, no
/// overlap), in any dim order. Dims of size 0 or 1 do not count.
bool non_overlapping_and_dense(const Tensor& t);
/// Strides of a fresh tensor like t in memory format "preserve" (Note
/// [Preserved strides], src/ops/copy.cpp).
DimVector preserved_strides(const Tensor& t);
/// Throws "[op] value v is out of range for dtype t" where PyTorch's checked
/// conversion of a Scalar to t fails (Note [Scalars out of range]).
void check_scalar_fits(const char* op, const Scalar& v, ScalarType t);
/// v rounded to a 16-bit float dtype t without the range check (1e5 -> inf
/// in float16), as a Scalar that then passes check_scalar_fits; for other
/// dtypes v itself after check_scalar_fits.
Scalar scalar_to_dtype_unchecked_16bit(const char* op, const Scalar& v, ScalarType t);
/// The value fill_ (and full, full_like, scalar_tensor) writes: v checked
/// against t, except that torch 2.x's fill of a single CPU element takes a
/// value past a 16-bit float's range as inf.
Scalar fill_value(const char* op, const Scalar& v, ScalarType t, bool one_cpu_element);
/// Wraps a dim into [0, ndim); throws "[op] dimension out of range".
/// A 0-dim tensor accepts dims 0 and -1 (PyTorch's maybe_wrap_dim).
[[noreturn, gnu::cold]] void wrap_dim_fail(int64_t dim, int64_t ndim, const char* op);
inline int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = ndim > 1 ? ndim : 1;  // 0-dim tensors accept dims -1 and 0
  if (BRISK_LIKELY(dim >= -n && dim < n)) return dim < 0 ? dim + n : dim;
  wrap_dim_fail(dim, ndim, op);
}
/// As wrap_dim for ops that need a real dimension (unbind, roll with dims,
/// unflatten): a 0-dim tensor throws "Dimension specified as d but tensor
/// has no dimensions", as PyTorch does.
int64_t wrap_dim_nonscalar(int64_t dim, int64_t ndim, const char* op);
/// Throws the "not available" error for devices without a backend.
void check_device_available(Device d, const char* op);
/// A contiguous CPU copy of a tensor on a device, for callers that passed a
/// sync point already (item, printing): records no second Sync event.
Tensor to_host_after_sync_point(const Tensor& t);
/// For ops that have no kernel for t's device yet: throws "[op] not
/// implemented on cuda: ..." naming the op, instead of reading device memory
/// on the host.
void check_cpu_kernel(const Tensor& t, const char* op);
/// Whether grad mode records (set by autograd; false until then).
bool is_inference_mode();

}  // namespace detail
}  // namespace brisk
