// The CPU pooling kernels (rows max_pool2d, max_pool2d_indices,
// max_pool2d_backward, avg_pool2d, avg_pool2d_backward of core/dispatch.h;
// the plan, made by the front end in src/nn/pooling.cpp, is in
// core/pool_plan.h): direct loops over NCHW or channels_last memory
// (Note [Pooling layouts] in nn/pooling.cpp).
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
#include <type_traits>
#include <vector>

#include "brisk/tensor.h"
#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/pool_plan.h"
#include "core/tensor_create.h"

namespace brisk::cpu {
namespace BRISK_CPU_ISA {
namespace {

using pool::AvgPlan;
using pool::MaxPlan;
using pool::Range;
using pool::Shape;
using pool::Span;

/// Items per parallel chunk so that a chunk holds about kGrainSize elements of work.
int64_t grain_for(int64_t work_per_item) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_item)); }

Tensor alloc(IntArrayRef sizes, bool cl, ScalarType dt, Device dev) {
  if (!cl) return detail::make_tensor(sizes, {}, dt, dev);
  const DimVector st = detail::channels_last_strides(sizes);
  return detail::make_tensor(sizes, st, dt, dev);
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
// uint8 Tap* may alias anything, so sizes read from MaxPlan inside a loop
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
  if constexpr (sizeof(T) == 2 && !std::is_integral_v<T>) {
    // float16/bfloat16: the gradient's bits are copied or zeroed (exact, as
    // the round trip through float is); no conversions, so the loop
    // vectorizes (the converting loop ran 8x slower than float32's)
    const auto* gb = reinterpret_cast<const uint16_t*>(g);
    auto* tb = reinterpret_cast<uint16_t*>(top);
    auto* bb = reinterpret_cast<uint16_t*>(bot);
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t v = gb[i], zero = 0;
      const int32_t t = taps[i];
      const uint16_t a = t == 0 ? v : zero, b = t == 1 ? v : zero, c = t == 2 ? v : zero, d = t == 3 ? v : zero;
      tb[2 * i] = a;
      tb[2 * i + 1] = b;
      bb[2 * i] = c;
      bb[2 * i + 1] = d;
    }
    return;
  }
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
void max_forward_nchw(const MaxPlan& g, const T* x, T* y, Tap* taps) {
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
void max_forward_cl(const MaxPlan& g, const T* x, T* y, Tap* taps) {
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
std::vector<int64_t> tap_offsets(const MaxPlan& g) {
  std::vector<int64_t> off(static_cast<size_t>(g.kH * g.kW));
  const int64_t unit = g.sh.cl ? g.sh.C : 1;
  for (int64_t kh = 0; kh < g.kH; ++kh)
    for (int64_t kw = 0; kw < g.kW; ++kw) off[kh * g.kW + kw] = (kh * g.dH * g.sh.W + kw * g.dW) * unit;
  return off;
}

// gy, taps: (N*C planes of OH x OW) -> gx: (N*C planes of H x W). NCHW.
template <class T, class Tap>
void max_backward_nchw(const MaxPlan& g, const T* gy, const Tap* taps, T* gx) {
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
void max_backward_cl(const MaxPlan& g, const T* gy, const Tap* taps, T* gx) {
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
void taps_to_indices(const MaxPlan& g, const Tap* taps, int64_t* idx) {
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
void dispatch_tap(const MaxPlan& g, F&& f) {
  if (g.wide)
    f(int32_t{});
  else
    f(uint8_t{});
}

template <class acc_t>
acc_t avg_divisor(const AvgPlan& g, const Range& rh, const Range& rw) {
  return g.divisor ? acc_t(*g.divisor) : acc_t(rh.ext * rw.ext);
}

// x: (N*C planes of H x W) -> y (planes of OH x OW). NCHW.
template <class T>
void avg_forward_nchw(const AvgPlan& g, const T* x, T* y) {
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
void avg_forward_cl(const AvgPlan& g, const T* x, T* y) {
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
void avg_backward_nchw(const AvgPlan& g, const T* gy, T* gx) {
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
void avg_backward_cl(const AvgPlan& g, const T* gy, T* gx) {
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

/// int64 average pooling, as PyTorch's CPU kernel computes it: the window's
/// sum wraps around, then divides with C++'s truncation toward zero.
/// x: (N*C planes of H x W) -> y (planes of OH x OW). NCHW.
void avg_forward_int64(const AvgPlan& g, const int64_t* x, int64_t* y) {
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

// ---- the kernels of the table ----------------------------------------------------------

void max_pool_kernel(const MaxPlan& g, const Tensor& xin, const Tensor& y, Tensor* taps) {
  const Shape& s = g.sh;
  if (taps) *taps = alloc(s.out_sizes, s.cl, g.wide ? kInt32 : kUInt8, xin.device());
  if (y.numel() == 0) return;
  BRISK_DISPATCH_NUMERIC(xin.dtype(), "max_pool2d", [&] {
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
}

Tensor max_indices_kernel(const MaxPlan& g, const Tensor& taps) {
  Tensor idx = alloc(g.sh.out_sizes, g.sh.cl, kInt64, taps.device());
  if (idx.numel() == 0) return idx;
  dispatch_tap(g, [&](auto tap0) {
    using Tap = decltype(tap0);
    taps_to_indices<Tap>(g, reinterpret_cast<const Tap*>(taps.data_ptr()), idx.data_ptr<int64_t>());
  });
  return idx;
}

void max_pool_backward_kernel(const MaxPlan& g, const Tensor& gin, const Tensor& taps, const Tensor& gx) {
  const Shape& s = g.sh;
  if (gx.numel() == 0) return;
  BRISK_DISPATCH_FLOAT(gin.dtype(), "max_pool2d_backward", [&] {
    dispatch_tap(g, [&](auto tap0) {
      using Tap = decltype(tap0);
      const Tap* tp = reinterpret_cast<const Tap*>(taps.data_ptr());
      s.cl ? max_backward_cl<scalar_t, Tap>(g, gin.data_ptr<scalar_t>(), tp, gx.data_ptr<scalar_t>())
           : max_backward_nchw<scalar_t, Tap>(g, gin.data_ptr<scalar_t>(), tp, gx.data_ptr<scalar_t>());
    });
  });
}

/// int64 inputs (average pooling only) come NCHW-contiguous whatever the
/// plan's layout: the front end converts the result.
void avg_pool_kernel(const AvgPlan& g, const Tensor& xin, const Tensor& y) {
  const Shape& s = g.sh;
  if (y.numel() == 0) return;
  if (xin.dtype() == kInt64) {
    BRISK_INTERNAL_ASSERT(xin.is_contiguous() && y.is_contiguous(), "avg_pool2d: int64 tensors must be NCHW");
    avg_forward_int64(g, xin.data_ptr<int64_t>(), y.data_ptr<int64_t>());
    return;
  }
  BRISK_DISPATCH_FLOAT(xin.dtype(), g.adaptive ? "adaptive_avg_pool2d" : "avg_pool2d", [&] {
    s.cl ? avg_forward_cl<scalar_t>(g, xin.data_ptr<scalar_t>(), y.data_ptr<scalar_t>())
         : avg_forward_nchw<scalar_t>(g, xin.data_ptr<scalar_t>(), y.data_ptr<scalar_t>());
  });
}

void avg_pool_backward_kernel(const AvgPlan& g, const Tensor& gin, const Tensor& gx) {
  const Shape& s = g.sh;
  if (gx.numel() == 0) return;
  BRISK_DISPATCH_FLOAT(gin.dtype(), g.adaptive ? "adaptive_avg_pool2d_backward" : "avg_pool2d_backward", [&] {
    s.cl ? avg_backward_cl<scalar_t>(g, gin.data_ptr<scalar_t>(), gx.data_ptr<scalar_t>())
         : avg_backward_nchw<scalar_t>(g, gin.data_ptr<scalar_t>(), gx.data_ptr<scalar_t>());
  });
}

}  // namespace

void register_pooling_kernels() {
  // max pooling takes uint8, int32 and int64 too (as PyTorch's CPU kernels);
  // average pooling int64 (forward); backwards floating only
  const uint32_t fl = dtype_mask({kFloat, kDouble, kHalf, kBFloat16});
  register_kernel<OpId::max_pool2d>(kCPU, max_pool_kernel, fl | dtype_mask({kUInt8, kInt8, kInt16, kInt32, kInt64}));
  register_kernel<OpId::max_pool2d_indices>(kCPU, max_indices_kernel, dtype_mask({kUInt8, kInt32}));
  register_kernel<OpId::max_pool2d_backward>(kCPU, max_pool_backward_kernel, fl);
  register_kernel<OpId::avg_pool2d>(kCPU, avg_pool_kernel, fl | dtype_mask({kInt64}));
  register_kernel<OpId::avg_pool2d_backward>(kCPU, avg_pool_backward_kernel, fl);
}

}  // namespace BRISK_CPU_ISA
}  // namespace brisk::cpu
