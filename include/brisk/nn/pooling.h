// Pooling layers of brisk::nn: max and average pooling (1-D and 2-D) and
// adaptive average pooling, as functions (nn::functional) and modules.
//
//   namespace F = brisk::nn::functional;
//   brisk::Tensor y = F::max_pool2d(x, 2);                                   // kernel 2, stride 2
//   brisk::Tensor z = F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride(2).padding(1));
//   brisk::nn::MaxPool2d pool(2);
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
#include <vector>

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
using MaxPool3dOptions = MaxPoolOptions<3>;

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
using AvgPool3dOptions = AvgPoolOptions<3>;

/// Options of AdaptiveMaxPool1d/2d/3d: the output size (one integer for all dims).
template <size_t D>
struct AdaptiveMaxPoolOptions {
  AdaptiveMaxPoolOptions(ExpandingInts<D> output_size) : output_size_(output_size) {}  // NOLINT
  BRISK_ARG(ExpandingInts<D>, output_size);
};
using AdaptiveMaxPool1dOptions = AdaptiveMaxPoolOptions<1>;
using AdaptiveMaxPool2dOptions = AdaptiveMaxPoolOptions<2>;
using AdaptiveMaxPool3dOptions = AdaptiveMaxPoolOptions<3>;
/// Options of AdaptiveAvgPool1d/3d (AdaptiveAvgPool2dOptions is below).
template <size_t D>
struct AdaptiveAvgPoolOptions {
  AdaptiveAvgPoolOptions(ExpandingInts<D> output_size) : output_size_(output_size) {}  // NOLINT
  BRISK_ARG(ExpandingInts<D>, output_size);
};
using AdaptiveAvgPool1dOptions = AdaptiveAvgPoolOptions<1>;
using AdaptiveAvgPool3dOptions = AdaptiveAvgPoolOptions<3>;

/// Options of LPPool1d/2d/3d: (sum over the window of x^p)^(1/p).
template <size_t D>
struct LPPoolOptions {
  LPPoolOptions(double norm_type, ExpandingInts<D> kernel_size)
      : norm_type_(norm_type), kernel_size_(kernel_size), stride_(kernel_size) {}
  BRISK_ARG(double, norm_type);
  BRISK_ARG(ExpandingInts<D>, kernel_size);
  BRISK_ARG(ExpandingInts<D>, stride);
  BRISK_ARG(bool, ceil_mode) = false;
};
using LPPool1dOptions = LPPoolOptions<1>;
using LPPool2dOptions = LPPoolOptions<2>;
using LPPool3dOptions = LPPoolOptions<3>;

/// Options of MaxUnpool1d/2d/3d (stride defaults to kernel_size).
template <size_t D>
struct MaxUnpoolOptions {
  MaxUnpoolOptions(ExpandingInts<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  BRISK_ARG(ExpandingInts<D>, kernel_size);
  BRISK_ARG(ExpandingInts<D>, stride);
  BRISK_ARG(ExpandingInts<D>, padding) = 0;
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool3dOptions = MaxUnpoolOptions<3>;

namespace functional {
/// libtorch's MaxUnpoolFuncOptions: the module's options plus the output size.
template <size_t D>
struct MaxUnpoolFuncOptions {
  MaxUnpoolFuncOptions(ExpandingInts<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  BRISK_ARG(ExpandingInts<D>, kernel_size);
  BRISK_ARG(ExpandingInts<D>, stride);
  BRISK_ARG(ExpandingInts<D>, padding) = 0;
  /// The spatial output size (D values, or with the batch and channel dims);
  /// default (in - 1) * stride - 2 * padding + kernel_size.
  BRISK_ARG(std::optional<std::vector<int64_t>>, output_size);
};
using MaxUnpool1dFuncOptions = MaxUnpoolFuncOptions<1>;
using MaxUnpool2dFuncOptions = MaxUnpoolFuncOptions<2>;
using MaxUnpool3dFuncOptions = MaxUnpoolFuncOptions<3>;
using LPPool1dFuncOptions = LPPool1dOptions;
using LPPool2dFuncOptions = LPPool2dOptions;
using LPPool3dFuncOptions = LPPool3dOptions;
}  // namespace functional

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

// 3-D and adaptive pooling: composed of index_select over the windows (one
// gather per dim) and a max/sum over them, so autograd gives the gradients
// (see src/nn/pooling_windows.cpp).
using MaxPool3dFuncOptions = MaxPool3dOptions;
using AvgPool3dFuncOptions = AvgPool3dOptions;
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPool1dOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPool2dOptions;
using AdaptiveMaxPool3dFuncOptions = AdaptiveMaxPool3dOptions;
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool1dOptions;
using AdaptiveAvgPool3dFuncOptions = AdaptiveAvgPool3dOptions;

/// Max over each kD x kH x kW window of an (N, C, D, H, W) or (C, D, H, W)
/// input. Indices: flat positions d * H * W + h * W + w in each input volume.
Tensor max_pool3d(const Tensor& x, const MaxPool3dFuncOptions& o);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, const MaxPool3dFuncOptions& o);
/// Mean over each window of an (N, C, D, H, W) or (C, D, H, W) input.
Tensor avg_pool3d(const Tensor& x, const AvgPool3dFuncOptions& o);
/// Max pooling to a fixed output size (window i covers
/// [floor(i * L / O), ceil((i + 1) * L / O)) per dim); indices as max_pool.
Tensor adaptive_max_pool1d(const Tensor& x, const AdaptiveMaxPool1dFuncOptions& o);
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x, const AdaptiveMaxPool1dFuncOptions& o);
Tensor adaptive_max_pool2d(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o);
Tensor adaptive_max_pool3d(const Tensor& x, const AdaptiveMaxPool3dFuncOptions& o);
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x, const AdaptiveMaxPool3dFuncOptions& o);
/// Average pooling to a fixed output size, (N, C, L) / (N, C, D, H, W) or unbatched.
Tensor adaptive_avg_pool1d(const Tensor& x, const AdaptiveAvgPool1dFuncOptions& o);
Tensor adaptive_avg_pool3d(const Tensor& x, const AdaptiveAvgPool3dFuncOptions& o);
/// Power-average pooling: (sum over each window of x^p)^(1/p) (PyTorch's
/// lp_pool: an avg_pool of x^p times the window size, sign-corrected).
Tensor lp_pool1d(const Tensor& x, const LPPool1dFuncOptions& o);
Tensor lp_pool2d(const Tensor& x, const LPPool2dFuncOptions& o);
Tensor lp_pool3d(const Tensor& x, const LPPool3dFuncOptions& o);
/// The inverse of max pooling: x's values written at `indices` (from
/// max_pool*_with_indices) of a zero output; the rest stays zero.
Tensor max_unpool1d(const Tensor& x, const Tensor& indices, const MaxUnpool1dFuncOptions& o);
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, const MaxUnpool2dFuncOptions& o);
Tensor max_unpool3d(const Tensor& x, const Tensor& indices, const MaxUnpool3dFuncOptions& o);

