// Errors that CUDA kernels detect on the device and the host raises later
// (Note [Deferred index errors]; the samplers' invalid parameters use it too). This header is plain C++: the record's
// layout, the op table and the message are shared by the backend and by the
// tests, which check the decoding on machines without a GPU.
//
// Note [Deferred index errors]
// A kernel cannot throw, and checking index values on the host before each
// launch would make every gather a synchronising call (a device-to-host copy
// of the index, or of a flag computed on the device). So the index kernels
// check each value as they use it: an invalid one is skipped (never read or
// written out of bounds; a gathered element gets zero bits) and the FIRST
// such error on a device is recorded in a small per-device record:
//   - a device-memory flag arbitrates: the thread whose atomicCAS moves it
//     from 0 to 1 owns the record (atomics stay in device memory: device
//     atomics on mapped host memory are not guaranteed atomic over PCIe);
//   - that thread writes op, value, dim and size into the record, which lives
//     in mapped pinned host memory (cudaHostAlloc(cudaHostAllocMapped)), then
//     __threadfence_system() and sets `ready`.
// Every synchronising call of the backend (a blocking copy, item(), printing,
// cuda::synchronize, Stream/Event::synchronize, nonzero) calls
// check_device_errors(device) after the wait: one load of `ready` from host
// memory, no driver call. A set record is cleared (the flag is reset with a
// cudaMemsetAsync on the current stream) and raised as brisk::Error:
//   [gather] index 7 is out of bounds for dimension 1 with size 5 (detected
//   on cuda:0 after the kernel ran; results written since then are unreliable)
// The CUDA context stays usable: later ops run normally and a later bad
// index is reported again. Unlike the CPU kernels (Note [Index kernels
// validate first]) the valid elements of the failing op were still written,
// and "first" means first to reach the flag, not lowest position.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>

#include "brisk/error.h"

namespace brisk::cuda::detail {

/// Ops whose kernels report through the record (the names the CPU kernels use).
enum class DeviceErrorOp : int32_t {
  none = 0,
  gather,
  scatter,
  scatter_add,
  index_add,
  index,
  index_put,
  index_select,
  // the per-element samplers (Note [Samplers in one pass]): value = the flat
  // index of an invalid parameter
  standard_gamma,
  poisson,
  binomial,
  multinomial,  ///< value = the row
  kCount
};

inline const char* device_error_op_name(int32_t op) {
  switch (static_cast<DeviceErrorOp>(op)) {
    case DeviceErrorOp::gather: return "gather";
    case DeviceErrorOp::scatter: return "scatter";
    case DeviceErrorOp::scatter_add: return "scatter_add";
    case DeviceErrorOp::index_add: return "index_add_";
    case DeviceErrorOp::index: return "index";
    case DeviceErrorOp::index_put: return "index_put_";
    case DeviceErrorOp::index_select: return "index_select";
    case DeviceErrorOp::standard_gamma: return "_standard_gamma";
    case DeviceErrorOp::poisson: return "poisson";
    case DeviceErrorOp::binomial: return "binomial";
    case DeviceErrorOp::multinomial: return "multinomial";
    default: return "cuda kernel";
  }
}

/// The record a kernel fills (host memory, mapped into the device's space).
struct DeviceErrorRecord {
  uint32_t ready = 0;  ///< 1: the fields below describe an error not raised yet
  int32_t op = 0;      ///< DeviceErrorOp
  int64_t value = 0;   ///< the bad index value
  int64_t dim = 0;     ///< the dimension it indexes
  int64_t size = 0;    ///< that dimension's size
};

/// What a kernel needs to report: the arbitration flag (device memory) and
/// the record (the device's view of mapped host memory).
struct DeviceErrorSlot {
  uint32_t* flag = nullptr;
  DeviceErrorRecord* record = nullptr;
};

/// The message without the "[op] " prefix.
inline std::string describe_device_error(const DeviceErrorRecord& r, int device) {
  std::ostringstream os;
  if (r.op <= 0 || r.op >= static_cast<int32_t>(DeviceErrorOp::kCount))
    os << "unknown device-side error (op code " << r.op << ")";
  else if (r.op == static_cast<int32_t>(DeviceErrorOp::standard_gamma))
    os << "expected concentrations alpha > 0, but the one at flat index " << r.value << " is not";
  else if (r.op == static_cast<int32_t>(DeviceErrorOp::poisson))
    os << "expected rates >= 0, but the one at flat index " << r.value << " is not";
  else if (r.op == static_cast<int32_t>(DeviceErrorOp::binomial))
    os << "expected counts that are non-negative integers and probabilities in [0, 1], but the pair at flat index "
       << r.value << " is not";
  else if (r.op == static_cast<int32_t>(DeviceErrorOp::multinomial))
    os << "probability tensor contains either `inf`, `nan` or element < 0, or its row " << r.value
       << " sums to 0";
  else
    os << "index " << r.value << " is out of bounds for dimension " << r.dim << " with size " << r.size;
  os << " (detected on cuda:" << device << " after the kernel ran; results written since then are unreliable)";
  return os.str();
}

/// Raises the error a record describes.
[[noreturn]] inline void throw_device_error(const DeviceErrorRecord& r, int device) {
  BRISK_FAIL(device_error_op_name(r.op), describe_device_error(r, device));
}

/// The slot of a device, created on first use (one cudaMalloc of a flag and
/// one cudaHostAlloc of a record per device and process).
DeviceErrorSlot device_error_slot(int device);

/// Raises (and clears) the error recorded on `device` (-1: the current one),
/// if any. Call after waiting for the device; costs one host-memory load.
void check_device_errors(int device);

}  // namespace brisk::cuda::detail
