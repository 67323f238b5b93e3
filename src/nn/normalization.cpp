// batch_norm and group_norm: per-channel (per-group) statistics and the
// affine transform as direct loops over NCHW or channels_last memory, with
// recorded backward nodes; BatchNorm1d/2d/3d and GroupNorm modules. See
// docs/design/pooling_norm.md.
//
// Note [Normalization layouts]
// The kernels see an (N, C, *) tensor as Nb blocks of C channels by S
// positions, either planar, memory (Nb, C, S) (NCHW-contiguous inputs: each
// (block, channel) is one contiguous run), or interleaved, memory (Nb, S, C)
// (channels_last, and 2-D (N, C) inputs: C is innermost and the loops
// vectorize over it). batch_norm's interleaved view is one block of N*S rows.
// Every statistic is first summed per (block, channel), in fixed chunks and
// in a fixed order (so results do not depend on the thread count), then
// combined per channel (batch_norm) or per (sample, group) (group_norm).
// Sums accumulate in 16 float lanes per chunk of 4096 values (double lanes
// for double inputs) and in double across chunks; the variance is a second
// pass over x - mean, not E[x^2] - mean^2.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>
#include <vector>

#include "brisk/autograd.h"
#include "brisk/nn/normalization.h"
#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/parallel.h"
#include "core/tensor_create.h"
#include "profiler/record.h"
#ifdef BRISK_HAVE_CUDA
#include "backend/cuda/nn_kernels.h"
#endif

namespace brisk::nn {

namespace {

/// Whether x runs on the CUDA kernels (src/backend/cuda/normalization.cu).
/// They take the memory and view prepared here; the statistics they return
/// stay on the device (BnSaved / GnSaved tensors).
bool on_cuda(const Tensor& x) {
#ifdef BRISK_HAVE_CUDA
  return x.is_cuda();
#else
  (void)x;
  return false;
#endif
}

int64_t grain_for(int64_t work_per_item) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_item)); }

// ==== layout ===========================================================================

struct NormLayout {
  int64_t Nb, C, S;
  bool interleaved;
};

/// An input as the kernels read it: its memory (a contiguous copy only for
/// inputs that are neither contiguous nor channels_last) and whether the
/// outputs are channels_last.
struct Prepared {
  Tensor x;
  bool cl;           // 4-D channels_last input: outputs and gradients channels_last too
  bool interleaved;  // Note [Normalization layouts]
  int64_t N, C, S;
};

Prepared prepare(const Tensor& x) {
  Prepared p;
  p.N = x.size(0);
  p.C = x.size(1);
  p.S = 1;
  for (int64_t d = 2; d < x.dim(); ++d) p.S *= x.size(d);
  p.cl = x.dim() == 4 && !x.is_contiguous() && x.is_contiguous(kChannelsLast);
  p.x = p.cl ? x : x.contiguous();
  p.interleaved = p.cl || p.S == 1;
  return p;
}

/// Another tensor of the same shape (a gradient) in p's memory layout.
Tensor same_layout(const Tensor& t, const Prepared& p) { return p.cl ? t.contiguous(kChannelsLast) : t.contiguous(); }

Tensor alloc_like(const Prepared& p, IntArrayRef sizes, ScalarType dt) {
  if (!p.cl) return detail::make_tensor(sizes, {}, dt, p.x.device());
  const DimVector st = detail::channels_last_strides(sizes);
  return detail::make_tensor(sizes, st, dt, p.x.device());
}

/// batch_norm: one block of N*S rows when interleaved, N blocks otherwise.
NormLayout bn_layout(const Prepared& p) {
  return p.interleaved ? NormLayout{1, p.C, p.N * p.S, true} : NormLayout{p.N, p.C, p.S, false};
}
/// group_norm: one block per sample.
NormLayout gn_layout(const Prepared& p) { return NormLayout{p.N, p.C, p.S, p.interleaved}; }

// ---- small per-channel vectors -----------------------------------------------------------

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

/// Writes values into a 1-D tensor in place (a running statistic).
void write_vec(const Tensor& t, const std::vector<double>& v) {
  BRISK_DISPATCH_FLOAT(t.dtype(), "batch_norm", [&] {
    scalar_t* p = t.data_ptr<scalar_t>();
    const int64_t st = t.stride(0);
    for (int64_t i = 0; i < t.numel(); ++i) p[i * st] = scalar_t(v[i]);
  });
  t.bump_version();
}

