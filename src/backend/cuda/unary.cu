// CUDA kernels of the unary ops: every UnaryMode, gelu, softplus and clamp
// with scalar bounds, with the CPU's modes, dtypes and formulas
// (src/backend/cpu/kernels/unary.cpp, src/kernels/math.h) on the engine of
// loops.cuh. Two families (Note [CUDA kernel families] in elementwise.cu):
// UnaryOp (out and input of one dtype) and UnaryPredOp (bool out), one
// kernel per dtype each.
#include <type_traits>

#include "backend/cuda/loops.cuh"
#include "backend/cuda/pointwise_ops.cuh"
#include "core/dispatch.h"
#include "kernels/functors.h"

namespace brisk::cuda::detail {
namespace {

#define UM(name) static_cast<int>(UnaryMode::name)

/// T: brisk's dtype type. Out and input are both T.
template <class T>
void launch_unary(TensorIter& it, const char* op, int mode, const Scalar& a = Scalar(0), const Scalar& b = Scalar(0)) {
  using S = storage_t<T>;
  using M = math_t<S>;
  gpu_kernel<S, S>(it, op, UnaryOp<M>{mode, a.to<M>(), b.to<M>()});
}
template <class T>
void launch_unary_pred(TensorIter& it, const char* op, int mode) {
  using S = storage_t<T>;
  gpu_kernel<bool, S>(it, op, UnaryPredOp<math_t<S>>{mode});
}

// The dtype sets follow the CPU kernel's FLOAT_OP / NUMERIC_OP / predicate
// groups, so an unsupported dtype fails with the same message.
void unary_kernel(TensorIter& it, const KernelArgs& a) {
  const auto mode = static_cast<UnaryMode>(a.mode);
  const char* name = unary_mode_name(mode);
  switch (mode) {
    case UnaryMode::neg: case UnaryMode::abs: case UnaryMode::sign: case UnaryMode::square:
    case UnaryMode::relu: case UnaryMode::floor: case UnaryMode::ceil: case UnaryMode::round:
    case UnaryMode::trunc:
      return BRISK_DISPATCH_NUMERIC(it.dtypes[1], name, [&] { launch_unary<scalar_t>(it, name, a.mode); });
    case UnaryMode::logical_not: case UnaryMode::isnan: case UnaryMode::isinf: case UnaryMode::isfinite:
      return BRISK_DISPATCH_ALL(it.dtypes[1], name, [&] { launch_unary_pred<scalar_t>(it, name, a.mode); });
    case UnaryMode::bitwise_not:
      return BRISK_DISPATCH_INTEGRAL(it.dtypes[1], name, [&] {
        if constexpr (std::is_same_v<scalar_t, bool>)
          launch_unary_pred<bool>(it, name, UM(logical_not));
        else
          launch_unary<scalar_t>(it, name, a.mode);
      });
    case UnaryMode::logit:  // s0, s1: the clamp's bounds, eps and 1 - eps in the dtype (none: no s0)
      return BRISK_DISPATCH_FLOAT(it.dtypes[1], name, [&] {
        launch_unary<scalar_t>(it, name, a.mode, a.has_s0 ? a.s0 : Scalar(-1.0), a.has_s1 ? a.s1 : Scalar(1.0));
      });
    case UnaryMode::polygamma:  // s0: n
      BRISK_INTERNAL_ASSERT(a.has_s0, "polygamma: no n");
      return BRISK_DISPATCH_FLOAT(it.dtypes[1], name, [&] { launch_unary<scalar_t>(it, name, a.mode, a.s0); });
    default:
      return BRISK_DISPATCH_FLOAT(it.dtypes[1], name, [&] { launch_unary<scalar_t>(it, name, a.mode); });
  }
}

void gelu_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "gelu", [&] { launch_unary<scalar_t>(it, "gelu", a.mode == 1 ? kGeluTanh : kGeluErf); });
}

void softplus_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "softplus", [&] { launch_unary<scalar_t>(it, "softplus", kSoftplus, a.s0, a.s1); });
}

// The activation gradients (slot activation_backward): grad and the saved
// value of one float dtype, in float for 16-bit.
void activation_backward_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "activation_backward", [&] {
    using S = storage_t<scalar_t>;
    using M = math_t<S>;
    const M s0 = M(a.s0.to_double()), s1 = M(a.s1.to_double()), s2 = M(a.s2.to_double());
    gpu_kernel<S, S, S>(it, "activation_backward", ActGradOp<M>{a.mode, s0, s1, s2});
  });
}

// The activations of slot `activation` (math::Act): in float for 16-bit.
void activation_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "activation", [&] {
    using S = storage_t<scalar_t>;
    using M = math_t<S>;
    const M s0 = M(a.s0.to_double()), s1 = M(a.s1.to_double()), s2 = M(a.s2.to_double());
    gpu_kernel<S, S>(it, "activation", ActOp<M>{a.mode, s0, s1, s2});
  });
}

// clamp with Scalar bounds (nan in the input or a bound gives nan, as in torch).
void clamp_kernel(TensorIter& it, const KernelArgs& a) {
  const int mode = a.has_s0 && a.has_s1 ? kClampBoth : a.has_s0 ? kClampMin : kClampMax;
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "clamp", [&] {
    launch_unary<scalar_t>(it, "clamp", mode, a.has_s0 ? a.s0 : Scalar(0), a.has_s1 ? a.s1 : Scalar(0));
  });
}
#undef UM

}  // namespace

void register_unary_kernels() {
  register_kernel<OpId::unary>(kCUDA, unary_kernel);
  register_kernel<OpId::gelu>(kCUDA, gelu_kernel);
  register_kernel<OpId::softplus>(kCUDA, softplus_kernel);
  register_kernel<OpId::clamp>(kCUDA, clamp_kernel);
  register_kernel<OpId::activation_backward>(kCUDA, activation_backward_kernel);
  register_kernel<OpId::activation>(kCUDA, activation_kernel);
}

}  // namespace brisk::cuda::detail
