// Gradients of the indexing ops: advanced indexing, index_put_, index_select,
// gather, scatter(_), scatter_add(_), index_add_, masked_select, where,
// masked_fill. Checked against finite differences (gradcheck) on contiguous
// and non-contiguous float64 leaves; duplicate indices must accumulate.
#include <gtest/gtest.h>

#include "brisk/brisk.h"
#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;
using brisk::testing::leaf_noncontig;

namespace {

Tensor I(const std::vector<int64_t>& v) { return tensor(v, {static_cast<int64_t>(v.size())}, kInt64); }
Tensor I(const std::vector<int64_t>& v, IntArrayRef shape) { return tensor(v, shape, kInt64); }
Tensor B(const std::vector<int64_t>& v, IntArrayRef shape) { return tensor(v, shape, kInt64).ne(0); }

/// A non-leaf copy that in-place ops may modify (mul records on its own).
Tensor copy_of(const Tensor& t) { return t * 1.0; }

class GradIndex : public ::testing::TestWithParam<bool> {
 protected:
  /// A float64 leaf, non-contiguous when the test's parameter says so.
  Tensor L(IntArrayRef s) const { return GetParam() ? leaf_noncontig(s) : leaf(s); }
};

}  // namespace

// ---- advanced indexing ---------------------------------------------------------------

TEST_P(GradIndex, IndexIntegerTensorWithDuplicates) {
  Tensor idx = I({0, 2, 2, -1, 0});
  EXPECT_TRUE(gradcheck_ok([idx](const TensorList& t) { return t[0].index({idx}); }, {L({5, 4})}, true));
  // two adjacent index tensors broadcast together: (2, 1) and (3,) -> (2, 3)
  Tensor i = I({1, 1}, {2, 1}), j = I({0, 3, 0});
  EXPECT_TRUE(gradcheck_ok([i, j](const TensorList& t) { return t[0].index({i, j}); }, {L({3, 4, 5})}, true));
  // after an ellipsis: indexes the last dim
  EXPECT_TRUE(gradcheck_ok([j](const TensorList& t) { return t[0].index({Ellipsis, j}); }, {L({3, 4, 5})}));
}

TEST_P(GradIndex, IndexDuplicatesAccumulate) {
  Tensor x = L({5, 3});
  Tensor y = x.index({I({0, 2, 2, -1, 0, 2})});
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "IndexBackward0");
  Tensor g = rand({6, 3}, kDouble);
  y.backward(g);
  // rows of g summed into the rows they were read from
  Tensor want = zeros({5, 3}, kDouble);
  const int64_t rows[] = {0, 2, 2, 4, 0, 2};
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 3; ++c)
      want.index_put_({rows[r], c}, want.index({rows[r], c}).item<double>() + g.index({r, c}).item<double>());
  EXPECT_TRUE(close(x.grad(), want, 1e-12, 1e-12));
}

TEST_P(GradIndex, IndexMask) {
  Tensor m2 = B({1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1}, {3, 4});
  EXPECT_TRUE(gradcheck_ok([m2](const TensorList& t) { return t[0].index({m2}); }, {L({3, 4})}, true));
  Tensor m1 = B({1, 0, 1}, {3});
  EXPECT_TRUE(gradcheck_ok([m1](const TensorList& t) { return t[0].index({m1}); }, {L({3, 4})}));
}

TEST_P(GradIndex, IndexMixedWithBasic) {
  // these go through view ops (slice, select, unsqueeze) before the advanced part
  Tensor j = I({3, 0, 3});
  EXPECT_TRUE(gradcheck_ok([j](const TensorList& t) { return t[0].index({Slice(), j}); }, {L({3, 4})}));
  Tensor i = I({2, 0, 2}), k = I({1, 4, 1});
  EXPECT_TRUE(gradcheck_ok([i, k](const TensorList& t) { return t[0].index({i, Slice(), k}); }, {L({3, 4, 5})}));
  EXPECT_TRUE(gradcheck_ok([j](const TensorList& t) { return t[0].index({1, j}); }, {L({3, 4})}));
  EXPECT_TRUE(gradcheck_ok([j](const TensorList& t) { return t[0].index({None, Slice(1, None), j}); }, {L({3, 4})}));
}

TEST_P(GradIndex, IndexBasicOnly) {
  // (* 1.0: these are views of the input, which gradcheck's in-place
  // perturbation would change after the fact)
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].index({Slice()}) * 1.0; }, {L({3, 4})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].index({Ellipsis}) * 1.0; }, {L({3, 4})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].index({Slice(1, None), 2}) * 1.0; }, {L({3, 4})}));
  Tensor x = L({3, 4});
  Tensor a = x.index({Ellipsis});
  EXPECT_FALSE(a.is_same(x));
  EXPECT_TRUE(a.requires_grad());
  EXPECT_TRUE(a._is_view());
}

