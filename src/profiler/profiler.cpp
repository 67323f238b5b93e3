// The profiler's recording: per-thread event buffers, the profile scope,
// record_function, the allocator and sync-point hooks. See
// docs/design/profiler.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "brisk/autograd.h"
#include "brisk/profiler.h"
#include "core/parallel.h"
#include "profiler/gpu_activity.h"
#include "profiler/record.h"

namespace brisk::profiler {

const char* kind_name(EventKind k) {
  switch (k) {
    case EventKind::Op: return "op";
    case EventKind::Backward: return "backward";
    case EventKind::UserScope: return "user_scope";
    case EventKind::OptimizerStep: return "optimizer_step";
    case EventKind::DataLoaderWait: return "dataloader_wait";
    case EventKind::Sync: return "sync";
    case EventKind::Copy: return "copy";
    case EventKind::Kernel: return "kernel";
    case EventKind::Memcpy: return "memcpy";
    case EventKind::Memset: return "memset";
  }
  return "?";
}

namespace detail {

BRISK_PROFILER_INTERNAL std::atomic<bool> g_active{false};
BRISK_PROFILER_INTERNAL std::atomic<bool> g_memory{false};

namespace {
// The GPU activity recorder (Note [GPU activity hooks]); set before main().
const GpuActivityBackend* g_gpu_backend = nullptr;
// A profile records GPU activity: events push correlation ids. Written before
// g_active is set and cleared after it is, read in the cold open path only.
std::atomic<bool> g_gpu{false};
}  // namespace

void set_gpu_activity_backend(const GpuActivityBackend* backend) { g_gpu_backend = backend; }
const GpuActivityBackend* gpu_activity_backend() { return g_gpu_backend; }

namespace {

// Note [Profiler buffers]
// Each thread appends its events to its own ThreadBuffer, with no lock: the
// buffer is registered once per profile (under g_mu) and then only its
// owner writes it. stop() must not read a buffer while its owner writes, and
// an owner may be in the middle of an event when stop() runs (a data-loader
// worker prefetching, say). So every write is bracketed by the owner's
// `busy` flag, a Dekker-style handshake:
//   owner: busy = 1 (seq_cst); if g_active and the generation matches: write; busy = 0
//   stop:  g_active = 0 (seq_cst); wait until busy == 0 on every buffer
// After stop's wait no owner can write: one that raised busy later sees
// g_active false. Buffers are never freed, only recycled (a thread that
// exits gives its buffer back), so a stale pointer stays valid. Events sit
// in fixed-size chunks that never move; input shapes in a separate chunked
// pool; names are static strings or interned once per buffer, so recording
// allocates nothing per event in steady state.

constexpr uint32_t kChunkBits = 11;
constexpr uint32_t kChunk = 1u << kChunkBits;  // events per chunk
constexpr size_t kShapeChunk = size_t(1) << 14;  // int64 per shape chunk

// Input encoding in the shape pool: one header per input, then its dims.
constexpr int64_t kCodeNone = 0xFF, kCodeScalar = 0xFE;

struct RawEvent {
  int64_t start = 0, end = 0;  // steady clock, ns; end 0 while open
  const char* name = nullptr;
  const char* detail = nullptr;
  const int64_t* inputs = nullptr;  // packed shapes and dtypes
  int64_t alloc_bytes = 0, free_bytes = 0;
  int32_t allocs = 0, misses = 0;
  int32_t parent = -1;
  uint16_t ninputs = 0;
  EventKind kind = EventKind::Op;
  bool recorded_graph = false;
};

struct RawSample {
  int64_t time, bytes, allocated, reserved;
};

struct ThreadBuffer {
  std::atomic<uint32_t> busy{0};
  uint32_t generation = 0;  // the profile it is registered with
  uint32_t thread_id = 0;
  bool orphan = false;      // its thread exited while registered
  int32_t current = -1;     // innermost open event
  uint32_t size = 0;
  std::vector<RawEvent*> chunks;
  std::vector<int64_t*> shape_chunks;
  size_t shape_used = kShapeChunk, shape_cap = kShapeChunk;
  std::vector<RawSample> samples;
  std::unordered_set<std::string> interned;

  ~ThreadBuffer() = delete;  // never freed (see the Note)

