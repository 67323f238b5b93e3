// The host-side logic of the CUDA elementwise engine (src/backend/cuda/
// iter_plan.h): magic-number division, the offset calculator and the launch
// plan. Plain C++ checked on the CPU against naive references; these tests
// run on every machine (no GPU needed).
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "backend/cuda/iter_plan.h"
#include "brisk/brisk.h"
#include "core/tensor_iter.h"
#include "test_util.h"

using namespace brisk;
using brisk::cuda::detail::IntDivider32;
using brisk::cuda::detail::is_host_operand;
using brisk::cuda::detail::LaunchPlan;
using brisk::cuda::detail::OffsetCalculator;
using brisk::cuda::detail::plan_launch;

namespace {

// ---- IntDivider32 ---------------------------------------------------------------------------------

TEST(CudaLoops, IntDividerMatchesDivisionAtTheEdges) {
  const std::vector<uint32_t> divisors = {1, 2, 3, 5, 6, 7, 10, 12, 64, 100, 127, 255, 256, 1000, 4095, 65535, 65536,
                                          65537, (1u << 20) + 3, 1u << 30, (1u << 30) + 1, INT32_MAX - 1, INT32_MAX};
  for (uint32_t d : divisors) {
    IntDivider32 div(d);
    const std::vector<uint64_t> ns = {0, 1, 2, d - 1ull, d, d + 1ull, 2ull * d - 1, 2ull * d, 3ull * d + 1,
                                      INT32_MAX - 1ull, INT32_MAX, INT32_MAX - uint64_t(d)};
    for (uint64_t n64 : ns) {
      if (n64 > INT32_MAX) continue;
      const uint32_t n = static_cast<uint32_t>(n64);
      ASSERT_EQ(div.div(n), n / d) << n << " / " << d;
    }
  }
}

TEST(CudaLoops, IntDividerMatchesDivisionOnRandomPairs) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> num(0, INT32_MAX);
  for (int i = 0; i < 200000; ++i) {
    // Divisors spread over every magnitude: 2^(0..31) scaled.
    const int bits = 1 + static_cast<int>(rng() % 31);
    uint32_t d = static_cast<uint32_t>(rng() & ((1ull << bits) - 1));
    if (d == 0) d = 1;
    const uint32_t n = num(rng);
    IntDivider32 div(d);
    ASSERT_EQ(div.div(n), n / d) << n << " / " << d;
  }
}

// ---- OffsetCalculator ----------------------------------------------------------------------------

// The naive walk: linear index -> per-dim indices (dim 0 fastest) -> sum of
// index * stride for operand k.
int64_t naive_offset(const TensorIter& it, int k, int64_t linear) {
  int64_t off = 0;
  for (int d = 0; d < it.ndim; ++d) {
    off += (linear % it.shape[d]) * it.strides[k][d];
    linear /= it.shape[d];
  }
  return off;
}

template <int NOPS, bool k32>
void expect_offsets_match(const TensorIter& it) {
  ASSERT_EQ(it.noperands, NOPS);
  OffsetCalculator<NOPS, k32> oc(it);
  for (int64_t i = 0; i < it.numel; ++i) {
    const auto off = oc.get(static_cast<typename OffsetCalculator<NOPS, k32>::index_t>(i));
    for (int k = 0; k < NOPS; ++k)
      ASSERT_EQ(static_cast<int64_t>(off.v[k]), naive_offset(it, k, i)) << "operand " << k << " element " << i;
  }
}

// Emulates the strided kernel on the CPU: out[o0] = a[o1] + b[o2] through
// the calculator's offsets, which must give brisk's CPU result.
template <bool k32>
Tensor add_through_offsets(const Tensor& a, const Tensor& b) {
  TensorIter it;
  IterBuilder("add").input(a).input(b).build(it);
  OffsetCalculator<3, k32> oc(it);
  for (int64_t i = 0; i < it.numel; ++i) {
    const auto off = oc.get(static_cast<typename OffsetCalculator<3, k32>::index_t>(i));
    float x, y;
    std::memcpy(&x, it.data[1] + off.v[1], sizeof(float));
    std::memcpy(&y, it.data[2] + off.v[2], sizeof(float));
    const float r = x + y;
    std::memcpy(it.data[0] + off.v[0], &r, sizeof(float));
  }
  return it.result;
}

