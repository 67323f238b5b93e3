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

// The conversions are inlined into every kernel loop so that loops over
// 16-bit arrays vectorize (GCC kept Half::from_float out of line, one call
// per element).
#if defined(__CUDACC__)
#define BRISK_CONVERT_INLINE __forceinline__
#elif defined(__GNUC__)
#define BRISK_CONVERT_INLINE [[gnu::always_inline]] inline
#else
#define BRISK_CONVERT_INLINE inline
#endif

namespace brisk {

namespace detail {
BRISK_CONVERT_INLINE BRISK_HOST_DEVICE uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
BRISK_CONVERT_INLINE BRISK_HOST_DEVICE float bits_f32(uint32_t u) {
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
  BRISK_CONVERT_INLINE BRISK_HOST_DEVICE Half(float f) : x(from_float(f)) {}
  BRISK_CONVERT_INLINE BRISK_HOST_DEVICE operator float() const { return to_float(x); }

  // Note [Branchless half conversions]
  // Both directions are straight-line integer and float operations (the
  // special cases become selects), so loops over Half arrays vectorize:
  // converting 1M halves to float went from 0.57 to several elements per ns
  // on one core. The float arithmetic is exact except for the one addition
  // that rounds the mantissa, which the FPU does to nearest even. Results
  // are bit-identical to the IEEE conversions for every finite and infinite
  // value (tested exhaustively); a NaN keeps its sign and comes back quiet.
  BRISK_CONVERT_INLINE BRISK_HOST_DEVICE static float to_float(uint16_t h) {
    const uint32_t w = uint32_t(h) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t shifted = w << 1;  // exponent in the top 5 bits, mantissa below, sign dropped
    // Normal, infinite and NaN inputs: put the fields where float keeps
    // them, rebias the exponent by 224 (so 31 lands on 255) and scale by
    // 2^-112 (224 - 112 = 112 = 127 - 15).
    const float normal = detail::bits_f32((shifted >> 4) + (224u << 23)) * 0x1.0p-112f;
    // Subnormal inputs (exponent 0): the mantissa m as 0.5 + m * 2^-24 on
    // the float exponent of 0.5, minus 0.5.
    const float subnormal = detail::bits_f32((shifted >> 17) | (126u << 23)) - 0.5f;
    const uint32_t is_subnormal = 0u - uint32_t(shifted < (1u << 27));  // all ones or zero
    return detail::bits_f32(sign | (detail::f32_bits(subnormal) & is_subnormal) |
                            (detail::f32_bits(normal) & ~is_subnormal));
  }
  BRISK_CONVERT_INLINE BRISK_HOST_DEVICE static uint16_t from_float(float f) {
    const uint32_t w = detail::f32_bits(f);
    const uint32_t shifted = w << 1;  // sign dropped
    const uint32_t sign = w & 0x80000000u;
    // |f| * 2^112 * 2^-110: overflows to infinity exactly when |f| rounds to
    // half's infinity, and keeps every other value exact.
    float base = (detail::bits_f32(w & 0x7fffffffu) * 0x1.0p+112f) * 0x1.0p-110f;
    // Adding 2^(e + 15), e the exponent of f (at least -14, half's smallest
    // normal exponent), leaves exactly half's 10 mantissa bits (fewer for
    // subnormals) in the sum, rounded to nearest even by the FPU.
    const uint32_t exponent = shifted & 0xff000000u;
    const uint32_t bias = exponent > 0x71000000u ? exponent : 0x71000000u;
    base = detail::bits_f32((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = detail::f32_bits(base);
    const uint32_t magnitude = ((bits >> 13) & 0x7c00u) + (bits & 0x0fffu);
    const uint32_t nan = 0u - uint32_t(shifted > 0xff000000u);  // all ones for a NaN (masks vectorize, ?: did not)
    return uint16_t((sign >> 16) | (magnitude & ~nan) | (0x7e00u & nan));
  }
};

/// bfloat16: the upper half of a float32. Conversions round to nearest even.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  struct from_bits_t {};
  BRISK_HOST_DEVICE constexpr BFloat16(uint16_t bits, from_bits_t) : x(bits) {}
  BRISK_CONVERT_INLINE BRISK_HOST_DEVICE BFloat16(float f) : x(from_float(f)) {}
  BRISK_CONVERT_INLINE BRISK_HOST_DEVICE operator float() const { return detail::bits_f32(uint32_t(x) << 16); }
  BRISK_CONVERT_INLINE BRISK_HOST_DEVICE static uint16_t from_float(float f) {
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
