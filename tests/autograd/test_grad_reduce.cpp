// Gradients of the reductions (sum, mean, prod, max/min, amax/amin, var/std,
// var_mean, norm, logsumexp) and of sort/topk: gradcheck over a table of
// calls on contiguous and non-contiguous float64 inputs, second derivatives
// for sum/mean/logsumexp/var, and analytic values at the special points
// (zeros in prod, ties in max, the 2-norm at 0).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;
using brisk::testing::leaf_noncontig;

namespace {

using Fn = std::function<Tensor(const Tensor&)>;

struct Case {
  std::string name;
  Fn fn;
  std::vector<int64_t> shape;
  double lo = -1.0, hi = 1.0;
  bool grad_grad = false;
};

// Every case on a contiguous and a non-contiguous leaf.
void run_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    for (bool contiguous : {true, false}) {
      SCOPED_TRACE(c.name + (contiguous ? " (contiguous)" : " (non-contiguous)"));
      const IntArrayRef shape(c.shape);
      Tensor x = contiguous ? leaf(shape, c.lo, c.hi) : leaf_noncontig(shape, c.lo, c.hi);
      Fn f = c.fn;
      EXPECT_TRUE(gradcheck_ok([f](const TensorList& t) { return f(t[0]); }, {x}, c.grad_grad));
    }
  }
}

const std::vector<int64_t> k3d{3, 4, 5};
const std::vector<int64_t> k2d{4, 3};
const std::vector<int64_t> k1d{6};
const std::vector<int64_t> k0d{};

Tensor d(std::initializer_list<double> v) { return tensor(v, kDouble); }
Tensor d2(std::initializer_list<std::initializer_list<double>> v) { return tensor(v, kDouble); }

// x.grad after y.backward(grad) (ones when y is a scalar).
Tensor grad_of(const Tensor& x, const Tensor& y, const Tensor& grad = Tensor()) {
  y.backward(grad.defined() ? grad : ones_like(y));
  return x.grad();
}

}  // namespace

// ---- the op table ----------------------------------------------------------------------

TEST(GradReduce, Sum) {
  run_cases({
      {"sum()", [](const Tensor& x) { return x.sum(); }, k3d},
      {"sum() 1-D", [](const Tensor& x) { return x.sum(); }, k1d},
      {"sum() 0-dim", [](const Tensor& x) { return x.sum(); }, k0d},
      {"sum(0)", [](const Tensor& x) { return x.sum(0); }, k3d},
      {"sum(-1)", [](const Tensor& x) { return x.sum(-1); }, k3d},
      {"sum(1, keepdim)", [](const Tensor& x) { return x.sum(1, true); }, k3d},
      {"sum({0, 2})", [](const Tensor& x) { return x.sum({0, 2}); }, k3d},
      {"sum({-1, 0}, keepdim)", [](const Tensor& x) { return x.sum({-1, 0}, true); }, k3d},
      {"sum({}, keepdim)", [](const Tensor& x) { return x.sum(IntArrayRef{}, true); }, k3d},
      {"sum(0) 2-D", [](const Tensor& x) { return x.sum(0); }, k2d},
      {"sum(-1, keepdim) 2-D", [](const Tensor& x) { return x.sum(-1, true); }, k2d},
      {"sum(0) 0-dim", [](const Tensor& x) { return x.sum(0); }, k0d},
      {"sum(dtype=double)", [](const Tensor& x) { return x.sum(kDouble); }, k2d},
      // the output is weighted so that every gradient entry differs
      {"sum(1) * w", [](const Tensor& x) { return x.sum(1) * arange(1, 4, 1, kDouble).view({3, 1}); }, k3d},
  });
}

TEST(GradReduce, Mean) {
  run_cases({
      {"mean()", [](const Tensor& x) { return x.mean(); }, k3d},
      {"mean() 0-dim", [](const Tensor& x) { return x.mean(); }, k0d},
      {"mean(0)", [](const Tensor& x) { return x.mean(0); }, k3d},
      {"mean(-1, keepdim)", [](const Tensor& x) { return x.mean(-1, true); }, k3d},
      {"mean({0, 2})", [](const Tensor& x) { return x.mean({0, 2}); }, k3d},
      {"mean({-1, -2}, keepdim)", [](const Tensor& x) { return x.mean({-1, -2}, true); }, k3d},
      {"mean(1) 2-D", [](const Tensor& x) { return x.mean(1); }, k2d},
      {"mean(dtype=double)", [](const Tensor& x) { return x.mean(kDouble); }, k2d},
  });
}

TEST(GradReduce, Prod) {
  // Away from 0 so that r / x is well conditioned; zeros are tested below.
  run_cases({
      {"prod()", [](const Tensor& x) { return x.prod(); }, k2d, 0.5, 1.5},
      {"prod() 0-dim", [](const Tensor& x) { return x.prod(); }, k0d, 0.5, 1.5},
      {"prod() 1-D", [](const Tensor& x) { return x.prod(); }, k1d, -1.5, -0.5},
      {"prod(0)", [](const Tensor& x) { return x.prod(0); }, k3d, 0.5, 1.5},
      {"prod(-1)", [](const Tensor& x) { return x.prod(-1); }, k3d, -1.5, -0.5},
      {"prod(1, keepdim)", [](const Tensor& x) { return x.prod(1, true); }, k3d, 0.5, 1.5},
      {"prod(0) 2-D", [](const Tensor& x) { return x.prod(0); }, k2d, 0.5, 1.5},
  });
}

TEST(GradReduce, MaxMin) {
  // Random values: ties have probability 0.
  run_cases({
      {"max()", [](const Tensor& x) { return x.max(); }, k3d},
      {"min()", [](const Tensor& x) { return x.min(); }, k3d},
      {"max() 0-dim", [](const Tensor& x) { return x.max(); }, k0d},
      {"max(0)", [](const Tensor& x) { return std::get<0>(x.max(0)); }, k3d},
      {"max(-1, keepdim)", [](const Tensor& x) { return std::get<0>(x.max(-1, true)); }, k3d},
      {"max(1) 2-D", [](const Tensor& x) { return std::get<0>(x.max(1)); }, k2d},
      {"max(0) 1-D", [](const Tensor& x) { return std::get<0>(x.max(0)); }, k1d},
      {"max(0) 0-dim", [](const Tensor& x) { return std::get<0>(x.max(0)); }, k0d},
      {"min(1)", [](const Tensor& x) { return std::get<0>(x.min(1)); }, k3d},
      {"min(-2, keepdim)", [](const Tensor& x) { return std::get<0>(x.min(-2, true)); }, k3d},
      {"amax()", [](const Tensor& x) { return x.amax(); }, k3d},
      {"amax(0)", [](const Tensor& x) { return x.amax(0); }, k3d},
      {"amax({-1, 0}, keepdim)", [](const Tensor& x) { return x.amax({-1, 0}, true); }, k3d},
      {"amin(1)", [](const Tensor& x) { return x.amin(1); }, k3d},
      {"amin({0, 2})", [](const Tensor& x) { return x.amin({0, 2}); }, k3d},
      {"amin(-1, keepdim) 2-D", [](const Tensor& x) { return x.amin(-1, true); }, k2d},
  });
}

