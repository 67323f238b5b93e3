// bitwise_left_shift / bitwise_right_shift, nan_to_num, median / nanmedian and
// index_put_ with accumulate: values from PyTorch (literals say which torch
// gave them), naive references, dtype coverage, broadcasting, non-contiguous
// and empty inputs, errors and gradcheck.
#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;

namespace {

/// Random int64 tensor with values in [lo, hi).
Tensor rand_int(IntArrayRef shape, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi - 1);
  std::vector<int64_t> v(static_cast<size_t>(multiply(shape)));
  for (auto& x : v) x = u(g);
  return tensor(v, shape, kInt64);
}

/// A random permutation of 0..n-1 as doubles, reshaped: distinct values.
Tensor distinct(IntArrayRef shape, uint32_t seed, ScalarType dt = kDouble) {
  std::vector<int64_t> v(static_cast<size_t>(multiply(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return tensor(v, shape, kInt64).to(dt);
}

// ==== bitwise_left_shift / bitwise_right_shift =======================================

/// PyTorch 2's shift of one element of a `bits`-wide type (as int64).
int64_t ref_shift(int64_t x, int64_t s, ScalarType dt, bool left) {
  const int bits = dt == kUInt8 ? 8 : dt == kInt32 ? 32 : 64;
  const bool is_unsigned = dt == kUInt8;
  if (s < 0 || s >= bits) return left ? 0 : (!is_unsigned && x < 0 ? -1 : 0);
  if (left) {
    const uint64_t r = static_cast<uint64_t>(x) << s;
    if (dt == kUInt8) return static_cast<int64_t>(r & 0xff);
    if (dt == kInt32) return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(r)));
    return static_cast<int64_t>(r);
  }
  return x >> s;  // arithmetic for negative x; x is in range of its dtype
}

TEST(Shift, ValuesFromTorch215) {
  // torch 2.15: a = [1, -1, 5, 100, -128, 127] (int64), shifts past the width.
  Tensor a = tensor<int64_t>({1, -1, 5, 100, -128, 127});
  auto left = [&](int64_t s) { return (a << s).to_vector<int64_t>(); };
  auto right = [&](int64_t s) { return (a >> s).to_vector<int64_t>(); };
  EXPECT_EQ(left(3), (std::vector<int64_t>{8, -8, 40, 800, -1024, 1016}));
  EXPECT_EQ(right(3), (std::vector<int64_t>{0, -1, 0, 12, -16, 15}));
  EXPECT_EQ(left(63), (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min(),
                                           std::numeric_limits<int64_t>::min(), 0, 0,
                                           std::numeric_limits<int64_t>::min()}));
  // Counts >= 64 or < 0: everything shifted out (torch 1.13 masked the count instead).
  for (int64_t s : {64, 65, 100, -1, -3}) {
    EXPECT_EQ(left(s), (std::vector<int64_t>(6, 0))) << s;
    EXPECT_EQ(right(s), (std::vector<int64_t>{0, -1, 0, 0, -1, 0})) << s;
  }
  // int32: 1 << 31 wraps to the minimum; 32 shifts everything out.
  Tensor b = a.to(kInt32);
  EXPECT_EQ((b << 31).to_vector<int64_t>(),
            (std::vector<int64_t>{-2147483648LL, -2147483648LL, -2147483648LL, 0, 0, -2147483648LL}));
  EXPECT_EQ((b << 32).to_vector<int64_t>(), (std::vector<int64_t>(6, 0)));
  EXPECT_EQ((b >> 40).to_vector<int64_t>(), (std::vector<int64_t>{0, -1, 0, 0, -1, 0}));
  // uint8 (torch 2.15): [1, 255, 5, 100, 128, 127]
  Tensor c = tensor<int64_t>({1, 255, 5, 100, 128, 127}).to(kUInt8);
  EXPECT_EQ((c << 3).to_vector<int64_t>(), (std::vector<int64_t>{8, 248, 40, 32, 0, 248}));
  EXPECT_EQ((c >> 7).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0, 0, 1, 0}));
  EXPECT_EQ((c << 8).to_vector<int64_t>(), (std::vector<int64_t>(6, 0)));
  EXPECT_EQ((c >> 8).to_vector<int64_t>(), (std::vector<int64_t>(6, 0)));
}

TEST(Shift, AgainstReferenceEveryIntegerDtype) {
  for (ScalarType dt : {kUInt8, kInt32, kInt64}) {
    const int64_t lo = dt == kUInt8 ? 0 : -300, hi = dt == kUInt8 ? 256 : 300;
    Tensor x = rand_int({7, 11}, lo, hi, 1).to(dt);
    Tensor s = rand_int({7, 11}, dt == kUInt8 ? 0 : -4, 70, 2).to(dt);
    for (bool left : {true, false}) {
      Tensor r = left ? bitwise_left_shift(x, s) : bitwise_right_shift(x, s);
      ASSERT_EQ(r.dtype(), dt);
      auto xv = x.to_vector<int64_t>(), sv = s.to_vector<int64_t>(), rv = r.to_vector<int64_t>();
      for (size_t i = 0; i < xv.size(); ++i)
        ASSERT_EQ(rv[i], ref_shift(xv[i], sv[i], dt, left)) << dt << " " << xv[i] << (left ? " << " : " >> ") << sv[i];
    }
  }
}

