// Random number generation: the Philox stream, seeding, reproducibility,
// independence from the thread count, distribution statistics (fixed seeds,
// generous bounds), dtypes, in-place fills of views, and errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "core/generator.h"
#include "core/philox.h"
#include "ops/sampling.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::expect_error;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Moments {
  double mean = 0, var = 0, min = 0, max = 0;
};
Moments moments(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  Moments m;
  m.min = *std::min_element(v.begin(), v.end());
  m.max = *std::max_element(v.begin(), v.end());
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

// Restores the thread count when a test ends.
struct ThreadGuard {
  int saved = get_num_threads();
  ~ThreadGuard() { set_num_threads(saved); }
};

}  // namespace

// Runs first in its own process under CTest (and first in file order otherwise).
TEST(Random, DefaultSeedIsFixed) { EXPECT_EQ(initial_seed(), 67280421310721ull); }

TEST(Random, PhiloxKnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    uint32_t out[4];
    philox::philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], k.out[i]) << "lane " << i;
  }
}

TEST(Random, ManualSeedReproducesAndSeedsDiffer) {
  manual_seed(42);
  EXPECT_EQ(initial_seed(), 42u);
  Tensor a = rand({1000});
  Tensor b = randn({333}, kDouble);
  Tensor c = randint(0, 1000, {100});
  Tensor a_next = rand({1000});
  manual_seed(42);
  EXPECT_EQ(rand({1000}).to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(randn({333}, kDouble).to_vector<double>(), b.to_vector<double>());
  EXPECT_EQ(randint(0, 1000, {100}).to_vector<int64_t>(), c.to_vector<int64_t>());
  EXPECT_EQ(rand({1000}).to_vector<float>(), a_next.to_vector<float>());
  // consecutive calls and other seeds give other numbers
  EXPECT_NE(a.to_vector<float>(), a_next.to_vector<float>());
  manual_seed(43);
  EXPECT_NE(rand({1000}).to_vector<float>(), a.to_vector<float>());
}

TEST(Random, StreamFollowsTheCounterLayout) {
  // After manual_seed the offset is 0: element i of a float rand is the top
  // 24 bits of lane i % 4 of block i / 4, scaled by 2^-24.
  const uint64_t seed = 1234;
  manual_seed(seed);
  const std::vector<float> u = rand({10}).to_vector<float>();
  for (uint64_t i = 0; i < 10; ++i)
    EXPECT_EQ(u[i], static_cast<float>(philox::draw32(seed, 0, i) >> 8) * (1.0f / 16777216.0f)) << i;
  // 10 elements used 3 blocks: the next op starts at block 3
  const std::vector<double> d = rand({3}, kDouble).to_vector<double>();
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(d[i], philox::to_unit_double(philox::draw64(seed, 3, i))) << i;
  // randint uses draw % range: next offset 3 + 2 = 5
  const std::vector<int64_t> r = randint(10, 20, {5}).to_vector<int64_t>();
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(r[i], 10 + static_cast<int64_t>(philox::draw32(seed, 5, i) % 10)) << i;
}

TEST(Random, LargeFillsFollowTheCounterLayoutOnAnyThreadCount) {
  // Every element of fills that span many chunks and threads, against the
  // scalar reference functions a GPU kernel would use.
  ThreadGuard guard;
  const uint64_t seed = 0xfeedbeefcafeull;  // uses both key words
  const int64_t n = 300007;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(threads);
    set_num_threads(threads);
    manual_seed(seed);
    const std::vector<float> u = rand({n}).to_vector<float>();  // blocks [0, 75002)
    const std::vector<double> d = empty({n}, kDouble).uniform_(-1, 1).to_vector<double>();  // next 150004
    const std::vector<float> z = randn({n}).to_vector<float>();  // next 75002
    const std::vector<float> b = empty({n}).bernoulli_(0.25).to_vector<float>();
    uint64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t k = static_cast<uint64_t>(i);
      ASSERT_EQ(u[k], static_cast<float>(philox::draw32(seed, off, k) >> 8) * (1.0f / 16777216.0f)) << i;
    }
    off += philox::blocks_for(n, false);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t k = static_cast<uint64_t>(i);
      ASSERT_EQ(d[k], -1.0 + philox::to_unit_double(philox::draw64(seed, off, k)) * 2.0) << i;
    }
    off += philox::blocks_for(n, true);
    for (int64_t i = 0; i + 1 < n; i += 2) {  // Box-Muller pairs (2m, 2m + 1)
      const uint64_t k = static_cast<uint64_t>(i);
      float z0, z1;
      philox::box_muller32(philox::draw32(seed, off, k), philox::draw32(seed, off, k + 1), z0, z1);
      ASSERT_EQ(z[k], z0) << i;
      ASSERT_EQ(z[k + 1], z1) << i;
    }
    off += philox::blocks_for(n, false);
    int64_t ones = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t k = static_cast<uint64_t>(i);
      ASSERT_EQ(b[k], philox::draw32(seed, off, k) < (1u << 30) ? 1.0f : 0.0f) << i;
      ones += b[k] == 1.0f;
    }
    EXPECT_NEAR(static_cast<double>(ones) / n, 0.25, 0.005);
  }
}

