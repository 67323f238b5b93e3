// Indexing: basic views, advanced indexing, index_put_, index_select, gather,
// scatter, scatter_add, index_add_, masked_select, nonzero, where(cond).
// References are naive loops over logical coordinates, or values from PyTorch.
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;

namespace {

const ScalarType kAllDtypes[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};

/// 0, 1, 2, ... in the given shape and dtype (bool: alternating; uint8 wraps
/// at 256, 16-bit floats are exact up to 256, so keep tensors small).
Tensor iota(IntArrayRef shape, ScalarType dt = kFloat) {
  Tensor t = arange(multiply(shape), kInt64).reshape(shape);
  if (dt == kBool) return t.remainder(2).to(kBool);
  if (dt == kUInt8 || dt == kHalf || dt == kBFloat16) t = t.remainder(200);
  return t.to(dt);
}

/// Random int64 tensor with values in [lo, hi).
Tensor rand_int(IntArrayRef shape, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi - 1);
  std::vector<int64_t> v(static_cast<size_t>(multiply(shape)));
  for (auto& x : v) x = u(g);
  return tensor(v, shape, kInt64);
}

/// Logical element access for naive references (any strides and dtype).
struct Acc {
  Tensor c;
  std::vector<int64_t> sizes;
  explicit Acc(const Tensor& t) : c(t.to(kDouble).contiguous()), sizes(t.sizes().vec()) {}
  double operator()(std::initializer_list<int64_t> idx) const { return at(std::vector<int64_t>(idx)); }
  double at(const std::vector<int64_t>& idx) const {
    EXPECT_EQ(idx.size(), sizes.size());
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off = off * sizes[d] + idx[d];
    return c.data_ptr<double>()[off];
  }
  double flat(int64_t i) const { return c.data_ptr<double>()[i]; }
};

/// Calls f(coords) for every coordinate of `shape` in row-major order.
template <class F>
void for_each_coord(IntArrayRef shape, F f) {
  const int64_t n = multiply(shape);
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(c);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

/// A double tensor of `shape` whose values come from f(coords).
template <class F>
Tensor build(IntArrayRef shape, F f) {
  std::vector<double> v;
  for_each_coord(shape, [&](const std::vector<int64_t>& c) { v.push_back(f(c)); });
  return tensor(v, shape, kDouble);
}

std::vector<int64_t> shape_of(const Tensor& t) { return t.sizes().vec(); }

}  // namespace

// ---- basic indexing: views ----------------------------------------------------------

TEST(Index, BasicIndicesAreViews) {
  Tensor x = iota({2, 3, 4});
  Tensor y = x.index({Slice(), None, 0, Ellipsis});
  EXPECT_EQ(shape_of(y), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(y.strides().vec(), (std::vector<int64_t>{12, 12, 1}));  // as PyTorch
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
  EXPECT_TRUE(close(y, build({2, 1, 4}, [](auto& c) { return c[0] * 12 + c[2]; })));

  Tensor r = x.index({1});
  EXPECT_EQ(shape_of(r), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(r.data_ptr(), static_cast<void*>(x.data_ptr<float>() + 12));

  // Negative integers, negative slice bounds, steps.
  Tensor s = x.index({-1, Slice(-2, None), Slice(None, None, 2)});
  EXPECT_EQ(shape_of(s), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.strides().vec(), (std::vector<int64_t>{4, 2}));
  EXPECT_TRUE(s.is_alias_of(x));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{16, 18, 20, 22}));
  Tensor v = iota({10});
  Tensor st = v.index({Slice(1, 8, 3)});
  EXPECT_EQ(st.to_vector<float>(), (std::vector<float>{1, 4, 7}));
  EXPECT_EQ(st.stride(0), 3);
  EXPECT_EQ(v.index({Slice(-3, -1)}).to_vector<float>(), (std::vector<float>{7, 8}));
  EXPECT_EQ(v.index({Slice(-100, 2)}).to_vector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ(v.index({Slice(8, 100)}).to_vector<float>(), (std::vector<float>{8, 9}));
  EXPECT_EQ(v.index({Slice(5, 2)}).numel(), 0);
  EXPECT_EQ(v.index({Slice(None, None, 4)}).to_vector<float>(), (std::vector<float>{0, 4, 8}));

  // Ellipsis in the middle and as a string.
  Tensor e = x.index({0, "...", 1});
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{1, 5, 9}));
  EXPECT_EQ(e.data_ptr(), static_cast<void*>(x.data_ptr<float>() + 1));
  EXPECT_EQ(shape_of(x.index({Ellipsis, None})), (std::vector<int64_t>{2, 3, 4, 1}));
  EXPECT_EQ(shape_of(x.index({None, Ellipsis, None, 2})), (std::vector<int64_t>{1, 2, 3, 1}));

  // An empty index list and a lone ellipsis give a new view of everything.
  Tensor a = x.index({});
  EXPECT_FALSE(a.is_same(x));
  EXPECT_EQ(a.data_ptr(), x.data_ptr());
  EXPECT_EQ(shape_of(x.index({Ellipsis})), shape_of(x));

  // Bools add a dim of size 1 (True) or 0 (False). They are advanced
  // indices in PyTorch, so the result is a copy (a = torch.zeros(3);
  // a[True].fill_(5) leaves a alone).
  Tensor t = x.index({true});
  EXPECT_EQ(shape_of(t), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_NE(t.data_ptr(), x.data_ptr());
  EXPECT_EQ(t.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(shape_of(x.index({false})), (std::vector<int64_t>{0, 2, 3, 4}));
  EXPECT_EQ(shape_of(x.index({Slice(), false, 1})), (std::vector<int64_t>{2, 0, 4}));
  EXPECT_EQ(shape_of(x.index({scalar_tensor(true)})), (std::vector<int64_t>{1, 2, 3, 4}));
  // Several bools merge into one dim, placed like an advanced index (as PyTorch).
  Tensor tt = x.index({true, Slice(), true});
  EXPECT_EQ(shape_of(tt), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_NE(tt.data_ptr(), x.data_ptr());
  EXPECT_EQ(shape_of(x.index({Slice(), true, false})), (std::vector<int64_t>{2, 0, 3, 4}));
  EXPECT_EQ(shape_of(x.index({true, true, None})), (std::vector<int64_t>{1, 1, 2, 3, 4}));

  // A 0-dim integer tensor selects, like an integer.
  Tensor z = x.index({scalar_tensor(1, kInt64), scalar_tensor(-1, kInt32)});
  EXPECT_EQ(z.data_ptr(), static_cast<void*>(x.data_ptr<float>() + 20));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{20, 21, 22, 23}));

  // Views write through to the original.
  x.index({1, Slice(), 2}).fill_(-1);
  EXPECT_EQ(x.index({1, Slice(), 2}).to_vector<float>(), (std::vector<float>{-1, -1, -1}));
  EXPECT_EQ(x.index({0, 0, 2}).item<float>(), 2.f);
}

