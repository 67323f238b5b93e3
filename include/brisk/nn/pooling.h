// Pooling layers of brisk::nn: max and average pooling (1-D and 2-D) and
// adaptive average pooling, as functions (nn::functional) and modules.
//
//   namespace F = brisk::nn::functional;
//   brisk::Tensor y = F::max_pool2d(x, 2);                                   // kernel 2, stride 2
//   brisk::Tensor z = F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride(2).padding(1));
//   auto pool = std::make_shared<brisk::nn::MaxPool2d>(2);
//
// Inputs are (N, C, H, W) or unbatched (C, H, W) for 2-D pooling, (N, C, L)
// or (C, L) for 1-D pooling. A channels_last input gives a channels_last
// output (and gradient), computed in that layout. See docs/design/pooling_norm.md.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>

#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"

namespace brisk::nn {

/// D sizes given as one integer (used for every dim) or as D integers:
/// `2` or `{2, 3}` (libtorch's ExpandingArray). A list of another length is
/// accepted here and refused by the op that uses it, naming the op.
template <size_t D>
class ExpandingInts {
 public:
  ExpandingInts(int64_t v) : given_(1) { values_.fill(v); }
  ExpandingInts(std::initializer_list<int64_t> l) : given_(static_cast<int>(l.size())) {
    values_.fill(l.size() ? *l.begin() : 0);
    size_t i = 0;
    for (int64_t v : l)
      if (i < D) values_[i++] = v;
  }
  ExpandingInts(const std::array<int64_t, D>& a) : given_(static_cast<int>(D)), values_(a) {}

  int64_t operator[](size_t i) const { return values_[i]; }
  const std::array<int64_t, D>& values() const { return values_; }
  static constexpr size_t size() { return D; }
  /// How many integers were given (1, D, or a wrong count).
  int given() const { return given_; }
  bool operator==(const ExpandingInts& o) const { return values_ == o.values_; }
  /// "2" when given as one integer, else "(2, 3)" (PyTorch's printing).
  std::string str() const {
    if (given_ == 1) return std::to_string(values_[0]);
    std::string s = "(";
    for (size_t i = 0; i < D; ++i) {
      if (i) s += ", ";
      s += std::to_string(values_[i]);
    }
    s += D == 1 ? ",)" : ")";
    return s;
  }

 private:
  int given_;
  std::array<int64_t, D> values_{};
};

}  // namespace brisk::nn

namespace brisk {
/// libtorch's name: `torch::ExpandingArray<2>` (integers only).
template <size_t D>
using ExpandingArray = nn::ExpandingInts<D>;
}  // namespace brisk

namespace brisk::nn {

// ---- options ----------------------------------------------------------------------
// The modules and the functions share one options type (libtorch's
// MaxPool2dOptions = functional::MaxPool2dFuncOptions). stride defaults to
// kernel_size.

template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingInts<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  BRISK_ARG(ExpandingInts<D>, kernel_size);
  BRISK_ARG(ExpandingInts<D>, stride);
  /// Implicit -inf padding on both sides; at most half the kernel size.
  BRISK_ARG(ExpandingInts<D>, padding) = 0;
  BRISK_ARG(ExpandingInts<D>, dilation) = 1;
  /// Round the output size up (a last window that starts inside the input
  /// or left padding is kept).
  BRISK_ARG(bool, ceil_mode) = false;
};
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;

