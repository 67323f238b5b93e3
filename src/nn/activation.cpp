// Activations of brisk::nn as compositions of brisk ops (Note [Activation
// kinks]); the modules forward to nn::functional.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "autograd/function.h"
#include "brisk/nn/activation.h"
#include "brisk/autograd.h"
#include "brisk/ops.h"

namespace brisk::nn {

// Note [Activation kinks]
// Each piecewise activation puts its kinks in the branch PyTorch's backward
// formula puts them in, so the gradient at a kink is PyTorch's:
// leaky_relu/elu/prelu/rrelu take the negative branch at 0 (x > 0 is the
// positive test), hardtanh/relu6/hardsigmoid/softshrink/hardshrink/threshold
// have gradient 0 at their bounds, hardswish takes the outer pieces at -3
// and 3 (gradients 0 and 1, as PyTorch 2.x). NaN inputs come out NaN as in
// PyTorch. The gradient at NaN is that of PyTorch's backward formula as its
// scalar CPU loop computes it: NaN fails every comparison, so hardtanh/
// relu6/hardshrink/softshrink/hardswish pass the incoming gradient, elu/selu/
// celu take their positive branch, hardsigmoid gives 0. PyTorch's vectorized
// CPU loops, which run on all but the tail of a tensor longer than a vector,
// give 0 (hardtanh, the shrinks) or NaN (hardswish, elu) there instead;
// brisk does not follow the vector width.
// hardswish, hardsigmoid, elu/selu/celu, leaky_relu, softshrink, hardshrink
// and logsigmoid are one kernel each way (brisk::hardswish ...: slot
// `activation`, Note [Activation forward modes] in src/kernels/math.h, and
// the activation_backward rows); their second derivatives are the
// gradient's formula written with ops (act_grad_composite in
// src/ops/unary.cpp), where a branch that could overflow (elu's exp) or
// whose derivative reads x (hardswish's middle) reads its input through a
// mask, so an unselected inf never meets a zero gradient and makes NaN, and
// elu's second derivative at x == 0 is 0 as PyTorch's elu_double_backward
// (x < 0). hardtanh/relu6 are clamp plus their own node (hardtanh_backward),
// glu PyTorch's formula with its own node (Note [glu]). prelu and rrelu
// stay composites of `where`: PyTorch's double backward of prelu tests
// x >= 0, so at x == 0 its second derivative is 0 while the first is the
// negative branch's: there a third, linear branch stands in.

namespace functional {

namespace {

void check_float(const char* op, const Tensor& x) {
  BRISK_CHECK(x.defined(), op, "input is undefined");
  BRISK_CHECK(x.is_floating_point(), op, "expected a floating point input, got ", x.dtype());
}

/// Floating or integer input (PyTorch runs these on integers too; bool is refused).
void check_not_bool(const char* op, const Tensor& x) {
  BRISK_CHECK(x.defined(), op, "input is undefined");
  BRISK_CHECK(x.dtype() != kBool, op, "bool inputs are not supported");
}

/// The range [lo, hi] of an integer dtype, as int64.
std::pair<int64_t, int64_t> int_range(ScalarType t) {
  switch (t) {
    case kUInt8: return {0, 255};
    case kInt8: return {-128, 127};
    case kInt16: return {-32768, 32767};
    case kInt32: return {INT32_MIN, INT32_MAX};
    default: return {INT64_MIN, INT64_MAX};
  }
}

/// v as an int64, truncated toward 0 (c10's Scalar::toLong); NaN, inf and
/// values beyond int64 are refused as PyTorch refuses them.
int64_t to_long(const char* op, double v) {
  BRISK_CHECK(std::isfinite(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0, op, "value ", v,
              " cannot be converted to type int64_t without overflow");
  return static_cast<int64_t>(v);
}

/// A scalar argument converted to the integer dtype t as PyTorch's
/// Scalar::to<T> (c10::checked_convert) does it: truncation toward 0; a
/// fractional value must lie in [min, max + 1); an integral one in [min, max],
/// except that an unsigned type also takes -max..-1 and wraps them (-1 is 255
/// for uint8). brisk's options hold doubles, so an integral double counts as
/// an integer (PyTorch refuses uint8's threshold -1.0 but takes -1).
int64_t to_int_dtype(const char* op, double v, ScalarType t) {
  const auto [lo, hi] = int_range(t);
  const bool integral = std::isfinite(v) && std::trunc(v) == v;
  bool ok;
  if (integral && t == kUInt8) {
    ok = v <= static_cast<double>(hi) && v >= -static_cast<double>(hi);
  } else if (integral) {
    ok = v >= static_cast<double>(lo) && v <= static_cast<double>(hi);
  } else {
    ok = std::isfinite(v) && v >= static_cast<double>(lo) && v < static_cast<double>(hi) + 1.0;
  }
  BRISK_CHECK(ok, op, "value ", v, " cannot be converted to type ", t, " without overflow");
  const int64_t i = static_cast<int64_t>(v);
  return (t == kUInt8 && i < 0) ? i + 256 : i;
}

/// f(x), written into `x` when inplace (x then returned). Where autograd
/// records, f reads a copy of x: the composite may save its input for
/// backward, and the write into x must not change what it saved.
template <class Fn>
Tensor maybe_inplace(const Tensor& x, bool inplace, const Fn& f) {
  if (!inplace) return f(x);
  const bool records = x.requires_grad() && GradMode::is_enabled();
  Tensor r = f(records ? x.clone() : x);
  Tensor t = x;
  t.copy_(r);
  return t;
}

/// f(ts...) computed in float for float16/bfloat16 operands and rounded once
/// to the first operand's dtype, as PyTorch's kernels compute in their
/// opmath type (ops/unary.cpp's in_opmath does the same for the gradients).
template <class F, class... Ts>
Tensor in_float(const F& f, const Tensor& t0, const Ts&... ts) {
  if (!is_reduced_float(t0.dtype())) return f(t0, ts...);
  return f(t0.to(kFloat), ts.to(kFloat)...).to(t0.dtype());
}

/// value() computed without recording; where x records, one node `name`
/// whose input gradient is backward(x, g), written with ops (so that it is
/// differentiable again).
template <class V, class B>
Tensor with_node(const char* name, const Tensor& x, const V& value, B backward) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = value();
  }
  if (BRISK_UNLIKELY(autograd::should_record(x))) {
    using namespace autograd;
    record(name, {y}, {x}, {save(x)}, [backward = std::move(backward)](BackwardCtx& c) -> TensorList {
      return {backward(c.saved(0), c.grad())};
    });
  }
  return y;
}

}  // namespace

Tensor relu(const Tensor& x, const ReLUFuncOptions& o) {
  return maybe_inplace(x, o.inplace(), [](const Tensor& v) { return v.relu(); });
}

Tensor relu6(const Tensor& x, const ReLU6FuncOptions& o) {
  return hardtanh(x, HardtanhFuncOptions().min_val(0).max_val(6).inplace(o.inplace()));
}

Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& o) {
  check_float("leaky_relu", x);
  return maybe_inplace(x, o.inplace(), [&](const Tensor& v) { return brisk::leaky_relu(v, o.negative_slope()); });
}

