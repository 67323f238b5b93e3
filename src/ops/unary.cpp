// Front ends of the unary elementwise ops.
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/tensor_iter.h"

namespace brisk {

namespace {
enum class UnaryKind { Float, Numeric, Predicate, Integral };

UnaryKind kind_of(UnaryMode m) {
  switch (m) {
    case UnaryMode::neg: case UnaryMode::abs: case UnaryMode::sign: case UnaryMode::square:
    case UnaryMode::relu: case UnaryMode::floor: case UnaryMode::ceil: case UnaryMode::round:
    case UnaryMode::trunc:
      return UnaryKind::Numeric;
    case UnaryMode::logical_not: case UnaryMode::isnan: case UnaryMode::isinf: case UnaryMode::isfinite:
      return UnaryKind::Predicate;
    case UnaryMode::bitwise_not:
      return UnaryKind::Integral;
    default:
      return UnaryKind::Float;
  }
}

Tensor unary_impl(const char* name, UnaryMode mode, const Tensor& x, Tensor* out, bool inplace) {
  const UnaryKind k = kind_of(mode);
  BRISK_CHECK(x.defined(), name, "input 0 is an undefined tensor");
  // PyTorch's bool rules: sign(bool) is the identity, square(bool) is int64.
  if (x.dtype() == kBool && !out && !inplace) {
    if (mode == UnaryMode::sign) return x.clone();
    if (mode == UnaryMode::square) return x.to(kInt64).square();
  }
  if (mode == UnaryMode::silu)
    BRISK_CHECK(x.is_floating_point(), name, "expected a floating point tensor, got ", x.dtype());
  IterBuilder it(name);
  if (inplace)
    it.inplace(x);
  else if (out)
    it.output(*out).resize_out();
  it.input(x);
  switch (k) {
    case UnaryKind::Float:
      it.promote_int_to_float();
      break;
    case UnaryKind::Numeric:
      BRISK_CHECK(x.dtype() != kBool, name,
                  "not supported for bool tensors");
      break;
    case UnaryKind::Predicate:
      it.output_dtype(kBool);
      break;
    case UnaryKind::Integral:
      BRISK_CHECK(!x.is_floating_point(), name, "only integer and bool tensors are supported, got ", x.dtype());
      break;
  }
  if (mode == UnaryMode::frac) BRISK_CHECK(x.is_floating_point(), name, "expected a floating point tensor, got ", x.dtype());
  TensorIter iter;
  it.build(iter);
  KernelArgs a;
  a.mode = static_cast<int>(mode);
  // bool abs/relu compute on uint8 semantics: identical values.
  kernel<OpId::unary>(x.device().type, name)(iter, a);
  iter.finish();
  if (inplace) x.bump_version();
  if (out) out->bump_version();
  return std::move(iter.result);
}
}  // namespace

#define BRISK_UNARY_OP(name)                                                                         \
  Tensor name(const Tensor& x) { return unary_impl(#name, UnaryMode::name, x, nullptr, false); }      \
  Tensor& name##_out(Tensor& out, const Tensor& x) {                                                  \
    unary_impl(#name "_out", UnaryMode::name, x, &out, false);                                         \
    return out;                                                                                        \
  }
#define BRISK_UNARY_METHOD(name)                                  \
  Tensor Tensor::name() const { return brisk::name(*this); }      \
  Tensor& Tensor::name##_() {                                     \
    unary_impl(#name "_", UnaryMode::name, *this, nullptr, true); \
    return *this;                                                 \
  }
#define BRISK_UNARY_BOTH(name) BRISK_UNARY_OP(name) BRISK_UNARY_METHOD(name)
BRISK_UNARY_BOTH(neg)
BRISK_UNARY_BOTH(abs)
BRISK_UNARY_BOTH(sign)
BRISK_UNARY_BOTH(exp)
BRISK_UNARY_BOTH(exp2)
BRISK_UNARY_BOTH(log)
BRISK_UNARY_BOTH(log2)
BRISK_UNARY_BOTH(log10)
BRISK_UNARY_BOTH(log1p)
BRISK_UNARY_BOTH(expm1)
BRISK_UNARY_BOTH(sqrt)
BRISK_UNARY_BOTH(rsqrt)
BRISK_UNARY_BOTH(square)
BRISK_UNARY_BOTH(reciprocal)
BRISK_UNARY_BOTH(sin)
BRISK_UNARY_BOTH(cos)
BRISK_UNARY_BOTH(tan)
BRISK_UNARY_BOTH(asin)
BRISK_UNARY_BOTH(acos)
BRISK_UNARY_BOTH(atan)
BRISK_UNARY_BOTH(sinh)
BRISK_UNARY_BOTH(cosh)
BRISK_UNARY_BOTH(tanh)
BRISK_UNARY_BOTH(sigmoid)
BRISK_UNARY_BOTH(erf)
BRISK_UNARY_BOTH(erfc)
BRISK_UNARY_BOTH(relu)
BRISK_UNARY_BOTH(silu)
BRISK_UNARY_BOTH(floor)
BRISK_UNARY_BOTH(ceil)
BRISK_UNARY_BOTH(round)
BRISK_UNARY_BOTH(trunc)
BRISK_UNARY_BOTH(frac)
BRISK_UNARY_BOTH(logical_not)
BRISK_UNARY_BOTH(bitwise_not)
BRISK_UNARY_OP(isnan)
BRISK_UNARY_OP(isinf)
BRISK_UNARY_OP(isfinite)
#undef BRISK_UNARY_BOTH
#undef BRISK_UNARY_OP
#undef BRISK_UNARY_METHOD
Tensor Tensor::isnan() const { return brisk::isnan(*this); }
Tensor Tensor::isinf() const { return brisk::isinf(*this); }
Tensor Tensor::isfinite() const { return brisk::isfinite(*this); }

namespace {
Tensor gelu_impl(const Tensor& x, std::string_view approximate, bool inplace) {
  BRISK_CHECK(approximate == "none" || approximate == "tanh", "gelu", "approximate must be 'none' or 'tanh', got '",
              approximate, "'");
  BRISK_CHECK(x.is_floating_point(), "gelu", "expected a floating point tensor, got ", x.dtype());
  IterBuilder it("gelu");
  if (inplace) it.inplace(x);
  it.input(x);
  TensorIter iter;
  it.build(iter);
  KernelArgs a;
  a.mode = approximate == "tanh";
  kernel<OpId::gelu>(x.device().type, "gelu")(iter, a);
  if (inplace) x.bump_version();
  return std::move(iter.result);
}
}  // namespace
Tensor gelu(const Tensor& x, std::string_view approximate) { return gelu_impl(x, approximate, false); }
Tensor Tensor::gelu(std::string_view approximate) const { return gelu_impl(*this, approximate, false); }
Tensor& Tensor::gelu_(std::string_view approximate) {
  gelu_impl(*this, approximate, true);
  return *this;
}

Tensor softplus(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  BRISK_CHECK(x.is_floating_point(), "softplus", "expected a floating point tensor, got ", x.dtype());
  IterBuilder it("softplus");
  it.input(x);
  TensorIter iter;
  it.build(iter);
  KernelArgs a;
  a.s0 = beta;
  a.s1 = threshold;
  kernel<OpId::softplus>(x.device().type, "softplus")(iter, a);
  return std::move(iter.result);
}
Tensor Tensor::softplus(const Scalar& beta, const Scalar& threshold) const { return brisk::softplus(*this, beta, threshold); }

}  // namespace brisk
