// The process group's backends (Note [Process-group backends] in
// process_group.cpp): Gloo for CPU tensors (gloo.cpp), NCCL for CUDA tensors
// (backend/cuda/nccl.cpp, in CUDA builds). The front functions of
// include/brisk/distributed.h check what does not depend on the backend
// (the group exists, ranks in range, one output per rank, shapes, AVG on a
// floating tensor); a backend checks devices and dtypes and runs the call.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "brisk/distributed.h"

namespace brisk::distributed::detail {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  /// Where the tensors of this backend's collectives live (the group's
  /// metadata exchanges, such as DDP's parameter check, use it).
  virtual Device device() const = 0;
  virtual WorkPtr all_reduce(const Tensor& t, ReduceOp op, bool async_op) = 0;
  virtual WorkPtr broadcast(const Tensor& t, int src, bool async_op) = 0;
  virtual WorkPtr all_gather(const std::vector<Tensor>& outputs, const Tensor& input, bool async_op) = 0;
  virtual WorkPtr reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op,
                                 bool async_op) = 0;
  virtual WorkPtr barrier(bool async_op) = 0;
  virtual WorkPtr send(const Tensor& t, int dst, int tag, bool async_op) = 0;
  virtual WorkPtr recv(const Tensor& t, int src, int tag, bool async_op) = 0;
  /// Posts every op (checked by the caller) and returns a Work per op.
  virtual std::vector<WorkPtr> batch_p2p(const std::vector<P2POp>& ops) = 0;
};

/// What init_process_group found out before it picks the backend.
struct BackendArgs {
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<Store> store;
  std::string host;  ///< MASTER_ADDR for env://, else 127.0.0.1
};

/// The environment variable `name`, or `fallback` when unset or empty
/// (process_group.cpp).
std::string env_str(const char* name, const std::string& fallback = "");

/// Null where this brisk was built without Gloo.
std::unique_ptr<Backend> make_gloo_backend(const BackendArgs& args);
bool gloo_built();

/// Defined in CUDA builds that found nccl.h (weak: null otherwise).
[[gnu::weak]] std::unique_ptr<Backend> make_nccl_backend(const BackendArgs& args);
/// Whether libnccl.so.2 opens and has what brisk calls; `why` says why
/// not. Weak as above.
[[gnu::weak]] bool nccl_loadable(std::string* why);

}  // namespace brisk::distributed::detail
