// Element types and PyTorch's type promotion rules.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string_view>

#include "brisk/half.h"

namespace brisk {

// Note [Dtype order]
// The enum order is the order of the promotion lattice's categories
// (bool < integers < floating), which promote_types relies on; within the
// integers, by width (uint8 first). The values are brisk's own (not
// PyTorch's c10::ScalarType numbers) and are not stored in files: safetensors
// and npy name dtypes by string. Adding a dtype means updating every table
// indexed by it (element_size, dtype_name, promote_types, the dispatch
// macros below, the dtype bit masks of register_kernel: at most 32 dtypes).
enum class ScalarType : int8_t {
  Bool = 0,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Half,
  BFloat16,
  Float,
  Double,
  Undefined,
  // libtorch's enumerator names for the same dtypes (ScalarType::Long, ...);
  // brisk's own code uses the names above.
  Byte = UInt8,
  Char = Int8,
  Short = Int16,
  Int = Int32,
  Long = Int64,
};
using Dtype = ScalarType;
constexpr int kNumDtypes = 10;

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kUInt8 = ScalarType::UInt8;
constexpr ScalarType kByte = ScalarType::UInt8;
constexpr ScalarType kInt8 = ScalarType::Int8;
constexpr ScalarType kChar = ScalarType::Int8;
constexpr ScalarType kInt16 = ScalarType::Int16;
constexpr ScalarType kShort = ScalarType::Int16;
constexpr ScalarType kInt32 = ScalarType::Int32;
constexpr ScalarType kInt = ScalarType::Int32;
constexpr ScalarType kInt64 = ScalarType::Int64;
constexpr ScalarType kLong = ScalarType::Int64;
constexpr ScalarType kFloat16 = ScalarType::Half;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat32 = ScalarType::Float;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kFloat64 = ScalarType::Double;
constexpr ScalarType kDouble = ScalarType::Double;
// libtorch's short spellings (torch::kF32, ...).
constexpr ScalarType kU8 = ScalarType::UInt8;
constexpr ScalarType kI8 = ScalarType::Int8;
constexpr ScalarType kI16 = ScalarType::Int16;
constexpr ScalarType kI32 = ScalarType::Int32;
constexpr ScalarType kI64 = ScalarType::Int64;
constexpr ScalarType kF16 = ScalarType::Half;
constexpr ScalarType kBF16 = ScalarType::BFloat16;
constexpr ScalarType kF32 = ScalarType::Float;
constexpr ScalarType kF64 = ScalarType::Double;

constexpr size_t element_size(ScalarType t) {
  constexpr uint8_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 0};
  return sizes[static_cast<int>(t)];
}
constexpr bool is_floating_point(ScalarType t) {
  return t == kHalf || t == kBFloat16 || t == kFloat || t == kDouble;
}
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == kUInt8 || t == kInt8 || t == kInt16 || t == kInt32 || t == kInt64 || (include_bool && t == kBool);
}
constexpr bool is_reduced_float(ScalarType t) { return t == kHalf || t == kBFloat16; }
/// Whether the dtype holds negative values (c10::isSignedType): every dtype
/// but bool and uint8.
constexpr bool is_signed(ScalarType t) { return t != kBool && t != kUInt8 && t != ScalarType::Undefined; }
/// libtorch's spellings of the predicates above (c10::isFloatingType, ...).
constexpr bool isFloatingType(ScalarType t) { return is_floating_point(t); }
constexpr bool isIntegralType(ScalarType t, bool include_bool) { return is_integral(t, include_bool); }
constexpr bool isSignedType(ScalarType t) { return is_signed(t); }
constexpr bool isReducedFloatingType(ScalarType t) { return is_reduced_float(t); }
constexpr size_t elementSize(ScalarType t) { return element_size(t); }

/// "float32", "int64", ... (PyTorch's names without the "torch." prefix).
std::string_view dtype_name(ScalarType t);
std::ostream& operator<<(std::ostream& os, ScalarType t);

/// The smallest type both a and b convert to without losing their category
/// (torch.promote_types).
ScalarType promote_types(ScalarType a, ScalarType b);
/// libtorch's spelling (c10::promoteTypes).
inline ScalarType promoteTypes(ScalarType a, ScalarType b) { return promote_types(a, b); }

/// The dtype new floating tensors get (float32 unless changed).
ScalarType default_dtype();
void set_default_dtype(ScalarType t);

/// C++ type <-> ScalarType.
template <class T>
struct CppTypeToDtype;
#define BRISK_DTYPE_MAP(_) \
  _(bool, Bool)            \
  _(uint8_t, UInt8)        \
  _(int8_t, Int8)          \
  _(int16_t, Int16)        \
  _(int32_t, Int32)        \
  _(int64_t, Int64)        \
  _(Half, Half)            \
  _(BFloat16, BFloat16)    \
  _(float, Float)          \
  _(double, Double)
#define BRISK_DEFINE_MAP(T, N) \
  template <>                  \
  struct CppTypeToDtype<T> {   \
    static constexpr ScalarType value = ScalarType::N; \
  };
