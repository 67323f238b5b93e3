// CPU kernels of the binary, ternary, comparison and copy ops.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "backend/cpu/loops.h"
#include "backend/cpu/vec_loops.h"
#include "kernels/math.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

// Note [Tiled transposed copy]
// A copy whose destination is contiguous along the iterator's inner dim while
// the source is contiguous along another dim `d` (x.t().contiguous(),
// x.permute(...).contiguous(), channels_last conversions) walks the source
// one element per cache line: row by row that is 1-2 GB/s on big matrices.
// Tiling alone helps little when the row stride is a power of two (the rows
// of a tile share one L1 set), so the plane (inner dim, d) is cut into
// kTile x kTile tiles walked as 8 x 8 blocks, each moved through registers
// (AVX2 shuffles for 4- and 8-byte types; a fixed 8 x 8 loop the compiler
// unrolls otherwise). Measured single-threaded on a 2048^2 float32 transpose:
// 1.4 GB/s row by row, 2.2 with 32 x 32 scalar tiles, 4.5 with scalar 8 x 8
// blocks, 11 with register blocks in 64 x 64 tiles. Tiles are split across
// threads together with the other dims.
constexpr int64_t kTile = 64;

/// The source dim that is contiguous (stride = element size) when the
/// destination is contiguous in dim 0 and the source is not: -1 otherwise.
int transposed_dim(const TensorIter& it, int64_t es) {
  if (it.ndim < 2 || it.strides[0][0] != es || it.strides[1][0] == es || it.shape[0] < 8) return -1;
  for (int d = 1; d < it.ndim; ++d)
    if (it.strides[1][d] == es && it.shape[d] >= 8) return d;
  return -1;
}

#ifdef __AVX2__
/// dst[r * ld + c] = src[c * ls + r] for an 8 x 8 block of 4-byte values
/// (strides in elements).
inline void transpose8x8(uint32_t* dst, int64_t ld, const uint32_t* src, int64_t ls) {
  auto in = [&](int r) { return _mm256_loadu_ps(reinterpret_cast<const float*>(src + r * ls)); };
  const __m256 r0 = in(0), r1 = in(1), r2 = in(2), r3 = in(3), r4 = in(4), r5 = in(5), r6 = in(6), r7 = in(7);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  auto out = [&](int r, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(dst + r * ld), v); };
  out(0, _mm256_permute2f128_ps(u0, u4, 0x20));
  out(1, _mm256_permute2f128_ps(u1, u5, 0x20));
  out(2, _mm256_permute2f128_ps(u2, u6, 0x20));
  out(3, _mm256_permute2f128_ps(u3, u7, 0x20));
  out(4, _mm256_permute2f128_ps(u0, u4, 0x31));
  out(5, _mm256_permute2f128_ps(u1, u5, 0x31));
  out(6, _mm256_permute2f128_ps(u2, u6, 0x31));
  out(7, _mm256_permute2f128_ps(u3, u7, 0x31));
}
/// The same for 8-byte values: four 4 x 4 blocks.
inline void transpose8x8(uint64_t* dst, int64_t ld, const uint64_t* src, int64_t ls) {
  for (int bi = 0; bi < 8; bi += 4)
    for (int bj = 0; bj < 8; bj += 4) {
      const uint64_t* s = src + bj * ls + bi;
      auto in = [&](int r) { return _mm256_loadu_pd(reinterpret_cast<const double*>(s + r * ls)); };
      const __m256d r0 = in(0), r1 = in(1), r2 = in(2), r3 = in(3);
      const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
      const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
      uint64_t* d = dst + bi * ld + bj;
      auto out = [&](int r, __m256d v) { _mm256_storeu_pd(reinterpret_cast<double*>(d + r * ld), v); };
      out(0, _mm256_permute2f128_pd(t0, t2, 0x20));
      out(1, _mm256_permute2f128_pd(t1, t3, 0x20));
      out(2, _mm256_permute2f128_pd(t0, t2, 0x31));
      out(3, _mm256_permute2f128_pd(t1, t3, 0x31));
    }
}
#endif

/// dst[r * ld + c] = src[c * ls + r] for a whole 8 x 8 block.
template <class U>
inline void transpose_block8(U* dst, int64_t ld, const U* src, int64_t ls) {
#ifdef __AVX2__
  if constexpr (sizeof(U) == 4 || sizeof(U) == 8) return transpose8x8(dst, ld, src, ls);
#endif
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) dst[a * ld + b] = src[b * ls + a];
}

