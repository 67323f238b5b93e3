// GEMM on CUDA (backend/cuda/gemm.cpp, cublas.cpp, gemm_simple.cu) against
// the CPU: mm, bmm, matmul, addmm and linear for every floating dtype with
// transposed, permuted, expanded and strided operands, column-major outputs,
// empty sums, integer products (which wrap as on the CPU), TF32 on and off,
// and GEMMs from several streams and threads. Skips without a GPU.
#include <gtest/gtest.h>

#include <brisk/nn/functional.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;

namespace {

const ScalarType kFloatTypes[] = {kFloat, kDouble, kHalf, kBFloat16};

Tensor gpu(const Tensor& t) { return t.to(Device(kCUDA)); }

/// A (rows, cols) matrix of dtype dt, stored transposed when `trans`; the
/// values are those of the returned CPU twin.
std::pair<Tensor, Tensor> matrix(int64_t rows, int64_t cols, ScalarType dt, bool trans) {
  Tensor base = trans ? randn({cols, rows}).to(dt) : randn({rows, cols}).to(dt);
  Tensor g = gpu(base);
  return trans ? std::make_pair(base.t(), g.t()) : std::make_pair(base, g);
}

/// Tolerances of a CUDA product of inner size k against the CPU's.
std::pair<double, double> tol(ScalarType dt, int64_t k) {
  const double s = std::sqrt(double(std::max<int64_t>(k, 1)));
  switch (dt) {
    case kDouble: return {1e-12, 1e-12 * s};
    case kFloat: return {1e-4, 1e-5 * s};
    case kHalf: return {1e-2, 1e-2 * s};
    default: return {2e-2, 2e-2 * s};  // bfloat16
  }
}

::testing::AssertionResult same(const Tensor& cuda_result, const Tensor& cpu_result, ScalarType dt, int64_t k) {
  if (!cuda_result.is_cuda()) return ::testing::AssertionFailure() << "result is not on CUDA";
  if (cuda_result.dtype() != cpu_result.dtype())
    return ::testing::AssertionFailure() << "dtype " << cuda_result.dtype() << " vs " << cpu_result.dtype();
  auto [rtol, atol] = tol(dt, k);
  return close(cuda_result.cpu(), cpu_result, rtol, atol);
}

std::string name(ScalarType dt, int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  return std::string(dtype_name(dt)) + " " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
         (ta ? " a^T" : "") + (tb ? " b^T" : "");
}

struct Shape {
  int64_t m, k, n;
};
const Shape kShapes[] = {{1, 1, 1}, {3, 5, 7}, {17, 1, 9}, {1, 33, 1}, {64, 32, 48}, {129, 65, 33}, {2, 300, 3}};

}  // namespace

TEST(CudaGemm, MmEveryDtypeAndTransposition) {
  REQUIRE_CUDA();
  manual_seed(1);
  for (ScalarType dt : kFloatTypes)
    for (const Shape& s : kShapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          SCOPED_TRACE(name(dt, s.m, s.k, s.n, ta, tb));
          auto [a, ga] = matrix(s.m, s.k, dt, ta);
          auto [b, gb] = matrix(s.k, s.n, dt, tb);
          EXPECT_TRUE(same(ga.mm(gb), a.mm(b), dt, s.k));
          EXPECT_TRUE(same(matmul(ga, gb), matmul(a, b), dt, s.k));
        }
}

TEST(CudaGemm, ColumnMajorOutputWrittenInPlace) {
  REQUIRE_CUDA();
  manual_seed(2);
  for (ScalarType dt : kFloatTypes)
    for (bool ta : {false, true}) {
      SCOPED_TRACE(name(dt, 37, 19, 23, ta, false));
      auto [a, ga] = matrix(37, 19, dt, ta);
      auto [b, gb] = matrix(19, 23, dt, false);
      Tensor base = gpu(zeros({23, 37}, dt));  // out = base.t(): column-major (37, 23)
      Tensor out = base.t();
      const void* p = out.data_ptr();
      mm_out(out, ga, gb);
      EXPECT_EQ(out.data_ptr(), p);
      EXPECT_TRUE(close(base.cpu().t(), a.mm(b), tol(dt, 19).first, tol(dt, 19).second));
    }
}

TEST(CudaGemm, BmmTransposedAndPermuted) {
  REQUIRE_CUDA();
  manual_seed(3);
  for (ScalarType dt : kFloatTypes)
    for (int64_t batch : {1, 3, 6}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " batch " + std::to_string(batch));
      const int64_t m = 21, k = 34, n = 13;
      Tensor a = randn({batch, m, k}).to(dt), b = randn({batch, k, n}).to(dt);
      EXPECT_TRUE(same(gpu(a).bmm(gpu(b)), a.bmm(b), dt, k));
      // Transposed matrices: (B, k, m).transpose(1, 2).
      Tensor at = randn({batch, k, m}).to(dt), bt = randn({batch, n, k}).to(dt);
      EXPECT_TRUE(same(gpu(at).transpose(1, 2).bmm(gpu(bt).transpose(1, 2)),
                       at.transpose(1, 2).bmm(bt.transpose(1, 2)), dt, k));
      // Batch not outermost: (m, B, k).permute(1, 0, 2) has batch stride k.
      Tensor ap = randn({m, batch, k}).to(dt);
      EXPECT_TRUE(same(gpu(ap).permute({1, 0, 2}).bmm(gpu(b)), ap.permute({1, 0, 2}).bmm(b), dt, k));
    }
}

