// CUDA kernels of batch_norm and group_norm, forward and backward, planar
// (NCHW) or interleaved (channels_last, (N, C)) memory: per (block,
// channel) reductions into double partial records (Note [CUDA normalization
// reductions] in norm_plan.h), tiny per-channel / per-group kernels that
// merge them in a fixed order and fold the statistics with the weight and
// bias into per-(block, channel) coefficients, then one elementwise pass:
//   forward   y  = (x - M) * A + B
//   backward  dx = dy * A + (x - M) * B + Cc
// (the CPU's formulas, Note [Normalization layouts] in
// src/backend/cpu/kernels/norm_channels.cpp). Registered in the batch_norm
// and group_norm slots of the kernel table.
// Values are read and summed in float (double for float64); statistics and
// coefficients are computed in double, coefficients rounded to the compute
// type once. Deterministic: no atomics. See docs/design/cuda_nn.md.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/iter_plan.h"  // IntDivider32 / IntDivider64
#include "backend/cuda/nn_device.cuh"
#include "backend/cuda/norm_plan.h"
#include "brisk/ops.h"
#include "core/dispatch.h"

namespace brisk::cuda::detail {
namespace {

constexpr int kStatsThreads = 128;  // finalize kernels: one thread per channel / group

// ==== reductions ===================================================================================

enum ReduceMode : int {
  kWelford = 0,   // (count, mean, M2) of x - shift, and the shift
  kGradSums = 1,  // (sum dy, sum dy * (x - mean), 0, 0)
};

/// Doubles per partial record.
constexpr int kRec = 4;

/// Three accumulators: Welford (count, mean, M2) or sums (sum dy, sum dy*(x-m), -).
template <class A>
struct Tri {
  A a, b, c;
};

template <class A>
__device__ __forceinline__ void welford_step(Tri<A>& t, A v) {
  t.a += A(1);
  const A d = v - t.b;
  t.b += d / t.a;
  t.c += d * (v - t.b);
}

/// Chan's merge of two Welford records (t = t + o).
template <class A>
__device__ __forceinline__ void welford_merge(Tri<A>& t, const Tri<A>& o) {
  if (o.a == A(0)) return;
  if (t.a == A(0)) {
    t = o;
    return;
  }
  const A n = t.a + o.a;
  const A d = o.b - t.b;
  const A r = o.a / n;
  t.b += d * r;
  t.c += o.c + d * d * t.a * r;
  t.a = n;
}

template <class A>
__device__ __forceinline__ void tri_merge(int mode, Tri<A>& t, const Tri<A>& o) {
  if (mode == kWelford) {
    welford_merge(t, o);
  } else {
    t.a += o.a;
    t.b += o.b;
  }
}

template <class A>
__device__ __forceinline__ Tri<A> shfl_down(const Tri<A>& t, int off) {
  return {__shfl_down_sync(0xffffffffu, t.a, off), __shfl_down_sync(0xffffffffu, t.b, off),
          __shfl_down_sync(0xffffffffu, t.c, off)};
}

/// Where the backward's mean of slot (nb, c) lives: mean[nb * bstride + c / cdiv]
/// (batch_norm: bstride 0, cdiv 1; group_norm: bstride G, cdiv C / G).
struct MeanIndex {
  const double* mean = nullptr;
  int64_t bstride = 0, cdiv = 1;
};

/// Where the forward's shift of slot (nb, c) lives: x[nb * bstride + (c / cdiv) * cstride],
/// the first value of the channel (batch_norm) or group (group_norm). The
/// Welford records are of x - shift, as the CPU's shifted sums: the running
/// means are deviations, not values far from zero, and keep their digits.
struct ShiftIndex {
  int64_t bstride = 0, cdiv = 1, cstride = 0;
};

struct RowArgs {
  int64_t C, S, splits, chunk, items;
};

/// Planar: one warp per (slot, split); slot = nb * C + c owns the run
/// x[slot * S, slot * S + S). Writes partial[(slot * splits + split) * kRec + k].
template <class T>
__global__ void __launch_bounds__(kNormThreads)
    norm_rows_kernel(const T* __restrict__ x, const T* __restrict__ dy, const MeanIndex mi, const ShiftIndex si,
                     int mode, const RowArgs r, double* __restrict__ partial) {
  using A = typename DevAcc<T>::type;
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * kNormWarps;
  for (int64_t item = int64_t(blockIdx.x) * kNormWarps + (threadIdx.x >> 5); item < r.items; item += warps) {
    const int64_t slot = item / r.splits, sp = item - slot * r.splits;
    const int64_t s0 = sp * r.chunk, s1 = s0 + r.chunk < r.S ? s0 + r.chunk : r.S;
    const int64_t off = slot * r.S;
    const int64_t nb = slot / r.C, c = slot - nb * r.C;
    Tri<A> t{A(0), A(0), A(0)};
    A shift = A(0);
    if (mode == kWelford) {
      shift = to_acc(x[nb * si.bstride + (c / si.cdiv) * si.cstride]);
      if (!(shift - shift == A(0))) shift = A(0);  // inf or NaN: plain sums, so an infinite mean stays inf
      for (int64_t s = s0 + lane; s < s1; s += 32) welford_step(t, to_acc(x[off + s]) - shift);
    } else {
      const A m = A(mi.mean[nb * mi.bstride + c / mi.cdiv]);
      for (int64_t s = s0 + lane; s < s1; s += 32) {
        const A g = to_acc(dy[off + s]);
        t.a += g;
        t.b += g * (to_acc(x[off + s]) - m);
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const Tri<A> u = shfl_down(t, o);
      tri_merge(mode, t, u);
    }
    if (lane == 0) {
      double* p = partial + (slot * r.splits + sp) * kRec;
      p[0] = double(t.a);
      p[1] = double(t.b);
      p[2] = double(t.c);
      p[3] = double(shift);
    }
  }
}

struct ColArgs {
  int64_t C, S, tiles, splits, chunk, items;
  int tx, ty;
};

/// Interleaved: one block per (nb, channel tile, split), tx channels by ty
/// rows; the ty records of a channel merged by a fixed tree in shared
/// memory. Writes partial[((nb * C + c) * splits + split) * kRec + k].
template <class T>
__global__ void __launch_bounds__(kNormThreads)
    norm_cols_kernel(const T* __restrict__ x, const T* __restrict__ dy, const MeanIndex mi, const ShiftIndex si,
                     int mode, const ColArgs r, double* __restrict__ partial) {
  using A = typename DevAcc<T>::type;
  __shared__ A sh[3][kNormThreads];
  const int tx = int(threadIdx.x) % r.tx, ty = int(threadIdx.x) / r.tx;
  for (int64_t item = blockIdx.x; item < r.items; item += gridDim.x) {
    const int64_t sp = item % r.splits, t2 = item / r.splits;
    const int64_t tile = t2 % r.tiles, nb = t2 / r.tiles;
    const int64_t c = tile * r.tx + tx;
    const int64_t s0 = sp * r.chunk, s1 = s0 + r.chunk < r.S ? s0 + r.chunk : r.S;
    Tri<A> t{A(0), A(0), A(0)};
    A shift = A(0);
    if (c < r.C) {
      const int64_t base = nb * r.S * r.C + c;
      if (mode == kWelford) {
        shift = to_acc(x[nb * si.bstride + (c / si.cdiv) * si.cstride]);
        if (!(shift - shift == A(0))) shift = A(0);  // inf or NaN: plain sums, so an infinite mean stays inf
        for (int64_t s = s0 + ty; s < s1; s += r.ty) welford_step(t, to_acc(x[base + s * r.C]) - shift);
      } else {
        const A m = A(mi.mean[nb * mi.bstride + c / mi.cdiv]);
        for (int64_t s = s0 + ty; s < s1; s += r.ty) {
          const A g = to_acc(dy[base + s * r.C]);
          t.a += g;
          t.b += g * (to_acc(x[base + s * r.C]) - m);
        }
      }
    }
    sh[0][threadIdx.x] = t.a;
    sh[1][threadIdx.x] = t.b;
    sh[2][threadIdx.x] = t.c;
    __syncthreads();
    for (int half = r.ty / 2; half > 0; half /= 2) {
      if (ty < half) {
        const int i = ty * r.tx + tx, j = (ty + half) * r.tx + tx;
        Tri<A> u{sh[0][i], sh[1][i], sh[2][i]};
        tri_merge(mode, u, Tri<A>{sh[0][j], sh[1][j], sh[2][j]});
        sh[0][i] = u.a;
        sh[1][i] = u.b;
        sh[2][i] = u.c;
      }
      __syncthreads();
    }
    if (ty == 0 && c < r.C) {
      double* p = partial + ((nb * r.C + c) * r.splits + sp) * kRec;
      p[0] = double(sh[0][tx]);
      p[1] = double(sh[1][tx]);
      p[2] = double(sh[2][tx]);
      p[3] = double(shift);
    }
    __syncthreads();  // the next item reuses sh
  }
}

// ==== statistics and coefficients (double; one thread per channel or group) ==========================

/// Chan's merge in double of partial record p into (n, mean, m2).
__device__ __forceinline__ void merge_partial(double& n, double& mean, double& m2, const double* p) {
  const double nb = p[0];
  if (nb == 0) return;
  if (n == 0) {
    n = nb;
    mean = p[1];
    m2 = p[2];
    return;
  }
  const double tot = n + nb, d = p[1] - mean, r = nb / tot;
  mean += d * r;
  m2 += p[2] + d * d * n * r;
  n = tot;
}

/// Coefficient k of array j (K per array), in the compute type.
__device__ __forceinline__ void store_coef(void* coef, bool dbl, int64_t K, int j, int64_t k, double v) {
  if (dbl)
    static_cast<double*>(coef)[j * K + k] = v;
  else
    static_cast<float*>(coef)[j * K + k] = static_cast<float>(v);
}

struct BnFwdArgs {
  int64_t Nb, C, splits;
  bool training, update;
  double momentum, eps;
};

__global__ void __launch_bounds__(kStatsThreads)
    bn_forward_stats_kernel(const double* __restrict__ partial, const BnFwdArgs a, AnyVec rm, AnyVec rv, AnyVec w,
                            AnyVec b, double* __restrict__ mean_out, double* __restrict__ invstd_out, void* coef,
                            bool coef_double) {
  for (int64_t c = int64_t(blockIdx.x) * kStatsThreads + threadIdx.x; c < a.C;
       c += int64_t(gridDim.x) * kStatsThreads) {
    double mean, invstd;
    if (a.training) {
      double n = 0, m2 = 0;
      mean = 0;
      for (int64_t nb = 0; nb < a.Nb; ++nb)
        for (int64_t sp = 0; sp < a.splits; ++sp)
          merge_partial(n, mean, m2, partial + ((nb * a.C + c) * a.splits + sp) * kRec);
      mean += partial[c * a.splits * kRec + 3];  // the channel's shift (the same in every record)
      const double var = m2 / n;
      invstd = 1.0 / ::sqrt(var + a.eps);
      if (a.update) {
        // the CPU's rule and operation order, without contractions:
        // (1 - m) * r + m * stat, the variance unbiased (var * n / (n - 1))
        const double mom = a.momentum, keep = 1.0 - mom;
        const double r_m = any_load(rm, c, 0.0), r_v = any_load(rv, c, 1.0);
        any_store(rm, c, __dadd_rn(__dmul_rn(keep, r_m), __dmul_rn(mom, mean)));
        const double unbiased = __dmul_rn(__dmul_rn(mom, var), n) / (n - 1.0);
        any_store(rv, c, __dadd_rn(__dmul_rn(keep, r_v), unbiased));
      }
    } else {
      mean = any_load(rm, c, 0.0);
      invstd = 1.0 / ::sqrt(any_load(rv, c, 1.0) + a.eps);
    }
    mean_out[c] = mean;
    invstd_out[c] = invstd;
    store_coef(coef, coef_double, a.C, 0, c, mean);
    store_coef(coef, coef_double, a.C, 1, c, invstd * any_load(w, c, 1.0));
    store_coef(coef, coef_double, a.C, 2, c, any_load(b, c, 0.0));
  }
}

struct BnBwdArgs {
  int64_t Nb, C, splits;  // splits 0: no sums (eval, dx only)
  double n;               // values per channel
  bool training;
};

__global__ void __launch_bounds__(kStatsThreads)
    bn_backward_stats_kernel(const double* __restrict__ partial, const BnBwdArgs a, const double* __restrict__ mean,
                             const double* __restrict__ invstd, AnyVec w, AnyVec dw, AnyVec db, void* coef,
                             bool coef_double) {
  for (int64_t c = int64_t(blockIdx.x) * kStatsThreads + threadIdx.x; c < a.C;
       c += int64_t(gridDim.x) * kStatsThreads) {
    double sdy = 0, sdyx = 0;
    for (int64_t nb = 0; nb < a.Nb; ++nb)
      for (int64_t sp = 0; sp < a.splits; ++sp) {
        const double* p = partial + ((nb * a.C + c) * a.splits + sp) * kRec;
        sdy += p[0];
        sdyx += p[1];
      }
    const double wc = any_load(w, c, 1.0), is = invstd[c];
    const double A = is * wc;
    double B = 0, Cc = 0;
    if (a.training) {
      B = -wc * is * is * is * sdyx / a.n;
      Cc = -A * sdy / a.n;
    }
    store_coef(coef, coef_double, a.C, 0, c, mean[c]);
    store_coef(coef, coef_double, a.C, 1, c, A);
    store_coef(coef, coef_double, a.C, 2, c, B);
    store_coef(coef, coef_double, a.C, 3, c, Cc);
    any_store(dw, c, sdyx * is);
    any_store(db, c, sdy);
  }
}

struct GnArgs {
  int64_t N, C, G, splits;
  double cnt, eps;  // values per group
};

__global__ void __launch_bounds__(kStatsThreads)
    gn_forward_stats_kernel(const double* __restrict__ partial, const GnArgs a, AnyVec w, AnyVec b,
                            double* __restrict__ mean_out, double* __restrict__ rstd_out, void* coef,
                            bool coef_double) {
  const int64_t D = a.C / a.G, K = a.N * a.C;
  for (int64_t ng = int64_t(blockIdx.x) * kStatsThreads + threadIdx.x; ng < a.N * a.G;
       ng += int64_t(gridDim.x) * kStatsThreads) {
    const int64_t n = ng / a.G, g = ng - n * a.G;
    double cnt = 0, mean = 0, m2 = 0;
    for (int64_t c = g * D; c < (g + 1) * D; ++c)
      for (int64_t sp = 0; sp < a.splits; ++sp)
        merge_partial(cnt, mean, m2, partial + ((n * a.C + c) * a.splits + sp) * kRec);
    mean += partial[(n * a.C + g * D) * a.splits * kRec + 3];  // the group's shift
    // m2 past the accumulator's range: NaN, as the CPU kernel (not rstd = 0)
    const double rstd = std::isinf(m2) ? std::numeric_limits<double>::quiet_NaN() : 1.0 / ::sqrt(m2 / a.cnt + a.eps);
    mean_out[ng] = mean;
    rstd_out[ng] = rstd;
    for (int64_t c = g * D; c < (g + 1) * D; ++c) {
      store_coef(coef, coef_double, K, 0, n * a.C + c, mean);
      store_coef(coef, coef_double, K, 1, n * a.C + c, rstd * any_load(w, c, 1.0));
      store_coef(coef, coef_double, K, 2, n * a.C + c, any_load(b, c, 0.0));
    }
  }
}

/// Per (n, group): the per-(n, c) sums (kept in `sums` for the weight and
/// bias gradients) and the dx coefficients of the group's channels.
__global__ void __launch_bounds__(kStatsThreads)
    gn_backward_stats_kernel(const double* __restrict__ partial, const GnArgs a, const double* __restrict__ mean,
                             const double* __restrict__ rstd, AnyVec w, double* __restrict__ sums, void* coef,
                             bool coef_double) {
  const int64_t D = a.C / a.G, K = a.N * a.C;
  for (int64_t ng = int64_t(blockIdx.x) * kStatsThreads + threadIdx.x; ng < a.N * a.G;
       ng += int64_t(gridDim.x) * kStatsThreads) {
    const int64_t n = ng / a.G, g = ng - n * a.G;
    double s1 = 0, s2 = 0;
    for (int64_t c = g * D; c < (g + 1) * D; ++c) {
      double sdy = 0, sdyx = 0;
      for (int64_t sp = 0; sp < a.splits; ++sp) {
        const double* p = partial + ((n * a.C + c) * a.splits + sp) * kRec;
        sdy += p[0];
        sdyx += p[1];
      }
      sums[n * a.C + c] = sdy;
      sums[K + n * a.C + c] = sdyx;
      const double wc = any_load(w, c, 1.0);
      s1 += sdyx * wc;
      s2 += sdy * wc;
    }
    const double r = rstd[ng];
    const double b2 = -r * r * r * s1 / a.cnt, c2 = -r * s2 / a.cnt;
    for (int64_t c = g * D; c < (g + 1) * D; ++c) {
      store_coef(coef, coef_double, K, 0, n * a.C + c, mean[ng]);
      store_coef(coef, coef_double, K, 1, n * a.C + c, r * any_load(w, c, 1.0));
      store_coef(coef, coef_double, K, 2, n * a.C + c, b2);
      store_coef(coef, coef_double, K, 3, n * a.C + c, c2);
    }
  }
}

/// Per channel: dw = sum_n sum dy (x - mean) * rstd, db = sum_n sum dy.
__global__ void __launch_bounds__(kStatsThreads)
    gn_param_grads_kernel(const double* __restrict__ sums, const GnArgs a, const double* __restrict__ rstd,
                          AnyVec dw, AnyVec db) {
  const int64_t D = a.C / a.G, K = a.N * a.C;
  for (int64_t c = int64_t(blockIdx.x) * kStatsThreads + threadIdx.x; c < a.C;
       c += int64_t(gridDim.x) * kStatsThreads) {
    double vw = 0, vb = 0;
    for (int64_t n = 0; n < a.N; ++n) {
      vw += sums[K + n * a.C + c] * rstd[n * a.G + c / D];
      vb += sums[n * a.C + c];
    }
    any_store(dw, c, vw);
    any_store(db, c, vb);
  }
}

// ==== elementwise pass ===============================================================================

/// Element i of dense memory in the view's layout -> coefficient index
/// k = nb * bstride + c; forward y = (x - M) * A + B, backward
/// dx = dy * A + (x - M) * B + Cc (arrays of K coefficients each).
template <class T, class Div>
__global__ void __launch_bounds__(256)
    norm_apply_kernel(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ out,
                      const typename DevAcc<T>::type* __restrict__ coef, int64_t K, int64_t bstride, const Div dS,
                      const Div dC, bool interleaved, decltype(Div{}.div(0)) total) {
  using U = decltype(Div{}.div(0));
  using A = typename DevAcc<T>::type;
  const U C = U(dC.divisor);
  for (U i = U(blockIdx.x) * 256 + threadIdx.x; i < total; i += U(gridDim.x) * 256) {
    U nb, c;
    if (interleaved) {
      const U q = dC.div(i);
      c = i - q * C;
      nb = dS.div(q);
    } else {
      const U row = dS.div(i);
      nb = dC.div(row);
      c = row - nb * C;
    }
    const int64_t k = int64_t(nb) * bstride + int64_t(c);
    const A xm = to_acc(x[i]) - coef[k];
    if (dy == nullptr)
      out[i] = from_acc<T>(xm * coef[K + k] + coef[2 * K + k]);
    else
      out[i] = from_acc<T>(to_acc(dy[i]) * coef[K + k] + xm * coef[2 * K + k] + coef[3 * K + k]);
  }
}

// ==== launchers =========================================================================================

TensorOptions dev_opts(const Tensor& x, ScalarType dt) { return TensorOptions(dt).device(x.device()); }

/// Whether the compute type is double (float64 inputs).
bool acc_double(const Tensor& x) { return x.dtype() == kDouble; }

void check_dense(const Tensor& t, const NormView& v, const char* op) {
  BRISK_CHECK(t.is_cuda(), op, "internal: expected a CUDA tensor");
  BRISK_CHECK(t.numel() == v.Nb * v.C * v.S, op, "internal: tensor of shape ", t.sizes(),
              " does not match the normalization view");
  // dense in the view's layout: contiguous, or channels_last 4-D
  BRISK_CHECK(t.is_contiguous() || (t.dim() == 4 && t.is_contiguous(kChannelsLast)), op,
              "internal: tensor not dense");
}

/// Partial records of every (slot, split), slot = nb * C + c: Welford of x
/// (kWelford) or the backward's sums (kGradSums). Returns them and the split count.
Tensor reduce_partials(const Tensor& x, const Tensor& dy, const NormView& v, int mode, const MeanIndex& mi,
                       const ShiftIndex& si, int64_t& splits, cudaStream_t s, const char* op) {
  const int64_t sms = sm_count();
  Tensor partial;
  BRISK_DISPATCH_FLOAT(x.dtype(), op, [&] {
    using T = typename DevType<scalar_t>::type;
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* gp = dy.defined() ? static_cast<const T*>(dy.data_ptr()) : nullptr;
    if (!v.interleaved) {
      const RowPlan p = plan_rows(v.Nb * v.C, v.S, sms);
      splits = p.splits;
      partial = empty({p.items * kRec}, dev_opts(x, kDouble));
      const RowArgs r{v.C, v.S, p.splits, p.chunk, p.items};
      norm_rows_kernel<T><<<static_cast<int>(p.blocks), kNormThreads, 0, s>>>(xp, gp, mi, si, mode, r,
                                                                               partial.data_ptr<double>());
    } else {
      const ColPlan p = plan_cols(v.Nb, v.C, v.S, sms);
      splits = p.splits;
      partial = empty({v.Nb * v.C * p.splits * kRec}, dev_opts(x, kDouble));
      const ColArgs r{v.C, v.S, p.tiles, p.splits, p.chunk, p.items, p.tx, p.ty};
      norm_cols_kernel<T><<<static_cast<int>(p.blocks), kNormThreads, 0, s>>>(xp, gp, mi, si, mode, r,
                                                                               partial.data_ptr<double>());
    }
  });
  check_launch(op);
  return partial;
}

/// The elementwise pass (dy undefined: forward).
void apply(const Tensor& x, const Tensor& dy, const Tensor& out, const Tensor& coef, int64_t K, int64_t bstride,
           const NormView& v, cudaStream_t s, const char* op) {
  const int64_t total = x.numel();
  if (total == 0) return;
  const int blocks = static_cast<int>(elementwise_blocks(total, sm_count(), 256));
  const bool small = total < std::numeric_limits<int32_t>::max();
  BRISK_DISPATCH_FLOAT(x.dtype(), op, [&] {
    using T = typename DevType<scalar_t>::type;
    using A = typename DevAcc<T>::type;
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* gp = dy.defined() ? static_cast<const T*>(dy.data_ptr()) : nullptr;
    T* op_ = static_cast<T*>(out.data_ptr());
    const A* cp = static_cast<const A*>(coef.data_ptr());
    if (small)
      norm_apply_kernel<T, IntDivider32><<<blocks, 256, 0, s>>>(xp, gp, op_, cp, K, bstride,
                                                                IntDivider32(uint32_t(v.S)), IntDivider32(uint32_t(v.C)),
                                                                v.interleaved, uint32_t(total));
    else
      norm_apply_kernel<T, IntDivider64><<<blocks, 256, 0, s>>>(xp, gp, op_, cp, K, bstride, IntDivider64(v.S),
                                                                IntDivider64(v.C), v.interleaved, uint64_t(total));
  });
  check_launch(op);
}

int stats_blocks(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>(ceil_div(n, kStatsThreads), 1, int64_t(sm_count()) * 8));
}

}  // namespace

std::pair<Tensor, Tensor> batch_norm_forward(const Tensor& x, const Tensor& y, const NormView& v, const Tensor& weight,
                                             const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                                             bool training, bool update, double momentum, double eps) {
  const char* op = "batch_norm";
  check_dense(x, v, op);
  check_dense(y, v, op);
  const int64_t C = v.C;
  Tensor mean = empty({C}, dev_opts(x, kDouble)), invstd = empty({C}, dev_opts(x, kDouble));
  if (C == 0) return {mean, invstd};
  if (x.numel() == 0 && training) {
    // no statistics; the running ones stay as they are (the CPU's rule)
    mean.zero_();
    invstd.zero_();
    return {mean, invstd};
  }
  DeviceGuard g(x.device().index);
  cudaStream_t s = current_stream_handle(x.device().index);
  int64_t splits = 0;
  Tensor partial;
  if (training) {
    // shift: the channel's first value (block 0, position 0)
    const ShiftIndex si{0, 1, v.interleaved ? 1 : v.S};
    partial = reduce_partials(x, Tensor(), v, kWelford, MeanIndex{}, si, splits, s, op);
  }
  const bool dbl = acc_double(x);
  Tensor coef = empty({3 * C}, dev_opts(x, dbl ? kDouble : kFloat));
  BnFwdArgs a{v.Nb, C, splits, training, update, momentum, eps};
  bn_forward_stats_kernel<<<stats_blocks(C), kStatsThreads, 0, s>>>(
      training ? partial.data_ptr<double>() : nullptr, a, any_vec(running_mean), any_vec(running_var), any_vec(weight),
      any_vec(bias), mean.data_ptr<double>(), invstd.data_ptr<double>(), coef.data_ptr(), dbl);
  check_launch(op);
  apply(x, Tensor(), y, coef, C, 0, v, s, op);
  return {mean, invstd};
}

void batch_norm_backward(const Tensor& gy, const Tensor& x, const NormView& v, const Tensor& weight,
                         const Tensor& mean, const Tensor& invstd, bool training, const Tensor& dx, const Tensor& dw,
                         const Tensor& db) {
  const char* op = "batch_norm_backward";
  check_dense(x, v, op);
  check_dense(gy, v, op);
  BRISK_CHECK(gy.dtype() == x.dtype(), op, "internal: gradient of dtype ", gy.dtype(), " for input of dtype ",
              x.dtype());
  if (dx.defined()) check_dense(dx, v, op);
  const int64_t C = v.C;
  if (x.numel() == 0) {
    if (dw.defined()) Tensor(dw).zero_();
    if (db.defined()) Tensor(db).zero_();
    return;
  }
  DeviceGuard g(x.device().index);
  cudaStream_t s = current_stream_handle(x.device().index);
  const bool need_sums = dw.defined() || db.defined() || (dx.defined() && training);
  int64_t splits = 0;
  Tensor partial;
  if (need_sums)
    partial = reduce_partials(x, gy, v, kGradSums, MeanIndex{mean.data_ptr<double>(), 0, 1}, ShiftIndex{}, splits,
                              s, op);
  const bool dbl = acc_double(x);
  Tensor coef = empty({4 * C}, dev_opts(x, dbl ? kDouble : kFloat));
  BnBwdArgs a{v.Nb, C, splits, double(v.Nb * v.S), training};
  bn_backward_stats_kernel<<<stats_blocks(C), kStatsThreads, 0, s>>>(
      need_sums ? partial.data_ptr<double>() : nullptr, a, mean.data_ptr<double>(), invstd.data_ptr<double>(),
      any_vec(weight), any_vec(dw), any_vec(db), coef.data_ptr(), dbl);
  check_launch(op);
  if (dx.defined()) apply(x, gy, dx, coef, C, 0, v, s, op);
}

std::pair<Tensor, Tensor> group_norm_forward(const Tensor& x, const Tensor& y, const NormView& v, int64_t G,
                                             const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "group_norm";
  check_dense(x, v, op);
  check_dense(y, v, op);
  const int64_t N = v.Nb, C = v.C;
  Tensor mean = empty({N * G}, dev_opts(x, kDouble)), rstd = empty({N * G}, dev_opts(x, kDouble));
  if (x.numel() == 0) {
    mean.zero_();
    rstd.zero_();
    return {mean, rstd};
  }
  DeviceGuard g(x.device().index);
  cudaStream_t s = current_stream_handle(x.device().index);
  int64_t splits = 0;
  // shift: the group's first value (its first channel at position 0 of the sample)
  const int64_t D = C / G;
  const ShiftIndex si = v.interleaved ? ShiftIndex{v.S * C, D, D} : ShiftIndex{C * v.S, D, D * v.S};
  const Tensor partial = reduce_partials(x, Tensor(), v, kWelford, MeanIndex{}, si, splits, s, op);
  const bool dbl = acc_double(x);
  Tensor coef = empty({3 * N * C}, dev_opts(x, dbl ? kDouble : kFloat));
  GnArgs a{N, C, G, splits, double((C / G) * v.S), eps};
  gn_forward_stats_kernel<<<stats_blocks(N * G), kStatsThreads, 0, s>>>(partial.data_ptr<double>(), a,
                                                                          any_vec(weight), any_vec(bias),
                                                                          mean.data_ptr<double>(), rstd.data_ptr<double>(),
                                                                          coef.data_ptr(), dbl);
  check_launch(op);
  apply(x, Tensor(), y, coef, N * C, C, v, s, op);
  return {mean, rstd};
}

void group_norm_backward(const Tensor& gy, const Tensor& x, const NormView& v, int64_t G, const Tensor& weight,
                         const Tensor& mean, const Tensor& rstd, const Tensor& dx, const Tensor& dw, const Tensor& db) {
  const char* op = "group_norm_backward";
  check_dense(x, v, op);
  check_dense(gy, v, op);
  BRISK_CHECK(gy.dtype() == x.dtype(), op, "internal: gradient of dtype ", gy.dtype(), " for input of dtype ",
              x.dtype());
  if (dx.defined()) check_dense(dx, v, op);
  const int64_t N = v.Nb, C = v.C;
  if (x.numel() == 0) {
    if (dw.defined()) Tensor(dw).zero_();
    if (db.defined()) Tensor(db).zero_();
    return;
  }
  DeviceGuard g(x.device().index);
  cudaStream_t s = current_stream_handle(x.device().index);
  int64_t splits = 0;
  const Tensor partial =
      reduce_partials(x, gy, v, kGradSums, MeanIndex{mean.data_ptr<double>(), G, C / G}, ShiftIndex{}, splits, s, op);
  const bool dbl = acc_double(x);
  Tensor coef = empty({4 * N * C}, dev_opts(x, dbl ? kDouble : kFloat));
  Tensor sums = empty({2 * N * C}, dev_opts(x, kDouble));
  GnArgs a{N, C, G, splits, double((C / G) * v.S), 0.0};
  gn_backward_stats_kernel<<<stats_blocks(N * G), kStatsThreads, 0, s>>>(
      partial.data_ptr<double>(), a, mean.data_ptr<double>(), rstd.data_ptr<double>(), any_vec(weight),
      sums.data_ptr<double>(), coef.data_ptr(), dbl);
  check_launch(op);
  if (dw.defined() || db.defined()) {
    gn_param_grads_kernel<<<stats_blocks(C), kStatsThreads, 0, s>>>(sums.data_ptr<double>(), a,
                                                                     rstd.data_ptr<double>(), any_vec(dw), any_vec(db));
    check_launch(op);
  }
  if (dx.defined()) apply(x, gy, dx, coef, N * C, C, v, s, op);
}

void register_norm_kernels() {
  register_kernel<OpId::batch_norm>(kCUDA, batch_norm_forward);
  register_kernel<OpId::batch_norm_backward>(kCUDA, batch_norm_backward);
  register_kernel<OpId::group_norm>(kCUDA, group_norm_forward);
  register_kernel<OpId::group_norm_backward>(kCUDA, group_norm_backward);
}

}  // namespace brisk::cuda::detail
