// Host checks of the launch plans and index arithmetic of the CUDA
// reduction, scan and sort kernels (src/backend/cuda/reduce_plans.h). These
// run without a GPU: the plans are walked on the CPU exactly as the kernels
// walk them, and the results are compared with naive references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cuda/reduce_plans.h"

namespace plans = brisk::cuda::plans;
using brisk::BFloat16;
using brisk::Half;

namespace {

bool is_pow2(int64_t v) { return v >= 1 && (v & (v - 1)) == 0; }

TEST(CudaReducePlan, PowersOfTwo) {
  EXPECT_EQ(plans::next_pow2(0), 1);
  EXPECT_EQ(plans::next_pow2(1), 1);
  EXPECT_EQ(plans::next_pow2(2), 2);
  EXPECT_EQ(plans::next_pow2(3), 4);
  EXPECT_EQ(plans::next_pow2(1025), 2048);
  EXPECT_EQ(plans::prev_pow2(0), 1);
  EXPECT_EQ(plans::prev_pow2(3), 2);
  EXPECT_EQ(plans::prev_pow2(4096), 4096);
  EXPECT_EQ(plans::prev_pow2(4097), 4096);
  EXPECT_EQ(plans::div_up(7, 2), 4);
  EXPECT_EQ(plans::round_up(7, 4), 8);
}

// Checks the launch limits of a reduction plan.
void check_limits(const plans::ReduceLaunch& l, int64_t reduce) {
  EXPECT_TRUE(is_pow2(l.bx) && is_pow2(l.by)) << l.bx << "x" << l.by;
  EXPECT_LE(l.threads(), 512);
  if (l.row) EXPECT_EQ(l.threads() % 32, 0) << "row mode shuffles need whole warps";
  EXPECT_GE(l.splits, 1);
  EXPECT_LE(l.splits, 65535);
  if (l.splits > 1) {
    EXPECT_EQ(l.chunk % l.lanes(), 0);
    EXPECT_GE(l.splits * l.chunk, reduce);
    EXPECT_LT((l.splits - 1) * l.chunk, reduce);
  } else {
    EXPECT_EQ(l.chunk, reduce);
  }
}

// Walks the reduction as the kernel does (every split, block and thread),
// summing in double; checks that every input element is read exactly once
// and lands in the right output.
std::vector<double> emulate_reduce(const std::vector<double>& in, int64_t outer, int64_t reduce, int64_t inner,
                                   int sms, bool allow_split = true) {
  const plans::ReduceLaunch l = plans::plan_reduce(outer, reduce, inner, sms, allow_split);
  if (!allow_split) EXPECT_EQ(l.splits, 1);
  check_limits(l, reduce);
  const int64_t nout = outer * inner;
  EXPECT_EQ(l.nout, nout);
  std::vector<double> out(static_cast<size_t>(nout), 0.0);
  std::vector<int> visits(in.size(), 0), stores(static_cast<size_t>(nout) * l.splits, 0);
  for (int64_t split = 0; split < l.splits; ++split)
    for (int64_t b = 0; b < l.blocks; ++b)
      for (int ty = 0; ty < l.by; ++ty)
        for (int tx = 0; tx < l.bx; ++tx) {
          plans::ReduceThread t;
          if (!plans::reduce_thread(l, reduce, inner, b, tx, ty, t)) continue;
          EXPECT_LT(t.out, nout);
          EXPECT_LT(t.lane, l.lanes());
          const int64_t o = t.out / inner, i = t.out % inner;
          int64_t r0, r1;
          plans::chunk_range(l.chunk, reduce, split, r0, r1);
          for (int64_t r = r0 + t.lane; r < r1; r += l.lanes()) {
            const int64_t e = t.base + r * t.stride;
            EXPECT_EQ(e, (o * reduce + r) * inner + i);
            ++visits[static_cast<size_t>(e)];
            out[static_cast<size_t>(t.out)] += in[static_cast<size_t>(e)];
          }
          if (t.lane == 0) ++stores[static_cast<size_t>(split * nout + t.out)];
        }
  for (size_t e = 0; e < visits.size(); ++e) EXPECT_EQ(visits[e], 1) << "element " << e;
  for (size_t k = 0; k < stores.size(); ++k) EXPECT_EQ(stores[k], 1) << "output/partial " << k;
  return out;
}

TEST(CudaReducePlan, EmulatedReductionsCoverEveryElementOnce) {
  std::mt19937 rng(7);
  struct Shape {
    int64_t outer, reduce, inner;
    int sms;
  };
  const Shape shapes[] = {
      {1, 1, 1, 132},     {5, 1, 1, 132},     {1, 7, 1, 132},    {3, 1000, 1, 132},   {1, 100000, 1, 2},
      {1, 100000, 1, 132}, {2, 5000, 3, 4},    {1, 4096, 2, 132}, {7, 3, 5, 132},      {1, 9, 1000, 132},
      {64, 33, 1, 132},   {1000, 5, 1, 132},  {2, 3, 1, 132},    {1, 70000, 7, 8},    {4, 0, 3, 132},
      {3, 0, 1, 132},     {1, 1, 300, 132},   {2, 513, 1, 1},    {1, 20000, 40, 132}, {300, 2, 2, 132},
  };
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << s.outer << "x" << s.reduce << "x" << s.inner << " sms " << s.sms);
    std::vector<double> in(static_cast<size_t>(s.outer * s.reduce * s.inner));
    for (double& v : in) v = static_cast<double>(static_cast<int>(rng() % 19) - 9);
    for (bool split : {true, false}) {  // reductions, and softmax's plans
      const std::vector<double> got = emulate_reduce(in, s.outer, s.reduce, s.inner, s.sms, split);
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          double want = 0;
          for (int64_t r = 0; r < s.reduce; ++r) want += in[static_cast<size_t>((o * s.reduce + r) * s.inner + i)];
          ASSERT_EQ(got[static_cast<size_t>(o * s.inner + i)], want);  // small integers: exact
        }
    }
  }
}

