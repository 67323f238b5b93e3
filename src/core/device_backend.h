// The interface through which core and the op front ends reach a device
// backend (CUDA) without including its headers.
#pragma once
#include <cstddef>
#include <string>

#include "brisk/allocator.h"
#include "brisk/device.h"

namespace brisk {
namespace detail {

// Note [Device backends]
// src/core knows devices only through this table. The CUDA backend
// (src/backend/cuda/backend.cpp) registers itself before main() runs when it
// is built; a build without it leaves the slot empty and every use of a cuda
// device throws "device cuda is not available: ...".
struct DeviceBackend {
  virtual ~DeviceBackend() = default;
  /// A device can be used now (a driver and at least one GPU).
  virtual bool available() = 0;
  /// Why available() is false, for error messages.
  virtual std::string unavailable_reason() = 0;
  virtual int device_count() = 0;
  virtual int current_device() = 0;
  /// The caching allocator of a device (index resolved, in range).
  virtual Allocator* allocator(int device) = 0;
  /// Copies nbytes between two dense buffers, one or both on this backend's
  /// devices. Ordered on the current stream; returns after the copy finished
  /// unless `non_blocking` (then the host side must be pinned memory).
  virtual void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev, size_t nbytes,
                          bool non_blocking) = 0;
  /// The caching pinned-host allocator.
  virtual Allocator* host_allocator() = 0;
  /// Whether a host pointer lies in memory from host_allocator().
  virtual bool is_pinned(const void* p) = 0;
};

void set_device_backend(DeviceType type, DeviceBackend* backend);
/// The registered backend, or null.
DeviceBackend* device_backend(DeviceType type);
/// The backend of a non-CPU device, checked: throws "[op] device cuda is not
/// available: <reason>" when it is missing or has no device, and
/// "[op] device cuda:3 is out of range (2 devices)". Returns the resolved index.
int resolve_device(Device d, const char* op);

}  // namespace detail
}  // namespace brisk
