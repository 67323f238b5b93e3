// brisk::data: datasets, samplers and the DataLoader (batching, shuffling,
// worker threads, errors from workers, early exit).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <set>
#include <stdexcept>
#include <thread>

#include "brisk/data.h"
#include "test_util.h"

namespace brisk {
namespace {

using data::DataLoader;
using data::DataLoaderOptions;
using Example = data::Example<>;

// data[i] = {i, 0.5 + i} (float32 [n, 2]); target[i] = i (int64 [n]).
data::TensorDataset numbered(int64_t n) {
  Tensor ids = arange(n);
  Tensor x = stack({ids.to(kFloat), ids.to(kFloat).add(0.5)}, 1);
  return data::TensorDataset(x, ids);
}

std::vector<int64_t> ids_of(const Example& b) { return b.target.to_vector<int64_t>(); }

// All batches of one epoch, as lists of sample ids.
std::vector<std::vector<int64_t>> epoch(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) out.push_back(ids_of(batch));
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

// Runs fn on another thread; fails (and exits, rather than hang ctest) if it
// does not finish in time.
template <class F>
void within_seconds(int seconds, F fn) {
  auto fut = std::async(std::launch::async, fn);
  if (fut.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    ADD_FAILURE() << "timed out after " << seconds << " s (a DataLoader hangs)";
    std::fflush(nullptr);
    std::_Exit(1);
  }
  fut.get();  // rethrows a failure inside fn
}

TEST(TensorDataset, IndexesTheFirstDimension) {
  auto ds = numbered(5);
  EXPECT_EQ(ds.size(), 5u);
  Example e = ds.get(3);
  EXPECT_EQ(e.data.sizes(), IntArrayRef({2}));
  EXPECT_EQ(e.data.to_vector<float>(), (std::vector<float>{3.f, 3.5f}));
  EXPECT_EQ(e.target.item<int64_t>(), 3);
  testing::expect_error([&] { ds.get(5); }, {"[TensorDataset]", "index 5 out of range"});
  testing::expect_error([] { data::TensorDataset(zeros({3, 2}), zeros({4})); },
                        {"[TensorDataset]", "3 samples", "4"});
}

TEST(Samplers, SequentialResetAndNext) {
  data::SequentialSampler seq(5);
  EXPECT_EQ(seq.epoch_indices(), (std::vector<size_t>{0, 1, 2, 3, 4}));
  seq.reset();
  EXPECT_EQ(seq.next(2), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(seq.next(2), (std::vector<size_t>{2, 3}));
  EXPECT_EQ(seq.index(), 4u);
  EXPECT_EQ(seq.next(2), (std::vector<size_t>{4}));
  EXPECT_FALSE(seq.next(2).has_value());
  seq.reset(3);  // a new size
  EXPECT_EQ(seq.next(10), (std::vector<size_t>{0, 1, 2}));
  testing::expect_error([&] { seq.next(0); }, {"[SequentialSampler]", "batch_size"});
}

TEST(Samplers, RandomIsAPermutationFixedBySeedAndEpoch) {
  data::RandomSampler a(100, 42), b(100, 42), c(100, 43);
  auto a0 = a.epoch_indices(), a1 = a.epoch_indices();
  auto b0 = b.epoch_indices(), b1 = b.epoch_indices();
  EXPECT_EQ(a0, b0);
  EXPECT_EQ(a1, b1);
  EXPECT_NE(a0, a1) << "each epoch needs a new permutation";
  EXPECT_NE(a0, c.epoch_indices()) << "another seed, another order";
  for (const auto& p : {a0, a1}) {
    auto sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  }
  a.set_epoch(1);
  EXPECT_EQ(a.epoch_indices(), a1) << "set_epoch replays an epoch";
  // Pinned: the order is part of the API (same on every run, compiler and
  // standard library; Note [Sampler randomness]).
  data::RandomSampler pinned(10, 0);
  EXPECT_EQ(pinned.epoch_indices(), (std::vector<size_t>{1, 2, 5, 7, 0, 8, 4, 3, 9, 6}));
}

TEST(DataLoader, BatchesInOrder) {
  DataLoader loader(numbered(10), DataLoaderOptions().batch_size(4));
  EXPECT_EQ(loader.size(), 3u);
  std::vector<Example> batches;
  for (auto& batch : loader) batches.push_back(batch);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].data.sizes(), IntArrayRef({4, 2}));
  EXPECT_EQ(batches[0].target.sizes(), IntArrayRef({4}));
  EXPECT_EQ(batches[0].data.dtype(), kFloat);
  EXPECT_EQ(batches[0].target.dtype(), kInt64);
  EXPECT_EQ(batches[2].data.sizes(), IntArrayRef({2, 2}));
  EXPECT_EQ(ids_of(batches[1]), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(batches[2].data.to_vector<float>(), (std::vector<float>{8.f, 8.5f, 9.f, 9.5f}));
  // A second pass is a new epoch with the same (unshuffled) order.
  EXPECT_EQ(flat(epoch(loader)), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(DataLoader, DropLast) {
  DataLoader loader(numbered(10), DataLoaderOptions().batch_size(4).drop_last(true));
  EXPECT_EQ(loader.size(), 2u);
  auto batches = epoch(loader);
  ASSERT_EQ(batches.size(), 2u);
  for (auto& b : batches) EXPECT_EQ(b.size(), 4u);
  DataLoader exact(numbered(8), DataLoaderOptions().batch_size(4).drop_last(true));
  EXPECT_EQ(epoch(exact).size(), 2u);
  DataLoader too_small(numbered(3), DataLoaderOptions().batch_size(4).drop_last(true));
  EXPECT_EQ(too_small.size(), 0u);
  EXPECT_TRUE(too_small.begin() == too_small.end());
}

TEST(DataLoader, EmptyDataset) {
  DataLoader loader(data::TensorDataset(zeros({0, 3}), zeros({0}, kInt64)), DataLoaderOptions().num_workers(2));
  EXPECT_EQ(loader.size(), 0u);
  EXPECT_TRUE(epoch(loader).empty());
}

TEST(DataLoader, ShuffleIsSeededAndNewEachEpoch) {
  auto opts = DataLoaderOptions().batch_size(8).shuffle(true).seed(123);
  DataLoader a(numbered(50), opts), b(numbered(50), opts);
  auto a0 = epoch(a), a1 = epoch(a);
  auto b0 = epoch(b), b1 = epoch(b);
  EXPECT_EQ(a0, b0) << "same seed, same order";
  EXPECT_EQ(a1, b1);
  EXPECT_NE(flat(a0), flat(a1)) << "a new permutation per epoch";
  DataLoader c(numbered(50), DataLoaderOptions().batch_size(8).shuffle(true).seed(124));
  EXPECT_NE(flat(epoch(c)), flat(a0));
  std::vector<int64_t> in_order(50);
  for (int64_t i = 0; i < 50; ++i) in_order[i] = i;
  EXPECT_NE(flat(a0), in_order);
  // Every sample exactly once per epoch.
  for (const auto& e : {a0, a1}) {
    auto ids = flat(e);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, in_order);
  }
}

// A dataset whose samples take uneven time, so that workers finish out of order.
class SlowDataset : public data::Dataset<SlowDataset> {
 public:
  explicit SlowDataset(size_t n) : n_(n) {}
  Example get(size_t i) override {
    std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 13 * 50));
    calls_.fetch_add(1);
    Tensor x = full({3}, static_cast<double>(i), kFloat);
    return {x, scalar_tensor(static_cast<int64_t>(i))};
  }
  std::optional<size_t> size() const override { return n_; }
  std::atomic<size_t> calls_{0};