/// A gradient of a (C) parameter, in the parameter's dtype.
Tensor vec_tensor(const std::vector<double>& v, ScalarType dtype) { return tensor(v, kDouble).to(dtype); }

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
    return out;
  }
  out.resize(static_cast<size_t>(L.Nb * L.C));
  parallel_for(0, L.Nb * L.C, grain_for(L.S), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * L.S;
      const acc_t kr = k[r];
      out[r] = lane_sum<acc_t>(L.S, [xr, kr](int64_t i) { return acc_t(xr[i]) - kr; });
    }
  });
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
    return out;
  }
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
    return out;
  }
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

// ==== checks ===============================================================================

void check_channel_vec(const char* op, const char* what, const Tensor& t, const Tensor& input) {
  if (!t.defined()) return;
  BRISK_CHECK(t.is_floating_point(), op, "expected a floating point ", what, ", got ", t.dtype());
  BRISK_CHECK(t.device() == input.device(), op, what, " is on ", t.device(), " but the input is on ", input.device());
  BRISK_CHECK(t.dim() == 1 && t.size(0) == input.size(1), op, "expected ", what, " of shape [", input.size(1),
              "] (the channels of input of shape ", input.sizes(), "), got ", t.sizes());
}

void check_norm_input(const char* op, const Tensor& x) {
  BRISK_CHECK(x.defined(), op, "input is undefined");
  BRISK_CHECK(x.is_cpu() || on_cuda(x), op, "not implemented on ", x.device());
  BRISK_CHECK(x.is_floating_point(), op, "expected a floating point input, got ", x.dtype());
  BRISK_CHECK(x.dim() >= 2, op, "expected an input of shape (N, C, *), got ", x.sizes());
}

// ==== batch_norm ===========================================================================

/// What the backward needs besides x, weight and the gradient.
struct BnSaved {
  std::vector<double> mean, invstd;  // the statistics used (batch or running)
  Tensor mean_t, invstd_t;           // the same on a CUDA device (float64, (C))
  ScalarType weight_dtype, bias_dtype;  // of the parameter gradients (the input's when a parameter is absent)
  bool training;
  double eps;
};

#ifdef BRISK_HAVE_CUDA
cuda::detail::NormView cuda_view(const NormLayout& L) { return {L.Nb, L.C, L.S, L.interleaved}; }

/// A (C) parameter gradient on the device, or undefined when not needed.
Tensor param_grad(bool need, ScalarType dtype, const Tensor& x, int64_t C) {
  if (!need) return Tensor();
  return empty({C}, TensorOptions(dtype).device(x.device()));
}
#endif

/// A composite backward for 16-bit inputs runs in float32 (as the kernels'
/// sums do): its terms of size ~rstd cancel, and in 16 bits the second
/// derivatives came out as rounding noise. Gradients go back in the
/// dtypes of x, weight and bias.
template <class Fn>
TensorList in_float_for_16_bit(const Tensor& g, const Tensor& x, const Tensor& w, ScalarType wdt, ScalarType bdt,
                               const Fn& fn) {
  if (!is_reduced_float(x.dtype())) return fn(g, x, w);
  TensorList r = fn(g.to(kFloat), x.to(kFloat), w.defined() ? w.to(kFloat) : w);
  return {r[0].to(x.dtype()), r[1].to(wdt), r[2].to(bdt)};
}

/// Composite backward from brisk ops (differentiable: used under create_graph).
TensorList bn_backward_composite(const Tensor& g, const Tensor& x, const Tensor& w, const BnSaved& s) {
  const int64_t C = x.size(1);
  std::vector<int64_t> dims{0}, cshape(static_cast<size_t>(x.dim()), 1);
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  cshape[1] = C;
  Tensor mu, inv;
  if (s.training) {
    mu = x.mean(dims, true);
    inv = (x.var(dims, 0, true) + s.eps).rsqrt();
  } else if (s.mean_t.defined()) {
    mu = s.mean_t.to(x.dtype()).view(cshape);
    inv = s.invstd_t.to(x.dtype()).view(cshape);
  } else {
    mu = tensor(s.mean, kDouble).to(x.dtype()).view(cshape);
    inv = tensor(s.invstd, kDouble).to(x.dtype()).view(cshape);
  }
  const Tensor xhat = (x - mu) * inv;
  const Tensor gw = w.defined() ? g * w.view(cshape) : g;
  Tensor dx;
  if (s.training)
    dx = inv * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true));
  else
    dx = gw * inv;
  return {dx, (g * xhat).sum(dims), g.sum(dims)};
}

