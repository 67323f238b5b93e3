// Elementwise ops, table-driven: one row per op with a naive reference in
// double, run for every dtype the op supports over contiguous, transposed,
// strided, broadcast, 0-dim and zero-size inputs, in the functional,
// in-place, out= and Tensor-Scalar forms. Then the bad-input rules.
// Dtype support and result dtypes follow PyTorch 1.13 (checked with python3).
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/op_rows.h"
#include "test_util.h"

namespace brisk {
namespace {

using testing::close;
using testing::expect_error;

const ScalarType kAllTypes[] = {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kUInt8, kInt8, kInt16, kBool};
const std::vector<ScalarType> kAll(std::begin(kAllTypes), std::end(kAllTypes));
const std::vector<ScalarType> kNumeric = {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kUInt8, kInt8, kInt16};
const std::vector<ScalarType> kFloats = {kFloat, kDouble, kHalf, kBFloat16};
const std::vector<ScalarType> kIntegral = {kInt32, kInt64, kUInt8, kInt8, kInt16, kBool};

// ---- inputs ---------------------------------------------------------------------------

/// Value sets (the op rows' generator, tests/ops/op_rows.h): Any (mixed
/// signs, exact .5 ties included), Pos (> 0), Unit (inside (-1, 1)),
/// NonZero, Exp (small non-negative exponents), Special (Any plus nan, +-inf
/// and signed zeros for floats).
using testing::rows::Dom;
std::vector<double> gen(int64_t n, ScalarType dt, Dom dom, uint32_t seed) {
  return testing::rows::gen_values(n, dt, dom, seed);
}

enum class Layout { Contiguous, Transposed, Strided };

/// A tensor of `shape` (2-D for the non-contiguous layouts) holding values of dom.
Tensor make(std::vector<int64_t> shape, ScalarType dt, Dom dom, uint32_t seed, Layout layout = Layout::Contiguous) {
  if (layout == Layout::Transposed) {
    Tensor t = make({shape[1], shape[0]}, dt, dom, seed).t();
    EXPECT_FALSE(t.is_contiguous() && t.numel() > 1);
    return t;
  }
  if (layout == Layout::Strided) {
    Tensor t = make({shape[0], shape[1] * 2}, dt, dom, seed).slice(1, 0, std::nullopt, 2);
    EXPECT_FALSE(t.is_contiguous() && t.numel() > 1);
    return t;
  }
  return tensor(gen(multiply(shape), dt, dom, seed), shape, TensorOptions(dt));
}

/// A scalar of dt's kind from dom, already exactly representable in dt.
Scalar make_scalar(ScalarType dt, Dom dom, uint32_t seed) {
  const double v = tensor(gen(1, dt, dom, seed), TensorOptions(dt)).item<double>();
  if (dt == kBool) return Scalar(v != 0);
  if (is_floating_point(dt)) return Scalar(v);
  return Scalar(static_cast<int64_t>(v));
}

// ---- references --------------------------------------------------------------------------

/// What C++ does when the double result is stored in dt (integers wrap).
using testing::rows::store_as;

void check_result(const Tensor& got, const Tensor& want_double, ScalarType want_dtype, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  EXPECT_EQ(got.dtype(), want_dtype) << what;
  double rtol = 0, atol = 0;
  switch (want_dtype) {
    case kFloat: rtol = 2e-5, atol = 1e-5; break;
    case kDouble: rtol = 1e-12, atol = 1e-12; break;
    case kHalf: rtol = 2e-3, atol = 2e-3; break;
    case kBFloat16: rtol = 1.6e-2, atol = 1.6e-2; break;
    default: break;
  }
  EXPECT_TRUE(close(got, want_double, rtol, atol)) << what;
}

std::string label(const std::string& op, ScalarType dt, const std::string& form) {
  return op + " " + std::string(dtype_name(dt)) + " " + form;
}

/// Result dtype rules of the rows: the promoted input dtype, bool (comparisons,
/// predicates), or floating (integer inputs go to the default float dtype).
enum class Out { Same, Bool, Float };
ScalarType out_dtype(Out k, ScalarType in) {
  switch (k) {
    case Out::Bool: return kBool;
    case Out::Float: return is_floating_point(in) ? in : default_dtype();
    default: return in;
  }
}

// ---- binary table ----------------------------------------------------------------------

using BinFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using BinScalarFn = std::function<Tensor(const Tensor&, const Scalar&)>;
using BinInplaceFn = std::function<Tensor&(Tensor&, const Tensor&)>;
using BinInplaceScalarFn = std::function<Tensor&(Tensor&, const Scalar&)>;
using BinOutFn = std::function<Tensor&(Tensor&, const Tensor&, const Tensor&)>;

struct BinaryRow {
  std::string name;
  BinFn fn;
  BinScalarFn fn_scalar;
  BinInplaceFn inplace;
  BinInplaceScalarFn inplace_scalar;
  BinOutFn out;
  std::function<double(double, double)> ref;
  Out kind;
  std::vector<ScalarType> dtypes;
  Dom da = Dom::Any, db = Dom::Any;
};

#define BIN_FNS(name)                                                                      \
  [](const Tensor& a, const Tensor& b) { return brisk::name(a, b); },                     \
      [](const Tensor& a, const Scalar& b) { return brisk::name(a, b); },                 \
      [](Tensor& a, const Tensor& b) -> Tensor& { return a.name##_(b); },                 \
      [](Tensor& a, const Scalar& b) -> Tensor& { return a.name##_(b); },                 \
      [](Tensor& o, const Tensor& a, const Tensor& b) -> Tensor& { return brisk::name##_out(o, a, b); }
#define DIV_FNS(mode)                                                                          \
  [](const Tensor& a, const Tensor& b) { return brisk::div(a, b, mode); },                    \
      [](const Tensor& a, const Scalar& b) { return brisk::div(a, b, mode); },                \
      [](Tensor& a, const Tensor& b) -> Tensor& { return a.div_(b, mode); },                  \
      [](Tensor& a, const Scalar& b) -> Tensor& { return a.div_(b, mode); },                  \
      [](Tensor& o, const Tensor& a, const Tensor& b) -> Tensor& { return brisk::div_out(o, a, b, mode); }

using testing::rows::as_int;
using testing::rows::nan_max;
using testing::rows::nan_min;
using testing::rows::py_floor_div;
using testing::rows::py_remainder;

std::vector<BinaryRow> binary_rows() {
  const std::vector<ScalarType> no_bool = kNumeric;
  return {
      {"add", BIN_FNS(add), [](double a, double b) { return a + b; }, Out::Same, kAll},
      {"sub", BIN_FNS(sub), [](double a, double b) { return a - b; }, Out::Same, no_bool},
      {"mul", BIN_FNS(mul), [](double a, double b) { return a * b; }, Out::Same, kAll},
      {"div", DIV_FNS(RoundingMode::None), [](double a, double b) { return a / b; }, Out::Float, kAll, Dom::Any,
       Dom::NonZero},
      {"div_trunc", DIV_FNS(RoundingMode::Trunc), [](double a, double b) { return std::trunc(a / b); }, Out::Same,
       no_bool, Dom::Any, Dom::NonZero},
      {"div_floor", DIV_FNS(RoundingMode::Floor), py_floor_div, Out::Same, no_bool, Dom::Any, Dom::NonZero},
      {"remainder", BIN_FNS(remainder), py_remainder, Out::Same, no_bool, Dom::Any, Dom::NonZero},
      {"fmod", BIN_FNS(fmod), [](double a, double b) { return std::fmod(a, b); }, Out::Same, no_bool, Dom::Any,
       Dom::NonZero},
      {"pow", BIN_FNS(pow), [](double a, double b) { return std::pow(a, b); }, Out::Same, kFloats, Dom::Pos,
       Dom::Any},
      {"pow_int", BIN_FNS(pow), [](double a, double b) { return std::pow(a, b); }, Out::Same,
       {kInt32, kInt64, kUInt8, kInt8, kInt16}, Dom::Any, Dom::Exp},
      {"minimum", BIN_FNS(minimum), nan_min, Out::Same, kAll, Dom::Special, Dom::Special},
      {"maximum", BIN_FNS(maximum), nan_max, Out::Same, kAll, Dom::Special, Dom::Special},
      {"atan2", BIN_FNS(atan2), [](double a, double b) { return std::atan2(a, b); }, Out::Float, kAll},
      {"eq", BIN_FNS(eq), [](double a, double b) { return double(a == b); }, Out::Bool, kAll, Dom::Unit, Dom::Unit},
      {"ne", BIN_FNS(ne), [](double a, double b) { return double(a != b); }, Out::Bool, kAll, Dom::Unit, Dom::Unit},
      {"lt", BIN_FNS(lt), [](double a, double b) { return double(a < b); }, Out::Bool, kAll, Dom::Special},
      {"le", BIN_FNS(le), [](double a, double b) { return double(a <= b); }, Out::Bool, kAll, Dom::Unit, Dom::Unit},
      {"gt", BIN_FNS(gt), [](double a, double b) { return double(a > b); }, Out::Bool, kAll},
      {"ge", BIN_FNS(ge), [](double a, double b) { return double(a >= b); }, Out::Bool, kAll, Dom::Unit, Dom::Unit},
      {"logical_and", BIN_FNS(logical_and), [](double a, double b) { return double(a != 0 && b != 0); }, Out::Bool,
       kAll, Dom::Unit, Dom::Special},
      {"logical_or", BIN_FNS(logical_or), [](double a, double b) { return double(a != 0 || b != 0); }, Out::Bool,
       kAll, Dom::Unit, Dom::Unit},
      {"logical_xor", BIN_FNS(logical_xor), [](double a, double b) { return double((a != 0) != (b != 0)); },
       Out::Bool, kAll, Dom::Unit, Dom::Unit},
      {"bitwise_and", BIN_FNS(bitwise_and), [](double a, double b) { return double(as_int(a) & as_int(b)); },
       Out::Same, kIntegral},
      {"bitwise_or", BIN_FNS(bitwise_or), [](double a, double b) { return double(as_int(a) | as_int(b)); },
       Out::Same, kIntegral},
      {"bitwise_xor", BIN_FNS(bitwise_xor), [](double a, double b) { return double(as_int(a) ^ as_int(b)); },
       Out::Same, kIntegral},
      // Counts in [0, 4] (past-the-width counts: tests/ops/test_new_ops.cpp).
      {"bitwise_left_shift", BIN_FNS(bitwise_left_shift),
       [](double a, double b) { return double(int64_t(uint64_t(as_int(a)) << as_int(b))); }, Out::Same,
       {kUInt8, kInt8, kInt16, kInt32, kInt64}, Dom::Any, Dom::Exp},
      {"bitwise_right_shift", BIN_FNS(bitwise_right_shift),
       [](double a, double b) { return double(as_int(a) >> as_int(b)); }, Out::Same,
       {kUInt8, kInt8, kInt16, kInt32, kInt64}, Dom::Any, Dom::Exp},
  };
}

/// Expected result of ref over the broadcast of a and b, stored in `dt`, as float64.
Tensor expected2(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& ref, ScalarType dt) {
  DimVector shape = broadcast_shapes(a.sizes(), b.sizes());
  auto av = a.expand(shape).to_vector<double>(), bv = b.expand(shape).to_vector<double>();
  std::vector<double> r(av.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = store_as(ref(av[i], bv[i]), dt);
  return tensor(r, shape, kDouble);
}
Tensor expected2(const Tensor& a, const Scalar& b, const std::function<double(double, double)>& ref, ScalarType dt) {
  auto av = a.to_vector<double>();
  std::vector<double> r(av.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = store_as(ref(av[i], b.to_double()), dt);
  return tensor(r, a.sizes(), kDouble);
}

class Binary : public ::testing::TestWithParam<BinaryRow> {};

TEST_P(Binary, AllFormsAndLayouts) {
  const BinaryRow& row = GetParam();
  for (ScalarType dt : row.dtypes) {
    const ScalarType odt = out_dtype(row.kind, dt);
    auto check = [&](const Tensor& a, const Tensor& b, const std::string& form) {
      Tensor got = row.fn(a, b);
      check_result(got, expected2(a, b, row.ref, odt), odt, label(row.name, dt, form));
      // inputs are never written
      return got;
    };
    // same shapes, broadcasting, non-contiguous operands, 0-dim and empty ones
    check(make({3, 4}, dt, row.da, 1), make({3, 4}, dt, row.db, 2), "contiguous");
    check(make({3, 4}, dt, row.da, 3, Layout::Transposed), make({4}, dt, row.db, 4), "transposed+row");
    check(make({3, 4}, dt, row.da, 5, Layout::Strided), make({3, 1}, dt, row.db, 6), "strided+column");
    check(make({3, 1}, dt, row.da, 7), make({4}, dt, row.db, 8, Layout::Contiguous), "column+row");
    check(make({2, 3}, dt, row.da, 9, Layout::Transposed), make({2, 3}, dt, row.db, 10, Layout::Transposed),
          "both transposed");
    check(make({5}, dt, row.da, 11), make({}, dt, row.db, 12), "0-dim other");
    check(make({}, dt, row.da, 13), make({}, dt, row.db, 14), "0-dim both");
    Tensor empty_r = check(make({0, 4}, dt, row.da, 15), make({4}, dt, row.db, 16), "zero-size");
    EXPECT_EQ(empty_r.sizes().vec(), (std::vector<int64_t>{0, 4}));
    check(make({3, 0}, dt, row.da, 15), make({3, 1}, dt, row.db, 16), "zero-size 2");

    // Tensor-Scalar
    const Tensor a = make({3, 4}, dt, row.da, 17);
    const Scalar s = make_scalar(dt, row.db, 18);
    check_result(row.fn_scalar(a, s), expected2(a, s, row.ref, odt), odt, label(row.name, dt, "scalar"));

    // in-place: allowed when the result casts to the tensor's dtype
    const Tensor b = make({4}, dt, row.db, 19);
    const Tensor want = row.fn(a, b);
    if (can_cast(odt, dt)) {
      Tensor x = a.clone();
      void* p = x.data_ptr();
      Tensor& r = row.inplace(x, b);
      EXPECT_TRUE(r.is_same(x));
      EXPECT_EQ(x.data_ptr(), p);
      EXPECT_TRUE(close(x, want.to(dt), 0, 0)) << label(row.name, dt, "in-place");
      Tensor xt = a.t().contiguous().t();  // non-contiguous self
      ASSERT_FALSE(xt.is_contiguous());
      row.inplace(xt, b);
      EXPECT_TRUE(close(xt, want.to(dt), 0, 0)) << label(row.name, dt, "in-place transposed");
      Tensor y = a.clone();
      row.inplace_scalar(y, s);
      EXPECT_TRUE(close(y, row.fn_scalar(a, s).to(dt), 0, 0)) << label(row.name, dt, "in-place scalar");
    } else {
      Tensor x = a.clone();
      expect_error([&] { row.inplace(x, b); }, {"can't be cast to the desired output type"});
      EXPECT_TRUE(x.equal(a)) << label(row.name, dt, "failed in-place wrote");
    }

    // out=: an empty out is resized; a strided out is written through its strides
    Tensor out = empty({0}, odt);
    Tensor& ro = row.out(out, a, b);
    EXPECT_TRUE(ro.is_same(out));
    EXPECT_TRUE(close(out, want, 0, 0)) << label(row.name, dt, "out resized");
    Tensor out_t = empty({4, 3}, odt).t();
    row.out(out_t, a, b);
    EXPECT_TRUE(close(out_t, want, 0, 0)) << label(row.name, dt, "out transposed");
    if (odt != kDouble && can_cast(odt, kDouble)) {
      Tensor out_d = empty({3, 4}, kDouble);
      row.out(out_d, a, b);
      EXPECT_TRUE(close(out_d, want.to(kDouble), 0, 0)) << label(row.name, dt, "out float64");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Binary, ::testing::ValuesIn(binary_rows()),
                         [](const ::testing::TestParamInfo<BinaryRow>& i) { return i.param.name; });

// The unary and ternary tables moved to the op test rows (tests/ops/op_rows.h,
// tests/ops/test_op_rows.cpp), which run every form and layout they ran and
// more (broadcasting of every operand, gradients, CUDA and libtorch legs).
// The binary table stays: its Tensor-Scalar forms and float64 out= are not
// in the rows.

using testing::rows::sigmoid_ref;

Tensor expected1(const Tensor& a, const std::function<double(double)>& ref, ScalarType dt) {
  auto av = a.to_vector<double>();
  std::vector<double> r(av.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = store_as(ref(av[i]), dt);
  return tensor(r, a.sizes(), kDouble);
}

// ---- ops with scalar parameters -------------------------------------------------------------

// A negative-zero scalar operand keeps its sign in every lane: the vector
// body once broadcast it as +0.0 (the tail did not), so the first 16
// elements disagreed with the last 4 and with PyTorch.
TEST(SignedZeroScalars, BroadcastExactlyInTheVectorBody) {
  set_num_threads(1);
  for (ScalarType dt : {kFloat, kDouble}) {
    Tensor z = zeros({20}, dt), one = ones({20}, dt);
    Tensor a = atan2(z, scalar_tensor(-0.0, dt));
    const double pi = dt == kFloat ? static_cast<double>(static_cast<float>(M_PI)) : M_PI;
    for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(a[i].item<double>(), pi) << dtype_name(dt) << " " << i;
    Tensor m = one * -0.0;  // 1 * -0 = -0
    Tensor p = (-z) + -0.0;  // -0 + -0 = -0
    for (int64_t i = 0; i < 20; ++i) {
      EXPECT_TRUE(std::signbit(m[i].item<double>())) << dtype_name(dt) << " " << i;
      EXPECT_TRUE(std::signbit(p[i].item<double>())) << dtype_name(dt) << " " << i;
    }
  }
}

TEST(Clamp, ScalarBounds) {
  for (ScalarType dt : kNumeric) {
    const Tensor x = make({3, 5}, dt, Dom::Any, 1, Layout::Transposed);
    const bool fl = is_floating_point(dt);
    const Scalar lo = fl ? Scalar(-1.5) : Scalar(1), hi = fl ? Scalar(2.5) : Scalar(5);
    auto ref_both = [&](double v) { return std::min(std::max(v, lo.to_double()), hi.to_double()); };
    auto ref_lo = [&](double v) { return std::max(v, lo.to_double()); };
    auto ref_hi = [&](double v) { return std::min(v, hi.to_double()); };
    check_result(x.clamp(lo, hi), expected1(x, ref_both, dt), dt, label("clamp", dt, "both"));
    check_result(x.clamp_min(lo), expected1(x, ref_lo, dt), dt, label("clamp", dt, "min"));
    check_result(x.clamp_max(hi), expected1(x, ref_hi, dt), dt, label("clamp", dt, "max"));
    check_result(x.clamp(std::nullopt, hi), expected1(x, ref_hi, dt), dt, label("clamp", dt, "nullopt min"));
    Tensor y = x.clone();
    EXPECT_TRUE(y.clamp_(lo, hi).is_same(y));
    check_result(y, expected1(x, ref_both, dt), dt, label("clamp_", dt, "in-place"));
    Tensor out = empty({0}, dt);
    clamp_out(out, x, lo, hi);
    check_result(out, expected1(x, ref_both, dt), dt, label("clamp_out", dt, "out"));
    // min > max: everything becomes max, as in torch
    check_result(x.clamp(hi, lo), expected1(x, [&](double) { return lo.to_double(); }, dt), dt,
                 label("clamp", dt, "min>max"));
  }
  // float bounds promote an integer tensor (torch: float32), and cannot be written in place
  Tensor i = tensor({1, -2, 3});
  Tensor f = i.clamp(0.5, 2.5);
  EXPECT_EQ(f.dtype(), kFloat);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1, 0.5f, 2.5f}));
  expect_error([&] { i.clamp_(0.5); },
               {"[clamp_]", "result type float32 can't be cast to the desired output type int64"});
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(tensor({true, false}).clamp(0, 1).dtype(), kInt64);
  expect_error([&] { i.clamp(std::nullopt, std::nullopt); }, {"[clamp]", "at least one of 'min' or 'max'"});
  // nan propagates from the input and from the bounds (torch)
  Tensor n = tensor({double(NAN), 1.0, 3.0}).clamp(0, 2);
  EXPECT_TRUE(std::isnan(n[0].item<double>()));
  EXPECT_EQ(n[2].item<double>(), 2.0);
  Tensor nb = tensor({0.5, 1.0}).clamp(double(NAN), 2);
  EXPECT_TRUE(std::isnan(nb[0].item<double>()));
  EXPECT_TRUE(std::isnan(nb[1].item<double>()));
  // tensor bounds follow promotion too: torch.clamp(float, float, int64) -> float32
  EXPECT_EQ(clamp(tensor({1.f, 5.f, -3.f}), tensor({0.f, 0.f, 0.f}), tensor({2, 2, 2})).to_vector<float>(),
            (std::vector<float>{1, 2, 0}));
}

TEST(Where, ScalarsAndPromotion) {
  Tensor c = tensor({true, false, true});
  Tensor w = where(c, tensor({1, 2, 3}), 2.5);
  EXPECT_EQ(w.dtype(), kFloat);  // torch: float32
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1, 2.5f, 3}));
  Tensor w32 = where(c, tensor({1, 2, 3}, kInt32), 5);
  EXPECT_EQ(w32.dtype(), kInt32);
  EXPECT_EQ(w32.to_vector<int32_t>(), (std::vector<int32_t>{1, 5, 3}));
  Tensor ws = where(c, 1, 2.5);
  EXPECT_EQ(ws.dtype(), kFloat);
  EXPECT_EQ(ws.to_vector<float>(), (std::vector<float>{1, 2.5f, 1}));
  Tensor wl = where(c, -1.0, tensor({7.0, 8.0, 9.0}, kDouble));
  EXPECT_EQ(wl.dtype(), kDouble);
  EXPECT_EQ(wl.to_vector<double>(), (std::vector<double>{-1, 8, -1}));
  // a broadcast condition
  Tensor wb = where(tensor({true, false}).view({2, 1}), ones({2, 3}), zeros({3}));
  EXPECT_EQ(wb.to_vector<float>(), (std::vector<float>{1, 1, 1, 0, 0, 0}));
  // uint8 conditions work (deprecated in torch), others are refused
  EXPECT_EQ(where(tensor({1, 0}, kUInt8), 1, 2).to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  expect_error([] { where(tensor({1.f}), 1, 2); }, {"[where]", "expected condition to be a boolean tensor", "float32"});
  expect_error([] { where(tensor({true, false}), ones({3}), 0); }, {"[where]", "cannot be broadcast"});
}

TEST(MaskedFill, AllDtypes) {
  for (ScalarType dt : kAll) {
    const Tensor x = make({3, 4}, dt, Dom::Any, 1, Layout::Transposed);
    const Tensor mask = make({4}, kBool, Dom::Any, 2);
    const Scalar v = dt == kBool ? Scalar(true) : is_floating_point(dt) ? Scalar(-2.5) : Scalar(7);
    auto xv = x.to_vector<double>();
    auto mv = mask.expand({3, 4}).to_vector<double>();
    std::vector<double> want(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) want[i] = mv[i] != 0 ? v.to_double() : xv[i];
    Tensor wt = tensor(want, {3, 4}, kDouble);
    Tensor r = x.masked_fill(mask, v);
    check_result(r, wt, dt, label("masked_fill", dt, "broadcast mask"));
    EXPECT_FALSE(r.is_alias_of(x));
    Tensor y = x.clone();
    EXPECT_TRUE(y.masked_fill_(mask, v).is_same(y));
    check_result(y, wt, dt, label("masked_fill_", dt, "in-place"));
  }
  // a float value into an integer tensor truncates (torch: [2, -2, 2])
  Tensor i = tensor({1, -2, 3});
  i.masked_fill_(tensor({true, false, true}), 2.7);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, -2, 2}));
  Tensor z = zeros({3});
  expect_error([&] { z.masked_fill_(ones({2, 3}, kBool), 1); },
               {"[masked_fill_]", "output with shape [3] doesn't match the broadcast shape [2, 3]"});
  expect_error([&] { z.masked_fill_(ones({3}), 1); }, {"[masked_fill_]", "expected a boolean mask"});
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 0, 0}));
}

