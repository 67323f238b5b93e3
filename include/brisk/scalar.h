// A number passed to an op: bool, integer or floating, without a tensor.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <type_traits>

#include "brisk/dtype.h"

namespace brisk {

/// Scalar arguments never allocate: `x.add_(1)` passes a Scalar down to the
/// kernel, which reads it as the computation type.
class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Double };
  Scalar() : Scalar(int64_t(0)) {}
  Scalar(bool v) : kind_(Kind::Bool) { i_ = v; }
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int) { i_ = static_cast<int64_t>(v); }
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Double) { d_ = static_cast<double>(v); }
  Scalar(Half v) : kind_(Kind::Double) { d_ = float(v); }
  Scalar(BFloat16 v) : kind_(Kind::Double) { d_ = float(v); }

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Double; }
  bool is_integral(bool include_bool) const {
    return kind_ == Kind::Int || (include_bool && kind_ == Kind::Bool);
  }
  bool is_bool() const { return kind_ == Kind::Bool; }

  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return kind_ == Kind::Double ? d_ != 0 : i_ != 0;
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return T(static_cast<float>(kind_ == Kind::Double ? d_ : double(i_)));
    } else {
      return kind_ == Kind::Double ? static_cast<T>(d_) : static_cast<T>(i_);
    }
  }
  double to_double() const { return to<double>(); }
  int64_t to_long() const { return to<int64_t>(); }

  /// The dtype a tensor made from this scalar gets (float -> default dtype).
  ScalarType dtype() const {
    return kind_ == Kind::Double ? default_dtype() : kind_ == Kind::Int ? kInt64 : kBool;
  }
  Scalar operator-() const {
    return kind_ == Kind::Double ? Scalar(-d_) : Scalar(-i_);
  }

 private:
  Kind kind_;
  union {
    double d_;
    int64_t i_;
  };
};
std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace brisk
