// GEMM on the CPU: out[b] = beta * out[b] + alpha * a[b] @ b[b] for 3-D
// tensors a (B, m, k), b (B, k, n), out (B, m, n).
//
// Note [GEMM libraries]
// float32 goes to oneDNN's dnnl_sgemm when the product is big enough
// (m*n*k >= kDnnlMinWork) and to OpenBLAS below that, where oneDNN's per-call
// overhead dominates; float64 always goes to OpenBLAS (dnnl only does float).
// Measured with bench/gemm_probe.cpp on the 2-core AVX-512 (Zen 4) dev box,
// GFLOP/s oneDNN 2.6 vs OpenBLAS 0.3.21 (which picks its Cooperlake AVX-512
// kernels there): 1024^3 108 vs 99 and 2048^3 108 vs 101 on one thread,
// 217 vs 177 and 214 vs 197 on two; on two threads oneDNN is 1.4-2.4x
// faster for 128^3..512^3 and skinny shapes (32x1024x1024, 1024x64x1024)
// and 5x for m or n = 1. OpenBLAS wins below ~64^3 (call overhead: 8^3
// takes 0.3 us in oneDNN, 0.05 us in OpenBLAS).
// Threads: see Note [BLAS threads].
//
// Layouts are passed through BLAS's transpose flags: a matrix whose rows or
// columns are contiguous is read in place (lda = its other stride); only a
// matrix with neither (e.g. an expanded or doubly-strided view) is copied.
// bfloat16 runs on oneDNN's bf16 matmul where the CPU has AVX512_BF16 (Note
// [bfloat16 GEMM on oneDNN]); float16, and bfloat16 elsewhere, are converted
// to float32 in batch chunks, multiplied with sgemm (float32 accumulation)
// and converted back. Integers use a blocked loop that accumulates in 64
// bits (see Note [Integer GEMM]).
#include <cblas.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef BRISK_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include "backend/cpu/onednn.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/parallel.h"

extern "C" int openblas_get_num_threads(void);

namespace brisk {
namespace cpu {

GemmStats& gemm_stats() {
  static GemmStats s;
  return s;
}

#ifdef BRISK_HAVE_DNNL
dnnl::engine& onednn_engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}
dnnl::stream& onednn_stream() {
  thread_local dnnl::stream s(onednn_engine());
  return s;
}
#endif

namespace {

/// Products (m*n*k multiply-adds) from which float32 goes to oneDNN.
constexpr int64_t kDnnlMinWork = 64 * 64 * 64;
/// Products from which one OpenBLAS GEMM is split into panels across threads.
constexpr int64_t kSplitMinWork = 128 * 128 * 64;
/// Per-matrix products up to which a batch is always split across threads.
constexpr int64_t kBatchParallelMaxWork = 64 * 64 * 64;
/// Elements of float32 scratch per chunk when converting 16-bit floats.
constexpr int64_t kConvertChunkElems = int64_t(1) << 22;

/// How BLAS reads one matrix in place: row-major storage of op(M), with
/// `trans` when the stored matrix is the transpose (column-contiguous view).
struct Layout {
  bool trans;
  int64_t ld;
};

/// The in-place layout of the (rows, cols) matrices of a 3-D tensor, if any.
/// A dim of size 1 may have any stride, so it never disqualifies a layout.
std::optional<Layout> blas_layout(const Tensor& t) {
  const int64_t rows = t.size(1), cols = t.size(2), rs = t.stride(1), cs = t.stride(2);
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<int64_t>(1, cols))) {
    const int64_t ld = rows == 1 ? std::max<int64_t>(1, cols) : rs;
    if (ld <= INT_MAX) return Layout{false, ld};
  }
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<int64_t>(1, rows))) {
    const int64_t ld = cols == 1 ? std::max<int64_t>(1, rows) : cs;
    if (ld <= INT_MAX) return Layout{true, ld};
  }
  return std::nullopt;
}

