// CPU kernels of the unary ops (one switch over UnaryMode).
#include "backend/cpu/loops.h"
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

#define FLOAT_OP(name, expr) \
  case UnaryMode::name:      \
    return float_op(it, #name, []<class M>() { return [](M x) -> M { return expr; }; });
#define NUMERIC_OP(name, expr) \
  case UnaryMode::name:        \
    return numeric_op(it, #name, []<class M>() { return [](M x) -> M { return expr; }; });

void unary_kernel_cpu(TensorIter& it, const KernelArgs& a) {
  switch (static_cast<UnaryMode>(a.mode)) {
    NUMERIC_OP(neg, math::neg(x))
    NUMERIC_OP(abs, math::abs(x))
    NUMERIC_OP(sign, math::sign(x))
    FLOAT_OP(exp, std::exp(x))
    FLOAT_OP(exp2, std::exp2(x))
    FLOAT_OP(log, std::log(x))
    FLOAT_OP(log2, std::log2(x))
    FLOAT_OP(log10, std::log10(x))
    FLOAT_OP(log1p, std::log1p(x))
    FLOAT_OP(expm1, std::expm1(x))
    FLOAT_OP(sqrt, std::sqrt(x))
    FLOAT_OP(rsqrt, math::rsqrt(x))
    NUMERIC_OP(square, math::square(x))
    FLOAT_OP(reciprocal, M(1) / x)
    FLOAT_OP(sin, std::sin(x))
    FLOAT_OP(cos, std::cos(x))
    FLOAT_OP(tan, std::tan(x))
    FLOAT_OP(asin, std::asin(x))
    FLOAT_OP(acos, std::acos(x))
    FLOAT_OP(atan, std::atan(x))
    FLOAT_OP(sinh, std::sinh(x))
    FLOAT_OP(cosh, std::cosh(x))
    FLOAT_OP(tanh, std::tanh(x))
    FLOAT_OP(sigmoid, math::sigmoid(x))
    FLOAT_OP(erf, std::erf(x))
    FLOAT_OP(erfc, std::erfc(x))
    NUMERIC_OP(relu, math::relu(x))
    FLOAT_OP(silu, math::silu(x))
    NUMERIC_OP(floor, std::is_floating_point_v<M> ? M(std::floor(x)) : x)
    NUMERIC_OP(ceil, std::is_floating_point_v<M> ? M(std::ceil(x)) : x)
    NUMERIC_OP(round, math::round_even(x))
    NUMERIC_OP(trunc, std::is_floating_point_v<M> ? M(std::trunc(x)) : x)
    FLOAT_OP(frac, x - std::trunc(x))
    case UnaryMode::logical_not:
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
  }
}
#undef FLOAT_OP
#undef NUMERIC_OP

void gelu_kernel(TensorIter& it, const KernelArgs& a) {
  if (a.mode == 1)
    float_op(it, "gelu", []<class M>() { return [](M x) { return math::gelu_tanh(x); }; });
  else
    float_op(it, "gelu", []<class M>() { return [](M x) { return math::gelu_erf(x); }; });
}

void softplus_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "softplus", [&] {
    using M = opmath_t<scalar_t>;
    const M beta = a.s0.to<M>(), th = a.s1.to<M>();
    unary_kernel<scalar_t>(it, [=](M x) { return math::softplus(x, beta, th); });
  });
}

}  // namespace

void register_unary_kernels() {
  register_kernel<OpId::unary>(kCPU, unary_kernel_cpu);
  register_kernel<OpId::gelu>(kCPU, gelu_kernel);
  register_kernel<OpId::softplus>(kCPU, softplus_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
