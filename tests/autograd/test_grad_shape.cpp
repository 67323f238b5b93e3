// Gradients of the view and shape ops (src/ops/views.cpp, src/ops/shape.cpp):
// an op table gradchecked on contiguous and non-contiguous float64 leaves,
// multi-output views, view tracking (_is_view/_base, grad_fn names) and
// in-place ops on views (CopySlices).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;

namespace {

/// A non-contiguous float64 leaf of `sizes`: a transposed buffer when the
/// first two dims are > 1, otherwise every other element of the last dim.
Tensor noncontig(std::vector<int64_t> sizes) {
  if (sizes.size() >= 2 && sizes[0] > 1 && sizes[1] > 1) return brisk::testing::leaf_noncontig(sizes);
  if (sizes.empty()) return brisk::testing::leaf_noncontig({});
  std::vector<int64_t> s = sizes;
  s.back() *= 2;
  Tensor buf = rand(IntArrayRef(s), kDouble) * 2 - 1;
  return buf.slice(-1, 0, std::nullopt, 2).detach().requires_grad_();
}

struct Case {
  std::string name;
  std::vector<int64_t> sizes;
  std::function<Tensor(const Tensor&)> fn;
  bool grad_grad = true;
};

using TensorFn = std::function<TensorList(const TensorList&)>;

// gradcheck's finite differences perturb the inputs in place: an output
// that is a view of an input would change along with it, so outputs are
// materialised (x * 1) before they are compared.
Tensor fresh(const Tensor& t) { return t * 1.0; }

::testing::AssertionResult gradcheck_multi(const TensorFn& fn, const TensorList& inputs, bool grad_grad) {
  autograd::GradcheckOptions o;
  o.check_grad_grad = grad_grad;
  auto f = [&fn](const TensorList& in) {
    TensorList outs = fn(in);
    for (Tensor& t : outs) t = fresh(t);
    return outs;
  };
  try {
    autograd::gradcheck(f, inputs, o);
  } catch (const brisk::Error& e) {
    return ::testing::AssertionFailure() << e.what();
  }
  return ::testing::AssertionSuccess();
}

std::vector<Case> unary_cases() {
  return {
      // views
      {"view", {3, 4}, [](const Tensor& x) { return x.contiguous().view({4, 3}); }},
      {"view_infer", {2, 3, 4}, [](const Tensor& x) { return x.contiguous().view({-1, 4}); }},
      {"view_as", {3, 4}, [](const Tensor& x) { return x.contiguous().view_as(zeros({2, 6})); }},
      {"reshape", {3, 4}, [](const Tensor& x) { return x.reshape({2, -1}); }},  // copy path when non-contiguous
      {"reshape_flat", {2, 3, 4}, [](const Tensor& x) { return x.reshape({-1}); }},
      {"flatten", {2, 3, 4}, [](const Tensor& x) { return x.flatten(); }},
      {"flatten_neg", {2, 3, 4}, [](const Tensor& x) { return x.flatten(-2, -1); }},
      {"unflatten", {3, 4}, [](const Tensor& x) { return x.unflatten(-1, {2, -1}); }},
      {"squeeze_all", {4, 3, 1}, [](const Tensor& x) { return x.squeeze(); }},
      {"squeeze_dim", {4, 3, 1}, [](const Tensor& x) { return x.squeeze(-1); }},
      {"squeeze_noop", {4, 3, 1}, [](const Tensor& x) { return x.squeeze(0); }},
      {"squeeze_scalar", {}, [](const Tensor& x) { return x.squeeze(); }},
      {"unsqueeze", {3, 4}, [](const Tensor& x) { return x.unsqueeze(1); }},
      {"unsqueeze_neg", {3, 4}, [](const Tensor& x) { return x.unsqueeze(-1); }},
      {"transpose", {2, 3, 4}, [](const Tensor& x) { return x.transpose(0, -1); }},
      {"swapaxes", {2, 3, 4}, [](const Tensor& x) { return x.swapaxes(-2, -1); }},
      {"permute", {2, 3, 4}, [](const Tensor& x) { return x.permute({2, 0, 1}); }},
      {"permute_neg", {2, 3, 4}, [](const Tensor& x) { return x.permute({-2, -1, 0}); }},
      {"movedim", {2, 3, 4}, [](const Tensor& x) { return x.movedim(0, -1); }},
      {"t", {3, 4}, [](const Tensor& x) { return x.t(); }},
      {"t_1d", {5}, [](const Tensor& x) { return x.t(); }},
      {"mT", {2, 3, 4}, [](const Tensor& x) { return x.mT(); }},
      {"expand", {2, 3, 1}, [](const Tensor& x) { return x.expand({4, 2, 3, 5}); }},
      {"expand_minus1", {2, 3, 1}, [](const Tensor& x) { return x.expand({-1, -1, 4}); }},
      {"expand_as", {3, 1}, [](const Tensor& x) { return x.expand_as(zeros({2, 3, 4})); }},
      {"broadcast_to", {4}, [](const Tensor& x) { return broadcast_to(x, {3, 4}); }},
      {"as_strided", {3, 4}, [](const Tensor& x) { return x.as_strided({2, 2}, {1, 2}); }},
      {"as_strided_offset", {3, 4}, [](const Tensor& x) { return x.as_strided({3}, {2}, 1); }},
      {"as_strided_overlap", {3, 4}, [](const Tensor& x) { return x.as_strided({3, 3}, {1, 1}); }},
      {"narrow", {3, 4}, [](const Tensor& x) { return x.narrow(-1, 1, 2); }},
      {"narrow_neg_start", {3, 4}, [](const Tensor& x) { return x.narrow(0, -2, 2); }},
      {"select", {3, 4}, [](const Tensor& x) { return x.select(1, 2); }},
      {"select_neg", {2, 3, 4}, [](const Tensor& x) { return x.select(-2, -1); }},
      {"index_int", {3, 4}, [](const Tensor& x) { return x[1]; }},
      {"slice", {3, 4}, [](const Tensor& x) { return x.slice(1, 1, std::nullopt, 2); }},
      {"slice_neg", {4, 5}, [](const Tensor& x) { return x.slice(-1, -4, -1, 2); }},
      {"slice_empty", {3, 4}, [](const Tensor& x) { return x.slice(0, 2, 2); }},
      {"diagonal", {3, 4}, [](const Tensor& x) { return x.diagonal(); }},
      {"diagonal_offset", {3, 4}, [](const Tensor& x) { return x.diagonal(1); }},
      {"diagonal_neg", {2, 3, 4}, [](const Tensor& x) { return x.diagonal(-1, -1, 0); }},
      {"unfold_overlap", {3, 5}, [](const Tensor& x) { return x.unfold(-1, 3, 1); }},
      {"unfold_step", {4, 3}, [](const Tensor& x) { return x.unfold(0, 2, 2); }},
      {"view_chain", {2, 3, 4},
       [](const Tensor& x) { return x.transpose(0, 1).select(0, 1).unsqueeze(0).narrow(2, 1, 3); }},
      // shape ops that allocate
      {"repeat", {3, 4}, [](const Tensor& x) { return x.repeat({2, 1, 3}); }},
      {"repeat_ones", {2, 3}, [](const Tensor& x) { return x.repeat({1, 1}); }},
      {"tile", {3, 4}, [](const Tensor& x) { return x.tile({2}); }},
      {"flip", {2, 3, 4}, [](const Tensor& x) { return x.flip({0, -1}); }},
      {"roll", {3, 4}, [](const Tensor& x) { return x.roll({1, -2}, {0, 1}); }},
      {"roll_flat", {3, 4}, [](const Tensor& x) { return x.roll({5}); }},
      {"tril", {3, 4}, [](const Tensor& x) { return x.tril(); }},
      {"tril_neg", {2, 3, 4}, [](const Tensor& x) { return tril(x, -1); }},
      {"triu", {3, 4}, [](const Tensor& x) { return x.triu(1); }},
      {"pad", {3, 4}, [](const Tensor& x) { return pad(x, {1, 2}); }},
      {"pad_2d_value", {3, 4}, [](const Tensor& x) { return pad(x, {0, 1, 2, 1}, 3.5); }},
      {"pad_crop", {3, 4}, [](const Tensor& x) { return pad(x, {-1, 2, 1, -1}); }},
  };
}

}  // namespace