  RawEvent& at(uint32_t i) { return chunks[i >> kChunkBits][i & (kChunk - 1)]; }
  RawEvent& push() {
    const uint32_t c = size >> kChunkBits;
    if (c == chunks.size()) chunks.push_back(new RawEvent[kChunk]);
    RawEvent& e = chunks[c][size & (kChunk - 1)];
    e = RawEvent();
    ++size;
    return e;
  }
  int64_t* shape_space(size_t n) {
    if (shape_used + n > shape_cap) {
      shape_cap = std::max(kShapeChunk, n);
      shape_chunks.push_back(new int64_t[shape_cap]);
      shape_used = 0;
    }
    int64_t* p = shape_chunks.back() + shape_used;
    shape_used += n;
    return p;
  }
  const char* intern(const std::string& s) { return interned.insert(s).first->c_str(); }
  // Empties the buffer for a new profile, keeping one chunk of each kind.
  void reset() {
    for (size_t i = 1; i < chunks.size(); ++i) delete[] chunks[i];
    if (chunks.size() > 1) chunks.erase(chunks.begin() + 1, chunks.end());
    for (int64_t* p : shape_chunks) delete[] p;
    shape_chunks.clear();
    shape_used = shape_cap = kShapeChunk;
    samples.clear();
    if (samples.capacity() > 4096) samples.shrink_to_fit();
    interned.clear();
    size = 0;
    current = -1;
    orphan = false;
  }
};

struct State {
  ProfileOptions options;
  uint32_t generation = 0;
  int64_t t0 = 0;
  bool gpu = false;                   // recording GPU activity
  std::vector<std::string> warnings;  // for ProfileResult::warnings
  std::vector<GpuRecord> gpu_records;
  std::thread::id main_thread;
  std::vector<ThreadBuffer*> buffers;  // index: thread id
  std::vector<std::string> names;
};

std::atomic<uint32_t> g_generation{0};
bool g_record_shapes = false;  // written before g_active is set

struct Registry {
  std::mutex mu;
  State* state = nullptr;
  std::vector<ThreadBuffer*> free_buffers;
};
Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may outlive statics
  return *r;
}

// Per-thread state, trivially destructible (see Note [Free lists at thread
// exit] in core/tensor_impl.cpp for the pattern).
struct ThreadSlot {
  ThreadBuffer* buffer;
  bool closed;   // the thread is exiting: record nothing more
  bool guarded;  // the exit guard is registered
  char name[48];
};
constinit thread_local ThreadSlot t_slot BRISK_TLS_FAST{};

struct ThreadGuard {
  ThreadGuard() = default;
  ~ThreadGuard() {
    Registry& r = registry();
    std::lock_guard<std::mutex> g(r.mu);
    ThreadBuffer* b = t_slot.buffer;
    t_slot.closed = true;
    t_slot.buffer = nullptr;
    if (!b) return;
    if (r.state && b->generation == r.state->generation)
      b->orphan = true;  // stop() merges its events, then recycles it
    else
      r.free_buffers.push_back(b);
  }
};
thread_local ThreadGuard t_guard;

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string thread_name(const State& st) {
  if (std::this_thread::get_id() == st.main_thread) return "main";
  if (t_slot.name[0]) return t_slot.name;
#ifdef _OPENMP
  if (omp_in_parallel()) return "worker " + std::to_string(omp_get_thread_num());
#endif
  return "thread " + std::to_string(st.buffers.size());
}

// Registers the calling thread with the profile `st` (r.mu held).
ThreadBuffer* register_thread_locked(Registry& r, State* st) {
  ThreadBuffer* b = t_slot.buffer;
  if (!b) {
    if (!r.free_buffers.empty()) {
      b = r.free_buffers.back();
      r.free_buffers.pop_back();
    } else {
      b = new ThreadBuffer();
    }
    t_slot.buffer = b;
    if (!t_slot.guarded) {
      t_slot.guarded = true;
      (void)&t_guard;  // odr-use: registers the guard with the thread's exit
    }
  }
  if (b->generation == st->generation) return b;
  b->reset();
  b->generation = st->generation;
  b->thread_id = static_cast<uint32_t>(st->buffers.size());
  st->names.push_back(thread_name(*st));
  st->buffers.push_back(b);
  return b;
}

// Registers the calling thread with the active profile; null when none.
[[gnu::noinline]] ThreadBuffer* register_thread() {
  if (t_slot.closed) return nullptr;
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  if (!r.state) return nullptr;
  return register_thread_locked(r, r.state);
}

// The calling thread's buffer with `busy` raised, or null when no profile
// records (see Note [Profiler buffers]). Pair with release().
inline ThreadBuffer* acquire() {
  ThreadBuffer* b = t_slot.buffer;
  const uint32_t gen = g_generation.load(std::memory_order_acquire);
  if (BRISK_UNLIKELY(!b || b->generation != gen)) {
    b = register_thread();
    if (!b) return nullptr;
  }
  b->busy.exchange(1, std::memory_order_seq_cst);
  if (BRISK_UNLIKELY(!g_active.load(std::memory_order_seq_cst) ||
                     b->generation != g_generation.load(std::memory_order_relaxed))) {
    b->busy.store(0, std::memory_order_release);
    return nullptr;
  }
  return b;
}
inline void release(ThreadBuffer* b) { b->busy.store(0, std::memory_order_release); }

int64_t input_code(ScalarType t) { return static_cast<int64_t>(static_cast<uint8_t>(t)); }

// Packs the inputs' shapes and dtypes into the buffer's shape pool.
void pack_inputs(ThreadBuffer* b, RawEvent& e, const InputRef* in, int n) {
  size_t words = 0, entries = 0;
  for (int i = 0; i < n; ++i) {
    const InputRef& r = in[i];
    if (r.kind == InputRef::TensorArg) {
      const auto* t = static_cast<const Tensor*>(r.p);
      words += 1 + (t->defined() ? static_cast<size_t>(t->dim()) : 0);
      ++entries;
    } else if (r.kind == InputRef::ListArg) {
      for (const Tensor& t : *static_cast<const std::vector<Tensor>*>(r.p)) {
        words += 1 + (t.defined() ? static_cast<size_t>(t.dim()) : 0);
        ++entries;
      }
    } else {
      words += 1;
      ++entries;
    }
  }
  if (entries == 0) return;
  entries = std::min<size_t>(entries, 0xFFFF);
  int64_t* p = b->shape_space(words);
  e.inputs = p;
  e.ninputs = static_cast<uint16_t>(entries);
  auto put_tensor = [&](const Tensor& t) {
    if (!t.defined()) {
      *p++ = kCodeNone;
      return;
    }
    const int64_t nd = t.dim();
    *p++ = (nd << 8) | input_code(t.dtype());
    for (int64_t d : t.sizes()) *p++ = d;
  };
  for (int i = 0; i < n; ++i) {
    const InputRef& r = in[i];
    if (r.kind == InputRef::TensorArg)
      put_tensor(*static_cast<const Tensor*>(r.p));
    else if (r.kind == InputRef::ListArg)
      for (const Tensor& t : *static_cast<const std::vector<Tensor>*>(r.p)) put_tensor(t);
    else
      *p++ = r.kind == InputRef::ScalarArg ? kCodeScalar : kCodeNone;
  }
}

bool any_needs_grad(const InputRef* in, int n) {
  for (int i = 0; i < n; ++i) {
    const InputRef& r = in[i];
    if (r.kind == InputRef::TensorArg) {
      const auto* t = static_cast<const Tensor*>(r.p);
      if (t->defined() && t->requires_grad()) return true;
    } else if (r.kind == InputRef::ListArg) {
      for (const Tensor& t : *static_cast<const std::vector<Tensor>*>(r.p))
        if (t.defined() && t.requires_grad()) return true;
    }
  }
  return false;
}

OpenEvent open_common(EventKind kind, const char* name, const std::string* dyn_name, const char* detail,
                      const InputRef* in, int n) {
  ThreadBuffer* b = acquire();
  if (!b) return {};
  const int32_t idx = static_cast<int32_t>(b->size);
  RawEvent& e = b->push();
  e.kind = kind;
  e.name = dyn_name ? b->intern(*dyn_name) : name;
  e.detail = detail;
  e.parent = b->current;
  if (in) {
    if (kind == EventKind::Op) e.recorded_graph = GradMode::is_enabled() && any_needs_grad(in, n);
    if (g_record_shapes) pack_inputs(b, e, in, n);
  }
  b->current = idx;
  const uint32_t gen = b->generation;
  OpenEvent oe{b, idx, gen};
  if (g_gpu.load(std::memory_order_relaxed)) {
    // Kernels launched until this event closes are tagged with it.
    g_gpu_backend->push(external_id(gen, b->thread_id, static_cast<uint32_t>(idx)));
    oe.pushed = true;
  }
  e.start = now_ns();
  release(b);
  return oe;
}

void sample(ThreadBuffer* b, int64_t bytes, int64_t allocated, int64_t reserved) {
  b->samples.push_back({now_ns(), bytes, allocated, reserved});
}

}  // namespace

OpenEvent open_op(const char* name, const InputRef* inputs, int n) {
  return open_common(EventKind::Op, name, nullptr, nullptr, inputs, n);
}
OpenEvent open_event(EventKind kind, const char* name, const char* detail) {
  return open_common(kind, name, nullptr, detail, nullptr, 0);
}
OpenEvent open_event_str(EventKind kind, const std::string& name, const char* detail) {
  return open_common(kind, nullptr, &name, detail, nullptr, 0);
}

void close_event(const OpenEvent& oe) {
  // Pop even when the profile has stopped meanwhile: the thread's stack of
  // correlation ids stays balanced.
  if (oe.pushed) g_gpu_backend->pop();
  const int64_t t = now_ns();
  auto* b = static_cast<ThreadBuffer*>(oe.buffer);
  if (b != t_slot.buffer) return;
  b->busy.exchange(1, std::memory_order_seq_cst);
  if (g_active.load(std::memory_order_seq_cst) && b->generation == oe.generation &&
      static_cast<uint32_t>(oe.index) < b->size) {
    RawEvent& e = b->at(static_cast<uint32_t>(oe.index));
    e.end = t;
    b->current = e.parent;
  }
  release(b);
}

void on_alloc(int64_t bytes, bool cache_miss, int64_t allocated, int64_t reserved) {
  ThreadBuffer* b = acquire();
  if (!b) return;
  if (b->current >= 0) {
    RawEvent& e = b->at(static_cast<uint32_t>(b->current));
    e.alloc_bytes += bytes;
    ++e.allocs;
    e.misses += cache_miss;
  }
  sample(b, bytes, allocated, reserved);
  release(b);
}

void on_free(int64_t bytes, int64_t allocated, int64_t reserved) {
  ThreadBuffer* b = acquire();
  if (!b) return;
  if (b->current >= 0) b->at(static_cast<uint32_t>(b->current)).free_bytes += bytes;
  sample(b, -bytes, allocated, reserved);
  release(b);
}

void set_thread_name(const std::string& name) {
  const size_t n = std::min(name.size(), sizeof(t_slot.name) - 1);
  std::memcpy(t_slot.name, name.data(), n);
  t_slot.name[n] = '\0';
}

namespace {

const char* dtype_string(int64_t code) {
  if (code == kCodeScalar) return "Scalar";
  if (code == kCodeNone) return "";
  switch (static_cast<ScalarType>(static_cast<int8_t>(code))) {
    case kBool: return "bool";
    case kUInt8: return "uint8";
    case kInt8: return "int8";
    case kInt16: return "int16";
    case kInt32: return "int32";
    case kInt64: return "int64";
    case kHalf: return "float16";
    case kBFloat16: return "bfloat16";
    case kFloat: return "float32";
    case kDouble: return "float64";
    default: return "undefined";
  }
}

// Adds the GPU records to a merged result: one track ("thread") per (device,
// stream) after the host threads, each event linked to the host event whose
// correlation id was on top of the launching thread's stack, then merged
// into the host events by start time (host events first at equal starts),
// parent and correlated_op indices remapped.
void add_gpu_events(State& st, int64_t t_end, const std::vector<std::vector<int32_t>>& global,
                    ProfileResult& out) {
  std::map<std::pair<int32_t, uint32_t>, uint32_t> tracks;
  for (const GpuRecord& g : st.gpu_records) tracks.emplace(std::make_pair(g.device, g.stream), 0u);
  for (auto& [key, id] : tracks) {
    id = static_cast<uint32_t>(out.threads.size());
    out.threads.push_back("cuda:" + std::to_string(key.first) + " stream " + std::to_string(key.second));
  }
  const int64_t duration = std::max<int64_t>(0, t_end - st.t0);
  std::vector<Event> gpu;
  gpu.reserve(st.gpu_records.size());
  for (GpuRecord& g : st.gpu_records) {
    Event e;
    e.name = std::move(g.name);
    e.kind = g.kind;
    e.detail = std::move(g.detail);
    // Clamped into the profile: a kernel queued before it started, or a
    // clock conversion a few hundred ns off at either end.
    e.start_ns = std::clamp<int64_t>(g.start_ns - st.t0, 0, duration);
    e.end_ns = std::clamp<int64_t>(g.end_ns - st.t0, e.start_ns, duration);
    e.thread = tracks[{g.device, g.stream}];
    e.device = g.device;
    e.stream = g.stream;
    e.correlation_id = g.correlation;
    e.bytes = g.bytes;
    uint32_t t = 0, i = 0;
    if (g.external_id && decode_external_id(g.external_id, st.generation, &t, &i) && t < global.size() &&
        i < global[t].size())
      e.correlated_op = global[t][i];
    gpu.push_back(std::move(e));
  }
  st.gpu_records.clear();
  std::stable_sort(gpu.begin(), gpu.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.thread < b.thread;
  });
  const size_t nh = out.events.size();
  std::vector<int32_t> host_new(nh);
  std::vector<Event> all;
  all.reserve(nh + gpu.size());
  for (size_t h = 0, k = 0; h < nh || k < gpu.size();) {
    if (k == gpu.size() || (h < nh && out.events[h].start_ns <= gpu[k].start_ns)) {
      host_new[h] = static_cast<int32_t>(all.size());
      all.push_back(std::move(out.events[h++]));
    } else {
      all.push_back(std::move(gpu[k++]));
    }
  }
  for (Event& e : all) {
    if (e.parent >= 0) e.parent = host_new[static_cast<size_t>(e.parent)];
    if (e.correlated_op >= 0) e.correlated_op = host_new[static_cast<size_t>(e.correlated_op)];
  }
  out.events = std::move(all);
}

// Builds the result from the buffers (all owners stopped writing).
void merge(State& st, int64_t t_end, ProfileResult& out) {
  out = ProfileResult();
  out.options = st.options;
  out.threads = st.names;
  out.duration_ns = t_end - st.t0;
  struct Key {
    int64_t start;
    uint32_t thread, local;
  };
  std::vector<Key> keys;
  size_t total = 0;
  for (ThreadBuffer* b : st.buffers) total += b->size;
  keys.reserve(total);
  for (ThreadBuffer* b : st.buffers)
    for (uint32_t i = 0; i < b->size; ++i) keys.push_back({b->at(i).start, b->thread_id, i});
  std::stable_sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.thread != b.thread) return a.thread < b.thread;
    return a.local < b.local;
  });
  // local index -> global index, per thread
  std::vector<std::vector<int32_t>> global(st.buffers.size());
  for (size_t t = 0; t < st.buffers.size(); ++t) global[t].resize(st.buffers[t]->size);
  for (size_t g = 0; g < keys.size(); ++g) global[keys[g].thread][keys[g].local] = static_cast<int32_t>(g);

  out.events.resize(keys.size());
  for (size_t g = 0; g < keys.size(); ++g) {
    ThreadBuffer* b = st.buffers[keys[g].thread];
    const RawEvent& r = b->at(keys[g].local);
    Event& e = out.events[g];
    e.name = r.name ? r.name : "";
    e.kind = r.kind;
    e.start_ns = r.start - st.t0;
    e.end_ns = (r.end ? r.end : t_end) - st.t0;
    if (e.end_ns < e.start_ns) e.end_ns = e.start_ns;
    e.thread = keys[g].thread;
    e.parent = r.parent >= 0 ? global[keys[g].thread][static_cast<size_t>(r.parent)] : -1;
    e.depth = e.parent >= 0 ? out.events[static_cast<size_t>(e.parent)].depth + 1 : 0;  // parent comes first
    e.self_alloc_bytes = r.alloc_bytes;
    e.self_free_bytes = r.free_bytes;
    e.self_allocs = r.allocs;
    e.self_cache_misses = r.misses;
    e.recorded_graph = r.recorded_graph;
    if (r.detail) e.detail = r.detail;
    if (r.inputs) {
      const int64_t* p = r.inputs;
      e.shapes.reserve(r.ninputs);
      e.dtypes.reserve(r.ninputs);
      for (int i = 0; i < r.ninputs; ++i) {
        const int64_t h = *p++;
        const int64_t code = h == kCodeNone || h == kCodeScalar ? h : (h & 0xFF);
        const int64_t nd = h == kCodeNone || h == kCodeScalar ? 0 : (h >> 8);
        e.shapes.emplace_back(p, p + nd);
        p += nd;
        e.dtypes.emplace_back(dtype_string(code));
      }
    }
    if (st.options.with_stack()) {
      for (int32_t a = e.parent; a >= 0; a = out.events[static_cast<size_t>(a)].parent)
        if (out.events[static_cast<size_t>(a)].kind == EventKind::UserScope)
          e.stack.push_back(out.events[static_cast<size_t>(a)].name);
      std::reverse(e.stack.begin(), e.stack.end());
    }
  }
  for (ThreadBuffer* b : st.buffers)
    for (const RawSample& s : b->samples)
      out.memory.push_back({s.time - st.t0, s.bytes, s.allocated, s.reserved, b->thread_id});
  std::stable_sort(out.memory.begin(), out.memory.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.time_ns < b.time_ns; });
  out.warnings = st.warnings;
  if (!st.gpu_records.empty()) add_gpu_events(st, t_end, global, out);
}

}  // namespace
}  // namespace detail

