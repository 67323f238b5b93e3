// libtorch's free functions of the top namespace (torch::max_pool2d,
// torch::nll_loss, torch::dropout, torch::reshape, ..., torch::str) with
// ATen's C++ argument order, forwarding to brisk's ops and to
// brisk::nn::functional. Kernel sizes, strides and paddings are IntArrayRef
// as in ATen: one value for every dim or one per dim. The brisk::nn::F forms
// (options structs, ExpandingInts) stay the richer spelling; the porting
// table is docs/porting.md ("Tensors and the top namespace").
#pragma once
#include <array>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "brisk/nn/conv.h"
#include "brisk/nn/functional.h"
#include "brisk/nn/normalization.h"
#include "brisk/nn/pooling.h"
#include "brisk/ops.h"
#include "brisk/reduction.h"

namespace brisk {

namespace detail {
/// An ATen IntArrayRef argument of a D-dim op (one value, or D values) as
/// brisk::nn's ExpandingInts; `op` and `what` name it in the error.
template <size_t D>
nn::ExpandingInts<D> expanding_arg(IntArrayRef a, const char* op, const char* what) {
  BRISK_CHECK(a.size() == 1 || a.size() == D, op, what, " must be a single int or a list of ", D, " ints, got ", a);
  if (a.size() == 1) return nn::ExpandingInts<D>(a[0]);
  std::array<int64_t, D> v{};
  for (size_t i = 0; i < D; ++i) v[i] = a[i];
  return nn::ExpandingInts<D>(v);
}
/// An empty stride means "the kernel size" (ATen's default).
template <size_t D>
std::optional<nn::ExpandingInts<D>> stride_arg(IntArrayRef s, const char* op) {
  if (s.empty()) return std::nullopt;
  return expanding_arg<D>(s, op, "stride");
}
inline Tensor or_undefined(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }
}  // namespace detail

// ---- pooling ---------------------------------------------------------------------------
inline Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                         IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false) {
  return nn::functional::max_pool2d(self, detail::expanding_arg<2>(kernel_size, "max_pool2d", "kernel_size"),
                                    detail::stride_arg<2>(stride, "max_pool2d"),
                                    detail::expanding_arg<2>(padding, "max_pool2d", "padding"),
                                    detail::expanding_arg<2>(dilation, "max_pool2d", "dilation"), ceil_mode);
}
inline std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                          IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                          IntArrayRef dilation = 1, bool ceil_mode = false) {
  return nn::functional::max_pool2d_with_indices(
      self, detail::expanding_arg<2>(kernel_size, "max_pool2d_with_indices", "kernel_size"),
      detail::stride_arg<2>(stride, "max_pool2d_with_indices"),
      detail::expanding_arg<2>(padding, "max_pool2d_with_indices", "padding"),
      detail::expanding_arg<2>(dilation, "max_pool2d_with_indices", "dilation"), ceil_mode);
}
inline Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                         IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false) {
  return nn::functional::max_pool1d(self, detail::expanding_arg<1>(kernel_size, "max_pool1d", "kernel_size"),
                                    detail::stride_arg<1>(stride, "max_pool1d"),
                                    detail::expanding_arg<1>(padding, "max_pool1d", "padding"),
                                    detail::expanding_arg<1>(dilation, "max_pool1d", "dilation"), ceil_mode);
}
inline Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                         IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                         std::optional<int64_t> divisor_override = std::nullopt) {
  return nn::functional::avg_pool2d(self, detail::expanding_arg<2>(kernel_size, "avg_pool2d", "kernel_size"),
                                    detail::stride_arg<2>(stride, "avg_pool2d"),
                                    detail::expanding_arg<2>(padding, "avg_pool2d", "padding"), ceil_mode,
                                    count_include_pad, divisor_override);
}
inline Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                         IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true) {
  return nn::functional::avg_pool1d(self, detail::expanding_arg<1>(kernel_size, "avg_pool1d", "kernel_size"),
                                    detail::stride_arg<1>(stride, "avg_pool1d"),
                                    detail::expanding_arg<1>(padding, "avg_pool1d", "padding"), ceil_mode,
                                    count_include_pad);
}
inline Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  return nn::functional::adaptive_avg_pool2d(self,
                                             detail::expanding_arg<2>(output_size, "adaptive_avg_pool2d", "output_size"));
}

