// Front ends of the unary elementwise ops.
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/autocast.h"
#include "core/dispatch.h"
#include "core/round_to.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"
#include "kernels/math.h"
#include "profiler/record.h"

namespace brisk {

namespace detail {
/// polygamma(n, x), n >= 1 (digamma's derivatives: trigamma for n = 1, the
/// internal mode polygamma past it), differentiable (d/dx polygamma(n, x) =
/// polygamma(n + 1, x), as torch's PolygammaBackward0).
Tensor polygamma(int64_t n, const Tensor& x);
}  // namespace detail

namespace {
// The row's group (Note [The unary list]); trigamma and polygamma are internal.
enum class UnaryGroup { Float, FloatOnly, Numeric, Predicate, Integral };

UnaryGroup group_of(UnaryMode m) {
  switch (m) {
#define BRISK_UNARY_GROUP(ctx, name, group, dtypes, amp, forms) \
  case UnaryMode::name:                                         \
    return UnaryGroup::group;
    BRISK_FORALL_UNARY_OPS(BRISK_UNARY_GROUP, _)
#undef BRISK_UNARY_GROUP
    default:
      return UnaryGroup::Float;
  }
}

using detail::round_to;  // core/round_to.h
/// logit's clamp [eps, 1 - eps] in dtype `dt`, as torch's CPU kernels form it
/// (logit_kernel, logit_backward_kernel: scalar_t eps and scalar_t(1) - eps,
/// so float16 eps = 1e-6 gives the upper bound 1 and logit inf). Torch's CUDA
/// kernels form them in the accumulate type (float for the 16-bit dtypes):
/// off the CPU the bounds are float's. Negative eps: none ({-1, 1}).
std::pair<double, double> logit_bounds(ScalarType dt, double eps, bool cpu) {
  if (!(eps >= 0)) return {-1.0, 1.0};
  if (!cpu && dt != kDouble) dt = kFloat;
  const double lo = round_to(dt, eps);
  // float arithmetic for float and the 16-bit types (their subtraction rounds a float difference)
  const double hi = dt == kDouble ? 1.0 - lo : round_to(dt, static_cast<double>(1.0f - static_cast<float>(lo)));
  return {lo, hi};
}

// The kernel call, without autograd.
// `s0`: logit's eps (nan: none), polygamma's n.
Tensor unary_run(const char* name, UnaryMode mode, const Tensor& x, Tensor* out, bool inplace, double s0 = NAN) {
  const UnaryGroup g = group_of(mode);
  // PyTorch's bool rules: sign(bool) is the identity, square(bool) is int64.
  if (x.dtype() == kBool && !out) {
    if (mode == UnaryMode::sign) return inplace ? x : x.clone();  // sign_ of bool leaves it alone
    if (mode == UnaryMode::square && !inplace) return x.to(kInt64).square();
  }
  if (x.dtype() == kBool && out && (mode == UnaryMode::sign || mode == UnaryMode::square)) {
    // The same results written to out=, cast as any op's result is.
    const Tensor r = mode == UnaryMode::sign ? x : x.to(kInt64).square();
    BRISK_CHECK(r.dtype() == out->dtype() || can_cast(r.dtype(), out->dtype()), name, "result type ", r.dtype(),
                " can't be cast to the desired output type ", out->dtype());
    TensorIter iter;
    IterBuilder(name).output(*out).resize_out().input(r).no_cast_inputs().build(iter);
    kernel<OpId::copy>(out->device().type, name)(iter, KernelArgs{});
    out->bump_version();
    return *out;
  }
  if (g == UnaryGroup::FloatOnly)
    BRISK_CHECK(x.is_floating_point(), name, "expected a floating point tensor, got ", x.dtype());
  IterBuilder it(name);
  if (inplace)
    it.inplace(x);
  else if (out)
    it.output(*out).resize_out();
  it.input(x);
  switch (g) {
    case UnaryGroup::Float:
    case UnaryGroup::FloatOnly:
      it.promote_int_to_float();
      break;
    case UnaryGroup::Numeric:
      BRISK_CHECK(x.dtype() != kBool, name,
                  "not supported for bool tensors");
      break;
    case UnaryGroup::Predicate:
      it.output_dtype(kBool);
      break;
    case UnaryGroup::Integral:
      BRISK_CHECK(!x.is_floating_point(), name, "only integer and bool tensors are supported, got ", x.dtype());
      break;
  }
  TensorIter iter;
  it.build(iter);
  KernelArgs a;
  a.mode = static_cast<int>(mode);
  if (mode == UnaryMode::logit && !std::isnan(s0)) {  // the clamp's bounds in the dtype the kernel computes in
    const auto [lo, hi] = logit_bounds(iter.dtypes[1], s0, iter.result.is_cpu());
    a.s0 = lo, a.s1 = hi, a.has_s0 = a.has_s1 = true;
  }
  if (mode == UnaryMode::polygamma) a.s0 = static_cast<int64_t>(s0), a.has_s0 = true;
  // bool abs/relu compute on uint8 semantics: identical values.
  kernel<OpId::unary>(iter.result.device().type, name)(iter, a);
  iter.finish();
  if (inplace) x.bump_version();
  if (out) out->bump_version();
  return std::move(iter.result);
}

// ---- backward ------------------------------------------------------------------
// Modes with a gradient. The others give bool results or are only defined
// for integers (logical_not, bitwise_not, isnan, isinf, isfinite).
bool differentiable(UnaryMode m) {
  const UnaryGroup g = group_of(m);
  return g != UnaryGroup::Predicate && g != UnaryGroup::Integral;
}
// Modes whose formula reads the input (an in-place form saves a copy of
// self's old value); the others read the result or nothing.
bool reads_input(UnaryMode m) {
  switch (m) {
    case UnaryMode::abs: case UnaryMode::log: case UnaryMode::log2: case UnaryMode::log10: case UnaryMode::log1p:
    case UnaryMode::square: case UnaryMode::sin: case UnaryMode::cos: case UnaryMode::asin: case UnaryMode::acos:
    case UnaryMode::atan: case UnaryMode::sinh: case UnaryMode::cosh: case UnaryMode::erf: case UnaryMode::erfc:
    case UnaryMode::silu: case UnaryMode::asinh: case UnaryMode::acosh: case UnaryMode::atanh:
    case UnaryMode::lgamma: case UnaryMode::digamma: case UnaryMode::mish: case UnaryMode::logit:
    case UnaryMode::trigamma: case UnaryMode::polygamma:
      return true;
    default:
      return false;
  }
}

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi)
constexpr double kSqrtPiOver2 = 0.88622692545275801365;    // sqrt(pi) / 2

using autograd::BackwardCtx;

/// The activation gradients compute in float for float16/bfloat16 and round
/// once (the activation_backward kernels, as PyTorch's *_backward); their
/// composite form (below, for create_graph) would round after every op.
/// f(g, v) evaluated in float32 for 16-bit operands, its result rounded to
/// their dtype once.
template <class F>
Tensor in_opmath(const Tensor& g, const Tensor& v, const F& f) {
  if (!is_reduced_float(g.dtype()) && !is_reduced_float(v.dtype())) return f(g, v);
  const ScalarType out = promote_types(g.dtype(), v.dtype());
  return f(g.to(kFloat), v.to(kFloat)).to(out);
}

// d gelu(x) / dx for the exact (erf) and the tanh approximation; a 16-bit x
// in float32, as PyTorch's kernels (x^2 of float16 65504 is inf, and the tanh
// form's x (1 - t^2) x^2 term was 0 * inf = NaN).
Tensor gelu_derivative(const Tensor& x_in, bool tanh_approx) {
  const Tensor x = is_reduced_float(x_in.dtype()) ? x_in.to(kFloat) : x_in;
  if (!tanh_approx) {
    constexpr double kInvSqrt2 = 0.70710678118654752440, kInvSqrt2Pi = 0.39894228040143267794;
    const Tensor cdf = ((x * kInvSqrt2).erf() + 1) * 0.5;
    const Tensor pdf = (x * x * -0.5).exp() * kInvSqrt2Pi;
    return cdf + x * pdf;
  }
  constexpr double kBeta = 0.79788456080286535588, kKappa = 0.044715;  // sqrt(2/pi)
  const Tensor x2 = x * x;
  const Tensor t = ((x + x2 * x * kKappa) * kBeta).tanh();
  const Tensor dinner = (x2 * (3 * kKappa) + 1) * kBeta;
  return (t + 1) * 0.5 + x * 0.5 * (1 - t * t) * dinner;
}

// mse_loss's gradient norm * d * g (ActGrad::mse) with ops, differentiable:
// d = x - t (or t - x), norm_dt the norm in d's dtype. A product norm * d
// past the dtype's range is kept in a wider type (Note [mse_loss's gradient]).
Tensor mse_grad_ops(const Tensor& g, const Tensor& d, double norm_dt) {
  const ScalarType dt = d.dtype();
  if (dt == kDouble) return d * norm_dt * g;
  // norm <= 1 (a mean over 2 or more elements): norm * d never passes the
  // range; on the CPU, where the test is cheap, also any norm whose product
  // has no inf
  const Tensor pd = d * norm_dt;
  if (norm_dt <= 1 || (pd.is_cpu() && !pd.isinf().any().item<bool>())) return pd * g;
  const ScalarType wide = dt == kFloat ? kDouble : kFloat;
  const Tensor p = d.to(wide) * norm_dt;  // exact: a 16-bit (float32) d times norm fits float (double)
  const Tensor kept = where(pd.isinf() & p.isfinite(), p, pd.to(wide));  // pd is p rounded to dt
  return (kept * g.to(wide)).to(dt);  // one rounding of the dtype's product
}

// The composite formulas of the activation gradients (the fused kernel's
// definition, math::activation_grad): what runs where the gradient itself
// is differentiated (create_graph), so that its graph is brisk's ops.
Tensor act_grad_composite(math::ActGrad mode, const Tensor& grad, const Tensor& v, double s0, double s1, double s2) {
  using math::ActGrad;
  // elu's alpha * scale as the kernels form it, in the computing type
  const bool f64 = v.dtype() == kDouble;
  const double negcoef = f64 ? s0 * s1 : double(float(s0) * float(s1));
  switch (mode) {
    case ActGrad::sigmoid:
      return in_opmath(grad, v, [](const Tensor& g, const Tensor& y) { return g * (1 - y) * y; });
    case ActGrad::tanh:
      return in_opmath(grad, v, [](const Tensor& g, const Tensor& y) { return g * (1 - y * y); });
    case ActGrad::silu:
      return in_opmath(grad, v, [](const Tensor& g, const Tensor& x) {
        const Tensor s = x.sigmoid();
        return g * s * (1 + x * (1 - s));
      });
    case ActGrad::mish:
      return in_opmath(grad, v, [](const Tensor& g, const Tensor& x) {
        const Tensor t = x.softplus(1, 1e30).tanh();  // softplus without its threshold, as mish uses it
        return g * (t + x * x.sigmoid() * (1 - t * t));
      });
    case ActGrad::gelu_erf:
    case ActGrad::gelu_tanh:
      return in_opmath(grad, v, [mode](const Tensor& g, const Tensor& x) {
        return g * gelu_derivative(x, mode == ActGrad::gelu_tanh);
      });
    case ActGrad::logit: {  // torch's infinitely_differentiable_logit_backward; s0, s1 the bounds (s0 < 0: none)
      // s2 != 0 (16-bit on the CPU): the kernel's steps, each rounded to the dtype
      const Tensor r = s2 != 0 ? grad / (v * (1 - v))
                               : in_opmath(grad, v, [](const Tensor& g, const Tensor& x) { return g / (x * (1 - x)); });
      const double lo = s0 < 0 ? 0 : s0, hi = s0 < 0 ? 1 : s1;
      return where((v >= lo).logical_and(v <= hi), r, s0 < 0 ? full_like(r, NAN) : zeros_like(r));
    }
    case ActGrad::softplus:
      return in_opmath(grad, v, [s0, s1](const Tensor& g, const Tensor& x) {
        const Tensor bx = x * s0;
        // PyTorch's softplus_double_backward masks x * beta < threshold: at
        // x * beta == threshold the slope is the sigmoid's but its derivative
        // is 0 (fuzzer nn3, seed 601 case 86567); at a NaN x its mask is 0
        // and the sigmoid's slope NaN: NaN (seed 603 case 51696)
        return where(bx > s1, g, g * where(bx.ge(s1).logical_not(), bx, bx.detach()).sigmoid());
      });
    case ActGrad::hardswish: {
      // the middle piece reads g and x through its mask: outside it an
      // infinite g or x would meet the zero gradient of a second derivative
      // (inf * 0 = NaN; fuzzer nn3 seed 611 case 219703)
      const Tensor in_mid = v.gt(-3.0).logical_and(v.lt(3.0));
      const Tensor gm = where(in_mid, grad, Scalar(0.0)), xm = where(in_mid, v, Scalar(0.0));
      const Tensor mid = in_opmath(gm, xm, [](const Tensor& g, const Tensor& x) { return g * (x / 3.0 + 0.5); });
      return where(v.le(-3.0), Scalar(0.0), where(v.lt(3.0), mid, grad));
    }
    case ActGrad::hardsigmoid: {
      const Tensor scaled = grad.dtype() == kDouble
                                ? grad / 6.0
                                : in_opmath(grad, grad, [](const Tensor& g, const Tensor&) {
                                    return g * static_cast<double>(1.0f / 6.0f);
                                  });
      return where(v.gt(-3.0).logical_and(v.lt(3.0)), scaled, Scalar(0.0));
    }
    case ActGrad::elu:
      // exp reads x through a mask (no inf for a large positive x meets the
      // zero gradient in a second derivative), and at x = 0 through a
      // constant, so the second derivative there is 0 as PyTorch's
      // elu_double_backward (x < 0)
      return in_opmath(grad, v, [&](const Tensor& g, const Tensor& x) {
        const Tensor xm = where(x.lt(0), x, Scalar(0.0));
        const Tensor neg = (s2 == 1.0 ? g : g * s2) * negcoef * (s2 == 1.0 ? xm : xm * s2).exp();
        return where(x.le(0), neg, s1 == 1.0 ? g : g * s1);
      });
    case ActGrad::elu_result:
      return in_opmath(grad, v, [&](const Tensor& g, const Tensor& y) {
        return where(y.le(0), (s2 == 1.0 ? g : g * s2) * (y + negcoef), s1 == 1.0 ? g : g * s1);
      });
    case ActGrad::leaky_relu: return where(v.gt(0), grad, grad * s0);
    case ActGrad::softshrink:
    case ActGrad::hardshrink: return where(v.ge(-s0).logical_and(v.le(s0)), Scalar(0.0), grad);
    case ActGrad::log_sigmoid:  // sigmoid(-x): its derivative is PyTorch's log_sigmoid_double_backward
      return in_opmath(grad, v, [](const Tensor& g, const Tensor& x) { return g * x.neg().sigmoid(); });
    case ActGrad::hardtanh: return where(v.le(s0).logical_or(v.ge(s1)), Scalar(0.0), grad);
    case ActGrad::mse: return mse_grad_ops(grad, s1 < 0 ? zeros_like(v) - v : v, s0);
    default: break;
  }
  BRISK_INTERNAL_ASSERT(false, "activation gradient mode ", static_cast<int>(mode), " has no composite");
}

Tensor act_grad_run(const char* name, math::ActGrad mode, const Tensor& grad, const Tensor& v, double s0, double s1,
                    double s2);

/// One activation gradient: the fused kernel (slot activation_backward), or
/// the composite where it is itself differentiated (sigmoid's and tanh's
/// have torch's derivatives instead) or the device has no kernel.
Tensor act_grad(const char* name, math::ActGrad mode, const Tensor& grad, const Tensor& v, double s0 = -1,
                double s1 = 0, double s2 = 0) {
  BRISK_PROFILE_OP(name, grad, v);
  BRISK_CHECK(grad.defined() && v.defined(), name, "grad_output and the saved tensor must be defined");
  BRISK_CHECK(is_floating_point(grad.dtype()) && is_floating_point(v.dtype()), name,
              "expected floating point tensors, got ", grad.dtype(), " and ", v.dtype());
  BRISK_CHECK(grad.device() == v.device(), name, "expected tensors on one device, got ", grad.device(), " and ",
              v.device());
  if (BRISK_LIKELY(!autograd::should_record(grad, v))) return act_grad_run(name, mode, grad, v, s0, s1, s2);
  using math::ActGrad;
  // The piecewise-constant slopes (g times a mask or a constant) are linear
  // in g and constant in x: their node's derivative in g is the same
  // kernel, in x zeros (PyTorch's: a defined zero gradient, so that x still
  // gets one); the value stays the kernel's.
  const bool piecewise = mode == ActGrad::hardsigmoid || mode == ActGrad::leaky_relu ||
                         mode == ActGrad::softshrink || mode == ActGrad::hardshrink || mode == ActGrad::hardtanh;
  if (piecewise) {
    Tensor r;
    {
      NoGradGuard ng;
      r = act_grad_run(name, mode, grad, v, s0, s1, s2);
    }
    using namespace autograd;
    const char* nm = mode == ActGrad::hardsigmoid  ? "HardsigmoidBackwardBackward0"
                     : mode == ActGrad::leaky_relu ? "LeakyReluBackwardBackward0"
                     : mode == ActGrad::softshrink ? "SoftshrinkBackwardBackward0"
                     : mode == ActGrad::hardshrink ? "HardshrinkBackwardBackward0"
                                                   : "HardtanhBackwardBackward0";
    record(nm, {r}, {grad, v}, {save(v)}, [name, mode, s0, s1, s2](BackwardCtx& c) -> TensorList {
      const Tensor xs = c.saved(0);
      Tensor dg, dx;
      if (c.needs(0)) dg = act_grad(name, mode, c.grad(), xs, s0, s1, s2);
      if (c.needs(1)) dx = zeros_like(xs);
      return {dg, dx};
    });
    return r;
  }
  if (mode == ActGrad::softplus) {
    // PyTorch's derivatives of softplus_backward(g, x): in g the same
    // function of the incoming gradient; in x softplus_double_backward,
    // sigmoid_backward(gg * g, sigmoid(beta x)) * (beta x < threshold) * beta,
    // the mask a product: NaN at a NaN x, and where an infinite g meets the
    // zero slope at x = inf (fuzzer nn3, seed 613 case 229097; the composite
    // of selects gave a finite value there)
    Tensor r;
    {
      NoGradGuard ng;
      r = act_grad_run(name, mode, grad, v, s0, s1, s2);
    }
    using namespace autograd;
    record("SoftplusBackwardBackward0", {r}, {grad, v}, {save(grad), save(v)}, [s0, s1](BackwardCtx& c) -> TensorList {
      const Tensor& gg = c.grad();
      const Tensor g = c.saved(0), x = c.saved(1);
      Tensor dg, dx;
      if (c.needs(0)) dg = softplus_backward(gg, x, s0, s1);
      if (c.needs(1)) {
        const Tensor bx = x * s0;
        dx = sigmoid_backward(gg * g, bx.sigmoid()) * bx.lt(s1) * s0;
      }
      return {dg, dx};
    });
    return r;
  }
  if (mode != ActGrad::sigmoid && mode != ActGrad::tanh) return act_grad_composite(mode, grad, v, s0, s1, s2);
  // torch's derivatives of sigmoid_backward(g, y) and tanh_backward(g, y): in g
  // the same function of the incoming gradient, in y gg * g * (1 - 2y) and
  // gg * (-2y * g) (one product: the composite's two terms give inf - inf
  // where an infinite gradient meets them)
  Tensor r;
  {
    NoGradGuard ng;
    r = act_grad_run(name, mode, grad, v, s0, s1, s2);
  }
  using namespace autograd;
  record(mode == ActGrad::sigmoid ? "SigmoidBackwardBackward0" : "TanhBackwardBackward0", {r}, {grad, v},
         {save(grad), save(v)}, [mode](BackwardCtx& c) -> TensorList {
           const Tensor& gg = c.grad();
           const Tensor g = c.saved(0), y = c.saved(1);
           const bool sig = mode == ActGrad::sigmoid;
           Tensor dg, dy;
           if (c.needs(0)) dg = sig ? sigmoid_backward(gg, y) : tanh_backward(gg, y);
           if (c.needs(1)) dy = sig ? gg * g * (-2 * y + 1) : gg * (-2 * y * g);
           return {dg, dy};
         });
  return r;
}

Tensor act_grad_run(const char* name, math::ActGrad mode, const Tensor& grad, const Tensor& v, double s0, double s1,
                    double s2) {
  if (!supports(OpId::activation_backward, grad.device().type)) return act_grad_composite(mode, grad, v, s0, s1, s2);
  IterBuilder it(name);
  it.input(grad).input(v);
  TensorIter iter;
  it.build(iter);
  KernelArgs a;
  a.mode = static_cast<int>(mode);
  a.s0 = s0;  // logit's lower bound eps (-1: none), softplus' beta
  a.s1 = s1;  // logit's upper bound 1 - eps, softplus' threshold
  a.s2 = s2;  // elu's input_scale
  a.has_s0 = a.has_s1 = true;
  kernel<OpId::activation_backward>(iter.result.device().type, name)(iter, a);
  iter.finish();
  return std::move(iter.result);
}

// Records r = mode(x). In place, `r` is self (already modified) and `x` a copy
// of its old value (defined only when reads_input(mode)). `s0`: logit's eps
// (nan: none), polygamma's n.
void record_unary(UnaryMode mode, const Tensor& r, const Tensor& x, bool inplace, double s0 = NAN) {
  const double eps = s0;
  using namespace autograd;
  auto rec = [&](const char* node, std::initializer_list<SaveSpec> saved, auto fn) {
    if (inplace)
      record_inplace(node, r, {r}, saved, std::move(fn));
    else
      record(node, {r}, {x}, saved, std::move(fn));
  };
  // A zero gradient almost everywhere (piecewise-constant ops), as in torch.
  auto zero = [](BackwardCtx& c) -> TensorList { return {zeros_like(c.grad())}; };
  switch (mode) {
    case UnaryMode::neg:
      rec("NegBackward0", {}, [](BackwardCtx& c) -> TensorList { return {c.grad().neg()}; });
      break;
    case UnaryMode::abs:
      rec("AbsBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList { return {c.grad() * autograd::sgn(c.saved(0))}; });
      break;
    case UnaryMode::sign: rec("SignBackward0", {}, zero); break;
    case UnaryMode::floor: rec("FloorBackward0", {}, zero); break;
    case UnaryMode::ceil: rec("CeilBackward0", {}, zero); break;
    case UnaryMode::round: rec("RoundBackward0", {}, zero); break;
    case UnaryMode::trunc: rec("TruncBackward0", {}, zero); break;
    case UnaryMode::frac:
      rec("FracBackward0", {}, [](BackwardCtx& c) -> TensorList { return {c.grad()}; });
      break;
    case UnaryMode::exp:
      rec("ExpBackward0", {save_output(r)}, [](BackwardCtx& c) -> TensorList { return {c.grad() * c.saved(0)}; });
      break;
    case UnaryMode::exp2:
      rec("Exp2Backward0", {save_output(r)},
          [](BackwardCtx& c) -> TensorList { return {c.grad() * c.saved(0) * kLn2}; });
      break;
    case UnaryMode::expm1:
      rec("Expm1Backward0", {save_output(r)},
          [](BackwardCtx& c) -> TensorList { return {c.grad() * (c.saved(0) + 1)}; });
      break;
    case UnaryMode::log:
      rec("LogBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList { return {c.grad() / c.saved(0)}; });
      break;
    case UnaryMode::log2:
      rec("Log2Backward0", {save(x)},
          [](BackwardCtx& c) -> TensorList { return {c.grad() / (c.saved(0) * kLn2)}; });
      break;
    case UnaryMode::log10:
      rec("Log10Backward0", {save(x)},
          [](BackwardCtx& c) -> TensorList { return {c.grad() / (c.saved(0) * kLn10)}; });
      break;
    case UnaryMode::log1p:
      rec("Log1PBackward0", {save(x)},
          [](BackwardCtx& c) -> TensorList { return {c.grad() / (c.saved(0) + 1)}; });
      break;
    case UnaryMode::sqrt:
      rec("SqrtBackward0", {save_output(r)},
          [](BackwardCtx& c) -> TensorList { return {c.grad() / (c.saved(0) * 2)}; });
      break;
    case UnaryMode::rsqrt:
      rec("RsqrtBackward0", {save_output(r)}, [](BackwardCtx& c) -> TensorList {
        // torch's formula and order, -0.5 * grad * result.pow(3): in
        // float16 grad * y^3 can pass 65504 where the order below stays finite
        const Tensor y = c.saved(0);
        return {c.grad() * -0.5 * y.pow(3)};
      });
      break;
    case UnaryMode::square:  // torch: square is pow(x, 2)
      rec("PowBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList { return {c.grad() * (c.saved(0) * 2)}; });
      break;
    case UnaryMode::reciprocal:
      rec("ReciprocalBackward0", {save_output(r)}, [](BackwardCtx& c) -> TensorList {
        const Tensor y = c.saved(0);
        return {-c.grad() * (y * y)};
      });
      break;
    case UnaryMode::sin:
      rec("SinBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList { return {c.grad() * c.saved(0).cos()}; });
      break;
    case UnaryMode::cos:
      rec("CosBackward0", {save(x)},
          [](BackwardCtx& c) -> TensorList { return {c.grad() * c.saved(0).sin().neg()}; });
      break;
    case UnaryMode::tan:
      rec("TanBackward0", {save_output(r)}, [](BackwardCtx& c) -> TensorList {
        const Tensor y = c.saved(0);
        return {c.grad() * (y.square() + 1)};  // torch: 1 + result.pow(2)
      });
      break;
    case UnaryMode::asin:
      rec("AsinBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        const Tensor v = c.saved(0);
        return {c.grad() * (1 - v * v).rsqrt()};
      });
      break;
    case UnaryMode::acos:
      rec("AcosBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        const Tensor v = c.saved(0);
        return {-c.grad() * (1 - v * v).rsqrt()};
      });
      break;
    case UnaryMode::atan:
      rec("AtanBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        const Tensor v = c.saved(0);
        return {c.grad() / (v * v + 1)};
      });
      break;
    case UnaryMode::sinh:
      rec("SinhBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList { return {c.grad() * c.saved(0).cosh()}; });
      break;
    case UnaryMode::cosh:
      rec("CoshBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList { return {c.grad() * c.saved(0).sinh()}; });
      break;
    case UnaryMode::tanh:
      rec("TanhBackward0", {save_output(r)}, [](BackwardCtx& c) -> TensorList {
        return {tanh_backward(c.grad(), c.saved(0))};
      });
      break;
    case UnaryMode::sigmoid:
      rec("SigmoidBackward0", {save_output(r)}, [](BackwardCtx& c) -> TensorList {
        return {sigmoid_backward(c.grad(), c.saved(0))};
      });
      break;
    case UnaryMode::erf:
      rec("ErfBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        const Tensor v = c.saved(0);
        return {c.grad() * (v.square().neg().exp() * kTwoOverSqrtPi)};
      });
      break;
    case UnaryMode::erfc:
      rec("ErfcBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        const Tensor v = c.saved(0);
        return {c.grad() * (v.square().neg().exp() * -kTwoOverSqrtPi)};
      });
      break;
    case UnaryMode::relu:
      // torch's threshold_backward: zero where result <= 0 (nan passes the gradient).
      rec("ReluBackward0", {save_output(r)}, [](BackwardCtx& c) -> TensorList {
        // threshold_backward selects (an infinite g where the result is 0
        // gives 0, as torch; a product with the mask gave inf * 0 = NaN) and
        // records its own backward under create_graph.
        return {threshold_backward(c.grad(), c.saved(0), 0)};
      });
      break;
    case UnaryMode::silu:
      rec("SiluBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        return {silu_backward(c.grad(), c.saved(0))};
      });
      break;
    case UnaryMode::asinh:
      rec("AsinhBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        const Tensor v = c.saved(0);
        return {c.grad() * (v.square() + 1).rsqrt()};
      });
      break;
    case UnaryMode::acosh:
      rec("AcoshBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        const Tensor v = c.saved(0);
        return {c.grad() * (v * v - 1).rsqrt()};
      });
      break;
    case UnaryMode::atanh:
      rec("AtanhBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        const Tensor v = c.saved(0);
        return {c.grad() / (1 - v.square())};
      });
      break;
    case UnaryMode::erfinv:  // d erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x)^2)
      rec("ErfinvBackward0", {save_output(r)}, [](BackwardCtx& c) -> TensorList {
        const Tensor y = c.saved(0);
        return {c.grad() * (y.square().exp() * kSqrtPiOver2)};
      });
      break;
    case UnaryMode::lgamma:
      rec("LgammaBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList { return {c.grad() * c.saved(0).digamma()}; });
      break;
    case UnaryMode::digamma:  // d digamma = polygamma(1, x) (trigamma), itself differentiable
      rec("DigammaBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        return {c.grad() * detail::polygamma(1, c.saved(0))};
      });
      break;
    case UnaryMode::trigamma:
    case UnaryMode::polygamma: {  // d polygamma(n, x) = polygamma(n + 1, x)
      const int64_t n = mode == UnaryMode::trigamma ? 1 : static_cast<int64_t>(s0);
      rec("PolygammaBackward0", {save(x)}, [n](BackwardCtx& c) -> TensorList {
        return {c.grad() * detail::polygamma(n + 1, c.saved(0))};
      });
      break;
    }
    case UnaryMode::mish:
      rec("MishBackward0", {save(x)}, [](BackwardCtx& c) -> TensorList {
        return {mish_backward(c.grad(), c.saved(0))};
      });
      break;
    case UnaryMode::logit:
      // torch: zero outside [eps, 1 - eps] when eps is given; nan outside
      // [0, 1] without it.
      rec("LogitBackward0", {save(x)}, [eps](BackwardCtx& c) -> TensorList {
        return {logit_backward(c.grad(), c.saved(0), std::isnan(eps) ? std::nullopt : std::optional<double>(eps))};
      });
      break;
    default:  // a differentiable row without its derivative here
      BRISK_INTERNAL_ASSERT(false, "unary op ", unary_mode_name(mode), " has no derivative in record_unary");
  }
}

