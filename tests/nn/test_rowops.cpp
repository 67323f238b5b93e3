// Row ops (issue 13): the vectorizable exp against std::exp; softmax,
// log_softmax, layer_norm and rms_norm (and nn::RMSNorm) against naive
// float64 loops, over dtypes, dims, non-contiguous inputs and zero-size
// rows; their fused backward kernels against naive float64 gradients and
// against the composite (create_graph) backward; gradcheck to second order.
#include <brisk/nn.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "autograd/grad_util.h"
#include "backend/cpu/vec_exp.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;

namespace {

class RowOps : public ::testing::Test {
 protected:
  void SetUp() override {
    set_num_threads(1);
    manual_seed(13);
  }
};

std::vector<double> values(const Tensor& x) { return x.to(kDouble).contiguous().to_vector<double>(); }

// ---- exp_vec --------------------------------------------------------------------------------

template <class T>
double ulp_error(T got, long double want) {
  const T w = static_cast<T>(want);
  if (std::isnan(w)) return std::isnan(got) ? 0 : 1e30;
  if (std::isinf(w)) return got == w ? 0 : 1e30;
  if (got == w) return 0;
  T ulp = std::nextafter(std::fabs(w), std::numeric_limits<T>::infinity()) - std::fabs(w);
  if (ulp == 0 || w == 0) ulp = std::numeric_limits<T>::denorm_min();
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}

template <class T>
void check_exp(T lo, T hi, int n, double bound) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> d(lo, hi);
  double worst = 0;
  T at = 0;
  for (int i = 0; i < n; ++i) {
    const T x = static_cast<T>(d(rng));
    const double e = ulp_error(cpu::exp_vec(x), std::exp(static_cast<long double>(x)));
    if (e > worst) worst = e, at = x;
  }
  EXPECT_LE(worst, bound) << "worst at x = " << at;
}

TEST_F(RowOps, ExpVecFloatWithinOneUlp) {
  check_exp<float>(-104.0f, 89.0f, 1 << 20, 1.1);
  check_exp<float>(-10.0f, 10.0f, 1 << 20, 1.1);
  check_exp<float>(-1e-3f, 1e-3f, 1 << 16, 1.1);
}

TEST_F(RowOps, ExpVecDoubleWithinOneUlp) {
  check_exp<double>(-745.0, 709.7, 1 << 20, 1.1);
  check_exp<double>(-5.0, 5.0, 1 << 20, 1.1);
}

TEST_F(RowOps, ExpVecSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, 88.72f, 88.73f, 89.0f, 1e30f, inf, -87.0f, -87.4f, -100.0f, -103.9f,
                  -103.98f, -104.0f, -1e30f, -inf, 1e-30f, -1e-30f, 1e-45f}) {
    const float got = cpu::exp_vec(x), want = std::exp(x);
    EXPECT_LE(ulp_error(got, std::exp(static_cast<long double>(x))), 1.1) << "x = " << x;
    EXPECT_EQ(std::isinf(got), std::isinf(want)) << "x = " << x;
    EXPECT_EQ(got == 0, want == 0) << "x = " << x;
  }
  EXPECT_TRUE(std::isnan(cpu::exp_vec(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(cpu::exp_vec(-inf), 0.0f);
  EXPECT_FALSE(std::signbit(cpu::exp_vec(-inf)));
  EXPECT_EQ(cpu::exp_vec(inf), inf);
  const double dinf = std::numeric_limits<double>::infinity();
  for (double x : {0.0, -0.0, 709.78, 709.79, 710.0, 1e300, dinf, -708.0, -740.0, -745.1, -745.2, -746.0, -dinf}) {
    const double got = cpu::exp_vec(x), want = std::exp(x);
    EXPECT_LE(ulp_error(got, std::exp(static_cast<long double>(x))), 1.1) << "x = " << x;
    EXPECT_EQ(got == 0, want == 0) << "x = " << x;
    EXPECT_EQ(std::isinf(got), std::isinf(want)) << "x = " << x;
  }
  EXPECT_TRUE(std::isnan(cpu::exp_vec(std::numeric_limits<double>::quiet_NaN())));
}

// ---- softmax / log_softmax -----------------------------------------------------------------------

/// softmax (or log_softmax) of x along dim in float64 loops.
std::vector<double> ref_softmax(const Tensor& x, int64_t dim, bool log) {
  const std::vector<double> v = values(x);
  int64_t outer = 1, n = x.size(dim), inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return (o * n + i) * inner + j; };
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i) mx = std::max(mx, v[at(i)]);
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += std::exp(v[at(i)] - mx);
      for (int64_t i = 0; i < n; ++i) out[at(i)] = log ? v[at(i)] - mx - std::log(s) : std::exp(v[at(i)] - mx) / s;
    }
  return out;
}

/// Gradient of sum(g * softmax(x)) in float64 loops, from y = softmax(x)
/// (log: y = log_softmax(x)).
std::vector<double> ref_softmax_grad(const std::vector<double>& y, const std::vector<double>& g, IntArrayRef sizes,
                                     int64_t dim, bool log) {
  int64_t outer = 1, n = sizes[dim], inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= sizes[d];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(sizes.size()); ++d) inner *= sizes[d];
  std::vector<double> out(y.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return (o * n + i) * inner + j; };
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += log ? g[at(i)] : g[at(i)] * y[at(i)];
      for (int64_t i = 0; i < n; ++i)
        out[at(i)] = log ? g[at(i)] - std::exp(y[at(i)]) * s : y[at(i)] * (g[at(i)] - s);
    }
  return out;
}

