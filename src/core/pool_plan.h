// The plan of one pooling call (max_pool2d, avg_pool2d, adaptive_avg_pool2d
// and their 1-D forms on a (.., 1, L) view), made once by the front end
// (src/nn/pooling.cpp) and read by the backends' pooling kernels (rows
// max_pool2d*, avg_pool2d* of core/dispatch.h). See docs/design/pooling_norm.md.
//
// Kernel contract: x / gy are in the plan's layout (NCHW-contiguous, or
// channels_last when sh.cl); outputs are allocated by the caller in that
// layout and every element is written.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "brisk/tensor.h"

namespace brisk::pool {

/// Sizes of one pooling call, shared by the front end, the kernels and the backward.
struct Shape {
  int64_t N, C, H, W, OH, OW;
  bool cl;                        // channels_last memory for input, output and gradients
  DimVector in_sizes, out_sizes;  // as the user sees them (3-D when unbatched)
};

/// The taps of output o's window along one dim: tap k sits at start + k * d
/// and is inside the input for k in [lo, hi).
struct Span {
  int64_t start, lo, hi;
};

struct MaxPlan {
  Shape sh;
  int64_t kH, kW, sH, sW, pH, pW, dH, dW;
  std::vector<Span> hs, ws;
  bool disjoint;  // no input position is in two windows
  bool tiles;     // the windows cover the input exactly, each position once
  bool fast2;     // 2x2 windows, stride 2, tiling
  bool wide;      // more than 254 taps: taps are int32, else uint8 (the CPU's taps)
};

/// One output's window along a dim: input [lo, hi), and its factor of the
/// divisor (the window's extent, padding included or not).
struct Range {
  int64_t lo, hi, ext;
};

struct AvgPlan {
  Shape sh;
  std::vector<Range> hs, ws;
  std::optional<int64_t> divisor;  // divisor_override
  bool adaptive;
  // avg_pool2d's kernel, stride, padding, count_include_pad (the CUDA kernels
  // compute the windows themselves)
  int64_t kH = 1, kW = 1, sH = 1, sW = 1, pH = 0, pW = 0;
  bool count_pad = true;
  bool disjoint, tiles, fast2;
};

}  // namespace brisk::pool
