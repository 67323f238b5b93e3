// Random fills on CUDA give the CPU kernels' values (Note [Random fills on
// the GPU] in src/backend/cuda/random_fill.h).
//
// Host part (runs everywhere, never skips): random_fill.h's per-block values,
// driven block by block exactly as the CUDA kernel drives them (one counter
// block per thread), reproduce the CPU kernels' output for the same
// (seed, offset): the element -> counter mapping and the arithmetic the GPU
// shares. Device part (skips without a GPU): the CUDA ops against the CPU
// ops after the same manual_seed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cuda/random_fill.h"
#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
using brisk::cuda::detail::random_fill_block;
using brisk::cuda::detail::random_per_block;
using brisk::cuda::detail::RandomOp;
using brisk::cuda::detail::RandomParams;

namespace {

const ScalarType kFloatDtypes[] = {kHalf, kBFloat16, kFloat, kDouble};
const ScalarType kAllDtypes[] = {kBool, kUInt8, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};

/// The fill of `n` elements at (seed, offset) computed as the CUDA kernel
/// does: block b (thread b) gets philox::block(seed, offset + b) and writes
/// its elements with random_fill_block.
Tensor host_fill(const RandomParams& p, ScalarType dt, uint64_t seed, uint64_t offset) {
  Tensor out = empty({p.n}, dt);
  BRISK_DISPATCH_ALL(dt, "host_fill", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    const int per = random_per_block(p);
    const int64_t nblocks = static_cast<int64_t>(philox::blocks_for(p.n, p.wide));
    for (int64_t b = 0; b < nblocks; ++b) {
      uint32_t r[4];
      philox::block(seed, offset + static_cast<uint64_t>(b), r);
      const int count = static_cast<int>(std::min<int64_t>(per, p.n - b * per));
      scalar_t vals[4];
      random_fill_block<scalar_t>(p, r, vals, count);
      for (int j = 0; j < count; ++j) o[b * per + j] = vals[j];
    }
  });
  return out;
}

RandomParams params(RandomOp op, int64_t n, bool wide) {
  RandomParams p;
  p.op = static_cast<int>(op);
  p.n = n;
  p.wide = wide;
  p.from = 0;  // the factories' defaults: U[0, 1), N(0, 1)
  p.to = 1;
  p.mean = 0;
  p.sd = 1;
  return p;
}

/// Same dtype, shape and bytes (both on the CPU).
::testing::AssertionResult bits_equal(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype()) return ::testing::AssertionFailure() << got.dtype() << " vs " << want.dtype();
  if (!(got.sizes() == want.sizes()))
    return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
  Tensor g = got.contiguous(), w = want.contiguous();
  const size_t es = g.element_size();
  const auto* a = static_cast<const unsigned char*>(g.data_ptr());
  const auto* b = static_cast<const unsigned char*>(w.data_ptr());
  for (int64_t i = 0; i < g.numel(); ++i)
    if (std::memcmp(a + i * es, b + i * es, es) != 0)
      return ::testing::AssertionFailure() << "element " << i << " differs: " << g.reshape({-1}).index({i}).item().to_double()
                                           << " vs " << w.reshape({-1}).index({i}).item().to_double();
  return ::testing::AssertionSuccess();
}

