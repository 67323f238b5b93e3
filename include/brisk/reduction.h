// How a loss reduces its per-element values, in the top namespace as
// libtorch spells it (torch::kSum, torch::Reduction::Sum); brisk::nn::
// Reduction and brisk::nn::kSum name the same enum (brisk/nn/functional.h).
#pragma once
#include <cstdint>

namespace brisk {

/// None keeps the per-element values; Mean and Sum reduce them. BatchMean
/// (sum / batch size) is accepted by kl_div only.
enum class Reduction : int8_t { None, Mean, Sum, BatchMean };
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
inline constexpr Reduction kBatchMean = Reduction::BatchMean;

}  // namespace brisk