TEST(Shift, PromotionAndScalars) {
  // torch 2.15: uint8 << int32 -> int32; a scalar does not widen the tensor.
  Tensor a = tensor<int64_t>({1, 2, 3}).to(kUInt8);
  Tensor b = tensor<int64_t>({1, 2, 3}).to(kInt32);
  Tensor r = a << b;
  EXPECT_EQ(r.dtype(), kInt32);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{2, 8, 24}));
  EXPECT_EQ((a << 1).dtype(), kUInt8);
  // The scalar is converted to the tensor's dtype first: 300 -> 44 in uint8
  // (all shifted out), 2**40 -> 0 in int32 (no shift).
  EXPECT_EQ((a << int64_t(300)).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ((b << (int64_t(1) << 40)).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  // int64 << 0-dim uint8: int64.
  Tensor c = tensor<int64_t>({1, 2, 3});
  EXPECT_EQ(c.bitwise_left_shift(scalar_tensor(1, kUInt8)).dtype(), kInt64);
  // bool with an int scalar promotes to int64 (torch: tensor([2, 0])).
  Tensor t = tensor<bool>({true, false});
  EXPECT_EQ((t << 1).dtype(), kInt64);
  EXPECT_EQ((t << 1).to_vector<int64_t>(), (std::vector<int64_t>{2, 0}));
  // A scalar shifted by tensor counts (torch.bitwise_left_shift(2, c)).
  EXPECT_EQ(bitwise_left_shift(2, c).to_vector<int64_t>(), (std::vector<int64_t>{4, 8, 16}));
  EXPECT_EQ(bitwise_right_shift(64, b).dtype(), kInt32);
  EXPECT_EQ(bitwise_right_shift(64, b).to_vector<int64_t>(), (std::vector<int64_t>{32, 16, 8}));
}

TEST(Shift, BroadcastNonContiguousEmptyOut) {
  // torch: tensor([1, 2]) << tensor([[1], [2]]) == [[2, 4], [4, 8]]
  Tensor r = tensor<int64_t>({1, 2}) << tensor<int64_t>({{1}, {2}});
  EXPECT_TRUE(r.equal(tensor<int64_t>({{2, 4}, {4, 8}})));
  Tensor x = rand_int({5, 6}, -1000, 1000, 3);
  Tensor s = rand_int({6, 5}, 0, 12, 4).t();
  ASSERT_FALSE(s.is_contiguous());
  EXPECT_TRUE((x.t() >> s.t()).equal(x.t().contiguous() >> s.t().contiguous()));
  EXPECT_TRUE((x << s).equal(x << s.contiguous()));
  EXPECT_EQ((empty({0, 3}, kInt32) << 2).sizes(), IntArrayRef({0, 3}));
  Tensor out = empty({0}, kInt64);
  bitwise_right_shift_out(out, tensor<int64_t>({-16, 16}), tensor<int64_t>({2, 3}));
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{-4, 2}));
}

TEST(Shift, InPlaceAndOperators) {
  Tensor x = tensor<int64_t>({1, 2});
  x <<= 2;  // torch: tensor([4, 8])
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{4, 8}));
  Tensor y = tensor<int64_t>({-8, 8});
  y >>= 2;  // torch: tensor([-2, 2])
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{-2, 2}));
  y <<= tensor<int64_t>({1, 2});
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{-4, 8}));
  y >>= tensor<int64_t>({2, 1});
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{-1, 4}));
  // In place on uint8 with int64 counts: computed in int64, cast back (torch: [4, 0, 0]).
  Tensor u = tensor<int64_t>({1, 2, 3}).to(kUInt8);
  const uint32_t v0 = u._version();
  u.bitwise_left_shift_(tensor<int64_t>({2, 8, 24}));
  EXPECT_EQ(u.to_vector<int64_t>(), (std::vector<int64_t>{4, 0, 0}));
  EXPECT_GT(u._version(), v0);
  Tensor w = tensor<int64_t>({12, 5});
  w.bitwise_right_shift_(2);
  EXPECT_EQ(w.to_vector<int64_t>(), (std::vector<int64_t>{3, 1}));
  // The &=, |=, ^= operators libtorch also has.
  Tensor m = tensor<int64_t>({12, 10});
  m &= 6;
  m |= tensor<int64_t>({1, 1});
  m ^= 3;
  EXPECT_EQ(m.to_vector<int64_t>(), (std::vector<int64_t>{6, 0}));
  // Printing still goes through the stream operator.
  std::ostringstream os;
  os << tensor<int64_t>({1});
  EXPECT_EQ(os.str().substr(0, 6), "tensor");
}

TEST(Shift, Errors) {
  // torch: "lshift_cpu" not implemented for 'Float' / 'Bool'.
  expect_error([] { (void)(ones({2}) << 1); }, {"[bitwise_left_shift]", "float32"});
  expect_error([] { (void)(ones({2}, kHalf) >> 1); }, {"[bitwise_right_shift]", "float16"});
  expect_error([] { (void)(tensor<bool>({true}) << tensor<bool>({true})); }, {"[bitwise_left_shift]", "bool"});
  expect_error([] { (void)(tensor<int64_t>({1}) << 1.5); }, {"[bitwise_left_shift]", "float"});
  expect_error([] { (void)(tensor<int64_t>({1}) << ones({1}, kDouble)); }, {"[bitwise_left_shift]", "float64"});
  expect_error([] { ones({2}).bitwise_left_shift_(1); }, {"[bitwise_left_shift_]"});
  expect_error([] { tensor<int64_t>({1, 2}).bitwise_left_shift_(1.5); }, {"[bitwise_left_shift_]"});
  expect_error([] { (void)(tensor<int64_t>({1, 2}) >> tensor<int64_t>({1, 2, 3})); },
               {"[bitwise_right_shift]", "broadcast"});
}

