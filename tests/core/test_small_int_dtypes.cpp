// The int8 and int16 dtypes (kInt8 / kChar, kInt16 / kShort) and libtorch's
// dtype spellings: promotion against torch.promote_types, the op results of
// PyTorch 2.15 on the same inputs (tests/core/small_int_expected.h, made by
// gen_small_int_expected.py), wraparound against naive references, division
// by zero, casts, printing and the file formats.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "core/small_int_expected.h"
#include "test_util.h"

namespace brisk {
namespace {

using testing::expect_error;

const ScalarType kAll[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};

ScalarType from_short_name(const std::string& n) {
  const char* names[] = {"b1", "u1", "i1", "i2", "i4", "i8", "f2", "bf", "f4", "f8"};
  for (int i = 0; i < 10; ++i)
    if (n == names[i]) return kAll[i];
  ADD_FAILURE() << "unknown dtype " << n;
  return ScalarType::Undefined;
}
ScalarType from_name(const std::string& n) {
  for (ScalarType t : kAll)
    if (dtype_name(t) == n) return t;
  ADD_FAILURE() << "unknown dtype " << n;
  return ScalarType::Undefined;
}

// ---- the dtype names ------------------------------------------------------------------

TEST(SmallIntDtypes, NamesSizesPredicates) {
  EXPECT_EQ(dtype_name(kInt8), "int8");
  EXPECT_EQ(dtype_name(kInt16), "int16");
  EXPECT_EQ(element_size(kInt8), 1u);
  EXPECT_EQ(element_size(kInt16), 2u);
  EXPECT_EQ(kNumDtypes, 10);
  for (ScalarType t : {kInt8, kInt16}) {
    EXPECT_TRUE(is_integral(t, false));
    EXPECT_FALSE(is_floating_point(t));
    EXPECT_TRUE(is_signed(t));
  }
  EXPECT_FALSE(is_signed(kUInt8));
  EXPECT_FALSE(is_signed(kBool));
  EXPECT_TRUE(is_signed(kHalf));
  std::ostringstream os;
  os << kInt8 << " " << kShort;
  EXPECT_EQ(os.str(), "int8 int16");
  Tensor x = zeros({3}, kInt16);
  EXPECT_EQ(x.element_size(), 2u);
  EXPECT_EQ(x.nbytes(), 6u);
  EXPECT_EQ(x.scalar_type(), kInt16);
  EXPECT_EQ(x.dtype(), kShort);
  EXPECT_TRUE(isSignedType(x.scalar_type()));
  EXPECT_EQ(dtype_of<int8_t>, kInt8);
  EXPECT_EQ(dtype_of<int16_t>, kInt16);
}

// libtorch's spellings: torch::kF32 ..., ScalarType::Long, c10::ScalarType.
static_assert(kI8 == ScalarType::Int8 && kChar == kInt8 && ScalarType::Char == kInt8);
static_assert(kI16 == ScalarType::Int16 && kShort == kInt16 && ScalarType::Short == kInt16);
static_assert(kU8 == kUInt8 && ScalarType::Byte == kByte);
static_assert(kI32 == kInt && ScalarType::Int == kInt32);
static_assert(kI64 == kLong && ScalarType::Long == kInt64);
static_assert(kF16 == kHalf && kBF16 == kBFloat16 && kF32 == kFloat && kF64 == kDouble);
static_assert(std::is_same_v<c10::ScalarType, brisk::Dtype>);
static_assert(c10::kChar == kInt8 && c10::kShort == kInt16 && c10::kFloat == kF32 && c10::kLong == kI64);
static_assert(c10::elementSize(c10::ScalarType::Short) == 2 && c10::isSignedType(c10::kChar) &&
              !c10::isSignedType(c10::kByte) && c10::isFloatingType(c10::kHalf) &&
              c10::isIntegralType(c10::kShort, false) && !c10::isIntegralType(c10::kBool, false));

TEST(SmallIntDtypes, LibtorchSpellings) {
  EXPECT_EQ(c10::promoteTypes(c10::kByte, c10::kChar), c10::kShort);
  EXPECT_EQ(promoteTypes(kI8, kF16), kF16);
  Tensor x = ones({2}, TensorOptions(kI8));
  EXPECT_EQ(x.dtype(), kChar);
  EXPECT_EQ(x.to(kF32).dtype(), kFloat);
  const c10::ScalarType t = x.scalar_type();
  EXPECT_EQ(t, c10::ScalarType::Char);
}

// ---- promotion ------------------------------------------------------------------------

TEST(SmallIntDtypes, PromotionTableMatchesPyTorch) {
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      const ScalarType want = from_short_name(small_int_expected::kPromote[i][j]);
      EXPECT_EQ(promote_types(kAll[i], kAll[j]), want) << kAll[i] << " " << kAll[j];
      EXPECT_EQ(result_type(zeros({2}, kAll[i]), zeros({2}, kAll[j])), want) << kAll[i] << " " << kAll[j];
      // ops follow the table (add where both sides take it: not on bool + bool
      // subtraction and so on, add is defined for every pair)
      if (i != 0 || j != 0) EXPECT_EQ((zeros({2}, kAll[i]) + zeros({2}, kAll[j])).dtype(), want);
    }
}

TEST(SmallIntDtypes, ResultTypeWithScalarsAndZeroDim) {
  // Values from torch 2.15's torch.result_type.
  Tensor u8 = zeros({1}, kUInt8), i8 = zeros({1}, kInt8), i16 = zeros({1}, kInt16), b = zeros({1}, kBool);
  EXPECT_EQ(result_type(u8, scalar_tensor(1, kInt8)), kUInt8);  // a 0-dim tensor of the same category
  EXPECT_EQ(result_type(i8, scalar_tensor(1, kInt64)), kInt8);
  EXPECT_EQ(result_type(i8, Scalar(1)), kInt8);
  EXPECT_EQ(result_type(i8, Scalar(1.5)), kFloat);
  EXPECT_EQ(result_type(i16, scalar_tensor(1.5, kDouble)), kDouble);  // a higher category wins with its dtype
  EXPECT_EQ(result_type(scalar_tensor(1, kInt8), scalar_tensor(1, kUInt8)), kInt16);
  EXPECT_EQ(result_type(b, scalar_tensor(1, kInt8)), kInt8);
  EXPECT_EQ(result_type(i8, u8), kInt16);
  EXPECT_EQ((i8 + 1000).dtype(), kInt8);
  EXPECT_EQ((i8 * 2.5).dtype(), kFloat);
  EXPECT_EQ((i16 / 2).dtype(), kFloat);
}

// ---- op results against PyTorch 2.15 ---------------------------------------------------

using CaseFn = std::function<Tensor(ScalarType, const Tensor&, const Tensor&, const Tensor&, const Tensor&)>;

const std::map<std::string, CaseFn>& case_fns() {
  using T = const Tensor&;
  using D = ScalarType;
  static const std::map<std::string, CaseFn> m = {
      {"add", [](D, T a, T b, T, T) { return a + b; }},
      {"sub", [](D, T a, T b, T, T) { return a - b; }},
      {"mul", [](D, T a, T b, T, T) { return a * b; }},
      {"div_true", [](D, T a, T b, T, T) { return a / b; }},
      {"div_floor", [](D, T a, T b, T, T) { return div(a, b, RoundingMode::Floor); }},
      {"div_trunc", [](D, T a, T b, T, T) { return div(a, b, RoundingMode::Trunc); }},
      {"remainder", [](D, T a, T b, T, T) { return remainder(a, b); }},
      {"fmod", [](D, T a, T b, T, T) { return fmod(a, b); }},
      {"bitwise_and", [](D, T a, T b, T, T) { return a & b; }},
      {"bitwise_or", [](D, T a, T b, T, T) { return a | b; }},
      {"bitwise_xor", [](D, T a, T b, T, T) { return a ^ b; }},
      {"bitwise_not", [](D, T a, T, T, T) { return ~a; }},
      {"shl", [](D, T a, T, T, T s) { return bitwise_left_shift(a, s); }},
      {"shr", [](D, T a, T, T, T s) { return bitwise_right_shift(a, s); }},
      {"pow", [](D, T a, T, T e, T) { return pow(a, e); }},
      {"maximum", [](D, T a, T b, T, T) { return maximum(a, b); }},
      {"minimum", [](D, T a, T b, T, T) { return minimum(a, b); }},
      {"neg", [](D, T a, T, T, T) { return -a; }},
      {"abs", [](D, T a, T, T, T) { return a.abs(); }},
      {"sign", [](D, T a, T, T, T) { return a.sign(); }},
      {"square", [](D, T a, T, T, T) { return a.square(); }},
      {"clamp", [](D, T a, T, T, T) { return a.clamp(-50, 50); }},
      {"add_scalar", [](D, T a, T, T, T) { return a + 1; }},
      {"mul_scalar", [](D, T a, T, T, T) { return a * 3; }},
      {"add_big_scalar", [](D, T a, T, T, T) { return a + 1000; }},
      {"sub_scalar", [](D, T a, T, T, T) { return a - 200; }},
      {"floor_div_scalar", [](D, T a, T, T, T) { return a.div(1000, RoundingMode::Floor); }},
      {"remainder_scalar", [](D, T a, T, T, T) { return remainder(a, Scalar(7)); }},
      {"lt", [](D, T a, T b, T, T) { return a < b; }},
      {"eq", [](D, T a, T b, T, T) { return a == b; }},
      {"ge_scalar", [](D, T a, T, T, T) { return a >= 7; }},
      {"lt_big_scalar", [](D, T a, T, T, T) { return a < 1000; }},
      {"sum", [](D, T a, T, T, T) { return a.sum(); }},
      {"sum_dim", [](D, T a, T, T, T) { return a.view({3, 4}).sum(1); }},
      {"prod", [](D, T a, T, T, T) { return a.slice(0, 6, 11).prod(); }},
      {"amax", [](D, T a, T, T, T) { return a.amax(); }},
      {"amin", [](D, T a, T, T, T) { return a.amin(); }},
      {"argmax", [](D, T a, T, T, T) { return a.argmax(); }},
      {"argmin", [](D, T a, T, T, T) { return a.argmin(); }},
      {"max_dim", [](D, T a, T, T, T) { return std::get<0>(max(a.view({3, 4}), 1)); }},
      {"max_dim_idx", [](D, T a, T, T, T) { return std::get<1>(max(a.view({3, 4}), 1)); }},
      {"cumsum", [](D, T a, T, T, T) { return a.cumsum(0); }},
      {"sort", [](D, T a, T, T, T) { return std::get<0>(a.sort()); }},
      {"sort_idx", [](D, T a, T, T, T) { return std::get<1>(a.sort()); }},
      {"topk", [](D, T a, T, T, T) { return std::get<0>(a.topk(3)); }},
      {"to_float", [](D, T a, T, T, T) { return a.to(kFloat); }},
      {"to_half", [](D, T a, T, T, T) { return a.to(kHalf); }},
      {"to_uint8", [](D, T a, T, T, T) { return a.to(kUInt8); }},
      {"to_bool", [](D, T a, T, T, T) { return a.to(kBool); }},
      {"to_int8", [](D, T a, T, T, T) { return a.to(kInt8); }},
      {"to_int16", [](D, T a, T, T, T) { return a.to(kInt16); }},
      {"from_float", [](D d, T, T, T, T) { return tensor({-3.7, 3.7, 100.9, -100.9, 0.5, -0.5}, kFloat).to(d); }},
      {"from_int32",
       [](D d, T, T, T, T) { return tensor({300, -300, 32767, 128, -129, 70000}, kInt32).to(d); }},
      {"from_uint8", [](D d, T, T, T, T) { return tensor({200, 255, 128, 0, 127}, kUInt8).to(d); }},
      {"index_select", [](D, T a, T, T, T) { return a.index_select(0, tensor({11, 0, 3, 3, 9})); }},
      {"gather", [](D, T a, T, T, T) { return a.view({3, 4}).gather(1, tensor({3, 0, 2}).view({3, 1})); }},
      {"masked_fill", [](D, T a, T, T, T) { return a.masked_fill(a > 0, 5); }},
      {"where", [](D, T a, T b, T, T) { return where(a > 0, a, b); }},
      {"index_put_acc",
       [](D, T a, T b, T, T) {
         Tensor r = a.clone();
         r.index_put_({tensor({11, 0, 3, 3, 9})}, b.slice(0, 0, 5), true);
         return r;
       }},
      {"scatter_add",
       [](D d, T a, T, T, T) { return zeros({4}, d).scatter_add(0, tensor({0, 1, 0, 3, 0, 1}), a.slice(0, 0, 6)); }},
      {"nonzero", [](D, T a, T, T, T) { return a.view({3, 4}).nonzero(); }},
      {"matmul", [](D, T a, T b, T, T) { return matmul(a.view({3, 4}), b.view({4, 3})); }},
  };
  return m;
}

// The inputs of gen_small_int_expected.py.
struct Inputs {
  Tensor a, b, e, s;
};
Inputs inputs(ScalarType dt) {
  const bool i8 = dt == kInt8;
  std::vector<int64_t> a = i8 ? std::vector<int64_t>{-128, -127, -100, -7, -1, 0, 1, 7, 100, 127, 64, -64}
                              : std::vector<int64_t>{-32768, -32767, -20000, -7, -1, 0, 1, 7, 20000, 32767, 16384, -300};
  std::vector<int64_t> b = {-1, 3, -3, 2, 7, -5, 1, -2, 3, 1, 2, i8 ? 127 : 300};
  std::vector<int64_t> e = {0, 1, 2, 3, 7, 8, 1, 2, 5, 3, 2, 1};
  std::vector<int64_t> s = {0, 1, 2, 7, 8, 9, 15, 16, 17, 3, 5, 1};
  auto mk = [&](const std::vector<int64_t>& v) { return tensor(v).to(dt); };
  return {mk(a), mk(b), mk(e), mk(s)};
}

TEST(SmallIntDtypes, OpsMatchPyTorch) {
  set_num_threads(1);
  int checked = 0;
  for (const auto& c : small_int_expected::cases()) {
    SCOPED_TRACE(std::string(c.dtype) + " " + c.name);
    const ScalarType dt = from_name(c.dtype);
    auto it = case_fns().find(c.name);
    ASSERT_NE(it, case_fns().end()) << "no brisk twin of case " << c.name;
    const Inputs in = inputs(dt);
    Tensor got = it->second(dt, in.a, in.b, in.e, in.s);
    EXPECT_EQ(got.dtype(), from_name(c.result_dtype));
    std::vector<int64_t> shape(c.shape.begin(), c.shape.end());
    ASSERT_EQ(got.sizes(), IntArrayRef(shape));
    const std::vector<double> g = got.to(kDouble).contiguous().to_vector<double>();
    ASSERT_EQ(g.size(), c.values.size());
    for (size_t i = 0; i < g.size(); ++i) {
      if (is_floating_point(got.dtype()))
        EXPECT_NEAR(g[i], c.values[i], 1e-6 * std::abs(c.values[i])) << "element " << i;
      else
        EXPECT_EQ(g[i], c.values[i]) << "element " << i;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2 * static_cast<int>(case_fns().size()));
}

// ---- wraparound against naive references --------------------------------------------------

template <class T>
void check_wrap(ScalarType dt) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  const int64_t n = 1000;  // past the vector width, with a tail
  std::vector<int64_t> av(n), bv(n);
  for (int64_t i = 0; i < n; ++i) av[size_t(i)] = d(rng), bv[size_t(i)] = d(rng);
  av[0] = std::numeric_limits<T>::min(), bv[0] = -1;  // min / -1 and min * -1 wrap to min
  Tensor a = tensor(av).to(dt), b = tensor(bv).to(dt);
  auto wrap = [](int64_t v) { return static_cast<int64_t>(static_cast<T>(v)); };
  auto floor_div = [](int64_t x, int64_t y) {
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return q;
  };
  const auto add = (a + b).template to_vector<T>(), sub = (a - b).template to_vector<T>(),
             mul = (a * b).template to_vector<T>(), neg = (-a).template to_vector<T>(),
             sq = a.square().template to_vector<T>(), axpy = a.add(b, 3).template to_vector<T>();
  Tensor nz = where(b == 0, ones_like(b), b);
  const auto fdiv = a.div(nz, RoundingMode::Floor).template to_vector<T>(),
             tdiv = a.div(nz, RoundingMode::Trunc).template to_vector<T>();
  const auto sum = a.sum().item<int64_t>();
  const auto cs = a.cumsum(0).template to_vector<int64_t>();
  int64_t ref_sum = 0;
  const auto nzv = nz.template to_vector<T>();
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = size_t(i);
    const int64_t x = av[k], y = bv[k], z = nzv[k];
    ASSERT_EQ(add[k], wrap(x + y)) << i;
    ASSERT_EQ(sub[k], wrap(x - y)) << i;
    ASSERT_EQ(mul[k], wrap(x * y)) << i;
    ASSERT_EQ(neg[k], wrap(-x)) << i;
    ASSERT_EQ(sq[k], wrap(x * x)) << i;
    ASSERT_EQ(axpy[k], wrap(x + 3 * y)) << i;
    ASSERT_EQ(fdiv[k], wrap(floor_div(x, z))) << i;
    ASSERT_EQ(tdiv[k], wrap(x / z)) << i;
    ref_sum += x;
    ASSERT_EQ(cs[k], ref_sum) << i;  // cumsum and sum of integers are int64: no wrap
  }
  EXPECT_EQ(sum, ref_sum);
  // in-place forms keep the dtype and wrap the same way
  Tensor c = a.clone();
  c.add_(b).mul_(3);
  const auto cv = c.template to_vector<T>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(cv[size_t(i)], wrap(wrap(av[size_t(i)] + bv[size_t(i)]) * 3)) << i;
  // strided and transposed operands take the same paths
  Tensor m = a.view({20, 50}).t(), mb = b.view({50, 20});
  const auto mt = (m + mb).contiguous().template to_vector<T>();
  for (int64_t i = 0; i < 50; ++i)
    for (int64_t j = 0; j < 20; ++j)
      ASSERT_EQ(mt[size_t(i * 20 + j)], wrap(av[size_t(j * 50 + i)] + bv[size_t(i * 20 + j)]));
}

