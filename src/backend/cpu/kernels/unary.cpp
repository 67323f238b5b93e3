// CPU kernels of the unary ops (one switch over UnaryMode), and of pow and
// atan2. The transcendental float ops run on SIMD vectors through Sleef
// (backend/cpu/vec_math.h, docs/design/vectorized_math.md); the formulas of
// the composite ones (sigmoid, gelu, ...) are those of kernels/math.h,
// written on vectors.
#include "backend/cpu/loops.h"
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
template <class V>
inline V one() {
  return vec::splat<V>(1.0);
}

// Composite ops on vectors (the formulas of kernels/math.h).
// sigmoid: 1 / (1 + exp(-x)) flushes to 0 below x = -88.7 in float32
// (PyTorch's does) although the value is normal down to -87.3 and subnormal
// to -103: lanes below -80 (-700 in double) take math::sigmoid, which goes
// through exp(-|x|) and never overflows (rare lanes: one mask test per vector).
//
// float32 computes math::sigmoid's form directly, e = exp(-|x|), 1/(1+e) or
// e/(1+e), with vec::exp_inline (right down to subnormal results) and
// 1/(1+e) by vec::recip_1_2 (1 + e is in [1, 2]): no call,
// no fixup (the fixup's spill of x and of the mask to the stack made the
// kernel loop 1.6x slower with an inline exp).
template <class V>
inline V sigmoid_v(V x) {
  if constexpr (vec::is_float_vec<V>) {
    const V e = vec::exp_inline(vec::neg_abs(x));  // exp(-|x|)
    const V d = one<V>() + e, d_err = e - (d - one<V>());  // 1 + e = d + d_err exactly
    V r = vec::recip_1_2(d);
    r = r - r * r * d_err;  // 1 / (d + d_err): half an ulp less error
    return vec::select(x < V{}, e * r, r);
  } else {
    const V r = one<V>() / (one<V>() + vec::exp(-x));
    return vec::fixup(x, r, x < vec::splat<V>(-700.0), [](auto v) { return math::sigmoid(v); });
  }
}
struct Sigmoid {
  template <class V>
  V operator()(V x) const { return sigmoid_v(x); }
};
struct Silu {
  template <class V>
  V operator()(V x) const {
    if constexpr (vec::is_float_vec<V>) {
      return x * sigmoid_v(x);
    } else {
      const V r = x / (one<V>() + vec::exp(-x));
      return vec::fixup(x, r, x < vec::splat<V>(-700.0), [](auto v) { return math::silu(v); });
    }
  }
};
struct Mish {
  template <class V>
  V operator()(V x) const { return x * vec::tanh(vec::log1p_full(vec::exp(x))); }
};
// erfc for float32 gelu: the Chebyshev fit of Numerical Recipes (2nd ed.,
// 6.2, "erfcc"; relative error below 1.2e-7 everywhere) on vectors: one exp
// and one division, about 3x cheaper than Sleef's 1.5-ulp erfcf.
template <class V>
inline V erfc_fast(V x) {
  const V z = vec::abs(x);
  const V t = one<V>() / (one<V>() + vec::splat<V>(0.5) * z);
  V p = vec::splat<V>(0.17087277);
  for (double c : {-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
                   1.00002368, -1.26551223})
    p = p * t + vec::splat<V>(c);
  V r;
  if constexpr (vec::is_float_vec<V>)
    r = t * vec::exp_inline(p - z * z);
  else
    r = t * vec::exp(p - z * z);
  return vec::select(x < V{}, vec::splat<V>(2.0) - r, r);
}
// gelu(x) = x/2 (1 + erf(x / sqrt 2)) = x/2 erfc(-x / sqrt 2): the erfc
// form has no cancellation for x < 0 (the erf one loses all digits below
// x = -5 in float32). float32 uses erfc_fast, float64 Sleef's erfc.
struct GeluErf {
  template <class V>
  V operator()(V x) const {
    const V z = x * vec::splat<V>(-0.70710678118654752440);
    if constexpr (vec::is_float_vec<V>)
      return vec::splat<V>(0.5) * x * erfc_fast(z);
    else
      return vec::splat<V>(0.5) * x * vec::erfc(z);
  }
};