 private:
  size_t n_;
};

TEST(DataLoader, WorkersGiveTheSameBatchesInTheSameOrder) {
  for (bool shuffle : {false, true}) {
    for (bool drop_last : {false, true}) {
      auto base = DataLoaderOptions().batch_size(5).shuffle(shuffle).drop_last(drop_last).seed(9);
      DataLoader serial(std::make_shared<SlowDataset>(103), base);
      std::vector<std::vector<Example>> want(2);
      for (int e = 0; e < 2; ++e)
        for (auto& b : serial) want[e].push_back(b);
      for (size_t workers : {1, 2, 3, 8}) {
        auto opts = base;
        opts.num_workers(workers).prefetch_factor(2);
        DataLoader threaded(std::make_shared<SlowDataset>(103), opts);
        for (int e = 0; e < 2; ++e) {
          size_t k = 0;
          for (auto& b : threaded) {
            ASSERT_LT(k, want[e].size());
            EXPECT_TRUE(equal(b.data, want[e][k].data)) << "workers " << workers << " epoch " << e << " batch " << k;
            EXPECT_TRUE(equal(b.target, want[e][k].target));
            ++k;
          }
          EXPECT_EQ(k, want[e].size()) << "workers " << workers;
        }
      }
    }
  }
}

TEST(DataLoader, PrefetchIsBounded) {
  auto ds = std::make_shared<SlowDataset>(400);
  DataLoader loader(ds, DataLoaderOptions().batch_size(1).num_workers(2).prefetch_factor(3));
  within_seconds(60, [&] {
    auto it = loader.begin();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // Consumed 1; at most 2 workers x 3 queued, plus one in flight each.
    EXPECT_LE(ds->calls_.load(), 1u + 2 * 3 + 2);
    EXPECT_GE(ds->calls_.load(), 2u);
  });
}

class ThrowingDataset : public data::Dataset<ThrowingDataset> {
 public:
  struct Bad : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  Example get(size_t i) override {
    if (i == 13) throw Bad("sample 13 is corrupt");
    return {full({2}, static_cast<double>(i), kFloat), scalar_tensor(static_cast<int64_t>(i))};
  }
  std::optional<size_t> size() const override { return 40; }
};

TEST(DataLoader, WorkerExceptionReachesTheCaller) {
  for (size_t workers : {0, 1, 3}) {
    DataLoader loader(ThrowingDataset(), DataLoaderOptions().batch_size(4).num_workers(workers));
    within_seconds(60, [&] {
      std::vector<int64_t> seen;
      try {
        for (auto& b : loader) {
          auto ids = ids_of(b);
          seen.insert(seen.end(), ids.begin(), ids.end());
        }
        ADD_FAILURE() << "expected the dataset's exception, workers " << workers;
      } catch (const ThrowingDataset::Bad& e) {
        EXPECT_STREQ(e.what(), "sample 13 is corrupt");
      }
      // Batches before the failing one (12..15) arrived, in order.
      ASSERT_EQ(seen.size(), 12u) << "workers " << workers;
      for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(seen[i], i);
    });
    // The loader is still usable: a new epoch fails again at the same batch.
    within_seconds(60, [&] {
      EXPECT_THROW(
          {
            for (auto& b : loader) (void)b;
          },
          ThrowingDataset::Bad);
    });
  }
}

TEST(DataLoader, BriskErrorFromAWorkerKeepsItsMessage) {
  auto ds = std::make_shared<data::TensorDataset>(zeros({10, 2}), zeros({10}, kInt64));
  // A collate that fails like an op would.
  auto opts = DataLoaderOptions().batch_size(2).num_workers(2).collate(
      [](std::vector<Example>&& s) -> Example { return {cat({s[0].data, zeros({3, 3})}, 0), s[0].target}; });
  DataLoader loader(ds, opts);
  testing::expect_error([&] { loader.begin(); }, {"[cat]"});
}

TEST(DataLoader, EarlyBreakDoesNotHang) {
  within_seconds(60, [] {
    auto ds = std::make_shared<SlowDataset>(1000);
    {
      DataLoader loader(ds, DataLoaderOptions().batch_size(1).num_workers(4).prefetch_factor(2));
      int n = 0;
      for (auto& b : loader) {
        (void)b;
        if (++n == 3) break;
      }
      EXPECT_EQ(n, 3);
      // A new epoch after a break starts from the beginning.
      auto it = loader.begin();
      EXPECT_EQ(it->target.item<int64_t>(), 0);
      ++it;
      EXPECT_EQ(it->target.item<int64_t>(), 1);
    }  // destroyed mid-epoch: joins the workers
    EXPECT_LT(ds->calls_.load(), 1000u) << "workers should stop when the loader is destroyed";
  });
}

TEST(DataLoader, CustomCollateAndNormalize) {
  Tensor pixels = arange(0, 24, 1, kInt64).to(kUInt8).view({6, 2, 2});
  data::TensorDataset ds(pixels, arange(6));
  auto count_collate = [](std::vector<Example>&& s) {
    Example b = data::default_collate(std::move(s));
    b.target = b.target.sum();
    return b;
  };
  DataLoader loader(ds, DataLoaderOptions().batch_size(3).collate(count_collate).transform(data::Normalize(0.5, 0.25)));
  std::vector<Example> batches;
  for (auto& b : loader) batches.push_back(b);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].target.item<int64_t>(), 0 + 1 + 2);
  EXPECT_EQ(batches[1].target.item<int64_t>(), 3 + 4 + 5);
  EXPECT_EQ(batches[1].data.dtype(), kFloat);
  EXPECT_EQ(batches[1].data.sizes(), IntArrayRef({3, 2, 2}));
  std::vector<float> want;
  for (int v = 12; v < 24; ++v) want.push_back(static_cast<float>((v / 255.0 - 0.5) / 0.25));
  EXPECT_TRUE(testing::close(batches[1].data, tensor(want).view({3, 2, 2}), 1e-6, 1e-6));
  testing::expect_error([] { data::to_float_normalized(zeros({2}, kUInt8), 0.5, 0.0); },
                        {"[to_float_normalized]", "std"});
  testing::expect_error([] { data::to_float_normalized(zeros({2}, kUInt8), 0.5, 0.2, kInt32); },
                        {"[to_float_normalized]", "dtype", "int32"});
}