template <class U>
void copy_tiles(const TensorIter& it, int d) {
  const int nd = it.ndim;
  const int64_t J = it.shape[0], I = it.shape[d];
  // Destination contiguous along j (dim 0), source along i (dim d); the
  // other strides in elements (tensor strides are whole elements).
  const int64_t di = it.strides[0][d] / int64_t(sizeof(U)), sj = it.strides[1][0] / int64_t(sizeof(U));
  const int64_t tj = (J + kTile - 1) / kTile, ti = (I + kTile - 1) / kTile;
  const int64_t outer = it.numel / (I * J);
  // work item w = ((o * ti) + tile_i) * tj + tile_j; grain: about kGrainSize elements
  parallel_for(0, outer * ti * tj, std::max<int64_t>(1, kGrainSize / (kTile * kTile)), [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t jt = w % tj, it_ = (w / tj) % ti;
      int64_t o = w / (tj * ti);
      char* dbase = it.data[0];
      const char* sbase = it.data[1];
      for (int k = 1; k < nd; ++k) {  // the other dims, in order
        if (k == d) continue;
        const int64_t idx = o % it.shape[k];
        o /= it.shape[k];
        dbase += idx * it.strides[0][k];
        sbase += idx * it.strides[1][k];
      }
      U* dst = reinterpret_cast<U*>(dbase);
      const U* src = reinterpret_cast<const U*>(sbase);
      const int64_t i0 = it_ * kTile, i1 = std::min(I, i0 + kTile);
      const int64_t j0 = jt * kTile, j1 = std::min(J, j0 + kTile);
      for (int64_t i = i0; i < i1; i += 8)
        for (int64_t j = j0; j < j1; j += 8) {
          U* out = dst + i * di + j;
          const U* in = src + j * sj + i;
          if (i + 8 <= i1 && j + 8 <= j1) {
            transpose_block8(out, di, in, sj);
            continue;
          }
          const int64_t ni = std::min<int64_t>(8, i1 - i), nj = std::min<int64_t>(8, j1 - j);
          for (int64_t a = 0; a < ni; ++a)
            for (int64_t b = 0; b < nj; ++b) std::memcpy(out + a * di + b, in + b * sj + a, sizeof(U));
        }
    }
  });
}

// Note [Copies to and from int8 and int16]
// A converting copy is one loop per (destination, source) dtype pair: 64
// for the other eight dtypes. Converting int8 and int16 through int32
// instead keeps the two from adding 36 more (a third more compile time for
// this file): a source int8 / int16 widens to int32 exactly, and any dtype
// converted to int32 and then narrowed (two's complement, as C++20 defines
// it) gives what a direct cast gives: integers wrap modulo 2^8 / 2^16 either
// way, floats truncate toward zero. (A float past the destination's range
// is undefined behaviour in C++ for a direct cast, in PyTorch's kernels as
// here; on x86 a direct cast also converts to a 32-bit integer first and
// keeps its low bits, which is what this gives.) Chunks of kNarrowChunk
// elements go through a stack buffer; each step is a contiguous or strided
// loop of one type.
constexpr int64_t kNarrowChunk = 256;

bool is_narrow_int(ScalarType t) { return t == kInt8 || t == kInt16; }

/// f(T{}) for the eight dtypes that are not int8 / int16.
template <class F>
void dispatch_wide(ScalarType t, const F& f) {
  switch (t) {
    case kBool: return f(bool{});
    case kUInt8: return f(uint8_t{});
    case kInt32: return f(int32_t{});
    case kInt64: return f(int64_t{});
    case kHalf: return f(Half{});
    case kBFloat16: return f(BFloat16{});
    case kFloat: return f(float{});
    case kDouble: return f(double{});
    default: BRISK_FAIL("copy_", "unsupported dtype ", t);
  }
}
/// f(T{}) for any dtype (int8 / int16 first, the others through dispatch_wide).
template <class F>
void dispatch_any(ScalarType t, const F& f) {
  if (t == kInt8) return f(int8_t{});
  if (t == kInt16) return f(int16_t{});
  dispatch_wide(t, f);
}

