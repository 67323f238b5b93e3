// Launch plans of the CUDA reduction, softmax/scan and sort kernels, and the
// index arithmetic they share (src/backend/cuda/{reduce,scan,sort}.cu).
//
// Everything here is plain host code or BRISK_HOST_DEVICE functions, with no
// CUDA header, so that tests/cuda/test_cuda_reduce_plan.cpp checks it on the
// CPU of a machine without a GPU. See docs/design/cuda_kernels.md
// (Reductions, Softmax and scans, Sort and topk).
#pragma once
#include <cstdint>

#include "brisk/half.h"  // BRISK_HOST_DEVICE, Half, BFloat16

namespace brisk::cuda::plans {

BRISK_HOST_DEVICE constexpr int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
BRISK_HOST_DEVICE constexpr int64_t round_up(int64_t a, int64_t b) { return div_up(a, b) * b; }
/// The smallest power of two >= v (1 for v <= 1).
BRISK_HOST_DEVICE constexpr int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}
/// The largest power of two <= v (1 for v <= 1).
BRISK_HOST_DEVICE constexpr int64_t prev_pow2(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p <<= 1;
  return p;
}
BRISK_HOST_DEVICE constexpr int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
BRISK_HOST_DEVICE constexpr int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// ---- reductions (and softmax) over (outer, reduce, inner) -------------------------

// Note [CUDA reduction layout]
// A block is bx * by threads. Each thread owns one output and one "lane" of
// its reduction: it visits reduce positions lane, lane + lanes, ... of its
// chunk and merges them into a private accumulator; the lanes of an output
// are then merged inside the block.
//   row mode (inner == 1): threadIdx.x is the lane (bx lanes per row, so a
//     warp reads contiguous runs of a row), threadIdx.y the row (by rows per
//     block). Lanes merge with warp shuffles (and shared memory when bx > 32).
//   column mode (inner > 1): threadIdx.x walks the outputs (bx consecutive
//     outputs (o, i) in flat order o * inner + i, so reads of one reduce
//     position are contiguous along inner), threadIdx.y is the lane (by lanes
//     per output). Lanes merge with a tree in shared memory.
// When there are few blocks and long reductions, blockIdx.y cuts the
// reduce range into `splits` chunks: each block writes a partial
// accumulator (partials[split * nout + output]) and a second kernel merges
// the partials of each output in a fixed order, so results never depend on
// timing (no atomics).
constexpr int kReduceThreads = 256;      // threads per block (up to 512: widest rows, softmax columns)
constexpr int64_t kMaxRowLanes = 512;    // lanes of one row at most
constexpr int64_t kElemsPerLane = 8;     // lanes are chosen so that each reads about this many
constexpr int64_t kMinPerLaneSplit = 32; // a split chunk gives each lane at least this many
constexpr int64_t kBlocksPerSm = 4;      // blocks per SM the splitter aims for
constexpr int64_t kMaxSplits = 1024;

struct ReduceLaunch {
  bool row = true;      // inner == 1 (see Note [CUDA reduction layout])
  int bx = 1, by = 1;   // block shape
  int64_t blocks = 0;   // blocks over the outputs (0: nothing to do)
  int64_t splits = 1;   // chunks of the reduce range (gridDim.y)
  int64_t chunk = 0;    // reduce positions per chunk (the whole range when splits == 1)
  int64_t nout = 0;     // outer * inner
  int lanes() const { return row ? bx : by; }
  int threads() const { return bx * by; }
};

