// CPU kernels of the ops along one dim whose output has the input's shape:
// softmax, log_softmax, cumsum, cumprod (DimFn).
//
// The front end passes contiguous `in` and `out` of the same shape and
// dtype; around `dim` they are viewed as (outer, n, inner). With inner == 1
// each task is one contiguous row; otherwise a task is a tile of up to
// kTileWidth columns that walks the n rows together (vectorizable).
#include <algorithm>
#include <cmath>
#include <bit>
#include <limits>
#include <memory>
#include <type_traits>

#include "core/dispatch.h"
#include "core/parallel.h"

#ifndef BRISK_CPU_ISA
#error "kernel files are compiled once per ISA"
#endif

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

constexpr int64_t kTileWidth = 256;  // columns per task when dim is not the innermost

struct DimLayout {
  int64_t outer = 1, n = 1, inner = 1;
};
DimLayout dim_layout(const Tensor& in, int64_t dim) {
  DimLayout l;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (d < dim)
      l.outer *= in.size(d);
    else if (d == dim)
      l.n = in.size(d);
    else
      l.inner *= in.size(d);
  }
  return l;
}

// Calls f(o, j0, w) for every task: row o (of the outer dims), columns [j0, j0 + w).
template <class F>
void for_each_task(const DimLayout& l, const F& f) {
  const int64_t tw = std::min(l.inner, kTileWidth);
  const int64_t ntiles = (l.inner + tw - 1) / tw;
  const int64_t ntasks = l.outer * ntiles;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, l.n * tw));
  parallel_for(0, ntasks, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / ntiles, j0 = (t % ntiles) * tw;
      f(o, j0, std::min(tw, l.inner - j0));
    }
  });
}

template <class M>
inline M max_nan(M a, M b) {
  return ((b > a) | (b != b)) ? b : a;
}

// exp without calls or branches, so that loops over it vectorize: 2^n * p(r)
// with r = x - n ln2 in [-ln2/2, ln2/2] and Cephes' degree-6 polynomial
// (max relative error 1.1e-7). exp(-inf) = 0, exp(+inf) = inf, NaN stays NaN; results below
// ~2e-38 (x < -87) flush to 0.
inline float exp_vec(float x) {
  const float xc = std::min(std::max(x, -88.0f), 89.0f);  // keeps NaN
  // Round to nearest by adding 1.5 * 2^23 (floor() would not vectorize
  // without -fno-trapping-math).
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  n = n == n ? n : 0.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^(n-1) * 2, so that n = 128 (x just below the overflow bound) stays finite.
  const int32_t bits = std::max(static_cast<int32_t>(n) + 126, 0) << 23;  // n = -127: 0
  return p * std::bit_cast<float>(bits) * 2.0f;
}
inline double exp_vec(double x) { return std::exp(x); }