TEST(Softplus, ThresholdAndBeta) {
  // torch.nn.functional.softplus(t([-30., 0., 10., 25.]), beta=2, threshold=20)
  Tensor r = softplus(tensor({-30.f, 0.f, 10.f, 25.f}), 2, 20);
  EXPECT_TRUE(close(r, tensor({4.3783e-27, 3.4657e-01, 1.0000e+01, 2.5000e+01}), 1e-4, 0));
  expect_error([] { softplus(tensor({1, 2})); }, {"[softplus]", "floating point"});
  expect_error([] { gelu(tensor({1.f}), "fast"); }, {"[gelu]", "approximate", "'fast'"});
  expect_error([] { gelu(tensor({1, 2})); }, {"[gelu]", "floating point"});
}

// ---- known values from PyTorch ---------------------------------------------------------------

TEST(KnownValues, IntegerDivisionAndModulo) {
  Tensor a = tensor({-7, 7, -7, 7}), b = tensor({3, -3, -3, 3});
  EXPECT_EQ(remainder(a, b).to_vector<int64_t>(), (std::vector<int64_t>{2, -2, -1, 1}));
  EXPECT_EQ(fmod(a, b).to_vector<int64_t>(), (std::vector<int64_t>{-1, 1, -1, 1}));
  Tensor c = tensor({2, -2, -2, 2});
  EXPECT_EQ(div(a, c, RoundingMode::Floor).to_vector<int64_t>(), (std::vector<int64_t>{-4, -4, 3, 3}));
  EXPECT_EQ(div(a, c, RoundingMode::Trunc).to_vector<int64_t>(), (std::vector<int64_t>{-3, -3, 3, 3}));
  EXPECT_EQ(div(a, c).to_vector<float>(), (std::vector<float>{-3.5f, -3.5f, 3.5f, 3.5f}));
  EXPECT_EQ(remainder(tensor({-7.f, 7.f, -7.f, 7.f}), tensor({3.f, -3.f, -3.f, 3.f})).to_vector<float>(),
            (std::vector<float>{2, -2, -1, 1}));
  // scalar first: torch.remainder(5, t([3, -3])) = [2, -1]; 1 / int tensor is float
  EXPECT_EQ((Scalar(1) / tensor({2, 4})).to_vector<float>(), (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ((Scalar(10) - tensor({3, 4})).to_vector<int64_t>(), (std::vector<int64_t>{7, 6}));
  EXPECT_EQ(rsub(tensor({3, 4}), 10, 2).to_vector<int64_t>(), (std::vector<int64_t>{4, 2}));
  // true division by zero is inf/nan, not an error
  Tensor q = div(tensor({1, 0, -1}), tensor({0, 0, 0}));
  EXPECT_EQ(q[0].item<float>(), INFINITY);
  EXPECT_TRUE(std::isnan(q[1].item<float>()));
  EXPECT_EQ(q[2].item<float>(), -INFINITY);
  // float16 division rounds once (torch: [0.3333, 0.6665])
  EXPECT_EQ(tensor({1., 2.}, kHalf).div(3).to_vector<float>(), (std::vector<float>{0.333251953125f, 0.66650390625f}));
}

TEST(KnownValues, PowRules) {
  Tensor i = tensor({1, -2, 3});
  EXPECT_EQ(pow(i, tensor({-1, -1, -1})).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0}));  // torch
  EXPECT_EQ(pow(i, 2).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 9}));
  Tensor h = pow(i, 0.5);
  EXPECT_EQ(h.dtype(), kFloat);
  EXPECT_TRUE(std::isnan(h[1].item<float>()));
  EXPECT_EQ(pow(2, i).to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 8}));
  EXPECT_EQ(pow(2.5, i).dtype(), kFloat);
  EXPECT_TRUE(close(pow(2.5, i), tensor({2.5, 0.16, 15.625})));
  expect_error([&] { pow(i, -1); }, {"[pow]", "Integers to negative integer powers are not allowed"});
  expect_error([&] { pow(tensor({true}), tensor({true})); }, {"[pow]", "bool"});
}

