// Dropout variants of brisk::nn (nn::Dropout itself is in layers.h):
// Dropout1d/2d/3d (whole channels), AlphaDropout and FeatureAlphaDropout
// (keep a SELU network's mean and variance), as functions and modules.
//
//   namespace F = brisk::nn::functional;
//   brisk::Tensor y = F::dropout2d(x, F::Dropout2dFuncOptions().p(0.2).training(true));
//   brisk::nn::Dropout2d drop(brisk::nn::Dropout2dOptions().p(0.2));
//
// Each draws from brisk's generator (deterministic under manual_seed, not
// the same numbers as PyTorch) and is the identity when not training.
#pragma once
#include <cstdint>
#include <string>

#include "brisk/nn/functional.h"
#include "brisk/nn/layers.h"  // DropoutOptions
#include "brisk/nn/module.h"

namespace brisk::nn {

using Dropout1dOptions = DropoutOptions;
using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;
using AlphaDropoutOptions = DropoutOptions;
using FeatureAlphaDropoutOptions = DropoutOptions;

namespace functional {

/// libtorch's DropoutFuncOptions (and the Dropout1d/2d/3d, AlphaDropout,
/// FeatureAlphaDropout ones).
struct DropoutFuncOptions {
  BRISK_ARG(double, p) = 0.5;
  BRISK_ARG(bool, training) = true;
  BRISK_ARG(bool, inplace) = false;
};
using Dropout1dFuncOptions = DropoutFuncOptions;
using Dropout2dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;
using AlphaDropoutFuncOptions = DropoutFuncOptions;
using FeatureAlphaDropoutFuncOptions = DropoutFuncOptions;

Tensor dropout(const Tensor& x, const DropoutFuncOptions& o);
/// Zeroes whole channels: (N, C, L) or unbatched (C, L); each (n, c) kept
/// with probability 1 - p and scaled by 1 / (1 - p).
Tensor dropout1d(const Tensor& x, const Dropout1dFuncOptions& o = {});
/// (N, C, H, W) or (C, H, W)... as PyTorch, a 3-D input is taken as (N, C, L).
Tensor dropout2d(const Tensor& x, const Dropout2dFuncOptions& o = {});
/// (N, C, D, H, W) or unbatched (C, D, H, W).
Tensor dropout3d(const Tensor& x, const Dropout3dFuncOptions& o = {});
/// Dropped elements become SELU's negative saturation value, then an affine
/// map restores mean 0 / variance 1 (PyTorch's alpha_dropout).
Tensor alpha_dropout(const Tensor& x, const AlphaDropoutFuncOptions& o = {});
/// alpha_dropout dropping whole channels (dims 0 and 1 pick the mask).
Tensor feature_alpha_dropout(const Tensor& x, const FeatureAlphaDropoutFuncOptions& o = {});

}  // namespace functional

namespace modules_detail {
/// The module of one dropout variant; `kind` picks the function.
class DropoutVariantImpl : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  DropoutOptions options;

 protected:
  DropoutVariantImpl(const char* type_name, int kind, const DropoutOptions& options);
  int kind_;
};
}  // namespace modules_detail

#define BRISK_DETAIL_DROPOUT_MODULE(Name, kind)                                                  \
  class Name##Impl : public modules_detail::DropoutVariantImpl {                                         \
   public:                                                                                       \
    explicit Name##Impl(const DropoutOptions& options = {}) : DropoutVariantImpl(#Name, kind, options) {} \
    explicit Name##Impl(double p) : Name##Impl(DropoutOptions(p)) {}                             \
  };                                                                                             \
  BRISK_MODULE(Name)

BRISK_DETAIL_DROPOUT_MODULE(Dropout1d, 1);
BRISK_DETAIL_DROPOUT_MODULE(Dropout2d, 2);
BRISK_DETAIL_DROPOUT_MODULE(Dropout3d, 3);
BRISK_DETAIL_DROPOUT_MODULE(AlphaDropout, 4);
BRISK_DETAIL_DROPOUT_MODULE(FeatureAlphaDropout, 5);
#undef BRISK_DETAIL_DROPOUT_MODULE

}  // namespace brisk::nn
