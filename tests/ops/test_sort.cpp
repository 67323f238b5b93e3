// sort, argsort, topk: against std::stable_sort references and PyTorch values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "test_util.h"

using namespace brisk;
using brisk::testing::expect_error;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// NaN is larger than everything; equal keys are tied.
bool nan_less(double a, double b) { return (!std::isnan(a) && std::isnan(b)) || a < b; }

// Reference sort along `dim` by std::stable_sort over each row. Returns the
// expected values (as double) and indices, row-major, in x's shape.
struct Reference {
  std::vector<double> values;
  std::vector<int64_t> indices;
};
Reference reference_sort(const Tensor& x, int64_t dim, bool descending, int64_t k = -1) {
  std::vector<double> v = x.to_vector<double>();
  const int64_t nd = x.dim();
  if (dim < 0) dim += nd;
  const int64_t n = x.size(dim);
  if (k < 0) k = n;
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= x.size(d);
  const int64_t outer = x.numel() / std::max<int64_t>(n * inner, 1);
  Reference r;
  r.values.resize(static_cast<size_t>(outer * k * inner));
  r.indices.resize(r.values.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> idx(static_cast<size_t>(n));
      std::iota(idx.begin(), idx.end(), 0);
      auto at = [&](int64_t j) { return v[static_cast<size_t>((o * n + j) * inner + i)]; };
      if (descending)
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return nan_less(at(b), at(a)); });
      else
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return nan_less(at(a), at(b)); });
      for (int64_t j = 0; j < k; ++j) {
        const size_t pos = static_cast<size_t>((o * k + j) * inner + i);
        r.values[pos] = at(idx[static_cast<size_t>(j)]);
        r.indices[pos] = idx[static_cast<size_t>(j)];
      }
    }
  return r;
}

::testing::AssertionResult matches(const Tensor& values, const Tensor& indices, const Reference& ref) {
  const std::vector<double> v = values.to_vector<double>();
  const std::vector<int64_t> i = indices.to_vector<int64_t>();
  if (indices.dtype() != kInt64) return ::testing::AssertionFailure() << "indices dtype " << indices.dtype();
  if (v.size() != ref.values.size()) return ::testing::AssertionFailure() << "size " << v.size();
  for (size_t p = 0; p < v.size(); ++p) {
    if (!same_value(v[p], ref.values[p]))
      return ::testing::AssertionFailure() << "value " << p << ": " << v[p] << " vs " << ref.values[p];
    if (i[p] != ref.indices[p])
      return ::testing::AssertionFailure() << "index " << p << ": " << i[p] << " vs " << ref.indices[p];
  }
  return ::testing::AssertionSuccess();
}

// Random values with many ties (and NaN/inf for floats), in dtype t.
Tensor tied_values(IntArrayRef shape, ScalarType t, uint32_t seed) {
  std::mt19937 gen(seed);
  const int64_t n = multiply(shape);
  std::vector<double> v(static_cast<size_t>(n));
  std::uniform_int_distribution<int> small(0, 9), pick(0, 19);
  for (auto& e : v) {
    e = t == kBool ? small(gen) % 2 : small(gen) - (t == kUInt8 ? 0 : 4);
    if (is_floating_point(t)) {
      const int p = pick(gen);
      if (p == 0) e = kNaN;
      else if (p == 1) e = kInf;
      else if (p == 2) e = -kInf;
      else if (p == 3) e += 0.5;
    }
  }
  return tensor(v, shape, kDouble).to(t);
}

const ScalarType kAllDtypes[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};

}  // namespace

TEST(Sort, TorchValuesWithNaNAndSignedZero) {
  // torch.sort(x, dim=1, stable=True) and descending=True.
  Tensor x = tensor({{3., 1., 2., 1., -0.0, 0.0}, {kNaN, 0., -kInf, kNaN, kInf, -1.}});
  auto [v, i] = sort(x, 1);
  EXPECT_TRUE(brisk::testing::close(v, tensor({{-0.0, 0.0, 1., 1., 2., 3.}, {-kInf, -1., 0., kInf, kNaN, kNaN}})));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{4, 5, 1, 3, 2, 0, 2, 5, 1, 4, 0, 3}));
  EXPECT_TRUE(std::signbit(v.to_vector<double>()[0]));  // -0.0 keeps its place before 0.0 (stable)
  auto [vd, id] = x.sort(1, /*descending=*/true);
  EXPECT_TRUE(brisk::testing::close(vd, tensor({{3., 2., 1., 1., -0.0, 0.0}, {kNaN, kNaN, kInf, 0., -1., -kInf}})));
  EXPECT_EQ(id.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1, 3, 4, 5, 0, 3, 4, 1, 5, 2}));
  // dim 0
  auto [v0, i0] = sort(x, 0);
  EXPECT_TRUE(brisk::testing::close(v0, tensor({{3., 0., -kInf, 1., -0.0, -1.}, {kNaN, 1., 2., kNaN, kInf, 0.}})));
  EXPECT_EQ(i0.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0}));
  auto [v0d, i0d] = sort(x, 0, true);
  EXPECT_EQ(i0d.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1}));
}

