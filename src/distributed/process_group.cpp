// brisk::distributed's process group on Gloo (include/brisk/distributed.h).
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "brisk/autograd.h"
#include "brisk/distributed.h"
#include "brisk/error.h"
#include "brisk/ops.h"

#ifdef BRISK_HAVE_GLOO
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#endif

namespace brisk::distributed {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}
std::string env_str(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}


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

#ifdef BRISK_HAVE_GLOO

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

struct Group {
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout;
  std::shared_ptr<distributed::Store> store;
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  uint32_t tag = 0;  // collectives' tags, in issue order (the same on every rank)
  std::unique_ptr<Worker> worker;
};

std::mutex g_mu;
std::unique_ptr<Group> g_group;

Group& group(const char* op) {
  std::lock_guard<std::mutex> lock(g_mu);
  BRISK_CHECK(g_group != nullptr, op, "the default process group is not initialized: call "
                                      "brisk::distributed::init_process_group first");
  return *g_group;
}

/// Runs fn on the group's worker; async returns the Work, sync waits.
WorkPtr launch(const char* op, bool async_op, std::function<void()> fn) {
  Group& g = group(op);
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
  auto work = std::make_shared<FutureWork>(g.worker->submit(std::move(wrapped)));
  if (!async_op) {
    work->wait();
    return nullptr;
  }
  return work;
}

void check_cpu_dense(const char* op, const Tensor& t) {
  BRISK_CHECK(t.defined(), op, "the tensor is undefined");
  BRISK_CHECK(t.is_cpu(), op, "the gloo backend takes CPU tensors, got one on ", t.device().str(),
              " (CUDA tensors need the nccl backend, which brisk does not have yet)");
  BRISK_CHECK(t.is_contiguous(), op, "the tensor must be contiguous (call .contiguous() first)");
}

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <class T>
ReduceFn reduce_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return &gloo::sum<T>;
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

void allreduce_now(Group& g, const Tensor& t, ReduceOp op) {
  gloo::AllreduceOptions o(g.ctx);
  o.setTag(g.tag++);
  o.setTimeout(g.timeout);
  const size_t n = static_cast<size_t>(t.numel());
  switch (t.dtype()) {
#define BRISK_GLOO_CASE(st, T)                                     \
  case st: {                                                       \
    T* p = static_cast<T*>(t.data_ptr());                          \
    o.setInput(p, n);                                              \
    o.setOutput(p, n);                                             \
    o.setReduceFunction(reduce_fn<T>(op));                         \
    break;                                                         \
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
      o.setReduceFunction([op](void* c, const void* a, const void* b, size_t k) { bf16_reduce(c, a, b, k, op); });
      break;
    }
    default: BRISK_CHECK(false, "all_reduce", "the gloo backend does not reduce ", t.dtype(), " tensors");
  }
  gloo::allreduce(o);
}

void check_avg(const char* op, const Tensor& t, ReduceOp r) {
  if (r == ReduceOp::AVG)
    BRISK_CHECK(t.is_floating_point(), op, "ReduceOp::AVG needs a floating tensor, got ", t.dtype());
}

#endif  // BRISK_HAVE_GLOO

}  // namespace

