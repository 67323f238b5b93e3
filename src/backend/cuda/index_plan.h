// Index arithmetic of the CUDA index kernels (index.cu), shared by host and
// device: the parameter blocks the kernels receive, the host planners that
// fill them from tensors (mirroring the CPU kernels' walks in
// src/backend/cpu/kernels/index.cpp), and the per-element offset functions
// the kernels call. Plain C++ with BRISK_HOST_DEVICE functions and no CUDA
// header, so tests/cuda/test_cuda_index.cpp runs the same planners and
// element functions on CPU tensors, without a GPU, against the CPU ops.
#pragma once
#include <cstdint>

#include "brisk/error.h"
#include "brisk/half.h"  // BRISK_HOST_DEVICE
#include "brisk/tensor.h"

namespace brisk::cuda::detail {

/// Dims a kernel walk can have after merging (PyTorch's CUDA limit is 25 too).
constexpr int kMaxIndexDims = 25;

/// q = a / b, r = a % b for a >= 0, b > 0; 32-bit division when both fit
/// (a 64-bit division is a long instruction sequence on the GPU).
BRISK_HOST_DEVICE inline void divmod(int64_t a, int64_t b, int64_t& q, int64_t& r) {
  if ((static_cast<uint64_t>(a) | static_cast<uint64_t>(b)) >> 32 == 0) {
    const uint32_t q32 = static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
    q = q32;
    r = a - static_cast<int64_t>(q32) * b;
  } else {
    q = a / b;
    r = a - q * b;
  }
}

/// Element offsets of K operands at a row-major linear position over nd
/// dims (outermost first; strides in elements).
template <int K>
struct OffsetCalc {
  int nd = 0;
  int64_t sizes[kMaxIndexDims] = {};
  int64_t strides[K][kMaxIndexDims] = {};

  BRISK_HOST_DEVICE void get(int64_t linear, int64_t (&off)[K]) const {
    for (int k = 0; k < K; ++k) off[k] = 0;
    for (int d = nd - 1; d > 0; --d) {
      int64_t q, r;
      divmod(linear, sizes[d], q, r);
      for (int k = 0; k < K; ++k) off[k] += r * strides[k][d];
      linear = q;
    }
    if (nd > 0)
      for (int k = 0; k < K; ++k) off[k] += linear * strides[k][0];
  }
  BRISK_HOST_DEVICE int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < nd; ++d) n *= sizes[d];
    return n;
  }
};

/// Host-side builder of an OffsetCalc: takes up to 64 dims, drops size-1
/// dims and merges dims contiguous for every operand (the walk order is
/// unchanged), then checks the result fits a kernel's parameter block.
template <int K>
struct WalkBuilder {
  static constexpr int kCap = 64;
  int nd = 0;
  int64_t sizes[kCap];
  int64_t strides[K][kCap];
  bool empty = false;

  void push(int64_t size, const int64_t (&st)[K], const char* op) {
    BRISK_CHECK(nd < kCap, op, "tensors with more than ", kCap, " dims are not supported");
    if (size == 0) empty = true;
    sizes[nd] = size;
    for (int k = 0; k < K; ++k) strides[k][nd] = st[k];
    ++nd;
  }
  OffsetCalc<K> build(const char* op) const {
    OffsetCalc<K> c;
    if (empty) {  // nothing to walk: one dim of size 0
      c.nd = 1;
      c.sizes[0] = 0;
      return c;
    }
    int out = 0;
    int64_t s[kCap], t[K][kCap];
    for (int d = 0; d < nd; ++d) {
      if (sizes[d] == 1) continue;
      if (out > 0) {
        bool merge = true;
        for (int k = 0; k < K; ++k) merge &= t[k][out - 1] == strides[k][d] * sizes[d];
        if (merge) {
          s[out - 1] *= sizes[d];
          for (int k = 0; k < K; ++k) t[k][out - 1] = strides[k][d];
          continue;
        }
      }
      s[out] = sizes[d];
      for (int k = 0; k < K; ++k) t[k][out] = strides[k][d];
      ++out;
    }
    BRISK_CHECK(out <= kMaxIndexDims, op, "on cuda, tensors whose layout needs more than ", kMaxIndexDims,
                " dims (after merging contiguous dims) are not supported, got ", out);
    c.nd = out;
    for (int d = 0; d < out; ++d) {
      c.sizes[d] = s[d];
      for (int k = 0; k < K; ++k) c.strides[k][d] = t[k][d];
    }
    return c;
  }
};

// ---- gather / scatter / scatter_add / index_add_ ---------------------------------

