// Gradients of the matrix products: mm, bmm, matmul (every rank case and
// broadcast batches), dot, mv, outer, addmm, einsum. Checked against finite
// differences (gradcheck), on contiguous and non-contiguous float64 leaves,
// with double backward for the products.
#include <gtest/gtest.h>

#include "brisk/brisk.h"
#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;
using brisk::testing::leaf_noncontig;

namespace {

/// A non-contiguous float64 leaf: the last two dims transposed when both are
/// larger than 1 (batch dims of size 1 would make leaf_noncontig contiguous).
Tensor noncontig(IntArrayRef s) {
  const size_t n = s.size();
  if (n < 2 || s[n - 1] == 1 || s[n - 2] == 1) return leaf_noncontig(s);
  std::vector<int64_t> t(s.begin(), s.end());
  std::swap(t[n - 1], t[n - 2]);
  Tensor r = (rand(IntArrayRef(t), kDouble) * 2 - 1).transpose(-1, -2).detach();
  EXPECT_FALSE(r.is_contiguous());
  return r.requires_grad_();
}

class GradLinalg : public ::testing::TestWithParam<bool> {
 protected:
  /// A float64 leaf, non-contiguous when the test's parameter says so.
  Tensor L(IntArrayRef s) const { return GetParam() ? noncontig(s) : leaf(s); }
};

Tensor mm2(const TensorList& t) { return t[0].mm(t[1]); }

}  // namespace

TEST_P(GradLinalg, Mm) {
  EXPECT_TRUE(gradcheck_ok(mm2, {L({3, 4}), L({4, 5})}, /*grad_grad=*/true));
  // only one side requires grad
  Tensor b = L({4, 2}).detach();
  EXPECT_TRUE(gradcheck_ok([b](const TensorList& t) { return t[0].mm(b); }, {L({3, 4})}, true));
  Tensor a = L({3, 4}).detach();
  EXPECT_TRUE(gradcheck_ok([a](const TensorList& t) { return a.mm(t[0]); }, {L({4, 2})}, true));
}

TEST_P(GradLinalg, Bmm) {
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].bmm(t[1]); }, {L({2, 3, 4}), L({2, 4, 2})}, true));
}

TEST_P(GradLinalg, MatmulRankCases) {
  auto mat = [](const TensorList& t) { return matmul(t[0], t[1]); };
  struct Case {
    std::vector<int64_t> a, b;
  };
  const std::vector<Case> cases = {
      {{4}, {4}},              // dot
      {{3, 4}, {4}},           // mv
      {{4}, {4, 3}},           // vector @ matrix
      {{3, 4}, {4, 2}},        // mm
      {{2, 3, 4}, {4, 2}},     // batch folded into rows
      {{2, 2, 3, 4}, {4, 2}},  // two batch dims folded (b's gradient is one GEMM)
      {{2, 3, 4}, {4}},        // batched matrix @ vector
      {{4}, {2, 4, 3}},        // vector @ batched matrix
      {{3, 4}, {2, 4, 2}},     // matrix broadcast over b's batch
      {{2, 3, 4}, {2, 4, 2}},  // bmm
      {{2, 1, 3, 4}, {3, 4, 2}},  // broadcast batch dims on both sides
      {{1, 3, 4}, {2, 1, 4, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "a " << IntArrayRef(c.a) << " b " << IntArrayRef(c.b));
    EXPECT_TRUE(gradcheck_ok(mat, {L(c.a), L(c.b)}, /*grad_grad=*/true));
  }
  // nn::Linear's form: a batch against a transposed (out, in) weight
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return matmul(t[0], t[1].t()); }, {L({2, 3, 4}), L({5, 4})},
                           /*grad_grad=*/true));
}

TEST_P(GradLinalg, MatmulBroadcastGradMatchesLoop) {
  // a (3, 4) used by every batch of b (2, 4, 5): a's gradient is the sum over
  // the batch of g_i @ b_i^T (computed here without autograd).
  Tensor a = L({3, 4}), b = L({2, 4, 5});
  Tensor g = rand({2, 3, 5}, kDouble);
  matmul(a, b).backward(g);
  Tensor want_a = zeros({3, 4}, kDouble), want_b = zeros({2, 4, 5}, kDouble);
  Tensor ad = a.detach(), bd = b.detach();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t k = 0; k < 4; ++k)
        for (int64_t n = 0; n < 5; ++n) {
          const double gv = g.index({i, r, n}).item<double>();
          want_a.index_put_({r, k}, want_a.index({r, k}).item<double>() + gv * bd.index({i, k, n}).item<double>());
          want_b.index_put_({i, k, n},
                            want_b.index({i, k, n}).item<double>() + gv * ad.index({r, k}).item<double>());
        }
  EXPECT_TRUE(brisk::testing::close(a.grad(), want_a, 1e-12, 1e-12));
  EXPECT_TRUE(brisk::testing::close(b.grad(), want_b, 1e-12, 1e-12));
}

