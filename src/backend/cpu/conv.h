// The CPU convolution kernels (rows conv_forward, conv_backward_data,
// conv_backward_weights of core/dispatch.h; plan in core/conv_plan.h):
// oneDNN primitives for float32 (conv_onednn.cpp, compiled once: oneDNN
// picks its own ISA) and im2col + GEMM for float64, for parameters oneDNN
// does not take, and as the reference (kernels/conv.cpp, per ISA).
#pragma once
#include <atomic>
#include <cstdint>

#include "brisk/tensor.h"
#include "core/conv_plan.h"

namespace brisk::cpu {

/// oneDNN primitives (float32). false: brisk was built without oneDNN or
/// oneDNN has no implementation for these parameters (nothing was written).
bool onednn_conv_forward(const conv::ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias,
                         const Tensor& dst, conv::ConvScratch* scratch);
bool onednn_conv_backward_data(const conv::ConvGeom& g, const Tensor& grad_dst, const Tensor& w,
                               const Tensor& grad_src, conv::ConvScratch* scratch);
bool onednn_conv_backward_weights(const conv::ConvGeom& g, const Tensor& src, const Tensor& grad_dst,
                                  const Tensor& grad_w, const Tensor& grad_bias, conv::ConvScratch* scratch);
/// Whether brisk was built with oneDNN.
bool onednn_available();

/// Counters for tests and profiling (relaxed atomics; never reset by brisk).
struct ConvStats {
  std::atomic<uint64_t> onednn_calls{0};         ///< kernels run by oneDNN
  std::atomic<uint64_t> im2col_calls{0};         ///< kernels run by im2col + GEMM
  std::atomic<uint64_t> activation_reorders{0};  ///< src/dst layout conversions around oneDNN
  std::atomic<uint64_t> reorders_reused{0};      ///< conversions taken from a ConvScratch instead
  std::atomic<uint64_t> primitives_created{0};   ///< oneDNN primitive descriptors built (cache misses)
};
ConvStats& conv_stats();
/// Drops every cached oneDNN convolution primitive.
void clear_conv_primitive_cache();

}  // namespace brisk::cpu
