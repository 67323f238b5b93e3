// Convolutions: conv1d/conv2d/conv_transpose2d against naive loops written
// here (every option: stride, padding incl. "same"/"valid", dilation,
// groups incl. depthwise, bias, unbatched, channels_last in and out), in
// float64 (im2col path) and float32 (oneDNN path when built with it),
// gradients by gradcheck in float64 and float32 gradients against float64,
// the layout contract for channels_last, the primitive cache, errors naming
// the op, and the Conv modules (init, options, printing).
#include <brisk/nn.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_features.h"
#include "autograd/grad_util.h"
#include "backend/cpu/conv.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;

namespace {

// ---- naive references -------------------------------------------------------------------

std::vector<double> values(const Tensor& t) { return t.to(kDouble).contiguous().to_vector<double>(); }

struct Conv2dParams {
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};

/// y[n, o, oy, ox] = b[o] + sum_{c, i, j} x[n, g*icg + c, oy*sh - ph + i*dh, ox*sw - pw + j*dw] * w[o, c, i, j]
/// with zeros outside x; (oh, ow) given so that asymmetric ("same") padding is covered.
Tensor ref_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p, int64_t oh,
                  int64_t ow) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t O = w.size(0), icg = w.size(1), KH = w.size(2), KW = w.size(3), ocg = O / p.groups;
  EXPECT_EQ(C, icg * p.groups);
  const auto xv = values(x), wv = values(w);
  const auto bv = b.defined() ? values(b) : std::vector<double>(size_t(O), 0.0);
  std::vector<double> y(size_t(N * O * oh * ow));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const int64_t g = o / ocg;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = bv[size_t(o)];
          for (int64_t c = 0; c < icg; ++c)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t iy = oy * p.sh - p.ph + i * p.dh, ix = ox * p.sw - p.pw + j * p.dw;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += xv[size_t(((n * C + g * icg + c) * H + iy) * W + ix)] *
                       wv[size_t(((o * icg + c) * KH + i) * KW + j)];
              }
          y[size_t(((n * O + o) * oh + oy) * ow + ox)] = acc;
        }
    }
  return tensor(y, {N, O, oh, ow}, kDouble);
}

/// Transposed: every x[n, g*icg + c, iy, ix] * w[g*icg + c, o, i, j] lands on
/// y[n, g*ocg + o, iy*sh - ph + i*dh, ix*sw - pw + j*dw] (when inside y).
Tensor ref_conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p, int64_t oph,
                            int64_t opw) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t icg = C / p.groups, ocg = w.size(1), KH = w.size(2), KW = w.size(3), O = ocg * p.groups;
  const int64_t oh = (H - 1) * p.sh - 2 * p.ph + p.dh * (KH - 1) + oph + 1;
  const int64_t ow = (W - 1) * p.sw - 2 * p.pw + p.dw * (KW - 1) + opw + 1;
  const auto xv = values(x), wv = values(w);
  std::vector<double> y(size_t(N * O * oh * ow), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < p.groups; ++g)
      for (int64_t c = 0; c < icg; ++c)
        for (int64_t iy = 0; iy < H; ++iy)
          for (int64_t ix = 0; ix < W; ++ix) {
            const double xval = xv[size_t(((n * C + g * icg + c) * H + iy) * W + ix)];
            for (int64_t o = 0; o < ocg; ++o)
              for (int64_t i = 0; i < KH; ++i)
                for (int64_t j = 0; j < KW; ++j) {
                  const int64_t y0 = iy * p.sh - p.ph + i * p.dh, x0 = ix * p.sw - p.pw + j * p.dw;
                  if (y0 < 0 || y0 >= oh || x0 < 0 || x0 >= ow) continue;
                  y[size_t(((n * O + g * ocg + o) * oh + y0) * ow + x0)] +=
                      xval * wv[size_t((((g * icg + c) * ocg + o) * KH + i) * KW + j)];
                }
          }
  Tensor r = tensor(y, {N, O, oh, ow}, kDouble);
  return b.defined() ? r + b.to(kDouble).view({1, O, 1, 1}) : r;
}

// Tolerance of a float32 result against the float64 reference.
::testing::AssertionResult close32(const Tensor& got, const Tensor& want) { return close(got, want, 1e-4, 1e-4); }

// ---- the direct convolution table ------------------------------------------------------

struct Case2d {
  const char* name;
  std::vector<int64_t> x, w;  // x (N, C, H, W), w (O, C / groups, KH, KW)
  Conv2dParams p;
  bool bias;
};