// ---- index_put_ -------------------------------------------------------------------------

TEST_P(GradIndex, IndexPutTensorValue) {
  Tensor idx = I({3, 0, 4});  // no duplicates: the last write would win
  auto put = [idx](const TensorList& t) {
    Tensor y = copy_of(t[0]);
    y.index_put_({idx}, t[1]);
    return y;
  };
  EXPECT_TRUE(gradcheck_ok(put, {L({5, 4}), L({3, 4})}, true));
  EXPECT_TRUE(gradcheck_ok(put, {L({5, 4}), L({4})}, true));            // broadcast value
  EXPECT_TRUE(gradcheck_ok(put, {L({5, 4}), leaf({3, 1})}));            // broadcast value
  EXPECT_TRUE(gradcheck_ok(put, {L({5, 4}), leaf({1, 1, 4})}));         // leading ones
  EXPECT_TRUE(gradcheck_ok(put, {L({5, 4}), leaf({})}));                // one value
  // only the value requires grad: a fresh tensor built from pieces
  Tensor v = L({3, 4});
  Tensor z = zeros({5, 4}, kDouble);
  z.index_put_({idx}, v);
  EXPECT_TRUE(z.requires_grad());
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor z = zeros({5, 4}, kDouble);
        z.index_put_({idx}, t[0]);
        return z;
      },
      {L({3, 4})}));
}

TEST_P(GradIndex, IndexPutScalarAndMask) {
  Tensor idx = I({1, 3});
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.index_put_({idx}, 2.5);
        return y;
      },
      {L({4, 3})}));
  Tensor m = B({1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 0}, {4, 3});
  EXPECT_TRUE(gradcheck_ok(
      [m](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.index_put_({m}, t[1]);  // 5 selected entries
        return y;
      },
      {L({4, 3}), L({5})}, true));
  EXPECT_TRUE(gradcheck_ok(
      [m](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.index_put_({m}, t[1]);  // one value through the mask
        return y;
      },
      {L({4, 3}), leaf({})}));
  EXPECT_TRUE(gradcheck_ok(
      [m](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.index_put_({m}, -1.0);
        return y;
      },
      {L({4, 3})}));
}

TEST(GradIndexPut, ThroughBasicIndices) {
  // the update is on a view of a contiguous tensor: self's history is rewritten
  Tensor idx = I({2, 0});
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.index_put_({Slice(), idx}, t[1]);
        return y;
      },
      {leaf({3, 4}), leaf({3, 2})}));
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.index_put_({1, idx}, t[1]);
        return y;
      },
      {leaf({3, 4, 2}), leaf({2})}));
  EXPECT_TRUE(gradcheck_ok(
      [](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.index_put_({Slice(1, 3)}, t[1]);  // basic only
        return y;
      },
      {leaf({4, 3}), leaf({3})}));
  EXPECT_TRUE(gradcheck_ok(
      [](const TensorList& t) {
        Tensor y = zeros({4, 3}, kDouble);
        y.index_put_({Slice(), 1}, t[0]);  // self does not require grad
        return y;
      },
      {leaf({4})}));
}

TEST(GradIndexPut, LeafRefused) {
  Tensor x = leaf({3});
  brisk::testing::expect_error([&] { x.index_put_({I({0})}, 1.0); }, {"leaf"});
  NoGradGuard g;
  x.index_put_({I({0})}, 1.0);
}

// ---- index_select / gather --------------------------------------------------------------

TEST_P(GradIndex, IndexSelect) {
  Tensor i0 = I({1, 1, 4, 0}), i1 = I({2, 2}), i32 = tensor(std::vector<int32_t>{0, 2, 0}, {3}, kInt32);
  EXPECT_TRUE(gradcheck_ok([i0](const TensorList& t) { return t[0].index_select(0, i0); }, {L({5, 3})}, true));
  EXPECT_TRUE(gradcheck_ok([i1](const TensorList& t) { return t[0].index_select(-1, i1); }, {L({5, 3})}, true));
  EXPECT_TRUE(gradcheck_ok([i32](const TensorList& t) { return index_select(t[0], 1, i32); }, {L({2, 3})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return index_select(t[0], 0, I({0})); }, {L({})}));
  // duplicates accumulate: the gradient counts how often each row was read
  Tensor x = L({5, 3});
  Tensor y = x.index_select(0, i0);
  EXPECT_EQ(y.grad_fn()->name(), "IndexSelectBackward0");
  y.backward(ones_like(y));
  Tensor counts = tensor(std::vector<double>{1, 2, 0, 0, 1}, {5, 1}, kDouble).expand({5, 3});
  EXPECT_TRUE(close(x.grad(), counts, 0, 0));
}

