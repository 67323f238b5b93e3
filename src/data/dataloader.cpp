// Datasets, samplers, collation, transforms and the worker pipeline shared by
// data::DataLoader and make_data_loader's StatelessDataLoader (worker threads
// with a bounded, ordered prefetch). See docs/design/data.md.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "brisk/cuda.h"
#include "brisk/data.h"
#include "brisk/error.h"
#include "brisk/ops.h"
#include "core/generator.h"
#include "profiler/record.h"

namespace brisk::data {

// ---- TensorDataset ------------------------------------------------------------------

TensorDataset::TensorDataset(Tensor data, Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {
  BRISK_CHECK(data_.defined() && targets_.defined(), "TensorDataset", "data and targets must be defined tensors");
  BRISK_CHECK(data_.dim() >= 1 && targets_.dim() >= 1, "TensorDataset",
              "data and targets need a first (sample) dimension, got shapes ", data_.sizes(), " and ",
              targets_.sizes());
  BRISK_CHECK(data_.size(0) == targets_.size(0), "TensorDataset", "data has ", data_.size(0),
              " samples but targets has ", targets_.size(0), " (shapes ", data_.sizes(), " and ", targets_.sizes(),
              ")");
}

Example<> TensorDataset::get(size_t index) {
  const auto n = static_cast<size_t>(data_.size(0));
  BRISK_CHECK(index < n, "TensorDataset", "index ", index, " out of range for ", n, " samples");
  auto i = static_cast<int64_t>(index);
  return {data_.select(0, i), targets_.select(0, i)};
}

std::optional<size_t> TensorDataset::size() const { return static_cast<size_t>(data_.size(0)); }

namespace datasets {

TensorDataset::TensorDataset(const Tensor& t) : tensor(t) {
  BRISK_CHECK(tensor.defined() && tensor.dim() >= 1, "TensorDataset",
              "expected a defined tensor with a first (sample) dimension");
}

namespace {
Tensor stack_nonempty(const std::vector<Tensor>& tensors) {
  BRISK_CHECK(!tensors.empty(), "TensorDataset", "expected at least one tensor");
  return stack(tensors, 0);
}
}  // namespace

TensorDataset::TensorDataset(const std::vector<Tensor>& tensors) : TensorDataset(stack_nonempty(tensors)) {}

TensorExample TensorDataset::get(size_t index) {
  const auto n = static_cast<size_t>(tensor.size(0));
  BRISK_CHECK(index < n, "TensorDataset", "index ", index, " out of range for ", n, " samples");
  return TensorExample(tensor.select(0, static_cast<int64_t>(index)));
}

std::optional<size_t> TensorDataset::size() const { return static_cast<size_t>(tensor.size(0)); }

}  // namespace datasets

// ---- samplers -------------------------------------------------------------------------

namespace samplers {

namespace {
// Note [Sampler randomness]: the shuffling order must be a pure function of
// its seed, the same with every compiler and standard library, so it is
// spelled out here: SplitMix64 for the stream, Lemire's multiply-shift for an
// unbiased bounded draw, and a Fisher-Yates shuffle. std::shuffle and
// std::uniform_int_distribution are implementation-defined.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound > 0.
  uint64_t below(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
    auto low = static_cast<uint64_t>(m);
    if (low < bound) {
      uint64_t threshold = -bound % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
};

// The permutation of 0..n-1 for (seed, epoch).
std::vector<size_t> permutation(size_t n, uint64_t seed, uint64_t epoch) {
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), size_t{0});
  SplitMix64 rng{seed};
  rng.state = rng.next() ^ (epoch * 0xD1B54A32D192ED03ull);
  for (size_t i = n; i > 1; --i) std::swap(idx[i - 1], idx[rng.below(i)]);
  return idx;
}

// The next up-to-batch_size entries of `indices` from `index` on.
std::optional<std::vector<size_t>> take(const std::vector<size_t>& indices, size_t& index, size_t batch_size,
                                        const char* sampler) {
  BRISK_CHECK(batch_size > 0, sampler, "batch_size must be positive, got 0");
  if (index >= indices.size()) return std::nullopt;
  const size_t end = std::min(indices.size(), index + batch_size);
  std::vector<size_t> out(indices.begin() + static_cast<std::ptrdiff_t>(index),
                          indices.begin() + static_cast<std::ptrdiff_t>(end));
  index = end;
  return out;
}
}  // namespace

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  BRISK_CHECK(batch_size > 0, "SequentialSampler", "batch_size must be positive, got 0");
  if (index_ >= size_) return std::nullopt;
  const size_t end = std::min(size_, index_ + batch_size);
  std::vector<size_t> out(end - index_);
  std::iota(out.begin(), out.end(), index_);
  index_ = end;
  return out;
}

std::vector<size_t> SequentialSampler::epoch_indices() {
  reset();
  std::vector<size_t> out(size_);
  std::iota(out.begin(), out.end(), size_t{0});
  index_ = size_;
  return out;
}

RandomSampler::RandomSampler(int64_t size, Dtype index_dtype) : size_(static_cast<size_t>(size)) {
  BRISK_CHECK(size >= 0, "RandomSampler", "size must be non-negative, got ", size);
  BRISK_CHECK(is_integral(index_dtype, /*include_bool=*/false), "RandomSampler",
              "index_dtype must be an integer type, got ", index_dtype);
}

RandomSampler::RandomSampler(size_t size, uint64_t seed) : size_(size), seed_(seed) {}

void RandomSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  uint64_t seed, epoch;
  if (seed_) {
    seed = *seed_;
    epoch = epoch_++;
  } else {
    // One counter block of the default generator per epoch: manual_seed
    // reproduces the sequence of epochs, and random ops in between shift it
    // as they would shift any other random op.
    brisk::detail::PhiloxState st = brisk::detail::reserve_random_blocks(1);
    seed = st.seed;
    epoch = st.offset;
  }
  indices_ = permutation(size_, seed, epoch);
  index_ = 0;
  fresh_ = false;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  if (fresh_) reset();
  return take(indices_, index_, batch_size, "RandomSampler");
}