TEST(CudaReducePlan, LayoutChoice) {
  // Rows: one warp-sized group or more per row, several rows per block.
  plans::ReduceLaunch l = plans::plan_reduce(4096, 1024, 1, 132);
  EXPECT_TRUE(l.row);
  EXPECT_EQ(l.bx, 128);
  EXPECT_EQ(l.by, 2);
  EXPECT_EQ(l.blocks, 2048);
  EXPECT_EQ(l.splits, 1);  // plenty of blocks: no second pass
  // Short rows share warps.
  l = plans::plan_reduce(100000, 4, 1, 132);
  EXPECT_EQ(l.bx, 1);
  EXPECT_EQ(l.by, 256);
  // Columns: threads along inner, lanes along reduce.
  l = plans::plan_reduce(1, 64, 4096, 132);
  EXPECT_FALSE(l.row);
  EXPECT_EQ(l.by, 8);
  EXPECT_EQ(l.bx, 32);
  EXPECT_EQ(l.blocks, 128);
  // Tiny inner with many outer rows: blocks stay full (outputs flattened).
  l = plans::plan_reduce(1 << 20, 8, 2, 132);
  EXPECT_FALSE(l.row);
  EXPECT_EQ(l.threads(), 256);
  EXPECT_EQ(l.blocks, (int64_t(2) << 20) / 256);
  // Nothing to do.
  EXPECT_EQ(plans::plan_reduce(0, 5, 1, 132).blocks, 0);
  EXPECT_EQ(plans::plan_reduce(3, 5, 0, 132).blocks, 0);
}

