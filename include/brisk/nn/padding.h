// Padding of brisk::nn: functional::pad with libtorch's modes (constant,
// reflect, replicate, circular) and the modules ZeroPad1d/2d/3d,
// ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d and ReplicationPad1d/2d/3d.
//
//   namespace F = brisk::nn::functional;
//   brisk::Tensor y = F::pad(x, F::PadFuncOptions({1, 1, 2, 0}).mode(brisk::kReflect));
//   brisk::nn::ReflectionPad2d pad(brisk::nn::ReflectionPad2dOptions({1, 1, 2, 0}));
//
// The pad list holds (before, after) pairs starting from the last dim, as
// PyTorch. Non-constant modes pad the last 1, 2 or 3 dims of an input with
// one or two more dims (batch and channel, or channel only), and are
// composed of index_select, so the gradients are index_select's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"
#include "brisk/nn/pooling.h"  // ExpandingInts

namespace brisk {
namespace nn {

enum class PadMode : int8_t { Constant, Reflect, Replicate, Circular };
inline constexpr PadMode kConstant = PadMode::Constant;
inline constexpr PadMode kReflect = PadMode::Reflect;
inline constexpr PadMode kReplicate = PadMode::Replicate;
inline constexpr PadMode kCircular = PadMode::Circular;
/// PyTorch's name: "constant", "reflect", "replicate", "circular".
const char* pad_mode_name(PadMode m);

namespace functional {

struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT: implicit, as libtorch
  BRISK_ARG(std::vector<int64_t>, pad);
  BRISK_ARG(PadMode, mode) = kConstant;
  /// The fill of constant padding.
  BRISK_ARG(double, value) = 0;
};

/// Pads x by `pad` ((before, after) pairs from the last dim). Constant
/// padding takes any number of dims and negative amounts (which crop);
/// reflect needs each amount smaller than its dim, circular at most its dim.
Tensor pad(const Tensor& x, const PadFuncOptions& options);

}  // namespace functional

template <size_t D>
struct ReflectionPadOptions {
  ReflectionPadOptions(ExpandingInts<2 * D> padding) : padding_(padding) {}  // NOLINT
  /// (left, right[, top, bottom[, front, back]]), or one integer for all.
  BRISK_ARG(ExpandingInts<2 * D>, padding);
};
template <size_t D>
struct ReplicationPadOptions {
  ReplicationPadOptions(ExpandingInts<2 * D> padding) : padding_(padding) {}  // NOLINT
  BRISK_ARG(ExpandingInts<2 * D>, padding);
};
template <size_t D>
struct ZeroPadOptions {
  ZeroPadOptions(ExpandingInts<2 * D> padding) : padding_(padding) {}  // NOLINT
  BRISK_ARG(ExpandingInts<2 * D>, padding);
};
template <size_t D>
struct ConstantPadOptions {
  ConstantPadOptions(ExpandingInts<2 * D> padding, double value) : padding_(padding), value_(value) {}
  BRISK_ARG(ExpandingInts<2 * D>, padding);
  BRISK_ARG(double, value);
};
using ReflectionPad1dOptions = ReflectionPadOptions<1>;
using ReflectionPad2dOptions = ReflectionPadOptions<2>;
using ReflectionPad3dOptions = ReflectionPadOptions<3>;
using ReplicationPad1dOptions = ReplicationPadOptions<1>;
using ReplicationPad2dOptions = ReplicationPadOptions<2>;
using ReplicationPad3dOptions = ReplicationPadOptions<3>;
using ZeroPad1dOptions = ZeroPadOptions<1>;
using ZeroPad2dOptions = ZeroPadOptions<2>;
using ZeroPad3dOptions = ZeroPadOptions<3>;
using ConstantPad1dOptions = ConstantPadOptions<1>;
using ConstantPad2dOptions = ConstantPadOptions<2>;
using ConstantPad3dOptions = ConstantPadOptions<3>;

namespace modules_detail {
/// The module behind every padding module of D dims with mode M.
template <size_t D, PadMode M, class Options>
class PadImpl : public Module {
 public:
  explicit PadImpl(const Options& options);
  Tensor forward(const Tensor& x) override;
  /// PyTorch's printing: "(1, 1, 2, 2)", "padding=(1, 1), value=3.5" for constant.
  std::string extra_repr() const override;
  Options options;
};
extern template class PadImpl<1, PadMode::Reflect, ReflectionPad1dOptions>;
extern template class PadImpl<2, PadMode::Reflect, ReflectionPad2dOptions>;
extern template class PadImpl<3, PadMode::Reflect, ReflectionPad3dOptions>;
extern template class PadImpl<1, PadMode::Replicate, ReplicationPad1dOptions>;
extern template class PadImpl<2, PadMode::Replicate, ReplicationPad2dOptions>;
extern template class PadImpl<3, PadMode::Replicate, ReplicationPad3dOptions>;
extern template class PadImpl<1, PadMode::Constant, ZeroPad1dOptions>;
extern template class PadImpl<2, PadMode::Constant, ZeroPad2dOptions>;
extern template class PadImpl<3, PadMode::Constant, ZeroPad3dOptions>;
extern template class PadImpl<1, PadMode::Constant, ConstantPad1dOptions>;
extern template class PadImpl<2, PadMode::Constant, ConstantPad2dOptions>;
extern template class PadImpl<3, PadMode::Constant, ConstantPad3dOptions>;
}  // namespace modules_detail

#define BRISK_DETAIL_PAD_MODULE(Name, D, M)                                                  \
  class Name##Impl : public modules_detail::PadImpl<D, M, Name##Options> {                           \
   public:                                                                                   \
    explicit Name##Impl(const Name##Options& options) : modules_detail::PadImpl<D, M, Name##Options>(options) {} \
    explicit Name##Impl(ExpandingInts<2 * D> padding) : Name##Impl(Name##Options(padding)) {}       \
  };                                                                                         \
  BRISK_MODULE(Name)