Tensor vec_tensor(const std::vector<double>& v, IntArrayRef sizes) { return tensor(v, kDouble).view(sizes); }

struct Tol {
  double rtol, atol;
};
Tol tol_for(ScalarType t) {
  switch (t) {
    case kDouble: return {1e-12, 1e-13};
    case kFloat: return {2e-6, 1e-7};
    case kHalf: return {2e-3, 2e-4};
    default: return {1.6e-2, 2e-3};
  }
}

TEST_F(RowOps, SoftmaxForwardMatchesReference) {
  for (ScalarType dt : {kDouble, kFloat, kHalf, kBFloat16})
    for (bool log : {false, true})
      for (auto sizes : std::vector<std::vector<int64_t>>{{7, 33}, {3, 4101}, {2, 5, 9}, {4, 1}, {1, 300, 3}, {130}})
        for (int64_t dim = 0; dim < static_cast<int64_t>(sizes.size()); ++dim) {
          const Tensor x = (randn(sizes, kDouble) * 3.0).to(dt);
          const Tensor y = log ? x.log_softmax(dim) : x.softmax(dim);
          ASSERT_EQ(y.dtype(), dt);
          const Tol t = tol_for(dt);
          // log_softmax values reach ~-20: an absolute bound on their scale
          EXPECT_TRUE(close(y, vec_tensor(ref_softmax(x, dim, log), IntArrayRef(sizes)), t.rtol,
                            log ? t.atol * 20 : t.atol))
              << dt << " log=" << log << " sizes " << IntArrayRef(sizes) << " dim " << dim;
        }
}

TEST_F(RowOps, SoftmaxNonContiguousAndDtypeArgument) {
  const Tensor base = randn({40, 70}, kFloat);
  const Tensor x = base.t();  // (70, 40), rows strided
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_TRUE(close(x.softmax(1), vec_tensor(ref_softmax(x, 1, false), {70, 40}), 2e-6, 1e-7));
  EXPECT_TRUE(close(x.log_softmax(0), vec_tensor(ref_softmax(x, 0, true), {70, 40}), 2e-6, 2e-6));
  const Tensor h = randn({5, 64}, kFloat).to(kHalf);
  const Tensor y = h.softmax(1, kFloat);
  EXPECT_EQ(y.dtype(), kFloat);
  EXPECT_TRUE(close(y, vec_tensor(ref_softmax(h, 1, false), {5, 64}), 2e-6, 1e-7));
}

TEST_F(RowOps, SoftmaxSpecialRowsAndEmpty) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : {kFloat, kDouble}) {
    // a row with -inf entries, a row of all -inf (NaN, as torch), a row with NaN, a row with +inf
    Tensor x = tensor(std::vector<double>{1, -inf, 2, -inf, -inf, -inf, -inf, -inf, 0, nan, 1, 2, 0, inf, 1, 2},
                      kDouble)
                   .view({4, 4})
                   .to(dt);
    const std::vector<double> y = values(x.softmax(1));
    EXPECT_EQ(y[1], 0.0);
    EXPECT_NEAR(y[0] + y[2] + y[3], 1.0, 1e-6);
    for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(y[i]));
    for (int i = 8; i < 12; ++i) EXPECT_TRUE(std::isnan(y[i]));
    for (int i = 12; i < 16; ++i) EXPECT_TRUE(std::isnan(y[i]));  // inf - inf
    const std::vector<double> ly = values(x.log_softmax(1));
    EXPECT_EQ(ly[1], -inf);
    // large magnitudes: no overflow
    const Tensor big = tensor(std::vector<double>{1e4, 1e4 - 1, -1e4}, kDouble).to(dt);
    EXPECT_TRUE(close(big.softmax(0), tensor(std::vector<double>{1 / (1 + std::exp(-1.0)), std::exp(-1.0) / (1 + std::exp(-1.0)), 0}, kDouble), 1e-6, 1e-7));
  }
  for (auto sizes : std::vector<std::vector<int64_t>>{{0, 5}, {5, 0}, {0}, {2, 0, 3}}) {
    const Tensor x = randn(sizes, kFloat).requires_grad_();
    for (int64_t dim = 0; dim < static_cast<int64_t>(sizes.size()); ++dim) {
      Tensor y = x.softmax(dim);
      EXPECT_EQ(y.sizes(), x.sizes());
      y.sum().backward();
      EXPECT_EQ(x.grad().sizes(), x.sizes());
      Tensor ly = x.log_softmax(dim);
      EXPECT_EQ(ly.sizes(), x.sizes());
    }
  }
  // 0-dim
  const Tensor s = tensor(std::vector<double>{2.5}, kFloat).view({}).requires_grad_();
  Tensor y = s.softmax(0);
  EXPECT_EQ(y.item<float>(), 1.0f);
  y.backward();
  EXPECT_EQ(s.grad().item<float>(), 0.0f);
}