TEST(CudaReducePlan, FullReductionsUseTheWholeGpu) {
  for (int sms : {1, 16, 114, 132}) {
    SCOPED_TRACE(sms);
    // A full sum of 2^26 floats: one output, split over about 4 blocks per SM.
    plans::ReduceLaunch l = plans::plan_reduce(1, int64_t(1) << 26, 1, sms);
    check_limits(l, int64_t(1) << 26);
    EXPECT_GE(l.blocks * l.splits * l.threads(), int64_t(sms) * 1024) << "too few threads in flight";
    EXPECT_GE(l.splits, std::min<int64_t>(plans::kMaxSplits, 2 * sms));
    // Column sums of a tall matrix: (2^20, 16) reduced over dim 0.
    l = plans::plan_reduce(1, int64_t(1) << 20, 16, sms);
    check_limits(l, int64_t(1) << 20);
    EXPECT_GE(l.blocks * l.splits, std::min<int64_t>(2 * sms, 1024));
  }
  // Huge reductions stay within gridDim.y and the split cap.
  const plans::ReduceLaunch l = plans::plan_reduce(1, int64_t(1) << 40, 1, 100000);
  check_limits(l, int64_t(1) << 40);
  EXPECT_LE(l.splits, plans::kMaxSplits);
  // Softmax never splits; its columns get more lanes instead.
  EXPECT_EQ(plans::plan_reduce(1, int64_t(1) << 26, 1, 132, false).splits, 1);
  const plans::ReduceLaunch c = plans::plan_reduce(1, 4096, 4096, 132, false);
  EXPECT_EQ(c.splits, 1);
  EXPECT_FALSE(c.row);
  EXPECT_EQ(c.threads(), 512);
  EXPECT_EQ(c.bx, 8);
  EXPECT_EQ(c.blocks, 512);
  check_limits(c, 4096);
}

// Walks a cumsum as the three scan kernels do (totals, carries, scan).
std::vector<double> emulate_scan(const std::vector<double>& in, int64_t outer, int64_t n, int64_t inner, int sms) {
  const plans::ScanLaunch l = plans::plan_scan(outer, n, inner, sms);
  EXPECT_TRUE(is_pow2(l.bx) && is_pow2(l.by));
  EXPECT_LE(l.bx * l.by, 512);
  if (l.row) {
    EXPECT_TRUE(l.bx > 32 ? l.by == 1 : l.bx * l.by == 256) << l.bx << "x" << l.by;
  } else {
    EXPECT_EQ(l.by, 1);
  }
  EXPECT_LE(l.chunks, plans::kMaxScanChunks);
  EXPECT_GE(l.chunks * l.chunk, n);
  EXPECT_EQ(l.nseq, l.row ? outer : outer * inner);
  std::vector<double> totals(static_cast<size_t>(l.nseq * l.chunks), 0.0);
  std::vector<double> out(in.size(), std::nan(""));
  std::vector<int> writes(in.size(), 0);
  auto walk = [&](bool scan_pass) {
    for (int64_t ch = 0; ch < l.chunks; ++ch)
      for (int64_t b = 0; b < l.blocks; ++b)
        for (int ty = 0; ty < l.by; ++ty)
          for (int tx = 0; tx < l.bx; ++tx) {
            int64_t seq, base, stride;
            if (!plans::scan_thread(l, n, inner, b, tx, ty, seq, base, stride)) continue;
            if (l.row && tx != 0) continue;  // the group's lanes share one sequence: walk it once
            int64_t r0, r1;
            plans::chunk_range(l.chunk, n, ch, r0, r1);
            double& slot = totals[static_cast<size_t>(ch * l.nseq + seq)];
            double acc = scan_pass ? slot : 0.0;
            for (int64_t r = r0; r < r1; ++r) {
              const size_t e = static_cast<size_t>(base + r * stride);
              acc += in[e];
              if (scan_pass) {
                out[e] = acc;
                ++writes[e];
              }
            }
            if (!scan_pass) slot = acc;
          }
  };
  if (l.chunks > 1) {
    walk(false);
    for (int64_t s = 0; s < l.nseq; ++s) {  // carries
      double run = 0;
      for (int64_t ch = 0; ch < l.chunks; ++ch) {
        const double t = totals[static_cast<size_t>(ch * l.nseq + s)];
        totals[static_cast<size_t>(ch * l.nseq + s)] = run;
        run += t;
      }
    }
  }
  walk(true);
  for (size_t e = 0; e < writes.size(); ++e) EXPECT_EQ(writes[e], 1) << "element " << e;
  return out;
}

