// Matrix products: matmul (all of PyTorch's cases), mm, bmm, addmm, mv, dot,
// outer, einsum. The reference is a naive triple loop in float64 over logical
// coordinates, so layouts (transposed, sliced, expanded) and dtypes are
// checked against the same ground truth.
#include <cmath>
#include <limits>
#include <random>

#include "backend/cpu/onednn.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;

namespace {

/// Random values: floats in [-1, 1), integers in [-4, 4]; then cast to dt.
Tensor rnd(IntArrayRef shape, ScalarType dt, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<double> v(static_cast<size_t>(multiply(shape)));
  if (is_floating_point(dt)) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& x : v) x = u(g);
  } else {
    std::uniform_int_distribution<int> u(dt == kUInt8 ? 0 : -4, 4);
    for (auto& x : v) x = u(g);
  }
  return tensor(v, shape, kDouble).to(dt);
}

/// Row-major coordinates of a flat index.
std::vector<int64_t> unravel(int64_t i, IntArrayRef shape) {
  std::vector<int64_t> c(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    c[d] = shape[d] ? i % shape[d] : 0;
    if (shape[d]) i /= shape[d];
  }
  return c;
}

/// Offset of coordinates in a contiguous tensor.
int64_t at_offset(const Tensor& t, const std::vector<int64_t>& c) {
  int64_t off = 0;
  for (size_t d = 0; d < c.size(); ++d) off = off * t.size(static_cast<int64_t>(d)) + c[d];
  return off;
}
/// Element of a contiguous float64 tensor at coordinates.
double at(const Tensor& t, const std::vector<int64_t>& c) { return t.data_ptr<double>()[at_offset(t, c)]; }

/// numpy matmul in float64, written independently of brisk's matmul: 1-D
/// operands get a dim prepended (a) or appended (b), batch dims broadcast,
/// and the added dims are dropped from the result.
Tensor ref_matmul(const Tensor& a_in, const Tensor& b_in) {
  Tensor a = a_in.to(kDouble).contiguous(), b = b_in.to(kDouble).contiguous();
  const bool a1 = a.dim() == 1, b1 = b.dim() == 1;
  if (a1) a = a.reshape({1, a.size(0)});
  if (b1) b = b.reshape({b.size(0), 1});
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  EXPECT_EQ(k, b.size(-2));
  std::vector<int64_t> ba(a.sizes().begin(), a.sizes().end() - 2), bb(b.sizes().begin(), b.sizes().end() - 2);
  const size_t nb = std::max(ba.size(), bb.size());
  std::vector<int64_t> batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t x = i + ba.size() >= nb ? ba[i + ba.size() - nb] : 1;
    const int64_t y = i + bb.size() >= nb ? bb[i + bb.size() - nb] : 1;
    batch[i] = x == 1 ? y : x;
  }
  std::vector<int64_t> rshape = batch;
  rshape.push_back(m);
  rshape.push_back(n);
  Tensor r = zeros(rshape, kDouble);
  double* pr = r.data_ptr<double>();
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  for (int64_t e = 0; e < r.numel(); ++e) {
    std::vector<int64_t> c = unravel(e, rshape);
    std::vector<int64_t> ca(a.dim()), cb(b.dim());
    for (size_t i = 0; i < ba.size(); ++i) ca[i] = ba[i] == 1 ? 0 : c[i + nb - ba.size()];
    for (size_t i = 0; i < bb.size(); ++i) cb[i] = bb[i] == 1 ? 0 : c[i + nb - bb.size()];
    ca[a.dim() - 2] = c[nb], ca[a.dim() - 1] = 0;
    cb[b.dim() - 2] = 0, cb[b.dim() - 1] = c[nb + 1];
    // a[..., i, p] and b[..., p, j] of the contiguous copies: strides 1 and n along p
    const double* ra = k ? &pa[0] + (at_offset(a, ca)) : nullptr;
    const double* rb = k ? &pb[0] + (at_offset(b, cb)) : nullptr;
    double s = 0;
    for (int64_t p = 0; p < k; ++p) s += ra[p] * rb[p * n];
    pr[e] = s;
  }
  if (a1) r = r.squeeze(-2);
  if (b1) r = r.squeeze(-1);
  return r;
}

/// Tolerances per dtype for sums of k products of values in [-1, 1].
double rtol_of(ScalarType dt) {
  return dt == kBFloat16 ? 2e-2 : dt == kHalf ? 4e-3 : dt == kFloat ? 1e-4 : 1e-10;
}
double atol_of(ScalarType dt, int64_t k = 8) {
  const double scale = std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
  return (dt == kBFloat16 ? 2e-2 : dt == kHalf ? 4e-3 : dt == kFloat ? 1e-5 : 1e-12) * scale;
}

const ScalarType kDtypes[] = {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kUInt8, kInt8, kInt16};

struct Case {
  std::vector<int64_t> a, b, out;
};
const Case kMatmulCases[] = {
    {{3}, {3}, {}},                           // dot
    {{2, 3}, {3}, {2}},                       // mv
    {{3}, {3, 4}, {4}},                       // 1-D @ 2-D
    {{2, 3}, {3, 4}, {2, 4}},                 // mm
    {{5, 2, 3}, {3, 4}, {5, 2, 4}},           // batch @ matrix (folded)
    {{2, 5, 2, 3}, {3}, {2, 5, 2}},           // batch @ vector (folded)
    {{3}, {2, 3, 4}, {2, 4}},                 // vector @ batch
    {{2, 3}, {4, 3, 5}, {4, 2, 5}},           // matrix @ batch
    {{4, 2, 3}, {4, 3, 5}, {4, 2, 5}},        // bmm
    {{2, 1, 2, 3}, {3, 3, 4}, {2, 3, 2, 4}},  // broadcast batch
    {{1, 2, 3}, {5, 3, 4}, {5, 2, 4}},
    {{4, 1, 2, 3}, {1, 5, 3, 2}, {4, 5, 2, 2}},
    {{2, 0}, {0, 3}, {2, 3}},                 // k = 0: zeros
    {{0}, {0}, {}},                           // empty dot
    {{0, 2, 3}, {3, 4}, {0, 2, 4}},           // empty batch
    {{2, 0, 3}, {2, 3, 4}, {2, 0, 4}},        // m = 0
    {{3, 2, 0}, {3, 0, 4}, {3, 2, 4}},        // batched k = 0
    {{2, 3}, {3, 0}, {2, 0}},                 // n = 0
};

}  // namespace

