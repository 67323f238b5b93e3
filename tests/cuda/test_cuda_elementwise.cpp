// The CUDA elementwise kernels (src/backend/cuda/elementwise.cu, unary.cu)
// against brisk's CPU kernels: every op of the elementwise families, each
// dtype it supports, dense, transposed, strided, misaligned and broadcast
// inputs, scalar and 0-dim operands, in-place and out= forms, empty tensors.
// The GPU tests skip without a device; the first group runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "core/dispatch.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;

namespace {

const Device kGpu(kCUDA);

// ---- without a device -----------------------------------------------------------------------

TEST(CudaElementwiseNoDevice, OpsOnCudaThrowNotAvailable) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present: the no-device errors cannot be checked";
  // Factories fail at the allocation, conversions at `to`.
  expect_error([] { ones({2}, Device(kCUDA)); }, {"[empty]", "device cuda", "not available"});
  expect_error([] { full({2, 3}, 1.5, TensorOptions(kHalf).device(Device(kCUDA))); }, {"[empty]", "not available"});
  Tensor x = arange(6, kFloat);
  expect_error([&] { x.to(Device(kCUDA), kHalf); }, {"[to]", "not available"});
  expect_error([&] { (x + 1).cuda().add(1); }, {"[to]", "not available"});
}

// Every op of the elementwise families has a CUDA kernel in a CUDA build,
// device or not (registration touches no driver).
TEST(CudaElementwiseNoDevice, EveryElementwiseOpHasACudaKernel) {
  if (cuda::unavailable_reason().find("no CUDA backend") != std::string::npos)
    GTEST_SKIP() << "this build has no CUDA backend";
  EXPECT_NO_THROW((kernel<OpId::copy>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::fill>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::add>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::mul>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::div>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::remainder>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::fmod>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::pow>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::minimum>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::maximum>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::atan2>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::compare>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::logical>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::bitwise>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::lerp>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::addcmul>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::addcdiv>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::clamp>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::clamp_tensor>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::where>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::unary>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::gelu>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::softplus>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::isclose>(kCUDA, "t")));
  EXPECT_NO_THROW((kernel<OpId::threshold_backward>(kCUDA, "t")));
}

// ---- helpers ---------------------------------------------------------------------------------

const std::vector<ScalarType> kFloats = {kFloat, kDouble, kHalf, kBFloat16};
const std::vector<ScalarType> kInts = {kUInt8, kInt32, kInt64};
const std::vector<ScalarType> kNumeric = {kFloat, kDouble, kHalf, kBFloat16, kUInt8, kInt32, kInt64};
const std::vector<ScalarType> kAll = {kFloat, kDouble, kHalf, kBFloat16, kUInt8, kInt32, kInt64, kBool};

bool is_float(ScalarType t) { return is_floating_point(t); }

/// Random CPU values in [lo, hi) of dtype `dt` (integers floored; bool: half
/// true). Floats get a sprinkle of nan, inf and -inf when `specials`.
Tensor values(IntArrayRef shape, ScalarType dt, double lo, double hi, bool specials = false) {
  if (dt == kBool) return rand(shape) < 0.5;
  Tensor v = rand(shape, kDouble) * (hi - lo) + lo;
  if (!is_float(dt)) return v.floor().to(dt);
  if (specials) {
    Tensor u = rand(shape, kDouble);
    v = where(u < 0.03, Scalar(std::nan("")), v);
    v = where((u >= 0.03) & (u < 0.05), Scalar(INFINITY), v);
    v = where((u >= 0.05) & (u < 0.07), Scalar(-INFINITY), v);
  }
  return v.to(dt);
}

double rtol_for(ScalarType t, bool transcendental = false) {
  switch (t) {
    case kHalf: case kBFloat16: return 1e-2;
    case kFloat: return transcendental ? 2e-6 : 1e-6;
    case kDouble: return transcendental ? 1e-13 : 1e-15;
    default: return 0;
  }
}
double atol_for(ScalarType t) {
  switch (t) {
    case kHalf: case kBFloat16: return 1e-3;
    case kFloat: return 1e-6;
    case kDouble: return 1e-14;
    default: return 0;
  }
}

/// A GPU result against the CPU result: same shape and dtype, close values.
void expect_match(const Tensor& gpu, const Tensor& cpu, double rtol, double atol, const std::string& what) {
  ASSERT_TRUE(gpu.is_cuda()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.sizes(), cpu.sizes()) << what;
  EXPECT_TRUE(close(gpu.cpu(), cpu, rtol, atol)) << what;
}

// Layouts of a (rows, cols) operand: the same view of one base on the CPU
// and on the GPU.
enum class Layout { Dense, Transposed, Strided, Misaligned, RowBroadcast, ColBroadcast };
const std::vector<Layout> kLayouts = {Layout::Dense, Layout::Transposed, Layout::Strided,
                                      Layout::Misaligned, Layout::RowBroadcast, Layout::ColBroadcast};
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Dense: return "dense";
    case Layout::Transposed: return "transposed";
    case Layout::Strided: return "strided";
    case Layout::Misaligned: return "misaligned";
    case Layout::RowBroadcast: return "row-broadcast";
    default: return "col-broadcast";
  }
}

struct Pair {
  Tensor cpu, gpu;
};

Pair make_input(int64_t r, int64_t c, Layout l, ScalarType dt, double lo, double hi, bool specials = false) {
  Tensor base;
  std::function<Tensor(const Tensor&)> view;
  switch (l) {
    case Layout::Dense:
      base = values({r, c}, dt, lo, hi, specials);
      view = [](const Tensor& t) { return t; };
      break;
    case Layout::Transposed:
      base = values({c, r}, dt, lo, hi, specials);
      view = [](const Tensor& t) { return t.t(); };
      break;
    case Layout::Strided:
      base = values({2 * r, 3 * c + 1}, dt, lo, hi, specials);
      view = [=](const Tensor& t) { return t.slice(0, 0, 2 * r, 2).slice(1, 1, 3 * c + 1, 3); };
      break;
    case Layout::Misaligned:
      base = values({r * c + 1}, dt, lo, hi, specials);
      view = [=](const Tensor& t) { return t.slice(0, 1, r * c + 1).view({r, c}); };
      break;
    case Layout::RowBroadcast:
      base = values({1, c}, dt, lo, hi, specials);
      view = [=](const Tensor& t) { return t.expand({r, c}); };
      break;
    case Layout::ColBroadcast:
      base = values({r, 1}, dt, lo, hi, specials);
      view = [=](const Tensor& t) { return t.expand({r, c}); };
      break;
  }
  return {view(base), view(base.to(kGpu))};
}

Pair upload(const Tensor& cpu) { return {cpu, cpu.to(kGpu)}; }

