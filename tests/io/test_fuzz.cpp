// Fuzzing the readers of untrusted bytes: data::read_idx (plain and gzip),
// data::load_npy and brisk::load (safetensors). Thousands of damaged
// versions of valid files (every truncation, every bit of the headers
// flipped, random bytes, headers with hostile sizes, shapes whose products
// overflow, zero dims hiding huge ones, reversed, odd and out-of-range
// offsets), all from fixed seeds. Each must load or throw brisk::Error:
// never crash, hang or throw anything else. A loaded tensor's bytes are all
// read, so that ASan sees any overrun (CI runs this under ASan + UBSan).
//
// tests/io/test_safetensors.cpp already truncates and flips the bytes of a
// safetensors file; here safetensors gets grammar-aware headers instead:
// valid JSON with hostile values.
#include <brisk/data.h>
#include <brisk/io.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;
using Bytes = std::string;

/// What the loaders did with the mutants of one test.
struct Tally {
  int loaded = 0, rejected = 0;
  int total() const { return loaded + rejected; }
};

/// Reads every byte of t (ASan reports reads past the buffer) and checks
/// that the metadata is consistent.
void touch(const Tensor& t) {
  ASSERT_TRUE(t.defined());
  ASSERT_GE(t.numel(), 0);
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  unsigned sum = 0;
  for (size_t i = 0; i < c.nbytes(); ++i) sum += p[i];
  volatile unsigned sink = sum;  // keeps the reads
  (void)sink;
  if (t.dtype() == kBool) {  // brisk bools hold 0 or 1
    for (size_t i = 0; i < c.nbytes(); ++i) ASSERT_LE(p[i], 1) << "bool byte " << i;
  }
}

/// Runs `load` on the mutant: true if it loaded, false if it threw
/// brisk::Error; any other exception fails the test.
template <class F>
bool survives(F&& load, const std::string& what) {
  try {
    load();
    return true;
  } catch (const Error&) {
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw a non-brisk exception: " << e.what();
  } catch (...) {
    ADD_FAILURE() << what << ": threw something that is not a std::exception";
  }
  return false;
}

class Fuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    // tmpfs when there is one: thousands of small writes stay in memory.
    std::error_code ec;
    std::string base = fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0
                           ? "/dev/shm"
                           : fs::temp_directory_path().string();
    std::string tmpl = base + "/brisk_fuzz_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  static Bytes read_bytes(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
  }
  // Overwrites in place, then cuts to size (cheaper than O_TRUNC on ext4).
  static void write_bytes(const std::string& p, const Bytes& b) {
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << p;
    ASSERT_EQ(::pwrite(fd, b.data(), b.size(), 0), static_cast<ssize_t>(b.size()));
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(b.size())), 0);
    ::close(fd);
  }

  /// Writes the mutant and loads it with every loader of its format.
  bool idx_survives(const Bytes& b, const std::string& what) {
    const std::string p = path("m.idx");
    write_bytes(p, b);
    return survives([&] { touch(data::read_idx(p)); }, what);
  }
  bool npy_survives(const Bytes& b, const std::string& what) {
    const std::string p = path("m.npy");
    write_bytes(p, b);
    return survives([&] { touch(data::load_npy(p)); }, what);
  }
  bool safetensors_survives(const Bytes& b, const std::string& what) {
    const std::string p = path("m.safetensors");
    write_bytes(p, b);
    bool ok = false;
    for (bool mmap : {true, false})
      ok = survives(
          [&] {
            for (const auto& [name, t] : load(p, mmap)) touch(t);
          },
          what + (mmap ? " (mmap)" : " (read)"));
    survives([&] { (void)load_metadata(p); }, what + " (metadata)");
    return ok;
  }

  std::string dir_;
};

