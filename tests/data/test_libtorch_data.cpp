// libtorch's data API under brisk::data: Example<>, datasets::Dataset<Self>,
// MNIST, map / transforms, samplers (sequential, random, distributed,
// stream), make_data_loader with worker threads. The MNIST pipeline is
// checked against the raw IDX reader, on fixture files and on the real
// Fashion-MNIST where Debian's dataset-fashion-mnist is installed.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "brisk/brisk.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

// ---- a custom dataset, written as in pytorch/examples' custom-dataset ----------------

// Sample i: data = [i, 10 i] (float32), target = i % 3 (int64). Sleeps a little
// on some indices so that workers finish out of order.
struct Numbers : public data::datasets::Dataset<Numbers> {
  explicit Numbers(size_t n, bool slow = false) : n_(n), slow_(slow) {}
  data::Example<> get(size_t index) override {
    BRISK_CHECK(index < n_, "Numbers", "index ", index, " out of range for ", n_, " samples");
    if (slow_) std::this_thread::sleep_for(std::chrono::microseconds((index * 7919) % 13 * 40));
    const auto i = static_cast<double>(index);
    return {tensor(std::vector<float>{static_cast<float>(i), static_cast<float>(10 * i)}),
            scalar_tensor(static_cast<int64_t>(index % 3))};
  }
  std::optional<size_t> size() const override { return n_; }

 private:
  size_t n_;
  bool slow_;
};

std::vector<int64_t> ids_of(const data::Example<>& batch) {
  // data[:, 0] holds the index.
  std::vector<int64_t> out;
  for (float v : batch.data.select(1, 0).contiguous().to_vector<float>()) out.push_back(static_cast<int64_t>(v));
  return out;
}

std::vector<int64_t> ids_of(const std::vector<data::Example<>>& batch) {
  std::vector<int64_t> out;
  for (auto& e : batch) out.push_back(static_cast<int64_t>(e.data[0].item<float>()));
  return out;
}

template <class Loader>
std::vector<std::vector<int64_t>> epoch(Loader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) out.push_back(ids_of(batch));
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

TEST(LibtorchData, CustomDatasetGetBatchAndSize) {
  Numbers ds(7);
  EXPECT_EQ(ds.size().value(), 7u);
  std::vector<size_t> idx{4, 0, 6};
  std::vector<data::Example<>> batch = ds.get_batch(idx);
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(ids_of(batch), (std::vector<int64_t>{4, 0, 6}));
  EXPECT_EQ(batch[0].target.item<int64_t>(), 1);
  testing::expect_error([&] { ds.get(7); }, {"[Numbers]", "out of range"});
  // The libtorch type names.
  static_assert(std::is_same_v<Numbers::ExampleType, data::Example<>>);
  static_assert(std::is_same_v<Numbers::BatchType, std::vector<data::Example<>>>);
  static_assert(std::is_same_v<data::Dataset<Numbers>, data::datasets::Dataset<Numbers>>);
  static_assert(!Numbers::is_stateful);
}

TEST(LibtorchData, LoaderWithoutStackYieldsVectorsOfExamples) {
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(Numbers(10), 4);
  static_assert(std::is_same_v<std::remove_reference_t<decltype(*loader->begin())>, std::vector<data::Example<>>>);
  EXPECT_EQ(epoch(*loader), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_EQ(loader->options().batch_size, 4u);
  EXPECT_EQ(loader->options().workers, 0u);
  EXPECT_TRUE(loader->options().enforce_ordering);
}

TEST(LibtorchData, StackCollatesIntoOneExample) {
  auto ds = Numbers(10).map(data::transforms::Stack<>());
  EXPECT_EQ(ds.size().value(), 10u);
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(std::move(ds), 4);
  std::vector<data::Example<>> batches;
  for (auto& batch : *loader) batches.push_back(batch);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].data.sizes(), IntArrayRef({4, 2}));
  EXPECT_EQ(batches[0].data.dtype(), kFloat);
  EXPECT_EQ(batches[0].target.sizes(), IntArrayRef({4}));
  EXPECT_EQ(batches[0].target.dtype(), kInt64);
  EXPECT_EQ(batches[2].data.to_vector<float>(), (std::vector<float>{8, 80, 9, 90}));
  EXPECT_EQ(batches[1].target.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 1}));

  // Stack of unlabeled examples, and its errors.
  data::transforms::Stack<data::TensorExample> stack_data;
  data::TensorExample t = stack_data.apply_batch({data::TensorExample(ones({2})), data::TensorExample(zeros({2}))});
  EXPECT_EQ(t.data.to_vector<float>(), (std::vector<float>{1, 1, 0, 0}));
  data::transforms::Stack<> stack;
  testing::expect_error([&] { stack.apply_batch({}); }, {"[Stack]", "no samples"});
  testing::expect_error([&] { stack.apply_batch({{zeros({2}), zeros({})}, {zeros({2}), Tensor()}}); },
                        {"[Stack]", "sample 1"});
  testing::expect_error([&] { stack.apply_batch({{zeros({2}), zeros({})}, {zeros({3}), zeros({})}}); }, {"[stack]"});
}