TEST(GradShape, UnaryOpTable) {
  for (const Case& k : unary_cases()) {
    SCOPED_TRACE(k.name);
    auto f = [&k](const TensorList& t) { return fresh(k.fn(t[0])); };
    Tensor a = leaf(k.sizes);
    EXPECT_TRUE(gradcheck_ok(f, {a}, k.grad_grad)) << k.name << " (contiguous)";
    Tensor b = noncontig(k.sizes);
    if (b.numel() > 1) EXPECT_FALSE(b.is_contiguous()) << k.name;
    EXPECT_TRUE(gradcheck_ok(f, {b}, k.grad_grad)) << k.name << " (non-contiguous)";
    // the op records a graph
    Tensor y = k.fn(leaf(k.sizes));
    EXPECT_TRUE(y.requires_grad()) << k.name;
    EXPECT_TRUE(y.grad_fn() != nullptr) << k.name;
  }
}

TEST(GradShape, ListOps) {
  Tensor a = leaf({2, 3}), b = noncontig({2, 4}), c = leaf({2, 1});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return fresh(cat({t[0], t[1], t[2]}, -1)); }, {a, b, c}, true));
  Tensor d = noncontig({3, 3});
  Tensor at = a.t().contiguous().detach().requires_grad_();
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return fresh(cat({t[0], t[1]}, 1)); }, {at, d}, true));
  // a legacy empty tensor (1-D, size 0) adds nothing; one that requires grad gets an empty gradient
  Tensor e = zeros({0}, kDouble).requires_grad_();
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return fresh(cat({t[0], t[1]}, 1)); }, {a, e}, true));
  // mixed: an input that does not require grad
  Tensor fixed = ones({2, 2}, kDouble);
  EXPECT_TRUE(gradcheck_ok([&](const TensorList& t) { return fresh(cat({fixed, t[0]}, 1)); }, {b}, true));

  Tensor p = leaf({3, 4}), q = noncontig({3, 4}), r = leaf({3, 4});
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    SCOPED_TRACE(dim);
    EXPECT_TRUE(
        gradcheck_ok([dim](const TensorList& t) { return fresh(stack({t[0], t[1], t[2]}, dim)); }, {p, q, r}, true));
  }
  Tensor v1 = leaf({3}), v2 = noncontig({4});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return fresh(hstack({t[0], t[1]})); }, {v1, v2}, true));
  Tensor w1 = leaf({3}), w2 = noncontig({3});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return fresh(vstack({t[0], t[1]})); }, {w1, w2}, true));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return fresh(dstack({t[0], t[1]})); }, {w1, w2}, true));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return fresh(hstack({t[0], t[1]})); }, {p, q}, true));

  Tensor ex = leaf({3, 1}), ey = noncontig({4});
  EXPECT_TRUE(gradcheck_multi([](const TensorList& t) { return broadcast_tensors({t[0], t[1]}); }, {ex, ey}, true));
  Tensor m1 = leaf({3}), m2 = noncontig({4});
  EXPECT_TRUE(gradcheck_multi([](const TensorList& t) { return meshgrid({t[0], t[1]}); }, {m1, m2}, true));
  EXPECT_TRUE(gradcheck_multi([](const TensorList& t) { return meshgrid({t[0], t[1]}, "xy"); }, {m1, m2}, true));
  EXPECT_EQ(stack({p, q}).grad_fn()->name(), "StackBackward0");
  EXPECT_EQ(cat({p, q}).grad_fn()->name(), "CatBackward0");
}

