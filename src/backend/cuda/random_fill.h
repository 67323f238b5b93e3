// The element values of the random fills, shared by the CUDA kernels
// (random.cu) and the host: given the four draws of one counter block, the
// values of the elements that block serves. Plain C++ with
// BRISK_HOST_DEVICE functions and no CUDA header, so the host test
// (tests/cuda/test_cuda_random_streams.cpp) checks it against the CPU
// kernels' output without a GPU.
//
// Note [Random fills on the GPU]
// The mapping is Note [Random counter layout] (core/philox.h): element i of a
// fill at (seed, offset) takes draw i % 4 of block offset + i / 4 (narrow,
// 32-bit draws), or words 2 (i % 2), 2 (i % 2) + 1 of block offset + i / 2
// (wide, 64-bit draws: float64 uniform/normal, randint over 2^32 or more
// values). The GPU kernel runs one thread per block, so every element sees
// exactly the draws the CPU kernel gives it, and Box-Muller pairs (elements
// 2m, 2m + 1) never straddle two blocks. The arithmetic then repeats the CPU
// kernel's, with two points to match:
//  - the CPU kernels' `lo + u * range` and `mean + sd * z` are contracted to
//    one fused multiply-add by GCC on the FMA-capable variants (avx2, avx512,
//    what any GPU host runs); fma() here rounds the same way (the base
//    variant, without FMA, can differ in the last bit for ranges other than
//    [0, 1) and N(0, 1));
//  - normals call log/sin/cos (float for all dtypes but float64): CUDA's
//    device functions and glibc's differ by an ulp or two on some inputs, so
//    GPU normals match the CPU to a few ulps, not bit for bit. Uniform,
//    bernoulli and randint are exact.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "brisk/dtype.h"
#include "core/philox.h"

namespace brisk::cuda::detail {

enum class RandomOp : int { uniform, normal, bernoulli, randint };

/// Everything the fills read, converted on the host as the CPU kernels do.
struct RandomParams {
  int op = 0;         ///< RandomOp
  bool wide = false;  ///< 64-bit draws (KernelArgs::mode == 1)
  int64_t n = 0;      ///< elements
  double from = 0, to = 0;      ///< uniform: [from, to)
  double mean = 0, sd = 1;      ///< normal
  double threshold = 0;         ///< bernoulli: p * 2^32
  uint64_t low = 0, range = 1;  ///< randint: [low, low + range)
};

/// Uniform mantissa bits per dtype (exactly representable values in [0, 1)).
template <class T>
BRISK_HOST_DEVICE constexpr int random_mantissa_bits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else if constexpr (std::is_same_v<T, float>) return 24;
  else return 53;
}

BRISK_HOST_DEVICE inline uint64_t random_join64(uint32_t lo, uint32_t hi) {
  return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(hi) << 32);
}

BRISK_HOST_DEVICE inline float random_fma(float a, float b, float c) { return fmaf(a, b, c); }
BRISK_HOST_DEVICE inline double random_fma(double a, double b, double c) { return fma(a, b, c); }

/// Elements one block serves (4 narrow, 2 wide).
BRISK_HOST_DEVICE inline int random_per_block(const RandomParams& p) { return p.wide ? 2 : 4; }

/// Writes the values of the elements of block b (b counted from the fill's
/// first block) from its draws r[0..3]: out[j] for element b * per + j,
/// j < count (count < per only for the last block). The loops run a fixed
/// four (two) times with a guard, so that on the device r[] and out[] stay
/// in registers (constant indices once unrolled).
template <class T>
BRISK_HOST_DEVICE inline void random_fill_block(const RandomParams& p, const uint32_t (&r)[4], T* out, int count) {
  const auto op = static_cast<RandomOp>(p.op);
  if (op == RandomOp::bernoulli) {
    for (int j = 0; j < 4; ++j)
      if (j < count) out[j] = static_cast<double>(r[j]) < p.threshold ? T(1) : T(0);
    return;
  }
  if (op == RandomOp::randint) {
    for (int j = 0; j < 4; ++j) {
      if (j >= count) break;
      const uint64_t draw = p.wide ? random_join64(r[(2 * j) & 3], r[(2 * j + 1) & 3])
                                   : static_cast<uint64_t>(r[j] % static_cast<uint32_t>(p.range));
      const int64_t v = static_cast<int64_t>(p.low + (p.wide ? draw % p.range : draw));
      if constexpr (std::is_same_v<T, bool>) out[j] = v != 0;
      else if constexpr (std::is_floating_point_v<opmath_t<T>>)
        out[j] = static_cast<T>(static_cast<opmath_t<T>>(v));
      else out[j] = static_cast<T>(v);
    }
    return;
  }
  if constexpr (std::is_floating_point_v<opmath_t<T>>) {
    using M = opmath_t<T>;
    if (op == RandomOp::uniform) {
      const M lo = static_cast<M>(p.from), range = static_cast<M>(p.to - p.from), hi = static_cast<M>(p.to);
      for (int j = 0; j < 4; ++j) {
        if (j >= count) break;
        M u;
        if constexpr (std::is_same_v<T, double>)
          u = philox::to_unit_double(random_join64(r[(2 * j) & 3], r[(2 * j + 1) & 3]));
        else
          u = philox::to_unit_float(r[j], random_mantissa_bits<T>());
        T v = static_cast<T>(random_fma(u, range, lo));
        if (!(static_cast<M>(v) < hi)) v = static_cast<T>(lo);
        out[j] = v;
      }
    } else {  // normal: elements (0, 1) and (2, 3) of a narrow block, (0, 1) of a wide one
      const M mean = static_cast<M>(p.mean), sd = static_cast<M>(p.sd);
      for (int j = 0; j < 4; j += 2) {
        if (j >= count) break;
        M z0, z1;
        if constexpr (std::is_same_v<T, double>)
          philox::box_muller64(random_join64(r[0], r[1]), random_join64(r[2], r[3]), z0, z1);
        else
          philox::box_muller32(r[j], r[j + 1], z0, z1);
        out[j] = static_cast<T>(random_fma(sd, z0, mean));
        if (j + 1 < count) out[j + 1] = static_cast<T>(random_fma(sd, z1, mean));
      }
    }
  }
}

}  // namespace brisk::cuda::detail