/// buf[i] = int32(src[i * stride]) for n elements of type T.
template <class T>
void load_as_int32(const char* src, int64_t stride, int64_t n, int32_t* __restrict buf) {
  auto cvt = [](T v) { return static_cast<int32_t>(static_cast<opmath_t<T>>(v)); };
  if (stride == int64_t(sizeof(T))) {
    const T* s = reinterpret_cast<const T*>(src);
    for (int64_t i = 0; i < n; ++i) buf[i] = cvt(s[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, src + i * stride, sizeof(T));
      buf[i] = cvt(v);
    }
  }
}
/// dst[i * stride] = T(buf[i]) for n elements of type T.
template <class T>
void store_from_int32(char* dst, int64_t stride, int64_t n, const int32_t* __restrict buf) {
  if (stride == int64_t(sizeof(T))) {
    T* d = reinterpret_cast<T*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(buf[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T v = static_cast<T>(buf[i]);
      std::memcpy(dst + i * stride, &v, sizeof(T));
    }
  }
}

/// A converting copy with an int8 or int16 side (Note [Copies to and from
/// int8 and int16]).
void copy_narrow(TensorIter& it, ScalarType out, ScalarType in) {
  run_parallel(it, [&](char** p, const int64_t* s, int64_t n) {
    int32_t buf[kNarrowChunk];
    for (int64_t i0 = 0; i0 < n; i0 += kNarrowChunk) {
      const int64_t m = std::min(kNarrowChunk, n - i0);
      dispatch_any(in, [&](auto tag) { load_as_int32<decltype(tag)>(p[1] + i0 * s[1], s[1], m, buf); });
      dispatch_any(out, [&](auto tag) { store_from_int32<decltype(tag)>(p[0] + i0 * s[0], s[0], m, buf); });
    }
  });
}

// Note [Streaming converting copies]
// A float32 <-> bfloat16 copy of a large contiguous tensor (autocast's
// weight casts in the forward, the weight gradients' casts back to float32
// in the backward) is bound by memory, and an ordinary store first reads
// each destination line into the cache (read for ownership): the float32
// -> bfloat16 cast moves 4+2+2 bytes per element, the bfloat16 -> float32
// one 2+4+4. Non-temporal stores write whole lines without reading them
// (4+2 and 2+4 bytes): 1.5x on this path, measured in docs/performance.md.
// They also bypass the cache, so they are used only where the destination
// is kStreamBytes or larger (half the 32 MB last-level cache of the machines
// measured): a smaller result is better left in the cache for the op that
// reads it next. The conversion is BFloat16::from_float's (round to nearest
// even, any NaN to 0x7fc0), bit for bit, vector or scalar.
constexpr int64_t kStreamBytes = int64_t(16) << 20;

#if defined(__AVX512F__) && defined(__AVX512BW__)
constexpr int64_t kStreamAlign = 64;
/// 16 floats to 16 bfloat16s, as BFloat16::from_float.
inline __m256i f32_to_bf16_16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i abs = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f800000));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7fc0));
  return _mm512_cvtepi32_epi16(r);
}
/// One aligned line of output: 32 bfloat16s from x[0, 32).
inline void stream_line_f32_bf16(const float* x, uint16_t* o) {
  const __m256i lo = f32_to_bf16_16(_mm512_loadu_ps(x));
  const __m256i hi = f32_to_bf16_16(_mm512_loadu_ps(x + 16));
  _mm512_stream_si512(reinterpret_cast<__m512i*>(o), _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
}
/// One aligned line of output: 16 floats from x[0, 16).
inline void stream_line_bf16_f32(const uint16_t* x, float* o) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
  _mm512_stream_si512(reinterpret_cast<__m512i*>(o), _mm512_slli_epi32(w, 16));
}
#elif defined(__AVX2__)
constexpr int64_t kStreamAlign = 32;
/// 8 floats to 8 bfloat16s in the low 16 bits of each 32-bit lane.
inline __m256i f32_to_bf16_8(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  return _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0), nan);
}
inline void stream_line_f32_bf16(const float* x, uint16_t* o) {
  // packus interleaves the 128-bit halves; the permute puts them back in order.
  const __m256i p = _mm256_packus_epi32(f32_to_bf16_8(_mm256_loadu_ps(x)), f32_to_bf16_8(_mm256_loadu_ps(x + 8)));
  _mm256_stream_si256(reinterpret_cast<__m256i*>(o), _mm256_permute4x64_epi64(p, 0xD8));
}
inline void stream_line_bf16_f32(const uint16_t* x, float* o) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  _mm256_stream_si256(reinterpret_cast<__m256i*>(o), _mm256_slli_epi32(w, 16));
}
#endif