TEST(LibtorchData, NormalizeScalarAndPerChannel) {
  // Against a naive float32 loop of (x - mean) / stddev.
  Tensor x = arange(0, 2 * 3 * 4, 1, kInt64).to(kFloat).div(23.0).view({2, 3, 4});
  {
    data::transforms::Normalize<> n(0.1307, 0.3081);
    data::Example<> e = n.apply({x, scalar_tensor(int64_t{5})});
    EXPECT_EQ(e.data.sizes(), IntArrayRef({2, 3, 4}));
    EXPECT_EQ(e.target.item<int64_t>(), 5) << "the target passes through";
    std::vector<float> want;
    for (float v : x.contiguous().to_vector<float>()) want.push_back((v - 0.1307f) / 0.3081f);
    EXPECT_TRUE(testing::close(e.data, tensor(want).view({2, 3, 4}), 1e-6, 1e-7));
  }
  {
    // One value per channel: channels are dim -3 ([C, H, W]).
    std::vector<double> mean{0.5, 0.25}, stddev{0.5, 2.0};
    data::transforms::Normalize<> n(mean, stddev);
    Tensor y = n(x);
    std::vector<float> xs = x.contiguous().to_vector<float>(), want;
    for (size_t i = 0; i < xs.size(); ++i) {
      size_t c = i / 12;
      want.push_back((xs[i] - static_cast<float>(mean[c])) / static_cast<float>(stddev[c]));
    }
    EXPECT_TRUE(testing::close(y, tensor(want).view({2, 3, 4}), 1e-6, 1e-7));
    // A batch [B, C, H, W] broadcasts too.
    EXPECT_EQ(n(stack({x, x}, 0)).sizes(), IntArrayRef({2, 2, 3, 4}));
    testing::expect_error([&] { n(zeros({3, 3, 4})); }, {"[Normalize]", "2 channels", "[3, 3, 4]"});
  }
  // A [H, W] image comes out [1, H, W], as libtorch's.
  EXPECT_EQ(data::transforms::Normalize<>(0.5, 0.5)(zeros({28, 28})).sizes(), IntArrayRef({1, 28, 28}));
  testing::expect_error([] { data::transforms::Normalize<>(0.5, 0.0); }, {"[Normalize]", "stddev"});
  testing::expect_error([] { data::transforms::Normalize<>(std::vector<double>{0.1, 0.2}, {1, 2, 3}); },
                        {"[Normalize]", "2 channels", "3"});
  testing::expect_error([] { data::transforms::Normalize<>(std::vector<double>{}, {1.0}); },
                        {"[Normalize]", "mean"});
}