// An odd shape: no multiple of the vector width, a tail on every path.
constexpr int64_t kR = 37, kC = 53;

// ---- binary ops ------------------------------------------------------------------------------

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
struct BinaryCase {
  const char* name;
  BinaryFn fn;
  std::vector<ScalarType> dtypes;
  double lo, hi;           // input range
  bool nonzero_rhs = false;  // integer divisors must not be 0
  bool transcendental = false;
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](auto& a, auto& b) { return a + b; }, kAll, -50, 50},
      {"add alpha", [](auto& a, auto& b) { return add(a, b, 3); }, kNumeric, -20, 20},
      {"sub", [](auto& a, auto& b) { return a - b; }, kNumeric, -50, 50},
      {"sub alpha float", [](auto& a, auto& b) { return sub(a, b, 0.5); }, kFloats, -50, 50},
      {"mul", [](auto& a, auto& b) { return a * b; }, kAll, -10, 10},
      {"div", [](auto& a, auto& b) { return a / b; }, kFloats, -10, 10},
      {"div trunc", [](auto& a, auto& b) { return div(a, b, RoundingMode::Trunc); }, kFloats, -10, 10},
      {"div floor", [](auto& a, auto& b) { return div(a, b, RoundingMode::Floor); }, kFloats, -10, 10},
      {"remainder", [](auto& a, auto& b) { return remainder(a, b); }, kFloats, -10, 10},
      {"fmod", [](auto& a, auto& b) { return fmod(a, b); }, kFloats, -10, 10},
      {"pow", [](auto& a, auto& b) { return pow(a.abs(), b); }, kFloats, -3, 3, false, true},
      {"pow int", [](auto& a, auto& b) { return pow(a, b.abs()); }, kInts, -4, 5},
      {"minimum", [](auto& a, auto& b) { return minimum(a, b); }, kAll, -50, 50},
      {"maximum", [](auto& a, auto& b) { return maximum(a, b); }, kAll, -50, 50},
      {"atan2", [](auto& a, auto& b) { return atan2(a, b); }, kFloats, -5, 5, false, true},
      {"bitwise_and", [](auto& a, auto& b) { return bitwise_and(a, b); }, {kUInt8, kInt32, kInt64, kBool}, -100, 100},
      {"bitwise_or", [](auto& a, auto& b) { return bitwise_or(a, b); }, {kUInt8, kInt32, kInt64, kBool}, -100, 100},
      {"bitwise_xor", [](auto& a, auto& b) { return bitwise_xor(a, b); }, {kUInt8, kInt32, kInt64, kBool}, -100, 100},
      // counts past the width and negative ones included (PyTorch 2's rules)
      {"bitwise_left_shift", [](auto& a, auto& b) { return bitwise_left_shift(a, b); }, {kUInt8, kInt32, kInt64}, -8,
       70},
      {"bitwise_right_shift", [](auto& a, auto& b) { return bitwise_right_shift(a, b); }, {kUInt8, kInt32, kInt64},
       -8, 70},
      {"eq", [](auto& a, auto& b) { return eq(a, b); }, kAll, -3, 3},
      {"ne", [](auto& a, auto& b) { return ne(a, b); }, kAll, -3, 3},
      {"lt", [](auto& a, auto& b) { return lt(a, b); }, kAll, -3, 3},
      {"le", [](auto& a, auto& b) { return le(a, b); }, kAll, -3, 3},
      {"gt", [](auto& a, auto& b) { return gt(a, b); }, kAll, -3, 3},
      {"ge", [](auto& a, auto& b) { return ge(a, b); }, kAll, -3, 3},
      {"logical_and", [](auto& a, auto& b) { return logical_and(a, b); }, kAll, -2, 2},
      {"logical_or", [](auto& a, auto& b) { return logical_or(a, b); }, kAll, -2, 2},
      {"logical_xor", [](auto& a, auto& b) { return logical_xor(a, b); }, kAll, -2, 2},
      {"isclose", [](auto& a, auto& b) { return isclose(a, b, 0.05, 0.1); }, kAll, -2, 2},
      {"isclose equal_nan", [](auto& a, auto& b) { return isclose(a, b, 1e-3, 0.5, true); }, kFloats, -2, 2},
      {"threshold_backward", [](auto& a, auto& b) { return threshold_backward(a, b, 0.25); }, kFloats, -2, 2},
      {"lerp scalar", [](auto& a, auto& b) { return lerp(a, b, 0.3); }, kFloats, -5, 5},
      {"lerp scalar hi", [](auto& a, auto& b) { return lerp(a, b, 0.8); }, kFloats, -5, 5},
  };
}

// uint8 inputs of a signed range wrap; keep them in range instead.
double lo_for(ScalarType t, double lo) { return t == kUInt8 ? std::max(lo, 0.0) : lo; }

void run_binary(const BinaryCase& c, ScalarType dt, Layout la, Layout lb) {
  const std::string what = std::string(c.name) + " " + std::string(dtype_name(dt)) + " " + layout_name(la) + " x " +
                           layout_name(lb);
  const bool specials = is_float(dt);
  Pair a = make_input(kR, kC, la, dt, lo_for(dt, c.lo), c.hi, specials);
  Pair b = make_input(kR, kC, lb, dt, lo_for(dt, c.lo), c.hi, specials);
  if (c.nonzero_rhs) {
    Tensor fixed = where(b.cpu == 0, Scalar(1), b.cpu).to(dt);
    b = upload(fixed);
  }
  Tensor want = c.fn(a.cpu, b.cpu);
  Tensor got = c.fn(a.gpu, b.gpu);
  expect_match(got, want, rtol_for(dt, c.transcendental), atol_for(dt), what);
}

TEST(CudaElementwise, BinaryOpsMatchTheCpuOnEveryDtypeAndLayout) {
  REQUIRE_CUDA();
  manual_seed(1);
  for (const BinaryCase& c : binary_cases())
    for (ScalarType dt : c.dtypes) {
      for (Layout la : kLayouts) run_binary(c, dt, la, Layout::Dense);
      run_binary(c, dt, Layout::Dense, Layout::Transposed);
      run_binary(c, dt, Layout::Strided, Layout::RowBroadcast);
      run_binary(c, dt, Layout::ColBroadcast, Layout::RowBroadcast);
    }
}

