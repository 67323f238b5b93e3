// The CUDA caching allocators: the bookkeeping of block_allocator.h (see
// Note [Caching allocator layers]) on top of cudaMalloc/cudaFree,
// cudaHostAlloc/cudaFreeHost and CUDA events, and the memory functions of
// include/brisk/cuda.h. See docs/design/cuda_allocator.md.
#include "backend/cuda/caching_allocator.h"

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/block_allocator.h"
#include "backend/cuda/cuda_common.h"
#include "brisk/tensor.h"
#include "core/profile_hooks.h"
#include "core/trace_hooks.h"

namespace brisk::cuda {
namespace detail {
namespace {

constexpr int kMaxDevices = 64;
constexpr const char* kOp = "cuda caching allocator";

// Events for the allocators, recycled per device (cudaEventCreate is not
// free and a block recorded on another stream needs one at every free). Used
// with the owning allocator's mutex held.
class CudaEventBackend : public MemoryBackend {
 public:
  struct Slot {
    cudaEvent_t event = nullptr;
    int device = 0;
  };

  void* record_event(StreamRef s) override {
    DeviceGuard g(s.device);
    Slot* slot = nullptr;
    std::vector<Slot*>& pool = free_[static_cast<size_t>(s.device)];
    if (!pool.empty()) {
      slot = pool.back();
      pool.pop_back();
    } else {
      cudaEvent_t e = nullptr;
      BRISK_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), kOp);
      slot = new Slot{e, s.device};
    }
    const cudaError_t err = cudaEventRecord(slot->event, static_cast<cudaStream_t>(s.handle));
    if (err != cudaSuccess) {
      pool.push_back(slot);
      cuda_fail(err, kOp, "cudaEventRecord");
    }
    return slot;
  }
  bool capture_underway() const override {
    return brisk::detail::g_graph_captures.load(std::memory_order_relaxed) != 0;
  }
  bool query_event(void* e) override {
    // An event query while any thread captures a graph (global mode)
    // invalidates that capture: a block freed with uses on other streams
    // stays pending until no capture is underway (PyTorch defers its event
    // processing the same way).
    if (capture_underway()) return false;
    const cudaError_t err = cudaEventQuery(static_cast<Slot*>(e)->event);
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    if (err != cudaSuccess) cuda_fail(err, kOp, "cudaEventQuery");
    return true;
  }
  void synchronize_event(void* e) override {
    const cudaError_t err = cudaEventSynchronize(static_cast<Slot*>(e)->event);
    if (err != cudaSuccess) cuda_fail(err, kOp, "cudaEventSynchronize");
  }
  void release_event(void* e) override {
    Slot* slot = static_cast<Slot*>(e);
    free_[static_cast<size_t>(slot->device)].push_back(slot);
  }

 private:
  std::vector<std::vector<Slot*>> free_ = std::vector<std::vector<Slot*>>(kMaxDevices);
};

// cudaMalloc/cudaFree on one device.
class CudaDeviceBackend final : public CudaEventBackend {
 public:
  explicit CudaDeviceBackend(int device) : device_(device) {}
  void* raw_alloc(size_t nbytes) override {
    DeviceGuard g(device_);
    void* p = nullptr;
    // Note [cudaMalloc during capture]: a graph's private pool is filled as
    // its capture allocates (the first capture has an empty pool), and
    // cudaMalloc is one of the calls a global-mode capture forbids. It is
    // safe all the same: it is not stream work, and the graph keeps the
    // addresses (the pool never frees them while the graph lives). So this
    // thread's capture mode is relaxed around it, as PyTorch's allocator does.
    const bool capturing = brisk::detail::thread_capturing();
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (capturing) (void)cudaThreadExchangeStreamCaptureMode(&mode);
    const cudaError_t err = cudaMalloc(&p, nbytes);
    if (capturing) (void)cudaThreadExchangeStreamCaptureMode(&mode);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    if (err != cudaSuccess) cuda_fail(err, "empty", "cudaMalloc");
    return p;
  }
  void raw_free(void* p, size_t) override {
    try {
      DeviceGuard g(device_);
      (void)cudaFree(p);  // synchronizes the device: no stream still uses `p`
      (void)cudaGetLastError();
    } catch (...) {  // the device cannot be selected: the memory goes with the context
    }
  }
  void mem_info(int64_t* free_bytes, int64_t* total_bytes) override {
    *free_bytes = *total_bytes = -1;
    try {
      DeviceGuard g(device_);
      size_t f = 0, t = 0;
      if (cudaMemGetInfo(&f, &t) == cudaSuccess) {
        *free_bytes = static_cast<int64_t>(f);
        *total_bytes = static_cast<int64_t>(t);
      } else {
        (void)cudaGetLastError();
      }
    } catch (...) {
    }
  }

