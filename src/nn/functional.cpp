// nn::functional: layers and losses as compositions of brisk ops. Autograd
// differentiates them; each is written to stay finite where PyTorch's fused
// kernels do (log_softmax for cross entropy, softplus for logits).
#include <cmath>
#include <limits>
#include <sstream>

#include "core/autocast.h"
#include "core/round_to.h"
#include "brisk/autograd.h"
#include "autograd/function.h"
#include "core/dispatch.h"
#include "core/trace_hooks.h"
#include "nn/norm_dtypes.h"
#include "brisk/nn/functional.h"
#include "brisk/ops.h"
#include "profiler/record.h"

namespace brisk::detail {
/// mse_loss's gradient from the saved difference (src/ops/unary.cpp).
Tensor mse_grad(const Tensor& g, const Tensor& d, double norm, bool of_target);
}  // namespace brisk::detail

namespace brisk::nn::functional {

namespace {

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

void check_floating(const char* op, const char* what, const Tensor& t) {
  BRISK_CHECK(t.defined(), op, what, " is undefined");
  BRISK_CHECK(t.is_floating_point(), op, "expected a floating point ", what, ", got ", t.dtype());
}

/// PyTorch's fused losses have no derivative for their class/element
/// weights: a weight that requires grad is refused (in grad mode) instead of
/// getting a gradient PyTorch would not compute.
void check_weight_without_grad(const char* op, const char* what, const Tensor& w) {
  BRISK_CHECK(!(w.defined() && w.requires_grad() && GradMode::is_enabled()), op, "is not differentiable with respect "
              "to ", what, ", which requires grad: pass ", what, ".detach() (or compute the loss under NoGradGuard)");
}

/// `promoted`: an integer input is fine when the target makes the computation
/// floating (mse/l1/smooth_l1 compute in the promoted dtype, as PyTorch's).
/// linear/bilinear run on the matrix products, which take integers too (not bool).
void check_numeric(const char* op, const char* what, const Tensor& t) {
  BRISK_CHECK(t.defined(), op, what, " is undefined");
  BRISK_CHECK(t.dtype() != kBool, op, "expected a floating point or integer ", what, ", got bool");
}

void check_same_shape(const char* op, const Tensor& input, const Tensor& target, bool promoted = false) {
  BRISK_CHECK(target.defined(), op, "target is undefined");
  if (promoted) {
    BRISK_CHECK(input.defined(), op, "input is undefined");
    BRISK_CHECK(is_floating_point(result_type(input, target)), op, "expected a floating point input or target, got ",
                input.dtype(), " and ", target.dtype());
  } else {
    check_floating(op, "input", input);
  }
  BRISK_CHECK(input.sizes() == target.sizes(), op, "input shape ", shape_str(input.sizes()), " and target shape ",
              shape_str(target.sizes()), " differ");
}

/// A bool operand of a loss computed in the promoted dtype, converted to it:
/// torch's mse/smooth_l1 kernels promote a bool operand where brisk's sub
/// (as torch's `-`) refuses one. (A bool never requires grad.)
Tensor unbool(const Tensor& t, const Tensor& other) {
  return t.dtype() == kBool ? t.to(result_type(t, other)) : t;
}

Tensor reduce(const char* op, const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::None: return loss;
    case Reduction::Mean: return loss.mean();
    case Reduction::Sum: return loss.sum();
    case Reduction::BatchMean: break;
  }
  BRISK_FAIL(op, "reduction 'batchmean' is only supported by kl_div");
}

/// Per-element negative log likelihood of `target` under log-probabilities
/// `logp` (N, C, d...), and the weight of each element (0 where ignored).
struct Picked {
  Tensor loss;  // (N, d...)
  Tensor w;     // (N, d...)
  Tensor valid; // (N, d...) bool
};

Picked pick_targets(const char* op, const Tensor& logp, const Tensor& target, const Tensor& weight,
                    int64_t ignore_index) {
  BRISK_CHECK(target.defined(), op, "target is undefined");
  // int64 or uint8 class indices, as in PyTorch (which refuses int32 too).
  BRISK_CHECK(target.dtype() == kInt64 || target.dtype() == kUInt8, op,
              "expected class indices of dtype int64 (or uint8), got ", target.dtype());
  BRISK_CHECK(logp.dim() >= 2, op, "expected an input of shape (N, C, ...) or (C), got ", shape_str(logp.sizes()));
  const int64_t C = logp.size(1);
  bool shapes_ok = target.dim() == logp.dim() - 1 && target.size(0) == logp.size(0);
  for (int64_t d = 1; shapes_ok && d < target.dim(); ++d) shapes_ok = target.size(d) == logp.size(d + 1);
  BRISK_CHECK(shapes_ok, op, "input shape ", shape_str(logp.sizes()), " does not match target shape ",
              shape_str(target.sizes()), " (expected target (N, d...) for input (N, C, d...))");
  if (weight.defined())
    BRISK_CHECK(weight.dim() == 1 && weight.size(0) == C && weight.is_floating_point(), op,
                "expected a floating point weight of shape [", C, "], got ", shape_str(weight.sizes()), " ",
                weight.dtype());
  check_weight_without_grad(op, "weight", weight);
  Tensor t = target.to(kInt64);
  Tensor valid = t.ne(ignore_index);
  Tensor safe = where(valid, t, Scalar(int64_t(0)));
  // On the CPU the range is checked here. On a GPU a host check would make
  // every loss a synchronising call: the gather below skips out-of-range
  // targets and the error is raised at the next sync instead (Note [Deferred
  // index errors], docs/design/cuda_index_random.md).
  // While compile traces, the host read would be a graph break: the
  // gather below checks the same range in its kernel, in the trace and in
  // every replay (naming gather), as embedding leaves its check to
  // index_select.
  if (safe.numel() > 0 && safe.is_cpu() && !(brisk::detail::tracing_any() && brisk::detail::tracing_this_thread())) {
    brisk::detail::DeviceCheckScope device_check;
    const int64_t hi = safe.max().item<int64_t>(), lo = safe.min().item<int64_t>();
    BRISK_CHECK(hi < C && lo >= 0, op, "target ", (hi >= C ? hi : lo), " is out of bounds for ", C, " classes");
  }
  Tensor picked = logp.gather(1, safe.unsqueeze(1)).squeeze(1);
  Tensor w = weight.defined() ? weight.to(logp.dtype()).index_select(0, safe.reshape({-1})).view(safe.sizes())
                              : ones_like(picked);
  w = where(valid, w, Scalar(0.0));
  // Ignored positions through where, not * 0: with every target ignored the
  // mean divides by a total weight of 0, and its inf gradient times 0 would
  // make NaN where PyTorch's gradient is 0.
  return {where(valid, picked.neg() * w, Scalar(0.0)), w, valid};
}

Tensor reduce_weighted(const char* op, const Tensor& loss, const Tensor& w, Reduction r) {
  if (r == Reduction::Mean) return loss.sum() / w.sum();
  return reduce(op, loss, r);
}

// Note [binary_cross_entropy's gradients]
// PyTorch's, not the composite's: the input gradient is
// g (x - t) / max(x (1 - x), 1e-12) and the target gradient -logit(x) g.
// The composite (clamped logs, each with a zero gradient where it clamps)
// gave (1 - t) g at x = 0 where torch gives -t g / 1e-12 (a sigmoid that
// saturates to 0 or 1 in float32 feeds exactly these), 100 g for the target
// where torch gives inf, and inf - inf = NaN for an infinite g. The input
// gradient is its own node so that its derivatives are PyTorch's
// binary_cross_entropy_double_backward{,_grad_output,_target} (which use
// x + eps and 1 - x + eps where the first derivative clamps).
constexpr double kBceEps = 1e-12;

Tensor bce_input_grad(const Tensor& g, const Tensor& x, const Tensor& t) {
  Tensor r;
  {
    NoGradGuard ng;
    r = g * (x - t) / ((1.0 - x) * x).clamp_min(kBceEps);
  }
  if (BRISK_UNLIKELY(autograd::should_record(g, x, t))) {
    using namespace autograd;
    record("BinaryCrossEntropyBackwardBackward0", {r}, {g, x, t}, {save(g), save(x), save(t)},
           [](BackwardCtx& c) -> TensorList {
             const Tensor g = c.saved(0), x = c.saved(1), t = c.saved(2), gg = c.grad();
             Tensor dg, dx, dt;
             if (c.needs(0)) dg = (x - t) / ((x + kBceEps) * (1.0 - x + kBceEps)) * gg;
             if (c.needs(1))
               dx = (x * x - 2.0 * x * t + t) / ((x + kBceEps).square() * (1.0 - x + kBceEps).square()) * (g * gg);
             if (c.needs(2)) dt = (gg * g).neg() / ((1.0 - x) * x).clamp_min(kBceEps);
             return {dg, dx, dt};
           });
  }
  return r;
}

}  // namespace

