// The bookkeeping of brisk's CUDA caching allocators, as plain host C++.
//
// Note [Caching allocator layers]
// BlockAllocator (device memory) and HostBlockAllocator (pinned host memory)
// decide which block serves a request, when a block may be reused, and what
// the statistics say. They never call CUDA themselves: every cudaMalloc,
// cudaFree, cudaHostAlloc and event operation goes through a MemoryBackend.
// src/backend/cuda/caching_allocator.cpp plugs the CUDA runtime in;
// tests/cuda/test_caching_allocator.cpp plugs in malloc with a fake memory
// limit and fake events, so every rule below is exercised in CI without a GPU.
// This header must stay includable without <cuda_runtime.h>.
//
// Device rules (see docs/design/cuda_allocator.md):
// - requests are rounded up to 512 bytes;
// - requests up to 1 MiB come from the small pool, carved out of 2 MiB
//   segments; bigger ones from the large pool, whose segments are 20 MiB for
//   requests under 10 MiB and the request rounded up to 2 MiB otherwise;
// - a free block is reused only by a request on the stream it was allocated
//   on (its segment's stream); the best fit (smallest block that is large
//   enough, then lowest address) is taken and split when the remainder can
//   serve a request of its pool (>= 512 B small, > 1 MiB large);
// - a freed block merges with its free neighbours in the same segment;
// - a block also used on other streams (record_stream) is held back at free
//   time until an event recorded then on each of those streams has completed;
//   the events are polled at the start of each allocation;
// - when the backend is out of memory, every pending event is waited for,
//   every fully free segment is released, and the request is retried once;
//   then brisk::Error "[empty] CUDA out of memory: ..." is thrown.
//
// Private pools (Note [Private pools], for CUDA graphs): a pool id other
// than 0 names a set of segments of its own. While begin_allocate_to_pool
// routes a stream to a pool, that stream's requests are served from the
// pool's free blocks or new segments of the pool, never from the shared
// cache, and a block of the pool is never handed to anyone else: the
// addresses a captured graph baked in stay its own. Several graphs may
// share one pool (capture the largest first: the smaller ones reuse its
// freed blocks). A pool lives while its use count (one per begin, until
// release_pool) is positive: empty_cache and the out-of-memory retry leave
// its segments alone. When the count reaches 0 its free segments go back
// to the backend at once, and the others as their last block is freed.
#pragma once
#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "brisk/cuda.h"
#include "brisk/error.h"

