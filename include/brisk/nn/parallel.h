// nn::parallel::DistributedDataParallel: PyTorch's DDP on brisk::distributed
// (issue 19). Wrap the model after init_process_group; each rank runs its
// own shard of every batch; backward averages the gradients across ranks,
// bucket by bucket, while the backward is still running.
//
//   brisk::distributed::init_process_group("gloo");
//   auto model = nn::Sequential(...);
//   nn::parallel::DistributedDataParallel ddp(model);
//   Tensor loss = F::cross_entropy(ddp->forward(x_shard), y_shard);
//   loss.backward();                 // gradients averaged over the ranks
//   opt.step();
//
// See docs/design/distributed.md.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "brisk/distributed.h"
#include "brisk/nn/module.h"

namespace brisk::nn::parallel {

struct DistributedDataParallelOptions {
  /// Broadcast the module's buffers (batch-norm statistics) from rank 0
  /// before each forward.
  bool broadcast_buffers = true;
  /// Bucket size: gradients are all-reduced in buckets of about this many
  /// megabytes (the first bucket, which is ready first, about first_bucket_mb).
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;
  /// Parameters that get no gradient in an iteration are reduced as zeros
  /// (other ranks may have used them); without it, such a parameter is an
  /// error naming it at the end of the backward.
  bool find_unused_parameters = false;
  /// After the first iteration each parameter's .grad() is a view of its
  /// slot in the bucket buffers: backward accumulates straight into the
  /// buckets (no copy) and the gradients cost no memory of their own, while
  /// they are zeroed in place (optimizer.zero_grad(false)); setting them to
  /// none makes the next backward allocate and copy again. (torch's
  /// gradient_as_bucket_view.)
  bool gradient_as_bucket_view = false;

  DistributedDataParallelOptions& set_broadcast_buffers(bool v) { broadcast_buffers = v; return *this; }
  DistributedDataParallelOptions& set_bucket_cap_mb(double v) { bucket_cap_mb = v; return *this; }
  DistributedDataParallelOptions& set_first_bucket_mb(double v) { first_bucket_mb = v; return *this; }
  DistributedDataParallelOptions& set_find_unused_parameters(bool v) { find_unused_parameters = v; return *this; }
  DistributedDataParallelOptions& set_gradient_as_bucket_view(bool v) { gradient_as_bucket_view = v; return *this; }
};

class DistributedDataParallelImpl : public Module {
 public:
  /// Checks that every rank has the same parameters (names and shapes) and
  /// broadcasts rank 0's parameters and buffers.
  explicit DistributedDataParallelImpl(std::shared_ptr<Module> module, DistributedDataParallelOptions options = {});
  template <class H>
    requires requires(const H& h) { h.ptr(); }
  explicit DistributedDataParallelImpl(const H& holder, DistributedDataParallelOptions options = {})
      : DistributedDataParallelImpl(std::static_pointer_cast<Module>(holder.ptr()), options) {}
  ~DistributedDataParallelImpl() override;

  Tensor forward(const Tensor& x) override;
  const std::shared_ptr<Module>& module() const { return module_; }

  /// Gradient accumulation: backward passes inside the guard's lifetime
  /// keep their gradients local; the next backward outside it averages the
  /// accumulated gradients (torch's DDP.no_sync()).
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallelImpl& d) : d_(d), prev_(d.sync_) { d.sync_ = false; }
    ~NoSync() { d_.sync_ = prev_; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallelImpl& d_;
    bool prev_;
  };
  NoSync no_sync() { return NoSync(*this); }

  /// The buckets' parameter indices (into module()->parameters()), in the
  /// order their all-reduces start; rebuilt after the first iteration in the
  /// order gradients arrived.
  std::vector<std::vector<size_t>> bucket_indices() const;

  struct Reducer;

 private:
  std::shared_ptr<Module> module_;
  DistributedDataParallelOptions options_;
  bool sync_ = true;
  std::shared_ptr<Reducer> reducer_;
};
BRISK_MODULE(DistributedDataParallel);

}  // namespace brisk::nn::parallel
