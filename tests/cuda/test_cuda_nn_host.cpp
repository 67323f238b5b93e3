// Host tests of the index arithmetic and launch plans of the CUDA pooling
// and normalization kernels (src/backend/cuda/pool_window.h, norm_plan.h):
// each function against brute force on the CPU, and the reductions' plans
// simulated with the kernels' loops to check that every value is visited
// exactly once. These need no GPU and never skip.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/norm_plan.h"
#include "backend/cuda/pool_window.h"

using namespace brisk::cuda::detail;

namespace {

/// PyTorch's pooling output size with its ceil_mode rule (the last window
/// must start inside the input or the left padding), written from the
/// documented rule.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

template <class I>
void check_div(I a, I b) {
  // floor / ceil by exact integer search
  I f = a / b - 2;
  while ((f + 1) * b <= a) ++f;
  I c = a / b + 2;
  while ((c - 1) * b >= a) --c;
  EXPECT_EQ(pool_floor_div<I>(a, b), f) << a << " / " << b;
  EXPECT_EQ(pool_ceil_div<I>(a, b), c) << a << " / " << b;
}

}  // namespace

TEST(CudaPoolWindow, FloorCeilDiv) {
  for (int64_t a = -40; a <= 40; ++a)
    for (int64_t b = 1; b <= 9; ++b) {
      check_div<int64_t>(a, b);
      check_div<int32_t>(int32_t(a), int32_t(b));
    }
  EXPECT_EQ(pool_floor_div<int64_t>(-(int64_t(1) << 40) - 1, 2), -(int64_t(1) << 39) - 1);
  EXPECT_EQ(pool_ceil_div<int64_t>((int64_t(1) << 40) + 1, 2), (int64_t(1) << 39) + 1);
}

// Max pooling: the in-bounds taps of each output (the kernels test each tap;
// max_pool_taps is the CPU's span) and the outputs an input position
// belongs to (the backward's gather range), over every small geometry.
TEST(CudaPoolWindow, MaxTapsAndCoveringOutputsBruteForce) {
  int geometries = 0;
  for (int64_t in = 1; in <= 9; ++in)
    for (int64_t k = 1; k <= 4; ++k)
      for (int64_t s = 1; s <= 3; ++s)
        for (int64_t p = 0; p <= k / 2; ++p)
          for (int64_t d = 1; d <= 3; ++d)
            for (bool ceil_mode : {false, true}) {
              const int64_t out = out_size(in, k, s, p, d, ceil_mode);
              if (out <= 0) continue;
              ++geometries;
              const std::string what = "in " + std::to_string(in) + " k " + std::to_string(k) + " s " +
                                       std::to_string(s) + " p " + std::to_string(p) + " d " + std::to_string(d) +
                                       (ceil_mode ? " ceil" : "");
              // which outputs hold each input position (through a tap, and
              // through the dilated extent)
              std::vector<std::set<int64_t>> by_tap(static_cast<size_t>(in)), by_extent(static_cast<size_t>(in));
              for (int64_t o = 0; o < out; ++o) {
                const int64_t start = o * s - p;
                std::vector<int64_t> taps;
                for (int64_t t = 0; t < k; ++t) {
                  const int64_t i = start + t * d;
                  if (i >= 0 && i < in) {
                    taps.push_back(t);
                    by_tap[i].insert(o);
                  }
                }
                for (int64_t i = start; i < start + (k - 1) * d + 1; ++i)
                  if (i >= 0 && i < in) by_extent[i].insert(o);
                for (bool narrow : {false, true}) {
                  // the int32 instantiation must agree with the int64 one
                  const auto m64 = max_pool_taps<int64_t>(o, in, k, s, p, d);
                  const auto m32 = max_pool_taps<int32_t>(int32_t(o), int32_t(in), int32_t(k), int32_t(s),
                                                          int32_t(p), int32_t(d));
                  const int64_t lo = narrow ? m32.lo : m64.lo, hi = narrow ? m32.hi : m64.hi;
                  EXPECT_EQ(m64.start, start) << what;
                  if (taps.empty()) {
                    EXPECT_GE(lo, hi) << what << " o " << o;
                  } else {
                    EXPECT_EQ(lo, taps.front()) << what << " o " << o;
                    EXPECT_EQ(hi, taps.back() + 1) << what << " o " << o;
                  }
                }
              }
              const int64_t ext = (k - 1) * d + 1;
              for (int64_t i = 0; i < in; ++i) {
                const auto r = pool_outputs_covering<int64_t>(i, out, s, p, ext);
                const auto r32 = pool_outputs_covering<int32_t>(int32_t(i), int32_t(out), int32_t(s), int32_t(p),
                                                                int32_t(ext));
                EXPECT_EQ(r.lo, r32.lo) << what;
                EXPECT_EQ(r.hi, r32.hi) << what;
                // exactly the outputs whose dilated extent holds i ...
                std::set<int64_t> got;
                for (int64_t o = r.lo; o < r.hi; ++o) got.insert(o);
                EXPECT_EQ(got, by_extent[i]) << what << " i " << i;
                // ... so every output with a tap on i is in the range
                for (int64_t o : by_tap[i]) EXPECT_TRUE(got.count(o)) << what << " i " << i << " o " << o;
                if (d == 1) EXPECT_EQ(got, by_tap[i]) << what << " i " << i;
              }
            }
  EXPECT_GT(geometries, 500);
}

