// The CUDA pooling, normalization and factory kernels (src/backend/cuda/
// {pooling,normalization,factories}.cu) against brisk's CPU implementation
// on the same inputs: forward values, indices, input and parameter
// gradients, double backward, running statistics, every layout (NCHW,
// channels_last, 2-D/3-D/5-D inputs) and floating dtype, the modules, and
// arange/linspace bit for bit. Every test skips without a device (the
// window arithmetic and launch plans are tested on the CPU in
// test_cuda_nn_host.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
namespace F = brisk::nn::functional;
using brisk::testing::close;

namespace {

const Device kGpu(kCUDA);
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
const std::vector<ScalarType> kFloats = {kFloat, kDouble, kHalf, kBFloat16};

struct Tol {
  double rtol, atol;
};
/// Pooling: values are copies or short sums (one rounding of the result).
Tol pool_tol(ScalarType t) {
  switch (t) {
    case kFloat: return {1e-5, 1e-6};
    case kDouble: return {1e-12, 1e-12};
    case kHalf: return {2e-3, 2e-3};
    default: return {1.6e-2, 1.6e-2};
  }
}
/// Normalization: statistics summed in another order (and by Welford's
/// updates instead of two passes), normalized outputs of unit scale.
Tol norm_tol(ScalarType t) {
  switch (t) {
    case kFloat: return {2e-4, 2e-4};
    case kDouble: return {1e-9, 1e-9};
    case kHalf: return {1e-2, 1e-2};
    default: return {6e-2, 6e-2};
  }
}

std::string name(ScalarType t) { return std::string(dtype_name(t)); }

/// Random CPU values in dtype dt.
Tensor values(IntArrayRef shape, ScalarType dt, double scale = 2.0) { return (randn(shape, kDouble) * scale).to(dt); }

Tensor in_layout(const Tensor& t, bool cl) { return cl ? t.contiguous(kChannelsLast) : t.contiguous(); }

bool is_cl(const Tensor& t) { return t.dim() == 4 && t.is_contiguous(kChannelsLast) && !t.is_contiguous(); }

/// Bytes of two tensors equal (after moving to the CPU, contiguous).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.sizes() == b.sizes())) return false;
  const Tensor x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.numel()) * element_size(x.dtype())) == 0;
}

using Fn = std::function<Tensor(const Tensor&)>;

/// f on the CPU and on the GPU from the same input (x's layout kept):
/// forward values and the input gradient for the same random output
/// gradient. Output and gradient layouts must be the CPU's, and
/// channels_last when `cl` (unless the output is 1x1, which is both). The
/// gradient's tolerance is 5x wider for 16-bit types: where windows
/// overlap, the CPU rounds to the 16-bit type after each addition, the GPU
/// once after summing in float.
void check_fwd_bwd(const Tensor& x, const Fn& f, Tol t, const std::string& what, bool cl) {
  SCOPED_TRACE(what);
  const Tensor xc = x.detach().requires_grad_();
  const Tensor yc = f(xc);
  const Tensor gy = values(yc.sizes(), x.dtype(), 1.0);
  yc.backward(gy);
  const Tensor xg = x.to(kGpu).detach().requires_grad_();
  ASSERT_EQ(is_cl(xg), is_cl(x));
  const Tensor yg = f(xg);
  ASSERT_TRUE(yg.is_cuda());
  EXPECT_EQ(is_cl(yg), is_cl(yc)) << "output layout";
  if (cl && yc.size(-1) * yc.size(-2) > 1) EXPECT_TRUE(is_cl(yg)) << "output layout";
  EXPECT_TRUE(close(yg.cpu(), yc, t.rtol, t.atol)) << "forward";
  yg.backward(gy.to(kGpu));
  ASSERT_TRUE(xg.grad().defined());
  EXPECT_TRUE(xg.grad().is_cuda());
  EXPECT_EQ(is_cl(xg.grad()), is_cl(xc.grad())) << "gradient layout";
  if (cl) EXPECT_TRUE(is_cl(xg.grad())) << "gradient layout";
  const double wide = (x.dtype() == kHalf || x.dtype() == kBFloat16) ? 5.0 : 1.0;
  EXPECT_TRUE(close(xg.grad().cpu(), xc.grad(), wide * t.rtol, wide * t.atol)) << "input gradient";
}

// ---- interpolate ---------------------------------------------------------------------------------------
// A composite (index_select, mul, add, adaptive_avg_pool2d): the same ops on
// both devices, so values and gradients agree to rounding.

TEST(CudaInterpolate, EveryModeMatchesTheCpu) {
  REQUIRE_CUDA();
  manual_seed(40);
  using Sizes = std::vector<int64_t>;
  using Factors = std::vector<double>;
  struct Case {
    Sizes shape;
    F::InterpolateFuncOptions o;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9}, F::InterpolateFuncOptions().size(Sizes{14}).mode(kNearest)},
      {{2, 3, 9}, F::InterpolateFuncOptions().scale_factor(Factors{0.6}).mode(kNearestExact)},
      {{2, 3, 9}, F::InterpolateFuncOptions().size(Sizes{5}).mode(kLinear).align_corners(true)},
      {{2, 3, 7, 6}, F::InterpolateFuncOptions().size(Sizes{11, 4}).mode(kBilinear)},
      {{2, 3, 7, 6}, F::InterpolateFuncOptions().scale_factor(Factors{1.5}).mode(kBicubic)},
      {{2, 3, 7, 6}, F::InterpolateFuncOptions().size(Sizes{3, 4}).mode(kArea)},
      {{1, 2, 3, 4, 5}, F::InterpolateFuncOptions().size(Sizes{5, 3, 7}).mode(kTrilinear)},
      {{1, 2, 4, 4, 6}, F::InterpolateFuncOptions().size(Sizes{2, 3, 4}).mode(kArea)},
      {{1, 2, 3, 4, 5}, F::InterpolateFuncOptions().scale_factor(Factors{2}).mode(kNearest)},
  };
  for (const Case& c : cases)
    for (ScalarType dt : kFloats) {
      const auto o = c.o;
      Tol t = pool_tol(dt);
      if (dt == kFloat) t = {1e-5, 1e-5};
      check_fwd_bwd(values(c.shape, dt), [o](const Tensor& a) { return F::interpolate(a, o); }, t,
                    std::string(nn::mode_name(o.mode())) + " " + name(dt), false);
    }
  // uint8 nearest: exact copies.
  Tensor u = (randn({2, 3, 5, 4}).abs() * 50).to(kUInt8);
  const auto o = F::InterpolateFuncOptions().size(std::vector<int64_t>{7, 9}).mode(kNearestExact);
  EXPECT_TRUE(same_bits(F::interpolate(u.to(kGpu), o), F::interpolate(u, o)));
}