TEST(Random, IndependentOfThreadCount) {
  ThreadGuard guard;
  const int64_t n = 1 << 20;
  auto run = [&](int threads) {
    set_num_threads(threads);
    manual_seed(2024);
    std::vector<std::vector<double>> out;
    out.push_back(rand({n}).to_vector<double>());
    out.push_back(randn({n}).to_vector<double>());
    out.push_back(randn({n / 2 + 1}, kDouble).to_vector<double>());
    out.push_back(randint(-7, 1000, {n}).to_vector<double>());
    out.push_back(empty({n}, kFloat16).bernoulli_(0.3).to_vector<double>());
    out.push_back(multinomial(ones({2000, 100}), 50, false).to_vector<double>());
    return out;
  };
  const auto one = run(1);
  const auto two = run(2);
  const auto four = run(4);
  for (size_t k = 0; k < one.size(); ++k) {
    EXPECT_EQ(one[k], two[k]) << "output " << k;
    EXPECT_EQ(one[k], four[k]) << "output " << k;
  }
}

TEST(Random, UniformStatistics) {
  manual_seed(1);
  Moments m = moments(rand({1000000}));
  EXPECT_NEAR(m.mean, 0.5, 0.003);
  EXPECT_NEAR(m.var, 1.0 / 12, 0.001);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  Moments r = moments(empty({1000000}, kDouble).uniform_(-3, 5));
  EXPECT_NEAR(r.mean, 1.0, 0.02);
  EXPECT_NEAR(r.var, 64.0 / 12, 0.05);
  EXPECT_GE(r.min, -3.0);
  EXPECT_LT(r.max, 5.0);
  // float64 uses 53 random bits: values are not all multiples of 2^-24
  const std::vector<double> d = rand({100}, kDouble).to_vector<double>();
  int fine = 0;
  for (double x : d) fine += std::ldexp(x, 24) != std::floor(std::ldexp(x, 24));
  EXPECT_GT(fine, 90);
  // from == to gives from
  const std::vector<float> c = empty({5}).uniform_(2, 2).to_vector<float>();
  for (float x : c) EXPECT_EQ(x, 2.0f);
}

TEST(Random, NormalStatistics) {
  manual_seed(2);
  const std::vector<double> v = randn({1000000}).to_vector<double>();
  double mean = 0, var = 0, within1 = 0, m3 = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) {
    var += (x - mean) * (x - mean);
    m3 += (x - mean) * (x - mean) * (x - mean);
    within1 += std::abs(x) < 1.0;
  }
  var /= static_cast<double>(v.size());
  EXPECT_NEAR(mean, 0.0, 0.005);
  EXPECT_NEAR(var, 1.0, 0.01);
  EXPECT_NEAR(m3 / static_cast<double>(v.size()), 0.0, 0.02);          // symmetric
  EXPECT_NEAR(within1 / static_cast<double>(v.size()), 0.682689, 0.003);  // Gaussian shape
  Moments m = moments(empty({1000000}, kDouble).normal_(2.0, 3.0));
  EXPECT_NEAR(m.mean, 2.0, 0.015);
  EXPECT_NEAR(std::sqrt(m.var), 3.0, 0.015);
  // std 0 gives the mean exactly
  for (float x : empty({7}).normal_(1.5, 0.0).to_vector<float>()) EXPECT_EQ(x, 1.5f);
}

TEST(Random, ReducedPrecisionDtypes) {
  manual_seed(3);
  for (ScalarType t : {kHalf, kBFloat16}) {
    SCOPED_TRACE(::testing::Message() << t);
    Tensor u = rand({200000}, t);
    EXPECT_EQ(u.dtype(), t);
    Moments m = moments(u);
    EXPECT_NEAR(m.mean, 0.5, 0.01);
    EXPECT_GE(m.min, 0.0);
    EXPECT_LT(m.max, 1.0);  // never rounds up to `to`
    Tensor z = randn({200000}, t);
    EXPECT_EQ(z.dtype(), t);
    Moments mz = moments(z);
    EXPECT_NEAR(mz.mean, 0.0, 0.02);
    EXPECT_NEAR(mz.var, 1.0, 0.03);
    Moments mr = moments(empty({100000}, t).uniform_(-2, 2));
    EXPECT_GE(mr.min, -2.0);
    EXPECT_LT(mr.max, 2.0);
  }
  Tensor d = randn({4, 5}, kDouble);
  EXPECT_EQ(d.dtype(), kDouble);
  EXPECT_EQ(d.sizes(), IntArrayRef({4, 5}));
  EXPECT_EQ(rand_like(d).dtype(), kDouble);
  EXPECT_EQ(randn_like(empty({3}, kHalf)).dtype(), kHalf);
}

TEST(Random, Bernoulli) {
  manual_seed(4);
  for (ScalarType t : {kFloat, kInt64, kBool, kUInt8, kBFloat16}) {
    SCOPED_TRACE(::testing::Message() << t);
    Tensor x = empty({400000}, t).bernoulli_(0.3);
    EXPECT_EQ(x.dtype(), t);
    Moments m = moments(x);
    EXPECT_NEAR(m.mean, 0.3, 0.004);
    EXPECT_EQ(m.min, 0.0);
    EXPECT_EQ(m.max, 1.0);
  }
  EXPECT_EQ(moments(empty({1000}).bernoulli_(0.0)).max, 0.0);
  EXPECT_EQ(moments(empty({1000}).bernoulli_(1.0)).min, 1.0);
  // bernoulli(p): per-element probabilities, result in p's dtype
  std::vector<double> pv;
  for (int i = 0; i < 100000; ++i) pv.insert(pv.end(), {0.0, 0.25, 0.5, 0.9, 1.0});
  Tensor p = tensor(pv, {100000, 5});
  Tensor s = bernoulli(p);
  EXPECT_EQ(s.dtype(), kFloat);
  EXPECT_EQ(s.sizes(), p.sizes());
  const std::vector<double> sv = s.to_vector<double>();
  double freq[5] = {};
  for (size_t i = 0; i < sv.size(); ++i) {
    EXPECT_TRUE(sv[i] == 0.0 || sv[i] == 1.0);
    freq[i % 5] += sv[i];
  }
  const double want[5] = {0.0, 0.25, 0.5, 0.9, 1.0};
  for (int c = 0; c < 5; ++c) EXPECT_NEAR(freq[c] / 100000, want[c], 0.006) << c;
  EXPECT_EQ(bernoulli(tensor({0.5}, kDouble)).dtype(), kDouble);
  // non-contiguous p
  Tensor pt = p.t();
  Tensor st = bernoulli(pt);
  EXPECT_EQ(st.sizes(), IntArrayRef({5, 100000}));
  EXPECT_EQ(moments(st.select(0, 4)).min, 1.0);
  EXPECT_EQ(moments(st.select(0, 0)).max, 0.0);
}