TEST(Index, BasicOnNonContiguousAndZeroDim) {
  Tensor x = iota({3, 4}).t();  // (4, 3), strides (1, 4)
  Tensor c = x.index({Slice(1, None), 2});
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{9, 10, 11}));
  EXPECT_TRUE(c.is_alias_of(x));
  Tensor s = scalar_tensor(5.0);
  EXPECT_EQ(shape_of(s.index({None})), (std::vector<int64_t>{1}));
  EXPECT_EQ(shape_of(s.index({Ellipsis})), (std::vector<int64_t>{}));
  EXPECT_EQ(shape_of(s.index({true})), (std::vector<int64_t>{1}));
  Tensor empty_rows = zeros({0, 3});
  EXPECT_EQ(shape_of(empty_rows.index({Slice(), 1})), (std::vector<int64_t>{0}));
}

TEST(Index, BasicErrors) {
  Tensor x = iota({3, 5});
  expect_error([&] { x.index({3}); }, {"[index]", "index 3 is out of bounds for dimension 0 with size 3"});
  expect_error([&] { x.index({-4}); }, {"[index]", "index -4 is out of bounds for dimension 0 with size 3"});
  expect_error([&] { x.index({1, 7}); }, {"index 7 is out of bounds for dimension 1 with size 5"});
  expect_error([&] { x.index({None, Ellipsis, 9}); }, {"index 9 is out of bounds for dimension 1 with size 5"});
  expect_error([&] { x.index({0, 0, 0}); }, {"[index]", "too many indices for tensor of dimension 2"});
  expect_error([&] { x.index({zeros({3, 5, 1}, kBool)}); }, {"too many indices for tensor of dimension 2"});
  expect_error([&] { scalar_tensor(1.0).index({0}); }, {"too many indices for tensor of dimension 0"});
  expect_error([&] { x.index({Ellipsis, 0, Ellipsis}); }, {"[index]", "single ellipsis"});
  expect_error([&] { x.index({Slice(None, None, 0)}); }, {"[index]", "step must be greater than zero, got 0"});
  expect_error([&] { x.index({Slice(None, None, -1)}); }, {"step must be greater than zero, got -1"});
  expect_error([&] { TensorIndex bad("..,"); }, {"[index]", "\"...\"", "\"..,\""});
  EXPECT_EQ(TensorIndex("...").kind(), TensorIndex::Kind::Ellipsis);
  expect_error([&] { x.index({tensor({0.5f})}); },
               {"[index]", "tensors used as indices must be long, int, byte or bool tensors, got float32"});
  expect_error([&] { x.index({Tensor()}); }, {"[index]", "undefined"});
}

// ---- advanced indexing ---------------------------------------------------------------

TEST(Index, OneIndexTensor) {
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota({5, 4}, dt);
    Acc X(x);
    Tensor r = x.index({tensor({2, 0, -1, 2})});
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_FALSE(r.is_alias_of(x));
    const int64_t rows[] = {2, 0, 4, 2};
    EXPECT_TRUE(close(r, build({4, 4}, [&](auto& c) { return X({rows[c[0]], c[1]}); })));

    // A 2-d index on dim 1 replaces that dim by its shape; int32 works too.
    Tensor idx = tensor({{3, 0}, {1, -4}}, kInt32);
    Tensor r2 = x.index({Slice(), idx});
    EXPECT_EQ(shape_of(r2), (std::vector<int64_t>{5, 2, 2}));
    const int64_t cols[2][2] = {{3, 0}, {1, 0}};
    EXPECT_TRUE(close(r2, build({5, 2, 2}, [&](auto& c) { return X({c[0], cols[c[1]][c[2]]}); })));
  }
}

