// Registers the CUDA backend with core (Note [Device backends]) and fills the
// CUDA slots of the kernel table.
#include <cuda_runtime.h>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_errors.h"
#include "core/device_backend.h"
#include "core/dispatch.h"
#include "core/profile_hooks.h"

namespace brisk {
namespace cuda::detail {
// One per kernel family (src/backend/cuda/*.cu).
void register_elementwise_kernels();
void register_unary_kernels();
void register_reduce_kernels();
void register_scan_kernels();
void register_sort_kernels();
void register_index_kernels();
void register_random_kernels();
void register_gemm_kernels();
void register_conv_kernels();
void register_factory_kernels();
void register_pooling_kernels();
void register_multi_tensor_kernels();
void register_norm_kernels();
void register_nvrtc();

namespace {
cudaMemcpyKind kind_of(Device dst, Device src) {
  if (src.is_cpu()) return cudaMemcpyHostToDevice;
  if (dst.is_cpu()) return cudaMemcpyDeviceToHost;
  return cudaMemcpyDeviceToDevice;
}

class CudaBackend final : public brisk::detail::DeviceBackend {
 public:
  bool available() override { return is_available(); }
  std::string unavailable_reason() override { return cuda::unavailable_reason(); }
  int device_count() override { return cuda::device_count(); }
  int current_device() override { return current_device_index(); }
  Allocator* allocator(int device) override { return device_allocator(device); }
  Allocator* host_allocator() override { return pinned_host_allocator(); }
  bool is_pinned(const void* p) override { return is_pinned_ptr(p); }

  void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev, size_t nbytes,
                  bool non_blocking) override {
    const int dev = dst_dev.is_cpu() ? src_dev.index : dst_dev.index;
    const bool capturing = brisk::detail::thread_capturing();
    if (capturing) {  // named errors rather than an invalidated capture found at capture_end
      BRISK_CHECK(!dst_dev.is_cpu(), "copy_",
                  "a device-to-host copy cannot be captured in a CUDA graph (it waits for the device): copy the "
                  "graph's outputs to the host after replay()");
      BRISK_CHECK(!src_dev.is_cpu() || (non_blocking && is_pinned_ptr(src)), "copy_",
                  "a host-to-device copy in a CUDA graph capture must read pinned memory with non_blocking=true (a "
                  "pageable or blocking copy cannot be captured): fill a static device input before replay(), or "
                  "copy from a pin_memory() tensor");
    }
    DeviceGuard g(dev);
    cudaStream_t s = current_stream_handle(dev);
    if (!src_dev.is_cpu() && !dst_dev.is_cpu() && src_dev.index != dst_dev.index) {
      BRISK_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_dev.index, src, src_dev.index, nbytes, s), "copy_");
    } else {
      BRISK_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind_of(dst_dev, src_dev), s), "copy_");
    }
    if (capturing) return;  // (device to device, or pinned and non-blocking: stream-ordered, nothing to hold)
    if (non_blocking) {
      // The pinned host block must outlive the copy: its allocator holds it
      // back until an event recorded now has completed.
      record_host_use(src_dev.is_cpu() ? src : dst, s);
      return;
    }
    BRISK_CUDA_CHECK(cudaStreamSynchronize(s), "copy_");
    check_device_errors(dev);
  }
};

struct Register {
  Register() {
    static CudaBackend backend;
    brisk::detail::set_device_backend(kCUDA, &backend);
  }
} g_register;
}  // namespace
}  // namespace cuda::detail

void register_cuda_kernels() {
  using namespace cuda::detail;
  register_elementwise_kernels();
  register_unary_kernels();
  register_reduce_kernels();
  register_scan_kernels();
  register_sort_kernels();
  register_index_kernels();
  register_random_kernels();
  register_gemm_kernels();
  register_conv_kernels();
  register_factory_kernels();
  register_pooling_kernels();
  register_multi_tensor_kernels();
  register_norm_kernels();
  register_nvrtc();  // compile's generated CUDA kernels (compile/codegen_cuda.h)
}

}  // namespace brisk