// ---- profile ---------------------------------------------------------------------

profile::profile(ProfileOptions options) {
  using namespace detail;
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> g(r.mu);
    BRISK_CHECK(r.state == nullptr, "profiler",
                "a profile is already active; stop it (profile::stop) before starting another");
    auto* st = new State();
    st->options = std::move(options);
    st->generation = g_generation.load(std::memory_order_relaxed) + 1;
    st->main_thread = std::this_thread::get_id();
    r.state = st;
    g_record_shapes = st->options.record_shapes();
    g_generation.store(st->generation, std::memory_order_release);
    if (!t_slot.closed) register_thread_locked(r, st);  // the starting thread is thread 0, "main"
    bool cuda = false;
    for (Activity a : st->options.activities()) cuda = cuda || a == Activity::CUDA;
    if (cuda) {
      if (!g_gpu_backend) {
        st->warnings.push_back(
            "Activity::CUDA: this build of brisk has no CUDA backend; no GPU activity was recorded");
      } else {
        const std::string why = g_gpu_backend->start();
        if (why.empty())
          st->gpu = true;
        else
          st->warnings.push_back("Activity::CUDA: no GPU activity was recorded: " + why);
      }
    }
    g_gpu.store(st->gpu, std::memory_order_relaxed);
    st->t0 = now_ns();
    g_memory.store(st->options.profile_memory(), std::memory_order_release);
    g_active.store(true, std::memory_order_seq_cst);
  }
  active_ = true;
}