// nan_to_num (a composite of isnan, clamp, eq and masked_fill_) on the device.
TEST(CudaElementwise, NanToNumMatchesTheCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    Tensor x = tensor<double>({NAN, INFINITY, -INFINITY, 1.5, -2.0, 0.0}, kDouble).to(dt);
    EXPECT_TRUE(close(x.to(kGpu).nan_to_num().cpu(), x.nan_to_num(), 0, 0)) << dtype_name(dt);
    EXPECT_TRUE(close(x.to(kGpu).nan_to_num(1.0, 2.0, -3.0).cpu(), x.nan_to_num(1.0, 2.0, -3.0), 0, 0));
    Tensor g = x.to(kGpu);
    g.nan_to_num_(0.5, 1.0, -1.0);
    EXPECT_TRUE(close(g.cpu(), x.nan_to_num(0.5, 1.0, -1.0), 0, 0));
  }
  Tensor leaf = tensor<double>({NAN, 2.0, INFINITY}, kDouble).to(kGpu).requires_grad_();
  leaf.nan_to_num().sum().backward();
  EXPECT_EQ(leaf.grad().cpu().to_vector<double>(), (std::vector<double>{0, 1, 0}));
}

// Integer floor/trunc division, remainder and fmod by a tensor: the front end
// checks the divisor for zeros on the device (eq + any + item).
TEST(CudaElementwise, IntegerDivisionByATensor) {
  REQUIRE_CUDA();
  manual_seed(2);
  const std::vector<BinaryCase> cases = {
      {"div trunc", [](auto& a, auto& b) { return div(a, b, RoundingMode::Trunc); }, kInts, -20, 20, true},
      {"div floor", [](auto& a, auto& b) { return div(a, b, RoundingMode::Floor); }, kInts, -20, 20, true},
      {"remainder", [](auto& a, auto& b) { return remainder(a, b); }, kInts, -20, 20, true},
      {"fmod", [](auto& a, auto& b) { return fmod(a, b); }, kInts, -20, 20, true},
  };
  for (const BinaryCase& c : cases)
    for (ScalarType dt : c.dtypes) {
      run_binary(c, dt, Layout::Dense, Layout::Dense);
      run_binary(c, dt, Layout::Transposed, Layout::Strided);
      run_binary(c, dt, Layout::Misaligned, Layout::RowBroadcast);
    }
}

TEST(CudaElementwise, IntegerDivisionByAScalar) {
  REQUIRE_CUDA();
  manual_seed(3);
  for (ScalarType dt : kInts) {
    Pair a = make_input(kR, kC, Layout::Strided, dt, dt == kUInt8 ? 0 : -50, 50);
    for (int64_t d : {3, 7}) {
      const std::string what = std::string(dtype_name(dt)) + " by " + std::to_string(d);
      expect_match(div(a.gpu, d, RoundingMode::Floor), div(a.cpu, d, RoundingMode::Floor), 0, 0, "floor " + what);
      expect_match(div(a.gpu, d, RoundingMode::Trunc), div(a.cpu, d, RoundingMode::Trunc), 0, 0, "trunc " + what);
      expect_match(remainder(a.gpu, d), remainder(a.cpu, d), 0, 0, "remainder " + what);
      expect_match(fmod(a.gpu, d), fmod(a.cpu, d), 0, 0, "fmod " + what);
      if (dt != kUInt8) {
        expect_match(remainder(a.gpu, -d), remainder(a.cpu, -d), 0, 0, "remainder -" + what);
        expect_match(div(a.gpu, -d, RoundingMode::Floor), div(a.cpu, -d, RoundingMode::Floor), 0, 0, "floor -" + what);
      }
    }
    // True division of integers computes in float.
    expect_match(a.gpu / 4, a.cpu / 4, 1e-6, 0, "true division");
  }
}

TEST(CudaElementwise, ScalarOperands) {
  REQUIRE_CUDA();
  manual_seed(4);
  for (ScalarType dt : kNumeric) {
    const std::string n(dtype_name(dt));
    const double rt = rtol_for(dt), at = atol_for(dt);
    Pair a = make_input(kR, kC, Layout::Transposed, dt, dt == kUInt8 ? 0 : -5, 5);
    Pair d = make_input(kR, kC, Layout::Dense, dt, dt == kUInt8 ? 0 : -5, 5);
    expect_match(a.gpu + 2, a.cpu + 2, rt, at, "+ 2 " + n);
    expect_match(d.gpu + 2, d.cpu + 2, rt, at, "dense + 2 " + n);
    expect_match(d.gpu * 3, d.cpu * 3, rt, at, "dense * 3 " + n);
    expect_match(a.gpu * 2.5, a.cpu * 2.5, rt, at, "* 2.5 " + n);  // integer tensors promote to float
    expect_match(a.gpu - 1, a.cpu - 1, rt, at, "- 1 " + n);
    expect_match(3 - a.gpu, 3 - a.cpu, rt, at, "3 - " + n);
    expect_match(1.5 / (a.gpu + 10), 1.5 / (a.cpu + 10), rt, at, "1.5 / " + n);
    expect_match(add(a.gpu, 2, 3), add(a.cpu, 2, 3), rt, at, "add alpha scalar " + n);
    expect_match(pow(a.gpu, 2), pow(a.cpu, 2), rt, at, "pow 2 " + n);
    expect_match(pow(a.gpu, 3), pow(a.cpu, 3), rt, at, "pow 3 " + n);
    expect_match(pow(d.gpu, 2), pow(d.cpu, 2), rt, at, "dense pow 2 " + n);
    expect_match(minimum(a.gpu, 1), minimum(a.cpu, 1), rt, at, "minimum 1 " + n);
    expect_match(maximum(a.gpu, 1), maximum(a.cpu, 1), rt, at, "maximum 1 " + n);
    expect_match(a.gpu.lt(1), a.cpu.lt(1), 0, 0, "lt 1 " + n);
    expect_match(a.gpu.eq(2), a.cpu.eq(2), 0, 0, "eq 2 " + n);
    expect_match(a.gpu.ge(0.5), a.cpu.ge(0.5), 0, 0, "ge 0.5 " + n);
    expect_match(remainder(a.gpu, 3), remainder(a.cpu, 3), rt, at, "remainder 3 " + n);
    expect_match(logical_or(a.gpu, false), logical_or(a.cpu, false), 0, 0, "logical_or false " + n);
    if (is_float(dt)) {
      expect_match(pow(2, a.gpu), pow(2, a.cpu), rtol_for(dt, true), at, "2 ** " + n);
      expect_match(pow(a.gpu.abs(), 0.5), pow(a.cpu.abs(), 0.5), rtol_for(dt, true), at, "pow 0.5 " + n);
      expect_match(atan2(a.gpu, 0.5), atan2(a.cpu, 0.5), rtol_for(dt, true), at, "atan2 scalar " + n);
      expect_match(fmod(a.gpu, -1.5), fmod(a.cpu, -1.5), rt, at, "fmod -1.5 " + n);
    } else {
      expect_match(bitwise_and(a.gpu, 6), bitwise_and(a.cpu, 6), 0, 0, "& 6 " + n);
      expect_match(bitwise_xor(a.gpu, 5), bitwise_xor(a.cpu, 5), 0, 0, "^ 5 " + n);
    }
  }
}

