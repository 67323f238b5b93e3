// nn::functional::scaled_dot_product_attention and nn::MultiheadAttention.
//
// Three versions (attention() picks one per call; docs/design/attention.md):
// - the fused flash-attention kernel, OpId::attention_fused and
//   attention_fused_backward (Note [Flash attention on the CPU] in
//   src/backend/cpu/kernels/attention.cpp), wherever the device registered
//   it and the call needs no dropout, no weights and no mask gradient;
// - on the CPU otherwise, the version with the (B, L, S) probabilities
//   (Note [Fused attention] below);
// - the composite (scaled_dot_product_attention_math) elsewhere.
//
// Note [Fused attention]
// On the CPU in float32/float64, attention is three passes over the (B, L, S)
// scores and one autograd node:
//   P  = GEMM(q, k^T, alpha = scale)          one batched GEMM into a fresh buffer
//   P  = masked softmax of P, in place         one fused pass per row: mask
//                                              (bool, additive or causal), max,
//                                              exp, sum, normalize
//   out = GEMM(P [* dropout mask], v)
// The node (ScaledDotProductAttentionBackward0) saves q, k, v, P and the
// dropout mask; its backward is three GEMMs and one fused pass
// dS = P * (dP - rowsum(dP * P)). Written with brisk ops instead, the same
// function records about six nodes and makes several more passes over the
// scores (scale, mask, the masked-row guard, softmax backward's product and sum).
//
// Under create_graph the backward switches to the formulas written with
// brisk ops, with P recomputed from q and k by differentiable ops, so double
// backward is exact. Other devices and dtypes run the composite version
// (scaled_dot_product_attention_math); float16/bfloat16 on the CPU compute in
// float32.
#include <bit>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "core/autocast.h"
#include "brisk/autograd.h"
#include "brisk/nn/attention.h"
#include "brisk/nn/init.h"
#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/dispatch.h"
#include "core/parallel.h"
#include "profiler/record.h"

namespace brisk::nn {
namespace {

constexpr const char* kSdpa = "scaled_dot_product_attention";
constexpr const char* kMha = "MultiheadAttention";
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

std::vector<int64_t> batch_dims(const Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - 2);
}

/// Broadcasts `s` into `acc` (numpy rules); false when they do not broadcast.
bool broadcast_into(std::vector<int64_t>& acc, IntArrayRef s) {
  const size_t n = std::max(acc.size(), s.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = i < n - acc.size() ? 1 : acc[i - (n - acc.size())];
    const int64_t b = i < n - s.size() ? 1 : s[i - (n - s.size())];
    if (a != b && a != 1 && b != 1) return false;
    out[i] = a == 1 ? b : a;
  }
  acc = std::move(out);
  return true;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

std::vector<int64_t> with_tail(std::vector<int64_t> batch, int64_t a, int64_t b) {
  batch.push_back(a);
  batch.push_back(b);
  return batch;
}

/// The checked and normalized arguments of one attention call.
struct Problem {
  std::vector<int64_t> batch;  // broadcast batch shape of q, k, v and the mask
  int64_t L = 0, S = 0, E = 0, Ev = 0;
  double scale = 1.0;
  Tensor mask;  // bool (true = take part) or floating in q's dtype, its own shape; or undefined
};

Problem check_args(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                   double dropout_p, std::optional<double> scale) {
  BRISK_CHECK(q.defined() && k.defined() && v.defined(), op, "query, key and value must be defined tensors");
  BRISK_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, op,
              "expected query (..., L, E), key (..., S, E) and value (..., S, Ev) with at least 2 dims, got shapes ",
              shape_str(q.sizes()), ", ", shape_str(k.sizes()), " and ", shape_str(v.sizes()));
  BRISK_CHECK(q.is_floating_point(), op, "expected a floating point query, got ", q.dtype());
  BRISK_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), op,
              "expected query, key and value to have the same dtype, got ", q.dtype(), ", ", k.dtype(), " and ",
              v.dtype());
  BRISK_CHECK(k.device() == q.device() && v.device() == q.device(), op,
              "expected query, key and value on the same device, got ", q.device(), ", ", k.device(), " and ",
              v.device());
  Problem p;
  p.L = q.size(-2);
  p.E = q.size(-1);
  p.S = k.size(-2);
  p.Ev = v.size(-1);
  BRISK_CHECK(k.size(-1) == p.E, op, "query ", shape_str(q.sizes()), " and key ", shape_str(k.sizes()),
              ": embedding dims ", p.E, " and ", k.size(-1), " differ");
  BRISK_CHECK(v.size(-2) == p.S, op, "key ", shape_str(k.sizes()), " and value ", shape_str(v.sizes()),
              ": sequence lengths ", p.S, " and ", v.size(-2), " differ");
  BRISK_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0, op, "dropout_p must be in [0, 1], got ", dropout_p);
  p.batch = batch_dims(q);
  BRISK_CHECK(broadcast_into(p.batch, batch_dims(k)) && broadcast_into(p.batch, batch_dims(v)), op,
              "the batch dims of query ", shape_str(q.sizes()), ", key ", shape_str(k.sizes()), " and value ",
              shape_str(v.sizes()), " cannot be broadcast together");
  if (mask.defined()) {
    BRISK_CHECK(mask.dtype() == kBool || mask.is_floating_point(), op,
                "expected attn_mask of dtype bool or floating point, got ", mask.dtype());
    BRISK_CHECK(mask.device() == q.device(), op, "expected attn_mask on ", q.device(), ", got ", mask.device());
    std::vector<int64_t> full = with_tail(p.batch, p.L, p.S);
    const bool ok = broadcast_into(full, mask.sizes()) && full[full.size() - 2] == p.L && full.back() == p.S;
    BRISK_CHECK(ok, op, "attn_mask of shape ", shape_str(mask.sizes()), " cannot be broadcast to the scores' shape ",
                shape_str(with_tail(p.batch, p.L, p.S)), " (..., L, S)");
    p.batch.assign(full.begin(), full.end() - 2);
    p.mask = mask.dtype() == kBool ? mask : mask.to(q.dtype());
  }
  p.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(p.E));
  return p;
}