/// The launch of a reduction over (outer, reduce, inner) on a GPU with
/// `sm_count` SMs; `allow_split` = false keeps every output in one block
/// (softmax, which writes from the block that reduced).
inline ReduceLaunch plan_reduce(int64_t outer, int64_t reduce, int64_t inner, int sm_count,
                                bool allow_split = true) {
  ReduceLaunch l;
  l.nout = outer * inner;
  l.chunk = reduce;
  if (l.nout <= 0) {
    l.blocks = 0;
    return l;
  }
  const int64_t per = div_up(reduce, kElemsPerLane);  // lanes wanted
  if (inner == 1) {
    l.row = true;
    l.bx = static_cast<int>(min64(kMaxRowLanes, next_pow2(per)));
    l.by = l.bx >= kReduceThreads ? 1 : static_cast<int>(kReduceThreads / l.bx);
    l.blocks = div_up(outer, l.by);
  } else {
    // Lanes along reduce first (as many as the reduction wants, leaving at
    // least min(inner, 32) threads along the outputs), then outputs.
    l.row = false;
    const int64_t bx0 = min64(next_pow2(inner), 32);
    l.by = static_cast<int>(min64(kReduceThreads / bx0, next_pow2(per)));
    l.bx = static_cast<int>(min64(next_pow2(l.nout), kReduceThreads / l.by));
    l.blocks = div_up(l.nout, l.bx);
  }
  const int64_t target = max64(1, static_cast<int64_t>(sm_count) * kBlocksPerSm);
  if (!allow_split && !l.row) {
    // Columns that cannot be split over blocks: more lanes per column (up to
    // 512 threads), then narrower column groups (down to 8), while blocks are few.
    const int64_t want = next_pow2(per);
    while (l.blocks < target) {
      if (l.by * 2 <= want && int64_t(l.bx) * l.by * 2 <= kMaxRowLanes) {
        l.by *= 2;
      } else if (l.bx > 8 && l.by * 2 <= want) {
        l.bx /= 2;
        l.by *= 2;
      } else {
        break;
      }
      l.blocks = div_up(l.nout, l.bx);
    }
  }
  const int64_t lanes = l.lanes();
  if (allow_split && l.blocks < target && reduce >= 2 * lanes * kMinPerLaneSplit) {
    int64_t s = min64(div_up(target, l.blocks), div_up(reduce, lanes * kMinPerLaneSplit));
    s = min64(s, kMaxSplits);
    if (s > 1) {
      l.chunk = round_up(div_up(reduce, s), lanes);
      l.splits = div_up(reduce, l.chunk);
    }
  }
  return l;
}

/// The output a thread of block `b` (in [0, blocks)) with threadIdx (tx, ty)
/// owns, its lane, and where its input row starts: element r of its
/// reduction is at in[base + r * stride]. Returns false for a thread past the
/// last output (it still takes part in the block's merges).
struct ReduceThread {
  int64_t out = 0, base = 0, stride = 1;
  int lane = 0;
};
BRISK_HOST_DEVICE inline bool reduce_thread(const ReduceLaunch& l, int64_t reduce, int64_t inner, int64_t b, int tx,
                                            int ty, ReduceThread& t) {
  if (l.row) {
    t.out = b * l.by + ty;
    t.lane = tx;
    t.base = t.out * reduce;
    t.stride = 1;
    return t.out < l.nout;
  }
  t.out = b * l.bx + tx;
  t.lane = ty;
  const int64_t o = t.out / inner, i = t.out - o * inner;
  t.base = o * reduce * inner + i;
  t.stride = inner;
  return t.out < l.nout;
}

/// The reduce positions [r0, r1) of chunk `split`; a thread visits
/// r0 + lane, r0 + lane + lanes, ... below r1.
BRISK_HOST_DEVICE inline void chunk_range(int64_t chunk, int64_t reduce, int64_t split, int64_t& r0, int64_t& r1) {
  r0 = split * chunk;
  r1 = min64(reduce, r0 + chunk);
}

// ---- scans along a dim ---------------------------------------------------------------

// Note [CUDA scan layout]
// A scan runs over `nseq` independent sequences of n elements each:
//   row mode (inner == 1): a group of bx threads (bx <= 32: a part of a warp,
//     by groups per block; bx > 32: the whole block, by == 1) walks its row
//     in tiles of bx elements, scanning each tile with shuffles and carrying
//     the running total to the next tile.
//   column mode (inner > 1): one thread per column (o, i), bx consecutive
//     columns (in flat order o * inner + i) per block, walks the n rows in
//     order.
// With few sequences and long rows the range is cut into `chunks` pieces
// (gridDim.y): a first kernel computes each chunk's total, a second turns
// them into the running total before each chunk (in chunk order), and the
// scan kernel starts each chunk from that carry.
constexpr int64_t kMaxScanLanes = 512;
constexpr int64_t kMinScanPerLane = 16;
constexpr int64_t kMaxScanChunks = 1024;