/// What the scatter-family kernel does with element p of its walk, where
/// A[p with dim := index[p]] is the addressed element and B[p] the partner:
enum class ScatterMode : int {
  gather,   ///< B[p] = A[...]     (B: the output)
  scatter,  ///< A[...] = B[p]     (B: src)
  fill,     ///< A[...] = scalar
  add,      ///< A[...] += alpha * B[p] (atomic)
};

/// One kernel serves gather, scatter, scatter_add and index_add_: the walk
/// has three operands, 0 = A with its stride at `dim` zeroed, 1 = index,
/// 2 = B; the index value v then adds v * a_dim_stride to A's offset.
struct ScatterParams {
  OffsetCalc<3> w;
  int64_t numel = 0;
  int64_t dim = 0, dim_size = 0, a_dim_stride = 0;
  int mode = 0;  ///< ScatterMode
  int op = 0;    ///< DeviceErrorOp
};

/// Offsets of walk position e: A (without the index term), index, B.
BRISK_HOST_DEVICE inline void scatter_offsets(const ScatterParams& p, int64_t e, int64_t& a, int64_t& i, int64_t& b) {
  int64_t off[3];
  p.w.get(e, off);
  a = off[0];
  i = off[1];
  b = off[2];
}
/// gather/scatter/index_add_ accept indices in [0, size) only.
BRISK_HOST_DEVICE inline bool scatter_index_ok(int64_t v, int64_t size) { return v >= 0 && v < size; }

/// gather: out[p] = src[p with dim := index[p]]; walk over index's shape.
inline ScatterParams make_gather_params(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                                        int op) {
  WalkBuilder<3> b;
  for (int64_t d = 0; d < index.dim(); ++d)
    b.push(index.size(d), {d == dim ? 0 : src.stride(d), index.stride(d), out.stride(d)}, "gather");
  ScatterParams p;
  p.w = b.build("gather");
  p.numel = index.numel();
  p.dim = dim;
  p.dim_size = src.size(dim);
  p.a_dim_stride = src.stride(dim);
  p.mode = static_cast<int>(ScatterMode::gather);
  p.op = op;
  return p;
}

/// scatter / scatter_add: self[p with dim := index[p]] (op)= src[p]; walk
/// over index's shape. `src` undefined: the scalar fill.
inline ScatterParams make_scatter_params(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                                         ScatterMode mode, int op, const char* name) {
  WalkBuilder<3> b;
  for (int64_t d = 0; d < index.dim(); ++d)
    b.push(index.size(d), {d == dim ? 0 : self.stride(d), index.stride(d), src.defined() ? src.stride(d) : 0}, name);
  ScatterParams p;
  p.w = b.build(name);
  p.numel = index.numel();
  p.dim = dim;
  p.dim_size = self.size(dim);
  p.a_dim_stride = self.stride(dim);
  p.mode = static_cast<int>(mode);
  p.op = op;
  return p;
}

/// index_add_: self.select(dim, index[i]) += alpha * src.select(dim, i);
/// walk over src's shape, the (N,) index advancing along dim only.
inline ScatterParams make_index_add_params(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                                           int op) {
  const int64_t is = index.dim() ? index.stride(0) : 0;
  WalkBuilder<3> b;
  for (int64_t d = 0; d < src.dim(); ++d)
    b.push(src.size(d), {d == dim ? 0 : self.stride(d), d == dim ? is : 0, src.stride(d)}, "index_add_");
  ScatterParams p;
  p.w = b.build("index_add_");
  p.numel = src.numel();
  p.dim = dim;
  p.dim_size = self.size(dim);
  p.a_dim_stride = self.stride(dim);
  p.mode = static_cast<int>(ScatterMode::add);
  p.op = op;
  return p;
}

// ---- advanced indexing: index / index_put_ / index_select -------------------------

/// Note [Advanced index kernel layout] (cpu/kernels/index.cpp): `view` is
/// indexed on the k dims set in `dims` by the rows of the (k, N) index;
/// `rows` is (N, rest...). Element e = n * rest_numel + r moves
/// rows[n, r] <-> view[i_0[n], ..., i_{k-1}[n]] over rest position r.
struct AdvancedParams {
  int k = 0;
  int64_t n = 0, rest_numel = 0, total = 0;
  int64_t dim[kMaxIndexDims] = {}, size[kMaxIndexDims] = {}, stride[kMaxIndexDims] = {};
  int64_t idx_s0 = 0, idx_s1 = 0;
  int64_t rows_s0 = 0;
  OffsetCalc<2> rest;  ///< 0: rows (dims 1..), 1: the view's non-indexed dims
  bool wrap = false;     ///< negative indices count from the end
  bool to_view = false;  ///< index_put_ (rows -> view) rather than index (view -> rows)
  bool fill = false;     ///< index_put_ of one value: fill_bits instead of rows (rows unread)
  uint64_t fill_bits = 0;
  int op = 0;            ///< DeviceErrorOp
};

