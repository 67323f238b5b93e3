// CPU kernels of batch_norm and group_norm, forward and backward
// (BatchNormFn, BatchNormBackwardFn, GroupNormFn, GroupNormBackwardFn rows of
// the kernel table); the front ends are in src/nn/normalization.cpp.
//
// Note [Normalization layouts]
// The kernels see an (N, C, *) tensor as Nb blocks of C channels by S
// positions (NormView), either planar, memory (Nb, C, S) (NCHW-contiguous
// inputs: each (block, channel) is one contiguous run), or interleaved,
// memory (Nb, S, C) (channels_last, and 2-D (N, C) inputs: C is innermost
// and the loops vectorize over it). batch_norm's interleaved view is one
// block of N*S rows.
// Every statistic is first summed per (block, channel), in fixed chunks and
// in a fixed order (so results do not depend on the thread count), then
// combined per channel (batch_norm) or per (sample, group) (group_norm).
// Sums accumulate in 16 float lanes per chunk of 4096 values (double lanes
// for double inputs) and in double across chunks; the variance is a second
// pass over x - mean, not E[x^2] - mean^2.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/parallel.h"

#ifndef BRISK_CPU_ISA
#error "kernel files are compiled once per ISA"
#endif

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

using NormLayout = NormView;

int64_t grain_for(int64_t work_per_item) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_item)); }

/// A 1-D tensor's values in double (any floating dtype, any stride).
std::vector<double> read_vec(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  BRISK_DISPATCH_FLOAT(t.dtype(), "batch_norm", [&] {
    const scalar_t* p = t.data_ptr<scalar_t>();
    const int64_t st = t.stride(0);
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = double(p[i * st]);
  });
  return v;
}

/// Writes values into a 1-D tensor in place (a running statistic, a
/// parameter gradient); the front end bumps versions.
void write_vec(const Tensor& t, const std::vector<double>& v) {
  BRISK_DISPATCH_FLOAT(t.dtype(), "batch_norm", [&] {
    scalar_t* p = t.data_ptr<scalar_t>();
    const int64_t st = t.stride(0);
    for (int64_t i = 0; i < t.numel(); ++i) p[i * st] = scalar_t(v[i]);
  });
}

/// The shift of the shifted sums (the first value of a channel or group): a
/// non-finite one would turn an infinite mean into NaN (inf - inf), so the
/// sums then start from 0, as PyTorch's plain sums do.
double finite_shift(double v) { return std::isfinite(v) ? v : 0.0; }

template <class A>
std::vector<A> cast_vec(const std::vector<double>& v) {
  return std::vector<A>(v.begin(), v.end());
}

// ==== kernels ============================================================================

constexpr int kLanes = 16;
constexpr int64_t kChunk = 4096;

/// Sum of f(i) for i in [0, n): kLanes accumulators of acc_t per chunk (the
/// compiler vectorizes the lane loop), chunks summed in double.
template <class acc_t, class F>
inline double lane_sum(int64_t n, const F& f) {
  double total = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t c1 = std::min(n, c0 + kChunk);
    acc_t lane[kLanes] = {};
    int64_t i = c0;
    for (; i + kLanes <= c1; i += kLanes)
      for (int j = 0; j < kLanes; ++j) lane[j] += f(i + j);
    acc_t tail = 0;
    for (; i < c1; ++i) tail += f(i);
    double part = double(tail);
    for (int j = 0; j < kLanes; ++j) part += double(lane[j]);
    total += part;
  }
  return total;
}

/// Two sums at once (the backward's sum(dy) and sum(dy * (x - mean))).
template <class acc_t, class F, class G>
inline void lane_sum2(int64_t n, const F& f, const G& g, double& out_f, double& out_g) {
  double tf = 0, tg = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t c1 = std::min(n, c0 + kChunk);
    acc_t lf[kLanes] = {}, lg[kLanes] = {};
    int64_t i = c0;
    for (; i + kLanes <= c1; i += kLanes)
      for (int j = 0; j < kLanes; ++j) {
        lf[j] += f(i + j);
        lg[j] += g(i + j);
      }
    acc_t af = 0, ag = 0;
    for (; i < c1; ++i) {
      af += f(i);
      ag += g(i);
    }
    double pf = double(af), pg = double(ag);
    for (int j = 0; j < kLanes; ++j) {
      pf += double(lf[j]);
      pg += double(lg[j]);
    }
    tf += pf;
    tg += pg;
  }
  out_f = tf;
  out_g = tg;
}

