// brisk::cuda: devices, streams, events and the caching device allocator.
//
// Every function here exists in every build. In a build without the CUDA
// backend, or on a machine without an NVIDIA GPU, is_available() is false,
// device_count() is 0 and the rest throw brisk::Error saying why.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "brisk/device.h"

namespace brisk {
class Tensor;

namespace cuda {

/// True when the CUDA backend is built and at least one device can be used.
bool is_available();
/// Why is_available() is false ("this build of brisk has no CUDA backend",
/// "no CUDA device: CUDA driver version is insufficient ..."); empty when true.
std::string unavailable_reason();
/// Number of visible devices (0 without a GPU or backend).
int device_count();
/// The device that `Device(kCUDA)` (index -1) means on this thread.
int current_device();
void set_device(int device);
/// Name and compute capability of a device ("NVIDIA H100 80GB HBM3", 9, 0).
struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;
  int multi_processor_count = 0;
  int64_t total_memory = 0;
};
DeviceProperties get_device_properties(int device = -1);
/// Waits for all work on every stream of `device` (-1: the current one).
/// A synchronising call: sync-debug mode and the profiler see it.
void synchronize(int device = -1);

/// Sets the current device for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  explicit DeviceGuard(Device device) : DeviceGuard(device.index < 0 ? current_device() : device.index) {}
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_;
};

class Event;

/// A CUDA stream: a handle, cheap to copy. The default stream of a device,
/// a stream from the per-device pool, or one created by `Stream::create`
/// (destroyed when its last copy goes away).
class Stream {
 public:
  /// The legacy default stream of the current device.
  Stream();
  /// A new stream owned by the returned handle (and its copies).
  static Stream create(int device = -1, bool high_priority = false);

  int device_index() const { return device_; }
  Device device() const { return Device(kCUDA, device_); }
  /// The cudaStream_t, as an opaque pointer (null for the default stream).
  void* handle() const { return handle_; }
  /// True when all work queued on the stream has finished.
  bool query() const;
  /// Blocks the host until the stream's work is done (a synchronising call).
  void synchronize() const;
  /// Makes future work on this stream wait for `e` (no host wait).
  void wait(const Event& e) const;
  /// Makes future work on this stream wait for all work queued on `other` so far.
  void wait(const Stream& other) const;
  bool operator==(const Stream& o) const { return handle_ == o.handle_ && device_ == o.device_; }
  bool operator!=(const Stream& o) const { return !(*this == o); }

  // Internal: wraps an existing handle (not owned unless `owner` is set).
  Stream(void* handle, int device, std::shared_ptr<void> owner = nullptr)
      : handle_(handle), device_(device), owner_(std::move(owner)) {}

 private:
  void* handle_ = nullptr;
  int device_ = 0;
  std::shared_ptr<void> owner_;
};

/// The stream that ops on `device` (-1: current) launch on from this thread.
Stream current_stream(int device = -1);
Stream default_stream(int device = -1);
/// A stream from the device's round-robin pool (created once, never destroyed).
Stream stream_from_pool(bool high_priority = false, int device = -1);
/// Makes `s` the current stream of its device on this thread.
void set_current_stream(const Stream& s);

/// Sets the current stream (and device) for a scope and restores the previous ones.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream prev_stream_;
  int prev_device_;
};

/// A CUDA event. Created lazily on the first record(); `enable_timing`
/// events can measure elapsed_time between them.
class Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// Records the event on `s` (default: the current stream).
  void record();
  void record(const Stream& s);
  /// Makes `s` (default: the current stream) wait for this event.
  void wait() const;
  void wait(const Stream& s) const;
  /// True when the recorded work has finished (or nothing was recorded).
  bool query() const;
  /// Blocks the host until the recorded work has finished (a synchronising call).
  void synchronize() const;
  /// Milliseconds between `this` and `end`; both recorded with enable_timing.
  float elapsed_time(const Event& end) const;
  bool recorded() const { return handle_ != nullptr; }
  void* handle() const { return handle_; }

 private:
  void* handle_ = nullptr;
  int device_ = -1;
  bool timing_, blocking_;
};

/// Marks `t`'s memory as used by `s`: the caching allocator will not hand
/// the block out again until the work queued on `s` at the time the tensor
/// is freed has finished.
void record_stream(const Tensor& t, const Stream& s);

