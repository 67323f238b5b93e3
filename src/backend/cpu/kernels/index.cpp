// CPU kernels of the indexing ops: advanced indexing (index / index_put),
// index_select, gather, scatter, scatter_add, index_add and nonzero.
//
// Note [Index kernels validate first]
// Front ends check shapes and dtypes; the index *values* are checked here,
// in a read-only pass that runs before anything is written (a parallel
// region cannot throw, so the pass records the first bad position and the
// error is raised after it). Copies move raw bits, dispatched on the element
// size only; sums dispatch on the dtype.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/tensor_create.h"

#ifndef BRISK_CPU_ISA
#error "index.cpp is compiled once per ISA"
#endif

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

constexpr int kMaxWalkDims = 64;

/// A row-major walk over an n-d shape for K operands with element strides.
/// Dims are stored outermost first; the last dim is the innermost.
template <int K>
struct Strided {
  int nd = 0;
  int64_t sizes[kMaxWalkDims];
  int64_t strides[K][kMaxWalkDims];

  void push(int64_t size, const int64_t (&st)[K]) {
    BRISK_CHECK(nd < kMaxWalkDims, "index", "tensors with more than ", kMaxWalkDims, " dims are not supported");
    sizes[nd] = size;
    for (int k = 0; k < K; ++k) strides[k][nd] = st[k];
    ++nd;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < nd; ++d) n *= sizes[d];
    return n;
  }
  int64_t inner_stride(int k) const { return nd ? strides[k][nd - 1] : 0; }
  /// Drops size-1 dims and merges dims that are contiguous for every operand
  /// (the walk order of the elements is unchanged).
  void coalesce() {
    if (numel() == 0) return;
    int out = 0;
    for (int d = 0; d < nd; ++d) {
      if (sizes[d] == 1) continue;
      if (out > 0) {
        bool merge = true;
        for (int k = 0; k < K; ++k) merge &= strides[k][out - 1] == strides[k][d] * sizes[d];
        if (merge) {
          sizes[out - 1] *= sizes[d];
          for (int k = 0; k < K; ++k) strides[k][out - 1] = strides[k][d];
          continue;
        }
      }
      sizes[out] = sizes[d];
      for (int k = 0; k < K; ++k) strides[k][out] = strides[k][d];
      ++out;
    }
    nd = out;
  }
};