TEST(Random, RandintRangeAndCoverage) {
  manual_seed(5);
  Tensor x = randint(-5, 5, {200000});
  EXPECT_EQ(x.dtype(), kInt64);
  std::map<int64_t, int64_t> counts;
  for (int64_t v : x.to_vector<int64_t>()) ++counts[v];
  ASSERT_EQ(counts.size(), 10u);
  EXPECT_EQ(counts.begin()->first, -5);
  EXPECT_EQ(counts.rbegin()->first, 4);
  for (auto& [v, c] : counts) EXPECT_NEAR(static_cast<double>(c) / 200000, 0.1, 0.005) << v;
  // one-argument form and other dtypes
  Tensor y = randint(3, {1000}, kInt32);
  EXPECT_EQ(y.dtype(), kInt32);
  std::set<int64_t> ys;
  for (int64_t v : y.to_vector<int64_t>()) ys.insert(v);
  EXPECT_EQ(ys, (std::set<int64_t>{0, 1, 2}));
  for (ScalarType t : {kUInt8, kFloat, kHalf, kBFloat16, kDouble}) {
    Tensor z = randint(250, 256, {5000}, t);
    EXPECT_EQ(z.dtype(), t);
    std::set<double> zs;
    for (double v : z.to_vector<double>()) zs.insert(v);
    EXPECT_EQ(zs, (std::set<double>{250, 251, 252, 253, 254, 255})) << t;
  }
  Tensor b = randint(0, 2, {1000}, kBool);
  Moments mb = moments(b);
  EXPECT_NEAR(mb.mean, 0.5, 0.06);
  // a range of 2^32 or more uses 64-bit draws
  const int64_t big = int64_t{1} << 40;
  Tensor w = randint(-big, big, {10000});
  Moments mw = moments(w);
  EXPECT_GE(mw.min, -static_cast<double>(big));
  EXPECT_LT(mw.max, static_cast<double>(big));
  EXPECT_GT(mw.max, 0.9 * static_cast<double>(big));
  EXPECT_LT(mw.min, -0.9 * static_cast<double>(big));
  // the whole int64 range minus one value
  Tensor full_range = empty({1000}, kInt64).random_(std::numeric_limits<int64_t>::min(),
                                                    std::numeric_limits<int64_t>::max());
  EXPECT_LT(moments(full_range).min, -1e18);
  // random_ on a tensor
  Tensor r = zeros({2000}, kInt32).random_(100, 104);
  std::set<int64_t> rs;
  for (int64_t v : r.to_vector<int64_t>()) rs.insert(v);
  EXPECT_EQ(rs, (std::set<int64_t>{100, 101, 102, 103}));
}

TEST(Random, Randperm) {
  manual_seed(6);
  for (int64_t n : {0, 1, 2, 7, 1000, 1000003}) {
    Tensor p = randperm(n);
    EXPECT_EQ(p.dtype(), kInt64);
    ASSERT_EQ(p.numel(), n);
    std::vector<int64_t> v = p.to_vector<int64_t>();
    std::vector<int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i) << "n " << n;
    if (n >= 1000) {
      int64_t fixed = 0;
      for (int64_t i = 0; i < n; ++i) fixed += v[static_cast<size_t>(i)] == i;
      EXPECT_LT(fixed, 10) << "a random permutation has about one fixed point";
    }
  }
  // every position is equally likely to hold 0 (n = 4, 40000 draws)
  int64_t where0[4] = {};
  for (int t = 0; t < 40000; ++t) {
    const std::vector<int64_t> v = randperm(4).to_vector<int64_t>();
    ++where0[std::find(v.begin(), v.end(), 0) - v.begin()];
  }
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(where0[i] / 40000.0, 0.25, 0.015) << i;
  Tensor f = randperm(2049, kHalf);
  EXPECT_EQ(f.dtype(), kHalf);
  std::vector<double> fv = f.to_vector<double>();
  std::sort(fv.begin(), fv.end());
  for (size_t i = 0; i < fv.size(); ++i) ASSERT_EQ(fv[i], static_cast<double>(i));
  EXPECT_EQ(randperm(256, kUInt8).numel(), 256);
  EXPECT_EQ(randperm(5, kInt32).dtype(), kInt32);
}