#define BRISK_DETAIL_CONSTANT_PAD_MODULE(Name, D)                                             \
  class Name##Impl : public modules_detail::PadImpl<D, PadMode::Constant, Name##Options> {            \
   public:                                                                                   \
    explicit Name##Impl(const Name##Options& options)                                        \
        : modules_detail::PadImpl<D, PadMode::Constant, Name##Options>(options) {}                   \
    Name##Impl(ExpandingInts<2 * D> padding, double value) : Name##Impl(Name##Options(padding, value)) {} \
  };                                                                                         \
  BRISK_MODULE(Name)

BRISK_DETAIL_PAD_MODULE(ReflectionPad1d, 1, PadMode::Reflect);
BRISK_DETAIL_PAD_MODULE(ReflectionPad2d, 2, PadMode::Reflect);
BRISK_DETAIL_PAD_MODULE(ReflectionPad3d, 3, PadMode::Reflect);
BRISK_DETAIL_PAD_MODULE(ReplicationPad1d, 1, PadMode::Replicate);
BRISK_DETAIL_PAD_MODULE(ReplicationPad2d, 2, PadMode::Replicate);
BRISK_DETAIL_PAD_MODULE(ReplicationPad3d, 3, PadMode::Replicate);
BRISK_DETAIL_PAD_MODULE(ZeroPad1d, 1, PadMode::Constant);
BRISK_DETAIL_PAD_MODULE(ZeroPad2d, 2, PadMode::Constant);
BRISK_DETAIL_PAD_MODULE(ZeroPad3d, 3, PadMode::Constant);
BRISK_DETAIL_CONSTANT_PAD_MODULE(ConstantPad1d, 1);
BRISK_DETAIL_CONSTANT_PAD_MODULE(ConstantPad2d, 2);
BRISK_DETAIL_CONSTANT_PAD_MODULE(ConstantPad3d, 3);
#undef BRISK_DETAIL_PAD_MODULE
#undef BRISK_DETAIL_CONSTANT_PAD_MODULE

}  // namespace nn

// libtorch spells the modes torch::kReflect, ...
using nn::kCircular;
using nn::kConstant;
using nn::kReflect;
using nn::kReplicate;

}  // namespace brisk
