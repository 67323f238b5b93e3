// The device functors of the elementwise slots: what each CUDA elementwise
// kernel computes on one element, in its math type (Note [CUDA kernel
// families] in elementwise.cu). The eager kernels (elementwise.cu, unary.cu)
// run them through loops.cuh; compile's generated CUDA kernels
// (src/compile/codegen_cuda.cpp) call the same functors, compiled by NVRTC,
// so a fused chain computes what the eager kernels compute. Keep this header
// free of host-only includes: NVRTC sees only device_types.cuh, the
// kernels/ headers and the standard headers of src/compile/nvrtc_std/.
#pragma once
#include <type_traits>

#include "backend/cuda/device_types.cuh"
#include "kernels/functors.h"
#include "kernels/math.h"

#if defined(__CUDACC_RTC__)
namespace brisk {
// core/dispatch.h's UnaryMode, from the same list (so the same values).
enum class UnaryMode : int {
#define BRISK_UNARY_ENUM(ctx, name, group, dtypes, amp, forms) name,
  BRISK_FORALL_UNARY_OPS(BRISK_UNARY_ENUM, _)
#undef BRISK_UNARY_ENUM
  trigamma,
  polygamma,
  kNumModes
};
}  // namespace brisk
#else
#include "core/dispatch.h"
#endif

