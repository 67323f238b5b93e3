// CPU kernels of the reductions (sum/mean, prod, amax/amin, argmax/argmin
// with values, var/std, norm, all/any) over a ReducePlan (Note [ReducePlan]).
//
// One engine, reduce_loop, owns the loops and the threads; an op is a small
// struct (identity, step, merge) and a store lambda writes its final value.
// Sums are pairwise over blocks of independent accumulators, so summing 1e7
// float32 values stays within ~1e-7 relative of the exact sum and the inner
// loops vectorize.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "backend/cpu/vec_math.h"
#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/reduce_plan.h"

#ifndef BRISK_CPU_ISA
#error "kernel files are compiled once per ISA"
#endif

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
void register_scan_kernels();

namespace {

constexpr int kLanes = 16;              // independent accumulators along a contiguous row
constexpr int64_t kRowBlock = 32 * kLanes;  // pairwise base case of a row
constexpr int64_t kTileWidth = 1024;    // outputs per task in the (reduce, inner) layout
constexpr int64_t kTileBlock = 32;      // pairwise base case (rows) of a tile
constexpr int64_t kChunk = 32768;       // elements per partial result of a split reduction
constexpr int64_t kFewTasks = 8;        // below this many tasks, long reductions are split
constexpr int64_t kMaxChunks = 256;     // partial results per task at most

// Sums accumulate in float for the 16-bit floats and float, in double for
// double, and in uint64 for integers (two's complement wrap-around without UB).
template <class T>
struct SumAcc {
  using type = opmath_t<T>;
};
template <>
struct SumAcc<int64_t> {
  using type = uint64_t;
};

// ---- the engine ---------------------------------------------------------------

template <class T, bool kMax>
struct MinMaxOp;
template <class Op>
struct IsFloatMinMax : std::false_type {};
template <class T, bool kMax>
struct IsFloatMinMax<MinMaxOp<T, kMax>> : std::bool_constant<std::is_same_v<T, float> || std::is_same_v<T, double>> {};

template <class T>
struct ProdOp;
template <class Op>
struct IsFloatProd : std::false_type {};
template <class T>
struct IsFloatProd<ProdOp<T>> : std::bool_constant<std::is_same_v<T, float> || std::is_same_v<T, double>> {};

// Note [Vector prod]
// prod of a contiguous float32/float64 row, in double (ProdAcc): eight
// vector accumulators, so the multiplies' latency overlaps (ProdOp's sixteen
// scalar lanes were two dependent chains of vmulpd, 2x PyTorch's time on
// rows of 1024). The order of the products differs from the lanes'; a
// float64 product may differ in its last bit, a float32 one is rounded from
// double once.
template <class T>
double prod_row(const T* x, int64_t n) {
  using VD = vec::Vec<double>;
  constexpr int64_t N = vec::kLanes<T>;
  VD a[8];
  for (VD& v : a) v = vec::splat<VD>(1.0);
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 4 * N <= n; i += 4 * N)
      for (int k = 0; k < 4; ++k) {
        const vec::Vec<float> v = vec::loadu(x + i + k * N);
        a[2 * k] = a[2 * k] * vec::lo_pd(v);
        a[2 * k + 1] = a[2 * k + 1] * vec::hi_pd(v);
      }
  } else {
    for (; i + 8 * N <= n; i += 8 * N)
      for (int k = 0; k < 8; ++k) a[k] = a[k] * vec::loadu(x + i + k * N);
  }
  for (int k = 1; k < 8; ++k) a[0] = a[0] * a[k];
  double r = 1;
  for (int l = 0; l < vec::kLanes<double>; ++l) r *= a[0][l];
  for (; i < n; ++i) r *= double(x[i]);
  return r;
}