TensorList bn_backward(const Tensor& g, const Tensor& x, const Tensor& w, const BnSaved& s, bool need_dx,
                       bool need_dw, bool need_db) {
  const Prepared p = prepare(x);
  const NormLayout L = bn_layout(p);
  const Tensor gin = same_layout(g, p);
  const int64_t C = p.C;
#ifdef BRISK_HAVE_CUDA
  if (on_cuda(x)) {
    Tensor dx = need_dx ? alloc_like(p, x.sizes(), x.dtype()) : Tensor();
    Tensor dw = param_grad(need_dw, s.weight_dtype, x, C), db = param_grad(need_db, s.bias_dtype, x, C);
    cuda::detail::batch_norm_backward(gin, p.x, cuda_view(L), w, s.mean_t, s.invstd_t, s.training, dx, dw, db);
    return {dx, dw, db};
  }
#endif
  const double n = double(p.N * p.S);
  const std::vector<double> wv = w.defined() ? read_vec(w) : std::vector<double>(static_cast<size_t>(C), 1.0);
  Tensor dx;
  std::vector<double> sdy(static_cast<size_t>(C), 0.0), sdyx(static_cast<size_t>(C), 0.0);
  const bool need_sums = need_db || need_dw || (need_dx && s.training);
  if (need_dx) dx = alloc_like(p, x.sizes(), x.dtype());
  if (x.numel() != 0) {
    BRISK_DISPATCH_FLOAT(x.dtype(), "batch_norm_backward", [&] {
      using acc_t = opmath_t<scalar_t>;
      const scalar_t* xp = p.x.data_ptr<scalar_t>();
      const scalar_t* gp = gin.data_ptr<scalar_t>();
      if (need_sums) {
        const std::vector<double> sums = sum_grad(L, gp, xp, per_block<acc_t>(L, s.mean));
        sdy = over_blocks(L, sums.data());
        sdyx = over_blocks(L, sums.data() + L.Nb * C);
      }
      if (!need_dx) return;
      // dx = (dy - mean(dy) - xhat * mean(dy * xhat)) * invstd * w in training,
      // dy * invstd * w in eval; written as dy * A + (x - mean) * B + Cc per channel.
      std::vector<double> A(C), B(C, 0.0), Cc(C, 0.0);
      for (int64_t c = 0; c < C; ++c) {
        A[c] = s.invstd[c] * wv[c];
        if (s.training) {
          B[c] = -wv[c] * s.invstd[c] * s.invstd[c] * s.invstd[c] * sdyx[c] / n;
          Cc[c] = -A[c] * sdy[c] / n;
        }
      }
      if (!s.training) {
        // dy * A alone: x does not enter (a NaN or inf in x must not reach dx through (x - mean) * 0).
        const std::vector<acc_t> zero(static_cast<size_t>(L.Nb * C), acc_t(0));
        apply_affine(L, gp, zero, per_block<acc_t>(L, A), zero, dx.data_ptr<scalar_t>());
        return;
      }
      apply_backward(L, gp, xp, per_block<acc_t>(L, s.mean), per_block<acc_t>(L, A), per_block<acc_t>(L, B),
                     per_block<acc_t>(L, Cc), dx.data_ptr<scalar_t>());
    });
  } else if (need_dx) {
    dx = zeros(x.sizes(), x.dtype());
  }
  Tensor dw, db;
  if (need_dw) {
    std::vector<double> v(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) v[c] = sdyx[c] * s.invstd[c];
    dw = vec_tensor(v, s.weight_dtype);
  }
  if (need_db) db = vec_tensor(sdy, s.bias_dtype);
  return {dx, dw, db};
}

}  // namespace