struct Case {
  const char* name;
  std::function<Tensor()> a, b;
};

std::vector<Case> layout_cases() {
  auto seq = [](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return arange(n, kFloat).reshape(shape);
  };
  return {
      {"contiguous", [=] { return seq({4, 5, 6}); }, [=] { return seq({4, 5, 6}) * 10; }},
      {"transposed", [=] { return seq({6, 5}).t(); }, [=] { return seq({5, 6}); }},
      {"sliced", [=] { return seq({9, 12}).slice(0, 1, 9, 2).slice(1, 0, 12, 3); }, [=] { return seq({4, 4}); }},
      {"broadcast", [=] { return seq({3, 1, 5}); }, [=] { return seq({4, 1}); }},
      {"permuted 5-d", [=] { return seq({2, 3, 4, 5, 3}).permute({4, 1, 3, 0, 2}); },
       [=] { return seq({3, 3, 5, 2, 4}); }},
      {"expanded", [=] { return seq({1, 7}).expand({6, 7}); }, [=] { return seq({6, 1}).expand({6, 7}).t().t(); }},
      {"one element", [=] { return seq({1, 1}); }, [=] { return seq({1}); }},
      {"strided 1-d", [=] { return seq({40}).slice(0, 3, 40, 3); }, [=] { return seq({13}); }},
  };
}

TEST(CudaLoops, OffsetCalculatorMatchesANaiveStrideWalk) {
  for (const Case& c : layout_cases()) {
    SCOPED_TRACE(c.name);
    Tensor a = c.a(), b = c.b();
    TensorIter it;
    IterBuilder("add").input(a).input(b).build(it);
    expect_offsets_match<3, true>(it);
    expect_offsets_match<3, false>(it);
  }
}

TEST(CudaLoops, OffsetCalculatorAcrossSixteenDims) {
  // Two operands walking 16 dims in opposite orders: nothing coalesces.
  std::vector<int64_t> shape(16, 2), reversed(16), perm(16);
  shape[3] = 3;
  shape[9] = 5;
  int64_t n = 1;
  for (int d = 0; d < 16; ++d) {
    reversed[d] = shape[15 - d];
    perm[d] = 15 - d;
    n *= shape[d];
  }
  Tensor a = arange(n, kFloat).reshape(shape);
  Tensor b = arange(n, kFloat).reshape(reversed).permute(perm);
  ASSERT_EQ(b.sizes(), a.sizes());
  TensorIter it;
  IterBuilder("add").input(a).input(b).build(it);
  EXPECT_EQ(it.ndim, 16);
  expect_offsets_match<3, true>(it);
  expect_offsets_match<3, false>(it);
  EXPECT_TRUE(brisk::testing::close(add_through_offsets<true>(a, b), a + b, 0, 0));
}

TEST(CudaLoops, KernelEmulationThroughOffsetsGivesTheCpuResult) {
  for (const Case& c : layout_cases()) {
    SCOPED_TRACE(c.name);
    Tensor a = c.a(), b = c.b();
    Tensor want = a + b;
    EXPECT_TRUE(brisk::testing::close(add_through_offsets<true>(a, b), want, 0, 0));
    EXPECT_TRUE(brisk::testing::close(add_through_offsets<false>(a, b), want, 0, 0));
  }
}

