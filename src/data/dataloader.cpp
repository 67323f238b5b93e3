// Datasets, samplers, collation and the DataLoader (worker threads with a
// bounded, ordered prefetch). See docs/design/data.md.
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

Example TensorDataset::get(size_t index) {
  BRISK_CHECK(index < size(), "TensorDataset", "index ", index, " out of range for ", size(), " samples");
  auto i = static_cast<int64_t>(index);
  return {data_.select(0, i), targets_.select(0, i)};
}

size_t TensorDataset::size() const { return static_cast<size_t>(data_.size(0)); }

// ---- samplers -------------------------------------------------------------------------

std::vector<size_t> SequentialSampler::epoch_indices() {
  std::vector<size_t> idx(n_);
  std::iota(idx.begin(), idx.end(), size_t{0});
  return idx;
}

namespace {
// Note [Sampler randomness]: the shuffling order must be a pure function of
// (seed, epoch), the same with every compiler and standard library, so it is
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
}  // namespace

std::vector<size_t> RandomSampler::epoch_indices() {
  std::vector<size_t> idx(n_);
  std::iota(idx.begin(), idx.end(), size_t{0});
  SplitMix64 rng{seed_};
  rng.state = rng.next() ^ (epoch_ * 0xD1B54A32D192ED03ull);
  for (size_t i = n_; i > 1; --i) std::swap(idx[i - 1], idx[rng.below(i)]);
  ++epoch_;
  return idx;
}

BatchSampler::BatchSampler(std::shared_ptr<Sampler> sampler, size_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  BRISK_CHECK(sampler_, "BatchSampler", "sampler must not be null");
  BRISK_CHECK(batch_size_ > 0, "BatchSampler", "batch_size must be positive, got 0");
}