// 16-bit batches for mixed precision: the float32 result rounded once;
// float64 computed in float64.
TEST(DataLoader, NormalizeToLowPrecisionBatches) {
  Tensor px = arange(0, 256).to(kUInt8).view({4, 8, 8});
  const Tensor f32 = data::to_float_normalized(px, 0.2860, 0.3530);
  for (ScalarType t : {kBFloat16, kHalf}) {
    Tensor y = data::to_float_normalized(px, 0.2860, 0.3530, t);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_TRUE(equal(y, f32.to(t)));
  }
  Tensor d = data::to_float_normalized(px, 0.2860, 0.3530, kDouble);
  EXPECT_EQ(d.dtype(), kDouble);
  EXPECT_DOUBLE_EQ(d[1][2][3].item<double>(), (83 / 255.0 - 0.2860) / 0.3530);
  Example batch{px, arange(4)};
  EXPECT_EQ(data::Normalize(0.2860, 0.3530, kBFloat16)(batch).data.dtype(), kBFloat16);
}

TEST(DataLoader, DefaultCollateErrors) {
  testing::expect_error([] { data::default_collate({}); }, {"[default_collate]", "no samples"});
  std::vector<Example> mixed{{zeros({2}), zeros({})}, {zeros({2}), Tensor()}};
  testing::expect_error([&] { data::default_collate(std::move(mixed)); }, {"[default_collate]", "sample 1"});
}