// ==== nan_to_num ==============================================================================

TEST(NanToNum, DefaultsEveryFloatDtype) {
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    Tensor x = tensor<double>({NAN, INFINITY, -INFINITY, 1.5}).to(dt);
    Tensor r = x.nan_to_num();
    ASSERT_EQ(r.dtype(), dt);
    const double hi = BRISK_DISPATCH_FLOAT(dt, "test", [] { return double(std::numeric_limits<scalar_t>::max()); });
    // torch 2.15: float32 [0, 3.4028e+38, -3.4028e+38, 1.5]; float16 +-65504;
    // bfloat16 +-3.3895e+38; float64 +-1.7977e+308.
    EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{0.0, hi, -hi, 1.5})) << dt;
    EXPECT_FALSE(r.is_alias_of(x));
    EXPECT_TRUE(std::isnan(x.to_vector<double>()[0]));  // input untouched
  }
  EXPECT_EQ(tensor<float>({3.4028234663852886e38f}).nan_to_num().item<float>(), std::numeric_limits<float>::max());
}

TEST(NanToNum, GivenValuesConvertToTheDtype) {
  Tensor x = tensor<double>({NAN, INFINITY, -INFINITY, 1.5});
  EXPECT_EQ(x.to(kFloat).nan_to_num(1.0, 2.0, -3.0).to_vector<double>(), (std::vector<double>{1, 2, -3, 1.5}));
  // torch 2.15: float16 posinf=1e10 -> inf; bfloat16 -> 9.9992e+09; float32 -> 1e10.
  std::vector<double> h = x.to(kHalf).nan_to_num(std::nullopt, 1e10).to_vector<double>();
  EXPECT_EQ(h[0], 0.0);
  EXPECT_EQ(h[1], INFINITY);
  EXPECT_EQ(h[2], -65504.0);
  EXPECT_EQ(x.to(kBFloat16).nan_to_num(std::nullopt, 1e10).to_vector<double>()[1], double(BFloat16(1e10f)));
  EXPECT_EQ(x.to(kFloat).nan_to_num(std::nullopt, 1e10).to_vector<double>()[1], double(1e10f));
  // nan=inf and posinf=nan are taken as given (torch: [inf, 3.4028e38, ...] and [0, nan, ...]).
  std::vector<double> a = x.to(kFloat).nan_to_num(INFINITY).to_vector<double>();
  EXPECT_EQ(a[0], INFINITY);
  EXPECT_EQ(a[1], double(std::numeric_limits<float>::max()));
  EXPECT_TRUE(std::isnan(x.nan_to_num(std::nullopt, NAN).to_vector<double>()[1]));
  // A posinf below some finite values leaves those values alone.
  Tensor y = tensor<double>({NAN, INFINITY, -INFINITY, 1e5, -1e5});
  EXPECT_EQ(y.nan_to_num(-1.0, 10.0, -10.0).to_vector<double>(), (std::vector<double>{-1, 10, -10, 1e5, -1e5}));
}

TEST(NanToNum, IntegersPassThroughAndInPlace) {
  for (ScalarType dt : {kInt64, kInt32, kUInt8, kBool}) {
    Tensor x = tensor<int64_t>({1, 0}).to(dt);
    Tensor r = x.nan_to_num(5.5);
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_TRUE(r.equal(x));
    EXPECT_FALSE(r.is_alias_of(x));  // a copy, as torch
    EXPECT_TRUE(Tensor(x).nan_to_num_(5.5).equal(tensor<int64_t>({1, 0}).to(dt)));
  }
  Tensor x = tensor<double>({NAN, INFINITY, -INFINITY, 2.0}).to(kFloat);
  Tensor& same = x.nan_to_num_(7.0);
  EXPECT_TRUE(same.is_same(x));
  EXPECT_EQ(x.to_vector<double>(),
            (std::vector<double>{7, std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(), 2}));
  Tensor z = tensor<double>({NAN, INFINITY, 3.0});
  z.nan_to_num_(0.0, 1.0, -1.0);  // the masked path in place
  EXPECT_EQ(z.to_vector<double>(), (std::vector<double>{0, 1, 3}));
}

TEST(NanToNum, NonContiguousAndEmpty) {
  Tensor base = tensor<double>({{NAN, 1.0}, {INFINITY, -INFINITY}, {2.0, NAN}});
  Tensor t = base.t();
  ASSERT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.nan_to_num(9.0).equal(t.contiguous().nan_to_num(9.0)));
  EXPECT_EQ(empty({0, 2}).nan_to_num().sizes(), IntArrayRef({0, 2}));
}