TEST(KnownValues, RoundingAndSpecials) {
  // round half to even, like torch.round
  EXPECT_EQ(tensor({0.5f, 1.5f, 2.5f, -0.5f, -1.5f}).round().to_vector<float>(),
            (std::vector<float>{0, 2, 2, -0.f, -2}));
  EXPECT_TRUE(std::signbit(tensor({-0.5f}).round().item<float>()));
  Tensor m = maximum(tensor({double(NAN), 1.0}), tensor({1.0, double(NAN)}));
  EXPECT_TRUE(std::isnan(m[0].item<double>()) && std::isnan(m[1].item<double>()));
  EXPECT_EQ(tensor({0, 5}, kUInt8).bitwise_not().to_vector<uint8_t>(), (std::vector<uint8_t>{255, 250}));
  EXPECT_EQ(tensor({0, 5}, kUInt8).neg().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 251}));
  EXPECT_EQ(tensor({true, false}).bitwise_not().to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ((tensor({5, 6}) & 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((tensor({true, false}) & true).dtype(), kBool);
  EXPECT_EQ(bitwise_and(tensor({true, false}), tensor({3, 3})).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(logical_and(tensor({1.f, 0.f}), tensor({3, 3})).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(tensor({true, false}).exp().dtype(), kFloat);
  // comparisons written in place keep the tensor's dtype (torch: eq_ on float gives 1., 0.)
  Tensor f = ones({3});
  f.eq_(tensor({1.f, 0.f, 1.f}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1, 0, 1}));
  Tensor l = tensor({1, 2, 3});
  l.lt_(2);
  EXPECT_EQ(l.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0}));
  Tensor ln = tensor({1.f, 0.f, 2.f});
  ln.logical_not_();
  EXPECT_EQ(ln.to_vector<float>(), (std::vector<float>{0, 1, 0}));
  // gelu(tanh) known values (torch: [0.8412, -0.1543])
  EXPECT_TRUE(close(tensor({1.f, -0.5f}).gelu("tanh"), tensor({0.8412, -0.1543}), 1e-3, 1e-4));
}

TEST(Promotion, MixedDtypeOperands) {
  Tensor i32 = tensor({1, 2}, kInt32), f16 = tensor({1.5, 2.5}, kHalf), bf = tensor({1.5, 2.5}, kBFloat16);
  Tensor u8 = tensor({250, 3}, kUInt8);
  EXPECT_EQ((i32 + 1.5).dtype(), kFloat);
  EXPECT_EQ((i32 + 1.5).to_vector<float>(), (std::vector<float>{2.5f, 3.5f}));
  EXPECT_EQ((f16 * 2.0).dtype(), kHalf);
  EXPECT_EQ((f16 + bf).dtype(), kFloat);
  EXPECT_EQ((f16 + bf).to_vector<float>(), (std::vector<float>{3, 5}));
  EXPECT_EQ((i32 + scalar_tensor(5)).dtype(), kInt32);
  EXPECT_EQ((u8 + i32).dtype(), kInt32);
  EXPECT_EQ((u8 + i32).to_vector<int32_t>(), (std::vector<int32_t>{251, 5}));
  EXPECT_EQ((u8 + 10).to_vector<uint8_t>(), (std::vector<uint8_t>{4, 13}));  // wraps like torch
  EXPECT_EQ((tensor({true, false}) + 1).dtype(), kInt64);
  EXPECT_EQ((tensor({true, false}) + tensor({true, true})).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ((tensor({1, 2}) * tensor({true, false})).dtype(), kInt64);
  EXPECT_EQ(tensor({1, 2}).eq(tensor({1.f, 3.f})).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ((i32 > 1.5).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(atan2(tensor({1, 1}), tensor({1, -1})).dtype(), kFloat);
  // in place: the result is cast to self's dtype when allowed
  Tensor d = tensor({1.0, 2.0}, kDouble);
  d.add_(tensor({1, 2}, kInt32));
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{2, 4}));
  Tensor l = tensor({1, 2});
  l.mul_(tensor({true, false}));
  EXPECT_EQ(l.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  Tensor h = tensor({1.0, 2.0}, kHalf);
  h.add_(tensor({0.5f, 0.5f}));  // float32 other, float16 self: computed in float32, stored as float16
  EXPECT_EQ(h.dtype(), kHalf);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1.5f, 2.5f}));
  // lerp wants matching dtypes, like torch
  expect_error([] { lerp(tensor({1.f}), tensor({1.0}, kDouble), 0.5); },
               {"[lerp]", "expected dtype float32 for `end` but got dtype float64"});
  expect_error([] { lerp(tensor({1}), tensor({1}), 0.5); }, {"[lerp]", "floating point"});
  expect_error([] { addcdiv(tensor({1}), tensor({1}), tensor({1})); }, {"[addcdiv]", "integer division"});
  // addcmul with an int tensor and a float value truncates the value (torch: [1, -2, 3])
  Tensor ai = tensor({1, -2, 3});
  EXPECT_EQ(addcmul(ai, ai, ai, 0.5).to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
}

// ---- large inputs (several threads) ----------------------------------------------------------

TEST(Large, ThreadedMatchesReference) {
  const int64_t n = 200003;
  Tensor a = make({n}, kFloat, Dom::Any, 1), b = make({n}, kFloat, Dom::NonZero, 2);
  check_result(a + b, expected2(a, b, [](double x, double y) { return x + y; }, kFloat), kFloat, "large add");
  check_result(a / b, expected2(a, b, [](double x, double y) { return x / y; }, kFloat), kFloat, "large div");
  check_result(a.exp(), expected1(a, [](double x) { return std::exp(x); }, kFloat), kFloat, "large exp");
  check_result(a.lt(b), expected2(a, b, [](double x, double y) { return double(x < y); }, kBool), kBool, "large lt");
  check_result(where(a.gt(0), a, b), expected2(a, b, [](double x, double y) { return x > 0 ? x : y; }, kFloat),
               kFloat, "large where");
  Tensor ah = a.to(kHalf);
  check_result(ah * 2.0, expected1(ah, [](double x) { return 2 * x; }, kHalf), kHalf, "large half mul");
  // a large transposed operand and broadcast row
  Tensor m = make({400, 501}, kDouble, Dom::Any, 3, Layout::Transposed), r = make({501}, kDouble, Dom::Any, 4);
  check_result(m - r, expected2(m, r, [](double x, double y) { return x - y; }, kDouble), kDouble,
               "large transposed sub");
  Tensor mi = make({400, 501}, kInt32, Dom::Any, 5, Layout::Strided);
  check_result(mi * 3, expected1(mi, [](double x) { return 3 * x; }, kInt32), kInt32, "large strided int mul");
  // in place on a large tensor
  Tensor x = a.clone();
  x.mul_(b);
  check_result(x, expected2(a, b, [](double p, double q) { return p * q; }, kFloat), kFloat, "large mul_");
  Tensor cl = make({8, 16, 40, 40}, kFloat, Dom::Any, 6).contiguous(kChannelsLast);
  Tensor cr = cl.sigmoid();
  EXPECT_TRUE(cr.is_contiguous(kChannelsLast));
  check_result(cr, expected1(cl, sigmoid_ref, kFloat), kFloat, "large channels_last sigmoid");
}

// Note [Prefetching in the eager loops]: runs of kPrefetchMin (65536)
// elements or more walk their contiguous loops in prefetching spans; the
// values must be those of the plain loop that shorter runs take, bit for
// bit: every op below on 3 * 65536 + 37 elements (one and two threads)
// against the same op on contiguous pieces of 4096 (a multiple of every
// vector length, so the vector kernels form the same vectors).
TEST(Large, PrefetchedRunsMatchShortRuns) {
  const int64_t n = 3 * 65536 + 37, piece = 4096;
  struct Case {
    const char* name;
    ScalarType dt;
    std::function<Tensor(const Tensor&, const Tensor&)> f;
  };
  const std::vector<Case> cases = {
      {"add", kFloat, [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"mul scalar", kFloat, [](const Tensor& a, const Tensor&) { return a * 2.5; }},
      {"scalar sub", kFloat, [](const Tensor& a, const Tensor&) { return sub(full({}, 2.5), a); }},
      {"erf", kFloat, [](const Tensor& a, const Tensor&) { return a.erf(); }},
      {"exp double", kDouble, [](const Tensor& a, const Tensor&) { return a.exp(); }},
      {"atan2", kFloat, [](const Tensor& a, const Tensor& b) { return atan2(a, b); }},
      {"pow scalar", kDouble, [](const Tensor& a, const Tensor&) { return a.abs().pow(2.5); }},
      {"div double", kDouble, [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"mul half", kHalf, [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"tanh bfloat16", kBFloat16, [](const Tensor& a, const Tensor&) { return a.tanh(); }},
      {"add int32", kInt32, [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"lt", kFloat, [](const Tensor& a, const Tensor& b) { return a.lt(b); }},
      {"mul_ in place", kFloat, [](const Tensor& a, const Tensor& b) { return a.clone().mul_(b); }},
      {"erf_ in place", kFloat, [](const Tensor& a, const Tensor&) { return a.clone().erf_(); }},
  };
  for (const Case& c : cases) {
    const Tensor a = make({n}, c.dt, Dom::Any, 11), b = make({n}, c.dt, Dom::NonZero, 12);
    set_num_threads(1);
    std::vector<Tensor> parts;
    for (int64_t i = 0; i < n; i += piece) {
      const int64_t e = std::min(n, i + piece);
      parts.push_back(c.f(a.slice(0, i, e), b.slice(0, i, e)));
    }
    const Tensor want = cat(parts, 0);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      const Tensor got = c.f(a, b);
      ASSERT_EQ(got.dtype(), want.dtype()) << c.name;
      ASSERT_EQ(got.numel(), n) << c.name;
      EXPECT_EQ(std::memcmp(got.data_ptr(), want.data_ptr(), n * element_size(got.dtype())), 0)
          << c.name << " on " << threads << " threads";
    }
  }
  set_num_threads(1);
}

// Casts between float32 and bfloat16 large enough for the streaming-store
// path (Note [Streaming converting copies]: 16 MB of output or more) give,
// bit for bit, what the scalar conversion gives: every float32 bit pattern
// class (NaNs of both signs and any payload, infinities, subnormals, ties,
// values that round up to infinity), at unaligned destinations and on one
// and two threads.
TEST(Large, StreamedBFloat16CastsMatchScalar) {
  const int64_t n = (int64_t(16) << 20) / 2 + 4099;  // bfloat16 elements: just over the threshold
  std::vector<uint32_t> bits(static_cast<size_t>(n));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (auto& b : bits) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    b = static_cast<uint32_t>(state >> 32);
  }
  const uint32_t specials[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fbfffffu,
                               0x00000001u, 0x807fffffu, 0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x7f7fffffu,
                               0xff7fffffu, 0x00000000u, 0x80000000u, 0x7f7f8000u};
  for (size_t i = 0; i < std::size(specials); ++i) {
    bits[i] = specials[i];
    bits[bits.size() - 1 - i] = specials[i];
    bits[bits.size() / 2 + i] = specials[i];
  }
  Tensor f = from_blob(bits.data(), {n}, kFloat);
  const int saved_threads = get_num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (int64_t off : {0, 1, 5}) {  // destination offsets in elements: aligned, 2-byte, 10-byte
      Tensor dst = empty({n + off}, kBFloat16).narrow(0, off, n);
      dst.copy_(f);
      const uint16_t* b = static_cast<const uint16_t*>(dst.data_ptr());
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, &bits[static_cast<size_t>(i)], 4);
        if (b[i] != BFloat16(v).x && bad++ < 5)
          ADD_FAILURE() << "float -> bfloat16 at " << i << " of 0x" << std::hex << bits[static_cast<size_t>(i)]
                        << ": 0x" << b[i] << " instead of 0x" << BFloat16(v).x;
      }
      EXPECT_EQ(bad, 0) << threads << " threads, offset " << off;
      Tensor back = empty({n + off}, kFloat).narrow(0, off, n);
      back.copy_(dst);
      const uint32_t* w = static_cast<const uint32_t*>(back.data_ptr());
      bad = 0;
      for (int64_t i = 0; i < n; ++i)
        if (w[i] != uint32_t(b[i]) << 16 && bad++ < 5)
          ADD_FAILURE() << "bfloat16 -> float at " << i << ": 0x" << std::hex << w[i];
      EXPECT_EQ(bad, 0) << threads << " threads, offset " << off;
    }
  }
  set_num_threads(saved_threads);
}

