// CUDA kernels of the unary ops: every UnaryMode, gelu, softplus and clamp
// with scalar bounds, with the CPU's modes, dtypes and formulas
// (src/backend/cpu/kernels/unary.cpp, src/kernels/math.h) on the engine of
// loops.cuh. Two families (Note [CUDA kernel families] in elementwise.cu):
// UnaryOp (out and input of one dtype) and UnaryPredOp (bool out), one
// kernel per dtype each.
#include <type_traits>

#include "backend/cuda/loops.cuh"
#include "core/dispatch.h"
#include "kernels/math.h"

namespace brisk::cuda::detail {
namespace {

// Modes beyond UnaryMode's (which keep their own values).
constexpr int kGeluErf = 1000;
constexpr int kGeluTanh = 1001;
constexpr int kSoftplus = 1002;   // a: beta, b: threshold
constexpr int kClampMin = 1003;   // a: lo
constexpr int kClampMax = 1004;   // b: hi
constexpr int kClampBoth = 1005;  // a: lo, b: hi

#define UM(name) static_cast<int>(UnaryMode::name)

template <class M>
struct UnaryOp {
  int mode;
  M a, b;
  __device__ M operator()(M x) const {
    constexpr bool fp = std::is_floating_point_v<M>;
    switch (mode) {
      case UM(neg): return math::neg(x);
      case UM(abs): return math::abs(x);
      case UM(sign): return math::sign(x);
      case UM(square): return math::square(x);
      case UM(relu):
        if constexpr (std::is_unsigned_v<M>) return x;  // math::relu's x < 0 is always false
        else return math::relu(x);
      case UM(round): return math::round_even(x);
      case kClampMin: return math::maximum(x, a);
      case kClampMax: return math::minimum(x, b);
      case kClampBoth: return math::minimum(math::maximum(x, a), b);
      default: break;
    }
    if constexpr (!fp) {
      switch (mode) {
        case UM(bitwise_not): return M(~x);
        default: return x;  // floor, ceil, trunc of an integer
      }
    } else {
      switch (mode) {
        case UM(floor): return std::floor(x);
        case UM(ceil): return std::ceil(x);
        case UM(trunc): return std::trunc(x);
        case UM(frac): return x - std::trunc(x);
        case UM(exp): return std::exp(x);
        case UM(exp2): return std::exp2(x);
        case UM(log): return std::log(x);
        case UM(log2): return std::log2(x);
        case UM(log10): return std::log10(x);
        case UM(log1p): return std::log1p(x);
        case UM(expm1): return std::expm1(x);
        case UM(sqrt): return std::sqrt(x);
        case UM(rsqrt): return math::rsqrt(x);
        case UM(reciprocal): return M(1) / x;
        case UM(sin): return std::sin(x);
        case UM(cos): return std::cos(x);
        case UM(tan): return std::tan(x);
        case UM(asin): return std::asin(x);
        case UM(acos): return std::acos(x);
        case UM(atan): return std::atan(x);
        case UM(sinh): return std::sinh(x);
        case UM(cosh): return std::cosh(x);
        case UM(tanh): return std::tanh(x);
        case UM(sigmoid): return math::sigmoid(x);
        case UM(erf): return std::erf(x);
        case UM(erfc): return std::erfc(x);
        case UM(silu): return math::silu(x);
        case UM(asinh): return std::asinh(x);
        case UM(acosh): return std::acosh(x);
        case UM(atanh): return std::atanh(x);
        case UM(erfinv): return math::erfinv(x);
        case UM(lgamma): return std::lgamma(x);
        case UM(digamma): return math::digamma(x);
        case UM(trigamma): return math::trigamma(x);
        case UM(mish): return math::mish(x);
        case UM(logit): return math::logit(x, a);  // a: eps, or -1 for none
        case kGeluErf: return math::gelu_erf(x);
        case kGeluTanh: return math::gelu_tanh(x);
        case kSoftplus: return math::softplus(x, a, b);
        default: return x;
      }
    }
  }
};

template <class M>
struct UnaryPredOp {
  int mode;
  __device__ bool operator()(M x) const {
    switch (mode) {
      case UM(isnan): return x != x;
      case UM(isinf):
        if constexpr (std::is_floating_point_v<M>) return std::isinf(x);
        else return false;
      case UM(isfinite):
        if constexpr (std::is_floating_point_v<M>) return std::isfinite(x);
        else return true;
      default: return x == M(0);  // logical_not, and bitwise_not of bool
    }
  }
};

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

const char* unary_name(UnaryMode m) {
  static const char* const names[] = {
#define BRISK_UNARY_NAME(name) #name,
      BRISK_FORALL_UNARY(BRISK_UNARY_NAME)
#undef BRISK_UNARY_NAME
  };
  return names[static_cast<int>(m)];
}

// The dtype sets follow the CPU kernel's FLOAT_OP / NUMERIC_OP / predicate
// groups, so an unsupported dtype fails with the same message.
void unary_kernel(TensorIter& it, const KernelArgs& a) {
  const auto mode = static_cast<UnaryMode>(a.mode);
  const char* name = unary_name(mode);
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
    case UnaryMode::logit:
      return BRISK_DISPATCH_FLOAT(it.dtypes[1], name, [&] {
        launch_unary<scalar_t>(it, name, a.mode, a.has_s0 ? a.s0 : Scalar(-1.0));
      });
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
}

}  // namespace brisk::cuda::detail
