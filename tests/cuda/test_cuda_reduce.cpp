// The CUDA reduction, softmax/scan and sort kernels (src/backend/cuda/
// {reduce,scan,sort}.cu) against brisk's CPU kernels on the same inputs:
// every op and dtype, keepdim, several dims, non-contiguous inputs, empty
// tensors and empty reductions, NaN, ties, stability, and sizes large enough
// to take the split (two-pass) and radix-sort paths. The GPU tests skip
// without a device; the registration test runs everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "brisk/brisk.h"
#include "core/dispatch.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;

namespace {

const Device kGpu(kCUDA);
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

const std::vector<ScalarType> kFloats = {kFloat, kDouble, kHalf, kBFloat16};
const std::vector<ScalarType> kAll = {kFloat, kDouble, kHalf, kBFloat16, kUInt8, kInt32, kInt64, kBool};

// ---- without a device ---------------------------------------------------------------------

TEST(CudaReduceNoDevice, EveryKernelIsRegistered) {
  if (cuda::unavailable_reason().find("no CUDA backend") != std::string::npos)
    GTEST_SKIP() << "this build has no CUDA backend";
  const OpId ops[] = {OpId::sum,     OpId::prod,        OpId::amax,   OpId::amin,    OpId::argmax, OpId::argmin,
                      OpId::var,     OpId::norm,        OpId::all,    OpId::any,     OpId::softmax,
                      OpId::log_softmax, OpId::cumsum,  OpId::cumprod, OpId::sort,   OpId::topk};
  for (OpId op : ops)
    EXPECT_NE(detail::g_kernel_table[static_cast<int>(op)][static_cast<int>(kCUDA)], nullptr) << op_name(op);
}

// ---- helpers ----------------------------------------------------------------------------------

struct Tol {
  double rtol, atol;
};
Tol tol_of(ScalarType t) {
  switch (t) {
    case kFloat: return {2e-5, 2e-5};
    case kDouble: return {1e-12, 1e-12};
    case kHalf: return {4e-3, 4e-3};
    case kBFloat16: return {3e-2, 3e-2};
    default: return {0, 0};
  }
}

/// Random CPU values of dtype dt: normal floats (with NaN/inf when
/// `specials`), integers in [lo, hi), bools half true.
Tensor values(IntArrayRef shape, ScalarType dt, bool specials = false, int64_t lo = -20, int64_t hi = 20) {
  if (dt == kBool) return rand(shape) < 0.5;
  if (!is_floating_point(dt)) {
    if (dt == kUInt8) lo = std::max<int64_t>(lo, 0);
    return randint(lo, hi, shape).to(dt);
  }
  Tensor v = randn(shape, kDouble) * 3.0;
  if (specials) {
    Tensor u = rand(shape, kDouble);
    v = where(u < 0.04, Scalar(kNan), v);
    v = where((u >= 0.04) & (u < 0.06), Scalar(kInf), v);
    v = where((u >= 0.06) & (u < 0.08), Scalar(-kInf), v);
  }
  return v.to(dt);
}

using Fn = std::function<Tensor(const Tensor&)>;
using Fn2 = std::function<std::tuple<Tensor, Tensor>(const Tensor&)>;

/// f on the CPU and on the GPU, compared.
void check(const Tensor& x, const Fn& f, Tol t, const std::string& what) {
  SCOPED_TRACE(what);
  const Tensor want = f(x);
  const Tensor got_gpu = f(x.to(kGpu));
  ASSERT_TRUE(got_gpu.device().is_cuda()) << what;
  const Tensor got = got_gpu.cpu();
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_TRUE(close(got, want, t.rtol, t.atol)) << what;
}
/// The same for ops returning (values, indices): indices must match exactly.
void check2(const Tensor& x, const Fn2& f, Tol t, const std::string& what) {
  SCOPED_TRACE(what);
  const auto [wv, wi] = f(x);
  const auto [gv, gi] = f(x.to(kGpu));
  ASSERT_TRUE(gv.device().is_cuda() && gi.device().is_cuda()) << what;
  EXPECT_TRUE(close(gv.cpu(), wv, t.rtol, t.atol)) << what << " (values)";
  ASSERT_EQ(gi.dtype(), wi.dtype()) << what;
  EXPECT_TRUE(equal(gi.cpu(), wi)) << what << " (indices)";
}

/// The same for ops returning two float results (var_mean).
void check_pair(const Tensor& x, const Fn2& f, Tol t, const std::string& what) {
  SCOPED_TRACE(what);
  const auto [w0, w1] = f(x);
  const auto [g0, g1] = f(x.to(kGpu));
  EXPECT_TRUE(close(g0.cpu(), w0, t.rtol, t.atol)) << what << " (first)";
  EXPECT_TRUE(close(g1.cpu(), w1, t.rtol, t.atol)) << what << " (second)";
}

std::string name(ScalarType t) { return std::string(dtype_name(t)); }

// Dim lists over a 3-D input: one dim, a block of dims, dims that are not
// adjacent (the front end copies), all dims.
const std::vector<std::vector<int64_t>> kDimLists = {{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {}, {-1}};

// ---- sum / mean / prod ----------------------------------------------------------------------

TEST(CudaReduce, SumMeanEveryDtypeDimsKeepdim) {
  REQUIRE_CUDA();
  manual_seed(1);
  for (ScalarType dt : kAll) {
    const Tensor x = values({6, 35, 17}, dt);
    // sum of integers and bool is int64 (exact)
    const Tol t = is_floating_point(dt) ? Tol{tol_of(dt).rtol, tol_of(dt).atol * 10} : Tol{0, 0};
    for (const auto& dims : kDimLists)
      for (bool keep : {false, true}) {
        const std::string what = "sum " + name(dt) + " dims " + std::to_string(dims.size()) + " keep " +
                                 std::to_string(keep) + (dims.empty() ? "" : " first " + std::to_string(dims[0]));
        check(x, [&](const Tensor& a) { return a.sum(dims, keep); }, t, what);
        if (is_floating_point(dt)) check(x, [&](const Tensor& a) { return a.mean(dims, keep); }, t, "mean " + what);
      }
    check(x, [](const Tensor& a) { return a.sum(); }, is_floating_point(dt) ? Tol{1e-4, 1e-2} : Tol{0, 0},
          "sum all " + name(dt));
  }
}

TEST(CudaReduce, SumDtypeArgumentAndOut) {
  REQUIRE_CUDA();
  manual_seed(2);
  const Tensor x = values({40, 30}, kInt32);
  check(x, [](const Tensor& a) { return a.sum(IntArrayRef{1}, false, kFloat); }, tol_of(kFloat), "sum dtype=float");
  check(x, [](const Tensor& a) { return a.sum(IntArrayRef{0}, false, kInt32); }, {0, 0}, "sum dtype=int32");
  const Tensor h = values({40, 30}, kHalf);
  check(h, [](const Tensor& a) { return a.mean(IntArrayRef{1}, false, kFloat); }, tol_of(kFloat), "mean dtype=float");
  check(h, [](const Tensor& a) {
    Tensor out = empty({40}, TensorOptions(kHalf).device(a.device()));
    sum_out(out, a, {1});
    return out;
  }, tol_of(kHalf), "sum_out");
}

TEST(CudaReduce, ProdEveryDtype) {
  REQUIRE_CUDA();
  manual_seed(3);
  for (ScalarType dt : kAll) {
    // values near 1 (floats) or in [-2, 3) (integers: int64 products wrap the same way)
    Tensor x = is_floating_point(dt) ? (rand({5, 24, 7}, kDouble) * 0.4 + 0.8).to(dt)
                                     : values({5, 24, 7}, dt, false, -2, 3);
    for (const auto& dims : std::vector<std::vector<int64_t>>{{0}, {1}, {2}})
      check(x, [&](const Tensor& a) { return a.prod(dims[0], dims[0] == 1); }, tol_of(dt),
            "prod " + name(dt) + " dim " + std::to_string(dims[0]));
    check(x, [](const Tensor& a) { return a.prod(); }, is_floating_point(dt) ? Tol{1e-3, 1e-6} : Tol{0, 0},
          "prod all " + name(dt));
  }
  // int64 products that overflow wrap modulo 2^64 on both devices
  const Tensor big = full({64}, int64_t(1000003), kInt64);
  check(big, [](const Tensor& a) { return a.prod(); }, {0, 0}, "prod int64 wrap");
}

// ---- amax / amin / max / min / argmax / argmin -------------------------------------------------

TEST(CudaReduce, AmaxAminEveryDtypeWithNan) {
  REQUIRE_CUDA();
  manual_seed(4);
  for (ScalarType dt : kAll) {
    const Tensor x = values({5, 33, 9}, dt, /*specials=*/true);
    for (const auto& dims : kDimLists) {
      const std::string what = name(dt) + " ndims " + std::to_string(dims.size());
      check(x, [&](const Tensor& a) { return a.amax(dims, true); }, {0, 0}, "amax " + what);
      check(x, [&](const Tensor& a) { return a.amin(dims); }, {0, 0}, "amin " + what);
    }
    check(x, [](const Tensor& a) { return a.max(); }, {0, 0}, "max() " + name(dt));
    check(x, [](const Tensor& a) { return a.min(); }, {0, 0}, "min() " + name(dt));
  }
  // all -inf, and a NaN after the max
  Tensor y = tensor<float>({-INFINITY, -INFINITY, 3.f, NAN, 5.f});
  check(y, [](const Tensor& a) { return a.amax(); }, {0, 0}, "amax nan");
  check(y.narrow(0, 0, 2), [](const Tensor& a) { return a.amax(); }, {0, 0}, "amax all -inf");
}

TEST(CudaReduce, MaxMinDimAndArgWithTiesAndNan) {
  REQUIRE_CUDA();
  manual_seed(5);
  for (ScalarType dt : kAll) {
    // few distinct values: many ties, the first index must win
    const Tensor x = dt == kBool ? values({7, 41, 6}, dt) : values({7, 41, 6}, dt, false, 0, 3);
    for (int64_t d : {0, 1, 2, -1})
      for (bool keep : {false, true}) {
        const std::string what = name(dt) + " dim " + std::to_string(d) + " keep " + std::to_string(keep);
        check2(x, [&](const Tensor& a) { return a.max(d, keep); }, {0, 0}, "max(dim) " + what);
        check2(x, [&](const Tensor& a) { return a.min(d, keep); }, {0, 0}, "min(dim) " + what);
        if (dt != kBool) {
          check(x, [&](const Tensor& a) { return a.argmax(d, keep); }, {0, 0}, "argmax " + what);
          check(x, [&](const Tensor& a) { return a.argmin(d, keep); }, {0, 0}, "argmin " + what);
        }
      }
    if (dt != kBool) {
      check(x, [](const Tensor& a) { return a.argmax(); }, {0, 0}, "argmax flat " + name(dt));
      check(x, [](const Tensor& a) { return a.argmin(); }, {0, 0}, "argmin flat " + name(dt));
    }
  }
  for (ScalarType dt : kFloats) {
    const Tensor x = values({9, 50}, dt, /*specials=*/true);
    check2(x, [](const Tensor& a) { return a.max(1); }, {0, 0}, "max(dim) nan " + name(dt));
    check2(x, [](const Tensor& a) { return a.min(0); }, {0, 0}, "min(dim) nan " + name(dt));
  }
  // the first NaN wins; +inf ties resolve to the first
  const Tensor y = tensor<float>({1.f, INFINITY, NAN, INFINITY, NAN});
  const Tensor g = y.to(kGpu);
  EXPECT_EQ(g.argmax().item<int64_t>(), 2);
  EXPECT_EQ(g.argmin().item<int64_t>(), 2);
  EXPECT_EQ(g.narrow(0, 0, 2).argmax().item<int64_t>(), 1);
  EXPECT_EQ(tensor<float>({2.f, 5.f, 5.f, -1.f, -1.f}).to(kGpu).argmin().item<int64_t>(), 3);
}

// median / nanmedian: composites of the (stable) sort and gather, so the
// indices match the CPU's even with ties and NaN.
TEST(CudaReduce, MedianAndNanmedianMatchTheCpu) {
  REQUIRE_CUDA();
  manual_seed(31);
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kUInt8}) {
    Tensor x = (randn({6, 9, 5}, kDouble) * 3).round().to(dt);  // ties
    if (is_floating_point(dt)) x.masked_fill_(randn({6, 9, 5}) > 1.2, NAN);
    Tensor xg = x.to(kGpu);
    for (int64_t dim : {0, 1, -1})
      for (bool keepdim : {false, true}) {
        auto [v, i] = x.median(dim, keepdim);
        auto [vg, ig] = xg.median(dim, keepdim);
        EXPECT_TRUE(close(vg.cpu(), v, 0, 0)) << dtype_name(dt) << " dim " << dim;
        EXPECT_TRUE(ig.cpu().equal(i)) << dtype_name(dt) << " dim " << dim;
        auto [nv, ni] = x.nanmedian(dim, keepdim);
        auto [nvg, nig] = xg.nanmedian(dim, keepdim);
        EXPECT_TRUE(close(nvg.cpu(), nv, 0, 0)) << dtype_name(dt) << " dim " << dim;
        EXPECT_TRUE(nig.cpu().equal(ni)) << dtype_name(dt) << " dim " << dim;
      }
    EXPECT_TRUE(close(xg.median().cpu(), x.median(), 0, 0)) << dtype_name(dt);
    EXPECT_TRUE(close(xg.nanmedian().cpu(), x.nanmedian(), 0, 0)) << dtype_name(dt);
  }
  Tensor leaf = randn({4, 7}, kDouble).to(kGpu).requires_grad_();
  std::get<0>(leaf.median(1)).sum().backward();
  Tensor cl = leaf.detach().cpu().requires_grad_();
  std::get<0>(cl.median(1)).sum().backward();
  EXPECT_TRUE(leaf.grad().cpu().equal(cl.grad()));
}