std::vector<size_t> RandomSampler::epoch_indices() {
  reset();
  index_ = indices_.size();
  return indices_;
}

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank,
                                                   bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  populate_indices();
}

void DistributedRandomSampler::populate_indices() {
  // Every rank computes the same permutation (it depends on the epoch only),
  // pads it by wrapping around to num_replicas * local count, and takes its
  // contiguous share.
  const size_t local = local_sample_count();
  std::vector<size_t> all = permutation(size_, /*seed=*/0x5EEDD157ull, epoch_);
  indices_.resize(local);
  for (size_t i = 0; i < local; ++i) indices_[i] = all[(rank_ * local + i) % size_];
  sample_index_ = 0;
}

void DistributedRandomSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  populate_indices();
}

std::optional<std::vector<size_t>> DistributedRandomSampler::next(size_t batch_size) {
  return take(indices_, sample_index_, batch_size, "DistributedRandomSampler");
}

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas, size_t rank,
                                                           bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  populate_indices();
}

void DistributedSequentialSampler::populate_indices() {
  const size_t local = local_sample_count();
  indices_.resize(local);
  for (size_t i = 0; i < local; ++i) indices_[i] = (rank_ * local + i) % size_;
  sample_index_ = 0;
}

void DistributedSequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  populate_indices();
}

std::optional<std::vector<size_t>> DistributedSequentialSampler::next(size_t batch_size) {
  return take(indices_, sample_index_, batch_size, "DistributedSequentialSampler");
}

void StreamSampler::reset(std::optional<size_t> new_size) {
  if (new_size) epoch_size_ = *new_size;
  examples_retrieved_so_far_ = 0;
}

std::optional<BatchSize> StreamSampler::next(size_t batch_size) {
  BRISK_CHECK(batch_size > 0, "StreamSampler", "batch_size must be positive, got 0");
  if (examples_retrieved_so_far_ >= epoch_size_) return std::nullopt;
  const size_t n = std::min(batch_size, epoch_size_ - examples_retrieved_so_far_);
  examples_retrieved_so_far_ += n;
  return BatchSize(n);
}

}  // namespace samplers

// ---- collation and transforms ---------------------------------------------------------

namespace {
// Stacks data (and target, when the examples have one) of `samples`.
Example<> stack_examples(std::vector<Example<>>& samples, const char* what) {
  BRISK_CHECK(!samples.empty(), what, "no samples to collate");
  std::vector<Tensor> data, target;
  data.reserve(samples.size());
  target.reserve(samples.size());
  bool has_target = samples[0].target.defined();
  for (size_t i = 0; i < samples.size(); ++i) {
    BRISK_CHECK(samples[i].data.defined(), what, "sample ", i, " has no data tensor");
    BRISK_CHECK(samples[i].target.defined() == has_target, what, "sample ", i,
                has_target ? " lacks a target while sample 0 has one" : " has a target while sample 0 has none");
    data.push_back(std::move(samples[i].data));
    if (has_target) target.push_back(std::move(samples[i].target));
  }
  Example<> batch;
  batch.data = stack(data, 0);
  if (has_target) batch.target = stack(target, 0);
  return batch;
}
}  // namespace

