// CUDA kernels of the unary ops: every UnaryMode, gelu, softplus and clamp
// with scalar bounds, with the CPU's modes, dtypes and formulas
// (src/backend/cpu/kernels/unary.cpp, src/kernels/math.h) on the engine of
// loops.cuh. Two families (Note [CUDA kernel families] in elementwise.cu):
// UnaryOp (out and input of one dtype) and UnaryPredOp (bool out), one
// kernel per dtype each.
#include <type_traits>

#include "backend/cuda/loops.cuh"
#include "core/dispatch.h"
#include "kernels/functors.h"

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

// Which math types a row's functor is instantiated for, by its group
// (Note [The unary list]): the front end promotes integer inputs of Float
// rows and refuses those of FloatOnly ones, so those never see an integer.
#define BRISK_TAKES_FLOAT_Float 1
#define BRISK_TAKES_FLOAT_FloatOnly 1
#define BRISK_TAKES_FLOAT_Numeric 1
#define BRISK_TAKES_FLOAT_Predicate 0
#define BRISK_TAKES_FLOAT_Integral 0
#define BRISK_TAKES_INT_Float 0
#define BRISK_TAKES_INT_FloatOnly 0
#define BRISK_TAKES_INT_Numeric 1
#define BRISK_TAKES_INT_Predicate 0
#define BRISK_TAKES_INT_Integral 1
#define BRISK_IS_PREDICATE_Float 0
#define BRISK_IS_PREDICATE_FloatOnly 0
#define BRISK_IS_PREDICATE_Numeric 0
#define BRISK_IS_PREDICATE_Predicate 1
#define BRISK_IS_PREDICATE_Integral 0

template <class M>
struct UnaryOp {
  int mode;
  M a, b;
  __device__ M operator()(M x) const {
    constexpr bool fp = std::is_floating_point_v<M>;
    switch (mode) {
      case kClampMin: return math::maximum(x, a);
      case kClampMax: return math::minimum(x, b);
      case kClampBoth: return math::minimum(math::maximum(x, a), b);
      default: break;
    }
    if constexpr (fp) {
      switch (mode) {
        case UM(logit): return math::logit(x, a);  // a: eps, or -1 for none
        case UM(trigamma): return math::op::trigamma{}(x);
        case kGeluErf: return math::gelu_erf(x);
        case kGeluTanh: return math::gelu_tanh(x);
        case kSoftplus: return math::softplus(x, a, b);
        default: break;
      }
    }
    // One case per row of the unary list, through its scalar functor.
    switch (mode) {
#define BRISK_CUDA_UNARY_CASE(ctx, name, group, dtypes, amp, forms)                                         \
  case UM(name):                                                                                             \
    if constexpr (!BRISK_IS_PREDICATE_##group &&                                                             \
                  ((fp && BRISK_TAKES_FLOAT_##group) || (!fp && BRISK_TAKES_INT_##group)))                   \
      return math::op::name{}(x);                                                                            \
    else                                                                                                     \
      return x;
      BRISK_FORALL_UNARY_OPS(BRISK_CUDA_UNARY_CASE, _)
#undef BRISK_CUDA_UNARY_CASE
      default: return x;
    }
  }
};

template <class M>
struct UnaryPredOp {
  int mode;
  __device__ bool operator()(M x) const {
    switch (mode) {
#define BRISK_CUDA_PRED_CASE(ctx, name, group, dtypes, amp, forms) \
  case UM(name):                                                   \
    if constexpr (BRISK_IS_PREDICATE_##group)                      \
      return math::op::name{}(x);                                  \
    else                                                           \
      break;
      BRISK_FORALL_UNARY_OPS(BRISK_CUDA_PRED_CASE, _)
#undef BRISK_CUDA_PRED_CASE
      default: break;
    }
    return x == M(0);  // bitwise_not of bool
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
