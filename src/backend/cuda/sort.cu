// CUDA kernels of sort and topk along one dim (SortFn).
//
// Order as on the CPU: NaN is larger than every number and equal values keep
// their input order (a stable sort in both directions), so ties resolve by
// index. Every dtype sorts as an order-preserving unsigned key (Note [Sort
// keys] in reduce_plans.h). Rows of up to plans::kBlockSortMax elements are
// sorted in shared memory by a bitonic network over (key, index) pairs;
// longer rows by cub's stable radix sort, first by key over the whole
// tensor, then by row (Note [CUDA sort layout]). topk keeps the first k of
// the sorted row (always sorted, which `sorted=false` allows).
#include <cub/device/device_radix_sort.cuh>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/reduce_device.cuh"
#include "backend/cuda/reduce_plans.h"
#include "brisk/cuda.h"
#include "brisk/ops.h"
#include "core/dispatch.h"

namespace brisk::cuda::detail {
namespace {

constexpr int kMaxSortThreads = 1024;

// Strides of the sorted dim and the indexer of the other dims (in, values, indices).
struct SortGeometry {
  plans::RowIndexer ix;
  int64_t s_in = 1, s_val = 1, s_idx = 1;
  int64_t rows = 0, n = 0, k = 0;
};

// One block sorts rows_per_block rows, each padded to `pad` elements.
template <class T>
__global__ void __launch_bounds__(kMaxSortThreads)
    block_sort_kernel(const T* __restrict__ in, T* __restrict__ values, int64_t* __restrict__ indices, SortGeometry g,
                      plans::SortLaunch l, bool descending) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t P = l.pad, total = l.rows_per_block * P;
  uint64_t* keys = reinterpret_cast<uint64_t*>(smem);
  uint32_t* idx = reinterpret_cast<uint32_t*>(keys + total);
  for (int64_t b = blockIdx.x; b < l.blocks; b += gridDim.x) {
    const int64_t row0 = b * l.rows_per_block;
    for (int64_t e = threadIdx.x; e < total; e += blockDim.x) {
      const int64_t row = row0 + e / P, j = e & (P - 1);
      if (row < g.rows && j < g.n) {
        int64_t off[3];
        plans::row_offsets(g.ix, row, off);
        keys[e] = plans::sort_key<T>(in[off[0] + j * g.s_in], descending);
        idx[e] = static_cast<uint32_t>(j);
      } else {  // padding sorts last
        keys[e] = ~0ull;
        idx[e] = 0xffffffffu;
      }
    }
    __syncthreads();
    for (int64_t kk = 2; kk <= P; kk <<= 1) {
      for (int64_t j = kk >> 1; j > 0; j >>= 1) {
        for (int64_t q = threadIdx.x; q < total / 2; q += blockDim.x) {
          const int64_t i = plans::bitonic_lo(q, j);
          const int64_t p = i + j;
          const uint64_t ki = keys[i], kp = keys[p];
          const uint32_t ii = idx[i], ip = idx[p];
          const bool greater = ki > kp || (ki == kp && ii > ip);
          if (greater == plans::bitonic_ascending(i, kk, P)) {
            keys[i] = kp;
            keys[p] = ki;
            idx[i] = ip;
            idx[p] = ii;
          }
        }
        __syncthreads();
      }
    }
    for (int64_t e = threadIdx.x; e < total; e += blockDim.x) {
      const int64_t row = row0 + e / P, j = e & (P - 1);
      if (row < g.rows && j < g.k) {
        int64_t off[3];
        plans::row_offsets(g.ix, row, off);
        const int64_t src = idx[e];
        values[off[1] + j * g.s_val] = in[off[0] + src * g.s_in];
        indices[off[2] + j * g.s_idx] = src;
      }
    }
    __syncthreads();
  }
}

// Radix path, step 1: keys and flat positions (row * n + j) of every element.
template <class T>
__global__ void make_keys_kernel(const T* __restrict__ in, SortGeometry g, bool descending, uint64_t* __restrict__ keys,
                                 int64_t* __restrict__ pos) {
  const int64_t total = g.rows * g.n;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = e / g.n, j = e - row * g.n;
    int64_t off[3];
    plans::row_offsets(g.ix, row, off);
    keys[e] = plans::sort_key<T>(in[off[0] + j * g.s_in], descending);
    pos[e] = e;
  }
}

// Radix path, step 2 (several rows): the row of each element, sorted by key.
__global__ void row_keys_kernel(const int64_t* __restrict__ pos, int64_t total, int64_t n,
                                uint64_t* __restrict__ keys) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x)
    keys[e] = static_cast<uint64_t>(pos[e] / n);
}

// Radix path, last step: position e of the result holds flat position pos[e].
template <class T>
__global__ void write_sorted_kernel(const T* __restrict__ in, T* __restrict__ values, int64_t* __restrict__ indices,
                                    SortGeometry g, const int64_t* __restrict__ pos) {
  const int64_t total = g.rows * g.n;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = e / g.n, j = e - row * g.n;
    if (j >= g.k) continue;
    const int64_t src = pos[e] - row * g.n;  // the sort by row keeps each element in its row
    int64_t off[3];
    plans::row_offsets(g.ix, row, off);
    values[off[1] + j * g.s_val] = in[off[0] + src * g.s_in];
    indices[off[2] + j * g.s_idx] = src;
  }
}

unsigned elementwise_grid(int64_t total) {
  return static_cast<unsigned>(plans::max64(1, plans::min64(plans::div_up(total, 256), int64_t(sm_count()) * 32)));
}