Example<> default_collate(std::vector<Example<>>&& samples) { return stack_examples(samples, "default_collate"); }

namespace transforms {

Example<> Stack<Example<>>::apply_batch(std::vector<Example<>> examples) { return stack_examples(examples, "Stack"); }

TensorExample Stack<TensorExample>::apply_batch(std::vector<TensorExample> examples) {
  BRISK_CHECK(!examples.empty(), "Stack", "no samples to collate");
  std::vector<Tensor> data;
  data.reserve(examples.size());
  for (auto& e : examples) data.push_back(std::move(e.data));
  return TensorExample(stack(data, 0));
}

namespace detail {
Tensor normalize_parameter(const std::vector<double>& values, const char* what) {
  BRISK_CHECK(!values.empty(), "Normalize", what, " must have at least one value");
  return brisk::tensor(values, kFloat).view({static_cast<int64_t>(values.size()), 1, 1});
}

Tensor normalize(const Tensor& input, const Tensor& mean, const Tensor& stddev) {
  BRISK_CHECK(input.defined(), "Normalize", "input tensor is undefined");
  const int64_t c = std::max(mean.size(0), stddev.size(0));
  BRISK_CHECK(c == 1 || (input.dim() >= 3 && input.size(-3) == c), "Normalize", "mean and stddev have ", c,
              " channels but the input has shape ", input.sizes(), " (expected [..., ", c, ", H, W])");
  return input.sub(mean).div(stddev);
}
}  // namespace detail

}  // namespace transforms

Tensor to_float_normalized(const Tensor& x_u8, double mean, double std, ScalarType dtype) {
  BRISK_CHECK(std > 0, "to_float_normalized", "std must be positive, got ", std);
  BRISK_CHECK(dtype == kFloat || dtype == kDouble || dtype == kHalf || dtype == kBFloat16, "to_float_normalized",
              "dtype must be float32, float64, float16 or bfloat16, got ", dtype);
  BRISK_CHECK(x_u8.dtype() == kUInt8, "to_float_normalized",
              "expected uint8 pixels (0..255), got ", x_u8.dtype(),
              "; for float images in [0, 1] use transforms::Normalize<>");
  // (x / 255 - mean) / std == x * (1 / (255 std)) - mean / std, in float32
  // (float64 for a float64 result), rounded once to a 16-bit dtype
  Tensor y = x_u8.to(dtype == kDouble ? kDouble : kFloat, false, /*copy=*/true);
  y.mul_(1.0 / (255.0 * std));
  y.sub_(mean / std);
  return y.dtype() == dtype ? y : y.to(dtype);
}

Example<> Normalize::operator()(Example<> batch) const {
  batch.data = to_float_normalized(batch.data, mean, std, dtype);
  return batch;
}

// ---- the worker pipeline ----------------------------------------------------------------

namespace detail {

// Without workers, jobs run on the consumer's thread when next() is called.
// With W workers, worker w runs jobs w, w + W, ... and pushes each result
// into queues[w], holding at most `depth` finished results; the consumer
// pops job k from queues[k % W] (ordered), so results arrive in job order
// whatever the workers' speeds, or from whichever queue has one (unordered).
struct Prefetcher::State {
  struct Slot {
    std::shared_ptr<void> result;
    std::exception_ptr error;
  };

  size_t num_jobs;
  size_t depth;
  bool ordered;
  std::optional<std::chrono::milliseconds> timeout;
  Job job;
  size_t delivered = 0;
  bool done = false;

  std::mutex mu;
  std::condition_variable cv_ready;  // a queue got a result
  std::condition_variable cv_space;  // a queue has room, or stop
  std::vector<std::deque<Slot>> queues;
  bool stop = false;
  std::vector<std::thread> workers;

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv_space.notify_all();
    for (auto& t : workers)
      if (t.joinable()) t.join();
    workers.clear();
  }

