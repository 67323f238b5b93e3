// The flag compile's tracer raises (Note [Kernel-level tracing] in
// compile/trace.cpp). Op front ends (profile_hooks.h), kernel lookups
// (dispatch.h) and sync points call the trace hooks only while it is set:
// otherwise the cost is one relaxed load and a branch not taken.
#pragma once
#include <atomic>

namespace brisk::detail {
/// Threads tracing a function for compile now (defined in core/dispatch.cpp).
extern std::atomic<int> g_trace_threads __attribute__((visibility("hidden")));
inline bool tracing_any() { return g_trace_threads.load(std::memory_order_relaxed) != 0; }
}  // namespace brisk::detail