// Note [Vector amax]
// amax/amin of a contiguous float32/float64 row: four vector accumulators
// and a NaN flag, one pass (max is exact, so no pairwise blocks): the
// select keeps the accumulator on ties (as MinMaxOp::step: the first of
// +0 and -0 met stays), and a row with a NaN returns its first NaN. 2.5x
// the `omp simd` lanes of MinMaxOp, whose select chain was latency-bound.
template <class T, bool kMax>
T minmax_row(const T* x, int64_t n) {
  using V = vec::Vec<T>;
  constexpr int64_t N = vec::kLanes<T>;
  const T id = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  V a[4];
  for (V& v : a) v = vec::splat<V>(id);
  auto better = [](V v, V acc) { return kMax ? v > acc : v < acc; };
  auto nan_any = (a[0] != a[0]);  // all false
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N)
    for (int k = 0; k < 4; ++k) {
      const V v = vec::loadu(x + i + k * N);
      a[k] = vec::select(better(v, a[k]), v, a[k]);
      nan_any = nan_any | (v != v);
    }
  T r = id;
  bool nan = vec::any(nan_any);
  for (int k = 0; k < 4; ++k)
    for (int64_t l = 0; l < N; ++l) r = (kMax ? a[k][l] > r : a[k][l] < r) ? a[k][l] : r;
  for (; i < n; ++i) {
    r = (kMax ? x[i] > r : x[i] < r) ? x[i] : r;
    nan |= x[i] != x[i];
  }
  if (__builtin_expect(nan, 0))
    for (int64_t j = 0; j < n; ++j)
      if (x[j] != x[j]) return x[j];
  return r;
}

// Reduces x[0, n) (contiguous) into one accumulator. idx0: the reduce index of
// x[0]; k: the output index (for ops that read per-output parameters).
template <class T, class Op>
typename Op::acc_t reduce_row(const Op& op, const T* x, int64_t n, int64_t idx0, int64_t k) {
  using A = typename Op::acc_t;
  using M = typename Op::M;
  if constexpr (IsFloatMinMax<Op>::value) return minmax_row<T, Op::kIsMax>(x, n);
  if constexpr (IsFloatProd<Op>::value) return prod_row<T>(x, n);
  if (n > kRowBlock) {
    const int64_t h = (n / 2) / kLanes * kLanes;
    A a = reduce_row(op, x, h, idx0, k);
    op.merge(a, reduce_row(op, x + h, n - h, idx0 + h, k));
    return a;
  }
  A a[kLanes];
  for (int l = 0; l < kLanes; ++l) a[l] = op.identity();
  int64_t i = 0;
  // `omp simd`: the lanes are independent; without it GCC vectorizes the sums
  // but not the selects of min/max.
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) op.step(a[l], static_cast<M>(x[i + l]), idx0 + i + l, k);
  }
  for (int l = 0; i < n; ++i, ++l) op.step(a[l], static_cast<M>(x[i]), idx0 + i, k);
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) op.merge(a[l], a[l + w]);
  return a[0];
}

// Reduces rows x[r * ld + j], r in [0, n), into acc[j] for j in [0, w),
// pairwise over r. scratch: room for w * (levels + 1) accumulators, where
// levels = ceil(log2(n / kTileBlock)). idx0: the reduce index of row 0; k0:
// the output index of lane 0.
template <class T, class Op>
void reduce_tile(const Op& op, const T* x, int64_t n, int64_t ld, int64_t w, typename Op::acc_t* acc,
                 typename Op::acc_t* scratch, int64_t idx0, int64_t k0) {
  using M = typename Op::M;
  if (n > kTileBlock) {
    const int64_t h = n / 2;
    reduce_tile(op, x, h, ld, w, acc, scratch, idx0, k0);
    reduce_tile(op, x + h * ld, n - h, ld, w, scratch, scratch + w, idx0 + h, k0);
    for (int64_t j = 0; j < w; ++j) op.merge(acc[j], scratch[j]);
    return;
  }
  for (int64_t j = 0; j < w; ++j) acc[j] = op.identity();
  for (int64_t r = 0; r < n; ++r) {
    const T* row = x + r * ld;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) op.step(acc[j], static_cast<M>(row[j]), idx0 + r, k0 + j);
  }
}
int64_t tile_levels(int64_t n) {
  int64_t l = 0;
  while (n > kTileBlock) {
    n -= n / 2;
    ++l;
  }
  return l;
}

