// scaled_dot_product_attention against a naive loop reference (masks,
// causal, broadcasting, scale, dropout), its gradients by gradcheck in
// float64 (first and second order), the fused version against the composite
// one, and MultiheadAttention against a reference assembled from matmuls.
#include <brisk/nn.h>

#include <cmath>
#include <limits>
#include <vector>

#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> vec(IntArrayRef s) { return std::vector<int64_t>(s.begin(), s.end()); }

/// The broadcast of two shapes (numpy rules; the test inputs are valid).
std::vector<int64_t> bshape(std::vector<int64_t> a, std::vector<int64_t> b) {
  while (a.size() < b.size()) a.insert(a.begin(), 1);
  while (b.size() < a.size()) b.insert(b.begin(), 1);
  for (size_t i = 0; i < a.size(); ++i) a[i] = a[i] == 1 ? b[i] : a[i];
  return a;
}

std::vector<int64_t> batch_of(const Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - 2); }

/// Naive attention in float64 with explicit loops: for each batch index,
/// query row i and key j, score = scale * sum_e q[i,e] k[j,e], masked
/// (bool: false -> excluded; float: added; causal: j > i excluded), softmax
/// over j (a row with every key excluded gives zeros), out = sum_j p v[j].
Tensor naive_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {}, bool causal = false,
                  std::optional<double> scale_opt = std::nullopt) {
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2), Ev = v.size(-1);
  std::vector<int64_t> batch = bshape(bshape(batch_of(q), batch_of(k)), batch_of(v));
  if (mask.defined()) {
    std::vector<int64_t> mb = vec(mask.sizes());
    while (mb.size() < 2) mb.insert(mb.begin(), 1);
    batch = bshape(batch, std::vector<int64_t>(mb.begin(), mb.end() - 2));
  }
  auto full = [&](int64_t a, int64_t b) {
    std::vector<int64_t> s = batch;
    s.push_back(a);
    s.push_back(b);
    return s;
  };
  int64_t B = 1;
  for (int64_t d : batch) B *= d;
  // Expanded, contiguous float64 copies: element (b, i, j) at b*a*c + i*c + j.
  Tensor qe = q.detach().to(kDouble).expand(full(L, E)).contiguous();
  Tensor ke = k.detach().to(kDouble).expand(full(S, E)).contiguous();
  Tensor ve = v.detach().to(kDouble).expand(full(S, Ev)).contiguous();
  Tensor me;
  if (mask.defined()) me = (mask.dtype() == kBool ? mask : mask.detach().to(kDouble)).expand(full(L, S)).contiguous();
  const double scale = scale_opt ? *scale_opt : 1.0 / std::sqrt(double(E));
  Tensor out = zeros(full(L, Ev), kDouble);
  const double* pq = qe.data_ptr<double>();
  const double* pk = ke.data_ptr<double>();
  const double* pv = ve.data_ptr<double>();
  double* po = out.data_ptr<double>();
  std::vector<double> s(static_cast<size_t>(S));
  std::vector<bool> in(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      double mx = -kInf;
      for (int64_t j = 0; j < S; ++j) {
        double acc = 0;
        for (int64_t e = 0; e < E; ++e) acc += pq[(b * L + i) * E + e] * pk[(b * S + j) * E + e];
        double x = acc * scale;
        bool take = !(causal && j > i);
        if (me.defined()) {
          const int64_t at = (b * L + i) * S + j;
          if (me.dtype() == kBool)
            take = take && me.data_ptr<bool>()[at];
          else
            x += me.data_ptr<double>()[at];
        }
        if (!take) x = -kInf;
        s[size_t(j)] = x;
        mx = std::max(mx, x);
      }
      if (mx == -kInf) continue;  // every key excluded: zeros
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += (s[size_t(j)] = std::exp(s[size_t(j)] - mx));
      for (int64_t j = 0; j < S; ++j)
        for (int64_t e = 0; e < Ev; ++e) po[(b * L + i) * Ev + e] += s[size_t(j)] / sum * pv[(b * S + j) * Ev + e];
    }
  return out;
}

Tensor rnd(std::vector<int64_t> s, ScalarType dt = kFloat) { return randn(s, dt); }

/// A random bool mask that keeps at least one key in every row (of its last dim).
Tensor keep_mask(std::vector<int64_t> s) {
  Tensor m = rand(s).lt(0.6);
  return m.logical_or(arange(s.back()).eq(0));
}

}  // namespace

// ---- values against the naive reference ------------------------------------------------

TEST(ScaledDotProductAttention, MatchesNaiveLoops) {
  manual_seed(0);
  for (ScalarType dt : {kFloat, kDouble}) {
    SCOPED_TRACE(dtype_name(dt));
    const double tol = dt == kFloat ? 2e-5 : 1e-12;
    Tensor q = rnd({2, 3, 4, 5}, dt), k = rnd({2, 3, 6, 5}, dt), v = rnd({2, 3, 6, 7}, dt);
    Tensor out = F::scaled_dot_product_attention(q, k, v);
    EXPECT_EQ(out.sizes(), IntArrayRef({2, 3, 4, 7}));
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_TRUE(close(out, naive_sdpa(q, k, v), tol, tol));
    // 2-D (unbatched) inputs, L > S, and a long row
    Tensor q2 = rnd({9, 3}, dt), k2 = rnd({2, 3}, dt), v2 = rnd({2, 4}, dt);
    EXPECT_TRUE(close(F::scaled_dot_product_attention(q2, k2, v2), naive_sdpa(q2, k2, v2), tol, tol));
    Tensor q3 = rnd({1, 3, 16}, dt), k3 = rnd({1, 700, 16}, dt), v3 = rnd({1, 700, 2}, dt);
    EXPECT_TRUE(close(F::scaled_dot_product_attention(q3, k3, v3), naive_sdpa(q3, k3, v3), tol, tol));
  }
}