TEST(Random, MultinomialWithReplacement) {
  manual_seed(7);
  Tensor probs = tensor({0.1, 0.0, 0.3, 0.6});
  Tensor s = multinomial(probs, 100000, true);
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(s.sizes(), IntArrayRef({100000}));
  double freq[4] = {};
  for (int64_t c : s.to_vector<int64_t>()) {
    ASSERT_GE(c, 0);
    ASSERT_LT(c, 4);
    freq[c] += 1.0 / 100000;
  }
  EXPECT_EQ(freq[1], 0.0);  // probability 0 is never drawn
  EXPECT_NEAR(freq[0], 0.1, 0.005);
  EXPECT_NEAR(freq[2], 0.3, 0.006);
  EXPECT_NEAR(freq[3], 0.6, 0.006);
  // 2-D, unnormalised weights, one row per distribution
  Tensor p2 = tensor({{1.0, 3.0}, {5.0, 0.0}}, kDouble);
  Tensor s2 = multinomial(p2, 20000, true);
  EXPECT_EQ(s2.sizes(), IntArrayRef({2, 20000}));
  EXPECT_NEAR(moments(s2.select(0, 0)).mean, 0.75, 0.015);
  EXPECT_EQ(moments(s2.select(0, 1)).max, 0.0);
  // more samples than categories is fine with replacement
  EXPECT_EQ(multinomial(tensor({1.0f}), 5, true).to_vector<int64_t>(), (std::vector<int64_t>(5, 0)));
}

TEST(Random, MultinomialWithoutReplacement) {
  manual_seed(8);
  const int64_t rows = 20000;
  Tensor probs = tensor(std::vector<double>{1, 2, 3, 4}).unsqueeze(0).expand({rows, 4});
  Tensor s = multinomial(probs, 4, false);
  EXPECT_EQ(s.sizes(), IntArrayRef({rows, 4}));
  const std::vector<int64_t> v = s.to_vector<int64_t>();
  double first[4] = {};
  for (int64_t r = 0; r < rows; ++r) {
    std::set<int64_t> seen(v.begin() + r * 4, v.begin() + (r + 1) * 4);
    ASSERT_EQ(seen.size(), 4u) << "row " << r << " repeats a category";
    first[v[static_cast<size_t>(r * 4)]] += 1.0 / rows;
  }
  // the first draw follows the probabilities
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(first[c], (c + 1) / 10.0, 0.012) << c;
  // zero-probability categories come after all others
  for (int t = 0; t < 50; ++t) {
    const std::vector<int64_t> z = multinomial(tensor({0.5, 0.0, 0.5}), 3, false).to_vector<int64_t>();
    EXPECT_EQ(z[2], 1);
  }
  // a sample of distinct categories from a large support
  Tensor big = multinomial(ones({100000}), 1000, false);
  std::set<int64_t> bs;
  for (int64_t c : big.to_vector<int64_t>()) bs.insert(c);
  EXPECT_EQ(bs.size(), 1000u);
  // empty batch
  EXPECT_EQ(multinomial(empty({0, 3}), 2, false).sizes(), IntArrayRef({0, 2}));
}

TEST(Random, NonContiguousInPlaceFill) {
  // A non-contiguous fill gives the values a contiguous tensor of the same
  // shape would get, in logical (row-major) order.
  manual_seed(9);
  Tensor want = empty({32, 64}).uniform_(-1, 1);
  manual_seed(9);
  Tensor base = zeros({64, 32});
  Tensor view = base.t();  // (32, 64), non-contiguous
  ASSERT_FALSE(view.is_contiguous());
  const uint32_t v0 = view._version();
  Tensor& ret = view.uniform_(-1, 1);
  EXPECT_TRUE(ret.is_same(view));
  EXPECT_GT(view._version(), v0);
  EXPECT_EQ(view.to_vector<float>(), want.to_vector<float>());
  EXPECT_EQ(base.t().to_vector<float>(), want.to_vector<float>());  // written through to the storage
  // stepped slice: only the selected columns change
  Tensor m = zeros({10, 8}, kDouble);
  m.slice(1, 0, 8, 2).normal_(5.0, 1.0);
  const std::vector<double> mv = m.to_vector<double>();
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      const double x = mv[static_cast<size_t>(i * 8 + j)];
      if (j % 2) EXPECT_EQ(x, 0.0);
      else EXPECT_NE(x, 0.0);
    }
  Tensor b = zeros({6, 6}, kInt32);
  b.select(1, 2).random_(1, 3);
  b.select(0, 0).bernoulli_(1.0);
  for (int64_t i = 1; i < 6; ++i) EXPECT_GE(b[i][2].item<int64_t>(), 1);
  EXPECT_EQ(b[0][5].item<int64_t>(), 1);
  EXPECT_EQ(b[3][3].item<int64_t>(), 0);
  // contiguous in-place fills bump the version too
  Tensor c = empty({4});
  const uint32_t c0 = c._version();
  c.normal_();
  c.bernoulli_(0.5);
  EXPECT_EQ(c._version(), c0 + 2);
  // empty tensors are fine
  EXPECT_EQ(empty({0, 3}).uniform_().numel(), 0);
  EXPECT_EQ(rand({0}).numel(), 0);
}

