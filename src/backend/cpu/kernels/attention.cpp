// Fused scaled dot product attention on the CPU (flash-attention style):
// the kernels of OpId::attention_fused and OpId::attention_fused_backward
// (AttentionArgs in core/dispatch.h).
//
// Note [Flash attention on the CPU]
// Forward, per task = (batch b, block of kBlockQ query rows), over blocks of
// kBlockK keys:
//   s   = scale * q_blk k_blk^T                      (GEMM into a per-thread tile)
//   s  += mask (additive), or -inf where masked (bool mask, causal)
//   m'  = max(m, rowmax(s));  p = exp(s - m');  l = l * exp(m - m') + rowsum(p)
//   acc = acc * exp(m - m') + p v_blk                (GEMM, accumulating in the output rows)
// then out = acc / l and lse = m + log(l). The (L, S) scores are never
// materialized: the tile is kBlockQ x kBlockK. A row whose keys are all
// masked has l = 0: its output is 0 (as PyTorch 2.15) and its lse +inf, so
// that backward's exp(s - lse) is 0 there. Causal blocks past the diagonal
// are skipped.
//
// Backward, per task = batch b (so that dq, dk, dv of b have one writer):
// D = rowsum(dout * out), then for each query block i and key block j:
//   p  = exp(scale * q_i k_j^T [+ mask] - lse_i)      (recomputed, not saved)
//   dv_j += p^T dout_i;  dp = dout_i v_j^T;  ds = p * (dp - D_i)
//   dq_i += scale * ds k_j;  dk_j += scale * ds^T q_i
// Five GEMMs per block pair; the element loops between them are written to
// vectorize (this file is compiled once per ISA).
//
// Note [Attention tiles]
// The block products are library GEMMs called on the task's thread (the
// threads are brisk's: parallel_for over the tasks): float32 goes to
// oneDNN's dnnl_sgemm where brisk is built with it, else (and float64) to
// OpenBLAS. Measured on the 2-core AVX-512 dev VM, one thread, busy machine:
// with OpenBLAS the blocks ran at 75 (forward) to 100 (backward) GFLOP/s,
// with oneDNN at 110-160: 8x12x128x32 forward 4.3 -> 3.4 ms, fwd+bwd 11.3 ->
// 7.9 ms; 1x16x1024x64 58.6 -> 39.4 ms and 169 -> 102 ms. The tile sizes
// matter much less: forward 64 x 256 vs 128 x 512 within 5-10%, backward
// 64..256 x 128..512 within the noise; the larger tiles (fewer library
// calls) are kept.
#include <cblas.h>
#ifdef BRISK_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"

#ifndef BRISK_CPU_ISA
#error "kernel files are compiled once per ISA"
#endif

extern "C" int openblas_get_num_threads(void);

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

// Tiles (Note [Attention tiles]): forward kBlockQ x kBlockK scores per
// task step, backward kBlockQB x kBlockKB (two tiles: p and dp/ds).
constexpr int64_t kBlockQ = 128, kBlockK = 512;
constexpr int64_t kBlockQB = 128, kBlockKB = 256;

// ---- block GEMMs --------------------------------------------------------------------

// Row-major C (m, n) = alpha * op(A) (m, k) @ op(B) (k, n) + beta * C.
inline void block_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda,
                       const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
#ifdef BRISK_HAVE_DNNL
  if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, A, lda, B, ldb, beta, C, ldc) == dnnl_success) return;
#endif
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
}
inline void block_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* A,
                       int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) C[i * ldc + j] = beta == 0.0 ? 0.0 : beta * C[i * ldc + j];
    return;
  }
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
}

/// Before the tasks start: OpenBLAS runs on the calling thread only, and
/// oneDNN (which reads omp_get_max_threads() and runs serially inside a
/// parallel region) sees brisk's thread count, as in blas.cpp (Note [BLAS
/// threads]).
void sync_blas_threads() {
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
#ifdef _OPENMP
  if (!in_parallel_region() && omp_get_max_threads() != get_num_threads()) omp_set_num_threads(get_num_threads());
#endif
}

// ---- element math --------------------------------------------------------------------

