// Placeholder: plain cudaMalloc/cudaHostAlloc without caching (replaced by the caching allocator).
#include "backend/cuda/caching_allocator.h"

#include <string>

#include "backend/cuda/cuda_common.h"
#include "brisk/tensor.h"

namespace brisk::cuda {
namespace detail {
namespace {
class Plain : public Allocator {
 public:
  explicit Plain(bool host) : host_(host) {}
  void* allocate(size_t n) override {
    if (n == 0) return nullptr;
    void* p = nullptr;
    if (host_) BRISK_CUDA_CHECK(cudaHostAlloc(&p, n, cudaHostAllocDefault), "pin_memory");
    else BRISK_CUDA_CHECK(cudaMalloc(&p, n), "empty");
    return p;
  }
  void free(void* p, size_t) override {
    if (!p) return;
    if (host_) (void)cudaFreeHost(p);
    else (void)cudaFree(p);
  }
  bool host_;
};
}  // namespace
Allocator* device_allocator(int) {
  static Plain a(false);
  return &a;
}
Allocator* pinned_host_allocator() {
  static Plain a(true);
  return &a;
}
bool is_pinned_ptr(const void*) { return false; }
void record_stream_ptr(void*, int, cudaStream_t) {}
void record_host_use(const void*, cudaStream_t) {}
}  // namespace detail

void record_stream(const Tensor&, const Stream&) {}
CudaMemoryStats memory_stats(int) { return {}; }
int64_t memory_allocated(int) { return 0; }
int64_t max_memory_allocated(int) { return 0; }
int64_t memory_reserved(int) { return 0; }
int64_t max_memory_reserved(int) { return 0; }
void reset_peak_memory_stats(int) {}
std::string memory_summary(int) { return {}; }
void empty_cache() {}
HostMemoryStats host_memory_stats() { return {}; }
void empty_host_cache() {}
}  // namespace brisk::cuda
