// Reductions (sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std,
// norm, logsumexp, all/any), softmax/log_softmax and cumsum/cumprod.
// References: naive loops in double over logical coordinates, or values
// computed with PyTorch 1.13 (pasted as literals).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;

namespace {

const ScalarType kAllDtypes[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};
const ScalarType kFloatDtypes[] = {kHalf, kBFloat16, kFloat, kDouble};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

/// Deterministic values exactly representable in every dtype: bool 0/1,
/// uint8 0..9, signed ints -9..9, floats multiples of 1/4 in [-8, 8).
Tensor make(IntArrayRef shape, ScalarType dt, uint32_t seed = 1) {
  std::mt19937 g(seed);
  std::vector<double> v(static_cast<size_t>(multiply(shape)));
  for (auto& x : v) {
    const uint32_t u = g();
    if (dt == kBool)
      x = u % 2;
    else if (dt == kUInt8)
      x = u % 10;
    else if (is_integral(dt, false))
      x = static_cast<double>(u % 19) - 9;
    else
      x = static_cast<double>(u % 64) / 4 - 8;
  }
  return tensor(v, shape, kDouble).to(dt);
}

/// Uniform doubles in [lo, hi) as dtype dt.
Tensor make_uniform(IntArrayRef shape, ScalarType dt, double lo, double hi, uint32_t seed = 7) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(multiply(shape)));
  for (auto& x : v) x = u(g);
  return tensor(v, shape, kDouble).to(dt);
}

/// The values of x grouped by output element of a reduction over dims
/// (empty = all), each group in row-major order of the reduced dims.
struct Groups {
  std::vector<int64_t> shape;  // the result's shape
  std::vector<std::vector<double>> vals;
};
Groups group(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  const int64_t nd = x.dim();
  std::vector<bool> red(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) red[static_cast<size_t>(d < 0 ? d + nd : d)] = true;
  Groups g;
  int64_t nout = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (!red[d]) {
      g.shape.push_back(x.size(d));
      nout *= x.size(d);
    } else if (keepdim) {
      g.shape.push_back(1);
    }
  }
  g.vals.resize(static_cast<size_t>(nout));
  const std::vector<double> v = x.to(kDouble).contiguous().to_vector<double>();
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    int64_t rem = i, k = 0, mul = 1;
    for (int64_t d = nd; d-- > 0;) {
      const int64_t idx = rem % x.size(d);
      rem /= x.size(d);
      if (!red[d]) {
        k += idx * mul;
        mul *= x.size(d);
      }
    }
    g.vals[static_cast<size_t>(k)].push_back(v[static_cast<size_t>(i)]);
  }
  return g;
}

/// Naive reduction: out[k] = f(values of group k), as a double tensor.
Tensor naive(const Tensor& x, std::vector<int64_t> dims, bool keepdim,
             const std::function<double(const std::vector<double>&)>& f) {
  Groups g = group(x, dims, keepdim);
  std::vector<double> out;
  for (auto& v : g.vals) out.push_back(f(v));
  if (g.shape.empty()) return scalar_tensor(out[0], kDouble);  // (an empty vector's data() may be null)
  return tensor(out, IntArrayRef(g.shape.data(), g.shape.size()), kDouble);
}

double vsum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double vprod(const std::vector<double>& v) {
  double s = 1;
  for (double x : v) s *= x;
  return s;
}
double vmean(const std::vector<double>& v) { return vsum(v) / static_cast<double>(v.size()); }
double vvar(const std::vector<double>& v, double correction) {
  const double m = vmean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / std::max(0.0, static_cast<double>(v.size()) - correction);
}
double vmax(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v)
    if (x != x || x > m) {
      m = x;
      if (x != x) break;
    }
  return m;
}
double vmin(const std::vector<double>& v) {
  double m = kInf;
  for (double x : v)
    if (x != x || x < m) {
      m = x;
      if (x != x) break;
    }
  return m;
}
// First index of the max (NaN counts as the max).
double vargmax(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != v[i]) return static_cast<double>(i);
    if (v[i] > v[best]) best = i;
  }
  return static_cast<double>(best);
}
double vargmin(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != v[i]) return static_cast<double>(i);
    if (v[i] < v[best]) best = i;
  }
  return static_cast<double>(best);
}

std::vector<int64_t> shape_of(const Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

// Every way of picking dims of a 3-D tensor, with negative spellings.
const std::vector<std::vector<int64_t>> kDimLists = {{0}, {1}, {2}, {-1}, {0, 2}, {-3, 1}, {1, 2}, {2, 0, 1}, {}};

// The same values in different layouts: contiguous, permuted (dense), sliced, expanded.
std::vector<Tensor> layouts(ScalarType dt, uint32_t seed = 3) {
  std::vector<Tensor> r;
  r.push_back(make({3, 4, 5}, dt, seed));
  r.push_back(make({5, 3, 4}, dt, seed).permute({1, 2, 0}));      // dense, kept dims out of order
  r.push_back(make({4, 3, 5}, dt, seed).transpose(0, 1));         // dense, non-contiguous
  r.push_back(make({3, 8, 5}, dt, seed).slice(1, 0, 8, 2));       // gaps
  r.push_back(make({3, 1, 5}, dt, seed).expand({3, 4, 5}));       // 0 stride
  r.push_back(make({3, 4, 10}, dt, seed).slice(2, 1, 10, 2));     // gaps in the inner dim
  return r;
}

double tol_for(ScalarType dt) { return dt == kHalf ? 2e-3 : dt == kBFloat16 ? 1e-2 : dt == kFloat ? 1e-5 : 1e-12; }

}  // namespace

// ---- sum ----------------------------------------------------------------------------------

TEST(Sum, AllDtypesAllDims) {
  for (ScalarType dt : kAllDtypes) {
    Tensor x = make({3, 4, 5}, dt);
    Tensor s = x.sum();
    const ScalarType want = is_integral(dt, true) ? kInt64 : dt;
    EXPECT_EQ(s.dtype(), want) << dt;
    EXPECT_EQ(s.dim(), 0);
    EXPECT_TRUE(close(s, naive(x, {}, false, vsum), tol_for(dt), 0)) << dt;
  }
}

TEST(Sum, DimsKeepdimLayouts) {
  for (ScalarType dt : {kFloat, kInt64, kHalf, kDouble, kInt32, kBool}) {
    for (const Tensor& x : layouts(dt)) {
      for (const auto& dims : kDimLists) {
        for (bool keepdim : {false, true}) {
          Tensor s = x.sum(IntArrayRef(dims.data(), dims.size()), keepdim);
          Tensor want = naive(x, dims, keepdim, vsum);
          ASSERT_EQ(shape_of(s), shape_of(want)) << dt << " keepdim " << keepdim;
          EXPECT_TRUE(s.is_contiguous());
          EXPECT_TRUE(close(s, want, tol_for(dt), 1e-3)) << dt << " strides " << x.strides() << " dims "
                                                         << dims.size() << " keepdim " << keepdim;
        }
      }
    }
  }
}