#ifdef __AVX2__
/// o[0, n) = x[0, n) converted: scalar up to the first aligned line of o,
/// then whole lines with streaming stores, then a scalar tail.
template <class O, class I>
void stream_convert(const I* x, O* o, int64_t n) {
  constexpr int64_t kLine = kStreamAlign / int64_t(sizeof(O));
  auto cvt = [](I v) {
    if constexpr (std::is_same_v<O, BFloat16>) return BFloat16(static_cast<float>(v));
    else return static_cast<float>(v);
  };
  int64_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(o + i) % kStreamAlign != 0; ++i) o[i] = cvt(x[i]);
  for (; i + kLine <= n; i += kLine) {
    if constexpr (std::is_same_v<O, BFloat16>)
      stream_line_f32_bf16(x + i, reinterpret_cast<uint16_t*>(o + i));
    else
      stream_line_bf16_f32(reinterpret_cast<const uint16_t*>(x + i), o + i);
  }
  for (; i < n; ++i) o[i] = cvt(x[i]);
  _mm_sfence();  // streamed stores are weakly ordered: drain them before the threads join
}

/// The streaming path of Note [Streaming converting copies]; false where it
/// does not apply.
bool try_stream_copy(const TensorIter& it) {
  const ScalarType out = it.dtypes[0], in = it.dtypes[1];
  const bool f2b = out == kBFloat16 && in == kFloat, b2f = out == kFloat && in == kBFloat16;
  if (!(f2b || b2f) || it.ndim != 1 || !it.is_contiguous() || it.strides[1][0] == 0) return false;
  if (it.numel * static_cast<int64_t>(element_size(out)) < kStreamBytes) return false;
  // Each thread's part aligns itself (a scalar head up to its first line).
  parallel_for(0, it.numel, int64_t(1) << 16, [&](int64_t b, int64_t e) {
    if (f2b)
      stream_convert(reinterpret_cast<const float*>(it.data[1]) + b, reinterpret_cast<BFloat16*>(it.data[0]) + b, e - b);
    else
      stream_convert(reinterpret_cast<const BFloat16*>(it.data[1]) + b, reinterpret_cast<float*>(it.data[0]) + b, e - b);
  });
  return true;
}
#else
bool try_stream_copy(const TensorIter&) { return false; }
#endif

// Note [Half conversions in hardware]
// float32 <-> float16 copies of contiguous runs go through the F16C
// instructions (8 lanes a step) where the variant has them, 3-4x the
// branchless conversions of Note [Branchless half conversions] (brisk/
// half.h), with the same bits: both round to nearest even, and the lanes
// holding a NaN, which vcvtps2ph would give part of its payload, take
// Half::from_float's sign | 0x7e00 (one mask test per step). vcvtph2ps
// returns a NaN quieted with its payload, as Half::to_float does.
#ifdef __F16C__
void f32_to_f16_run(const float* x, Half* o, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    if (__builtin_expect(_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0, 0))
      for (int64_t k = i; k < i + 8; ++k) o[k] = Half(x[k]);
  }
  for (; i < n; ++i) o[i] = Half(x[i]);
}
void f16_to_f32_run(const Half* x, float* o, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) o[i] = static_cast<float>(x[i]);
}
/// The F16C path of Note [Half conversions in hardware]; false where it does not apply.
bool try_half_copy(TensorIter& it) {
  const ScalarType out = it.dtypes[0], in = it.dtypes[1];
  const bool f2h = out == kHalf && in == kFloat, h2f = out == kFloat && in == kHalf;
  if (!f2h && !h2f) return false;
  run_parallel(it, [&](char** p, const int64_t* s, int64_t n) {
    if (f2h) {
      if (s[0] == 2 && s[1] == 4) return f32_to_f16_run(reinterpret_cast<const float*>(p[1]), reinterpret_cast<Half*>(p[0]), n);
      for (int64_t i = 0; i < n; ++i) {
        const Half h(load<float>(p[1] + i * s[1]));
        std::memcpy(p[0] + i * s[0], &h, sizeof(h));
      }
    } else {
      if (s[0] == 4 && s[1] == 2) return f16_to_f32_run(reinterpret_cast<const Half*>(p[1]), reinterpret_cast<float*>(p[0]), n);
      for (int64_t i = 0; i < n; ++i) {
        const float f = static_cast<float>(load<Half>(p[1] + i * s[1]));
        std::memcpy(p[0] + i * s[0], &f, sizeof(f));
      }
    }
  });
  return true;
}
#else
bool try_half_copy(TensorIter&) { return false; }
#endif

