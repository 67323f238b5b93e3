// The foreach ops on CUDA (include/brisk/foreach.h; rows foreach_pointwise,
// foreach_norm and _amp_foreach_non_finite_check_and_unscale of the op table): one multi_tensor_apply kernel per dtype whose
// functor switches on the op (the switch is uniform across the launch), and
// a two-kernel norm (per-chunk partial sums, then one block per tensor).
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/float_io.cuh"
#include "backend/cuda/multi_tensor_apply.cuh"
#include "brisk/ops.h"
#include "kernels/math.h"
#include "core/dispatch.h"
#include "core/multi_tensor_plan.h"

namespace brisk::cuda::detail {

using ::brisk::multi_tensor::ForeachOp;
using ::brisk::multi_tensor::FusedAdamArgs;
using ::brisk::multi_tensor::FusedSgdArgs;
void register_optim_kernels();  // optim.cu

namespace {

// Foreach lists: 0 out, 1 x, 2 y, 3 z, and one per-tensor scalar; the norm
// reads one list. Functors take either metadata layout (multi_tensor_apply.cuh).
using mta::kIlp;

/// out[i] = fn(x[i], y[i], z[i]) for i < n, reading the first kIn inputs;
/// each thread keeps kIlp elements in flight.
template <int kIn, class S, class Fn>
__device__ __forceinline__ void map_chunk(S* out, const S* x, const S* y, const S* z, int n, const Fn& fn) {
  using IO = FloatIo<S>;
  using O = typename IO::opmath;
  const int step = int(blockDim.x) * kIlp;
  for (int base = int(threadIdx.x); base < n; base += step) {
    O a[kIlp], b[kIlp], c[kIlp];
#pragma unroll
    for (int k = 0; k < kIlp; ++k) {
      const int i = base + k * int(blockDim.x);
      a[k] = b[k] = c[k] = O(0);
      if (i < n) {
        if constexpr (kIn >= 1) a[k] = IO::load(x, i);
        if constexpr (kIn >= 2) b[k] = IO::load(y, i);
        if constexpr (kIn >= 3) c[k] = IO::load(z, i);
      }
    }
#pragma unroll
    for (int k = 0; k < kIlp; ++k) {
      const int i = base + k * int(blockDim.x);
      if (i < n) IO::store(out, i, fn(a[k], b[k], c[k]));
    }
  }
}

template <class S>
struct ForeachFunctor {
  ForeachOp op;
  bool per_tensor;
  double scalar;

  template <class M>
  __device__ void operator()(const M& m, int block) const {
    using O = typename FloatIo<S>::opmath;
    const mta::BlockWork w = mta::block_work(m, block);
    S* out = static_cast<S*>(m.addr[0][w.slot]) + w.begin;
    const S* x = static_cast<const S*>(m.addr[1][w.slot]);
    const S* y = static_cast<const S*>(m.addr[2][w.slot]);
    const S* z = static_cast<const S*>(m.addr[3][w.slot]);
    if (x) x += w.begin;
    if (y) y += w.begin;
    if (z) z += w.begin;
    const int n = int(w.end - w.begin);
    const O s = O(per_tensor ? m.scalars.scalar[0][w.slot] : scalar);
    switch (op) {
      case ForeachOp::AddScalar: return map_chunk<1>(out, x, y, z, n, [s](O a, O, O) { return a + s; });
      case ForeachOp::AddList: return map_chunk<2>(out, x, y, z, n, [s](O a, O b, O) { return a + s * b; });
      case ForeachOp::MulScalar: return map_chunk<1>(out, x, y, z, n, [s](O a, O, O) { return a * s; });
      case ForeachOp::MulList: return map_chunk<2>(out, x, y, z, n, [](O a, O b, O) { return a * b; });
      case ForeachOp::DivScalar: return map_chunk<1>(out, x, y, z, n, [s](O a, O, O) { return a / s; });
      case ForeachOp::Addcmul:
        return map_chunk<3>(out, x, y, z, n, [s](O a, O b, O c) { return a + s * b * c; });
      case ForeachOp::Addcdiv:
        return map_chunk<3>(out, x, y, z, n, [s](O a, O b, O c) { return a + s * (b / c); });
      case ForeachOp::Lerp:
        return map_chunk<2>(out, x, y, z, n, [s](O a, O b, O) { return math::lerp(a, b, s); });
      case ForeachOp::Maximum:
        return map_chunk<2>(out, x, y, z, n, [](O a, O b, O) { return math::maximum(a, b); });
      case ForeachOp::Sqrt: return map_chunk<1>(out, x, y, z, n, [](O a, O, O) { return ::sqrt(a); });
      case ForeachOp::Zero: return map_chunk<0>(out, x, y, z, n, [](O, O, O) { return O(0); });
    }
  }
};

// ---- check and unscale (GradScaler) -------------------------------------------------

/// PyTorch's _amp_foreach_non_finite_check_and_unscale_ on a chunk: each
/// element read once, *found_inf = 1 where it is inf or NaN (every writer
/// writes the same 1, so the race is benign), and the element times
/// inv_scale in its math type (float for 16-bit types, as on the CPU). A
/// null inv_scale only checks (nothing written). Both scalars are read on
/// the device: no host read, so a GradScaler step stays sync-free.
template <class S>
struct AmpUnscaleFunctor {
  float* found_inf;
  const float* inv_scale;

