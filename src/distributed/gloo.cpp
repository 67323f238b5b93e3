// The gloo backend of brisk::distributed: CPU tensors over Gloo's TCP
// transport (Debian's libgloo-dev). Built only where CMake found Gloo
// (BRISK_HAVE_GLOO); elsewhere make_gloo_backend returns null and
// init_process_group says why.
#include "distributed/backend.h"

#ifdef BRISK_HAVE_GLOO
#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "brisk/autograd.h"
#include "brisk/error.h"
#include "brisk/ops.h"
#endif

namespace brisk::distributed::detail {

#ifndef BRISK_HAVE_GLOO

bool gloo_built() { return false; }
std::unique_ptr<Backend> make_gloo_backend(const BackendArgs&) { return nullptr; }

#else

bool gloo_built() { return true; }

namespace {

// Note [SIGPIPE and dead peers]
// Gloo writes to its peers' sockets without MSG_NOSIGNAL: a write to a rank
// that has exited raises SIGPIPE, whose default action kills this process
// (exit status 141) before the write's EPIPE can become a brisk::Error.
// (Python ignores SIGPIPE, so PyTorch never sees it.) brisk does not change
// the process's disposition; it blocks SIGPIPE in the threads that write to
// Gloo's sockets: the threads Gloo and brisk create while it is blocked
// (Gloo's event loop, the group's worker) inherit the mask, and the calling
// thread blocks it around what it posts itself. The write then fails with
// EPIPE and Gloo reports the closed connection; a SIGPIPE left pending on
// the calling thread is consumed before the mask is restored.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlocked() {
    if (sigismember(&old_, SIGPIPE)) return;  // (it was blocked already: leave it so)
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_, old_;
};

/// The collectives' worker: one thread runs the group's operations in the
/// order they were issued (every rank issues them in the same order).
class Worker {
 public:
  Worker() : thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::shared_future<void> submit(std::function<void()> fn) {
    auto task = std::make_shared<std::packaged_task<void()>>(std::move(fn));
    std::shared_future<void> f = task->get_future().share();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back([task] { (*task)(); });
    }
    cv_.notify_all();
    return f;
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

class FutureWork final : public Work {
 public:
  explicit FutureWork(std::shared_future<void> f) : f_(std::move(f)) {}
  void wait() override { f_.get(); }
  bool is_completed() override { return f_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

 private:
  std::shared_future<void> f_;
};

/// brisk's Store seen as Gloo's (connectFullMesh exchanges addresses through it).
class GlooStore final : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(std::shared_ptr<distributed::Store> s) : s_(std::move(s)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    s_->set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const auto v = s_->get(key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { s_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override { s_->wait(keys); }

 private:
  std::shared_ptr<distributed::Store> s_;
};

void check_cpu_dense(const char* op, const Tensor& t) {
  BRISK_CHECK(t.is_cpu(), op, "the gloo backend takes CPU tensors, got one on ", t.device().str(),
              " (CUDA tensors need the nccl backend: init_process_group(\"nccl\"))");
  BRISK_CHECK(t.is_contiguous(), op, "the tensor must be contiguous (call .contiguous() first)");
}

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// The float32 and float64 sums, the reductions of every gradient all-reduce,
// in the widest vectors the CPU has (Gloo's own are compiled for the
// baseline ISA): c = a + b, element by element, as gloo::sum.
template <class T>
__attribute__((target_clones("avx512f", "avx2", "default"))) void wide_sum(void* c, const void* a, const void* b,
                                                                            size_t n) {
  T* __restrict cc = static_cast<T*>(c);
  const T* __restrict aa = static_cast<const T*>(a);
  const T* __restrict bb = static_cast<const T*>(b);
  if (cc == aa) {  // Gloo reduces in place into its first argument
    for (size_t i = 0; i < n; ++i) cc[i] += bb[i];
    return;
  }
  for (size_t i = 0; i < n; ++i) cc[i] = aa[i] + bb[i];
}

template <class T>
ReduceFn reduce_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return &wide_sum<T>;
      return &gloo::sum<T>;
    case ReduceOp::PRODUCT: return &gloo::product<T>;
    case ReduceOp::MIN: return &gloo::min<T>;
    case ReduceOp::MAX: return &gloo::max<T>;
  }
  return &gloo::sum<T>;
}

// bfloat16 has no Gloo type: reduced through float32, rounded per step
void bf16_reduce(void* c, const void* a, const void* b, size_t n, ReduceOp op) {
  auto* cc = static_cast<BFloat16*>(c);
  const auto* aa = static_cast<const BFloat16*>(a);
  const auto* bb = static_cast<const BFloat16*>(b);
  for (size_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(aa[i]), y = static_cast<float>(bb[i]);
    float r = x + y;
    if (op == ReduceOp::PRODUCT) r = x * y;
    if (op == ReduceOp::MIN) r = x < y || x != x ? x : y;
    if (op == ReduceOp::MAX) r = x > y || x != x ? x : y;
    cc[i] = BFloat16(r);
  }
}

class GlooBackend final : public Backend {
 public:
  explicit GlooBackend(const BackendArgs& a) : rank_(a.rank), size_(a.size), timeout_(a.timeout) {
    SigpipeBlocked no_sigpipe;  // Gloo's loop thread and the worker inherit it (Note [SIGPIPE and dead peers])
    gloo::transport::tcp::attr attr;
    const std::string iface = env_str("GLOO_SOCKET_IFNAME");
    if (!iface.empty())
      attr.iface = iface;
    else
      attr.hostname =
          a.host == "localhost" || a.host.rfind("127.", 0) == 0 ? "127.0.0.1" : env_str("BRISK_HOSTNAME", a.host);
    try {
      auto dev = gloo::transport::tcp::CreateDevice(attr);
      ctx_ = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      ctx_->setTimeout(timeout_);
      GlooStore gs(a.store);
      ctx_->connectFullMesh(gs, dev);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      BRISK_CHECK(false, "init_process_group", "connecting the ", size_, " ranks failed: ", e.what());
    }
    worker_ = std::make_unique<Worker>();
  }
  ~GlooBackend() override { worker_.reset(); }  // drains the queue, then the context closes