/// Interleaved reduction: `rows(nb, s0, s1, acc)` adds rows [s0, s1) of
/// block nb into K per-channel accumulators acc[k * C + c]. Rows are summed
/// in fixed blocks (partials in double), blocks in a fixed order:
/// out[k * Nb * C + nb * C + c].
template <class acc_t, int K, class Rows>
void interleaved_reduce(const NormLayout& L, const Rows& rows, std::vector<double>& out) {
  const int64_t C = L.C, Nb = L.Nb, S = L.S;
  const int64_t bs = std::clamp<int64_t>(8192 / std::max<int64_t>(C, 1), 8, 1024);
  const int64_t nblk = (S + bs - 1) / bs;
  std::vector<double> part(static_cast<size_t>(K * Nb * nblk * C));
  parallel_for(0, Nb * nblk, grain_for(bs * C), [&](int64_t b, int64_t e) {
    std::vector<acc_t> acc(static_cast<size_t>(K * C));
    for (int64_t it = b; it < e; ++it) {
      const int64_t nb = it / nblk, blk = it % nblk;
      std::fill(acc.begin(), acc.end(), acc_t(0));
      rows(nb, blk * bs, std::min(S, (blk + 1) * bs), acc.data());
      for (int k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c) part[((k * Nb + nb) * nblk + blk) * C + c] = double(acc[k * C + c]);
    }
  });
  out.assign(static_cast<size_t>(K * Nb * C), 0.0);
  for (int k = 0; k < K; ++k)
    for (int64_t nb = 0; nb < Nb; ++nb)
      for (int64_t blk = 0; blk < nblk; ++blk) {
        const double* src = &part[((k * Nb + nb) * nblk + blk) * C];
        double* dst = &out[(k * Nb + nb) * C];
        for (int64_t c = 0; c < C; ++c) dst[c] += src[c];
      }
}

/// Float lanes overflow where PyTorch's CPU kernels, which accumulate float
/// statistics in double, do not (squares of values past ~1e19, sums past
/// 3.4e38: batch_norm of a channel holding 3e38 gave the bias everywhere).
/// The (k, block, channel) sums of `out` that came out inf or NaN are summed
/// again in double from value(k, r, offset) (r = block * C + channel, offset
/// the element's index); an inf or NaN input gives the same sum again.
template <class T, class V>
void redo_nonfinite_in_double(const NormLayout& L, int K, std::vector<double>& out, const V& value) {
  if constexpr (std::is_same_v<opmath_t<T>, double>) {
    return;
  } else {
    const int64_t R = L.Nb * L.C;
    for (int k = 0; k < K; ++k)
      for (int64_t r = 0; r < R; ++r) {
        double& o = out[static_cast<size_t>(k * R + r)];
        if (std::isfinite(o)) continue;
        const int64_t nb = r / L.C, c = r % L.C;
        double sum = 0;
        for (int64_t i = 0; i < L.S; ++i) sum += value(k, r, L.interleaved ? (nb * L.S + i) * L.C + c : r * L.S + i);
        o = sum;
      }
  }
}

/// Per (block, channel): sum of x - k, with k per (block, channel) a value
/// near the mean (the first value of the channel or group): the float lanes
/// then sum deviations, not raw values, and keep their digits when the mean
/// is far from zero.
template <class T>
std::vector<double> sum_shifted(const NormLayout& L, const T* x, const std::vector<opmath_t<T>>& k) {
  using acc_t = opmath_t<T>;
  std::vector<double> out;
  if (L.interleaved) {
    interleaved_reduce<acc_t, 1>(
        L,
        [&](int64_t nb, int64_t s0, int64_t s1, acc_t* __restrict acc) {
          const int64_t C = L.C;
          const T* __restrict xr = x + (nb * L.S + s0) * C;
          const acc_t* __restrict kr = k.data() + nb * C;
          int64_t s = s0;
          for (; s + 2 <= s1; s += 2, xr += 2 * C)
            for (int64_t c = 0; c < C; ++c) acc[c] += (acc_t(xr[c]) - kr[c]) + (acc_t(xr[C + c]) - kr[c]);
          for (; s < s1; ++s, xr += C)
            for (int64_t c = 0; c < C; ++c) acc[c] += acc_t(xr[c]) - kr[c];
        },
        out);
  } else {
    out.resize(static_cast<size_t>(L.Nb * L.C));
    parallel_for(0, L.Nb * L.C, grain_for(L.S), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * L.S;
        const acc_t kr = k[r];
        out[r] = lane_sum<acc_t>(L.S, [xr, kr](int64_t i) { return acc_t(xr[i]) - kr; });
      }
    });
  }
  redo_nonfinite_in_double<T>(L, 1, out,
                              [&](int, int64_t r, int64_t i) { return double(x[i]) - double(k[static_cast<size_t>(r)]); });
  return out;
}

