// The fused (flash-attention) CPU kernel of scaled_dot_product_attention
// (OpId::attention_fused / attention_fused_backward): values against float64
// loops and against the composite (scaled_dot_product_attention_math) over
// shapes that cross the kernel's blocks, gradients against the composite's
// and by gradcheck, torch 2.15's values (tests/nn/sdpa_torch_ref.h, made by
// sdpa_torch_ref.py), layouts, threads, enable_gqa and errors.
#include <brisk/nn.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/grad_util.h"
#include "nn/sdpa_torch_ref.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
namespace F = brisk::nn::functional;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct ThreadsGuard {
  int saved = get_num_threads();
  explicit ThreadsGuard(int n) { set_num_threads(n); }
  ~ThreadsGuard() { set_num_threads(saved); }
};

std::vector<int64_t> bshape(std::vector<int64_t> a, std::vector<int64_t> b) {
  while (a.size() < b.size()) a.insert(a.begin(), 1);
  while (b.size() < a.size()) b.insert(b.begin(), 1);
  for (size_t i = 0; i < a.size(); ++i) a[i] = a[i] == 1 ? b[i] : a[i];
  return a;
}
std::vector<int64_t> lead(const Tensor& t, int64_t tail) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - tail);
}
std::vector<int64_t> cat2(std::vector<int64_t> s, int64_t a, int64_t b) {
  s.push_back(a);
  s.push_back(b);
  return s;
}

/// float64 loops: softmax(scale q k^T + mask) v per batch index, a row with
/// no key left gives zeros (PyTorch 2.15).
Tensor naive(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {}, bool causal = false,
             std::optional<double> scale_opt = std::nullopt) {
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2), Ev = v.size(-1);
  std::vector<int64_t> batch = bshape(bshape(lead(q, 2), lead(k, 2)), lead(v, 2));
  if (mask.defined()) batch = bshape(batch, mask.dim() > 2 ? lead(mask, 2) : std::vector<int64_t>{});
  int64_t B = 1;
  for (int64_t d : batch) B *= d;
  Tensor qe = q.detach().to(kDouble).expand(cat2(batch, L, E)).contiguous();
  Tensor ke = k.detach().to(kDouble).expand(cat2(batch, S, E)).contiguous();
  Tensor ve = v.detach().to(kDouble).expand(cat2(batch, S, Ev)).contiguous();
  Tensor me;
  if (mask.defined())
    me = (mask.dtype() == kBool ? mask : mask.detach().to(kDouble)).expand(cat2(batch, L, S)).contiguous();
  // E = 0: every score is 0 (PyTorch 2.15 gives the mean of the values there, not 0 * inf = NaN)
  const double scale = scale_opt ? *scale_opt : E == 0 ? 1.0 : 1.0 / std::sqrt(double(E));
  Tensor out = zeros(cat2(batch, L, Ev), kDouble);
  const double *pq = qe.data_ptr<double>(), *pk = ke.data_ptr<double>(), *pv = ve.data_ptr<double>();
  double* po = out.data_ptr<double>();
  std::vector<double> s(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      double mx = -kInf;
      for (int64_t j = 0; j < S; ++j) {
        double x = 0;
        for (int64_t e = 0; e < E; ++e) x += pq[(b * L + i) * E + e] * pk[(b * S + j) * E + e];
        x *= scale;
        bool take = !(causal && j > i);
        if (me.defined()) {
          const int64_t at = (b * L + i) * S + j;
          if (me.dtype() == kBool)
            take = take && me.data_ptr<bool>()[at];
          else
            x += me.data_ptr<double>()[at];
        }
        s[size_t(j)] = take ? x : -kInf;
        mx = std::max(mx, s[size_t(j)]);
      }
      if (mx == -kInf) continue;
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += (s[size_t(j)] = std::exp(s[size_t(j)] - mx));
      for (int64_t j = 0; j < S; ++j)
        for (int64_t e = 0; e < Ev; ++e) po[(b * L + i) * Ev + e] += s[size_t(j)] / sum * pv[(b * S + j) * Ev + e];
    }
  return out;
}