TEST(GradShape, MultiOutputViews) {
  for (bool contig : {true, false}) {
    SCOPED_TRACE(contig);
    Tensor x = contig ? leaf({5, 4}) : noncontig({5, 4});
    EXPECT_TRUE(gradcheck_multi([](const TensorList& t) { return t[0].split(2, 0); }, {x}, true));
    EXPECT_TRUE(gradcheck_multi([](const TensorList& t) { return t[0].split(3, -1); }, {x}, true));
    EXPECT_TRUE(gradcheck_multi([](const TensorList& t) { return t[0].split_with_sizes({1, 0, 3}, -1); }, {x}, true));
    EXPECT_TRUE(gradcheck_multi([](const TensorList& t) { return t[0].chunk(3, 0); }, {x}, true));
    EXPECT_TRUE(gradcheck_multi([](const TensorList& t) { return t[0].unbind(1); }, {x}, true));
    EXPECT_TRUE(gradcheck_multi([](const TensorList& t) { return t[0].unbind(-2); }, {x}, true));
  }
  // one node for all outputs; gradient flows from one of them only: zeros elsewhere
  Tensor x = leaf({5, 4});
  auto parts = x.split(2, 0);
  ASSERT_EQ(parts.size(), 3u);
  for (const Tensor& p : parts) {
    EXPECT_EQ(p.grad_fn()->name(), "SplitBackward0");
    EXPECT_EQ(p.grad_fn(), parts[0].grad_fn());
    EXPECT_TRUE(p._is_view());
    EXPECT_TRUE(p._base().is_same(x));
  }
  EXPECT_EQ(parts[2].output_nr(), 2u);
  parts[1].backward(ones_like(parts[1]) * 3);
  std::vector<double> want(20, 0.0);
  for (int i = 8; i < 16; ++i) want[i] = 3.0;
  EXPECT_EQ(x.grad().to_vector<double>(), want);

  Tensor y = leaf({3, 2});
  auto rows = y.unbind(0);
  EXPECT_EQ(rows[0].grad_fn()->name(), "UnbindBackward0");
  (rows[2] * 2).backward(ones_like(rows[2]));
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, 0, 2, 2}));
}