/// Calls f(offs, n) for runs of n elements along the innermost dim covering
/// the linear positions [begin, end); offs[k] is operand k's element offset
/// of the run's first element.
template <int K, class F>
void walk(const Strided<K>& w, int64_t begin, int64_t end, const F& f) {
  int64_t offs[K] = {};
  if (begin >= end) return;
  if (w.nd == 0) {
    f(offs, int64_t(1));
    return;
  }
  const int nd = w.nd;
  int64_t idx[kMaxWalkDims];
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % w.sizes[d];
    rem /= w.sizes[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    for (int k = 0; k < K; ++k) {
      int64_t o = 0;
      for (int d = 0; d < nd; ++d) o += idx[d] * w.strides[k][d];
      offs[k] = o;
    }
    const int64_t n = std::min(w.sizes[nd - 1] - idx[nd - 1], end - pos);
    f(offs, n);
    pos += n;
    idx[nd - 1] += n;
    for (int d = nd - 1; d > 0 && idx[d] >= w.sizes[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

/// Lowers `best` to `v` (first bad position seen by any thread).
void atomic_min(std::atomic<int64_t>& best, int64_t v) {
  int64_t cur = best.load(std::memory_order_relaxed);
  while (v < cur && !best.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

[[noreturn]] void throw_out_of_bounds(const char* op, int64_t value, int64_t dim, int64_t size) {
  BRISK_FAIL(op, "index ", value, " is out of bounds for dimension ", dim, " with size ", size);
}

/// Raw-bits element type of a dtype's size (copies never convert).
#define BRISK_DISPATCH_BITS(dtype, op, ...)                   \
  [&] {                                                       \
    switch (element_size(dtype)) {                            \
      case 1: { using bits_t = uint8_t; return __VA_ARGS__(); }  \
      case 2: { using bits_t = uint16_t; return __VA_ARGS__(); } \
      case 4: { using bits_t = uint32_t; return __VA_ARGS__(); } \
      case 8: { using bits_t = uint64_t; return __VA_ARGS__(); } \
      default: BRISK_FAIL(op, "unsupported dtype ", dtype);   \
    }                                                         \
  }()

/// The bits of `s` converted to `dtype` (sizeof(T) == element_size(dtype)).
template <class T>
T scalar_bits(const Scalar& s, ScalarType dtype) {
  return BRISK_DISPATCH_ALL(dtype, "scatter", [&]() -> T {
    if constexpr (sizeof(scalar_t) != sizeof(T)) {
      return T(0);
    } else {
      const scalar_t v = s.to<scalar_t>();
      T b;
      std::memcpy(&b, &v, sizeof(T));
      return b;
    }
  });
}

// ---- advanced indexing: index / index_put / index_select -----------------------

// Note [Advanced index kernel layout]
// The front end applies the basic indices as views and hands over:
//   src/self: the view being indexed; `dims` is a bitmask of its indexed dims;
//   index:    (k, N) int64, row j indexes the j-th set bit of `dims`;
//   rows:     (N, rest...) where rest are the non-indexed dims of the view in
//             order (the gathered result, or the values to put).
// Element n of the result is the block src[i_0[n], ..., i_{k-1}[n]] over rest.
struct AdvancedPlan {
  int k = 0;
  int64_t n = 0;
  int64_t dim[kMaxWalkDims], size[kMaxWalkDims], stride[kMaxWalkDims];
  const int64_t* idx = nullptr;
  int64_t idx_s0 = 0, idx_s1 = 0;
  bool wrap = false;
  Strided<2> rest;  // operand 0: rows (dims 1..), operand 1: the indexed view

  /// Element offset of row n in the view (index values already validated).
  int64_t offset(int64_t row) const {
    int64_t off = 0;
    for (int j = 0; j < k; ++j) {
      int64_t v = idx[j * idx_s0 + row * idx_s1];
      if (v < 0) v += size[j];
      off += v * stride[j];
    }
    return off;
  }
  bool valid(int j, int64_t v) const { return v < size[j] && v >= (wrap ? -size[j] : 0); }
  /// Read-only check of every index value; throws naming the first bad one.
  void validate(const char* op) const {
    std::atomic<int64_t> bad{n};
    parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) {
      for (int j = 0; j < k; ++j) {
        const int64_t hi = size[j], lo = wrap ? -size[j] : 0, s = idx_s1;
        const int64_t* q = idx + j * idx_s0;
        bool any = false;  // branch-free scan, then locate
        for (int64_t r = begin; r < end; ++r) any |= (q[r * s] < lo) | (q[r * s] >= hi);
        if (!any) continue;
        for (int64_t r = begin; r < end; ++r)
          if (!valid(j, q[r * s])) {
            atomic_min(bad, r);
            break;
          }
      }
    });
    const int64_t r = bad.load();
    if (r == n) return;
    for (int j = 0; j < k; ++j) {
      const int64_t v = idx[j * idx_s0 + r * idx_s1];
      if (!valid(j, v)) throw_out_of_bounds(op, v, dim[j], size[j]);
    }
  }
};

AdvancedPlan make_plan(const Tensor& rows, int64_t dims, const Tensor& index, const Tensor& view, bool wrap) {
  AdvancedPlan p;
  BRISK_ASSERT(index.dtype() == kInt64 && index.dim() == 2);
  p.k = static_cast<int>(index.size(0));
  p.n = index.size(1);
  p.idx = static_cast<const int64_t*>(index.data_ptr());
  p.idx_s0 = index.stride(0);
  p.idx_s1 = index.stride(1);
  p.wrap = wrap;
  int j = 0, r = 1;
  for (int64_t d = 0; d < view.dim(); ++d) {
    if (d < 64 && ((dims >> d) & 1)) {
      p.dim[j] = d;
      p.size[j] = view.size(d);
      p.stride[j] = view.stride(d);
      ++j;
    } else {
      p.rest.push(view.size(d), {rows.stride(r), view.stride(d)});
      ++r;
    }
  }
  BRISK_ASSERT(j == p.k && r == rows.dim());
  p.rest.coalesce();
  return p;
}

/// Moves element `r` of the rows to / from its place in the view.
template <class T, bool kToView>
inline void move_element(T* x, T* y) {
  if constexpr (kToView)
    *y = *x;
  else
    *x = *y;
}

/// For each row r: copies the rest block between rows[r] and the view at the
/// row's offset (kToView: rows -> view, else view -> rows). Index values must
/// have been validated.
template <class T, bool kToView>
void advanced_copy(const AdvancedPlan& p, T* rows, int64_t rows_s0, T* view) {
  const Strided<2>& w = p.rest;
  const int64_t rn = w.numel(), n = p.n;
  if (rn == 0 || n == 0) return;
  const int64_t* idx = p.idx;
  const int64_t is0 = p.idx_s0, is1 = p.idx_s1;
  const int k = p.k;
  if (w.nd == 0) {
    // One element per row: x[idx], x[mask], masked_select. Everything the
    // loop reads lives in locals so the loads of different rows overlap.
    parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) {
      if (k == 1) {
        const int64_t size = p.size[0], stride = p.stride[0];
        for (int64_t r = begin; r < end; ++r) {
          int64_t v = idx[r * is1];
          v += v < 0 ? size : 0;
          move_element<T, kToView>(rows + r * rows_s0, view + v * stride);
        }
      } else {
        int64_t size[kMaxWalkDims], stride[kMaxWalkDims];
        std::copy(p.size, p.size + k, size);
        std::copy(p.stride, p.stride + k, stride);
        for (int64_t r = begin; r < end; ++r) {
          int64_t off = 0;
          for (int j = 0; j < k; ++j) {
            int64_t v = idx[j * is0 + r * is1];
            v += v < 0 ? size[j] : 0;
            off += v * stride[j];
          }
          move_element<T, kToView>(rows + r * rows_s0, view + off);
        }
      }
    });
    return;
  }
  const int64_t a = w.inner_stride(0), b = w.inner_stride(1);
  const bool dense = w.nd == 1 && a == 1 && b == 1;
  parallel_for(0, n, std::max<int64_t>(1, kGrainSize / rn), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      T* x = rows + r * rows_s0;
      T* y = view + p.offset(r);
      if (dense) {
        if constexpr (kToView)
          std::memcpy(y, x, static_cast<size_t>(rn) * sizeof(T));
        else
          std::memcpy(x, y, static_cast<size_t>(rn) * sizeof(T));
      } else {
        walk(w, 0, rn, [&](const int64_t* o, int64_t m) {
          T* xs = x + o[0];
          T* ys = y + o[1];
          for (int64_t i = 0; i < m; ++i) move_element<T, kToView>(xs + i * a, ys + i * b);
        });
      }
    }
  });
}

