// Template bodies for tensor(values) and Tensor::to_vector.
#pragma once
#include <cstring>
#include <type_traits>

namespace brisk {
namespace detail {
/// dtype a C++ literal type maps to, as Python literals do (double -> default dtype).
template <class T>
ScalarType literal_dtype() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_same_v<T, double>) return default_dtype();
  // int and long are int64, as Python ints; the 8- and 16-bit types keep
  // their own dtype (libtorch: kByte, kChar, kShort).
  else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t> && !std::is_same_v<T, int8_t> &&
                     !std::is_same_v<T, int16_t>)
    return kInt64;
  else return dtype_of<T>;
}
template <class T>
using storage_t = std::conditional_t<std::is_same_v<T, bool> || std::is_floating_point_v<T> ||
                                         std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                                         std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t> ||
                                         std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t> ||
                                         std::is_same_v<T, int64_t>,
                                     T, int64_t>;
/// Tells compile's tracer (when one runs) that t's values were written on
/// the host from C++ values: a constant of the trace (docs/design/compile.md).
void note_host_constant(const Tensor& t);
/// Builds a tensor from host values of a C++ type, then converts to opts' dtype.
template <class T>
Tensor tensor_from_values(const T* values, IntArrayRef sizes, TensorOptions opts) {
  using S = storage_t<T>;
  Tensor t = empty(sizes, TensorOptions(dtype_of<S>));
  S* p = t.data_ptr<S>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<S>(values[i]);
  note_host_constant(t);
  ScalarType want = opts.dtype_ ? *opts.dtype_ : literal_dtype<T>();
  Tensor r = want == t.dtype() ? t : t.to(want);
  if (!opts.device_.is_cpu()) r = r.to(opts.device_);
  if (opts.requires_grad_) r = r.to(opts.requires_grad(true));
  return r;
}
}  // namespace detail

template <class T>
Tensor tensor(std::initializer_list<T> values, TensorOptions opts) {
  int64_t n = static_cast<int64_t>(values.size());
  return detail::tensor_from_values<T>(values.begin(), IntArrayRef(&n, 1), opts);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> values, TensorOptions opts) {
  // std::vector<bool> has no data(): bools are gathered as bytes.
  using Flat = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
  std::vector<Flat> flat;
  int64_t cols = values.size() ? static_cast<int64_t>(values.begin()->size()) : 0;
  for (auto& row : values) {
    BRISK_CHECK(static_cast<int64_t>(row.size()) == cols, "tensor", "ragged nested list: rows have different lengths (", cols,
                " and ", row.size(), ")");
    flat.insert(flat.end(), row.begin(), row.end());
  }
  int64_t sizes[2] = {static_cast<int64_t>(values.size()), cols};
  if constexpr (std::is_same_v<T, bool>)
    return detail::tensor_from_values<uint8_t>(flat.data(), IntArrayRef(sizes, 2), opts.dtype_ ? opts : opts.dtype(kBool));
  else
    return detail::tensor_from_values<T>(flat.data(), IntArrayRef(sizes, 2), opts);
}
template <class T>
Tensor tensor(const std::vector<T>& values, TensorOptions opts) {
  int64_t n = static_cast<int64_t>(values.size());
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> tmp(values.begin(), values.end());
    return detail::tensor_from_values<uint8_t>(tmp.data(), IntArrayRef(&n, 1), opts.dtype_ ? opts : opts.dtype(kBool));
  } else {
    return detail::tensor_from_values<T>(values.data(), IntArrayRef(&n, 1), opts);
  }
}
template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes, TensorOptions opts) {
  BRISK_CHECK(multiply(sizes) == static_cast<int64_t>(values.size()), "tensor", "shape ", sizes, " needs ",
              multiply(sizes), " values, got ", values.size());
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> tmp(values.begin(), values.end());
    return detail::tensor_from_values<uint8_t>(tmp.data(), sizes, opts.dtype_ ? opts : opts.dtype(kBool));
  } else {
    return detail::tensor_from_values<T>(values.data(), sizes, opts);
  }
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = to(dtype_of<T>).contiguous();
  if (!c.is_cpu()) c = c.to(Device(kCPU));
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

}  // namespace brisk
