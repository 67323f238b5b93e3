// brisk::nn::init: in-place initializers (run under NoGradGuard, so they work
// on parameters that require grad) and brisk::nn::utils gradient clipping.
#pragma once
#include <string_view>
#include <utility>
#include <vector>

#include "brisk/tensor.h"

namespace brisk::nn {
namespace init {

enum class FanMode : int8_t { FanIn, FanOut };
inline constexpr FanMode kFanIn = FanMode::FanIn;
inline constexpr FanMode kFanOut = FanMode::FanOut;

/// The recommended gain for a nonlinearity: "linear", "conv1d/2d/3d",
/// "sigmoid" -> 1, "tanh" -> 5/3, "relu" -> sqrt(2), "leaky_relu" ->
/// sqrt(2 / (1 + param^2)) (param = negative slope, 0.01 by default), "selu" -> 3/4.
double calculate_gain(std::string_view nonlinearity, double param = 0.01);
/// (fan_in, fan_out) of a weight of at least 2 dims: size(1) and size(0)
/// times the product of the remaining (receptive field) dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

Tensor uniform_(Tensor t, double a = 0.0, double b = 1.0);
Tensor normal_(Tensor t, double mean = 0.0, double std = 1.0);
Tensor constant_(Tensor t, double value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);
/// U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform_(Tensor t, double gain = 1.0);
/// N(0, std), std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor t, double gain = 1.0);
/// U(-bound, bound), bound = gain(nonlinearity, a) * sqrt(3 / fan).
Tensor kaiming_uniform_(Tensor t, double a = 0.0, FanMode mode = kFanIn, std::string_view nonlinearity = "leaky_relu");
/// N(0, std), std = gain(nonlinearity, a) / sqrt(fan).
Tensor kaiming_normal_(Tensor t, double a = 0.0, FanMode mode = kFanIn, std::string_view nonlinearity = "leaky_relu");

}  // namespace init

namespace utils {
/// Scales the gradients of `params` in place so that their joint norm (the
/// norm of the per-tensor norms; norm_type may be INFINITY) is at most
/// max_norm. Returns the total norm before clipping. A NaN or infinite total
/// throws brisk::Error only when error_if_nonfinite.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
/// Clamps every gradient of `params` to [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);
}  // namespace utils

}  // namespace brisk::nn
