// Pooling: max_pool2d, avg_pool2d, adaptive_avg_pool2d (and the 1-D forms on
// a (.., 1, L) view), as direct loops over NCHW or channels_last memory with
// recorded backward nodes. See docs/design/pooling_norm.md.
//
// Note [Pooling layouts]
// An input that is channels_last (and not also contiguous) is pooled in that
// layout and gives a channels_last output and gradient: the loops vectorize
// over C. Every other input is made contiguous (NCHW): the loops run over
// planes. An unbatched (C, H, W) input is a batch of one with a 3-D output.
//
// Note [Max pooling taps]
// The forward of max pooling records, per output, which tap of its window
// won (kh * kW + kw) in one byte (int32 for windows over 254 taps), not
// PyTorch's int64 flat index: the backward reads 1 byte per output instead
// of 8 and finds the input position from the window's origin. Flat indices
// are made from the taps only when asked for (max_pool2d_with_indices).
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
#include "autograd/function.h"
#include "core/parallel.h"
#include "core/tensor_create.h"
#include "profiler/record.h"
#ifdef BRISK_HAVE_CUDA
#include "backend/cuda/nn_kernels.h"
#endif

namespace brisk::nn {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/// Items per parallel chunk so that a chunk holds about kGrainSize elements of work.
int64_t grain_for(int64_t work_per_item) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_item)); }

