// Pooling (max, avg, adaptive avg; 1-D and 2-D): values, indices and
// gradients against naive loops written here for every option combination,
// both memory layouts, unbatched inputs, reduced dtypes, gradcheck in
// float64 (first and second order), modules and error messages.
#include <brisk/nn.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "autograd/grad_util.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- naive references (float64, NCHW, PyTorch's documented semantics) ----------------

struct Cfg {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil;
};

/// floor((in + 2p - d(k-1) - 1) / s) + 1 (ceil in ceil_mode, where the last
/// window must start inside the input or the left padding).
int64_t ref_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double v = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t out = int64_t(ceil_mode ? std::ceil(v) : std::floor(v)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

struct MaxRef {
  std::vector<int64_t> shape;  // (N, C, OH, OW)
  std::vector<double> out;
  std::vector<int64_t> idx;
  double at(int64_t i) const { return out[size_t(i)]; }
};

std::vector<double> values(const Tensor& x) { return x.to(kDouble).contiguous().to_vector<double>(); }

/// x: (N, C, H, W). Windows scanned in row-major order; a value wins when it
/// is greater than the current max or NaN; an all -inf window reports its
/// first in-bounds tap.
MaxRef ref_max_pool(const Tensor& x, const Cfg& c) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t OH = ref_out(H, c.kh, c.sh, c.ph, c.dh, c.ceil), OW = ref_out(W, c.kw, c.sw, c.pw, c.dw, c.ceil);
  const std::vector<double> v = values(x);
  MaxRef r;
  r.shape = {N, C, OH, OW};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double m = -kInf;
          int64_t idx = -1;
          for (int64_t i = 0; i < c.kh; ++i)
            for (int64_t j = 0; j < c.kw; ++j) {
              const int64_t ih = oh * c.sh - c.ph + i * c.dh, iw = ow * c.sw - c.pw + j * c.dw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              const double val = v[size_t(((n * C + ch) * H + ih) * W + iw)];
              if (idx < 0) idx = ih * W + iw;
              if (val > m || std::isnan(val)) {
                m = val;
                idx = ih * W + iw;
              }
            }
          r.out.push_back(m);
          r.idx.push_back(idx);
        }
  return r;
}

/// Scatter of gy (N, C, OH, OW) to the reference's argmax positions.
std::vector<double> ref_max_grad(const Tensor& x, const MaxRef& r, const std::vector<double>& gy) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t out_plane = r.shape[2] * r.shape[3];
  std::vector<double> gx(size_t(N * C * H * W), 0.0);
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t o = 0; o < out_plane; ++o) {
      const int64_t i = r.idx[size_t(p * out_plane + o)];
      if (i >= 0) gx[size_t(p * H * W + i)] += gy[size_t(p * out_plane + o)];
    }
  return gx;
}

struct AvgCfg {
  int64_t kh, kw, sh, sw, ph, pw;
  bool ceil, count_pad;
  std::optional<int64_t> divisor;
};

/// Window [o*s - p, o*s - p + k) clipped to the padded input for the divisor
/// (count_include_pad) and to the input for the sum.
struct Win {
  int64_t lo, hi, ext;
};
Win avg_win(int64_t o, int64_t in, int64_t k, int64_t s, int64_t p, bool count_pad) {
  const int64_t start = o * s - p, end = std::min(start + k, in + p);
  const int64_t lo = std::max<int64_t>(start, 0), hi = std::min(end, in);
  return {lo, hi, count_pad ? end - start : hi - lo};
}
Win adaptive_win(int64_t o, int64_t in, int64_t out) {
  const int64_t lo = int64_t(std::floor(double(o * in) / double(out)));
  const int64_t hi = int64_t(std::ceil(double((o + 1) * in) / double(out)));
  return {lo, hi, hi - lo};
}

/// Generic window average: windows per output given by wh(oh), ww(ow);
/// optionally the gradient of sum(out * gy).
template <class WH, class WW>
std::vector<double> ref_window_avg(const Tensor& x, int64_t OH, int64_t OW, WH wh, WW ww,
                                   std::optional<int64_t> divisor, const std::vector<double>* gy = nullptr) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const std::vector<double> v = values(x);
  std::vector<double> out, gx(size_t(N * C * H * W), 0.0);
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const Win a = wh(oh), b = ww(ow);
        const double div = divisor ? double(*divisor) : double(a.ext * b.ext);
        double sum = 0;
        for (int64_t ih = a.lo; ih < a.hi; ++ih)
          for (int64_t iw = b.lo; iw < b.hi; ++iw) {
            sum += v[size_t(p * H * W + ih * W + iw)];
            if (gy) gx[size_t(p * H * W + ih * W + iw)] += (*gy)[size_t((p * OH + oh) * OW + ow)] / div;
          }
        out.push_back(sum / div);
      }
  return gy ? gx : out;
}

std::vector<double> ref_avg_pool(const Tensor& x, const AvgCfg& c, const std::vector<double>* gy = nullptr) {
  const int64_t H = x.size(2), W = x.size(3);
  const int64_t OH = ref_out(H, c.kh, c.sh, c.ph, 1, c.ceil), OW = ref_out(W, c.kw, c.sw, c.pw, 1, c.ceil);
  return ref_window_avg(
      x, OH, OW, [&](int64_t o) { return avg_win(o, H, c.kh, c.sh, c.ph, c.count_pad); },
      [&](int64_t o) { return avg_win(o, W, c.kw, c.sw, c.pw, c.count_pad); }, c.divisor, gy);
}