profile::~profile() {
  try {
    stop();
  } catch (...) {
  }
}

void profile::stop() {
  using namespace detail;
  if (!active_) return;
  active_ = false;
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  State* st = r.state;
  g_memory.store(false, std::memory_order_relaxed);
  g_active.store(false, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (ThreadBuffer* b : st->buffers)
    while (b->busy.load(std::memory_order_acquire)) std::this_thread::yield();
  if (st->gpu) {
    // Waits for the devices, so the GPU events end before t_end.
    g_gpu.store(false, std::memory_order_relaxed);
    g_gpu_backend->stop(st->gpu_records, st->warnings);
  }
  // After the wait: every recorded time is earlier.
  const int64_t t_end = now_ns();
  std::unique_ptr<State> owned(st);
  r.state = nullptr;
  merge(*st, t_end, result_);
  // Give the events' memory back now (a thread may never record again);
  // buffers of threads that exited go to the free list.
  for (ThreadBuffer* b : st->buffers) {
    const bool orphan = b->orphan;
    b->reset();
    if (orphan) {
      b->generation = 0;
      r.free_buffers.push_back(b);
    }
  }
}

const ProfileResult& profile::result() {
  stop();
  return result_;
}

// ---- record_function ------------------------------------------------------------

record_function::record_function(const char* name) {
  if (BRISK_UNLIKELY(detail::active())) {
    const detail::OpenEvent e = detail::open_event(EventKind::UserScope, name);
    index_ = e.index;
    pushed_ = e.pushed;
  }
}
record_function::record_function(std::string name) {
  if (BRISK_UNLIKELY(detail::active())) {
    const detail::OpenEvent e = detail::open_event_str(EventKind::UserScope, name);
    index_ = e.index;
    pushed_ = e.pushed;
  }
}
record_function::~record_function() {
  if (BRISK_LIKELY(index_ < 0)) return;
  using namespace detail;
  if (pushed_) g_gpu_backend->pop();
  // Close only the event this scope opened: the innermost open one of the
  // active profile on this thread.
  const int64_t t = now_ns();
  ThreadBuffer* b = acquire();
  if (!b) return;
  if (b->current == index_) {
    RawEvent& e = b->at(static_cast<uint32_t>(index_));
    e.end = t;
    b->current = e.parent;
  }
  release(b);
}

bool is_enabled() { return detail::active(); }

}  // namespace brisk::profiler