  void work(size_t w) {
    profiler::detail::set_thread_name("dataloader " + std::to_string(w));
    const size_t stride = queues.size();
    for (size_t k = w; k < num_jobs; k += stride) {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv_space.wait(lock, [&] { return stop || queues[w].size() < depth; });
        if (stop) return;
      }
      Slot slot;
      try {
        slot.result = job(k, w);
      } catch (...) {
        slot.error = std::current_exception();
      }
      bool failed = static_cast<bool>(slot.error);
      {
        std::lock_guard<std::mutex> lock(mu);
        queues[w].push_back(std::move(slot));
      }
      cv_ready.notify_all();
      if (failed) return;  // the consumer stops at this job
    }
  }
};

Prefetcher::Prefetcher(size_t num_jobs, size_t workers, size_t depth, bool ordered,
                       std::optional<std::chrono::milliseconds> timeout, Job job)
    : s_(std::make_unique<State>()) {
  s_->num_jobs = num_jobs;
  s_->depth = std::max<size_t>(1, depth);
  s_->ordered = ordered;
  s_->timeout = timeout;
  s_->job = std::move(job);
  const size_t w = std::min(workers, num_jobs);
  if (w == 0) return;
  s_->queues.resize(w);
  s_->workers.reserve(w);
  try {
    for (size_t i = 0; i < w; ++i) s_->workers.emplace_back([st = s_.get(), i] { st->work(i); });
  } catch (...) {
    s_->shutdown();
    throw;
  }
}

Prefetcher::~Prefetcher() { s_->shutdown(); }

// The profiler sees the caller's wait: running the job without workers, or
// waiting for a worker's result.
std::shared_ptr<void> Prefetcher::next() {
  profiler::detail::ScopedEvent event(profiler::EventKind::DataLoaderWait, "DataLoader.next");
  State& s = *s_;
  if (s.done || s.delivered >= s.num_jobs) {
    s.done = true;
    return nullptr;
  }
  const size_t k = s.delivered++;
  if (s.workers.empty()) {
    try {
      return s.job(k, kCaller);
    } catch (...) {
      s.done = true;
      throw;
    }
  }
  State::Slot slot;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    const size_t W = s.queues.size();
    std::deque<State::Slot>* q = nullptr;
    auto ready = [&] {
      if (s.ordered) {
        q = &s.queues[k % W];
        return !q->empty();
      }
      for (size_t i = 0; i < W; ++i) {
        auto& c = s.queues[(k + i) % W];
        if (!c.empty()) {
          q = &c;
          return true;
        }
      }
      return false;
    };
    if (s.timeout) {
      if (!s.cv_ready.wait_for(lock, *s.timeout, ready)) {
        --s.delivered;  // a later next() may still get it
        BRISK_FAIL("DataLoader", "timed out after ", s.timeout->count(), " ms waiting for the next batch");
      }
    } else {
      s.cv_ready.wait(lock, ready);
    }
    slot = std::move(q->front());
    q->pop_front();
  }
  s.cv_space.notify_all();
  if (slot.error) {
    s.done = true;
    std::rethrow_exception(slot.error);
  }
  return std::move(slot.result);
}

size_t prefetch_depth(const DataLoaderOptions& options, size_t workers) {
  if (workers == 0) return 1;
  if (options.max_jobs()) return std::max<size_t>(1, (*options.max_jobs() + workers - 1) / workers);
  return std::max<size_t>(1, options.prefetch_factor());
}

const DataLoaderOptions& check_options(const DataLoaderOptions& options, const char* loader) {
  BRISK_CHECK(options.batch_size() > 0, loader, "batch_size must be positive, got 0");
  BRISK_CHECK(!options.max_jobs() || *options.max_jobs() > 0, loader, "max_jobs must be positive, got 0");
  BRISK_CHECK(!options.timeout() || options.timeout()->count() > 0, loader, "timeout must be positive, got ",
              options.timeout()->count(), " ms");
  return options;
}

}  // namespace detail

// ---- brisk's DataLoader -----------------------------------------------------------------

DataLoader::DataLoader(std::shared_ptr<void> owner, GetFn get, size_t size, DataLoaderOptions options)
    : owner_(std::move(owner)), get_(std::move(get)), size_(size), options_(std::move(options)) {
  detail::check_options(options_, "DataLoader");
  if (options_.sampler()) {
    BRISK_CHECK(!options_.shuffle(), "DataLoader", "sampler and shuffle are exclusive (the sampler decides the order)");
    sampler_ = options_.sampler();
  } else if (options_.shuffle())
    sampler_ = std::make_unique<samplers::RandomSampler>(size_, options_.seed());
  else
    sampler_ = std::make_unique<samplers::SequentialSampler>(size_);
}