const std::vector<Case2d>& cases2d() {
  static const std::vector<Case2d> c = {
      {"plain", {2, 3, 7, 6}, {4, 3, 3, 3}, {}, true},
      {"no_bias", {2, 3, 7, 6}, {4, 3, 3, 3}, {}, false},
      {"padding", {2, 3, 5, 6}, {5, 3, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, true},
      {"asym_kernel_padding", {1, 2, 6, 7}, {3, 2, 2, 4}, {1, 1, 1, 2, 1, 1, 1}, true},
      {"stride", {2, 3, 9, 8}, {4, 3, 3, 3}, {2, 2, 0, 0, 1, 1, 1}, true},
      {"stride_hw", {2, 2, 9, 10}, {3, 2, 3, 2}, {3, 2, 1, 0, 1, 1, 1}, false},
      {"dilation", {2, 3, 9, 9}, {4, 3, 3, 3}, {1, 1, 0, 0, 2, 2, 1}, true},
      {"dilation_stride_pad", {2, 3, 11, 10}, {4, 3, 3, 2}, {2, 3, 2, 1, 2, 3, 1}, true},
      {"groups", {2, 4, 6, 6}, {6, 2, 3, 3}, {1, 1, 1, 1, 1, 1, 2}, true},
      {"groups_stride", {2, 6, 8, 7}, {9, 2, 3, 3}, {2, 1, 1, 0, 1, 1, 3}, false},
      {"depthwise", {2, 4, 7, 7}, {4, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 4}, true},
      {"depthwise_multiplier", {2, 3, 6, 6}, {6, 1, 3, 3}, {2, 2, 1, 1, 1, 1, 3}, true},
      {"pointwise", {2, 5, 4, 4}, {3, 5, 1, 1}, {}, true},
      {"pointwise_stride", {2, 5, 5, 4}, {3, 5, 1, 1}, {2, 2, 0, 0, 1, 1, 1}, true},
      {"kernel_equals_input", {3, 2, 3, 3}, {4, 2, 3, 3}, {}, true},
      {"big_padding", {1, 2, 3, 3}, {2, 2, 3, 3}, {1, 1, 3, 2, 1, 1, 1}, true},
      {"one_input_channel", {4, 1, 8, 8}, {8, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, true},
      {"wide", {2, 16, 6, 6}, {32, 16, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, true},
      {"wide_groups", {2, 32, 5, 5}, {32, 8, 3, 3}, {1, 1, 1, 1, 1, 1, 4}, true},
  };
  return c;
}

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

struct Inputs {
  Tensor x, w, b;
};
Inputs make_inputs(const Case2d& c, ScalarType dt) {
  Inputs in;
  in.x = randn(c.x, dt);
  in.w = randn(c.w, dt);
  if (c.bias) in.b = randn({c.w[0]}, dt);
  return in;
}

Tensor run_conv2d(const Case2d& c, const Inputs& in) {
  return F::conv2d(in.x, in.w, in.b, {c.p.sh, c.p.sw}, {c.p.ph, c.p.pw}, {c.p.dh, c.p.dw}, c.p.groups);
}
Tensor ref_of(const Case2d& c, const Inputs& in) {
  return ref_conv2d(in.x, in.w, in.b, c.p, out_size(c.x[2], c.w[2], c.p.sh, c.p.ph, c.p.dh),
                    out_size(c.x[3], c.w[3], c.p.sw, c.p.pw, c.p.dw));
}

}  // namespace

TEST(Conv2d, ForwardMatchesNaiveLoopFloat64) {
  manual_seed(0);
  for (const Case2d& c : cases2d()) {
    SCOPED_TRACE(c.name);
    const Inputs in = make_inputs(c, kDouble);
    const Tensor y = run_conv2d(c, in);
    EXPECT_EQ(y.dtype(), kDouble);
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_TRUE(close(y, ref_of(c, in), 1e-10, 1e-10));
  }
}

TEST(Conv2d, ForwardMatchesNaiveLoopFloat32) {
  manual_seed(1);
  auto& st = cpu::conv_stats();
  for (const Case2d& c : cases2d()) {
    SCOPED_TRACE(c.name);
    const Inputs in = make_inputs(c, kFloat);
    const uint64_t im2col = st.im2col_calls.load();
    const Tensor y = run_conv2d(c, in);
    // with oneDNN, no case of the table falls back to im2col
    if (cpu::onednn_available()) EXPECT_EQ(st.im2col_calls.load(), im2col);
    EXPECT_EQ(y.dtype(), kFloat);
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_TRUE(close32(y, ref_of(c, in)));
  }
}

TEST(Conv2d, ChannelsLastInputGivesChannelsLastOutput) {
  manual_seed(2);
  for (ScalarType dt : {kFloat, kDouble})
    for (const Case2d& c : cases2d()) {
      if (c.x[1] == 1) continue;  // one channel: both layouts at once, contiguous wins
      SCOPED_TRACE(std::string(c.name) + (dt == kFloat ? " f32" : " f64"));
      Inputs in = make_inputs(c, dt);
      in.x = in.x.contiguous(kChannelsLast);
      ASSERT_FALSE(in.x.is_contiguous());
      const Tensor y = run_conv2d(c, in);
      EXPECT_TRUE(y.is_contiguous(kChannelsLast));
      if (y.size(1) > 1 && y.size(2) * y.size(3) > 1) EXPECT_FALSE(y.is_contiguous());
      EXPECT_TRUE(dt == kFloat ? close32(y, ref_of(c, in)) : close(y, ref_of(c, in), 1e-10, 1e-10));
    }
}

TEST(Conv2d, ChannelsLastWeightGivesChannelsLastOutput) {
  manual_seed(3);
  const Case2d& c = cases2d()[2];
  Inputs in = make_inputs(c, kFloat);
  in.w = in.w.contiguous(kChannelsLast);
  const Tensor y = run_conv2d(c, in);
  EXPECT_TRUE(y.is_contiguous(kChannelsLast));
  EXPECT_FALSE(y.is_contiguous());
  EXPECT_TRUE(close32(y, ref_of(c, in)));
}

TEST(Conv2d, NonContiguousInputs) {
  manual_seed(4);
  const Case2d& c = cases2d()[2];  // x (2, 3, 5, 6), w (5, 3, 3, 3)
  for (ScalarType dt : {kFloat, kDouble}) {
    Inputs in = make_inputs(c, dt);
    Inputs nc = in;
    nc.x = randn({2, 3, 6, 5}, dt).transpose(2, 3);  // (2, 3, 5, 6) transposed buffer
    Tensor(nc.x).copy_(in.x);
    nc.w = randn({5, 3, 3, 6}, dt).slice(3, 0, 6, 2);  // every other column
    Tensor(nc.w).copy_(in.w);
    ASSERT_FALSE(nc.x.is_contiguous());
    ASSERT_FALSE(nc.w.is_contiguous());
    const Tensor y = run_conv2d(c, nc);
    EXPECT_TRUE(close(y, run_conv2d(c, in), 1e-6, 1e-6));
  }
}

TEST(Conv2d, StringPadding) {
  manual_seed(5);
  for (ScalarType dt : {kFloat, kDouble}) {
    // "same" with even kernels and dilation: total d*(k-1), the odd one bottom/right
    for (auto [kh, kw, dh, dw] : {std::tuple{3, 3, 1, 1}, std::tuple{4, 2, 1, 1}, std::tuple{2, 3, 3, 2},
                                   std::tuple{1, 4, 1, 2}}) {
      SCOPED_TRACE("same k=" + std::to_string(kh) + "x" + std::to_string(kw) + " d=" + std::to_string(dh) + "x" +
                   std::to_string(dw));
      const Tensor x = randn({2, 3, 7, 8}, dt), w = randn({4, 3, kh, kw}, dt), b = randn({4}, dt);
      const Tensor y = F::conv2d(x, w, b, 1, "same", {dh, dw});
      ASSERT_EQ(y.sizes(), IntArrayRef({2, 4, 7, 8}));
      // top/left padding is total / 2; the reference reads the output size from y
      Conv2dParams p;
      p.ph = dh * (kh - 1) / 2, p.pw = dw * (kw - 1) / 2, p.dh = dh, p.dw = dw;
      const Tensor want = ref_conv2d(x, w, b, p, 7, 8);
      EXPECT_TRUE(dt == kFloat ? close32(y, want) : close(y, want, 1e-10, 1e-10));
      // the options form
      EXPECT_TRUE(close(F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).padding("same").dilation({dh, dw})), y, 1e-6,
                        1e-6));
    }
    const Tensor x = randn({2, 3, 7, 8}, dt), w = randn({4, 3, 3, 2}, dt);
    EXPECT_TRUE(close(F::conv2d(x, w, {}, 1, "valid"), F::conv2d(x, w), 0, 0));
    EXPECT_TRUE(close(F::conv2d(x, w, {}, 1, std::string("valid")), F::conv2d(x, w), 0, 0));
  }
}

TEST(Conv2d, Unbatched) {
  manual_seed(6);
  for (ScalarType dt : {kFloat, kDouble}) {
    const Tensor x = randn({3, 6, 5}, dt), w = randn({4, 3, 3, 3}, dt), b = randn({4}, dt);
    const Tensor y = F::conv2d(x, w, b, 1, 1);
    ASSERT_EQ(y.sizes(), IntArrayRef({4, 6, 5}));
    EXPECT_TRUE(close(y, F::conv2d(x.unsqueeze(0), w, b, 1, 1).squeeze(0), 1e-12, 1e-12));
    Conv2dParams p;
    p.ph = p.pw = 1;
    EXPECT_TRUE(close(y, ref_conv2d(x.unsqueeze(0), w, b, p, 6, 5).squeeze(0), 1e-4, 1e-4));
  }
}

TEST(Conv2d, EmptyBatch) {
  for (ScalarType dt : {kFloat, kDouble}) {
    const Tensor x = zeros({0, 3, 5, 5}, dt).requires_grad_();
    const Tensor w = randn({4, 3, 3, 3}, dt).requires_grad_(), b = randn({4}, dt).requires_grad_();
    const Tensor y = F::conv2d(x, w, b, 1, 1);
    ASSERT_EQ(y.sizes(), IntArrayRef({0, 4, 5, 5}));
    y.sum().backward();
    EXPECT_EQ(x.grad().sizes(), x.sizes());
    EXPECT_TRUE(w.grad().equal(zeros_like(w)));
    EXPECT_TRUE(b.grad().equal(zeros_like(b)));
  }
}

TEST(Conv2d, ReducedPrecisionComputesInFloat) {
  manual_seed(7);
  const Tensor x = randn({2, 3, 6, 6}), w = randn({4, 3, 3, 3}), b = randn({4});
  for (ScalarType dt : {kHalf, kBFloat16}) {
    const Tensor xr = x.to(dt), wr = w.to(dt), br = b.to(dt);
    const Tensor y = F::conv2d(xr, wr, br, 1, 1);
    EXPECT_EQ(y.dtype(), dt);
    // the float32 result on the same (rounded) values, rounded once
    const Tensor want = F::conv2d(xr.to(kFloat), wr.to(kFloat), br.to(kFloat), 1, 1).to(dt);
    EXPECT_TRUE(close(y, want, 0, 0));
  }
}