TEST(ScaledDotProductAttention, Scale) {
  manual_seed(1);
  Tensor q = rnd({2, 4, 8}), k = rnd({2, 5, 8}), v = rnd({2, 5, 3});
  for (double s : {0.05, 1.0, 3.0}) {
    SCOPED_TRACE(s);
    EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, s), naive_sdpa(q, k, v, {}, false, s),
                      2e-5, 2e-5));
  }
  // the default is 1/sqrt(E), not 1
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, 1.0 / std::sqrt(8.0)),
                    F::scaled_dot_product_attention(q, k, v), 1e-6, 1e-7));
  EXPECT_FALSE(close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, 1.0),
                     F::scaled_dot_product_attention(q, k, v), 1e-3, 1e-3));
}

TEST(ScaledDotProductAttention, BoolAndFloatMasks) {
  manual_seed(2);
  Tensor q = rnd({2, 3, 4, 5}), k = rnd({2, 3, 6, 5}), v = rnd({2, 3, 6, 7});
  // (L, S), broadcast over the batch; (2, 1, L, S); (2, 3, L, S); a (S) row mask
  for (std::vector<int64_t> ms : {std::vector<int64_t>{4, 6}, {2, 1, 4, 6}, {2, 3, 4, 6}, {6}, {2, 1, 1, 6}}) {
    SCOPED_TRACE(::testing::PrintToString(ms));
    Tensor bm = keep_mask(ms);
    Tensor out = F::scaled_dot_product_attention(q, k, v, bm);
    EXPECT_TRUE(close(out, naive_sdpa(q, k, v, bm), 2e-5, 2e-5));
    // true = take part: the same as an additive mask of 0 / -inf
    Tensor fm = where(bm, Scalar(0.0), Scalar(-kInf));
    EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, fm), out, 1e-6, 1e-7));
    // a finite additive mask
    Tensor am = randn(ms);
    EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, am), naive_sdpa(q, k, v, am), 2e-5, 2e-5));
  }
  // a mask that does not take part anywhere changes nothing; one that masks a key is the same as dropping it
  Tensor all = ones({4, 6}, kBool);
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, all), F::scaled_dot_product_attention(q, k, v), 1e-6, 1e-7));
  Tensor no_last = arange(6).lt(5);
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, no_last),
                    F::scaled_dot_product_attention(q, k.narrow(2, 0, 5), v.narrow(2, 0, 5)), 1e-5, 1e-6));
  // float64 mask on float32 inputs, and a non-contiguous mask
  Tensor m64 = randn({6, 4}, kDouble).t();
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, m64), naive_sdpa(q, k, v, m64), 2e-5, 2e-5));
  Tensor bmt = keep_mask({2, 3, 6, 4}).transpose(-1, -2);
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, bmt), naive_sdpa(q, k, v, bmt), 2e-5, 2e-5));
}

TEST(ScaledDotProductAttention, Causal) {
  manual_seed(3);
  // top-left aligned: query i sees keys 0..i, whatever L and S
  for (auto [L, S] : {std::pair<int64_t, int64_t>{5, 5}, {3, 7}, {7, 3}, {1, 4}}) {
    SCOPED_TRACE(::testing::PrintToString(std::vector<int64_t>{L, S}));
    Tensor q = rnd({2, 2, L, 4}), k = rnd({2, 2, S, 4}), v = rnd({2, 2, S, 3});
    Tensor out = F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    EXPECT_TRUE(close(out, naive_sdpa(q, k, v, {}, true), 2e-5, 2e-5));
    Tensor tril = ones({L, S}, kBool).tril();
    EXPECT_TRUE(close(out, F::scaled_dot_product_attention(q, k, v, tril), 1e-6, 1e-7));
  }
  // the first query sees only the first key
  Tensor q = rnd({1, 4, 3}), k = rnd({1, 4, 3}), v = rnd({1, 4, 2});
  Tensor out = F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  EXPECT_TRUE(close(out.select(1, 0), v.select(1, 0), 1e-6, 1e-7));
}

TEST(ScaledDotProductAttention, BroadcastsBatchDims) {
  manual_seed(4);
  Tensor q = rnd({2, 3, 4, 5});
  // key/value shared over the heads, over the batch, or given without batch dims
  for (auto [ks, vs] : {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{2, 1, 6, 5}, {2, 1, 6, 7}},
                        {{3, 6, 5}, {1, 3, 6, 7}},
                        {{6, 5}, {2, 3, 6, 7}},
                        {{1, 1, 6, 5}, {6, 7}}}) {
    SCOPED_TRACE(::testing::PrintToString(ks));
    Tensor k = rnd(ks), v = rnd(vs);
    Tensor out = F::scaled_dot_product_attention(q, k, v);
    EXPECT_EQ(out.sizes(), IntArrayRef({2, 3, 4, 7}));
    EXPECT_TRUE(close(out, naive_sdpa(q, k, v), 2e-5, 2e-5));
  }
  // query broadcast over key's batch; a mask that adds a batch dim
  Tensor q1 = rnd({4, 5}), k = rnd({2, 6, 5}), v = rnd({2, 6, 7});
  EXPECT_EQ(F::scaled_dot_product_attention(q1, k, v).sizes(), IntArrayRef({2, 4, 7}));
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q1, k, v), naive_sdpa(q1, k, v), 2e-5, 2e-5));
  Tensor m = keep_mask({3, 1, 4, 6});
  Tensor out = F::scaled_dot_product_attention(q1, k, v, m);
  EXPECT_EQ(out.sizes(), IntArrayRef({3, 2, 4, 7}));
  EXPECT_TRUE(close(out, naive_sdpa(q1, k, v, m), 2e-5, 2e-5));
}

