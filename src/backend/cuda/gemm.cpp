// GEMM on CUDA: out[b] = beta * out[b] + alpha * a[b] @ b[b] for 3-D tensors
// a (B, m, k), b (B, k, n), out (B, m, n), as the front ends in
// src/ops/linalg.cpp hand them over (any strides, out not overlapping a or b).
//
// float32, float64, float16 and bfloat16 go to cuBLAS
// (cublasGemmStridedBatchedEx, opened at first use: Note [Lazy CUDA
// libraries] in cublas.cpp), one call per product whatever the batch.
// Integers and empty sums (k == 0) go to the tiled kernel of gemm_simple.cu.
//
// Layouts: as on the CPU (backend/cpu/blas.cpp), a matrix whose rows or
// columns are contiguous is read in place, its other stride as the leading
// dimension and a transpose flag saying which; only a matrix with neither
// (an expanded or doubly strided view) is copied to a contiguous one. cuBLAS
// is column-major: a row-major product C = op(A) op(B) is issued as the
// column-major C^T = op(B)^T op(A)^T, i.e. with the operands swapped and the
// same flags; a column-major (transposed) output is issued directly with the
// flags inverted. The batch strides are the tensors' stride(0), so expanded
// batch dims (stride 0) are read in place too.
//
// Note [TF32]
// float32 products use CUBLAS_COMPUTE_32F (full float32 math) unless
// brisk::cuda::allow_tf32() is true, in which case CUBLAS_COMPUTE_32F_FAST_TF32
// lets cuBLAS round the inputs to TF32 for the tensor cores (PyTorch's
// allow_tf32, off by default). float16/bfloat16 accumulate in float32
// (CUBLAS_COMPUTE_32F with float alpha/beta); float64 uses CUBLAS_COMPUTE_64F.
#include <climits>
#include <optional>

#include "backend/cuda/cublas.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/gemm_simple.h"
#include "brisk/ops.h"
#include "core/dispatch.h"

namespace brisk::cuda::detail {
namespace {

/// How a (rows, cols) matrix is read in place: row-major storage of
/// op(M), transposed when `trans` (its columns are contiguous), with
/// leading dimension `ld`.
struct Layout {
  bool trans;
  int64_t ld;
};

/// The in-place layout of the matrices of a 3-D tensor, if any. A dim of
/// size 1 may have any stride, so it never disqualifies a layout.
std::optional<Layout> layout_of(const Tensor& t) {
  const int64_t rows = t.size(1), cols = t.size(2), rs = t.stride(1), cs = t.stride(2);
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<int64_t>(1, cols)))
    return Layout{false, rows == 1 ? std::max<int64_t>(1, cols) : rs};
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<int64_t>(1, rows)))
    return Layout{true, cols == 1 ? std::max<int64_t>(1, rows) : cs};
  return std::nullopt;
}