TEST(GradReduce, VarStd) {
  run_cases({
      {"var()", [](const Tensor& x) { return x.var(); }, k3d},
      {"var(correction=0)", [](const Tensor& x) { return var(x, std::nullopt, 0); }, k3d},
      {"var(0)", [](const Tensor& x) { return x.var(0); }, k3d},
      {"var(-1, correction=2, keepdim)", [](const Tensor& x) { return x.var(-1, 2, true); }, k3d},
      {"var({0, 2})", [](const Tensor& x) { return var(x, std::vector<int64_t>{0, 2}); }, k3d},
      {"var({-1, 0}, correction=0, keepdim)",
       [](const Tensor& x) { return var(x, std::vector<int64_t>{-1, 0}, 0, true); }, k3d},
      {"var(1) 2-D", [](const Tensor& x) { return x.var(1); }, k2d},
      {"var() 1-D", [](const Tensor& x) { return x.var(); }, k1d},
      {"var(correction=0.5)", [](const Tensor& x) { return var(x, std::vector<int64_t>{1}, 0.5); }, k2d},
      {"std()", [](const Tensor& x) { return x.std(); }, k3d},
      {"std(correction=0)", [](const Tensor& x) { return brisk::std(x, std::nullopt, 0); }, k3d},
      {"std(0)", [](const Tensor& x) { return x.std(0); }, k3d},
      {"std(-1, keepdim)", [](const Tensor& x) { return x.std(-1, 1, true); }, k3d},
      {"std({0, 2})", [](const Tensor& x) { return brisk::std(x, std::vector<int64_t>{0, 2}); }, k3d},
      {"std(0) 2-D", [](const Tensor& x) { return x.std(0, 0); }, k2d},
      {"var_mean(): var + 3 mean",
       [](const Tensor& x) {
         auto [v, m] = var_mean(x);
         return v + m * 3;
       },
       k3d},
      {"var_mean(1): var only", [](const Tensor& x) { return std::get<0>(var_mean(x, std::vector<int64_t>{1})); }, k3d},
      {"var_mean(1): mean only", [](const Tensor& x) { return std::get<1>(var_mean(x, std::vector<int64_t>{1})); }, k3d},
      {"var_mean({-1, 0}, correction=0, keepdim)",
       [](const Tensor& x) {
         auto [v, m] = var_mean(x, std::vector<int64_t>{-1, 0}, 0, true);
         return v * 2 - m;
       },
       k3d},
  });
}

TEST(GradReduce, Norm) {
  const double inf = std::numeric_limits<double>::infinity();
  run_cases({
      {"norm()", [](const Tensor& x) { return x.norm(); }, k3d},
      {"norm() 0-dim", [](const Tensor& x) { return x.norm(); }, k0d},
      {"norm(2, {1})", [](const Tensor& x) { return x.norm(2, {1}); }, k3d},
      {"norm(2, {-1, 0}, keepdim)", [](const Tensor& x) { return x.norm(2, {-1, 0}, true); }, k3d},
      {"norm(1)", [](const Tensor& x) { return x.norm(1); }, k3d},
      {"norm(1, {0})", [](const Tensor& x) { return x.norm(1, {0}); }, k2d},
      {"norm(inf)", [inf](const Tensor& x) { return x.norm(inf); }, k3d},
      {"norm(inf, {-1})", [inf](const Tensor& x) { return x.norm(inf, {-1}); }, k3d},
      {"norm(-inf, {1}, keepdim)", [inf](const Tensor& x) { return x.norm(-inf, {1}, true); }, k3d},
      {"norm(3)", [](const Tensor& x) { return x.norm(3); }, k3d},
      {"norm(3, {0, 2})", [](const Tensor& x) { return x.norm(3, {0, 2}); }, k3d},
      {"norm(1.5, {1})", [](const Tensor& x) { return x.norm(1.5, {1}); }, k3d},
      {"norm(0.5, {-1})", [](const Tensor& x) { return x.norm(0.5, {-1}); }, k2d, 0.2, 1.0},
      {"norm(-2)", [](const Tensor& x) { return x.norm(-2); }, k2d, 0.2, 1.0},
      {"norm(0, {1})", [](const Tensor& x) { return x.norm(0, {1}); }, k2d},
  });
}

TEST(GradReduce, Logsumexp) {
  run_cases({
      {"logsumexp({})", [](const Tensor& x) { return x.logsumexp(IntArrayRef{}); }, k3d},
      {"logsumexp(0)", [](const Tensor& x) { return x.logsumexp(0); }, k3d},
      {"logsumexp(-1, keepdim)", [](const Tensor& x) { return x.logsumexp(-1, true); }, k3d},
      {"logsumexp({0, 2})", [](const Tensor& x) { return x.logsumexp({0, 2}); }, k3d},
      {"logsumexp(1) 2-D", [](const Tensor& x) { return x.logsumexp(1); }, k2d, -5, 5},
      {"logsumexp(0) 1-D", [](const Tensor& x) { return x.logsumexp(0); }, k1d},
      {"logsumexp(0) 0-dim", [](const Tensor& x) { return x.logsumexp(0); }, k0d},
  });
}

TEST(GradReduce, SortTopk) {
  run_cases({
      {"sort(-1)", [](const Tensor& x) { return std::get<0>(x.sort(-1)); }, k3d},
      {"sort(0, descending)", [](const Tensor& x) { return std::get<0>(x.sort(0, true)); }, k3d},
      {"sort(1) 2-D", [](const Tensor& x) { return std::get<0>(x.sort(1)); }, k2d},
      {"sort 1-D", [](const Tensor& x) { return std::get<0>(x.sort()); }, k1d},
      {"sort 0-dim", [](const Tensor& x) { return std::get<0>(x.sort()); }, k0d},
      {"topk(2)", [](const Tensor& x) { return std::get<0>(x.topk(2)); }, k3d},
      {"topk(2, 0, smallest)", [](const Tensor& x) { return std::get<0>(x.topk(2, 0, false)); }, k3d},
      {"topk(3, 1, unsorted)", [](const Tensor& x) { return std::get<0>(x.topk(3, 1, true, false)); }, k3d},
      {"topk(1, -2) 2-D", [](const Tensor& x) { return std::get<0>(x.topk(1, -2)); }, k2d},
      {"topk(4) 1-D", [](const Tensor& x) { return std::get<0>(x.topk(4)); }, k1d},
      {"topk(0)", [](const Tensor& x) { return std::get<0>(x.topk(0)); }, k2d},
  });
}