// Note [BLAS threads]
// All GEMM threading runs on brisk's OpenMP pool, sized by set_num_threads.
// oneDNN (built on the same OpenMP runtime) reads the calling thread's
// omp_get_max_threads(), which sync_threads() keeps equal to brisk's count,
// and runs serially inside a parallel region. OpenBLAS (the pthread build)
// is held to one thread: its own pool would spin against the OpenMP workers
// on the same cores. A big OpenBLAS product is instead cut into row or
// column panels, one single-threaded GEMM per OpenMP thread.
void sync_threads() {
  if (in_parallel_region()) return;
#ifdef _OPENMP
  const int nt = get_num_threads();
  if (omp_get_max_threads() != nt) omp_set_num_threads(nt);
#endif
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

CBLAS_TRANSPOSE cblas_trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

// One single-threaded OpenBLAS call: row-major C (m, n) = alpha * op(A) (m, k)
// @ op(B) (k, n) + beta * C, with k >= 1.
void openblas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), int(m), int(n), int(k), alpha, A, int(lda), B,
              int(ldb), beta, C, int(ldc));
}
void openblas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* A, int64_t lda,
                   const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  // OpenBLAS's dgemm does not route vector shapes to gemv (it is 5-10x slower
  // there); do it here.
  if (n == 1 || m == 1) {
    // y (len) = alpha * op(M) x + beta * y, y zeroed first so beta = 0 never reads C.
    const bool col = n == 1;
    const int64_t len = col ? m : n, incy = col ? ldc : 1;
    if (beta == 0.0)
      for (int64_t i = 0; i < len; ++i) C[i * incy] = 0.0;
    if (col) {
      // C (m, 1) = op(A) (m, k) @ op(B) (k, 1); x = B's k entries.
      const int64_t incx = tb ? 1 : ldb;
      cblas_dgemv(CblasRowMajor, cblas_trans(ta), int(ta ? k : m), int(ta ? m : k), alpha, A, int(lda), B,
                  int(incx), beta, C, int(incy));
    } else {
      // C (1, n) = op(A) (1, k) @ op(B) (k, n)  <=>  C^T = op(B)^T @ op(A)^T.
      const int64_t incx = ta ? lda : 1;
      cblas_dgemv(CblasRowMajor, cblas_trans(!tb), int(tb ? n : k), int(tb ? k : n), alpha, B, int(ldb), A,
                  int(incx), beta, C, int(incy));
    }
    return;
  }
  cblas_dgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), int(m), int(n), int(k), alpha, A, int(lda), B,
              int(ldb), beta, C, int(ldc));
}

/// Cuts row-major C (m, n) = op(A) @ op(B) along its longer side (rows on a
/// tie) into `parts` panels of a multiple of 16 rows/columns and calls
/// f(rows, cols, A', B', C') with each panel's sub-product, in parallel.
template <class T, class F>
void for_each_panel(bool ta, bool tb, int64_t m, int64_t n, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
                    int64_t ldc, int parts, const F& f) {
  const bool rows = m >= n;
  const int64_t len = rows ? m : n;
  const int64_t panel = std::max<int64_t>(16, (len / parts + 15) / 16 * 16);
  const int64_t panels = (len + panel - 1) / panel;
  parallel_for(0, panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t s = p * panel, l = std::min(panel, len - s);
      if (rows)  // rows s.. of op(A) and C
        f(l, n, ta ? A + s : A + s * lda, B, C + s * ldc);
      else  // columns s.. of op(B) and C
        f(m, l, A, tb ? B + s * ldb : B + s, C + s);
    }
  });
}

/// OpenBLAS GEMM over brisk's threads: C is cut along its longer side into
/// one panel per thread (multiples of 16 rows/columns).
template <class T>
void openblas_gemm_threaded(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* A, int64_t lda,
                            const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  const int nt = in_parallel_region() ? 1 : get_num_threads();
  if (nt <= 1 || m * n * k < kSplitMinWork) {
    openblas_gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  for_each_panel(ta, tb, m, n, A, lda, B, ldb, C, ldc, nt,
                 [&](int64_t pm, int64_t pn, const T* pa, const T* pb, T* pc) {
                   openblas_gemm(ta, tb, pm, pn, k, alpha, pa, lda, pb, ldb, beta, pc, ldc);
                 });
}

// Products this small cost less than a library call's overhead: a plain
// loop (C (m, n) = alpha * op(A) @ op(B) + beta * C, accumulated in T).
constexpr int64_t kTinyGemmWork = 512;  // 8 x 8 x 8
template <class T>
void tiny_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* A, int64_t lda, const T* B,
               int64_t ldb, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += (ta ? A[p * lda + i] : A[i * lda + p]) * (tb ? B[j * ldb + p] : B[p * ldb + j]);
      T& c = C[i * ldc + j];
      c = beta == T(0) ? alpha * acc : alpha * acc + beta * c;  // beta 0 ignores nan in C, as BLAS does
    }
}

