// Where brisk finds cuBLAS, and whether it could (no CUDA header: host tests
// include this). The function table itself is in cublas.h.
//
// The entry points are declared weak so that a test links against a build
// without the CUDA backend, where they do not exist (their address is null).
#pragma once
#include <string>
#include <vector>

#include "backend/cuda/dl_library.h"

namespace brisk::cuda::detail {

/// The outcome of opening cuBLAS (Note [Lazy CUDA libraries] in cublas.cpp).
using CublasLibrary = DlLibrary;

/// Opens cuBLAS on the first call (once per process, thread-safe) and
/// resolves the functions brisk calls. Never throws and needs no GPU; the
/// library stays mapped until the process ends.
[[gnu::weak]] const CublasLibrary& cublas_library();

/// The names dlopen is given, in order: the soname (found through
/// LD_LIBRARY_PATH, the ld.so cache and the default paths), then
/// $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64.
[[gnu::weak]] std::vector<std::string> cublas_search_paths();

}  // namespace brisk::cuda::detail
