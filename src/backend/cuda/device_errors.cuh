// Device side of Note [Deferred index errors] (device_errors.h): how a
// kernel reports a bad index. Included by .cu files only.
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/device_errors.h"

namespace brisk::cuda::detail {

/// Records (op, value, dim, size) unless an earlier error holds the record.
/// Cheap when an error is already recorded: one load, no atomic.
__device__ inline void report_index_error(const DeviceErrorSlot& slot, DeviceErrorOp op, int64_t value, int64_t dim,
                                          int64_t size) {
  if (*static_cast<volatile uint32_t*>(slot.flag) != 0u) return;
  if (atomicCAS(slot.flag, 0u, 1u) != 0u) return;
  volatile DeviceErrorRecord* r = slot.record;
  r->op = static_cast<int32_t>(op);
  r->value = value;
  r->dim = dim;
  r->size = size;
  __threadfence_system();  // the fields reach host memory before `ready`
  r->ready = 1u;
}

}  // namespace brisk::cuda::detail