void copy_kernel(TensorIter& it, const KernelArgs&) {
  const ScalarType out = it.dtypes[0], in = it.dtypes[1];
  if (out == in) {
    const int64_t es = static_cast<int64_t>(element_size(out));
    if (const int d = transposed_dim(it, es); d > 0) {
      switch (es) {
        case 1: return copy_tiles<uint8_t>(it, d);
        case 2: return copy_tiles<uint16_t>(it, d);
        case 4: return copy_tiles<uint32_t>(it, d);
        case 8: return copy_tiles<uint64_t>(it, d);
        default: break;
      }
    }
    run_parallel(it, [&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == es && s[1] == es) {
        std::memcpy(p[0], p[1], static_cast<size_t>(n * es));
        return;
      }
      // Strided: a typed loop per element size (a memcpy call per element
      // ran at under 1 GB/s).
      auto strided = [&](auto tag) {
        using U = decltype(tag);
        char* d = p[0];
        const char* src = p[1];
        for (int64_t i = 0; i < n; ++i) {
          U v;
          std::memcpy(&v, src + i * s[1], sizeof(U));
          std::memcpy(d + i * s[0], &v, sizeof(U));
        }
      };
      switch (es) {
        case 1: strided(uint8_t{}); break;
        case 2: strided(uint16_t{}); break;
        case 4: strided(uint32_t{}); break;
        case 8: strided(uint64_t{}); break;
        default:
          for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], p[1] + i * s[1], static_cast<size_t>(es));
      }
    });
    return;
  }
  if (is_narrow_int(out) || is_narrow_int(in)) return copy_narrow(it, out, in);
  if (try_stream_copy(it)) return;
  if (try_half_copy(it)) return;
  dispatch_wide(out, [&](auto otag) {
    using O = decltype(otag);
    dispatch_wide(in, [&](auto itag) { elementwise<O, decltype(itag)>(it, [](auto v) { return v; }); });
  });
}

void fill_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "fill_", [&] {
    const scalar_t v = a.s0.to<scalar_t>();
    elementwise<scalar_t>(it, [v]() { return v; });
  });
}

void add_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "add", [&] {
    using M = opmath_t<scalar_t>;
    if constexpr (std::is_same_v<scalar_t, bool>) {
      // x + alpha * y in bool: alpha=False leaves x (torch.add(b, c, alpha=False)).
      if (a.s0.to<bool>())
        binary_kernel<bool>(it, [](bool x, bool y) { return x || y; });
      else
        binary_kernel<bool>(it, [](bool x, bool) { return x; });
    } else {
      // PyTorch's CPU kernel reads alpha in the tensor's dtype: a 16-bit
      // add rounds alpha to 16 bits (3.3 -> 3.30078 in float16), then forms
      // x + alpha * y in float and rounds once, as its vector loop does (its
      // scalar loop, for a tail of < 32 elements, rounds alpha * y too).
      const M alpha = static_cast<M>(a.s0.to<scalar_t>());
      if (alpha == M(1))
        binary_kernel<scalar_t>(it, [](M x, M y) { return x + y; });
      else
        binary_kernel<scalar_t>(it, [alpha](M x, M y) { return x + alpha * y; });
    }
  });
}

void mul_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "mul", [&] {
    using M = opmath_t<scalar_t>;
    if constexpr (std::is_same_v<scalar_t, bool>)
      binary_kernel<bool>(it, [](bool x, bool y) { return x && y; });
    else
      binary_kernel<scalar_t>(it, [](M x, M y) { return x * y; });
  });
}

// mode: 0 true division, 1 trunc, 2 floor.
void div_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "div", [&] {
    using M = opmath_t<scalar_t>;
    if (a.mode == 1)
      binary_kernel<scalar_t>(it, [](M x, M y) { return math::trunc_div<scalar_t>(x, y); });
    else if (a.mode == 2)
      binary_kernel<scalar_t>(it, [](M x, M y) { return math::floor_div(x, y); });
    else
      binary_kernel<scalar_t>(it, [](M x, M y) { return x / y; });
  });
}

