// GPU activity for the profiler (Activity::CUDA) through CUPTI's activity API.
//
// Note [CUPTI]
// Like cuBLAS (Note [Lazy CUDA libraries] in cublas.cpp), CUPTI is not
// linked: the first profile that asks for Activity::CUDA opens
// libcupti.so.13 with dlopen (the soname first, then the toolkit's folders)
// and resolves the ten functions used here; a process that never profiles
// the GPU never maps it. If it cannot be loaded, or there is no device, the
// profile records its host events as usual and says why in
// ProfileResult::warnings.
//
// Recording (one profile at a time, as the profiler allows):
// - start: registers the buffer callbacks (once per process: CUPTI allows
//   no second registration), enables the activity kinds CONCURRENT_KERNEL,
//   MEMCPY, MEMSET, EXTERNAL_CORRELATION, and RUNTIME and DRIVER (CUPTI
//   emits an external correlation record only before an API record, so the
//   API kinds must be on; their records are read for nothing else), and
//   reads CUPTI's clock and the host's steady clock together.
// - while recording, the profiler pushes an external correlation id
//   (CUSTOM0) on a thread when it opens an event there and pops it when the
//   event closes; CUPTI tags each API call with the id on top of the calling
//   thread's stack (an external correlation record: CUPTI correlation id ->
//   our id), and each kernel/copy/memset carries the correlation id of the
//   API call that launched it.
// - CUPTI hands over full buffers from its own thread (buffer_completed):
//   the records are copied out under a mutex (kernel names too: the pointer
//   belongs to CUPTI) and the buffer freed.
// - stop: waits for every device brisk has allocated on (a device it never
//   touched has no context and no work, and synchronising it would create
//   one), disables the kinds, flushes all buffers (forced), reads both
//   clocks again, and converts: device timestamps to the host clock
//   (ClockMap), correlation ids to the pushed ids.
// The CUPTI calls are never made under the recorder's mutex: a flush calls
// buffer_completed on the calling thread, which takes it.
#include "backend/cuda/cupti_activity.h"

#include <cupti.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "brisk/cuda.h"
#include "profiler/gpu_activity.h"