TEST(CudaElementwise, MixedDtypesPromoteOnTheDevice) {
  REQUIRE_CUDA();
  manual_seed(5);
  struct Mix {
    ScalarType a, b;
  };
  for (Mix m : {Mix{kInt32, kFloat}, Mix{kHalf, kFloat}, Mix{kUInt8, kInt64}, Mix{kBool, kInt32}, Mix{kBFloat16, kHalf},
                Mix{kInt64, kDouble}, Mix{kBool, kHalf}, Mix{kUInt8, kInt32}}) {
    const std::string what = std::string(dtype_name(m.a)) + " with " + std::string(dtype_name(m.b));
    Pair a = make_input(kR, kC, Layout::Strided, m.a, 0, 20);
    Pair b = make_input(kR, kC, Layout::Transposed, m.b, 0, 20);
    Tensor want = a.cpu + b.cpu;
    expect_match(a.gpu + b.gpu, want, rtol_for(want.dtype()), atol_for(want.dtype()), "+ " + what);
    expect_match(a.gpu * b.gpu, a.cpu * b.cpu, rtol_for(want.dtype()), atol_for(want.dtype()), "* " + what);
    expect_match(a.gpu.lt(b.gpu), a.cpu.lt(b.cpu), 0, 0, "lt " + what);
    expect_match(where(a.gpu.gt(5), a.gpu, b.gpu), where(a.cpu.gt(5), a.cpu, b.cpu), 0, 0, "where " + what);
  }
}

// A 0-dim CPU tensor mixed with GPU tensors is read on the host and passed
// by value, on either side and in any position (as in PyTorch).
TEST(CudaElementwise, ZeroDimCpuTensorsMixWithGpuTensors) {
  REQUIRE_CUDA();
  manual_seed(6);
  Pair x = make_input(kR, kC, Layout::Transposed, kFloat, -3, 3);
  Tensor s = scalar_tensor(1.75);           // float32, CPU
  Tensor si = scalar_tensor(3, kInt64);     // int64, CPU
  Tensor sg = s.to(kGpu);                   // 0-dim on the GPU
  expect_match(x.gpu + s, x.cpu + s, 1e-6, 1e-6, "gpu + cpu0");
  expect_match(s + x.gpu, s + x.cpu, 1e-6, 1e-6, "cpu0 + gpu");
  expect_match(s * x.gpu, s * x.cpu, 1e-6, 1e-6, "cpu0 * gpu");
  expect_match(x.gpu * si, x.cpu * si, 1e-6, 1e-6, "gpu * cpu0 int");
  expect_match(si - x.gpu, si - x.cpu, 1e-6, 1e-6, "cpu0 int - gpu");
  expect_match(x.gpu + sg, x.cpu + s, 1e-6, 1e-6, "gpu + gpu0");
  expect_match(sg + s, s + s, 0, 0, "gpu0 + cpu0");
  expect_match(s + sg, s + s, 0, 0, "cpu0 + gpu0");
  expect_match(where(x.gpu.gt(0), s, x.gpu), where(x.cpu.gt(0), s, x.cpu), 0, 0, "where cpu0");
  expect_match(clamp(x.gpu, s.neg(), s), clamp(x.cpu, s.neg(), s), 0, 0, "clamp cpu0 bounds");
  expect_match(isclose(s, x.gpu, 0.1, 0.5), isclose(s, x.cpu, 0.1, 0.5), 0, 0, "isclose cpu0 first");
  expect_match(pow(x.gpu, scalar_tensor(2.0)), pow(x.cpu, scalar_tensor(2.0)), 1e-6, 1e-6, "pow cpu0");
  Tensor h = scalar_tensor(0.5, kHalf);  // promotes into float with the GPU tensor
  expect_match(x.gpu * h, x.cpu * h, 1e-6, 1e-6, "gpu * cpu0 half");
  // In place: the GPU tensor keeps its dtype.
  Tensor g = x.gpu.clone(), c = x.cpu.clone();
  g.add_(s);
  c.add_(s);
  expect_match(g, c, 1e-6, 1e-6, "add_ cpu0");
  // A CPU tensor with dims still may not meet a GPU tensor.
  expect_error([&] { x.gpu + ones({kR, kC}); }, {"[add]", "same device"});
  expect_error([&] { ones({kC}) + x.gpu; }, {"[add]", "same device"});
}

TEST(CudaElementwise, InPlaceOnViewsWritesOnlyTheView) {
  REQUIRE_CUDA();
  manual_seed(7);
  for (ScalarType dt : {kFloat, kHalf, kInt32, kDouble}) {
    const std::string n(dtype_name(dt));
    Tensor base = values({2 * kR, 3 * kC}, dt, 0, 10);
    Tensor gbase = base.to(kGpu);
    auto view = [](const Tensor& t) { return t.slice(0, 1, 2 * kR, 2).slice(1, 0, 3 * kC, 3); };
    Tensor other = values({kC}, dt, 0, 10);  // broadcast over rows
    view(base).add_(other);
    view(gbase).add_(other.to(kGpu));
    expect_match(gbase, base, rtol_for(dt), atol_for(dt), "add_ strided " + n);
    view(base).t().mul_(2);
    view(gbase).t().mul_(2);
    expect_match(gbase, base, rtol_for(dt), atol_for(dt), "mul_ transposed " + n);
    view(base).clamp_(2, 20);
    view(gbase).clamp_(2, 20);
    expect_match(gbase, base, rtol_for(dt), atol_for(dt), "clamp_ " + n);
    view(base).fill_(7);
    view(gbase).fill_(7);
    expect_match(gbase, base, 0, 0, "fill_ strided " + n);
    if (is_float(dt)) {
      view(base).exp_();
      view(gbase).exp_();
      expect_match(gbase, base, rtol_for(dt, true), atol_for(dt), "exp_ " + n);
      view(base).sub_(view(base).t().t(), 0.5);
      view(gbase).sub_(view(gbase).t().t(), 0.5);
      expect_match(gbase, base, rtol_for(dt), atol_for(dt), "sub_ self " + n);
    }
  }
}

