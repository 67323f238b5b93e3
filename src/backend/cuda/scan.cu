// CUDA kernels of the ops along one dim whose output has the input's shape:
// softmax, log_softmax, cumsum, cumprod (DimFn), and the row norms
// layer_norm and rms_norm (RowNormFn; their backward is the composite of
// src/nn/functional.cpp).
//
// The front end passes contiguous `in` and `out` of the same shape and
// dtype; around `dim` they are viewed as (outer, n, inner).
//   softmax/log_softmax: the layout of a reduction without splits (Note
//     [CUDA reduction layout]): the lanes of a row (or column) find the max,
//     then the sum of exp(x - max) in the compute type, then write.
//   cumsum/cumprod: Note [CUDA scan layout] (reduce_plans.h).
#include <limits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/reduce_device.cuh"
#include "backend/cuda/reduce_plans.h"
#include "brisk/cuda.h"
#include "brisk/ops.h"
#include "core/dispatch.h"

namespace brisk::cuda::detail {
namespace {

using rsk::load;

plans::DimLayout layout_of(const Tensor& t, int64_t dim) {
  return plans::dim_layout(t.sizes().data(), t.dim(), dim);
}

// ---- softmax --------------------------------------------------------------------------

template <class M>
struct MaxNanOp {  // max with NaN propagating
  __device__ M identity() const { return -std::numeric_limits<M>::infinity(); }
  __device__ void merge(M& a, const M& b) const { a = (b > a || b != b) ? b : a; }
};
template <class M>
struct AddOp {
  __device__ M identity() const { return M(0); }
  __device__ void merge(M& a, const M& b) const { a += b; }
};

constexpr int kMaxThreads = static_cast<int>(plans::kMaxRowLanes);

// y = exp(x - max) / sum, or (x - max) - log(sum).
template <class T>
__global__ void __launch_bounds__(kMaxThreads)
    softmax_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t n, int64_t inner, plans::ReduceLaunch l,
                   bool log) {
  using M = opmath_t<T>;
  __shared__ M smem[kMaxThreads];
  __shared__ M bcast[kMaxThreads / 32];
  const int64_t lanes = l.row ? l.bx : l.by;
  const MaxNanOp<M> max_op;
  const AddOp<M> add_op;
  for (int64_t b = blockIdx.x; b < l.blocks; b += gridDim.x) {
    plans::ReduceThread t;
    const bool valid = plans::reduce_thread(l, n, inner, b, threadIdx.x, threadIdx.y, t);
    const T* x = in + t.base;
    T* y = out + t.base;
    const int64_t s = t.stride;
    M mx = max_op.identity();
    if (valid)
      for (int64_t r = t.lane; r < n; r += lanes) max_op.merge(mx, static_cast<M>(load(x + r * s)));
    mx = rsk::block_reduce(max_op, mx, l.row, l.bx, l.by, smem);
    if (l.row) mx = rsk::row_broadcast(mx, l.bx, bcast);
    M sum = M(0);
    if (valid)
      for (int64_t r = t.lane; r < n; r += lanes) sum += rsk::dexp(static_cast<M>(load(x + r * s)) - mx);
    sum = rsk::block_reduce(add_op, sum, l.row, l.bx, l.by, smem);
    if (l.row) sum = rsk::row_broadcast(sum, l.bx, bcast);
    if (valid) {
      const M scale = log ? rsk::dlog(sum) : M(1) / sum;
      for (int64_t r = t.lane; r < n; r += lanes) {
        const M d = static_cast<M>(load(x + r * s)) - mx;
        rsk::store(y + r * s, log ? d - scale : rsk::dexp(d) * scale);
      }
    }
  }
}

template <class T>
void launch_softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  const plans::DimLayout d = layout_of(in, dim);
  const plans::ReduceLaunch l = plans::plan_reduce(d.outer, d.n, d.inner, sm_count(), /*allow_split=*/false);
  if (l.blocks == 0 || d.n == 0) return;
  const dim3 grid(static_cast<unsigned>(plans::min64(l.blocks, rsk::kMaxGridX)));
  const dim3 block(static_cast<unsigned>(l.bx), static_cast<unsigned>(l.by));
  softmax_kernel<T><<<grid, block, 0, current_stream_handle()>>>(
      static_cast<const T*>(in.data_ptr()), static_cast<T*>(out.data_ptr()), d.n, d.inner, l, log);
  check_launch(log ? "log_softmax" : "softmax");
}