TEST(CudaReducePlan, EmulatedScansMatchCumsum) {
  std::mt19937 rng(11);
  struct Shape {
    int64_t outer, n, inner;
    int sms;
  };
  const Shape shapes[] = {{1, 1, 1, 132},     {3, 5, 1, 132},     {1, 100000, 1, 132}, {2, 70000, 1, 4},
                          {5, 1000, 3, 132},  {1, 50000, 2, 132}, {1, 3, 4000, 132},   {600, 40, 1, 132},
                          {1, 10000, 64, 8},  {2, 33, 1, 1}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << s.outer << "x" << s.n << "x" << s.inner << " sms " << s.sms);
    std::vector<double> in(static_cast<size_t>(s.outer * s.n * s.inner));
    for (double& v : in) v = static_cast<double>(static_cast<int>(rng() % 7) - 3);
    const std::vector<double> got = emulate_scan(in, s.outer, s.n, s.inner, s.sms);
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        double acc = 0;
        for (int64_t r = 0; r < s.n; ++r) {
          const size_t e = static_cast<size_t>((o * s.n + r) * s.inner + i);
          acc += in[e];
          ASSERT_EQ(got[e], acc) << "o " << o << " r " << r << " i " << i;
        }
      }
  }
}

TEST(CudaReducePlan, LongScansAreChunked) {
  const plans::ScanLaunch l = plans::plan_scan(1, int64_t(1) << 24, 1, 132);
  EXPECT_TRUE(l.row);
  EXPECT_EQ(l.bx, 512);
  EXPECT_GT(l.chunks, 100);
  EXPECT_EQ(l.chunk % l.bx, 0);
  const plans::ScanLaunch c = plans::plan_scan(1, int64_t(1) << 20, 4, 132);
  EXPECT_FALSE(c.row);
  EXPECT_GT(c.chunks, 100);
  // Many rows: no chunks.
  EXPECT_EQ(plans::plan_scan(100000, 1000, 1, 132).chunks, 1);
}

TEST(CudaReducePlan, DimLayout) {
  const int64_t sizes[] = {2, 3, 4, 5};
  plans::DimLayout d = plans::dim_layout(sizes, 4, 1);
  EXPECT_EQ(d.outer, 2);
  EXPECT_EQ(d.n, 3);
  EXPECT_EQ(d.inner, 20);
  d = plans::dim_layout(sizes, 4, 3);
  EXPECT_EQ(d.outer, 24);
  EXPECT_EQ(d.n, 5);
  EXPECT_EQ(d.inner, 1);
  d = plans::dim_layout(sizes, 0, 0);  // 0-dim
  EXPECT_EQ(d.outer * d.n * d.inner, 1);
}

// ---- sort keys -------------------------------------------------------------------------

// The CPU's order: NaN above everything, -0.0 == +0.0.
template <class F>
int cpu_compare(F a, F b) {
  const bool an = a != a, bn = b != b;
  if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
  return a < b ? -1 : (a > b ? 1 : 0);
}
int sign(int64_t v) { return v < 0 ? -1 : (v > 0 ? 1 : 0); }
template <class T>
int key_compare(T a, T b, bool desc) {
  const uint64_t ka = plans::sort_key(a, desc), kb = plans::sort_key(b, desc);
  return ka < kb ? -1 : (ka > kb ? 1 : 0);
}

TEST(CudaSortKeys, AllHalfAndBFloat16Values) {
  // Every bit pattern against a sample of others: key order == value order.
  std::vector<uint16_t> sample;
  for (uint32_t b = 0; b < 65536; b += 97) sample.push_back(static_cast<uint16_t>(b));
  for (uint16_t b : {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x0001, 0x8001, 0x7bff, 0xfbff})
    sample.push_back(b);
  for (uint32_t a = 0; a < 65536; ++a) {
    const Half ha(static_cast<uint16_t>(a), Half::from_bits_t{});
    const BFloat16 ba(static_cast<uint16_t>(a), BFloat16::from_bits_t{});
    EXPECT_LE(plans::sort_key(ha, false), plans::key_mask(16));
    for (uint16_t b : sample) {
      const Half hb(b, Half::from_bits_t{});
      const BFloat16 bb(b, BFloat16::from_bits_t{});
      const int want_h = cpu_compare(static_cast<float>(ha), static_cast<float>(hb));
      const int want_b = cpu_compare(static_cast<float>(ba), static_cast<float>(bb));
      ASSERT_EQ(key_compare(ha, hb, false), want_h) << std::hex << a << " vs " << b;
      ASSERT_EQ(key_compare(ha, hb, true), -want_h) << std::hex << a << " vs " << b;
      ASSERT_EQ(key_compare(ba, bb, false), want_b) << std::hex << a << " vs " << b;
      ASSERT_EQ(key_compare(ba, bb, true), -want_b) << std::hex << a << " vs " << b;
    }
  }
}