TEST(SmallIntDtypes, WraparoundAgainstNaive) {
  set_num_threads(1);
  check_wrap<int8_t>(kInt8);
  check_wrap<int16_t>(kInt16);
}

TEST(SmallIntDtypes, IntegerDivisionByZero) {
  for (ScalarType dt : {kInt8, kInt16}) {
    Tensor a = tensor({1, 2, 3}).to(dt), z = tensor({1, 0, 1}).to(dt);
    expect_error([&] { (void)a.div(z, RoundingMode::Floor); }, {"div", "ZeroDivisionError"});
    expect_error([&] { (void)a.div(z, RoundingMode::Trunc); }, {"div", "ZeroDivisionError"});
    expect_error([&] { (void)remainder(a, z); }, {"remainder", "ZeroDivisionError"});
    expect_error([&] { (void)fmod(a, z); }, {"fmod", "ZeroDivisionError"});
    // a Scalar divisor wraps to the dtype first: 256 is 0 as int8, 65536 as int16
    expect_error([&] { (void)a.div(dt == kInt8 ? 256 : 65536, RoundingMode::Floor); }, {"ZeroDivisionError"});
    // true division gives floats: no error
    EXPECT_TRUE(std::isinf((a / z).to_vector<float>()[1]));
  }
}

TEST(SmallIntDtypes, ScalarRangeChecks) {
  // Values from torch 2.15: full() checks the value against the dtype's range.
  EXPECT_EQ(full({1}, 127, kInt8).item<int8_t>(), 127);
  EXPECT_EQ(full({1}, -128, kInt8).item<int8_t>(), -128);
  EXPECT_EQ(full({1}, 127.9, kInt8).item<int8_t>(), 127);
  expect_error([] { (void)full({1}, 128, kInt8); }, {"out of range", "int8"});
  expect_error([] { (void)full({1}, -129, kInt8); }, {"out of range"});
  expect_error([] { (void)full({1}, -128.9, kInt8); }, {"out of range"});
  expect_error([] { (void)full({1}, 255, kInt8); }, {"out of range"});  // unlike uint8, no wrap
  EXPECT_EQ(full({1}, 32767, kInt16).item<int16_t>(), 32767);
  EXPECT_EQ(full({1}, -32768, kInt16).item<int16_t>(), -32768);
  expect_error([] { (void)full({1}, 32768, kInt16); }, {"out of range", "int16"});
  expect_error([] { (void)full({1}, std::nan(""), kInt16); }, {"out of range"});
  // clamp's integer bounds saturate to the dtype, a bound past it is an error
  Tensor a = tensor({-100, 0, 100}).to(kInt8);
  EXPECT_EQ(a.clamp(-1000, 1000).to_vector<int8_t>(), (std::vector<int8_t>{-100, 0, 100}));
  expect_error([&] { (void)a.clamp(200); }, {"clamp", "above the largest"});
  // random_ and randperm respect the range
  Tensor r = empty({200}, kInt8);
  r.random_(-128, 128);
  EXPECT_GE(r.amin().item<int64_t>(), -128);
  expect_error([&] { r.random_(-129, 0); }, {"random_", "out of bounds"});
  expect_error([] { (void)randperm(129, kInt8); }, {"randperm"});
  Tensor p = randperm(128, kInt8);
  EXPECT_EQ(p.to(kInt64).sum().item<int64_t>(), 127 * 128 / 2);
}