Tensor unary_impl(const char* name, UnaryMode mode, const Tensor& x, Tensor* out, bool inplace, double eps = NAN) {
  BRISK_PROFILE_OP(name, x);
  BRISK_CHECK(x.defined(), name, "input 0 is an undefined tensor");
  if (inplace)
    autograd::check_inplace(x, name);
  else if (out && differentiable(mode))
    autograd::check_out(name, x);
  if (BRISK_LIKELY(!autograd::should_record(x)) || out || !differentiable(mode))
    return unary_run(name, mode, x, out, inplace, eps);
  // Recording: the kernel runs without building a graph of its own.
  // The old value keeps its history (clone records): double backward needs it.
  Tensor old = inplace && reads_input(mode) ? x.clone() : Tensor();
  Tensor r;
  {
    NoGradGuard ng;
    r = unary_run(name, mode, x, nullptr, inplace, eps);
  }
  if (r.is_floating_point()) record_unary(mode, inplace ? x : r, inplace ? old : x, inplace, eps);
  return r;
}
}  // namespace

// The functions of the unary list's rows (by their `forms`).
#define BRISK_UNARY_FN(name)                                                                     \
  Tensor name(const Tensor& x) {                                                                 \
    BRISK_AUTOCAST(name, name, x);                                                               \
    return unary_impl(#name, UnaryMode::name, x, nullptr, false);                                \
  }                                                                                              \
  Tensor& name##_out(Tensor& out, const Tensor& x) {                                             \
    unary_impl(#name "_out", UnaryMode::name, x, &out, false);                                   \
    return out;                                                                                  \
  }
#define BRISK_UNARY_DEF_Full(name)                                \
  BRISK_UNARY_FN(name)                                            \
  Tensor Tensor::name() const { return brisk::name(*this); }      \
  Tensor& Tensor::name##_() const {                                     \
    unary_impl(#name "_", UnaryMode::name, *this, nullptr, true); \
    return const_cast<Tensor&>(*this);                                                 \
  }
#define BRISK_UNARY_DEF_NoInplace(name) \
  BRISK_UNARY_FN(name)                  \
  Tensor Tensor::name() const { return brisk::name(*this); }
#define BRISK_UNARY_DEF_FreeInplace(name)                    \
  BRISK_UNARY_FN(name)                                       \
  Tensor& name##_(Tensor& x) {                               \
    unary_impl(#name "_", UnaryMode::name, x, nullptr, true); \
    return x;                                                \
  }
#define BRISK_UNARY_DEF_Custom(name)
#define BRISK_UNARY_DEF(ctx, name, group, dtypes, amp, forms) BRISK_UNARY_DEF_##forms(name)
BRISK_FORALL_UNARY_OPS(BRISK_UNARY_DEF, _)
#undef BRISK_UNARY_DEF
#undef BRISK_UNARY_DEF_Full
#undef BRISK_UNARY_DEF_NoInplace
#undef BRISK_UNARY_DEF_FreeInplace
#undef BRISK_UNARY_DEF_Custom
#undef BRISK_UNARY_FN
Tensor logit(const Tensor& x, std::optional<double> eps) {
  return unary_impl("logit", UnaryMode::logit, x, nullptr, false, eps.value_or(NAN));
}
Tensor& logit_out(Tensor& out, const Tensor& x, std::optional<double> eps) {
  unary_impl("logit_out", UnaryMode::logit, x, &out, false, eps.value_or(NAN));
  return out;
}
Tensor Tensor::logit(std::optional<double> eps) const { return brisk::logit(*this, eps); }
Tensor& Tensor::logit_(std::optional<double> eps) const {
  unary_impl("logit_", UnaryMode::logit, *this, nullptr, true, eps.value_or(NAN));
  return const_cast<Tensor&>(*this);
}
namespace detail {
Tensor polygamma(int64_t n, const Tensor& x) {
  BRISK_CHECK(n >= 1, "polygamma", "internal: n >= 1 expected, got ", n);
  BRISK_CHECK(x.defined(), "polygamma", "input 0 is an undefined tensor");
  const UnaryMode mode = n == 1 ? UnaryMode::trigamma : UnaryMode::polygamma;
  const double s0 = static_cast<double>(n);
  if (BRISK_LIKELY(!autograd::should_record(x))) return unary_run("polygamma", mode, x, nullptr, false, s0);
  Tensor r;
  {
    NoGradGuard ng;
    r = unary_run("polygamma", mode, x, nullptr, false, s0);
  }
  record_unary(mode, r, x, false, s0);
  return r;
}
}  // namespace detail

namespace {
Tensor gelu_run(const Tensor& x, bool tanh_approx, bool inplace) {
  IterBuilder it("gelu");
  if (inplace) it.inplace(x);
  it.input(x);
  TensorIter iter;
  it.build(iter);
  KernelArgs a;
  a.mode = tanh_approx;
  kernel<OpId::gelu>(iter.result.device().type, "gelu")(iter, a);
  iter.finish();
  if (inplace) x.bump_version();
  return std::move(iter.result);
}

Tensor gelu_impl(const Tensor& x, std::string_view approximate, bool inplace) {
  BRISK_PROFILE_OP(inplace ? "gelu_" : "gelu", x);
  BRISK_CHECK(approximate == "none" || approximate == "tanh", "gelu", "approximate must be 'none' or 'tanh', got '",
              approximate, "'");
  BRISK_CHECK(x.is_floating_point(), "gelu", "expected a floating point tensor, got ", x.dtype());
  const bool tanh_approx = approximate == "tanh";
  if (inplace) autograd::check_inplace(x, "gelu_");
  if (BRISK_LIKELY(!autograd::should_record(x))) return gelu_run(x, tanh_approx, inplace);
  Tensor old = inplace ? x.clone() : Tensor();  // with its history, for double backward
  Tensor r;
  {
    NoGradGuard ng;
    r = gelu_run(x, tanh_approx, inplace);
  }
  using namespace autograd;
  auto fn = [tanh_approx](BackwardCtx& c) -> TensorList {
    return {gelu_backward(c.grad(), c.saved(0), tanh_approx ? "tanh" : "none")};
  };
  if (inplace)
    record_inplace("GeluBackward0", x, {x}, {save(old)}, fn);
  else
    record("GeluBackward0", {r}, {x}, {save(x)}, fn);
  return r;
}
}  // namespace
Tensor gelu(const Tensor& x, std::string_view approximate) { return gelu_impl(x, approximate, false); }
Tensor Tensor::gelu(std::string_view approximate) const { return gelu_impl(*this, approximate, false); }
Tensor& Tensor::gelu_(std::string_view approximate) const {
  gelu_impl(*this, approximate, true);
  return const_cast<Tensor&>(*this);
}

namespace {
Tensor softplus_run(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  IterBuilder it("softplus");
  it.input(x);
  TensorIter iter;
  it.build(iter);
  KernelArgs a;
  a.s0 = beta;
  a.s1 = threshold;
  kernel<OpId::softplus>(iter.result.device().type, "softplus")(iter, a);
  iter.finish();
  return std::move(iter.result);
}
}  // namespace

Tensor softplus(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  BRISK_AUTOCAST(softplus, softplus, x, beta, threshold);
  BRISK_PROFILE_OP("softplus", x, beta, threshold);
  BRISK_CHECK(x.is_floating_point(), "softplus", "expected a floating point tensor, got ", x.dtype());
  if (BRISK_LIKELY(!autograd::should_record(x))) return softplus_run(x, beta, threshold);
  Tensor r;
  {
    NoGradGuard ng;
    r = softplus_run(x, beta, threshold);
  }
  using namespace autograd;
  // Above the threshold softplus is the identity; below, its slope is sigmoid(beta * x).
  record("SoftplusBackward0", {r}, {x}, {save(x)}, [beta, threshold](BackwardCtx& c) -> TensorList {
    return {softplus_backward(c.grad(), c.saved(0), beta, threshold)};
  });
  return r;
}
Tensor Tensor::softplus(const Scalar& beta, const Scalar& threshold) const { return brisk::softplus(*this, beta, threshold); }

// ---- the activations of the `activation` slot (Note [Activation forward modes]) --------
namespace {
struct ActSpec {
  const char* name;      // the op table's row (and the profiler's name)
  const char* node;      // the autograd node
  const char* backward;  // the gradient's row
  math::Act mode;
  math::ActGrad grad;
};
Tensor activation_run(const ActSpec& sp, const Tensor& x, double s0, double s1, double s2) {
  IterBuilder it(sp.name);
  it.input(x);
  TensorIter iter;
  it.build(iter);
  KernelArgs a;
  a.mode = static_cast<int>(sp.mode);
  a.s0 = s0, a.s1 = s1, a.s2 = s2;
  a.has_s0 = a.has_s1 = true;
  kernel<OpId::activation>(iter.result.device().type, sp.name)(iter, a);
  iter.finish();
  return std::move(iter.result);
}
/// y = mode(x) in one kernel; where x records, one node whose backward is the
/// gradient's row (the activation_backward kernel, its composite when
/// differentiated again).
Tensor activation(const ActSpec& sp, const Tensor& x, double s0 = 0, double s1 = 1, double s2 = 1) {
  BRISK_PROFILE_OP(sp.name, x);
  BRISK_CHECK(x.defined(), sp.name, "input is undefined");
  BRISK_CHECK(x.is_floating_point(), sp.name, "expected a floating point tensor, got ", x.dtype());
  if (BRISK_LIKELY(!autograd::should_record(x))) return activation_run(sp, x, s0, s1, s2);
  Tensor r;
  {
    NoGradGuard ng;
    r = activation_run(sp, x, s0, s1, s2);
  }
  using namespace autograd;
  record(sp.node, {r}, {x}, {save(x)}, [sp, s0, s1, s2](BackwardCtx& c) -> TensorList {
    return {act_grad(sp.backward, sp.grad, c.grad(), c.saved(0), s0, s1, s2)};
  });
  return r;
}
/// math::round_buffer's code of a dtype: 1 float16, 2 bfloat16, 0 none.
double round_code(ScalarType dt) { return dt == kHalf ? 1 : dt == kBFloat16 ? 2 : 0; }
/// log_sigmoid's gradient's s0: the rounding of PyTorch's CPU buffer
/// exp(-|x|) to x's dtype (its CUDA kernels recompute in float).
double log_sigmoid_buffer_code(const Tensor& x) { return x.defined() && x.is_cpu() ? round_code(x.dtype()) : 0; }
/// The shrinks' lambda as PyTorch's kernels read it: in the input's dtype
/// (a float16 input compares with and subtracts float16(0.3)).
double shrink_lambda(const Tensor& x, double l) { return x.defined() ? round_to(x.dtype(), l) : l; }
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
using math::Act;
using math::ActGrad;
}  // namespace

Tensor hardswish(const Tensor& x) {
  static constexpr ActSpec sp{"hardswish", "HardswishBackward0", "hardswish_backward", Act::hardswish,
                              ActGrad::hardswish};
  return activation(sp, x);
}
Tensor hardsigmoid(const Tensor& x) {
  static constexpr ActSpec sp{"hardsigmoid", "HardsigmoidBackward0", "hardsigmoid_backward", Act::hardsigmoid,
                              ActGrad::hardsigmoid};
  return activation(sp, x);
}
Tensor elu(const Tensor& x, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  static constexpr ActSpec sp{"elu", "EluBackward0", "elu_backward", Act::elu, ActGrad::elu};
  return activation(sp, x, alpha.to_double(), scale.to_double(), input_scale.to_double());
}
Tensor selu(const Tensor& x) {
  static constexpr ActSpec sp{"selu", "EluBackward0", "elu_backward", Act::elu, ActGrad::elu};
  return activation(sp, x, kSeluAlpha, kSeluScale, 1.0);
}
Tensor celu(const Tensor& x, const Scalar& alpha) {
  static constexpr ActSpec sp{"celu", "EluBackward0", "elu_backward", Act::elu, ActGrad::elu};
  const double a = alpha.to_double();
  BRISK_CHECK(a != 0.0, "celu", "alpha must not be 0 (it divides the input)");
  return activation(sp, x, a, 1.0, 1.0 / a);
}
Tensor leaky_relu(const Tensor& x, const Scalar& negative_slope) {
  static constexpr ActSpec sp{"leaky_relu", "LeakyReluBackward0", "leaky_relu_backward", Act::leaky_relu,
                              ActGrad::leaky_relu};
  return activation(sp, x, negative_slope.to_double());
}
Tensor softshrink(const Tensor& x, const Scalar& lambd) {
  static constexpr ActSpec sp{"softshrink", "SoftshrinkBackward0", "softshrink_backward", Act::softshrink,
                              ActGrad::softshrink};
  const double l = lambd.to_double();
  BRISK_CHECK(l >= 0, "softshrink", "lambda must be greater or equal to 0, got ", l);
  return activation(sp, x, shrink_lambda(x, l));
}
Tensor hardshrink(const Tensor& x, const Scalar& lambd) {
  static constexpr ActSpec sp{"hardshrink", "HardshrinkBackward0", "hardshrink_backward", Act::hardshrink,
                              ActGrad::hardshrink};
  return activation(sp, x, shrink_lambda(x, lambd.to_double()));
}
Tensor log_sigmoid(const Tensor& x) {
  static constexpr ActSpec sp{"log_sigmoid", "LogSigmoidBackward0", "log_sigmoid_backward", Act::log_sigmoid,
                              ActGrad::log_sigmoid};
  // s0: the gradient's buffer rounding (log_sigmoid_buffer_code); the forward kernel ignores it
  return activation(sp, x, log_sigmoid_buffer_code(x));
}

// ---- nan_to_num ---------------------------------------------------------------------
// A composite: NaN, +inf and -inf replaced by the given values (0 and the
// dtype's largest and lowest finite values by default), each converted to the
// dtype as PyTorch does (1e10 becomes inf in float16). Integers and bools
// have none of them: the result is a copy (in place: nothing happens).
namespace {
Tensor nan_to_num_impl(const char* nm, const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
                       std::optional<double> neginf, bool inplace) {
  BRISK_PROFILE_OP(nm, x);
  BRISK_CHECK(x.defined(), nm, "input is an undefined tensor");
  if (inplace) autograd::check_inplace(x, nm);
  if (!x.is_floating_point()) {
    if (inplace) return x;
    NoGradGuard ng;  // integer tensors never require grad
    return x.clone();
  }
  // The replacement values converted to the dtype first (1e10 -> inf in
  // float16), so that the clamp and fills below take them as they are.
  struct Bounds {
    double hi, lo, pos, neg, nan;
  };
  const Bounds b = BRISK_DISPATCH_FLOAT(x.dtype(), nm, [&] {
    const double hi = double(std::numeric_limits<scalar_t>::max()), lo = double(std::numeric_limits<scalar_t>::lowest());
    auto to_dtype = [](double v) { return double(scalar_t(v)); };
    return Bounds{hi, lo, to_dtype(posinf.value_or(hi)), to_dtype(neginf.value_or(lo)), to_dtype(nan.value_or(0.0))};
  });
  const double hi = b.hi, lo = b.lo, pos = b.pos, neg = b.neg;
  nan = b.nan;
  const bool rec = autograd::should_record(x);
  Tensor finite, r;
  {
    NoGradGuard ng;  // one node below records the whole update
    if (rec) finite = x.isfinite();
    if (pos >= hi && neg <= lo) {
      // Finite values lie inside [neg, pos]: a clamp moves only the
      // infinities (NaN passes through it), then one fill for NaN.
      Tensor is_nan = x.isnan();
      r = inplace ? Tensor(x).clamp_(neg, pos) : x.clamp(neg, pos);
      r.masked_fill_(is_nan, nan.value_or(0.0));
    } else {
      Tensor is_nan = x.isnan(), is_pos = x.eq(INFINITY), is_neg = x.eq(-INFINITY);
      r = inplace ? x : x.clone();
      r.masked_fill_(is_nan, nan.value_or(0.0)).masked_fill_(is_pos, pos).masked_fill_(is_neg, neg);
    }
  }
  if (!inplace) detail::mark_new_version(r);  // Note [Version counters]
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    // The gradient passes where the input was finite, else 0.
    auto fn = [](BackwardCtx& c) -> TensorList { return {c.grad() * c.saved(0)}; };
    if (inplace)
      record_inplace("NanToNumBackward0", x, {x}, {save(finite)}, fn);
    else
      record("NanToNumBackward0", {r}, {x}, {save(finite)}, fn);
  }
  return inplace ? x : r;
}
}  // namespace