TEST(Random, Errors) {
  Tensor f = zeros({3});
  expect_error([&] { f.normal_(0, -1); }, {"[normal_] expected std >= 0.0, but found std -1"});
  expect_error([&] { f.normal_(0, kNaN); }, {"[normal_]", "std >= 0.0", "nan"});
  expect_error([&] { zeros({3}, kInt64).normal_(); }, {"[normal_]", "floating point", "int64"});
  expect_error([&] { f.uniform_(2, 1); }, {"[uniform_]", "from=2 > to=1"});
  expect_error([&] { f.uniform_(0, kInf); }, {"[uniform_]", "to is out of bounds for float32"});
  expect_error([&] { zeros({3}, kHalf).uniform_(0, 1e6); }, {"[uniform_]", "out of bounds for float16"});
  expect_error([&] { f.uniform_(-3e38, 3e38); }, {"[uniform_]", "to - from"});
  expect_error([&] { zeros({3}, kInt32).uniform_(); }, {"[uniform_]", "floating point", "int32"});
  expect_error([&] { f.bernoulli_(1.5); }, {"[bernoulli_] expected p to be in [0, 1], but got p=1.5"});
  expect_error([&] { f.bernoulli_(-0.1); }, {"[bernoulli_]", "p=-0.1"});
  expect_error([&] { f.random_(5, 3); }, {"[random_]", "from=5 >= to=3"});
  expect_error([&] { zeros({3}, kUInt8).random_(-1, 3); }, {"[random_]", "from is out of bounds for uint8"});
  expect_error([&] { zeros({3}, kBool).random_(0, 3); }, {"[random_]", "to - 1 is out of bounds for bool"});
  expect_error([&] { zeros({3}, kInt32).random_(0, int64_t{1} << 40); }, {"[random_]", "to - 1", "int32"});
  expect_error([&] { randint(3, 3, {2}); }, {"[randint]", "from=3 >= to=3"});
  expect_error([&] { randint(0, 300, {2}, kUInt8); }, {"[randint]", "to - 1 is out of bounds for uint8"});
  expect_error([&] { rand({2}, kInt64); }, {"[rand]", "floating point", "int64"});
  expect_error([&] { randn({2}, kBool); }, {"[randn]", "floating point", "bool"});
  expect_error([&] { randperm(-1); }, {"[randperm]", "non-negative", "-1"});
  expect_error([&] { randperm(300, kUInt8); }, {"[randperm]", "256", "uint8"});
  expect_error([&] { randperm(3000, kHalf); }, {"[randperm]", "2049", "float16"});
  expect_error([&] { randperm(3, kBool); }, {"[randperm]", "bool"});
  expect_error([&] { bernoulli(tensor({0.5, 1.5})); }, {"[bernoulli]", "[0, 1]", "1.5"});
  expect_error([&] { bernoulli(tensor({0.5, kNaN})); }, {"[bernoulli]", "[0, 1]"});
  expect_error([&] { bernoulli(tensor({1, 0})); }, {"[bernoulli]", "floating point", "int64"});
  expect_error([&] { multinomial(tensor({0.5, -1.0}), 1); }, {"[multinomial]", "element < 0"});
  expect_error([&] { multinomial(tensor({0.5, kInf}), 1); }, {"[multinomial]", "`inf`, `nan`"});
  expect_error([&] { multinomial(tensor({0.5, kNaN}), 1); }, {"[multinomial]", "`inf`, `nan`"});
  expect_error([&] { multinomial(tensor({0.0, 0.0}), 1); }, {"[multinomial]", "sum of probabilities <= 0"});
  expect_error([&] { multinomial(tensor({0.5, 0.5}), 3); }, {"[multinomial]", "without replacement"});
  expect_error([&] { multinomial(tensor({0.5, 0.5}), 0, true); }, {"[multinomial]", "n_sample <= 0"});
  expect_error([&] { multinomial(ones({2, 2, 2}), 1); }, {"[multinomial]", "1 or 2 dim"});
  expect_error([&] { multinomial(tensor({1, 2}), 1); }, {"[multinomial]", "floating-point", "int64"});
  expect_error([&] { zeros({3}).expand({2, 3}).uniform_(); }, {"[uniform_]", "more than one element"});
  // a failed check leaves the tensor untouched and the generator where it was
  manual_seed(10);
  Tensor g = full({3}, 7.0);
  expect_error([&] { g.normal_(0, -1); }, {"[normal_]"});
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{7, 7, 7}));
  const std::vector<float> after_error = rand({4}).to_vector<float>();
  manual_seed(10);
  EXPECT_EQ(rand({4}).to_vector<float>(), after_error);
  expect_error([&] { multinomial(scalar_tensor(0.5), 1); }, {"[multinomial]", "1 or 2 dim"});
}

// ---- per-element samplers: _standard_gamma, poisson, binomial --------------------------
// (Note [Samplers in one pass], src/kernels/samplers.h)

namespace {
/// Mean and variance within 6 standard errors of the known values (the
/// variance's standard error from the fourth central moment, given).
void expect_moments(const Tensor& s, double mean, double var, double mu4, const std::string& what) {
  const Moments m = moments(s);
  const double n = static_cast<double>(s.numel());
  EXPECT_NEAR(m.mean, mean, 6 * std::sqrt(var / n) + 1e-12) << what;
  EXPECT_NEAR(m.var, var, 6 * std::sqrt((mu4 - var * var) / n) + 1e-12) << what;
}
}  // namespace

TEST(Samplers, StandardGammaMoments) {
  ThreadGuard tg;
  set_num_threads(1);
  manual_seed(11);
  for (double a : {0.05, 0.5, 1.0, 2.5, 40.0}) {
    for (ScalarType dt : {kFloat, kDouble}) {
      const Tensor s = _standard_gamma(full({100000}, a, dt));
      EXPECT_EQ(s.dtype(), dt);
      // Gamma(a, 1): mean a, variance a, fourth central moment 3a^2 + 6a.
      expect_moments(s.to(kDouble), a, a, 3 * a * a + 6 * a, "gamma a=" + std::to_string(a));
      EXPECT_GT(moments(s.to(kDouble)).min, 0.0);
    }
  }
  // Draws below the smallest normal number are clamped to it, as PyTorch's.
  const Tensor tiny = _standard_gamma(full({4000}, 0.01, kFloat));
  EXPECT_EQ(moments(tiny.to(kDouble)).min, double(std::numeric_limits<float>::min()));
}

