// Convolutions of brisk::nn: conv1d/2d/3d and conv_transpose1d/2d/3d as
// functions (nn::functional) and modules (Conv1d, ..., ConvTranspose3d).
//
//   namespace F = brisk::nn::functional;
//   brisk::Tensor y = F::conv2d(x, w, b, /*stride=*/1, /*padding=*/1);
//   brisk::Tensor z = F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).padding("same").groups(2));
//   brisk::nn::Conv2d conv(brisk::nn::Conv2dOptions(1, 32, 3).padding(1).bias(false));
//
// Inputs are (N, C, H, W) or unbatched (C, H, W) for 2-D convolutions,
// (N, C, L) or (C, L) for 1-D ones; weights are (out, in / groups, kH, kW)
// and, for transposed convolutions, (in, out / groups, kH, kW), as PyTorch.
// float32 runs on oneDNN (when brisk is built with it); a channels_last input
// gives a channels_last output (and gradient), computed in that layout.
// float64 (and float32 without oneDNN) use im2col + GEMM; float16/bfloat16
// compute in float32. See docs/design/conv.md.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"
#include "brisk/nn/padding.h"  // PadMode for padding_mode
#include "brisk/nn/pooling.h"  // ExpandingInts

namespace brisk::nn {

/// Zero padding of a convolution: D integers (one integer for all dims, as
/// ExpandingInts) or PyTorch's strings "valid" (none) and "same" (output
/// size = input size; stride 1 only; an odd total goes one more to the
/// right/bottom, as PyTorch).
template <size_t D>
class ConvPadding {
 public:
  ConvPadding(int64_t v) : ints_(v) {}
  ConvPadding(int v) : ints_(int64_t(v)) {}  // exact match for a literal 0 (else ambiguous with const char*)
  ConvPadding(std::initializer_list<int64_t> l) : ints_(l) {}
  ConvPadding(ExpandingInts<D> v) : ints_(v) {}
  ConvPadding(const std::array<int64_t, D>& a) : ints_(a) {}
  ConvPadding(const char* mode) : ints_(0), mode_(mode ? mode : "") {}
  ConvPadding(std::string mode) : ints_(0), mode_(std::move(mode)) {}

  /// "" when given as integers, else the string ("same", "valid", or a
  /// wrong one that the op refuses).
  const std::string& mode() const { return mode_; }
  bool is_same() const { return mode_ == "same"; }
  bool is_valid() const { return mode_ == "valid"; }
  const ExpandingInts<D>& ints() const { return ints_; }
  /// PyTorch's printing: "(1, 1)" (always D integers) or "same".
  std::string str() const {
    if (!mode_.empty()) return mode_;
    std::string s = "(";
    for (size_t i = 0; i < D; ++i) s += (i ? ", " : "") + std::to_string(ints_[i]);
    return s + (D == 1 ? ",)" : ")");
  }

 private:
  ExpandingInts<D> ints_;
  std::string mode_;
};

/// How a Conv module pads its input (libtorch's padding_mode): kZeros (the
/// convolution's own zero padding), or brisk::kReflect, kReplicate,
/// kCircular (F::pad in that mode, then an unpadded convolution).
class ConvPaddingMode {
 public:
  enum class Kind : int8_t { Zeros, Reflect, Replicate, Circular };
  constexpr ConvPaddingMode(Kind k = Kind::Zeros) : kind_(k) {}  // NOLINT: implicit, for kZeros
  ConvPaddingMode(PadMode m);                                    // NOLINT: implicit, for kReflect, ...
  Kind kind() const { return kind_; }
  bool is_zeros() const { return kind_ == Kind::Zeros; }
  /// PyTorch's name: "zeros", "reflect", "replicate", "circular".
  const char* name() const;
  /// The F::pad mode (not for zeros).
  PadMode pad_mode() const;
  bool operator==(const ConvPaddingMode& o) const { return kind_ == o.kind_; }