namespace brisk::cuda::detail {

// ---- sizes -----------------------------------------------------------------------
constexpr size_t kMinBlockSize = 512;             ///< every block size is a multiple of this
constexpr size_t kSmallSize = size_t(1) << 20;    ///< largest request of the small pool
constexpr size_t kSmallBuffer = size_t(2) << 20;  ///< segment size of the small pool
constexpr size_t kLargeBuffer = size_t(20) << 20; ///< segment size for large requests < kMinLargeAlloc
constexpr size_t kMinLargeAlloc = size_t(10) << 20;
constexpr size_t kRoundLarge = size_t(2) << 20;   ///< larger requests get their own segment, rounded to this
/// Requests above this are refused before any rounding could overflow.
constexpr size_t kMaxRequest = size_t(1) << 60;

/// The size of the block that serves a request of `n` bytes (n <= kMaxRequest).
constexpr size_t round_size(size_t n) {
  return n < kMinBlockSize ? kMinBlockSize : (n + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}
/// Whether a rounded size is served by the small pool.
constexpr bool is_small_size(size_t rounded) { return rounded <= kSmallSize; }
/// The size of the segment obtained from the backend when no cached block
/// fits a rounded request.
constexpr size_t segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}
/// Smallest power of two >= n (n >= 1), the size class of pinned host blocks.
constexpr size_t next_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

/// "512 bytes", "4.00 KiB", "20.00 MiB", "79.11 GiB".
inline std::string format_size(int64_t bytes) {
  char buf[48];
  const double b = static_cast<double>(bytes);
  const int64_t a = bytes < 0 ? -bytes : bytes;
  if (a < 1024)
    std::snprintf(buf, sizeof buf, "%" PRId64 " bytes", bytes);
  else if (a < (int64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024.0);
  else if (a < (int64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  return buf;
}

// ---- the backend interface ----------------------------------------------------------
/// A private memory pool's id (Note [Private pools]); 0 is the shared cache.
using PoolId = uint64_t;
constexpr PoolId kSharedPool = 0;

/// What a private pool holds (BlockAllocator::pool_stats).
struct PoolStats {
  int64_t reserved = 0;   ///< bytes in the pool's segments
  int64_t allocated = 0;  ///< bytes in its blocks handed out
  int64_t segments = 0;
  int use_count = 0;      ///< begins not yet released (0: the pool is gone or going)
  bool routed = false;    ///< a stream allocates to it now
};

/// A stream as the allocator sees it: an opaque handle (a cudaStream_t; null
/// is the legacy default stream) and the device it belongs to.
struct StreamRef {
  void* handle = nullptr;
  int device = 0;
  bool operator==(const StreamRef& o) const { return handle == o.handle && device == o.device; }
  bool operator!=(const StreamRef& o) const { return !(*this == o); }
};

/// Where the memory and the events come from. Called with the allocator's
/// mutex held.
class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  /// `nbytes` of fresh memory, or nullptr when the memory is exhausted
  /// (cudaErrorMemoryAllocation). Other failures throw brisk::Error.
  virtual void* raw_alloc(size_t nbytes) = 0;
  /// Returns memory from raw_alloc (`nbytes` as allocated). Does not throw.
  virtual void raw_free(void* p, size_t nbytes) = 0;
  /// An event recorded now on `s` (an opaque handle owned by the backend until release_event).
  virtual void* record_event(StreamRef s) = 0;
  /// True when the work recorded by the event has completed.
  virtual bool query_event(void* e) = 0;
  /// Blocks until the event has completed.
  virtual void synchronize_event(void* e) = 0;
  /// The allocator is done with the event. Does not throw.
  virtual void release_event(void* e) = 0;
  /// Whether a CUDA graph capture is underway on any thread (Note [Events
  /// and a capture]): no event is then recorded, queried or waited for, and
  /// no memory is returned.
  virtual bool capture_underway() const { return false; }
  /// Free and total memory of the device (for the out-of-memory message); -1 when unknown.
  virtual void mem_info(int64_t* free_bytes, int64_t* total_bytes) {
    *free_bytes = -1;
    *total_bytes = -1;
  }
};

// ---- statistics -------------------------------------------------------------------
/// A statistic: its current value, its peak since the last reset, and the
/// totals added and removed since the allocator started.
struct Stat {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void add(int64_t n) {
    current += n;
    allocated += n;
    peak = std::max(peak, current);
  }
  void sub(int64_t n) {
    current -= n;
    freed += n;
  }
  void reset_peak() { peak = current; }
};
/// Index into a statistic's per-pool array.
enum StatPool : int { kAllPools = 0, kSmallPoolStat = 1, kLargePoolStat = 2 };
using StatArray = Stat[3];

/// Everything the device allocator counts (bytes and counts, per pool).
struct BlockAllocatorStats {
  StatArray allocated_bytes;       ///< bytes in blocks handed out and not freed
  StatArray reserved_bytes;        ///< bytes in segments from the backend
  StatArray active_bytes;          ///< allocated + freed blocks waiting for stream events
  StatArray inactive_split_bytes;  ///< free bytes in segments that are split (not releasable)
  StatArray allocation;            ///< blocks handed out (allocated: num_allocs, freed: num_frees)
  StatArray segment;               ///< segments held
  StatArray active;                ///< active blocks
  StatArray inactive_split;        ///< free blocks in split segments
  int64_t num_alloc_retries = 0;   ///< backend allocations retried after releasing the cache
  int64_t num_ooms = 0;            ///< out-of-memory errors thrown
  int64_t num_device_alloc = 0;    ///< raw_alloc calls that succeeded
  int64_t num_device_free = 0;     ///< raw_free calls
  int64_t num_sync_events = 0;     ///< events waited for before releasing the cache
};

/// What an allocation or a free left behind (for the profiler's hooks).
struct AllocInfo {
  bool cache_miss = false;  ///< a new segment was obtained from the backend
  int64_t allocated = 0, reserved = 0;
};

// ---- the device allocator ---------------------------------------------------------
/// The caching allocator of one device. Thread-safe (one mutex).
class BlockAllocator {
 public:
  /// One segment as snapshot() reports it.
  struct BlockInfo {
    size_t size;
    bool allocated;  ///< handed out
    bool pending;    ///< freed, waiting for stream events
  };
  struct SegmentInfo {
    uintptr_t address;
    size_t size;
    void* stream;
    bool small;
    std::vector<BlockInfo> blocks;  ///< in address order
    PoolId pool = kSharedPool;
  };

  BlockAllocator(MemoryBackend& backend, int device) : backend_(backend), device_(device) {}
  ~BlockAllocator() {
    // Segments that are entirely free go back to the backend; a segment with
    // a block still handed out or pending is leaked on purpose (its memory
    // may be in use). brisk's own allocators are never destroyed.
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [e, b] : pending_) backend_.release_event(e);
    pending_.clear();
    for (auto& [ptr, head] : segments_) {
      if (head->state == Block::kFree && head->next == nullptr) backend_.raw_free(head->ptr, head->size);
      for (Block* b = head; b != nullptr;) {
        Block* next = b->next;
        delete b;
        b = next;
      }
    }
  }
  BlockAllocator(const BlockAllocator&) = delete;
  BlockAllocator& operator=(const BlockAllocator&) = delete;

  int device() const { return device_; }

  /// A block of at least `nbytes` for use on `stream` (null for nbytes == 0).
  /// Throws brisk::Error "[empty] CUDA out of memory: ..." when the backend
  /// is out of memory even after the cache was released.
  void* malloc(size_t nbytes, StreamRef stream, AllocInfo* info = nullptr) {
    if (nbytes == 0) return nullptr;
    std::lock_guard<std::mutex> g(mu_);
    process_events();
    if (nbytes > kMaxRequest) {
      ++stats_.num_ooms;
      throw_oom(nbytes);
    }
    const size_t size = round_size(nbytes);
    const bool small = is_small_size(size);
    const PoolId pool = route(stream);
    Block* b = take_free_block(small ? small_pool_ : large_pool_, pool, stream.handle, size);
    const bool miss = b == nullptr;
    if (miss) b = new_segment(size, stream.handle, small, pool);
    if (should_split(b, size)) {
      Block* rest = new Block;
      rest->ptr = b->ptr + size;
      rest->size = b->size - size;
      rest->stream = b->stream;
      rest->small = b->small;
      rest->pool = b->pool;
      rest->prev = b;
      rest->next = b->next;
      if (rest->next) rest->next->prev = rest;
      b->next = rest;
      b->size = size;
      pool_insert(rest);
    }
    b->state = Block::kAllocated;
    b->requested = nbytes;
    allocated_.emplace(b->ptr, b);
    const int64_t n = static_cast<int64_t>(b->size);
    update(stats_.allocated_bytes, b->small, n);
    update(stats_.allocation, b->small, 1);
    update(stats_.active_bytes, b->small, n);
    update(stats_.active, b->small, 1);
    if (info) fill(info, miss);
    return b->ptr;
  }

  /// Returns a block from malloc. A block recorded on other streams becomes
  /// reusable once an event recorded now on each of them has completed.
  /// False when `ptr` is not a live block of this allocator (nothing done);
  /// free(nullptr) is a no-op returning true. If recording an event throws,
  /// the block stays allocated (leaked, not reused while a stream may use it).
  bool free(void* ptr, AllocInfo* info = nullptr) {
    if (ptr == nullptr) return true;
    std::lock_guard<std::mutex> g(mu_);
    auto it = allocated_.find(static_cast<char*>(ptr));
    if (it == allocated_.end()) return false;
    Block* b = it->second;
    // During a capture its events are recorded once no capture is underway (Note [Events and a capture]).
    const bool defer = !b->stream_uses.empty() && backend_.capture_underway();
    const std::vector<void*> events = defer ? std::vector<void*>{} : record_use_events(b);
    allocated_.erase(it);
    const int64_t n = static_cast<int64_t>(b->size);
    remove(stats_.allocated_bytes, b->small, n);
    remove(stats_.allocation, b->small, 1);
    if (defer) {
      b->state = Block::kPending;
      b->event_count = 0;
      deferred_.push_back(b);
    } else if (events.empty()) {
      free_block(b);
    } else {
      await_events(b, events);
    }
    if (info) fill(info, false);
    return true;
  }

  /// The live block at `ptr` is also used by `s` (record_stream). False when
  /// `ptr` is not a live block; recording the block's own stream does nothing.
  bool record_stream(const void* ptr, StreamRef s) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = allocated_.find(static_cast<char*>(const_cast<void*>(ptr)));
    if (it == allocated_.end()) return false;
    Block* b = it->second;
    if (s.handle == b->stream && s.device == device_) return true;
    if (std::find(b->stream_uses.begin(), b->stream_uses.end(), s) == b->stream_uses.end())
      b->stream_uses.push_back(s);
    return true;
  }

  // ---- private pools (Note [Private pools]) --------------------------------------
  /// Routes the requests made on `stream` to private pool `id` (created if
  /// new) until end_allocate_to_pool(id), and counts one use of the pool,
  /// held until release_pool(id). One stream allocates to one pool at a time.
  void begin_allocate_to_pool(PoolId id, StreamRef stream) {
    BRISK_CHECK(id != kSharedPool, "begin_allocate_to_pool", "pool id 0 is the shared cache, not a private pool");
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& r : routes_)
      BRISK_CHECK(!(r.stream == stream), "begin_allocate_to_pool", "the stream already allocates to private pool ",
                  r.pool, " (end that first)");
    ++pools_[id].use_count;
    routes_.push_back({stream, id});
  }
  /// Stops routing to pool `id` (its use stays counted until release_pool).
  void end_allocate_to_pool(PoolId id) {
    std::lock_guard<std::mutex> g(mu_);
    routes_.erase(std::remove_if(routes_.begin(), routes_.end(), [&](const Route& r) { return r.pool == id; }),
                  routes_.end());
  }
  /// Drops one use of pool `id` (a graph was reset or destroyed). At 0 the
  /// pool's free segments go back to the backend now, and the others when
  /// their last block is freed. False when the pool has no use to drop.
  bool release_pool(PoolId id) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = pools_.find(id);
    if (it == pools_.end() || it->second.use_count == 0) return false;
    if (--it->second.use_count == 0) {
      routes_.erase(std::remove_if(routes_.begin(), routes_.end(), [&](const Route& r) { return r.pool == id; }),
                    routes_.end());
      synchronize_and_free_events();
      release_free_segments([&](const Block* b) { return b->pool == id; });
      forget_pool_if_empty(id);
    }
    return true;
  }
  /// What pool `id` holds now (zeros for a pool that does not exist).
  PoolStats pool_stats(PoolId id) const {
    std::lock_guard<std::mutex> g(mu_);
    PoolStats st;
    if (auto it = pools_.find(id); it != pools_.end()) st.use_count = it->second.use_count;
    for (const auto& r : routes_) st.routed = st.routed || r.pool == id;
    for (const auto& [ptr, head] : segments_) {
      if (head->pool != id) continue;
      ++st.segments;
      for (const Block* b = head; b != nullptr; b = b->next) {
        st.reserved += static_cast<int64_t>(b->size);
        if (b->state == Block::kAllocated) st.allocated += static_cast<int64_t>(b->size);
      }
    }
    return st;
  }

  /// Waits for the pending events, then returns every fully free segment to
  /// the backend. Segments with a block in use stay, and so do the segments
  /// of private pools still in use (Note [Private pools]). Does nothing while
  /// a capture is underway (Note [Events and a capture]).
  void empty_cache() {
    std::lock_guard<std::mutex> g(mu_);
    release_cached_blocks();
  }

  /// Polls the pending events now (also done at the start of each malloc).
  void process_pending() {
    std::lock_guard<std::mutex> g(mu_);
    process_events();
  }

  BlockAllocatorStats detailed_stats() const {
    std::lock_guard<std::mutex> g(mu_);
    return stats_;
  }

  CudaMemoryStats stats() const {
    std::lock_guard<std::mutex> g(mu_);
    CudaMemoryStats s;
    s.allocated = stats_.allocated_bytes[kAllPools].current;
    s.peak_allocated = stats_.allocated_bytes[kAllPools].peak;
    s.reserved = stats_.reserved_bytes[kAllPools].current;
    s.peak_reserved = stats_.reserved_bytes[kAllPools].peak;
    s.active = stats_.active_bytes[kAllPools].current;
    s.peak_active = stats_.active_bytes[kAllPools].peak;
    s.inactive_split = stats_.inactive_split_bytes[kAllPools].current;
    s.num_allocs = stats_.allocation[kAllPools].allocated;
    s.num_frees = stats_.allocation[kAllPools].freed;
    s.num_segments = stats_.segment[kAllPools].current;
    s.num_alloc_retries = stats_.num_alloc_retries;
    s.num_ooms = stats_.num_ooms;
    s.num_device_alloc = stats_.num_device_alloc;
    s.num_device_free = stats_.num_device_free;
    return s;
  }

  /// Sets every peak to its current value.
  void reset_peak_stats() {
    std::lock_guard<std::mutex> g(mu_);
    for (StatArray* a : {&stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                         &stats_.inactive_split_bytes, &stats_.allocation, &stats_.segment, &stats_.active,
                         &stats_.inactive_split})
      for (Stat& s : *a) s.reset_peak();
  }

  /// The statistics as a table, like torch.cuda.memory_summary().
  std::string summary() const {
    const BlockAllocatorStats s = detailed_stats();
    std::string out;
    char line[160];
    const std::string rule_eq = "|" + std::string(79, '=') + "|\n";
    const std::string rule = "|" + std::string(79, '-') + "|\n";
    auto row_text = [&](const char* text) {
      std::snprintf(line, sizeof line, "| %-77s |\n", text);
      out += line;
    };
    out += rule_eq;
    char title[96];
    std::snprintf(title, sizeof title, "brisk CUDA caching allocator, cuda:%d", device_);
    std::snprintf(line, sizeof line, "| %-77s |\n", title);
    out += line;
    out += rule;
    std::snprintf(line, sizeof line, "| %-38s| %-38s|\n",
                  ("CUDA OOMs: " + std::to_string(s.num_ooms)).c_str(),
                  ("cudaMalloc retries: " + std::to_string(s.num_alloc_retries)).c_str());
    out += line;
    out += rule_eq;
    std::snprintf(line, sizeof line, "| %-22s| %11s | %11s | %11s | %11s |\n", "Metric", "Cur Usage", "Peak Usage",
                  "Tot Alloc", "Tot Freed");
    out += line;
    auto section = [&](const char* name, const StatArray& a, bool bytes) {
      out += rule;
      const char* names[3] = {name, "      from large pool", "      from small pool"};
      const int order[3] = {kAllPools, kLargePoolStat, kSmallPoolStat};
      for (int i = 0; i < 3; ++i) {
        const Stat& st = a[order[i]];
        auto f = [&](int64_t v) { return bytes ? format_size(v) : std::to_string(v); };
        std::snprintf(line, sizeof line, "| %-22s| %11s | %11s | %11s | %11s |\n", names[i], f(st.current).c_str(),
                      f(st.peak).c_str(), f(st.allocated).c_str(), f(st.freed).c_str());
        out += line;
      }
    };
    section("Allocated memory", s.allocated_bytes, true);
    section("Active memory", s.active_bytes, true);
    section("Reserved memory", s.reserved_bytes, true);
    section("Non-releasable memory", s.inactive_split_bytes, true);
    section("Allocations", s.allocation, false);
    section("Active allocs", s.active, false);
    section("Segments (cudaMalloc)", s.segment, false);
    section("Non-releasable allocs", s.inactive_split, false);
    out += rule;
    row_text(("cudaMalloc calls: " + std::to_string(s.num_device_alloc) +
              "    cudaFree calls: " + std::to_string(s.num_device_free))
                 .c_str());
    row_text("Allocated: in tensors. Active: allocated + freed, waiting on streams.");
    row_text("Reserved: from cudaMalloc. Non-releasable: free parts of split segments.");
    out += rule_eq;
    return out;
  }

  /// Every segment and its blocks (for tests and debugging).
  std::vector<SegmentInfo> snapshot() const {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<SegmentInfo> r;
    for (const auto& [ptr, head] : segments_) {
      SegmentInfo si{reinterpret_cast<uintptr_t>(ptr), 0, head->stream, head->small, {}, head->pool};
      for (const Block* b = head; b != nullptr; b = b->next) {
        si.size += b->size;
        si.blocks.push_back({b->size, b->state == Block::kAllocated, b->state == Block::kPending});
      }
      r.push_back(std::move(si));
    }
    return r;
  }

  /// Checks the bookkeeping against itself: blocks tile their segments, no
  /// two free neighbours, the pools hold exactly the free blocks, and the
  /// current statistics match a recount. Returns the first violation, or "".
  std::string check_invariants() const {
    std::lock_guard<std::mutex> g(mu_);
    int64_t reserved = 0, allocated = 0, active = 0, split_free = 0, nsegments = 0, nallocated = 0;
    size_t nfree = 0;
    for (const auto& [ptr, head] : segments_) {
      ++nsegments;
      if (head->prev != nullptr) return "a segment head has a predecessor";
      const char* expect = head->ptr;
      for (const Block* b = head; b != nullptr; b = b->next) {
        if (b->ptr != expect) return "blocks do not tile their segment";
        if (b->size == 0 || b->size % kMinBlockSize != 0) return "a block size is not a multiple of 512";
        if (b->stream != head->stream || b->small != head->small || b->pool != head->pool)
          return "a block differs from its segment";
        if (b->next && b->next->prev != b) return "broken prev/next links";
        expect = b->ptr + b->size;
        reserved += static_cast<int64_t>(b->size);
        const bool split = b->prev || b->next;
        if (b->state == Block::kFree) {
          ++nfree;
          if (b->next && b->next->state == Block::kFree) return "two free neighbours were not merged";
          const auto& pool = b->small ? small_pool_ : large_pool_;
          if (pool.find(const_cast<Block*>(b)) == pool.end()) return "a free block is not in its pool";
          if (split) split_free += static_cast<int64_t>(b->size);
        } else {
          active += static_cast<int64_t>(b->size);
          if (b->state == Block::kAllocated) {
            allocated += static_cast<int64_t>(b->size);
            ++nallocated;
            auto it = allocated_.find(b->ptr);
            if (it == allocated_.end() || it->second != b) return "an allocated block is not in the map";
          } else {  // pending: waits for its events, or (during a capture) for them to be recorded
            const bool deferred = std::find(deferred_.begin(), deferred_.end(), b) != deferred_.end();
            const auto waits = std::count_if(pending_.begin(), pending_.end(), [&](const auto& e) { return e.second == b; });
            if (deferred ? (b->event_count != 0 || waits != 0 || b->stream_uses.empty()) : waits != b->event_count)
              return "a pending block's events do not match";
          }
        }
      }
    }
    if (nfree != small_pool_.size() + large_pool_.size()) return "the pools hold blocks that are not free";
    for (const auto& [ptr, head] : segments_)
      if (head->pool != kSharedPool && !pools_.count(head->pool)) return "a segment of a forgotten private pool";
    if (static_cast<size_t>(nallocated) != allocated_.size()) return "the map holds blocks that are not allocated";
    const BlockAllocatorStats& s = stats_;
    if (s.reserved_bytes[kAllPools].current != reserved) return "reserved_bytes does not match";
    if (s.allocated_bytes[kAllPools].current != allocated) return "allocated_bytes does not match";
    if (s.active_bytes[kAllPools].current != active) return "active_bytes does not match";
    if (s.inactive_split_bytes[kAllPools].current != split_free) return "inactive_split_bytes does not match";
    if (s.segment[kAllPools].current != nsegments) return "the segment count does not match";
    if (s.allocation[kAllPools].current != nallocated) return "the allocation count does not match";
    for (const StatArray* a : {&s.allocated_bytes, &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes,
                               &s.allocation, &s.segment, &s.active, &s.inactive_split})
      if ((*a)[kAllPools].current != (*a)[kSmallPoolStat].current + (*a)[kLargePoolStat].current)
        return "the per-pool statistics do not add up";
    return "";
  }

 private:
  struct Block {
    enum State : uint8_t { kFree, kAllocated, kPending };
    char* ptr = nullptr;
    size_t size = 0;
    size_t requested = 0;
    void* stream = nullptr;  ///< the stream of the segment (always on this device)
    PoolId pool = kSharedPool;  ///< the segment's pool
    bool small = false;
    State state = kFree;
    int event_count = 0;  ///< pending events (kPending)
    Block* prev = nullptr;
    Block* next = nullptr;
    std::vector<StreamRef> stream_uses;  ///< other streams (record_stream)
  };
  // Free blocks by (pool, stream, size, address): lower_bound finds the best
  // fit of a pool on a stream.
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const {
      if (a->pool != b->pool) return a->pool < b->pool;
      const auto sa = reinterpret_cast<uintptr_t>(a->stream), sb = reinterpret_cast<uintptr_t>(b->stream);
      if (sa != sb) return sa < sb;
      if (a->size != b->size) return a->size < b->size;
      return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
    }
  };
  using Pool = std::set<Block*, BlockLess>;

  static void update(StatArray& a, bool small, int64_t n) {
    a[kAllPools].add(n);
    a[small ? kSmallPoolStat : kLargePoolStat].add(n);
  }
  static void remove(StatArray& a, bool small, int64_t n) {
    a[kAllPools].sub(n);
    a[small ? kSmallPoolStat : kLargePoolStat].sub(n);
  }
  void fill(AllocInfo* info, bool miss) const {
    info->cache_miss = miss;
    info->allocated = stats_.allocated_bytes[kAllPools].current;
    info->reserved = stats_.reserved_bytes[kAllPools].current;
  }

  // The pools and the inactive-split statistics change together: a free
  // block counts as inactive split while its segment is split.
  void pool_insert(Block* b) {
    b->state = Block::kFree;
    (b->small ? small_pool_ : large_pool_).insert(b);
    if (b->prev || b->next) {
      update(stats_.inactive_split_bytes, b->small, static_cast<int64_t>(b->size));
      update(stats_.inactive_split, b->small, 1);
    }
  }
  void pool_erase(Block* b) {
    (b->small ? small_pool_ : large_pool_).erase(b);
    if (b->prev || b->next) {
      remove(stats_.inactive_split_bytes, b->small, static_cast<int64_t>(b->size));
      remove(stats_.inactive_split, b->small, 1);
    }
  }

  Block* take_free_block(Pool& pool, PoolId id, void* stream, size_t size) {
    Block key;
    key.pool = id;
    key.stream = stream;
    key.size = size;
    key.ptr = nullptr;
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->pool != id || (*it)->stream != stream) return nullptr;
    Block* b = *it;
    pool_erase(b);
    return b;
  }

  static bool should_split(const Block* b, size_t size) {
    const size_t remaining = b->size - size;
    return b->small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  }

  // A new segment for a rounded request (retried once after releasing the
  // cache); the whole segment is returned as one block, not in a pool.
  Block* new_segment(size_t size, void* stream, bool small, PoolId id) {
    const size_t seg = segment_size(size);
    void* p = backend_.raw_alloc(seg);
    if (p == nullptr) {
      // Releasing the cache waits for events and frees memory: not during a
      // capture (Note [Events and a capture]), where the request fails now.
      if (!backend_.capture_underway()) {
        ++stats_.num_alloc_retries;
        release_cached_blocks();
        p = backend_.raw_alloc(seg);
      }
      if (p == nullptr) {
        ++stats_.num_ooms;
        throw_oom(size);
      }
    }
    ++stats_.num_device_alloc;
    update(stats_.reserved_bytes, small, static_cast<int64_t>(seg));
    update(stats_.segment, small, 1);
    Block* b = new Block;
    b->ptr = static_cast<char*>(p);
    b->size = seg;
    b->stream = stream;
    b->small = small;
    b->pool = id;
    segments_.emplace(b->ptr, b);
    return b;
  }

  // An allocated or pending block becomes free: merged with free neighbours
  // (the leftmost Block object survives, so a segment's head never changes).
  void free_block(Block* b) {
    remove(stats_.active_bytes, b->small, static_cast<int64_t>(b->size));
    remove(stats_.active, b->small, 1);
    if (Block* n = b->next; n && n->state == Block::kFree) {
      pool_erase(n);
      b->size += n->size;
      b->next = n->next;
      if (b->next) b->next->prev = b;
      delete n;
    }
    if (Block* p = b->prev; p && p->state == Block::kFree) {
      pool_erase(p);
      p->size += b->size;
      p->next = b->next;
      if (p->next) p->next->prev = p;
      delete b;
      b = p;
    }
    pool_insert(b);
    if (b->pool != kSharedPool && !b->prev && !b->next) {
      auto it = pools_.find(b->pool);
      if (it != pools_.end() && it->second.use_count == 0) {  // the last block of a released pool's segment
        const PoolId id = b->pool;
        release_segment(b);
        forget_pool_if_empty(id);
      }
    }
  }

  // Note [Events and a capture]
  // An event recorded on a stream that a CUDA graph captures becomes a node
  // of the graph, and querying it afterwards fails (cudaErrorCapturedEvent);
  // a query, a wait or a cudaFree while a global-mode capture is underway on
  // any thread invalidates that capture. So while a capture is underway a
  // block freed with uses on other streams (record_stream) waits in
  // deferred_ without events, pending events are not polled (the backend's
  // query says not done), and an allocation the backend refuses fails
  // without releasing the cache; the first malloc, process_pending or
  // empty_cache after the capture records the deferred blocks' events, as
  // PyTorch's allocator does.
  /// An event recorded now on each stream that used `b` besides its own; if
  /// one throws, those recorded are released and the error propagates.
  std::vector<void*> record_use_events(const Block* b) {
    std::vector<void*> events;
    events.reserve(b->stream_uses.size());
    try {
      for (const StreamRef& s : b->stream_uses) events.push_back(backend_.record_event(s));
    } catch (...) {
      for (void* e : events) backend_.release_event(e);
      throw;
    }
    return events;
  }
  void record_deferred_events() {
    if (deferred_.empty() || backend_.capture_underway()) return;
    while (!deferred_.empty()) {
      Block* b = deferred_.front();
      const std::vector<void*> events = record_use_events(b);  // a throw leaves it deferred
      deferred_.pop_front();
      await_events(b, events);
    }
  }
  /// `b` (freed) becomes reusable once all of `events` have completed.
  void await_events(Block* b, const std::vector<void*>& events) {
    b->stream_uses.clear();
    b->state = Block::kPending;
    b->event_count = static_cast<int>(events.size());
    for (void* e : events) pending_.emplace_back(e, b);
  }

  // Completed events release their blocks; the others stay queued.
  void process_events() {
    record_deferred_events();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (!backend_.query_event(it->first)) {
        ++it;
        continue;
      }
      Block* b = it->second;
      backend_.release_event(it->first);
      it = pending_.erase(it);
      if (--b->event_count == 0) free_block(b);
    }
  }

  void synchronize_and_free_events() {
    record_deferred_events();
    while (!pending_.empty()) {
      auto [e, b] = pending_.front();
      backend_.synchronize_event(e);
      ++stats_.num_sync_events;
      backend_.release_event(e);
      pending_.pop_front();
      if (--b->event_count == 0) free_block(b);
    }
  }

  // Waits for pending events, then frees every segment that is one free
  // block, but those of private pools in use. Nothing while a capture is
  // underway (Note [Events and a capture]).
  void release_cached_blocks() {
    if (backend_.capture_underway()) return;
    synchronize_and_free_events();
    release_free_segments([&](const Block* b) {
      if (b->pool == kSharedPool) return true;
      auto it = pools_.find(b->pool);
      return it == pools_.end() || it->second.use_count == 0;
    });
  }

  // Frees the segments that are one free block and that `pick` chooses.
  template <class Pick>
  void release_free_segments(Pick&& pick) {
    std::vector<Block*> whole;
    for (Pool* pool : {&small_pool_, &large_pool_})
      for (Block* b : *pool)
        if (!b->prev && !b->next && pick(static_cast<const Block*>(b))) whole.push_back(b);
    for (Block* b : whole) release_segment(b);
  }

  // A whole free segment (one block, in its pool) goes back to the backend.
  void release_segment(Block* b) {
    pool_erase(b);
    segments_.erase(b->ptr);
    backend_.raw_free(b->ptr, b->size);
    ++stats_.num_device_free;
    remove(stats_.reserved_bytes, b->small, static_cast<int64_t>(b->size));
    remove(stats_.segment, b->small, 1);
    delete b;
  }

  // A released private pool is forgotten once its last segment is gone.
  void forget_pool_if_empty(PoolId id) {
    auto it = pools_.find(id);
    if (it == pools_.end() || it->second.use_count != 0) return;
    for (const auto& [ptr, head] : segments_)
      if (head->pool == id) return;
    pools_.erase(it);
  }

  // The pool a request on `stream` is served from.
  PoolId route(StreamRef stream) const {
    for (const auto& r : routes_)
      if (r.stream == stream) return r.pool;
    return kSharedPool;
  }

  [[noreturn]] void throw_oom(size_t nbytes) {
    int64_t free_bytes = -1, total_bytes = -1;
    backend_.mem_info(&free_bytes, &total_bytes);
    const int64_t allocated = stats_.allocated_bytes[kAllPools].current;
    const int64_t reserved = stats_.reserved_bytes[kAllPools].current;
    const int64_t request = static_cast<int64_t>(nbytes > kMaxRequest ? nbytes : round_size(nbytes));
    std::string device_line = total_bytes >= 0 ? format_size(total_bytes) + " total, " + format_size(free_bytes) + " free"
                                               : std::string("unknown total and free memory");
    BRISK_FAIL("empty", "CUDA out of memory: tried to allocate ", format_size(request), "; cuda:", device_, " has ",
               device_line, "; brisk has ", format_size(allocated), " allocated by tensors and ", format_size(reserved),
               " reserved (", format_size(reserved - allocated),
               " cached); free the tensors you no longer need (brisk::cuda::empty_cache() returns cached blocks "
               "to the driver for other processes) or reduce the batch size");
  }

  MemoryBackend& backend_;
  const int device_;
  mutable std::mutex mu_;
  Pool small_pool_, large_pool_;
  std::unordered_map<char*, Block*> allocated_;     ///< live blocks by address
  std::map<char*, Block*> segments_;                ///< segment heads by address
  std::deque<std::pair<void*, Block*>> pending_;     ///< (event, block) waiting to complete
  std::deque<Block*> deferred_;  ///< freed during a capture, events not recorded yet (Note [Events and a capture])
  BlockAllocatorStats stats_;
  struct PrivatePool {
    int use_count = 0;
  };
  struct Route {
    StreamRef stream;
    PoolId pool;
  };
  std::map<PoolId, PrivatePool> pools_;  ///< private pools that exist (Note [Private pools])
  std::vector<Route> routes_;            ///< streams allocating to a private pool now
};

