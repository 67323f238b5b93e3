// nn::init (in-place initializers) and nn::utils (gradient clipping).
#include <cmath>

#include "brisk/autograd.h"
#include "brisk/nn/init.h"
#include "brisk/ops.h"

namespace brisk::nn {
namespace init {

double calculate_gain(std::string_view nl, double param) {
  if (nl == "linear" || nl == "conv1d" || nl == "conv2d" || nl == "conv3d" || nl == "conv_transpose1d" ||
      nl == "conv_transpose2d" || nl == "conv_transpose3d" || nl == "sigmoid")
    return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nl == "selu") return 3.0 / 4.0;
  BRISK_FAIL("calculate_gain", "unsupported nonlinearity '", nl, "'");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  BRISK_CHECK(t.defined() && t.dim() >= 2, "init",
              "fan in and fan out cannot be computed for a tensor with fewer than 2 dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

namespace {
void check_target(const char* op, const Tensor& t) {
  BRISK_CHECK(t.defined(), op, "the tensor is undefined");
  BRISK_CHECK(t.is_floating_point(), op, "expected a floating point tensor, got ", t.dtype());
}
int64_t fan_of(const Tensor& t, FanMode mode) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return mode == kFanIn ? in : out;
}
}  // namespace

Tensor uniform_(Tensor t, double a, double b) {
  check_target("uniform_", t);
  NoGradGuard no_grad;
  t.uniform_(a, b);
  return t;
}
Tensor normal_(Tensor t, double mean, double std) {
  check_target("normal_", t);
  NoGradGuard no_grad;
  t.normal_(mean, std);
  return t;
}
Tensor constant_(Tensor t, double value) {
  BRISK_CHECK(t.defined(), "constant_", "the tensor is undefined");
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}
Tensor zeros_(Tensor t) { return constant_(std::move(t), 0.0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1.0); }

Tensor xavier_uniform_(Tensor t, double gain) {
  check_target("xavier_uniform_", t);
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  if (t.numel() == 0) return t;
  const double a = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return uniform_(std::move(t), -a, a);
}
Tensor xavier_normal_(Tensor t, double gain) {
  check_target("xavier_normal_", t);
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  if (t.numel() == 0) return t;
  return normal_(std::move(t), 0.0, gain * std::sqrt(2.0 / static_cast<double>(in + out)));
}
Tensor kaiming_uniform_(Tensor t, double a, FanMode mode, std::string_view nonlinearity) {
  check_target("kaiming_uniform_", t);
  const int64_t fan = fan_of(t, mode);
  if (t.numel() == 0) return t;  // PyTorch: a no-op on zero-element tensors
  const double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  return uniform_(std::move(t), -bound, bound);
}
Tensor kaiming_normal_(Tensor t, double a, FanMode mode, std::string_view nonlinearity) {
  check_target("kaiming_normal_", t);
  const int64_t fan = fan_of(t, mode);
  if (t.numel() == 0) return t;
  return normal_(std::move(t), 0.0, calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan)));
}

}  // namespace init

namespace utils {

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  const bool inf_norm = std::isinf(norm_type);
  for (const Tensor& g : grads)
    norms.push_back((inf_norm ? g.abs().max() : g.norm(norm_type)).to(kDouble));
  Tensor all = stack(norms);
  const double total = (inf_norm ? all.max() : all.norm(norm_type)).item<double>();
  BRISK_CHECK(!error_if_nonfinite || std::isfinite(total), "clip_grad_norm_", "the total norm of order ", norm_type,
              " of the gradients is non-finite (", total,
              "), so it cannot be clipped; pass error_if_nonfinite = false to clip anyway");
  const double coef = max_norm / (total + 1e-6);
  if (!(coef >= 1.0))  // also when the total is NaN, as PyTorch does
    for (const Tensor& p : params)
      if (p.defined() && p.grad().defined()) p.mutable_grad().mul_(coef);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined()) p.mutable_grad().clamp_(-clip_value, clip_value);
}

}  // namespace utils
}  // namespace brisk::nn