// ---- second derivatives ----------------------------------------------------------------

TEST(GradReduce, DoubleBackward) {
  // sum and mean are linear: their double backward only checks that the
  // backward itself is differentiable in the gradient; the outer pow makes
  // the second derivative nonzero.
  run_cases({
      {"sum()^2", [](const Tensor& x) { return x.sum().pow(2); }, k2d, -1, 1, true},
      {"sum(1) * mean(1)", [](const Tensor& x) { return x.sum(1) * x.mean(1); }, k3d, -1, 1, true},
      {"sum({0, 2}, keepdim)^2", [](const Tensor& x) { return x.sum({0, 2}, true).pow(2); }, k3d, -1, 1, true},
      {"mean()^2", [](const Tensor& x) { return x.mean().pow(2); }, k2d, -1, 1, true},
      {"mean(-1)^2", [](const Tensor& x) { return x.mean(-1).pow(2); }, k3d, -1, 1, true},
      {"logsumexp({})", [](const Tensor& x) { return x.logsumexp(IntArrayRef{}); }, k2d, -1, 1, true},
      {"logsumexp(1)", [](const Tensor& x) { return x.logsumexp(1); }, k3d, -1, 1, true},
      {"logsumexp(0, keepdim)", [](const Tensor& x) { return x.logsumexp(0, true); }, k2d, -1, 1, true},
      {"var()", [](const Tensor& x) { return x.var(); }, k2d, -1, 1, true},
      {"var(1)", [](const Tensor& x) { return x.var(1); }, k3d, -1, 1, true},
      {"var(-1, correction=0, keepdim)", [](const Tensor& x) { return x.var(-1, 0, true); }, k3d, -1, 1, true},
      // the other formulas are written with differentiable ops too
      {"prod(1)", [](const Tensor& x) { return x.prod(1); }, k3d, 0.5, 1.5, true},
      {"prod()", [](const Tensor& x) { return x.prod(); }, k2d, 0.5, 1.5, true},
      {"std(0)", [](const Tensor& x) { return x.std(0); }, k3d, -1, 1, true},
      {"var_mean(1)",
       [](const Tensor& x) {
         auto [v, m] = var_mean(x, std::vector<int64_t>{1});
         return v * m;
       },
       k3d, -1, 1, true},
      {"norm()", [](const Tensor& x) { return x.norm(); }, k2d, -1, 1, true},
      {"norm(3, {1})", [](const Tensor& x) { return x.norm(3, {1}); }, k3d, -1, 1, true},
      {"amax(1)^2", [](const Tensor& x) { return x.amax(1).pow(2); }, k3d, -1, 1, true},
      {"max(0)^2", [](const Tensor& x) { return std::get<0>(x.max(0)).pow(2); }, k3d, -1, 1, true},
      {"sort(-1)^2", [](const Tensor& x) { return std::get<0>(x.sort(-1)).pow(2); }, k3d, -1, 1, true},
      {"topk(2)^2", [](const Tensor& x) { return std::get<0>(x.topk(2)).pow(2); }, k3d, -1, 1, true},
  });
}

// ---- special points --------------------------------------------------------------------

TEST(GradReduce, ProdWithZeros) {
  // one zero: the gradient at the zero is the product of the others, 0 elsewhere
  {
    Tensor x = d({2, 0, 3, 4}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.prod()), d({0, 24, 0, 0})));
  }
  // two zeros: every partial product contains a zero
  {
    Tensor x = d({2, 0, 3, 0}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.prod()), d({0, 0, 0, 0})));
  }
  // along a dim: rows with one zero, none, and two zeros
  {
    Tensor x = d2({{2, 0, 3}, {1, 2, 3}, {0, 5, 0}}).requires_grad_();
    Tensor g = grad_of(x, x.prod(1), d({1, 10, 100}));
    EXPECT_TRUE(close(g, d2({{0, 6, 0}, {60, 30, 20}, {0, 0, 0}})));
  }
  {
    Tensor x = d2({{2, 0}, {3, 4}, {5, 6}}).requires_grad_();
    Tensor g = grad_of(x, x.prod(0, true));
    EXPECT_TRUE(close(g, d2({{15, 24}, {10, 0}, {6, 0}})));
  }
  // prod is multilinear: central differences are exact, so gradcheck holds at zeros too
  for (Tensor x : {d({2, 0, 3, 4}), d({0, -1.5, 0, 2}), d({0.0})}) {
    x.requires_grad_();
    EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].prod(); }, {x}));
  }
  Tensor m = d2({{2, 0, 3}, {1, 2, 3}, {0, 5, 0}}).requires_grad_();
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].prod(1); }, {m}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].prod(-2, true); }, {m}));
  // the same values in a transposed buffer
  Tensor mt = d2({{2, 1, 0}, {0, 2, 5}, {3, 3, 0}}).transpose(0, 1).detach().requires_grad_();
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].prod(1); }, {mt}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].prod(); }, {mt}));
}

TEST(GradReduce, MaxTiesSplitEvenly) {
  {
    Tensor x = d({1, 3, 3, 2}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.max()), d({0, 0.5, 0.5, 0})));
  }
  {
    Tensor x = d({-1, -1, -1, 2}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.min() * 3), d({1, 1, 1, 0})));
  }
  {
    Tensor x = d2({{1, 1}, {2, 0}, {4, 4}}).requires_grad_();
    Tensor g = grad_of(x, x.amax(1), d({2, 3, 4}));
    EXPECT_TRUE(close(g, d2({{1, 1}, {3, 0}, {2, 2}})));
  }
  {
    Tensor x = d2({{5, 1}, {5, 1}, {0, 1}}).requires_grad_();
    Tensor g = grad_of(x, x.amin(0, true));
    EXPECT_TRUE(close(g, d2({{0, 1.0 / 3}, {0, 1.0 / 3}, {1, 1.0 / 3}})));
  }
  {
    // ties across several reduced dims share the whole gradient
    Tensor x = d2({{7, 1}, {7, 7}}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.amax({0, 1})), d2({{1.0 / 3, 0}, {1.0 / 3, 1.0 / 3}})));
  }
  {
    // max(dim) sends the gradient to the returned index only
    Tensor x = d2({{1, 3, 3}, {2, 0, 2}}).requires_grad_();
    auto [v, i] = x.max(1);
    Tensor g = grad_of(x, v, d({10, 20}));
    Tensor want = zeros({2, 3}, kDouble);
    auto iv = i.to_vector<int64_t>();
    ASSERT_EQ(iv.size(), 2u);
    EXPECT_TRUE(iv[0] == 1 || iv[0] == 2);
    EXPECT_TRUE(iv[1] == 0 || iv[1] == 2);
    want.index_put_({0, iv[0]}, 10.0);
    want.index_put_({1, iv[1]}, 20.0);
    EXPECT_TRUE(close(g, want));
  }
  {
    Tensor x = d2({{4, 1}, {2, 9}}).requires_grad_();
    auto [v, i] = x.min(0, true);
    EXPECT_EQ(v.sizes(), (IntArrayRef{1, 2}));
    EXPECT_TRUE(close(grad_of(x, v, d2({{5, 7}})), d2({{0, 7}, {5, 0}})));
  }
}

