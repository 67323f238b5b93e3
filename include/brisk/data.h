// brisk::data: datasets, samplers, transforms, data loaders, and readers for
// IDX (MNIST-style) and NumPy .npy files. libtorch's C++ data API
// (torch::data::...) under brisk::data, plus brisk's own DataLoader; see
// docs/design/data.md and docs/porting.md.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "brisk/error.h"
#include "brisk/tensor.h"

namespace brisk::data {

// ---- examples ---------------------------------------------------------------------

namespace example {
/// Example<Data, NoTarget>: a sample without a label.
using NoTarget = void;
}  // namespace example

/// One sample, or (after collation) one batch: `data` and its `target`.
template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;

  Example() = default;
  Example(Data data_, Target target_) : data(std::move(data_)), target(std::move(target_)) {}

  Data data;
  Target target;
};

/// An unlabeled sample; converts to its data.
template <typename Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;

  Example() = default;
  /* implicit */ Example(Data data_) : data(std::move(data_)) {}
  operator Data&() { return data; }
  operator const Data&() const { return data; }

  Data data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

// ---- datasets ----------------------------------------------------------------------

namespace datasets {

template <typename SourceDataset, typename AppliedTransform>
class MapDataset;

/// A dataset that produces a whole batch per request. `Batch` is what
/// get_batch returns; `BatchRequest` what a sampler asks for (indices by
/// default; samplers::BatchSize for streams).
template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = std::span<const size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  /// brisk has no stateful (chunk) datasets; the flag exists for code that tests it.
  static constexpr bool is_stateful = false;

  virtual ~BatchDataset() = default;
  /// The batch for `request`. The data loaders call this from worker threads,
  /// each worker on its own copy of the dataset.
  virtual Batch get_batch(BatchRequest request) = 0;
  /// Number of samples, or nullopt for an unsized (stream) dataset.
  virtual std::optional<size_t> size() const = 0;

  /// A dataset whose batches are `transform.apply_batch(this->get_batch(r))`.
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return MapDataset<Self, TransformType>(static_cast<Self&>(*this), std::move(transform));
  }
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return MapDataset<Self, TransformType>(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

/// A map-style dataset: override `get(index)` and `size()`; get_batch gathers
/// get(i) for each requested index.
///
///   struct Squares : brisk::data::datasets::Dataset<Squares> {
///     brisk::data::Example<> get(size_t i) override { ... }
///     std::optional<size_t> size() const override { return 100; }
///   };
template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  virtual ExampleType get(size_t index) = 0;

  std::vector<ExampleType> get_batch(std::span<const size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

/// `dataset.map(transform)`: the source dataset's batches passed through
/// `transform.apply_batch`.
template <typename SourceDataset, typename AppliedTransform>
class MapDataset : public BatchDataset<MapDataset<SourceDataset, AppliedTransform>,
                                       typename AppliedTransform::OutputBatchType,
                                       typename SourceDataset::BatchRequestType> {
 public:
  using DatasetType = SourceDataset;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename SourceDataset::BatchRequestType;
  using OutputBatchType = typename AppliedTransform::OutputBatchType;

  MapDataset(SourceDataset dataset, AppliedTransform transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType request) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(request)));
  }
  std::optional<size_t> size() const override { return dataset_.size(); }

  const SourceDataset& dataset() noexcept { return dataset_; }
  const AppliedTransform& transform() noexcept { return transform_; }

 private:
  SourceDataset dataset_;
  AppliedTransform transform_;
};

/// libtorch's free function spelling of `dataset.map(transform)`.
template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform) {
  return MapDataset<DatasetType, TransformType>(std::move(dataset), std::move(transform));
}

