// The CUDA caching allocators (device and pinned host), as used by the rest
// of the backend. See docs/design/cuda.md and caching_allocator.cpp.
#pragma once
#include <cuda_runtime.h>

#include "brisk/allocator.h"

namespace brisk::cuda::detail {

/// The caching allocator of a device: blocks are tied to the stream that was
/// current when they were allocated.
Allocator* device_allocator(int device);
/// The caching pinned-host allocator (cudaHostAlloc).
Allocator* pinned_host_allocator();
/// Whether `p` points into a block of the pinned-host allocator.
bool is_pinned_ptr(const void* p);
/// The block holding `ptr` is also used by `stream` (record_stream).
void record_stream_ptr(void* ptr, int device, cudaStream_t stream);
/// A pinned host block used by an async copy on `stream`: it is not reused
/// before the copy is done.
void record_host_use(const void* host_ptr, cudaStream_t stream);

}  // namespace brisk::cuda::detail