template <class F>
void numeric_binary(TensorIter& it, const char* op, F make) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], op, [&] { binary_kernel<scalar_t>(it, make.template operator()<opmath_t<scalar_t>>()); });
}

// Floats through Sleef's fmod (exact, vectorized; vec::fmod sends the lanes
// it leaves NaN to libm), 18x faster than libm's per element; integers
// per element.
void remainder_kernel(TensorIter& it, const KernelArgs&) {
  if (is_floating_point(it.dtypes[0]))
    return BRISK_DISPATCH_FLOAT(it.dtypes[0], "remainder", [&] {
      vec_binary_kernel<scalar_t>(it, [](auto x, auto y) { return vec::remainder(x, y); });
    });
  numeric_binary(it, "remainder", []<class M>() { return [](M x, M y) { return math::remainder(x, y); }; });
}
void fmod_kernel(TensorIter& it, const KernelArgs&) {
  if (is_floating_point(it.dtypes[0]))
    return BRISK_DISPATCH_FLOAT(it.dtypes[0], "fmod", [&] {
      vec_binary_kernel<scalar_t>(it, [](auto x, auto y) { return vec::fmod(x, y); });
    });
  numeric_binary(it, "fmod", []<class M>() { return [](M x, M y) { return math::fmod(x, y); }; });
}
// pow and atan2 live with the vectorized math in unary.cpp.
void minimum_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "minimum", [&] {
    using M = opmath_t<scalar_t>;
    binary_kernel<scalar_t>(it, [](M x, M y) { return math::minimum(x, y); });
  });
}
void maximum_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "maximum", [&] {
    using M = opmath_t<scalar_t>;
    binary_kernel<scalar_t>(it, [](M x, M y) { return math::maximum(x, y); });
  });
}
void compare_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(it.dtypes[1], "compare", [&] {
    using M = opmath_t<scalar_t>;
    switch (static_cast<CompareMode>(a.mode)) {
      case CompareMode::Eq: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x == y; });
      case CompareMode::Ne: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x != y; });
      case CompareMode::Lt: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x < y; });
      case CompareMode::Le: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x <= y; });
      case CompareMode::Gt: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x > y; });
      case CompareMode::Ge: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x >= y; });
    }
  });
}

void logical_kernel(TensorIter& it, const KernelArgs& a) {
  if (it.dtypes[0] == kBool && it.dtypes[1] == kBool && it.dtypes[2] == kBool) {
    // bool masks as bytes (0 or 1): one vectorized byte op
    switch (static_cast<LogicalMode>(a.mode)) {
      case LogicalMode::And: return elementwise<uint8_t, uint8_t, uint8_t>(it, [](int x, int y) { return x & y; });
      case LogicalMode::Or: return elementwise<uint8_t, uint8_t, uint8_t>(it, [](int x, int y) { return x | y; });
      case LogicalMode::Xor: return elementwise<uint8_t, uint8_t, uint8_t>(it, [](int x, int y) { return x ^ y; });
    }
  }
  BRISK_DISPATCH_ALL(it.dtypes[1], "logical", [&] {
    using M = opmath_t<scalar_t>;
    switch (static_cast<LogicalMode>(a.mode)) {
      // & and |, not && and ||: no branch per element (a short-circuit made
      // logical_and of two bool masks 100x slower than PyTorch's)
      case LogicalMode::And:
        return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return bool((x != M(0)) & (y != M(0))); });
      case LogicalMode::Or:
        return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return bool((x != M(0)) | (y != M(0))); });
      case LogicalMode::Xor:
        return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return (x != M(0)) != (y != M(0)); });
    }
  });
}

void bitwise_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_INTEGRAL(it.dtypes[0], "bitwise", [&] {
    using T = scalar_t;
    switch (static_cast<BitwiseMode>(a.mode)) {
      case BitwiseMode::And: return binary_kernel<T>(it, [](T x, T y) { return T(x & y); });
      case BitwiseMode::Or: return binary_kernel<T>(it, [](T x, T y) { return T(x | y); });
      case BitwiseMode::Xor: return binary_kernel<T>(it, [](T x, T y) { return T(x ^ y); });
      case BitwiseMode::LeftShift: return binary_kernel<T>(it, [](T x, T y) { return math::shift_left(x, y); });
      case BitwiseMode::RightShift: return binary_kernel<T>(it, [](T x, T y) { return math::shift_right(x, y); });
    }
  });
}