/// PyTorch's pooling output size (with its ceil_mode rule: the last window
/// must start inside the input or the left padding).
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t out = floor_div(in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

/// Whether x runs on the CUDA kernels (src/backend/cuda/pooling.cu): they
/// take the memory, sizes and windows the front end computed here, so
/// checks, layouts and autograd are shared with the CPU path.
bool on_cuda(const Tensor& x) {
#ifdef BRISK_HAVE_CUDA
  return x.is_cuda();
#else
  (void)x;
  return false;
#endif
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
/// kernels do: max pooling uint8, int32 and int64 (max_pool1d only with
/// indices), average pooling int64 (adaptive pooling none).
enum class PoolInts { None, Max, Avg };

/// Checks shared by every pooling op: a floating (or, per `ints`, integer)
/// (C, H, W) / (N, C, H, W) input with non-empty C, H, W. `one_d` words the
/// message for 1-D ops.
void check_pool_input(const char* op, const Tensor& x, bool one_d, PoolInts ints = PoolInts::None) {
  BRISK_CHECK(x.defined(), op, "input is undefined");
  BRISK_CHECK(x.is_cpu() || on_cuda(x), op, "not implemented on ", x.device());
  const ScalarType t = x.dtype();
  const bool int_ok = x.is_cpu() && ((ints == PoolInts::Max && (t == kUInt8 || t == kInt32 || t == kInt64)) ||
                                     (ints == PoolInts::Avg && t == kInt64));
  BRISK_CHECK(x.is_floating_point() || int_ok, op, "expected a floating point input",
              ints == PoolInts::Max   ? " (or uint8, int32, int64 on the cpu)"
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

// Sizes of one pooling call, shared by the front end, the kernels and the backward.
struct Shape {
  int64_t N, C, H, W, OH, OW;
  bool cl;                     // channels_last memory for input, output and gradients
  DimVector in_sizes, out_sizes;  // as the user sees them (3-D when unbatched)
};

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

/// The taps of output o's window along one dim: tap k sits at start + k * d
/// and is inside the input for k in [lo, hi).
struct Span {
  int64_t start, lo, hi;
};

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

struct MaxGeom {
  Shape sh;
  int64_t kH, kW, sH, sW, pH, pW, dH, dW;
  std::vector<Span> hs, ws;
  bool disjoint;  // no input position is in two windows
  bool tiles;     // the windows cover the input exactly, each position once
  bool fast2;     // 2x2 windows, stride 2, tiling
  bool wide;      // more than 254 taps: taps are int32, else uint8
};

MaxGeom max_geom(const char* op, const Tensor& x, const MaxPool2dOptions& o, bool one_d, PoolInts ints) {
  check_pool_input(op, x, one_d, ints);
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

/// Taps of a window with no input position (possible with dilation): the
/// output is -inf (an integer dtype's lowest value) and the gradient goes
/// nowhere.
template <class Tap>
constexpr Tap kNoTap = std::numeric_limits<Tap>::max();

/// The start of a running max: -inf, or an integer type's lowest value.
template <class A>
constexpr A max_start() {
  if constexpr (std::numeric_limits<A>::has_infinity)
    return -std::numeric_limits<A>::infinity();
  else
    return std::numeric_limits<A>::lowest();
}
/// v is NaN (never, for integers: no self-comparison for the compiler to flag).
template <class A>
inline bool is_nan(A v) {
  if constexpr (std::is_integral_v<A>)
    return false;
  else
    return v != v;
}

// The kernels copy the sizes they use into locals first: stores through a
// uint8 Tap* may alias anything, so sizes read from MaxGeom inside a loop
// would be reloaded after every store (and the loop not vectorized).

// Note [2x2 staging]
// The 2x2 / stride 2 NCHW kernels are the hot path of small CNNs, whose rows
// are short (14 or 7 outputs): a loop per row spends most of its time in the
// compiler's scalar remainder, which branches on the comparisons. So a chunk
// of output rows is staged first: the even input rows of the chunk copied
// one after the other into `top`, the odd ones into `bot`. Output i of the
// chunk then reads top[2i], top[2i + 1], bot[2i], bot[2i + 1] (W = 2 OW), and
// one branch-free loop over the chunk, rounded up to 16 outputs (no scalar
// remainder), does the work. The copies stay in L1.
constexpr int64_t kStageOutputs = 1024;
constexpr int64_t pad16(int64_t n) { return (n + 15) & ~int64_t(15); }

template <class T>
struct Stage2x2 {
  std::vector<T> top, bot, val;  // staged input rows (2 per output) and values
  std::vector<int32_t> taps;     // staged taps (int32: a uint8 store would not vectorize)
  explicit Stage2x2(int64_t OW) {
    const int64_t n = pad16(std::max(kStageOutputs, OW));
    top.resize(static_cast<size_t>(2 * n));
    bot.resize(static_cast<size_t>(2 * n));
    val.resize(static_cast<size_t>(n));
    taps.resize(static_cast<size_t>(n));
  }
  /// Output rows per chunk.
  static int64_t rows(int64_t OW) { return std::max<int64_t>(1, kStageOutputs / OW); }
};

// n outputs (a multiple of 16) of staged 2x2 windows: taps 0 1 / 2 3 in
// row-major order; a value wins when greater or NaN (PyTorch's rule).
template <class T, bool kTaps>
void max2x2_staged(const T* __restrict top, const T* __restrict bot, T* __restrict val, int32_t* __restrict taps,
                   int64_t n) {
  using acc_t = opmath_t<T>;
  for (int64_t i = 0; i < n; ++i) {
    const acc_t a = top[2 * i], b = top[2 * i + 1], c = bot[2 * i], d = bot[2 * i + 1];
    acc_t m = a;
    int32_t t = 0;
    bool take = (b > m) | is_nan(b);
    m = take ? b : m;
    t = take ? 1 : t;
    take = (c > m) | is_nan(c);
    m = take ? c : m;
    t = take ? 2 : t;
    take = (d > m) | is_nan(d);
    m = take ? d : m;
    t = take ? 3 : t;
    val[i] = T(m);
    if constexpr (kTaps) taps[i] = t;
  }
}

// The gradient of n staged outputs (a multiple of 16) into the staged input
// rows: every position gets the gradient or zero.
template <class T>
void max2x2_backward_staged(const T* __restrict g, const int32_t* __restrict taps, T* __restrict top,
                            T* __restrict bot, int64_t n) {
  using acc_t = opmath_t<T>;
  for (int64_t i = 0; i < n; ++i) {
    const acc_t v = g[i], zero = 0;
    const int32_t t = taps[i];
    // selects of values into locals: a select feeding a store directly
    // becomes a branch
    const acc_t a = t == 0 ? v : zero, b = t == 1 ? v : zero, c = t == 2 ? v : zero, d = t == 3 ? v : zero;
    top[2 * i] = T(a);
    top[2 * i + 1] = T(b);
    bot[2 * i] = T(c);
    bot[2 * i + 1] = T(d);
  }
}

// x: (N*C planes of H x W) -> y, taps: (N*C planes of OH x OW). NCHW.
template <class T, class Tap, bool kTaps>
void max_forward_nchw(const MaxGeom& g, const T* x, T* y, Tap* taps) {
  using acc_t = opmath_t<T>;
  const Shape& s = g.sh;
  const int64_t in_plane = s.H * s.W, out_plane = s.OH * s.OW;
  parallel_for(0, s.N * s.C, grain_for(in_plane), [&](int64_t b, int64_t e) {
    const int64_t W = g.sh.W, OH = g.sh.OH, OW = g.sh.OW, kW = g.kW, dH = g.dH, dW = g.dW;
    const Span* hs = g.hs.data();
    const Span* ws = g.ws.data();
    const bool fast2 = g.fast2;
    std::optional<Stage2x2<T>> st;
    if (fast2) st.emplace(OW);
    for (int64_t p = b; p < e; ++p) {
      const T* xp = x + p * in_plane;
      T* yp = y + p * out_plane;
      Tap* tp = kTaps ? taps + p * out_plane : nullptr;
      if (fast2) {
        // Note [2x2 staging]
        const int64_t rows = Stage2x2<T>::rows(OW);
        for (int64_t oh0 = 0; oh0 < OH; oh0 += rows) {
          const int64_t nr = std::min(rows, OH - oh0), n = nr * OW;
          for (int64_t r = 0; r < nr; ++r) {
            const T* src = xp + 2 * (oh0 + r) * W;
            std::memcpy(st->top.data() + r * W, src, sizeof(T) * W);
            std::memcpy(st->bot.data() + r * W, src + W, sizeof(T) * W);
          }
          max2x2_staged<T, kTaps>(st->top.data(), st->bot.data(), st->val.data(), st->taps.data(), pad16(n));
          std::memcpy(yp + oh0 * OW, st->val.data(), sizeof(T) * n);
          if constexpr (kTaps)
            for (int64_t i = 0; i < n; ++i) tp[oh0 * OW + i] = static_cast<Tap>(st->taps[i]);
        }
        continue;
      }
      for (int64_t oh = 0; oh < OH; ++oh) {
        const Span sh = hs[oh];
        for (int64_t ow = 0; ow < OW; ++ow) {
          const Span sw = ws[ow];
          acc_t m = max_start<acc_t>();
          int64_t best = (sh.lo < sh.hi && sw.lo < sw.hi) ? sh.lo * kW + sw.lo : int64_t(kNoTap<Tap>);
          for (int64_t kh = sh.lo; kh < sh.hi; ++kh) {
            const T* row = xp + (sh.start + kh * dH) * W + sw.start;
            for (int64_t kw = sw.lo; kw < sw.hi; ++kw) {
              const acc_t v = row[kw * dW];
              if (v > m || is_nan(v)) {
                m = v;
                best = kh * kW + kw;
              }
            }
          }
          yp[oh * OW + ow] = T(m);
          if constexpr (kTaps) tp[oh * OW + ow] = static_cast<Tap>(best);
        }
      }
    }
  });
}

// One tap's row of C channels folded into the running max (yo, to).
template <class T, class Tap, bool kTaps>
inline void max_fold_channels(const T* __restrict xi, T* __restrict yo, Tap* __restrict to, Tap tap, int64_t C) {
  using acc_t = opmath_t<T>;
  for (int64_t c = 0; c < C; ++c) {
    const acc_t v = xi[c], m = yo[c];
    const bool take = (v > m) | is_nan(v);
    yo[c] = take ? xi[c] : yo[c];
    if constexpr (kTaps) to[c] = take ? tap : to[c];
  }
}

// x: (N, H, W, C) -> y, taps: (N, OH, OW, C). Vectorized over C.
template <class T, class Tap, bool kTaps>
void max_forward_cl(const MaxGeom& g, const T* x, T* y, Tap* taps) {
  using acc_t = opmath_t<T>;
  const Shape& s = g.sh;
  parallel_for(0, s.N * s.OH, grain_for(s.OW * s.C * g.kH * g.kW), [&](int64_t b, int64_t e) {
    const int64_t C = g.sh.C, H = g.sh.H, W = g.sh.W, OH = g.sh.OH, OW = g.sh.OW, kW = g.kW, dH = g.dH, dW = g.dW;
    const Span* hs = g.hs.data();
    const Span* ws = g.ws.data();
    for (int64_t r = b; r < e; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      const Span sh = hs[oh];
      for (int64_t ow = 0; ow < OW; ++ow) {
        const Span sw = ws[ow];
        T* yo = y + (r * OW + ow) * C;
        Tap* to = kTaps ? taps + (r * OW + ow) * C : nullptr;
        if (sh.lo >= sh.hi || sw.lo >= sw.hi) {
          std::fill(yo, yo + C, T(max_start<acc_t>()));
          if constexpr (kTaps) std::fill(to, to + C, kNoTap<Tap>);
          continue;
        }
        bool first = true;
        for (int64_t kh = sh.lo; kh < sh.hi; ++kh) {
          const int64_t ih = sh.start + kh * dH;
          for (int64_t kw = sw.lo; kw < sw.hi; ++kw) {
            const T* xi = x + ((n * H + ih) * W + sw.start + kw * dW) * C;
            const Tap tap = static_cast<Tap>(kh * kW + kw);
            if (first) {
              std::copy(xi, xi + C, yo);
              if constexpr (kTaps) std::fill(to, to + C, tap);
              first = false;
            } else {
              max_fold_channels<T, Tap, kTaps>(xi, yo, to, tap, C);
            }
          }
        }
      }
    }
  });
}

/// Offset of each tap from its window's origin, in elements of one plane
/// (NCHW) or of the (H, W, C) image (channels_last).
std::vector<int64_t> tap_offsets(const MaxGeom& g) {
  std::vector<int64_t> off(static_cast<size_t>(g.kH * g.kW));
  const int64_t unit = g.sh.cl ? g.sh.C : 1;
  for (int64_t kh = 0; kh < g.kH; ++kh)
    for (int64_t kw = 0; kw < g.kW; ++kw) off[kh * g.kW + kw] = (kh * g.dH * g.sh.W + kw * g.dW) * unit;
  return off;
}

// gy, taps: (N*C planes of OH x OW) -> gx: (N*C planes of H x W). NCHW.
template <class T, class Tap>
void max_backward_nchw(const MaxGeom& g, const T* gy, const Tap* taps, T* gx) {
  const Shape& s = g.sh;
  const int64_t in_plane = s.H * s.W, out_plane = s.OH * s.OW;
  const std::vector<int64_t> off_v = tap_offsets(g);
  parallel_for(0, s.N * s.C, grain_for(in_plane), [&](int64_t b, int64_t e) {
    const int64_t W = g.sh.W, OH = g.sh.OH, OW = g.sh.OW;
    const Span* hs = g.hs.data();
    const Span* ws = g.ws.data();
    const int64_t* off = off_v.data();
    const bool fast2 = g.fast2, disjoint = g.disjoint;
    std::optional<Stage2x2<T>> st;
    if (fast2) st.emplace(OW);
    for (int64_t p = b; p < e; ++p) {
      const T* gp = gy + p * out_plane;
      const Tap* tp = taps + p * out_plane;
      T* xp = gx + p * in_plane;
      if (fast2) {
        // Note [2x2 staging], in reverse: every input position is written
        // (the gradient or zero), so no zero fill is needed.
        const int64_t rows = Stage2x2<T>::rows(OW);
        for (int64_t oh0 = 0; oh0 < OH; oh0 += rows) {
          const int64_t nr = std::min(rows, OH - oh0), n = nr * OW;
          std::memcpy(st->val.data(), gp + oh0 * OW, sizeof(T) * n);
          for (int64_t i = 0; i < n; ++i) st->taps[i] = tp[oh0 * OW + i];
          max2x2_backward_staged<T>(st->val.data(), st->taps.data(), st->top.data(), st->bot.data(), pad16(n));
          for (int64_t r = 0; r < nr; ++r) {
            T* dst = xp + 2 * (oh0 + r) * W;
            std::memcpy(dst, st->top.data() + r * W, sizeof(T) * W);
            std::memcpy(dst + W, st->bot.data() + r * W, sizeof(T) * W);
          }
        }
        continue;
      }
      std::fill(xp, xp + in_plane, T(0));
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t row0 = hs[oh].start * W;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const Tap t = tp[oh * OW + ow];
          if (t == kNoTap<Tap>) continue;
          T& dst = xp[row0 + ws[ow].start + off[t]];
          if (disjoint)
            dst = gp[oh * OW + ow];
          else
            dst = T(opmath_t<T>(dst) + opmath_t<T>(gp[oh * OW + ow]));
        }
      }
    }
  });
}

// One tap's row of C channels of the input gradient: the output gradient
// where this tap won, else zero.
template <class T, class Tap>
inline void max_route_channels(const T* __restrict go, const Tap* __restrict to, T* __restrict xo, Tap tap,
                               int64_t C) {
  using acc_t = opmath_t<T>;
  for (int64_t c = 0; c < C; ++c) {
    const acc_t v = go[c], zero = 0;
    const acc_t r = to[c] == tap ? v : zero;
    xo[c] = T(r);
  }
}

// gy, taps: (N, OH, OW, C) -> gx: (N, H, W, C).
template <class T, class Tap>
void max_backward_cl(const MaxGeom& g, const T* gy, const Tap* taps, T* gx) {
  const Shape& s = g.sh;
  const std::vector<int64_t> off_v = tap_offsets(g);
  if (!g.tiles) {
    const int64_t total = s.N * s.H * s.W * s.C;
    parallel_for(0, total, kGrainSize, [&](int64_t b, int64_t e) { std::fill(gx + b, gx + e, T(0)); });
  }
  if (g.disjoint) {
    // Output rows own disjoint input rows: parallel over (n, oh). Each valid
    // tap position is written once: the winner's gradient or zero.
    parallel_for(0, s.N * s.OH, grain_for(s.OW * s.C * g.kH * g.kW), [&](int64_t b, int64_t e) {
      const int64_t C = g.sh.C, H = g.sh.H, W = g.sh.W, OH = g.sh.OH, OW = g.sh.OW, kW = g.kW, dH = g.dH, dW = g.dW;
      const Span* hs = g.hs.data();
      const Span* ws = g.ws.data();
      for (int64_t r = b; r < e; ++r) {
        const int64_t n = r / OH, oh = r % OH;
        const Span sh = hs[oh];
        for (int64_t ow = 0; ow < OW; ++ow) {
          const Span sw = ws[ow];
          const T* go = gy + (r * OW + ow) * C;
          const Tap* to = taps + (r * OW + ow) * C;
          for (int64_t kh = sh.lo; kh < sh.hi; ++kh)
            for (int64_t kw = sw.lo; kw < sw.hi; ++kw) {
              T* xo = gx + ((n * H + sh.start + kh * dH) * W + sw.start + kw * dW) * C;
              max_route_channels<T, Tap>(go, to, xo, static_cast<Tap>(kh * kW + kw), C);
            }
        }
      }
    });
    return;
  }
  // Overlapping windows: each image accumulates on one thread.
  parallel_for(0, s.N, grain_for(s.OH * s.OW * s.C), [&](int64_t b, int64_t e) {
    const int64_t C = g.sh.C, H = g.sh.H, W = g.sh.W, OH = g.sh.OH, OW = g.sh.OW;
    const Span* hs = g.hs.data();
    const Span* ws = g.ws.data();
    const int64_t* off = off_v.data();
    for (int64_t n = b; n < e; ++n) {
      T* img = gx + n * H * W * C;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t o = (n * OH + oh) * OW + ow;
          const T* go = gy + o * C;
          const Tap* to = taps + o * C;
          T* origin = img + (hs[oh].start * W + ws[ow].start) * C;
          for (int64_t c = 0; c < C; ++c) {
            const Tap t = to[c];
            if (t == kNoTap<Tap>) continue;
            T& dst = origin[off[t] + c];
            dst = T(opmath_t<T>(dst) + opmath_t<T>(go[c]));
          }
        }
    }
  });
}

// taps -> PyTorch's flat indices ih * W + iw (int64, same layout).
template <class Tap>
void taps_to_indices(const MaxGeom& g, const Tap* taps, int64_t* idx) {
  const Shape& s = g.sh;
  const int64_t planes = s.N * s.C, out_plane = s.OH * s.OW;
  auto flat = [&](int64_t oh, int64_t ow, Tap t) -> int64_t {
    if (t == kNoTap<Tap>) return -1;
    return (g.hs[oh].start + (t / g.kW) * g.dH) * s.W + g.ws[ow].start + (t % g.kW) * g.dW;
  };
  if (!s.cl) {
    parallel_for(0, planes, grain_for(out_plane), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p)
        for (int64_t oh = 0; oh < s.OH; ++oh)
          for (int64_t ow = 0; ow < s.OW; ++ow) {
            const int64_t o = p * out_plane + oh * s.OW + ow;
            idx[o] = flat(oh, ow, taps[o]);
          }
    });
    return;
  }
  parallel_for(0, s.N * s.OH, grain_for(s.OW * s.C), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      for (int64_t ow = 0; ow < s.OW; ++ow)
        for (int64_t c = 0; c < s.C; ++c) {
          const int64_t o = (r * s.OW + ow) * s.C + c;
          idx[o] = flat(r % s.OH, ow, taps[o]);
        }
  });
}

