// CPU kernels of the unary ops (one switch over UnaryMode), and of pow and
// atan2. The transcendental float ops run on SIMD vectors through Sleef
// (backend/cpu/vec_math.h, docs/design/vectorized_math.md); the formulas of
// the composite ones (sigmoid, gelu, ...) are those of kernels/math.h,
// written on vectors.
#include "backend/cpu/loops.h"
#include "backend/cpu/vec_composite.h"
#include "backend/cpu/vec_loops.h"
#include "kernels/math.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

template <class F>
void float_op(TensorIter& it, const char* op, F make) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], op, [&] { unary_kernel<scalar_t>(it, make.template operator()<opmath_t<scalar_t>>()); });
}
template <class F>
void numeric_op(TensorIter& it, const char* op, F make) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[1], op, [&] { unary_kernel<scalar_t>(it, make.template operator()<opmath_t<scalar_t>>()); });
}
template <class F>
void predicate_op(TensorIter& it, const char* op, F make) {
  BRISK_DISPATCH_ALL(it.dtypes[1], op, [&] { elementwise<bool, scalar_t>(it, make.template operator()<opmath_t<scalar_t>>()); });
}

/// A float op on vectors: `f` a generic lambda over vec::VF / vec::VD.
template <class F>
void vec_op(TensorIter& it, const char* op, const F& f) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], op, [&] { vec_unary_kernel<scalar_t>(it, f); });
}
template <class F>
void vec_binary_op(TensorIter& it, const char* op, const F& f) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], op, [&] { vec_binary_kernel<scalar_t>(it, f); });
}
using namespace composite;  // the vector composites (backend/cpu/vec_composite.h), shared with compile's code

struct Sigmoid {
  template <class V>
  V operator()(V x) const { return sigmoid_v(x); }
};
struct Silu {
  template <class V>
  V operator()(V x) const { return silu_v(x); }
};
struct Mish {
  template <class V>
  V operator()(V x) const { return mish_v(x); }
};
struct GeluErf {
  template <class V>
  V operator()(V x) const { return gelu_erf_v(x); }
};
struct GeluTanh {
  template <class V>
  V operator()(V x) const { return gelu_tanh_v(x); }
};

