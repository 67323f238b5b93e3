// CUDA kernels of the indexing ops: gather, scatter (tensor or scalar
// source), scatter_add, index_add_, index / index_put_ / index_select
// (advanced indexing) and nonzero. Same contracts as the CPU kernels
// (src/backend/cpu/kernels/index.cpp): what each receives is described
// there and in index_plan.h, which holds the shared index arithmetic.
//
// Index values are checked on the device as they are used; a bad one is
// skipped and reported through the device error record, raised at the next
// synchronising call (Note [Deferred index errors] in device_errors.h).
//
// Kernels: one scatter-family kernel per dtype (gather, scatter, fill and
// atomic add are a runtime mode), one advanced-indexing kernel per element
// size (it moves raw bits), and three nonzero kernels (count, scan, write).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_errors.cuh"
#include "backend/cuda/index_plan.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/tensor_create.h"

namespace brisk::cuda::detail {
namespace {

constexpr int kThreads = 256;

/// Grid of a grid-stride loop over n elements: at most 8 blocks per SM
/// (2048 threads, the SM's limit), at least one.
int grid_for(int64_t n) {
  const int64_t most = static_cast<int64_t>(sm_count()) * 8;
  return static_cast<int>(std::max<int64_t>(1, std::min(ceil_div(n, kThreads), most)));
}

void check_same_device(const char* op, const Tensor& t, const Tensor& other, const char* what) {
  if (!other.defined()) return;
  BRISK_CHECK(other.device() == t.device(), op, "expected ", what, " on ", t.device(), ", got it on ",
              other.device());
}

// ---- element storage and atomic adds -----------------------------------------------

/// How a dtype's elements are held in the kernels: 16-bit floats and bools
/// as raw bits (brisk::Half/BFloat16 convert through float).
template <class T>
struct Store {
  using type = T;
};
template <>
struct Store<bool> {
  using type = uint8_t;
};
template <>
struct Store<Half> {
  using type = uint16_t;
};
template <>
struct Store<BFloat16> {
  using type = uint16_t;
};

/// alpha of the add mode, converted on the host as the CPU kernel does
/// (to the dtype's opmath type); `one` selects plain x + y.
struct AddArgs {
  double d = 1.0;
  float f = 1.0f;
  int64_t i = 1;
  bool one = true;
};

template <class T>
AddArgs make_add_args(const Scalar& alpha) {
  AddArgs a;
  using M = opmath_t<T>;
  const M v = alpha.to<M>();
  a.one = alpha.to_double() == 1.0;
  if constexpr (std::is_same_v<M, double>) a.d = v;
  else if constexpr (std::is_same_v<M, float>) a.f = v;
  else a.i = static_cast<int64_t>(v);
  return a;
}

/// A byte inside its aligned 32-bit word, added modulo 256.
__device__ inline void atomic_add_u8(uint8_t* p, uint32_t add) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  auto* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
  const unsigned int shift = static_cast<unsigned int>(addr & 3u) * 8u;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    const unsigned int byte = ((assumed >> shift) + add) & 0xffu;
    old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (byte << shift));
  } while (old != assumed);
}

/// A 16-bit integer added modulo 2^16 (int16: two's complement wraps the same
/// way); a 16-bit compare-and-swap loop (sm_70+).
__device__ inline void atomic_add_u16(uint16_t* p, uint32_t add) {
  auto* addr = reinterpret_cast<unsigned short*>(p);
  unsigned short old = *addr, assumed;
  do {
    assumed = old;
    old = atomicCAS(addr, assumed, static_cast<unsigned short>((assumed + add) & 0xffffu));
  } while (old != assumed);
}

template <class H>
__device__ inline float half_bits_to_float(uint16_t b) {
  if constexpr (std::is_same_v<H, Half>) return Half::to_float(b);
  else return brisk::detail::bits_f32(static_cast<uint32_t>(b) << 16);
}
template <class H>
__device__ inline uint16_t float_to_half_bits(float f) {
  return H::from_float(f);
}

