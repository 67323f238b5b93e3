// CPU kernels of cross_entropy with class indices, fused log_softmax + nll
// (+ label smoothing, class weights, ignore_index), forward and backward
// (CrossEntropyFn / CrossEntropyBackwardFn rows of the kernel table).
//
// Note [Fused cross_entropy]
// Per row of logits x (C classes) with target t and lse = log(sum exp(x)):
//   loss = (1 - ls) * -w[t] (x[t] - lse) + ls / C * -sum_c w[c] (x[c] - lse)
// and, with p = exp(x - lse) and W = sum_c w[c],
//   dloss/dx[c] = (1 - ls) w[t] (p[c] - [c == t]) + ls / C (W p[c] - w[c]).
// x - lse is computed as (x - m) - log(sum exp(x - m)) with m the row's max,
// never with lse itself: lse = m + log(s) rounds log(s) away once |m| is
// large (in float32 from |m| ~ 1e4 on it loses digits; at 3e38 all of
// log 2), which made p of two tied maxima 1 each and their loss 0 where
// PyTorch's log_softmax gives 1/2 and log 2. So the forward saves the pair
// (m, log s) per row for the backward (the `lse` tensor is N x 2).
// Ignored rows have loss 0 and a gradient of exactly 0 (not g * 0: the mean
// over no targets divides by 0 and its infinite g would give NaN where
// PyTorch's gradient is 0). The reduction (sum, or the sum over the summed
// target weights for the mean) is the front end's, through ordinary ops.
// Rows are read once from memory (the max, the sum of exp, and the
// backward's write pass find them in cache); float16/bfloat16 rows compute
// in float32, float64 in float64. cross_entropy itself sends float16 and
// bfloat16 logits to its composite (log_softmax, then nll_loss), whose
// roundings are PyTorch's (nn/functional.cpp); the kernels still take them.
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
#include <vector>

#include "backend/cpu/vec_exp.h"
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

/// The class weights in the compute type (nullptr: all 1) and their sum.
template <class T, class M>
const M* weights(const Tensor& w, std::vector<M>& keep, double& total, int64_t C) {
  if (!w.defined()) {
    total = double(C);
    return nullptr;
  }
  keep.resize(static_cast<size_t>(C));
  load_row(static_cast<const T*>(w.data_ptr()), keep.data(), C);
  total = 0;
  for (int64_t c = 0; c < C; ++c) total += double(keep[c]);
  return keep.data();
}

template <class T>
void ce_forward_typed(const Tensor& loss, const Tensor& wt, const Tensor& lse, const Tensor& input,
                      const Tensor& target, const Tensor& weight, int64_t ignore_index, double ls) {
  using M = opmath_t<T>;
  constexpr bool kSame = std::is_same_v<T, M>;
  const int64_t R = input.size(0), C = input.size(1);
  std::vector<M> wkeep;
  double W = 0;
  const M* w = weights<T, M>(weight, wkeep, W, C);
  const T* xp = static_cast<const T*>(input.data_ptr());
  const int64_t* tp = static_cast<const int64_t*>(target.data_ptr());
  T* lp = static_cast<T*>(loss.data_ptr());
  T* wp = static_cast<T*>(wt.data_ptr());
  M* sp = static_cast<M*>(lse.data_ptr());
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, C));
  parallel_for(0, R, grain, [&](int64_t r0, int64_t r1) {
    std::unique_ptr<M[]> buf(kSame ? nullptr : new M[static_cast<size_t>(C)]);
    for (int64_t r = r0; r < r1; ++r) {
      const M* __restrict xr;
      if constexpr (kSame) {
        xr = xp + r * C;
      } else {
        load_row(xp + r * C, buf.get(), C);
        xr = buf.get();
      }
      const M mx = row_max(xr, C);
      // An infinite max makes the row NaN, as PyTorch's log_softmax (x - max
      // is NaN at the infinite entries, or everywhere for a row of -inf).
      const M shift = std::isinf(mx) ? M(0) : mx;
      const double s = row_sum<M>(C, [xr, shift](int64_t i) { return exp_vec(xr[i] - shift); });
      const M ls_log = std::isinf(mx) ? std::numeric_limits<M>::quiet_NaN() : static_cast<M>(std::log(s));
      sp[2 * r] = shift;
      sp[2 * r + 1] = ls_log;
      const int64_t t = tp[r];
      if (t == ignore_index) {
        lp[r] = T(0);
        wp[r] = T(0);
        continue;
      }
      const M wt_r = w ? w[t] : M(1);
      // log p[c] = (x[c] - m) - log s
      double v = (1.0 - ls) * -double(wt_r) * (double(xr[t] - shift) - double(ls_log));
      if (ls > 0) {
        const double sm =
            w ? row_sum<M>(C, [xr, w, shift, ls_log](int64_t i) { return w[i] * ((xr[i] - shift) - ls_log); })
              : row_sum<M>(C, [xr, shift, ls_log](int64_t i) { return (xr[i] - shift) - ls_log; });
        v += ls / double(C) * -sm;
      }
      lp[r] = static_cast<T>(v);
      wp[r] = static_cast<T>(wt_r);
    }
  });
}

