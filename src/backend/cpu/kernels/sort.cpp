// CPU kernels of sort and topk along one dim, parallel over rows.
//
// Order: NaN is larger than every number (PyTorch), equal keys keep their
// input order (stable, in both directions), so ties resolve by index. Each row
// is gathered into (key, index) pairs with NaNs set apart, so the sort itself
// compares plain numbers.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

// Offsets (in elements) of row r in up to three tensors that share the shape
// of every dim but `dim` (the row dim). Rows are numbered row-major over the
// other dims.
struct RowWalker {
  DimVector sizes, strides[3];

  RowWalker(const Tensor* ts[3], int64_t dim) {
    const Tensor& ref = *ts[0];
    for (int64_t d = 0; d < ref.dim(); ++d) {
      if (d == dim) continue;
      sizes.push_back(ref.size(d));
      for (int k = 0; k < 3; ++k) strides[k].push_back(ts[k]->stride(d));
    }
  }
  void offsets(int64_t r, int64_t off[3]) const {
    off[0] = off[1] = off[2] = 0;
    for (size_t d = sizes.size(); d-- > 0;) {
      const int64_t i = r % sizes[d];
      r /= sizes[d];
      for (int k = 0; k < 3; ++k) off[k] += i * strides[k][d];
    }
  }
};

template <class K>
struct Item {
  K key;
  int64_t index;
};

// Key type: 16-bit floats sort as float, everything else as itself.
template <class T>
using key_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <class K>
inline bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) return v != v;
  else return false;
}

// Puts the best `k` items of [b, e) first (sorted when `sorted`), best = smallest
// under `cmp`, a strict total order (ties broken by index).
template <class K, class Cmp>
void select_best(Item<K>* b, Item<K>* e, int64_t k, bool sorted, const Cmp& cmp) {
  const int64_t n = e - b;
  if (k <= 0) return;
  if (k < n) std::nth_element(b, b + (k - 1), e, cmp);
  if (sorted) std::sort(b, b + std::min(k, n), cmp);
}

// Orders one row of n items (already gathered) so that its first k are the
// result: NaNs first when they rank best (descending / largest), else last,
// in index order either way.
template <class K>
void order_row(std::vector<Item<K>>& buf, int64_t n, int64_t n_nan, bool nan_first, bool descending, int64_t k,
               bool sorted) {
  Item<K>* nums = buf.data() + (nan_first ? n_nan : 0);
  Item<K>* nums_end = nums + (n - n_nan);
  int64_t want = nan_first ? k - n_nan : std::min(k, n - n_nan);
  if (descending)
    select_best(nums, nums_end, want, sorted, [](const Item<K>& a, const Item<K>& b) {
      return a.key > b.key || (a.key == b.key && a.index < b.index);
    });
  else
    select_best(nums, nums_end, want, sorted, [](const Item<K>& a, const Item<K>& b) {
      return a.key < b.key || (a.key == b.key && a.index < b.index);
    });
}

// `a` ranks before `b`: by key (NaN largest), ties by index.
template <class K>
inline bool ranks_before(const Item<K>& a, const Item<K>& b, bool largest) {
  const bool an = is_nan(a.key), bn = is_nan(b.key);
  if (an || bn) {
    if (an && bn) return a.index < b.index;
    return largest ? an : bn;  // NaN first when larger is better, else last
  }
  if (a.key != b.key) return largest ? a.key > b.key : a.key < b.key;
  return a.index < b.index;
}

// topk for k much smaller than the row: one pass keeping the best k in a
// heap whose front is the worst kept item, without gathering the row.
// Leaves the result in buf[0, k), best first when `sorted`.
template <class T, class K>
void topk_stream(const T* src, int64_t s_in, int64_t n, int64_t k, bool largest, bool sorted,
                 std::vector<Item<K>>& buf) {
  auto before = [largest](const Item<K>& a, const Item<K>& b) { return ranks_before(a, b, largest); };
  buf.resize(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) buf[static_cast<size_t>(j)] = Item<K>{static_cast<K>(src[j * s_in]), j};
  std::make_heap(buf.begin(), buf.end(), before);
  for (int64_t j = k; j < n; ++j) {
    const Item<K> it{static_cast<K>(src[j * s_in]), j};
    if (!before(it, buf.front())) continue;  // later index: must rank strictly before the worst kept
    std::pop_heap(buf.begin(), buf.end(), before);
    buf.back() = it;
    std::push_heap(buf.begin(), buf.end(), before);
  }
  if (sorted) std::sort_heap(buf.begin(), buf.end(), before);
}