/// Applies `check` to: every truncation, every single-bit flip of the first
/// `header_bytes`, every byte of the header set to a few special values, and
/// `random_rounds` copies with 1 to 4 random bytes replaced anywhere.
template <class Check>
Tally mutate_all(const Bytes& good, size_t header_bytes, int random_rounds, uint64_t seed, Check check) {
  Tally t;
  for (size_t len = 0; len < good.size(); ++len) {
    const bool loaded = check(good.substr(0, len), "truncated to " + std::to_string(len));
    EXPECT_FALSE(loaded) << "a file truncated to " << len << " of " << good.size() << " bytes loaded";
    ++(loaded ? t.loaded : t.rejected);
  }
  header_bytes = std::min(header_bytes, good.size());
  for (size_t pos = 0; pos < header_bytes; ++pos) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes m = good;
      m[pos] = static_cast<char>(m[pos] ^ (1 << bit));
      ++(check(m, "bit " + std::to_string(bit) + " of byte " + std::to_string(pos)) ? t.loaded : t.rejected);
    }
    for (int v : {0x00, 0x7F, 0x80, 0xFF, int('9'), int('-'), int(' ')}) {
      if (static_cast<char>(v) == good[pos]) continue;
      Bytes m = good;
      m[pos] = static_cast<char>(v);
      ++(check(m, "byte " + std::to_string(pos) + " = " + std::to_string(v)) ? t.loaded : t.rejected);
    }
  }
  std::mt19937_64 rng(seed);
  for (int r = 0; r < random_rounds; ++r) {
    Bytes m = good;
    const int k = 1 + static_cast<int>(rng() % 4);
    for (int j = 0; j < k; ++j) m[rng() % m.size()] = static_cast<char>(rng() & 0xFF);
    if (rng() % 4 == 0) m.resize(rng() % (m.size() + 1));  // and sometimes cut
    ++(check(m, "random round " + std::to_string(r)) ? t.loaded : t.rejected);
  }
  return t;
}

// ---- IDX -------------------------------------------------------------------------------

std::string be32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[size_t(i)] = static_cast<char>(v >> (24 - 8 * i));
  return s;
}
/// An IDX header: magic 00 00 type ndim, then the dims.
Bytes idx_header(unsigned char type, const std::vector<uint32_t>& dims) {
  Bytes b{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) b += be32(d);
  return b;
}

TEST_F(Fuzz, IdxMutants) {
  // Valid files of every element type (int8 and int16 written by hand: write_idx does not produce them).
  std::vector<Bytes> files;
  for (ScalarType dt : {kUInt8, kInt32, kFloat, kDouble}) {
    data::write_idx(path("good.idx"), arange(24).view({2, 3, 4}).to(dt), false);
    files.push_back(read_bytes(path("good.idx")));
  }
  files.push_back(idx_header(0x09, {5}) + Bytes("\x01\xff\x7f\x80\x00", 5));
  files.push_back(idx_header(0x0B, {2, 1}) + Bytes("\x80\x00\x7f\xff", 4));
  Tally t;
  for (size_t f = 0; f < files.size(); ++f) {
    SCOPED_TRACE("file " + std::to_string(f));
    ASSERT_TRUE(idx_survives(files[f], "the valid file"));
    const size_t header = 4 + 4 * static_cast<size_t>(static_cast<unsigned char>(files[f][3]));
    Tally ft = mutate_all(files[f], header, 200, 100 + f, [&](const Bytes& b, const std::string& what) {
      return idx_survives(b, what);
    });
    t.loaded += ft.loaded;
    t.rejected += ft.rejected;
  }
  EXPECT_GT(t.loaded, 0);  // e.g. damaged data bytes
  EXPECT_GT(t.rejected, 0);
  EXPECT_GT(t.total(), 2000);
}