Tensor elu(const Tensor& x, const ELUFuncOptions& o) {
  check_float("elu", x);
  return maybe_inplace(x, o.inplace(), [&](const Tensor& v) { return brisk::elu(v, o.alpha()); });
}

Tensor selu(const Tensor& x, const SELUFuncOptions& o) {
  check_float("selu", x);
  return maybe_inplace(x, o.inplace(), [&](const Tensor& v) { return brisk::selu(v); });
}

Tensor celu(const Tensor& x, const CELUFuncOptions& o) {
  check_float("celu", x);
  BRISK_CHECK(o.alpha() != 0.0, "celu", "alpha must not be 0 (it divides the input)");
  return maybe_inplace(x, o.inplace(), [&](const Tensor& v) { return brisk::celu(v, o.alpha()); });
}

Tensor gelu(const Tensor& x, const GELUFuncOptions& o) { return x.gelu(o.approximate()); }

namespace {
/// glu's input gradient (Note [glu]), a node of its own when it is
/// differentiated again.
Tensor glu_backward(const Tensor& g, const Tensor& x, int64_t d, int64_t h) {
  Tensor r;
  {
    NoGradGuard no_grad;
    const Tensor a = x.narrow(d, 0, h), s = x.narrow(d, h, h).sigmoid();
    const Tensor gb = in_float([](const Tensor& sw, const Tensor& aw, const Tensor& gw) { return (1 - sw) * sw * aw * gw; },
                               s, a, g);
    r = cat({s * g, gb}, d);
  }
  if (BRISK_UNLIKELY(autograd::should_record(g, x))) {
    using namespace autograd;
    record("GluBackwardBackward0", {r}, {g, x}, {save(g), save(x)}, [d, h](BackwardCtx& c) -> TensorList {
      const Tensor gO = c.saved(0), xs = c.saved(1), gg = c.grad();
      const Tensor a = xs.narrow(d, 0, h), sig = xs.narrow(d, h, h).sigmoid();
      const Tensor one_sub = 1 - sig, sos = sig * one_sub;
      const Tensor gg1 = gg.narrow(d, 0, h), gg2 = gg.narrow(d, h, h);
      Tensor dg, dx;
      if (c.needs(0)) dg = gg1 * sig + gg2 * (one_sub * sig * a);
      if (c.needs(1)) {
        const Tensor second = sos * one_sub - sig * sos;
        dx = cat({gg2 * gO * sos, (gg2 * a) * gO * second + gg1 * gO * sos}, d);
      }
      return {dg, dx};
    });
  }
  return r;
}
}  // namespace

