// brisk::profiler: where time and memory go, and what to fix (PyTorch's
// torch.profiler, in C++).
//
//   namespace prof = brisk::profiler;
//   prof::profile p(prof::ProfileOptions().record_shapes(true).profile_memory(true));
//   for (int i = 0; i < 10; ++i) {
//     prof::record_function step("train_step");
//     ...
//   }
//   p.stop();
//   std::cout << p.key_averages().table("self_cpu_time_total", 10);
//   p.export_chrome_trace("trace.json");           // opens in Perfetto
//   for (const prof::Finding& f : prof::advise(p.result())) std::cout << f << "\n";
//
// While a profile is active every op dispatched on any thread is recorded
// (name, input shapes and dtypes, thread, start, duration, bytes allocated),
// and so are backward nodes, optimizer steps, data-loader waits, copies and
// synchronising reads of tensor data. With no profile active, an op pays one
// relaxed atomic load. See docs/design/profiler.md.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "brisk/error.h"

namespace brisk::profiler {

enum class Activity : uint8_t { CPU, CUDA };

/// Options of a profile, with chainable setters:
/// `ProfileOptions().record_shapes(true).profile_memory(true)`.
struct ProfileOptions {
#define BRISK_PROFILER_ARG(T, name, init) \
 public:                                  \
  ProfileOptions& name(const T& v) {      \
    name##_ = v;                          \
    return *this;                         \
  }                                       \
  const T& name() const { return name##_; } \
                                          \
 private:                                 \
  T name##_ = init
  /// Activity::CUDA also records the kernels, copies and memsets the GPU
  /// runs (through CUPTI), linked to the ops that launched them; where that
  /// is impossible (no GPU, no CUPTI) ProfileResult::warnings says why.
  BRISK_PROFILER_ARG(std::vector<Activity>, activities, {Activity::CPU});
  /// Record each op's input shapes and dtypes.
  BRISK_PROFILER_ARG(bool, record_shapes, false);
  /// Record allocations and frees (bytes per op, memory counters in the trace).
  BRISK_PROFILER_ARG(bool, profile_memory, false);
  /// Keep the stack of enclosing record_function scopes with each event.
  BRISK_PROFILER_ARG(bool, with_stack, false);
#undef BRISK_PROFILER_ARG
};

/// What an event is.
enum class EventKind : uint8_t {
  Op,              ///< a dispatched op ("add", "matmul", "conv2d", ...)
  Backward,        ///< an autograd node run by the engine ("MulBackward0")
  UserScope,       ///< a record_function scope
  OptimizerStep,   ///< Optimizer::step ("AdamW.step")
  DataLoaderWait,  ///< the caller waiting for the next batch
  Sync,            ///< a read of tensor data by the host (item, nonzero, to(cpu), printing)
  Copy,            ///< a copy between devices, or to/from pinned memory
  // GPU activity (Activity::CUDA, recorded through CUPTI): on a track per
  // (device, stream), linked to the host event that launched it.
  Kernel,          ///< a kernel that ran on a GPU
  Memcpy,          ///< a copy the GPU performed (host<->device, device<->device)
  Memset,          ///< a memset the GPU performed
};
const char* kind_name(EventKind k);

/// One recorded interval. Events of one thread nest: `parent` is the index
/// (in ProfileResult::events) of the innermost enclosing event on the same
/// thread, or -1.
struct Event {
  std::string name;
  EventKind kind = EventKind::Op;
  int64_t start_ns = 0;  ///< since the profile started
  int64_t end_ns = 0;
  uint32_t thread = 0;   ///< small id, named in ProfileResult::threads
  int32_t parent = -1;
  int32_t depth = 0;
  /// record_shapes: one entry per tensor input ({} for a non-tensor).
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> dtypes;
  /// profile_memory: bytes allocated (and freed) while this event was the
  /// innermost one; counts of allocations served from the cache or not.
  int64_t self_alloc_bytes = 0, self_free_bytes = 0;
  int64_t self_allocs = 0, self_cache_misses = 0;
  /// Op events: grad mode was on and an input required grad, so the op
  /// recorded an autograd node.
  bool recorded_graph = false;
  /// Kind-specific detail: the optimizer implementation ("fused",
  /// "foreach", "for-loop") for OptimizerStep; the call ("item", "nonzero",
  /// "to", "print") for Sync; "set_to_none=false" for a zero_grad that
  /// zero-fills (a UserScope named "Optimizer.zero_grad" or "Module.zero_grad").
  std::string detail;
  /// with_stack: enclosing record_function names, outermost first.
  std::vector<std::string> stack;
  /// GPU events (Kernel, Memcpy, Memset): the device index, the CUDA stream
  /// id, CUPTI's correlation id of the launch, the bytes copied or set, and
  /// the index in ProfileResult::events of the host event (the innermost op,
  /// or other event, open on the launching thread) that launched it; -1 when
  /// unknown. `detail` of a kernel: "grid [x, y, z] block [x, y, z] registers
  /// R shared memory B". Host events keep the defaults.
  int32_t device = -1;
  int64_t stream = -1;
  uint64_t correlation_id = 0;
  int64_t bytes = 0;
  int32_t correlated_op = -1;
  int64_t duration_ns() const { return end_ns - start_ns; }
  /// Kernel, Memcpy or Memset.
  bool is_gpu() const { return kind == EventKind::Kernel || kind == EventKind::Memcpy || kind == EventKind::Memset; }
};

/// A point on the memory timeline (profile_memory): totals after an
/// allocation or free of `bytes` (negative for frees).
struct MemorySample {
  int64_t time_ns = 0;
  int64_t bytes = 0;
  int64_t allocated = 0;
  int64_t reserved = 0;
  uint32_t thread = 0;
};

struct ProfileResult {
  ProfileOptions options;
  std::vector<Event> events;               ///< ordered by start time per thread
  std::vector<MemorySample> memory;
  std::vector<std::string> threads;        ///< names, indexed by Event::thread; GPU tracks: "cuda:0 stream 7"
  int64_t duration_ns = 0;
  /// What the profile could not record, e.g. Activity::CUDA requested where
  /// CUPTI could not be loaded or no GPU is present; empty when all went well.
  std::vector<std::string> warnings;
};

/// One row of key_averages(): the events of one name (and input shapes, when
/// grouped by them) summed.
struct KeyAverage {
  std::string name;
  std::string input_shapes;  ///< "[[3, 4], [4]]" when grouped by shape
  int64_t count = 0;
  int64_t cpu_time_total_ns = 0;       ///< sum of durations
  int64_t self_cpu_time_total_ns = 0;  ///< minus time in child events
  int64_t cpu_memory_bytes = 0;        ///< allocated in the events and their children
  int64_t self_cpu_memory_bytes = 0;
  /// GPU time (Activity::CUDA): for host events, the durations of the
  /// kernels, copies and memsets they launched themselves (self) and with
  /// their descendants (total); for GPU events, their own durations.
  int64_t cuda_time_total_ns = 0;
  int64_t self_cuda_time_total_ns = 0;
};

class KeyAverages {
 public:
  KeyAverages(std::vector<KeyAverage> rows, int64_t total_self_ns) : rows_(std::move(rows)), total_self_ns_(total_self_ns) {}
  /// With GPU activity: `total_self_cuda_ns` is the sum of the GPU events'
  /// durations, and the table gets the CUDA columns.
  KeyAverages(std::vector<KeyAverage> rows, int64_t total_self_ns, int64_t total_self_cuda_ns, bool has_cuda)
      : rows_(std::move(rows)), total_self_ns_(total_self_ns), total_self_cuda_ns_(total_self_cuda_ns),
        has_cuda_(has_cuda) {}
  const std::vector<KeyAverage>& rows() const { return rows_; }
  /// The profile had GPU events (the table shows the CUDA columns).
  bool has_cuda() const { return has_cuda_; }
  /// PyTorch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total,
  /// CPU time avg, (with GPU activity: Self CUDA, Self CUDA %, CUDA total,
  /// CUDA time avg,) CPU Mem, Self CPU Mem, # of Calls (Input Shapes when
  /// grouped by shape), then "Self CPU time total: ..." (and "Self CUDA time
  /// total: ..."). sort_by is one of cpu_time_total, self_cpu_time_total,
  /// cpu_time_avg, cuda_time_total, self_cuda_time_total, cuda_time_avg,
  /// count, cpu_memory_usage, self_cpu_memory_usage; row_limit <= 0 prints
  /// all rows.
  std::string table(const std::string& sort_by = "cpu_time_total", int row_limit = 100) const;