TEST(NanToNum, Gradient) {
  // torch 2.15: grad [1, 2, 3, 4] -> [0, 0, 0, 4] (NanToNumBackward0).
  Tensor x = tensor<float>({NAN, INFINITY, -INFINITY, 1.5f}).requires_grad_();
  Tensor y = x.nan_to_num();
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "NanToNumBackward0");
  y.backward(tensor<float>({1, 2, 3, 4}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 0, 0, 4}));
  // In place on a non-leaf.
  Tensor x2 = tensor<float>({NAN, INFINITY, -INFINITY, 1.5f}).requires_grad_();
  Tensor y2 = x2 * 1;
  y2.nan_to_num_();
  y2.backward(tensor<float>({1, 2, 3, 4}));
  EXPECT_EQ(x2.grad().to_vector<float>(), (std::vector<float>{0, 0, 0, 4}));
  // A leaf that requires grad cannot be changed in place.
  expect_error([] { tensor<float>({1.f}).requires_grad_().nan_to_num_(); }, {"[nan_to_num_]", "leaf"});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].nan_to_num(0.0, 5.0, -5.0); },
                           {brisk::testing::leaf({3, 4})}, true));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return (t[0] * 1).nan_to_num_(); },
                           {brisk::testing::leaf_noncontig({3, 4})}));
}

// ==== median / nanmedian ==========================================================================

Tensor nan_matrix() {
  return tensor<double>({{3, 1, 2, 1}, {NAN, 1, NAN, 0}, {5, 5, 5, 5}, {2, 9, 2, 0}}).to(kFloat);
}

TEST(Median, ValuesFromTorch) {
  // torch 1.13 and 2.15 agree on all of these.
  Tensor x = nan_matrix();
  auto [v1, i1] = x.median(1);
  EXPECT_TRUE(close(v1, tensor<float>({1, NAN, 5, 2})));
  // Row 0 has two 1s (torch picks index 3, unspecified); rows with one candidate:
  EXPECT_EQ(i1.to_vector<int64_t>()[1], 0);  // the first NaN
  EXPECT_EQ(i1.to_vector<int64_t>()[3], 0);
  Tensor picked = x.gather(1, i1.unsqueeze(1)).squeeze(1);
  EXPECT_TRUE(close(picked, v1));  // each index names an element equal to its value (NaN: a NaN)
  auto [n1, ni1] = x.nanmedian(1);
  EXPECT_TRUE(close(n1, tensor<float>({1, 0, 5, 2})));
  EXPECT_EQ(ni1.to_vector<int64_t>()[1], 3);
  auto [v0, i0] = x.median(0);
  EXPECT_TRUE(close(v0, tensor<float>({NAN, 1, NAN, 0})));
  EXPECT_EQ(i0.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 3}));
  auto [n0, ni0] = x.nanmedian(0);
  EXPECT_TRUE(close(n0, tensor<float>({3, 1, 2, 0})));
  EXPECT_EQ(ni0.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 3, 3}));
  EXPECT_TRUE(std::isnan(x.median().item<float>()));
  EXPECT_EQ(x.nanmedian().item<float>(), 2.0f);
  // The lower of the two middle values.
  EXPECT_EQ(tensor<float>({1, 2, 3, 4}).median().item<float>(), 2.0f);
  // Integers: torch [[7,3,9,1,5],[2,8,6,4,0]] -> median(1) (5, 4) at (4, 3); median() 4.
  Tensor y = tensor<int64_t>({{7, 3, 9, 1, 5}, {2, 8, 6, 4, 0}});
  auto [yv, yi] = y.median(1);
  EXPECT_EQ(yv.dtype(), kInt64);
  EXPECT_EQ(yv.to_vector<int64_t>(), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(yi.to_vector<int64_t>(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(y.median().item<int64_t>(), 4);
  EXPECT_EQ(std::get<1>(y.median(0)).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1, 0, 1}));
  // All NaN: nanmedian is NaN at index 0.
  auto [an, ai] = tensor<float>({NAN, NAN}).nanmedian(0);
  EXPECT_TRUE(std::isnan(an.item<float>()));
  EXPECT_EQ(ai.item<int64_t>(), 0);
  EXPECT_TRUE(std::isnan(tensor<float>({NAN, NAN}).nanmedian().item<float>()));
}

/// Lower median of each row along the last dim (distinct values), by sorting copies.
std::pair<std::vector<double>, std::vector<int64_t>> ref_median_rows(const Tensor& x) {
  Tensor c = x.to(kDouble).contiguous();
  const int64_t n = c.size(-1), rows = c.numel() / std::max<int64_t>(n, 1);
  const double* p = c.data_ptr<double>();
  std::vector<double> vals;
  std::vector<int64_t> idx;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<std::pair<double, int64_t>> row;
    for (int64_t j = 0; j < n; ++j) row.push_back({p[r * n + j], j});
    std::sort(row.begin(), row.end());
    vals.push_back(row[static_cast<size_t>((n - 1) / 2)].first);
    idx.push_back(row[static_cast<size_t>((n - 1) / 2)].second);
  }
  return {vals, idx};
}

