// Front ends of the binary and ternary elementwise ops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/autocast.h"
#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/dispatch.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"
#include "profiler/record.h"

namespace brisk {

namespace {

// One elementwise op call: build, run, return the result.
template <OpId op>
inline Tensor run(const char* name, IterBuilder& b, const KernelArgs& args) {
  TensorIter it;
  b.build(it);
  kernel<op>(it.result.device().type, name)(it, args);
  it.finish();
  return std::move(it.result);
}

KernelArgs alpha_args(const Scalar& alpha) {
  KernelArgs a;
  a.s0 = alpha;
  return a;
}
KernelArgs mode_args(int mode) {
  KernelArgs a;
  a.mode = mode;
  return a;
}

void check_alpha(const char* op, ScalarType t, const Scalar& alpha) {
  BRISK_CHECK(!(alpha.is_bool() && t != kBool), op, "Boolean alpha only supported for Boolean results (result ", t,
              ")");
  BRISK_CHECK(!(alpha.is_floating_point() && !is_floating_point(t)), op,
              "for integral input tensors, argument alpha must not be a floating point number");
}
/// The dtype addcmul's and addcdiv's value is converted to (checked, Note
/// [Scalars out of range]): the op's math type. add's alpha is converted to
/// the dtype itself.
ScalarType opmath_dtype(ScalarType t) { return is_reduced_float(t) ? kFloat : t; }
/// An integer alpha of 1 or -1 (add's and sub's default) fits every dtype.
bool is_unit(const Scalar& alpha) {
  return alpha.is_integral(false) && (alpha.to_long() == 1 || alpha.to_long() == -1);
}
// torch's sub_check: no bool operand at all (a Scalar counts with its own dtype).
void check_sub_dtypes(const char* op, ScalarType a, ScalarType b) {
  BRISK_CHECK(!(a == kBool && b == kBool), op,
              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
              "`logical_xor()` operator instead.");
  BRISK_CHECK(a != kBool && b != kBool, op,
              "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
              "mask, use the `~` or `logical_not()` operator instead.");
}
// torch: an integral tensor to a negative integral scalar power is an error
// (a tensor of exponents gives 0, 1 or -1 instead).
void check_pow_exponent(const char*, const Tensor&, const Tensor&) {}
void check_pow_exponent(const char* op, const Tensor& base, const Scalar& exp) {
  const ScalarType t = result_type(base, exp);
  BRISK_CHECK(!(exp.is_integral(false) && exp.to_long() < 0 && !is_floating_point(t)), op,
              "Integers to negative integer powers are not allowed.");
  // The exponent is converted to the dtype (checked) for integral and 16-bit
  // float results; float32 and float64 take it as a double (torch).
  if (t != kFloat && t != kDouble) detail::check_scalar_fits(op, exp, t);
}
void check_bitwise(const char* op, ScalarType t) {
  BRISK_CHECK(!is_floating_point(t), op, "only integer and bool tensors are supported, got ", t);
}
// Shifts take integers only (PyTorch: "lshift_cpu" not implemented for 'Float' / 'Bool').
void check_shift(const char* op, ScalarType t) {
  BRISK_CHECK(!is_floating_point(t) && t != kBool, op, "not implemented for ", t, ": shifts take integer tensors");
}
ScalarType dtype_of_operand(const Tensor& t) { return t.defined() ? t.dtype() : ScalarType::Undefined; }
ScalarType dtype_of_operand(const Scalar& s) { return s.dtype(); }

// Integer division by zero is an error (floats give inf/nan).
void check_int_divisor(const char* op, ScalarType compute, const Tensor& a, const Tensor& b) {
  // Nothing is divided in an empty result (torch raises from the kernel).
  if (is_floating_point(compute) || a.numel() == 0 || b.numel() == 0) return;
  detail::DeviceCheckScope device_check;
  // The divisor as the kernel sees it, converted to the compute dtype (an
  // int32 -2^31 is 0 as uint8).
  const Tensor bc = b.dtype() == compute ? b : b.to(compute);
  BRISK_CHECK(!bc.eq(0).any().item<bool>(), op, "ZeroDivisionError: integer division by zero");
}
void check_int_divisor(const char* op, ScalarType compute, const Tensor& a, const Scalar& b) {
  if (is_floating_point(compute) || a.numel() == 0) return;
  // The divisor as the kernel sees it: an integer scalar wraps to the dtype
  // (256 is 0 for uint8).
  const int64_t v = b.to_long();
  const bool zero = compute == kUInt8   ? uint8_t(v) == 0
                    : compute == kInt8  ? int8_t(v) == 0
                    : compute == kInt16 ? int16_t(v) == 0
                    : compute == kInt32 ? int32_t(v) == 0
                                        : v == 0;
  BRISK_CHECK(!zero, op, "ZeroDivisionError: integer division by zero (divisor ", b, " as ", compute, ")");
}

// Note [Reduced-float scalar operands]
// PyTorch 2.x computes mul and div (every rounding mode) of a float16 or
// bfloat16 result whose second operand is a single CPU value (a Scalar, or a
// one-element CPU tensor) in float32 with that value read from its own dtype,
// then rounds once: x_half * 0.3 multiplies by 0.3f, not by half(0.3), and
// x_half * 1e5 is finite where half(1e5) would be inf. (1.13 converted the
// value to the 16-bit dtype first.) brisk follows 2.x: the op runs on
// float32 copies and the result is rounded to the dtype.
/// r converted to `compute`, or written to *self (no graph, no version
/// bump: the caller's op records and bumps).
Tensor write_result(const Tensor* self, const Tensor& r, ScalarType compute) {
  if (!self) return r.to(compute);
  TensorIter it;
  IterBuilder("copy_").output(*self).input(r).no_cast_inputs().build(it);
  kernel<OpId::copy>(self->device().type, "copy_")(it, KernelArgs{});
  return *self;
}
bool opmath_scalar_operand(ScalarType compute, const Tensor& b) {
  return is_reduced_float(compute) && b.is_cpu() && b.numel() == 1;
}
bool opmath_scalar_operand(ScalarType compute, const Scalar&) { return is_reduced_float(compute); }
/// f(a, b) in float32 (Note [Reduced-float scalar operands]), written to
/// *self or returned in `compute`. No graph: the caller records the op.
template <class Other, class F>
Tensor run_opmath_scalar(const Tensor* self, const Tensor& a, const Other& b, ScalarType compute, F f) {
  NoGradGuard ng;
  Tensor af = a.to(compute).to(kFloat), rf;
  if constexpr (std::is_same_v<Other, Tensor>)
    rf = f(af, b.to(kFloat));
  else
    rf = f(af, b);
  return write_result(self, rf, compute);
}
}  // namespace

// ---- add / sub ---------------------------------------------------------------
// out = a + alpha * b. sub is add with -alpha under its own name (and with
// sub's dtype rules); rsub is b - alpha * a with the operands swapped.
namespace {
template <class Other>
Tensor add_impl(const char* nm, Tensor* out, const Tensor* self, const Tensor& a, const Other& b, const Scalar& alpha) {
  BRISK_PROFILE_OP(nm, a, b);
  IterBuilder it(nm);
  if (self) {
    autograd::check_inplace(*self, nm);
    it.inplace(*self);
  } else if (out) {
    autograd::check_out(nm, a, b);
    it.output(*out).resize_out();
  }
  it.input(a).input(b);
  if (BRISK_UNLIKELY(!alpha.is_integral(false))) check_alpha(nm, result_type(a, b), alpha);
  if (BRISK_UNLIKELY(!is_unit(alpha))) detail::check_scalar_fits(nm, alpha, result_type(a, b));
  Tensor r = run<OpId::add>(nm, it, alpha_args(alpha));
  if (self) self->bump_version();
  if (out) out->bump_version();
  if (BRISK_UNLIKELY(autograd::should_record(a, b))) {
    using namespace autograd;
    if constexpr (std::is_same_v<Other, Tensor>) {
      auto fn = [alpha](BackwardCtx& c) -> TensorList {
        const Tensor& g = c.grad();
        return {c.needs(0) ? g : Tensor(), c.needs(1) ? (alpha.to_double() == 1.0 ? g : g * alpha) : Tensor()};
      };
      if (self)
        record_inplace("AddBackward0", r, {a, b}, {}, fn);
      else
        record("AddBackward0", {r}, {a, b}, {}, fn);
    } else {
      auto fn = [](BackwardCtx& c) -> TensorList { return {c.grad()}; };
      if (self)
        record_inplace("AddBackward1", r, {a}, {}, fn);
      else
        record("AddBackward1", {r}, {a}, {}, fn);
    }
  }
  return r;
}
template <class Other>
Tensor sub_impl(const char* nm, Tensor* out, const Tensor* self, const Tensor& a, const Other& b, const Scalar& alpha) {
  if (a.defined()) check_sub_dtypes(nm, a.dtype(), dtype_of_operand(b));
  // Checked before -alpha turns a bool alpha into an integer.
  if (BRISK_UNLIKELY(alpha.is_bool()) && a.defined()) check_alpha(nm, result_type(a, b), alpha);
  // a + (-alpha) * b is a - alpha * b exactly, signed zeros included
  // (negating b instead would turn -0.0 - 0 * 0 into +0.0).
  return add_impl(nm, out, self, a, b, -alpha);
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_impl("add", nullptr, nullptr, a, b, alpha);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return add_impl("add", nullptr, nullptr, a, b, alpha);
}
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  add_impl("add_out", &out, nullptr, a, b, alpha);
  return out;
}
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return brisk::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return brisk::add(*this, o, alpha); }
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const {
  add_impl("add_", nullptr, this, *this, o, alpha);
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) const {
  add_impl("add_", nullptr, this, *this, o, alpha);
  return const_cast<Tensor&>(*this);
}

Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return sub_impl("sub", nullptr, nullptr, a, b, alpha);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return sub_impl("sub", nullptr, nullptr, a, b, alpha);
}
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  sub_impl("sub_out", &out, nullptr, a, b, alpha);
  return out;
}
/// b - alpha * a
Tensor rsub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  BRISK_PROFILE_OP("rsub", a, b);
  IterBuilder it("rsub");
  it.input(b).input(a);
  check_sub_dtypes("rsub", a.dtype(), b.dtype());
  check_alpha("rsub", result_type(a, b), alpha);
  if (!is_unit(alpha)) detail::check_scalar_fits("rsub", -alpha, result_type(a, b));  // applied negated
  Tensor r = run<OpId::add>("rsub", it, alpha_args(-alpha));
  if (BRISK_UNLIKELY(autograd::should_record(a)))
    autograd::record("RsubBackward1", {r}, {a}, {},
                     [alpha](autograd::BackwardCtx& c) -> TensorList { return {c.grad() * (-alpha)}; });
  return r;
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return brisk::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return brisk::sub(*this, o, alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) const {
  sub_impl("sub_", nullptr, this, *this, o, alpha);
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) const {
  sub_impl("sub_", nullptr, this, *this, o, alpha);
  return const_cast<Tensor&>(*this);
}