TEST(CudaReduce, LargeArgmaxSplitPath) {
  REQUIRE_CUDA();
  manual_seed(6);
  const int64_t n = int64_t(1) << 22;
  Tensor x = rand({n}, kFloat);
  float* p = x.data_ptr<float>();
  p[3000000] = 2.f;  // two maxima far apart: the first wins
  p[4000000] = 2.f;
  p[1234567] = -1.f;
  check(x, [](const Tensor& a) { return a.argmax(); }, {0, 0}, "argmax 2^22");
  check(x, [](const Tensor& a) { return a.argmin(); }, {0, 0}, "argmin 2^22");
  EXPECT_EQ(x.to(kGpu).argmax().item<int64_t>(), 3000000);
  p[3500000] = NAN;
  EXPECT_EQ(x.to(kGpu).argmax().item<int64_t>(), 3500000);
  EXPECT_TRUE(std::isnan(x.to(kGpu).amax().item<float>()));
  // columns of a tall matrix (column layout, split along the rows)
  const Tensor m = values({1 << 16, 24}, kInt32, false, 0, 50);
  check2(m, [](const Tensor& a) { return a.max(0); }, {0, 0}, "max(0) tall int32");
}

// ---- var / std / var_mean -------------------------------------------------------------------

TEST(CudaReduce, VarStdVarMean) {
  REQUIRE_CUDA();
  manual_seed(7);
  for (ScalarType dt : kFloats) {
    const Tensor x = (values({6, 37, 11}, dt).to(kDouble) + 5.0).to(dt);
    const Tol t{tol_of(dt).rtol * 5, tol_of(dt).atol * 5};
    for (const auto& dims : kDimLists)
      for (double corr : {0.0, 1.0, 2.5}) {
        const std::string what = name(dt) + " ndims " + std::to_string(dims.size()) + " corr " + std::to_string(corr);
        std::optional<std::vector<int64_t>> d = dims;
        check(x, [&](const Tensor& a) { return a.var(d, corr, true); }, t, "var " + what);
        check(x, [&](const Tensor& a) { return a.std(d, corr); }, t, "std " + what);
        check_pair(x, [&](const Tensor& a) { return var_mean(a, d, corr); }, t, "var_mean " + what);
      }
  }
  // n - correction <= 0: inf or NaN as on the CPU; a constant row: exactly 0
  const Tensor c = full({3, 5}, 7.25, kFloat);
  check(c, [](const Tensor& a) { return a.var(std::vector<int64_t>{1}); }, {0, 0}, "var constant");
  EXPECT_EQ(c.to(kGpu).var(std::vector<int64_t>{1}).cpu().abs().max().item<float>(), 0.f);
  check(c, [](const Tensor& a) { return a.var(std::vector<int64_t>{1}, 5); }, {0, 0}, "var n == correction");
  const Tensor r = randn({3, 5});
  check(r, [](const Tensor& a) { return a.var(std::vector<int64_t>{1}, 6); }, {0, 0}, "var n < correction");
  check(values({4, 30}, kFloat, true), [](const Tensor& a) { return a.var(std::vector<int64_t>{1}); },
        tol_of(kFloat), "var nan/inf");
}