bool is_gloo_available() {
#ifdef BRISK_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

void init_process_group(const std::string& backend, const InitOptions& options) {
  InitOptions o = options;
  o.backend = backend;
  init_process_group(o);
}

void init_process_group(const InitOptions& options) {
  const char* op = "init_process_group";
  BRISK_CHECK(options.backend == "gloo", op, "backend '", options.backend,
              "' is not available: brisk has the gloo backend (CPU tensors); nccl is not built yet");
#ifndef BRISK_HAVE_GLOO
  BRISK_CHECK(false, op, "this brisk was built without Gloo (install libgloo-dev and rebuild)");
#else
  {
    std::lock_guard<std::mutex> lock(g_mu);
    BRISK_CHECK(g_group == nullptr, op, "the default process group is already initialized");
  }
  const int rank = options.rank >= 0 ? options.rank : env_int("RANK", -1);
  const int size = options.world_size >= 0 ? options.world_size : env_int("WORLD_SIZE", -1);
  BRISK_CHECK(rank >= 0 && size >= 1 && rank < size, op, "need a rank in [0, world_size): got rank ", rank,
              " and world_size ", size, " (set RANK and WORLD_SIZE, or the options)");
  std::shared_ptr<Store> store = options.store;
  std::string host = "127.0.0.1";
  if (!store) {
    const std::string& m = options.init_method;
    if (m.rfind("env://", 0) == 0) {
      host = env_str("MASTER_ADDR");
      const int port = env_int("MASTER_PORT", -1);
      BRISK_CHECK(!host.empty() && port > 0, op, "env:// needs MASTER_ADDR and MASTER_PORT in the environment");
      store = make_tcp_store(host, port, rank == 0, options.timeout);
    } else if (m.rfind("file://", 0) == 0) {
      store = make_file_store(m.substr(7), options.timeout);
    } else {
      BRISK_CHECK(false, op, "init_method must be env:// or file://..., got '", m, "'");
    }
  }
  auto g = std::make_unique<Group>();
  g->rank = rank;
  g->size = size;
  g->timeout = options.timeout;
  g->store = store;
  gloo::transport::tcp::attr attr;
  const std::string iface = env_str("GLOO_SOCKET_IFNAME");
  if (!iface.empty())
    attr.iface = iface;
  else
    attr.hostname = host == "localhost" || host.rfind("127.", 0) == 0 ? "127.0.0.1" : env_str("BRISK_HOSTNAME", host);
  try {
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    g->ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    g->ctx->setTimeout(options.timeout);
    GlooStore gs(store);
    g->ctx->connectFullMesh(gs, dev);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    BRISK_CHECK(false, op, "connecting the ", size, " ranks failed: ", e.what());
  }
  g->worker = std::make_unique<Worker>();
  std::lock_guard<std::mutex> lock(g_mu);
  g_group = std::move(g);
#endif
}

bool is_initialized() {
#ifdef BRISK_HAVE_GLOO
  std::lock_guard<std::mutex> lock(g_mu);
  return g_group != nullptr;
#else
  return false;
#endif
}

int get_rank() {
#ifdef BRISK_HAVE_GLOO
  return group("get_rank").rank;
#else
  BRISK_CHECK(false, "get_rank", "the default process group is not initialized");
#endif
}
int get_world_size() {
#ifdef BRISK_HAVE_GLOO
  return group("get_world_size").size;
#else
  BRISK_CHECK(false, "get_world_size", "the default process group is not initialized");
#endif
}

void destroy_process_group() {
#ifdef BRISK_HAVE_GLOO
  std::unique_ptr<Group> g;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g = std::move(g_group);
  }
  g.reset();  // the worker drains its queue, then the context closes
#endif
}

#ifdef BRISK_HAVE_GLOO

WorkPtr all_reduce(Tensor& tensor, ReduceOp op, bool async_op) {
  check_cpu_dense("all_reduce", tensor);
  check_avg("all_reduce", tensor, op);
  Group& g = group("all_reduce");
  Tensor t = tensor;
  return launch("all_reduce", async_op, [&g, t, op] {
    allreduce_now(g, t, op);
    if (op == ReduceOp::AVG) {
      NoGradGuard ng;
      Tensor(t).div_(static_cast<double>(g.size));
    }
  });
}

WorkPtr broadcast(Tensor& tensor, int src, bool async_op) {
  check_cpu_dense("broadcast", tensor);
  Group& g = group("broadcast");
  BRISK_CHECK(src >= 0 && src < g.size, "broadcast", "src ", src, " is not a rank of a group of ", g.size);
  Tensor t = tensor;
  return launch("broadcast", async_op, [&g, t, src] {
    gloo::BroadcastOptions o(g.ctx);
    o.setTag(g.tag++);
    o.setTimeout(g.timeout);
    o.setRoot(src);
    o.setOutput(static_cast<uint8_t*>(t.data_ptr()), static_cast<size_t>(t.nbytes()));
    gloo::broadcast(o);
  });
}

WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input, bool async_op) {
  check_cpu_dense("all_gather", input);
  Group& g = group("all_gather");
  BRISK_CHECK(static_cast<int>(outputs.size()) == g.size, "all_gather", "expected ", g.size,
              " output tensors (one per rank), got ", outputs.size());
  for (const Tensor& o : outputs)
    BRISK_CHECK(o.defined() && o.sizes() == input.sizes() && o.dtype() == input.dtype() && o.is_cpu(), "all_gather",
                "each output must have the input's shape ", input.sizes(), " and dtype ", input.dtype());
  std::vector<Tensor> outs = outputs;
  Tensor in = input;
  return launch("all_gather", async_op, [&g, outs, in] {
    const size_t bytes = static_cast<size_t>(in.nbytes());
    Tensor flat = empty({static_cast<int64_t>(bytes) * g.size}, kUInt8);
    gloo::AllgatherOptions o(g.ctx);
    o.setTag(g.tag++);
    o.setTimeout(g.timeout);
    o.setInput(static_cast<uint8_t*>(in.data_ptr()), bytes);
    o.setOutput(static_cast<uint8_t*>(flat.data_ptr()), bytes * static_cast<size_t>(g.size));
    gloo::allgather(o);
    for (int r = 0; r < g.size; ++r) {
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

WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op, bool async_op) {
  check_cpu_dense("reduce_scatter", output);
  check_avg("reduce_scatter", output, op);
  Group& g = group("reduce_scatter");
  BRISK_CHECK(static_cast<int>(inputs.size()) == g.size, "reduce_scatter", "expected ", g.size,
              " input tensors (one per rank), got ", inputs.size());
  for (const Tensor& i : inputs)
    BRISK_CHECK(i.defined() && i.sizes() == output.sizes() && i.dtype() == output.dtype() && i.is_cpu(),
                "reduce_scatter", "each input must have the output's shape ", output.sizes(), " and dtype ",
                output.dtype());
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
  return launch("reduce_scatter", async_op, [&g, flat, out, op] {
    allreduce_now(g, flat, op);
    NoGradGuard ng;
    const int64_t n = out.numel();
    Tensor mine = flat.narrow(0, n * g.rank, n).view(out.sizes());
    if (op == ReduceOp::AVG) mine = mine / static_cast<double>(g.size);
    Tensor(out).copy_(mine);
  });
}

WorkPtr barrier(bool async_op) {
  Group& g = group("barrier");
  return launch("barrier", async_op, [&g] {
    gloo::BarrierOptions o(g.ctx);
    o.setTag(g.tag++);
    o.setTimeout(g.timeout);
    gloo::barrier(o);
  });
}

namespace {

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
  Group& g = group(op);
  BRISK_CHECK(peer >= 0 && peer < g.size && peer != g.rank, op, sending ? "dst " : "src ", peer,
              " must be another rank of the ", g.size);
  BRISK_CHECK(tag >= 0, op, "tag must be nonnegative, got ", tag);
  auto buf = g.ctx->createUnboundBuffer(t.data_ptr(), static_cast<size_t>(t.nbytes()));
  const uint64_t slot = static_cast<uint64_t>(tag) + (uint64_t{1} << 40);  // apart from the collectives' tags
  if (sending)
    buf->send(peer, slot);
  else
    buf->recv(peer, slot);
  auto w = std::make_shared<P2PWork>(op, std::move(buf), t, sending, g.timeout);
  if (!async_op) {
    w->wait();
    return nullptr;
  }
  return w;
}

}  // namespace

WorkPtr send(const Tensor& tensor, int dst, int tag, bool async_op) {
  return p2p("send", tensor, dst, tag, true, async_op);
}
WorkPtr recv(Tensor& tensor, int src, int tag, bool async_op) { return p2p("recv", tensor, src, tag, false, async_op); }

#else  // no Gloo: every collective says so

#define BRISK_NO_GLOO(name) \
  BRISK_CHECK(false, name, "the default process group is not initialized (this brisk was built without Gloo)")
WorkPtr all_reduce(Tensor&, ReduceOp, bool) { BRISK_NO_GLOO("all_reduce"); }
WorkPtr broadcast(Tensor&, int, bool) { BRISK_NO_GLOO("broadcast"); }
WorkPtr all_gather(std::vector<Tensor>&, const Tensor&, bool) { BRISK_NO_GLOO("all_gather"); }
WorkPtr reduce_scatter(Tensor&, const std::vector<Tensor>&, ReduceOp, bool) { BRISK_NO_GLOO("reduce_scatter"); }
WorkPtr barrier(bool) { BRISK_NO_GLOO("barrier"); }
WorkPtr send(const Tensor&, int, int, bool) { BRISK_NO_GLOO("send"); }
WorkPtr recv(Tensor&, int, int, bool) { BRISK_NO_GLOO("recv"); }
#undef BRISK_NO_GLOO

#endif

}  // namespace brisk::distributed