TEST(Median, AgainstReferenceEveryDtype) {
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kUInt8}) {
    for (int64_t n : {1, 2, 5, 8, 33}) {
      Tensor x = distinct({2, 2, n}, static_cast<uint32_t>(n), dt);  // values < 132: exact in every dtype
      for (bool nan_variant : {false, true}) {
        auto [v, i] = nan_variant ? x.nanmedian(-1) : x.median(-1);
        auto [rv, ri] = ref_median_rows(x);
        ASSERT_EQ(v.dtype(), dt);
        ASSERT_EQ(v.sizes(), IntArrayRef({2, 2}));
        EXPECT_EQ(v.to_vector<double>(), rv) << dt << " n=" << n;
        EXPECT_EQ(i.to_vector<int64_t>(), ri) << dt << " n=" << n;
      }
      // The same along dim 0 of a transposed (non-contiguous) view.
      Tensor t = x.transpose(0, 2);
      auto [tv, ti] = t.median(0, true);
      auto [rv, ri] = ref_median_rows(x);
      EXPECT_EQ(tv.sizes(), IntArrayRef({1, 2, 2}));
      EXPECT_EQ(tv.squeeze(0).t().contiguous().to_vector<double>(), rv);
      EXPECT_EQ(ti.squeeze(0).t().contiguous().to_vector<int64_t>(), ri);
      // median() is the lower median of everything.
      std::vector<double> all = x.to(kDouble).reshape({-1}).to_vector<double>();
      std::sort(all.begin(), all.end());
      EXPECT_EQ(x.median().item<double>(), all[(all.size() - 1) / 2]);
      EXPECT_EQ(x.nanmedian().item<double>(), all[(all.size() - 1) / 2]);
    }
  }
}

TEST(Median, NanRowsAgainstReference) {
  // Rows with some NaN: median gives NaN at the first NaN; nanmedian the lower
  // median of the rest.
  Tensor x = distinct({6, 9}, 7, kFloat);
  Tensor mask = rand_int({6, 9}, 0, 3, 8).eq(0);
  x.masked_fill_(mask, NAN);
  auto [v, i] = x.median(1);
  auto [nv, ni] = x.nanmedian(1);
  for (int64_t r = 0; r < 6; ++r) {
    std::vector<float> row = x[r].to_vector<float>();
    std::vector<std::pair<float, int64_t>> finite;
    int64_t first_nan = -1;
    for (int64_t j = 0; j < 9; ++j) {
      if (std::isnan(row[j])) {
        if (first_nan < 0) first_nan = j;
      } else {
        finite.push_back({row[j], j});
      }
    }
    std::sort(finite.begin(), finite.end());
    if (first_nan >= 0) {
      EXPECT_TRUE(std::isnan(v[r].item<float>()));
      EXPECT_EQ(i[r].item<int64_t>(), first_nan);
    }
    if (!finite.empty()) {
      const auto& m = finite[(finite.size() - 1) / 2];
      EXPECT_EQ(nv[r].item<float>(), m.first);
      EXPECT_EQ(ni[r].item<int64_t>(), m.second);
    }
  }
}

TEST(Median, ShapesAndErrors) {
  Tensor s = scalar_tensor(5.0);
  auto [v, i] = s.median(0);
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(v.item<double>(), 5.0);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(std::get<0>(s.median(-1, true)).dim(), 0);  // torch: 0-dim even with keepdim
  EXPECT_EQ(s.median().item<double>(), 5.0);
  auto [kv, ki] = nan_matrix().median(1, true);
  EXPECT_EQ(kv.sizes(), IntArrayRef({4, 1}));
  EXPECT_EQ(ki.sizes(), IntArrayRef({4, 1}));
  // Empty inputs (torch): median() is NaN; int64 gives the NaN cast (the minimum).
  EXPECT_TRUE(std::isnan(empty({0}).median().item<float>()));
  EXPECT_TRUE(std::isnan(empty({2, 0}, kHalf).nanmedian().item<float>()));
  EXPECT_EQ(empty({0}, kInt64).median().item<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(empty({0}, kInt32).nanmedian().item<int64_t>(), std::numeric_limits<int32_t>::min());
  // A kept empty dim is fine, a reduced one is not.
  EXPECT_EQ(std::get<0>(zeros({0, 3}).median(1)).sizes(), IntArrayRef({0}));
  EXPECT_EQ(std::get<1>(zeros({2, 0}).median(0, true)).sizes(), IntArrayRef({1, 0}));
  expect_error([] { zeros({0, 3}).median(0); }, {"[median]", "reduction dim 0", "non-zero size"});
  expect_error([] { zeros({3, 0}).nanmedian(1); }, {"[nanmedian]", "reduction dim 1", "non-zero size"});
  expect_error([] { nan_matrix().median(2); }, {"[median]", "out of range"});
  expect_error([&] { s.median(1); }, {"[median]", "out of range"});
  expect_error([] { tensor<bool>({true, false}).median(); }, {"[median]", "bool"});
  expect_error([] { tensor<bool>({true, false}).nanmedian(0); }, {"[nanmedian]", "bool"});
}

TEST(Median, Gradients) {
  // torch 2.15: median() / nanmedian() split the gradient among the elements
  // equal to the result: [[3,1,2,1],[2,1,2,1]] -> 0.25 at each 1.
  Tensor a = tensor<double>({{3, 1, 2, 1}, {2, 1, 2, 1}}, kDouble).requires_grad_();
  Tensor m = a.median();
  EXPECT_EQ(m.grad_fn()->name(), "MedianBackward0");
  m.backward();
  EXPECT_TRUE(close(a.grad(), tensor<double>({{0, .25, 0, .25}, {0, .25, 0, .25}})));
  a.mutable_grad() = Tensor();
  a.nanmedian().backward();
  EXPECT_TRUE(close(a.grad(), tensor<double>({{0, .25, 0, .25}, {0, .25, 0, .25}})));
  // torch: median(1) sends each row's gradient to its index (MedianBackward1).
  a.mutable_grad() = Tensor();
  auto [v, i] = a.median(1);
  EXPECT_EQ(v.grad_fn()->name(), "MedianBackward1");
  EXPECT_FALSE(i.requires_grad());
  v.sum().backward();
  EXPECT_TRUE(close(a.grad(), zeros({2, 4}, kDouble).scatter(1, i.unsqueeze(1), 1.0)));
  // NaN (torch): median() of [nan, 1, nan] -> 0.5 at each NaN; nanmedian -> 1 at the 1;
  // median(0) -> all to the first NaN.
  Tensor b = tensor<double>({NAN, 1, NAN}, kDouble).requires_grad_();
  b.median().backward();
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{.5, 0, .5}));
  b.mutable_grad() = Tensor();
  b.nanmedian().backward();
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0, 1, 0}));
  b.mutable_grad() = Tensor();
  std::get<0>(b.median(0)).backward();
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(std::get<0>(b.nanmedian(0)).grad_fn()->name(), "NanmedianBackward1");
  // gradcheck on distinct values (ties make median non-differentiable).
  for (bool keepdim : {false, true}) {
    EXPECT_TRUE(gradcheck_ok([keepdim](const TensorList& t) { return std::get<0>(t[0].median(1, keepdim)); },
                             {distinct({3, 5}, 1).requires_grad_()}, true));
    EXPECT_TRUE(gradcheck_ok([keepdim](const TensorList& t) { return std::get<0>(t[0].nanmedian(0, keepdim)); },
                             {distinct({4, 3}, 2).t().requires_grad_()}, true));
  }
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].median(); }, {distinct({3, 4}, 3).requires_grad_()},
                           true));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].nanmedian(); },
                           {distinct({2, 3}, 4).requires_grad_()}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return std::get<0>(t[0].median(0)); },
                           {scalar_tensor(2.0, kDouble).requires_grad_()}));
}