// ---- max pooling --------------------------------------------------------------------------------------

struct MaxCase {
  int64_t N, C, H, W, kH, kW, sH, sW, pH, pW, dH, dW;
  bool ceil;
};
// Tiling 2x2; overlapping with padding and ceil_mode; dilation; rectangular
// windows and strides; a window with no input position (W = 1, padding 1,
// dilation 2: taps at -1 and 1).
const std::vector<MaxCase> kMaxCases = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 1, 1, false},  {2, 3, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, true},
    {1, 4, 10, 11, 3, 2, 1, 1, 1, 0, 2, 3, false}, {3, 2, 7, 9, 2, 3, 3, 2, 1, 1, 1, 1, true},
    {1, 5, 13, 5, 4, 1, 3, 1, 2, 0, 1, 1, true},   {1, 2, 3, 1, 1, 2, 1, 1, 0, 1, 1, 2, false},
    {2, 3, 17, 16, 3, 3, 1, 1, 1, 1, 1, 1, false},
};

F::MaxPool2dFuncOptions max_opts(const MaxCase& c) {
  return F::MaxPool2dFuncOptions({c.kH, c.kW}).stride({c.sH, c.sW}).padding({c.pH, c.pW}).dilation({c.dH, c.dW}).ceil_mode(
      c.ceil);
}

std::string describe(const MaxCase& c) {
  return "x " + std::to_string(c.N) + "x" + std::to_string(c.C) + "x" + std::to_string(c.H) + "x" +
         std::to_string(c.W) + " k " + std::to_string(c.kH) + "x" + std::to_string(c.kW) + " s " +
         std::to_string(c.sH) + "x" + std::to_string(c.sW) + " p " + std::to_string(c.pH) + "x" +
         std::to_string(c.pW) + " d " + std::to_string(c.dH) + "x" + std::to_string(c.dW) + (c.ceil ? " ceil" : "");
}

/// Values and indices of max_pool2d_with_indices on both devices (indices exact).
void check_max_indices(const Tensor& x, const F::MaxPool2dFuncOptions& o, const std::string& what) {
  SCOPED_TRACE(what);
  const auto [vc, ic] = F::max_pool2d_with_indices(x, o);
  const auto [vg, ig] = F::max_pool2d_with_indices(x.to(kGpu), o);
  ASSERT_TRUE(vg.is_cuda() && ig.is_cuda());
  EXPECT_EQ(ig.dtype(), kInt64);
  EXPECT_EQ(is_cl(vg), is_cl(vc));
  EXPECT_EQ(is_cl(ig), is_cl(ic));
  // the values are copies of inputs (NaN where NaN won)
  EXPECT_TRUE(close(vg.cpu(), vc, 0, 0)) << "values";
  EXPECT_TRUE(equal(ig.cpu(), ic)) << "indices";
}

}  // namespace

TEST(CudaPooling, MaxPool2dEveryGeometryLayoutDtype) {
  REQUIRE_CUDA();
  manual_seed(11);
  for (const MaxCase& c : kMaxCases)
    for (ScalarType dt : kFloats)
      for (bool cl : {false, true}) {
        const Tensor x = in_layout(values({c.N, c.C, c.H, c.W}, dt), cl);
        const std::string what = describe(c) + " " + name(dt) + (cl ? " channels_last" : "");
        check_max_indices(x, max_opts(c), what);
        check_fwd_bwd(x, [&](const Tensor& t) { return F::max_pool2d(t, max_opts(c)); }, pool_tol(dt), what,
                      cl && is_cl(x));
      }
}

TEST(CudaPooling, MaxPool2dNanInfTies) {
  REQUIRE_CUDA();
  manual_seed(12);
  for (ScalarType dt : kFloats)
    for (bool cl : {false, true}) {
      // small integers: many ties (the first tap in row-major order wins)
      Tensor v = randint(0, 3, {2, 3, 9, 10}).to(kDouble);
      const Tensor u = rand({2, 3, 9, 10}, kDouble);
      v = where(u < 0.05, Scalar(kNan), v);
      v = where((u >= 0.05) & (u < 0.25), Scalar(-kInf), v);
      const Tensor x = in_layout(v.to(dt), cl);
      for (const MaxCase& c : kMaxCases) {
        if (c.N != 2 || c.C != 3) continue;
        check_max_indices(x, max_opts(c), "nan/inf/ties " + describe(c) + " " + name(dt) + (cl ? " cl" : ""));
      }
      // a plane of -inf only: the first in-bounds tap is reported
      const Tensor ninf = in_layout(full({1, 2, 4, 4}, -kInf, TensorOptions(dt)), cl);
      check_max_indices(ninf, F::MaxPool2dFuncOptions(3).stride(1).padding(1), "all -inf " + name(dt));
    }
}

