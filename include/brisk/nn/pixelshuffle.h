// PixelShuffle / PixelUnshuffle, Unflatten, and the distance layers
// (CosineSimilarity, PairwiseDistance) of brisk::nn, as functions and
// modules with libtorch's options. Composed of views and differentiable ops.
//
//   brisk::nn::PixelShuffle ps(2);                     // (N, 4C, H, W) -> (N, C, 2H, 2W)
//   brisk::Tensor s = brisk::nn::F::cosine_similarity(a, b, F::CosineSimilarityFuncOptions().dim(1));
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"

namespace brisk::nn {

struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}  // NOLINT
  BRISK_ARG(int64_t, upscale_factor);
};
struct PixelUnshuffleOptions {
  PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}  // NOLINT
  BRISK_ARG(int64_t, downscale_factor);
};
struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  BRISK_ARG(int64_t, dim);
  BRISK_ARG(std::vector<int64_t>, sizes);
};
struct CosineSimilarityOptions {
  BRISK_ARG(int64_t, dim) = 1;
  BRISK_ARG(double, eps) = 1e-8;
};
struct PairwiseDistanceOptions {
  BRISK_ARG(double, p) = 2.0;
  BRISK_ARG(double, eps) = 1e-6;
  BRISK_ARG(bool, keepdim) = false;
};

namespace functional {

using PixelShuffleFuncOptions = PixelShuffleOptions;
using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;
using CosineSimilarityFuncOptions = CosineSimilarityOptions;
using PairwiseDistanceFuncOptions = PairwiseDistanceOptions;

/// (*, C * r^2, H, W) -> (*, C, H * r, W * r).
Tensor pixel_shuffle(const Tensor& x, const PixelShuffleFuncOptions& o);
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
/// (*, C, H * r, W * r) -> (*, C * r^2, H, W), the inverse.
Tensor pixel_unshuffle(const Tensor& x, const PixelUnshuffleFuncOptions& o);
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);
/// sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) along dim, broadcasting
/// x1 and x2 (PyTorch 2's formula: each vector normalized first).
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& o = {});
/// |x1 - x2 + eps|_p along the last dim.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& o = {});

}  // namespace functional

class PixelShuffleImpl : public Module {
 public:
  explicit PixelShuffleImpl(const PixelShuffleOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  PixelShuffleOptions options;
};
BRISK_MODULE(PixelShuffle);

class PixelUnshuffleImpl : public Module {
 public:
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  PixelUnshuffleOptions options;
};
BRISK_MODULE(PixelUnshuffle);

/// Unflatten(1, {2, 3}): dim 1 of size 6 becomes dims of sizes 2 and 3 (one may be -1).
class UnflattenImpl : public Module {
 public:
  explicit UnflattenImpl(const UnflattenOptions& options) : Module("Unflatten"), options(options) {}
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  UnflattenOptions options;
};
BRISK_MODULE(Unflatten);

class CosineSimilarityImpl : public Module {
 public:
  explicit CosineSimilarityImpl(const CosineSimilarityOptions& options = {})
      : Module("CosineSimilarity"), options(options) {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  std::string extra_repr() const override;
  CosineSimilarityOptions options;
};
BRISK_MODULE(CosineSimilarity);

class PairwiseDistanceImpl : public Module {
 public:
  explicit PairwiseDistanceImpl(const PairwiseDistanceOptions& options = {})
      : Module("PairwiseDistance"), options(options) {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  std::string extra_repr() const override;
  PairwiseDistanceOptions options;
};
BRISK_MODULE(PairwiseDistance);

}  // namespace brisk::nn
