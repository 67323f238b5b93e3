// Host side of Note [Deferred index errors] (device_errors.h): the per-device
// error slots and the check that synchronising calls run.
#include "backend/cuda/device_errors.h"

#include <atomic>
#include <mutex>
#include <new>

#include "backend/cuda/cuda_common.h"

namespace brisk::cuda::detail {
namespace {

constexpr int kMaxDevices = 64;

struct Entry {
  std::once_flag once;
  DeviceErrorSlot slot;                           ///< device views, set once
  std::atomic<DeviceErrorRecord*> host{nullptr};  ///< host view; null until the slot exists
  std::mutex mutex;                               ///< one thread raises a given error
};

Entry& entry(int d) {
  static Entry* entries = new Entry[kMaxDevices];  // lives as long as the process (as the slots)
  return entries[d];
}

}  // namespace

DeviceErrorSlot device_error_slot(int device) {
  const int d = device < 0 ? current_device_index() : device;
  BRISK_CHECK(d >= 0 && d < kMaxDevices, "cuda", "device index ", d, " is out of range");
  Entry& e = entry(d);
  std::call_once(e.once, [&] {
    // Once per device and process; never freed (like the stream pool).
    DeviceGuard g(d);
    void* host = nullptr;
    BRISK_CUDA_CHECK(cudaHostAlloc(&host, sizeof(DeviceErrorRecord), cudaHostAllocMapped | cudaHostAllocPortable),
                     "cuda: device error record");
    auto* rec = new (host) DeviceErrorRecord();
    void* dev_rec = nullptr;
    void* flag = nullptr;
    cudaError_t err = cudaHostGetDevicePointer(&dev_rec, host, 0);
    if (err == cudaSuccess) err = cudaMalloc(&flag, sizeof(uint32_t));
    // Zeroed on the current stream, and waited for once: kernels of any
    // stream that get this slot afterwards see the cleared flag.
    cudaStream_t s = current_stream_handle(d);
    if (err == cudaSuccess) err = cudaMemsetAsync(flag, 0, sizeof(uint32_t), s);
    if (err == cudaSuccess) err = cudaStreamSynchronize(s);
    if (err != cudaSuccess) {
      if (flag != nullptr) (void)cudaFree(flag);
      (void)cudaFreeHost(host);
      cuda_fail(err, "cuda: device error record", "device_error_slot");
    }
    e.slot.flag = static_cast<uint32_t*>(flag);
    e.slot.record = static_cast<DeviceErrorRecord*>(dev_rec);
    e.host.store(rec, std::memory_order_release);
  });
  return e.slot;
}

void check_device_errors(int device) {
  const int d = device < 0 ? current_device_index() : device;
  if (d < 0 || d >= kMaxDevices) return;
  Entry& e = entry(d);
  DeviceErrorRecord* h = e.host.load(std::memory_order_acquire);
  if (h == nullptr) return;  // no kernel of this device could have reported
  auto ready = [h] { return *static_cast<volatile uint32_t*>(&h->ready) != 0u; };
  if (BRISK_LIKELY(!ready())) return;
  DeviceErrorRecord got;
  {
    std::lock_guard<std::mutex> lock(e.mutex);
    if (!ready()) return;  // another thread raised it
    std::atomic_thread_fence(std::memory_order_acquire);
    const volatile DeviceErrorRecord* v = h;
    got.op = v->op;
    got.value = v->value;
    got.dim = v->dim;
    got.size = v->size;
    got.ready = 1u;
    *static_cast<volatile uint32_t*>(&h->ready) = 0u;
    // Re-arm the flag for the kernels queued after this point on the
    // current stream. A failure here (a faulted context) must not hide the
    // error being raised; the next CUDA call reports it.
    DeviceGuard g(d);
    if (cudaMemsetAsync(e.slot.flag, 0, sizeof(uint32_t), current_stream_handle(d)) != cudaSuccess)
      (void)cudaGetLastError();
  }
  throw_device_error(got, d);
}

}  // namespace brisk::cuda::detail
