// Row reductions shared by the row kernels (softmax, log_softmax,
// layer_norm/rms_norm, cross_entropy): sums in kLanes independent
// accumulators of the compute type over chunks of kChunk values, the chunks
// added in double (so float32 rows of any length keep float32 speed and
// near-double accuracy), a NaN-propagating row maximum, and the
// (outer, n, inner) view of a tensor around the reduced dim. Compiled inside
// each ISA variant's namespace, as loops.h.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>

#include "brisk/tensor.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace rows {

constexpr int64_t kChunk = 2048;  // values per accumulation chunk
template <class M>
constexpr int kLanes = 128 / sizeof(M);  // four 256-bit vectors of accumulators

constexpr int64_t kTileWidth = 256;  // columns per task when dim is not the innermost

/// A tensor seen around one dim: outer rows, n values along dim, inner columns.
struct DimLayout {
  int64_t outer = 1, n = 1, inner = 1;
};
inline DimLayout dim_layout(const Tensor& t, int64_t dim) {
  DimLayout l;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim)
      l.outer *= t.size(d);
    else if (d == dim)
      l.n = t.size(d);
    else
      l.inner *= t.size(d);
  }
  return l;
}

/// The larger of a and b; NaN wins.
template <class M>
inline M max_nan(M a, M b) {
  return ((b > a) | (b != b)) ? b : a;
}

/// max over p[0, n) (NaN wins), -inf for n == 0.
template <class M>
inline M row_max(const M* __restrict p, int64_t n) {
  constexpr int L = kLanes<M>;
  M lane[L];
  for (int k = 0; k < L; ++k) lane[k] = -std::numeric_limits<M>::infinity();
  int64_t i = 0;
  for (; i + L <= n; i += L)
#pragma omp simd
    for (int k = 0; k < L; ++k) lane[k] = max_nan(lane[k], p[i + k]);
  for (int k = 0; i < n; ++i, ++k) lane[k] = max_nan(lane[k], p[i]);
  M mx = lane[0];
  for (int k = 1; k < L; ++k) mx = max_nan(mx, lane[k]);
  return mx;
}

/// sum of f(i) over [0, n).
template <class M, class F>
inline double row_sum(int64_t n, const F& f) {
  constexpr int L = kLanes<M>;
  double total = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t c1 = std::min(n, c0 + kChunk);
    M lane[L] = {};
    int64_t i = c0;
    for (; i + L <= c1; i += L)
#pragma omp simd
      for (int k = 0; k < L; ++k) lane[k] += f(i + k);
    for (int k = 0; i < c1; ++i, ++k) lane[k] += f(i);
    M part = 0;
    for (int k = 0; k < L; ++k) part += lane[k];
    total += double(part);
  }
  return total;
}

/// The sums of f(i) and of g(i) over [0, n) in one pass.
template <class M, class F, class G>
inline void row_sum2(int64_t n, const F& f, const G& g, double& out_f, double& out_g) {
  constexpr int L = kLanes<M>;
  double tf = 0, tg = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t c1 = std::min(n, c0 + kChunk);
    M lf[L] = {}, lg[L] = {};
    int64_t i = c0;
    for (; i + L <= c1; i += L)
#pragma omp simd
      for (int k = 0; k < L; ++k) {
        lf[k] += f(i + k);
        lg[k] += g(i + k);
      }
    for (int k = 0; i < c1; ++i, ++k) {
      lf[k] += f(i);
      lg[k] += g(i);
    }
    M pf = 0, pg = 0;
    for (int k = 0; k < L; ++k) {
      pf += lf[k];
      pg += lg[k];
    }
    tf += double(pf);
    tg += double(pg);
  }
  out_f = tf;
  out_g = tg;
}

/// dst[i] = M(src[i]).
template <class T, class M>
inline void load_row(const T* __restrict src, M* __restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<M>(src[i]);
}

}  // namespace rows
}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
