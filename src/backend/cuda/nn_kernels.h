// Entry points of the CUDA pooling and factory kernels
// (src/backend/cuda/{pooling,factories}.cu), reached through the op table:
// their rows are registered by register_pooling_kernels /
// register_factory_kernels (normalization registers its own slots). Plain brisk types
// only. The front ends keep their checks, shapes, layouts and autograd
// recording; these functions only fill tensors the caller allocated (in
// the layout the caller chose) and launch on the current stream of the
// tensors' device. See docs/design/cuda_nn.md.
#pragma once
#include <cstdint>
#include <utility>

#include "brisk/tensor.h"

namespace brisk::cuda::detail {

// ==== pooling ===================================================================================

/// One pooling call: (N, C, H, W) -> (N, C, OH, OW), NCHW-contiguous or
/// channels_last memory for every tensor of the call.
struct PoolDims {
  int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  bool channels_last = false;
};

struct MaxPoolParams {
  PoolDims d;
  int64_t kH = 1, kW = 1, sH = 1, sW = 1, pH = 0, pW = 0, dH = 1, dW = 1;
};

/// y = max over each window; `indices` (int64, y's layout; undefined: not
/// written) = flat input position h * W + w of the winner within its plane,
/// -1 for a window without an input position. A value wins when greater
/// than the running max or NaN, taps in row-major order (the CPU's rule).
void max_pool2d_forward(const Tensor& x, const Tensor& y, const Tensor& indices, const MaxPoolParams& p);
/// gx (every element written) = sum of gy over the outputs whose index
/// names the position; a gather per input element (deterministic).
void max_pool2d_backward(const Tensor& gy, const Tensor& indices, const Tensor& gx, const MaxPoolParams& p);

struct AvgPoolParams {
  PoolDims d;
  bool adaptive = false;  // windows [floor(o*in/out), ceil((o+1)*in/out)); k, s, p unused
  int64_t kH = 1, kW = 1, sH = 1, sW = 1, pH = 0, pW = 0;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

void avg_pool2d_forward(const Tensor& x, const Tensor& y, const AvgPoolParams& p);
/// gx (every element written) = sum of gy / divisor over the windows holding the position.
void avg_pool2d_backward(const Tensor& gy, const Tensor& gx, const AvgPoolParams& p);

// ==== factories =====================================================================================

/// arange into a contiguous 1-D CUDA tensor: out[i] = a + i * c (int64,
/// `integer`) or s + double(i) * st (double, no fused multiply-add), then
/// converted to out's dtype as copy_ converts int64 / double.
void arange_fill(const Tensor& out, bool integer, int64_t a, int64_t c, double s, double st);
/// linspace into a contiguous 1-D CUDA tensor: the CPU's symmetric fill in
/// double (i < half: a + step * i, else b - step * (steps - 1 - i)).
void linspace_fill(const Tensor& out, double a, double b, double step, int64_t half);

}  // namespace brisk::cuda::detail