TEST(CudaPooling, MaxPoolOneDimUnbatchedNonContiguousEmpty) {
  REQUIRE_CUDA();
  manual_seed(13);
  for (ScalarType dt : {kFloat, kHalf}) {
    const Tol t = pool_tol(dt);
    // 1-D, batched and not
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{3, 4, 23}, {4, 23}}) {
      const Tensor x = values(shape, dt);
      const auto o = F::MaxPool1dFuncOptions(4).stride(3).padding(2).dilation(2).ceil_mode(true);
      const auto [vc, ic] = F::max_pool1d_with_indices(x, o);
      const auto [vg, ig] = F::max_pool1d_with_indices(x.to(kGpu), o);
      EXPECT_TRUE(close(vg.cpu(), vc, 0, 0));
      EXPECT_TRUE(equal(ig.cpu(), ic));
      check_fwd_bwd(x, [&](const Tensor& a) { return F::max_pool1d(a, o); }, t, "max_pool1d " + name(dt), false);
    }
    // unbatched 2-D and a non-contiguous (transposed) input
    check_fwd_bwd(values({3, 9, 8}, dt), [](const Tensor& a) { return F::max_pool2d(a, 3, 2, 1); }, t,
                  "unbatched " + name(dt), false);
    check_fwd_bwd(values({2, 3, 8, 11}, dt).transpose(2, 3), [](const Tensor& a) { return F::max_pool2d(a, 2); }, t,
                  "transposed " + name(dt), false);
  }
  // an empty batch
  const Tensor e = empty({0, 3, 8, 8}, TensorOptions(kFloat).device(kGpu));
  const auto [v, i] = F::max_pool2d_with_indices(e, 2);
  EXPECT_EQ(v.sizes(), IntArrayRef({0, 3, 4, 4}));
  EXPECT_EQ(i.sizes(), IntArrayRef({0, 3, 4, 4}));
}

TEST(CudaPooling, MaxPoolDoubleBackward) {
  REQUIRE_CUDA();
  manual_seed(14);
  for (ScalarType dt : {kFloat, kDouble})
    for (bool cl : {false, true}) {
      const auto o = F::MaxPool2dFuncOptions(3).stride(2).padding(1).ceil_mode(true);
      const Tensor x0 = in_layout(values({2, 3, 9, 8}, dt), cl);
      const Tensor gy0 = values(F::max_pool2d(x0, o).sizes(), dt);
      const Tensor w0 = values({2, 3, 9, 8}, dt);
      auto run = [&](Device d) {
        const Tensor x = x0.to(d).detach().requires_grad_();
        const Tensor gy = gy0.to(d).detach().requires_grad_();
        const Tensor y = F::max_pool2d(x, o);
        const Tensor g = autograd::grad({y}, {x}, {gy}, std::nullopt, /*create_graph=*/true)[0];
        return autograd::grad({(g * w0.to(d)).sum()}, {gy})[0].cpu();
      };
      EXPECT_TRUE(close(run(kGpu), run(kCPU), 1e-6, 1e-6)) << name(dt) << (cl ? " channels_last" : "");
    }
}

// ---- average pooling ---------------------------------------------------------------------------------

namespace {
struct AvgCase {
  int64_t N, C, H, W, kH, kW, sH, sW, pH, pW;
  bool ceil, count_pad;
  int64_t divisor;  // 0: none
};
const std::vector<AvgCase> kAvgCases = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, false, true, 0},   {2, 3, 9, 7, 3, 3, 2, 2, 1, 1, true, true, 0},
    {2, 3, 9, 7, 3, 3, 2, 2, 1, 1, true, false, 0},   {1, 4, 10, 11, 3, 2, 1, 1, 1, 1, false, false, 0},
    {3, 2, 7, 9, 2, 3, 3, 2, 1, 1, true, true, 5},    {1, 5, 13, 5, 5, 1, 3, 1, 2, 0, true, false, -3},
    {1, 3, 12, 12, 8, 8, 4, 4, 4, 4, false, true, 0},  // large windows (64 taps)
};
F::AvgPool2dFuncOptions avg_opts(const AvgCase& c) {
  auto o = F::AvgPool2dFuncOptions({c.kH, c.kW})
               .stride({c.sH, c.sW})
               .padding({c.pH, c.pW})
               .ceil_mode(c.ceil)
               .count_include_pad(c.count_pad);
  if (c.divisor != 0) o.divisor_override(c.divisor);
  return o;
}
std::string describe(const AvgCase& c) {
  return "x " + std::to_string(c.H) + "x" + std::to_string(c.W) + " k " + std::to_string(c.kH) + "x" +
         std::to_string(c.kW) + " s " + std::to_string(c.sH) + "x" + std::to_string(c.sW) + " p " +
         std::to_string(c.pH) + "x" + std::to_string(c.pW) + (c.ceil ? " ceil" : "") +
         (c.count_pad ? "" : " exclude_pad") + (c.divisor ? " divisor " + std::to_string(c.divisor) : "");
}
}  // namespace

TEST(CudaPooling, AvgPool2dEveryOptionLayoutDtype) {
  REQUIRE_CUDA();
  manual_seed(21);
  for (const AvgCase& c : kAvgCases)
    for (ScalarType dt : kFloats)
      for (bool cl : {false, true}) {
        const Tensor x = in_layout(values({c.N, c.C, c.H, c.W}, dt), cl);
        check_fwd_bwd(x, [&](const Tensor& t) { return F::avg_pool2d(t, avg_opts(c)); }, pool_tol(dt),
                      describe(c) + " " + name(dt) + (cl ? " channels_last" : ""), cl);
      }
}

TEST(CudaPooling, AdaptiveAvgPool2dEverySizeLayoutDtype) {
  REQUIRE_CUDA();
  manual_seed(22);
  struct Case {
    int64_t H, W, OH, OW;
  };
  // global average (one warp per output in NCHW), sizes that do not divide,
  // outputs larger than the input, partial rows in the warp kernel
  const std::vector<Case> cases = {{16, 16, 1, 1}, {7, 11, 3, 5}, {7, 3, 9, 4}, {40, 40, 2, 2}, {5, 5, 5, 5}};
  for (const Case& c : cases)
    for (ScalarType dt : kFloats)
      for (bool cl : {false, true}) {
        const Tensor x = in_layout(values({2, 3, c.H, c.W}, dt), cl);
        check_fwd_bwd(x, [&](const Tensor& t) { return F::adaptive_avg_pool2d(t, {c.OH, c.OW}); }, pool_tol(dt),
                      "adaptive " + std::to_string(c.H) + "x" + std::to_string(c.W) + " -> " + std::to_string(c.OH) +
                          "x" + std::to_string(c.OW) + " " + name(dt) + (cl ? " channels_last" : ""),
                      cl);
      }
}

