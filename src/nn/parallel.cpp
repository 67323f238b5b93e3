// nn::parallel::DistributedDataParallel (include/brisk/nn/parallel.h).
#include "brisk/nn/parallel.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "brisk/autograd.h"
#include "brisk/error.h"
#include "brisk/ops.h"

namespace brisk::nn::parallel {

namespace dist = brisk::distributed;

// Note [DDP's reducer]
// Each parameter that requires grad belongs to one bucket (same dtype,
// about bucket_cap_mb; the first about first_bucket_mb), buckets laid out
// in reverse registration order, since the backward produces the last
// layers' gradients first. A post-accumulate-grad hook on each parameter
// runs once its .grad() holds this backward's gradient; the hook copies it
// into the bucket's flat buffer (with gradient_as_bucket_view, .grad() is a
// view of that buffer after the first iteration, and there is nothing to
// copy) and when a bucket's last parameter has arrived, starts the
// bucket's all-reduce asynchronously: communication overlaps the rest of
// the backward. A callback queued for the end of the backward
// (autograd::queue_callback) reduces the buckets that never completed
// (unused parameters, as zeros, with find_unused_parameters; otherwise an
// error naming them), waits for every all-reduce and writes the averages
// into .grad() (or, as views, makes .grad() the averaged slots). The first
// iteration records the order gradients arrived in; the buckets are rebuilt
// in that order for the next ones.
struct DistributedDataParallelImpl::Reducer {
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;  // element offset of each in flat
    Tensor flat;
    int pending = 0;
    dist::WorkPtr work;
  };
  std::vector<Tensor> params;
  std::vector<std::string> names;
  std::vector<size_t> bucket_of, slot_of;
  std::vector<Bucket> buckets;
  std::vector<bool> ready;
  size_t n_ready = 0;  // of this backward
  std::vector<size_t> arrival;  // the first iteration's order
  bool rebuilt = false, in_backward = false;
  double cap_mb, first_mb;
  bool find_unused, as_view;
  std::vector<unsigned> hooks;
  std::mutex mu;

