// The scalar functor of each pointwise op: what the op computes on one
// element, in the op's math type (float for float16/bfloat16 storage),
// usable from host and device code (Note [Scalar functors]).
#pragma once
#include <cmath>
#include <type_traits>

#include "brisk/detail/unary_ops.h"
#include "kernels/math.h"
#if !defined(__CUDACC_RTC__)  // (NVRTC: compile's generated CUDA kernels need only the functors)
#include "core/op_table.h"
#endif

namespace brisk {
namespace math {
namespace op {

// Note [Scalar functors]
// math::op::<row> is the definition of a pointwise op-table row on one
// element. The CUDA unary kernel is generated from them (one case per row of
// the unary list), the CPU kernels use them where an op has no vector form
// (and the vector forms are tested against them), and compile's fusion
// (issue 15) reads ScalarFunctor<Op::name> for each pointwise row. Ops with
// parameters (logit's eps, addcmul's value) take them as members.
// Integer-only or float-only rows need only handle those types: the front
// end promotes or refuses the others before a kernel runs.

#define BRISK_FLOAT_FN(name, expr)                 \
  struct name {                                    \
    template <class T>                             \
    BRISK_HOST_DEVICE T operator()(T x) const {    \
      return expr;                                 \
    }                                              \
  };
#define BRISK_PRED_FN(name, expr)                  \
  struct name {                                    \
    template <class T>                             \
    BRISK_HOST_DEVICE bool operator()(T x) const { \
      return expr;                                 \
    }                                              \
  };
// clang-format off
BRISK_FLOAT_FN(neg, math::neg(x))
BRISK_FLOAT_FN(abs, math::abs(x))
BRISK_FLOAT_FN(sign, math::sign(x))
BRISK_FLOAT_FN(exp, std::exp(x))
BRISK_FLOAT_FN(exp2, std::exp2(x))
BRISK_FLOAT_FN(log, std::log(x))
BRISK_FLOAT_FN(log2, std::log2(x))
BRISK_FLOAT_FN(log10, std::log10(x))
BRISK_FLOAT_FN(log1p, std::log1p(x))
BRISK_FLOAT_FN(expm1, std::expm1(x))
BRISK_FLOAT_FN(sqrt, std::sqrt(x))
BRISK_FLOAT_FN(rsqrt, math::rsqrt(x))
BRISK_FLOAT_FN(square, math::square(x))
BRISK_FLOAT_FN(reciprocal, T(1) / x)
BRISK_FLOAT_FN(sin, std::sin(x))
BRISK_FLOAT_FN(cos, std::cos(x))
BRISK_FLOAT_FN(tan, std::tan(x))
BRISK_FLOAT_FN(asin, std::asin(x))
BRISK_FLOAT_FN(acos, std::acos(x))
BRISK_FLOAT_FN(atan, std::atan(x))
BRISK_FLOAT_FN(sinh, std::sinh(x))
BRISK_FLOAT_FN(cosh, std::cosh(x))
BRISK_FLOAT_FN(tanh, std::tanh(x))
BRISK_FLOAT_FN(sigmoid, math::sigmoid(x))
BRISK_FLOAT_FN(erf, std::erf(x))
BRISK_FLOAT_FN(erfc, std::erfc(x))
BRISK_FLOAT_FN(silu, math::silu(x))
BRISK_FLOAT_FN(floor, std::is_floating_point_v<T> ? T(std::floor(x)) : x)
BRISK_FLOAT_FN(ceil, std::is_floating_point_v<T> ? T(std::ceil(x)) : x)
BRISK_FLOAT_FN(round, math::round_even(x))
BRISK_FLOAT_FN(trunc, std::is_floating_point_v<T> ? T(std::trunc(x)) : x)
BRISK_FLOAT_FN(frac, x - std::trunc(x))
BRISK_FLOAT_FN(asinh, std::asinh(x))
BRISK_FLOAT_FN(acosh, std::acosh(x))
BRISK_FLOAT_FN(atanh, std::atanh(x))
BRISK_FLOAT_FN(erfinv, math::erfinv(x))
BRISK_FLOAT_FN(lgamma, std::lgamma(x))
BRISK_FLOAT_FN(digamma, math::digamma(x))
BRISK_FLOAT_FN(trigamma, math::trigamma(x))
BRISK_FLOAT_FN(mish, math::mish(x))
BRISK_PRED_FN(logical_not, x == T(0))
BRISK_PRED_FN(isnan, x != x)
// clang-format on
#undef BRISK_FLOAT_FN
#undef BRISK_PRED_FN

struct relu {
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>)
      return x;
    else
      return math::relu(x);
  }
};
struct bitwise_not {
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>)
      return !x;
    else
      return T(~x);
  }
};
struct isinf {
  template <class T>
  BRISK_HOST_DEVICE bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return std::isinf(x);
    else
      return false;
  }
};
struct isfinite {
  template <class T>
  BRISK_HOST_DEVICE bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return std::isfinite(x);
    else
      return true;
  }
};
/// polygamma(n, x) for n >= 2: digamma's derivatives past trigamma (an
/// internal mode, UnaryMode::polygamma, n in KernelArgs::s0).
struct polygamma {
  int n = 2;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    return math::polygamma(n, x);
  }
};
/// eps < 0: no clamp (torch's eps=None).
struct logit {
  double eps = -1;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    return math::logit(x, T(eps));
  }
};
struct gelu {
  bool tanh_approx = false;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    return tanh_approx ? math::gelu_tanh(x) : math::gelu_erf(x);
  }
};
struct softplus {
  double beta = 1, threshold = 20;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    return math::softplus(x, T(beta), T(threshold));
  }
};

