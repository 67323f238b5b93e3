// CPU kernels of the ops along one dim whose output has the input's shape:
// cumsum, cumprod (DimFn); softmax and log_softmax are in softmax.cpp.
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
  register_kernel<OpId::cumsum>(kCPU, scan_kernel<false>);
  register_kernel<OpId::cumprod>(kCPU, scan_kernel<true>);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