/// Per (block, channel): sum of (x - m)^2 with m per (block, channel).
template <class T>
std::vector<double> sum_sq_dev(const NormLayout& L, const T* x, const std::vector<opmath_t<T>>& m) {
  using acc_t = opmath_t<T>;
  std::vector<double> out;
  if (L.interleaved) {
    interleaved_reduce<acc_t, 1>(
        L,
        [&](int64_t nb, int64_t s0, int64_t s1, acc_t* __restrict acc) {
          const int64_t C = L.C;
          const T* __restrict xr = x + (nb * L.S + s0) * C;
          const acc_t* __restrict mr = m.data() + nb * C;
          int64_t s = s0;
          for (; s + 2 <= s1; s += 2, xr += 2 * C)
            for (int64_t c = 0; c < C; ++c) {
              const acc_t d0 = acc_t(xr[c]) - mr[c], d1 = acc_t(xr[C + c]) - mr[c];
              acc[c] += d0 * d0 + d1 * d1;
            }
          for (; s < s1; ++s, xr += C)
            for (int64_t c = 0; c < C; ++c) {
              const acc_t d = acc_t(xr[c]) - mr[c];
              acc[c] += d * d;
            }
        },
        out);
  } else {
    out.resize(static_cast<size_t>(L.Nb * L.C));
    parallel_for(0, L.Nb * L.C, grain_for(L.S), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * L.S;
        const acc_t mr = m[r];
        out[r] = lane_sum<acc_t>(L.S, [xr, mr](int64_t i) {
          const acc_t d = acc_t(xr[i]) - mr;
          return d * d;
        });
      }
    });
  }
  redo_nonfinite_in_double<T>(L, 1, out, [&](int, int64_t r, int64_t i) {
    const double d = double(x[i]) - double(m[static_cast<size_t>(r)]);
    return d * d;
  });
  return out;
}

/// Per (block, channel): sum of dy and sum of dy * (x - m). Returns
/// [sum dy (Nb*C) | sum dy*(x-m) (Nb*C)].
template <class T>
std::vector<double> sum_grad(const NormLayout& L, const T* dy, const T* x, const std::vector<opmath_t<T>>& m) {
  using acc_t = opmath_t<T>;
  std::vector<double> out;
  if (L.interleaved) {
    interleaved_reduce<acc_t, 2>(
        L,
        [&](int64_t nb, int64_t s0, int64_t s1, acc_t* __restrict acc) {
          const int64_t C = L.C;
          const int64_t off = (nb * L.S + s0) * C;
          const T* __restrict xr = x + off;
          const T* __restrict gr = dy + off;
          const acc_t* __restrict mr = m.data() + nb * C;
          acc_t* __restrict a0 = acc;
          acc_t* __restrict a1 = acc + C;
          for (int64_t s = s0; s < s1; ++s, xr += C, gr += C)
            for (int64_t c = 0; c < C; ++c) {
              const acc_t g = acc_t(gr[c]);
              a0[c] += g;
              a1[c] += g * (acc_t(xr[c]) - mr[c]);
            }
        },
        out);
  } else {
    const int64_t R = L.Nb * L.C;
    out.resize(static_cast<size_t>(2 * R));
    parallel_for(0, R, grain_for(2 * L.S), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * L.S;
        const T* gr = dy + r * L.S;
        const acc_t mr = m[r];
        lane_sum2<acc_t>(
            L.S, [gr](int64_t i) { return acc_t(gr[i]); },
            [gr, xr, mr](int64_t i) { return acc_t(gr[i]) * (acc_t(xr[i]) - mr); }, out[r], out[R + r]);
      }
    });
  }
  redo_nonfinite_in_double<T>(L, 2, out, [&](int k, int64_t r, int64_t i) {
    const double g = double(dy[i]);
    return k == 0 ? g : g * (double(x[i]) - double(m[static_cast<size_t>(r)]));
  });
  return out;
}