TEST(Index, SeveralIndexTensors) {
  Tensor x = iota({2, 3, 4, 5}, kDouble);
  Acc X(x);
  Tensor i = tensor({{1}, {0}}), j = tensor({0, 2, 1});  // broadcast to B = (2, 3)
  auto I = [](int64_t a) { return a == 0 ? int64_t(1) : int64_t(0); };
  auto J = [](int64_t b) { return b == 0 ? int64_t(0) : b == 1 ? int64_t(2) : int64_t(1); };

  // Adjacent: the B dims go where the indexed dims were.
  Tensor a = x.index({Slice(), i, j});
  EXPECT_EQ(shape_of(a), (std::vector<int64_t>{2, 2, 3, 5}));
  EXPECT_TRUE(close(a, build({2, 2, 3, 5}, [&](auto& c) { return X({c[0], I(c[1]), J(c[2]), c[3]}); })));

  // Separated by a slice: the B dims go first.
  Tensor s = x.index({i, Slice(), j});
  EXPECT_EQ(shape_of(s), (std::vector<int64_t>{2, 3, 3, 5}));
  EXPECT_TRUE(close(s, build({2, 3, 3, 5}, [&](auto& c) { return X({I(c[0]), c[2], J(c[1]), c[3]}); })));

  // Separated by None (PyTorch: (2, 3, 1, 3, 5) starting 60, 61, ...).
  Tensor n = x.index({None, i, Slice(), j});
  EXPECT_EQ(shape_of(n), (std::vector<int64_t>{2, 3, 1, 3, 5}));
  EXPECT_TRUE(close(n, build({2, 3, 1, 3, 5}, [&](auto& c) { return X({I(c[0]), c[3], J(c[1]), c[4]}); })));

  // An integer between two tensors selects, so they stay adjacent (PyTorch: (2, 3, 5)).
  Tensor k = x.index({i, 1, j});
  EXPECT_EQ(shape_of(k), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_TRUE(close(k, build({2, 3, 5}, [&](auto& c) { return X({I(c[0]), 1, J(c[1]), c[2]}); })));
  EXPECT_EQ(k.flatten().index({Slice(0, 12)}).to_vector<double>(),
            (std::vector<double>{80, 81, 82, 83, 84, 90, 91, 92, 93, 94, 85, 86}));

  // Bools next to tensors are size-1 advanced indices (PyTorch: (2, 3, 1, 4, 5) from 60).
  Tensor b = x.index({true, i, None, j});
  EXPECT_EQ(shape_of(b), (std::vector<int64_t>{2, 3, 1, 4, 5}));
  EXPECT_TRUE(close(b, build({2, 3, 1, 4, 5}, [&](auto& c) { return X({I(c[0]), J(c[1]), c[3], c[4]}); })));
  EXPECT_EQ(shape_of(x.index({Ellipsis, tensor({0, 4}), true})), (std::vector<int64_t>{2, 3, 4, 2}));
  Tensor x2 = iota({3, 4});  // PyTorch: x2[tensor(True), [0, 2]] is [[0, 1, 2, 3], [8, 9, 10, 11]]
  EXPECT_EQ(x2.index({scalar_tensor(true), tensor({0, 2})}).to_vector<float>(),
            (std::vector<float>{0, 1, 2, 3, 8, 9, 10, 11}));
  expect_error([&] { x.index({false, tensor({0, 1})}); }, {"shape mismatch", "[0], [2]"});

  // Non-contiguous source: the transposed tensor indexed on both dims.
  Tensor xt = iota({4, 6}).t();  // (6, 4)
  Acc XT(xt);
  Tensor p = xt.index({tensor({5, 0, 3}), tensor({1, 1, -1})});
  EXPECT_TRUE(close(p, tensor({XT({5, 1}), XT({0, 1}), XT({3, 3})}, kDouble)));
  // Stepped view with an index tensor.
  Tensor sv = iota({6, 4}).index({Slice(None, None, 2), tensor({3, 0})});
  EXPECT_EQ(sv.to_vector<float>(), (std::vector<float>{3, 0, 11, 8, 19, 16}));

  // Zero-size: empty index tensors and empty dims.
  EXPECT_EQ(shape_of(x.index({empty({0}, kInt64)})), (std::vector<int64_t>{0, 3, 4, 5}));
  EXPECT_EQ(shape_of(zeros({2, 0}).index({tensor({1})})), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(shape_of(x.index({Slice(), empty({0, 2}, kInt64), 0})), (std::vector<int64_t>{2, 0, 2, 5}));
}

TEST(Index, BooleanMasks) {
  Tensor x = iota({3, 4});
  Tensor m = x.gt(4.5).logical_and(x.remainder(2).eq(0));  // 6, 8, 10
  Tensor r = x.index({m});
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{6, 8, 10}));
  // uint8 masks act like bool masks.
  EXPECT_EQ(x.index({m.to(kUInt8)}).to_vector<float>(), (std::vector<float>{6, 8, 10}));

  // A mask on one dim; with an index tensor (PyTorch: [0., 11.]).
  Tensor rows = tensor(std::vector<bool>{true, false, true});
  Tensor cols = tensor(std::vector<bool>{false, true, true, false});
  EXPECT_EQ(shape_of(x.index({rows})), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(x.index({Slice(), cols}).to_vector<float>(), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(x.index({rows, tensor({0, 3})}).to_vector<float>(), (std::vector<float>{0, 11}));

  // A 2-d mask on a 3-d tensor keeps the trailing dim; non-contiguous source.
  Tensor y = iota({4, 2, 3}).permute({1, 2, 0});  // (2, 3, 4)
  Acc Y(y);
  Tensor m2 = tensor(std::vector<bool>{true, false, false, true, true, false}, {2, 3});
  Tensor ym = y.index({m2});
  EXPECT_TRUE(close(ym, build({3, 4}, [&](auto& c) {
    const int64_t at[3][2] = {{0, 0}, {1, 0}, {1, 1}};
    return Y({at[c[0]][0], at[c[0]][1], c[1]});
  })));
  // Ellipsis then a mask on the last dim.
  Tensor last = x.index({Ellipsis, cols});
  EXPECT_EQ(shape_of(last), (std::vector<int64_t>{3, 2}));

  // Every dtype through a mask, and an all-false mask.
  for (ScalarType dt : kAllDtypes) {
    Tensor xd = iota({3, 4}, dt);
    Acc XD(xd);
    EXPECT_TRUE(close(xd.index({m}), tensor({XD({1, 2}), XD({2, 0}), XD({2, 2})}))) << dtype_name(dt);
    EXPECT_EQ(xd.index({m}).dtype(), dt);
  }
  EXPECT_EQ(shape_of(x.index({zeros({3, 4}, kBool)})), (std::vector<int64_t>{0}));
  EXPECT_EQ(shape_of(zeros({0, 4}).index({zeros({0, 4}, kBool)})), (std::vector<int64_t>{0}));

  expect_error([&] { x.index({ones({4}, kBool)}); },
               {"[index]", "the shape of the mask [4] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"});
  expect_error([&] { x.index({Slice(), ones({5}, kBool)}); }, {"mask [5] at index 0", "[3, 4] at index 1"});
}

TEST(Index, AdvancedErrors) {
  Tensor x = iota({5, 3});
  expect_error([&] { x.index({tensor({1, 7})}); }, {"[index]", "index 7 is out of bounds for dimension 0 with size 5"});
  expect_error([&] { x.index({tensor({-6})}); }, {"index -6 is out of bounds for dimension 0 with size 5"});
  expect_error([&] { x.index({Slice(), tensor({0, 3})}); }, {"index 3 is out of bounds for dimension 1 with size 3"});
  expect_error([&] { x.index({tensor({0, 1}), tensor({0, 1, 2})}); },
               {"[index]", "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"});
  expect_error([&] { x.index({tensor({0, 1}), tensor({0, 1}), tensor({0})}); }, {"too many indices"});
}

// ---- index_put_ ---------------------------------------------------------------------------

TEST(IndexPut, BasicIndicesWriteThrough) {
  Tensor x = zeros({3, 4});
  const uint32_t v0 = x._version();
  x.index_put_({1}, 5.0);
  EXPECT_GT(x._version(), v0);
  EXPECT_EQ(x.index({1}).to_vector<float>(), (std::vector<float>{5, 5, 5, 5}));
  EXPECT_EQ(x.index({0}).to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));

  x.index_put_({Slice(), Slice(1, 3)}, tensor({7.f, 8.f}));  // broadcast over rows
  EXPECT_EQ(x.index({2}).to_vector<float>(), (std::vector<float>{0, 7, 8, 0}));
  x.index_put_({Ellipsis, -1}, tensor({1.f, 2.f, 3.f}));
  EXPECT_EQ(x.index({Slice(), 3}).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  x.index_put_({None, 0, Slice(None, None, 2)}, -1);
  EXPECT_EQ(x.index({0}).to_vector<float>(), (std::vector<float>{-1, 7, -1, 1}));
  // Leading size-1 dims of the value are dropped (PyTorch's rule).
  x.index_put_({2}, ones({1, 1, 4}).mul(9));
  EXPECT_EQ(x.index({2}).to_vector<float>(), (std::vector<float>{9, 9, 9, 9}));
  // Other dtypes are converted; True indexes everything.
  x.index_put_({true}, tensor({1.5, 2.5, 3.5, 4.5}, kDouble));
  EXPECT_EQ(x.index({1}).to_vector<float>(), (std::vector<float>{1.5, 2.5, 3.5, 4.5}));
  // A lone False does nothing at all (torch's set_item: x[False] = 3 leaves
  // x._version alone); False among other indices is an advanced index.
  const uint32_t v1 = x._version();
  x.index_put_({false}, 3.0);
  EXPECT_EQ(x._version(), v1);
  x.index_put_({Slice(), false}, 3.0);
  EXPECT_GT(x._version(), v1);
  EXPECT_EQ(x.index({0}).to_vector<float>(), (std::vector<float>{1.5, 2.5, 3.5, 4.5}));

  // Overlapping source and destination behave as if the value were copied first.
  Tensor s = iota({6});
  s.index_put_({Slice(1, None)}, s.index({Slice(None, -1)}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3, 4}));

  expect_error([&] { x.index_put_({0}, tensor({1.f, 2.f})); },
               {"[index_put_]", "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape [4]"});
  expect_error([&] { x.index_put_({5}, 1.0); }, {"[index_put_]", "index 5 is out of bounds for dimension 0 with size 3"});
}

TEST(IndexPut, AdvancedIndicesScatter) {
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = zeros({4, 3}, dt);
    Tensor val = iota({2, 3}, dt).add(1).to(dt);
    if (dt == kBool) val = ones({2, 3}, kBool);
    x.index_put_({tensor({3, -4})}, val);
    Acc V(val), X(x);
    for (int64_t c = 0; c < 3; ++c) {
      EXPECT_EQ(X({3, c}), V({0, c}));
      EXPECT_EQ(X({0, c}), V({1, c}));
      EXPECT_EQ(X({1, c}), 0);
    }
  }
  // Duplicates: the last write wins (sequential below the grain size).
  Tensor d = zeros({3});
  d.index_put_({tensor({1, 1, 1})}, tensor({4.f, 5.f, 6.f}));
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{0, 6, 0}));

  // Several separated index tensors; value broadcast over the result (B, 3).
  Tensor y = zeros({2, 3, 4}, kInt64);
  Tensor i = tensor({0, 1, 1}), j = tensor({3, 0, 2});
  y.index_put_({i, Slice(), j}, tensor({10, 20, 30}).unsqueeze(1));  // value (3, 1) -> (3, 3)
  Acc Y(y);
  for_each_coord({2, 3, 4}, [&](const std::vector<int64_t>& c) {
    double want = 0;
    for (int k = 0; k < 3; ++k)
      if (c[0] == i.index({k}).item<int64_t>() && c[2] == j.index({k}).item<int64_t>()) want = 10.0 * (k + 1);
    EXPECT_EQ(Y.at(c), want);
  });
  // Adjacent indices on a non-contiguous target; a scalar value.
  Tensor z = zeros({4, 3}).t();  // (3, 4)
  z.index_put_({tensor({0, 2}), tensor({3, 1})}, 7);
  Acc Z(z);
  for_each_coord({3, 4}, [&](const std::vector<int64_t>& c) {
    const bool hit = (c[0] == 0 && c[1] == 3) || (c[0] == 2 && c[1] == 1);
    EXPECT_EQ(Z.at(c), hit ? 7 : 0);
  });

  // Masks: scalar (masked_fill_ path), 0-dim tensor, and a tensor of values.
  Tensor m = iota({3, 4});
  Tensor mask = m.gt(7);
  m.index_put_({mask}, 0.0);
  EXPECT_EQ(m.index({2}).to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(m.index({1}).to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  m.index_put_({Slice(), tensor(std::vector<bool>{true, false, false, true})}, scalar_tensor(-2.0));
  EXPECT_EQ(m.index({0}).to_vector<float>(), (std::vector<float>{-2, 1, 2, -2}));
  Tensor w = iota({2, 3});
  w.index_put_({w.gt(2)}, tensor({30.f, 40.f, 50.f}));
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0, 1, 2, 30, 40, 50}));
  Tensor u = iota({2, 3});
  u.index_put_({tensor(std::vector<bool>{false, true}).to(kUInt8)}, tensor({7.f, 8.f, 9.f}));
  EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{0, 1, 2, 7, 8, 9}));

  // Values that alias the target: rows swapped as if copied first.
  Tensor sw = iota({2, 3});
  sw.index_put_({tensor({1, 0})}, sw);
  EXPECT_EQ(sw.to_vector<float>(), (std::vector<float>{3, 4, 5, 0, 1, 2}));
  // An index tensor that is the target itself.
  Tensor self_idx = tensor({2, 0, 1});
  self_idx.index_put_({self_idx}, tensor({10, 11, 12}));
  EXPECT_EQ(self_idx.to_vector<int64_t>(), (std::vector<int64_t>{11, 12, 10}));

  const uint32_t v0 = d._version();
  d.index_put_({tensor({0})}, 1.0);
  EXPECT_GT(d._version(), v0);
}