std::vector<double> ref_adaptive(const Tensor& x, int64_t OH, int64_t OW, const std::vector<double>* gy = nullptr) {
  const int64_t H = x.size(2), W = x.size(3);
  return ref_window_avg(
      x, OH, OW, [&](int64_t o) { return adaptive_win(o, H, OH); }, [&](int64_t o) { return adaptive_win(o, W, OW); },
      std::nullopt, gy);
}

::testing::AssertionResult same_values(const Tensor& got, const std::vector<double>& want, double rtol = 0,
                                       double atol = 0) {
  const std::vector<double> g = values(got);
  if (g.size() != want.size())
    return ::testing::AssertionFailure() << "got " << g.size() << " values, expected " << want.size();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(want[i])) continue;
    if (g[i] == want[i]) continue;
    if (!(std::abs(g[i] - want[i]) <= atol + rtol * std::abs(want[i])))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", expected " << want[i];
  }
  return ::testing::AssertionSuccess();
}

F::MaxPool2dFuncOptions max_opts(const Cfg& c) {
  return F::MaxPool2dFuncOptions({c.kh, c.kw}).stride({c.sh, c.sw}).padding({c.ph, c.pw}).dilation({c.dh, c.dw}).ceil_mode(
      c.ceil);
}
F::AvgPool2dFuncOptions avg_opts(const AvgCfg& c) {
  return F::AvgPool2dFuncOptions({c.kh, c.kw})
      .stride({c.sh, c.sw})
      .padding({c.ph, c.pw})
      .ceil_mode(c.ceil)
      .count_include_pad(c.count_pad)
      .divisor_override(c.divisor);
}

std::string describe(const Cfg& c) {
  std::ostringstream os;
  os << "k=(" << c.kh << "," << c.kw << ") s=(" << c.sh << "," << c.sw << ") p=(" << c.ph << "," << c.pw << ") d=("
     << c.dh << "," << c.dw << ") ceil=" << c.ceil;
  return os.str();
}

bool is_cl(const Tensor& t) { return t.is_contiguous(kChannelsLast) && !t.is_contiguous(); }

}  // namespace

// ---- max_pool2d ---------------------------------------------------------------------------

// Every combination of kernel, stride, padding, dilation and ceil_mode on
// odd and even sizes: values and indices equal the naive loop exactly, the
// gradient equals the scatter to the naive argmax, in both layouts. Invalid
// combinations throw.
TEST(MaxPool2d, AllOptionsAgainstNaiveLoop) {
  manual_seed(1);
  const std::vector<std::pair<int64_t, int64_t>> kernels = {{1, 1}, {2, 2}, {3, 3}, {2, 3}, {4, 1}};
  int checked = 0, refused = 0;
  for (auto [H, W] : {std::pair<int64_t, int64_t>{5, 5}, {6, 8}, {7, 4}})
    for (auto [kh, kw] : kernels)
      for (int64_t s : {1, 2, 3})
        for (int64_t p = 0; p <= std::max(kh, kw) / 2; ++p)
          for (int64_t d : {1, 2})
            for (bool ceil_mode : {false, true}) {
              const Cfg c{kh, kw, s, s == 3 ? 2 : s, std::min(p, kh / 2), std::min(p, kw / 2), d, kw > 1 ? d : 1, ceil_mode};
              SCOPED_TRACE(describe(c) + " input " + std::to_string(H) + "x" + std::to_string(W));
              const Tensor x = randn({2, 3, H, W});
              const int64_t OH = ref_out(H, c.kh, c.sh, c.ph, c.dh, c.ceil), OW = ref_out(W, c.kw, c.sw, c.pw, c.dw, c.ceil);
              if (OH <= 0 || OW <= 0) {
                expect_error([&] { F::max_pool2d(x, max_opts(c)); }, {"[max_pool2d]", "too small"});
                ++refused;
                continue;
              }
              const MaxRef r = ref_max_pool(x, c);
              for (bool cl : {false, true}) {
                const Tensor xi = (cl ? x.contiguous(kChannelsLast) : x).detach().requires_grad_();
                auto [y, idx] = F::max_pool2d_with_indices(xi, max_opts(c));
                ASSERT_EQ(y.sizes(), IntArrayRef(r.shape));
                EXPECT_TRUE(same_values(y, r.out)) << "layout cl=" << cl;
                EXPECT_EQ(idx.dtype(), kInt64);
                EXPECT_EQ(idx.contiguous().to_vector<int64_t>(), r.idx) << "layout cl=" << cl;
                const Tensor gy = randn(y.sizes());
                y.backward(gy);
                EXPECT_TRUE(same_values(xi.grad(), ref_max_grad(x, r, values(gy)), 1e-6, 1e-6)) << "layout cl=" << cl;
                if (cl && y.size(2) * y.size(3) > 1) {
                  EXPECT_TRUE(is_cl(y)) << "channels_last input gives a channels_last output";
                  EXPECT_TRUE(is_cl(xi.grad())) << "and gradient";
                }
                // max_pool2d (no indices asked) gives the same values and gradient
                const Tensor xj = xi.detach().requires_grad_();
                const Tensor y2 = F::max_pool2d(xj, max_opts(c));
                EXPECT_TRUE(y2.equal(y));
                y2.backward(gy);
                EXPECT_TRUE(xj.grad().equal(xi.grad()));
              }
              ++checked;
            }
  EXPECT_GT(checked, 300);
  EXPECT_GT(refused, 0);
}