// ---- matmul: every case and dtype -----------------------------------------------------

TEST(Matmul, AllCasesAllDtypes) {
  uint32_t seed = 1;
  for (ScalarType dt : kDtypes) {
    for (const Case& c : kMatmulCases) {
      Tensor a = rnd(c.a, dt, seed++), b = rnd(c.b, dt, seed++);
      Tensor r = matmul(a, b);
      SCOPED_TRACE(::testing::Message() << dt << " " << a.sizes() << " @ " << b.sizes());
      EXPECT_EQ(r.dtype(), dt);
      EXPECT_EQ(r.sizes(), IntArrayRef(c.out));
      Tensor want = ref_matmul(a, b);
      if (dt == kUInt8 || dt == kInt32) want = want.to(kInt64).to(dt);  // wraps like the dtype
      EXPECT_TRUE(close(r, want, rtol_of(dt), atol_of(dt)));
      EXPECT_TRUE(close(a.matmul(b), r, 0, 0));
    }
  }
}

TEST(Matmul, KZeroGivesZerosAndBetaZeroIgnoresNan) {
  Tensor r = matmul(ones({2, 0}), ones({0, 3}));
  EXPECT_TRUE(close(r, zeros({2, 3})));
  // mm_out with k = 0 overwrites garbage in out with zeros
  Tensor out = full({2, 3}, std::numeric_limits<double>::quiet_NaN());
  mm_out(out, ones({2, 0}), ones({0, 3}));
  EXPECT_TRUE(close(out, zeros({2, 3}), 0, 0, false));
  // and with k > 0 the NaNs in out are never read
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    Tensor o = full({3, 4}, std::numeric_limits<double>::quiet_NaN(), dt);
    Tensor a = rnd({3, 5}, dt, 7), b = rnd({5, 4}, dt, 8);
    mm_out(o, a, b);
    EXPECT_TRUE(close(o, ref_matmul(a, b), rtol_of(dt), atol_of(dt), false)) << dt;
  }
}

// Shapes large enough for oneDNN / multi-threaded BLAS, vector shapes that go
// to gemv, and a batch of small products that is split across threads.
TEST(Matmul, BlasPathsLargeAndSkinny) {
  const std::vector<Case> cases = {
      {{70, 80}, {80, 90}, {70, 90}},    {{3, 65, 66}, {3, 66, 67}, {3, 65, 67}},
      {{300, 200}, {200}, {300}},        {{200}, {200, 300}, {300}},
      {{1, 200}, {200, 300}, {1, 300}},  {{300, 200}, {200, 1}, {300, 1}},
      {{64, 8, 9}, {64, 9, 10}, {64, 8, 10}}, {{2000, 2, 2}, {2000, 2, 2}, {2000, 2, 2}},
  };
  uint32_t seed = 100;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf, kInt64}) {
    for (const Case& c : cases) {
      Tensor a = rnd(c.a, dt, seed++), b = rnd(c.b, dt, seed++);
      SCOPED_TRACE(::testing::Message() << dt << " " << a.sizes() << " @ " << b.sizes());
      Tensor r = matmul(a, b);
      ASSERT_EQ(r.sizes(), IntArrayRef(c.out));
      const int64_t k = a.size(-1);
      EXPECT_TRUE(close(r, ref_matmul(a, b), rtol_of(dt), atol_of(dt, k)));
      // the transposed layouts of the same values give the same product
      if (a.dim() >= 2 && b.dim() >= 2) {
        Tensor at_ = a.mT().contiguous().mT(), bt = b.mT().contiguous().mT();
        EXPECT_TRUE(close(matmul(at_, bt), r, rtol_of(dt), atol_of(dt, k)));
        EXPECT_TRUE(close(matmul(at_, b), r, rtol_of(dt), atol_of(dt, k)));
      }
    }
  }
}

TEST(Matmul, NonContiguousOperands) {
  uint32_t seed = 300;
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt64}) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor big_a = rnd({6, 8}, dt, seed++), big_b = rnd({10, 12}, dt, seed++);
    // transposed (column-contiguous) operands
    Tensor at_ = rnd({4, 3}, dt, seed++).t(), bt = rnd({5, 4}, dt, seed++).t();  // (3, 4), (4, 5)
    EXPECT_FALSE(at_.is_contiguous());
    EXPECT_TRUE(close(mm(at_, bt), ref_matmul(at_, bt), rtol_of(dt), atol_of(dt)));
    // strided in both dims (neither rows nor columns contiguous): copied
    Tensor as = big_a.slice(0, 0, 6, 2).slice(1, 1, 8, 2);   // (3, 4)
    Tensor bs = big_b.slice(0, 1, 9, 2).slice(1, 0, 12, 3);  // (4, 4)
    EXPECT_TRUE(close(mm(as, bs), ref_matmul(as, bs), rtol_of(dt), atol_of(dt)));
    // row slices keep a unit column stride but a larger lda
    Tensor ar = big_a.narrow(1, 2, 5);                   // (6, 5), stride (8, 1)
    Tensor br = big_b.narrow(0, 3, 5).narrow(1, 1, 7);   // (5, 7), stride (12, 1)
    EXPECT_TRUE(close(mm(ar, br), ref_matmul(ar, br), rtol_of(dt), atol_of(dt)));
    // expanded operands (stride 0 inside the matrix and across the batch)
    Tensor row = rnd({1, 4}, dt, seed++).expand({3, 4});
    Tensor batch_b = rnd({4, 2}, dt, seed++).expand({5, 4, 2});
    EXPECT_TRUE(close(matmul(row, batch_b), ref_matmul(row, batch_b), rtol_of(dt), atol_of(dt)));
    // batched transposes
    Tensor ab = rnd({2, 4, 3}, dt, seed++).transpose(1, 2), bb = rnd({2, 5, 4}, dt, seed++).transpose(1, 2);
    EXPECT_TRUE(close(bmm(ab, bb), ref_matmul(ab, bb), rtol_of(dt), atol_of(dt)));
    // batch dim not outermost in memory
    Tensor ap = rnd({3, 2, 4}, dt, seed++).permute({1, 0, 2});  // (2, 3, 4)
    EXPECT_TRUE(close(bmm(ap, bb), ref_matmul(ap, bb), rtol_of(dt), atol_of(dt)));
    // vectors with a stride
    Tensor v = rnd({8}, dt, seed++).slice(0, 0, 8, 2);
    Tensor m = rnd({3, 4}, dt, seed++);
    EXPECT_TRUE(close(mv(m, v), ref_matmul(m, v), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(dot(v, v), ref_matmul(v, v), rtol_of(dt), atol_of(dt)));
  }
}

