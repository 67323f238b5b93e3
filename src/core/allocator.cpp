// The caching CPU allocator. See docs/design/allocator.md.
#include "brisk/allocator.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "brisk/error.h"
#include "core/profile_hooks.h"

namespace brisk {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kThreadCacheMax = size_t(64) << 10;  // blocks up to 64 KiB have a per-thread cache
constexpr int kThreadCacheDepth = 16;

// Rounds n up to a size class: multiples of 64 up to 512 B, then four classes
// per power of two (at most 25% rounding).
size_t round_size(size_t n) {
  if (n <= 512) return n <= 64 ? 64 : (n + 63) & ~size_t(63);
  const int k = 63 - __builtin_clzll(n - 1);  // 2^k < n <= 2^(k+1)
  const size_t step = size_t(1) << (k - 2);   // quarter of the octave (2^k, 2^(k+1)]
  return (n + step - 1) & ~(step - 1);
}
// Index of a rounded size <= kThreadCacheMax in the per-thread table.
int small_class(size_t rounded) {
  if (rounded <= 512) return static_cast<int>(rounded / 64) - 1;  // 0..7
  const int k = 63 - __builtin_clzll(rounded - 1);
  const size_t step = size_t(1) << (k - 2);
  return 8 + (k - 9) * 4 + static_cast<int>((rounded - (size_t(1) << k)) / step) - 1;
}
constexpr int kNumSmallClasses = 8 + 7 * 4;

struct Stats {
  std::atomic<int64_t> allocated{0}, peak_allocated{0}, reserved{0}, peak_reserved{0};
  std::atomic<int64_t> num_allocs{0}, hits{0}, misses{0};
};
// Constant-initialised and trivially destructible (atomics): usable by frees
// during static destruction, and reached without a guard check.
constinit Stats g_stats;
inline Stats& stats() { return g_stats; }
// Counters only this library increments: a plain relaxed load+store (no
// locked instruction). Increments racing on two threads may lose a count;
// these are statistics, not accounting (allocated/reserved use atomic adds).
inline void bump(std::atomic<int64_t>& c) { c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
void raise_peak(std::atomic<int64_t>& peak, int64_t v) {
  int64_t p = peak.load(std::memory_order_relaxed);
  while (v > p && !peak.compare_exchange_weak(p, v, std::memory_order_relaxed)) {
  }
}

int64_t cache_limit() {
  static const int64_t limit = [] {
    const char* e = std::getenv("BRISK_CPU_CACHE_LIMIT_MB");
    return (e ? std::atoll(e) : 4096) << 20;
  }();
  return limit;
}

void* os_alloc(size_t n) {
  const size_t align = n >= kHugePage ? kHugePage : kAlign;
  void* p = std::aligned_alloc(align, (n + align - 1) & ~(align - 1));
  if (!p) return nullptr;
  // Huge pages make the first touch of a large buffer 512x fewer faults.
  if (n >= kHugePage) madvise(p, n, MADV_HUGEPAGE);
  Stats& s = stats();
  raise_peak(s.peak_reserved, s.reserved.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed) +
                                  static_cast<int64_t>(n));
  return p;
}
void os_free(void* p, size_t n) {
  std::free(p);
  stats().reserved.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed);
}

// Blocks freed and kept for reuse, keyed by rounded size.
struct GlobalPool {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;
  int64_t cached_bytes = 0;

