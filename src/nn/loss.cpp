// The losses of nn/loss.h as compositions of brisk ops, and the loss modules
// (which forward to nn::functional). Hinges max(z, 0) have gradient 0 at
// z = 0, as PyTorch 2.x's clamp_min and its fused margin kernels; a NaN z
// stays NaN in the composite losses (margin_ranking, hinge_embedding,
// cosine_embedding, triplet: PyTorch clamps) and counts 0 in the fused ones
// (multi_margin, multilabel_margin: PyTorch's kernels test z > 0).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

#include "autograd/function.h"
#include "core/round_to.h"
#include "brisk/autograd.h"
#include "brisk/nn/activation.h"
#include "brisk/nn/loss.h"
#include "brisk/ops.h"

namespace brisk::nn {

namespace functional {

namespace {

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

void check_float(const char* op, const char* what, const Tensor& t) {
  BRISK_CHECK(t.defined(), op, what, " is undefined");
  BRISK_CHECK(t.is_floating_point(), op, "expected a floating point ", what, ", got ", t.dtype());
}

void check_same_shape(const char* op, const char* a, const Tensor& x, const char* b, const Tensor& y) {
  BRISK_CHECK(x.sizes() == y.sizes(), op, a, " shape ", shape_str(x.sizes()), " and ", b, " shape ",
              shape_str(y.sizes()), " differ");
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

/// max(z, 0) as PyTorch's losses form it, clamp_min(z, 0): gradient 0 at
/// z = 0, NaN stays NaN with gradient 0 (a where passed the gradient of a NaN
/// row on: triplet_margin_loss with a NaN distance, fuzzer nn3 seed 501
/// case 139703).
Tensor hinge_clamp(const Tensor& z) { return z.clamp_min(0.0); }
/// max(z, 0) counting only z > 0 (PyTorch's fused margin kernels; NaN gives 0).
Tensor hinge_strict(const Tensor& z) { return where(z.gt(0), z, Scalar(0.0)); }

/// The dtype PyTorch's loss kernels accumulate x's sums in: on the CPU
/// at::acc_type<T, false>, double for float32 and float64, float for the
/// 16-bit floats; on CUDA at::acc_type<T, true>, float for float32.
Dtype loss_acc_dtype(const Tensor& x) {
  const Dtype d = x.dtype();
  if (d == kDouble) return kDouble;
  return d == kFloat && !x.is_cuda() ? kDouble : kFloat;
}

/// Class indices as int64, checked to lie in [lo, C) (on the CPU).
Tensor class_indices(const char* op, const Tensor& target, int64_t lo, int64_t C) {
  BRISK_CHECK(target.defined(), op, "target is undefined");
  BRISK_CHECK(target.dtype() == kInt64 || target.dtype() == kInt32, op,
              "expected class indices of dtype int64, got ", target.dtype());
  Tensor t = target.to(kInt64);
  if (t.numel() > 0 && t.is_cpu()) {
    const int64_t hi = t.max().item<int64_t>(), mn = t.min().item<int64_t>();
    BRISK_CHECK(hi < C && mn >= lo, op, "target ", (hi >= C ? hi : mn), " is out of bounds for ", C, " classes");
  }
  return t;
}

/// (N, C) view of an (N, C) or (C) input, checked.
Tensor as_rows(const char* op, const Tensor& input) {
  check_float(op, "input", input);
  BRISK_CHECK(input.dim() == 1 || input.dim() == 2, op, "expected an input of shape (N, C) or (C), got ",
              shape_str(input.sizes()));
  return input.dim() == 1 ? input.unsqueeze(0) : input;
}

}  // namespace

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& o) {
  const char* op = "margin_ranking_loss";
  check_float(op, "input1", input1);
  check_float(op, "input2", input2);
  check_float(op, "target", target);
  BRISK_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(), op,
              "all input tensors should have the same number of dims, got ", shape_str(input1.sizes()), ", ",
              shape_str(input2.sizes()), " and ", shape_str(target.sizes()));
  return reduce(op, hinge_clamp(target.neg() * (input1 - input2) + o.margin()), o.reduction());
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& o) {
  const char* op = "hinge_embedding_loss";
  check_float(op, "input", input);
  BRISK_CHECK(target.defined(), op, "target is undefined");
  check_same_shape(op, "input", input, "target", target);
  Tensor margin_part = where(target.ne(1), hinge_clamp(input.neg() + o.margin()), Scalar(0.0));
  Tensor self_part = where(target.ne(-1), input, Scalar(0.0));
  return reduce(op, margin_part + self_part, o.reduction());
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& o) {
  const char* op = "soft_margin_loss";
  check_float(op, "input", input);
  BRISK_CHECK(target.defined(), op, "target is undefined");
  check_same_shape(op, "input", input, "target", target);
  // PyTorch's steps, each rounded to the input's dtype (its kernel writes -x into an
  // output of that dtype and works in place): z = -x * y, exp, log1p. One softplus
  // rounded once: x = 0.5 gave 0.47460938 in bfloat16, torch 0.47265625; and a float64
  // target made a float64 loss. Where exp(z) overflows the loss stays finite, z
  // (torch's is inf), and exp reads 0 there so that backward has no inf * 0.
  // (as PyTorch's: "not differentiable with respect to argument 'target'")
  BRISK_CHECK(!(GradMode::is_enabled() && target.requires_grad()), op,
              "is not differentiable with respect to the target, which cannot require grad (as PyTorch)");
  const ScalarType dt = input.dtype();
  const Reduction red = o.reduction();
  Tensor loss;
  {
    NoGradGuard no_grad;
    const Tensor z = (input.neg() * target).to(dt);
    const Tensor big = z.exp().isinf().logical_and(z.isfinite());
    loss = reduce(op, where(big, z, where(big, Scalar(0.0), z).exp().log1p()), red);
  }
  if (BRISK_UNLIKELY(autograd::should_record(input, target))) {
    // PyTorch's backward (soft_margin_loss_backward, in place in x's dtype):
    // z = exp(-t x); (t z) (-norm) / (z + 1) g, norm = 1 / numel for the mean
    // (the composite's autograd was an ulp off in a third of the gradients)
    using namespace autograd;
    const double norm = red == Reduction::Mean ? 1.0 / static_cast<double>(input.numel()) : 1.0;
    record("SoftMarginLossBackward0", {loss}, {input, target}, {save(input), save(target)},
           [dt, norm](BackwardCtx& c) -> TensorList {
             const Tensor x = c.saved(0), t = c.saved(1);
             const Tensor z = (t.neg() * x).exp();
             // (-norm in the 16-bit dtype: its in-place mul_ there rounds the scalar; measured)
             const double nn = is_reduced_float(dt) ? detail::round_to(dt, -norm) : -norm;
             Tensor gx = ((t * z).to(dt) * nn).to(dt);
             gx = ((gx / (z + 1.0).to(dt)).to(dt) * c.grad()).to(dt);
             return {gx, Tensor()};
           });
  }
  return loss;
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& o) {
  const char* op = "multilabel_soft_margin_loss";
  check_float(op, "input", input);
  BRISK_CHECK(target.defined(), op, "target is undefined");
  check_same_shape(op, "input", input, "target", target);
  BRISK_CHECK(input.dim() >= 1, op, "expected an input of shape (N, C) or (C), got a 0-dim tensor");
  // PyTorch's composite, -(t logsigmoid(x) + (1 - t) logsigmoid(-x)), as it is: the
  // equal (1 - t) x + softplus(-x) gave NaN for x = -inf at t = 1 (0 * -inf) where
  // PyTorch gives inf (fuzzer nn3, seed 501 case 142135), and the target keeps
  // its dtype in the promotion (a float64 target makes a float64 loss).
  Tensor loss = (target * logsigmoid(input) + (1 - target) * logsigmoid(input.neg())).neg();
  if (o.weight().defined()) loss = loss * o.weight();
  const int64_t cd = input.dim() - 1;
  loss = loss.sum({cd}) / static_cast<double>(input.size(cd));
  return reduce(op, loss, o.reduction());
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, const MultilabelMarginLossFuncOptions& o) {
  const char* op = "multilabel_margin_loss";
  Tensor x = as_rows(op, input);  // (N, C)
  BRISK_CHECK(target.defined() && target.sizes() == input.sizes(), op, "target shape ",
              target.defined() ? shape_str(target.sizes()) : std::string("undefined"), " must equal input shape ",
              shape_str(input.sizes()));
  const int64_t N = x.size(0), C = x.size(1);
  Tensor t = class_indices(op, target, -1, C).reshape({N, C});
  // The targets of a row are its entries before the first -1.
  Tensor valid = t.ne(-1).to(kInt64).cumprod(1).to(kBool);           // (N, C) over target slots j
  Tensor idx = where(valid, t, Scalar(int64_t(0)));                   // (N, C)
  Tensor slot = where(valid, t, Scalar(C));                           // invalid slots write the extra column
  const TensorOptions i64 = TensorOptions().dtype(kInt64).device(x.device());
  Tensor is_target = zeros({N, C + 1}, i64).scatter(1, slot, ones({N, C}, i64)).narrow(1, 0, C).to(kBool);
  Tensor xy = x.gather(1, idx);                                       // (N, C): x at target slot j
  // z[n, j, i] = (1 - x[n, y_j]) + x[n, i] for target slots j and non-target classes i,
  // grouped as PyTorch's kernel (1 - x_y + x_i: the x_i - x_y + 1 it replaced lost
  // x_i = 1e-40 next to x_y = 1, where PyTorch's z is 1e-40 > 0: fuzzer seed 607)
  Tensor z = (xy.neg() + 1.0).unsqueeze(2) + x.unsqueeze(1);          // (N, Cj, Ci)
  Tensor keep = valid.unsqueeze(2).logical_and(is_target.logical_not().unsqueeze(1));
  // Summed as PyTorch's kernel: each row in its accumulation dtype (double for
  // float32) and rounded to the input dtype; then divided by C there (reduction
  // 'none'), or the rows summed in the accumulation dtype and divided by C (and
  // N) before one rounding (a 1-d input too). The float32 row losses and mean
  // drifted ulps from torch's (a 6e29 next to 70 in one row).
  const Dtype acc = loss_acc_dtype(x);
  Tensor rows = where(keep, hinge_strict(z), Scalar(0.0)).to(acc).sum({1, 2}).to(x.dtype());  // (N)
  if (o.reduction() == Reduction::None && input.dim() == 2) return rows / static_cast<double>(C);
  BRISK_CHECK(o.reduction() != Reduction::BatchMean, op, "reduction 'batchmean' is only supported by kl_div");
  Tensor loss = rows.to(acc).sum() / static_cast<double>(C);
  if (o.reduction() == Reduction::Mean) loss = loss / static_cast<double>(N);
  return loss.to(x.dtype());
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& o) {
  const char* op = "multi_margin_loss";
  Tensor x = as_rows(op, input);  // (N, C)
  BRISK_CHECK(o.p() == 1 || o.p() == 2, op, "only p == 1 and p == 2 are supported, got ", o.p());
  const int64_t N = x.size(0), C = x.size(1);
  BRISK_CHECK(target.defined() && target.numel() == N && target.dim() == input.dim() - 1, op,
              "expected a target of shape (", N, ") for input shape ", shape_str(input.sizes()), ", got ",
              target.defined() ? shape_str(target.sizes()) : std::string("undefined"));
  if (o.weight().defined())
    BRISK_CHECK(o.weight().dim() == 1 && o.weight().numel() == C && o.weight().is_floating_point(), op,
                "expected a floating point weight of shape [", C, "], got ", shape_str(o.weight().sizes()));
  Tensor y = class_indices(op, target, 0, C).reshape({N, 1});
  Tensor xy = x.gather(1, y);                                        // (N, 1)
  // margin - x_y + x_i, grouped as PyTorch's kernel (x_i - x_y + margin lost a
  // 1e-40 next to x_y = 1: fuzzer seed 607 case 56439)
  Tensor z = hinge_strict((xy.neg() + o.margin()) + x);              // (N, C)
  if (o.p() == 2) z = z * z;
  if (o.weight().defined()) z = z * o.weight().to(x.dtype()).index_select(0, y.reshape({N})).unsqueeze(1);
  Tensor is_y = arange(C, TensorOptions().dtype(kInt64).device(x.device())).unsqueeze(0).eq(y);
  Tensor loss = where(is_y, Scalar(0.0), z).sum({1}) / static_cast<double>(C);
  if (input.dim() == 1) loss = loss.squeeze(0);
  if (o.reduction() == Reduction::None) return loss;
  // The row losses summed (and divided by N) in PyTorch's accumulation dtype,
  // double for float32 on the CPU, and rounded once (a float32 mean drifted an ulp).
  return reduce(op, loss.to(loss_acc_dtype(x)), o.reduction()).to(x.dtype());
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& o) {
  const char* op = "cosine_embedding_loss";
  check_float(op, "input1", input1);
  check_float(op, "input2", input2);
  BRISK_CHECK(target.defined() && (target.dim() == 0 || target.dim() == 1), op,
              "expected a 0-D or 1-D target (multi-target is not supported), got ",
              target.defined() ? shape_str(target.sizes()) : "undefined");
  const int64_t want = target.dim() + 1;
  BRISK_CHECK(input1.dim() == want && input2.dim() == want, op, "expected inputs of shape (N, D) or (D) (a ",
              target.dim(), "-D target expects ", want, "-D inputs), got input1 ", shape_str(input1.sizes()),
              " and input2 ", shape_str(input2.sizes()));
  // As PyTorch's composite: input1 and input2 broadcast ((N, D) with (1, D)), and the target with
  // the cosines (fuzzer, seed 1 case 1478: brisk required equal shapes).
  const DimVector both = broadcast_shapes(input1.sizes(), input2.sizes(), op);
  if (target.dim() == 1)
    BRISK_CHECK(target.size(0) == both[0] || target.size(0) == 1 || both[0] == 1, op, "a target of shape ",
                shape_str(target.sizes()), " does not broadcast with inputs of shape ", shape_str(both));
  // PyTorch's composite, with its 1e-12 in each squared magnitude: a float
  // constant, 9.99999996e-13 in float64 (a float64 gradient at a zero input
  // was 2e-9 off torch's, fuzzer nn3 seed 603 case 968).
  const int64_t d = input1.dim() - 1;
  const double eps = static_cast<double>(1e-12f);
  Tensor prod = (input1 * input2).sum({d});
  Tensor m1 = (input1 * input1).sum({d}) + eps;
  Tensor m2 = (input2 * input2).sum({d}) + eps;
  Tensor cos = prod / (m1 * m2).sqrt();
  Tensor pos = where(target.eq(1), cos.neg() + 1.0, Scalar(0.0));
  Tensor neg = where(target.eq(-1), hinge_clamp(cos - o.margin()), Scalar(0.0));
  return reduce(op, pos + neg, o.reduction());
}

namespace {
void check_triplet(const char* op, const Tensor& a, const Tensor& p, const Tensor& n) {
  check_float(op, "anchor", a);
  check_float(op, "positive", p);
  check_float(op, "negative", n);
  BRISK_CHECK(a.dim() == p.dim() && a.dim() == n.dim(), op,
              "the anchor, positive and negative tensors should have the same number of dims, got ",
              shape_str(a.sizes()), ", ", shape_str(p.sizes()), " and ", shape_str(n.sizes()));
}
}  // namespace

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& o) {
  const char* op = "triplet_margin_loss";
  check_triplet(op, anchor, positive, negative);
  BRISK_CHECK(o.margin() > 0, op, "expected margin to be greater than 0, got ", o.margin());  // PyTorch 2.x's check
  auto d = PairwiseDistanceFuncOptions().p(o.p()).eps(o.eps());
  Tensor dist_pos = pairwise_distance(anchor, positive, d);
  Tensor dist_neg = pairwise_distance(anchor, negative, d);
  if (o.swap()) dist_neg = minimum(dist_neg, pairwise_distance(positive, negative, d));
  // PyTorch's order, (margin + dist_pos) - dist_neg: in 16-bit the margin can
  // vanish into a large distance and the loss be 0 (fuzzer nn3 seed 619 case 427942).
  return reduce(op, hinge_clamp((dist_pos + o.margin()) - dist_neg), o.reduction());
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& o) {
  const char* op = "triplet_margin_with_distance_loss";
  check_triplet(op, anchor, positive, negative);
  BRISK_CHECK(o.margin() > 0, op, "expected margin to be greater than 0, got ", o.margin());
  auto dist = [&](const Tensor& a, const Tensor& b) {
    return o.distance_function() ? (*o.distance_function())(a, b) : pairwise_distance(a, b);
  };
  Tensor dist_pos = dist(anchor, positive);
  Tensor dist_neg = dist(anchor, negative);
  if (o.swap()) dist_neg = minimum(dist_neg, dist(positive, negative));
  return reduce(op, hinge_clamp((dist_pos + o.margin()) - dist_neg), o.reduction());  // torch's order
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& o) {
  const char* op = "poisson_nll_loss";
  check_float(op, "input", input);
  check_float(op, "target", target);
  check_same_shape(op, "input", input, "target", target);
  Tensor loss = o.log_input() ? input.exp() - target * input : input - target * (input + o.eps()).log();
  if (o.full()) {
    // Stirling's approximation of log(target!), where target > 1; the log
    // reads 2 elsewhere so that no NaN or inf is computed.
    Tensor big = target.gt(1);
    Tensor t = where(big, target, Scalar(2.0));
    Tensor stirling = t * t.log() - t + (t * (2.0 * std::numbers::pi)).log() * 0.5;
    loss = loss + where(big, stirling, Scalar(0.0));
  }
  return reduce(op, loss, o.reduction());
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var_in,
                         const GaussianNLLLossFuncOptions& o) {
  const char* op = "gaussian_nll_loss";
  check_float(op, "input", input);
  check_float(op, "target", target);
  check_float(op, "var", var_in);
  BRISK_CHECK(o.reduction() != Reduction::BatchMean, op, "reduction 'batchmean' is only supported by kl_div");
  Tensor var = var_in;
  if (var.sizes() != input.sizes()) {
    bool one_short = input.dim() >= 1 && var.dim() == input.dim() - 1;
    for (int64_t d = 0; one_short && d < var.dim(); ++d) one_short = var.size(d) == input.size(d);
    int64_t mismatched = 0;
    bool one_of_size_one = var.dim() == input.dim();
    for (int64_t d = 0; one_of_size_one && d < var.dim(); ++d)
      if (var.size(d) != input.size(d)) mismatched += var.size(d);
    one_of_size_one = one_of_size_one && mismatched == 1;
    BRISK_CHECK(one_short || one_of_size_one, op, "var is of incorrect size: ", shape_str(var.sizes()),
                " for input ", shape_str(input.sizes()));
    if (one_short) var = var.unsqueeze(-1);
  }
  if (var.is_cpu()) BRISK_CHECK(!var.lt(0).any().item<bool>(), op, "var has negative entry/entries");
  // Clamped at eps without a gradient of the clamp: PyTorch clamps a clone in
  // place under no_grad, so the gradient passes as through the clone. (As
  // var + (clamp(var) - var).detach() an infinite var gave inf - inf = NaN
  // where PyTorch's loss is inf; fuzzer nn3, seed 501 case 205095.)
  Tensor clamped;
  {
    NoGradGuard no_grad;
    clamped = var.clamp_min(o.eps());
  }
  if (autograd::should_record(var))
    autograd::record("CloneBackward0", {clamped}, {var}, {},
                     [](autograd::BackwardCtx& c) -> TensorList { return {c.grad()}; });
  var = clamped;
  Tensor loss = (var.log() + (input - target).square() / var) * 0.5;
  if (o.full()) loss = loss + 0.5 * std::log(2.0 * std::numbers::pi);
  return reduce(op, loss, o.reduction());
}