TEST(CudaElementwise, OutFormsWriteIntoTheGivenTensor) {
  REQUIRE_CUDA();
  manual_seed(8);
  Pair a = make_input(kR, kC, Layout::Dense, kFloat, -3, 3);
  Pair b = make_input(kR, kC, Layout::Transposed, kFloat, -3, 3);
  {  // preallocated, dense
    Tensor out = empty({kR, kC}, TensorOptions(kFloat).device(kGpu));
    add_out(out, a.gpu, b.gpu, 2);
    expect_match(out, add(a.cpu, b.cpu, 2), 1e-6, 1e-6, "add_out dense");
  }
  {  // a transposed output
    Tensor out = empty({kC, kR}, TensorOptions(kFloat).device(kGpu)).t();
    mul_out(out, a.gpu, b.gpu);
    expect_match(out, a.cpu * b.cpu, 1e-6, 1e-6, "mul_out transposed");
  }
  {  // a wider output dtype: computed in float, written as double
    Tensor out = empty({kR, kC}, TensorOptions(kDouble).device(kGpu));
    sub_out(out, a.gpu, b.gpu);
    Tensor want = empty({kR, kC}, kDouble);
    sub_out(want, a.cpu, b.cpu);
    expect_match(out, want, 1e-12, 1e-12, "sub_out double");
  }
  {  // an empty output is resized
    Tensor out = empty({0}, TensorOptions(kFloat).device(kGpu));
    maximum_out(out, a.gpu, b.gpu);
    expect_match(out, maximum(a.cpu, b.cpu), 0, 0, "maximum_out resized");
  }
  {
    Tensor out = empty({kR, kC}, TensorOptions(kBool).device(kGpu));
    lt_out(out, a.gpu, b.gpu);
    expect_match(out, a.cpu.lt(b.cpu), 0, 0, "lt_out");
    Tensor e = empty({kR, kC}, TensorOptions(kFloat).device(kGpu));
    exp_out(e, a.gpu);
    expect_match(e, a.cpu.exp(), 2e-6, 1e-6, "exp_out");
    Tensor c = empty({kR, kC}, TensorOptions(kFloat).device(kGpu));
    clamp_out(c, a.gpu, -1, 1);
    expect_match(c, a.cpu.clamp(-1, 1), 0, 0, "clamp_out");
    Tensor d = empty({kR, kC}, TensorOptions(kFloat).device(kGpu));
    div_out(d, a.gpu, b.gpu, RoundingMode::Floor);
    expect_match(d, div(a.cpu, b.cpu, RoundingMode::Floor), 0, 0, "div_out floor");
  }
}

TEST(CudaElementwise, EmptyTensors) {
  REQUIRE_CUDA();
  for (auto shape : {std::vector<int64_t>{0}, std::vector<int64_t>{3, 0}, std::vector<int64_t>{0, 4, 5}}) {
    Tensor a = zeros(shape, TensorOptions(kFloat).device(kGpu));
    Tensor b = ones(shape, TensorOptions(kFloat).device(kGpu));
    EXPECT_EQ((a + b).sizes(), IntArrayRef(shape));
    EXPECT_TRUE((a + b).is_cuda());
    EXPECT_EQ(a.exp().sizes(), IntArrayRef(shape));
    EXPECT_EQ(a.lt(b).dtype(), kBool);
    EXPECT_EQ(where(a.lt(b), a, b).sizes(), IntArrayRef(shape));
    EXPECT_EQ(a.to(kHalf).sizes(), IntArrayRef(shape));
    a.add_(1);
    a.fill_(3);
    EXPECT_EQ(a.cpu().numel(), 0);
    EXPECT_EQ(addcmul(a, a, b).sizes(), IntArrayRef(shape));
  }
  // Broadcasting against an empty dim.
  Tensor e = empty({0, 3}, TensorOptions(kFloat).device(kGpu));
  Tensor r = ones({3}, TensorOptions(kFloat).device(kGpu));
  EXPECT_EQ((e * r).sizes(), IntArrayRef({0, 3}));
}

TEST(CudaElementwise, VectorTailsAndTinySizes) {
  REQUIRE_CUDA();
  manual_seed(9);
  for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 1023, 1025, 4099, 100003}) {
    for (ScalarType dt : {kFloat, kHalf, kDouble, kUInt8, kBool}) {
      Tensor a = values({n}, dt, 0, 9), b = values({n}, dt, 0, 9);
      Tensor ga = a.to(kGpu), gb = b.to(kGpu);
      const std::string what = std::to_string(n) + " " + std::string(dtype_name(dt));
      expect_match(maximum(ga, gb), maximum(a, b), 0, 0, "maximum " + what);
      expect_match(ga.eq(gb), a.eq(b), 0, 0, "eq " + what);
      expect_match(where(ga.ne(gb), ga, gb), where(a.ne(b), a, b), 0, 0, "where " + what);
      // Misaligned by one element: the scalar loop.
      if (n > 1) {
        Tensor a1 = a.slice(0, 1, n), b1 = b.slice(0, 0, n - 1);
        expect_match(maximum(ga.slice(0, 1, n), gb.slice(0, 0, n - 1)), maximum(a1, b1), 0, 0, "misaligned " + what);
      }
    }
  }
}

// ---- ternary ops -----------------------------------------------------------------------------

TEST(CudaElementwise, TernaryOps) {
  REQUIRE_CUDA();
  manual_seed(10);
  for (ScalarType dt : kNumeric) {
    const std::string n(dtype_name(dt));
    const double lo = dt == kUInt8 ? 0 : -5;
    for (Layout l : {Layout::Dense, Layout::Transposed, Layout::Strided, Layout::RowBroadcast}) {
      const std::string what = n + " " + layout_name(l);
      Pair x = make_input(kR, kC, l, dt, lo, 5);
      Pair y = make_input(kR, kC, Layout::Dense, dt, lo, 5);
      Pair z = make_input(kR, kC, Layout::ColBroadcast, dt, lo, 5);
      expect_match(addcmul(x.gpu, y.gpu, z.gpu, 2), addcmul(x.cpu, y.cpu, z.cpu, 2), rtol_for(dt), atol_for(dt),
                   "addcmul " + what);
      Pair lo_b = make_input(kR, kC, Layout::RowBroadcast, dt, lo, 0);
      Pair hi_b = make_input(kR, kC, Layout::ColBroadcast, dt, 1, 5);
      expect_match(clamp(x.gpu, lo_b.gpu, hi_b.gpu), clamp(x.cpu, lo_b.cpu, hi_b.cpu), 0, 0, "clamp tensor " + what);
      if (is_float(dt)) {
        Pair w = make_input(kR, kC, l, dt, -0.5, 1.5);
        expect_match(lerp(y.gpu, z.gpu, w.gpu), lerp(y.cpu, z.cpu, w.cpu), rtol_for(dt), atol_for(dt),
                     "lerp tensor " + what);
        Pair zz = make_input(kR, kC, Layout::ColBroadcast, dt, 0.5, 5);
        expect_match(addcdiv(x.gpu, y.gpu, zz.gpu, -0.5), addcdiv(x.cpu, y.cpu, zz.cpu, -0.5), rtol_for(dt),
                     atol_for(dt), "addcdiv " + what);
      }
    }
  }
  // In place, and nan in a bound.
  Pair x = make_input(kR, kC, Layout::Strided, kFloat, -5, 5, true);
  Pair y = make_input(kR, kC, Layout::Dense, kFloat, -5, 5, true);
  Tensor gx = x.gpu.clone(), cx = x.cpu.clone();
  gx.addcmul_(y.gpu, y.gpu, 0.25);
  cx.addcmul_(y.cpu, y.cpu, 0.25);
  expect_match(gx, cx, 1e-6, 1e-6, "addcmul_");
  gx.lerp_(y.gpu, 0.75);
  cx.lerp_(y.cpu, 0.75);
  expect_match(gx, cx, 1e-6, 1e-6, "lerp_");
  expect_match(clamp(x.gpu, y.gpu, y.gpu + 1), clamp(x.cpu, y.cpu, y.cpu + 1), 0, 0, "clamp tensor nan");
}

