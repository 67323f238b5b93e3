// The data pipeline against libtorch's (torch::data): the MNIST dataset with
// Normalize<> and Stack<> batch by batch, the samplers' index sequences, and
// the loaders' batching with drop_last. Its own executable: libtorch's
// headers are heavy and the op parity TU need not rebuild for data changes.
#include <torch/torch.h>

#include <brisk/brisk.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::vector<float> floats(const brisk::Tensor& t) { return t.to(brisk::kFloat).contiguous().to_vector<float>(); }
std::vector<float> floats(const at::Tensor& t) {
  at::Tensor c = t.to(at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}
std::vector<int64_t> longs(const brisk::Tensor& t) { return t.to(brisk::kInt64).contiguous().to_vector<int64_t>(); }
std::vector<int64_t> longs(const at::Tensor& t) {
  at::Tensor c = t.to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
std::vector<int64_t> sizes(const brisk::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }
std::vector<int64_t> sizes(const at::Tensor& t) { return t.sizes().vec(); }

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

class DataParity : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("brisk_test_parity_data_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Both libraries' MNIST pipelines (Normalize<>(mean, stddev), Stack<>,
// SequentialSampler) over the files in `root`: every batch compared.
void compare_mnist(const std::string& root, bool train, size_t batch_size) {
  const double mean = 0.1307, stddev = 0.3081;
  auto b_set = brisk::data::datasets::MNIST(root, train ? brisk::data::datasets::MNIST::Mode::kTrain
                                                        : brisk::data::datasets::MNIST::Mode::kTest);
  auto t_set = torch::data::datasets::MNIST(root, train ? torch::data::datasets::MNIST::Mode::kTrain
                                                        : torch::data::datasets::MNIST::Mode::kTest);
  ASSERT_EQ(b_set.size().value(), t_set.size().value());
  ASSERT_EQ(sizes(b_set.images()), sizes(t_set.images()));
  EXPECT_EQ(max_abs_diff(floats(b_set.images()), floats(t_set.images())), 0.0) << "images() / 255";
  EXPECT_EQ(longs(b_set.targets()), longs(t_set.targets()));
  EXPECT_EQ(b_set.targets().dtype(), brisk::kInt64);
  EXPECT_EQ(t_set.targets().scalar_type(), at::kLong);

  auto b_loader = brisk::data::make_data_loader<brisk::data::samplers::SequentialSampler>(
      std::move(b_set).map(brisk::data::transforms::Normalize<>(mean, stddev)).map(brisk::data::transforms::Stack<>()),
      brisk::data::DataLoaderOptions().batch_size(batch_size).workers(2));
  auto t_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(t_set).map(torch::data::transforms::Normalize<>(mean, stddev)).map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(batch_size).workers(2));
  std::vector<std::vector<float>> b_data, t_data;
  std::vector<std::vector<int64_t>> b_target, t_target, b_shape, t_shape;
  for (auto& batch : *b_loader) {
    b_data.push_back(floats(batch.data));
    b_target.push_back(longs(batch.target));
    b_shape.push_back(sizes(batch.data));
  }
  for (auto& batch : *t_loader) {
    t_data.push_back(floats(batch.data));
    t_target.push_back(longs(batch.target));
    t_shape.push_back(sizes(batch.data));
  }
  ASSERT_EQ(b_shape, t_shape);
  EXPECT_EQ(b_target, t_target);
  double worst = 0;
  for (size_t k = 0; k < b_data.size(); ++k) worst = std::max(worst, max_abs_diff(b_data[k], t_data[k]));
  // The same float32 operations in the same order: (x / 255 - mean) / stddev.
  EXPECT_LE(worst, 1e-6) << "max |brisk - libtorch| over the normalized batches";
  std::printf("  max |brisk - libtorch| over %zu batches: %g\n", b_data.size(), worst);
}

TEST_F(DataParity, MnistPipelineOnRandomPixels) {
  // libtorch reads the uncompressed files only, and insists on MNIST's
  // counts (10,000 test images): random pixels, every value 0..255.
  const int64_t n = 10000;
  brisk::manual_seed(1);
  brisk::Tensor img = brisk::randint(0, 256, {n, 28, 28}).to(brisk::kUInt8);
  brisk::Tensor lab = brisk::randint(0, 10, {n}).to(brisk::kUInt8);
  brisk::data::write_idx((dir_ / "t10k-images-idx3-ubyte").string(), img);
  brisk::data::write_idx((dir_ / "t10k-labels-idx1-ubyte").string(), lab);
  compare_mnist(dir_.string(), false, 100);
}

TEST_F(DataParity, FashionMnistTestSet) {
  const std::string root = brisk::data::FashionMNIST::default_root();
  if (!fs::exists(root + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST not found in " << root << " (apt-get install dataset-fashion-mnist)";
  // Debian ships .gz files, which libtorch cannot read: unpacked here (with
  // brisk's reader and writer) for libtorch; brisk reads the .gz files.
  for (std::string name : {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    brisk::data::write_idx((dir_ / name).string(), brisk::data::read_idx(root + "/" + name + ".gz"));
  fs::create_symlink(root + "/t10k-images-idx3-ubyte.gz", dir_ / "t10k-images-idx3-ubyte.gz");
  compare_mnist(dir_.string(), false, 64);
}

// The same small dataset in both libraries: data = [i], target = i % 3.
struct BNumbers : brisk::data::datasets::Dataset<BNumbers> {
  explicit BNumbers(size_t n) : n(n) {}
  brisk::data::Example<> get(size_t i) override {
    return {brisk::full({1}, static_cast<double>(i)), brisk::scalar_tensor(static_cast<int64_t>(i % 3))};
  }
  std::optional<size_t> size() const override { return n; }
  size_t n;
};
struct TNumbers : torch::data::datasets::Dataset<TNumbers> {
  explicit TNumbers(size_t n) : n(n) {}
  torch::data::Example<> get(size_t i) override {
    return {torch::full({1}, static_cast<double>(i)), torch::scalar_tensor(static_cast<int64_t>(i % 3))};
  }
  c10::optional<size_t> size() const override { return n; }
  size_t n;
};

template <class Loader>
std::vector<std::vector<int64_t>> batches_of(Loader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) out.push_back(longs(batch.data.view({-1})));
  return out;
}

TEST(DataParityLoaders, SequentialBatchesAndDropLast) {
  for (size_t n : {0, 1, 7, 8, 10}) {
    for (size_t bs : {1, 3, 4}) {
      for (bool drop : {false, true}) {
        for (size_t workers : {0, 2}) {
          auto b = brisk::data::make_data_loader<brisk::data::samplers::SequentialSampler>(
              BNumbers(n).map(brisk::data::transforms::Stack<>()),
              brisk::data::DataLoaderOptions().batch_size(bs).drop_last(drop).workers(workers));
          auto t = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
              TNumbers(n).map(torch::data::transforms::Stack<>()),
              torch::data::DataLoaderOptions().batch_size(bs).drop_last(drop).workers(workers));
          EXPECT_EQ(batches_of(*b), batches_of(*t)) << "n " << n << " bs " << bs << " drop " << drop;
        }
      }
    }
  }
}

TEST(DataParityLoaders, RandomSamplerBatchShapes) {
  // The permutations differ (different generators); the batch sizes and the
  // multiset of indices per epoch agree.
  auto b = brisk::data::make_data_loader(BNumbers(23).map(brisk::data::transforms::Stack<>()), 5);
  auto t = torch::data::make_data_loader(TNumbers(23).map(torch::data::transforms::Stack<>()), 5);
  auto bb = batches_of(*b), tb = batches_of(*t);
  ASSERT_EQ(bb.size(), tb.size());
  std::vector<int64_t> bf, tf;
  for (size_t k = 0; k < bb.size(); ++k) {
    EXPECT_EQ(bb[k].size(), tb[k].size());
    bf.insert(bf.end(), bb[k].begin(), bb[k].end());
    tf.insert(tf.end(), tb[k].begin(), tb[k].end());
  }
  std::sort(bf.begin(), bf.end());
  std::sort(tf.begin(), tf.end());
  EXPECT_EQ(bf, tf);
}

template <class S>
std::vector<size_t> drain(S& s, size_t bs) {
  std::vector<size_t> out;
  while (auto r = s.next(bs)) out.insert(out.end(), r->begin(), r->end());
  return out;
}

TEST(DataParitySamplers, IndexSequences) {
  for (size_t n : {0, 1, 5, 10, 11, 97}) {
    for (size_t bs : {1, 4}) {
      brisk::data::samplers::SequentialSampler bs_(n);
      torch::data::samplers::SequentialSampler ts(n);
      EXPECT_EQ(drain(bs_, bs), drain(ts, bs));
      bs_.reset(n / 2);
      ts.reset(n / 2);
      EXPECT_EQ(drain(bs_, bs), drain(ts, bs)) << "reset(new_size)";
      brisk::data::samplers::StreamSampler bst(n);
      torch::data::samplers::StreamSampler tst(n);
      std::vector<size_t> bsz, tsz;
      while (auto r = bst.next(bs + 2)) bsz.push_back(r->size());
      while (auto r = tst.next(bs + 2)) tsz.push_back(r->size());
      EXPECT_EQ(bsz, tsz) << "StreamSampler n " << n;
      for (size_t replicas : {1, 2, 3, 4}) {
        for (bool dup : {true, false}) {
          for (size_t rank = 0; rank < replicas; ++rank) {
            const std::string what = "n " + std::to_string(n) + " replicas " + std::to_string(replicas) + " rank " +
                                     std::to_string(rank) + (dup ? " dup" : "");
            if (n == 0) continue;  // libtorch divides by the size
            brisk::data::samplers::DistributedSequentialSampler bd(n, replicas, rank, dup);
            torch::data::samplers::DistributedSequentialSampler td(n, replicas, rank, dup);
            bd.reset();
            td.reset();
            EXPECT_EQ(drain(bd, bs), drain(td, bs)) << "DistributedSequentialSampler " << what;
            brisk::data::samplers::DistributedRandomSampler br(n, replicas, rank, dup);
            torch::data::samplers::DistributedRandomSampler tr(n, replicas, rank, dup);
            br.set_epoch(3);
            tr.set_epoch(3);
            br.reset();
            tr.reset();
            EXPECT_EQ(drain(br, bs).size(), drain(tr, bs).size()) << "DistributedRandomSampler " << what;
          }
        }
      }
    }
  }
}

TEST(DataParityTransforms, NormalizePerChannel) {
  brisk::manual_seed(0);
  brisk::Tensor x = brisk::rand({3, 5, 6});
  std::vector<float> xs = floats(x);
  at::Tensor tx = torch::from_blob(xs.data(), {3, 5, 6}, at::kFloat).clone();
  std::vector<double> mean{0.485, 0.456, 0.406}, stddev{0.229, 0.224, 0.225};
  brisk::Tensor b = brisk::data::transforms::Normalize<>(mean, stddev)(x);
  at::Tensor t = torch::data::transforms::Normalize<>(mean, stddev)(tx);
  EXPECT_EQ(sizes(b), sizes(t));
  EXPECT_LE(max_abs_diff(floats(b), floats(t)), 1e-6);
  // A 2-d image with a scalar mean gains a channel dimension in both.
  brisk::Tensor b2 = brisk::data::transforms::Normalize<>(0.5, 0.25)(x[0]);
  at::Tensor t2 = torch::data::transforms::Normalize<>(0.5, 0.25)(tx[0]);
  EXPECT_EQ(sizes(b2), sizes(t2));
  EXPECT_LE(max_abs_diff(floats(b2), floats(t2)), 1e-6);
}

}  // namespace