 private:
  int device_;
};

// cudaHostAlloc/cudaFreeHost (on the current device's context; with unified
// addressing the memory is pinned for every device).
class CudaHostBackend final : public CudaEventBackend {
 public:
  void* raw_alloc(size_t nbytes) override {
    void* p = nullptr;
    const cudaError_t err = cudaHostAlloc(&p, nbytes, cudaHostAllocDefault);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    if (err != cudaSuccess) cuda_fail(err, "pin_memory", "cudaHostAlloc");
    return p;
  }
  void raw_free(void* p, size_t) override {
    (void)cudaFreeHost(p);
    (void)cudaGetLastError();
  }
};

class CudaCachingAllocator final : public Allocator {
 public:
  explicit CudaCachingAllocator(int device) : device_(device), backend_(device), blocks_(backend_, device) {}

  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const StreamRef s{static_cast<void*>(current_stream_handle(device_)), device_};
    void* p;
    if (BRISK_LIKELY(!profiler::detail::g_memory.load(std::memory_order_relaxed))) {
      p = blocks_.malloc(nbytes, s);
    } else {
      AllocInfo info;
      p = blocks_.malloc(nbytes, s, &info);
      profiler::detail::on_alloc(static_cast<int64_t>(nbytes), info.cache_miss, info.allocated, info.reserved);
    }
    // compile's tracer tells memory the traced run made from what it captured
    // (a block filled without a recorded kernel is a graph break, not a constant)
    if (BRISK_UNLIKELY(brisk::detail::tracing_any())) brisk::detail::trace_alloc(p, nbytes);
    return p;
  }

  // Called from ~StorageImpl: never throws. If an event cannot be recorded
  // (a broken context) the block stays allocated rather than being reused
  // while a stream may still read it.
  void free(void* p, size_t nbytes) override {
    if (p == nullptr) return;
    AllocInfo info;
    bool ok = false;
    try {
      ok = blocks_.free(p, &info);
    } catch (...) {
      return;
    }
    if (ok && BRISK_UNLIKELY(profiler::detail::g_memory.load(std::memory_order_relaxed)))
      profiler::detail::on_free(static_cast<int64_t>(nbytes), info.allocated, info.reserved);
  }

  BlockAllocator& blocks() { return blocks_; }

 private:
  int device_;
  CudaDeviceBackend backend_;  // before blocks_: constructed first, destroyed last
  BlockAllocator blocks_;
};

class PinnedHostAllocator final : public Allocator {
 public:
  PinnedHostAllocator() : blocks_(backend_) {}
  void* allocate(size_t nbytes) override { return blocks_.malloc(nbytes); }
  void free(void* p, size_t) override {
    try {
      (void)blocks_.free(p);
    } catch (...) {  // an event could not be recorded: the block is kept (leaked)
    }
  }
  HostBlockAllocator& blocks() { return blocks_; }

 private:
  CudaHostBackend backend_;
  HostBlockAllocator blocks_;
};

// Created on first use and never destroyed: tensors may outlive statics.
std::atomic<CudaCachingAllocator*>* device_slots() {
  static auto* slots = new std::atomic<CudaCachingAllocator*>[kMaxDevices]{};
  return slots;
}

CudaCachingAllocator* caching_allocator(int device) {
  BRISK_CHECK(device >= 0 && device < kMaxDevices, kOp, "device index ", device, " is out of range");
  std::atomic<CudaCachingAllocator*>& slot = device_slots()[device];
  CudaCachingAllocator* a = slot.load(std::memory_order_acquire);
  if (BRISK_LIKELY(a != nullptr)) return a;
  static std::mutex* mu = new std::mutex;
  std::lock_guard<std::mutex> g(*mu);
  a = slot.load(std::memory_order_relaxed);
  if (a == nullptr) {
    a = new CudaCachingAllocator(device);
    slot.store(a, std::memory_order_release);
  }
  return a;
}

PinnedHostAllocator& host_allocator() {
  static auto* a = new PinnedHostAllocator();
  return *a;
}