// ---- where, fill, copy -----------------------------------------------------------------------

TEST(CudaElementwise, WhereAndMaskedFill) {
  REQUIRE_CUDA();
  manual_seed(11);
  for (ScalarType dt : kAll) {
    const std::string n(dtype_name(dt));
    Pair c = make_input(kR, kC, Layout::RowBroadcast, kBool, 0, 1);
    Pair a = make_input(kR, kC, Layout::Transposed, dt, 0, 9);
    Pair b = make_input(kR, kC, Layout::Strided, dt, 0, 9);
    expect_match(where(c.gpu, a.gpu, b.gpu), where(c.cpu, a.cpu, b.cpu), 0, 0, "where " + n);
    expect_match(where(c.gpu, 1, b.gpu), where(c.cpu, 1, b.cpu), 0, 0, "where scalar a " + n);
    expect_match(where(c.gpu, a.gpu, 0), where(c.cpu, a.cpu, 0), 0, 0, "where scalar b " + n);
    Pair m = make_input(kR, kC, Layout::Dense, kBool, 0, 1);
    expect_match(a.gpu.masked_fill(m.gpu, 1), a.cpu.masked_fill(m.cpu, 1), 0, 0, "masked_fill " + n);
  }
  Pair c = make_input(kR, kC, Layout::Dense, kBool, 0, 1);
  expect_match(where(c.gpu, 1.5, -2), where(c.cpu, 1.5, -2), 0, 0, "where two scalars");
  Pair u = make_input(kR, kC, Layout::Dense, kUInt8, 0, 3);  // a uint8 condition
  expect_match(where(u.gpu, 1.0, 0.0), where(u.cpu, 1.0, 0.0), 0, 0, "where uint8 condition");
}

TEST(CudaElementwise, FillEveryDtypeAndLayout) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAll) {
    for (double v : {0.0, 1.0, -2.5, 300.0, 1e-3}) {
      if (!is_float(dt) && v != std::floor(v)) continue;
      if (dt == kUInt8 && (v < 0 || v > 255)) continue;
      if (dt == kBool && v != 0 && v != 1) continue;
      const std::string what = std::string(dtype_name(dt)) + " " + std::to_string(v);
      Tensor c = zeros({kR, kC}, dt), g = zeros({kR, kC}, TensorOptions(dt).device(kGpu));
      c.fill_(v);
      g.fill_(v);
      expect_match(g, c, 0, 0, "dense " + what);
      Tensor cb = zeros({2 * kR, 3 * kC}, dt), gb = zeros({2 * kR, 3 * kC}, TensorOptions(dt).device(kGpu));
      cb.slice(0, 0, 2 * kR, 2).slice(1, 1, 3 * kC, 3).fill_(v);
      gb.slice(0, 0, 2 * kR, 2).slice(1, 1, 3 * kC, 3).fill_(v);
      expect_match(gb, cb, 0, 0, "strided " + what);
    }
    expect_match(full({5, 3}, 2, TensorOptions(dt).device(kGpu)), full({5, 3}, 2, dt), 0, 0, "full");
    expect_match(ones({7}, TensorOptions(dt).device(kGpu)), ones({7}, dt), 0, 0, "ones");
    Tensor z = ones({kR, kC}, TensorOptions(dt).device(kGpu));
    z.zero_();
    expect_match(z, zeros({kR, kC}, dt), 0, 0, "zero_");
  }
}

TEST(CudaElementwise, CopyConvertsBetweenEveryPairOfDtypes) {
  REQUIRE_CUDA();
  manual_seed(12);
  for (ScalarType from : kAll) {
    for (ScalarType to : kAll) {
      const std::string what = std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to));
      // Values every destination holds: 0..99 (and fractions for floats).
      Pair x = make_input(kR, kC, Layout::Strided, from, 0, 100);
      expect_match(x.gpu.to(to), x.cpu.to(to), 0, 0, "to strided " + what);
      Pair d = make_input(kR, kC, Layout::Dense, from, 0, 100);
      expect_match(d.gpu.to(to), d.cpu.to(to), 0, 0, "to dense " + what);
      // copy_ into a transposed destination, broadcasting a row.
      Pair row = make_input(1, kC, Layout::Dense, from, 0, 100);
      Tensor gdst = zeros({kC, kR}, TensorOptions(to).device(kGpu)).t();
      Tensor cdst = zeros({kC, kR}, to).t();
      gdst.copy_(row.gpu);
      cdst.copy_(row.cpu);
      expect_match(gdst, cdst, 0, 0, "copy_ broadcast " + what);
    }
  }
  // Negative values and specials where the destination holds them.
  Pair s = make_input(kR, kC, Layout::Transposed, kDouble, -1e5, 1e5, true);
  for (ScalarType to : {kFloat, kHalf, kBFloat16, kBool})
    expect_match(s.gpu.to(to), s.cpu.to(to), 0, 0, std::string("double with specials -> ") + std::string(dtype_name(to)));
  Pair i = make_input(kR, kC, Layout::Dense, kInt64, -(1LL << 40), 1LL << 40);
  for (ScalarType to : {kFloat, kDouble, kHalf, kBFloat16, kBool})
    expect_match(i.gpu.to(to), i.cpu.to(to), 0, 0, std::string("int64 wide -> ") + std::string(dtype_name(to)));
}

TEST(CudaElementwise, ContiguousCloneAndSameDtypeCopies) {
  REQUIRE_CUDA();
  manual_seed(13);
  for (ScalarType dt : kAll) {
    const std::string n(dtype_name(dt));
    for (Layout l : kLayouts) {
      Pair x = make_input(kR, kC, l, dt, 0, 50);
      Tensor c = x.gpu.contiguous();
      EXPECT_TRUE(c.is_contiguous());
      expect_match(c, x.cpu.contiguous(), 0, 0, "contiguous " + n + " " + layout_name(l));
      expect_match(x.gpu.clone(), x.cpu.clone(), 0, 0, "clone " + n + " " + layout_name(l));
    }
    // 4-d permutation (a strided copy over several dims).
    Tensor b = values({3, 4, 5, 6}, dt, 0, 50);
    Tensor gb = b.to(kGpu);
    expect_match(gb.permute({2, 0, 3, 1}).contiguous(), b.permute({2, 0, 3, 1}).contiguous(), 0, 0, "permute " + n);
    // copy_ between two strided views on the device.
    Tensor dst = zeros({6, 5, 4, 3}, TensorOptions(dt).device(kGpu)).permute({3, 2, 1, 0});
    dst.copy_(gb);
    expect_match(dst, b, 0, 0, "copy_ strided to strided " + n);
  }
}