// erf, erfc, erfinv: float32 (and float16 / bfloat16 through it) by brisk's
// own formulas in vec_math.h (within 0.62 ulp, 2-3x faster than Sleef's
// double-float ones); float64 through Sleef (erf, erfc) and three Newton
// steps on Sleef's erf / erfc from Giles' start (erfinv).
inline vec::VF erf_v(vec::VF x) { return vec::erf_f32(x); }
inline vec::VD erf_v(vec::VD x) { return vec::erf(x); }
inline vec::VF erfc_v(vec::VF x) { return vec::erfc_f32(x); }
inline vec::VD erfc_v(vec::VD x) { return vec::erfc(x); }
inline vec::VF erfinv_v(vec::VF x) { return vec::erfinv_f32(x); }
inline vec::VD erfinv_v(vec::VD x) {
  using V = vec::VD;
  const V ax = vec::abs(x);
  V y = vec::erfinv_start(ax, -vec::log((one<V>() - ax) * (one<V>() + ax)));
  const V half = vec::splat<V>(0.5), k = vec::splat<V>(1.12837916709551257390);  // 2 / sqrt(pi)
  for (int i = 0; i < 3; ++i) {
    const V d = k * vec::exp(-y * y);
    const V f = vec::select(ax <= half, vec::erf(y) - ax, (one<V>() - ax) - vec::erfc(y));
    y = vec::select(d > V{}, y - f / d, y);
  }
  const V inf = vec::splat<V>(INFINITY), nan = vec::splat<V>(NAN);
  y = vec::select(ax == one<V>(), inf, y);
  y = vec::select(ax > one<V>() || ax != ax, nan, y);  // nan for |x| > 1 and nan
  y = vec::select(x < V{}, -y, y);
  return vec::select(x == V{}, x, y);  // keeps the sign of zero
}
// digamma: float32 on double vectors (vec_math.h, 0.5 ulp); float64 per lane
// through math::digamma, as before.
inline vec::VF digamma_v(vec::VF x) { return vec::digamma_f32(x); }
inline vec::VD digamma_v(vec::VD x) {
  for (int i = 0; i < vec::kLanes<double>; ++i) x[i] = math::digamma(double(x[i]));
  return x;
}
// gelu_tanh(x) = x/2 (1 + tanh u) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3):
// the same function without the cancellation of 1 + tanh u for x < 0.
struct GeluTanh {
  template <class V>
  V operator()(V x) const {
    const V u2 = vec::splat<V>(2 * 0.79788456080286535588) * (x + vec::splat<V>(0.044715) * x * x * x);
    return x * sigmoid_v(u2);
  }
};

#define VEC_OP(name, expr) \
  case UnaryMode::name:    \
    return vec_op(it, #name, [](auto x) { return expr; });
#define FLOAT_OP(name, expr) \
  case UnaryMode::name:      \
    return float_op(it, #name, []<class M>() { return [](M x) -> M { return expr; }; });
#define NUMERIC_OP(name, expr) \
  case UnaryMode::name:        \
    return numeric_op(it, #name, []<class M>() { return [](M x) -> M { return expr; }; });

// logit(x, eps): eps in s0 when given (clamps x to [eps, 1 - eps] first).
void logit_kernel(TensorIter& it, const KernelArgs& a) {
  const double eps = a.has_s0 ? a.s0.to<double>() : -1.0;
  if (eps < 0) return vec_op(it, "logit", [](auto x) { return vec::log(x / (one<decltype(x)>() - x)); });
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "logit", [&] {
    using V = vec::Vec<opmath_t<scalar_t>>;
    using M = opmath_t<scalar_t>;
    const V lo = vec::splat<V>(M(eps)), hi = vec::splat<V>(M(1) - M(eps));
    vec_unary_kernel<scalar_t>(it, [=](V x) {
      x = vec::select(x < lo, lo, vec::select(x > hi, hi, x));
      return vec::log(x / (one<V>() - x));
    });
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
    NUMERIC_OP(relu, math::relu(x))
    VEC_OP(silu, Silu{}(x))
    VEC_OP(mish, Mish{}(x))
    case UnaryMode::logit:
      return logit_kernel(it, a);
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
    default:
      break;
  }
  // Every mode returns above: a row of the unary list without its case here.
  BRISK_INTERNAL_ASSERT(false, "unary op ", unary_mode_name(static_cast<UnaryMode>(a.mode)), " has no CPU kernel");
}
#undef VEC_OP
#undef FLOAT_OP
#undef NUMERIC_OP

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

// pow: integers as before (math::ipow); floats through Sleef's pow, and a
// scalar exponent of 2, 3, 0.5, -0.5, -1 or -2 by multiplication, sqrt and
// division as PyTorch does (so sqrt's sign of zero and nan at -inf hold).
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
      if (e == M(3)) return vec_binary_kernel<scalar_t>(it, [](auto x, auto) { return x * x * x; });
      if (e == M(0.5)) return vec_binary_kernel<scalar_t>(it, [](auto x, auto) { return vec::sqrt(x); });
      if (e == M(-0.5))
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
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
