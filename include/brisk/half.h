// 16-bit floating point storage types. Arithmetic happens in float.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__CUDACC__)
#define BRISK_HOST_DEVICE __host__ __device__
#else
#define BRISK_HOST_DEVICE
#endif

namespace brisk {

namespace detail {
BRISK_HOST_DEVICE inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
BRISK_HOST_DEVICE inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

/// IEEE binary16. Conversions round to nearest even.
struct Half {
  uint16_t x = 0;
  Half() = default;
  struct from_bits_t {};
  BRISK_HOST_DEVICE constexpr Half(uint16_t bits, from_bits_t) : x(bits) {}
  BRISK_HOST_DEVICE Half(float f) : x(from_float(f)) {}
  BRISK_HOST_DEVICE operator float() const { return to_float(x); }

  BRISK_HOST_DEVICE static float to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return detail::bits_f32(sign | 0x7f800000u | (man << 13));  // inf/nan
    if (exp == 0) {
      if (man == 0) return detail::bits_f32(sign);
      // subnormal: value = man * 2^-24
      float v = float(man) * 5.9604644775390625e-08f;
      return sign ? -v : v;
    }
    return detail::bits_f32(sign | ((exp + 112) << 23) | (man << 13));
  }
  BRISK_HOST_DEVICE static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u >= 0x7f800000u) return sign | (u > 0x7f800000u ? 0x7e00u : 0x7c00u);  // nan / inf
    if (u >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
    if (u < 0x38800000u) {                        // result is subnormal or zero
      // add 0.5 (magic) so the FPU does the rounding of the shifted mantissa
      float a = detail::bits_f32(u) + 0.5f;
      return sign | uint16_t(detail::f32_bits(a) - detail::f32_bits(0.5f));
    }
    const uint32_t odd = (u >> 13) & 1u;
    u += 0xc8000fffu + odd;  // rebias exponent (-112 << 23) and round to nearest even
    return sign | uint16_t(u >> 13);
  }
};

/// bfloat16: the upper half of a float32. Conversions round to nearest even.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  struct from_bits_t {};
  BRISK_HOST_DEVICE constexpr BFloat16(uint16_t bits, from_bits_t) : x(bits) {}
  BRISK_HOST_DEVICE BFloat16(float f) : x(from_float(f)) {}
  BRISK_HOST_DEVICE operator float() const { return detail::bits_f32(uint32_t(x) << 16); }
  BRISK_HOST_DEVICE static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // quiet nan
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

}  // namespace brisk

namespace std {
template <>
class numeric_limits<brisk::Half> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static brisk::Half lowest() { return {0xfbff, brisk::Half::from_bits_t{}}; }
  static brisk::Half max() { return {0x7bff, brisk::Half::from_bits_t{}}; }
  static brisk::Half min() { return {0x0400, brisk::Half::from_bits_t{}}; }
  static brisk::Half epsilon() { return {0x1400, brisk::Half::from_bits_t{}}; }
  static brisk::Half infinity() { return {0x7c00, brisk::Half::from_bits_t{}}; }
  static brisk::Half quiet_NaN() { return {0x7e00, brisk::Half::from_bits_t{}}; }
};
template <>
class numeric_limits<brisk::BFloat16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static brisk::BFloat16 lowest() { return {0xff7f, brisk::BFloat16::from_bits_t{}}; }
  static brisk::BFloat16 max() { return {0x7f7f, brisk::BFloat16::from_bits_t{}}; }
  static brisk::BFloat16 min() { return {0x0080, brisk::BFloat16::from_bits_t{}}; }
  static brisk::BFloat16 epsilon() { return {0x3c00, brisk::BFloat16::from_bits_t{}}; }
  static brisk::BFloat16 infinity() { return {0x7f80, brisk::BFloat16::from_bits_t{}}; }
  static brisk::BFloat16 quiet_NaN() { return {0x7fc0, brisk::BFloat16::from_bits_t{}}; }
};
}  // namespace std
