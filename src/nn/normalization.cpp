// batch_norm and group_norm front ends: checks, memory layouts, running
// statistics bookkeeping and autograd recording; the loops are kernels of
// the dispatch table (src/backend/cpu/kernels/norm_channels.cpp, CUDA:
// src/backend/cuda/normalization.cu). BatchNorm1d/2d/3d, GroupNorm and
// RMSNorm modules. See docs/design/pooling_norm.md.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>
#include <vector>

#include "core/autocast.h"
#include "brisk/autograd.h"
#include "brisk/nn/normalization.h"
#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/dispatch.h"
#include "core/tensor_create.h"
#include "nn/norm_dtypes.h"
#include "profiler/record.h"

namespace brisk::nn {

namespace {

// ==== layout ===========================================================================

using NormLayout = NormView;  // Note [Normalization layouts] (src/backend/cpu/kernels/norm_channels.cpp)

/// An input as the kernels read it: its memory (a contiguous copy only for
/// inputs that are neither contiguous nor channels_last) and whether the
/// outputs are channels_last.
struct Prepared {
  Tensor x;
  bool cl;           // 4-D channels_last input: outputs and gradients channels_last too
  bool interleaved;  // Note [Normalization layouts]
  int64_t N, C, S;
};

Prepared prepare(const Tensor& x) {
  Prepared p;
  p.N = x.size(0);
  p.C = x.size(1);
  p.S = 1;
  for (int64_t d = 2; d < x.dim(); ++d) p.S *= x.size(d);
  p.cl = x.dim() == 4 && !x.is_contiguous() && x.is_contiguous(kChannelsLast);
  p.x = p.cl ? x : x.contiguous();
  p.interleaved = p.cl || p.S == 1;
  return p;
}

/// Another tensor of the same shape (a gradient) in p's memory layout.
Tensor same_layout(const Tensor& t, const Prepared& p) { return p.cl ? t.contiguous(kChannelsLast) : t.contiguous(); }

Tensor alloc_like(const Prepared& p, IntArrayRef sizes, ScalarType dt) {
  if (!p.cl) return detail::make_tensor(sizes, {}, dt, p.x.device());
  const DimVector st = detail::channels_last_strides(sizes);
  return detail::make_tensor(sizes, st, dt, p.x.device());
}

/// batch_norm: one block of N*S rows when interleaved, N blocks otherwise.
NormLayout bn_layout(const Prepared& p) {
  return p.interleaved ? NormLayout{1, p.C, p.N * p.S, true} : NormLayout{p.N, p.C, p.S, false};
}
/// group_norm: one block per sample.
NormLayout gn_layout(const Prepared& p) { return NormLayout{p.N, p.C, p.S, p.interleaved}; }

// ==== checks ===============================================================================

void check_channel_vec(const char* op, const char* what, const Tensor& t, const Tensor& input) {
  if (!t.defined()) return;
  BRISK_CHECK(t.is_floating_point(), op, "expected a floating point ", what, ", got ", t.dtype());
  BRISK_CHECK(t.device() == input.device(), op, what, " is on ", t.device(), " but the input is on ", input.device());
  BRISK_CHECK(t.dim() == 1 && t.size(0) == input.size(1), op, "expected ", what, " of shape [", input.size(1),
              "] (the channels of input of shape ", input.sizes(), "), got ", t.sizes());
}

void check_norm_input(const char* op, const Tensor& x) {
  BRISK_CHECK(x.defined(), op, "input is undefined");
  BRISK_CHECK(x.is_floating_point(), op, "expected a floating point input, got ", x.dtype());
  BRISK_CHECK(x.dim() >= 2, op, "expected an input of shape (N, C, *), got ", x.sizes());
}

// ==== batch_norm ===========================================================================

/// What the backward needs besides x, weight and the gradient.
struct BnSaved {
  Tensor mean_t, invstd_t;           // the statistics used (batch or running), float64 (C) on x's device
  ScalarType weight_dtype, bias_dtype;  // of the parameter gradients (the input's when a parameter is absent)
  bool training;
  double eps;
};

/// A (C) parameter gradient on x's device, or undefined when not needed.
Tensor param_grad(bool need, ScalarType dtype, const Tensor& x, int64_t C) {
  if (!need) return Tensor();
  return empty({C}, TensorOptions(dtype).device(x.device()));
}

/// A composite backward for 16-bit inputs runs in float32 (as the kernels'
/// sums do): its terms of size ~rstd cancel, and in 16 bits the second
/// derivatives came out as rounding noise. Gradients go back in the
/// dtypes of x, weight and bias.
template <class Fn>
TensorList in_float_for_16_bit(const Tensor& g, const Tensor& x, const Tensor& w, ScalarType wdt, ScalarType bdt,
                               const Fn& fn) {
  if (!is_reduced_float(x.dtype())) return fn(g, x, w);
  TensorList r = fn(g.to(kFloat), x.to(kFloat), w.defined() ? w.to(kFloat) : w);
  return {r[0].to(x.dtype()), r[1].to(wdt), r[2].to(bdt)};
}

/// Composite backward from brisk ops (differentiable: used under create_graph).
TensorList bn_backward_composite(const Tensor& g, const Tensor& x, const Tensor& w, const BnSaved& s) {
  const int64_t C = x.size(1);
  std::vector<int64_t> dims{0}, cshape(static_cast<size_t>(x.dim()), 1);
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  cshape[1] = C;
  Tensor mu, inv;
  if (s.training) {
    mu = x.mean(dims, true);
    inv = (x.var(dims, 0, true) + s.eps).rsqrt();
  } else {
    mu = s.mean_t.to(x.dtype()).view(cshape);
    inv = s.invstd_t.to(x.dtype()).view(cshape);
  }
  const Tensor xhat = (x - mu) * inv;
  const Tensor gw = w.defined() ? g * w.view(cshape) : g;
  Tensor dx;
  if (s.training)
    dx = inv * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true));
  else
    dx = gw * inv;
  return {dx, (g * xhat).sum(dims), g.sum(dims)};
}