// ---- layer_norm / rms_norm --------------------------------------------------------------
// One row of x (R, N) per reduction row, as softmax: the mean (layer_norm),
// then the mean of the squared deviations (or of the squares: rms_norm) in
// the compute type, rstd = 1 / sqrt(var + eps) (NaN when var is infinite,
// as the composite and PyTorch give), then y = (x - mean) * rstd * w + b.
template <class T, bool kRms>
__global__ void __launch_bounds__(kMaxThreads)
    row_norm_kernel(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ w, const T* __restrict__ bias,
                    opmath_t<T>* __restrict__ mean_out, opmath_t<T>* __restrict__ rstd_out, int64_t n,
                    plans::ReduceLaunch l, opmath_t<T> eps) {
  using M = opmath_t<T>;
  __shared__ M smem[kMaxThreads];
  __shared__ M bcast[kMaxThreads / 32];
  const int64_t lanes = l.row ? l.bx : l.by;
  const AddOp<M> add_op;
  for (int64_t b = blockIdx.x; b < l.blocks; b += gridDim.x) {
    plans::ReduceThread t;
    const bool valid = plans::reduce_thread(l, n, 1, b, threadIdx.x, threadIdx.y, t);
    const T* x = in + t.base;
    T* y = out + t.base;
    const int64_t s = t.stride;
    M mean = M(0);
    if (!kRms) {
      M sum = M(0);
      if (valid)
        for (int64_t r = t.lane; r < n; r += lanes) sum += static_cast<M>(load(x + r * s));
      sum = rsk::block_reduce(add_op, sum, l.row, l.bx, l.by, smem);
      if (l.row) sum = rsk::row_broadcast(sum, l.bx, bcast);
      mean = sum / static_cast<M>(n);
    }
    M sq = M(0);
    if (valid)
      for (int64_t r = t.lane; r < n; r += lanes) {
        const M d = static_cast<M>(load(x + r * s)) - mean;
        sq += d * d;
      }
    sq = rsk::block_reduce(add_op, sq, l.row, l.bx, l.by, smem);
    if (l.row) sq = rsk::row_broadcast(sq, l.bx, bcast);
    const M var = sq / static_cast<M>(n);
    const M rstd = ::isinf(var) ? std::numeric_limits<M>::quiet_NaN() : M(1) / ::sqrt(var + eps);
    if (valid) {
      if (t.lane == 0) {
        if (!kRms) mean_out[t.out] = mean;
        rstd_out[t.out] = rstd;
      }
      for (int64_t r = t.lane; r < n; r += lanes) {
        M v = (static_cast<M>(load(x + r * s)) - mean) * rstd;
        if (w != nullptr) v = v * static_cast<M>(load(w + r));
        if (bias != nullptr) v = v + static_cast<M>(load(bias + r));
        rsk::store(y + r * s, v);
      }
    }
  }
}

