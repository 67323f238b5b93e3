// brisk::save / brisk::load (safetensors): round trips, the exact bytes the
// reference writer produces, zero-copy mapping, atomic writes, and malformed
// files (truncated, bit-flipped, hand-made malicious headers).
#include <brisk/io.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "test_util.h"

namespace brisk {
namespace {

using testing::expect_error;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Overwrites in place and then cuts to size: unlike O_TRUNC, this does not
// make ext4 flush on close (auto_da_alloc), which slowed the fuzz loops 10x.
void write_bytes(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
  ::close(fd);
}

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

// A file from a header (used as given: no padding) and a data buffer.
std::string file_bytes(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

std::string pad8(std::string header) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

template <class T>
std::string raw(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

// The address ranges where this process maps `path`.
std::vector<std::pair<uintptr_t, uintptr_t>> mappings_of(const std::string& path) {
  std::string real = std::filesystem::canonical(path).string();
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    size_t slash = line.find('/');
    if (slash == std::string::npos || line.substr(slash) != real) continue;
    uintptr_t lo = 0, hi = 0;
    std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi);
    out.emplace_back(lo, hi);
  }
  return out;
}

bool in_mapping(const void* p, const std::vector<std::pair<uintptr_t, uintptr_t>>& ranges) {
  auto a = reinterpret_cast<uintptr_t>(p);
  for (auto [lo, hi] : ranges)
    if (a >= lo && a < hi) return true;
  return false;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

constexpr ScalarType kAllDtypes[] = {kBool, kUInt8, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/brisk_io_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Every load path must accept the file or throw brisk::Error; true if
  // it was accepted.
  bool load_survives(const std::string& p) {
    bool accepted = true;
    for (bool mmap : {true, false}) {
      try {
        StateDict sd = load(p, mmap);
        for (const auto& [name, t] : sd) {  // touch every byte: ASan sees any overrun
          const auto* b = static_cast<const unsigned char*>(t.data_ptr());
          unsigned sum = 0;
          for (size_t i = 0; i < t.nbytes(); ++i) sum += b[i];
          (void)sum;
          EXPECT_EQ(t.nbytes(), static_cast<size_t>(t.numel()) * t.element_size());
        }
      } catch (const Error&) {
        accepted = false;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "load threw a non-brisk exception: " << e.what();
      }
    }
    try {
      (void)load_metadata(p);
    } catch (const Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "load_metadata threw a non-brisk exception: " << e.what();
    }
    return accepted;
  }

  std::string dir_;
};

// A dict covering every dtype, a 0-dim tensor, empty tensors and non-contiguous views.
StateDict sample_dict() {
  manual_seed(7);
  StateDict sd;
  for (ScalarType dt : kAllDtypes) {
    std::string n(dtype_name(dt));
    Tensor base = is_floating_point(dt) ? randn({2, 3, 4}).to(dt) : randint(0, 100, {2, 3, 4}).to(dt);
    sd.insert(n + ".dense", base);
    sd.insert(n + ".scalar", base.select(0, 1).select(0, 2).select(0, 3));  // 0-dim, storage offset 23
    sd.insert(n + ".empty", empty({0, 3}, dt));
    sd.insert(n + ".transposed", base.transpose(0, 2));
    sd.insert(n + ".strided", base.slice(2, 1, 4, 2));
  }
  return sd;
}

TEST_F(Safetensors, RoundTripsEveryDtypeAndLayout) {
  StateDict sd = sample_dict();
  std::string p = path("all.safetensors");
  save(sd, p);
  for (bool mmap : {true, false}) {
    SCOPED_TRACE(mmap ? "mmap" : "copy");
    StateDict got = load(p, mmap);
    ASSERT_EQ(got.keys(), sd.keys());  // the saved order comes back
    for (const auto& [name, want] : sd) {
      SCOPED_TRACE(name);
      const Tensor& t = got.at(name);
      EXPECT_EQ(t.dtype(), want.dtype());
      EXPECT_EQ(t.sizes(), want.sizes());
      EXPECT_TRUE(t.is_contiguous());
      EXPECT_TRUE(t.is_cpu());
      EXPECT_TRUE(testing::close(t, want, 0, 0));  // bit-exact
    }
  }
}

TEST_F(Safetensors, SavesAutogradAndGradlessTensorsAlike) {
  Tensor w = randn({3, 2}).requires_grad_();
  Tensor y = (w * 2).sum();  // w has history around it; the data alone is saved
  std::string p = path("grad.safetensors");
  save(StateDict{{"w", w}}, p);
  StateDict got = load(p);
  EXPECT_FALSE(got.at("w").requires_grad());
  EXPECT_TRUE(testing::close(got.at("w"), w.detach(), 0, 0));
}

// Reference vectors from huggingface/safetensors' own tests (tensor.rs).
TEST_F(Safetensors, HeaderBytesMatchTheReferenceWriter) {
  std::string p = path("ref.safetensors");
  save(StateDict{}, p);
  EXPECT_EQ(read_bytes(p), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));

  save(StateDict{}, p, {{"framework", "pt"}});
  EXPECT_EQ(read_bytes(p), le64(40) + "{\"__metadata__\":{\"framework\":\"pt\"}}     ");

  Tensor attn = tensor<float>({0, 1, 2, 3, 4, 5}, kFloat).reshape({1, 1, 2, 3});
  save(StateDict{{"attn0", attn}}, p);
  std::string want_header = "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}       ";
  EXPECT_EQ(want_header.size(), 72u);
  EXPECT_EQ(read_bytes(p), le64(72) + want_header + raw<float>({0, 1, 2, 3, 4, 5}));
}

// Data in the reference's order (dtype descending, then name); header in the
// StateDict's order.
TEST_F(Safetensors, LayoutIsAlignedAndHeaderKeepsInsertionOrder) {
  StateDict sd;
  sd.insert("b", tensor<int32_t>({1, 2}, kInt32));
  sd.insert("a", tensor<double>({0.5}, kDouble));
  sd.insert("c", tensor<bool>({true, false, true}, kBool));
  sd.insert("a2", empty({0}, kDouble));
  sd.insert("h", tensor<float>({1.5f}, kHalf));
  std::string p = path("layout.safetensors");
  save(sd, p, {{"k", "v"}});
  std::string header = pad8(
      "{\"__metadata__\":{\"k\":\"v\"},"
      "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[8,16]},"
      "\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
      "\"c\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[18,21]},"
      "\"a2\":{\"dtype\":\"F64\",\"shape\":[0],\"data_offsets\":[8,8]},"
      "\"h\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[16,18]}}");
  std::string data = raw<double>({0.5}) + raw<int32_t>({1, 2}) + std::string("\x00\x3e", 2) + std::string("\1\0\1", 3);
  EXPECT_EQ(read_bytes(p), le64(header.size()) + header + data);
  EXPECT_EQ(load(p).keys(), (std::vector<std::string>{"b", "a", "c", "a2", "h"}));
}

// A file from a writer that neither pads nor aligns still loads (copying
// the misaligned tensor), as the Rust crate's doc example does.
TEST_F(Safetensors, LoadsUnpaddedMisalignedFiles) {
  std::string header = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}} ";  // 61 bytes
  std::string p = path("odd.safetensors");
  write_bytes(p, file_bytes(header, raw<int32_t>({1, -2, 3, 4})));
  for (bool mmap : {true, false}) {
    StateDict sd = load(p, mmap);
    EXPECT_TRUE(testing::close(sd.at("test"), tensor<int32_t>({1, -2, 3, 4}, kInt32).reshape({2, 2}), 0, 0));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(sd.at("test").data_ptr()) % 4, 0u);
  }
}