template <class F>
void dispatch_tap(const MaxGeom& g, F&& f) {
  if (g.wide)
    f(int32_t{});
  else
    f(uint8_t{});
}

#ifdef BRISK_HAVE_CUDA
cuda::detail::PoolDims cuda_dims(const Shape& s) {
  cuda::detail::PoolDims d;
  d.N = s.N, d.C = s.C, d.H = s.H, d.W = s.W, d.OH = s.OH, d.OW = s.OW;
  d.channels_last = s.cl;
  return d;
}

cuda::detail::MaxPoolParams cuda_params(const MaxGeom& g) {
  cuda::detail::MaxPoolParams p;
  p.d = cuda_dims(g.sh);
  p.kH = g.kH, p.kW = g.kW, p.sH = g.sH, p.sW = g.sW, p.pH = g.pH, p.pW = g.pW, p.dH = g.dH, p.dW = g.dW;
  return p;
}
#endif

/// Forward kernel: output (and taps when `taps` is non-null). On CUDA the
/// taps are PyTorch's int64 flat indices (the backward gathers with them).
Tensor max_forward(const MaxGeom& g, const Tensor& x, Tensor* taps) {
  const Shape& s = g.sh;
  const Tensor xin = in_layout(x, s.cl);
  Tensor y = alloc(s.out_sizes, s.cl, x.dtype(), x.device());
#ifdef BRISK_HAVE_CUDA
  if (x.is_cuda()) {
    if (taps) *taps = alloc(s.out_sizes, s.cl, kInt64, x.device());
    cuda::detail::max_pool2d_forward(xin, y, taps ? *taps : Tensor(), cuda_params(g));
    return y;
  }
#endif
  if (taps) *taps = alloc(s.out_sizes, s.cl, g.wide ? kInt32 : kUInt8, x.device());
  if (y.numel() == 0) return y;
  BRISK_DISPATCH_NUMERIC(x.dtype(), "max_pool2d", [&] {
    dispatch_tap(g, [&](auto tap0) {
      using Tap = decltype(tap0);
      const scalar_t* xp = xin.data_ptr<scalar_t>();
      scalar_t* yp = y.data_ptr<scalar_t>();
      if (taps) {
        Tap* tp = reinterpret_cast<Tap*>(taps->data_ptr());
        s.cl ? max_forward_cl<scalar_t, Tap, true>(g, xp, yp, tp) : max_forward_nchw<scalar_t, Tap, true>(g, xp, yp, tp);
      } else {
        s.cl ? max_forward_cl<scalar_t, Tap, false>(g, xp, yp, nullptr)
             : max_forward_nchw<scalar_t, Tap, false>(g, xp, yp, nullptr);
      }
    });
  });
  return y;
}