TEST(CudaGemm, MatmulBroadcastingAndVectors) {
  REQUIRE_CUDA();
  manual_seed(4);
  for (ScalarType dt : kFloatTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a4 = randn({2, 3, 5, 8}).to(dt), b2 = randn({8, 6}).to(dt);
    EXPECT_TRUE(same(matmul(gpu(a4), gpu(b2)), matmul(a4, b2), dt, 8));
    // (4, m, k) @ (1, k, n): b's batch dim is expanded (stride 0), read in place.
    Tensor a3 = randn({4, 7, 9}).to(dt), b1 = randn({1, 9, 5}).to(dt);
    EXPECT_TRUE(same(matmul(gpu(a3), gpu(b1)), matmul(a3, b1), dt, 9));
    Tensor v = randn({9}).to(dt), w = randn({9}).to(dt), mat = randn({7, 9}).to(dt);
    EXPECT_TRUE(same(matmul(gpu(mat), gpu(v)), matmul(mat, v), dt, 9));       // mv
    EXPECT_TRUE(same(matmul(gpu(v), gpu(w)), matmul(v, w), dt, 9));           // dot
    Tensor v7 = randn({7}).to(dt);
    EXPECT_TRUE(same(matmul(gpu(v7), gpu(a3)), matmul(v7, a3), dt, 7));       // (k) @ (B, k, n)
  }
}

TEST(CudaGemm, AddmmAndLinear) {
  REQUIRE_CUDA();
  manual_seed(5);
  for (ScalarType dt : kFloatTypes) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t m = 10, k = 24, n = 15;
    Tensor self = randn({m, n}).to(dt), bias = randn({n}).to(dt);
    Tensor m1 = randn({m, k}).to(dt), m2 = randn({k, n}).to(dt);
    for (double beta : {0.0, 1.0, 0.5})
      for (double alpha : {1.0, 2.0}) {
        SCOPED_TRACE("beta " + std::to_string(beta) + " alpha " + std::to_string(alpha));
        EXPECT_TRUE(same(addmm(gpu(self), gpu(m1), gpu(m2), beta, alpha), addmm(self, m1, m2, beta, alpha), dt, k));
        EXPECT_TRUE(same(addmm(gpu(bias), gpu(m1), gpu(m2), beta, alpha), addmm(bias, m1, m2, beta, alpha), dt, k));
      }
    // beta = 0 ignores NaN in self (BLAS semantics).
    Tensor nan_self = full({m, n}, std::numeric_limits<double>::quiet_NaN()).to(dt);
    Tensor r = addmm(gpu(nan_self), gpu(m1), gpu(m2), 0.0, 1.0).cpu();
    EXPECT_FALSE(isnan(r).any().item<bool>());
    EXPECT_TRUE(same(addmm(gpu(nan_self), gpu(m1), gpu(m2), 0.0, 1.0), m1.mm(m2), dt, k));
    // linear: x @ w^T + b, w stored (out, in).
    Tensor x = randn({6, k}).to(dt), w = randn({n, k}).to(dt);
    EXPECT_TRUE(same(nn::functional::linear(gpu(x), gpu(w), gpu(bias)), nn::functional::linear(x, w, bias), dt, k));
    EXPECT_TRUE(same(nn::functional::linear(gpu(x), gpu(w)), nn::functional::linear(x, w), dt, k));
  }
}

TEST(CudaGemm, OperandsWithoutAnInPlaceLayoutAreCopied) {
  REQUIRE_CUDA();
  manual_seed(6);
  for (ScalarType dt : kFloatTypes) {
    SCOPED_TRACE(dtype_name(dt));
    // Expanded columns (strides (1, 0)) and a doubly strided view (strides (2n', 2)).
    Tensor col = randn({12, 1}).to(dt), big = randn({2 * 9, 2 * 7}).to(dt);
    Tensor a = col.expand({12, 9}), b = big.slice(0, 0, 18, 2).slice(1, 0, 14, 2);
    Tensor ga = gpu(col).expand({12, 9}), gb = gpu(big).slice(0, 0, 18, 2).slice(1, 0, 14, 2);
    ASSERT_EQ(gb.stride(1), 2);
    EXPECT_TRUE(same(ga.mm(gb), a.mm(b), dt, 9));
  }
}