TEST(CudaPooling, AvgPool1dUnbatchedEmptyAndDoubleBackward) {
  REQUIRE_CUDA();
  manual_seed(23);
  const auto o = F::AvgPool1dFuncOptions(4).stride(3).padding(2).ceil_mode(true).count_include_pad(false);
  check_fwd_bwd(values({3, 4, 23}, kFloat), [&](const Tensor& a) { return F::avg_pool1d(a, o); }, pool_tol(kFloat),
                "avg_pool1d", false);
  check_fwd_bwd(values({3, 9, 8}, kFloat), [](const Tensor& a) { return F::avg_pool2d(a, 3, 2, 1); },
                pool_tol(kFloat), "avg_pool2d unbatched", false);
  const Tensor e = F::adaptive_avg_pool2d(empty({0, 3, 8, 8}, TensorOptions(kFloat).device(kGpu)), 2);
  EXPECT_EQ(e.sizes(), IntArrayRef({0, 3, 2, 2}));
  for (bool cl : {false, true}) {
    const Tensor x0 = in_layout(values({2, 3, 9, 8}, kDouble), cl);
    const Tensor w0 = values({2, 3, 9, 8}, kDouble);
    auto run = [&](Device d) {
      const Tensor x = x0.to(d).detach().requires_grad_();
      const Tensor y = F::avg_pool2d(x, 3, 2, 1, true, false);
      const Tensor gy = ones_like(y).requires_grad_();
      const Tensor g = autograd::grad({y}, {x}, {gy}, std::nullopt, true)[0];
      return autograd::grad({(g * w0.to(d)).sum()}, {gy})[0].cpu();
    };
    EXPECT_TRUE(close(run(kGpu), run(kCPU), 1e-12, 1e-12)) << (cl ? "channels_last" : "nchw");
  }
}

// Strides and sizes whose products pass 2^31 take the 64-bit index path
// (small tensors, so it is cheap to run).
TEST(CudaPooling, SixtyFourBitIndexPath) {
  REQUIRE_CUDA();
  manual_seed(24);
  const Tensor x = values({1, 2, 50000, 1}, kFloat);
  check_fwd_bwd(x, [](const Tensor& a) { return F::adaptive_avg_pool2d(a, {50000, 1}); }, pool_tol(kFloat),
                "adaptive 50000 -> 50000", false);
  // (the 32-bit path at its limit: 50001 * 30001 < 2^31)
  check_fwd_bwd(x, [](const Tensor& a) { return F::adaptive_avg_pool2d(a, {30000, 1}); }, pool_tol(kFloat),
                "adaptive 50000 -> 30000", false);
  const Tensor y = values({2, 3, 5, 7}, kFloat);
  const int64_t big = int64_t(1) << 31;
  check_max_indices(y, F::MaxPool2dFuncOptions(1).stride({1, big}), "max stride 2^31");
  check_fwd_bwd(y, [&](const Tensor& a) { return F::max_pool2d(a, F::MaxPool2dFuncOptions(1).stride({1, big})); },
                pool_tol(kFloat), "max stride 2^31", false);
  check_fwd_bwd(y, [&](const Tensor& a) { return F::avg_pool2d(a, F::AvgPool2dFuncOptions(1).stride({big, 1})); },
                pool_tol(kFloat), "avg stride 2^31", false);
}

TEST(CudaPooling, ModulesOnCuda) {
  REQUIRE_CUDA();
  manual_seed(25);
  const Tensor x = values({2, 4, 12, 10}, kFloat);
  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> mods = {
      {"MaxPool2d", std::make_shared<nn::MaxPool2dImpl>(nn::MaxPool2dOptions(3).stride(2).padding(1))},
      {"AvgPool2d", std::make_shared<nn::AvgPool2dImpl>(nn::AvgPool2dOptions(2).ceil_mode(true))},
      {"AdaptiveAvgPool2d", std::make_shared<nn::AdaptiveAvgPool2dImpl>(nn::AdaptiveAvgPool2dOptions({3, 4}))},
  };
  for (auto& [n, m] : mods)
    for (bool cl : {false, true})
      check_fwd_bwd(in_layout(x, cl), [&](const Tensor& t) { return m->forward(t); }, pool_tol(kFloat), n, cl);
  nn::MaxPool1d m1(nn::MaxPool1dOptions(3).stride(2));
  const Tensor x1 = values({2, 4, 19}, kFloat);
  EXPECT_TRUE(close(m1->forward(x1.to(kGpu)).cpu(), m1->forward(x1), 0, 0));
  nn::MaxPool2d m2(nn::MaxPool2dOptions(2));
  const auto [v, i] = m2->forward_with_indices(x.to(kGpu));
  EXPECT_TRUE(equal(i.cpu(), std::get<1>(m2->forward_with_indices(x))));
}

TEST(CudaPooling, BackwardIsDeterministic) {
  REQUIRE_CUDA();
  manual_seed(26);
  const Tensor x = randint(0, 4, {4, 8, 33, 31}).to(kFloat).to(kGpu);  // ties: winners shared by windows
  const Tensor gy = values({4, 8, 31, 29}, kFloat).to(kGpu);
  Tensor first;
  for (int r = 0; r < 3; ++r) {
    const Tensor xr = x.detach().requires_grad_();
    F::max_pool2d(xr, 3, 1).backward(gy);
    if (r == 0)
      first = xr.grad().cpu();
    else
      EXPECT_TRUE(same_bits(xr.grad(), first)) << "run " << r;
  }
}

// ---- batch_norm -------------------------------------------------------------------------------------------