// Runs op over the plan and calls store(k, acc) once per output k.
// Work is split over tasks (an output row, or a tile of up to kTileWidth
// outputs whose rows are read as contiguous runs); when there are few tasks
// and long reductions, the reduced range is cut into fixed-size chunks whose
// partial results are merged pairwise, so the result never depends on the
// number of threads.
template <class T, class Op, class Store>
void reduce_loop(const ReducePlan& p, const Op& op, const Store& store) {
  using A = typename Op::acc_t;
  const T* in = static_cast<const T*>(p.in);
  const int64_t outer = p.outer, n = p.reduce, inner = p.inner;
  const int64_t nout = outer * inner;
  if (nout == 0) return;
  if (n == 0) {
    const A id = op.identity();
    for (int64_t k = 0; k < nout; ++k) store(k, id);
    return;
  }
  const int64_t tw = std::min(inner, kTileWidth);
  const int64_t ntiles = (inner + tw - 1) / tw;
  const int64_t ntasks = outer * ntiles;
  // Reduce positions per partial: about kChunk elements, at most kMaxChunks partials per task.
  const int64_t chunk = std::max({kChunk / tw, (n + kMaxChunks - 1) / kMaxChunks, int64_t(1)});
  // (the split depends on the whole call's tasks: the same order per row in a part of it)
  const int64_t decide_tasks = p.chunk_outer > 0 ? p.chunk_outer * ntiles : ntasks;
  const int64_t nchunk = decide_tasks < kFewTasks ? (n + chunk - 1) / chunk : 1;
  const int64_t span = nchunk > 1 ? chunk : n;  // longest reduce range of one call
  const size_t scratch_size = inner == 1 ? 0 : static_cast<size_t>(tw * (tile_levels(span) + 2));
  // Task t over reduce positions [r0, r1) -> acc[0, w); returns w.
  auto run_task = [&](int64_t t, int64_t r0, int64_t r1, A* acc, A* scratch) -> int64_t {
    const int64_t o = t / ntiles, j0 = (t % ntiles) * tw;
    const int64_t w = std::min(tw, inner - j0);
    const T* base = in + (o * n + r0) * inner + j0;
    if (inner == 1)
      acc[0] = reduce_row<T>(op, base, r1 - r0, r0, o);
    else
      reduce_tile<T>(op, base, r1 - r0, inner, w, acc, scratch, r0, o * inner + j0);
    return w;
  };
  auto first_output = [&](int64_t t) { return (t / ntiles) * inner + (t % ntiles) * tw; };

  if (nchunk <= 1) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / (n * tw));
    parallel_for(0, ntasks, grain, [&](int64_t b, int64_t e) {
      std::unique_ptr<A[]> buf(new A[static_cast<size_t>(tw) + scratch_size]);
      for (int64_t t = b; t < e; ++t) {
        const int64_t w = run_task(t, 0, n, buf.get(), buf.get() + tw);
        const int64_t k0 = first_output(t);
        for (int64_t j = 0; j < w; ++j) store(k0 + j, buf[j]);
      }
    });
    return;
  }
  std::unique_ptr<A[]> part(new A[static_cast<size_t>(ntasks * nchunk * tw)]);  // not vector<bool>
  parallel_for(0, ntasks * nchunk, 1, [&](int64_t b, int64_t e) {
    std::unique_ptr<A[]> scratch(new A[scratch_size + 1]);
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = i / nchunk, c = i % nchunk;
      const int64_t r0 = c * chunk;
      run_task(t, r0, std::min(n, r0 + chunk), &part[static_cast<size_t>(i * tw)], scratch.get());
    }
  });
  // Pairwise merge of chunks [c0, c1) of task t into chunk c0's row, all lanes at once (order
  // kept: arg ops break ties by index). Lane by lane, the recursion cost more than the reduction
  // on wide tiles (amax(m, 0) of 1024 x 1024: 32 chunks x 1024 lanes).
  auto merge_chunks = [&](auto&& self, int64_t t, int64_t w, int64_t c0, int64_t c1) -> void {
    if (c1 - c0 == 1) return;
    const int64_t m = c0 + (c1 - c0) / 2;
    self(self, t, w, c0, m);
    self(self, t, w, m, c1);
    A* a = &part[static_cast<size_t>((t * nchunk + c0) * tw)];
    const A* b = &part[static_cast<size_t>((t * nchunk + m) * tw)];
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) op.merge(a[j], b[j]);
  };
  for (int64_t t = 0; t < ntasks; ++t) {
    const int64_t k0 = first_output(t);
    const int64_t w = std::min(tw, inner - (t % ntiles) * tw);
    merge_chunks(merge_chunks, t, w, 0, nchunk);
    const A* a = &part[static_cast<size_t>(t * nchunk * tw)];
    for (int64_t j = 0; j < w; ++j) store(k0 + j, a[j]);
  }
}

// ---- ops ------------------------------------------------------------------------

template <class T>
struct SumOp {
  using M = typename SumAcc<T>::type;
  using acc_t = M;
  M identity() const { return M(0); }
  void step(M& a, M v, int64_t, int64_t) const { a += v; }
  void merge(M& a, M b) const { a += b; }
};

