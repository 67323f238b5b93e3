// The CUDA caching allocators. The bookkeeping (block_allocator.h) runs here
// on the CPU against a fake backend: malloc'ed memory under a fake limit and
// events that complete when the test says so. These tests run everywhere.
// The last group allocates real device memory and skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "backend/cuda/block_allocator.h"
#include "brisk/brisk.h"
#include "brisk/profiler.h"
#include "test_util.h"

using namespace brisk;
using namespace brisk::cuda::detail;
using brisk::cuda::CudaMemoryStats;
using brisk::testing::expect_error;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

// Memory from malloc under a limit; events that complete on complete(stream).
class FakeBackend final : public MemoryBackend {
 public:
  struct FakeEvent {
    StreamRef stream;
    bool done = false;
  };

  explicit FakeBackend(size_t limit = size_t(1) << 40) : limit(limit) {}
  ~FakeBackend() override {
    for (auto& [p, n] : live) std::free(p);
  }

  void* raw_alloc(size_t n) override {
    if (in_use + n > limit) {
      ++refused;
      return nullptr;
    }
    void* p = std::malloc(n);
    if (p == nullptr) return nullptr;
    in_use += n;
    live[p] = n;
    ++allocs;
    return p;
  }
  void raw_free(void* p, size_t n) override {
    auto it = live.find(p);
    EXPECT_TRUE(it != live.end()) << "raw_free of memory the backend did not give";
    if (it == live.end()) return;
    EXPECT_EQ(it->second, n) << "raw_free with another size than raw_alloc";
    live.erase(it);
    in_use -= n;
    ++frees;
    std::free(p);
  }
  void* record_event(StreamRef s) override {
    events.push_back(std::make_unique<FakeEvent>(FakeEvent{s, false}));
    outstanding.insert(events.back().get());
    return events.back().get();
  }
  bool query_event(void* e) override {
    EXPECT_TRUE(outstanding.count(static_cast<FakeEvent*>(e))) << "query of a released event";
    return static_cast<FakeEvent*>(e)->done;
  }
  void synchronize_event(void* e) override {
    static_cast<FakeEvent*>(e)->done = true;
    ++syncs;
  }
  void release_event(void* e) override {
    EXPECT_EQ(outstanding.erase(static_cast<FakeEvent*>(e)), 1u) << "event released twice";
  }
  bool capture_underway() const override { return capturing; }
  void mem_info(int64_t* free_bytes, int64_t* total_bytes) override {
    *total_bytes = static_cast<int64_t>(limit);
    *free_bytes = static_cast<int64_t>(limit - in_use);
  }

  // All work queued so far on `s` has finished.
  void complete(StreamRef s) {
    for (auto& e : events)
      if (e->stream == s) e->done = true;
  }

  size_t limit, in_use = 0;
  int64_t allocs = 0, frees = 0, refused = 0, syncs = 0;
  bool capturing = false;  // a CUDA graph capture is underway (Note [Events and a capture])
  std::map<void*, size_t> live;
  std::vector<std::unique_ptr<FakeEvent>> events;
  std::set<FakeEvent*> outstanding;
};

// Fake streams of device 0 (the handles are never dereferenced).
const StreamRef kDefault{nullptr, 0};
const StreamRef kA{reinterpret_cast<void*>(0x1000), 0};
const StreamRef kB{reinterpret_cast<void*>(0x2000), 0};
const StreamRef kC{reinterpret_cast<void*>(0x3000), 0};

char* as_char(void* p) { return static_cast<char*>(p); }

std::vector<size_t> block_sizes(const BlockAllocator::SegmentInfo& s) {
  std::vector<size_t> r;
  for (auto& b : s.blocks) r.push_back(b.size);
  return r;
}

}  // namespace

// ---- sizes -------------------------------------------------------------------------

TEST(CachingAllocatorSizes, RoundingAndPools) {
  EXPECT_EQ(round_size(1), 512u);
  EXPECT_EQ(round_size(511), 512u);
  EXPECT_EQ(round_size(512), 512u);
  EXPECT_EQ(round_size(513), 1024u);
  EXPECT_EQ(round_size(4000), 4096u);
  EXPECT_EQ(round_size(MiB + 1), MiB + 512);
  EXPECT_TRUE(is_small_size(round_size(MiB)));
  EXPECT_FALSE(is_small_size(round_size(MiB + 1)));
  // Small pool: 2 MiB segments; large: 20 MiB below 10 MiB, else rounded to 2 MiB.
  EXPECT_EQ(segment_size(512), 2 * MiB);
  EXPECT_EQ(segment_size(MiB), 2 * MiB);
  EXPECT_EQ(segment_size(MiB + 512), 20 * MiB);
  EXPECT_EQ(segment_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(segment_size(10 * MiB), 10 * MiB);
  EXPECT_EQ(segment_size(11 * MiB + 512), 12 * MiB);
  EXPECT_EQ(segment_size(12 * MiB), 12 * MiB);
  EXPECT_EQ(next_pow2(1), 1u);
  EXPECT_EQ(next_pow2(1000), 1024u);
  EXPECT_EQ(next_pow2(1024), 1024u);
  EXPECT_EQ(next_pow2(1025), 2048u);
}

TEST(CachingAllocatorSizes, FormatSize) {
  EXPECT_EQ(format_size(0), "0 bytes");
  EXPECT_EQ(format_size(512), "512 bytes");
  EXPECT_EQ(format_size(1536), "1.50 KiB");
  EXPECT_EQ(format_size(20 * int64_t(MiB)), "20.00 MiB");
  EXPECT_EQ(format_size(int64_t(3) << 30), "3.00 GiB");
}

// ---- the device block allocator on the fake backend ------------------------------------

TEST(BlockAllocator, SmallAndLargePools) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  void* s = a.malloc(1, kDefault);  // small pool: 512 B out of a 2 MiB segment
  ASSERT_NE(s, nullptr);
  CudaMemoryStats st = a.stats();
  EXPECT_EQ(st.allocated, 512);
  EXPECT_EQ(st.reserved, int64_t(2 * MiB));
  EXPECT_EQ(st.num_segments, 1);
  void* h = a.malloc(12 * MiB, kDefault);  // large pool: its own 12 MiB segment, no remainder
  st = a.stats();
  EXPECT_EQ(st.allocated, int64_t(512 + 12 * MiB));
  EXPECT_EQ(st.reserved, int64_t(14 * MiB));
  EXPECT_EQ(st.num_segments, 2);
  // 11 MiB + 1 -> 11 MiB + 512 in a 12 MiB segment; the remainder (1 MiB - 512)
  // cannot serve a large request, so it stays with the block.
  void* odd = a.malloc(11 * MiB + 1, kDefault);
  void* l = a.malloc(MiB + 1, kDefault);  // under 10 MiB: a 20 MiB segment, split
  st = a.stats();
  EXPECT_EQ(st.reserved, int64_t(46 * MiB));
  EXPECT_EQ(st.allocated, int64_t(512 + MiB + 512 + 24 * MiB));
  EXPECT_EQ(st.num_device_alloc, 4);
  auto snap = a.snapshot();
  ASSERT_EQ(snap.size(), 4u);
  std::map<uintptr_t, BlockAllocator::SegmentInfo> by_addr;
  for (auto& seg : snap) by_addr[seg.address] = seg;
  auto seg_of = [&](void* p) {
    auto it = by_addr.upper_bound(reinterpret_cast<uintptr_t>(p));
    return std::prev(it)->second;
  };
  EXPECT_TRUE(seg_of(s).small);
  EXPECT_EQ(block_sizes(seg_of(s)), (std::vector<size_t>{512, 2 * MiB - 512}));
  EXPECT_FALSE(seg_of(l).small);
  EXPECT_EQ(block_sizes(seg_of(l)), (std::vector<size_t>{MiB + 512, 19 * MiB - 512}));
  EXPECT_EQ(block_sizes(seg_of(h)), (std::vector<size_t>{12 * MiB}));
  EXPECT_EQ(block_sizes(seg_of(odd)), (std::vector<size_t>{12 * MiB}));
  EXPECT_EQ(a.check_invariants(), "");
  for (void* p : {s, l, h, odd}) EXPECT_TRUE(a.free(p));
  EXPECT_EQ(a.stats().allocated, 0);
  EXPECT_EQ(a.check_invariants(), "");
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(fake.in_use, 0u);
}

