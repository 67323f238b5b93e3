// brisk::distributed: process groups and collectives, torch.distributed's
// API in C++, on Gloo (CPU tensors) or NCCL (CUDA tensors). The launcher is
// tools/brisk_run.cpp (brisk-run); DistributedDataParallel is in
// brisk/nn/parallel.h.
//
//   // each process (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set, as torchrun does)
//   brisk::distributed::init_process_group("gloo");          // env://; or "nccl"
//   Tensor g = ...;
//   brisk::distributed::all_reduce(g, brisk::distributed::ReduceOp::AVG);
//   brisk::distributed::destroy_process_group();
//
// All ranks must issue the collectives in the same order, as in PyTorch;
// `async_op` returns a Work to wait on. On gloo a collective runs on the
// group's worker thread and wait() is a host wait; on nccl it is queued on
// the group's CUDA stream after the work already queued on the caller's
// current stream, and wait() (or the call itself, when not async) makes the
// current stream wait for it, with no host wait. A rank that dies or stops
// calling makes the others raise a brisk::Error within the group's timeout.
// See docs/design/distributed.md.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "brisk/tensor.h"

namespace brisk::distributed {

enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };

/// Whether this build has the Gloo backend (Debian's libgloo-dev).
bool is_gloo_available();
/// Whether the nccl backend can be used: a CUDA build whose libnccl.so.2
/// (the CUDA toolkit's, opened at first use) loads. Needs no GPU.
bool is_nccl_available();

/// A key-value store for rendezvous (torch.distributed.Store): rank 0 of
/// a TCPStore serves it; a FileStore lives in a shared directory.
class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  /// Blocks until the key is set (a brisk::Error after the store's timeout).
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  /// Adds to the integer at key (0 if unset) and returns the result.
  virtual int64_t add(const std::string& key, int64_t amount) = 0;
  /// Blocks until every key is set.
  virtual void wait(const std::vector<std::string>& keys) = 0;
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
};

/// A store served over TCP by the process with is_master (which listens on
/// host:port); the others connect, retrying until the timeout.
std::shared_ptr<Store> make_tcp_store(const std::string& host, int port, bool is_master,
                                      std::chrono::milliseconds timeout);
/// A store in a directory every rank can reach (file:// init).
std::shared_ptr<Store> make_file_store(const std::string& path, std::chrono::milliseconds timeout);

struct InitOptions {
  std::string backend = "gloo";  ///< "gloo" (CPU tensors) or "nccl" (CUDA tensors)
  /// "env://" (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from the
  /// environment, as torchrun sets them) or "file:///path" (rank and
  /// world_size given here or in the environment).
  std::string init_method = "env://";
  int rank = -1;        ///< -1: from RANK
  int world_size = -1;  ///< -1: from WORLD_SIZE
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  std::shared_ptr<Store> store;  ///< instead of init_method

  InitOptions& set_init_method(std::string v) { init_method = std::move(v); return *this; }
  InitOptions& set_rank(int v) { rank = v; return *this; }
  InitOptions& set_world_size(int v) { world_size = v; return *this; }
  InitOptions& set_timeout(std::chrono::milliseconds v) { timeout = v; return *this; }
  InitOptions& set_store(std::shared_ptr<Store> s) { store = std::move(s); return *this; }
};

/// A pending collective (torch.distributed's Work): wait() rethrows its error.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool is_completed() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

void init_process_group(const std::string& backend, const InitOptions& options = {});
void init_process_group(const InitOptions& options);
bool is_initialized();
int get_rank();
int get_world_size();
/// "gloo" or "nccl".
std::string get_backend();
/// Where the group's tensors live: the CPU for gloo; for nccl the CUDA
/// device of the group's communicator (the current device at its first
/// collective, or the one set at init: call cuda::set_device(LOCAL_RANK)
/// first, as with torchrun).
Device get_backend_device();
/// Waits for the group's pending work and closes it.
void destroy_process_group();

/// In place: every rank's tensor becomes the reduction over ranks. AVG is
/// for floating tensors (the sum divided by the world size).
WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::SUM, bool async_op = false);
/// In place: every rank's tensor becomes rank src's.
WorkPtr broadcast(Tensor& tensor, int src, bool async_op = false);
/// outputs[r] (one per rank, input's shape and dtype) receives rank r's input.
WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input, bool async_op = false);
/// output receives the reduction over ranks of inputs[rank] (inputs: one
/// per rank, each output's shape).
WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op = ReduceOp::SUM,
                       bool async_op = false);
WorkPtr barrier(bool async_op = false);
/// Point to point: `tag` matches a send with its recv.
WorkPtr send(const Tensor& tensor, int dst, int tag = 0, bool async_op = false);
WorkPtr recv(Tensor& tensor, int src, int tag = 0, bool async_op = false);

/// One send or receive of a batch (torch.distributed.P2POp).
struct P2POp {
  enum class Kind { send, recv };
  Kind kind;
  Tensor tensor;
  int peer;
  int tag = 0;
  static P2POp isend(const Tensor& t, int dst, int tag = 0) { return {Kind::send, t, dst, tag}; }
  static P2POp irecv(const Tensor& t, int src, int tag = 0) { return {Kind::recv, t, src, tag}; }
};
/// Posts the sends and receives together and returns one Work per op
/// (torch.distributed.batch_isend_irecv). On nccl they form one NCCL group
/// call: a send and a receive that wait for each other (a ring exchange)
/// must be in one batch there, or the two ranks' streams deadlock; NCCL
/// ignores tags (the order of the calls pairs them). On gloo every op is
/// posted at once and matched by tag.
std::vector<WorkPtr> batch_isend_irecv(const std::vector<P2POp>& ops);

}  // namespace brisk::distributed