namespace {

/// A CPU input of the given shape in a layout: contiguous, or channels_last
/// (4-D only).
Tensor norm_input(IntArrayRef shape, ScalarType dt, bool cl, double mean = 0.0) {
  Tensor x = (randn(shape, kDouble) * 1.5 + mean).to(dt);
  return cl ? x.contiguous(kChannelsLast) : x;
}

struct BnRun {
  Tensor y, rm, rv, dx, dw, db;
};

/// batch_norm on device d: output, running stats after the call, gradients
/// of x, weight, bias for the output gradient gy.
BnRun run_bn(const Tensor& x0, const Tensor& w0, const Tensor& b0, const Tensor& rm0, const Tensor& rv0,
             const Tensor& gy0, bool training, Device d) {
  BnRun r;
  const Tensor x = x0.to(d).detach().requires_grad_();
  const Tensor w = w0.defined() ? w0.to(d).detach().requires_grad_() : Tensor();
  const Tensor b = b0.defined() ? b0.to(d).detach().requires_grad_() : Tensor();
  const Tensor rm = rm0.defined() ? rm0.to(d, false, true) : Tensor();
  const Tensor rv = rv0.defined() ? rv0.to(d, false, true) : Tensor();
  const Tensor y = F::batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
  EXPECT_EQ(y.device().type, d.type);
  EXPECT_EQ(is_cl(y), is_cl(x0));
  y.backward(gy0.to(d));
  r.y = y.detach().cpu();
  if (rm.defined()) r.rm = rm.cpu(), r.rv = rv.cpu();
  r.dx = x.grad().cpu();
  EXPECT_EQ(is_cl(x.grad()), is_cl(x0));
  if (w.defined()) r.dw = w.grad().cpu(), r.db = b.grad().cpu();
  return r;
}

void compare_bn(const BnRun& g, const BnRun& c, Tol t, const std::string& what) {
  EXPECT_TRUE(close(g.y, c.y, t.rtol, t.atol)) << what << ": output";
  if (c.rm.defined()) {
    EXPECT_TRUE(close(g.rm, c.rm, t.rtol, t.atol)) << what << ": running_mean";
    EXPECT_TRUE(close(g.rv, c.rv, t.rtol, t.atol)) << what << ": running_var";
  }
  EXPECT_TRUE(close(g.dx, c.dx, t.rtol, t.atol)) << what << ": input gradient";
  if (c.dw.defined()) {
    // sums over every position: scale the tolerance with their size
    const double scale = std::max(1.0, c.dw.abs().max().item<double>());
    EXPECT_TRUE(close(g.dw, c.dw, t.rtol, t.atol * scale)) << what << ": weight gradient";
    EXPECT_TRUE(close(g.db, c.db, t.rtol, t.atol * std::max(1.0, c.db.abs().max().item<double>())))
        << what << ": bias gradient";
  }
}

struct Shape {
  std::vector<int64_t> s;
  bool cl;
};
// (N, C), (N, C, L), NCHW, channels_last, (N, C, D, H, W), channels_last
// with C = 3 (narrow channel tiles), and NCHW with one long plane (splits).
const std::vector<Shape> kNormShapes = {{{16, 5}, false},       {{4, 6, 9}, false},   {{3, 5, 6, 7}, false},
                                        {{3, 5, 6, 7}, true},   {{2, 4, 3, 4, 5}, false}, {{4, 3, 9, 9}, true},
                                        {{2, 40, 3, 3}, true}, {{1, 2, 130, 130}, false}};

std::string describe(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.s.size(); ++i) r += (i ? ", " : "") + std::to_string(s.s[i]);
  return r + ")" + (s.cl ? " channels_last" : "");
}

}  // namespace

TEST(CudaNorm, BatchNormTrainingEveryLayoutDtype) {
  REQUIRE_CUDA();
  manual_seed(31);
  for (const Shape& sh : kNormShapes)
    for (ScalarType dt : kFloats)
      for (bool affine : {true, false}) {
        const int64_t C = sh.s[1];
        // 16-bit inputs with float32 parameters and statistics (mixed, as AMP), else the input's dtype
        const ScalarType pdt = (dt == kHalf || dt == kBFloat16) && affine ? kFloat : dt;
        const Tensor x = norm_input(sh.s, dt, sh.cl, 0.5);
        const Tensor w = affine ? (rand({C}, kDouble) + 0.5).to(pdt) : Tensor();
        const Tensor b = affine ? randn({C}, kDouble).to(pdt) : Tensor();
        const Tensor rm = randn({C}, kDouble).to(pdt), rv = (rand({C}, kDouble) + 0.5).to(pdt);
        const Tensor gy = values(sh.s, dt, 1.0);
        const std::string what = "batch_norm train " + describe(sh) + " " + name(dt) + (affine ? " affine" : "");
        compare_bn(run_bn(x, w, b, rm, rv, gy, true, kGpu), run_bn(x, w, b, rm, rv, gy, true, kCPU), norm_tol(dt),
                   what);
      }
  // no running statistics
  const Tensor x = norm_input({4, 3, 5, 5}, kFloat, true);
  const Tensor gy = values({4, 3, 5, 5}, kFloat, 1.0);
  compare_bn(run_bn(x, Tensor(), Tensor(), Tensor(), Tensor(), gy, true, kGpu),
             run_bn(x, Tensor(), Tensor(), Tensor(), Tensor(), gy, true, kCPU), norm_tol(kFloat), "no running stats");
}

TEST(CudaNorm, BatchNormEvalEveryLayoutDtype) {
  REQUIRE_CUDA();
  manual_seed(32);
  for (const Shape& sh : kNormShapes)
    for (ScalarType dt : kFloats) {
      const int64_t C = sh.s[1];
      const Tensor x = norm_input(sh.s, dt, sh.cl);
      const Tensor w = (rand({C}, kDouble) + 0.5).to(dt), b = randn({C}, kDouble).to(dt);
      const Tensor rm = randn({C}, kDouble).to(dt), rv = (rand({C}, kDouble) + 0.5).to(dt);
      const Tensor gy = values(sh.s, dt, 1.0);
      compare_bn(run_bn(x, w, b, rm, rv, gy, false, kGpu), run_bn(x, w, b, rm, rv, gy, false, kCPU), norm_tol(dt),
                 "batch_norm eval " + describe(sh) + " " + name(dt));
    }
}

// Far-from-zero means (the CPU test: 10^4 standard deviations), long
// channels split across many warps/blocks, and the same bits on every run.
TEST(CudaNorm, BatchNormLargeOffsetSplitsDeterministic) {
  REQUIRE_CUDA();
  manual_seed(33);
  for (bool cl : {false, true}) {
    const Tensor x = norm_input({2, 3, 300, 301}, kFloat, cl, 1e4);
    const Tensor w = (rand({3}, kDouble) + 0.5).to(kFloat), b = randn({3}, kDouble).to(kFloat);
    const Tensor rm = zeros({3}), rv = ones({3});
    const Tensor gy = values({2, 3, 300, 301}, kFloat, 1.0);
    const BnRun g = run_bn(x, w, b, rm, rv, gy, true, kGpu);
    compare_bn(g, run_bn(x, w, b, rm, rv, gy, true, kCPU), {1e-3, 1e-3}, cl ? "offset channels_last" : "offset nchw");
    const BnRun g2 = run_bn(x, w, b, rm, rv, gy, true, kGpu);
    EXPECT_TRUE(same_bits(g.y, g2.y) && same_bits(g.rm, g2.rm) && same_bits(g.rv, g2.rv) && same_bits(g.dx, g2.dx) &&
                same_bits(g.dw, g2.dw) && same_bits(g.db, g2.db))
        << "not deterministic";
  }
}

