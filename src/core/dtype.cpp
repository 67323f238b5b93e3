#include <ostream>

#include "brisk/ops.h"
#include "brisk/scalar.h"
#include "brisk/shape.h"

namespace brisk {

std::string_view dtype_name(ScalarType t) {
  switch (t) {
    case kBool: return "bool";
    case kUInt8: return "uint8";
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
  // Table in the enum order b1 u1 i4 i8 f2 bf f4 f8.
  constexpr ScalarType b1 = kBool, u1 = kUInt8, i4 = kInt32, i8 = kInt64, f2 = kHalf, bf = kBFloat16,
                       f4 = kFloat, f8 = kDouble;
  static constexpr ScalarType table[8][8] = {
      /* b1 */ {b1, u1, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8},
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
