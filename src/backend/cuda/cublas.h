// cuBLAS for the CUDA backend: the function table resolved at first use
// (Note [Lazy CUDA libraries] in cublas.cpp) and the per-(device, thread)
// handle bound to the current stream with its workspace.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "backend/cuda/cublas_loader.h"

namespace brisk::cuda::detail {

/// The cuBLAS functions brisk calls, resolved with dlsym. The types come
/// from the cuBLAS headers; cublasGemmStridedBatchedEx is overloaded in C++
/// (a deprecated cudaDataType variant), so its type is spelled out.
struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasGetStatusString) status_string;
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                            const void*, const void*, cudaDataType, int, long long int,
                                            const void*, cudaDataType, int, long long int, const void*, void*,
                                            cudaDataType, int, long long int, int, cublasComputeType_t,
                                            cublasGemmAlgo_t);
  decltype(&cublasGemmStridedBatchedEx_64) gemm_strided_batched_ex_64;
};

/// The table; throws brisk::Error "[op] cuBLAS could not be loaded: <why>"
/// when the library or one of the functions is missing.
const CublasApi& cublas_api(const char* op);

/// This thread's handle for the current device, bound to the current stream
/// with that stream's workspace. Created on first use; a thread's handles go
/// back to a per-device pool when it exits.
cublasHandle_t cublas_handle(const char* op);

/// Throws "[op] cuBLAS error: <status> in <what>" unless s is success.
void cublas_check(cublasStatus_t s, const char* op, const char* what);

}  // namespace brisk::cuda::detail