// out: (N, rest...) <- src[index] ; mode & 1: negative indices wrap.
void index_kernel_named(const char* op, const Tensor& out, int64_t dims, const Tensor& index, const Tensor& src,
                        bool wrap) {
  AdvancedPlan p = make_plan(out, dims, index, src, wrap);
  p.validate(op);
  BRISK_DISPATCH_BITS(src.dtype(), op, [&] {
    advanced_copy<bits_t, false>(p, static_cast<bits_t*>(out.data_ptr()), out.dim() ? out.stride(0) : 0,
                                 static_cast<bits_t*>(src.data_ptr()));
  });
}

void index_kernel(const Tensor& out, int64_t dims, const Tensor& index, const Tensor& src, const KernelArgs& a) {
  index_kernel_named("index", out, dims, index, src, a.mode & 1);
}

/// For each row r in order: view at the row's offset += rows[r] (rest block),
/// so duplicate indices accumulate deterministically. Threads split the rest
/// block; each walks all the rows over its part. Index values must have been
/// validated.
template <class T>
void advanced_accumulate(const AdvancedPlan& p, const T* rows, int64_t rows_s0, T* view) {
  using M = opmath_t<T>;
  const Strided<2>& w = p.rest;
  const int64_t rn = w.numel(), n = p.n;
  if (rn == 0 || n == 0) return;
  auto add = [](const T* x, T* y) {
    if constexpr (std::is_same_v<T, bool>)
      *y = *y || *x;
    else
      *y = static_cast<T>(static_cast<M>(*y) + static_cast<M>(*x));
  };
  if (w.nd == 0) {  // one element per row: the rows in order, on one thread
    for (int64_t r = 0; r < n; ++r) add(rows + r * rows_s0, view + p.offset(r));
    return;
  }
  const int64_t a = w.inner_stride(0), b = w.inner_stride(1);
  parallel_for(0, rn, std::max<int64_t>(1, kGrainSize / n), [&](int64_t begin, int64_t end) {
    for (int64_t r = 0; r < n; ++r) {
      const T* x = rows + r * rows_s0;
      T* y = view + p.offset(r);
      walk(w, begin, end, [&](const int64_t* o, int64_t m) {
        for (int64_t i = 0; i < m; ++i) add(x + o[0] + i * a, y + o[1] + i * b);
      });
    }
  });
}