/// exp as a branch-free polynomial that vectorizes: 2^n * e^r with
/// n = round(x / ln2), |r| <= ln2 / 2, degree-6 polynomial for e^r (relative
/// error about 1e-7). x is clamped to [-88, 88]: exp(-inf) = 0 exactly and
/// results below ~1e-38 flush to 0; NaN stays NaN. n is read from the bits
/// of the rounding sum (no float -> int conversion, so no guard for NaN).
inline float fast_exp(float x) {
  const float xc = std::min(std::max(x, -88.0f), 88.0f);  // NaN stays NaN
  const float t = xc * 1.44269504088896341f + 12582912.0f;  // 1.5 * 2^23: rounds to an integer in the low bits
  const float n = t - 12582912.0f;
  const int32_t ni = std::bit_cast<int32_t>(t) - 0x4B400000;  // n as an integer (garbage for NaN: e is NaN then)
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;  // ln2 in two parts: r stays exact
  float e = 1.9875691500e-4f;
  e = e * r + 1.3981999507e-3f;
  e = e * r + 8.3334519073e-3f;
  e = e * r + 4.1665795894e-2f;
  e = e * r + 1.6666665459e-1f;
  e = e * r + 5.0000001201e-1f;
  e = e * r * r + r + 1.0f;
  return e * std::bit_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(ni + 127) << 23));  // 2^n; n = -127 gives 0
}
inline double fast_exp(double x) { return std::exp(x); }

// The row loops run on full AVX-512 vectors where the variant has them (the
// kernels are built with -mprefer-vector-width=256 otherwise).
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#define BRISK_WIDE __attribute__((target("prefer-vector-width=512"), noinline))
#else
#define BRISK_WIDE
#endif

/// max over x[0, n) ignoring NaNs (-inf for n = 0), in lanes so that it
/// vectorizes without -ffast-math (`a > b ? a : b` is one max instruction).
template <class T>
BRISK_WIDE T row_max(const T* x, int64_t n) {
  constexpr int kLanes = 16;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T lane[kLanes];
  for (int l = 0; l < kLanes; ++l) lane[l] = kNegInf;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] = x[j + l] > lane[l] ? x[j + l] : lane[l];
  T m = kNegInf;
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  for (int l = 0; l < kLanes; ++l) m = lane[l] > m ? lane[l] : m;
  return m;
}

/// x[j] = exp(x[j] - shift) for j < n; returns the sum.
template <class T>
BRISK_WIDE T exp_shift_sum(T* x, int64_t n, T shift) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    const T e = fast_exp(x[j] - shift);
    x[j] = e;
    sum += e;
  }
  return sum;
}

/// x[j] = exp(x[j] - shift) for j < n.
template <class T>
BRISK_WIDE void exp_shift(T* x, int64_t n, T shift) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) x[j] = fast_exp(x[j] - shift);
}

/// ds[j] = p[j] * (ds[j] - d) for j < n.
template <class T>
BRISK_WIDE void softmax_grad_row(T* ds, const T* p, int64_t n, T d) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - d);
}

/// A per-thread scratch buffer of at least n elements (grow-only, reused by
/// later calls: a fresh 256 KB tile per call costs page faults).
template <class T>
T* scratch(int slot, int64_t n) {
  thread_local std::vector<T> buf[3];
  std::vector<T>& b = buf[slot];
  if (static_cast<int64_t>(b.size()) < n) b.resize(static_cast<size_t>(n));
  return b.data();
}

// ---- layouts -------------------------------------------------------------------------

/// Offsets (in elements) of each of the B matrices of a (batch..., r, c) tensor.
std::vector<int64_t> batch_offsets(const Tensor& t, int64_t nb, int64_t B) {
  std::vector<int64_t> off(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    int64_t rest = b, o = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      const int64_t size = t.size(d);
      o += (rest % size) * t.stride(d);
      rest /= size;
    }
    off[static_cast<size_t>(b)] = o;
  }
  return off;
}