// Products of floating inputs accumulate in double: a product's partial
// products overflow or underflow float long before the product does, and
// which ones do depends on the lanes' order (18 bfloat16 values whose product
// is -60 gave 3e38 x -3 = -inf in one lane and 1e-30 x 1e-30 = 0 in another,
// so NaN; PyTorch's sequential float loop happened to stay in range). In
// double the partial products of float32 values stay in range far longer
// (the result rounds once, at the end).
template <class T>
struct ProdAcc {
  using type = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, double, typename SumAcc<T>::type>;
};

template <class T>
struct ProdOp {
  using M = typename ProdAcc<T>::type;
  using acc_t = M;
  M identity() const { return M(1); }
  void step(M& a, M v, int64_t, int64_t) const { a *= v; }
  void merge(M& a, M b) const { a *= b; }
};

template <class M, bool kMax>
inline bool better(M v, M a) {
  if constexpr (kMax)
    return v > a;
  else
    return v < a;
}
template <class M>
inline bool is_nan(M v) {
  if constexpr (std::is_floating_point_v<M>)
    return v != v;
  else
    return false;
}

// amax/amin: NaN propagates.
template <class T, bool kMax>
struct MinMaxOp {
  static constexpr bool kIsMax = kMax;
  using M = opmath_t<T>;
  using acc_t = M;
  M identity() const {
    if constexpr (std::numeric_limits<M>::has_infinity)
      return kMax ? -std::numeric_limits<M>::infinity() : std::numeric_limits<M>::infinity();
    else
      return kMax ? std::numeric_limits<M>::lowest() : std::numeric_limits<M>::max();
  }
  // Branch-free (`|`, not `||`) so that the engine's `omp simd` lanes vectorize.
  void step(M& a, M v, int64_t, int64_t) const { a = (better<M, kMax>(v, a) | is_nan(v)) ? v : a; }
  void merge(M& a, M b) const { step(a, b, 0, 0); }
};

// argmax/argmin, pass 2: the first index whose value is the best value
// found in pass 1 (NaN matches NaN: the first NaN wins, as in PyTorch).
template <class T>
struct FindOp {
  using M = opmath_t<T>;
  using acc_t = int64_t;
  const M* best;  // per output
  int64_t identity() const { return std::numeric_limits<int64_t>::max(); }
  void step(int64_t& a, M v, int64_t idx, int64_t k) const {
    const M b = best[k];
    const bool match = (v == b) | (is_nan(b) & is_nan(v));
    a = (match & (idx < a)) ? idx : a;
  }
  void merge(int64_t& a, int64_t b) const { a = b < a ? b : a; }
};

// var pass 2: sums of d = x - mean and of d^2 (the corrected two-pass
// algorithm: m2 = sum(d^2) - sum(d)^2 / n cancels the rounding error of the
// mean, so a constant input gives 0 to within rounding of ~eps^2).
template <class M>
struct DevSums {
  M s2, s1;
};
template <class T, class Acc = opmath_t<T>>
struct DevOp {
  using M = Acc;
  using acc_t = DevSums<M>;
  const M* mean;  // per output
  acc_t identity() const { return {M(0), M(0)}; }
  void step(acc_t& a, M v, int64_t, int64_t k) const {
    const M d = v - mean[k];
    a.s2 += d * d;
    a.s1 += d;
  }
  void merge(acc_t& a, const acc_t& b) const {
    a.s2 += b.s2;
    a.s1 += b.s1;
  }
};

template <class T, NormMode kMode>
struct NormOp {
  using M = opmath_t<T>;
  using acc_t = M;
  M p = M(2);
  M identity() const { return kMode == NormMode::NegInf ? std::numeric_limits<M>::infinity() : M(0); }
  void step(M& a, M v, int64_t, int64_t) const {
    const M x = std::abs(v);
    if constexpr (kMode == NormMode::L2)
      a += x * x;
    else if constexpr (kMode == NormMode::L1)
      a += x;
    else if constexpr (kMode == NormMode::L0)
      a += v != M(0) ? M(1) : M(0);
    else if constexpr (kMode == NormMode::Inf)
      a = (x > a || x != x) ? x : a;
    else if constexpr (kMode == NormMode::NegInf)
      a = (x < a || x != x) ? x : a;
    else
      a += std::pow(x, p);
  }
  void merge(M& a, M b) const {
    if constexpr (kMode == NormMode::Inf)
      a = (b > a || b != b) ? b : a;
    else if constexpr (kMode == NormMode::NegInf)
      a = (b < a || b != b) ? b : a;
    else
      a += b;
  }
  M finish(M a) const {
    if constexpr (kMode == NormMode::L2)
      return std::sqrt(a);
    else if constexpr (kMode == NormMode::General)
      return std::pow(a, M(1) / p);
    else
      return a;
  }
};