Tensor max_indices(const MaxGeom& g, const Tensor& taps) {
  if (on_cuda(taps)) return taps;  // already flat indices
  Tensor idx = alloc(g.sh.out_sizes, g.sh.cl, kInt64, taps.device());
  if (idx.numel() == 0) return idx;
  dispatch_tap(g, [&](auto tap0) {
    using Tap = decltype(tap0);
    taps_to_indices<Tap>(g, reinterpret_cast<const Tap*>(taps.data_ptr()), idx.data_ptr<int64_t>());
  });
  return idx;
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
#ifdef BRISK_HAVE_CUDA
    if (gy.is_cuda()) cuda::detail::max_pool2d_backward(gin, taps, gx, cuda_params(g));
#endif
    if (gx.numel() != 0 && !on_cuda(gy)) {
      BRISK_DISPATCH_FLOAT(gy.dtype(), "max_pool2d_backward", [&] {
        dispatch_tap(g, [&](auto tap0) {
          using Tap = decltype(tap0);
          const Tap* tp = reinterpret_cast<const Tap*>(taps.data_ptr());
          s.cl ? max_backward_cl<scalar_t, Tap>(g, gin.data_ptr<scalar_t>(), tp, gx.data_ptr<scalar_t>())
               : max_backward_nchw<scalar_t, Tap>(g, gin.data_ptr<scalar_t>(), tp, gx.data_ptr<scalar_t>());
        });
      });
    }
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
  if (!on_cuda(x)) detail::check_cpu_kernel(x, op);
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

/// One output's window along a dim: input [lo, hi), and its factor of the
/// divisor (the window's extent, padding included or not).
struct Range {
  int64_t lo, hi, ext;
};

struct AvgGeom {
  Shape sh;
  std::vector<Range> hs, ws;
  std::optional<int64_t> divisor;  // divisor_override
  bool adaptive;
  // avg_pool2d's kernel, stride, padding, count_include_pad (the CUDA kernels
  // compute the windows themselves)
  int64_t kH = 1, kW = 1, sH = 1, sW = 1, pH = 0, pW = 0;
  bool count_pad = true;
  bool disjoint, tiles, fast2;
};

/// avg_pool2d's windows: [o*s - p, o*s - p + k) clipped to the padded input
/// for the divisor (count_include_pad) and to the input for the sum.
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

template <class acc_t>
acc_t avg_divisor(const AvgGeom& g, const Range& rh, const Range& rw) {
  return g.divisor ? acc_t(*g.divisor) : acc_t(rh.ext * rw.ext);
}

// x: (N*C planes of H x W) -> y (planes of OH x OW). NCHW.
template <class T>
void avg_forward_nchw(const AvgGeom& g, const T* x, T* y) {
  using acc_t = opmath_t<T>;
  const Shape& s = g.sh;
  const int64_t in_plane = s.H * s.W, out_plane = s.OH * s.OW;
  parallel_for(0, s.N * s.C, grain_for(in_plane), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* xp = x + p * in_plane;
      T* yp = y + p * out_plane;
      if (g.fast2) {
        for (int64_t oh = 0; oh < s.OH; ++oh) {
          const T* r0 = xp + 2 * oh * s.W;
          const T* r1 = r0 + s.W;
          T* yo = yp + oh * s.OW;
          for (int64_t ow = 0; ow < s.OW; ++ow)
            yo[ow] = T((((acc_t(r0[2 * ow]) + acc_t(r0[2 * ow + 1])) + acc_t(r1[2 * ow])) + acc_t(r1[2 * ow + 1])) /
                       acc_t(4));
        }
        continue;
      }
      if (s.OH == 1 && s.OW == 1 && g.tiles) {
        // Global average: one vectorizable sum per plane.
        constexpr int kLanes = 16;
        acc_t lane[kLanes] = {};
        int64_t i = 0;
        for (; i + kLanes <= in_plane; i += kLanes)
          for (int j = 0; j < kLanes; ++j) lane[j] += acc_t(xp[i + j]);
        acc_t sum = 0;
        for (int j = 0; j < kLanes; ++j) sum += lane[j];
        for (; i < in_plane; ++i) sum += acc_t(xp[i]);
        yp[0] = T(sum / avg_divisor<acc_t>(g, g.hs[0], g.ws[0]));
        continue;
      }
      for (int64_t oh = 0; oh < s.OH; ++oh) {
        const Range& rh = g.hs[oh];
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          const Range& rw = g.ws[ow];
          acc_t sum = 0;
          for (int64_t ih = rh.lo; ih < rh.hi; ++ih) {
            const T* row = xp + ih * s.W;
            for (int64_t iw = rw.lo; iw < rw.hi; ++iw) sum += acc_t(row[iw]);
          }
          yp[oh * s.OW + ow] = T(sum / avg_divisor<acc_t>(g, rh, rw));
        }
      }
    }
  });
}