TEST(LibtorchData, LambdasAndCustomTransforms) {
  using data::Example;
  auto doubled = Numbers(6)
                     .map(data::transforms::TensorLambda<>([](Tensor t) { return t.mul(2); }))
                     .map(data::transforms::Lambda<Example<>>([](Example<> e) {
                       e.target = e.target.add(100);
                       return e;
                     }))
                     .map(data::transforms::Stack<>());
  std::vector<size_t> idx{1, 5};
  Example<> b = doubled.get_batch(idx);
  EXPECT_EQ(b.data.to_vector<float>(), (std::vector<float>{2, 20, 10, 100}));
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{101, 102}));

  // A BatchTransform subclass and a Collate from a function.
  struct CountBatch : data::transforms::BatchTransform<std::vector<Example<>>, size_t> {
    size_t apply_batch(std::vector<Example<>> batch) override { return batch.size(); }
  };
  auto counted = Numbers(5).map(CountBatch());
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(counted, 2);
  std::vector<size_t> sizes;
  for (size_t n : *loader) sizes.push_back(n);
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 2, 1}));
  data::transforms::Collate<Example<>> first([](std::vector<Example<>> v) { return v.front(); });
  EXPECT_EQ(first.apply_batch(Numbers(4).get_batch(std::vector<size_t>{3, 1})).data[0].item<float>(), 3.f);
  // datasets::map, the free function.
  auto m = data::datasets::map(Numbers(3), data::transforms::Stack<>());
  EXPECT_EQ(m.get_batch(std::vector<size_t>{0, 2}).data.size(0), 2);
}

TEST(LibtorchData, TensorDatasetOfOneTensor) {
  data::datasets::TensorDataset ds(arange(12).view({4, 3}));
  EXPECT_EQ(ds.size().value(), 4u);
  data::TensorExample e = ds.get(2);
  EXPECT_EQ(e.data.to_vector<int64_t>(), (std::vector<int64_t>{6, 7, 8}));
  const Tensor& as_tensor = e;  // an unlabeled example converts to its data
  EXPECT_EQ(as_tensor.size(0), 3);
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
      ds.map(data::transforms::Stack<data::TensorExample>()), 3);
  std::vector<int64_t> rows;
  for (auto& b : *loader) rows.push_back(b.data.size(0));
  EXPECT_EQ(rows, (std::vector<int64_t>{3, 1}));
  testing::expect_error([&] { ds.get(4); }, {"[TensorDataset]", "out of range"});
}

// In the form of pytorch/examples' custom-dataset (after the rename): an
// Example alias inside the class, get() without `override`, a vector of
// (path, label) pairs, labels as [1] tensors flattened by the training loop.
using PairData = std::vector<std::pair<std::string, long>>;
class CustomDataset : public brisk::data::datasets::Dataset<CustomDataset> {
  using Example = brisk::data::Example<>;
  PairData data;

 public:
  CustomDataset(const PairData& data) : data(data) {}
  Example get(size_t index) {
    auto tdata = brisk::full({3, 4, 4}, static_cast<double>(data[index].first.size())).to(brisk::kFloat);
    auto tlabel = brisk::tensor(std::vector<int64_t>{data[index].second});
    return {tdata, tlabel};
  }
  std::optional<size_t> size() const { return data.size(); }
};

TEST(LibtorchData, CustomDatasetExampleForm) {
  PairData pairs{{"a.jpg", 3}, {"bb.jpg", 1}, {"ccc.jpg", 4}};
  auto train_set = CustomDataset(pairs).map(brisk::data::transforms::Stack<>());
  auto train_size = train_set.size().value();
  const size_t train_batch_size = 2;
  auto train_loader = brisk::data::make_data_loader<brisk::data::samplers::SequentialSampler>(std::move(train_set),
                                                                                             train_batch_size);
  std::vector<int64_t> labels;
  std::vector<float> firsts;
  for (auto& batch : *train_loader) {
    auto targets = batch.target.view({-1});
    for (int64_t v : targets.to_vector<int64_t>()) labels.push_back(v);
    EXPECT_EQ(batch.data.dim(), 4);
    for (int64_t i = 0; i < batch.data.size(0); ++i) firsts.push_back(batch.data[i][0][0][0].item<float>());
  }
  EXPECT_EQ(train_size, 3u);
  EXPECT_EQ(labels, (std::vector<int64_t>{3, 1, 4}));
  EXPECT_EQ(firsts, (std::vector<float>{5, 6, 7}));
}

// ---- loaders with workers ----------------------------------------------------------