TEST(ScaledDotProductAttention, NonContiguousInputs) {
  manual_seed(5);
  Tensor q = rnd({2, 5, 3, 4}).transpose(1, 2);  // (2, 3, 5, 4)
  Tensor k = rnd({2, 3, 4, 6}).transpose(-1, -2);
  Tensor v = rnd({2, 3, 6, 14}).slice(-1, 0, 14, 2);
  Tensor expect = naive_sdpa(q, k, v);
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v), expect, 2e-5, 2e-5));
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q.contiguous(), k.contiguous(), v.contiguous()), expect, 2e-5, 2e-5));
}

TEST(ScaledDotProductAttention, FullyMaskedRowsGiveZeros) {
  manual_seed(6);
  Tensor q = rnd({2, 4, 3}, kDouble).requires_grad_(), k = rnd({2, 5, 3}, kDouble).requires_grad_();
  Tensor v = rnd({2, 5, 2}, kDouble).requires_grad_();
  Tensor m = keep_mask({2, 4, 5});
  m.index_put_({1, 2}, false);  // batch 1, query 2: no key
  Tensor out = F::scaled_dot_product_attention(q, k, v, m);
  EXPECT_TRUE(close(out, naive_sdpa(q, k, v, m), 1e-12, 1e-12));
  EXPECT_EQ(out.index({1, 2}).abs().sum().item<double>(), 0.0);
  out.sum().backward();
  for (const Tensor& t : {q, k, v}) EXPECT_TRUE(t.grad().isfinite().all().item<bool>());
  EXPECT_EQ(q.grad().index({1, 2}).abs().sum().item<double>(), 0.0);
  // the same with an additive -inf row, and in the composite version
  Tensor fm = where(m, Scalar(0.0), Scalar(-kInf));
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, fm), out, 1e-12, 1e-12));
  EXPECT_TRUE(close(F::scaled_dot_product_attention_math(q, k, v, m), out, 1e-12, 1e-12));
}

TEST(ScaledDotProductAttention, EmptySizes) {
  Tensor out = F::scaled_dot_product_attention(randn({2, 3, 4}), randn({2, 0, 4}), randn({2, 0, 5}));
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 3, 5}));
  EXPECT_EQ(out.abs().sum().item<double>(), 0.0);  // no key: zeros, as a sum over nothing
  EXPECT_EQ(F::scaled_dot_product_attention(randn({2, 0, 4}), randn({2, 3, 4}), randn({2, 3, 5})).sizes(),
            IntArrayRef({2, 0, 5}));
  EXPECT_EQ(F::scaled_dot_product_attention(randn({0, 3, 4}), randn({0, 3, 4}), randn({0, 3, 5})).sizes(),
            IntArrayRef({0, 3, 5}));
}

TEST(ScaledDotProductAttention, ReducedPrecision) {
  manual_seed(7);
  Tensor q = rnd({2, 4, 8}), k = rnd({2, 6, 8}), v = rnd({2, 6, 3});
  Tensor m = keep_mask({4, 6});
  for (ScalarType dt : {kHalf, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor qh = q.to(dt), kh = k.to(dt), vh = v.to(dt);
    Tensor out = F::scaled_dot_product_attention(qh, kh, vh, m);
    EXPECT_EQ(out.dtype(), dt);
    const double tol = dt == kHalf ? 3e-3 : 2e-2;
    EXPECT_TRUE(close(out, naive_sdpa(qh, kh, vh, m), tol, tol));
  }
}

TEST(ScaledDotProductAttention, FusedMatchesComposite) {
  manual_seed(8);
  Tensor q = rnd({2, 3, 5, 4}), k = rnd({3, 7, 4}), v = rnd({2, 1, 7, 6});
  Tensor bm = keep_mask({5, 7}), fm = randn({2, 1, 5, 7});
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v), F::scaled_dot_product_attention_math(q, k, v), 1e-5, 1e-6));
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, bm), F::scaled_dot_product_attention_math(q, k, v, bm),
                    1e-5, 1e-6));
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, fm, 0.0, false, 0.7),
                    F::scaled_dot_product_attention_math(q, k, v, fm, 0.0, false, 0.7), 1e-5, 1e-6));
  EXPECT_TRUE(close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, true),
                    F::scaled_dot_product_attention_math(q, k, v, {}, 0.0, true), 1e-5, 1e-6));
  // dropout draws the same mask from the generator in both
  manual_seed(9);
  Tensor a = F::scaled_dot_product_attention(q, k, v, bm, 0.3);
  manual_seed(9);
  Tensor b = F::scaled_dot_product_attention_math(q, k, v, bm, 0.3);
  EXPECT_TRUE(close(a, b, 1e-5, 1e-6));
}