template <class F>
std::vector<F> float_cases(std::mt19937& rng) {
  using L = std::numeric_limits<F>;
  std::vector<F> v = {F(0), -F(0), F(1), F(-1), L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN(),
                      L::min(), -L::min(), L::denorm_min(), -L::denorm_min(), L::max(), L::lowest(), F(2.5), F(-2.5)};
  std::normal_distribution<double> nd(0, 1000);
  for (int i = 0; i < 200; ++i) v.push_back(static_cast<F>(nd(rng)));
  return v;
}

TEST(CudaSortKeys, FloatsDoublesIntegers) {
  std::mt19937 rng(3);
  const auto fs = float_cases<float>(rng);
  for (float a : fs)
    for (float b : fs) {
      ASSERT_EQ(key_compare(a, b, false), cpu_compare(a, b)) << a << " vs " << b;
      ASSERT_EQ(key_compare(a, b, true), -cpu_compare(a, b)) << a << " vs " << b;
    }
  const auto ds = float_cases<double>(rng);
  for (double a : ds)
    for (double b : ds) {
      ASSERT_EQ(key_compare(a, b, false), cpu_compare(a, b)) << a << " vs " << b;
      ASSERT_EQ(key_compare(a, b, true), -cpu_compare(a, b)) << a << " vs " << b;
    }
  std::vector<int64_t> is = {0, 1, -1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                             std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  for (int i = 0; i < 100; ++i) is.push_back(static_cast<int64_t>(rng()) - (int64_t(1) << 31));
  for (int64_t a : is)
    for (int64_t b : is) {
      ASSERT_EQ(key_compare(a, b, false), sign((a > b) - (a < b)));
      ASSERT_EQ(key_compare(a, b, true), -sign((a > b) - (a < b)));
      const auto a32 = static_cast<int32_t>(a), b32 = static_cast<int32_t>(b);
      ASSERT_EQ(key_compare(a32, b32, false), sign((a32 > b32) - (a32 < b32)));
      ASSERT_LE(plans::sort_key(a32, true), plans::key_mask(32));
    }
  for (int a = 0; a < 256; ++a)
    for (int b = 0; b < 256; ++b) {
      ASSERT_EQ(key_compare(static_cast<uint8_t>(a), static_cast<uint8_t>(b), false), sign(a - b));
      ASSERT_EQ(key_compare(static_cast<uint8_t>(a), static_cast<uint8_t>(b), true), -sign(a - b));
    }
  EXPECT_LT(key_compare(false, true, false), 0);
  EXPECT_GT(key_compare(false, true, true), 0);
  EXPECT_EQ(plans::SortKey<bool>::bits, 8);
  EXPECT_EQ(plans::SortKey<Half>::bits, 16);
  EXPECT_EQ(plans::SortKey<float>::bits, 32);
  EXPECT_EQ(plans::SortKey<double>::bits, 64);
}

// ---- the block sort ----------------------------------------------------------------------

// Runs the shared-memory bitonic network of block_sort_kernel on the CPU for
// the rows of one block; returns the indices of each row in sorted order.
std::vector<std::vector<uint32_t>> emulate_block_sort(const std::vector<std::vector<float>>& rows, bool desc, int sms) {
  const int64_t nrows = static_cast<int64_t>(rows.size()), n = static_cast<int64_t>(rows[0].size());
  const plans::SortLaunch l = plans::plan_sort(nrows, n, sms);
  EXPECT_TRUE(l.block_sort);
  EXPECT_TRUE(is_pow2(l.pad) && is_pow2(l.rows_per_block));
  EXPECT_GE(l.pad, n);
  EXPECT_LE(l.smem_bytes, 48 * 1024);
  EXPECT_GE(l.threads, 32);
  EXPECT_LE(l.threads, 1024);
  EXPECT_GE(l.blocks * l.rows_per_block, nrows);
  std::vector<std::vector<uint32_t>> result(rows.size());
  const int64_t P = l.pad, total = l.rows_per_block * P;
  for (int64_t b = 0; b < l.blocks; ++b) {
    std::vector<uint64_t> keys(static_cast<size_t>(total));
    std::vector<uint32_t> idx(static_cast<size_t>(total));
    for (int64_t e = 0; e < total; ++e) {
      const int64_t row = b * l.rows_per_block + e / P, j = e & (P - 1);
      if (row < nrows && j < n) {
        keys[e] = plans::sort_key(rows[row][j], desc);
        idx[e] = static_cast<uint32_t>(j);
      } else {
        keys[e] = ~0ull;
        idx[e] = 0xffffffffu;
      }
    }
    for (int64_t kk = 2; kk <= P; kk <<= 1)
      for (int64_t j = kk >> 1; j > 0; j >>= 1)
        for (int64_t q = 0; q < total / 2; ++q) {
          const int64_t i = plans::bitonic_lo(q, j), p = i + j;
          EXPECT_EQ(i / P, p / P) << "pairs stay within a row";
          const bool greater = keys[i] > keys[p] || (keys[i] == keys[p] && idx[i] > idx[p]);
          if (greater == plans::bitonic_ascending(i, kk, P)) {
            std::swap(keys[i], keys[p]);
            std::swap(idx[i], idx[p]);
          }
        }
    for (int64_t e = 0; e < total; ++e) {
      const int64_t row = b * l.rows_per_block + e / P, j = e & (P - 1);
      if (row < nrows && j < n) result[row].push_back(idx[e]);
    }
  }
  return result;
}

TEST(CudaSortPlan, BitonicNetworkIsAStableSort) {
  std::mt19937 rng(5);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {1, 2, 3, 7, 8, 33, 100, 1000, 4096}) {
    for (int64_t nrows : {1, 3, 50}) {
      if (n * nrows > 60000) continue;
      std::vector<std::vector<float>> rows(static_cast<size_t>(nrows));
      for (auto& r : rows)
        for (int64_t j = 0; j < n; ++j) {
          const int c = static_cast<int>(rng() % 12);
          r.push_back(c == 0 ? nan : c == 1 ? -0.0f : c == 2 ? 0.0f : static_cast<float>(rng() % 5) - 2.0f);
        }
      for (bool desc : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n " << n << " rows " << nrows << " desc " << desc);
        const auto got = emulate_block_sort(rows, desc, 2);
        for (size_t r = 0; r < rows.size(); ++r) {
          std::vector<uint32_t> want(static_cast<size_t>(n));
          std::iota(want.begin(), want.end(), 0u);
          std::stable_sort(want.begin(), want.end(), [&](uint32_t a, uint32_t b) {
            const int c = cpu_compare(rows[r][a], rows[r][b]);
            return desc ? c > 0 : c < 0;
          });
          ASSERT_EQ(got[r], want) << "row " << r;
        }
      }
    }
  }
}

