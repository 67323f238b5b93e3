// The unary pointwise ops, listed once (Note [The unary list]). brisk/ops.h
// and brisk/tensor.h declare their functions and methods from this list;
// the library generates from it their definitions, UnaryMode, the op
// table's rows and the CUDA kernel's cases.
#pragma once

// Note [The unary list]
// X(ctx, name, group, dtypes, amp, forms); `ctx` is passed through (a
// consumer that builds other macros from the rows uses it).
//   group  how the front end treats the input:
//          Float      integers and bool are computed in the default float
//                     dtype (exp(int) is float32, as in torch);
//          FloatOnly  integer inputs are refused (silu, mish, frac);
//          Numeric    any dtype but bool, result in the input's dtype;
//          Predicate  any dtype, bool result;
//          Integral   integers and bool only;
//   dtypes the op table's DTypeClass (All, Numeric, Float, Integral);
//   amp    the op table's AmpPolicy under CUDA autocast (Keep, Fp32); under
//          CPU autocast every unary op is Keep (PyTorch's CPU lists);
//   forms  which functions exist:
//          Full        name(x), name_out(out, x), x.name(), x.name_();
//          NoInplace   name(x), name_out(out, x), x.name();
//          FreeInplace name(x), name_out(out, x), name_(x) (no methods);
//          Custom      declared by hand (the op takes more arguments).
// Each row's scalar functor is brisk::math::op::<name>
// (src/kernels/functors.h); adding an op: docs/design/adding_an_op.md.
// clang-format off
#define BRISK_FORALL_UNARY_OPS(X, ctx)                   \
  X(ctx, neg, Numeric, Numeric, Keep, Full)              \
  X(ctx, abs, Numeric, Numeric, Keep, Full)              \
  X(ctx, sign, Numeric, All, Keep, Full)                 \
  X(ctx, exp, Float, All, Fp32, Full)                    \
  X(ctx, exp2, Float, All, Keep, Full)                   \
  X(ctx, log, Float, All, Fp32, Full)                    \
  X(ctx, log2, Float, All, Fp32, Full)                   \
  X(ctx, log10, Float, All, Fp32, Full)                  \
  X(ctx, log1p, Float, All, Fp32, Full)                  \
  X(ctx, expm1, Float, All, Fp32, Full)                  \
  X(ctx, sqrt, Float, All, Keep, Full)                   \
  X(ctx, rsqrt, Float, All, Fp32, Full)                  \
  X(ctx, square, Numeric, All, Keep, Full)               \
  X(ctx, reciprocal, Float, All, Fp32, Full)             \
  X(ctx, sin, Float, All, Keep, Full)                    \
  X(ctx, cos, Float, All, Keep, Full)                    \
  X(ctx, tan, Float, All, Fp32, Full)                    \
  X(ctx, asin, Float, All, Fp32, Full)                   \
  X(ctx, acos, Float, All, Fp32, Full)                   \
  X(ctx, atan, Float, All, Keep, Full)                   \
  X(ctx, sinh, Float, All, Fp32, Full)                   \
  X(ctx, cosh, Float, All, Fp32, Full)                   \
  X(ctx, tanh, Float, All, Keep, Full)                   \
  X(ctx, sigmoid, Float, All, Keep, Full)                \
  X(ctx, erf, Float, All, Keep, Full)                    \
  X(ctx, erfc, Float, All, Keep, Full)                   \
  X(ctx, relu, Numeric, Numeric, Keep, Full)             \
  X(ctx, silu, FloatOnly, Float, Keep, Full)             \
  X(ctx, floor, Numeric, Numeric, Keep, Full)            \
  X(ctx, ceil, Numeric, Numeric, Keep, Full)             \
  X(ctx, round, Numeric, Numeric, Keep, Full)            \
  X(ctx, trunc, Numeric, Numeric, Keep, Full)            \
  X(ctx, frac, FloatOnly, Float, Keep, Full)             \
  X(ctx, logical_not, Predicate, All, Keep, Full)        \
  X(ctx, bitwise_not, Integral, Integral, Keep, Full)    \
  X(ctx, isnan, Predicate, All, Keep, NoInplace)         \
  X(ctx, isinf, Predicate, All, Keep, NoInplace)         \
  X(ctx, isfinite, Predicate, All, Keep, NoInplace)      \
  X(ctx, asinh, Float, All, Keep, Full)                  \
  X(ctx, acosh, Float, All, Keep, Full)                  \
  X(ctx, atanh, Float, All, Keep, Full)                  \
  X(ctx, erfinv, Float, All, Fp32, Full)                 \
  X(ctx, lgamma, Float, All, Keep, Full)                 \
  X(ctx, digamma, Float, All, Keep, Full)                \
  /* x * tanh(softplus(x)) (torch.nn.functional.mish) */ \
  X(ctx, mish, FloatOnly, Float, Keep, FreeInplace)      \
  /* log(x / (1 - x)), optional eps clamp (ops.h) */     \
  X(ctx, logit, Float, All, Keep, Custom)
// clang-format on

// The declarations of one row's free functions and of its methods.
#define BRISK_DETAIL_UNARY_FREE_Full(name) \
  Tensor name(const Tensor& x);            \
  Tensor& name##_out(Tensor& out, const Tensor& x);
#define BRISK_DETAIL_UNARY_FREE_NoInplace(name) BRISK_DETAIL_UNARY_FREE_Full(name)
#define BRISK_DETAIL_UNARY_FREE_FreeInplace(name) \
  BRISK_DETAIL_UNARY_FREE_Full(name)              \
  Tensor& name##_(Tensor& x);
#define BRISK_DETAIL_UNARY_FREE_Custom(name)
#define BRISK_DETAIL_UNARY_DECLARE_FREE(ctx, name, group, dtypes, amp, forms) BRISK_DETAIL_UNARY_FREE_##forms(name)

#define BRISK_DETAIL_UNARY_METHODS_Full(name) \
  Tensor name() const;                        \
  Tensor& name##_() const;
#define BRISK_DETAIL_UNARY_METHODS_NoInplace(name) Tensor name() const;
#define BRISK_DETAIL_UNARY_METHODS_FreeInplace(name)
#define BRISK_DETAIL_UNARY_METHODS_Custom(name)
#define BRISK_DETAIL_UNARY_DECLARE_METHODS(ctx, name, group, dtypes, amp, forms) \
  BRISK_DETAIL_UNARY_METHODS_##forms(name)
