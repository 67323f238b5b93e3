// The argument of brisk::tensor(...) for nested braces of any depth, mixed
// literal types and single scalars (libtorch's TensorDataContainer).
#pragma once
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "brisk/scalar.h"

namespace brisk::detail {

/// A scalar, or a braced list of TensorData: `tensor({{1, 2.5}, {3, 4}})`,
/// `tensor(3.5)`. The kinds of the scalars decide the dtype when none is
/// given, as Python literals do: any floating point value -> the default
/// dtype (a C++ float alone -> float32), else any integer -> int64, else bool.
class TensorData {
 public:
  template <class T>
    requires std::is_arithmetic_v<T>
  TensorData(T v) : scalar_(v), is_scalar_(true), is_float_literal_(std::is_same_v<T, float>) {}
  TensorData(std::initializer_list<TensorData> items) : items_(items) {}

  bool is_scalar() const { return is_scalar_; }
  const Scalar& scalar() const { return scalar_; }
  bool is_float_literal() const { return is_float_literal_; }
  const std::vector<TensorData>& items() const { return items_; }

 private:
  Scalar scalar_;
  std::vector<TensorData> items_;
  bool is_scalar_ = false;
  bool is_float_literal_ = false;
};

}  // namespace brisk::detail