/// libtorch's MNIST: images float32 [1, 28, 28] scaled to [0, 1], targets
/// int64 []. Reads `{train,t10k}-{images-idx3,labels-idx1}-ubyte` in `root`,
/// each plain or gzip-compressed (also under a ".gz" name, as Debian ships
/// them). Holds all images as float32 [N, 1, 28, 28] (like libtorch; brisk's
/// data::MNIST keeps uint8 instead).
class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);
  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;
  bool is_train() const noexcept { return train_; }
  /// float32 [N, 1, 28, 28], values in [0, 1]
  const Tensor& images() const { return images_; }
  /// int64 [N]
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  bool train_;
};

/// libtorch's TensorDataset: the rows of one tensor, as unlabeled examples
/// (brisk's data::TensorDataset(data, targets) pairs two tensors).
class TensorDataset : public Dataset<TensorDataset, TensorExample> {
 public:
  explicit TensorDataset(const Tensor& tensor);
  explicit TensorDataset(const std::vector<Tensor>& tensors);
  TensorExample get(size_t index) override;
  std::optional<size_t> size() const override;

  Tensor tensor;
};

}  // namespace datasets

// libtorch exports these two into torch::data.
using datasets::BatchDataset;
using datasets::Dataset;

// ---- transforms -----------------------------------------------------------------------

namespace transforms {

/// Turns a whole batch into another.
template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

/// Applies `apply` to every example of a batch.
template <typename Input, typename Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual OutputType apply(InputType input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> out;
    out.reserve(input_batch.size());
    for (auto& in : input_batch) out.push_back(apply(std::move(in)));
    return out;
  }
};

/// A BatchTransform from a function.
template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  Output apply_batch(Input input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

/// A per-example Transform from a function.
template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  Output apply(Input input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

/// A batch transform that turns std::vector<T> into one T.
template <typename T, typename BatchType = std::vector<T>>
using Collation = BatchTransform<BatchType, T>;
/// A Collation from a function.
template <typename T, typename BatchType = std::vector<T>>
using Collate = BatchLambda<BatchType, T>;

/// Collates examples into one example of stacked tensors: data [B, ...]
/// and target [B, ...] (libtorch's Stack<>).
template <typename ExampleType = Example<>>
struct Stack;

template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override;
};

template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override;
};

/// A transform of the data tensor of each example (the target passes through).
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  virtual Tensor operator()(Tensor input) = 0;
  E apply(E input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

/// A TensorTransform from a function.
template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

namespace detail {
/// [C, 1, 1] float32 from per-channel values (checked: C > 0; `what` names the argument).
Tensor normalize_parameter(const std::vector<double>& values, const char* what);
Tensor normalize(const Tensor& input, const Tensor& mean, const Tensor& stddev);
}  // namespace detail

/// (x - mean) / stddev, per channel: mean and stddev are scalars or one value
/// per channel, broadcast as [C, 1, 1] against an image [C, H, W] (as
/// libtorch's, an [H, W] input comes out as [1, H, W]).
template <typename Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(double mean_, double stddev_)
      : Normalize(std::vector<double>{mean_}, std::vector<double>{stddev_}) {}
  Normalize(const std::vector<double>& mean_, const std::vector<double>& stddev_)
      : mean(detail::normalize_parameter(mean_, "mean")), stddev(detail::normalize_parameter(stddev_, "stddev")) {
    BRISK_CHECK(mean_.size() == stddev_.size() || mean_.size() == 1 || stddev_.size() == 1, "Normalize",
                "mean has ", mean_.size(), " channels but stddev has ", stddev_.size());
    for (double s : stddev_) BRISK_CHECK(s != 0, "Normalize", "stddev must be nonzero");
  }
  Tensor operator()(Tensor input) override { return detail::normalize(input, mean, stddev); }

  Tensor mean, stddev;
};

}  // namespace transforms

// ---- samplers ---------------------------------------------------------------------------

namespace samplers {

/// Produces the batch requests (by default indices) of an epoch.
/// reset() starts an epoch; next(batch_size) returns up to batch_size
/// indices, nullopt once the epoch is exhausted. (libtorch's save/load to an
/// archive are not offered.)
template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  virtual void reset(std::optional<size_t> new_size = std::nullopt) = 0;
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
};