 private:
  std::vector<KeyAverage> rows_;
  int64_t total_self_ns_ = 0;
  int64_t total_self_cuda_ns_ = 0;
  bool has_cuda_ = false;
};

/// Averages per event name (and input shapes with group_by_input_shape).
KeyAverages key_averages(const ProfileResult& r, bool group_by_input_shape = false);

/// Chrome trace-event JSON (Perfetto, chrome://tracing): complete events with
/// args (input dims, types), memory counters, thread names; GPU events on a
/// process per device and a thread per stream, with flow arrows from the
/// launching op to each kernel or copy. Written atomically.
void export_chrome_trace(const ProfileResult& r, const std::string& path);
/// Reads a trace written by export_chrome_trace back (for the command-line
/// summariser); throws brisk::Error on a malformed file.
ProfileResult load_chrome_trace(const std::string& path);
/// A self-contained HTML report (timeline, per-op chart, the table and the
/// advice), no network access needed to view it. Written atomically.
void export_html_report(const ProfileResult& r, const std::string& path);

/// An active profile. Only one profile is active at a time (a second throws).
/// Stops at stop() or at the end of its scope.
class profile {
 public:
  explicit profile(ProfileOptions options = {});
  ~profile();
  profile(const profile&) = delete;
  profile& operator=(const profile&) = delete;
  void stop();
  bool active() const { return active_; }
  /// The events recorded (stops the profile if still active).
  const ProfileResult& result();
  KeyAverages key_averages(bool group_by_input_shape = false) { return profiler::key_averages(result(), group_by_input_shape); }
  void export_chrome_trace(const std::string& path) { profiler::export_chrome_trace(result(), path); }