TEST(SmallIntDtypes, FloatOpsRefuseOrPromote) {
  Tensor a = tensor({1, 2}).to(kInt8);
  expect_error([&] { (void)a.mean(); }, {"mean"});
  EXPECT_EQ(a.exp().dtype(), kFloat);  // unary float ops give the default dtype
  EXPECT_EQ(a.to(kInt16).sqrt().dtype(), kFloat);
  EXPECT_EQ(a.sum().dtype(), kInt64);
  EXPECT_EQ(a.sum(0, false, kInt8).dtype(), kInt8);
}

TEST(SmallIntDtypes, MaxPoolAgainstFloat) {
  // PyTorch's CPU max pooling takes every integer dtype; the float32 result
  // of the same (exactly representable) values is the reference.
  namespace F = nn::functional;
  for (ScalarType dt : {kInt8, kInt16}) {
    Tensor x = (arange(2 * 3 * 6 * 5) * 37 % 255 - 128).to(dt).view({2, 3, 6, 5});
    Tensor want = F::max_pool2d(x.to(kFloat), 2);
    Tensor got = F::max_pool2d(x, 2);
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_TRUE(equal(got.to(kFloat), want)) << dt;
    auto [v, i] = F::max_pool2d_with_indices(x.contiguous(kChannelsLast), 3, 2, 1);
    auto [vw, iw] = F::max_pool2d_with_indices(x.to(kFloat), 3, 2, 1);
    EXPECT_TRUE(equal(v.to(kFloat), vw)) << dt;
    EXPECT_TRUE(equal(i, iw)) << dt;
  }
}

