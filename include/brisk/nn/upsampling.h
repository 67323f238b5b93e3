// Resampling of brisk::nn: functional::interpolate and the Upsample module.
//
//   namespace F = brisk::nn::functional;
//   brisk::Tensor y = F::interpolate(x, F::InterpolateFuncOptions()
//                                           .size(std::vector<int64_t>{64, 64})
//                                           .mode(brisk::kBilinear)
//                                           .align_corners(false));
//   brisk::nn::Upsample up(
//       brisk::nn::UpsampleOptions().scale_factor(std::vector<double>{2}).mode(brisk::kNearest));
//
// Inputs are (N, C, W), (N, C, H, W) or (N, C, D, H, W); the mode fixes the
// rank for the interpolating modes (linear 3-D, bilinear and bicubic 4-D,
// trilinear 5-D). Coordinates follow PyTorch 2 exactly (see
// src/nn/upsampling.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"

namespace brisk {
namespace nn {

/// How interpolate computes each output element.
enum class InterpolateMode : int8_t {
  Nearest,       ///< the input element at floor(dst * scale) (PyTorch's "nearest")
  NearestExact,  ///< at floor((dst + 0.5) * scale): pixel centres ("nearest-exact")
  Linear,        ///< 3-D inputs
  Bilinear,      ///< 4-D inputs
  Bicubic,       ///< 4-D inputs, Keys cubic convolution (a = -0.75), borders replicated
  Trilinear,     ///< 5-D inputs
  Area,          ///< adaptive average pooling to the output size
};
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;
inline constexpr InterpolateMode kNearestExact = InterpolateMode::NearestExact;
inline constexpr InterpolateMode kLinear = InterpolateMode::Linear;
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;
inline constexpr InterpolateMode kBicubic = InterpolateMode::Bicubic;
inline constexpr InterpolateMode kTrilinear = InterpolateMode::Trilinear;
inline constexpr InterpolateMode kArea = InterpolateMode::Area;
/// PyTorch's name of a mode: "nearest", "nearest-exact", "bilinear", ...
const char* mode_name(InterpolateMode m);

namespace functional {

/// libtorch's InterpolateFuncOptions. Exactly one of size and scale_factor;
/// either holds one value per spatial dim or a single value used for all.
struct InterpolateFuncOptions {
  BRISK_ARG(std::optional<std::vector<int64_t>>, size);
  /// The output size is floor(input size * scale_factor).
  BRISK_ARG(std::optional<std::vector<double>>, scale_factor);
  BRISK_ARG(InterpolateMode, mode) = kNearest;
  /// Interpolating modes only (linear, bilinear, bicubic, trilinear): map
  /// the corner pixels' centres onto each other. Unset means false.
  BRISK_ARG(std::optional<bool>, align_corners);
  /// With scale_factor: compute the coordinates from the output size (as if
  /// it had been given) rather than from the scale factor. Area always does.
  BRISK_ARG(std::optional<bool>, recompute_scale_factor);
  /// Not supported (PyTorch's anti-aliased bilinear/bicubic): true throws.
  BRISK_ARG(bool, antialias) = false;
};

/// Up- or down-samples the spatial dims of x: (N, C, d1[, d2[, d3]]).
/// Float32 and float64 (float16 and bfloat16 compute in float32); the nearest
/// modes also take uint8. Differentiable (the composites' gradients).
Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& options = {});

}  // namespace functional

/// Options of nn::Upsample (PyTorch's nn.Upsample arguments).
struct UpsampleOptions {
  BRISK_ARG(std::optional<std::vector<int64_t>>, size);
  BRISK_ARG(std::optional<std::vector<double>>, scale_factor);
  BRISK_ARG(InterpolateMode, mode) = kNearest;
  BRISK_ARG(std::optional<bool>, align_corners);
  BRISK_ARG(std::optional<bool>, recompute_scale_factor);
};

/// Upsample(UpsampleOptions().scale_factor(std::vector<double>{2})):
/// functional::interpolate with the module's options.
class UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options = {});
  Tensor forward(const Tensor& x) override;
  /// "scale_factor=2.0, mode='nearest'" or "size=(4, 4), mode='bilinear'" (PyTorch's).
  std::string extra_repr() const override;
  UpsampleOptions options;
};
BRISK_MODULE(Upsample);

}  // namespace nn

// libtorch spells the modes torch::kNearest, torch::kBilinear, ...
using nn::kArea;
using nn::kBicubic;
using nn::kBilinear;
using nn::kLinear;
using nn::kNearest;
using nn::kNearestExact;
using nn::kTrilinear;

}  // namespace brisk