// The device a memory function refers to (-1: the current one), checked.
int resolve(int device, const char* op) {
  if (!is_available()) BRISK_FAIL(op, "CUDA is not available: ", unavailable_reason());
  const int d = device < 0 ? current_device_index() : device;
  BRISK_CHECK(d < device_count(), op, "device index ", d, " is out of range: ", device_count(),
              device_count() == 1 ? " device is" : " devices are", " visible");
  return d;
}

}  // namespace

Allocator* device_allocator(int device) { return caching_allocator(device); }

void begin_allocate_to_pool(int device, uint64_t pool, cudaStream_t stream) {
  caching_allocator(device)->blocks().begin_allocate_to_pool(pool, StreamRef{static_cast<void*>(stream), device});
}
void end_allocate_to_pool(int device, uint64_t pool) { caching_allocator(device)->blocks().end_allocate_to_pool(pool); }
void release_pool(int device, uint64_t pool) { (void)caching_allocator(device)->blocks().release_pool(pool); }
int64_t pool_reserved(int device, uint64_t pool) { return caching_allocator(device)->blocks().pool_stats(pool).reserved; }
Allocator* pinned_host_allocator() { return &host_allocator(); }
bool is_pinned_ptr(const void* p) { return p != nullptr && host_allocator().blocks().contains(p); }

void record_stream_ptr(void* ptr, int device, cudaStream_t stream, int stream_device) {
  const StreamRef s{static_cast<void*>(stream), stream_device < 0 ? device : stream_device};
  BRISK_CHECK(caching_allocator(device)->blocks().record_stream(ptr, s), "cuda::record_stream",
              "the memory at ", ptr, " is not a live block of the caching allocator of cuda:", device,
              " (a tensor made with from_blob?)");
}

void record_host_use(const void* host_ptr, cudaStream_t stream) {
  (void)host_allocator().blocks().record_use(host_ptr, StreamRef{static_cast<void*>(stream), current_device_index()});
}

}  // namespace detail

using namespace detail;

void record_stream(const Tensor& t, const Stream& s) {
  BRISK_CHECK(t.defined(), "cuda::record_stream", "the tensor is undefined");
  BRISK_CHECK(t.device().is_cuda(), "cuda::record_stream", "expects a CUDA tensor, got a tensor on ", t.device());
  const StorageImpl* st = t.impl()->storage.get();
  if (st == nullptr || st->data == nullptr) return;  // an empty tensor holds no block
  const int device = st->device.index >= 0 ? st->device.index : current_device_index();
  record_stream_ptr(st->data, device, static_cast<cudaStream_t>(s.handle()), s.device_index());
}

CudaMemoryStats memory_stats(int device) {
  return caching_allocator(resolve(device, "cuda::memory_stats"))->blocks().stats();
}
int64_t memory_allocated(int device) {
  return caching_allocator(resolve(device, "cuda::memory_allocated"))->blocks().stats().allocated;
}
int64_t max_memory_allocated(int device) {
  return caching_allocator(resolve(device, "cuda::max_memory_allocated"))->blocks().stats().peak_allocated;
}
int64_t memory_reserved(int device) {
  return caching_allocator(resolve(device, "cuda::memory_reserved"))->blocks().stats().reserved;
}
int64_t max_memory_reserved(int device) {
  return caching_allocator(resolve(device, "cuda::max_memory_reserved"))->blocks().stats().peak_reserved;
}
void reset_peak_memory_stats(int device) {
  caching_allocator(resolve(device, "cuda::reset_peak_memory_stats"))->blocks().reset_peak_stats();
}
std::string memory_summary(int device) {
  return caching_allocator(resolve(device, "cuda::memory_summary"))->blocks().summary();
}

void empty_cache() {
  // Every device whose allocator exists (none without a GPU).
  for (int d = 0; d < kMaxDevices; ++d)
    if (CudaCachingAllocator* a = device_slots()[d].load(std::memory_order_acquire)) a->blocks().empty_cache();
}

HostMemoryStats host_memory_stats() {
  const HostBlockStats s = host_allocator().blocks().stats();
  HostMemoryStats r;
  r.allocated = s.allocated;
  r.reserved = s.reserved;
  r.num_allocs = s.num_allocs;
  r.num_host_alloc = s.num_host_alloc;
  return r;
}

void empty_host_cache() { host_allocator().blocks().empty_cache(); }

}  // namespace brisk::cuda