DataLoader::~DataLoader() = default;

Example<> DataLoader::make_batch(const std::vector<size_t>& ids) const {
  std::vector<Example<>> samples;
  samples.reserve(ids.size());
  for (size_t i : ids) samples.push_back(get_(i));
  Example<> batch =
      options_.collate() ? options_.collate()(std::move(samples)) : default_collate(std::move(samples));
  if (options_.transform()) batch = options_.transform()(std::move(batch));
  // Pinned batches make `batch.data.to(kCUDA, /*non_blocking=*/true)`
  // asynchronous. Without a GPU the option does nothing (as in PyTorch,
  // which warns and carries on).
  if (options_.pin_memory() && cuda::is_available()) {
    if (batch.data.defined() && batch.data.is_cpu()) batch.data = batch.data.pin_memory();
    if (batch.target.defined() && batch.target.is_cpu()) batch.target = batch.target.pin_memory();
  }
  return batch;
}

DataLoader::Iterator DataLoader::begin() {
  epoch_.reset();  // joins the workers of an unfinished epoch
  sampler_->reset();
  auto batches = std::make_shared<std::vector<std::vector<size_t>>>();
  const size_t bs = options_.batch_size();
  while (auto b = sampler_->next(bs)) {
    if (options_.drop_last() && b->size() < bs) break;
    batches->push_back(std::move(*b));
  }
  const size_t workers = std::min(options_.workers(), batches->size());
  auto job = [this, batches](size_t k, size_t) -> std::shared_ptr<void> {
    return std::make_shared<Example<>>(make_batch((*batches)[k]));
  };
  epoch_ = std::make_unique<detail::EpochState<Example<>>>();
  epoch_->prefetcher =
      std::make_unique<detail::Prefetcher>(batches->size(), workers, detail::prefetch_depth(options_, workers),
                                           options_.enforce_ordering(), options_.timeout(), std::move(job));
  epoch_->advance();
  return Iterator(epoch_.get());
}

size_t DataLoader::size() const {
  const size_t bs = options_.batch_size();
  size_t n = size_;
  if (auto* d = dynamic_cast<const DistributedSampler*>(sampler_.get())) n = d->num_samples();
  return options_.drop_last() ? n / bs : (n + bs - 1) / bs;
}

// ---- DistributedSampler (PyTorch's) ------------------------------------------------------

DistributedSampler::DistributedSampler(size_t size, size_t num_replicas, size_t rank, bool shuffle, uint64_t seed,
                                       bool drop_last)
    : size_(size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed), drop_last_(drop_last) {
  BRISK_CHECK(num_replicas_ > 0, "DistributedSampler", "num_replicas must be positive, got 0");
  BRISK_CHECK(rank_ < num_replicas_, "DistributedSampler", "rank ", rank_, " is out of range for ", num_replicas_,
              " replicas");
  reset();
}

void DistributedSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  const size_t r = num_replicas_;
  num_samples_ = drop_last_ && size_ % r != 0 ? (size_ - r + r - 1) / r : (size_ + r - 1) / r;
  if (drop_last_ && size_ < r) num_samples_ = 0;
  const size_t total = num_samples_ * r;
  std::vector<size_t> order;
  if (shuffle_) {
    order = samplers::permutation(size_, seed_, epoch_);
  } else {
    order.resize(size_);
    for (size_t i = 0; i < size_; ++i) order[i] = i;
  }
  if (total > order.size() && !order.empty()) {  // pad by repeating the start
    const size_t n = order.size();
    for (size_t i = 0; order.size() < total; ++i) order.push_back(order[i % n]);
  }
  order.resize(std::min(order.size(), total));
  indices_.clear();
  for (size_t i = rank_; i < order.size(); i += r) indices_.push_back(order[i]);
  pos_ = 0;
}

std::optional<std::vector<size_t>> DistributedSampler::next(size_t batch_size) {
  if (pos_ >= indices_.size()) return std::nullopt;
  const size_t n = std::min(batch_size, indices_.size() - pos_);
  std::vector<size_t> b(indices_.begin() + static_cast<std::ptrdiff_t>(pos_),
                        indices_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
  pos_ += n;
  return b;
}

}  // namespace brisk::data