/// 0, 1, ..., size-1.
class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  /// Indices handed out so far in this epoch.
  size_t index() const noexcept { return index_; }
  size_t size() const noexcept { return size_; }
  /// brisk: reset() and all indices of the new epoch.
  std::vector<size_t> epoch_indices();

 private:
  size_t size_;
  size_t index_ = 0;
};

/// A random permutation of 0..size-1 per epoch (each reset()).
///
/// RandomSampler(size): each reset draws from brisk's default generator, so
/// `brisk::manual_seed(s)` makes the epochs reproducible (libtorch's
/// behaviour; the permutations differ from libtorch's). index_dtype is
/// accepted for libtorch's signature; indices are size_t.
///
/// RandomSampler(size, seed) (brisk): epoch e's permutation is a pure
/// function of (seed, e), the same on every run and platform; each reset
/// advances e, set_epoch rewinds or skips (as PyTorch's DistributedSampler).
class RandomSampler : public Sampler<> {
 public:
  explicit RandomSampler(int64_t size, Dtype index_dtype = kInt64);
  RandomSampler(size_t size, uint64_t seed);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }
  size_t size() const noexcept { return size_; }
  /// The epoch the next reset() uses (seeded samplers).
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }
  /// brisk: reset() and all indices of the new epoch.
  std::vector<size_t> epoch_indices();

 private:
  size_t size_;
  std::optional<uint64_t> seed_;
  uint64_t epoch_ = 0;
  std::vector<size_t> indices_;
  size_t index_ = 0;
  bool fresh_ = true;  // next() before any reset() starts an epoch
};

/// Base of the distributed samplers: rank `rank` of `num_replicas` gets a
/// disjoint share of local_sample_count() indices per epoch. With
/// allow_duplicates the share is ceil(size / num_replicas) and the shares
/// are padded by wrapping around (every index appears, a few twice);
/// without, floor(size / num_replicas) (a few indices are left out).
template <typename BatchRequest = std::vector<size_t>>
class DistributedSampler : public Sampler<BatchRequest> {
 public:
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : size_(size), num_replicas_(num_replicas), rank_(rank), allow_duplicates_(allow_duplicates) {
    BRISK_CHECK(num_replicas_ > 0, "DistributedSampler", "num_replicas must be positive, got 0");
    BRISK_CHECK(rank_ < num_replicas_, "DistributedSampler", "rank ", rank_, " out of range for ", num_replicas_,
                " replicas");
  }
  /// The epoch the next reset() shuffles for; call it every epoch, with the
  /// same value on every rank.
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }

 protected:
  size_t local_sample_count() const {
    return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
  }

  size_t size_;
  size_t num_replicas_;
  size_t rank_;
  size_t epoch_ = 0;
  bool allow_duplicates_;
};

/// This rank's share of a permutation that depends only on the epoch (the
/// same on every rank).
class DistributedRandomSampler : public DistributedSampler<> {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return sample_index_; }

 private:
  void populate_indices();
  std::vector<size_t> indices_;
  size_t sample_index_ = 0;
};

/// This rank's contiguous share of 0..size-1 (wrapping around when padded).
class DistributedSequentialSampler : public DistributedSampler<> {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return sample_index_; }

 private:
  void populate_indices();
  std::vector<size_t> indices_;
  size_t sample_index_ = 0;
};

}  // namespace samplers

/// PyTorch's torch.utils.data.DistributedSampler: rank `rank` of
/// `num_replicas` gets every num_replicas-th index of the epoch's order (a
/// permutation of (seed, epoch), the same on every rank, or 0..size-1
/// without shuffle). The order is padded by repeating its start to a
/// multiple of num_replicas (every rank gets the same count), or with
/// drop_last cut to one. Call set_epoch(e) before each epoch, with the same
/// e on every rank, for a new order. Use it through
/// DataLoaderOptions().sampler(...).
class DistributedSampler : public samplers::Sampler<> {
 public:
  DistributedSampler(size_t size, size_t num_replicas, size_t rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }
  /// Indices this rank gets per epoch.
  size_t num_samples() const { return num_samples_; }
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  /// This epoch's indices (after reset()).
  const std::vector<size_t>& indices() const { return indices_; }