namespace brisk::cuda::detail {

static_assert(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD == kCopyHtoD && CUPTI_ACTIVITY_MEMCPY_KIND_DTOH == kCopyDtoH &&
              CUPTI_ACTIVITY_MEMCPY_KIND_DTOD == kCopyDtoD && CUPTI_ACTIVITY_MEMCPY_KIND_HTOH == kCopyHtoH &&
              CUPTI_ACTIVITY_MEMCPY_KIND_PTOP == kCopyPtoP);
static_assert(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE == kMemPageable && CUPTI_ACTIVITY_MEMORY_KIND_PINNED == kMemPinned &&
              CUPTI_ACTIVITY_MEMORY_KIND_DEVICE == kMemDevice && CUPTI_ACTIVITY_MEMORY_KIND_MANAGED == kMemManaged &&
              CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC == kMemManagedStatic);

namespace {

namespace prof = brisk::profiler;

constexpr const char* kCuptiSoname = "libcupti.so.13";
constexpr size_t kBufferBytes = size_t(8) << 20;  // per activity buffer
constexpr size_t kBufferAlign = 8;                 // CUPTI's required alignment

struct CuptiApi {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

struct Loaded {
  CuptiLibrary info;
  CuptiApi api{};
};

Loaded load() {
  Loaded l;
  l.info = open_first(cupti_search_paths());
  if (!l.info.handle) return l;
  CuptiApi& a = l.api;
  resolve(l.info, "cuptiActivityRegisterCallbacks", a.register_callbacks);
  resolve(l.info, "cuptiActivityEnable", a.enable);
  resolve(l.info, "cuptiActivityDisable", a.disable);
  resolve(l.info, "cuptiActivityFlushAll", a.flush_all);
  resolve(l.info, "cuptiActivityGetNextRecord", a.next_record);
  resolve(l.info, "cuptiActivityGetNumDroppedRecords", a.dropped_records);
  resolve(l.info, "cuptiActivityPushExternalCorrelationId", a.push);
  resolve(l.info, "cuptiActivityPopExternalCorrelationId", a.pop);
  resolve(l.info, "cuptiGetTimestamp", a.timestamp);
  resolve(l.info, "cuptiGetResultString", a.result_string);
  finish(l.info);
  return l;
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never freed: the library stays mapped
  return *l;
}
const CuptiApi& api() { return loaded().api; }

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  if (api().result_string && api().result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

int64_t host_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Reads both clocks together: the tightest of a few host-bracketed reads of
// CUPTI's clock, the host time taken at the bracket's middle.
bool read_clocks(int64_t* host, uint64_t* gpu) {
  int64_t best = -1;
  for (int i = 0; i < 5; ++i) {
    uint64_t c = 0;
    const int64_t a = host_now();
    if (api().timestamp(&c) != CUPTI_SUCCESS) return false;
    const int64_t b = host_now();
    if (best < 0 || b - a < best) {
      best = b - a;
      *host = a + (b - a) / 2;
      *gpu = c;
    }
  }
  return true;
}

// A record copied out of a CUPTI buffer, device timestamps.
struct Pending {
  prof::EventKind kind;
  std::string name, detail;
  uint64_t start, end;
  uint32_t device, stream, correlation;
  int64_t bytes;
};

struct Recorder {
  std::mutex mu;  // guards what follows; never held across a CUPTI call
  std::vector<Pending> records;
  std::unordered_map<uint32_t, uint64_t> external;  // CUPTI correlation id -> pushed id
  uint64_t dropped = 0;
  uint64_t unreadable = 0;  // buffers whose parse stopped on an error
};
Recorder& recorder() {
  static Recorder* r = new Recorder;  // CUPTI's thread may call in at exit
  return *r;
}

bool g_registered = false;  // buffer callbacks registered (under the profiler's lock: one profile at a time)
ClockMap g_clock;
std::vector<CUpti_ActivityKind> g_enabled;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size, size_t valid) {
  std::vector<Pending> got;
  std::vector<std::pair<uint32_t, uint64_t>> ext;
  bool unreadable = false;
  if (buffer && valid > 0) {
    CUpti_Activity* rec = nullptr;
    for (;;) {
      const CUptiResult st = api().next_record(buffer, valid, &rec);
      if (st == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (st != CUPTI_SUCCESS) {
        unreadable = true;
        break;
      }
      switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
          got.push_back({prof::EventKind::Kernel, cupti_kernel_name(k->name),
                         cupti_kernel_detail(k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
                                             k->registersPerThread,
                                             int64_t(k->staticSharedMemory) + int64_t(k->dynamicSharedMemory)),
                         k->start, k->end, k->deviceId, k->streamId, k->correlationId, 0});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
          got.push_back({prof::EventKind::Memcpy, cupti_memcpy_name(m->copyKind, m->srcKind, m->dstKind), {},
                         m->start, m->end, m->deviceId, m->streamId, m->correlationId, int64_t(m->bytes)});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
          got.push_back({prof::EventKind::Memset, cupti_memset_name(m->memoryKind), {}, m->start, m->end,
                         m->deviceId, m->streamId, m->correlationId, int64_t(m->bytes)});
          break;
        }
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
          const auto* x = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
          if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) ext.emplace_back(x->correlationId, x->externalId);
          break;
        }
        default: break;  // API records: needed for the external correlation records only
      }
    }
  }
  size_t dropped = 0;
  if (api().dropped_records(ctx, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
  std::free(buffer);
  Recorder& r = recorder();
  std::lock_guard<std::mutex> g(r.mu);
  for (Pending& p : got) r.records.push_back(std::move(p));
  for (const auto& [c, x] : ext) r.external[c] = x;
  r.dropped += dropped;
  r.unreadable += unreadable;
}

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                     CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                     CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};

void disable_all() {
  for (CUpti_ActivityKind k : g_enabled) (void)api().disable(k);
  g_enabled.clear();
}

std::string start() {
  try {
    if (!cuda::is_available()) return cuda::unavailable_reason();
    const Loaded& l = loaded();
    if (!l.info.loaded) return "CUPTI could not be loaded: " + l.info.error;
    {
      Recorder& r = recorder();
      std::lock_guard<std::mutex> g(r.mu);
      r.records.clear();
      r.external.clear();
      r.dropped = r.unreadable = 0;
    }
    if (!g_registered) {
      const CUptiResult st = l.api.register_callbacks(buffer_requested, buffer_completed);
      if (st != CUPTI_SUCCESS) return "cuptiActivityRegisterCallbacks failed: " + result_text(st);
      g_registered = true;
    }
    for (CUpti_ActivityKind k : kKinds) {
      const CUptiResult st = l.api.enable(k);
      if (st != CUPTI_SUCCESS) {
        disable_all();
        return "cuptiActivityEnable(" + std::to_string(static_cast<int>(k)) + ") failed: " + result_text(st);
      }
      g_enabled.push_back(k);
    }
    g_clock = ClockMap();
    if (!read_clocks(&g_clock.host0, &g_clock.gpu0)) {
      disable_all();
      return "cuptiGetTimestamp failed";
    }
    return "";
  } catch (const std::exception& e) {
    disable_all();
    return e.what();
  }
}

void stop(std::vector<prof::detail::GpuRecord>& out, std::vector<std::string>& warnings) {
  // Wait for the work queued on every device brisk has allocated on.
  try {
    const int n = cuda::device_count();
    for (int d = 0; d < n; ++d) {
      if (cuda::max_memory_reserved(d) == 0 && cuda::memory_reserved(d) == 0) continue;
      DeviceGuard guard(d);
      const cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) {
        warnings.push_back("Activity::CUDA: synchronizing cuda:" + std::to_string(d) +
                           " at the end of the profile failed (" + cudaGetErrorString(e) +
                           "): GPU activity may be missing");
        (void)cudaGetLastError();
      }
    }
  } catch (const std::exception& e) {
    warnings.push_back(std::string("Activity::CUDA: waiting for the devices failed: ") + e.what());
  }
  disable_all();
  const CUptiResult fl = api().flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (fl != CUPTI_SUCCESS) warnings.push_back("Activity::CUDA: cuptiActivityFlushAll failed: " + result_text(fl));
  g_clock.has_end = read_clocks(&g_clock.host1, &g_clock.gpu1);

