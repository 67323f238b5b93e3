// Devices, streams and events (include/brisk/cuda.h) on the CUDA runtime.
//
// Note [Current device and stream]
// Each thread keeps its current device and, per device, its current stream in
// thread-locals, so launching a kernel asks the driver nothing. The first use
// of a device on a thread calls cudaSetDevice once. Streams from the pool are
// created on first use of a device (kPoolSize of each priority) and live until
// the process ends, like PyTorch's; Stream::create makes one that is destroyed
// with its last handle.
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_errors.h"
#include "core/device_backend.h"
#include "core/profile_hooks.h"

namespace brisk::cuda {
namespace detail {

void cuda_fail(cudaError_t e, const char* op, const char* expr) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  const bool sticky = e == cudaErrorIllegalAddress || e == cudaErrorAssert || e == cudaErrorLaunchFailure ||
                      e == cudaErrorIllegalInstruction || e == cudaErrorMisalignedAddress;
  BRISK_FAIL(op, "CUDA error: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ") in ", expr,
             sticky ? "; the CUDA context is now unusable (a kernel faulted): restart the process" : "");
}

void check_launch(const char* op) { BRISK_CUDA_CHECK(cudaGetLastError(), op); }

namespace {
constexpr int kMaxDevices = 64;
constexpr int kPoolSize = 32;

struct DeviceInfo {
  std::once_flag once;
  cudaDeviceProp prop{};
  std::once_flag pool_once;
  std::array<cudaStream_t, kPoolSize> low{}, high{};
  std::atomic<uint32_t> next_low{0}, next_high{0};
};
DeviceInfo& info(int d) {
  static DeviceInfo* infos = new DeviceInfo[kMaxDevices];
  return infos[d];
}

// -1 = "ask the driver once on this thread".
thread_local int t_device = -1;
thread_local std::array<cudaStream_t, kMaxDevices> t_streams{};  // null = the default stream

int count_devices(cudaError_t* err) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (err) *err = e;
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

struct Availability {
  int count = 0;
  std::string reason;
};
const Availability& availability() {
  static const Availability a = [] {
    Availability r;
    cudaError_t e = cudaSuccess;
    r.count = std::min(count_devices(&e), kMaxDevices);
    if (r.count == 0)
      r.reason = e == cudaSuccess ? std::string("no CUDA device was found")
                                  : std::string("no CUDA device (") + cudaGetErrorString(e) + ")";
    return r;
  }();
  return a;
}

void check_index(int d, const char* op) {
  const int n = availability().count;
  if (n == 0) BRISK_FAIL(op, "CUDA is not available: ", availability().reason);
  BRISK_CHECK(d >= 0 && d < n, op, "device index ", d, " is out of range: ", n,
              n == 1 ? " device is" : " devices are", " visible");
}

void ensure_pool(int d) {
  DeviceInfo& di = info(d);
  std::call_once(di.pool_once, [&] {
    DeviceGuard g(d);
    int least = 0, greatest = 0;
    BRISK_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cuda::stream_from_pool");
    for (int i = 0; i < kPoolSize; ++i) {
      BRISK_CUDA_CHECK(cudaStreamCreateWithPriority(&di.low[i], cudaStreamNonBlocking, least), "cuda::stream_from_pool");
      BRISK_CUDA_CHECK(cudaStreamCreateWithPriority(&di.high[i], cudaStreamNonBlocking, greatest),
                       "cuda::stream_from_pool");
    }
  });
}
}  // namespace

int current_device_index() {
  if (BRISK_UNLIKELY(t_device < 0)) {
    int d = 0;
    if (availability().count == 0) BRISK_FAIL("cuda", "CUDA is not available: ", availability().reason);
    BRISK_CUDA_CHECK(cudaGetDevice(&d), "cuda::current_device");
    t_device = d;
  }
  return t_device;
}

cudaStream_t current_stream_handle(int device) {
  const int d = device < 0 ? current_device_index() : device;
  return t_streams[static_cast<size_t>(d)];
}

const cudaDeviceProp& device_properties(int device) {
  const int d = device < 0 ? current_device_index() : device;
  check_index(d, "cuda::get_device_properties");
  DeviceInfo& di = info(d);
  std::call_once(di.once, [&] { BRISK_CUDA_CHECK(cudaGetDeviceProperties(&di.prop, d), "cuda::get_device_properties"); });
  return di.prop;
}

int sm_count() { return device_properties(-1).multiProcessorCount; }

}  // namespace detail