Tensor glu(const Tensor& x, const GLUFuncOptions& o) {
  check_float("glu", x);
  BRISK_CHECK(x.dim() > 0, "glu", "expected an input with at least one dim, got a 0-dim tensor");
  const int64_t d = o.dim() < 0 ? o.dim() + x.dim() : o.dim();
  BRISK_CHECK(d >= 0 && d < x.dim(), "glu", "dim ", o.dim(), " is out of range for a ", x.dim(), "-d input");
  BRISK_CHECK(x.size(d) % 2 == 0, "glu", "halving dimension must be even, but dimension ", d, " is size ", x.size(d));
  const int64_t h = x.size(d) / 2;
  // Note [glu]
  // PyTorch's kernels, not the composite a * sigmoid(b): a 16-bit glu rounds
  // once (a * sigmoid(b) in float), and b's gradient is (1 - s) * s * a * g
  // in that order, s = sigmoid(b) in the dtype, so a gate saturated to 1 gives
  // 0 even where a * g passes the range (the composite formed g * a = inf
  // first, then inf * 0 = NaN: fuzzer nn3, seed 603 case 171111). a's
  // gradient is s * g. The backward is its own node whose derivatives are
  // PyTorch's glu_double_backward{,_grad_output}, written with ops.
  return with_node(
      "GluBackward0", x,
      [&] {
        return in_float([](const Tensor& a, const Tensor& b) { return a * b.sigmoid(); }, x.narrow(d, 0, h),
                        x.narrow(d, h, h));
      },
      [d, h](const Tensor& xs, const Tensor& g) { return glu_backward(g, xs, d, h); });
}

Tensor hardshrink(const Tensor& x, const HardshrinkFuncOptions& o) {
  check_float("hardshrink", x);
  return brisk::hardshrink(x, o.lambda());
}

Tensor softshrink(const Tensor& x, const SoftshrinkFuncOptions& o) {
  check_float("softshrink", x);
  // +0 in the middle, as PyTorch's vectorized CPU loop (its scalar loop, which
  // runs on the tail of a tensor shorter than a vector, gives x * 0 there: -0
  // for x in [-l, -0]). A NaN fails the middle test and comes out NaN with
  // gradient 1 (Note [Activation kinks]).
  return brisk::softshrink(x, o.lambda());
}

