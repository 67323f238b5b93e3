// The nccl backend of brisk::distributed: collectives on CUDA tensors through
// NCCL, the library of the CUDA toolkit, opened at its first use as cuBLAS is
// (Note [Lazy CUDA libraries]); nccl.h gives the types only. Built in CUDA
// builds where nccl.h is found; elsewhere make_nccl_backend stays null and
// init_process_group("nccl") says why.
//
// Note [NCCL streams and the watchdog]
// The group owns one CUDA stream on its device. A collective makes that
// stream wait for the caller's current stream (the inputs are written
// there), is enqueued on it, marks its tensors as used by it (record_stream,
// so the caching allocator does not hand their memory out while NCCL still
// reads or writes it), and records an event after it. A synchronous call
// then makes the current stream wait for that event; an async one returns a
// Work whose wait() does so: in both cases the host does not wait, as for
// any CUDA op (PyTorch's ProcessGroupNCCL behaves the same). Only barrier()
// waits on the host, since that is what it is for.
// A dead or hung peer would leave the collective's kernel spinning forever
// and every later host sync of the stream with it. A watchdog thread checks
// the pending events and the communicator's asynchronous error every 50 ms:
// past the group's timeout, or on an error NCCL reports, it aborts the
// communicator (ncclCommAbort ends the kernels, so the streams drain) and
// keeps the reason; every later call into the group (a collective, a Work's
// wait or is_completed, destroy_process_group) raises a brisk::Error with it.
// The communicator is created non-blocking so that its creation obeys the
// timeout too (a rank that never joins is an error, not a hang).
#include "distributed/backend.h"

#if __has_include(<nccl.h>)
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "backend/cuda/dl_library.h"
#include "brisk/autograd.h"
#include "brisk/cuda.h"
#include "brisk/error.h"
#include "brisk/ops.h"
#include "core/profile_hooks.h"

namespace brisk::distributed::detail {
namespace {

using Clock = std::chrono::steady_clock;

struct NcclApi {
  decltype(&::ncclGetVersion) get_version = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRankConfig) comm_init_rank_config = nullptr;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&::ncclCommAbort) comm_abort = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclGetErrorString) get_error_string = nullptr;
  decltype(&::ncclGetLastError) get_last_error = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&::ncclSend) send = nullptr;
  decltype(&::ncclRecv) recv = nullptr;
  decltype(&::ncclGroupStart) group_start = nullptr;
  decltype(&::ncclGroupEnd) group_end = nullptr;
};

template <class F>
void for_each_symbol(NcclApi& a, F&& f) {
  f("ncclGetVersion", a.get_version);
  f("ncclGetUniqueId", a.get_unique_id);
  f("ncclCommInitRankConfig", a.comm_init_rank_config);
  f("ncclCommGetAsyncError", a.comm_get_async_error);
  f("ncclCommAbort", a.comm_abort);
  f("ncclCommDestroy", a.comm_destroy);
  f("ncclGetErrorString", a.get_error_string);
  f("ncclGetLastError", a.get_last_error);
  f("ncclAllReduce", a.all_reduce);
  f("ncclBroadcast", a.broadcast);
  f("ncclAllGather", a.all_gather);
  f("ncclReduceScatter", a.reduce_scatter);
  f("ncclSend", a.send);
  f("ncclRecv", a.recv);
  f("ncclGroupStart", a.group_start);
  f("ncclGroupEnd", a.group_end);
}

struct Loaded {
  cuda::detail::DlLibrary info;
  NcclApi api;
  int version = 0;
};

// ncclCommInitRankConfig (non-blocking communicators) and ncclAvg need 2.14
constexpr int kMinVersion = 21400;

Loaded load() {
  Loaded l;
  l.info = cuda::detail::open_first(cuda::detail::cuda_library_search_paths("libnccl.so.2", {"lib64", "lib"}));
  if (!l.info.handle) return l;
  for_each_symbol(l.api, [&](const char* name, auto& fn) { cuda::detail::resolve(l.info, name, fn); });
  cuda::detail::finish(l.info);
  if (!l.info.loaded) return l;
  if (l.api.get_version(&l.version) != ncclSuccess || l.version < kMinVersion) {  // host only, no device
    l.info.loaded = false;
    l.info.error = l.info.path + ": NCCL version " + std::to_string(l.version) + ", brisk needs 2.14 or later";
  }
  return l;
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never freed: the library stays mapped
  return *l;
}

