// brisk::data: datasets, samplers, the DataLoader, and readers for IDX
// (MNIST-style) and NumPy .npy files. Mirrors torch.utils.data with a
// libtorch-flavoured C++ surface; see docs/design/data.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "brisk/tensor.h"

namespace brisk::data {

/// One sample, or (after collation) one batch: data [B, ...], target [B, ...].
struct Example {
  Tensor data;
  Tensor target;
};

/// A map-style dataset. `get` may be called from several DataLoader worker
/// threads at once, so implementations must not mutate shared state there.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual Example get(size_t index) = 0;
  virtual size_t size() const = 0;
};

/// Samples indexed along the first dimension of `data` and `targets`
/// (get(i) returns views data[i], targets[i]; the loader's collate copies).
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor data, Tensor targets);
  Example get(size_t index) override;
  size_t size() const override;
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
};

// ---- samplers -------------------------------------------------------------------

/// Yields the order of dataset indices for one epoch.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The indices of the next epoch; each call starts a new epoch.
  virtual std::vector<size_t> epoch_indices() = 0;
  virtual size_t size() const = 0;
};

/// 0, 1, ..., n-1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(size_t n) : n_(n) {}
  std::vector<size_t> epoch_indices() override;
  size_t size() const override { return n_; }

 private:
  size_t n_;
};

/// A random permutation of 0..n-1 per epoch. The permutation of epoch e is a
/// pure function of (seed, e), identical on every run and platform; each call
/// to epoch_indices() advances e (set_epoch rewinds or skips, as in PyTorch's
/// DistributedSampler).
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(size_t n, uint64_t seed = 0) : n_(n), seed_(seed) {}
  std::vector<size_t> epoch_indices() override;
  size_t size() const override { return n_; }
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }

 private:
  size_t n_;
  uint64_t seed_;
  uint64_t epoch_ = 0;
};

/// Groups a sampler's indices into batches of `batch_size`; the last, shorter
/// batch is dropped when drop_last.
class BatchSampler {
 public:
  BatchSampler(std::shared_ptr<Sampler> sampler, size_t batch_size, bool drop_last = false);
  /// The batches of the next epoch.
  std::vector<std::vector<size_t>> epoch_batches();
  /// Number of batches per epoch.
  size_t size() const;

 private:
  std::shared_ptr<Sampler> sampler_;
  size_t batch_size_;
  bool drop_last_;
};

// ---- collation and transforms -----------------------------------------------------

using CollateFn = std::function<Example(std::vector<Example>&&)>;
using BatchTransform = std::function<Example(Example)>;

/// Stacks `data` and `target` of the samples along a new first dimension.
Example default_collate(std::vector<Example>&& samples);

/// uint8 pixels to float32: (x / 255 - mean) / std.
Tensor to_float_normalized(const Tensor& x_u8, double mean, double std);

/// A batch transform that applies to_float_normalized to batch.data
/// (Fashion-MNIST: Normalize(0.2860, 0.3530); MNIST: Normalize(0.1307, 0.3081)).
struct Normalize {
  double mean, std;
  Normalize(double mean_, double std_) : mean(mean_), std(std_) {}
  Example operator()(Example batch) const;
};

// ---- DataLoader ---------------------------------------------------------------------

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

/// DataLoaderOptions().batch_size(64).shuffle(true).num_workers(2).seed(0)
struct DataLoaderOptions {
  /// Samples per batch.
  BRISK_DATA_OPTION(size_t, batch_size, 1)
  /// A new random permutation every epoch (RandomSampler seeded with `seed`).
  BRISK_DATA_OPTION(bool, shuffle, false)
  /// Drop the last batch if it is shorter than batch_size.
  BRISK_DATA_OPTION(bool, drop_last, false)
  /// Background threads producing batches; 0 loads on the iterating thread.
  BRISK_DATA_OPTION(size_t, num_workers, 0)
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
};
#undef BRISK_DATA_OPTION

namespace detail {
struct Epoch;
}

/// Iterates over batches of a dataset:
///
///   data::DataLoader loader(data::TensorDataset(x, y),
///                           data::DataLoaderOptions().batch_size(64).shuffle(true));
///   for (auto& batch : loader) { ... batch.data ... batch.target ... }
///
/// Each begin() starts a new epoch (a new permutation when shuffling). With
/// num_workers > 0, worker w builds batches w, w + W, w + 2W, ... into its own
/// queue of prefetch_factor batches and the iterator takes them in order, so
/// the batches equal those of num_workers = 0. An exception thrown while
/// building a batch is rethrown, unchanged, by the iterator when that batch
/// is reached. Breaking out of a loop is fine: the workers are stopped and
/// joined by the next begin() or by the destructor.
class DataLoader {
 public:
  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});
  /// Takes a dataset by value (moved into a shared_ptr).
  template <class D, class = std::enable_if_t<std::is_base_of_v<Dataset, std::decay_t<D>>>>
  DataLoader(D&& dataset, DataLoaderOptions options = {})
      : DataLoader(std::make_shared<std::decay_t<D>>(std::forward<D>(dataset)), std::move(options)) {}
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  class Iterator {
   public:
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    Example& operator*() const;
    Example* operator->() const { return &**this; }
    Iterator& operator++();
    bool operator==(const Iterator& o) const { return at_end() == o.at_end(); }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    friend class DataLoader;
    explicit Iterator(detail::Epoch* epoch) : epoch_(epoch) {}
    bool at_end() const;
    detail::Epoch* epoch_ = nullptr;  // null: the end sentinel
  };

  /// Starts a new epoch (stopping a previous, unfinished one) and loads its first batch.
  Iterator begin();
  Iterator end() { return Iterator(nullptr); }
  /// Batches per epoch.
  size_t size() const;
  const DataLoaderOptions& options() const { return options_; }
  Dataset& dataset() { return *dataset_; }

 private:
  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  BatchSampler batch_sampler_;
  std::unique_ptr<detail::Epoch> epoch_;
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

// ---- datasets -------------------------------------------------------------------------

/// MNIST-format dataset from `root`: {train,t10k}-{images-idx3,labels-idx1}-ubyte,
/// each optionally with ".gz". Images stay uint8 [N, 28, 28] in memory;
/// get(i) returns data uint8 [28, 28] and target int64 []. Convert per batch
/// with the Normalize transform.
class MNIST : public Dataset {
 public:
  explicit MNIST(const std::string& root, bool train = true);
  Example get(size_t index) override;
  size_t size() const override;
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