// The contiguous rows' vector path (Note [Softmax rows in vectors]): NaN,
// +inf and -inf in the vectors' body and in the tail, rows of all -inf, at
// lengths with and without a tail and over several chunks; the other rows
// of the same call against the float64 reference.
TEST_F(RowOps, SoftmaxSpecialValuesInLongRows) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : {kFloat, kDouble})
    for (int64_t n : {int64_t(64), int64_t(100), int64_t(4101)}) {
      // rows: 0 plain, 1 NaN in the body, 2 NaN in the tail, 3 +inf in the
      // body, 4 all -inf, 5 -inf in the body and the tail, 6 plain
      Tensor xd = randn({7, n}, kDouble) * 4.0;
      double* p = xd.data_ptr<double>();
      p[1 * n + 5] = nan;
      p[2 * n + n - 1] = nan;
      p[3 * n + 17] = inf;
      for (int64_t i = 0; i < n; ++i) p[4 * n + i] = -inf;
      p[5 * n + 3] = -inf;
      p[5 * n + n - 2] = -inf;
      const Tensor x = xd.to(dt);
      for (bool log : {false, true}) {
        const std::vector<double> y = values(log ? x.log_softmax(1) : x.softmax(1));
        const std::vector<double> want = ref_softmax(x, 1, log);
        for (int64_t r : {1, 2, 3, 4})
          for (int64_t i = 0; i < n; ++i)
            ASSERT_TRUE(std::isnan(y[r * n + i])) << dt << " n=" << n << " log=" << log << " row " << r << " at " << i;
        const Tol t = tol_for(dt);
        for (int64_t r : {0, 5, 6})
          for (int64_t i = 0; i < n; ++i) {
            const double w = want[r * n + i], g = y[r * n + i];
            if (std::isinf(w)) {
              ASSERT_EQ(g, w) << dt << " n=" << n << " row " << r << " at " << i;
              continue;
            }
            ASSERT_NEAR(g, w, t.rtol * std::abs(w) + (log ? t.atol * 20 : t.atol))
                << dt << " n=" << n << " log=" << log << " row " << r << " at " << i;
          }
        // the -inf entries: probability 0, log-probability -inf
        EXPECT_EQ(y[5 * n + 3], log ? -inf : 0.0);
        EXPECT_EQ(y[5 * n + n - 2], log ? -inf : 0.0);
      }
    }
}

TEST_F(RowOps, SoftmaxFusedBackwardMatchesReference) {
  for (ScalarType dt : {kDouble, kFloat, kHalf, kBFloat16})
    for (bool log : {false, true})
      for (auto sizes : std::vector<std::vector<int64_t>>{{6, 37}, {3, 4099}, {2, 5, 9}, {1, 300, 3}})
        for (int64_t dim = 0; dim < static_cast<int64_t>(sizes.size()); ++dim) {
          const Tensor x = (randn(sizes, kDouble) * 2.0).to(dt).requires_grad_();
          const Tensor g = randn(sizes, kDouble).to(dt);
          const Tensor y = log ? x.log_softmax(dim) : x.softmax(dim);
          y.backward(g);
          const std::vector<double> want = ref_softmax_grad(values(y), values(g), IntArrayRef(sizes), dim, log);
          const Tol t = tol_for(dt);
          EXPECT_TRUE(close(x.grad(), vec_tensor(want, IntArrayRef(sizes)), t.rtol * 4, t.atol * 8))
              << dt << " log=" << log << " sizes " << IntArrayRef(sizes) << " dim " << dim;
          EXPECT_EQ(x.grad().dtype(), dt);
        }
}

TEST_F(RowOps, SoftmaxFusedBackwardEqualsCompositeBackward) {
  // create_graph runs the composite (differentiable) formula; the plain
  // backward the fused kernel: they agree.
  for (bool log : {false, true}) {
    const Tensor x = leaf({9, 130});
    const Tensor g = randn({9, 130}, kDouble);
    Tensor y = log ? x.log_softmax(1) : x.softmax(1);
    const Tensor composite = autograd::grad({y}, {x}, {g}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    const Tensor fused = autograd::grad({y}, {x}, {g})[0];
    EXPECT_TRUE(close(fused, composite, 1e-12, 1e-14));
  }
}

TEST_F(RowOps, SoftmaxGradcheck) {
  for (bool log : {false, true})
    for (int64_t dim : {0, 1, 2}) {
      const Tensor x = leaf({3, 4, 5});
      EXPECT_TRUE(gradcheck_ok([&](const TensorList& in) { return log ? in[0].log_softmax(dim) : in[0].softmax(dim); },
                               {x}, /*grad_grad=*/true))
          << "log=" << log << " dim " << dim;
    }
  const Tensor xn = brisk::testing::leaf_noncontig({6, 7});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return in[0].softmax(1); }, {xn}, true));
}

TEST_F(RowOps, SoftmaxThreadCountDoesNotChangeResults) {
  const Tensor x = randn({64, 2048}, kFloat).requires_grad_();
  const Tensor g = randn({64, 2048}, kFloat);
  Tensor y1 = x.softmax(1);
  y1.backward(g);
  const Tensor g1 = x.grad().clone();
  x.mutable_grad() = Tensor();
  set_num_threads(2);
  Tensor y2 = x.softmax(1);
  y2.backward(g);
  set_num_threads(1);
  EXPECT_TRUE(y1.equal(y2));
  EXPECT_TRUE(g1.equal(x.grad()));
}

// ---- layer_norm / rms_norm ---------------------------------------------------------------------

struct RowRef {
  std::vector<double> y, dx, dw, db;
};

