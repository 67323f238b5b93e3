// Software prefetches for the loops that stream long runs: the eager loops
// (Note [Prefetching in the eager loops], backend/cpu/loops.h) and the
// kernels compile generates (Note [Prefetching in generated kernels],
// compile/codegen_cpu.cpp, through compile/cpu_prelude.h). No dependencies:
// the generated code includes it too. Prefetching an address past the end
// of a tensor does not fault.
#pragma once

#ifndef BRISK_CPU_ISA
#error "prefetch.h is for the per-ISA kernel files and generated code"
#endif

namespace brisk {
namespace cpu {
// (per ISA: the definitions differ between variants)
namespace BRISK_CPU_ISA {

/// Asks for the line at p, to be read.
inline void prefetch_read(const void* p) { __builtin_prefetch(p, 0, 3); }
/// Asks for the line at p, to be written: prefetchw where the code is built
/// for AVX-512 (every AVX-512 core has it; the line arrives owned, so the
/// store does not wait for it), __builtin_prefetch's write hint elsewhere
/// (a read prefetch without -mprfchw).
inline void prefetch_write(const void* p) {
#if defined(__AVX512F__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