Tensor hardtanh(const Tensor& x, const HardtanhFuncOptions& o) {
  check_not_bool("hardtanh", x);
  const double lo = o.min_val(), hi = o.max_val();
  BRISK_CHECK(lo <= hi, "hardtanh", "min_val (", lo, ") must be less than or equal to max_val (", hi, ")");
  if (!x.is_floating_point()) {
    // PyTorch truncates the bounds to int64 (no type promotion) and clamps;
    // a bound beyond the dtype on the far side is an error, on the near side a no-op.
    const int64_t ilo = to_long("hardtanh", lo), ihi = to_long("hardtanh", hi);
    const auto [tlo, thi] = int_range(x.dtype());
    BRISK_CHECK(ilo <= thi, "hardtanh", "clamp min value ", ilo, " is outside the representable range of ", x.dtype());
    BRISK_CHECK(ihi >= tlo, "hardtanh", "clamp max value ", ihi, " is outside the representable range of ", x.dtype());
    const Scalar clo(std::max(ilo, tlo)), chi(std::min(ihi, thi));
    return maybe_inplace(x, o.inplace(), [&](const Tensor& v) {
      return where(v.lt(clo), clo, where(v.gt(chi), chi, v));
    });
  }
  return maybe_inplace(x, o.inplace(), [&](const Tensor& v) {
    // PyTorch's clamp: x < lo gives lo, x > hi gives hi, else x itself (so
    // clamp(-0, 0, 6) is -0): clamp's one kernel. The gradient is 0 from the
    // bounds on and passes at NaN (Note [Activation kinks]), unlike clamp's:
    // its own node, written with ops.
    return with_node(
        "HardtanhBackward0", v, [&] { return v.clamp(lo, hi); },
        [lo, hi](const Tensor& xs, const Tensor& g) { return brisk::hardtanh_backward(g, xs, lo, hi); });
  });
}

Tensor hardswish(const Tensor& x, const HardswishFuncOptions& o) {
  check_float("hardswish", x);
  // PyTorch's formula and roundings: x * min(max(x + 3, 0), 6) / 6 (in
  // float for float16 and bfloat16, rounded once), so x * 0 from -3 down
  // (-0, and NaN at -inf), x * 6 / 6 from 3 up (inf where x * 6
  // overflows). Its gradient is PyTorch's hardswish_backward: 0 to -3,
  // g * (x / 3 + 1/2) below 3, g from 3 on and at NaN (Note [Activation
  // kinks]). One kernel each way (slot `activation`, Note [Activation
  // forward modes] in src/kernels/math.h).
  return maybe_inplace(x, o.inplace(), [&](const Tensor& v) { return brisk::hardswish(v); });
}

Tensor hardsigmoid(const Tensor& x, const HardsigmoidFuncOptions& o) {
  check_float("hardsigmoid", x);
  // PyTorch's min(max(x + 3, 0), 6) / 6 (NaN stays NaN). The gradient is
  // PyTorch's hardsigmoid_backward, g / 6 only where -3 < x < 3 (0 at NaN),
  // as g * (1/6 in float) for float32 and 16-bit inputs and g / 6 for
  // float64 (PyTorch's float64 kernel rounds 1/6 to float32: allowlisted).
  return maybe_inplace(x, o.inplace(), [&](const Tensor& v) { return brisk::hardsigmoid(v); });
}

Tensor logsigmoid(const Tensor& x) {
  check_float("logsigmoid", x);
  // PyTorch's min(x, 0) - log1p(exp(-|x|)) (exp never overflows), with its
  // log_sigmoid_backward (0.5 at 0).
  return brisk::log_sigmoid(x);
}

Tensor softsign(const Tensor& x) {
  // An integer x: |x| + 1 in x's dtype (255 + 1 wraps to 0 in uint8, as in
  // PyTorch), then true division into the default float dtype.
  check_not_bool("softsign", x);
  return x / (x.abs() + 1);
}

Tensor tanhshrink(const Tensor& x) {
  check_not_bool("tanhshrink", x);
  return x - x.tanh();
}

Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o) { return x.softplus(o.beta(), o.threshold()); }