// Average pooling windows: the summed range and the divisor factor against
// counting positions, and the backward's covering range.
TEST(CudaPoolWindow, AvgWindowsBruteForce) {
  for (int64_t in = 1; in <= 10; ++in)
    for (int64_t k = 1; k <= 5; ++k)
      for (int64_t s = 1; s <= 4; ++s)
        for (int64_t p = 0; p <= k / 2; ++p)
          for (bool ceil_mode : {false, true})
            for (bool count_pad : {false, true}) {
              const int64_t out = out_size(in, k, s, p, 1, ceil_mode);
              if (out <= 0) continue;
              const std::string what = "in " + std::to_string(in) + " k " + std::to_string(k) + " s " +
                                       std::to_string(s) + " p " + std::to_string(p) + (ceil_mode ? " ceil" : "") +
                                       (count_pad ? " count_pad" : "");
              std::vector<std::set<int64_t>> holders(static_cast<size_t>(in));
              for (int64_t o = 0; o < out; ++o) {
                int64_t first = -1, last = -1, padded = 0;
                for (int64_t i = o * s - p; i < o * s - p + k; ++i) {
                  if (i >= -p && i < in + p) ++padded;
                  if (i >= 0 && i < in) {
                    if (first < 0) first = i;
                    last = i;
                    holders[i].insert(o);
                  }
                }
                ASSERT_GE(first, 0) << what << ": an output window without input (o " << o << ")";
                const auto w = avg_pool_window<int64_t>(o, in, k, s, p, count_pad);
                const auto w32 = avg_pool_window<int32_t>(int32_t(o), int32_t(in), int32_t(k), int32_t(s),
                                                          int32_t(p), count_pad);
                EXPECT_EQ(w.lo, first) << what << " o " << o;
                EXPECT_EQ(w.hi, last + 1) << what << " o " << o;
                EXPECT_EQ(w.ext, count_pad ? padded : last + 1 - first) << what << " o " << o;
                EXPECT_EQ(w32.lo, w.lo);
                EXPECT_EQ(w32.hi, w.hi);
                EXPECT_EQ(w32.ext, w.ext);
              }
              for (int64_t i = 0; i < in; ++i) {
                const auto r = pool_outputs_covering<int64_t>(i, out, s, p, k);
                std::set<int64_t> got;
                for (int64_t o = r.lo; o < r.hi; ++o) got.insert(o);
                EXPECT_EQ(got, holders[i]) << what << " i " << i;
              }
            }
}