// ---- div ---------------------------------------------------------------------
namespace {
template <class Other>
Tensor div_impl(const char* name, Tensor* out, const Tensor* self, const Tensor& a, const Other& b, RoundingMode mode) {
  BRISK_PROFILE_OP(name, a, b);
  IterBuilder it(name);
  if (self)
    it.inplace(*self);
  else if (out)
    it.output(*out).resize_out();
  it.input(a).input(b);
  if (mode == RoundingMode::None) it.promote_int_to_float();
  ScalarType compute;
  if constexpr (std::is_same_v<Other, Tensor>)
    compute = result_type(a, b);
  else
    compute = result_type(a, b);
  if (mode != RoundingMode::None) check_int_divisor(name, compute, a, b);
  const bool rec = autograd::should_record(a, b);
  if (self) autograd::check_inplace(*self, name);
  if (out) autograd::check_out(name, a, b);
  Tensor old = rec && self && autograd::needs_grad(b) ? a.clone() : Tensor();
  const ScalarType opt = mode == RoundingMode::None && is_integral(compute, true) ? default_dtype() : compute;
  Tensor r = !out && opmath_scalar_operand(opt, b) && (!self || self->dtype() == opt)
                 ? run_opmath_scalar(self, a, b, opt, [mode](const Tensor& x, const auto& y) { return x.div(y, mode); })
                 : run<OpId::div>(name, it, mode_args(static_cast<int>(mode)));
  if (self) self->bump_version();
  if (out) out->bump_version();
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    if (mode != RoundingMode::None) {
      // floor/trunc division is piecewise constant: zero gradients for both
      // operands (torch), one per input the node was recorded with.
      if constexpr (std::is_same_v<Other, Tensor>) {
        auto fn = [](BackwardCtx& c) -> TensorList {
          return {c.needs(0) ? zeros_like(c.grad()) : Tensor(), c.needs(1) ? zeros_like(c.grad()) : Tensor()};
        };
        if (self)
          record_inplace("DivBackward2", *self, {*self, b}, {}, fn);
        else
          record("DivBackward2", {r}, {a, b}, {}, fn);
      } else {
        auto fn = [](BackwardCtx& c) -> TensorList { return {zeros_like(c.grad())}; };
        if (self)
          record_inplace("DivBackward3", *self, {*self}, {}, fn);
        else
          record("DivBackward3", {r}, {a}, {}, fn);
      }
    } else if constexpr (std::is_same_v<Other, Tensor>) {
      auto fn = [](BackwardCtx& c) -> TensorList {
        const Tensor& g = c.grad();
        Tensor y = c.saved(1);
        Tensor ga, gb;
        if (c.needs(0)) ga = g / y;
        // Grouped as torch groups it: at y == 0 the order decides between
        // inf and NaN in higher derivatives.
        if (c.needs(1)) gb = -g * ((c.saved(0) / y) / y);
        return {ga, gb};
      };
      if (self)
        record_inplace("DivBackward0", *self, {*self, b}, {save(old), save(b)}, fn);
      else
        record("DivBackward0", {r}, {a, b}, {save(a), save(b)}, fn);
    } else {
      auto fn = [b](BackwardCtx& c) -> TensorList { return {c.grad() / b}; };
      if (self)
        record_inplace("DivBackward1", *self, {*self}, {}, fn);
      else
        record("DivBackward1", {r}, {a}, {}, fn);
    }
  }
  return r;
}
}  // namespace
Tensor div(const Tensor& a, const Tensor& b, RoundingMode m) { return div_impl("div", nullptr, nullptr, a, b, m); }
Tensor div(const Tensor& a, const Scalar& b, RoundingMode m) { return div_impl("div", nullptr, nullptr, a, b, m); }
Tensor& div_out(Tensor& out, const Tensor& a, const Tensor& b, RoundingMode m) {
  div_impl("div_out", &out, nullptr, a, b, m);
  return out;
}
Tensor Tensor::div(const Tensor& o, RoundingMode m) const { return brisk::div(*this, o, m); }
Tensor Tensor::div(const Scalar& o, RoundingMode m) const { return brisk::div(*this, o, m); }
Tensor& Tensor::div_(const Tensor& o, RoundingMode m) const {
  div_impl("div_", nullptr, this, *this, o, m);
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::div_(const Scalar& o, RoundingMode m) const {
  div_impl("div_", nullptr, this, *this, o, m);
  return const_cast<Tensor&>(*this);
}

// ---- backward of the plain binary ops --------------------------------------------------
namespace {
using autograd::BackwardCtx;

// Records r = op(a, b); for an in-place op r is *self and `a` is a copy of
// self's old value (the edge goes to self's old history).
template <OpId op>
void record_binary(const char* nm, const Tensor* self, const Tensor& r, const Tensor& a, const Tensor& b) {
  using namespace autograd;
  auto rec = [&](const char* name, std::initializer_list<SaveSpec> saved, auto fn) {
    if (self)
      record_inplace(name, *self, {*self, b}, saved, std::move(fn));
    else
      record(name, {r}, {a, b}, saved, std::move(fn));
  };
  if constexpr (op == OpId::mul) {
    rec("MulBackward0", {save(a), save(b)}, [](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      return {c.needs(0) ? g * c.saved(1) : Tensor(), c.needs(1) ? g * c.saved(0) : Tensor()};
    });
  } else if constexpr (op == OpId::pow) {
    // The exponent's gradient g * x^e * log(x) uses the forward's result as
    // torch's formula does (pow_backward_exponent), so that under
    // create_graph the gradients reaching x^e from the formula and from the
    // forward's other consumers meet in one node and are summed before
    // anything multiplies them: with x^e recomputed, relu(x ** e)'s
    // materialized zero met an infinite factor alone (NaN where torch's
    // second derivative is inf; difffuzz seed 179 case 8849). pow_ keeps
    // recomputing it from the saved inputs (its result is self, which later
    // in-place ops change: brisk then gives the exact gradient where torch
    // raises, docs/porting.md).
    const bool out = self == nullptr;  // the result saved (slot 2)
    auto fn = [out](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      Tensor x = c.saved(0), e = c.saved(1);
      Tensor ga, gb;
      // Grouped as torch groups them (e * x^(e-1) first: it may overflow).
      if (c.needs(0)) ga = (g * (e * x.pow(e - 1))).masked_fill(e == 0, 0);
      // log of x in the result dtype (an int64 x is not logged in float32).
      if (c.needs(1)) {
        const Tensor xr = x.to(result_type(x, e));
        const Tensor p = out ? c.saved(2) : xr.pow(e);
        // g times the masked derivative (torch's grouping): an infinite g at base 0 is NaN, not 0
        gb = g * (p * xr.log()).masked_fill(x == 0 & e >= 0, 0);
      }
      return {ga, gb};
    };
    if (self)
      rec("PowBackward1", {save(a), save(b)}, fn);
    else
      rec("PowBackward1", {save(a), save(b), save_output(r)}, fn);
  } else if constexpr (op == OpId::minimum || op == OpId::maximum) {
    rec(op == OpId::minimum ? "MinimumBackward0" : "MaximumBackward0", {save(a), save(b)},
        [](BackwardCtx& c) -> TensorList {
          const Tensor& g = c.grad();
          Tensor x = c.saved(0), y = c.saved(1);
          // Ties split the gradient evenly (torch).
          Tensor half = where(x == y, g / 2, g);
          Tensor x_wins = op == OpId::maximum ? x > y : x < y;
          Tensor y_wins = op == OpId::maximum ? y > x : y < x;
          return {c.needs(0) ? half.masked_fill(y_wins, 0) : Tensor(), c.needs(1) ? half.masked_fill(x_wins, 0) : Tensor()};
        });
  } else if constexpr (op == OpId::atan2) {
    rec("Atan2Backward0", {save(a), save(b)}, [](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      // An integer operand takes part in the result's floating dtype, as in
      // the forward: squared or negated in its own dtype it would wrap
      // (254 * 254 is 4 in uint8; torch's formula wraps there, a torch bug).
      auto as_result = [&g](Tensor t) { return t.is_floating_point() ? t : t.to(g.dtype()); };
      Tensor x = as_result(c.saved(0)), y = as_result(c.saved(1));
      // 1 / (x^2 + y^2), taken as 0 where the sum is 0 (torch 2.x: atan2(0, 0)
      // has zero gradients, not NaN).
      Tensor denom = x * x + y * y;
      Tensor recip = denom.reciprocal().masked_fill(denom == 0, 0);
      return {c.needs(0) ? g * y * recip : Tensor(), c.needs(1) ? -(g * x) * recip : Tensor()};
    });
  } else if constexpr (op == OpId::remainder || op == OpId::fmod) {
    const bool floor = op == OpId::remainder;
    rec(floor ? "RemainderBackward0" : "FmodBackward0", {save(a), save(b)}, [floor](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      Tensor gb;
      if (c.needs(1))
        gb = -g * c.saved(0).div(c.saved(1), floor ? RoundingMode::Floor : RoundingMode::Trunc);
      return {c.needs(0) ? g : Tensor(), gb};
    });
  }
}

// The same with a Scalar second operand.
template <OpId op>
void record_binary(const char* nm, const Tensor* self, const Tensor& r, const Tensor& a, const Scalar& b) {
  using namespace autograd;
  auto rec = [&](const char* name, std::initializer_list<SaveSpec> saved, auto fn) {
    if (self)
      record_inplace(name, *self, {*self}, saved, std::move(fn));
    else
      record(name, {r}, {a}, saved, std::move(fn));
  };
  if constexpr (op == OpId::mul) {
    rec("MulBackward1", {}, [b](BackwardCtx& c) -> TensorList { return {c.grad() * b}; });
  } else if constexpr (op == OpId::pow) {
    const double e = b.to_double();
    rec("PowBackward0", {save(a)}, [b, e](BackwardCtx& c) -> TensorList {
      if (e == 0) return {zeros_like(c.grad())};
      return {c.grad() * (c.saved(0).pow(e - 1) * b)};
    });
  } else if constexpr (op == OpId::minimum || op == OpId::maximum || op == OpId::atan2) {
    // minimum/maximum/atan2 take tensors only in torch; a Scalar second
    // operand is wrapped as a 0-dim tensor of the tensor's dtype.
    record_binary<op>(nm, self, r, a, scalar_tensor(b, a.dtype()));
  } else if constexpr (op == OpId::remainder || op == OpId::fmod) {
    rec(op == OpId::remainder ? "RemainderBackward1" : "FmodBackward1", {},
        [](BackwardCtx& c) -> TensorList { return {c.grad()}; });
  }
}
constexpr bool differentiable(OpId op) {
  return op == OpId::mul || op == OpId::pow || op == OpId::minimum || op == OpId::maximum || op == OpId::atan2 ||
         op == OpId::remainder || op == OpId::fmod;
}
}  // namespace

namespace {
template <OpId op, class Other>
Tensor run_binary(const char* nm, IterBuilder& it, const KernelArgs& args, Tensor* out, const Tensor* self, const Tensor& a,
                  const Other& b) {
  // Only mul and tensor ** scalar have special paths; the other ops (and the
  // common dtypes) go straight to the kernel.
  if constexpr (op == OpId::mul) {
    auto reduced = [](ScalarType t) { return is_reduced_float(t); };
    if (BRISK_UNLIKELY(!out && (reduced(a.dtype()) || reduced(dtype_of_operand(b))))) {
      const ScalarType compute = result_type(a, b);
      // The path writes self in the compute dtype; an in-place op whose
      // result cannot be cast to self (u8.mul_(half)) takes the normal path,
      // which raises.
      if (opmath_scalar_operand(compute, b) && (!self || self->dtype() == compute))
        return run_opmath_scalar(self, a, b, compute, [](const Tensor& x, const auto& y) { return x.mul(y); });
    }
  }
  if constexpr (op == OpId::pow && std::is_same_v<Other, Scalar>) {
    // A Scalar exponent (mode 1): the kernel may use PyTorch's special forms
    // (x * x for 2, ...); a 0-dim tensor exponent may not (torch computes
    // pow(-inf, -0.5) = 0 there, where 1 / sqrt(-inf) is NaN).
    KernelArgs sargs = args;
    sargs.mode = 1;
    if (out) return run<op>(nm, it, sargs);
    if (b.is_bool()) {
      // A bool tensor to a bool power stays bool (torch 2.x): x ** True is x,
      // x ** False is all true. (A bool tensor exponent is not implemented.)
      if (BRISK_UNLIKELY(a.dtype() == kBool)) {
        NoGradGuard ng;
        if (self) {
          if (!b.template to<bool>()) self->fill_(true);
          return *self;
        }
        return b.template to<bool>() ? a.clone() : ones_like(a);
      }
      return run<op>(nm, it, sargs);
    }
    const ScalarType compute = result_type(a, b);
    if (self && self->dtype() != compute) return run<op>(nm, it, sargs);  // raises: can't be cast
    const double e = b.to_double();
    // torch computes x ** 0.5 as sqrt(x) and x ** -0.5 as rsqrt(x): they
    // differ from pow at -0.0 (sqrt gives -0.0) and -inf (sqrt gives NaN).
    // Not float16 on the CPU: PyTorch's CPU kernel takes pow for float16
    // ((-0)^0.5 = +0; pow_kernel in kernels/unary.cpp does the same).
    if ((e == 0.5 || e == -0.5) && is_floating_point(compute) && !(compute == kHalf && a.is_cpu())) {
      NoGradGuard ng;
      const Tensor x = a.to(compute);
      return write_result(self, e == 0.5 ? x.sqrt() : x.rsqrt(), compute);
    }
    // torch raises a float32 tensor to a scalar power in double: an
    // exponent float32 cannot hold (2^31 - 1 rounds to the even 2^31) keeps
    // its parity and its digits. brisk's kernel takes the exponent as float32,
    // so those exponents go through float64 (x**2, x**0.5 stay in float32).
    if (BRISK_UNLIKELY(compute == kFloat && static_cast<double>(static_cast<float>(e)) != e && !std::isnan(e))) {
      NoGradGuard ng;
      return write_result(self, a.to(kDouble).pow(b), kFloat);
    }
    return run<op>(nm, it, sargs);
  }
  return run<op>(nm, it, args);
}
}  // namespace

// ---- the plain binary ops ------------------------------------------------------------
// Each gets functional, _out, method and in-place method forms from one macro.
#define BRISK_BINARY_OP(name, opid, setup)                                               \
  namespace {                                                                            \
  template <class Other>                                                                 \
  Tensor name##_impl(const char* nm, Tensor* out, const Tensor* self, const Tensor& a, const Other& b) { \
    BRISK_PROFILE_OP(nm, a, b);                                                          \
    constexpr bool diff = differentiable(OpId::opid);                                    \
    const bool rec = diff && autograd::should_record(a, b);                             \
    IterBuilder it(nm);                                                                  \
    if (self) {                                                                          \
      if (diff) autograd::check_inplace(*self, nm);                                      \
      it.inplace(*self);                                                                 \
    } else if (out) {                                                                    \
      if (diff) autograd::check_out(nm, a, b);                                           \
      it.output(*out).resize_out();                                                      \
    }                                                                                    \
    it.input(a).input(b);                                                                \
    KernelArgs args;                                                                     \
    setup;                                                                               \
    Tensor old = rec && self ? a.clone() : Tensor();                                      \
    Tensor r = run_binary<OpId::opid>(nm, it, args, out, self, a, b);                    \
    if (self) self->bump_version();                                                      \
    if (out) out->bump_version();                                                        \
    if (BRISK_UNLIKELY(rec)) record_binary<OpId::opid>(nm, self, r, self ? old : a, b); \
    return r;                                                                            \
  }                                                                                      \
  }                                                                                      \
  Tensor name(const Tensor& a, const Tensor& b) {                                        \
    BRISK_AUTOCAST(name, name, a, b);                                                    \
    return name##_impl(#name, nullptr, nullptr, a, b);                                   \
  }                                                                                      \
  Tensor name(const Tensor& a, const Scalar& b) {                                        \
    BRISK_AUTOCAST(name, name, a, b);                                                    \
    return name##_impl(#name, nullptr, nullptr, a, b);                                   \
  }                                                                                      \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b) {                    \
    name##_impl(#name "_out", &out, nullptr, a, b);                                      \
    return out;                                                                          \
  }                                                                                      \
  Tensor Tensor::name(const Tensor& o) const { return brisk::name(*this, o); }           \
  Tensor Tensor::name(const Scalar& o) const { return brisk::name(*this, o); }           \
  Tensor& Tensor::name##_(const Tensor& o) const {                                             \
    name##_impl(#name "_", nullptr, this, *this, o);                                     \
    return const_cast<Tensor&>(*this);                                                                        \
  }                                                                                      \
  Tensor& Tensor::name##_(const Scalar& o) const {                                             \
    name##_impl(#name "_", nullptr, this, *this, o);                                     \
    return const_cast<Tensor&>(*this);                                                                        \
  }