// x: (N, H, W, C) -> y: (N, OH, OW, C). Vectorized over C.
template <class T>
void avg_forward_cl(const AvgGeom& g, const T* x, T* y) {
  using acc_t = opmath_t<T>;
  const Shape& s = g.sh;
  const int64_t C = s.C;
  parallel_for(0, s.N * s.OH, grain_for(s.OW * C * 4), [&](int64_t b, int64_t e) {
    std::vector<acc_t> acc(static_cast<size_t>(C));
    for (int64_t r = b; r < e; ++r) {
      const int64_t n = r / s.OH, oh = r % s.OH;
      const Range& rh = g.hs[oh];
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        const Range& rw = g.ws[ow];
        std::fill(acc.begin(), acc.end(), acc_t(0));
        for (int64_t ih = rh.lo; ih < rh.hi; ++ih)
          for (int64_t iw = rw.lo; iw < rw.hi; ++iw) {
            const T* xi = x + ((n * s.H + ih) * s.W + iw) * C;
            for (int64_t c = 0; c < C; ++c) acc[c] += acc_t(xi[c]);
          }
        const acc_t div = avg_divisor<acc_t>(g, rh, rw);
        T* yo = y + (r * s.OW + ow) * C;
        for (int64_t c = 0; c < C; ++c) yo[c] = T(acc[c] / div);
      }
    }
  });
}