 private:
  size_t size_, num_replicas_, rank_;
  bool shuffle_;
  uint64_t seed_, epoch_ = 0;
  bool drop_last_;
  size_t num_samples_ = 0, pos_ = 0;
  std::vector<size_t> indices_;
};

namespace samplers {

/// A batch request that is only a count (for stream datasets).
struct CustomBatchRequest {
  CustomBatchRequest() = default;
  CustomBatchRequest(const CustomBatchRequest&) = default;
  CustomBatchRequest& operator=(const CustomBatchRequest&) = default;
  virtual ~CustomBatchRequest() = default;
  virtual size_t size() const = 0;
};

struct BatchSize : public CustomBatchRequest {
  explicit BatchSize(size_t size_) : value(size_) {}
  size_t size() const noexcept override { return value; }
  operator size_t() const noexcept { return value; }
  size_t value;
};

/// Asks for batch_size examples at a time until epoch_size were requested.
class StreamSampler : public Sampler<BatchSize> {
 public:
  explicit StreamSampler(size_t epoch_size) : epoch_size_(epoch_size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<BatchSize> next(size_t batch_size) override;

 private:
  size_t examples_retrieved_so_far_ = 0;
  size_t epoch_size_;
};

}  // namespace samplers

// brisk's names for the two basic samplers (the same classes).
using samplers::RandomSampler;
using samplers::SequentialSampler;

// ---- options ----------------------------------------------------------------------------

using CollateFn = std::function<Example<>(std::vector<Example<>>&&)>;
/// brisk's DataLoader: a function applied to every collated batch.
using BatchTransform = std::function<Example<>(Example<>)>;

#define BRISK_DATA_OPTION(type, name, init)            \
 public:                                               \
  auto& name(type v) {                                 \
    name##_ = std::move(v);                            \
    return *this;                                      \
  }                                                    \
  const type& name() const { return name##_; }         \
                                                       \
 private:                                              \
  type name##_ = init;

/// Options of both loaders, with libtorch's builder names:
///   DataLoaderOptions().batch_size(64).workers(2).drop_last(true)
/// and brisk's additions for data::DataLoader (shuffle, seed, prefetch_factor,
/// pin_memory, collate, transform).
struct DataLoaderOptions {
  DataLoaderOptions() = default;
  /* implicit */ DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}

  /// Samples per batch.
  BRISK_DATA_OPTION(size_t, batch_size, 1)
  /// Background threads producing batches; 0 loads on the iterating thread.
  BRISK_DATA_OPTION(size_t, workers, 0)
  /// Most batches in flight (being built or ready) at once; default
  /// workers * prefetch_factor (libtorch: 2 * workers).
  BRISK_DATA_OPTION(std::optional<size_t>, max_jobs, std::nullopt)
  /// The iterator throws brisk::Error if a batch takes longer than this.
  BRISK_DATA_OPTION(std::optional<std::chrono::milliseconds>, timeout, std::nullopt)
  /// Batches in sampler order (true); false hands out whichever batch a
  /// worker finished first.
  BRISK_DATA_OPTION(bool, enforce_ordering, true)
  /// Drop the last batch if it is shorter than batch_size.
  BRISK_DATA_OPTION(bool, drop_last, false)

  // brisk's DataLoader only:
  /// A new random permutation every epoch (RandomSampler seeded with `seed`).
  BRISK_DATA_OPTION(bool, shuffle, false)
  /// Batches each worker may have ready ahead of the consumer.
  BRISK_DATA_OPTION(size_t, prefetch_factor, 2)
  /// Seed of the shuffling sampler (epoch e uses permutation (seed, e)).
  BRISK_DATA_OPTION(uint64_t, seed, 0)
  /// Batches in pinned (page-locked) host memory, so that copying them to a
  /// GPU with `to(kCUDA, /*non_blocking=*/true)` overlaps with compute.
  /// Ignored when no CUDA device is available.
  BRISK_DATA_OPTION(bool, pin_memory, false)
  /// Turns a vector of samples into a batch; default_collate when empty.
  BRISK_DATA_OPTION(CollateFn, collate, nullptr)
  /// Applied to every collated batch (in the worker), e.g. Normalize.
  BRISK_DATA_OPTION(BatchTransform, transform, nullptr)
  /// Draws each epoch's indices instead of shuffle/seed, e.g. a
  /// data::DistributedSampler (PyTorch's DataLoader(sampler=...)).
  BRISK_DATA_OPTION(std::shared_ptr<samplers::Sampler<>>, sampler, nullptr)

 public:
  /// brisk's (and PyTorch's) name for workers.
  auto& num_workers(size_t v) { return workers(v); }
  const size_t& num_workers() const { return workers(); }
};
#undef BRISK_DATA_OPTION

/// The options a StatelessDataLoader runs with, defaults resolved (libtorch's
/// `loader->options().batch_size` is a field of this).
struct FullDataLoaderOptions {
  explicit FullDataLoaderOptions(const DataLoaderOptions& options)
      : batch_size(options.batch_size()),
        workers(options.workers()),
        max_jobs(options.max_jobs().value_or(2 * options.workers())),
        timeout(options.timeout()),
        enforce_ordering(options.enforce_ordering()),
        drop_last(options.drop_last()) {}