// self[index] <- values: (N, rest...) of self's dtype; mode & 2: self[index] += values.
void index_put_kernel(const Tensor& self, int64_t dims, const Tensor& index, const Tensor& values,
                      const KernelArgs& a) {
  AdvancedPlan p = make_plan(values, dims, index, self, a.mode & 1);
  p.validate("index_put_");
  if (a.mode & 2) {
    BRISK_DISPATCH_ALL(self.dtype(), "index_put_", [&] {
      advanced_accumulate<scalar_t>(p, static_cast<const scalar_t*>(values.data_ptr()),
                                    values.dim() ? values.stride(0) : 0, static_cast<scalar_t*>(self.data_ptr()));
    });
    return;
  }
  BRISK_DISPATCH_BITS(self.dtype(), "index_put_", [&] {
    advanced_copy<bits_t, true>(p, static_cast<bits_t*>(values.data_ptr()), values.dim() ? values.stride(0) : 0,
                                static_cast<bits_t*>(self.data_ptr()));
  });
}

// out: src's shape with size N at dim; index: (N,) int64 in [0, src.size(dim)).
void index_select_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                         const KernelArgs&) {
  index_kernel_named("index_select", out.movedim(dim, 0), int64_t(1) << dim, index.unsqueeze(0), src, false);
}

// ---- gather / scatter / scatter_add ------------------------------------------------

/// Read-only check that every value of `index` lies in [0, size).
void validate_index_tensor(const char* op, const Tensor& index, int64_t dim, int64_t size) {
  Strided<1> w;
  for (int64_t d = 0; d < index.dim(); ++d) w.push(index.size(d), {index.stride(d)});
  w.coalesce();
  const int64_t* ip = static_cast<const int64_t*>(index.data_ptr());
  const int64_t s = w.inner_stride(0), total = w.numel();
  std::atomic<int64_t> bad{total};
  parallel_for(0, total, kGrainSize, [&](int64_t b, int64_t e) {
    int64_t pos = b;
    bool found = false;
    walk(w, b, e, [&](const int64_t* o, int64_t m) {
      if (found) return;
      const int64_t* q = ip + o[0];
      for (int64_t i = 0; i < m; ++i) {
        const int64_t v = q[i * s];
        if (v < 0 || v >= size) {
          atomic_min(bad, pos + i);
          found = true;
          return;
        }
      }
      pos += m;
    });
  });
  const int64_t r = bad.load();
  if (r == total) return;
  int64_t off = 0, rem = r;
  for (int d = w.nd - 1; d >= 0; --d) {
    off += (rem % w.sizes[d]) * w.strides[0][d];
    rem /= w.sizes[d];
  }
  throw_out_of_bounds(op, ip[off], dim, size);
}

// out[p] = src[p with dim replaced by index[p]]; out and index share a shape.
void gather_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, const KernelArgs&) {
  validate_index_tensor("gather", index, dim, src.size(dim));
  Strided<3> w;
  for (int64_t d = 0; d < index.dim(); ++d)
    w.push(index.size(d), {out.stride(d), index.stride(d), d == dim ? 0 : src.stride(d)});
  w.coalesce();
  const int64_t sd = src.stride(dim);
  const int64_t* ip = static_cast<const int64_t*>(index.data_ptr());
  BRISK_DISPATCH_BITS(src.dtype(), "gather", [&] {
    bits_t* o = static_cast<bits_t*>(out.data_ptr());
    const bits_t* s = static_cast<const bits_t*>(src.data_ptr());
    const int64_t a = w.inner_stride(0), b = w.inner_stride(1), c = w.inner_stride(2);
    parallel_for(0, w.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
      walk(w, begin, end, [&](const int64_t* off, int64_t m) {
        bits_t* oo = o + off[0];
        const int64_t* ii = ip + off[1];
        const bits_t* ss = s + off[2];
        for (int64_t i = 0; i < m; ++i) oo[i * a] = ss[i * c + ii[i * b] * sd];
      });
    });
  });
}

