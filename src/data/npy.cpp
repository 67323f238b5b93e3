// NumPy .npy files: load (format 1.0, 2.0, 3.0) and atomic save.
//
// Layout: "\x93NUMPY", major, minor, header length (uint16 LE for 1.x, uint32
// LE for 2.x/3.x), an ASCII Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with
// spaces and ended by '\n' so the data starts 64-byte aligned, then the data.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "brisk/data.h"
#include "brisk/error.h"
#include "brisk/ops.h"

namespace brisk::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct NpyType {
  const char* code;  // descr without the byte-order character
  ScalarType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"f2", kHalf}, {"f4", kFloat}, {"f8", kDouble}, {"i4", kInt32},
    {"i8", kInt64}, {"u1", kUInt8}, {"b1", kBool}, {"i1", kInt8}, {"i2", kInt16},
};

// A recursive-descent reader of the header dict. Only the subset np.save
// writes is accepted: string keys, string / bool / int-tuple values.
class HeaderParser {
 public:
  HeaderParser(std::string_view s, const std::string& path) : s_(s), path_(path) {}

  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;

  void parse() {
    skip_ws();
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        check_unset(descr.has_value(), key);
        descr = parse_string();
      } else if (key == "fortran_order") {
        check_unset(fortran_order.has_value(), key);
        fortran_order = parse_bool();
      } else if (key == "shape") {
        check_unset(shape.has_value(), key);
        shape = parse_shape();
      } else {
        fail("unknown key '", key, "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}' at offset ", pos_);
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the closing '}' at offset ", pos_);
    if (!descr) fail("missing key 'descr'");
    if (!fortran_order) fail("missing key 'fortran_order'");
    if (!shape) fail("missing key 'shape'");
  }

 private:
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    BRISK_FAIL("load_npy", path_, ": malformed header: ", args..., " in \"", std::string(s_.substr(0, 200)), "\"");
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail("expected '", c, "' at offset ", pos_);
    ++pos_;
  }
  void check_unset(bool set, const std::string& key) const {
    if (set) fail("duplicate key '", key, "'");
  }
  std::string parse_string() {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string at offset ", pos_);
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string at offset ", pos_);
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool parse_bool() {
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False at offset ", pos_);
  }
  std::vector<int64_t> parse_shape() {
    expect('(');
    std::vector<int64_t> dims;
    while (true) {
      skip_ws();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in 'shape' at offset ", pos_);
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek() - '0', &v))
          fail("dimension too large in 'shape'");
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 long literal
      dims.push_back(v);
      if (dims.size() > 64) fail("more than 64 dimensions in 'shape'");
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') fail("expected ',' or ')' in 'shape' at offset ", pos_);
    }
    ++pos_;
    return dims;
  }

  std::string_view s_;
  const std::string& path_;
  size_t pos_ = 0;
};

ScalarType npy_dtype(const std::string& descr, const std::string& path) {
  BRISK_CHECK(descr.size() == 3, "load_npy", path, ": unsupported dtype '", descr,
              "' (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 |b1)");
  char order = descr[0];
  std::string code = descr.substr(1);
  for (const auto& t : kNpyTypes) {
    if (code != t.code) continue;
    bool one_byte = code[1] == '1';
    BRISK_CHECK(order == '<' || order == '=' || order == '|' || (order == '>' && one_byte), "load_npy", path,
                ": dtype '", descr, "' is big-endian; only little-endian data is supported");
    return t.dtype;
  }
  BRISK_FAIL("load_npy", path, ": unsupported dtype '", descr, "' (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 |b1)");
}

const char* npy_descr(ScalarType t) {
  switch (t) {
    case kHalf: return "<f2";
    case kFloat: return "<f4";
    case kDouble: return "<f8";
    case kInt32: return "<i4";
    case kInt64: return "<i8";
    case kUInt8: return "|u1";
    case kInt8: return "|i1";
    case kInt16: return "<i2";
    case kBool: return "|b1";
    default: return nullptr;
  }
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

size_t read_fully(FILE* f, void* dst, size_t n) { return std::fread(dst, 1, n, f); }

}  // namespace