using namespace detail;

bool is_available() { return availability().count > 0; }
std::string unavailable_reason() { return availability().reason; }
int device_count() { return availability().count; }
int current_device() { return current_device_index(); }

void set_device(int device) {
  check_index(device, "cuda::set_device");
  if (t_device == device) return;
  BRISK_CUDA_CHECK(cudaSetDevice(device), "cuda::set_device");
  t_device = device;
}

DeviceProperties get_device_properties(int device) {
  const cudaDeviceProp& p = device_properties(device);
  DeviceProperties r;
  r.name = p.name;
  r.major = p.major;
  r.minor = p.minor;
  r.multi_processor_count = p.multiProcessorCount;
  r.total_memory = static_cast<int64_t>(p.totalGlobalMem);
  return r;
}

// Note [Queries and waits in a capture]
// A stream or event query, or a wait for the device, on a thread that
// captures a CUDA graph would invalidate the capture (CUDA refuses it with
// cudaErrorStreamCaptureUnsupported, and the capture is lost): a named error
// before the call instead, so that the graph scope unwinds and abandons the
// capture cleanly and the stream stays usable. sync_point's own check needs
// a CUDA tensor, which these calls do not have.
static void refuse_in_capture(const char* call) {
  if (BRISK_UNLIKELY(brisk::detail::g_graph_captures.load(std::memory_order_relaxed) != 0) &&
      brisk::detail::thread_capturing())
    BRISK_FAIL(call, "called while this thread captures a CUDA graph: a query or a wait for the device cannot be "
                     "captured and would invalidate the capture; move it out of the captured region (the capture "
                     "is abandoned when the brisk::cuda::graph scope unwinds)");
}

void synchronize(int device) {
  const int d = device < 0 ? current_device_index() : device;
  check_index(d, "cuda::synchronize");
  refuse_in_capture("cuda::synchronize");
  brisk::detail::sync_point("synchronize", Tensor());
  DeviceGuard g(d);
  BRISK_CUDA_CHECK(cudaDeviceSynchronize(), "cuda::synchronize");
  check_device_errors(d);
}

DeviceGuard::DeviceGuard(int device) : prev_(current_device_index()) { set_device(device); }
DeviceGuard::~DeviceGuard() {
  if (t_device != prev_ && cudaSetDevice(prev_) == cudaSuccess) t_device = prev_;
}

// ---- streams --------------------------------------------------------------------
Stream::Stream() : handle_(nullptr), device_(current_device_index()) {}

Stream Stream::create(int device, bool high_priority) {
  const int d = device < 0 ? current_device_index() : device;
  check_index(d, "cuda::Stream::create");
  DeviceGuard g(d);
  int least = 0, greatest = 0;
  BRISK_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cuda::Stream::create");
  cudaStream_t s = nullptr;
  BRISK_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, high_priority ? greatest : least),
                   "cuda::Stream::create");
  std::shared_ptr<void> owner(static_cast<void*>(s), [d](void* p) {
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess) return;
    (void)cudaSetDevice(d);
    (void)cudaStreamDestroy(static_cast<cudaStream_t>(p));
    (void)cudaSetDevice(prev);
  });
  return Stream(static_cast<void*>(s), d, std::move(owner));
}

bool Stream::query() const {
  refuse_in_capture("cuda::Stream::query");
  cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(handle_));
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  BRISK_CUDA_CHECK(e, "cuda::Stream::query");
  return true;
}

void Stream::synchronize() const {
  refuse_in_capture("cuda::Stream::synchronize");
  brisk::detail::sync_point("synchronize", Tensor());
  DeviceGuard g(device_);
  BRISK_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)), "cuda::Stream::synchronize");
  check_device_errors(device_);
}

void Stream::wait(const Event& e) const {
  if (!e.recorded()) return;
  DeviceGuard g(device_);
  BRISK_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(handle_), static_cast<cudaEvent_t>(e.handle()), 0),
                   "cuda::Stream::wait");
}

void Stream::wait(const Stream& other) const {
  Event e;
  e.record(other);
  wait(e);
}

Stream current_stream(int device) {
  const int d = device < 0 ? current_device_index() : device;
  check_index(d, "cuda::current_stream");
  return Stream(static_cast<void*>(t_streams[static_cast<size_t>(d)]), d);
}

Stream default_stream(int device) {
  const int d = device < 0 ? current_device_index() : device;
  check_index(d, "cuda::default_stream");
  return Stream(nullptr, d);
}