TEST(GradReduce, NormAtZero) {
  {
    Tensor x = zeros({3}, kDouble).requires_grad_();
    Tensor g = grad_of(x, x.norm());
    EXPECT_TRUE(close(g, zeros({3}, kDouble), 0, 0, /*equal_nan=*/false));
  }
  {
    // one zero row among nonzero ones: the zero row gets 0, the others x / |x|
    Tensor x = d2({{0, 0}, {3, 4}}).requires_grad_();
    Tensor g = grad_of(x, x.norm(2, {1}));
    EXPECT_TRUE(close(g, d2({{0, 0}, {0.6, 0.8}}), 1e-12, 1e-12, false));
  }
  {
    Tensor x = zeros({2, 2}, kDouble).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.norm(3)), zeros({2, 2}, kDouble), 0, 0, false));
  }
  {
    Tensor x = d({3, -4}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.norm()), d({0.6, -0.8}), 1e-12, 1e-12));
  }
  {
    Tensor x = d({3, -4, 0}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.norm(1)), d({1, -1, 0})));
  }
  {
    // inf norm: the largest |x| (ties share, sign kept)
    const double inf = std::numeric_limits<double>::infinity();
    Tensor x = d({3, -4, 4, 1}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.norm(inf)), d({0, -0.5, 0.5, 0})));
  }
}

TEST(GradReduce, StdOfConstantIsZero) {
  Tensor x = full({4}, 2.5, kDouble).requires_grad_();
  EXPECT_TRUE(close(grad_of(x, x.std()), zeros({4}, kDouble), 0, 0, false));
}

TEST(GradReduce, AnalyticValues) {
  {
    // d mean / dx = 1 / N, repeated over the reduced dims
    Tensor x = leaf({2, 5});
    EXPECT_TRUE(close(grad_of(x, x.mean(1), d({1, 2})), d2({{0.2, 0.2, 0.2, 0.2, 0.2}, {0.4, 0.4, 0.4, 0.4, 0.4}})));
  }
  {
    // d var / dx = 2 (x - mean) / (N - 1)
    Tensor x = d({1, 2, 4, 5}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.var()), d({-4.0 / 3, -2.0 / 3, 2.0 / 3, 4.0 / 3})));
  }
  {
    // logsumexp's gradient is softmax, finite for large inputs
    Tensor x = d({1000, 1000, -1e300}).requires_grad_();
    EXPECT_TRUE(close(grad_of(x, x.logsumexp(0)), d({0.5, 0.5, 0})));
    Tensor y = d({0, std::log(3.0)}).requires_grad_();
    EXPECT_TRUE(close(grad_of(y, y.logsumexp(0)), d({0.25, 0.75}), 1e-12, 1e-12));
  }
  {
    // sort/topk scatter the gradient back through the indices
    Tensor x = d({3, 1, 2}).requires_grad_();
    auto [v, i] = x.topk(2);
    EXPECT_TRUE(close(grad_of(x, v, d({1, 10})), d({1, 0, 10})));
    Tensor y = d({3, 1, 2}).requires_grad_();
    auto [sv, si] = y.sort();
    EXPECT_TRUE(close(grad_of(y, sv, d({1, 10, 100})), d({100, 1, 10})));
  }
  {
    // var_mean with only the mean used: the mean's gradient alone
    Tensor x = leaf({4});
    auto [v, m] = var_mean(x);
    EXPECT_TRUE(close(grad_of(x, m), full({4}, 0.25, kDouble)));
  }
}

// ---- recording ------------------------------------------------------------------------

TEST(GradReduce, GradFnNames) {
  Tensor x = leaf({2, 3});
  const double inf = std::numeric_limits<double>::infinity();
  auto name = [](const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : std::string("<none>"); };
  EXPECT_EQ(name(x.sum()), "SumBackward0");
  EXPECT_EQ(name(x.sum(0)), "SumBackward1");
  EXPECT_EQ(name(x.mean()), "MeanBackward0");
  EXPECT_EQ(name(x.mean(1)), "MeanBackward1");
  EXPECT_EQ(name(x.prod()), "ProdBackward0");
  EXPECT_EQ(name(x.prod(1)), "ProdBackward1");
  EXPECT_EQ(name(x.max()), "MaxBackward1");
  EXPECT_EQ(name(x.min()), "MinBackward1");
  EXPECT_EQ(name(std::get<0>(x.max(1))), "MaxBackward0");
  EXPECT_EQ(name(std::get<0>(x.min(1))), "MinBackward0");
  EXPECT_EQ(name(x.amax(0)), "AmaxBackward0");
  EXPECT_EQ(name(x.amin(0)), "AminBackward0");
  EXPECT_EQ(name(x.var()), "VarBackward0");
  EXPECT_EQ(name(x.std()), "StdBackward0");
  EXPECT_EQ(name(std::get<0>(var_mean(x))), "VarMeanBackward0");
  EXPECT_EQ(name(std::get<1>(var_mean(x))), "VarMeanBackward0");
  EXPECT_EQ(name(x.norm()), "NormBackward0");
  EXPECT_EQ(name(x.norm(inf, {1})), "NormBackward1");
  EXPECT_EQ(name(x.logsumexp(1)), "LogsumexpBackward0");
  EXPECT_EQ(name(std::get<0>(x.sort())), "SortBackward0");
  EXPECT_EQ(name(std::get<0>(x.topk(1))), "TopkBackward0");
  // indices and integer results don't require grad
  EXPECT_FALSE(std::get<1>(x.max(1)).requires_grad());
  EXPECT_FALSE(std::get<1>(x.sort()).requires_grad());
  EXPECT_FALSE(std::get<1>(x.topk(1)).requires_grad());
  EXPECT_FALSE(x.argmax().requires_grad());
  EXPECT_FALSE(x.argsort().requires_grad());
  EXPECT_FALSE(x.gt(0).any().requires_grad());
}