// ---- conv1d -------------------------------------------------------------------------------

TEST(Conv1d, MatchesNaiveLoop) {
  manual_seed(8);
  struct C1 {
    std::vector<int64_t> x, w;
    int64_t s, p, d, g;
    bool bias;
  };
  const std::vector<C1> cases = {{{2, 3, 10}, {4, 3, 3}, 1, 0, 1, 1, true},  {{2, 3, 10}, {4, 3, 3}, 2, 1, 1, 1, false},
                                 {{2, 4, 11}, {6, 2, 3}, 1, 2, 2, 2, true},  {{3, 4, 9}, {4, 1, 5}, 2, 2, 1, 4, true},
                                 {{2, 5, 7}, {3, 5, 1}, 1, 0, 1, 1, true},   {{1, 2, 4}, {3, 2, 4}, 3, 3, 1, 1, true}};
  for (ScalarType dt : {kFloat, kDouble})
    for (const auto& c : cases) {
      const Tensor x = randn(c.x, dt), w = randn(c.w, dt), b = c.bias ? randn({c.w[0]}, dt) : Tensor();
      const Tensor y = F::conv1d(x, w, b, c.s, c.p, c.d, c.g);
      const int64_t L = out_size(c.x[2], c.w[2], c.s, c.p, c.d);
      ASSERT_EQ(y.sizes(), IntArrayRef({c.x[0], c.w[0], L}));
      EXPECT_TRUE(y.is_contiguous());
      // a (N, C, 1, L) 2-D problem for the reference: its H dim is neutral
      Conv2dParams p;
      p.sw = c.s, p.pw = c.p, p.dw = c.d, p.groups = c.g;
      const Tensor want = ref_conv2d(x.unsqueeze(2), w.unsqueeze(2), b, p, 1, L).squeeze(2);
      EXPECT_TRUE(close(y, want, 1e-4, 1e-4));
      // unbatched
      EXPECT_TRUE(close(F::conv1d(x[0], w, b, c.s, c.p, c.d, c.g), want[0], 1e-4, 1e-4));
    }
  // "same" with an even kernel: 1 left, 2 right
  const Tensor x = randn({2, 3, 9}, kDouble), w = randn({2, 3, 4}, kDouble);
  Conv2dParams p;
  p.pw = 1;
  EXPECT_TRUE(close(F::conv1d(x, w, {}, 1, "same"), ref_conv2d(x.unsqueeze(2), w.unsqueeze(2), {}, p, 1, 9).squeeze(2),
                    1e-10, 1e-10));
  EXPECT_TRUE(close(F::conv1d(x, w, F::Conv1dFuncOptions().padding("same")), F::conv1d(x, w, {}, 1, "same"), 0, 0));
}

// ---- conv_transpose2d ----------------------------------------------------------------------

namespace {
struct CaseT {
  const char* name;
  std::vector<int64_t> x, w;  // x (N, C, H, W), w (C, O / groups, KH, KW)
  Conv2dParams p;
  int64_t oph, opw;
  bool bias;
};
const std::vector<CaseT>& cases_t() {
  static const std::vector<CaseT> c = {
      {"plain", {2, 3, 4, 5}, {3, 4, 3, 3}, {}, 0, 0, true},
      {"stride2", {2, 4, 4, 4}, {4, 2, 4, 4}, {2, 2, 1, 1, 1, 1, 1}, 0, 0, true},
      {"stride2_output_padding", {2, 3, 4, 3}, {3, 2, 3, 3}, {2, 2, 1, 1, 1, 1, 1}, 1, 1, false},
      {"stride_hw_output_padding", {1, 2, 3, 4}, {2, 3, 3, 2}, {3, 2, 0, 1, 1, 1, 1}, 2, 1, true},
      {"dilation", {2, 3, 4, 4}, {3, 2, 3, 3}, {1, 1, 1, 1, 2, 2, 1}, 0, 0, true},
      {"output_padding_below_dilation", {1, 2, 4, 4}, {2, 3, 3, 3}, {1, 1, 0, 0, 3, 2, 1}, 2, 1, true},
      {"groups", {2, 4, 3, 3}, {4, 3, 3, 3}, {2, 2, 1, 1, 1, 1, 2}, 1, 0, true},
      {"depthwise", {2, 4, 5, 5}, {4, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 4}, 0, 0, false},
      {"wide", {2, 16, 5, 5}, {16, 32, 4, 4}, {2, 2, 1, 1, 1, 1, 1}, 0, 0, true},
  };
  return c;
}
Tensor run_t(const CaseT& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  return F::conv_transpose2d(x, w, b, {c.p.sh, c.p.sw}, {c.p.ph, c.p.pw}, {c.oph, c.opw}, c.p.groups,
                             {c.p.dh, c.p.dw});
}
}  // namespace

TEST(ConvTranspose2d, MatchesNaiveLoop) {
  manual_seed(9);
  for (ScalarType dt : {kFloat, kDouble})
    for (bool cl : {false, true})
      for (const CaseT& c : cases_t()) {
        SCOPED_TRACE(std::string(c.name) + (dt == kFloat ? " f32" : " f64") + (cl ? " channels_last" : ""));
        Tensor x = randn(c.x, dt);
        const Tensor w = randn(c.w, dt), b = c.bias ? randn({c.w[1] * c.p.groups}, dt) : Tensor();
        if (cl) x = x.contiguous(kChannelsLast);
        const uint64_t im2col = cpu::conv_stats().im2col_calls.load();
        const Tensor y = run_t(c, x, w, b);
        // oneDNN runs every float32 case but one: output_padding >= stride
        // needs a right padding oneDNN refuses (see right_pad in conv_onednn.cpp)
        if (dt == kFloat && cpu::onednn_available())
          EXPECT_EQ(cpu::conv_stats().im2col_calls.load(),
                    im2col + (std::string(c.name) == "output_padding_below_dilation" ? 1 : 0));
        const Tensor want = ref_conv_transpose2d(x, w, b, c.p, c.oph, c.opw);
        EXPECT_TRUE(dt == kFloat ? close32(y, want) : close(y, want, 1e-10, 1e-10));
        EXPECT_TRUE(cl ? y.is_contiguous(kChannelsLast) && !y.is_contiguous() : y.is_contiguous());
        // options form and unbatched
        EXPECT_TRUE(close(F::conv_transpose2d(x, w,
                                              F::ConvTranspose2dFuncOptions()
                                                  .bias(b)
                                                  .stride({c.p.sh, c.p.sw})
                                                  .padding({c.p.ph, c.p.pw})
                                                  .output_padding({c.oph, c.opw})
                                                  .groups(c.p.groups)
                                                  .dilation({c.p.dh, c.p.dw})),
                          y, 0, 0));
        EXPECT_TRUE(close(run_t(c, x[0], w, b), y[0], 1e-5, 1e-5));
      }
}

// An output size of 0 is refused, as torch 1.13 and torch 2.x's own check
// ("Output size is too small"); torch 2.x's oneDNN path alone returns an
// empty tensor (difffuzz nn:F.conv_transpose2d:extra-error, listed).
TEST(ConvTranspose2d, OutputSizeZeroIsRefused) {
  const Tensor x = randn({1, 2, 2, 3}), w = randn({2, 2, 1, 2});
  expect_error([&] { F::conv_transpose2d(x, w, {}, {1, 2}, 1, 0, 2); }, {"[conv_transpose2d]", "output size 0 < 1"});
}