namespace autograd {
Tensor sgn(const Tensor& x) {
  Tensor s;
  {
    NoGradGuard no_grad;
    s = x.sign();
  }
  if (BRISK_UNLIKELY(should_record(x)))
    record("SgnBackward0", {s}, {x}, {}, [](BackwardCtx&) -> TensorList { return {Tensor()}; });
  return s;
}
}  // namespace autograd

Tensor nan_to_num(const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  return nan_to_num_impl("nan_to_num", x, nan, posinf, neginf, false);
}
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) const {
  return nan_to_num_impl("nan_to_num", *this, nan, posinf, neginf, false);
}
Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) const {
  nan_to_num_impl("nan_to_num_", *this, nan, posinf, neginf, true);
  return const_cast<Tensor&>(*this);
}

// ---- the activation gradients (Note [Activation gradients] in kernels/math.h) ----------------
Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  return act_grad("sigmoid_backward", math::ActGrad::sigmoid, grad_output, output);
}
Tensor tanh_backward(const Tensor& grad_output, const Tensor& output) {
  return act_grad("tanh_backward", math::ActGrad::tanh, grad_output, output);
}
Tensor silu_backward(const Tensor& grad_output, const Tensor& self) {
  return act_grad("silu_backward", math::ActGrad::silu, grad_output, self);
}
Tensor mish_backward(const Tensor& grad_output, const Tensor& self) {
  return act_grad("mish_backward", math::ActGrad::mish, grad_output, self);
}
Tensor gelu_backward(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  BRISK_CHECK(approximate == "none" || approximate == "tanh", "gelu_backward",
              "approximate must be 'none' or 'tanh', got '", approximate, "'");
  return act_grad("gelu_backward", approximate == "tanh" ? math::ActGrad::gelu_tanh : math::ActGrad::gelu_erf,
                  grad_output, self);
}
Tensor logit_backward(const Tensor& grad_output, const Tensor& self, std::optional<double> eps) {
  BRISK_CHECK(!eps || !std::isnan(*eps), "logit_backward", "eps is nan");
  // a negative eps is none, as in logit (no clamp); the bounds in the operands' dtype
  const auto [lo, hi] = eps && grad_output.defined() && self.defined()
                            ? logit_bounds(promote_types(grad_output.dtype(), self.dtype()), *eps, self.is_cpu())
                            : std::pair<double, double>{-1.0, 1.0};
  // 16-bit on the CPU in the dtype's steps, as torch's CPU kernel (composite::activation_grad_v)
  const double code = grad_output.defined() && self.defined() && self.is_cpu()
                          ? round_code(promote_types(grad_output.dtype(), self.dtype()))
                          : 0;
  return act_grad("logit_backward", math::ActGrad::logit, grad_output, self, lo, hi, code);
}
Tensor softplus_backward(const Tensor& grad_output, const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  return act_grad("softplus_backward", math::ActGrad::softplus, grad_output, self, beta.to_double(),
                  threshold.to_double());
}
Tensor hardswish_backward(const Tensor& grad_output, const Tensor& self) {
  return act_grad("hardswish_backward", math::ActGrad::hardswish, grad_output, self);
}
Tensor hardsigmoid_backward(const Tensor& grad_output, const Tensor& self) {
  return act_grad("hardsigmoid_backward", math::ActGrad::hardsigmoid, grad_output, self);
}
Tensor elu_backward(const Tensor& grad_output, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale,
                    bool is_result, const Tensor& self_or_result) {
  BRISK_CHECK(!is_result || alpha.to_double() >= 0, "elu_backward",
              "in-place elu with a negative alpha is not differentiable (is_result with alpha ", alpha.to_double(),
              ")");
  return act_grad("elu_backward", is_result ? math::ActGrad::elu_result : math::ActGrad::elu, grad_output,
                  self_or_result, alpha.to_double(), scale.to_double(), input_scale.to_double());
}
Tensor leaky_relu_backward(const Tensor& grad_output, const Tensor& self, const Scalar& negative_slope,
                           bool self_is_result) {
  BRISK_CHECK(!self_is_result || negative_slope.to_double() >= 0, "leaky_relu_backward",
              "in-place leaky_relu with a negative slope is not differentiable (self_is_result with slope ",
              negative_slope.to_double(), ")");
  return act_grad("leaky_relu_backward", math::ActGrad::leaky_relu, grad_output, self, negative_slope.to_double());
}
Tensor softshrink_backward(const Tensor& grad_output, const Tensor& self, const Scalar& lambd) {
  return act_grad("softshrink_backward", math::ActGrad::softshrink, grad_output, self,
                  shrink_lambda(self, lambd.to_double()));
}
Tensor hardshrink_backward(const Tensor& grad_output, const Tensor& self, const Scalar& lambd) {
  return act_grad("hardshrink_backward", math::ActGrad::hardshrink, grad_output, self,
                  shrink_lambda(self, lambd.to_double()));
}
Tensor log_sigmoid_backward(const Tensor& grad_output, const Tensor& self) {
  return act_grad("log_sigmoid_backward", math::ActGrad::log_sigmoid, grad_output, self, log_sigmoid_buffer_code(self));
}
Tensor hardtanh_backward(const Tensor& grad_output, const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  return act_grad("hardtanh_backward", math::ActGrad::hardtanh, grad_output, self, min_val.to_double(),
                  max_val.to_double());
}