TEST(LibtorchData, WorkersInOrderWithEnforceOrdering) {
  // Sequential sampler: every epoch is 0..n-1 in order, whatever the workers'
  // speeds; the same as without workers.
  for (size_t workers : {0, 1, 2, 3}) {
    auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
        Numbers(103, /*slow=*/true).map(data::transforms::Stack<>()),
        data::DataLoaderOptions().batch_size(5).workers(workers));
    for (int e = 0; e < 2; ++e) {
      auto batches = epoch(*loader);
      EXPECT_EQ(batches.size(), 21u);
      EXPECT_EQ(flat(batches), iota(103)) << "workers " << workers << " epoch " << e;
    }
  }
}

TEST(LibtorchData, RandomSamplerEveryIndexOncePerEpoch) {
  for (bool ordered : {true, false}) {
    manual_seed(7);
    auto loader = data::make_data_loader(Numbers(97, /*slow=*/true).map(data::transforms::Stack<>()),
                                         data::DataLoaderOptions().batch_size(8).workers(3).enforce_ordering(ordered));
    std::vector<std::vector<int64_t>> epochs;
    for (int e = 0; e < 3; ++e) {
      auto ids = flat(epoch(*loader));
      EXPECT_NE(ids, iota(97)) << "shuffled";
      epochs.push_back(ids);
      std::sort(ids.begin(), ids.end());
      EXPECT_EQ(ids, iota(97)) << "every index exactly once, epoch " << e << " ordered " << ordered;
    }
    EXPECT_NE(epochs[0], epochs[1]) << "a new permutation each epoch";
    if (ordered) {
      // manual_seed reproduces the epochs, and workers do not change the order.
      manual_seed(7);
      auto serial = data::make_data_loader(Numbers(97).map(data::transforms::Stack<>()), 8);
      for (int e = 0; e < 3; ++e) EXPECT_EQ(flat(epoch(*serial)), epochs[static_cast<size_t>(e)]) << "epoch " << e;
    }
  }
}

TEST(LibtorchData, RandomSamplerFollowsManualSeed) {
  data::samplers::RandomSampler a(50), b(50);
  manual_seed(3);
  a.reset();
  auto a0 = *a.next(50);
  a.reset();
  auto a1 = *a.next(50);
  manual_seed(3);
  b.reset();
  EXPECT_EQ(*b.next(50), a0);
  b.reset();
  EXPECT_EQ(*b.next(50), a1);
  EXPECT_NE(a0, a1);
  manual_seed(4);
  b.reset();
  EXPECT_NE(*b.next(50), a0);
  // next() in pieces, then the end of the epoch.
  b.reset();
  auto p1 = *b.next(30), p2 = *b.next(30);
  EXPECT_EQ(p1.size(), 30u);
  EXPECT_EQ(p2.size(), 20u);
  EXPECT_EQ(b.index(), 50u);
  EXPECT_FALSE(b.next(1).has_value());
  b.reset(5);
  EXPECT_EQ(b.next(10)->size(), 5u);
  testing::expect_error([&] { b.next(0); }, {"[RandomSampler]", "batch_size"});
  testing::expect_error([] { data::samplers::RandomSampler(4, kFloat); }, {"[RandomSampler]", "index_dtype"});
}