/// x.flat[i] = sin(a i + b), as tests/nn/sdpa_torch_ref.py.
Tensor formula(std::vector<int64_t> shape, double a, double b, ScalarType dt = kDouble) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  Tensor t = empty(shape, kDouble);
  for (int64_t i = 0; i < n; ++i) t.data_ptr<double>()[i] = std::sin(a * double(i) + b);
  return t.to(dt);
}

/// Mask kinds of the shape table.
enum class MaskKind { None, Bool, BoolFullRow, Float, FloatBroadcastRow, BoolBroadcastBatch };

Tensor make_mask(MaskKind kind, const std::vector<int64_t>& batch, int64_t L, int64_t S, ScalarType dt) {
  switch (kind) {
    case MaskKind::None:
      return {};
    case MaskKind::Bool:
    case MaskKind::BoolFullRow: {
      Tensor m = rand({L, S}).lt(0.7).logical_or(arange(S).eq(0));
      if (kind == MaskKind::BoolFullRow && L > 1) m.index_put_({L / 2}, false);
      return m;
    }
    case MaskKind::Float:
      return (randn(cat2(batch, L, S)) * 2.0).to(dt);
    case MaskKind::FloatBroadcastRow:  // (1, S): one additive bias per key
      return where(rand({1, S}).lt(0.2), Scalar(-kInf), Scalar(0.5)).to(dt);
    case MaskKind::BoolBroadcastBatch: {  // (B0, 1, L, 1) -> whole rows kept or dropped
      std::vector<int64_t> s = {batch.empty() ? 1 : batch[0]};
      for (size_t d = 1; d < batch.size(); ++d) s.push_back(1);
      return rand(cat2(s, L, 1)).lt(0.8);
    }
  }
  return {};
}

struct Shape {
  std::vector<int64_t> batch;
  int64_t L, S, E, Ev;
  MaskKind mask;
  bool causal;
};

// Block sizes of the kernel are 64 queries x 256 keys: the odd sizes cross them.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {{2, 3}, 5, 7, 4, 6, MaskKind::None, false},
      {{2, 3}, 5, 7, 4, 6, MaskKind::Bool, false},
      {{2}, 67, 300, 16, 8, MaskKind::None, false},
      {{2}, 67, 300, 16, 8, MaskKind::Float, false},
      {{1, 2}, 129, 513, 8, 5, MaskKind::FloatBroadcastRow, false},
      {{3}, 70, 300, 8, 12, MaskKind::None, true},   // causal, L < S
      {{3}, 300, 70, 8, 12, MaskKind::None, true},   // causal, L > S
      {{2}, 65, 65, 32, 32, MaskKind::None, true},
      {{2}, 9, 11, 3, 2, MaskKind::BoolFullRow, false},
      {{2, 2}, 33, 40, 5, 7, MaskKind::BoolBroadcastBatch, false},
      {{1}, 1, 1, 4, 3, MaskKind::None, false},
      {{1}, 1, 600, 4, 3, MaskKind::None, false},
      {{1}, 130, 1, 4, 3, MaskKind::None, true},
      {{2}, 0, 5, 4, 3, MaskKind::None, false},
      {{2}, 4, 0, 4, 3, MaskKind::None, false},
      {{2}, 4, 5, 0, 3, MaskKind::None, false},
      {{}, 6, 9, 5, 4, MaskKind::Bool, false},  // unbatched
  };
  return s;
}

std::string describe(const Shape& s) {
  std::string r = "batch [";
  for (int64_t d : s.batch) r += std::to_string(d) + ",";
  r += "] L " + std::to_string(s.L) + " S " + std::to_string(s.S) + " E " + std::to_string(s.E) + " Ev " +
       std::to_string(s.Ev) + " mask " + std::to_string(int(s.mask)) + (s.causal ? " causal" : "");
  return r;
}

std::string node_name(const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : std::string("(none)"); }

}  // namespace

// ---- values --------------------------------------------------------------------------------