TEST(ConvTranspose2d, IsTheGradientOfConv2d) {
  // <conv2d(x, w), y> = <x, conv_transpose2d(y, w)> for the same parameters
  manual_seed(10);
  const Tensor x = randn({2, 4, 9, 8}, kDouble), w = randn({6, 2, 3, 3}, kDouble);
  const Tensor cx = F::conv2d(x, w, {}, 2, 1, 1, 2);
  const Tensor y = randn(cx.sizes(), kDouble);
  const Tensor ty = F::conv_transpose2d(y, w, {}, 2, 1, /*output_padding=*/{0, 1}, 2);
  ASSERT_EQ(ty.sizes(), x.sizes());
  EXPECT_NEAR((cx * y).sum().item<double>(), (x * ty).sum().item<double>(), 1e-9);
}

// ---- gradients ------------------------------------------------------------------------------

TEST(ConvGrad, Conv2dGradcheck) {
  manual_seed(11);
  struct G {
    std::vector<int64_t> x, w;
    int64_t s, p, d, g;
    bool bias, cl;
  };
  for (const G& c : {G{{2, 2, 5, 4}, {3, 2, 3, 3}, 1, 1, 1, 1, true, false},
                     G{{1, 4, 6, 5}, {4, 2, 3, 2}, 2, 1, 1, 2, true, false},
                     G{{2, 3, 6, 6}, {3, 1, 3, 3}, 1, 2, 2, 3, false, false},
                     G{{2, 2, 5, 5}, {3, 2, 2, 2}, 2, 0, 1, 1, true, true},
                     G{{1, 3, 4, 4}, {6, 1, 3, 3}, 1, 1, 1, 3, true, true}}) {
    Tensor x = brisk::testing::leaf(c.x);
    if (c.cl) x = x.detach().contiguous(kChannelsLast).requires_grad_();
    const Tensor w = brisk::testing::leaf(c.w);
    const Tensor b = c.bias ? brisk::testing::leaf({c.w[0]}) : Tensor();
    TensorList in{x, w};
    if (c.bias) in.push_back(b);
    EXPECT_TRUE(gradcheck_ok(
        [&](const TensorList& t) { return F::conv2d(t[0], t[1], c.bias ? t[2] : Tensor(), c.s, c.p, c.d, c.g); },
        in));
  }
  // "same" with an even kernel, unbatched
  const Tensor x = brisk::testing::leaf({2, 5, 4}), w = brisk::testing::leaf({2, 2, 2, 3});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::conv2d(t[0], t[1], {}, 1, "same"); }, {x, w}));
}

TEST(ConvGrad, Conv1dGradcheck) {
  manual_seed(12);
  const Tensor x = brisk::testing::leaf({2, 4, 7}), w = brisk::testing::leaf({6, 2, 3}), b = brisk::testing::leaf({6});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::conv1d(t[0], t[1], t[2], 2, 1, 1, 2); }, {x, w, b}));
  const Tensor xu = brisk::testing::leaf({3, 6}), wu = brisk::testing::leaf({2, 3, 2});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::conv1d(t[0], t[1], {}, 1, "same", 2); }, {xu, wu}));
}

TEST(ConvGrad, ConvTranspose2dGradcheck) {
  manual_seed(13);
  for (const CaseT& c : cases_t()) {
    if (std::string(c.name) == "wide") continue;  // large Jacobian; covered in float32 below
    SCOPED_TRACE(c.name);
    std::vector<int64_t> xs = c.x;
    xs[0] = 1;
    xs[2] = std::min<int64_t>(xs[2], 3), xs[3] = std::min<int64_t>(xs[3], 3);
    const Tensor x = brisk::testing::leaf(xs), w = brisk::testing::leaf(c.w);
    const Tensor b = brisk::testing::leaf({c.w[1] * c.p.groups});
    EXPECT_TRUE(gradcheck_ok(
        [&](const TensorList& t) { return run_t(c, t[0], t[1], c.bias ? t[2] : Tensor()); }, {x, w, b}));
  }
}

// Regression (difffuzz nn:F.conv1d/conv2d/conv_transpose2d:grad2-missing):
// the backward computed constants, so second derivatives were silently 0.
// Under create_graph the gradients are kernel calls recorded with their own
// derivatives (Note [Convolution double backward]); gradcheck in float64 with
// second order over stride, padding (also "same" with an even kernel),
// dilation, groups, output_padding and channels_last.
TEST(ConvGrad, SecondOrderGradcheck) {
  manual_seed(21);
  struct G {
    std::vector<int64_t> x, w;
    int64_t s, p, d, g;
    bool bias, cl;
  };
  for (const G& c : {G{{2, 2, 4, 3}, {3, 2, 2, 2}, 1, 1, 1, 1, true, false},
                     G{{1, 4, 5, 4}, {4, 2, 3, 2}, 2, 1, 1, 2, true, false},
                     G{{1, 3, 5, 5}, {3, 1, 2, 2}, 1, 2, 2, 3, false, false},
                     G{{2, 2, 4, 4}, {2, 2, 2, 2}, 2, 0, 1, 1, true, true}}) {
    SCOPED_TRACE(::testing::Message() << "s=" << c.s << " p=" << c.p << " d=" << c.d << " g=" << c.g);
    Tensor x = brisk::testing::leaf(c.x);
    if (c.cl) x = x.detach().contiguous(kChannelsLast).requires_grad_();
    const Tensor w = brisk::testing::leaf(c.w);
    TensorList in{x, w};
    if (c.bias) in.push_back(brisk::testing::leaf({c.w[0]}));
    EXPECT_TRUE(gradcheck_ok(
        [&](const TensorList& t) { return F::conv2d(t[0], t[1], c.bias ? t[2] : Tensor(), c.s, c.p, c.d, c.g); }, in,
        /*grad_grad=*/true));
  }
  const Tensor xs = brisk::testing::leaf({2, 4, 3}), ws = brisk::testing::leaf({2, 2, 2, 3});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::conv2d(t[0], t[1], {}, 1, "same"); }, {xs, ws}, true));
  const Tensor x1 = brisk::testing::leaf({2, 4, 6}), w1 = brisk::testing::leaf({4, 2, 3}), b1 = brisk::testing::leaf({4});
  EXPECT_TRUE(
      gradcheck_ok([](const TensorList& t) { return F::conv1d(t[0], t[1], t[2], 2, 1, 2, 2); }, {x1, w1, b1}, true));
  const Tensor xu = brisk::testing::leaf({3, 5}), wu = brisk::testing::leaf({2, 3, 2});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return F::conv1d(t[0], t[1], {}, 1, "same", 2); }, {xu, wu}, true));
  for (const CaseT& c : cases_t()) {
    if (std::string(c.name) == "wide") continue;
    SCOPED_TRACE(c.name);
    std::vector<int64_t> xsz = c.x;
    xsz[0] = 1;
    xsz[2] = std::min<int64_t>(xsz[2], 3), xsz[3] = std::min<int64_t>(xsz[3], 2);
    const Tensor x = brisk::testing::leaf(xsz), w = brisk::testing::leaf(c.w);
    const Tensor b = brisk::testing::leaf({c.w[1] * c.p.groups});
    EXPECT_TRUE(gradcheck_ok([&](const TensorList& t) { return run_t(c, t[0], t[1], c.bias ? t[2] : Tensor()); },
                             {x, w, b}, true));
  }
}

