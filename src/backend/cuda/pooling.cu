// CUDA kernels of max, average and adaptive average pooling, forward and
// backward, NCHW-contiguous or channels_last memory (the layout the front
// end in src/nn/pooling.cpp chose). See docs/design/cuda_nn.md.
//
// - Forwards: one thread per output element, walking its window in
//   row-major order (max: a value wins when greater or NaN, the CPU's rule;
//   average: a sequential sum in float, double for float64). Large average
//   windows in NCHW (global pooling) take one warp per output.
// - Backwards: one thread per INPUT element, gathering from the outputs
//   whose windows may hold it (Note [CUDA pooling windows]): every element
//   of the gradient is written, no zero fill, no atomics, a fixed order.
// - Index arithmetic in 32 bits when every size of the call allows it
//   (IntDivider32), else 64 bits; one kernel per (dtype, index width).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/iter_plan.h"  // IntDivider32 / IntDivider64
#include "backend/cuda/nn_device.cuh"
#include "backend/cuda/nn_kernels.h"
#include "backend/cuda/norm_plan.h"  // elementwise_blocks
#include "backend/cuda/pool_window.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/pool_plan.h"
#include "core/tensor_create.h"

namespace brisk::cuda::detail {
namespace {

constexpr int kPoolThreads = 256;

/// Sizes and window parameters of a call, by value in the kernel parameters.
struct PoolK {
  int64_t N, C, H, W, OH, OW;
  int64_t kH, kW, sH, sW, pH, pW, dH, dW;
  int64_t divisor;  // avg: divisor_override (0: none)
  bool cl, adaptive, count_pad;
};

PoolK pool_k(const PoolDims& d) {
  PoolK k{};
  k.N = d.N, k.C = d.C, k.H = d.H, k.W = d.W, k.OH = d.OH, k.OW = d.OW;
  k.kH = k.kW = k.sH = k.sW = k.dH = k.dW = 1;
  k.cl = d.channels_last;
  return k;
}

/// The three dividers that split a flat index into (plane or image, row,
/// column[, channel]): (C,) W-or-OW, H-or-OH.
template <class Div>
struct Dividers {
  Div c, w, h;
};

/// Whether every index of the call fits the 32-bit path.
bool fits32(const PoolK& k) {
  constexpr int64_t lim = std::numeric_limits<int32_t>::max();
  const int64_t in = k.N * k.C * k.H * k.W, out = k.N * k.C * k.OH * k.OW;
  if (in >= lim || out >= lim) return false;
  // adaptive windows multiply an index by a size; the strided windows reach
  // (OH - 1) * s + (k - 1) * d, bounded by the padded input
  const int64_t big = std::max({(k.H + 1) * (k.OH + 1) + k.H + k.OH, (k.W + 1) * (k.OW + 1) + k.W + k.OW,
                                (k.OH + 1) * k.sH + k.H + 2 * k.pH + (k.kH + 1) * k.dH,
                                (k.OW + 1) * k.sW + k.W + 2 * k.pW + (k.kW + 1) * k.dW});
  return big < lim;
}

/// Calls f(Div{}) with IntDivider32 or IntDivider64.
template <class F>
void dispatch_index(const PoolK& k, F&& f) {
  if (fits32(k))
    f(IntDivider32{});
  else
    f(IntDivider64{});
}

template <class Div>
using index_of = decltype(Div{}.div(0));  // uint32_t / uint64_t
template <class Div>
using signed_of = std::make_signed_t<index_of<Div>>;

// ==== max pooling ================================================================================

/// One thread per output; `ind` null: indices not wanted.
template <class T, class Div>
__global__ void __launch_bounds__(kPoolThreads)
    max_pool_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ ind, const PoolK k,
                        const Dividers<Div> dv, index_of<Div> total) {
  using U = index_of<Div>;
  using I = signed_of<Div>;
  using acc_t = typename DevAcc<T>::type;
  const I H = I(k.H), W = I(k.W), OH = I(k.OH), OW = I(k.OW), C = I(k.C);
  const I kH = I(k.kH), kW = I(k.kW), dH = I(k.dH), dW = I(k.dW);
  for (U o = U(blockIdx.x) * kPoolThreads + threadIdx.x; o < total; o += U(gridDim.x) * kPoolThreads) {
    I oh, ow;
    int64_t base, step;  // offset of input (0, 0) of this output's plane, and of one position
    if (k.cl) {
      const U q = dv.c.div(o), q2 = dv.w.div(q), n = dv.h.div(q2);
      const I c = I(o - q * U(C));
      ow = I(q - q2 * U(OW));
      oh = I(q2 - n * U(OH));
      base = int64_t(n) * k.H * k.W * k.C + c;
      step = k.C;
    } else {
      const U q = dv.w.div(o), nc = dv.h.div(q);
      ow = I(o - q * U(OW));
      oh = I(q - nc * U(OH));
      base = int64_t(nc) * k.H * k.W;
      step = 1;
    }
    const I h0 = oh * I(k.sH) - I(k.pH), w0 = ow * I(k.sW) - I(k.pW);
    acc_t m = -std::numeric_limits<acc_t>::infinity();
    int64_t best = -1;
    for (I kh = 0; kh < kH; ++kh) {
      const I ih = h0 + kh * dH;
      if (ih < 0 || ih >= H) continue;
      for (I kw = 0; kw < kW; ++kw) {
        const I iw = w0 + kw * dW;
        if (iw < 0 || iw >= W) continue;
        const int64_t pos = int64_t(ih) * W + iw;
        const acc_t v = to_acc(x[base + pos * step]);
        // the first in-bounds tap is taken as is (the CPU's starting tap),
        // then a value wins when greater or NaN
        if (best < 0 || v > m || v != v) {
          m = v;
          best = pos;
        }
      }
    }
    y[o] = from_acc<T>(m);
    if (ind != nullptr) ind[o] = best;
  }
}

/// One thread per input element: the sum of gy over the outputs whose
/// saved index names it (their windows hold it: Note [CUDA pooling windows]).
template <class T, class Div>
__global__ void __launch_bounds__(kPoolThreads)
    max_pool_bwd_kernel(const T* __restrict__ gy, const int64_t* __restrict__ ind, T* __restrict__ gx, const PoolK k,
                        const Dividers<Div> dv, index_of<Div> total) {
  using U = index_of<Div>;
  using I = signed_of<Div>;
  using acc_t = typename DevAcc<T>::type;
  const I H = I(k.H), W = I(k.W), OH = I(k.OH), OW = I(k.OW), C = I(k.C);
  const I extH = (I(k.kH) - 1) * I(k.dH) + 1, extW = (I(k.kW) - 1) * I(k.dW) + 1;
  for (U i = U(blockIdx.x) * kPoolThreads + threadIdx.x; i < total; i += U(gridDim.x) * kPoolThreads) {
    I ih, iw;
    int64_t obase, ostep;  // offset of output (0, 0) of this element's plane, and of one output position
    if (k.cl) {
      const U q = dv.c.div(i), q2 = dv.w.div(q), n = dv.h.div(q2);
      const I c = I(i - q * U(C));
      iw = I(q - q2 * U(W));
      ih = I(q2 - n * U(H));
      obase = int64_t(n) * k.OH * k.OW * k.C + c;
      ostep = k.C;
    } else {
      const U q = dv.w.div(i), nc = dv.h.div(q);
      iw = I(i - q * U(W));
      ih = I(q - nc * U(H));
      obase = int64_t(nc) * k.OH * k.OW;
      ostep = 1;
    }
    const PoolRange<I> rh = pool_outputs_covering<I>(ih, OH, I(k.sH), I(k.pH), extH);
    const PoolRange<I> rw = pool_outputs_covering<I>(iw, OW, I(k.sW), I(k.pW), extW);
    const int64_t target = int64_t(ih) * W + iw;
    acc_t sum = 0;
    for (I oh = rh.lo; oh < rh.hi; ++oh)
      for (I ow = rw.lo; ow < rw.hi; ++ow) {
        const int64_t o = obase + (int64_t(oh) * OW + ow) * ostep;
        if (ind[o] == target) sum += to_acc(gy[o]);
      }
    gx[i] = from_acc<T>(sum);
  }
}

// ==== average pooling ================================================================================

template <class I>
__device__ __forceinline__ AvgWindow<I> avg_window(const PoolK& k, I o, bool along_h) {
  if (along_h)
    return k.adaptive ? adaptive_pool_window<I>(o, I(k.H), I(k.OH))
                      : avg_pool_window<I>(o, I(k.H), I(k.kH), I(k.sH), I(k.pH), k.count_pad);
  return k.adaptive ? adaptive_pool_window<I>(o, I(k.W), I(k.OW))
                    : avg_pool_window<I>(o, I(k.W), I(k.kW), I(k.sW), I(k.pW), k.count_pad);
}

template <class acc_t, class I>
__device__ __forceinline__ acc_t avg_divisor(const PoolK& k, const AvgWindow<I>& wh, const AvgWindow<I>& ww) {
  return k.divisor != 0 ? acc_t(k.divisor) : acc_t(int64_t(wh.ext) * int64_t(ww.ext));
}

/// One thread per output: the window's sequential sum / divisor.
template <class T, class Div>
__global__ void __launch_bounds__(kPoolThreads)
    avg_pool_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, const PoolK k, const Dividers<Div> dv,
                        index_of<Div> total) {
  using U = index_of<Div>;
  using I = signed_of<Div>;
  using acc_t = typename DevAcc<T>::type;
  const I W = I(k.W), OH = I(k.OH), OW = I(k.OW), C = I(k.C);
  for (U o = U(blockIdx.x) * kPoolThreads + threadIdx.x; o < total; o += U(gridDim.x) * kPoolThreads) {
    I oh, ow;
    int64_t base, step;
    if (k.cl) {
      const U q = dv.c.div(o), q2 = dv.w.div(q), n = dv.h.div(q2);
      const I c = I(o - q * U(C));
      ow = I(q - q2 * U(OW));
      oh = I(q2 - n * U(OH));
      base = int64_t(n) * k.H * k.W * k.C + c;
      step = k.C;
    } else {
      const U q = dv.w.div(o), nc = dv.h.div(q);
      ow = I(o - q * U(OW));
      oh = I(q - nc * U(OH));
      base = int64_t(nc) * k.H * k.W;
      step = 1;
    }
    const AvgWindow<I> wh = avg_window<I>(k, oh, true), ww = avg_window<I>(k, ow, false);
    acc_t sum = 0;
    for (I ih = wh.lo; ih < wh.hi; ++ih)
      for (I iw = ww.lo; iw < ww.hi; ++iw) sum += to_acc(x[base + (int64_t(ih) * W + iw) * step]);
    y[o] = from_acc<T>(sum / avg_divisor<acc_t>(k, wh, ww));
  }
}