struct ScanLaunch {
  bool row = true;
  int bx = 1, by = 1;
  int64_t blocks = 0;  // gridDim.x work items
  int64_t nseq = 0;    // sequences (outer for rows, outer * inner for columns)
  int64_t chunks = 1, chunk = 0;
};

inline ScanLaunch plan_scan(int64_t outer, int64_t n, int64_t inner, int sm_count) {
  ScanLaunch l;
  l.chunk = n;
  if (outer * inner <= 0 || n <= 0) return l;
  int64_t lanes = 1;
  if (inner == 1) {
    l.row = true;
    l.bx = static_cast<int>(min64(kMaxScanLanes, next_pow2(n)));
    // bx <= 32: by rows per block, a part of a warp each; wider rows: one per block.
    l.by = l.bx > 32 ? 1 : static_cast<int>(kReduceThreads / l.bx);
    l.nseq = outer;
    l.blocks = div_up(outer, l.by);
    lanes = l.bx;
  } else {
    l.row = false;
    l.nseq = outer * inner;
    l.bx = static_cast<int>(min64(next_pow2(l.nseq), kReduceThreads));
    l.by = 1;
    l.blocks = div_up(l.nseq, l.bx);
  }
  const int64_t target = max64(1, static_cast<int64_t>(sm_count) * kBlocksPerSm);
  if (l.blocks < target && n >= 2 * lanes * kMinScanPerLane) {
    int64_t c = min64(div_up(target, l.blocks), div_up(n, lanes * kMinScanPerLane));
    c = min64(c, kMaxScanChunks);
    if (c > 1) {
      l.chunk = round_up(div_up(n, c), lanes);
      l.chunks = div_up(n, l.chunk);
    }
  }
  return l;
}

/// The sequence thread (tx, ty) of block b scans (Note [CUDA scan layout]):
/// element r of it is at base + r * stride. False past the last sequence
/// (the thread still takes part in its row's shuffles).
BRISK_HOST_DEVICE inline bool scan_thread(const ScanLaunch& l, int64_t n, int64_t inner, int64_t b, int tx, int ty,
                                          int64_t& seq, int64_t& base, int64_t& stride) {
  if (l.row) {
    seq = b * l.by + ty;
    base = seq * n;
    stride = 1;
  } else {
    seq = b * l.bx + tx;
    const int64_t o = seq / inner, i = seq - o * inner;
    base = o * n * inner + i;
    stride = inner;
  }
  return seq < l.nseq;
}

/// (outer, n, inner) of a contiguous tensor around `dim` (a 0-dim tensor: 1, 1, 1).
struct DimLayout {
  int64_t outer = 1, n = 1, inner = 1;
};
inline DimLayout dim_layout(const int64_t* sizes, int64_t ndim, int64_t dim) {
  DimLayout l;
  for (int64_t d = 0; d < ndim; ++d) {
    if (d < dim)
      l.outer *= sizes[d];
    else if (d == dim)
      l.n = sizes[d];
    else
      l.inner *= sizes[d];
  }
  return l;
}

// ---- sort ------------------------------------------------------------------------------

// Note [Sort keys]
// Every dtype sorts as an unsigned integer key whose order is the value
// order with NaN above +inf (every NaN the same key, so NaNs keep their
// input order) and -0.0 equal to +0.0: floats flip all bits of negatives and
// the sign bit of positives; signed integers flip the sign bit. Keys use the
// low `sort_key_bits` bits of a uint64; descending order sorts the
// complemented key (within those bits) ascending, so equal values keep their
// input order in both directions, as the CPU's stable sort does.
BRISK_HOST_DEVICE inline uint64_t key_from_f32_bits(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffull;  // NaN
  if ((u & 0x7fffffffu) == 0) u = 0;                            // -0.0 -> +0.0
  return (u & 0x80000000u) ? uint64_t(~u) : uint64_t(u | 0x80000000u);
}
BRISK_HOST_DEVICE inline uint64_t key_from_f64_bits(uint64_t u) {
  if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return ~0ull;
  if ((u & 0x7fffffffffffffffull) == 0) u = 0;
  return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}