TEST(LibtorchData, DropLast) {
  auto keep = data::make_data_loader<data::samplers::SequentialSampler>(Numbers(10).map(data::transforms::Stack<>()),
                                                                        data::DataLoaderOptions(4));
  EXPECT_EQ(epoch(*keep), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  auto drop = data::make_data_loader<data::samplers::SequentialSampler>(
      Numbers(10).map(data::transforms::Stack<>()), data::DataLoaderOptions().batch_size(4).drop_last(true).workers(2));
  EXPECT_EQ(epoch(*drop), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  auto none = data::make_data_loader(Numbers(3), data::DataLoaderOptions().batch_size(4).drop_last(true));
  EXPECT_TRUE(none->begin() == none->end());
}

TEST(LibtorchData, OptionsAndBadInput) {
  data::DataLoaderOptions o = 32;  // implicit, as libtorch's
  EXPECT_EQ(o.batch_size(), 32u);
  EXPECT_TRUE(o.enforce_ordering());
  EXPECT_FALSE(o.drop_last());
  EXPECT_EQ(o.workers(), 0u);
  o.num_workers(3);
  EXPECT_EQ(o.workers(), 3u);
  o.max_jobs(5).timeout(std::chrono::milliseconds(1000));
  EXPECT_EQ(o.max_jobs().value(), 5u);
  EXPECT_EQ(o.timeout()->count(), 1000);

  // The resolved options, as fields (libtorch's FullDataLoaderOptions).
  auto loader = data::make_data_loader(Numbers(4), data::DataLoaderOptions().batch_size(2).workers(3));
  EXPECT_EQ(loader->options().max_jobs, 6u) << "2 * workers by default";
  EXPECT_EQ(loader->options().batch_size, 2u);
  EXPECT_FALSE(loader->options().timeout.has_value());
  // A signed batch size, as pytorch/examples' mnist passes it, and a const loop.
  const int64_t kBatchSize = 3;
  auto signed_bs = data::make_data_loader<data::samplers::SequentialSampler>(
      Numbers(7).map(data::transforms::Stack<>()), kBatchSize);
  size_t n = 0;
  for (const auto& batch : *signed_bs) n += static_cast<size_t>(batch.data.size(0));
  EXPECT_EQ(n, 7u);

  testing::expect_error([] { data::make_data_loader(Numbers(4), data::DataLoaderOptions().batch_size(0)); },
                        {"[DataLoader]", "batch_size must be positive"});
  testing::expect_error([] { data::make_data_loader(Numbers(4), data::DataLoaderOptions().max_jobs(0)); },
                        {"[DataLoader]", "max_jobs"});
  testing::expect_error([] { data::DataLoader(data::TensorDataset(zeros({2}), zeros({2})), 0); },
                        {"[DataLoader]", "batch_size"});
  struct Unsized : data::datasets::BatchDataset<Unsized, int, size_t> {
    int get_batch(size_t) override { return 0; }
    std::optional<size_t> size() const override { return std::nullopt; }
  };
  testing::expect_error([] { data::make_data_loader<data::samplers::SequentialSampler>(Unsized(), 2); },
                        {"[make_data_loader]", "sized"});
  // An index out of range inside a worker reaches the caller as the dataset's error.
  struct Bad : data::datasets::Dataset<Bad> {
    data::Example<> get(size_t i) override { return Numbers(5).get(i); }
    std::optional<size_t> size() const override { return 8; }
  };
  for (size_t workers : {0, 2}) {
    auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
        Bad(), data::DataLoaderOptions().batch_size(2).workers(workers));
    auto it = loader->begin();
    ++it;  // indices 2, 3
    testing::expect_error([&] { ++it; }, {"[Numbers]", "index 5 out of range"});
  }
}

TEST(LibtorchData, TimeoutWaitingForAWorker) {
  struct Sleepy : data::datasets::Dataset<Sleepy> {
    data::Example<> get(size_t i) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return Numbers(4).get(i);
    }
    std::optional<size_t> size() const override { return 4; }
  };
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
      Sleepy(), data::DataLoaderOptions().batch_size(1).workers(1).timeout(std::chrono::milliseconds(20)));
  testing::expect_error([&] { loader->begin(); }, {"[DataLoader]", "timed out after 20 ms"});
}

TEST(LibtorchData, MaxJobsBoundsThePrefetch) {
  struct Counting : data::datasets::Dataset<Counting> {
    std::shared_ptr<std::atomic<size_t>> calls = std::make_shared<std::atomic<size_t>>(0);
    data::Example<> get(size_t i) override {
      calls->fetch_add(1);
      return Numbers(400).get(i);
    }
    std::optional<size_t> size() const override { return 400; }
  };
  Counting ds;
  auto calls = ds.calls;  // shared by the workers' copies of the dataset
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
      ds, data::DataLoaderOptions().batch_size(1).workers(2).max_jobs(4));
  auto it = loader->begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // One consumed; two per worker queued, plus one in flight each.
  EXPECT_LE(calls->load(), 1u + 4 + 2);
  EXPECT_GE(calls->load(), 2u);
}

// ---- distributed and stream samplers ---------------------------------------------------