TEST(CudaReduce, LargeSumMeanVarAgainstFloat64) {
  REQUIRE_CUDA();
  manual_seed(8);
  const int64_t n = int64_t(1) << 24;
  const Tensor x = rand({n}, kFloat) + 100.0f;
  const double want = x.to(kDouble).sum().item<double>();
  const Tensor g = x.to(kGpu);
  const double got = g.sum().item<double>();
  EXPECT_NEAR(got, want, 1e-5 * std::abs(want));
  EXPECT_NEAR(g.mean().item<double>(), want / static_cast<double>(n), 1e-5 * want / static_cast<double>(n));
  // variance of uniform [0,1) + 100 is 1/12: Welford in float keeps it
  const double vref = x.to(kDouble).var().item<double>();
  EXPECT_NEAR(g.var().item<double>(), vref, 1e-4 * vref);
  EXPECT_NEAR(g.std().item<double>(), std::sqrt(vref), 1e-4 * std::sqrt(vref));
  // a 2-D reduction over dim 0 of a tall matrix (column layout, split) and over rows
  const Tensor m = x.view({1 << 20, 16});
  const Tensor wcol = m.to(kDouble).sum(0);
  EXPECT_TRUE(close(m.to(kGpu).sum(0).cpu(), wcol, 1e-5, 0));
  const Tensor wrow = m.to(kDouble).sum(1);
  EXPECT_TRUE(close(m.to(kGpu).sum(1).cpu(), wrow, 1e-6, 0));
  // double stays double
  const Tensor xd = x.to(kDouble);
  EXPECT_NEAR(xd.to(kGpu).sum().item<double>(), want, 1e-12 * want);
  // int64 sums are exact
  const Tensor xi = randint(-1000000, 1000000, {n}, kInt64);
  EXPECT_EQ(xi.to(kGpu).sum().item<int64_t>(), xi.sum().item<int64_t>());
}