/// NCHW with large windows (global pooling): one warp per output, lanes
/// striding over the window's positions, a fixed shuffle tree. 64-bit
/// indices (the output count is small next to the work per output).
template <class T>
__global__ void __launch_bounds__(kPoolThreads)
    avg_pool_fwd_warp_kernel(const T* __restrict__ x, T* __restrict__ y, const PoolK k, int64_t total) {
  using acc_t = typename DevAcc<T>::type;
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (kPoolThreads / 32);
  for (int64_t o = int64_t(blockIdx.x) * (kPoolThreads / 32) + (threadIdx.x >> 5); o < total; o += warps) {
    const int64_t ow = o % k.OW, q = o / k.OW, oh = q % k.OH, nc = q / k.OH;
    const AvgWindow<int64_t> wh = avg_window<int64_t>(k, oh, true), ww = avg_window<int64_t>(k, ow, false);
    const int64_t nw = ww.hi - ww.lo, cnt = (wh.hi - wh.lo) * nw;
    const T* plane = x + nc * k.H * k.W + wh.lo * k.W + ww.lo;
    acc_t sum = 0;
    if (nw == k.W) {
      // full rows: the window is one contiguous run
      for (int64_t e = lane; e < cnt; e += 32) sum += to_acc(plane[e]);
    } else {
      for (int64_t e = lane; e < cnt; e += 32) {
        const int64_t r = e / nw;
        sum += to_acc(plane[r * k.W + (e - r * nw)]);
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) y[o] = from_acc<T>(sum / avg_divisor<acc_t>(k, wh, ww));
  }
}

/// One thread per input element: sum over the windows holding it of
/// gy / divisor, outputs in row-major order.
template <class T, class Div>
__global__ void __launch_bounds__(kPoolThreads)
    avg_pool_bwd_kernel(const T* __restrict__ gy, T* __restrict__ gx, const PoolK k, const Dividers<Div> dv,
                        index_of<Div> total) {
  using U = index_of<Div>;
  using I = signed_of<Div>;
  using acc_t = typename DevAcc<T>::type;
  const I H = I(k.H), W = I(k.W), OH = I(k.OH), OW = I(k.OW), C = I(k.C);
  for (U i = U(blockIdx.x) * kPoolThreads + threadIdx.x; i < total; i += U(gridDim.x) * kPoolThreads) {
    I ih, iw;
    int64_t obase, ostep;
    if (k.cl) {
      const U q = dv.c.div(i), q2 = dv.w.div(q), n = dv.h.div(q2);
      const I c = I(i - q * U(C));
      iw = I(q - q2 * U(W));
      ih = I(q2 - n * U(H));
      obase = int64_t(n) * k.OH * k.OW * k.C + c;
      ostep = k.C;
    } else {
      const U q = dv.w.div(i), nc = dv.h.div(q);
      iw = I(i - q * U(W));
      ih = I(q - nc * U(H));
      obase = int64_t(nc) * k.OH * k.OW;
      ostep = 1;
    }
    const PoolRange<I> rh = k.adaptive ? adaptive_outputs_covering<I>(ih, H, OH)
                                       : pool_outputs_covering<I>(ih, OH, I(k.sH), I(k.pH), I(k.kH));
    const PoolRange<I> rw = k.adaptive ? adaptive_outputs_covering<I>(iw, W, OW)
                                       : pool_outputs_covering<I>(iw, OW, I(k.sW), I(k.pW), I(k.kW));
    acc_t sum = 0;
    for (I oh = rh.lo; oh < rh.hi; ++oh) {
      const AvgWindow<I> wh = avg_window<I>(k, oh, true);
      if (ih < wh.lo || ih >= wh.hi) continue;  // adaptive ranges are a superset
      for (I ow = rw.lo; ow < rw.hi; ++ow) {
        const AvgWindow<I> ww = avg_window<I>(k, ow, false);
        if (iw < ww.lo || iw >= ww.hi) continue;
        const int64_t o = obase + (int64_t(oh) * OW + ow) * ostep;
        sum += to_acc(gy[o]) / avg_divisor<acc_t>(k, wh, ww);
      }
    }
    gx[i] = from_acc<T>(sum);
  }
}

// ==== launchers =======================================================================================

template <class Div>
Dividers<Div> make_dividers(const PoolK& k, bool over_output) {
  using U = index_of<Div>;
  Dividers<Div> d;
  d.c = Div(U(k.C));
  d.w = Div(U(over_output ? k.OW : k.W));
  d.h = Div(U(over_output ? k.OH : k.H));
  return d;
}

void check_tensor(const Tensor& t, const PoolK& k, bool input, const char* op, ScalarType dt) {
  BRISK_INTERNAL_ASSERT(t.defined() && t.is_cuda(), op, ": expected a CUDA tensor");
  BRISK_INTERNAL_ASSERT(t.dtype() == dt, op, ": dtype ", t.dtype(), " where ", dt, " was expected");
  BRISK_INTERNAL_ASSERT(t.numel() == k.N * k.C * (input ? k.H * k.W : k.OH * k.OW), op, ": tensor of shape ",
                        t.sizes(), " does not match the pooling sizes");
  BRISK_INTERNAL_ASSERT(k.cl ? t.is_contiguous(kChannelsLast) : t.is_contiguous(), op,
                        ": tensor not dense in the layout of the call");
}

int blocks_for(int64_t n) { return static_cast<int>(elementwise_blocks(n, sm_count(), kPoolThreads)); }

}  // namespace

