// libtorch's enum-like option values (torch::kTanh, torch::kReLU): each is a
// tag type in brisk::enumtype and a constant of that type in brisk, so that
// options hold them in a std::variant as libtorch does
// (`nn::RNNOptions(4, 8).nonlinearity(brisk::kReLU)`).
#pragma once

namespace brisk {
namespace enumtype {
struct kTanh {};
struct kReLU {};
}  // namespace enumtype
inline constexpr enumtype::kTanh kTanh{};
inline constexpr enumtype::kReLU kReLU{};
}  // namespace brisk