template <bool kRms>
void row_norm_entry(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                    const Tensor& bias, double eps) {
  const char* name = kRms ? "rms_norm" : "layer_norm";
  BRISK_CHECK(x.dim() == 2 && x.is_contiguous() && y.is_contiguous() && y.sizes() == x.sizes() &&
                  y.dtype() == x.dtype() && rstd.defined() && (kRms || mean.defined()),
              name, "CUDA kernel expects contiguous (R, N) x and y of one dtype and the statistics");
  const int64_t R = x.size(0), N = x.size(1);
  if (R == 0 || N == 0) return;  // (no element of y; the backward recomputes its statistics)
  DeviceGuard guard(x.device());
  BRISK_DISPATCH_FLOAT(x.dtype(), name, [&] {
    using T = scalar_t;
    using M = opmath_t<T>;
    BRISK_CHECK(rstd.dtype() == dtype_of<M> && (kRms || mean.dtype() == rstd.dtype()), name,
                "CUDA kernel expects statistics in the compute dtype");
    for (const Tensor* p : {&weight, &bias})
      BRISK_CHECK(!p->defined() || (p->dtype() == x.dtype() && p->is_contiguous() && p->numel() == N), name,
                  "CUDA kernel expects weight and bias of x's dtype with N elements");
    const plans::ReduceLaunch l = plans::plan_reduce(R, N, 1, sm_count(), /*allow_split=*/false);
    if (l.blocks == 0) return;
    const dim3 grid(static_cast<unsigned>(plans::min64(l.blocks, rsk::kMaxGridX)));
    const dim3 block(static_cast<unsigned>(l.bx), static_cast<unsigned>(l.by));
    row_norm_kernel<T, kRms><<<grid, block, 0, current_stream_handle()>>>(
        static_cast<const T*>(x.data_ptr()), static_cast<T*>(y.data_ptr()),
        weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr,
        !kRms && bias.defined() ? static_cast<const T*>(bias.data_ptr()) : nullptr,
        kRms ? nullptr : static_cast<M*>(mean.data_ptr()), static_cast<M*>(rstd.data_ptr()), N, l, static_cast<M>(eps));
    check_launch(name);
  });
}

void check_dim_args(const Tensor& out, const Tensor& in, const char* name) {
  BRISK_CHECK(in.is_contiguous() && out.is_contiguous() && out.dtype() == in.dtype() && out.sizes() == in.sizes(),
              name, "CUDA kernel expects contiguous input and output of the same shape and dtype");
}

template <bool kLog>
void softmax_entry(const Tensor& out, const Tensor& in, int64_t dim, const KernelArgs&) {
  const char* name = kLog ? "log_softmax" : "softmax";
  check_dim_args(out, in, name);
  if (in.numel() == 0) return;
  DeviceGuard guard(in.device());
  BRISK_DISPATCH_FLOAT(in.dtype(), name, [&] { launch_softmax<scalar_t>(out, in, dim, kLog); });
}

// ---- cumsum / cumprod ----------------------------------------------------------------

// Running sums/products accumulate as on the CPU: double for float and
// double, float for the 16-bit floats, uint64 (wrapping) for int64.
template <class T>
struct ScanAcc {
  using type = double;
};
template <>
struct ScanAcc<Half> {
  using type = float;
};
template <>
struct ScanAcc<BFloat16> {
  using type = float;
};
template <>
struct ScanAcc<int64_t> {
  using type = uint64_t;
};

template <class A>
struct Combine {
  bool prod;
  __device__ A identity() const { return prod ? A(1) : A(0); }
  __device__ A operator()(A a, A b) const { return prod ? a * b : a + b; }
  __device__ void merge(A& a, const A& b) const { a = (*this)(a, b); }
};

