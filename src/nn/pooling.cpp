// Pooling: max_pool2d, avg_pool2d, adaptive_avg_pool2d (and the 1-D forms on
// a (.., 1, L) view): checks, the plan of each call (core/pool_plan.h) and
// the recorded backward nodes. The kernels are rows of the op table
// (max_pool2d*, avg_pool2d*): backend/cpu/kernels/pooling.cpp on the CPU,
// backend/cuda/pooling.cu on CUDA. See docs/design/pooling_norm.md.
//
// Note [Pooling layouts]
// An input that is channels_last (and not also contiguous) is pooled in that
// layout and gives a channels_last output and gradient: the loops vectorize
// over C. Every other input is made contiguous (NCHW): the loops run over
// planes. An unbatched (C, H, W) input is a batch of one with a 3-D output.
//
// Max pooling's backward reads the "taps" its forward kernel recorded, in
// the kernel's own format (Note [Max pooling taps] in
// backend/cpu/kernels/pooling.cpp; CUDA records flat indices).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "brisk/autograd.h"
#include "brisk/nn/pooling.h"
#include "brisk/ops.h"
#include "nn/pooling_repr.h"
#include "autograd/function.h"
#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/pool_plan.h"
#include "core/profile_hooks.h"
#include "core/tensor_create.h"

