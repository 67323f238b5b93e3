// Fold / Unfold of brisk::nn (libtorch's nn::Fold, nn::Unfold, F::fold,
// F::unfold): sliding blocks to columns (im2col) and back (col2im, the
// overlaps summed), composed of index_select / scatter_add, so autograd
// gives the gradients.
//
//   brisk::Tensor cols = brisk::nn::F::unfold(x, brisk::nn::F::UnfoldFuncOptions({3, 3}).padding(1));
//   brisk::Tensor back = brisk::nn::F::fold(cols, brisk::nn::F::FoldFuncOptions({8, 8}, {3, 3}).padding(1));
#pragma once
#include <string>

#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"
#include "brisk/nn/pooling.h"  // ExpandingInts

namespace brisk::nn {

struct UnfoldOptions {
  UnfoldOptions(ExpandingInts<2> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  BRISK_ARG(ExpandingInts<2>, kernel_size);
  BRISK_ARG(ExpandingInts<2>, dilation) = 1;
  BRISK_ARG(ExpandingInts<2>, padding) = 0;
  BRISK_ARG(ExpandingInts<2>, stride) = 1;
};
struct FoldOptions {
  FoldOptions(ExpandingInts<2> output_size, ExpandingInts<2> kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  BRISK_ARG(ExpandingInts<2>, output_size);
  BRISK_ARG(ExpandingInts<2>, kernel_size);
  BRISK_ARG(ExpandingInts<2>, dilation) = 1;
  BRISK_ARG(ExpandingInts<2>, padding) = 0;
  BRISK_ARG(ExpandingInts<2>, stride) = 1;
};

namespace functional {
using UnfoldFuncOptions = UnfoldOptions;
using FoldFuncOptions = FoldOptions;
/// (N, C, H, W) or (C, H, W) -> (N, C * kH * kW, L): every block as a column,
/// L blocks in row-major order (zero padded).
Tensor unfold(const Tensor& input, const UnfoldFuncOptions& o);
/// (N, C * kH * kW, L) or (C * kH * kW, L) -> (N, C, H, W) with H, W =
/// output_size: each column added back at its block (the inverse of unfold
/// where blocks do not overlap).
Tensor fold(const Tensor& input, const FoldFuncOptions& o);
}  // namespace functional

class UnfoldImpl : public Module {
 public:
  explicit UnfoldImpl(const UnfoldOptions& options) : Module("Unfold"), options(options) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  UnfoldOptions options;
};
BRISK_MODULE(Unfold);

class FoldImpl : public Module {
 public:
  explicit FoldImpl(const FoldOptions& options) : Module("Fold"), options(options) {}
  FoldImpl(ExpandingInts<2> output_size, ExpandingInts<2> kernel_size) : FoldImpl(FoldOptions(output_size, kernel_size)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  FoldOptions options;
};
BRISK_MODULE(Fold);

}  // namespace brisk::nn
