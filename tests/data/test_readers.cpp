// brisk::data readers: IDX (plain and gzip), .npy, and the MNIST /
// FashionMNIST datasets. Fixture files are written at run time into a
// temporary directory.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "brisk/data.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

class Readers : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("brisk_test_readers_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write_bytes(const std::string& name, const Bytes& b) const {
    std::ofstream f(path(name), std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return path(name);
  }
  std::string write_text(const std::string& name, const std::string& s) const {
    return write_bytes(name, Bytes(s.begin(), s.end()));
  }
  // A gzip file with one stored (uncompressed) deflate block, written by hand
  // (RFC 1951/1952) so that the test needs no zlib of its own.
  std::string write_gz(const std::string& name, const Bytes& b) const {
    EXPECT_LT(b.size(), 65536u);
    uint32_t crc = 0xFFFFFFFFu;
    for (unsigned char c : b) {
      crc ^= c;
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    crc ^= 0xFFFFFFFFu;
    auto le = [](Bytes& out, uint32_t v, int n) {
      for (int i = 0; i < n; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
    };
    Bytes gz{0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF, 0x01};  // header; final stored block
    le(gz, static_cast<uint32_t>(b.size()), 2);
    le(gz, static_cast<uint32_t>(~b.size()) & 0xFFFFu, 2);
    gz.insert(gz.end(), b.begin(), b.end());
    le(gz, crc, 4);
    le(gz, static_cast<uint32_t>(b.size()), 4);
    return write_bytes(name, gz);
  }
  Bytes read_bytes(const std::string& p) const {
    std::ifstream f(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), {});
  }

  fs::path dir_;
};

// ---- IDX --------------------------------------------------------------------------------

TEST_F(Readers, IdxHandWrittenBytes) {
  // uint8 [2, 3]
  Tensor u8 = data::read_idx(write_bytes("u8", {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 255}));
  EXPECT_EQ(u8.dtype(), kUInt8);
  EXPECT_EQ(u8.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(u8.to_vector<uint8_t>(), (std::vector<uint8_t>{1, 2, 3, 4, 5, 255}));
  // int32 [2], big-endian: 258 and -2
  Tensor i32 = data::read_idx(write_bytes("i32", {0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE}));
  EXPECT_EQ(i32.to_vector<int32_t>(), (std::vector<int32_t>{258, -2}));
  // float32 [1]: 1.5f = 0x3FC00000
  Tensor f32 = data::read_idx(write_bytes("f32", {0, 0, 0x0D, 1, 0, 0, 0, 1, 0x3F, 0xC0, 0, 0}));
  EXPECT_EQ(f32.to_vector<float>(), (std::vector<float>{1.5f}));
  // The same bytes gzip-compressed.
  Tensor gz = data::read_idx(write_gz("u8.gz", {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 255}));
  EXPECT_TRUE(equal(gz, u8));
  // int8 and int16 read as themselves
  Tensor i8 = data::read_idx(write_bytes("i8", {0, 0, 0x09, 1, 0, 0, 0, 2, 0x7F, 0x80}));
  EXPECT_EQ(i8.dtype(), kInt8);
  EXPECT_EQ(i8.to_vector<int8_t>(), (std::vector<int8_t>{127, -128}));
  Tensor i16 = data::read_idx(write_bytes("i16", {0, 0, 0x0B, 1, 0, 0, 0, 1, 0x80, 0x01}));
  EXPECT_EQ(i16.dtype(), kInt16);
  EXPECT_EQ(i16.to_vector<int16_t>(), (std::vector<int16_t>{-32767}));
  // and write back byte for byte
  for (const Tensor& t : {i8, i16}) {
    const std::string p = path(std::string("rt_") + std::string(dtype_name(t.dtype())));
    data::write_idx(p, t);
    EXPECT_TRUE(equal(data::read_idx(p), t)) << t.dtype();
  }
}

TEST_F(Readers, IdxRoundTripPlainAndGzip) {
  Tensor images = randint(0, 256, {5, 28, 28}).to(kUInt8);
  Tensor labels = tensor<int64_t>({3, 1, 4, 1, 5});
  for (bool gz : {false, true}) {
    std::string suffix = gz ? ".gz" : "";
    std::string ip = path("images" + suffix), lp = path("labels" + suffix);
    data::write_idx(ip, images, gz);
    data::write_idx(lp, labels.to(kUInt8), gz);
    Bytes raw = read_bytes(ip);
    ASSERT_GE(raw.size(), 4u);
    if (gz) {
      EXPECT_EQ(raw[0], 0x1F);  // gzip magic
      EXPECT_EQ(raw[1], 0x8B);
    } else {
      EXPECT_EQ(raw.size(), 4u + 3 * 4 + 5 * 28 * 28);
      EXPECT_EQ(Bytes(raw.begin(), raw.begin() + 8), (Bytes{0, 0, 0x08, 3, 0, 0, 0, 5}));
    }
    Tensor got = data::read_idx_images(ip);
    EXPECT_EQ(got.dtype(), kUInt8);
    EXPECT_EQ(got.sizes(), IntArrayRef({5, 28, 28}));
    EXPECT_TRUE(equal(got, images));
    Tensor got_labels = data::read_idx_labels(lp);
    EXPECT_EQ(got_labels.dtype(), kInt64);
    EXPECT_TRUE(equal(got_labels, labels));
  }
  for (ScalarType t : {kInt8, kInt16, kInt32, kFloat, kDouble}) {
    Tensor x = randn({3, 4}).mul(1000).to(t);
    data::write_idx(path("x.gz"), x, true);
    Tensor y = data::read_idx(path("x.gz"));
    EXPECT_EQ(y.dtype(), t);
    EXPECT_TRUE(equal(y, x)) << t;
  }
  testing::expect_error([&] { data::write_idx(path("bad"), zeros({2}, kInt64)); }, {"[write_idx]", "int64"});
}

TEST_F(Readers, IdxErrorsNameTheFile) {
  std::string bad = write_bytes("bad_magic", {0x12, 0x34, 0x08, 1, 0, 0, 0, 1, 7});
  testing::expect_error([&] { data::read_idx(bad); }, {"[read_idx]", bad, "bad magic", "0x12340801"});
  std::string bad_type = write_bytes("bad_type", {0, 0, 0x07, 1, 0, 0, 0, 1, 7});
  testing::expect_error([&] { data::read_idx(bad_type); }, {bad_type, "bad magic"});
  std::string zero_dims = write_bytes("zero_dims", {0, 0, 0x08, 0});
  testing::expect_error([&] { data::read_idx(zero_dims); }, {zero_dims, "bad magic"});
  std::string tiny = write_bytes("tiny", {0, 0});
  testing::expect_error([&] { data::read_idx(tiny); }, {tiny, "truncated"});
  std::string short_header = write_bytes("short_header", {0, 0, 0x08, 3, 0, 0, 0, 2, 0, 0});
  testing::expect_error([&] { data::read_idx(short_header); }, {short_header, "truncated header"});
  std::string short_data = write_bytes("short_data", {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4});
  testing::expect_error([&] { data::read_idx(short_data); }, {short_data, "truncated", "[2, 3]", "needs 6", "has 4"});
  std::string trailing = write_bytes("trailing", {0, 0, 0x08, 1, 0, 0, 0, 2, 1, 2, 3});
  testing::expect_error([&] { data::read_idx(trailing); }, {trailing, "trailing bytes"});
  // A header claiming 2^32-1 x 2^32-1 bytes must fail cleanly, not allocate.
  std::string huge = write_bytes("huge", {0, 0, 0x08, 2, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 1});
  testing::expect_error([&] { data::read_idx(huge); }, {huge, "too large"});
  std::string huge_ok = write_bytes("huge_ok", {0, 0, 0x08, 1, 0x7F, 0xFF, 0xFF, 0xFF, 1, 2});
  testing::expect_error([&] { data::read_idx(huge_ok); }, {huge_ok, "truncated"});
  testing::expect_error([&] { data::read_idx(path("missing")); }, {"[read_idx]", path("missing"), "cannot open"});

  // gzip: the same checks through the decompressor, and a cut gzip stream.
  std::string gz_short = write_gz("short.gz", {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4});
  testing::expect_error([&] { data::read_idx(gz_short); }, {gz_short, "truncated"});
  std::string gz_bad = write_gz("bad.gz", {1, 2, 3, 4, 5});
  testing::expect_error([&] { data::read_idx(gz_bad); }, {gz_bad, "bad magic"});
  Bytes whole = read_bytes([&] {
    data::write_idx(path("whole.gz"), randint(0, 256, {50, 28, 28}).to(kUInt8), true);
    return path("whole.gz");
  }());
  std::string cut = write_bytes("cut.gz", Bytes(whole.begin(), whole.begin() + whole.size() / 2));
  testing::expect_error([&] { data::read_idx(cut); }, {"[read_idx]", cut});

  // Right format, wrong kind of content.
  std::string labels = write_bytes("labels", {0, 0, 0x08, 1, 0, 0, 0, 2, 1, 2});
  testing::expect_error([&] { data::read_idx_images(labels); }, {"[read_idx_images]", labels, "[N, H, W]", "[2]"});
  std::string images = write_bytes("images", {0, 0, 0x08, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 9});
  testing::expect_error([&] { data::read_idx_labels(images); }, {"[read_idx_labels]", images, "[N]"});
}

// Writes an MNIST-style directory with n images of 28x28 (pixel = (i + r + c) % 256).
void write_mnist_dir(const std::string& root, const std::string& prefix, int64_t n_images, int64_t n_labels, bool gz) {
  Tensor img = arange(n_images * 28 * 28).remainder(256).to(kUInt8).view({n_images, 28, 28});
  Tensor lab = arange(n_labels).remainder(10).to(kUInt8);
  std::string ext = gz ? ".gz" : "";
  data::write_idx(root + "/" + prefix + "-images-idx3-ubyte" + ext, img, gz);
  data::write_idx(root + "/" + prefix + "-labels-idx1-ubyte" + ext, lab, gz);
}

TEST_F(Readers, MnistFromADirectory) {
  write_mnist_dir(dir_.string(), "train", 12, 12, true);
  write_mnist_dir(dir_.string(), "t10k", 3, 3, false);
  data::MNIST train(dir_.string(), true), test(dir_.string(), false);
  EXPECT_EQ(train.size(), 12u);
  EXPECT_EQ(test.size(), 3u);
  EXPECT_EQ(train.images().dtype(), kUInt8);
  EXPECT_EQ(train.images().sizes(), IntArrayRef({12, 28, 28}));
  data::Example<> e = train.get(11);
  EXPECT_EQ(e.data.sizes(), IntArrayRef({28, 28}));
  EXPECT_EQ(e.target.item<int64_t>(), 1);
  EXPECT_EQ(e.data.index({0, 0}).item<uint8_t>(), (11 * 784) % 256);
  testing::expect_error([&] { train.get(12); }, {"[MNIST]", "out of range"});

  data::DataLoader loader(train, data::DataLoaderOptions().batch_size(5).transform(data::Normalize(0.5, 0.5)));
  auto it = loader.begin();
  EXPECT_EQ(it->data.dtype(), kFloat);
  EXPECT_EQ(it->data.sizes(), IntArrayRef({5, 28, 28}));
  EXPECT_NEAR(it->data.index({0, 0, 1}).item<float>(), (1 / 255.0 - 0.5) / 0.5, 1e-6);

  fs::path other = dir_ / "mismatch";
  fs::create_directories(other);
  write_mnist_dir(other.string(), "train", 4, 5, false);
  testing::expect_error([&] { data::MNIST(other.string(), true); }, {"[MNIST]", "4 images", "5 labels"});
  testing::expect_error([&] { data::FashionMNIST((dir_ / "nowhere").string()); },
                        {"[MNIST]", "train-images-idx3-ubyte", "nor", ".gz"});
}

TEST(FashionMnist, DebianPackage) {
  std::string root = data::FashionMNIST::default_root();
  if (!fs::exists(root + "/train-images-idx3-ubyte.gz") && !fs::exists(root + "/train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST not found in " << root << " (apt-get install dataset-fashion-mnist)";
  data::FashionMNIST train(root, true);
  ASSERT_EQ(train.size(), 60000u);
  EXPECT_EQ(train.images().dtype(), kUInt8);
  EXPECT_EQ(train.images().sizes(), IntArrayRef({60000, 28, 28}));
  EXPECT_EQ(train.targets().dtype(), kInt64);
  EXPECT_EQ(min(train.targets()).item<int64_t>(), 0);
  EXPECT_EQ(max(train.targets()).item<int64_t>(), 9);
  // Fashion-MNIST's training set is balanced: 6,000 images per class.
  std::vector<int64_t> counts(10, 0);
  for (int64_t y : train.targets().to_vector<int64_t>()) counts.at(static_cast<size_t>(y))++;
  for (int c = 0; c < 10; ++c) EXPECT_EQ(counts[c], 6000) << "class " << c;
  // Pixel statistics match the published mean 0.2860 and std 0.3530.
  Tensor x = train.images().to(kDouble).div(255.0);
  double mean = x.mean().item<double>();
  double std = x.sub(mean).pow(2).mean().sqrt().item<double>();
  EXPECT_NEAR(mean, 0.2860, 1e-3);
  EXPECT_NEAR(std, 0.3530, 1e-3);

  data::FashionMNIST test(root, false);
  EXPECT_EQ(test.size(), 10000u);
  data::DataLoader loader(
      train, data::DataLoaderOptions().batch_size(64).shuffle(true).num_workers(2).transform(data::Normalize(0.2860, 0.3530)));
  EXPECT_EQ(loader.size(), 938u);
  auto it = loader.begin();
  EXPECT_EQ(it->data.dtype(), kFloat);
  EXPECT_EQ(it->data.sizes(), IntArrayRef({64, 28, 28}));
  EXPECT_EQ(it->target.sizes(), IntArrayRef({64}));
}

// ---- .npy -------------------------------------------------------------------------------

TEST_F(Readers, NpyRoundTripEveryDtype) {
  for (ScalarType t : {kHalf, kFloat, kDouble, kInt8, kInt16, kInt32, kInt64, kUInt8, kBool}) {
    for (auto shape : {std::vector<int64_t>{2, 3}, {5}, {}, {0, 4}, {2, 1, 3}}) {
      Tensor x = randn(shape).mul(50).to(t);
      std::string p = path("x.npy");
      data::save_npy(p, x);
      Tensor y = data::load_npy(p);
      EXPECT_EQ(y.dtype(), t);
      EXPECT_EQ(y.sizes(), x.sizes());
      EXPECT_TRUE(equal(y, x)) << t << " " << IntArrayRef(shape);
    }
  }
  // Non-contiguous input is written in C order.
  Tensor base = arange(6, kFloat).view({2, 3});
  data::save_npy(path("t.npy"), base.t());
  EXPECT_TRUE(equal(data::load_npy(path("t.npy")), base.t().contiguous()));
  testing::expect_error([&] { data::save_npy(path("b.npy"), zeros({2}, kBFloat16)); }, {"[save_npy]", "bfloat16"});
}

TEST_F(Readers, NpyHeaderIsWhatNumpyWrites) {
  data::save_npy(path("h.npy"), zeros({2, 3}, kFloat));
  Bytes b = read_bytes(path("h.npy"));
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(Bytes(b.begin(), b.begin() + 8), (Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0}));
  size_t header_len = b[8] | (b[9] << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u) << "data must start 64-byte aligned";
  std::string header(b.begin() + 10, b.begin() + 10 + static_cast<std::ptrdiff_t>(header_len));
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(b.size(), 10 + header_len + 6 * 4);

  data::save_npy(path("v.npy"), zeros({7}, kUInt8));
  b = read_bytes(path("v.npy"));
  EXPECT_NE(std::string(b.begin(), b.end()).find("{'descr': '|u1', 'fortran_order': False, 'shape': (7,), }"),
            std::string::npos);
  data::save_npy(path("s.npy"), scalar_tensor(int64_t{5}));
  b = read_bytes(path("s.npy"));
  EXPECT_NE(std::string(b.begin(), b.end()).find("'shape': ()"), std::string::npos);
}

// A .npy file from its parts (header padded to 64 bytes as numpy does).
Bytes npy_file(const std::string& dict, const Bytes& payload, int major = 1) {
  size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((6 + 2 + len_bytes + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  Bytes out{0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  for (size_t i = 0; i < len_bytes; ++i) out.push_back(static_cast<unsigned char>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Bytes float_bytes(std::initializer_list<float> v) {
  Bytes out(v.size() * 4);
  std::memcpy(out.data(), std::data(v), out.size());
  return out;
}

TEST_F(Readers, NpyVersion2AndFortranOrder) {
  // Version 2.0 header, double quotes, extra spaces, no trailing comma.
  auto v2 = write_bytes("v2.npy", npy_file("{\"descr\": \"<f4\", \"shape\": (2,2), \"fortran_order\": False}",
                                           float_bytes({1, 2, 3, 4}), 2));
  Tensor a = data::load_npy(v2);
  EXPECT_TRUE(equal(a, tensor({{1.f, 2.f}, {3.f, 4.f}})));
  // fortran_order: column-major bytes of [[1, 2, 3], [4, 5, 6]].
  auto f = write_bytes("f.npy", npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                                         float_bytes({1, 4, 2, 5, 3, 6})));
  Tensor b = data::load_npy(f);
  EXPECT_EQ(b.sizes(), IntArrayRef({2, 3}));
  EXPECT_TRUE(b.is_contiguous());
  EXPECT_TRUE(equal(b, tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}})));
  // Bools: any nonzero byte is True.
  auto bools = write_bytes("b.npy", npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {0, 1, 7}));
  EXPECT_EQ(data::load_npy(bools).to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
}

TEST_F(Readers, NpyMalformedFilesGiveClearErrors) {
  const Bytes four = float_bytes({1, 2, 3, 4});
  struct Case {
    std::string dict;
    std::string piece;
  };
  std::vector<Case> cases = {
      {"{'descr': '<f4', 'fortran_order': False, }", "missing key 'shape'"},
      {"{'fortran_order': False, 'shape': (4,), }", "missing key 'descr'"},
      {"{'descr': '<f4', 'shape': (4,), }", "missing key 'fortran_order'"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", "big-endian"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", "unsupported dtype '<c8'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", "expected a quoted string"},
      {"{'descr': '<f4', 'fortran_order': maybe, 'shape': (4,), }", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,, }", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'extra': 1}", "unknown key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", "duplicate key 'descr'"},
      {"{'descr: '<f4', 'fortran_order': False, 'shape': (4,), }", "malformed header"},
      {"'descr': '<f4', 'fortran_order': False, 'shape': (4,)", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,) } junk", "after the closing"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,)", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", "trailing bytes"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", "truncated"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", "overflows"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string p = write_bytes("case" + std::to_string(i) + ".npy", npy_file(cases[i].dict, four));
    SCOPED_TRACE(cases[i].dict);
    testing::expect_error([&] { data::load_npy(p); }, {"[load_npy]", p, cases[i].piece});
  }
  Bytes good = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four);
  Bytes bad_magic = good;
  bad_magic[1] = 'X';
  std::string p = write_bytes("magic.npy", bad_magic);
  testing::expect_error([&] { data::load_npy(p); }, {p, "bad magic"});
  Bytes bad_version = good;
  bad_version[6] = 4;
  p = write_bytes("version.npy", bad_version);
  testing::expect_error([&] { data::load_npy(p); }, {p, "version 4.0"});
  Bytes long_header = good;
  long_header[8] = 0xFF;  // header length now runs past the end of the file
  long_header[9] = 0x7F;
  p = write_bytes("long.npy", long_header);
  testing::expect_error([&] { data::load_npy(p); }, {p, "truncated header"});
  p = write_bytes("short.npy", Bytes(good.begin(), good.begin() + 5));
  testing::expect_error([&] { data::load_npy(p); }, {p, "bad magic"});
  testing::expect_error([&] { data::load_npy(path("missing.npy")); }, {"cannot open"});
}

TEST_F(Readers, NpySaveIsAtomicAndLeavesNoTempFiles) {
  std::string p = path("w.npy");
  data::save_npy(p, arange(3, kFloat));
  data::save_npy(p, arange(5, kInt64));  // replaces
  EXPECT_TRUE(equal(data::load_npy(p), arange(5, kInt64)));
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "w.npy");
  }
  EXPECT_EQ(files, 1u);
  testing::expect_error([&] { data::save_npy(path("no/such/dir/x.npy"), zeros({1})); },
                        {"[save_npy]", "temporary file"});
}