/// Runs op(dst, i_src) for self[p with dim := index[p]] and src position p.
/// Positions that differ outside `dim` never write the same element, so the
/// walk is split across threads there and runs in order along `dim` (the last
/// write to a duplicate index wins, as in PyTorch).
template <class T, class Op>
void scatter_loop(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const Op& op) {
  Strided<3> w;
  for (int64_t d = 0; d < index.dim(); ++d)
    if (d != dim) w.push(index.size(d), {self.stride(d), index.stride(d), src.defined() ? src.stride(d) : 0});
  w.coalesce();
  const int64_t len = index.size(dim), is = index.stride(dim), ss = src.defined() ? src.stride(dim) : 0;
  const int64_t ds = self.stride(dim);
  T* sp = static_cast<T*>(self.data_ptr());
  const int64_t* ip = static_cast<const int64_t*>(index.data_ptr());
  const T* srcp = src.defined() ? static_cast<const T*>(src.data_ptr()) : nullptr;
  const int64_t a = w.inner_stride(0), b = w.inner_stride(1), c = w.inner_stride(2);
  parallel_for(0, w.numel(), std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len, 1)),
               [&](int64_t begin, int64_t end) {
                 walk(w, begin, end, [&](const int64_t* off, int64_t m) {
                   for (int64_t l = 0; l < len; ++l) {
                     T* so = sp + off[0];
                     const int64_t* io = ip + off[1] + l * is;
                     const T* xo = srcp ? srcp + off[2] + l * ss : nullptr;
                     for (int64_t i = 0; i < m; ++i) op(so + i * a + io[i * b] * ds, xo ? xo + i * c : nullptr);
                   }
                 });
               });
}

// self[p with dim := index[p]] = src[p] (or the scalar a.s0 when src is undefined).
void scatter_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const KernelArgs& a) {
  validate_index_tensor("scatter", index, dim, self.size(dim));
  BRISK_DISPATCH_BITS(self.dtype(), "scatter", [&] {
    if (src.defined()) {
      scatter_loop<bits_t>(self, dim, index, src, [](bits_t* d, const bits_t* s) { *d = *s; });
    } else {
      const bits_t v = scalar_bits<bits_t>(a.s0, self.dtype());
      scatter_loop<bits_t>(self, dim, index, src, [v](bits_t* d, const bits_t*) { *d = v; });
    }
  });
}

template <class T>
inline T add_scaled(T x, T y, opmath_t<T> alpha) {
  if constexpr (std::is_same_v<T, bool>)
    return x || (y && alpha);
  else
    return static_cast<T>(static_cast<opmath_t<T>>(x) + alpha * static_cast<opmath_t<T>>(y));
}
template <class T>
inline T add_plain(T x, T y) {
  if constexpr (std::is_same_v<T, bool>)
    return x || y;
  else
    return static_cast<T>(static_cast<opmath_t<T>>(x) + static_cast<opmath_t<T>>(y));
}

// Note [16-bit scatter accumulation]
// PyTorch's CPU scatter_add of float16/bfloat16, and its index_add of
// bfloat16, accumulate in float32 and round once (its index_add of float16
// and index_put_ with accumulate round after each addition, as brisk's
// loops do). With many additions to one element the two differ by many
// ulps (-2 + four bfloat16 terms: -0.0469 rounding each time, -0.0376 once),
// so these kernels take the float32 path: a float32 copy of self, the
// kernel's float32 form, one rounding back into self.
template <class K>
void accumulate_in_float(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                         const KernelArgs& a, const K& kernel) {
  NoGradGuard ng;
  Tensor acc = empty(self.sizes(), TensorOptions(kFloat));
  acc.copy_(self);
  kernel(acc, dim, index, src.to(kFloat), a);
  self.copy_(acc);
}

// self[p with dim := index[p]] += src[p].
void scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        const KernelArgs& a) {
  validate_index_tensor("scatter_add", index, dim, self.size(dim));
  if (self.dtype() == kHalf || self.dtype() == kBFloat16) {  // Note [16-bit scatter accumulation]
    accumulate_in_float(self, dim, index, src, a, scatter_add_kernel);
    return;
  }
  BRISK_DISPATCH_ALL(self.dtype(), "scatter_add", [&] {
    scatter_loop<scalar_t>(self, dim, index, src,
                           [](scalar_t* d, const scalar_t* s) { *d = add_plain<scalar_t>(*d, *s); });
  });
}