TEST(BlockAllocator, SmallRemaindersSplitLargeOnesOverOneMiB) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  // Small pool: a remainder of one minimum block (512 B) is kept as a block.
  void* p = a.malloc(MiB, kDefault);  // remainder 1 MiB
  EXPECT_EQ(block_sizes(a.snapshot()[0]), (std::vector<size_t>{MiB, MiB}));
  void* q = a.malloc(MiB - 512, kDefault);  // remainder 512 B: split
  EXPECT_EQ(block_sizes(a.snapshot()[0]), (std::vector<size_t>{MiB, MiB - 512, 512}));
  void* r = a.malloc(512, kDefault);  // the 512 B remainder is the best fit
  EXPECT_EQ(as_char(r), as_char(q) + MiB - 512);
  EXPECT_EQ(a.stats().num_segments, 1);
  // Large pool: a remainder of exactly 1 MiB is not split off.
  void* big = a.malloc(19 * MiB, kDefault);
  bool found = false;
  for (auto& seg : a.snapshot())
    if (!seg.small) {
      EXPECT_EQ(block_sizes(seg), (std::vector<size_t>{20 * MiB}));
      found = true;
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(a.stats().allocated, int64_t(2 * MiB + 20 * MiB));
  for (void* x : {p, q, r, big}) a.free(x);
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, FreedBlockIsReused) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  AllocInfo info;
  void* p = a.malloc(1000, kDefault, &info);
  EXPECT_TRUE(info.cache_miss);
  EXPECT_EQ(info.allocated, 1024);
  EXPECT_EQ(info.reserved, int64_t(2 * MiB));
  ASSERT_TRUE(a.free(p, &info));
  EXPECT_EQ(info.allocated, 0);
  void* q = a.malloc(900, kDefault, &info);
  EXPECT_FALSE(info.cache_miss);
  EXPECT_EQ(q, p);
  EXPECT_EQ(fake.allocs, 1);
  // Large blocks too: a 5 MiB request after a 6 MiB block was freed takes it
  // (best fit among the free blocks of the stream, split when worth it).
  void* big = a.malloc(6 * MiB, kDefault);
  a.free(big);
  void* again = a.malloc(5 * MiB, kDefault);
  EXPECT_EQ(again, big);
  EXPECT_EQ(fake.allocs, 2);
  a.free(q);
  a.free(again);
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, BestFitPrefersTheSmallestBlock) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  // Blocks of 8 KiB and 4 KiB free with live blocks between them.
  void* x8 = a.malloc(8 * KiB, kDefault);
  void* keep1 = a.malloc(512, kDefault);
  void* x4 = a.malloc(4 * KiB, kDefault);
  void* keep2 = a.malloc(512, kDefault);
  a.free(x8);
  a.free(x4);
  EXPECT_EQ(a.malloc(3 * KiB, kDefault), x4);  // 4 KiB fits best, not 8 KiB nor the big remainder
  EXPECT_EQ(a.malloc(6 * KiB, kDefault), x8);
  EXPECT_EQ(a.check_invariants(), "");
  (void)keep1, (void)keep2;
}

