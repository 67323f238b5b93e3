// brisk::cuda in a build without the CUDA backend: nothing is available and
// every call that needs a device says so.
#include "brisk/cuda.h"
#include "brisk/error.h"
#include "brisk/tensor.h"

namespace brisk::cuda {
namespace {
[[noreturn]] void unavailable(const char* op) {
  BRISK_FAIL(op, "CUDA is not available: this build of brisk has no CUDA backend (configure with the CUDA ",
             "toolkit installed and BRISK_CUDA=AUTO or ON)");
}
}  // namespace

bool is_available() { return false; }
std::string unavailable_reason() { return "this build of brisk has no CUDA backend"; }
int device_count() { return 0; }
int current_device() { unavailable("cuda::current_device"); }
void set_device(int) { unavailable("cuda::set_device"); }
DeviceProperties get_device_properties(int) { unavailable("cuda::get_device_properties"); }
void synchronize(int) { unavailable("cuda::synchronize"); }
DeviceGuard::DeviceGuard(int) : prev_(0) { unavailable("cuda::DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;

Stream::Stream() { unavailable("cuda::Stream"); }
Stream Stream::create(int, bool) { unavailable("cuda::Stream::create"); }
bool Stream::query() const { unavailable("cuda::Stream::query"); }
void Stream::synchronize() const { unavailable("cuda::Stream::synchronize"); }
void Stream::wait(const Event&) const { unavailable("cuda::Stream::wait"); }
void Stream::wait(const Stream&) const { unavailable("cuda::Stream::wait"); }
Stream current_stream(int) { unavailable("cuda::current_stream"); }
Stream default_stream(int) { unavailable("cuda::default_stream"); }
Stream stream_from_pool(bool, int) { unavailable("cuda::stream_from_pool"); }
void set_current_stream(const Stream&) { unavailable("cuda::set_current_stream"); }
StreamGuard::StreamGuard(const Stream& s) : prev_stream_(s), prev_device_(0) { unavailable("cuda::StreamGuard"); }
StreamGuard::~StreamGuard() = default;

Event::Event(bool timing, bool blocking) : timing_(timing), blocking_(blocking) {}
Event::~Event() = default;
Event::Event(Event&& o) noexcept : handle_(o.handle_), device_(o.device_), timing_(o.timing_), blocking_(o.blocking_) {}
Event& Event::operator=(Event&& o) noexcept {
  handle_ = o.handle_, device_ = o.device_, timing_ = o.timing_, blocking_ = o.blocking_;
  return *this;
}
void Event::record() { unavailable("cuda::Event::record"); }
void Event::record(const Stream&) { unavailable("cuda::Event::record"); }
void Event::wait() const { unavailable("cuda::Event::wait"); }
void Event::wait(const Stream&) const { unavailable("cuda::Event::wait"); }
bool Event::query() const { return true; }
void Event::synchronize() const {}
float Event::elapsed_time(const Event&) const { unavailable("cuda::Event::elapsed_time"); }

void record_stream(const Tensor&, const Stream&) { unavailable("cuda::record_stream"); }

CudaMemoryStats memory_stats(int) { unavailable("cuda::memory_stats"); }
int64_t memory_allocated(int) { unavailable("cuda::memory_allocated"); }
int64_t max_memory_allocated(int) { unavailable("cuda::max_memory_allocated"); }
int64_t memory_reserved(int) { unavailable("cuda::memory_reserved"); }
int64_t max_memory_reserved(int) { unavailable("cuda::max_memory_reserved"); }
void reset_peak_memory_stats(int) { unavailable("cuda::reset_peak_memory_stats"); }
std::string memory_summary(int) { unavailable("cuda::memory_summary"); }
void empty_cache() {}
HostMemoryStats host_memory_stats() { return {}; }
void empty_host_cache() {}

namespace {
bool g_tf32 = false, g_benchmark = false;
}
void set_allow_tf32(bool allow) { g_tf32 = allow; }
bool allow_tf32() { return g_tf32; }
void set_cudnn_benchmark(bool on) { g_benchmark = on; }
bool cudnn_benchmark() { return g_benchmark; }


MempoolId graph_pool_handle() { unavailable("cuda::graph_pool_handle"); }
int64_t graph_pool_reserved(MempoolId, int) { unavailable("cuda::graph_pool_reserved"); }
Stream capture_stream(int) { unavailable("cuda::capture_stream"); }
struct CUDAGraph::Impl {};
CUDAGraph::CUDAGraph() = default;
CUDAGraph::~CUDAGraph() = default;
void CUDAGraph::capture_begin(MempoolId, CaptureMode) { unavailable("CUDAGraph"); }
void CUDAGraph::capture_end() { unavailable("CUDAGraph"); }
void CUDAGraph::replay() { unavailable("CUDAGraph"); }
void CUDAGraph::reset() {}
MempoolId CUDAGraph::pool() const { return {}; }
bool CUDAGraph::captured() const { return false; }
graph::graph(CUDAGraph& g, MempoolId, CaptureMode, std::optional<Stream>) : g_(g), prev_(nullptr, 0), side_(nullptr, 0), uncaught_(0) {
  unavailable("cuda::graph");
}
graph::~graph() noexcept(false) = default;
bool is_current_stream_capturing() { return false; }

}  // namespace brisk::cuda