// self.select(dim, index[i]) += alpha * src.select(dim, i); index: (N,) int64.
void index_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const KernelArgs& a) {
  validate_index_tensor("index_add_", index, dim, self.size(dim));
  if (self.dtype() == kBFloat16) {  // Note [16-bit scatter accumulation]
    accumulate_in_float(self, dim, index, src, a, index_add_kernel);
    return;
  }
  Strided<2> w;
  for (int64_t d = 0; d < src.dim(); ++d)
    if (d != dim) w.push(src.size(d), {self.stride(d), src.stride(d)});
  w.coalesce();
  const int64_t n = index.numel(), is = index.dim() ? index.stride(0) : 0;
  const int64_t ds = self.stride(dim), ss = src.stride(dim);
  const int64_t* ip = static_cast<const int64_t*>(index.data_ptr());
  BRISK_DISPATCH_ALL(self.dtype(), "index_add_", [&] {
    using M = opmath_t<scalar_t>;
    const M alpha = a.s0.to<M>();
    scalar_t* sp = static_cast<scalar_t*>(self.data_ptr());
    const scalar_t* xp = static_cast<const scalar_t*>(src.data_ptr());
    const int64_t p = w.inner_stride(0), q = w.inner_stride(1);
    parallel_for(0, w.numel(), std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)),
                 [&](int64_t begin, int64_t end) {
                   walk(w, begin, end, [&](const int64_t* off, int64_t m) {
                     for (int64_t i = 0; i < n; ++i) {
                       scalar_t* d = sp + off[0] + ip[i * is] * ds;
                       const scalar_t* s = xp + off[1] + i * ss;
                       for (int64_t r = 0; r < m; ++r) d[r * p] = add_scaled<scalar_t>(d[r * p], s[r * q], alpha);
                     }
                   });
                 });
  });
}

// ---- nonzero ----------------------------------------------------------------------

// Zero test on raw bits where that is exact: -0.0 is zero and NaN is not.
template <class T>
struct NonzeroTest {
  static bool test(const void* p, int64_t i) { return static_cast<const T*>(p)[i] != T(0); }
};
struct NonzeroHalfTest {  // Half and BFloat16: any bit but the sign
  static bool test(const void* p, int64_t i) { return (static_cast<const uint16_t*>(p)[i] & 0x7fff) != 0; }
};