TEST(DataLoader, IteratorPastTheEnd) {
  DataLoader loader(numbered(2), DataLoaderOptions().batch_size(2));
  auto it = loader.begin();
  ++it;
  EXPECT_TRUE(it == loader.end());
  testing::expect_error([&] { (void)*it; }, {"[DataLoader]", "past the last batch"});
}

}  // namespace
}  // namespace brisk

namespace brisk {

// PyTorch's DistributedSampler: the ranks' shares are disjoint and cover
// the (padded) epoch, the same order on every rank for one (seed, epoch),
// a new order per epoch, padding or drop_last.
TEST(DataLoader, DistributedSamplerShards) {
  for (bool drop_last : {false, true}) {
    for (size_t world : {1, 2, 3, 4}) {
      const size_t n = 10;
      std::vector<size_t> all;
      size_t per = 0;
      for (size_t r = 0; r < world; ++r) {
        data::DistributedSampler s(n, world, r, /*shuffle=*/true, /*seed=*/3, drop_last);
        s.set_epoch(2);
        s.reset();
        per = s.num_samples();
        EXPECT_EQ(s.indices().size(), per);
        all.insert(all.end(), s.indices().begin(), s.indices().end());
      }
      // torch: ceil(n / world), or floor with drop_last
      EXPECT_EQ(per, drop_last ? n / world : (n + world - 1) / world) << world;
      std::sort(all.begin(), all.end());
      const size_t distinct = static_cast<size_t>(std::unique(all.begin(), all.end()) - all.begin());
      EXPECT_EQ(distinct, drop_last ? per * world : n) << world;  // padded repeats, or a disjoint cut
    }
  }
  data::DistributedSampler a(100, 2, 0), b(100, 2, 0);
  a.set_epoch(1);
  a.reset();
  b.set_epoch(1);
  b.reset();
  EXPECT_EQ(a.indices(), b.indices());
  b.set_epoch(2);
  b.reset();
  EXPECT_NE(a.indices(), b.indices());
  data::DistributedSampler seq(5, 2, 1, /*shuffle=*/false);
  EXPECT_EQ(seq.indices(), (std::vector<size_t>{1, 3, 0}));  // 0..4 padded with 0, every other from 1
  testing::expect_error([] { data::DistributedSampler(5, 2, 2); }, {"DistributedSampler", "rank 2"});
  // through the DataLoader: batches of this rank's share
  auto ds = std::make_shared<data::TensorDataset>(arange(10).to(kFloat).view({10, 1}), arange(10));
  auto sampler = std::make_shared<data::DistributedSampler>(10, 2, 1, false);
  data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(2).sampler(sampler));
  EXPECT_EQ(loader.size(), 3u);
  std::vector<int64_t> seen;
  for (auto& batch : loader)
    for (int64_t i = 0; i < batch.target.size(0); ++i) seen.push_back(batch.target[i].item<int64_t>());
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 3, 5, 7, 9}));
  testing::expect_error(
      [&] { data::DataLoader(ds, data::DataLoaderOptions().shuffle(true).sampler(sampler)); }, {"sampler", "shuffle"});
}

}  // namespace brisk
