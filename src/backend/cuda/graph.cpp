// brisk::cuda::CUDAGraph and the graph scope: stream capture into a private
// memory pool of the caching allocator. See include/brisk/cuda.h and
// docs/design/cuda_graphs.md.
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <vector>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/cuda_common.h"
#include "brisk/cuda.h"
#include "brisk/error.h"
#include "core/generator.h"
#include "core/profile_hooks.h"

namespace brisk::cuda {
namespace detail {
void write_graph_random_state(uint64_t* state, uint64_t seed, uint64_t offset, cudaStream_t stream);  // random.cu
}  // namespace detail
namespace {

constexpr const char* kOp = "CUDAGraph";

uint64_t next_pool_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

cudaStreamCaptureMode to_cuda(CaptureMode m) {
  switch (m) {
    case CaptureMode::ThreadLocal: return cudaStreamCaptureModeThreadLocal;
    case CaptureMode::Relaxed: return cudaStreamCaptureModeRelaxed;
    default: return cudaStreamCaptureModeGlobal;
  }
}

}  // namespace

MempoolId graph_pool_handle() { return MempoolId{next_pool_id()}; }

struct CUDAGraph::Impl {
  int device = -1;
  cudaStream_t stream = nullptr;  // the captured stream
  uint64_t pool = 0;
  bool capturing = false;
  bool holds_pool = false;  // one use of the pool, from capture_begin to reset
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  // Note [Random draws in a CUDA graph] (core/generator.h): the (seed, base
  // offset) the captured random kernels read, and the blocks they draw per
  // replay.
  uint64_t* random_state = nullptr;
  uint64_t random_blocks = 0;

  // Ends a capture that failed or is abandoned: the stream leaves capture
  // mode whatever state the capture is in.
  void abandon() noexcept {
    if (!capturing) return;
    cudaGraph_t g = nullptr;
    (void)cudaStreamEndCapture(stream, &g);
    if (g) (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();  // an invalidated capture leaves an error behind
    detail::end_allocate_to_pool(device, pool);
    brisk::detail::set_thread_capturing(false);
    (void)brisk::detail::end_graph_random();
    capturing = false;
  }

  void drop() noexcept {
    abandon();
    if (exec) (void)cudaGraphExecDestroy(exec);
    if (graph) (void)cudaGraphDestroy(graph);
    exec = nullptr;
    graph = nullptr;
    if (random_state) (void)cudaFree(random_state);
    random_state = nullptr;
    random_blocks = 0;
    if (holds_pool) {
      try {
        detail::release_pool(device, pool);
      } catch (...) {
      }
      holds_pool = false;
    }
  }
};

CUDAGraph::CUDAGraph() : impl_(std::make_unique<Impl>()) {}
CUDAGraph::~CUDAGraph() { impl_->drop(); }

void CUDAGraph::capture_begin(MempoolId pool, CaptureMode mode) {
  BRISK_CHECK(is_available(), kOp, "CUDA is not available: ", unavailable_reason());
  Impl& g = *impl_;
  BRISK_CHECK(!g.capturing, kOp, "capture_begin: this graph is already capturing");
  BRISK_CHECK(g.exec == nullptr, kOp, "capture_begin: this graph was captured already; call reset() first");
  const int device = current_device();
  const Stream s = current_stream(device);
  BRISK_CHECK(s.handle() != nullptr, kOp,
              "capture_begin: the current stream is the legacy default stream, which cannot be captured; capture "
              "on a side stream (brisk::cuda::graph does, or set one with brisk::cuda::StreamGuard)");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  BRISK_CUDA_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(s.handle()), &status), kOp);
  BRISK_CHECK(status == cudaStreamCaptureStatusNone, kOp, "capture_begin: the current stream is already capturing");
  g.device = device;
  g.stream = static_cast<cudaStream_t>(s.handle());
  g.pool = pool.id != 0 ? pool.id : next_pool_id();
  // Work queued before the capture must not land in it: wait for the device
  // (as PyTorch does) so that the pool starts from settled memory.
  BRISK_CUDA_CHECK(cudaStreamSynchronize(g.stream), kOp);
  if (g.random_state == nullptr) {  // (cudaMalloc is not allowed once the capture runs)
    void* p = nullptr;
    BRISK_CUDA_CHECK(cudaMalloc(&p, 2 * sizeof(uint64_t)), kOp);
    g.random_state = static_cast<uint64_t*>(p);
  }
  detail::begin_allocate_to_pool(g.device, g.pool, g.stream);
  g.holds_pool = true;
  const cudaError_t err = cudaStreamBeginCapture(g.stream, to_cuda(mode));
  if (err != cudaSuccess) {
    detail::end_allocate_to_pool(g.device, g.pool);
    detail::release_pool(g.device, g.pool);
    g.holds_pool = false;
    detail::cuda_fail(err, kOp, "cudaStreamBeginCapture");
  }
  g.capturing = true;
  brisk::detail::set_thread_capturing(true);
  brisk::detail::begin_graph_random(g.random_state);
}

