// TensorIter: broadcasting, type promotion, output allocation and dimension
// coalescing for every elementwise op, on any device. Backends own the loops.
#pragma once
#include <cstdint>

#include "brisk/tensor.h"

namespace brisk {

// Note [TensorIter layout]
// After build(): operand 0 is the output, 1.. are inputs. Dims are stored
// innermost first (dim 0 is the fastest-moving) after sorting by the
// operands' strides and merging dims that are contiguous for every operand,
// so a contiguous op of any shape is one dim of `numel` elements. Strides are
// in bytes. A Scalar input is a 0-stride operand that points into
// `scalar_buf`, already converted to the compute dtype.
struct TensorIter {
  static constexpr int kMaxOperands = 4;
  static constexpr int kMaxDims = 16;

  int noperands = 0;
  int ndim = 0;
  int64_t numel = 0;
  int64_t shape[kMaxDims];
  int64_t strides[kMaxOperands][kMaxDims];
  char* data[kMaxOperands];
  ScalarType dtypes[kMaxOperands];
  ScalarType compute_dtype = kFloat;  ///< dtype the inputs were promoted to
  alignas(16) char scalar_buf[kMaxOperands][16];
  /// Keeps cast inputs alive. Kernels read data/strides/dtypes only: on the
  /// fast path (Note [TensorIter fast path]) these stay empty and the caller's
  /// tensors keep the inputs alive.
  Tensor operands[kMaxOperands];
  Tensor result;                  ///< what the op returns (the out tensor)
  Tensor staging;                 ///< set when the out dtype needs a copy after the kernel

  /// True when every operand is contiguous (dense, stride = element size)
  /// or a 0-stride scalar, in one dim.
  bool is_contiguous() const {
    if (ndim != 1) return ndim == 0;
    for (int k = 0; k < noperands; ++k)
      if (strides[k][0] != static_cast<int64_t>(element_size(dtypes[k])) && strides[k][0] != 0) return false;
    return true;
  }
  /// Copies the staging buffer into the out tensor when one was used.
  void finish();
};

/// Builds a TensorIter:
///   TensorIter it; IterBuilder("add").output(out).input(a).input(b).build(it);
class IterBuilder {
 public:
  explicit IterBuilder(const char* op) : op_(op) {}
  // Tensors passed as lvalues are referenced, not copied (no refcount
  // traffic on the hot path): they must outlive build(). Temporaries are
  // moved into the builder and kept alive by it.
  /// The output; undefined means "allocate one".
  IterBuilder& output(const Tensor& out) {
    out_ = &out;
    return *this;
  }
  IterBuilder& output(Tensor&& out) {
    owned_out_ = std::move(out);
    out_ = &owned_out_;
    return *this;
  }
  /// In-place: the output is `self`, which is also input 0 (call input(self) too).
  IterBuilder& inplace(const Tensor& self) {
    out_ = &self;
    inplace_ = true;
    return *this;
  }
  /// out= semantics: an out tensor with no elements is resized to the result shape.
  IterBuilder& resize_out(bool r = true) {
    resize_out_ = r;
    return *this;
  }
  IterBuilder& input(const Tensor& t, bool promote = true) {
    BRISK_CHECK(t.defined(), op_, "input ", ninputs_, " is an undefined tensor");
    inputs_[ninputs_] = &t;
    is_scalar_[ninputs_] = false;
    promote_[ninputs_++] = promote;
    return *this;
  }
  IterBuilder& input(Tensor&& t, bool promote = true) {
    owned_[ninputs_] = std::move(t);
    return input(owned_[ninputs_], promote);
  }
  IterBuilder& input(const Scalar& s) {
    scalars_[ninputs_] = s;
    is_scalar_[ninputs_] = true;
    promote_[ninputs_++] = true;
    return *this;
  }
  /// Integer inputs compute in the default float dtype (div, sqrt, ...).
  IterBuilder& promote_int_to_float(bool p = true) {
    int_to_float_ = p;
    return *this;
  }
  /// The output dtype when it differs from the compute dtype (bool for eq).
  IterBuilder& output_dtype(ScalarType t) {
    out_dtype_ = t;
    return *this;
  }
  /// Forces the compute dtype (skips promotion).
  IterBuilder& compute_dtype(ScalarType t) {
    compute_dtype_ = t;
    return *this;
  }
  /// Inputs keep their own dtypes (copy casts inside the kernel).
  IterBuilder& no_cast_inputs() {
    cast_inputs_ = false;
    return *this;
  }
  /// The output may have internal overlap (a 0 stride on a dim of size > 1):
  /// for ops that write the same value to every element (fill_).
  IterBuilder& allow_overlap() {
    allow_overlap_ = true;
    return *this;
  }
  void build(TensorIter& it);

 private:
  bool try_fast_path(TensorIter& it, ScalarType compute, ScalarType result_dtype);
  bool same_layout_strides(const TensorIter& it, IntArrayRef shape, DimVector& strides) const;
  const Tensor& in(int i) const { return *inputs_[i]; }
  bool has_out() const { return out_ != nullptr && out_->defined(); }

  const char* op_;
  const Tensor* out_ = nullptr;
  const Tensor* inputs_[TensorIter::kMaxOperands] = {};
  Scalar scalars_[TensorIter::kMaxOperands];
  bool is_scalar_[TensorIter::kMaxOperands] = {};
  bool promote_[TensorIter::kMaxOperands] = {};
  int ninputs_ = 0;
  bool inplace_ = false;
  bool resize_out_ = false;
  bool int_to_float_ = false;
  bool cast_inputs_ = true;
  bool allow_overlap_ = false;
  ScalarType out_dtype_ = ScalarType::Undefined;
  ScalarType compute_dtype_ = ScalarType::Undefined;
  Tensor owned_[TensorIter::kMaxOperands];
  Tensor owned_out_;
};

/// PyTorch's result_type over tensors (dim > 0 beats 0-dim beats scalars
/// within a category).
struct ResultTypeState {
  ScalarType dim_result = ScalarType::Undefined;
  ScalarType zero_result = ScalarType::Undefined;
  ScalarType wrapped_result = ScalarType::Undefined;
  void update(const Tensor& t);
  void update(const Scalar& s);
  ScalarType result() const;
};

/// Throws "[op] unsupported operation: ... overlap" when `out` and `in` share
/// memory without being the same view (or out has internal overlap).
void check_no_partial_overlap(const char* op, const Tensor& out, const Tensor& in);
/// Throws when out has a 0 stride on a dim of size > 1 (and elements).
void check_no_internal_overlap(const char* op, const Tensor& out);
/// True when out has a 0 stride on a dim of size > 1 and elements.
bool has_internal_overlap(const Tensor& out);

}  // namespace brisk
