// brisk::IValue: a tagged value (c10::IValue's spelling) for the things a
// custom autograd function stores in ctx->saved_data: None, a tensor, a
// double, an integer, a bool, a string, or a list of one of those.
//
//   ctx->saved_data["k"] = 2.5;          ctx->saved_data["k"].toDouble()
//   ctx->saved_data["dims"] = dims;      ctx->saved_data["dims"].toIntVector()
//
// Accessors check the tag, as c10's do: toDouble() of an integer is an error
// naming both kinds.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "brisk/scalar.h"
#include "brisk/tensor.h"

namespace brisk {

class IValue {
 public:
  enum class Tag : uint8_t { None, Tensor, Double, Int, Bool, String, IntList, DoubleList, BoolList, TensorList, StringList };

  IValue() = default;
  IValue(Tensor t) : v_(std::move(t)) {}  // NOLINT: implicit, as c10
  IValue(double d) : v_(d) {}             // NOLINT
  IValue(bool b) : v_(b) {}               // NOLINT
  /// Any integer type except bool is an Int (int64_t).
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  IValue(T i) : v_(static_cast<int64_t>(i)) {}  // NOLINT
  IValue(float f) : v_(static_cast<double>(f)) {}  // NOLINT
  IValue(std::string s) : v_(std::move(s)) {}  // NOLINT
  IValue(const char* s) : v_(std::string(s)) {}  // NOLINT
  IValue(std::string_view s) : v_(std::string(s)) {}  // NOLINT
  /// A Scalar keeps its kind (Double, Int or Bool).
  IValue(const Scalar& s);  // NOLINT
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  IValue(IntArrayRef v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}  // NOLINT
  IValue(std::vector<double> v) : v_(std::move(v)) {}  // NOLINT
  IValue(std::vector<bool> v) : v_(std::move(v)) {}  // NOLINT
  IValue(std::vector<Tensor> v) : v_(std::move(v)) {}  // NOLINT
  IValue(std::vector<std::string> v) : v_(std::move(v)) {}  // NOLINT

  Tag tag() const { return static_cast<Tag>(v_.index()); }
  /// "None", "Tensor", "Double", "Int", ... (c10's tagKind()).
  std::string tagKind() const;

  bool isNone() const { return tag() == Tag::None; }
  bool isTensor() const { return tag() == Tag::Tensor; }
  bool isDouble() const { return tag() == Tag::Double; }
  bool isInt() const { return tag() == Tag::Int; }
  bool isBool() const { return tag() == Tag::Bool; }
  bool isString() const { return tag() == Tag::String; }
  bool isScalar() const { return isDouble() || isInt() || isBool(); }
  bool isIntList() const { return tag() == Tag::IntList; }
  bool isDoubleList() const { return tag() == Tag::DoubleList; }
  bool isBoolList() const { return tag() == Tag::BoolList; }
  bool isTensorList() const { return tag() == Tag::TensorList; }
  bool isList() const { return tag() >= Tag::IntList; }

  const Tensor& toTensor() const { return get<Tensor>(Tag::Tensor); }
  double toDouble() const { return get<double>(Tag::Double); }
  int64_t toInt() const { return get<int64_t>(Tag::Int); }
  bool toBool() const { return get<bool>(Tag::Bool); }
  const std::string& toStringRef() const { return get<std::string>(Tag::String); }
  std::string_view toStringView() const { return toStringRef(); }
  /// Double, Int or Bool as a Scalar of that kind.
  Scalar toScalar() const;
  const std::vector<int64_t>& toIntVector() const { return get<std::vector<int64_t>>(Tag::IntList); }
  const std::vector<int64_t>& toIntList() const { return toIntVector(); }
  const std::vector<double>& toDoubleVector() const { return get<std::vector<double>>(Tag::DoubleList); }
  const std::vector<double>& toDoubleList() const { return toDoubleVector(); }
  const std::vector<bool>& toBoolList() const { return get<std::vector<bool>>(Tag::BoolList); }
  const std::vector<Tensor>& toTensorVector() const { return get<std::vector<Tensor>>(Tag::TensorList); }
  const std::vector<Tensor>& toTensorList() const { return toTensorVector(); }
  const std::vector<std::string>& toStringVector() const { return get<std::vector<std::string>>(Tag::StringList); }

 private:
  [[noreturn]] void wrong_tag(Tag wanted) const;
  template <class T>
  const T& get(Tag wanted) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    wrong_tag(wanted);
  }

  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, std::vector<int64_t>,
               std::vector<double>, std::vector<bool>, std::vector<Tensor>, std::vector<std::string>>
      v_;
};

}  // namespace brisk