TEST(Sort, BoolAndArgsortTorchValues) {
  Tensor b = tensor(std::vector<bool>{true, false, true, false});
  auto [v, i] = sort(b);
  EXPECT_EQ(v.dtype(), kBool);
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 0, 2}));
  auto [vd, id] = sort(b, -1, true);
  EXPECT_EQ(id.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1, 3}));
  // torch.argsort(torch.tensor([2,1,2,1,0]), stable=True)
  EXPECT_EQ(argsort(tensor({2, 1, 2, 1, 0})).to_vector<int64_t>(), (std::vector<int64_t>{4, 1, 3, 0, 2}));
  EXPECT_EQ(tensor({2, 1, 2, 1, 0}).argsort(0, true).to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1, 3, 4}));
}

TEST(Sort, AllDtypesAllDimsAgainstStableSort) {
  for (ScalarType t : kAllDtypes) {
    Tensor x = tied_values({5, 7, 9}, t, 17u + static_cast<uint32_t>(t));
    for (int64_t dim : {0, 1, 2, -1})
      for (bool desc : {false, true}) {
        SCOPED_TRACE(::testing::Message() << t << " dim " << dim << " desc " << desc);
        auto [v, i] = sort(x, dim, desc);
        EXPECT_EQ(v.dtype(), t);
        EXPECT_EQ(v.sizes(), x.sizes());
        EXPECT_TRUE(matches(v, i, reference_sort(x, dim, desc)));
        EXPECT_EQ(argsort(x, dim, desc).to_vector<int64_t>(), i.to_vector<int64_t>());
      }
  }
}

TEST(Sort, NonContiguousInputs) {
  Tensor base = tied_values({6, 8, 10}, kFloat, 5);
  Tensor xt = base.transpose(0, 2);                 // (10, 8, 6), strides not row-major
  Tensor xs = base.slice(2, 1, 10, 3).slice(0, 0, 6, 2);  // stepped slices
  for (const Tensor& x : {xt, xs}) {
    ASSERT_FALSE(x.is_contiguous());
    for (int64_t dim = 0; dim < 3; ++dim)
      for (bool desc : {false, true}) {
        auto [v, i] = x.sort(dim, desc);
        EXPECT_TRUE(matches(v, i, reference_sort(x.contiguous(), dim, desc))) << "dim " << dim;
      }
  }
  // the input is not modified
  EXPECT_TRUE(brisk::testing::close(base, tied_values({6, 8, 10}, kFloat, 5)));
}

TEST(Sort, ScalarsAndEmpty) {
  auto [v, i] = sort(scalar_tensor(3.5));
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(v.item<double>(), 3.5);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(i.dtype(), kInt64);
  auto [ve, ie] = sort(empty({0, 3}), 0);
  EXPECT_EQ(ve.sizes(), IntArrayRef({0, 3}));
  EXPECT_EQ(ie.sizes(), IntArrayRef({0, 3}));
  auto [ve1, ie1] = sort(empty({4, 0}), 0);
  EXPECT_EQ(ve1.sizes(), IntArrayRef({4, 0}));
}

TEST(Sort, Int64ExtremesExact) {
  const int64_t mn = std::numeric_limits<int64_t>::min(), mx = std::numeric_limits<int64_t>::max();
  Tensor x = tensor(std::vector<int64_t>{mx, mn, mx - 1, 0, mn + 1, mx});
  auto [v, i] = sort(x);
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{mn, mn + 1, 0, mx - 1, mx, mx}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 3, 2, 0, 5}));
}

TEST(Sort, LargeParallelIndependentOfThreads) {
  Tensor x = tied_values({3000, 50}, kFloat, 99);
  const int before = get_num_threads();
  set_num_threads(1);
  auto [v1, i1] = sort(x, 0);
  set_num_threads(std::max(2, before));
  auto [v2, i2] = sort(x, 0);
  auto [v3, i3] = sort(x, 1, true);
  set_num_threads(before);
  EXPECT_EQ(i1.to_vector<int64_t>(), i2.to_vector<int64_t>());
  EXPECT_TRUE(matches(v2, i2, reference_sort(x, 0, false)));
  EXPECT_TRUE(matches(v3, i3, reference_sort(x, 1, true)));
  // one long row
  Tensor y = tied_values({200000}, kDouble, 3);
  auto [vy, iy] = sort(y, 0, true);
  EXPECT_TRUE(matches(vy, iy, reference_sort(y, 0, true)));
}