/// The same with the output size given directly: adaptive_max_pool2d(x, {3, 2}).
inline Tensor adaptive_max_pool1d(const Tensor& x, ExpandingInts<1> s) { return adaptive_max_pool1d(x, AdaptiveMaxPool1dFuncOptions(s)); }
inline Tensor adaptive_max_pool2d(const Tensor& x, ExpandingInts<2> s) { return adaptive_max_pool2d(x, AdaptiveMaxPool2dFuncOptions(s)); }
inline Tensor adaptive_max_pool3d(const Tensor& x, ExpandingInts<3> s) { return adaptive_max_pool3d(x, AdaptiveMaxPool3dFuncOptions(s)); }
inline std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x, ExpandingInts<1> s) {
  return adaptive_max_pool1d_with_indices(x, AdaptiveMaxPool1dFuncOptions(s));
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, ExpandingInts<2> s) {
  return adaptive_max_pool2d_with_indices(x, AdaptiveMaxPool2dFuncOptions(s));
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x, ExpandingInts<3> s) {
  return adaptive_max_pool3d_with_indices(x, AdaptiveMaxPool3dFuncOptions(s));
}
inline Tensor adaptive_avg_pool1d(const Tensor& x, ExpandingInts<1> s) { return adaptive_avg_pool1d(x, AdaptiveAvgPool1dFuncOptions(s)); }
inline Tensor adaptive_avg_pool3d(const Tensor& x, ExpandingInts<3> s) { return adaptive_avg_pool3d(x, AdaptiveAvgPool3dFuncOptions(s)); }

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