TEST(SdpaFused, MatchesNaiveLoopsAndComposite) {
  manual_seed(1);
  for (const Shape& sh : shapes()) {
    for (ScalarType dt : {kFloat, kDouble}) {
      SCOPED_TRACE(describe(sh) + " " + std::string(dtype_name(dt)));
      Tensor q = randn(cat2(sh.batch, sh.L, sh.E), dt), k = randn(cat2(sh.batch, sh.S, sh.E), dt);
      Tensor v = randn(cat2(sh.batch, sh.S, sh.Ev), dt);
      Tensor m = make_mask(sh.mask, sh.batch, sh.L, sh.S, dt);
      Tensor out = F::scaled_dot_product_attention(q, k, v, m, 0.0, sh.causal);
      Tensor ref = naive(q, k, v, m, sh.causal);
      const double tol = dt == kFloat ? 3e-5 : 1e-11;
      EXPECT_EQ(out.dtype(), dt);
      EXPECT_TRUE(close(out, ref, tol, tol));
      if (sh.E > 0)  // the composite computes 0 * inf = NaN scores for E = 0
        EXPECT_TRUE(close(out, F::scaled_dot_product_attention_math(q, k, v, m, 0.0, sh.causal), tol, tol));
    }
  }
}

TEST(SdpaFused, ScaleAndBroadcastBatchDims) {
  manual_seed(2);
  // key/value shared by the heads, a mask with a batch dim of its own
  Tensor q = randn({2, 4, 70, 8}), k = randn({2, 1, 90, 8}), v = randn({90, 6});
  Tensor m = randn({3, 1, 1, 70, 90});
  Tensor out = F::scaled_dot_product_attention(q, k, v, m, 0.0, false, 0.3);
  EXPECT_EQ(out.sizes(), IntArrayRef({3, 2, 4, 70, 6}));
  EXPECT_TRUE(close(out, naive(q, k, v, m, false, 0.3), 3e-5, 3e-5));
}

TEST(SdpaFused, FullyMaskedRowsGiveZerosAndZeroGradients) {
  // PyTorch 2.15 (CPU flash and math): output 0 and gradient 0 on a row with every key masked.
  manual_seed(3);
  for (bool boolean : {true, false}) {
    Tensor q = randn({2, 70, 8}, kDouble).requires_grad_(), k = randn({2, 300, 8}, kDouble).requires_grad_();
    Tensor v = randn({2, 300, 4}, kDouble).requires_grad_();
    Tensor keep = ones({70, 300}, kBool);
    keep.index_put_({5}, false);
    keep.index_put_({69}, false);
    Tensor m = boolean ? keep : where(keep, Scalar(0.0), Scalar(-kInf)).to(kDouble);
    Tensor out = F::scaled_dot_product_attention(q, k, v, m);
    EXPECT_EQ(node_name(out), "ScaledDotProductFlashAttentionBackward0");
    EXPECT_TRUE(out.select(1, 5).eq(0).all().item<bool>());
    EXPECT_TRUE(out.select(1, 69).eq(0).all().item<bool>());
    EXPECT_TRUE(close(out, naive(q, k, v, m), 1e-11, 1e-11));
    out.backward(randn(out.sizes(), kDouble));
    EXPECT_TRUE(q.grad().select(1, 5).eq(0).all().item<bool>());
    EXPECT_FALSE(q.grad().isnan().any().item<bool>());
    EXPECT_FALSE(k.grad().isnan().any().item<bool>());
    EXPECT_FALSE(v.grad().isnan().any().item<bool>());
  }
}