// Regression (difffuzz reduce:sum/prod/cumsum/cumprod:missing-error): a
// reduction of a tensor that requires grad to an integer or bool dtype is
// refused in grad mode (torch 2.15: "Autograd not support dtype: Long"; 1.13
// hit an internal assert); without grad mode, or through to(), it runs.
TEST(GradReduce, IntegerDtypeOfATensorThatRequiresGradIsRefused) {
  const Tensor x = leaf({2, 3});
  brisk::testing::expect_error([&] { x.sum(kInt64); }, {"[sum]", "Autograd not support dtype: int64"});
  brisk::testing::expect_error([&] { x.sum(IntArrayRef{0}, false, kInt32); }, {"[sum]", "int32"});
  brisk::testing::expect_error([&] { x.sum(kBool); }, {"[sum]", "bool"});
  brisk::testing::expect_error([&] { x.prod(kInt64); }, {"[prod]", "Autograd not support dtype"});
  brisk::testing::expect_error([&] { x.prod(1, false, kUInt8); }, {"[prod]", "uint8"});
  brisk::testing::expect_error([&] { x.cumsum(0, kInt64); }, {"[cumsum]", "Autograd not support dtype"});
  brisk::testing::expect_error([&] { x.cumprod(1, kInt64); }, {"[cumprod]", "Autograd not support dtype"});
  {
    NoGradGuard g;
    EXPECT_EQ(x.sum(kInt64).dtype(), kInt64);
    EXPECT_EQ(x.cumsum(0, kInt64).dtype(), kInt64);
  }
  EXPECT_FALSE(x.to(kInt64).sum().requires_grad());
  EXPECT_TRUE(x.sum(kFloat).requires_grad());  // another float dtype is fine
}

TEST(GradReduce, NoRecordingWithoutGrad) {
  Tensor x = leaf({2, 3});
  {
    NoGradGuard g;
    EXPECT_FALSE(x.sum().requires_grad());
    EXPECT_FALSE(x.logsumexp(1).requires_grad());
    EXPECT_FALSE(std::get<0>(x.sort()).requires_grad());
    EXPECT_FALSE(std::get<0>(var_mean(x)).requires_grad());
  }
  Tensor y = x.detach();
  EXPECT_FALSE(y.mean().requires_grad());
  EXPECT_FALSE(y.norm().requires_grad());
  EXPECT_FALSE(std::get<0>(y.max(0)).requires_grad());
  // a recorded reduction is one node whose only edge is the input
  Tensor s = x.logsumexp(1);
  ASSERT_TRUE(s.grad_fn());
  ASSERT_EQ(s.grad_fn()->next_edges().size(), 1u);
  EXPECT_EQ(s.grad_fn()->next_edges()[0].function->name(), "AccumulateGrad");
  Tensor v = x.var(1);
  ASSERT_EQ(v.grad_fn()->next_edges().size(), 1u);
  EXPECT_EQ(v.grad_fn()->next_edges()[0].function->name(), "AccumulateGrad");
}

TEST(GradReduce, DtypeArguments) {
  // sum/mean/prod with a dtype: the gradient comes back in the input's dtype
  Tensor x = leaf({2, 3});
  Tensor s = x.sum(kFloat);
  EXPECT_EQ(s.dtype(), kFloat);
  EXPECT_TRUE(s.requires_grad());
  Tensor g = grad_of(x, s);
  EXPECT_EQ(g.dtype(), kDouble);
  EXPECT_TRUE(close(g, ones({2, 3}, kDouble)));

  Tensor xf = rand({4}, kFloat).detach().requires_grad_();
  Tensor m = xf.mean(IntArrayRef{0}, false, kDouble);
  EXPECT_EQ(m.dtype(), kDouble);
  Tensor gm = grad_of(xf, m);
  EXPECT_EQ(gm.dtype(), kFloat);
  EXPECT_TRUE(close(gm, full({4}, 0.25, kFloat)));
}

TEST(GradReduce, OutVariantRefusesGrad) {
  Tensor x = leaf({2, 3});
  Tensor out = empty({2}, kDouble);
  brisk::testing::expect_error([&] { sum_out(out, x, {1}); }, {"out=", "requires grad"});
  {
    NoGradGuard g;
    sum_out(out, x, {1});
  }
  EXPECT_FALSE(out.requires_grad());
}

TEST(GradReduce, EmptyInputs) {
  Tensor x = zeros({0, 3}, kDouble).requires_grad_();
  Tensor g = grad_of(x, x.sum());
  EXPECT_EQ(g.sizes(), (IntArrayRef{0, 3}));
  Tensor y = zeros({0, 3}, kDouble).requires_grad_();
  Tensor s = y.sum(0);
  s.backward(ones_like(s));
  EXPECT_EQ(y.grad().sizes(), (IntArrayRef{0, 3}));
  Tensor z = zeros({2, 0}, kDouble).requires_grad_();
  auto [v, i] = z.sort(1);
  v.backward(ones_like(v));
  EXPECT_EQ(z.grad().sizes(), (IntArrayRef{2, 0}));
}

