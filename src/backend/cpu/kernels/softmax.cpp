// CPU kernels of softmax and log_softmax along one dim, forward and backward
// (DimFn / DimBackwardFn rows of the kernel table).
//
// Note [Row ops on the CPU]
// The front end passes contiguous tensors of one shape and dtype; around
// `dim` they are viewed as (outer, n, inner). With inner == 1 every row is
// contiguous: threads take whole rows, and each row is read from memory
// once and written once (the later passes over a row find it in cache):
//   softmax:        max; y = exp(x - max) and its sum; y *= 1 / sum
//   log_softmax:    max; sum of exp(x - max); y = x - max - log(sum)
//   softmax bwd:    dot = sum(g * y); gx = y * (g - dot)
//   log_softmax bwd: s = sum(g); gx = g - exp(y) * s
// The contiguous forward runs in explicit vectors with Sleef's exp (Note
// [Softmax rows in vectors]); elsewhere exp is exp_vec
// (src/backend/cpu/vec_exp.h), so that the loops vectorize. Sums
// run in kLanes independent accumulators of the compute type over chunks of
// kChunk values, chunks added in double: a row of 4096 float32 values sums
// to ~1e-7 relative. float16/bfloat16 rows are converted to a float32 buffer
// first and computed in float32; float64 in float64 throughout.
// With inner > 1 a task is a tile of up to kTileWidth columns that walks the
// n rows together (the column loop vectorizes).
// The exp loops run at twice the rate in 512-bit vectors (0.23 against
// 0.44 ns per exp on the dev VM's AVX-512 core): this file's avx512 variant
// prefers them over the 256 bits the other kernels keep.
#if defined(__AVX512F__)
#pragma GCC target("prefer-vector-width=512")
#endif
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "backend/cpu/vec_exp.h"
#include "backend/cpu/vec_math.h"
#include "backend/cpu/row_reduce.h"
#include "core/dispatch.h"
#include "core/parallel.h"

#ifndef BRISK_CPU_ISA
#error "kernel files are compiled once per ISA"
#endif

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

using namespace rows;

using ::brisk::cpu::exp_vec;


// Note [Softmax rows in vectors]
// A contiguous row's forward (softmax, log_softmax) runs in the variant's
// vectors (vec_math.h) with Sleef's exp (1.0 ulp, the exp PyTorch's CPU
// kernels call), not the loops over exp_vec that GCC vectorizes: on a Zen 4
// core exp_vec ran at 0.42 ns per float against Sleef's 0.30, the
// NaN-aware maximum kept its 32 lanes in memory, and its last fold was a
// scalar walk with a compare and a NaN test per lane (a tenth of a row of
// 512). Sums: lane k of the kLanes accumulators takes the values i with
// i % kLanes == k of a chunk (kLanes / N vectors of N lanes, as row_sum),
// a chunk's lanes are added as a tree (5 dependent adds where row_sum's
// walk in order has 31; within the noise of a row of 512 when measured
// alone), chunks in double.
// The maximum is the same in any order, up to which zero a row whose
// maximum is both +0 and -0 returns (x - max and its exp cannot show it)
// and which NaN a row of several NaNs returns.
template <class M>
inline M row_max_v(const M* __restrict x, int64_t n) {
  using V = vec::Vec<M>;
  constexpr int N = vec::kLanes<M>;
  const V lo = vec::splat<V>(-std::numeric_limits<M>::infinity());
  V m0 = lo, m1 = lo;
  auto up = [](V m, V b) { return vec::select((b > m) | (b != b), b, m); };
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    m0 = up(m0, vec::loadu(x + i));
    m1 = up(m1, vec::loadu(x + i + N));
  }
  M lane[N];
  vec::storeu(lane, up(m0, m1));
  for (int w = N / 2; w >= 1; w /= 2)  // a tree: independent steps
    for (int k = 0; k < w; ++k) lane[k] = max_nan(lane[k], lane[k + w]);
  M mx = lane[0];
  for (; i < n; ++i) mx = max_nan(mx, x[i]);
  return mx;
}