// ==== index_put_ with accumulate ====================================================================

const ScalarType kAllDtypes[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};

TEST(IndexPutAccumulate, DuplicatesEveryDtype) {
  // torch 2.15: zeros(5).index_put_((tensor([0, 1, 1, 3]),), ones(4), accumulate=True)
  // == [1, 2, 0, 1, 0]; bool: [True, True, False, True, False].
  for (ScalarType dt : kAllDtypes) {
    Tensor x = zeros({5}, dt);
    Tensor& r = x.index_put_({tensor<int64_t>({0, 1, 1, 3})}, ones({4}, dt), true);
    EXPECT_TRUE(r.is_same(x));
    const std::vector<int64_t> want = dt == kBool ? std::vector<int64_t>{1, 1, 0, 1, 0}
                                                  : std::vector<int64_t>{1, 2, 0, 1, 0};
    EXPECT_EQ(x.to_vector<int64_t>(), want) << dt;
    // Without accumulate the values are written (duplicates: one of them wins).
    Tensor y = zeros({5}, dt);
    y.index_put_({tensor<int64_t>({0, 3})}, ones({2}, dt), false);
    EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1, 0})) << dt;
  }
  // int32 indices and negative ones (they wrap).
  Tensor z = zeros({4});
  z.index_put_({tensor<int64_t>({-1, 3, 0}).to(kInt32)}, tensor<float>({1, 2, 5}), true);
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{5, 0, 0, 3}));
}