cublasOperation_t op_of(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

/// The cuBLAS types of a dtype and alpha/beta in its compute precision.
struct CublasTypes {
  cudaDataType data;
  cublasComputeType_t compute;
  bool double_scalars;
};
CublasTypes cublas_types(ScalarType dt) {
  switch (dt) {
    case kFloat: return {CUDA_R_32F, allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, false};
    case kDouble: return {CUDA_R_64F, CUBLAS_COMPUTE_64F, true};
    case kHalf: return {CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
    case kBFloat16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
    default: BRISK_FAIL("matmul", "no cuBLAS GEMM for dtype ", dt);
  }
}

void cublas_gemm(const Tensor& out, const Tensor& a_in, const Tensor& b_in, const Scalar& alpha_s,
                 const Scalar& beta_s) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a_in.size(2);
  const CublasTypes ty = cublas_types(out.dtype());
  const bool beta_zero = beta_s.to_double() == 0.0;
  Tensor a = a_in, b = b_in;
  std::optional<Layout> la = layout_of(a), lb = layout_of(b), lc = layout_of(out);
  if (!la) a = a.contiguous(), la = layout_of(a);
  if (!lb) b = b.contiguous(), lb = layout_of(b);
  // An output cuBLAS cannot write in place gets a contiguous scratch (holding
  // out's values when beta reads them), copied back at the end.
  Tensor c = out;
  if (!lc) {
    c = beta_zero ? empty(out.sizes(), out.options()) : out.contiguous();
    if (c.is_same(out)) c = out.clone(kContiguous);
    lc = layout_of(c);
  }
  BRISK_ASSERT(la && lb && lc);

  // Column-major arguments (see the top of the file).
  cublasOperation_t opa, opb;
  int64_t cm, cn, lda, ldb, sa, sb;
  const void *pa, *pb;
  if (!lc->trans) {  // row-major C: C^T (n, m) = op(B)^T (n, k) @ op(A)^T (k, m)
    opa = op_of(lb->trans), opb = op_of(la->trans), cm = n, cn = m;
    pa = b.data_ptr(), lda = lb->ld, sa = b.stride(0);
    pb = a.data_ptr(), ldb = la->ld, sb = a.stride(0);
  } else {  // column-major C (m, n) = op(A) (m, k) @ op(B) (k, n)
    opa = op_of(!la->trans), opb = op_of(!lb->trans), cm = m, cn = n;
    pa = a.data_ptr(), lda = la->ld, sa = a.stride(0);
    pb = b.data_ptr(), ldb = lb->ld, sb = b.stride(0);
  }
  const int64_t ldc = lc->ld, sc = c.stride(0);
  union {
    float f;
    double d;
  } alpha, beta;
  if (ty.double_scalars) {
    alpha.d = alpha_s.to_double(), beta.d = beta_s.to_double();
  } else {
    alpha.f = float(alpha_s.to_double()), beta.f = float(beta_s.to_double());
  }

  const CublasApi& api = cublas_api("matmul");
  cublasHandle_t h = cublas_handle("matmul");
  const bool fits32 = cm <= INT_MAX && cn <= INT_MAX && k <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX &&
                      ldc <= INT_MAX && batch <= INT_MAX;
  cublasStatus_t st;
  if (fits32) {
    st = api.gemm_strided_batched_ex(h, opa, opb, int(cm), int(cn), int(k), &alpha, pa, ty.data, int(lda), sa, pb,
                                     ty.data, int(ldb), sb, &beta, c.data_ptr(), ty.data, int(ldc), sc, int(batch),
                                     ty.compute, CUBLAS_GEMM_DEFAULT);
  } else {
    st = api.gemm_strided_batched_ex_64(h, opa, opb, cm, cn, k, &alpha, pa, ty.data, lda, sa, pb, ty.data, ldb, sb,
                                        &beta, c.data_ptr(), ty.data, ldc, sc, batch, ty.compute,
                                        CUBLAS_GEMM_DEFAULT);
  }
  cublas_check(st, "matmul", fits32 ? "cublasGemmStridedBatchedEx" : "cublasGemmStridedBatchedEx_64");
  if (!c.is_same(out)) Tensor(out).copy_(c);
}

// out: (B, m, n); a: (B, m, k); b: (B, k, n). The front end has checked
// shapes and dtypes (same dtype, not bool, same device).
void gemm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha_in,
                 const Scalar& beta_in) {
  BRISK_ASSERT(out.dim() == 3 && a.dim() == 3 && b.dim() == 3);
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device());
  // Integer products truncate float scalars (PyTorch: addmm(int, beta=0.5) uses beta = 0).
  const bool is_float = is_floating_point(out.dtype());
  const Scalar alpha = is_float ? alpha_in : Scalar(alpha_in.to<int64_t>());
  const Scalar beta = is_float ? beta_in : Scalar(beta_in.to<int64_t>());
  if (!is_float || a.size(2) == 0) return gemm_simple(out, a, b, alpha, beta);
  cublas_gemm(out, a, b, alpha, beta);
}

}  // namespace

void register_gemm_kernels() { register_kernel<OpId::gemm>(kCUDA, gemm_kernel); }

}  // namespace brisk::cuda::detail