TEST(Matmul, OutVariants) {
  Tensor a = rnd({3, 4}, kFloat, 1), b = rnd({4, 5}, kFloat, 2);
  Tensor want = ref_matmul(a, b);
  // an empty out is resized
  Tensor out = empty({0}, kFloat);
  Tensor& r = mm_out(out, a, b);
  EXPECT_TRUE(r.is_same(out));
  EXPECT_TRUE(close(out, want, 1e-5, 1e-5));
  // a transposed out is written in place (column-major C)
  Tensor base = empty({5, 3}, kFloat);
  Tensor tout = base.t();
  mm_out(tout, a, b);
  EXPECT_TRUE(close(base.t(), want, 1e-5, 1e-5));
  // an out with gaps in both dims goes through a scratch buffer
  Tensor big = zeros({6, 10}, kFloat);
  Tensor sout = big.slice(0, 0, 6, 2).slice(1, 0, 10, 2);
  mm_out(sout, a, b);
  EXPECT_TRUE(close(big.slice(0, 0, 6, 2).slice(1, 0, 10, 2), want, 1e-5, 1e-5));
  EXPECT_TRUE(close(big.slice(0, 1, 6, 2), zeros({3, 10}), 0, 0));  // the gaps are untouched
  EXPECT_TRUE(close(big.slice(1, 1, 10, 2), zeros({6, 5}), 0, 0));
  // matmul_out for batched and vector results
  Tensor ba = rnd({2, 3, 4}, kDouble, 3), bb = rnd({4}, kDouble, 4);
  Tensor o = empty({0}, kDouble);
  matmul_out(o, ba, bb);
  EXPECT_TRUE(close(o, ref_matmul(ba, bb)));
  Tensor o2 = empty({2, 3}, kDouble).t().contiguous().t();  // non-contiguous (2, 3) out
  Tensor& r2 = matmul_out(o2, ba, bb);
  EXPECT_TRUE(r2.is_same(o2));
  EXPECT_TRUE(close(o2, ref_matmul(ba, bb)));
  // out aliasing an input: the result is still right
  Tensor sq = rnd({4, 4}, kDouble, 5), sq2 = rnd({4, 4}, kDouble, 6);
  Tensor want_sq = ref_matmul(sq, sq2);
  mm_out(sq, sq, sq2);
  EXPECT_TRUE(close(sq, want_sq));
  // errors
  Tensor wrong = empty({2, 2}, kFloat);
  expect_error([&] { mm_out(wrong, a, b); }, {"[mm_out]", "shape [3, 5]", "[2, 2]"});
  Tensor wrong_dt = empty({3, 5}, kDouble);
  expect_error([&] { mm_out(wrong_dt, a, b); }, {"[mm_out]", "dtype float32", "float64"});
  expect_error([&] { matmul_out(wrong, a, b); }, {"[matmul_out]", "[3, 5]"});
}

// Big products are cut into panels over brisk's threads (OpenBLAS) or
// threaded by oneDNN; every split must give the same values.
TEST(Matmul, ThreadCountsGiveTheSameResult) {
  const int saved = get_num_threads();
  Tensor a = rnd({4, 96, 100}, kFloat, 11), b = rnd({4, 100, 90}, kFloat, 12);
  Tensor want = ref_matmul(a, b);
  // tall (rows split), wide (columns split), with every transpose combination
  Tensor tall_a = rnd({300, 70}, kDouble, 13), tall_b = rnd({70, 90}, kDouble, 14);
  Tensor wide_a = rnd({90, 70}, kDouble, 15), wide_b = rnd({70, 301}, kDouble, 16);
  Tensor want_tall = ref_matmul(tall_a, tall_b), want_wide = ref_matmul(wide_a, wide_b);
  auto tr = [](const Tensor& t) { return t.t().contiguous().t(); };  // same values, column-major
  for (int nt : {1, 2, 3}) {
    set_num_threads(nt);
    EXPECT_TRUE(close(matmul(a, b), want, 1e-4, 1e-4)) << nt << " threads";
    EXPECT_TRUE(close(matmul(a.to(kDouble), b.to(kDouble)), want, 1e-10, 1e-10)) << nt << " threads";
    for (int mask = 0; mask < 4; ++mask) {
      Tensor ta = mask & 1 ? tr(tall_a) : tall_a, tb = mask & 2 ? tr(tall_b) : tall_b;
      Tensor wa = mask & 1 ? tr(wide_a) : wide_a, wb = mask & 2 ? tr(wide_b) : wide_b;
      EXPECT_TRUE(close(mm(ta, tb), want_tall, 1e-10, 1e-10)) << nt << " threads, mask " << mask;
      EXPECT_TRUE(close(mm(wa, wb), want_wide, 1e-10, 1e-10)) << nt << " threads, mask " << mask;
      EXPECT_TRUE(close(mm(wa.to(kFloat), wb.to(kFloat)), want_wide, 1e-4, 1e-4)) << nt << " threads";
    }
    // column-major output: C^T is computed, panels cut along the other side
    Tensor out = empty({301, 90}, kDouble).t();
    mm_out(out, wide_a, wide_b);
    EXPECT_TRUE(close(out, want_wide, 1e-10, 1e-10)) << nt << " threads";
  }
  set_num_threads(saved);
}