  const char* name() const override { return "gloo"; }
  Device device() const override { return Device(kCPU); }

  WorkPtr all_reduce(const Tensor& tensor, ReduceOp op, bool async_op) override {
    check_cpu_dense("all_reduce", tensor);
    check_dtype("all_reduce", tensor);
    Tensor t = tensor;
    return launch("all_reduce", async_op, [this, t, op] {
      allreduce_now(t, op);
      if (op == ReduceOp::AVG) {
        NoGradGuard ng;
        Tensor(t).div_(static_cast<double>(size_));
      }
    });
  }

  WorkPtr broadcast(const Tensor& tensor, int src, bool async_op) override {
    check_cpu_dense("broadcast", tensor);
    Tensor t = tensor;
    return launch("broadcast", async_op, [this, t, src] {
      gloo::BroadcastOptions o(ctx_);
      o.setTag(tag_++);
      o.setTimeout(timeout_);
      o.setRoot(src);
      o.setOutput(static_cast<uint8_t*>(t.data_ptr()), static_cast<size_t>(t.nbytes()));
      gloo::broadcast(o);
    });
  }

  WorkPtr all_gather(const std::vector<Tensor>& outputs, const Tensor& input, bool async_op) override {
    check_cpu_dense("all_gather", input);
    for (const Tensor& o : outputs)
      BRISK_CHECK(o.is_cpu(), "all_gather", "the gloo backend takes CPU tensors, got an output on ", o.device().str());
    std::vector<Tensor> outs = outputs;
    Tensor in = input;
    return launch("all_gather", async_op, [this, outs, in] {
      const size_t bytes = static_cast<size_t>(in.nbytes());
      Tensor flat = empty({static_cast<int64_t>(bytes) * size_}, kUInt8);
      gloo::AllgatherOptions o(ctx_);
      o.setTag(tag_++);
      o.setTimeout(timeout_);
      o.setInput(static_cast<uint8_t*>(in.data_ptr()), bytes);
      o.setOutput(static_cast<uint8_t*>(flat.data_ptr()), bytes * static_cast<size_t>(size_));
      gloo::allgather(o);
      for (int r = 0; r < size_; ++r) {
        NoGradGuard ng;
        Tensor dst = outs[static_cast<size_t>(r)];
        if (dst.is_contiguous()) {
          std::memcpy(dst.data_ptr(), static_cast<uint8_t*>(flat.data_ptr()) + bytes * r, bytes);
        } else {
          Tensor tmp = empty(in.sizes(), in.options());
          std::memcpy(tmp.data_ptr(), static_cast<uint8_t*>(flat.data_ptr()) + bytes * r, bytes);
          dst.copy_(tmp);
        }
      }
    });
  }

  WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op,
                         bool async_op) override {
    check_cpu_dense("reduce_scatter", output);
    check_dtype("reduce_scatter", output);
    for (const Tensor& i : inputs)
      BRISK_CHECK(i.is_cpu(), "reduce_scatter", "the gloo backend takes CPU tensors, got an input on ",
                  i.device().str());
    // Gloo has no reduce-scatter of this form: an all-reduce of all the
    // inputs, of which each rank keeps its part (twice the traffic of a ring
    // reduce-scatter)
    Tensor flat;
    {
      NoGradGuard ng;
      std::vector<Tensor> parts;
      for (const Tensor& i : inputs) parts.push_back(i.reshape({-1}));
      flat = cat(parts, 0);
    }
    Tensor out = output;
    return launch("reduce_scatter", async_op, [this, flat, out, op] {
      allreduce_now(flat, op);
      NoGradGuard ng;
      const int64_t n = out.numel();
      Tensor mine = flat.narrow(0, n * rank_, n).view(out.sizes());
      if (op == ReduceOp::AVG) mine = mine / static_cast<double>(size_);
      Tensor(out).copy_(mine);
    });
  }

  WorkPtr barrier(bool async_op) override {
    return launch("barrier", async_op, [this] {
      gloo::BarrierOptions o(ctx_);
      o.setTag(tag_++);
      o.setTimeout(timeout_);
      gloo::barrier(o);
    });
  }

  WorkPtr send(const Tensor& t, int dst, int tag, bool async_op) override {
    return p2p("send", t, dst, tag, true, async_op);
  }
  WorkPtr recv(const Tensor& t, int src, int tag, bool async_op) override {
    return p2p("recv", t, src, tag, false, async_op);
  }
  std::vector<WorkPtr> batch_p2p(const std::vector<P2POp>& ops) override {
    // posted at once and matched by tag: nothing to group
    std::vector<WorkPtr> works;
    for (const P2POp& o : ops) {
      const bool sending = o.kind == P2POp::Kind::send;
      works.push_back(p2p(sending ? "send" : "recv", o.tensor, o.peer, o.tag, sending, true));
    }
    return works;
  }

 private:
  /// Runs fn on the worker; async returns the Work, sync waits.
  WorkPtr launch(const char* op, bool async_op, std::function<void()> fn) {
    auto wrapped = [op, fn = std::move(fn)] {
      try {
        fn();
      } catch (const Error&) {
        throw;
      } catch (const std::exception& e) {
        throw Error(std::string("[") + op + "] the collective failed: " + e.what() +
                    " (a rank exited, crashed or did not call it within the timeout)");
      }
    };
    auto work = std::make_shared<FutureWork>(worker_->submit(std::move(wrapped)));
    if (!async_op) {
      work->wait();
      return nullptr;
    }
    return work;
  }

  static void check_dtype(const char* op, const Tensor& t) {
    switch (t.dtype()) {
      case kFloat: case kDouble: case kInt32: case kInt64: case kInt8: case kUInt8: case kHalf: case kBFloat16:
        return;
      default: BRISK_CHECK(false, op, "the gloo backend does not reduce ", t.dtype(), " tensors");
    }
  }