ncclDataType_t nccl_dtype(const char* op, ScalarType t) {
  switch (t) {
    case kFloat: return ncclFloat32;
    case kDouble: return ncclFloat64;
    case kHalf: return ncclFloat16;
    case kBFloat16: return ncclBfloat16;
    case kInt8: return ncclInt8;
    case kUInt8: return ncclUint8;
    case kInt32: return ncclInt32;
    case kInt64: return ncclInt64;
    default: BRISK_FAIL(op, "the nccl backend does not reduce ", t, " tensors");
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return ncclSum;
    case ReduceOp::AVG: return ncclAvg;
    case ReduceOp::PRODUCT: return ncclProd;
    case ReduceOp::MIN: return ncclMin;
    case ReduceOp::MAX: return ncclMax;
  }
  return ncclSum;
}

/// What the watchdog and the calls share: the communicator, the pending
/// collectives and, once something went wrong, why.
struct State {
  const NcclApi* api = nullptr;
  ncclComm_t comm = nullptr;
  int device = 0;
  std::chrono::milliseconds timeout{0};
  std::mutex mu;
  std::string error;  // non-empty: the communicator was aborted
  struct Pending {
    std::shared_ptr<cuda::Event> done;
    Clock::time_point start;
    const char* op;
    uint64_t seq;
  };
  std::deque<Pending> pending;
  uint64_t seq = 0;