/// layer_norm (rms: rms_norm) of x seen as (R, N) rows in float64 loops,
/// and the gradients of sum(g * y).
RowRef ref_row_norm(const Tensor& x, int64_t N, const Tensor& w, const Tensor& b, const Tensor& g, double eps,
                    bool rms) {
  const std::vector<double> xv = values(x), gv = g.defined() ? values(g) : std::vector<double>(xv.size(), 0.0);
  const std::vector<double> wv = w.defined() ? values(w) : std::vector<double>(N, 1.0);
  const std::vector<double> bv = b.defined() ? values(b) : std::vector<double>(N, 0.0);
  const int64_t R = N == 0 ? 0 : static_cast<int64_t>(xv.size()) / N;
  RowRef r{std::vector<double>(xv.size()), std::vector<double>(xv.size()), std::vector<double>(N, 0.0),
           std::vector<double>(N, 0.0)};
  for (int64_t i = 0; i < R; ++i) {
    const double* xr = &xv[i * N];
    const double* gr = &gv[i * N];
    double mu = 0, var = 0;
    if (!rms) {
      for (int64_t j = 0; j < N; ++j) mu += xr[j];
      mu /= double(N);
    }
    for (int64_t j = 0; j < N; ++j) var += (xr[j] - mu) * (xr[j] - mu);
    var /= double(N);
    const double rs = 1.0 / std::sqrt(var + eps);
    double a = 0, c = 0;
    for (int64_t j = 0; j < N; ++j) {
      const double xh = (xr[j] - mu) * rs;
      r.y[i * N + j] = xh * wv[j] + (rms ? 0.0 : bv[j]);
      a += gr[j] * wv[j];
      c += gr[j] * wv[j] * xh;
      r.dw[j] += gr[j] * xh;
      r.db[j] += gr[j];
    }
    for (int64_t j = 0; j < N; ++j) {
      const double xh = (xr[j] - mu) * rs;
      r.dx[i * N + j] = rs * (gr[j] * wv[j] - (rms ? 0.0 : a / double(N)) - xh * c / double(N));
    }
  }
  return r;
}

TEST_F(RowOps, LayerNormAndRmsNormMatchReference) {
  for (bool rms : {false, true})
    for (ScalarType dt : {kDouble, kFloat, kHalf, kBFloat16})
      for (auto sizes : std::vector<std::vector<int64_t>>{{5, 37}, {3, 4099}, {2, 3, 8}, {1, 1}, {4, 2}})
        for (int k : {1, 2})
          for (int affine = 0; affine < 3; ++affine) {  // none, weight, weight + bias
            if (k > static_cast<int>(sizes.size())) continue;
            std::vector<int64_t> shape(sizes.end() - k, sizes.end());
            int64_t N = 1;
            for (int64_t s : shape) N *= s;
            const Tensor x = (randn(sizes, kDouble) * 2.0 + 0.5).to(dt).requires_grad_();
            const Tensor w = affine >= 1 ? (randn(shape, kDouble) + 1.0).to(dt).requires_grad_() : Tensor();
            const Tensor b = affine >= 2 && !rms ? randn(shape, kDouble).to(dt).requires_grad_() : Tensor();
            const Tensor g = randn(sizes, kDouble).to(dt);
            const double eps = 1e-5;
            const Tensor y = rms ? F::rms_norm(x, shape, w, eps) : F::layer_norm(x, shape, w, b, eps);
            ASSERT_EQ(y.dtype(), dt);
            y.backward(g);
            const RowRef r = ref_row_norm(x.detach(), N, w.defined() ? w.detach() : Tensor(),
                                          b.defined() ? b.detach() : Tensor(), g, eps, rms);
            Tol t = tol_for(dt);
            if (dt == kFloat) t = {2e-5, 2e-5};
            const std::string what = std::string(rms ? "rms_norm " : "layer_norm ") + std::to_string(int(dt)) +
                                     " affine " + std::to_string(affine) + " k " + std::to_string(k);
            EXPECT_TRUE(close(y, vec_tensor(r.y, IntArrayRef(sizes)), t.rtol, t.atol * 10)) << what << " " << IntArrayRef(sizes);
            EXPECT_TRUE(close(x.grad(), vec_tensor(r.dx, IntArrayRef(sizes)), t.rtol * 10, t.atol * 50))
                << what << " dx " << IntArrayRef(sizes);
            if (w.defined()) {
              EXPECT_EQ(w.grad().dtype(), dt);
              EXPECT_TRUE(close(w.grad(), vec_tensor(r.dw, IntArrayRef(shape)), t.rtol * 10, t.atol * 100))
                  << what << " dw " << IntArrayRef(sizes);
            }
            if (b.defined())
              EXPECT_TRUE(close(b.grad(), vec_tensor(r.db, IntArrayRef(shape)), t.rtol * 10, t.atol * 100))
                  << what << " db " << IntArrayRef(sizes);
          }
}