// Writes the first k items of a row to the outputs.
template <class T, class K>
void write_row(const std::vector<Item<K>>& buf, int64_t k, const T* src, int64_t s_in, T* vo, int64_t s_val,
               int64_t* io, int64_t s_idx) {
  for (int64_t j = 0; j < k; ++j) {
    const Item<K>& it = buf[static_cast<size_t>(j)];
    // a NaN is copied from the input so its bits survive
    vo[j * s_val] = is_nan(it.key) ? src[it.index * s_in] : static_cast<T>(it.key);
    io[j * s_idx] = it.index;
  }
}

// values/indices: the input's shape with `k` along dim (k = size for sort).
template <class T>
void sort_rows(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim, int64_t k,
               bool descending, bool sorted) {
  using K = key_t<T>;
  const int64_t n = in.size(dim);
  if (n == 0 || k == 0 || in.numel() == 0) return;
  const int64_t rows = in.numel() / n;
  const Tensor* ts[3] = {&in, &values, &indices};
  const RowWalker walk(ts, dim);
  const int64_t s_in = in.stride(dim), s_val = values.stride(dim), s_idx = indices.stride(dim);
  const T* in_p = static_cast<const T*>(in.data_ptr());
  T* val_p = static_cast<T*>(values.data_ptr());
  int64_t* idx_p = static_cast<int64_t*>(indices.data_ptr());
  // NaN ranks best when larger is better.
  const bool nan_first = descending;

  // small k: a heap pass beats gathering and selecting the whole row
  const bool stream = k * 16 <= n;

  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / n), [&](int64_t r0, int64_t r1) {
    std::vector<Item<K>> buf(static_cast<size_t>(stream ? k : n));
    std::vector<int64_t> nan_pos;
    for (int64_t r = r0; r < r1; ++r) {
      int64_t off[3];
      walk.offsets(r, off);
      const T* src = in_p + off[0];
      if (stream) {
        topk_stream(src, s_in, n, k, descending, sorted, buf);
        write_row(buf, k, src, s_in, val_p + off[1], s_val, idx_p + off[2], s_idx);
        continue;
      }
      // gather: numbers in order, NaN indices set aside
      int64_t m = 0;
      nan_pos.clear();
      for (int64_t j = 0; j < n; ++j) {
        const K v = static_cast<K>(src[j * s_in]);
        if (is_nan(v)) nan_pos.push_back(j);
        else buf[static_cast<size_t>(m++)] = Item<K>{v, j};
      }
      const int64_t n_nan = static_cast<int64_t>(nan_pos.size());
      if (n_nan > 0) {
        if (nan_first) std::move_backward(buf.begin(), buf.begin() + m, buf.begin() + n);
        Item<K>* dst = buf.data() + (nan_first ? 0 : m);
        for (int64_t t = 0; t < n_nan; ++t) dst[t] = Item<K>{static_cast<K>(src[nan_pos[t] * s_in]), nan_pos[t]};
      }
      order_row(buf, n, n_nan, nan_first, descending, k, sorted);
      write_row(buf, k, src, s_in, val_p + off[1], s_val, idx_p + off[2], s_idx);
    }
  });
}

// sort: mode = descending.
void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(in.dtype(), "sort", [&] {
    sort_rows<scalar_t>(values, indices, in, dim, in.size(dim), a.mode != 0, true);
  });
}

// topk: i0 = k, mode bit 0 = largest, bit 1 = sorted.
void topk_kernel(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(in.dtype(), "topk", [&] {
    sort_rows<scalar_t>(values, indices, in, dim, a.i0, (a.mode & 1) != 0, (a.mode & 2) != 0);
  });
}

}  // namespace

void register_sort_kernels() {
  register_kernel<OpId::sort>(kCPU, sort_kernel);
  register_kernel<OpId::topk>(kCPU, topk_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