// The transforms subtract the mean before scaling, (x - M) * A + B, rather
// than x * A + (B - M * A): with a mean far from zero the folded form
// cancels two large terms in float and loses the digits of the result.

/// y = (x - M) * A + B with M, A, B per (block, channel).
template <class T>
void apply_affine(const NormLayout& L, const T* x, const std::vector<opmath_t<T>>& M,
                  const std::vector<opmath_t<T>>& A, const std::vector<opmath_t<T>>& B, T* y) {
  using acc_t = opmath_t<T>;
  if (L.interleaved) {
    parallel_for(0, L.Nb * L.S, grain_for(L.C), [&](int64_t b, int64_t e) {
      const int64_t C = L.C, S = L.S;
      for (int64_t row = b; row < e;) {
        // rows [row, end) of block nb
        const int64_t nb = row / S, end = std::min(e, (nb + 1) * S);
        const acc_t* __restrict m = M.data() + nb * C;
        const acc_t* __restrict a = A.data() + nb * C;
        const acc_t* __restrict bb = B.data() + nb * C;
        for (; row < end; ++row) {
          const T* __restrict xr = x + row * C;
          T* __restrict yr = y + row * C;
          for (int64_t c = 0; c < C; ++c) yr[c] = T((acc_t(xr[c]) - m[c]) * a[c] + bb[c]);
        }
      }
    });
    return;
  }
  parallel_for(0, L.Nb * L.C, grain_for(L.S), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const acc_t m = M[r], a = A[r], bb = B[r];
      const T* __restrict xr = x + r * L.S;
      T* __restrict yr = y + r * L.S;
      for (int64_t i = 0; i < L.S; ++i) yr[i] = T((acc_t(xr[i]) - m) * a + bb);
    }
  });
}

/// dx = dy * A + (x - M) * B + Cc with M, A, B, Cc per (block, channel).
template <class T>
void apply_backward(const NormLayout& L, const T* dy, const T* x, const std::vector<opmath_t<T>>& M,
                    const std::vector<opmath_t<T>>& A, const std::vector<opmath_t<T>>& B,
                    const std::vector<opmath_t<T>>& Cc, T* dx) {
  using acc_t = opmath_t<T>;
  if (L.interleaved) {
    parallel_for(0, L.Nb * L.S, grain_for(2 * L.C), [&](int64_t b, int64_t e) {
      const int64_t C = L.C, S = L.S;
      for (int64_t row = b; row < e;) {
        const int64_t nb = row / S, end = std::min(e, (nb + 1) * S);
        const acc_t* __restrict m = M.data() + nb * C;
        const acc_t* __restrict a = A.data() + nb * C;
        const acc_t* __restrict bb = B.data() + nb * C;
        const acc_t* __restrict cc = Cc.data() + nb * C;
        for (; row < end; ++row) {
          const T* __restrict gr = dy + row * C;
          const T* __restrict xr = x + row * C;
          T* __restrict dr = dx + row * C;
          for (int64_t c = 0; c < C; ++c)
            dr[c] = T(acc_t(gr[c]) * a[c] + (acc_t(xr[c]) - m[c]) * bb[c] + cc[c]);
        }
      }
    });
    return;
  }
  parallel_for(0, L.Nb * L.C, grain_for(2 * L.S), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const acc_t m = M[r], a = A[r], bb = B[r], cc = Cc[r];
      const T* __restrict gr = dy + r * L.S;
      const T* __restrict xr = x + r * L.S;
      T* __restrict dr = dx + r * L.S;
      for (int64_t i = 0; i < L.S; ++i) dr[i] = T(acc_t(gr[i]) * a + (acc_t(xr[i]) - m) * bb + cc);
    }
  });
}

/// Per (block, channel) values from per-channel ones (batch_norm's blocks).
template <class A>
std::vector<A> per_block(const NormLayout& L, const std::vector<double>& per_channel) {
  std::vector<A> v(static_cast<size_t>(L.Nb * L.C));
  for (int64_t nb = 0; nb < L.Nb; ++nb)
    for (int64_t c = 0; c < L.C; ++c) v[nb * L.C + c] = A(per_channel[c]);
  return v;
}

