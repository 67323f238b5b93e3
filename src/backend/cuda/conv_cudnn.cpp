// Convolutions on CUDA through cuDNN's convolution API (cudnnConvolutionForward,
// cudnnConvolutionBackwardData, cudnnConvolutionBackwardFilter; the legacy
// API, still part of cuDNN 9). See docs/design/cuda_conv.md.
//
// Every call is one direct 2-D convolution of core/conv_plan.h (conv1d has
// H = KH = 1; a transposed convolution runs as its dual, the front end swaps
// the passes). For each call:
//   1. Activations go to cuDNN in the geometry's layout, NCHW or NHWC
//      (channels_last), described as packed tensors of that format; a tensor
//      already in it is used in place, others are converted once. The weight
//      goes in the same layout (cuDNN's filter format must match), which for
//      the common case (an NCHW model with OIHW weights, or a channels_last
//      model with channels_last weights) is a no-op.
//   2. Padding cuDNN cannot express is fitted (Note [cuDNN padding]).
//   3. The batch is split so that no tensor of one call has more than
//      INT32_MAX elements (cuDNN indexes with 32-bit integers); the weight
//      gradient accumulates over the chunks (beta = 1).
//   4. The descriptors and the algorithm of each pass come from a cache keyed
//      by the problem (Note [cuDNN plan cache]); the workspace is a brisk
//      device tensor from the caching allocator, on the current stream.
//
// Note [cuDNN math]
// float32: CUDNN_FMA_MATH unless brisk::cuda::allow_tf32() (then
// CUDNN_DEFAULT_MATH, which lets cuDNN use TF32 tensor cores), as PyTorch's
// cudnn.allow_tf32 (but off by default: brisk's float32 is exact unless asked).
// An algorithm is taken only with FMA math then; one reported as tensor-op math
// is skipped. float16/bfloat16: tensor-op math with float accumulation
// (compute type float); float64: default math in double.
//
// Note [cuDNN padding]
// cuDNN pads symmetrically and sizes the output as floor((in + 2 pad - extent)
// / stride) + 1. brisk's geometry has a padding before and after each dim:
// "same" with an even kernel pads one more after, and the dual of a transposed
// convolution with output_padding >= stride has rows no window reads. Most
// problems still fit with pad = pad_before (the output formula gives the same
// size whenever the last window ends within stride - 1 rows of where the
// after-padding ends). The others get a copy of the input extended by zero
// rows (or cut) so that a symmetric padding fits (cudnn_pad_fit in
// conv_cudnn.h); the gradient of the input is cut back out of the gradient of
// the copy. PyTorch pads the input explicitly in the same cases.
//
// Note [cuDNN plan cache]
// One process-wide map from the problem (device, dtype, layout, math mode,
// benchmark mode, and every size) to an immutable descriptor set: the tensor
// and filter descriptors and one convolution descriptor per pass, whose math
// type is that of the pass's chosen algorithm. The algorithm of a pass is
// chosen at its first use under the cache's mutex:
//  - benchmark off (default): cudnnGet*Algorithm_v7's heuristic ranking, the
//    first algorithm that succeeds, has the right math and whose workspace
//    can be allocated now;
//  - benchmark on (brisk::cuda::set_cudnn_benchmark(true)): cudnnFind*Ex runs
//    every algorithm on the actual tensors (the weight gradient on a scratch
//    tensor) with the largest workspace that can be allocated, and the
//    fastest successful one is kept.
// The map holds at most 4096 sets and is cleared when full. Sets are shared
// pointers: a thread running a convolution keeps its set alive across a clear.
//
// Handles: one cudnnHandle_t per (device, thread), created on first use and
// bound to the thread's current stream (cudnnSetStream when it changed); a
// thread's handles go to a per-device pool when it exits and are never
// destroyed (as the cuBLAS handles in cublas.cpp).
#include "backend/cuda/conv_cudnn.h"

#include <array>
#include <memory>
#include <string>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cudnn_loader.h"
#include "backend/cuda/thread_handles.h"
#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "core/dispatch.h"