/// One operand: matrix b starts at data + off[b]; rows `rs` apart, unit column stride.
template <class T>
struct Mat {
  T* data = nullptr;
  std::vector<int64_t> off;
  int64_t rs = 0;
  T* at(int64_t b, int64_t row) const { return data + off[static_cast<size_t>(b)] + row * rs; }
};
template <class T>
Mat<T> mat(const Tensor& t, int64_t nb, int64_t B) {
  Mat<T> m;
  if (!t.defined()) return m;
  m.data = static_cast<T*>(t.data_ptr());
  m.off = batch_offsets(t, nb, B);
  m.rs = t.size(nb) <= 1 ? std::max<int64_t>(1, t.size(nb + 1)) : t.stride(nb);  // BLAS wants ld >= cols
  return m;
}

/// The mask as the row loops read it: element (b, i, j) at data + off[b] + i * sl + j * ss.
struct MaskView {
  enum Kind { None, Bool, Additive } kind = None;
  const void* data = nullptr;
  std::vector<int64_t> off;
  int64_t sl = 0, ss = 0;
};
MaskView mask_view(const Tensor& m, int64_t nb, int64_t B) {
  MaskView v;
  if (!m.defined()) return v;
  v.kind = m.dtype() == kBool ? MaskView::Bool : MaskView::Additive;
  v.data = m.data_ptr();
  v.off = batch_offsets(m, nb, B);
  v.sl = m.stride(nb);
  v.ss = m.stride(nb + 1);
  return v;
}

/// Applies the mask to one tile row s[0, nk) of query i, keys j0..j0+nk:
/// additive mask added, bool-masked keys and (causal) keys past `valid` set to -inf.
template <class T>
inline void mask_row(T* s, int64_t nk, int64_t valid, const MaskView& mv, int64_t b, int64_t i, int64_t j0) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  if (mv.kind == MaskView::Additive) {
    const T* add = static_cast<const T*>(mv.data) + mv.off[static_cast<size_t>(b)] + i * mv.sl + j0 * mv.ss;
    if (mv.ss == 1) {
#pragma omp simd
      for (int64_t j = 0; j < valid; ++j) s[j] += add[j];
    } else {
      for (int64_t j = 0; j < valid; ++j) s[j] += add[j * mv.ss];
    }
  } else if (mv.kind == MaskView::Bool) {
    const bool* keep = static_cast<const bool*>(mv.data) + mv.off[static_cast<size_t>(b)] + i * mv.sl + j0 * mv.ss;
    if (mv.ss == 1) {
#pragma omp simd
      for (int64_t j = 0; j < valid; ++j) s[j] = keep[j] ? s[j] : kNegInf;
    } else {
      for (int64_t j = 0; j < valid; ++j) s[j] = keep[j * mv.ss] ? s[j] : kNegInf;
    }
  }
  for (int64_t j = std::max<int64_t>(valid, 0); j < nk; ++j) s[j] = kNegInf;
}

/// Keys of the tile [j0, j0 + nk) that query i may see (causal: j <= i).
inline int64_t valid_keys(bool causal, int64_t i, int64_t j0, int64_t nk) {
  return causal ? std::clamp<int64_t>(i + 1 - j0, 0, nk) : nk;
}

// ---- forward -------------------------------------------------------------------------