// ---- dropout ------------------------------------------------------------------------------
/// Zeroes elements with probability p and scales the rest by 1 / (1 - p) when train.
inline Tensor dropout(const Tensor& input, double p, bool train) { return nn::functional::dropout(input, p, train); }
/// Zeroes whole channels (dim 1 of an (N, C, ...) input; dim 0 of an
/// unbatched (C, ...) one as the 2-D case of ATen does not exist: the input
/// needs 2+ dims) with probability p, scaling the others by 1 / (1 - p).
Tensor feature_dropout(const Tensor& input, double p, bool train);

// ---- losses (ATen's argument order: weight, reduction, then the rest) -----------------------
inline Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {},
                       Reduction reduction = Reduction::Mean, int64_t ignore_index = -100) {
  return nn::functional::nll_loss(
      self, target, nn::functional::NLLLossFuncOptions(reduction).weight(detail::or_undefined(weight)).ignore_index(ignore_index));
}
/// ATen's name for cross entropy on logits (nn::functional::cross_entropy).
inline Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {},
                                 Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                                 double label_smoothing = 0.0) {
  return nn::functional::cross_entropy(self, target,
                                       nn::functional::CrossEntropyFuncOptions(reduction)
                                           .weight(detail::or_undefined(weight))
                                           .ignore_index(ignore_index)
                                           .label_smoothing(label_smoothing));
}
inline Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {},
                                   Reduction reduction = Reduction::Mean) {
  return nn::functional::binary_cross_entropy(
      self, target, nn::functional::BinaryCrossEntropyFuncOptions(reduction).weight(detail::or_undefined(weight)));
}
inline Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                               const std::optional<Tensor>& weight = {},
                                               const std::optional<Tensor>& pos_weight = {},
                                               Reduction reduction = Reduction::Mean) {
  return nn::functional::binary_cross_entropy_with_logits(self, target,
                                                          nn::functional::BinaryCrossEntropyWithLogitsFuncOptions(reduction)
                                                              .weight(detail::or_undefined(weight))
                                                              .pos_weight(detail::or_undefined(pos_weight)));
}
inline Tensor mse_loss(const Tensor& self, const Tensor& target, Reduction reduction = Reduction::Mean) {
  return nn::functional::mse_loss(self, target, reduction);
}
inline Tensor l1_loss(const Tensor& self, const Tensor& target, Reduction reduction = Reduction::Mean) {
  return nn::functional::l1_loss(self, target, reduction);
}
inline Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, Reduction reduction = Reduction::Mean,
                             double beta = 1.0) {
  return nn::functional::smooth_l1_loss(self, target, nn::functional::SmoothL1LossFuncOptions(reduction).beta(beta));
}
inline Tensor huber_loss(const Tensor& self, const Tensor& target, Reduction reduction = Reduction::Mean,
                         double delta = 1.0) {
  return nn::functional::huber_loss(self, target, nn::functional::HuberLossFuncOptions(reduction).delta(delta));
}
inline Tensor kl_div(const Tensor& self, const Tensor& target, Reduction reduction = Reduction::Mean,
                     bool log_target = false) {
  return nn::functional::kl_div(self, target, nn::functional::KLDivFuncOptions(reduction).log_target(log_target));
}

// ---- activations ----------------------------------------------------------------------------
// relu, gelu, silu, sigmoid, tanh, softmax, log_softmax, softplus, ...:
// brisk/ops.h. Their in-place forms as free functions (torch::relu_(x)):
#define BRISK_DETAIL_FREE_INPLACE_Full(name) \
  inline Tensor& name##_(const Tensor& self) { return self.name##_(); }
#define BRISK_DETAIL_FREE_INPLACE_NoInplace(name)
#define BRISK_DETAIL_FREE_INPLACE_FreeInplace(name)
#define BRISK_DETAIL_FREE_INPLACE_Custom(name)
#define BRISK_DETAIL_FREE_INPLACE(ctx, name, group, dtypes, amp, forms) BRISK_DETAIL_FREE_INPLACE_##forms(name)
BRISK_FORALL_UNARY_OPS(BRISK_DETAIL_FREE_INPLACE, _)
#undef BRISK_DETAIL_FREE_INPLACE
#undef BRISK_DETAIL_FREE_INPLACE_Full
#undef BRISK_DETAIL_FREE_INPLACE_NoInplace
#undef BRISK_DETAIL_FREE_INPLACE_FreeInplace
#undef BRISK_DETAIL_FREE_INPLACE_Custom
inline Tensor& gelu_(const Tensor& self, std::string_view approximate = "none") { return self.gelu_(approximate); }

