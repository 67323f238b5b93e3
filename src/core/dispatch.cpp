#include "core/dispatch.h"

namespace brisk {
namespace detail {

AnyFn g_kernel_table[kNumOps][kNumDeviceTypes] = {};
std::atomic<int> g_trace_threads{0};
uint32_t g_kernel_dtypes[kNumOps][kNumDeviceTypes] = {};

void kernel_missing(OpId op, DeviceType dev, const char* caller) {
  BRISK_FAIL(caller, "not implemented on ", dev, " (kernel '", op_name(op), "')");
}

namespace {
// Fills the CPU slots before main() runs (and before any static tensor).
struct RegisterBackends {
  RegisterBackends() {
    register_cpu_kernels();
#ifdef BRISK_HAVE_CUDA
    register_cuda_kernels();
#endif
  }
} g_register_backends;
}  // namespace

}  // namespace detail

const char* op_name(OpId op) {
  static const char* const names[] = {
#define BRISK_NAME(name, sig) #name,
      BRISK_FORALL_OPS(BRISK_NAME)
#undef BRISK_NAME
  };
  return names[static_cast<int>(op)];
}

}  // namespace brisk
