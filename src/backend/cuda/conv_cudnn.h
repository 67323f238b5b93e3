// Convolutions on CUDA tensors through cuDNN: the CUDA kernels of the rows
// conv_forward, conv_backward_data and conv_backward_weights of the op table
// (core/dispatch.h; plan in core/conv_plan.h), registered by
// register_conv_kernels(). Plain brisk types only; the cuDNN code is in
// conv_cudnn.cpp (see docs/design/cuda_conv.md).
//
// Tensors are CUDA tensors of one device and one dtype (float32, float64,
// float16, bfloat16) with the shapes of the geometry `g`. Activations may
// have any strides: one that is not contiguous in the geometry's layout
// (g.channels_last: NHWC, else NCHW) is converted to it first. Outputs are
// preallocated by the caller (activations in the geometry's layout, the
// weight gradient in any layout) and are overwritten. `op` names the op in
// errors ("[conv2d] cuDNN could not be loaded: ...").
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "brisk/tensor.h"
#include "core/conv_plan.h"

namespace brisk::cuda::detail {

/// Fills the CUDA slots of the three convolution rows.
void register_conv_kernels();

/// dst = conv(src, w) + bias (bias may be undefined).
void cudnn_conv_forward(const char* op, const conv::ConvGeom& g, const Tensor& src, const Tensor& w,
                        const Tensor& bias, const Tensor& dst);
/// grad_src = conv^T(grad_dst, w).
void cudnn_conv_backward_data(const char* op, const conv::ConvGeom& g, const Tensor& grad_dst, const Tensor& w,
                              const Tensor& grad_src);
/// grad_w = sum over n of grad_dst (x) src (when defined); grad_bias =
/// grad_dst summed over (N, OH, OW) (when defined).
void cudnn_conv_backward_weights(const char* op, const conv::ConvGeom& g, const Tensor& src,
                                 const Tensor& grad_dst, const Tensor& grad_w, const Tensor& grad_bias);

// ---- planning (plain arithmetic, tested on the host) ---------------------------------

/// How one spatial dim of a convolution is expressed with cuDNN, whose
/// padding is symmetric (Note [cuDNN padding] in conv_cudnn.cpp): cuDNN pads
/// `pad` on both sides of an input that is first extended by `before` zero
/// rows at its start and `after` at its end (a negative `after` cuts that
/// many trailing rows, which no window reads). Zero `before` and `after`:
/// the input is used as it is.
struct CudnnPadFit {
  int64_t pad = 0, before = 0, after = 0;
  bool needs_copy() const { return before != 0 || after != 0; }
};

/// The fit of a dim with input size `in`, output size `out`, kernel `k`,
/// `stride`, `dilation` and the padding before the input `pad_before`
/// (the padding after it follows from `out`).
inline CudnnPadFit cudnn_pad_fit(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dilation,
                                 int64_t pad_before) {
  const int64_t extent = dilation * (k - 1) + 1;
  // how far the last window reaches past the end of the input (negative:
  // it stops that many rows before the end)
  const int64_t end = (out - 1) * stride + extent - in - pad_before;
  // cuDNN's output size floor((in + 2 pad - extent) / stride) + 1 is `out`
  if (end <= pad_before && pad_before - end < stride) return {pad_before, 0, 0};
  const int64_t p = std::max<int64_t>(0, std::min(pad_before, end));
  return {p, pad_before - p, end - p};
}

/// Samples per cuDNN call so that no tensor of a call has more than `limit`
/// elements (cuDNN's int32 indexing), given the largest per-sample element
/// count of its activations; 0 when a single sample is already too large.
inline int64_t cudnn_batch_chunk(int64_t n, int64_t per_sample, int64_t limit = INT32_MAX) {
  if (per_sample <= 0) return n;
  if (per_sample > limit) return 0;
  return std::min(n, limit / per_sample);
}

// ---- statistics ------------------------------------------------------------------------

/// Counters for tests (relaxed atomics, process-wide, never reset by brisk).
struct CudnnConvStats {
  std::atomic<uint64_t> calls{0};             ///< cuDNN convolution calls (every pass, every batch chunk)
  std::atomic<uint64_t> plans_created{0};     ///< descriptor sets built (cache misses)
  std::atomic<uint64_t> heuristic_choices{0}; ///< algorithms chosen by cudnnGet*_v7
  std::atomic<uint64_t> benchmark_finds{0};   ///< algorithms chosen by cudnnFind*AlgorithmEx
  std::atomic<uint64_t> padded_copies{0};     ///< inputs copied for a padding cuDNN cannot express
  std::atomic<uint64_t> fallbacks{0};         ///< passes run in NCHW or float32: no algorithm as asked
};
/// Declared weak so that a test links against a build without the backend.
[[gnu::weak]] CudnnConvStats& cudnn_conv_stats();
/// Drops every cached descriptor set and algorithm choice.
[[gnu::weak]] void cudnn_conv_clear_cache();
/// For tests: the most elements one tensor of a cuDNN call may have (the
/// batch is split above it); 0 restores the default, INT32_MAX.
[[gnu::weak]] void cudnn_conv_set_element_limit(int64_t limit);

}  // namespace brisk::cuda::detail
