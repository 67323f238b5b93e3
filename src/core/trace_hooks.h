// The flag compile's tracer raises (Note [Kernel-level tracing] in
// compile/trace.cpp). Op front ends (profile_hooks.h), kernel lookups
// (dispatch.h) and sync points call the trace hooks only while it is set:
// otherwise the cost is one relaxed load and a branch not taken.
#pragma once
#include <atomic>
#include <cstddef>

namespace brisk::detail {
/// Threads tracing a function for compile now (defined in core/dispatch.cpp).
extern std::atomic<int> g_trace_threads;
inline bool tracing_any() { return g_trace_threads.load(std::memory_order_relaxed) != 0; }
/// Whether this thread is tracing now (outside a recorded kernel): a front
/// end may then leave out a host-side check of tensor data that the kernel
/// repeats (a read on the host would be a graph break).
bool tracing_this_thread();
/// The CPU allocator's hook while a thread traces: a block of `nbytes` at p
/// (compile/trace.cpp; kernels that take raw pointers write into such blocks).
void trace_alloc(void* p, size_t nbytes);
}  // namespace brisk::detail