namespace functional {

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, std::optional<double> momentum, double eps) {
  const char* op = "batch_norm";
  BRISK_PROFILE_OP(op, input, running_mean, running_var, weight, bias);
  if (!on_cuda(input)) detail::check_cpu_kernel(input, op);
  check_norm_input(op, input);
  check_channel_vec(op, "weight", weight, input);
  check_channel_vec(op, "bias", bias, input);
  check_channel_vec(op, "running_mean", running_mean, input);
  check_channel_vec(op, "running_var", running_var, input);
  BRISK_CHECK(running_mean.defined() == running_var.defined(), op,
              "running_mean and running_var must both be given or both be undefined");
  BRISK_CHECK(training || running_mean.defined(), op,
              "running_mean and running_var are required in eval mode (training=false)");
  const bool update = training && running_mean.defined();
  BRISK_CHECK(!update || momentum, op,
              "momentum=nullopt (cumulative moving average) needs the number of batches seen: use nn::BatchNorm1d/2d/3d, "
              "which keep num_batches_tracked, or pass a momentum");
  const int64_t C = input.size(1);
  const int64_t per_channel = C > 0 ? input.numel() / C : 0;
  BRISK_CHECK(!training || per_channel != 1, op, "expected more than 1 value per channel when training, got input of shape ",
              input.sizes());
  if (update) {
    autograd::check_inplace(running_mean, op);
    autograd::check_inplace(running_var, op);
  }

  const bool rec = autograd::should_record(input, weight, bias);
  Tensor y;
  BnSaved s;
  s.weight_dtype = weight.defined() ? weight.dtype() : input.dtype();
  s.bias_dtype = bias.defined() ? bias.dtype() : input.dtype();
  s.training = training;
  s.eps = eps;
  {
    NoGradGuard ng;
    const Prepared p = prepare(input);
    const NormLayout L = bn_layout(p);
    y = alloc_like(p, input.sizes(), input.dtype());
#ifdef BRISK_HAVE_CUDA
    if (on_cuda(input)) {
      std::tie(s.mean_t, s.invstd_t) =
          cuda::detail::batch_norm_forward(p.x, y, cuda_view(L), weight, bias, running_mean, running_var, training,
                                           update, momentum.value_or(0.0), eps);
      if (update && input.numel() != 0) {
        running_mean.bump_version();
        running_var.bump_version();
      }
    }
#endif
    const bool cpu = !on_cuda(input);
    const std::vector<double> wv = !cpu ? std::vector<double>()
                                   : weight.defined() ? read_vec(weight)
                                                      : std::vector<double>(static_cast<size_t>(C), 1.0);
    const std::vector<double> bv = !cpu ? std::vector<double>()
                                   : bias.defined() ? read_vec(bias)
                                                    : std::vector<double>(static_cast<size_t>(C), 0.0);
    s.mean.assign(static_cast<size_t>(C), 0.0);
    s.invstd.assign(static_cast<size_t>(C), 0.0);
    if (!training && cpu) {
      s.mean = read_vec(running_mean);
      const std::vector<double> rv = read_vec(running_var);
      for (int64_t c = 0; c < C; ++c) s.invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
    }
    if (input.numel() != 0 && cpu) {
      BRISK_DISPATCH_FLOAT(input.dtype(), op, [&] {
        using acc_t = opmath_t<scalar_t>;
        const scalar_t* xp = p.x.data_ptr<scalar_t>();
        const double n = double(per_channel);
        if (training) {
          // shift: the channel's first value (n = 0, position 0)
          std::vector<double> shift(static_cast<size_t>(C));
          for (int64_t c = 0; c < C; ++c) shift[c] = finite_shift(double(xp[p.interleaved ? c : c * p.S]));
          const std::vector<double> sums = sum_shifted(L, xp, per_block<acc_t>(L, shift));
          std::vector<double> mean = over_blocks(L, sums.data());
          for (int64_t c = 0; c < C; ++c) mean[c] = double(acc_t(shift[c])) + mean[c] / n;
          const std::vector<double> sq = sum_sq_dev(L, xp, per_block<acc_t>(L, mean));
          std::vector<double> var = over_blocks(L, sq.data());
          for (double& v : var) v /= n;
          for (int64_t c = 0; c < C; ++c) s.invstd[c] = 1.0 / std::sqrt(var[c] + eps);
          s.mean = mean;
          if (update) {
            // PyTorch's rule: the running variance takes the unbiased estimate.
            const double mom = *momentum;
            std::vector<double> rm = read_vec(running_mean), rv = read_vec(running_var);
            for (int64_t c = 0; c < C; ++c) {
              rm[c] = (1 - mom) * rm[c] + mom * mean[c];
              rv[c] = (1 - mom) * rv[c] + mom * var[c] * n / (n - 1);
            }
            write_vec(running_mean, rm);
            write_vec(running_var, rv);
          }
        }
        std::vector<double> A(static_cast<size_t>(C));
        for (int64_t c = 0; c < C; ++c) A[c] = s.invstd[c] * wv[c];
        apply_affine(L, xp, per_block<acc_t>(L, s.mean), per_block<acc_t>(L, A), per_block<acc_t>(L, bv),
                     y.data_ptr<scalar_t>());
      });
    }
  }
  if (rec)
    autograd::record("NativeBatchNormBackward0", {y}, {input, weight, bias},
                     {autograd::save(input), autograd::save(weight)},
                     [s = std::move(s)](autograd::BackwardCtx& c) -> TensorList {
                       const Tensor x = c.saved(0), w = c.saved(1);
                       if (GradMode::is_enabled())
                         return in_float_for_16_bit(c.grad(), x, w, s.weight_dtype, s.bias_dtype,
                                                    [&](const Tensor& g, const Tensor& xf, const Tensor& wf) {
                                                      return bn_backward_composite(g, xf, wf, s);
                                                    });
                       return bn_backward(c.grad(), x, w, s, c.needs(0), c.needs(1), c.needs(2));
                     });
  return y;
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o) {
  return batch_norm(input, running_mean, running_var, o.weight(), o.bias(), o.training(), o.momentum(), o.eps());
}

}  // namespace functional