  size_t batch_size;
  size_t workers;
  size_t max_jobs;
  std::optional<std::chrono::milliseconds> timeout;
  bool enforce_ordering;
  bool drop_last;
};

// ---- the worker pipeline ----------------------------------------------------------------

namespace detail {

/// Runs jobs 0..num_jobs-1 and hands their results out one at a time; the
/// machinery of both loaders. With W workers, worker w runs jobs w, w + W,
/// ... and keeps at most `depth` finished results in its own queue; next()
/// takes job k from queue k % W (ordered) or from any queue that has one.
/// Without workers, next() runs the job on the calling thread (worker index
/// kCaller). An exception from a job is rethrown by next() when that job is
/// reached, after every earlier result. The destructor stops and joins.
class Prefetcher {
 public:
  static constexpr size_t kCaller = static_cast<size_t>(-1);
  using Job = std::function<std::shared_ptr<void>(size_t job, size_t worker)>;
  Prefetcher(size_t num_jobs, size_t workers, size_t depth, bool ordered,
             std::optional<std::chrono::milliseconds> timeout, Job job);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  /// The next result, or null after the last one.
  std::shared_ptr<void> next();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// One epoch of a loader: the pipeline and the batch the iterator shows.
template <typename Batch>
struct EpochState {
  std::unique_ptr<Prefetcher> prefetcher;
  std::shared_ptr<Batch> current;
  bool done = false;

  void advance() {
    current.reset();
    if (done) return;
    std::shared_ptr<void> r;
    try {
      r = prefetcher->next();
    } catch (...) {
      done = true;
      throw;
    }
    if (!r) {
      done = true;
      return;
    }
    current = std::static_pointer_cast<Batch>(std::move(r));
  }
};

/// Per-worker prefetch depth: ceil(max_jobs / workers), at least 1; max_jobs
/// defaults to workers * prefetch_factor.
size_t prefetch_depth(const DataLoaderOptions& options, size_t workers);
/// batch_size and max_jobs positive, timeout positive (brisk::Error naming `loader`).
const DataLoaderOptions& check_options(const DataLoaderOptions& options, const char* loader);

template <typename T>
struct is_shared_ptr : std::false_type {};
template <typename T>
struct is_shared_ptr<std::shared_ptr<T>> : std::true_type {};

inline size_t size_value(size_t n, const char*) { return n; }
inline size_t size_value(const std::optional<size_t>& n, const char* loader) {
  BRISK_CHECK(n.has_value(), loader, "expected a sized dataset (size() returned nullopt)");
  return *n;
}

}  // namespace detail

/// Input iterator over the batches of one epoch. Each begin() of its loader
/// starts a new epoch; an iterator of the previous epoch is then invalid.
template <typename Batch>
class Iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Batch;
  using difference_type = std::ptrdiff_t;
  using pointer = Batch*;
  using reference = Batch&;