// The 2x2 / stride 2 kernels stage chunks of output rows (planes larger
// than a chunk, rows longer than a chunk, odd row lengths).
TEST(MaxPool2d, TwoByTwoPlanesOfManySizes) {
  manual_seed(13);
  const Cfg c{2, 2, 2, 2, 0, 0, 1, 1, false};
  for (auto [H, W] : {std::pair<int64_t, int64_t>{2, 2}, {14, 14}, {28, 28}, {6, 30}, {70, 80}, {4, 2100}}) {
    SCOPED_TRACE(std::to_string(H) + "x" + std::to_string(W));
    const Tensor x = randn({2, 3, H, W});
    const MaxRef r = ref_max_pool(x, c);
    for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
      const Tensor xd = x.to(dt).detach().requires_grad_();
      const MaxRef rd = dt == kBFloat16 ? ref_max_pool(xd, c) : r;
      auto [y, idx] = F::max_pool2d_with_indices(xd, 2);
      EXPECT_TRUE(same_values(y, rd.out));
      EXPECT_EQ(idx.to_vector<int64_t>(), rd.idx);
      const Tensor gy = randn(y.sizes()).to(dt);
      y.backward(gy);
      EXPECT_TRUE(same_values(xd.grad(), ref_max_grad(xd, rd, values(gy))));
    }
  }
}

TEST(MaxPool2d, DefaultStrideIsKernelAndPositionalForm) {
  manual_seed(2);
  const Tensor x = randn({2, 4, 9, 10});
  const Tensor a = F::max_pool2d(x, 3);
  EXPECT_EQ(a.sizes(), IntArrayRef({2, 4, 3, 3}));
  EXPECT_TRUE(same_values(a, ref_max_pool(x, {3, 3, 3, 3, 0, 0, 1, 1, false}).out));
  const Tensor b = F::max_pool2d(x, {3, 2}, std::nullopt, {1, 0}, 1, true);
  EXPECT_TRUE(same_values(b, ref_max_pool(x, {3, 2, 3, 2, 1, 0, 1, 1, true}).out));
  const Tensor c = F::max_pool2d(x, 2, 1);
  EXPECT_TRUE(same_values(c, ref_max_pool(x, {2, 2, 1, 1, 0, 0, 1, 1, false}).out));
}

// NaN propagates (the last NaN of a window wins), ties go to the first tap,
// an all -inf window reports its first tap: in the 2x2 fast path, the
// general path and channels_last.
TEST(MaxPool2d, NanInfAndTies) {
  const double nan = std::nan("");
  // one 4x4 plane, 2x2 windows: [nan, 1; 2, nan] [1, 1; 1, 1] [-inf x4] [0, 5; 5, 0]
  const std::vector<double> v = {nan, 1, 1, 1, 2, nan, 1, 1, -kInf, -kInf, 0, 5, -kInf, -kInf, 5, 0};
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    Tensor x = tensor(v, kDouble).view({1, 1, 4, 4}).to(dt);
    x = cat({x, x * 2}, 1);  // two channels: the channels_last loop sees C = 2
    for (bool cl : {false, true}) {
      const Tensor xi = cl ? x.contiguous(kChannelsLast) : x;
      for (const Cfg& c : {Cfg{2, 2, 2, 2, 0, 0, 1, 1, false}, Cfg{2, 2, 2, 2, 1, 1, 1, 1, true},
                           Cfg{3, 3, 1, 1, 1, 1, 1, 1, false}}) {
        SCOPED_TRACE(describe(c) + " cl=" + std::to_string(cl) + " " + std::string(dtype_name(dt)));
        const MaxRef r = ref_max_pool(x, c);
        auto [y, idx] = F::max_pool2d_with_indices(xi, max_opts(c));
        EXPECT_TRUE(same_values(y, r.out));
        EXPECT_EQ(idx.contiguous().to_vector<int64_t>(), r.idx);
      }
    }
  }
  // The values of the fast path in detail: NaN window -> last NaN (index 5).
  auto [y, idx] = F::max_pool2d_with_indices(tensor(v, kFloat).view({1, 1, 4, 4}), 2);
  EXPECT_EQ(idx.to_vector<int64_t>(), (std::vector<int64_t>{5, 2, 8, 11}));
  EXPECT_TRUE(std::isnan(y.to_vector<float>()[0]));
}

