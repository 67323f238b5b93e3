// The tensor core: dtypes and promotion, Half/BFloat16, Scalar, Device,
// factories, the CPU allocator, views, memory formats, copies, conversions
// and version counters. Expected values come from PyTorch 1.13 where noted.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "test_util.h"

namespace brisk {
namespace {

using testing::close;
using testing::expect_error;

template <class T>
std::vector<T> vals(const Tensor& t) {
  return t.to_vector<T>();
}
std::vector<int64_t> shape_of(const Tensor& t) { return t.sizes().vec(); }
std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().vec(); }

// ---- dtypes and type promotion ----------------------------------------------------

TEST(Dtype, NamesAndSizes) {
  EXPECT_EQ(dtype_name(kFloat), "float32");
  EXPECT_EQ(dtype_name(kHalf), "float16");
  EXPECT_EQ(dtype_name(kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_name(kUInt8), "uint8");
  EXPECT_EQ(element_size(kBool), 1u);
  EXPECT_EQ(element_size(kHalf), 2u);
  EXPECT_EQ(element_size(kInt32), 4u);
  EXPECT_EQ(element_size(kDouble), 8u);
  EXPECT_TRUE(is_floating_point(kBFloat16));
  EXPECT_FALSE(is_floating_point(kInt64));
  EXPECT_TRUE(is_integral(kBool, true));
  EXPECT_FALSE(is_integral(kBool, false));
}

TEST(Dtype, PromoteTypesTable) {
  // torch.promote_types for every pair of our dtypes, in the enum order
  // bool, uint8, int32, int64, float16, bfloat16, float32, float64.
  const ScalarType all[] = {kBool, kUInt8, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};
  const ScalarType b1 = kBool, u1 = kUInt8, i4 = kInt32, i8 = kInt64, f2 = kHalf, bf = kBFloat16, f4 = kFloat,
                   f8 = kDouble;
  const ScalarType want[8][8] = {
      {b1, u1, i4, i8, f2, bf, f4, f8}, {u1, u1, i4, i8, f2, bf, f4, f8}, {i4, i4, i4, i8, f2, bf, f4, f8},
      {i8, i8, i8, i8, f2, bf, f4, f8}, {f2, f2, f2, f2, f2, f4, f4, f8}, {bf, bf, bf, bf, f4, bf, f4, f8},
      {f4, f4, f4, f4, f4, f4, f4, f8}, {f8, f8, f8, f8, f8, f8, f8, f8},
  };
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(promote_types(all[i], all[j]), want[i][j]) << all[i] << " " << all[j];
      // tensors of the same rank promote by the table, and so do ops
      Tensor a = zeros({2}, all[i]), b = zeros({2}, all[j]);
      EXPECT_EQ(result_type(a, b), want[i][j]);
    }
}

TEST(Dtype, ResultTypeScalarRules) {
  // Values checked with torch 1.13.
  Tensor i32 = tensor({1, 2}, kInt32), u8 = tensor({1, 2}, kUInt8), b = tensor({true, false});
  Tensor h = tensor({1.0, 2.0}, kHalf), bf = tensor({1.0, 2.0}, kBFloat16), i64 = tensor({1, 2});
  EXPECT_EQ(result_type(i32, Scalar(1.5)), kFloat);           // int tensor + float scalar: default dtype
  EXPECT_EQ(result_type(h, Scalar(1.0)), kHalf);              // same category: the tensor wins
  EXPECT_EQ(result_type(i32, scalar_tensor(5)), kInt32);      // 0-dim int64 does not widen int32
  EXPECT_EQ(result_type(b, Scalar(1)), kInt64);               // bool + int scalar
  EXPECT_EQ(result_type(b, Scalar(true)), kBool);
  EXPECT_EQ(result_type(b, Scalar(2.5)), kFloat);
  EXPECT_EQ(result_type(u8, scalar_tensor(300)), kUInt8);
  EXPECT_EQ(result_type(u8, Scalar(-1)), kUInt8);
  EXPECT_EQ(result_type(u8, i32), kInt32);
  EXPECT_EQ(result_type(u8, scalar_tensor(1, kInt32)), kUInt8);
  EXPECT_EQ(result_type(b, scalar_tensor(2, kUInt8)), kUInt8);
  EXPECT_EQ(result_type(i32, scalar_tensor(1.5, kDouble)), kDouble);  // higher category 0-dim wins
  EXPECT_EQ(result_type(h, scalar_tensor(1.5, kDouble)), kHalf);
  EXPECT_EQ(result_type(bf, h), kFloat);
  EXPECT_EQ(result_type(i64, scalar_tensor(1.0, kHalf)), kHalf);
  EXPECT_EQ(result_type(scalar_tensor(1, kInt32), scalar_tensor(2)), kInt64);  // two 0-dim: table
  EXPECT_EQ(result_type(scalar_tensor(1, kInt32), Scalar(1.5)), kFloat);
  EXPECT_EQ(result_type(scalar_tensor(1.0, kHalf), scalar_tensor(1.0, kDouble)), kDouble);
  EXPECT_EQ(result_type(scalar_tensor(1, kUInt8), Scalar(5)), kUInt8);
  // the ops follow result_type
  EXPECT_EQ((i32 + 1.5).dtype(), kFloat);
  EXPECT_EQ((h + 1.0).dtype(), kHalf);
  EXPECT_EQ((i32 + scalar_tensor(5)).dtype(), kInt32);
  EXPECT_EQ((b + 1).dtype(), kInt64);
  EXPECT_EQ((u8 - 1).dtype(), kUInt8);
  EXPECT_EQ(vals<int64_t>(u8 - 1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ((i32 + scalar_tensor(1.5, kDouble)).dtype(), kDouble);
  // a float scalar follows the default dtype
  set_default_dtype(kDouble);
  const ScalarType with_double_default = result_type(i32, Scalar(1.5));
  const ScalarType half_with_double_default = result_type(h, Scalar(1.5));
  set_default_dtype(kFloat);
  EXPECT_EQ(with_double_default, kDouble);
  EXPECT_EQ(half_with_double_default, kHalf);
}

TEST(Dtype, CanCastAndDefault) {
  EXPECT_TRUE(can_cast(kInt64, kFloat));
  EXPECT_TRUE(can_cast(kBool, kUInt8));
  EXPECT_FALSE(can_cast(kFloat, kInt64));
  EXPECT_FALSE(can_cast(kInt32, kBool));
  EXPECT_TRUE(can_cast(kDouble, kHalf));
  EXPECT_EQ(default_dtype(), kFloat);
  expect_error([] { set_default_dtype(kInt64); }, {"[set_default_dtype]", "int64"});
}

// ---- Half and BFloat16 --------------------------------------------------------------

uint16_t half_bits(float f) { return Half(f).x; }
uint16_t bf16_bits(float f) { return BFloat16(f).x; }

TEST(Half, RoundingMatchesPyTorch) {
  // bits from torch.tensor(v, dtype=float32).half().view(torch.int16)
  EXPECT_EQ(half_bits(1.0f + 0x1p-11f), 0x3c00);      // tie -> even
  EXPECT_EQ(half_bits(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(half_bits(65504.f), 0x7bff);
  EXPECT_EQ(half_bits(65519.99f), 0x7bff);  // below the rounding boundary
  EXPECT_EQ(half_bits(65520.f), 0x7c00);    // overflow to inf
  EXPECT_EQ(half_bits(1e6f), 0x7c00);
  EXPECT_EQ(half_bits(-1e6f), 0xfc00);
  EXPECT_EQ(half_bits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(half_bits(0x1p-25f), 0x0000);  // tie -> even (zero)
  EXPECT_EQ(half_bits(3 * 0x1p-26f), 0x0001);
  EXPECT_EQ(half_bits(1.5f * 0x1p-24f), 0x0002);  // tie -> even (up)
  EXPECT_EQ(half_bits(2.5f * 0x1p-24f), 0x0002);  // tie -> even (down)
  EXPECT_EQ(half_bits(0x1p-14f), 0x0400);         // smallest normal
  EXPECT_EQ(half_bits(0x1p-14f - 0x1p-25f), 0x0400);
  EXPECT_EQ(half_bits(6.1e-5f), 0x03ff);  // largest subnormal
  EXPECT_EQ(half_bits(-0x1p-25f), 0x8000);
  EXPECT_EQ(half_bits(0.1f), 0x2e66);
  EXPECT_EQ(half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(half_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_TRUE(std::isnan(float(Half(std::nanf("")))));
}

TEST(Half, RoundTripEveryFiniteValue) {
  // Every half converts to float exactly and back to the same bits.
  int finite = 0;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    Half h(static_cast<uint16_t>(b), Half::from_bits_t{});
    const float f = h;
    if (std::isnan(f)) {
      EXPECT_EQ(b & 0x7c00u, 0x7c00u);
      EXPECT_TRUE(std::isnan(float(Half(f))));
      continue;
    }
    ++finite;
    ASSERT_EQ(Half(f).x, b) << std::hex << b;
  }
  EXPECT_EQ(finite, 65536 - 2046);
  EXPECT_EQ(float(Half(uint16_t(0x0001), Half::from_bits_t{})), 0x1p-24f);
  EXPECT_EQ(float(Half(uint16_t(0x7bff), Half::from_bits_t{})), 65504.f);
  EXPECT_EQ(float(std::numeric_limits<Half>::epsilon()), 0x1p-10f);
}

// Ground truth for float -> half without bit tricks: the nearest of all
// finite halves by exact double arithmetic, ties to the even bit pattern,
// infinity from 65520 (half of the last step above 65504) on.
uint16_t reference_half(float f) {
  static const std::vector<double> values = [] {
    std::vector<double> v;  // every non-negative finite half, in bit order = value order
    for (uint32_t b = 0; b <= 0x7bff; ++b) {
      const uint32_t e = b >> 10, m = b & 0x3ff;
      v.push_back(e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + double(m) / 1024.0, int(e) - 15));
    }
    return v;
  }();
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return sign | 0x7e00;
  const double a = std::fabs(double(f));
  if (a >= 65520.0) return sign | 0x7c00;
  const auto hi = std::lower_bound(values.begin(), values.end(), a);
  if (hi == values.begin()) return sign;  // a == 0
  const auto lo = hi - 1;
  const uint32_t lb = uint32_t(lo - values.begin()), hb = uint32_t(hi - values.begin());
  if (hi == values.end()) return sign | uint16_t(lb);
  const double dl = a - *lo, dh = *hi - a;
  const uint32_t pick = dl < dh ? lb : dh < dl ? hb : (lb % 2 == 0 ? lb : hb);
  return sign | uint16_t(pick);
}

// The branchless conversions (Note [Branchless half conversions]) against
// the ground truth, scalar and in the vectorized tensor kernels: 2.1M floats
// spread over every exponent and sign, every tie between adjacent halves,
// every half converted to float and back.
TEST(Half, ConversionsMatchTheReferenceScalarAndVectorized) {
  std::vector<float> fs;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 2039) {
    float f;
    const uint32_t v = uint32_t(u);
    std::memcpy(&f, &v, 4);
    fs.push_back(f);
  }
  for (uint32_t b = 0; b < 0x7bff; ++b) {  // the midpoint between each pair of adjacent positive halves
    const float lo = Half(uint16_t(b), Half::from_bits_t{}), hi = Half(uint16_t(b + 1), Half::from_bits_t{});
    fs.push_back(0.5f * (lo + hi));
    fs.push_back(-0.5f * (lo + hi));
  }
  fs.push_back(65519.996f);
  fs.push_back(65520.f);
  const Tensor t = tensor(fs, {int64_t(fs.size())}, kFloat);
  const Tensor h = t.to(kHalf);  // the tensor kernel (vectorized loop)
  const Half* hp = h.data_ptr<Half>();
  int64_t mismatches = 0;
  for (size_t i = 0; i < fs.size(); ++i) {
    const uint16_t want = reference_half(fs[i]);
    const bool nan = std::isnan(fs[i]);
    const bool scalar_ok = nan ? (Half(fs[i]).x & 0x7fff) > 0x7c00 : Half(fs[i]).x == want;
    // (a NaN: the scalar conversion's bits exactly, sign | 0x7e00, whatever
    // path the tensor kernel takes: Note [Half conversions in hardware])
    const bool tensor_ok = nan ? hp[i].x == Half(fs[i]).x : hp[i].x == want;
    if (!scalar_ok || !tensor_ok) {
      if (++mismatches <= 5)
        ADD_FAILURE() << std::hexfloat << fs[i] << ": reference " << std::hex << want << ", scalar " << Half(fs[i]).x
                      << ", tensor " << hp[i].x;
    }
  }
  EXPECT_EQ(mismatches, 0);
  // every half pattern through the tensor kernel and back
  std::vector<float> all;
  for (uint32_t b = 0; b < 0x10000; ++b) all.push_back(float(Half(uint16_t(b), Half::from_bits_t{})));
  Tensor bits = tensor(all, {65536}, kFloat).to(kHalf);
  for (uint32_t b = 0x7c01; b < 0x7c10; ++b) bits.data_ptr<Half>()[b] = Half(uint16_t(b), Half::from_bits_t{});  // signaling NaNs
  const Tensor back = bits.to(kFloat);
  const float* bp = back.data_ptr<float>();
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const uint32_t e = (b >> 10) & 0x1f, m = b & 0x3ff;
    const double mag = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + double(m) / 1024.0, int(e) - 15);
    if (e == 0x1f) {
      ASSERT_TRUE(m ? std::isnan(bp[b]) : std::isinf(bp[b])) << std::hex << b;
      // the tensor kernel's NaN is the scalar conversion's, bit for bit
      const float scalar = bits.data_ptr<Half>()[b];
      ASSERT_EQ(std::memcmp(&bp[b], &scalar, 4), 0) << std::hex << b;
      continue;
    }
    ASSERT_EQ(double(bp[b]), (b & 0x8000) ? -mag : mag) << std::hex << b;
    ASSERT_EQ(bits.data_ptr<Half>()[b].x, b) << std::hex << b;
  }
}

TEST(BFloat16, RoundingMatchesPyTorch) {
  EXPECT_EQ(bf16_bits(1.0f + 0x1p-8f), 0x3f80);  // tie -> even
  EXPECT_EQ(bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(bf16_bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // above the tie
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(bf16_bits(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(bf16_bits(1e-40f), 0x0001);  // subnormal
  EXPECT_EQ(bf16_bits(0.1f), 0x3dcd);
  EXPECT_EQ(bf16_bits(-2.0f), 0xc000);
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(float(BFloat16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(float(BFloat16(-std::nanf("")))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    BFloat16 h(static_cast<uint16_t>(b), BFloat16::from_bits_t{});
    const float f = h;
    if (std::isnan(f)) continue;
    ASSERT_EQ(BFloat16(f).x, b) << std::hex << b;
  }
}

TEST(Half, TensorConversions) {
  Tensor f = tensor({0.1f, 65520.f, 1e-8f, -2.5f, 1.0f + 0x1p-11f});
  Tensor h = f.to(kHalf);
  EXPECT_EQ(h.dtype(), kHalf);
  const Half* p = h.data_ptr<Half>();
  EXPECT_EQ(p[0].x, 0x2e66);
  EXPECT_EQ(p[1].x, 0x7c00);
  EXPECT_EQ(p[2].x, 0x0000);
  EXPECT_EQ(float(p[3]), -2.5f);
  EXPECT_EQ(p[4].x, 0x3c00);
  EXPECT_EQ(vals<float>(h.to(kBFloat16)), (std::vector<float>{0.10009765625f, INFINITY, 0.f, -2.5f, 1.f}));
}

// ---- Scalar and Device ---------------------------------------------------------------

TEST(ScalarTest, KindsAndConversions) {
  Scalar i = 3, d = 2.5, b = true, h = Half(1.5f), neg = int64_t{-7};
  EXPECT_EQ(i.kind(), Scalar::Kind::Int);
  EXPECT_EQ(d.kind(), Scalar::Kind::Double);
  EXPECT_EQ(b.kind(), Scalar::Kind::Bool);
  EXPECT_EQ(h.kind(), Scalar::Kind::Double);
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(d.dtype(), kFloat);
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(d.to<int64_t>(), 2);
  EXPECT_EQ(d.to<float>(), 2.5f);
  EXPECT_EQ(float(d.to<Half>()), 2.5f);
  EXPECT_TRUE(d.to<bool>());
  EXPECT_FALSE(Scalar(0.0).to<bool>());
  EXPECT_EQ(neg.to_long(), -7);
  EXPECT_EQ((-i).to_long(), -3);
  EXPECT_EQ((-d).to_double(), -2.5);
  EXPECT_EQ((-neg).to_long(), 7);
  EXPECT_TRUE(b.is_integral(true));
  EXPECT_FALSE(b.is_integral(false));
  EXPECT_TRUE(d.is_floating_point());
  std::ostringstream os;
  os << i << " " << d << " " << b;
  EXPECT_EQ(os.str(), "3 2.5 True");
}

TEST(DeviceTest, Parsing) {
  Device c("cpu"), g("cuda"), g1("cuda:1"), g12("cuda:12"), c0("cpu:0");
  EXPECT_TRUE(c.is_cpu());
  EXPECT_TRUE(c0.is_cpu());
  EXPECT_TRUE(g.is_cuda());
  EXPECT_EQ(g.index, -1);
  EXPECT_EQ(g1.index, 1);
  EXPECT_EQ(g12.index, 12);
  EXPECT_EQ(g1.str(), "cuda:1");
  EXPECT_EQ(c.str(), "cpu");
  EXPECT_EQ(g.str(), "cuda");
  EXPECT_TRUE(Device(kCUDA, 1) == g1);
  EXPECT_FALSE(Device(kCUDA, 0) == g1);
  EXPECT_TRUE(g == g1);  // index -1 is "the current one"
  EXPECT_TRUE(c != g);
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cpu:1", "cuda:1000", "CUDA", "", "cuda:1:2", "cuda 1"})
    expect_error([&] { Device d(bad); }, {"[Device]", std::string("'") + bad + "'"});
}

TEST(DeviceTest, CudaRequestsGiveClearErrors) {
  expect_error([] { empty({2}, Device(kCUDA)); }, {"device cuda", "not available"});
  expect_error([] { zeros({2}, TensorOptions().device("cuda:1")); }, {"device cuda:1", "not available"});
  Tensor x = ones({2});
  expect_error([&] { x.to(Device(kCUDA)); }, {"[to]", "not available"});
  expect_error([&] { x.cuda(); }, {"[to]", "not available"});
  float buf[2] = {1, 2};
  expect_error([&] { from_blob(buf, {2}, Device(kCUDA)); }, {"[from_blob]", "not available"});
  EXPECT_TRUE(x.to(Device(kCPU)).is_same(x));  // no copy to the same device
}

// ---- factories ---------------------------------------------------------------------

TEST(Factories, EmptyZerosOnesFull) {
  Tensor e = empty({2, 3});
  EXPECT_EQ(shape_of(e), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(strides_of(e), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(e.dtype(), kFloat);
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_EQ(empty({}).dim(), 0);
  EXPECT_EQ(empty({}).numel(), 1);
  EXPECT_EQ(empty({3, 0, 2}).numel(), 0);
  EXPECT_EQ(vals<float>(zeros({2, 2})), (std::vector<float>(4, 0.f)));
  EXPECT_EQ(vals<int32_t>(ones({3}, kInt32)), (std::vector<int32_t>{1, 1, 1}));
  EXPECT_EQ(ones({3}, kInt32).dtype(), kInt32);
  EXPECT_EQ(vals<double>(full({2}, 2.5, kDouble)), (std::vector<double>{2.5, 2.5}));
  // full's dtype follows the fill value (torch.full)
  EXPECT_EQ(full({2}, 3).dtype(), kInt64);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(full({2}, 1.5).dtype(), kFloat);
  EXPECT_EQ(vals<uint8_t>(full({2}, 7, kUInt8)), (std::vector<uint8_t>{7, 7}));
  EXPECT_EQ(scalar_tensor(2.5).dim(), 0);
  EXPECT_EQ(scalar_tensor(2.5).item<double>(), 2.5);
  expect_error([] { empty({2, -1}); }, {"[empty]", "negative dimension -1"});
  // numel 0, but the strides would overflow int64
  const int64_t big = int64_t(1) << 32;
  expect_error([&] { empty({0, big, big, big}); }, {"too large", "overflow"});
  expect_error([] { zeros({2}, TensorOptions(kInt64).requires_grad()); }, {"floating point"});
}

TEST(Factories, Arange) {
  Tensor a = arange(5);
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(vals<int64_t>(a), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(vals<int64_t>(arange(10, 0, -3)), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(vals<int64_t>(arange(0, -10, -3)), (std::vector<int64_t>{0, -3, -6, -9}));
  EXPECT_EQ(vals<int64_t>(arange(0, 10, 3)), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(arange(3, 3).numel(), 0);
  Tensor f = arange(0, 1, 0.25);
  EXPECT_EQ(f.dtype(), kFloat);
  EXPECT_EQ(vals<float>(f), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(vals<float>(arange(-1.0, 1.0, 0.5)), (std::vector<float>{-1, -0.5f, 0, 0.5f}));
  EXPECT_EQ(vals<float>(arange(1, 2.5, 0.5)), (std::vector<float>{1, 1.5f, 2}));
  EXPECT_EQ(arange(0.0, 1.0, 0.1).numel(), 10);
  EXPECT_EQ(arange(5.0).dtype(), kFloat);
  EXPECT_EQ(arange(5, kDouble).dtype(), kDouble);
  EXPECT_EQ(vals<int32_t>(arange(2, 8, 2, kInt32)), (std::vector<int32_t>{2, 4, 6}));
  expect_error([] { arange(0, 10, 0); }, {"[arange]", "step must be nonzero"});
  expect_error([] { arange(0, 10, -1); }, {"[arange]", "upper bound and larger bound inconsistent with step sign"});
  expect_error([] { arange(5, 0, 1); }, {"[arange]", "inconsistent with step sign"});
  expect_error([] { arange(0.0, INFINITY); }, {"[arange]", "unsupported range"});
}

TEST(Factories, Linspace) {
  EXPECT_EQ(vals<float>(linspace(0, 1, 5)), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(vals<float>(linspace(3, -2, 6)), (std::vector<float>{3, 2, 1, 0, -1, -2}));
  EXPECT_EQ(vals<float>(linspace(-1, 1, 1)), (std::vector<float>{-1}));
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  EXPECT_EQ(linspace(0, 1, 4).dtype(), kFloat);
  // Endpoints are exact; the values agree with torch.linspace to an ulp
  // (torch computes in float32, brisk in float64 then rounds).
  Tensor l = linspace(0.1, 0.9, 9);
  auto v = vals<float>(l);
  EXPECT_EQ(v.front(), 0.1f);
  EXPECT_EQ(v.back(), 0.9f);
  EXPECT_TRUE(close(l, tensor({0.10000000149011612, 0.19999998807907104, 0.29999998211860657, 0.3999999761581421,
                               0.5, 0.6000000238418579, 0.699999988079071, 0.7999999523162842, 0.8999999761581421}),
                    1e-7, 0));
  auto w = vals<float>(linspace(0, 1, 7));
  EXPECT_EQ(w.back(), 1.0f);
  EXPECT_EQ(w[3], 0.5f);
  EXPECT_EQ(vals<int64_t>(linspace(0, 10, 6, kInt64)), (std::vector<int64_t>{0, 2, 4, 6, 8, 10}));
  expect_error([] { linspace(0, 1, -1); }, {"[linspace]", "-1"});
}

// Float ranges are s + i * st (and linspace's a + step * i from either end)
// with the product and the sum each rounded: never a fused multiply-add,
// whichever ISA variant of the kernel runs (the avx2/avx512 ones once
// contracted it, so the CPU disagreed with itself and with the CUDA fill).
TEST(Factories, RangesRoundProductAndSumSeparately) {
  volatile double vs = -3.7, vst = 0.37;  // volatile: the reference is not contracted either
  Tensor a = arange(-3.7, 7.3, 0.37, kDouble);
  auto av = vals<double>(a);
  for (int64_t i = 0; i < static_cast<int64_t>(av.size()); ++i) {
    volatile double prod = static_cast<double>(i) * vst;
    EXPECT_EQ(av[i], vs + prod) << i;
  }
  volatile double la = -1.3, lb = 2.7;
  const int64_t steps = 1001, half = steps / 2;
  volatile double step = (lb - la) / static_cast<double>(steps - 1);
  auto lv = vals<double>(linspace(-1.3, 2.7, steps, kDouble));
  for (int64_t i = 0; i < steps; ++i) {
    volatile double prod = step * static_cast<double>(i < half ? i : steps - 1 - i);
    EXPECT_EQ(lv[i], i < half ? la + prod : lb - prod) << i;
  }
}

TEST(Factories, Eye) {
  EXPECT_EQ(vals<float>(eye(3)), (std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  Tensor r = eye(2, 3);
  EXPECT_EQ(shape_of(r), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vals<float>(r), (std::vector<float>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(vals<int64_t>(eye(3, 2, kInt64)), (std::vector<int64_t>{1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(eye(0).numel(), 0);
  expect_error([] { eye(-1); }, {"[eye]", "-1"});
}

TEST(Factories, Like) {
  Tensor x = arange(6, kInt32).reshape({2, 3});
  Tensor z = zeros_like(x);
  EXPECT_EQ(z.dtype(), kInt32);
  EXPECT_EQ(shape_of(z), shape_of(x));
  EXPECT_EQ(vals<int32_t>(z), std::vector<int32_t>(6, 0));
  Tensor o = ones_like(x, kDouble);
  EXPECT_EQ(o.dtype(), kDouble);
  EXPECT_EQ(vals<double>(o), std::vector<double>(6, 1.0));
  Tensor f = full_like(x, 7);
  EXPECT_EQ(vals<int32_t>(f), std::vector<int32_t>(6, 7));
  EXPECT_FALSE(empty_like(x).is_alias_of(x));
  Tensor cl = empty({2, 3, 4, 5}, {}, kChannelsLast);
  EXPECT_EQ(strides_of(empty_like(cl)), strides_of(cl));
  EXPECT_EQ(strides_of(zeros_like(cl)), strides_of(cl));
}

TEST(Factories, TensorFromValues) {
  Tensor a = tensor({1.f, 2.f, 3.f});
  EXPECT_EQ(a.dtype(), kFloat);
  EXPECT_EQ(shape_of(a), (std::vector<int64_t>{3}));
  EXPECT_EQ(tensor({1.0, 2.0}).dtype(), kFloat);  // Python float literals -> default dtype
  EXPECT_EQ(tensor({1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor({1, 2}, kHalf).dtype(), kHalf);
  EXPECT_EQ(vals<double>(tensor({1, 2}, kDouble)), (std::vector<double>{1, 2}));
  Tensor m = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(shape_of(m), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m.dtype(), kInt64);
  EXPECT_EQ(vals<int64_t>(m), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  Tensor mb = tensor({{true, false}, {false, true}});
  EXPECT_EQ(mb.dtype(), kBool);
  EXPECT_EQ(vals<bool>(mb), (std::vector<bool>{true, false, false, true}));
  Tensor v = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(shape_of(v), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(v.select(0, 2).to_vector<float>(), (std::vector<float>{5, 6}));
  Tensor vb = tensor(std::vector<bool>{true, false, true});
  EXPECT_EQ(vb.dtype(), kBool);
  EXPECT_EQ(vals<bool>(vb), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(tensor(std::vector<int32_t>{1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor(std::vector<double>{}).numel(), 0);
  expect_error([] { tensor({{1, 2}, {3}}); }, {"[tensor]", "rows have different lengths"});
  expect_error([] { tensor(std::vector<float>{1, 2, 3}, {2, 2}); }, {"[tensor]", "shape [2, 2] needs 4 values, got 3"});
}

TEST(Factories, FromBlobZeroCopyAndDeleter) {
  std::vector<float> buf = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(buf.data(), {2, 3});
  EXPECT_EQ(t.data_ptr(), buf.data());
  t.mul_(2);
  EXPECT_EQ(buf[5], 12.f);  // writes go to the caller's memory
  Tensor s = from_blob(buf.data(), {3}, {2}, kFloat);
  EXPECT_EQ(vals<float>(s), (std::vector<float>{2, 6, 10}));

  int calls = 0;
  void* seen = nullptr;
  {
    Tensor owner = from_blob(buf.data(), {6}, [&](void* p) { ++calls, seen = p; });
    Tensor view = owner.view({2, 3}).t();
    owner = Tensor();
    EXPECT_EQ(calls, 0);  // the view keeps the memory alive
    EXPECT_EQ(view.select(0, 1).to_vector<float>(), (std::vector<float>{4, 10}));
    Tensor another = view;
    view = Tensor();
    EXPECT_EQ(calls, 0);
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, buf.data());
  expect_error([] { from_blob(nullptr, {2}); }, {"[from_blob]", "null"});
  float one = 0;
  expect_error([&] { from_blob(&one, {2, -1}); }, {"[from_blob]", "negative dimension -1"});
  expect_error([&] { from_blob(buf.data(), {2, 3}, {1}, {}); }, {"[from_blob]", "different lengths"});
}

TEST(Factories, EmptyStrided) {
  Tensor t = empty_strided({2, 3}, {1, 2});
  EXPECT_EQ(strides_of(t), (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.t().is_contiguous());
  t.copy_(tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}));
  EXPECT_EQ(vals<float>(t), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(vals<float>(t.t().contiguous()), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  Tensor e = empty_strided({3}, {0});  // expanded-like storage of one element
  EXPECT_EQ(e.impl()->storage->nbytes, 4u);
  expect_error([] { empty_strided({2, 3}, {1}); }, {"[empty_strided]", "different lengths"});
  expect_error([] { empty_strided({2}, {-1}); }, {"[empty_strided]", "negative stride"});
}

// ---- the CPU allocator --------------------------------------------------------------

TEST(Allocator, StatisticsAndCache) {
  cpu::empty_cache();
  const MemoryStats s0 = cpu::memory_stats();
  void* first;
  {
    Tensor t = empty({1000});  // 4000 bytes -> 4096 size class
    first = t.data_ptr();
    const MemoryStats s1 = cpu::memory_stats();
    EXPECT_EQ(s1.allocated - s0.allocated, 4096);
    EXPECT_EQ(s1.num_allocs - s0.num_allocs, 1);
    EXPECT_GE(s1.peak_allocated, s1.allocated);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  const MemoryStats s2 = cpu::memory_stats();
  EXPECT_EQ(s2.allocated, s0.allocated);
  {
    // a freed block of the same size class comes back
    Tensor again = empty({1010});
    EXPECT_EQ(again.data_ptr(), first);
    const MemoryStats s3 = cpu::memory_stats();
    EXPECT_EQ(s3.cache_hits - s2.cache_hits, 1);
  }
}

TEST(Allocator, PeakReservedAndEmptyCache) {
  cpu::empty_cache();
  cpu::reset_peak_memory_stats();
  const MemoryStats s0 = cpu::memory_stats();
  EXPECT_EQ(s0.peak_allocated, s0.allocated);
  const int64_t n = (int64_t(3) << 20) + 17;  // odd size: nothing cached of this class
  {
    Tensor big = empty({n}, kUInt8);
    const MemoryStats s1 = cpu::memory_stats();
    const int64_t grew = s1.allocated - s0.allocated;
    EXPECT_GE(grew, n);
    EXPECT_LE(grew, n + n / 4);  // size classes round up by at most 25%
    EXPECT_EQ(s1.reserved - s0.reserved, grew);
    EXPECT_EQ(s1.cache_misses - s0.cache_misses, 1);
    EXPECT_EQ(cpu::max_memory_allocated(), s1.allocated);
  }
  const MemoryStats s2 = cpu::memory_stats();
  EXPECT_EQ(s2.allocated, s0.allocated);
  EXPECT_GT(s2.reserved, s0.reserved);  // the block stays cached
  EXPECT_GT(s2.peak_allocated, s2.allocated);
  cpu::empty_cache();
  const MemoryStats s3 = cpu::memory_stats();
  EXPECT_EQ(s3.reserved, s0.reserved);
  EXPECT_EQ(cpu::memory_reserved(), s3.reserved);
  cpu::reset_peak_memory_stats();
  EXPECT_EQ(cpu::max_memory_allocated(), cpu::memory_allocated());
}

// ---- views -------------------------------------------------------------------------

TEST(Views, ViewAndReshape) {
  Tensor x = arange(24.0).view({2, 3, 4});
  EXPECT_EQ(strides_of(x), (std::vector<int64_t>{12, 4, 1}));
  Tensor v = x.view({-1, 4});
  EXPECT_EQ(shape_of(v), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(v.data_ptr(), x.data_ptr());
  EXPECT_TRUE(v.is_alias_of(x));
  v.select(0, 1).fill_(-1);
  EXPECT_EQ(x.select(0, 0).select(0, 1).to_vector<float>(), (std::vector<float>(4, -1.f)));
  // a view of a non-contiguous tensor where the strides allow it
  Tensor sl = x.slice(2, 0, 4, 2);  // (2, 3, 2), strides (12, 4, 2)
  Tensor sv = sl.view({6, 2});
  EXPECT_EQ(strides_of(sv), (std::vector<int64_t>{4, 2}));
  EXPECT_TRUE(sv.is_alias_of(x));
  expect_error([&] { x.transpose(0, 1).view({-1}); },
               {"[view]", "view size is not compatible with input tensor's size and stride", "Use .reshape"});
  expect_error([&] { x.view({-1, -1}); }, {"[view]", "only one dimension can be inferred"});
  expect_error([&] { x.view({5, 5}); }, {"[view]", "shape [5, 5] is invalid for input of size 24"});
  // reshape: a view when possible, a copy otherwise
  Tensor r1 = x.reshape({4, 6});
  EXPECT_EQ(r1.data_ptr(), x.data_ptr());
  Tensor xt = x.transpose(1, 2);
  Tensor r2 = xt.reshape({2, 12});
  EXPECT_FALSE(r2.is_alias_of(x));
  EXPECT_EQ(r2.select(0, 0).to_vector<float>(), xt.select(0, 0).contiguous().view({-1}).to_vector<float>());
  EXPECT_EQ(shape_of(empty({0, 3}).reshape({-1, 3})), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(shape_of(empty({0, 3}).view({3, 0, 5})), (std::vector<int64_t>{3, 0, 5}));
  // -1 is ambiguous for an empty tensor when another dim is 0 (torch errors too)
  expect_error([] { empty({0, 3}).reshape({-1, 0}); }, {"[reshape]", "[-1, 0]"});
  expect_error([] { empty({0, 3}).view({-1, 0}); }, {"[view]", "[-1, 0]"});
  // a 0-dim tensor views as any all-ones shape
  Tensor s = scalar_tensor(2.0);
  EXPECT_EQ(strides_of(s.view({1, 1})), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(s.view({1, 1}).data_ptr(), s.data_ptr());
  EXPECT_EQ(s.reshape({1}).data_ptr(), s.data_ptr());
  EXPECT_EQ(s.view({1}).view({}).dim(), 0);
}

TEST(Views, FlattenUnflattenSqueezeUnsqueeze) {
  Tensor x = arange(24.0).view({2, 3, 4});
  EXPECT_EQ(shape_of(x.flatten()), (std::vector<int64_t>{24}));
  EXPECT_EQ(strides_of(x.flatten()), (std::vector<int64_t>{1}));
  EXPECT_EQ(shape_of(x.flatten(1)), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(x.flatten(1).data_ptr(), x.data_ptr());
  EXPECT_EQ(shape_of(scalar_tensor(1.0).flatten()), (std::vector<int64_t>{1}));
  expect_error([&] { x.flatten(2, 1); }, {"[flatten]", "cannot come after"});
  Tensor u = x.unflatten(2, {2, -1});
  EXPECT_EQ(shape_of(u), (std::vector<int64_t>{2, 3, 2, 2}));
  EXPECT_EQ(strides_of(u), (std::vector<int64_t>{12, 4, 2, 1}));
  expect_error([&] { x.unflatten(1, {2, 2}); }, {"[unflatten]", "invalid for input of size 3"});

  Tensor z = zeros({2, 1, 3, 1});
  EXPECT_EQ(shape_of(z.squeeze()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(strides_of(z.squeeze(1)), (std::vector<int64_t>{3, 1, 1}));
  EXPECT_EQ(shape_of(z.squeeze(0)), (std::vector<int64_t>{2, 1, 3, 1}));  // not size 1: unchanged
  EXPECT_EQ(shape_of(z.squeeze(-1)), (std::vector<int64_t>{2, 1, 3}));
  Tensor m = zeros({2, 3});
  EXPECT_EQ(strides_of(m.unsqueeze(1)), (std::vector<int64_t>{3, 3, 1}));   // torch: (3, 3, 1)
  EXPECT_EQ(strides_of(m.unsqueeze(-1)), (std::vector<int64_t>{3, 1, 1}));  // torch: (3, 1, 1)
  EXPECT_EQ(strides_of(m.unsqueeze(0)), (std::vector<int64_t>{6, 3, 1}));   // torch: (6, 3, 1)
  EXPECT_EQ(m.unsqueeze(0).data_ptr(), m.data_ptr());
  expect_error([&] { m.unsqueeze(3); }, {"[unsqueeze]", "dimension out of range"});
  expect_error([&] { m.squeeze(2); }, {"[squeeze]", "dimension out of range"});
}

TEST(Views, TransposePermuteTExpand) {
  Tensor x = arange(24.0).view({2, 3, 4});
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(shape_of(t), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(strides_of(t), (std::vector<int64_t>{1, 4, 12}));
  EXPECT_EQ(t.data_ptr(), x.data_ptr());
  EXPECT_FALSE(t.is_contiguous());
  Tensor p = x.permute({1, 2, 0});
  EXPECT_EQ(strides_of(p), (std::vector<int64_t>{4, 1, 12}));
  EXPECT_EQ(p.select(0, 1).select(0, 2).to_vector<float>(), (std::vector<float>{6, 18}));
  expect_error([&] { x.permute({0, 0, 1}); }, {"[permute]", "repeated dim"});
  expect_error([&] { x.permute({0, 1}); }, {"[permute]", "number of dims don't match"});
  Tensor m = arange(6.0).view({2, 3});
  EXPECT_EQ(strides_of(m.t()), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(shape_of(arange(3.0).t()), (std::vector<int64_t>{3}));
  expect_error([&] { x.t(); }, {"[t]", "expects a tensor with <= 2 dimensions, but self is 3D"});
  EXPECT_EQ(strides_of(x.mT()), (std::vector<int64_t>{12, 1, 4}));
  expect_error([&] { arange(3.0).mT(); }, {"[mT]"});
  EXPECT_EQ(strides_of(x.movedim(0, 2)), (std::vector<int64_t>{4, 1, 12}));  // torch: (4, 1, 12)
  EXPECT_EQ(shape_of(x.movedim(-1, 0)), (std::vector<int64_t>{4, 2, 3}));

  Tensor r = arange(3.0);
  Tensor e = r.expand({2, 3});
  EXPECT_EQ(strides_of(e), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(e.data_ptr(), r.data_ptr());
  EXPECT_EQ(vals<float>(e), (std::vector<float>{0, 1, 2, 0, 1, 2}));
  Tensor c = arange(2.0).view({2, 1}).expand({-1, 3});
  EXPECT_EQ(strides_of(c), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(vals<float>(c), (std::vector<float>{0, 0, 0, 1, 1, 1}));
  expect_error([&] { r.expand({2, 4}); },
               {"[expand]", "the expanded size of the tensor (4) must match the existing size (3) at non-singleton "
                            "dimension 1"});
  expect_error([&] { x.expand({3, 4}); }, {"[expand]", "must be greater or equal"});
}

TEST(Views, AsStrided) {
  Tensor x = arange(6.0);
  Tensor a = x.as_strided({2, 2}, {1, 2}, 1);
  EXPECT_EQ(vals<float>(a), (std::vector<float>{1, 3, 2, 4}));
  EXPECT_EQ(a.storage_offset(), 1);
  EXPECT_TRUE(a.is_alias_of(x));
  EXPECT_EQ(vals<float>(x.as_strided({3, 2}, {1, 1})), (std::vector<float>{0, 1, 1, 2, 2, 3}));
  expect_error([&] { x.as_strided({3, 3}, {2, 1}); }, {"[as_strided]", "sizes [3, 3]", "strides [2, 1]", "28", "24"});
  expect_error([&] { x.as_strided({2}, {1}, 5); }, {"[as_strided]"});
  expect_error([&] { x.as_strided({2}, {1, 1}); }, {"[as_strided]", "mismatch in length"});
  EXPECT_EQ(x.as_strided({0, 100}, {100, 1}).numel(), 0);  // empty views are always in bounds
}

TEST(Views, NarrowSelectSlice) {
  Tensor x = arange(24.0).view({2, 3, 4});
  Tensor n = x.narrow(2, 1, 2);
  EXPECT_EQ(shape_of(n), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(n.storage_offset(), 1);
  EXPECT_EQ(n.select(0, 1).select(0, 2).to_vector<float>(), (std::vector<float>{21, 22}));
  EXPECT_EQ(x.narrow(1, -1, 1).storage_offset(), 8);
  expect_error([&] { x.narrow(2, 2, 3); }, {"[narrow]", "start (2) + length (3) exceeds dimension size (4)"});
  Tensor s = x.select(1, -1);
  EXPECT_EQ(shape_of(s), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(s.storage_offset(), 8);
  EXPECT_EQ(vals<float>(x[1][2]), (std::vector<float>{20, 21, 22, 23}));
  expect_error([&] { x.select(1, 3); }, {"[select]", "index 3 is out of bounds for dimension 1 with size 3"});
  expect_error([&] { x.select(1, -4); }, {"[select]", "index -4"});
  expect_error([&] { scalar_tensor(1.0).select(0, 0); }, {"[select]", "0-dim"});

  // x[:, -2:, ::2] in torch: strides (12, 4, 2), offset 4, shape (2, 2, 2)
  Tensor sl = x.slice(1, -2).slice(2, std::nullopt, std::nullopt, 2);
  EXPECT_EQ(shape_of(sl), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(strides_of(sl), (std::vector<int64_t>{12, 4, 2}));
  EXPECT_EQ(sl.storage_offset(), 4);
  Tensor y = arange(10);
  EXPECT_EQ(vals<int64_t>(y.slice(0, -3, std::nullopt, 2)), (std::vector<int64_t>{7, 9}));
  EXPECT_EQ(vals<int64_t>(y.slice(0, 7, 100)), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(y.slice(0, 5, 2).numel(), 0);
  EXPECT_EQ(y.slice(0, -100, 2).numel(), 2);
  EXPECT_EQ(vals<int64_t>(y.slice(0, 1, -1, 3)), (std::vector<int64_t>{1, 4, 7}));
  expect_error([&] { y.slice(0, 0, 5, 0); }, {"[slice]", "step must be greater than zero"});
  expect_error([&] { y.slice(0, 0, 5, -1); }, {"[slice]", "step must be greater than zero"});
}

// The host path's shortcuts (Note [Releasing the last reference], make_view's
// one reference to the root, select's one-pass shape) against plain rules.
TEST(Views, RootStorageAndCountsThroughChains) {
  Tensor x = arange(24.0).view({2, 3, 4});  // a view of arange's result
  Tensor root = x._base();
  ASSERT_TRUE(root.defined());
  const int32_t n0 = root.use_count();
  {
    Tensor t = x.transpose(0, 2);
    Tensor s = t[1];
    Tensor u = s.t();
    for (const Tensor* v : {&t, &s, &u}) {
      EXPECT_TRUE(v->_is_view());
      EXPECT_TRUE(v->_base().is_same(root));  // the root, never an intermediate view
      EXPECT_TRUE(v->is_alias_of(x));
    }
    EXPECT_EQ(root.use_count(), n0 + 3);  // one reference per view (x holds one already)
    EXPECT_EQ(shape_of(u), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(strides_of(u), (std::vector<int64_t>{12, 4}));
    EXPECT_EQ(u.storage_offset(), 1);
    EXPECT_EQ(vals<float>(u.contiguous()), (std::vector<float>{1, 5, 9, 13, 17, 21}));
  }
  EXPECT_EQ(root.use_count(), n0);
  // select on more dims than a shape holds inline (6), every dim and index
  std::vector<int64_t> sz{2, 1, 3, 1, 2, 2, 3};
  Tensor big = arange(72).view(sz);
  for (int64_t d = 0; d < 7; ++d)
    for (int64_t i = -sz[d]; i < sz[d]; ++i) {
      Tensor s = big.select(d, i);
      std::vector<int64_t> esz, est, st = strides_of(big);
      for (int64_t k = 0; k < 7; ++k)
        if (k != d) esz.push_back(sz[k]), est.push_back(st[k]);
      EXPECT_EQ(shape_of(s), esz);
      EXPECT_EQ(strides_of(s), est);
      EXPECT_EQ(s.storage_offset(), (i < 0 ? i + sz[d] : i) * st[d]);
    }
  expect_error([&] { big.select(7, 0); },
               {"[select]", "dimension out of range (expected to be in range of [-7, 6], but got 7)"});
  expect_error([&] { big.transpose(0, -8); },
               {"[transpose]", "dimension out of range (expected to be in range of [-7, 6], but got -8)"});
}

TEST(Views, SharedTensorsReleasedFromManyThreads) {
  set_num_threads(1);
  const int64_t before = cpu::memory_allocated();
  for (int round = 0; round < 20; ++round) {
    Tensor x = ones({64, 64});
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k)
      threads.emplace_back([c = x, k] {  // each thread owns a copy and drops it last or first
        std::vector<Tensor> held;
        for (int i = 0; i < 200; ++i) {
          held.push_back(i % 2 ? c.t() : c[i % 64]);
          if (held.size() > 8) held.erase(held.begin() + (i + k) % 8);
        }
      });
    if (round % 2) x = Tensor();  // the main thread lets go before or after the others
    for (auto& t : threads) t.join();
    if (x.defined()) {
      EXPECT_EQ(x.use_count(), 1);
      EXPECT_EQ(x.sum().item<double>(), 4096.0);
    }
  }
  EXPECT_EQ(cpu::memory_allocated(), before);
}

TEST(Views, SplitChunkUnbind) {
  Tensor y = arange(10);
  auto sizes = [](const std::vector<Tensor>& ts) {
    std::vector<int64_t> s;
    for (auto& t : ts) s.push_back(t.size(0));
    return s;
  };
  // torch: chunk(4) -> 3,3,3,1; split(4) -> 4,4,2; arange(5).chunk(3) -> 2,2,1; arange(6).chunk(4) -> 2,2,2
  EXPECT_EQ(sizes(y.chunk(4)), (std::vector<int64_t>{3, 3, 3, 1}));
  EXPECT_EQ(sizes(y.split(4)), (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(sizes(arange(5).chunk(3)), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(sizes(arange(6).chunk(4)), (std::vector<int64_t>{2, 2, 2}));
  auto parts = y.split({2, 5, 3});
  EXPECT_EQ(sizes(parts), (std::vector<int64_t>{2, 5, 3}));
  EXPECT_EQ(vals<int64_t>(parts[2]), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_TRUE(parts[1].is_alias_of(y));
  expect_error([&] { y.split({2, 5}); }, {"[split_with_sizes]", "sum to 7", "size 10"});
  expect_error([&] { y.chunk(0); }, {"[chunk]", "must be positive"});
  Tensor m = arange(6).view({2, 3});
  auto cols = m.unbind(1);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(vals<int64_t>(cols[2]), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(cols[2].storage_offset(), 2);
  auto rows = m.split(1, 0);
  EXPECT_EQ(shape_of(rows[1]), (std::vector<int64_t>{1, 3}));
}

TEST(Views, DiagonalUnfold) {
  Tensor m = arange(12).view({3, 4});
  // torch: diagonal(1) = [1, 6, 11] (offset 1), diagonal(-1) = [4, 9] (offset 4), diagonal(5) empty
  EXPECT_EQ(vals<int64_t>(m.diagonal()), (std::vector<int64_t>{0, 5, 10}));
  EXPECT_EQ(vals<int64_t>(m.diagonal(1)), (std::vector<int64_t>{1, 6, 11}));
  EXPECT_EQ(m.diagonal(1).storage_offset(), 1);
  EXPECT_EQ(vals<int64_t>(m.diagonal(-1)), (std::vector<int64_t>{4, 9}));
  EXPECT_EQ(m.diagonal(-1).storage_offset(), 4);
  EXPECT_EQ(m.diagonal(5).numel(), 0);
  EXPECT_EQ(strides_of(m.diagonal()), (std::vector<int64_t>{5}));
  Tensor b = arange(24).view({2, 3, 4});
  Tensor d = b.diagonal(0, 1, 2);
  EXPECT_EQ(shape_of(d), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vals<int64_t>(d), (std::vector<int64_t>{0, 5, 10, 12, 17, 22}));
  m.diagonal().fill_(-1);
  EXPECT_EQ(vals<int64_t>(m.select(0, 1)), (std::vector<int64_t>{4, -1, 6, 7}));
  expect_error([&] { m.diagonal(0, 1, 1); }, {"[diagonal]", "cannot be identical"});

  Tensor u = arange(7).unfold(0, 3, 2);
  EXPECT_EQ(shape_of(u), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(strides_of(u), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(vals<int64_t>(u), (std::vector<int64_t>{0, 1, 2, 2, 3, 4, 4, 5, 6}));
  Tensor u2 = arange(12).view({3, 4}).unfold(1, 2, 1);
  EXPECT_EQ(shape_of(u2), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(strides_of(u2), (std::vector<int64_t>{4, 1, 1}));
  expect_error([] { arange(3).unfold(0, 4, 1); }, {"[unfold]", "maximum size"});
  expect_error([] { arange(3).unfold(0, 2, 0); }, {"[unfold]", "step"});
}

// ---- memory formats -------------------------------------------------------------------

TEST(MemoryFormat, ChannelsLast) {
  Tensor x = empty({10, 3, 32, 32}, {}, kChannelsLast);
  EXPECT_EQ(strides_of(x), (std::vector<int64_t>{3072, 1, 96, 3}));
  EXPECT_TRUE(x.is_contiguous(kChannelsLast));
  EXPECT_FALSE(x.is_contiguous());
  Tensor a = arange(2 * 3 * 4 * 5, kFloat).view({2, 3, 4, 5});
  EXPECT_TRUE(a.is_contiguous(kContiguous));
  EXPECT_FALSE(a.is_contiguous(kChannelsLast));
  Tensor cl = a.contiguous(kChannelsLast);
  EXPECT_EQ(strides_of(cl), (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_TRUE(cl.is_contiguous(kChannelsLast));
  EXPECT_TRUE(cl.contiguous(kChannelsLast).is_same(cl));  // already in that format: no copy
  EXPECT_EQ(vals<float>(cl), vals<float>(a));              // same values, other layout
  // element (n=1, c=2, h=3, w=4) in memory at 60 + 2 + 45 + 12
  EXPECT_EQ(cl.data_ptr<float>()[60 + 2 + 45 + 12], a[1][2][3][4].item<float>());
  Tensor back = cl.contiguous();
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_EQ(vals<float>(back), vals<float>(a));
  EXPECT_EQ(strides_of(a.to(kChannelsLast)), strides_of(cl));
  // a permuted NHWC buffer is channels_last too
  Tensor nhwc = arange(2 * 4 * 5 * 3, kFloat).view({2, 4, 5, 3}).permute({0, 3, 1, 2});
  EXPECT_TRUE(nhwc.is_contiguous(kChannelsLast));
  EXPECT_FALSE(arange(6.0).view({2, 3}).is_contiguous(kChannelsLast));
}

TEST(MemoryFormat, ElementwiseKeepsChannelsLast) {
  Tensor a = (arange(2 * 3 * 4 * 5, kFloat).view({2, 3, 4, 5}) - 50).contiguous(kChannelsLast);
  for (const Tensor& r : {a + 1, a.relu(), a * a, a.exp(), a.clone(), a.to(kDouble), empty_like(a)}) {
    EXPECT_TRUE(r.is_contiguous(kChannelsLast)) << r.strides();
    EXPECT_EQ(strides_of(r), (std::vector<int64_t>{60, 1, 15, 3}));
  }
  EXPECT_EQ(vals<float>(a + 1), vals<float>(a.contiguous() + 1));
  EXPECT_EQ(vals<float>(a.relu()), vals<float>(a.contiguous().relu()));
}

// ---- copies and conversions --------------------------------------------------------------

TEST(Copy, ContiguousCloneCopy) {
  Tensor x = arange(6.0).view({2, 3});
  EXPECT_TRUE(x.contiguous().is_same(x));
  Tensor xt = x.t();
  Tensor c = xt.contiguous();
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_EQ(strides_of(c), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(vals<float>(c), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // clone preserves the (dense) layout, like torch: (1, 3)
  Tensor k = xt.clone();
  EXPECT_EQ(strides_of(k), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(k.is_alias_of(x));
  EXPECT_EQ(strides_of(xt.clone(kContiguous)), (std::vector<int64_t>{2, 1}));
  // a non-dense view clones to contiguous
  Tensor sl = arange(10.0).slice(0, 0, 10, 2);
  EXPECT_EQ(strides_of(sl.clone()), (std::vector<int64_t>{1}));
  EXPECT_EQ(vals<float>(sl.clone()), (std::vector<float>{0, 2, 4, 6, 8}));

  // copy_ converts dtype, follows strides and broadcasts
  Tensor dst = zeros({3, 2}, kInt32);
  dst.copy_(tensor({{1.9, -2.7}, {3.5, 4.0}, {-0.5, 6.25}}));
  EXPECT_EQ(vals<int32_t>(dst), (std::vector<int32_t>{1, -2, 3, 4, 0, 6}));  // truncation toward zero
  Tensor dt = zeros({3, 2});
  dt.copy_(x.t());
  EXPECT_EQ(vals<float>(dt), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor into_t = zeros({2, 3}).t();  // strided destination
  into_t.copy_(arange(6.0).view({3, 2}));
  EXPECT_EQ(vals<float>(into_t), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  Tensor row = zeros({2, 3}, kDouble);
  row.copy_(tensor({1, 2, 3}));
  EXPECT_EQ(vals<double>(row), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  Tensor col = zeros({2, 3}, kHalf);
  col.copy_(tensor({{1.f}, {2.f}}));
  EXPECT_EQ(vals<float>(col), (std::vector<float>{1, 1, 1, 2, 2, 2}));
  Tensor b = zeros({3}, kBool);
  b.copy_(tensor({0.0, 0.5, -2.0}));
  EXPECT_EQ(vals<bool>(b), (std::vector<bool>{false, true, true}));
  Tensor fromb = zeros({2});
  fromb.copy_(tensor({true, false}));
  EXPECT_EQ(vals<float>(fromb), (std::vector<float>{1, 0}));
  expect_error([&] { zeros({2, 3}).copy_(zeros({4})); }, {"[copy_]", "cannot be broadcast"});
  expect_error([&] { zeros({3}).copy_(zeros({2, 3})); }, {"[copy_]", "[2, 3]", "[3]"});
  // writing through an expanded tensor or an overlapping source is refused
  Tensor base = zeros({3});
  expect_error([&] { base.expand({2, 3}).copy_(ones({2, 3})); },
               {"[copy_]", "more than one element of the written-to tensor refers to a single memory location"});
  EXPECT_EQ(vals<float>(base), (std::vector<float>{0, 0, 0}));
  Tensor seq = arange(5.0);
  expect_error([&] { seq.slice(0, 1).copy_(seq.slice(0, 0, 4)); },
               {"[copy_]", "some elements of the input tensor and the written-to tensor refer to a single memory "
                           "location"});
  EXPECT_EQ(vals<float>(seq), (std::vector<float>{0, 1, 2, 3, 4}));
  // copy_ of a tensor to itself is a no-op
  seq.copy_(seq);
  EXPECT_EQ(vals<float>(seq), (std::vector<float>{0, 1, 2, 3, 4}));
  Tensor empty_dst = empty({0, 2});
  empty_dst.copy_(empty({0, 2}));
}

// The value of `t` at a multi-index, read through its strides (the naive
// reference for the copy kernels), as raw bytes.
std::vector<unsigned char> bytes_at(const Tensor& t, const std::vector<int64_t>& idx) {
  const auto* p = static_cast<const unsigned char*>(t.data_ptr());
  const int64_t es = static_cast<int64_t>(element_size(t.dtype()));
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.stride(static_cast<int64_t>(d));
  return {p + off * es, p + off * es + es};
}
// Every element of `got` equals `want` at the same index, byte for byte.
::testing::AssertionResult same_bytes(const Tensor& got, const Tensor& want) {
  if (got.sizes().vec() != want.sizes().vec()) return ::testing::AssertionFailure() << "shapes differ";
  std::vector<int64_t> idx(static_cast<size_t>(got.dim()), 0);
  for (int64_t n = 0; n < got.numel(); ++n) {
    if (bytes_at(got, idx) != bytes_at(want, idx)) {
      auto f = ::testing::AssertionFailure() << "differs at [";
      for (int64_t i : idx) f << i << ",";
      return f << "]";
    }
    for (int64_t d = got.dim() - 1; d >= 0; --d)
      if (++idx[static_cast<size_t>(d)] < got.size(d)) break;
      else idx[static_cast<size_t>(d)] = 0;
  }
  return ::testing::AssertionSuccess();
}

// Copies that transpose (destination contiguous where the source is strided
// and the other way round) run tiled (Note [Tiled transposed copy]): every
// element size, ragged tile edges, outer dims, threads, strided destinations.
TEST(Copy, TransposingCopiesMatchTheReference) {
  const int saved = get_num_threads();
  for (ScalarType dt : {kUInt8, kBool, kHalf, kBFloat16, kFloat, kInt32, kDouble, kInt64}) {
    for (int nt : {1, 2}) {
      set_num_threads(nt);
      const std::string what = std::string(dtype_name(dt)) + ", " + std::to_string(nt) + " threads";
      Tensor x = (arange(203.0 * 131.0).view({203, 131}) * 0.5).to(dt);  // distinct values (mod 256 for bytes)
      EXPECT_TRUE(same_bytes(x.t().contiguous(), x.t())) << what;
      Tensor big = (arange(300.0 * 520.0).view({300, 520})).to(dt);
      EXPECT_TRUE(same_bytes(big.t().contiguous(), big.t())) << what;
      // 3-D: the source's contiguous dim is not the iterator's second dim
      Tensor c = arange(5.0 * 70.0 * 66.0).view({5, 70, 66}).to(dt);
      for (auto perm : {std::vector<int64_t>{0, 2, 1}, {2, 0, 1}, {2, 1, 0}, {1, 2, 0}})
        EXPECT_TRUE(same_bytes(c.permute(perm).contiguous(), c.permute(perm))) << what;
      // NCHW -> channels_last and back
      Tensor img = arange(2.0 * 19.0 * 33.0 * 17.0).view({2, 19, 33, 17}).to(dt);
      Tensor cl = img.contiguous(kChannelsLast);
      EXPECT_TRUE(same_bytes(cl, img)) << what;
      EXPECT_TRUE(same_bytes(cl.contiguous(), img)) << what;
      // a strided destination: a column block of a wider tensor
      Tensor wide = zeros({131, 250}, dt);
      Tensor part = wide.narrow(1, 20, 203);
      part.copy_(x.t());
      EXPECT_TRUE(same_bytes(part, x.t())) << what;
      EXPECT_TRUE(same_bytes(wide.narrow(1, 0, 20), zeros({131, 20}, dt))) << what;
    }
  }
  set_num_threads(saved);
}

TEST(Copy, FillAndZero) {
  Tensor x = zeros({2, 3}, kInt32);
  x.fill_(7);
  EXPECT_EQ(vals<int32_t>(x), std::vector<int32_t>(6, 7));
  x.t().select(0, 1).fill_(-1);  // a strided column
  EXPECT_EQ(vals<int32_t>(x), (std::vector<int32_t>{7, -1, 7, 7, -1, 7}));
  x.zero_();
  EXPECT_EQ(vals<int32_t>(x), std::vector<int32_t>(6, 0));
  Tensor h = empty({3}, kHalf).fill_(0.1);
  EXPECT_EQ(h.data_ptr<Half>()[2].x, 0x2e66);
  // An expanded tensor is filled (torch): every alias gets the same value.
  Tensor b = zeros({3});
  b.expand({2, 3}).fill_(1);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(Copy, ItemAndTo) {
  EXPECT_EQ(scalar_tensor(3.5).item<float>(), 3.5f);
  EXPECT_EQ(scalar_tensor(3.5).item<int64_t>(), 3);
  EXPECT_EQ(tensor({{42}}).item<int64_t>(), 42);
  EXPECT_EQ(tensor({2.5}, kHalf).item<double>(), 2.5);
  EXPECT_TRUE(tensor({true}).item<bool>());
  EXPECT_EQ(tensor({200}, kUInt8).item().to_long(), 200);
  EXPECT_EQ(tensor({1.5}, kBFloat16).item().kind(), Scalar::Kind::Double);
  EXPECT_EQ(tensor({1}, kInt32).item().kind(), Scalar::Kind::Int);
  EXPECT_EQ(arange(6).view({2, 3})[1][2].item<int64_t>(), 5);
  expect_error([] { ones({2}).item(); }, {"[item]", "a Tensor with 2 elements cannot be converted to a Scalar"});
  expect_error([] { empty({0}).item(); }, {"[item]", "0 elements"});

  Tensor f = tensor({1.7f, -1.7f, 0.f, 300.f});
  EXPECT_TRUE(f.to(kFloat).is_same(f));  // same dtype: the same tensor
  Tensor fc = f.to(kFloat, false, /*copy=*/true);
  EXPECT_FALSE(fc.is_alias_of(f));
  EXPECT_EQ(vals<float>(fc), vals<float>(f));
  EXPECT_EQ(vals<int64_t>(f.to(kInt64)), (std::vector<int64_t>{1, -1, 0, 300}));
  EXPECT_EQ(vals<int32_t>(f.to(kInt32)), (std::vector<int32_t>{1, -1, 0, 300}));
  EXPECT_EQ(vals<bool>(f.to(kBool)), (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(vals<double>(tensor({true, false}).to(kDouble)), (std::vector<double>{1, 0}));
  EXPECT_EQ(vals<double>(tensor({0.1f}).to(kDouble)), (std::vector<double>{double(0.1f)}));
  EXPECT_EQ(vals<float>(tensor({0.1}, kDouble).to(kFloat)), (std::vector<float>{0.1f}));
  EXPECT_EQ(vals<int64_t>(tensor({250, 5}, kUInt8).to(kInt64)), (std::vector<int64_t>{250, 5}));
  EXPECT_EQ(tensor({1, 2}).to(TensorOptions(kHalf)).dtype(), kHalf);
  // to() of a transposed tensor keeps its layout
  Tensor xt = arange(6.0).view({2, 3}).t();
  EXPECT_EQ(strides_of(xt.to(kDouble)), (std::vector<int64_t>{1, 3}));
}

TEST(Copy, EqualAllclose) {
  Tensor a = tensor({1.f, 2.f, 3.f});
  EXPECT_TRUE(a.equal(tensor({1.f, 2.f, 3.f})));
  EXPECT_FALSE(a.equal(tensor({1.f, 2.f, 4.f})));
  EXPECT_FALSE(a.equal(tensor({1.f, 2.f})));
  EXPECT_TRUE(equal(empty({0}), empty({0})));
  EXPECT_TRUE(a.allclose(a + 1e-7f));
  EXPECT_FALSE(a.allclose(a + 1e-3f));
  EXPECT_TRUE(a.allclose(a + 1e-3f, 0, 1e-2));
  Tensor n = tensor({double(NAN), 1.0});
  EXPECT_FALSE(n.allclose(n));
  EXPECT_TRUE(n.allclose(n, 1e-5, 1e-8, /*equal_nan=*/true));
  EXPECT_TRUE(allclose(tensor({double(INFINITY)}), tensor({double(INFINITY)})));
  EXPECT_FALSE(allclose(tensor({double(INFINITY)}), tensor({-double(INFINITY)})));
  expect_error([&] { a.allclose(a.to(kDouble)); }, {"[isclose]", "same dtype"});
}

// ---- version counters --------------------------------------------------------------------

// Regression (difffuzz chain:view:missing-error): an elementwise op's fresh
// output follows the input's memory order even across a size-1 dim, as
// PyTorch orders dims, so view() accepts and refuses what it does in PyTorch.
// torch 2.15: x = arange(6.).view(2, 1, 3).permute(2, 1, 0), strides (1, 3, 3):
// x.log1p(), x + x and x * 2 have strides (1, 3, 3), and x.log1p().view(2, 1, 3)
// raises; arange(6.).view(3, 1, 2).transpose(0, 2).exp(): (1, 2, 2);
// z = arange(12.).view(3, 4).t().unsqueeze(1): z.neg() and z + ones(4, 1, 1): (1, 12, 4).
TEST(Layout, ElementwiseOutputKeepsOrderAcrossSizeOneDims) {
  const Tensor x = arange(6, kDouble).view({2, 1, 3}).permute({2, 1, 0});
  ASSERT_EQ(strides_of(x), (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(strides_of(x.log1p()), (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(strides_of(x + x), (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(strides_of(x * 2), (std::vector<int64_t>{1, 3, 3}));
  expect_error([&] { x.log1p().view({2, 1, 3}); }, {"view"});
  EXPECT_EQ(strides_of(arange(6, kDouble).view({3, 1, 2}).transpose(0, 2).exp()), (std::vector<int64_t>{1, 2, 2}));
  const Tensor z = arange(12, kDouble).view({3, 4}).t().unsqueeze(1);
  EXPECT_EQ(strides_of(z.neg()), (std::vector<int64_t>{1, 12, 4}));
  EXPECT_EQ(strides_of(z + ones({4, 1, 1}, kDouble)), (std::vector<int64_t>{1, 12, 4}));
}

TEST(Version, BumpsOnInPlaceAndIsSharedByViews) {
  Tensor x = zeros({2, 3});
  Tensor v = x.view({6});
  Tensor t = x.t();
  const uint32_t v0 = x._version();
  x.add_(1);
  EXPECT_EQ(x._version(), v0 + 1);
  EXPECT_EQ(v._version(), v0 + 1);  // shared by views
  v.mul_(2);
  EXPECT_EQ(x._version(), v0 + 2);
  t.fill_(3);
  EXPECT_EQ(x._version(), v0 + 3);
  x.copy_(ones({2, 3}));
  EXPECT_EQ(x._version(), v0 + 4);
  x.zero_();
  EXPECT_EQ(x._version(), v0 + 5);
  x.relu_();
  EXPECT_EQ(t._version(), v0 + 6);
  Tensor out = empty({2, 3});
  const uint32_t o0 = out._version();
  add_out(out, x, x);
  EXPECT_GT(out._version(), o0);
  // out-of-place ops do not bump their inputs
  Tensor y = x + 1;
  Tensor z = x.exp();
  EXPECT_EQ(x._version(), v0 + 6);
  EXPECT_EQ(y._version(), 0u);
  // a clone has its own counter
  Tensor c = x.clone();
  const uint32_t c0 = c._version();
  x.add_(1);
  EXPECT_EQ(c._version(), c0);
  // a failed in-place op does not bump
  const uint32_t before = x._version();
  expect_error([&] { x.add_(ones({4})); }, {"[add_]"});
  EXPECT_EQ(x._version(), before);
}

// An undefined tensor (the grad of a tensor without one) raises in to(),
// it does not crash (found by the fuzzer triage).
TEST(Copy, ToOnAnUndefinedTensorRaises) {
  Tensor u;
  EXPECT_THROW(u.to(kFloat), Error);
  EXPECT_THROW(u.to(Device(kCPU)), Error);
  EXPECT_THROW(u.to(TensorOptions(kDouble)), Error);
  EXPECT_THROW(u.to(Device(kCPU), kHalf), Error);
  Tensor x = ones({2}, TensorOptions(kFloat).requires_grad(true));
  Tensor y = x * 2;
  EXPECT_THROW(y.grad().to(kDouble), Error);
}

}  // namespace
}  // namespace brisk