// ---- layers ----------------------------------------------------------------------

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  BRISK_AUTOCAST(linear, linear, x, weight, bias);
  BRISK_PROFILE_OP("linear", x, weight, bias);
  check_numeric("linear", "input", x);
  check_numeric("linear", "weight", weight);
  BRISK_CHECK(weight.dim() == 2, "linear", "expected a 2-D weight (out, in), got ", shape_str(weight.sizes()));
  BRISK_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear", "input shape ", shape_str(x.sizes()),
              " does not match weight shape ", shape_str(weight.sizes()), " (last dim ",
              x.dim() >= 1 ? x.size(-1) : 0, " vs in_features ", weight.size(1), ")");
  if (bias.defined())
    BRISK_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), "linear", "expected bias of shape [",
                weight.size(0), "], got ", shape_str(bias.sizes()));
  // Keeps the weight's (out, in) layout: its gradient is computed in that layout.
  if (x.dim() == 2 && bias.defined()) return addmm(bias, x, weight.t());
  // As torch: a contiguous input of more dims is flattened to rows for the
  // same addmm (in float16/bfloat16 the bias is then added before the one
  // rounding; matmul then + bias rounded twice)
  if (x.dim() > 2 && bias.defined() && x.is_contiguous() && x.size(-1) > 0) {
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = weight.size(0);
    return addmm(bias, x.reshape({-1, x.size(-1)}), weight.t()).view(shape);
  }
  Tensor y = x.matmul(weight.t());
  return bias.defined() ? y + bias : y;
}

Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  BRISK_AUTOCAST(bilinear, bilinear, x1, x2, weight, bias);
  BRISK_PROFILE_OP("bilinear", x1, x2, weight, bias);
  check_numeric("bilinear", "input1", x1);
  check_numeric("bilinear", "input2", x2);
  BRISK_CHECK(weight.dim() == 3, "bilinear", "expected a 3-D weight (out, in1, in2), got ", shape_str(weight.sizes()));
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  BRISK_CHECK(x1.dim() >= 1 && x2.dim() == x1.dim() && x1.size(-1) == in1 && x2.size(-1) == in2 &&
                  IntArrayRef(x1.sizes().data(), x1.sizes().size() - 1) == IntArrayRef(x2.sizes().data(), x2.sizes().size() - 1),
              "bilinear", "inputs ", shape_str(x1.sizes()), " and ", shape_str(x2.sizes()),
              " do not match weight shape ", shape_str(weight.sizes()));
  std::vector<int64_t> lead(x1.sizes().begin(), x1.sizes().end() - 1);
  Tensor a = x1.reshape({-1, in1});                                                   // (N, in1)
  Tensor b = x2.reshape({-1, in2});                                                   // (N, in2)
  Tensor t = a.matmul(weight.permute({1, 0, 2}).reshape({in1, out * in2}));            // (N, out*in2)
  // (N, out): a batched product that accumulates each row in the compute type
  // and rounds once, as torch's _trilinear (bmm); a product rounded to the
  // dtype before a sum lost digits in float16/bfloat16 (fuzz seed 191)
  Tensor y = t.view({t.size(0), out, in2}).matmul(b.unsqueeze(-1)).squeeze(-1);  // out may be 0
  if (bias.defined()) y = y + bias;
  lead.push_back(out);
  return y.reshape(lead);
}