TensorList bn_backward(const Tensor& g, const Tensor& x, const Tensor& w, const BnSaved& s, bool need_dx,
                       bool need_dw, bool need_db) {
  const Prepared p = prepare(x);
  const NormLayout L = bn_layout(p);
  const Tensor gin = same_layout(g, p);
  const int64_t C = p.C;
  Tensor dx = need_dx ? alloc_like(p, x.sizes(), x.dtype()) : Tensor();
  Tensor dw = param_grad(need_dw, s.weight_dtype, x, C), db = param_grad(need_db, s.bias_dtype, x, C);
  kernel<OpId::batch_norm_backward>(x.device().type, "batch_norm_backward")(gin, p.x, L, w, s.mean_t, s.invstd_t,
                                                                            s.training, dx, dw, db);
  return {dx, dw, db};
}

}  // namespace

namespace functional {

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, std::optional<double> momentum, double eps) {
  const char* op = "batch_norm";
  BRISK_PROFILE_OP(op, input, running_mean, running_var, weight, bias);
  check_norm_input(op, input);
  check_channel_vec(op, "weight", weight, input);
  check_channel_vec(op, "bias", bias, input);
  check_channel_vec(op, "running_mean", running_mean, input);
  check_channel_vec(op, "running_var", running_var, input);
  detail::check_norm_param_dtypes(
      op, input, {{"weight", weight}, {"bias", bias}, {"running_mean", running_mean}, {"running_var", running_var}});
  BRISK_CHECK(running_mean.defined() == running_var.defined(), op,
              "running_mean and running_var must both be given or both be undefined");
  BRISK_CHECK(training || running_mean.defined(), op,
              "running_mean and running_var are required in eval mode (training=false)");
  const bool update = training && running_mean.defined();
  BRISK_CHECK(!update || momentum, op,
              "momentum=nullopt (cumulative moving average) needs the number of batches seen: use nn::BatchNorm1d/2d/3d, "
              "which keep num_batches_tracked, or pass a momentum");
  const int64_t C = input.size(1);
  const int64_t per_channel = C > 0 ? input.numel() / C : 0;
  BRISK_CHECK(!training || per_channel != 1, op, "expected more than 1 value per channel when training, got input of shape ",
              input.sizes());
  if (update) {
    autograd::check_inplace(running_mean, op);
    autograd::check_inplace(running_var, op);
  }

  const bool rec = autograd::should_record(input, weight, bias);
  Tensor y;
  BnSaved s;
  s.weight_dtype = weight.defined() ? weight.dtype() : input.dtype();
  s.bias_dtype = bias.defined() ? bias.dtype() : input.dtype();
  s.training = training;
  s.eps = eps;
  {
    NoGradGuard ng;
    const Prepared p = prepare(input);
    const NormLayout L = bn_layout(p);
    y = alloc_like(p, input.sizes(), input.dtype());
    std::tie(s.mean_t, s.invstd_t) = kernel<OpId::batch_norm>(input.device().type, op)(
        p.x, y, L, weight, bias, running_mean, running_var, training, update, momentum.value_or(0.0), eps);
    if (update && input.numel() != 0) {
      running_mean.bump_version();
      running_var.bump_version();
    }
  }
  if (rec)
    autograd::record("NativeBatchNormBackward0", {y}, {input, weight, bias},
                     {autograd::save(input), autograd::save(weight)},
                     [s = std::move(s)](autograd::BackwardCtx& c) -> TensorList {
                       const Tensor x = c.saved(0), w = c.saved(1);
                       if (GradMode::is_enabled())
                         return in_float_for_16_bit(c.grad(), x, w, s.weight_dtype, s.bias_dtype,
                                                    [&](const Tensor& g, const Tensor& xf, const Tensor& wf) {
                                                      return bn_backward_composite(g, xf, wf, s);
                                                    });
                       return bn_backward(c.grad(), x, w, s, c.needs(0), c.needs(1), c.needs(2));
                     });
  return y;
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o) {
  return batch_norm(input, running_mean, running_var, o.weight(), o.bias(), o.training(), o.momentum(), o.eps());
}

}  // namespace functional