  void* take(size_t n) {
    std::lock_guard<std::mutex> g(mu);
    auto it = free_blocks.find(n);
    if (it == free_blocks.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes -= static_cast<int64_t>(n);
    return p;
  }
  void put(void* p, size_t n) {
    {
      std::lock_guard<std::mutex> g(mu);
      if (cached_bytes + static_cast<int64_t>(n) <= cache_limit()) {
        free_blocks[n].push_back(p);
        cached_bytes += static_cast<int64_t>(n);
        return;
      }
    }
    os_free(p, n);
  }
  void release_all() {
    std::lock_guard<std::mutex> g(mu);
    for (auto& [n, v] : free_blocks)
      for (void* p : v) os_free(p, n);
    free_blocks.clear();
    cached_bytes = 0;
  }
};
GlobalPool& global_pool() {
  static GlobalPool* p = new GlobalPool();  // never destroyed: tensors may outlive statics
  return *p;
}

// Per-thread stacks of small blocks: the common case takes no lock. The
// cache is trivially destructible (an initial-exec thread-local, one load to
// reach); a guard constructed on the first free flushes it at thread exit and
// closes it, after which frees go to the shared pool (as the tensor free
// lists do, see Note [Free lists at thread exit]).
struct ThreadCache {
  void* blocks[kNumSmallClasses][kThreadCacheDepth];
  int count[kNumSmallClasses];
  bool closed;
  bool guarded;
  void flush() {
    for (int c = 0; c < kNumSmallClasses; ++c) {
      for (int i = 0; i < count[c]; ++i) global_pool().put(blocks[c][i], class_size(c));
      count[c] = 0;
    }
  }
  static size_t class_size(int c) {
    if (c < 8) return size_t(c + 1) * 64;
    const int k = (c - 8) / 4 + 9, q = (c - 8) % 4 + 1;
    return (size_t(1) << k) + size_t(q) * (size_t(1) << (k - 2));
  }
};
constinit thread_local ThreadCache t_cache BRISK_TLS_FAST{};
struct ThreadCacheGuard {
  ThreadCacheGuard() = default;
  ~ThreadCacheGuard() {
    t_cache.flush();
    t_cache.closed = true;
  }
};
thread_local ThreadCacheGuard t_cache_guard;

class CachingCpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    Stats& s = stats();
    const size_t n = round_size(nbytes == 0 ? 1 : nbytes);
    bump(s.num_allocs);
    raise_peak(s.peak_allocated,
               s.allocated.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed) + static_cast<int64_t>(n));
    void* p = nullptr;
    if (n <= kThreadCacheMax) {
      const int c = small_class(n);
      if (t_cache.count[c] > 0) p = t_cache.blocks[c][--t_cache.count[c]];
    }
    if (!p) p = global_pool().take(n);
    const bool miss = p == nullptr;
    if (BRISK_LIKELY(!miss))
      bump(s.hits);
    else
      p = allocate_miss(n, nbytes);
    if (BRISK_UNLIKELY(profiler::detail::g_memory.load(std::memory_order_relaxed))) profile_alloc(nbytes, miss);
    if (BRISK_UNLIKELY(detail::tracing_any())) detail::trace_alloc(p, nbytes);
    return p;
  }
  // A request the cache could not serve: from the OS (after emptying the
  // cache if the OS refuses once).
  [[gnu::noinline]] void* allocate_miss(size_t n, size_t nbytes) {
    Stats& s = stats();
    bump(s.misses);
    void* p = os_alloc(n);
    if (!p) {
      // Give the cache back to the OS and try once more.
      cpu::empty_cache();
      p = os_alloc(n);
    }
    if (!p) {
      s.allocated.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed);
      BRISK_FAIL("cpu_allocator", "out of memory: tried to allocate ", nbytes, " bytes (", memory_summary_line(),
                 ")");
    }
    return p;
  }
  void free(void* p, size_t nbytes) override {
    if (!p) return;
    const size_t n = round_size(nbytes == 0 ? 1 : nbytes);
    stats().allocated.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed);
    if (BRISK_UNLIKELY(profiler::detail::g_memory.load(std::memory_order_relaxed))) profile_free(nbytes);
    if (n <= kThreadCacheMax && !t_cache.closed) {
      if (BRISK_UNLIKELY(!t_cache.guarded)) {
        t_cache.guarded = true;
        (void)&t_cache_guard;  // odr-use: registers the flush at thread exit
      }
      const int c = small_class(n);
      if (t_cache.count[c] < kThreadCacheDepth) {
        t_cache.blocks[c][t_cache.count[c]++] = p;
        return;
      }
    }
    global_pool().put(p, n);
  }
  // The profiler's hooks (profile_memory): bytes as requested; totals as counted.
  [[gnu::noinline, gnu::cold]] static void profile_alloc(size_t nbytes, bool miss) {
    profiler::detail::on_alloc(static_cast<int64_t>(nbytes), miss, stats().allocated.load(std::memory_order_relaxed),
                               stats().reserved.load(std::memory_order_relaxed));
  }
  [[gnu::noinline, gnu::cold]] static void profile_free(size_t nbytes) {
    profiler::detail::on_free(static_cast<int64_t>(nbytes), stats().allocated.load(std::memory_order_relaxed),
                              stats().reserved.load(std::memory_order_relaxed));
  }
  static std::string memory_summary_line() {
    return "allocated " + std::to_string(stats().allocated.load()) + " bytes, reserved " +
           std::to_string(stats().reserved.load()) + " bytes";
  }
};

}  // namespace

Allocator* cpu_allocator() {
  static CachingCpuAllocator* a = new CachingCpuAllocator();
  return a;
}

namespace cpu {
MemoryStats memory_stats() {
  Stats& s = stats();
  MemoryStats m;
  m.allocated = s.allocated.load();
  m.peak_allocated = s.peak_allocated.load();
  m.reserved = s.reserved.load();
  m.peak_reserved = s.peak_reserved.load();
  m.num_allocs = s.num_allocs.load();
  m.cache_hits = s.hits.load();
  m.cache_misses = s.misses.load();
  return m;
}
int64_t memory_allocated() { return stats().allocated.load(); }
int64_t memory_reserved() { return stats().reserved.load(); }
int64_t max_memory_allocated() { return stats().peak_allocated.load(); }
void reset_peak_memory_stats() {
  stats().peak_allocated.store(stats().allocated.load());
  stats().peak_reserved.store(stats().reserved.load());
}
void empty_cache() {
  t_cache.flush();
  global_pool().release_all();
}
}  // namespace cpu

}  // namespace brisk
