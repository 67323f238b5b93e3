// The host/device-neutral half of the CUDA elementwise engine (loops.cuh):
// fast 32-bit division, the offset calculator that maps a linear element
// index to per-operand byte offsets, and the launch plan (which loop a
// TensorIter takes). Plain C++: nvcc compiles it into the kernels and the host
// compiler into tests/cuda/test_cuda_loops.cpp, which checks it on the CPU.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "brisk/half.h"  // BRISK_HOST_DEVICE
#include "core/tensor_iter.h"

#if defined(__CUDACC__)
#define BRISK_UNROLL _Pragma("unroll")
#else
#define BRISK_UNROLL
#endif

namespace brisk::cuda::detail {

/// n / d for 32-bit n < 2^31 with one multiply-high, an add and a shift
/// (Granlund-Montgomery): magic = floor(2^32 (2^s - d) / d) + 1 with
/// 2^s >= d. The add cannot overflow because n < 2^31.
struct IntDivider32 {
  uint32_t divisor = 1;
  uint32_t magic = 1;
  uint32_t shift = 0;

  IntDivider32() = default;
  explicit IntDivider32(uint32_t d) : divisor(d) {
    shift = 0;
    while (shift < 32 && (uint64_t(1) << shift) < d) ++shift;
    magic = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }
  BRISK_HOST_DEVICE uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t t = __umulhi(n, magic);
#else
    const uint32_t t = uint32_t((uint64_t(n) * magic) >> 32);
#endif
    return (t + n) >> shift;
  }
};

/// Plain 64-bit division (the 64-bit index path is for tensors of 2^31
/// elements or bytes and more, where the loads dominate anyway).
struct IntDivider64 {
  uint64_t divisor = 1;
  IntDivider64() = default;
  explicit IntDivider64(uint64_t d) : divisor(d) {}
  BRISK_HOST_DEVICE uint64_t div(uint64_t n) const { return n / divisor; }
};

template <int N, class T>
struct OffsetArray {
  T v[N];
};

// Note [CUDA offset calculator]
// A TensorIter after build() holds dims innermost first, in bytes, coalesced.
// Linear index i (the output's logical order, dim 0 fastest) splits into one
// index per dim by repeated division; dim d contributes idx_d * stride[k][d]
// to operand k. The outermost dim takes what is left without a division, so
// a 1-dim (contiguous or uniformly strided) iterator costs one multiply per
// operand. The struct travels to the kernel by value (16 dims x 4 operands:
// 640 bytes in 64-bit mode, 448 in 32-bit mode).
template <int NOPS, bool kIndex32>
struct OffsetCalculator {
  using index_t = std::conditional_t<kIndex32, uint32_t, uint64_t>;
  using offset_t = std::conditional_t<kIndex32, int32_t, int64_t>;
  using divider_t = std::conditional_t<kIndex32, IntDivider32, IntDivider64>;
  static constexpr int kMaxDims = TensorIter::kMaxDims;

  int ndim = 0;
  divider_t sizes[kMaxDims];
  offset_t strides[kMaxDims][NOPS];

  OffsetCalculator() = default;
  /// Host side. The caller checked (plan_launch) that 32-bit offsets suffice
  /// when kIndex32.
  explicit OffsetCalculator(const TensorIter& it) {
    ndim = it.ndim;
    for (int d = 0; d < kMaxDims; ++d) {
      const bool live = d < it.ndim;
      sizes[d] = divider_t(live ? static_cast<index_t>(it.shape[d]) : 1);
      for (int k = 0; k < NOPS; ++k) strides[d][k] = live && k < it.noperands ? static_cast<offset_t>(it.strides[k][d]) : 0;
    }
  }

  BRISK_HOST_DEVICE OffsetArray<NOPS, offset_t> get(index_t linear) const {
    OffsetArray<NOPS, offset_t> off;
    BRISK_UNROLL
    for (int k = 0; k < NOPS; ++k) off.v[k] = 0;
    BRISK_UNROLL
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == ndim) break;
      index_t idx = linear;
      if (d + 1 < ndim) {
        const index_t q = sizes[d].div(linear);
        idx = linear - q * sizes[d].divisor;
        linear = q;
      }
      BRISK_UNROLL
      for (int k = 0; k < NOPS; ++k) off.v[k] += static_cast<offset_t>(idx) * strides[d][k];
    }
    return off;
  }
};

// ---- launch plan ---------------------------------------------------------------
/// Elements per thread and iteration on the vectorised contiguous loop.
constexpr int kVecElems = 4;

/// The device an iterator's kernel runs on: its result's, or the current one
/// when it has no result tensor (a node that compile's executable replays
/// through its slot's eager kernel, src/compile/executor.cpp).
inline Device iter_device(const TensorIter& it) { return it.result.defined() ? it.result.device() : Device(kCUDA); }

/// Whether input k (k >= 1) is read on the host and passed by value: a Scalar
/// (it points into scalar_buf) or a 0-dim CPU tensor mixed with device
/// tensors (TensorIter allows it, as PyTorch does).
inline bool is_host_operand(const TensorIter& it, int k) {
  if (k == 0) return false;
  if (it.data[k] == it.scalar_buf[k]) return true;
  return it.operands[k].defined() && it.operands[k].is_cpu();
}

/// The bits of a host operand's single value (element_size bytes, the rest 0).
inline uint64_t host_operand_bits(const TensorIter& it, int k) {
  uint64_t bits = 0;
  std::memcpy(&bits, it.data[k], element_size(it.dtypes[k]));
  return bits;
}

struct LaunchPlan {
  /// One dim, every operand dense (stride = its element size) or, for
  /// inputs, stride 0: the flat-index loop.
  bool contiguous = false;
  /// contiguous, and every dense operand's pointer aligned to kVecElems
  /// elements: 4-element vector loads and stores.
  bool vectorize = false;
  /// numel and every operand's largest byte offset fit in int32.
  bool index32 = false;
};

/// Chooses the loop for a built TensorIter with numel > 0. `elem_size[k]` is
/// the size in bytes the kernel reads operand k with (the element size of
/// it.dtypes[k]); host operands never count (they are passed by value).
inline LaunchPlan plan_launch(const TensorIter& it, const int64_t* elem_size) {
  LaunchPlan p;
  constexpr int64_t kMax32 = INT32_MAX;
  p.index32 = it.numel <= kMax32;
  for (int k = 0; k < it.noperands && p.index32; ++k) {
    if (is_host_operand(it, k)) continue;
    int64_t extent = 0;
    for (int d = 0; d < it.ndim; ++d) {
      const int64_t s = it.strides[k][d] < 0 ? -it.strides[k][d] : it.strides[k][d];
      if (s > kMax32) {
        p.index32 = false;
        break;
      }
      extent += (it.shape[d] - 1) * s;
      if (extent > kMax32) {
        p.index32 = false;
        break;
      }
    }
  }
  p.contiguous = it.ndim == 1;
  for (int k = 0; k < it.noperands && p.contiguous; ++k) {
    const int64_t s = it.strides[k][0];
    const bool ok = s == elem_size[k] || (k > 0 && (s == 0 || is_host_operand(it, k)));
    p.contiguous = ok;
  }
  if (p.contiguous) {
    p.vectorize = true;
    for (int k = 0; k < it.noperands; ++k) {
      if (is_host_operand(it, k) || it.strides[k][0] == 0) continue;
      const auto addr = reinterpret_cast<uintptr_t>(it.data[k]);
      if (addr % static_cast<uintptr_t>(elem_size[k] * kVecElems) != 0) p.vectorize = false;
    }
  }
  return p;
}

}  // namespace brisk::cuda::detail
