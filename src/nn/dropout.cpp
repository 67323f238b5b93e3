// The dropout variants of include/brisk/nn/dropout.h, composed of
// differentiable ops: the mask is drawn without gradient and multiplied in.
#include "brisk/nn/dropout.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "brisk/autograd.h"
#include "brisk/ops.h"

namespace brisk::nn {

namespace functional {

namespace {

/// x * noise (+ b for alpha dropout); noise of shape (N, C, 1, ...) when
/// `feature`, else of x's shape.
Tensor dropout_impl(const char* op, const Tensor& x, const DropoutFuncOptions& o, bool feature, bool alpha) {
  BRISK_CHECK(x.defined(), op, "input must be defined");
  const double p = o.p();
  BRISK_CHECK(p >= 0.0 && p <= 1.0, op, "p must be in [0, 1], got ", p);
  BRISK_CHECK(is_floating_point(x.dtype()), op, "expected a floating-point input, got ", x.dtype());
  if (feature) BRISK_CHECK(x.dim() >= 2, op, "expected an input of at least 2 dims (N, C, *), got shape ", x.sizes());
  if (!o.training() || p == 0.0) return x;
  Tensor y;
  if (p == 1.0) {
    y = x * zeros_like(x);
  } else {
    Tensor noise;
    {
      NoGradGuard no_grad;
      std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
      if (feature)
        for (size_t d = 2; d < shape.size(); ++d) shape[d] = 1;
      noise = bernoulli(full(shape, 1.0 - p, TensorOptions(x.dtype()).device(x.device())));
    }
    if (!alpha) {
      y = x * (noise / (1.0 - p));
    } else {
      constexpr double kAlpha = 1.7580993408473766;  // SELU's scale * alpha
      const double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1.0) * (1.0 - p));
      Tensor b;
      {
        NoGradGuard no_grad;
        b = (noise - 1.0) * (kAlpha * a) + kAlpha * a * p;
      }
      y = x * (noise * a) + b;
    }
  }
  if (!o.inplace()) return y;
  Tensor out = x;
  out.copy_(y);
  return out;
}

Tensor batched_feature(const char* op, const Tensor& x, const DropoutFuncOptions& o, int64_t spatial) {
  BRISK_CHECK(x.defined() && (x.dim() == spatial + 1 || x.dim() == spatial + 2), op, "expected a ", spatial + 1,
              "-D (unbatched) or ", spatial + 2, "-D (batched) input, got shape ",
              x.defined() ? x.sizes() : IntArrayRef{});
  if (x.dim() == spatial + 2) return dropout_impl(op, x, o, true, false);
  if (o.inplace()) {  // the unsqueezed view shares x's storage
    Tensor v = x.unsqueeze(0);
    dropout_impl(op, v, o, true, false);
    return x;
  }
  return dropout_impl(op, x.unsqueeze(0), o, true, false).squeeze(0);
}

}  // namespace

Tensor dropout(const Tensor& x, const DropoutFuncOptions& o) { return dropout_impl("dropout", x, o, false, false); }
Tensor dropout1d(const Tensor& x, const Dropout1dFuncOptions& o) { return batched_feature("dropout1d", x, o, 1); }
Tensor dropout2d(const Tensor& x, const Dropout2dFuncOptions& o) {
  BRISK_CHECK(x.defined() && (x.dim() == 3 || x.dim() == 4), "dropout2d",
              "expected a 3-D (N, C, L) or 4-D (N, C, H, W) input, got shape ",
              x.defined() ? x.sizes() : IntArrayRef{});
  return dropout_impl("dropout2d", x, o, true, false);
}
Tensor dropout3d(const Tensor& x, const Dropout3dFuncOptions& o) { return batched_feature("dropout3d", x, o, 3); }
Tensor alpha_dropout(const Tensor& x, const AlphaDropoutFuncOptions& o) {
  return dropout_impl("alpha_dropout", x, o, false, true);
}
Tensor feature_alpha_dropout(const Tensor& x, const FeatureAlphaDropoutFuncOptions& o) {
  return dropout_impl("feature_alpha_dropout", x, o, true, true);
}

}  // namespace functional

namespace modules_detail {

DropoutVariantImpl::DropoutVariantImpl(const char* type_name, int kind, const DropoutOptions& o)
    : Module(type_name), options(o), kind_(kind) {
  BRISK_CHECK(o.p() >= 0.0 && o.p() <= 1.0, type_name, "p must be in [0, 1], got ", o.p());
}
Tensor DropoutVariantImpl::forward(const Tensor& x) {
  const auto f = F::DropoutFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace());
  switch (kind_) {
    case 1: return F::dropout1d(x, f);
    case 2: return F::dropout2d(x, f);
    case 3: return F::dropout3d(x, f);
    case 4: return F::alpha_dropout(x, f);
    default: return F::feature_alpha_dropout(x, f);
  }
}
std::string DropoutVariantImpl::extra_repr() const {
  std::ostringstream os;
  os << "p=" << options.p() << ", inplace=" << (options.inplace() ? "true" : "false");
  return os.str();
}

}  // namespace modules_detail

}  // namespace brisk::nn