// A window with no in-bounds tap (dilation steps over the whole input):
// -inf, index -1, no gradient. PyTorch (1.13 and 2.15) reports -inf too but
// an index left over from its loop bounds (difffuzz
// nn:F.max_pool2d_with_indices:value; [2, 2, 4] here, and [6, 6, 8] for the
// transposed 1x5 plane, outside the plane's 5 positions), and its backward
// adds the gradient of the -inf output to that position. No input moves a
// -inf that no input enters, so brisk keeps -1 and a zero gradient.
TEST(MaxPool2d, WindowWithoutTapsHasNoIndexAndNoGradient) {
  const std::vector<double> v = {-0.0092, 3.578, 2.281, 2.203, -1.039, -1.430, -1.055, -0.594, 0.707, -2.656};
  for (ScalarType dt : {kFloat, kBFloat16}) {
    const Tensor x = tensor(v, kDouble).view({2, 1, 5, 1}).to(dt).requires_grad_();
    auto [y, idx] = F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(2).padding(1).dilation(2));
    EXPECT_EQ(y.sizes(), IntArrayRef({2, 1, 3, 1}));
    EXPECT_TRUE(y.eq(-kInf).all().item<bool>());
    EXPECT_EQ(idx.to_vector<int64_t>(), std::vector<int64_t>(6, -1));
    y.sum().backward();
    EXPECT_TRUE(x.grad().eq(0).all().item<bool>());
  }
}

TEST(MaxPool2d, UnbatchedNonContiguousAndEmptyBatch) {
  manual_seed(3);
  const Tensor x = randn({3, 7, 6});
  const Cfg c{3, 2, 2, 2, 1, 1, 1, 1, true};
  const MaxRef r = ref_max_pool(x.unsqueeze(0), c);
  auto [y, idx] = F::max_pool2d_with_indices(x, max_opts(c));
  EXPECT_EQ(y.dim(), 3);
  EXPECT_EQ(y.sizes(), IntArrayRef({3, r.shape[2], r.shape[3]}));
  EXPECT_TRUE(same_values(y, r.out));
  EXPECT_EQ(idx.to_vector<int64_t>(), r.idx);
  // a transposed (non-contiguous, not channels_last) view
  const Tensor t = randn({2, 3, 6, 7}).transpose(2, 3);
  EXPECT_TRUE(same_values(F::max_pool2d(t, 2), ref_max_pool(t, {2, 2, 2, 2, 0, 0, 1, 1, false}).out));
  // N = 0
  EXPECT_EQ(F::max_pool2d(randn({0, 3, 4, 4}), 2).sizes(), IntArrayRef({0, 3, 2, 2}));
}

TEST(MaxPool2d, ReducedPrecisionDtypes) {
  manual_seed(4);
  for (ScalarType dt : {kFloat, kHalf, kBFloat16}) {
    const Tensor x = randn({2, 5, 8, 8}).to(dt);
    for (const Cfg& c : {Cfg{2, 2, 2, 2, 0, 0, 1, 1, false}, Cfg{3, 3, 2, 2, 1, 1, 1, 1, false}}) {
      const Tensor y = F::max_pool2d(x, max_opts(c));
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_TRUE(same_values(y, ref_max_pool(x, c).out));  // a max is exact in any dtype
      EXPECT_TRUE(same_values(F::max_pool2d(x.contiguous(kChannelsLast), max_opts(c)), ref_max_pool(x, c).out));
    }
  }
}

TEST(MaxPool2d, Gradcheck) {
  manual_seed(5);
  for (const Cfg& c : {Cfg{2, 2, 2, 2, 0, 0, 1, 1, false}, Cfg{3, 3, 1, 1, 1, 1, 1, 1, false},
                       Cfg{3, 2, 2, 1, 1, 0, 2, 1, true}}) {
    SCOPED_TRACE(describe(c));
    for (bool cl : {false, true}) {
      Tensor x = leaf({2, 3, 6, 4});  // 2x2 windows tile it: the fast path
      if (cl) x = x.detach().contiguous(kChannelsLast).requires_grad_();
      EXPECT_TRUE(gradcheck_ok([&](const TensorList& in) { return F::max_pool2d(in[0], max_opts(c)); }, {x},
                               /*grad_grad=*/true));
    }
  }
  const Tensor u = leaf({2, 5, 4});  // unbatched
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return std::get<0>(F::max_pool2d_with_indices(in[0], 2, 1)); },
                           {u}, true));
}