// ==== group_norm ===========================================================================

namespace {

struct GnSaved {
  std::vector<double> mean, rstd;  // (N * G)
  Tensor mean_t, rstd_t;           // the same on a CUDA device (float64)
  ScalarType weight_dtype, bias_dtype;  // of the parameter gradients (the input's when a parameter is absent)
  int64_t G;
  double eps;
};

TensorList gn_backward_composite(const Tensor& g, const Tensor& x, const Tensor& w, const GnSaved& s) {
  const int64_t N = x.size(0), C = x.size(1);
  std::vector<int64_t> cshape(static_cast<size_t>(x.dim()), 1), sum_dims{0};
  cshape[1] = C;
  for (int64_t d = 2; d < x.dim(); ++d) sum_dims.push_back(d);
  const Tensor xg = x.reshape({N, s.G, -1});
  const Tensor mu = xg.mean(-1, true);
  const Tensor var = xg.var(-1, 0, true);
  const Tensor inv = where(var.isinf(), std::numeric_limits<double>::quiet_NaN(), (var + s.eps).rsqrt());  // as the forward
  const Tensor xhat_g = (xg - mu) * inv;
  const Tensor xhat = xhat_g.reshape(x.sizes());
  const Tensor gw = (w.defined() ? g * w.view(cshape) : g).reshape({N, s.G, -1});
  const Tensor dx = (inv * (gw - gw.mean(-1, true) - xhat_g * (gw * xhat_g).mean(-1, true))).reshape(x.sizes());
  return {dx, (g * xhat).sum(sum_dims), g.sum(sum_dims)};
}

TensorList gn_backward(const Tensor& g, const Tensor& x, const Tensor& w, const GnSaved& s, bool need_dx,
                       bool need_dw, bool need_db) {
  const Prepared p = prepare(x);
  const NormLayout L = gn_layout(p);
  const Tensor gin = same_layout(g, p);
  const int64_t N = p.N, C = p.C, G = s.G, D = C / G;
#ifdef BRISK_HAVE_CUDA
  if (on_cuda(x)) {
    Tensor dx = need_dx ? alloc_like(p, x.sizes(), x.dtype()) : Tensor();
    Tensor dw = param_grad(need_dw, s.weight_dtype, x, C), db = param_grad(need_db, s.bias_dtype, x, C);
    cuda::detail::group_norm_backward(gin, p.x, cuda_view(L), G, w, s.mean_t, s.rstd_t, dx, dw, db);
    return {dx, dw, db};
  }
#endif
  const double cnt = double(D * p.S);
  const std::vector<double> wv = w.defined() ? read_vec(w) : std::vector<double>(static_cast<size_t>(C), 1.0);
  std::vector<double> sums(static_cast<size_t>(2 * N * C), 0.0);  // [sum dy | sum dy*(x-mean)] per (n, c)
  Tensor dx;
  if (need_dx) dx = alloc_like(p, x.sizes(), x.dtype());
  if (x.numel() != 0) {
    BRISK_DISPATCH_FLOAT(x.dtype(), "group_norm_backward", [&] {
      using acc_t = opmath_t<scalar_t>;
      const scalar_t* xp = p.x.data_ptr<scalar_t>();
      const scalar_t* gp = gin.data_ptr<scalar_t>();
      std::vector<acc_t> m(static_cast<size_t>(N * C));
      for (int64_t i = 0; i < N * C; ++i) m[i] = acc_t(s.mean[(i / C) * G + (i % C) / D]);
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
          const double rstd = s.rstd[n * G + gi];
          const double b2 = -rstd * rstd * rstd * s1 / cnt;
          const double c2 = -rstd * s2 / cnt;
          for (int64_t c = gi * D; c < (gi + 1) * D; ++c) {
            A[n * C + c] = rstd * wv[c];
            B[n * C + c] = b2;
            Cc[n * C + c] = c2;
          }
        }
      apply_backward(L, gp, xp, m, cast_vec<acc_t>(A), cast_vec<acc_t>(B), cast_vec<acc_t>(Cc), dx.data_ptr<scalar_t>());
    });
  } else if (need_dx) {
    dx = zeros(x.sizes(), x.dtype());
  }
  Tensor dw, db;
  if (need_dw) {
    std::vector<double> v(static_cast<size_t>(C), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) v[c] += sums[N * C + n * C + c] * s.rstd[n * G + c / D];
    dw = vec_tensor(v, s.weight_dtype);
  }
  if (need_db) {
    std::vector<double> v(static_cast<size_t>(C), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) v[c] += sums[n * C + c];
    db = vec_tensor(v, s.bias_dtype);
  }
  return {dx, dw, db};
}

}  // namespace