template <class S>
std::vector<size_t> drain(S& s, size_t batch_size = 3) {
  std::vector<size_t> out;
  while (auto b = s.next(batch_size)) out.insert(out.end(), b->begin(), b->end());
  return out;
}

TEST(LibtorchData, DistributedSamplersShareDisjointlyAndCompletely) {
  for (size_t n : {0, 1, 3, 10, 11, 97}) {
    for (size_t replicas : {1, 2, 3, 4}) {
      for (bool dup : {true, false}) {
        for (bool random : {false, true}) {
          const size_t local = dup ? (n + replicas - 1) / replicas : n / replicas;
          std::map<size_t, int> count;
          std::vector<std::vector<size_t>> shares;
          for (size_t r = 0; r < replicas; ++r) {
            std::vector<size_t> share;
            if (random) {
              data::samplers::DistributedRandomSampler s(n, replicas, r, dup);
              s.set_epoch(5);
              s.reset();
              share = drain(s);
            } else {
              data::samplers::DistributedSequentialSampler s(n, replicas, r, dup);
              s.reset();
              share = drain(s);
            }
            ASSERT_EQ(share.size(), local) << "n " << n << " replicas " << replicas << " rank " << r;
            for (size_t i : share) {
              ASSERT_LT(i, n);
              count[i]++;
            }
            shares.push_back(share);
          }
          const std::string what = "n " + std::to_string(n) + " replicas " + std::to_string(replicas) +
                                   (dup ? " dup" : " nodup") + (random ? " random" : " sequential");
          if (dup) {
            EXPECT_EQ(count.size(), n) << "every index on some rank: " << what;
            // Padding repeats the first replicas * local - n indices once.
            size_t twice = 0;
            for (auto& [i, c] : count) twice += static_cast<size_t>(c - 1);
            if (n >= replicas) EXPECT_EQ(twice, replicas * local - n) << what;
          } else {
            EXPECT_EQ(count.size(), replicas * local) << "disjoint: " << what;
            for (auto& [i, c] : count) EXPECT_EQ(c, 1) << what;
          }
          if (!random && n > 0 && replicas * local <= n) {
            // Sequential: rank r gets the contiguous block [r local, (r + 1) local).
            for (size_t r = 0; r < replicas; ++r)
              for (size_t j = 0; j < local; ++j) EXPECT_EQ(shares[r][j], r * local + j) << what;
          }
        }
      }
    }
  }
}

TEST(LibtorchData, DistributedRandomSamplerShufflesPerEpoch) {
  data::samplers::DistributedRandomSampler a(40, 2, 0), b(40, 2, 0), other_rank(40, 2, 1);
  a.set_epoch(0);
  a.reset();
  auto e0 = drain(a);
  a.set_epoch(1);
  a.reset();
  auto e1 = drain(a);
  EXPECT_NE(e0, e1) << "a new order per epoch";
  EXPECT_EQ(a.epoch(), 1u);
  b.set_epoch(1);
  b.reset();
  EXPECT_EQ(drain(b), e1) << "the order depends on the epoch only";
  other_rank.set_epoch(1);
  other_rank.reset();
  auto r1 = drain(other_rank);
  std::set<size_t> all(e1.begin(), e1.end());
  all.insert(r1.begin(), r1.end());
  EXPECT_EQ(all.size(), 40u);
  std::vector<size_t> sorted = e1;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(sorted, e1) << "shuffled within the share";
  testing::expect_error([] { data::samplers::DistributedRandomSampler(10, 2, 2); },
                        {"[DistributedSampler]", "rank 2 out of range for 2"});
  testing::expect_error([] { data::samplers::DistributedSequentialSampler(10, 0); },
                        {"[DistributedSampler]", "num_replicas"});

  // In a loader: each rank's loader yields its share, every epoch.
  std::vector<int64_t> seen;
  for (size_t r = 0; r < 3; ++r) {
    auto loader = data::make_data_loader(Numbers(30).map(data::transforms::Stack<>()),
                                         data::samplers::DistributedRandomSampler(30, 3, r, false),
                                         data::DataLoaderOptions().batch_size(4).workers(2));
    auto ids = flat(epoch(*loader));
    EXPECT_EQ(ids.size(), 10u);
    seen.insert(seen.end(), ids.begin(), ids.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, iota(30));
}

// A stream: each request asks for a count; the batch is the next that many numbers.
struct Counter : data::datasets::BatchDataset<Counter, std::vector<int64_t>, data::samplers::BatchSize> {
  std::shared_ptr<std::atomic<int64_t>> next = std::make_shared<std::atomic<int64_t>>(0);
  std::vector<int64_t> get_batch(data::samplers::BatchSize request) override {
    std::vector<int64_t> out;
    for (size_t i = 0; i < request.size(); ++i) out.push_back(next->fetch_add(1));
    return out;
  }
  std::optional<size_t> size() const override { return std::nullopt; }
};

TEST(LibtorchData, StreamSampler) {
  data::samplers::StreamSampler s(10);
  std::vector<size_t> sizes;
  while (auto b = s.next(4)) sizes.push_back(*b);
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 4, 2}));
  auto loader = data::make_data_loader(Counter(), data::samplers::StreamSampler(10), data::DataLoaderOptions(4));
  std::vector<size_t> got;
  int64_t total = 0;
  for (auto& batch : *loader) {
    got.push_back(batch.size());
    for (int64_t v : batch) total += v;
  }
  EXPECT_EQ(got, (std::vector<size_t>{4, 4, 2}));
  EXPECT_EQ(total, 45);
}