void lerp_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "lerp", [&] {
    using M = opmath_t<scalar_t>;
    if (a.has_s0) {  // scalar weight, kept in opmath precision
      const M w = a.s0.to<M>();
      binary_kernel<scalar_t>(it, [w](M x, M y) { return math::lerp(x, y, w); });
    } else {
      ternary_kernel<scalar_t>(it, [](M x, M y, M w) { return math::lerp(x, y, w); });
    }
  });
}
void addcmul_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "addcmul", [&] {
    using M = opmath_t<scalar_t>;
    const M v = a.s0.to<M>();
    ternary_kernel<scalar_t>(it, [v](M x, M y, M z) { return x + v * y * z; });
  });
}
void addcdiv_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "addcdiv", [&] {
    using M = opmath_t<scalar_t>;
    const M v = a.s0.to<M>();
    // (v * y) / z, as PyTorch's CPU kernel groups it (0 * y / z is 0 where
    // y / z overflows; PyTorch's CUDA kernel computes v * (y / z)).
    ternary_kernel<scalar_t>(it, [v](M x, M y, M z) { return x + v * y / z; });
  });
}

void clamp_kernel(TensorIter& it, const KernelArgs& a) {
  const ScalarType dt = it.dtypes[0];
  if (is_floating_point(dt)) {
    const double lo_d = a.has_s0 ? a.s0.to<double>() : 0.0, hi_d = a.has_s1 ? a.s1.to<double>() : 0.0;
    if (!std::isnan(lo_d) && !std::isnan(hi_d)) {
      // Vector selects: x < lo gives lo, x > hi gives hi, else x itself (a
      // NaN x fails both tests and stays, -0.0 at a bound 0 keeps its sign),
      // math::maximum/minimum's values without their NaN-bound case.
      return BRISK_DISPATCH_FLOAT(dt, "clamp", [&] {
        using M = opmath_t<scalar_t>;
        using V = vec::Vec<M>;
        const V lo = vec::splat<V>(double(M(lo_d))), hi = vec::splat<V>(double(M(hi_d)));
        if (a.has_s0 && a.has_s1)
          vec_unary_kernel<scalar_t>(it, [=](V x) { const V r = vec::select(x < lo, lo, x); return vec::select(r > hi, hi, r); });
        else if (a.has_s0)
          vec_unary_kernel<scalar_t>(it, [=](V x) { return vec::select(x < lo, lo, x); });
        else
          vec_unary_kernel<scalar_t>(it, [=](V x) { return vec::select(x > hi, hi, x); });
      });
    }
  }
  BRISK_DISPATCH_NUMERIC(dt, "clamp", [&] {
    using M = opmath_t<scalar_t>;
    const M lo = a.has_s0 ? a.s0.to<M>() : M(0), hi = a.has_s1 ? a.s1.to<M>() : M(0);
    // nan in the input or in a bound gives nan, as in torch
    if (a.has_s0 && a.has_s1)
      unary_kernel<scalar_t>(it, [lo, hi](M x) { return math::minimum(math::maximum(x, lo), hi); });
    else if (a.has_s0)
      unary_kernel<scalar_t>(it, [lo](M x) { return math::maximum(x, lo); });
    else
      unary_kernel<scalar_t>(it, [hi](M x) { return math::minimum(x, hi); });
  });
}
void clamp_tensor_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "clamp", [&] {
    using M = opmath_t<scalar_t>;
    ternary_kernel<scalar_t>(it, [](M x, M lo, M hi) { return math::minimum(math::maximum(x, lo), hi); });
  });
}

// Note [Branchless where]
// where's operands are copied bit for bit (no conversion: the front end
// gives them the result dtype), so a row is a blend of bit patterns under a
// mask made from the condition byte. A `c ? x : y` loop compiled to a branch
// per element: with a random mask that mispredicts half the time (about
// 11 ns per element, 150x relu's time, measured on 2^20 float32); the blend
// vectorizes. A tensor operand or a broadcast scalar (stride 0) on either
// side; other layouts take the generic loop.
template <class T, bool AScalar, bool BScalar>
void where_row(T* __restrict o, const uint8_t* __restrict c, const T* __restrict a, const T* __restrict b,
               int64_t n) {
  using U = std::conditional_t<sizeof(T) == 1, uint8_t,
                               std::conditional_t<sizeof(T) == 2, uint16_t,
                                                  std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  const U* ua = reinterpret_cast<const U*>(a);
  const U* ub = reinterpret_cast<const U*>(b);
  U* uo = reinterpret_cast<U*>(o);
  for (int64_t i = 0; i < n; ++i) {
    const U m = static_cast<U>(U(0) - static_cast<U>(c[i] != 0));
    const U x = ua[AScalar ? 0 : i], y = ub[BScalar ? 0 : i];
    uo[i] = static_cast<U>((x & m) | (y & static_cast<U>(~m)));
  }
}