// gy: (planes of OH x OW) -> gx: (planes of H x W). NCHW.
template <class T>
void avg_backward_nchw(const AvgGeom& g, const T* gy, T* gx) {
  using acc_t = opmath_t<T>;
  const Shape& s = g.sh;
  const int64_t in_plane = s.H * s.W, out_plane = s.OH * s.OW;
  parallel_for(0, s.N * s.C, grain_for(in_plane), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* gp = gy + p * out_plane;
      T* xp = gx + p * in_plane;
      if (g.fast2) {
        for (int64_t oh = 0; oh < s.OH; ++oh) {
          T* r0 = xp + 2 * oh * s.W;
          T* r1 = r0 + s.W;
          const T* go = gp + oh * s.OW;
          for (int64_t ow = 0; ow < s.OW; ++ow) {
            const T v = T(acc_t(go[ow]) / acc_t(4));
            r0[2 * ow] = v;
            r0[2 * ow + 1] = v;
            r1[2 * ow] = v;
            r1[2 * ow + 1] = v;
          }
        }
        continue;
      }
      if (!g.tiles) std::fill(xp, xp + in_plane, T(0));
      for (int64_t oh = 0; oh < s.OH; ++oh) {
        const Range& rh = g.hs[oh];
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          const Range& rw = g.ws[ow];
          const acc_t v = acc_t(gp[oh * s.OW + ow]) / avg_divisor<acc_t>(g, rh, rw);
          for (int64_t ih = rh.lo; ih < rh.hi; ++ih) {
            T* row = xp + ih * s.W;
            if (g.disjoint)
              for (int64_t iw = rw.lo; iw < rw.hi; ++iw) row[iw] = T(v);
            else
              for (int64_t iw = rw.lo; iw < rw.hi; ++iw) row[iw] = T(acc_t(row[iw]) + v);
          }
        }
      }
    }
  });
}