// ---- the composite version -------------------------------------------------------

/// Where the causal mask keeps scores: key j <= query i (top-left aligned); (L, S) bool.
Tensor causal_keep(int64_t L, int64_t S, Device device) {
  TensorOptions o = TensorOptions(kInt64).device(device);
  return arange(S, o).unsqueeze(0).le(arange(L, o).unsqueeze(1));
}

/// softmax(q k^T * scale + mask) with brisk ops; rows with every key masked
/// give zeros, or NaN with nan_dead (MultiheadAttention's weights path, whose
/// plain softmax PyTorch runs). Broadcasts batch dims like matmul.
Tensor probs_math(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal, double scale,
                  bool nan_dead = false) {
  Tensor s = q.matmul(k.transpose(-2, -1)) * scale;
  const int64_t L = s.size(-2), S = s.size(-1);
  if (causal) s = where(causal_keep(L, S, s.device()), s, Scalar(-kInf));
  if (mask.defined()) s = mask.dtype() == kBool ? where(mask, s, Scalar(-kInf)) : s + mask;
  if (S == 0 || s.numel() == 0 || nan_dead) return s.softmax(-1);
  const Tensor dead = s.amax(-1, /*keepdim=*/true).eq(-kInf);  // every key masked
  return where(dead, Scalar(0.0), where(dead, Scalar(0.0), s).softmax(-1));
}

/// Keeps each probability with probability 1 - p, scaled by 1 / (1 - p).
Tensor dropout_mask(const Tensor& like, double p) {
  if (p >= 1.0) return zeros_like(like);
  Tensor d = empty_like(like).bernoulli_(1.0 - p);
  d.mul_(1.0 / (1.0 - p));
  return d;
}

struct AttnOut {
  Tensor out, weights;
};

AttnOut attention_math(const Problem& pr, const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p,
                       bool causal, bool need_weights) {
  Tensor P = probs_math(q, k, pr.mask, causal, pr.scale, need_weights);
  if (dropout_p > 0.0) {
    Tensor D;
    {
      NoGradGuard ng;
      D = dropout_mask(P, dropout_p);
    }
    P = P * D;
  }
  Tensor out = P.matmul(v);
  // A mask with more batch dims than q, k and v broadcasts only through P.
  const std::vector<int64_t> shape = with_tail(pr.batch, pr.L, pr.Ev);
  if (!(out.sizes() == IntArrayRef(shape))) out = out.expand(shape);
  return {out, need_weights ? P : Tensor()};
}

// ---- the fused CPU version ---------------------------------------------------------

/// out (B, m, n) = alpha * a (B, m, k) @ b (B, k, n) with brisk's GEMM kernel
/// (any strides; no autograd). out is fresh and contiguous.
void gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha) {
  if (out.numel() == 0) return;
  if (a.size(2) == 0) {
    Tensor(out).zero_();
    return;
  }
  kernel<OpId::gemm>(out.device().type, kSdpa)(out, a, b, Scalar(alpha), Scalar(0.0));
}

// Note [Attention row kernels]
// The two row loops below are the only arithmetic of attention outside the
// GEMMs. This file is compiled for the baseline ISA (the per-ISA kernel files
// are reached through the op table, which has no slot for them), so on x86-64
// GCC/Clang also build AVX2 and AVX-512 clones of the row functions and pick
// one at load time (target_clones). The loops are written to vectorize: no
// calls, no branches, no integer max.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(BRISK_NO_TARGET_CLONES)
#define BRISK_ROW_KERNEL __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define BRISK_ROW_KERNEL
#endif

/// exp for the softmax pass: 2^n * e^r with n = round(x / ln2),
/// r = x - n ln2 (|r| <= ln2 / 2), and a degree-6 polynomial for e^r
/// (relative error about 1e-7). x is clamped to [-88, 88], so n is in
/// [-127, 127]: exp(-inf) = 0, results below ~1e-38 flush to 0.
[[gnu::always_inline]] inline float softmax_exp(float x) {
  const float xc = std::min(std::max(x, -88.0f), 88.0f);
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  n = n == n ? n : 0.0f;  // NaN: keep the int conversion below defined (e stays NaN)
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;  // ln2 in two parts: r stays exact
  float e = 1.9875691500e-4f;
  e = e * r + 1.3981999507e-3f;
  e = e * r + 8.3334519073e-3f;
  e = e * r + 4.1665795894e-2f;
  e = e * r + 1.6666665459e-1f;
  e = e * r + 5.0000001201e-1f;
  e = e * r * r + r + 1.0f;
  return e * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);  // 2^n; n = -127 gives 0
}
[[gnu::always_inline]] inline double softmax_exp(double x) { return std::exp(x); }