TEST(CudaGemm, EmptySumsAndEmptyResults) {
  REQUIRE_CUDA();
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kUInt8}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a = zeros({4, 0}, dt), b = zeros({0, 5}, dt);
    Tensor r = gpu(a).mm(gpu(b));
    EXPECT_TRUE(r.is_cuda());
    EXPECT_TRUE(close(r.cpu(), zeros({4, 5}, dt)));
    Tensor self = (arange(20).view({4, 5}) % 7).to(dt);
    EXPECT_TRUE(close(addmm(gpu(self), gpu(a), gpu(b), 3, 2).cpu(), addmm(self, a, b, 3, 2)));
    EXPECT_EQ(gpu(zeros({0, 3}, dt)).mm(gpu(zeros({3, 5}, dt))).numel(), 0);
    EXPECT_EQ(gpu(zeros({2, 3, 0}, dt)).bmm(gpu(zeros({2, 0, 4}, dt))).sizes(), (std::vector<int64_t>{2, 3, 4}));
  }
  // beta = 0 with k = 0: NaN in self does not survive.
  Tensor nan_self = full({4, 5}, std::numeric_limits<double>::quiet_NaN());
  Tensor r = addmm(gpu(nan_self), gpu(zeros({4, 0})), gpu(zeros({0, 5})), 0.0, 1.0).cpu();
  EXPECT_TRUE(close(r, zeros({4, 5})));
}

TEST(CudaGemm, IntegerProductsWrapAsOnTheCpu) {
  REQUIRE_CUDA();
  manual_seed(7);
  for (ScalarType dt : {kUInt8, kInt32, kInt64}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t hi = dt == kUInt8 ? 256 : 1000;
    for (const Shape& s : {Shape{1, 1, 1}, Shape{5, 7, 3}, Shape{33, 70, 17}, Shape{64, 300, 40}})
      for (bool ta : {false, true}) {
        Tensor a = ta ? randint(hi, {s.k, s.m}).to(dt).t() : randint(hi, {s.m, s.k}).to(dt);
        Tensor b = randint(hi, {s.k, s.n}).to(dt);
        Tensor ga = ta ? gpu(a.t()).t() : gpu(a);
        EXPECT_TRUE(close(ga.mm(gpu(b)).cpu(), a.mm(b), 0, 0)) << name(dt, s.m, s.k, s.n, ta, false);
      }
    Tensor a = randint(hi, {3, 9, 11}).to(dt), b = randint(hi, {3, 11, 4}).to(dt);
    EXPECT_TRUE(close(gpu(a).bmm(gpu(b)).cpu(), a.bmm(b), 0, 0));
    Tensor self = randint(hi, {9, 4}).to(dt);
    EXPECT_TRUE(close(addmm(gpu(self), gpu(a[0]), gpu(b[0]), 3, 2).cpu(), addmm(self, a[0], b[0], 3, 2), 0, 0));
  }
}

TEST(CudaGemm, Tf32OnlyWhenAllowed) {
  REQUIRE_CUDA();
  manual_seed(8);
  const bool saved = cuda::allow_tf32();
  Tensor a = randn({64, 2048}), b = randn({2048, 64});
  Tensor exact = a.to(kDouble).mm(b.to(kDouble));
  auto rel_err = [&](const Tensor& r) {
    return (r.cpu().to(kDouble) - exact).abs().max().item<double>() / exact.abs().max().item<double>();
  };
  cuda::set_allow_tf32(false);
  const double e32 = rel_err(gpu(a).mm(gpu(b)));
  cuda::set_allow_tf32(true);
  const double etf = rel_err(gpu(a).mm(gpu(b)));
  cuda::set_allow_tf32(saved);
  EXPECT_LT(e32, 2e-6) << "float32 GEMM with TF32 off is not float32-accurate";
  EXPECT_LT(etf, 5e-3) << "TF32 GEMM far off";
}

TEST(CudaGemm, StreamsAndThreads) {
  REQUIRE_CUDA();
  manual_seed(9);
  Tensor a = randn({40, 50}), b = randn({50, 30});
  Tensor want = a.mm(b);
  {
    cuda::Stream s = cuda::Stream::create();
    cuda::StreamGuard g(s);
    Tensor r = gpu(a).mm(gpu(b));
    EXPECT_TRUE(same(r, want, kFloat, 50));
  }
  EXPECT_TRUE(same(gpu(a).mm(gpu(b)), want, kFloat, 50));  // back on the default stream
  // Threads each with their own handle (and, in turn, handles from the pool).
  for (int round = 0; round < 2; ++round) {
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        Tensor ga = gpu(a), gb = gpu(b);
        bool good = true;
        for (int i = 0; i < 10; ++i) good = good && bool(same(ga.mm(gb), want, kFloat, 50));
        ok[size_t(t)] = good;
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[size_t(t)]) << "thread " << t << " round " << round;
  }
}

TEST(CudaGemm, MixedDevicesAndDtypesAreErrors) {
  REQUIRE_CUDA();
  Tensor a = ones({2, 3}), b = ones({3, 2});
  brisk::testing::expect_error([&] { (void)gpu(a).mm(b); }, {"same device"});
  brisk::testing::expect_error([&] { (void)gpu(a).mm(gpu(b.to(kDouble))); }, {"dtype"});
}