 private:
  Kind kind_;
};
inline constexpr ConvPaddingMode::Kind kZeros = ConvPaddingMode::Kind::Zeros;

// ---- options --------------------------------------------------------------------------

/// Options of the Conv1d/Conv2d modules: Conv2dOptions(1, 32, 3).padding(1).bias(false).
template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingInts<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  BRISK_ARG(int64_t, in_channels);
  BRISK_ARG(int64_t, out_channels);
  BRISK_ARG(ExpandingInts<D>, kernel_size);
  BRISK_ARG(ExpandingInts<D>, stride) = 1;
  BRISK_ARG(ConvPadding<D>, padding) = 0;
  BRISK_ARG(ExpandingInts<D>, dilation) = 1;
  BRISK_ARG(int64_t, groups) = 1;
  BRISK_ARG(bool, bias) = true;
  BRISK_ARG(ConvPaddingMode, padding_mode) = kZeros;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

/// Options of the ConvTranspose2d module (padding is integers only).
template <size_t D>
struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingInts<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  BRISK_ARG(int64_t, in_channels);
  BRISK_ARG(int64_t, out_channels);
  BRISK_ARG(ExpandingInts<D>, kernel_size);
  BRISK_ARG(ExpandingInts<D>, stride) = 1;
  /// Rows/columns cut from each side of the full transposed output:
  /// out = (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.
  BRISK_ARG(ExpandingInts<D>, padding) = 0;
  /// Extra rows/columns on the bottom/right of the output (smaller than
  /// stride or dilation): picks one of the input sizes a strided
  /// convolution maps to the same output size.
  BRISK_ARG(ExpandingInts<D>, output_padding) = 0;
  BRISK_ARG(int64_t, groups) = 1;
  BRISK_ARG(bool, bias) = true;
  BRISK_ARG(ExpandingInts<D>, dilation) = 1;
  /// Only kZeros (as PyTorch): the modules refuse the others.
  BRISK_ARG(ConvPaddingMode, padding_mode) = kZeros;
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
using ConvTranspose3dOptions = ConvTransposeOptions<3>;

/// Options of functional::conv1d/conv2d (the bias travels here, as in libtorch).
template <size_t D>
struct ConvFuncOptions {
  BRISK_ARG(Tensor, bias);
  BRISK_ARG(ExpandingInts<D>, stride) = 1;
  BRISK_ARG(ConvPadding<D>, padding) = 0;
  BRISK_ARG(ExpandingInts<D>, dilation) = 1;
  BRISK_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;
using Conv3dFuncOptions = ConvFuncOptions<3>;

template <size_t D>
struct ConvTransposeFuncOptions {
  BRISK_ARG(Tensor, bias);
  BRISK_ARG(ExpandingInts<D>, stride) = 1;
  BRISK_ARG(ExpandingInts<D>, padding) = 0;
  BRISK_ARG(ExpandingInts<D>, output_padding) = 0;
  BRISK_ARG(int64_t, groups) = 1;
  BRISK_ARG(ExpandingInts<D>, dilation) = 1;
};
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions<1>;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;
using ConvTranspose3dFuncOptions = ConvTransposeFuncOptions<3>;

namespace functional {

using nn::Conv1dFuncOptions;
using nn::Conv2dFuncOptions;
using nn::Conv3dFuncOptions;
using nn::ConvTranspose1dFuncOptions;
using nn::ConvTranspose2dFuncOptions;
using nn::ConvTranspose3dFuncOptions;

/// 2-D cross-correlation (PyTorch's conv2d). x: (N, C, H, W) or (C, H, W);
/// weight: (O, C / groups, kH, kW); bias: (O) or undefined. Output
/// (N, O, OH, OW) with OH = (H + 2 * padding - dilation * (kH - 1) - 1) / stride + 1.
/// Records ConvolutionBackward0 (gradients of input, weight and bias; under
/// create_graph they are differentiable again, to any order).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, ExpandingInts<2> stride = 1,
              ConvPadding<2> padding = 0, ExpandingInts<2> dilation = 1, int64_t groups = 1);
Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dFuncOptions& o);

/// 1-D cross-correlation. x: (N, C, L) or (C, L); weight: (O, C / groups, k).
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, ExpandingInts<1> stride = 1,
              ConvPadding<1> padding = 0, ExpandingInts<1> dilation = 1, int64_t groups = 1);
Tensor conv1d(const Tensor& x, const Tensor& weight, const Conv1dFuncOptions& o);

/// The gradient of conv2d with respect to its input, as an op (PyTorch's
/// conv_transpose2d). x: (N, C, H, W) or (C, H, W); weight: (C, O / groups,
/// kH, kW). Output (N, O, OH, OW) with
/// OH = (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1.
/// Note the argument order of PyTorch: groups before dilation.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, ExpandingInts<2> stride = 1,
                        ExpandingInts<2> padding = 0, ExpandingInts<2> output_padding = 0, int64_t groups = 1,
                        ExpandingInts<2> dilation = 1);
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const ConvTranspose2dFuncOptions& o);

/// 3-D cross-correlation. x: (N, C, D, H, W) or (C, D, H, W); weight:
/// (O, C / groups, kD, kH, kW). Computed as kD 2-D convolutions (one per
/// depth tap, the output depths folded into the batch) summed, so the
/// gradients (and double backward) are conv2d's.
Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, ExpandingInts<3> stride = 1,
              ConvPadding<3> padding = 0, ExpandingInts<3> dilation = 1, int64_t groups = 1);
Tensor conv3d(const Tensor& x, const Tensor& weight, const Conv3dFuncOptions& o);

/// 1-D transposed convolution. x: (N, C, L) or (C, L); weight: (C, O / groups, k).
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, ExpandingInts<1> stride = 1,
                        ExpandingInts<1> padding = 0, ExpandingInts<1> output_padding = 0, int64_t groups = 1,
                        ExpandingInts<1> dilation = 1);
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const ConvTranspose1dFuncOptions& o);