// Adaptive windows: [floor(o*in/out), ceil((o+1)*in/out)) by integer
// search, and the covering range a superset of the exact holders.
TEST(CudaPoolWindow, AdaptiveWindowsBruteForce) {
  for (int64_t in = 1; in <= 24; ++in)
    for (int64_t out = 1; out <= 24; ++out) {
      std::vector<std::set<int64_t>> holders(static_cast<size_t>(in));
      for (int64_t o = 0; o < out; ++o) {
        int64_t lo = 0;
        while ((lo + 1) * out <= o * in) ++lo;  // largest lo with lo * out <= o * in
        int64_t hi = 0;
        while (hi * out < (o + 1) * in) ++hi;  // smallest hi with hi * out >= (o + 1) * in
        const auto w = adaptive_pool_window<int64_t>(o, in, out);
        const auto w32 = adaptive_pool_window<int32_t>(int32_t(o), int32_t(in), int32_t(out));
        EXPECT_EQ(w.lo, lo) << in << " -> " << out << " o " << o;
        EXPECT_EQ(w.hi, hi) << in << " -> " << out << " o " << o;
        EXPECT_EQ(w.ext, hi - lo);
        EXPECT_EQ(w32.lo, w.lo);
        EXPECT_EQ(w32.hi, w.hi);
        EXPECT_LE(hi - lo, avg_max_window(in, out, 1, true)) << in << " -> " << out;
        for (int64_t i = lo; i < hi; ++i) holders[i].insert(o);
      }
      for (int64_t i = 0; i < in; ++i) {
        const auto r = adaptive_outputs_covering<int64_t>(i, in, out);
        EXPECT_GE(r.lo, 0);
        EXPECT_LE(r.hi, out);
        for (int64_t o : holders[i]) EXPECT_TRUE(o >= r.lo && o < r.hi) << in << " -> " << out << " i " << i;
        // the range holds no more than one extra output at each end
        EXPECT_LE(r.hi - r.lo, int64_t(holders[i].size()) + 2);
      }
    }
  EXPECT_EQ(avg_max_window(7, 3, 5, false), 5);
  EXPECT_EQ(avg_max_window(3, 1, 5, false), 3);
}

// ---- normalization plans ------------------------------------------------------------------------

namespace {

/// Visits every position of every slot the way norm_rows_kernel does
/// (warps grid-striding over (slot, split) items, lanes over the split)
/// and counts the visits.
void simulate_rows(int64_t slots, int64_t S, int64_t sms) {
  const RowPlan p = plan_rows(slots, S, sms);
  const std::string what = "slots " + std::to_string(slots) + " S " + std::to_string(S) + " sms " + std::to_string(sms);
  ASSERT_GE(p.blocks, 1) << what;
  EXPECT_LE(p.blocks, sms * 32) << what;
  EXPECT_EQ(p.items, slots * p.splits) << what;
  EXPECT_GE(p.chunk * p.splits, S) << what;
  EXPECT_LT((p.splits - 1) * p.chunk, S) << what << ": an empty split";
  std::vector<int> seen(static_cast<size_t>(slots * S), 0);
  std::vector<int> items(static_cast<size_t>(p.items), 0);
  const int64_t warps = p.blocks * kNormWarps;
  for (int64_t w = 0; w < warps; ++w)
    for (int64_t item = w; item < p.items; item += warps) {
      ++items[item];
      const int64_t slot = item / p.splits, sp = item % p.splits;
      const int64_t s0 = sp * p.chunk, s1 = std::min(S, s0 + p.chunk);
      for (int lane = 0; lane < 32; ++lane)
        for (int64_t s = s0 + lane; s < s1; s += 32) ++seen[slot * S + s];
    }
  for (int v : items) ASSERT_EQ(v, 1) << what;
  for (int v : seen) ASSERT_EQ(v, 1) << what;
}

/// The same for norm_cols_kernel: blocks grid-striding over (nb, tile,
/// split) items, threads (tx, ty) over channels and rows.
void simulate_cols(int64_t Nb, int64_t C, int64_t S, int64_t sms) {
  const ColPlan p = plan_cols(Nb, C, S, sms);
  const std::string what = "Nb " + std::to_string(Nb) + " C " + std::to_string(C) + " S " + std::to_string(S) +
                           " sms " + std::to_string(sms);
  ASSERT_EQ(p.tx * p.ty, kNormThreads) << what;
  EXPECT_EQ(p.tx & (p.tx - 1), 0) << what << ": tx not a power of two";
  EXPECT_EQ(p.ty & (p.ty - 1), 0) << what << ": ty not a power of two (the shared tree halves it)";
  EXPECT_TRUE(p.tx == 32 || p.tx >= C) << what;
  EXPECT_GE(p.tiles * p.tx, C) << what;
  ASSERT_GE(p.blocks, 1) << what;
  EXPECT_LE(p.blocks, sms * 32) << what;
  EXPECT_GE(p.chunk * p.splits, S) << what;
  EXPECT_LT((p.splits - 1) * p.chunk, S) << what << ": an empty split";
  std::vector<int> seen(static_cast<size_t>(Nb * S * C), 0);
  std::set<int64_t> records;  // (nb * C + c) * splits + split written once
  for (int64_t b = 0; b < p.blocks; ++b)
    for (int64_t item = b; item < p.items; item += p.blocks) {
      const int64_t sp = item % p.splits, t2 = item / p.splits, tile = t2 % p.tiles, nb = t2 / p.tiles;
      const int64_t s0 = sp * p.chunk, s1 = std::min(S, s0 + p.chunk);
      for (int t = 0; t < kNormThreads; ++t) {
        const int tx = t % p.tx, ty = t / p.tx;
        const int64_t c = tile * p.tx + tx;
        if (c >= C) continue;
        for (int64_t s = s0 + ty; s < s1; s += p.ty) ++seen[(nb * S + s) * C + c];
        if (ty == 0) EXPECT_TRUE(records.insert((nb * C + c) * p.splits + sp).second) << what;
      }
    }
  for (int v : seen) ASSERT_EQ(v, 1) << what;
  EXPECT_EQ(int64_t(records.size()), Nb * C * p.splits) << what;
}

}  // namespace