// float32 products from 2^26 multiply-adds run as one oneDNN GEMM per thread
// on a panel of C (Note [GEMM panels per thread]): rows or columns, every
// layout, ragged panel sizes, alpha and beta.
TEST(Matmul, Float32PanelsPerThreadMatchTheReference) {
  const int saved = get_num_threads();
  // 1040 x 250 x 260 and 250 x 1041 x 260: just over 2^26
  Tensor tall_a = rnd({1040, 260}, kFloat, 21), tall_b = rnd({260, 250}, kFloat, 22);
  Tensor wide_a = rnd({250, 260}, kFloat, 23), wide_b = rnd({260, 1041}, kFloat, 24);
  Tensor tall_c = rnd({1040, 250}, kFloat, 25), wide_c = rnd({250, 1041}, kFloat, 26);
  auto ref = [](const Tensor& a, const Tensor& b) { return ref_matmul(a.to(kDouble), b.to(kDouble)); };
  const Tensor want_tall = ref(tall_a, tall_b), want_wide = ref(wide_a, wide_b);
  // addmm: 0.5 * c + 2 * a @ b
  const Tensor want_tall_addmm = tall_c.to(kDouble) * 0.5 + want_tall * 2.0;
  const Tensor want_wide_addmm = wide_c.to(kDouble) * 0.5 + want_wide * 2.0;
  auto tr = [](const Tensor& t) { return t.t().contiguous().t(); };
  for (int nt : {1, 2, 3}) {
    set_num_threads(nt);
    for (int mask = 0; mask < 4; ++mask) {
      Tensor ta = mask & 1 ? tr(tall_a) : tall_a, tb = mask & 2 ? tr(tall_b) : tall_b;
      Tensor wa = mask & 1 ? tr(wide_a) : wide_a, wb = mask & 2 ? tr(wide_b) : wide_b;
      EXPECT_TRUE(close(mm(ta, tb).to(kDouble), want_tall, 1e-3, 1e-4)) << nt << " threads, mask " << mask;
      EXPECT_TRUE(close(mm(wa, wb).to(kDouble), want_wide, 1e-3, 1e-4)) << nt << " threads, mask " << mask;
      EXPECT_TRUE(close(addmm(tall_c, ta, tb, 0.5, 2.0).to(kDouble), want_tall_addmm, 1e-3, 1e-4))
          << nt << " threads, mask " << mask;
      EXPECT_TRUE(close(addmm(wide_c, wa, wb, 0.5, 2.0).to(kDouble), want_wide_addmm, 1e-3, 1e-4))
          << nt << " threads, mask " << mask;
    }
  }
  set_num_threads(saved);
}

// ---- mm, bmm, mv, dot, outer, addmm --------------------------------------------------------

TEST(Matmul, NamedProducts) {
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kInt64}) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor a = rnd({3, 4}, dt, 21), b = rnd({4, 5}, dt, 22), v = rnd({4}, dt, 23), w = rnd({4}, dt, 24);
    Tensor ba = rnd({2, 3, 4}, dt, 25), bb = rnd({2, 4, 5}, dt, 26);
    EXPECT_TRUE(close(mm(a, b), ref_matmul(a, b), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(a.mm(b), ref_matmul(a, b), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(bmm(ba, bb), ref_matmul(ba, bb), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(ba.bmm(bb), ref_matmul(ba, bb), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(mv(a, v), ref_matmul(a, v), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(a.mv(v), ref_matmul(a, v), rtol_of(dt), atol_of(dt)));
    Tensor d = dot(v, w);
    EXPECT_EQ(d.dim(), 0);
    EXPECT_TRUE(close(d, ref_matmul(v, w), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(v.dot(w), ref_matmul(v, w), rtol_of(dt), atol_of(dt)));
    // outer(v, w)[i, j] = v[i] * w[j]
    Tensor o = outer(v, rnd({3}, dt, 27));
    Tensor vd = v.to(kDouble), wd = rnd({3}, dt, 27).to(kDouble);
    ASSERT_EQ(o.sizes(), IntArrayRef({4, 3}));
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j)
        EXPECT_NEAR(o[i][j].item<double>(), vd[i].item<double>() * wd[j].item<double>(), 1e-2);
    EXPECT_TRUE(close(v.outer(w), outer(v, w), 0, 0));
  }
  // outer promotes like mul
  Tensor o = outer(tensor({1, 2}), tensor({0.5f, 1.5f}));
  EXPECT_EQ(o.dtype(), kFloat);
  EXPECT_TRUE(close(o, tensor({{0.5f, 1.5f}, {1.0f, 3.0f}})));
}

TEST(Matmul, Addmm) {
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf, kInt64}) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor m1 = rnd({3, 4}, dt, 31), m2 = rnd({4, 5}, dt, 32);
    Tensor prod = ref_matmul(m1, m2);
    for (auto self_shape : {std::vector<int64_t>{3, 5}, {5}, {1, 5}, {3, 1}, {}}) {
      Tensor self = rnd(self_shape, dt, 33);
      const bool is_int = !is_floating_point(dt);
      Scalar beta = is_int ? Scalar(2) : Scalar(0.5), alpha = is_int ? Scalar(-3) : Scalar(1.5);
      Tensor want = self.to(kDouble).expand({3, 5}) * beta.to_double() + prod * alpha.to_double();
      EXPECT_TRUE(close(addmm(self, m1, m2, beta, alpha), want, rtol_of(dt), atol_of(dt)));
      EXPECT_TRUE(close(self.addmm(m1, m2, beta, alpha), want, rtol_of(dt), atol_of(dt)));
      // defaults: beta = alpha = 1
      EXPECT_TRUE(close(addmm(self, m1, m2), self.to(kDouble).expand({3, 5}) + prod, rtol_of(dt), atol_of(dt)));
    }
  }
  // beta = 0: NaN and inf in self are ignored
  Tensor self = full({2, 2}, std::numeric_limits<double>::quiet_NaN());
  self.select(0, 0).select(0, 0).fill_(std::numeric_limits<double>::infinity());
  Tensor m1 = rnd({2, 3}, kFloat, 41), m2 = rnd({3, 2}, kFloat, 42);
  EXPECT_TRUE(close(addmm(self, m1, m2, 0, 2), ref_matmul(m1, m2) * 2.0, 1e-5, 1e-5, false));
  // but beta != 0 propagates them
  EXPECT_TRUE(std::isnan(addmm(self, m1, m2, 1, 1)[1][1].item<double>()));
  // errors
  expect_error([&] { addmm(ones({4, 5}), m1, m2); }, {"[addmm]", "[4, 5]", "[2, 2]"});
  expect_error([&] { addmm(ones({2, 2}, kDouble), m1, m2); }, {"[addmm]", "same dtype", "float64", "float32"});
  // integer tensors truncate float scalars, as PyTorch does: beta 0.5 -> 0, 1.5 -> 1, alpha 2.7 -> 2
  Tensor i5 = full({2, 2}, 5, kInt64), i1 = ones({2, 2}, kInt64);
  EXPECT_TRUE(close(addmm(i5, i1, i1, 0.5), full({2, 2}, 2, kInt64), 0, 0));
  EXPECT_TRUE(close(addmm(i5, i1, i1, 1.5, 2.7), full({2, 2}, 9, kInt64), 0, 0));
}