/// The sum of exp(x - mx) over a row, stored into e (unless kStore is false;
/// e may be x, not overlapping otherwise): Note [Softmax rows in vectors].
template <class M, bool kStore>
inline double exp_sum_v(const M* x, M* e, int64_t n, M mx) {
  using V = vec::Vec<M>;
  constexpr int N = vec::kLanes<M>, L = kLanes<M>, J = L / N;
  static_assert(L % N == 0);
  const V vm = vec::splat<V>(mx);
  double total = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t c1 = std::min(n, c0 + kChunk);
    V acc[J];
    for (int j = 0; j < J; ++j) acc[j] = V{};
    int64_t i = c0;
    for (; i + L <= c1; i += L) {
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) {
        const V v = vec::exp(vec::loadu(x + i + j * N) - vm);
        if constexpr (kStore) vec::storeu(e + i + j * N, v);
        acc[j] += v;
      }
    }
    if (i < c1) {  // the tail: lane k takes x[i + k], the other lanes 0
      const int64_t m = c1 - i;
      alignas(64) M t[L];
      for (int64_t k = 0; k < L; ++k) t[k] = k < m ? x[i + k] : M(0);
      for (int j = 0; j < J; ++j) vec::storeu(t + j * N, vec::exp(vec::loadu(t + j * N) - vm));
      for (int64_t k = m; k < L; ++k) t[k] = M(0);
      for (int j = 0; j < J; ++j) acc[j] += vec::loadu(t + j * N);
      if constexpr (kStore)
        for (int64_t k = 0; k < m; ++k) e[i + k] = t[k];
    }
    for (int w = J / 2; w >= 1; w /= 2)  // the chunk's sum as a tree: vectors, then lanes
      for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
    alignas(64) M lane[N];
    vec::storeu(lane, acc[0]);
    for (int w = N / 2; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) lane[k] += lane[k + w];
    total += double(lane[0]);
  }
  return total;
}

/// One contiguous row of n values in the compute type M (x and y may be
/// the same buffer for the 16-bit path, whose storage type is T).
template <class M, bool kLog, class T = M>
inline void softmax_row(const M* x, M* y, int64_t n) {
  const M mx = row_max_v(x, n);
  if constexpr (kLog) {
    const double s = exp_sum_v<M, false>(x, nullptr, n, mx);
    // (x - max) - log(sum): the subtraction order of PyTorch's kernel. For
    // float16/bfloat16 rows PyTorch's kernel keeps the sum and its log in
    // the storage type (serial_vec_log_softmax_lastdim_range's scalar_t
    // buffers): both are rounded to T before the subtraction, an error of up
    // to half an ulp of log(sum) in every output (a bfloat16 row of 100
    // values of 4 randn: a fifth of the outputs an ulp or more away from the
    // float result rounded once, tools/bitexact).
    M lse;
    if constexpr (std::is_same_v<T, M>)
      lse = static_cast<M>(std::log(s));
    else
      lse = static_cast<M>(static_cast<T>(std::log(static_cast<M>(static_cast<T>(static_cast<M>(s))))));
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mx) - lse;
  } else {
    const double s = exp_sum_v<M, true>(x, y, n, mx);
    const M inv = static_cast<M>(1.0 / s);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

/// Backward of one contiguous row: gx from g and the forward's output y.
template <class M, bool kLog>
inline void softmax_backward_row(const M* __restrict g, const M* __restrict y, M* __restrict gx, int64_t n) {
  if constexpr (kLog) {
    const M s = static_cast<M>(row_sum<M>(n, [g](int64_t i) { return g[i]; }));
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) gx[i] = g[i] - exp_vec(y[i]) * s;
  } else {
    const M dot = static_cast<M>(row_sum<M>(n, [g, y](int64_t i) { return g[i] * y[i]; }));
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) gx[i] = y[i] * (g[i] - dot);
  }
}

template <class T, class M>
inline void store_row(const M* __restrict src, T* __restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
}

// Calls f(o, j0, w) for every task: row o (of the outer dims), columns [j0, j0 + w).
template <class F>
void for_each_tile(const DimLayout& l, int64_t work_per_col, const F& f) {
  const int64_t tw = std::min(l.inner, kTileWidth);
  const int64_t ntiles = (l.inner + tw - 1) / tw;
  const int64_t ntasks = l.outer * ntiles;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_col * tw));
  parallel_for(0, ntasks, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / ntiles, j0 = (t % ntiles) * tw;
      f(o, j0, std::min(tw, l.inner - j0));
    }
  });
}