BRISK_HOST_DEVICE inline bool advanced_index_ok(int64_t v, int64_t size, bool wrap) {
  return v < size && v >= (wrap ? -size : 0);
}

/// Offsets of element e in rows and view. Returns false for an invalid index
/// value (bad_j: which of the k indices, bad_v: its value); rows_off is set
/// either way, view_off only when valid.
BRISK_HOST_DEVICE inline bool advanced_offsets(const AdvancedParams& p, const int64_t* idx, int64_t e,
                                               int64_t& rows_off, int64_t& view_off, int& bad_j, int64_t& bad_v) {
  int64_t row, r;
  divmod(e, p.rest_numel, row, r);
  int64_t off[2];
  p.rest.get(r, off);
  rows_off = row * p.rows_s0 + off[0];
  int64_t v_off = off[1];
  for (int j = 0; j < p.k; ++j) {
    int64_t v = idx[j * p.idx_s0 + row * p.idx_s1];
    if (!advanced_index_ok(v, p.size[j], p.wrap)) {
      bad_j = j;
      bad_v = v;
      return false;
    }
    if (v < 0) v += p.size[j];
    v_off += v * p.stride[j];
  }
  view_off = v_off;
  return true;
}

/// Mirrors make_plan of the CPU kernel.
inline AdvancedParams make_advanced_params(const Tensor& rows, int64_t dims, const Tensor& index, const Tensor& view,
                                           bool wrap, bool to_view, int op, const char* name) {
  AdvancedParams p;
  BRISK_CHECK(index.dtype() == kInt64 && index.dim() == 2, name, "internal: expected a (k, N) int64 index, got ",
              index.dtype(), " ", index.sizes());
  const int64_t k = index.size(0);
  BRISK_CHECK(k <= kMaxIndexDims, name, "on cuda, at most ", kMaxIndexDims, " dims can be indexed at once, got ", k);
  p.k = static_cast<int>(k);
  p.n = index.size(1);
  p.idx_s0 = index.stride(0);
  p.idx_s1 = index.stride(1);
  p.wrap = wrap;
  p.to_view = to_view;
  p.op = op;
  p.rows_s0 = rows.dim() ? rows.stride(0) : 0;
  WalkBuilder<2> b;
  int j = 0, r = 1;
  for (int64_t d = 0; d < view.dim(); ++d) {
    if (d < 64 && ((dims >> d) & 1)) {
      BRISK_CHECK(j < k, name, "internal: more indexed dims than index rows");
      p.dim[j] = d;
      p.size[j] = view.size(d);
      p.stride[j] = view.stride(d);
      ++j;
    } else {
      BRISK_CHECK(r < rows.dim(), name, "internal: rows ", rows.sizes(), " do not match the view ", view.sizes());
      b.push(view.size(d), {rows.stride(r), view.stride(d)}, name);
      ++r;
    }
  }
  BRISK_CHECK(j == k && r == rows.dim(), name, "internal: rows ", rows.sizes(), " do not match the view ",
              view.sizes());
  p.rest = b.build(name);
  p.rest_numel = p.rest.numel();
  p.total = p.n * p.rest_numel;
  return p;
}

/// Wider moves for the advanced kernel: when the innermost rest dim is
/// contiguous in rows and view, every other stride and the inner size are
/// multiples of V = 16 / esize elements and both base addresses are 16-byte
/// aligned, groups of V elements move as one 16-byte element. Rewrites `p`
/// in units of such groups and returns true; false leaves `p` unchanged.
/// (One row of an embedding-style index_select is then copied with 16-byte
/// loads and stores instead of V times as many small ones.)
inline bool widen_advanced(AdvancedParams& p, int64_t esize, const void* rows, const void* view) {
  if (esize <= 0 || 16 % esize != 0) return false;
  const int64_t v = 16 / esize;
  if (v <= 1 || p.fill || p.rest.nd == 0 || p.total == 0) return false;
  const int last = p.rest.nd - 1;
  if (p.rest.strides[0][last] != 1 || p.rest.strides[1][last] != 1 || p.rest.sizes[last] % v != 0) return false;
  if (reinterpret_cast<uintptr_t>(rows) % 16 != 0 || reinterpret_cast<uintptr_t>(view) % 16 != 0) return false;
  bool ok = p.rows_s0 % v == 0;
  for (int d = 0; d < last; ++d) ok &= p.rest.strides[0][d] % v == 0 && p.rest.strides[1][d] % v == 0;
  for (int j = 0; j < p.k; ++j) ok &= p.stride[j] % v == 0;
  if (!ok) return false;
  p.rest.sizes[last] /= v;
  for (int d = 0; d < last; ++d) {
    p.rest.strides[0][d] /= v;
    p.rest.strides[1][d] /= v;
  }
  p.rows_s0 /= v;
  for (int j = 0; j < p.k; ++j) p.stride[j] /= v;
  p.rest_numel /= v;
  p.total /= v;
  return true;
}