// The activations of slot `activation` (Note [Activation forward modes] in
// kernels/math.h), their parameters as members.
#define BRISK_ACT_FN(name, mode, s0, s1, s2)                                 \
  struct name {                                                             \
    template <class T>                                                      \
    BRISK_HOST_DEVICE T operator()(T x) const {                             \
      return math::activation(math::Act::mode, x, T(s0), T(s1), T(s2));     \
    }                                                                       \
  };
BRISK_ACT_FN(hardswish, hardswish, 0, 1, 1)
BRISK_ACT_FN(hardsigmoid, hardsigmoid, 0, 1, 1)
BRISK_ACT_FN(log_sigmoid, log_sigmoid, 0, 1, 1)
BRISK_ACT_FN(selu, elu, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1)
#undef BRISK_ACT_FN
struct elu {
  double alpha = 1, scale = 1, input_scale = 1;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    return math::activation(math::Act::elu, x, T(alpha), T(scale), T(input_scale));
  }
};
struct celu {
  double alpha = 1;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    return math::activation(math::Act::elu, x, T(alpha), T(1), T(1.0 / alpha));
  }
};
struct leaky_relu {
  double negative_slope = 0.01;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    return math::activation(math::Act::leaky_relu, x, T(negative_slope), T(1), T(1));
  }
};
struct softshrink {
  double lambd = 0.5;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    return math::activation(math::Act::softshrink, x, T(lambd), T(1), T(1));
  }
};
struct hardshrink {
  double lambd = 0.5;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x) const {
    return math::activation(math::Act::hardshrink, x, T(lambd), T(1), T(1));
  }
};

// Binary rows: add and sub without their alpha (the front end scales the
// second operand), div the true division of floats.
#define BRISK_BINARY_FN(name, R, expr)                  \
  struct name {                                         \
    template <class T>                                  \
    BRISK_HOST_DEVICE R operator()(T a, T b) const {    \
      return expr;                                      \
    }                                                   \
  };
// clang-format off
BRISK_BINARY_FN(add, T, a + b)
BRISK_BINARY_FN(sub, T, a - b)
BRISK_BINARY_FN(mul, T, a * b)
BRISK_BINARY_FN(div, T, a / b)
BRISK_BINARY_FN(remainder, T, math::remainder(a, b))
BRISK_BINARY_FN(fmod, T, math::fmod(a, b))
BRISK_BINARY_FN(pow, T, math::pow(a, b))
BRISK_BINARY_FN(minimum, T, math::minimum(a, b))
BRISK_BINARY_FN(maximum, T, math::maximum(a, b))
BRISK_BINARY_FN(atan2, T, std::atan2(a, b))
BRISK_BINARY_FN(hypot, T, std::hypot(a, b))
BRISK_BINARY_FN(logaddexp, T, math::logaddexp(a, b))
BRISK_BINARY_FN(logaddexp2, T, math::logaddexp2(a, b))
BRISK_BINARY_FN(copysign, T, std::copysign(a, b))
BRISK_BINARY_FN(nextafter, T, std::nextafter(a, b))
BRISK_BINARY_FN(xlogy, T, math::xlogy(a, b))
BRISK_BINARY_FN(heaviside, T, math::heaviside(a, b))
BRISK_BINARY_FN(eq, bool, a == b)
BRISK_BINARY_FN(ne, bool, a != b)
BRISK_BINARY_FN(lt, bool, a < b)
BRISK_BINARY_FN(le, bool, a <= b)
BRISK_BINARY_FN(gt, bool, a > b)
BRISK_BINARY_FN(ge, bool, a >= b)
BRISK_BINARY_FN(logical_and, bool, a != T(0) && b != T(0))
BRISK_BINARY_FN(logical_or, bool, a != T(0) || b != T(0))
BRISK_BINARY_FN(logical_xor, bool, (a != T(0)) != (b != T(0)))
BRISK_BINARY_FN(bitwise_and, T, T(a & b))
BRISK_BINARY_FN(bitwise_or, T, T(a | b))
BRISK_BINARY_FN(bitwise_xor, T, T(a ^ b))
BRISK_BINARY_FN(bitwise_left_shift, T, math::shift_left(a, b))
BRISK_BINARY_FN(bitwise_right_shift, T, math::shift_right(a, b))
// clang-format on
#undef BRISK_BINARY_FN