#define VEC_OP(name, expr) \
  case UnaryMode::name:    \
    return vec_op(it, #name, [](auto x) { return expr; });
#define FLOAT_OP(name, expr) \
  case UnaryMode::name:      \
    return float_op(it, #name, []<class M>() { return [](M x) -> M { return expr; }; });
// floor, ceil, round, trunc: the float dtypes on vectors, integers unchanged.
#define ROUND_OP(name, expr)                                                                 \
  case UnaryMode::name:                                                                      \
    if (is_floating_point(it.dtypes[1])) return vec_op(it, #name, [](auto x) { return expr; }); \
    return numeric_op(it, #name, []<class M>() { return [](M x) -> M { return x; }; });
#define NUMERIC_OP(name, expr) \
  case UnaryMode::name:        \
    return numeric_op(it, #name, []<class M>() { return [](M x) -> M { return expr; }; });

// logit(x, eps): with eps, s0 and s1 hold the clamp's bounds eps and 1 - eps
// in the tensor's dtype (the front end rounds them, as torch's CPU kernel).
// float16 and bfloat16 in the dtype's steps, as torch's CPU kernel (logit_v).
void logit_kernel(TensorIter& it, const KernelArgs& a) {
  const double lo_d = a.has_s0 ? a.s0.to<double>() : -1.0;
  const double hi_d = a.has_s1 ? a.s1.to<double>() : 1.0;
  BRISK_INTERNAL_ASSERT(lo_d < 0 || a.has_s1, "logit: a lower bound without an upper one");
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "logit", [&] {
    using V = vec::Vec<opmath_t<scalar_t>>;
    using M = opmath_t<scalar_t>;
    const V code = vec::splat<V>(M(std::is_same_v<scalar_t, Half> ? 1 : std::is_same_v<scalar_t, BFloat16> ? 2 : 0));
    if (lo_d < 0) return vec_unary_kernel<scalar_t>(it, [=](V x) { return logit_v(x, code); });
    const V lo = vec::splat<V>(M(lo_d)), hi = vec::splat<V>(M(hi_d));
    vec_unary_kernel<scalar_t>(it, [=](V x) { return logit_eps_v(x, lo, hi, code); });
  });
}

void unary_kernel_cpu(TensorIter& it, const KernelArgs& a) {
  switch (static_cast<UnaryMode>(a.mode)) {
    NUMERIC_OP(neg, math::neg(x))
    NUMERIC_OP(abs, math::abs(x))
    NUMERIC_OP(sign, math::sign(x))
    VEC_OP(exp, vec::exp(x))
    VEC_OP(exp2, vec::exp2(x))
    VEC_OP(log, vec::log(x))
    VEC_OP(log2, vec::log2(x))
    VEC_OP(log10, vec::log10(x))
    VEC_OP(log1p, vec::log1p_fast(x))
    VEC_OP(expm1, vec::expm1(x))
    VEC_OP(sqrt, vec::sqrt(x))
    VEC_OP(rsqrt, one<decltype(x)>() / vec::sqrt(x))
    NUMERIC_OP(square, math::square(x))
    VEC_OP(reciprocal, one<decltype(x)>() / x)
    VEC_OP(sin, vec::sin(x))
    VEC_OP(cos, vec::cos(x))
    VEC_OP(tan, vec::tan(x))
    VEC_OP(asin, vec::asin(x))
    VEC_OP(acos, vec::acos(x))
    VEC_OP(atan, vec::atan(x))
    VEC_OP(sinh, vec::sinh_full(x))
    VEC_OP(cosh, vec::cosh_full(x))
    VEC_OP(tanh, vec::tanh(x))
    VEC_OP(asinh, vec::asinh_full(x))
    VEC_OP(acosh, vec::acosh_full(x))
    VEC_OP(atanh, vec::atanh(x))
    VEC_OP(sigmoid, Sigmoid{}(x))
    VEC_OP(erf, erf_v(x))
    VEC_OP(erfc, erfc_v(x))
    VEC_OP(erfinv, erfinv_v(x))
    VEC_OP(lgamma, vec::lgamma(x))
    VEC_OP(digamma, digamma_v(x))
    FLOAT_OP(trigamma, math::trigamma(x))
    case UnaryMode::polygamma: {  // n in s0
      BRISK_INTERNAL_ASSERT(a.has_s0, "polygamma: no n");
      const int n = static_cast<int>(a.s0.to<int64_t>());
      return float_op(it, "polygamma", [n]<class M>() { return [n](M x) -> M { return math::polygamma(n, x); }; });
    }
    NUMERIC_OP(relu, math::relu(x))
    VEC_OP(silu, Silu{}(x))
    VEC_OP(mish, Mish{}(x))
    case UnaryMode::logit:
      return logit_kernel(it, a);
    ROUND_OP(floor, vec::floor(x))
    ROUND_OP(ceil, vec::ceil(x))
    ROUND_OP(round, vec::rint(x))
    ROUND_OP(trunc, vec::trunc(x))
    VEC_OP(frac, x - vec::trunc(x))
    case UnaryMode::logical_not:
      if (it.dtypes[0] == kBool && it.dtypes[1] == kBool)  // a bool mask as bytes (0 or 1)
        return elementwise<uint8_t, uint8_t>(it, [](int x) { return x ^ 1; });
      return predicate_op(it, "logical_not", []<class M>() { return [](M x) { return x == M(0); }; });
    case UnaryMode::bitwise_not:
      return BRISK_DISPATCH_INTEGRAL(it.dtypes[1], "bitwise_not", [&] {
        if constexpr (std::is_same_v<scalar_t, bool>)
          unary_kernel<bool>(it, [](bool x) { return !x; });
        else
          unary_kernel<scalar_t>(it, [](scalar_t x) { return scalar_t(~x); });
      });
    case UnaryMode::isnan:
      return predicate_op(it, "isnan", []<class M>() { return [](M x) { return x != x; }; });
    case UnaryMode::isinf:
      return predicate_op(it, "isinf", []<class M>() {
        return [](M x) {
          if constexpr (std::is_floating_point_v<M>) return std::isinf(x);
          else return false;
        };
      });
    case UnaryMode::isfinite:
      return predicate_op(it, "isfinite", []<class M>() {
        return [](M x) {
          if constexpr (std::is_floating_point_v<M>) return std::isfinite(x);
          else return true;
        };
      });
    default:
      break;
  }
  // Every mode returns above: a row of the unary list without its case here.
  BRISK_INTERNAL_ASSERT(false, "unary op ", unary_mode_name(static_cast<UnaryMode>(a.mode)), " has no CPU kernel");
}
#undef VEC_OP
#undef FLOAT_OP
#undef NUMERIC_OP
#undef ROUND_OP

void gelu_kernel(TensorIter& it, const KernelArgs& a) {
  if (a.mode == 1)
    vec_op(it, "gelu", GeluTanh{});
  else
    vec_op(it, "gelu", GeluErf{});
}

void softplus_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "softplus", [&] {
    using M = opmath_t<scalar_t>;
    using V = vec::Vec<M>;
    const M beta = a.s0.to<M>(), th = a.s1.to<M>();
    const V vb = vec::splat<V>(beta), vt = vec::splat<V>(th);
    vec_unary_kernel<scalar_t>(it, [=](V x) {
      const V xb = x * vb;
      return vec::select(xb > vt, x, vec::log1p_full(vec::exp(xb)) / vb);
    });
  });
}

// The activation gradients in one pass (math::activation_grad, Note
// [Activation gradients]): grad and the saved value of one float dtype,
// computed in float for 16-bit and rounded once.
template <math::ActGrad kMode>
void activation_grad_op(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "activation_backward", [&] {
    using M = opmath_t<scalar_t>;
    using V = vec::Vec<M>;
    const V s0 = vec::splat<V>(a.s0.to<double>()), s1 = vec::splat<V>(a.s1.to<double>());
    const V s2 = vec::splat<V>(a.s2.to<double>());
    vec_binary_kernel<scalar_t>(it, [=](V g, V v) { return activation_grad_v<kMode>(g, v, s0, s1, s2); });
  });
}

// The activations of the `activation` slot (math::activation, Note
// [Activation forward modes]): one float dtype, in float for 16-bit.
template <math::Act kMode>
void activation_op(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "activation", [&] {
    using M = opmath_t<scalar_t>;
    using V = vec::Vec<M>;
    const V s0 = vec::splat<V>(a.s0.to<double>()), s1 = vec::splat<V>(a.s1.to<double>());
    const V s2 = vec::splat<V>(a.s2.to<double>());
    vec_unary_kernel<scalar_t>(it, [=](V x) { return activation_v<kMode>(x, s0, s1, s2); });
  });
}