// A second derivative against PyTorch's: y = conv2d(x, w, stride 2, padding 1),
// g = grad(sum(y^2), (x, w), create_graph) then grad(sum(g_x * u) + sum(g_w), (x, w)).
TEST(ConvGrad, SecondDerivativeTorchValues) {
  const Tensor x = (arange(18, kDouble) / 7.0 - 1.0).view({1, 2, 3, 3}).requires_grad_();
  const Tensor w = (arange(8, kDouble) / 5.0 - 0.5).view({2, 1, 2, 2}).requires_grad_();
  const Tensor y = F::conv2d(x, w, {}, 2, 1, 1, 2);
  const TensorList g = autograd::grad({(y * y).sum()}, {x, w}, {}, std::nullopt, /*create_graph=*/true);
  const Tensor u = (arange(18, kDouble) % 5.0 - 2.0).view({1, 2, 3, 3});
  const TensorList h = autograd::grad({(g[0] * u).sum() + g[1].sum()}, {x, w});
  // torch 2.15 (same program in float64)
  EXPECT_TRUE(close(h[0], tensor({-0.4399999999999999, 0.32285714285714284, -0.2657142857142857, 0.9828571428571429, 1.5,
                                       1.1514285714285715, 0.09142857142857141, 0.8028571428571428, 0.4542857142857143,
                                       4.268571428571428, -0.19142857142857106, -0.7114285714285709, 2.8285714285714283,
                                       8.988571428571428, 11.057142857142855, 2.874285714285714, 13.125714285714283,
                                       15.19428571428571}, kDouble).view({1, 2, 3, 3}), 1e-10, 1e-12));
  EXPECT_TRUE(close(h[1], tensor({2.0040816326530613, 0.8285714285714285, 2.4938775510204088, 5.2857142857142865,
                                       14.751020408163264, 22.195918367346934, 3.04081632653061, 8.469387755102039}, kDouble).view({2, 1, 2, 2}), 1e-10, 1e-12));
}

namespace {
/// Gradients of sum(conv(x) * r) for x, w, b in float32 (fast path) against float64.
void expect_f32_grads_match(const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& fn,
                            const Tensor& x64, const Tensor& w64, const Tensor& b64, bool channels_last) {
  auto run = [&](ScalarType dt) {
    Tensor x = x64.to(dt), w = w64.to(dt), b = b64.defined() ? b64.to(dt) : Tensor();
    if (channels_last) x = x.contiguous(kChannelsLast);
    x = x.detach().requires_grad_();
    w = w.detach().requires_grad_();
    if (b.defined()) b = b.detach().requires_grad_();
    const Tensor y = fn(x, w, b);
    manual_seed(99);
    const Tensor r = randn(y.sizes(), kDouble).to(dt);  // the same values in both runs
    (y * r).sum().backward();
    if (channels_last) {
      EXPECT_TRUE(y.is_contiguous(kChannelsLast));
      EXPECT_TRUE(x.grad().is_contiguous(kChannelsLast));
    }
    EXPECT_TRUE(w.grad().is_contiguous());
    return std::tuple{y, x.grad(), w.grad(), b.defined() ? b.grad() : Tensor()};
  };
  const auto [y32, gx32, gw32, gb32] = run(kFloat);
  const auto [y64, gx64, gw64, gb64] = run(kDouble);
  EXPECT_TRUE(close(y32, y64, 1e-4, 1e-4)) << "output";
  EXPECT_TRUE(close(gx32, gx64, 1e-4, 1e-4)) << "grad input";
  EXPECT_TRUE(close(gw32, gw64, 1e-4, 1e-3)) << "grad weight";
  if (gb64.defined()) EXPECT_TRUE(close(gb32, gb64, 1e-4, 1e-3)) << "grad bias";
}
}  // namespace

TEST(ConvGrad, Float32MatchesFloat64) {
  manual_seed(14);
  for (bool cl : {false, true})
    for (const Case2d& c : cases2d()) {
      if (cl && c.x[1] == 1) continue;
      SCOPED_TRACE(std::string(c.name) + (cl ? " channels_last" : ""));
      const Inputs in = make_inputs(c, kDouble);
      expect_f32_grads_match(
          [&](const Tensor& x, const Tensor& w, const Tensor& b) {
            return F::conv2d(x, w, b, {c.p.sh, c.p.sw}, {c.p.ph, c.p.pw}, {c.p.dh, c.p.dw}, c.p.groups);
          },
          in.x, in.w, in.b, cl);
    }
  for (bool cl : {false, true})
    for (const CaseT& c : cases_t()) {
      SCOPED_TRACE(std::string("transposed ") + c.name + (cl ? " channels_last" : ""));
      const Tensor x = randn(c.x, kDouble), w = randn(c.w, kDouble);
      const Tensor b = c.bias ? randn({c.w[1] * c.p.groups}, kDouble) : Tensor();
      expect_f32_grads_match([&](const Tensor& xx, const Tensor& ww, const Tensor& bb) { return run_t(c, xx, ww, bb); },
                             x, w, b, cl);
    }
  // conv1d
  const Tensor x = randn({4, 6, 20}, kDouble), w = randn({8, 3, 5}, kDouble), b = randn({8}, kDouble);
  expect_f32_grads_match(
      [](const Tensor& xx, const Tensor& ww, const Tensor& bb) { return F::conv1d(xx, ww, bb, 2, 2, 1, 2); }, x, w, b,
      false);
}

TEST(ConvGrad, NodeAndPartialGradients) {
  manual_seed(15);
  const Tensor x = randn({2, 3, 5, 5}), w = randn({4, 3, 3, 3}).requires_grad_(), b = randn({4});
  const Tensor y = F::conv2d(x, w, b, 1, 1);
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
  y.sum().backward();
  // only the weight asked for a gradient
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  // nothing requires grad: nothing recorded
  EXPECT_FALSE(F::conv2d(x, w.detach(), b).grad_fn());
  {
    NoGradGuard ng;
    EXPECT_FALSE(F::conv2d(x, w, b).grad_fn());
  }
  // the saved input is version-checked
  const Tensor xi = randn({1, 3, 4, 4}).requires_grad_();
  Tensor h = xi * 2;
  const Tensor z = F::conv2d(h, w);
  h.add_(1);
  expect_error([&] { z.sum().backward(); }, {"modified by an inplace operation", "ConvolutionBackward0"});
}

// ---- layouts, oneDNN and threads --------------------------------------------------------------

TEST(ConvLayout, ChannelsLastRunsWithoutActivationReorders) {
  if (!cpu::onednn_available()) GTEST_SKIP() << "brisk was built without oneDNN";
  manual_seed(16);
  auto& st = cpu::conv_stats();
  const Tensor x = randn({4, 16, 10, 10}).contiguous(kChannelsLast).requires_grad_();
  const Tensor w = randn({32, 16, 3, 3}).requires_grad_(), b = randn({32}).requires_grad_();
  const uint64_t reorders = st.activation_reorders.load(), dnnl = st.onednn_calls.load(),
                 im2col = st.im2col_calls.load();
  const Tensor y = F::conv2d(x, w, b, 1, 1);
  y.backward(randn(y.sizes()).contiguous(kChannelsLast));
  EXPECT_EQ(st.activation_reorders.load(), reorders) << "NHWC activations were converted around oneDNN";
  EXPECT_EQ(st.onednn_calls.load(), dnnl + 3);  // forward, backward data, backward weights
  EXPECT_EQ(st.im2col_calls.load(), im2col);
  EXPECT_TRUE(x.grad().is_contiguous(kChannelsLast));
  // an NCHW float32 input runs on oneDNN too (in its blocked layout)
  const uint64_t before = st.onednn_calls.load();
  F::conv2d(x.detach().contiguous(), w.detach(), b.detach(), 1, 1);
  EXPECT_EQ(st.onednn_calls.load(), before + 1);
  // float64 always runs on im2col
  const uint64_t i2c = st.im2col_calls.load();
  F::conv2d(x.detach().to(kDouble), w.detach().to(kDouble));
  EXPECT_EQ(st.im2col_calls.load(), i2c + 1);
}