TEST(CudaLoops, OffsetCalculatorIn64BitsBeyondInt32) {
  // A hand-made iterator (no memory behind it): 3 dims, 3e9 elements, byte
  // offsets up to 2.4e10; spot-check indices against the naive walk.
  TensorIter it;
  it.noperands = 2;
  it.ndim = 3;
  it.shape[0] = 100000;
  it.shape[1] = 3000;
  it.shape[2] = 10;
  it.numel = 100000LL * 3000 * 10;
  it.strides[0][0] = 8, it.strides[0][1] = 8LL * 100000, it.strides[0][2] = 8LL * 100000 * 3000;
  it.strides[1][0] = 8LL * 3000 * 10, it.strides[1][1] = 8LL * 10, it.strides[1][2] = 8;
  OffsetCalculator<2, false> oc(it);
  for (int64_t i : {0LL, 1LL, 99999LL, 100000LL, 299999999LL, 300000000LL, 2999999999LL, 1234567891LL, 2147483648LL}) {
    const auto off = oc.get(static_cast<uint64_t>(i));
    EXPECT_EQ(off.v[0], naive_offset(it, 0, i)) << i;
    EXPECT_EQ(off.v[1], naive_offset(it, 1, i)) << i;
  }
  EXPECT_GT(naive_offset(it, 0, it.numel - 1), int64_t(INT32_MAX));
  EXPECT_GT(naive_offset(it, 1, it.numel - 1), int64_t(INT32_MAX));
}

// ---- launch plan --------------------------------------------------------------------------------

// The iterators here are built from CPU tensors; on a GPU every operand but
// a Scalar lives on the device. Dropping the kept-alive operand tensors makes
// is_host_operand see them as device operands (the caller's tensors keep the
// memory alive; plan_launch reads pointers and strides only).
void as_device_iter(TensorIter& it) {
  for (int k = 0; k < it.noperands; ++k) it.operands[k] = Tensor();
}

LaunchPlan plan_of(const TensorIter& it) {
  int64_t es[TensorIter::kMaxOperands];
  for (int k = 0; k < it.noperands; ++k) es[k] = static_cast<int64_t>(element_size(it.dtypes[k]));
  return plan_launch(it, es);
}

TEST(CudaLoops, PlanPicksTheContiguousVectorLoopForDenseAlignedOperands) {
  Tensor a = randn({1000}), b = randn({1000});
  TensorIter it;
  IterBuilder("add").input(a).input(b).build(it);
  const LaunchPlan p = plan_of(it);
  EXPECT_TRUE(p.contiguous);
  EXPECT_TRUE(p.vectorize);  // fresh allocations are at least 16-byte aligned
  EXPECT_TRUE(p.index32);
}

TEST(CudaLoops, PlanDropsVectorsForAMisalignedOperand) {
  Tensor base = randn({1001});
  Tensor a = base.slice(0, 1, 1001);  // 4 bytes past an aligned address
  Tensor b = randn({1000});
  TensorIter it;
  IterBuilder("add").input(a).input(b).build(it);
  const LaunchPlan p = plan_of(it);
  EXPECT_TRUE(p.contiguous);
  EXPECT_FALSE(p.vectorize);
}

TEST(CudaLoops, PlanTreatsScalarsAndStrideZeroInputsAsContiguous) {
  Tensor a = randn({64});
  {
    TensorIter it;
    IterBuilder("add").input(a).input(Scalar(2.5)).build(it);
    EXPECT_TRUE(is_host_operand(it, 2));
    EXPECT_FALSE(is_host_operand(it, 1));
    EXPECT_FALSE(is_host_operand(it, 0));
    const LaunchPlan p = plan_of(it);
    EXPECT_TRUE(p.contiguous);
    EXPECT_TRUE(p.vectorize);
    float v;
    const uint64_t bits = brisk::cuda::detail::host_operand_bits(it, 2);
    std::memcpy(&v, &bits, sizeof(v));
    EXPECT_EQ(v, 2.5f);
  }
  {
    Tensor one = randn({1});
    TensorIter it;
    IterBuilder("add").input(a).input(one).build(it);  // broadcast: stride 0
    as_device_iter(it);
    EXPECT_FALSE(is_host_operand(it, 2));
    const LaunchPlan p = plan_of(it);
    EXPECT_TRUE(p.contiguous);
    EXPECT_TRUE(p.vectorize);
    EXPECT_EQ(it.strides[2][0], 0);
  }
  {
    // A 0-dim CPU tensor among device operands is a host operand.
    Tensor s = scalar_tensor(4.0, kDouble);
    TensorIter it;
    IterBuilder("add").input(a).input(s).build(it);
    it.operands[0] = it.operands[1] = Tensor();  // the output and `a` as if on the device
    ASSERT_TRUE(it.operands[2].defined());        // s cast to float, on the CPU
    EXPECT_FALSE(is_host_operand(it, 1));
    EXPECT_TRUE(is_host_operand(it, 2));
    const uint64_t bits = brisk::cuda::detail::host_operand_bits(it, 2);
    float v;  // cast to the compute dtype (float) on the host by build()
    std::memcpy(&v, &bits, sizeof(v));
    EXPECT_EQ(it.dtypes[2], kFloat);
    EXPECT_EQ(v, 4.0f);
  }
}