// ---- no allocation for in-place ops with scalars ------------------------------------------------

TEST(Allocation, InPlaceScalarOpsAllocateNothing) {
  Tensor x = ones({64, 64});
  Tensor y = ones({64, 64});
  Tensor i = ones({100}, kInt32);
  x.add_(1);  // warm up
  const int64_t before = cpu::memory_stats().num_allocs;
  x.add_(1);
  x.sub_(0.5);
  x.mul_(2.5);
  x.div_(2);
  x.add_(y, 2);
  x.clamp_(0, 10);
  x.relu_();
  x.exp_();
  x.fill_(3);
  x.pow_(2);
  i.add_(3);
  i.bitwise_and_(7);
  i.remainder_(4);
  x.add_(y.select(0, 1));  // broadcast in place
  EXPECT_EQ(cpu::memory_stats().num_allocs, before);
  EXPECT_EQ(x.select(0, 0).select(0, 0).item<float>(), 10.f);
}

// ---- bad inputs --------------------------------------------------------------------------------

TEST(Errors, BroadcastMismatch) {
  Tensor a = ones({2, 3});
  expect_error([&] { add(a, ones({4})); }, {"[add] shapes [2, 3] and [4] cannot be broadcast"});
  expect_error([&] { mul(a, ones({3, 2})); }, {"[mul]", "shapes [2, 3] and [3, 2] cannot be broadcast"});
  expect_error([&] { a.eq(ones({4})); }, {"[eq]", "cannot be broadcast"});
  expect_error([&] { a.exp().add(ones({2, 2})); }, {"[add]"});
  Tensor out = empty({0});
  expect_error([&] { add_out(out, a, ones({4})); }, {"[add_out]", "cannot be broadcast"});
  EXPECT_EQ(out.numel(), 0);
}