// all/any over bytes (bool or uint8 input).
template <bool kAll>
struct AllAnyOp {
  using M = uint8_t;
  using acc_t = uint8_t;
  uint8_t identity() const { return kAll ? 1 : 0; }
  void step(uint8_t& a, uint8_t v, int64_t, int64_t) const {
    if constexpr (kAll)
      a &= static_cast<uint8_t>(v != 0);
    else
      a |= static_cast<uint8_t>(v != 0);
  }
  void merge(uint8_t& a, uint8_t b) const {
    if constexpr (kAll)
      a &= b;
    else
      a |= b;
  }
};

// ---- kernels ------------------------------------------------------------------------

// The dtypes sum/prod/mean compute in (the front end casts the others).
template <class F>
void dispatch_sum_types(ScalarType t, const char* op, const F& f) {
  switch (t) {
    case kInt64: return f.template operator()<int64_t>();
    case kHalf: return f.template operator()<Half>();
    case kBFloat16: return f.template operator()<BFloat16>();
    case kFloat: return f.template operator()<float>();
    case kDouble: return f.template operator()<double>();
    default: BRISK_FAIL(op, "reduction kernel does not support dtype ", t);
  }
}

void sum_kernel(ReducePlan& p, const KernelArgs& a) {
  const bool mean = static_cast<SumMode>(a.mode) == SumMode::Mean;
  dispatch_sum_types(p.in_dtype, "sum", [&]<class T>() {
    using M = typename SumAcc<T>::type;
    T* out = static_cast<T*>(p.out);
    if (mean) {
      const M n = static_cast<M>(p.reduce);
      reduce_loop<T>(p, SumOp<T>{}, [&](int64_t k, M acc) { out[k] = static_cast<T>(acc / n); });
    } else {
      reduce_loop<T>(p, SumOp<T>{}, [&](int64_t k, M acc) { out[k] = static_cast<T>(acc); });
    }
  });
}

void prod_kernel(ReducePlan& p, const KernelArgs&) {
  dispatch_sum_types(p.in_dtype, "prod", [&]<class T>() {
    using M = typename ProdAcc<T>::type;
    T* out = static_cast<T*>(p.out);
    reduce_loop<T>(p, ProdOp<T>{}, [&](int64_t k, M acc) { out[k] = static_cast<T>(acc); });
  });
}

template <bool kMax>
void minmax_kernel(ReducePlan& p, const KernelArgs&) {
  BRISK_DISPATCH_ALL(p.in_dtype, kMax ? "amax" : "amin", [&] {
    using T = scalar_t;
    T* out = static_cast<T*>(p.out);
    reduce_loop<T>(p, MinMaxOp<T, kMax>{}, [&](int64_t k, opmath_t<T> acc) { out[k] = static_cast<T>(acc); });
  });
}

// Two passes: the best value (vectorized), then the first index holding it.
// out = values (may be null), out2 = indices.
template <bool kMax>
void arg_kernel(ReducePlan& p, const KernelArgs&) {
  BRISK_DISPATCH_ALL(p.in_dtype, kMax ? "argmax" : "argmin", [&] {
    using T = scalar_t;
    using M = opmath_t<T>;
    std::unique_ptr<M[]> best(new M[static_cast<size_t>(p.num_outputs())]);
    T* values = static_cast<T*>(p.out);
    reduce_loop<T>(p, MinMaxOp<T, kMax>{}, [&](int64_t k, M acc) {
      best[k] = acc;
      if (values) values[k] = static_cast<T>(acc);
    });
    int64_t* indices = static_cast<int64_t*>(p.out2);
    reduce_loop<T>(p, FindOp<T>{best.get()}, [&](int64_t k, int64_t i) { indices[k] = i; });
  });
}

// A sum in a given accumulator type.
template <class A>
struct PlainSumOp {
  using M = A;
  using acc_t = A;
  A identity() const { return A(0); }
  void step(A& a, A v, int64_t, int64_t) const { a += v; }
  void merge(A& a, A b) const { a += b; }
};

