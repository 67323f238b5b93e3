// The plan of one convolution kernel call, shared by the front end
// (src/nn/conv.cpp) and the backends' convolution kernels (the rows
// conv_forward, conv_backward_data, conv_backward_weights of the op table in
// core/dispatch.h). See docs/design/conv.md.
//
// Every convolution is described as a *direct* 2-D convolution: src
// (N, IC, IH, IW) * weight (OC, IC / G, KH, KW) -> dst (N, OC, OH, OW).
// conv1d runs with IH = KH = 1. A transposed convolution runs as the
// gradient of its dual direct convolution: its output is the dual's src,
// its input the dual's dst, its weight the dual's weight as is (PyTorch's
// transposed weight (C_in, C_out / G, kH, kW) is the dual's (OC, IC / G, ...)).
// So forward, backward-data and backward-weights serve both kinds:
//
//   op                      direct conv             transposed conv
//   forward                 conv_forward            conv_backward_data (+ bias)
//   gradient of the input   conv_backward_data      conv_forward
//   gradient of the weight  conv_backward_weights   conv_backward_weights (src, dst swapped)
//
// Kernel contract: tensors of one device and one floating dtype with the
// shapes above (the CPU takes float32 and float64: the front end computes
// float16/bfloat16 in float32 there). Inputs may have any strides; outputs
// are preallocated by the caller (activations in the geometry's layout,
// weight gradients in the weight's layout) and are overwritten. An
// undefined bias / grad_w / grad_bias is not read / not written. `op` names
// the op in errors.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "brisk/tensor.h"

namespace brisk::conv {

/// Shapes and parameters of one direct 2-D convolution.
struct ConvGeom {
  int64_t n = 0;
  int64_t ic = 0, ih = 0, iw = 0;  // src
  int64_t oc = 0, oh = 0, ow = 0;  // dst
  int64_t kh = 0, kw = 0;
  int64_t sh = 1, sw = 1;          // stride
  int64_t dh = 1, dw = 1;          // dilation (1: dense)
  int64_t pt = 0, pl = 0;          // zero padding before (top, left)
  int64_t pb = 0, pr = 0;          // and after (bottom, right): what the caller asked for
  int64_t groups = 1;
  /// The layout the convolution runs in: NHWC (channels_last) or NCHW. It is
  /// the layout of the outputs; inputs in the other layout are converted.
  bool channels_last = false;
};

/// Whether the convolution has no work (an empty batch, channel or spatial dim).
inline bool empty_problem(const ConvGeom& g) {
  return g.n == 0 || g.ic == 0 || g.oc == 0 || g.ih == 0 || g.iw == 0 || g.oh == 0 || g.ow == 0;
}

/// Activations converted to a backend's internal layouts by one kernel call,
/// for the next calls on the same tensors: a backward pass converts grad_dst
/// once for backward-data and backward-weights, and the forward's converted
/// src is kept for backward-weights (the CPU's oneDNN kernels use it; other
/// backends ignore it). An entry holds the user tensor (so that its memory
/// cannot be reused by another tensor) and the version it had; it matches
/// only the same tensor data at the same version in the same layouts.
struct ConvScratch {
  struct Converted {
    Tensor user;
    uint32_t version = 0;
    std::string user_layout, inner_layout;  // backend memory descriptors, as bytes
    Tensor buffer;
  };
  std::vector<Converted> converted;
};

}  // namespace brisk::conv