  Iterator() = default;
  explicit Iterator(detail::EpochState<Batch>* epoch) : epoch_(epoch) {}

  Batch& operator*() const {
    BRISK_CHECK(!at_end(), "DataLoader", "dereferencing an iterator past the last batch");
    return *epoch_->current;
  }
  Batch* operator->() const { return &**this; }
  Iterator& operator++() {
    BRISK_CHECK(epoch_ != nullptr, "DataLoader", "incrementing the end iterator");
    epoch_->advance();
    return *this;
  }
  bool operator==(const Iterator& o) const { return at_end() == o.at_end(); }
  bool operator!=(const Iterator& o) const { return !(*this == o); }

 private:
  bool at_end() const { return epoch_ == nullptr || epoch_->done; }
  detail::EpochState<Batch>* epoch_ = nullptr;  // null: the end sentinel
};

// ---- libtorch's data loader -------------------------------------------------------------

/// libtorch's StatelessDataLoader: batches `dataset.get_batch(request)` for
/// the sampler's requests. Made by make_data_loader; iterate with
/// `for (auto& batch : *loader)`. Each begin() resets the sampler and starts
/// an epoch. With workers > 0 every worker thread has its own copy of the
/// dataset (as in libtorch), and up to max_jobs batches are prefetched.
template <typename Dataset, typename Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : dataset_(std::move(dataset)),
        sampler_(std::move(sampler)),
        options_(detail::check_options(options, "DataLoader")),
        full_options_(options_.max_jobs() ? options_ : DataLoaderOptions(options_).max_jobs(2 * options_.workers())) {
    if constexpr (std::is_copy_constructible_v<Dataset>) {
      for (size_t w = 0; w < options_.workers(); ++w) copies_.push_back(std::make_unique<Dataset>(dataset_));
    }
  }
  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;
  ~StatelessDataLoader() { join(); }

  /// Resets the sampler, starts the workers on the new epoch (stopping an
  /// unfinished one) and loads its first batch.
  Iterator<BatchType> begin() {
    join();
    sampler_.reset();
    auto requests = std::make_shared<std::vector<BatchRequestType>>();
    const size_t bs = full_options_.batch_size;
    while (auto r = sampler_.next(bs)) {
      if (full_options_.drop_last && r->size() < bs) break;
      requests->push_back(std::move(*r));
    }
    const size_t workers = std::min(full_options_.workers, requests->size());
    auto job = [this, requests](size_t k, size_t w) -> std::shared_ptr<void> {
      Dataset& d = w < copies_.size() ? *copies_[w] : dataset_;
      return std::make_shared<BatchType>(d.get_batch((*requests)[k]));
    };
    epoch_ = std::make_unique<detail::EpochState<BatchType>>();
    epoch_->prefetcher =
        std::make_unique<detail::Prefetcher>(requests->size(), workers, detail::prefetch_depth(options_, workers),
                                             full_options_.enforce_ordering, full_options_.timeout, std::move(job));
    epoch_->advance();
    return Iterator<BatchType>(epoch_.get());
  }
  Iterator<BatchType> end() { return Iterator<BatchType>(); }
  /// Stops and joins the workers of the current epoch.
  void join() { epoch_.reset(); }
  /// The options with defaults resolved: `options().batch_size` (fields, as libtorch's).
  const FullDataLoaderOptions& options() const noexcept { return full_options_; }

