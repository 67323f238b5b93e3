// Shape ops that allocate: cat/cat_out, stack, hstack/vstack/dstack, repeat,
// tile, flip, roll, tril/triu, pad, meshgrid. References are naive loops over
// logical coordinates, or values printed by PyTorch 1.13.
#include <functional>
#include <limits>

#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;

namespace {

const ScalarType kAllDtypes[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};

/// 0, 1, 2, ... in the given shape and dtype (bool alternates; values stay
/// below 200 so uint8 and the 16-bit floats hold them exactly).
Tensor iota(IntArrayRef shape, ScalarType dt = kFloat, int64_t start = 0) {
  Tensor t = (arange(multiply(shape), kInt64) + start).reshape(shape);
  if (dt == kBool) return t.remainder(2).to(kBool);
  return t.remainder(200).to(dt);
}

/// Row-major coordinates of a flat index.
std::vector<int64_t> unravel(int64_t i, IntArrayRef shape) {
  std::vector<int64_t> c(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

/// A tensor of `shape` whose element at c is f(c) (computed in double).
Tensor build(IntArrayRef shape, ScalarType dt, const std::function<double(const std::vector<int64_t>&)>& f) {
  std::vector<double> v(static_cast<size_t>(multiply(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = f(unravel(static_cast<int64_t>(i), shape));
  return tensor(v, shape, kDouble).to(dt);
}

/// Element reader for naive references: x.get({i, j}).
struct Reader {
  std::vector<double> v;
  std::vector<int64_t> sizes;
  explicit Reader(const Tensor& t) : v(t.to_vector<double>()), sizes(t.sizes().vec()) {}
  double get(const std::vector<int64_t>& c) const {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) off = off * sizes[d] + c[d];
    return v[static_cast<size_t>(off)];
  }
};

bool same(const Tensor& a, const Tensor& b) { return a.dtype() == b.dtype() && close(a, b, 0, 0); }

}  // namespace

// ---- cat ------------------------------------------------------------------------------------

TEST(Cat, EveryDimAndDtype) {
  for (ScalarType dt : kAllDtypes) {
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      SCOPED_TRACE(::testing::Message() << dt << " dim " << dim);
      Tensor a = iota({2, 3, 4}, dt), b = iota({2, 3, 4}, dt, 50);
      const int64_t d = dim < 0 ? dim + 3 : dim;
      DimVector bs{2, 3, 4};
      bs[d] = 1;
      Tensor c = iota(bs, dt, 100);
      Tensor r = cat({a, c, b}, dim);
      const int64_t n = a.size(d);  // a[d] then c (size 1) then b
      DimVector want{2, 3, 4};
      want[d] = 2 * n + 1;
      ASSERT_EQ(r.sizes(), IntArrayRef(want));
      EXPECT_EQ(r.dtype(), dt);
      // naive: pick the source by the coordinate along d
      Reader ra(a), rb(b), rc(c);
      Tensor ref = build(want, dt, [&](const std::vector<int64_t>& co) {
        std::vector<int64_t> x = co;
        if (x[d] < n) return ra.get(x);
        x[d] -= n;
        if (x[d] < 1) return rc.get(x);
        x[d] -= 1;
        return rb.get(x);
      });
      EXPECT_TRUE(same(r, ref));
    }
  }
}

TEST(Cat, ValuesFromTorch) {
  // torch.cat([torch.tensor([[1, 2], [3, 4]]), torch.tensor([[5, 6]])]) and dim=1 with [[7], [8]]
  Tensor a = tensor({{1, 2}, {3, 4}});
  EXPECT_TRUE(same(cat({a, tensor({{5, 6}})}), tensor({{1, 2}, {3, 4}, {5, 6}})));
  EXPECT_TRUE(same(cat({a, tensor({{7}, {8}})}, 1), tensor({{1, 2, 7}, {3, 4, 8}})));
  EXPECT_TRUE(same(cat({a}), a));
  EXPECT_FALSE(cat({a}).is_alias_of(a));  // always a new tensor
}

TEST(Cat, PromotionNonContiguousAndEmpty) {
  // dtype promotion across inputs (torch.cat does the same)
  EXPECT_EQ(cat({ones({2}, kInt64), ones({2}, kFloat)}).dtype(), kFloat);
  EXPECT_EQ(cat({ones({2}, kBool), ones({2}, kUInt8)}).dtype(), kUInt8);
  EXPECT_EQ(cat({ones({2}, kInt32), ones({2}, kHalf)}).dtype(), kHalf);
  EXPECT_EQ(cat({ones({2}, kBFloat16), ones({2}, kHalf)}).dtype(), kFloat);
  EXPECT_TRUE(same(cat({tensor({1, 2}), tensor({0.5, 1.5})}), tensor({1.0f, 2.0f, 0.5f, 1.5f})));
  EXPECT_TRUE(same(cat({tensor({true, false}), tensor({3, 4}, kInt32)}), tensor({1, 0, 3, 4}, kInt32)));
  // non-contiguous inputs
  Tensor t = iota({3, 2}).t();  // (2, 3)
  Tensor s = iota({2, 6}, kFloat, 10).slice(1, 0, 6, 2);
  EXPECT_TRUE(same(cat({t, s}, 1), tensor({{0.f, 2.f, 4.f, 10.f, 12.f, 14.f}, {1.f, 3.f, 5.f, 16.f, 18.f, 20.f}})));
  EXPECT_TRUE(same(cat({t, s}, 0), cat({t.contiguous(), s.contiguous()}, 0)));
  // zero-size along the cat dim, and legacy 1-D empties skipped whatever their dtype
  EXPECT_TRUE(same(cat({empty({2, 0}), t}, 1), t));
  Tensor r = cat({ones({2, 3}), empty({0}, kDouble), zeros({1, 3})});
  EXPECT_EQ(r.dtype(), kDouble);  // torch: the skipped tensor still takes part in promotion
  EXPECT_TRUE(same(r, tensor({{1., 1., 1.}, {1., 1., 1.}, {0., 0., 0.}}, kDouble)));
  EXPECT_EQ(cat({empty({0}), empty({0}, kInt64)}).sizes(), IntArrayRef({0}));
  EXPECT_EQ(cat({empty({0, 3}), empty({2, 3})}).sizes(), IntArrayRef({2, 3}));
  // legacy empties may come first: dim wraps against the first real tensor
  EXPECT_EQ(cat({empty({0}), ones({2, 3})}, -1).sizes(), IntArrayRef({2, 3}));
}

TEST(Cat, Errors) {
  expect_error([] { cat({}); }, {"[cat]", "non-empty list"});
  expect_error([] { cat({ones({2, 3}), ones({2, 4})}); },
               {"[cat]", "dimension 0", "Expected size 3 but got size 4 for tensor number 1", "[2, 3]", "[2, 4]"});
  expect_error([] { cat({ones({2, 3}), ones({2, 3}), ones({2})}); },
               {"[cat]", "same number of dimensions", "got 2", "and 1", "tensor number 2"});
  expect_error([] { cat({ones({}), ones({})}); }, {"[cat]", "zero-dimensional tensor (at position 0)"});
  expect_error([] { cat({ones({2, 3})}, 2); }, {"[cat]", "out of range"});
  expect_error([] { cat({ones({2, 3}), Tensor()}); }, {"[cat]", "tensor number 1", "undefined"});
}

TEST(Cat, Out) {
  Tensor a = iota({2, 2}), b = iota({1, 2}, kFloat, 4);
  Tensor out = empty({0});
  Tensor& r = cat_out(out, {a, b});
  EXPECT_TRUE(r.is_same(out));
  EXPECT_TRUE(same(out, tensor({{0.f, 1.f}, {2.f, 3.f}, {4.f, 5.f}})));
  // an out of a wider type receives the converted values
  Tensor dout = empty({3, 2}, kDouble);
  cat_out(dout, {a, b});
  EXPECT_TRUE(same(dout, tensor({{0., 1.}, {2., 3.}, {4., 5.}}, kDouble)));
  // a non-contiguous out of the right shape is written in place
  Tensor base = zeros({2, 3});
  Tensor tout = base.t();
  cat_out(tout, {a, b});
  EXPECT_TRUE(same(base, tensor({{0.f, 2.f, 4.f}, {1.f, 3.f, 5.f}})));
  Tensor wrong = empty({2, 2});
  expect_error([&] { cat_out(wrong, {a, b}); }, {"[cat_out]", "shape [3, 2]", "[2, 2]"});
  Tensor iout = empty({3, 2}, kInt64);
  expect_error([&] { cat_out(iout, {a, b}); }, {"[cat_out]", "can't be cast", "int64"});
  // inputs may share storage with out, but not memory locations
  Tensor big = zeros({4, 2});
  Tensor view = big.narrow(0, 0, 3);
  big.narrow(0, 3, 1).fill_(7);
  cat_out(view, {big.narrow(0, 3, 1), a});
  EXPECT_TRUE(same(big, tensor({{7.f, 7.f}, {0.f, 1.f}, {2.f, 3.f}, {7.f, 7.f}})));
  expect_error([&] { cat_out(view, {a, big.narrow(0, 2, 1)}); }, {"[cat_out]", "tensor number 1"});
}

// ---- stack / hstack / vstack / dstack ---------------------------------------------------------

TEST(Stack, Dims) {
  for (ScalarType dt : {kFloat, kInt64, kBool, kBFloat16}) {
    Tensor a = iota({2, 3}, dt), b = iota({2, 3}, dt, 7);
    Reader ra(a), rb(b);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      SCOPED_TRACE(::testing::Message() << dt << " dim " << dim);
      const int64_t d = dim < 0 ? dim + 3 : dim;
      Tensor r = stack({a, b}, dim);
      DimVector want{2, 3};
      want.insert(d, 2);
      ASSERT_EQ(r.sizes(), IntArrayRef(want));
      Tensor ref = build(want, dt, [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> x = c;
        const int64_t which = x[d];
        x.erase(x.begin() + d);
        return which == 0 ? ra.get(x) : rb.get(x);
      });
      EXPECT_TRUE(same(r, ref));
    }
  }
  // stacking 0-d tensors and empty ones
  EXPECT_TRUE(same(stack({scalar_tensor(1), scalar_tensor(2)}), tensor({1, 2})));
  EXPECT_EQ(stack({empty({0}), empty({0})}, 1).sizes(), IntArrayRef({0, 2}));
  expect_error([] { stack({ones({2, 3}), ones({2, 4})}); },
               {"[stack]", "equal size", "[2, 3] at entry 0 and [2, 4] at entry 1"});
  expect_error([] { stack({}); }, {"[stack]", "non-empty"});
  expect_error([] { stack({ones({2})}, 2); }, {"[stack]", "out of range"});
}

TEST(Stack, HstackVstackDstackMatchTorch) {
  Tensor v1 = tensor({1, 2, 3}), v2 = tensor({4, 5, 6});
  Tensor m1 = tensor({{1}, {2}}), m2 = tensor({{3}, {4}});
  // torch.hstack((a, b)) for 1-D: tensor([1, 2, 3, 4, 5, 6]); for (2, 1): [[1, 3], [2, 4]]
  EXPECT_TRUE(same(hstack({v1, v2}), tensor({1, 2, 3, 4, 5, 6})));
  EXPECT_TRUE(same(hstack({m1, m2}), tensor({{1, 3}, {2, 4}})));
  EXPECT_TRUE(same(hstack({scalar_tensor(1), tensor({2, 3})}), tensor({1, 2, 3})));
  // torch.vstack((a, b)) for 1-D: [[1, 2, 3], [4, 5, 6]]; for (2, 1): [[1], [2], [3], [4]]
  EXPECT_TRUE(same(vstack({v1, v2}), tensor({{1, 2, 3}, {4, 5, 6}})));
  EXPECT_TRUE(same(vstack({m1, m2}), tensor({{1}, {2}, {3}, {4}})));
  EXPECT_TRUE(same(vstack({scalar_tensor(1), scalar_tensor(2)}), tensor({{1}, {2}})));
  // torch.dstack((a, b)) for 1-D: shape (1, 3, 2) [[[1, 4], [2, 5], [3, 6]]]; for (2, 1): (2, 1, 2)
  Tensor d1 = dstack({v1, v2});
  ASSERT_EQ(d1.sizes(), IntArrayRef({1, 3, 2}));
  EXPECT_TRUE(same(d1.reshape({3, 2}), tensor({{1, 4}, {2, 5}, {3, 6}})));
  Tensor d2 = dstack({m1, m2});
  ASSERT_EQ(d2.sizes(), IntArrayRef({2, 1, 2}));
  EXPECT_TRUE(same(d2.reshape({2, 2}), tensor({{1, 3}, {2, 4}})));
  EXPECT_EQ(dstack({scalar_tensor(1.0), scalar_tensor(2.0)}).sizes(), IntArrayRef({1, 1, 2}));
  // promotion passes through
  EXPECT_EQ(vstack({v1, tensor({0.5, 1.5, 2.5})}).dtype(), kFloat);
  expect_error([] { hstack({}); }, {"[hstack]", "non-empty"});
  expect_error([] { vstack({tensor({1, 2}), tensor({1, 2, 3})}); }, {"[cat]", "Expected size 2 but got size 3"});
}

// ---- repeat / tile ------------------------------------------------------------------------------

TEST(Repeat, AgainstNaive) {
  for (ScalarType dt : {kFloat, kInt64, kBool, kHalf, kUInt8}) {
    Tensor x = iota({2, 3}, dt);
    Reader rx(x);
    for (auto reps : {std::vector<int64_t>{1, 1}, {2, 3}, {3, 1}, {1, 4}, {2, 1, 2}, {2, 2, 1, 1}, {0, 2}}) {
      SCOPED_TRACE(::testing::Message() << dt << " repeats " << IntArrayRef(reps));
      Tensor r = x.repeat(reps);
      const size_t lead = reps.size() - 2;
      DimVector want;
      for (size_t i = 0; i < reps.size(); ++i) want.push_back(reps[i] * (i < lead ? 1 : x.size(i - lead)));
      ASSERT_EQ(r.sizes(), IntArrayRef(want));
      if (r.numel() == 0) continue;
      Tensor ref = build(want, dt, [&](const std::vector<int64_t>& c) {
        return rx.get({c[lead] % 2, c[lead + 1] % 3});
      });
      EXPECT_TRUE(same(r, ref));
    }
  }
  // torch.tensor([1, 2]).repeat(2, 2) = [[1, 2, 1, 2], [1, 2, 1, 2]]
  EXPECT_TRUE(same(tensor({1, 2}).repeat({2, 2}), tensor({{1, 2, 1, 2}, {1, 2, 1, 2}})));
  // non-contiguous source, 0-d source
  Tensor t = iota({3, 2}).t();  // [[0, 2, 4], [1, 3, 5]]
  EXPECT_TRUE(same(t.repeat({1, 2}), tensor({{0.f, 2.f, 4.f, 0.f, 2.f, 4.f}, {1.f, 3.f, 5.f, 1.f, 3.f, 5.f}})));
  EXPECT_TRUE(same(scalar_tensor(7).repeat({3}), tensor({7, 7, 7})));
  EXPECT_FALSE(t.repeat({1, 1}).is_alias_of(t));
  expect_error([] { ones({2, 3}).repeat({2}); }, {"[repeat]", "can not be smaller", "(1)", "(2)"});
  expect_error([] { ones({2}).repeat({-1}); }, {"[repeat]", "negative dimension -1"});
}

TEST(Repeat, Tile) {
  Tensor x = tensor({{1, 2}, {3, 4}});
  // torch.tile(x, (2,)) pads reps with ones in front: same as repeat(1, 2)
  EXPECT_TRUE(same(x.tile({2}), tensor({{1, 2, 1, 2}, {3, 4, 3, 4}})));
  EXPECT_TRUE(same(x.tile({2, 1}), tensor({{1, 2}, {3, 4}, {1, 2}, {3, 4}})));
  EXPECT_EQ(x.tile({2, 1, 1}).sizes(), IntArrayRef({2, 2, 2}));
  EXPECT_TRUE(same(x.tile({}), x));
  EXPECT_TRUE(same(tensor({1, 2}).tile({2}), tensor({1, 2, 1, 2})));
}

// ---- flip / roll ----------------------------------------------------------------------------------

TEST(Flip, AgainstNaive) {
  for (ScalarType dt : kAllDtypes) {
    Tensor x = iota({2, 3, 4}, dt);
    Reader rx(x);
    for (auto dims : {std::vector<int64_t>{0}, {1}, {2}, {-1}, {0, 2}, {0, 1, 2}, {}}) {
      SCOPED_TRACE(::testing::Message() << dt << " dims " << IntArrayRef(dims));
      Tensor r = flip(x, dims);
      std::vector<bool> f(3, false);
      for (int64_t d : dims) f[d < 0 ? d + 3 : d] = true;
      Tensor ref = build({2, 3, 4}, dt, [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> s = c;
        for (int d = 0; d < 3; ++d)
          if (f[d]) s[d] = x.size(d) - 1 - c[d];
        return rx.get(s);
      });
      EXPECT_TRUE(same(r, ref));
      EXPECT_TRUE(same(x.flip(dims), ref));
    }
  }
  // torch.flip(torch.tensor([[1, 2], [3, 4]]), [1]) = [[2, 1], [4, 3]]
  EXPECT_TRUE(same(flip(tensor({{1, 2}, {3, 4}}), {1}), tensor({{2, 1}, {4, 3}})));
  // non-contiguous input, big input (threaded copy), 0-d and empty inputs
  Tensor t = iota({3, 2}).t();  // [[0, 2, 4], [1, 3, 5]]
  EXPECT_TRUE(same(flip(t, {1}), tensor({{4.f, 2.f, 0.f}, {5.f, 3.f, 1.f}})));
  Tensor big = arange(400 * 300, kInt64).reshape({400, 300});
  Tensor fb = flip(big, {0, 1});
  EXPECT_TRUE(same(fb.flatten(), arange(400 * 300 - 1, -1, -1, kInt64)));
  EXPECT_TRUE(same(flip(scalar_tensor(3), {0}), scalar_tensor(3)));
  EXPECT_EQ(flip(empty({0, 3}), {0}).sizes(), IntArrayRef({0, 3}));
  expect_error([] { flip(ones({2, 3}), {0, 0}); }, {"[flip]", "dim 0 appears multiple times"});
  expect_error([] { flip(ones({2, 3}), {0, -2}); }, {"[flip]", "dim 0 appears multiple times"});
  expect_error([] { flip(ones({2, 3}), {2}); }, {"[flip]", "out of range"});
}

TEST(Roll, AgainstNaive) {
  for (ScalarType dt : {kFloat, kInt64, kBool, kBFloat16}) {
    Tensor x = iota({3, 4, 5}, dt);
    Reader rx(x);
    struct R {
      std::vector<int64_t> shifts, dims;
    };
    for (const R& rc : {R{{1}, {0}}, R{{-2}, {2}}, R{{7}, {1}}, R{{1, 2}, {0, 2}}, R{{2, -1, 3}, {0, 1, 2}},
                        R{{4}, {1}}, R{{1, 1}, {1, 1}}, R{{0}, {0}}}) {
      SCOPED_TRACE(::testing::Message() << dt << " shifts " << IntArrayRef(rc.shifts) << " dims "
                                        << IntArrayRef(rc.dims));
      Tensor r = roll(x, rc.shifts, rc.dims);
      Tensor ref = build({3, 4, 5}, dt, [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> s = c;
        for (size_t i = 0; i < rc.dims.size(); ++i) {
          const int64_t d = rc.dims[i], n = x.size(d);
          s[d] = (((s[d] - rc.shifts[i]) % n) + n) % n;
        }
        return rx.get(s);
      });
      EXPECT_TRUE(same(r, ref));
      EXPECT_TRUE(same(x.roll(rc.shifts, rc.dims), ref));
    }
  }
  // torch.roll(torch.arange(1, 9).view(4, 2), 1) = [[8, 1], [2, 3], [4, 5], [6, 7]] (flattened roll)
  Tensor y = arange(1, 9).view({4, 2});
  EXPECT_TRUE(same(roll(y, {1}), tensor({{8, 1}, {2, 3}, {4, 5}, {6, 7}})));
  // torch.roll(y, -1, 0) = [[3, 4], [5, 6], [7, 8], [1, 2]]
  EXPECT_TRUE(same(roll(y, {-1}, {0}), tensor({{3, 4}, {5, 6}, {7, 8}, {1, 2}})));
  // non-contiguous input, empty input
  Tensor t = iota({3, 2}).t();  // [[0, 2, 4], [1, 3, 5]]
  EXPECT_TRUE(same(roll(t, {1}, {1}), tensor({{4.f, 0.f, 2.f}, {5.f, 1.f, 3.f}})));
  EXPECT_EQ(roll(empty({0, 3}), {1}, {0}).sizes(), IntArrayRef({0, 3}));
  expect_error([] { roll(ones({3}), {1, 2}, {0}); }, {"[roll]", "shifts and dimensions must align", "shifts: 2", "dims: 1"});
  expect_error([] { roll(ones({3}), {1, 2}); }, {"[roll]", "shifts: 2"});
  expect_error([] { roll(ones({3}), {1}, {1}); }, {"[roll]", "out of range"});
}

// ---- tril / triu ----------------------------------------------------------------------------------

TEST(Triangle, BatchedAgainstNaive) {
  for (ScalarType dt : kAllDtypes) {
    for (auto shape : {std::vector<int64_t>{3, 4}, {4, 3}, {2, 3, 4}, {2, 1, 3, 3}, {0, 3}, {2, 0, 3}}) {
      Tensor x = iota(shape, dt, 1);
      Reader rx(x);
      for (int64_t k : {0, 1, -1, 2, -2, 10, -10}) {
        SCOPED_TRACE(::testing::Message() << dt << " " << IntArrayRef(shape) << " diagonal " << k);
        auto keep = [&](bool lower, const std::vector<int64_t>& c) {
          const int64_t i = c[c.size() - 2], j = c[c.size() - 1];
          return lower ? j - i <= k : j - i >= k;
        };
        Tensor lo = build(shape, dt, [&](const std::vector<int64_t>& c) { return keep(true, c) ? rx.get(c) : 0.0; });
        Tensor up = build(shape, dt, [&](const std::vector<int64_t>& c) { return keep(false, c) ? rx.get(c) : 0.0; });
        EXPECT_TRUE(same(tril(x, k), lo));
        EXPECT_TRUE(same(triu(x, k), up));
        EXPECT_TRUE(same(x.tril(k), lo));
        EXPECT_TRUE(same(x.triu(k), up));
        Tensor c1 = x.clone(), c2 = x.clone();
        Tensor& r1 = c1.tril_(k);
        EXPECT_TRUE(r1.is_same(c1));
        EXPECT_TRUE(same(c1, lo));
        c2.triu_(k);
        EXPECT_TRUE(same(c2, up));
      }
    }
  }
  // torch.tril(torch.ones(3, 3), -1) and torch.triu(torch.ones(2, 3), 1)
  EXPECT_TRUE(same(tril(ones({3, 3}), -1), tensor({{0.f, 0.f, 0.f}, {1.f, 0.f, 0.f}, {1.f, 1.f, 0.f}})));
  EXPECT_TRUE(same(triu(ones({2, 3}), 1), tensor({{0.f, 1.f, 1.f}, {0.f, 0.f, 1.f}})));
  // non-contiguous input, and in place on a view writes through to its base
  Tensor t = iota({3, 3}).t();
  EXPECT_TRUE(same(tril(t), tensor({{0.f, 0.f, 0.f}, {1.f, 4.f, 0.f}, {2.f, 5.f, 8.f}})));
  Tensor base = ones({2, 4});
  Tensor v = base.narrow(1, 1, 2);
  v.triu_();
  EXPECT_TRUE(same(base, tensor({{1.f, 1.f, 1.f, 1.f}, {1.f, 0.f, 1.f, 1.f}})));
  // NaN outside the band becomes 0 (tril is a select, not a multiply)
  Tensor nan = full({2, 2}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(tril(nan)[0][1].item<double>(), 0.0);
  expect_error([] { tril(ones({3})); }, {"[tril]", "at least 2 dimensions", "[3]"});
  expect_error([] { ones({3}).triu_(); }, {"[triu_]", "at least 2 dimensions"});
  // In place on an expanded tensor (torch allows it): zeros outside the band,
  // so a location is zeroed when any element aliasing it is outside.
  // b = torch.tensor([1., 2., 3.]); b.expand(3, 3).tril_(): b = [1, 0, 0]
  Tensor row = tensor<float>({1, 2, 3});
  row.expand({3, 3}).tril_();
  EXPECT_TRUE(same(row, tensor<float>({1, 0, 0})));
}

// ---- pad ----------------------------------------------------------------------------------------------

TEST(Pad, ConstantAgainstNaive) {
  for (ScalarType dt : {kFloat, kInt64, kHalf, kBool, kDouble}) {
    Tensor x = iota({2, 3, 4}, dt, 1);
    Reader rx(x);
    for (auto p : {std::vector<int64_t>{1, 2}, {0, 0}, {-1, 1}, {1, 1, 2, 0}, {-1, -2, 1, -1}, {1, 0, 0, 1, 2, 1},
                   {-4, 0}, {0, -3, 0, 0}}) {
      SCOPED_TRACE(::testing::Message() << dt << " pad " << IntArrayRef(p));
      const double value = dt == kBool ? 1 : 9;
      Tensor r = pad(x, p, value);
      DimVector want{2, 3, 4};
      for (size_t i = 0; i < p.size() / 2; ++i) want[2 - i] += p[2 * i] + p[2 * i + 1];
      ASSERT_EQ(r.sizes(), IntArrayRef(want));
      Tensor ref = build(want, dt, [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> s = c;
        for (size_t i = 0; i < p.size() / 2; ++i) {
          const int64_t d = 2 - static_cast<int64_t>(i);
          s[d] = c[d] - p[2 * i];
          if (s[d] < 0 || s[d] >= x.size(d)) return value;
        }
        return rx.get(s);
      });
      EXPECT_TRUE(same(r, ref));
    }
  }
  // torch.nn.functional.pad(torch.tensor([[1., 2.], [3., 4.]]), (1, 0, 0, 1), value=-1)
  EXPECT_TRUE(same(pad(tensor({{1.f, 2.f}, {3.f, 4.f}}), {1, 0, 0, 1}, -1),
                   tensor({{-1.f, 1.f, 2.f}, {-1.f, 3.f, 4.f}, {-1.f, -1.f, -1.f}})));
  // non-contiguous input; a float value into an int tensor is converted
  Tensor t = iota({3, 2}).t();  // [[0, 2, 4], [1, 3, 5]]
  EXPECT_TRUE(same(pad(t, {0, 1}), tensor({{0.f, 2.f, 4.f, 0.f}, {1.f, 3.f, 5.f, 0.f}})));
  EXPECT_TRUE(same(pad(tensor({1, 2}), {1, 1}, 2.5), tensor({2, 1, 2, 2})));
  EXPECT_EQ(pad(ones({2, 3}), {-3, 0}).sizes(), IntArrayRef({2, 0}));
  expect_error([] { pad(ones({3, 3}), {1}); }, {"[pad]", "divisible by 2"});
  expect_error([] { pad(ones({3}), {1, 1, 1, 1}); }, {"[pad]", "too large"});
  expect_error([] { pad(ones({3, 3}), {-2, -2}); }, {"[pad]", "input size 3", "dimension 1", "-2 and -2", "-1"});
}

// ---- meshgrid -------------------------------------------------------------------------------------------

TEST(Meshgrid, IjAndXyMatchTorch) {
  Tensor x = tensor({1, 2, 3}), y = tensor({4, 5});
  // torch.meshgrid(x, y, indexing="ij"): shapes (3, 2)
  auto ij = meshgrid({x, y}, "ij");
  ASSERT_EQ(ij.size(), 2u);
  EXPECT_TRUE(same(ij[0], tensor({{1, 1}, {2, 2}, {3, 3}})));
  EXPECT_TRUE(same(ij[1], tensor({{4, 5}, {4, 5}, {4, 5}})));
  EXPECT_EQ(ij[0].data_ptr(), x.data_ptr());  // views, as in PyTorch
  // indexing="xy": shapes (2, 3)
  auto xy = meshgrid({x, y}, "xy");
  EXPECT_TRUE(same(xy[0], tensor({{1, 2, 3}, {1, 2, 3}})));
  EXPECT_TRUE(same(xy[1], tensor({{4, 4, 4}, {5, 5, 5}})));
  // default is "ij"; three inputs with "xy" swap only the first two dims
  EXPECT_TRUE(same(meshgrid({x, y})[0], ij[0]));
  Tensor z = tensor({6.0, 7.0, 8.0, 9.0}).to(kInt64);
  auto g3 = meshgrid({x, y, z}, "xy");
  for (auto& g : g3) EXPECT_EQ(g.sizes(), IntArrayRef({2, 3, 4}));
  Reader r0(g3[0]), r1(g3[1]), r2(g3[2]);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) {
        EXPECT_EQ(r0.get({i, j, k}), 1 + j);
        EXPECT_EQ(r1.get({i, j, k}), 4 + i);
        EXPECT_EQ(r2.get({i, j, k}), 6 + k);
      }
  // 0-d inputs count as size 1; a single input comes back 1-D
  auto g0 = meshgrid({scalar_tensor(5), y});
  EXPECT_EQ(g0[0].sizes(), IntArrayRef({1, 2}));
  EXPECT_EQ(meshgrid({x}, "xy")[0].sizes(), IntArrayRef({3}));
  expect_error([] { meshgrid({ones({2, 2})}); }, {"[meshgrid]", "0D or 1D", "[2, 2]"});
  expect_error([] { meshgrid({ones({2}), ones({2}, kInt64)}); }, {"[meshgrid]", "same dtype"});
  expect_error([] { meshgrid({ones({2})}, "ji"); }, {"[meshgrid]", "\"xy\" or \"ij\"", "ji"});
  expect_error([] { meshgrid({}); }, {"[meshgrid]", "non-empty"});
}