/// *p = H(float(*p) + alpha * y), computed in float and rounded once as the
/// CPU kernel does; a 16-bit compare-and-swap loop (sm_70+).
template <class H>
__device__ inline void atomic_add_16(uint16_t* p, uint16_t y, const AddArgs& a) {
  auto* addr = reinterpret_cast<unsigned short*>(p);
  const float yf = half_bits_to_float<H>(y);
  unsigned short old = *addr, assumed;
  do {
    assumed = old;
    const float x = half_bits_to_float<H>(assumed);
    const float r = a.one ? x + yf : fmaf(a.f, yf, x);
    old = atomicCAS(addr, assumed, static_cast<unsigned short>(float_to_half_bits<H>(r)));
  } while (old != assumed);
}

template <class T>
__device__ inline void atomic_add_elem(typename Store<T>::type* p, typename Store<T>::type y, const AddArgs& a) {
  if constexpr (std::is_same_v<T, bool>) {
    if (y != 0 && a.i != 0) *reinterpret_cast<volatile uint8_t*>(p) = 1;  // x || (y && alpha)
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    const uint32_t add = (static_cast<uint32_t>(a.i) * y) & 0xffu;
    if (add != 0) atomic_add_u8(p, add);
  } else if constexpr (std::is_same_v<T, int8_t>) {
    const uint32_t add = (static_cast<uint32_t>(a.i) * static_cast<uint32_t>(y)) & 0xffu;
    if (add != 0) atomic_add_u8(reinterpret_cast<uint8_t*>(p), add);
  } else if constexpr (std::is_same_v<T, int16_t>) {
    const uint32_t add = (static_cast<uint32_t>(a.i) * static_cast<uint32_t>(y)) & 0xffffu;
    if (add != 0) atomic_add_u16(reinterpret_cast<uint16_t*>(p), add);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    atomicAdd(reinterpret_cast<unsigned int*>(p), static_cast<uint32_t>(a.i) * static_cast<uint32_t>(y));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p),
              static_cast<unsigned long long>(a.i) * static_cast<unsigned long long>(y));
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    atomic_add_16<T>(p, y, a);
  } else if constexpr (std::is_same_v<T, float>) {
    if (a.one) {
      atomicAdd(p, y);
      return;
    }
    auto* addr = reinterpret_cast<unsigned int*>(p);
    unsigned int old = *addr, assumed;
    do {
      assumed = old;
      old = atomicCAS(addr, assumed, __float_as_uint(fmaf(a.f, y, __uint_as_float(assumed))));
    } while (old != assumed);
  } else {
    static_assert(std::is_same_v<T, double>);
    if (a.one) {
      atomicAdd(p, y);
      return;
    }
    auto* addr = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *addr, assumed;
    do {
      assumed = old;
      const double r = fma(a.d, y, __longlong_as_double(static_cast<long long>(assumed)));
      old = atomicCAS(addr, assumed, static_cast<unsigned long long>(__double_as_longlong(r)));
    } while (old != assumed);
  }
}

// ---- gather / scatter / scatter_add / index_add_ -----------------------------------

/// Walk position e: A[a + v * a_dim_stride] with v = index[i], B[b] (index_plan.h).
template <class T>
__global__ void __launch_bounds__(kThreads)
    scatter_family_kernel(const ScatterParams p, typename Store<T>::type* a, const int64_t* idx,
                          typename Store<T>::type* b, typename Store<T>::type fill, const AddArgs alpha,
                          const DeviceErrorSlot err) {
  using S = typename Store<T>::type;
  const auto mode = static_cast<ScatterMode>(p.mode);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < p.numel; e += stride) {
    int64_t ao, io, bo;
    scatter_offsets(p, e, ao, io, bo);
    const int64_t v = idx[io];
    if (!scatter_index_ok(v, p.dim_size)) {
      report_index_error(err, static_cast<DeviceErrorOp>(p.op), v, p.dim, p.dim_size);
      if (mode == ScatterMode::gather) b[bo] = S(0);
      continue;
    }
    ao += v * p.a_dim_stride;
    switch (mode) {
      case ScatterMode::gather: b[bo] = a[ao]; break;
      case ScatterMode::scatter: a[ao] = b[bo]; break;
      case ScatterMode::fill: a[ao] = fill; break;
      case ScatterMode::add: atomic_add_elem<T>(a + ao, b[bo], alpha); break;
    }
  }
}