TEST(IndexPut, ErrorsLeaveTargetUnchanged) {
  Tensor x = iota({5, 2});
  const std::vector<float> before = x.to_vector<float>();
  expect_error([&] { x.index_put_({tensor({0, 7})}, 1.0); },
               {"[index_put_]", "index 7 is out of bounds for dimension 0 with size 5"});
  expect_error([&] { x.index_put_({tensor({0, 2, 7})}, zeros({3, 2})); }, {"index 7 is out of bounds"});
  expect_error([&] { x.index_put_({tensor({0, 1})}, zeros({3, 2})); },
               {"shape mismatch: value tensor of shape [3, 2] cannot be broadcast to indexing result of shape [2, 2]"});
  expect_error([&] { x.index_put_({ones({5}, kBool)}, zeros({4, 2})); }, {"shape mismatch"});
  expect_error([&] { ones({3}).expand({2, 3}).index_put_({tensor({0, 1})}, 1.0); }, {"[index_put_]", "clone()"});
  EXPECT_EQ(x.to_vector<float>(), before);
}

// ---- index_select ---------------------------------------------------------------------------

TEST(IndexSelect, AgainstNaiveLoops) {
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota({3, 4, 5}, dt);
    Acc X(x);
    for (int64_t dim = 0; dim < 3; ++dim) {
      Tensor idx = rand_int({7}, 0, x.size(dim), 17 + dim);
      Acc I(idx);
      Tensor r = x.index_select(dim, idx);
      std::vector<int64_t> shape = shape_of(x);
      shape[dim] = 7;
      EXPECT_TRUE(close(r, build(shape, [&](auto& c) {
        std::vector<int64_t> s = c;
        s[dim] = static_cast<int64_t>(I({c[dim]}));
        return X.at(s);
      })));
    }
  }
  // Non-contiguous source and index, int32 index, negative dim.
  Tensor x = iota({5, 6}).t();  // (6, 5)
  Acc X(x);
  Tensor idx = tensor({4, 0, 4, 2, 1, 3}).index({Slice(None, None, 2)});  // 4, 4, 1
  Tensor r = x.index_select(-1, idx.to(kInt32));
  EXPECT_TRUE(close(r, build({6, 3}, [&](auto& c) {
    const int64_t cols[] = {4, 4, 1};
    return X({c[0], cols[c[1]]});
  })));
  // 0-dim index keeps the dim with size 1; 0-dim self; empty index.
  EXPECT_EQ(shape_of(x.index_select(0, scalar_tensor(2, kInt64))), (std::vector<int64_t>{1, 5}));
  Tensor s = scalar_tensor(5.0).index_select(0, tensor({0}));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 5.0);
  EXPECT_EQ(shape_of(x.index_select(1, empty({0}, kInt64))), (std::vector<int64_t>{6, 0}));
  // Many rows: the parallel path.
  Tensor big = iota({70000, 2});
  Tensor bi = rand_int({50000}, 0, 70000, 3);
  Tensor br = big.index_select(0, bi);
  Acc BR(br), BI(bi);
  for (int64_t k = 0; k < 50000; k += 997) EXPECT_EQ(BR({k, 1}), 2 * BI({k}) + 1);
}