namespace brisk::nn {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/// PyTorch's pooling output size (with its ceil_mode rule: the last window
/// must start inside the input or the left padding).
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t out = floor_div(in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

/// Whether x is pooled in channels_last layout (Note [Pooling layouts]).
bool use_channels_last(const Tensor& x) { return x.dim() == 4 && !x.is_contiguous() && x.is_contiguous(kChannelsLast); }

Tensor alloc(IntArrayRef sizes, bool cl, ScalarType dt, Device dev) {
  if (!cl) return detail::make_tensor(sizes, {}, dt, dev);
  const DimVector st = detail::channels_last_strides(sizes);
  return detail::make_tensor(sizes, st, dt, dev);
}

/// The input's memory in the layout the kernels read (a copy only when the
/// input is neither contiguous nor channels_last).
Tensor in_layout(const Tensor& t, bool cl) { return cl ? t.contiguous(kChannelsLast) : t.contiguous(); }

/// The integer dtypes a pooling op takes on the CPU, as PyTorch's CPU
/// kernels do: max pooling uint8, int8, int16, int32 and int64 (max_pool1d
/// only with indices), average pooling int64 (adaptive pooling none).
enum class PoolInts { None, Max, Avg };

/// Checks shared by every pooling op: a floating (or, per `ints`, integer)
/// (C, H, W) / (N, C, H, W) input with non-empty C, H, W. `one_d` words the
/// message for 1-D ops.
void check_pool_input(const char* op, OpId row, const Tensor& x, bool one_d, PoolInts ints = PoolInts::None) {
  BRISK_CHECK(x.defined(), op, "input is undefined");
  BRISK_CHECK(supports(row, x.device().type), op, "not implemented on ", x.device());
  const ScalarType t = x.dtype();
  const bool int_ok = x.is_cpu() && ((ints == PoolInts::Max && is_integral(t, false)) ||
                                     (ints == PoolInts::Avg && t == kInt64));
  BRISK_CHECK(x.is_floating_point() || int_ok, op, "expected a floating point input",
              ints == PoolInts::Max   ? " (or an integer dtype on the cpu)"
              : ints == PoolInts::Avg ? " (or int64 on the cpu)"
                                      : "",
              ", got ", t);
  if (one_d) {
    // x is the (.., 1, L) view of the 1-D input
    BRISK_CHECK(x.dim() == 3 || x.dim() == 4, op, "expected a 2-D (C, L) or 3-D (N, C, L) input, got shape ",
                x.sizes());
    BRISK_CHECK(x.size(-3) > 0 && x.size(-1) > 0, op,
                "expected non-empty C and L (only the batch dim may be 0), got shape ", x.squeeze(-2).sizes());
  } else {
    BRISK_CHECK(x.dim() == 3 || x.dim() == 4, op, "expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape ",
                x.sizes());
    BRISK_CHECK(x.size(-3) > 0 && x.size(-2) > 0 && x.size(-1) > 0, op,
                "expected non-empty C, H and W (only the batch dim may be 0), got shape ", x.sizes());
  }
}

/// "(a, b)" for 2-D ops, "b" for 1-D ones (the H dim is the unit view dim).
std::string pair_str(int64_t a, int64_t b, bool one_d) {
  if (one_d) return std::to_string(b);
  std::string s = "(";
  s += std::to_string(a);
  s += ", ";
  s += std::to_string(b);
  s += ")";
  return s;
}

template <size_t D>
std::array<int64_t, 2> resolve(const char* op, const char* what, const ExpandingInts<D>& v, int64_t fill) {
  BRISK_CHECK(v.given() == 1 || v.given() == int(D), op, what, " must be one integer or ", D, " integers, got ",
              v.given());
  if constexpr (D == 1) return {fill, v[0]};
  else return {v[0], v[1]};
}

using pool::Shape;
using pool::Span;
using pool::Range;
using MaxGeom = pool::MaxPlan;
using AvgGeom = pool::AvgPlan;

Shape make_shape(const Tensor& x, int64_t OH, int64_t OW) {
  Shape s;
  const bool batched = x.dim() == 4;
  s.N = batched ? x.size(0) : 1;
  s.C = x.size(-3);
  s.H = x.size(-2);
  s.W = x.size(-1);
  s.OH = OH;
  s.OW = OW;
  s.cl = use_channels_last(x);
  s.in_sizes = DimVector(x.sizes().begin(), x.sizes().end());
  s.out_sizes = s.in_sizes;
  s.out_sizes[s.out_sizes.size() - 2] = OH;
  s.out_sizes[s.out_sizes.size() - 1] = OW;
  return s;
}

// ==== max pooling ======================================================================

std::vector<Span> max_spans(int64_t out, int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  std::vector<Span> v(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p;
    const int64_t lo = start < 0 ? ceil_div(-start, d) : 0;
    const int64_t hi = std::min(k, ceil_div(in - start, d));
    v[o] = {start, lo, std::max(lo, hi)};
  }
  return v;
}

MaxGeom max_geom(const char* op, const Tensor& x, const MaxPool2dOptions& o, bool one_d, PoolInts ints) {
  check_pool_input(op, OpId::max_pool2d, x, one_d, ints);
  MaxGeom g;
  // 1-D options arrive widened: H gets kernel 1, stride 1, padding 0, dilation 1.
  const auto k = resolve(op, "kernel_size", o.kernel_size(), 1), s = resolve(op, "stride", o.stride(), 1),
             p = resolve(op, "padding", o.padding(), 0), d = resolve(op, "dilation", o.dilation(), 1);
  g.kH = k[0], g.kW = k[1], g.sH = s[0], g.sW = s[1], g.pH = p[0], g.pW = p[1], g.dH = d[0], g.dW = d[1];
  BRISK_CHECK(g.kH > 0 && g.kW > 0, op, "kernel_size must be positive, got ", pair_str(g.kH, g.kW, one_d));
  BRISK_CHECK(g.sH > 0 && g.sW > 0, op, "stride must be positive, got ", pair_str(g.sH, g.sW, one_d));
  BRISK_CHECK(g.dH > 0 && g.dW > 0, op, "dilation must be positive, got ", pair_str(g.dH, g.dW, one_d));
  BRISK_CHECK(g.pH >= 0 && g.pW >= 0, op, "padding must be non-negative, got ", pair_str(g.pH, g.pW, one_d));
  BRISK_CHECK(g.pH <= g.kH / 2 && g.pW <= g.kW / 2, op, "padding ", pair_str(g.pH, g.pW, one_d),
              " must be at most half the kernel size ", pair_str(g.kH, g.kW, one_d));
  const int64_t H = x.size(-2), W = x.size(-1);
  const int64_t OH = pooled_size(H, g.kH, g.sH, g.pH, g.dH, o.ceil_mode());
  const int64_t OW = pooled_size(W, g.kW, g.sW, g.pW, g.dW, o.ceil_mode());
  BRISK_CHECK(OH > 0 && OW > 0, op, "input of size ", pair_str(H, W, one_d), " is too small for kernel_size ",
              pair_str(g.kH, g.kW, one_d), " with padding ", pair_str(g.pH, g.pW, one_d), " and dilation ",
              pair_str(g.dH, g.dW, one_d), ": the output size would be ", pair_str(OH, OW, one_d));
  g.sh = make_shape(x, OH, OW);
  g.hs = max_spans(OH, H, g.kH, g.sH, g.pH, g.dH);
  g.ws = max_spans(OW, W, g.kW, g.sW, g.pW, g.dW);
  g.disjoint = g.sH >= (g.kH - 1) * g.dH + 1 && g.sW >= (g.kW - 1) * g.dW + 1;
  g.tiles = g.disjoint && g.sH == g.kH && g.sW == g.kW && g.dH == 1 && g.dW == 1 && g.pH == 0 && g.pW == 0 &&
            OH * g.kH == H && OW * g.kW == W;
  g.fast2 = g.tiles && g.kH == 2 && g.kW == 2;
  g.wide = g.kH * g.kW > 254;
  return g;
}

/// Forward kernel: output (and taps, in the kernel's format, when `taps` is non-null).
Tensor max_forward(const MaxGeom& g, const Tensor& x, Tensor* taps) {
  const Shape& s = g.sh;
  const Tensor xin = in_layout(x, s.cl);
  Tensor y = alloc(s.out_sizes, s.cl, x.dtype(), x.device());
  kernel<OpId::max_pool2d>(x.device().type, "max_pool2d")(g, xin, y, taps);
  return y;
}

/// PyTorch's int64 flat indices from the taps.
Tensor max_indices(const MaxGeom& g, const Tensor& taps) {
  return kernel<OpId::max_pool2d_indices>(taps.device().type, "max_pool2d_with_indices")(g, taps);
}

Tensor max_pool_backward(const Tensor& gy, const Tensor& taps, const MaxGeom& g);

/// Gradient of the backward with respect to gy: the gradient at each
/// window's winning input (a gather with the flat indices).
Tensor max_pool_double_backward(const Tensor& ggx, const Tensor& taps, const MaxGeom& g) {
  const Shape& s = g.sh;
  Tensor idx, valid;
  {
    NoGradGuard ng;
    idx = max_indices(g, taps).reshape({s.N, s.C, s.OH * s.OW});
    valid = idx.ge(0);
    idx = idx.clamp_min(0);
  }
  // Windows without a tap (index -1) read position 0, then get zero.
  Tensor picked = ggx.reshape({s.N, s.C, s.H * s.W}).gather(2, idx);
  return where(valid, picked, Scalar(0.0)).view(s.out_sizes);
}

/// The recorded backward: scatters gy to the winning taps. Recorded itself
/// under create_graph (its adjoint is the gather above).
Tensor max_pool_backward(const Tensor& gy, const Tensor& taps, const MaxGeom& g) {
  const Shape& s = g.sh;
  Tensor gx;
  {
    NoGradGuard ng;
    const Tensor gin = in_layout(gy, s.cl);
    gx = alloc(s.in_sizes, s.cl, gy.dtype(), gy.device());
    kernel<OpId::max_pool2d_backward>(gy.device().type, "max_pool2d_backward")(g, gin, taps, gx);
  }
  if (autograd::should_record(gy))
    autograd::record("MaxPool2DWithIndicesBackwardBackward0", {gx}, {gy}, {autograd::save(taps)},
                     [g](autograd::BackwardCtx& c) -> TensorList {
                       return {max_pool_double_backward(c.grad(), c.saved(0), g)};
                     });
  return gx;
}

/// max_pool2d (and max_pool1d on a (.., 1, L) view): values and, when
/// asked, flat indices.
std::tuple<Tensor, Tensor> max_pool_impl(const char* op, const Tensor& x, const MaxPool2dOptions& o, bool one_d,
                                         bool want_indices) {
  BRISK_PROFILE_OP(op, x);
  // torch's max_pool1d without indices has no integer kernel; with indices it does
  const MaxGeom g = max_geom(op, x, o, one_d, one_d && !want_indices ? PoolInts::None : PoolInts::Max);
  const bool rec = autograd::should_record(x);
  Tensor y, taps, idx;
  {
    NoGradGuard ng;
    y = max_forward(g, x, rec || want_indices ? &taps : nullptr);
    if (want_indices) idx = max_indices(g, taps);
  }
  if (rec)
    autograd::record("MaxPool2DWithIndicesBackward0", {y}, {x}, {autograd::save(taps)},
                     [g](autograd::BackwardCtx& c) -> TensorList { return {max_pool_backward(c.grad(), c.saved(0), g)}; });
  return {y, idx};
}

// ==== average pooling (fixed and adaptive) ==============================================

std::vector<Range> avg_ranges(int64_t out, int64_t in, int64_t k, int64_t s, int64_t p, bool count_pad) {
  std::vector<Range> v(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p, end = std::min(start + k, in + p);
    const int64_t lo = std::max<int64_t>(start, 0), hi = std::min(end, in);
    v[o] = {lo, hi, count_pad ? end - start : hi - lo};
  }
  return v;
}

/// adaptive windows: [floor(o*in/out), ceil((o+1)*in/out)).
std::vector<Range> adaptive_ranges(int64_t out, int64_t in) {
  std::vector<Range> v(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t lo = (o * in) / out, hi = ((o + 1) * in + out - 1) / out;
    v[o] = {lo, hi, hi - lo};
  }
  return v;
}

void finish_avg_geom(AvgGeom& g) {
  const Shape& s = g.sh;
  auto disjoint = [](const std::vector<Range>& r) {
    for (size_t i = 1; i < r.size(); ++i)
      if (r[i].lo < r[i - 1].hi) return false;
    return true;
  };
  auto tiles = [](const std::vector<Range>& r, int64_t in) {
    if (r.empty() || r.front().lo != 0 || r.back().hi != in) return false;
    for (size_t i = 1; i < r.size(); ++i)
      if (r[i].lo != r[i - 1].hi) return false;
    return true;
  };
  g.disjoint = disjoint(g.hs) && disjoint(g.ws);
  g.tiles = tiles(g.hs, s.H) && tiles(g.ws, s.W);
  bool two = g.tiles && s.H == 2 * s.OH && s.W == 2 * s.OW;
  for (const Range& r : g.hs) two = two && r.ext == 2;
  for (const Range& r : g.ws) two = two && r.ext == 2;
  g.fast2 = two && (!g.divisor || *g.divisor == 4);
}

const char* avg_node(const AvgGeom& g) { return g.adaptive ? "AdaptiveAvgPool2DBackward0" : "AvgPool2DBackward0"; }
const char* avg_node2(const AvgGeom& g) {
  return g.adaptive ? "AdaptiveAvgPool2DBackwardBackward0" : "AvgPool2DBackwardBackward0";
}

Tensor avg_backward(const Tensor& gy, const AvgGeom& g);

/// The forward, recorded; its backward is avg_backward (and vice versa), so
/// any order of derivative works.
Tensor avg_forward(const Tensor& x, const AvgGeom& g) {
  const Shape& s = g.sh;
  Tensor y;
  {
    NoGradGuard ng;
    if (x.dtype() == kInt64) {  // CPU only (check_pool_input); the kernel takes NCHW
      const Tensor xin = x.contiguous();
      y = alloc(s.out_sizes, false, kInt64, x.device());
      kernel<OpId::avg_pool2d>(x.device().type, "avg_pool2d")(g, xin, y);
      return s.cl ? y.contiguous(kChannelsLast) : y;
    }
    const Tensor xin = in_layout(x, s.cl);
    y = alloc(s.out_sizes, s.cl, x.dtype(), x.device());
    kernel<OpId::avg_pool2d>(x.device().type, g.adaptive ? "adaptive_avg_pool2d" : "avg_pool2d")(g, xin, y);
  }
  if (autograd::should_record(x))
    autograd::record(avg_node(g), {y}, {x}, {},
                     [g](autograd::BackwardCtx& c) -> TensorList { return {avg_backward(c.grad(), g)}; });
  return y;
}

Tensor avg_backward(const Tensor& gy, const AvgGeom& g) {
  const Shape& s = g.sh;
  Tensor gx;
  {
    NoGradGuard ng;
    const Tensor gin = in_layout(gy, s.cl);
    gx = alloc(s.in_sizes, s.cl, gy.dtype(), gy.device());
    kernel<OpId::avg_pool2d_backward>(gy.device().type,
                                      g.adaptive ? "adaptive_avg_pool2d_backward" : "avg_pool2d_backward")(g, gin, gx);
  }
  if (autograd::should_record(gy))
    autograd::record(avg_node2(g), {gx}, {gy}, {},
                     [g](autograd::BackwardCtx& c) -> TensorList { return {avg_forward(c.grad(), g)}; });
  return gx;
}

Tensor avg_pool_impl(const char* op, const Tensor& x, const AvgPool2dOptions& o, bool one_d) {
  BRISK_PROFILE_OP(op, x);
  check_pool_input(op, OpId::avg_pool2d, x, one_d, PoolInts::Avg);
  const auto k = resolve(op, "kernel_size", o.kernel_size(), 1), st = resolve(op, "stride", o.stride(), 1),
             p = resolve(op, "padding", o.padding(), 0);
  BRISK_CHECK(k[0] > 0 && k[1] > 0, op, "kernel_size must be positive, got ", pair_str(k[0], k[1], one_d));
  BRISK_CHECK(st[0] > 0 && st[1] > 0, op, "stride must be positive, got ", pair_str(st[0], st[1], one_d));
  BRISK_CHECK(p[0] >= 0 && p[1] >= 0, op, "padding must be non-negative, got ", pair_str(p[0], p[1], one_d));
  BRISK_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2, op, "padding ", pair_str(p[0], p[1], one_d),
              " must be at most half the kernel size ", pair_str(k[0], k[1], one_d));
  BRISK_CHECK(!o.divisor_override() || *o.divisor_override() != 0, op, "divisor_override must be non-zero");
  const int64_t H = x.size(-2), W = x.size(-1);
  const int64_t OH = pooled_size(H, k[0], st[0], p[0], 1, o.ceil_mode());
  const int64_t OW = pooled_size(W, k[1], st[1], p[1], 1, o.ceil_mode());
  BRISK_CHECK(OH > 0 && OW > 0, op, "input of size ", pair_str(H, W, one_d), " is too small for kernel_size ",
              pair_str(k[0], k[1], one_d), " with padding ", pair_str(p[0], p[1], one_d), ": the output size would be ",
              pair_str(OH, OW, one_d));
  AvgGeom g;
  g.sh = make_shape(x, OH, OW);
  g.hs = avg_ranges(OH, H, k[0], st[0], p[0], o.count_include_pad());
  g.ws = avg_ranges(OW, W, k[1], st[1], p[1], o.count_include_pad());
  g.divisor = o.divisor_override();
  g.adaptive = false;
  g.kH = k[0], g.kW = k[1], g.sH = st[0], g.sW = st[1], g.pH = p[0], g.pW = p[1];
  g.count_pad = o.count_include_pad();
  finish_avg_geom(g);
  return avg_forward(x, g);
}

// 1-D pooling runs the 2-D kernels on x.unsqueeze(-2): (N, C, 1, L), with
// kernel 1, stride 1, no padding along the unit dim.
ExpandingInts<2> widen(const ExpandingInts<1>& v, int64_t fill) { return ExpandingInts<2>({fill, v[0]}); }

MaxPool2dOptions widen(const MaxPool1dOptions& o) {
  return MaxPool2dOptions(widen(o.kernel_size(), 1))
      .stride(widen(o.stride(), 1))
      .padding(widen(o.padding(), 0))
      .dilation(widen(o.dilation(), 1))
      .ceil_mode(o.ceil_mode());
}

AvgPool2dOptions widen(const AvgPool1dOptions& o) {
  return AvgPool2dOptions(widen(o.kernel_size(), 1))
      .stride(widen(o.stride(), 1))
      .padding(widen(o.padding(), 0))
      .ceil_mode(o.ceil_mode())
      .count_include_pad(o.count_include_pad());
}

void check_1d_options(const char* op, int given_k, int given_s, int given_p, int given_d = 1) {
  for (auto [g, what] : {std::pair{given_k, "kernel_size"}, std::pair{given_s, "stride"},
                         std::pair{given_p, "padding"}, std::pair{given_d, "dilation"}})
    BRISK_CHECK(g == 1, op, what, " must be one integer, got ", g);
}

Tensor unsqueeze_1d(const char* op, const Tensor& x) {
  BRISK_CHECK(x.defined(), op, "input is undefined");
  BRISK_CHECK(x.dim() == 2 || x.dim() == 3, op, "expected a 2-D (C, L) or 3-D (N, C, L) input, got shape ", x.sizes());
  return x.unsqueeze(-2);
}

std::tuple<Tensor, Tensor> max_pool1d_impl(const char* op, const Tensor& x, const MaxPool1dOptions& o,
                                           bool want_indices) {
  check_1d_options(op, o.kernel_size().given(), o.stride().given(), o.padding().given(), o.dilation().given());
  auto [y, idx] = max_pool_impl(op, unsqueeze_1d(op, x), widen(o), true, want_indices);
  return {y.squeeze(-2), want_indices ? idx.squeeze(-2) : idx};
}

}  // namespace