TEST(GradShape, GradValues) {
  // a few gradients checked against values computed by hand
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).view({2, 3}).detach().requires_grad_();
  x.expand({4, 2, 3}).backward(ones({4, 2, 3}, kDouble));
  EXPECT_EQ(x.grad().to_vector<double>(), std::vector<double>(6, 4.0));

  Tensor y = zeros({3, 3}, kDouble).requires_grad_();
  y.unfold(1, 2, 1).backward(ones({3, 2, 2}, kDouble));  // middle column is read twice
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{1, 2, 1, 1, 2, 1, 1, 2, 1}));

  Tensor z = zeros({2, 3}, kDouble).requires_grad_();
  z.repeat({2, 2}).backward(ones({4, 6}, kDouble));
  EXPECT_EQ(z.grad().to_vector<double>(), std::vector<double>(6, 4.0));

  Tensor w = zeros({3}, kDouble).requires_grad_();
  pad(w, {-1, 2}).backward(tensor({1.0, 2.0, 3.0, 4.0}));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{0, 1, 2}));

  Tensor u = zeros({2, 2}, kDouble).requires_grad_();
  u.diagonal().backward(tensor({5.0, 7.0}));
  EXPECT_EQ(u.grad().to_vector<double>(), (std::vector<double>{5, 0, 0, 7}));
}