template <size_t D>
struct AvgPoolOptions {
  AvgPoolOptions(ExpandingInts<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  BRISK_ARG(ExpandingInts<D>, kernel_size);
  BRISK_ARG(ExpandingInts<D>, stride);
  /// Implicit zero padding on both sides; at most half the kernel size.
  BRISK_ARG(ExpandingInts<D>, padding) = 0;
  BRISK_ARG(bool, ceil_mode) = false;
  /// Count padded positions in the divisor (windows clipped by ceil_mode
  /// beyond the padding are not counted either way).
  BRISK_ARG(bool, count_include_pad) = true;
  /// Divide every window's sum by this instead (2-D only; non-zero).
  BRISK_ARG(std::optional<int64_t>, divisor_override);
};
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;

struct AdaptiveAvgPool2dOptions {
  AdaptiveAvgPool2dOptions(ExpandingInts<2> output_size) : output_size_(output_size) {}
  /// (OH, OW); output window i covers [floor(i*H/OH), ceil((i+1)*H/OH)).
  BRISK_ARG(ExpandingInts<2>, output_size);
};

namespace functional {

using MaxPool1dFuncOptions = MaxPool1dOptions;
using MaxPool2dFuncOptions = MaxPool2dOptions;
using AvgPool1dFuncOptions = AvgPool1dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;

/// Max over each kH x kW window (dilated, strided, -inf padded) of an
/// (N, C, H, W) or (C, H, W) input. NaN wins (propagates); among equal
/// values the first in row-major window order is taken.
Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& o);
Tensor max_pool2d(const Tensor& x, ExpandingInts<2> kernel_size, std::optional<ExpandingInts<2>> stride = std::nullopt,
                  ExpandingInts<2> padding = 0, ExpandingInts<2> dilation = 1, bool ceil_mode = false);
/// (values, indices): indices (int64) are flat positions h * W + w within
/// each input plane, as PyTorch's. The gradient flows through values.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const MaxPool2dFuncOptions& o);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, ExpandingInts<2> kernel_size,
                                                   std::optional<ExpandingInts<2>> stride = std::nullopt,
                                                   ExpandingInts<2> padding = 0, ExpandingInts<2> dilation = 1,
                                                   bool ceil_mode = false);

/// Mean over each window of an (N, C, H, W) or (C, H, W) input.
Tensor avg_pool2d(const Tensor& x, const AvgPool2dFuncOptions& o);
Tensor avg_pool2d(const Tensor& x, ExpandingInts<2> kernel_size, std::optional<ExpandingInts<2>> stride = std::nullopt,
                  ExpandingInts<2> padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

/// Average pooling to a fixed output size; (1, 1) is the global average.
Tensor adaptive_avg_pool2d(const Tensor& x, const AdaptiveAvgPool2dFuncOptions& o);
Tensor adaptive_avg_pool2d(const Tensor& x, ExpandingInts<2> output_size);

/// 1-D pooling of (N, C, L) or (C, L) inputs (the 2-D kernels on a
/// (.., 1, L) view). Indices are positions along L.
Tensor max_pool1d(const Tensor& x, const MaxPool1dFuncOptions& o);
Tensor max_pool1d(const Tensor& x, ExpandingInts<1> kernel_size, std::optional<ExpandingInts<1>> stride = std::nullopt,
                  ExpandingInts<1> padding = 0, ExpandingInts<1> dilation = 1, bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, const MaxPool1dFuncOptions& o);
Tensor avg_pool1d(const Tensor& x, const AvgPool1dFuncOptions& o);
Tensor avg_pool1d(const Tensor& x, ExpandingInts<1> kernel_size, std::optional<ExpandingInts<1>> stride = std::nullopt,
                  ExpandingInts<1> padding = 0, bool ceil_mode = false, bool count_include_pad = true);

}  // namespace functional

// ---- modules ------------------------------------------------------------------------

/// MaxPool2d(2): 2x2 windows, stride 2.
class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(const MaxPool2dOptions& options);
  explicit MaxPool2dImpl(ExpandingInts<2> kernel_size) : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  /// (values, flat indices), as functional::max_pool2d_with_indices.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  MaxPool2dOptions options;
};
BRISK_MODULE(MaxPool2d);

class MaxPool1dImpl : public Module {
 public:
  explicit MaxPool1dImpl(const MaxPool1dOptions& options);
  explicit MaxPool1dImpl(ExpandingInts<1> kernel_size) : MaxPool1dImpl(MaxPool1dOptions(kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  MaxPool1dOptions options;
};
BRISK_MODULE(MaxPool1d);

class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(const AvgPool2dOptions& options);
  explicit AvgPool2dImpl(ExpandingInts<2> kernel_size) : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  AvgPool2dOptions options;
};
BRISK_MODULE(AvgPool2d);

class AvgPool1dImpl : public Module {
 public:
  explicit AvgPool1dImpl(const AvgPool1dOptions& options);
  explicit AvgPool1dImpl(ExpandingInts<1> kernel_size) : AvgPool1dImpl(AvgPool1dOptions(kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  AvgPool1dOptions options;
};
BRISK_MODULE(AvgPool1d);

/// AdaptiveAvgPool2d(1): global average pooling to (N, C, 1, 1).
class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options);
  explicit AdaptiveAvgPool2dImpl(ExpandingInts<2> output_size)
      : AdaptiveAvgPool2dImpl(AdaptiveAvgPool2dOptions(output_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  AdaptiveAvgPool2dOptions options;
};
BRISK_MODULE(AdaptiveAvgPool2d);

}  // namespace brisk::nn