TEST_F(RowOps, RowNormsNonContiguousMixedDtypesAndEmpty) {
  const Tensor base = randn({24, 10}, kFloat);
  const Tensor x = base.t();  // (10, 24)
  const Tensor w = randn({24}, kFloat), b = randn({24}, kFloat);
  const RowRef r = ref_row_norm(x, 24, w, b, Tensor(), 1e-5, false);
  EXPECT_TRUE(close(F::layer_norm(x, {24}, w, b), vec_tensor(r.y, {10, 24}), 2e-5, 2e-5));
  const RowRef q = ref_row_norm(x, 24, w, Tensor(), Tensor(), 1e-6, true);
  EXPECT_TRUE(close(F::rms_norm(x, {24}, w, 1e-6), vec_tensor(q.y, {10, 24}), 2e-5, 2e-5));
  // float32 parameters of a float16 input: PyTorch's mixed kernel, in float32 with the output
  // rounded to the input's dtype once (brisk promoted it to float32 before: a silent dtype
  // divergence); the gradients keep each tensor's dtype
  const Tensor xh = randn({3, 8}, kFloat).to(kHalf).requires_grad_();
  const Tensor wf = randn({8}, kFloat).requires_grad_(), bf = randn({8}, kFloat);
  Tensor yh = F::layer_norm(xh, {8}, wf, bf);
  EXPECT_EQ(yh.dtype(), kHalf);
  EXPECT_TRUE(yh.equal(F::layer_norm(xh.detach().to(kFloat), {8}, wf.detach(), bf).to(kHalf)));
  yh.sum().backward();
  EXPECT_EQ(xh.grad().dtype(), kHalf);
  EXPECT_EQ(wf.grad().dtype(), kFloat);
  // the mixes PyTorch refuses raise (a float32 input with bfloat16 or float64 parameters, a
  // 16-bit input with parameters of two dtypes)
  expect_error([&] { F::layer_norm(randn({3, 8}), {8}, ones({8}, kBFloat16)); },
               {"[layer_norm]", "mixed dtypes", "weight bfloat16"});
  expect_error([&] { F::layer_norm(randn({3, 8}), {8}, ones({8}), zeros({8}, kDouble)); },
               {"[layer_norm]", "mixed dtypes", "bias float64"});
  expect_error([&] { F::layer_norm(xh, {8}, ones({8}, kHalf), zeros({8})); },
               {"[layer_norm]", "or all be float32", "weight float16, bias float32"});
  EXPECT_EQ(F::rms_norm(xh, {8}, randn({8}, kFloat)).dtype(), kHalf);  // PyTorch 2.x: x's dtype
  EXPECT_EQ(F::rms_norm(xh, {8}).dtype(), kHalf);
  // zero rows, zero-size rows
  for (bool rms : {false, true}) {
    const Tensor e = randn({0, 6}, kFloat).requires_grad_();
    const Tensor we = ones({6}, kFloat).requires_grad_();
    Tensor y = rms ? F::rms_norm(e, {6}, we) : F::layer_norm(e, {6}, we);
    EXPECT_EQ(y.sizes(), e.sizes());
    y.sum().backward();
    EXPECT_EQ(e.grad().sizes(), e.sizes());
    EXPECT_TRUE(we.grad().equal(zeros({6}, kFloat)));
    const Tensor z = randn({3, 0}, kFloat);
    EXPECT_EQ((rms ? F::rms_norm(z, {0}) : F::layer_norm(z, {0})).sizes(), z.sizes());
  }
}

TEST_F(RowOps, RowNormsOverflowGivesNaN) {
  // A variance past float32's range: NaN, as PyTorch (not an output of exactly the bias).
  const Tensor x = tensor(std::vector<double>{-3e19, 3e19, 0, 1}, kDouble).to(kFloat).view({1, 4});
  const std::vector<double> y = values(F::layer_norm(x, {4}, Tensor(), ones({4}, kFloat)));
  for (double v : y) EXPECT_TRUE(std::isnan(v));
}

TEST_F(RowOps, RowNormsGradcheck) {
  for (bool rms : {false, true})
    for (bool noncontig : {false, true}) {
      const Tensor x = noncontig ? brisk::testing::leaf_noncontig({5, 6}) : leaf({2, 3, 6});
      const std::vector<int64_t> shape{6};
      const Tensor w = leaf({6}, 0.5, 1.5), b = leaf({6});
      auto fn = [&](const TensorList& in) {
        return rms ? F::rms_norm(in[0], shape, in[1], 1e-5) : F::layer_norm(in[0], shape, in[1], in[2], 1e-5);
      };
      EXPECT_TRUE(gradcheck_ok(fn, rms ? TensorList{x, w} : TensorList{x, w, b}, /*grad_grad=*/true))
          << "rms=" << rms << " noncontig=" << noncontig;
    }
  // two normalized dims, no affine
  const Tensor x = leaf({3, 2, 4});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return F::layer_norm(in[0], {2, 4}); }, {x}, true));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return F::rms_norm(in[0], {2, 4}); }, {x}, true));
}

TEST_F(RowOps, RowNormsFusedBackwardEqualsComposite) {
  for (bool rms : {false, true}) {
    const Tensor x = leaf({7, 50}), w = leaf({50}), b = leaf({50});
    const Tensor g = randn({7, 50}, kDouble);
    Tensor y = rms ? F::rms_norm(x, {50}, w) : F::layer_norm(x, {50}, w, b);
    TensorList in = rms ? TensorList{x, w} : TensorList{x, w, b};
    const TensorList composite = autograd::grad({y}, in, {g}, /*retain_graph=*/true, /*create_graph=*/true);
    const TensorList fused = autograd::grad({y}, in, {g});
    for (size_t i = 0; i < in.size(); ++i) EXPECT_TRUE(close(fused[i], composite[i], 1e-10, 1e-12)) << i;
  }
}

TEST_F(RowOps, RowNormsThreadCountDoesNotChangeResults) {
  for (bool rms : {false, true}) {
    const Tensor x = randn({300, 512}, kFloat).requires_grad_();
    const Tensor w = randn({512}, kFloat).requires_grad_(), b = randn({512}, kFloat).requires_grad_();
    const Tensor g = randn({300, 512}, kFloat);
    auto run = [&] {
      x.mutable_grad() = Tensor();
      w.mutable_grad() = Tensor();
      b.mutable_grad() = Tensor();
      Tensor y = rms ? F::rms_norm(x, {512}, w) : F::layer_norm(x, {512}, w, b);
      y.backward(g);
      return TensorList{y.detach(), x.grad().clone(), w.grad().clone()};
    };
    const TensorList one = run();
    set_num_threads(2);
    const TensorList two = run();
    set_num_threads(1);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(one[i].equal(two[i])) << "rms=" << rms << " " << i;
  }
}