// ---- caching allocator ---------------------------------------------------------
/// Statistics of the caching device allocator, in bytes (counts for the
/// `num_*` fields). "active" blocks are in tensors or waiting for streams.
struct CudaMemoryStats {
  int64_t allocated = 0, peak_allocated = 0;  ///< requested bytes in live blocks (rounded to 512)
  int64_t reserved = 0, peak_reserved = 0;    ///< bytes obtained with cudaMalloc
  int64_t active = 0, peak_active = 0;        ///< live blocks incl. those waiting on streams
  int64_t inactive_split = 0;                 ///< free bytes inside split segments
  int64_t num_allocs = 0, num_frees = 0;
  int64_t num_segments = 0;                   ///< cudaMalloc'ed segments held now
  int64_t num_alloc_retries = 0;              ///< cudaMalloc failures retried after freeing the cache
  int64_t num_ooms = 0;                       ///< out-of-memory errors thrown
  int64_t num_device_alloc = 0, num_device_free = 0;  ///< cudaMalloc / cudaFree calls
};
CudaMemoryStats memory_stats(int device = -1);
int64_t memory_allocated(int device = -1);
int64_t max_memory_allocated(int device = -1);
int64_t memory_reserved(int device = -1);
int64_t max_memory_reserved(int device = -1);
void reset_peak_memory_stats(int device = -1);
/// A human-readable table of the statistics (like torch.cuda.memory_summary).
std::string memory_summary(int device = -1);
/// Returns every cached block that no tensor uses to the driver (cudaFree).
void empty_cache();

// ---- CUDA graphs ---------------------------------------------------------------------
/// A private memory pool of the caching allocator (Note [Private pools] in
/// src/backend/cuda/block_allocator.h): graphs captured into the same pool
/// share its memory. id 0 means "a new pool of the graph's own".
struct MempoolId {
  uint64_t id = 0;
  bool operator==(const MempoolId& o) const { return id == o.id; }
};
/// A new pool id, to share between graphs (torch.cuda.graph_pool_handle()).
MempoolId graph_pool_handle();
/// Bytes in the segments of private pool `pool` on `device` (-1: current);
/// 0 once the pool is gone.
int64_t graph_pool_reserved(MempoolId pool, int device = -1);
/// The side stream that `graph` scopes, GraphRunner and
/// make_graphed_callables capture on when given none: one per device, made
/// once (PyTorch's default capture stream). Warm up on it before capturing:
/// its cuBLAS workspace then exists before the capture, and the captures
/// that share a pool reuse each other's freed blocks (the allocator keeps
/// free blocks per stream).
Stream capture_stream(int device = -1);

/// cudaStreamCaptureMode: which unsafe CUDA calls other threads may make
/// while this thread captures (Global: none).
enum class CaptureMode { Global, ThreadLocal, Relaxed };

/// A CUDA graph (torch.cuda.CUDAGraph): the work queued on the current
/// stream between capture_begin and capture_end is recorded once and
/// replayed with one launch. Capture must run on a stream other than the
/// legacy default stream (a side stream: `brisk::cuda::graph` sets one up).
/// While capturing, the stream's allocations come from the graph's private
/// pool, and a synchronizing call (item, to(kCPU), printing, nonzero, ...)
/// raises a brisk::Error naming it. Replays read and write the addresses
/// the capture used: update inputs in place (copy_) and read outputs from
/// the tensors made during capture. Not copyable.
///
/// Random ops draw fresh numbers on every replay (Philox offsets read on the
/// device). The last GPU run of the tests: docs/design/cuda_graphs.md.
class CUDAGraph {
 public:
  CUDAGraph();
  ~CUDAGraph();
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;

  /// Starts capturing the current stream of the current device, into `pool`
  /// (id 0: a new private pool).
  void capture_begin(MempoolId pool = {}, CaptureMode mode = CaptureMode::Global);
  /// Ends the capture and instantiates the graph.
  void capture_end();
  /// Launches the graph on the current stream.
  void replay();
  /// Drops the graph and its hold on the pool (tensors made during capture
  /// keep their memory until they are freed).
  void reset();
  /// The pool the graph allocated from (valid after capture_begin).
  MempoolId pool() const;
  /// Whether a graph has been captured and not reset.
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Captures the scope into `g` on a side stream (torch.cuda.graph): the
/// constructor waits for the current stream, makes the side stream current
/// (`stream`, or capture_stream() when none is given) and
/// calls capture_begin; the destructor calls capture_end, restores the
/// stream, and makes it wait for the side stream. When the scope is left by
/// an exception the capture is abandoned (the stream stays usable).
class graph {
 public:
  explicit graph(CUDAGraph& g, MempoolId pool = {}, CaptureMode mode = CaptureMode::Global,
                 std::optional<Stream> stream = std::nullopt);
  ~graph() noexcept(false);
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;

 private:
  CUDAGraph& g_;
  Stream prev_;
  Stream side_;
  int uncaught_;
};

/// Whether the current stream of this thread is being captured.
bool is_current_stream_capturing();

// ---- pinned host memory ----------------------------------------------------------
/// Statistics of the caching pinned-host allocator.
struct HostMemoryStats {
  int64_t allocated = 0, reserved = 0, num_allocs = 0, num_host_alloc = 0;
};
HostMemoryStats host_memory_stats();
void empty_host_cache();

// ---- math modes -----------------------------------------------------------------
/// TF32 tensor cores for float32 matmul (off by default, as in PyTorch).
void set_allow_tf32(bool allow);
bool allow_tf32();
/// cuDNN's algorithm search for convolutions (the cudnn.benchmark idea).
void set_cudnn_benchmark(bool on);
bool cudnn_benchmark();

}  // namespace cuda
}  // namespace brisk