Tensor threshold(const Tensor& x, const ThresholdFuncOptions& o) {
  check_not_bool("threshold", x);
  if (!x.is_floating_point()) {
    // Threshold and value converted to x's dtype (truncated), result in x's dtype.
    const Scalar t(to_int_dtype("threshold", o.threshold(), x.dtype()));
    const Scalar val(to_int_dtype("threshold", o.value(), x.dtype()));
    return maybe_inplace(x, o.inplace(), [&](const Tensor& v) { return where(v.le(t), val, v); });
  }
  // x <= threshold picks value; NaN fails the test and stays NaN.
  return maybe_inplace(x, o.inplace(), [&](const Tensor& v) {
    return where(v.le(o.threshold()), Scalar(o.value()), v);
  });
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
  check_float("prelu", x);
  BRISK_CHECK(weight.defined(), "prelu", "weight is undefined");
  BRISK_CHECK(weight.is_floating_point(), "prelu", "expected a floating point weight, got ", weight.dtype());
  // PyTorch: "prelu: Type promoting not supported" (a float64 weight made a float64 result)
  BRISK_CHECK(weight.dtype() == x.dtype(), "prelu", "type promotion is not supported: input ", x.dtype(), " and weight ",
              weight.dtype());
  BRISK_CHECK(weight.dim() <= 1, "prelu", "expected a weight of shape (1) or (C), got ", weight.sizes());
  Tensor w;
  if (weight.numel() == 1) {
    w = weight.reshape({});
  } else {
    // The channels are dim 1; an input of fewer dims has one channel (PyTorch 2).
    const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
    BRISK_CHECK(weight.numel() == channels, "prelu", "mismatch of parameter numbers and input channel size: ",
                weight.numel(), " parameters and ", channels, " channel(s) in input of shape ", x.sizes());
    const int64_t cd = 1;
    std::vector<int64_t> shape(static_cast<size_t>(x.dim() - cd), 1);
    shape[0] = weight.numel();
    w = weight.reshape(shape);
  }
  // At x == 0 PyTorch's first derivatives are the negative branch's (w for x,
  // x for w) but its double backward masks with x >= 0: no cross term there.
  // The negative branch reads x through its mask, so that an infinite
  // positive x never meets the zero gradient there: the weight's gradient
  // was 0 * inf = NaN where PyTorch's (x <= 0 ? g * x : 0) is finite
  // (fuzzer nn3, seed 603 case 43191).
  const Tensor pos = x.gt(0), zero = x.eq(0);
  const Tensor xz = where(zero, x, Scalar(0.0));
  const Tensor at_zero = xz.detach() * w + xz * w.detach();
  return where(pos, x, where(zero, at_zero, where(pos, Scalar(0.0), x) * w));
}

Tensor rrelu(const Tensor& x, const RReLUFuncOptions& o) {
  check_float("rrelu", x);
  const double lo = o.lower(), hi = o.upper();
  BRISK_CHECK(lo <= hi, "rrelu", "lower bound (", lo, ") must be less than or equal to upper bound (", hi, ")");
  BRISK_CHECK(lo >= 0 && hi >= 0, "rrelu", "bounds must be non-negative, got lower ", lo, " and upper ", hi);
  if (!o.training()) return leaky_relu(x, LeakyReLUFuncOptions().negative_slope((lo + hi) / 2).inplace(o.inplace()));
  Tensor slope;
  {
    NoGradGuard no_grad;
    slope = rand_like(x) * (hi - lo) + lo;
  }
  return maybe_inplace(x, o.inplace(), [&](const Tensor& v) {
    return where(v.gt(0), v, v * slope);  // the negative branch at 0
  });
}

Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& o) { return x.softmax(o.dim(), o.dtype()); }

Tensor softmin(const Tensor& x, const SoftminFuncOptions& o) {
  // PyTorch's (-x).softmax(dim, dtype): the negation in x's dtype, so an
  // integer input wraps (uint8 -4 is 252) before the cast (fuzzer nn3, seed
  // 613 case 238214: casting first gave softmin's mathematical value where
  // PyTorch gives 1.0 and 0.0)
  return x.neg().softmax(o.dim(), o.dtype());
}

Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& o) { return x.log_softmax(o.dim(), o.dtype()); }

}  // namespace functional