/// One row of scores x[0, S): adds the mask to the first n (add[j * ss] or
/// keep[j * ss] == false -> -inf; either may be null), softmax over them,
/// zeros for the rest. A row with no key left gets zeros (NaN if it holds a
/// NaN).
template <class T>
[[gnu::always_inline]] inline void softmax_row_impl(T* x, int64_t n, int64_t S, const T* add, const bool* keep,
                                                    int64_t ss, bool nan_dead) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  if (add && ss == 1) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) x[j] += add[j];
  } else if (add) {
    for (int64_t j = 0; j < n; ++j) x[j] += add[j * ss];
  } else if (keep && ss == 1) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) x[j] = keep[j] ? x[j] : kNegInf;
  } else if (keep) {
    for (int64_t j = 0; j < n; ++j) x[j] = keep[j * ss] ? x[j] : kNegInf;
  }
  T mx = kNegInf;
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x[j]);  // NaNs are skipped here, caught by the sum
  if (mx == kNegInf) {  // every key masked (or NaN)
    bool nan = false;
    for (int64_t j = 0; j < n; ++j) nan |= x[j] != x[j];
    const T fill = nan || nan_dead ? std::numeric_limits<T>::quiet_NaN() : T(0);
    for (int64_t j = 0; j < S; ++j) x[j] = fill;
    return;
  }
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    const T e = softmax_exp(x[j] - mx);
    x[j] = e;
    sum += e;
  }
  const T inv = T(1) / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) x[j] *= inv;
  for (int64_t j = n; j < S; ++j) x[j] = 0;
}
BRISK_ROW_KERNEL void softmax_row(float* x, int64_t n, int64_t S, const float* add, const bool* keep, int64_t ss,
                                  bool nan_dead) {
  softmax_row_impl(x, n, S, add, keep, ss, nan_dead);
}
BRISK_ROW_KERNEL void softmax_row(double* x, int64_t n, int64_t S, const double* add, const bool* keep, int64_t ss,
                                  bool nan_dead) {
  softmax_row_impl(x, n, S, add, keep, ss, nan_dead);
}

/// One row of dS = P * (dP - sum(dP * P)), in place on d.
template <class T>
[[gnu::always_inline]] inline void softmax_backward_row_impl(T* d, const T* p, int64_t S) {
  T dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int64_t j = 0; j < S; ++j) dot += d[j] * p[j];
#pragma omp simd
  for (int64_t j = 0; j < S; ++j) d[j] = p[j] * (d[j] - dot);
}
BRISK_ROW_KERNEL void softmax_backward_row(float* d, const float* p, int64_t S) { softmax_backward_row_impl(d, p, S); }
BRISK_ROW_KERNEL void softmax_backward_row(double* d, const double* p, int64_t S) {
  softmax_backward_row_impl(d, p, S);
}

/// The mask as the row kernel reads it: element (b, i, j) at
/// data + offset[b] + i * sl + j * ss.
struct MaskRows {
  enum Kind { None, Bool, Additive } kind = None;
  const void* data = nullptr;
  std::vector<int64_t> offset;
  int64_t sl = 0, ss = 0;
};

MaskRows mask_rows(const Problem& pr, const Tensor& expanded) {
  MaskRows m;
  if (!expanded.defined()) return m;
  m.kind = expanded.dtype() == kBool ? MaskRows::Bool : MaskRows::Additive;
  m.data = expanded.data_ptr();
  const int64_t nb = static_cast<int64_t>(pr.batch.size());
  m.sl = expanded.stride(nb);
  m.ss = expanded.stride(nb + 1);
  const int64_t B = product(pr.batch);
  m.offset.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    int64_t rest = b, off = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      const int64_t size = pr.batch[static_cast<size_t>(d)];
      off += (rest % size) * expanded.stride(d);
      rest /= size;
    }
    m.offset[static_cast<size_t>(b)] = off;
  }
  return m;
}

/// In place on the contiguous scores s (B, L, S), already scaled: adds the
/// mask (and the causal mask), then softmax over each row; a row with every
/// key masked is 0, or NaN with nan_dead (as probs_math).
template <class T>
void masked_softmax_rows(T* s, int64_t B, int64_t L, int64_t S, const MaskRows& m, bool causal, bool nan_dead) {
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(S, 1));
  parallel_for(0, B * L, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / L, i = r % L;
      const int64_t n = causal ? std::min(i + 1, S) : S;  // keys that may take part
      const int64_t at = m.kind == MaskRows::None ? 0 : m.offset[static_cast<size_t>(b)] + i * m.sl;
      const T* add = m.kind == MaskRows::Additive ? static_cast<const T*>(m.data) + at : nullptr;
      const bool* keep = m.kind == MaskRows::Bool ? static_cast<const bool*>(m.data) + at : nullptr;
      softmax_row(s + r * S, n, S, add, keep, m.ss, nan_dead);
    }
  });
}

/// In place on dp (B*L rows of S): dS = P * (dP - rowsum(dP * P)), the
/// gradient of the (scaled, masked) scores.
template <class T>
void softmax_backward_rows(T* dp, const T* p, int64_t rows, int64_t S) {
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(S, 1));
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) softmax_backward_row(dp + r * S, p + r * S, S);
  });
}

/// t (..., a, b) broadcast to batch + (a, b) and flattened to (B, a, b):
/// a view when the layout allows. Records when t requires grad.
Tensor flat3(const Tensor& t, const std::vector<int64_t>& batch, int64_t B) {
  const std::vector<int64_t> full = with_tail(batch, t.size(-2), t.size(-1));
  Tensor e = t.sizes() == IntArrayRef(full) ? t : t.expand(full);
  return e.reshape({B, t.size(-2), t.size(-1)});
}