TEST(ScaledDotProductAttention, Dropout) {
  manual_seed(10);
  Tensor q = rnd({2, 6, 4}), k = rnd({2, 9, 4}), v = rnd({2, 9, 3});
  // deterministic under manual_seed, different draws otherwise
  manual_seed(11);
  Tensor a = F::scaled_dot_product_attention(q, k, v, {}, 0.4);
  manual_seed(11);
  Tensor b = F::scaled_dot_product_attention(q, k, v, {}, 0.4);
  Tensor c = F::scaled_dot_product_attention(q, k, v, {}, 0.4);
  EXPECT_TRUE(a.equal(b));
  EXPECT_FALSE(a.equal(c));
  EXPECT_FALSE(close(a, F::scaled_dot_product_attention(q, k, v), 1e-3, 1e-3));
  // p = 1 drops everything; p = 0 is the plain function
  EXPECT_EQ(F::scaled_dot_product_attention(q, k, v, {}, 1.0).abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(F::scaled_dot_product_attention(q, k, v, {}, 0.0).equal(F::scaled_dot_product_attention(q, k, v)));
  // with v = identity, the output rows are the (dropped, rescaled) probabilities: each is 0 or p_ij / (1 - p)
  Tensor q2 = rnd({1, 64, 8}), k2 = rnd({1, 50, 8}), eye50 = eye(50).unsqueeze(0);
  Tensor P = F::scaled_dot_product_attention(q2, k2, eye50);
  Tensor Pd = F::scaled_dot_product_attention(q2, k2, eye50, {}, 0.25);
  Tensor kept = Pd.ne(0);
  EXPECT_TRUE(close(where(kept, Pd, Scalar(0.0)), where(kept, P / 0.75, Scalar(0.0)), 1e-5, 1e-7));
  const double frac_dropped = 1.0 - kept.to(kDouble).mean().item<double>();
  EXPECT_NEAR(frac_dropped, 0.25, 0.03);  // 3200 draws: 3 standard deviations is 0.023
}

// ---- gradients -----------------------------------------------------------------------------

TEST(ScaledDotProductAttentionGrad, Gradcheck) {
  manual_seed(20);
  using brisk::testing::leaf;
  auto sdpa = [](const Tensor& mask, bool causal, std::optional<double> scale = std::nullopt) {
    return [=](const TensorList& t) { return F::scaled_dot_product_attention(t[0], t[1], t[2], mask, 0.0, causal, scale); };
  };
  Tensor q = leaf({2, 3, 4}), k = leaf({2, 5, 4}), v = leaf({2, 5, 3});
  EXPECT_TRUE(gradcheck_ok(sdpa({}, false), {q, k, v}));
  EXPECT_TRUE(gradcheck_ok(sdpa({}, false, 0.3), {q, k, v}));
  EXPECT_TRUE(gradcheck_ok(sdpa(keep_mask({3, 5}), false), {q, k, v}));
  EXPECT_TRUE(gradcheck_ok(sdpa({}, true), {q, k, v}));
  // a fully masked row, and L > S with causal
  Tensor m = keep_mask({2, 3, 5});
  m.index_put_({0, 1}, false);
  EXPECT_TRUE(gradcheck_ok(sdpa(m, false), {q, k, v}));
  Tensor ql = leaf({2, 6, 4});
  EXPECT_TRUE(gradcheck_ok(sdpa({}, true), {ql, k, v}));
  // non-contiguous inputs and broadcast batch dims (key/value shared over heads)
  Tensor qn = brisk::testing::leaf_noncontig({3, 2, 4}), kb = leaf({1, 5, 4}), vb = leaf({5, 3});
  EXPECT_TRUE(gradcheck_ok(sdpa({}, false), {qn, kb, vb}));
  Tensor q4 = leaf({2, 2, 3, 4}), k4 = leaf({2, 1, 5, 4}), v4 = leaf({1, 2, 5, 3});
  EXPECT_TRUE(gradcheck_ok(sdpa(keep_mask({2, 1, 3, 5}), false), {q4, k4, v4}));
}

TEST(ScaledDotProductAttentionGrad, FloatMaskGetsAGradient) {
  manual_seed(21);
  using brisk::testing::leaf;
  Tensor q = leaf({2, 3, 4}), k = leaf({2, 5, 4}), v = leaf({2, 5, 3});
  for (std::vector<int64_t> ms : {std::vector<int64_t>{3, 5}, {2, 3, 5}, {2, 1, 5}}) {
    SCOPED_TRACE(::testing::PrintToString(ms));
    Tensor m = leaf(ms);
    EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::scaled_dot_product_attention(t[0], t[1], t[2], t[3]); },
                             {q, k, v, m}));
  }
  // a float32 mask on float64 inputs: the gradient comes back in the mask's dtype
  Tensor m32 = randn({3, 5}).requires_grad_();
  F::scaled_dot_product_attention(q, k, v, m32).sum().backward();
  ASSERT_TRUE(m32.grad().defined());
  EXPECT_EQ(m32.grad().dtype(), kFloat);
  EXPECT_EQ(m32.grad().sizes(), IntArrayRef({3, 5}));
}

TEST(ScaledDotProductAttentionGrad, SecondOrder) {
  manual_seed(22);
  using brisk::testing::leaf;
  Tensor q = leaf({2, 3, 4}), k = leaf({2, 4, 4}), v = leaf({2, 4, 2});
  auto f = [](const TensorList& t) { return F::scaled_dot_product_attention(t[0], t[1], t[2]); };
  EXPECT_TRUE(gradcheck_ok(f, {q, k, v}, /*grad_grad=*/true));
  Tensor m = leaf({3, 4});
  auto fm = [](const TensorList& t) { return F::scaled_dot_product_attention(t[0], t[1], t[2], t[3]); };
  EXPECT_TRUE(gradcheck_ok(fm, {q, k, v, m}, true));
  auto fc = [](const TensorList& t) { return F::scaled_dot_product_attention(t[0], t[1], t[2], {}, 0.0, true); };
  EXPECT_TRUE(gradcheck_ok(fc, {q, k, v}, true));
}

TEST(ScaledDotProductAttentionGrad, DropoutWithAFixedSeed) {
  manual_seed(23);
  using brisk::testing::leaf;
  Tensor q = leaf({2, 3, 4}), k = leaf({2, 5, 4}), v = leaf({2, 5, 3});
  // reseeding makes every evaluation draw the same dropout mask
  auto f = [](const TensorList& t) {
    manual_seed(99);
    return F::scaled_dot_product_attention(t[0], t[1], t[2], {}, 0.3);
  };
  EXPECT_TRUE(gradcheck_ok(f, {q, k, v}, true));
}