TEST(ConvLayout, BackwardConvertsEachActivationOnce) {
  if (!cpu::onednn_available()) GTEST_SKIP() << "brisk was built without oneDNN";
  manual_seed(21);
  auto& st = cpu::conv_stats();
  // NCHW float32: oneDNN runs in its blocked layout; grad_dst is converted
  // once for both gradients and the forward's converted input is reused
  const Tensor x = randn({4, 16, 10, 10}).requires_grad_();
  const Tensor w = randn({32, 16, 3, 3}).requires_grad_(), b = randn({32}).requires_grad_();
  const Tensor y = F::conv2d(x, w, b, 1, 1);
  const uint64_t before = st.activation_reorders.load(), reused = st.reorders_reused.load();
  const Tensor gy = randn(y.sizes());
  y.backward(gy, /*retain_graph=*/true);
  EXPECT_LE(st.activation_reorders.load() - before, 2u) << "grad_dst in and grad_input out at most";
  // (oneDNN 2.6 takes nChw16c for both gradients here, so there is something to share)
  EXPECT_GE(st.reorders_reused.load() - reused, 1u);
  const Tensor gx = x.grad().clone(), gw = w.grad().clone(), gb = b.grad().clone();
  // a second backward through the retained graph converts again and agrees
  x.mutable_grad() = Tensor();
  w.mutable_grad() = Tensor();
  b.mutable_grad() = Tensor();
  y.backward(gy);
  EXPECT_TRUE(close(x.grad(), gx, 0, 0));
  EXPECT_TRUE(close(w.grad(), gw, 0, 0));
  EXPECT_TRUE(close(b.grad(), gb, 0, 0));
  // and both agree with float64
  const Tensor x64 = x.detach().to(kDouble).requires_grad_(), w64 = w.detach().to(kDouble).requires_grad_();
  F::conv2d(x64, w64, b.detach().to(kDouble), 1, 1).backward(gy.to(kDouble));
  EXPECT_TRUE(close(gx, x64.grad(), 1e-4, 1e-4));
  EXPECT_TRUE(close(gw, w64.grad(), 1e-4, 1e-3));
}

TEST(ConvLayout, PrimitiveCacheAndThreadCount) {
  if (!cpu::onednn_available()) GTEST_SKIP() << "brisk was built without oneDNN";
  manual_seed(17);
  auto& st = cpu::conv_stats();
  const int threads = get_num_threads();
  const Tensor x = randn({8, 8, 12, 12}), w = randn({16, 8, 3, 3}), b = randn({16});
  set_num_threads(1);
  const Tensor y1 = F::conv2d(x, w, b, 1, 1);
  const uint64_t created = st.primitives_created.load();
  const Tensor again = F::conv2d(x, w, b, 1, 1);
  EXPECT_EQ(st.primitives_created.load(), created) << "a second call with the same shapes built a new primitive";
  EXPECT_TRUE(close(again, y1, 0, 0));
  set_num_threads(2);
  const Tensor y2 = F::conv2d(x, w, b, 1, 1);
  EXPECT_EQ(st.primitives_created.load(), created + 1) << "the thread count is part of the cache key";
  EXPECT_TRUE(close(y2, y1, 1e-5, 1e-5));
  set_num_threads(threads);
  cpu::clear_conv_primitive_cache();
  EXPECT_TRUE(close(F::conv2d(x, w, b, 1, 1), y1, 1e-5, 1e-5));
}

TEST(ConvLayout, ConcurrentCallsFromSeveralThreads) {
  // Threads share cached primitives (each call brings its own scratchpad).
  manual_seed(22);
  const Tensor w = randn({16, 8, 3, 3}), b = randn({16});
  std::vector<Tensor> xs, want;
  for (int i = 0; i < 4; ++i) {
    xs.push_back(randn({4, 8, 9, 9}));
    want.push_back(F::conv2d(xs.back(), w, b, 1, 1));
  }
  std::vector<Tensor> got(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 20; ++rep) got[i] = F::conv2d(xs[i], w, b, 1, 1);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(close(got[i], want[i], 1e-6, 1e-6)) << i;
}

// ---- errors -----------------------------------------------------------------------------------

TEST(ConvErrors, NameTheOpAndTheProblem) {
  const Tensor x = randn({2, 3, 5, 5}), w = randn({4, 3, 3, 3});
  expect_error([&] { F::conv2d(randn({2, 2, 5, 5}), w); }, {"[conv2d]", "2 channels", "expects 3"});
  expect_error([&] { F::conv2d(x, randn({4, 1, 3, 3}), {}, 1, 0, 1, 2); }, {"[conv2d]", "3 channels", "expects 2"});
  expect_error([&] { F::conv2d(randn({2, 4, 5, 5}), randn({3, 2, 3, 3}), {}, 1, 0, 1, 2); },
               {"[conv2d]", "out_channels 3", "not divisible by groups"});
  expect_error([&] { F::conv2d(x, w, {}, 1, 0, 1, 0); }, {"[conv2d]", "groups must be positive"});
  expect_error([&] { F::conv2d(randn({2, 3, 2, 2}), w); }, {"[conv2d]", "kernel size (3, 3)", "padded input size (2, 2)"});
  expect_error([&] { F::conv2d(randn({2, 3, 4, 4}), w, {}, 1, 0, 2); }, {"[conv2d]", "kernel size (5, 5)"});
  expect_error([&] { F::conv2d(randn({3, 5, 5, 5, 5}), w); }, {"[conv2d]", "3-D (unbatched) or 4-D (batched) input"});
  expect_error([&] { F::conv2d(randn({5, 5}), w); }, {"[conv2d]", "[5, 5]"});
  expect_error([&] { F::conv2d(x, randn({4, 3, 3})); }, {"[conv2d]", "4-D weight"});
  expect_error([&] { F::conv2d(x, w, randn({3})); }, {"[conv2d]", "bias", "4 elements"});
  expect_error([&] { F::conv2d(x, w, {}, 0); }, {"[conv2d]", "stride must be positive"});
  expect_error([&] { F::conv2d(x, w, {}, 1, -1); }, {"[conv2d]", "padding must be non-negative"});
  expect_error([&] { F::conv2d(x, w, {}, 1, 0, 0); }, {"[conv2d]", "dilation must be positive"});
  expect_error([&] { F::conv2d(x, w, {}, 2, "same"); }, {"[conv2d]", "padding='same'", "strided"});
  expect_error([&] { F::conv2d(x, w, {}, 1, "full"); }, {"[conv2d]", "'same', 'valid'", "'full'"});
  expect_error([&] { F::conv2d(x, w, {}, {1, 2, 3}); }, {"[conv2d]", "stride must be one integer or 2 integers"});
  expect_error([&] { F::conv2d(x.to(kInt64), w.to(kInt64)); }, {"[conv2d]", "floating point"});
  expect_error([&] { F::conv2d(x, w.to(kDouble)); }, {"[conv2d]", "same dtype"});
  expect_error([&] { F::conv2d(x, w, randn({4}, kDouble)); }, {"[conv2d]", "bias", "same dtype"});
  expect_error([&] { F::conv2d(Tensor(), w); }, {"[conv2d]", "defined"});

  expect_error([&] { F::conv1d(randn({2, 3, 2}), randn({4, 3, 3})); }, {"[conv1d]", "kernel size 3", "padded input size 2"});
  expect_error([&] { F::conv1d(randn({2, 3, 5, 5}), randn({4, 3, 3})); }, {"[conv1d]", "2-D (unbatched) or 3-D"});
  expect_error([&] { F::conv1d(randn({2, 2, 5}), randn({4, 3, 3})); }, {"[conv1d]", "2 channels"});

  const Tensor wt = randn({3, 4, 3, 3});
  expect_error([&] { F::conv_transpose2d(randn({2, 4, 5, 5}), wt); }, {"[conv_transpose2d]", "4 channels", "expects 3"});
  expect_error([&] { F::conv_transpose2d(x, wt, {}, 1, 0, 1); }, {"[conv_transpose2d]", "output_padding (1, 1)",
                                                                  "smaller than either stride"});
  expect_error([&] { F::conv_transpose2d(randn({1, 3, 1, 1}), wt, {}, 1, 2); }, {"[conv_transpose2d]", "output size"});
  expect_error([&] { F::conv_transpose2d(x, wt, {}, 1, 0, 0, 2); }, {"[conv_transpose2d]", "in_channels 3",
                                                                     "not divisible by groups"});
  expect_error([&] { F::conv_transpose2d(x, wt, randn({3})); }, {"[conv_transpose2d]", "bias", "4 elements"});
}