TEST(MaxPool2d, GraphNodeName) {
  const Tensor x = randn({1, 2, 4, 4}).requires_grad_();
  EXPECT_EQ(F::max_pool2d(x, 2).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_EQ(std::get<0>(F::max_pool2d_with_indices(x, 2)).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  NoGradGuard ng;
  EXPECT_FALSE(F::max_pool2d(x, 2).requires_grad());
}

// ---- avg_pool2d -----------------------------------------------------------------------------

TEST(AvgPool2d, AllOptionsAgainstNaiveLoop) {
  manual_seed(6);
  int checked = 0;
  for (auto [H, W] : {std::pair<int64_t, int64_t>{5, 5}, {6, 8}, {7, 3}})
    for (auto [kh, kw] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 2}, {3, 3}, {3, 2}})
      for (int64_t s : {1, 2, 3})
        for (int64_t p = 0; p <= 1; ++p)
          for (bool ceil_mode : {false, true})
            for (bool count_pad : {true, false})
              for (std::optional<int64_t> div : {std::optional<int64_t>(), std::optional<int64_t>(5)}) {
                const AvgCfg c{kh, kw, s, std::max<int64_t>(1, s - 1), std::min(p, kh / 2), std::min(p, kw / 2),
                               ceil_mode, count_pad, div};
                SCOPED_TRACE("k=(" + std::to_string(kh) + "," + std::to_string(kw) + ") s=" + std::to_string(s) +
                             " p=" + std::to_string(p) + " ceil=" + std::to_string(ceil_mode) +
                             " count_pad=" + std::to_string(count_pad) + " div=" + std::to_string(div.value_or(0)) +
                             " input " + std::to_string(H) + "x" + std::to_string(W));
                const Tensor x = randn({2, 3, H, W}, kDouble);
                const int64_t OH = ref_out(H, c.kh, c.sh, c.ph, 1, c.ceil), OW = ref_out(W, c.kw, c.sw, c.pw, 1, c.ceil);
                if (OH <= 0 || OW <= 0) {
                  expect_error([&] { F::avg_pool2d(x, avg_opts(c)); }, {"[avg_pool2d]", "too small"});
                  continue;
                }
                const std::vector<double> want = ref_avg_pool(x, c);
                for (bool cl : {false, true}) {
                  const Tensor xi = (cl ? x.contiguous(kChannelsLast) : x).detach().requires_grad_();
                  const Tensor y = F::avg_pool2d(xi, avg_opts(c));
                  ASSERT_EQ(y.sizes(), IntArrayRef({2, 3, OH, OW}));
                  EXPECT_TRUE(same_values(y, want, 1e-12, 1e-12)) << "cl=" << cl;
                  const Tensor gy = randn(y.sizes(), kDouble);
                  y.backward(gy);
                  const std::vector<double> g = values(gy);
                  EXPECT_TRUE(same_values(xi.grad(), ref_avg_pool(x, c, &g), 1e-12, 1e-12)) << "cl=" << cl;
                  if (cl && OH * OW > 1) EXPECT_TRUE(is_cl(y) && is_cl(xi.grad()));
                }
                ++checked;
              }
  EXPECT_GT(checked, 500);
}

TEST(AvgPool2d, Float32AndReducedDtypes) {
  manual_seed(7);
  const Tensor x = randn({4, 6, 10, 12});
  const AvgCfg fast{2, 2, 2, 2, 0, 0, false, true, std::nullopt}, pad{3, 3, 2, 2, 1, 1, true, false, std::nullopt};
  for (const AvgCfg& c : {fast, pad}) {
    EXPECT_TRUE(same_values(F::avg_pool2d(x, avg_opts(c)), ref_avg_pool(x, c), 1e-6, 1e-6));
    EXPECT_TRUE(same_values(F::avg_pool2d(x.contiguous(kChannelsLast), avg_opts(c)), ref_avg_pool(x, c), 1e-6, 1e-6));
    for (ScalarType dt : {kHalf, kBFloat16}) {
      const Tensor xr = x.to(dt);
      const Tensor y = F::avg_pool2d(xr, avg_opts(c));
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_TRUE(same_values(y, ref_avg_pool(xr, c), 1e-2, 1e-2));
    }
  }
}

TEST(AvgPool2d, GradcheckFirstAndSecondOrder) {
  manual_seed(8);
  for (const AvgCfg& c : {AvgCfg{2, 2, 2, 2, 0, 0, false, true, std::nullopt},
                          AvgCfg{3, 3, 2, 1, 1, 1, true, false, std::nullopt}, AvgCfg{3, 2, 1, 2, 1, 1, true, true, 4}}) {
    for (bool cl : {false, true}) {
      Tensor x = leaf({2, 3, 5, 6});
      if (cl) x = x.detach().contiguous(kChannelsLast).requires_grad_();
      EXPECT_TRUE(gradcheck_ok([&](const TensorList& in) { return F::avg_pool2d(in[0], avg_opts(c)); }, {x}, true));
    }
  }
  EXPECT_EQ(F::avg_pool2d(randn({1, 1, 4, 4}).requires_grad_(), 2).grad_fn()->name(), "AvgPool2DBackward0");
}

// ---- adaptive_avg_pool2d ---------------------------------------------------------------------

TEST(AdaptiveAvgPool2d, SizesThatDoNotDivide) {
  manual_seed(9);
  for (auto [H, W] : {std::pair<int64_t, int64_t>{7, 5}, {8, 8}, {5, 9}})
    for (auto [OH, OW] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 3}, {3, 3}, {4, 2}, {7, 5}, {9, 11}}) {
      SCOPED_TRACE(std::to_string(H) + "x" + std::to_string(W) + " -> " + std::to_string(OH) + "x" + std::to_string(OW));
      const Tensor x = randn({2, 4, H, W}, kDouble);
      for (bool cl : {false, true}) {
        const Tensor xi = (cl ? x.contiguous(kChannelsLast) : x).detach().requires_grad_();
        const Tensor y = F::adaptive_avg_pool2d(xi, {OH, OW});
        ASSERT_EQ(y.sizes(), IntArrayRef({2, 4, OH, OW}));
        EXPECT_TRUE(same_values(y, ref_adaptive(x, OH, OW), 1e-12, 1e-12));
        const Tensor gy = randn(y.sizes(), kDouble);
        y.backward(gy);
        const std::vector<double> g = values(gy);
        EXPECT_TRUE(same_values(xi.grad(), ref_adaptive(x, OH, OW, &g), 1e-12, 1e-12));
      }
    }
}