// Regression (difffuzz matmul:addmm:nan): alpha = 0 ignores the product, so
// inf and NaN in m1 or m2 do not reach the result. torch 1.13 and 2.15:
// addmm([[1], [2]], [[inf, 1], [nan, 2]], [[1], [0]], beta=2, alpha=0) = [[2], [4]];
// with beta=0 too, [[0], [0]]; the integer version [[2], [4]].
TEST(Matmul, AddmmAlphaZeroIgnoresTheProduct) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor s = tensor({1.0, 2.0}).view({2, 1});
  const Tensor a = tensor({inf, 1.0, nan, 2.0}).view({2, 2}), b = tensor({1.0, 0.0}).view({2, 1});
  EXPECT_TRUE(close(addmm(s, a, b, 2, 0), tensor({2.0, 4.0}).view({2, 1}), 0, 0, false));
  EXPECT_TRUE(close(addmm(s, a, b, 0, 0), zeros({2, 1}), 0, 0, false));
  const Tensor si = s.to(kInt64), ai = full({2, 2}, 3, kInt64), bi = b.to(kInt64);
  EXPECT_TRUE(close(addmm(si, ai, bi, 2, 0.5), tensor({2.0, 4.0}).view({2, 1}), 0, 0));
  // the gradient of self is still beta * g
  const Tensor sg = s.detach().requires_grad_();
  addmm(sg, a, b, 2, 0).sum().backward();
  EXPECT_TRUE(close(sg.grad(), full({2, 1}, 2.0), 0, 0));
}

// ---- errors ---------------------------------------------------------------------------------

TEST(Matmul, Errors) {
  expect_error([] { matmul(ones({2, 3}), ones({4, 5})); },
               {"[matmul] shapes [2, 3] and [4, 5]: inner dimensions 3 and 4 differ"});
  expect_error([] { mm(ones({2, 3}), ones({4, 5})); }, {"[mm] shapes [2, 3] and [4, 5]: inner dimensions 3 and 4"});
  expect_error([] { mm(ones({2, 3}), ones({3, 5}, kDouble)); },
               {"[mm] expected m1 and m2 to have the same dtype, but got: float32 != float64"});
  expect_error([] { matmul(ones({2, 3}), ones({3, 5}, kDouble)); }, {"[matmul]", "same dtype", "float32 != float64"});
  expect_error([] { matmul(ones({3}), ones({4})); }, {"[matmul]", "[3] and [4]", "3 and 4 differ"});
  expect_error([] { matmul(ones({2, 2, 3}), ones({3, 3, 4})); }, {"[matmul]", "[2]", "[3]", "broadcast"});
  expect_error([] { matmul(ones({}), ones({3})); }, {"[matmul]", "at least 1D", "0D"});
  expect_error([] { mm(ones({2, 3}, kBool), ones({3, 2}, kBool)); }, {"[mm]", "bool"});
  expect_error([] { matmul(ones({2, 3}, kBool), ones({3, 2}, kBool)); }, {"[matmul]", "bool"});
  expect_error([] { mm(ones({2, 3, 4}), ones({4, 2})); }, {"[mm]", "matrix", "[2, 3, 4]"});
  expect_error([] { bmm(ones({2, 3, 4}), ones({3, 4, 5})); }, {"[bmm]", "batch sizes 2 and 3 differ"});
  expect_error([] { bmm(ones({2, 3, 4}), ones({2, 5, 5})); }, {"[bmm]", "inner dimensions 4 and 5 differ"});
  expect_error([] { bmm(ones({3, 4}), ones({4, 5})); }, {"[bmm]", "batch1 must be a 3D tensor", "[3, 4]"});
  expect_error([] { mv(ones({2, 3}), ones({4})); }, {"[mv]", "[2, 3] and [4]", "3 and 4 differ"});
  expect_error([] { mv(ones({2, 3}), ones({3, 1})); }, {"[mv]", "matrix and a vector"});
  expect_error([] { dot(ones({3}), ones({4})); }, {"[dot]", "[3] and [4]"});
  expect_error([] { dot(ones({3}), ones({3}, kDouble)); }, {"[dot]", "same dtype", "float32 != float64"});
  expect_error([] { dot(ones({3, 1}), ones({3})); }, {"[dot]", "1D tensors expected"});
  expect_error([] { outer(ones({3, 1}), ones({3})); }, {"[outer]", "1-D", "2-D"});
}