// ---- modules ------------------------------------------------------------------------------------

TEST(ConvModules, Conv2dParametersInitAndForward) {
  manual_seed(18);
  nn::Conv2d conv(nn::Conv2dOptions(16, 32, 3).padding(1));
  EXPECT_EQ(conv->weight.sizes(), IntArrayRef({32, 16, 3, 3}));
  EXPECT_EQ(conv->bias.sizes(), IntArrayRef({32}));
  EXPECT_EQ(conv->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
  // kaiming_uniform_(a = sqrt(5)) and the bias: U(+-1/sqrt(fan_in)), fan_in = 16 * 9
  const double bound = 1.0 / std::sqrt(144.0);
  EXPECT_LE(conv->weight.abs().max().item<double>(), bound);
  EXPECT_GT(conv->weight.abs().max().item<double>(), 0.98 * bound);
  EXPECT_NEAR(conv->weight.std().item<double>(), bound / std::sqrt(3.0), 0.03 * bound);
  EXPECT_LE(conv->bias.abs().max().item<double>(), bound);
  EXPECT_GT(conv->bias.abs().max().item<double>(), 0.5 * bound);
  const Tensor x = randn({2, 16, 8, 8});
  const Tensor y = conv(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 32, 8, 8}));
  EXPECT_TRUE(close(y, F::conv2d(x, conv->weight, conv->bias, 1, 1), 0, 0));
  y.sum().backward();
  EXPECT_TRUE(conv->weight.grad().defined());
  EXPECT_TRUE(conv->bias.grad().defined());

  nn::Conv2d nob(nn::Conv2dOptions(1, 32, 3).padding(1).bias(false));
  EXPECT_FALSE(nob->bias.defined());
  EXPECT_EQ(nob->parameters().size(), 1u);
  nn::Conv2d simple(nn::Conv2dOptions(3, 8, {3, 5}));
  EXPECT_EQ(simple->weight.sizes(), IntArrayRef({8, 3, 3, 5}));
  nn::Conv2d grouped(nn::Conv2dOptions(4, 8, 3).groups(2).dilation(2).padding("same").bias(false));
  EXPECT_EQ(grouped->weight.sizes(), IntArrayRef({8, 2, 3, 3}));
}

TEST(ConvModules, Printing) {
  std::ostringstream a, b, c, d, e;
  a << nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1));
  EXPECT_NE(a.str().find("Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"), std::string::npos)
      << a.str();
  b << nn::Conv2d(nn::Conv2dOptions(4, 8, {3, 1}).stride(2).dilation(2).groups(4).bias(false).padding("valid"));
  EXPECT_NE(b.str().find("Conv2d(4, 8, kernel_size=(3, 1), stride=(2, 2), padding=valid, dilation=(2, 2), "
                         "groups=4, bias=false)"),
            std::string::npos)
      << b.str();
  c << nn::Conv1d(nn::Conv1dOptions(3, 6, 5).padding("same"));
  EXPECT_NE(c.str().find("Conv1d(3, 6, kernel_size=(5,), stride=(1,), padding=same)"), std::string::npos) << c.str();
  d << nn::ConvTranspose2d(nn::ConvTranspose2dOptions(32, 16, 4).stride(2).padding(1).output_padding(1));
  EXPECT_NE(d.str().find("ConvTranspose2d(32, 16, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1), "
                         "output_padding=(1, 1))"),
            std::string::npos)
      << d.str();
  e << nn::Conv2d(2, 3, 1);
  EXPECT_NE(e.str().find("Conv2d(2, 3, kernel_size=(1, 1), stride=(1, 1))"), std::string::npos) << e.str();
}

TEST(ConvModules, Conv1dAndTransposed) {
  manual_seed(19);
  nn::Conv1d c1(nn::Conv1dOptions(4, 6, 3).stride(2).groups(2));
  EXPECT_EQ(c1->weight.sizes(), IntArrayRef({6, 2, 3}));
  const Tensor x = randn({2, 4, 11});
  EXPECT_TRUE(close(c1(x), F::conv1d(x, c1->weight, c1->bias, 2, 0, 1, 2), 0, 0));
  const double bound1 = 1.0 / std::sqrt(6.0);
  EXPECT_LE(c1->weight.abs().max().item<double>(), bound1);

  nn::ConvTranspose2d ct(nn::ConvTranspose2dOptions(8, 4, 4).stride(2).padding(1));
  EXPECT_EQ(ct->weight.sizes(), IntArrayRef({8, 4, 4, 4}));
  EXPECT_EQ(ct->bias.sizes(), IntArrayRef({4}));
  // PyTorch's fan_in of a transposed weight: weight.size(1) * kH * kW
  const double bound = 1.0 / std::sqrt(64.0);
  EXPECT_LE(ct->weight.abs().max().item<double>(), bound);
  EXPECT_GT(ct->weight.abs().max().item<double>(), 0.95 * bound);
  EXPECT_LE(ct->bias.abs().max().item<double>(), bound);
  const Tensor z = randn({2, 8, 5, 5});
  const Tensor y = ct(z);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 4, 10, 10}));
  EXPECT_TRUE(close(y, F::conv_transpose2d(z, ct->weight, ct->bias, 2, 1), 0, 0));
}

TEST(ConvModules, DtypeAndConstructorErrors) {
  nn::Conv2d c(nn::Conv2dOptions(2, 4, 3), kDouble);
  EXPECT_EQ(c->weight.dtype(), kDouble);
  EXPECT_EQ(c(randn({1, 2, 4, 4}, kDouble)).dtype(), kDouble);
  c->to(kFloat);
  EXPECT_EQ(c(randn({1, 2, 4, 4})).dtype(), kFloat);
  expect_error([] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)); }, {"Conv2d", "in_channels 3", "groups 2"});
  expect_error([] { nn::Conv2d(nn::Conv2dOptions(4, 6, 3).groups(4)); }, {"Conv2d", "out_channels 6"});
  expect_error([] { nn::Conv2d(nn::Conv2dOptions(4, 6, 0)); }, {"Conv2d", "kernel_size must be positive"});
  expect_error([] { nn::Conv2d(nn::Conv2dOptions(4, 6, 3).padding("same").stride(2)); }, {"Conv2d", "strided"});
  expect_error([] { nn::Conv1d(nn::Conv1dOptions(4, 6, 3).padding("bogus")); }, {"Conv1d", "'bogus'"});
  expect_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(0, 6, 3)); }, {"ConvTranspose2d", "positive"});
  expect_error([] { nn::Conv2d(4, 6, 3)->forward(randn({1, 3, 5, 5})); }, {"[conv2d]", "3 channels"});
}