namespace {

/// logsumexp over dim 0 of `x` (K, ...), -inf where every entry is -inf,
/// with a finite gradient there (0): the rows are read through a mask.
Tensor logsumexp_or_neg_inf(const Tensor& x) {
  Tensor live = x.amax({0}).gt(-std::numeric_limits<double>::infinity());
  Tensor safe = where(live.unsqueeze(0), x, Scalar(0.0));
  return where(live, safe.logsumexp({0}), Scalar(-std::numeric_limits<double>::infinity()));
}

/// Zeros (N) whose gradient is -exp(log_probs) g_n at the time steps below
/// each sample's input length (`live`), NaN there for an impossible sample
/// (`dead`, without zero_infinity: torch's exp(lp) - exp(-inf + inf)),
/// subtracted from the loss (x - 0 keeps every x, -0 included; Note [CTC as
/// a composite]).
Tensor ctc_softmax_term(const Tensor& log_probs, const Tensor& live, const Tensor& dead, const Tensor& like) {
  Tensor z = zeros({log_probs.size(1)}, like.options());
  autograd::record("CtcLossBackward0", {z}, {log_probs},
                   {autograd::save(log_probs), autograd::save(live), autograd::save(dead)},
                   [](autograd::BackwardCtx& c) -> TensorList {
                     const Tensor lp = c.saved(0), m = c.saved(1), d = c.saved(2);  // (T, N, C), (T, N, 1) bool
                     Tensor g = where(m, lp.exp() * c.grad().neg().view({1, -1, 1}), Scalar(0.0));
                     return {d.defined() ? where(d, Scalar(NAN), g) : g};
                   });
  return z;
}

std::vector<int64_t> host_lengths(const char* op, const char* what, const Tensor& t, int64_t n) {
  BRISK_CHECK(t.defined(), op, what, " is undefined");
  BRISK_CHECK(!t.is_floating_point() && t.dtype() != kBool, op, "expected integer ", what, ", got ", t.dtype());
  BRISK_CHECK(t.numel() == n, op, "expected ", n, " ", what, ", got ", t.numel());
  return t.to(Device(kCPU)).to(kInt64).contiguous().reshape({-1}).to_vector<int64_t>();
}

}  // namespace