// ---- norm -------------------------------------------------------------------------------------

TEST(CudaReduce, NormEveryMode) {
  REQUIRE_CUDA();
  manual_seed(9);
  for (ScalarType dt : kFloats) {
    const Tensor x = values({5, 29, 8}, dt);
    for (double p : {2.0, 1.0, 0.0, kInf, -kInf, 3.0, 0.5})
      for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {1}, {0, 2}, {2}}) {
        const Tol t{tol_of(dt).rtol * 5, tol_of(dt).atol * 5};
        check(x, [&](const Tensor& a) { return a.norm(p, dims, true); }, t,
              "norm " + name(dt) + " p " + std::to_string(p) + " ndims " + std::to_string(dims.size()));
      }
  }
  const Tensor s = values({6, 20}, kFloat, true);
  for (double p : {2.0, kInf, -kInf, 0.0})
    check(s, [&](const Tensor& a) { return a.norm(p, IntArrayRef{1}); }, tol_of(kFloat), "norm specials");
}

// ---- all / any --------------------------------------------------------------------------------

TEST(CudaReduce, AllAny) {
  REQUIRE_CUDA();
  manual_seed(10);
  for (ScalarType dt : {kBool, kUInt8, kFloat, kInt32}) {
    // mostly true (all is interesting) and mostly false (any is)
    const Tensor t = (rand({6, 40, 5}) < 0.97).to(dt);
    const Tensor f = (rand({6, 40, 5}) < 0.03).to(dt);
    for (int64_t d : {0, 1, 2})
      for (bool keep : {false, true}) {
        check(t, [&](const Tensor& a) { return a.all(d, keep); }, {0, 0}, "all " + name(dt));
        check(f, [&](const Tensor& a) { return a.any(d, keep); }, {0, 0}, "any " + name(dt));
        check(f, [&](const Tensor& a) { return a.all(d, keep); }, {0, 0}, "all of mostly false " + name(dt));
        check(t, [&](const Tensor& a) { return a.any(d, keep); }, {0, 0}, "any of mostly true " + name(dt));
      }
    check(t, [](const Tensor& a) { return a.all(); }, {0, 0}, "all() " + name(dt));
    check(f, [](const Tensor& a) { return a.any(); }, {0, 0}, "any() " + name(dt));
    check(zeros({7}, dt), [](const Tensor& a) { return a.any(); }, {0, 0}, "any() of zeros " + name(dt));
  }
  const Tensor big = ones({int64_t(1) << 22}, kBool);
  EXPECT_TRUE(big.to(kGpu).all().item<bool>());
  Tensor big2 = big.clone();
  big2.data_ptr<bool>()[(int64_t(1) << 22) - 1] = false;
  EXPECT_FALSE(big2.to(kGpu).all().item<bool>());
  EXPECT_TRUE(big2.logical_not().to(kGpu).any().item<bool>());
  EXPECT_FALSE(big.logical_not().to(kGpu).any().item<bool>());
}