// ==== group_norm ===========================================================================

namespace {

struct GnSaved {
  Tensor mean_t, rstd_t;           // per (n, group), float64 (N * G) on x's device
  ScalarType weight_dtype, bias_dtype;  // of the parameter gradients (the input's when a parameter is absent)
  int64_t G;
  double eps;
};

TensorList gn_backward_composite(const Tensor& g, const Tensor& x, const Tensor& w, const GnSaved& s) {
  const int64_t N = x.size(0), C = x.size(1);
  std::vector<int64_t> cshape(static_cast<size_t>(x.dim()), 1), sum_dims{0};
  cshape[1] = C;
  for (int64_t d = 2; d < x.dim(); ++d) sum_dims.push_back(d);
  const Tensor xg = x.reshape({N, s.G, -1});
  const Tensor mu = xg.mean(-1, true);
  const Tensor var = xg.var(-1, 0, true);
  const Tensor inv = where(var.isinf(), std::numeric_limits<double>::quiet_NaN(), (var + s.eps).rsqrt());  // as the forward
  const Tensor xhat_g = (xg - mu) * inv;
  const Tensor xhat = xhat_g.reshape(x.sizes());
  const Tensor gw = (w.defined() ? g * w.view(cshape) : g).reshape({N, s.G, -1});
  const Tensor dx = (inv * (gw - gw.mean(-1, true) - xhat_g * (gw * xhat_g).mean(-1, true))).reshape(x.sizes());
  return {dx, (g * xhat).sum(sum_dims), g.sum(sum_dims)};
}

TensorList gn_backward(const Tensor& g, const Tensor& x, const Tensor& w, const GnSaved& s, bool need_dx,
                       bool need_dw, bool need_db) {
  const Prepared p = prepare(x);
  const NormLayout L = gn_layout(p);
  const Tensor gin = same_layout(g, p);
  const int64_t C = p.C;
  Tensor dx = need_dx ? alloc_like(p, x.sizes(), x.dtype()) : Tensor();
  Tensor dw = param_grad(need_dw, s.weight_dtype, x, C), db = param_grad(need_db, s.bias_dtype, x, C);
  kernel<OpId::group_norm_backward>(x.device().type, "group_norm_backward")(gin, p.x, L, s.G, w, s.mean_t, s.rstd_t,
                                                                            dx, dw, db);
  return {dx, dw, db};
}

}  // namespace