Tensor load_npy(const std::string& path) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  BRISK_CHECK(f != nullptr, "load_npy", path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  BRISK_CHECK(fstat(fileno(f.get()), &st) == 0, "load_npy", path, ": cannot stat: ", std::strerror(errno));
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);

  unsigned char pre[kMagicLen + 2];
  BRISK_CHECK(read_fully(f.get(), pre, sizeof pre) == sizeof pre && std::memcmp(pre, kMagic, kMagicLen) == 0,
              "load_npy", path, ": bad magic, not a .npy file (expected \\x93NUMPY)");
  const int major = pre[kMagicLen], minor = pre[kMagicLen + 1];
  BRISK_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, "load_npy", path, ": unsupported format version ",
              major, ".", minor, " (supported: 1.0, 2.0, 3.0)");
  const size_t len_bytes = major == 1 ? 2 : 4;
  unsigned char len_raw[4] = {0, 0, 0, 0};
  BRISK_CHECK(read_fully(f.get(), len_raw, len_bytes) == len_bytes, "load_npy", path,
              ": truncated before the header length");
  uint64_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) header_len |= uint64_t{len_raw[i]} << (8 * i);
  const uint64_t data_offset = kMagicLen + 2 + len_bytes + header_len;
  BRISK_CHECK(data_offset <= file_size, "load_npy", path, ": truncated header: header length ", header_len,
              " runs past the end of the ", file_size, "-byte file");
  std::string header(header_len, '\0');
  BRISK_CHECK(read_fully(f.get(), header.data(), header_len) == header_len, "load_npy", path,
              ": truncated header");

  HeaderParser parser(header, path);
  parser.parse();
  const ScalarType dtype = npy_dtype(*parser.descr, path);
  std::vector<int64_t> shape = *parser.shape;
  const bool fortran = *parser.fortran_order;

  uint64_t count = 1;
  int64_t span = 1;  // the product with zeros counted as 1: the tensor's strides must fit in int64 too
  for (int64_t d : shape)
    BRISK_CHECK(!__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count) &&
                    !__builtin_mul_overflow(span, std::max<int64_t>(d, 1), &span),
                "load_npy", path, ": shape ", IntArrayRef(shape), " overflows");
  uint64_t nbytes = 0;
  BRISK_CHECK(!__builtin_mul_overflow(count, element_size(dtype), &nbytes), "load_npy", path, ": shape ",
              IntArrayRef(shape), " overflows");
  const uint64_t have = file_size - data_offset;
  BRISK_CHECK(have >= nbytes, "load_npy", path, ": truncated: shape ", IntArrayRef(shape), " of ", *parser.descr,
              " needs ", nbytes, " bytes of data, the file has ", have);
  BRISK_CHECK(have == nbytes, "load_npy", path, ": ", have - nbytes, " trailing bytes after the data of shape ",
              IntArrayRef(shape), " (the header does not match the file)");

  // A Fortran-order array of shape (a, b, c) holds the bytes of a C-order
  // array of shape (c, b, a); read that, then reverse the axes.
  std::vector<int64_t> file_shape(shape.rbegin(), shape.rend());
  Tensor t = empty(fortran ? file_shape : shape, dtype);
  BRISK_CHECK(read_fully(f.get(), t.data_ptr(), nbytes) == nbytes, "load_npy", path, ": read error: ",
              std::strerror(errno));
  if (dtype == kBool) {  // any nonzero byte is True; brisk bools must be 0 or 1
    auto* b = static_cast<unsigned char*>(t.data_ptr());
    for (uint64_t i = 0; i < count; ++i) b[i] = b[i] != 0;
  }
  if (fortran && shape.size() > 1) {
    std::vector<int64_t> perm(shape.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
    t = t.permute(perm).contiguous();
  }
  return t;
}

namespace {
// Writes all of buf to fd, retrying on EINTR and short writes.
bool write_all(int fd, const void* buf, size_t n) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
}  // namespace

void save_npy(const std::string& path, const Tensor& t_in) {
  BRISK_CHECK(t_in.defined(), "save_npy", path, ": undefined tensor");
  const char* descr = npy_descr(t_in.dtype());
  BRISK_CHECK(descr != nullptr, "save_npy", path, ": .npy has no dtype for ", t_in.dtype());
  Tensor t = t_in.cpu().contiguous();

  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (int64_t i = 0; i < t.dim(); ++i) dict += std::to_string(t.size(i)) + (t.dim() == 1 || i + 1 < t.dim() ? ", " : "");
  if (t.dim() == 1) dict.pop_back();  // "(3,)"
  dict += "), }";
  // Pad with spaces so the data starts at a multiple of 64 bytes.
  auto padded = [&](size_t len_bytes) {
    size_t prefix = kMagicLen + 2 + len_bytes;
    size_t total = prefix + dict.size() + 1;
    return dict + std::string((64 - total % 64) % 64, ' ') + "\n";
  };
  std::string header = padded(2);
  int major = 1;
  if (header.size() > 0xFFFF) {
    header = padded(4);
    major = 2;
  }
  std::string pre(kMagic, kMagicLen);
  pre += static_cast<char>(major);
  pre += '\0';
  const size_t len_bytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < len_bytes; ++i) pre += static_cast<char>((header.size() >> (8 * i)) & 0xFF);

  // Atomic replace: temp file in the same directory, fsync, rename, fsync dir.
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp_name = ".";  // (not "." + s: GCC 12 warns falsely, -Wrestrict)
  tmp_name += target.filename().string();
  tmp_name += ".tmp.XXXXXX";
  std::string tmp = (dir / tmp_name).string();
  int fd = ::mkstemp(tmp.data());
  BRISK_CHECK(fd >= 0, "save_npy", path, ": cannot create a temporary file in ", dir.string(), ": ",
              std::strerror(errno));
  ::fchmod(fd, 0644);
  bool ok = write_all(fd, pre.data(), pre.size()) && write_all(fd, header.data(), header.size()) &&
            write_all(fd, t.data_ptr(), t.nbytes()) && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    BRISK_FAIL("save_npy", path, ": write failed: ", std::strerror(err));
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);  // make the rename durable; best effort
    ::close(dfd);
  }
}

}  // namespace brisk::data
