// Launch plans of the CUDA normalization reductions (src/backend/cuda/
// normalization.cu), plain host code: tests/cuda/test_cuda_nn_host.cpp
// checks them on the CPU (every position covered once, launch limits).
//
// Note [CUDA normalization reductions]
// batch_norm and group_norm see the input as Nb blocks of C channels by S
// positions (Note [Normalization layouts] in src/backend/cpu/kernels/norm_channels.cpp):
// planar, memory (Nb, C, S), or interleaved, memory (Nb, S, C). Every
// statistic is first reduced per (block, channel) "slot" and per split of
// its S positions into a partial record of four doubles (in the forward the
// Welford count, mean and M2 of x - shift, shift = the first value of the
// channel or group, and the shift; in the backward sum dy and
// sum dy * (x - mean)):
// - planar (RowPlan): one warp per (slot, split), lanes striding over the
//   split's contiguous positions, merged by a fixed shuffle tree;
// - interleaved (ColPlan): blocks of tx channels by ty rows (tx = 32, or the
//   next power of two >= C when C < 32), threads walking rows of their
//   channel, merged across ty by a fixed tree in shared memory.
// A per-channel (batch_norm) or per-group (group_norm) kernel then merges
// the partials in a fixed order: (block, split) for a channel, (channel,
// split) for a group. No float atomics: the results are the same bits on
// every run. Splits only cut long slots so that the grid fills the GPU.
#pragma once
#include <algorithm>
#include <cstdint>

namespace brisk::cuda::detail {

constexpr int kNormThreads = 256;  // threads of every reduction block
constexpr int kNormWarps = kNormThreads / 32;

/// Planar reductions: `slots` rows of S contiguous values; one warp per
/// (slot, split), split j covering positions [j * chunk, min(S, (j+1) * chunk)).
struct RowPlan {
  int64_t slots = 0, S = 0, splits = 1, chunk = 0;
  int64_t items = 0;  // slots * splits warps of work
  int64_t blocks = 0;  // grid (blocks of kNormWarps warps, grid-stride over items)
};

/// `sms`: the device's SM count (the plan aims for about 64 resident warps per SM).
inline RowPlan plan_rows(int64_t slots, int64_t S, int64_t sms) {
  RowPlan p;
  p.slots = slots;
  p.S = S;
  if (slots <= 0 || S <= 0) return p;
  const int64_t target_warps = std::max<int64_t>(1, sms) * 64;
  int64_t splits = 1;
  if (slots < target_warps) {
    // at least 256 values (8 per lane) per split
    const int64_t max_splits = std::max<int64_t>(1, (S + 255) / 256);
    splits = std::clamp<int64_t>((target_warps + slots - 1) / slots, 1, max_splits);
  }
  p.chunk = (S + splits - 1) / splits;
  p.splits = (S + p.chunk - 1) / p.chunk;  // no empty split
  p.items = slots * p.splits;
  const int64_t max_blocks = std::max<int64_t>(1, sms) * 32;
  p.blocks = std::min((p.items + kNormWarps - 1) / kNormWarps, max_blocks);
  return p;
}

/// Interleaved reductions: Nb blocks of S rows by C channels; one thread
/// block per (block, channel tile, split), tx channels by ty rows.
struct ColPlan {
  int64_t Nb = 0, C = 0, S = 0;
  int tx = 32, ty = kNormThreads / 32;
  int64_t tiles = 0, splits = 1, chunk = 0;
  int64_t items = 0;   // Nb * tiles * splits thread blocks of work
  int64_t blocks = 0;  // grid (grid-stride over items)
};

inline ColPlan plan_cols(int64_t Nb, int64_t C, int64_t S, int64_t sms) {
  ColPlan p;
  p.Nb = Nb;
  p.C = C;
  p.S = S;
  if (Nb <= 0 || C <= 0 || S <= 0) return p;
  int tx = 1;
  while (tx < 32 && tx < C) tx *= 2;
  p.tx = tx;
  p.ty = kNormThreads / tx;
  p.tiles = (C + tx - 1) / tx;
  const int64_t target_blocks = std::max<int64_t>(1, sms) * 8;
  const int64_t base = Nb * p.tiles;
  int64_t splits = 1;
  if (base < target_blocks) {
    // at least 4 rows per thread per split
    const int64_t max_splits = std::max<int64_t>(1, (S + 4 * p.ty - 1) / (4 * p.ty));
    splits = std::clamp<int64_t>((target_blocks + base - 1) / base, 1, max_splits);
  }
  p.chunk = (S + splits - 1) / splits;
  p.splits = (S + p.chunk - 1) / p.chunk;
  p.items = base * p.splits;
  const int64_t max_blocks = std::max<int64_t>(1, sms) * 32;
  p.blocks = std::min(p.items, max_blocks);
  return p;
}

/// Grid of a one-thread-per-element kernel of 256-thread blocks, capped
/// (the kernels grid-stride).
inline int64_t elementwise_blocks(int64_t n, int64_t sms, int threads = 256) {
  if (n <= 0) return 0;
  return std::min<int64_t>((n + threads - 1) / threads, std::max<int64_t>(1, sms) * 32);
}

}  // namespace brisk::cuda::detail