TEST(Errors, InPlaceShapeAndDtype) {
  Tensor x = tensor({1.f, 2.f, 3.f});
  expect_error([&] { x.add_(ones({2, 3})); },
               {"[add_]", "output with shape [3] doesn't match the broadcast shape [2, 3]"});
  expect_error([&] { x.mul_(ones({2, 1})); },
               {"[mul_]", "output with shape [3] doesn't match the broadcast shape [2, 3]"});
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  Tensor i = tensor({1, 2, 3});
  const std::string cast = "result type float32 can't be cast to the desired output type int64";
  expect_error([&] { i.add_(ones({3})); }, {"[add_]", cast});
  expect_error([&] { i.add_(1.5); }, {"[add_]", cast});
  expect_error([&] { i.div_(2); }, {"[div_]", cast});
  expect_error([&] { i.exp_(); }, {"[exp_]", cast});
  expect_error([&] { i.atan2_(tensor({1, 1, 1})); }, {"[atan2_]", cast});
  expect_error([&] { i.mul_(tensor({0.5})); }, {"[mul_]", cast});
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  Tensor b = tensor({true, false});
  expect_error([&] { b.add_(1); }, {"[add_]", "result type int64 can't be cast to the desired output type bool"});
  // out= with the wrong shape or a dtype the result can't be cast to
  Tensor o = empty({3});
  expect_error([&] { add_out(o, ones({2, 3}), ones({3})); },
               {"[add_out]", "output with shape [3] doesn't match the broadcast shape [2, 3]"});
  Tensor oi = empty({2}, kInt64);
  expect_error([&] { add_out(oi, ones({2}), ones({2})); },
               {"[add_out]", "float32 can't be cast to the desired output type int64"});
  Tensor ob = empty({2}, kInt32);
  eq_out(ob, tensor({1, 2}), tensor({1, 1}));  // bool casts to int32 (torch)
  EXPECT_EQ(ob.to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));
  // alpha must be integral for integral tensors (torch)
  expect_error([&] { i.add_(tensor({1, 1, 1}), 1.5); }, {"[add_]", "alpha must not be a floating point number"});
  expect_error([&] { add(i, i, 0.5); }, {"[add]", "alpha"});
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
}