TEST(IndexPutAccumulate, BroadcastMasksAndSlices) {
  // All values from torch 2.15 (same in 1.13).
  Tensor a = zeros({2, 3});
  a.index_put_({tensor<int64_t>({0, 0})}, tensor<float>({1, 2, 3}), true);
  EXPECT_TRUE(a.equal(tensor<float>({{2, 4, 6}, {0, 0, 0}})));
  Tensor b = zeros({2, 3});
  b.index_put_({tensor<bool>({{true, false, true}, {false, false, true}})}, tensor<float>({1, 2, 3}), true);
  EXPECT_TRUE(b.equal(tensor<float>({{1, 0, 2}, {0, 0, 3}})));
  Tensor c = zeros({2, 3});
  c.index_put_({tensor<bool>({true, true})}, tensor<float>({1, 2, 3}), true);
  EXPECT_TRUE(c.equal(tensor<float>({{1, 2, 3}, {1, 2, 3}})));
  // ATen's (None, idx) is {Slice(), idx} here.
  Tensor d = zeros({2, 3});
  d.index_put_({Slice(), tensor<int64_t>({2, 2, 0})}, tensor<float>({1, 2, 3}), true);
  EXPECT_TRUE(d.equal(tensor<float>({{3, 0, 3}, {3, 0, 3}})));
  Tensor e = zeros({2, 3});
  e.index_put_({tensor<int64_t>({1, 1}), tensor<int64_t>({2, 2})}, scalar_tensor(1.5f), true);
  EXPECT_TRUE(e.equal(tensor<float>({{0, 0, 0}, {0, 0, 3}})));
  // uint8 masks; a mask and an index tensor together.
  Tensor f = zeros({3}, kInt64);
  f.index_put_({tensor<int64_t>({1, 0, 1}).to(kUInt8)}, scalar_tensor(int64_t(5)), true);
  EXPECT_EQ(f.to_vector<int64_t>(), (std::vector<int64_t>{5, 0, 5}));
  Tensor g = zeros({3, 2});
  g.index_put_({tensor<bool>({true, false, true}), tensor<int64_t>({1})}, tensor<float>({1, 2}), true);
  EXPECT_TRUE(g.equal(tensor<float>({{0, 1}, {0, 0}, {0, 2}})));
  Tensor h = zeros({3, 2});
  h.index_put_({tensor<bool>({true, false, true})}, tensor<float>({{1, 2}}), true);
  EXPECT_TRUE(h.equal(tensor<float>({{1, 2}, {0, 0}, {1, 2}})));
  // Separated advanced indices (result dims go first), int index into a 3-D tensor.
  Tensor k = zeros({2, 3, 4});
  k.index_put_({tensor<int64_t>({1, 1}), Slice(), tensor<int64_t>({2, 2})}, tensor<float>({1, 2, 3}), true);
  EXPECT_TRUE(k[1].select(1, 2).equal(tensor<float>({2, 4, 6})));
  EXPECT_EQ(k.sum().item<float>(), 12.0f);
  // Only basic indices: the view gets the values added (x[:, 1] += v).
  Tensor m = ones({2, 3});
  m.index_put_({Slice(), 1}, tensor<float>({5, 6}), true);
  EXPECT_TRUE(m.equal(tensor<float>({{1, 6, 1}, {1, 7, 1}})));
  Tensor n = ones({2});
  n.index_put_({}, tensor<float>({2}), true);
  EXPECT_TRUE(n.equal(tensor<float>({3, 3})));
  // Nothing indexed: nothing changes.
  Tensor p = zeros({2, 3});
  p.index_put_({empty({0}, kInt64)}, scalar_tensor(1.5f), true);
  EXPECT_EQ(p.sum().item<float>(), 0.0f);
}

TEST(IndexPutAccumulate, NonContiguousSelfAndValues) {
  // torch: x = zeros(4, 3); x.t().index_put_((tensor([0, 0, 2]),), tensor([[1., 2, 3, 4]]), True)
  Tensor x = zeros({4, 3});
  x.t().index_put_({tensor<int64_t>({0, 0, 2})}, tensor<float>({{1, 2, 3, 4}}), true);
  EXPECT_TRUE(x.equal(tensor<float>({{2, 0, 1}, {4, 0, 2}, {6, 0, 3}, {8, 0, 4}})));
  Tensor v = tensor<float>({{1, 2}, {3, 4}, {5, 6}}).t();  // (2, 3), transposed
  Tensor y = zeros({4, 3});
  y.index_put_({tensor<int64_t>({3, 3})}, v, true);
  EXPECT_TRUE(y[3].equal(tensor<float>({3, 7, 11})));
  // The values alias self: read from a copy.
  Tensor z = ones({3});
  z.index_put_({tensor<int64_t>({0, 0})}, z.slice(0, 0, 2), true);
  EXPECT_TRUE(z.equal(tensor<float>({3, 1, 1})));
}

/// x[i0[n], :, i1[n]] += v[n, :] by loops (float64 / int64 math on doubles).
Tensor ref_accumulate(const Tensor& x, const Tensor& i0, const Tensor& i1, const Tensor& v) {
  Tensor r = x.to(kDouble).contiguous().clone();
  Tensor vv = v.to(kDouble).contiguous();
  auto a = i0.to_vector<int64_t>(), b = i1.to_vector<int64_t>();
  const int64_t A = x.size(0), B = x.size(1), C = x.size(2);
  double* p = r.data_ptr<double>();
  const double* q = vv.data_ptr<double>();
  for (size_t n = 0; n < a.size(); ++n) {
    const int64_t i = a[n] < 0 ? a[n] + A : a[n], k = b[n] < 0 ? b[n] + C : b[n];
    for (int64_t j = 0; j < B; ++j) p[(i * B + j) * C + k] += q[n * B + j];
  }
  return r;
}

TEST(IndexPutAccumulate, AgainstReference) {
  for (ScalarType dt : {kDouble, kFloat, kInt64, kInt32}) {
    Tensor x = rand_int({5, 70, 6}, -50, 50, 11).to(dt);
    Tensor i0 = rand_int({200}, -5, 5, 12), i1 = rand_int({200}, 0, 6, 13);
    Tensor v = rand_int({200, 70}, -9, 9, 14).to(dt);
    Tensor want = ref_accumulate(x, i0, i1, v);
    Tensor got = x.index_put({i0, Slice(), i1}, v, true);
    EXPECT_TRUE(got.to(kDouble).equal(want)) << dt;
    EXPECT_TRUE(x.equal(rand_int({5, 70, 6}, -50, 50, 11).to(dt)));  // out of place: x unchanged
  }
}