// Note [GEMM panels per thread]
// On two threads a big float32 product runs as one single-threaded oneDNN
// GEMM per thread on its own panel of C (cut along the longer side), not as
// one oneDNN call threaded inside. oneDNN's decomposition shares packed
// blocks between its threads; independent panels only repeat the packing of
// the operand both threads read. Measured on the 2-core dev VM (20-call
// rounds, median of 7, GFLOP/s, oneDNN-threaded vs panels): 1024^3 201 vs
// 212 (NN), 201 vs 206 (NT), 197 vs 208 (TN), 512^3 196 vs 206,
// 1024x1024x64 193 vs 214, skinny A @ B^T 128x4096x4096 103 vs 173; in
// quiet phases of the machine both reach 216-220 on 1024^3. Within a panel
// oneDNN is used even for skinny A @ B^T (the skinny_nt rule is for a lone
// single-threaded call): OpenBLAS panels were slower there (128x4096x4096
// 160, 128x256x784 156 vs 193) except at 64 rows and long k (64x10000x5000:
// 141 vs 116). Products under kPanelMinWork keep oneDNN's own threading:
// they gain little in a loop of one shape, and the demo's MLP epoch (all
// its GEMMs about 26M multiply-adds) ran 7% slower with panels.
constexpr int64_t kPanelMinWork = int64_t(1) << 26;  // 64 x 1024 x 1024

#ifdef BRISK_HAVE_DNNL
// Said once: the results stay right (OpenBLAS computes them), only slower.
// Seen when the PyPI libtorch is loaded before libdnnl: its own oneDNN's
// std::call_once helpers capture libdnnl's (docs/porting.md).
void warn_dnnl_sgemm_failed(dnnl_status_t st) {
  static std::once_flag once;
  std::call_once(once, [st] {
    std::fprintf(stderr,
                 "brisk: oneDNN's sgemm failed (status %d); float32 GEMMs run on OpenBLAS instead, correct but "
                 "slower. If this process also loads libtorch, link libdnnl before it (docs/porting.md).\n",
                 static_cast<int>(st));
  });
}
#endif

/// How one float32 GEMM call runs: threaded over brisk's pool (by oneDNN,
/// or as OpenBLAS panels), alone on the calling thread, or as one panel of
/// a product split across threads (Note [GEMM panels per thread]).
enum class GemmRun { Pool, Serial, Panel };