/// binary16 (exponent mask 0x7c00) or bfloat16 (0x7f80).
BRISK_HOST_DEVICE inline uint64_t key_from_16_bits(uint16_t b, uint16_t exp_mask) {
  const uint32_t mag = b & 0x7fffu;
  if (mag > exp_mask) return 0xffffull;  // NaN (inf is exactly exp_mask)
  const uint32_t u = mag == 0 ? 0u : uint32_t(b);
  return (u & 0x8000u) ? uint64_t(~u & 0xffffu) : uint64_t(u | 0x8000u);
}

template <class T>
struct SortKey;
template <>
struct SortKey<bool> {
  static constexpr int bits = 8;
  BRISK_HOST_DEVICE static uint64_t key(bool v) { return v ? 1 : 0; }
};
template <>
struct SortKey<uint8_t> {
  static constexpr int bits = 8;
  BRISK_HOST_DEVICE static uint64_t key(uint8_t v) { return v; }
};
template <>
struct SortKey<int8_t> {
  static constexpr int bits = 8;
  BRISK_HOST_DEVICE static uint64_t key(int8_t v) { return uint64_t(uint8_t(v) ^ 0x80u); }
};
template <>
struct SortKey<int16_t> {
  static constexpr int bits = 16;
  BRISK_HOST_DEVICE static uint64_t key(int16_t v) { return uint64_t(uint16_t(v) ^ 0x8000u); }
};
template <>
struct SortKey<int32_t> {
  static constexpr int bits = 32;
  BRISK_HOST_DEVICE static uint64_t key(int32_t v) { return uint64_t(uint32_t(v) ^ 0x80000000u); }
};
template <>
struct SortKey<int64_t> {
  static constexpr int bits = 64;
  BRISK_HOST_DEVICE static uint64_t key(int64_t v) { return uint64_t(v) ^ 0x8000000000000000ull; }
};
template <>
struct SortKey<Half> {
  static constexpr int bits = 16;
  BRISK_HOST_DEVICE static uint64_t key(Half v) { return key_from_16_bits(v.x, 0x7c00u); }
};
template <>
struct SortKey<BFloat16> {
  static constexpr int bits = 16;
  BRISK_HOST_DEVICE static uint64_t key(BFloat16 v) { return key_from_16_bits(v.x, 0x7f80u); }
};
template <>
struct SortKey<float> {
  static constexpr int bits = 32;
  BRISK_HOST_DEVICE static uint64_t key(float v) { return key_from_f32_bits(::brisk::detail::f32_bits(v)); }
};
template <>
struct SortKey<double> {
  static constexpr int bits = 64;
  BRISK_HOST_DEVICE static uint64_t key(double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    return key_from_f64_bits(u);
  }
};
/// All ones in the low `bits` bits.
BRISK_HOST_DEVICE constexpr uint64_t key_mask(int bits) { return bits >= 64 ? ~0ull : ((1ull << bits) - 1); }
/// The key of v for an ascending (or, complemented, descending) sort.
template <class T>
BRISK_HOST_DEVICE inline uint64_t sort_key(T v, bool descending) {
  const uint64_t k = SortKey<T>::key(v);
  return descending ? (k ^ key_mask(SortKey<T>::bits)) : k;
}

// Note [CUDA sort layout]
// Rows of up to kBlockSortMax elements are sorted in shared memory, one
// block holding `rows_per_block` rows each padded to a power of two `pad`:
// a bitonic network over (key, index) pairs, a total order, so the result is
// the stable sort. Longer rows go through cub's radix sort (stable): all
// elements by key, then stably by row.
constexpr int64_t kBlockSortMax = 4096;       // 12 bytes per element: 48 KB of shared memory
constexpr int64_t kBlockSortItemBytes = 12;   // uint64 key + uint32 index