TEST_F(Safetensors, MmapLoadIsZeroCopyAndTheMappingOutlivesTheDict) {
  std::string p = path("mapped.safetensors");
  Tensor w = randn({64, 32}), v = arange(100);
  save(StateDict{{"w", w}, {"v", v}}, p);

  StateDict sd = load(p);
  auto ranges = mappings_of(p);
  ASSERT_FALSE(ranges.empty()) << "the file is not mapped";
  EXPECT_TRUE(in_mapping(sd.at("w").data_ptr(), ranges));
  EXPECT_TRUE(in_mapping(sd.at("v").data_ptr(), ranges));

  Tensor keep = sd.at("w");
  sd = StateDict();
  EXPECT_FALSE(mappings_of(p).empty()) << "the mapping died with the dict while a tensor views it";
  EXPECT_TRUE(testing::close(keep, w, 0, 0));
  keep.reset();
  EXPECT_TRUE(mappings_of(p).empty()) << "the mapping outlived its last tensor";

  StateDict copied = load(p, /*mmap=*/false);
  EXPECT_TRUE(mappings_of(p).empty());
  EXPECT_TRUE(testing::close(copied.at("w"), w, 0, 0));
}

TEST_F(Safetensors, WritingAMappedTensorLeavesTheFileAlone) {
  std::string p = path("cow.safetensors");
  Tensor w = arange(16, kFloat);
  save(StateDict{{"w", w}}, p);
  std::string before = read_bytes(p);
  StateDict sd = load(p);
  sd.at("w").fill_(42);  // copy-on-write pages: no crash, no change on disk
  EXPECT_TRUE(testing::close(sd.at("w"), full({16}, 42.0), 0, 0));
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_TRUE(testing::close(load(p).at("w"), w, 0, 0));
}