template <class T>
void forward_impl(const AttentionArgs& a) {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  const Tensor& q = a.q;
  const int64_t nb = q.dim() - 2;
  int64_t B = 1;
  for (int64_t d = 0; d < nb; ++d) B *= q.size(d);
  const int64_t L = q.size(nb), E = q.size(nb + 1), S = a.k.size(nb), Ev = a.v.size(nb + 1);
  if (B == 0 || L == 0) return;
  const Mat<const T> Q = mat<const T>(q, nb, B), K = mat<const T>(a.k, nb, B), V = mat<const T>(a.v, nb, B);
  T* out = static_cast<T*>(a.out.data_ptr());  // contiguous (B, L, Ev)
  T* lse = static_cast<T*>(a.lse.data_ptr());  // contiguous (B, L)
  const MaskView mv = mask_view(a.mask, nb, B);
  const T scale = static_cast<T>(a.scale);
  const bool causal = a.causal;

  const int64_t bq = std::min(kBlockQ, L), nqb = (L + bq - 1) / bq;
  const int64_t bk = std::max<int64_t>(1, std::min(kBlockK, S));
  const int64_t work = bq * std::max<int64_t>(S, 1) * (E + Ev + 8);  // per task
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(work, 1));
  sync_blas_threads();
  parallel_for(0, B * nqb, grain, [&](int64_t t0, int64_t t1) {
    T* const tile = scratch<T>(0, bq * bk);
    T* const m = scratch<T>(1, bq);
    T* const l = scratch<T>(2, bq);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / nqb, i0 = (t % nqb) * bq, mq = std::min(bq, L - i0);
      T* acc = out + (b * L + i0) * Ev;  // accumulates in the output rows
      std::fill(acc, acc + mq * Ev, T(0));
      std::fill(m, m + bq, -kInf);
      std::fill(l, l + bq, T(0));
      const int64_t kend = causal ? std::min(S, i0 + mq) : S;  // keys any row of the block sees
      for (int64_t j0 = 0; j0 < kend; j0 += bk) {
        const int64_t nk = std::min(bk, kend - j0);
        block_gemm(false, true, mq, nk, E, scale, Q.at(b, i0), Q.rs, K.at(b, j0), K.rs, T(0), tile, bk);
        for (int64_t r = 0; r < mq; ++r) {
          T* s = tile + r * bk;
          const int64_t i = i0 + r;
          const int64_t valid = valid_keys(causal, i, j0, nk);
          if (mv.kind != MaskView::None || valid < nk) mask_row(s, nk, valid, mv, b, i, j0);
          const T bmax = row_max(s, nk);  // NaNs are skipped here, caught by the sum
          const T mnew = std::max(m[r], bmax);
          if (mnew == -kInf) {  // no key of the row so far: p = 0 (NaN if the row holds a NaN)
            bool nan = false;
            for (int64_t j = 0; j < nk; ++j) nan |= s[j] != s[j];
            if (nan) l[r] = std::numeric_limits<T>::quiet_NaN();
            std::fill(s, s + nk, T(0));
            continue;
          }
          const T sum = exp_shift_sum(s, nk, mnew);
          if (m[r] != mnew) {
            const T alpha = fast_exp(m[r] - mnew);  // 0 when m was -inf
            l[r] *= alpha;
            T* ar = acc + r * Ev;
#pragma omp simd
            for (int64_t e = 0; e < Ev; ++e) ar[e] *= alpha;
            m[r] = mnew;
          }
          l[r] += sum;
        }
        block_gemm(false, false, mq, Ev, nk, T(1), tile, bk, V.at(b, j0), V.rs, T(1), acc, Ev);
      }
      for (int64_t r = 0; r < mq; ++r) {
        T* ar = acc + r * Ev;
        const T lr = l[r];
        if (lr == T(0)) {  // every key masked
          std::fill(ar, ar + Ev, T(0));
          lse[b * L + i0 + r] = kInf;
          continue;
        }
        const T inv = T(1) / lr;
#pragma omp simd
        for (int64_t e = 0; e < Ev; ++e) ar[e] *= inv;
        lse[b * L + i0 + r] = m[r] + std::log(lr);
      }
    }
  });
}

void attention_fused_kernel(const AttentionArgs& a) {
  if (a.q.dtype() == kFloat)
    forward_impl<float>(a);
  else if (a.q.dtype() == kDouble)
    forward_impl<double>(a);
  else
    BRISK_FAIL("scaled_dot_product_attention", "the fused CPU kernel takes float32 or float64, got ", a.q.dtype());
}

// ---- backward ------------------------------------------------------------------------

