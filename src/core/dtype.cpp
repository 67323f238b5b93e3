#include <cmath>
#include <cstdint>
#include <ostream>

#include "brisk/ops.h"
#include "brisk/scalar.h"
#include "brisk/shape.h"
#include "core/tensor_create.h"

namespace brisk {

std::string_view dtype_name(ScalarType t) {
  switch (t) {
    case kBool: return "bool";
    case kUInt8: return "uint8";
    case kInt8: return "int8";
    case kInt16: return "int16";
    case kInt32: return "int32";
    case kInt64: return "int64";
    case kHalf: return "float16";
    case kBFloat16: return "bfloat16";
    case kFloat: return "float32";
    case kDouble: return "float64";
    default: return "undefined";
  }
}
std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << dtype_name(t); }

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == ScalarType::Undefined || b == ScalarType::Undefined) return ScalarType::Undefined;
  // Table in the enum order b1 u1 i1 i2 i4 i8 f2 bf f4 f8 (torch.promote_types
  // of PyTorch 2.x; uint8 with int8 is int16, the smallest type holding both).
  constexpr ScalarType b1 = kBool, u1 = kUInt8, i1 = kInt8, i2 = kInt16, i4 = kInt32, i8 = kInt64, f2 = kHalf,
                       bf = kBFloat16, f4 = kFloat, f8 = kDouble;
  static constexpr ScalarType table[kNumDtypes][kNumDtypes] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

bool can_cast(ScalarType from, ScalarType to) {
  // Like torch.can_cast: no float -> integral, no non-bool -> bool.
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

namespace {
ScalarType g_default_dtype = kFloat;
}
ScalarType default_dtype() { return g_default_dtype; }
void set_default_dtype(ScalarType t) {
  BRISK_CHECK(t == kFloat || t == kDouble || t == kHalf || t == kBFloat16, "set_default_dtype",
              "only floating point dtypes can be the default, got ", t);
  g_default_dtype = t;
}

namespace detail {
// Note [Scalars out of range]
// PyTorch converts some Scalar arguments to the tensor's dtype with a
// checked conversion that raises on overflow (fill_, full, masked_fill,
// where, index_put_ with a value, clamp's bounds on floating dtypes, pow's
// exponent, add's alpha, pad's value); arithmetic operands (x + 300 on
// uint8, comparisons, a scalar base of pow) wrap silently instead. The
// rules, as PyTorch 2.x applies them:
// - an integer to uint8: -255..255 (negative values wrap: -1 -> 255); to
//   int8, int16, int32: its range; to a floating dtype: at most the dtype's largest
//   finite value in magnitude;
// - a float to an integral dtype: lowest <= v < largest + 1 (it truncates
//   toward zero: 255.9 -> 255 fits uint8, -0.5 does not); nan and inf never
//   fit; to a floating dtype: finite values up to the largest in magnitude
//   (inf and nan convert);
// - bool and float64 take anything (bool: nonzero is true).
// (PyTorch 1.13 also refused floats past the largest integer: 255.5 on uint8.)
void check_scalar_fits(const char* op, const Scalar& v, ScalarType t) {
  if (t == kBool || t == kDouble || v.is_bool()) return;
  const double lo = t == kUInt8 ? 0.0 : t == kInt8 ? -128.0 : t == kInt16 ? -32768.0 : t == kInt32 ? -2147483648.0
                    : t == kInt64 ? -9223372036854775808.0 : 0.0;
  const double hi = t == kUInt8 ? 255.0 : t == kInt8 ? 127.0 : t == kInt16 ? 32767.0 : t == kInt32 ? 2147483647.0
                    : t == kInt64 ? 9223372036854775807.0 : t == kHalf ? 65504.0
                    : t == kBFloat16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
  bool ok = true;
  if (v.is_floating_point()) {
    const double d = v.to_double();
    if (is_floating_point(t))
      ok = !std::isfinite(d) || std::abs(d) <= hi;
    else
      ok = d >= lo && d < hi + 1.0;  // false for nan
  } else {
    const int64_t i = v.to_long();
    if (t == kUInt8)
      ok = i >= -255 && i <= 255;
    else if (t == kInt8 || t == kInt16 || t == kInt32)
      ok = i >= static_cast<int64_t>(lo) && i <= static_cast<int64_t>(hi);
    else if (is_floating_point(t))
      ok = std::abs(static_cast<double>(i)) <= hi;
  }
  BRISK_CHECK(ok, op, "value ", v, " is out of range for dtype ", t);
}

Scalar scalar_to_dtype_unchecked_16bit(const char* op, const Scalar& v, ScalarType t) {
  if (t == kHalf && !v.is_bool()) return Scalar(static_cast<double>(static_cast<float>(v.to<Half>())));
  if (t == kBFloat16 && !v.is_bool()) return Scalar(static_cast<double>(static_cast<float>(v.to<BFloat16>())));
  check_scalar_fits(op, v, t);
  return v;
}

Scalar fill_value(const char* op, const Scalar& v, ScalarType t, bool one_cpu_element) {
  if (one_cpu_element) return scalar_to_dtype_unchecked_16bit(op, v, t);
  check_scalar_fits(op, v, t);
  return v;
}
}  // namespace detail

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool: return os << (s.to<bool>() ? "True" : "False");
    case Scalar::Kind::Int: return os << s.to<int64_t>();
    default: return os << s.to<double>();
  }
}

std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  os << '[';
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
  return os << ']';
}

}  // namespace brisk