// ==== functional ============================================================================

namespace functional {

Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& o) {
  return std::get<0>(max_pool_impl("max_pool2d", x, o, false, false));
}
Tensor max_pool2d(const Tensor& x, ExpandingInts<2> kernel_size, std::optional<ExpandingInts<2>> stride,
                  ExpandingInts<2> padding, ExpandingInts<2> dilation, bool ceil_mode) {
  return max_pool2d(x, MaxPool2dFuncOptions(kernel_size)
                           .stride(stride ? *stride : kernel_size)
                           .padding(padding)
                           .dilation(dilation)
                           .ceil_mode(ceil_mode));
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const MaxPool2dFuncOptions& o) {
  return max_pool_impl("max_pool2d_with_indices", x, o, false, true);
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, ExpandingInts<2> kernel_size,
                                                   std::optional<ExpandingInts<2>> stride, ExpandingInts<2> padding,
                                                   ExpandingInts<2> dilation, bool ceil_mode) {
  return max_pool2d_with_indices(x, MaxPool2dFuncOptions(kernel_size)
                                        .stride(stride ? *stride : kernel_size)
                                        .padding(padding)
                                        .dilation(dilation)
                                        .ceil_mode(ceil_mode));
}

Tensor avg_pool2d(const Tensor& x, const AvgPool2dFuncOptions& o) { return avg_pool_impl("avg_pool2d", x, o, false); }
Tensor avg_pool2d(const Tensor& x, ExpandingInts<2> kernel_size, std::optional<ExpandingInts<2>> stride,
                  ExpandingInts<2> padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  return avg_pool2d(x, AvgPool2dFuncOptions(kernel_size)
                           .stride(stride ? *stride : kernel_size)
                           .padding(padding)
                           .ceil_mode(ceil_mode)
                           .count_include_pad(count_include_pad)
                           .divisor_override(divisor_override));
}