TEST(IndexSelect, Errors) {
  Tensor x = iota({3, 4});
  // In a big index checked by several threads, the first bad value is named.
  const int threads = get_num_threads();
  set_num_threads(4);
  Tensor big = zeros({100000}, kInt64);
  big.index_put_({90000}, -5);
  big.index_put_({50000}, 3);
  expect_error([&] { x.index_select(0, big); }, {"index 3 is out of bounds for dimension 0 with size 3"});
  expect_error([&] { x.index({big.mul(2)}); }, {"[index]", "index 6 is out of bounds for dimension 0 with size 3"});
  expect_error([&] { x.gather(0, big.view({100000, 1})); }, {"[gather]", "index 3 is out of bounds"});
  set_num_threads(threads);
  expect_error([&] { x.index_select(0, tensor({{0}})); }, {"[index_select]", "index is supposed to be a vector"});
  expect_error([&] { x.index_select(0, tensor({0.f})); }, {"[index_select]", "int32 or int64", "float32"});
  expect_error([&] { x.index_select(0, tensor({3})); },
               {"[index_select]", "index 3 is out of bounds for dimension 0 with size 3"});
  expect_error([&] { x.index_select(1, tensor({-1})); }, {"index -1 is out of bounds for dimension 1 with size 4"});
  expect_error([&] { x.index_select(2, tensor({0})); }, {"[index_select]", "dimension out of range"});
  expect_error([&] { scalar_tensor(1.0).index_select(0, tensor({0, 0})); }, {"index to scalar can have only 1 value"});
}

// ---- gather -----------------------------------------------------------------------------------