TEST(SdpaFused, NonContiguousInputsAsInMultiheadAttention) {
  manual_seed(4);
  // (L, N, H, hd) projections viewed as (N, H, L, hd), the layout MultiheadAttention passes.
  const int64_t L = 67, S = 90, N = 2, H = 3, hd = 8;
  Tensor qb = randn({L, N, H * hd}), kb = randn({S, N, H * hd}), vb = randn({S, N, H * hd});
  Tensor q = qb.view({L, N, H, hd}).permute({1, 2, 0, 3});
  Tensor k = kb.view({S, N, H, hd}).permute({1, 2, 0, 3});
  Tensor v = vb.view({S, N, H, hd}).permute({1, 2, 0, 3});
  ASSERT_FALSE(q.is_contiguous());
  Tensor out = F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  EXPECT_TRUE(close(out, F::scaled_dot_product_attention(q.contiguous(), k.contiguous(), v.contiguous(), {}, 0.0, true),
                    1e-6, 1e-6));
  EXPECT_TRUE(close(out, naive(q, k, v, {}, true), 3e-5, 3e-5));
  // a transposed last dim (unit stride elsewhere), and expanded rows
  Tensor qt = randn({2, 8, 67}).transpose(1, 2), kt = randn({2, 90, 8}), vt = randn({2, 90, 5});
  EXPECT_TRUE(close(F::scaled_dot_product_attention(qt, kt, vt), naive(qt, kt, vt), 3e-5, 3e-5));
  Tensor qx = randn({2, 1, 8}).expand({2, 67, 8});
  EXPECT_TRUE(close(F::scaled_dot_product_attention(qx, kt, vt), naive(qx, kt, vt), 3e-5, 3e-5));
  // gradients through the permuted views
  Tensor qg = qb.clone().requires_grad_(), kg = kb.clone().requires_grad_(), vg = vb.clone().requires_grad_();
  auto heads = [&](const Tensor& t, int64_t n) { return t.view({n, N, H, hd}).permute({1, 2, 0, 3}); };
  Tensor w = randn({N, H, L, hd});
  TensorList ins = {qg, kg, vg};
  TensorList g1 = autograd::grad({(F::scaled_dot_product_attention(heads(qg, L), heads(kg, S), heads(vg, S)) * w).sum()}, ins);
  TensorList g2 =
      autograd::grad({(F::scaled_dot_product_attention_math(heads(qg, L), heads(kg, S), heads(vg, S)) * w).sum()}, ins);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(close(g1[i], g2[i], 1e-4, 1e-5)) << "input " << i;
}

TEST(SdpaFused, ReducedPrecisionComputesInFloat) {
  manual_seed(5);
  for (ScalarType dt : {kBFloat16, kHalf}) {
    Tensor q = randn({2, 70, 8}).to(dt), k = randn({2, 80, 8}).to(dt), v = randn({2, 80, 4}).to(dt);
    Tensor out = F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    EXPECT_EQ(out.dtype(), dt);
    Tensor ref = F::scaled_dot_product_attention(q.to(kFloat), k.to(kFloat), v.to(kFloat), {}, 0.0, true).to(dt);
    EXPECT_TRUE(out.equal(ref));
  }
}

TEST(SdpaFused, SameResultOnOneAndTwoThreads) {
  manual_seed(6);
  Tensor q = randn({2, 3, 130, 16}), k = randn({2, 3, 300, 16}), v = randn({2, 3, 300, 8});
  Tensor w = randn({2, 3, 130, 8});
  auto run = [&](int threads) {
    ThreadsGuard tg(threads);
    Tensor qg = q.clone().requires_grad_(), kg = k.clone().requires_grad_(), vg = v.clone().requires_grad_();
    Tensor out = F::scaled_dot_product_attention(qg, kg, vg, {}, 0.0, true);
    (out * w).sum().backward();
    return TensorList{out.detach(), qg.grad(), kg.grad(), vg.grad()};
  };
  TensorList a = run(1), b = run(2);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equal(b[i])) << "tensor " << i;
}

// ---- PyTorch 2.15 values ---------------------------------------------------------------------