/// The gradients of the fused attention, for the inputs whose `needs` is set:
/// {dq, dk, dv, dmask (B, L, S)}. q, k, v are the 3-D inputs, P the
/// probabilities before dropout, D the scaled dropout mask (or undefined),
/// mask3 the mask as (B, L, S) (for the create_graph path).
TensorList attention_backward(const Tensor& gO, const Tensor& gW, const Tensor& q, const Tensor& k, const Tensor& v,
                              Tensor P, const Tensor& D, const Tensor& mask3, bool causal, double scale,
                              const bool needs[4], bool nan_dead = false) {
  const bool need_ds = needs[0] || needs[1] || needs[3];
  TensorList g(4);
  if (GradMode::is_enabled()) {
    // create_graph: formulas with brisk ops; P recomputed so that its
    // dependence on q, k and the mask is recorded too.
    P = probs_math(q, k, mask3, causal, scale, nan_dead);
    const Tensor Pd = D.defined() ? P * D : P;
    if (needs[2]) g[2] = Pd.transpose(1, 2).bmm(gO);
    if (need_ds) {
      Tensor dP = gO.bmm(v.transpose(1, 2));
      if (gW.defined()) dP = dP + gW;
      if (D.defined()) dP = dP * D;
      const Tensor dS = P * (dP - (dP * P).sum(-1, /*keepdim=*/true));
      if (needs[0]) g[0] = dS.bmm(k) * scale;
      if (needs[1]) g[1] = dS.transpose(1, 2).bmm(q) * scale;
      if (needs[3]) g[3] = dS;
    }
    return g;
  }
  const int64_t B = P.size(0), L = P.size(1), S = P.size(2);
  if (needs[2]) {
    g[2] = empty({B, S, v.size(2)}, v.options());
    gemm(g[2], (D.defined() ? P * D : P).transpose(1, 2), gO, 1.0);
  }
  if (need_ds) {
    Tensor dS = empty({B, L, S}, P.options());
    gemm(dS, gO, v.transpose(1, 2), 1.0);
    if (gW.defined()) dS.add_(gW);
    if (D.defined()) dS.mul_(D);
    if (dS.numel() > 0) {
      if (P.dtype() == kFloat)
        softmax_backward_rows<float>(dS.data_ptr<float>(), P.data_ptr<float>(), B * L, S);
      else
        softmax_backward_rows<double>(dS.data_ptr<double>(), P.data_ptr<double>(), B * L, S);
    }
    if (needs[0]) {
      g[0] = empty({B, L, q.size(2)}, q.options());
      gemm(g[0], dS, k, scale);
    }
    if (needs[1]) {
      g[1] = empty({B, S, k.size(2)}, k.options());
      gemm(g[1], dS.transpose(1, 2), q, scale);
    }
    if (needs[3]) g[3] = dS;
  }
  return g;
}

AttnOut attention_materialized(const Problem& pr, const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p,
                        bool causal, bool need_weights) {
  const int64_t B = product(pr.batch), L = pr.L, S = pr.S, Ev = pr.Ev;
  const Tensor q3 = flat3(q, pr.batch, B), k3 = flat3(k, pr.batch, B), v3 = flat3(v, pr.batch, B);
  Tensor P, D, Pd, out;
  {
    NoGradGuard ng;
    P = empty({B, L, S}, q.options());  // scores, then probabilities, in place
    gemm(P, q3, k3.transpose(1, 2), pr.scale);
    const Tensor mask_e = pr.mask.defined() ? pr.mask.expand(with_tail(pr.batch, L, S)) : Tensor();
    const MaskRows m = mask_rows(pr, mask_e);
    if (P.numel() > 0) {
      if (q.dtype() == kFloat)
        masked_softmax_rows<float>(P.data_ptr<float>(), B, L, S, m, causal, need_weights);
      else
        masked_softmax_rows<double>(P.data_ptr<double>(), B, L, S, m, causal, need_weights);
    }
    if (dropout_p > 0.0) {
      D = dropout_mask(P, dropout_p);
      Pd = P * D;
    } else {
      Pd = P;
    }
    out = empty({B, L, Ev}, q.options());
    gemm(out, Pd, v3, 1.0);
  }
  const Tensor mask_in = pr.mask.defined() && pr.mask.requires_grad() ? pr.mask : Tensor();
  if (autograd::should_record(q3, k3, v3, mask_in)) {
    using namespace autograd;
    TensorList outputs = need_weights ? TensorList{out, Pd} : TensorList{out};
    TensorList inputs = {q3, k3, v3};
    if (mask_in.defined()) inputs.push_back(mask_in);
    const size_t n_in = inputs.size();
    const bool p_is_output = need_weights && !D.defined();
    const std::vector<int64_t> batch = pr.batch;
    const Tensor mask = pr.mask;
    const double scale = pr.scale;
    record("ScaledDotProductAttentionBackward0", outputs, inputs,
           {save(q3), save(k3), save(v3), SaveSpec{&P, p_is_output}, save(D), save(mask)},
           [=](BackwardCtx& c) -> TensorList {
             const Tensor gW = need_weights ? c.grad(1) : Tensor();
             const bool needs[4] = {c.needs(0), c.needs(1), c.needs(2), n_in > 3 && c.needs(3)};
             const Tensor P = c.saved(3);
             Tensor mask3;  // only the create_graph path recomputes P from the mask
             if (GradMode::is_enabled()) {
               const Tensor m = c.saved(5);
               if (m.defined()) mask3 = flat3(m, batch, P.size(0));
             }
             TensorList g = attention_backward(c.grad(0), gW, c.saved(0), c.saved(1), c.saved(2), P, c.saved(4),
                                               mask3, causal, scale, needs, need_weights);
             if (g[3].defined()) g[3] = g[3].view(with_tail(batch, P.size(1), P.size(2)));
             g.resize(n_in);
             return g;
           });
  }
  AttnOut r;
  r.out = out.view(with_tail(pr.batch, L, Ev));
  if (need_weights) r.weights = Pd.view(with_tail(pr.batch, L, S));
  return r;
}