// Note [CTC as a composite]
// alpha_t(s) over the extended target l' = (blank, l1, blank, l2, ..., blank)
// of each sample, all samples at once (N, S'): alpha_t(s) = lse(alpha_{t-1}(s),
// alpha_{t-1}(s-1), alpha_{t-1}(s-2) where l'_s is not blank and differs from
// l'_{s-2}) + log p_t(l'_s); a sample past its input length keeps its alpha.
// The loss is -lse(alpha_{T-1}(S'-1), alpha_{T-1}(S'-2)). Unreachable states
// are -inf; their lse is taken through a mask so that backward stays finite.
// Cost: T steps of a few (N, S') ops each, on any device.
// The gradient with respect to log_probs is PyTorch's, not the composite's
// exact one: PyTorch's kernel gives exp(lp) - posterior, the gradient of the
// logits of a log_softmax before it (the softmax's own term, which that
// log_softmax's backward cancels), so ctc_softmax_term adds exp(lp) g_n where
// t < input length (a zero_infinity sample gets none: its where zeroes both).
// A leaf log_probs (PyTorch's documentation's example) then has torch's
// gradient; the logits' gradients were equal before and after.
Tensor ctc_loss(const Tensor& log_probs_in, const Tensor& targets_in, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& o) {
  const char* op = "ctc_loss";
  check_float(op, "log_probs", log_probs_in);
  BRISK_CHECK(log_probs_in.dim() == 3 || log_probs_in.dim() == 2, op,
              "expected log_probs of shape (T, N, C) or (T, C), got ", shape_str(log_probs_in.sizes()));
  const bool batched = log_probs_in.dim() == 3;
  Tensor log_probs = batched ? log_probs_in : log_probs_in.unsqueeze(1);
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  BRISK_CHECK(o.blank() >= 0 && o.blank() < C, op, "blank ", o.blank(), " must be in label range [0, ", C, ")");
  BRISK_CHECK(targets_in.defined() && !targets_in.is_floating_point() && targets_in.dtype() != kBool, op,
              "expected integer targets");
  const auto in_len = host_lengths(op, "input_lengths", input_lengths, N);
  const auto tg_len = host_lengths(op, "target_lengths", target_lengths, N);
  Tensor targets = targets_in.to(Device(kCPU)).to(kInt64).contiguous();
  const bool padded = batched ? targets.dim() == 2 : false;
  if (batched) BRISK_CHECK(targets.dim() == 1 || targets.dim() == 2, op, "expected targets (N, S) or 1-d");
  const auto tv = targets.reshape({-1}).to_vector<int64_t>();
  int64_t max_len = 0, total = 0;
  for (int64_t n = 0; n < N; ++n) {
    BRISK_CHECK(in_len[n] >= 0 && in_len[n] <= T, op, "input length ", in_len[n], " of sample ", n,
                " is out of range for ", T, " time steps");
    BRISK_CHECK(tg_len[n] >= 0, op, "target length ", tg_len[n], " of sample ", n, " is negative");
    if (padded)
      BRISK_CHECK(tg_len[n] <= targets.size(1), op, "target length ", tg_len[n], " of sample ", n,
                  " exceeds the padded target length ", targets.size(1));
    max_len = std::max(max_len, tg_len[n]);
    total += tg_len[n];
  }
  if (!padded)
    BRISK_CHECK(static_cast<int64_t>(tv.size()) >= total, op, "targets hold ", tv.size(),
                " labels, fewer than the ", total, " the target lengths add up to");
  // The extended targets, the skip mask and the two final states, per sample.
  const int64_t S = 2 * max_len + 1;
  std::vector<int64_t> ext(static_cast<size_t>(N * S), o.blank()), last(static_cast<size_t>(N * 2));
  std::vector<uint8_t> skip(static_cast<size_t>(N * S), 0), start(static_cast<size_t>(N * S), 0);
  std::vector<int64_t> steps(in_len.begin(), in_len.end());
  for (int64_t n = 0, offset = 0; n < N; ++n) {
    const int64_t base = padded ? n * targets.size(1) : offset;
    for (int64_t j = 0; j < tg_len[n]; ++j) {
      const int64_t c = tv[static_cast<size_t>(base + j)];
      BRISK_CHECK(c >= 0 && c < C, op, "target ", c, " is out of bounds for ", C, " classes");
      ext[n * S + 2 * j + 1] = c;
    }
    for (int64_t s = 2; s < 2 * tg_len[n] + 1; ++s)
      skip[n * S + s] = ext[n * S + s] != o.blank() && ext[n * S + s] != ext[n * S + s - 2];
    start[n * S] = 1;
    if (tg_len[n] > 0) start[n * S + 1] = 1;
    last[2 * n] = 2 * tg_len[n];
    last[2 * n + 1] = tg_len[n] > 0 ? 2 * tg_len[n] - 1 : 2 * tg_len[n];  // the same state twice when empty
    offset += tg_len[n];
  }
  const Device dev = log_probs.device();
  const TensorOptions i64 = TensorOptions().dtype(kInt64).device(dev);
  Tensor ext_t = tensor(ext, {N, S}, i64);
  Tensor skip_t = tensor(std::vector<int64_t>(skip.begin(), skip.end()), {N, S}, i64).to(kBool);
  Tensor start_t = tensor(std::vector<int64_t>(start.begin(), start.end()), {N, S}, i64).to(kBool);
  Tensor steps_t = tensor(steps, {N, 1}, i64);
  const double ninf = -std::numeric_limits<double>::infinity();
  // lp: (T, N, S) log-probabilities of the extended targets
  Tensor lp = log_probs.gather(2, ext_t.unsqueeze(0).expand({T, N, S}));
  Tensor alpha = T > 0 ? where(start_t, lp[0], Scalar(ninf)) : full({N, S}, ninf, log_probs.options());
  for (int64_t t = 1; t < T; ++t) {
    Tensor a1 = pad(alpha, {1, 0}, ninf).narrow(1, 0, S);
    Tensor a2 = where(skip_t, pad(alpha, {2, 0}, ninf).narrow(1, 0, S), Scalar(ninf));
    Tensor next = logsumexp_or_neg_inf(stack({alpha, a1, a2}, 0)) + lp[t];
    alpha = where(steps_t.gt(t), next, alpha);
  }
  Tensor ends = alpha.gather(1, tensor(last, {N, 2}, i64));                  // (N, 2)
  Tensor two = ends;
  // An empty target has one final state: count it once.
  std::vector<int64_t> empty(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) empty[n] = tg_len[n] == 0;
  Tensor once = tensor(empty, {N, 1}, i64).eq(1).logical_and(arange(2, i64).eq(1).unsqueeze(0));
  two = where(once, Scalar(ninf), two);
  Tensor zero_steps = tensor(in_len, {N}, i64).eq(0);
  Tensor loss = logsumexp_or_neg_inf(two.t()).neg();                           // (N)
  // No time step: probability 1 for an empty target, 0 otherwise.
  loss = where(zero_steps.logical_and(tensor(tg_len, {N}, i64).eq(0)), Scalar(0.0), loss);
  loss = where(zero_steps.logical_and(tensor(tg_len, {N}, i64).gt(0)), Scalar(-ninf), loss);
  if (autograd::should_record(log_probs)) {
    Tensor live = arange(T, i64).unsqueeze(1).lt(tensor(in_len, {1, N}, i64)).unsqueeze(2);  // (T, N, 1)
    Tensor dead = o.zero_infinity() ? Tensor() : live.logical_and(loss.isinf().view({1, N, 1}));
    loss = loss - ctc_softmax_term(log_probs, live, dead, loss);
  }
  if (o.zero_infinity()) loss = where(loss.isinf(), Scalar(0.0), loss);
  switch (o.reduction()) {
    case Reduction::None: return batched ? loss : loss.squeeze(0);
    case Reduction::Sum: return loss.sum();
    case Reduction::Mean: return (loss / tensor(tg_len, {N}, i64).clamp_min(1).to(loss.dtype())).mean();
    case Reduction::BatchMean: break;
  }
  BRISK_FAIL(op, "reduction 'batchmean' is only supported by kl_div");
}

}  // namespace functional

