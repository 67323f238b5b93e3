// What brisk's oneDNN users share: the CPU engine and a stream per thread
// (the bfloat16 GEMM in blas.cpp, the convolutions in backend/cpu/conv_onednn.cpp),
// and the GEMM path counter tests read.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#ifdef BRISK_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace brisk::cpu {

#ifdef BRISK_HAVE_DNNL
/// Never destroyed: cached primitives refer to it.
dnnl::engine& onednn_engine();
/// One stream per thread on onednn_engine().
dnnl::stream& onednn_stream();
#endif

/// Hash of a primitive cache key: FNV-1a over its int64 fields.
struct PrimitiveKeyHash {
  template <size_t N>
  size_t operator()(const std::array<int64_t, N>& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

/// How bfloat16 GEMMs ran (Note [bfloat16 GEMM on oneDNN] in blas.cpp).
struct GemmStats {
  std::atomic<uint64_t> bf16_onednn{0};  ///< calls run by a oneDNN bf16 matmul primitive
};
GemmStats& gemm_stats();

}  // namespace brisk::cpu
