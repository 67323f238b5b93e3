// CPU kernels of layer_norm and rms_norm over rows, forward and backward
// (RowNormFn / RowNormBackwardFn rows of the kernel table).
//
// Note [Row norms on the CPU]
// x is (R, N) contiguous, one row per normalized slice. Threads take whole
// rows; each row is read from memory once and its later passes find it in
// cache:
//   layer_norm: mean = sum(x) / N; var = sum((x - mean)^2) / N (a second
//               pass over the row, not E[x^2] - mean^2); rstd = 1/sqrt(var + eps);
//               y = (x - mean) * rstd * w + b
//   rms_norm:   rstd = 1/sqrt(sum(x^2) / N + eps); y = x * rstd * w
// Backward, per row with xhat = (x - mean) * rstd (x * rstd for rms_norm):
//   dx = rstd * (dy * w - sum(dy * w) / N - xhat * sum(dy * w * xhat) / N)
//   (rms_norm: without the sum(dy * w) term); dw = sum over rows of
//   dy * xhat, db = sum over rows of dy. The parameter sums go through a
//   fixed number of row blocks (from R alone, so results do not depend on
//   the thread count), each with its own partial row, added in block order.
// Sums accumulate in kLanes lanes of the compute type per chunk, chunks in
// double. float16/bfloat16 compute in float32 (rows converted into a
// buffer), float64 in float64; a variance past the float range gives NaN
// (not rstd = 0, which would output exactly the bias).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

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

template <class T, class M>
inline void store_row(const M* __restrict src, T* __restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
}

/// A (N) parameter in the compute type: its own memory when T is M, else a
/// converted copy held by `keep`; nullptr when undefined.
template <class T, class M>
const M* param_ptr(const Tensor& p, std::vector<M>& keep) {
  if (!p.defined()) return nullptr;
  const T* src = static_cast<const T*>(p.data_ptr());
  if constexpr (std::is_same_v<T, M>) {
    return src;
  } else {
    keep.resize(static_cast<size_t>(p.numel()));
    load_row(src, keep.data(), p.numel());
    return keep.data();
  }
}

/// rstd from a variance (or mean square): NaN past the float range.
template <class M>
inline M rstd_of(double var, double eps) {
  if (std::isinf(var)) return std::numeric_limits<M>::quiet_NaN();
  return static_cast<M>(1.0 / std::sqrt(static_cast<double>(static_cast<M>(var)) + eps));
}

template <class T, bool kRms>
void row_norm_typed(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                    const Tensor& bias, double eps) {
  using M = opmath_t<T>;
  constexpr bool kSame = std::is_same_v<T, M>;
  const int64_t R = x.size(0), N = x.size(1);
  if (R == 0) return;
  std::vector<M> wkeep, bkeep;
  const M* w = param_ptr<T, M>(weight, wkeep);
  const M* b = kRms ? nullptr : param_ptr<T, M>(bias, bkeep);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* yp = static_cast<T*>(y.data_ptr());
  M* mp = kRms ? nullptr : static_cast<M*>(mean.data_ptr());
  M* rp = static_cast<M*>(rstd.data_ptr());
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, N));
  parallel_for(0, R, grain, [&](int64_t r0, int64_t r1) {
    std::unique_ptr<M[]> buf(kSame ? nullptr : new M[static_cast<size_t>(2 * N)]);
    for (int64_t r = r0; r < r1; ++r) {
      const M* __restrict xr;
      M* __restrict yr;
      if constexpr (kSame) {
        xr = xp + r * N;
        yr = yp + r * N;
      } else {
        load_row(xp + r * N, buf.get(), N);
        xr = buf.get();
        yr = buf.get() + N;
      }
      if constexpr (kRms) {
        const double ms = row_sum<M>(N, [xr](int64_t i) { return xr[i] * xr[i]; }) / double(N);
        const M rs = rstd_of<M>(ms, eps);
        rp[r] = rs;
        if (w) {
#pragma omp simd
          for (int64_t i = 0; i < N; ++i) yr[i] = xr[i] * rs * w[i];
        } else {
#pragma omp simd
          for (int64_t i = 0; i < N; ++i) yr[i] = xr[i] * rs;
        }
      } else {
        const M mu = static_cast<M>(row_sum<M>(N, [xr](int64_t i) { return xr[i]; }) / double(N));
        const double var = row_sum<M>(N, [xr, mu](int64_t i) {
                             const M d = xr[i] - mu;
                             return d * d;
                           }) / double(N);
        const M rs = rstd_of<M>(var, eps);
        mp[r] = mu;
        rp[r] = rs;
        if (w && b) {
#pragma omp simd
          for (int64_t i = 0; i < N; ++i) yr[i] = (xr[i] - mu) * rs * w[i] + b[i];
        } else if (w) {
#pragma omp simd
          for (int64_t i = 0; i < N; ++i) yr[i] = (xr[i] - mu) * rs * w[i];
        } else if (b) {
#pragma omp simd
          for (int64_t i = 0; i < N; ++i) yr[i] = (xr[i] - mu) * rs + b[i];
        } else {
#pragma omp simd
          for (int64_t i = 0; i < N; ++i) yr[i] = (xr[i] - mu) * rs;
        }
      }
      if constexpr (!kSame) store_row(yr, yp + r * N, N);
    }
  });
}