// ---- einsum ----------------------------------------------------------------------------------

namespace {
/// t as float64 contiguous for element access by loops.
Tensor d64(const Tensor& t) { return t.to(kDouble).contiguous(); }
double el(const Tensor& t, std::initializer_list<int64_t> idx) { return at(t, std::vector<int64_t>(idx)); }
}  // namespace

TEST(Einsum, MatrixProducts) {
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kInt64}) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor a = rnd({3, 4}, dt, 51), b = rnd({4, 5}, dt, 52);
    Tensor ba = rnd({2, 3, 4}, dt, 53), bb = rnd({2, 4, 5}, dt, 54);
    EXPECT_TRUE(close(einsum("ij,jk->ik", {a, b}), ref_matmul(a, b), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(einsum("ij,jk", {a, b}), ref_matmul(a, b), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(einsum("ij,jk->ki", {a, b}), ref_matmul(a, b).t(), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(einsum("bij,bjk->bik", {ba, bb}), ref_matmul(ba, bb), rtol_of(dt), atol_of(dt)));
    // b transposed in the equation: "bij,bkj->bik" with bb^T stored
    Tensor bbt = bb.transpose(1, 2).contiguous();
    EXPECT_TRUE(close(einsum("bij,bkj->bik", {ba, bbt}), ref_matmul(ba, bb), rtol_of(dt), atol_of(dt)));
    // ellipsis with broadcast batch
    Tensor ea = rnd({2, 1, 3, 4}, dt, 55), eb = rnd({5, 4, 2}, dt, 56);
    EXPECT_TRUE(close(einsum("...ij,...jk->...ik", {ea, eb}), ref_matmul(ea, eb), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(einsum("...ij,...jk", {ea, eb}), ref_matmul(ea, eb), rtol_of(dt), atol_of(dt)));
    // vector patterns
    Tensor v = rnd({4}, dt, 57), w = rnd({4}, dt, 58);
    EXPECT_TRUE(close(einsum("i,i->", {v, w}), ref_matmul(v, w), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(einsum("i,i", {v, w}), ref_matmul(v, w), rtol_of(dt), atol_of(dt)));
    EXPECT_TRUE(close(einsum("ij,j->i", {a, v}), ref_matmul(a, v), rtol_of(dt), atol_of(dt)));
    Tensor o = einsum("i,j->ij", {v, rnd({3}, dt, 59)});
    EXPECT_TRUE(close(o, outer(v, rnd({3}, dt, 59)), rtol_of(dt), atol_of(dt)));
  }
}

TEST(Einsum, SingleOperandAndManualReferences) {
  Tensor a = rnd({3, 4}, kDouble, 61), sq = rnd({4, 4}, kDouble, 62), t3 = rnd({2, 3, 4}, kDouble, 63);
  Tensor A = d64(a), S = d64(sq), T = d64(t3);
  // transpose: a view, like PyTorch
  Tensor tr = einsum("ij->ji", {a});
  EXPECT_TRUE(close(tr, a.t(), 0, 0));
  EXPECT_EQ(tr.data_ptr(), a.data_ptr());
  // diagonal and trace
  Tensor diag = einsum("ii->i", {sq});
  Tensor trace = einsum("ii", {sq});
  double tr_want = 0;
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(diag[i].item<double>(), el(S, {i, i}));
    tr_want += el(S, {i, i});
  }
  EXPECT_EQ(trace.dim(), 0);
  EXPECT_NEAR(trace.item<double>(), tr_want, 1e-12);
  // sums over one or all indices
  Tensor rows = einsum("ij->i", {a}), cols = einsum("ij->j", {a}), all = einsum("ij->", {a});
  double total = 0;
  for (int64_t i = 0; i < 3; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 4; ++j) s += el(A, {i, j});
    EXPECT_NEAR(rows[i].item<double>(), s, 1e-12);
    total += s;
  }
  for (int64_t j = 0; j < 4; ++j) {
    double s = 0;
    for (int64_t i = 0; i < 3; ++i) s += el(A, {i, j});
    EXPECT_NEAR(cols[j].item<double>(), s, 1e-12);
  }
  EXPECT_NEAR(all.item<double>(), total, 1e-12);
  // permutation of three dims, and a sum in the middle
  Tensor p = einsum("ijk->kij", {t3});
  Tensor mid = einsum("ijk->ik", {t3});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(p[k][i][j].item<double>(), el(T, {i, j, k}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      double s = 0;
      for (int64_t j = 0; j < 3; ++j) s += el(T, {i, j, k});
      EXPECT_NEAR(mid[i][k].item<double>(), s, 1e-12);
    }
  // diagonal then sum of a 3-D operand: "iij->j"
  Tensor c3 = rnd({3, 3, 2}, kDouble, 64), C3 = d64(c3);
  Tensor dj = einsum("iij->j", {c3});
  for (int64_t j = 0; j < 2; ++j) {
    double s = 0;
    for (int64_t i = 0; i < 3; ++i) s += el(C3, {i, i, j});
    EXPECT_NEAR(dj[j].item<double>(), s, 1e-12);
  }
}

TEST(Einsum, MultiOperandAndBroadcast) {
  Tensor x = rnd({2, 3, 4}, kDouble, 71), y = rnd({3, 5}, kDouble, 72), z = rnd({5, 4}, kDouble, 73);
  Tensor X = d64(x), Y = d64(y), Z = d64(z);
  // three operands: r[i] = sum_{j,k,l} x[i,j,k] y[j,l] z[l,k]
  Tensor r = einsum("ijk,jl,lk->i", {x, y, z});
  ASSERT_EQ(r.sizes(), IntArrayRef({2}));
  for (int64_t i = 0; i < 2; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k)
        for (int64_t l = 0; l < 5; ++l) s += el(X, {i, j, k}) * el(Y, {j, l}) * el(Z, {l, k});
    EXPECT_NEAR(r[i].item<double>(), s, 1e-10);
  }
  // hadamard and row-wise dot with a size-1 broadcast dim
  Tensor a = rnd({2, 3}, kDouble, 74), b = rnd({2, 3}, kDouble, 75), c = rnd({2, 1}, kDouble, 76);
  EXPECT_TRUE(close(einsum("ij,ij->ij", {a, b}), a * b));
  Tensor rowdot = einsum("ij,ij->i", {c, b});
  for (int64_t i = 0; i < 2; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 3; ++j) s += c[i][0].item<double>() * b[i][j].item<double>();
    EXPECT_NEAR(rowdot[i].item<double>(), s, 1e-12);
  }
  // a summed index only on one side, kept index only on the other
  Tensor s1 = einsum("ij,k->k", {a, rnd({4}, kDouble, 77)});
  double asum = 0;
  for (double v : a.to_vector<double>()) asum += v;
  EXPECT_TRUE(close(s1, rnd({4}, kDouble, 77) * asum, 1e-12, 1e-12));
  // implicit output order: upper case sorts before lower case ("Ba,aC" -> "BC", "aB,BC" -> "Ca")
  EXPECT_EQ(einsum("Ba,aC", {ones({2, 3}), ones({3, 4})}).sizes(), IntArrayRef({2, 4}));
  EXPECT_EQ(einsum("aB,BC", {ones({2, 3}), ones({3, 4})}).sizes(), IntArrayRef({4, 2}));
  // batch broadcast of a size-1 label
  EXPECT_EQ(einsum("bij,bjk->bik", {ones({1, 2, 3}), ones({4, 3, 5})}).sizes(), IntArrayRef({4, 2, 5}));
  EXPECT_TRUE(close(einsum("bij,bjk->bik", {ones({1, 2, 3}), ones({4, 3, 5})}), full({4, 2, 5}, 3.0f)));
  // zero-size contracted dim gives zeros
  EXPECT_TRUE(close(einsum("ij,jk->ik", {ones({2, 0}), ones({0, 3})}), zeros({2, 3})));
  // spaces are ignored
  EXPECT_TRUE(close(einsum(" ij , jk -> ik ", {a, y}), ref_matmul(a, y)));
}