TEST(BlockAllocator, SplitAndMergeInEveryOrder) {
  std::vector<int> order = {0, 1, 2};
  do {
    FakeBackend fake;
    BlockAllocator a(fake, 0);
    void* b[3];
    for (auto& p : b) p = a.malloc(4 * KiB, kDefault);
    EXPECT_EQ(as_char(b[1]), as_char(b[0]) + 4 * KiB);
    EXPECT_EQ(as_char(b[2]), as_char(b[1]) + 4 * KiB);
    ASSERT_EQ(a.snapshot().size(), 1u);
    EXPECT_EQ(block_sizes(a.snapshot()[0]), (std::vector<size_t>{4 * KiB, 4 * KiB, 4 * KiB, 2 * MiB - 12 * KiB}));
    EXPECT_EQ(a.stats().inactive_split, int64_t(2 * MiB - 12 * KiB));
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(a.free(b[order[k]]));
      EXPECT_EQ(a.check_invariants(), "") << "after freeing block " << order[k];
    }
    ASSERT_EQ(a.snapshot().size(), 1u);
    EXPECT_EQ(block_sizes(a.snapshot()[0]), (std::vector<size_t>{2 * MiB})) << "free neighbours were not merged";
    EXPECT_EQ(a.stats().inactive_split, 0);
    // The merged segment serves the largest small request from its start.
    EXPECT_EQ(a.malloc(MiB, kDefault), b[0]);
    EXPECT_EQ(a.stats().num_segments, 1);
    EXPECT_EQ(fake.allocs, 1);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(BlockAllocator, MergedNeighboursServeABiggerRequest) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  // Large pool: three 3 MiB blocks from one 20 MiB segment.
  void* x = a.malloc(3 * MiB, kDefault);
  void* y = a.malloc(3 * MiB, kDefault);
  void* z = a.malloc(3 * MiB, kDefault);
  EXPECT_EQ(a.stats().num_segments, 1);
  a.free(y);
  EXPECT_EQ(a.stats().inactive_split, int64_t(11 * MiB + 3 * MiB));
  a.free(x);  // x and y merge into one 6 MiB block
  EXPECT_EQ(block_sizes(a.snapshot()[0]), (std::vector<size_t>{6 * MiB, 3 * MiB, 11 * MiB}));
  // 5 MiB: the merged block (6 MiB) is the best fit; its 1 MiB remainder is
  // not split off (a large-pool block must exceed 1 MiB).
  EXPECT_EQ(a.malloc(5 * MiB, kDefault), x);
  EXPECT_EQ(block_sizes(a.snapshot()[0]), (std::vector<size_t>{6 * MiB, 3 * MiB, 11 * MiB}));
  EXPECT_EQ(fake.allocs, 1);
  // Small pool: free the middle then the last of three; the two merge with
  // the segment's free tail.
  void* s0 = a.malloc(MiB / 2, kDefault);
  void* s1 = a.malloc(MiB / 2, kDefault);
  void* s2 = a.malloc(MiB / 2, kDefault);
  a.free(s1);
  a.free(s2);
  EXPECT_EQ(a.malloc(MiB, kDefault), s1);  // 1.5 MiB free after s0
  (void)z, (void)s0;
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, StreamsDoNotShareFreeBlocks) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  // Both directions (the pools are ordered by stream handle, A < B).
  void* p = a.malloc(4 * KiB, kA);
  a.free(p);
  void* q = a.malloc(4 * KiB, kB);
  EXPECT_NE(q, p);
  EXPECT_EQ(a.stats().num_segments, 2) << "stream B must get its own segment";
  for (auto& seg : a.snapshot()) EXPECT_TRUE(seg.stream == kA.handle || seg.stream == kB.handle);
  void* r = a.malloc(4 * KiB, kA);
  EXPECT_EQ(r, p);
  // Large pool: a block freed on B is not given to A.
  void* lb = a.malloc(4 * MiB, kB);
  a.free(lb);
  void* la = a.malloc(4 * MiB, kA);
  EXPECT_NE(la, lb);
  EXPECT_EQ(a.stats().num_segments, 4) << "stream A must get its own segment";
  a.free(la);
  EXPECT_EQ(a.malloc(4 * MiB, kB), lb);
  EXPECT_EQ(a.malloc(4 * MiB, kA), la);
  EXPECT_EQ(a.stats().num_segments, 4);
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, RecordStreamDefersReuseUntilTheEventCompletes) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  void* p = a.malloc(4 * KiB, kA);
  EXPECT_TRUE(a.record_stream(p, kB));
  EXPECT_TRUE(a.record_stream(p, kB));  // recorded once
  ASSERT_TRUE(a.free(p));
  ASSERT_EQ(fake.outstanding.size(), 1u);
  EXPECT_TRUE((*fake.outstanding.begin())->stream == kB);
  CudaMemoryStats st = a.stats();
  EXPECT_EQ(st.allocated, 0);
  EXPECT_EQ(st.active, int64_t(4 * KiB)) << "a block waiting for a stream is still active";
  EXPECT_EQ(st.num_frees, 1);
  // Not reused while stream B may still use it.
  void* q = a.malloc(4 * KiB, kA);
  EXPECT_NE(q, p);
  EXPECT_EQ(a.check_invariants(), "");
  // Work on another stream finishing does not release it.
  fake.complete(kA);
  a.process_pending();
  EXPECT_EQ(a.stats().active, int64_t(8 * KiB));
  fake.complete(kB);
  void* r = a.malloc(4 * KiB, kA);  // polls the event: p is free again, and the best fit
  EXPECT_EQ(r, p);
  EXPECT_TRUE(fake.outstanding.empty());
  EXPECT_EQ(a.check_invariants(), "");
  // Recording the block's own stream defers nothing.
  EXPECT_TRUE(a.record_stream(r, kA));
  a.free(r);
  EXPECT_TRUE(fake.outstanding.empty());
  EXPECT_EQ(a.malloc(4 * KiB, kA), p);
  // A pointer that is not a live block.
  EXPECT_FALSE(a.record_stream(as_char(p) + 512, kB));
  EXPECT_FALSE(a.record_stream(&fake, kB));
}

TEST(BlockAllocator, RecordStreamOnTwoStreamsWaitsForBoth) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  void* p = a.malloc(64 * KiB, kDefault);
  a.record_stream(p, kB);
  a.record_stream(p, kC);
  a.free(p);
  EXPECT_EQ(fake.outstanding.size(), 2u);
  fake.complete(kB);
  a.process_pending();
  EXPECT_EQ(fake.outstanding.size(), 1u);
  EXPECT_EQ(a.stats().active, int64_t(64 * KiB));
  EXPECT_NE(a.malloc(64 * KiB, kDefault), p);
  fake.complete(kC);
  EXPECT_EQ(a.malloc(64 * KiB, kDefault), p);
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, EmptyCacheReleasesOnlyFullyFreeSegments) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  void* live = a.malloc(4 * KiB, kDefault);       // segment 1 (small): stays
  void* gone = a.malloc(4 * KiB, kDefault);       // same segment, freed: segment still split
  void* large = a.malloc(5 * MiB, kDefault);      // segment 2 (large): freed entirely
  void* other = a.malloc(4 * KiB, kB);            // segment 3 (stream B): freed entirely
  void* pending = a.malloc(16 * MiB, kDefault);   // segment 4: freed, waiting for stream C
  a.record_stream(pending, kC);
  for (void* p : {gone, large, other, pending}) a.free(p);
  EXPECT_EQ(a.stats().num_segments, 4);
  a.empty_cache();
  CudaMemoryStats st = a.stats();
  EXPECT_EQ(st.num_segments, 1);
  EXPECT_EQ(st.reserved, int64_t(2 * MiB));
  EXPECT_EQ(st.num_device_free, 3);
  EXPECT_EQ(fake.syncs, 1) << "the pending block's event is waited for";
  EXPECT_EQ(fake.frees, 3);
  EXPECT_EQ(fake.in_use, 2 * MiB);
  EXPECT_EQ(a.check_invariants(), "");
  a.free(live);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(fake.in_use, 0u);
}