TEST(Sort, Errors) {
  Tensor x = zeros({2, 3});
  expect_error([&] { sort(x, 2); }, {"[sort]", "dimension out of range", "got 2"});
  expect_error([&] { argsort(x, -3); }, {"[sort]", "dimension out of range"});
  expect_error([&] { sort(Tensor()); }, {"[sort]", "undefined"});
}

// ---- topk ----------------------------------------------------------------------------------

TEST(Topk, TorchValuesWithNaN) {
  // torch.topk(tensor([1, nan, 3, 2, nan, 3]), k, largest=...): values; our ties
  // (and NaNs) resolve by index, which PyTorch leaves unspecified.
  Tensor y = tensor({1., kNaN, 3., 2., kNaN, 3.});
  struct Case {
    int64_t k;
    bool largest;
    std::vector<double> values;
    std::vector<int64_t> indices;
  };
  const Case cases[] = {
      {1, true, {kNaN}, {1}},
      {2, true, {kNaN, kNaN}, {1, 4}},
      {3, true, {kNaN, kNaN, 3.}, {1, 4, 2}},
      {5, true, {kNaN, kNaN, 3., 3., 2.}, {1, 4, 2, 5, 3}},
      {1, false, {1.}, {0}},
      {3, false, {1., 2., 3.}, {0, 3, 2}},
      {5, false, {1., 2., 3., 3., kNaN}, {0, 3, 2, 5, 1}},
      {6, false, {1., 2., 3., 3., kNaN, kNaN}, {0, 3, 2, 5, 1, 4}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "k " << c.k << " largest " << c.largest);
    auto [v, i] = topk(y, c.k, -1, c.largest);
    EXPECT_TRUE(brisk::testing::close(v, tensor(c.values)));
    EXPECT_EQ(i.to_vector<int64_t>(), c.indices);
  }
}

TEST(Topk, TorchIntegerDims) {
  Tensor z = tensor({{5, 2, 9, 2}, {7, 7, 1, 0}});
  auto [v, i] = z.topk(2, 1);
  EXPECT_EQ(v.dtype(), kInt64);
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{9, 5, 7, 7}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 0, 1}));
  auto [v0, i0] = z.topk(1, 0);
  EXPECT_EQ(v0.sizes(), IntArrayRef({1, 4}));
  EXPECT_EQ(v0.to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 9, 2}));
  EXPECT_EQ(i0.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 0, 0}));
}

TEST(Topk, AllDtypesMatchStableSortPrefix) {
  for (ScalarType t : kAllDtypes) {
    if (t == kBool) continue;  // refused, as in PyTorch (Topk.BoolIsRefused)
    Tensor x = tied_values({4, 6, 11}, t, 40u + static_cast<uint32_t>(t));
    for (int64_t dim : {0, 1, 2})
      for (bool largest : {true, false})
        for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{3}, x.size(dim)}) {
          if (k > x.size(dim)) continue;
          SCOPED_TRACE(::testing::Message() << t << " dim " << dim << " largest " << largest << " k " << k);
          auto [v, i] = topk(x, k, dim, largest, true);
          DimVector shape(x.sizes().begin(), x.sizes().end());
          shape[static_cast<size_t>(dim)] = k;
          EXPECT_EQ(v.sizes(), IntArrayRef(shape));
          EXPECT_EQ(v.dtype(), t);
          EXPECT_TRUE(matches(v, i, reference_sort(x, dim, largest, k)));
        }
  }
}

TEST(Topk, SmallKHeapPathAllDtypes) {
  // k * 16 <= row length takes the one-pass heap path; ties and NaNs must
  // resolve exactly as in the full sort.
  for (ScalarType t : kAllDtypes) {
    if (t == kBool) continue;
    Tensor x = tied_values({3, 97}, t, 60u + static_cast<uint32_t>(t));
    for (bool largest : {true, false})
      for (int64_t k : {1, 2, 6}) {
        SCOPED_TRACE(::testing::Message() << t << " largest " << largest << " k " << k);
        auto [v, i] = topk(x, k, 1, largest);
        EXPECT_TRUE(matches(v, i, reference_sort(x, 1, largest, k)));
        auto [v0, i0] = topk(x.t(), k, 0, largest);  // strided rows
        EXPECT_TRUE(matches(v0.t(), i0.t(), reference_sort(x, 1, largest, k)));
      }
  }
}