// ---- the pinned host allocator --------------------------------------------------------
/// Statistics of the pinned host allocator (HostMemoryStats plus what tests need).
struct HostBlockStats {
  int64_t allocated = 0;       ///< bytes in blocks handed out (powers of two)
  int64_t reserved = 0;        ///< bytes held from the backend (handed out, cached or pending)
  int64_t num_allocs = 0;      ///< requests
  int64_t num_host_alloc = 0;  ///< raw_alloc calls that succeeded
  int64_t num_host_free = 0;   ///< raw_free calls
  int64_t num_pending = 0;     ///< blocks freed and waiting for stream events
};

/// The caching pinned-host allocator: blocks rounded up to powers of two,
/// kept by size when freed; a block used by an asynchronous copy is reused
/// only after an event recorded at free time on the copy's stream has
/// completed. Thread-safe (one mutex).
class HostBlockAllocator {
 public:
  explicit HostBlockAllocator(MemoryBackend& backend) : backend_(backend) {}
  ~HostBlockAllocator() {
    std::lock_guard<std::mutex> g(mu_);
    // Cached blocks go back to the backend; live and pending ones are leaked
    // on purpose (their memory may be in use).
    for (auto& [e, b] : pending_) backend_.release_event(e);
    pending_.clear();
    release_free_blocks();
    for (auto& [addr, b] : blocks_) delete b;
  }
  HostBlockAllocator(const HostBlockAllocator&) = delete;
  HostBlockAllocator& operator=(const HostBlockAllocator&) = delete;