void max_pool2d_forward(const Tensor& x, const Tensor& y, const Tensor& indices, const MaxPoolParams& p) {
  const char* op = "max_pool2d";
  PoolK k = pool_k(p.d);
  k.kH = p.kH, k.kW = p.kW, k.sH = p.sH, k.sW = p.sW, k.pH = p.pH, k.pW = p.pW, k.dH = p.dH, k.dW = p.dW;
  check_tensor(x, k, true, op, x.dtype());
  check_tensor(y, k, false, op, x.dtype());
  if (indices.defined()) check_tensor(indices, k, false, op, kInt64);
  const int64_t total = y.numel();
  if (total == 0) return;
  DeviceGuard g(x.device().index);
  cudaStream_t s = current_stream_handle(x.device().index);
  int64_t* ind = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
  BRISK_DISPATCH_FLOAT(x.dtype(), op, [&] {
    using T = typename DevType<scalar_t>::type;
    dispatch_index(k, [&](auto div0) {
      using Div = decltype(div0);
      max_pool_fwd_kernel<T, Div><<<blocks_for(total), kPoolThreads, 0, s>>>(
          static_cast<const T*>(x.data_ptr()), static_cast<T*>(y.data_ptr()), ind, k, make_dividers<Div>(k, true),
          index_of<Div>(total));
    });
  });
  check_launch(op);
}