TEST_F(Fuzz, IdxHostileHeaders) {
  // Dims from the edges of uint32, in every combination up to 3 dims, with
  // and without data after them: overflowing products, zeros next to huge
  // dims (a shape with no elements but strides past 2^63), sizes that claim
  // far more than the file holds. Plus every type byte and every ndim byte.
  const uint32_t edge[] = {0, 1, 3, 65536, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF};
  const Bytes payload(64, '\x01');
  Tally t;
  for (int nd = 1; nd <= 3; ++nd) {
    std::vector<size_t> idx(size_t(nd), 0);
    while (true) {
      std::vector<uint32_t> dims;
      for (size_t i : idx) dims.push_back(edge[i]);
      for (unsigned char type : {0x08, 0x0E})
        for (size_t n : {size_t{0}, payload.size()}) {
          const bool loaded = idx_survives(idx_header(type, dims) + payload.substr(0, n), "dims");
          ++(loaded ? t.loaded : t.rejected);
        }
      size_t d = 0;
      while (d < idx.size() && ++idx[d] == std::size(edge)) idx[d++] = 0;
      if (d == idx.size()) break;
    }
  }
  for (int type = 0; type < 256; ++type)
    ++(idx_survives(idx_header(static_cast<unsigned char>(type), {4}) + payload.substr(0, 32), "type byte") ? t.loaded
                                                                                                        : t.rejected);
  for (int nd = 0; nd < 256; ++nd) {
    Bytes b{'\0', '\0', '\x08', static_cast<char>(nd)};
    b += payload;  // dims read from the payload: 0x01010101 each
    ++(idx_survives(b, "ndim byte") ? t.loaded : t.rejected);
  }
  EXPECT_GT(t.loaded, 0);  // e.g. dims [0] with no data, [8] with 8 bytes
  EXPECT_GT(t.rejected, 0);
}

TEST_F(Fuzz, IdxGzipMutants) {
  data::write_idx(path("good.idx.gz"), arange(60).view({3, 4, 5}).to(kUInt8), /*gzip=*/true);
  const Bytes good = read_bytes(path("good.idx.gz"));
  ASSERT_TRUE(idx_survives(good, "the valid file"));
  std::mt19937_64 rng(7);
  Tally t;
  for (size_t len = 0; len < good.size(); ++len)
    ++(idx_survives(good.substr(0, len), "gz truncated") ? t.loaded : t.rejected);
  for (size_t pos = 0; pos < good.size(); ++pos)
    for (int bit = 0; bit < 8; ++bit) {
      Bytes m = good;
      m[pos] = static_cast<char>(m[pos] ^ (1 << bit));
      ++(idx_survives(m, "gz bit flip") ? t.loaded : t.rejected);
    }
  for (int r = 0; r < 300; ++r) {
    Bytes m = good;
    for (int j = 0; j < 3; ++j) m[rng() % m.size()] = static_cast<char>(rng() & 0xFF);
    ++(idx_survives(m, "gz random bytes") ? t.loaded : t.rejected);
  }
  EXPECT_GT(t.rejected, 0);
  EXPECT_GT(t.total(), 1000);
}

// ---- .npy ----------------------------------------------------------------------------