TEST(ScaledDotProductAttentionGrad, MatchesCompositeGradients) {
  manual_seed(24);
  Tensor q = randn({2, 3, 5, 4}).requires_grad_(), k = randn({3, 7, 4}).requires_grad_();
  Tensor v = randn({2, 1, 7, 6}).requires_grad_(), m = randn({5, 7}).requires_grad_();
  Tensor w = randn({2, 3, 5, 6});
  TensorList ins = {q, k, v, m};
  TensorList g1 = autograd::grad({(F::scaled_dot_product_attention(q, k, v, m) * w).sum()}, ins);
  TensorList g2 = autograd::grad({(F::scaled_dot_product_attention_math(q, k, v, m) * w).sum()}, ins);
  for (size_t i = 0; i < ins.size(); ++i) EXPECT_TRUE(close(g1[i], g2[i], 1e-4, 1e-5)) << "input " << i;
}

TEST(ScaledDotProductAttentionGrad, RecordsOneNode) {
  Tensor q = randn({2, 3, 4}).requires_grad_(), k = randn({2, 5, 4}).requires_grad_(), v = randn({2, 5, 3});
  Tensor out = F::scaled_dot_product_attention(q, k, v, keep_mask({3, 5}));
  ASSERT_TRUE(out.grad_fn());
  // the fused (flash) kernel's node; with dropout, the node of the version with the (B, L, S) probabilities,
  // whose output is a view of the node's (B, L, Ev) result
  EXPECT_EQ(out.grad_fn()->name(), "ScaledDotProductFlashAttentionBackward0");
  Tensor outd = F::scaled_dot_product_attention(q, k, v, keep_mask({3, 5}), 0.5);
  std::string name = outd.grad_fn()->name();
  if (name != "ScaledDotProductAttentionBackward0") name = outd.grad_fn()->next_edges()[0].function->name();
  EXPECT_EQ(name, "ScaledDotProductAttentionBackward0");
  NoGradGuard ng;
  EXPECT_FALSE(F::scaled_dot_product_attention(q, k, v).requires_grad());
}

// ---- errors --------------------------------------------------------------------------------

TEST(ScaledDotProductAttention, ErrorsNameTheOpAndShapes) {
  const char* op = "[scaled_dot_product_attention]";
  Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 6});
  expect_error([&] { F::scaled_dot_product_attention(q, randn({2, 5, 3}), v); },
               {op, "embedding dims 4 and 3 differ", "[2, 3, 4]", "[2, 5, 3]"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, randn({2, 4, 6})); },
               {op, "sequence lengths 5 and 4 differ"});
  expect_error([&] { F::scaled_dot_product_attention(q, randn({3, 5, 4}), randn({3, 5, 6})); },
               {op, "batch dims", "cannot be broadcast"});
  expect_error([&] { F::scaled_dot_product_attention(randn({4}), k, v); }, {op, "at least 2 dims"});
  expect_error([&] { F::scaled_dot_product_attention(q, k.to(kDouble), v); }, {op, "same dtype"});
  expect_error([&] { F::scaled_dot_product_attention(q.to(kInt64), k.to(kInt64), v.to(kInt64)); },
               {op, "floating point"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, ones({3, 4}, kBool)); },
               {op, "attn_mask of shape [3, 4]", "[2, 3, 5]"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, ones({3, 5}, kInt64)); }, {op, "bool or floating"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, ones({3, 5}, kBool), 0.0, true); },
               {op, "is_causal"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, {}, 1.5); }, {op, "dropout_p", "1.5"});
  expect_error([&] { F::scaled_dot_product_attention({}, k, v); }, {op, "defined"});
}

// ---- MultiheadAttention ----------------------------------------------------------------------

namespace {

/// PyTorch's multi_head_attention_forward written out with matmuls, one head
/// at a time, in (L, N, E) layout. Masks follow MHA's convention (bool true =
/// masked out). Returns {output (L, N, E), per-head weights (N, H, L, S)}.
std::pair<Tensor, Tensor> reference_mha(const nn::MultiheadAttentionImpl& m, Tensor q, Tensor k, Tensor v,
                                        Tensor kpm = {}, Tensor am = {}) {
  const int64_t E = m.embed_dim, H = m.num_heads, hd = m.head_dim, L = q.size(0), N = q.size(1);
  Tensor Wq, Wk, Wv;
  if (m.qkv_same_embed_dim) {
    Wq = m.in_proj_weight.narrow(0, 0, E), Wk = m.in_proj_weight.narrow(0, E, E), Wv = m.in_proj_weight.narrow(0, 2 * E, E);
  } else {
    Wq = m.q_proj_weight, Wk = m.k_proj_weight, Wv = m.v_proj_weight;
  }
  Tensor Q = q.matmul(Wq.t()), K = k.matmul(Wk.t()), V = v.matmul(Wv.t());
  if (m.in_proj_bias.defined()) {
    Q = Q + m.in_proj_bias.narrow(0, 0, E);
    K = K + m.in_proj_bias.narrow(0, E, E);
    V = V + m.in_proj_bias.narrow(0, 2 * E, E);
  }
  auto additive = [&](const Tensor& mask) {
    if (!mask.defined()) return mask;
    return mask.dtype() == kBool ? where(mask, Scalar(-kInf), Scalar(0.0)).to(q.dtype()) : mask;
  };
  am = additive(am);
  kpm = additive(kpm);
  if (m.bias_k.defined()) {
    K = cat({K, m.bias_k.expand({1, N, E})}, 0);
    V = cat({V, m.bias_v.expand({1, N, E})}, 0);
    if (am.defined()) am = pad(am, {0, 1});
    if (kpm.defined()) kpm = pad(kpm, {0, 1});
  }
  std::vector<Tensor> outs, weights;
  for (int64_t n = 0; n < N; ++n) {
    std::vector<Tensor> heads, wh;
    for (int64_t h = 0; h < H; ++h) {
      Tensor qh = Q.select(1, n).narrow(1, h * hd, hd);  // (L, hd)
      Tensor kh = K.select(1, n).narrow(1, h * hd, hd);
      Tensor vh = V.select(1, n).narrow(1, h * hd, hd);
      if (m.options.add_zero_attn()) {
        kh = cat({kh, zeros({1, hd}, kh.options())}, 0);
        vh = cat({vh, zeros({1, hd}, vh.options())}, 0);
      }
      Tensor s = qh.matmul(kh.t()) / std::sqrt(double(hd));
      const int64_t S = s.size(1);
      Tensor a = am, kp = kpm;
      if (m.options.add_zero_attn()) {
        if (a.defined()) a = pad(a, {0, 1});
        if (kp.defined()) kp = pad(kp, {0, 1});
      }
      if (a.defined()) s = s + (a.dim() == 3 ? a[n * H + h] : a);
      if (kp.defined()) s = s + kp[n].view({1, S});
      Tensor p = s.softmax(-1);
      wh.push_back(p);
      heads.push_back(p.matmul(vh));
    }
    outs.push_back(cat(heads, 1));  // (L, E)
    weights.push_back(stack(wh, 0));  // (H, L, S)
  }
  Tensor o = stack(outs, 1);  // (L, N, E)
  o = o.matmul(m.out_proj->weight.t());
  if (m.out_proj->bias.defined()) o = o + m.out_proj->bias;
  return {o, stack(weights, 0)};
}

}  // namespace

