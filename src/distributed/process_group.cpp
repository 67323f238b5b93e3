// brisk::distributed's process group (include/brisk/distributed.h).
//
// Note [Process-group backends]
// init_process_group does the rendezvous (env:// or file://, a store) and
// picks a backend by name: "gloo" (CPU tensors, distributed/gloo.cpp) or
// "nccl" (CUDA tensors, backend/cuda/nccl.cpp). The functions below check
// what any backend would (a group exists, ranks in range, one tensor per
// rank, equal shapes and dtypes, AVG on floating tensors) so that the
// messages are the same whichever runs; the backend checks devices and
// dtypes and runs the call. A Work's wait() means what it means in PyTorch:
// on gloo the host waits for the data; on nccl the caller's current CUDA
// stream waits for the collective (no host wait), as for every CUDA op.
#include <cstdlib>
#include <mutex>

#include "brisk/distributed.h"
#include "brisk/error.h"
#include "distributed/backend.h"

namespace brisk::distributed {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}
struct Group {
  int rank = 0, size = 1;
  // rank 0's TCP store serves the others: it lives as long as the group
  // (ranks still connecting need it after rank 0 is done)
  std::shared_ptr<Store> store;
  std::unique_ptr<detail::Backend> backend;
};

std::mutex g_mu;
std::unique_ptr<Group> g_group;

Group& group(const char* op) {
  std::lock_guard<std::mutex> lock(g_mu);
  BRISK_CHECK(g_group != nullptr, op, "the default process group is not initialized: call "
                                      "brisk::distributed::init_process_group first");
  return *g_group;
}

void check_dense(const char* op, const Tensor& t) {
  BRISK_CHECK(t.defined(), op, "the tensor is undefined");
  BRISK_CHECK(t.is_contiguous(), op, "the tensor must be contiguous (call .contiguous() first)");
}

void check_avg(const char* op, const Tensor& t, ReduceOp r) {
  if (r == ReduceOp::AVG)
    BRISK_CHECK(t.is_floating_point(), op, "ReduceOp::AVG needs a floating tensor, got ", t.dtype());
}

/// One tensor per rank, each with `like`'s shape and dtype.
void check_per_rank(const char* op, const char* what, const std::vector<Tensor>& ts, const Tensor& like, int size) {
  BRISK_CHECK(static_cast<int>(ts.size()) == size, op, "expected ", size, " ", what, " tensors (one per rank), got ",
              ts.size());
  for (const Tensor& t : ts)
    BRISK_CHECK(t.defined() && t.sizes() == like.sizes() && t.dtype() == like.dtype(), op, "each ", what,
                " must have the shape ", like.sizes(), " and dtype ", like.dtype());
}

std::string nccl_unavailable_reason() {
  if (!detail::make_nccl_backend)
    return "this brisk was built without CUDA or without NCCL's header (nccl.h): rebuild with the CUDA toolkit";
  std::string why;
  if (detail::nccl_loadable && !detail::nccl_loadable(&why)) return why;
  return "";
}

}  // namespace