namespace functional {

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  BRISK_AUTOCAST(group_norm, group_norm, input, num_groups, weight, bias, eps);
  BRISK_PROFILE_OP("group_norm", input, weight, bias);
  const char* op = "group_norm";
  check_norm_input(op, input);
  const int64_t N = input.size(0), C = input.size(1), G = num_groups;
  BRISK_CHECK(G > 0, op, "num_groups must be positive, got ", G);
  // PyTorch's checks, in its order: statistics of a single value (as
  // batch_norm's training check, on the input seen as (N * C / G, G, *)),
  // no channels, no spatial positions.
  {
    std::vector<int64_t> seen{N * C / G, G};
    int64_t values = N * C / G;
    for (int64_t d = 2; d < input.dim(); ++d) {
      seen.push_back(input.size(d));
      values *= input.size(d);
    }
    BRISK_CHECK(values != 1, op, "Expected more than 1 value per channel when training, got input size ",
                IntArrayRef(seen));
  }
  BRISK_CHECK(C > 0, op, "Expected number of channels to be greater than 0, got ", C);
  {
    int64_t hxw = 1;
    for (int64_t d = 2; d < input.dim(); ++d) hxw *= input.size(d);
    BRISK_CHECK(hxw > 0, op, "Expected HxW to be greater than 0, got ", hxw);
  }
  BRISK_CHECK(C % G == 0, op, "the number of channels ", C, " of input of shape ", input.sizes(),
              " is not divisible by num_groups ", G);
  check_channel_vec(op, "weight", weight, input);
  check_channel_vec(op, "bias", bias, input);
  detail::check_norm_param_dtypes(op, input, {{"weight", weight}, {"bias", bias}});

  const bool rec = autograd::should_record(input, weight, bias);
  Tensor y;
  GnSaved s;
  s.weight_dtype = weight.defined() ? weight.dtype() : input.dtype();
  s.bias_dtype = bias.defined() ? bias.dtype() : input.dtype();
  s.G = G;
  s.eps = eps;
  {
    NoGradGuard ng;
    const Prepared p = prepare(input);
    const NormLayout L = gn_layout(p);
    y = alloc_like(p, input.sizes(), input.dtype());
    std::tie(s.mean_t, s.rstd_t) = kernel<OpId::group_norm>(input.device().type, op)(p.x, y, L, G, weight, bias, eps);
  }
  if (rec)
    autograd::record("NativeGroupNormBackward0", {y}, {input, weight, bias},
                     {autograd::save(input), autograd::save(weight)},
                     [s = std::move(s)](autograd::BackwardCtx& c) -> TensorList {
                       const Tensor x = c.saved(0), w = c.saved(1);
                       if (GradMode::is_enabled())
                         return in_float_for_16_bit(c.grad(), x, w, s.weight_dtype, s.bias_dtype,
                                                    [&](const Tensor& g, const Tensor& xf, const Tensor& wf) {
                                                      return gn_backward_composite(g, xf, wf, s);
                                                    });
                       return gn_backward(c.grad(), x, w, s, c.needs(0), c.needs(1), c.needs(2));
                     });
  return y;
}

Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o) {
  return group_norm(input, o.num_groups(), o.weight(), o.bias(), o.eps());
}

}  // namespace functional

// ==== modules ===============================================================================

namespace {
const char* bool_str(bool b) { return b ? "true" : "false"; }
}  // namespace

BatchNormBase::BatchNormBase(std::string type_name, const BatchNormOptions& o, TensorOptions opts)
    : Module(type_name), options(o) {
  const int64_t C = o.num_features();
  BRISK_CHECK(C > 0, type_name.c_str(), "num_features must be positive, got ", C);
  if (o.affine()) {
    weight = register_parameter("weight", empty({C}, opts));
    bias = register_parameter("bias", empty({C}, opts));
  }
  if (o.track_running_stats()) {
    running_mean = register_buffer("running_mean", empty({C}, opts));
    running_var = register_buffer("running_var", empty({C}, opts));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, TensorOptions(kInt64).device(opts.device_)));
  }
  reset_parameters();
}

void BatchNormBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard ng;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNormBase::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  NoGradGuard ng;
  weight.fill_(1);
  bias.zero_();
}

Tensor BatchNormBase::forward(const Tensor& x) {
  check_input_dim(x);
  BRISK_CHECK(x.size(1) == options.num_features(), name().c_str(), "expected input with ", options.num_features(),
              " channels (num_features), got input of shape ", x.sizes());
  std::optional<double> momentum = options.momentum();
  if (is_training() && options.track_running_stats()) {
    NoGradGuard ng;
    num_batches_tracked.add_(1);
    if (!momentum) momentum = 1.0 / double(num_batches_tracked.item<int64_t>());
  }
  // Batch statistics in training, and in eval when no running stats are kept.
  const bool use_batch_stats = is_training() || !running_mean.defined();
  return F::batch_norm(x, running_mean, running_var, weight, bias, use_batch_stats, momentum.value_or(0.0),
                       options.eps());
}

std::string BatchNormBase::extra_repr() const {
  std::ostringstream os;
  os << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum())
    os << *options.momentum();
  else
    os << "None";
  os << ", affine=" << bool_str(options.affine())
     << ", track_running_stats=" << bool_str(options.track_running_stats());
  return os.str();
}

BatchNorm1dImpl::BatchNorm1dImpl(const BatchNormOptions& o, TensorOptions opts) : BatchNormBase("BatchNorm1d", o, opts) {}
void BatchNorm1dImpl::check_input_dim(const Tensor& x) const {
  BRISK_CHECK(x.defined(), "BatchNorm1d", "input is undefined");
  BRISK_CHECK(x.dim() == 2 || x.dim() == 3, "BatchNorm1d", "expected 2D (N, C) or 3D (N, C, L) input, got ", x.dim(),
              "D input of shape ", x.sizes());
}

BatchNorm2dImpl::BatchNorm2dImpl(const BatchNormOptions& o, TensorOptions opts) : BatchNormBase("BatchNorm2d", o, opts) {}
void BatchNorm2dImpl::check_input_dim(const Tensor& x) const {
  BRISK_CHECK(x.defined(), "BatchNorm2d", "input is undefined");
  BRISK_CHECK(x.dim() == 4, "BatchNorm2d", "expected 4D (N, C, H, W) input, got ", x.dim(), "D input of shape ",
              x.sizes());
}

BatchNorm3dImpl::BatchNorm3dImpl(const BatchNormOptions& o, TensorOptions opts) : BatchNormBase("BatchNorm3d", o, opts) {}
void BatchNorm3dImpl::check_input_dim(const Tensor& x) const {
  BRISK_CHECK(x.defined(), "BatchNorm3d", "input is undefined");
  BRISK_CHECK(x.dim() == 5, "BatchNorm3d", "expected 5D (N, C, D, H, W) input, got ", x.dim(), "D input of shape ",
              x.sizes());
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& o, TensorOptions opts) : Module("GroupNorm"), options(o) {
  BRISK_CHECK(o.num_groups() > 0, "GroupNorm", "num_groups must be positive, got ", o.num_groups());
  BRISK_CHECK(o.num_channels() % o.num_groups() == 0, "GroupNorm", "num_channels ", o.num_channels(),
              " must be divisible by num_groups ", o.num_groups());
  if (o.affine()) {
    weight = register_parameter("weight", empty({o.num_channels()}, opts));
    bias = register_parameter("bias", empty({o.num_channels()}, opts));
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (!options.affine()) return;
  NoGradGuard ng;
  weight.fill_(1);
  bias.zero_();
}

Tensor GroupNormImpl::forward(const Tensor& x) {
  BRISK_CHECK(x.defined(), "GroupNorm", "input is undefined");
  BRISK_CHECK(x.dim() >= 2 && x.size(1) == options.num_channels(), "GroupNorm", "expected input of shape (N, ",
              options.num_channels(), ", *), got ", x.sizes());
  return F::group_norm(x, options.num_groups(), weight, bias, options.eps());
}

RMSNormImpl::RMSNormImpl(std::vector<int64_t> shape, std::optional<double> e, bool affine, TensorOptions opts)
    : Module("RMSNorm"), normalized_shape(std::move(shape)), eps(e), elementwise_affine(affine) {
  for (int64_t s : normalized_shape)
    BRISK_CHECK(s >= 0, "RMSNorm", "normalized_shape must be non-negative, got ", IntArrayRef(normalized_shape));
  BRISK_CHECK(!normalized_shape.empty(), "RMSNorm", "normalized_shape must not be empty");
  if (affine) weight = register_parameter("weight", ones(normalized_shape, opts));
}

void RMSNormImpl::reset_parameters() {
  if (!elementwise_affine) return;
  NoGradGuard ng;
  weight.fill_(1);
}

Tensor RMSNormImpl::forward(const Tensor& x) { return F::rms_norm(x, normalized_shape, weight, eps); }

std::string RMSNormImpl::extra_repr() const {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < normalized_shape.size(); ++i) os << (i ? ", " : "") << normalized_shape[i];
  os << (normalized_shape.size() == 1 ? ",)" : ")") << ", eps=";
  if (eps)
    os << *eps;
  else
    os << "None";
  os << ", elementwise_affine=" << bool_str(elementwise_affine);
  return os.str();
}