TEST(Gather, AgainstNaiveLoops) {
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota({4, 5, 3}, dt);
    Acc X(x);
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<int64_t> ishape = {3, 4, 2};  // smaller than x apart from dim
      ishape[dim] = 6;
      Tensor idx = rand_int(ishape, 0, x.size(dim), 5 + dim);
      Acc I(idx);
      Tensor r = x.gather(dim, idx);
      EXPECT_EQ(r.dtype(), dt);
      EXPECT_TRUE(close(r, build(ishape, [&](auto& c) {
        std::vector<int64_t> s = c;
        s[dim] = static_cast<int64_t>(I.at(c));
        return X.at(s);
      })));
    }
  }
  // Non-contiguous input and index.
  Tensor x = iota({6, 4}).t();  // (4, 6)
  Acc X(x);
  Tensor idx = rand_int({5, 4}, 0, 4, 9).t();  // (4, 5)
  Acc I(idx);
  EXPECT_TRUE(close(x.gather(0, idx), build({4, 5}, [&](auto& c) { return X({static_cast<int64_t>(I.at(c)), c[1]}); })));
  EXPECT_TRUE(close(x.gather(-1, idx), build({4, 5}, [&](auto& c) { return X({c[0], static_cast<int64_t>(I.at(c))}); })));
  // 0-dim and empty.
  EXPECT_EQ(scalar_tensor(3.0).gather(0, scalar_tensor(0, kInt64)).item<double>(), 3.0);
  EXPECT_EQ(shape_of(scalar_tensor(3.0).gather(0, tensor({0}))), (std::vector<int64_t>{1}));
  EXPECT_EQ(shape_of(x.gather(0, empty({0, 6}, kInt64))), (std::vector<int64_t>{0, 6}));
  // Big, 1-d (parallel path).
  Tensor big = iota({100000}).remainder(1000);
  Tensor bi = rand_int({80000}, 0, 100000, 4);
  Tensor g = big.gather(0, bi);
  Acc G(g), BI(bi);
  for (int64_t k = 0; k < 80000; k += 1231) EXPECT_EQ(G({k}), std::fmod(BI({k}), 1000.0));
}

TEST(Gather, Errors) {
  Tensor x = iota({3, 4});
  expect_error([&] { x.gather(1, tensor({{0}}, kInt32)); }, {"[gather]", "expected dtype int64 for index, got int32"});
  expect_error([&] { x.gather(1, tensor({0})); }, {"[gather]", "same number of dimensions"});
  expect_error([&] { x.gather(1, zeros({4, 1}, kInt64)); }, {"[gather]", "size does not match at dimension 0"});
  expect_error([&] { x.gather(1, tensor({{4}})); }, {"[gather]", "index 4 is out of bounds for dimension 1 with size 4"});
  expect_error([&] { x.gather(0, tensor({{-1}})); }, {"index -1 is out of bounds for dimension 0 with size 3"});
  expect_error([&] { x.gather(2, tensor({{0}})); }, {"[gather]", "dimension out of range"});
}

// ---- scatter / scatter_add -------------------------------------------------------------------

namespace {
/// Naive scatter: self[p with dim := index[p]] (op)= src[p], in row-major order.
Tensor naive_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src, double value, bool add) {
  Tensor out = self.to(kDouble).contiguous().clone();
  Acc I(index);
  std::unique_ptr<Acc> S(src ? new Acc(*src) : nullptr);
  double* o = out.data_ptr<double>();
  for_each_coord(index.sizes(), [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> t = c;
    t[dim] = static_cast<int64_t>(I.at(c));
    int64_t off = 0;
    for (size_t d = 0; d < t.size(); ++d) off = off * self.size(d) + t[d];
    const double v = S ? S->at(c) : value;
    o[off] = add ? o[off] + v : v;
  });
  return out;
}
}  // namespace

TEST(Scatter, AgainstNaiveLoops) {
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor self = iota({4, 5, 3}, dt);
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<int64_t> ishape = {3, 4, 2};
      ishape[dim] = 2;
      // Distinct indices along dim (duplicates make scatter order-dependent).
      Tensor idx = zeros(ishape, kInt64);
      Acc R(rand_int(ishape, 0, 1000, 11 + dim));
      for_each_coord(ishape, [&](const std::vector<int64_t>& c) {
        const int64_t first = static_cast<int64_t>(R.at(c)) % self.size(dim);
        const int64_t v = c[dim] == 0 ? first : (first + 1) % self.size(dim);
        std::vector<TensorIndex> ti(c.begin(), c.end());
        idx.index_put_(ti, v);
      });
      Tensor src = iota({3, 4, 3}, dt).add(1).to(dt);  // larger than index
      Tensor r = self.scatter(dim, idx, src);
      EXPECT_TRUE(close(r, naive_scatter(self, dim, idx, &src, 0, false)));
      EXPECT_TRUE(close(self, iota({4, 5, 3}, dt)));  // functional form leaves self alone
      Tensor rs = self.scatter(dim, idx, Scalar(1));
      EXPECT_TRUE(close(rs, naive_scatter(self, dim, idx, nullptr, 1, false)));
      if (dt != kBool && dt != kUInt8) {
        Tensor ra = self.scatter_add(dim, idx, src);
        EXPECT_TRUE(close(ra, naive_scatter(self, dim, idx, &src, 0, true)));
      }
    }
  }
  // scatter_add sums duplicates; in-place forms bump the version.
  Tensor acc = zeros({3});
  const uint32_t v0 = acc._version();
  acc.scatter_add_(0, tensor({0, 2, 0, 0}), tensor({1.f, 2.f, 3.f, 4.f}));
  EXPECT_EQ(acc.to_vector<float>(), (std::vector<float>{8, 0, 2}));
  EXPECT_GT(acc._version(), v0);
  Tensor bools = zeros({3}, kBool);
  bools.scatter_add_(0, tensor({1, 1}), ones({2}, kBool));
  EXPECT_EQ(bools.to_vector<bool>(), (std::vector<bool>{false, true, false}));

  // In place into a non-contiguous target with a non-contiguous index.
  Tensor t = zeros({5, 4}).t();  // (4, 5)
  Tensor idx = tensor({{4, 0}, {1, 3}, {2, 2}}).t();  // (2, 3)
  Tensor src = iota({2, 3}).add(1);
  Tensor want = naive_scatter(t, 1, idx, &src, 0, false);
  t.scatter_(1, idx, src);
  EXPECT_TRUE(close(t, want));
  t.scatter_(0, tensor({{3}}), -5.0);
  EXPECT_EQ(t.index({3, 0}).item<float>(), -5.f);

  // 0-dim and empty index.
  EXPECT_EQ(scalar_tensor(3.0).scatter(0, scalar_tensor(0, kInt64), Scalar(5.0)).item<double>(), 5.0);
  Tensor e = iota({2, 2});
  EXPECT_TRUE(close(e.scatter(0, empty({0, 2}, kInt64), zeros({0, 2})), e));

  // Big (parallel path): every element of a row permutation.
  Tensor big = zeros({300, 200});
  Tensor bidx = arange(199, -1, -1, kInt64).expand({300, 200}).contiguous();
  Tensor bsrc = iota({300, 200});
  big.scatter_(1, bidx, bsrc);
  Acc B(big);
  for (int64_t r = 0; r < 300; r += 37)
    for (int64_t c = 0; c < 200; c += 13) EXPECT_EQ(B({r, c}), r * 200 + (199 - c));
}