Tensor relu(const Tensor& x) { return x.relu(); }
Tensor gelu(const Tensor& x, std::string_view approximate) { return x.gelu(approximate); }
Tensor silu(const Tensor& x) { return x.silu(); }
Tensor mish(const Tensor& x, bool inplace) {
  if (!inplace) return brisk::mish(x);
  Tensor t = x;
  return brisk::mish_(t);
}
Tensor softmax(const Tensor& x, int64_t dim) { return x.softmax(dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return x.log_softmax(dim); }

Tensor dropout(const Tensor& x, double p, bool training) {
  BRISK_PROFILE_OP("dropout", x);
  BRISK_CHECK(p >= 0.0 && p <= 1.0, "dropout", "p must be in [0, 1], got ", p);
  if (!training || p == 0.0) return x;
  check_floating("dropout", "input", x);
  if (p == 1.0) return x * 0.0;
  Tensor mask = empty_like(x).bernoulli_(1.0 - p);
  mask.mul_(1.0 / (1.0 - p));
  return x * mask;
}

namespace {

/// The checks of layer_norm / rms_norm: x ends with normalized_shape, the
/// parameters have that shape.
void check_row_norm(const char* op, const Tensor& x, const std::vector<int64_t>& shape, const Tensor& weight,
                    const Tensor& bias) {
  check_floating(op, "input", x);
  const int64_t k = static_cast<int64_t>(shape.size());
  bool ok = k >= 1 && x.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == shape[static_cast<size_t>(i)];
  BRISK_CHECK(ok, op, "input shape ", shape_str(x.sizes()), " does not end with normalized_shape ",
              shape_str(shape));
  if (weight.defined()) {
    check_floating(op, "weight", weight);
    BRISK_CHECK(weight.sizes() == IntArrayRef(shape), op, "weight shape ", shape_str(weight.sizes()),
                " differs from normalized_shape ", shape_str(shape));
    BRISK_CHECK(weight.device() == x.device(), op, "weight is on ", weight.device(), " but the input is on ",
                x.device());
  }
  if (bias.defined()) {
    check_floating(op, "bias", bias);
    BRISK_CHECK(bias.sizes() == IntArrayRef(shape), op, "bias shape ", shape_str(bias.sizes()),
                " differs from normalized_shape ", shape_str(shape));
    BRISK_CHECK(bias.device() == x.device(), op, "bias is on ", bias.device(), " but the input is on ", x.device());
  }
}

/// The normalized dims as negative indices (-k, ..., -1).
std::vector<int64_t> trailing_dims(size_t k) {
  std::vector<int64_t> dims;
  for (int64_t i = -static_cast<int64_t>(k); i < 0; ++i) dims.push_back(i);
  return dims;
}

/// rstd from a variance (or mean square): NaN where it overflowed (past
/// ~1.8e19 in float32 rstd would be 0 and the output exactly the bias,
/// silently; PyTorch gives NaN there, and so does brisk).
Tensor rstd_of(const Tensor& var, double eps) {
  return where(var.isinf(), std::numeric_limits<double>::quiet_NaN(), (var + eps).rsqrt());
}

/// Composite layer_norm / rms_norm from brisk ops (differentiable). Used on
/// devices without the fused kernel; x in its compute dtype.
Tensor layer_norm_composite(const Tensor& xc, const std::vector<int64_t>& dims, const Tensor& weight,
                            const Tensor& bias, double eps) {
  Tensor y = (xc - xc.mean(dims, true)) * rstd_of(xc.var(dims, 0, true), eps);
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}
Tensor rms_norm_composite(const Tensor& xc, const std::vector<int64_t>& dims, ScalarType x_dtype,
                          const Tensor& weight, double eps) {
  Tensor y = xc * rstd_of((xc * xc).mean(dims, true), eps);
  return (weight.defined() ? y * weight : y).to(x_dtype);
}

/// The backward of layer_norm (kRms: rms_norm) as brisk ops, differentiable
/// (under create_graph) with respect to x, weight and the incoming gradient.
/// The statistics are recomputed from x. 16-bit x computes in float32.
TensorList row_norm_backward_composite(bool rms, const Tensor& g_in, const Tensor& x_in, const Tensor& w_in,
                                       const std::vector<int64_t>& dims, double eps) {
  const bool reduced = is_reduced_float(x_in.dtype());
  const Tensor x = reduced ? x_in.to(kFloat) : x_in;
  const Tensor g = reduced ? g_in.to(kFloat) : g_in.to(x_in.dtype());
  const Tensor w = w_in.defined() && reduced ? w_in.to(kFloat) : w_in;
  const Tensor rstd = rms ? rstd_of((x * x).mean(dims, true), eps) : rstd_of(x.var(dims, 0, true), eps);
  const Tensor xhat = rms ? x * rstd : (x - x.mean(dims, true)) * rstd;
  const Tensor gw = w.defined() ? g * w : g;
  Tensor dx = rms ? rstd * (gw - xhat * (gw * xhat).mean(dims, true))
                  : rstd * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true));
  std::vector<int64_t> lead;  // the dims summed for the parameter gradients
  for (int64_t d = 0; d < x.dim() - static_cast<int64_t>(dims.size()); ++d) lead.push_back(d);
  Tensor dw = (g * xhat), db = g;
  if (!lead.empty()) {
    dw = dw.sum(lead);
    db = db.sum(lead);
  }
  return {dx.to(x_in.dtype()), dw, db};
}

/// Saved by the fused forward for its backward.
struct RowNormSaved {
  std::vector<int64_t> dims;
  double eps;
  ScalarType weight_dtype, bias_dtype;
};