void sgemm_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc, GemmRun run) {
#ifdef BRISK_HAVE_DNNL
  // Single-threaded A @ B^T (a Linear layer's forward) with few rows and a
  // big weight streams the weight from memory: OpenBLAS is as fast or faster
  // there (GFLOP/s, oneDNN / OpenBLAS, one thread: 64x1000x5000 52 / 71 on
  // the AMD EPYC family 25 of the 2026-11-22 figures; 92 / 96 and
  // 64x5000x10000 83 / 87 on a family 26 with OPENBLAS_CORETYPE=Haswell).
  // With a weight that stays in cache oneDNN is far ahead (family 26:
  // 128x384x1536 198 / 118, 128x1536x384 222 / 118, 8x384x1536 124 / 58,
  // 64x2048x2048 161 / 109): an exception for every m <= 128 halved BERT's
  // speed at batch 1.
  const bool skinny_nt = !ta && tb && m <= 64 && n * k >= 5'000'000 && run == GemmRun::Serial;
  if (m * n * k >= kDnnlMinWork && !skinny_nt) {
    const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    if (st == dnnl_success) return;
    warn_dnnl_sgemm_failed(st);
  }
#endif
  if (run == GemmRun::Pool)
    openblas_gemm_threaded<float>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  else
    openblas_gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Row-major C (m, n) = alpha * op(A) (m, k) @ op(B) (k, n) + beta * C, k >= 1.
void gemm_rowmajor(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (m * n * k <= kTinyGemmWork) return tiny_gemm<float>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  const int nt = in_parallel_region() ? 1 : get_num_threads();
  if (nt == 1) return sgemm_call(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, GemmRun::Serial);
  if (m * n * k < kPanelMinWork || std::max(m, n) < 32 * nt)
    return sgemm_call(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, GemmRun::Pool);
  for_each_panel(ta, tb, m, n, A, lda, B, ldb, C, ldc, nt,
                 [&](int64_t pm, int64_t pn, const float* pa, const float* pb, float* pc) {
                   sgemm_call(ta, tb, pm, pn, k, alpha, pa, lda, pb, ldb, beta, pc, ldc, GemmRun::Panel);
                 });
}
void gemm_rowmajor(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* A, int64_t lda,
                   const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (m * n * k <= kTinyGemmWork) return tiny_gemm<double>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  openblas_gemm_threaded<double>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// float32/float64 batched GEMM with inputs and output read/written in place
/// when their layouts allow.
template <class T>
void blas_gemm(const Tensor& out, const Tensor& a_in, const Tensor& b_in, const Scalar& alpha_s,
               const Scalar& beta_s) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a_in.size(2);
  const T alpha = alpha_s.to<T>(), beta = beta_s.to<T>();
  Tensor a = a_in, b = b_in;
  std::optional<Layout> la = blas_layout(a), lb = blas_layout(b), lc = blas_layout(out);
  if (!la) a = a.contiguous(), la = blas_layout(a);
  if (!lb) b = b.contiguous(), lb = blas_layout(b);
  // An output BLAS cannot write in place gets a contiguous scratch (holding
  // out's values when beta reads them) that is copied back at the end.
  Tensor c = out;
  if (!lc) {
    c = beta == T(0) ? empty(out.sizes(), out.options()) : out.contiguous();
    if (c.is_same(out)) c = out.clone(kContiguous);
    lc = blas_layout(c);
  }
  BRISK_ASSERT(la && lb && lc);
  const int64_t sa = a.stride(0), sb = b.stride(0), sc = c.stride(0);
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* pc = static_cast<T*>(c.data_ptr());

  auto one = [&](int64_t i) {
    const T* A = pa + i * sa;
    const T* B = pb + i * sb;
    T* C = pc + i * sc;
    if (!lc->trans) {
      gemm_rowmajor(la->trans, lb->trans, m, n, k, alpha, A, la->ld, B, lb->ld, beta, C, lc->ld);
    } else {
      // Column-major C: compute C^T (n, m) = op(B)^T @ op(A)^T.
      gemm_rowmajor(!lb->trans, !la->trans, n, m, k, alpha, B, lb->ld, A, la->ld, beta, C, lc->ld);
    }
  };
  // Small products, or enough of them to keep every thread busy, are spread
  // over the batch (each GEMM on one thread); otherwise each GEMM is threaded.
  sync_threads();
  const int64_t work = m * n * k;
  if (batch > 1 && (work <= kBatchParallelMaxWork || batch >= 4 * get_num_threads())) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work, 1));
    parallel_for(0, batch, grain, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
  if (!c.is_same(out)) Tensor(out).copy_(c);
}

#ifdef BRISK_HAVE_DNNL
// Note [bfloat16 GEMM on oneDNN]
// On CPUs with AVX512_BF16 (Zen 4, Cooper Lake, Sapphire Rapids) a bfloat16
// product runs on a oneDNN matmul primitive, which multiplies bf16 pairs
// with vdpbf16ps and accumulates in float32, as PyTorch's CPU bf16 matmul
// does through mkldnn: 1024^3 takes 210 GFLOP/s on one Zen 4 core, against
// 107 for converting to float32 and running sgemm (bench/: the "bfloat16
// matmul" rows). Each product of two bf16 values is exact in float32, so
// the two paths differ only in the order of the float32 sums.
// Primitives are cached by everything that shapes them (batch dims, sizes,
// the 9 strides, alpha, beta, thread count: see Note [oneDNN primitive
// cache] in backend/cpu/conv_onednn.cpp); their scratchpads come from brisk's
// allocator on each call, so one primitive can run on several threads at
// once. Layouts oneDNN would only run on its reference loop (neither rows
// nor columns contiguous) and CPUs without a bf16 kernel are cached as
// "unsupported" and take the converting path.
namespace {

constexpr size_t kMatmulKeyLen = 16;
using MatmulKey = std::array<int64_t, kMatmulKeyLen>;
struct MatmulEntry {
  bool ok = false;
  dnnl::matmul prim;
  size_t scratchpad_bytes = 0;
};
constexpr size_t kMatmulCacheMax = 256;  // entries; the cache starts over when full

/// dims and strides of one operand: a batch of 1 (stride 0 = broadcast, or a
/// single matrix) is described as dim 1, which oneDNN broadcasts.
dnnl::memory::desc bf16_desc(int64_t batch, int64_t rows, int64_t cols, int64_t s0, int64_t s1, int64_t s2) {
  const bool one = batch == 1 || s0 == 0;
  const dnnl::memory::dims dims{one ? 1 : batch, rows, cols};
  const dnnl::memory::dims strides{one ? rows * cols : s0, s1, s2};
  return dnnl::memory::desc(dims, dnnl::memory::data_type::bf16, strides);
}

}  // namespace