// Ties and NaN in max-like reductions: PyTorch (1.13 and 2.15 agree) has
// three rules: max()/min() send the gradient to the NaNs, amax/amin give NaN
// for the whole slice, the inf norms give zeros; ties share evenly
// (amax, max()) or go to the index (max(dim)).
TEST(GradReduce, MaxLikeGradientsWithTiesAndNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto grad_for = [&](const std::function<Tensor(const Tensor&)>& f) {
    Tensor x = tensor({1.0, 3.0, 3.0, 2.0, nan, 2.0}).view({2, 3}).clone().requires_grad_();
    Tensor y = f(x);
    y.backward(ones_like(y));
    return x.grad().view({-1});
  };
  using V = std::vector<double>;
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> f;
    V want;  // torch's x.grad
  };
  const std::vector<Case> cases = {
      {"amax(1)", [](const Tensor& x) { return x.amax(1); }, {0, 0.5, 0.5, nan, nan, nan}},
      {"amin(1)", [](const Tensor& x) { return x.amin(1); }, {1, 0, 0, nan, nan, nan}},
      {"amax()", [](const Tensor& x) { return x.amax(); }, {nan, nan, nan, nan, nan, nan}},
      {"amax(0)", [](const Tensor& x) { return x.amax(0); }, {0, nan, 1, 1, nan, 0}},
      {"max()", [](const Tensor& x) { return x.max(); }, {0, 0, 0, 0, 1, 0}},
      {"min()", [](const Tensor& x) { return x.min(); }, {0, 0, 0, 0, 1, 0}},
      {"max(1)", [](const Tensor& x) { return std::get<0>(x.max(1)); }, {0, 1, 0, 0, 1, 0}},
      {"min(1)", [](const Tensor& x) { return std::get<0>(x.min(1)); }, {1, 0, 0, 0, 1, 0}},
      {"max(0)", [](const Tensor& x) { return std::get<0>(x.max(0)); }, {0, 0, 1, 1, 1, 0}},
      {"row 0 amax()", [](const Tensor& x) { return x[0].amax(); }, {0, 0.5, 0.5, 0, 0, 0}},
      {"row 0 max()", [](const Tensor& x) { return x[0].max(); }, {0, 0.5, 0.5, 0, 0, 0}},
      {"max() of two NaNs", [](const Tensor& x) { return stack({x[1], x[1]}).max(); }, {0, 0, 0, 0, 1, 0}},
      {"amax() of two NaNs", [](const Tensor& x) { return cat({x[1], x[1]}).amax(); }, {0, 0, 0, nan, nan, nan}},
      {"inf norm(1)", [](const Tensor& x) { return x.norm(INFINITY, IntArrayRef{1}); }, {0, 0.5, 0.5, 0, 0, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(close(grad_for(c.f), tensor(c.want)));
  }
}

// prod's gradient and second derivative with zeros (PyTorch 2.15's values;
// 1.13 cannot differentiate the gradient with a zero).
TEST(GradReduce, ProdDoubleBackwardWithZeros) {
  struct Case {
    std::vector<double> x, grad, hessian;  // hessian row-major 3x3
  };
  const std::vector<Case> cases = {
      {{2, 0, 3}, {0, 6, 0}, {0, 3, 0, 3, 0, 2, 0, 2, 0}},
      {{0, 0, 3}, {0, 0, 0}, {0, 3, 0, 3, 0, 0, 0, 0, 0}},
      {{0, 0, 0}, {0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
      {{1, 2, 3}, {6, 3, 2}, {0, 3, 2, 3, 0, 1, 2, 1, 0}},
  };
  for (const Case& c : cases) {
    Tensor x = tensor(c.x).requires_grad_();
    Tensor g = autograd::grad({x.prod()}, {x}, {}, true, true)[0];
    EXPECT_EQ(g.detach().to_vector<double>(), c.grad);
    std::vector<double> h;
    for (int64_t i = 0; i < 3; ++i) {
      Tensor row = autograd::grad({g[i]}, {x}, {}, true, false, true)[0];
      for (double v : (row.defined() ? row.to_vector<double>() : std::vector<double>(3, 0.0))) h.push_back(v);
    }
    EXPECT_EQ(h, c.hessian);
    // along a dim, and the same against finite differences
    std::vector<double> both = c.x;
    both.insert(both.end(), c.x.rbegin(), c.x.rend());
    Tensor m = tensor(both).to(kDouble).view({2, 3}).clone().requires_grad_();
    EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].prod(1); }, {m}, /*grad_grad=*/true));
    EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].prod(); }, {m}, /*grad_grad=*/true));
  }
}

// Regression (difffuzz reduce:min:grad-nan): the gradient of max()/min() of
// a tensor holding NaN goes to the NaNs and is exactly 0 elsewhere, even when
// the incoming gradient is NaN (torch 2.15 CPU: min(x)^2 of [-2, nan, 1, 0.5]
// gives [0, nan, 0, 0]; max() of [-2, nan, 1, nan] with grad 3 gives [0, 1.5, 0, 1.5]).
TEST(GradReduce, MinMaxNanGradientStaysOnTheNans) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = d({-2.0, nan, 1.0, 0.5}).requires_grad_();
  const Tensor m = x.min();
  EXPECT_TRUE(close(grad_of(x, m * m), d({0.0, nan, 0.0, 0.0}), 0, 0));
  const Tensor x2 = d({-2.0, nan, 1.0, nan}).requires_grad_();
  EXPECT_TRUE(close(grad_of(x2, x2.max(), scalar_tensor(3.0, kDouble)), d({0.0, 1.5, 0.0, 1.5}), 0, 0));
  // amax keeps torch's product with the mask: NaN for every element
  const Tensor x3 = d({-2.0, nan, 1.0}).requires_grad_();
  EXPECT_TRUE(grad_of(x3, x3.amax()).isnan().all().item<bool>());
}

// Regression (difffuzz reduce:cumprod:grad-nan, grad2-extra): along a dim of
// size 1 cumprod is the identity; its gradient is g (torch 2.15), not
// g * y / x (NaN at NaN, inf, 0), and it does not depend on x.
TEST(GradReduce, CumprodAlongSizeOneDimIsTheIdentity) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tensor x = d2({{nan}, {0.0}, {inf}}).requires_grad_();
  EXPECT_TRUE(close(grad_of(x, x.cumprod(1), d2({{2.0}, {3.0}, {4.0}})), d2({{2.0}, {3.0}, {4.0}}), 0, 0));
  const Tensor y = d2({{1.5}, {-2.0}}).requires_grad_();
  const TensorList g = autograd::grad({y.cumprod(1).sum()}, {y}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_FALSE(g[0].requires_grad());
}

// Regression (difffuzz reduce:var/var_mean:grad-inf, grad2-extra): var over
// every element (no dims, or a 0-dim input) with N - correction <= 0 has
// torch 2.x's gradient g * (NaN where x equals the mean, else +inf), constant
// in x; with dims given the formula 2 (x - mean) / (N - correction) stays.
// torch 2.15: var([1, 2, 4], correction=3) grad 2 -> [inf, inf, inf];
// var([1, 2, 4], 0, correction=3) -> [-inf, -inf, inf]; std([1, 1], correction=2) -> [nan, nan];
// var_mean([1, 3], correction=2), grad of v + m -> [inf, inf].
TEST(GradReduce, VarWithoutDegreesOfFreedom) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = d({1.0, 2.0, 4.0}).requires_grad_();
  EXPECT_TRUE(close(grad_of(x, x.var(std::nullopt, 3), scalar_tensor(2.0, kDouble)), d({inf, inf, inf}), 0, 0));
  const Tensor x2 = d({1.0, 2.0, 4.0}).requires_grad_();
  EXPECT_TRUE(close(grad_of(x2, x2.var(0, 3), scalar_tensor(2.0, kDouble)), d({-inf, -inf, inf}), 0, 0));
  const Tensor x3 = d({1.0, 1.0}).requires_grad_();
  EXPECT_TRUE(close(grad_of(x3, x3.std(std::nullopt, 2)), d({nan, nan}), 0, 0));
  const Tensor x4 = d({1.0, 3.0}).requires_grad_();
  auto [v, m] = var_mean(x4, std::nullopt, 2);
  EXPECT_TRUE(close(grad_of(x4, v + m), d({inf, inf}), 0, 0));
  // a 0-dim input: NaN, and no second derivative
  const Tensor s = scalar_tensor(2.0, kDouble).requires_grad_();
  const TensorList g = autograd::grad({s.var()}, {s}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(std::isnan(g[0].item<double>()));
  EXPECT_FALSE(g[0].requires_grad());
}