// ---- modules ------------------------------------------------------------------------

namespace {

/// Python's repr of a float: "1.0", "0.01", "1e-05", "0.3333333333333333".
std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const double a = std::fabs(v);
  const bool fixed = a == 0.0 || (a >= 1e-4 && a < 1e16);
  auto r = std::to_chars(buf, buf + sizeof buf, v, fixed ? std::chars_format::fixed : std::chars_format::scientific);
  std::string s(buf, r.ptr);
  if (fixed && s.find('.') == std::string::npos) s += ".0";
  return s;
}

std::string inplace_suffix(bool inplace, bool first) {
  if (!inplace) return "";
  return first ? "inplace=True" : ", inplace=True";
}

}  // namespace

Tensor ReLUImpl::forward(const Tensor& x) { return F::relu(x, options); }
std::string ReLUImpl::extra_repr() const { return inplace_suffix(options.inplace(), true); }

Tensor ReLU6Impl::forward(const Tensor& x) { return F::relu6(x, options); }
std::string ReLU6Impl::extra_repr() const { return inplace_suffix(options.inplace(), true); }

Tensor LeakyReLUImpl::forward(const Tensor& x) { return F::leaky_relu(x, options); }
std::string LeakyReLUImpl::extra_repr() const {
  return "negative_slope=" + py_float(options.negative_slope()) + inplace_suffix(options.inplace(), false);
}

Tensor ELUImpl::forward(const Tensor& x) { return F::elu(x, options); }
std::string ELUImpl::extra_repr() const {
  return "alpha=" + py_float(options.alpha()) + inplace_suffix(options.inplace(), false);
}

Tensor SELUImpl::forward(const Tensor& x) { return F::selu(x, options); }
std::string SELUImpl::extra_repr() const { return inplace_suffix(options.inplace(), true); }

CELUImpl::CELUImpl(const CELUOptions& options) : Module("CELU"), options(options) {
  BRISK_CHECK(options.alpha() != 0.0, "CELU", "alpha must not be 0");
}
Tensor CELUImpl::forward(const Tensor& x) { return F::celu(x, options); }
std::string CELUImpl::extra_repr() const {
  return "alpha=" + py_float(options.alpha()) + inplace_suffix(options.inplace(), false);
}

GELUImpl::GELUImpl(const GELUOptions& options) : Module("GELU"), options(options) {
  const std::string& a = options.approximate();
  BRISK_CHECK(a == "none" || a == "tanh", "GELU", "approximate must be 'none' or 'tanh', got '", a, "'");
}
Tensor GELUImpl::forward(const Tensor& x) { return F::gelu(x, options); }
std::string GELUImpl::extra_repr() const { return "approximate='" + options.approximate() + "'"; }

Tensor GLUImpl::forward(const Tensor& x) { return F::glu(x, options); }
std::string GLUImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

Tensor SiLUImpl::forward(const Tensor& x) { return F::silu(x); }
Tensor MishImpl::forward(const Tensor& x) { return F::mish(x, inplace); }
std::string MishImpl::extra_repr() const { return inplace ? "inplace=True" : ""; }
Tensor TanhImpl::forward(const Tensor& x) { return x.tanh(); }
Tensor SigmoidImpl::forward(const Tensor& x) { return x.sigmoid(); }
Tensor LogSigmoidImpl::forward(const Tensor& x) { return F::logsigmoid(x); }
Tensor SoftsignImpl::forward(const Tensor& x) { return F::softsign(x); }
Tensor TanhshrinkImpl::forward(const Tensor& x) { return F::tanhshrink(x); }

HardshrinkImpl::HardshrinkImpl(const HardshrinkOptions& options) : Module("Hardshrink"), options(options) {}
Tensor HardshrinkImpl::forward(const Tensor& x) { return F::hardshrink(x, options); }
std::string HardshrinkImpl::extra_repr() const { return py_float(options.lambda()); }