/// out (B, m, n) = alpha * a @ b + beta * out in bfloat16 on oneDNN; false
/// when oneDNN has no fast kernel for it (nothing written then).
bool onednn_bf16_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha_s,
                      const Scalar& beta_s) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  const float alpha = alpha_s.to<float>(), beta = beta_s.to<float>();
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return int64_t(u);
  };
  const int threads = in_parallel_region() ? 1 : get_num_threads();
  const int64_t a0 = a.size(0) == 1 ? 0 : a.stride(0), b0 = b.size(0) == 1 ? 0 : b.stride(0);
  const MatmulKey key{batch,       m,           n,           k,           a0,          a.stride(1),
                      a.stride(2), b0,          b.stride(1), b.stride(2), out.stride(0), out.stride(1),
                      out.stride(2), bits(alpha), bits(beta),  threads};
  sync_threads();  // oneDNN reads the thread count when a primitive is created and when it runs
  static std::mutex mu;
  static auto* cache = new std::unordered_map<MatmulKey, MatmulEntry, PrimitiveKeyHash>();
  MatmulEntry entry;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache->find(key); it != cache->end()) entry = it->second, found = true;
  }
  if (!found) {
    try {
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      if (beta != 0.0f) {
        dnnl::post_ops po;
        po.append_sum(beta);
        attr.set_post_ops(po);
      }
      const auto src = bf16_desc(batch, m, k, a0, a.stride(1), a.stride(2));
      const auto wei = bf16_desc(batch, k, n, b0, b.stride(1), b.stride(2));
      const auto dst = bf16_desc(batch, m, n, out.stride(0), out.stride(1), out.stride(2));
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), attr, onednn_engine());
      const std::string impl = pd.impl_info_str();
      entry.ok = impl.find("bf16") != std::string::npos || impl.find("amx") != std::string::npos;
      if (entry.ok) {
        entry.prim = dnnl::matmul(pd);
        entry.scratchpad_bytes = pd.scratchpad_desc().get_size();
      }
    } catch (const dnnl::error&) {
      entry.ok = false;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (cache->size() >= kMatmulCacheMax) cache->clear();
    cache->emplace(key, entry);
  }
  if (!entry.ok) return false;
  auto& eng = onednn_engine();
  auto mem = [&](const Tensor& t, int64_t s0, int64_t rows, int64_t cols) {
    return dnnl::memory(bf16_desc(t.size(0), rows, cols, s0, t.stride(1), t.stride(2)), eng,
                        const_cast<void*>(t.data_ptr()));
  };
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, mem(a, a0, m, k)},
                                               {DNNL_ARG_WEIGHTS, mem(b, b0, k, n)},
                                               {DNNL_ARG_DST, mem(out, out.stride(0), m, n)}};
  Tensor scratch;
  if (entry.scratchpad_bytes > 0) {
    const auto bytes = static_cast<int64_t>(entry.scratchpad_bytes);
    scratch = empty({bytes}, kUInt8);
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(dnnl::memory::desc({bytes}, dnnl::memory::data_type::u8,
                                                                      dnnl::memory::dims{1}),
                                                   eng, scratch.data_ptr()));
  }
  auto& stream = onednn_stream();
  entry.prim.execute(stream, args);
  stream.wait();
  ++gemm_stats().bf16_onednn;
  return true;
}
#endif