// ---- the flash version (OpId::attention_fused) --------------------------------------

/// t broadcast to batch + its last two dims (a view) and laid out as the
/// fused kernel reads it: unit stride along the last dim, rows apart by at
/// least a row's length (a copy otherwise). Records when t requires grad, so
/// the gradient of the broadcast is summed by autograd.
Tensor kernel_view(const Tensor& t, const std::vector<int64_t>& batch) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const bool ok = (cols <= 1 || t.stride(-1) == 1) && (rows <= 1 || t.stride(-2) >= std::max<int64_t>(1, cols));
  const Tensor c = ok ? t : t.contiguous();
  const std::vector<int64_t> full = with_tail(batch, rows, cols);
  return c.sizes() == IntArrayRef(full) ? c : c.expand(full);
}

/// Attention through the fused kernel: blocks of scores, online softmax and
/// the value product per block, no (L, S) buffer; the backward recomputes the
/// scores per block from the saved logsumexp (Note [Flash attention on the
/// CPU] in src/backend/cpu/kernels/attention.cpp). No dropout, no weights, no
/// mask gradient: attention() sends those to the versions above.
Tensor attention_flash(const Problem& pr, const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const int64_t L = pr.L, S = pr.S, Ev = pr.Ev;
  const Tensor qe = kernel_view(q, pr.batch), ke = kernel_view(k, pr.batch), ve = kernel_view(v, pr.batch);
  const Tensor mask_e = pr.mask.defined() ? pr.mask.expand(with_tail(pr.batch, L, S)) : Tensor();
  const DeviceType dev = q.device().type;
  Tensor out, lse;
  {
    NoGradGuard ng;
    out = empty(with_tail(pr.batch, L, Ev), q.options());
    std::vector<int64_t> lse_shape = pr.batch;
    lse_shape.push_back(L);
    lse = empty(lse_shape, q.options());
    AttentionArgs a;
    a.q = qe, a.k = ke, a.v = ve, a.mask = mask_e, a.out = out, a.lse = lse;
    a.scale = pr.scale, a.causal = causal;
    kernel<OpId::attention_fused>(dev, kSdpa)(a);
  }
  if (autograd::should_record(qe, ke, ve)) {
    using namespace autograd;
    const std::vector<int64_t> batch = pr.batch;
    const double scale = pr.scale;
    record("ScaledDotProductFlashAttentionBackward0", {out}, {qe, ke, ve},
           {save(qe), save(ke), save(ve), save_output(out), save(lse), save(mask_e)},
           [=](BackwardCtx& c) -> TensorList {
             const Tensor qs = c.saved(0), ks = c.saved(1), vs = c.saved(2), m = c.saved(5);
             if (GradMode::is_enabled()) {
               // create_graph: the formulas with brisk ops (exact double backward).
               const int64_t B = product(batch), E = qs.size(-1);
               const Tensor mask3 = m.defined() ? m.reshape({B, L, S}) : Tensor();
               const bool needs[4] = {c.needs(0), c.needs(1), c.needs(2), false};
               TensorList g = attention_backward(c.grad(0).reshape({B, L, Ev}), Tensor(), qs.reshape({B, L, E}),
                                                 ks.reshape({B, S, E}), vs.reshape({B, S, Ev}), Tensor(), Tensor(),
                                                 mask3, causal, scale, needs);
               const Tensor* in[3] = {&qs, &ks, &vs};
               for (int i = 0; i < 3; ++i)
                 if (g[i].defined()) g[i] = g[i].view(in[i]->sizes());
               g.resize(3);
               return g;
             }
             AttentionArgs a;
             a.q = qs, a.k = ks, a.v = vs, a.mask = m, a.out = c.saved(3), a.lse = c.saved(4);
             a.grad_out = kernel_view(c.grad(0), batch);
             a.grad_q = empty(qs.sizes(), qs.options());
             a.grad_k = empty(ks.sizes(), ks.options());
             a.grad_v = empty(vs.sizes(), vs.options());
             a.scale = scale, a.causal = causal;
             kernel<OpId::attention_fused_backward>(dev, kSdpa)(a);
             return {a.grad_q, a.grad_k, a.grad_v};
           });
  }
  return out;
}

