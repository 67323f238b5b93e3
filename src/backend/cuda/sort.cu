// CUDA kernels: sort family (placeholder: registers nothing yet).
#include "backend/cuda/cuda_common.h"
#include "core/dispatch.h"

namespace brisk::cuda::detail {
void register_sort_kernels() {}
}  // namespace brisk::cuda::detail