/// Inclusive scan of v over each row's bx lanes (Note [CUDA scan layout]);
/// *total gets the combination of all the row's lanes. wsum: room for 32
/// values (bx > 32 only). Every thread of the block must call it.
template <class A>
__device__ __forceinline__ A row_inclusive_scan(const Combine<A>& c, A v, int bx, A* wsum, A* total) {
  const int tx = threadIdx.x;
  const int width = bx < 32 ? bx : 32;
  const int lane = tx & (width - 1);
  for (int off = 1; off < width; off <<= 1) {
    const A o = rsk::shfl_up(v, static_cast<unsigned>(off), width);
    if (lane >= off) v = c(o, v);
  }
  if (bx <= 32) {
    *total = rsk::shfl_idx(v, width - 1, width);
    return v;
  }
  // bx > 32: one row per block (by == 1); scan the warps' totals.
  const int warp = tx >> 5, nwarps = bx >> 5;
  if (lane == 31) wsum[warp] = v;
  __syncthreads();
  if (warp == 0) {
    A w = lane < nwarps ? wsum[lane] : c.identity();
    for (int off = 1; off < 32; off <<= 1) {
      const A o = rsk::shfl_up(w, static_cast<unsigned>(off), 32);
      if (lane >= off) w = c(o, w);
    }
    if (lane < nwarps) wsum[lane] = w;
  }
  __syncthreads();
  if (warp > 0) v = c(wsum[warp - 1], v);
  *total = wsum[nwarps - 1];
  __syncthreads();
  return v;
}

// Pass 1 of a chunked scan: totals[chunk * nseq + seq].
template <class T>
__global__ void __launch_bounds__(kMaxThreads)
    scan_totals_kernel(const T* __restrict__ in, int64_t n, int64_t inner, plans::ScanLaunch l, bool prod,
                       typename ScanAcc<T>::type* __restrict__ totals) {
  using A = typename ScanAcc<T>::type;
  __shared__ A smem[kMaxThreads];
  const Combine<A> c{prod};
  const int64_t ch = blockIdx.y;
  int64_t r0, r1;
  plans::chunk_range(l.chunk, n, ch, r0, r1);
  for (int64_t b = blockIdx.x; b < l.blocks; b += gridDim.x) {
    int64_t seq, base, stride;
    const bool valid = plans::scan_thread(l, n, inner, b, threadIdx.x, threadIdx.y, seq, base, stride);
    const T* x = in + base;
    A acc = c.identity();
    if (l.row) {
      if (valid)
        for (int64_t r = r0 + threadIdx.x; r < r1; r += l.bx) acc = c(acc, static_cast<A>(load(x + r)));
      acc = rsk::block_reduce(c, acc, true, l.bx, l.by, smem);
      if (valid && threadIdx.x == 0) totals[ch * l.nseq + seq] = acc;
    } else if (valid) {
      for (int64_t r = r0; r < r1; ++r) acc = c(acc, static_cast<A>(load(x + r * stride)));
      totals[ch * l.nseq + seq] = acc;
    }
  }
}

// Pass 2: each sequence's chunk totals become the carry into each chunk.
template <class A>
__global__ void scan_carries_kernel(A* __restrict__ totals, int64_t nseq, int64_t chunks, bool prod) {
  const Combine<A> c{prod};
  const int64_t seq = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (seq >= nseq) return;
  A run = c.identity();
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const A t = totals[ch * nseq + seq];
    totals[ch * nseq + seq] = run;
    run = c(run, t);
  }
}

// The scan of chunk blockIdx.y, starting from its carry (none: identity).
template <class T>
__global__ void __launch_bounds__(kMaxThreads)
    scan_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t n, int64_t inner, plans::ScanLaunch l, bool prod,
                const typename ScanAcc<T>::type* __restrict__ carries) {
  using A = typename ScanAcc<T>::type;
  __shared__ A wsum[32];
  const Combine<A> c{prod};
  const int64_t ch = blockIdx.y;
  int64_t r0, r1;
  plans::chunk_range(l.chunk, n, ch, r0, r1);
  for (int64_t b = blockIdx.x; b < l.blocks; b += gridDim.x) {
    int64_t seq, base, stride;
    const bool valid = plans::scan_thread(l, n, inner, b, threadIdx.x, threadIdx.y, seq, base, stride);
    const T* x = in + base;
    T* y = out + base;
    A carry = valid && carries ? carries[ch * l.nseq + seq] : c.identity();
    if (l.row) {
      // every lane walks the same tiles (the shuffles need the whole warp)
      for (int64_t t0 = r0; t0 < r1; t0 += l.bx) {
        const int64_t r = t0 + threadIdx.x;
        const bool here = valid && r < r1;
        A v = here ? static_cast<A>(load(x + r)) : c.identity();
        A total;
        v = row_inclusive_scan(c, v, l.bx, wsum, &total);
        if (here) rsk::store(y + r, c(carry, v));
        carry = c(carry, total);
      }
    } else if (valid) {
      for (int64_t r = r0; r < r1; ++r) {
        carry = c(carry, static_cast<A>(load(x + r * stride)));
        rsk::store(y + r * stride, carry);
      }
    }
  }
}