/// layer_norm (rms: rms_norm) through the fused kernels: x, weight and bias
/// in the compute dtype ct, contiguous; recorded with a fused backward.
template <OpId fwd, OpId bwd>
Tensor row_norm_fused(const char* op, const Tensor& x, const std::vector<int64_t>& shape, const Tensor& weight,
                      const Tensor& bias, double eps, ScalarType ct) {
  constexpr bool rms = fwd == OpId::rms_norm;
  int64_t N = 1;
  for (int64_t s : shape) N *= s;
  int64_t lead = 1;
  for (int64_t d = 0; d < x.dim() - static_cast<int64_t>(shape.size()); ++d) lead *= x.size(d);
  Tensor y, mean, rstd, xk, wk, bk;
  {
    NoGradGuard ng;
    xk = x.to(ct).contiguous().view({lead, N});
    wk = weight.defined() ? weight.to(ct).contiguous().view({N}) : Tensor();
    bk = bias.defined() && !rms ? bias.to(ct).contiguous().view({N}) : Tensor();
    const ScalarType st = is_reduced_float(ct) ? kFloat : ct;
    const TensorOptions so = TensorOptions(st).device(x.device());
    y = empty(x.sizes(), TensorOptions(ct).device(x.device()));
    if (!rms) mean = empty({lead}, so);
    rstd = empty({lead}, so);
    if (lead != 0) kernel<fwd>(x.device().type, op)(y.view({lead, N}), mean, rstd, xk, wk, bk, eps);
  }
  const bool rec = autograd::should_record(x, weight, rms ? Tensor() : bias);
  if (!rec) return y;
  RowNormSaved s{trailing_dims(shape.size()), eps, weight.defined() ? weight.dtype() : ct,
                 bias.defined() ? bias.dtype() : ct};
  using namespace autograd;
  const char* node = rms ? "FusedRmsNormBackward0" : "NativeLayerNormBackward0";
  TensorList inputs = rms ? TensorList{x, weight} : TensorList{x, weight, bias};
  record(node, {y}, inputs, {save(x), save(weight), save(mean), save(rstd)},
         [s = std::move(s), lead, N, ct](BackwardCtx& c) -> TensorList {
           const Tensor x = c.saved(0), w = c.saved(1);
           const bool need_db = !rms && c.needs(2);
           if (GradMode::is_enabled() || !supports(bwd, x.device().type)) {
             TensorList r = row_norm_backward_composite(rms, c.grad(), x.to(ct), w.defined() ? w.to(ct) : w,
                                                        s.dims, s.eps);
             TensorList out{c.needs(0) ? r[0].to(x.dtype()) : Tensor(), c.needs(1) ? r[1].to(s.weight_dtype) : Tensor()};
             if (!rms) out.push_back(need_db ? r[2].to(s.bias_dtype) : Tensor());
             return out;
           }
           NoGradGuard ng;
           const TensorOptions o = TensorOptions(ct).device(x.device());
           const Tensor xk = x.to(ct).contiguous().view({lead, N});
           const Tensor gk = c.grad().to(ct).contiguous().view({lead, N});
           const Tensor wk = w.defined() ? w.to(ct).contiguous().view({N}) : Tensor();
           Tensor dx = c.needs(0) ? empty({lead, N}, o) : Tensor();
           Tensor dw = c.needs(1) && w.defined() ? empty({N}, o) : Tensor();
           Tensor db = need_db ? empty({N}, o) : Tensor();
           if (dx.defined() || dw.defined() || db.defined())
             kernel<bwd>(x.device().type, rms ? "rms_norm_backward" : "layer_norm_backward")(
                 dx, dw, db, gk, xk, c.saved(2), c.saved(3), wk);
           TensorList out{dx.defined() ? dx.view(x.sizes()).to(x.dtype()) : Tensor(),
                          dw.defined() ? dw.view(w.sizes()).to(s.weight_dtype) : Tensor()};
           if (!rms) {
             std::vector<int64_t> pshape(s.dims.size());
             for (size_t i = 0; i < s.dims.size(); ++i) pshape[i] = x.size(static_cast<int64_t>(x.dim()) + s.dims[i]);
             out.push_back(db.defined() ? db.view(pshape).to(s.bias_dtype) : Tensor());
           }
           return out;
         });
  return y;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  BRISK_AUTOCAST(layer_norm, layer_norm, x, shape, weight, bias, eps);
  BRISK_PROFILE_OP("layer_norm", x, weight, bias);
  check_row_norm("layer_norm", x, shape, weight, bias);
  brisk::detail::check_norm_param_dtypes("layer_norm", x, {{"weight", weight}, {"bias", bias}});
  // float16/bfloat16 compute in float32, forward and backward (as PyTorch's
  // kernel): in 16 bits the gradient's terms of size ~rstd cancel to noise.
  // The output has x's dtype; float32 parameters of a 16-bit x (PyTorch's
  // mixed kernel) are read in float32: the fused kernels then run in float32
  // and the output is rounded once.
  const bool mixed = (weight.defined() && weight.dtype() != x.dtype()) || (bias.defined() && bias.dtype() != x.dtype());
  if (supports(OpId::layer_norm, x.device().type)) {
    const Tensor y = row_norm_fused<OpId::layer_norm, OpId::layer_norm_backward>(
        "layer_norm", x, shape, weight, bias, eps, mixed ? kFloat : x.dtype());
    return mixed ? y.to(x.dtype()) : y;
  }
  const Tensor xc = is_reduced_float(x.dtype()) ? x.to(kFloat) : x;
  return layer_norm_composite(xc, trailing_dims(shape.size()), weight, bias, eps).to(x.dtype());
}

Tensor rms_norm(const Tensor& x, const std::vector<int64_t>& shape, const Tensor& weight, std::optional<double> eps) {
  BRISK_AUTOCAST(rms_norm, rms_norm, x, shape, weight, eps);
  BRISK_PROFILE_OP("rms_norm", x, weight);
  check_row_norm("rms_norm", x, shape, weight, Tensor());
  // As PyTorch 2.x: eps=None is the machine epsilon of the compute dtype
  // (float32 for 16-bit x), and the result has x's dtype whatever the
  // weight's, x * rstd * weight computed in that compute dtype and rounded once.
  const ScalarType ct = is_reduced_float(x.dtype()) ? kFloat : x.dtype();
  const double e = eps ? *eps
                       : ct == kDouble ? std::numeric_limits<double>::epsilon()
                                       : double(std::numeric_limits<float>::epsilon());
  if (supports(OpId::rms_norm, x.device().type) && (!weight.defined() || weight.dtype() == x.dtype()))
    return row_norm_fused<OpId::rms_norm, OpId::rms_norm_backward>("rms_norm", x, shape, weight, Tensor(), e,
                                                                   x.dtype());
  return rms_norm_composite(x.to(ct), trailing_dims(shape.size()), x.dtype(), weight.defined() ? weight.to(ct) : weight, e);
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  BRISK_PROFILE_OP("embedding", indices, weight);
  BRISK_CHECK(indices.defined() && (indices.dtype() == kInt64 || indices.dtype() == kInt32), "embedding",
              "expected indices of dtype int64 (or int32), got ", indices.defined() ? indices.dtype() : kInt64);
  BRISK_CHECK(weight.defined() && weight.dim() == 2, "embedding", "expected a 2-D weight, got ",
              shape_str(weight.sizes()));
  const int64_t n = weight.size(0);
  // On a GPU index_select's deferred error reports an index out of range at
  // the next sync (as for nll_loss's targets above). While compile traces,
  // the host read would be a graph break: index_select's kernel checks the
  // same range (Note [Index kernels validate first]) in the trace and in
  // every replay, naming index_select.
  if (indices.numel() > 0 && indices.is_cpu() && !(brisk::detail::tracing_any() && brisk::detail::tracing_this_thread())) {
    brisk::detail::DeviceCheckScope device_check;
    const int64_t hi = indices.max().item<int64_t>(), lo = indices.min().item<int64_t>();
    BRISK_CHECK(lo >= 0 && hi < n, "embedding", "index ", (hi >= n ? hi : lo), " is out of range for ", n,
                " embeddings");
  }
  std::vector<int64_t> out_shape(indices.sizes().begin(), indices.sizes().end());
  out_shape.push_back(weight.size(1));
  Tensor flat = indices.reshape({-1});
  Tensor rows = weight.index_select(0, flat);  // (numel, dim)
  if (padding_idx) {
    // Same values; the padding row's gradient is cut by taking it detached.
    const int64_t pad = *padding_idx < 0 ? *padding_idx + n : *padding_idx;
    rows = where(flat.ne(pad).unsqueeze(1), rows, rows.detach());
  }
  return rows.view(out_shape);
}