void max_pool2d_backward(const Tensor& gy, const Tensor& indices, const Tensor& gx, const MaxPoolParams& p) {
  const char* op = "max_pool2d_backward";
  PoolK k = pool_k(p.d);
  k.kH = p.kH, k.kW = p.kW, k.sH = p.sH, k.sW = p.sW, k.pH = p.pH, k.pW = p.pW, k.dH = p.dH, k.dW = p.dW;
  check_tensor(gy, k, false, op, gy.dtype());
  check_tensor(indices, k, false, op, kInt64);
  check_tensor(gx, k, true, op, gy.dtype());
  const int64_t total = gx.numel();
  if (total == 0) return;
  DeviceGuard g(gx.device().index);
  cudaStream_t s = current_stream_handle(gx.device().index);
  BRISK_DISPATCH_FLOAT(gy.dtype(), op, [&] {
    using T = typename DevType<scalar_t>::type;
    dispatch_index(k, [&](auto div0) {
      using Div = decltype(div0);
      max_pool_bwd_kernel<T, Div><<<blocks_for(total), kPoolThreads, 0, s>>>(
          static_cast<const T*>(gy.data_ptr()), indices.data_ptr<int64_t>(), static_cast<T*>(gx.data_ptr()), k,
          make_dividers<Div>(k, false), index_of<Div>(total));
    });
  });
  check_launch(op);
}