TEST(ConvModules, SmallCnnTrains) {
  // conv -> relu -> conv -> mean: a few SGD steps lower the loss on a fixed batch
  manual_seed(20);
  auto c1 = std::make_shared<nn::Conv2dImpl>(nn::Conv2dOptions(1, 8, 3).padding(1));
  auto c2 = std::make_shared<nn::Conv2dImpl>(nn::Conv2dOptions(8, 4, 3).stride(2));
  const Tensor x = randn({8, 1, 12, 12}), target = randn({8, 4, 5, 5});
  auto loss_of = [&] { return F::mse_loss(c2->forward(F::relu(c1->forward(x))), target); };
  const double first = loss_of().item<double>();
  for (int step = 0; step < 20; ++step) {
    c1->zero_grad();
    c2->zero_grad();
    loss_of().backward();
    NoGradGuard ng;
    for (auto* m : {static_cast<nn::Module*>(c1.get()), static_cast<nn::Module*>(c2.get())})
      for (Tensor p : m->parameters()) p.add_(p.grad(), -0.1);
  }
  EXPECT_LT(loss_of().item<double>(), 0.9 * first);
}

// Torch bugs (difffuzz nn:F.conv1d:nan:half, nn:F.conv2d:nan:half,
// allowlisted): torch's bfloat16 convolution on the CPU (1.13 and 2.15) gives
// NaN at outputs whose window holds no NaN, and NaN where one infinite input
// makes the output infinite. brisk's bfloat16 result is float64's, rounded:
//   x = [[0.4375, nan, -3.6875, 65536, -0.359375, -2.15625]], conv1d(padding=1, dilation=2)
//   float64: [[nan, 0.61746979, nan, -0.01803589], [nan, -0.08419800, nan, 1.53230286]]
//   torch bfloat16: [[nan, nan, nan, -0.0181], [nan, nan, nan, 1.5312]]
//   x = [[[0.2021484375, -inf, 1.7265625]]]: float64 [[[inf], [-inf]]], torch bfloat16 [[[nan], [nan]]]
TEST(Conv, BFloat16NonFiniteInputsStayInTheirWindows) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tensor w = tensor({0.0155029296875, -0.10888671875, -0.58203125, -0.416015625, 0.0048828125, -0.322265625}, kDouble)
                       .view({2, 1, 3});
  const Tensor x = tensor({0.4375, nan, -3.6875, 65536.0, -0.359375, -2.15625}, kDouble).view({1, 6});
  const Tensor want = tensor({nan, 0.6174697875976562, nan, -0.018035888671875, nan, -0.084197998046875, nan,
                              1.5323028564453125},
                             kDouble)
                          .view({2, 4});
  EXPECT_TRUE(close(F::conv1d(x, w, {}, 1, 1, 2), want, 1e-15, 0));
  EXPECT_TRUE(close(F::conv1d(x.to(kBFloat16), w.to(kBFloat16), {}, 1, 1, 2), want, 1.6e-2, 0));
  const Tensor x2 = tensor({0.2021484375, -inf, 1.7265625}, kDouble).view({1, 1, 3});
  const Tensor w2 = tensor({0.3515625, -0.482421875, -0.8125, 0.2431640625, 0.0771484375, 0.2412109375}, kDouble).view({2, 1, 3});
  const Tensor b2 = tensor({-0.51171875, 0.09375}, kDouble);
  for (ScalarType dt : {kDouble, kBFloat16})
    EXPECT_TRUE(close(F::conv1d(x2.to(dt), w2.to(dt), b2.to(dt)), tensor({inf, -inf}, kDouble).view({1, 2, 1}), 0, 0)) << dt;
}

// Denormal results (difffuzz nn:mul:signed-zero:half+sfloat): on a CPU with
// AVX512_BF16/AMX, brisk's bfloat16 convolution runs on oneDNN's kernels
// (Note [bfloat16 convolutions]), whose bf16 dot product treats denormals as
// zero, as torch's does (torch 2.15 gives 0.0). Elsewhere, or with a
// non-finite input as here (the NaN), brisk computes in float32 and rounds
// the product: 9.18e-41 * -0.58984375 = -5.4e-41 rounds to the smallest
// bfloat16 denormal, -9.18e-41.
TEST(Conv, BFloat16DenormalResultIsRounded) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = tensor({nan, 9.183549615799121e-41, 3.046875, -2.5}, kDouble).view({2, 2, 1}).to(kBFloat16);
  const Tensor w = tensor({-0.58984375, 0.69140625}, kDouble).view({2, 1, 1, 1}).to(kBFloat16);
  const Tensor y = F::conv2d(x, w, {}, 1, 0, 1, 2).to(kDouble);
  EXPECT_EQ(y.view({4})[1].item<double>(), -9.183549615799121e-41);
  // all finite: the oneDNN kernel where the CPU has one (flushed), else rounded
  const Tensor xf = tensor({1.0, 9.183549615799121e-41, 3.046875, -2.5}, kDouble).view({2, 2, 1}).to(kBFloat16);
  const double got = F::conv2d(xf, w, {}, 1, 0, 1, 2).to(kDouble).view({4})[1].item<double>();
  if (brisk::detail::cpu_has_bf16_dot())
    EXPECT_EQ(got, 0.0);
  else
    EXPECT_EQ(got, -9.183549615799121e-41);
  EXPECT_TRUE(close(y.view({4}).narrow(0, 2, 2), tensor({2.109375, -1.7265625}, kDouble), 0, 0));
}

// bfloat16 convolutions (Note [bfloat16 convolutions]): on a CPU with
// AVX512_BF16/AMX they run on oneDNN's bfloat16 kernels (forward, both
// gradients, NCHW and channels_last); the values agree with float32 on the
// same bfloat16-rounded inputs to bfloat16's precision.
TEST(Conv, BFloat16MatchesFloat32OnTheSameInputs) {
  manual_seed(7);
  for (bool cl : {false, true}) {
    Tensor x = randn({4, 8, 10, 10}).to(kBFloat16);
    Tensor w = (randn({16, 8, 3, 3}) * 0.2).to(kBFloat16);
    Tensor b = randn({16}).to(kBFloat16);
    if (cl) x = x.contiguous(kChannelsLast);
    Tensor xf = x.to(kFloat).detach().requires_grad_(true), wf = w.to(kFloat).detach().requires_grad_(true);
    Tensor bf = b.to(kFloat).detach().requires_grad_(true);
    x.requires_grad_(true);
    w.requires_grad_(true);
    b.requires_grad_(true);
    const uint64_t dnnl = cpu::conv_stats().onednn_calls.load();
    Tensor y = F::conv2d(x, w, b, 1, 1);
    Tensor g = randn(y.sizes()).to(kBFloat16);
    y.backward(g);
    if (brisk::detail::cpu_has_bf16_dot()) EXPECT_EQ(cpu::conv_stats().onednn_calls.load(), dnnl + 3) << cl;
    Tensor yf = F::conv2d(xf, wf, bf, 1, 1);
    yf.backward(g.to(kFloat));
    EXPECT_EQ(y.dtype(), kBFloat16);
    EXPECT_EQ(x.grad().dtype(), kBFloat16);
    EXPECT_EQ(w.grad().dtype(), kBFloat16);
    EXPECT_TRUE(close(y.to(kFloat), yf.detach(), 1e-2, 2e-2)) << cl;
    EXPECT_TRUE(close(x.grad().to(kFloat), xf.grad(), 1e-2, 2e-2)) << cl;
    EXPECT_TRUE(close(w.grad().to(kFloat), wf.grad(), 1e-2, 1e-1)) << cl;
    EXPECT_TRUE(close(b.grad().to(kFloat), bf.grad(), 1e-2, 1e-1)) << cl;
  }
}