TEST(Scatter, Errors) {
  Tensor x = zeros({3, 4});
  const std::vector<float> before = x.to_vector<float>();
  expect_error([&] { x.scatter_(1, tensor({{0}}), zeros({3, 4}, kDouble)); },
               {"[scatter_]", "expected self.dtype to be equal to src.dtype"});
  expect_error([&] { x.scatter(1, tensor({{0.f}}), zeros({1, 1})); }, {"[scatter]", "expected dtype int64 for index"});
  expect_error([&] { x.scatter(0, zeros({1, 1, 1}, kInt64), zeros({1, 3})); }, {"same number of dimensions as self"});
  expect_error([&] { x.scatter(0, tensor({{0, 1, 2, 0, 1}}), zeros({1, 5})); },
               {"[scatter]", "expected index [1, 5] to be no larger than self [3, 4] apart from dimension 0"});
  expect_error([&] { x.scatter(0, tensor({{0, 1}}), zeros({1, 1})); },
               {"expected index [1, 2] to be no larger than src [1, 1]"});
  expect_error([&] { x.scatter_(1, tensor({{0, 5}}), zeros({1, 2})); },
               {"[scatter]", "index 5 is out of bounds for dimension 1 with size 4"});
  expect_error([&] { x.scatter_add_(0, tensor({{1, -1}}), zeros({1, 2})); },
               {"[scatter_add]", "index -1 is out of bounds for dimension 0 with size 3"});
  expect_error([&] { x.scatter_(2, tensor({{0}}), 1.0); }, {"dimension out of range"});
  expect_error([&] { ones({3}).expand({2, 3}).scatter_(0, tensor({{0, 1}}), 1.0); }, {"[scatter_]", "clone()"});
  EXPECT_EQ(x.to_vector<float>(), before);
}

// ---- index_add_ -------------------------------------------------------------------------------

TEST(IndexAdd, AgainstNaiveLoops) {
  for (ScalarType dt : {kUInt8, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble}) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t dim = 0; dim < 3; ++dim) {
      Tensor self = iota({3, 4, 5}, dt);
      std::vector<int64_t> sshape = {3, 4, 5};
      sshape[dim] = 6;
      Tensor src = iota(sshape, dt).remainder(7).to(dt);
      Tensor idx = rand_int({6}, 0, self.size(dim), 23 + dim);  // duplicates accumulate
      Acc S(src), I(idx), X(self);
      Tensor want = build({3, 4, 5}, [&](auto& c) {
        double v = X.at(c);
        for (int64_t k = 0; k < 6; ++k)
          if (static_cast<int64_t>(I({k})) == c[dim]) {
            std::vector<int64_t> s = c;
            s[dim] = k;
            v += 2 * S.at(s);
          }
        return v;
      });
      const uint32_t v0 = self._version();
      self.index_add_(dim, idx, src, 2);
      EXPECT_GT(self._version(), v0);
      EXPECT_TRUE(close(self, want.to(dt))) << "dim " << dim;
    }
  }
  // Non-contiguous self and source, int32 index, float alpha.
  Tensor self = zeros({4, 3}).t();  // (3, 4)
  Tensor src = iota({2, 3}).t();    // (3, 2)
  self.index_add_(1, tensor({3, 0}, kInt32), src, 0.5);
  Acc A(self), S(src);
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(A({r, 3}), 0.5 * S({r, 0}));
    EXPECT_EQ(A({r, 0}), 0.5 * S({r, 1}));
    EXPECT_EQ(A({r, 1}), 0);
  }
  // 0-dim self and source.
  Tensor s0 = scalar_tensor(1.0);
  s0.index_add_(0, tensor({0}), scalar_tensor(2.0));
  EXPECT_EQ(s0.item<double>(), 3.0);
}

// The out-of-place form: index_add_ on a copy, self unchanged, gradients to
// self (the incoming one) and source (gathered, times alpha), errors named
// index_add.
TEST(IndexAdd, OutOfPlace) {
  Tensor x = iota({3, 4}).requires_grad_(), src = iota({3, 2}).add(1).requires_grad_();
  const Tensor idx = tensor({3, 1});
  Tensor y = x.index_add(1, idx, src, 2);
  Tensor want = x.detach().clone();
  want.index_add_(1, idx, src.detach(), 2);
  EXPECT_TRUE(y.equal(want));
  EXPECT_TRUE(x.detach().equal(iota({3, 4})));
  EXPECT_TRUE(brisk::index_add(x.detach(), 1, idx, src.detach(), 2).equal(want));
  const Tensor g = iota({3, 4}).mul(0.5);
  y.backward(g);
  EXPECT_TRUE(x.grad().equal(g));
  EXPECT_TRUE(src.grad().equal(g.index_select(1, idx) * 2));
  // (the kernel checks the indices and names the in-place op it runs)
  expect_error([&] { (void)x.detach().index_add(1, tensor({4}), zeros({3, 1})); },
               {"index_add", "index 4 is out of bounds for dimension 1 with size 4"});
  expect_error([&] { (void)x.detach().index_add(1, tensor({0}), zeros({3, 1}, kDouble)); },
               {"[index_add]", "must have the same scalar type"});
}