// ---- losses ----------------------------------------------------------------------------

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o) {
  BRISK_AUTOCAST(mse_loss, mse_loss, input, target, o);
  BRISK_PROFILE_OP("mse_loss", input, target);
  check_same_shape("mse_loss", input, target, /*promoted=*/true);
  const Tensor x = unbool(input, target), t = unbool(target, input);
  const bool rec = autograd::should_record(input, target);
  // d keeps its history when recorded: the gradient reads it, so second
  // derivatives flow through it (under create_graph)
  const Tensor d = x - t;
  Tensor loss;
  {
    NoGradGuard ng;
    loss = reduce("mse_loss", d * d, o.reduction());
  }
  if (BRISK_UNLIKELY(rec)) {
    // Note [mse_loss's gradient]
    // PyTorch's mse_loss_backward is one kernel, norm * (x - t) * g with
    // norm = 2 / numel (mean) or 2, each product rounded to the dtype (norm
    // too: 2 / 3 in bfloat16), the reduction's gradient folded in; the
    // target's is norm * (t - x) * g (+0 where x == t, not -0). brisk's is
    // one kernel too (ActGrad::mse of the activation_backward slot, from the
    // saved d = x - t, the forward's difference: one pass where the
    // composite took four), with the same roundings. One exception, kept
    // from before: where norm * (x - t) passes the dtype's range PyTorch's
    // gradient is inf although the exact one is finite (float16 65504 - 1.43
    // with g = 0.5); brisk keeps that product in a wider type and gives the
    // exact value (tests MseLossGradientDoesNotOverflowBeforeTheIncomingGradient).
    // Under create_graph the same products as ops (differentiable).
    const double norm = o.reduction() == Reduction::Mean ? 2.0 / double(x.numel()) : 2.0;
    using namespace autograd;
    record("MseLossBackward0", {loss}, {input, target}, {save(d)}, [norm](BackwardCtx& c) -> TensorList {
      const Tensor ds = c.saved(0);
      Tensor gx, gt;
      if (c.needs(0)) gx = detail::mse_grad(c.grad(), ds, norm, false);
      if (c.needs(1)) gt = detail::mse_grad(c.grad(), ds, norm, true);
      return {gx, gt};
    });
  }
  return loss;
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o) {
  BRISK_AUTOCAST(l1_loss, l1_loss, input, target, o);
  BRISK_PROFILE_OP("l1_loss", input, target);
  // Integer inputs too, as torch: |input - target| in the promoted dtype
  // (wrapping), summed in int64; their mean raises (mean of an integer dtype).
  BRISK_CHECK(input.defined(), "l1_loss", "input is undefined");
  BRISK_CHECK(target.defined(), "l1_loss", "target is undefined");
  BRISK_CHECK(input.sizes() == target.sizes(), "l1_loss", "input shape ", shape_str(input.sizes()),
              " and target shape ", shape_str(target.sizes()), " differ");
  return reduce("l1_loss", (input - target).abs(), o.reduction());
}

namespace {
/// Elementwise huber (smooth: false) or smooth_l1 (smooth: true) loss with
/// its own node, as PyTorch's: d(loss)/d(input) = clamp(x - t, -c, c) / s
/// (c = delta or beta; s = 1 or beta), finite for an infinite difference and
/// NaN for a NaN one. (A composite of abs/clamp/where gave 0 at NaN.)
/// smooth_l1 (smooth) or huber loss, reduced, with one node for the
/// gradient that includes the reduction, as PyTorch's; `out` the loss's
/// dtype before the reduction (huber's is the input's).
Tensor huber_elementwise(const char* node, const Tensor& input, const Tensor& target, double c, bool smooth,
                         Reduction red, std::optional<ScalarType> out = std::nullopt) {
  // diff keeps its history: the backward formula reads it, so second
  // derivatives flow through it (under create_graph).
  const Tensor diff = input - target;
  Tensor loss;
  {
    NoGradGuard ng;
    // PyTorch 2.15's roundings, which differ by kernel and dtype (each
    // measured bit for bit on 20000 values and three betas): smooth_l1 is
    // ((0.5 z) z) / beta and z - 0.5 beta, in float16 on the CPU in float16
    // steps with beta and 0.5 beta rounded to it, in bfloat16 in float32
    // rounded once; huber is (0.5 z) z and (z - 0.5 delta) delta, float16 in
    // float32 rounded once, bfloat16's linear piece in bfloat16 steps with
    // delta rounded to it (so is its comparison). CUDA's kernels compute
    // 16-bit in float32 and round once. brisk's d^2 * (0.5 / beta) was an ulp
    // off in a fifth of float32 smooth_l1 values for beta != 1.
    const ScalarType dt = diff.dtype();
    const bool cpu = diff.is_cpu();
    const bool half_steps = cpu && dt == kHalf && smooth;
    const bool bf16_huber = cpu && dt == kBFloat16 && !smooth;
    const bool widen = is_reduced_float(dt) && !half_steps && !bf16_huber;
    // |x - t| (in float32 when widened: not rounded to the 16-bit dtype first)
    const Tensor z = widen ? (input.to(kFloat) - target.to(kFloat)).abs() : diff.abs();
    if (half_steps) {
      loss = where(z.lt(c), ((z * 0.5) * z) / detail::round_to(dt, c), z - detail::round_to(dt, 0.5 * c));
    } else if (bf16_huber) {
      const double ch = detail::round_to(dt, c);
      const Tensor zf = z.to(kFloat);
      loss = where(z.lt(ch), ((zf * 0.5) * zf).to(dt), (z - detail::round_to(dt, 0.5 * ch)) * ch);
    } else if (smooth) {
      loss = where(z.lt(c), ((z * 0.5) * z) / c, z - 0.5 * c);
    } else {
      loss = where(z.lt(c), (z * 0.5) * z, (z - 0.5 * c) * c);
    }
    if (widen) loss = loss.to(dt);
    if (out) loss = loss.to(*out);
    loss = reduce(smooth ? "smooth_l1_loss" : "huber_loss", loss, red);
  }
  if (BRISK_UNLIKELY(autograd::should_record(input, target))) {
    // smooth_l1's gradient is PyTorch's: the incoming gradient itself outside
    // [-c, c] (g * c / c was an ulp off), (x / c) g inside; 16-bit in float32
    // from the unrounded x - t, rounded once (torch 2.15, measured bit for bit)
    const ScalarType dt = diff.dtype();
    const bool wide = smooth && is_reduced_float(dt);
    const Tensor x = wide ? input.to(kFloat) - target.to(kFloat) : diff;
    // The mean's 1 / N multiplies the incoming gradient in float32 for 16-bit
    // dtypes (PyTorch's kernel takes the norm; brisk's mean node rounded 1 / N
    // to float16 first, a third of the gradients an ulp off).
    const double norm = red == Reduction::Mean ? 1.0 / static_cast<double>(input.numel()) : 1.0;
    const bool wide16 = is_reduced_float(dt);
    autograd::record(node, {loss}, {input, target}, {autograd::save(x)},
                     [c, smooth, wide, wide16, dt, norm](autograd::BackwardCtx& ctx) -> TensorList {
                       const Tensor& xs = ctx.saved(0);
                       Tensor gn = wide16 ? ctx.grad().to(kFloat) : ctx.grad();
                       if (norm != 1.0) gn = gn * norm;
                       // (x's path counts only where |x| < c: the second derivative is
                       // g [|x| < c] / c, 0 at a NaN x and at |x| = c, as torch's double
                       // backward, whose |x - t| is rounded to the 16-bit dtype: a bfloat16
                       // difference of 0.999 is 1 there, outside beta = 1)
                       // (only under create_graph: without it the mask changes no value)
                       const bool higher = GradMode::is_enabled();
                       Tensor xin = xs;
                       if (higher) xin = where((wide ? xs.to(dt) : xs).abs().lt(c), xs, xs.detach());
                       Tensor g = smooth   ? where(xs.le(-c), -gn, where(xs.ge(c), gn, (xin / c) * gn))
                                  : higher ? gn * where(xs.le(-c), -c, where(xs.ge(c), c, xin))
                                           : gn * xs.clamp(-c, c);
                       if (wide16) g = g.to(dt);
                       return {ctx.needs(0) ? g : Tensor(), ctx.needs(1) ? -g : Tensor()};
                     });
  }
  return loss;
}
}  // namespace

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o) {
  BRISK_AUTOCAST(smooth_l1_loss, smooth_l1_loss, input, target, o);
  BRISK_PROFILE_OP("smooth_l1_loss", input, target);
  const double beta = o.beta();
  BRISK_CHECK(beta >= 0, "smooth_l1_loss", "beta must be non-negative, got ", beta);
  // beta 0 is l1_loss, as torch's: integer operands too (|a - b| wraps in
  // their dtype), bool ones refused by the subtraction.
  if (beta == 0.0) return l1_loss(input, target, L1LossFuncOptions(o.reduction()));
  check_same_shape("smooth_l1_loss", input, target, /*promoted=*/true);
  // (beta 0 is l1_loss, which refuses a bool operand, as torch's.)
  return huber_elementwise("SmoothL1LossBackward0", unbool(input, target), unbool(target, input), beta, true,
                           o.reduction());
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o) {
  BRISK_AUTOCAST(huber_loss, huber_loss, input, target, o);
  BRISK_PROFILE_OP("huber_loss", input, target);
  check_same_shape("huber_loss", input, target);
  const double delta = o.delta();
  BRISK_CHECK(delta > 0, "huber_loss", "delta must be positive, got ", delta);
  // PyTorch's result has the input's dtype (not the promoted one).
  return huber_elementwise("HuberLossBackward0", input, unbool(target, input), delta, false, o.reduction(),
                           input.dtype());
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o) {
  BRISK_AUTOCAST(nll_loss, nll_loss, input, target, o);
  BRISK_PROFILE_OP("nll_loss", input, target);
  check_floating("nll_loss", "input", input);
  if (input.dim() == 1) {  // unbatched: (C) and ()
    BRISK_CHECK(target.defined() && target.dim() == 0, "nll_loss", "an input of shape ", shape_str(input.sizes()),
                " needs a 0-dim target, got ", target.defined() ? shape_str(target.sizes()) : "undefined");
    Tensor r = nll_loss(input.unsqueeze(0), target.unsqueeze(0), o);
    return o.reduction() == kNone ? r.squeeze(0) : r;
  }
  Picked p = pick_targets("nll_loss", input, target, o.weight(), o.ignore_index());
  return reduce_weighted("nll_loss", p.loss, p.w, o.reduction());
}

