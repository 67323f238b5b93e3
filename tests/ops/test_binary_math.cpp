// PyTorch's binary math (slot binary_math: hypot, logaddexp, logaddexp2,
// copysign, nextafter, xlogy, heaviside) and the composites ldexp and
// float_power against PyTorch 2.15's values (printed by torch for the same
// inputs, every floating dtype; the same Sleef functions, fused multiply-add
// and 16-bit roundings: equal but for one ulp where PyTorch's scalar loop,
// which takes a short tensor's elements, calls glibc), their gradients,
// dtype rules and errors. tests/ops/op_rows.h runs them over layouts and
// dtypes against float64 references, gradcheck and libtorch.
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

namespace brisk {
namespace {

using testing::equal_values;
using testing::expect_error;

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

const std::vector<double> kA = {0.0, -0.0, 1.0, -1.0, 2.5, -3.0, kInf, -kInf, kNan, 1e-30, 3e38, 0.0, -2.0, 0.5};
const std::vector<double> kB = {0.0, 2.0, -1.0, -1.0, 0.5, kInf, -kInf, -kInf, 1.0, -1e-30, 3e38, kNan, -2.0, -0.0};

Tensor call(const std::string& nm, const Tensor& a, const Tensor& b) {
  if (nm == "hypot") return hypot(a, b);
  if (nm == "logaddexp") return logaddexp(a, b);
  if (nm == "logaddexp2") return logaddexp2(a, b);
  if (nm == "copysign") return copysign(a, b);
  if (nm == "nextafter") return nextafter(a, b);
  if (nm == "xlogy") return xlogy(a, b);
  return heaviside(a, b);
}

struct Case {
  const char* op;
  ScalarType dtype;
  std::vector<double> want;
};

TEST(BinaryMath, ValuesArePyTorchs) {
  set_num_threads(1);
  // torch: getattr(torch, op)(a.to(dtype), b.to(dtype)) for kA, kB
  const std::vector<Case> cases = {
      {"hypot", kFloat, {0.0, 2.0, 1.4142135381698608, 1.4142135381698608, 2.5495097637176514, kInf, kInf, kInf, kNan, 1.4142135555081815e-30, kInf, kNan, 2.8284270763397217, 0.5}},
      {"hypot", kDouble, {0.0, 2.0, 1.4142135623730951, 1.4142135623730951, 2.5495097567963922, kInf, kInf, kInf, kNan, 1.4142135623730952e-30, 4.2426406871192854e+38, kNan, 2.8284271247461903, 0.5}},
      {"hypot", kBFloat16, {0.0, 2.0, 1.4140625, 1.4140625, 2.546875, kInf, kInf, kInf, kNan, 1.4113214632469664e-30, kInf, kNan, 2.828125, 0.5}},
      {"hypot", kHalf, {0.0, 2.0, 1.4140625, 1.4140625, 2.548828125, kInf, kInf, kInf, kNan, 0.0, kInf, kNan, 2.828125, 0.5}},
      {"logaddexp", kFloat, {0.6931471824645996, 2.1269280910491943, 1.1269279718399048, -0.3068528175354004, 2.6269280910491943, kInf, kInf, -kInf, kNan, 0.6931471824645996, 3.0000000054977558e+38, kNan, -1.3068528175354004, 0.9740769863128662}},
      {"logaddexp", kDouble, {0.6931471805599453, 2.1269280110429727, 1.1269280110429725, -0.3068528194400547, 2.6269280110429727, kInf, kInf, -kInf, kNan, 0.6931471805599453, 3e+38, kNan, -1.3068528194400546, 0.9740769841801067}},
      {"logaddexp", kBFloat16, {0.69140625, 2.125, 1.125, -0.306640625, 2.625, kInf, kInf, -kInf, kNan, 0.69140625, 3.00405527047391e+38, kNan, -1.3046875, 0.97265625}},
      {"logaddexp", kHalf, {0.693359375, 2.126953125, 1.126953125, -0.306884765625, 2.626953125, kInf, kInf, -kInf, kNan, 0.693359375, kInf, kNan, -1.306640625, 0.97412109375}},
      {"logaddexp2", kFloat, {1.0, 2.321928024291992, 1.3219281435012817, -1.0601922895148164e-08, 2.821928024291992, kInf, kInf, -kInf, kNan, 1.0, 3.0000000054977558e+38, kNan, -1.0, 1.2715532779693604}},
      {"logaddexp2", kDouble, {1.0, 2.321928094887362, 1.3219280948873624, -4.756597398230631e-17, 2.821928094887362, kInf, kInf, -kInf, kNan, 1.0, 3e+38, kNan, -1.0, 1.2715533031636121}},
      {"logaddexp2", kBFloat16, {1.0, 2.328125, 1.3203125, -1.0593794286251068e-08, 2.828125, kInf, kInf, -kInf, kNan, 1.0, 3.00405527047391e+38, kNan, -1.0, 1.2734375}},
      {"logaddexp2", kHalf, {1.0, 2.322265625, 1.322265625, -0.0, 2.822265625, kInf, kInf, -kInf, kNan, 1.0, kInf, kNan, -1.0, 1.271484375}},
      {"copysign", kFloat, {0.0, 0.0, -1.0, -1.0, 2.5, 3.0, -kInf, -kInf, kNan, -1.0000000031710769e-30, 3.0000000054977558e+38, 0.0, -2.0, -0.5}},
      {"copysign", kDouble, {0.0, 0.0, -1.0, -1.0, 2.5, 3.0, -kInf, -kInf, kNan, -1e-30, 3e+38, 0.0, -2.0, -0.5}},
      {"copysign", kBFloat16, {0.0, 0.0, -1.0, -1.0, 2.5, 3.0, -kInf, -kInf, kNan, -9.98402083170343e-31, 3.00405527047391e+38, 0.0, -2.0, -0.5}},
      {"copysign", kHalf, {0.0, 0.0, -1.0, -1.0, 2.5, 3.0, -kInf, -kInf, kNan, -0.0, kInf, 0.0, -2.0, -0.5}},
      {"nextafter", kFloat, {0.0, 1.401298464324817e-45, 0.9999999403953552, -1.0, 2.499999761581421, -2.999999761581421, 3.4028234663852886e+38, -kInf, kNan, 9.999999091315288e-31, 3.0000000054977558e+38, kNan, -2.0, 0.4999999701976776}},
      {"nextafter", kDouble, {0.0, 5e-324, 0.9999999999999999, -1.0, 2.4999999999999996, -2.9999999999999996, 1.7976931348623157e+308, -kInf, kNan, 9.999999999999999e-31, 3e+38, kNan, -2.0, 0.49999999999999994}},
      {"nextafter", kBFloat16, {0.0, 9.183549615799121e-41, 0.99609375, -1.0, 2.484375, -2.984375, 3.3895313892515355e+38, -kInf, kNan, 9.922391073483039e-31, 3.00405527047391e+38, kNan, -2.0, 0.498046875}},
      {"nextafter", kHalf, {0.0, 5.960464477539063e-08, 0.99951171875, -1.0, 2.498046875, -2.998046875, 65504.0, -kInf, kNan, -0.0, kInf, kNan, -2.0, 0.499755859375}},
      {"xlogy", kFloat, {0.0, 0.0, kNan, kNan, -1.732867956161499, -kInf, kNan, kNan, kNan, kNan, kInf, kNan, kNan, -kInf}},
      {"xlogy", kDouble, {0.0, 0.0, kNan, kNan, -1.7328679513998633, -kInf, kNan, kNan, kNan, kNan, 2.6579053746732555e+40, kNan, kNan, -kInf}},
      {"xlogy", kBFloat16, {0.0, 0.0, kNan, kNan, -1.7265625, -kInf, kNan, kNan, kNan, kNan, kInf, kNan, kNan, -kInf}},
      {"xlogy", kHalf, {0.0, 0.0, kNan, kNan, -1.7333984375, -kInf, kNan, kNan, kNan, 0.0, kInf, kNan, kNan, -kInf}},
      {"heaviside", kFloat, {0.0, 2.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, kNan, 0.0, 1.0}},
      {"heaviside", kDouble, {0.0, 2.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, kNan, 0.0, 1.0}},
      {"heaviside", kBFloat16, {0.0, 2.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, kNan, 0.0, 1.0}},
      {"heaviside", kHalf, {0.0, 2.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, -0.0, 1.0, kNan, 0.0, 1.0}},
  };
  const Tensor a64 = tensor(kA, kDouble), b64 = tensor(kB, kDouble);
  for (const Case& c : cases) {
    const Tensor a = a64.to(c.dtype), b = b64.to(c.dtype);
    const Tensor r = call(c.op, a, b);
    EXPECT_EQ(r.dtype(), c.dtype) << c.op;
    // one ulp of the dtype (PyTorch's scalar tail loop calls glibc's log1p/exp2, its vector loop and brisk Sleef's)
    const double ulp = c.dtype == kDouble ? 0x1p-52 : c.dtype == kFloat ? 0x1p-23 : c.dtype == kHalf ? 0x1p-10 : 0x1p-7;
    auto near = [&](const Tensor& got, const std::vector<double>& want) {
      return testing::close(got, tensor(want, kDouble).view(got.sizes()), ulp, 0);
    };
    EXPECT_TRUE(near(r, c.want)) << c.op << " " << c.dtype;
    // the exact ops bit for bit (one ulp would pass a nextafter that does not move), signs of zero included
    const std::string op = c.op;
    if (op == "nextafter" || op == "copysign" || op == "heaviside") {
      const Tensor got = r.to(kDouble).contiguous();
      for (int64_t i = 0; i < got.numel(); ++i) {
        const double g = got.data_ptr<double>()[i], w = c.want[static_cast<size_t>(i)];
        if (w != w) continue;
        EXPECT_TRUE(g == w && std::signbit(g) == std::signbit(w)) << op << " " << c.dtype << " element " << i << ": " << g << " vs " << w;
      }
    }
    // a long contiguous run (the vector body) and a strided one give the same bits
    const Tensor ra = call(c.op, a.repeat({9}), b.repeat({9}));
    EXPECT_TRUE(near(ra.slice(0, 5 * a.numel(), 6 * a.numel()), c.want)) << c.op << " " << c.dtype << " long";
    const int64_t n = a.numel();
    const Tensor rs = call(c.op, a.repeat({2}).slice(0, 0, 2 * n, 2), b.repeat({2}).slice(0, 0, 2 * n, 2));
    std::vector<double> every_other;
    for (int64_t k = 0; k < n; ++k) every_other.push_back(c.want[static_cast<size_t>((2 * k) % n)]);
    EXPECT_TRUE(near(rs, every_other)) << c.op << " " << c.dtype << " strided";
  }
}

TEST(BinaryMath, SignedZerosArePyTorchs) {
  // torch: copysign(0.0, -0.0) = -0.0; heaviside(-0.0, -0.0) = -0.0 (the value); xlogy(0, y) = +0;
  // nextafter(0, -1) is the negative smallest subnormal
  const Tensor z = tensor<float>({0.0f}), nz = tensor<float>({-0.0f});
  EXPECT_TRUE(std::signbit(copysign(z, nz).item<float>()));
  EXPECT_TRUE(std::signbit(heaviside(nz, nz).item<float>()));
  EXPECT_FALSE(std::signbit(xlogy(z, tensor<float>({-1.0f})).item<float>()));
  EXPECT_EQ(nextafter(z, tensor<float>({-1.0f})).item<float>(), -std::numeric_limits<float>::denorm_min());
  EXPECT_TRUE(std::signbit(nextafter(z, nz).item<float>()));  // from == to: to
}

TEST(BinaryMath, GradientsArePyTorchs) {
  // torch (float64): x = [0, 1.5, -2, 0, 3], y = [0, -0.5, 4, -1, 2]; grad(op(x, y).sum(), [x, y])
  struct G {
    const char* op;
    std::vector<double> gx, gy;
  };
  const std::vector<G> cases = {
      {"hypot", {kNan, 0.9486832980505138, -0.4472135954999579, 0.0, 0.8320502943378437}, {kNan, -0.31622776601683794, 0.8944271909999159, -1.0, 0.5547001962252291}},
      {"logaddexp", {0.5, 0.8807970779778823, 0.0024726231566347743, 0.7310585786300049, 0.7310585786300049}, {0.5, 0.11920292202211755, 0.9975273768433653, 0.2689414213699951, 0.2689414213699951}},
      {"logaddexp2", {0.5, 0.8, 0.015384615384615385, 0.6666666666666666, 0.6666666666666666}, {0.5, 0.2, 0.9846153846153847, 0.3333333333333333, 0.3333333333333333}},
      {"copysign", {0.0, -1.0, -1.0, 0.0, 1.0}, {0.0, 0.0, 0.0, 0.0, 0.0}},
      {"xlogy", {0.0, kNan, 1.3862943611198906, 0.0, 0.6931471805599453}, {kNan, -3.0, -0.5, -0.0, 1.5}},
  };
  for (const G& c : cases) {
    Tensor x = tensor(std::vector<double>{0.0, 1.5, -2.0, 0.0, 3.0}, kDouble).requires_grad_();
    Tensor y = tensor(std::vector<double>{0.0, -0.5, 4.0, -1.0, 2.0}, kDouble).requires_grad_();
    call(c.op, x, y).sum().backward();
    EXPECT_TRUE(testing::close(x.grad(), tensor(c.gx, kDouble), 1e-14, 0)) << c.op;
    EXPECT_TRUE(testing::close(y.grad(), tensor(c.gy, kDouble), 1e-14, 0)) << c.op;
  }
  // Scalar operands: xlogy(x, 2.0), xlogy(x, -1.0), xlogy(x, 0.0), xlogy(3.0, y), copysign(x, -1.0)
  auto gx = [](const std::function<Tensor(const Tensor&)>& f) {
    Tensor x = tensor(std::vector<double>{0.0, 1.5, -2.0, 0.0, 3.0}, kDouble).requires_grad_();
    f(x).sum().backward();
    return x.grad();
  };
  EXPECT_TRUE(testing::close(gx([](const Tensor& x) { return xlogy(x, 2.0); }), full({5}, std::log(2.0), kDouble)));
  EXPECT_TRUE(equal_values(gx([](const Tensor& x) { return xlogy(x, -1.0); }), {0, kNan, kNan, 0, kNan}));
  EXPECT_TRUE(equal_values(gx([](const Tensor& x) { return xlogy(x, 0.0); }), {0, -kInf, -kInf, 0, -kInf}));
  EXPECT_TRUE(equal_values(gx([](const Tensor& x) { return copysign(x, -1.0); }), {0, -1, 1, 0, -1}));
  Tensor y = tensor(std::vector<double>{0.0, -0.5, 4.0, -1.0, 2.0}, kDouble).requires_grad_();
  Tensor r = xlogy(3.0, y);
  EXPECT_TRUE(testing::close(r, tensor(std::vector<double>{-kInf, kNan, 4.1588830833596715, kNan, 2.0794415416798357}, kDouble), 1e-15, 0));
  r.sum().backward();
  EXPECT_TRUE(equal_values(y.grad(), {kInf, -6.0, 0.75, -3.0, 1.5}));
  // in place: the gradient of the old value, as the out-of-place op; the result is recomputed from
  // the saved operands, so a later in-place change of it does not matter (torch raises "modified by an
  // inplace operation" there: docs/porting.md)
  Tensor x = tensor(std::vector<double>{0.0, 1.5, -2.0, 0.0, 3.0}, kDouble).requires_grad_();
  Tensor w = x * 1;
  w.hypot_(tensor(std::vector<double>{1.0, -0.5, 4.0, -1.0, 2.0}, kDouble));
  w.mul_(2).sum().backward();
  EXPECT_TRUE(testing::close(x.grad(), tensor(std::vector<double>{0.0, 1.8973665961010275, -0.8944271909999159, 0.0, 1.6641005886756874}, kDouble), 1e-14, 0));
}

TEST(BinaryMath, NextafterPassesItsGradientAndHeavisideHasNone) {
  // torch 2.15: x = [1, 2, nan], y = [1, 5, 1]; grad((nextafter(x, y) * [2, 5, 7]).sum(), [x, y])
  // = ([0, 5, 7], [0, 0, 0]): the gradient passes where x != y; in place the same;
  // heaviside's backward raises "derivative for aten::heaviside is not implemented"
  Tensor x = tensor<float>({1, 2, NAN}).requires_grad_(), y = tensor<float>({1, 5, 1}).requires_grad_();
  (nextafter(x, y) * tensor<float>({2, 5, 7})).sum().backward();
  EXPECT_TRUE(equal_values(x.grad(), {0, 5, 7}));
  EXPECT_TRUE(equal_values(y.grad(), {0, 0, 0}));
  Tensor x2 = tensor<float>({1, 2}).requires_grad_();
  Tensor w = x2 * 3;
  w.nextafter_(tensor<float>({0, 0}));
  w.sum().backward();
  EXPECT_TRUE(equal_values(x2.grad(), {3, 3}));
  Tensor h = heaviside(x, tensor<float>({0.5, 0.5, 0.5}));
  EXPECT_TRUE(h.requires_grad());
  expect_error([&] { h.sum().backward(); }, {"[heaviside]", "derivative"});
}

TEST(BinaryMath, DtypesArePyTorchs) {
  const Tensor i = tensor<int64_t>({1, 2, -3}), f = tensor<float>({1, -2, 0}), b = tensor<bool>({true, false, true});
  const Tensor h = f.to(kHalf);
  // copysign and xlogy compute integers in the default float dtype; mixed dtypes promote
  EXPECT_EQ(copysign(i, i).dtype(), kFloat);
  EXPECT_EQ(copysign(b, b).dtype(), kFloat);
  EXPECT_EQ(xlogy(i, i).dtype(), kFloat);
  EXPECT_EQ(xlogy(2, tensor(std::vector<double>{0.5, 4.0}, kDouble)).dtype(), kDouble);
  EXPECT_EQ(copysign(h, f).dtype(), kFloat);
  EXPECT_EQ(hypot(h, h).dtype(), kHalf);
  EXPECT_EQ(logaddexp(i, f).dtype(), kFloat);
  EXPECT_EQ(hypot(f, scalar_tensor(2.0, kDouble)).dtype(), kFloat);
  EXPECT_EQ(heaviside(i, i).dtype(), kInt64);
  EXPECT_EQ(heaviside(b, b).dtype(), kBool);
  // a Scalar past a 16-bit range is that dtype's inf, as torch: xlogy(1e5, tensor([2.]).half()) = inf
  EXPECT_TRUE(std::isinf(xlogy(1e5, tensor<float>({2}).to(kHalf)).item<float>()));
  // torch: xlogy(tensor([0, 2]), tensor([0, 3])) = [0, 2.1972]; xlogy(2, tensor([0.5, 4.])) = [-1.3863, 2.7726]
  EXPECT_TRUE(testing::close(xlogy(tensor<int64_t>({0, 2}), tensor<int64_t>({0, 3})), tensor<float>({0, 2.1972246f})));
  EXPECT_TRUE(testing::close(xlogy(2, tensor<float>({0.5f, 4})), tensor<float>({-1.3862944f, 2.7725887f})));
  // float-only ops refuse integers and bool, as torch ("hypot_cpu" not implemented for 'Long')
  for (auto fn : {+[](const Tensor& a, const Tensor& c) { return hypot(a, c); },
                  +[](const Tensor& a, const Tensor& c) { return logaddexp(a, c); },
                  +[](const Tensor& a, const Tensor& c) { return logaddexp2(a, c); },
                  +[](const Tensor& a, const Tensor& c) { return nextafter(a, c); }}) {
    expect_error([&] { fn(i, i); }, {"not implemented for int64"});
    expect_error([&] { fn(b, b); }, {"not implemented for bool"});
  }
  // heaviside takes one dtype, as torch
  expect_error([&] { heaviside(f, i); }, {"[heaviside]", "different dtypes"});
  expect_error([&] { heaviside(f, scalar_tensor(0.5, kDouble)); }, {"[heaviside]", "different dtypes"});
  Tensor o = empty({3}, kDouble);
  expect_error([&] { heaviside_out(o, f, f); }, {"[heaviside_out]", "different dtypes"});
  // in place into an integer self: the float result cannot be cast (torch's message)
  expect_error([&] { i.clone().hypot_(f); }, {"[hypot_]"});
  expect_error([&] { i.clone().copysign_(f); }, {"[copysign_]"});
  expect_error([&] { i.clone().xlogy_(f); }, {"[xlogy_]"});
}

TEST(BinaryMath, LdexpIsPyTorchs) {
  // torch 2.15: ldexp(tensor([1., -3., 0.5]), tensor([3, -2, 130])) = [8, -0.75, inf] (float32);
  // an integer exponent is exact: ldexp(tensor([1e-30]), tensor([130])) = 1.3611e9, with a float
  // exponent the power overflows first: ldexp(tensor([1e-30]), tensor([130.5])) = inf
  EXPECT_TRUE(equal_values(ldexp(tensor<float>({1, -3, 0.5}), tensor<int64_t>({3, -2, 130})), {8, -0.75, kInf}));
  const float big = ldexp(tensor<float>({1e-30f}), tensor<int64_t>({130})).item<float>();
  EXPECT_EQ(big, std::ldexp(1e-30f, 130));
  EXPECT_TRUE(std::isinf(ldexp(tensor<float>({1e-30f}), tensor<float>({130.5f})).item<float>()));
  // dtypes: half with int64 -> half (ldexp(half([1e-4, 1e-3]), [20, 17]) = [104.875, 131.125]); int with
  // int -> float32; half with float32 -> float32; float32 with float64 -> float64
  const Tensor h = ldexp(tensor<float>({1e-4f, 1e-3f}).to(kHalf), tensor<int64_t>({20, 17}));
  EXPECT_EQ(h.dtype(), kHalf);
  EXPECT_TRUE(equal_values(h, {104.875, 131.125}));
  EXPECT_EQ(ldexp(tensor<int64_t>({1, 2}), tensor<int64_t>({3, 1})).dtype(), kFloat);
  EXPECT_EQ(ldexp(tensor<float>({1}).to(kHalf), tensor<float>({3})).dtype(), kFloat);
  EXPECT_EQ(ldexp(tensor<float>({1}), tensor(std::vector<double>{3}, kDouble)).dtype(), kDouble);
  EXPECT_EQ(ldexp(tensor(std::vector<double>{1e-300}, kDouble), tensor<int64_t>({1100})).item<double>(), std::ldexp(1e-300, 1100));
  // torch: x = tensor([1., 2., 3.]); x.ldexp_(tensor([1, 2, 3])) = [2, 8, 24]; an integer self raises
  Tensor x = tensor<float>({1, 2, 3});
  x.ldexp_(tensor<int64_t>({1, 2, 3}));
  EXPECT_TRUE(equal_values(x, {2, 8, 24}));
  expect_error([&] { tensor<int64_t>({1}).ldexp_(tensor<int64_t>({1})); }, {"[ldexp_]", "can't be cast"});
  // torch: a bool exponent raises ("ldexp_cpu_exp" not implemented for 'Bool'); the input broadcasts,
  // ldexp([1, 2, 3], [[1], [2]]) = [[2, 4, 6], [4, 8, 12]]; exponents are taken as int32 (2^32 + 2 is 2)
  expect_error([] { ldexp(tensor<float>({1, 2}), tensor<bool>({true, false})); }, {"[ldexp]", "bool"});
  const Tensor lb = ldexp(tensor<float>({1, 2, 3}), tensor<int64_t>({1, 2}).view({2, 1}));
  EXPECT_EQ(lb.sizes(), IntArrayRef({2, 3}));
  EXPECT_TRUE(equal_values(lb, {2, 4, 6, 4, 8, 12}));
  EXPECT_TRUE(equal_values(ldexp(tensor<float>({1}), tensor<int64_t>({(int64_t(1) << 32) + 2})), {4}));
  // the gradient: grad * 2^e
  Tensor w = tensor<float>({1, 2}).requires_grad_();
  ldexp(w, tensor<int64_t>({3, -1})).sum().backward();
  EXPECT_TRUE(equal_values(w.grad(), {8, 0.5}));
}

TEST(BinaryMath, FloatPowerIsPyTorchs) {
  // torch: float_power(tensor([2, 3]), 2).dtype = float64; float_power(tensor([2., -8.]), tensor([0.5, 1/3]))
  // = [1.4142135623730951, nan]
  EXPECT_EQ(float_power(tensor<int64_t>({2, 3}), 2).dtype(), kDouble);
  EXPECT_TRUE(equal_values(float_power(tensor<float>({2, -8}), tensor(std::vector<double>{0.5, 1.0 / 3}, kDouble)),
                           {1.4142135623730951, kNan}));
  EXPECT_TRUE(equal_values(float_power(2, tensor<int64_t>({3, -1})), {8, 0.5}));
  expect_error([&] { tensor<float>({1}).float_power_(2); }, {"[float_power_]", "float64"});
}

}  // namespace
}  // namespace brisk