TEST(BlockAllocator, StatsCurrentAndPeak) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  void* p1 = a.malloc(1000, kDefault);     // 1024
  void* p2 = a.malloc(3 * MiB, kDefault);  // 3 MiB of a 20 MiB segment
  void* p3 = a.malloc(2048, kDefault);     // 2048
  CudaMemoryStats st = a.stats();
  const int64_t all = 1024 + 3 * MiB + 2048;
  EXPECT_EQ(st.allocated, all);
  EXPECT_EQ(st.peak_allocated, all);
  EXPECT_EQ(st.active, all);
  EXPECT_EQ(st.reserved, int64_t(22 * MiB));
  EXPECT_EQ(st.num_allocs, 3);
  EXPECT_EQ(st.num_segments, 2);
  EXPECT_EQ(st.inactive_split, int64_t(2 * MiB - 3072 + 17 * MiB));
  a.free(p2);
  a.free(p1);
  st = a.stats();
  EXPECT_EQ(st.allocated, 2048);
  EXPECT_EQ(st.peak_allocated, all);
  EXPECT_EQ(st.peak_active, all);
  EXPECT_EQ(st.num_frees, 2);
  EXPECT_EQ(st.inactive_split, int64_t(2 * MiB - 2048)) << "the large segment is whole again";
  a.empty_cache();
  st = a.stats();
  EXPECT_EQ(st.reserved, int64_t(2 * MiB));
  EXPECT_EQ(st.peak_reserved, int64_t(22 * MiB));
  a.reset_peak_stats();
  st = a.stats();
  EXPECT_EQ(st.peak_allocated, 2048);
  EXPECT_EQ(st.peak_reserved, int64_t(2 * MiB));
  EXPECT_EQ(st.peak_active, 2048);
  EXPECT_EQ(st.num_allocs, 3) << "reset_peak_stats keeps the cumulative counts";
  BlockAllocatorStats d = a.detailed_stats();
  EXPECT_EQ(d.allocated_bytes[kSmallPoolStat].current, 2048);
  EXPECT_EQ(d.allocated_bytes[kLargePoolStat].current, 0);
  EXPECT_EQ(d.allocated_bytes[kLargePoolStat].peak, 0);
  EXPECT_EQ(d.allocated_bytes[kAllPools].allocated, all);
  EXPECT_EQ(d.allocated_bytes[kAllPools].freed, int64_t(1024 + 3 * MiB));
  a.free(p3);
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  FakeBackend fake(40 * MiB);
  BlockAllocator a(fake, 3);
  void* x = a.malloc(15 * MiB, kDefault);  // 16 MiB segment
  void* y = a.malloc(15 * MiB, kDefault);  // 16 MiB segment (32 MiB in use)
  a.free(x);                               // cached
  // 20 MiB does not fit next to 32 MiB under 40 MiB: the cache is released
  // and the request retried.
  void* z = a.malloc(20 * MiB, kDefault);
  ASSERT_NE(z, nullptr);
  CudaMemoryStats st = a.stats();
  EXPECT_EQ(st.num_alloc_retries, 1);
  EXPECT_EQ(st.num_ooms, 0);
  EXPECT_EQ(st.num_device_free, 1);
  EXPECT_EQ(st.reserved, int64_t(36 * MiB));
  EXPECT_EQ(fake.in_use, 36 * MiB);
  EXPECT_EQ(a.check_invariants(), "");
  // 8 MiB needs a 20 MiB segment: nothing is left to release.
  expect_error([&] { a.malloc(8 * MiB, kDefault); },
               {"[empty] CUDA out of memory: tried to allocate 8.00 MiB", "cuda:3 has 40.00 MiB total, 4.00 MiB free",
                "brisk has 36.00 MiB allocated by tensors and 36.00 MiB reserved (0 bytes cached)", "empty_cache",
                "reduce the batch size"});
  st = a.stats();
  EXPECT_EQ(st.num_ooms, 1);
  EXPECT_EQ(st.num_alloc_retries, 2);
  EXPECT_EQ(st.allocated, int64_t(36 * MiB));
  EXPECT_EQ(a.check_invariants(), "");
  // The allocator still works after the error; a small request fits.
  void* s = a.malloc(100, kDefault);
  EXPECT_NE(s, nullptr);
  a.free(s);
  a.free(y);
  a.free(z);
  EXPECT_EQ(a.check_invariants(), "");
  // A request beyond any size is an out-of-memory error too.
  expect_error([&] { a.malloc(size_t(1) << 62, kDefault); }, {"[empty] CUDA out of memory"});
  EXPECT_EQ(a.stats().num_ooms, 2);
}

TEST(BlockAllocator, OutOfMemoryWaitsForPendingBlocks) {
  FakeBackend fake(24 * MiB);
  BlockAllocator a(fake, 0);
  void* p = a.malloc(12 * MiB, kA);
  a.record_stream(p, kB);
  a.free(p);  // waits for stream B: not reusable, not releasable yet
  void* q = a.malloc(20 * MiB, kA);  // 12 + 20 > 24: wait for B, release p's segment, retry
  EXPECT_NE(q, nullptr);
  EXPECT_EQ(fake.syncs, 1);
  EXPECT_TRUE(fake.outstanding.empty());
  EXPECT_EQ(a.stats().reserved, int64_t(20 * MiB));
  EXPECT_EQ(a.stats().num_alloc_retries, 1);
  EXPECT_EQ(a.check_invariants(), "");
  // Split segments are not released: the message reports what stays cached.
  a.free(q);
  void* s1 = a.malloc(2 * MiB, kA);  // from the 20 MiB segment, which is now split
  expect_error([&] { a.malloc(8 * MiB, kB); },
               {"out of memory", "brisk has 2.00 MiB allocated by tensors and 20.00 MiB reserved (18.00 MiB cached)"});
  a.free(s1);
}

// Note [Events and a capture]: a block freed during a capture with uses on
// other streams records no event then (the event would be captured, and
// querying it afterwards fails); its events are recorded by the first malloc
// after the capture, and it is reused once they complete.
TEST(BlockAllocator, ABlockFreedDuringACaptureRecordsItsEventsAfterIt) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  void* p = a.malloc(4 * KiB, kA);
  void* keep = a.malloc(4 * KiB, kA);  // p's neighbour: p's segment is not released below
  ASSERT_TRUE(a.record_stream(p, kB));
  fake.capturing = true;
  ASSERT_TRUE(a.free(p));
  EXPECT_TRUE(fake.events.empty()) << "an event recorded during the capture";
  EXPECT_EQ(a.stats().allocated, int64_t(4 * KiB));
  EXPECT_EQ(a.stats().active, int64_t(8 * KiB)) << "the freed block waits";
  EXPECT_EQ(a.check_invariants(), "");
  void* q = a.malloc(4 * KiB, kA);  // during the capture: p is not reused, nothing recorded
  EXPECT_NE(q, p);
  EXPECT_TRUE(fake.events.empty());
  a.process_pending();
  a.empty_cache();  // nothing waited for or returned during a capture
  EXPECT_EQ(fake.syncs, 0);
  EXPECT_EQ(fake.frees, 0);
  EXPECT_EQ(a.check_invariants(), "");
  fake.capturing = false;
  void* r = a.malloc(4 * KiB, kA);  // records p's event on B (not done yet): not p
  EXPECT_NE(r, p);
  ASSERT_EQ(fake.outstanding.size(), 1u);
  EXPECT_TRUE((*fake.outstanding.begin())->stream == kB);
  EXPECT_EQ(a.check_invariants(), "");
  fake.complete(kB);
  void* s2 = a.malloc(4 * KiB, kA);
  EXPECT_EQ(s2, p);
  EXPECT_TRUE(fake.outstanding.empty());
  for (void* x : {keep, q, r, s2}) a.free(x);
  EXPECT_EQ(a.check_invariants(), "");
  // A block without uses on other streams is free at once, capture or not.
  fake.capturing = true;
  void* t = a.malloc(4 * KiB, kA);
  a.free(t);
  EXPECT_EQ(a.malloc(4 * KiB, kA), t);
  fake.capturing = false;
}