TEST(AdaptiveAvgPool2d, GlobalAverageAndGradcheck) {
  manual_seed(10);
  const Tensor x = randn({3, 5, 6, 7});
  const Tensor y = F::adaptive_avg_pool2d(x, 1);
  EXPECT_EQ(y.sizes(), IntArrayRef({3, 5, 1, 1}));
  EXPECT_TRUE(close(y, x.mean({2, 3}, true), 1e-5, 1e-6));
  EXPECT_TRUE(close(F::adaptive_avg_pool2d(x.contiguous(kChannelsLast), 1), x.mean({2, 3}, true), 1e-5, 1e-6));
  const Tensor u = F::adaptive_avg_pool2d(randn({5, 6, 7}), {2, 3});  // unbatched
  EXPECT_EQ(u.sizes(), IntArrayRef({5, 2, 3}));
  for (bool cl : {false, true}) {
    Tensor l = leaf({2, 3, 5, 7});
    if (cl) l = l.detach().contiguous(kChannelsLast).requires_grad_();
    EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return F::adaptive_avg_pool2d(in[0], {3, 4}); }, {l}, true));
    EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return F::adaptive_avg_pool2d(in[0], 1); }, {l}, true));
  }
  EXPECT_EQ(F::adaptive_avg_pool2d(randn({1, 1, 4, 4}).requires_grad_(), 2).grad_fn()->name(),
            "AdaptiveAvgPool2DBackward0");
}

// ---- 1-D --------------------------------------------------------------------------------------

TEST(Pool1d, MaxAndAvgAgainstNaiveLoop) {
  manual_seed(11);
  const Tensor x = randn({2, 3, 11});
  const Tensor x4 = x.unsqueeze(2);  // (N, C, 1, L): the reference pools along W
  auto [y, idx] = F::max_pool1d_with_indices(x, F::MaxPool1dFuncOptions(3).stride(2).padding(1).dilation(2).ceil_mode(true));
  const MaxRef r = ref_max_pool(x4, {1, 3, 1, 2, 0, 1, 1, 2, true});
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 3, r.shape[3]}));
  EXPECT_TRUE(same_values(y, r.out));
  EXPECT_EQ(idx.to_vector<int64_t>(), r.idx);  // positions along L
  EXPECT_TRUE(same_values(F::max_pool1d(x, 2), ref_max_pool(x4, {1, 2, 1, 2, 0, 0, 1, 1, false}).out));
  const Tensor a = F::avg_pool1d(x, 4, 3, 2, true, false);
  EXPECT_TRUE(same_values(a, ref_avg_pool(x4, {1, 4, 1, 3, 0, 2, true, false, std::nullopt}), 1e-6, 1e-6));
  EXPECT_EQ(F::avg_pool1d(randn({3, 8}), 2).sizes(), IntArrayRef({3, 4}));  // unbatched
  const Tensor l = leaf({2, 3, 9});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return F::max_pool1d(in[0], 3, 2, 1); }, {l}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return F::avg_pool1d(in[0], 3, 2, 1); }, {l}));
}

// ---- modules ------------------------------------------------------------------------------------

TEST(PoolModules, ForwardAndPrinting) {
  manual_seed(12);
  const Tensor x = randn({2, 3, 8, 8});
  auto mp = std::make_shared<nn::MaxPool2dImpl>(2);
  EXPECT_TRUE(mp->forward(x).equal(F::max_pool2d(x, 2)));
  EXPECT_TRUE(std::get<1>(mp->forward_with_indices(x)).equal(std::get<1>(F::max_pool2d_with_indices(x, 2))));
  EXPECT_EQ(nn::to_string(*mp), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=false)");
  nn::MaxPool2d mp2(nn::MaxPool2dOptions({3, 2}).stride(1).padding({1, 0}).ceil_mode(true));
  EXPECT_EQ(nn::to_string(mp2), "MaxPool2d(kernel_size=(3, 2), stride=1, padding=(1, 0), dilation=1, ceil_mode=true)");
  EXPECT_TRUE(mp2(x).equal(F::max_pool2d(x, {3, 2}, 1, {1, 0}, 1, true)));

  nn::AvgPool2d ap(nn::AvgPool2dOptions(3).stride(2).padding(1).count_include_pad(false));
  EXPECT_EQ(nn::to_string(ap), "AvgPool2d(kernel_size=3, stride=2, padding=1, count_include_pad=false)");
  EXPECT_TRUE(ap(x).equal(F::avg_pool2d(x, 3, 2, 1, false, false)));
  nn::AdaptiveAvgPool2d gap(1);
  EXPECT_EQ(nn::to_string(gap), "AdaptiveAvgPool2d(output_size=1)");
  EXPECT_EQ(nn::to_string(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({5, 7}))), "AdaptiveAvgPool2d(output_size=(5, 7))");
  EXPECT_EQ(gap(x).sizes(), IntArrayRef({2, 3, 1, 1}));
  nn::MaxPool1d m1(3);
  EXPECT_EQ(nn::to_string(m1), "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=false)");
  EXPECT_EQ(m1(randn({2, 4, 9})).sizes(), IntArrayRef({2, 4, 3}));
  nn::AvgPool1d a1(2);
  EXPECT_EQ(a1(randn({2, 4, 9})).sizes(), IntArrayRef({2, 4, 4}));
  // no parameters, and they chain in Sequential
  nn::Sequential seq(nn::MaxPool2d(2), nn::AdaptiveAvgPool2d(1));
  EXPECT_EQ(seq->num_parameters(), 0);
  EXPECT_EQ(seq->forward(x).sizes(), IntArrayRef({2, 3, 1, 1}));
}

