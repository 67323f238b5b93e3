// Element types and PyTorch's type promotion rules.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string_view>

#include "brisk/half.h"

namespace brisk {

// Note [Dtype order]
// The enum order is the order of the promotion lattice's categories
// (bool < integers < floating), which promote_types relies on.
enum class ScalarType : int8_t {
  Bool = 0,
  UInt8,
  Int32,
  Int64,
  Half,
  BFloat16,
  Float,
  Double,
  Undefined,
};
using Dtype = ScalarType;
constexpr int kNumDtypes = 8;

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kUInt8 = ScalarType::UInt8;
constexpr ScalarType kByte = ScalarType::UInt8;
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

constexpr size_t element_size(ScalarType t) {
  constexpr uint8_t sizes[] = {1, 1, 4, 8, 2, 2, 4, 8, 0};
  return sizes[static_cast<int>(t)];
}
constexpr bool is_floating_point(ScalarType t) {
  return t == kHalf || t == kBFloat16 || t == kFloat || t == kDouble;
}
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == kUInt8 || t == kInt32 || t == kInt64 || (include_bool && t == kBool);
}
constexpr bool is_reduced_float(ScalarType t) { return t == kHalf || t == kBFloat16; }

/// "float32", "int64", ... (PyTorch's names without the "torch." prefix).
std::string_view dtype_name(ScalarType t);
std::ostream& operator<<(std::ostream& os, ScalarType t);

/// The smallest type both a and b convert to without losing their category
/// (torch.promote_types).
ScalarType promote_types(ScalarType a, ScalarType b);

/// The dtype new floating tensors get (float32 unless changed).
ScalarType default_dtype();
void set_default_dtype(ScalarType t);

/// C++ type <-> ScalarType.
template <class T>
struct CppTypeToDtype;
#define BRISK_DTYPE_MAP(_) \
  _(bool, Bool)            \
  _(uint8_t, UInt8)        \
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
      BRISK_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                  \
      BRISK_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                  \
      default:                                                          \
        BRISK_FAIL(op, "expected an integer or bool dtype, got ", dtype); \
    }                                                                   \
  }()