// An allocation the backend refuses during a capture fails at once: no
// waiting for events, no memory returned (both would break the capture).
TEST(BlockAllocator, OutOfMemoryDuringACaptureDoesNotReleaseTheCache) {
  FakeBackend fake(40 * MiB);
  BlockAllocator a(fake, 0);
  void* x = a.malloc(15 * MiB, kDefault);  // 16 MiB segment
  void* y = a.malloc(15 * MiB, kA);
  a.record_stream(y, kB);
  a.free(y);  // pending on B
  a.free(x);  // cached
  fake.capturing = true;
  expect_error([&] { a.malloc(20 * MiB, kDefault); }, {"out of memory"});
  EXPECT_EQ(fake.syncs, 0);
  EXPECT_EQ(fake.frees, 0);
  EXPECT_EQ(a.stats().num_alloc_retries, 0);
  EXPECT_EQ(a.stats().reserved, int64_t(32 * MiB));
  EXPECT_EQ(a.check_invariants(), "");
  fake.capturing = false;
  void* z = a.malloc(20 * MiB, kDefault);  // after the capture: wait, release, retry
  EXPECT_NE(z, nullptr);
  EXPECT_EQ(fake.syncs, 1);
  EXPECT_EQ(a.stats().num_alloc_retries, 1);
  a.free(z);
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, ZeroSizesAndForeignPointers) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  EXPECT_EQ(a.malloc(0, kDefault), nullptr);
  EXPECT_TRUE(a.free(nullptr));
  int x = 0;
  EXPECT_FALSE(a.free(&x));
  void* p = a.malloc(4096, kDefault);
  EXPECT_FALSE(a.free(as_char(p) + 512)) << "only block starts are freed";
  EXPECT_TRUE(a.free(p));
  EXPECT_FALSE(a.free(p)) << "a double free is refused";
  CudaMemoryStats st = a.stats();
  EXPECT_EQ(st.num_allocs, 1);
  EXPECT_EQ(st.num_frees, 1);
  EXPECT_EQ(st.allocated, 0);
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, SummaryTable) {
  FakeBackend fake;
  BlockAllocator a(fake, 1);
  void* p = a.malloc(3 * MiB, kDefault);
  void* q = a.malloc(1000, kDefault);
  a.free(q);
  const std::string s = a.summary();
  for (const char* piece : {"cuda:1", "CUDA OOMs: 0", "cudaMalloc retries: 0", "Allocated memory", "from large pool",
                            "from small pool", "Reserved memory", "Active memory", "Non-releasable memory",
                            "Segments (cudaMalloc)", "3.00 MiB", "22.00 MiB", "cudaMalloc calls: 2"})
    EXPECT_NE(s.find(piece), std::string::npos) << "summary lacks '" << piece << "':\n" << s;
  // Every line of the table has the same width.
  size_t start = 0, width = 0;
  while (start < s.size()) {
    const size_t end = s.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    if (width == 0) width = end - start;
    EXPECT_EQ(end - start, width) << s.substr(start, end - start);
    start = end + 1;
  }
  a.free(p);
}

// Random operations on three streams, with record_stream and event
// completions: the bookkeeping stays consistent and no two live blocks overlap.
TEST(BlockAllocator, RandomOperationsKeepTheInvariants) {
  FakeBackend fake(256 * MiB);
  BlockAllocator a(fake, 0);
  std::mt19937 rng(1234);
  const StreamRef streams[3] = {kA, kB, kC};
  struct Live {
    void* p;
    size_t n;
    int stream;
  };
  std::vector<Live> live;
  std::map<uintptr_t, size_t> ranges;  // live [p, p + n)
  auto overlaps = [&](void* p, size_t n) {
    const auto a0 = reinterpret_cast<uintptr_t>(p);
    auto it = ranges.lower_bound(a0);
    if (it != ranges.end() && it->first < a0 + n) return true;
    if (it != ranges.begin() && std::prev(it)->first + std::prev(it)->second > a0) return true;
    return false;
  };
  const size_t sizes[] = {1, 512, 1000, 4096, 100 * KiB, MiB, MiB + 1, 3 * MiB, 9 * MiB, 12 * MiB};
  for (int step = 0; step < 3000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 5 || live.empty()) {
      const size_t n = sizes[rng() % std::size(sizes)] + rng() % 700;
      const int s = static_cast<int>(rng() % 3);
      void* p = nullptr;
      try {
        p = a.malloc(n, streams[s]);
      } catch (const brisk::Error&) {
        continue;  // the limit was reached; the invariants are checked below
      }
      ASSERT_FALSE(overlaps(p, n)) << "block handed out twice at step " << step;
      ranges[reinterpret_cast<uintptr_t>(p)] = n;
      live.push_back({p, n, s});
    } else if (op < 9) {
      const size_t i = rng() % live.size();
      if (rng() % 4 == 0) { EXPECT_TRUE(a.record_stream(live[i].p, streams[rng() % 3])); }
      ASSERT_TRUE(a.free(live[i].p));
      ranges.erase(reinterpret_cast<uintptr_t>(live[i].p));
      live[i] = live.back();
      live.pop_back();
    } else {
      fake.complete(streams[rng() % 3]);
      if (rng() % 8 == 0) a.empty_cache();
    }
    if (step % 50 == 0) { ASSERT_EQ(a.check_invariants(), "") << "at step " << step; }
  }
  for (auto& l : live) a.free(l.p);
  for (auto& s : streams) fake.complete(s);
  a.empty_cache();
  EXPECT_EQ(a.check_invariants(), "");
  EXPECT_EQ(a.stats().allocated, 0);
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(fake.in_use, 0u);
}

// ---- private pools (Note [Private pools]) ------------------------------------------------

// Which pool the segment holding p belongs to.
PoolId pool_of(const BlockAllocator& a, void* p) {
  for (const auto& seg : a.snapshot())
    if (reinterpret_cast<uintptr_t>(p) >= seg.address && reinterpret_cast<uintptr_t>(p) < seg.address + seg.size)
      return seg.pool;
  ADD_FAILURE() << "no segment holds " << p;
  return kSharedPool;
}

