// The test rows of the pointwise ops (Note [The test row]): one row per way
// of calling an op of the op table (src/core/op_table.h) of kind Unary,
// Binary or Ternary, with a float64 reference, an input domain, whether it is
// differentiable and a tolerance per dtype. Four legs run every row:
//   tests/ops/test_op_rows.cpp           CPU against the reference, gradcheck
//                                        (named gradient rows), completeness,
//                                        support matrix;
//   tests/cuda/test_cuda_op_rows.cpp     CUDA against CPU;
//   tests/parity/test_parity_op_rows.cpp libtorch on the same inputs.
//
// Note [The test row]
// A row says how to call the op (`fn` on a list of tensors; `inplace` and
// `out` where the op has those forms), what it should compute (`ref`, one
// element in float64), on which values (`dom`, per input), which dtype the
// result has (`res`), which inputs are differentiable (`args` names them:
// the gradient rows are `<row>.grad_<arg>`) and how close float results must
// be (`tol`, by result dtype). The dtypes come from the op's DTypeClass in the
// table; `without` takes some out and `also` adds some (with the reason in a
// comment), and the support-matrix test expects exactly those to run and the
// others to raise an error naming the op. `alt16_ref` is a second accepted
// float16/bfloat16 result where the op may round an intermediate to the
// dtype (div with rounding). A disagreement with PyTorch that is not fixed
// yet goes into known_bugs(): the legs then expect the error it raises.
#pragma once
#include <brisk/brisk.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "autograd/function.h"  // sgn (an internal op: abs's gradient)
#include "core/op_table.h"