// ---- MNIST ----------------------------------------------------------------------------

class Mnist : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("brisk_test_libtorch_data_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // n images 28x28 with pixel (i * 37 + r * 5 + c * 3) % 256, label (3 i + 1) % 10.
  void write(const std::string& prefix, int64_t n, bool gz) {
    Tensor img = arange(n).mul(37).view({n, 1, 1}).add(arange(28).mul(5).view({1, 28, 1}))
                     .add(arange(28).mul(3).view({1, 1, 28})).remainder(256).to(kUInt8);
    Tensor lab = arange(n).mul(3).add(1).remainder(10).to(kUInt8);
    std::string ext = gz ? ".gz" : "";
    data::write_idx((dir_ / (prefix + "-images-idx3-ubyte" + ext)).string(), img, gz);
    data::write_idx((dir_ / (prefix + "-labels-idx1-ubyte" + ext)).string(), lab, gz);
  }
  fs::path dir_;
};

// The libtorch pipeline of pytorch/examples' mnist, checked batch by batch
// against the raw IDX reader: (u8 / 255 - mean) / std, [B, 1, 28, 28].
void check_pipeline(const std::string& root, bool train, const std::string& images_file,
                    const std::string& labels_file, size_t batch_size, size_t workers) {
  using Mode = data::datasets::MNIST::Mode;
  const double mean = 0.1307, stddev = 0.3081;
  auto dataset = data::datasets::MNIST(root, train ? Mode::kTrain : Mode::kTest)
                     .map(data::transforms::Normalize<>(mean, stddev))
                     .map(data::transforms::Stack<>());
  const size_t dataset_size = dataset.size().value();
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
      std::move(dataset), data::DataLoaderOptions().batch_size(batch_size).workers(workers));

  Tensor raw = data::read_idx_images(images_file);  // uint8 [N, 28, 28]
  Tensor labels = data::read_idx_labels(labels_file);
  ASSERT_EQ(static_cast<size_t>(raw.size(0)), dataset_size);
  // The reference in float32, op by op as libtorch: x.to(float) / 255, then
  // (x - float(mean)) / float(stddev).
  Tensor want_all = raw.to(kFloat).div(255.0).sub(tensor(std::vector<float>{static_cast<float>(mean)}))
                        .div(tensor(std::vector<float>{static_cast<float>(stddev)}))
                        .unsqueeze(1);
  size_t seen = 0, k = 0;
  for (auto& batch : *loader) {
    const auto b = static_cast<int64_t>(std::min(batch_size, dataset_size - seen));
    ASSERT_EQ(batch.data.sizes(), IntArrayRef({b, 1, 28, 28})) << "batch " << k;
    ASSERT_EQ(batch.data.dtype(), kFloat);
    ASSERT_EQ(batch.target.dtype(), kInt64);
    Tensor want = want_all.narrow(0, static_cast<int64_t>(seen), b);
    ASSERT_TRUE(testing::close(batch.data, want, 1e-6, 1e-6)) << "batch " << k;
    ASSERT_TRUE(equal(batch.target, labels.narrow(0, static_cast<int64_t>(seen), b))) << "batch " << k;
    seen += static_cast<size_t>(b);
    ++k;
  }
  EXPECT_EQ(seen, dataset_size);
}