// numpy reads what brisk writes and brisk reads what numpy writes (Fortran
// order included). Skipped where python3-numpy is not installed.
TEST_F(Readers, NpyInteropWithNumpy) {
  std::string python;
  for (const char* py : {"python3", "/usr/bin/python3"})  // a venv's python3 may lack Debian's numpy
    if (std::system((std::string(py) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) {
      python = py;
      break;
    }
  if (python.empty()) GTEST_SKIP() << "python3-numpy not installed";
  data::save_npy(path("from_brisk.npy"), arange(12, kFloat).view({3, 4}).mul(0.5));
  std::string script = "import numpy as np; d='" + dir_.string() +
                       "'; a=np.load(d+'/from_brisk.npy'); "
                       "assert a.dtype==np.float32 and a.shape==(3,4) and a[2,3]==5.5, a; "
                       "np.save(d+'/c.npy', np.arange(24, dtype=np.int64).reshape(2,3,4)); "
                       "np.save(d+'/f.npy', np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2,3))); "
                       "np.save(d+'/h.npy', np.array([1.5, -2], dtype=np.float16)); "
                       "np.save(d+'/b.npy', np.array([True, False]))";
  ASSERT_EQ(std::system((python + " -c \"" + script + "\"").c_str()), 0);
  EXPECT_TRUE(equal(data::load_npy(path("c.npy")), arange(24).view({2, 3, 4})));
  EXPECT_TRUE(equal(data::load_npy(path("f.npy")), arange(6, kDouble).view({2, 3})));
  EXPECT_TRUE(equal(data::load_npy(path("h.npy")), tensor({1.5f, -2.f}).to(kHalf)));
  EXPECT_TRUE(equal(data::load_npy(path("b.npy")), tensor({true, false})));
}

}  // namespace
}  // namespace brisk