BRISK_BINARY_OP(mul, mul, (void)0)
BRISK_BINARY_OP(remainder, remainder, check_int_divisor(nm, result_type(a, b), a, b))
BRISK_BINARY_OP(fmod, fmod, check_int_divisor(nm, result_type(a, b), a, b))
BRISK_BINARY_OP(pow, pow, check_pow_exponent(nm, a, b))
BRISK_BINARY_OP(minimum, minimum, (void)0)
BRISK_BINARY_OP(maximum, maximum, (void)0)
BRISK_BINARY_OP(atan2, atan2, it.promote_int_to_float())
BRISK_BINARY_OP(eq, compare, (it.output_dtype(kBool), args.mode = int(CompareMode::Eq)))
BRISK_BINARY_OP(ne, compare, (it.output_dtype(kBool), args.mode = int(CompareMode::Ne)))
BRISK_BINARY_OP(lt, compare, (it.output_dtype(kBool), args.mode = int(CompareMode::Lt)))
BRISK_BINARY_OP(le, compare, (it.output_dtype(kBool), args.mode = int(CompareMode::Le)))
BRISK_BINARY_OP(gt, compare, (it.output_dtype(kBool), args.mode = int(CompareMode::Gt)))
BRISK_BINARY_OP(ge, compare, (it.output_dtype(kBool), args.mode = int(CompareMode::Ge)))
BRISK_BINARY_OP(logical_and, logical, (it.output_dtype(kBool), args.mode = int(LogicalMode::And)))
BRISK_BINARY_OP(logical_or, logical, (it.output_dtype(kBool), args.mode = int(LogicalMode::Or)))
BRISK_BINARY_OP(logical_xor, logical, (it.output_dtype(kBool), args.mode = int(LogicalMode::Xor)))
BRISK_BINARY_OP(bitwise_and, bitwise, (check_bitwise(nm, result_type(a, b)), args.mode = int(BitwiseMode::And)))
BRISK_BINARY_OP(bitwise_or, bitwise, (check_bitwise(nm, result_type(a, b)), args.mode = int(BitwiseMode::Or)))
BRISK_BINARY_OP(bitwise_xor, bitwise, (check_bitwise(nm, result_type(a, b)), args.mode = int(BitwiseMode::Xor)))
BRISK_BINARY_OP(bitwise_left_shift, bitwise,
                (check_shift(nm, result_type(a, b)), args.mode = int(BitwiseMode::LeftShift)))