Stream stream_from_pool(bool high_priority, int device) {
  const int d = device < 0 ? current_device_index() : device;
  check_index(d, "cuda::stream_from_pool");
  ensure_pool(d);
  DeviceInfo& di = info(d);
  const uint32_t i = (high_priority ? di.next_high : di.next_low).fetch_add(1, std::memory_order_relaxed) % kPoolSize;
  return Stream(static_cast<void*>(high_priority ? di.high[i] : di.low[i]), d);
}

void set_current_stream(const Stream& s) {
  check_index(s.device_index(), "cuda::set_current_stream");
  t_streams[static_cast<size_t>(s.device_index())] = static_cast<cudaStream_t>(s.handle());
}

StreamGuard::StreamGuard(const Stream& s) : prev_stream_(current_stream(s.device_index())), prev_device_(current_device()) {
  set_device(s.device_index());
  set_current_stream(s);
}
StreamGuard::~StreamGuard() {
  t_streams[static_cast<size_t>(prev_stream_.device_index())] = static_cast<cudaStream_t>(prev_stream_.handle());
  if (t_device != prev_device_ && cudaSetDevice(prev_device_) == cudaSuccess) t_device = prev_device_;
}

// ---- events ---------------------------------------------------------------------
Event::Event(bool enable_timing, bool blocking) : timing_(enable_timing), blocking_(blocking) {}

Event::~Event() {
  if (handle_ != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(handle_));
}
Event::Event(Event&& o) noexcept : handle_(o.handle_), device_(o.device_), timing_(o.timing_), blocking_(o.blocking_) {
  o.handle_ = nullptr;
}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (handle_ != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(handle_));
    handle_ = o.handle_, device_ = o.device_, timing_ = o.timing_, blocking_ = o.blocking_;
    o.handle_ = nullptr;
  }
  return *this;
}

void Event::record() { record(current_stream()); }

void Event::record(const Stream& s) {
  BRISK_CHECK(device_ < 0 || device_ == s.device_index(), "cuda::Event::record", "the event was created on cuda:",
              device_, " and cannot be recorded on a stream of cuda:", s.device_index());
  DeviceGuard g(s.device_index());
  if (handle_ == nullptr) {
    unsigned flags = (timing_ ? cudaEventDefault : cudaEventDisableTiming) | (blocking_ ? cudaEventBlockingSync : 0);
    cudaEvent_t e = nullptr;
    BRISK_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags), "cuda::Event::record");
    handle_ = e;
    device_ = s.device_index();
  }
  BRISK_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(handle_), static_cast<cudaStream_t>(s.handle())),
                   "cuda::Event::record");
}

void Event::wait() const { wait(current_stream()); }
void Event::wait(const Stream& s) const { s.wait(*this); }

bool Event::query() const {
  if (handle_ == nullptr) return true;
  refuse_in_capture("cuda::Event::query");
  cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(handle_));
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  BRISK_CUDA_CHECK(e, "cuda::Event::query");
  return true;
}

void Event::synchronize() const {
  if (handle_ == nullptr) return;
  refuse_in_capture("cuda::Event::synchronize");
  brisk::detail::sync_point("synchronize", Tensor());
  BRISK_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)), "cuda::Event::synchronize");
  check_device_errors(device_);
}

float Event::elapsed_time(const Event& end) const {
  BRISK_CHECK(timing_ && end.timing_, "cuda::Event::elapsed_time",
              "both events must be created with enable_timing=true");
  BRISK_CHECK(handle_ != nullptr && end.handle_ != nullptr, "cuda::Event::elapsed_time",
              "both events must be recorded before measuring the time between them");
  float ms = 0;
  BRISK_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(handle_), static_cast<cudaEvent_t>(end.handle_)),
                   "cuda::Event::elapsed_time");
  return ms;
}

// ---- math modes -------------------------------------------------------------------
namespace {
std::atomic<bool> g_tf32{false}, g_benchmark{false};
}
void set_allow_tf32(bool allow) { g_tf32.store(allow, std::memory_order_relaxed); }
bool allow_tf32() { return g_tf32.load(std::memory_order_relaxed); }
void set_cudnn_benchmark(bool on) { g_benchmark.store(on, std::memory_order_relaxed); }
bool cudnn_benchmark() { return g_benchmark.load(std::memory_order_relaxed); }

}  // namespace brisk::cuda
