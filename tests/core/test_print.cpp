// Printing: every expected string below is PyTorch 1.13's repr() of the same
// tensor (python3 -c "import torch; print(repr(...))"), with "torch." dtype
// names replaced by "brisk.".
#include <cmath>
#include <limits>
#include <sstream>

#include "test_util.h"

namespace brisk {
namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(Print, FloatMatrix) {
  EXPECT_EQ(to_string(tensor({{1.f, 2.f}, {3.f, 4.f}})), "tensor([[1., 2.],\n        [3., 4.]])");
  std::ostringstream os;
  os << tensor({{1.f, 2.f}, {3.f, 4.f}});
  EXPECT_EQ(os.str(), "tensor([[1., 2.],\n        [3., 4.]])");
}

TEST(Print, IntegerAndBool) {
  EXPECT_EQ(to_string(tensor({1, 2, 3})), "tensor([1, 2, 3])");
  EXPECT_EQ(to_string(tensor({true, false})), "tensor([ True, False])");
  EXPECT_EQ(to_string(tensor({1, -20, 300}, kInt32)), "tensor([  1, -20, 300], dtype=brisk.int32)");
  EXPECT_EQ(to_string(tensor({0, 255}, kUInt8)), "tensor([  0, 255], dtype=brisk.uint8)");
  EXPECT_EQ(to_string(tensor({int64_t{123456789012}, int64_t{-5}})), "tensor([123456789012,           -5])");
  EXPECT_EQ(to_string(tensor({{true, false, true}, {false, false, true}})),
            "tensor([[ True, False,  True],\n        [False, False,  True]])");
}

TEST(Print, ZeroDim) {
  EXPECT_EQ(to_string(scalar_tensor(3.5)), "tensor(3.5000)");
  EXPECT_EQ(to_string(scalar_tensor(7)), "tensor(7)");
  EXPECT_EQ(to_string(scalar_tensor(-2.25, kDouble)), "tensor(-2.2500, dtype=brisk.float64)");
  EXPECT_EQ(to_string(scalar_tensor(true)), "tensor(True)");
  EXPECT_EQ(to_string(scalar_tensor(kNan)), "tensor(nan)");
  EXPECT_EQ(to_string(scalar_tensor(1e10)), "tensor(1.0000e+10)");
  EXPECT_EQ(to_string(scalar_tensor(1e-5)), "tensor(1.0000e-05)");
  EXPECT_EQ(to_string(scalar_tensor(2.0, kHalf)), "tensor(2., dtype=brisk.float16)");
}

TEST(Print, Empty) {
  EXPECT_EQ(to_string(empty({0, 3})), "tensor([], size=(0, 3))");
  EXPECT_EQ(to_string(empty({0})), "tensor([])");
  EXPECT_EQ(to_string(empty({0}, kInt64)), "tensor([], dtype=brisk.int64)");
  EXPECT_EQ(to_string(empty({2, 0}, kInt32)), "tensor([], size=(2, 0), dtype=brisk.int32)");
}

TEST(Print, Undefined) {
  EXPECT_EQ(to_string(Tensor()), "[ undefined tensor ]");
  std::ostringstream os;
  os << Tensor();
  EXPECT_EQ(os.str(), "[ undefined tensor ]");
}

TEST(Print, FloatFormats) {
  // fixed with 4 decimals and a common width
  EXPECT_EQ(to_string(tensor({1.5, -2.25, 3.0})), "tensor([ 1.5000, -2.2500,  3.0000])");
  EXPECT_EQ(to_string(tensor({{1.5, -100.25}, {3.125, 4.0}})),
            "tensor([[   1.5000, -100.2500],\n        [   3.1250,    4.0000]])");
  // scientific: large values, small values, ratio above 1000
  EXPECT_EQ(to_string(tensor({1e10, 1.0})), "tensor([1.0000e+10, 1.0000e+00])");
  EXPECT_EQ(to_string(tensor({1e-5, 1.0})), "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ(to_string(tensor({0.5, 1000.5})), "tensor([5.0000e-01, 1.0005e+03])");
  EXPECT_EQ(to_string(tensor({1e9, 1.0})), "tensor([1.0000e+09, 1.0000e+00])");
  EXPECT_EQ(to_string(tensor({-1e-5, 2.5e12})), "tensor([-1.0000e-05,  2.5000e+12])");
  EXPECT_EQ(to_string(tensor({{1e-5, 2e-3, 3.}, {123.456, -0.5, 7e5}})),
            "tensor([[ 1.0000e-05,  2.0000e-03,  3.0000e+00],\n"
            "        [ 1.2346e+02, -5.0000e-01,  7.0000e+05]])");
  // all-integral floats, zeros, negative zero
  EXPECT_EQ(to_string(zeros({2, 3})), "tensor([[0., 0., 0.],\n        [0., 0., 0.]])");
  EXPECT_EQ(to_string(tensor({-0.0, 1.0})), "tensor([-0., 1.])");
}

TEST(Print, NanInf) {
  EXPECT_EQ(to_string(tensor({kNan, kInf, -kInf, 1.5})), "tensor([   nan,    inf,   -inf, 1.5000])");
  EXPECT_EQ(to_string(tensor({kNan, kInf, -kInf, 2.0})), "tensor([nan, inf, -inf, 2.])");
  EXPECT_EQ(to_string(tensor({kNan, 0.0})), "tensor([nan, 0.])");
  EXPECT_EQ(to_string(tensor({1e-8, kNan, 3.0})), "tensor([1.0000e-08,        nan, 3.0000e+00])");
  // a nan with the sign bit set still prints as nan (printf would say -nan)
  EXPECT_EQ(to_string(tensor({-kNan, 1.5})), "tensor([   nan, 1.5000])");
}

TEST(Print, ReducedAndDoublePrecision) {
  EXPECT_EQ(to_string(tensor({0.1, 2.0}, kHalf)), "tensor([0.1000, 2.0000], dtype=brisk.float16)");
  EXPECT_EQ(to_string(tensor({0.1, 2.0}, kBFloat16)), "tensor([0.1001, 2.0000], dtype=brisk.bfloat16)");
  EXPECT_EQ(to_string(tensor({0.1, 2.0}, kDouble)), "tensor([0.1000, 2.0000], dtype=brisk.float64)");
}

TEST(Print, DefaultDtypeDecidesTheSuffix) {
  set_default_dtype(kDouble);
  const std::string f64 = to_string(tensor({1.5, 2.}));
  const std::string f32 = to_string(tensor({1.5f, 2.f}));
  const std::string e32 = to_string(empty({0}, kFloat));
  set_default_dtype(kFloat);
  EXPECT_EQ(f64, "tensor([1.5000, 2.0000])");
  EXPECT_EQ(f32, "tensor([1.5000, 2.0000], dtype=brisk.float32)");
  EXPECT_EQ(e32, "tensor([], dtype=brisk.float32)");
}

TEST(Print, HigherDims) {
  EXPECT_EQ(to_string(arange(12.0).reshape({2, 2, 3})),
            "tensor([[[ 0.,  1.,  2.],\n"
            "         [ 3.,  4.,  5.]],\n"
            "\n"
            "        [[ 6.,  7.,  8.],\n"
            "         [ 9., 10., 11.]]])");
  EXPECT_EQ(to_string(arange(-6, 6).reshape({2, 3, 2})),
            "tensor([[[-6, -5],\n"
            "         [-4, -3],\n"
            "         [-2, -1]],\n"
            "\n"
            "        [[ 0,  1],\n"
            "         [ 2,  3],\n"
            "         [ 4,  5]]])");
}

TEST(Print, NonContiguous) {
  EXPECT_EQ(to_string(arange(6.0).reshape({2, 3}).t()), "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]])");
}

TEST(Print, LineWrapping) {
  EXPECT_EQ(to_string(arange(30.0) / 7),
            "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
            "        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n"
            "        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n"
            "        3.8571, 4.0000, 4.1429])");
  // the dtype suffix moves to its own line when the last line is full
  EXPECT_EQ(to_string(arange(40, kInt32) * 1000),
            "tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,\n"
            "        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,\n"
            "        20000, 21000, 22000, 23000, 24000, 25000, 26000, 27000, 28000, 29000,\n"
            "        30000, 31000, 32000, 33000, 34000, 35000, 36000, 37000, 38000, 39000],\n"
            "       dtype=brisk.int32)");
  EXPECT_EQ(to_string(arange(60, kInt32).reshape({2, 30})),
            "tensor([[ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
            "         18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29],\n"
            "        [30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,\n"
            "         48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]], dtype=brisk.int32)");
}

TEST(Print, Summarized) {
  EXPECT_EQ(to_string(arange(2000)), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  EXPECT_EQ(to_string(arange(2000).to(kUInt8)), "tensor([  0,   1,   2,  ..., 205, 206, 207], dtype=brisk.uint8)");
  // the formatter sees only the edge items: the width comes from 250.0000
  EXPECT_EQ(to_string(arange(1001.0) / 4),
            "tensor([  0.0000,   0.2500,   0.5000,  ..., 249.5000, 249.7500, 250.0000])");
  EXPECT_EQ(to_string(arange(2000.0)),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
            "        1.9990e+03])");
  EXPECT_EQ(to_string(arange(1200).reshape({2, 600})),
            "tensor([[   0,    1,    2,  ...,  597,  598,  599],\n"
            "        [ 600,  601,  602,  ..., 1197, 1198, 1199]])");
  EXPECT_EQ(to_string(arange(1100.0).reshape({50, 22})),
            "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9000e+01, 2.0000e+01,\n"
            "         2.1000e+01],\n"
            "        [2.2000e+01, 2.3000e+01, 2.4000e+01,  ..., 4.1000e+01, 4.2000e+01,\n"
            "         4.3000e+01],\n"
            "        [4.4000e+01, 4.5000e+01, 4.6000e+01,  ..., 6.3000e+01, 6.4000e+01,\n"
            "         6.5000e+01],\n"
            "        ...,\n"
            "        [1.0340e+03, 1.0350e+03, 1.0360e+03,  ..., 1.0530e+03, 1.0540e+03,\n"
            "         1.0550e+03],\n"
            "        [1.0560e+03, 1.0570e+03, 1.0580e+03,  ..., 1.0750e+03, 1.0760e+03,\n"
            "         1.0770e+03],\n"
            "        [1.0780e+03, 1.0790e+03, 1.0800e+03,  ..., 1.0970e+03, 1.0980e+03,\n"
            "         1.0990e+03]])");
}

TEST(Print, Summarized3d) {
  const std::string got = to_string(arange(1100).reshape({10, 10, 11}));
  const std::string want =
      "tensor([[[   0,    1,    2,  ...,    8,    9,   10],\n"
      "         [  11,   12,   13,  ...,   19,   20,   21],\n"
      "         [  22,   23,   24,  ...,   30,   31,   32],\n"
      "         ...,\n"
      "         [  77,   78,   79,  ...,   85,   86,   87],\n"
      "         [  88,   89,   90,  ...,   96,   97,   98],\n"
      "         [  99,  100,  101,  ...,  107,  108,  109]],\n"
      "\n"
      "        [[ 110,  111,  112,  ...,  118,  119,  120],\n"
      "         [ 121,  122,  123,  ...,  129,  130,  131],\n"
      "         [ 132,  133,  134,  ...,  140,  141,  142],\n"
      "         ...,\n"
      "         [ 187,  188,  189,  ...,  195,  196,  197],\n"
      "         [ 198,  199,  200,  ...,  206,  207,  208],\n"
      "         [ 209,  210,  211,  ...,  217,  218,  219]],\n"
      "\n"
      "        [[ 220,  221,  222,  ...,  228,  229,  230],\n"
      "         [ 231,  232,  233,  ...,  239,  240,  241],\n"
      "         [ 242,  243,  244,  ...,  250,  251,  252],\n"
      "         ...,\n"
      "         [ 297,  298,  299,  ...,  305,  306,  307],\n"
      "         [ 308,  309,  310,  ...,  316,  317,  318],\n"
      "         [ 319,  320,  321,  ...,  327,  328,  329]],\n"
      "\n"
      "        ...,\n"
      "\n"
      "        [[ 770,  771,  772,  ...,  778,  779,  780],\n"
      "         [ 781,  782,  783,  ...,  789,  790,  791],\n"
      "         [ 792,  793,  794,  ...,  800,  801,  802],\n"
      "         ...,\n"
      "         [ 847,  848,  849,  ...,  855,  856,  857],\n"
      "         [ 858,  859,  860,  ...,  866,  867,  868],\n"
      "         [ 869,  870,  871,  ...,  877,  878,  879]],\n"
      "\n"
      "        [[ 880,  881,  882,  ...,  888,  889,  890],\n"
      "         [ 891,  892,  893,  ...,  899,  900,  901],\n"
      "         [ 902,  903,  904,  ...,  910,  911,  912],\n"
      "         ...,\n"
      "         [ 957,  958,  959,  ...,  965,  966,  967],\n"
      "         [ 968,  969,  970,  ...,  976,  977,  978],\n"
      "         [ 979,  980,  981,  ...,  987,  988,  989]],\n"
      "\n"
      "        [[ 990,  991,  992,  ...,  998,  999, 1000],\n"
      "         [1001, 1002, 1003,  ..., 1009, 1010, 1011],\n"
      "         [1012, 1013, 1014,  ..., 1020, 1021, 1022],\n"
      "         ...,\n"
      "         [1067, 1068, 1069,  ..., 1075, 1076, 1077],\n"
      "         [1078, 1079, 1080,  ..., 1086, 1087, 1088],\n"
      "         [1089, 1090, 1091,  ..., 1097, 1098, 1099]]])";
  EXPECT_EQ(got, want);
}

TEST(Print, DeviceSuffix) {
  // No CUDA tensor can be made here; an empty view relabelled as cuda:0 shows
  // the suffixes without touching memory. torch:
  //   torch.empty(0, 3, dtype=torch.int32, device='cuda') ->
  //   tensor([], device='cuda:0', size=(0, 3), dtype=torch.int32)
  Tensor e = empty({0, 3}, kInt32).view({0, 3});
  e.impl()->device = Device(kCUDA, 0);
  EXPECT_EQ(to_string(e), "tensor([], device='cuda:0', size=(0, 3), dtype=brisk.int32)");
  Tensor f = empty({0}).view({0});
  f.impl()->device = Device(kCUDA, 1);
  EXPECT_EQ(to_string(f), "tensor([], device='cuda:1')");
}

TEST(Print, RequiresGrad) {
  EXPECT_EQ(to_string(tensor({1.f, 2.f}, TensorOptions().requires_grad())), "tensor([1., 2.], requires_grad=True)");
}

}  // namespace
}  // namespace brisk