/// float16/bfloat16: chunks of the batch converted to float32, sgemm, converted back.
void reduced_float_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                        const Scalar& beta) {
#ifdef BRISK_HAVE_DNNL
  if (out.dtype() == kBFloat16 && onednn_bf16_gemm(out, a, b, alpha, beta)) return;
#endif
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  const int64_t per = std::max<int64_t>(1, m * k + k * n + m * n);
  const int64_t chunk = std::max<int64_t>(1, kConvertChunkElems / per);
  const bool read_out = beta.to_double() != 0.0;
  for (int64_t b0 = 0; b0 < batch; b0 += chunk) {
    const int64_t len = std::min(chunk, batch - b0);
    Tensor oc = out.narrow(0, b0, len);
    Tensor af = a.narrow(0, b0, len).to(kFloat), bf = b.narrow(0, b0, len).to(kFloat);
    Tensor cf = read_out ? oc.to(kFloat) : empty(oc.sizes(), kFloat);
    blas_gemm<float>(cf, af, bf, alpha, beta);
    oc.copy_(cf);
  }
}

// Note [Integer GEMM]
// No BLAS does integers, so this is a plain blocked loop: a panel of B
// (kc, nc) is packed as uint64 and stays in L2 while groups of 4 rows of A
// stream past it, accumulating into a (4, nc) block that stays in L1.
// Arithmetic is unsigned 64-bit, which wraps; adding partial sums in T's
// width gives exactly the low bits of the full 64-bit sum, as PyTorch's
// integer matmul does. The micro-kernel is cloned per instruction set by the
// compiler (vpmullq on AVX-512), since this file is compiled only once.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define BRISK_INT_GEMM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BRISK_INT_GEMM_CLONES
#endif

constexpr int64_t kIntKc = 256, kIntNc = 128, kIntRows = 4;

/// acc (4, nc) = a (4, kc; row stride lda) @ b (kc, nc); all uint64, contiguous.
BRISK_INT_GEMM_CLONES
void int_micro_kernel(const uint64_t* __restrict a, int64_t lda, const uint64_t* __restrict b, int64_t kc,
                      int64_t nc, uint64_t* __restrict acc) {
  uint64_t* __restrict c0 = acc;
  uint64_t* __restrict c1 = acc + nc;
  uint64_t* __restrict c2 = acc + 2 * nc;
  uint64_t* __restrict c3 = acc + 3 * nc;
  for (int64_t j = 0; j < 4 * nc; ++j) acc[j] = 0;
  for (int64_t p = 0; p < kc; ++p) {
    const uint64_t* __restrict br = b + p * nc;
    const uint64_t a0 = a[p], a1 = a[lda + p], a2 = a[2 * lda + p], a3 = a[3 * lda + p];
    for (int64_t j = 0; j < nc; ++j) {
      const uint64_t bv = br[j];
      c0[j] += a0 * bv;
      c1[j] += a1 * bv;
      c2[j] += a2 * bv;
      c3[j] += a3 * bv;
    }
  }
}

template <class T>
inline uint64_t widen(T v) {
  return static_cast<uint64_t>(static_cast<int64_t>(v));
}