TEST(GradShape, ViewTracking) {
  Tensor x = leaf({3, 4});
  Tensor v = x.view({4, 3});
  EXPECT_TRUE(v.requires_grad());
  EXPECT_FALSE(v.is_leaf());
  ASSERT_TRUE(v.grad_fn());
  EXPECT_EQ(v.grad_fn()->name(), "ViewBackward0");
  EXPECT_TRUE(v._is_view());
  EXPECT_TRUE(v._base().is_same(x));
  EXPECT_FALSE(x._is_view());
  // a view of a view has the root as its base
  Tensor w = v.transpose(0, 1).select(0, 1);
  EXPECT_TRUE(w._is_view());
  EXPECT_TRUE(w._base().is_same(x));
  EXPECT_EQ(w.grad_fn()->name(), "SelectBackward0");

  struct Named {
    std::function<Tensor(const Tensor&)> fn;
    const char* name;
    bool view;
  };
  std::vector<Named> names = {
      {[](const Tensor& t) { return t.transpose(0, 1); }, "TransposeBackward0", true},
      {[](const Tensor& t) { return t.permute({1, 0}); }, "PermuteBackward0", true},
      {[](const Tensor& t) { return t.t(); }, "TBackward0", true},
      {[](const Tensor& t) { return t.unsqueeze(0); }, "UnsqueezeBackward0", true},
      {[](const Tensor& t) { return t.unsqueeze(0).squeeze(); }, "SqueezeBackward0", true},
      {[](const Tensor& t) { return t.unsqueeze(0).squeeze(0); }, "SqueezeBackward1", true},
      {[](const Tensor& t) { return t.unsqueeze(0).expand({2, 3, 4}); }, "ExpandBackward0", true},
      {[](const Tensor& t) { return t.narrow(0, 1, 2); }, "SliceBackward0", true},
      {[](const Tensor& t) { return t.slice(1, 0, 4, 2); }, "SliceBackward0", true},
      {[](const Tensor& t) { return t.select(0, 1); }, "SelectBackward0", true},
      {[](const Tensor& t) { return t.diagonal(); }, "DiagonalBackward0", true},
      {[](const Tensor& t) { return t.unfold(1, 2, 1); }, "UnfoldBackward0", true},
      {[](const Tensor& t) { return t.as_strided({2}, {1}); }, "AsStridedBackward0", true},
      {[](const Tensor& t) { return t.reshape({12}); }, "ViewBackward0", true},
      {[](const Tensor& t) { return t.t().reshape({12}); }, "UnsafeViewBackward0", false},
      {[](const Tensor& t) { return t.repeat({2, 1}); }, "RepeatBackward0", false},
      {[](const Tensor& t) { return t.flip({0}); }, "FlipBackward0", false},
      {[](const Tensor& t) { return t.roll({1}, {0}); }, "RollBackward0", false},
      {[](const Tensor& t) { return t.tril(); }, "TrilBackward0", false},
      {[](const Tensor& t) { return t.triu(); }, "TriuBackward0", false},
      {[](const Tensor& t) { return pad(t, {1, 1}); }, "ConstantPadNdBackward0", false},
  };
  for (const Named& n : names) {
    SCOPED_TRACE(n.name);
    Tensor r = n.fn(x);
    ASSERT_TRUE(r.grad_fn());
    EXPECT_EQ(r.grad_fn()->name(), n.name);
    EXPECT_EQ(r._is_view(), n.view);
    if (n.view) {
      EXPECT_TRUE(r._base().is_same(x));
    }
  }

  // no graph without grad mode or without requires_grad; a view made in
  // no-grad mode still says it requires grad when its base does (as in
  // PyTorch), yet has no history
  {
    NoGradGuard ng;
    Tensor r = x.view({12});
    EXPECT_TRUE(r.requires_grad());
    EXPECT_FALSE(r.grad_fn());
    EXPECT_FALSE((r * 2).requires_grad());
  }
  Tensor plain = ones({3, 4});
  EXPECT_FALSE(plain.transpose(0, 1).requires_grad());
  EXPECT_FALSE(cat({plain, plain}).requires_grad());
  // an op whose only grad input is not the first still records
  EXPECT_TRUE(cat({plain.to(kDouble), x}).requires_grad());
}

