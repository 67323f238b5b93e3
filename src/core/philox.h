// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11): a counter-based generator. Output block = f(counter, key), so any
// element of a random fill can be computed on its own, by any thread, on host
// or device, from (seed, offset, element index).
//
// Plain functions on uint32 arrays so the same code compiles under nvcc.
#pragma once
#include <cmath>
#include <cstdint>

#include "brisk/half.h"

namespace brisk {
namespace philox {

// Note [Random counter layout]
// The default generator hands out 128-bit counter blocks: a random op that
// needs B blocks gets the range [offset, offset + B) and the generator's
// offset moves past it (see core/generator.h). Block b is
//   philox4x32_10(counter = {lo(b), hi(b), 0, 0}, key = {lo(seed), hi(seed)}),
// four uint32 draws. Fills map element i to draws in a fixed way:
//   - "narrow" ops (one 32-bit draw per element): block offset + i/4, lane i%4;
//   - "wide" ops (one 64-bit draw per element, e.g. float64 uniform):
//     block offset + i/2, lanes 2*(i%2) (low word) and 2*(i%2)+1 (high word).
// Box-Muller normals consume draws in pairs within one block, so they follow
// the same mapping. The mapping never depends on the number of threads, so a
// CPU fill with any thread count and a future GPU kernel given the same
// (seed, offset) produce the same stream.

constexpr uint32_t kM0 = 0xD2511F53u;
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kW1 = 0xBB67AE85u;  // sqrt(3) - 1

/// out = Philox4x32-10(ctr, key). Matches Random123's known-answer vectors.
BRISK_HOST_DEVICE inline void philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
  uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
  uint32_t k0 = key_in[0], k1 = key_in[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/// The four draws of counter block `block` under `seed` (see Note [Random counter layout]).
BRISK_HOST_DEVICE inline void block(uint64_t seed, uint64_t block_index, uint32_t out[4]) {
  const uint32_t ctr[4] = {static_cast<uint32_t>(block_index), static_cast<uint32_t>(block_index >> 32), 0u, 0u};
  const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  philox4x32_10(ctr, key, out);
}

/// Elements one block serves: 4 with 32-bit draws, 2 with 64-bit draws.
BRISK_HOST_DEVICE constexpr int64_t elems_per_block(bool wide) { return wide ? 2 : 4; }
/// Blocks a fill of n elements reserves.
BRISK_HOST_DEVICE constexpr uint64_t blocks_for(int64_t n, bool wide) {
  return static_cast<uint64_t>((n + elems_per_block(wide) - 1) / elems_per_block(wide));
}

/// Draw i of a stream starting at block `offset` (narrow mapping): 32 bits.
BRISK_HOST_DEVICE inline uint32_t draw32(uint64_t seed, uint64_t offset, uint64_t i) {
  uint32_t r[4];
  block(seed, offset + i / 4, r);
  return r[i % 4];
}
/// Draw i of a stream starting at block `offset` (wide mapping): 64 bits.
BRISK_HOST_DEVICE inline uint64_t draw64(uint64_t seed, uint64_t offset, uint64_t i) {
  uint32_t r[4];
  block(seed, offset + i / 2, r);
  const int lane = static_cast<int>(i % 2) * 2;
  return static_cast<uint64_t>(r[lane]) | (static_cast<uint64_t>(r[lane + 1]) << 32);
}

/// Uniform in [0, 1) with `bits` random mantissa bits (24 for float, 53 for
/// double, 11 for half, 8 for bfloat16): k * 2^-bits, k < 2^bits, exact in the
/// target type, so it never rounds up to 1.
BRISK_HOST_DEVICE inline float to_unit_float(uint32_t x, int bits) {
  return static_cast<float>(x >> (32 - bits)) * (1.0f / static_cast<float>(1u << bits));
}
BRISK_HOST_DEVICE inline double to_unit_double(uint64_t x) {
  return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

/// Box-Muller from two 32-bit draws, in float: a pair of independent N(0, 1)
/// values. u1 = (top 24 bits + 1) 2^-24 lies in (0, 1], so log(u1) is finite
/// (|z| <= 5.8, as PyTorch's float path).
BRISK_HOST_DEVICE inline void box_muller32(uint32_t a, uint32_t b, float& z0, float& z1) {
  constexpr float k2pow24 = 1.0f / 16777216.0f;
  const float u1 = static_cast<float>((a >> 8) + 1u) * k2pow24;
  const float theta = 6.28318530717958647692f * (static_cast<float>(b >> 8) * k2pow24);
  const float r = std::sqrt(-2.0f * std::log(u1));
  z0 = r * std::cos(theta);
  z1 = r * std::sin(theta);
}
/// Box-Muller from two 64-bit draws (float64 normals, |z| <= 8.6).
BRISK_HOST_DEVICE inline void box_muller64(uint64_t a, uint64_t b, double& z0, double& z1) {
  const double u1 = 1.0 - to_unit_double(a);  // (0, 1]
  const double theta = 6.283185307179586476925 * to_unit_double(b);
  const double r = std::sqrt(-2.0 * std::log(u1));
  z0 = r * std::cos(theta);
  z1 = r * std::sin(theta);
}

}  // namespace philox
}  // namespace brisk