// ---- unary ops -------------------------------------------------------------------------------

using UnaryFn = std::function<Tensor(const Tensor&)>;
struct UnaryCase {
  const char* name;
  UnaryFn fn;
  std::vector<ScalarType> dtypes;
  double lo, hi;
  bool transcendental = true;
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](auto& x) { return neg(x); }, {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kUInt8}, -9, 9, false},
      {"abs", [](auto& x) { return abs(x); }, kNumeric, -9, 9, false},
      {"sign", [](auto& x) { return sign(x); }, kNumeric, -3, 3, false},
      {"square", [](auto& x) { return square(x); }, kNumeric, -9, 9, false},
      {"relu", [](auto& x) { return relu(x); }, kNumeric, -9, 9, false},
      {"floor", [](auto& x) { return floor(x); }, kNumeric, -9, 9, false},
      {"ceil", [](auto& x) { return ceil(x); }, kNumeric, -9, 9, false},
      {"round", [](auto& x) { return round(floor(x * 2) / 2); }, kFloats, -9, 9, false},  // halves: ties to even
      {"round int", [](auto& x) { return round(x); }, kInts, 0, 9, false},
      {"trunc", [](auto& x) { return trunc(x); }, kNumeric, -9, 9, false},
      {"frac", [](auto& x) { return frac(x); }, kFloats, -9, 9, false},
      {"exp", [](auto& x) { return exp(x); }, kFloats, -5, 5},
      {"exp2", [](auto& x) { return exp2(x); }, kFloats, -5, 5},
      {"log", [](auto& x) { return log(x); }, kFloats, 0.01, 10},
      {"log2", [](auto& x) { return log2(x); }, kFloats, 0.01, 10},
      {"log10", [](auto& x) { return log10(x); }, kFloats, 0.01, 10},
      {"log1p", [](auto& x) { return log1p(x); }, kFloats, -0.9, 10},
      {"expm1", [](auto& x) { return expm1(x); }, kFloats, -3, 3},
      {"sqrt", [](auto& x) { return sqrt(x); }, kFloats, 0, 10, false},
      {"rsqrt", [](auto& x) { return rsqrt(x); }, kFloats, 0.01, 10, false},
      {"reciprocal", [](auto& x) { return reciprocal(x); }, kFloats, 0.1, 10, false},
      {"sin", [](auto& x) { return sin(x); }, kFloats, -6, 6},
      {"cos", [](auto& x) { return cos(x); }, kFloats, -6, 6},
      {"tan", [](auto& x) { return tan(x); }, kFloats, -1.4, 1.4},
      {"asin", [](auto& x) { return asin(x); }, kFloats, -0.99, 0.99},
      {"acos", [](auto& x) { return acos(x); }, kFloats, -0.99, 0.99},
      {"atan", [](auto& x) { return atan(x); }, kFloats, -9, 9},
      {"sinh", [](auto& x) { return sinh(x); }, kFloats, -4, 4},
      {"cosh", [](auto& x) { return cosh(x); }, kFloats, -4, 4},
      {"tanh", [](auto& x) { return tanh(x); }, kFloats, -4, 4},
      {"sigmoid", [](auto& x) { return sigmoid(x); }, kFloats, -8, 8},
      {"erf", [](auto& x) { return erf(x); }, kFloats, -3, 3},
      {"erfc", [](auto& x) { return erfc(x); }, kFloats, -3, 3},
      {"silu", [](auto& x) { return silu(x); }, kFloats, -8, 8},
      {"gelu", [](auto& x) { return gelu(x); }, kFloats, -5, 5},
      {"gelu tanh", [](auto& x) { return gelu(x, "tanh"); }, kFloats, -5, 5},
      {"softplus", [](auto& x) { return softplus(x); }, kFloats, -25, 25},
      {"softplus beta", [](auto& x) { return softplus(x, 2, 5); }, kFloats, -8, 8},
      {"clamp", [](auto& x) { return clamp(x, 2, 6); }, kNumeric, 0, 9, false},
      {"clamp min", [](auto& x) { return clamp(x, 3); }, kNumeric, 0, 9, false},
      {"clamp max", [](auto& x) { return clamp(x, std::nullopt, 4); }, kNumeric, 0, 9, false},
      {"clamp float bounds", [](auto& x) { return clamp(x, -1.5, 2.25); }, kFloats, -9, 9, false},
      {"logical_not", [](auto& x) { return logical_not(x); }, kAll, -2, 2, false},
      {"bitwise_not", [](auto& x) { return bitwise_not(x); }, {kUInt8, kInt32, kInt64, kBool}, 0, 100, false},
      {"isnan", [](auto& x) { return isnan(x); }, kAll, -2, 2, false},
      {"isinf", [](auto& x) { return isinf(x); }, kAll, -2, 2, false},
      {"isfinite", [](auto& x) { return isfinite(x); }, kAll, -2, 2, false},
  };
}

TEST(CudaElementwise, UnaryOpsMatchTheCpuOnEveryDtypeAndLayout) {
  REQUIRE_CUDA();
  manual_seed(14);
  for (const UnaryCase& c : unary_cases())
    for (ScalarType dt : c.dtypes)
      for (Layout l : {Layout::Dense, Layout::Transposed, Layout::Strided, Layout::Misaligned, Layout::RowBroadcast}) {
        const std::string what = std::string(c.name) + " " + std::string(dtype_name(dt)) + " " + layout_name(l);
        Pair x = make_input(kR, kC, l, dt, lo_for(dt, c.lo), c.hi, is_float(dt));
        expect_match(c.fn(x.gpu), c.fn(x.cpu), rtol_for(dt, c.transcendental), atol_for(dt), what);
      }
}

TEST(CudaElementwise, FloatUnaryOpsOnIntegersComputeInFloat) {
  REQUIRE_CUDA();
  manual_seed(15);
  for (ScalarType dt : {kUInt8, kInt32, kInt64, kBool}) {
    Pair x = make_input(kR, kC, Layout::Transposed, dt, 1, 20);
    const std::string n(dtype_name(dt));
    expect_match(x.gpu.exp(), x.cpu.exp(), 2e-6, 1e-6, "exp " + n);
    expect_match(x.gpu.sqrt(), x.cpu.sqrt(), 1e-6, 1e-6, "sqrt " + n);
    expect_match(x.gpu.sigmoid(), x.cpu.sigmoid(), 2e-6, 1e-6, "sigmoid " + n);
    expect_match(x.gpu.isnan(), x.cpu.isnan(), 0, 0, "isnan " + n);
  }
}