TEST(Samplers, PoissonMoments) {
  ThreadGuard tg;
  set_num_threads(1);
  manual_seed(12);
  for (double r : {0.0, 0.3, 4.0, 9.99, 10.0, 37.5, 1e4}) {  // inversion below 10, PTRS from 10
    const Tensor s = poisson(full({100000}, r, kDouble));
    expect_moments(s, r, r, r + 3 * r * r, "poisson rate=" + std::to_string(r));
    const std::vector<double> v = s.to_vector<double>();
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](double x) { return x >= 0 && x == std::floor(x); }));
  }
}

TEST(Samplers, BinomialMoments) {
  ThreadGuard tg;
  set_num_threads(1);
  manual_seed(13);
  // waiting times (n min(p, 1-p) < 10), BTRS above, mirrored p > 1/2, edges
  for (auto [n, p] : std::vector<std::pair<double, double>>{
           {20, 0.1}, {20, 0.95}, {1000, 0.3}, {1000, 0.7}, {3e9, 0.5}, {0, 0.4}, {7, 0.0}, {7, 1.0}}) {
    const Tensor s = binomial(full({100000}, n, kDouble), full({100000}, p, kDouble));
    const double var = n * p * (1 - p);
    expect_moments(s, n * p, var, 3 * var * var + var * (1 - 6 * p * (1 - p)),
                   "binomial n=" + std::to_string(n) + " p=" + std::to_string(p));
    const Moments m = moments(s);
    EXPECT_GE(m.min, 0.0);
    EXPECT_LE(m.max, n);
  }
  // count and prob broadcast, and the dtypes promote
  const Tensor b = binomial(tensor({5.0, 50.0}, kFloat).view({2, 1}), tensor({0.5, 0.1, 0.9}, kDouble));
  EXPECT_EQ(b.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(b.dtype(), kDouble);
}

TEST(Samplers, ValuesDependOnSeedOffsetAndIndexOnly) {
  ThreadGuard tg;
  const Tensor alpha = rand({50000}, kDouble) * 3 + 0.2, rate = rand({50000}, kDouble) * 30;
  const Tensor count = (rand({50000}, kDouble) * 60).floor(), prob = rand({50000}, kDouble);
  auto draw = [&](int threads) {
    set_num_threads(threads);
    manual_seed(5);
    return std::vector<Tensor>{_standard_gamma(alpha), poisson(rate), binomial(count, prob)};
  };
  const std::vector<Tensor> one = draw(1), two = draw(2);
  for (size_t k = 0; k < one.size(); ++k) {
    EXPECT_TRUE(one[k].equal(two[k])) << "sampler " << k << " depends on the thread count";
    const std::vector<double> v = one[k].to_vector<double>();
    EXPECT_GT(std::set<double>(v.begin(), v.end()).size(), 20u) << k;
  }
  // element i does not depend on how many elements follow it
  set_num_threads(1);
  manual_seed(5);
  EXPECT_TRUE(_standard_gamma(alpha.narrow(0, 0, 1000)).equal(one[0].narrow(0, 0, 1000)));
  // consecutive calls draw different numbers; manual_seed repeats them
  manual_seed(6);
  const Tensor a1 = poisson(rate), a2 = poisson(rate);
  EXPECT_FALSE(a1.equal(a2));
  manual_seed(6);
  EXPECT_TRUE(poisson(rate).equal(a1));
}

TEST(Samplers, ReducedPrecisionAndEmpty) {
  manual_seed(3);
  for (ScalarType dt : {kHalf, kBFloat16}) {
    const Tensor g = _standard_gamma(full({20000}, 3.0, dt));
    EXPECT_EQ(g.dtype(), dt);
    EXPECT_NEAR(moments(g.to(kDouble)).mean, 3.0, 0.1);
    EXPECT_EQ(poisson(full({3}, 0.0, dt)).to(kDouble).sum().item<double>(), 0.0);
  }
  EXPECT_EQ(_standard_gamma(empty({0, 3})).sizes(), IntArrayRef({0, 3}));
  EXPECT_EQ(binomial(empty({0}), empty({0})).numel(), 0);
}

TEST(Samplers, Errors) {
  expect_error([] { _standard_gamma(tensor({1.0, -1.0})); }, {"_standard_gamma", "alpha > 0"});
  expect_error([] { _standard_gamma(tensor({1.0, kNaN})); }, {"_standard_gamma", "alpha > 0"});
  expect_error([] { _standard_gamma(tensor({1, 2}, kInt64)); }, {"_standard_gamma", "floating point"});
  expect_error([] { poisson(tensor({-0.5})); }, {"poisson", "rates >= 0"});
  expect_error([] { binomial(tensor({2.5}), tensor({0.5})); }, {"binomial", "non-negative integers"});
  expect_error([] { binomial(tensor({3.0}), tensor({1.5})); }, {"binomial", "[0, 1]"});
  expect_error([] { binomial(tensor({3.0, 4.0}), tensor({0.1, 0.2, 0.3})); }, {"binomial"});
}

// multinomial's tensor-op path (what a GPU runs, Note [multinomial on a
// device]) draws the same numbers as the host algorithm: run on the CPU here,
// it gives the same categories.
TEST(Samplers, MultinomialTensorOpsPathMatchesTheHost) {
  ThreadGuard tg;
  set_num_threads(1);
  manual_seed(21);
  Tensor probs = rand({7, 30}, kDouble);
  probs.narrow(1, 3, 5).zero_();   // categories of mass 0 in every row
  probs.narrow(1, 25, 5).zero_();  // ... and at the end
  for (bool replacement : {true, false}) {
    for (const Tensor& p : {probs, probs.to(kFloat), probs.select(0, 2)}) {
      const int64_t n = replacement ? 200 : 30;  // without: past the 20 positive categories
      manual_seed(4);
      const Tensor host = multinomial(p, n, replacement);
      const Tensor next_host = rand({3});
      manual_seed(4);
      const Tensor ops = detail::multinomial_on_device(p, n, replacement);
      EXPECT_EQ(ops.sizes(), host.sizes());
      EXPECT_EQ(ops.dtype(), kInt64);
      EXPECT_TRUE(ops.equal(host)) << "replacement " << replacement << " dim " << p.dim();
      // both reserve the same counter blocks: the next op draws the same numbers
      EXPECT_TRUE(rand({3}).equal(next_host));
    }
  }
  // the tensor-op path checks the probabilities through the backend's kernel
  expect_error([] { detail::multinomial_on_device(tensor({{0.5, 0.5}, {0.5, -0.1}}), 2, true); },
               {"multinomial", "element < 0", "row 1"});
  expect_error([] { detail::multinomial_on_device(tensor({0.0, 0.0}), 1, true); }, {"multinomial", "sum"});
  // enough categories that the comparison runs in chunks of samples
  manual_seed(5);
  const Tensor wide = rand({64, 1 << 15}, kDouble);
  manual_seed(6);
  const Tensor host = multinomial(wide, 70, true);
  manual_seed(6);
  EXPECT_TRUE(detail::multinomial_on_device(wide, 70, true).equal(host));
}

// igamma against exact values (mpmath, 30 digits) and torch 2.15's
// torch.igamma (float64: its edge values; its asymptotic series for large a
// is 1e-9 off, brisk's continued fraction is not), and _standard_gamma_grad
// against torch._standard_gamma_grad.
TEST(Samplers, GammaFunctionsMatchPyTorch) {
  const double inf = kInf;
  const Tensor a = tensor({0., 0., -1., 0.5, 2., 2., 2., inf, 3., 1e-3, 50., 50., kNaN, 2.}, kDouble);
  const Tensor x = tensor({1., 0., 1., 0., 0.3, 2., inf, 1., -1., 1e-4, 45., 60., 1., kNaN}, kDouble);
  const std::vector<double> exact = {1.0, kNaN, kNaN, 0.0, 0.036936313113766771646, 0.59399415029016192432, 1.0,
                                     0.0, kNaN, 0.99140311966744335686, 0.24680203440017027271,
                                     0.91559331890630817038, kNaN, kNaN};
  const std::vector<double> torch_igamma = {1.0, kNaN, kNaN, 0.0, 0.03693631311376678, 0.5939941502901616, 1.0, 0.0,
                                            kNaN, 0.9914031196674435, 0.24680203419473098, 0.9155933188030979, kNaN,
                                            kNaN};
  const std::vector<double> got = igamma(a, x).to_vector<double>();
  for (size_t i = 0; i < exact.size(); ++i) {
    if (std::isnan(exact[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
      EXPECT_TRUE(std::isnan(torch_igamma[i])) << i;
      continue;
    }
    EXPECT_NEAR(got[i], exact[i], 1e-14 * std::max(1.0, std::fabs(exact[i]))) << i;
    EXPECT_NEAR(got[i], torch_igamma[i], 1e-8 * std::max(1.0, std::fabs(exact[i]))) << i;
  }
  // the implicit reparameterization gradient: torch's own is an approximation
  // (about 1e-3 relative); brisk's differences P exactly (Note [Implicit reparameterization])
  const std::vector<double> g = _standard_gamma_grad(tensor({0.5, 2., 7.5, 0.1}, kDouble),
                                                     tensor({0.3, 1.7, 9., 1e-3}, kDouble)).to_vector<double>();
  const double torch_g[] = {1.0098019827369256, 0.9998831741416553, 1.1184647793298106, 0.06490724738374094};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(g[i], torch_g[i], 2e-3 * torch_g[i]) << i;
  // igamma is differentiable in x (the density), not in a
  Tensor xa = tensor({0.5, 2.0}, kDouble).requires_grad_(true);
  igamma(tensor({2.0, 3.0}, kDouble), xa).sum().backward();
  EXPECT_NEAR(xa.grad().to_vector<double>()[0], 0.5 * std::exp(-0.5), 1e-12);   // x e^-x / Gamma(2)
  EXPECT_NEAR(xa.grad().to_vector<double>()[1], 4.0 * std::exp(-2.0) / 2.0, 1e-12);  // x^2 e^-x / Gamma(3)
  Tensor aa = tensor({2.0}, kDouble).requires_grad_(true);
  expect_error([&] { igamma(aa, tensor({1.0}, kDouble)).sum().backward(); }, {"igamma", "first argument"});
  // an integer argument takes the other's floating dtype (torch); two integers have no kernel
  EXPECT_EQ(igamma(tensor({1}, kInt64), tensor({1.0})).dtype(), kFloat);
  expect_error([] { igamma(tensor({1}, kInt64), tensor({1}, kInt64)); }, {"igamma", "floating point"});
}

// igamma where cephes (and so torch.igamma) loses it, against exact values
// (mpmath, 40 digits: the power series summed to convergence): a large with x
// a little below a, where cephes' series stops at 2000 terms (torch 2.15,
// float64: 1.0582803822225827e-65 and 6.413019934558623e-24); a = x = 1e30
// (the old brisk series gave NaN); a tiny, where torch's prefactor
// x^a e^-x / Gamma(a) underflows (torch: 0 for a = 1e-320) or P passes 1
// (torch: 1.000000000000002 for a = 1e-30).
TEST(Samplers, IgammaAtExtremeArguments) {
  const Tensor a = tensor({7902872.14067247, 1e8, 1e30, 1e-320, 1e-30, 1e-40}, kDouble);
  const Tensor x = tensor({7854955.595151891, 0.999e8, 1e30, 0.5, 0.5, 0.97}, kDouble);
  const std::vector<double> exact = {1.0582844739974314693e-65, 7.369931066896993947e-24, 0.5, 1.0, 1.0, 1.0};
  const std::vector<double> got = igamma(a, x).to_vector<double>();
  for (size_t i = 0; i < exact.size(); ++i) EXPECT_NEAR(got[i], exact[i], 1e-11 * exact[i]) << i;
  for (size_t i = 3; i < exact.size(); ++i) EXPECT_LE(got[i], 1.0) << i;
  // float32 computes in float64 and rounds once: a denormal a gives 1, not torch's 0
  EXPECT_EQ(igamma(tensor({1e-40}, kFloat), tensor({0.97}, kFloat)).item<float>(), 1.0f);
}

// _standard_gamma is differentiable in alpha (as torch._standard_gamma):
// d/dalpha of a sample is _standard_gamma_grad at that sample.
TEST(Samplers, StandardGammaGradient) {
  manual_seed(8);
  Tensor alpha = tensor({0.4, 1.5, 6.0}, kDouble).requires_grad_(true);
  const Tensor x = _standard_gamma(alpha);
  ASSERT_TRUE(x.requires_grad());
  x.sum().backward();
  const Tensor want = _standard_gamma_grad(alpha.detach(), x.detach());
  EXPECT_TRUE(alpha.grad().equal(want));
  // and the gradient against a finite difference of the inverse CDF: with u
  // = P(alpha, x) fixed, x(alpha + h) solves P(alpha + h, x) = u
  const std::vector<double> xs = x.detach().to_vector<double>(), gs = alpha.grad().to_vector<double>();
  const double as[] = {0.4, 1.5, 6.0};
  for (int i = 0; i < 3; ++i) {
    const double u = igamma(tensor({as[i]}, kDouble), tensor({xs[i]}, kDouble)).item<double>();
    auto solve = [&](double a) {  // bisection on P(a, x) = u
      double lo = 0, hi = xs[i] * 4 + 10;
      for (int k = 0; k < 200; ++k) {
        const double mid = 0.5 * (lo + hi);
        (igamma(tensor({a}, kDouble), tensor({mid}, kDouble)).item<double>() < u ? lo : hi) = mid;
      }
      return 0.5 * (lo + hi);
    };
    const double h = 1e-5;
    EXPECT_NEAR(gs[i], (solve(as[i] + h) - solve(as[i] - h)) / (2 * h), 1e-4 * std::max(1.0, std::fabs(gs[i]))) << i;
  }
}

// Note [Random draws in a CUDA graph] (core/generator.h), the host side:
// during a capture, CUDA reservations count relative blocks for the graph
// and leave the default generator alone; CPU ones still take from it. A
// replay then takes the counted total from the generator, where eager ops
// would have taken the same blocks one by one.
TEST(GraphRandom, ACaptureCountsItsCudaDrawsAndLeavesTheGeneratorAlone) {
  manual_seed(5);
  const uint64_t state[2] = {0, 0};  // (the device state; only its address matters here)
  const detail::PhiloxState before = detail::default_generator_state();
  detail::begin_graph_random(state);
  EXPECT_EQ(detail::graph_random_state(), state);
  const detail::PhiloxState a = detail::reserve_random_blocks_for(true, 5);
  const detail::PhiloxState cpu = detail::reserve_random_blocks_for(false, 3);
  const detail::PhiloxState b = detail::reserve_random_blocks_for(true, 2);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 5u);
  EXPECT_EQ(cpu.seed, 5u);
  EXPECT_EQ(cpu.offset, before.offset);  // the CPU draw came from the generator
  EXPECT_EQ(detail::default_generator_state().offset, before.offset + 3);
  EXPECT_EQ(detail::end_graph_random(), 7u);
  EXPECT_EQ(detail::graph_random_state(), nullptr);
  // outside a capture a CUDA reservation is the generator's again
  const detail::PhiloxState c = detail::reserve_random_blocks_for(true, 4);
  EXPECT_EQ(c.offset, before.offset + 3);
  EXPECT_EQ(detail::default_generator_state().offset, before.offset + 7);
  // a capture on another thread does not touch this one's reservations
  std::thread other([&] {
    detail::begin_graph_random(state);
    (void)detail::reserve_random_blocks_for(true, 9);
    EXPECT_EQ(detail::end_graph_random(), 9u);
  });
  other.join();
  EXPECT_EQ(detail::reserve_random_blocks_for(true, 1).offset, before.offset + 7);
}