TEST(SdpaFused, MatchesTorch215) {
  const auto& ref = sdpa_ref::cases();
  ASSERT_EQ(ref.size(), 4u);
  auto bool_mask = [](int64_t L, int64_t S) {
    Tensor m = ones({L, S}, kBool);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j)
        if ((i * 7 + j * 3) % 4 == 0) m.index_put_({i, j}, false);
    m.index_put_({1}, false);
    return m;
  };
  auto float_mask = [](int64_t L, int64_t S) {
    Tensor m = empty({L, S}, kDouble);
    for (int64_t i = 0; i < L * S; ++i) m.data_ptr<double>()[i] = 0.5 * std::cos(0.29 * double(i));
    return m;
  };
  struct Args {
    std::vector<int64_t> qs, ks, vs;
    Tensor mask;
    bool causal;
    std::optional<double> scale;
    bool gqa;
  };
  const std::vector<Args> args = {
      {{1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 6}, bool_mask(3, 5), false, std::nullopt, false},
      {{2, 1, 5, 4}, {2, 1, 3, 4}, {2, 1, 3, 2}, {}, true, std::nullopt, false},
      {{1, 2, 3, 5}, {1, 2, 6, 5}, {1, 2, 6, 3}, {}, true, 0.5, false},
      {{1, 4, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}, float_mask(3, 5), false, std::nullopt, true},
  };
  for (size_t c = 0; c < ref.size(); ++c) {
    for (ScalarType dt : {kDouble, kFloat}) {
      SCOPED_TRACE(std::string(ref[c].name) + " " + std::string(dtype_name(dt)));
      const Args& a = args[c];
      Tensor q = formula(a.qs, 0.37, 0.1, dt).requires_grad_(), k = formula(a.ks, 0.23, 0.7, dt).requires_grad_();
      Tensor v = formula(a.vs, 0.51, -0.3, dt).requires_grad_();
      Tensor mask = a.mask.defined() && a.mask.dtype() != kBool ? a.mask.to(dt) : a.mask;
      Tensor out = F::scaled_dot_product_attention(q, k, v, mask, 0.0, a.causal, a.scale, a.gqa);
      Tensor w = formula(std::vector<int64_t>(out.sizes().begin(), out.sizes().end()), 0.11, 0.2, dt);
      (out * w).sum().backward();
      const double tol = dt == kDouble ? 1e-10 : 2e-5;
      auto t = [](const std::vector<double>& x, const Tensor& like) {
        return tensor(x, kDouble).view(like.sizes());
      };
      EXPECT_TRUE(close(out, t(ref[c].out, out), tol, tol)) << "out";
      EXPECT_TRUE(close(q.grad(), t(ref[c].dq, q), tol, tol)) << "dq";
      EXPECT_TRUE(close(k.grad(), t(ref[c].dk, k), tol, tol)) << "dk";
      EXPECT_TRUE(close(v.grad(), t(ref[c].dv, v), tol, tol)) << "dv";
    }
  }
}

// ---- gradients -------------------------------------------------------------------------------

TEST(SdpaFused, GradientsMatchComposite) {
  manual_seed(7);
  for (const Shape& sh : shapes()) {
    if (sh.E == 0) continue;  // the composite gives NaN there (see MatchesNaiveLoopsAndComposite)
    SCOPED_TRACE(describe(sh));
    Tensor q = randn(cat2(sh.batch, sh.L, sh.E), kDouble).requires_grad_();
    // key shared over the last batch dim: its gradient is a sum over the broadcast
    std::vector<int64_t> kb = sh.batch;
    if (!kb.empty()) kb.back() = 1;
    Tensor k = randn(cat2(kb, sh.S, sh.E), kDouble).requires_grad_();
    Tensor v = randn(cat2(sh.batch, sh.S, sh.Ev), kDouble).requires_grad_();
    Tensor m = make_mask(sh.mask, sh.batch, sh.L, sh.S, kDouble);
    Tensor out = F::scaled_dot_product_attention(q, k, v, m, 0.0, sh.causal);
    Tensor ref = F::scaled_dot_product_attention_math(q, k, v, m, 0.0, sh.causal);
    if (out.numel() > 0 || q.numel() > 0) {
      Tensor w = randn(out.sizes(), kDouble);
      TensorList ins = {q, k, v};
      TensorList g1 = autograd::grad({(out * w).sum()}, ins, {}, false, false, true);
      TensorList g2 = autograd::grad({(ref * w).sum()}, ins, {}, false, false, true);
      for (size_t i = 0; i < 3; ++i) {
        if (!g2[i].defined()) g2[i] = zeros_like(ins[i]);
        if (!g1[i].defined()) g1[i] = zeros_like(ins[i]);
        EXPECT_TRUE(close(g1[i], g2[i], 1e-10, 1e-10)) << "input " << i;
      }
    }
  }
}