TEST(BlockAllocator, ARoutedStreamAllocatesFromItsPrivatePoolOnly) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  // A free block of the shared cache on kA is not used by the pool...
  void* shared = a.malloc(4 * KiB, kA);
  ASSERT_TRUE(a.free(shared));
  a.begin_allocate_to_pool(7, kA);
  void* p1 = a.malloc(4 * KiB, kA);
  EXPECT_NE(p1, shared);
  EXPECT_EQ(pool_of(a, p1), 7u);
  void* big = a.malloc(12 * MiB, kA);
  EXPECT_EQ(pool_of(a, big), 7u);
  // ...other streams keep using the shared cache...
  void* other = a.malloc(4 * KiB, kB);
  EXPECT_EQ(pool_of(a, other), kSharedPool);
  // ...and a block freed during the capture is reused by the same pool.
  ASSERT_TRUE(a.free(p1));
  void* p2 = a.malloc(4 * KiB, kA);
  EXPECT_EQ(p2, p1);
  a.end_allocate_to_pool(7);
  // After the capture the stream is back on the shared cache: the free
  // shared block is reused, the pool's blocks are not.
  void* after = a.malloc(4 * KiB, kA);
  EXPECT_EQ(after, shared);
  PoolStats st = a.pool_stats(7);
  EXPECT_EQ(st.use_count, 1);
  EXPECT_FALSE(st.routed);
  EXPECT_EQ(st.segments, 2);
  EXPECT_EQ(st.reserved, int64_t(2 * MiB + 12 * MiB));
  EXPECT_EQ(st.allocated, int64_t(4 * KiB + 12 * MiB));
  EXPECT_EQ(a.check_invariants(), "");
  for (void* p : {p2, big, other, after}) EXPECT_TRUE(a.free(p));
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, EmptyCacheLeavesAPoolInUseAloneAndReleaseReturnsIt) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  a.begin_allocate_to_pool(3, kA);
  void* kept = a.malloc(3 * MiB, kA);        // a graph's output, still held by the user
  void* temp = a.malloc(100 * KiB, kA);      // a temporary of the captured work
  a.end_allocate_to_pool(3);
  ASSERT_TRUE(a.free(temp));
  void* shared = a.malloc(100 * KiB, kB);
  ASSERT_TRUE(a.free(shared));
  a.empty_cache();  // the shared segment goes; the pool's free small segment stays
  EXPECT_EQ(a.pool_stats(3).segments, 2);
  EXPECT_EQ(a.stats().reserved, int64_t(20 * MiB + 2 * MiB));
  // The graph is reset: its free segment goes back at once, the one holding
  // `kept` when that block is freed.
  EXPECT_TRUE(a.release_pool(3));
  EXPECT_EQ(a.pool_stats(3).segments, 1);
  EXPECT_EQ(a.stats().reserved, int64_t(20 * MiB));
  EXPECT_EQ(a.check_invariants(), "");
  ASSERT_TRUE(a.free(kept));
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(fake.in_use, 0u);
  EXPECT_EQ(a.pool_stats(3).use_count, 0);
  EXPECT_FALSE(a.release_pool(3));  // nothing left to release
  EXPECT_EQ(a.check_invariants(), "");
}

// Bucketed capture: the largest graph first, the smaller ones in the same
// pool reuse the blocks it freed: N graphs cost about the largest alone.
TEST(BlockAllocator, GraphsSharingAPoolReuseItsMemory) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  const PoolId pool = 11;
  std::vector<void*> outputs;
  auto capture = [&](size_t batch) {  // a forward: two temporaries and an output
    a.begin_allocate_to_pool(pool, kA);
    void* t1 = a.malloc(batch * 64 * KiB, kA);
    void* t2 = a.malloc(batch * 256 * KiB, kA);
    EXPECT_TRUE(a.free(t1));
    void* out = a.malloc(batch * 16 * KiB, kA);
    EXPECT_TRUE(a.free(t2));
    a.end_allocate_to_pool(pool);
    outputs.push_back(out);
  };
  capture(160);
  const int64_t largest_alone = a.pool_stats(pool).reserved;
  for (size_t b : {128, 96, 64, 32, 16, 8, 4, 2, 1}) capture(b);
  const PoolStats st = a.pool_stats(pool);
  EXPECT_EQ(st.use_count, 10);
  EXPECT_LE(static_cast<double>(st.reserved), 1.2 * static_cast<double>(largest_alone))
      << format_size(st.reserved) << " for 10 graphs, " << format_size(largest_alone) << " for the largest";
  EXPECT_EQ(a.check_invariants(), "");
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(a.release_pool(pool));
  for (void* o : outputs) EXPECT_TRUE(a.free(o));
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(BlockAllocator, PrivatePoolMisuseIsAnError) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  expect_error([&] { a.begin_allocate_to_pool(kSharedPool, kA); }, {"begin_allocate_to_pool", "shared cache"});
  a.begin_allocate_to_pool(1, kA);
  expect_error([&] { a.begin_allocate_to_pool(2, kA); }, {"begin_allocate_to_pool", "already allocates", "pool 1"});
  a.begin_allocate_to_pool(2, kB);  // another stream may capture into another pool
  void* p = a.malloc(1, kB);
  EXPECT_EQ(pool_of(a, p), 2u);
  a.end_allocate_to_pool(1);
  a.end_allocate_to_pool(2);
  EXPECT_FALSE(a.release_pool(99));
  EXPECT_TRUE(a.free(p));
  EXPECT_TRUE(a.release_pool(1));
  EXPECT_TRUE(a.release_pool(2));
  EXPECT_EQ(a.stats().reserved, 0);
}

TEST(BlockAllocator, RandomOperationsWithPrivatePoolsKeepTheInvariants) {
  FakeBackend fake(512 * MiB);
  BlockAllocator a(fake, 0);
  std::mt19937 rng(99);
  const StreamRef streams[3] = {kA, kB, kC};
  struct Live {
    void* p;
    PoolId pool;
  };
  std::vector<Live> live;
  std::map<PoolId, int> uses;        // begins not released
  std::map<int, PoolId> capturing;   // stream index -> pool
  const size_t sizes[] = {1, 4096, 100 * KiB, MiB, MiB + 1, 3 * MiB, 12 * MiB};
  for (int step = 0; step < 4000; ++step) {
    const int op = static_cast<int>(rng() % 12);
    const int s = static_cast<int>(rng() % 3);
    if (op < 5 || live.empty()) {
      void* p = nullptr;
      try {
        p = a.malloc(sizes[rng() % std::size(sizes)] + rng() % 700, streams[s]);
      } catch (const brisk::Error&) {
        continue;
      }
      const PoolId want = capturing.count(s) ? capturing[s] : kSharedPool;
      ASSERT_EQ(pool_of(a, p), want) << "step " << step;
      live.push_back({p, want});
    } else if (op < 9) {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(a.free(live[i].p));
      live[i] = live.back();
      live.pop_back();
    } else if (op == 9) {  // begin or end a capture on stream s
      if (capturing.count(s)) {
        a.end_allocate_to_pool(capturing[s]);
        capturing.erase(s);
      } else {
        PoolId id = 1 + rng() % 3;
        bool taken = false;
        for (auto& [st, pid] : capturing) taken = taken || pid == id;
        if (taken) continue;  // (one stream per pool here)
        a.begin_allocate_to_pool(id, streams[s]);
        capturing[s] = id;
        ++uses[id];
      }
    } else if (op == 10) {  // release a pool use (a graph reset)
      for (auto& [id, n] : uses) {
        bool routed = false;
        for (auto& [st, pid] : capturing) routed = routed || pid == id;
        if (n > 0 && !routed) {
          ASSERT_TRUE(a.release_pool(id));
          --n;
          break;
        }
      }
    } else {
      if (rng() % 4 == 0) a.empty_cache();
    }
    if (step % 40 == 0) { ASSERT_EQ(a.check_invariants(), "") << "at step " << step; }
  }
  for (auto& [st, pid] : capturing) a.end_allocate_to_pool(pid);
  for (auto& l : live) ASSERT_TRUE(a.free(l.p));
  for (auto& [id, n] : uses)
    while (n-- > 0) ASSERT_TRUE(a.release_pool(id));
  a.empty_cache();
  EXPECT_EQ(a.check_invariants(), "");
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(fake.in_use, 0u);
}