  void allreduce_now(const Tensor& t, ReduceOp op) {
    gloo::AllreduceOptions o(ctx_);
    o.setTag(tag_++);
    o.setTimeout(timeout_);
    const size_t n = static_cast<size_t>(t.numel());
    switch (t.dtype()) {
#define BRISK_GLOO_CASE(st, T)            \
  case st: {                              \
    T* p = static_cast<T*>(t.data_ptr()); \
    o.setInput(p, n);                     \
    o.setOutput(p, n);                    \
    o.setReduceFunction(reduce_fn<T>(op)); \
    break;                                \
  }
      BRISK_GLOO_CASE(kFloat, float)
      BRISK_GLOO_CASE(kDouble, double)
      BRISK_GLOO_CASE(kInt32, int32_t)
      BRISK_GLOO_CASE(kInt64, int64_t)
      BRISK_GLOO_CASE(kInt8, int8_t)
      BRISK_GLOO_CASE(kUInt8, uint8_t)
      BRISK_GLOO_CASE(kHalf, gloo::float16)
#undef BRISK_GLOO_CASE
      case kBFloat16: {
        auto* p = static_cast<uint16_t*>(t.data_ptr());
        o.setInput(p, n);
        o.setOutput(p, n);
        o.setReduceFunction(
            [op](void* c, const void* a, const void* b, size_t k) { bf16_reduce(c, a, b, k, op); });
        break;
      }
      default: BRISK_CHECK(false, "all_reduce", "the gloo backend does not reduce ", t.dtype(), " tensors");
    }
    gloo::allreduce(o);
  }

  // Note [Point to point]
  // send and recv are posted at once from the caller's thread (not queued
  // behind the collectives: a send waiting for its recv, queued before the
  // recv on the same worker, would deadlock every rank of a ring, as PyTorch
  // also knows); their Work waits for the transfer to complete.
  class P2PWork final : public Work {
   public:
    P2PWork(const char* op, std::unique_ptr<gloo::transport::UnboundBuffer> buf, Tensor t, bool sending,
            std::chrono::milliseconds timeout)
        : op_(op), buf_(std::move(buf)), t_(std::move(t)), sending_(sending), timeout_(timeout) {}
    void wait() override {
      if (done_) return;
      SigpipeBlocked no_sigpipe;
      try {
        if (sending_)
          buf_->waitSend(timeout_);
        else
          buf_->waitRecv(timeout_);
      } catch (const std::exception& e) {
        throw Error(std::string("[") + op_ + "] the transfer failed: " + e.what() +
                    " (the other rank exited, crashed or did not post its side within the timeout)");
      }
      done_ = true;
    }
    bool is_completed() override { return done_; }

   private:
    const char* op_;
    std::unique_ptr<gloo::transport::UnboundBuffer> buf_;
    Tensor t_;  // keeps the memory alive until the transfer is done
    bool sending_;
    std::chrono::milliseconds timeout_;
    bool done_ = false;
  };

  WorkPtr p2p(const char* op, const Tensor& t, int peer, int tag, bool sending, bool async_op) {
    check_cpu_dense(op, t);
    SigpipeBlocked no_sigpipe;
    auto buf = ctx_->createUnboundBuffer(t.data_ptr(), static_cast<size_t>(t.nbytes()));
    const uint64_t slot = static_cast<uint64_t>(tag) + (uint64_t{1} << 40);  // apart from the collectives' tags
    if (sending)
      buf->send(peer, slot);
    else
      buf->recv(peer, slot);
    auto w = std::make_shared<P2PWork>(op, std::move(buf), t, sending, timeout_);
    if (!async_op) {
      w->wait();
      return nullptr;
    }
    return w;
  }

  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::rendezvous::Context> ctx_;
  uint32_t tag_ = 0;  // collectives' tags, in issue order (the same on every rank)
  std::unique_ptr<Worker> worker_;
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(const BackendArgs& args) { return std::make_unique<GlooBackend>(args); }

#endif  // BRISK_HAVE_GLOO

}  // namespace brisk::distributed::detail
