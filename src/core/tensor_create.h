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
void resize_(const Tensor& t, IntArrayRef sizes);
/// Contiguous strides for sizes.
DimVector contiguous_strides(IntArrayRef sizes);
/// Channels-last strides for a 4-D shape (N, C, H, W) -> (C*H*W, 1, W*C, C).
DimVector channels_last_strides(IntArrayRef sizes);
/// Strides of a fresh tensor like t in memory format "preserve" (Note
/// [Preserved strides], src/ops/copy.cpp).
DimVector preserved_strides(const Tensor& t);
/// Throws "[op] value v is out of range for dtype t" where PyTorch's checked
/// conversion of a Scalar to t fails (Note [Scalars out of range]).
void check_scalar_fits(const char* op, const Scalar& v, ScalarType t);
/// Wraps a dim into [0, ndim); throws "[op] dimension out of range".
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
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