TEST(Errors, OverlappingWrites) {
  const std::string partial =
      "some elements of the input tensor and the written-to tensor refer to a single memory location";
  const std::string internal = "more than one element of the written-to tensor refers to a single memory location";
  Tensor x = arange(6.0).view({2, 3});
  expect_error([&] { x.add_(x[0]); }, {"[add_]", partial});
  expect_error([&] { x.mul_(x.select(1, 2).unsqueeze(1)); }, {"[mul_]", partial});
  Tensor sq = arange(9.0).view({3, 3});
  expect_error([&] { sq.add_(sq.t()); }, {"[add_]", partial});
  expect_error([&] { sq.slice(0, 1).sub_(sq.slice(0, 0, 2)); }, {"[sub_]", partial});
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(sq.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  // the same view as input and output is fine (x += x)
  x.add_(x);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  // disjoint parts of one storage are fine
  sq[0].add_(sq[2]);
  EXPECT_EQ(sq[0].to_vector<float>(), (std::vector<float>{6, 8, 10}));
  // writes into an expanded tensor
  Tensor base = zeros({3});
  Tensor e = base.expand({2, 3});
  expect_error([&] { e.add_(1); }, {"[add_]", internal});
  expect_error([&] { e.exp_(); }, {"[exp_]", internal});
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  // masked_fill_ writes one value, so torch allows it (with a deprecation
  // warning); brisk too. It runs last: it changes base.
  Tensor base2 = zeros({3});
  base2.expand({2, 3}).masked_fill_(tensor<bool>({true, false, false}).expand({2, 3}).clone(), 1);
  EXPECT_EQ(base2.to_vector<float>(), (std::vector<float>{1, 0, 0}));
  Tensor out_e = zeros({1}).expand({3});
  expect_error([&] { add_out(out_e, ones({3}), ones({3})); }, {"[add_out]", internal});
  expect_error([&] { exp_out(out_e, ones({3})); }, {"[exp_out]", internal});
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  // out aliasing an input partially
  Tensor v = arange(5.0);
  Tensor vo = v.slice(0, 1);
  expect_error([&] { add_out(vo, v.slice(0, 0, 4), ones({4})); }, {"[add_out]", partial});
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
}

TEST(Errors, IntegerDivisionByZero) {
  const std::string zero = "ZeroDivisionError";
  for (ScalarType dt : {kInt32, kInt64, kUInt8, kInt8, kInt16}) {
    Tensor a = tensor({7, 8, 9}, dt), b = tensor({1, 0, 2}, dt);
    expect_error([&] { div(a, b, RoundingMode::Floor); }, {"[div]", zero});
    expect_error([&] { div(a, b, RoundingMode::Trunc); }, {"[div]", zero});
    expect_error([&] { div(a, 0, RoundingMode::Floor); }, {"[div]", zero});
    expect_error([&] { remainder(a, b); }, {"[remainder]", zero});
    expect_error([&] { fmod(a, 0); }, {"[fmod]", zero});
    expect_error([&] { a.remainder_(b); }, {"[remainder_]", zero});
    expect_error([&] { a.div_(b, RoundingMode::Trunc); }, {"[div_]", zero});
    Tensor out = empty({3}, dt);
    out.fill_(5);
    expect_error([&] { fmod_out(out, a, b); }, {"[fmod_out]", zero});
    EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{5, 5, 5}));
    EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
  }
  // floats divide by zero without error (torch)
  EXPECT_TRUE(std::isnan(fmod(tensor({1.f}), 0).item<float>()));
  EXPECT_EQ(div(tensor({1.f}), 0, RoundingMode::Floor).item<float>(), INFINITY);
}