// ---- nonzero ------------------------------------------------------------------------

/// A block of kNonzeroThreads threads handles a tile of kNonzeroTile
/// consecutive logical elements, item i of thread t being element
/// tile * kNonzeroTile + i * kNonzeroThreads + t (coalesced loads; ranks
/// within a round follow the thread index, so the output is row-major).
constexpr int kNonzeroThreads = 256;
constexpr int kNonzeroItems = 8;
constexpr int64_t kNonzeroTile = int64_t{kNonzeroThreads} * kNonzeroItems;

struct NonzeroParams {
  OffsetCalc<1> w;  ///< the input's layout (merged)
  int nd = 0;       ///< dims of the input (columns of the output)
  int64_t sizes[kMaxIndexDims] = {};
  int64_t numel = 0;
  int esize = 1;      ///< element size in bytes
  uint64_t mask = 0;  ///< bits that make an element nonzero (all but the sign for floats)
};

/// The zero test on raw bits: -0.0 is zero, NaN is not (as the CPU kernel).
inline uint64_t nonzero_mask(ScalarType t) {
  switch (t) {
    case kBool:
    case kUInt8:
    case kInt8: return 0xffull;
    case kInt16: return 0xffffull;
    case kInt32: return 0xffffffffull;
    case kInt64: return ~0ull;
    case kHalf:
    case kBFloat16: return 0x7fffull;
    case kFloat: return 0x7fffffffull;
    case kDouble: return 0x7fffffffffffffffull;
    default: BRISK_FAIL("nonzero", "unsupported dtype ", t);
  }
}

inline NonzeroParams make_nonzero_params(const Tensor& in) {
  NonzeroParams p;
  BRISK_CHECK(in.dim() <= kMaxIndexDims, "nonzero", "on cuda, tensors of up to ", kMaxIndexDims,
              " dims are supported, got ", in.dim());
  WalkBuilder<1> b;
  for (int64_t d = 0; d < in.dim(); ++d) {
    b.push(in.size(d), {in.stride(d)}, "nonzero");
    p.sizes[d] = in.size(d);
  }
  p.w = b.build("nonzero");
  p.nd = static_cast<int>(in.dim());
  p.numel = in.numel();
  p.esize = static_cast<int>(element_size(in.dtype()));
  p.mask = nonzero_mask(in.dtype());
  return p;
}

/// Element offset (in elements) of logical position e.
BRISK_HOST_DEVICE inline int64_t nonzero_offset(const NonzeroParams& p, int64_t e) {
  int64_t off[1];
  p.w.get(e, off);
  return off[0];
}

/// Whether logical position e of `in` (the input's data pointer) is nonzero.
BRISK_HOST_DEVICE inline bool nonzero_at(const NonzeroParams& p, const char* in, int64_t e) {
  const char* q = in + nonzero_offset(p, e) * p.esize;
  uint64_t bits = 0;
#if defined(__CUDA_ARCH__)
  switch (p.esize) {  // aligned loads of the element's width
    case 1: bits = *reinterpret_cast<const uint8_t*>(q); break;
    case 2: bits = *reinterpret_cast<const uint16_t*>(q); break;
    case 4: bits = *reinterpret_cast<const uint32_t*>(q); break;
    default: bits = *reinterpret_cast<const uint64_t*>(q); break;
  }
#else
  for (int i = 0; i < p.esize; ++i)  // little-endian assembly, no aliasing questions
    bits |= static_cast<uint64_t>(static_cast<unsigned char>(q[i])) << (8 * i);
#endif
  return (bits & p.mask) != 0;
}

/// Writes the nd coordinates of logical position e.
BRISK_HOST_DEVICE inline void nonzero_coords(const NonzeroParams& p, int64_t e, int64_t* out) {
  for (int d = p.nd - 1; d > 0; --d) {
    int64_t q, r;
    divmod(e, p.sizes[d], q, r);
    out[d] = r;
    e = q;
  }
  if (p.nd > 0) out[0] = e;
}

}  // namespace brisk::cuda::detail
