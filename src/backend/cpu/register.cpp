// Picks the widest kernel variant this CPU runs and fills the CPU slots of
// the kernel table. GEMM goes to BLAS and is not per-ISA.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/dispatch.h"

namespace brisk {
namespace cpu {
namespace base { void register_all(); }
namespace avx2 { void register_all(); }
namespace avx512 { void register_all(); }
void register_blas_kernels();

/// "avx512", "avx2" or "base"; BRISK_CPU_CAPABILITY in the environment can lower it.
const char* cpu_capability() {
  static const char* cap = [] {
    __builtin_cpu_init();
    const char* forced = std::getenv("BRISK_CPU_CAPABILITY");
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (forced && std::strcmp(forced, "base") == 0) return "base";
    if (forced && std::strcmp(forced, "avx2") == 0) return avx2 ? "avx2" : "base";
    return avx512 ? "avx512" : avx2 ? "avx2" : "base";
  }();
  return cap;
}

/// Whether the eager loops may prefetch long runs in software (Note
/// [Prefetching in the eager loops], backend/cpu/loops.h);
/// BRISK_CPU_PREFETCH=0 in the environment turns it off.
bool software_prefetch() {
  static const bool on = [] {
    const char* e = std::getenv("BRISK_CPU_PREFETCH");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}
}  // namespace cpu

void register_cpu_kernels() {
  const char* cap = cpu::cpu_capability();
  bool done = false;
#ifdef BRISK_HAVE_ISA_avx512
  if (!done && std::strcmp(cap, "avx512") == 0) cpu::avx512::register_all(), done = true;
#endif
#ifdef BRISK_HAVE_ISA_avx2
  if (!done && (std::strcmp(cap, "avx512") == 0 || std::strcmp(cap, "avx2") == 0))
    cpu::avx2::register_all(), done = true;
#endif
#ifdef BRISK_HAVE_ISA_base
  if (!done) cpu::base::register_all(), done = true;
#endif
  if (!done) {
    // A development build without the base variant on a CPU that lacks the built one.
    std::fprintf(stderr, "brisk: no CPU kernel variant built for this CPU (%s)\n", cap);
    std::abort();
  }
  cpu::register_blas_kernels();
}

}  // namespace brisk