namespace {
PoolK avg_k(const AvgPoolParams& p) {
  PoolK k = pool_k(p.d);
  k.adaptive = p.adaptive;
  if (!p.adaptive) {
    k.kH = p.kH, k.kW = p.kW, k.sH = p.sH, k.sW = p.sW, k.pH = p.pH, k.pW = p.pW;
    k.count_pad = p.count_include_pad;
    k.divisor = p.divisor_override;
  }
  return k;
}
}  // namespace

void avg_pool2d_forward(const Tensor& x, const Tensor& y, const AvgPoolParams& p) {
  const char* op = p.adaptive ? "adaptive_avg_pool2d" : "avg_pool2d";
  const PoolK k = avg_k(p);
  check_tensor(x, k, true, op, x.dtype());
  check_tensor(y, k, false, op, x.dtype());
  const int64_t total = y.numel();
  if (total == 0) return;
  DeviceGuard g(x.device().index);
  cudaStream_t s = current_stream_handle(x.device().index);
  const int64_t window = avg_max_window(k.H, k.OH, k.kH, k.adaptive) * avg_max_window(k.W, k.OW, k.kW, k.adaptive);
  const bool warp = !k.cl && window >= 32;
  BRISK_DISPATCH_FLOAT(x.dtype(), op, [&] {
    using T = typename DevType<scalar_t>::type;
    const T* xp = static_cast<const T*>(x.data_ptr());
    T* yp = static_cast<T*>(y.data_ptr());
    if (warp) {
      const int blocks = static_cast<int>(
          std::min<int64_t>(ceil_div(total, kPoolThreads / 32), static_cast<int64_t>(sm_count()) * 32));
      avg_pool_fwd_warp_kernel<T><<<blocks, kPoolThreads, 0, s>>>(xp, yp, k, total);
      return;
    }
    dispatch_index(k, [&](auto div0) {
      using Div = decltype(div0);
      avg_pool_fwd_kernel<T, Div><<<blocks_for(total), kPoolThreads, 0, s>>>(xp, yp, k, make_dividers<Div>(k, true),
                                                                             index_of<Div>(total));
    });
  });
  check_launch(op);
}