namespace functional {

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  BRISK_PROFILE_OP("group_norm", input, weight, bias);
  const char* op = "group_norm";
  if (!on_cuda(input)) detail::check_cpu_kernel(input, op);
  check_norm_input(op, input);
  const int64_t N = input.size(0), C = input.size(1), G = num_groups;
  BRISK_CHECK(G > 0, op, "num_groups must be positive, got ", G);
  // PyTorch's checks, in its order: statistics of a single value (as
  // batch_norm's training check, on the input seen as (N * C / G, G, *)),
  // no channels, no spatial positions.
  {
    std::vector<int64_t> seen{N * C / G, G};
    int64_t values = N * C / G;
    for (int64_t d = 2; d < input.dim(); ++d) {
      seen.push_back(input.size(d));
      values *= input.size(d);
    }
    BRISK_CHECK(values != 1, op, "Expected more than 1 value per channel when training, got input size ",
                IntArrayRef(seen));
  }
  BRISK_CHECK(C > 0, op, "Expected number of channels to be greater than 0, got ", C);
  {
    int64_t hxw = 1;
    for (int64_t d = 2; d < input.dim(); ++d) hxw *= input.size(d);
    BRISK_CHECK(hxw > 0, op, "Expected HxW to be greater than 0, got ", hxw);
  }
  BRISK_CHECK(C % G == 0, op, "the number of channels ", C, " of input of shape ", input.sizes(),
              " is not divisible by num_groups ", G);
  check_channel_vec(op, "weight", weight, input);
  check_channel_vec(op, "bias", bias, input);