TEST(Errors, BoolSubtractionAndUnsupportedDtypes) {
  Tensor b = tensor({true, false});
  expect_error([&] { sub(b, b); }, {"[sub]", "Subtraction, the `-` operator, with two bool tensors is not supported"});
  expect_error([&] { b.sub_(b); }, {"[sub_]", "two bool tensors"});
  expect_error([&] { Tensor o = empty({2}, kBool); sub_out(o, b, b); }, {"[sub_out]", "two bool tensors"});
  // one bool operand (tensor or scalar) is refused too (torch)
  expect_error([&] { sub(b, 1); }, {"[sub]", "with a bool tensor is not supported"});
  expect_error([&] { sub(tensor({1, 2}), b); }, {"[sub]", "with a bool tensor is not supported"});
  expect_error([&] { b.sub_(true); }, {"[sub_]", "bool"});
  expect_error([&] { Scalar(1) - b; }, {"bool tensor is not supported"});
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false}));

  expect_error([&] { b.neg(); }, {"[neg]", "bool"});
  expect_error([&] { b.abs(); }, {"[abs]", "bool"});
  expect_error([&] { b.relu(); }, {"[relu]", "bool"});
  expect_error([&] { b.floor(); }, {"[floor]", "bool"});
  expect_error([&] { tensor({1, 2}).frac(); }, {"[frac]", "floating point"});
  expect_error([&] { tensor({1.f}).bitwise_not(); }, {"[bitwise_not]", "float32"});
  expect_error([&] { bitwise_and(tensor({1.f}), tensor({1.f})); }, {"[bitwise_and]", "float32"});
  expect_error([&] { div(b, tensor({true, true}), RoundingMode::Floor); }, {"[div]", "bool"});
  expect_error([&] { remainder(b, tensor({true, true})); }, {"[remainder]", "bool"});
  EXPECT_EQ(div(b, tensor({true, true})).to_vector<float>(), (std::vector<float>{1, 0}));
}