TEST(BlockAllocator, ThreadsShareOneAllocator) {
  FakeBackend fake;
  BlockAllocator a(fake, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&a, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      const StreamRef s{reinterpret_cast<void*>(uintptr_t(0x100) * (t + 1)), 0};
      std::vector<void*> mine;
      for (int i = 0; i < 2000; ++i) {
        if (mine.empty() || rng() % 2 == 0) {
          mine.push_back(a.malloc(512 + rng() % (2 * MiB), s));
        } else {
          const size_t k = rng() % mine.size();
          EXPECT_TRUE(a.free(mine[k]));
          mine[k] = mine.back();
          mine.pop_back();
        }
      }
      for (void* p : mine) a.free(p);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(a.check_invariants(), "");
  EXPECT_EQ(a.stats().allocated, 0);
  EXPECT_EQ(a.stats().num_allocs, a.stats().num_frees);
  a.empty_cache();
  EXPECT_EQ(fake.in_use, 0u);
}

// ---- the pinned host block allocator on the fake backend ------------------------------------

TEST(HostBlockAllocator, PowerOfTwoBlocksAreCachedAndReused) {
  FakeBackend fake;
  HostBlockAllocator h(fake);
  EXPECT_EQ(h.malloc(0), nullptr);
  EXPECT_TRUE(h.free(nullptr));
  void* p = h.malloc(1000);
  HostBlockStats st = h.stats();
  EXPECT_EQ(st.allocated, 1024);
  EXPECT_EQ(st.reserved, 1024);
  EXPECT_EQ(st.num_host_alloc, 1);
  EXPECT_TRUE(h.free(p));
  EXPECT_EQ(h.stats().allocated, 0);
  EXPECT_EQ(h.stats().reserved, 1024);
  EXPECT_EQ(h.malloc(600), p) << "same size class: the cached block";
  void* q = h.malloc(1025);  // 2048: a new block
  EXPECT_NE(q, p);
  st = h.stats();
  EXPECT_EQ(st.allocated, 1024 + 2048);
  EXPECT_EQ(st.num_allocs, 3);
  EXPECT_EQ(st.num_host_alloc, 2);
  EXPECT_FALSE(h.free(as_char(q) + 8)) << "only block starts are freed";
  h.free(p);
  h.free(q);
  h.empty_cache();
  EXPECT_EQ(h.stats().reserved, 0);
  EXPECT_EQ(fake.in_use, 0u);
}

TEST(HostBlockAllocator, ContainsAnyPointerInsideABlock) {
  FakeBackend fake;
  HostBlockAllocator h(fake);
  char* p = as_char(h.malloc(4096));
  char* q = as_char(h.malloc(100));  // 128 B
  EXPECT_TRUE(h.contains(p));
  EXPECT_TRUE(h.contains(p + 1));
  EXPECT_TRUE(h.contains(p + 4095));
  EXPECT_TRUE(h.contains(q + 127));
  int on_stack = 0;
  EXPECT_FALSE(h.contains(&on_stack));
  EXPECT_FALSE(h.contains(nullptr));
  // Just past the end: not in the block (unless the next block starts there).
  if (!(q == p + 4096)) { EXPECT_FALSE(h.contains(p + 4096)); }
  h.free(p);
  EXPECT_TRUE(h.contains(p + 100)) << "a cached block is still pinned memory";
  h.empty_cache();
  EXPECT_FALSE(h.contains(p + 100));
  EXPECT_TRUE(h.contains(q));
  h.free(q);
}

TEST(HostBlockAllocator, AsyncCopyUseDefersReuse) {
  FakeBackend fake;
  HostBlockAllocator h(fake);
  char* p = as_char(h.malloc(1 << 20));
  EXPECT_TRUE(h.record_use(p + 4096, kA));  // a copy from inside the block (a view)
  int on_stack = 0;
  EXPECT_FALSE(h.record_use(&on_stack, kA));
  EXPECT_TRUE(h.free(p));
  EXPECT_EQ(fake.outstanding.size(), 1u);
  EXPECT_EQ(h.stats().num_pending, 1);
  void* q = h.malloc(1 << 20);
  EXPECT_NE(q, p) << "reused while the copy on stream A may still read it";
  h.empty_cache();
  EXPECT_TRUE(h.contains(p)) << "empty_cache keeps a block a copy may still use";
  fake.complete(kA);
  void* r = h.malloc(1 << 20);
  EXPECT_EQ(r, p);
  EXPECT_TRUE(fake.outstanding.empty());
  EXPECT_EQ(h.stats().num_pending, 0);
  h.free(q);
  h.free(r);
}

TEST(HostBlockAllocator, OutOfMemoryReleasesTheCache) {
  FakeBackend fake(4 * MiB);
  HostBlockAllocator h(fake);
  void* a = h.malloc(2 * MiB);
  void* b = h.malloc(MiB);
  h.free(b);  // 1 MiB cached
  void* c = h.malloc(2 * MiB);  // 2 + 1 + 2 > 4: release the cache, retry
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(h.stats().num_host_free, 1);
  expect_error([&] { h.malloc(MiB); }, {"[pin_memory] out of pinned host memory", "1.00 MiB", "4.00 MiB"});
  h.free(a);
  h.free(c);
}

// ---- real device memory (skipped without a GPU) -------------------------------------------

namespace {
TensorOptions on_cuda(ScalarType t = kFloat) { return TensorOptions(t).device(Device(kCUDA, 0)); }
}  // namespace

TEST(CudaCachingAllocator, MemoryAllocatedFollowsTensors) {
  REQUIRE_CUDA();
  cuda::synchronize(0);
  cuda::empty_cache();
  const int64_t base = cuda::memory_allocated(0);
  cuda::reset_peak_memory_stats(0);
  {
    Tensor t = empty({1000}, on_cuda());  // 4000 bytes -> 4096
    EXPECT_EQ(cuda::memory_allocated(0), base + 4096);
    EXPECT_GE(cuda::memory_reserved(0), cuda::memory_allocated(0));
    Tensor u = empty({5, 1024, 1024}, on_cuda());  // 20 MiB: large pool
    EXPECT_EQ(cuda::memory_allocated(0), base + 4096 + 20 * int64_t(MiB));
    EXPECT_EQ(cuda::max_memory_allocated(0), base + 4096 + 20 * int64_t(MiB));
  }
  EXPECT_EQ(cuda::memory_allocated(0), base);
  EXPECT_EQ(cuda::max_memory_allocated(0), base + 4096 + 20 * int64_t(MiB));
  const int64_t peak_reserved = cuda::max_memory_reserved(0);
  EXPECT_GE(peak_reserved, 22 * int64_t(MiB));
  cuda::empty_cache();
  if (base == 0) { EXPECT_EQ(cuda::memory_reserved(0), 0) << "empty_cache releases every free segment"; }
  EXPECT_EQ(cuda::max_memory_reserved(0), peak_reserved);
  cuda::reset_peak_memory_stats(0);
  EXPECT_EQ(cuda::max_memory_reserved(0), cuda::memory_reserved(0));
  const cuda::CudaMemoryStats st = cuda::memory_stats(0);
  EXPECT_GE(st.num_allocs, 2);
  if (base == 0) { EXPECT_GE(st.num_device_free, 2); }
  EXPECT_EQ(st.allocated, base);
}

TEST(CudaCachingAllocator, FreedBlockIsReusedOnTheSameStream) {
  REQUIRE_CUDA();
  void* first = nullptr;
  {
    Tensor t = empty({4096}, on_cuda());
    first = t.data_ptr();
  }
  const int64_t device_allocs = cuda::memory_stats(0).num_device_alloc;
  Tensor again = empty({4000}, on_cuda());
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(cuda::memory_stats(0).num_device_alloc, device_allocs);
  // On another stream the cached block is not handed out.
  cuda::Stream s = cuda::stream_from_pool(false, 0);
  {
    cuda::StreamGuard g(s);
    Tensor other = empty({4096}, on_cuda());
    EXPECT_NE(other.data_ptr(), first);
  }
}

TEST(CudaCachingAllocator, RecordStreamOnAPoolStream) {
  REQUIRE_CUDA();
  cuda::synchronize(0);
  cuda::empty_cache();  // no other free large block on this stream: the best fit below is this block
  cuda::Stream s = cuda::stream_from_pool(false, 0);
  Tensor src = ones({1 << 20});  // 4 MiB on the host
  void* block = nullptr;
  cuda::CudaMemoryStats before{};
  {
    Tensor t = empty({1 << 20}, on_cuda());
    block = t.data_ptr();
    {
      cuda::StreamGuard g(s);
      t.copy_(src, /*non_blocking=*/false);  // the block is used on stream s
    }
    cuda::record_stream(t, s);
    before = cuda::memory_stats(0);
  }
  // Freed, but held for stream s: still active, no longer allocated.
  cuda::CudaMemoryStats after = cuda::memory_stats(0);
  EXPECT_EQ(after.allocated, before.allocated - 4 * int64_t(MiB));
  EXPECT_EQ(after.active, before.active);
  s.synchronize();
  // The event has completed: the next request on the allocating stream gets it back.
  Tensor t2 = empty({1 << 20}, on_cuda());
  EXPECT_EQ(t2.data_ptr(), block);
  EXPECT_EQ(cuda::memory_stats(0).active, before.active);
  // record_stream checks its input.
  expect_error([&] { cuda::record_stream(ones({3}), s); }, {"[cuda::record_stream]", "CUDA tensor"});
}

TEST(CudaCachingAllocator, OutOfMemoryIsABriskError) {
  REQUIRE_CUDA();
  const int64_t ooms = cuda::memory_stats(0).num_ooms;
  const int64_t total = cuda::get_device_properties(0).total_memory;
  expect_error([&] { empty({total}, on_cuda(kDouble)); },  // 8x the device memory
               {"[empty] CUDA out of memory: tried to allocate", "cuda:0 has", "allocated by tensors", "reduce the batch size"});
  EXPECT_EQ(cuda::memory_stats(0).num_ooms, ooms + 1);
  // Still usable afterwards.
  Tensor t = empty({16}, on_cuda());
  EXPECT_TRUE(t.defined());
}

TEST(CudaCachingAllocator, SummaryAndProfilerSeeDeviceMemory) {
  REQUIRE_CUDA();
  Tensor keep = empty({256, 1024}, on_cuda());  // 1 MiB
  const std::string s = cuda::memory_summary(0);
  EXPECT_NE(s.find("cuda:0"), std::string::npos) << s;
  EXPECT_NE(s.find("Allocated memory"), std::string::npos) << s;
  profiler::profile prof(profiler::ProfileOptions().profile_memory(true));
  {
    Tensor t = empty({512, 1024}, on_cuda());  // 2 MiB
    (void)t;
  }
  prof.stop();
  bool alloc_seen = false, free_seen = false;
  for (const profiler::MemorySample& m : prof.result().memory) {
    if (m.bytes == 2 * int64_t(MiB)) {
      alloc_seen = true;
      EXPECT_GE(m.allocated, 3 * int64_t(MiB));
      EXPECT_GE(m.reserved, m.allocated);
    }
    if (m.bytes == -2 * int64_t(MiB)) free_seen = true;
  }
  EXPECT_TRUE(alloc_seen);
  EXPECT_TRUE(free_seen);
}

TEST(CudaCachingAllocator, PinnedHostMemory) {
  REQUIRE_CUDA();
  const cuda::HostMemoryStats before = cuda::host_memory_stats();
  Tensor p = ones({1000}).pin_memory();
  EXPECT_TRUE(p.is_pinned());
  EXPECT_TRUE(p.slice(0, 10, 20).is_pinned()) << "a view into the block is pinned too";
  EXPECT_FALSE(ones({1000}).is_pinned());
  const cuda::HostMemoryStats mid = cuda::host_memory_stats();
  EXPECT_EQ(mid.allocated, before.allocated + 4096);
  EXPECT_EQ(mid.num_allocs, before.num_allocs + 1);
  // A non-blocking copy from pinned memory, then the tensor goes away: the
  // block is reused only after the copy is done.
  Tensor d = p.to(Device(kCUDA, 0), /*non_blocking=*/true);
  void* host_block = p.data_ptr();
  p = Tensor();
  cuda::synchronize(0);
  Tensor p2 = empty({1000}).pin_memory();
  EXPECT_EQ(p2.data_ptr(), host_block);
  EXPECT_TRUE(brisk::testing::close(d.cpu(), ones({1000})));
  p2 = Tensor();
  cuda::empty_host_cache();
  EXPECT_LE(cuda::host_memory_stats().reserved, mid.reserved);
}