TEST(IndexPutAccumulate, Errors) {
  // torch: "Index put requires the source and destination dtypes match, got
  // Float for the destination and Double for the source."
  expect_error([] { zeros({5}).index_put_({tensor<int64_t>({0, 1})}, tensor<double>({1, 2}, kDouble), true); },
               {"[index_put_]", "dtypes match", "float32 for the destination", "float64 for the source"});
  expect_error([] { zeros({5}).index_put_({tensor<int64_t>({0, 1})}, tensor<double>({1, 2}, kDouble), false); },
               {"[index_put_]", "dtypes match"});
  expect_error([] { zeros({5}).index_put({tensor<int64_t>({0, 1})}, tensor<int64_t>({1, 2})); },
               {"[index_put_]", "dtypes match"});
  expect_error([] { zeros({5}).index_put_({tensor<int64_t>({0, 7})}, scalar_tensor(1.f), true); },
               {"[index_put_]", "index 7 is out of bounds for dimension 0 with size 5"});
  expect_error([] { zeros({5}).index_put_({tensor<int64_t>({0, 1})}, tensor<float>({1, 2, 3}), true); },
               {"[index_put_]", "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of "
                                "shape [2]"});
  // The ATen form keeps leading size-1 dims (torch: [1, 1, 3] into [1, 3] fails).
  expect_error([] { zeros({2, 3}).index_put_({tensor<int64_t>({0})}, ones({1, 1, 3}), true); },
               {"[index_put_]", "shape mismatch"});
  expect_error([] { zeros({3, 2}).index_put_({tensor<bool>({true, false})}, tensor<float>({1, 2}), true); },
               {"[index_put_]", "mask [2]", "does not match"});
  expect_error([] {
    zeros({3, 2}).index_put_({tensor<int64_t>({0, 1}), tensor<int64_t>({0, 1, 1})}, tensor<float>({1, 2}), true);
  }, {"[index_put_]", "could not be broadcast"});
  expect_error([] { zeros({2, 3}).index_put_({tensor<float>({1.f})}, scalar_tensor(1.f), true); },
               {"[index_put_]", "long, int, byte or bool"});
  expect_error([] { zeros({2, 3}).index_put_({0, 0, 0}, scalar_tensor(1.f), true); },
               {"[index_put_]", "too many indices"});
  expect_error([] { ones({2}).requires_grad_().index_put_({tensor<int64_t>({0})}, ones({1}), true); },
               {"[index_put_]", "leaf"});
}

TEST(IndexPutAccumulate, Gradients) {
  // torch 2.15: a = arange(6.).reshape(2, 3); r = a.index_put(([1, 1], [2, 2]), v, True);
  // (r * arange(6.).reshape(2, 3)).sum().backward() -> a.grad = arange, v.grad = [5, 5].
  Tensor w = arange(6, kDouble).reshape({2, 3});
  Tensor a = arange(6, kDouble).reshape({2, 3}).requires_grad_();
  Tensor v = tensor<double>({1, 2}, kDouble).requires_grad_();
  Tensor r = a.index_put({tensor<int64_t>({1, 1}), tensor<int64_t>({2, 2})}, v, true);
  EXPECT_TRUE(r.detach().equal(tensor<double>({{0, 1, 2}, {3, 4, 8}}, kDouble)));
  (r * w).sum().backward();
  EXPECT_TRUE(a.grad().equal(w));
  EXPECT_EQ(v.grad().to_vector<double>(), (std::vector<double>{5, 5}));
  // A broadcast value collects every use (torch: v.grad = [10]).
  Tensor v1 = tensor<double>({1}, kDouble).requires_grad_();
  Tensor r1 = a.index_put({tensor<int64_t>({1, 1}), tensor<int64_t>({2, 2})}, v1, true);
  (r1 * w).sum().backward();
  EXPECT_EQ(v1.grad().to_vector<double>(), (std::vector<double>{10}));
  // gradcheck: self and values, duplicates, in and out of place, a mask, non-contiguous self.
  Tensor idx = tensor<int64_t>({0, 2, 2, -1});
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) { return t[0].index_put({Slice(), idx}, t[1], true); },
      {brisk::testing::leaf({3, 4}), brisk::testing::leaf({3, 4})}, true));
  EXPECT_TRUE(gradcheck_ok(
      [idx](const TensorList& t) {
        Tensor y = t[0] * 2;
        y.index_put_({idx}, t[1], true);
        return y;
      },
      {brisk::testing::leaf_noncontig({4, 3}), brisk::testing::leaf({1, 3})}, true));
  Tensor mask = tensor<bool>({{true, false, true}, {false, true, true}});
  EXPECT_TRUE(gradcheck_ok([mask](const TensorList& t) { return t[0].index_put({mask}, t[1], true); },
                           {brisk::testing::leaf({2, 3}), brisk::testing::leaf({4})}, true));
  EXPECT_TRUE(gradcheck_ok(
      [](const TensorList& t) { return t[0].index_put({Slice(), 1}, t[1], true); },
      {brisk::testing::leaf({2, 3}), brisk::testing::leaf({2})}, true));
  Tensor unique_idx = tensor<int64_t>({0, 2, -1});
  EXPECT_TRUE(gradcheck_ok(
      [unique_idx](const TensorList& t) { return t[0].index_put({unique_idx}, t[1].expand({3, 3}), false); },
      {brisk::testing::leaf({4, 3}), brisk::testing::leaf({3})}));
  EXPECT_EQ(a.index_put({tensor<int64_t>({0})}, tensor<double>({{1, 2, 3}}, kDouble), true).grad_fn()->name(),
            "IndexPutBackward0");
}

}  // namespace