/// Dispatches one attention call (the arguments already checked): the fused
/// kernel where the device has one and the call needs neither dropout, nor
/// the weights, nor the mask's gradient; else, on the CPU, the version with
/// the (B, L, S) probabilities above; else the composite.
AttnOut attention(const Problem& pr, const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p, bool causal,
                  bool need_weights) {
  const DeviceType dev = q.device().type;
  const bool fusable = dropout_p == 0.0 && !need_weights && !(pr.mask.defined() && pr.mask.requires_grad()) &&
                       supports(OpId::attention_fused, dev) &&
                       supports(OpId::attention_fused_backward, dev);
  if (fusable && (q.dtype() == kFloat || q.dtype() == kDouble)) return {attention_flash(pr, q, k, v, causal), {}};
  if (fusable && is_reduced_float(q.dtype())) {
    Problem pf = pr;
    if (pf.mask.defined() && pf.mask.dtype() != kBool) pf.mask = pf.mask.to(kFloat);
    return {attention_flash(pf, q.to(kFloat), k.to(kFloat), v.to(kFloat), causal).to(q.dtype()), {}};
  }
  if (q.is_cpu() && (q.dtype() == kFloat || q.dtype() == kDouble))
    return attention_materialized(pr, q, k, v, dropout_p, causal, need_weights);
  if (q.is_cpu() && is_reduced_float(q.dtype())) {
    Problem pf = pr;
    if (pf.mask.defined() && pf.mask.dtype() != kBool) pf.mask = pf.mask.to(kFloat);
    AttnOut r = attention_materialized(pf, q.to(kFloat), k.to(kFloat), v.to(kFloat), dropout_p, causal, need_weights);
    r.out = r.out.to(q.dtype());
    if (r.weights.defined()) r.weights = r.weights.to(q.dtype());
    return r;
  }
  return attention_math(pr, q, k, v, dropout_p, causal, need_weights);
}

/// Grouped-query attention (enable_gqa): query (..., Hq, L, E) and key/value
/// (..., Hkv, S, *) with Hq = g * Hkv, query head h reading key/value head
/// h / g (PyTorch's repeat_interleave). Viewed as an ordinary broadcast:
/// query (..., Hkv, g, L, E), key/value (..., Hkv, 1, S, *); no copies.
struct Gqa {
  Tensor q, k, v, mask;
  int64_t hq = -1;  // >= 0 when split
};

std::vector<int64_t> split_dim3(IntArrayRef s, int64_t a, int64_t b) {
  std::vector<int64_t> r(s.begin(), s.end() - 3);
  r.push_back(a);
  r.push_back(b);
  r.push_back(s[s.size() - 2]);
  r.push_back(s[s.size() - 1]);
  return r;
}

Gqa gqa_split(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool enable_gqa) {
  Gqa g{q, k, v, mask};
  if (!enable_gqa) return g;
  BRISK_CHECK(q.defined() && k.defined() && v.defined(), kSdpa, "query, key and value must be defined tensors");
  BRISK_CHECK(q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3, kSdpa,
              "enable_gqa expects query (..., Hq, L, E), key (..., Hkv, S, E) and value (..., Hkv, S, Ev), got shapes ",
              shape_str(q.sizes()), ", ", shape_str(k.sizes()), " and ", shape_str(v.sizes()));
  const int64_t hq = q.size(-3), hk = k.size(-3);
  BRISK_CHECK(v.size(-3) == hk, kSdpa, "enable_gqa: key and value must have the same number of heads, got ", hk,
              " and ", v.size(-3));
  BRISK_CHECK(hk > 0 && hq % hk == 0, kSdpa, "enable_gqa: the query's ", hq,
              " heads must be a multiple of the key's and value's ", hk);
  if (hq == hk) return g;
  const int64_t group = hq / hk;
  g.q = q.reshape(split_dim3(q.sizes(), hk, group));
  g.k = k.unsqueeze(-3);
  g.v = v.unsqueeze(-3);
  if (mask.defined() && mask.dim() >= 3) {
    BRISK_CHECK(mask.size(-3) == hq || mask.size(-3) == 1, kSdpa, "attn_mask of shape ", shape_str(mask.sizes()),
                " does not broadcast to the query's ", hq, " heads");
    g.mask = mask.size(-3) == hq ? mask.reshape(split_dim3(mask.sizes(), hk, group)) : mask.unsqueeze(-3);
  }
  g.hq = hq;
  return g;
}

/// The output (..., Hkv, g, L, Ev) of a split call back to (..., Hq, L, Ev).
Tensor gqa_merge(const Tensor& out, const Gqa& g) {
  if (g.hq < 0) return out;
  std::vector<int64_t> s(out.sizes().begin(), out.sizes().end() - 4);
  s.push_back(g.hq);
  s.push_back(out.size(-2));
  s.push_back(out.size(-1));
  return out.reshape(s);
}

void check_not_both(const Tensor& attn_mask, bool is_causal) {
  BRISK_CHECK(!(is_causal && attn_mask.defined()), kSdpa,
              "attn_mask must not be given together with is_causal=true; fold the causal mask into attn_mask");
}

}  // namespace

namespace functional {

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa) {
  BRISK_AUTOCAST(scaled_dot_product_attention, scaled_dot_product_attention, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
  BRISK_PROFILE_OP("scaled_dot_product_attention", query, key, value, attn_mask);
  check_not_both(attn_mask, is_causal);
  const Gqa g = gqa_split(query, key, value, attn_mask, enable_gqa);
  const Problem pr = check_args(kSdpa, g.q, g.k, g.v, g.mask, dropout_p, scale);
  return gqa_merge(attention(pr, g.q, g.k, g.v, dropout_p, is_causal, false).out, g);
}

Tensor scaled_dot_product_attention_math(const Tensor& query, const Tensor& key, const Tensor& value,
                                         const Tensor& attn_mask, double dropout_p, bool is_causal,
                                         std::optional<double> scale, bool enable_gqa) {
  check_not_both(attn_mask, is_causal);
  const Gqa g = gqa_split(query, key, value, attn_mask, enable_gqa);
  const Problem pr = check_args(kSdpa, g.q, g.k, g.v, g.mask, dropout_p, scale);
  return gqa_merge(attention_math(pr, g.q, g.k, g.v, dropout_p, is_causal, false).out, g);
}

}  // namespace functional