TEST(CudaNorm, BatchNormEmptyBatch) {
  REQUIRE_CUDA();
  const Tensor x = empty({0, 3, 4, 4}, TensorOptions(kFloat).device(kGpu)).requires_grad_();
  const Tensor w = ones({3}, TensorOptions().device(kGpu)).requires_grad_();
  const Tensor b = zeros({3}, TensorOptions().device(kGpu)).requires_grad_();
  const Tensor rm = zeros({3}, TensorOptions().device(kGpu)), rv = ones({3}, TensorOptions().device(kGpu));
  const Tensor y = F::batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
  EXPECT_EQ(y.sizes(), x.sizes());
  y.sum().backward();
  EXPECT_TRUE(equal(rm.cpu(), zeros({3})));
  EXPECT_TRUE(equal(rv.cpu(), ones({3})));
  EXPECT_TRUE(equal(w.grad().cpu(), zeros({3})));
  EXPECT_TRUE(equal(b.grad().cpu(), zeros({3})));
}

TEST(CudaNorm, BatchNormDoubleBackward) {
  REQUIRE_CUDA();
  manual_seed(34);
  for (bool training : {true, false})
    for (bool cl : {false, true}) {
      const Tensor x0 = norm_input({3, 4, 5, 6}, kDouble, cl);
      const Tensor w0 = rand({4}, kDouble) + 0.5, b0 = randn({4}, kDouble);
      const Tensor rm0 = randn({4}, kDouble), rv0 = rand({4}, kDouble) + 0.5;
      const Tensor gy0 = values({3, 4, 5, 6}, kDouble, 1.0), v0 = values({3, 4, 5, 6}, kDouble, 1.0);
      auto run = [&](Device d) {
        const Tensor x = x0.to(d).detach().requires_grad_(), w = w0.to(d).detach().requires_grad_();
        const Tensor b = b0.to(d).detach().requires_grad_();
        const Tensor rm = rm0.to(d, false, true), rv = rv0.to(d, false, true);
        const Tensor y = F::batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
        const Tensor gx = autograd::grad({y}, {x}, {gy0.to(d)}, std::nullopt, true)[0];
        // in eval, dx = dy * w * invstd does not depend on x
        const TensorList gg = autograd::grad({(gx * v0.to(d)).sum()}, {x, w}, {}, std::nullopt, false, true);
        EXPECT_EQ(gg[0].defined(), training);
        return std::vector<Tensor>{gg[0].defined() ? gg[0].cpu() : zeros_like(x0), gg[1].cpu()};
      };
      const auto g = run(kGpu), c = run(kCPU);
      const std::string what = std::string(training ? "train" : "eval") + (cl ? " channels_last" : "");
      EXPECT_TRUE(close(g[0], c[0], 1e-9, 1e-9)) << what << ": d/dx";
      EXPECT_TRUE(close(g[1], c[1], 1e-9, 1e-9)) << what << ": d/dw";
    }
}

// ---- group_norm ------------------------------------------------------------------------------------------------

TEST(CudaNorm, GroupNormEveryLayoutDtypeGroups) {
  REQUIRE_CUDA();
  manual_seed(41);
  const std::vector<Shape> shapes = {{{4, 6}, false},          {{3, 6, 10}, false},     {{2, 6, 5, 7}, false},
                                     {{2, 6, 5, 7}, true},     {{2, 6, 2, 3, 4}, false}, {{2, 12, 40, 40}, true},
                                     {{1, 4, 100, 100}, false}};
  for (const Shape& sh : shapes)
    for (int64_t G : {int64_t(1), int64_t(2), sh.s[1]})
      for (ScalarType dt : kFloats)
        for (bool affine : {true, false}) {
          const int64_t C = sh.s[1];
          const ScalarType pdt = (dt == kHalf || dt == kBFloat16) ? kFloat : dt;
          const Tensor x0 = norm_input(sh.s, dt, sh.cl, 2.0);
          const Tensor w0 = affine ? (rand({C}, kDouble) + 0.5).to(pdt) : Tensor();
          const Tensor b0 = affine ? randn({C}, kDouble).to(pdt) : Tensor();
          const Tensor gy = values(sh.s, dt, 1.0);
          const std::string what =
              "group_norm " + describe(sh) + " G " + std::to_string(G) + " " + name(dt) + (affine ? " affine" : "");
          auto run = [&](Device d) {
            const Tensor x = x0.to(d).detach().requires_grad_();
            const Tensor w = affine ? w0.to(d).detach().requires_grad_() : Tensor();
            const Tensor b = affine ? b0.to(d).detach().requires_grad_() : Tensor();
            const Tensor y = F::group_norm(x, G, w, b, 1e-5);
            EXPECT_EQ(is_cl(y), sh.cl) << what;
            y.backward(gy.to(d));
            EXPECT_EQ(is_cl(x.grad()), sh.cl) << what;
            std::vector<Tensor> r{y.detach().cpu(), x.grad().cpu()};
            if (affine) r.push_back(w.grad().cpu()), r.push_back(b.grad().cpu());
            return r;
          };
          const auto g = run(kGpu), c = run(kCPU);
          const Tol t = norm_tol(dt);
          EXPECT_TRUE(close(g[0], c[0], t.rtol, t.atol)) << what << ": output";
          EXPECT_TRUE(close(g[1], c[1], t.rtol, t.atol)) << what << ": input gradient";
          if (affine)
            for (int k = 2; k < 4; ++k) {
              const double scale = std::max(1.0, c[k].abs().max().item<double>());
              EXPECT_TRUE(close(g[k], c[k], t.rtol, t.atol * scale)) << what << ": parameter gradient " << k;
            }
        }
}

