// Internal helpers of the CUDA backend: error checks, the current stream,
// device properties and launch geometry. Included by the backend's .cpp and
// .cu files only (never by src/core or public headers).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "brisk/cuda.h"
#include "brisk/error.h"

namespace brisk::cuda::detail {

/// Throws brisk::Error "[op] CUDA error: <name> (<string>) in <expr>". The
/// sticky errors (an illegal address, a device-side assert) say that the
/// context is unusable, as the driver does.
[[noreturn]] void cuda_fail(cudaError_t e, const char* op, const char* expr);

/// The stream ops on `device` launch on from this thread (-1: the current device).
cudaStream_t current_stream_handle(int device = -1);
/// The current device of this thread (cached; no driver call).
int current_device_index();
/// Properties of a device (queried once).
const cudaDeviceProp& device_properties(int device = -1);
/// Number of SMs of the current device.
int sm_count();

/// After a kernel launch: throws if the launch failed (bad configuration,
/// too many resources); does not wait for the kernel.
void check_launch(const char* op);

/// ceil(a / b) for launch grids.
inline constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace brisk::cuda::detail

#define BRISK_CUDA_CHECK(expr, op)                                                          \
  do {                                                                                      \
    const cudaError_t brisk_cuda_err_ = (expr);                                             \
    if (BRISK_UNLIKELY(brisk_cuda_err_ != cudaSuccess))                                     \
      ::brisk::cuda::detail::cuda_fail(brisk_cuda_err_, op, #expr);                         \
  } while (0)