  void build(const std::vector<size_t>& order) {
    buckets.clear();
    bucket_of.assign(params.size(), 0);
    slot_of.assign(params.size(), 0);
    std::map<ScalarType, size_t> open;  // dtype -> index of its bucket being filled
    std::map<ScalarType, int64_t> bytes;
    for (size_t i : order) {
      const Tensor& p = params[i];
      const ScalarType dt = p.dtype();
      const double cap = (buckets.empty() ? first_mb : cap_mb) * 1024 * 1024;
      auto it = open.find(dt);
      if (it == open.end() || static_cast<double>(bytes[dt]) >= cap) {
        buckets.emplace_back();
        open[dt] = buckets.size() - 1;
        bytes[dt] = 0;
        it = open.find(dt);
      }
      Bucket& b = buckets[it->second];
      bucket_of[i] = it->second;
      slot_of[i] = b.params.size();
      b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + params[b.params.back()].numel());
      b.params.push_back(i);
      bytes[dt] += p.numel() * static_cast<int64_t>(element_size(dt));
    }
    for (Bucket& b : buckets) {
      const Tensor& last = params[b.params.back()];
      b.flat = zeros({b.offsets.back() + last.numel()}, last.options());
    }
  }

  void start_iteration() {
    for (Bucket& b : buckets) {
      b.pending = static_cast<int>(b.params.size());
      b.work.reset();
    }
    ready.assign(params.size(), false);
    n_ready = 0;
    in_backward = true;
  }

  void launch(Bucket& b) { b.work = dist::all_reduce(b.flat, dist::ReduceOp::SUM, /*async_op=*/true); }

  /// Parameter i's slot in its bucket, shaped as the parameter.
  Tensor slot(size_t i) {
    const Bucket& b = buckets[bucket_of[i]];
    return b.flat.narrow(0, b.offsets[slot_of[i]], params[i].numel()).view(params[i].sizes());
  }
  static bool same_memory(const Tensor& a, const Tensor& b) {
    return a.defined() && b.defined() && a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() &&
           a.strides() == b.strides() && a.dtype() == b.dtype();
  }

  void on_grad(size_t i) {
    std::lock_guard<std::mutex> lock(mu);
    if (!in_backward) start_iteration();
    if (ready[i]) return;  // (a second gradient in one pass: accumulated locally as usual)
    if (n_ready++ == 0) autograd::queue_callback([this] { finish(); });
    ready[i] = true;
    if (!rebuilt) arrival.push_back(i);
    Bucket& b = buckets[bucket_of[i]];
    const Tensor& p = params[i];
    NoGradGuard ng;
    Tensor s = slot(i);
    if (!same_memory(p.grad(), s)) {  // (a bucket view already holds it)
      s.copy_(p.grad());
      if (as_view) p.mutable_grad() = s;
    }
    if (--b.pending == 0) launch(b);
  }

  void finish() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> unused;
    for (size_t i = 0; i < params.size(); ++i)
      if (!ready[i]) unused.push_back(names[i]);
    if (!unused.empty() && !find_unused) {
      in_backward = false;
      std::string list;
      for (const auto& n : unused) list += (list.empty() ? "" : ", ") + n;
      BRISK_CHECK(false, "DistributedDataParallel", "parameters that received no gradient in this backward: ", list,
                  ". Pass DistributedDataParallelOptions().set_find_unused_parameters(true) if the model does not "
                  "use every parameter in each iteration (the other ranks wait for their gradients otherwise).");
    }
    NoGradGuard ng;
    for (Bucket& b : buckets) {
      if (b.pending == 0) continue;
      for (size_t k = 0; k < b.params.size(); ++k) {
        const size_t i = b.params[k];
        if (ready[i]) continue;
        const Tensor& p = params[i];
        Tensor s = slot(i);
        if (!p.grad().defined())
          s.zero_();
        else if (!same_memory(p.grad(), s))
          s.copy_(p.grad());
      }
      b.pending = 0;
      launch(b);
    }
    const double world = static_cast<double>(dist::get_world_size());
    for (Bucket& b : buckets) {
      b.work->wait();
      b.flat.div_(world);
      for (size_t k = 0; k < b.params.size(); ++k) {
        const Tensor& p = params[b.params[k]];
        const Tensor avg = slot(b.params[k]);
        if (as_view)
          p.mutable_grad() = avg;  // (already so, unless the gradient was new this iteration)
        else if (p.grad().defined())
          p.mutable_grad().copy_(avg);
        else
          p.mutable_grad() = avg.clone();
      }
    }
    in_backward = false;
    if (!rebuilt) {
      // the next iterations' buckets follow the order gradients arrived in
      std::vector<size_t> order = arrival;
      std::vector<bool> seen(params.size(), false);
      for (size_t i : order) seen[i] = true;
      for (size_t i = params.size(); i-- > 0;)
        if (!seen[i]) order.push_back(i);
      build(order);
      rebuilt = true;
      if (as_view) {  // the gradients move into the new buckets
        for (size_t i = 0; i < params.size(); ++i) {
          Tensor s = slot(i);
          s.copy_(params[i].grad());
          params[i].mutable_grad() = s;
        }
      }
    }
  }
};

namespace {

/// Rank 0's shape per parameter against this rank's: an error naming the
/// first that differs.
void check_same_parameters(const std::vector<std::string>& names, const std::vector<Tensor>& params) {
  const int world = dist::get_world_size();
  const Device dev = dist::get_backend_device();  // (nccl gathers CUDA tensors)
  Tensor count = tensor(std::vector<int64_t>{static_cast<int64_t>(params.size())}).to(dev);
  std::vector<Tensor> counts;
  for (int r = 0; r < world; ++r) counts.push_back(empty({1}, TensorOptions(kInt64).device(dev)));
  dist::all_gather(counts, count);
  for (Tensor& c : counts) c = c.to(kCPU);
  for (int r = 0; r < world; ++r)
    BRISK_CHECK(counts[r].item<int64_t>() == static_cast<int64_t>(params.size()), "DistributedDataParallel",
                "rank ", dist::get_rank(), " has ", params.size(), " parameters that require grad but rank ", r,
                " has ", counts[r].item<int64_t>(), ": every rank must build the same model");
  constexpr int64_t kMaxDims = 8;
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<int64_t> sig(kMaxDims + 2, -1);
    sig[0] = params[i].dim();
    sig[1] = static_cast<int64_t>(params[i].dtype());
    for (int64_t d = 0; d < std::min<int64_t>(params[i].dim(), kMaxDims); ++d) sig[2 + d] = params[i].size(d);
    std::vector<Tensor> all;
    for (int r = 0; r < world; ++r) all.push_back(empty({kMaxDims + 2}, TensorOptions(kInt64).device(dev)));
    dist::all_gather(all, tensor(sig).to(dev));
    for (Tensor& a : all) a = a.to(kCPU);
    for (int r = 0; r < world; ++r)
      BRISK_CHECK(equal(all[r], all[0]), "DistributedDataParallel", "parameter ", names[i], " has shape ",
                  params[i].sizes(), " and dtype ", params[i].dtype(), " on rank ", dist::get_rank(),
                  " but not the same on rank ", r, ": every rank must build the same model");
  }
}