TEST(MultiheadAttention, ParametersAndInit) {
  manual_seed(30);
  nn::MultiheadAttention m(16, 4);
  EXPECT_EQ(m->named_parameters().keys(),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(m->state_dict().keys(), m->named_parameters().keys());
  EXPECT_EQ(m->in_proj_weight.sizes(), IntArrayRef({48, 16}));
  EXPECT_EQ(m->in_proj_bias.sizes(), IntArrayRef({48}));
  EXPECT_EQ(m->head_dim, 4);
  // xavier_uniform_ on (3E, E): U(+-sqrt(6 / (E + 3E)))
  const double bound = std::sqrt(6.0 / 64.0);
  EXPECT_LE(m->in_proj_weight.abs().max().item<double>(), bound);
  EXPECT_GT(m->in_proj_weight.abs().max().item<double>(), 0.95 * bound);
  EXPECT_EQ(m->in_proj_bias.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(m->out_proj->bias.abs().sum().item<double>(), 0.0);
  EXPECT_LE(m->out_proj->weight.abs().max().item<double>(), 1.0 / std::sqrt(16.0));  // Linear's init

  nn::MultiheadAttention kv(nn::MultiheadAttentionOptions(8, 2).kdim(5).vdim(3).add_bias_kv(true).bias(false));
  EXPECT_EQ(kv->named_parameters().keys(), (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight",
                                                                    "bias_k", "bias_v", "out_proj.weight"}));
  EXPECT_EQ(kv->k_proj_weight.sizes(), IntArrayRef({8, 5}));
  EXPECT_EQ(kv->v_proj_weight.sizes(), IntArrayRef({8, 3}));
  EXPECT_EQ(kv->bias_k.sizes(), IntArrayRef({1, 1, 8}));
  EXPECT_GT(kv->bias_k.abs().sum().item<double>(), 0.0);
  EXPECT_FALSE(kv->in_proj_weight.defined());
  EXPECT_FALSE(kv->out_proj->bias.defined());
  const std::string printed = nn::to_string(m);
  EXPECT_NE(printed.find("embed_dim=16, num_heads=4"), std::string::npos) << printed;
  EXPECT_NE(printed.find("(out_proj): Linear(in_features=16, out_features=16, bias=true)"), std::string::npos) << printed;
  // a state dict carries over
  nn::MultiheadAttention m2(16, 4);
  m2->load_state_dict(m->state_dict());
  EXPECT_TRUE(m2->in_proj_weight.equal(m->in_proj_weight));
  EXPECT_TRUE(m2->out_proj->weight.equal(m->out_proj->weight));
}

TEST(MultiheadAttention, MatchesMatmulReference) {
  manual_seed(31);
  const int64_t E = 12, H = 3, L = 4, S = 6, N = 2;
  nn::MultiheadAttention m(E, H);
  {
    NoGradGuard ng;
    m->in_proj_bias.normal_();
    m->out_proj->bias.normal_();
  }
  Tensor q = randn({L, N, E}), k = randn({S, N, E}), v = randn({S, N, E});
  auto [out, w] = m(q, k, v);
  auto [ro, rw] = reference_mha(*m, q, k, v);
  EXPECT_EQ(out.sizes(), IntArrayRef({L, N, E}));
  EXPECT_EQ(w.sizes(), IntArrayRef({N, L, S}));
  EXPECT_TRUE(close(out, ro, 1e-5, 1e-5));
  EXPECT_TRUE(close(w, rw.mean(1), 1e-5, 1e-6));
  // per-head weights; no weights
  auto [out2, w2] = m->forward(q, k, v, {}, true, {}, /*average_attn_weights=*/false);
  EXPECT_EQ(w2.sizes(), IntArrayRef({N, H, L, S}));
  EXPECT_TRUE(close(w2, rw, 1e-5, 1e-6));
  auto [out3, w3] = m->forward(q, k, v, {}, /*need_weights=*/false);
  EXPECT_FALSE(w3.defined());
  EXPECT_TRUE(close(out3, ro, 1e-5, 1e-5));
  // self-attention (one packed projection) and the single-input forward
  auto [so, sw] = m(q, q, q);
  EXPECT_TRUE(close(so, reference_mha(*m, q, q, q).first, 1e-5, 1e-5));
  EXPECT_TRUE(close(m->forward(q), so, 1e-6, 1e-6));
  // key and value the same tensor
  EXPECT_TRUE(close(std::get<0>(m(q, k, k)), reference_mha(*m, q, k, k).first, 1e-5, 1e-5));
}

TEST(MultiheadAttention, Masks) {
  manual_seed(32);
  const int64_t E = 8, H = 2, L = 5, S = 7, N = 3;
  nn::MultiheadAttention m(E, H);
  Tensor q = randn({L, N, E}), k = randn({S, N, E}), v = randn({S, N, E});
  // key_padding_mask: true = ignore (keep key 0 for every batch entry)
  Tensor kpm = rand({N, S}).lt(0.4).logical_and(arange(S).ne(0));
  Tensor am_bool = rand({L, S}).lt(0.3).logical_and(arange(S).ne(0));
  Tensor am_float = randn({L, S});
  Tensor am3 = randn({N * H, L, S});
  struct C {
    const char* what;
    Tensor kpm, am;
  };
  for (const C& c : {C{"kpm bool", kpm, {}}, C{"kpm float", where(kpm, Scalar(-1e9), Scalar(0.0)), {}},
                     C{"attn bool", {}, am_bool}, C{"attn float", {}, am_float}, C{"attn 3-D", {}, am3},
                     C{"both", kpm, am_float}, C{"both bool", kpm, am_bool}}) {
    SCOPED_TRACE(c.what);
    auto [out, w] = m(q, k, v, c.kpm, true, c.am, false);
    auto [ro, rw] = reference_mha(*m, q, k, v, c.kpm, c.am);
    EXPECT_TRUE(close(out, ro, 1e-5, 1e-5));
    EXPECT_TRUE(close(w, rw, 1e-5, 1e-6));
  }
  // masked keys get zero weight
  auto [out, w] = m(q, k, v, kpm);
  EXPECT_EQ(where(kpm.unsqueeze(1).expand({N, L, S}), w, Scalar(0.0)).abs().sum().item<double>(), 0.0);
  // is_causal without a mask builds the causal mask; with one, the mask is used
  Tensor causal = ones({L, S}, kBool).triu(1);  // true = not allowed
  auto [co, cw] = m->forward(q, k, v, {}, true, {}, true, /*is_causal=*/true);
  EXPECT_TRUE(close(co, reference_mha(*m, q, k, v, {}, causal).first, 1e-5, 1e-5));
  auto [ho, hw] = m->forward(q, k, v, {}, true, am_float, true, /*is_causal=*/true);
  EXPECT_TRUE(close(ho, reference_mha(*m, q, k, v, {}, am_float).first, 1e-5, 1e-5));
}

TEST(MultiheadAttention, FullyMaskedRowsAreNaNWithWeights) {
  // PyTorch's MultiheadAttention computes the weights with a plain softmax: a query whose keys are
  // all masked gets NaN weights and a NaN output, and the NaN reaches every parameter's gradient;
  // with need_weights=False it runs scaled_dot_product_attention, whose rows are 0 (the output is
  // out_proj's bias). torch 2.15, batch_first, E = 4, H = 2, parameter i = linspace(-0.5, 0.5) *
  // (1 + 0.1 i), x = linspace(-1, 1, 24).reshape(2, 3, 4), kpm = [[F, F, T], [T, T, T]]:
  //   need_weights=True: out[0, 0] = [0.33456218, 0.07806307, -0.17843604, -0.43493521],
  //   out[1] and w[1] all NaN; out[0].sum().backward(): in_proj_weight.grad has NaN,
  //   out_proj.bias.grad = [3, 3, 3, 3]; need_weights=False: out[1, i] = [-0.65, -0.21666664,
  //   0.21666664, 0.65]
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(4, 2).batch_first(true));
  {
    NoGradGuard ng;
    int i = 0;
    for (Tensor p : m->parameters()) {
      p.copy_(linspace(-0.5, 0.5, p.numel()).reshape(p.sizes()) * (1 + 0.1 * i));
      ++i;
    }
  }
  const Tensor x = linspace(-1, 1, 24).reshape({2, 3, 4});
  const Tensor kpm = tensor<bool>({false, false, true, true, true, true}).reshape({2, 3});
  auto [out, w] = m(x, x, x, kpm);
  EXPECT_TRUE(close(out[0][0], tensor<float>({0.33456218f, 0.07806307f, -0.17843604f, -0.43493521f}), 1e-6, 1e-6));
  EXPECT_TRUE(out[0].isfinite().all().item<bool>());
  EXPECT_TRUE(out[1].isnan().all().item<bool>());
  EXPECT_TRUE(w[0].isfinite().all().item<bool>());
  EXPECT_TRUE(w[1].isnan().all().item<bool>());
  out[0].sum().backward();
  EXPECT_TRUE(m->in_proj_weight.grad().isnan().any().item<bool>());
  EXPECT_TRUE(close(m->out_proj->bias.grad(), full({4}, 3.0), 0, 0));
  auto [o2, w2] = m(x, x, x, kpm, false);
  EXPECT_FALSE(w2.defined());
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_TRUE(close(o2[1][i], tensor<float>({-0.65f, -0.21666664f, 0.21666664f, 0.65f}), 1e-6, 1e-6));
}

