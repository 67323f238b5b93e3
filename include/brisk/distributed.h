// brisk::distributed: process groups and collectives on Gloo (CPU tensors),
// torch.distributed's API in C++ (issue 19, in progress: the process group
// and its collectives; DistributedDataParallel, the launcher and NCCL are
// not there yet).
//
//   // each process (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set, as torchrun does)
//   brisk::distributed::init_process_group("gloo");          // env://
//   Tensor g = ...;
//   brisk::distributed::all_reduce(g, brisk::distributed::ReduceOp::AVG);
//   brisk::distributed::destroy_process_group();
//
// Every collective runs on the group's worker thread in the order calls
// were made (all ranks must call them in the same order, as in PyTorch);
// `async_op` returns a Work to wait on. A rank that dies or stops calling
// makes the others raise a brisk::Error within the group's timeout. See
// docs/design/distributed.md.
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
  std::string backend = "gloo";
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

}  // namespace brisk::distributed