TEST(SdpaFused, Gradcheck) {
  manual_seed(8);
  using brisk::testing::leaf;
  auto sdpa = [](const Tensor& mask, bool causal, std::optional<double> scale = std::nullopt, bool gqa = false) {
    return [=](const TensorList& t) {
      return F::scaled_dot_product_attention(t[0], t[1], t[2], mask, 0.0, causal, scale, gqa);
    };
  };
  Tensor q = leaf({2, 3, 4}), k = leaf({2, 5, 4}), v = leaf({2, 5, 3});
  EXPECT_TRUE(gradcheck_ok(sdpa({}, false), {q, k, v}));
  EXPECT_TRUE(gradcheck_ok(sdpa({}, false, 0.7), {q, k, v}));
  Tensor m = rand({2, 3, 5}).lt(0.7);
  m.index_put_({0, 1}, false);  // a fully masked row
  EXPECT_TRUE(gradcheck_ok(sdpa(m, false), {q, k, v}));
  EXPECT_TRUE(gradcheck_ok(sdpa(randn({3, 5}, kDouble), false), {q, k, v}));
  EXPECT_TRUE(gradcheck_ok(sdpa({}, true), {leaf({2, 6, 4}), k, v}));  // causal, L > S
  EXPECT_TRUE(gradcheck_ok(sdpa({}, true), {leaf({2, 2, 4}), k, v}));  // causal, L < S
  // non-contiguous leaves, key/value shared over the batch
  EXPECT_TRUE(gradcheck_ok(sdpa({}, false), {brisk::testing::leaf_noncontig({3, 2, 4}).transpose(0, 1), leaf({1, 5, 4}),
                                             leaf({5, 3})}));
  // grouped-query attention: 4 query heads over 2 key/value heads
  EXPECT_TRUE(gradcheck_ok(sdpa({}, false, std::nullopt, true), {leaf({1, 4, 3, 4}), leaf({1, 2, 5, 4}), leaf({1, 2, 5, 3})}));
  // second order (create_graph switches to the composite formulas)
  EXPECT_TRUE(gradcheck_ok(sdpa(m, false), {q, k, v}, /*grad_grad=*/true));
  EXPECT_TRUE(gradcheck_ok(sdpa({}, true), {leaf({2, 6, 4}), k, v}, /*grad_grad=*/true));
}

// ---- which path runs -------------------------------------------------------------------------

TEST(SdpaFused, RoutesThroughTheKernelWhenItCan) {
  manual_seed(9);
  Tensor q = randn({2, 5, 4}).requires_grad_(), k = randn({2, 6, 4}), v = randn({2, 6, 3});
  EXPECT_EQ(node_name(F::scaled_dot_product_attention(q, k, v)), "ScaledDotProductFlashAttentionBackward0");
  EXPECT_EQ(node_name(F::scaled_dot_product_attention(q, k, v, {}, 0.0, true)),
            "ScaledDotProductFlashAttentionBackward0");
  // dropout and a mask that requires grad take the path with the (L, S) probabilities
  // (their output is a view of the node's (B, L, Ev) result)
  auto under_view = [](const Tensor& t) {
    return t.grad_fn()->name() == "ViewBackward0" ? t.grad_fn()->next_edges()[0].function->name() : node_name(t);
  };
  EXPECT_EQ(under_view(F::scaled_dot_product_attention(q, k, v, {}, 0.2)), "ScaledDotProductAttentionBackward0");
  Tensor mg = randn({5, 6}).requires_grad_();
  EXPECT_EQ(under_view(F::scaled_dot_product_attention(q, k, v, mg)), "ScaledDotProductAttentionBackward0");
  // MultiheadAttention without weights (and without dropout) runs the fused kernel too
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2));
  Tensor x = randn({5, 2, 8});
  auto [y, w] = mha->forward(x, x, x, {}, /*need_weights=*/false);
  EXPECT_FALSE(w.defined());
  auto [y2, w2] = mha->forward(x, x, x, {}, /*need_weights=*/true);
  EXPECT_TRUE(close(y, y2, 1e-5, 1e-6));
}