TEST_P(GradLinalg, DotMvOuter) {
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return dot(t[0], t[1]); }, {L({5}), L({5})}, true));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return mv(t[0], t[1]); }, {L({3, 5}), L({5})}, true));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return outer(t[0], t[1]); }, {L({3}), L({4})}, true));
}

TEST_P(GradLinalg, Addmm) {
  // (no grad_grad with beta = 1: self's gradient is the output gradient
  // itself, which gradcheck's finite differences cannot follow, see the report)
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return addmm(t[0], t[1], t[2]); },
                           {L({3, 5}), L({3, 4}), L({4, 5})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return addmm(t[0], t[1], t[2], 0.5, -2.0); },
                           {L({3, 5}), L({3, 4}), L({4, 5})}, true));
  // self broadcast over the rows (a bias)
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return addmm(t[0], t[1], t[2], 1.5, 1); },
                           {L({5}), L({3, 4}), L({4, 5})}, true));
  // beta = 0 ignores self: its gradient is zero
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return addmm(t[0], t[1], t[2], 0, 1); },
                           {L({3, 5}), L({3, 4}), L({4, 5})}));
}

TEST_P(GradLinalg, Einsum) {
  struct Case {
    const char* eq;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 2}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 2}}},
      {"i,i->", {{4}, {4}}},
      {"i,j->ij", {{3}, {4}}},
      {"ij->ji", {{3, 4}}},
      {"ij->", {{3, 4}}},
      {"ij->j", {{3, 4}}},
      {"ii->i", {{3, 3}}},
      {"bij,jk->bk", {{2, 3, 4}, {4, 2}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 2}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.eq);
    TensorList in;
    for (const auto& s : c.shapes) in.push_back(L(s));
    const std::string eq = c.eq;
    // (* 1.0: "ij->ji" and "ii->i" return views of the input, which gradcheck's
    // in-place perturbation would change after the fact)
    EXPECT_TRUE(gradcheck_ok(
        [eq](const TensorList& t) { return einsum(eq, std::vector<Tensor>(t.begin(), t.end())) * 1.0; }, in));
  }
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return einsum("bij,bjk->bik", {t[0], t[1]}); },
                           {L({2, 3, 4}), L({2, 4, 2})}, true));
}

INSTANTIATE_TEST_SUITE_P(Layouts, GradLinalg, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "NonContig" : "Contig"; });

TEST(GradLinalgNodes, Names) {
  Tensor a = leaf({2, 3}), b = leaf({3, 4}), v = leaf({3}), w = leaf({3});
  EXPECT_EQ(a.mm(b).grad_fn()->name(), "MmBackward0");
  EXPECT_EQ(a.unsqueeze(0).detach().requires_grad_().bmm(b.unsqueeze(0).detach()).grad_fn()->name(), "BmmBackward0");
  EXPECT_EQ(dot(v, w).grad_fn()->name(), "DotBackward0");
  EXPECT_EQ(mv(a, v).grad_fn()->name(), "MvBackward0");
  EXPECT_EQ(addmm(leaf({2, 4}), a, b).grad_fn()->name(), "AddmmBackward0");
  EXPECT_EQ(matmul(a, b).grad_fn()->name(), "MmBackward0");
  EXPECT_EQ(matmul(v, w).grad_fn()->name(), "DotBackward0");
}

TEST(GradLinalgNodes, NoGraphWithoutGrad) {
  Tensor a = rand({2, 3}, kDouble), b = leaf({3, 4});
  {
    NoGradGuard g;
    EXPECT_FALSE(matmul(a, b).requires_grad());
    EXPECT_FALSE(a.mm(b).requires_grad());
  }
  EXPECT_FALSE(matmul(a, b.detach()).requires_grad());
  EXPECT_TRUE(matmul(a, b).requires_grad());
}

TEST(GradLinalgNodes, OutVariantsRefuseGrad) {
  Tensor a = leaf({2, 3}), b = leaf({3, 4});
  Tensor out = empty({2, 4}, kDouble);
  brisk::testing::expect_error([&] { mm_out(out, a, b); }, {"out="});
  brisk::testing::expect_error([&] { matmul_out(out, a, b); }, {"out="});
  NoGradGuard g;
  mm_out(out, a, b);  // fine without grad mode
}

TEST(GradLinalgNodes, SavedOperandModifiedInPlace) {
  Tensor a = leaf({2, 3}), b0 = leaf({3, 4});
  Tensor b = b0 * 1.0;
  Tensor r = a.mm(b);
  b.mul_(2.0);
  EXPECT_THROW(r.backward(ones_like(r)), brisk::Error);
}