TEST(CudaElementwise, UnaryInPlaceAndOut) {
  REQUIRE_CUDA();
  manual_seed(16);
  for (ScalarType dt : kFloats) {
    const std::string n(dtype_name(dt));
    // After a transcendental step the two sides differ by an ulp or so:
    // every later check gets that tolerance.
    const double rt = rtol_for(dt, true), at = atol_for(dt);
    Tensor base = values({2 * kR, 3 * kC}, dt, -2, 2);
    Tensor gbase = base.to(kGpu);
    auto view = [](const Tensor& t) { return t.slice(0, 0, 2 * kR, 2).slice(1, 2, 3 * kC, 3).t(); };
    view(base).neg_();
    view(gbase).neg_();
    expect_match(gbase, base, 0, 0, "neg_ " + n);
    view(base).tanh_();
    view(gbase).tanh_();
    expect_match(gbase, base, rt, at, "tanh_ " + n);
    view(base).gelu_("tanh");
    view(gbase).gelu_("tanh");
    expect_match(gbase, base, rt, at, "gelu_ " + n);
    Tensor out = empty({0}, TensorOptions(dt).device(kGpu));
    sin_out(out, view(gbase));
    expect_match(out, sin(view(base)), rt, at, "sin_out " + n);
    Tensor wide = empty({kC, kR}, TensorOptions(kDouble).device(kGpu));
    Tensor wide_c = empty({kC, kR}, kDouble);
    abs_out(wide, view(gbase));
    abs_out(wide_c, view(base));
    expect_match(wide, wide_c, rt, at, "abs_out to double " + n);
  }
}

TEST(CudaElementwise, NanAndInfSemantics) {
  REQUIRE_CUDA();
  const double nan = std::nan(""), inf = INFINITY;
  std::vector<double> v = {nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, -0.5, 1.5, 3.0, -3.0, 1e-30, 1e30};
  const int64_t n = static_cast<int64_t>(v.size());
  Tensor xa = tensor(v, kDouble).view({n, 1}).expand({n, n});
  Tensor xb = tensor(v, kDouble).view({1, n}).expand({n, n});
  for (ScalarType dt : kFloats) {
    const std::string s(dtype_name(dt));
    Tensor a = xa.to(dt).contiguous(), b = xb.to(dt).contiguous();
    Tensor ga = a.to(kGpu), gb = b.to(kGpu);
    const double rt = rtol_for(dt, true), at = atol_for(dt);
    expect_match(minimum(ga, gb), minimum(a, b), 0, 0, "minimum " + s);
    expect_match(maximum(ga, gb), maximum(a, b), 0, 0, "maximum " + s);
    expect_match(ga.lt(gb), a.lt(b), 0, 0, "lt " + s);
    expect_match(ga.ne(gb), a.ne(b), 0, 0, "ne " + s);
    expect_match(isclose(ga, gb, 1e-2, 1e-2), isclose(a, b, 1e-2, 1e-2), 0, 0, "isclose " + s);
    expect_match(isclose(ga, gb, 1e-2, 1e-2, true), isclose(a, b, 1e-2, 1e-2, true), 0, 0, "isclose nan " + s);
    expect_match(remainder(ga, gb), remainder(a, b), rt, at, "remainder " + s);
    expect_match(fmod(ga, gb), fmod(a, b), rt, at, "fmod " + s);
    expect_match(div(ga, gb, RoundingMode::Floor), div(a, b, RoundingMode::Floor), rt, at, "floor div " + s);
    expect_match(div(ga, gb, RoundingMode::Trunc), div(a, b, RoundingMode::Trunc), rt, at, "trunc div " + s);
    expect_match(ga / gb, a / b, rt, at, "div " + s);
    expect_match(pow(ga, gb), pow(a, b), rt, at, "pow " + s);
    expect_match(atan2(ga, gb), atan2(a, b), rt, at, "atan2 " + s);
    expect_match(clamp(ga, gb, gb + 1), clamp(a, b, b + 1), 0, 0, "clamp tensor " + s);
    expect_match(threshold_backward(gb, ga, 0.5), threshold_backward(b, a, 0.5), 0, 0, "threshold_backward " + s);
    expect_match(logical_and(ga, gb), logical_and(a, b), 0, 0, "logical_and " + s);
    for (const UnaryCase& c : unary_cases()) {
      if (std::find(c.dtypes.begin(), c.dtypes.end(), dt) == c.dtypes.end()) continue;
      expect_match(c.fn(ga), c.fn(a), rt, at, std::string(c.name) + " specials " + s);
    }
    expect_match(clamp(ga, nan, 1.0), clamp(a, nan, 1.0), 0, 0, "clamp nan bound " + s);
  }
}

// The 64-bit index path: a strided view whose byte extent passes 2^31, and
// a contiguous tensor of more than 2^31 elements.
TEST(CudaElementwise, SixtyFourBitIndexing) {
  REQUIRE_CUDA();
  if (cuda::get_device_properties().total_memory < (int64_t(12) << 30)) GTEST_SKIP() << "needs 12 GiB of device memory";
  const int64_t rows = (int64_t(1) << 23) + 1;  // x 256 bytes: 2^31 + 256
  Tensor x = arange(256, kInt64).to(kUInt8).view({1, 256}).expand({rows, 256}).reshape({rows * 256});
  const int64_t n = x.numel();
  Tensor gx = x.to(kGpu);
  // 2^30 + 128 elements at a stride of 2 bytes: an extent of 2^31 + 254 bytes.
  Tensor want = x.slice(0, 0, n, 2).add(3);
  Tensor got = gx.slice(0, 0, n, 2).add(3);
  ASSERT_TRUE(got.is_cuda());
  EXPECT_TRUE(got.cpu().equal(want)) << "strided uint8 add beyond int32 offsets";
  Tensor want2 = x.mul(2);
  Tensor got2 = gx.mul(2);
  EXPECT_TRUE(got2.cpu().equal(want2)) << "contiguous uint8 mul beyond int32 elements";
  // Spot checks against the formula, in case both sides agreed on garbage.
  Tensor tail = got2.slice(0, n - 4, n).cpu().to(kInt64);
  EXPECT_EQ(tail.to_vector<int64_t>(), (std::vector<int64_t>{(252 * 2) % 256, (253 * 2) % 256, (254 * 2) % 256, (255 * 2) % 256}));
}

}  // namespace