TEST(CudaSortPlan, Choice) {
  plans::SortLaunch l = plans::plan_sort(1, 4096, 132);
  EXPECT_TRUE(l.block_sort);
  EXPECT_EQ(l.pad, 4096);
  EXPECT_EQ(l.threads, 1024);
  EXPECT_EQ(l.smem_bytes, 4096 * 12);
  EXPECT_FALSE(plans::plan_sort(1, 4097, 132).block_sort);
  // Many short rows: several per block, still >= 2 blocks per SM.
  l = plans::plan_sort(1 << 20, 10, 132);
  EXPECT_EQ(l.pad, 16);
  EXPECT_GT(l.rows_per_block, 1);
  EXPECT_LE(l.rows_per_block * l.pad, plans::kBlockSortMax);
  EXPECT_GE(l.blocks, 2 * 132);
  EXPECT_EQ(plans::plan_sort(0, 10, 132).blocks, 0);
}

// ---- row indexer ----------------------------------------------------------------------

TEST(CudaSortPlan, RowIndexerMatchesNaiveOffsets) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t nd = 1 + static_cast<int64_t>(rng() % 6);
    std::vector<int64_t> sizes(static_cast<size_t>(nd));
    for (auto& s : sizes) s = 1 + static_cast<int64_t>(rng() % 4);
    const int64_t dim = static_cast<int64_t>(rng() % nd);
    // in: a permuted and possibly sliced layout; values/indices: contiguous.
    std::vector<int64_t> perm(static_cast<size_t>(nd));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int64_t> st_in(static_cast<size_t>(nd)), st_c(static_cast<size_t>(nd));
    int64_t acc = 1;
    for (int64_t k = nd - 1; k >= 0; --k) {
      const size_t d = static_cast<size_t>(perm[static_cast<size_t>(k)]);
      st_in[d] = acc * (trial % 3 == 0 ? 2 : 1);
      acc *= sizes[d] * (trial % 3 == 0 ? 2 : 1);
    }
    acc = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      st_c[static_cast<size_t>(d)] = acc;
      acc *= sizes[static_cast<size_t>(d)];
    }
    const int64_t* strides[3] = {st_in.data(), st_c.data(), st_c.data()};
    plans::RowIndexer ix;
    ASSERT_TRUE(plans::make_row_indexer(sizes.data(), strides, 3, nd, dim, ix));
    int64_t rows = 1;
    for (int64_t d = 0; d < nd; ++d)
      if (d != dim) rows *= sizes[static_cast<size_t>(d)];
    for (int64_t r = 0; r < rows; ++r) {
      int64_t want[3] = {0, 0, 0}, rem = r;
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (d == dim) continue;
        const int64_t i = rem % sizes[static_cast<size_t>(d)];
        rem /= sizes[static_cast<size_t>(d)];
        want[0] += i * st_in[static_cast<size_t>(d)];
        want[1] += i * st_c[static_cast<size_t>(d)];
        want[2] += i * st_c[static_cast<size_t>(d)];
      }
      int64_t got[3];
      plans::row_offsets(ix, r, got);
      ASSERT_EQ(got[0], want[0]) << "trial " << trial << " row " << r;
      ASSERT_EQ(got[1], want[1]);
      ASSERT_EQ(got[2], want[2]);
    }
  }
}