// Two passes: the means, then the centred sums. out = var (or std), out2 = mean.
// Every float dtype accumulates in double, as PyTorch's CPU kernel does: the
// squares of values beyond ~1.8e19 overflow float (a float32 or bfloat16
// input of 1e30 has a finite variance in float32 only through double).
void var_kernel(ReducePlan& p, const KernelArgs& a) {
  const bool take_sqrt = static_cast<VarMode>(a.mode) == VarMode::Std;
  const double correction = a.s0.to_double();
  BRISK_DISPATCH_FLOAT(p.in_dtype, "var", [&] {
    using T = scalar_t;
    using M = double;
    const int64_t nout = p.num_outputs();
    std::vector<M> mean(static_cast<size_t>(nout));
    const M n = static_cast<M>(p.reduce);
    reduce_loop<T>(p, PlainSumOp<M>{}, [&](int64_t k, M acc) { mean[k] = acc / n; });
    const M divisor = static_cast<M>(std::max(0.0, static_cast<double>(p.reduce) - correction));
    T* out = static_cast<T*>(p.out);
    T* out_mean = static_cast<T*>(p.out2);
    reduce_loop<T>(p, DevOp<T, M>{mean.data()}, [&](int64_t k, const DevSums<M>& s) {
      const M m2 = std::max(s.s2 - s.s1 * s.s1 / n, M(0));  // keeps NaN (std::max returns its first argument)
      const M v = m2 / divisor;
      out[k] = static_cast<T>(take_sqrt ? std::sqrt(v) : v);
      if (out_mean) out_mean[k] = static_cast<T>(mean[k]);
    });
  });
}

template <class T, NormMode kMode>
void norm_run(ReducePlan& p, double pval) {
  using M = opmath_t<T>;
  NormOp<T, kMode> op;
  op.p = static_cast<M>(pval);
  T* out = static_cast<T*>(p.out);
  const bool empty = p.reduce == 0;
  reduce_loop<T>(p, op, [&](int64_t k, M acc) { out[k] = empty ? T(0) : static_cast<T>(op.finish(acc)); });
}

void norm_kernel(ReducePlan& p, const KernelArgs& a) {
  const double pval = a.s0.to_double();
  auto run = [&]<class T>() {
    switch (static_cast<NormMode>(a.mode)) {
      case NormMode::L2: return norm_run<T, NormMode::L2>(p, pval);
      case NormMode::L1: return norm_run<T, NormMode::L1>(p, pval);
      case NormMode::L0: return norm_run<T, NormMode::L0>(p, pval);
      case NormMode::Inf: return norm_run<T, NormMode::Inf>(p, pval);
      case NormMode::NegInf: return norm_run<T, NormMode::NegInf>(p, pval);
      case NormMode::General: return norm_run<T, NormMode::General>(p, pval);
    }
  };
  // The front end computes 16-bit floats in float.
  switch (p.in_dtype) {
    case kFloat: return run.template operator()<float>();
    case kDouble: return run.template operator()<double>();
    default: BRISK_FAIL("norm", "reduction kernel does not support dtype ", p.in_dtype);
  }
}

template <bool kAll>
void all_any_kernel(ReducePlan& p, const KernelArgs&) {
  BRISK_CHECK(p.in_dtype == kBool || p.in_dtype == kUInt8, kAll ? "all" : "any",
              "reduction kernel expects bool or uint8 input, got ", p.in_dtype);
  uint8_t* out = static_cast<uint8_t*>(p.out);
  reduce_loop<uint8_t>(p, AllAnyOp<kAll>{}, [&](int64_t k, uint8_t acc) { out[k] = acc; });
}

}  // namespace

void register_reduce_kernels() {
  register_kernel<OpId::sum>(kCPU, sum_kernel);
  register_kernel<OpId::prod>(kCPU, prod_kernel);
  register_kernel<OpId::amax>(kCPU, minmax_kernel<true>);
  register_kernel<OpId::amin>(kCPU, minmax_kernel<false>);
  register_kernel<OpId::argmax>(kCPU, arg_kernel<true>);
  register_kernel<OpId::argmin>(kCPU, arg_kernel<false>);
  register_kernel<OpId::var>(kCPU, var_kernel);
  register_kernel<OpId::norm>(kCPU, norm_kernel);
  register_kernel<OpId::all>(kCPU, all_any_kernel<true>);
  register_kernel<OpId::any>(kCPU, all_any_kernel<false>);
  register_scan_kernels();
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