TEST_P(GradIndex, Gather) {
  Tensor i0 = I({0, 3, 1, 3, 3, 0, 2, 2, 1, 0, 0, 3, 1, 1, 1}, {5, 3});  // dims 0, duplicates
  Tensor i1 = I({2, 2, 0, 1, 1, 1, 0, 2}, {4, 2});
  EXPECT_TRUE(gradcheck_ok([i0](const TensorList& t) { return t[0].gather(0, i0); }, {L({4, 3})}, true));
  EXPECT_TRUE(gradcheck_ok([i1](const TensorList& t) { return gather(t[0], 1, i1); }, {L({4, 3})}, true));
  Tensor x = L({4, 3});
  Tensor y = x.gather(0, i0);
  EXPECT_EQ(y.grad_fn()->name(), "GatherBackward0");
  y.backward(ones_like(y));
  // column c's gradient counts how often each row appears in i0[:, c]
  Tensor want = zeros({4, 3}, kDouble);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      const int64_t row = i0.index({r, c}).item<int64_t>();
      want.index_put_({row, c}, want.index({row, c}).item<double>() + 1);
    }
  EXPECT_TRUE(close(x.grad(), want, 0, 0));
}

// ---- scatter / scatter_add / index_add_ ------------------------------------------------

TEST_P(GradIndex, Scatter) {
  // unique targets per column (duplicates would make the result order-dependent);
  // src larger than index
  Tensor idx = I({0, 3, 1, 2, 1, 3}, {2, 3});
  EXPECT_TRUE(gradcheck_ok([idx](const TensorList& t) { return scatter(t[0], 0, idx, t[1]); },
                           {L({4, 3}), L({3, 4})}, true));
  EXPECT_TRUE(gradcheck_ok([idx](const TensorList& t) { return t[0].scatter(0, idx, t[1]); },
                           {L({4, 3}), L({2, 3})}));
  EXPECT_TRUE(gradcheck_ok([idx](const TensorList& t) { return t[0].scatter(0, idx, 1.5); }, {L({4, 3})}, true));
  Tensor idx1 = I({2, 0, 1, 2}, {2, 2});
  EXPECT_TRUE(gradcheck_ok([idx1](const TensorList& t) { return t[0].scatter(1, idx1, t[1]); },
                           {L({3, 3}), L({2, 2})}));
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.scatter_(0, idx, t[1]);
        return y;
      },
      {L({4, 3}), L({2, 3})}, true));
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.scatter_(0, idx, -2.0);
        return y;
      },
      {L({4, 3})}));
}

TEST_P(GradIndex, ScatterAddWithDuplicates) {
  Tensor idx = I({0, 0, 1, 0, 2, 1, 3, 3, 3}, {3, 3});  // column 0: rows 0, 0, 3
  // (copy_of for the grad_grad check: self's gradient is the output gradient
  // itself, which gradcheck's finite differences cannot follow when it
  // reaches an input unchanged)
  EXPECT_TRUE(gradcheck_ok([idx](const TensorList& t) { return scatter_add(copy_of(t[0]), 0, idx, t[1]); },
                           {L({4, 3}), L({3, 3})}, true));
  EXPECT_TRUE(gradcheck_ok([idx](const TensorList& t) { return t[0].scatter_add(0, idx, t[1]); },
                           {L({4, 3}), L({4, 5})}));  // src larger than index
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.scatter_add_(0, idx, t[1]);
        return y;
      },
      {L({4, 3}), L({3, 3})}, true));
  // only src requires grad: accumulating into zeros (a segment sum)
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) { return zeros({4, 3}, kDouble).scatter_add_(0, idx, t[0]); }, {L({3, 3})}));
}