TEST_F(RowOps, RmsNormEpsNoneAndModule) {
  // eps=None: the machine epsilon of the compute dtype (PyTorch 2.15: float32's for 16-bit inputs)
  const float feps = std::numeric_limits<float>::epsilon();
  const Tensor x = (randn({4, 16}, kDouble) * 1e-4).to(kFloat);
  EXPECT_TRUE(F::rms_norm(x, {16}).equal(F::rms_norm(x, {16}, Tensor(), feps)));
  EXPECT_FALSE(F::rms_norm(x, {16}).equal(F::rms_norm(x, {16}, Tensor(), 1e-5)));
  const Tensor xb = x.to(kBFloat16);
  EXPECT_TRUE(F::rms_norm(xb, {16}).equal(F::rms_norm(xb, {16}, Tensor(), feps)));
  const Tensor xh = x.to(kHalf);
  EXPECT_TRUE(F::rms_norm(xh, {16}).equal(F::rms_norm(xh, {16}, Tensor(), feps)));
  const Tensor xd = x.to(kDouble) * 1e-6;
  EXPECT_TRUE(F::rms_norm(xd, {16}).equal(F::rms_norm(xd, {16}, Tensor(), std::numeric_limits<double>::epsilon())));
  // 16-bit: x * rstd * w in float32, rounded once (as PyTorch 2.15's fused kernel)
  {
    const Tensor h = randn({3, 64}, kFloat).to(kHalf), wh = randn({64}, kFloat).to(kHalf);
    const Tensor hf = h.to(kFloat);
    const Tensor want = (hf * ((hf * hf).mean(-1, true) + 1e-5).rsqrt() * wh.to(kFloat)).to(kHalf);
    // (rstd may differ in its last float bit from this reference; rounding
    // twice, to float16 before the weight, differed in ~25% of the elements)
    const double same = F::rms_norm(h, {64}, wh, 1e-5).eq(want).to(kDouble).mean().item<double>();
    EXPECT_GE(same, 0.97);
  }

  nn::RMSNorm m(std::vector<int64_t>{16});
  ASSERT_TRUE(m->weight.defined());
  EXPECT_TRUE(m->weight.equal(ones({16}, kFloat)));
  EXPECT_TRUE(m->weight.requires_grad());
  EXPECT_EQ(m->named_parameters().size(), 1u);
  EXPECT_TRUE(m->forward(x).equal(F::rms_norm(x, {16}, m->weight)));
  EXPECT_EQ(m->extra_repr(), "(16,), eps=None, elementwise_affine=true");
  nn::RMSNorm m2(std::vector<int64_t>{4, 16}, 1e-3, /*elementwise_affine=*/false);
  EXPECT_FALSE(m2->weight.defined());
  EXPECT_EQ(m2->named_parameters().size(), 0u);
  const Tensor x3 = randn({2, 4, 16}, kFloat);
  EXPECT_TRUE(m2->forward(x3).equal(F::rms_norm(x3, {4, 16}, Tensor(), 1e-3)));
}

TEST_F(RowOps, RowNormErrors) {
  const Tensor x = randn({3, 4}, kFloat);
  expect_error([&] { F::rms_norm(x, {5}); }, {"rms_norm", "does not end with normalized_shape"});
  expect_error([&] { F::rms_norm(x, {4}, ones({3})); }, {"rms_norm", "weight shape"});
  expect_error([&] { F::rms_norm(x.to(kInt64), {4}); }, {"rms_norm", "floating point"});
  expect_error([&] { F::layer_norm(x, {4}, Tensor(), ones({2})); }, {"layer_norm", "bias shape"});
  expect_error([&] { F::layer_norm(x, {4}, ones({4}, kInt64)); }, {"layer_norm", "floating point weight"});
}


// ---- cross_entropy (fused log_softmax + nll) ---------------------------------------------------

struct CeRef {
  std::vector<double> loss;  // per row
  std::vector<double> grad;  // of the reduced loss (per row: of sum(loss * g) for none)
  double reduced = 0;
};

/// cross_entropy of (R, C) logits with class indices in float64 loops.
CeRef ref_cross_entropy(const Tensor& x, const std::vector<int64_t>& t, const std::vector<double>& w, int64_t ignore,
                        double ls, nn::Reduction red, const std::vector<double>& g_none) {
  const int64_t R = x.size(0), C = x.size(1);
  const std::vector<double> v = values(x);
  double W = 0, wsum = 0;
  for (double c : w) W += c;
  CeRef r{std::vector<double>(R, 0.0), std::vector<double>(R * C, 0.0), 0};
  std::vector<double> wt(R, 0.0);
  for (int64_t i = 0; i < R; ++i) {
    if (t[i] == ignore) continue;
    const double* xr = &v[i * C];
    double mx = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, xr[c]);
    for (int64_t c = 0; c < C; ++c) s += std::exp(xr[c] - mx);
    const double lse = mx + std::log(s);
    double sm = 0;
    for (int64_t c = 0; c < C; ++c) sm += w[c] * (xr[c] - lse);
    wt[i] = w[t[i]];
    wsum += wt[i];
    r.loss[i] = (1 - ls) * -w[t[i]] * (xr[t[i]] - lse) + ls / double(C) * -sm;
    for (int64_t c = 0; c < C; ++c) {
      const double p = std::exp(xr[c] - lse);
      r.grad[i * C + c] = (1 - ls) * w[t[i]] * (p - (c == t[i] ? 1.0 : 0.0)) + ls / double(C) * (W * p - w[c]);
    }
  }
  double scale = 1;
  if (red == nn::kMean) scale = 1 / wsum;
  for (int64_t i = 0; i < R; ++i) {
    r.reduced += r.loss[i] * scale;
    const double gi = red == nn::kNone ? g_none[i] : scale;
    for (int64_t c = 0; c < C; ++c) r.grad[i * C + c] *= gi;
  }
  return r;
}