// ---- errors ----------------------------------------------------------------------------------------

TEST(PoolErrors, NameTheOpAndTheProblem) {
  const Tensor x = randn({1, 2, 4, 4});
  expect_error([&] { F::max_pool2d(randn({1, 1, 2, 2}), 3); }, {"[max_pool2d]", "too small", "kernel_size (3, 3)"});
  expect_error([&] { F::max_pool2d(x, 3, 1, 2); }, {"[max_pool2d]", "padding (2, 2)", "at most half"});
  expect_error([&] { F::max_pool2d(x, 2, 0); }, {"[max_pool2d]", "stride must be positive"});
  expect_error([&] { F::max_pool2d(x, 0); }, {"[max_pool2d]", "kernel_size must be positive"});
  expect_error([&] { F::max_pool2d(x, 2, 2, 0, 0); }, {"[max_pool2d]", "dilation must be positive"});
  expect_error([&] { F::max_pool2d(x, {1, 2, 3}); }, {"[max_pool2d]", "kernel_size must be one integer or 2"});
  expect_error([&] { F::max_pool2d(randn({4, 4}), 2); }, {"[max_pool2d]", "3-D (C, H, W) or 4-D"});
  expect_error([&] { F::max_pool2d(randn({1, 2, 3, 4, 4}), 2); }, {"[max_pool2d]", "3-D (C, H, W) or 4-D"});
  expect_error([&] { F::max_pool2d(randn({1, 0, 4, 4}), 2); }, {"[max_pool2d]", "non-empty"});
  expect_error([&] { F::max_pool2d(ones({1, 1, 4, 4}, kBool), 2); }, {"[max_pool2d]", "floating point"});
  expect_error([&] { F::max_pool2d_with_indices(x, 5); }, {"[max_pool2d_with_indices]", "too small"});
  expect_error([&] { F::avg_pool2d(x, 2, 2, 0, false, true, 0); }, {"[avg_pool2d]", "divisor_override"});
  expect_error([&] { F::avg_pool2d(x, 2, 2, 2); }, {"[avg_pool2d]", "at most half"});
  expect_error([&] { F::avg_pool2d(randn({1, 1, 2, 2}), 3); }, {"[avg_pool2d]", "too small"});
  expect_error([&] { F::adaptive_avg_pool2d(x, {-1, 2}); },
               {"[adaptive_avg_pool2d]", "output_size must be non-negative"});
  expect_error([&] { F::adaptive_avg_pool2d(randn({4}), 2); }, {"[adaptive_avg_pool2d]", "input"});
  expect_error([&] { F::max_pool1d(x, 2); }, {"[max_pool1d]", "2-D (C, L) or 3-D (N, C, L)"});
  expect_error([&] { F::max_pool1d(randn({1, 2, 2}), 3); }, {"[max_pool1d]", "too small"});
  expect_error([&] { F::avg_pool1d(randn({1, 2, 8}), 2, 2, 2); }, {"[avg_pool1d]", "at most half"});
}

// ---- integer inputs ------------------------------------------------------------------------------