/// Sums per (block, channel) -> per channel.
std::vector<double> over_blocks(const NormLayout& L, const double* s) {
  std::vector<double> v(static_cast<size_t>(L.C), 0.0);
  for (int64_t nb = 0; nb < L.Nb; ++nb)
    for (int64_t c = 0; c < L.C; ++c) v[c] += s[nb * L.C + c];
  return v;
}


// ==== batch_norm ===========================================================================

std::pair<Tensor, Tensor> batch_norm_forward(const Tensor& x, const Tensor& y, const NormView& L, const Tensor& weight,
                                             const Tensor& bias, const Tensor& running_mean,
                                             const Tensor& running_var, bool training, bool update, double momentum,
                                             double eps) {
  const char* op = "batch_norm";
  const int64_t C = L.C;
  const std::vector<double> wv = weight.defined() ? read_vec(weight) : std::vector<double>(static_cast<size_t>(C), 1.0);
  const std::vector<double> bv = bias.defined() ? read_vec(bias) : std::vector<double>(static_cast<size_t>(C), 0.0);
  std::vector<double> mean(static_cast<size_t>(C), 0.0), invstd(static_cast<size_t>(C), 0.0);
  if (!training) {
    mean = read_vec(running_mean);
    const std::vector<double> rv = read_vec(running_var);
    for (int64_t c = 0; c < C; ++c) invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
  }
  if (x.numel() != 0) {
    BRISK_DISPATCH_FLOAT(x.dtype(), op, [&] {
      using acc_t = opmath_t<scalar_t>;
      const scalar_t* xp = x.data_ptr<scalar_t>();
      const double n = double(L.Nb * L.S);
      if (training) {
        // shift: the channel's first value (block 0, position 0)
        std::vector<double> shift(static_cast<size_t>(C));
        for (int64_t c = 0; c < C; ++c) shift[c] = finite_shift(double(xp[L.interleaved ? c : c * L.S]));
        const std::vector<double> sums = sum_shifted(L, xp, per_block<acc_t>(L, shift));
        mean = over_blocks(L, sums.data());
        for (int64_t c = 0; c < C; ++c) mean[c] = double(acc_t(shift[c])) + mean[c] / n;
        const std::vector<double> sq = sum_sq_dev(L, xp, per_block<acc_t>(L, mean));
        std::vector<double> var = over_blocks(L, sq.data());
        for (double& v : var) v /= n;
        for (int64_t c = 0; c < C; ++c) invstd[c] = 1.0 / std::sqrt(var[c] + eps);
        if (update) {
          // PyTorch's rule: the running variance takes the unbiased estimate.
          std::vector<double> rm = read_vec(running_mean), rv = read_vec(running_var);
          for (int64_t c = 0; c < C; ++c) {
            rm[c] = (1 - momentum) * rm[c] + momentum * mean[c];
            rv[c] = (1 - momentum) * rv[c] + momentum * var[c] * n / (n - 1);
          }
          write_vec(running_mean, rm);
          write_vec(running_var, rv);
        }
      }
      std::vector<double> A(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) A[c] = invstd[c] * wv[c];
      apply_affine(L, xp, per_block<acc_t>(L, mean), per_block<acc_t>(L, A), per_block<acc_t>(L, bv),
                   y.data_ptr<scalar_t>());
    });
  }
  return {tensor(mean, kDouble), tensor(invstd, kDouble)};
}