std::string detail::env_str(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

bool is_gloo_available() { return detail::gloo_built(); }

bool is_nccl_available() { return nccl_unavailable_reason().empty(); }

void init_process_group(const std::string& backend, const InitOptions& options) {
  InitOptions o = options;
  o.backend = backend;
  init_process_group(o);
}

void init_process_group(const InitOptions& options) {
  const char* op = "init_process_group";
  const std::string& name = options.backend;
  BRISK_CHECK(name == "gloo" || name == "nccl", op, "backend '", name,
              "' is not one of brisk's: \"gloo\" (CPU tensors) or \"nccl\" (CUDA tensors)");
  if (name == "gloo")
    BRISK_CHECK(detail::gloo_built(), op, "this brisk was built without Gloo (install libgloo-dev and rebuild)");
  if (name == "nccl") {
    const std::string why = nccl_unavailable_reason();
    BRISK_CHECK(why.empty(), op, "the nccl backend is not available: ", why);
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    BRISK_CHECK(g_group == nullptr, op, "the default process group is already initialized");
  }
  const int rank = options.rank >= 0 ? options.rank : env_int("RANK", -1);
  const int size = options.world_size >= 0 ? options.world_size : env_int("WORLD_SIZE", -1);
  BRISK_CHECK(rank >= 0 && size >= 1 && rank < size, op, "need a rank in [0, world_size): got rank ", rank,
              " and world_size ", size, " (set RANK and WORLD_SIZE, or the options)");
  detail::BackendArgs args;
  args.rank = rank;
  args.size = size;
  args.timeout = options.timeout;
  args.store = options.store;
  args.host = "127.0.0.1";
  if (!args.store) {
    const std::string& m = options.init_method;
    if (m.rfind("env://", 0) == 0) {
      args.host = detail::env_str("MASTER_ADDR");
      const int port = env_int("MASTER_PORT", -1);
      BRISK_CHECK(!args.host.empty() && port > 0, op, "env:// needs MASTER_ADDR and MASTER_PORT in the environment");
      args.store = make_tcp_store(args.host, port, rank == 0, options.timeout);
    } else if (m.rfind("file://", 0) == 0) {
      args.store = make_file_store(m.substr(7), options.timeout);
    } else {
      BRISK_CHECK(false, op, "init_method must be env:// or file://..., got '", m, "'");
    }
  }
  auto g = std::make_unique<Group>();
  g->rank = rank;
  g->size = size;
  g->store = args.store;
  g->backend = name == "gloo" ? detail::make_gloo_backend(args) : detail::make_nccl_backend(args);
  std::lock_guard<std::mutex> lock(g_mu);
  g_group = std::move(g);
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_group != nullptr;
}

int get_rank() { return group("get_rank").rank; }
int get_world_size() { return group("get_world_size").size; }
std::string get_backend() { return group("get_backend").backend->name(); }
Device get_backend_device() { return group("get_backend_device").backend->device(); }

void destroy_process_group() {
  std::unique_ptr<Group> g;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g = std::move(g_group);
  }
  g.reset();  // the backend finishes its pending work, then closes
}

WorkPtr all_reduce(Tensor& tensor, ReduceOp op, bool async_op) {
  check_dense("all_reduce", tensor);
  check_avg("all_reduce", tensor, op);
  return group("all_reduce").backend->all_reduce(tensor, op, async_op);
}

WorkPtr broadcast(Tensor& tensor, int src, bool async_op) {
  check_dense("broadcast", tensor);
  Group& g = group("broadcast");
  BRISK_CHECK(src >= 0 && src < g.size, "broadcast", "src ", src, " is not a rank of a group of ", g.size);
  return g.backend->broadcast(tensor, src, async_op);
}

WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input, bool async_op) {
  check_dense("all_gather", input);
  Group& g = group("all_gather");
  check_per_rank("all_gather", "output", outputs, input, g.size);
  return g.backend->all_gather(outputs, input, async_op);
}

WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op, bool async_op) {
  check_dense("reduce_scatter", output);
  check_avg("reduce_scatter", output, op);
  Group& g = group("reduce_scatter");
  check_per_rank("reduce_scatter", "input", inputs, output, g.size);
  return g.backend->reduce_scatter(output, inputs, op, async_op);
}

WorkPtr barrier(bool async_op) { return group("barrier").backend->barrier(async_op); }

namespace {
WorkPtr p2p(const char* op, const Tensor& t, int peer, int tag, bool sending, bool async_op) {
  check_dense(op, t);
  Group& g = group(op);
  BRISK_CHECK(peer >= 0 && peer < g.size && peer != g.rank, op, sending ? "dst " : "src ", peer,
              " must be another rank of the ", g.size);
  BRISK_CHECK(tag >= 0, op, "tag must be nonnegative, got ", tag);
  return sending ? g.backend->send(t, peer, tag, async_op) : g.backend->recv(t, peer, tag, async_op);
}
}  // namespace

WorkPtr send(const Tensor& tensor, int dst, int tag, bool async_op) {
  return p2p("send", tensor, dst, tag, true, async_op);
}
WorkPtr recv(Tensor& tensor, int src, int tag, bool async_op) { return p2p("recv", tensor, src, tag, false, async_op); }

std::vector<WorkPtr> batch_isend_irecv(const std::vector<P2POp>& ops) {
  const char* op = "batch_isend_irecv";
  Group& g = group(op);
  for (const P2POp& o : ops) {
    check_dense(op, o.tensor);
    BRISK_CHECK(o.peer >= 0 && o.peer < g.size && o.peer != g.rank, op, "peer ", o.peer,
                " must be another rank of the ", g.size);
    BRISK_CHECK(o.tag >= 0, op, "tag must be nonnegative, got ", o.tag);
  }
  if (ops.empty()) return {};
  return g.backend->batch_p2p(ops);
}

}  // namespace brisk::distributed
