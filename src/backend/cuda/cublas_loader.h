// Where brisk finds cuBLAS, and whether it could (no CUDA header: host tests
// include this). The function table itself is in cublas.h.
//
// The entry points are declared weak so that a test links against a build
// without the CUDA backend, where they do not exist (their address is null).
#pragma once
#include <string>
#include <vector>

namespace brisk::cuda::detail {

/// The outcome of opening cuBLAS (Note [Lazy CUDA libraries] in cublas.cpp).
struct CublasLibrary {
  bool loaded = false;
  std::string path;                  ///< what dlopen accepted: "libcublas.so.13" or a full path
  std::string error;                 ///< why not, when !loaded (dlerror() text, missing symbols)
  std::vector<std::string> symbols;  ///< the functions resolved, when loaded
};

/// Opens cuBLAS on the first call (once per process, thread-safe) and
/// resolves the functions brisk calls. Never throws and needs no GPU; the
/// library stays mapped until the process ends.
[[gnu::weak]] const CublasLibrary& cublas_library();

/// The names dlopen is given, in order: the soname (found through
/// LD_LIBRARY_PATH, the ld.so cache and the default paths), then
/// $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64.
[[gnu::weak]] std::vector<std::string> cublas_search_paths();

}  // namespace brisk::cuda::detail