TEST(CudaSortPlan, RowIndexerMergesContiguousDims) {
  // (2, 3, 4, 5) contiguous, sorted along dim 3: dims 0..2 merge into one.
  const int64_t sizes[] = {2, 3, 4, 5};
  const int64_t st[] = {60, 20, 5, 1};
  const int64_t* strides[3] = {st, st, st};
  plans::RowIndexer ix;
  ASSERT_TRUE(plans::make_row_indexer(sizes, strides, 3, 4, 3, ix));
  EXPECT_EQ(ix.nd, 1);
  EXPECT_EQ(ix.sizes[0], 24);
  // Along dim 1: (2) and (4, 5) stay apart.
  ASSERT_TRUE(plans::make_row_indexer(sizes, strides, 3, 4, 1, ix));
  EXPECT_EQ(ix.nd, 2);
  // Too many dims that cannot merge: refused (the caller copies first).
  std::vector<int64_t> big(20, 2), bst(20);
  for (size_t d = 0; d < 20; ++d) bst[d] = int64_t(1) << (2 * (19 - d));  // gaps everywhere
  const int64_t* bstrides[3] = {bst.data(), bst.data(), bst.data()};
  EXPECT_FALSE(plans::make_row_indexer(big.data(), bstrides, 3, 20, 0, ix));
}

}  // namespace