void batch_norm_backward(const Tensor& gy, const Tensor& x, const NormView& L, const Tensor& weight,
                         const Tensor& mean_t, const Tensor& invstd_t, bool training, const Tensor& dx,
                         const Tensor& dw, const Tensor& db) {
  const int64_t C = L.C;
  const double n = double(L.Nb * L.S);
  const bool need_dx = dx.defined(), need_dw = dw.defined(), need_db = db.defined();
  const std::vector<double> wv = weight.defined() ? read_vec(weight) : std::vector<double>(static_cast<size_t>(C), 1.0);
  const std::vector<double> mean = read_vec(mean_t), invstd = read_vec(invstd_t);
  std::vector<double> sdy(static_cast<size_t>(C), 0.0), sdyx(static_cast<size_t>(C), 0.0);
  const bool need_sums = need_db || need_dw || (need_dx && training);
  if (x.numel() != 0) {
    BRISK_DISPATCH_FLOAT(x.dtype(), "batch_norm_backward", [&] {
      using acc_t = opmath_t<scalar_t>;
      const scalar_t* xp = x.data_ptr<scalar_t>();
      const scalar_t* gp = gy.data_ptr<scalar_t>();
      if (need_sums) {
        const std::vector<double> sums = sum_grad(L, gp, xp, per_block<acc_t>(L, mean));
        sdy = over_blocks(L, sums.data());
        sdyx = over_blocks(L, sums.data() + L.Nb * C);
      }
      if (!need_dx) return;
      // dx = (dy - mean(dy) - xhat * mean(dy * xhat)) * invstd * w in training,
      // dy * invstd * w in eval; written as dy * A + (x - mean) * B + Cc per channel.
      std::vector<double> A(C), B(C, 0.0), Cc(C, 0.0);
      for (int64_t c = 0; c < C; ++c) {
        A[c] = invstd[c] * wv[c];
        if (training) {
          B[c] = -wv[c] * invstd[c] * invstd[c] * invstd[c] * sdyx[c] / n;
          Cc[c] = -A[c] * sdy[c] / n;
        }
      }
      if (!training) {
        // dy * A alone: x does not enter (a NaN or inf in x must not reach dx through (x - mean) * 0).
        const std::vector<acc_t> zero(static_cast<size_t>(L.Nb * C), acc_t(0));
        apply_affine(L, gp, zero, per_block<acc_t>(L, A), zero, dx.data_ptr<scalar_t>());
        return;
      }
      apply_backward(L, gp, xp, per_block<acc_t>(L, mean), per_block<acc_t>(L, A), per_block<acc_t>(L, B),
                     per_block<acc_t>(L, Cc), dx.data_ptr<scalar_t>());
    });
  }
  if (need_dw) {
    std::vector<double> v(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) v[c] = sdyx[c] * invstd[c];
    write_vec(dw, v);
  }
  if (need_db) write_vec(db, sdy);
}

// ==== group_norm ===========================================================================

std::pair<Tensor, Tensor> group_norm_forward(const Tensor& x, const Tensor& y, const NormView& L, int64_t G,
                                             const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "group_norm";
  const int64_t N = L.Nb, C = L.C, D = C / G;
  const std::vector<double> wv = weight.defined() ? read_vec(weight) : std::vector<double>(static_cast<size_t>(C), 1.0);
  const std::vector<double> bv = bias.defined() ? read_vec(bias) : std::vector<double>(static_cast<size_t>(C), 0.0);
  std::vector<double> mean(static_cast<size_t>(N * G), 0.0), rstd(static_cast<size_t>(N * G), 0.0);
  if (x.numel() != 0) {
    BRISK_DISPATCH_FLOAT(x.dtype(), op, [&] {
      using acc_t = opmath_t<scalar_t>;
      const scalar_t* xp = x.data_ptr<scalar_t>();
      const double cnt = double(D * L.S);
      auto per_group = [&](const std::vector<double>& v) {
        std::vector<double> out(static_cast<size_t>(N * G), 0.0);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c) out[n * G + c / D] += v[n * C + c];
        return out;
      };
      auto per_channel = [&](const std::vector<double>& v) {
        std::vector<acc_t> out(static_cast<size_t>(N * C));
        for (int64_t i = 0; i < N * C; ++i) out[i] = acc_t(v[(i / C) * G + (i % C) / D]);
        return out;
      };
      // shift: each group's first value
      std::vector<double> shift(static_cast<size_t>(N * G));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t gi = 0; gi < G; ++gi)
          shift[n * G + gi] = finite_shift(double(xp[L.interleaved ? n * L.S * C + gi * D : (n * C + gi * D) * L.S]));
      mean = per_group(sum_shifted(L, xp, per_channel(shift)));
      for (int64_t i = 0; i < N * G; ++i) mean[i] = double(acc_t(shift[i])) + mean[i] / cnt;
      std::vector<double> var = per_group(sum_sq_dev(L, xp, per_channel(mean)));
      // A sum of squares past the double range (float sums that overflow are
      // summed again in double): NaN, not rstd = 0, which would silently
      // output the bias.
      for (size_t i = 0; i < var.size(); ++i)
        rstd[i] = std::isinf(var[i]) ? std::numeric_limits<double>::quiet_NaN() : 1.0 / std::sqrt(var[i] / cnt + eps);
      std::vector<acc_t> A(static_cast<size_t>(N * C)), B(static_cast<size_t>(N * C));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          A[n * C + c] = acc_t(rstd[n * G + c / D] * wv[c]);
          B[n * C + c] = acc_t(bv[c]);
        }
      apply_affine(L, xp, per_channel(mean), A, B, y.data_ptr<scalar_t>());
    });
  }
  return {tensor(mean, kDouble), tensor(rstd, kDouble)};
}