std::string GroupNormImpl::extra_repr() const {
  std::ostringstream os;
  os << options.num_groups() << ", " << options.num_channels() << ", eps=" << options.eps()
     << ", affine=" << bool_str(options.affine());
  return os.str();
}

}  // namespace brisk::nn

// ---- instance normalization, local response normalization --------------------------------
// Both composed of differentiable ops (autograd gives the gradients).

namespace brisk::nn {

namespace functional {

Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& o) {
  const char* op = "instance_norm";
  BRISK_CHECK(input.defined(), op, "input must be defined");
  BRISK_CHECK(input.dim() >= 3, op, "expected an (N, C, *) input of at least 3 dims, got shape ", input.sizes());
  const int64_t n = input.size(0), c = input.size(1);
  const Tensor& rm = o.running_mean();
  const Tensor& rv = o.running_var();
  BRISK_CHECK(rm.defined() == rv.defined(), op, "running_mean and running_var must both be given or both not");
  BRISK_CHECK(o.use_input_stats() || rm.defined(), op, "expected running_mean and running_var when use_input_stats is false");
  for (const Tensor* t : {&rm, &rv, &o.weight(), &o.bias()})
    if (t->defined())
      BRISK_CHECK(t->dim() == 1 && t->size(0) == c, op, "expected per-channel tensors of shape [", c, "], got ",
                  t->sizes());
  detail::check_norm_param_dtypes(
      op, input, {{"weight", o.weight()}, {"bias", o.bias()}, {"running_mean", rm}, {"running_var", rv}});
  // (N, C, *) as (1, N * C, *): batch normalization of each instance
  std::vector<int64_t> shape{1, n * c};
  for (int64_t d = 2; d < input.dim(); ++d) shape.push_back(input.size(d));
  const Tensor x = input.reshape(shape);
  Tensor rm_rep, rv_rep;
  if (rm.defined()) {
    NoGradGuard no_grad;
    rm_rep = rm.repeat({n});
    rv_rep = rv.repeat({n});
  }
  const Tensor w = o.weight().defined() ? o.weight().repeat({n}) : Tensor();
  const Tensor b = o.bias().defined() ? o.bias().repeat({n}) : Tensor();
  Tensor y = batch_norm(x, rm_rep, rv_rep, w, b, o.use_input_stats(), o.momentum(), o.eps());
  if (rm.defined() && o.use_input_stats()) {
    NoGradGuard no_grad;
    Tensor rm_out = rm, rv_out = rv;  // handles to the caller's buffers
    rm_out.copy_(rm_rep.view({n, c}).mean({0}));
    rv_out.copy_(rv_rep.view({n, c}).mean({0}));
  }
  return y.view(input.sizes());
}

Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& o) {
  const char* op = "local_response_norm";
  BRISK_CHECK(input.defined() && input.dim() >= 3, op, "expected an (N, C, *) input of at least 3 dims, got shape ",
              input.defined() ? input.sizes() : IntArrayRef{});
  // PyTorch returns an empty input itself, any dtype and size (fuzzer seed
  // 607: size 0); it averages integers with a truncating avg_pool2d (3-D) or
  // has no kernel (4-D and more): brisk refuses integer and bool inputs
  // rather than compute either.
  if (input.numel() == 0) return input;
  BRISK_CHECK(o.size() > 0, op, "size must be positive, got ", o.size());
  BRISK_CHECK(is_floating_point(input.dtype()), op, "expected a floating-point input, got ", input.dtype());
  const int64_t c = input.size(1), size = o.size();
  // the sum of squares over channels [i - size / 2, i + (size - 1) / 2], zero padded
  const Tensor sq = input * input;
  std::vector<int64_t> pad(2 * (input.dim() - 2), 0);
  pad.push_back(size / 2);
  pad.push_back((size - 1) / 2);
  const Tensor padded = brisk::pad(sq, pad);
  Tensor sum = padded.narrow(1, 0, c);
  for (int64_t j = 1; j < size; ++j) sum = sum + padded.narrow(1, j, c);
  const Tensor div = (sum * (o.alpha() / double(size)) + o.k()).pow(o.beta());
  return input / div;
}
Tensor local_response_norm(const Tensor& input, int64_t size, double alpha, double beta, double k) {
  return local_response_norm(input, LocalResponseNormFuncOptions(size).alpha(alpha).beta(beta).k(k));
}