TEST(CudaNormPlan, RowPlanCoversEveryValueOnce) {
  for (int64_t sms : {1, 3, 132})
    for (int64_t slots : {1, 2, 7, 64, 300})
      for (int64_t S : {1, 5, 31, 32, 33, 255, 256, 257, 1000, 4099}) simulate_rows(slots, S, sms);
}

TEST(CudaNormPlan, RowPlanSplitsLongSlotsOnly) {
  // few long slots are cut to fill the device; many slots are not
  const RowPlan few = plan_rows(3, 1 << 20, 132);
  EXPECT_GT(few.splits, 100);
  EXPECT_GE(few.chunk, 256);
  const RowPlan many = plan_rows(128 * 64, 3136, 132);
  EXPECT_LE(many.splits, 2);
  const RowPlan tiny = plan_rows(1, 100, 132);
  EXPECT_EQ(tiny.splits, 1);  // at least 256 values per split
  EXPECT_EQ(plan_rows(0, 10, 132).items, 0);
}

TEST(CudaNormPlan, ColPlanCoversEveryValueOnce) {
  for (int64_t sms : {1, 3, 132})
    for (int64_t Nb : {1, 3})
      for (int64_t C : {1, 2, 3, 5, 16, 31, 32, 33, 70})
        for (int64_t S : {1, 7, 64, 257, 1500}) simulate_cols(Nb, C, S, sms);
}

TEST(CudaNormPlan, ColPlanShapes) {
  const ColPlan p3 = plan_cols(1, 3, 1 << 16, 132);
  EXPECT_EQ(p3.tx, 4);
  EXPECT_EQ(p3.ty, 64);
  EXPECT_EQ(p3.tiles, 1);
  EXPECT_GT(p3.splits, 1);
  const ColPlan p64 = plan_cols(1, 64, 128 * 3136, 132);
  EXPECT_EQ(p64.tx, 32);
  EXPECT_EQ(p64.tiles, 2);
  EXPECT_GE(p64.items, 132 * 4);  // enough blocks to fill the device
  const ColPlan wide = plan_cols(4096, 512, 49, 132);
  EXPECT_EQ(wide.splits, 1);  // plenty of (block, tile) items already
  EXPECT_EQ(wide.blocks, 132 * 32);
}

TEST(CudaNormPlan, ElementwiseBlocks) {
  EXPECT_EQ(elementwise_blocks(0, 132), 0);
  EXPECT_EQ(elementwise_blocks(1, 132), 1);
  EXPECT_EQ(elementwise_blocks(256, 132), 1);
  EXPECT_EQ(elementwise_blocks(257, 132), 2);
  EXPECT_EQ(elementwise_blocks(int64_t(1) << 40, 132), 132 * 32);
}