// ---- layouts, empty tensors ---------------------------------------------------------------------

TEST(CudaReduce, NonContiguousInputs) {
  REQUIRE_CUDA();
  manual_seed(11);
  for (ScalarType dt : {kFloat, kHalf, kInt64}) {
    const Tensor x = values({24, 36, 10}, dt);
    const Tol t{tol_of(dt).rtol * 10, tol_of(dt).atol * 10};
    // transposed (dense, read in place), strided slices (copied by the front end)
    const std::vector<std::pair<std::string, Fn>> views = {
        {"transpose", [](const Tensor& a) { return a.transpose(0, 2); }},
        {"permute", [](const Tensor& a) { return a.permute({1, 2, 0}); }},
        {"narrow", [](const Tensor& a) { return a.narrow(1, 3, 20); }},
        {"step", [](const Tensor& a) { return a.slice(0, 1, std::nullopt, 3); }},
    };
    for (const auto& [vn, v] : views)
      for (const auto& dims : kDimLists) {
        const std::string what = vn + " " + name(dt) + " ndims " + std::to_string(dims.size());
        check(x, [&](const Tensor& a) { return v(a).sum(dims); }, t, "sum " + what);
        check(x, [&](const Tensor& a) { return v(a).amax(dims); }, {0, 0}, "amax " + what);
        if (dims.size() == 1) check2(x, [&](const Tensor& a) { return v(a).max(dims[0]); }, {0, 0}, "max(dim) " + what);
        if (is_floating_point(dt)) {
          std::optional<std::vector<int64_t>> d = dims;
          check(x, [&](const Tensor& a) { return v(a).var(d); }, t, "var " + what);
          check(x, [&](const Tensor& a) { return v(a).norm(2, dims); }, t, "norm " + what);
        }
      }
  }
}