/// Runs the scatter-family kernel: `a` the addressed tensor, `b` the partner
/// (undefined for a fill), `fill` the scalar of a fill, `alpha` of an add.
void launch_scatter(const char* name, const ScatterParams& p, const Tensor& a, const Tensor& index, const Tensor& b,
                    const Scalar& fill, const Scalar& alpha) {
  check_same_device(name, a, index, "index");
  check_same_device(name, a, b, "src");
  if (p.numel == 0) return;
  const int dev = a.device().index;
  DeviceGuard g(dev);
  const DeviceErrorSlot err = device_error_slot(dev);
  cudaStream_t s = current_stream_handle(dev);
  BRISK_DISPATCH_ALL(a.dtype(), name, [&] {
    using S = typename Store<scalar_t>::type;
    static_assert(sizeof(S) == sizeof(scalar_t));
    S fill_bits{};
    if (static_cast<ScatterMode>(p.mode) == ScatterMode::fill) {
      const scalar_t v = fill.to<scalar_t>();
      std::memcpy(&fill_bits, &v, sizeof(S));
    }
    const AddArgs add = make_add_args<scalar_t>(alpha);
    scatter_family_kernel<scalar_t><<<grid_for(p.numel), kThreads, 0, s>>>(
        p, static_cast<S*>(a.data_ptr()), static_cast<const int64_t*>(index.data_ptr()),
        b.defined() ? static_cast<S*>(b.data_ptr()) : nullptr, fill_bits, add, err);
  });
  check_launch(name);
}

constexpr int op_code(DeviceErrorOp op) { return static_cast<int>(op); }

// out[p] = src[p with dim := index[p]]; out and index share a shape.
void gather_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, const KernelArgs&) {
  check_same_device("gather", src, out, "out");
  const ScatterParams p = make_gather_params(out, dim, index, src, op_code(DeviceErrorOp::gather));
  launch_scatter("gather", p, src, index, out, Scalar(), Scalar(1));
}

// self[p with dim := index[p]] = src[p] (or the scalar a.s0 when src is undefined).
void scatter_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const KernelArgs& a) {
  const ScatterMode mode = src.defined() ? ScatterMode::scatter : ScatterMode::fill;
  const ScatterParams p = make_scatter_params(self, dim, index, src, mode, op_code(DeviceErrorOp::scatter), "scatter");
  launch_scatter("scatter", p, self, index, src, a.s0, Scalar(1));
}

// self[p with dim := index[p]] += src[p].
void scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        const KernelArgs&) {
  const ScatterParams p =
      make_scatter_params(self, dim, index, src, ScatterMode::add, op_code(DeviceErrorOp::scatter_add), "scatter_add");
  launch_scatter("scatter_add", p, self, index, src, Scalar(), Scalar(1));
}

// self.select(dim, index[i]) += alpha * src.select(dim, i); index: (N,) int64; alpha: a.s0.
void index_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const KernelArgs& a) {
  const ScatterParams p = make_index_add_params(self, dim, index, src, op_code(DeviceErrorOp::index_add));
  launch_scatter("index_add_", p, self, index, src, Scalar(), a.has_s0 ? a.s0 : Scalar(1));
}

// ---- advanced indexing -----------------------------------------------------------------

template <class S>
__device__ inline S zero_bits() {
  if constexpr (std::is_same_v<S, uint4>) return make_uint4(0u, 0u, 0u, 0u);
  else return S(0);
}
template <class S>
__device__ inline S fill_of(uint64_t bits) {
  if constexpr (std::is_same_v<S, uint4>) return make_uint4(0u, 0u, 0u, 0u);  // never widened (widen_advanced)
  else return static_cast<S>(bits);
}

/// rows[n, r] <-> view[indices of row n, r] (raw bits of the element size, or
/// 16-byte groups of elements: widen_advanced).
template <class S>
__global__ void __launch_bounds__(kThreads)
    advanced_kernel(const AdvancedParams p, S* rows, S* view, const int64_t* idx, const DeviceErrorSlot err) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < p.total; e += stride) {
    int64_t ro, vo, bad_v = 0;
    int bad_j = 0;
    if (!advanced_offsets(p, idx, e, ro, vo, bad_j, bad_v)) {
      report_index_error(err, static_cast<DeviceErrorOp>(p.op), bad_v, p.dim[bad_j], p.size[bad_j]);
      if (!p.to_view) rows[ro] = zero_bits<S>();
      continue;
    }
    if (p.to_view)
      view[vo] = p.fill ? fill_of<S>(p.fill_bits) : rows[ro];
    else
      rows[ro] = view[vo];
  }
}

