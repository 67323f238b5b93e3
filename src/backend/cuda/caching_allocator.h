// The CUDA caching allocators (device and pinned host), as used by the rest
// of the backend. The bookkeeping lives in block_allocator.h (plain C++,
// tested on the CPU); caching_allocator.cpp connects it to the CUDA runtime.
// See docs/design/cuda_allocator.md.
#pragma once
#include <cuda_runtime.h>

#include "brisk/allocator.h"

namespace brisk::cuda::detail {

/// The caching allocator of a device: blocks are tied to the stream that was
/// current when they were allocated.
Allocator* device_allocator(int device);
/// The caching pinned-host allocator (cudaHostAlloc).
Allocator* pinned_host_allocator();
/// Whether `p` points into a block of the pinned-host allocator (anywhere
/// inside it, cached blocks included).
bool is_pinned_ptr(const void* p);
/// The block holding `ptr` (a block start, as in StorageImpl::data) is also
/// used by `stream`, a stream of `stream_device` (-1: the same device). Throws
/// when `ptr` is not a live block of the device's caching allocator.
void record_stream_ptr(void* ptr, int device, cudaStream_t stream, int stream_device = -1);
/// A pinned host block used by an async copy on `stream` (a stream of the
/// current device): it is not reused before the copy is done. `host_ptr` may
/// point anywhere inside the block; a pointer outside pinned memory is ignored.
void record_host_use(const void* host_ptr, cudaStream_t stream);

/// Private pools for CUDA graphs (Note [Private pools]): the requests made
/// on `stream` go to pool `pool` (nonzero) of `device` until
/// end_allocate_to_pool; release_pool drops one use (begin_allocate_to_pool
/// counts one).
void begin_allocate_to_pool(int device, uint64_t pool, cudaStream_t stream);
void end_allocate_to_pool(int device, uint64_t pool);
void release_pool(int device, uint64_t pool);
/// Bytes in the segments of private pool `pool` (0 when it is gone).
int64_t pool_reserved(int device, uint64_t pool);

}  // namespace brisk::cuda::detail