SoftshrinkImpl::SoftshrinkImpl(const SoftshrinkOptions& options) : Module("Softshrink"), options(options) {
  BRISK_CHECK(options.lambda() >= 0, "Softshrink", "lambda must be greater or equal to 0, got ", options.lambda());
}
Tensor SoftshrinkImpl::forward(const Tensor& x) { return F::softshrink(x, options); }
std::string SoftshrinkImpl::extra_repr() const { return py_float(options.lambda()); }

HardtanhImpl::HardtanhImpl(const HardtanhOptions& options) : Module("Hardtanh"), options(options) {
  BRISK_CHECK(options.max_val() > options.min_val(), "Hardtanh", "max_val (", options.max_val(),
              ") must be greater than min_val (", options.min_val(), ")");
}
Tensor HardtanhImpl::forward(const Tensor& x) { return F::hardtanh(x, options); }
std::string HardtanhImpl::extra_repr() const {
  return "min_val=" + py_float(options.min_val()) + ", max_val=" + py_float(options.max_val()) +
         inplace_suffix(options.inplace(), false);
}

Tensor HardswishImpl::forward(const Tensor& x) { return F::hardswish(x, options); }
Tensor HardsigmoidImpl::forward(const Tensor& x) { return F::hardsigmoid(x, options); }

PReLUImpl::PReLUImpl(const PReLUOptions& options, TensorOptions opts) : Module("PReLU"), options(options) {
  BRISK_CHECK(options.num_parameters() >= 1, "PReLU", "num_parameters must be at least 1, got ",
              options.num_parameters());
  weight = register_parameter("weight", empty({options.num_parameters()}, opts));
  reset();
}
void PReLUImpl::reset() {
  NoGradGuard no_grad;
  weight.fill_(options.init());
}
Tensor PReLUImpl::forward(const Tensor& x) { return F::prelu(x, weight); }
std::string PReLUImpl::extra_repr() const { return "num_parameters=" + std::to_string(options.num_parameters()); }

RReLUImpl::RReLUImpl(const RReLUOptions& options) : Module("RReLU"), options(options) {
  BRISK_CHECK(options.lower() <= options.upper(), "RReLU", "lower bound (", options.lower(),
              ") must be less than or equal to upper bound (", options.upper(), ")");
}
Tensor RReLUImpl::forward(const Tensor& x) {
  return F::rrelu(x, F::RReLUFuncOptions()
                         .lower(options.lower())
                         .upper(options.upper())
                         .training(is_training())
                         .inplace(options.inplace()));
}
std::string RReLUImpl::extra_repr() const {
  return "lower=" + py_float(options.lower()) + ", upper=" + py_float(options.upper()) +
         inplace_suffix(options.inplace(), false);
}

Tensor SoftplusImpl::forward(const Tensor& x) { return F::softplus(x, options); }
std::string SoftplusImpl::extra_repr() const {
  return "beta=" + py_float(options.beta()) + ", threshold=" + py_float(options.threshold());
}

Tensor ThresholdImpl::forward(const Tensor& x) { return F::threshold(x, options); }
std::string ThresholdImpl::extra_repr() const {
  return "threshold=" + py_float(options.threshold()) + ", value=" + py_float(options.value()) +
         inplace_suffix(options.inplace(), false);
}

Tensor SoftmaxImpl::forward(const Tensor& x) { return x.softmax(options.dim()); }
std::string SoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }
Tensor SoftminImpl::forward(const Tensor& x) { return F::softmin(x, F::SoftminFuncOptions(options.dim())); }
std::string SoftminImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }
Tensor LogSoftmaxImpl::forward(const Tensor& x) { return x.log_softmax(options.dim()); }
std::string LogSoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

Tensor Softmax2dImpl::forward(const Tensor& x) {
  BRISK_CHECK(x.dim() == 3 || x.dim() == 4, "Softmax2d", "expected input to be 3D or 4D, got ", x.dim(),
              "D instead");
  return x.softmax(-3);
}

}  // namespace brisk::nn
