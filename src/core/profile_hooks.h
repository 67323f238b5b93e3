// The profiler's recording hooks, used by op front ends, the autograd engine,
// the optimizers, the data loader and the allocator. See
// docs/design/profiler.md. They live in core, below every op (DESIGN.md,
// "Layers"): core and the backends call them without depending on the
// profiler; src/profiler defines them (the flags, the event buffers).
//
//   Tensor add(const Tensor& a, const Tensor& b) {
//     BRISK_PROFILE_OP("add", a, b);  // records name, inputs, start, end, thread
//     ...
//   }
//
// Note [Profiler fast path]
// With no profile active, a hook costs one relaxed load of g_active and a
// not-taken branch; everything else (the clock, the thread's buffer, shapes)
// sits in out-of-line functions. Events go to a per-thread buffer without a
// lock; stop() merges the buffers (see Note [Profiler buffers] in
// profiler.cpp).
#pragma once
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "brisk/profiler.h"
#include "brisk/tensor.h"
#include "core/trace_hooks.h"

namespace brisk::profiler::detail {

// Hidden: read inside libbrisk only, so each read is one RIP-relative load
// (not a load of its address from the GOT first).
#define BRISK_PROFILER_INTERNAL __attribute__((visibility("hidden")))
/// A profile is recording.
extern std::atomic<bool> g_active BRISK_PROFILER_INTERNAL;
/// A profile is recording with profile_memory (read by the allocator).
extern std::atomic<bool> g_memory BRISK_PROFILER_INTERNAL;

inline bool active() { return g_active.load(std::memory_order_relaxed); }

/// One argument of an op as the profiler records it: a tensor (its shape and
/// dtype), a Scalar, or a list of tensors (one entry per tensor).
struct InputRef {
  enum Kind : uint8_t { None, TensorArg, ScalarArg, ListArg };
  const void* p = nullptr;
  Kind kind = None;
};
inline InputRef input_ref(const Tensor& t) { return {&t, InputRef::TensorArg}; }
inline InputRef input_ref(const Scalar& s) { return {&s, InputRef::ScalarArg}; }
inline InputRef input_ref(const std::vector<Tensor>& ts) { return {&ts, InputRef::ListArg}; }
inline InputRef input_ref(const std::optional<Tensor>& t) {
  return t ? InputRef{&*t, InputRef::TensorArg} : InputRef{};
}
inline InputRef input_ref(const std::optional<Scalar>& s) {
  return s ? InputRef{&*s, InputRef::ScalarArg} : InputRef{};
}

/// compile's hook on an op front end (defined in compile/trace.cpp): checks
/// the op may be traced and registers the tensors it reads.
void trace_op(const char* name, const InputRef* inputs, int n);

/// An open event: the thread's buffer and the event's slot in it.
struct OpenEvent {
  void* buffer = nullptr;
  int32_t index = -1;
  uint32_t generation = 0;
  bool pushed = false;  ///< pushed a GPU correlation id: close_event pops it (Note [GPU activity hooks])
};

/// Opens an event on this thread (kind Op with inputs; other kinds with a
/// detail). `name` and `detail` must outlive the profile (string literals);
/// the *_str forms copy the string once per distinct value.
OpenEvent open_op(const char* name, const InputRef* inputs, int n);
OpenEvent open_event(EventKind kind, const char* name, const char* detail = nullptr);
OpenEvent open_event_str(EventKind kind, const std::string& name, const char* detail = nullptr);
void close_event(const OpenEvent& e);

/// RAII form of open_op/close_event: BRISK_PROFILE_OP("add", a, b).
class OpScope {
 public:
  template <class... Ts>
  [[gnu::always_inline]] explicit OpScope(const char* name, const Ts&... inputs) {
    if (BRISK_UNLIKELY(active())) open(name, inputs...);
    if (BRISK_UNLIKELY(::brisk::detail::tracing_any())) trace(name, inputs...);
  }
  [[gnu::always_inline]] ~OpScope() {
    if (BRISK_UNLIKELY(e_.index >= 0)) close_event(e_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  template <class... Ts>
  [[gnu::noinline, gnu::cold]] void open(const char* name, const Ts&... inputs) {
    const InputRef refs[sizeof...(Ts) + 1] = {input_ref(inputs)..., InputRef{}};
    e_ = open_op(name, refs, static_cast<int>(sizeof...(Ts)));
  }
  template <class... Ts>
  [[gnu::noinline, gnu::cold]] static void trace(const char* name, const Ts&... inputs) {
    const InputRef refs[sizeof...(Ts) + 1] = {input_ref(inputs)..., InputRef{}};
    trace_op(name, refs, static_cast<int>(sizeof...(Ts)));
  }
  OpenEvent e_;
};

/// RAII event of another kind: ScopedEvent ev(EventKind::Backward, name).
/// The name is copied (interned) only while a profile is active.
class ScopedEvent {
 public:
  [[gnu::always_inline]] ScopedEvent(EventKind kind, const char* name, const char* detail = nullptr) {
    if (BRISK_UNLIKELY(active())) e_ = open_event(kind, name, detail);
  }
  [[gnu::always_inline]] ~ScopedEvent() {
    if (BRISK_UNLIKELY(e_.index >= 0)) close_event(e_);
  }
  /// An event whose name (a std::string) and detail (a static string) are
  /// computed only while a profile is active:
  /// `auto ev = ScopedEvent::lazy(EventKind::Backward, [&] { return node.name(); });`
  template <class F>
  static ScopedEvent lazy(EventKind kind, const F& make_name) {
    return lazy(kind, make_name, [] { return static_cast<const char*>(nullptr); });
  }
  template <class F, class D>
  static ScopedEvent lazy(EventKind kind, const F& make_name, const D& make_detail) {
    ScopedEvent ev;
    if (BRISK_UNLIKELY(active())) ev.e_ = open_event_str(kind, make_name(), make_detail());
    return ev;
  }
  ScopedEvent(ScopedEvent&& o) noexcept : e_(o.e_) { o.e_.index = -1; }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;

 private:
  ScopedEvent() = default;
  OpenEvent e_;
};

/// The allocator's hooks (called only while g_memory is set): one allocation
/// or free of `bytes`, and the allocator's totals after it.
void on_alloc(int64_t bytes, bool cache_miss, int64_t allocated, int64_t reserved);
void on_free(int64_t bytes, int64_t allocated, int64_t reserved);

/// Names the calling thread in profiles ("dataloader 0"); pool threads are
/// named "worker N" and the thread that started the profile "main".
void set_thread_name(const std::string& name);

}  // namespace brisk::profiler::detail

namespace brisk::detail {

/// Sync debug mode (set_sync_debug_mode) as an atomic, read on each sync point.
extern std::atomic<uint8_t> g_sync_debug_mode BRISK_PROFILER_INTERNAL;
void sync_point_slow(const char* call, const Tensor& t);
/// compile's hook on a sync point (a data-dependent read on the host).
void trace_sync(const char* call);

/// Every call that would wait for a device on a GPU (item, nonzero, copies to
/// the host, printing) goes through here: it is recorded as a Sync event
/// (detail = call) and checked against the sync debug mode.
/// CUDA graph captures in progress on any thread (CUDAGraph::capture_begin
/// to capture_end): while nonzero, sync points take the slow path, which
/// refuses a synchronizing call on a CUDA tensor from a capturing thread.
extern std::atomic<int> g_graph_captures BRISK_PROFILER_INTERNAL;
/// Marks the calling thread as capturing (src/backend/cuda/graph.cpp).
void set_thread_capturing(bool on);
/// Whether the calling thread captures a CUDA graph now.
bool thread_capturing();
inline void sync_point(const char* call, const Tensor& t) {
  if (BRISK_UNLIKELY(profiler::detail::active() || g_sync_debug_mode.load(std::memory_order_relaxed) != 0 ||
                     g_graph_captures.load(std::memory_order_relaxed) != 0))
    sync_point_slow(call, t);
  if (BRISK_UNLIKELY(tracing_any())) trace_sync(call);
}

/// Around brisk's own input checks that read tensor data (class indices in
/// range, integer divisors not zero): a GPU backend makes them device-side
/// asserts, so their reads are not sync points.
class DeviceCheckScope {
 public:
  DeviceCheckScope();
  ~DeviceCheckScope();
  DeviceCheckScope(const DeviceCheckScope&) = delete;
  DeviceCheckScope& operator=(const DeviceCheckScope&) = delete;

 private:
  bool prev_;
};

}  // namespace brisk::detail

#define BRISK_PROFILE_CONCAT2(a, b) a##b
#define BRISK_PROFILE_CONCAT(a, b) BRISK_PROFILE_CONCAT2(a, b)
/// Records the enclosing op front end while a profile is active:
/// `BRISK_PROFILE_OP("add_", self, other);` at the top of the function.
#define BRISK_PROFILE_OP(name, ...) \
  ::brisk::profiler::detail::OpScope BRISK_PROFILE_CONCAT(brisk_profile_op_, __LINE__)(name __VA_OPT__(, ) __VA_ARGS__)