/// A .npy file from a header dict and data bytes (the header padded as numpy does).
Bytes npy_file(const std::string& dict, const Bytes& data, int major = 1, int minor = 0) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((6 + 2 + len_bytes + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  Bytes out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

TEST_F(Fuzz, NpyMutants) {
  std::vector<Bytes> files;
  for (ScalarType dt : {kUInt8, kBool, kInt32, kInt64, kHalf, kFloat, kDouble}) {
    data::save_npy(path("good.npy"), arange(6).view({2, 3}).to(dt));
    files.push_back(read_bytes(path("good.npy")));
  }
  files.push_back(npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", Bytes(16, '\x3f'), 2));
  files.push_back(npy_file("{\"descr\": \"|u1\", \"shape\": (), \"fortran_order\": False}", "\x05", 3));
  Tally t;
  for (size_t f = 0; f < files.size(); ++f) {
    SCOPED_TRACE("file " + std::to_string(f));
    ASSERT_TRUE(npy_survives(files[f], "the valid file"));
    // the header: magic, version, length and the padded dict (64 or 128 bytes)
    Tally ft = mutate_all(files[f], 128, 200, 200 + f,
                          [&](const Bytes& b, const std::string& what) { return npy_survives(b, what); });
    t.loaded += ft.loaded;
    t.rejected += ft.rejected;
  }
  EXPECT_GT(t.loaded, 0);  // e.g. spaces, digits of the padding or the data
  EXPECT_GT(t.rejected, 0);
  EXPECT_GT(t.total(), 5000);
}

TEST_F(Fuzz, NpyHostileHeaders) {
  const std::vector<std::string> shapes = {
      "()", "(0,)", "(3,)", "(1, 3)", "(3, 1, 1, 1)", "(-1,)", "(3, -2)", "(1.5,)", "(2e3,)", "(0x10,)",
      "(9223372036854775807,)", "(9223372036854775808,)", "(99999999999999999999999,)",
      "(4294967296, 4294967296)", "(3037000500, 3037000500)", "(0, 9223372036854775807, 9223372036854775807)",
      "(0, 4294967296, 4294967296, 4294967296)", "(4611686018427387904, 0, 4)", "(2, 0)", "(3L,)",
      "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
      "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)",
      "(3", "3,", "(,)", "((3,),)", "[3]", "(3,,)", "( 3 , )", "(\t3\n,)"};
  const std::vector<std::string> descrs = {"<f4", "|u1", "|b1", "<i8", ">i8", ">u1", "<f2", "<c8", "f4", "<f4x", "",
                                           "<U4", "O", "|V8", "=f8"};
  const std::vector<std::string> orders = {"False", "True", "0", "None", "'False'"};
  const Bytes data(24, '\x01');
  Tally t;
  std::mt19937_64 rng(11);
  for (const std::string& shape : shapes)
    for (const std::string& descr : descrs)
      for (size_t n : {size_t{0}, size_t{3}, data.size()}) {
        const std::string& order = orders[rng() % orders.size()];
        const std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
        ++(npy_survives(npy_file(dict, data.substr(0, n), 1 + int(rng() % 3)), dict) ? t.loaded : t.rejected);
      }
  // broken dicts: keys, quotes, nesting, duplicates, trailing text
  for (const std::string& dict :
       {"", "{", "}", "{}", "{'descr': '<f4'", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "{'descr: '<f4'}", "{descr: 1}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing", "{'shape': (((((((((((((((((1,)}",
        "{'descr': '<f4' 'fortran_order': False 'shape': (1,)}", "\x00\x01\x02"})
    ++(npy_survives(npy_file(dict, data.substr(0, 4)), dict) ? t.loaded : t.rejected);
  // the header length field: every value near the file size, and random ones
  const Bytes good = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data.substr(0, 8));
  for (int major : {1, 2, 3})
    for (int delta = -80; delta <= 80; ++delta) {
      Bytes m = major == 1 ? good : npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                             data.substr(0, 8), major);
      const size_t len_bytes = major == 1 ? 2 : 4;
      uint64_t len = 0;
      for (size_t i = 0; i < len_bytes; ++i) len |= uint64_t(static_cast<unsigned char>(m[8 + i])) << (8 * i);
      len = static_cast<uint64_t>(static_cast<int64_t>(len) + delta);
      for (size_t i = 0; i < len_bytes; ++i) m[8 + i] = static_cast<char>((len >> (8 * i)) & 0xFF);
      ++(npy_survives(m, "header length") ? t.loaded : t.rejected);
    }
  for (int r = 0; r < 300; ++r) {
    Bytes m = good;
    for (size_t i = 0; i < 4; ++i) m[8 + i] = static_cast<char>(rng() & 0xFF);
    m[6] = static_cast<char>(rng() % 4);
    ++(npy_survives(m, "random version and length") ? t.loaded : t.rejected);
  }
  EXPECT_GT(t.loaded, 0);
  EXPECT_GT(t.rejected, 0);
}

// ---- safetensors -------------------------------------------------------------------------

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

/// A random number literal for a shape entry or an offset: mostly plausible,
/// often hostile (huge, 2^63 +- 1, 2^64 +- 1, negative, fractional, exponent).
std::string number(std::mt19937_64& rng, uint64_t plausible) {
  switch (rng() % 12) {
    case 0: return "0";
    case 1: return "9223372036854775807";
    case 2: return "9223372036854775808";
    case 3: return "18446744073709551615";
    case 4: return "18446744073709551616";
    case 5: return "-" + std::to_string(rng() % 8);
    case 6: return std::to_string(rng() % 4) + ".5";
    case 7: return "1e" + std::to_string(rng() % 20);
    case 8: return std::to_string(uint64_t{1} << (rng() % 64));
    case 9: return std::to_string(plausible + 1);
    default: return std::to_string(plausible);
  }
}

TEST_F(Fuzz, SafetensorsHostileHeaders) {
  // Headers of one to three tensors whose dtypes, shapes and offsets are
  // drawn from plausible and hostile values, over buffers of random size.
  const char* dtypes[] = {"F32", "F64", "F16", "BF16", "I64", "I32", "U8", "BOOL", "I8", "U64", "F8_E4M3", "X"};
  std::mt19937_64 rng(2024);
  Tally t;
  for (int round = 0; round < 2500; ++round) {
    const int n = 1 + static_cast<int>(rng() % 3);
    std::string header = "{";
    uint64_t offset = 0;
    if (rng() % 4 == 0) header += "\"__metadata__\":{\"k\":\"v\"},";
    for (int i = 0; i < n; ++i) {
      const char* dt = dtypes[rng() % std::size(dtypes)];
      const int rank = static_cast<int>(rng() % 4);
      std::string shape = "[";
      uint64_t elems = 1;
      for (int d = 0; d < rank; ++d) {
        const uint64_t plausible = rng() % 4;
        elems *= plausible;
        shape += (d ? "," : "") + (rng() % 3 == 0 ? number(rng, plausible) : std::to_string(plausible));
      }
      shape += "]";
      const uint64_t size = elems * (std::string(dt) == "F64" || std::string(dt) == "I64" ? 8 : 4);
      // offsets: usually tiling, sometimes odd (misaligned), reversed, overlapping or hostile
      uint64_t begin = offset, end = offset + size;
      switch (rng() % 6) {
        case 0: begin += 1, end += 1; break;           // odd: misaligned
        case 1: std::swap(begin, end); break;          // reversed
        case 2: begin = begin >= 2 ? begin - 2 : 0; break;  // overlap
        default: break;
      }
      const std::string b = rng() % 5 == 0 ? number(rng, begin) : std::to_string(begin);
      const std::string e = rng() % 5 == 0 ? number(rng, end) : std::to_string(end);
      offset = end;
      header += (i ? "," : "") + std::string("\"t") + std::to_string(i) + "\":{\"dtype\":\"" + dt + "\",\"shape\":" +
                shape + ",\"data_offsets\":[" + b + "," + e + "]}";
    }
    header += "}";
    const uint64_t buffer = rng() % 3 == 0 ? rng() % (offset + 8) : offset;
    Bytes file = le64(header.size()) + header + Bytes(buffer, '\x01');
    if (rng() % 10 == 0) file.replace(0, 8, le64(rng() % (file.size() + 16)));  // a wrong header length
    ++(safetensors_survives(file, header) ? t.loaded : t.rejected);
  }
  EXPECT_GT(t.loaded, 50);
  EXPECT_GT(t.rejected, 50);
}

TEST_F(Fuzz, SafetensorsRandomHeaderBytes) {
  // Random bytes, and random printable JSON-ish characters, as the header.
  std::mt19937_64 rng(99);
  const std::string alphabet = "{}[]\":,0123456789-+.eE \\uFdtypshaofF32U8_";
  Tally t;
  for (int round = 0; round < 1500; ++round) {
    const size_t len = rng() % 64;
    std::string header;
    const bool printable = rng() % 2;
    for (size_t i = 0; i < len; ++i)
      header += printable ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng() & 0xFF);
    if (printable && rng() % 2) header = "{" + header + "}";
    ++(safetensors_survives(le64(header.size()) + header + Bytes(rng() % 16, '\0'), "random header") ? t.loaded
                                                                                                     : t.rejected);
  }
  EXPECT_GT(t.rejected, 0);
}

}  // namespace
}  // namespace brisk