  Recorder& r = recorder();
  std::vector<Pending> records;
  std::unordered_map<uint32_t, uint64_t> external;
  uint64_t dropped = 0, unreadable = 0;
  {
    std::lock_guard<std::mutex> g(r.mu);
    records.swap(r.records);
    external.swap(r.external);
    dropped = r.dropped;
    unreadable = r.unreadable;
  }
  uint64_t incomplete = 0;
  out.reserve(out.size() + records.size());
  for (Pending& p : records) {
    if (p.start == 0 || p.end < p.start) {  // no timestamps: the work did not finish
      ++incomplete;
      continue;
    }
    prof::detail::GpuRecord g;
    g.kind = p.kind;
    g.name = std::move(p.name);
    g.detail = std::move(p.detail);
    g.start_ns = g_clock.to_host(p.start);
    g.end_ns = g_clock.to_host(p.end);
    if (g.end_ns < g.start_ns) g.end_ns = g.start_ns;
    g.device = static_cast<int32_t>(p.device);
    g.stream = p.stream;
    g.correlation = p.correlation;
    g.bytes = p.bytes;
    auto it = external.find(p.correlation);
    g.external_id = it == external.end() ? 0 : it->second;
    out.push_back(std::move(g));
  }
  if (dropped)
    warnings.push_back("Activity::CUDA: CUPTI dropped " + std::to_string(dropped) +
                       " activity records (its buffers were full)");
  if (unreadable)
    warnings.push_back("Activity::CUDA: " + std::to_string(unreadable) + " CUPTI buffers could not be read to the end");
  if (incomplete)
    warnings.push_back("Activity::CUDA: " + std::to_string(incomplete) +
                       " GPU activities had not finished when the profile stopped");
}

void push(uint64_t id) { (void)api().push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id); }
void pop() {
  uint64_t last = 0;
  (void)api().pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

struct Register {
  Register() {
    static const prof::detail::GpuActivityBackend backend{&start, &stop, &push, &pop};
    prof::detail::set_gpu_activity_backend(&backend);
  }
} g_register;

}  // namespace

std::vector<std::string> cupti_search_paths() {
  return cuda_library_search_paths(kCuptiSoname, {"lib64", "extras/CUPTI/lib64"});
}

const CuptiLibrary& cupti_library() { return loaded().info; }

}  // namespace brisk::cuda::detail