// ---- sync points and sync debug mode -------------------------------------------------

namespace brisk {
namespace detail {

BRISK_PROFILER_INTERNAL std::atomic<uint8_t> g_sync_debug_mode{0};

namespace {
std::mutex& warned_mu() {
  static auto* m = new std::mutex();
  return *m;
}
std::set<std::string>& warned() {
  static auto* s = new std::set<std::string>();
  return *s;
}
}  // namespace

BRISK_PROFILER_INTERNAL std::atomic<int> g_graph_captures{0};

namespace {
thread_local bool t_device_check = false;
thread_local bool t_capturing = false;
}  // namespace

DeviceCheckScope::DeviceCheckScope() : prev_(t_device_check) { t_device_check = true; }
DeviceCheckScope::~DeviceCheckScope() { t_device_check = prev_; }

bool thread_capturing() { return t_capturing; }

void set_thread_capturing(bool on) {
  if (on == t_capturing) return;
  t_capturing = on;
  g_graph_captures.fetch_add(on ? 1 : -1, std::memory_order_relaxed);
}

void sync_point_slow(const char* call, const Tensor& t) {
  if (t_device_check) return;
  // Any stream operation that waits for the device invalidates a capture.
  if (t_capturing && t.defined() && t.is_cuda())
    BRISK_FAIL(call, "called a synchronizing operation (", call,
               ") while this thread captures a CUDA graph: a graph cannot wait for the device; move it out of "
               "the captured region (the capture is abandoned when the brisk::cuda::graph scope unwinds)");
  if (!profiler::detail::active() && g_sync_debug_mode.load(std::memory_order_relaxed) == 0) return;
  const auto mode = static_cast<SyncDebugMode>(g_sync_debug_mode.load(std::memory_order_relaxed));
  if (mode == SyncDebugMode::Error)
    BRISK_FAIL(call, "called a synchronizing operation (", call,
               "): on a GPU the host would wait for the device here; refused because the sync debug mode is "
               "Error (brisk::set_sync_debug_mode)");
  if (mode == SyncDebugMode::Warn) {
    bool first;
    {
      std::lock_guard<std::mutex> g(warned_mu());
      first = warned().insert(call).second;
    }
    if (first)
      std::fprintf(stderr,
                   "[brisk] warning: %s is a synchronizing call: on a GPU the host waits for the device here "
                   "(sync debug mode Warn; shown once per call)\n",
                   call);
  }
  if (profiler::detail::active()) {
    const profiler::detail::InputRef in[1] = {profiler::detail::input_ref(t)};
    const std::string name = std::string("Sync.") + call;
    profiler::detail::close_event(profiler::detail::open_common(profiler::EventKind::Sync, nullptr, &name, call, in, 1));
  }
}

}  // namespace detail

void set_sync_debug_mode(SyncDebugMode mode) {
  {
    std::lock_guard<std::mutex> g(detail::warned_mu());
    detail::warned().clear();
  }
  detail::g_sync_debug_mode.store(static_cast<uint8_t>(mode), std::memory_order_relaxed);
}
SyncDebugMode get_sync_debug_mode() {
  return static_cast<SyncDebugMode>(detail::g_sync_debug_mode.load(std::memory_order_relaxed));
}

}  // namespace brisk
