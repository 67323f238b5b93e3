// Front ends of PyTorch's binary math functions: hypot, logaddexp,
// logaddexp2, copysign, nextafter, xlogy and heaviside (rows of slot
// `binary_math`, Note [Binary math modes] in kernels/math.h), with their
// PyTorch dtype rules and derivatives (derivatives.yaml); and ldexp and
// float_power, which PyTorch composes of mul/pow.
#include <cmath>
#include <type_traits>

#include "autograd/function.h"
#include "brisk/ops.h"
#include "core/autocast.h"
#include "core/dispatch.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"
#include "kernels/math.h"
#include "profiler/record.h"

namespace brisk {

namespace {
using autograd::BackwardCtx;
using math::BinaryMath;

// How an op treats its operands' dtypes (PyTorch's TensorIterator configs).
enum class Dtypes {
  Float,       // the promoted dtype must be floating ("not implemented for 'Long'")
  IntToFloat,  // integer operands compute in the default float dtype (copysign, xlogy)
  Same,        // both operands (and out) of one dtype (heaviside)
};
constexpr Dtypes dtypes_of(BinaryMath m) {
  if (m == BinaryMath::copysign || m == BinaryMath::xlogy) return Dtypes::IntToFloat;
  if (m == BinaryMath::heaviside) return Dtypes::Same;
  return Dtypes::Float;
}
constexpr const char* node_name(BinaryMath m, bool scalar_other) {
  switch (m) {
    case BinaryMath::hypot: return "HypotBackward0";
    case BinaryMath::logaddexp: return "LogaddexpBackward0";
    case BinaryMath::logaddexp2: return "Logaddexp2Backward0";
    case BinaryMath::copysign: return scalar_other ? "CopysignBackward1" : "CopysignBackward0";
    case BinaryMath::nextafter: return "NextafterBackward0";
    case BinaryMath::xlogy: return scalar_other ? "XlogyBackward2" : "XlogyBackward0";
    case BinaryMath::heaviside: return "HeavisideBackward0";
    default: return "?";
  }
}
ScalarType dtype_of(const Tensor& t) { return t.dtype(); }
ScalarType dtype_of(const Scalar& s) { return s.dtype(); }

// PyTorch's derivative of an op it marks not_implemented: the forward runs
// and records; a backward through it raises.
TensorList not_implemented(const char* op) {
  BRISK_FAIL(op, "the derivative for '", op, "' is not implemented (as in PyTorch)");
  return {};
}

// The gradients (PyTorch's formulas); a and b the operands (a the old value
// of self for an in-place call), r the result.
template <class Other>
void record_math(BinaryMath m, const Tensor* self, const Tensor& r, const Tensor& a, const Other& b) {
  using namespace autograd;
  constexpr bool tensor_b = std::is_same_v<Other, Tensor>;
  const char* name = node_name(m, !tensor_b);
  auto rec = [&](std::initializer_list<SaveSpec> saved, auto fn) {
    if constexpr (tensor_b) {
      if (self)
        record_inplace(name, *self, {*self, b}, saved, std::move(fn));
      else
        record(name, {r}, {a, b}, saved, std::move(fn));
    } else {
      if (self)
        record_inplace(name, *self, {*self}, saved, std::move(fn));
      else
        record(name, {r}, {a}, saved, std::move(fn));
    }
  };
  // An in-place call's result is self, which later ops may change: the
  // formulas that read the result recompute it from the saved operands.
  const bool out = self == nullptr;
  if (m == BinaryMath::hypot) {
    if constexpr (tensor_b) {
      auto fn = [out](BackwardCtx& c) -> TensorList {  // grad * self / result
        const Tensor& g = c.grad();
        const Tensor x = c.saved(0), y = c.saved(1);
        // (rounded to self's dtype, as torch's saved result is)
        const Tensor res = out ? c.saved(2) : hypot(x, y).to(x.dtype());
        return {c.needs(0) ? g * x / res : Tensor(), c.needs(1) ? g * y / res : Tensor()};
      };
      if (out)
        rec({save(a), save(b), save_output(r)}, fn);
      else
        rec({save(a), save(b)}, fn);
    }
  } else if (m == BinaryMath::logaddexp || m == BinaryMath::logaddexp2) {
    if constexpr (tensor_b) {
      const bool two = m == BinaryMath::logaddexp2;
      rec({save(a), save(b)}, [two](BackwardCtx& c) -> TensorList {
        const Tensor& g = c.grad();
        const Tensor x = c.saved(0), y = c.saved(1);
        auto w = [two](const Tensor& d) { return two ? pow(2, d) + 1 : exp(d) + 1; };
        return {c.needs(0) ? g / w(y - x) : Tensor(), c.needs(1) ? g / w(x - y) : Tensor()};
      });
    }
  } else if (m == BinaryMath::copysign) {
    // grad * (result / self), 0 where self == 0; the sign operand's is 0
    if constexpr (tensor_b) {
      auto fn = [out](BackwardCtx& c) -> TensorList {
        const Tensor x = c.saved(0);
        const Tensor res = out ? c.saved(2) : copysign(x, c.saved(1)).to(x.dtype());
        return {c.needs(0) ? c.grad() * (res / x).masked_fill(x == 0, 0) : Tensor(),
                c.needs(1) ? zeros_like(c.saved(1)) : Tensor()};
      };
      if (out)
        rec({save(a), save(b), save_output(r)}, fn);
      else
        rec({save(a), save(b)}, fn);
    } else {
      auto fn = [out, b](BackwardCtx& c) -> TensorList {
        const Tensor x = c.saved(0);
        const Tensor res = out ? c.saved(1) : copysign(x, b).to(x.dtype());
        return {c.grad() * (res / x).masked_fill(x == 0, 0)};
      };
      if (out)
        rec({save(a), save_output(r)}, fn);
      else
        rec({save(a)}, fn);
    }
  } else if (m == BinaryMath::xlogy) {
    if constexpr (tensor_b) {
      rec({save(a), save(b)}, [](BackwardCtx& c) -> TensorList {
        const Tensor& g = c.grad();
        const Tensor x = c.saved(0), y = c.saved(1);
        Tensor ga, gb;
        if (c.needs(0)) ga = xlogy(g, y).masked_fill((x == 0) & (y <= 0), 0);
        if (c.needs(1)) gb = g * x / y;
        return {ga, gb};
      });
    } else {
      const bool positive = b.to_double() > 0;
      rec({save(a)}, [b, positive](BackwardCtx& c) -> TensorList {
        const Tensor lg = xlogy(c.grad(), b);
        return {positive ? lg : lg.masked_fill(c.saved(0) == 0, 0)};
      });
    }
  } else if (m == BinaryMath::nextafter) {
    // torch 2.x: the gradient passes to self where self != other (a step
    // was taken; NaN included), 0 where they are equal; other's is 0
    if constexpr (tensor_b) {
      rec({save(a), save(b)}, [](BackwardCtx& c) -> TensorList {
        const Tensor x = c.saved(0), y = c.saved(1);
        return {c.needs(0) ? where(x != y, c.grad(), 0.0) : Tensor(), c.needs(1) ? zeros_like(y) : Tensor()};
      });
    }
  } else {  // heaviside: torch has no derivative ("derivative for aten::heaviside is not implemented")
    rec({}, [](BackwardCtx&) -> TensorList { return not_implemented("heaviside"); });
  }
}

template <class Other>
Tensor binary_math(BinaryMath m, const char* nm, Tensor* out, const Tensor* self, const Tensor& a, const Other& b) {
  BRISK_PROFILE_OP(nm, a, b);
  BRISK_CHECK(a.defined(), nm, "input is an undefined tensor");
  if constexpr (std::is_same_v<Other, Tensor>) BRISK_CHECK(b.defined(), nm, "other is an undefined tensor");
  const Dtypes rule = dtypes_of(m);
  if (rule == Dtypes::Same) {
    const bool out_ok = !out || !out->defined() || out->dtype() == a.dtype();
    BRISK_CHECK(a.dtype() == dtype_of(b) && out_ok, nm, "is not yet implemented for tensors with different dtypes (got ",
                a.dtype(), " and ", dtype_of(b), out_ok ? "" : " with an out tensor of another dtype", ")");
  } else if (rule == Dtypes::Float) {
    const ScalarType t = result_type(a, b);
    BRISK_CHECK(is_floating_point(t), nm, "not implemented for ", t, ": it takes floating-point tensors");
  }
  const bool rec = autograd::should_record(a, b);
  IterBuilder it(nm);
  if (self) {
    autograd::check_inplace(*self, nm);
    it.inplace(*self);
  } else if (out) {
    autograd::check_out(nm, a, b);
    it.output(*out).resize_out();
  }
  it.input(a).input(b);
  if (rule == Dtypes::IntToFloat) it.promote_int_to_float();
  KernelArgs args;
  args.mode = static_cast<int>(m);
  Tensor old = rec && self ? a.clone() : Tensor();
  TensorIter ti;
  it.build(ti);
  kernel<OpId::binary_math>(ti.result.device().type, nm)(ti, args);
  ti.finish();
  Tensor r = std::move(ti.result);
  if (self) self->bump_version();
  if (out) out->bump_version();
  if (BRISK_UNLIKELY(rec)) record_math(m, self, r, self ? old : a, b);
  return r;
}
}  // namespace

// ---- the rows' front ends ---------------------------------------------------------------
#define BRISK_MATH_FN(name)                                                                  \
  Tensor name(const Tensor& a, const Tensor& b) {                                            \
    BRISK_AUTOCAST(name, name, a, b);                                                        \
    return binary_math(BinaryMath::name, #name, nullptr, nullptr, a, b);                     \
  }                                                                                          \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b) {                        \
    binary_math(BinaryMath::name, #name "_out", &out, nullptr, a, b);                        \
    return out;                                                                              \
  }                                                                                          \
  Tensor Tensor::name(const Tensor& o) const { return brisk::name(*this, o); }
#define BRISK_MATH_INPLACE(name)                                                             \
  Tensor& Tensor::name##_(const Tensor& o) const {                                           \
    binary_math(BinaryMath::name, #name "_", nullptr, this, *this, o);                       \
    return const_cast<Tensor&>(*this);                                                       \
  }
#define BRISK_MATH_SCALAR(name)                                                              \
  Tensor name(const Tensor& a, const Scalar& b) {                                            \
    return binary_math(BinaryMath::name, #name, nullptr, nullptr, a, b);                     \
  }                                                                                          \
  Tensor Tensor::name(const Scalar& o) const { return brisk::name(*this, o); }               \
  Tensor& Tensor::name##_(const Scalar& o) const {                                           \
    binary_math(BinaryMath::name, #name "_", nullptr, this, *this, o);                       \
    return const_cast<Tensor&>(*this);                                                       \
  }

BRISK_MATH_FN(hypot)
BRISK_MATH_INPLACE(hypot)
BRISK_MATH_FN(logaddexp)
BRISK_MATH_FN(logaddexp2)
BRISK_MATH_FN(copysign)
BRISK_MATH_INPLACE(copysign)
BRISK_MATH_SCALAR(copysign)
BRISK_MATH_FN(nextafter)
BRISK_MATH_INPLACE(nextafter)
BRISK_MATH_FN(xlogy)
BRISK_MATH_INPLACE(xlogy)
BRISK_MATH_SCALAR(xlogy)
BRISK_MATH_FN(heaviside)
BRISK_MATH_INPLACE(heaviside)
#undef BRISK_MATH_FN
#undef BRISK_MATH_INPLACE
#undef BRISK_MATH_SCALAR

// xlogy(Scalar, Tensor): the scalar as a 0-dim tensor of the result dtype
// (which then does not change it), the gradient to `other` only.
Tensor xlogy(const Scalar& a, const Tensor& b) {
  BRISK_CHECK(b.defined(), "xlogy", "other is an undefined tensor");
  ScalarType t = result_type(b, a);
  if (!is_floating_point(t)) t = default_dtype();
  const Tensor x = scalar_tensor(a, TensorOptions(t));  // a host operand of any device's op
  Tensor r;
  {
    NoGradGuard ng;
    r = binary_math(BinaryMath::xlogy, "xlogy", nullptr, nullptr, x, b);
  }
  if (BRISK_UNLIKELY(autograd::should_record(b))) {
    using namespace autograd;
    record("XlogyBackward1", {r}, {b}, {save(b)},
           [a](BackwardCtx& c) -> TensorList { return {c.grad() * a / c.saved(0)}; });
  }
  return r;
}

// ---- composites (as PyTorch composes them) ------------------------------------------------
// ldexp(x, e) = x * 2^e, as PyTorch 2.x: an integer (or bool) e and a
// floating x give x's dtype and the exact std::ldexp value (PyTorch's own
// kernel: 1e-30f * 2^130 is 1.36e9, where 2^130 alone would overflow
// float32), here x * 2^e formed in float64 (exact: a power of two times a
// float32 or 16-bit value; float64 splits the power in two) and rounded
// once; any other pair is x * 2^e with PyTorch's 2^e (`_pow2`: pow(2.0, e),
// or for a float64 or 16-bit x a 0-dim 2 of x's dtype to the power e).
namespace {
Tensor ldexp_int(const Tensor& a, const Tensor& b) {
  // PyTorch's kernel takes the exponent as an int (2^32 + 2 is 2)
  const Tensor e = b.to(kInt32).to(kDouble);
  if (a.dtype() != kDouble) return (a.to(kDouble) * brisk::pow(2.0, e)).to(a.dtype());
  const Tensor h = (e / 2).trunc();
  return a * brisk::pow(2.0, h) * brisk::pow(2.0, e - h);
}
Tensor pow2(const Tensor& a, const Tensor& b) {
  if (!is_floating_point(a.dtype()) || a.dtype() == kFloat) return brisk::pow(2.0, b);
  return brisk::pow(scalar_tensor(2.0, TensorOptions(a.dtype()).device(a.device())), b);
}
bool int_exponent(const Tensor& a, const Tensor& b) {
  BRISK_CHECK(b.dtype() != kBool, "ldexp", "not implemented for a bool exponent (as PyTorch's kernel)");
  return is_floating_point(a.dtype()) && !is_floating_point(b.dtype());
}
}  // namespace
Tensor ldexp(const Tensor& a, const Tensor& b) {
  BRISK_CHECK(a.defined() && b.defined(), "ldexp", "input and other must be defined");
  if (int_exponent(a, b)) return ldexp_int(a, b);
  return mul(a, pow2(a, b));
}
Tensor& ldexp_out(Tensor& out, const Tensor& a, const Tensor& b) {
  BRISK_CHECK(!is_integral(out.dtype(), true), "ldexp_out", "ldexp can't be cast to the desired output type ",
              out.dtype());
  if (int_exponent(a, b) && out.dtype() == a.dtype()) {
    autograd::check_out("ldexp_out", a, b);
    NoGradGuard ng;  // out= forms record no graph
    const Tensor r = ldexp_int(a, b);
    out.resize_(r.sizes());
    out.copy_(r);
    return out;
  }
  return mul_out(out, a, pow2(a, b));
}
Tensor Tensor::ldexp(const Tensor& o) const { return brisk::ldexp(*this, o); }
Tensor& Tensor::ldexp_(const Tensor& o) const {
  BRISK_CHECK(!is_integral(dtype(), true), "ldexp_", "ldexp can't be cast to the desired output type ", dtype());
  if (int_exponent(*this, o)) return copy_(ldexp_int(*this, o));
  return mul_(pow2(*this, o));
}

// float_power: both operands in float64, then pow.
Tensor float_power(const Tensor& a, const Tensor& b) { return pow(a.to(kDouble), b.to(kDouble)); }
Tensor float_power(const Tensor& a, const Scalar& b) { return pow(a.to(kDouble), b.to_double()); }
Tensor float_power(const Scalar& a, const Tensor& b) { return pow(a.to_double(), b.to(kDouble)); }
Tensor& float_power_out(Tensor& out, const Tensor& a, const Tensor& b) {
  BRISK_CHECK(out.dtype() == kDouble, "float_power_out", "the output's dtype must be float64, got ", out.dtype());
  return pow_out(out, a.to(kDouble), b.to(kDouble));
}
Tensor Tensor::float_power(const Tensor& o) const { return brisk::float_power(*this, o); }
Tensor Tensor::float_power(const Scalar& o) const { return brisk::float_power(*this, o); }
Tensor& Tensor::float_power_(const Tensor& o) const {
  BRISK_CHECK(dtype() == kDouble, "float_power_",
              "the base's dtype must be float64 for the in-place form (the result is float64), got ", dtype());
  return pow_(o.to(kDouble));
}
Tensor& Tensor::float_power_(const Scalar& o) const {
  BRISK_CHECK(dtype() == kDouble, "float_power_",
              "the base's dtype must be float64 for the in-place form (the result is float64), got ", dtype());
  return pow_(o.to_double());
}

}  // namespace brisk
