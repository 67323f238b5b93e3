// Convolutions on CUDA through cuDNN (backend/cuda/conv_cudnn.cpp).
//
// Host tests (never skip): the padding fit (Note [cuDNN padding]) checked
// window by window against the padding asked for, and the batch split.
// GPU tests (skip without a device): conv1d, conv2d and conv_transpose2d
// forward and gradients of input, weight and bias on CUDA against the CPU's
// float64 results on the same (rounded) values, for float32 and float64
// (tight: float32 must not be TF32 unless allowed) and float16/bfloat16
// (loose), over stride, padding (incl. "same" with even kernels), dilation,
// groups, depthwise, unbatched inputs and output_padding; channels_last in and
// out; weight layouts; benchmark mode on and off; batch splitting; streams
// and threads; empty batches; non-contiguous inputs; errors; nn::Conv2d.
#include <gtest/gtest.h>

#include <brisk/nn.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/conv_cudnn.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;
namespace cu = brisk::cuda::detail;

// ---- host: planning ----------------------------------------------------------------------

namespace {

/// Checks a fit against the padding asked for: every row a window of the
/// fitted cuDNN problem reads must be the row (or the zero) the original
/// convolution reads, and cuDNN's output size must be `out`.
::testing::AssertionResult fit_is_exact(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t pt) {
  const cu::CudnnPadFit f = cu::cudnn_pad_fit(in, out, k, s, d, pt);
  const int64_t in2 = in + f.before + f.after, extent = d * (k - 1) + 1;
  if (f.pad < 0 || f.before < 0 || in2 < 1)
    return ::testing::AssertionFailure() << "pad " << f.pad << " before " << f.before << " fitted input " << in2;
  if (in2 + 2 * f.pad < extent) return ::testing::AssertionFailure() << "fitted input smaller than the kernel";
  const int64_t out2 = (in2 + 2 * f.pad - extent) / s + 1;
  if (out2 != out) return ::testing::AssertionFailure() << "cuDNN output " << out2 << " != " << out;
  const int64_t kept = in + std::min<int64_t>(0, f.after);  // rows of the input copied into the fitted one
  for (int64_t o = 0; o < out; ++o)
    for (int64_t t = 0; t < k; ++t) {
      const int64_t r = o * s - pt + t * d;         // the row the convolution asked for reads
      const int64_t r2 = o * s - f.pad + t * d;     // the row cuDNN reads in the fitted input
      const bool want_value = r >= 0 && r < in;
      const bool got_value = r2 >= 0 && r2 < in2 && r2 - f.before >= 0 && r2 - f.before < kept;
      if (want_value != got_value || (want_value && r2 - f.before != r))
        return ::testing::AssertionFailure() << "output " << o << " tap " << t << ": row " << r << " vs fitted row "
                                             << r2 << " (before " << f.before << ", after " << f.after << ")";
    }
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(CudnnPlan, PadFitIsExactForEveryDirectConvolution) {
  int checked = 0;
  for (int64_t in = 1; in <= 9; ++in)
    for (int64_t k = 1; k <= 4; ++k)
      for (int64_t s = 1; s <= 3; ++s)
        for (int64_t d = 1; d <= 3; ++d)
          for (int64_t pt = 0; pt <= 4; ++pt)
            for (int64_t pb = 0; pb <= 4; ++pb) {
              const int64_t extent = d * (k - 1) + 1;
              if (in + pt + pb < extent) continue;
              const int64_t out = (in + pt + pb - extent) / s + 1;
              ASSERT_TRUE(fit_is_exact(in, out, k, s, d, pt))
                  << "in " << in << " k " << k << " s " << s << " d " << d << " pads " << pt << "," << pb;
              ++checked;
            }
  EXPECT_GT(checked, 3000);
}

TEST(CudnnPlan, PadFitIsExactForEveryTransposedConvolution) {
  // the dual of conv_transpose2d: src = the op's output, dst = its input
  int checked = 0;
  for (int64_t n = 1; n <= 6; ++n)  // the op's input size (the dual's output)
    for (int64_t k = 1; k <= 4; ++k)
      for (int64_t s = 1; s <= 3; ++s)
        for (int64_t d = 1; d <= 3; ++d)
          for (int64_t p = 0; p <= 3; ++p)
            for (int64_t op = 0; op < std::max(s, d); ++op) {
              const int64_t extent = d * (k - 1) + 1;
              const int64_t in = (n - 1) * s - 2 * p + extent + op;
              if (in < 1) continue;
              ASSERT_TRUE(fit_is_exact(in, n, k, s, d, p))
                  << "n " << n << " k " << k << " s " << s << " d " << d << " p " << p << " op " << op;
              ++checked;
            }
  EXPECT_GT(checked, 500);
}

TEST(CudnnPlan, PadFitCopiesOnlyWhenCudnnCannotExpressThePadding) {
  // symmetric padding, with or without a remainder the floor drops: in place
  EXPECT_FALSE(cu::cudnn_pad_fit(7, 7, 3, 1, 1, 1).needs_copy());
  EXPECT_FALSE(cu::cudnn_pad_fit(8, 4, 3, 2, 1, 1).needs_copy());  // (8 + 2 - 3) / 2 + 1 = 4
  EXPECT_EQ(cu::cudnn_pad_fit(8, 4, 3, 2, 1, 1).pad, 1);
  // "same" with an odd kernel pads symmetrically
  EXPECT_FALSE(cu::cudnn_pad_fit(6, 6, 5, 1, 1, 2).needs_copy());
  // "same" with an even kernel pads one more after: one zero row appended
  const cu::CudnnPadFit even = cu::cudnn_pad_fit(6, 6, 4, 1, 1, 1);
  EXPECT_EQ(even.pad, 1);
  EXPECT_EQ(even.before, 0);
  EXPECT_EQ(even.after, 1);
  // transposed, stride 1, dilation 2, output_padding 1: the dual's last row is never read
  const int64_t in = (5 - 1) * 1 - 0 + 5 + 1;  // n = 5, k = 3, d = 2, p = 0, op = 1
  const cu::CudnnPadFit crop = cu::cudnn_pad_fit(in, 5, 3, 1, 2, 0);
  EXPECT_EQ(crop.pad, 0);
  EXPECT_EQ(crop.before, 0);
  EXPECT_EQ(crop.after, -1);
}

TEST(CudnnPlan, BatchChunk) {
  EXPECT_EQ(cu::cudnn_batch_chunk(10, 100, 1000), 10);
  EXPECT_EQ(cu::cudnn_batch_chunk(10, 100, 350), 3);
  EXPECT_EQ(cu::cudnn_batch_chunk(10, 1000, 1000), 1);
  EXPECT_EQ(cu::cudnn_batch_chunk(10, 1001, 1000), 0);
  EXPECT_EQ(cu::cudnn_batch_chunk(0, 5, 1000), 0);
  // 256 x 224 x 224 = 12,845,056 elements per sample: 167 samples per call
  EXPECT_EQ(cu::cudnn_batch_chunk(64, int64_t(256) * 224 * 224), 64);  // 822 M elements: one call
  EXPECT_EQ(cu::cudnn_batch_chunk(167, int64_t(256) * 224 * 224), 167);
  EXPECT_EQ(cu::cudnn_batch_chunk(512, int64_t(256) * 224 * 224), 167);
}

// ---- GPU: against the CPU ------------------------------------------------------------------

namespace {

using ConvFn = std::function<Tensor(const Tensor& x, const Tensor& w, const Tensor& b)>;

/// Prints the cuDNN counters (informative: which paths a table took).
void print_stats(const char* what) {
  const auto& st = cu::cudnn_conv_stats();
  using ull = unsigned long long;
  std::fprintf(stderr,
               "[cudnn] after %s: calls %llu, plans %llu, heuristic %llu, benchmark %llu, padded %llu, "
               "fallbacks %llu\n",
               what, ull(st.calls.load()), ull(st.plans_created.load()), ull(st.heuristic_choices.load()),
               ull(st.benchmark_finds.load()), ull(st.padded_copies.load()), ull(st.fallbacks.load()));
}

const ScalarType kTypes[] = {kFloat, kDouble, kHalf, kBFloat16};

Device gpu() { return Device(kCUDA); }

/// Tolerance relative to the largest magnitude of the reference.
double tol_of(ScalarType dt) {
  switch (dt) {
    case kDouble: return 1e-11;
    case kFloat: return 5e-5;  // exact float32 math; TF32 errs by about 1e-3 here
    case kHalf: return 1e-2;
    default: return 4e-2;  // bfloat16
  }
}

::testing::AssertionResult near(const Tensor& got, const Tensor& want, ScalarType dt, const char* what) {
  if (!got.defined()) return ::testing::AssertionFailure() << what << ": undefined";
  if (!got.is_cuda()) return ::testing::AssertionFailure() << what << ": not on CUDA";
  if (got.dtype() != dt) return ::testing::AssertionFailure() << what << ": dtype " << got.dtype();
  const double scale = std::max(1.0, want.numel() ? want.abs().max().item<double>() : 0.0);
  auto r = close(got.cpu(), want, 0.0, tol_of(dt) * scale);
  if (!r) r << " (" << what << ", tolerance " << tol_of(dt) * scale << ")";
  return r;
}

struct Opts {
  bool cl_input = false;   // input (and gradient) channels_last
  bool cl_weight = false;  // weight channels_last
  bool bias = true;
  bool check_layout = true;
};

/// Runs `f` on CUDA in dtype `dt` and on the CPU in float64 on the same
/// values, forward and backward with the same output gradient, and compares
/// the output and the gradients of input, weight and bias.
void check(const std::string& name, const ConvFn& f, std::vector<int64_t> xs, std::vector<int64_t> ws,
           int64_t nbias, ScalarType dt, Opts o = {}) {
  SCOPED_TRACE(name + " " + std::string(dtype_name(dt)) + (o.cl_input ? " channels_last" : "") +
               (o.cl_weight ? " weight_channels_last" : ""));
  const Tensor x0 = randn(xs).to(dt), w0 = randn(ws).to(dt);
  const Tensor b0 = o.bias ? randn({nbias}).to(dt) : Tensor();
  // reference: float64 on the CPU (detached: for float64, to() returns x0 itself)
  const Tensor xr = x0.to(kDouble).detach().requires_grad_(), wr = w0.to(kDouble).detach().requires_grad_();
  const Tensor br = o.bias ? b0.to(kDouble).detach().requires_grad_() : Tensor();
  const Tensor yr = f(xr, wr, br);
  const Tensor go = randn(yr.sizes()).to(dt);
  yr.backward(go.to(kDouble));
  // CUDA
  Tensor xc = x0.to(gpu()), wc = w0.to(gpu());
  if (o.cl_input && xc.dim() == 4) xc = xc.contiguous(kChannelsLast);
  if (o.cl_weight) wc = wc.contiguous(kChannelsLast);
  xc.requires_grad_();
  wc.requires_grad_();
  const Tensor bc = o.bias ? b0.to(gpu()).requires_grad_() : Tensor();
  const Tensor yc = f(xc, wc, bc);
  ASSERT_EQ(yc.sizes(), yr.sizes());
  EXPECT_TRUE(near(yc, yr, dt, "output"));
  const bool cl = (o.cl_input || o.cl_weight) && yc.dim() == 4;
  if (o.check_layout && yc.dim() == 4) {
    // as on the CPU: channels_last when the input or the weight is
    if (cl)
      EXPECT_TRUE(yc.is_contiguous(kChannelsLast)) << "output strides " << yc.strides();
    else
      EXPECT_TRUE(yc.is_contiguous()) << "output strides " << yc.strides();
  }
  Tensor goc = go.to(gpu());
  if (cl) goc = goc.contiguous(kChannelsLast);
  yc.backward(goc);
  EXPECT_TRUE(near(xc.grad(), xr.grad(), dt, "grad input"));
  EXPECT_TRUE(near(wc.grad(), wr.grad(), dt, "grad weight"));
  if (o.bias) EXPECT_TRUE(near(bc.grad(), br.grad(), dt, "grad bias"));
  if (o.check_layout && cl && o.cl_input)
    EXPECT_TRUE(xc.grad().is_contiguous(kChannelsLast)) << "input gradient strides " << xc.grad().strides();
  if (o.check_layout && o.cl_weight)
    EXPECT_TRUE(wc.grad().is_contiguous(kChannelsLast)) << "weight gradient strides " << wc.grad().strides();
}

struct Case2d {
  const char* name;
  std::vector<int64_t> x, w;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  const char* mode;  // "same" or nullptr
};

const std::vector<Case2d>& cases2d() {
  static const std::vector<Case2d> c = {
      {"3x3_pad1", {2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, nullptr},
      {"stride2_rect", {2, 4, 9, 8}, {6, 4, 3, 2}, {2, 1}, {1, 0}, {1, 1}, 1, nullptr},
      {"dilation2", {2, 3, 9, 9}, {4, 3, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1, nullptr},
      {"dilation_stride_mixed", {2, 3, 11, 10}, {5, 3, 3, 2}, {2, 3}, {1, 2}, {2, 1}, 1, nullptr},
      {"groups2", {2, 4, 6, 6}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2, nullptr},
      {"depthwise_stride2", {2, 8, 7, 7}, {8, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 8, nullptr},
      {"depthwise_multiplier", {2, 4, 6, 6}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, nullptr},
      {"1x1", {3, 16, 5, 5}, {8, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, nullptr},
      {"1x1_stride2", {2, 8, 6, 6}, {16, 8, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, nullptr},
      {"same_odd", {2, 3, 6, 7}, {4, 3, 3, 5}, {1, 1}, {0, 0}, {1, 1}, 1, "same"},
      {"same_even_dilated", {2, 3, 6, 7}, {4, 3, 4, 2}, {1, 1}, {0, 0}, {1, 2}, 1, "same"},
      {"tensor_core_sized", {4, 32, 12, 12}, {64, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, nullptr},
      {"pad_beyond_kernel", {1, 2, 4, 4}, {3, 2, 2, 2}, {1, 1}, {3, 3}, {1, 1}, 1, nullptr},
      {"stride_remainder", {2, 3, 8, 8}, {4, 3, 3, 3}, {3, 3}, {0, 0}, {1, 1}, 1, nullptr},
      {"unbatched", {3, 6, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, nullptr},
  };
  return c;
}

ConvFn conv2d_of(const Case2d& c) {
  return [c](const Tensor& x, const Tensor& w, const Tensor& b) {
    const nn::ExpandingInts<2> s{c.stride[0], c.stride[1]}, d{c.dilation[0], c.dilation[1]};
    if (c.mode) return F::conv2d(x, w, b, s, c.mode, d, c.groups);
    return F::conv2d(x, w, b, s, {c.padding[0], c.padding[1]}, d, c.groups);
  };
}

struct CaseT {
  const char* name;
  std::vector<int64_t> x, w;
  int64_t sh, sw, ph, pw, oph, opw, dh, dw, groups;
};

const std::vector<CaseT>& cases_t() {
  static const std::vector<CaseT> c = {
      {"plain", {2, 3, 4, 5}, {3, 4, 3, 3}, 1, 1, 0, 0, 0, 0, 1, 1, 1},
      {"stride2_pad1", {2, 4, 4, 4}, {4, 2, 4, 4}, 2, 2, 1, 1, 0, 0, 1, 1, 1},
      {"stride2_output_padding", {2, 3, 4, 3}, {3, 2, 3, 3}, 2, 2, 1, 1, 1, 1, 1, 1, 1},
      {"stride_hw_output_padding", {1, 2, 3, 4}, {2, 3, 3, 2}, 3, 2, 0, 1, 2, 1, 1, 1, 1},
      {"dilation", {2, 3, 4, 4}, {3, 2, 3, 3}, 1, 1, 1, 1, 0, 0, 2, 2, 1},
      {"output_padding_below_dilation", {1, 2, 4, 4}, {2, 3, 3, 3}, 1, 1, 0, 0, 2, 1, 3, 2, 1},
      {"groups", {2, 4, 3, 3}, {4, 3, 3, 3}, 2, 2, 1, 1, 1, 0, 1, 1, 2},
      {"depthwise", {2, 4, 5, 5}, {4, 1, 3, 3}, 1, 1, 1, 1, 0, 0, 1, 1, 4},
      {"wide", {2, 16, 5, 5}, {16, 32, 4, 4}, 2, 2, 1, 1, 0, 0, 1, 1, 1},
      {"unbatched", {3, 4, 5}, {3, 2, 3, 3}, 2, 1, 1, 0, 1, 0, 1, 1, 1},
  };
  return c;
}

ConvFn conv_t_of(const CaseT& c) {
  return [c](const Tensor& x, const Tensor& w, const Tensor& b) {
    return F::conv_transpose2d(x, w, b, {c.sh, c.sw}, {c.ph, c.pw}, {c.oph, c.opw}, c.groups, {c.dh, c.dw});
  };
}

}  // namespace

TEST(CudaConv, Conv2dEveryDtypeAndLayout) {
  REQUIRE_CUDA();
  manual_seed(1);
  for (ScalarType dt : kTypes)
    for (bool cl : {false, true})
      for (const Case2d& c : cases2d()) {
        Opts o;
        o.cl_input = cl;
        check(c.name, conv2d_of(c), c.x, c.w, c.w[0], dt, o);
      }
  print_stats("the conv2d table");
}

TEST(CudaConv, Conv2dWeightLayoutsAndNoBias) {
  REQUIRE_CUDA();
  manual_seed(2);
  const Case2d c = cases2d()[0];
  for (ScalarType dt : {kFloat, kHalf})
    for (bool cl_input : {false, true})
      for (bool bias : {false, true}) {
        Opts o;
        o.cl_input = cl_input;
        o.cl_weight = true;
        o.bias = bias;
        check("weight_channels_last", conv2d_of(c), c.x, c.w, c.w[0], dt, o);
      }
}

TEST(CudaConv, Conv1dEveryDtype) {
  REQUIRE_CUDA();
  manual_seed(3);
  struct C1 {
    const char* name;
    std::vector<int64_t> x, w;
    int64_t s, p, d, g;
    const char* mode;
  };
  for (ScalarType dt : kTypes)
    for (const C1& c : {C1{"plain", {2, 4, 20}, {6, 4, 5}, 2, 2, 1, 1, nullptr},
                        C1{"dilated_groups", {2, 4, 17}, {6, 2, 3}, 1, 3, 3, 2, nullptr},
                        C1{"depthwise", {3, 6, 12}, {6, 1, 3}, 1, 1, 1, 6, nullptr},
                        C1{"same_even", {2, 3, 10}, {4, 3, 4}, 1, 0, 1, 1, "same"},
                        C1{"unbatched", {4, 11}, {3, 4, 3}, 1, 0, 1, 1, nullptr}}) {
      const ConvFn f = [c](const Tensor& x, const Tensor& w, const Tensor& b) {
        if (c.mode) return F::conv1d(x, w, b, c.s, c.mode, c.d, c.g);
        return F::conv1d(x, w, b, c.s, c.p, c.d, c.g);
      };
      check(std::string("conv1d ") + c.name, f, c.x, c.w, c.w[0], dt);
    }
}

TEST(CudaConv, ConvTranspose2dEveryDtypeAndLayout) {
  REQUIRE_CUDA();
  manual_seed(4);
  for (ScalarType dt : kTypes)
    for (bool cl : {false, true})
      for (const CaseT& c : cases_t()) {
        Opts o;
        o.cl_input = cl;
        check(std::string("conv_transpose2d ") + c.name, conv_t_of(c), c.x, c.w, c.w[1] * c.groups, dt, o);
      }
  print_stats("the conv_transpose2d table");
}

TEST(CudaConv, PaddingCudnnCannotExpressIsCopied) {
  REQUIRE_CUDA();
  manual_seed(5);
  auto& st = cu::cudnn_conv_stats();
  // symmetric: no copy
  uint64_t before = st.padded_copies.load();
  check("symmetric", conv2d_of(cases2d()[0]), cases2d()[0].x, cases2d()[0].w, 4, kFloat);
  EXPECT_EQ(st.padded_copies.load(), before);
  // "same" with an even kernel: forward and weight gradient copy the input
  before = st.padded_copies.load();
  check("same_even", conv2d_of(cases2d()[10]), cases2d()[10].x, cases2d()[10].w, 4, kFloat);
  EXPECT_EQ(st.padded_copies.load(), before + 2);
  // transposed with output_padding >= stride: the dual's unread rows are cut
  before = st.padded_copies.load();
  const CaseT& t = cases_t()[5];
  check("transposed_cut", conv_t_of(t), t.x, t.w, t.w[1], kFloat);
  EXPECT_EQ(st.padded_copies.load(), before + 2);  // gradient of the input, gradient of the weight
}

TEST(CudaConv, Float32IsExactUnlessTf32IsAllowed) {
  REQUIRE_CUDA();
  manual_seed(6);
  // K = 256 * 9 products per output: TF32 inputs (10-bit mantissa) would err
  // by about 1e-3 of the magnitude, exact float32 by about 1e-6
  const Tensor x = randn({2, 256, 10, 10}), w = randn({64, 256, 3, 3});
  const Tensor want = F::conv2d(x.to(kDouble), w.to(kDouble), {}, 1, 1);
  ASSERT_FALSE(cuda::allow_tf32());
  const Tensor got = F::conv2d(x.to(gpu()), w.to(gpu()), {}, 1, 1);
  const double scale = want.abs().max().item<double>();
  EXPECT_TRUE(close(got.cpu(), want, 0.0, 5e-5 * scale)) << "float32 convolution is not exact (TF32?)";
  // the weight gradient (sum over 200 positions) too
  const Tensor xg = x.to(gpu()).requires_grad_(), wg = w.to(gpu()).requires_grad_();
  F::conv2d(xg, wg, {}, 1, 1).sum().backward();
  const Tensor xd = x.to(kDouble).requires_grad_(), wd = w.to(kDouble).requires_grad_();
  F::conv2d(xd, wd, {}, 1, 1).sum().backward();
  EXPECT_TRUE(close(wg.grad().cpu(), wd.grad(), 0.0, 2e-5 * wd.grad().abs().max().item<double>()));
  EXPECT_TRUE(close(xg.grad().cpu(), xd.grad(), 0.0, 2e-5 * xd.grad().abs().max().item<double>()));
  // TF32 allowed: still a float32 result within TF32's precision
  cuda::set_allow_tf32(true);
  const Tensor loose = F::conv2d(x.to(gpu()), w.to(gpu()), {}, 1, 1);
  cuda::set_allow_tf32(false);
  EXPECT_EQ(loose.dtype(), kFloat);
  EXPECT_TRUE(close(loose.cpu(), want, 0.0, 1e-2 * scale));
}

TEST(CudaConv, BenchmarkModeSearchesOncePerShapeAndAgrees) {
  REQUIRE_CUDA();
  manual_seed(7);
  auto& st = cu::cudnn_conv_stats();
  cu::cudnn_conv_clear_cache();
  // float64 runs NCHW even for channels_last tensors: its channels_last case
  // reuses the NCHW plans (checked below)
  for (auto [dt, cl] : {std::pair{kFloat, false}, std::pair{kFloat, true}, std::pair{kHalf, false},
                        std::pair{kHalf, true}, std::pair{kDouble, false}}) {
    {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (cl ? " channels_last" : ""));
      Tensor x = randn({4, 16, 14, 14}).to(dt).to(gpu()), w = randn({32, 16, 3, 3}).to(dt).to(gpu());
      const Tensor b = randn({32}).to(dt).to(gpu());
      Tensor go = randn({4, 32, 14, 14}).to(dt).to(gpu());
      if (cl) x = x.contiguous(kChannelsLast), go = go.contiguous(kChannelsLast);
      auto run = [&](bool bench) {
        cuda::set_cudnn_benchmark(bench);
        const Tensor xx = x.detach().requires_grad_(), ww = w.detach().requires_grad_(),
                     bb = b.detach().requires_grad_();
        const Tensor y = F::conv2d(xx, ww, bb, 1, 1);
        y.backward(go);
        cuda::set_cudnn_benchmark(false);
        return std::vector<Tensor>{y.detach(), xx.grad(), ww.grad(), bb.grad()};
      };
      const uint64_t finds0 = st.benchmark_finds.load(), heur0 = st.heuristic_choices.load(),
                     plans0 = st.plans_created.load();
      const auto off = run(false);
      EXPECT_EQ(st.heuristic_choices.load(), heur0 + 3);  // forward, backward data, backward filter
      EXPECT_EQ(st.benchmark_finds.load(), finds0);
      const auto on = run(true);
      EXPECT_EQ(st.benchmark_finds.load(), finds0 + 3);
      const auto again = run(true);  // cached: no second search
      EXPECT_EQ(st.benchmark_finds.load(), finds0 + 3);
      EXPECT_EQ(st.plans_created.load(), plans0 + 2);  // one descriptor set per mode
      // the reference, and both modes against it
      const Tensor xr = x.cpu().to(kDouble).requires_grad_(), wr = w.cpu().to(kDouble).requires_grad_(),
                   br = b.cpu().to(kDouble).requires_grad_();
      const Tensor yr = F::conv2d(xr, wr, br, 1, 1);
      yr.backward(go.cpu().to(kDouble));
      for (const auto* r : {&off, &on, &again}) {
        EXPECT_TRUE(near((*r)[0], yr, dt, "output"));
        EXPECT_TRUE(near((*r)[1], xr.grad(), dt, "grad input"));
        EXPECT_TRUE(near((*r)[2], wr.grad(), dt, "grad weight"));
        EXPECT_TRUE(near((*r)[3], br.grad(), dt, "grad bias"));
      }
      // the modes agree with each other as closely as with the reference
      for (int i = 0; i < 4; ++i) EXPECT_TRUE(near(on[size_t(i)], off[size_t(i)].cpu().to(kDouble), dt, "on vs off"));
    }
  }
  // float64 channels_last: the NCHW plans of the same shape, the output still channels_last
  const uint64_t plans0 = st.plans_created.load(), finds0 = st.benchmark_finds.load();
  const Tensor x = randn({4, 16, 14, 14}, kDouble), w = randn({32, 16, 3, 3}, kDouble), b = randn({32}, kDouble);
  cuda::set_cudnn_benchmark(true);
  const Tensor y = F::conv2d(x.to(gpu()).contiguous(kChannelsLast), w.to(gpu()), b.to(gpu()), 1, 1);
  cuda::set_cudnn_benchmark(false);
  EXPECT_TRUE(y.is_contiguous(kChannelsLast));
  EXPECT_TRUE(near(y, F::conv2d(x, w, b, 1, 1), kDouble, "float64 channels_last"));
  EXPECT_EQ(st.plans_created.load(), plans0);
  EXPECT_EQ(st.benchmark_finds.load(), finds0);
}

TEST(CudaConv, BatchIsSplitAboveTheElementLimit) {
  REQUIRE_CUDA();
  manual_seed(8);
  auto& st = cu::cudnn_conv_stats();
  // per sample: input 3*8*8 = 192, output 4*8*8 = 256 elements; limit 600: 2 samples per call
  cu::cudnn_conv_set_element_limit(600);
  const uint64_t calls0 = st.calls.load();
  for (bool cl : {false, true}) {
    Opts o;
    o.cl_input = cl;
    check("split", conv2d_of(cases2d()[0]), {5, 3, 8, 8}, {4, 3, 3, 3}, 4, kFloat, o);
  }
  // 3 calls (2 + 2 + 1 samples) per pass, 3 passes, 2 layouts
  EXPECT_EQ(st.calls.load(), calls0 + 18);
  // a limit below one sample is an error naming the op
  cu::cudnn_conv_set_element_limit(100);
  expect_error([] { (void)F::conv2d(randn({2, 3, 8, 8}).to(gpu()), randn({4, 3, 3, 3}).to(gpu()), {}, 1, 1); },
               {"[conv2d]", "one sample has 256 elements", "limit of 100"});
  cu::cudnn_conv_set_element_limit(0);
}

TEST(CudaConv, StreamsAndThreads) {
  REQUIRE_CUDA();
  manual_seed(9);
  const Tensor x = randn({3, 8, 9, 9}), w = randn({8, 8, 3, 3});
  const Tensor want = F::conv2d(x.to(kDouble), w.to(kDouble), {}, 1, 1);
  {
    const cuda::Stream s = cuda::Stream::create();
    cuda::StreamGuard g(s);
    const Tensor y = F::conv2d(x.to(gpu()), w.to(gpu()), {}, 1, 1);
    s.synchronize();
    EXPECT_TRUE(near(y, want, kFloat, "on a created stream"));
  }
  // back on the default stream: the handle is rebound
  EXPECT_TRUE(near(F::conv2d(x.to(gpu()), w.to(gpu()), {}, 1, 1), want, kFloat, "default stream again"));
  std::vector<Tensor> results(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        const cuda::Stream s = cuda::stream_from_pool();
        cuda::StreamGuard g(s);
        Tensor y;
        for (int i = 0; i < 5; ++i) y = F::conv2d(x.to(gpu()), w.to(gpu()), {}, 1, 1);
        s.synchronize();
        results[size_t(t)] = y.cpu();
      } catch (const std::exception& e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(errors[size_t(t)], "");
    if (results[size_t(t)].defined()) EXPECT_TRUE(close(results[size_t(t)], want, 0.0, 1e-4 * 20));
  }
}

TEST(CudaConv, EmptyBatchAndNonContiguousInputs) {
  REQUIRE_CUDA();
  manual_seed(10);
  // N = 0: an empty output, zero gradients of weight and bias
  const Tensor x = empty({0, 3, 5, 5}, TensorOptions(kFloat).device(gpu())).requires_grad_();
  const Tensor w = randn({4, 3, 3, 3}).to(gpu()).requires_grad_(), b = randn({4}).to(gpu()).requires_grad_();
  const Tensor y = F::conv2d(x, w, b);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{0, 4, 3, 3}));
  EXPECT_TRUE(y.is_cuda());
  y.sum().backward();
  EXPECT_TRUE(close(w.grad().cpu(), zeros({4, 3, 3, 3}), 0, 0));
  EXPECT_TRUE(close(b.grad().cpu(), zeros({4}), 0, 0));
  // a sliced and transposed view in; the result matches the contiguous copy's
  const Tensor base = randn({2, 6, 8, 9});
  const Tensor view = base.to(gpu()).narrow(1, 1, 3).transpose(2, 3);  // (2, 3, 9, 8), neither layout
  const Tensor wc = randn({5, 3, 3, 3});
  const Tensor want = F::conv2d(base.narrow(1, 1, 3).transpose(2, 3).to(kDouble), wc.to(kDouble), {}, 2, 1);
  EXPECT_TRUE(near(F::conv2d(view, wc.to(gpu()), {}, 2, 1), want, kFloat, "strided view"));
}

TEST(CudaConv, Errors) {
  REQUIRE_CUDA();
  const Tensor x = randn({1, 3, 5, 5}).to(gpu());
  expect_error([&] { (void)F::conv2d(x, randn({4, 3, 3, 3})); },
               {"[conv2d]", "input and weight must be on the same device", "cuda:0", "cpu"});
  expect_error([&] { (void)F::conv2d(x, randn({4, 3, 3, 3}).to(gpu()), randn({4})); },
               {"[conv2d]", "input and bias must be on the same device"});
  expect_error([&] { (void)F::conv1d(randn({1, 3, 5}).to(gpu()), randn({4, 2, 3}).to(gpu())); }, {"[conv1d]"});
  expect_error([&] { (void)F::conv2d(x.to(kInt), randn({4, 3, 3, 3}).to(kInt).to(gpu())); },
               {"[conv2d]", "floating point"});
}

TEST(CudaConv, Conv2dModuleOnCuda) {
  REQUIRE_CUDA();
  manual_seed(11);
  nn::Conv2d cpu_m(nn::Conv2dOptions(3, 8, 3).padding(1).stride(2));
  manual_seed(11);
  nn::Conv2d gpu_m(nn::Conv2dOptions(3, 8, 3).padding(1).stride(2));
  gpu_m->to(gpu());
  ASSERT_TRUE(gpu_m->weight.is_cuda());
  ASSERT_TRUE(close(gpu_m->weight.cpu(), cpu_m->weight, 0, 0));
  const Tensor x = randn({4, 3, 16, 16});
  const Tensor yc = cpu_m->forward(x), yg = gpu_m->forward(x.to(gpu()));
  EXPECT_TRUE(yg.is_cuda());
  EXPECT_TRUE(close(yg.cpu(), yc, 1e-4, 1e-4));
  yc.square().mean().backward();
  yg.square().mean().backward();
  EXPECT_TRUE(close(gpu_m->weight.grad().cpu(), cpu_m->weight.grad(), 1e-4, 1e-5));
  EXPECT_TRUE(close(gpu_m->bias.grad().cpu(), cpu_m->bias.grad(), 1e-4, 1e-5));
  // channels_last input through the module
  const Tensor ycl = gpu_m->forward(x.to(gpu()).contiguous(kChannelsLast));
  EXPECT_TRUE(ycl.is_contiguous(kChannelsLast));
  EXPECT_TRUE(close(ycl.cpu(), yc, 1e-4, 1e-4));
}