TEST_P(GradIndex, IndexAddWithDuplicates) {
  Tensor idx = I({1, 1, 3});
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.index_add_(0, idx, t[1]);
        return y;
      },
      {L({4, 3}), L({3, 3})}, true));
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.index_add_(1, idx, t[1], -2.5);
        return y;
      },
      {L({3, 4}), L({3, 3})}));
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) { return zeros({4, 2}, kDouble).index_add_(0, idx, t[0], 0.5); }, {L({3, 2})}));
  // explicit: src's gradient is alpha times the rows it was added to
  Tensor y0 = L({4, 2}), src = L({3, 2});
  Tensor y = copy_of(y0);
  y.index_add_(0, idx, src, 3.0);
  EXPECT_EQ(y.grad_fn()->name(), "IndexAddBackward0");
  Tensor g = rand({4, 2}, kDouble);
  y.backward(g);
  EXPECT_TRUE(close(y0.grad(), g, 0, 0));
  Tensor want = stack({g[1], g[1], g[3]}) * 3.0;
  EXPECT_TRUE(close(src.grad(), want, 1e-12, 1e-12));
}

// ---- masked_select ---------------------------------------------------------------------

TEST_P(GradIndex, MaskedSelect) {
  Tensor m = B({1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1}, {3, 4});
  EXPECT_TRUE(gradcheck_ok([m](const TensorList& t) { return t[0].masked_select(m); }, {L({3, 4})}, true));
  Tensor row = B({0, 1, 1, 0}, {4});  // mask broadcast over x
  EXPECT_TRUE(gradcheck_ok([row](const TensorList& t) { return masked_select(t[0], row); }, {L({3, 4})}));
  // x broadcast over the mask: its gradient sums over the broadcast dim
  EXPECT_TRUE(gradcheck_ok([m](const TensorList& t) { return masked_select(t[0], m); }, {L({4})}));
}

// ---- where / masked_fill ------------------------------------------------------------------

TEST_P(GradIndex, Where) {
  Tensor c = B({1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0}, {3, 4});
  auto w = [c](const TensorList& t) { return where(c, t[0], t[1]); };
  EXPECT_TRUE(gradcheck_ok(w, {L({3, 4}), L({3, 4})}, true));
  EXPECT_TRUE(gradcheck_ok(w, {L({4}), leaf({3, 1})}, true));  // both broadcast
  Tensor c1 = B({1, 0, 1}, {3, 1});                          // cond broadcast too
  EXPECT_TRUE(gradcheck_ok([c1](const TensorList& t) { return where(c1, t[0], t[1]); }, {L({3, 4}), L({4})}, true));
  EXPECT_TRUE(gradcheck_ok([c](const TensorList& t) { return where(c, t[0], 2.0); }, {L({3, 4})}, true));
  EXPECT_TRUE(gradcheck_ok([c](const TensorList& t) { return where(c, -1.0, t[0]); }, {L({3, 4})}, true));
  // the gradient goes to the chosen side only
  Tensor a = L({3, 4}), b = L({3, 4});
  Tensor r = where(c, a, b);
  r.backward(ones_like(r));
  EXPECT_TRUE(close(a.grad(), c.to(kDouble), 0, 0));
  EXPECT_TRUE(close(b.grad(), c.logical_not().to(kDouble), 0, 0));
}

TEST_P(GradIndex, MaskedFill) {
  Tensor m = B({1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0}, {3, 4});
  Tensor row = B({0, 1, 1, 0}, {4});
  EXPECT_TRUE(gradcheck_ok([m](const TensorList& t) { return t[0].masked_fill(m, 3.0); }, {L({3, 4})}, true));
  EXPECT_TRUE(gradcheck_ok([row](const TensorList& t) { return t[0].masked_fill(row, 3.0); }, {L({3, 4})}));
  EXPECT_TRUE(gradcheck_ok(
      [row](const TensorList& t) {
        Tensor y = copy_of(t[0]);
        y.masked_fill_(row, -1.0);
        return y;
      },
      {L({3, 4})}));
}

INSTANTIATE_TEST_SUITE_P(Layouts, GradIndex, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "NonContig" : "Contig"; });

TEST(GradIndexNodes, NoGraphWithoutGrad) {
  Tensor x = rand({4, 3}, kDouble), idx = I({0, 2});
  EXPECT_FALSE(x.index({idx}).requires_grad());
  EXPECT_FALSE(x.gather(0, I({0, 1, 2}, {1, 3})).requires_grad());
  Tensor l = leaf({4, 3});
  NoGradGuard g;
  EXPECT_FALSE(l.index({idx}).requires_grad());
  EXPECT_FALSE(l.index_select(0, idx).requires_grad());
}

TEST(GradIndexNodes, SavedIndexModifiedInPlace) {
  Tensor x = leaf({4, 3});
  Tensor idx = I({0, 2});
  Tensor y = x.index_select(0, idx);
  idx.add_(1);
  EXPECT_THROW(y.backward(ones_like(y)), brisk::Error);
}