BRISK_BINARY_OP(bitwise_right_shift, bitwise,
                (check_shift(nm, result_type(a, b)), args.mode = int(BitwiseMode::RightShift)))
#undef BRISK_BINARY_OP

Tensor pow(const Scalar& base, const Tensor& exponent) {
  BRISK_AUTOCAST(pow, pow, base, exponent);
  BRISK_PROFILE_OP("pow", base, exponent);
  IterBuilder it("pow");
  it.input(base).input(exponent);
  Tensor r = run<OpId::pow>("pow", it, KernelArgs{});
  if (BRISK_UNLIKELY(autograd::should_record(exponent))) {
    const double lb = std::log(base.to_double());
    if (base.to_double() == 0.0) {
      // d/de 0^e = 0^e * log(0): taken as 0 where e >= 0 (0^e is constant
      // there), so only negative exponents see -inf (torch).
      autograd::record("PowBackward2", {r}, {exponent}, {autograd::save(exponent), autograd::save_output(r)},
                       [lb](autograd::BackwardCtx& c) -> TensorList {
                         return {(c.grad() * c.saved(1) * lb).masked_fill(c.saved(0) >= 0, 0)};
                       });
    } else {
      autograd::record("PowBackward2", {r}, {exponent}, {autograd::save_output(r)},
                       [lb](autograd::BackwardCtx& c) -> TensorList { return {c.grad() * c.saved(0) * lb}; });
    }
  }
  return r;
}