namespace brisk::cuda::detail {

CudnnConvStats& cudnn_conv_stats() {
  static CudnnConvStats* s = new CudnnConvStats;
  return *s;
}

namespace {

using conv::ConvGeom;

// ---- handles ------------------------------------------------------------------------

struct HandleState {
  cudnnHandle_t handle = nullptr;
  cudaStream_t bound = nullptr;
  bool bound_once = false;
};

/// This thread's handle for `dev` (the current device), bound to the current stream.
cudnnHandle_t handle_for(const char* op, const CudnnApi& api, int dev) {
  HandleState* st = &ThreadStates<HandleState>::get(dev, op, "cuDNN", [&] {
    auto fresh = std::make_unique<HandleState>();
    cudnn_check(api.create(&fresh->handle), op, "cudnnCreate");
    return fresh.release();
  });
  cudaStream_t stream = current_stream_handle(dev);
  if (!st->bound_once || st->bound != stream) {
    cudnn_check(api.set_stream(st->handle, stream), op, "cudnnSetStream");
    st->bound = stream;
    st->bound_once = true;
  }
  return st->handle;
}

// ---- types --------------------------------------------------------------------------

struct ConvTypes {
  cudnnDataType_t data, compute;
  cudnnMathType_t math;
  bool exact_float;     ///< float32 without TF32: FMA math only (Note [cuDNN math])
  bool double_scalars;  ///< alpha/beta are doubles (float64), else floats
};

ConvTypes conv_types(const char* op, ScalarType dt, bool tf32) {
  switch (dt) {
    case kFloat:
      return tf32 ? ConvTypes{CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, false, false}
                  : ConvTypes{CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, true, false};
    case kDouble: return {CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH, false, true};
    case kHalf: return {CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, false, false};
    case kBFloat16: return {CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, false, false};
    default: BRISK_FAIL(op, "no cuDNN convolution for dtype ", dt);
  }
}

/// alpha or beta in the compute precision.
struct ScaleValue {
  float f;
  double d;
  const void* ptr(bool dbl) const { return dbl ? static_cast<const void*>(&d) : static_cast<const void*>(&f); }
};
constexpr ScaleValue kOne{1.0f, 1.0}, kZero{0.0f, 0.0};

// ---- problems and the plan cache ------------------------------------------------------

/// One cuDNN problem: src (n, ic, ih, iw) * weight (oc, ic / groups, kh, kw)
/// -> dst (n, oc, oh, ow) with symmetric padding (ph, pw), all in one layout.
struct Problem {
  int64_t n, ic, ih, iw, oc, oh, ow, kh, kw, ph, pw, sh, sw, dh, dw, groups;
};

struct Key {
  std::array<int64_t, 21> v{};
  bool operator==(const Key& o) const { return v == o.v; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v) h = (h ^ uint64_t(x)) * 1099511628211ull;
    return size_t(h ^ (h >> 29));
  }
};

enum Pass : int { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

struct Algo {
  bool chosen = false;
  bool failed = false;  ///< no algorithm could be chosen (not retried)
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
  std::string why;  ///< when failed: cuDNN's refusal, if it gave one
};

/// The descriptors of one problem (Note [cuDNN plan cache]).
struct Plan {
  const CudnnApi* api = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  std::array<cudnnConvolutionDescriptor_t, 3> conv{};
  std::array<Algo, 3> algo{};
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (!api) return;
    if (x) api->destroy_tensor(x);
    if (y) api->destroy_tensor(y);
    if (w) api->destroy_filter(w);
    for (auto c : conv)
      if (c) api->destroy_conv(c);
  }
};

struct Cache {
  std::mutex mu;
  std::unordered_map<Key, std::shared_ptr<Plan>, KeyHash> map;
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: no cuDNN calls during process teardown
  return *c;
}
constexpr size_t kMaxPlans = 4096;

std::atomic<int64_t> g_element_limit{INT32_MAX};

int as_int(int64_t v) { return static_cast<int>(v); }  // sizes are checked to fit by the caller

std::shared_ptr<Plan> make_plan(const char* op, const CudnnApi& api, const Problem& p, const ConvTypes& ty,
                                bool channels_last) {
  auto plan = std::make_shared<Plan>();
  plan->api = &api;
  const cudnnTensorFormat_t fmt = channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  cudnn_check(api.create_tensor(&plan->x), op, "cudnnCreateTensorDescriptor");
  cudnn_check(api.set_tensor_4d(plan->x, fmt, ty.data, as_int(p.n), as_int(p.ic), as_int(p.ih), as_int(p.iw)), op,
              "cudnnSetTensor4dDescriptor (input)");
  cudnn_check(api.create_tensor(&plan->y), op, "cudnnCreateTensorDescriptor");
  cudnn_check(api.set_tensor_4d(plan->y, fmt, ty.data, as_int(p.n), as_int(p.oc), as_int(p.oh), as_int(p.ow)), op,
              "cudnnSetTensor4dDescriptor (output)");
  cudnn_check(api.create_filter(&plan->w), op, "cudnnCreateFilterDescriptor");
  cudnn_check(api.set_filter_4d(plan->w, ty.data, fmt, as_int(p.oc), as_int(p.ic / p.groups), as_int(p.kh),
                                as_int(p.kw)),
              op, "cudnnSetFilter4dDescriptor");
  for (auto& c : plan->conv) {
    cudnn_check(api.create_conv(&c), op, "cudnnCreateConvolutionDescriptor");
    cudnn_check(api.set_conv_2d(c, as_int(p.ph), as_int(p.pw), as_int(p.sh), as_int(p.sw), as_int(p.dh),
                                as_int(p.dw), CUDNN_CROSS_CORRELATION, ty.compute),
                op, "cudnnSetConvolution2dDescriptor");
    cudnn_check(api.set_group_count(c, as_int(p.groups)), op, "cudnnSetConvolutionGroupCount");
    cudnn_check(api.set_math_type(c, ty.math), op, "cudnnSetConvolutionMathType");
  }
  cudnn_conv_stats().plans_created.fetch_add(1, std::memory_order_relaxed);
  return plan;
}

// ---- the three passes -------------------------------------------------------------------

/// Device pointers of one call: x (src or its gradient), w (weight or its
/// gradient), y (dst or its gradient).
struct Ptrs {
  void* x;
  void* w;
  void* y;
};

struct Fwd {
  static constexpr Pass pass = kForward;
  static constexpr const char* name = "cudnnConvolutionForward";
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using AlgoT = cudnnConvolutionFwdAlgo_t;
  static cudnnStatus_t max_count(const CudnnApi& a, cudnnHandle_t h, int* n) { return a.fwd_max_count(h, n); }
  static cudnnStatus_t get_v7(const CudnnApi& a, cudnnHandle_t h, const Plan& p, int n, int* got, Perf* r) {
    return a.fwd_get_v7(h, p.x, p.w, p.conv[pass], p.y, n, got, r);
  }
  static cudnnStatus_t find_ex(const CudnnApi& a, cudnnHandle_t h, const Plan& p, const Ptrs& d, void* out, int n,
                               int* got, Perf* r, void* ws, size_t wsb) {
    return a.fwd_find_ex(h, p.x, d.x, p.w, d.w, p.conv[pass], p.y, out, n, got, r, ws, wsb);
  }
  static void* output(const Ptrs& d) { return d.y; }
  static cudnnStatus_t workspace(const CudnnApi& a, cudnnHandle_t h, const Plan& p, int algo, size_t* s) {
    return a.fwd_workspace(h, p.x, p.w, p.conv[pass], p.y, AlgoT(algo), s);
  }
  static cudnnStatus_t run(const CudnnApi& a, cudnnHandle_t h, const Plan& p, const Ptrs& d, const void* alpha,
                           const void* beta, void* ws, size_t wsb) {
    return a.fwd(h, alpha, p.x, d.x, p.w, d.w, p.conv[pass], AlgoT(p.algo[pass].algo), ws, wsb, beta, p.y, d.y);
  }
};

struct BwdData {
  static constexpr Pass pass = kBackwardData;
  static constexpr const char* name = "cudnnConvolutionBackwardData";
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using AlgoT = cudnnConvolutionBwdDataAlgo_t;
  static cudnnStatus_t max_count(const CudnnApi& a, cudnnHandle_t h, int* n) { return a.bwd_data_max_count(h, n); }
  static cudnnStatus_t get_v7(const CudnnApi& a, cudnnHandle_t h, const Plan& p, int n, int* got, Perf* r) {
    return a.bwd_data_get_v7(h, p.w, p.y, p.conv[pass], p.x, n, got, r);
  }
  static cudnnStatus_t find_ex(const CudnnApi& a, cudnnHandle_t h, const Plan& p, const Ptrs& d, void* out, int n,
                               int* got, Perf* r, void* ws, size_t wsb) {
    return a.bwd_data_find_ex(h, p.w, d.w, p.y, d.y, p.conv[pass], p.x, out, n, got, r, ws, wsb);
  }
  static void* output(const Ptrs& d) { return d.x; }
  static cudnnStatus_t workspace(const CudnnApi& a, cudnnHandle_t h, const Plan& p, int algo, size_t* s) {
    return a.bwd_data_workspace(h, p.w, p.y, p.conv[pass], p.x, AlgoT(algo), s);
  }
  static cudnnStatus_t run(const CudnnApi& a, cudnnHandle_t h, const Plan& p, const Ptrs& d, const void* alpha,
                           const void* beta, void* ws, size_t wsb) {
    return a.bwd_data(h, alpha, p.w, d.w, p.y, d.y, p.conv[pass], AlgoT(p.algo[pass].algo), ws, wsb, beta, p.x,
                      d.x);
  }
};

struct BwdFilter {
  static constexpr Pass pass = kBackwardFilter;
  static constexpr const char* name = "cudnnConvolutionBackwardFilter";
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using AlgoT = cudnnConvolutionBwdFilterAlgo_t;
  static cudnnStatus_t max_count(const CudnnApi& a, cudnnHandle_t h, int* n) {
    return a.bwd_filter_max_count(h, n);
  }
  static cudnnStatus_t get_v7(const CudnnApi& a, cudnnHandle_t h, const Plan& p, int n, int* got, Perf* r) {
    return a.bwd_filter_get_v7(h, p.x, p.y, p.conv[pass], p.w, n, got, r);
  }
  static cudnnStatus_t find_ex(const CudnnApi& a, cudnnHandle_t h, const Plan& p, const Ptrs& d, void* out, int n,
                               int* got, Perf* r, void* ws, size_t wsb) {
    return a.bwd_filter_find_ex(h, p.x, d.x, p.y, d.y, p.conv[pass], p.w, out, n, got, r, ws, wsb);
  }
  static void* output(const Ptrs& d) { return d.w; }
  static cudnnStatus_t workspace(const CudnnApi& a, cudnnHandle_t h, const Plan& p, int algo, size_t* s) {
    return a.bwd_filter_workspace(h, p.x, p.y, p.conv[pass], p.w, AlgoT(algo), s);
  }
  static cudnnStatus_t run(const CudnnApi& a, cudnnHandle_t h, const Plan& p, const Ptrs& d, const void* alpha,
                           const void* beta, void* ws, size_t wsb) {
    return a.bwd_filter(h, alpha, p.x, d.x, p.y, d.y, p.conv[pass], AlgoT(p.algo[pass].algo), ws, wsb, beta, p.w,
                        d.w);
  }
};

/// What one call needs besides the problem.
struct Ctx {
  const char* op;
  const CudnnApi* api;
  cudnnHandle_t handle;
  int device;
  ScalarType dtype;
  ConvTypes ty;
  bool channels_last, tf32, benchmark;
};

Tensor device_bytes(const Ctx& c, size_t bytes) {
  return empty({int64_t(bytes)}, TensorOptions(kUInt8).device(Device(kCUDA, c.device)));
}

/// A workspace of `bytes`, or an undefined tensor when the allocator cannot
/// provide it now (the caching allocator has already freed its cache and
/// retried by then).
Tensor try_workspace(const Ctx& c, size_t bytes) {
  if (bytes == 0) return Tensor();
  try {
    return device_bytes(c, bytes);
  } catch (const Error&) {
    return Tensor();
  }
}

/// Whether a ranked result may be used: it succeeded and, for exact float32,
/// it does not need tensor-op (TF32) math.
template <class Perf>
bool usable(const Ctx& c, const Perf& r) {
  if (r.status != CUDNN_STATUS_SUCCESS) return false;
  if (c.ty.exact_float && (r.mathType == CUDNN_TENSOR_OP_MATH || r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
    return false;
  return true;
}

/// Tries the ranked results in order; the first whose workspace size query
/// succeeds (with its math type set) and, when `allocate`, whose workspace can
/// be allocated now, becomes the pass's algorithm. False when none does.
template <class T>
bool take_first(const Ctx& c, Plan& plan, const std::vector<typename T::Perf>& ranked, int count, bool allocate,
                size_t max_workspace) {
  const CudnnApi& api = *c.api;
  for (int i = 0; i < count; ++i) {
    const auto& r = ranked[size_t(i)];
    if (!usable(c, r)) continue;
    const cudnnMathType_t math = c.ty.exact_float ? CUDNN_FMA_MATH : r.mathType;
    cudnn_check(api.set_math_type(plan.conv[T::pass], math), c.op, "cudnnSetConvolutionMathType");
    size_t ws = 0;
    if (T::workspace(api, c.handle, plan, int(r.algo), &ws) != CUDNN_STATUS_SUCCESS) continue;
    if (ws > max_workspace) continue;
    if (allocate && ws > 0 && !try_workspace(c, ws).defined()) continue;
    plan.algo[T::pass] = Algo{true, false, int(r.algo), math, ws, {}};
    return true;
  }
  cudnn_check(api.set_math_type(plan.conv[T::pass], c.ty.math), c.op, "cudnnSetConvolutionMathType");
  return false;
}

/// Chooses the algorithm of pass T for `plan` (Note [cuDNN plan cache]);
/// false when cuDNN has none for it. Called under the cache's mutex. `d` are
/// the chunk's pointers; the benchmark writes the pass's output (the weight
/// gradient into a scratch tensor, so that an accumulation over chunks is not
/// disturbed).
template <class T>
bool choose(const Ctx& c, Plan& plan, const Ptrs& d, int64_t weight_numel) {
  const CudnnApi& api = *c.api;
  int max = 0;
  cudnn_check(T::max_count(api, c.handle, &max), c.op, "cudnnGetConvolution*AlgorithmMaxCount");
  max = std::max(max, 1);
  std::vector<typename T::Perf> ranked(static_cast<size_t>(max));
  int got = 0;
  cudnn_check(T::get_v7(api, c.handle, plan, max, &got, ranked.data()), c.op, "cudnnGetConvolution*Algorithm_v7");
  got = std::min(got, max);
  if (!c.benchmark) {
    if (take_first<T>(c, plan, ranked, got, /*allocate=*/true, SIZE_MAX)) {
      cudnn_conv_stats().heuristic_choices.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  } else {
    // The largest workspace any ranked algorithm asks for, or as much of it
    // as can be allocated now.
    size_t want = 0;
    for (int i = 0; i < got; ++i)
      if (usable(c, ranked[size_t(i)])) want = std::max(want, ranked[size_t(i)].memory);
    Tensor ws;
    while (want > 0 && !(ws = try_workspace(c, want)).defined()) want /= 2;
    Tensor scratch;
    void* out = T::output(d);
    if (T::pass == kBackwardFilter) {
      scratch = empty({weight_numel}, TensorOptions(c.dtype).device(Device(kCUDA, c.device)));
      out = scratch.data_ptr();
    }
    std::vector<typename T::Perf> timed(static_cast<size_t>(max));
    int found = 0;
    const cudnnStatus_t st = T::find_ex(api, c.handle, plan, d, out, max, &found, timed.data(),
                                        ws.defined() ? ws.data_ptr() : nullptr, ws.defined() ? want : 0);
    found = st == CUDNN_STATUS_SUCCESS ? std::min(found, max) : 0;
    ws = Tensor();  // back to the cache before the chosen one's workspace is tried
    if (take_first<T>(c, plan, timed, found, /*allocate=*/false, want)) {
      cudnn_conv_stats().benchmark_finds.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    // the search failed or nothing measured fits: the heuristics' choice
    if (take_first<T>(c, plan, ranked, got, /*allocate=*/true, SIZE_MAX)) {
      cudnn_conv_stats().heuristic_choices.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

/// A plan whose descriptors cuDNN refused (an unsupported combination of
/// dtype, layout and parameters): every pass marked failed.
std::shared_ptr<Plan> refused_plan(const std::string& why) {
  auto plan = std::make_shared<Plan>();
  for (Algo& a : plan->algo) a.failed = true, a.why = why;
  return plan;
}

/// Builds a plan; a refusal by cuDNN gives a refused plan instead of an error
/// (run_pass then tries other variants).
std::shared_ptr<Plan> try_make_plan(const Ctx& c, const Problem& p) {
  try {
    return make_plan(c.op, *c.api, p, c.ty, c.channels_last);
  } catch (const Error& e) {
    return refused_plan(e.what());
  }
}

/// Chooses pass T's algorithm; an error from cuDNN while ranking marks it failed.
template <class T>
void try_choose(const Ctx& c, Plan& plan, const Problem& p, const Ptrs& d) {
  Algo& a = plan.algo[T::pass];
  if (a.chosen || a.failed) return;
  try {
    a.failed = !choose<T>(c, plan, d, p.oc * (p.ic / p.groups) * p.kh * p.kw);
  } catch (const Error& e) {
    a.failed = true;
    a.why = e.what();
  }
}

/// The plan of problem `p` with pass T's algorithm chosen, or marked failed.
template <class T>
std::shared_ptr<Plan> plan_for(const Ctx& c, const Problem& p, const Ptrs& d) {
  Key k;
  k.v = {c.device, int64_t(c.dtype), c.channels_last, c.tf32 && c.dtype == kFloat, c.benchmark,
         p.n,      p.ic,             p.ih,            p.iw,                        p.oc,
         p.oh,     p.ow,             p.kh,            p.kw,                        p.ph,
         p.pw,     p.sh,             p.sw,            p.dh,                        p.dw,
         p.groups};
  Cache& ch = cache();
  std::lock_guard<std::mutex> g(ch.mu);
  std::shared_ptr<Plan>& slot = ch.map[k];
  if (!slot) {
    if (ch.map.size() > kMaxPlans) {
      ch.map.clear();
      std::shared_ptr<Plan>& fresh = ch.map[k];
      fresh = try_make_plan(c, p);
      try_choose<T>(c, *fresh, p, d);
      return fresh;
    }
    slot = try_make_plan(c, p);
  }
  try_choose<T>(c, *slot, p, d);
  return slot;
}

/// Runs pass T on tensors in the problem's shapes and layout (x: src side,
/// w: weight side, y: dst side), splitting the batch for cuDNN's 32-bit
/// indexing. Pass T's output is overwritten. False (nothing written) when
/// cuDNN has no algorithm for the problem.
template <class T>
bool execute(const Ctx& c, const Problem& full, const Tensor& x, const Tensor& w, const Tensor& y,
             std::string* why = nullptr) {
  const int64_t per_x = full.ic * full.ih * full.iw, per_y = full.oc * full.oh * full.ow;
  const int64_t limit = g_element_limit.load(std::memory_order_relaxed);
  const int64_t chunk = cudnn_batch_chunk(full.n, std::max(per_x, per_y), limit);
  BRISK_CHECK(chunk > 0, c.op, "one sample has ", std::max(per_x, per_y), " elements, more than cuDNN's limit of ",
              limit, " per tensor");
  BRISK_CHECK(w.numel() <= INT32_MAX, c.op, "the weight has ", w.numel(),
              " elements, more than cuDNN's limit of 2^31 - 1 per tensor");
  const size_t es = element_size(c.dtype);
  char* xb = static_cast<char*>(x.data_ptr());
  char* yb = static_cast<char*>(y.data_ptr());
  auto ptrs = [&](int64_t n0) {
    return Ptrs{xb + size_t(n0 * per_x) * es, w.data_ptr(), yb + size_t(n0 * per_y) * es};
  };
  auto plan_at = [&](int64_t n0) {
    Problem p = full;
    p.n = std::min(chunk, full.n - n0);
    return plan_for<T>(c, p, ptrs(n0));
  };
  // The plans of the (at most two) chunk sizes, chosen before anything is
  // written, so that a problem cuDNN cannot run leaves the output untouched.
  const int64_t last0 = (full.n - 1) / chunk * chunk;
  const std::shared_ptr<Plan> first = plan_at(0);
  const std::shared_ptr<Plan> last = last0 > 0 && full.n - last0 != chunk ? plan_at(last0) : first;
  for (const auto* pl : {&first, &last})
    if (!(*pl)->algo[T::pass].chosen) {
      if (why && !(*pl)->algo[T::pass].why.empty()) *why = (*pl)->algo[T::pass].why;
      return false;
    }
  for (int64_t n0 = 0; n0 < full.n; n0 += chunk) {
    const Ptrs d = ptrs(n0);
    const std::shared_ptr<Plan>& plan = full.n - n0 >= chunk ? first : last;
    const Algo& a = plan->algo[T::pass];
    Tensor ws = a.workspace ? device_bytes(c, a.workspace) : Tensor();
    // the weight gradient accumulates over the chunks
    const ScaleValue& beta = (T::pass == kBackwardFilter && n0 > 0) ? kOne : kZero;
    cudnn_check(T::run(*c.api, c.handle, *plan, d, kOne.ptr(c.ty.double_scalars), beta.ptr(c.ty.double_scalars),
                       ws.defined() ? ws.data_ptr() : nullptr, a.workspace),
                c.op, T::name);
    cudnn_conv_stats().calls.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

// ---- shapes, layouts and padding ----------------------------------------------------------

/// Sets the device for the call and gathers what every pass needs.
/// The layout cuDNN runs in: the geometry's, except float64, which runs NCHW
/// (cuDNN has few NHWC double kernels; PyTorch does the same), converting
/// channels_last tensors in and out.
struct Call {
  DeviceGuard guard;
  Ctx ctx;
  MemoryFormat fmt;
  Call(const char* op, const ConvGeom& g, const Tensor& any) : guard(any.device().index) {
    const CudnnApi& api = cudnn_api(op);
    const int dev = any.device().index;
    const bool tf32 = allow_tf32();
    const bool cl = g.channels_last && any.dtype() != kDouble;
    fmt = cl ? kChannelsLast : kContiguous;
    ctx = Ctx{op, &api, handle_for(op, api, dev), dev, any.dtype(), conv_types(op, any.dtype(), tf32),
              cl, tf32, cudnn_benchmark()};
  }
};

/// `t` in layout `fmt` (no copy when it already is).
Tensor in_layout(const Tensor& t, MemoryFormat fmt) { return t.is_contiguous(fmt) ? t : t.contiguous(fmt); }

/// Runs pass T (x: src side, w: weight side, y: dst side, in the call's
/// layout; the pass's output is one of them). When cuDNN has no algorithm for
/// the problem, the pass runs on converted copies in the other variants cuDNN
/// may support, in order: NCHW (for a channels_last problem), then float32 in
/// the call's layout and in NCHW (for float16/bfloat16), and its output is
/// converted back once. A problem no variant runs is an error naming the op.
template <class T>
void run_pass(const Call& call, const Problem& p, const Tensor& x, const Tensor& w, const Tensor& y) {
  const Ctx& c = call.ctx;
  std::string why;
  if (execute<T>(c, p, x, w, y, &why)) return;
  struct Variant {
    ScalarType dtype;
    bool channels_last;
  };
  std::vector<Variant> variants;
  if (c.channels_last) variants.push_back({c.dtype, false});
  if (is_reduced_float(c.dtype)) {
    variants.push_back({kFloat, c.channels_last});
    if (c.channels_last) variants.push_back({kFloat, false});
  }
  for (const Variant& v : variants) {
    Ctx c2 = c;
    c2.dtype = v.dtype;
    c2.ty = conv_types(c.op, v.dtype, c.tf32);
    c2.channels_last = v.channels_last;
    const MemoryFormat fmt = v.channels_last ? kChannelsLast : kContiguous;
    auto in = [&](const Tensor& t) { return in_layout(t.to(v.dtype), fmt); };
    auto out = [&](const Tensor& t) { return empty(t.sizes(), t.options().dtype(v.dtype), fmt); };
    const Tensor x2 = T::pass == kBackwardData ? out(x) : in(x);
    const Tensor w2 = T::pass == kBackwardFilter ? out(w) : in(w);
    const Tensor y2 = T::pass == kForward ? out(y) : in(y);
    if (!execute<T>(c2, p, x2, w2, y2)) continue;
    if (T::pass == kForward) Tensor(y).copy_(y2);
    if (T::pass == kBackwardData) Tensor(x).copy_(x2);
    if (T::pass == kBackwardFilter) Tensor(w).copy_(w2);
    cudnn_conv_stats().fallbacks.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  BRISK_FAIL(c.op, "cuDNN has no ", T::name, " algorithm for this problem (", c.dtype, ", ",
             c.channels_last ? "channels_last" : "contiguous", ", input ", p.n, "x", p.ic, "x", p.ih, "x", p.iw,
             ", weight ", p.oc, "x", p.ic / p.groups, "x", p.kh, "x", p.kw, ", groups ", p.groups, ")",
             why.empty() ? "" : ": ", why);
}

struct Fitted {
  Problem p;
  CudnnPadFit fh, fw;
  bool copy() const { return fh.needs_copy() || fw.needs_copy(); }
};

Fitted fit(const ConvGeom& g) {
  Fitted f;
  f.fh = cudnn_pad_fit(g.ih, g.oh, g.kh, g.sh, g.dh, g.pt);
  f.fw = cudnn_pad_fit(g.iw, g.ow, g.kw, g.sw, g.dw, g.pl);
  f.p = Problem{g.n,  g.ic, g.ih + f.fh.before + f.fh.after, g.iw + f.fw.before + f.fw.after,
                g.oc, g.oh, g.ow, g.kh, g.kw, f.fh.pad, f.fw.pad, g.sh, g.sw, g.dh, g.dw, g.groups};
  return f;
}

/// Rows [0, kept) of dim `dim` of the geometry's src that the fitted input
/// holds, starting at row `before` there.
int64_t kept(int64_t in, const CudnnPadFit& f) { return in + std::min<int64_t>(0, f.after); }

/// src extended / cut to the fitted input (Note [cuDNN padding]).
Tensor fitted_input(const Fitted& f, const Tensor& src, MemoryFormat fmt) {
  Tensor r = empty({f.p.n, f.p.ic, f.p.ih, f.p.iw}, src.options(), fmt);
  r.zero_();
  const int64_t hk = kept(src.size(2), f.fh), wk = kept(src.size(3), f.fw);
  r.narrow(2, f.fh.before, hk).narrow(3, f.fw.before, wk).copy_(src.narrow(2, 0, hk).narrow(3, 0, wk));
  cudnn_conv_stats().padded_copies.fetch_add(1, std::memory_order_relaxed);
  return r;
}

/// The gradient of src from the gradient of the fitted input.
void unfit_gradient(const Fitted& f, const Tensor& grad_fitted, const Tensor& grad_src) {
  const int64_t hk = kept(grad_src.size(2), f.fh), wk = kept(grad_src.size(3), f.fw);
  if (hk < grad_src.size(2) || wk < grad_src.size(3)) Tensor(grad_src).zero_();
  grad_src.narrow(2, 0, hk).narrow(3, 0, wk).copy_(grad_fitted.narrow(2, f.fh.before, hk).narrow(3, f.fw.before, wk));
}

using conv::empty_problem;

}  // namespace

void cudnn_conv_set_element_limit(int64_t limit) {
  g_element_limit.store(limit > 0 ? std::min<int64_t>(limit, INT32_MAX) : INT32_MAX, std::memory_order_relaxed);
}

void cudnn_conv_clear_cache() {
  Cache& ch = cache();
  std::lock_guard<std::mutex> g(ch.mu);
  ch.map.clear();
}

void cudnn_conv_forward(const char* op, const ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias,
                        const Tensor& dst) {
  NoGradGuard no_grad;
  if (empty_problem(g)) {
    Tensor(dst).zero_();
  } else {
    Call call(op, g, src);
    const Fitted f = fit(g);
    const Tensor x = f.copy() ? fitted_input(f, src, call.fmt) : in_layout(src, call.fmt);
    const Tensor wk = in_layout(w, call.fmt);
    const Tensor y = dst.is_contiguous(call.fmt) ? dst : empty(dst.sizes(), dst.options(), call.fmt);
    run_pass<Fwd>(call, f.p, x, wk, y);
    if (!y.is_same(dst)) Tensor(dst).copy_(y);
  }
  if (bias.defined()) Tensor(dst).add_(bias.view({1, g.oc, 1, 1}));
}

void cudnn_conv_backward_data(const char* op, const ConvGeom& g, const Tensor& grad_dst, const Tensor& w,
                              const Tensor& grad_src) {
  NoGradGuard no_grad;
  if (empty_problem(g)) {
    Tensor(grad_src).zero_();
    return;
  }
  Call call(op, g, grad_dst);
  const Fitted f = fit(g);
  const Tensor gy = in_layout(grad_dst, call.fmt);
  const Tensor wk = in_layout(w, call.fmt);
  const bool direct = !f.copy() && grad_src.is_contiguous(call.fmt);
  const Tensor gx = direct ? grad_src : empty({f.p.n, f.p.ic, f.p.ih, f.p.iw}, grad_src.options(), call.fmt);
  run_pass<BwdData>(call, f.p, gx, wk, gy);
  if (!direct) unfit_gradient(f, gx, grad_src);
}

void cudnn_conv_backward_weights(const char* op, const ConvGeom& g, const Tensor& src, const Tensor& grad_dst,
                                 const Tensor& grad_w, const Tensor& grad_bias) {
  NoGradGuard no_grad;
  if (grad_w.defined()) {
    if (empty_problem(g)) {
      Tensor(grad_w).zero_();
    } else {
      Call call(op, g, src);
      const Fitted f = fit(g);
      const Tensor x = f.copy() ? fitted_input(f, src, call.fmt) : in_layout(src, call.fmt);
      const Tensor gy = in_layout(grad_dst, call.fmt);
      const Tensor gw = grad_w.is_contiguous(call.fmt) ? grad_w : empty(grad_w.sizes(), grad_w.options(), call.fmt);
      run_pass<BwdFilter>(call, f.p, x, gw, gy);
      if (!gw.is_same(grad_w)) Tensor(grad_w).copy_(gw);
    }
  }
  if (grad_bias.defined()) Tensor(grad_bias).copy_(grad_dst.sum({0, 2, 3}));
}

namespace {
// The op table's signatures (the CPU's ConvScratch is not used here).
void forward_kernel(const char* op, const ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias,
                    const Tensor& dst, conv::ConvScratch*) {
  cudnn_conv_forward(op, g, src, w, bias, dst);
}
void backward_data_kernel(const char* op, const ConvGeom& g, const Tensor& grad_dst, const Tensor& w,
                          const Tensor& grad_src, conv::ConvScratch*) {
  cudnn_conv_backward_data(op, g, grad_dst, w, grad_src);
}
void backward_weights_kernel(const char* op, const ConvGeom& g, const Tensor& src, const Tensor& grad_dst,
                             const Tensor& grad_w, const Tensor& grad_bias, conv::ConvScratch*) {
  cudnn_conv_backward_weights(op, g, src, grad_dst, grad_w, grad_bias);
}
}  // namespace

void register_conv_kernels() {
  register_kernel<OpId::conv_forward>(kCUDA, forward_kernel);
  register_kernel<OpId::conv_backward_data>(kCUDA, backward_data_kernel);
  register_kernel<OpId::conv_backward_weights>(kCUDA, backward_weights_kernel);
}

}  // namespace brisk::cuda::detail