TEST(SdpaFused, GroupedQueryAttention) {
  manual_seed(10);
  Tensor q = randn({2, 6, 70, 8}), k = randn({2, 2, 90, 8}), v = randn({2, 2, 90, 5});
  Tensor m = rand({6, 70, 90}).lt(0.8);
  Tensor out = F::scaled_dot_product_attention(q, k, v, m, 0.0, false, std::nullopt, /*enable_gqa=*/true);
  // reference: each key/value head repeated for its 3 query heads (repeat_interleave)
  Tensor kr = k.unsqueeze(2).expand({2, 2, 3, 90, 8}).reshape({2, 6, 90, 8});
  Tensor vr = v.unsqueeze(2).expand({2, 2, 3, 90, 5}).reshape({2, 6, 90, 5});
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 6, 70, 5}));
  EXPECT_TRUE(close(out, naive(q, kr, vr, m), 3e-5, 3e-5));
  EXPECT_TRUE(close(F::scaled_dot_product_attention_math(q, k, v, m, 0.0, false, std::nullopt, true), out, 3e-5, 3e-5));
  // equal head counts: an ordinary call
  Tensor k6 = randn({2, 6, 90, 8});
  EXPECT_TRUE(F::scaled_dot_product_attention(q, k6, kr.narrow(-1, 0, 5), {}, 0.0, true, std::nullopt, true)
                  .equal(F::scaled_dot_product_attention(q, k6, kr.narrow(-1, 0, 5), {}, 0.0, true)));
}

// ---- errors ----------------------------------------------------------------------------------

TEST(SdpaFused, ErrorsNameTheOp) {
  const char* op = "[scaled_dot_product_attention]";
  Tensor q = randn({2, 3, 4, 8}), k = randn({2, 3, 5, 8}), v = randn({2, 3, 5, 6});
  expect_error([&] { F::scaled_dot_product_attention(q, randn({2, 3, 5, 7}), v); }, {op, "embedding dims 8 and 7"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, randn({2, 3, 4, 6})); }, {op, "sequence lengths 5 and 4"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, ones({4, 6}, kBool)); }, {op, "attn_mask", "[4, 6]"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, ones({4, 5}, kInt64)); }, {op, "bool or floating"});
  expect_error([&] { F::scaled_dot_product_attention(q, k.to(kDouble), v); }, {op, "same dtype"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, ones({4, 5}, kBool), 0.0, true); }, {op, "is_causal"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, {}, 1.5); }, {op, "dropout_p"});
  expect_error([&] { F::scaled_dot_product_attention(randn({2, 4, 8}), k, v); }, {op, "cannot be broadcast"});
  // enable_gqa
  expect_error([&] { F::scaled_dot_product_attention(q, randn({2, 2, 5, 8}), randn({2, 2, 5, 6}), {}, 0.0, false, std::nullopt, true); },
               {op, "enable_gqa", "3 heads", "multiple", "2"});
  expect_error([&] { F::scaled_dot_product_attention(randn({4, 8}), randn({5, 8}), randn({5, 6}), {}, 0.0, false, std::nullopt, true); },
               {op, "enable_gqa expects"});
  expect_error([&] { F::scaled_dot_product_attention(randn({1, 4, 3, 8}), randn({1, 2, 5, 8}), randn({1, 1, 5, 6}), {}, 0.0, false, std::nullopt, true); },
               {op, "same number of heads"});
  expect_error([&] { F::scaled_dot_product_attention(randn({1, 4, 3, 8}), randn({1, 2, 5, 8}), randn({1, 2, 5, 6}), ones({2, 3, 5}, kBool), 0.0, false, std::nullopt, true); },
               {op, "attn_mask", "4 heads"});
}