// Scalar-first operators.
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
// s / t is reciprocal(t) * s, as in PyTorch (Python's __rtruediv__ and
// libtorch's operator/): 0 / t is NaN where 1 / t overflows to inf.
Tensor operator/(const Scalar& a, const Tensor& b) {
  BRISK_PROFILE_OP("div", a, b);
  return mul(reciprocal(b), a);
}
Tensor operator==(const Scalar& a, const Tensor& b) { return eq(b, a); }
// A scalar shifted by tensor counts: the scalar takes part in promotion as a
// 0-dim tensor of its own dtype does (it does not widen the counts' dtype).
Tensor bitwise_left_shift(const Scalar& a, const Tensor& b) { return bitwise_left_shift(scalar_tensor(a), b); }
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b) { return bitwise_right_shift(scalar_tensor(a), b); }
Tensor operator<(const Scalar& a, const Tensor& b) { return gt(b, a); }
Tensor operator>(const Scalar& a, const Tensor& b) { return lt(b, a); }

// ---- ternary ----------------------------------------------------------------------
namespace {
template <class W>
Tensor lerp_impl(const char* nm, const Tensor* self, const Tensor& a, const Tensor& b, const W& w) {
  BRISK_PROFILE_OP(nm, a, b, w);
  BRISK_CHECK(a.dtype() == b.dtype(), nm, "expected dtype ", a.dtype(), " for `end` but got dtype ", b.dtype());
  // The compute (and result) dtype: self's, or with a 0-dim tensor weight
  // the three operands promoted (torch 2.x: lerp(int, int, tensor(0.5)) is
  // float; a weight with dims must have self's dtype; 1.13 refused both).
  ScalarType ct = a.dtype();
  if constexpr (std::is_same_v<W, Tensor>) {
    BRISK_CHECK(w.dim() == 0 || w.dtype() == a.dtype(), nm, "expected dtype ", a.dtype(),
                " for `weight` but got dtype ", w.dtype());
    if (w.dim() == 0 && !self) {
      ResultTypeState st;
      st.update(a);
      st.update(b);
      st.update(w);
      ct = st.result();
    }
  }
  BRISK_CHECK(is_floating_point(ct), nm, "expected a floating point tensor, got ", a.dtype());
  IterBuilder it(nm);
  if (self) {
    autograd::check_inplace(*self, nm);
    it.inplace(*self);
  }
  const bool rec = autograd::should_record(a, b, w);
  Tensor old = rec && self ? a.clone() : Tensor();
  KernelArgs args;
  if constexpr (std::is_same_v<W, Scalar>) {
    // A scalar weight stays in the kernel's opmath type (float for half and
    // bfloat16), as in torch: rounding 0.3 to bfloat16 first changes results.
    it.input(a).input(b).compute_dtype(a.dtype());
    args.s0 = w;
    args.has_s0 = true;
  } else {
    it.input(a).input(b).input(w).compute_dtype(ct);
  }
  Tensor r = run<OpId::lerp>(nm, it, args);
  if (self) self->bump_version();
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    if constexpr (std::is_same_v<W, Scalar>) {
      auto fn = [w](BackwardCtx& c) -> TensorList {
        const Tensor& g = c.grad();
        return {c.needs(0) ? g * (1.0 - w.to_double()) : Tensor(), c.needs(1) ? g * w : Tensor()};
      };
      if (self)
        record_inplace("LerpBackward0", *self, {*self, b}, {}, fn);
      else
        record("LerpBackward0", {r}, {a, b}, {}, fn);
    } else {
      auto fn = [](BackwardCtx& c) -> TensorList {
        const Tensor& g = c.grad();
        Tensor wt = c.saved(2);
        Tensor ga, gb, gw;
        if (c.needs(0)) ga = g * (1 - wt);
        if (c.needs(1)) gb = g * wt;
        if (c.needs(2)) gw = g * (c.saved(1) - c.saved(0));
        return {ga, gb, gw};
      };
      if (self)
        record_inplace("LerpBackward1", *self, {*self, b, w}, {save(old), save(b), save(w)}, fn);
      else
        record("LerpBackward1", {r}, {a, b, w}, {save(a), save(b), save(w)}, fn);
    }
  }
  return r;
}
}  // namespace
Tensor lerp(const Tensor& a, const Tensor& b, const Scalar& w) { return lerp_impl("lerp", nullptr, a, b, w); }
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w) { return lerp_impl("lerp", nullptr, a, b, w); }
Tensor Tensor::lerp(const Tensor& e, const Scalar& w) const { return brisk::lerp(*this, e, w); }
Tensor Tensor::lerp(const Tensor& e, const Tensor& w) const { return brisk::lerp(*this, e, w); }
Tensor& Tensor::lerp_(const Tensor& e, const Scalar& w) const {
  lerp_impl("lerp_", this, *this, e, w);
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::lerp_(const Tensor& e, const Tensor& w) const {
  lerp_impl("lerp_", this, *this, e, w);
  return const_cast<Tensor&>(*this);
}

namespace {
template <OpId op>
Tensor addc_impl(const char* nm, const Tensor* self, const Tensor& s, const Tensor& t1, const Tensor& t2,
                 const Scalar& v) {
  BRISK_PROFILE_OP(nm, s, t1, t2, v);
  IterBuilder it(nm);
  if (self) {
    autograd::check_inplace(*self, nm);
    it.inplace(*self);
  }
  const bool rec = autograd::should_record(s, t1, t2);
  it.input(s).input(t1).input(t2);
  if (op == OpId::addcdiv) {
    // torch refuses two integral (or bool) tensors whatever self's dtype.
    BRISK_CHECK(is_floating_point(t1.dtype()) || is_floating_point(t2.dtype()), nm,
                "integer division with addcdiv is not supported (tensor1 ", t1.dtype(), ", tensor2 ", t2.dtype(),
                "), use (input + value * tensor1 / tensor2) instead");
  }
  if (!is_unit(v)) {
    ResultTypeState st;
    st.update(s);
    st.update(t1);
    st.update(t2);
    detail::check_scalar_fits(nm, v, opmath_dtype(st.result()));
  }
  Tensor r = run<op>(nm, it, alpha_args(v));
  if (self) self->bump_version();
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    auto fn = [v](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      Tensor x = c.saved(0), y = c.saved(1);
      Tensor g1, g2;
      // A float tensor as it is; an integer or bool one in g's dtype
      // promoted with float32.
      auto wide = [&g](const Tensor& t) {
        return t.is_floating_point() ? t : t.to(promote_types(g.dtype(), kFloat32));
      };
      if constexpr (op == OpId::addcmul) {
        // g * (y * v) as torch groups it. An integer y * v is formed in at
        // least float32 (wide() above): torch's float32 y * v with a float v,
        // without its wrap in y's dtype with an integer v, and never in a
        // 16-bit g's dtype (2^31 is inf there, times value 0 is NaN).
        if (c.needs(1)) g1 = g * (wide(y) * v);
        if (c.needs(2)) g2 = g * (wide(x) * v);
      } else {
        // Grouped as torch groups them; its v / y is C++'s Scalar / Tensor:
        // v in y's dtype divided by y. (For an integer y torch raises; brisk
        // gives the gradient.)
        if (c.needs(1))
          g1 = g * (y.is_floating_point() ? scalar_tensor(v, y.dtype()).div(y) : y.reciprocal().mul(v));
        if (c.needs(2)) g2 = -g * ((wide(x) * v) / (y * y));
      }
      return {c.needs(0) ? g : Tensor(), g1, g2};
    };
    const char* name = op == OpId::addcmul ? "AddcmulBackward0" : "AddcdivBackward0";
    if (self)
      record_inplace(name, *self, {*self, t1, t2}, {save(t1), save(t2)}, fn);
    else
      record(name, {r}, {s, t1, t2}, {save(t1), save(t2)}, fn);
  }
  return r;
}
}  // namespace
Tensor addcmul(const Tensor& s, const Tensor& t1, const Tensor& t2, const Scalar& v) {
  BRISK_AUTOCAST(addcmul, addcmul, s, t1, t2, v);
  return addc_impl<OpId::addcmul>("addcmul", nullptr, s, t1, t2, v);
}
Tensor addcdiv(const Tensor& s, const Tensor& t1, const Tensor& t2, const Scalar& v) {
  BRISK_AUTOCAST(addcdiv, addcdiv, s, t1, t2, v);
  return addc_impl<OpId::addcdiv>("addcdiv", nullptr, s, t1, t2, v);
}
Tensor Tensor::addcmul(const Tensor& t1, const Tensor& t2, const Scalar& v) const { return brisk::addcmul(*this, t1, t2, v); }
Tensor Tensor::addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& v) const { return brisk::addcdiv(*this, t1, t2, v); }
Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  addc_impl<OpId::addcmul>("addcmul_", this, *this, t1, t2, v);
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& v) const {
  addc_impl<OpId::addcdiv>("addcdiv_", this, *this, t1, t2, v);
  return const_cast<Tensor&>(*this);
}