TEST(Sum, SingleDimMethodAndNegativeDims) {
  Tensor x = make({2, 3, 4}, kFloat);
  EXPECT_TRUE(close(x.sum(1), naive(x, {1}, false, vsum)));
  EXPECT_TRUE(close(x.sum(-1, true), naive(x, {2}, true, vsum)));
  EXPECT_TRUE(close(sum(x, {0, -1}), naive(x, {0, 2}, false, vsum)));
  // Values from PyTorch: torch.arange(6.).view(2,3).sum(0) = [3, 5, 7]
  Tensor a = arange(6, kFloat).view({2, 3});
  EXPECT_EQ(a.sum(0).to_vector<float>(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(a.sum(1).to_vector<float>(), (std::vector<float>{3, 12}));
}

TEST(Sum, DtypeArgument) {
  Tensor i32 = tensor<int64_t>({1, 2, 3}).to(kInt32);
  EXPECT_EQ(i32.sum().dtype(), kInt64);
  EXPECT_EQ(i32.sum(kInt32).dtype(), kInt32);
  EXPECT_EQ(i32.sum(kInt32).item<int64_t>(), 6);
  EXPECT_EQ(i32.sum(kFloat).dtype(), kFloat);
  EXPECT_EQ(i32.sum(kFloat).item<double>(), 6.0);
  // torch.tensor([1.5, 2.5]).sum(dtype=torch.int64) = 3 (elements truncated first)
  EXPECT_EQ(tensor<double>({1.5, 2.5}).sum(kInt64).item<int64_t>(), 3);
  // float input summed in double
  Tensor f = tensor<double>({1e8, 1, -1e8}, kFloat);
  EXPECT_EQ(f.sum(kDouble).dtype(), kDouble);
  EXPECT_EQ(f.sum(kDouble).item<double>(), 1.0);
  // half result
  EXPECT_EQ(ones({2, 3}).sum(IntArrayRef{1}, false, kHalf).dtype(), kHalf);
  EXPECT_EQ(ones({2, 3}).sum(IntArrayRef{1}, false, kHalf).to_vector<double>(), (std::vector<double>{3, 3}));
  // bool result: torch.tensor([1., 2.]).sum(dtype=torch.bool) = True
  EXPECT_EQ(tensor<double>({1, 2}).sum(kBool).dtype(), kBool);
  EXPECT_TRUE(tensor<double>({1, 2}).sum(kBool).item<bool>());
}

TEST(Sum, IntegerWrapsLikeTorch) {
  // torch.tensor([2**63 - 1, 1]).sum() = -2**63
  Tensor x = tensor<int64_t>({std::numeric_limits<int64_t>::max(), 1});
  EXPECT_EQ(x.sum().item<int64_t>(), std::numeric_limits<int64_t>::min());
  // uint8 sums to int64 without wrapping at 256
  Tensor u = full({100}, 200, kUInt8);
  EXPECT_EQ(u.sum().item<int64_t>(), 20000);
  EXPECT_EQ(full({3}, true, kBool).sum().item<int64_t>(), 3);
}

TEST(Sum, Out) {
  Tensor x = make({3, 4}, kFloat);
  Tensor out = empty({4}, kFloat);
  Tensor& r = sum_out(out, x, {0});
  EXPECT_EQ(&r, &out);
  EXPECT_TRUE(close(out, naive(x, {0}, false, vsum)));
  // An empty out is resized.
  Tensor e = empty({0}, kFloat);
  sum_out(e, x, {1}, true);
  EXPECT_EQ(shape_of(e), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(close(e, naive(x, {1}, true, vsum)));
  // out's dtype is the result dtype.
  Tensor d = empty({3}, kDouble);
  sum_out(d, x, {1});
  EXPECT_TRUE(close(d, naive(x, {1}, false, vsum)));
  Tensor i = empty({}, kInt32);
  sum_out(i, tensor<int64_t>({1, 2, 3}), {});
  EXPECT_EQ(i.item<int64_t>(), 6);
  // A non-contiguous out.
  Tensor big = zeros({4, 2}, kFloat);
  Tensor col = big.select(1, 1);
  sum_out(col, x, {0});
  EXPECT_TRUE(close(col, naive(x, {0}, false, vsum)));
  EXPECT_TRUE(close(big.select(1, 0), zeros({4})));
  // Writing over the input itself is safe.
  Tensor self = make({1, 5}, kFloat);
  Tensor want = naive(self, {0}, true, vsum);
  sum_out(self, self, {0}, true);
  EXPECT_TRUE(close(self, want));
  // Wrong shape.
  Tensor bad = empty({5}, kFloat);
  expect_error([&] { sum_out(bad, x, {0}); }, {"[sum_out]", "[5]", "[4]"});
}

TEST(Sum, Precision1e7Float) {
  // 1e7 float32 values; the float32 sum must match the float64 sum of the
  // same values to ~1e-6 relative (naive float accumulation is off by ~1e-3).
  const int64_t n = 10'000'000;
  std::vector<float> v(static_cast<size_t>(n));
  std::mt19937 g(42);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  double exact = 0;
  for (auto& x : v) {
    x = u(g);
    exact += x;
  }
  Tensor t = tensor(v, {n}, kFloat);
  const double got = t.sum().item<double>();
  EXPECT_NEAR(got / exact, 1.0, 1e-6) << got << " vs " << exact;
  // The same along columns: (n/10, 10) summed over dim 0.
  Tensor cols = t.view({n / 10, 10}).sum(0);
  Tensor want = naive(t.view({n / 10, 10}), {0}, false, vsum);
  EXPECT_TRUE(close(cols, want, 1e-6, 0));
  // mean too
  EXPECT_NEAR(t.mean().item<double>() / (exact / n), 1.0, 1e-6);
}

TEST(Sum, LargeParallelPaths) {
  // Shapes for each engine path: many rows, few long rows (split), tiles of
  // columns, few long columns (split), a dense permuted layout.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{4000, 300}, {1}},   // many rows
      {{3, 400000}, {1}},   // few long rows: split into chunks
      {{1500000}, {}},      // one long row
      {{300, 4000}, {0}},   // tiles of columns
      {{400000, 3}, {0}},   // few long columns: split
      {{200, 50, 130}, {1}},  // (outer, reduce, inner)
      {{200, 50, 130}, {0, 2}},  // not a block: copied once
  };
  for (auto& [shape, dims] : cases) {
    Tensor x = make_uniform(IntArrayRef(shape.data(), shape.size()), kFloat, -1, 1);
    Tensor s = x.sum(IntArrayRef(dims.data(), dims.size()));
    EXPECT_TRUE(close(s, naive(x, dims, false, vsum), 1e-5, 1e-3)) << shape[0];
    Tensor xi = make(IntArrayRef(shape.data(), shape.size()), kInt64, 5);
    Tensor si = xi.sum(IntArrayRef(dims.data(), dims.size()));
    EXPECT_TRUE(close(si, naive(xi, dims, false, vsum), 0, 0)) << shape[0];
  }
  Tensor p = make_uniform({50, 40, 300}, kFloat, -1, 1).permute({2, 0, 1});
  EXPECT_TRUE(close(p.sum(1), naive(p, {1}, false, vsum), 1e-5, 1e-4));
  EXPECT_TRUE(close(p.sum(0), naive(p, {0}, false, vsum), 1e-5, 1e-4));
}

// ---- mean -----------------------------------------------------------------------------------

TEST(Mean, FloatDtypesDimsLayouts) {
  for (ScalarType dt : kFloatDtypes) {
    for (const Tensor& x : layouts(dt)) {
      for (const auto& dims : kDimLists) {
        for (bool keepdim : {false, true}) {
          Tensor m = x.mean(IntArrayRef(dims.data(), dims.size()), keepdim);
          EXPECT_EQ(m.dtype(), dt);
          EXPECT_TRUE(close(m, naive(x, dims, keepdim, vmean), tol_for(dt), 1e-3)) << dt;
        }
      }
    }
  }
  Tensor x = make({4, 6}, kFloat);
  EXPECT_TRUE(close(x.mean(), naive(x, {}, false, vmean)));
  EXPECT_TRUE(close(x.mean(1), naive(x, {1}, false, vmean)));
  EXPECT_TRUE(close(mean(x, {0}, true), naive(x, {0}, true, vmean)));
}

TEST(Mean, IntegerNeedsDtype) {
  Tensor i = tensor<int64_t>({1, 2, 4});
  expect_error([&] { i.mean(); }, {"[mean]", "could not infer output dtype", "int64"});
  expect_error([&] { full({2}, true, kBool).mean(); }, {"[mean]", "bool"});
  expect_error([&] { i.mean(kInt64); }, {"[mean]", "Optional dtype must be either a floating point"});
  Tensor m = i.mean(kFloat);
  EXPECT_EQ(m.dtype(), kFloat);
  EXPECT_NEAR(m.item<double>(), 7.0 / 3, 1e-6);
  EXPECT_EQ(tensor<double>({1, 2}, kFloat).mean(kDouble).dtype(), kDouble);
}

TEST(Mean, EmptyIsNan) {
  // torch.zeros(0,3).mean() = nan, .mean(0) = [nan, nan, nan]
  EXPECT_TRUE(std::isnan(zeros({0, 3}).mean().item<double>()));
  Tensor m = zeros({0, 3}).mean(0);
  EXPECT_EQ(shape_of(m), (std::vector<int64_t>{3}));
  EXPECT_TRUE(m.isnan().all().item<bool>());
}

// ---- prod -------------------------------------------------------------------------------------

TEST(Prod, AllDtypes) {
  for (ScalarType dt : kAllDtypes) {
    // small values so products stay exact
    Tensor x = is_floating_point(dt) ? make({2, 3}, dt).remainder(3).add(1) : make({2, 3}, dt);
    Tensor p = x.prod();
    EXPECT_EQ(p.dtype(), is_integral(dt, true) ? kInt64 : dt) << dt;
    EXPECT_TRUE(close(p, naive(x, {}, false, vprod), tol_for(dt), 0)) << dt;
    for (int64_t d : {0, 1, -1})
      for (bool keepdim : {false, true})
        EXPECT_TRUE(close(x.prod(d, keepdim), naive(x, {d}, keepdim, vprod), tol_for(dt), 0)) << dt;
  }
  // torch.tensor([True, False]).prod() = 0 (int64)
  EXPECT_EQ(tensor<bool>({true, false}).prod().item<int64_t>(), 0);
  EXPECT_EQ(tensor<int64_t>({1, 2}).prod(0, false, kFloat).dtype(), kFloat);
  EXPECT_EQ(ones({2, 3}).prod(1, false, kInt32).dtype(), kInt32);
  Tensor t = make({3, 4, 5}, kDouble).transpose(0, 2);
  EXPECT_TRUE(close(t.prod(1), naive(t, {1}, false, vprod), 1e-12, 0));
}

TEST(Prod, EmptyIsOne) {
  Tensor p = zeros({0, 3}).prod(0);
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(zeros({0}, kInt64).prod().item<int64_t>(), 1);
}

// ---- max / min / amax / amin ---------------------------------------------------------------------

TEST(MaxMin, AllDtypesAll) {
  for (ScalarType dt : kAllDtypes) {
    Tensor x = make({3, 7}, dt);
    EXPECT_EQ(x.max().dtype(), dt);
    EXPECT_TRUE(close(x.max(), naive(x, {}, false, vmax), 0, 0)) << dt;
    EXPECT_TRUE(close(x.min(), naive(x, {}, false, vmin), 0, 0)) << dt;
    EXPECT_TRUE(close(x.t().max(), naive(x, {}, false, vmax), 0, 0)) << dt;
  }
  Tensor big = make_uniform({1000, 700}, kFloat, -5, 5, 9);
  EXPECT_TRUE(close(big.max(), naive(big, {}, false, vmax), 0, 0));
  EXPECT_TRUE(close(big.min(), naive(big, {}, false, vmin), 0, 0));
}

TEST(MaxMin, NanPropagates) {
  Tensor x = tensor<double>({1, kNan, 3}, kFloat);
  EXPECT_TRUE(std::isnan(x.max().item<double>()));
  EXPECT_TRUE(std::isnan(x.min().item<double>()));
  EXPECT_TRUE(std::isnan(x.amax(0).item<double>()));
  auto [v, i] = x.max(0);
  EXPECT_TRUE(std::isnan(v.item<double>()));
  EXPECT_EQ(i.item<int64_t>(), 1);
  // NaN in a big row (crossing the parallel chunking)
  std::vector<double> bv(200000, 0.0);
  bv[150001] = kNan;
  Tensor big = tensor(bv, kFloat);
  EXPECT_TRUE(std::isnan(big.max().item<double>()));
  EXPECT_EQ(big.argmax().item<int64_t>(), 150001);
  EXPECT_EQ(big.argmin().item<int64_t>(), 150001);
}

// Note [Vector amax]: rows of every length around the vector path's 4 x lanes
// steps, the best value and a NaN at every position, float and double, rows
// and the whole tensor, against a loop.
TEST(MaxMin, VectorRowsAgainstALoop) {
  set_num_threads(1);
  for (ScalarType dt : {kFloat, kDouble})
    for (int64_t n : {1, 7, 31, 32, 33, 63, 64, 65, 100, 257}) {
      for (int64_t at = 0; at < n; at += (n > 40 ? 7 : 1)) {
        std::vector<double> v(size_t(2 * n));
        for (int64_t i = 0; i < 2 * n; ++i) v[size_t(i)] = double((i * 37) % 23) - 11.5;
        v[size_t(at)] = 100.0;       // row 0's max
        v[size_t(n + at)] = -100.0;  // row 1's min
        Tensor x = tensor(v, {2, n}, kDouble).to(dt);
        const Tensor mx = x.amax({1}), mn = x.amin({1});
        EXPECT_EQ(mx[0].item<double>(), 100.0) << dt << " n " << n << " at " << at;
        EXPECT_EQ(mn[1].item<double>(), -100.0) << dt << " n " << n << " at " << at;
        double m1 = -1e300, m0 = 1e300;
        for (int64_t i = 0; i < n; ++i) m1 = std::max(m1, v[size_t(n + i)]), m0 = std::min(m0, v[size_t(i)]);
        EXPECT_EQ(mx[1].item<double>(), m1);
        EXPECT_EQ(mn[0].item<double>(), m0);
        v[size_t(at)] = kNan;
        Tensor y = tensor(v, {2, n}, kDouble).to(dt);
        EXPECT_TRUE(std::isnan(y.amax({1})[0].item<double>())) << dt << " n " << n << " NaN at " << at;
        EXPECT_TRUE(std::isnan(y.amin({1})[0].item<double>())) << dt << " n " << n << " NaN at " << at;
        EXPECT_FALSE(std::isnan(y.amax({1})[1].item<double>()));
        EXPECT_TRUE(std::isnan(y.max().item<double>()));
      }
    }
  // infinities are values, not NaN
  const Tensor inf = tensor<double>({-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf,
                                     -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf,
                                     -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf},
                                    kFloat);
  EXPECT_EQ(inf.amax().item<double>(), -kInf);
  EXPECT_EQ(inf.amin().item<double>(), -kInf);
}

TEST(MaxMin, EmptyErrors) {
  Tensor e = zeros({0, 3});
  expect_error([&] { e.max(); }, {"[max]", "Expected reduction dim to be specified for input.numel() == 0"});
  expect_error([&] { e.min(); }, {"[min]", "Expected reduction dim to be specified for input.numel() == 0"});
  expect_error([&] { e.amax(); }, {"[amax]", "Expected reduction dim to be specified"});
  expect_error([&] { e.amin(); }, {"[amin]", "Expected reduction dim to be specified"});
  expect_error([&] { e.max(0); }, {"[max]", "Expected reduction dim 0 to have non-zero size"});
  expect_error([&] { e.min(-2); }, {"[min]", "Expected reduction dim 0 to have non-zero size"});
  expect_error([&] { e.amax(0); }, {"[amax]", "Expected reduction dim 0 to have non-zero size"});
  expect_error([&] { zeros({0, 0}).amax(1); }, {"[amax]", "Expected reduction dim 1 to have non-zero size"});
  expect_error([&] { e.argmax(); }, {"[argmax]", "Expected reduction dim to be specified for input.numel() == 0"});
  expect_error([&] { e.argmin(0); }, {"[argmin]", "Expected reduction dim 0 to have non-zero size"});
  // Reducing a non-empty dim of an empty tensor gives an empty result.
  auto [v, i] = e.max(1);
  EXPECT_EQ(shape_of(v), (std::vector<int64_t>{0}));
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(shape_of(e.amax(1)), (std::vector<int64_t>{0}));
  EXPECT_EQ(shape_of(e.argmax(1, true)), (std::vector<int64_t>{0, 1}));
}

TEST(MaxMin, DimValuesAndIndices) {
  for (ScalarType dt : kAllDtypes) {
    for (const Tensor& x : layouts(dt, 11)) {
      for (int64_t d : {0, 1, 2, -1}) {
        for (bool keepdim : {false, true}) {
          auto [v, i] = x.max(d, keepdim);
          EXPECT_EQ(v.dtype(), dt);
          EXPECT_EQ(i.dtype(), kInt64);
          EXPECT_TRUE(close(v, naive(x, {d}, keepdim, vmax), 0, 0)) << dt;
          EXPECT_TRUE(close(i, naive(x, {d}, keepdim, vargmax), 0, 0)) << dt << " d " << d;
          auto [v2, i2] = min(x, d, keepdim);
          EXPECT_TRUE(close(v2, naive(x, {d}, keepdim, vmin), 0, 0)) << dt;
          EXPECT_TRUE(close(i2, naive(x, {d}, keepdim, vargmin), 0, 0)) << dt;
        }
      }
    }
  }
  // Ties pick the first index (torch: tensor([[1,3,3],[2,2,1]]).max(1) = ([3,2], [1,0])).
  Tensor t = tensor<int64_t>({{1, 3, 3}, {2, 2, 1}});
  auto [v, i] = t.max(1);
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  auto [vn, in] = t.min(0);
  EXPECT_EQ(vn.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(in.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
}

TEST(Amax, DimsLists) {
  for (ScalarType dt : {kFloat, kInt32, kHalf, kUInt8, kBool}) {
    for (const Tensor& x : layouts(dt, 5)) {
      for (const auto& dims : kDimLists) {
        for (bool keepdim : {false, true}) {
          IntArrayRef dr(dims.data(), dims.size());
          EXPECT_TRUE(close(x.amax(dr, keepdim), naive(x, dims, keepdim, vmax), 0, 0)) << dt;
          EXPECT_TRUE(close(amin(x, dr, keepdim), naive(x, dims, keepdim, vmin), 0, 0)) << dt;
        }
      }
    }
  }
  Tensor x = make({3, 4}, kFloat);
  EXPECT_TRUE(close(x.amax(1), naive(x, {1}, false, vmax), 0, 0));
  EXPECT_TRUE(close(x.amin(-2, true), naive(x, {0}, true, vmin), 0, 0));
  expect_error([&] { x.amax({0, 0}); }, {"[amax]", "dim 0 appears multiple times in the list of dims"});
  expect_error([&] { x.amax({1, -1}); }, {"[amax]", "dim 1 appears multiple times"});
}

// ---- argmax / argmin ---------------------------------------------------------------------------

TEST(Argmax, FlatIndexAnyLayout) {
  for (ScalarType dt : {kFloat, kInt64, kHalf, kUInt8, kDouble, kInt32, kBFloat16}) {
    for (const Tensor& x : layouts(dt, 21)) {
      // without dim: the index into the row-major flattening, whatever the strides
      EXPECT_EQ(x.argmax().item<int64_t>(), static_cast<int64_t>(naive(x, {}, false, vargmax).item<double>())) << dt;
      EXPECT_EQ(x.argmin().item<int64_t>(), static_cast<int64_t>(naive(x, {}, false, vargmin).item<double>())) << dt;
      for (int64_t d : {0, 1, 2, -2})
        for (bool keepdim : {false, true}) {
          EXPECT_TRUE(close(x.argmax(d, keepdim), naive(x, {d}, keepdim, vargmax), 0, 0)) << dt;
          EXPECT_TRUE(close(argmin(x, d, keepdim), naive(x, {d}, keepdim, vargmin), 0, 0)) << dt;
        }
    }
  }
  // torch.arange(6.).view(2,3).argmax(keepdim=True) has shape (1, 1) and value 5
  Tensor a = arange(6, kFloat).view({2, 3});
  Tensor k = a.argmax(std::nullopt, true);
  EXPECT_EQ(shape_of(k), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(k.item<int64_t>(), 5);
  EXPECT_EQ(a.t().argmax().item<int64_t>(), 5);  // t() is [[0,3],[1,4],[2,5]]: 5 is last
  EXPECT_EQ(a.t().argmin().item<int64_t>(), 0);
  // torch: "argmax_cpu" not implemented for 'Bool' (while max(dim) works on bool)
  Tensor b = tensor<bool>({false, true});
  expect_error([&] { b.argmax(); }, {"[argmax]", "Bool"});
  expect_error([&] { b.argmin(0); }, {"[argmin]", "Bool"});
  EXPECT_EQ(std::get<1>(b.max(0)).item<int64_t>(), 1);
}

TEST(Argmax, TiesAndNan) {
  // torch.tensor([1., nan, 3, nan]).argmax() = 1, .argmin() = 1
  Tensor x = tensor<double>({1, kNan, 3, kNan}, kFloat);
  EXPECT_EQ(x.argmax().item<int64_t>(), 1);
  EXPECT_EQ(x.argmin().item<int64_t>(), 1);
  // Ties across the chunks of a long reduction: the first index wins.
  std::vector<double> bv(300000, 0.0);
  bv[70000] = bv[250000] = 5;
  bv[100000] = bv[260000] = -5;
  Tensor big = tensor(bv, kFloat);
  EXPECT_EQ(big.argmax().item<int64_t>(), 70000);
  EXPECT_EQ(big.argmin().item<int64_t>(), 100000);
  EXPECT_EQ(zeros({1000, 37}).argmax(0).to_vector<int64_t>(), std::vector<int64_t>(37, 0));
  EXPECT_EQ(ones({400000, 2}).argmin(0).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  // Equal values in every lane of a row: first index.
  EXPECT_EQ(full({5, 1000}, -kInf).argmax(1).to_vector<int64_t>(), std::vector<int64_t>(5, 0));
}

TEST(Argmax, LargeParallel) {
  Tensor x = make_uniform({3, 500000}, kFloat, -1, 1, 3);
  EXPECT_TRUE(close(x.argmax(1), naive(x, {1}, false, vargmax), 0, 0));
  EXPECT_TRUE(close(x.argmin(1), naive(x, {1}, false, vargmin), 0, 0));
  Tensor y = make_uniform({500000, 3}, kDouble, -1, 1, 4);
  EXPECT_TRUE(close(y.argmax(0), naive(y, {0}, false, vargmax), 0, 0));
  auto [v, i] = y.min(0);
  EXPECT_TRUE(close(v, naive(y, {0}, false, vmin), 0, 0));
  EXPECT_TRUE(close(i, naive(y, {0}, false, vargmin), 0, 0));
  EXPECT_EQ(y.argmax().item<int64_t>(), static_cast<int64_t>(naive(y, {}, false, vargmax).item<double>()));
}

// ---- var / std -----------------------------------------------------------------------------------

TEST(Var, DimsCorrectionKeepdim) {
  for (ScalarType dt : kFloatDtypes) {
    for (const Tensor& x : layouts(dt, 8)) {
      for (const auto& dims : kDimLists) {
        for (double corr : {0.0, 1.0, 2.0}) {
          for (bool keepdim : {false, true}) {
            Tensor v = x.var(dims, corr, keepdim);
            EXPECT_EQ(v.dtype(), dt);
            Tensor want = naive(x, dims, keepdim, [&](const std::vector<double>& g) { return vvar(g, corr); });
            EXPECT_TRUE(close(v, want, 2 * tol_for(dt), 1e-3)) << dt << " corr " << corr;
            Tensor s = brisk::std(x, dims, corr, keepdim);
            EXPECT_TRUE(close(s, want.sqrt(), 2 * tol_for(dt), 1e-3)) << dt;
          }
        }
      }
    }
  }
  Tensor x = make({4, 5}, kDouble);
  EXPECT_TRUE(close(x.var(), naive(x, {}, false, [](auto& g) { return vvar(g, 1); })));
  EXPECT_TRUE(close(x.var(1), naive(x, {1}, false, [](auto& g) { return vvar(g, 1); })));
  EXPECT_TRUE(close(x.std(0, 0, true), naive(x, {0}, true, [](auto& g) { return std::sqrt(vvar(g, 0)); })));
  EXPECT_TRUE(close(x.var(std::vector<int64_t>{}), x.var()));  // empty list = all dims
}

TEST(Var, TorchValues) {
  // torch.var_mean(torch.tensor([[1.,2.,4.],[3,3,3]]), dim=1, keepdim=True)
  //   = ([[2.3333], [0.]], [[2.3333], [3.]])
  Tensor x = tensor<double>({{1, 2, 4}, {3, 3, 3}}, kFloat);
  auto [v, m] = var_mean(x, std::vector<int64_t>{1}, 1, true);
  EXPECT_EQ(shape_of(v), (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(close(v, tensor<double>({{7.0 / 3}, {0}})));
  EXPECT_TRUE(close(m, tensor<double>({{7.0 / 3}, {3}})));
  // torch.var(torch.tensor([1.,2.,4.]), correction=0) = 1.5556
  EXPECT_NEAR(tensor<double>({1, 2, 4}).var(std::nullopt, 0).item<double>(), 14.0 / 9, 1e-6);
  // correction >= n: torch gives inf (nonzero spread) or nan (zero spread)
  EXPECT_TRUE(std::isinf(tensor<double>({1, 2}).var(std::nullopt, 2).item<double>()));
  EXPECT_TRUE(std::isinf(tensor<double>({1, 2, 4}).var(std::nullopt, 5).item<double>()));
  EXPECT_TRUE(std::isnan(tensor<double>({1, 1}).var(std::nullopt, 2).item<double>()));
  // one element, and no elements: nan
  EXPECT_TRUE(std::isnan(ones({1}).var().item<double>()));
  EXPECT_TRUE(std::isnan(zeros({0}).var().item<double>()));
  Tensor e = zeros({0, 3}).std(0);
  EXPECT_EQ(shape_of(e), (std::vector<int64_t>{3}));
  EXPECT_TRUE(e.isnan().all().item<bool>());
  // half: torch.tensor([[1.,2.,4.],[3,3,3]]).half().var(1) = [2.3340, 0.]
  Tensor h = x.to(kHalf).var(1);
  EXPECT_EQ(h.dtype(), kHalf);
  EXPECT_TRUE(close(h, tensor<double>({2.333984375, 0}), 0, 0));
  // var_mean over everything
  auto [va, ma] = var_mean(x);
  EXPECT_NEAR(va.item<double>(), vvar({1, 2, 4, 3, 3, 3}, 1), 1e-6);
  EXPECT_NEAR(ma.item<double>(), 16.0 / 6, 1e-6);
}

TEST(Var, NumericallyStable) {
  // Large offset, small spread: a one-pass sum-of-squares formula loses all
  // digits in float32; the two-pass algorithm keeps them.
  const int64_t n = 1'000'000;
  Tensor noise = make_uniform({n}, kDouble, -1, 1, 13);
  Tensor xd = noise.add(1e4);
  Tensor x = xd.to(kFloat);
  const double want = naive(x, {}, false, [](auto& g) { return vvar(g, 1); }).item<double>();
  EXPECT_NEAR(x.var().item<double>() / want, 1.0, 1e-4);
  EXPECT_NEAR(x.std().item<double>() / std::sqrt(want), 1.0, 1e-4);
  // constant input: 0 (a one-pass or uncorrected two-pass float algorithm leaves ~1e-12)
  EXPECT_NEAR(full({100001}, 3.3, kFloat).var().item<double>(), 0.0, 1e-18);
  EXPECT_NEAR(full({1000, 1001}, 3.3, kFloat).var(0).max().item<double>(), 0.0, 1e-18);
  // along columns (tile path) and in parallel
  Tensor c = x.view({n / 4, 4});
  EXPECT_TRUE(close(c.var(0), naive(c, {0}, false, [](auto& g) { return vvar(g, 1); }), 1e-4, 0));
  Tensor r = make_uniform({2000, 300}, kFloat, -3, 3, 5);
  EXPECT_TRUE(close(r.var(1), naive(r, {1}, false, [](auto& g) { return vvar(g, 1); }), 1e-5, 1e-6));
}

// Regression (difffuzz reduce:var/std/var_mean nan/inf): the sums were in
// float for float32 and bfloat16, so a deviation of 1e30 overflowed its
// square (std inf, var NaN from inf - inf); PyTorch's CPU kernel sums in double.
TEST(Var, AccumulatesInDouble) {
  const Tensor x = tensor<double>({{0.09022081643342972, -0.7657918930053711, 0.6935693025588989, 3e38},
                                   {1e30, 2e30, -5e29, 2.0}},
                                  kFloat);
  // torch 2.15: var [inf, inf], std [1.5000000027e+38, 1.1086779128e+30], var_mean's mean [7.5000000137e+37, 6.2499999052e+29]
  EXPECT_TRUE(close(x.var(1), tensor<double>({kInf, kInf}), 0, 0));
  EXPECT_TRUE(close(x.std(1), tensor<double>({1.5000000027e+38, 1.1086779128e+30}), 1e-6, 0));
  EXPECT_TRUE(close(std::get<1>(var_mean(x, std::vector<int64_t>{1})), tensor<double>({7.5000000137e+37, 6.2499999052e+29}),
                    1e-6, 0));
  // bfloat16: std [1.5020276352e+38, 1.1091942752e+30], mean [7.5101381762e+37, 6.2392177980e+29]
  const Tensor xb = x.to(kBFloat16);
  EXPECT_TRUE(close(xb.std(1), tensor<double>({1.5020276352e+38, 1.1091942752e+30}), 1e-9, 0));
  EXPECT_TRUE(close(std::get<1>(var_mean(xb, std::vector<int64_t>{1})), tensor<double>({7.5101381762e+37, 6.2392177980e+29}),
                    1e-9, 0));
  EXPECT_TRUE(close(xb.var(1), tensor<double>({kInf, kInf}), 0, 0));
}

// Torch bugs (tools/fuzz TORCH_BUGS): var_mean's mean of [1, inf, 2] is NaN in
// torch (its Welford update takes inf - inf) where torch.mean gives inf; and
// std over all elements of float32 takes torch's float32 mean first, whose sum
// overflows: std([3e38, 3e38, 3e38, 1, -1]) is inf in torch, 1.6431676502e+38
// (its float64 value, rounded) in brisk.
TEST(Var, InfiniteMeanAndOverflowingSum) {
  auto [v, m] = var_mean(tensor<double>({1, kInf, 2}, kFloat));
  EXPECT_TRUE(std::isnan(v.item<double>()));
  EXPECT_EQ(m.item<double>(), kInf);
  const Tensor x = tensor<double>({3e38, 3e38, 3e38, 1, -1}, kFloat);
  EXPECT_NEAR(x.std().item<double>() / 1.6431676502e+38, 1.0, 1e-7);
}

TEST(Var, Errors) {
  expect_error([] { tensor<int64_t>({1, 2}).var(); }, {"[var]", "std and var only support floating point"});
  expect_error([] { tensor<int64_t>({1, 2}).std(); }, {"[std]", "floating point"});
  expect_error([] { ones({2, 3}).var(2); }, {"[var]", "dimension out of range", "got 2"});
  expect_error([] { var_mean(ones({2, 3}), std::vector<int64_t>{0, -2}); }, {"[var_mean]", "appears multiple times"});
}

// ---- norm --------------------------------------------------------------------------------------

TEST(Norm, AllP) {
  const std::vector<double> ps = {2, 1, 0, kInf, -kInf, 3, 0.5, -1, -2};
  auto ref = [](double p) {
    return [p](const std::vector<double>& g) {
      if (g.empty()) return 0.0;
      if (p == kInf) {
        double m = 0;
        for (double x : g) m = std::max(m, std::abs(x));
        return m;
      }
      if (p == -kInf) {
        double m = kInf;
        for (double x : g) m = std::min(m, std::abs(x));
        return m;
      }
      if (p == 0) {
        double c = 0;
        for (double x : g) c += x != 0;
        return c;
      }
      double s = 0;
      for (double x : g) s += std::pow(std::abs(x), p);
      return std::pow(s, 1 / p);
    };
  };
  for (ScalarType dt : kFloatDtypes) {
    for (const Tensor& x : layouts(dt, 17)) {
      for (double p : ps) {
        for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {0}, {-1}, {0, 2}}) {
          for (bool keepdim : {false, true}) {
            Tensor n = x.norm(p, IntArrayRef(dims.data(), dims.size()), keepdim);
            EXPECT_EQ(n.dtype(), dt);
            EXPECT_TRUE(close(n, naive(x, dims, keepdim, ref(p)), 2 * tol_for(dt), 1e-4)) << dt << " p " << p;
          }
        }
      }
    }
  }
  // torch values: tensor([[1.,-2.,4.],[3,0,3]]).norm(0.5, [0]) = [7.4641, 2, 13.9282]
  Tensor t = tensor<double>({{1, -2, 4}, {3, 0, 3}}, kFloat);
  EXPECT_TRUE(close(t.norm(0.5, {0}), tensor<double>({7.4641016, 2, 13.9282032})));
  EXPECT_TRUE(close(t.norm(-1, {0}), tensor<double>({0.75, 0, 1.7142857})));
  EXPECT_TRUE(close(t.norm(0, {1}), tensor<double>({3, 2})));
  EXPECT_TRUE(close(t.norm(-kInf, {1}), tensor<double>({1, 0})));
  EXPECT_TRUE(close(t.norm(kInf, {1}, true), tensor<double>({{4}, {3}})));
  EXPECT_NEAR(t.norm().item<double>(), std::sqrt(39.0), 1e-6);
  EXPECT_NEAR(norm(t).item<double>(), std::sqrt(39.0), 1e-6);
  // torch.tensor([[1.,2.,4.],[3,3,3]]).half().norm() = 6.9297
  EXPECT_NEAR(tensor<double>({{1, 2, 4}, {3, 3, 3}}, kHalf).norm().item<double>(), 6.9297, 1e-3);
  // NaN propagates in the inf norm; empty norms are 0 for p >= 0 finite, and
  // refused for p < 0 or p = inf, which have no identity (torch 2.x; 1.13 gave 0)
  EXPECT_TRUE(std::isnan(tensor<double>({kNan, 1}).norm(kInf).item<double>()));
  for (double p : ps) {
    if (p < 0 || p == kInf)
      expect_error([&] { zeros({0}).norm(p); }, {"[norm]", "does not have an identity"});
    else
      EXPECT_EQ(zeros({0}).norm(p).item<double>(), 0.0) << p;
  }
  EXPECT_TRUE(close(zeros({0, 3}).norm(2, {0}), zeros({3})));
  // large, parallel
  Tensor big = make_uniform({3, 300000}, kFloat, -1, 1);
  EXPECT_TRUE(close(big.norm(2, {1}), naive(big, {1}, false, ref(2)), 1e-5, 0));
  EXPECT_TRUE(close(big.norm(1), naive(big, {}, false, ref(1)), 1e-5, 0));
}

// A norm over size-1 dims is |x| exactly (as torch 2.15 gives it), where
// |x|^p would overflow or underflow float32 (found by the differential fuzzer).
TEST(Norm, OneElementPerOutputIsTheAbsoluteValue) {
  const Tensor x = tensor({1e30f, -2.0f, 1e-30f, -3e38f}, kFloat).view({1, 4});
  for (double p : {3.0, 2.0, 1.0, 0.5, -1.0, kInf, -kInf}) {
    const Tensor n = x.norm(p, {0});
    EXPECT_EQ(n.dtype(), kFloat);
    EXPECT_EQ(n.sizes(), IntArrayRef({4}));
    EXPECT_TRUE(n.equal(x.abs().view({4}))) << "p = " << p;
    EXPECT_EQ(x.norm(p, {0}, /*keepdim=*/true).sizes(), IntArrayRef({1, 4})) << p;
  }
  EXPECT_TRUE(x.norm(0, {0}).equal(tensor({1.0f, 1.0f, 1.0f, 1.0f})));
  EXPECT_EQ(tensor({3e38f}).norm(2).item<float>(), 3e38f);                  // all dims, one element
  EXPECT_EQ(tensor({-7.0}, kDouble).reshape({}).norm(2).item<double>(), 7.0);  // 0-dim
  // and its gradient is the sign, as the general formula gives
  Tensor y = tensor({-2.0, 5.0}, kDouble).view({2, 1}).requires_grad_(true);
  y.norm(3, {1}).sum().backward();
  EXPECT_TRUE(y.grad().equal(tensor({-1.0, 1.0}, kDouble).view({2, 1})));
  // a bfloat16 input keeps its dtype
  EXPECT_EQ(x.to(kBFloat16).norm(2, {0}).dtype(), kBFloat16);
}

// A product whose partial products leave the float range in some order
// (found by the differential fuzzer, seed 31): the true product is about
// -60, and PyTorch's sequential loop gets it; brisk's lanes made inf x 0 = NaN
// until products of float inputs accumulated in double.
TEST(Prod, PartialProductsOutOfFloatRange) {
  const std::vector<double> v = {-2.1875, -3.046875, -1.0, -0.224609375, -0.2890625, 2.828125, -9.98402083170343e-31,
                                 -0.8203125, 1.0002555517425873e+30, 1.1171875, -9.98402083170343e-31, -1.0,
                                 -1.2734375, -0.78125, 1.0011717677116394e-07, 1.609375, 1.1171875,
                                 3.00405527047391e+38};
  for (ScalarType dt : {kBFloat16, kFloat}) {
    const Tensor x = tensor(v, kDouble).to(dt);
    double want = 1;
    for (double e : x.to(kDouble).to_vector<double>()) want *= e;  // exact enough in double
    EXPECT_NEAR(x.prod().to(kDouble).item<double>(), want, std::fabs(want) * (dt == kFloat ? 1e-6 : 1e-2)) << dt;
    EXPECT_NEAR(x.view({2, 9}).prod(1).to(kDouble).to_vector<double>()[0] *
                    x.view({2, 9}).prod(1).to(kDouble).to_vector<double>()[1],
                want, std::fabs(want) * 2e-2)
        << dt;
  }
}

// Note [Vector prod]: rows long enough for the vector accumulators (64
// floats or doubles a step) and a tail, against the product in long
// double; a row holding a zero and an inf is NaN, one with a NaN is NaN,
// partial products past the float range stay finite in double.
TEST(Prod, LongRowsInVectors) {
  set_num_threads(1);
  manual_seed(11);
  for (ScalarType dt : {kFloat, kDouble}) {
    for (int64_t n : {64, 129, 1000, 1031}) {
      Tensor x = (rand({5, n}, TensorOptions(kDouble)) * 0.2 + 0.9).to(dt);  // products of order 1e-3..1e3
      {
        NoGradGuard ng;
        x[1][n / 2].fill_(0.0);
        x[1][n - 1].fill_(std::numeric_limits<double>::infinity());
        x[2][n - 3].fill_(std::numeric_limits<double>::quiet_NaN());
        x[3].narrow(0, 0, 4).fill_(dt == kFloat ? 1e30 : 1e300);  // 1e120 (float32) or inf (float64) partials
        x[3].narrow(0, 4, 4).fill_(dt == kFloat ? 1e-30 : 1e-300);
      }
      const Tensor p = x.prod(1).to(kDouble);
      const Tensor xd = x.to(kDouble);
      for (int64_t r = 0; r < 5; ++r) {
        long double want = 1;
        for (int64_t i = 0; i < n; ++i) want *= static_cast<long double>(xd[r][i].item<double>());
        const double got = p[r].item<double>();
        if (r == 1 || r == 2) {
          EXPECT_TRUE(std::isnan(got)) << dt << " n " << n << " row " << r;
          continue;
        }
        if (dt == kDouble && r == 3) continue;  // 1e300^4 overflows double in any order
        const double tol = (dt == kFloat ? 1e-6 : 1e-12) * std::fabs(double(want));
        EXPECT_NEAR(got, double(want), tol) << dt << " n " << n << " row " << r;
      }
    }
  }
}

TEST(Norm, Errors) {
  expect_error([] { tensor<int64_t>({1, 2}).norm(); }, {"[norm]", "floating point", "int64"});
  expect_error([] { tensor<bool>({true}).norm(); }, {"[norm]", "bool"});
  expect_error([] { ones({2}).norm(2, {1}); }, {"[norm]", "dimension out of range"});
}

// ---- logsumexp ------------------------------------------------------------------------------------

TEST(Logsumexp, MatchesNaiveAndStable) {
  auto ref = [](const std::vector<double>& g) {
    double s = 0;
    for (double x : g) s += std::exp(x);
    return std::log(s);
  };
  for (ScalarType dt : {kFloat, kDouble}) {
    for (const Tensor& x : layouts(dt, 4)) {
      for (const auto& dims : std::vector<std::vector<int64_t>>{{0}, {-1}, {0, 2}, {}}) {
        for (bool keepdim : {false, true}) {
          Tensor l = x.logsumexp(IntArrayRef(dims.data(), dims.size()), keepdim);
          EXPECT_EQ(l.dtype(), dt);
          EXPECT_TRUE(close(l, naive(x, dims, keepdim, ref), 1e-5, 1e-5));
        }
      }
    }
  }
  // large values do not overflow: log(e^1000 + e^1000) = 1000 + log 2
  Tensor big = tensor<double>({1000, 1000}, kFloat);
  EXPECT_NEAR(big.logsumexp(0).item<double>(), 1000 + std::log(2.0), 1e-3);
  EXPECT_NEAR(tensor<double>({-1000, -1000}).logsumexp(0).item<double>(), -1000 + std::log(2.0), 1e-3);
  // torch: [inf, 1] -> inf, [-inf, -inf] -> -inf, [nan, 1] -> nan, [inf, -inf] -> inf
  EXPECT_EQ(tensor<double>({kInf, 1}).logsumexp(0).item<double>(), kInf);
  EXPECT_EQ(tensor<double>({-kInf, -kInf}).logsumexp(0).item<double>(), -kInf);
  EXPECT_TRUE(std::isnan(tensor<double>({kNan, 1}).logsumexp(0).item<double>()));
  EXPECT_EQ(tensor<double>({kInf, -kInf}).logsumexp(0).item<double>(), kInf);
  // integers compute in float: torch.tensor([1,2]).logsumexp(0) = 2.3133
  Tensor li = tensor<int64_t>({1, 2}).logsumexp(0);
  EXPECT_EQ(li.dtype(), kFloat);
  EXPECT_NEAR(li.item<double>(), 2.3132617, 1e-6);
  EXPECT_NEAR(tensor<bool>({true, false}).logsumexp(0).item<double>(), 1.3132617, 1e-6);
  // empty: torch.zeros(0,3).logsumexp(0) = [-inf]*3, logsumexp(1) has shape (0,)
  EXPECT_EQ(zeros({0, 3}).logsumexp(0).to_vector<double>(), std::vector<double>(3, -kInf));
  EXPECT_EQ(shape_of(zeros({0, 3}).logsumexp(1)), (std::vector<int64_t>{0}));
  expect_error([] { ones({2}).logsumexp(1); }, {"[logsumexp]", "dimension out of range"});
}

// ---- softmax / log_softmax -------------------------------------------------------------------------

namespace {
// Naive softmax along dim of x (double).
Tensor naive_softmax(const Tensor& x, int64_t dim, bool log) {
  Tensor xc = x.to(kDouble).contiguous();
  std::vector<double> v = xc.to_vector<double>(), out(v.size());
  const int64_t nd = x.dim();
  dim = dim < 0 ? dim + nd : dim;
  int64_t outer = 1, n = nd ? x.size(dim) : 1, inner = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (d < dim) outer *= x.size(d);
    if (d > dim) inner *= x.size(d);
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      double m = -kInf, s = 0;
      for (int64_t r = 0; r < n; ++r) m = std::max(m, v[(o * n + r) * inner + j]);
      for (int64_t r = 0; r < n; ++r) s += std::exp(v[(o * n + r) * inner + j] - m);
      for (int64_t r = 0; r < n; ++r) {
        const size_t k = (o * n + r) * inner + j;
        out[k] = log ? v[k] - m - std::log(s) : std::exp(v[k] - m) / s;
      }
    }
  return tensor(out, x.sizes(), kDouble);
}
}  // namespace

TEST(Softmax, EveryDimAndLayout) {
  for (ScalarType dt : kFloatDtypes) {
    for (const Tensor& x : layouts(dt, 31)) {
      for (int64_t d : {0, 1, 2, -1}) {
        Tensor s = x.softmax(d);
        EXPECT_EQ(s.dtype(), dt);
        EXPECT_TRUE(close(s, naive_softmax(x, d, false), 2 * tol_for(dt), 1e-6)) << dt << " dim " << d;
        Tensor l = log_softmax(x, d);
        EXPECT_TRUE(close(l, naive_softmax(x, d, true), 2 * tol_for(dt), 2 * tol_for(dt))) << dt << " dim " << d;
      }
    }
  }
  // Rows of 1000 and columns of 1000 (tile path), in parallel, inputs over a
  // wide range (exp underflows for some), every float dtype.
  for (ScalarType dt : kFloatDtypes) {
    Tensor x = make_uniform({64, 1000}, dt, -100, 100);
    const double tol = 2 * tol_for(dt);
    EXPECT_TRUE(close(x.softmax(1), naive_softmax(x, 1, false), tol, 1e-7)) << dt;
    EXPECT_TRUE(close(x.softmax(0), naive_softmax(x, 0, false), tol, 1e-7)) << dt;
    EXPECT_TRUE(close(x.log_softmax(1), naive_softmax(x, 1, true), tol, tol)) << dt;
    EXPECT_TRUE(close(x.log_softmax(0), naive_softmax(x, 0, true), tol, tol)) << dt;
    EXPECT_TRUE(close(x.softmax(1).sum(1), ones({64}), tol, 0)) << dt;
  }
  Tensor x = make_uniform({300, 257}, kFloat, -5, 5);
  EXPECT_TRUE(close(x.softmax(0), naive_softmax(x, 0, false), 1e-5, 1e-7));
  EXPECT_TRUE(close(x.t().log_softmax(1), naive_softmax(x.t(), 1, true), 1e-5, 1e-5));
}

TEST(Softmax, DtypeStabilityAndEdges) {
  // Large inputs do not overflow.
  Tensor big = tensor<double>({1000, 1001, 1002}, kFloat);
  // torch.tensor([1000., 1001, 1002]).softmax(0) = [0.0900, 0.2447, 0.6652]
  EXPECT_TRUE(close(big.softmax(0), tensor<double>({0.09003057, 0.24472847, 0.66524096}), 1e-5));
  EXPECT_TRUE(close(big.log_softmax(0), tensor<double>({-2.40760596, -1.40760596, -0.40760596}), 1e-5));
  // dtype argument converts first: torch.tensor([1,2]).softmax(0, dtype=torch.float64) = [0.2689, 0.7311]
  Tensor s = tensor<int64_t>({1, 2}).softmax(0, kDouble);
  EXPECT_EQ(s.dtype(), kDouble);
  EXPECT_TRUE(close(s, tensor<double>({0.2689414213699951, 0.7310585786300049}, kDouble), 1e-12));
  EXPECT_EQ(ones({3}).softmax(0, kHalf).dtype(), kHalf);
  expect_error([] { tensor<int64_t>({1, 2}).softmax(0); }, {"[softmax]", "floating point", "int64"});
  expect_error([] { tensor<int64_t>({1, 2}).log_softmax(0); }, {"[log_softmax]", "floating point"});
  expect_error([] { ones({1, 3}).softmax(2); }, {"[softmax]", "dimension out of range", "got 2"});
  // torch: all -inf -> nan; +inf -> nan
  EXPECT_TRUE(tensor<double>({-kInf, -kInf}).softmax(0).isnan().all().item<bool>());
  EXPECT_TRUE(tensor<double>({-kInf, -kInf}).log_softmax(0).isnan().all().item<bool>());
  EXPECT_TRUE(tensor<double>({kInf, 1}).softmax(0).isnan().all().item<bool>());
  // -inf entries get probability 0 (log: -inf); NaN spreads over its row
  EXPECT_TRUE(close(tensor<double>({-kInf, 0}).softmax(0), tensor<double>({0, 1})));
  EXPECT_EQ(tensor<double>({-kInf, 0}).log_softmax(0).to_vector<double>(), (std::vector<double>{-kInf, 0}));
  Tensor nan_row = tensor<double>({{1, kNan}, {1, 2}}).softmax(1);
  EXPECT_TRUE(nan_row.select(0, 0).isnan().all().item<bool>());
  EXPECT_TRUE(close(nan_row.select(0, 1), tensor<double>({0.26894142, 0.73105858})));
  // 0-dim and empty
  EXPECT_EQ(scalar_tensor(3.0).softmax(0).item<double>(), 1.0);
  EXPECT_EQ(scalar_tensor(3.0).log_softmax(-1).item<double>(), 0.0);
  EXPECT_EQ(shape_of(zeros({0, 3}).softmax(0)), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(shape_of(zeros({0, 3}).log_softmax(1)), (std::vector<int64_t>{0, 3}));
}

// ---- cumsum / cumprod -----------------------------------------------------------------------------

namespace {
Tensor naive_scan(const Tensor& x, int64_t dim, bool prod) {
  std::vector<double> v = x.to(kDouble).contiguous().to_vector<double>(), out(v.size());
  const int64_t nd = x.dim();
  dim = dim < 0 ? dim + nd : dim;
  int64_t outer = 1, n = nd ? x.size(dim) : 1, inner = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (d < dim) outer *= x.size(d);
    if (d > dim) inner *= x.size(d);
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      double a = prod ? 1 : 0;
      for (int64_t r = 0; r < n; ++r) {
        const size_t k = (o * n + r) * inner + j;
        a = prod ? a * v[k] : a + v[k];
        out[k] = a;
      }
    }
  return tensor(out, x.sizes(), kDouble);
}
}  // namespace

TEST(Cumsum, DtypesDimsLayouts) {
  for (ScalarType dt : kAllDtypes) {
    for (const Tensor& x : layouts(dt, 41)) {
      for (int64_t d : {0, 1, 2, -1}) {
        Tensor c = x.cumsum(d);
        EXPECT_EQ(c.dtype(), is_integral(dt, true) ? kInt64 : dt) << dt;
        EXPECT_EQ(shape_of(c), shape_of(x));
        EXPECT_TRUE(close(c, naive_scan(x, d, false), tol_for(dt), tol_for(dt) * 8)) << dt << " dim " << d;
        // small factors so products stay representable
        Tensor xs = is_floating_point(dt) ? x.remainder(2).add(0.5) : x.remainder(3);
        Tensor p = cumprod(xs, d);
        EXPECT_EQ(p.dtype(), is_integral(dt, true) ? kInt64 : dt) << dt;
        EXPECT_TRUE(close(p, naive_scan(xs, d, true), 2 * tol_for(dt), 1e-6)) << dt << " dim " << d;
      }
    }
  }
  // torch: tensor([1,2], dtype=int32).cumsum(0) = [1, 3] int64; bools count
  EXPECT_EQ(tensor<int64_t>({1, 2}).to(kInt32).cumsum(0).dtype(), kInt64);
  EXPECT_EQ(tensor<bool>({true, true}).cumsum(0).to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(tensor<bool>({true, true}).cumprod(0).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  // dtype argument: torch.tensor([1., 2.]).cumsum(0, dtype=torch.int32) = [1, 3] int32
  Tensor c32 = tensor<double>({1.5, 2.5}).cumsum(0, kInt32);
  EXPECT_EQ(c32.dtype(), kInt32);
  EXPECT_EQ(c32.to_vector<int64_t>(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(tensor<int64_t>({1, 2, 3}).cumprod(0, kDouble).to_vector<double>(), (std::vector<double>{1, 2, 6}));
  // float cumsum accumulates in double: 1e8 + 1 - 1e8 ... stays exact in the running value
  Tensor f = tensor<double>({1e8, 1, -1e8, 1}, kFloat).cumsum(0);
  EXPECT_EQ(f.to_vector<double>(), (std::vector<double>{1e8, 1e8, 1, 2}));
  // 0-dim and empty
  EXPECT_EQ(scalar_tensor(3.0).cumsum(0).item<double>(), 3.0);
  EXPECT_EQ(scalar_tensor(3.0).cumprod(-1).dim(), 0);
  EXPECT_EQ(shape_of(zeros({0, 3}).cumsum(0)), (std::vector<int64_t>{0, 3}));
  expect_error([] { ones({1, 3}).cumsum(-3); }, {"[cumsum]", "dimension out of range", "got -3"});
  expect_error([] { ones({1, 3}).cumprod(2); }, {"[cumprod]", "dimension out of range"});
  // large, parallel
  Tensor big = make({300, 2000}, kInt64, 9);
  EXPECT_TRUE(close(big.cumsum(1), naive_scan(big, 1, false), 0, 0));
  EXPECT_TRUE(close(big.cumsum(0), naive_scan(big, 0, false), 0, 0));
}

// ---- all / any -----------------------------------------------------------------------------------

TEST(AllAny, DtypesDims) {
  for (ScalarType dt : kAllDtypes) {
    for (const Tensor& x : layouts(dt, 51)) {
      const ScalarType out = dt == kUInt8 ? kUInt8 : kBool;  // uint8 stays uint8, as in PyTorch
      EXPECT_EQ(x.all().dtype(), out);
      EXPECT_EQ(x.any().dtype(), out);
      auto all_ref = [](const std::vector<double>& g) {
        for (double v : g)
          if (v == 0) return 0.0;
        return 1.0;
      };
      auto any_ref = [](const std::vector<double>& g) {
        for (double v : g)
          if (v != 0) return 1.0;
        return 0.0;
      };
      EXPECT_TRUE(close(x.all(), naive(x, {}, false, all_ref), 0, 0)) << dt;
      EXPECT_TRUE(close(x.any(), naive(x, {}, false, any_ref), 0, 0)) << dt;
      for (int64_t d : {0, 1, 2, -1})
        for (bool keepdim : {false, true}) {
          EXPECT_TRUE(close(x.all(d, keepdim), naive(x, {d}, keepdim, all_ref), 0, 0)) << dt;
          EXPECT_TRUE(close(any(x, d, keepdim), naive(x, {d}, keepdim, any_ref), 0, 0)) << dt;
        }
    }
  }
  // NaN is true; -0.0 is false
  EXPECT_TRUE(tensor<double>({1, kNan}).all().item<bool>());
  EXPECT_FALSE(tensor<double>({-0.0, 0.0}).any().item<bool>());
  // empty: all -> true, any -> false
  EXPECT_TRUE(zeros({0, 3}).all().item<bool>());
  EXPECT_FALSE(zeros({0, 3}).any().item<bool>());
  EXPECT_EQ(zeros({0, 3}).all(0).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 1}));
  // torch.tensor([2, 0]).any(0, keepdim=True) = [True]
  Tensor a = tensor<int64_t>({2, 0}).any(0, true);
  EXPECT_EQ(shape_of(a), (std::vector<int64_t>{1}));
  EXPECT_TRUE(a.item<bool>());
  // long rows: a single false at the end
  std::vector<bool> bv(600000, true);
  bv[399999] = false;
  Tensor big = tensor(bv, {3, 200000});
  EXPECT_EQ(big.all(1).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_FALSE(big.all().item<bool>());
  expect_error([] { ones({2}).all(1); }, {"[all]", "dimension out of range"});
  expect_error([] { ones({2}).any(-2); }, {"[any]", "dimension out of range"});
}

// ---- shapes: 0-dim tensors, errors ----------------------------------------------------------------

TEST(Reduce, ZeroDimTensor) {
  // torch.tensor(3.).sum(0) = 3 with shape (); dims 0 and -1 both work
  Tensor s = scalar_tensor(3.0);
  EXPECT_EQ(s.sum(0).dim(), 0);
  EXPECT_EQ(s.sum(0).item<double>(), 3.0);
  EXPECT_EQ(s.sum(-1, true).dim(), 0);
  EXPECT_EQ(s.mean(0).item<double>(), 3.0);
  EXPECT_EQ(s.prod(0).item<double>(), 3.0);
  auto [v, i] = s.max(0);
  EXPECT_EQ(v.item<double>(), 3.0);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(i.dim(), 0);
  EXPECT_EQ(s.argmax(0).item<int64_t>(), 0);
  EXPECT_EQ(s.argmin().item<int64_t>(), 0);
  EXPECT_EQ(s.amax(0).item<double>(), 3.0);
  EXPECT_TRUE(std::isnan(s.var(0).item<double>()));  // one element
  EXPECT_EQ(s.norm(2, {0}).item<double>(), 3.0);
  EXPECT_EQ(s.logsumexp(0).item<double>(), 3.0);
  EXPECT_TRUE(s.all(0).item<bool>());
  expect_error([&] { s.sum(1); }, {"[sum]", "dimension out of range (expected to be in range of [-1, 0], but got 1)"});
  expect_error([&] { s.sum({0, -1}); }, {"[sum]", "dim 0 appears multiple times"});
}

TEST(Reduce, DimErrors) {
  Tensor x = ones({2, 3});
  expect_error([&] { x.sum(2); }, {"[sum]", "dimension out of range (expected to be in range of [-2, 1], but got 2)"});
  expect_error([&] { x.sum({0, 0}); }, {"[sum]", "dim 0 appears multiple times in the list of dims"});
  expect_error([&] { x.sum({0, -2}); }, {"[sum]", "dim 0 appears multiple times"});
  expect_error([&] { x.mean(-3); }, {"[mean]", "dimension out of range"});
  expect_error([&] { x.prod(5); }, {"[prod]", "dimension out of range", "got 5"});
  expect_error([&] { x.max(5); }, {"[max]", "dimension out of range"});
  expect_error([&] { x.min(-3); }, {"[min]", "dimension out of range"});
  expect_error([&] { x.argmax(2); }, {"[argmax]", "dimension out of range"});
  expect_error([&] { x.argmin(-5); }, {"[argmin]", "dimension out of range"});
  expect_error([&] { x.amin(7); }, {"[amin]", "dimension out of range"});
}

TEST(Reduce, ZeroSizeInputs) {
  Tensor e = zeros({0, 3});
  EXPECT_EQ(e.sum(0).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(shape_of(e.sum(1)), (std::vector<int64_t>{0}));
  EXPECT_EQ(e.sum().item<double>(), 0.0);
  EXPECT_EQ(zeros({0}, kInt32).sum().dtype(), kInt64);
  EXPECT_EQ(shape_of(zeros({2, 0, 3}).sum(1, true)), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(zeros({2, 0, 3}).sum(1, true).to_vector<float>(), std::vector<float>(6, 0));
  EXPECT_EQ(shape_of(zeros({2, 0, 3}).amax(2)), (std::vector<int64_t>{2, 0}));
}

TEST(Reduce, ResultsDoNotAliasInputs) {
  // A reduction that reduces nothing (size-1 dims) still returns a new tensor.
  Tensor x = make({3, 1}, kFloat);
  Tensor s = x.sum(1, true);
  EXPECT_FALSE(s.is_alias_of(x));
  EXPECT_TRUE(close(s, x));
  Tensor m = x.amax(1);
  EXPECT_TRUE(close(m, x.view({3})));
}

// Reductions over the leading dim of few, wide tiles split the rows into
// chunks whose partial results merge pairwise, all lanes at once (reduce_loop).
// Against loops: sums of small integers (exact in float32), max/argmax with
// ties (the first index wins), a NaN in a late chunk, and sums of random
// values that do not depend on the thread count. Shapes: 32 chunks of a
// 1024-wide tile, 4 of a 37-wide tile (an uneven pairwise tree), and a tile
// narrower than the tensor (2 tiles).
TEST(Reduce, ChunkedLeadingDimMergesInOrder) {
  const int threads = get_num_threads();
  for (auto [n, inner] : {std::pair<int64_t, int64_t>{1024, 1024}, {3000, 37}, {96, 1500}}) {
    std::vector<double> v(static_cast<size_t>(n * inner));
    for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 7919 + i / 5) % 11) - 5.0;
    const Tensor x = tensor(v, {n, inner}, kDouble).to(kFloat);
    set_num_threads(1);
    const Tensor s = x.sum({0}).to(kDouble), mx = x.amax({0}).to(kDouble);
    auto [vals, idx] = x.max(0);
    const Tensor am = x.argmax(0);
    for (int64_t j = 0; j < inner; ++j) {
      double want_s = 0, want_m = -1e300;
      int64_t want_i = 0;
      for (int64_t r = 0; r < n; ++r) {
        const double e = v[size_t(r * inner + j)];
        want_s += e;
        if (e > want_m) want_m = e, want_i = r;
      }
      ASSERT_EQ(s[j].item<double>(), want_s) << n << "x" << inner << " lane " << j;
      ASSERT_EQ(mx[j].item<double>(), want_m) << n << "x" << inner << " lane " << j;
      ASSERT_EQ(idx[j].item<int64_t>(), want_i) << n << "x" << inner << " lane " << j;
      ASSERT_EQ(am[j].item<int64_t>(), want_i) << n << "x" << inner << " lane " << j;
    }
    // a NaN in the last rows of one lane
    Tensor y = x.clone();
    y[n - 2][inner / 2].fill_(kNan);
    const Tensor ym = y.amax({0});
    EXPECT_TRUE(std::isnan(ym[inner / 2].item<double>()));
    EXPECT_EQ(y.argmax(0)[inner / 2].item<int64_t>(), n - 2);
    EXPECT_FALSE(std::isnan(ym[inner / 2 == 0 ? 1 : 0].item<double>()));
    // random sums: the same bits on one thread and two
    manual_seed(5);
    const Tensor z = randn({n, inner});
    const Tensor z1 = z.sum({0});
    set_num_threads(2);
    EXPECT_TRUE(equal(z.sum({0}), z1)) << n << "x" << inner;
    EXPECT_TRUE(close(z1.to(kDouble), z.to(kDouble).sum({0}), 1e-4, 1e-4));
  }
  set_num_threads(threads);
}