/// `fill`: index_put_ of the one value at fill_bits (rows then only give the shape).
void launch_advanced(const char* name, const Tensor& rows, int64_t dims, const Tensor& index, const Tensor& view,
                     bool wrap, bool to_view, DeviceErrorOp op, bool fill = false, uint64_t fill_bits = 0) {
  if (!fill) check_same_device(name, view, rows, to_view ? "values" : "out");
  check_same_device(name, view, index, "indices");
  BRISK_CHECK(rows.dtype() == view.dtype(), name, "internal: dtypes ", rows.dtype(), " and ", view.dtype(), " differ");
  AdvancedParams p = make_advanced_params(rows, dims, index, view, wrap, to_view, op_code(op), name);
  p.fill = fill;
  p.fill_bits = fill_bits;
  if (p.total == 0) return;
  const int dev = view.device().index;
  DeviceGuard g(dev);
  const DeviceErrorSlot err = device_error_slot(dev);
  cudaStream_t s = current_stream_handle(dev);
  const auto* ip = static_cast<const int64_t*>(index.data_ptr());
  const bool wide = widen_advanced(p, static_cast<int64_t>(element_size(view.dtype())),
                                   fill ? nullptr : rows.data_ptr(), view.data_ptr());
  const int grid = grid_for(p.total);
  auto go = [&](auto zero) {
    using S = decltype(zero);
    advanced_kernel<S><<<grid, kThreads, 0, s>>>(p, fill ? nullptr : static_cast<S*>(rows.data_ptr()),
                                                 static_cast<S*>(view.data_ptr()), ip, err);
  };
  if (wide) {
    go(uint4{});
    check_launch(name);
    return;
  }
  switch (element_size(view.dtype())) {
    case 1: go(uint8_t{}); break;
    case 2: go(uint16_t{}); break;
    case 4: go(uint32_t{}); break;
    case 8: go(uint64_t{}); break;
    default: BRISK_FAIL(name, "unsupported dtype ", view.dtype());
  }
  check_launch(name);
}

/// view[indices of row n, r] += rows[n, r]: index_put_ with accumulate, as
/// atomic adds (duplicates accumulate; the order of float adds is not fixed).
template <class T>
__global__ void __launch_bounds__(kThreads)
    advanced_add_kernel(const AdvancedParams p, const typename Store<T>::type* rows, typename Store<T>::type* view,
                        const int64_t* idx, const DeviceErrorSlot err) {
  const AddArgs plain;  // alpha 1
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < p.total; e += stride) {
    int64_t ro, vo, bad_v = 0;
    int bad_j = 0;
    if (!advanced_offsets(p, idx, e, ro, vo, bad_j, bad_v)) {
      report_index_error(err, static_cast<DeviceErrorOp>(p.op), bad_v, p.dim[bad_j], p.size[bad_j]);
      continue;
    }
    atomic_add_elem<T>(view + vo, rows[ro], plain);
  }
}

void launch_advanced_add(const char* name, const Tensor& rows, int64_t dims, const Tensor& index, const Tensor& view,
                         bool wrap) {
  check_same_device(name, view, rows, "values");
  check_same_device(name, view, index, "indices");
  BRISK_CHECK(rows.dtype() == view.dtype(), name, "internal: dtypes ", rows.dtype(), " and ", view.dtype(), " differ");
  const AdvancedParams p = make_advanced_params(rows, dims, index, view, wrap, true, op_code(DeviceErrorOp::index_put),
                                                name);
  if (p.total == 0) return;
  const int dev = view.device().index;
  DeviceGuard g(dev);
  const DeviceErrorSlot err = device_error_slot(dev);
  cudaStream_t s = current_stream_handle(dev);
  const auto* ip = static_cast<const int64_t*>(index.data_ptr());
  BRISK_DISPATCH_ALL(view.dtype(), name, [&] {
    using S = typename Store<scalar_t>::type;
    advanced_add_kernel<scalar_t><<<grid_for(p.total), kThreads, 0, s>>>(
        p, static_cast<const S*>(rows.data_ptr()), static_cast<S*>(view.data_ptr()), ip, err);
  });
  check_launch(name);
}

