// The CUDA GEMM paths that do not go to cuBLAS (see gemm.cpp): integer
// products and empty sums (k == 0), in a tiled kernel over any strides.
#pragma once
#include "brisk/scalar.h"
#include "brisk/tensor.h"

namespace brisk::cuda::detail {

/// out (B, m, n) = beta * out + alpha * a (B, m, k) @ b (B, k, n) on the
/// current device and stream. Integers (uint8, int32, int64) wrap as on the
/// CPU (Note [Integer GEMM] in backend/cpu/blas.cpp); for floating dtypes
/// only k == 0 is expected here (out = beta * out). beta == 0 never reads out.
void gemm_simple(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta);

}  // namespace brisk::cuda::detail