// ---- MultiheadAttention ------------------------------------------------------------------

MultiheadAttentionImpl::MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                                       bool add_bias_kv, bool add_zero_attn, std::optional<int64_t> kdim,
                                       std::optional<int64_t> vdim, bool batch_first, TensorOptions opts)
    : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)
                             .dropout(dropout)
                             .bias(bias)
                             .add_bias_kv(add_bias_kv)
                             .add_zero_attn(add_zero_attn)
                             .kdim(kdim)
                             .vdim(vdim)
                             .batch_first(batch_first),
                         opts) {}

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& o, TensorOptions opts)
    : Module("MultiheadAttention"),
      options(o),
      embed_dim(o.embed_dim()),
      kdim(o.kdim().value_or(o.embed_dim())),
      vdim(o.vdim().value_or(o.embed_dim())),
      num_heads(o.num_heads()),
      head_dim(0),
      qkv_same_embed_dim(false) {
  BRISK_CHECK(embed_dim > 0 && num_heads > 0, kMha, "embed_dim and num_heads must be positive, got ", embed_dim,
              " and ", num_heads);
  BRISK_CHECK(embed_dim % num_heads == 0, kMha, "embed_dim ", embed_dim, " must be divisible by num_heads ",
              num_heads);
  BRISK_CHECK(kdim > 0 && vdim > 0, kMha, "kdim and vdim must be positive, got ", kdim, " and ", vdim);
  BRISK_CHECK(o.dropout() >= 0.0 && o.dropout() <= 1.0, kMha, "dropout must be in [0, 1], got ", o.dropout());
  head_dim = embed_dim / num_heads;
  qkv_same_embed_dim = kdim == embed_dim && vdim == embed_dim;
  const int64_t E = embed_dim;
  if (qkv_same_embed_dim) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * E, E}, opts));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({E, E}, opts));
    k_proj_weight = register_parameter("k_proj_weight", empty({E, kdim}, opts));
    v_proj_weight = register_parameter("v_proj_weight", empty({E, vdim}, opts));
  }
  if (o.bias()) in_proj_bias = register_parameter("in_proj_bias", empty({3 * E}, opts));
  out_proj = register_module("out_proj", Linear(E, E, o.bias(), opts));
  if (o.add_bias_kv()) {
    bias_k = register_parameter("bias_k", empty({1, 1, E}, opts));
    bias_v = register_parameter("bias_v", empty({1, 1, E}, opts));
  }
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  if (qkv_same_embed_dim) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
  if (bias_k.defined()) {
    init::xavier_normal_(bias_k);
    init::xavier_normal_(bias_v);
  }
}

std::string MultiheadAttentionImpl::extra_repr() const {
  std::ostringstream os;
  os << "embed_dim=" << embed_dim << ", num_heads=" << num_heads;
  if (options.dropout() != 0.0) os << ", dropout=" << options.dropout();
  if (!qkv_same_embed_dim) os << ", kdim=" << kdim << ", vdim=" << vdim;
  if (options.add_bias_kv()) os << ", add_bias_kv=true";
  if (options.add_zero_attn()) os << ", add_zero_attn=true";
  if (options.batch_first()) os << ", batch_first=true";
  return os.str();
}