void activation_kernel(TensorIter& it, const KernelArgs& a) {
  using math::Act;
  switch (static_cast<Act>(a.mode)) {
    case Act::hardswish: return activation_op<Act::hardswish>(it, a);
    case Act::hardsigmoid: return activation_op<Act::hardsigmoid>(it, a);
    case Act::elu: return activation_op<Act::elu>(it, a);
    case Act::leaky_relu: return activation_op<Act::leaky_relu>(it, a);
    case Act::softshrink: return activation_op<Act::softshrink>(it, a);
    case Act::hardshrink: return activation_op<Act::hardshrink>(it, a);
    case Act::log_sigmoid: return activation_op<Act::log_sigmoid>(it, a);
    default: break;
  }
  BRISK_INTERNAL_ASSERT(false, "activation: mode ", a.mode, " has no CPU kernel");
}

void activation_backward_kernel(TensorIter& it, const KernelArgs& a) {
  using math::ActGrad;
  switch (static_cast<ActGrad>(a.mode)) {
    case ActGrad::sigmoid: return activation_grad_op<ActGrad::sigmoid>(it, a);
    case ActGrad::tanh: return activation_grad_op<ActGrad::tanh>(it, a);
    case ActGrad::silu: return activation_grad_op<ActGrad::silu>(it, a);
    case ActGrad::mish: return activation_grad_op<ActGrad::mish>(it, a);
    case ActGrad::gelu_erf: return activation_grad_op<ActGrad::gelu_erf>(it, a);
    case ActGrad::gelu_tanh: return activation_grad_op<ActGrad::gelu_tanh>(it, a);
    case ActGrad::logit: return activation_grad_op<ActGrad::logit>(it, a);
    case ActGrad::softplus: return activation_grad_op<ActGrad::softplus>(it, a);
    case ActGrad::hardswish: return activation_grad_op<ActGrad::hardswish>(it, a);
    case ActGrad::hardsigmoid: return activation_grad_op<ActGrad::hardsigmoid>(it, a);
    case ActGrad::elu: return activation_grad_op<ActGrad::elu>(it, a);
    case ActGrad::elu_result: return activation_grad_op<ActGrad::elu_result>(it, a);
    case ActGrad::leaky_relu: return activation_grad_op<ActGrad::leaky_relu>(it, a);
    case ActGrad::softshrink: return activation_grad_op<ActGrad::softshrink>(it, a);
    case ActGrad::hardshrink: return activation_grad_op<ActGrad::hardshrink>(it, a);
    case ActGrad::log_sigmoid: return activation_grad_op<ActGrad::log_sigmoid>(it, a);
    case ActGrad::hardtanh: return activation_grad_op<ActGrad::hardtanh>(it, a);
    case ActGrad::mse: return activation_grad_op<ActGrad::mse>(it, a);
    default: break;
  }
  BRISK_INTERNAL_ASSERT(false, "activation_backward: mode ", a.mode, " has no CPU kernel");
}