// ---- clamp -----------------------------------------------------------------------------
namespace {
Tensor clamp_impl(const char* nm, const Tensor* self, Tensor* out, const Tensor& x, std::optional<Scalar> lo,
                  std::optional<Scalar> hi) {
  BRISK_PROFILE_OP(nm, x, lo, hi);
  BRISK_CHECK(lo || hi, nm, "at least one of 'min' or 'max' must not be None");
  IterBuilder it(nm);
  if (self) {
    autograd::check_inplace(*self, nm);
    it.inplace(*self);
  } else if (out) {
    autograd::check_out(nm, x);
    it.output(*out).resize_out();
  }
  const bool rec = autograd::should_record(x);
  Tensor old = rec && self ? x.clone() : Tensor();
  it.input(x);
  // The bounds take part in type promotion like scalar operands.
  ResultTypeState st;
  st.update(x);
  if (lo) st.update(*lo);
  if (hi) st.update(*hi);
  const ScalarType ct = st.result();
  it.compute_dtype(ct);
  KernelArgs a;
  if (lo) a.s0 = *lo, a.has_s0 = true;
  if (hi) a.s1 = *hi, a.has_s1 = true;
  auto is_nan = [](const std::optional<Scalar>& b) { return b && b->is_floating_point() && std::isnan(b->to_double()); };
  if (is_nan(lo) || is_nan(hi)) {
    // A NaN bound makes every element NaN; the other bound is not converted
    // (PyTorch does not check it).
  } else if (is_integral(ct, false)) {
    // Integer bounds past the dtype's range (torch 2.x): a min above the
    // largest value or a max below the lowest is an error; otherwise they
    // saturate (clamp(min=-1) leaves uint8 alone instead of wrapping to 255).
    const int64_t tlo = ct == kUInt8 ? 0 : ct == kInt8 ? INT8_MIN : ct == kInt16 ? INT16_MIN : ct == kInt32 ? INT32_MIN
                                                                                                          : INT64_MIN;
    const int64_t thi = ct == kUInt8 ? 255 : ct == kInt8 ? INT8_MAX : ct == kInt16 ? INT16_MAX : ct == kInt32 ? INT32_MAX
                                                                                                          : INT64_MAX;
    if (lo) {
      BRISK_CHECK(lo->to_long() <= thi, nm, "min ", *lo, " is above the largest ", ct, " value ", thi);
      a.s0 = std::max(lo->to_long(), tlo);
    }
    if (hi) {
      BRISK_CHECK(hi->to_long() >= tlo, nm, "max ", *hi, " is below the lowest ", ct, " value ", tlo);
      a.s1 = std::min(hi->to_long(), thi);
    }
  } else {
    if (lo) detail::check_scalar_fits(nm, *lo, ct);
    if (hi) detail::check_scalar_fits(nm, *hi, ct);
  }
  Tensor r = run<OpId::clamp>(nm, it, a);
  if (self) self->bump_version();
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    // Gradient passes strictly inside (lo, hi) (Note [clamp gradients]).
    auto fn = [lo, hi](BackwardCtx& c) -> TensorList {
      Tensor v = c.saved(0);
      Tensor keep;
      if (lo) keep = v > *lo;
      if (hi) keep = keep.defined() ? keep.logical_and(v < *hi) : v < *hi;
      return {c.grad().masked_fill(keep.logical_not(), 0)};
    };
    if (self)
      record_inplace("ClampBackward1", *self, {*self}, {save(old)}, fn);
    else
      record("ClampBackward1", {r}, {x}, {save(x)}, fn);
  }
  return r;
}
}  // namespace
Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  return clamp_impl("clamp", nullptr, nullptr, x, lo, hi);
}
Tensor& clamp_out(Tensor& out, const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  clamp_impl("clamp_out", nullptr, &out, x, lo, hi);
  out.bump_version();
  return out;
}
// Note [clamp gradients]
// clamp is not differentiable where the input meets a bound; brisk follows
// PyTorch 2.x's conventions there (1.13 passed the whole gradient to the
// input at a tie). Scalar bounds: the input's gradient passes only strictly
// inside (lo < x < hi; NaN inputs and NaN bounds give 0). Tensor bounds:
// with one bound, as maximum(x, lo) / minimum(x, hi): a tie splits the
// gradient in halves and a NaN on either side gives it to both. With both:
// the input takes it where it is neither below lo nor above hi, halved at a
// tie with one bound when lo < hi; lo takes it where x < lo <= hi (half at
// the tie); hi takes it where lo > hi, or x > hi >= lo (half at the tie).
namespace {
TensorList clamp_tensor_backward(autograd::BackwardCtx& c) {
  const Tensor& g = c.grad();
  const Tensor v = c.saved(0), l = c.saved(1), h = c.saved(2);
  auto halved_where = [&](const Tensor& half_mask, const Tensor& keep) {
    return where(half_mask, g * 0.5, g).masked_fill(keep.logical_not(), 0);
  };
  if (l.defined() && h.defined()) {
    const Tensor below = v < l, above = v > h, ordered = l <= h, strict = l < h;
    const Tensor tie_lo = (v == l).logical_and(strict), tie_hi = (v == h).logical_and(strict);
    return {c.needs(0) ? halved_where(tie_lo.logical_or(tie_hi), below.logical_or(above).logical_not()) : Tensor(),
            c.needs(1) ? halved_where(tie_lo, below.logical_and(ordered).logical_or(tie_lo)) : Tensor(),
            c.needs(2) ? halved_where(tie_hi, (l > h).logical_or(above.logical_and(ordered)).logical_or(tie_hi))
                       : Tensor()};
  }
  const Tensor& b = l.defined() ? l : h;
  const Tensor tie = v == b;
  // The bound wins where x is past it; x wins where it is inside.
  const Tensor x_out = l.defined() ? v < b : v > b, b_out = l.defined() ? v > b : v < b;
  Tensor gx = c.needs(0) ? halved_where(tie, x_out.logical_not()) : Tensor();
  Tensor gb = (c.needs(1) || c.needs(2)) ? halved_where(tie, b_out.logical_not()) : Tensor();
  return l.defined() ? TensorList{gx, gb, Tensor()} : TensorList{gx, Tensor(), gb};
}
}  // namespace

Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  BRISK_PROFILE_OP("clamp", x, lo, hi);
  BRISK_CHECK(lo.defined() || hi.defined(), "clamp", "at least one of 'min' or 'max' must not be None");
  if (!lo.defined() || !hi.defined()) {
    // One bound: maximum(x, lo) / minimum(x, hi) in the promoted dtype.
    const Tensor& b = lo.defined() ? lo : hi;
    Tensor r;
    {
      NoGradGuard ng;
      r = lo.defined() ? maximum(x, b) : minimum(x, b);
    }
    if (BRISK_UNLIKELY(autograd::should_record(x, b)))
      autograd::record("ClampBackward0", {r}, {x, lo, hi}, {autograd::save(x), autograd::save(lo), autograd::save(hi)},
                       clamp_tensor_backward);
    return r;
  }
  IterBuilder it("clamp");
  it.input(x).input(lo).input(hi);
  Tensor r = run<OpId::clamp_tensor>("clamp", it, KernelArgs{});
  if (BRISK_UNLIKELY(autograd::should_record(x, lo, hi)))
    autograd::record("ClampBackward0", {r}, {x, lo, hi}, {autograd::save(x), autograd::save(lo), autograd::save(hi)},
                     clamp_tensor_backward);
  return r;
}
Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const { return brisk::clamp(*this, lo, hi); }
Tensor Tensor::clamp(const Tensor& lo, const Tensor& hi) const { return brisk::clamp(*this, lo, hi); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) const {
  clamp_impl("clamp_", this, nullptr, *this, lo, hi);
  return const_cast<Tensor&>(*this);
}