Tensor adaptive_avg_pool2d(const Tensor& x, const AdaptiveAvgPool2dFuncOptions& o) {
  const char* op = "adaptive_avg_pool2d";
  BRISK_PROFILE_OP(op, x);
  check_pool_input(op, OpId::avg_pool2d, x, false);
  const auto os = resolve(op, "output_size", o.output_size(), 1);
  BRISK_CHECK(os[0] >= 0 && os[1] >= 0, op, "output_size must be non-negative, got ",
              pair_str(os[0], os[1], false));
  if (os[0] == 0 || os[1] == 0) {  // an empty result, as PyTorch; its gradient is zeros
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape[shape.size() - 2] = os[0];
    shape.back() = os[1];
    return x.narrow(-2, 0, 1).narrow(-1, 0, 1).expand(shape).clone();
  }
  AvgGeom g;
  g.sh = make_shape(x, os[0], os[1]);
  g.hs = adaptive_ranges(os[0], g.sh.H);
  g.ws = adaptive_ranges(os[1], g.sh.W);
  g.adaptive = true;
  finish_avg_geom(g);
  return avg_forward(x, g);
}

Tensor adaptive_avg_pool2d(const Tensor& x, ExpandingInts<2> output_size) {
  return adaptive_avg_pool2d(x, AdaptiveAvgPool2dFuncOptions(output_size));
}