int bit_width(uint64_t v) {
  int b = 0;
  while (v) {
    ++b;
    v >>= 1;
  }
  return b;
}

// One stable radix sort of (keys, values) pairs over bits [0, bits).
void radix_sort_pairs(const uint64_t* keys_in, uint64_t* keys_out, const int64_t* vals_in, int64_t* vals_out,
                      int64_t total, int bits, Device dev, cudaStream_t stream, const char* name) {
  size_t temp_bytes = 0;
  BRISK_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys_out, vals_in, vals_out, total,
                                                   0, bits, stream),
                   name);
  Tensor temp = empty({static_cast<int64_t>(temp_bytes) + 1}, TensorOptions(kUInt8).device(dev));
  BRISK_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), temp_bytes, keys_in, keys_out, vals_in, vals_out,
                                                   total, 0, bits, stream),
                   name);
}

template <class T>
void sort_rows(const Tensor& values, const Tensor& indices, const Tensor& in_arg, int64_t dim, int64_t k,
               bool descending, const char* name) {
  Tensor in = in_arg;
  SortGeometry g;
  g.n = in.size(dim);
  g.k = k;
  if (g.n == 0 || k == 0 || in.numel() == 0) return;
  g.rows = in.numel() / g.n;
  auto build = [&]() {
    const int64_t* strides[3] = {in.strides().data(), values.strides().data(), indices.strides().data()};
    return plans::make_row_indexer(in.sizes().data(), strides, 3, in.dim(), dim, g.ix);
  };
  if (!build()) {
    in = in.contiguous();  // too many dims that do not merge: one dense copy
    BRISK_CHECK(build(), name, "CUDA kernel supports at most ", plans::kMaxRowDims, " dims besides the sorted one");
  }
  g.s_in = in.stride(dim);
  g.s_val = values.stride(dim);
  g.s_idx = indices.stride(dim);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* vo = static_cast<T*>(values.data_ptr());
  int64_t* io = static_cast<int64_t*>(indices.data_ptr());
  cudaStream_t stream = current_stream_handle();
  const plans::SortLaunch l = plans::plan_sort(g.rows, g.n, sm_count());
  if (l.block_sort) {
    const unsigned grid = static_cast<unsigned>(plans::min64(l.blocks, rsk::kMaxGridX));
    block_sort_kernel<T><<<grid, l.threads, static_cast<size_t>(l.smem_bytes), stream>>>(x, vo, io, g, l, descending);
    check_launch(name);
    return;
  }
  const int64_t total = g.rows * g.n;
  const Device dev = in.device();
  Tensor buf = empty({4 * total}, TensorOptions(kInt64).device(dev));
  uint64_t* k0 = reinterpret_cast<uint64_t*>(buf.data_ptr());
  uint64_t* k1 = k0 + total;
  int64_t* v0 = reinterpret_cast<int64_t*>(k1 + total);
  int64_t* v1 = v0 + total;
  const unsigned grid = elementwise_grid(total);
  make_keys_kernel<T><<<grid, 256, 0, stream>>>(x, g, descending, k0, v0);
  check_launch(name);
  radix_sort_pairs(k0, k1, v0, v1, total, plans::SortKey<T>::bits, dev, stream, name);
  const int64_t* sorted = v1;
  if (g.rows > 1) {  // stably by row: each row's elements stay in key order
    row_keys_kernel<<<grid, 256, 0, stream>>>(v1, total, g.n, k0);
    check_launch(name);
    radix_sort_pairs(k0, k1, v1, v0, total, bit_width(static_cast<uint64_t>(g.rows - 1)), dev, stream, name);
    sorted = v0;
  }
  write_sorted_kernel<T><<<grid, 256, 0, stream>>>(x, vo, io, g, sorted);
  check_launch(name);
}

void check_outputs(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim, int64_t k,
                   const char* name) {
  BRISK_CHECK(values.dtype() == in.dtype() && indices.dtype() == kInt64 && values.dim() == in.dim() &&
                  indices.dim() == in.dim() && dim >= 0 && dim < in.dim(),
              name, "CUDA kernel: unexpected outputs");
  for (int64_t d = 0; d < in.dim(); ++d) {
    const int64_t want = d == dim ? k : in.size(d);
    BRISK_CHECK(values.size(d) == want && indices.size(d) == want, name, "CUDA kernel: unexpected output shape");
  }
}

// sort: mode = descending.
void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim, const KernelArgs& a) {
  if (in.numel() == 0) return;
  check_outputs(values, indices, in, dim, in.size(dim), "sort");
  DeviceGuard guard(in.device());
  BRISK_DISPATCH_ALL(in.dtype(), "sort",
                     [&] { sort_rows<scalar_t>(values, indices, in, dim, in.size(dim), a.mode != 0, "sort"); });
}

// topk: i0 = k, mode bit 0 = largest, bit 1 = sorted (the result is always sorted).
void topk_kernel(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim, const KernelArgs& a) {
  if (in.numel() == 0 || a.i0 == 0) return;
  BRISK_CHECK(a.i0 > 0 && a.i0 <= in.size(dim), "topk", "k out of range");
  check_outputs(values, indices, in, dim, a.i0, "topk");
  DeviceGuard guard(in.device());
  BRISK_DISPATCH_ALL(in.dtype(), "topk",
                     [&] { sort_rows<scalar_t>(values, indices, in, dim, a.i0, (a.mode & 1) != 0, "topk"); });
}

}  // namespace

void register_sort_kernels() {
  register_kernel<OpId::sort>(kCUDA, sort_kernel);
  register_kernel<OpId::topk>(kCUDA, topk_kernel);
}

}  // namespace brisk::cuda::detail