TEST(CudaReduce, EmptyTensorsAndEmptyReductions) {
  REQUIRE_CUDA();
  for (ScalarType dt : {kFloat, kDouble, kHalf, kInt64}) {
    const Tensor x = zeros({3, 0, 4}, dt);
    // a reduction over an empty dim: the identity (mean and var: NaN)
    check(x, [](const Tensor& a) { return a.sum(1); }, {0, 0}, "sum empty dim " + name(dt));
    check(x, [](const Tensor& a) { return a.prod(1); }, {0, 0}, "prod empty dim " + name(dt));
    check(x, [](const Tensor& a) { return a.sum(); }, {0, 0}, "sum() of empty " + name(dt));
    if (is_floating_point(dt)) {
      check(x, [](const Tensor& a) { return a.mean(1); }, {0, 0}, "mean empty dim " + name(dt));
      check(x, [](const Tensor& a) { return a.var(std::vector<int64_t>{1}); }, {0, 0}, "var empty dim " + name(dt));
      check_pair(x, [](const Tensor& a) { return var_mean(a, std::vector<int64_t>{1}); }, {0, 0}, "var_mean empty");
      for (double p : {2.0, 1.0, 3.0})
        check(x, [&](const Tensor& a) { return a.norm(p, IntArrayRef{1}); }, {0, 0}, "norm empty dim " + name(dt));
      // no identity: an error on both devices (torch 2.x)
      for (double p : {kInf, -kInf, -1.0})
        if (x.size(1) == 0) {
          EXPECT_THROW(x.norm(p, IntArrayRef{1}), Error);
          EXPECT_THROW(x.cuda().norm(p, IntArrayRef{1}), Error);
        }
    }
    // no outputs at all
    check(x, [](const Tensor& a) { return a.sum(2); }, {0, 0}, "sum to empty " + name(dt));
    check(x, [](const Tensor& a) { return a.amax(IntArrayRef{2}); }, {0, 0}, "amax to empty " + name(dt));
    check2(x, [](const Tensor& a) { return a.max(0); }, {0, 0}, "max(dim) to empty " + name(dt));
  }
  const Tensor b = zeros({2, 0}, kBool);
  check(b, [](const Tensor& a) { return a.all(1); }, {0, 0}, "all empty");
  check(b, [](const Tensor& a) { return a.any(1); }, {0, 0}, "any empty");
  // 0-dim tensors
  const Tensor s = tensor<float>({2.5f}).view({});
  check(s, [](const Tensor& a) { return a.sum(); }, {0, 0}, "sum 0-dim");
  check(s, [](const Tensor& a) { return a.amax(); }, {0, 0}, "amax 0-dim");
  check2(s, [](const Tensor& a) { return a.max(0); }, {0, 0}, "max(0) 0-dim");
}

// ---- softmax / log_softmax ----------------------------------------------------------------------

TEST(CudaSoftmax, EveryDimAndDtype) {
  REQUIRE_CUDA();
  manual_seed(12);
  for (ScalarType dt : kFloats) {
    const Tensor x = values({4, 33, 70}, dt);
    for (int64_t d : {0, 1, 2}) {
      check(x, [&](const Tensor& a) { return a.softmax(d); }, tol_of(dt), "softmax " + name(dt) + std::to_string(d));
      check(x, [&](const Tensor& a) { return a.log_softmax(d); }, {tol_of(dt).rtol, tol_of(dt).atol * 4},
            "log_softmax " + name(dt) + std::to_string(d));
    }
  }
  // long rows (a block per row), many short rows, columns, dtype=
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{3, 100000}, {1, 5000}, {5000, 3}, {2, 1}})
    for (int64_t d : {0, 1}) {
      const Tensor x = values(shape, kFloat);
      check(x, [&](const Tensor& a) { return a.softmax(d); }, {1e-4, 1e-7},
            "softmax shape " + std::to_string(shape[0]));
      check(x, [&](const Tensor& a) { return a.log_softmax(d); }, {1e-5, 1e-4}, "log_softmax shape");
    }
  check(values({7, 9}, kHalf), [](const Tensor& a) { return a.softmax(1, kFloat); }, tol_of(kFloat), "dtype=float");
  check(values({7, 9}, kInt64), [](const Tensor& a) { return a.log_softmax(0, kDouble); }, tol_of(kDouble), "int");
  // -inf entries, a row of -inf (NaN on both), NaN, huge values (no overflow)
  const Tensor s = tensor<float>(std::vector<float>{0.f, -INFINITY, 1.f, 2.f, -INFINITY, -INFINITY, -INFINITY,
                                                    -INFINITY, 1.f, NAN, 3.f, 4.f, 1e30f, 1e30f, -1e30f, 0.f},
                                 {4, 4});
  check(s, [](const Tensor& a) { return a.softmax(1); }, tol_of(kFloat), "softmax specials");
  check(s, [](const Tensor& a) { return a.log_softmax(1); }, tol_of(kFloat), "log_softmax specials");
  check(tensor<float>({1.5f}).view({}), [](const Tensor& a) { return a.softmax(0); }, {0, 0}, "softmax 0-dim");
  check(zeros({0, 5}), [](const Tensor& a) { return a.softmax(1); }, {0, 0}, "softmax empty");
  check(values({4, 6, 8}, kFloat).transpose(0, 2), [](const Tensor& a) { return a.softmax(1); }, tol_of(kFloat),
        "softmax of a transposed input");
}