/// Rank 0's values of the tensors everywhere, one broadcast per dtype (of
/// their concatenation) instead of one per tensor.
void broadcast_coalesced(const std::vector<Tensor>& tensors) {
  NoGradGuard ng;
  std::map<ScalarType, std::vector<Tensor>> groups;
  for (const Tensor& t : tensors)
    if (t.numel() > 0) groups[t.dtype()].push_back(t);
  for (auto& [dt, ts] : groups) {
    std::vector<Tensor> flat_parts;
    for (const Tensor& t : ts) flat_parts.push_back(t.reshape({-1}));
    Tensor flat = cat(flat_parts, 0);
    dist::broadcast(flat, 0);
    int64_t off = 0;
    for (const Tensor& t : ts) {
      Tensor(t).copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
      off += t.numel();
    }
  }
}

}  // namespace

DistributedDataParallelImpl::DistributedDataParallelImpl(std::shared_ptr<Module> module,
                                                         DistributedDataParallelOptions options)
    : module_(std::move(module)), options_(options) {
  const char* op = "DistributedDataParallel";
  BRISK_CHECK(module_ != nullptr, op, "the module is null");
  BRISK_CHECK(dist::is_initialized(), op,
              "the default process group is not initialized: call brisk::distributed::init_process_group first");
  BRISK_CHECK(options_.bucket_cap_mb > 0 && options_.first_bucket_mb > 0, op, "bucket sizes must be positive");
  register_module("module", module_);
  reducer_ = std::make_shared<Reducer>();
  Reducer& r = *reducer_;
  r.cap_mb = options_.bucket_cap_mb;
  r.first_mb = options_.first_bucket_mb;
  r.find_unused = options_.find_unused_parameters;
  r.as_view = options_.gradient_as_bucket_view;
  for (const auto& item : module_->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    r.names.push_back(item.key());
    r.params.push_back(item.value());
  }
  check_same_parameters(r.names, r.params);
  {
    std::vector<Tensor> state = r.params;
    for (const Tensor& b : module_->buffers()) state.push_back(b);
    const Device dev = dist::get_backend_device();
    for (const Tensor& t : state)
      BRISK_CHECK(t.device() == dev && t.is_contiguous(), op, "parameters and buffers must be contiguous tensors on ",
                  dev.str(), " (the ", dist::get_backend(), " backend's device), got one on ", t.device().str());
    broadcast_coalesced(state);
  }
  std::vector<size_t> order(r.params.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;  // reverse registration order
  r.build(order);
  r.ready.assign(r.params.size(), false);
  for (size_t i = 0; i < r.params.size(); ++i) {
    std::weak_ptr<Reducer> weak = reducer_;
    bool* sync = &sync_;
    r.hooks.push_back(r.params[i].register_post_accumulate_grad_hook([weak, i, sync](const Tensor&) {
      if (*sync)
        if (auto rr = weak.lock()) rr->on_grad(i);
    }));
  }
}

DistributedDataParallelImpl::~DistributedDataParallelImpl() {
  if (!reducer_) return;
  for (size_t i = 0; i < reducer_->params.size() && i < reducer_->hooks.size(); ++i)
    reducer_->params[i].remove_hook(reducer_->hooks[i]);
}

Tensor DistributedDataParallelImpl::forward(const Tensor& x) {
  // A forward starts an iteration: whatever a failed backward left behind
  // (buckets half filled) is dropped, not mixed into the next gradients.
  if (sync_) {
    std::lock_guard<std::mutex> lock(reducer_->mu);
    if (reducer_->in_backward) {
      for (auto& b : reducer_->buckets)
        if (b.work) {
          try {
            b.work->wait();
          } catch (const Error&) {
          }
        }
    }
    reducer_->start_iteration();
    reducer_->in_backward = false;
  }
  if (options_.broadcast_buffers) broadcast_coalesced(module_->buffers());
  return module_->forward(x);
}

std::vector<std::vector<size_t>> DistributedDataParallelImpl::bucket_indices() const {
  std::vector<std::vector<size_t>> r;
  for (const auto& b : reducer_->buckets) r.push_back(b.params);
  return r;
}

}  // namespace brisk::nn::parallel