  const bool rec = autograd::should_record(input, weight, bias);
  Tensor y;
  GnSaved s;
  s.weight_dtype = weight.defined() ? weight.dtype() : input.dtype();
  s.bias_dtype = bias.defined() ? bias.dtype() : input.dtype();
  s.G = G;
  s.eps = eps;
  {
    NoGradGuard ng;
    const Prepared p = prepare(input);
    const NormLayout L = gn_layout(p);
    const int64_t D = C / G;
    y = alloc_like(p, input.sizes(), input.dtype());
#ifdef BRISK_HAVE_CUDA
    if (on_cuda(input))
      std::tie(s.mean_t, s.rstd_t) = cuda::detail::group_norm_forward(p.x, y, cuda_view(L), G, weight, bias, eps);
#endif
    const bool cpu = !on_cuda(input);
    const std::vector<double> wv = !cpu ? std::vector<double>()
                                   : weight.defined() ? read_vec(weight)
                                                      : std::vector<double>(static_cast<size_t>(C), 1.0);
    const std::vector<double> bv = !cpu ? std::vector<double>()
                                   : bias.defined() ? read_vec(bias)
                                                    : std::vector<double>(static_cast<size_t>(C), 0.0);
    s.mean.assign(static_cast<size_t>(N * G), 0.0);
    s.rstd.assign(static_cast<size_t>(N * G), 0.0);
    if (input.numel() != 0 && cpu) {
      BRISK_DISPATCH_FLOAT(input.dtype(), op, [&] {
        using acc_t = opmath_t<scalar_t>;
        const scalar_t* xp = p.x.data_ptr<scalar_t>();
        const double cnt = double(D * p.S);
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
            shift[n * G + gi] =
                finite_shift(double(xp[p.interleaved ? n * p.S * C + gi * D : (n * C + gi * D) * p.S]));
        s.mean = per_group(sum_shifted(L, xp, per_channel(shift)));
        for (int64_t i = 0; i < N * G; ++i) s.mean[i] = double(acc_t(shift[i])) + s.mean[i] / cnt;
        std::vector<double> var = per_group(sum_sq_dev(L, xp, per_channel(s.mean)));
        // A sum of squares past the float range: NaN as PyTorch (not rstd = 0,
        // which would silently output the bias).
        for (size_t i = 0; i < var.size(); ++i)
          s.rstd[i] = std::isinf(var[i]) ? std::numeric_limits<double>::quiet_NaN() : 1.0 / std::sqrt(var[i] / cnt + eps);
        std::vector<acc_t> A(static_cast<size_t>(N * C)), B(static_cast<size_t>(N * C));
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c) {
            A[n * C + c] = acc_t(s.rstd[n * G + c / D] * wv[c]);
            B[n * C + c] = acc_t(bv[c]);
          }
        apply_affine(L, xp, per_channel(s.mean), A, B, y.data_ptr<scalar_t>());
      });
    }
  }
  if (rec)
    autograd::record("NativeGroupNormBackward0", {y}, {input, weight, bias},
                     {autograd::save(input), autograd::save(weight)},
                     [s = std::move(s)](autograd::BackwardCtx& c) -> TensorList {
                       const Tensor x = c.saved(0), w = c.saved(1);
                       if (GradMode::is_enabled())
                         return in_float_for_16_bit(c.grad(), x, w, s.weight_dtype, s.bias_dtype,
                                                    [&](const Tensor& g, const Tensor& xf, const Tensor& wf) {
                                                      return gn_backward_composite(g, xf, wf, s);
                                                    });
                       return gn_backward(c.grad(), x, w, s, c.needs(0), c.needs(1), c.needs(2));
                     });
  return y;
}

Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o) {
  return group_norm(input, o.num_groups(), o.weight(), o.bias(), o.eps());
}

}  // namespace functional

// ==== modules ===============================================================================

namespace {
const char* bool_str(bool b) { return b ? "true" : "false"; }
}  // namespace

BatchNormBase::BatchNormBase(std::string type_name, const BatchNormOptions& o, TensorOptions opts)
    : Module(type_name), options(o) {
  const int64_t C = o.num_features();
  BRISK_CHECK(C > 0, type_name.c_str(), "num_features must be positive, got ", C);
  if (o.affine()) {
    weight = register_parameter("weight", empty({C}, opts));
    bias = register_parameter("bias", empty({C}, opts));
  }
  if (o.track_running_stats()) {
    running_mean = register_buffer("running_mean", empty({C}, opts));
    running_var = register_buffer("running_var", empty({C}, opts));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, TensorOptions(kInt64).device(opts.device_)));
  }
  reset_parameters();
}

void BatchNormBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard ng;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNormBase::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  NoGradGuard ng;
  weight.fill_(1);
  bias.zero_();
}