// out: (N, rest...) <- src[index]; mode & 1: negative indices wrap.
void index_kernel(const Tensor& out, int64_t dims, const Tensor& index, const Tensor& src, const KernelArgs& a) {
  launch_advanced("index", out, dims, index, src, a.mode & 1, false, DeviceErrorOp::index);
}

// self[index] <- values (mode & 2: self[index] += values): (N, rest...) of
// self's dtype. The front end hands a scalar value over as a host tensor
// expanded to the rows: its one element becomes a fill (no copy); other host
// values are copied to the device.
void index_put_kernel(const Tensor& self, int64_t dims, const Tensor& index, const Tensor& values,
                      const KernelArgs& a) {
  const bool wrap = a.mode & 1;
  if (a.mode & 2) {  // accumulate
    launch_advanced_add("index_put_", values.device() == self.device() ? values : values.to(self.device()), dims,
                        index, self, wrap);
    return;
  }
  if (values.device() != self.device()) {
    bool one_value = values.numel() > 0;
    for (int64_t d = 0; d < values.dim(); ++d) one_value &= values.size(d) == 1 || values.stride(d) == 0;
    if (one_value && values.is_cpu()) {
      uint64_t bits = 0;
      std::memcpy(&bits, values.data_ptr(), values.element_size());  // little-endian: the low bytes
      launch_advanced("index_put_", values, dims, index, self, wrap, true, DeviceErrorOp::index_put, true, bits);
      return;
    }
    launch_advanced("index_put_", values.to(self.device()), dims, index, self, wrap, true, DeviceErrorOp::index_put);
    return;
  }
  launch_advanced("index_put_", values, dims, index, self, wrap, true, DeviceErrorOp::index_put);
}

// out: src's shape with size N at dim; index: (N,) int64 in [0, src.size(dim)).
void index_select_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                         const KernelArgs&) {
  launch_advanced("index_select", out.movedim(dim, 0), int64_t(1) << dim, index.unsqueeze(0), src, false, false,
                  DeviceErrorOp::index_select);
}

// ---- nonzero -------------------------------------------------------------------------