Tensor normalize(const Tensor& input, const NormalizeFuncOptions& o) {
  const char* op = "normalize";
  BRISK_CHECK(input.defined(), op, "input must be defined");
  BRISK_CHECK(input.is_floating_point(), op, "expected a floating-point input, got ", input.dtype());
  const int64_t dim = brisk::detail::wrap_dim(o.dim(), input.dim(), op);
  // PyTorch's grouping: input / norm(keepdim).clamp_min(eps), each an op in
  // the input's dtype (a 16-bit zero vector gives 0 / eps-rounded-to-0 = NaN
  // there too)
  return input / brisk::norm(input, o.p(), {dim}, true).clamp_min(o.eps());
}

}  // namespace functional

InstanceNormBase::InstanceNormBase(std::string type_name, int64_t spatial_dims, const InstanceNormOptions& o,
                                   TensorOptions opts)
    : Module(type_name), options(o), spatial_dims_(spatial_dims) {
  const int64_t C = o.num_features();
  BRISK_CHECK(C > 0, type_name.c_str(), "num_features must be positive, got ", C);
  if (o.affine()) {
    weight = register_parameter("weight", empty({C}, opts));
    bias = register_parameter("bias", empty({C}, opts));
  }
  if (o.track_running_stats()) {
    running_mean = register_buffer("running_mean", empty({C}, opts));
    running_var = register_buffer("running_var", empty({C}, opts));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, TensorOptions(kInt64).device(opts.device_)));
  }
  reset_parameters();
}
void InstanceNormBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}
void InstanceNormBase::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  NoGradGuard no_grad;
  weight.fill_(1);
  bias.zero_();
}
Tensor InstanceNormBase::forward(const Tensor& x) {
  const std::string& nm = name();
  BRISK_CHECK(x.defined() && (x.dim() == spatial_dims_ + 1 || x.dim() == spatial_dims_ + 2), nm.c_str(),
              "expected a ", spatial_dims_ + 1, "-D (unbatched) or ", spatial_dims_ + 2, "-D (batched) input, got shape ",
              x.defined() ? x.sizes() : IntArrayRef{});
  const bool batched = x.dim() == spatial_dims_ + 2;
  const Tensor xb = batched ? x : x.unsqueeze(0);
  // PyTorch: a channel count other than num_features is an error only when
  // affine (the statistics are per instance and need no count)
  if (options.affine() || options.track_running_stats())
    BRISK_CHECK(xb.size(1) == options.num_features(), nm.c_str(), "expected input with ", options.num_features(),
                " channels, got ", xb.size(1), " (shape ", x.sizes(), ")");
  const bool use_input_stats = is_training() || !options.track_running_stats();
  if (options.track_running_stats() && is_training()) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  Tensor y = F::instance_norm(xb, F::InstanceNormFuncOptions()
                                      .running_mean(running_mean)
                                      .running_var(running_var)
                                      .weight(weight)
                                      .bias(bias)
                                      .use_input_stats(use_input_stats)
                                      .momentum(options.momentum())
                                      .eps(options.eps()));
  return batched ? y : y.squeeze(0);
}
std::string InstanceNormBase::extra_repr() const {
  std::ostringstream os;
  os << options.num_features() << ", eps=" << options.eps() << ", momentum=" << options.momentum()
     << ", affine=" << bool_str(options.affine())
     << ", track_running_stats=" << bool_str(options.track_running_stats());
  return os.str();
}