  /// Raises the stored error, if any. Caller holds mu.
  void check_locked(const char* op) const {
    if (!error.empty()) BRISK_FAIL(op, "the nccl process group is broken: ", error);
  }
  void check(const char* op) {
    std::lock_guard<std::mutex> lock(mu);
    check_locked(op);
  }
  /// Aborts the communicator with `why` (once). Caller holds mu.
  void abort_locked(const std::string& why) {
    if (!error.empty()) return;
    error = why;
    std::fprintf(stderr, "brisk: [nccl] %s; the communicator was aborted and the next call into the process "
                         "group raises\n", why.c_str());
    if (comm != nullptr) api->comm_abort(comm);
    comm = nullptr;
    pending.clear();
  }
  std::string nccl_error(ncclResult_t r) const {
    std::string s = api->get_error_string(r);
    const char* last = comm != nullptr ? api->get_last_error(comm) : nullptr;
    if (last != nullptr && *last != '\0') s += std::string(" (") + last + ")";
    return s;
  }
  /// A call's result: a non-blocking communicator may answer ncclInProgress,
  /// then the call completes in the background and must be waited for before
  /// the next one. Caller holds mu.
  void finish_call_locked(const char* op, ncclResult_t r) {
    const auto deadline = Clock::now() + timeout;
    while (r == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::yield();
      api->comm_get_async_error(comm, &r);
    }
    if (r == ncclInProgress) {
      abort_locked(std::string(op) + " could not be enqueued within the timeout");
      check_locked(op);
    }
    if (r != ncclSuccess) {
      abort_locked(std::string(op) + " failed in NCCL: " + nccl_error(r));
      check_locked(op);
    }
  }
};

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<State> s, std::shared_ptr<cuda::Event> done, const char* op)
      : s_(std::move(s)), done_(std::move(done)), op_(op) {}
  void wait() override {
    s_->check(op_);
    cuda::current_stream(s_->device).wait(*done_);
  }
  bool is_completed() override {
    s_->check(op_);
    return done_->query();
  }

 private:
  std::shared_ptr<State> s_;
  std::shared_ptr<cuda::Event> done_;
  const char* op_;
};

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(const BackendArgs& a) : size_(a.size), rank_(a.rank), stream_(group_stream()) {
    const char* op = "init_process_group";
    const Loaded& l = loaded();
    s_ = std::make_shared<State>();
    s_->api = &l.api;
    s_->device = stream_.device_index();
    s_->timeout = a.timeout;
    cuda::DeviceGuard dg(s_->device);
    // rank 0 makes the communicator's id; the others read it from the store
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    const std::string key = "brisk/nccl/unique_id";
    if (rank_ == 0) {
      const ncclResult_t r = l.api.get_unique_id(&id);
      BRISK_CHECK(r == ncclSuccess, op, "ncclGetUniqueId failed: ", l.api.get_error_string(r));
      const auto* b = reinterpret_cast<const uint8_t*>(&id);
      a.store->set(key, std::vector<uint8_t>(b, b + sizeof(id)));
    } else {
      const std::vector<uint8_t> b = a.store->get(key);
      BRISK_CHECK(b.size() == sizeof(id), op, "the NCCL id in the store has ", b.size(), " bytes, not ", sizeof(id));
      std::memcpy(&id, b.data(), sizeof(id));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    ncclResult_t r = l.api.comm_init_rank_config(&comm, size_, id, rank_, &config);
    const auto deadline = Clock::now() + a.timeout;
    while (r == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      l.api.comm_get_async_error(comm, &r);
    }
    if (r != ncclSuccess) {
      std::string why = r == ncclInProgress ? std::string("the ") + std::to_string(size_) +
                                                  " ranks did not all join within the timeout"
                                            : std::string("ncclCommInitRankConfig failed: ") +
                                                  l.api.get_error_string(r);
      if (comm != nullptr) l.api.comm_abort(comm);
      BRISK_FAIL(op, "creating the NCCL communicator on cuda:", s_->device, " failed: ", why);
    }
    s_->comm = comm;
    watchdog_ = std::thread([s = s_, stop = stop_] { watch(s, stop); });
  }

  ~NcclBackend() override {
    // pending work gets the timeout to finish; then the communicator goes
    {
      const auto deadline = Clock::now() + s_->timeout;
      for (;;) {
        std::unique_lock<std::mutex> lock(s_->mu);
        if (s_->pending.empty() || !s_->error.empty()) break;
        if (Clock::now() >= deadline) {
          s_->abort_locked("destroy_process_group: collectives still pending after the timeout");
          break;
        }
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    stop_->store(true);
    watchdog_.join();
    std::lock_guard<std::mutex> lock(s_->mu);
    if (s_->comm != nullptr) s_->api->comm_destroy(s_->comm);
    s_->comm = nullptr;
    if (s_->error.empty()) s_->error = "the process group was destroyed";
  }

  const char* name() const override { return "nccl"; }
  Device device() const override { return Device(kCUDA, s_->device); }

  WorkPtr all_reduce(const Tensor& t, ReduceOp op, bool async_op) override {
    const char* name = "all_reduce";
    check_tensor(name, t);
    const ncclDataType_t dt = nccl_dtype(name, t.dtype());
    return run(name, {t}, async_op, [&](ncclComm_t c, cudaStream_t s) {
      return s_->api->all_reduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), dt, nccl_op(op), c, s);
    });
  }

  WorkPtr broadcast(const Tensor& t, int src, bool async_op) override {
    check_tensor("broadcast", t);
    return run("broadcast", {t}, async_op, [&](ncclComm_t c, cudaStream_t s) {
      return s_->api->broadcast(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.nbytes()), ncclUint8, src, c, s);
    });
  }

  WorkPtr all_gather(const std::vector<Tensor>& outputs, const Tensor& input, bool async_op) override {
    const char* name = "all_gather";
    check_tensor(name, input);
    for (const Tensor& o : outputs) check_tensor(name, o, /*contiguous=*/false);
    Tensor flat;
    {
      NoGradGuard ng;
      flat = empty({size_ * input.numel()}, input.options());
    }
    std::vector<Tensor> keep = outputs;
    keep.push_back(input);
    keep.push_back(flat);
    const size_t bytes = static_cast<size_t>(input.nbytes());
    auto gather = [&](ncclComm_t c, cudaStream_t s) {
      return s_->api->all_gather(input.data_ptr(), flat.data_ptr(), bytes, ncclUint8, c, s);
    };
    // the copies out go on the group's stream after the gather, so that an
    // async all_gather stays async
    auto copy_out = [&] {
      NoGradGuard ng;
      for (int k = 0; k < size_; ++k)
        Tensor(outputs[static_cast<size_t>(k)])
            .copy_(flat.narrow(0, k * input.numel(), input.numel()).view(input.sizes()));
    };
    return run(name, keep, async_op, gather, copy_out);
  }

  WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op,
                         bool async_op) override {
    const char* name = "reduce_scatter";
    check_tensor(name, output);
    for (const Tensor& i : inputs) check_tensor(name, i, /*contiguous=*/false);
    const ncclDataType_t dt = nccl_dtype(name, output.dtype());
    Tensor flat;
    {
      NoGradGuard ng;
      std::vector<Tensor> parts;
      for (const Tensor& i : inputs) parts.push_back(i.reshape({-1}));
      flat = cat(parts, 0);  // on the current stream, before the group's stream waits for it
    }
    return run(name, {output, flat}, async_op, [&](ncclComm_t c, cudaStream_t s) {
      return s_->api->reduce_scatter(flat.data_ptr(), output.data_ptr(), static_cast<size_t>(output.numel()), dt,
                                     nccl_op(op), c, s);
    });
  }

  WorkPtr barrier(bool async_op) override {
    // an all-reduce of one element, waited for on the host (with the timeout)
    Tensor one;
    {
      cuda::DeviceGuard dg(s_->device);
      one = zeros({1}, TensorOptions(kFloat).device(device()));
    }
    auto done = enqueue("barrier", {one}, [&](ncclComm_t c, cudaStream_t s) {
      return s_->api->all_reduce(one.data_ptr(), one.data_ptr(), 1, ncclFloat32, ncclSum, c, s);
    });
    auto work = std::make_shared<NcclWork>(s_, done, "barrier");
    if (async_op) return work;
    for (;;) {  // the watchdog aborts a barrier that outlives the timeout
      s_->check("barrier");
      if (done->query()) return nullptr;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  WorkPtr send(const Tensor& t, int dst, int tag, bool async_op) override {
    check_tensor("send", t);
    return run("send", {t}, async_op, [&](ncclComm_t c, cudaStream_t s) {
      return s_->api->send(t.data_ptr(), static_cast<size_t>(t.nbytes()), ncclUint8, dst, c, s);
    });
  }
  WorkPtr recv(const Tensor& t, int src, int tag, bool async_op) override {
    check_tensor("recv", t);
    return run("recv", {t}, async_op, [&](ncclComm_t c, cudaStream_t s) {
      return s_->api->recv(t.data_ptr(), static_cast<size_t>(t.nbytes()), ncclUint8, src, c, s);
    });
  }

  std::vector<WorkPtr> batch_p2p(const std::vector<P2POp>& ops) override {
    const char* name = "batch_isend_irecv";
    std::vector<Tensor> keep;
    for (const P2POp& o : ops) {
      check_tensor(name, o.tensor);
      keep.push_back(o.tensor);
    }
    // one NCCL group: the sends and receives progress together
    auto done = enqueue(name, keep, [&](ncclComm_t c, cudaStream_t s) {
      ncclResult_t r = s_->api->group_start();
      for (const P2POp& o : ops) {
        if (r != ncclSuccess) break;
        const size_t n = static_cast<size_t>(o.tensor.nbytes());
        r = o.kind == P2POp::Kind::send ? s_->api->send(o.tensor.data_ptr(), n, ncclUint8, o.peer, c, s)
                                        : s_->api->recv(o.tensor.data_ptr(), n, ncclUint8, o.peer, c, s);
      }
      const ncclResult_t e = s_->api->group_end();
      return r != ncclSuccess ? r : e;
    });
    auto work = std::make_shared<NcclWork>(s_, done, name);
    return std::vector<WorkPtr>(ops.size(), work);
  }

 private:
  /// The group's own stream, on the current device; first of all, whether there is one.
  static cuda::Stream group_stream() {
    BRISK_CHECK(cuda::is_available(), "init_process_group", "the nccl backend needs a CUDA device: ",
                cuda::unavailable_reason());
    return cuda::Stream::create(cuda::current_device());
  }

  void check_tensor(const char* op, const Tensor& t, bool contiguous = true) const {
    BRISK_CHECK(t.device().is_cuda(), op, "the nccl backend takes CUDA tensors, got one on ", t.device().str(),
                " (CPU tensors need the gloo backend)");
    BRISK_CHECK(t.device().index == s_->device, op, "the nccl group's communicator is on cuda:", s_->device,
                " (the current device at init_process_group) but the tensor is on ", t.device().str(),
                ": call cuda::set_device(LOCAL_RANK) before init_process_group");
    if (contiguous) BRISK_CHECK(t.is_contiguous(), op, "the tensor must be contiguous (call .contiguous() first)");
  }

  /// Enqueues `call` on the group's stream after the current stream's work
  /// and returns the event recorded after it (Note [NCCL streams and the
  /// watchdog]).
  /// `then` runs after the call with the group's stream current.
  template <class Call, class Then = void (*)()>
  std::shared_ptr<cuda::Event> enqueue(const char* op, const std::vector<Tensor>& tensors, Call&& call,
                                       Then&& then = [] {}) {
    cuda::DeviceGuard dg(s_->device);
    std::lock_guard<std::mutex> lock(s_->mu);  // one caller at a time: every rank's order is the issue order
    s_->check_locked(op);
    stream_.wait(cuda::current_stream(s_->device));
    const ncclResult_t r = call(s_->comm, static_cast<cudaStream_t>(stream_.handle()));
    s_->finish_call_locked(op, r);
    {
      cuda::StreamGuard sg(stream_);
      then();
    }
    for (const Tensor& t : tensors)
      if (t.defined() && t.numel() > 0) cuda::record_stream(t, stream_);
    auto done = std::make_shared<cuda::Event>();
    done->record(stream_);
    s_->pending.push_back({done, Clock::now(), op, s_->seq++});
    return done;
  }

  template <class Call, class Then = void (*)()>
  WorkPtr run(const char* op, const std::vector<Tensor>& tensors, bool async_op, Call&& call, Then&& then = [] {}) {
    auto done = enqueue(op, tensors, std::forward<Call>(call), std::forward<Then>(then));
    if (!async_op) {
      cuda::current_stream(s_->device).wait(*done);
      return nullptr;
    }
    return std::make_shared<NcclWork>(s_, done, op);
  }

  static void watch(std::shared_ptr<State> s, std::shared_ptr<std::atomic<bool>> stop) {
    try {
      cuda::DeviceGuard dg(s->device);
      while (!stop->load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        // An event query while a global-mode CUDA graph capture is underway on
        // any thread invalidates that capture (Note [Events and a capture] in
        // block_allocator.h): the watchdog sleeps through captures.
        if (brisk::detail::g_graph_captures.load(std::memory_order_relaxed) != 0) continue;
        std::lock_guard<std::mutex> lock(s->mu);
        if (!s->error.empty() || s->comm == nullptr) continue;
        while (!s->pending.empty() && s->pending.front().done->query()) s->pending.pop_front();
        ncclResult_t r = ncclSuccess;
        s->api->comm_get_async_error(s->comm, &r);
        if (r != ncclSuccess && r != ncclInProgress) {
          s->abort_locked(std::string("NCCL reported an error: ") + s->nccl_error(r));
        } else if (!s->pending.empty() && Clock::now() - s->pending.front().start > s->timeout) {
          const auto& p = s->pending.front();
          s->abort_locked(std::string(p.op) + " (collective " + std::to_string(p.seq) + " of this group) did not " +
                          "finish within the timeout of " + std::to_string(s->timeout.count()) +
                          " ms: a rank exited, hung or did not call it");
        }
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(s->mu);
      s->abort_locked(std::string("the watchdog failed: ") + e.what());
    }
  }

  int size_, rank_;
  cuda::Stream stream_;
  std::shared_ptr<State> s_;
  std::shared_ptr<std::atomic<bool>> stop_ = std::make_shared<std::atomic<bool>>(false);
  std::thread watchdog_;
};

}  // namespace

bool nccl_loadable(std::string* why) {
  const Loaded& l = loaded();
  if (!l.info.loaded && why != nullptr) *why = "libnccl.so.2 could not be loaded: " + l.info.error;
  return l.info.loaded;
}

std::unique_ptr<Backend> make_nccl_backend(const BackendArgs& args) { return std::make_unique<NcclBackend>(args); }

/// For tests: the NCCL version the loader found (0 when none).
int nccl_version() { return loaded().version; }

}  // namespace brisk::distributed::detail

#endif  // __has_include(<nccl.h>)