TEST_F(RowOps, CrossEntropyFusedMatchesReference) {
  const int64_t R = 37, C = 45;
  std::vector<int64_t> t0(R);
  for (int64_t i = 0; i < R; ++i) t0[i] = (i * 7) % C;
  t0[10] = 5;
  for (ScalarType dt : {kDouble, kFloat, kHalf, kBFloat16})
    for (bool weighted : {false, true})
      for (double ls : {0.0, 0.2})
        for (nn::Reduction red : {nn::kNone, nn::kSum, nn::kMean})
          for (int64_t ignore : {int64_t(-100), int64_t(5)}) {
            std::vector<int64_t> t = t0;
            t[3] = ignore;
            const Tensor x = (randn({R, C}, kDouble) * 2.0).to(dt).requires_grad_();
            std::vector<double> wv(C, 1.0);
            Tensor w;
            if (weighted) {
              w = (rand({C}, kDouble) + 0.5).to(dt);
              wv = values(w);
            }
            const Tensor g = randn({R}, kDouble).to(dt);
            const Tensor loss = F::cross_entropy(
                x, tensor(t), F::CrossEntropyFuncOptions().weight(w).ignore_index(ignore).label_smoothing(ls).reduction(red));
            ASSERT_EQ(loss.dtype(), dt);
            if (red == nn::kNone)
              loss.backward(g);
            else
              loss.backward();
            const CeRef r = ref_cross_entropy(x.detach(), t, wv, ignore, ls, red, values(g));
            const Tol tl = tol_for(dt);
            const double rt = dt == kDouble ? 1e-10 : dt == kFloat ? 1e-5 : tl.rtol * 4;
            const std::string what = "dtype " + std::to_string(int(dt)) + " weighted " + std::to_string(weighted) +
                                     " ls " + std::to_string(ls) + " red " + std::to_string(int(red)) + " ignore " +
                                     std::to_string(ignore);
            if (red == nn::kNone)
              EXPECT_TRUE(close(loss, tensor(r.loss, kDouble), rt, rt)) << what;
            else
              EXPECT_NEAR(loss.item<double>(), r.reduced, rt * std::abs(r.reduced) * 40 + rt) << what;
            EXPECT_TRUE(close(x.grad(), vec_tensor(r.grad, {R, C}), rt * 4, rt * 4)) << what;
          }
}

TEST_F(RowOps, CrossEntropyEdgeCases) {
  // every target ignored: the mean is NaN (0 / 0), the gradient 0, as PyTorch
  const Tensor x = randn({4, 6}, kFloat).requires_grad_();
  const Tensor t = full({4}, Scalar(int64_t(-100)), TensorOptions(kInt64));
  Tensor l = F::cross_entropy(x, t);
  EXPECT_TRUE(std::isnan(l.item<float>()));
  l.backward();
  EXPECT_TRUE(x.grad().equal(zeros({4, 6}, kFloat)));
  // out-of-range targets
  expect_error([&] { F::cross_entropy(x, tensor(std::vector<int64_t>{0, 1, 6, 2})); }, {"cross_entropy", "out of bounds"});
  expect_error([&] { F::cross_entropy(x, tensor(std::vector<int64_t>{0, 1, -1, 2})); }, {"cross_entropy", "out of bounds"});
  expect_error([&] { F::cross_entropy(x, tensor(std::vector<int64_t>{0, 1, 2})); }, {"cross_entropy", "does not match"});
  // uint8 targets, an infinite logit (NaN row, as log_softmax), no rows
  const Tensor xi = tensor(std::vector<double>{0, 1, std::numeric_limits<double>::infinity(), 2, 0, 1}, kFloat).view({2, 3});
  const std::vector<double> li = values(F::cross_entropy(xi, tensor(std::vector<int64_t>{1, 0}).to(kUInt8), nn::kNone));
  EXPECT_TRUE(std::isnan(li[0]));
  EXPECT_FALSE(std::isnan(li[1]));
  const Tensor e = randn({0, 5}, kFloat).requires_grad_();
  Tensor le = F::cross_entropy(e, zeros({0}, TensorOptions(kInt64)), nn::kSum);
  EXPECT_EQ(le.item<float>(), 0.0f);
  le.backward();
  EXPECT_EQ(e.grad().sizes(), e.sizes());
  // (N, C, d) still goes the composite way, and agrees with the fused (N * d, C) rows
  const Tensor x3 = randn({2, 5, 3}, kDouble);
  const Tensor t3 = tensor(std::vector<int64_t>{0, 4, 2, 1, 1, 3}).view({2, 3});
  const Tensor flat = x3.permute({0, 2, 1}).reshape({6, 5});
  EXPECT_TRUE(close(F::cross_entropy(x3, t3, nn::kNone).reshape({6}), F::cross_entropy(flat, t3.reshape({6}), nn::kNone),
                    1e-12, 1e-12));
}