TEST(CudaNorm, GroupNormDoubleBackwardAndEmpty) {
  REQUIRE_CUDA();
  manual_seed(42);
  for (bool cl : {false, true}) {
    const Tensor x0 = norm_input({3, 6, 4, 5}, kDouble, cl);
    const Tensor w0 = rand({6}, kDouble) + 0.5, b0 = randn({6}, kDouble);
    const Tensor gy0 = values({3, 6, 4, 5}, kDouble, 1.0), v0 = values({3, 6, 4, 5}, kDouble, 1.0);
    auto run = [&](Device d) {
      const Tensor x = x0.to(d).detach().requires_grad_(), w = w0.to(d).detach().requires_grad_();
      const Tensor y = F::group_norm(x, 3, w, b0.to(d), 1e-5);
      const Tensor gx = autograd::grad({y}, {x}, {gy0.to(d)}, std::nullopt, true)[0];
      const TensorList gg = autograd::grad({(gx * v0.to(d)).sum()}, {x, w});
      return std::vector<Tensor>{gg[0].cpu(), gg[1].cpu()};
    };
    const auto g = run(kGpu), c = run(kCPU);
    EXPECT_TRUE(close(g[0], c[0], 1e-9, 1e-9)) << (cl ? "channels_last" : "nchw");
    EXPECT_TRUE(close(g[1], c[1], 1e-9, 1e-9)) << (cl ? "channels_last" : "nchw");
  }
  const Tensor e = empty({0, 4, 3, 3}, TensorOptions(kFloat).device(kGpu)).requires_grad_();
  const Tensor w = ones({4}, TensorOptions().device(kGpu)).requires_grad_();
  const Tensor y = F::group_norm(e, 2, w, Tensor(), 1e-5);
  EXPECT_EQ(y.sizes(), e.sizes());
  y.sum().backward();
  EXPECT_TRUE(equal(w.grad().cpu(), zeros({4})));
}

// ---- modules -------------------------------------------------------------------------------------------------------

TEST(CudaNorm, BatchNorm2dModuleRunningStatsMatchTheCpu) {
  REQUIRE_CUDA();
  manual_seed(51);
  for (std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()})
    for (bool cl : {false, true}) {
      nn::BatchNorm2d cpu(nn::BatchNormOptions(5).momentum(momentum));
      nn::BatchNorm2d gpu(nn::BatchNormOptions(5).momentum(momentum));
      gpu->to(kGpu);
      const std::string what = std::string(momentum ? "momentum 0.1" : "cumulative") + (cl ? " channels_last" : "");
      for (int step = 0; step < 4; ++step) {
        const Tensor x = norm_input({4, 5, 6, 7}, kFloat, cl, double(step));
        const Tensor gy = values({4, 5, 6, 7}, kFloat, 1.0);
        const Tensor yc = cpu->forward(x), yg = gpu->forward(x.to(kGpu));
        EXPECT_TRUE(close(yg.cpu(), yc, 2e-4, 2e-4)) << what << " step " << step;
        yc.backward(gy);
        yg.backward(gy.to(kGpu));
      }
      EXPECT_TRUE(close(gpu->running_mean.cpu(), cpu->running_mean, 1e-5, 1e-5)) << what;
      EXPECT_TRUE(close(gpu->running_var.cpu(), cpu->running_var, 1e-5, 1e-5)) << what;
      EXPECT_EQ(gpu->num_batches_tracked.cpu().item<int64_t>(), 4) << what;
      EXPECT_TRUE(close(gpu->weight.grad().cpu(), cpu->weight.grad(), 1e-4, 1e-3)) << what;
      EXPECT_TRUE(close(gpu->bias.grad().cpu(), cpu->bias.grad(), 1e-4, 1e-3)) << what;
      cpu->eval();
      gpu->eval();
      const Tensor x = norm_input({2, 5, 3, 3}, kFloat, cl);
      EXPECT_TRUE(close(gpu->forward(x.to(kGpu)).cpu(), cpu->forward(x), 2e-4, 2e-4)) << what << " eval";
    }
  // BatchNorm1d on (N, C) and (N, C, L)
  nn::BatchNorm1d c1(7), g1(7);
  g1->to(kGpu);
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{9, 7}, {3, 7, 11}}) {
    const Tensor x = norm_input(shape, kFloat, false, 1.0);
    EXPECT_TRUE(close(g1->forward(x.to(kGpu)).cpu(), c1->forward(x), 2e-4, 2e-4));
  }
  EXPECT_TRUE(close(g1->running_var.cpu(), c1->running_var, 1e-5, 1e-5));
}

TEST(CudaNorm, GroupNormModule) {
  REQUIRE_CUDA();
  manual_seed(52);
  nn::GroupNorm cpu(3, 12), gpu(3, 12);
  gpu->to(kGpu);
  for (bool cl : {false, true}) {
    const Tensor x = norm_input({2, 12, 5, 6}, kFloat, cl, 1.0);
    const Tensor gy = values({2, 12, 5, 6}, kFloat, 1.0);
    const Tensor yc = cpu->forward(x), yg = gpu->forward(x.to(kGpu));
    EXPECT_TRUE(close(yg.cpu(), yc, 2e-4, 2e-4));
    yc.backward(gy);
    yg.backward(gy.to(kGpu));
  }
  EXPECT_TRUE(close(gpu->weight.grad().cpu(), cpu->weight.grad(), 1e-4, 1e-3));
  EXPECT_TRUE(close(gpu->bias.grad().cpu(), cpu->bias.grad(), 1e-4, 1e-3));
}

// ---- layer_norm / rms_norm (the row-norm kernel of scan.cu; backward composite) ---------------