// ---- where -------------------------------------------------------------------------------
namespace {
template <class A, class B>
Tensor where_impl(const Tensor& cond, const A& a, const B& b) {
  BRISK_PROFILE_OP("where", cond, a, b);
  BRISK_CHECK(cond.dtype() == kBool || cond.dtype() == kUInt8, "where",
              "expected condition to be a boolean tensor, but got a tensor with dtype ", cond.dtype());
  Tensor c = cond.dtype() == kBool ? cond : cond.ne(0);
  IterBuilder it("where");
  it.input(c, /*promote=*/false).input(a).input(b);
  ResultTypeState st;
  st.update(a);
  st.update(b);
  const ScalarType ct = st.result();
  it.compute_dtype(ct);
  // A Scalar operand is converted to the result dtype, checked (torch 2.x
  // lets a 16-bit float overflow to inf here, as it does not in fill_).
  if (!is_reduced_float(ct)) {
    if constexpr (std::is_same_v<A, Scalar>) detail::check_scalar_fits("where", a, ct);
    if constexpr (std::is_same_v<B, Scalar>) detail::check_scalar_fits("where", b, ct);
  }
  Tensor r = run<OpId::where>("where", it, KernelArgs{});
  if (BRISK_UNLIKELY(autograd::should_record(a, b))) {
    using namespace autograd;
    auto fn = [](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      Tensor m = c.saved(0);
      return {c.needs(0) ? g.masked_fill(m.logical_not(), 0) : Tensor(), c.needs(1) ? g.masked_fill(m, 0) : Tensor()};
    };
    // Scalar operands take no gradient: pass an undefined tensor in their place.
    Tensor ta, tb;
    if constexpr (std::is_same_v<A, Tensor>) ta = a;
    if constexpr (std::is_same_v<B, Tensor>) tb = b;
    record("WhereBackward0", {r}, {ta, tb}, {save(c)}, fn);
  }
  return r;
}
}  // namespace
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) { return where_impl(c, a, b); }
Tensor where(const Tensor& c, const Scalar& a, const Tensor& b) { return where_impl(c, a, b); }
Tensor where(const Tensor& c, const Tensor& a, const Scalar& b) { return where_impl(c, a, b); }
Tensor where(const Tensor& c, const Scalar& a, const Scalar& b) { return where_impl(c, a, b); }

Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& v) const {
  BRISK_PROFILE_OP("masked_fill", *this, mask, v);
  detail::check_scalar_fits("masked_fill", v, dtype());
  // The result has the broadcast shape of self and mask (PyTorch): self is
  // expanded before the copy that masked_fill_ then writes.
  const DimVector shape = broadcast_shapes(sizes(), mask.sizes(), "masked_fill");
  Tensor out = sizes().equals(shape) ? clone() : expand(shape).clone(MemoryFormat::Contiguous);
  out.masked_fill_(mask, v);
  return detail::mark_new_version(std::move(out));  // Note [Version counters]
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) const {
  BRISK_PROFILE_OP("masked_fill_", *this, mask, v);
  BRISK_CHECK(mask.dtype() == kBool, "masked_fill_", "expected a boolean mask, got ", mask.dtype());
  detail::check_scalar_fits("masked_fill_", v, dtype());
  autograd::check_inplace(*this, "masked_fill_");
  if (BRISK_UNLIKELY(has_internal_overlap(*this))) {
    // An expanded self (PyTorch allows it, with a deprecation warning): a
    // memory location is written when any element aliasing it is masked.
    // Reduce the mask over the 0-stride dims and fill one copy of them, so
    // the result does not depend on the order of the writes.
    BRISK_CHECK(IntArrayRef(broadcast_shapes(sizes(), mask.sizes(), "masked_fill_")) == sizes(), "masked_fill_",
                "mask of shape ", mask.sizes(), " cannot be broadcast to self's shape ", sizes());
    NoGradGuard ng;
    Tensor m = mask.expand(sizes()), target = *this;
    for (int64_t d = 0; d < dim(); ++d)
      if (stride(d) == 0 && size(d) > 1) {
        m = m.any(d, /*keepdim=*/true);
        target = target.narrow(d, 0, 1);
      }
    IterBuilder it("masked_fill_");
    it.inplace(target).input(m, false).input(v).input(target).compute_dtype(dtype());
    run<OpId::where>("masked_fill_", it, KernelArgs{});
  } else {
    IterBuilder it("masked_fill_");
    it.inplace(*this).input(mask, false).input(v).input(*this).compute_dtype(dtype());
    run<OpId::where>("masked_fill_", it, KernelArgs{});
  }
  bump_version();
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    autograd::record_inplace("MaskedFillBackward0", *this, {*this}, {autograd::save(mask)},
                             [](autograd::BackwardCtx& c) -> TensorList { return {c.grad().masked_fill(c.saved(0), 0)}; });
  return const_cast<Tensor&>(*this);
}

Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  BRISK_PROFILE_OP("threshold_backward", grad, self);
  BRISK_CHECK(is_floating_point(grad.dtype()) && is_floating_point(self.dtype()), "threshold_backward",
              "expected floating point tensors, got ", grad.dtype(), " and ", self.dtype());
  IterBuilder it("threshold_backward");
  it.input(grad).input(self);
  KernelArgs args;
  args.s0 = threshold;
  args.has_s0 = true;
  Tensor r = run<OpId::threshold_backward>("threshold_backward", it, args);
  // As torch's: linear in grad (the same mask again); self only selects (a
  // materialized zero gradient, as torch's zeros_like: a structural
  // zero here would give 0 where torch's zero meets an infinite factor, and
  // a third derivative with no graph).
  if (BRISK_UNLIKELY(autograd::should_record(grad, self)))
    autograd::record("ThresholdBackwardBackward0", {r}, {grad, self}, {autograd::save(self)},
                     [threshold](autograd::BackwardCtx& c) -> TensorList {
                       return {threshold_backward(c.grad(), c.saved(0), threshold), zeros_like(c.saved(0))};
                     });
  return r;
}

}  // namespace brisk
