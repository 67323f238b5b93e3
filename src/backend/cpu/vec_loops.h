// Elementwise loops over SIMD vectors (vec_math.h): the kernel is a lambda
// over vectors of the op's math type (float for float, half and bfloat16;
// double for double), called on whole vectors only.
//
// Contiguous float/double runs are read and written in place, a vector at a
// time; the last partial vector, strided runs and 16-bit types go through a
// small buffer in the math type (converted on the way in and out). Every
// element, wherever it sits, is computed by the same vector code, so a
// result never depends on its position, the thread split or the layout.
#pragma once
#include <algorithm>
#include <type_traits>

#include "backend/cpu/loops.h"
#include "backend/cpu/vec_math.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {

namespace detail_vec {
constexpr int kChunk = 256;  // elements per buffered block (a multiple of every lane count)

// Runs f over buf[0, n) (n <= kChunk), padded to whole vectors.
template <class T, class F>
inline void vec_apply_buffer(T* buf, int64_t n, const F& f) {
  constexpr int N = vec::kLanes<T>;
  const int64_t padded = (n + N - 1) / N * N;
  for (int64_t i = n; i < padded; ++i) buf[i] = T(0);
  for (int64_t i = 0; i < padded; i += N) vec::storeu(buf + i, f(vec::loadu(buf + i)));
}
template <class T, class F>
inline void vec_apply_buffer2(T* a, const T* b, int64_t n, const F& f) {
  constexpr int N = vec::kLanes<T>;
  const int64_t padded = (n + N - 1) / N * N;
  for (int64_t i = 0; i < padded; i += N) vec::storeu(a + i, f(vec::loadu(a + i), vec::loadu(b + i)));
}
}  // namespace detail_vec

/// out[i] = f(in[i]) with f over vectors of opmath_t<S>; S is the storage
/// type of both the input and the output (a float dtype).
template <class S, class F>
inline void vec_unary_kernel(TensorIter& it, const F& f) {
  using T = opmath_t<S>;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  constexpr int N = vec::kLanes<T>;
  using detail_vec::kChunk;
  run_parallel(it, [&](char** p, const int64_t* s, int64_t n) {
    if constexpr (std::is_same_v<S, T>) {
      if (s[0] == int64_t(sizeof(T)) && s[1] == int64_t(sizeof(T))) {
        T* o = reinterpret_cast<T*>(p[0]);
        const T* x = reinterpret_cast<const T*>(p[1]);
        const int64_t whole = n / N * N;
        prefetched_spans<1>(whole, o, sizeof(T), {x}, {int64_t(sizeof(T))}, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; i += N) vec::storeu(o + i, f(vec::loadu(x + i)));
        });
        const int64_t i = whole;
        if (i < n) {
          alignas(64) T buf[N];
          std::copy(x + i, x + n, buf);
          detail_vec::vec_apply_buffer(buf, n - i, f);
          std::copy(buf, buf + (n - i), o + i);
        }
        return;
      }
    }
    alignas(64) T buf[kChunk];
    if constexpr (!std::is_same_v<S, T>) {
      if (s[0] == int64_t(sizeof(S)) && s[1] == int64_t(sizeof(S))) {
        // contiguous 16-bit: the conversions as plain loops (vectorized)
        S* o = reinterpret_cast<S*>(p[0]);
        const S* x = reinterpret_cast<const S*>(p[1]);
        for (int64_t b = 0; b < n; b += kChunk) {
          const int64_t m = std::min<int64_t>(kChunk, n - b);
          for (int64_t i = 0; i < m; ++i) buf[i] = static_cast<T>(x[b + i]);
          detail_vec::vec_apply_buffer(buf, m, f);
          for (int64_t i = 0; i < m; ++i) o[b + i] = static_cast<S>(buf[i]);
        }
        return;
      }
    }
    for (int64_t b = 0; b < n; b += kChunk) {
      const int64_t m = std::min<int64_t>(kChunk, n - b);
      const char* in = p[1] + b * s[1];
      for (int64_t i = 0; i < m; ++i) buf[i] = load<S>(in + i * s[1]);
      detail_vec::vec_apply_buffer(buf, m, f);
      char* out = p[0] + b * s[0];
      for (int64_t i = 0; i < m; ++i) {
        const S r = static_cast<S>(buf[i]);
        std::memcpy(out + i * s[0], &r, sizeof(S));
      }
    }
  });
}