namespace brisk::testing::rows {

/// The values an input takes (floats / integers):
///  Any      [-4, 4], 3 decimals, exact .5 ties / [-6, 6] ([0, 12] uint8)
///  Pos      [0.1, 5] / [1, 8]
///  Unit     (-0.95, 0.95) / {-1, 0, 1} ({0, 1} uint8)
///  NonZero  Any with |x| >= 0.25 / nonzero integers
///  Exp      {0, 0.5, ..., 4} / [0, 4] (exponents, shift counts)
///  Special  Any with nan, +-inf and +-0 for floats
///  GeOne    [1, 5] / [1, 8] (acosh)
///  Prob     (0.02, 0.98) / {0, 1} (logit)
///  Mask     a bool tensor whatever the row's dtype (where's condition)
enum class Dom { Any, Pos, Unit, NonZero, Exp, Special, GeOne, Prob, Mask };
/// The result dtype (all inputs but masks share the row's dtype): Same,
/// Float (integers and bool give the default float dtype), Bool, or
/// IntForBool (the same, but bool gives int64: square, bool with integer
/// Scalar operands).
enum class Res { Same, Float, Bool, IntForBool };

using Fn = std::function<Tensor(const TensorList&)>;
/// In-place and out= forms: (self or out, the inputs).
using InplaceFn = std::function<Tensor&(Tensor&, const TensorList&)>;
using OutFn = std::function<Tensor&(Tensor&, const TensorList&)>;
using Ref = std::function<double(const double*)>;

/// Per result dtype: float32, float64, float16, bfloat16 (rtol = atol).
using Tol = std::array<double, 4>;
constexpr Tol kDefaultTol = {2e-5, 1e-12, 2e-3, 1.6e-2};
inline Tol scaled(double s) { return {kDefaultTol[0] * s, kDefaultTol[1] * s, kDefaultTol[2] * s, kDefaultTol[3] * s}; }

struct Row {
  std::string name;  ///< "exp", "div.floor": the op's name, then a variant
  Op op;             ///< the op-table row it covers
  int arity;
  Fn fn;
  Ref ref;
  std::vector<Dom> dom;           ///< one per input
  Res res = Res::Same;
  std::vector<std::string> args;  ///< input names; empty name: not differentiable
  bool differentiable = false;    ///< gradcheck the inputs with a name
  InplaceFn inplace;              ///< self = input 0
  OutFn out;
  Tol tol = kDefaultTol;
  std::vector<ScalarType> not_dtypes;    ///< the op rejects these although its DTypeClass has them
  std::vector<ScalarType> extra_dtypes;  ///< this form takes these although the op's DTypeClass lacks them
  Ref bool_ref;                          ///< the reference for bool inputs where it differs (bitwise_not)
  /// A second accepted result for 16-bit float dtypes where the op computes an
  /// intermediate in the dtype (as torch's vectorized loop does), given the
  /// dtype: an element passes when it is close to `ref` or to this.
  std::function<double(const double*, ScalarType)> alt16_ref;
};
/// v rounded to a 16-bit float dtype (other dtypes: unchanged).
inline double round_to(double v, ScalarType dt) {
  if (dt == kHalf) return static_cast<float>(Half(static_cast<float>(v)));
  if (dt == kBFloat16) return static_cast<float>(BFloat16(static_cast<float>(v)));
  return v;
}

inline const std::vector<ScalarType>& all_dtypes() {
  static const std::vector<ScalarType> v = {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kUInt8, kInt8, kInt16, kBool};
  return v;
}
inline bool class_has(DTypeClass c, ScalarType t) {
  switch (c) {
    case DTypeClass::All: return true;
    case DTypeClass::Numeric: return t != kBool;
    case DTypeClass::Float: return is_floating_point(t);
    case DTypeClass::Integral: return !is_floating_point(t);
  }
  return false;
}
/// The dtypes a row runs on: its op's DTypeClass less `not_dtypes`.
inline std::vector<ScalarType> row_dtypes(const Row& r) {
  std::vector<ScalarType> v;
  for (ScalarType t : all_dtypes()) {
    bool excluded = false;
    for (ScalarType x : r.not_dtypes) excluded |= x == t;
    bool extra = false;
    for (ScalarType x : r.extra_dtypes) extra |= x == t;
    if ((class_has(op_info(r.op).dtypes, t) || extra) && !excluded) v.push_back(t);
  }
  return v;
}
/// Whether the row runs on dt (else it raises an error naming the op).
inline bool row_takes(const Row& r, ScalarType dt) {
  for (ScalarType t : row_dtypes(r))
    if (t == dt) return true;
  return false;
}
inline ScalarType result_dtype(Res r, ScalarType in) {
  switch (r) {
    case Res::Bool: return kBool;
    case Res::Float: return is_floating_point(in) ? in : default_dtype();
    case Res::IntForBool: return in == kBool ? kInt64 : in;
    default: return in;
  }
}
inline double row_tol(const Row& r, ScalarType result) {
  switch (result) {
    case kFloat: return r.tol[0];
    case kDouble: return r.tol[1];
    case kHalf: return r.tol[2];
    case kBFloat16: return r.tol[3];
    default: return 0;  // integers and bool: exact
  }
}

// ---- references ---------------------------------------------------------------------------

inline double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
/// min(max(x + 3, 0), 6) / 6, NaN for NaN.
inline double hardsigmoid_ref(double x) { return std::isnan(x) ? x : std::min(std::max(x + 3, 0.0), 6.0) / 6; }
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
inline double softplus_ref(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}
inline double py_remainder(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
inline double py_floor_div(double a, double b) {
  if (b == 0) return a / b;
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return std::copysign(0.0, a / b);
  double fl = std::floor(div);
  if (div - fl > 0.5) fl += 1;
  return fl;
}
inline double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
inline double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
inline int64_t as_int(double v) { return static_cast<int64_t>(v); }
inline double lerp_ref(double a, double b, double w) {
  return std::abs(w) < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w);
}
/// erfinv by Newton on erf (float64, to the last bits).
inline double erfinv_ref(double y) {
  if (y <= -1) return y == -1 ? -INFINITY : NAN;
  if (y >= 1) return y == 1 ? INFINITY : NAN;
  double x = 0;
  for (int i = 0; i < 100; ++i) {
    const double step = (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
    x -= step;
    if (std::abs(step) <= 1e-17 * std::abs(x)) break;
  }
  return x;
}
/// digamma: recurrence up to x >= 10, then the asymptotic series; reflection
/// for x < 0.
inline double digamma_ref(double x) {
  if (x == 0) return -INFINITY;
  if (x < 0) {
    if (x == std::floor(x)) return NAN;
    return digamma_ref(1 - x) - M_PI / std::tan(M_PI * x);
  }
  double r = 0;
  while (x < 10) r -= 1 / x, x += 1;
  const double f = 1 / (x * x);
  return r + std::log(x) - 0.5 / x -
         f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}
inline double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
inline double gelu_tanh_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// ---- the rows ------------------------------------------------------------------------------

#define BRISK_ROW_UNARY(name) [](const TensorList& t) { return brisk::name(t[0]); }
#define BRISK_ROW_UNARY_INPLACE(name) [](Tensor& s, const TensorList&) -> Tensor& { return s.name##_(); }
#define BRISK_ROW_UNARY_OUT(name) [](Tensor& o, const TensorList& t) -> Tensor& { return brisk::name##_out(o, t[0]); }
#define BRISK_ROW_BINARY(name) [](const TensorList& t) { return brisk::name(t[0], t[1]); }
#define BRISK_ROW_BINARY_INPLACE(name) [](Tensor& s, const TensorList& t) -> Tensor& { return s.name##_(t[1]); }
#define BRISK_ROW_BINARY_OUT(name) \
  [](Tensor& o, const TensorList& t) -> Tensor& { return brisk::name##_out(o, t[0], t[1]); }

/// A unary row: reference, domain, result dtype, differentiable, then the
/// functional, in-place and out= forms (ROW_U(name) gives all three).
inline Row unary(std::string name, Op op, std::function<double(double)> ref, Dom dom, Res res, bool diff, Fn fn,
                 InplaceFn inplace = nullptr, OutFn out = nullptr) {
  Row r;
  r.name = std::move(name);
  r.op = op;
  r.arity = 1;
  r.fn = std::move(fn);
  r.ref = [ref](const double* x) { return ref(x[0]); };
  r.dom = {dom};
  r.res = res;
  r.args = {"self"};
  r.differentiable = diff;
  r.inplace = std::move(inplace);
  r.out = std::move(out);
  return r;
}
/// References of the activation-gradient rows, in float64.
inline double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
inline double ref_gelu_tanh_grad(double x) {
  const double k = std::sqrt(2 / M_PI), kappa = 0.044715, t = std::tanh(k * (x + kappa * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * kappa * x * x);
}
inline Row binary(std::string name, Op op, std::function<double(double, double)> ref, Dom d0, Dom d1, Res res,
                  bool diff, Fn fn, InplaceFn inplace = nullptr, OutFn out = nullptr,
                  std::vector<std::string> args = {"self", "other"}) {
  Row r;
  r.name = std::move(name);
  r.op = op;
  r.arity = 2;
  r.fn = std::move(fn);
  r.ref = [ref](const double* x) { return ref(x[0], x[1]); };
  r.dom = {d0, d1};
  r.res = res;
  r.args = std::move(args);
  r.differentiable = diff;
  r.inplace = std::move(inplace);
  r.out = std::move(out);
  return r;
}
inline Row ternary(std::string name, Op op, std::function<double(double, double, double)> ref, std::vector<Dom> dom,
                   std::vector<std::string> args, bool diff, Fn fn, InplaceFn inplace = nullptr, OutFn out = nullptr) {
  Row r;
  r.name = std::move(name);
  r.op = op;
  r.arity = 3;
  r.fn = std::move(fn);
  r.ref = [ref](const double* x) { return ref(x[0], x[1], x[2]); };
  r.dom = std::move(dom);
  r.res = Res::Same;
  r.args = std::move(args);
  r.differentiable = diff;
  r.inplace = std::move(inplace);
  r.out = std::move(out);
  return r;
}
inline Row with_tol(Row r, Tol t) {
  r.tol = t;
  return r;
}
/// The op rejects these dtypes although its DTypeClass has them.
inline Row without(Row r, std::vector<ScalarType> dts) {
  r.not_dtypes = std::move(dts);
  return r;
}
/// This form of the op takes these dtypes although its DTypeClass lacks them.
inline Row also(Row r, std::vector<ScalarType> dts) {
  r.extra_dtypes = std::move(dts);
  return r;
}

/// Every test row. Names are unique; several rows may cover one op (variants).
inline const std::vector<Row>& op_test_rows() {
  static const std::vector<Row> rows = [] {
#define ROW_U(name) BRISK_ROW_UNARY(name), BRISK_ROW_UNARY_INPLACE(name), BRISK_ROW_UNARY_OUT(name)
#define ROW_B(name) BRISK_ROW_BINARY(name), BRISK_ROW_BINARY_INPLACE(name), BRISK_ROW_BINARY_OUT(name)
#define ROW_F1(expr) [](double x) { return expr; }
#define ROW_F2(expr) [](double a, double b) { return expr; }
#define ROW_F3(expr) [](double a, double b, double c) { return expr; }
#define ROW_FN(expr) [](const TensorList& t) { return expr; }
#define ROW_IP(expr) [](Tensor& s, const TensorList& t) -> Tensor& { (void)t; return expr; }
#define ROW_OUT(expr) [](Tensor& o, const TensorList& t) -> Tensor& { return expr; }
    using D = Dom;
    std::vector<Row> v = {
        // -- unary ------------------------------------------------------------------------
        unary("neg", Op::neg, ROW_F1(-x), D::Special, Res::Same, true, ROW_U(neg)),
        unary("abs", Op::abs, ROW_F1(std::abs(x)), D::Special, Res::Same, true, ROW_U(abs)),
        unary("sign", Op::sign, ROW_F1(std::isnan(x) ? x : double((0 < x) - (x < 0))), D::Any, Res::Same, true, ROW_U(sign)),
        unary("sgn", Op::sgn, ROW_F1(std::isnan(x) ? x : double((0 < x) - (x < 0))), D::Any, Res::Same, false,
              ROW_FN(brisk::autograd::sgn(t[0]))),
        unary("exp", Op::exp, ROW_F1(std::exp(x)), D::Any, Res::Float, true, ROW_U(exp)),
        unary("exp2", Op::exp2, ROW_F1(std::exp2(x)), D::Any, Res::Float, true, ROW_U(exp2)),
        unary("expm1", Op::expm1, ROW_F1(std::expm1(x)), D::Any, Res::Float, true, ROW_U(expm1)),
        unary("log", Op::log, ROW_F1(std::log(x)), D::Pos, Res::Float, true, ROW_U(log)),
        unary("log.special", Op::log, ROW_F1(std::log(x)), D::Special, Res::Float, false, ROW_FN(brisk::log(t[0]))),
        unary("log2", Op::log2, ROW_F1(std::log2(x)), D::Pos, Res::Float, true, ROW_U(log2)),
        unary("log10", Op::log10, ROW_F1(std::log10(x)), D::Pos, Res::Float, true, ROW_U(log10)),
        unary("log1p", Op::log1p, ROW_F1(std::log1p(x)), D::Pos, Res::Float, true, ROW_U(log1p)),
        unary("sqrt", Op::sqrt, ROW_F1(std::sqrt(x)), D::Pos, Res::Float, true, ROW_U(sqrt)),
        unary("rsqrt", Op::rsqrt, ROW_F1(1 / std::sqrt(x)), D::Pos, Res::Float, true, ROW_U(rsqrt)),
        unary("square", Op::square, ROW_F1(x * x), D::Any, Res::IntForBool, true, ROW_U(square)),
        unary("reciprocal", Op::reciprocal, ROW_F1(1 / x), D::NonZero, Res::Float, true, ROW_U(reciprocal)),
        unary("sin", Op::sin, ROW_F1(std::sin(x)), D::Any, Res::Float, true, ROW_U(sin)),
        unary("cos", Op::cos, ROW_F1(std::cos(x)), D::Any, Res::Float, true, ROW_U(cos)),
        unary("tan", Op::tan, ROW_F1(std::tan(x)), D::Unit, Res::Float, true, ROW_U(tan)),
        unary("asin", Op::asin, ROW_F1(std::asin(x)), D::Unit, Res::Float, true, ROW_U(asin)),
        unary("acos", Op::acos, ROW_F1(std::acos(x)), D::Unit, Res::Float, true, ROW_U(acos)),
        unary("atan", Op::atan, ROW_F1(std::atan(x)), D::Special, Res::Float, true, ROW_U(atan)),
        unary("sinh", Op::sinh, ROW_F1(std::sinh(x)), D::Any, Res::Float, true, ROW_U(sinh)),
        unary("cosh", Op::cosh, ROW_F1(std::cosh(x)), D::Any, Res::Float, true, ROW_U(cosh)),
        unary("tanh", Op::tanh, ROW_F1(std::tanh(x)), D::Special, Res::Float, true, ROW_U(tanh)),
        unary("sigmoid", Op::sigmoid, ROW_F1(sigmoid_ref(x)), D::Any, Res::Float, true, ROW_U(sigmoid)),
        unary("erf", Op::erf, ROW_F1(std::erf(x)), D::Any, Res::Float, true, ROW_U(erf)),
        unary("erfc", Op::erfc, ROW_F1(std::erfc(x)), D::Any, Res::Float, true, ROW_U(erfc)),
        unary("relu", Op::relu, ROW_F1(x > 0 ? x : 0.0), D::Any, Res::Same, true, ROW_U(relu)),
        unary("silu", Op::silu, ROW_F1(x * sigmoid_ref(x)), D::Any, Res::Same, true, ROW_U(silu)),
        unary("floor", Op::floor, ROW_F1(std::floor(x)), D::Special, Res::Same, true, ROW_U(floor)),
        unary("ceil", Op::ceil, ROW_F1(std::ceil(x)), D::Any, Res::Same, true, ROW_U(ceil)),
        unary("round", Op::round, ROW_F1(std::nearbyint(x)), D::Any, Res::Same, true, ROW_U(round)),  // half to even
        unary("trunc", Op::trunc, ROW_F1(std::trunc(x)), D::Any, Res::Same, true, ROW_U(trunc)),
        unary("frac", Op::frac, ROW_F1(x - std::trunc(x)), D::Any, Res::Same, true, ROW_U(frac)),
        unary("logical_not", Op::logical_not, ROW_F1(double(x == 0)), D::Special, Res::Bool, false, ROW_U(logical_not)),
        [] {
          Row r = unary("bitwise_not", Op::bitwise_not, ROW_F1(double(~as_int(x))), D::Any, Res::Same, false, ROW_U(bitwise_not));
          r.bool_ref = [](const double* x) { return double(x[0] == 0); };  // ~ of bool is not
          return r;
        }(),
        unary("isnan", Op::isnan, ROW_F1(double(std::isnan(x))), D::Special, Res::Bool, false, ROW_FN(brisk::isnan(t[0])),
              nullptr, ROW_OUT(brisk::isnan_out(o, t[0]))),
        unary("isinf", Op::isinf, ROW_F1(double(std::isinf(x))), D::Special, Res::Bool, false, ROW_FN(brisk::isinf(t[0])),
              nullptr, ROW_OUT(brisk::isinf_out(o, t[0]))),
        unary("isfinite", Op::isfinite, ROW_F1(double(std::isfinite(x))), D::Special, Res::Bool, false,
              ROW_FN(brisk::isfinite(t[0])), nullptr, ROW_OUT(brisk::isfinite_out(o, t[0]))),
        unary("asinh", Op::asinh, ROW_F1(std::asinh(x)), D::Any, Res::Float, true, ROW_U(asinh)),
        unary("acosh", Op::acosh, ROW_F1(std::acosh(x)), D::GeOne, Res::Float, true, ROW_U(acosh)),
        unary("atanh", Op::atanh, ROW_F1(std::atanh(x)), D::Unit, Res::Float, true, ROW_U(atanh)),
        unary("erfinv", Op::erfinv, ROW_F1(erfinv_ref(x)), D::Unit, Res::Float, true, ROW_U(erfinv)),
        unary("lgamma", Op::lgamma, ROW_F1(std::lgamma(x)), D::Pos, Res::Float, true, ROW_U(lgamma)),
        unary("digamma", Op::digamma, ROW_F1(digamma_ref(x)), D::Pos, Res::Float, true, ROW_U(digamma)),
        unary("mish", Op::mish, ROW_F1(x * std::tanh(softplus_ref(x, 1, 20))), D::Any, Res::Same, true, BRISK_ROW_UNARY(mish),
              ROW_IP(brisk::mish_(s)), BRISK_ROW_UNARY_OUT(mish)),
        unary("logit", Op::logit, ROW_F1(std::log(x / (1 - x))), D::Prob, Res::Float, true, ROW_FN(brisk::logit(t[0])),
              ROW_IP(s.logit_()), ROW_OUT(brisk::logit_out(o, t[0]))),
        unary("logit.eps", Op::logit, ROW_F1(std::log(std::clamp(x, 0.25, 0.75) / (1 - std::clamp(x, 0.25, 0.75)))),
              D::Prob, Res::Float, true, ROW_FN(brisk::logit(t[0], 0.25)), ROW_IP(s.logit_(0.25)),
              ROW_OUT(brisk::logit_out(o, t[0], 0.25))),
        unary("gelu", Op::gelu, ROW_F1(gelu_ref(x)), D::Any, Res::Same, true, ROW_FN(brisk::gelu(t[0])), ROW_IP(s.gelu_())),
        unary("gelu.tanh", Op::gelu, ROW_F1(gelu_tanh_ref(x)), D::Any, Res::Same, true, ROW_FN(brisk::gelu(t[0], "tanh")),
              ROW_IP(s.gelu_("tanh"))),
        unary("softplus", Op::softplus, ROW_F1(softplus_ref(x, 1, 20)), D::Any, Res::Same, true,
              ROW_FN(brisk::softplus(t[0]))),
        // beta 2, threshold 4: both branches inside the domain
        unary("softplus.beta", Op::softplus, ROW_F1(softplus_ref(x, 2, 4)), D::Any, Res::Same, true,
              ROW_FN(brisk::softplus(t[0], 2, 4))),
        // the activations of slot `activation` (Note [Activation forward modes])
        unary("hardswish", Op::hardswish, ROW_F1(x * hardsigmoid_ref(x) ), D::Special, Res::Same, true,
              ROW_FN(brisk::hardswish(t[0])),
              ROW_IP((nn::functional::hardswish(s, nn::functional::HardswishFuncOptions().inplace(true)), s))),
        unary("hardsigmoid", Op::hardsigmoid, ROW_F1(hardsigmoid_ref(x)), D::Special, Res::Same, true,
              ROW_FN(brisk::hardsigmoid(t[0])),
              ROW_IP((nn::functional::hardsigmoid(s, nn::functional::HardsigmoidFuncOptions().inplace(true)), s))),
        unary("elu", Op::elu, ROW_F1(x > 0 ? x : std::expm1(x) * 1.3), D::Special, Res::Same, true,
              ROW_FN(brisk::elu(t[0], 1.3)),
              ROW_IP((nn::functional::elu(s, nn::functional::ELUFuncOptions().alpha(1.3).inplace(true)), s))),
        unary("elu.scaled", Op::elu, ROW_F1(x > 0 ? x * 1.2 : std::expm1(x * 0.8) * 1.3 * 1.2), D::Special, Res::Same,
              true, ROW_FN(brisk::elu(t[0], 1.3, 1.2, 0.8))),
        unary("selu", Op::selu, ROW_F1(x > 0 ? x * kSeluScale : std::expm1(x) * kSeluAlpha * kSeluScale), D::Special,
              Res::Same, true, ROW_FN(brisk::selu(t[0])),
              ROW_IP((nn::functional::selu(s, nn::functional::SELUFuncOptions().inplace(true)), s))),
        unary("celu", Op::celu, ROW_F1(x > 0 ? x : std::expm1(x / 0.7) * 0.7), D::Special, Res::Same, true,
              ROW_FN(brisk::celu(t[0], 0.7)),
              ROW_IP((nn::functional::celu(s, nn::functional::CELUFuncOptions().alpha(0.7).inplace(true)), s))),
        unary("leaky_relu", Op::leaky_relu, ROW_F1(x > 0 ? x : x * 0.2), D::Special, Res::Same, true,
              ROW_FN(brisk::leaky_relu(t[0], 0.2)),
              ROW_IP((nn::functional::leaky_relu(s, nn::functional::LeakyReLUFuncOptions().negative_slope(0.2).inplace(true)), s))),
        unary("softshrink", Op::softshrink,
              ROW_F1(std::abs(x) <= 0.5 ? 0.0 : x > 0 ? x - 0.5 : x + 0.5), D::Any, Res::Same, true,
              ROW_FN(brisk::softshrink(t[0], 0.5))),
        unary("hardshrink", Op::hardshrink, ROW_F1(std::abs(x) <= 0.5 ? 0.0 : x), D::Special, Res::Same, true,
              ROW_FN(brisk::hardshrink(t[0], 0.5))),
        unary("log_sigmoid", Op::log_sigmoid, ROW_F1(std::min(x, 0.0) - std::log1p(std::exp(-std::abs(x)))), D::Special,
              Res::Same, true, ROW_FN(brisk::log_sigmoid(t[0]))),
        unary("nan_to_num", Op::nan_to_num,
              ROW_F1(std::isnan(x) ? 1.5 : x == INFINITY ? 100.0 : x == -INFINITY ? -100.0 : x), D::Special, Res::Same,
              true, ROW_FN(brisk::nan_to_num(t[0], 1.5, 100, -100)), ROW_IP(s.nan_to_num_(1.5, 100, -100))),
        // rsub(x, 3) = 3 - x: a binary op with a Scalar other
        unary("rsub", Op::rsub, ROW_F1(3 - x), D::Any, Res::Same, true, ROW_FN(brisk::rsub(t[0], 3))),
        // bool with the integer bounds promotes to int64 (torch)
        also(unary("clamp.scalar", Op::clamp, ROW_F1(std::isnan(x) ? x : std::min(std::max(x, -1.0), 2.0)), D::Special,
                   Res::IntForBool, true, ROW_FN(brisk::clamp(t[0], -1, 2)), ROW_IP(s.clamp_(-1, 2)),
                   ROW_OUT(brisk::clamp_out(o, t[0], -1, 2))),
             {kBool}),
        // -- binary -----------------------------------------------------------------------
        // floating point only (ReLU's backward; the op table's class); torch also takes integers
        binary("threshold_backward", Op::threshold_backward, ROW_F2(b > 0.5 || std::isnan(b) ? a : 0.0), D::Any, D::Any,
               Res::Same, true, ROW_FN(brisk::threshold_backward(t[0], t[1], 0.5)), nullptr, nullptr,
               {"grad_output", "self"}),
        // the activation gradients (slot activation_backward): the saved value second
        binary("sigmoid_backward", Op::sigmoid_backward, ROW_F2(a * (1 - b) * b), D::Any, D::Unit, Res::Same, true,
               ROW_FN(brisk::sigmoid_backward(t[0], t[1])), nullptr, nullptr, {"grad_output", "output"}),
        binary("tanh_backward", Op::tanh_backward, ROW_F2(a * (1 - b * b)), D::Any, D::Unit, Res::Same, true,
               ROW_FN(brisk::tanh_backward(t[0], t[1])), nullptr, nullptr, {"grad_output", "output"}),
        binary("silu_backward", Op::silu_backward, ROW_F2(a * ref_sigmoid(b) * (1 + b * (1 - ref_sigmoid(b)))), D::Any,
               D::Any, Res::Same, true, ROW_FN(brisk::silu_backward(t[0], t[1])), nullptr, nullptr,
               {"grad_output", "self"}),
        binary("mish_backward", Op::mish_backward,
               ROW_F2(a * (std::tanh(std::log1p(std::exp(b))) +
                           b * ref_sigmoid(b) * (1 - std::pow(std::tanh(std::log1p(std::exp(b))), 2)))),
               D::Any, D::Any, Res::Same, true, ROW_FN(brisk::mish_backward(t[0], t[1])), nullptr, nullptr,
               {"grad_output", "self"}),
        binary("gelu_backward", Op::gelu_backward,
               ROW_F2(a * (0.5 * std::erfc(-b / std::sqrt(2.0)) + b * std::exp(-b * b / 2) / std::sqrt(2 * M_PI))),
               D::Any, D::Any, Res::Same, true, ROW_FN(brisk::gelu_backward(t[0], t[1])), nullptr, nullptr,
               {"grad_output", "self"}),
        binary("gelu_backward.tanh", Op::gelu_backward, ROW_F2(a * ref_gelu_tanh_grad(b)), D::Any, D::Any, Res::Same,
               true, ROW_FN(brisk::gelu_backward(t[0], t[1], "tanh")), nullptr, nullptr, {"grad_output", "self"}),
        binary("logit_backward", Op::logit_backward, ROW_F2(a / (b * (1 - b))), D::Any, D::Prob, Res::Same, true,
               ROW_FN(brisk::logit_backward(t[0], t[1])), nullptr, nullptr, {"grad_output", "self"}),
        // (an eps no 3-decimal input equals: no finite difference across its edge)
        binary("logit_backward.eps", Op::logit_backward,
               ROW_F2(b < 0.1234567 || b > 1 - 0.1234567 ? 0.0 : a / (b * (1 - b))), D::Any, D::Prob, Res::Same, true,
               ROW_FN(brisk::logit_backward(t[0], t[1], 0.1234567)), nullptr, nullptr, {"grad_output", "self"}),
        binary("softplus_backward", Op::softplus_backward,
               ROW_F2(1.5 * b > 4.1237 ? a : a * ref_sigmoid(1.5 * b)), D::Any, D::Any, Res::Same, true,
               ROW_FN(brisk::softplus_backward(t[0], t[1], 1.5, 4.1237)), nullptr, nullptr, {"grad_output", "self"}),
        binary("hardswish_backward", Op::hardswish_backward,
               ROW_F2(b <= -3 ? 0.0 : b < 3 ? a * (b / 3 + 0.5) : a), D::Any, D::Any, Res::Same, true,
               ROW_FN(brisk::hardswish_backward(t[0], t[1])), nullptr, nullptr, {"grad_output", "self"}),
        binary("hardsigmoid_backward", Op::hardsigmoid_backward, ROW_F2(b > -3 && b < 3 ? a / 6 : 0.0), D::Any, D::Any,
               Res::Same, true, ROW_FN(brisk::hardsigmoid_backward(t[0], t[1])), nullptr, nullptr,
               {"grad_output", "self"}),
        binary("elu_backward", Op::elu_backward, ROW_F2(b <= 0 ? a * 0.8 * 1.3 * 1.2 * std::exp(b * 0.8) : a * 1.2),
               D::Any, D::Any, Res::Same, true, ROW_FN(brisk::elu_backward(t[0], 1.3, 1.2, 0.8, false, t[1])), nullptr,
               nullptr, {"grad_output", "self"}),
        binary("elu_backward.result", Op::elu_backward, ROW_F2(b <= 0 ? a * 0.8 * (b + 1.3 * 1.2) : a * 1.2), D::Any,
               D::Any, Res::Same, true, ROW_FN(brisk::elu_backward(t[0], 1.3, 1.2, 0.8, true, t[1])), nullptr, nullptr,
               {"grad_output", "result"}),
        binary("leaky_relu_backward", Op::leaky_relu_backward, ROW_F2(b > 0 ? a : a * 0.2), D::Any, D::Any, Res::Same,
               true, ROW_FN(brisk::leaky_relu_backward(t[0], t[1], 0.2)), nullptr, nullptr, {"grad_output", "self"}),
        binary("softshrink_backward", Op::softshrink_backward, ROW_F2(std::abs(b) <= 0.5 ? 0.0 : a), D::Any, D::Any,
               Res::Same, true, ROW_FN(brisk::softshrink_backward(t[0], t[1], 0.5)), nullptr, nullptr,
               {"grad_output", "self"}),
        binary("hardshrink_backward", Op::hardshrink_backward, ROW_F2(std::abs(b) <= 0.5 ? 0.0 : a), D::Any, D::Any,
               Res::Same, true, ROW_FN(brisk::hardshrink_backward(t[0], t[1], 0.5)), nullptr, nullptr,
               {"grad_output", "self"}),
        binary("log_sigmoid_backward", Op::log_sigmoid_backward, ROW_F2(a * ref_sigmoid(-b)), D::Any, D::Any,
               Res::Same, true, ROW_FN(brisk::log_sigmoid_backward(t[0], t[1])), nullptr, nullptr,
               {"grad_output", "self"}),
        binary("hardtanh_backward", Op::hardtanh_backward, ROW_F2(b <= -1.5 || b >= 2 ? 0.0 : a), D::Any, D::Any,
               Res::Same, true, ROW_FN(brisk::hardtanh_backward(t[0], t[1], -1.5, 2.0)), nullptr, nullptr,
               {"grad_output", "self"}),
        binary("add", Op::add, ROW_F2(a + b), D::Any, D::Any, Res::Same, true, ROW_B(add)),
        binary("add.alpha", Op::add, ROW_F2(a + 2 * b), D::Any, D::Any, Res::Same, true, ROW_FN(brisk::add(t[0], t[1], 2)),
               ROW_IP(s.add_(t[1], 2)), ROW_OUT(brisk::add_out(o, t[0], t[1], 2))),
        binary("sub", Op::sub, ROW_F2(a - b), D::Any, D::Any, Res::Same, true, ROW_B(sub)),
        binary("mul", Op::mul, ROW_F2(a * b), D::Any, D::Any, Res::Same, true, ROW_B(mul)),
        binary("div", Op::div, ROW_F2(a / b), D::Any, D::NonZero, Res::Float, true, ROW_B(div)),
        // 16-bit: the quotient may be rounded to the dtype before trunc/floor
        // (torch's vectorized loop does, its scalar loop does not; so does brisk)
        without(binary("div.trunc", Op::div, ROW_F2(std::trunc(a / b)), D::Any, D::NonZero, Res::Same, true,
                       ROW_FN(brisk::div(t[0], t[1], RoundingMode::Trunc)), ROW_IP(s.div_(t[1], RoundingMode::Trunc)),
                       ROW_OUT(brisk::div_out(o, t[0], t[1], RoundingMode::Trunc))),
                {kBool}),  // torch: no bool kernel for rounding division
        without(binary("div.floor", Op::div, ROW_F2(py_floor_div(a, b)), D::Any, D::NonZero, Res::Same, true,
                       ROW_FN(brisk::div(t[0], t[1], RoundingMode::Floor)), ROW_IP(s.div_(t[1], RoundingMode::Floor)),
                       ROW_OUT(brisk::div_out(o, t[0], t[1], RoundingMode::Floor))),
                {kBool}),
        binary("remainder", Op::remainder, ROW_F2(py_remainder(a, b)), D::Any, D::NonZero, Res::Same, true, ROW_B(remainder)),
        binary("fmod", Op::fmod, ROW_F2(std::fmod(a, b)), D::Any, D::NonZero, Res::Same, true, ROW_B(fmod)),
        binary("pow", Op::pow, ROW_F2(std::pow(a, b)), D::Pos, D::Exp, Res::Same, true, ROW_B(pow)),
        // negative bases: integer exponents only make sense (nan for floats otherwise)
        binary("pow.negative_base", Op::pow, ROW_F2(std::pow(a, b)), D::Any, D::Exp, Res::Same, false,
               ROW_FN(brisk::pow(t[0], t[1]))),
        // Scalar exponents: the kernel's fast paths (2, 3, 0.5, -0.5, -1, -2) and the general one;
        // a Scalar form takes bool tensors (promoted), unlike pow of two tensors
        also(unary("pow.scalar_2", Op::pow, ROW_F1(x * x), D::Any, Res::Float, true, ROW_FN(brisk::pow(t[0], 2.0)),
                   ROW_IP(s.pow_(2.0))),
             {kBool}),
        also(unary("pow.scalar_3", Op::pow, ROW_F1(x * x * x), D::Any, Res::Float, true,
                   ROW_FN(brisk::pow(t[0], 3.0)), ROW_IP(s.pow_(3.0))),
             {kBool}),
        also(unary("pow.scalar_0.5", Op::pow, ROW_F1(std::sqrt(x)), D::Pos, Res::Float, true,
                   ROW_FN(brisk::pow(t[0], 0.5)), ROW_IP(s.pow_(0.5))),
             {kBool}),
        also(unary("pow.scalar_-0.5", Op::pow, ROW_F1(1 / std::sqrt(x)), D::Pos, Res::Float, true,
                   ROW_FN(brisk::pow(t[0], -0.5)), ROW_IP(s.pow_(-0.5))),
             {kBool}),
        also(unary("pow.scalar_-1", Op::pow, ROW_F1(1 / x), D::NonZero, Res::Float, true,
                   ROW_FN(brisk::pow(t[0], -1.0)), ROW_IP(s.pow_(-1.0))),
             {kBool}),
        also(unary("pow.scalar_-2", Op::pow, ROW_F1(1 / (x * x)), D::NonZero, Res::Float, true,
                   ROW_FN(brisk::pow(t[0], -2.0)), ROW_IP(s.pow_(-2.0))),
             {kBool}),
        also(unary("pow.scalar_2.5", Op::pow, ROW_F1(std::pow(x, 2.5)), D::Pos, Res::Float, true,
                   ROW_FN(brisk::pow(t[0], 2.5)), ROW_IP(s.pow_(2.5))),
             {kBool}),
        // an integer exponent keeps integer dtypes (bool ** 3 is int64)
        also(unary("pow.int_scalar_3", Op::pow, ROW_F1(x * x * x), D::Any, Res::IntForBool, true,
                   ROW_FN(brisk::pow(t[0], 3)), ROW_IP(s.pow_(3))),
             {kBool}),
        also(unary("pow.scalar_base", Op::pow, ROW_F1(std::pow(2.0, x)), D::Any, Res::Float, true,
                   ROW_FN(brisk::pow(2.0, t[0]))),
             {kBool}),
        binary("minimum", Op::minimum, ROW_F2(nan_min(a, b)), D::Special, D::Special, Res::Same, true, ROW_FN(brisk::minimum(t[0], t[1])),
               nullptr, BRISK_ROW_BINARY_OUT(minimum)),
        binary("maximum", Op::maximum, ROW_F2(nan_max(a, b)), D::Special, D::Special, Res::Same, true, ROW_FN(brisk::maximum(t[0], t[1])),
               nullptr, BRISK_ROW_BINARY_OUT(maximum)),
        binary("atan2", Op::atan2, ROW_F2(std::atan2(a, b)), D::Any, D::Any, Res::Float, true, ROW_B(atan2)),
        // PyTorch's binary math (slot binary_math); hypot away from (0, 0), where its
        // gradient is 0 / 0; copysign's sign operand nonzero (its gradient is 0, a
        // finite difference across 0 is not)
        binary("hypot", Op::hypot, ROW_F2(std::hypot(a, b)), D::NonZero, D::Any, Res::Same, true, ROW_B(hypot)),
        binary("logaddexp", Op::logaddexp, ROW_F2(std::max(a, b) + std::log1p(std::exp(-std::abs(a - b)))), D::Any,
               D::Any, Res::Same, true, ROW_FN(brisk::logaddexp(t[0], t[1])), nullptr,
               BRISK_ROW_BINARY_OUT(logaddexp)),
        binary("logaddexp2", Op::logaddexp2, ROW_F2(std::max(a, b) + std::log2(1 + std::exp2(-std::abs(a - b)))),
               D::Any, D::Any, Res::Same, true, ROW_FN(brisk::logaddexp2(t[0], t[1])), nullptr,
               BRISK_ROW_BINARY_OUT(logaddexp2)),
        binary("copysign", Op::copysign, ROW_F2(std::copysign(a, b)), D::Special, D::NonZero, Res::Float, true,
               ROW_B(copysign)),
        binary("nextafter", Op::nextafter, ROW_F2(std::nextafter(a, b)), D::Any, D::Any, Res::Same, false,
               ROW_B(nextafter)),
        binary("xlogy", Op::xlogy, ROW_F2(a == 0 ? 0.0 : a * std::log(b)), D::Any, D::Pos, Res::Float, true,
               ROW_B(xlogy)),
        binary("heaviside", Op::heaviside, ROW_F2(a == 0 ? b : double(a > 0)), D::Special, D::Any, Res::Same, false,
               ROW_B(heaviside)),
        binary("eq", Op::eq, ROW_F2(double(a == b)), D::Unit, D::Unit, Res::Bool, false, ROW_B(eq)),
        binary("ne", Op::ne, ROW_F2(double(a != b)), D::Unit, D::Unit, Res::Bool, false, ROW_B(ne)),
        binary("lt", Op::lt, ROW_F2(double(a < b)), D::Special, D::Unit, Res::Bool, false, ROW_B(lt)),
        binary("le", Op::le, ROW_F2(double(a <= b)), D::Unit, D::Unit, Res::Bool, false, ROW_B(le)),
        binary("gt", Op::gt, ROW_F2(double(a > b)), D::Unit, D::Special, Res::Bool, false, ROW_B(gt)),
        binary("ge", Op::ge, ROW_F2(double(a >= b)), D::Unit, D::Unit, Res::Bool, false, ROW_B(ge)),
        binary("logical_and", Op::logical_and, ROW_F2(double(a != 0 && b != 0)), D::Unit, D::Special, Res::Bool, false,
               ROW_B(logical_and)),
        binary("logical_or", Op::logical_or, ROW_F2(double(a != 0 || b != 0)), D::Unit, D::Unit, Res::Bool, false,
               ROW_B(logical_or)),
        binary("logical_xor", Op::logical_xor, ROW_F2(double((a != 0) != (b != 0))), D::Unit, D::Unit, Res::Bool, false,
               ROW_B(logical_xor)),
        binary("bitwise_and", Op::bitwise_and, ROW_F2(double(as_int(a) & as_int(b))), D::Any, D::Any, Res::Same, false,
               ROW_B(bitwise_and)),
        binary("bitwise_or", Op::bitwise_or, ROW_F2(double(as_int(a) | as_int(b))), D::Any, D::Any, Res::Same, false,
               ROW_B(bitwise_or)),
        binary("bitwise_xor", Op::bitwise_xor, ROW_F2(double(as_int(a) ^ as_int(b))), D::Any, D::Any, Res::Same, false,
               ROW_B(bitwise_xor)),
        // counts in [0, 4] (counts past the width: tests/ops/test_new_ops.cpp)
        without(binary("bitwise_left_shift", Op::bitwise_left_shift,
                       ROW_F2(double(int64_t(uint64_t(as_int(a)) << as_int(b)))), D::Any, D::Exp, Res::Same, false,
                       ROW_B(bitwise_left_shift)),
                {kBool}),  // torch: no bool shift kernel
        without(binary("bitwise_right_shift", Op::bitwise_right_shift, ROW_F2(double(as_int(a) >> as_int(b))), D::Any,
                       D::Exp, Res::Same, false, ROW_B(bitwise_right_shift)),
                {kBool}),
        binary("isclose", Op::isclose,
               ROW_F2(double(a == b || (std::isfinite(a) && std::isfinite(b) && std::abs(a - b) <= 1e-8 + 1e-5 * std::abs(b)))),
               D::Unit, D::Special, Res::Bool, false, ROW_FN(brisk::isclose(t[0], t[1]))),
        binary("masked_fill", Op::masked_fill, ROW_F2(b != 0 ? 3.0 : a), D::Any, D::Mask, Res::Same, true,
               ROW_FN(t[0].masked_fill(t[1], 3)), ROW_IP(s.masked_fill_(t[1], 3)), nullptr, {"self", ""}),
        binary("lerp.scalar_weight", Op::lerp, ROW_F2(lerp_ref(a, b, 0.75)), D::Any, D::Any, Res::Same, true,
               ROW_FN(brisk::lerp(t[0], t[1], 0.75)), ROW_IP(s.lerp_(t[1], 0.75)), nullptr, {"self", "end"}),
        // -- ternary ----------------------------------------------------------------------
        ternary("lerp", Op::lerp, ROW_F3(lerp_ref(a, b, c)), {D::Any, D::Any, D::Unit}, {"self", "end", "weight"}, true,
                ROW_FN(brisk::lerp(t[0], t[1], t[2])), ROW_IP(s.lerp_(t[1], t[2]))),
        ternary("addcmul", Op::addcmul, ROW_F3(a + 2 * b * c), {D::Any, D::Any, D::Any}, {"self", "tensor1", "tensor2"},
                true, ROW_FN(brisk::addcmul(t[0], t[1], t[2], 2)), ROW_IP(s.addcmul_(t[1], t[2], 2))),
        without(ternary("addcdiv", Op::addcdiv, ROW_F3(a + 0.5 * (b / c)), {D::Any, D::Any, D::NonZero},
                        {"self", "tensor1", "tensor2"}, true, ROW_FN(brisk::addcdiv(t[0], t[1], t[2], 0.5)),
                        ROW_IP(s.addcdiv_(t[1], t[2], 0.5))),
                {kInt32, kInt64, kUInt8, kInt8, kInt16}),  // torch: integer division with addcdiv is refused
        ternary("clamp", Op::clamp, ROW_F3(std::min(std::max(a, b), c)), {D::Any, D::Any, D::Any}, {"self", "min", "max"},
                true, ROW_FN(brisk::clamp(t[0], t[1], t[2]))),
        ternary("where", Op::where, ROW_F3(a != 0 ? b : c), {D::Mask, D::Special, D::Special}, {"", "self", "other"}, true,
                ROW_FN(brisk::where(t[0], t[1], t[2]))),
    };
    for (Row& r : v) {
      if (r.name == "div.trunc")
        r.alt16_ref = [](const double* x, ScalarType dt) { return std::trunc(round_to(x[0] / x[1], dt)); };
      if (r.name == "div.floor")
        r.alt16_ref = [](const double* x, ScalarType dt) { return py_floor_div(round_to(x[0] / x[1], dt), 1.0); };
    }
    return v;
#undef ROW_U
#undef ROW_B
#undef ROW_F1
#undef ROW_F2
#undef ROW_F3
#undef ROW_FN
#undef ROW_IP
#undef ROW_OUT
  }();
  return rows;
}

/// Rows of kind Unary/Binary/Ternary in the op table that have no test row
/// here, each with the reason (the completeness test reads this list).
struct Exception {
  Op op;
  const char* reason;
};
inline const std::vector<Exception>& row_exceptions() {
  static const std::vector<Exception> v = {
      {Op::outer, "not pointwise in shape (a[i] * b[j]); tests/ops/test_linalg.cpp and the parity Linalg family"},
  };
  return v;
}

/// Known bugs found by the rows, each a (row, dtype, form) that raises where
/// torch 1.13 computes: the legs expect the error (so that a fix is seen and
/// the entry dropped) instead of the result.
struct KnownBug {
  const char* row;
  ScalarType dtype;
  const char* form;  ///< "out", "in-place", "functional"
  const char* what;
};
inline const std::vector<KnownBug>& known_bugs() {
  static const std::vector<KnownBug> v = {
  };
  return v;
}
inline const KnownBug* known_bug(const Row& r, ScalarType dt, const std::string& form) {
  for (const KnownBug& b : known_bugs())
    if (r.name == b.row && dt == b.dtype && form == b.form) return &b;
  return nullptr;
}

// ---- inputs ----------------------------------------------------------------------------------

/// "div.floor float16 out": a row, a dtype and a form, for messages.
inline std::string label(const Row& r, ScalarType dt, const std::string& form) {
  return r.name + " " + std::string(dtype_name(dt)) + " " + form;
}
/// A gtest parameter name of a row's name (letters, digits and `_`).
inline std::string test_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

/// Deterministic values of `dom` stored exactly in dt.
inline std::vector<double> gen_values(int64_t n, ScalarType dt, Dom dom, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 12345u;
  auto uni = [&] {
    s = s * 1664525u + 1013904223u;
    return static_cast<double>(s >> 8) / 16777216.0;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const double u = uni();
    double x;
    if (dom == Dom::Mask || dt == kBool) {
      x = (dom == Dom::Pos || dom == Dom::NonZero || dom == Dom::GeOne) ? 1.0 : (u < 0.5 ? 1.0 : 0.0);
    } else if (is_floating_point(dt)) {
      switch (dom) {
        case Dom::Pos: x = 0.1 + std::round(u * 4900) / 1000; break;
        case Dom::GeOne: x = 1 + std::round(u * 4000) / 1000; break;
        case Dom::Unit: x = -0.95 + std::round(u * 1900) / 1000; break;
        case Dom::Prob: x = 0.02 + std::round(u * 960) / 1000; break;
        case Dom::Exp: x = std::round(u * 8) / 2; break;
        default:
          // every 7th value an exact multiple of 0.5 (rounding ties), else 3 decimals
          x = i % 7 == 3 ? std::round(u * 16 - 8) / 2 : std::round((u * 8 - 4) * 1000) / 1000;
          if (dom == Dom::NonZero && std::abs(x) < 0.25) x += x < 0 ? -0.5 : 0.5;
          if (dom == Dom::Special && i % 5 == 1) {
            const double specials[] = {nan, inf, -inf, 0.0, -0.0};
            x = specials[(i / 5) % 5];
          }
      }
    } else {
      const bool u8 = dt == kUInt8;
      switch (dom) {
        case Dom::Pos:
        case Dom::GeOne: x = 1 + std::floor(u * 8); break;
        case Dom::Unit: x = u8 ? std::floor(u * 2) : std::floor(u * 3) - 1; break;
        case Dom::Prob: x = std::floor(u * 2); break;
        case Dom::Exp: x = std::floor(u * 5); break;
        case Dom::NonZero:
          x = u8 ? 1 + std::floor(u * 12) : std::floor(u * 13) - 6;
          if (x == 0) x = 3;
          break;
        default: x = u8 ? std::floor(u * 13) : std::floor(u * 13) - 6;
      }
    }
    v[static_cast<size_t>(i)] = x;
  }
  return v;
}

/// How an input is laid out in memory.
enum class Layout { Contiguous, Transposed, Strided, Expanded };
/// One input of a layout case (2-D shapes for the non-contiguous layouts).
struct Spec {
  std::vector<int64_t> shape;
  Layout layout = Layout::Contiguous;
};
/// An input of `dom` (a Mask input is bool whatever dt), its values made on
/// the CPU, the layout taken on `device`.
inline Tensor make_input(const Spec& spec, ScalarType dt, Dom dom, uint32_t seed, Device device = Device(kCPU)) {
  if (dom == Dom::Mask) dt = kBool;
  const auto& sh = spec.shape;
  switch (spec.layout) {
    case Layout::Transposed: return make_input({{sh[1], sh[0]}}, dt, dom, seed, device).t();
    case Layout::Strided:
      return make_input({{sh[0], sh[1] * 2}}, dt, dom, seed, device).slice(1, 0, std::nullopt, 2);
    case Layout::Expanded: return make_input({{1, sh[1]}}, dt, dom, seed, device).expand(sh);
    default: break;
  }
  int64_t n = 1;
  for (int64_t d : sh) n *= d;
  Tensor t = tensor(gen_values(n, dt, dom, seed), sh, TensorOptions(dt));
  return device.type == kCPU ? t : t.to(device);
}

/// The layout cases every row runs: per input a spec (the last one repeats).
struct LayoutCase {
  const char* name;
  std::vector<Spec> specs;
  int min_arity = 1;  ///< broadcasting cases need two inputs
};
inline const std::vector<LayoutCase>& layout_cases() {
  using L = Layout;
  static const std::vector<LayoutCase> v = {
      {"contiguous", {{{3, 4}}}},
      {"transposed", {{{3, 4}, L::Transposed}, {{3, 4}}}},
      {"strided", {{{3, 4}, L::Strided}, {{3, 4}, L::Transposed}}},
      {"expanded", {{{3, 4}, L::Expanded}, {{3, 4}, L::Strided}}},
      {"0-dim", {{{}}}},
      {"zero-size", {{{0, 4}}, {{4}}}},
      {"broadcast", {{{3, 1}}, {{4}}, {{1, 4}}}, 2},
      {"broadcast-self", {{{4}}, {{3, 4}, L::Transposed}, {{3, 1}}}, 2},
      {"0-dim-others", {{{2, 3}}, {{}}}, 2},
      {"zero-size-broadcast", {{{3, 0}}, {{3, 1}}, {{1}}}, 2},
      // past the vector width, with a tail: the vectorized loops' main path
      {"long", {{{5, 67}}}},
      {"long-transposed", {{{5, 67}, L::Transposed}, {{67}}}},
  };
  return v;
}
inline Spec spec_of(const LayoutCase& c, int i) { return c.specs[std::min<size_t>(size_t(i), c.specs.size() - 1)]; }

/// The inputs of a row for a layout case and dtype.
inline TensorList make_inputs(const Row& r, const LayoutCase& c, ScalarType dt, uint32_t seed,
                              Device device = Device(kCPU)) {
  TensorList in;
  for (int i = 0; i < r.arity; ++i)
    in.push_back(make_input(spec_of(c, i), dt, r.dom[size_t(i)], seed * 7 + uint32_t(i), device));
  return in;
}

/// The reference over the broadcast of the inputs, as float64 (stored as the
/// result dtype would store it: integers wrap, bool is != 0).
inline double store_as(double v, ScalarType dt) {
  if (std::isnan(v) || is_floating_point(dt)) return v;
  switch (dt) {
    case kBool: return v != 0;
    case kUInt8: return static_cast<uint8_t>(static_cast<int64_t>(v));
    case kInt8: return static_cast<int8_t>(static_cast<int64_t>(v));
    case kInt16: return static_cast<int16_t>(static_cast<int64_t>(v));
    case kInt32: return static_cast<int32_t>(static_cast<int64_t>(v));
    default: return static_cast<double>(static_cast<int64_t>(v));
  }
}
inline Tensor reference(const Row& r, const TensorList& in, ScalarType dt, ScalarType result, bool alt = false) {
  Ref ref = dt == kBool && r.bool_ref ? r.bool_ref : r.ref;
  if (alt) {
    if (!r.alt16_ref || (dt != kHalf && dt != kBFloat16)) return Tensor();
    ref = [f = r.alt16_ref, dt](const double* x) { return f(x, dt); };
  }
  DimVector shape = broadcast_shapes(in[0].sizes(), in[0].sizes());
  for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].sizes());
  std::vector<std::vector<double>> vals;
  for (const Tensor& t : in) vals.push_back(t.expand(shape).to_vector<double>());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> out(static_cast<size_t>(n));
  double x[3];
  for (size_t k = 0; k < out.size(); ++k) {
    for (size_t i = 0; i < in.size(); ++i) x[i] = vals[i][k];
    out[k] = store_as(ref(x), result);
  }
  return tensor(out, shape, kDouble);
}

/// Close to `want` or, element by element, to `alt`.
inline ::testing::AssertionResult close_either(const Tensor& got, const Tensor& want, const Tensor& alt, double tol) {
  if (!(got.sizes() == want.sizes())) return ::testing::AssertionFailure() << "shape " << got.sizes();
  const auto g = got.to(kDouble).contiguous().to_vector<double>(), w = want.to_vector<double>(),
             a = alt.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    auto near = [&](double x) { return (std::isnan(g[i]) && std::isnan(x)) || std::abs(g[i] - x) <= tol + tol * std::abs(x); };
    if (!near(w[i]) && !near(a[i]))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", expected " << w[i] << " or " << a[i];
  }
  return ::testing::AssertionSuccess();
}

// ---- named gradient rows ---------------------------------------------------------------------

/// `<row>.grad_<arg>`: the gradient of a differentiable row w.r.t. one input.
struct GradRow {
  const Row* row;
  int arg;
  std::string name() const { return row->name + ".grad_" + row->args[size_t(arg)]; }
};
inline std::vector<GradRow> grad_rows() {
  std::vector<GradRow> v;
  for (const Row& r : op_test_rows())
    if (r.differentiable)
      for (int i = 0; i < r.arity; ++i)
        if (!r.args[size_t(i)].empty()) v.push_back({&r, i});
  return v;
}

/// Full-precision values away from the kinks and poles of the domain (0,
/// integers and ties are hit with probability ~0), made on the CPU.
inline Tensor smooth_input(IntArrayRef shape, Dom dom, ScalarType dt, uint64_t seed) {
  manual_seed(seed);
  if (dom == Dom::Mask) return rand(shape, kDouble) < 0.5;
  Tensor u = rand(shape, kDouble);
  Tensor sign = where(rand(shape, kDouble) < 0.5, Scalar(-1.0), Scalar(1.0));
  Tensor x;
  switch (dom) {
    case Dom::Pos: x = u * 3 + 0.2; break;
    case Dom::GeOne: x = u * 3 + 1.2; break;
    case Dom::Unit: x = sign * (u * 0.75 + 0.1); break;
    case Dom::Prob: x = u * 0.8 + 0.1; break;
    case Dom::Exp: x = u * 2 + 0.5; break;
    default: x = sign * (u * 1.8 + 0.2); break;
  }
  return x.to(dt);
}

/// Inputs of a gradient row: the differentiated input is broadcast ({4}
/// against {3, 4}) where there are others, transposed where it is alone;
/// the differentiated one is a leaf that requires grad.
inline TensorList grad_inputs(const GradRow& g, ScalarType dt, Device device = Device(kCPU)) {
  const Row& r = *g.row;
  TensorList in;
  for (int j = 0; j < r.arity; ++j) {
    const uint64_t seed = 1000 + 17 * uint64_t(j) + 3 * uint64_t(g.arg);
    const bool alone = j == g.arg && r.arity > 1;
    const std::vector<int64_t> shape = alone ? std::vector<int64_t>{4}
                                       : j % 2 == 0 ? std::vector<int64_t>{4, 3}
                                                    : std::vector<int64_t>{3, 4};
    Tensor t = smooth_input(shape, r.dom[size_t(j)], dt, seed);
    if (device.type != kCPU) t = t.to(device);
    if (!alone && j % 2 == 0) t = t.t();
    if (j == g.arg) {
      t = t.detach();
      t.requires_grad_(true);
    }
    in.push_back(t);
  }
  return in;
}

}  // namespace brisk::testing::rows