// ---- printing and the file formats ------------------------------------------------------

TEST(SmallIntDtypes, Printing) {
  // torch 2.15's repr, "torch." replaced by "brisk.".
  EXPECT_EQ(to_string(tensor({-128, 0, 127}).to(kInt8)), "tensor([-128,    0,  127], dtype=brisk.int8)");
  EXPECT_EQ(to_string(tensor({1, -300, 32767, -32768}).to(kInt16).view({2, 2})),
            "tensor([[     1,   -300],\n        [ 32767, -32768]], dtype=brisk.int16)");
  EXPECT_EQ(to_string(scalar_tensor(5, kInt8)), "tensor(5, dtype=brisk.int8)");
  EXPECT_EQ(to_string(empty({0}, kInt16)), "tensor([], dtype=brisk.int16)");
  EXPECT_EQ(scalar_tensor(-5, kInt8).item().to<int64_t>(), -5);
  EXPECT_EQ(scalar_tensor(-300, kInt16).item<int16_t>(), -300);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("brisk_small_int_" + std::to_string(::getpid()) + "_" + name))
      .string();
}
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(SmallIntDtypes, SafetensorsRoundTrip) {
  const std::string path = temp_path("a.safetensors");
  StateDict m{{"a", tensor({-128, -1, 0, 127}).to(kInt8)},
              {"b", tensor({-32768, 7, 32767}).to(kInt16).view({3, 1})},
              {"c", tensor({1.5, 2.5}, kFloat)}};
  save(m, path);
  const std::string bytes = slurp(path);
  EXPECT_NE(bytes.find("\"dtype\":\"I8\""), std::string::npos);
  EXPECT_NE(bytes.find("\"dtype\":\"I16\""), std::string::npos);
  auto back = load(path);
  ASSERT_EQ(back.size(), 3u);
  for (const auto& [k, t] : m) {
    EXPECT_EQ(back.at(k).dtype(), t.dtype()) << k;
    EXPECT_TRUE(equal(back.at(k), t)) << k;
  }
  std::remove(path.c_str());
}

TEST(SmallIntDtypes, NpyRoundTrip) {
  for (ScalarType dt : {kInt8, kInt16}) {
    const std::string path = temp_path(std::string(dtype_name(dt)) + ".npy");
    Tensor t = tensor({-5, 0, 100, -100, 7, 1}).to(dt).view({2, 3});
    data::save_npy(path, t);
    const std::string bytes = slurp(path);
    EXPECT_NE(bytes.find(dt == kInt8 ? "'|i1'" : "'<i2'"), std::string::npos) << bytes.substr(0, 80);
    Tensor back = data::load_npy(path);
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_TRUE(equal(back, t));
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace brisk