struct SortLaunch {
  bool block_sort = true;
  int64_t pad = 1;             // row length rounded up to a power of two
  int64_t rows_per_block = 1;
  int threads = 32;
  int64_t blocks = 0;
  int64_t smem_bytes = 0;
};

inline SortLaunch plan_sort(int64_t rows, int64_t n, int sm_count) {
  SortLaunch l;
  if (rows <= 0 || n <= 0) return l;
  if (n > kBlockSortMax) {
    l.block_sort = false;
    return l;
  }
  l.pad = next_pow2(n);
  // Several short rows per block, but keep about 2 blocks per SM busy.
  const int64_t want = prev_pow2(max64(1, rows / max64(1, 2 * static_cast<int64_t>(sm_count))));
  l.rows_per_block = max64(1, min64(want, kBlockSortMax / l.pad));
  l.threads = static_cast<int>(min64(1024, max64(32, l.rows_per_block * l.pad / 2)));
  l.blocks = div_up(rows, l.rows_per_block);
  l.smem_bytes = l.rows_per_block * l.pad * kBlockSortItemBytes;
  return l;
}

/// The lower position of compare-exchange pair q (of total / 2) in a bitonic
/// step of distance j (a power of two); its partner is that + j.
BRISK_HOST_DEVICE constexpr int64_t bitonic_lo(int64_t q, int64_t j) { return ((q & ~(j - 1)) << 1) | (q & (j - 1)); }

/// Sort direction of position i in a bitonic merge of span k, for rows padded
/// to `pad` (a power of two) laid end to end: every row ends ascending.
BRISK_HOST_DEVICE constexpr bool bitonic_ascending(int64_t i, int64_t k, int64_t pad) {
  return ((i & (pad - 1)) & k) == 0;
}

/// Offsets of row r (rows numbered row-major over every dim but the sorted
/// one) in up to three tensors that share their sizes except along that dim.
/// Dims of size 1 are dropped and neighbours that are contiguous in all three
/// are merged, so most layouts need one or two dims.
constexpr int kMaxRowDims = 12;
struct RowIndexer {
  int nd = 0;
  int64_t sizes[kMaxRowDims] = {};
  int64_t strides[3][kMaxRowDims] = {};
};

/// Builds the indexer; false when more than kMaxRowDims dims remain.
/// strides[k] are the strides (in elements) of tensor k; sizes are shared
/// (the sorted dim's size is ignored).
inline bool make_row_indexer(const int64_t* sizes, const int64_t* const strides[3], int ntensors, int64_t ndim,
                             int64_t dim, RowIndexer& ix) {
  ix = RowIndexer{};
  int nd = 0;
  for (int64_t d = 0; d < ndim; ++d) {
    if (d == dim || sizes[d] == 1) continue;
    if (nd > 0) {
      // merge into the previous (outer) dim when it steps exactly over this one
      bool merge = true;
      for (int k = 0; k < ntensors; ++k)
        if (ix.strides[k][nd - 1] != strides[k][d] * sizes[d]) merge = false;
      if (merge) {
        ix.sizes[nd - 1] *= sizes[d];
        for (int k = 0; k < ntensors; ++k) ix.strides[k][nd - 1] = strides[k][d];
        continue;
      }
    }
    if (nd == kMaxRowDims) return false;
    ix.sizes[nd] = sizes[d];
    for (int k = 0; k < ntensors; ++k) ix.strides[k][nd] = strides[k][d];
    ++nd;
  }
  ix.nd = nd;
  return true;
}

BRISK_HOST_DEVICE inline void row_offsets(const RowIndexer& ix, int64_t r, int64_t off[3]) {
  off[0] = off[1] = off[2] = 0;
  for (int d = ix.nd - 1; d >= 0; --d) {
    const int64_t s = ix.sizes[d];
    const int64_t i = r % s;
    r /= s;
    off[0] += i * ix.strides[0][d];
    off[1] += i * ix.strides[1][d];
    off[2] += i * ix.strides[2][d];
  }
}

}  // namespace brisk::cuda::plans