// ---- layers ---------------------------------------------------------------------------------
inline Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {}) {
  return nn::functional::linear(input, weight, detail::or_undefined(bias));
}
/// String paddings ("same", "valid") are nn::functional::conv2d's.
inline Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                     IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1) {
  return nn::functional::conv2d(input, weight, detail::or_undefined(bias),
                                detail::expanding_arg<2>(stride, "conv2d", "stride"),
                                detail::expanding_arg<2>(padding, "conv2d", "padding"),
                                detail::expanding_arg<2>(dilation, "conv2d", "dilation"), groups);
}
inline Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                     IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1) {
  return nn::functional::conv1d(input, weight, detail::or_undefined(bias),
                                detail::expanding_arg<1>(stride, "conv1d", "stride"),
                                detail::expanding_arg<1>(padding, "conv1d", "padding"),
                                detail::expanding_arg<1>(dilation, "conv1d", "dilation"), groups);
}
inline Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                               IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef output_padding = 0,
                               int64_t groups = 1, IntArrayRef dilation = 1) {
  return nn::functional::conv_transpose2d(input, weight, detail::or_undefined(bias),
                                          detail::expanding_arg<2>(stride, "conv_transpose2d", "stride"),
                                          detail::expanding_arg<2>(padding, "conv_transpose2d", "padding"),
                                          detail::expanding_arg<2>(output_padding, "conv_transpose2d", "output_padding"),
                                          groups, detail::expanding_arg<2>(dilation, "conv_transpose2d", "dilation"));
}
/// ATen's order: weight and bias before the running statistics.
/// `cudnn_enabled` is accepted and ignored (brisk picks its kernels).
inline Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                         const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                         bool training, double momentum, double eps, bool cudnn_enabled = true) {
  (void)cudnn_enabled;
  return nn::functional::batch_norm(input, detail::or_undefined(running_mean), detail::or_undefined(running_var),
                                    detail::or_undefined(weight), detail::or_undefined(bias), training, momentum, eps);
}
inline Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight = {},
                         const std::optional<Tensor>& bias = {}, double eps = 1e-5, bool cudnn_enable = true) {
  (void)cudnn_enable;
  return nn::functional::layer_norm(input, normalized_shape.vec(), detail::or_undefined(weight),
                                    detail::or_undefined(bias), eps);
}
inline Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight = {},
                         const std::optional<Tensor>& bias = {}, double eps = 1e-5, bool cudnn_enabled = true) {
  (void)cudnn_enabled;
  return nn::functional::group_norm(input, num_groups, detail::or_undefined(weight), detail::or_undefined(bias), eps);
}
/// ATen's order: the weight first. padding_idx < 0 means none;
/// scale_grad_by_freq and sparse gradients are not supported (an error).
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false, bool sparse = false);

// ---- shape and copies (as the Tensor methods) ------------------------------------------------
inline Tensor reshape(const Tensor& self, IntArrayRef shape) { return self.reshape(shape); }
inline Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1) {
  return self.flatten(start_dim, end_dim);
}
inline Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) { return self.unflatten(dim, sizes); }
inline Tensor squeeze(const Tensor& self) { return self.squeeze(); }
inline Tensor squeeze(const Tensor& self, int64_t dim) { return self.squeeze(dim); }
inline Tensor unsqueeze(const Tensor& self, int64_t dim) { return self.unsqueeze(dim); }
inline Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) { return self.transpose(dim0, dim1); }
inline Tensor permute(const Tensor& self, IntArrayRef dims) { return self.permute(dims); }
inline Tensor t(const Tensor& self) { return self.t(); }
inline Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  return self.narrow(dim, start, length);
}
inline Tensor select(const Tensor& self, int64_t dim, int64_t index) { return self.select(dim, index); }
inline std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0) { return self.chunk(chunks, dim); }
inline std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0) {
  return self.split(split_size, dim);
}
inline std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0) { return self.unbind(dim); }
inline Tensor clone(const Tensor& self) { return self.clone(); }
inline Tensor detach(const Tensor& self) { return self.detach(); }
inline Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return self.masked_fill(mask, value);
}
inline int64_t numel(const Tensor& self) { return self.numel(); }

// ---- strings ------------------------------------------------------------------------------------
/// Everything streamed into one string (torch::str / c10::str): str("shape ", x.sizes()).
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace brisk