// softmax / log_softmax: y = exp(x - max) / sum, or (x - max) - log(sum).
// Exponentials go through a float (or double) buffer; sums accumulate in
// double.
template <class T, bool kLog>
void softmax_typed(const Tensor& out, const Tensor& in, int64_t dim) {
  using M = opmath_t<T>;
  constexpr int kLanes = 16;
  const DimLayout l = dim_layout(in, dim);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const int64_t n = l.n, inner = l.inner;
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / n);
    parallel_for(0, l.outer, grain, [&](int64_t b, int64_t e) {
      std::unique_ptr<M[]> buf(new M[static_cast<size_t>(n)]);
      for (int64_t o = b; o < e; ++o) {
        const T* xr = x + o * n;
        T* yr = y + o * n;
        M lane_max[kLanes];
        for (int k = 0; k < kLanes; ++k) lane_max[k] = -std::numeric_limits<M>::infinity();
        int64_t i = 0;
        for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
          for (int k = 0; k < kLanes; ++k) lane_max[k] = max_nan(lane_max[k], static_cast<M>(xr[i + k]));
        }
        for (int k = 0; i < n; ++i, ++k) lane_max[k] = max_nan(lane_max[k], static_cast<M>(xr[i]));
        M mx = lane_max[0];
        for (int k = 1; k < kLanes; ++k) mx = max_nan(mx, lane_max[k]);
#pragma omp simd
        for (i = 0; i < n; ++i) buf[i] = exp_vec(static_cast<M>(xr[i]) - mx);
        double lane_sum[kLanes] = {};
        for (i = 0; i + kLanes <= n; i += kLanes)
          for (int k = 0; k < kLanes; ++k) lane_sum[k] += buf[i + k];
        for (int k = 0; i < n; ++i, ++k) lane_sum[k] += buf[i];
        double sum = 0;
        for (int k = 0; k < kLanes; ++k) sum += lane_sum[k];
        if constexpr (kLog) {
          const M lse = static_cast<M>(std::log(sum));
          for (i = 0; i < n; ++i) yr[i] = static_cast<T>((static_cast<M>(xr[i]) - mx) - lse);
        } else {
          const M inv = static_cast<M>(1.0 / sum);
          for (i = 0; i < n; ++i) yr[i] = static_cast<T>(buf[i] * inv);
        }
      }
    });
    return;
  }
  for_each_task(l, [&](int64_t o, int64_t j0, int64_t w) {
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

template <bool kLog>
void softmax_kernel(const Tensor& out, const Tensor& in, int64_t dim, const KernelArgs&) {
  BRISK_DISPATCH_FLOAT(in.dtype(), kLog ? "log_softmax" : "softmax", [&] { softmax_typed<scalar_t, kLog>(out, in, dim); });
}

// Running sums/products accumulate like PyTorch's CPU kernels: double for
// float and double, float for the 16-bit floats, uint64 (wrapping) for int64.
template <class T>
struct ScanAcc {
  using type = std::conditional_t<std::is_same_v<T, int64_t>, uint64_t,
                                  std::conditional_t<std::is_same_v<T, float>, double, opmath_t<T>>>;
};

template <class T, bool kProd>
void scan_typed(const Tensor& out, const Tensor& in, int64_t dim) {
  using A = typename ScanAcc<T>::type;
  const DimLayout l = dim_layout(in, dim);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const int64_t n = l.n, inner = l.inner;
  const A init = kProd ? A(1) : A(0);
  for_each_task(l, [&](int64_t o, int64_t j0, int64_t w) {
    const T* xb = x + o * n * inner + j0;
    T* yb = y + o * n * inner + j0;
    if (inner == 1) {
      A acc = init;
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (kProd)
          acc *= static_cast<A>(xb[i]);
        else
          acc += static_cast<A>(xb[i]);
        yb[i] = static_cast<T>(acc);
      }
      return;
    }
    A acc[kTileWidth];
    for (int64_t j = 0; j < w; ++j) acc[j] = init;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < w; ++j) {
        if constexpr (kProd)
          acc[j] *= static_cast<A>(xb[r * inner + j]);
        else
          acc[j] += static_cast<A>(xb[r * inner + j]);
        yb[r * inner + j] = static_cast<T>(acc[j]);
      }
  });
}

template <bool kProd>
void scan_kernel(const Tensor& out, const Tensor& in, int64_t dim, const KernelArgs&) {
  const char* op = kProd ? "cumprod" : "cumsum";
  // The front end computes integers in int64.
  switch (in.dtype()) {
    case kInt64: return scan_typed<int64_t, kProd>(out, in, dim);
    case kHalf: return scan_typed<Half, kProd>(out, in, dim);
    case kBFloat16: return scan_typed<BFloat16, kProd>(out, in, dim);
    case kFloat: return scan_typed<float, kProd>(out, in, dim);
    case kDouble: return scan_typed<double, kProd>(out, in, dim);
    default: BRISK_FAIL(op, "kernel does not support dtype ", in.dtype());
  }
}

}  // namespace

void register_scan_kernels() {
  register_kernel<OpId::softmax>(kCPU, softmax_kernel<false>);
  register_kernel<OpId::log_softmax>(kCPU, softmax_kernel<true>);
  register_kernel<OpId::cumsum>(kCPU, scan_kernel<false>);
  register_kernel<OpId::cumprod>(kCPU, scan_kernel<true>);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