TEST(MultiheadAttention, LayoutsAndOptions) {
  manual_seed(33);
  const int64_t E = 8, L = 3, S = 4, N = 2;
  // batch_first
  nn::MultiheadAttention bf(nn::MultiheadAttentionOptions(E, 2).batch_first(true));
  Tensor q = randn({N, L, E}), k = randn({N, S, E}), v = randn({N, S, E});
  auto [out, w] = bf(q, k, v);
  EXPECT_EQ(out.sizes(), IntArrayRef({N, L, E}));
  EXPECT_TRUE(close(out, reference_mha(*bf, q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)).first.transpose(0, 1),
                    1e-5, 1e-5));
  // unbatched input (L, E): output (L, E), weights (L, S)
  nn::MultiheadAttention m(E, 4);
  Tensor qu = randn({L, E}), ku = randn({S, E}), vu = randn({S, E});
  auto [uo, uw] = m(qu, ku, vu, arange(S).eq(2));
  EXPECT_EQ(uo.sizes(), IntArrayRef({L, E}));
  EXPECT_EQ(uw.sizes(), IntArrayRef({L, S}));
  auto [ro, rw] = reference_mha(*m, qu.unsqueeze(1), ku.unsqueeze(1), vu.unsqueeze(1), arange(S).eq(2).unsqueeze(0));
  EXPECT_TRUE(close(uo, ro.squeeze(1), 1e-5, 1e-5));
  EXPECT_TRUE(close(uw, rw.mean(1).squeeze(0), 1e-5, 1e-6));
  // kdim / vdim, add_bias_kv and add_zero_attn, no bias
  for (bool zero_attn : {false, true}) {
    SCOPED_TRACE(zero_attn);
    nn::MultiheadAttention kv(nn::MultiheadAttentionOptions(E, 2).kdim(5).vdim(3).add_bias_kv(true).add_zero_attn(zero_attn).bias(false));
    Tensor qq = randn({L, N, E}), kk = randn({S, N, 5}), vv = randn({S, N, 3});
    Tensor kp = arange(S).eq(1).unsqueeze(0).expand({N, S});
    Tensor am = randn({L, S});
    auto [o, ww] = kv(qq, kk, vv, kp, true, am, false);
    auto [ro2, rw2] = reference_mha(*kv, qq, kk, vv, kp, am);
    EXPECT_EQ(ww.size(-1), S + 1 + (zero_attn ? 1 : 0));
    EXPECT_TRUE(close(o, ro2, 1e-5, 1e-5));
    EXPECT_TRUE(close(ww, rw2, 1e-5, 1e-6));
  }
}

