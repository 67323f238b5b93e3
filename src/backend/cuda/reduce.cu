// CUDA kernels of the reductions over a ReducePlan (Note [ReducePlan]):
// sum/mean, prod, amax/amin, argmax/argmin (values + indices), var/std (with
// the mean), norm, all/any.
//
// One kernel template runs every op: an op is a small struct (identity,
// step, merge, store) and the layout follows Note [CUDA reduction layout]
// (reduce_plans.h). Long reductions over few outputs are split over blocks
// whose partial accumulators a second kernel merges in a fixed order, so
// the results are deterministic (no atomics).
#include <cmath>
#include <limits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/reduce_device.cuh"
#include "backend/cuda/reduce_plans.h"
#include "brisk/cuda.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/reduce_plan.h"

namespace brisk::cuda::detail {
namespace {

using rsk::is_nan;
using rsk::load;

// Sums and products accumulate in float for the 16-bit floats and float,
// double for double, and uint64 for int64 (wrap-around without UB), as on the CPU.
template <class T>
struct SumAcc {
  using type = opmath_t<T>;
};
template <>
struct SumAcc<int64_t> {
  using type = uint64_t;
};

// ---- ops ---------------------------------------------------------------------------

template <class T>
struct SumOp {
  using M = typename SumAcc<T>::type;
  using acc_t = M;
  T* out;
  bool mean;
  M n;  // the reduce size (Mean)
  __device__ M identity() const { return M(0); }
  __device__ void step(M& a, M v, int64_t) const { a += v; }
  __device__ void merge(M& a, const M& b) const { a += b; }
  __device__ void store(int64_t k, const M& a) const { rsk::store(out + k, mean ? a / n : a); }
};

template <class T>
struct ProdOp {
  using M = typename SumAcc<T>::type;
  using acc_t = M;
  T* out;
  __device__ M identity() const { return M(1); }
  __device__ void step(M& a, M v, int64_t) const { a *= v; }
  __device__ void merge(M& a, const M& b) const { a *= b; }
  __device__ void store(int64_t k, const M& a) const { rsk::store(out + k, a); }
};

// amax/amin: NaN propagates.
template <class T>
struct MinMaxOp {
  using M = opmath_t<T>;
  using acc_t = M;
  T* out;
  bool is_max;
  __device__ M identity() const { return is_max ? rsk::lowest_value<M>() : rsk::highest_value<M>(); }
  __device__ void step(M& a, M v, int64_t) const {
    const bool better = is_max ? (v > a) : (v < a);
    a = (better || is_nan(v)) ? v : a;
  }
  __device__ void merge(M& a, const M& b) const { step(a, b, 0); }
  __device__ void store(int64_t k, const M& a) const { rsk::store(out + k, a); }
};

// argmax/argmin in one pass over (value, index) pairs: a NaN beats every
// number, a better value wins, equal values (and two NaNs) keep the smaller
// index. The order of merges does not matter, so the result is the CPU's:
// the first index holding the max (or the first NaN).
template <class M>
struct ArgAcc {
  M v;
  int64_t i;
};
template <class T>
struct ArgOp {
  using M = opmath_t<T>;
  using acc_t = ArgAcc<M>;
  T* values;  // may be null
  int64_t* indices;
  bool is_max;
  __device__ acc_t identity() const {
    return {is_max ? rsk::lowest_value<M>() : rsk::highest_value<M>(), std::numeric_limits<int64_t>::max()};
  }
  __device__ void merge(acc_t& a, const acc_t& b) const {
    const bool an = is_nan(a.v), bn = is_nan(b.v);
    bool take;
    if (an || bn)
      take = (an && bn) ? b.i < a.i : bn;
    else if (b.v == a.v)
      take = b.i < a.i;
    else
      take = is_max ? (b.v > a.v) : (b.v < a.v);
    if (take) a = b;
  }
  __device__ void step(acc_t& a, M v, int64_t r) const { merge(a, acc_t{v, r}); }
  __device__ void store(int64_t k, const acc_t& a) const {
    if (values) rsk::store(values + k, a.v);
    indices[k] = a.i;
  }
};

// var/std: Welford's update per element and Chan's merge of partial
// (count, mean, m2); m2 never goes negative, a constant input gives exactly 0.
template <class M>
struct VarAcc {
  int64_t n;
  M mean, m2;
};
template <class T>
struct VarOp {
  using M = opmath_t<T>;
  using acc_t = VarAcc<M>;
  T* out;
  T* out_mean;  // may be null
  M divisor;    // max(0, reduce - correction)
  bool take_sqrt;
  __device__ acc_t identity() const { return {0, M(0), M(0)}; }
  // Four values at once: their own mean and m2, then one merge (one division
  // per four elements instead of four).
  __device__ void step4(acc_t& a, M v0, M v1, M v2, M v3) const {
    const M mb = (v0 + v1 + v2 + v3) * M(0.25);
    const M d0 = v0 - mb, d1 = v1 - mb, d2 = v2 - mb, d3 = v3 - mb;
    merge(a, acc_t{4, mb, d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3});
  }
  __device__ void step(acc_t& a, M v, int64_t) const {
    a.n += 1;
    const M d = v - a.mean;
    a.mean += d / static_cast<M>(a.n);
    a.m2 += d * (v - a.mean);
  }
  __device__ void merge(acc_t& a, const acc_t& b) const {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    const int64_t n = a.n + b.n;
    const M d = b.mean - a.mean;
    const M f = static_cast<M>(b.n) / static_cast<M>(n);
    a.mean += d * f;
    a.m2 += b.m2 + d * d * static_cast<M>(a.n) * f;
    a.n = n;
  }
  __device__ void store(int64_t k, const acc_t& a) const {
    // An empty reduction: the mean 0/0 and the variance are NaN, as on the CPU.
    const M nan = std::numeric_limits<M>::quiet_NaN();
    const M mean = a.n == 0 ? nan : a.mean;
    M v = a.n == 0 ? nan : a.m2 / divisor;
    if (take_sqrt) v = rsk::dsqrt(v);
    rsk::store(out + k, v);
    if (out_mean) rsk::store(out_mean + k, mean);
  }
};

template <class T>
struct NormOp {
  using M = T;  // float or double (the front end computes 16-bit floats in float)
  using acc_t = M;
  T* out;
  int mode;  // NormMode
  M p;
  bool empty;
  __device__ M identity() const {
    return mode == static_cast<int>(NormMode::NegInf) ? std::numeric_limits<M>::infinity() : M(0);
  }
  __device__ void step(M& a, M v, int64_t) const {
    const M x = v < M(0) ? -v : v;  // |v| (NaN stays NaN)
    switch (static_cast<NormMode>(mode)) {
      case NormMode::L2: a += x * x; break;
      case NormMode::L1: a += x; break;
      case NormMode::L0: a += v != M(0) ? M(1) : M(0); break;
      case NormMode::Inf: a = (x > a || x != x) ? x : a; break;
      case NormMode::NegInf: a = (x < a || x != x) ? x : a; break;
      case NormMode::General: a += rsk::dpow(x, p); break;
    }
  }
  __device__ void merge(M& a, const M& b) const {
    if (mode == static_cast<int>(NormMode::Inf))
      a = (b > a || b != b) ? b : a;
    else if (mode == static_cast<int>(NormMode::NegInf))
      a = (b < a || b != b) ? b : a;
    else
      a += b;
  }
  __device__ void store(int64_t k, const M& a) const {
    M r = a;
    if (empty)
      r = M(0);
    else if (mode == static_cast<int>(NormMode::L2))
      r = rsk::dsqrt(a);
    else if (mode == static_cast<int>(NormMode::General))
      r = rsk::dpow(a, M(1) / p);
    out[k] = r;
  }
};

// all/any over bytes (bool or uint8 input), bytes out.
struct AllAnyOp {
  using M = uint8_t;
  using acc_t = uint8_t;
  uint8_t* out;
  bool all;
  __device__ uint8_t identity() const { return all ? 1 : 0; }
  __device__ void step(uint8_t& a, uint8_t v, int64_t) const {
    const uint8_t nz = v != 0 ? 1 : 0;
    a = all ? (a & nz) : (a | nz);
  }
  __device__ void merge(uint8_t& a, const uint8_t& b) const { a = all ? (a & b) : (a | b); }
  __device__ void store(int64_t k, const uint8_t& a) const { out[k] = a; }
};

// ---- kernels -------------------------------------------------------------------------

constexpr int kMaxThreads = static_cast<int>(plans::kMaxRowLanes);  // widest block (512 x 1)

// Ops that merge four consecutive values of a lane faster than four steps (var).
template <class Op, class A, class M>
concept HasStep4 = requires(const Op& op, A& a, M v) { op.step4(a, v, v, v, v); };

// Each block reduces its outputs over the reduce positions of chunk
// blockIdx.y; with one chunk it stores the results, otherwise partials.
template <class T, class Op>
__global__ void __launch_bounds__(kMaxThreads)
    reduce_kernel(const T* __restrict__ in, int64_t reduce, int64_t inner, plans::ReduceLaunch l, Op op,
                  typename Op::acc_t* __restrict__ partial) {
  using A = typename Op::acc_t;
  using M = typename Op::M;
  __shared__ __align__(16) unsigned char smem_raw[kMaxThreads * sizeof(A)];
  A* smem = reinterpret_cast<A*>(smem_raw);
  int64_t r0, r1;
  plans::chunk_range(l.chunk, reduce, blockIdx.y, r0, r1);
  const int64_t lanes = l.row ? l.bx : l.by;
  for (int64_t b = blockIdx.x; b < l.blocks; b += gridDim.x) {
    plans::ReduceThread t;
    const bool valid = plans::reduce_thread(l, reduce, inner, b, threadIdx.x, threadIdx.y, t);
    A acc = op.identity();
    if (valid) {
      const T* x = in + t.base;
      const int64_t s = t.stride;
      int64_t r = r0 + t.lane;
      // four loads in flight per thread
      for (; r + 3 * lanes < r1; r += 4 * lanes) {
        const M v0 = load(x + r * s);
        const M v1 = load(x + (r + lanes) * s);
        const M v2 = load(x + (r + 2 * lanes) * s);
        const M v3 = load(x + (r + 3 * lanes) * s);
        if constexpr (HasStep4<Op, A, M>) {
          op.step4(acc, v0, v1, v2, v3);
        } else {
          op.step(acc, v0, r);
          op.step(acc, v1, r + lanes);
          op.step(acc, v2, r + 2 * lanes);
          op.step(acc, v3, r + 3 * lanes);
        }
      }
      for (; r < r1; r += lanes) op.step(acc, static_cast<M>(load(x + r * s)), r);
    }
    acc = rsk::block_reduce(op, acc, l.row, l.bx, l.by, smem);
    if (valid && t.lane == 0) {
      if (l.splits == 1)
        op.store(t.out, acc);
      else
        partial[static_cast<int64_t>(blockIdx.y) * l.nout + t.out] = acc;
    }
  }
}

// Second pass of a split reduction: one warp per output merges its partials.
constexpr int kFinalizeThreads = 256;
template <class Op>
__global__ void __launch_bounds__(kFinalizeThreads)
    finalize_kernel(const typename Op::acc_t* __restrict__ partial, int64_t nout, int64_t splits, Op op) {
  using A = typename Op::acc_t;
  const int lane = threadIdx.x & 31;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * (kFinalizeThreads / 32) + (threadIdx.x >> 5);
  if (k >= nout) return;  // the whole warp
  A acc = op.identity();
  for (int64_t s = lane; s < splits; s += 32) op.merge(acc, partial[s * nout + k]);
  acc = rsk::group_reduce(op, acc, 32);
  if (lane == 0) op.store(k, acc);
}

template <class T, class Op>
void launch_reduce(const ReducePlan& p, const Op& op, const char* name) {
  using A = typename Op::acc_t;
  if (p.num_outputs() <= 0) return;
  DeviceGuard guard(p.device);
  const plans::ReduceLaunch l = plans::plan_reduce(p.outer, p.reduce, p.inner, sm_count());
  if (l.blocks == 0) return;
  cudaStream_t stream = current_stream_handle();
  Tensor tmp;  // partials; stream-ordered, so freeing it at return is safe
  A* partial = nullptr;
  if (l.splits > 1) {
    tmp = empty({l.splits * l.nout * static_cast<int64_t>(sizeof(A))}, TensorOptions(kUInt8).device(p.device));
    partial = static_cast<A*>(tmp.data_ptr());
  }
  const dim3 grid(static_cast<unsigned>(plans::min64(l.blocks, rsk::kMaxGridX)), static_cast<unsigned>(l.splits));
  const dim3 block(static_cast<unsigned>(l.bx), static_cast<unsigned>(l.by));
  reduce_kernel<T, Op><<<grid, block, 0, stream>>>(static_cast<const T*>(p.in), p.reduce, p.inner, l, op, partial);
  check_launch(name);
  if (l.splits > 1) {
    const int64_t nblocks = plans::div_up(l.nout, kFinalizeThreads / 32);
    finalize_kernel<Op><<<static_cast<unsigned>(nblocks), kFinalizeThreads, 0, stream>>>(partial, l.nout, l.splits, op);
    check_launch(name);
  }
}

void check_out_dtype(const ReducePlan& p, ScalarType want, const char* name) {
  BRISK_CHECK(p.out_dtype == want, name, "CUDA reduction kernel expects a ", want, " output, got ", p.out_dtype);
}

// The dtypes sum/prod/mean compute in (the front end casts the others).
template <class F>
void dispatch_sum_types(ScalarType t, const char* op, const F& f) {
  switch (t) {
    case kInt64: return f.template operator()<int64_t>();
    case kHalf: return f.template operator()<Half>();
    case kBFloat16: return f.template operator()<BFloat16>();
    case kFloat: return f.template operator()<float>();
    case kDouble: return f.template operator()<double>();
    default: BRISK_FAIL(op, "CUDA reduction kernel does not support dtype ", t);
  }
}

void sum_kernel(ReducePlan& p, const KernelArgs& a) {
  const bool mean = static_cast<SumMode>(a.mode) == SumMode::Mean;
  check_out_dtype(p, p.in_dtype, "sum");
  dispatch_sum_types(p.in_dtype, "sum", [&]<class T>() {
    using M = typename SumAcc<T>::type;
    launch_reduce<T>(p, SumOp<T>{static_cast<T*>(p.out), mean, static_cast<M>(p.reduce)}, mean ? "mean" : "sum");
  });
}

void prod_kernel(ReducePlan& p, const KernelArgs&) {
  check_out_dtype(p, p.in_dtype, "prod");
  dispatch_sum_types(p.in_dtype, "prod", [&]<class T>() {
    launch_reduce<T>(p, ProdOp<T>{static_cast<T*>(p.out)}, "prod");
  });
}

template <bool kMax>
void minmax_kernel(ReducePlan& p, const KernelArgs&) {
  const char* name = kMax ? "amax" : "amin";
  check_out_dtype(p, p.in_dtype, name);
  BRISK_DISPATCH_ALL(p.in_dtype, name, [&] {
    launch_reduce<scalar_t>(p, MinMaxOp<scalar_t>{static_cast<scalar_t*>(p.out), kMax}, name);
  });
}

// out = values (may be null), out2 = int64 indices.
template <bool kMax>
void arg_kernel(ReducePlan& p, const KernelArgs&) {
  const char* name = kMax ? "argmax" : "argmin";
  if (p.out) check_out_dtype(p, p.in_dtype, name);
  BRISK_CHECK(p.out2 != nullptr && p.out2_dtype == kInt64, name, "CUDA kernel expects an int64 index output");
  BRISK_DISPATCH_ALL(p.in_dtype, name, [&] {
    using T = scalar_t;
    launch_reduce<T>(p, ArgOp<T>{static_cast<T*>(p.out), static_cast<int64_t*>(p.out2), kMax}, name);
  });
}

// out = var (or std), out2 = mean (may be null).
void var_kernel(ReducePlan& p, const KernelArgs& a) {
  const bool take_sqrt = static_cast<VarMode>(a.mode) == VarMode::Std;
  const double correction = a.s0.to_double();
  check_out_dtype(p, p.in_dtype, "var");
  if (p.out2) BRISK_CHECK(p.out2_dtype == p.in_dtype, "var", "CUDA kernel expects the mean in ", p.in_dtype);
  BRISK_DISPATCH_FLOAT(p.in_dtype, "var", [&] {
    using T = scalar_t;
    using M = opmath_t<T>;
    const M divisor = static_cast<M>(std::max(0.0, static_cast<double>(p.reduce) - correction));
    launch_reduce<T>(p, VarOp<T>{static_cast<T*>(p.out), static_cast<T*>(p.out2), divisor, take_sqrt}, "var");
  });
}

void norm_kernel(ReducePlan& p, const KernelArgs& a) {
  check_out_dtype(p, p.in_dtype, "norm");
  const double pval = a.s0.to_double();
  const bool empty = p.reduce == 0;
  switch (p.in_dtype) {
    case kFloat:
      return launch_reduce<float>(p, NormOp<float>{static_cast<float*>(p.out), a.mode, static_cast<float>(pval), empty},
                                  "norm");
    case kDouble:
      return launch_reduce<double>(p, NormOp<double>{static_cast<double*>(p.out), a.mode, pval, empty}, "norm");
    default: BRISK_FAIL("norm", "CUDA reduction kernel does not support dtype ", p.in_dtype);
  }
}

template <bool kAll>
void all_any_kernel(ReducePlan& p, const KernelArgs&) {
  const char* name = kAll ? "all" : "any";
  BRISK_CHECK(p.in_dtype == kBool || p.in_dtype == kUInt8, name, "reduction kernel expects bool or uint8 input, got ",
              p.in_dtype);
  launch_reduce<uint8_t>(p, AllAnyOp{static_cast<uint8_t*>(p.out), kAll}, name);
}

}  // namespace

void register_reduce_kernels() {
  register_kernel<OpId::sum>(kCUDA, sum_kernel);
  register_kernel<OpId::prod>(kCUDA, prod_kernel);
  register_kernel<OpId::amax>(kCUDA, minmax_kernel<true>);
  register_kernel<OpId::amin>(kCUDA, minmax_kernel<false>);
  register_kernel<OpId::argmax>(kCUDA, arg_kernel<true>);
  register_kernel<OpId::argmin>(kCUDA, arg_kernel<false>);
  register_kernel<OpId::var>(kCUDA, var_kernel);
  register_kernel<OpId::norm>(kCUDA, norm_kernel);
  register_kernel<OpId::all>(kCUDA, all_any_kernel<true>);
  register_kernel<OpId::any>(kCUDA, all_any_kernel<false>);
}

}  // namespace brisk::cuda::detail