 private:
  Dataset dataset_;
  Sampler sampler_;
  DataLoaderOptions options_;
  FullDataLoaderOptions full_options_;
  std::vector<std::unique_ptr<Dataset>> copies_;  // one per worker
  std::unique_ptr<detail::EpochState<BatchType>> epoch_;
};

/// make_data_loader(dataset, sampler, options)
template <typename Dataset, typename Sampler>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset, Sampler sampler,
                                                                          DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

/// make_data_loader(dataset, options_or_batch_size): a Sampler(dataset.size())
/// (RandomSampler unless given, as in libtorch).
template <typename Sampler = samplers::RandomSampler, typename Dataset,
          typename = std::enable_if_t<std::is_constructible_v<Sampler, size_t>>>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                          DataLoaderOptions options = {}) {
  const std::optional<size_t> size = dataset.size();
  BRISK_CHECK(size.has_value(), "make_data_loader", "expected the dataset to be sized in order to construct the Sampler");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

// ---- brisk's DataLoader ------------------------------------------------------------------

/// brisk's own loader: a map-style dataset of Example<> (anything with
/// `get(size_t)` and `size()`) plus collation and a batch transform in the
/// options:
///
///   data::DataLoader loader(data::TensorDataset(x, y),
///                           data::DataLoaderOptions().batch_size(64).shuffle(true));
///   for (auto& batch : loader) { ... batch.data ... batch.target ... }
///
/// Each begin() starts a new epoch (a new permutation when shuffling). It
/// runs on the same worker pipeline as make_data_loader's loaders: the
/// batches equal those of workers = 0, in order; an exception thrown while
/// building a batch is rethrown, unchanged, by the iterator when that batch
/// is reached. Breaking out of a loop is fine: the workers are stopped and
/// joined by the next begin() or by the destructor. All workers share the
/// one dataset, so its get() must be thread-safe.
class DataLoader {
 public:
  using Iterator = data::Iterator<Example<>>;

  /// Shares the dataset.
  template <class D>
  DataLoader(std::shared_ptr<D> dataset, DataLoaderOptions options = {})
      : DataLoader(checked(dataset), make_get(dataset.get()), dataset ? detail::size_value(dataset->size(), "DataLoader") : 0,
                   std::move(options)) {}
  /// Takes a dataset by value (moved into a shared_ptr).
  template <class D, class = std::enable_if_t<!detail::is_shared_ptr<std::decay_t<D>>::value &&
                                              !std::is_same_v<std::decay_t<D>, DataLoader>>>
  DataLoader(D&& dataset, DataLoaderOptions options = {})
      : DataLoader(std::make_shared<std::decay_t<D>>(std::forward<D>(dataset)), std::move(options)) {}
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// Starts a new epoch (stopping a previous, unfinished one) and loads its first batch.
  Iterator begin();
  Iterator end() { return Iterator(); }
  /// Batches per epoch.
  size_t size() const;
  const DataLoaderOptions& options() const { return options_; }

 private:
  using GetFn = std::function<Example<>(size_t)>;
  template <class D>
  static std::shared_ptr<void> checked(const std::shared_ptr<D>& d) {
    BRISK_CHECK(d != nullptr, "DataLoader", "dataset must not be null");
    return d;
  }
  template <class D>
  static GetFn make_get(D* d) {
    return [d](size_t i) { return Example<>(d->get(i)); };
  }
  DataLoader(std::shared_ptr<void> owner, GetFn get, size_t size, DataLoaderOptions options);
  Example<> make_batch(const std::vector<size_t>& ids) const;

  std::shared_ptr<void> owner_;
  GetFn get_;
  size_t size_;
  DataLoaderOptions options_;
  std::shared_ptr<samplers::Sampler<>> sampler_;
  std::unique_ptr<detail::EpochState<Example<>>> epoch_;
};

// ---- brisk's datasets, collation and transforms --------------------------------------

/// Samples indexed along the first dimension of `data` and `targets`
/// (get(i) returns views data[i], targets[i]; collation copies).
class TensorDataset : public datasets::Dataset<TensorDataset> {
 public:
  TensorDataset(Tensor data, Tensor targets);
  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
};

/// Stacks `data` and `target` of the samples along a new first dimension.
Example<> default_collate(std::vector<Example<>>&& samples);

/// uint8 pixels to floats: (x / 255 - mean) / std, computed in float32 and
/// rounded once to `dtype` (float32, float64, or float16/bfloat16 for mixed
/// precision: half the bytes per batch). Throws for a non-uint8 x.
Tensor to_float_normalized(const Tensor& x_u8, double mean, double std, ScalarType dtype = kFloat);

/// brisk's batch transform that applies to_float_normalized to batch.data
/// (uint8 batches: Fashion-MNIST Normalize(0.2860, 0.3530), MNIST
/// Normalize(0.1307, 0.3081)), in the loader's workers; `dtype` kBFloat16
/// or kHalf gives 16-bit batches for autocast. libtorch's per-example
/// transform is transforms::Normalize<>.
struct Normalize {
  double mean, std;
  ScalarType dtype = kFloat;
  Normalize(double mean_, double std_, ScalarType dtype_ = kFloat) : mean(mean_), std(std_), dtype(dtype_) {}
  Example<> operator()(Example<> batch) const;
};

// ---- readers --------------------------------------------------------------------------

/// Reads an IDX file (the MNIST format: big-endian header, magic 0x0000TTDD),
/// plain or gzip-compressed (detected from the bytes, not the name). Element
/// types: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E
/// float64. Throws brisk::Error naming the file on a
/// bad magic, a truncated file, or trailing bytes.
Tensor read_idx(const std::string& path);
/// read_idx, checked to be uint8 images of shape [N, H, W].
Tensor read_idx_images(const std::string& path);
/// read_idx of uint8 labels [N], returned as int64 [N].
Tensor read_idx_labels(const std::string& path);
/// Writes `t` (uint8, int8, int16, int32, float32 or float64) as IDX; gzip-compressed when `gzip`.
void write_idx(const std::string& path, const Tensor& t, bool gzip = false);

/// Loads a NumPy .npy file (format 1.0, 2.0 or 3.0; dtypes <f2 <f4 <f8 |i1 <i2
/// <i4 <i8 |u1 |b1). A fortran_order array is read and returned as a C-contiguous
/// tensor of the same shape. Malformed headers throw brisk::Error naming the file.
Tensor load_npy(const std::string& path);
/// Saves a tensor as .npy (C order; format 1.0, or 2.0 for headers over 64 KiB).
/// Atomic: writes a temp file in the same directory, fsyncs it, renames it.
void save_npy(const std::string& path, const Tensor& t);

/// brisk's MNIST: images kept uint8 (a quarter of libtorch's memory); get(i)
/// returns data uint8 [28, 28] and target int64 []. Use with data::DataLoader
/// and the data::Normalize batch transform. Same files as datasets::MNIST.
class MNIST : public datasets::Dataset<MNIST> {
 public:
  explicit MNIST(const std::string& root, bool train = true);
  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;
  /// uint8 [N, 28, 28]
  const Tensor& images() const { return images_; }
  /// int64 [N], values 0..9
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
};

/// Zalando's Fashion-MNIST: same files and format as MNIST.
class FashionMNIST : public MNIST {
 public:
  using MNIST::MNIST;
  /// $BRISK_FASHION_MNIST_ROOT if set, else where Debian's
  /// dataset-fashion-mnist package installs it: /usr/share/datasets/fashion-mnist.
  static std::string default_root();
};

}  // namespace brisk::data