Tensor max_pool1d(const Tensor& x, const MaxPool1dFuncOptions& o) {
  return std::get<0>(max_pool1d_impl("max_pool1d", x, o, false));
}
Tensor max_pool1d(const Tensor& x, ExpandingInts<1> kernel_size, std::optional<ExpandingInts<1>> stride,
                  ExpandingInts<1> padding, ExpandingInts<1> dilation, bool ceil_mode) {
  return max_pool1d(x, MaxPool1dFuncOptions(kernel_size)
                           .stride(stride ? *stride : kernel_size)
                           .padding(padding)
                           .dilation(dilation)
                           .ceil_mode(ceil_mode));
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, const MaxPool1dFuncOptions& o) {
  return max_pool1d_impl("max_pool1d_with_indices", x, o, true);
}

Tensor avg_pool1d(const Tensor& x, const AvgPool1dFuncOptions& o) {
  const char* op = "avg_pool1d";
  check_1d_options(op, o.kernel_size().given(), o.stride().given(), o.padding().given());
  BRISK_CHECK(!o.divisor_override(), op, "divisor_override is not supported by 1-D average pooling");
  return avg_pool_impl(op, unsqueeze_1d(op, x), widen(o), true).squeeze(-2);
}
Tensor avg_pool1d(const Tensor& x, ExpandingInts<1> kernel_size, std::optional<ExpandingInts<1>> stride,
                  ExpandingInts<1> padding, bool ceil_mode, bool count_include_pad) {
  return avg_pool1d(x, AvgPool1dFuncOptions(kernel_size)
                           .stride(stride ? *stride : kernel_size)
                           .padding(padding)
                           .ceil_mode(ceil_mode)
                           .count_include_pad(count_include_pad));
}

}  // namespace functional