template <class T>
void launch_scan(const Tensor& out, const Tensor& in, int64_t dim, bool prod) {
  using A = typename ScanAcc<T>::type;
  const char* name = prod ? "cumprod" : "cumsum";
  const plans::DimLayout d = layout_of(in, dim);
  const plans::ScanLaunch l = plans::plan_scan(d.outer, d.n, d.inner, sm_count());
  if (l.blocks == 0) return;
  cudaStream_t stream = current_stream_handle();
  const T* x = static_cast<const T*>(in.data_ptr());
  const dim3 grid(static_cast<unsigned>(plans::min64(l.blocks, rsk::kMaxGridX)), static_cast<unsigned>(l.chunks));
  const dim3 block(static_cast<unsigned>(l.bx), static_cast<unsigned>(l.by));
  Tensor tmp;
  A* carries = nullptr;
  if (l.chunks > 1) {
    tmp = empty({l.chunks * l.nseq * static_cast<int64_t>(sizeof(A))}, TensorOptions(kUInt8).device(in.device()));
    carries = static_cast<A*>(tmp.data_ptr());
    scan_totals_kernel<T><<<grid, block, 0, stream>>>(x, d.n, d.inner, l, prod, carries);
    check_launch(name);
    constexpr int kThreads = 256;
    scan_carries_kernel<A><<<static_cast<unsigned>(plans::div_up(l.nseq, kThreads)), kThreads, 0, stream>>>(
        carries, l.nseq, l.chunks, prod);
    check_launch(name);
  }
  scan_kernel<T><<<grid, block, 0, stream>>>(x, static_cast<T*>(out.data_ptr()), d.n, d.inner, l, prod, carries);
  check_launch(name);
}

template <bool kProd>
void scan_entry(const Tensor& out, const Tensor& in, int64_t dim, const KernelArgs&) {
  const char* name = kProd ? "cumprod" : "cumsum";
  check_dim_args(out, in, name);
  if (in.numel() == 0) return;
  DeviceGuard guard(in.device());
  // The front end computes integers in int64.
  switch (in.dtype()) {
    case kInt64: return launch_scan<int64_t>(out, in, dim, kProd);
    case kHalf: return launch_scan<Half>(out, in, dim, kProd);
    case kBFloat16: return launch_scan<BFloat16>(out, in, dim, kProd);
    case kFloat: return launch_scan<float>(out, in, dim, kProd);
    case kDouble: return launch_scan<double>(out, in, dim, kProd);
    default: BRISK_FAIL(name, "CUDA kernel does not support dtype ", in.dtype());
  }
}

}  // namespace

void register_scan_kernels() {
  register_kernel<OpId::softmax>(kCUDA, softmax_entry<false>);
  register_kernel<OpId::log_softmax>(kCUDA, softmax_entry<true>);
  register_kernel<OpId::cumsum>(kCUDA, scan_entry<false>);
  register_kernel<OpId::cumprod>(kCUDA, scan_entry<true>);
  register_kernel<OpId::layer_norm>(kCUDA, row_norm_entry<false>);
  register_kernel<OpId::rms_norm>(kCUDA, row_norm_entry<true>);
}

}  // namespace brisk::cuda::detail