void group_norm_backward(const Tensor& gy, const Tensor& x, const NormView& L, int64_t G, const Tensor& weight,
                         const Tensor& mean_t, const Tensor& rstd_t, const Tensor& dx, const Tensor& dw,
                         const Tensor& db) {
  const int64_t N = L.Nb, C = L.C, D = C / G;
  const bool need_dx = dx.defined(), need_dw = dw.defined(), need_db = db.defined();
  const double cnt = double(D * L.S);
  const std::vector<double> wv = weight.defined() ? read_vec(weight) : std::vector<double>(static_cast<size_t>(C), 1.0);
  const std::vector<double> mean = read_vec(mean_t), rstd = read_vec(rstd_t);
  std::vector<double> sums(static_cast<size_t>(2 * N * C), 0.0);  // [sum dy | sum dy*(x-mean)] per (n, c)
  if (x.numel() != 0) {
    BRISK_DISPATCH_FLOAT(x.dtype(), "group_norm_backward", [&] {
      using acc_t = opmath_t<scalar_t>;
      const scalar_t* xp = x.data_ptr<scalar_t>();
      const scalar_t* gp = gy.data_ptr<scalar_t>();
      std::vector<acc_t> m(static_cast<size_t>(N * C));
      for (int64_t i = 0; i < N * C; ++i) m[i] = acc_t(mean[(i / C) * G + (i % C) / D]);
      sums = sum_grad(L, gp, xp, m);
      if (!need_dx) return;
      // Per (n, group): dx = rstd * w * dy + b2 * (x - mean) + c2 with
      // b2 = -rstd^3 * sum_c(w * sum dy (x - mean)) / cnt, c2 = -rstd * sum_c(w * sum dy) / cnt.
      std::vector<double> A(static_cast<size_t>(N * C)), B(static_cast<size_t>(N * C)), Cc(static_cast<size_t>(N * C));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t gi = 0; gi < G; ++gi) {
          double s1 = 0, s2 = 0;
          for (int64_t c = gi * D; c < (gi + 1) * D; ++c) {
            s1 += sums[N * C + n * C + c] * wv[c];
            s2 += sums[n * C + c] * wv[c];
          }
          const double r = rstd[n * G + gi];
          const double b2 = -r * r * r * s1 / cnt;
          const double c2 = -r * s2 / cnt;
          for (int64_t c = gi * D; c < (gi + 1) * D; ++c) {
            A[n * C + c] = r * wv[c];
            B[n * C + c] = b2;
            Cc[n * C + c] = c2;
          }
        }
      apply_backward(L, gp, xp, m, cast_vec<acc_t>(A), cast_vec<acc_t>(B), cast_vec<acc_t>(Cc), dx.data_ptr<scalar_t>());
    });
  }
  if (need_dw) {
    std::vector<double> v(static_cast<size_t>(C), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) v[c] += sums[N * C + n * C + c] * rstd[n * G + c / D];
    write_vec(dw, v);
  }
  if (need_db) {
    std::vector<double> v(static_cast<size_t>(C), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) v[c] += sums[n * C + c];
    write_vec(db, v);
  }
}

}  // namespace

void register_norm_channel_kernels() {
  register_kernel<OpId::batch_norm>(kCPU, batch_norm_forward);
  register_kernel<OpId::batch_norm_backward>(kCPU, batch_norm_backward);
  register_kernel<OpId::group_norm>(kCPU, group_norm_forward);
  register_kernel<OpId::group_norm_backward>(kCPU, group_norm_backward);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