TEST_F(Mnist, DatasetMatchesTheIdxReader) {
  write("train", 13, /*gz=*/false);  // libtorch's plain file names
  write("t10k", 5, /*gz=*/true);     // Debian's .gz files
  using Mode = data::datasets::MNIST::Mode;
  data::datasets::MNIST train(dir_.string()), test(dir_.string(), Mode::kTest);
  EXPECT_TRUE(train.is_train());
  EXPECT_FALSE(test.is_train());
  EXPECT_EQ(train.size().value(), 13u);
  EXPECT_EQ(test.size().value(), 5u);
  EXPECT_EQ(train.images().sizes(), IntArrayRef({13, 1, 28, 28}));
  EXPECT_EQ(train.images().dtype(), kFloat);
  EXPECT_EQ(train.targets().dtype(), kInt64);
  Tensor raw = data::read_idx_images((dir_ / "train-images-idx3-ubyte").string());
  EXPECT_TRUE(equal(train.images(), raw.to(kFloat).div(255.0).unsqueeze(1)));
  EXPECT_GE(min(train.images()).item<float>(), 0.f);
  EXPECT_LE(max(train.images()).item<float>(), 1.f);
  data::Example<> e = test.get(4);
  EXPECT_EQ(e.data.sizes(), IntArrayRef({1, 28, 28}));
  EXPECT_FLOAT_EQ(e.data.index({0, 2, 3}).item<float>(), static_cast<float>((4 * 37 + 2 * 5 + 3 * 3) % 256) / 255.f);
  EXPECT_EQ(e.target.item<int64_t>(), (3 * 4 + 1) % 10);
  testing::expect_error([&] { test.get(5); }, {"[MNIST]", "index 5 out of range"});
  testing::expect_error([&] { data::datasets::MNIST((dir_ / "nowhere").string()); },
                        {"[MNIST]", "train-images-idx3-ubyte", "nor"});

  check_pipeline(dir_.string(), true, (dir_ / "train-images-idx3-ubyte").string(),
                 (dir_ / "train-labels-idx1-ubyte").string(), 4, 0);
  check_pipeline(dir_.string(), false, (dir_ / "t10k-images-idx3-ubyte.gz").string(),
                 (dir_ / "t10k-labels-idx1-ubyte.gz").string(), 2, 2);
}

TEST(MnistReal, FashionMnistThroughTheLibtorchPipeline) {
  const std::string root = data::FashionMNIST::default_root();
  if (!fs::exists(root + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST not found in " << root << " (apt-get install dataset-fashion-mnist)";
  check_pipeline(root, false, root + "/t10k-images-idx3-ubyte.gz", root + "/t10k-labels-idx1-ubyte.gz", 64, 2);
  // The training set: sizes, and a shuffled epoch in the dcgan example's form.
  auto dataset = data::datasets::MNIST(root)
                     .map(data::transforms::Normalize<>(0.5, 0.5))
                     .map(data::transforms::Stack<>());
  EXPECT_EQ(dataset.size().value(), 60000u);
  auto loader = data::make_data_loader(std::move(dataset), data::DataLoaderOptions().batch_size(64).workers(2));
  size_t batches = 0, samples = 0;
  for (auto& batch : *loader) {
    ++batches;
    samples += static_cast<size_t>(batch.data.size(0));
    if (batches == 1) {
      EXPECT_EQ(batch.data.sizes(), IntArrayRef({64, 1, 28, 28}));
      EXPECT_GE(min(batch.data).item<float>(), -1.f);
      EXPECT_LE(max(batch.data).item<float>(), 1.f);
    }
  }
  EXPECT_EQ(batches, 938u);
  EXPECT_EQ(samples, 60000u);
}

}  // namespace
}  // namespace brisk