TEST(IndexAdd, Errors) {
  Tensor x = zeros({3, 4});
  expect_error([&] { x.index_add_(1, tensor({0}), zeros({3, 2})); },
               {"[index_add_]", "number of indices (1) should be equal to source.size(dim) (2), for dim 1"});
  expect_error([&] { x.index_add_(1, tensor({0}), zeros({2, 1})); },
               {"source and self must have the same size apart from dimension 1"});
  expect_error([&] { x.index_add_(1, tensor({0}), zeros({3, 1}, kDouble)); },
               {"self (float32) and source (float64) must have the same scalar type"});
  expect_error([&] { x.index_add_(1, tensor({4}), zeros({3, 1})); },
               {"[index_add_]", "index 4 is out of bounds for dimension 1 with size 4"});
  expect_error([&] { x.index_add_(1, tensor({{0}}), zeros({3, 1})); }, {"index is supposed to be a vector"});
  expect_error([&] { x.index_add_(1, tensor({0.f}), zeros({3, 1})); }, {"int32 or int64", "float32"});
  expect_error([&] { x.index_add_(0, tensor({0}), zeros({1})); }, {"same number of dimensions"});
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(12, 0.f));
}

// ---- nonzero / where / masked_select ----------------------------------------------------------

namespace {
/// Naive nonzero: coordinates in row-major order, as an (n, ndim) int64 tensor.
Tensor naive_nonzero(const Tensor& t) {
  Acc A(t);
  std::vector<int64_t> out;
  int64_t n = 0;
  for_each_coord(t.sizes(), [&](const std::vector<int64_t>& c) {
    if (A.at(c) != 0 || std::isnan(A.at(c))) {
      out.insert(out.end(), c.begin(), c.end());
      ++n;
    }
  });
  return tensor(out, {n, t.dim()}, kInt64);
}
void expect_nonzero(const Tensor& t) {
  Tensor got = t.nonzero();
  Tensor want = naive_nonzero(t);
  EXPECT_EQ(got.dtype(), kInt64);
  ASSERT_EQ(shape_of(got), shape_of(want));
  EXPECT_EQ(got.to_vector<int64_t>(), want.to_vector<int64_t>());
}
}  // namespace

TEST(Nonzero, AgainstNaiveLoops) {
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = rand_int({5, 7, 3}, 0, 3, 1).to(dt);  // about a third zeros
    expect_nonzero(x);
    expect_nonzero(x.transpose(0, 2));
    expect_nonzero(x.index({Slice(None, None, 2), Slice(), 1}));
    expect_nonzero(x.flatten());
    expect_nonzero(zeros({4, 0, 2}, dt));
    expect_nonzero(zeros({0}, dt));
    expect_nonzero(ones({3}, dt).expand({2, 3}));
  }
  // -0.0 is zero, NaN is not, in every float dtype.
  for (ScalarType dt : {kHalf, kBFloat16, kFloat, kDouble}) {
    Tensor f = tensor({0.0, -0.0, std::nan(""), 1e-3, -2.0}).to(dt);
    EXPECT_EQ(f.nonzero().to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 4})) << dtype_name(dt);
  }
  // 0-dim: (1, 0) or (0, 0).
  EXPECT_EQ(shape_of(scalar_tensor(3.0).nonzero()), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(shape_of(scalar_tensor(0.0).nonzero()), (std::vector<int64_t>{0, 0}));
  // Large inputs cross the per-thread chunks (more chunks with more threads).
  const int threads = get_num_threads();
  for (int nt : {1, 3, 8}) {
    set_num_threads(nt);
    for (auto shape : {std::vector<int64_t>{1000003}, std::vector<int64_t>{701, 1409}}) {
      Tensor big = rand_int(shape, 0, 2, 77 + nt).to(kFloat);
      expect_nonzero(big);
      if (shape.size() == 2) expect_nonzero(big.t());
    }
  }
  set_num_threads(threads);
}

TEST(Nonzero, WhereCondition) {
  Tensor c = tensor(std::vector<bool>{true, false, false, true, true, false}, {2, 3});
  std::vector<Tensor> w = where(c);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(w[1].to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1}));
  std::vector<Tensor> s = where(scalar_tensor(true));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].to_vector<int64_t>(), (std::vector<int64_t>{0}));
  std::vector<Tensor> f = where(tensor({0.5f, 0.f, 2.f}));
  EXPECT_EQ(f[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 2}));
  // The coordinates index the tensor back: x[where(c)] == x[c].
  Tensor x = iota({2, 3});
  EXPECT_EQ(x.index({w[0], w[1]}).to_vector<float>(), x.index({c}).to_vector<float>());
}

TEST(MaskedSelect, AgainstNaiveLoops) {
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota({4, 5}, dt);
    Tensor m = rand_int({4, 5}, 0, 2, 8).to(kBool);
    Acc X(x), M(m);
    std::vector<double> want;
    for_each_coord({4, 5}, [&](const std::vector<int64_t>& c) {
      if (M.at(c)) want.push_back(X.at(c));
    });
    Tensor r = x.masked_select(m);
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_EQ(r.to(kDouble).to_vector<double>(), want);
  }
  // Broadcast mask (a row mask over all rows), non-contiguous input.
  Tensor x = iota({3, 4}).t();  // (4, 3)
  Tensor m = tensor(std::vector<bool>{true, false, true});
  EXPECT_EQ(x.masked_select(m).to_vector<float>(), (std::vector<float>{0, 8, 1, 9, 2, 10, 3, 11}));
  // The input broadcasts too: (3,) against a (2, 3) mask.
  Tensor m2 = tensor(std::vector<bool>{true, false, true, false, true, true}, {2, 3});
  EXPECT_EQ(tensor({1.f, 2.f, 3.f}).masked_select(m2).to_vector<float>(), (std::vector<float>{1, 3, 2, 3}));
  // uint8 masks, 0-dim, zero-size.
  EXPECT_EQ(x.masked_select(m.to(kUInt8)).numel(), 8);
  EXPECT_EQ(shape_of(scalar_tensor(2.0).masked_select(scalar_tensor(true))), (std::vector<int64_t>{1}));
  EXPECT_EQ(shape_of(zeros({0, 3}).masked_select(m)), (std::vector<int64_t>{0}));

  expect_error([&] { x.masked_select(ones({3})); }, {"[masked_select]", "mask", "float32"});
  expect_error([&] { x.masked_select(ones({5}, kBool)); }, {"[masked_select]", "[4, 3]", "[5]"});
}