BRISK_DTYPE_MAP(BRISK_DEFINE_MAP)
#undef BRISK_DEFINE_MAP
template <class T>
constexpr ScalarType dtype_of = CppTypeToDtype<T>::value;

/// Arithmetic type used to compute on T (float for the 16-bit floats).
template <class T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<Half> {
  using type = float;
};
template <>
struct OpMath<BFloat16> {
  using type = float;
};
template <class T>
using opmath_t = typename OpMath<T>::type;

}  // namespace brisk

// ---------------------------------------------------------------------------
// libtorch compatibility: the c10:: spellings of the dtype names.
// c10::ScalarType, c10::kFloat, c10::isFloatingType(...), c10::elementSize(...)
// name brisk's, so that ported code using them compiles. (Other c10:: names,
// optional and IntArrayRef, live in their own compat header; this block only
// covers dtypes.)
// A translation unit that includes libtorch's own headers too (the parity
// tests) gets libtorch's c10 instead: the block is left out where libtorch's
// headers came first (C10_API is defined) or where BRISK_NO_C10_COMPAT is
// defined (for libtorch included after brisk).
#if !defined(BRISK_NO_C10_COMPAT) && !defined(C10_API)
#define BRISK_C10_DTYPE_COMPAT 1
namespace c10 {
using brisk::ScalarType;
using brisk::kBool;
using brisk::kUInt8;
using brisk::kByte;
using brisk::kInt8;
using brisk::kChar;
using brisk::kInt16;
using brisk::kShort;
using brisk::kInt32;
using brisk::kInt;
using brisk::kInt64;
using brisk::kLong;
using brisk::kFloat16;
using brisk::kHalf;
using brisk::kBFloat16;
using brisk::kFloat32;
using brisk::kFloat;
using brisk::kFloat64;
using brisk::kDouble;
using brisk::isFloatingType;
using brisk::isIntegralType;
using brisk::isSignedType;
using brisk::isReducedFloatingType;
using brisk::elementSize;
using brisk::promoteTypes;
using brisk::Half;
using brisk::BFloat16;
}  // namespace c10
#endif  // BRISK_NO_C10_COMPAT
// ---------------------------------------------------------------------------

/// Runs the body with `scalar_t` bound to the C++ type of `dtype`.
/// Usage: BRISK_DISPATCH_ALL(t, "add", [&] { loop<scalar_t>(...); });
#define BRISK_DISPATCH_CASE(N, T, ...) \
  case ::brisk::ScalarType::N: {       \
    using scalar_t = T;                \
    return __VA_ARGS__();              \
  }
#define BRISK_DISPATCH_ALL(dtype, op, ...)                              \
  [&] {                                                                 \
    switch (dtype) {                                                    \
      BRISK_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                      \
      BRISK_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                    \
      BRISK_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Half, ::brisk::Half, __VA_ARGS__)             \
      BRISK_DISPATCH_CASE(BFloat16, ::brisk::BFloat16, __VA_ARGS__)     \
      BRISK_DISPATCH_CASE(Float, float, __VA_ARGS__)                    \
      BRISK_DISPATCH_CASE(Double, double, __VA_ARGS__)                  \
      default:                                                          \
        BRISK_FAIL(op, "unsupported dtype ", dtype);                    \
    }                                                                   \
  }()
#define BRISK_DISPATCH_NUMERIC(dtype, op, ...)                          \
  [&] {                                                                 \
    switch (dtype) {                                                    \
      BRISK_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                    \
      BRISK_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Half, ::brisk::Half, __VA_ARGS__)             \
      BRISK_DISPATCH_CASE(BFloat16, ::brisk::BFloat16, __VA_ARGS__)     \
      BRISK_DISPATCH_CASE(Float, float, __VA_ARGS__)                    \
      BRISK_DISPATCH_CASE(Double, double, __VA_ARGS__)                  \
      default:                                                          \
        BRISK_FAIL(op, "not supported for dtype ", dtype);              \
    }                                                                   \
  }()
#define BRISK_DISPATCH_FLOAT(dtype, op, ...)                            \
  [&] {                                                                 \
    switch (dtype) {                                                    \
      BRISK_DISPATCH_CASE(Half, ::brisk::Half, __VA_ARGS__)             \
      BRISK_DISPATCH_CASE(BFloat16, ::brisk::BFloat16, __VA_ARGS__)     \
      BRISK_DISPATCH_CASE(Float, float, __VA_ARGS__)                    \
      BRISK_DISPATCH_CASE(Double, double, __VA_ARGS__)                  \
      default:                                                          \
        BRISK_FAIL(op, "expected a floating point dtype, got ", dtype); \
    }                                                                   \
  }()
#define BRISK_DISPATCH_INTEGRAL(dtype, op, ...)                         \
  [&] {                                                                 \
    switch (dtype) {                                                    \
      BRISK_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                      \
      BRISK_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                    \
      BRISK_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                  \
      default:                                                          \
        BRISK_FAIL(op, "expected an integer or bool dtype, got ", dtype); \
    }                                                                   \
  }()