// ---- modules ------------------------------------------------------------------------

namespace {
/// The tensor registered as buffer `name` when defined (the options then hold the registered handle).
Tensor maybe_buffer(Module& m, const char* name, const Tensor& t) {
  return t.defined() ? m.register_buffer(name, t) : t;
}
}  // namespace

#define BRISK_DETAIL_LOSS_IMPL(Name, Fn)                                                              \
  Name##Impl::Name##Impl(const decltype(options)& o) : Module(#Name), options(o) {}       \
  Tensor Name##Impl::forward(const Tensor& input, const Tensor& target) {                             \
    return F::Fn(input, target, options);                                                             \
  }
BRISK_DETAIL_LOSS_IMPL(MSELoss, mse_loss)
BRISK_DETAIL_LOSS_IMPL(L1Loss, l1_loss)
BRISK_DETAIL_LOSS_IMPL(SmoothL1Loss, smooth_l1_loss)
BRISK_DETAIL_LOSS_IMPL(HuberLoss, huber_loss)
BRISK_DETAIL_LOSS_IMPL(KLDivLoss, kl_div)
BRISK_DETAIL_LOSS_IMPL(HingeEmbeddingLoss, hinge_embedding_loss)
BRISK_DETAIL_LOSS_IMPL(SoftMarginLoss, soft_margin_loss)
BRISK_DETAIL_LOSS_IMPL(MultiLabelMarginLoss, multilabel_margin_loss)
BRISK_DETAIL_LOSS_IMPL(PoissonNLLLoss, poisson_nll_loss)
#undef BRISK_DETAIL_LOSS_IMPL