namespace detail {
/// mse_loss's gradient from the saved difference d = input - target
/// (Note [mse_loss's gradient] in src/nn/functional.cpp): the input's
/// (norm * d * g), or the target's (norm * (t - x) * g), one kernel of the
/// activation_backward slot (ActGrad::mse); under create_graph the same
/// products as ops.
Tensor mse_grad(const Tensor& g, const Tensor& d, double norm, bool of_target) {
  BRISK_PROFILE_OP("mse_loss_backward", g, d);
  const ScalarType dt = d.dtype();
  BRISK_CHECK(g.dtype() == dt, "mse_loss_backward", "expected grad_output of the input's dtype ", dt, ", got ",
              g.dtype());
  // the norm rounded to the dtype (2 / 3 in bfloat16), as PyTorch's kernel takes it
  const double norm_dt = round_to(dt, norm), sign = of_target ? -1.0 : 1.0;
  if (BRISK_LIKELY(!autograd::should_record(g, d)))
    return act_grad_run("mse_loss_backward", math::ActGrad::mse, g, d, norm_dt, sign, round_code(dt));
  return act_grad_composite(math::ActGrad::mse, g, d, norm_dt, sign, 0);
}
}  // namespace detail

Tensor mse_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target, int64_t reduction) {
  const char* op = "mse_loss_backward";
  BRISK_CHECK(grad_output.defined() && self.defined() && target.defined(), op, "expected defined tensors");
  BRISK_CHECK(self.sizes() == target.sizes(), op, "self shape ", self.sizes(), " and target shape ", target.sizes(),
              " differ");
  BRISK_CHECK(self.dtype() == target.dtype() && is_floating_point(self.dtype()), op,
              "expected self and target of one floating point dtype, got ", self.dtype(), " and ", target.dtype());
  BRISK_CHECK(reduction >= 0 && reduction <= 2, op, "reduction must be 0 (none), 1 (mean) or 2 (sum), got ",
              reduction);
  const double norm = reduction == 1 ? 2.0 / double(self.numel()) : 2.0;
  return detail::mse_grad(grad_output, self - target, norm, false);
}

}  // namespace brisk