  template <class M>
  __device__ void operator()(const M& m, int block) const {
    using IO = FloatIo<S>;
    using O = typename IO::opmath;
    const mta::BlockWork w = mta::block_work(m, block);
    S* x = static_cast<S*>(m.addr[0][w.slot]) + w.begin;
    const int n = int(w.end - w.begin);
    bool bad = false;
    if (inv_scale == nullptr) {
      for (int i = int(threadIdx.x); i < n; i += int(blockDim.x)) {
        const O v = IO::load(x, i);
        bad |= !(v - v == O(0));  // inf - inf and NaN - NaN are NaN
      }
    } else {
      const O s = O(*inv_scale);
      map_chunk<1>(x, x, static_cast<const S*>(nullptr), static_cast<const S*>(nullptr), n, [&](O a, O, O) {
        bad |= !(a - a == O(0));
        return a * s;
      });
    }
    if (bad) *found_inf = 1.0f;
  }
};

// ---- norm -------------------------------------------------------------------------

enum class NormMode : int { Abs, Square, MaxAbs };

/// NaN-propagating max of non-negative values (the CPU's rule), or a sum.
struct NormCombine {
  NormMode mode;
  __device__ __forceinline__ double operator()(double a, double b) const {
    if (mode != NormMode::MaxAbs) return a + b;
    return (b > a || b != b) ? b : a;
  }
};

/// partial[first_block + block] = the chunk's sum of |x| or x^2, or its max |x|.
template <class S>
struct NormChunkFunctor {
  NormMode mode;
  double* partial;
  int64_t first_block;