template <class T, bool kLog>
void softmax_typed(const Tensor& out, const Tensor& in, int64_t dim) {
  using M = opmath_t<T>;
  const DimLayout l = dim_layout(in, dim);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const int64_t n = l.n, inner = l.inner;
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, n));
    parallel_for(0, l.outer, grain, [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, M>) {
        for (int64_t o = b; o < e; ++o) softmax_row<M, kLog>(x + o * n, y + o * n, n);
      } else {
        std::unique_ptr<M[]> buf(new M[static_cast<size_t>(n)]);
        for (int64_t o = b; o < e; ++o) {
          load_row(x + o * n, buf.get(), n);
          softmax_row<M, kLog, T>(buf.get(), buf.get(), n);
          store_row(buf.get(), y + o * n, n);
        }
      }
    });
    return;
  }
  for_each_tile(l, 3 * n, [&](int64_t o, int64_t j0, int64_t w) {
    const T* xb = x + o * n * inner + j0;
    T* yb = y + o * n * inner + j0;
    M mx[kTileWidth];
    double sum[kTileWidth];
    for (int64_t j = 0; j < w; ++j) {
      mx[j] = -std::numeric_limits<M>::infinity();
      sum[j] = 0;
    }
    for (int64_t r = 0; r < n; ++r) {
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) mx[j] = max_nan(mx[j], static_cast<M>(xb[r * inner + j]));
    }
    for (int64_t r = 0; r < n; ++r) {
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) sum[j] += exp_vec(static_cast<M>(xb[r * inner + j]) - mx[j]);
    }
    M scale[kTileWidth];  // log(sum) for log_softmax, 1 / sum for softmax
    for (int64_t j = 0; j < w; ++j) scale[j] = static_cast<M>(kLog ? std::log(sum[j]) : 1.0 / sum[j]);
    for (int64_t r = 0; r < n; ++r)
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        const M d = static_cast<M>(xb[r * inner + j]) - mx[j];
        yb[r * inner + j] = static_cast<T>(kLog ? d - scale[j] : exp_vec(d) * scale[j]);
      }
  });
}

template <class T, bool kLog>
void softmax_backward_typed(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int64_t dim) {
  using M = opmath_t<T>;
  const DimLayout l = dim_layout(out, dim);
  const T* g = static_cast<const T*>(grad_out.data_ptr());
  const T* y = static_cast<const T*>(out.data_ptr());
  T* gx = static_cast<T*>(grad_in.data_ptr());
  const int64_t n = l.n, inner = l.inner;
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 2 * n));
    parallel_for(0, l.outer, grain, [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, M>) {
        for (int64_t o = b; o < e; ++o) softmax_backward_row<M, kLog>(g + o * n, y + o * n, gx + o * n, n);
      } else {
        std::unique_ptr<M[]> buf(new M[static_cast<size_t>(3 * n)]);
        M* gb = buf.get();
        M* yb = gb + n;
        M* ob = yb + n;
        for (int64_t o = b; o < e; ++o) {
          load_row(g + o * n, gb, n);
          load_row(y + o * n, yb, n);
          softmax_backward_row<M, kLog>(gb, yb, ob, n);
          store_row(ob, gx + o * n, n);
        }
      }
    });
    return;
  }
  for_each_tile(l, 4 * n, [&](int64_t o, int64_t j0, int64_t w) {
    const int64_t off = o * n * inner + j0;
    const T* gb = g + off;
    const T* yb = y + off;
    T* ob = gx + off;
    double acc[kTileWidth];
    for (int64_t j = 0; j < w; ++j) acc[j] = 0;
    for (int64_t r = 0; r < n; ++r) {
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        const M gv = static_cast<M>(gb[r * inner + j]);
        acc[j] += kLog ? gv : gv * static_cast<M>(yb[r * inner + j]);
      }
    }
    M s[kTileWidth];
    for (int64_t j = 0; j < w; ++j) s[j] = static_cast<M>(acc[j]);
    for (int64_t r = 0; r < n; ++r)
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        const M gv = static_cast<M>(gb[r * inner + j]);
        const M yv = static_cast<M>(yb[r * inner + j]);
        ob[r * inner + j] = static_cast<T>(kLog ? gv - exp_vec(yv) * s[j] : yv * (gv - s[j]));
      }
  });
}

template <bool kLog>
void softmax_kernel(const Tensor& out, const Tensor& in, int64_t dim, const KernelArgs&) {
  BRISK_DISPATCH_FLOAT(in.dtype(), kLog ? "log_softmax" : "softmax", [&] { softmax_typed<scalar_t, kLog>(out, in, dim); });
}

template <bool kLog>
void softmax_backward_kernel(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int64_t dim,
                             const KernelArgs&) {
  BRISK_DISPATCH_FLOAT(out.dtype(), kLog ? "log_softmax_backward" : "softmax_backward",
                       [&] { softmax_backward_typed<scalar_t, kLog>(grad_in, grad_out, out, dim); });
}

}  // namespace

void register_softmax_kernels() {
  register_kernel<OpId::softmax>(kCPU, softmax_kernel<false>);
  register_kernel<OpId::log_softmax>(kCPU, softmax_kernel<true>);
  register_kernel<OpId::softmax_backward>(kCPU, softmax_backward_kernel<false>);
  register_kernel<OpId::log_softmax_backward>(kCPU, softmax_backward_kernel<true>);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