/// MaxPool3d(2): 2x2x2 windows, stride 2.
class MaxPool3dImpl : public Module {
 public:
  explicit MaxPool3dImpl(const MaxPool3dOptions& options);
  explicit MaxPool3dImpl(ExpandingInts<3> kernel_size) : MaxPool3dImpl(MaxPool3dOptions(kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  MaxPool3dOptions options;
};
BRISK_MODULE(MaxPool3d);

class AvgPool3dImpl : public Module {
 public:
  explicit AvgPool3dImpl(const AvgPool3dOptions& options);
  explicit AvgPool3dImpl(ExpandingInts<3> kernel_size) : AvgPool3dImpl(AvgPool3dOptions(kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  AvgPool3dOptions options;
};
BRISK_MODULE(AvgPool3d);

namespace modules_detail {
/// AdaptiveMaxPool1d/2d/3d.
template <size_t D>
class AdaptiveMaxPoolImpl : public Module {
 public:
  explicit AdaptiveMaxPoolImpl(const AdaptiveMaxPoolOptions<D>& options);
  Tensor forward(const Tensor& x) override;
  /// (values, flat indices), as F::adaptive_max_pool*_with_indices.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  AdaptiveMaxPoolOptions<D> options;
};
/// AdaptiveAvgPool1d/3d.
template <size_t D>
class AdaptiveAvgPoolImpl : public Module {
 public:
  explicit AdaptiveAvgPoolImpl(const AdaptiveAvgPoolOptions<D>& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  AdaptiveAvgPoolOptions<D> options;
};
extern template class AdaptiveMaxPoolImpl<1>;
extern template class AdaptiveMaxPoolImpl<2>;
extern template class AdaptiveMaxPoolImpl<3>;
extern template class AdaptiveAvgPoolImpl<1>;
extern template class AdaptiveAvgPoolImpl<3>;
}  // namespace modules_detail

class AdaptiveMaxPool1dImpl : public modules_detail::AdaptiveMaxPoolImpl<1> {
 public:
  using AdaptiveMaxPoolImpl::AdaptiveMaxPoolImpl;
  explicit AdaptiveMaxPool1dImpl(ExpandingInts<1> s) : AdaptiveMaxPoolImpl(AdaptiveMaxPool1dOptions(s)) {}
};
BRISK_MODULE(AdaptiveMaxPool1d);
class AdaptiveMaxPool2dImpl : public modules_detail::AdaptiveMaxPoolImpl<2> {
 public:
  using AdaptiveMaxPoolImpl::AdaptiveMaxPoolImpl;
  explicit AdaptiveMaxPool2dImpl(ExpandingInts<2> s) : AdaptiveMaxPoolImpl(AdaptiveMaxPool2dOptions(s)) {}
};
BRISK_MODULE(AdaptiveMaxPool2d);
class AdaptiveMaxPool3dImpl : public modules_detail::AdaptiveMaxPoolImpl<3> {
 public:
  using AdaptiveMaxPoolImpl::AdaptiveMaxPoolImpl;
  explicit AdaptiveMaxPool3dImpl(ExpandingInts<3> s) : AdaptiveMaxPoolImpl(AdaptiveMaxPool3dOptions(s)) {}
};
BRISK_MODULE(AdaptiveMaxPool3d);
class AdaptiveAvgPool1dImpl : public modules_detail::AdaptiveAvgPoolImpl<1> {
 public:
  using AdaptiveAvgPoolImpl::AdaptiveAvgPoolImpl;
  explicit AdaptiveAvgPool1dImpl(ExpandingInts<1> s) : AdaptiveAvgPoolImpl(AdaptiveAvgPool1dOptions(s)) {}
};
BRISK_MODULE(AdaptiveAvgPool1d);
class AdaptiveAvgPool3dImpl : public modules_detail::AdaptiveAvgPoolImpl<3> {
 public:
  using AdaptiveAvgPoolImpl::AdaptiveAvgPoolImpl;
  explicit AdaptiveAvgPool3dImpl(ExpandingInts<3> s) : AdaptiveAvgPoolImpl(AdaptiveAvgPool3dOptions(s)) {}
};
BRISK_MODULE(AdaptiveAvgPool3d);

namespace modules_detail {
template <size_t D>
class LPPoolImpl : public Module {
 public:
  explicit LPPoolImpl(const LPPoolOptions<D>& options);
  LPPoolImpl(double norm_type, ExpandingInts<D> kernel_size) : LPPoolImpl(LPPoolOptions<D>(norm_type, kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  LPPoolOptions<D> options;
};
template <size_t D>
class MaxUnpoolImpl : public Module {
 public:
  explicit MaxUnpoolImpl(const MaxUnpoolOptions<D>& options);
  explicit MaxUnpoolImpl(ExpandingInts<D> kernel_size) : MaxUnpoolImpl(MaxUnpoolOptions<D>(kernel_size)) {}
  /// output_size: as functional::MaxUnpoolFuncOptions::output_size.
  Tensor forward(const Tensor& x, const Tensor& indices,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  std::string extra_repr() const override;
  MaxUnpoolOptions<D> options;
};
extern template class LPPoolImpl<1>;
extern template class LPPoolImpl<2>;
extern template class LPPoolImpl<3>;
extern template class MaxUnpoolImpl<1>;
extern template class MaxUnpoolImpl<2>;
extern template class MaxUnpoolImpl<3>;
}  // namespace modules_detail

#define BRISK_DETAIL_POOL_MODULE(Name, Base, D)                       \
  class Name##Impl : public modules_detail::Base<D> {                 \
   public:                                                            \
    using modules_detail::Base<D>::Base;                              \
  };                                                                  \
  BRISK_MODULE(Name)
BRISK_DETAIL_POOL_MODULE(LPPool1d, LPPoolImpl, 1);
BRISK_DETAIL_POOL_MODULE(LPPool2d, LPPoolImpl, 2);
BRISK_DETAIL_POOL_MODULE(LPPool3d, LPPoolImpl, 3);
BRISK_DETAIL_POOL_MODULE(MaxUnpool1d, MaxUnpoolImpl, 1);
BRISK_DETAIL_POOL_MODULE(MaxUnpool2d, MaxUnpoolImpl, 2);
BRISK_DETAIL_POOL_MODULE(MaxUnpool3d, MaxUnpoolImpl, 3);
#undef BRISK_DETAIL_POOL_MODULE

}  // namespace brisk::nn
