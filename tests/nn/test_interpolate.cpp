// nn::functional::interpolate and nn::Upsample: values from PyTorch (literals
// say which torch gave them), naive per-element references, gradcheck in
// float64, dtypes, layouts, empty inputs and PyTorch's error messages.
#include <cmath>
#include <random>

#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
namespace F = brisk::nn::functional;

namespace {

F::InterpolateFuncOptions by_size(std::vector<int64_t> size, nn::InterpolateMode mode) {
  return F::InterpolateFuncOptions().size(size).mode(mode);
}
F::InterpolateFuncOptions by_factor(std::vector<double> f, nn::InterpolateMode mode) {
  return F::InterpolateFuncOptions().scale_factor(f).mode(mode);
}

// ---- values from torch 2.15 --------------------------------------------------------------

Tensor x3() { return tensor<float>({1, 4, 2, 8, 5}).view({1, 1, 5}); }
Tensor x4() { return tensor<float>({1, 2, 4, 3, 8, 5, 0, 6, 7}).view({1, 1, 3, 3}); }
Tensor x5() { return arange(12, kFloat).pow(1.5).view({1, 1, 2, 2, 3}); }

struct Literal {
  const char* name;
  std::function<Tensor()> run;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

TEST(Interpolate, ValuesFromTorch215) {
  const std::vector<Literal> cases = {
      {"nearest size 8", [] { return F::interpolate(x3(), by_size({8}, kNearest)); }, {1, 1, 8},
       {1, 1, 4, 4, 2, 8, 8, 5}},
      {"nearest sf 1.7", [] { return F::interpolate(x3(), by_factor({1.7}, kNearest)); }, {1, 1, 8},
       {1, 1, 4, 4, 2, 2, 8, 5}},
      {"nearest-exact size 8", [] { return F::interpolate(x3(), by_size({8}, kNearestExact)); }, {1, 1, 8},
       {1, 1, 4, 2, 2, 8, 5, 5}},
      {"nearest size 3", [] { return F::interpolate(x3(), by_size({3}, kNearest)); }, {1, 1, 3}, {1, 4, 8}},
      {"linear size 8", [] { return F::interpolate(x3(), by_size({8}, kLinear)); }, {1, 1, 8},
       {1, 2.3125, 3.875, 2.625, 3.875, 7.625, 6.3125, 5}},
      {"linear size 8 align_corners", [] { return F::interpolate(x3(), by_size({8}, kLinear).align_corners(true)); },
       {1, 1, 8}, {1, 2.71428585, 3.71428561, 2.5714283, 3.71428633, 7.14285755, 6.7142849, 5}},
      {"linear size 3", [] { return F::interpolate(x3(), by_size({3}, kLinear)); }, {1, 1, 3}, {2, 2, 6}},
      {"linear sf 1.7", [] { return F::interpolate(x3(), by_factor({1.7}, kLinear)); }, {1, 1, 8},
       {1, 2.14705896, 3.9117651, 2.88235283, 2.88235378, 6.41176605, 7.02941132, 5.2647047}},
      {"linear sf 1.7 recompute",
       [] { return F::interpolate(x3(), by_factor({1.7}, kLinear).recompute_scale_factor(true)); }, {1, 1, 8},
       {1, 2.3125, 3.875, 2.625, 3.875, 7.625, 6.3125, 5}},
      {"area size 3", [] { return F::interpolate(x3(), by_size({3}, kArea)); }, {1, 1, 3}, {2.5, 4.66666651, 6.5}},
      {"area sf 0.5", [] { return F::interpolate(x3(), by_factor({0.5}, kArea)); }, {1, 1, 2}, {2.33333325, 5}},
      {"bilinear size (4, 5)", [] { return F::interpolate(x4(), by_size({4, 5}, kBilinear)); }, {1, 1, 4, 5},
       {1, 1.4000001, 2, 3.20000029, 4, 2.25, 3.6500001, 5.75, 5.07499981, 4.625,
        1.875, 4.0250001, 7.25, 6.3499999, 5.75, 0, 2.4000001, 6, 6.5999999, 7}},
      {"bilinear size (4, 5) align_corners",
       [] { return F::interpolate(x4(), by_size({4, 5}, kBilinear).align_corners(true)); }, {1, 1, 4, 5},
       {1, 1.5, 2, 3, 4, 2.33333349, 4.16666698, 6, 5.33333349, 4.66666651,
        1.99999988, 4.66666651, 7.33333302, 6.5, 5.66666651, 0, 3, 6, 6.5, 7}},
      {"bicubic size (4, 5)", [] { return F::interpolate(x4(), by_size({4, 5}, kBicubic)); }, {1, 1, 4, 5},
       {0.788007975, 0.963207781, 1.56933594, 3.06430316, 4.15467596, 2.27780914, 4.0649085, 6.05761719, 5.30365562,
        4.26270342, 1.58189106, 4.54076624, 7.93847656, 7.06602097, 5.62820768, -0.798222423, 2.04784751, 5.85644531,
        7.08132362, 7.26711845}},
      {"bicubic size (2, 4) align_corners",
       [] { return F::interpolate(x4(), by_size({2, 4}, kBicubic).align_corners(true)); }, {1, 1, 2, 4},
       {1, 1.46296299, 2.74073982, 4, 0, 3.99999952, 6.98148012, 7}},
      {"bicubic sf 1.5", [] { return F::interpolate(x4(), by_factor({1.5}, kBicubic)); }, {1, 1, 4, 4},
       {0.769724429, 0.924587846, 1.88515961, 3.57519984, 2.02897167, 3.81640625, 5.3142004, 4.48853493, 2.26642919,
        5.7565465, 8.29996777, 5.87962484, -0.0491254777, 3.39644837, 6.95427704, 6.78453588}},
      {"nearest sf (2, 0.7)", [] { return F::interpolate(x4(), by_factor({2, 0.7}, kNearest)); }, {1, 1, 6, 2},
       {1, 2, 1, 2, 3, 8, 3, 8, 0, 6, 0, 6}},
      {"area size (2, 2)", [] { return F::interpolate(x4(), by_size({2, 2}, kArea)); }, {1, 1, 2, 2},
       {3.5, 4.75, 4.25, 6.5}},
      {"trilinear size (3, 3, 4)", [] { return F::interpolate(x5(), by_size({3, 3, 4}, kTrilinear)); },
       {1, 1, 3, 3, 4},
       {0,          0.625,      1.68566012, 2.82842708, 2.59807611, 3.78677845, 5.43914366, 7.00438356, 5.19615221,
        6.9485569,  9.19262695, 11.1803398, 7.34846926, 8.85575771, 10.8730516, 12.7279215, 11.7232723, 13.6373272,
        16.0960102, 18.2797642, 16.0980759, 18.4188957, 21.3189697, 23.8316059, 14.6969385, 17.0865154, 20.0604439,
        22.6274166, 20.8484688, 23.487875,  26.7528782, 29.5551453, 27,         29.8892345, 33.4453125, 36.482872}},
      {"trilinear sf 1.5 align_corners",
       [] { return F::interpolate(x5(), by_factor({1.5}, kTrilinear).align_corners(true)); }, {1, 1, 3, 3, 4},
       {0,          0.666666687, 1.60947585, 2.82842708, 2.59807611, 3.86602521, 5.334795,   7.00438356, 5.19615221,
        7.06538391, 9.06011391,  11.1803398, 7.34846926, 8.95624256, 10.7493944, 12.7279215, 11.7232723, 13.7649307,
        15.950428,  18.2797642,  16.0980759, 18.5736179, 21.1514626, 23.8316059, 14.6969385, 17.2458191, 19.8893127,
        22.6274166, 20.8484688,  23.6638355, 26.566061,  29.5551453, 27,         30.081852,  33.2428093, 36.482872}},
      {"area size (1, 2, 2)", [] { return F::interpolate(x5(), by_size({1, 2, 2}, kArea)); }, {1, 1, 1, 2, 2},
       {8.55429935, 11.2440262, 17.954731, 21.821497}},
      {"nearest-exact size (3, 1, 5)", [] { return F::interpolate(x5(), by_size({3, 1, 5}, kNearestExact)); },
       {1, 1, 3, 1, 5},
       {5.19615221, 5.19615221, 8, 11.1803398, 11.1803398, 27, 27, 31.622776, 36.482872, 36.482872, 27, 27, 31.622776,
        36.482872, 36.482872}},
  };
  for (const Literal& c : cases) {
    Tensor y = c.run();
    EXPECT_EQ(y.dtype(), kFloat) << c.name;
    EXPECT_TRUE(close(y, tensor(c.values, IntArrayRef(c.shape), kFloat), 1e-5, 1e-5)) << c.name;
  }
}

TEST(Interpolate, NearestFollowsPyTorch2Rounding) {
  // nearest-exact from 2 to 41 elements: position 20 is (20 + 0.5) * 2/41 =
  // 0.99999997 in float without fusing; PyTorch 2.15 (fused) reads element 1,
  // 1.13 read element 0.
  Tensor x = tensor<float>({10, 20}).view({1, 1, 2});
  Tensor y = F::interpolate(x, by_size({41}, kNearestExact));
  EXPECT_EQ(y.view({41})[20].item<float>(), 20.0f);
  EXPECT_EQ(y.view({41})[19].item<float>(), 10.0f);
  // float64 positions are floored as float (torch: 14 -> 46 element 23 reads 7).
  Tensor d = arange(14, kDouble).view({1, 1, 14});
  std::vector<double> got = F::interpolate(d, by_size({46}, kNearest)).view({46}).to_vector<double>();
  for (int64_t i = 0; i < 46; ++i)
    EXPECT_EQ(got[i], std::floor(static_cast<float>(static_cast<double>(i) * (14.0 / 46.0)))) << i;
}

// ---- naive references ---------------------------------------------------------------------------

/// PyTorch's source coordinate of output i along one dim (double math).
double src_coord(int64_t i, int64_t in, int64_t out, bool align, std::optional<double> factor, bool cubic) {
  if (align) return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) * static_cast<double>(i) : 0;
  const double scale = factor ? 1.0 / *factor : static_cast<double>(in) / static_cast<double>(out);
  const double x = scale * (static_cast<double>(i) + 0.5) - 0.5;
  return !cubic && x < 0 ? 0 : x;
}

double cubic_weight(double d) {  // Keys, a = -0.75
  const double a = -0.75, t = std::abs(d);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

/// Bilinear or bicubic of a float64 (N, C, H, W) tensor, element by element.
Tensor ref_2d(const Tensor& x, int64_t oh, int64_t ow, bool cubic, bool align, std::optional<double> fh = {},
              std::optional<double> fw = {}) {
  Tensor c = x.contiguous();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  Tensor out = zeros({N, C, oh, ow}, kDouble);
  const double* p = c.data_ptr<double>();
  double* q = out.data_ptr<double>();
  auto at = [&](int64_t n, int64_t ch, int64_t h, int64_t w) {
    h = std::min(std::max<int64_t>(h, 0), H - 1);
    w = std::min(std::max<int64_t>(w, 0), W - 1);
    return p[((n * C + ch) * H + h) * W + w];
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const double y = src_coord(i, H, oh, align, fh, cubic), xx = src_coord(j, W, ow, align, fw, cubic);
          const int64_t y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(xx));
          double acc = 0;
          if (cubic) {
            for (int64_t a = -1; a <= 2; ++a)
              for (int64_t b = -1; b <= 2; ++b)
                acc += cubic_weight(y - static_cast<double>(y0 + a)) * cubic_weight(xx - static_cast<double>(x0 + b)) *
                       at(n, ch, y0 + a, x0 + b);
          } else {
            const double ty = y - static_cast<double>(y0), tx = xx - static_cast<double>(x0);
            acc = (1 - ty) * ((1 - tx) * at(n, ch, y0, x0) + tx * at(n, ch, y0, x0 + 1)) +
                  ty * ((1 - tx) * at(n, ch, y0 + 1, x0) + tx * at(n, ch, y0 + 1, x0 + 1));
          }
          q[((n * C + ch) * oh + i) * ow + j] = acc;
        }
  return out;
}

/// Nearest (exact = nearest-exact) of an (N, C, L) tensor, float index math as PyTorch.
Tensor ref_nearest_1d(const Tensor& x, int64_t out, bool exact, std::optional<double> factor = {}) {
  const int64_t L = x.size(2);
  std::vector<int64_t> idx;
  const float scale = factor ? static_cast<float>(1.0 / *factor) : static_cast<float>(L) / static_cast<float>(out);
  for (int64_t i = 0; i < out; ++i) {
    const float s = exact ? std::fma(scale, static_cast<float>(i) + 0.5f, -0.5f) + 0.5f : static_cast<float>(i) * scale;
    idx.push_back(std::min(static_cast<int64_t>(std::floor(s)), L - 1));
  }
  Tensor r = empty({x.size(0), x.size(1), out}, x.dtype());
  for (int64_t i = 0; i < out; ++i) r.select(2, i).copy_(x.select(2, idx[static_cast<size_t>(i)]));
  return r;
}

TEST(Interpolate, BilinearAndBicubicAgainstReference) {
  manual_seed(3);
  for (int64_t H : {1, 2, 5}) {
    for (int64_t W : {1, 3, 7}) {
      Tensor x = randn({2, 3, H, W}, kDouble);
      for (auto [oh, ow] : {std::pair<int64_t, int64_t>{1, 1}, {4, 9}, {2, 3}, {11, 5}}) {
        for (bool align : {false, true}) {
          for (bool cubic : {false, true}) {
            auto o = by_size({oh, ow}, cubic ? kBicubic : kBilinear).align_corners(align);
            EXPECT_TRUE(close(F::interpolate(x, o), ref_2d(x, oh, ow, cubic, align), 1e-12, 1e-12))
                << H << "x" << W << " -> " << oh << "x" << ow << " align " << align << " cubic " << cubic;
          }
        }
      }
      // scale_factor given: the factor, not in/out, sets the coordinates.
      for (double f : {0.6, 1.7, 2.5}) {
        const int64_t oh = static_cast<int64_t>(std::floor(H * f)), ow = static_cast<int64_t>(std::floor(W * f));
        if (oh < 1 || ow < 1) continue;
        for (bool cubic : {false, true})
          EXPECT_TRUE(close(F::interpolate(x, by_factor({f}, cubic ? kBicubic : kBilinear)),
                            ref_2d(x, oh, ow, cubic, false, f, f), 1e-12, 1e-12))
              << H << "x" << W << " factor " << f;
      }
    }
  }
}

TEST(Interpolate, NearestAgainstReference) {
  manual_seed(4);
  for (int64_t L : {1, 2, 3, 7, 16}) {
    Tensor x = randn({2, 2, L});
    for (int64_t out : {1, 2, 5, 9, 16, 33}) {
      for (bool exact : {false, true}) {
        auto o = by_size({out}, exact ? kNearestExact : kNearest);
        EXPECT_TRUE(F::interpolate(x, o).equal(ref_nearest_1d(x, out, exact))) << L << " -> " << out;
      }
    }
    for (double f : {0.5, 1.3, 2.0, 2.6}) {
      const int64_t out = static_cast<int64_t>(std::floor(L * f));
      if (out < 1) continue;
      for (bool exact : {false, true}) {
        EXPECT_TRUE(F::interpolate(x, by_factor({f}, exact ? kNearestExact : kNearest))
                        .equal(ref_nearest_1d(x, out, exact, f)))
            << L << " factor " << f;
        // recompute_scale_factor: the coordinates come from the sizes alone.
        EXPECT_TRUE(F::interpolate(x, by_factor({f}, exact ? kNearestExact : kNearest).recompute_scale_factor(true))
                        .equal(ref_nearest_1d(x, out, exact)))
            << L << " factor " << f;
      }
    }
  }
  // 2-D and 3-D nearest are the 1-D rule per dim.
  Tensor x = randn({1, 2, 3, 4, 5});
  Tensor y = F::interpolate(x, by_size({5, 2, 8}, kNearest));
  Tensor want = ref_nearest_1d(x.reshape({1, 2 * 3 * 4, 5}), 8, false).reshape({1, 2, 3, 4, 8});
  want = ref_nearest_1d(want.movedim(3, 4).reshape({1, 2 * 3 * 8, 4}), 2, false).reshape({1, 2, 3, 8, 2}).movedim(4, 3);
  want = ref_nearest_1d(want.movedim(2, 4).reshape({1, 2 * 2 * 8, 3}), 5, false).reshape({1, 2, 2, 8, 5}).movedim(4, 2);
  EXPECT_TRUE(y.equal(want));
}

TEST(Interpolate, LinearAndTrilinearAreSeparableLinear) {
  // trilinear == linear along W, then H, then D (float64, up to rounding).
  manual_seed(5);
  Tensor x = randn({2, 1, 3, 4, 5}, kDouble);
  for (bool align : {false, true}) {
    Tensor y = F::interpolate(x, by_size({5, 3, 7}, kTrilinear).align_corners(align));
    auto lin = [align](const Tensor& t, int64_t dim, int64_t out) {
      Tensor m = t.movedim(dim, -1);
      DimVector s(m.sizes().begin(), m.sizes().end());
      Tensor r = F::interpolate(m.reshape({-1, 1, s.back()}), by_size({out}, kLinear).align_corners(align));
      s.back() = out;
      return r.reshape(s).movedim(-1, dim);
    };
    Tensor want = lin(lin(lin(x, 4, 7), 3, 3), 2, 5);
    EXPECT_TRUE(close(y, want, 1e-12, 1e-12)) << align;
  }
}

// ---- gradients -------------------------------------------------------------------------------

/// A float64 leaf whose last two dims are transposed in memory.
Tensor leaf_noncontig(std::vector<int64_t> shape) {
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  Tensor t = randn(shape, kDouble).transpose(-1, -2);
  EXPECT_TRUE(!t.is_contiguous() || shape[shape.size() - 1] == 1 || shape[shape.size() - 2] == 1);
  return t.detach().requires_grad_();
}

TEST(Interpolate, Gradcheck) {
  using brisk::testing::leaf;
  struct Case {
    std::vector<int64_t> in;
    F::InterpolateFuncOptions o;
  };
  const std::vector<Case> cases = {
      {{1, 2, 4}, by_size({7}, kNearest)},
      {{1, 2, 5}, by_size({3}, kNearestExact)},
      {{1, 3, 2}, by_size({5}, kNearestExact)},
      {{2, 1, 4}, by_size({7}, kLinear)},
      {{2, 1, 4}, by_size({3}, kLinear).align_corners(true)},
      {{1, 2, 3, 3}, by_size({4, 5}, kBilinear)},
      {{1, 2, 3, 4}, by_factor({1.5, 0.6}, kBilinear).align_corners(true)},
      {{1, 1, 4, 3}, by_size({5, 6}, kBicubic)},
      {{1, 1, 3, 3}, by_size({2, 5}, kBicubic).align_corners(true)},
      {{1, 1, 2, 3, 2}, by_size({3, 2, 4}, kTrilinear)},
      {{1, 1, 2, 2, 3}, by_factor({2.0}, kNearest)},
      {{1, 2, 5}, by_size({3}, kArea)},
      {{1, 1, 5, 4}, by_size({3, 2}, kArea)},
      {{1, 1, 3, 4, 3}, by_size({2, 3, 2}, kArea)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto o = cases[i].o;
    auto fn = [o](const TensorList& t) { return F::interpolate(t[0], o); };
    EXPECT_TRUE(gradcheck_ok(fn, {leaf(cases[i].in)}, true)) << "case " << i;
    EXPECT_TRUE(gradcheck_ok(fn, {leaf_noncontig(cases[i].in)})) << "case " << i << " non-contiguous";
  }
}

TEST(Interpolate, NearestGradientMatchesTheForward) {
  // 3 -> 3 with scale_factor 1.3 reads elements [0, 0, 1]; the gradient goes
  // there. (PyTorch 2.15's nearest backward treats equal sizes as the
  // identity and gives [1, 1, 1], which is not the forward's gradient.)
  Tensor x = tensor<double>({1, 2, 3}, kDouble).view({1, 1, 3}).requires_grad_();
  Tensor y = F::interpolate(x, by_factor({1.3}, kNearest));
  EXPECT_EQ(y.detach().view({3}).to_vector<double>(), (std::vector<double>{1, 1, 2}));
  y.sum().backward();
  EXPECT_EQ(x.grad().view({3}).to_vector<double>(), (std::vector<double>{2, 1, 0}));
}

// ---- dtypes, layouts, shapes -------------------------------------------------------------------

TEST(Interpolate, Dtypes) {
  manual_seed(6);
  Tensor x = randn({2, 3, 5, 4});
  const std::vector<F::InterpolateFuncOptions> modes = {by_size({7, 3}, kNearest), by_size({7, 3}, kNearestExact),
                                                        by_size({7, 3}, kBilinear), by_size({7, 3}, kBicubic),
                                                        by_size({2, 3}, kArea)};
  for (const auto& o : modes) {
    Tensor ref = F::interpolate(x, o);
    for (ScalarType dt : {kHalf, kBFloat16}) {
      Tensor y = F::interpolate(x.to(dt), o);
      EXPECT_EQ(y.dtype(), dt);
      // float16/bfloat16 compute in float32 from the rounded input.
      EXPECT_TRUE(close(y, F::interpolate(x.to(dt).to(kFloat), o).to(dt), 1e-2, 1e-2)) << nn::mode_name(o.mode());
      EXPECT_TRUE(close(y, ref, 5e-2, 5e-2)) << nn::mode_name(o.mode()) << " " << dt;
    }
    Tensor yd = F::interpolate(x.to(kDouble), o);
    EXPECT_EQ(yd.dtype(), kDouble);
    EXPECT_TRUE(close(yd, ref, 1e-5, 1e-5));
  }
  // uint8 takes the nearest modes (torch 2.15), as exact copies.
  Tensor u = arange(40, kInt64).remainder(256).to(kUInt8).view({1, 2, 4, 5});
  for (auto mode : {kNearest, kNearestExact}) {
    Tensor y = F::interpolate(u, by_size({3, 8}, mode));
    EXPECT_EQ(y.dtype(), kUInt8);
    EXPECT_TRUE(y.to(kFloat).equal(F::interpolate(u.to(kFloat), by_size({3, 8}, mode))));
  }
  expect_error([&] { F::interpolate(u, by_size({3, 8}, kBilinear)); }, {"[interpolate]", "bilinear", "uint8"});
  expect_error([&] { F::interpolate(u, by_size({3, 8}, kArea)); }, {"[interpolate]", "area", "uint8"});
  expect_error([] { F::interpolate(zeros({1, 2, 3}, kInt64), by_size({5}, kNearest)); }, {"[interpolate]", "int64"});
  expect_error([] { F::interpolate(zeros({1, 2, 3}, kInt32), by_size({5}, kLinear)); }, {"[interpolate]", "int32"});
}

TEST(Interpolate, LayoutsAndShapes) {
  manual_seed(7);
  Tensor x = randn({2, 3, 5, 4});
  Tensor cl = x.contiguous(kChannelsLast);
  Tensor t = randn({2, 3, 4, 5}).transpose(2, 3);
  for (auto o : {by_size({7, 6}, kNearest), by_size({7, 6}, kBilinear), by_size({3, 2}, kBicubic),
                 by_size({3, 3}, kArea)}) {
    EXPECT_TRUE(close(F::interpolate(cl, o), F::interpolate(x, o), 1e-6, 1e-6)) << nn::mode_name(o.mode());
    EXPECT_TRUE(close(F::interpolate(t, o), F::interpolate(t.contiguous(), o), 1e-6, 1e-6)) << nn::mode_name(o.mode());
  }
  // A single value of size / scale_factor serves every spatial dim.
  EXPECT_EQ(F::interpolate(x, by_size({6}, kBilinear)).sizes(), IntArrayRef({2, 3, 6, 6}));
  EXPECT_EQ(F::interpolate(x, by_factor({0.5}, kNearest)).sizes(), IntArrayRef({2, 3, 2, 2}));
  // The same size: a copy, not the input.
  Tensor same = F::interpolate(x, by_size({5, 4}, kBilinear));
  EXPECT_TRUE(same.equal(x));
  EXPECT_FALSE(same.is_alias_of(x));
  // An empty batch is fine (torch: (0, 2, 3, 4)); area output of size 0 is empty.
  EXPECT_EQ(F::interpolate(zeros({0, 2, 3, 4}), by_size({3, 4}, kNearest)).sizes(), IntArrayRef({0, 2, 3, 4}));
  EXPECT_EQ(F::interpolate(zeros({0, 2, 3, 4}), by_size({5, 2}, kBilinear)).sizes(), IntArrayRef({0, 2, 5, 2}));
  EXPECT_EQ(F::interpolate(zeros({1, 2, 5}), by_size({0}, kArea)).sizes(), IntArrayRef({1, 2, 0}));
  EXPECT_EQ(F::interpolate(zeros({1, 0, 3, 4}), by_size({5, 4}, kArea)).sizes(), IntArrayRef({1, 0, 5, 4}));
  EXPECT_EQ(F::interpolate(zeros({2, 2, 2, 5, 4}), by_factor({0.5}, kArea)).sizes(), IntArrayRef({2, 2, 1, 2, 2}));
}

TEST(Interpolate, ErrorsAsPyTorch) {
  Tensor x = zeros({1, 2, 4, 5});
  // Python's F.interpolate messages (torch 2.15).
  expect_error([&] { F::interpolate(x, by_size({3}, kNearest).align_corners(true)); },
               {"[interpolate]", "align_corners option can only be set with the interpolating modes: linear | "
                                 "bilinear | bicubic | trilinear"});
  expect_error([&] { F::interpolate(x, by_size({3}, kArea).align_corners(false)); }, {"align_corners option"});
  expect_error([&] { F::interpolate(x, by_size({3}, kNearest).scale_factor(std::vector<double>{2.0})); },
               {"[interpolate]", "only one of size or scale_factor should be defined"});
  expect_error([&] { F::interpolate(x, F::InterpolateFuncOptions()); },
               {"[interpolate]", "either size or scale_factor should be defined"});
  expect_error([&] { F::interpolate(x, by_size({3, 4, 5}, kNearest)); },
               {"Input and output must have the same number of spatial dimensions, but got input with spatial "
                "dimensions of [4, 5] and output size of [3, 4, 5]"});
  expect_error([&] { F::interpolate(x, by_factor({3, 2, 1}, kNearest)); },
               {"Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
                "dimensions of [4, 5] and scale_factor of shape [3, 2, 1]"});
  expect_error([&] { F::interpolate(x, by_size({3}, kNearest).recompute_scale_factor(true)); },
               {"recompute_scale_factor is not meaningful with an explicit size."});
  expect_error([&] { F::interpolate(x, by_size({3}, kLinear)); }, {"Got 4D input, but linear mode needs 3D input"});
  expect_error([&] { F::interpolate(x, by_size({3}, kTrilinear)); },
               {"Got 4D input, but trilinear mode needs 5D input"});
  expect_error([] { F::interpolate(zeros({1, 2, 5}), by_size({3}, kBilinear)); },
               {"Got 3D input, but bilinear mode needs 4D input"});
  expect_error([] { F::interpolate(zeros({1, 2, 2, 2, 2}), by_size({3}, kBicubic)); },
               {"Input Error: Only 3D, 4D and 5D input Tensors supported (got 5D) for the modes: nearest | linear | "
                "bilinear | bicubic | trilinear | area | nearest-exact (got bicubic)"});
  expect_error([] { F::interpolate(zeros({2, 3}), by_size({3}, kNearest)); },
               {"Input Error: Only 3D, 4D and 5D input Tensors supported (got 2D)", "(got nearest)"});
  expect_error([] { F::interpolate(zeros({1, 2, 3, 4, 5, 6}), by_size({3}, kNearest)); }, {"(got 6D)"});
  // The upsampling ops' own checks (torch 2.15 messages).
  expect_error([&] { F::interpolate(x, by_size({0}, kNearest)); },
               {"Input and output sizes should be greater than 0, but got input (H: 4, W: 5) output (H: 0, W: 0)"});
  expect_error([&] { F::interpolate(x, by_factor({0.1}, kBilinear)); },
               {"Input and output sizes should be greater than 0, but got input (H: 4, W: 5) output (H: 0, W: 0)"});
  expect_error([] { F::interpolate(zeros({1, 2, 5}), by_size({0}, kLinear)); },
               {"Input and output sizes should be greater than 0, but got input (W: 5) and output (W: 0)"});
  expect_error([] { F::interpolate(zeros({1, 2, 2, 3, 5}), by_size({0, 1, 2}, kTrilinear)); },
               {"but got input (D: 2, H: 3, W: 5) output (D: 0, H: 1, W: 2)"});
  expect_error([] { F::interpolate(zeros({1, 2, 0, 4}), by_size({3, 4}, kNearest)); },
               {"but got input (H: 0, W: 4) output (H: 3, W: 4)"});
  expect_error([] { F::interpolate(zeros({1, 0, 3, 4}), by_size({3, 4}, kBicubic)); },
               {"Non-empty 4D data tensor expected but got a tensor with sizes [1, 0, 3, 4]"});
  expect_error([] { F::interpolate(zeros({1, 0, 5}), by_size({3}, kNearest)); },
               {"Non-empty 3D data tensor expected but got a tensor with sizes [1, 0, 5]"});
  expect_error([&] { F::interpolate(x, by_size({3}, kBilinear).antialias(true)); }, {"[interpolate]", "antialias"});
  expect_error([] { F::interpolate(Tensor(), by_size({3}, kNearest)); }, {"[interpolate]", "undefined"});
}

TEST(Upsample, Module) {
  manual_seed(8);
  Tensor x = randn({1, 2, 3, 4});
  auto up = std::make_shared<nn::UpsampleImpl>(nn::UpsampleOptions().scale_factor(std::vector<double>{2}));
  EXPECT_TRUE(up->forward(x).equal(F::interpolate(x, by_factor({2}, kNearest))));
  EXPECT_EQ(up->extra_repr(), "scale_factor=2.0, mode='nearest'");
  auto bi = std::make_shared<nn::UpsampleImpl>(
      nn::UpsampleOptions().size(std::vector<int64_t>{5, 6}).mode(kBilinear).align_corners(true));
  EXPECT_TRUE(bi->forward(x).equal(F::interpolate(x, by_size({5, 6}, kBilinear).align_corners(true))));
  EXPECT_EQ(bi->extra_repr(), "size=(5, 6), mode='bilinear'");
  EXPECT_TRUE(bi->parameters().empty());
  // Gradients flow through the module.
  Tensor leaf = randn({1, 1, 2, 2}, kDouble).requires_grad_();
  bi->forward(leaf).sum().backward();
  EXPECT_TRUE(close(leaf.grad().sum(), scalar_tensor(30.0, kDouble)));  // each output's weights sum to 1
  // brisk::kBilinear spells like torch::kBilinear.
  EXPECT_STREQ(nn::mode_name(brisk::kNearestExact), "nearest-exact");
}

}  // namespace

// PyTorch 2.15's kernels compute the source coordinate scale * (i + 0.5) - 0.5
// with one rounding in some modes and two in others (fused_source_coordinate
// in src/nn/upsampling.cpp): a weight that is exactly 0 unfused is 1.5e-8
// fused, visible next to a 3e38 (fuzzer nn2 seed 631 case 1274688: a
// trilinear 3.7e30 where torch gives -0.25). Its linear and trilinear
// kernels weight 16-bit inputs in that dtype (t, then 1 - t, each rounded).
// Values from torch 2.15.
TEST(Interpolate, SourceCoordinatesAndWeightsAsPyTorchsKernels) {
  auto along = [](const Tensor& y) {
    const Tensor v = y.to(kDouble).contiguous().reshape({-1});
    return std::vector<double>(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
  };
  Tensor x3 = zeros({1, 1, 2, 2, 2});
  x3.index_put_({0, 0, 1, 0, 0}, 3e38);
  const Tensor t3 = F::interpolate(x3, F::InterpolateFuncOptions()
                                           .scale_factor(std::vector<double>{3.0, 1.0, 1.0})
                                           .mode(nn::kTrilinear)
                                           .align_corners(false));
  EXPECT_EQ(along(t3.select(4, 0).select(3, 0)),
            (std::vector<double>{0.0, 0.0, 1.0000001708526653e+38, 2.0000003417053306e+38, 3.0000000054977558e+38,
                                 3.0000000054977558e+38}));
  Tensor x2 = zeros({1, 1, 2, 2});
  x2.index_put_({0, 0, 1, 0}, 3e38);
  const Tensor t2 = F::interpolate(
      x2, F::InterpolateFuncOptions().scale_factor(std::vector<double>{3.0, 1.0}).mode(nn::kBilinear).align_corners(false));
  EXPECT_EQ(along(t2.select(3, 0)),
            (std::vector<double>{0.0, 4.4703483663465914e+30, 1.0000001708526653e+38, 2.0000001388812345e+38,
                                 3.0000000054977558e+38, 3.0000000054977558e+38}));
  const Tensor x1 = tensor<double>({0.0, 3e38, 0.0}, kDouble).to(kBFloat16).reshape({1, 1, 3});
  const Tensor t1 = F::interpolate(
      x1, F::InterpolateFuncOptions().scale_factor(std::vector<double>{3.0}).mode(nn::kLinear).align_corners(false));
  EXPECT_EQ(along(t1), (std::vector<double>{0.0, 4.476391182055935e+30, 1.0035671368176115e+38, 2.007134273635223e+38,
                                            3.00405527047391e+38, 1.9938419936773738e+38, 9.969209968386869e+37, 0.0,
                                            0.0}));
}
