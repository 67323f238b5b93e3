// Python-style indices: x.index({Slice(1, None), None, 0, Ellipsis, mask}).
#pragma once
#include <optional>

#include "brisk/tensor.h"

namespace brisk {
namespace indexing {

struct NoneType {};
struct EllipsisType {};
constexpr NoneType None{};
constexpr EllipsisType Ellipsis{};

/// start:stop:step; a missing bound is std::nullopt (or None).
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  Slice() = default;
  Slice(std::optional<int64_t> start_, std::optional<int64_t> stop_ = std::nullopt, int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
  Slice(NoneType, std::optional<int64_t> stop_ = std::nullopt, int64_t step_ = 1)
      : stop(stop_), step(step_) {}
  Slice(std::optional<int64_t> start_, NoneType, int64_t step_ = 1) : start(start_), step(step_) {}
  Slice(NoneType, NoneType, int64_t step_ = 1) : step(step_) {}
};

}  // namespace indexing

/// One entry of an index list: None (new axis), Ellipsis, an integer (select),
/// a bool (new axis, kept or emptied), a Slice, or a tensor (advanced index).
class TensorIndex {
 public:
  enum class Kind : int8_t { None, Ellipsis, Integer, Boolean, Slice, Tensor };
  TensorIndex(indexing::NoneType) : kind_(Kind::None) {}
  TensorIndex(indexing::EllipsisType) : kind_(Kind::Ellipsis) {}
  TensorIndex(const char* s);  // "..." as in libtorch
  TensorIndex(int64_t i) : kind_(Kind::Integer), integer_(i) {}
  TensorIndex(int i) : kind_(Kind::Integer), integer_(i) {}
  TensorIndex(bool b) : kind_(Kind::Boolean), integer_(b) {}
  TensorIndex(indexing::Slice s) : kind_(Kind::Slice), slice_(s) {}
  TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return integer_ != 0; }
  const indexing::Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  indexing::Slice slice_;
  Tensor tensor_;
};

using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;

}  // namespace brisk