namespace {

/// A key_padding_mask or attn_mask as an additive float mask (PyTorch's
/// _canonical_mask): bool true -> -inf, floating converted to dtype.
Tensor canonical_mask(const Tensor& m, const char* what, ScalarType dtype) {
  if (!m.defined()) return m;
  if (m.dtype() == kBool) return where(m, Scalar(-kInf), Scalar(0.0)).to(dtype);
  BRISK_CHECK(m.is_floating_point(), kMha, "only bool and floating types of ", what, " are supported, got ",
              m.dtype());
  return m.to(dtype);
}

}  // namespace

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                       const Tensor& key_padding_mask, bool need_weights,
                                                       const Tensor& attn_mask, bool average_attn_weights,
                                                       bool is_causal) {
  BRISK_CHECK(query.defined() && key.defined() && value.defined(), kMha,
              "query, key and value must be defined tensors");
  const bool batched = query.dim() == 3;
  BRISK_CHECK(query.dim() == 3 || query.dim() == 2, kMha,
              "query should be unbatched 2-D (L, E) or batched 3-D, got a ", query.dim(), "-D tensor of shape ",
              shape_str(query.sizes()));
  BRISK_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), kMha, "for a ", query.dim(),
              "-D query, key and value must be ", query.dim(), "-D too, got shapes ", shape_str(key.sizes()),
              " and ", shape_str(value.sizes()));
  BRISK_CHECK(query.is_floating_point(), kMha, "expected a floating point query, got ", query.dtype());
  if (key_padding_mask.defined())
    BRISK_CHECK(key_padding_mask.dim() == (batched ? 2 : 1), kMha, "for a ", batched ? "batched" : "unbatched",
                " query, key_padding_mask must be ", batched ? "2-D (N, S)" : "1-D (S)", ", got shape ",
                shape_str(key_padding_mask.sizes()));
  if (attn_mask.defined())
    BRISK_CHECK(attn_mask.dim() == 2 || attn_mask.dim() == 3, kMha,
                "attn_mask must be 2-D (L, S) or 3-D (N * num_heads, L, S), got shape ", shape_str(attn_mask.sizes()));

  // Work in (L, N, E).
  const bool bf = batched && options.batch_first();
  Tensor q = bf ? query.transpose(0, 1) : query, k = bf ? key.transpose(0, 1) : key,
         v = bf ? value.transpose(0, 1) : value;
  Tensor kpm = key_padding_mask;
  if (!batched) {
    q = q.unsqueeze(1), k = k.unsqueeze(1), v = v.unsqueeze(1);
    if (kpm.defined()) kpm = kpm.unsqueeze(0);
  }
  const int64_t L = q.size(0), N = q.size(1), E = embed_dim, H = num_heads, hd = head_dim;
  int64_t S = k.size(0);
  BRISK_CHECK(q.size(2) == E, kMha, "query ", shape_str(query.sizes()), ": expected embedding dim ", E, ", got ",
              q.size(2));
  BRISK_CHECK(k.size(2) == kdim && v.size(2) == vdim, kMha, "key ", shape_str(key.sizes()), " and value ",
              shape_str(value.sizes()), ": expected feature dims kdim=", kdim, " and vdim=", vdim);
  BRISK_CHECK(k.size(1) == N && v.size(1) == N && v.size(0) == S, kMha, "key ", shape_str(key.sizes()),
              " and value ", shape_str(value.sizes()), " do not match query ", shape_str(query.sizes()),
              " (expected the same batch size, and keys and values of the same length)");
  if (kpm.defined())
    BRISK_CHECK(kpm.size(0) == N && kpm.size(1) == S, kMha, "key_padding_mask of shape ",
                shape_str(key_padding_mask.sizes()), " does not match batch size ", N, " and source length ", S);
  if (attn_mask.defined()) {
    const bool ok = attn_mask.dim() == 2 ? attn_mask.size(0) == L && attn_mask.size(1) == S
                                         : attn_mask.size(0) == N * H && attn_mask.size(1) == L &&
                                               attn_mask.size(2) == S;
    BRISK_CHECK(ok, kMha, "attn_mask of shape ", shape_str(attn_mask.sizes()), " does not match (L, S) = (", L, ", ",
                S, ") or (N * num_heads, L, S) = (", N * H, ", ", L, ", ", S, ")");
  }

  // Input projections: one GEMM for self-attention (query, key and value the same tensor).
  const Tensor& b = in_proj_bias;
  auto bias_part = [&](int64_t i) { return b.defined() ? b.narrow(0, i * E, E) : Tensor(); };
  if (qkv_same_embed_dim && query.is_same(key) && key.is_same(value)) {
    std::vector<Tensor> qkv = F::linear(q, in_proj_weight, b).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else if (qkv_same_embed_dim) {
    q = F::linear(q, in_proj_weight.narrow(0, 0, E), bias_part(0));
    k = F::linear(k, in_proj_weight.narrow(0, E, E), bias_part(1));
    v = F::linear(v, in_proj_weight.narrow(0, 2 * E, E), bias_part(2));
  } else {
    q = F::linear(q, q_proj_weight, bias_part(0));
    k = F::linear(k, k_proj_weight, bias_part(1));
    v = F::linear(v, v_proj_weight, bias_part(2));
  }

  const ScalarType dt = q.dtype();
  Tensor am = canonical_mask(attn_mask, "attn_mask", dt);
  kpm = canonical_mask(kpm, "key_padding_mask", dt);
  if (bias_k.defined()) {  // one more key and value, at the end of the sequence
    k = cat({k, bias_k.expand({1, N, E})}, 0);
    v = cat({v, bias_v.expand({1, N, E})}, 0);
    if (am.defined()) am = pad(am, {0, 1});
    if (kpm.defined()) kpm = pad(kpm, {0, 1});
    ++S;
  }
  // Heads: (L, N, E) -> (N, H, L, hd).
  q = q.reshape({L, N, H, hd}).permute({1, 2, 0, 3});
  k = k.reshape({S, N, H, hd}).permute({1, 2, 0, 3});
  v = v.reshape({S, N, H, hd}).permute({1, 2, 0, 3});
  if (options.add_zero_attn()) {
    k = cat({k, zeros({N, H, 1, hd}, k.options())}, 2);
    v = cat({v, zeros({N, H, 1, hd}, v.options())}, 2);
    if (am.defined()) am = pad(am, {0, 1});
    if (kpm.defined()) kpm = pad(kpm, {0, 1});
    ++S;
  }
  // One additive mask broadcasting to (N, H, L, S): attn_mask (1 or N, 1 or H, L, S) + kpm (N, 1, 1, S).
  Tensor mask;
  if (am.defined()) mask = am.dim() == 3 ? am.view({N, H, L, S}) : am;
  if (kpm.defined()) {
    Tensor kp = kpm.view({N, 1, 1, S});
    mask = mask.defined() ? mask + kp : kp;
  }
  const bool causal = is_causal && !attn_mask.defined();
  const double p = is_training() ? options.dropout() : 0.0;
  const Problem pr = check_args(kMha, q, k, v, mask, p, std::nullopt);
  AttnOut a = attention(pr, q, k, v, p, causal, need_weights);

  // (N, H, L, hd) -> (L, N, E) -> out_proj.
  Tensor out = out_proj->forward(a.out.permute({2, 0, 1, 3}).reshape({L, N, E}));
  if (bf) out = out.transpose(0, 1);
  if (!batched) out = out.squeeze(1);
  Tensor w = a.weights;
  if (w.defined()) {
    if (average_attn_weights) w = w.mean(1);  // (N, L, S)
    if (!batched) w = w.squeeze(0);
  }
  return {out, w};
}

Tensor MultiheadAttentionImpl::forward(const Tensor& x) { return std::get<0>(forward(x, x, x, {}, false)); }

}  // namespace brisk::nn