template <class T>
void ce_backward_typed(const Tensor& grad_input, const Tensor& grad_loss, const Tensor& input, const Tensor& target,
                       const Tensor& weight, const Tensor& lse, int64_t ignore_index, double ls) {
  using M = opmath_t<T>;
  constexpr bool kSame = std::is_same_v<T, M>;
  const int64_t R = input.size(0), C = input.size(1);
  std::vector<M> wkeep;
  double W = 0;
  const M* w = weights<T, M>(weight, wkeep, W, C);
  const T* xp = static_cast<const T*>(input.data_ptr());
  const T* gp = static_cast<const T*>(grad_loss.data_ptr());
  const int64_t* tp = static_cast<const int64_t*>(target.data_ptr());
  const M* sp = static_cast<const M*>(lse.data_ptr());
  T* dp = static_cast<T*>(grad_input.data_ptr());
  const M b = static_cast<M>(ls / double(C));
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 2 * C));
  parallel_for(0, R, grain, [&](int64_t r0, int64_t r1) {
    std::unique_ptr<M[]> buf(kSame ? nullptr : new M[static_cast<size_t>(2 * C)]);
    for (int64_t r = r0; r < r1; ++r) {
      T* __restrict out = dp + r * C;
      const int64_t t = tp[r];
      if (t == ignore_index) {
        std::fill(out, out + C, T(0));
        continue;
      }
      const M* __restrict xr;
      M* __restrict dr;
      if constexpr (kSame) {
        xr = xp + r * C;
        dr = out;
      } else {
        load_row(xp + r * C, buf.get(), C);
        xr = buf.get();
        dr = buf.get() + C;
      }
      const M g = static_cast<M>(gp[r]);
      const M shift = sp[2 * r], ls_log = sp[2 * r + 1];  // p[c] = exp((x[c] - m) - log s)
      const M a = static_cast<M>((1.0 - ls)) * (w ? w[t] : M(1));
      const M k = g * (a + b * static_cast<M>(W));  // coefficient of p[c]
      if (w && ls > 0) {
        const M gb = g * b;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) dr[c] = k * exp_vec((xr[c] - shift) - ls_log) - gb * w[c];
      } else {
        const M gb = ls > 0 ? g * b : M(0);
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) dr[c] = k * exp_vec((xr[c] - shift) - ls_log) - gb;
      }
      dr[t] -= g * a;
      if constexpr (!kSame)
        for (int64_t c = 0; c < C; ++c) out[c] = static_cast<T>(dr[c]);
    }
  });
}

void ce_forward_kernel(const Tensor& loss, const Tensor& wt, const Tensor& lse, const Tensor& input,
                       const Tensor& target, const Tensor& weight, int64_t ignore_index, double ls) {
  // The targets are checked here, before anything is written (Note [Index
  // kernels validate first]), so that a compiled graph checks them on every
  // replay as eager does: the largest out of range, else the smallest.
  {
    const int64_t R = input.size(0), C = input.size(1);
    const int64_t* tp = static_cast<const int64_t*>(target.data_ptr());
    int64_t hi = 0, lo = 0;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t v = tp[r] == ignore_index ? 0 : tp[r];
      hi = std::max(hi, v);
      lo = std::min(lo, v);
    }
    BRISK_CHECK(hi < C && lo >= 0, "cross_entropy", "target ", (hi >= C ? hi : lo), " is out of bounds for ", C,
                " classes");
  }
  BRISK_DISPATCH_FLOAT(input.dtype(), "cross_entropy",
                       [&] { ce_forward_typed<scalar_t>(loss, wt, lse, input, target, weight, ignore_index, ls); });
}

void ce_backward_kernel(const Tensor& grad_input, const Tensor& grad_loss, const Tensor& input, const Tensor& target,
                        const Tensor& weight, const Tensor& lse, int64_t ignore_index, double ls) {
  BRISK_DISPATCH_FLOAT(input.dtype(), "cross_entropy_backward", [&] {
    ce_backward_typed<scalar_t>(grad_input, grad_loss, input, target, weight, lse, ignore_index, ls);
  });
}

}  // namespace

void register_loss_kernels() {
  register_kernel<OpId::cross_entropy>(kCPU, ce_forward_kernel);
  register_kernel<OpId::cross_entropy_backward>(kCPU, ce_backward_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