template <class Test>
Tensor nonzero_impl(const Tensor& in) {
  const int64_t nd = in.dim(), numel = in.numel();
  Strided<1> w;
  for (int64_t d = 0; d < nd; ++d) w.push(in.size(d), {in.stride(d)});
  w.coalesce();
  const int64_t s = w.inner_stride(0);
  const char* base = static_cast<const char*>(in.data_ptr());
  const int64_t es = static_cast<int64_t>(in.element_size());

  // Pass 1: count per chunk (one chunk per thread); pass 2: each chunk writes
  // its coordinates from its prefix offset.
  const int64_t nchunks =
      std::clamp<int64_t>(numel / kGrainSize, 1, std::max<int64_t>(get_num_threads(), 1));
  const int64_t chunk = numel == 0 ? 0 : (numel + nchunks - 1) / nchunks;
  std::vector<int64_t> counts(static_cast<size_t>(nchunks) + 1, 0);
  parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t cnt = 0;
      walk(w, c * chunk, std::min(numel, (c + 1) * chunk), [&](const int64_t* o, int64_t m) {
        const char* p = base + o[0] * es;
        if (s == 1) {
          for (int64_t i = 0; i < m; ++i) cnt += Test::test(p, i);
        } else {
          for (int64_t i = 0; i < m; ++i) cnt += Test::test(p, i * s);
        }
      });
      counts[c + 1] = cnt;
    }
  });
  for (int64_t c = 0; c < nchunks; ++c) counts[c + 1] += counts[c];
  const int64_t total = counts[nchunks];
  const int64_t shape[2] = {total, nd};
  Tensor out = detail::make_tensor(IntArrayRef(shape, 2), {}, kInt64, in.device());
  if (total == 0 || nd == 0) return out;
  int64_t* op = static_cast<int64_t*>(out.data_ptr());
  const int64_t* sizes = in.sizes().data();

  // The write pass walks logical rows (the last dim) so that the outer
  // coordinates are constants of a row; the columns of a row's nonzeros are
  // gathered branch-free into a small buffer, then written out.
  const int64_t* strides = in.strides().data();
  const int64_t len = sizes[nd - 1], s_last = strides[nd - 1];
  parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t begin = c * chunk, end = std::min(numel, (c + 1) * chunk);
      if (begin >= end) continue;
      int64_t* dst = op + counts[c] * nd;
      int64_t coord[kMaxWalkDims];
      int64_t rem = begin, row_off = 0;  // row_off: element offset of (coord[:-1], 0)
      for (int64_t d = nd - 1; d >= 0; --d) {
        coord[d] = rem % sizes[d];
        rem /= sizes[d];
        if (d < nd - 1) row_off += coord[d] * strides[d];
      }
      int64_t col = coord[nd - 1], pos = begin;
      constexpr int64_t kBlock = 256;
      int64_t buf[kBlock];
      while (pos < end) {
        const int64_t n = std::min(len - col, end - pos);
        for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
          const int64_t bn = std::min(kBlock, n - b0);
          const char* p = base + (row_off + (col + b0) * s_last) * es;
          int64_t m = 0;
          if (s_last == 1) {
            for (int64_t i = 0; i < bn; ++i) {
              buf[m] = col + b0 + i;
              m += Test::test(p, i);
            }
          } else {
            for (int64_t i = 0; i < bn; ++i) {
              buf[m] = col + b0 + i;
              m += Test::test(p, i * s_last);
            }
          }
          if (nd == 1) {
            std::memcpy(dst, buf, static_cast<size_t>(m) * sizeof(int64_t));
            dst += m;
          } else {
            for (int64_t j = 0; j < m; ++j) {
              for (int64_t d = 0; d < nd - 1; ++d) dst[d] = coord[d];
              dst[nd - 1] = buf[j];
              dst += nd;
            }
          }
        }
        pos += n;
        // Next row: bump the outer coordinates (carrying), offset follows.
        col = 0;
        int64_t d = nd - 2;
        for (; d >= 0; --d) {
          row_off += strides[d];
          if (++coord[d] < sizes[d]) break;
          row_off -= coord[d] * strides[d];
          coord[d] = 0;
        }
      }
    }
  });
  return out;
}

// in: any shape and dtype -> (n, in.dim()) int64 coordinates in row-major order.
Tensor nonzero_kernel(const Tensor& in) {
  BRISK_CHECK(in.dim() < kMaxWalkDims, "nonzero", "tensors with more than ", kMaxWalkDims,
              " dims are not supported");
  switch (in.dtype()) {
    case kBool:
    case kUInt8:
    case kInt8:
      return nonzero_impl<NonzeroTest<uint8_t>>(in);
    case kInt16:
      return nonzero_impl<NonzeroTest<uint16_t>>(in);
    case kInt32:
      return nonzero_impl<NonzeroTest<uint32_t>>(in);
    case kInt64:
      return nonzero_impl<NonzeroTest<uint64_t>>(in);
    case kHalf:
    case kBFloat16:
      return nonzero_impl<NonzeroHalfTest>(in);
    case kFloat:
      return nonzero_impl<NonzeroTest<float>>(in);
    case kDouble:
      return nonzero_impl<NonzeroTest<double>>(in);
    default:
      BRISK_FAIL("nonzero", "unsupported dtype ", in.dtype());
  }
}

#undef BRISK_DISPATCH_BITS

}  // namespace

void register_index_kernels() {
  register_kernel<OpId::index>(kCPU, index_kernel);
  register_kernel<OpId::index_put>(kCPU, index_put_kernel);
  register_kernel<OpId::index_select>(kCPU, index_select_kernel);
  register_kernel<OpId::gather>(kCPU, gather_kernel);
  register_kernel<OpId::scatter>(kCPU, scatter_kernel);
  register_kernel<OpId::scatter_add>(kCPU, scatter_add_kernel);
  register_kernel<OpId::index_add>(kCPU, index_add_kernel);
  register_kernel<OpId::nonzero>(kCPU, nonzero_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