Tensor BatchNormBase::forward(const Tensor& x) {
  check_input_dim(x);
  BRISK_CHECK(x.size(1) == options.num_features(), name().c_str(), "expected input with ", options.num_features(),
              " channels (num_features), got input of shape ", x.sizes());
  std::optional<double> momentum = options.momentum();
  if (is_training() && options.track_running_stats()) {
    NoGradGuard ng;
    num_batches_tracked.add_(1);
    if (!momentum) momentum = 1.0 / double(num_batches_tracked.item<int64_t>());
  }
  // Batch statistics in training, and in eval when no running stats are kept.
  const bool use_batch_stats = is_training() || !running_mean.defined();
  return F::batch_norm(x, running_mean, running_var, weight, bias, use_batch_stats, momentum.value_or(0.0),
                       options.eps());
}

std::string BatchNormBase::extra_repr() const {
  std::ostringstream os;
  os << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum())
    os << *options.momentum();
  else
    os << "None";
  os << ", affine=" << bool_str(options.affine())
     << ", track_running_stats=" << bool_str(options.track_running_stats());
  return os.str();
}

BatchNorm1d::BatchNorm1d(const BatchNormOptions& o, TensorOptions opts) : BatchNormBase("BatchNorm1d", o, opts) {}
void BatchNorm1d::check_input_dim(const Tensor& x) const {
  BRISK_CHECK(x.defined(), "BatchNorm1d", "input is undefined");
  BRISK_CHECK(x.dim() == 2 || x.dim() == 3, "BatchNorm1d", "expected 2D (N, C) or 3D (N, C, L) input, got ", x.dim(),
              "D input of shape ", x.sizes());
}

BatchNorm2d::BatchNorm2d(const BatchNormOptions& o, TensorOptions opts) : BatchNormBase("BatchNorm2d", o, opts) {}
void BatchNorm2d::check_input_dim(const Tensor& x) const {
  BRISK_CHECK(x.defined(), "BatchNorm2d", "input is undefined");
  BRISK_CHECK(x.dim() == 4, "BatchNorm2d", "expected 4D (N, C, H, W) input, got ", x.dim(), "D input of shape ",
              x.sizes());
}

BatchNorm3d::BatchNorm3d(const BatchNormOptions& o, TensorOptions opts) : BatchNormBase("BatchNorm3d", o, opts) {}
void BatchNorm3d::check_input_dim(const Tensor& x) const {
  BRISK_CHECK(x.defined(), "BatchNorm3d", "input is undefined");
  BRISK_CHECK(x.dim() == 5, "BatchNorm3d", "expected 5D (N, C, D, H, W) input, got ", x.dim(), "D input of shape ",
              x.sizes());
}

GroupNorm::GroupNorm(const GroupNormOptions& o, TensorOptions opts) : Module("GroupNorm"), options(o) {
  BRISK_CHECK(o.num_groups() > 0, "GroupNorm", "num_groups must be positive, got ", o.num_groups());
  BRISK_CHECK(o.num_channels() % o.num_groups() == 0, "GroupNorm", "num_channels ", o.num_channels(),
              " must be divisible by num_groups ", o.num_groups());
  if (o.affine()) {
    weight = register_parameter("weight", empty({o.num_channels()}, opts));
    bias = register_parameter("bias", empty({o.num_channels()}, opts));
  }
  reset_parameters();
}

void GroupNorm::reset_parameters() {
  if (!options.affine()) return;
  NoGradGuard ng;
  weight.fill_(1);
  bias.zero_();
}

Tensor GroupNorm::forward(const Tensor& x) {
  BRISK_CHECK(x.defined(), "GroupNorm", "input is undefined");
  BRISK_CHECK(x.dim() >= 2 && x.size(1) == options.num_channels(), "GroupNorm", "expected input of shape (N, ",
              options.num_channels(), ", *), got ", x.sizes());
  return F::group_norm(x, options.num_groups(), weight, bias, options.eps());
}

std::string GroupNorm::extra_repr() const {
  std::ostringstream os;
  os << options.num_groups() << ", " << options.num_channels() << ", eps=" << options.eps()
     << ", affine=" << bool_str(options.affine());
  return os.str();
}

}  // namespace brisk::nn