  /// A block of at least `nbytes` (null for 0). Throws brisk::Error
  /// "[pin_memory] out of pinned host memory: ..." when the backend refuses
  /// even after the cache was released.
  void* malloc(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    std::lock_guard<std::mutex> g(mu_);
    ++stats_.num_allocs;
    process_events();
    if (nbytes > kMaxRequest) throw_oom(nbytes);
    const size_t size = next_pow2(nbytes);
    Block* b = nullptr;
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      b = it->second.back();
      it->second.pop_back();
    } else {
      void* p = backend_.raw_alloc(size);
      if (p == nullptr) {
        release_free_blocks();
        p = backend_.raw_alloc(size);
        if (p == nullptr) throw_oom(size);
      }
      ++stats_.num_host_alloc;
      stats_.reserved += static_cast<int64_t>(size);
      b = new Block;
      b->ptr = static_cast<char*>(p);
      b->size = size;
      blocks_.emplace(reinterpret_cast<uintptr_t>(p), b);
    }
    b->allocated = true;
    stats_.allocated += static_cast<int64_t>(size);
    return b->ptr;
  }

  /// Returns a block from malloc (`ptr` is its start). False when `ptr` is
  /// not a live block; free(nullptr) is a no-op returning true.
  bool free(void* ptr) {
    if (ptr == nullptr) return true;
    std::lock_guard<std::mutex> g(mu_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == blocks_.end() || !it->second->allocated) return false;
    Block* b = it->second;
    std::vector<void*> events;
    try {
      for (const StreamRef& s : b->stream_uses) events.push_back(backend_.record_event(s));
    } catch (...) {
      for (void* e : events) backend_.release_event(e);
      throw;
    }
    b->allocated = false;
    b->stream_uses.clear();
    stats_.allocated -= static_cast<int64_t>(b->size);
    if (events.empty()) {
      free_[b->size].push_back(b);
    } else {
      b->event_count = static_cast<int>(events.size());
      ++stats_.num_pending;
      for (void* e : events) pending_.emplace_back(e, b);
    }
    return true;
  }

  /// The live block containing `p` (anywhere inside it) is used by work on
  /// `s`. False when `p` is not inside a live block.
  bool record_use(const void* p, StreamRef s) {
    std::lock_guard<std::mutex> g(mu_);
    Block* b = find_containing(p);
    if (b == nullptr || !b->allocated) return false;
    if (std::find(b->stream_uses.begin(), b->stream_uses.end(), s) == b->stream_uses.end())
      b->stream_uses.push_back(s);
    return true;
  }

  /// Whether `p` points anywhere inside a block this allocator holds
  /// (handed out, cached or pending).
  bool contains(const void* p) const {
    std::lock_guard<std::mutex> g(mu_);
    return find_containing(p) != nullptr;
  }

  /// Polls the pending events, then returns every cached block to the
  /// backend (blocks still waiting for a copy stay).
  void empty_cache() {
    std::lock_guard<std::mutex> g(mu_);
    process_events();
    release_free_blocks();
  }

  HostBlockStats stats() const {
    std::lock_guard<std::mutex> g(mu_);
    return stats_;
  }

 private:
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    bool allocated = false;
    int event_count = 0;
    std::vector<StreamRef> stream_uses;
  };

  Block* find_containing(const void* p) const {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return nullptr;
    --it;
    return a < it->first + it->second->size ? it->second : nullptr;
  }

  void process_events() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (!backend_.query_event(it->first)) {
        ++it;
        continue;
      }
      Block* b = it->second;
      backend_.release_event(it->first);
      it = pending_.erase(it);
      if (--b->event_count == 0) {
        --stats_.num_pending;
        free_[b->size].push_back(b);
      }
    }
  }

  void release_free_blocks() {
    for (auto& [size, v] : free_) {
      for (Block* b : v) {
        blocks_.erase(reinterpret_cast<uintptr_t>(b->ptr));
        backend_.raw_free(b->ptr, b->size);
        ++stats_.num_host_free;
        stats_.reserved -= static_cast<int64_t>(b->size);
        delete b;
      }
    }
    free_.clear();
  }

  [[noreturn]] void throw_oom(size_t nbytes) {
    BRISK_FAIL("pin_memory", "out of pinned host memory: tried to allocate ", format_size(static_cast<int64_t>(nbytes)),
               " with cudaHostAlloc; brisk holds ", format_size(stats_.allocated), " of pinned memory in tensors and ",
               format_size(stats_.reserved), " in all; free pinned tensors you no longer need or use pageable memory");
  }

  MemoryBackend& backend_;
  mutable std::mutex mu_;
  std::map<uintptr_t, Block*> blocks_;                 ///< every block held, by address
  std::map<size_t, std::vector<Block*>> free_;         ///< cached blocks by size
  std::deque<std::pair<void*, Block*>> pending_;       ///< (event, block) waiting to complete
  HostBlockStats stats_;
};

}  // namespace brisk::cuda::detail