 private:
  ProfileResult result_;
  bool active_ = false;
};

/// A named user scope: shows as an event enclosing what runs inside it.
/// Costs one relaxed atomic load when no profile is active.
class record_function {
 public:
  explicit record_function(const char* name);
  explicit record_function(std::string name);
  ~record_function();
  record_function(const record_function&) = delete;
  record_function& operator=(const record_function&) = delete;

 private:
  int32_t index_ = -1;  ///< the open event, -1 when not profiling
  bool pushed_ = false; ///< pushed a CUDA correlation id (Activity::CUDA)
};

/// True while a profile is active (one relaxed atomic load).
bool is_enabled();

// ---- advisor ----------------------------------------------------------------

enum class Rule : uint8_t {
  SyncInLoop,         ///< 1. host reads of tensor data inside a loop
  CpuTensorThenCopy,  ///< 2. tensors created on the CPU, then copied to a device
  LaunchBound,        ///< 3. many consecutive small ops dominated by dispatch cost
  ZeroedGrads,        ///< 4. gradients zero-filled before backward instead of set to none
  ForLoopOptimizer,   ///< 5. for-loop optimizer where foreach/fused exists
  GradModeInference,  ///< 6. forward ops recording a graph that no backward consumes
  AllocatingOps,      ///< 7. out-of-place ops allocating in a hot loop; allocator cache misses
  DataLoaderStall,    ///< 8. compute waiting for the next batch
  UnpinnedCopy,       ///< 9a. (CUDA) non-blocking copies from unpinned memory
  TensorCoreMath,     ///< 9b. (CUDA) float32 matmuls/convolutions autocast would run on tensor
                      ///<    cores; half-precision matrix dimensions not multiple of 8; (CPU
                      ///<    with AVX512_BF16/AMX) float32 matmuls bfloat16 autocast would speed up
  FusablePointwise,   ///< 10. chains of pointwise ops on big tensors that compile would fuse
};
const char* rule_name(Rule r);

/// One finding: what happened, how often, what it cost, where, and the fix.
struct Finding {
  Rule rule;
  std::string title;
  int64_t count = 0;
  int64_t time_ns = 0;  ///< time the pattern cost (estimated where it cannot be measured)
  std::vector<std::string> where;  ///< "op (scope > scope)", most costly first
  std::string fix;
};
std::ostream& operator<<(std::ostream& os, const Finding& f);

/// The findings for a profile, most costly first; empty when nothing is wrong.
std::vector<Finding> advise(const ProfileResult& r);
/// The findings as text (the advisor section of the table and the report).
std::string advice_text(const std::vector<Finding>& findings);

}  // namespace brisk::profiler

namespace brisk {

/// What a synchronising call does (set_sync_debug_mode).
enum class SyncDebugMode : uint8_t { Off, Warn, Error };
/// Warn (to stderr, once per call site) or throw brisk::Error at every
/// synchronising call: item(), nonzero(), copies to the host, printing.
void set_sync_debug_mode(SyncDebugMode mode);
SyncDebugMode get_sync_debug_mode();

}  // namespace brisk