namespace brisk::cuda::detail {

// ---- binary arithmetic: out, a, b of one dtype -----------------------------------------
enum class Arith : int {
  Add,       // x + y
  AddAlpha,  // x + s * y
  Mul,
  Div,
  DivTrunc,
  DivFloor,
  Remainder,
  Fmod,
  Pow,
  Square,  // pow with a scalar exponent of 2 (x * x, as the CPU)
  CubeSteps,       // bfloat16 pow by 3: x * x rounded to T, times x (PyTorch's bfloat16 steps, as the CPU)
  InvSquareSteps,  // bfloat16 pow by -2: 1 / (x * x rounded to T)
  Minimum,
  Maximum,
  Atan2,
  BitAnd,
  BitOr,
  BitXor,
  ShiftLeft,          // math::shift_left (integers only)
  ShiftRight,         // math::shift_right
  Lerp,               // lerp(x, y, s): scalar weight
  ThresholdBackward,  // y <= s ? 0 : x  (x: grad, y: input)
  // slot binary_math (Note [Binary math modes] in kernels/math.h)
  Hypot,
  LogAddExp,
  LogAddExp2,
  Copysign,
  Nextafter,  // 16-bit: in the dtype's representation (math::nextafter16)
  Xlogy,      // 16-bit: log(y) rounded to the dtype before the product, as the CPU
  Heaviside,
};

/// M: the math type; T: brisk's dtype type (rounding of trunc division).
template <class M, class T>
struct ArithOp {
  Arith mode;
  M s;
  __device__ M operator()(M x, M y) const {
    if constexpr (std::is_same_v<M, bool>) {
      switch (mode) {
        case Arith::Add: case Arith::BitOr: case Arith::Maximum: return x || y;
        case Arith::AddAlpha: return x || (s && y);  // add(.., alpha=False) is self
        case Arith::Mul: case Arith::BitAnd: case Arith::Minimum: return x && y;
        case Arith::BitXor: return x != y;
        case Arith::Heaviside: return x ? true : y;
        default: return false;
      }
    } else {
      constexpr bool fp = std::is_floating_point_v<M>;
      switch (mode) {
        case Arith::Add: return M(x + y);
        case Arith::AddAlpha: return M(x + s * y);
        case Arith::Mul: return M(x * y);
        case Arith::Div: return M(x / y);
        case Arith::DivTrunc: return math::trunc_div<T>(x, y);
        case Arith::DivFloor: return math::floor_div(x, y);
        case Arith::Remainder: return math::remainder(x, y);
        case Arith::Fmod: return math::fmod(x, y);
        case Arith::Pow: return math::pow(x, y);
        case Arith::Square: return M(x * x);
        case Arith::CubeSteps: return M(M(T(x * x)) * x);
        case Arith::InvSquareSteps: return M(M(1) / M(T(x * x)));
        case Arith::Minimum: return math::minimum(x, y);
        case Arith::Maximum: return math::maximum(x, y);
        case Arith::Heaviside: return math::heaviside(x, y);
        default: break;
      }
      if constexpr (fp) {
        switch (mode) {
          case Arith::Atan2: return std::atan2(x, y);
          case Arith::Lerp: return math::lerp(x, y, s);
          case Arith::ThresholdBackward: return y <= s ? M(0) : x;
          case Arith::Hypot: return std::hypot(x, y);
          case Arith::LogAddExp: return math::logaddexp(x, y);
          case Arith::LogAddExp2: return math::logaddexp2(x, y);
          case Arith::Copysign: return std::copysign(x, y);
          case Arith::Nextafter:
            if constexpr (std::is_same_v<M, T>)
              return std::nextafter(x, y);
            else
              return M(math::nextafter16(T(x), T(y)));
          case Arith::Xlogy: return math::xlogy_in<T>(x, y);
          default: break;
        }
      } else {
        switch (mode) {
          case Arith::BitAnd: return M(x & y);
          case Arith::BitOr: return M(x | y);
          case Arith::BitXor: return M(x ^ y);
          case Arith::ShiftLeft: return math::shift_left(x, y);
          case Arith::ShiftRight: return math::shift_right(x, y);
          default: break;
        }
      }
      return M(0);
    }
  }
};

// ---- activation gradients: out, grad, saved value of one dtype ------------------------------
// math::activation_grad (Note [Activation gradients]); the mode a template
// argument in compile's generated kernels (NVRTC instantiates that case),
// read at run time by the eager kernel (one kernel per dtype).
template <class M, int kMode = -1>
struct ActGradOp {
  int mode;
  M s0, s1, s2;
  __device__ M operator()(M g, M v) const {
    const auto m = static_cast<math::ActGrad>(kMode >= 0 ? kMode : mode);
    return math::activation_grad(m, g, v, s0, s1, s2);
  }
};

// ---- the activations of slot `activation`: out, input of one dtype -------------------------
// math::activation (Note [Activation forward modes]); the mode as ActGradOp's.
template <class M, int kMode = -1>
struct ActOp {
  int mode;
  M s0, s1, s2;
  __device__ M operator()(M x) const {
    const auto m = static_cast<math::Act>(kMode >= 0 ? kMode : mode);
    return math::activation(m, x, s0, s1, s2);
  }
};

// ---- ternary: out, x, y, z of one dtype ---------------------------------------------------
enum class Ternary : int { Lerp, Addcmul, Addcdiv, Clamp };

template <class M>
struct TernaryOp {
  Ternary mode;
  M v;
  __device__ M operator()(M x, M y, M z) const {
    switch (mode) {
      case Ternary::Addcmul: return M(x + v * y * z);
      case Ternary::Clamp: return math::minimum(math::maximum(x, y), z);
      default: break;
    }
    if constexpr (std::is_floating_point_v<M>) {
      if (mode == Ternary::Lerp) return math::lerp(x, y, z);
      return x + v * (y / z);  // addcdiv
    }
    return M(0);
  }
};

// ---- predicates of two inputs: bool out ----------------------------------------------------
enum class Pred : int { Eq, Ne, Lt, Le, Gt, Ge, And, Or, Xor, IsClose };

// S: the storage type, which isclose rounds its steps to (math::isclose_float).
template <class M, class S = M>
struct PredOp {
  static constexpr bool fp = std::is_floating_point_v<M>;
  using tol_t = std::conditional_t<fp, M, double>;
  Pred mode;
  tol_t rtol, atol;
  bool equal_nan;
  __device__ bool operator()(M x, M y) const {
    switch (mode) {
      case Pred::Eq: return x == y;
      case Pred::Ne: return x != y;
      case Pred::Lt: return x < y;
      case Pred::Le: return x <= y;
      case Pred::Gt: return x > y;
      case Pred::Ge: return x >= y;
      case Pred::And: return x != M(0) && y != M(0);
      case Pred::Or: return x != M(0) || y != M(0);
      case Pred::Xor: return (x != M(0)) != (y != M(0));
      default: break;
    }
    // isclose: floats only (the front end casts integers to the default float dtype)
    if constexpr (fp)
      return math::isclose_float<S>(x, y, rtol, atol, equal_nan);
    else
      return false;
  }
};

// ---- where ------------------------------------------------------------------------------------
template <class M>
struct WhereOp {
  __device__ M operator()(bool c, M x, M y) const { return c ? x : y; }
};
// ---- fill and copy: by element size where no conversion happens ------------------------------
template <class U>
struct FillOp {
  U v;
  __device__ U operator()() const { return v; }
};
struct Identity {
  template <class V>
  __device__ V operator()(V v) const {
    return v;
  }
};

// Modes beyond UnaryMode's (which keep their own values).
constexpr int kGeluErf = 1000;
constexpr int kGeluTanh = 1001;
constexpr int kSoftplus = 1002;   // a: beta, b: threshold
constexpr int kClampMin = 1003;   // a: lo
constexpr int kClampMax = 1004;   // b: hi
constexpr int kClampBoth = 1005;  // a: lo, b: hi

#define BRISK_UM(name) static_cast<int>(UnaryMode::name)

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

// kMode: the mode known when compiling (compile's generated kernels name
// it, so NVRTC instantiates one case instead of every row's functor); the
// eager kernel passes it at run time (-1) and switches onto the same
// fixed() case.
template <class M, int kMode = -1>
struct UnaryOp {
  int mode;
  M a, b;
  __device__ M operator()(M x) const {
    if constexpr (kMode >= 0)
      return fixed(x);
    else
      return dynamic(x);
  }
  __device__ M fixed(M x) const {
    constexpr bool fp = std::is_floating_point_v<M>;
    if constexpr (kMode == kClampMin) return math::maximum(x, a);
    else if constexpr (kMode == kClampMax) return math::minimum(x, b);
    else if constexpr (kMode == kClampBoth) return math::minimum(math::maximum(x, a), b);
    else if constexpr (fp && kMode == BRISK_UM(logit)) return math::logit(x, a, b);  // a, b: the bounds (a < 0: none)
    else if constexpr (fp && kMode == BRISK_UM(trigamma)) return math::op::trigamma{}(x);
    else if constexpr (fp && kMode == BRISK_UM(polygamma)) return math::polygamma(static_cast<int>(a), x);  // a: n
    else if constexpr (fp && kMode == kGeluErf) return math::gelu_erf(x);
    else if constexpr (fp && kMode == kGeluTanh) return math::gelu_tanh(x);
    else if constexpr (fp && kMode == kSoftplus) return math::softplus(x, a, b);
#define BRISK_CUDA_UNARY_FIXED(ctx, name, group, dtypes, amp, forms)                                       \
  else if constexpr (kMode == BRISK_UM(name)) {                                                            \
    if constexpr (!BRISK_IS_PREDICATE_##group &&                                                           \
                  ((fp && BRISK_TAKES_FLOAT_##group) || (!fp && BRISK_TAKES_INT_##group)))                 \
      return math::op::name{}(x);                                                                          \
    else                                                                                                   \
      return x;                                                                                            \
  }
    BRISK_FORALL_UNARY_OPS(BRISK_CUDA_UNARY_FIXED, _)
#undef BRISK_CUDA_UNARY_FIXED
    else return x;
  }
  // the run-time mode: a switch onto the same fixed() cases
  __device__ M dynamic(M x) const {
    switch (mode) {
      case kClampMin: return with<kClampMin>(x);
      case kClampMax: return with<kClampMax>(x);
      case kClampBoth: return with<kClampBoth>(x);
      case kGeluErf: return with<kGeluErf>(x);
      case kGeluTanh: return with<kGeluTanh>(x);
      case kSoftplus: return with<kSoftplus>(x);
      case BRISK_UM(trigamma): return with<BRISK_UM(trigamma)>(x);
      case BRISK_UM(polygamma): return with<BRISK_UM(polygamma)>(x);
#define BRISK_CUDA_UNARY_CASE(ctx, name, group, dtypes, amp, forms) \
  case BRISK_UM(name):                                              \
    return with<BRISK_UM(name)>(x);
      BRISK_FORALL_UNARY_OPS(BRISK_CUDA_UNARY_CASE, _)
#undef BRISK_CUDA_UNARY_CASE
      default: return x;
    }
  }
  template <int K>
  __device__ M with(M x) const {
    return UnaryOp<M, K>{mode, a, b}.fixed(x);
  }
};

template <class M>
struct UnaryPredOp {
  int mode;
  __device__ bool operator()(M x) const {
    switch (mode) {
#define BRISK_CUDA_PRED_CASE(ctx, name, group, dtypes, amp, forms) \
  case BRISK_UM(name):                                                   \
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

#undef BRISK_UM

}  // namespace brisk::cuda::detail