#define BRISK_DETAIL_WEIGHTED_LOSS_IMPL(Name, Fn)                                                     \
  Name##Impl::Name##Impl(const decltype(options)& o) : Module(#Name), options(o) {                    \
    options.weight(maybe_buffer(*this, "weight", options.weight()));                                  \
  }                                                                                                   \
  Tensor Name##Impl::forward(const Tensor& input, const Tensor& target) {                             \
    return F::Fn(input, target, options);                                                             \
  }
BRISK_DETAIL_WEIGHTED_LOSS_IMPL(NLLLoss, nll_loss)
BRISK_DETAIL_WEIGHTED_LOSS_IMPL(CrossEntropyLoss, cross_entropy)
BRISK_DETAIL_WEIGHTED_LOSS_IMPL(BCELoss, binary_cross_entropy)
BRISK_DETAIL_WEIGHTED_LOSS_IMPL(MultiLabelSoftMarginLoss, multilabel_soft_margin_loss)
BRISK_DETAIL_WEIGHTED_LOSS_IMPL(MultiMarginLoss, multi_margin_loss)
#undef BRISK_DETAIL_WEIGHTED_LOSS_IMPL

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& o)
    : Module("BCEWithLogitsLoss"), options(o) {
  options.weight(maybe_buffer(*this, "weight", options.weight()));
  options.pos_weight(maybe_buffer(*this, "pos_weight", options.pos_weight()));
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy_with_logits(input, target, options);
}