TEST_F(Safetensors, MetadataAndUnusualNamesRoundTrip) {
  Metadata meta{{"framework", "pt"},
                {"quote\"back\\slash/", "line\nbreak\ttab\x01\x1f end"},
                {"", ""},
                {"unicode", "\xc3\xa9 \xe2\x88\x91 \xf0\x9f\x98\x80"}};
  StateDict sd;
  sd.insert("layer.0/\"weird\"\\name\n\xc3\xa9", ones({2}));
  sd.insert("", zeros({1}));
  std::string p = path("meta.safetensors");
  save(sd, p, meta);
  EXPECT_EQ(load_metadata(p), meta);
  StateDict got = load(p);
  EXPECT_EQ(got.keys(), sd.keys());
  // serde_json's escaping: control bytes as \u00xx, '/' and UTF-8 as they are.
  EXPECT_NE(read_bytes(p).find("\"line\\nbreak\\ttab\\u0001\\u001f end\""), std::string::npos);

  // "__metadata__": null is what a writer without metadata may emit.
  std::string q = path("null_meta.safetensors");
  write_bytes(q, file_bytes("{\"__metadata__\":null,\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                            "\x07"));
  EXPECT_TRUE(load_metadata(q).empty());
  EXPECT_TRUE(testing::close(load(q).at("x"), tensor<uint8_t>({7}, kUInt8), 0, 0));
}

TEST_F(Safetensors, SaveRejectsBadInputAndLeavesTheOldFile) {
  std::string p = path("model.safetensors");
  save(StateDict{{"w", ones({3})}}, p);
  const std::string before = read_bytes(p);
  const auto files = list_dir(dir_);

  expect_error([&] { save(StateDict{{"w", ones({2})}, {"missing", Tensor()}}, p); },
               {"[save]", "tensor 'missing' is undefined", p});
  expect_error([&] { save(StateDict{{"__metadata__", ones({1})}}, p); }, {"[save]", "reserved"});
  expect_error([&] { save(StateDict{{"bad\xff", ones({1})}}, p); }, {"[save]", "not valid UTF-8"});
  expect_error([&] { save(StateDict{{"w", ones({1})}}, p, {{"k", "\xc0\x80"}}); }, {"[save]", "not valid UTF-8"});
  expect_error([&] { save(StateDict{{"w", ones({1})}}, dir_ + "/"); }, {"[save]", "names a directory"});
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_EQ(list_dir(dir_), files);
}

TEST_F(Safetensors, SaveIsAtomic) {
  std::string p = path("model.safetensors");
  save(StateDict{{"w", ones({3})}}, p);
  ::chmod(p.c_str(), 0640);
  const std::string before = read_bytes(p);
  const auto files = list_dir(dir_);

  // Fails after the whole temporary file is written: the rename cannot
  // replace a directory. The temporary file is removed.
  std::string as_dir = path("subdir");
  std::filesystem::create_directory(as_dir);
  expect_error([&] { save(StateDict{{"w", ones({3})}}, as_dir); }, {"[save]", "cannot replace", as_dir});
  EXPECT_TRUE(std::filesystem::is_directory(as_dir));
  EXPECT_EQ(list_dir(dir_).size(), files.size() + 1);  // just the directory we made
  std::filesystem::remove(as_dir);

  // Fails in the middle of writing the data: the file size limit stands in
  // for a full disk (write returns EFBIG).
  {
    struct rlimit old;
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 1 << 20;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    bool threw = false;
    try {
      save(StateDict{{"big", zeros({1 << 21})}}, p);  // 8 MiB
    } catch (const Error& e) {
      threw = true;
      std::string msg = e.what();
      EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
      EXPECT_NE(msg.find("writing '" + p + "'"), std::string::npos) << msg;
    }
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, old_handler);
    EXPECT_TRUE(threw);
  }
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_EQ(list_dir(dir_), files);

  // A directory that does not exist: nothing is created anywhere.
  expect_error([&] { save(StateDict{{"w", ones({3})}}, path("no/such/dir/x.safetensors")); },
               {"[save]", "cannot create a temporary file"});

  // A directory we may not write to (root ignores permissions: skip then).
  if (::geteuid() != 0) {
    std::string ro = path("readonly");
    std::filesystem::create_directory(ro);
    save(StateDict{{"w", ones({3})}}, ro + "/m.safetensors");
    std::string ro_before = read_bytes(ro + "/m.safetensors");
    ::chmod(ro.c_str(), 0500);
    expect_error([&] { save(StateDict{{"w", zeros({3})}}, ro + "/m.safetensors"); },
                 {"[save]", "cannot create a temporary file", "Permission denied"});
    ::chmod(ro.c_str(), 0700);
    EXPECT_EQ(read_bytes(ro + "/m.safetensors"), ro_before);
    std::filesystem::remove_all(ro);
  }

  // A successful save replaces the file and keeps its permissions.
  save(StateDict{{"w", full({3}, 2.0)}}, p);
  EXPECT_TRUE(testing::close(load(p).at("w"), full({3}, 2.0), 0, 0));
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(list_dir(dir_), files);
}

// One small tensor per dtype (a 0-dim and an empty one among them) plus metadata.
StateDict fuzz_dict() {
  StateDict sd;
  for (ScalarType dt : kAllDtypes) sd.insert(std::string(dtype_name(dt)), arange(3).to(dt));
  sd.insert("scalar", full({}, 1.5));
  sd.insert("empty", empty({2, 0}, kInt64));
  return sd;
}

TEST_F(Safetensors, EveryTruncationIsAnError) {
  std::string good = path("good.safetensors");
  save(fuzz_dict(), good, {{"framework", "brisk"}});
  const std::string bytes = read_bytes(good);
  std::string p = path("cut.safetensors");
  for (size_t len = 0; len < bytes.size(); ++len) {
    write_bytes(p, bytes.substr(0, len));
    for (bool mmap : {true, false}) {
      bool threw = false;
      try {
        load(p, mmap);
      } catch (const Error& e) {
        threw = std::string(e.what()).find(p) != std::string::npos;
      }
      ASSERT_TRUE(threw) << "length " << len << (mmap ? " (mmap)" : " (copy)");
    }
    bool threw = false;
    try {
      load_metadata(p);
    } catch (const Error&) {
      threw = true;
    }
    ASSERT_TRUE(threw) << "load_metadata, length " << len;
  }
}

TEST_F(Safetensors, FlippedHeaderBytesNeverCrash) {
  std::string good = path("good.safetensors");
  save(fuzz_dict(), good, {{"framework", "brisk"}});
  const std::string bytes = read_bytes(good);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  std::string p = path("flipped.safetensors");
  const unsigned char replacements[] = {0x00, '"', '\\', '{', '}', '[', ']', ',', ':', '0', '9', '-', ' ', 'e', 0xFF, 0xC3};
  int loaded = 0, rejected = 0;
  for (size_t pos = 0; pos < 8 + n; ++pos) {
    std::vector<unsigned char> variants = {static_cast<unsigned char>(bytes[pos] ^ 0x01),
                                           static_cast<unsigned char>(bytes[pos] ^ 0x80)};
    variants.insert(variants.end(), std::begin(replacements), std::end(replacements));
    for (unsigned char b : variants) {
      if (static_cast<char>(b) == bytes[pos]) continue;
      std::string mutated = bytes;
      mutated[pos] = static_cast<char>(b);
      write_bytes(p, mutated);
      ++(load_survives(p) ? loaded : rejected);
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(loaded, 0);  // e.g. a changed digit in a float's name still loads

  // Random multi-byte damage anywhere in the file, data included.
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 1500; ++iter) {
    std::string mutated = bytes;
    int k = 1 + static_cast<int>(rng() % 4);
    for (int j = 0; j < k; ++j) mutated[rng() % mutated.size()] = static_cast<char>(rng() & 0xFF);
    write_bytes(p, mutated);
    load_survives(p);
  }
}

struct BadFile {
  const char* what;
  std::string bytes;
  const char* message;
};

std::string tensor_json(const std::string& name, const std::string& dtype, const std::string& shape,
                        const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

TEST_F(Safetensors, MaliciousFilesGiveClearErrors) {
  const std::string f32x2 = tensor_json("a", "F32", "[2]", "[0,8]");
  const std::string eight(8, '\0');
  std::vector<BadFile> cases = {
      {"too short", std::string("\x02\0\0", 3), "fewer than the 8-byte header length"},
      {"huge header length", le64(~uint64_t{0}) + "{}", "exceeds the limit"},
      {"header length over the limit", le64(100'000'001) + "{}", "exceeds the limit"},
      {"header length past the end", le64(1000) + "{}", "exceeds the 2 bytes that follow it"},
      {"empty header", le64(0), "does not start with '{'"},
      {"array header", file_bytes("[]"), "does not start with '{'"},
      {"string header", file_bytes("\"abc\""), "does not start with '{'"},
      {"leading space", file_bytes(" {}"), "does not start with '{'"},
      {"unterminated object", file_bytes("{"), "unterminated object"},
      {"unterminated nested object", file_bytes("{" + f32x2, eight), "unterminated object"},
      {"unterminated string", file_bytes("{\"a"), "unterminated string"},
      {"unterminated array", file_bytes("{\"a\":{\"shape\":[1,2"), "unterminated array"},
      {"trailing garbage", file_bytes("{}x"), "unexpected data after the JSON value"},
      {"trailing comma", file_bytes("{\"__metadata__\":{},}"), "trailing comma"},
      {"missing colon", file_bytes("{\"a\" 1}"), "expected ':'"},
      {"bare word", file_bytes("{\"a\":nul}"), "expected an object"},
      {"invalid UTF-8", file_bytes("{\"\xff\":1}"), "invalid UTF-8"},
      {"overlong UTF-8", file_bytes("{\"\xc0\xaf\":1}"), "invalid UTF-8"},
      {"lone surrogate", file_bytes("{\"\\ud800\":1}"), "lone high surrogate"},
      {"bad escape", file_bytes("{\"\\x41\":1}"), "invalid escape"},
      {"control character", file_bytes("{\"a\nb\":1}"), "control character"},
      {"tensor is a number", file_bytes("{\"a\":5}"), "tensor 'a': expected an object, got a number"},
      {"huge shape number", file_bytes("{" + tensor_json("a", "F32", "[99999999999999999999]", "[0,8]") + "}", eight),
       "shape entry 99999999999999999999 is not a non-negative 64-bit integer"},
      {"negative shape", file_bytes("{" + tensor_json("a", "F32", "[-2]", "[0,8]") + "}", eight),
       "not a non-negative 64-bit integer"},
      {"fractional shape", file_bytes("{" + tensor_json("a", "F32", "[1.5]", "[0,8]") + "}", eight),
       "not a non-negative 64-bit integer"},
      {"exponent shape", file_bytes("{" + tensor_json("a", "F32", "[2e0]", "[0,8]") + "}", eight),
       "not a non-negative 64-bit integer"},
      {"leading zero", file_bytes("{" + tensor_json("a", "F32", "[02]", "[0,8]") + "}", eight), "invalid number"},
      {"shape product overflows",
       file_bytes("{" + tensor_json("a", "F32", "[4294967296,4294967296,4294967296]", "[0,8]") + "}", eight),
       "more than 2^63 elements"},
      {"zero hides an overflow",
       file_bytes("{" + tensor_json("a", "F32", "[0,4294967296,4294967296]", "[0,0]") + "}"),
       "more than 2^63 elements"},
      {"too many dimensions",
       file_bytes("{" + tensor_json("a", "U8", "[" + [] {
                    std::string s = "1";
                    for (int i = 0; i < 64; ++i) s += ",1";
                    return s;
                  }() + "]", "[0,1]") + "}", "\1"),
       "more than 64 dimensions"},
      {"shape of arrays", file_bytes("{\"a\":{\"shape\":" + std::string(100000, '[')), "shape entries must be numbers"},
      {"deep metadata", file_bytes("{\"__metadata__\":{\"k\":" + std::string(100000, '[')), "must be a string"},
      {"metadata not strings", file_bytes("{\"__metadata__\":{\"k\":1}}"), "metadata value of 'k' must be a string"},
      {"metadata an array", file_bytes("{\"__metadata__\":[]}"), "\"__metadata__\" must be an object"},
      {"duplicate metadata", file_bytes("{\"__metadata__\":{},\"__metadata__\":{}}"), "duplicate \"__metadata__\""},
      {"offsets past the buffer", file_bytes("{" + tensor_json("a", "F32", "[200]", "[0,800]") + "}", eight),
       "lie outside the data buffer of 8 bytes"},
      {"huge offsets", file_bytes("{" + tensor_json("a", "U8", "[1]", "[18446744073709551614,18446744073709551615]") + "}",
                                  eight),
       "lie outside the data buffer"},
      {"offset too large for u64", file_bytes("{" + tensor_json("a", "U8", "[1]", "[0,18446744073709551616]") + "}"),
       "data offset 18446744073709551616 is not a non-negative 64-bit integer"},
      {"reversed offsets", file_bytes("{" + tensor_json("a", "F32", "[2]", "[8,0]") + "}", eight),
       "end before they begin"},
      {"three offsets", file_bytes("{" + tensor_json("a", "F32", "[2]", "[0,8,8]") + "}", eight), "must have 2 entries"},
      {"one offset", file_bytes("{" + tensor_json("a", "F32", "[2]", "[0]") + "}", eight), "must have 2 entries"},
      {"size mismatch", file_bytes("{" + tensor_json("a", "F32", "[3]", "[0,8]") + "}", eight),
       "shape [3] of F32 needs 12 bytes but data_offsets [0, 8] span 8"},
      {"overlap",
       file_bytes("{" + f32x2 + "," + tensor_json("b", "F32", "[2]", "[4,12]") + "}", std::string(12, '\0')),
       "tensors 'a' and 'b' overlap"},
      {"gap",
       file_bytes("{" + tensor_json("a", "F32", "[1]", "[0,4]") + "," + tensor_json("b", "F32", "[1]", "[8,12]") + "}",
                  std::string(12, '\0')),
       "bytes [4, 8) of the data buffer belong to no tensor"},
      {"trailing data", file_bytes("{" + tensor_json("a", "F32", "[1]", "[0,4]") + "}", eight),
       "the data buffer has 8 bytes but the tensors cover 4"},
      {"unknown dtype", file_bytes("{" + tensor_json("a", "F128", "[2]", "[0,8]") + "}", eight),
       "unknown dtype \"F128\""},
      {"unsupported dtype", file_bytes("{" + tensor_json("a", "U16", "[4]", "[0,8]") + "}", eight),
       "dtype U16 is not supported by brisk"},
      {"dtype not a string", file_bytes("{\"a\":{\"dtype\":4}}"), "\"dtype\" must be a string"},
      {"duplicate tensor", file_bytes("{" + f32x2 + "," + f32x2 + "}", eight), "duplicate tensor name 'a'"},
      {"duplicate field",
       file_bytes("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"shape\":[2],\"data_offsets\":[0,8]}}", eight),
       "duplicate field \"shape\""},
      {"missing field", file_bytes("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", eight), "missing \"data_offsets\""},
      {"unknown field",
       file_bytes("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"offsets\":[0,8]}}", eight),
       "unknown field \"offsets\""},
      {"bool byte", file_bytes("{" + tensor_json("a", "BOOL", "[2]", "[0,2]") + "}", std::string("\1\2", 2)),
       "BOOL element 1 holds the byte 2"},
  };
  std::string p = path("bad.safetensors");
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.what);
    write_bytes(p, c.bytes);
    for (bool mmap : {true, false}) expect_error([&] { load(p, mmap); }, {"[load]", "'" + p + "'", c.message});
    if (std::string(c.message).find("BOOL") == std::string::npos)  // the header alone is fine there
      expect_error([&] { load_metadata(p); }, {"[load]", "'" + p + "'", c.message});
  }
}

TEST_F(Safetensors, NonFilesAreErrors) {
  expect_error([&] { load(path("absent.safetensors")); }, {"[load]", "cannot open", "absent.safetensors"});
  expect_error([&] { load(dir_); }, {"[load]", "is not a regular file"});
  std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error([&] { load(fifo); }, {"[load]", "is not a regular file"});  // and does not wait for a writer
}

TEST(StateDict, KeepsOrderAndUniqueNames) {
  StateDict sd{{"z", ones({1})}, {"a", zeros({2})}};
  sd.emplace_back("m", ones({3}));
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"z", "a", "m"}));
  EXPECT_TRUE(sd.contains("a"));
  EXPECT_EQ(sd.at("m").numel(), 3);
  EXPECT_EQ(sd.find("nope"), nullptr);
  expect_error([&] { sd.insert("a", ones({1})); }, {"[StateDict]", "'a' is already present"});
  expect_error([&] { (void)sd.at("nope"); }, {"[StateDict]", "no tensor named 'nope'"});
  sd.at("a") = full({2}, 5.0);
  EXPECT_TRUE(testing::close(sd.at("a"), full({2}, 5.0)));
  EXPECT_TRUE(sd.erase("z"));
  EXPECT_FALSE(sd.erase("z"));
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"a", "m"}));
  EXPECT_EQ(sd.at("m").numel(), 3);  // the index follows the erase
  EXPECT_EQ(sd[1].first, "m");
}

}  // namespace
}  // namespace brisk