void where_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "where", [&] {
    using M = opmath_t<scalar_t>;
    constexpr int64_t kT = sizeof(scalar_t);
    static_assert(kT == 1 || kT == 2 || kT == 4 || kT == 8);
    run_parallel(it, [&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == kT && s[1] == 1 && (s[2] == kT || s[2] == 0) && (s[3] == kT || s[3] == 0)) {
        auto* o = reinterpret_cast<scalar_t*>(p[0]);
        const auto* c = reinterpret_cast<const uint8_t*>(p[1]);
        const auto* a = reinterpret_cast<const scalar_t*>(p[2]);
        const auto* b = reinterpret_cast<const scalar_t*>(p[3]);
        if (s[2] != 0 && s[3] != 0) return where_row<scalar_t, false, false>(o, c, a, b, n);
        if (s[2] == 0 && s[3] != 0) return where_row<scalar_t, true, false>(o, c, a, b, n);
        if (s[2] != 0) return where_row<scalar_t, false, true>(o, c, a, b, n);
        return where_row<scalar_t, true, true>(o, c, a, b, n);
      }
      elementwise_inner<scalar_t, bool, scalar_t, scalar_t>(
          p, s, n, [](bool c, M x, M y) { return c ? x : y; }, std::index_sequence_for<bool, scalar_t, scalar_t>{});
    });
  });
}

// grad where self > threshold (or self is nan), else 0: ReLU's backward in one pass.
void threshold_backward_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "threshold_backward", [&] {
    using M = opmath_t<scalar_t>;
    const M th = a.s0.to<M>();
    binary_kernel<scalar_t>(it, [th](M g, M x) { return x <= th ? M(0) : g; });
  });
}

// isclose on floats (math::isclose_float: PyTorch's roundings); the front
// end casts integer inputs to the default float dtype first.
void isclose_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "isclose", [&] {
    using M = opmath_t<scalar_t>;
    const M rtol = a.s0.to<M>(), atol = a.s1.to<M>();
    const bool equal_nan = a.mode != 0;
    elementwise<bool, scalar_t, scalar_t>(
        it, [=](M x, M y) { return math::isclose_float<scalar_t>(x, y, rtol, atol, equal_nan); });
  });
}

}  // namespace

void register_elementwise_kernels() {
  register_kernel<OpId::copy>(kCPU, copy_kernel);
  register_kernel<OpId::fill>(kCPU, fill_kernel);
  register_kernel<OpId::add>(kCPU, add_kernel);
  register_kernel<OpId::mul>(kCPU, mul_kernel);
  register_kernel<OpId::div>(kCPU, div_kernel);
  register_kernel<OpId::remainder>(kCPU, remainder_kernel);
  register_kernel<OpId::fmod>(kCPU, fmod_kernel);
  register_kernel<OpId::minimum>(kCPU, minimum_kernel);
  register_kernel<OpId::maximum>(kCPU, maximum_kernel);
  register_kernel<OpId::compare>(kCPU, compare_kernel);
  register_kernel<OpId::logical>(kCPU, logical_kernel);
  register_kernel<OpId::bitwise>(kCPU, bitwise_kernel);
  register_kernel<OpId::lerp>(kCPU, lerp_kernel);
  register_kernel<OpId::addcmul>(kCPU, addcmul_kernel);
  register_kernel<OpId::addcdiv>(kCPU, addcdiv_kernel);
  register_kernel<OpId::clamp>(kCPU, clamp_kernel);
  register_kernel<OpId::clamp_tensor>(kCPU, clamp_tensor_kernel);
  register_kernel<OpId::where>(kCPU, where_kernel);
  register_kernel<OpId::isclose>(kCPU, isclose_kernel);
  register_kernel<OpId::threshold_backward>(kCPU, threshold_backward_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