  template <class M>
  __device__ void operator()(const M& m, int block) const {
    using IO = FloatIo<S>;
    const mta::BlockWork w = mta::block_work(m, block);
    const S* x = static_cast<const S*>(m.addr[0][w.slot]) + w.begin;
    const int n = int(w.end - w.begin);
    const NormCombine comb{mode};
    double acc = 0.0;
    for (int i = int(threadIdx.x); i < n; i += int(blockDim.x)) {
      const double v = double(IO::load(x, i));
      acc = comb(acc, mode == NormMode::Square ? v * v : ::fabs(v));
    }
    acc = mta::block_reduce(acc, comb);
    if (threadIdx.x == 0) partial[first_block + block] = acc;
  }
};

/// The partial ranges of the tensors of one finalize launch, as its
/// parameter: kTensors of them (a 4 KB or a 32 KB layout, as for the chunks).
template <int kParamBytes>
struct NormRanges {
  static constexpr int kTensors = (kParamBytes - mta::kArgsReserve) / 16;
  int64_t base[kTensors];   ///< first partial of each tensor
  int64_t count[kTensors];  ///< its number of partials (chunks)
};
constexpr int kFinalizeThreads = 256;

/// out[first + t] = the combined partials of tensor t of this launch (sqrt for ord 2).
template <class S, class R>
__global__ void __launch_bounds__(kFinalizeThreads)
    norm_finalize_kernel(const __grid_constant__ R r, const double* partial, S* out, int64_t first,
                         NormMode mode) {
  const int t = int(blockIdx.x);
  const NormCombine comb{mode};
  double acc = 0.0;
  for (int64_t j = threadIdx.x; j < r.count[t]; j += blockDim.x) acc = comb(acc, partial[r.base[t] + j]);
  acc = mta::block_reduce(acc, comb);
  if (threadIdx.x == 0) {
    if (mode == NormMode::Square) acc = ::sqrt(acc);
    FloatIo<S>::store(out, first + t, typename FloatIo<S>::opmath(acc));
  }
}

template <class F>
void dispatch_float(ScalarType dt, const F& f) {
  switch (dt) {
    case kFloat: return f(float{});
    case kDouble: return f(double{});
    case kHalf: return f(__half{});
    case kBFloat16: return f(__nv_bfloat16{});
    default: BRISK_FAIL("foreach", "no CUDA multi-tensor kernel for dtype ", dt);
  }
}

std::vector<void*> addresses(const TensorList& l) {
  std::vector<void*> r(l.size());
  for (size_t i = 0; i < l.size(); ++i) r[i] = l[i].data_ptr();
  return r;
}

}  // namespace

void foreach_cuda(ForeachOp op, const TensorList& out, const TensorList* x, const TensorList* y, const TensorList* z,
                  double scalar, const std::vector<double>* scalars) {
  if (out.empty()) return;
  DeviceGuard guard(out[0].device());
  std::vector<int64_t> numels(out.size());
  for (size_t i = 0; i < out.size(); ++i) numels[i] = out[i].numel();
  const std::vector<void*> po = addresses(out);
  const std::vector<void*> px = x ? addresses(*x) : std::vector<void*>{};
  const std::vector<void*> py = y ? addresses(*y) : std::vector<void*>{};
  const std::vector<void*> pz = z ? addresses(*z) : std::vector<void*>{};
  void* const* lists[4] = {po.data(), x ? px.data() : nullptr, y ? py.data() : nullptr, z ? pz.data() : nullptr};
  const double* per_tensor[1] = {scalars ? scalars->data() : nullptr};
  dispatch_float(out[0].dtype(), [&](auto tag) {
    using S = decltype(tag);
    const ForeachFunctor<S> f{op, scalars != nullptr, scalar};
    mta::launch<4, 1>("foreach", numels, lists, per_tensor, [&](const mta::Launch&) { return f; });
  });
}

TensorList foreach_norm_cuda(const TensorList& self, double ord) {
  const size_t n = self.size();
  if (n == 0) return {};
  const Device dev = self[0].device();
  DeviceGuard guard(dev);
  const NormMode mode = ord == 1 ? NormMode::Abs : ord == 2 ? NormMode::Square : NormMode::MaxAbs;
  std::vector<int64_t> numels(n), base(n);
  int64_t total = 0;  // chunks of all tensors: one partial each
  for (size_t i = 0; i < n; ++i) {
    numels[i] = self[i].numel();
    base[i] = total;
    total += mta::num_chunks(numels[i]);
  }
  Tensor partial = empty({std::max<int64_t>(total, 1)}, TensorOptions(kDouble).device(dev));
  Tensor result = empty({int64_t(n)}, TensorOptions(self[0].dtype()).device(dev));
  const std::vector<void*> px = addresses(self);
  void* const* lists[1] = {px.data()};
  cudaStream_t stream = current_stream_handle();
  dispatch_float(self[0].dtype(), [&](auto tag) {
    using S = decltype(tag);
    double* pp = static_cast<double*>(partial.data_ptr());
    mta::launch<1, 0>("foreach_norm", numels, lists, nullptr, [&](const mta::Launch& l) {
      return NormChunkFunctor<S>{mode, pp, l.first_block};
    });
    S* out = static_cast<S*>(result.data_ptr());
    auto finalize = [&](auto ranges_tag) {
      using R = typename decltype(ranges_tag)::type;
      auto ranges = std::make_unique<R>();
      for (size_t first = 0; first < n; first += R::kTensors) {
        const size_t cnt = std::min<size_t>(R::kTensors, n - first);
        for (size_t t = 0; t < cnt; ++t) {
          ranges->base[t] = base[first + t];
          ranges->count[t] = mta::num_chunks(numels[first + t]);
        }
        norm_finalize_kernel<S, R><<<unsigned(cnt), kFinalizeThreads, 0, stream>>>(*ranges, pp, out, int64_t(first),
                                                                                   mode);
        check_launch("foreach_norm");
      }
    };
    using SmallRanges = NormRanges<mta::kClassicParamBytes>;
    if (n <= size_t(mta::kMaxSmallLaunches * SmallRanges::kTensors))
      finalize(std::type_identity<SmallRanges>{});
    else
      mta::check_param_support("foreach_norm"), finalize(std::type_identity<NormRanges<mta::kParamBytes>>{});
  });
  TensorList r;
  r.reserve(n);
  for (size_t i = 0; i < n; ++i) r.push_back(result.select(0, int64_t(i)));
  return r;
}

void amp_unscale_cuda(const TensorList& self, const Tensor& found_inf, const Tensor& inv_scale) {
  if (self.empty()) return;
  DeviceGuard guard(self[0].device());
  std::vector<int64_t> numels(self.size());
  for (size_t i = 0; i < self.size(); ++i) numels[i] = self[i].numel();
  const std::vector<void*> px = addresses(self);
  void* const* lists[1] = {px.data()};
  float* found = static_cast<float*>(found_inf.data_ptr());
  const float* inv = inv_scale.defined() ? static_cast<const float*>(inv_scale.data_ptr()) : nullptr;
  dispatch_float(self[0].dtype(), [&](auto tag) {
    using S = decltype(tag);
    const AmpUnscaleFunctor<S> f{found, inv};
    mta::launch<1, 0>("_amp_foreach_non_finite_check_and_unscale_", numels, lists, nullptr,
                      [&](const mta::Launch&) { return f; });
  });
}

namespace {
void foreach_kernel(ForeachOp op, const TensorList& out, const TensorList* x, const TensorList* y,
                    const TensorList* z, const Scalar& scalar, const std::vector<double>* scalars) {
  foreach_cuda(op, out, x, y, z, scalar.to_double(), scalars);
}
}  // namespace

void register_multi_tensor_kernels() {
  const uint32_t fl = dtype_mask({kFloat, kDouble, kHalf, kBFloat16});
  register_kernel<OpId::foreach_pointwise>(kCUDA, foreach_kernel, fl);
  register_kernel<OpId::foreach_norm>(kCUDA, foreach_norm_cuda, fl);
  register_kernel<OpId::amp_unscale>(kCUDA, amp_unscale_cuda, fl);
  register_optim_kernels();
}

}  // namespace brisk::cuda::detail