/// Values within `ulps` units in the last place of `want`'s dtype (floats),
/// the unit taken at max(|want|, scale): a rounding difference in
/// `from + u * range` is relative to the terms, not to a result near zero.
::testing::AssertionResult within_ulps(const Tensor& got, const Tensor& want, double ulps, double scale = 0) {
  if (!(got.sizes() == want.sizes()))
    return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
  double eps = 0;
  switch (want.dtype()) {
    case kHalf: eps = std::ldexp(1.0, -10); break;
    case kBFloat16: eps = std::ldexp(1.0, -7); break;
    case kFloat: eps = std::ldexp(1.0, -23); break;
    default: eps = std::ldexp(1.0, -52); break;
  }
  Tensor g = got.to(kDouble).contiguous(), w = want.to(kDouble).contiguous();
  const double* a = g.data_ptr<double>();
  const double* b = w.data_ptr<double>();
  for (int64_t i = 0; i < g.numel(); ++i) {
    // one ulp of b: eps times the power of two at or below |b| (a tiny floor for 0)
    const double at = std::max(std::abs(b[i]), scale);
    const double m = at > 0 ? std::ldexp(1.0, std::ilogb(at)) : std::numeric_limits<double>::min();
    if (!(std::abs(a[i] - b[i]) <= ulps * eps * m))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << b[i];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

// ---- host: the shared per-block values against the CPU kernels -----------------------------

TEST(CudaRandomStreams, DrawMappingMatchesTheCpuUniforms) {
  // Element i of a narrow fill is draw i of the op's stream (philox::draw32),
  // of a wide fill the 64-bit draw i (philox::draw64): the layout the GPU
  // kernel assumes, read off the CPU generator's output.
  manual_seed(1234);
  Tensor f = rand({1003}, kFloat);
  const float* fv = f.data_ptr<float>();
  for (int64_t i = 0; i < f.numel(); ++i)
    ASSERT_EQ(fv[i], philox::to_unit_float(philox::draw32(1234, 0, static_cast<uint64_t>(i)), 24)) << i;
  const uint64_t next = philox::blocks_for(1003, false);  // 251 blocks used
  Tensor d = rand({501}, kDouble);
  const double* dv = d.data_ptr<double>();
  for (int64_t i = 0; i < d.numel(); ++i)
    ASSERT_EQ(dv[i], philox::to_unit_double(philox::draw64(1234, next, static_cast<uint64_t>(i)))) << i;
}

TEST(CudaRandomStreams, UniformMatchesCpuBitForBit) {
  for (ScalarType dt : kFloatDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    const bool wide = dt == kDouble;
    for (int64_t n : {1, 2, 3, 4, 5, 1001, 4096}) {
      manual_seed(42);
      Tensor cpu = rand({n}, dt);
      EXPECT_TRUE(bits_equal(host_fill(params(RandomOp::uniform, n, wide), dt, 42, 0), cpu)) << "n=" << n;
    }
    // A second op starts where the first one's blocks end.
    manual_seed(7);
    Tensor first = rand({10}, dt);
    Tensor second = rand({333}, dt);
    RandomParams p = params(RandomOp::uniform, 333, wide);
    EXPECT_TRUE(bits_equal(host_fill(p, dt, 7, philox::blocks_for(10, wide)), second));
  }
}

TEST(CudaRandomStreams, UniformRangeMatchesCpu) {
  // from + u * (to - from): one fused multiply-add on the GPU and on the
  // FMA-capable CPU variants; the base variant may differ by one ulp.
  for (ScalarType dt : kFloatDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    manual_seed(99);
    Tensor cpu = empty({2001}, dt).uniform_(-3.25, 5.5);
    RandomParams p = params(RandomOp::uniform, 2001, dt == kDouble);
    p.from = -3.25;
    p.to = 5.5;
    Tensor host = host_fill(p, dt, 99, 0);
    EXPECT_TRUE(within_ulps(host, cpu, 1.0, 5.5));
    const double lo = host.min().item().to_double(), hi = host.max().item().to_double();
    EXPECT_GE(lo, -3.25);
    EXPECT_LT(hi, 5.5);
  }
}

TEST(CudaRandomStreams, NormalMatchesCpu) {
  // N(0, 1) is bit-exact on the host (same libm); the pairs (2m, 2m + 1)
  // come from one block, odd lengths included.
  for (ScalarType dt : kFloatDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t n : {1, 3, 4, 7, 1001}) {
      manual_seed(5);
      Tensor cpu = randn({n}, dt);
      EXPECT_TRUE(bits_equal(host_fill(params(RandomOp::normal, n, dt == kDouble), dt, 5, 0), cpu)) << "n=" << n;
    }
    manual_seed(6);
    Tensor cpu = empty({513}, dt).normal_(2.5, 0.75);
    RandomParams p = params(RandomOp::normal, 513, dt == kDouble);
    p.mean = 2.5;
    p.sd = 0.75;
    EXPECT_TRUE(within_ulps(host_fill(p, dt, 6, 0), cpu, 1.0, 8.0));
  }
}

TEST(CudaRandomStreams, BernoulliMatchesCpuBitForBit) {
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (double prob : {0.0, 0.3, 1.0}) {
      manual_seed(11);
      Tensor cpu = empty({1027}, dt).bernoulli_(prob);
      RandomParams p = params(RandomOp::bernoulli, 1027, false);
      p.threshold = prob * 4294967296.0;
      EXPECT_TRUE(bits_equal(host_fill(p, dt, 11, 0), cpu)) << "p=" << prob;
    }
  }
}

TEST(CudaRandomStreams, RandintMatchesCpuBitForBit) {
  struct Case {
    ScalarType dt;
    int64_t low, high;
  };
  const int64_t big = int64_t{1} << 40;
  const Case cases[] = {{kInt64, 0, 10},        {kInt64, -5, 1000003}, {kInt64, -big, big},  // wide draws
                        {kInt32, -100, 100},    {kUInt8, 0, 256},      {kBool, 0, 2},
                        {kHalf, -50, 2000},     {kBFloat16, 0, 256},   {kFloat, -7, 1 << 20},
                        {kDouble, -big, big}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dt)) + " [" + std::to_string(c.low) + ", " + std::to_string(c.high) + ")");
    manual_seed(3);
    Tensor cpu = randint(c.low, c.high, {777}, c.dt);
    const uint64_t range = static_cast<uint64_t>(c.high) - static_cast<uint64_t>(c.low);
    RandomParams p = params(RandomOp::randint, 777, range >= (uint64_t{1} << 32));
    p.low = static_cast<uint64_t>(c.low);
    p.range = range;
    EXPECT_TRUE(bits_equal(host_fill(p, c.dt, 3, 0), cpu));
  }
}