// ==== modules ================================================================================


MaxPool2dImpl::MaxPool2dImpl(const MaxPool2dOptions& o) : Module("MaxPool2d"), options(o) {}
Tensor MaxPool2dImpl::forward(const Tensor& x) { return F::max_pool2d(x, options); }
std::tuple<Tensor, Tensor> MaxPool2dImpl::forward_with_indices(const Tensor& x) {
  return F::max_pool2d_with_indices(x, options);
}
std::string MaxPool2dImpl::extra_repr() const {
  return detail_repr::max_pool_repr(options);
}

MaxPool1dImpl::MaxPool1dImpl(const MaxPool1dOptions& o) : Module("MaxPool1d"), options(o) {}
Tensor MaxPool1dImpl::forward(const Tensor& x) { return F::max_pool1d(x, options); }
std::tuple<Tensor, Tensor> MaxPool1dImpl::forward_with_indices(const Tensor& x) {
  return F::max_pool1d_with_indices(x, options);
}
std::string MaxPool1dImpl::extra_repr() const {
  return detail_repr::max_pool_repr(options);
}

AvgPool2dImpl::AvgPool2dImpl(const AvgPool2dOptions& o) : Module("AvgPool2d"), options(o) {}
Tensor AvgPool2dImpl::forward(const Tensor& x) { return F::avg_pool2d(x, options); }
std::string AvgPool2dImpl::extra_repr() const {
  return detail_repr::avg_pool_repr(options);
}

AvgPool1dImpl::AvgPool1dImpl(const AvgPool1dOptions& o) : Module("AvgPool1d"), options(o) {}
Tensor AvgPool1dImpl::forward(const Tensor& x) { return F::avg_pool1d(x, options); }
std::string AvgPool1dImpl::extra_repr() const {
  return detail_repr::avg_pool_repr(options);
}

AdaptiveAvgPool2dImpl::AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& o) : Module("AdaptiveAvgPool2d"), options(o) {}
Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& x) { return F::adaptive_avg_pool2d(x, options); }
std::string AdaptiveAvgPool2dImpl::extra_repr() const { return "output_size=" + options.output_size().str(); }

}  // namespace brisk::nn