TEST(CudaLoops, PlanSendsNonDenseIteratorsToTheStridedLoop) {
  Tensor a = randn({8, 9});
  TensorIter it;
  IterBuilder("add").input(a.t()).input(randn({9, 8})).build(it);
  EXPECT_FALSE(plan_of(it).contiguous);
  EXPECT_TRUE(plan_of(it).index32);
  Tensor b = randn({40}), c = randn({20});
  TensorIter it2;
  IterBuilder("add").input(b.slice(0, 0, 40, 2)).input(c).build(it2);
  as_device_iter(it2);
  EXPECT_EQ(it2.ndim, 1);
  EXPECT_FALSE(plan_of(it2).contiguous);
}

TEST(CudaLoops, PlanChoosesSixtyFourBitIndicesOnlyWhenNeeded) {
  auto make = [](int64_t n, int64_t stride0, int64_t stride1) {
    TensorIter it;
    it.noperands = 2;
    it.ndim = 1;
    it.numel = n;
    it.shape[0] = n;
    it.dtypes[0] = it.dtypes[1] = kFloat;
    it.strides[0][0] = stride0;
    it.strides[1][0] = stride1;
    it.data[0] = it.data[1] = reinterpret_cast<char*>(uintptr_t(1) << 20);
    return it;
  };
  // numel fits, byte extent (n-1)*4 fits: 32-bit.
  EXPECT_TRUE(plan_of(make(int64_t(INT32_MAX) / 4, 4, 4)).index32);
  // numel fits but the byte extent does not.
  EXPECT_FALSE(plan_of(make(int64_t(INT32_MAX) / 4 + 2, 4, 4)).index32);
  // one operand's stride alone is too big.
  EXPECT_FALSE(plan_of(make(2, 4, int64_t(1) << 33)).index32);
  // a negative stride counts by its magnitude.
  EXPECT_TRUE(plan_of(make(1000, 4, -4)).index32);
  EXPECT_FALSE(plan_of(make(int64_t(INT32_MAX) / 2, 1, -8)).index32);
  // numel beyond int32 with byte-sized elements and stride 0 inputs.
  EXPECT_FALSE(plan_of(make(int64_t(INT32_MAX) + 1, 1, 0)).index32);
  EXPECT_TRUE(plan_of(make(int64_t(INT32_MAX), 1, 0)).index32);
}

TEST(CudaLoops, PlanIgnoresHostOperandsInTheIndexCheck) {
  // A scalar's "pointer" is the host buffer: it never limits the index width
  // or the vector alignment.
  Tensor a = randn({10});
  TensorIter it;
  IterBuilder("mul").input(a).input(Scalar(3)).build(it);
  it.strides[2][0] = int64_t(1) << 40;  // would force 64-bit if it counted
  EXPECT_TRUE(plan_of(it).index32);
  EXPECT_TRUE(plan_of(it).contiguous);
}

}  // namespace