Tensor CTCLossImpl::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                            const Tensor& target_lengths) {
  return F::ctc_loss(log_probs, targets, input_lengths, target_lengths, options);
}

#define BRISK_DETAIL_LOSS3_IMPL(Name, Fn, A, B, C)                                                    \
  Name##Impl::Name##Impl(const decltype(options)& o) : Module(#Name), options(o) {}       \
  Tensor Name##Impl::forward(const Tensor& A, const Tensor& B, const Tensor& C) {                     \
    return F::Fn(A, B, C, options);                                                                   \
  }
BRISK_DETAIL_LOSS3_IMPL(MarginRankingLoss, margin_ranking_loss, input1, input2, target)
BRISK_DETAIL_LOSS3_IMPL(CosineEmbeddingLoss, cosine_embedding_loss, input1, input2, target)
BRISK_DETAIL_LOSS3_IMPL(TripletMarginLoss, triplet_margin_loss, anchor, positive, negative)
BRISK_DETAIL_LOSS3_IMPL(TripletMarginWithDistanceLoss, triplet_margin_with_distance_loss, anchor, positive, negative)
BRISK_DETAIL_LOSS3_IMPL(GaussianNLLLoss, gaussian_nll_loss, input, target, var)
#undef BRISK_DETAIL_LOSS3_IMPL

}  // namespace brisk::nn