/// counts[tile] = nonzeros of the tile (one block per tile).
__global__ void __launch_bounds__(kNonzeroThreads)
    nonzero_count_kernel(const NonzeroParams p, const char* in, int64_t* counts) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kNonzeroTile;
  int total = 0;
  for (int i = 0; i < kNonzeroItems; ++i) {
    const int64_t e = base + i * kNonzeroThreads + threadIdx.x;
    total += __syncthreads_count(e < p.numel && nonzero_at(p, in, e));
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

constexpr int kScanThreads = 1024;

/// In place: data[0..n) becomes its exclusive prefix sum, data[n] the total.
/// One block walks the array in chunks of kScanThreads (n is the number of
/// tiles: 2^31 elements make 2^20 of them, 1024 chunks).
__global__ void __launch_bounds__(kScanThreads) exclusive_scan_kernel(int64_t* data, int64_t n) {
  __shared__ int64_t warp_sums[kScanThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int64_t carry = 0;
  for (int64_t base = 0; base < n; base += kScanThreads) {
    const int64_t i = base + threadIdx.x;
    const int64_t v = i < n ? data[i] : 0;
    int64_t x = v;  // inclusive scan within the warp
    for (int o = 1; o < 32; o <<= 1) {
      const int64_t y = __shfl_up_sync(0xffffffffu, x, o);
      if (lane >= o) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
      int64_t w = warp_sums[lane];
      for (int o = 1; o < 32; o <<= 1) {
        const int64_t y = __shfl_up_sync(0xffffffffu, w, o);
        if (lane >= o) w += y;
      }
      warp_sums[lane] = w;
    }
    __syncthreads();
    if (i < n) data[i] = carry + (warp > 0 ? warp_sums[warp - 1] : 0) + x - v;
    carry += warp_sums[kScanThreads / 32 - 1];
    __syncthreads();  // warp_sums is rewritten by the next chunk
  }
  if (threadIdx.x == 0) data[n] = carry;
}

/// Writes the coordinates of the tile's nonzeros from its prefix offset, in
/// element order: rounds of kNonzeroThreads elements, ranked by ballots.
__global__ void __launch_bounds__(kNonzeroThreads)
    nonzero_write_kernel(const NonzeroParams p, const char* in, const int64_t* offsets, int64_t* out) {
  __shared__ int warp_counts[kNonzeroThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kNonzeroTile;
  int64_t written = offsets[blockIdx.x];
  for (int i = 0; i < kNonzeroItems; ++i) {
    const int64_t e = base + i * kNonzeroThreads + threadIdx.x;
    const bool f = e < p.numel && nonzero_at(p, in, e);
    const unsigned int ballot = __ballot_sync(0xffffffffu, f);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    int before = 0, round = 0;
    for (int w = 0; w < kNonzeroThreads / 32; ++w) {
      const int c = warp_counts[w];
      before += w < warp ? c : 0;
      round += c;
    }
    if (f) {
      const int64_t rank = written + before + __popc(ballot & ((1u << lane) - 1u));
      nonzero_coords(p, e, out + rank * p.nd);
    }
    written += round;
    __syncthreads();  // warp_counts is rewritten by the next round
  }
}

// in: any shape and dtype -> (n, in.dim()) int64 coordinates in row-major order.
// The only synchronising kernel launcher here: the output's size is the count.
Tensor nonzero_kernel(const Tensor& in) {
  const NonzeroParams p = make_nonzero_params(in);
  const int64_t nd = in.dim();
  if (p.numel == 0) {
    const int64_t shape[2] = {0, nd};
    return brisk::detail::make_tensor(IntArrayRef(shape, 2), {}, kInt64, in.device());
  }
  const int dev = in.device().index;
  DeviceGuard g(dev);
  cudaStream_t s = current_stream_handle(dev);
  const int64_t tiles = ceil_div(p.numel, kNonzeroTile);
  BRISK_CHECK(tiles <= 0x7fffffff, "nonzero", "on cuda, tensors of up to ", 0x7fffffff * kNonzeroTile,
              " elements are supported, got ", p.numel);
  Tensor counts = empty({tiles + 1}, TensorOptions(kInt64).device(in.device()));
  auto* cp = static_cast<int64_t*>(counts.data_ptr());
  const char* ip = static_cast<const char*>(in.data_ptr());
  nonzero_count_kernel<<<static_cast<unsigned int>(tiles), kNonzeroThreads, 0, s>>>(p, ip, cp);
  check_launch("nonzero");
  exclusive_scan_kernel<<<1, kScanThreads, 0, s>>>(cp, tiles);
  check_launch("nonzero");
  int64_t total = 0;
  BRISK_CUDA_CHECK(cudaMemcpyAsync(&total, cp + tiles, sizeof(int64_t), cudaMemcpyDeviceToHost, s), "nonzero");
  BRISK_CUDA_CHECK(cudaStreamSynchronize(s), "nonzero");
  check_device_errors(dev);
  const int64_t shape[2] = {total, nd};
  Tensor out = brisk::detail::make_tensor(IntArrayRef(shape, 2), {}, kInt64, in.device());
  if (total == 0 || nd == 0) return out;
  nonzero_write_kernel<<<static_cast<unsigned int>(tiles), kNonzeroThreads, 0, s>>>(
      p, ip, cp, static_cast<int64_t*>(out.data_ptr()));
  check_launch("nonzero");
  return out;
}

}  // namespace

void register_index_kernels() {
  register_kernel<OpId::index>(kCUDA, index_kernel);
  register_kernel<OpId::index_put>(kCUDA, index_put_kernel);
  register_kernel<OpId::index_select>(kCUDA, index_select_kernel);
  register_kernel<OpId::gather>(kCUDA, gather_kernel);
  register_kernel<OpId::scatter>(kCUDA, scatter_kernel);
  register_kernel<OpId::scatter_add>(kCUDA, scatter_add_kernel);
  register_kernel<OpId::index_add>(kCUDA, index_add_kernel);
  register_kernel<OpId::nonzero>(kCUDA, nonzero_kernel);
}

}  // namespace brisk::cuda::detail