// Regression (difffuzz matmul:einsum:dtype, einsum:unsupported:bool): one
// integer or bool operand with dims summed away gives int64, as PyTorch's
// sum() does (torch 1.13 and 2.15: einsum('bij->bj', int32) is int64, of
// uint8 and bool too); without a sum the dtype stays ('bij->bij', 'bii->bi',
// and products of two operands: 'ij,jk->ik' of uint8 is uint8).
TEST(Einsum, IntegerSumsAreInt64) {
  const Tensor a = arange(24, kInt32).view({2, 3, 4});
  const Tensor s = einsum("bij->bj", {a});
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_TRUE(close(s, a.sum(1), 0, 0));
  EXPECT_EQ(einsum("bij->b", {a.to(kUInt8)}).dtype(), kInt64);
  EXPECT_EQ(einsum("bij->bj", {zeros({2, 0, 4}, kInt32)}).dtype(), kInt64);
  EXPECT_EQ(einsum("bij->bij", {a}).dtype(), kInt32);
  EXPECT_EQ(einsum("bii->bi", {ones({2, 3, 3}, kInt32)}).dtype(), kInt32);
  const Tensor u = ones({4, 5}, kUInt8);
  EXPECT_EQ(einsum("ij,jk->ik", {u.t(), u}).dtype(), kUInt8);
  const Tensor b = tensor({1, 0, 1, 1, 0, 1}, kInt64).view({2, 3}).to(kBool);
  EXPECT_TRUE(close(einsum("ij->ji", {b}), b.t(), 0, 0));
  EXPECT_EQ(einsum("ij->ji", {b}).dtype(), kBool);
  EXPECT_TRUE(close(einsum("ij->j", {b}), tensor({2, 0, 2}, kInt64), 0, 0));
}

TEST(Einsum, Errors) {
  expect_error([] { einsum("ij,jk", {ones({2, 3})}); }, {"[einsum]", "names 2 operands but 1 were given"});
  expect_error([] { einsum("ii", {ones({2, 3})}); }, {"[einsum]", "subscript i is repeated for operand 0", "3 != 2"});
  expect_error([] { einsum("ij,jk", {ones({2, 3}, kBool), ones({3, 2}, kBool)}); }, {"[einsum]", "bool"});
  expect_error([] { einsum("ij,jk->ik", {ones({2, 3}), ones({4, 3})}); },
               {"[einsum]", "subscript j has size 4 for operand 1", "size 3"});
  expect_error([] { einsum("ijk", {ones({2, 3})}); }, {"[einsum]", "operand 0 has 2 dimensions", "names 3"});
  expect_error([] { einsum("ij->ii", {ones({2, 3})}); }, {"[einsum]", "output subscript i appears more than once"});
  expect_error([] { einsum("ij->k", {ones({2, 3})}); }, {"[einsum]", "output subscript k does not appear"});
  expect_error([] { einsum("i1", {ones({2, 3})}); }, {"[einsum]", "invalid subscript '1'"});
  expect_error([] { einsum("i..j", {ones({2, 3})}); }, {"[einsum]", "ellipsis"});
  expect_error([] { einsum("i,i", {ones({2}), ones({2}, kDouble)}); }, {"[einsum]", "same dtype"});
  expect_error([] { einsum("i", {}); }, {"[einsum]", "at least one operand"});
}