// The activation gradients (Note [Activation gradients] in kernels/math.h):
// (grad, saved value); logit's eps (< 0: none) and softplus' beta and
// threshold, gelu's approximation as members.
#define BRISK_ACT_GRAD_FN(name, mode, s0, s1)                       \
  struct name {                                                     \
    template <class T>                                              \
    BRISK_HOST_DEVICE T operator()(T g, T v) const {                \
      return math::activation_grad(ActGrad::mode, g, v, T(s0), T(s1)); \
    }                                                               \
  };
BRISK_ACT_GRAD_FN(sigmoid_backward, sigmoid, 0, 0)
BRISK_ACT_GRAD_FN(tanh_backward, tanh, 0, 0)
BRISK_ACT_GRAD_FN(silu_backward, silu, 0, 0)
BRISK_ACT_GRAD_FN(mish_backward, mish, 0, 0)
#undef BRISK_ACT_GRAD_FN
struct gelu_backward {
  bool tanh_approx = false;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(tanh_approx ? ActGrad::gelu_tanh : ActGrad::gelu_erf, g, v, T(0), T(0));
  }
};
struct logit_backward {
  double eps = -1;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(ActGrad::logit, g, v, T(eps), T(1) - T(eps));
  }
};
struct softplus_backward {
  double beta = 1, threshold = 20;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(ActGrad::softplus, g, v, T(beta), T(threshold));
  }
};
struct hardswish_backward {
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(ActGrad::hardswish, g, v, T(0), T(0));
  }
};
struct hardsigmoid_backward {
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(ActGrad::hardsigmoid, g, v, T(0), T(0));
  }
};
struct elu_backward {
  double alpha = 1, scale = 1, input_scale = 1;
  bool is_result = false;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(is_result ? ActGrad::elu_result : ActGrad::elu, g, v, T(alpha), T(scale),
                                 T(input_scale));
  }
};
struct leaky_relu_backward {
  double negative_slope = 0.01;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(ActGrad::leaky_relu, g, v, T(negative_slope), T(0));
  }
};
struct softshrink_backward {
  double lambd = 0.5;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(ActGrad::softshrink, g, v, T(lambd), T(0));
  }
};
struct hardshrink_backward {
  double lambd = 0.5;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(ActGrad::hardshrink, g, v, T(lambd), T(0));
  }
};
struct log_sigmoid_backward {  // float and double (16-bit operands: the float value rounded, not the buffer)
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(ActGrad::log_sigmoid, g, v, T(0), T(0));
  }
};
struct hardtanh_backward {
  double min_val = -1, max_val = 1;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T g, T v) const {
    return math::activation_grad(ActGrad::hardtanh, g, v, T(min_val), T(max_val));
  }
};

// Ternary rows.
struct lerp {
  template <class T>
  BRISK_HOST_DEVICE T operator()(T a, T b, T w) const {
    return math::lerp(a, b, w);
  }
};
struct addcmul {
  double value = 1;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x, T a, T b) const {
    return x + T(value) * a * b;
  }
};
struct addcdiv {
  double value = 1;
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x, T a, T b) const {
    return x + T(value) * (a / b);
  }
};
/// clamp(x, lo, hi) = minimum(maximum(x, lo), hi): nan in any operand gives nan.
struct clamp {
  template <class T>
  BRISK_HOST_DEVICE T operator()(T x, T lo, T hi) const {
    return math::minimum(math::maximum(x, lo), hi);
  }
};
struct where {
  template <class T>
  BRISK_HOST_DEVICE T operator()(bool c, T a, T b) const {
    return c ? a : b;
  }
};

}  // namespace op

#if !defined(__CUDACC_RTC__)
/// The scalar functor of an op-table row: `type` is math::op::<name> for
/// the pointwise rows that have one (`defined`); compile's fusion reads it.
template <Op op>
struct ScalarFunctor {
  static constexpr bool defined = false;
};
#define BRISK_SCALAR_FUNCTOR(name)               \
  template <>                                    \
  struct ScalarFunctor<Op::name> {               \
    static constexpr bool defined = true;        \
    using type = op::name;                       \
  };