TEST_F(RowOps, CrossEntropyGradcheck) {
  const Tensor t = tensor(std::vector<int64_t>{0, 3, -100, 2, 1});
  const Tensor w = rand({4}, kDouble) + 0.5;
  for (double ls : {0.0, 0.3})
    for (bool weighted : {false, true}) {
      const Tensor x = leaf({5, 4}, -2, 2);
      auto fn = [&](const TensorList& in) {
        return F::cross_entropy(in[0], t, F::CrossEntropyFuncOptions().weight(weighted ? w : Tensor()).label_smoothing(ls));
      };
      EXPECT_TRUE(gradcheck_ok(fn, {x}, /*grad_grad=*/true)) << "ls " << ls << " weighted " << weighted;
      // fused (plain backward) against composite (create_graph)
      const Tensor x2 = leaf({5, 4}, -2, 2);
      Tensor l = F::cross_entropy(x2, t, F::CrossEntropyFuncOptions().weight(weighted ? w : Tensor()).label_smoothing(ls).reduction(nn::kNone));
      const Tensor g = randn({5}, kDouble);
      const Tensor composite = autograd::grad({l}, {x2}, {g}, true, true)[0];
      const Tensor fused = autograd::grad({l}, {x2}, {g})[0];
      EXPECT_TRUE(close(fused, composite, 1e-12, 1e-13));
    }
}

TEST_F(RowOps, FusedNodesOnTheCpu) {
  // The CPU has the fused kernels: one node per op (not a composite graph).
  const Tensor x = randn({3, 8}, kFloat).requires_grad_();
  const Tensor w = ones({8}, kFloat).requires_grad_(), b = zeros({8}, kFloat).requires_grad_();
  EXPECT_EQ(F::layer_norm(x, {8}, w, b).grad_fn()->name(), "NativeLayerNormBackward0");
  EXPECT_EQ(F::rms_norm(x, {8}, w).grad_fn()->name(), "FusedRmsNormBackward0");
  EXPECT_EQ(F::cross_entropy(x, tensor(std::vector<int64_t>{1, 2, 3}), nn::kNone).grad_fn()->name(),
            "CrossEntropyLossBackward0");
  EXPECT_EQ(x.softmax(1).grad_fn()->name(), "SoftmaxBackward0");
}

TEST_F(RowOps, RmsNormMatchesPyTorch215Values) {
  // torch 2.15.0: x = (arange(24).reshape(3, 8) * 0.37).sin() * 2 + 0.25, w = (arange(8) * 0.11).cos(),
  // g = (arange(24).reshape(3, 8) * 0.53).cos() (float64, then float32 / float16);
  // y = F.rms_norm(x, (8,), w) (eps None); y.backward(g); and y in float16.
  const Tensor i24 = arange(24, TensorOptions(kDouble)).view({3, 8});
  const Tensor x64 = (i24 * 0.37).sin() * 2 + 0.25;
  const Tensor w64 = (arange(8, TensorOptions(kDouble)) * 0.11).cos();
  const Tensor g64 = (i24 * 0.53).cos();
  const std::vector<double> y_ref{0.14887262880802155, 0.5760470032691956, 0.9289926290512085, 1.1500401496887207, 1.2077962160110474, 1.102939248085022, 0.8670693635940552, 0.5549445748329163, 0.4938819408416748, -0.10006752610206604, -0.6384965777397156, -1.0330427885055542, -1.2255085706710815, -1.199004888534546, -0.9800761938095093, -0.6314454674720764, -0.28332772850990295, 0.16121800243854523, 0.5919690728187561, 0.9362975358963013, 1.1396939754486084, 1.1764659881591797, 1.0541075468063354, 0.8104471564292908};
  const std::vector<double> dx_ref{0.6160906553268433, 0.5908828377723694, 0.4158254861831665, 0.15739430487155914, -0.09652054309844971, -0.26853376626968384, -0.3182109594345093, -0.253324031829834, -0.1645636409521103, 0.004841718822717667, 0.1680944561958313, 0.23820725083351135, 0.17186981439590454, -0.01250767707824707, -0.2417999505996704, -0.4173497259616852, -0.3647489547729492, -0.55724036693573, -0.5873228311538696, -0.450164258480072, -0.19556285440921783, 0.09104041755199432, 0.319755882024765, 0.42774873971939087};
  const std::vector<double> dw_ref{0.090157151222229, 0.34579795598983765, -0.49990034103393555, -1.79581618309021, -2.532785415649414, -2.110913038253784, -0.7956644296646118, 0.4827510714530945};
  const std::vector<double> yh_ref{0.14892578125, 0.576171875, 0.92919921875, 1.1494140625, 1.2080078125, 1.1025390625, 0.8671875, 0.5546875, 0.494140625, -0.10009765625, -0.638671875, -1.033203125, -1.2255859375, -1.19921875, -0.97998046875, -0.63134765625, -0.283447265625, 0.1612548828125, 0.59228515625, 0.93603515625, 1.1396484375, 1.1767578125, 1.0537109375, 0.810546875};
  const Tensor x = x64.to(kFloat).requires_grad_(), w = w64.to(kFloat).requires_grad_();
  Tensor y = F::rms_norm(x, {8}, w);
  y.backward(g64.to(kFloat));
  EXPECT_TRUE(close(y, vec_tensor(y_ref, {3, 8}), 1e-6, 1e-7));
  EXPECT_TRUE(close(x.grad(), vec_tensor(dx_ref, {3, 8}), 1e-5, 1e-6));
  EXPECT_TRUE(close(w.grad(), vec_tensor(dw_ref, {8}), 1e-5, 1e-6));
  const Tensor yh = F::rms_norm(x64.to(kHalf), {8}, w64.to(kHalf));
  EXPECT_EQ(yh.dtype(), kHalf);
  EXPECT_TRUE(close(yh, vec_tensor(yh_ref, {3, 8}), 0, 1e-3));  // at most one float16 ulp apart
}

}  // namespace