// pow: integers as before (math::ipow); floats through Sleef's pow, and a
// scalar exponent of 2, 3, 0.5, -0.5, -1 or -2 by multiplication, sqrt and
// division as PyTorch does (so sqrt's sign of zero and nan at -inf hold).
// Except float16 and +-0.5: PyTorch's CPU kernel takes pow there, not sqrt
// (float16 (-0)^0.5 is +0, (-inf)^0.5 inf, (-0)^-0.5 +inf; its CUDA kernel
// and the other dtypes take sqrt: -0, nan, -inf). bfloat16 by 3 and -2
// rounds x * x to bfloat16 first, as PyTorch's bfloat16 arithmetic does.
void pow_kernel(TensorIter& it, const KernelArgs& a) {
  const bool scalar_exponent = a.mode == 1;  // a Scalar, not a 0-dim tensor (binary.cpp)
  const ScalarType dt = it.dtypes[0];
  if (dt != kFloat && dt != kDouble && dt != kHalf && dt != kBFloat16) {
    return BRISK_DISPATCH_NUMERIC(dt, "pow", [&] {
      using M = opmath_t<scalar_t>;
      if (scalar_exponent && it.strides[2][0] == 0 && it.ndim == 1) {
        const M e = load<scalar_t>(it.data[2]);
        if (e == M(2)) return binary_kernel<scalar_t>(it, [](M x, M) { return x * x; });
      }
      binary_kernel<scalar_t>(it, [](M x, M y) { return math::pow(x, y); });
    });
  }
  BRISK_DISPATCH_FLOAT(dt, "pow", [&] {
    using M = opmath_t<scalar_t>;
    if (scalar_exponent && it.strides[2][0] == 0 && it.ndim == 1) {  // tensor ** scalar
      const M e = load<scalar_t>(it.data[2]);
      auto sq = [](auto x, auto) { return x * x; };
      if (e == M(2)) return vec_binary_kernel<scalar_t>(it, sq);
      // bfloat16: PyTorch multiplies in bfloat16 steps, x * x rounded before
      // the next (float16 takes a float pow there, rounded once)
      if constexpr (std::is_same_v<scalar_t, BFloat16>) {
        if (e == M(3)) return vec_binary_kernel<scalar_t>(it, [](auto x, auto) { return round_bf16_v(x * x) * x; });
        if (e == M(-2))
          return vec_binary_kernel<scalar_t>(it, [](auto x, auto) { return one<decltype(x)>() / round_bf16_v(x * x); });
      }
      if (e == M(3)) return vec_binary_kernel<scalar_t>(it, [](auto x, auto) { return x * x * x; });
      constexpr bool half = std::is_same_v<scalar_t, Half>;
      if (e == M(0.5) && !half) return vec_binary_kernel<scalar_t>(it, [](auto x, auto) { return vec::sqrt(x); });
      if (e == M(-0.5) && !half)
        return vec_binary_kernel<scalar_t>(it, [](auto x, auto) { return one<decltype(x)>() / vec::sqrt(x); });
      if (e == M(-1)) return vec_binary_kernel<scalar_t>(it, [](auto x, auto) { return one<decltype(x)>() / x; });
      if (e == M(-2))
        return vec_binary_kernel<scalar_t>(it, [](auto x, auto) { return one<decltype(x)>() / (x * x); });
    }
    vec_binary_kernel<scalar_t>(it, [](auto x, auto y) { return vec::pow(x, y); });
  });
}

void atan2_kernel(TensorIter& it, const KernelArgs&) {
  vec_binary_op(it, "atan2", [](auto y, auto x) { return vec::atan2(y, x); });
}

}  // namespace

void register_unary_kernels() {
  register_kernel<OpId::unary>(kCPU, unary_kernel_cpu);
  register_kernel<OpId::gelu>(kCPU, gelu_kernel);
  register_kernel<OpId::softplus>(kCPU, softplus_kernel);
  register_kernel<OpId::pow>(kCPU, pow_kernel);
  register_kernel<OpId::atan2>(kCPU, atan2_kernel);
  register_kernel<OpId::activation_backward>(kCPU, activation_backward_kernel);
  register_kernel<OpId::activation>(kCPU, activation_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