/// 3-D transposed convolution. x: (N, C, D, H, W) or (C, D, H, W); weight:
/// (C, O / groups, kD, kH, kW). Computed as kD 2-D transposed convolutions
/// (the input depths folded into the batch), each placed at its output
/// depths and summed.
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, ExpandingInts<3> stride = 1,
                        ExpandingInts<3> padding = 0, ExpandingInts<3> output_padding = 0, int64_t groups = 1,
                        ExpandingInts<3> dilation = 1);
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const ConvTranspose3dFuncOptions& o);

}  // namespace functional

// ---- modules ------------------------------------------------------------------------
// PyTorch's init: kaiming_uniform_(weight, a = sqrt(5)), i.e. U(+-1/sqrt(fan_in)),
// and bias ~ U(+-1/sqrt(fan_in)), fan_in = weight.size(1) * kH * kW.

/// Conv2d(Conv2dOptions(1, 32, 3).padding(1)): weight (32, 1, 3, 3), bias (32).
class Conv2dImpl : public Module {
 public:
  explicit Conv2dImpl(const Conv2dOptions& options, TensorOptions opts = {});
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingInts<2> kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();
  Conv2dOptions options;
  Tensor weight;  ///< (out, in / groups, kH, kW)
  Tensor bias;    ///< (out), undefined without bias
};
BRISK_MODULE(Conv2d);

/// Conv1d(Conv1dOptions(16, 32, 5).stride(2)): weight (32, 16, 5).
class Conv1dImpl : public Module {
 public:
  explicit Conv1dImpl(const Conv1dOptions& options, TensorOptions opts = {});
  Conv1dImpl(int64_t in_channels, int64_t out_channels, ExpandingInts<1> kernel_size)
      : Conv1dImpl(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();
  Conv1dOptions options;
  Tensor weight;  ///< (out, in / groups, k)
  Tensor bias;    ///< (out)
};
BRISK_MODULE(Conv1d);

/// ConvTranspose2d(ConvTranspose2dOptions(32, 16, 4).stride(2).padding(1)):
/// weight (32, 16, 4, 4) (in, out / groups, kH, kW), doubling H and W.
class ConvTranspose2dImpl : public Module {
 public:
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options, TensorOptions opts = {});
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, ExpandingInts<2> kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();
  ConvTranspose2dOptions options;
  Tensor weight;  ///< (in, out / groups, kH, kW)
  Tensor bias;    ///< (out)
};
BRISK_MODULE(ConvTranspose2d);

/// Conv3d(Conv3dOptions(4, 8, 3).padding(1)): weight (8, 4, 3, 3, 3).
class Conv3dImpl : public Module {
 public:
  explicit Conv3dImpl(const Conv3dOptions& options, TensorOptions opts = {});
  Conv3dImpl(int64_t in_channels, int64_t out_channels, ExpandingInts<3> kernel_size)
      : Conv3dImpl(Conv3dOptions(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();
  Conv3dOptions options;
  Tensor weight;  ///< (out, in / groups, kD, kH, kW)
  Tensor bias;    ///< (out)
};
BRISK_MODULE(Conv3d);

/// ConvTranspose1d(ConvTranspose1dOptions(16, 8, 4).stride(2)): weight (16, 8, 4).
class ConvTranspose1dImpl : public Module {
 public:
  explicit ConvTranspose1dImpl(const ConvTranspose1dOptions& options, TensorOptions opts = {});
  ConvTranspose1dImpl(int64_t in_channels, int64_t out_channels, ExpandingInts<1> kernel_size)
      : ConvTranspose1dImpl(ConvTranspose1dOptions(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();
  ConvTranspose1dOptions options;
  Tensor weight;  ///< (in, out / groups, k)
  Tensor bias;    ///< (out)
};
BRISK_MODULE(ConvTranspose1d);

/// ConvTranspose3d(ConvTranspose3dOptions(8, 4, 2).stride(2)): weight (8, 4, 2, 2, 2).
class ConvTranspose3dImpl : public Module {
 public:
  explicit ConvTranspose3dImpl(const ConvTranspose3dOptions& options, TensorOptions opts = {});
  ConvTranspose3dImpl(int64_t in_channels, int64_t out_channels, ExpandingInts<3> kernel_size)
      : ConvTranspose3dImpl(ConvTranspose3dOptions(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();
  ConvTranspose3dOptions options;
  Tensor weight;  ///< (in, out / groups, kD, kH, kW)
  Tensor bias;    ///< (out)
};
BRISK_MODULE(ConvTranspose3d);

}  // namespace brisk::nn

namespace brisk {
using nn::kZeros;  // libtorch's torch::kZeros (padding_mode)
}  // namespace brisk