TEST(Topk, BoolIsRefused) {
  // torch: "topk does not support bool dtypes on CPU" (1.13: not implemented for 'Bool')
  Tensor x = tied_values({3, 5}, kBool, 1);
  EXPECT_THROW(topk(x, 1), Error);
  EXPECT_THROW(x.topk(2, 0, false), Error);
}

// The unsorted result holds the same (index, value) items as the sorted one.
static void expect_same_set_as_sorted(int64_t n) {
  Tensor x = tied_values({3, n}, kFloat, 8);
  auto [v, i] = topk(x, 37, 1, true, /*sorted=*/false);
  const std::vector<double> vv = v.to_vector<double>();
  const std::vector<int64_t> ii = i.to_vector<int64_t>();
  const std::vector<double> xv = x.to_vector<double>();
  Reference ref = reference_sort(x, 1, true, 37);
  for (int64_t r = 0; r < 3; ++r) {
    std::vector<int64_t> got(ii.begin() + r * 37, ii.begin() + (r + 1) * 37);
    for (int64_t j = 0; j < 37; ++j) {
      const size_t p = static_cast<size_t>(r * 37 + j);
      EXPECT_TRUE(same_value(xv[static_cast<size_t>(r * n + ii[p])], vv[p]));  // value sits at its index
    }
    std::vector<int64_t> want(ref.indices.begin() + r * 37, ref.indices.begin() + (r + 1) * 37);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);
  }
}

TEST(Topk, UnsortedIsTheSameSet) {
  expect_same_set_as_sorted(500);   // selection path
  expect_same_set_as_sorted(2000);  // heap path
}

TEST(Topk, LongRowSmallKAndNonContiguous) {
  Tensor y = tied_values({100000}, kFloat, 11);
  for (bool largest : {true, false}) {
    auto [v, i] = topk(y, 5, 0, largest);
    EXPECT_TRUE(matches(v, i, reference_sort(y, 0, largest, 5)));
  }
  Tensor x = tied_values({9, 13}, kDouble, 12).t();  // (13, 9), non-contiguous
  auto [v, i] = topk(x, 4, 0, false);
  EXPECT_TRUE(matches(v, i, reference_sort(x.contiguous(), 0, false, 4)));
  auto [v1, i1] = topk(x, 2);
  EXPECT_TRUE(matches(v1, i1, reference_sort(x.contiguous(), 1, true, 2)));
}

TEST(Topk, ScalarsEmptyAndErrors) {
  auto [v, i] = topk(scalar_tensor(3.5), 1);
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(v.item<double>(), 3.5);
  EXPECT_EQ(i.item<int64_t>(), 0);
  auto [v0, i0] = topk(tensor({1., 2.}), 0);
  EXPECT_EQ(v0.sizes(), IntArrayRef({0}));
  EXPECT_EQ(i0.dtype(), kInt64);
  auto [ve, ie] = topk(empty({0, 4}), 2, 1);
  EXPECT_EQ(ve.sizes(), IntArrayRef({0, 2}));
  expect_error([&] { topk(tensor({1, 2}), 3); }, {"[topk]", "selected index k out of range", "k = 3"});
  expect_error([&] { topk(tensor({1, 2}), -1); }, {"[topk]", "selected index k out of range"});
  expect_error([&] { topk(scalar_tensor(1.0), 2); }, {"[topk]", "selected index k out of range"});
  expect_error([&] { topk(zeros({2, 3}), 1, 2); }, {"[topk]", "dimension out of range"});
}

// Regression (difffuzz reduce:topk:value): topk(k=0) of a 0-dim tensor has
// the input's shape, so it holds the element (torch 1.13 and 2.15:
// topk(tensor(-2.), 0) = (tensor(-2.), tensor(0)), gradient 1); brisk left it unwritten.
TEST(Topk, KZeroOfScalarIsTheElement) {
  for (ScalarType dt : {kFloat, kHalf, kInt64}) {
    const Tensor x = scalar_tensor(-2.0, dt);
    auto [v, i] = topk(x, 0);
    EXPECT_EQ(v.dim(), 0);
    EXPECT_EQ(v.item<double>(), -2.0) << dt;
    EXPECT_EQ(i.item<int64_t>(), 0);
  }
  const Tensor x = scalar_tensor(-2.0).requires_grad_();
  std::get<0>(topk(x, 0, -1, false)).mul(3.0).backward();
  EXPECT_EQ(x.grad().item<double>(), 3.0);
}