void avg_pool2d_backward(const Tensor& gy, const Tensor& gx, const AvgPoolParams& p) {
  const char* op = p.adaptive ? "adaptive_avg_pool2d_backward" : "avg_pool2d_backward";
  const PoolK k = avg_k(p);
  check_tensor(gy, k, false, op, gy.dtype());
  check_tensor(gx, k, true, op, gy.dtype());
  const int64_t total = gx.numel();
  if (total == 0) return;
  DeviceGuard g(gx.device().index);
  cudaStream_t s = current_stream_handle(gx.device().index);
  BRISK_DISPATCH_FLOAT(gy.dtype(), op, [&] {
    using T = typename DevType<scalar_t>::type;
    dispatch_index(k, [&](auto div0) {
      using Div = decltype(div0);
      avg_pool_bwd_kernel<T, Div><<<blocks_for(total), kPoolThreads, 0, s>>>(
          static_cast<const T*>(gy.data_ptr()), static_cast<T*>(gx.data_ptr()), k, make_dividers<Div>(k, false),
          index_of<Div>(total));
    });
  });
  check_launch(op);
}

// ---- the op table's pooling rows (plan in core/pool_plan.h) -------------------------

namespace {

PoolDims dims_of(const pool::Shape& s) {
  PoolDims d;
  d.N = s.N, d.C = s.C, d.H = s.H, d.W = s.W, d.OH = s.OH, d.OW = s.OW;
  d.channels_last = s.cl;
  return d;
}

MaxPoolParams params_of(const pool::MaxPlan& g) {
  MaxPoolParams p;
  p.d = dims_of(g.sh);
  p.kH = g.kH, p.kW = g.kW, p.sH = g.sH, p.sW = g.sW, p.pH = g.pH, p.pW = g.pW, p.dH = g.dH, p.dW = g.dW;
  return p;
}

AvgPoolParams params_of(const pool::AvgPlan& g) {
  AvgPoolParams p;
  p.d = dims_of(g.sh);
  p.adaptive = g.adaptive;
  p.kH = g.kH, p.kW = g.kW, p.sH = g.sH, p.sW = g.sW, p.pH = g.pH, p.pW = g.pW;
  p.count_include_pad = g.count_pad;
  p.divisor_override = g.divisor.value_or(0);
  return p;
}

/// The taps of CUDA max pooling are PyTorch's int64 flat indices (the
/// backward gathers with them).
void max_pool_kernel(const pool::MaxPlan& g, const Tensor& x, const Tensor& y, Tensor* taps) {
  if (taps) {
    const IntArrayRef sizes = g.sh.out_sizes;
    *taps = g.sh.cl ? brisk::detail::make_tensor(sizes, brisk::detail::channels_last_strides(sizes), kInt64, x.device())
                    : brisk::detail::make_tensor(sizes, {}, kInt64, x.device());
  }
  max_pool2d_forward(x, y, taps ? *taps : Tensor(), params_of(g));
}
Tensor max_indices_kernel(const pool::MaxPlan&, const Tensor& taps) { return taps; }  // already flat indices
void max_pool_backward_kernel(const pool::MaxPlan& g, const Tensor& gy, const Tensor& taps, const Tensor& gx) {
  max_pool2d_backward(gy, taps, gx, params_of(g));
}
void avg_pool_kernel(const pool::AvgPlan& g, const Tensor& x, const Tensor& y) {
  avg_pool2d_forward(x, y, params_of(g));
}
void avg_pool_backward_kernel(const pool::AvgPlan& g, const Tensor& gy, const Tensor& gx) {
  avg_pool2d_backward(gy, gx, params_of(g));
}

}  // namespace

void register_pooling_kernels() {
  const uint32_t fl = dtype_mask({kFloat, kDouble, kHalf, kBFloat16});
  register_kernel<OpId::max_pool2d>(kCUDA, max_pool_kernel, fl);
  register_kernel<OpId::max_pool2d_indices>(kCUDA, max_indices_kernel, dtype_mask({kInt64}));
  register_kernel<OpId::max_pool2d_backward>(kCUDA, max_pool_backward_kernel, fl);
  register_kernel<OpId::avg_pool2d>(kCUDA, avg_pool_kernel, fl);
  register_kernel<OpId::avg_pool2d_backward>(kCUDA, avg_pool_backward_kernel, fl);
}

}  // namespace brisk::cuda::detail