template <class T>
void int_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha_s, const Scalar& beta_s) {
  const int64_t m = out.size(1), n = out.size(2), k = a.size(2);
  const int64_t as0 = a.stride(0), as1 = a.stride(1), as2 = a.stride(2);
  const int64_t bs0 = b.stride(0), bs1 = b.stride(1), bs2 = b.stride(2);
  const int64_t os0 = out.stride(0), os1 = out.stride(1), os2 = out.stride(2);
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* po = static_cast<T*>(out.data_ptr());
  const uint64_t alpha = static_cast<uint64_t>(alpha_s.to<int64_t>());
  const uint64_t beta = static_cast<uint64_t>(beta_s.to<int64_t>());
  // Work items are groups of 4 rows of one batch entry: (batch * ceil(m / 4)).
  const int64_t groups = (m + kIntRows - 1) / kIntRows;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, kIntRows * n * k));
  parallel_for(0, out.size(0) * groups, grain, [&](int64_t g0, int64_t g1) {
    std::vector<uint64_t> bpack(static_cast<size_t>(kIntKc * kIntNc)), apack(static_cast<size_t>(kIntRows * kIntKc));
    std::vector<uint64_t> acc(static_cast<size_t>(kIntRows * kIntNc));
    for (int64_t g = g0; g < g1;) {
      const int64_t bi = g / groups, ge = std::min(g1, (bi + 1) * groups);  // groups [g, ge) of batch bi
      const T* A = pa + bi * as0;
      const T* B = pb + bi * bs0;
      T* C = po + bi * os0;
      const int64_t i_begin = (g - bi * groups) * kIntRows, i_end = std::min(m, (ge - bi * groups) * kIntRows);
      for (int64_t i = i_begin; i < i_end; ++i)  // out = beta * out, never reading out when beta = 0
        for (int64_t j = 0; j < n; ++j) {
          T& o = C[i * os1 + j * os2];
          o = beta == 0 ? T(0) : static_cast<T>(beta * widen(o));
        }
      for (int64_t j0 = 0; j0 < n; j0 += kIntNc) {
        const int64_t nc = std::min(kIntNc, n - j0);
        for (int64_t p0 = 0; p0 < k; p0 += kIntKc) {
          const int64_t kc = std::min(kIntKc, k - p0);
          for (int64_t p = 0; p < kc; ++p)  // B[p0:p0+kc, j0:j0+nc] -> bpack (kc, nc)
            for (int64_t j = 0; j < nc; ++j) bpack[p * nc + j] = widen(B[(p0 + p) * bs1 + (j0 + j) * bs2]);
          for (int64_t i = i_begin; i < i_end; i += kIntRows) {
            const int64_t rows = std::min(kIntRows, i_end - i);
            for (int64_t r = 0; r < kIntRows; ++r)  // A[i:i+4, p0:p0+kc] -> apack (4, kc), zero rows past m
              for (int64_t p = 0; p < kc; ++p)
                apack[r * kc + p] = r < rows ? widen(A[(i + r) * as1 + (p0 + p) * as2]) : 0;
            int_micro_kernel(apack.data(), kc, bpack.data(), kc, nc, acc.data());
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t j = 0; j < nc; ++j) {
                T& o = C[(i + r) * os1 + (j0 + j) * os2];
                o = static_cast<T>(widen(o) + alpha * acc[r * nc + j]);
              }
          }
        }
      }
      g = ge;
    }
  });
}

// out: (B, m, n); a: (B, m, k); b: (B, k, n). The front end has checked
// shapes and dtypes; out does not overlap a or b.
void gemm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha_in,
                 const Scalar& beta_in) {
  BRISK_ASSERT(out.dim() == 3 && a.dim() == 3 && b.dim() == 3);
  // Integer products truncate float scalars (PyTorch: addmm(int, beta=0.5) uses beta = 0).
  const bool is_float = is_floating_point(out.dtype());
  const Scalar alpha = is_float ? alpha_in : Scalar(alpha_in.to<int64_t>());
  const Scalar beta = is_float ? beta_in : Scalar(beta_in.to<int64_t>());
  const int64_t m = out.size(1), n = out.size(2), k = a.size(2);
  if (out.numel() == 0) return;
  if (k == 0) {  // an empty sum: out = beta * out (never reading out when beta = 0)
    Tensor o = out;
    if (beta.to_double() == 0.0)
      o.zero_();
    else if (beta.to_double() != 1.0)
      o.mul_(beta);
    return;
  }
  BRISK_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "matmul", "matrix dimensions (", m, ", ", n, ", ", k,
              ") exceed what BLAS supports (", INT_MAX, ")");
  switch (out.dtype()) {
    case kFloat: return blas_gemm<float>(out, a, b, alpha, beta);
    case kDouble: return blas_gemm<double>(out, a, b, alpha, beta);
    case kHalf:
    case kBFloat16: return reduced_float_gemm(out, a, b, alpha, beta);
    case kUInt8: return int_gemm<uint8_t>(out, a, b, alpha, beta);
    case kInt8: return int_gemm<int8_t>(out, a, b, alpha, beta);
    case kInt16: return int_gemm<int16_t>(out, a, b, alpha, beta);
    case kInt32: return int_gemm<int32_t>(out, a, b, alpha, beta);
    case kInt64: return int_gemm<int64_t>(out, a, b, alpha, beta);
    default: BRISK_FAIL("matmul", "not supported for dtype ", out.dtype());
  }
}

}  // namespace

/// Fills the CPU GEMM slot (called once from register_cpu_kernels).
void register_blas_kernels() {
  openblas_set_num_threads(1);  // Note [BLAS threads]
  register_kernel<OpId::gemm>(kCPU, gemm_kernel);
}

}  // namespace cpu
}  // namespace brisk