// Regression (difffuzz reduce:prod:grad-nan): when the input holds a zero,
// torch takes the exclusive products for every slice, so a +-inf element
// gets the (finite) product of the others instead of inf / inf. torch 2.15:
// prod(dim 1) of [[-1.5, .5], [-0, 2], [-inf, 1], [inf, -0]] with g [1, 2, 3, 4]
// -> [[.5, -1.5], [4, -0], [3, -inf], [-0, inf]]; along a size-1 dim the
// gradient is g; prod() of [inf, 0, 0, 2] -> zeros; of [inf, 0, 3, 2] -> [0, inf, nan, nan].
TEST(GradReduce, ProdWithZerosAndInfinities) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = d2({{-1.5, 0.5}, {-0.0, 2.0}, {-inf, 1.0}, {inf, -0.0}}).requires_grad_();
  EXPECT_TRUE(close(grad_of(x, x.prod(1), d({1.0, 2.0, 3.0, 4.0})), d2({{0.5, -1.5}, {4.0, -0.0}, {3.0, -inf}, {-0.0, inf}}),
                    0, 0));
  const Tensor x1 = d2({{-inf}, {3.0}, {0.0}}).requires_grad_();
  EXPECT_TRUE(close(grad_of(x1, x1.prod(1), d({1.0, 2.0, 3.0})), d2({{1.0}, {2.0}, {3.0}}), 0, 0));
  const Tensor x2 = d({inf, 0.0, 0.0, 2.0}).requires_grad_();
  EXPECT_TRUE(close(grad_of(x2, x2.prod()), d({0.0, 0.0, 0.0, 0.0}), 0, 0));
  const Tensor x3 = d({inf, 0.0, 3.0, 2.0}).requires_grad_();
  EXPECT_TRUE(close(grad_of(x3, x3.prod()), d({0.0, inf, nan, nan}), 0, 0));
}

// Regression (difffuzz reduce:norm:missing-error): p < 0 and p = inf norms
// of an empty reduction are refused, as torch 2.x does (1.13 returned a value).
TEST(GradReduce, NormWithoutIdentityRefusesEmpty) {
  const double inf = std::numeric_limits<double>::infinity();
  brisk::testing::expect_error([&] { zeros({2, 2, 0, 1}).norm(inf); },
                               {"[norm]", "cannot compute the inf norm on an empty tensor"});
  brisk::testing::expect_error([&] { zeros({0}).norm(-1.0); }, {"[norm]", "-1 norm"});
  brisk::testing::expect_error([&] { zeros({3, 0}).norm(-inf, IntArrayRef{1}); },
                               {"[norm]", "on the dimension 1 because this dimension is empty"});
  EXPECT_EQ(zeros({0, 3}).norm(inf, IntArrayRef{1}).sizes(), IntArrayRef({0}));
  EXPECT_EQ(zeros({0, 3}).norm(0.5, IntArrayRef{0}).sizes(), IntArrayRef({3}));
  EXPECT_EQ(zeros({0}).norm(2.0).item<double>(), 0.0);
}

// Regression (difffuzz reduce:softmax:grad-nan): softmax/log_softmax of a
// 0-dim tensor take the general formula, so a NaN output gives a NaN
// gradient (torch 2.15: softmax(tensor(-inf)) is nan with x.grad nan for
// g = 1.5; log_softmax(tensor(nan)) likewise; softmax(tensor(2.)) has grad 0).
TEST(GradReduce, SoftmaxOfOneElementPropagatesNan) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (double v : {-inf, nan}) {
    const Tensor x = scalar_tensor(v, kDouble).requires_grad_();
    EXPECT_TRUE(std::isnan(grad_of(x, x.softmax(0), scalar_tensor(1.5, kDouble)).item<double>()));
    const Tensor y = scalar_tensor(v, kDouble).requires_grad_();
    EXPECT_TRUE(std::isnan(grad_of(y, y.log_softmax(0), scalar_tensor(1.5, kDouble)).item<double>()));
  }
  const Tensor x = scalar_tensor(2.0, kDouble).requires_grad_();
  EXPECT_EQ(grad_of(x, x.softmax(0), scalar_tensor(1.5, kDouble)).item<double>(), 0.0);
  // in another dtype: torch.softmax(tensor(inf), 0, dtype=torch.float16) -> nan, x.grad nan (float32)
  const Tensor xf = scalar_tensor(inf, kFloat).requires_grad_();
  const Tensor gf = grad_of(xf, xf.softmax(0, kHalf), scalar_tensor(1.0, kHalf));
  EXPECT_EQ(gf.dtype(), kFloat);
  EXPECT_TRUE(std::isnan(gf.item<double>()));
}