TEST(MultiheadAttention, GradientsMatchTheReference) {
  manual_seed(34);
  const int64_t E = 6, L = 3, S = 4, N = 2;
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(E, 3).add_bias_kv(true), kDouble);
  Tensor q = randn({L, N, E}, kDouble).requires_grad_(), k = randn({S, N, E}, kDouble), v = randn({S, N, E}, kDouble);
  Tensor kpm = arange(S).eq(3).unsqueeze(0).expand({N, S});
  Tensor g = randn({L, N, E}, kDouble), gw = randn({N, L, S + 1}, kDouble);
  TensorList params = m->parameters();
  TensorList ins = params;
  ins.push_back(q);
  auto [o, w] = m(q, k, v, kpm);
  TensorList g1 = autograd::grad({(o * g).sum() + (w * gw).sum()}, ins);
  auto [ro, rw] = reference_mha(*m, q, k, v, kpm);
  TensorList g2 = autograd::grad({(ro * g).sum() + (rw.mean(1) * gw).sum()}, ins);
  for (size_t i = 0; i < ins.size(); ++i) EXPECT_TRUE(close(g1[i], g2[i], 1e-9, 1e-11)) << "input " << i;
  // gradcheck of the module as a function of its input
  auto f = [&](const TensorList& t) { return std::get<0>(m(t[0], t[1], t[2], kpm)); };
  EXPECT_TRUE(gradcheck_ok(f, {q, k.requires_grad_(), v.requires_grad_()}));
}

TEST(MultiheadAttention, DropoutOnlyInTraining) {
  manual_seed(35);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).dropout(0.5));
  Tensor x = randn({20, 2, 8});
  auto [o1, w1] = m->forward(x, x, x, {}, true, {}, false);
  EXPECT_GT(w1.eq(0).to(kDouble).mean().item<double>(), 0.3);  // dropped probabilities are returned as zeros
  m->eval();
  auto [o2, w2] = m->forward(x, x, x, {}, true, {}, false);
  EXPECT_EQ(w2.eq(0).sum().item<int64_t>(), 0);
  auto [ro, rw] = reference_mha(*m, x, x, x);
  EXPECT_TRUE(close(o2, ro, 1e-5, 1e-5));
}

TEST(MultiheadAttention, Errors) {
  const char* op = "[MultiheadAttention]";
  expect_error([] { nn::MultiheadAttention(10, 3); }, {op, "divisible"});
  expect_error([] { nn::MultiheadAttention(0, 1); }, {op, "positive"});
  nn::MultiheadAttention m(8, 2);
  Tensor q = randn({3, 2, 8}), k = randn({4, 2, 8});
  expect_error([&] { m(randn({2, 3, 2, 8}), k, k); }, {op, "4-D"});
  expect_error([&] { m(randn({3, 2, 6}), k, k); }, {op, "embedding dim 8"});
  expect_error([&] { m(q, randn({4, 3, 8}), randn({4, 3, 8})); }, {op, "batch size"});
  expect_error([&] { m(q, k, randn({5, 2, 8})); }, {op, "same length"});
  expect_error([&] { m(q, k, k, ones({2, 5}, kBool)); }, {op, "key_padding_mask of shape [2, 5]"});
  expect_error([&] { m->forward(q, k, k, {}, true, ones({3, 5}, kBool)); }, {op, "attn_mask of shape [3, 5]"});
  expect_error([&] { m->forward(q, k, k, {}, true, ones({3, 4}, kInt64)); }, {op, "only bool and floating"});
  expect_error([&] { m(q, k, k, ones({4}, kBool)); }, {op, "key_padding_mask must be 2-D"});
}