namespace {

/// cross_entropy of (N, C) logits with class indices through the fused
/// kernels (Note [Fused cross_entropy] in src/backend/cpu/kernels/loss.cpp):
/// per-row losses and target weights from one kernel, reduced here.
Tensor cross_entropy_fused(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o) {
  const char* op = "cross_entropy";
  const int64_t N = input.size(0), C = input.size(1);
  BRISK_CHECK(target.dtype() == kInt64 || target.dtype() == kUInt8, op,
              "expected class indices of dtype int64 (or uint8), got ", target.dtype());
  BRISK_CHECK(target.dim() == 1 && target.size(0) == N, op, "input shape ", shape_str(input.sizes()),
              " does not match target shape ", shape_str(target.sizes()),
              " (expected target (N, d...) for input (N, C, d...))");
  const Tensor& weight = o.weight();
  if (weight.defined())
    BRISK_CHECK(weight.dim() == 1 && weight.size(0) == C && weight.is_floating_point(), op,
                "expected a floating point weight of shape [", C, "], got ", shape_str(weight.sizes()), " ",
                weight.dtype());
  check_weight_without_grad(op, "weight", weight);
  const int64_t ignore = o.ignore_index();
  const double ls = o.label_smoothing();
  const ScalarType dt = input.dtype();
  Tensor t, x, wk, loss, wt, lse;
  {
    NoGradGuard ng;
    t = target.to(kInt64).contiguous();
    // (the kernel checks the targets' range before it writes; a GPU has no
    // fused kernel and takes the composite path: Note [Deferred index errors])
    x = input.contiguous();
    wk = weight.defined() ? weight.to(dt).contiguous() : Tensor();
    const TensorOptions opt = TensorOptions(dt).device(input.device());
    loss = empty({N}, opt);
    wt = empty({N}, opt);
    // per row (max, log sum exp(x - max)): Note [Fused cross_entropy]
    lse = empty({N, 2}, TensorOptions(is_reduced_float(dt) ? kFloat : dt).device(input.device()));
    if (N != 0) kernel<OpId::cross_entropy>(input.device().type, op)(loss, wt, lse, x, t, wk, ignore, ls);
  }
  if (autograd::should_record(input)) {
    using namespace autograd;
    // Saves the input itself, not its contiguous copy: the differentiable
    // backward below must reach the input's history (a non-contiguous
    // input's copy has none, and the second derivative was lost).
    record("CrossEntropyLossBackward0", {loss}, {input}, {save(input), save(lse)},
           [t, wk, ignore, ls, C](BackwardCtx& c) -> TensorList {
             const Tensor x = c.saved(0);
             const Tensor& g = c.grad();
             if (GradMode::is_enabled() || !supports(OpId::cross_entropy_backward, x.device().type)) {
               // differentiable: (1 - ls) w[t] (p - onehot(t)) + ls / C (W p - w), 0 where ignored
               const Tensor valid = t.ne(ignore);
               const Tensor safe = where(valid, t, Scalar(int64_t(0)));
               const Tensor p = x.softmax(1);
               const Tensor onehot = arange(C, TensorOptions(kInt64).device(x.device())).unsqueeze(0).eq(safe.unsqueeze(1)).to(x.dtype());
               const Tensor wrow = wk.defined() ? wk.index_select(0, safe) : ones({x.size(0)}, TensorOptions(x.dtype()).device(x.device()));
               Tensor d = (p - onehot) * (wrow * (1.0 - ls)).unsqueeze(1);
               if (ls > 0) {
                 const Tensor wv = wk.defined() ? wk.unsqueeze(0) : ones({1, C}, TensorOptions(x.dtype()).device(x.device()));
                 d = d + (p * wv.sum() - wv) * (ls / double(C));
               }
               // g masked before the product too: its second derivative at an ignored
               // row is 0 even where g is infinite (0 * inf would be NaN; torch gives 0)
               d = d * where(valid, g, Scalar(0.0)).unsqueeze(1);
               return {where(valid.unsqueeze(1), d, Scalar(0.0))};
             }
             NoGradGuard ng;
             Tensor gx = empty(x.sizes(), TensorOptions(x.dtype()).device(x.device()));
             if (x.size(0) != 0)
               kernel<OpId::cross_entropy_backward>(x.device().type, "cross_entropy_backward")(
                   gx, g.to(x.dtype()).contiguous(), x.contiguous(), t, wk, c.saved(1), ignore, ls);
             return {gx};
           });
  }
  switch (o.reduction()) {
    case Reduction::None: return loss;
    case Reduction::Sum: return loss.sum();
    default: return loss.sum() / wt.sum();
  }
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o) {
  BRISK_AUTOCAST(cross_entropy, cross_entropy, input, target, o);
  BRISK_PROFILE_OP("cross_entropy", input, target);
  const char* op = "cross_entropy";
  check_floating(op, "input", input);
  BRISK_CHECK(target.defined(), op, "target is undefined");
  const double ls = o.label_smoothing();
  BRISK_CHECK(ls >= 0.0 && ls <= 1.0, op, "label_smoothing must be in [0, 1], got ", ls);
  BRISK_CHECK(o.reduction() != kBatchMean, op, "reduction 'batchmean' is only supported by kl_div");
  if (input.dim() == 1) {  // unbatched: (C) with () indices or (C) probabilities
    const bool probs = target.is_floating_point();
    BRISK_CHECK(probs ? target.dim() == 1 : target.dim() == 0, op, "an input of shape ", shape_str(input.sizes()),
                " needs a 0-dim index target or a probability target of the same shape, got ",
                shape_str(target.sizes()));
    Tensor r = cross_entropy(input.unsqueeze(0), target.unsqueeze(0), o);
    return o.reduction() == kNone ? r.squeeze(0) : r;
  }
  BRISK_CHECK(input.dim() >= 2, op, "expected an input of shape (N, C, ...) or (C), got ", shape_str(input.sizes()));
  // (N, C) logits with class indices: the fused kernels. Not for float16 and
  // bfloat16: PyTorch's cross_entropy is log_softmax then nll_loss, whose
  // 16-bit log-probabilities are rounded (the sum and its log too, on the
  // CPU: softmax.cpp's softmax_row), and its gradient is log_softmax's from
  // those rounded values; the fused kernels' float gradient was up to 9%
  // away from torch's in most elements (bfloat16 logits of 4 randn).
  if (input.dim() == 2 && !target.is_floating_point() && !is_reduced_float(input.dtype()) &&
      supports(OpId::cross_entropy, input.device().type))
    return cross_entropy_fused(input, target, o);
  const int64_t C = input.size(1);
  const Tensor& weight = o.weight();
  Tensor logp = input.log_softmax(1);
  // weight viewed as (1, C, 1, ...) for broadcasting against logp
  Tensor wb;
  if (weight.defined()) {
    BRISK_CHECK(weight.dim() == 1 && weight.size(0) == C && weight.is_floating_point(), op,
                "expected a floating point weight of shape [", C, "], got ", shape_str(weight.sizes()), " ",
                weight.dtype());
    std::vector<int64_t> s(static_cast<size_t>(input.dim()), 1);
    s[1] = C;
    wb = weight.to(logp.dtype()).view(s);
  }

  if (target.is_floating_point()) {  // class probabilities, same shape as the input
    BRISK_CHECK(target.sizes() == input.sizes(), op, "probability target shape ", shape_str(target.sizes()),
                " differs from input shape ", shape_str(input.sizes()));
    Tensor t = ls > 0 ? target * (1.0 - ls) + ls / static_cast<double>(C) : target;
    Tensor prod = logp * t;
    if (wb.defined()) prod = prod * wb;
    return reduce(op, prod.sum(1).neg(), o.reduction());  // mean: over the N*d... positions
  }

  Picked p = pick_targets(op, logp, target, weight, o.ignore_index());
  if (ls == 0.0) return reduce_weighted(op, p.loss, p.w, o.reduction());
  // Label smoothing: (1 - ls) * nll + ls / C * (-sum_c w_c logp_c), ignored
  // positions zero; mean divides both by the summed target weights.
  Tensor smooth = (wb.defined() ? logp * wb : logp).sum(1).neg();
  smooth = where(p.valid, smooth, Scalar(0.0));
  return reduce_weighted(op, p.loss, p.w, o.reduction()) * (1.0 - ls) +
         reduce_weighted(op, smooth, p.w, o.reduction()) * (ls / static_cast<double>(C));
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o) {
  BRISK_AUTOCAST(binary_cross_entropy, binary_cross_entropy, input, target, o);
  BRISK_PROFILE_OP("binary_cross_entropy", input, target);
  const char* op = "binary_cross_entropy";
  check_same_shape(op, input, target);
  check_weight_without_grad(op, "weight", o.weight());
  if (input.numel() > 0) {
    brisk::detail::DeviceCheckScope device_check;  // a device-side assert on a GPU
    // ge & le, so a NaN fails the check too (as PyTorch's x >= 0 && x <= 1)
    BRISK_CHECK((input.ge(0) & input.le(1)).all().item<bool>(), op,
                "all elements of input should be between 0 and 1");
  }
  // The weight in the loss's dtype: PyTorch multiplies it into the loss in place
  // (a float64 weight keeps a float32 loss float32).
  const ScalarType ldt = promote_types(input.dtype(), target.dtype());
  const Tensor w = o.weight().defined() ? o.weight().to(ldt) : Tensor();
  const Reduction red = o.reduction();
  Tensor loss;
  {
    NoGradGuard ng;
    // PyTorch's kernel (binary_cross_entropy_out_cpu, and its CUDA kernel):
    // (t - 1) max(log1p(-x), -100) - t max(log(x), -100), each step in the
    // dtype (brisk's log(1 - x) was an ulp off in 5% of float32 losses and
    // 16% of 16-bit ones)
    loss = (target - 1.0) * input.neg().log1p().clamp_min(-100.0) - target * input.log().clamp_min(-100.0);
    if (w.defined()) loss = loss * w;
    BRISK_CHECK(loss.sizes() == input.sizes(), op, "weight shape ", shape_str(w.sizes()),
                " does not broadcast to input shape ", shape_str(input.sizes()));
    loss = reduce(op, loss, red);
  }
  if (BRISK_UNLIKELY(autograd::should_record(input, target))) {
    // Note [binary_cross_entropy's gradients]; one node with the reduction,
    // as PyTorch's: g (x - t) / max(x (1 - x), eps), then the weight, then
    // over numel for the mean (the mean's node outside rounded 1 / N first)
    using namespace autograd;
    const int64_t n = input.numel();
    record("BinaryCrossEntropyBackward0", {loss}, {input, target}, {save(input), save(target), save(w)},
           [red, n](BackwardCtx& c) -> TensorList {
             const Tensor x = c.saved(0), t = c.saved(1), wt = c.saved(2);
             auto finish = [&](Tensor v) {
               const ScalarType dt = v.dtype();
               if (wt.defined()) v = (v * wt).to(dt);
               return red == Reduction::Mean ? (v / static_cast<double>(n)).to(dt) : v;
             };
             Tensor gx, gt;
             if (c.needs(0)) gx = finish(bce_input_grad(c.grad(), x, t));
             if (c.needs(1)) gt = finish(x.logit().neg() * c.grad());
             return {gx, gt};
           });
  }
  return loss;
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& o) {
  BRISK_AUTOCAST(binary_cross_entropy_with_logits, binary_cross_entropy_with_logits, input, target, o);
  BRISK_PROFILE_OP("binary_cross_entropy_with_logits", input, target);
  const char* op = "binary_cross_entropy_with_logits";
  check_same_shape(op, input, target);
  check_weight_without_grad(op, "weight", o.weight());
  check_weight_without_grad(op, "pos_weight", o.pos_weight());
  // PyTorch's steps (Loss.cpp): l = log_sigmoid(x) in x's dtype, times
  // (pw - 1) t + 1 in place; then (1 - t) times x in place, minus l, times
  // the weight in place. The in-place products make the loss the target's
  // dtype (a float64 input with a float32 target gives float32, a bfloat16
  // target bfloat16; brisk promoted both), and -log_sigmoid(x) is not
  // softplus(-x) to the ulp (a quarter of float32 losses of 4 randn were
  // an ulp or more away, tools/bitexact). Finite for any |x|.
  BRISK_CHECK(is_floating_point(target.dtype()), op, "expected a floating point target, got ", target.dtype(),
              " (the loss has the target's dtype)");
  const ScalarType tdt = target.dtype();
  const Tensor& w = o.weight();
  const Tensor& pw = o.pos_weight();
  const Reduction red = o.reduction();
  Tensor loss;
  {
    NoGradGuard ng;
    Tensor ls = log_sigmoid(input);
    if (pw.defined()) {
      const Tensor lw = (pw - 1.0) * target + 1.0;
      BRISK_CHECK(broadcast_shapes(ls.sizes(), lw.sizes(), op) == ls.sizes(), op,
                  "weight or pos_weight does not broadcast to input shape ", shape_str(input.sizes()));
      ls = (ls * lw).to(input.dtype());
    }
    loss = ((1.0 - target) * input).to(tdt);
    loss = (loss - ls).to(tdt);
    if (w.defined()) loss = (loss * w).to(tdt);
    BRISK_CHECK(loss.sizes() == input.sizes(), op, "weight or pos_weight does not broadcast to input shape ",
                shape_str(input.sizes()));
    loss = reduce(op, loss, red);
  }
  if (BRISK_UNLIKELY(autograd::should_record(input, target))) {
    // One node with the reduction, as PyTorch's, with its formulas and steps
    // (binary_cross_entropy_with_logits_backward and its target form): the
    // elementwise factor times the incoming gradient, times the weight, over
    // numel for the mean. Without grad mode torch works in place, each step
    // rounded to the first tensor's dtype (x's for the input gradient,
    // pos_weight * t's with a pos_weight; x's for the target's pos_weight
    // form, always in place); with the mean outside the node a bfloat16
    // loss's gradient took 1/N rounded to bfloat16. Each is one product with
    // g (the composite's derivatives were sums of two infinite terms, NaN,
    // where torch's are inf). Written with brisk ops: second derivatives.
    using namespace autograd;
    const int64_t n = input.numel();
    record("BinaryCrossEntropyWithLogitsBackward0", {loss}, {input, target}, {save(input), save(target), save(w), save(pw)},
           [red, n](BackwardCtx& c) -> TensorList {
             const Tensor x = c.saved(0), t = c.saved(1), wt = c.saved(2), p = c.saved(3);
             const Tensor& g = c.grad();
             const bool inplace = !GradMode::is_enabled();
             // a step of an in-place chain: computed in the promoted dtype, rounded to dt's
             auto step = [](const Tensor& v, ScalarType dt, bool in_place) { return in_place ? v.to(dt) : v; };
             auto finish = [&](Tensor v, bool in_place) {
               const ScalarType dt = v.dtype();
               v = step(v * g, dt, in_place);
               if (wt.defined()) v = step(v * wt, dt, in_place);
               return red == Reduction::Mean ? step(v / static_cast<double>(n), dt, in_place) : v;
             };
             Tensor gx, gt;
             if (c.needs(0)) {
               // ((pw t + 1 - t) sigmoid(x) - pw t) g, or (sigmoid(x) - t) g
               const Tensor s = x.sigmoid();
               if (p.defined()) {
                 const Tensor pt = p * t;
                 const ScalarType dt = pt.dtype();
                 Tensor v = step((pt + 1.0) - t, dt, inplace);
                 v = step(v * s, dt, inplace);
                 gx = finish(step(v - pt, dt, inplace), inplace);
               } else {
                 gx = finish(step(s - t, x.dtype(), inplace), inplace);
               }
             }
             if (c.needs(1)) {  // (log_sigmoid(-x) - log_sigmoid(x) pw) g in x's dtype, or -x g
               if (p.defined()) {
                 const ScalarType dt = x.dtype();
                 const Tensor v = (log_sigmoid(x.neg()) - (log_sigmoid(x) * p).to(dt)).to(dt);
                 Tensor r = (v * g).to(dt);
                 if (wt.defined()) r = step(r * wt, dt, inplace);
                 gt = red == Reduction::Mean ? step(r / static_cast<double>(n), dt, inplace) : r;
               } else {
                 Tensor r = x.neg() * g;
                 const ScalarType dt = r.dtype();
                 if (wt.defined()) r = step(r * wt, dt, inplace);
                 gt = red == Reduction::Mean ? step(r / static_cast<double>(n), dt, inplace) : r;
               }
             }
             return {gx, gt};
           });
  }
  return loss;
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o) {
  BRISK_AUTOCAST(kl_div, kl_div, input, target, o);
  BRISK_PROFILE_OP("kl_div", input, target);
  const char* op = "kl_div";
  check_same_shape(op, input, target);
  Tensor loss;
  if (o.log_target()) {
    loss = target.exp() * (target - input);
  } else {
    Tensor pos = target.gt(0);
    // xlogy(t, t) - t * input: 0 where t = 0, with finite gradients there
    loss = where(pos, target * where(pos, target, Scalar(1.0)).log(), Scalar(0.0)) - target * input;
  }
  if (o.reduction() == kBatchMean) return input.dim() == 0 ? loss.sum() : loss.sum() / static_cast<double>(input.size(0));
  return reduce(op, loss, o.reduction());
}

}  // namespace brisk::nn::functional