/// out[i] = f(a[i], b[i]) with f over vectors of opmath_t<S>; the three
/// operands of storage type S. A broadcast scalar b (stride 0, the tensor **
/// scalar case) is splat once.
template <class S, class F>
inline void vec_binary_kernel(TensorIter& it, const F& f) {
  using T = opmath_t<S>;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  constexpr int N = vec::kLanes<T>;
  using V = vec::Vec<T>;
  using detail_vec::kChunk;
  run_parallel(it, [&](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t kS = sizeof(S);
    if constexpr (std::is_same_v<S, T>) {
      if (s[0] == kS && s[1] == kS && (s[2] == kS || s[2] == 0)) {
        T* o = reinterpret_cast<T*>(p[0]);
        const T* a = reinterpret_cast<const T*>(p[1]);
        const T* b = reinterpret_cast<const T*>(p[2]);
        const int64_t whole = n / N * N;
        if (s[2] == 0) {
          const V bv = vec::splat<V>(b[0]);
          prefetched_spans<1>(whole, o, sizeof(T), {a}, {int64_t(sizeof(T))}, [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; i += N) vec::storeu(o + i, f(vec::loadu(a + i), bv));
          });
        } else {
          prefetched_spans<2>(whole, o, sizeof(T), {a, b}, {int64_t(sizeof(T)), int64_t(sizeof(T))},
                              [&](int64_t i0, int64_t i1) {
                                for (int64_t i = i0; i < i1; i += N) vec::storeu(o + i, f(vec::loadu(a + i), vec::loadu(b + i)));
                              });
        }
        const int64_t i = whole;
        if (i < n) {
          alignas(64) T ba[N] = {}, bb[N] = {};
          for (int64_t k = i; k < n; ++k) ba[k - i] = a[k], bb[k - i] = b[s[2] ? k : 0];
          detail_vec::vec_apply_buffer2(ba, bb, n - i, f);
          std::copy(ba, ba + (n - i), o + i);
        }
        return;
      }
    }
    alignas(64) T ba[kChunk], bb[kChunk];
    if constexpr (!std::is_same_v<S, T>) {
      if (s[0] == kS && s[1] == kS && (s[2] == kS || s[2] == 0)) {
        // contiguous 16-bit: the conversions as plain loops (vectorized)
        S* o = reinterpret_cast<S*>(p[0]);
        const S* a = reinterpret_cast<const S*>(p[1]);
        const S* c = reinterpret_cast<const S*>(p[2]);
        for (int64_t b = 0; b < n; b += kChunk) {
          const int64_t m = std::min<int64_t>(kChunk, n - b);
          for (int64_t i = 0; i < m; ++i) ba[i] = static_cast<T>(a[b + i]);
          if (s[2] == 0)
            std::fill(bb, bb + m, static_cast<T>(c[0]));
          else
            for (int64_t i = 0; i < m; ++i) bb[i] = static_cast<T>(c[b + i]);
          for (int64_t i = m; i < (m + N - 1) / N * N; ++i) ba[i] = bb[i] = T(0);
          detail_vec::vec_apply_buffer2(ba, bb, m, f);
          for (int64_t i = 0; i < m; ++i) o[b + i] = static_cast<S>(ba[i]);
        }
        return;
      }
    }
    for (int64_t b = 0; b < n; b += kChunk) {
      const int64_t m = std::min<int64_t>(kChunk, n - b);
      const char* pa = p[1] + b * s[1];
      const char* pb = p[2] + b * s[2];
      for (int64_t i = 0; i < m; ++i) ba[i] = load<S>(pa + i * s[1]), bb[i] = load<S>(pb + i * s[2]);
      for (int64_t i = m; i < (m + N - 1) / N * N; ++i) ba[i] = bb[i] = T(0);
      detail_vec::vec_apply_buffer2(ba, bb, m, f);
      char* out = p[0] + b * s[0];
      for (int64_t i = 0; i < m; ++i) {
        const S r = static_cast<S>(ba[i]);
        std::memcpy(out + i * s[0], &r, sizeof(S));
      }
    }
  });
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
