// Window arithmetic of the CUDA pooling kernels (src/backend/cuda/pooling.cu),
// host/device-neutral: nvcc compiles it into the kernels and the host
// compiler into tests/cuda/test_cuda_nn_host.cpp, which checks every
// function against brute force on the CPU.
//
// Note [CUDA pooling windows]
// Along one dim, output o of max/avg pooling looks at taps start + k * d,
// start = o * s - p, k in [0, K) (d = 1 for average pooling). The forwards
// walk the taps of one output; the backwards run one thread per INPUT
// position and walk the outputs whose windows may contain it (a gather: no
// atomics, each input gradient summed in a fixed order, deterministic):
// pool_outputs_covering gives them as a range [lo, hi) of output indices,
// exact for d = 1 and a superset for d > 1 (max pooling then compares the
// saved flat index with the position anyway).
#pragma once
#include <cstdint>

#include "brisk/half.h"  // BRISK_HOST_DEVICE

namespace brisk::cuda::detail {

// The index type I is int32_t in the kernels' 32-bit path (every size and
// index of the call below 2^31: cheaper divisions), int64_t otherwise.

/// floor(a / b) for b > 0 and any a.
template <class I>
BRISK_HOST_DEVICE inline I pool_floor_div(I a, I b) {
  const I q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

/// ceil(a / b) for b > 0 and any a.
template <class I>
BRISK_HOST_DEVICE inline I pool_ceil_div(I a, I b) {
  return -pool_floor_div<I>(-a, b);
}

/// A half-open range [lo, hi) (empty when hi <= lo).
template <class I>
struct PoolRange {
  I lo, hi;
};

/// Max pooling: the taps of output o inside the input: tap k sits at
/// start + k * d and is inside [0, in) for k in [lo, hi) (the CPU's spans;
/// the kernels test each tap instead, this is the reference of the tests).
template <class I>
struct MaxTaps {
  I start, lo, hi;
};
template <class I>
BRISK_HOST_DEVICE inline MaxTaps<I> max_pool_taps(I o, I in, I k, I s, I p, I d) {
  const I start = o * s - p;
  const I lo = start < 0 ? pool_ceil_div<I>(-start, d) : 0;
  I hi = pool_ceil_div<I>(in - start, d);
  if (hi > k) hi = k;
  if (hi < lo) hi = lo;
  return {start, lo, hi};
}

/// Outputs o in [0, out) whose window [o*s - p, o*s - p + ext) contains
/// input position i, ext = (k - 1) * d + 1 the dilated kernel extent. Exact
/// for d = 1; for d > 1 a superset (a window can straddle i between taps).
template <class I>
BRISK_HOST_DEVICE inline PoolRange<I> pool_outputs_covering(I i, I out, I s, I p, I ext) {
  I lo = pool_floor_div<I>(i + p - ext, s) + 1;
  I hi = pool_floor_div<I>(i + p, s) + 1;
  if (lo < 0) lo = 0;
  if (hi > out) hi = out;
  return {lo, hi};
}

/// Average pooling: output o's window as summed ([lo, hi), clipped to the
/// input) and its divisor factor `ext` (the window clipped to the padded
/// input when count_include_pad, else hi - lo), as the CPU's avg_ranges.
template <class I>
struct AvgWindow {
  I lo, hi, ext;
};
template <class I>
BRISK_HOST_DEVICE inline AvgWindow<I> avg_pool_window(I o, I in, I k, I s, I p, bool count_include_pad) {
  const I start = o * s - p;
  I end = start + k;
  if (end > in + p) end = in + p;
  const I lo = start > 0 ? start : 0;
  const I hi = end < in ? end : in;
  return {lo, hi, count_include_pad ? I(end - start) : I(hi - lo)};
}

/// Adaptive average pooling: output o's window [floor(o*in/out),
/// ceil((o+1)*in/out)).
template <class I>
BRISK_HOST_DEVICE inline AvgWindow<I> adaptive_pool_window(I o, I in, I out) {
  const I lo = (o * in) / out, hi = ((o + 1) * in + out - 1) / out;
  return {lo, hi, I(hi - lo)};
}

/// Adaptive outputs whose windows may contain input i: [floor(i*out/in),
/// ceil((i+1)*out/in)) clipped to [0, out). A superset of the exact set
/// (the kernels test membership with adaptive_pool_window).
template <class I>
BRISK_HOST_DEVICE inline PoolRange<I> adaptive_outputs_covering(I i, I in, I out) {
  const I lo = (i * out) / in;
  I hi = ((i + 1) * out + in - 1) / in;
  if (hi > out) hi = out;
  return {lo, hi};
}

/// The largest number of input positions one output window of average
/// pooling can sum along a dim (picks the warp-per-output kernel for
/// large windows).
inline int64_t avg_max_window(int64_t in, int64_t out, int64_t k, bool adaptive) {
  if (!adaptive) return k < in ? k : in;
  return (in + out - 1) / out + 1 < in ? (in + out - 1) / out + 1 : in;
}

}  // namespace brisk::cuda::detail