TEST(GradShape, InplaceOnViewOfNonLeaf) {
  // a.select(0, 1).mul_(2): row 1 of x's gradient doubled (CopySlices)
  Tensor x = leaf({3, 4});
  Tensor a = x * 1;
  Tensor row = a.select(0, 1);
  row.mul_(2);
  EXPECT_EQ(a.grad_fn()->name(), "CopySlices");
  a.backward(ones_like(a));
  std::vector<double> want(12, 1.0);
  for (int j = 4; j < 8; ++j) want[j] = 2.0;
  EXPECT_EQ(x.grad().to_vector<double>(), want);

  // through a chain of views: column 1 tripled
  Tensor x2 = leaf({3, 4});
  Tensor b = x2 * 1;
  b.t().select(0, 1).mul_(3);
  b.backward(ones_like(b));
  std::vector<double> want2(12, 1.0);
  for (int i = 0; i < 3; ++i) want2[i * 4 + 1] = 3.0;
  EXPECT_EQ(x2.grad().to_vector<double>(), want2);

  // an in-place op whose other operand requires grad: both get gradients
  Tensor x3 = leaf({2, 3}), y3 = leaf({2, 2});
  Tensor c = x3 * 1;
  c.narrow(1, 1, 2).add_(y3 * 5);
  c.backward(ones_like(c));
  EXPECT_EQ(x3.grad().to_vector<double>(), std::vector<double>(6, 1.0));
  EXPECT_EQ(y3.grad().to_vector<double>(), std::vector<double>(4, 5.0));

  // an in-place op on one output of split is refused, as in PyTorch (Note
  // [View + in-place]); the same window taken with narrow records
  Tensor x4 = leaf({4, 2});
  Tensor d = x4 * 1;
  auto parts = d.split(1, 0);
  EXPECT_THROW(parts[2].mul_(4), Error);
  d.narrow(0, 2, 1).mul_(4);
  d.backward(ones_like(d));
  EXPECT_EQ(x4.grad().to_vector<double>(), (std::vector<double>{1, 1, 1, 1, 4, 4, 1, 1}));

  // tril_ on a non-leaf and on a view of one
  Tensor x5 = leaf({3, 3});
  Tensor e = x5 * 1;
  e.tril_();
  EXPECT_EQ(e.grad_fn()->name(), "TrilBackward0");
  e.backward(ones_like(e));
  EXPECT_EQ(x5.grad().to_vector<double>(), (std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  Tensor x6 = leaf({2, 2, 2});
  Tensor f = x6 * 1;
  f.select(0, 1).triu_();
  f.backward(ones_like(f));
  EXPECT_EQ(x6.grad().to_vector<double>(), (std::vector<double>{1, 1, 1, 1, 1, 1, 0, 1}));

  // gradcheck through an in-place op on a view
  Tensor x7 = leaf({3, 4}), s7 = leaf({4});
  EXPECT_TRUE(gradcheck_ok(
      [](const TensorList& t) {
        Tensor g = t[0] * 1;
        g.select(0, 2).mul_(t[1]);
        return g;
      },
      {x7, s7}));
}

TEST(GradShape, InplaceOnViewOfLeafThrows) {
  Tensor x = leaf({3, 4});
  brisk::testing::expect_error([&] { x.select(0, 1).mul_(2); }, {"view of a leaf tensor"});
  brisk::testing::expect_error([&] { x.t().tril_(); }, {"view of a leaf tensor"});
  brisk::testing::expect_error([&] { x.tril_(); }, {"leaf tensor that requires grad"});
  // allowed without grad mode
  {
    NoGradGuard ng;
    x.select(0, 1).mul_(2);
  }
  EXPECT_EQ(x._version(), 1u);
}

TEST(GradShape, OutVariantsRefuseGrad) {
  Tensor x = leaf({2, 2});
  Tensor out = empty({4, 2}, kDouble);
  brisk::testing::expect_error([&] { cat_out(out, {x, x}); }, {"out="});
}