// Values printed by PyTorch 1.13 for inputs arange(n).reshape(shape) % 7 - 3.
TEST(Einsum, MatchesTorch) {
  auto inp = [](std::vector<int64_t> shape) {
    return arange(multiply(shape), kDouble).reshape(shape).remainder(7) - 3;
  };
  struct C {
    const char* eq;
    std::vector<Tensor> ops;
    std::vector<int64_t> shape;
    std::vector<double> values;
  };
  const std::vector<C> cases = {
      {"ba", {inp({2, 3})}, {3, 2}, {-3, 0, -2, 1, -1, 2}},
      {"ij,jk->ik", {inp({2, 3}), inp({3, 4})}, {2, 4}, {9, 3, -3, 5, -3, 0, 3, -1}},
      {"iij->j", {inp({3, 3, 2})}, {2}, {-6, -3}},
      {"...ij,...jk",
       {inp({2, 1, 2, 3}), inp({3, 3, 2})},
       {2, 3, 2, 2},
       {10, 4, 1, 4, -5, 10, -2, 1, 1, -5, -5, -2, -8, -10, 4, 4, 15, -8, -3, 4, 17, 15, -3, -3}},
      {"ijk,jl,lk->i", {inp({2, 3, 4}), inp({3, 5}), inp({5, 4})}, {2}, {2, 31}},
      {"ij,ij->i", {inp({2, 1}), inp({2, 3})}, {2}, {18, -6}},
      {"bn,anm,bm->ba", {inp({2, 3}), inp({4, 3, 5}), inp({2, 5})}, {2, 4}, {-18, -16, -35, 2, 15, 19, 44, -1}},
      {"i,i,i->", {inp({4}), inp({4}), inp({4})}, {}, {-36}},
      {"...i->...", {inp({2, 3, 4})}, {2, 3}, {-6, 3, -2, 0, 2, -3}},
      {"ab...,b...->a...", {inp({2, 3, 4}), inp({3, 4})}, {2, 4}, {14, 9, 10, 10, -13, -3, 6, -7}},
      {"jii->ij", {inp({2, 3, 3})}, {3, 2}, {-3, -1, 1, 3, -2, 0}},
  };
  for (const C& c : cases) {
    SCOPED_TRACE(c.eq);
    Tensor r = einsum(c.eq, c.ops);
    EXPECT_TRUE(close(r, tensor(c.values, c.shape, kDouble), 1e-12, 1e-12));
    // the same in float32 and int64
    std::vector<Tensor> f, i;
    for (const Tensor& t : c.ops) f.push_back(t.to(kFloat)), i.push_back(t.to(kInt64));
    EXPECT_TRUE(close(einsum(c.eq, f), tensor(c.values, c.shape, kDouble), 1e-6, 1e-5));
    EXPECT_TRUE(close(einsum(c.eq, i), tensor(c.values, c.shape, kDouble), 0, 0));
  }
}

// bfloat16 products run on a oneDNN bf16 matmul primitive where the CPU has
// AVX512_BF16 (Note [bfloat16 GEMM on oneDNN]), on converted float32
// otherwise. Either way the result is the exact product of the bf16 inputs
// summed in float32, rounded once to bf16: within one bf16 rounding (2^-8
// relative) of a float64 reference, in every layout, with broadcast batches,
// alpha/beta, strided outputs and 1 or 2 threads.
TEST(Matmul, Bfloat16MatchesTheFloat64Reference) {
  const int saved = get_num_threads();
  auto& st = cpu::gemm_stats();
  const uint64_t onednn_before = st.bf16_onednn.load();
  auto tr = [](const Tensor& t) { return t.transpose(-1, -2).contiguous().transpose(-1, -2); };
  auto ref = [](const Tensor& a, const Tensor& b) { return ref_matmul(a.to(kDouble), b.to(kDouble)); };
  // one bf16 rounding of the result (half an ulp is 2^-9 relative), plus
  // float32 summation error for results that cancel to near zero
  auto near = [](const Tensor& got, const Tensor& want, double k) {
    return close(got.to(kDouble), want, 1.0 / 256, 1e-5 * k);
  };
  for (int nt : {1, 2}) {
    set_num_threads(nt);
    for (int mask = 0; mask < 4; ++mask) {
      Tensor a = rnd({3, 70, 300}, kBFloat16, 31), b = rnd({3, 300, 90}, kBFloat16, 32);
      Tensor ua = mask & 1 ? tr(a) : a, ub = mask & 2 ? tr(b) : b;
      EXPECT_TRUE(near(matmul(ua, ub), ref(a, b), 300)) << nt << " threads, mask " << mask;
      // one matrix broadcast over the batch (batch stride 0)
      Tensor w = rnd({300, 90}, kBFloat16, 33);
      EXPECT_TRUE(near(matmul(ua, mask & 2 ? tr(w) : w), ref(a, w.expand({3, 300, 90})), 300)) << nt;
      // 2-D, big enough to be threaded inside
      Tensor x = rnd({256, 512}, kBFloat16, 34), y = rnd({512, 384}, kBFloat16, 35);
      Tensor ux = mask & 1 ? tr(x) : x, uy = mask & 2 ? tr(y) : y;
      EXPECT_TRUE(near(mm(ux, uy), ref(x, y), 512)) << nt << " threads, mask " << mask;
      // addmm: 0.5 * c + 2 * x @ y, into a column-major output
      Tensor c = rnd({256, 384}, kBFloat16, 36);
      Tensor want = c.to(kDouble) * 0.5 + ref(x, y) * 2.0;
      EXPECT_TRUE(near(addmm(c, ux, uy, 0.5, 2.0), want, 512)) << nt << " threads, mask " << mask;
      Tensor out = empty({384, 256}, kBFloat16).t();
      mm_out(out, ux, uy);
      EXPECT_TRUE(near(out, ref(x, y), 512)) << nt << " threads, mask " << mask;
    }
  }
  set_num_threads(saved);
  // a doubly strided view (neither rows nor columns contiguous) is copied first
  Tensor big = rnd({40, 60}, kBFloat16, 37), v = big.slice(0, 0, 40, 2).slice(1, 0, 60, 3);
  Tensor r = rnd({20, 30}, kBFloat16, 38);
  EXPECT_TRUE(near(mm(v, r), ref(v.contiguous(), r), 20));
  if (__builtin_cpu_supports("avx512bf16"))
    EXPECT_GT(st.bf16_onednn.load(), onednn_before) << "this CPU has AVX512_BF16: oneDNN should run bf16 GEMMs";
}