// Regression (difffuzz reduce:cumprod:grad-nan, grad2-nan): cumprod's
// gradient with zeros takes torch's terms and grouping, so inf and NaN land
// where torch's do: before the first zero only the terms before it count,
// the first zero gets y[z1 - 1] times the terms up to the second zero, and
// under create_graph each term of the O(n^2) form is multiplied out.
TEST(GradReduce, CumprodWithZerosAndInfinitiesAsTorch) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // torch 2.15: x = [2, inf, 0, 3, 0, 5], g = [1, -0.5, 0.25, 2, -1, 0.5]: grad [-inf, nan, inf, 0, 0, 0]
  const Tensor x = d({2.0, inf, 0.0, 3.0, 0.0, 5.0}).requires_grad_();
  const Tensor g = d({1.0, -0.5, 0.25, 2.0, -1.0, 0.5});
  EXPECT_TRUE(close(grad_of(x, x.cumprod(0), g), d({-inf, nan, inf, 0.0, 0.0, 0.0}), 0, 0));
  // x = [inf, 0, 2], g = [1, 1, 0]: grad [nan, inf, 0]; under create_graph [1, nan, nan]
  const Tensor x2 = d({inf, 0.0, 2.0}).requires_grad_();
  const Tensor g2 = d({1.0, 1.0, 0.0});
  EXPECT_TRUE(close(autograd::grad({x2.cumprod(0)}, {x2}, {g2})[0], d({nan, inf, 0.0}), 0, 0));
  EXPECT_TRUE(close(autograd::grad({x2.cumprod(0)}, {x2}, {g2}, std::nullopt, true)[0], d({1.0, nan, nan}), 0, 0));
  // finite: x = [1.5, 0, 2, 0, -3], g = [1, -2, 0.5, 3, 1]: grad [1, -1.5, 0, 0, 0] both ways;
  // second derivative with weights [1, 0.5, -1, 0.25, 2]: [-0.5, -1.75, 0.375, 0, 0]
  const Tensor x3 = d({1.5, 0.0, 2.0, 0.0, -3.0}).requires_grad_();
  const Tensor g3 = d({1.0, -2.0, 0.5, 3.0, 1.0});
  EXPECT_TRUE(close(autograd::grad({x3.cumprod(0)}, {x3}, {g3})[0], d({1.0, -1.5, 0.0, 0.0, 0.0}), 0, 0));
  const Tensor gx = autograd::grad({x3.cumprod(0)}, {x3}, {g3}, std::nullopt, true)[0];
  EXPECT_TRUE(close(gx, d({1.0, -1.5, 0.0, 0.0, 0.0}), 0, 0));
  EXPECT_TRUE(close(autograd::grad({gx}, {x3}, {d({1.0, 0.5, -1.0, 0.25, 2.0})})[0], d({-0.5, -1.75, 0.375, 0.0, 0.0}),
                    1e-15, 1e-15));
  // float32: x = [-1.4858274, inf, -0, 0.41296992, 1.4988689, -1e-30], g = [-1.125, .875, -.125, 1, .5, -.5]:
  // grad [inf, nan, -inf, 0, 0, 0]
  const Tensor xf = tensor<double>({-1.4858274459838867, inf, -0.0, 0.4129699170589447, 1.4988689422607422, -1e-30}, kFloat)
                        .requires_grad_();
  EXPECT_TRUE(close(grad_of(xf, xf.cumprod(0), tensor<double>({-1.125, 0.875, -0.125, 1.0, 0.5, -0.5}, kFloat)),
                    d({inf, nan, -inf, 0.0, 0.0, 0.0}), 0, 0));
  // with dtype=: torch takes the gradient in x's dtype: cumprod([.5, -2, 4], dtype=float16), g = [1, .5, -.25]
  // -> x.grad [2, -0.25, 0.25] (float64)
  const Tensor xd = d({0.5, -2.0, 4.0}).requires_grad_();
  const Tensor gd = grad_of(xd, xd.cumprod(0, kHalf), tensor<double>({1.0, 0.5, -0.25}, kHalf));
  EXPECT_EQ(gd.dtype(), kDouble);
  EXPECT_TRUE(close(gd, d({2.0, -0.25, 0.25}), 0, 0));
}

// Regression (difffuzz reduce:prod:grad2-value:float->half): prod(x, dtype=t)
// differentiates prod(x.to(t)), so r / x is exactly 1 over a size-1 dim and
// the second derivative is 0 (torch 2.15: grad [[1, -0.5, 0.25, 2]], second
// derivative [[0, 0, 0, 0]]); and g * (r / x) is grouped as torch groups it
// (float32 prod([3e38, 1, 1]) with g = 2: torch [2, inf, inf]).
TEST(GradReduce, ProdWithDtypeAndGrouping) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = d2({{0.5233516428021532, -1.55724424954409, -0.4206489099538454, -0.39053708302546364}})
                       .requires_grad_();
  const Tensor gx = autograd::grad({x.prod(-2, false, kHalf)}, {x}, {tensor<double>({1.0, -0.5, 0.25, 2.0}, kHalf)},
                                   std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(close(gx, d2({{1.0, -0.5, 0.25, 2.0}}), 0, 0));
  EXPECT_TRUE(close(autograd::grad({gx}, {x}, {d2({{1.0, 1.0, -1.0, 0.5}})})[0], d2({{0.0, 0.0, 0.0, 0.0}}), 0, 0));
  const Tensor xf = tensor<double>({3e38, 1.0, 1.0}, kFloat).requires_grad_();
  EXPECT_TRUE(close(grad_of(xf, xf.prod(), scalar_tensor(2.0, kFloat)), d({2.0, inf, inf}), 0, 0));
  const Tensor xf2 = tensor<double>({3e38, 1.0, 1.0}, kFloat).view({1, 3}).requires_grad_();
  EXPECT_TRUE(close(grad_of(xf2, xf2.prod(1), tensor<double>({2.0}, kFloat)), d2({{2.0, inf, inf}}), 0, 0));
}

// Regression (difffuzz reduce:var:grad2-missing): var without degrees of
// freedom multiplies g by a constant factor, but g may depend on x: the
// second derivative flows through g (torch 2.15: x = tensor(3.), v =
// var(x, [-1], correction=1) = nan, g = grad(v^2) = nan requiring grad, its
// derivative nan; brisk used to detach g, a silent zero second derivative).
TEST(GradReduce, VarWithoutDegreesOfFreedomKeepsSecondDerivative) {
  const Tensor x = scalar_tensor(3.0, kDouble).requires_grad_();
  const Tensor v = x.var(std::vector<int64_t>{-1}, 1);
  const Tensor g = autograd::grad({v.square()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(std::isnan(g.item<double>()));
  ASSERT_TRUE(g.requires_grad());
  EXPECT_TRUE(std::isnan(autograd::grad({g}, {x})[0].item<double>()));
}

// Regression (difffuzz reduce:norm:grad2-nan): the 2-norm's gradient is
// g * (x / n) with 0 where n = 0, as torch groups it: a NaN g at a zero
// vector gives NaN, and the second derivative at 0 is NaN (torch 2.15:
// norm(zeros(3)) * 1.5: grad [0, 0, 0], second derivative [nan, nan, nan]).
TEST(GradReduce, TwoNormAtZeroGroupsAsTorch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{}, std::vector<int64_t>{3}}) {
    const Tensor x = zeros(shape, kDouble).requires_grad_();
    const Tensor g = autograd::grad({x.norm(2.0) * 1.5}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    EXPECT_TRUE(close(g, zeros(shape, kDouble), 0, 0));
    EXPECT_TRUE(autograd::grad({g.sum()}, {x})[0].isnan().all().item<bool>());
    const Tensor y = zeros(shape, kDouble).requires_grad_();
    EXPECT_TRUE(grad_of(y, y.norm(2.0), scalar_tensor(nan, kDouble)).isnan().all().item<bool>());
  }
}