#define BRISK_UNARY_SCALAR_FUNCTOR(ctx, name, group, dtypes, amp, forms) BRISK_SCALAR_FUNCTOR(name)
BRISK_FORALL_UNARY_OPS(BRISK_UNARY_SCALAR_FUNCTOR, _)
#undef BRISK_UNARY_SCALAR_FUNCTOR
// clang-format off
BRISK_SCALAR_FUNCTOR(gelu) BRISK_SCALAR_FUNCTOR(softplus)
BRISK_SCALAR_FUNCTOR(add) BRISK_SCALAR_FUNCTOR(sub) BRISK_SCALAR_FUNCTOR(mul) BRISK_SCALAR_FUNCTOR(div)
BRISK_SCALAR_FUNCTOR(remainder) BRISK_SCALAR_FUNCTOR(fmod) BRISK_SCALAR_FUNCTOR(pow)
BRISK_SCALAR_FUNCTOR(minimum) BRISK_SCALAR_FUNCTOR(maximum) BRISK_SCALAR_FUNCTOR(atan2)
BRISK_SCALAR_FUNCTOR(hypot) BRISK_SCALAR_FUNCTOR(logaddexp) BRISK_SCALAR_FUNCTOR(logaddexp2)
BRISK_SCALAR_FUNCTOR(copysign) BRISK_SCALAR_FUNCTOR(nextafter) BRISK_SCALAR_FUNCTOR(xlogy)
BRISK_SCALAR_FUNCTOR(heaviside)
BRISK_SCALAR_FUNCTOR(eq) BRISK_SCALAR_FUNCTOR(ne) BRISK_SCALAR_FUNCTOR(lt) BRISK_SCALAR_FUNCTOR(le)
BRISK_SCALAR_FUNCTOR(gt) BRISK_SCALAR_FUNCTOR(ge)
BRISK_SCALAR_FUNCTOR(logical_and) BRISK_SCALAR_FUNCTOR(logical_or) BRISK_SCALAR_FUNCTOR(logical_xor)
BRISK_SCALAR_FUNCTOR(bitwise_and) BRISK_SCALAR_FUNCTOR(bitwise_or) BRISK_SCALAR_FUNCTOR(bitwise_xor)
BRISK_SCALAR_FUNCTOR(bitwise_left_shift) BRISK_SCALAR_FUNCTOR(bitwise_right_shift)
BRISK_SCALAR_FUNCTOR(lerp) BRISK_SCALAR_FUNCTOR(addcmul) BRISK_SCALAR_FUNCTOR(addcdiv)
BRISK_SCALAR_FUNCTOR(clamp) BRISK_SCALAR_FUNCTOR(where)
BRISK_SCALAR_FUNCTOR(sigmoid_backward) BRISK_SCALAR_FUNCTOR(tanh_backward) BRISK_SCALAR_FUNCTOR(silu_backward)
BRISK_SCALAR_FUNCTOR(mish_backward) BRISK_SCALAR_FUNCTOR(gelu_backward) BRISK_SCALAR_FUNCTOR(logit_backward)
BRISK_SCALAR_FUNCTOR(softplus_backward)
BRISK_SCALAR_FUNCTOR(hardswish) BRISK_SCALAR_FUNCTOR(hardsigmoid) BRISK_SCALAR_FUNCTOR(elu) BRISK_SCALAR_FUNCTOR(selu)
BRISK_SCALAR_FUNCTOR(celu) BRISK_SCALAR_FUNCTOR(leaky_relu) BRISK_SCALAR_FUNCTOR(softshrink)
BRISK_SCALAR_FUNCTOR(hardshrink) BRISK_SCALAR_FUNCTOR(log_sigmoid)
BRISK_SCALAR_FUNCTOR(hardswish_backward) BRISK_SCALAR_FUNCTOR(hardsigmoid_backward) BRISK_SCALAR_FUNCTOR(elu_backward)
BRISK_SCALAR_FUNCTOR(leaky_relu_backward) BRISK_SCALAR_FUNCTOR(softshrink_backward)
BRISK_SCALAR_FUNCTOR(hardshrink_backward) BRISK_SCALAR_FUNCTOR(log_sigmoid_backward)
BRISK_SCALAR_FUNCTOR(hardtanh_backward)
// clang-format on
#undef BRISK_SCALAR_FUNCTOR
#endif  // !__CUDACC_RTC__

}  // namespace math
}  // namespace brisk