template <class T, bool kRms>
void row_norm_backward_typed(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x,
                             const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  using M = opmath_t<T>;
  constexpr bool kSame = std::is_same_v<T, M>;
  const int64_t R = x.size(0), N = x.size(1);
  const bool need_dx = dx.defined(), need_dw = dw.defined(), need_db = !kRms && db.defined();
  std::vector<M> wkeep;
  const M* w = param_ptr<T, M>(weight, wkeep);
  const T* xp = static_cast<const T*>(x.data_ptr());
  const T* gp = static_cast<const T*>(dy.data_ptr());
  T* dxp = need_dx ? static_cast<T*>(dx.data_ptr()) : nullptr;
  const M* mp = kRms ? nullptr : static_cast<const M*>(mean.data_ptr());
  const M* rp = static_cast<const M*>(rstd.data_ptr());
  // Row blocks of the parameter sums: a function of R only.
  const int64_t nblk = std::max<int64_t>(1, std::min<int64_t>(R, 64));
  const bool params = need_dw || need_db;
  std::vector<M> part(params ? static_cast<size_t>(2 * nblk * N) : 0, M(0));
  const int64_t rows_per_blk = R == 0 ? 0 : (R + nblk - 1) / nblk;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 2 * rows_per_blk * N));
  const double inv_n = N == 0 ? 0.0 : 1.0 / double(N);
  parallel_for(0, R == 0 ? 0 : nblk, grain, [&](int64_t b0, int64_t b1) {
    std::unique_ptr<M[]> buf(kSame ? nullptr : new M[static_cast<size_t>(3 * N)]);
    for (int64_t blk = b0; blk < b1; ++blk) {
      M* __restrict pw = params ? part.data() + 2 * blk * N : nullptr;
      M* __restrict pb = params ? pw + N : nullptr;
      const int64_t r_end = std::min(R, (blk + 1) * rows_per_blk);
      for (int64_t r = blk * rows_per_blk; r < r_end; ++r) {
        const M* __restrict xr;
        const M* __restrict gr;
        M* __restrict dr = nullptr;
        if constexpr (kSame) {
          xr = xp + r * N;
          gr = gp + r * N;
          if (need_dx) dr = dxp + r * N;
        } else {
          load_row(xp + r * N, buf.get(), N);
          load_row(gp + r * N, buf.get() + N, N);
          xr = buf.get();
          gr = buf.get() + N;
          dr = buf.get() + 2 * N;
        }
        const M mu = kRms ? M(0) : mp[r];
        const M rs = rp[r];
        if (need_dx) {
          double s_g = 0, s_gx = 0;  // sum(dy * w), sum(dy * w * xhat)
          if (w)
            row_sum2<M>(
                N, [gr, w](int64_t i) { return gr[i] * w[i]; },
                [gr, w, xr, mu, rs](int64_t i) { return gr[i] * w[i] * ((xr[i] - mu) * rs); }, s_g, s_gx);
          else
            row_sum2<M>(
                N, [gr](int64_t i) { return gr[i]; },
                [gr, xr, mu, rs](int64_t i) { return gr[i] * ((xr[i] - mu) * rs); }, s_g, s_gx);
          const M c1 = kRms ? M(0) : static_cast<M>(s_g * inv_n);
          const M c2 = static_cast<M>(s_gx * inv_n);
          if (w) {
#pragma omp simd
            for (int64_t i = 0; i < N; ++i) dr[i] = rs * (gr[i] * w[i] - c1 - (xr[i] - mu) * rs * c2);
          } else {
#pragma omp simd
            for (int64_t i = 0; i < N; ++i) dr[i] = rs * (gr[i] - c1 - (xr[i] - mu) * rs * c2);
          }
          if constexpr (!kSame) store_row(dr, dxp + r * N, N);
        }
        if (params) {
#pragma omp simd
          for (int64_t i = 0; i < N; ++i) {
            pw[i] += gr[i] * ((xr[i] - mu) * rs);
            pb[i] += gr[i];
          }
        }
      }
    }
  });
  if (!params) return;
  // Blocks in order; columns in parallel.
  std::vector<M> total(static_cast<size_t>(2 * N), M(0));
  for (int64_t blk = 0; blk < nblk; ++blk) {
    const M* src = part.data() + 2 * blk * N;
#pragma omp simd
    for (int64_t i = 0; i < 2 * N; ++i) total[i] += src[i];
  }
  if (need_dw) store_row(total.data(), static_cast<T*>(dw.data_ptr()), N);
  if (need_db) store_row(total.data() + N, static_cast<T*>(db.data_ptr()), N);
}

template <bool kRms>
void row_norm_kernel(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                     const Tensor& bias, double eps) {
  BRISK_DISPATCH_FLOAT(x.dtype(), kRms ? "rms_norm" : "layer_norm",
                       [&] { row_norm_typed<scalar_t, kRms>(y, mean, rstd, x, weight, bias, eps); });
}

template <bool kRms>
void row_norm_backward_kernel(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x,
                              const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  BRISK_DISPATCH_FLOAT(x.dtype(), kRms ? "rms_norm_backward" : "layer_norm_backward",
                       [&] { row_norm_backward_typed<scalar_t, kRms>(dx, dw, db, dy, x, mean, rstd, weight); });
}

}  // namespace

void register_norm_row_kernels() {
  register_kernel<OpId::layer_norm>(kCPU, row_norm_kernel<false>);
  register_kernel<OpId::layer_norm_backward>(kCPU, row_norm_backward_kernel<false>);
  register_kernel<OpId::rms_norm>(kCPU, row_norm_kernel<true>);
  register_kernel<OpId::rms_norm_backward>(kCPU, row_norm_backward_kernel<true>);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