TEST(CudaNorm, LayerNormAndRmsNormEveryDtypeShapeAndParameters) {
  REQUIRE_CUDA();
  manual_seed(31);
  // rows of one warp or less, of several warps, of more than a block's lanes;
  // one row and many rows; normalized over the last one or two dims
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{1, 512}, {512}}, {{8, 384}, {384}}, {{130, 7}, {7}}, {{3, 4099}, {4099}},
      {{2, 5, 1}, {1}}, {{4, 6, 33}, {6, 33}}, {{1000, 64}, {64}}};
  for (ScalarType dt : kFloats) {
    for (const auto& [shape, ns] : cases) {
      for (int params = 0; params < 3; ++params) {  // none, weight, weight and bias
        const std::string what = name(dt) + " " + ::testing::PrintToString(shape) + " params " + std::to_string(params);
        const Tensor x = values(shape, dt) + 1.5;  // a mean far from 0
        const Tensor w = params >= 1 ? values(ns, dt, 1.0) : Tensor(), b = params >= 2 ? values(ns, dt) : Tensor();
        const Tensor wg = w.defined() ? w.to(kGpu) : w, bg = b.defined() ? b.to(kGpu) : b;
        check_fwd_bwd(x, [&](const Tensor& t) { return F::layer_norm(t, ns, t.is_cuda() ? wg : w, t.is_cuda() ? bg : b); },
                      norm_tol(dt), "layer_norm " + what, false);
        check_fwd_bwd(x, [&](const Tensor& t) { return F::rms_norm(t, ns, t.is_cuda() ? wg : w); }, norm_tol(dt),
                      "rms_norm " + what, false);
      }
    }
  }
  // a row with an infinity is NaN, as on the CPU and in PyTorch; the others are untouched
  Tensor x = values({3, 16}, kFloat);
  x.index_put_({1, 5}, kInf);
  const Tensor y = F::layer_norm(x.to(kGpu), {16}).cpu();
  EXPECT_TRUE(y[1].isnan().all().item<bool>());
  EXPECT_TRUE(close(y.narrow(0, 0, 1), F::layer_norm(x.narrow(0, 0, 1), {16}), 2e-4, 2e-4));
  // a float32 weight on a float16 input: computed and returned in float32
  const Tensor h = values({4, 32}, kHalf), w32 = values({32}, kFloat);
  const Tensor yh = F::layer_norm(h.to(kGpu), {32}, w32.to(kGpu));
  EXPECT_EQ(yh.dtype(), kFloat);
  EXPECT_TRUE(close(yh.cpu(), F::layer_norm(h, {32}, w32), 2e-4, 2e-4));
}

// ---- factories ------------------------------------------------------------------------------------------------------

TEST(CudaFactories, ArangeBitForBit) {
  REQUIRE_CUDA();
  const std::vector<ScalarType> dts = {kInt64, kInt32, kUInt8, kFloat, kDouble, kHalf, kBFloat16};
  // integer ranges (exact), in every dtype
  for (ScalarType dt : dts) {
    const TensorOptions c = TensorOptions(dt), g = TensorOptions(dt).device(kGpu);
    EXPECT_TRUE(same_bits(arange(0, 200, 3, g), arange(0, 200, 3, c))) << name(dt);
    if (dt != kUInt8) EXPECT_TRUE(same_bits(arange(100, -50, -7, g), arange(100, -50, -7, c))) << name(dt);
    EXPECT_TRUE(same_bits(arange(0, 0, 1, g), arange(0, 0, 1, c))) << name(dt);
  }
  // the default int64 range, a long one, and 2^53 + odd steps (int64 exact, double not)
  EXPECT_TRUE(same_bits(arange(1000003, TensorOptions().device(kGpu)), arange(1000003)));
  const int64_t big = int64_t(1) << 53;
  EXPECT_TRUE(same_bits(arange(big, big + 301, 3, TensorOptions().device(kGpu)), arange(big, big + 301, 3)));
  EXPECT_TRUE(same_bits(arange(big, big + 301, 3, TensorOptions(kDouble).device(kGpu)),
                        arange(big, big + 301, 3, TensorOptions(kDouble))));
  // floating ranges: s + i * st in double, then converted
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt32}) {
    const TensorOptions c = TensorOptions(dt), g = TensorOptions(dt).device(kGpu);
    EXPECT_TRUE(same_bits(arange(0.0, 1.0, 0.1, g), arange(0.0, 1.0, 0.1, c))) << name(dt);
    EXPECT_TRUE(same_bits(arange(-3.7, 7.3, 0.37, g), arange(-3.7, 7.3, 0.37, c))) << name(dt);
    EXPECT_TRUE(same_bits(arange(5.5, -2.25, -0.013, g), arange(5.5, -2.25, -0.013, c))) << name(dt);
    EXPECT_TRUE(same_bits(arange(0.1, 123456.7, 0.3, g), arange(0.1, 123456.7, 0.3, c))) << name(dt);
  }
  EXPECT_TRUE(same_bits(arange(0.5, TensorOptions().device(kGpu)), arange(0.5)));  // default dtype
}

TEST(CudaFactories, LinspaceBitForBit) {
  REQUIRE_CUDA();
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32}) {
    const TensorOptions c = TensorOptions(dt), g = TensorOptions(dt).device(kGpu);
    for (int64_t steps : {0, 1, 2, 3, 5, 100, 1001, 100000}) {
      EXPECT_TRUE(same_bits(linspace(-1.3, 2.7, steps, g), linspace(-1.3, 2.7, steps, c)))
          << name(dt) << " steps " << steps;
      EXPECT_TRUE(same_bits(linspace(10, -3, steps, g), linspace(10, -3, steps, c))) << name(dt) << " steps " << steps;
      // (float16 tops out at 65504: a larger end raises on both devices, as in PyTorch)
      const double big = dt == kHalf ? 6e4 + 0.1 : 1e6 + 0.1;
      EXPECT_TRUE(same_bits(linspace(1e-3, big, steps, g), linspace(1e-3, big, steps, c)))
          << name(dt) << " steps " << steps;
    }
  }
  EXPECT_THROW(linspace(1e-3, 1e6, 5, TensorOptions(kHalf).device(kGpu)), Error);
  EXPECT_THROW(linspace(1e-3, 1e6, 5, TensorOptions(kHalf)), Error);
  // the last value is the end, exactly
  const Tensor l = linspace(0.0, 1.0, 49, TensorOptions(kDouble).device(kGpu)).cpu();
  EXPECT_EQ(l[48].item<double>(), 1.0);
  // requires_grad is honoured on the device too
  EXPECT_TRUE(linspace(0, 1, 5, TensorOptions().device(kGpu).requires_grad(true)).requires_grad());
}