// gy: (N, OH, OW, C) -> gx: (N, H, W, C).
template <class T>
void avg_backward_cl(const AvgGeom& g, const T* gy, T* gx) {
  using acc_t = opmath_t<T>;
  const Shape& s = g.sh;
  const int64_t C = s.C;
  if (!g.tiles) {
    const int64_t total = s.N * s.H * s.W * C;
    parallel_for(0, total, kGrainSize, [&](int64_t b, int64_t e) { std::fill(gx + b, gx + e, T(0)); });
  }
  // Disjoint windows: output rows own disjoint input rows. Otherwise one
  // thread per image accumulates.
  const int64_t items = g.disjoint ? s.N * s.OH : s.N;
  const int64_t rows_per_item = g.disjoint ? 1 : s.OH;
  parallel_for(0, items, grain_for(rows_per_item * s.OW * C * 4), [&](int64_t b, int64_t e) {
    std::vector<acc_t> v(static_cast<size_t>(C));
    for (int64_t it = b; it < e; ++it) {
      for (int64_t rr = 0; rr < rows_per_item; ++rr) {
        const int64_t r = it * rows_per_item + rr;  // (n, oh) row index
        const int64_t n = r / s.OH, oh = r % s.OH;
        const Range& rh = g.hs[oh];
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          const Range& rw = g.ws[ow];
          const acc_t div = avg_divisor<acc_t>(g, rh, rw);
          const T* go = gy + (r * s.OW + ow) * C;
          for (int64_t c = 0; c < C; ++c) v[c] = acc_t(go[c]) / div;
          for (int64_t ih = rh.lo; ih < rh.hi; ++ih)
            for (int64_t iw = rw.lo; iw < rw.hi; ++iw) {
              T* xo = gx + ((n * s.H + ih) * s.W + iw) * C;
              if (g.disjoint)
                for (int64_t c = 0; c < C; ++c) xo[c] = T(v[c]);
              else
                for (int64_t c = 0; c < C; ++c) xo[c] = T(acc_t(xo[c]) + v[c]);
            }
        }
      }
    }
  });
}

#ifdef BRISK_HAVE_CUDA
cuda::detail::AvgPoolParams cuda_params(const AvgGeom& g) {
  cuda::detail::AvgPoolParams p;
  p.d = cuda_dims(g.sh);
  p.adaptive = g.adaptive;
  p.kH = g.kH, p.kW = g.kW, p.sH = g.sH, p.sW = g.sW, p.pH = g.pH, p.pW = g.pW;
  p.count_include_pad = g.count_pad;
  p.divisor_override = g.divisor.value_or(0);
  return p;
}
#endif

const char* avg_node(const AvgGeom& g) { return g.adaptive ? "AdaptiveAvgPool2DBackward0" : "AvgPool2DBackward0"; }
const char* avg_node2(const AvgGeom& g) {
  return g.adaptive ? "AdaptiveAvgPool2DBackwardBackward0" : "AvgPool2DBackwardBackward0";
}

Tensor avg_backward(const Tensor& gy, const AvgGeom& g);

/// int64 average pooling, as PyTorch's CPU kernel computes it: the window's
/// sum wraps around, then divides with C++'s truncation toward zero.
/// x: (N*C planes of H x W) -> y (planes of OH x OW). NCHW.
void avg_forward_int64(const AvgGeom& g, const int64_t* x, int64_t* y) {
  const Shape& s = g.sh;
  const int64_t in_plane = s.H * s.W, out_plane = s.OH * s.OW;
  parallel_for(0, s.N * s.C, grain_for(in_plane), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          const Range &rh = g.hs[oh], &rw = g.ws[ow];
          uint64_t sum = 0;  // wraps (a signed sum would overflow: undefined)
          for (int64_t ih = rh.lo; ih < rh.hi; ++ih)
            for (int64_t iw = rw.lo; iw < rw.hi; ++iw) sum += static_cast<uint64_t>(x[p * in_plane + ih * s.W + iw]);
          y[p * out_plane + oh * s.OW + ow] = static_cast<int64_t>(sum) / avg_divisor<int64_t>(g, rh, rw);
        }
  });
}