// ---- cumsum / cumprod ---------------------------------------------------------------------------

TEST(CudaScan, CumsumCumprodEveryDimAndDtype) {
  REQUIRE_CUDA();
  manual_seed(13);
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kUInt8, kBool}) {
    const Tensor x = values({5, 37, 9}, dt, false, -3, 4);
    const Tensor xp = is_floating_point(dt) ? (rand({5, 37, 9}, kDouble) * 0.2 + 0.9).to(dt) : x;
    for (int64_t d : {0, 1, 2}) {
      const std::string what = name(dt) + " dim " + std::to_string(d);
      // 16-bit floats: each partial sum is rounded to 16 bits on both devices
      const Tol t = is_floating_point(dt) ? Tol{tol_of(dt).rtol * 4, tol_of(dt).atol * 8} : Tol{0, 0};
      check(x, [&](const Tensor& a) { return a.cumsum(d); }, t, "cumsum " + what);
      check(xp, [&](const Tensor& a) { return a.cumprod(d); }, t, "cumprod " + what);
    }
  }
  check(values({6, 7}, kInt32), [](const Tensor& a) { return a.cumsum(1, kFloat); }, tol_of(kFloat), "dtype=");
  check(tensor<float>({2.f}).view({}), [](const Tensor& a) { return a.cumsum(0); }, {0, 0}, "0-dim");
  check(zeros({0, 3}), [](const Tensor& a) { return a.cumsum(1); }, {0, 0}, "empty");
  check(values({8, 5, 3}, kFloat).permute({2, 0, 1}), [](const Tensor& a) { return a.cumsum(1); }, tol_of(kFloat),
        "permuted input");
  const Tensor nanx = values({4, 50}, kFloat, true);
  check(nanx, [](const Tensor& a) { return a.cumsum(1); }, tol_of(kFloat), "cumsum specials");
}

TEST(CudaScan, LongScansChunked) {
  REQUIRE_CUDA();
  manual_seed(14);
  // one long row, a few long rows, long columns: chunked scans with carries
  for (const auto& [shape, d] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{1 << 20}, 0}, {{3, 300000}, 1}, {{200000, 3}, 0}, {{100000, 40}, 0}, {{2, 70000, 2}, 1}}) {
    const Tensor xi = randint(-1000, 1000, shape, kInt64);
    check(xi, [&](const Tensor& a) { return a.cumsum(d); }, {0, 0}, "cumsum int64 long");
    const Tensor xf = rand(shape, kFloat);
    // both accumulate in double and round each output to float
    check(xf, [&](const Tensor& a) { return a.cumsum(d); }, {1e-6, 1e-6}, "cumsum float long");
    const Tensor xp = (rand(shape, kDouble) * 2e-4 + (1 - 1e-4));
    check(xp, [&](const Tensor& a) { return a.cumprod(d); }, {1e-9, 1e-12}, "cumprod double long");
  }
}

// ---- sort / argsort / topk ----------------------------------------------------------------------