void CUDAGraph::capture_end() {
  Impl& g = *impl_;
  BRISK_CHECK(g.capturing, kOp, "capture_end without capture_begin");
  BRISK_CHECK(current_stream(g.device).handle() == static_cast<void*>(g.stream), kOp,
              "capture_end: the current stream is not the one capture_begin captured (restore it first)");
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(g.stream, &graph);
  g.capturing = false;
  detail::end_allocate_to_pool(g.device, g.pool);
  brisk::detail::set_thread_capturing(false);
  g.random_blocks = brisk::detail::end_graph_random();
  if (err != cudaSuccess || graph == nullptr) {
    if (graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    BRISK_FAIL(kOp, "the capture failed (", cudaGetErrorString(err),
               "): an operation in the captured region is not allowed during capture (a synchronizing call, a "
               "pageable host copy, or work from another thread in Global mode)");
  }
  g.graph = graph;
  const cudaError_t ierr = cudaGraphInstantiateWithFlags(&g.exec, g.graph, 0);
  if (ierr != cudaSuccess) {
    (void)cudaGraphDestroy(g.graph);
    g.graph = nullptr;
    g.exec = nullptr;
    detail::cuda_fail(ierr, kOp, "cudaGraphInstantiateWithFlags");
  }
}

void CUDAGraph::replay() {
  Impl& g = *impl_;
  BRISK_CHECK(g.exec != nullptr, kOp, "replay: nothing was captured (capture_begin / capture_end first)");
  DeviceGuard guard(g.device);
  const auto stream = static_cast<cudaStream_t>(current_stream(g.device).handle());
  if (g.random_blocks > 0) {  // fresh numbers: the blocks eager ops would take now
    const brisk::detail::PhiloxState st = brisk::detail::reserve_random_blocks(g.random_blocks);
    detail::write_graph_random_state(g.random_state, st.seed, st.offset, stream);
  }
  BRISK_CUDA_CHECK(cudaGraphLaunch(g.exec, stream), kOp);
}

void CUDAGraph::reset() { impl_->drop(); }

MempoolId CUDAGraph::pool() const { return MempoolId{impl_->pool}; }
bool CUDAGraph::captured() const { return impl_->exec != nullptr; }

int64_t graph_pool_reserved(MempoolId pool, int device) {
  return detail::pool_reserved(device < 0 ? current_device() : device, pool.id);
}

Stream capture_stream(int device) {
  const int d = device < 0 ? current_device() : device;
  BRISK_CHECK(d < device_count(), "cuda::capture_stream", "device index ", d, " is out of range");
  static std::mutex mu;
  static auto* streams = new std::vector<std::optional<Stream>>();  // kept to the end of the process
  std::lock_guard<std::mutex> lock(mu);
  if (streams->size() <= static_cast<size_t>(d)) streams->resize(static_cast<size_t>(d) + 1);
  auto& s = (*streams)[static_cast<size_t>(d)];
  if (!s) s = Stream::create(d);
  return *s;
}

graph::graph(CUDAGraph& g, MempoolId pool, CaptureMode mode, std::optional<Stream> stream)
    : g_(g), prev_(current_stream()), side_(stream ? *stream : capture_stream()),
      uncaught_(std::uncaught_exceptions()) {
  side_.wait(prev_);
  set_current_stream(side_);
  try {
    g_.capture_begin(pool, mode);
  } catch (...) {
    set_current_stream(prev_);
    throw;
  }
}

graph::~graph() noexcept(false) {
  const bool unwinding = std::uncaught_exceptions() > uncaught_;
  if (unwinding) {
    g_.reset();  // abandons the capture: the stream leaves capture mode
    set_current_stream(prev_);
    return;
  }
  try {
    g_.capture_end();
  } catch (...) {
    set_current_stream(prev_);
    prev_.wait(side_);
    throw;
  }
  set_current_stream(prev_);
  prev_.wait(side_);
}

bool is_current_stream_capturing() {
  if (!is_available()) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  BRISK_CUDA_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(current_stream().handle()), &status),
                   "is_current_stream_capturing");
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace brisk::cuda