std::vector<std::vector<size_t>> BatchSampler::epoch_batches() {
  std::vector<size_t> idx = sampler_->epoch_indices();
  std::vector<std::vector<size_t>> batches;
  batches.reserve(idx.size() / batch_size_ + 1);
  for (size_t start = 0; start < idx.size(); start += batch_size_) {
    size_t end = std::min(idx.size(), start + batch_size_);
    if (drop_last_ && end - start < batch_size_) break;
    batches.emplace_back(idx.begin() + static_cast<std::ptrdiff_t>(start),
                         idx.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

size_t BatchSampler::size() const {
  size_t n = sampler_->size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

// ---- collation ------------------------------------------------------------------------

Example default_collate(std::vector<Example>&& samples) {
  BRISK_CHECK(!samples.empty(), "default_collate", "no samples to collate");
  std::vector<Tensor> data, target;
  data.reserve(samples.size());
  target.reserve(samples.size());
  bool has_target = samples[0].target.defined();
  for (size_t i = 0; i < samples.size(); ++i) {
    BRISK_CHECK(samples[i].data.defined(), "default_collate", "sample ", i, " has no data tensor");
    BRISK_CHECK(samples[i].target.defined() == has_target, "default_collate", "sample ", i,
                has_target ? " lacks a target while sample 0 has one" : " has a target while sample 0 has none");
    data.push_back(std::move(samples[i].data));
    if (has_target) target.push_back(std::move(samples[i].target));
  }
  Example batch;
  batch.data = stack(data, 0);
  if (has_target) batch.target = stack(target, 0);
  return batch;
}

Tensor to_float_normalized(const Tensor& x_u8, double mean, double std) {
  BRISK_CHECK(std > 0, "to_float_normalized", "std must be positive, got ", std);
  // (x / 255 - mean) / std == x * (1 / (255 std)) - mean / std
  Tensor y = x_u8.to(kFloat, false, /*copy=*/true);
  y.mul_(1.0 / (255.0 * std));
  y.sub_(mean / std);
  return y;
}

Example Normalize::operator()(Example batch) const {
  batch.data = to_float_normalized(batch.data, mean, std);
  return batch;
}

// ---- DataLoader -----------------------------------------------------------------------

namespace detail {

// One pass over the batches of an epoch. Without workers, batches are built
// on the iterating thread when the iterator advances. With W workers, worker w
// builds batches w, w + W, ... and pushes each into queues[w], holding at most
// prefetch_factor finished batches; the consumer pops batch k from queues[k % W],
// so batches arrive in sampler order whatever the workers' speeds.
struct Epoch {
  struct Slot {
    Example batch;
    std::exception_ptr error;
  };

  Dataset* dataset;
  const DataLoaderOptions* options;
  std::vector<std::vector<size_t>> batches;
  size_t next = 0;  // the batch advance() delivers next
  Example current;
  bool done = false;

  std::mutex mu;
  std::condition_variable cv_ready;  // a queue got a batch
  std::condition_variable cv_space;  // a queue has room, or stop
  std::vector<std::deque<Slot>> queues;
  bool stop = false;
  std::vector<std::thread> workers;

  Epoch(Dataset* d, const DataLoaderOptions* o, std::vector<std::vector<size_t>> b)
      : dataset(d), options(o), batches(std::move(b)) {
    size_t w = std::min(options->num_workers(), batches.size());
    if (w == 0) return;
    queues.resize(w);
    workers.reserve(w);
    try {
      for (size_t i = 0; i < w; ++i) workers.emplace_back([this, i] { work(i); });
    } catch (...) {
      shutdown();
      throw;
    }
  }
  ~Epoch() { shutdown(); }

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

  Example make_batch(size_t k) {
    const auto& ids = batches[k];
    std::vector<Example> samples;
    samples.reserve(ids.size());
    for (size_t i : ids) samples.push_back(dataset->get(i));
    Example batch = options->collate() ? options->collate()(std::move(samples)) : default_collate(std::move(samples));
    if (options->transform()) batch = options->transform()(std::move(batch));
    // Pinned batches make `batch.data.to(kCUDA, /*non_blocking=*/true)`
    // asynchronous. Without a GPU the option does nothing (as in PyTorch,
    // which warns and carries on).
    if (options->pin_memory() && cuda::is_available()) {
      if (batch.data.defined() && batch.data.is_cpu()) batch.data = batch.data.pin_memory();
      if (batch.target.defined() && batch.target.is_cpu()) batch.target = batch.target.pin_memory();
    }
    return batch;
  }

  void work(size_t w) {
    profiler::detail::set_thread_name("dataloader " + std::to_string(w));
    const size_t stride = queues.size();
    const size_t depth = std::max<size_t>(1, options->prefetch_factor());
    for (size_t k = w; k < batches.size(); k += stride) {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv_space.wait(lock, [&] { return stop || queues[w].size() < depth; });
        if (stop) return;
      }
      Slot slot;
      try {
        slot.batch = make_batch(k);
      } catch (...) {
        slot.error = std::current_exception();
      }
      bool failed = static_cast<bool>(slot.error);
      {
        std::lock_guard<std::mutex> lock(mu);
        queues[w].push_back(std::move(slot));
      }
      cv_ready.notify_all();
      if (failed) return;  // the consumer stops at this batch
    }
  }

  // Loads batch `next` into `current`, or marks the epoch done. The
  // profiler sees the caller's wait: building the batch without workers, or
  // waiting for a worker's batch.
  void advance() {
    profiler::detail::ScopedEvent event(profiler::EventKind::DataLoaderWait, "DataLoader.next");
    current = {};
    if (done || next >= batches.size()) {
      done = true;
      return;
    }
    size_t k = next++;
    if (workers.empty()) {
      try {
        current = make_batch(k);
      } catch (...) {
        done = true;
        throw;
      }
      return;
    }
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mu);
      auto& q = queues[k % queues.size()];
      cv_ready.wait(lock, [&] { return !q.empty(); });
      slot = std::move(q.front());
      q.pop_front();
    }
    cv_space.notify_all();
    if (slot.error) {
      done = true;
      std::rethrow_exception(slot.error);
    }
    current = std::move(slot.batch);
  }
};

}  // namespace detail

namespace {
std::shared_ptr<Sampler> make_sampler(const Dataset& d, const DataLoaderOptions& o) {
  if (o.shuffle()) return std::make_shared<RandomSampler>(d.size(), o.seed());
  return std::make_shared<SequentialSampler>(d.size());
}
const std::shared_ptr<Dataset>& checked(const std::shared_ptr<Dataset>& d) {
  BRISK_CHECK(d != nullptr, "DataLoader", "dataset must not be null");
  return d;
}
}  // namespace

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : dataset_(checked(dataset)),
      options_(std::move(options)),
      batch_sampler_(make_sampler(*dataset_, options_), options_.batch_size(), options_.drop_last()) {}

DataLoader::~DataLoader() = default;

DataLoader::Iterator DataLoader::begin() {
  epoch_.reset();  // joins the workers of an unfinished epoch
  epoch_ = std::make_unique<detail::Epoch>(dataset_.get(), &options_, batch_sampler_.epoch_batches());
  epoch_->advance();
  return Iterator(epoch_.get());
}

size_t DataLoader::size() const { return batch_sampler_.size(); }

bool DataLoader::Iterator::at_end() const { return epoch_ == nullptr || epoch_->done; }

Example& DataLoader::Iterator::operator*() const {
  BRISK_CHECK(!at_end(), "DataLoader", "dereferencing an iterator past the last batch");
  return epoch_->current;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  BRISK_CHECK(epoch_ != nullptr, "DataLoader", "incrementing the end iterator");
  epoch_->advance();
  return *this;
}

}  // namespace brisk::data