// ---- device: CUDA ops against the CPU ops ------------------------------------------------

TEST(CudaRandomStreams, DeviceUniformEqualsCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kFloatDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t n : {1, 5, 4099, 1 << 20}) {
      manual_seed(2024);
      Tensor cpu = rand({n}, dt);
      manual_seed(2024);
      Tensor gpu = rand({n}, TensorOptions(dt).device(Device(kCUDA)));
      ASSERT_TRUE(gpu.is_cuda());
      EXPECT_TRUE(bits_equal(gpu.cpu(), cpu)) << "n=" << n;
    }
    manual_seed(8);
    Tensor cpu = empty({3001}, dt).uniform_(-2.0, 6.0);
    manual_seed(8);
    Tensor gpu = empty({3001}, TensorOptions(dt).device(Device(kCUDA))).uniform_(-2.0, 6.0);
    EXPECT_TRUE(within_ulps(gpu.cpu(), cpu, 1.0, 6.0));
  }
}

TEST(CudaRandomStreams, DeviceNormalMatchesCpu) {
  // CUDA's logf/sinf/cosf and glibc's may differ by an ulp or two.
  REQUIRE_CUDA();
  for (ScalarType dt : kFloatDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    manual_seed(77);
    Tensor cpu = randn({100003}, dt);
    manual_seed(77);
    Tensor gpu = randn({100003}, TensorOptions(dt).device(Device(kCUDA)));
    EXPECT_TRUE(within_ulps(gpu.cpu(), cpu, 8.0));
    manual_seed(78);
    Tensor c2 = empty({1001}, dt).normal_(-1.0, 3.0);
    manual_seed(78);
    Tensor g2 = empty({1001}, TensorOptions(dt).device(Device(kCUDA))).normal_(-1.0, 3.0);
    EXPECT_TRUE(within_ulps(g2.cpu(), c2, 8.0, 1.0));
  }
}

TEST(CudaRandomStreams, DeviceBernoulliAndRandintEqualCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    manual_seed(31);
    Tensor cpu = empty({5003}, dt).bernoulli_(0.25);
    manual_seed(31);
    Tensor gpu = empty({5003}, TensorOptions(dt).device(Device(kCUDA))).bernoulli_(0.25);
    EXPECT_TRUE(bits_equal(gpu.cpu(), cpu));
  }
  const int64_t big = int64_t{1} << 40;
  for (auto [dt, lo, hi] : {std::tuple{kInt64, int64_t{-3}, int64_t{1000}}, std::tuple{kInt64, -big, big},
                            std::tuple{kInt32, int64_t{0}, int64_t{7}}, std::tuple{kUInt8, int64_t{0}, int64_t{256}},
                            std::tuple{kFloat, int64_t{-9}, int64_t{9}}, std::tuple{kHalf, int64_t{0}, int64_t{100}}}) {
    SCOPED_TRACE(dtype_name(dt));
    manual_seed(12);
    Tensor cpu = randint(lo, hi, {4097}, dt);
    manual_seed(12);
    Tensor gpu = randint(lo, hi, {4097}, TensorOptions(dt).device(Device(kCUDA)));
    EXPECT_TRUE(bits_equal(gpu.cpu(), cpu));
  }
}

TEST(CudaRandomStreams, DeviceNonContiguousTargetsAndOffsets) {
  REQUIRE_CUDA();
  // A transposed target is filled through a contiguous temporary, as on the
  // CPU; consecutive ops advance the same offsets on both devices.
  manual_seed(55);
  Tensor c = empty({40, 30}).t();
  c.uniform_(0.0, 1.0);
  Tensor c_next = randn({17});
  manual_seed(55);
  Tensor g = empty({40, 30}, TensorOptions(kFloat).device(Device(kCUDA))).t();
  g.uniform_(0.0, 1.0);
  Tensor g_next = randn({17}, TensorOptions(kFloat).device(Device(kCUDA)));
  EXPECT_TRUE(bits_equal(g.cpu(), c));
  EXPECT_TRUE(within_ulps(g_next.cpu(), c_next, 8.0));
  // Empty fills consume nothing.
  manual_seed(56);
  Tensor e = rand({0}, TensorOptions(kFloat).device(Device(kCUDA)));
  EXPECT_EQ(e.numel(), 0);
  Tensor after = rand({9}, TensorOptions(kFloat).device(Device(kCUDA)));
  manual_seed(56);
  EXPECT_TRUE(bits_equal(after.cpu(), rand({9})));
}