TEST(CudaSort, EveryDtypeDirectionAndDim) {
  REQUIRE_CUDA();
  manual_seed(15);
  for (ScalarType dt : kAll) {
    // few distinct values: stability decides the indices
    const Tensor x = dt == kBool ? values({6, 45, 7}, dt) : values({6, 45, 7}, dt, is_floating_point(dt), -3, 3);
    for (int64_t d : {0, 1, 2, -1})
      for (bool desc : {false, true}) {
        const std::string what = name(dt) + " dim " + std::to_string(d) + " desc " + std::to_string(desc);
        check2(x, [&](const Tensor& a) { return a.sort(d, desc); }, {0, 0}, "sort " + what);
      }
    check(x, [](const Tensor& a) { return a.argsort(1, true); }, {0, 0}, "argsort " + name(dt));
  }
  // -0.0 and 0.0 are equal (input order kept); NaN last ascending, first descending
  const Tensor z = tensor<float>({0.f, -0.f, NAN, 1.f, -0.f, NAN, 0.f, -INFINITY, INFINITY});
  for (bool desc : {false, true}) check2(z, [&](const Tensor& a) { return a.sort(0, desc); }, {0, 0}, "sort zeros/nan");
}

TEST(CudaSort, RowLengthsAcrossPaths) {
  REQUIRE_CUDA();
  manual_seed(16);
  // block sort up to 4096, radix beyond; one row and several rows
  for (int64_t n : {1, 2, 31, 1000, 4096, 4097, 20000, 300000})
    for (int64_t rows : {1, 3}) {
      if (n * rows > 400000) continue;
      for (ScalarType dt : {kFloat, kHalf, kInt64, kDouble, kUInt8}) {
        const Tensor x = values({rows, n}, dt, is_floating_point(dt), -50, 50);
        for (bool desc : {false, true})
          check2(x, [&](const Tensor& a) { return a.sort(1, desc); }, {0, 0},
                 "sort n " + std::to_string(n) + " rows " + std::to_string(rows) + " " + name(dt));
      }
    }
  // many short rows (several rows per block)
  check2(values({50000, 6}, kInt32, false, 0, 4), [](const Tensor& a) { return a.sort(1); }, {0, 0}, "many rows");
  // sorting along dim 0 of a tall matrix (strided rows) on the radix path
  check2(values({10000, 3}, kFloat, true), [](const Tensor& a) { return a.sort(0, true); }, {0, 0}, "radix strided");
}

TEST(CudaSort, NonContiguousAndZeroDim) {
  REQUIRE_CUDA();
  manual_seed(17);
  const Tensor x = values({20, 30, 8}, kFloat, true, -3, 3);
  check2(x, [](const Tensor& a) { return a.transpose(0, 2).sort(1); }, {0, 0}, "transposed");
  check2(x, [](const Tensor& a) { return a.slice(1, 2, std::nullopt, 3).sort(0, true); }, {0, 0}, "step slice");
  check2(x, [](const Tensor& a) { return a.permute({2, 0, 1}).sort(-1); }, {0, 0}, "permuted");
  check2(x, [](const Tensor& a) { return a.select(2, 3).topk(5, 0); }, {0, 0}, "select + topk");
  check2(tensor<float>({3.f}).view({}), [](const Tensor& a) { return a.sort(0); }, {0, 0}, "0-dim sort");
  check2(tensor<float>({3.f}).view({}), [](const Tensor& a) { return a.topk(1, 0); }, {0, 0}, "0-dim topk");
  check2(zeros({0, 4}), [](const Tensor& a) { return a.sort(1); }, {0, 0}, "empty");
}

TEST(CudaSort, Topk) {
  REQUIRE_CUDA();
  manual_seed(18);
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kUInt8}) {
    const Tensor x = values({7, 60, 5}, dt, is_floating_point(dt), -4, 4);
    for (int64_t d : {0, 1, 2})
      for (int64_t k : {int64_t(1), int64_t(3), x.size(d)})
        for (bool largest : {true, false}) {
          const std::string what = name(dt) + " dim " + std::to_string(d) + " k " + std::to_string(k) +
                                   " largest " + std::to_string(largest);
          check2(x, [&](const Tensor& a) { return a.topk(k, d, largest, true); }, {0, 0}, "topk " + what);
        }
  }
  // radix path: long rows, small k
  const Tensor big = values({2, 50000}, kFloat, true, -100, 100);
  for (bool largest : {true, false})
    check2(big, [&](const Tensor& a) { return a.topk(10, 1, largest); }, {0, 0}, "topk long rows");
  // k = 0
  const auto [v0, i0] = values({4, 9}, kFloat).to(kGpu).topk(0, 1);
  EXPECT_TRUE(v0.dim() == 2 && v0.size(0) == 4 && v0.size(1) == 0);
  EXPECT_TRUE(i0.dim() == 2 && i0.size(0) == 4 && i0.size(1) == 0);
  // unsorted topk: the same set as the CPU's
  const Tensor u = values({5, 40}, kFloat);
  const auto [gv, gi] = u.to(kGpu).topk(7, 1, true, false);
  const auto [wv, wi] = u.topk(7, 1, true, true);
  EXPECT_TRUE(close(std::get<0>(gv.cpu().sort(1, true)), wv));
}

}  // namespace