TEST(Errors, UndefinedAndDevice) {
  expect_error([] { add(Tensor(), ones({2})); }, {"[add]", "undefined"});
  expect_error([] { ones({2}).mul(Tensor()); }, {"[mul]", "undefined"});
  expect_error([] { sub(Tensor(), ones({2})); }, {"[sub]", "undefined"});
  expect_error([] { remainder(ones({2}), Tensor()); }, {"[remainder]", "undefined"});
  expect_error([] { Tensor().exp(); }, {"[exp]", "undefined"});
}

// Note [Branchless where]: the blend copies bits, on every row layout the
// kernel takes (tensor or broadcast scalar on either side) and every dtype.
TEST(Where, BlendCopiesBitsOnEveryFastPath) {
  manual_seed(5);
  const int64_t n = 1000;  // not a multiple of any vector width
  Tensor m = rand({n}).gt(0.5);
  const auto mv = m.to_vector<bool>();
  Tensor a = randn({n}, kDouble), b = randn({n}, kDouble);
  {
    NoGradGuard g;
    a[3].fill_(-0.0);
    b[4].fill_(std::nan(""));
    a[5].fill_(std::numeric_limits<double>::infinity());
  }
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(dt);
    Tensor x = dt == kBool ? a.gt(0) : a.to(dt), y = dt == kBool ? b.gt(0) : b.to(dt);
    const auto xv = x.to(kDouble).to_vector<double>(), yv = y.to(kDouble).to_vector<double>();
    auto expect = [&](const Tensor& got, double xs, double ys, bool x_scalar, bool y_scalar) {
      const auto g = got.to(kDouble).to_vector<double>();
      ASSERT_EQ(got.dtype(), dt);
      for (int64_t i = 0; i < n; ++i) {
        const double want = mv[i] ? (x_scalar ? xs : xv[i]) : (y_scalar ? ys : yv[i]);
        const bool same = (std::isnan(want) && std::isnan(g[i])) ||
                          (g[i] == want && std::signbit(g[i]) == std::signbit(want));
        ASSERT_TRUE(same) << "element " << i << ": got " << g[i] << ", expected " << want;
      }
    };
    expect(where(m, x, y), 0, 0, false, false);
    expect(where(m, x, y[7]), 0, yv[7], false, true);          // 0-dim tensor broadcast
    expect(where(m, x[9], y), xv[9], 0, true, false);
    expect(where(m, x[9], y[7]), xv[9], yv[7], true, true);
  }
  // a strided condition and operands take the generic loop
  Tensor m2 = rand({2 * n}).gt(0.5).slice(0, 0, 2 * n, 2);
  Tensor x2 = randn({2 * n}).slice(0, 0, 2 * n, 2), y2 = randn({n});
  EXPECT_TRUE(close(where(m2, x2, y2), m2.to(kFloat) * x2 + m2.logical_not().to(kFloat) * y2, 0, 0));
}

}  // namespace
}  // namespace brisk