namespace {
std::vector<int64_t> ints(const Tensor& t) {
  const Tensor c = t.to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
}  // namespace

// Integer pooling as torch 2.x's CPU kernels have it (difffuzz
// nn:F.max_pool2d:unsupported:int, nn:F.max_pool2d_with_indices:unsupported:u8,
// nn:F.avg_pool2d:unsupported:int): max pooling of uint8, int32 and int64
// (max_pool1d only with indices), average pooling of int64 only.
TEST(PoolIntegers, MaxPoolingAsTorch) {
  // x = torch.tensor([[[-6, -2, -6, 4], [1, -4, 5, 5], [-1, -4, 1, 1]],
  //                   [[-1, 0, 0, 0], [1, -2, -1, -2], [3, 4, 3, 2]]])
  const Tensor x = tensor<int64_t>({-6, -2, -6, 4, 1, -4, 5, 5, -1, -4, 1, 1,  //
                                    -1, 0, 0, 0, 1, -2, -1, -2, 3, 4, 3, 2})
                       .view({2, 3, 4});
  // F.max_pool2d_with_indices(x, 2, stride=1):
  //   [[[1, 5, 5], [1, 5, 5]], [[1, 0, 0], [4, 4, 3]]], [[[4, 6, 6], [4, 6, 6]], [[4, 1, 2], [9, 9, 10]]]
  auto [v, i] = F::max_pool2d_with_indices(x, 2, 1);
  EXPECT_EQ(v.dtype(), kInt64);
  EXPECT_EQ(ints(v), (std::vector<int64_t>{1, 5, 5, 1, 5, 5, 1, 0, 0, 4, 4, 3}));
  EXPECT_EQ(ints(i), (std::vector<int64_t>{4, 6, 6, 4, 6, 6, 4, 1, 2, 9, 9, 10}));
  // F.max_pool2d(x, 2, stride=1, padding=1)[0, 0] = [-6, -2, -2, 4, 4]
  EXPECT_EQ(ints(F::max_pool2d(x, 2, 1, 1).select(0, 0).select(0, 0)), (std::vector<int64_t>{-6, -2, -2, 4, 4}));
  // F.max_pool2d(x.to(torch.uint8), 2, stride=1): [[[254, 254, 250], [255, 252, 5]], [[255, 255, 255], [254, 255, 255]]]
  const Tensor u = F::max_pool2d(x.to(kUInt8), 2, 1);
  EXPECT_EQ(u.dtype(), kUInt8);
  EXPECT_EQ(ints(u), (std::vector<int64_t>{254, 254, 250, 255, 252, 5, 255, 255, 255, 254, 255, 255}));
  // channels_last int32: F.max_pool2d(x[None].contiguous(memory_format=torch.channels_last).int(), (2, 3), stride=1)
  //   [[[[5, 5], [5, 5]], [[1, 0], [4, 4]]]], strides (8, 1, 4, 2)
  const Tensor cl = F::max_pool2d(x.unsqueeze(0).to(kInt32).contiguous(kChannelsLast), {2, 3}, 1);
  EXPECT_EQ(cl.dtype(), kInt32);
  EXPECT_EQ(ints(cl), (std::vector<int64_t>{5, 5, 5, 5, 1, 0, 4, 4}));
  EXPECT_TRUE(cl.is_contiguous(kChannelsLast));
  // F.max_pool1d(torch.tensor([[[-6, -2, -6, 4, 1, -4]]]), 2, return_indices=True): [[[-2, 4, 1]]], [[[1, 3, 4]]]
  auto [v1, i1] = F::max_pool1d_with_indices(tensor<int64_t>({-6, -2, -6, 4, 1, -4}).view({1, 1, 6}), F::MaxPool1dFuncOptions(2));
  EXPECT_EQ(ints(v1), (std::vector<int64_t>{-2, 4, 1}));
  EXPECT_EQ(ints(i1), (std::vector<int64_t>{1, 3, 4}));
  // torch: "max_pool1d_impl" not implemented for 'Long'; "max_pool2d" not implemented for 'Bool'
  expect_error([&] { F::max_pool1d(tensor<int64_t>({1, 2}).view({1, 1, 2}), 2); }, {"[max_pool1d]", "floating point"});
  expect_error([&] { F::max_pool2d(x.to(kBool), 2); }, {"[max_pool2d]", "floating point"});
}

TEST(PoolIntegers, Int64AveragePoolingTruncatesAndWraps) {
  const Tensor a = tensor<int64_t>({-1, -2, 3, 4, -7, 0}).view({1, 1, 6});
  // F.avg_pool1d(a, 2) = [-1, 3, -3]: -3 / 2 truncates to -1
  EXPECT_EQ(ints(F::avg_pool1d(a, 2)), (std::vector<int64_t>{-1, 3, -3}));
  // F.avg_pool1d(a, 4, stride=1, padding=2, count_include_pad=False) = [-1, 0, 1, 0, 0, -1, -3]
  EXPECT_EQ(ints(F::avg_pool1d(a, 4, 1, 2, false, false)), (std::vector<int64_t>{-1, 0, 1, 0, 0, -1, -3}));
  // ... with count_include_pad=True: [0, 0, 1, 0, 0, 0, -1]
  EXPECT_EQ(ints(F::avg_pool1d(a, 4, 1, 2)), (std::vector<int64_t>{0, 0, 1, 0, 0, 0, -1}));
  // F.avg_pool2d(a, (1, 3), divisor_override=2) = [0, -1]
  EXPECT_EQ(ints(F::avg_pool2d(a, {1, 3}, {}, 0, false, true, 2)), (std::vector<int64_t>{0, -1}));
  // F.avg_pool1d(a, 4, ceil_mode=True, stride=3) = [1, -1]
  EXPECT_EQ(ints(F::avg_pool1d(a, 4, 3, 0, true)), (std::vector<int64_t>{1, -1}));
  // The sum wraps: F.avg_pool1d(torch.tensor([[[2**62] * 3]]), 3) = [-1537228672809129301]
  EXPECT_EQ(ints(F::avg_pool1d(full({1, 1, 3}, int64_t(1) << 62, kInt64), 3)),
            (std::vector<int64_t>{-1537228672809129301LL}));
  // torch: "avg_pool2d" not implemented for 'Int'; "adaptive_avg_pool2d" not implemented for 'Long'
  expect_error([&] { F::avg_pool2d(ones({1, 2, 2}, kInt32), 2); }, {"[avg_pool2d]", "floating point"});
  expect_error([&] { F::adaptive_avg_pool2d(ones({1, 2, 2}, kInt64), 1); }, {"[adaptive_avg_pool2d]", "floating point"});
}