LocalResponseNormImpl::LocalResponseNormImpl(const LocalResponseNormOptions& o) : Module("LocalResponseNorm"), options(o) {
  BRISK_CHECK(o.size() > 0, "LocalResponseNorm", "size must be positive, got ", o.size());
}
Tensor LocalResponseNormImpl::forward(const Tensor& x) { return F::local_response_norm(x, options); }
std::string LocalResponseNormImpl::extra_repr() const {
  std::ostringstream os;
  os << options.size() << ", alpha=" << options.alpha() << ", beta=" << options.beta() << ", k=" << options.k();
  return os.str();
}

// libtorch's CrossMapLRN2d sums x^2 over channels with a running sum:
// scale[0] = sum of the first min(pre_pad, C) channels, then scale[c] =
// scale[c - 1] + sq[c + pre_pad - 1] (while c < C - pre_pad + 1)
// - sq[c - pre_pad] (when c > pre_pad), pre_pad = (size - 1) / 2 + 1. The
// recurrence is replayed here as a 0/1 matrix over the channels (which
// reproduces its windows exactly) applied with a matmul, so autograd gives
// the gradient.
CrossMapLRN2dImpl::CrossMapLRN2dImpl(const CrossMapLRN2dOptions& o) : Module("CrossMapLRN2d"), options(o) {
  BRISK_CHECK(o.size() > 0, "CrossMapLRN2d", "size must be positive, got ", o.size());
}
Tensor CrossMapLRN2dImpl::forward(const Tensor& x) {
  BRISK_CHECK(x.defined() && x.dim() == 4, "CrossMapLRN2d", "expected a 4-D (N, C, H, W) input, got shape ",
              x.defined() ? x.sizes() : IntArrayRef{});
  const int64_t c = x.size(1), pre_pad = (options.size() - 1) / 2 + 1;
  std::vector<double> m(static_cast<size_t>(c * c), 0.0);
  for (int64_t j = 0; j < std::min(pre_pad, c); ++j) m[size_t(j)] = 1.0;
  for (int64_t i = 1; i < c; ++i) {
    for (int64_t j = 0; j < c; ++j) m[size_t(i * c + j)] = m[size_t((i - 1) * c + j)];
    if (i < c - pre_pad + 1) m[size_t(i * c + i + pre_pad - 1)] += 1.0;
    if (i > pre_pad) m[size_t(i * c + i - pre_pad)] -= 1.0;
  }
  const Tensor mat = tensor(m, {c, c}, TensorOptions(x.dtype()).device(x.device()));
  // (N, H, W, C) @ M^T -> per channel i: sum_j M[i, j] x_j^2
  const Tensor sq = (x * x).permute({0, 2, 3, 1});
  const Tensor scale = sq.matmul(mat.t()).permute({0, 3, 1, 2}) * (options.alpha() / double(options.size())) +
                       double(options.k());
  return x * scale.pow(-options.beta());
}
std::string CrossMapLRN2dImpl::extra_repr() const {
  std::ostringstream os;
  os << options.size() << ", alpha=" << options.alpha() << ", beta=" << options.beta() << ", k=" << options.k();
  return os.str();
}

}  // namespace brisk::nn
