// The three convolution kernels behind conv1d/conv2d/conv_transpose2d and
// their gradients (see docs/design/conv.md).
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
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "brisk/tensor.h"

namespace brisk::nn::conv {

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

/// Activations converted to oneDNN's layouts by one kernel call, for the
/// next calls on the same tensors: a backward pass converts grad_dst once for
/// backward-data and backward-weights, and the forward's converted src is kept
/// for backward-weights. An entry holds the user tensor (so that its memory
/// cannot be reused by another tensor) and the version it had; it matches
/// only the same tensor data at the same version in the same layouts.
struct ConvScratch {
  struct Converted {
    Tensor user;
    uint32_t version = 0;
    std::string user_layout, inner_layout;  // oneDNN memory descriptors, as bytes
    Tensor buffer;
  };
  std::vector<Converted> converted;
};

// All tensors are float32 or float64 CPU tensors of one dtype with the
// shapes above. Inputs may have any strides (oneDNN takes activations that
// are contiguous or channels_last and weights contiguous or channels_last,
// and leaves other layouts to im2col); outputs are preallocated by the
// caller (activations in the geometry's layout, weight gradients in the
// weight's layout) and are overwritten.

/// dst = conv(src, w) + bias (bias may be undefined).
/// `scratch` (may be null) shares converted activations between calls.
void conv_forward(const ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias, const Tensor& dst,
                  ConvScratch* scratch = nullptr);
/// grad_src = conv^T(grad_dst, w).
void conv_backward_data(const ConvGeom& g, const Tensor& grad_dst, const Tensor& w, const Tensor& grad_src,
                        ConvScratch* scratch = nullptr);
/// grad_w = sum over n of grad_dst (x) src; grad_bias = grad_dst summed over
/// (N, OH, OW) when defined.
void conv_backward_weights(const ConvGeom& g, const Tensor& src, const Tensor& grad_dst, const Tensor& grad_w,
                           const Tensor& grad_bias, ConvScratch* scratch = nullptr);

// ---- implementations ------------------------------------------------------------------

/// im2col + GEMM on brisk's matmul, any float dtype (the reference and the fallback).
void im2col_forward(const ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias, const Tensor& dst);
void im2col_backward_data(const ConvGeom& g, const Tensor& grad_dst, const Tensor& w, const Tensor& grad_src);
void im2col_backward_weights(const ConvGeom& g, const Tensor& src, const Tensor& grad_dst, const Tensor& grad_w,
                             const Tensor& grad_bias);

/// oneDNN primitives (float32). false: brisk was built without oneDNN or
/// oneDNN has no implementation for these parameters (nothing was written).
bool onednn_forward(const ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias, const Tensor& dst,
                    ConvScratch* scratch);
bool onednn_backward_data(const ConvGeom& g, const Tensor& grad_dst, const Tensor& w, const Tensor& grad_src,
                          ConvScratch* scratch);
bool onednn_backward_weights(const ConvGeom& g, const Tensor& src, const Tensor& grad_dst, const Tensor& grad_w,
                             const Tensor& grad_bias, ConvScratch* scratch);
/// Whether brisk was built with oneDNN.
bool onednn_available();

/// Counters for tests and profiling (relaxed atomics; never reset by brisk).
struct ConvStats {
  std::atomic<uint64_t> onednn_calls{0};       ///< kernels run by oneDNN
  std::atomic<uint64_t> im2col_calls{0};       ///< kernels run by im2col + GEMM
  std::atomic<uint64_t> activation_reorders{0};  ///< src/dst layout conversions around oneDNN
  std::atomic<uint64_t> reorders_reused{0};      ///< conversions taken from a ConvScratch instead
  std::atomic<uint64_t> primitives_created{0};   ///< oneDNN primitive descriptors built (cache misses)
};
ConvStats& conv_stats();
/// Drops every cached oneDNN primitive.
void clear_primitive_cache();

}  // namespace brisk::nn::conv