/// The forward, recorded; its backward is avg_backward (and vice versa), so
/// any order of derivative works.
Tensor avg_forward(const Tensor& x, const AvgGeom& g) {
  const Shape& s = g.sh;
  Tensor y;
  {
    NoGradGuard ng;
    if (x.dtype() == kInt64) {  // CPU only (check_pool_input)
      const Tensor xin = x.contiguous();
      y = alloc(s.out_sizes, false, kInt64, x.device());
      if (y.numel() != 0) avg_forward_int64(g, xin.data_ptr<int64_t>(), y.data_ptr<int64_t>());
      return s.cl ? y.contiguous(kChannelsLast) : y;
    }
    const Tensor xin = in_layout(x, s.cl);
    y = alloc(s.out_sizes, s.cl, x.dtype(), x.device());
#ifdef BRISK_HAVE_CUDA
    if (x.is_cuda()) cuda::detail::avg_pool2d_forward(xin, y, cuda_params(g));
#endif
    if (y.numel() != 0 && !on_cuda(x))
      BRISK_DISPATCH_FLOAT(x.dtype(), g.adaptive ? "adaptive_avg_pool2d" : "avg_pool2d", [&] {
        s.cl ? avg_forward_cl<scalar_t>(g, xin.data_ptr<scalar_t>(), y.data_ptr<scalar_t>())
             : avg_forward_nchw<scalar_t>(g, xin.data_ptr<scalar_t>(), y.data_ptr<scalar_t>());
      });
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
#ifdef BRISK_HAVE_CUDA
    if (gy.is_cuda()) cuda::detail::avg_pool2d_backward(gin, gx, cuda_params(g));
#endif
    if (gx.numel() != 0 && !on_cuda(gy))
      BRISK_DISPATCH_FLOAT(gy.dtype(), g.adaptive ? "adaptive_avg_pool2d_backward" : "avg_pool2d_backward", [&] {
        s.cl ? avg_backward_cl<scalar_t>(g, gin.data_ptr<scalar_t>(), gx.data_ptr<scalar_t>())
             : avg_backward_nchw<scalar_t>(g, gin.data_ptr<scalar_t>(), gx.data_ptr<scalar_t>());
      });
  }
  if (autograd::should_record(gy))
    autograd::record(avg_node2(g), {gx}, {gy}, {},
                     [g](autograd::BackwardCtx& c) -> TensorList { return {avg_forward(c.grad(), g)}; });
  return gx;
}

Tensor avg_pool_impl(const char* op, const Tensor& x, const AvgPool2dOptions& o, bool one_d) {
  BRISK_PROFILE_OP(op, x);
  if (!on_cuda(x)) detail::check_cpu_kernel(x, op);
  check_pool_input(op, x, one_d, PoolInts::Avg);
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
  if (!on_cuda(x)) detail::check_cpu_kernel(x, op);
  check_pool_input(op, x, false);
  const auto os = resolve(op, "output_size", o.output_size(), 1);
  BRISK_CHECK(os[0] > 0 && os[1] > 0, op, "output_size must be positive, got ", pair_str(os[0], os[1], false));
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

namespace {
const char* bool_str(bool b) { return b ? "true" : "false"; }
}  // namespace

MaxPool2d::MaxPool2d(const MaxPool2dOptions& o) : Module("MaxPool2d"), options(o) {}
Tensor MaxPool2d::forward(const Tensor& x) { return F::max_pool2d(x, options); }
std::tuple<Tensor, Tensor> MaxPool2d::forward_with_indices(const Tensor& x) {
  return F::max_pool2d_with_indices(x, options);
}
std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + options.kernel_size().str() + ", stride=" + options.stride().str() +
         ", padding=" + options.padding().str() + ", dilation=" + options.dilation().str() +
         ", ceil_mode=" + bool_str(options.ceil_mode());
}

MaxPool1d::MaxPool1d(const MaxPool1dOptions& o) : Module("MaxPool1d"), options(o) {}
Tensor MaxPool1d::forward(const Tensor& x) { return F::max_pool1d(x, options); }
std::tuple<Tensor, Tensor> MaxPool1d::forward_with_indices(const Tensor& x) {
  return F::max_pool1d_with_indices(x, options);
}
std::string MaxPool1d::extra_repr() const {
  return "kernel_size=" + options.kernel_size().str() + ", stride=" + options.stride().str() +
         ", padding=" + options.padding().str() + ", dilation=" + options.dilation().str() +
         ", ceil_mode=" + bool_str(options.ceil_mode());
}

AvgPool2d::AvgPool2d(const AvgPool2dOptions& o) : Module("AvgPool2d"), options(o) {}
Tensor AvgPool2d::forward(const Tensor& x) { return F::avg_pool2d(x, options); }
std::string AvgPool2d::extra_repr() const {
  std::string s = "kernel_size=" + options.kernel_size().str() + ", stride=" + options.stride().str() +
                  ", padding=" + options.padding().str();
  if (options.ceil_mode()) s += ", ceil_mode=true";
  if (!options.count_include_pad()) s += ", count_include_pad=false";
  if (options.divisor_override()) s += ", divisor_override=" + std::to_string(*options.divisor_override());
  return s;
}

AvgPool1d::AvgPool1d(const AvgPool1dOptions& o) : Module("AvgPool1d"), options(o) {}
Tensor AvgPool1d::forward(const Tensor& x) { return F::avg_pool1d(x, options); }
std::string AvgPool1d::extra_repr() const {
  std::string s = "kernel_size=" + options.kernel_size().str() + ", stride=" + options.stride().str() +
                  ", padding=" + options.padding().str();
  if (options.ceil_mode()) s += ", ceil_mode=true";
  if (!options.count_include_pad()) s += ", count_include_pad=false";
  return s;
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const AdaptiveAvgPool2dOptions& o) : Module("AdaptiveAvgPool2d"), options(o) {}
Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return F::adaptive_avg_pool2d(x, options); }
std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + options.output_size().str(); }

}  // namespace brisk::nn