template <class T>
void backward_impl(const AttentionArgs& a) {
  const Tensor& q = a.q;
  const int64_t nb = q.dim() - 2;
  int64_t B = 1;
  for (int64_t d = 0; d < nb; ++d) B *= q.size(d);
  const int64_t L = q.size(nb), E = q.size(nb + 1), S = a.k.size(nb), Ev = a.v.size(nb + 1);
  T* dq = static_cast<T*>(a.grad_q.data_ptr());  // contiguous (B, L, E)
  T* dk = static_cast<T*>(a.grad_k.data_ptr());  // contiguous (B, S, E)
  T* dv = static_cast<T*>(a.grad_v.data_ptr());  // contiguous (B, S, Ev)
  if (B == 0) return;
  std::fill(dq, dq + B * L * E, T(0));
  std::fill(dk, dk + B * S * E, T(0));
  std::fill(dv, dv + B * S * Ev, T(0));
  if (L == 0 || S == 0) return;
  const Mat<const T> Q = mat<const T>(q, nb, B), K = mat<const T>(a.k, nb, B), V = mat<const T>(a.v, nb, B),
                     O = mat<const T>(a.out, nb, B), G = mat<const T>(a.grad_out, nb, B);
  const T* lse = static_cast<const T*>(a.lse.data_ptr());
  const MaskView mv = mask_view(a.mask, nb, B);
  const T scale = static_cast<T>(a.scale);
  const bool causal = a.causal;

  const int64_t bq = std::min(kBlockQB, L), bk = std::min(kBlockKB, S);
  sync_blas_threads();
  parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
    T* const p = scratch<T>(0, bq * bk);
    T* const dp = scratch<T>(1, bq * bk);
    T* const D = scratch<T>(2, L);
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t i = 0; i < L; ++i) {  // D = rowsum(dout * out)
        const T* g = G.at(b, i);
        const T* o = O.at(b, i);
        T d = 0;
#pragma omp simd reduction(+ : d)
        for (int64_t e = 0; e < Ev; ++e) d += g[e] * o[e];
        D[i] = d;
      }
      T* dqb = dq + b * L * E;
      T* dkb = dk + b * S * E;
      T* dvb = dv + b * S * Ev;
      for (int64_t i0 = 0; i0 < L; i0 += bq) {
        const int64_t mq = std::min(bq, L - i0);
        const int64_t kend = causal ? std::min(S, i0 + mq) : S;
        for (int64_t j0 = 0; j0 < kend; j0 += bk) {
          const int64_t nk = std::min(bk, kend - j0);
          block_gemm(false, true, mq, nk, E, scale, Q.at(b, i0), Q.rs, K.at(b, j0), K.rs, T(0), p, bk);
          for (int64_t r = 0; r < mq; ++r) {
            T* s = p + r * bk;
            const int64_t i = i0 + r;
            const int64_t valid = valid_keys(causal, i, j0, nk);
            if (mv.kind != MaskView::None || valid < nk) mask_row(s, nk, valid, mv, b, i, j0);
            exp_shift(s, nk, lse[b * L + i]);
          }
          // dv_j += p^T dout_i
          block_gemm(true, false, nk, Ev, mq, T(1), p, bk, G.at(b, i0), G.rs, T(1), dvb + j0 * Ev, Ev);
          // dp = dout_i v_j^T
          block_gemm(false, true, mq, nk, Ev, T(1), G.at(b, i0), G.rs, V.at(b, j0), V.rs, T(0), dp, bk);
          for (int64_t r = 0; r < mq; ++r) {
            softmax_grad_row(dp + r * bk, p + r * bk, nk, D[i0 + r]);
          }
          // dq_i += scale * ds k_j;  dk_j += scale * ds^T q_i
          block_gemm(false, false, mq, E, nk, scale, dp, bk, K.at(b, j0), K.rs, T(1), dqb + i0 * E, E);
          block_gemm(true, false, nk, E, mq, scale, dp, bk, Q.at(b, i0), Q.rs, T(1), dkb + j0 * E, E);
        }
      }
    }
  });
}

void attention_fused_backward_kernel(const AttentionArgs& a) {
  if (a.q.dtype() == kFloat)
    backward_impl<float>(a);
  else if (a.q.dtype() == kDouble)
    backward_impl<double>(a);
  else
    BRISK_FAIL("scaled_dot_product_attention", "the fused CPU kernel takes float32 or float64, got ", a.q.dtype());
}

}  // namespace

void register_attention_kernels() {
  register_kernel<OpId::attention_fused>(kCPU, attention_fused_kernel);
  register_kernel<OpId::attention_fused_backward>(kCPU, attention_fused_backward_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
