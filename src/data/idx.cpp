// The IDX format of MNIST and Fashion-MNIST, plain or gzip-compressed, and
// the MNIST / FashionMNIST datasets on top of it.
//
// Layout (all integers big-endian): magic = 0x00 0x00 <type> <ndim>, then ndim
// uint32 sizes, then the elements in C order.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <tuple>

#include "brisk/data.h"
#include "brisk/error.h"
#include "brisk/ops.h"

namespace brisk::data {
namespace {

struct IdxType {
  uint8_t code;
  size_t file_bytes;  // element size in the file
  ScalarType dtype;   // element type in memory
};

constexpr IdxType kIdxTypes[] = {
    {0x08, 1, kUInt8}, {0x09, 1, kInt8}, {0x0B, 2, kInt16},
    {0x0C, 4, kInt32}, {0x0D, 4, kFloat}, {0x0E, 8, kDouble},
};

const IdxType* find_idx_type(uint8_t code) {
  for (const auto& t : kIdxTypes)
    if (t.code == code) return &t;
  return nullptr;
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

std::string gz_message(gzFile f) {
  int code = 0;
  const char* msg = gzerror(f, &code);
  return code == Z_OK || msg == nullptr ? std::string("unexpected end of file") : std::string(msg);
}

// Reads up to n bytes; returns how many were read (short only at end of file).
size_t gz_read_some(gzFile f, const std::string& path, void* dst, size_t n) {
  size_t total = 0;
  auto* out = static_cast<char*>(dst);
  while (total < n) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - total, 1u << 30));
    int got = gzread(f, out + total, chunk);
    if (got < 0) BRISK_FAIL("read_idx", path, ": read error: ", gz_message(f));
    if (got == 0) break;
    total += static_cast<size_t>(got);
  }
  return total;
}

uint32_t load_be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string hex32(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(8) << std::setfill('0') << v;
  return os.str();
}

}  // namespace

Tensor read_idx(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));
  BRISK_CHECK(f != nullptr, "read_idx", path, ": cannot open: ", std::strerror(errno));
  gzbuffer(f.get(), 1u << 20);

  unsigned char magic[4];
  size_t got = gz_read_some(f.get(), path, magic, 4);
  BRISK_CHECK(got == 4, "read_idx", path, ": truncated: ", got, " bytes, shorter than the 4-byte IDX magic");
  uint32_t magic_value = load_be32(magic);
  const IdxType* type = find_idx_type(magic[2]);
  BRISK_CHECK(magic[0] == 0 && magic[1] == 0 && type != nullptr && magic[3] >= 1, "read_idx", path,
              ": bad magic ", hex32(magic_value),
              ", not an IDX file (expected 0x0000TTDD with type TT in {08,09,0B,0C,0D,0E} and DD >= 1 dimensions)");

  const int ndim = magic[3];
  std::vector<unsigned char> dims_raw(4 * static_cast<size_t>(ndim));
  got = gz_read_some(f.get(), path, dims_raw.data(), dims_raw.size());
  BRISK_CHECK(got == dims_raw.size(), "read_idx", path, ": truncated header: ", ndim, " dimensions need ",
              dims_raw.size(), " bytes, found ", got);
  std::vector<int64_t> sizes(ndim);
  uint64_t count = 1;
  int64_t span = 1;  // the product with zeros counted as 1: the tensor's strides must fit in int64 too
  bool span_overflows = false;
  for (int d = 0; d < ndim; ++d) {
    sizes[d] = load_be32(&dims_raw[4 * d]);
    BRISK_CHECK(!__builtin_mul_overflow(count, static_cast<uint64_t>(sizes[d]), &count), "read_idx", path,
                ": dimensions ", IntArrayRef(sizes.data(), d + 1), "... overflow");
    span_overflows |= __builtin_mul_overflow(span, std::max<int64_t>(sizes[d], 1), &span);
  }
  uint64_t nbytes = 0;
  BRISK_CHECK(!__builtin_mul_overflow(count, type->file_bytes, &nbytes) && nbytes < (uint64_t{1} << 46) &&
                  !span_overflows,
              "read_idx", path, ": dimensions ", IntArrayRef(sizes), " are too large");

  // Read in chunks that grow with what has been read (64 KiB, then doubling
  // up to 16 MiB), so that a header claiming a huge size cannot make us
  // allocate, or zero, much more than the file actually holds.
  std::vector<unsigned char> raw;
  constexpr size_t kMinChunk = size_t{1} << 16, kChunk = size_t{1} << 24;
  while (raw.size() < nbytes) {
    const size_t step = std::min(kChunk, std::max(kMinChunk, raw.size()));
    size_t want = static_cast<size_t>(std::min<uint64_t>(step, nbytes - raw.size()));
    size_t old = raw.size();
    raw.resize(old + want);
    size_t n = gz_read_some(f.get(), path, raw.data() + old, want);
    raw.resize(old + n);
    if (n < want) break;
  }
  BRISK_CHECK(raw.size() == nbytes, "read_idx", path, ": truncated: shape ", IntArrayRef(sizes), " needs ", nbytes,
              " bytes of data, the file has ", raw.size());
  unsigned char extra;
  BRISK_CHECK(gz_read_some(f.get(), path, &extra, 1) == 0, "read_idx", path,
              ": trailing bytes after the data of shape ", IntArrayRef(sizes),
              " (the header's dimensions do not match the file)");

  Tensor out = empty(sizes, type->dtype);
  const unsigned char* p = raw.data();
  switch (type->code) {
    case 0x08:
    case 0x09:
      if (nbytes > 0) std::memcpy(out.data_ptr(), p, nbytes);  // an empty vector's data() may be null
      break;
    case 0x0B: {
      auto* o = out.data_ptr<int16_t>();
      for (uint64_t i = 0; i < count; ++i) o[i] = static_cast<int16_t>((p[2 * i] << 8) | p[2 * i + 1]);
      break;
    }
    case 0x0C:
    case 0x0D: {  // 4-byte big-endian int32 / float32: byte-swap into place
      auto* o = static_cast<uint32_t*>(out.data_ptr());
      for (uint64_t i = 0; i < count; ++i) o[i] = load_be32(p + 4 * i);
      break;
    }
    case 0x0E: {
      auto* o = static_cast<uint64_t*>(out.data_ptr());
      for (uint64_t i = 0; i < count; ++i)
        o[i] = (uint64_t{load_be32(p + 8 * i)} << 32) | load_be32(p + 8 * i + 4);
      break;
    }
  }
  return out;
}

Tensor read_idx_images(const std::string& path) {
  Tensor t = read_idx(path);
  BRISK_CHECK(t.dtype() == kUInt8 && t.dim() == 3, "read_idx_images", path, ": expected uint8 images [N, H, W], got ",
              t.dtype(), " ", t.sizes());
  return t;
}

Tensor read_idx_labels(const std::string& path) {
  Tensor t = read_idx(path);
  BRISK_CHECK(t.dtype() == kUInt8 && t.dim() == 1, "read_idx_labels", path, ": expected uint8 labels [N], got ",
              t.dtype(), " ", t.sizes());
  return t.to(kInt64);
}

void write_idx(const std::string& path, const Tensor& t_in, bool gzip) {
  BRISK_CHECK(t_in.defined() && t_in.is_cpu(), "write_idx", path, ": need a defined CPU tensor");
  uint8_t code = 0;
  switch (t_in.dtype()) {
    case kUInt8: code = 0x08; break;
    case kInt8: code = 0x09; break;
    case kInt16: code = 0x0B; break;
    case kInt32: code = 0x0C; break;
    case kFloat: code = 0x0D; break;
    case kDouble: code = 0x0E; break;
    default: BRISK_FAIL("write_idx", path, ": IDX has no element type for ", t_in.dtype());
  }
  BRISK_CHECK(t_in.dim() >= 1 && t_in.dim() <= 255, "write_idx", path, ": IDX needs 1 to 255 dimensions, got ",
              t_in.dim());
  Tensor t = t_in.contiguous();
  std::vector<unsigned char> bytes;
  auto put_be = [&](uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) bytes.push_back(static_cast<unsigned char>(v >> (8 * i)));
  };
  bytes.insert(bytes.end(), {0, 0, code, static_cast<unsigned char>(t.dim())});
  for (int64_t s : t.sizes()) {
    BRISK_CHECK(s <= 0xFFFFFFFFll, "write_idx", path, ": dimension ", s, " does not fit in 32 bits");
    put_be(static_cast<uint64_t>(s), 4);
  }
  const size_t esize = t.element_size();
  bytes.reserve(bytes.size() + t.nbytes());
  const auto* src = static_cast<const unsigned char*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t v = 0;
    std::memcpy(&v, src + i * esize, esize);  // little-endian host
    put_be(v, static_cast<int>(esize));
  }
  GzFile f(gzopen(path.c_str(), gzip ? "wb" : "wbT"));
  BRISK_CHECK(f != nullptr, "write_idx", path, ": cannot open for writing: ", std::strerror(errno));
  size_t off = 0;
  while (off < bytes.size()) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes.size() - off, 1u << 30));
    int n = gzwrite(f.get(), bytes.data() + off, chunk);
    BRISK_CHECK(n > 0, "write_idx", path, ": write error: ", gz_message(f.get()));
    off += static_cast<size_t>(n);
  }
  BRISK_CHECK(gzclose(f.release()) == Z_OK, "write_idx", path, ": error closing the file");
}

// ---- MNIST / FashionMNIST -------------------------------------------------------------

namespace {
std::string find_idx_file(const std::string& root, const std::string& name) {
  namespace fs = std::filesystem;
  fs::path plain = fs::path(root) / name;
  fs::path gz = fs::path(root) / (name + ".gz");
  std::error_code ec;
  if (fs::is_regular_file(plain, ec)) return plain.string();
  if (fs::is_regular_file(gz, ec)) return gz.string();
  BRISK_FAIL("MNIST", "neither ", plain.string(), " nor ", gz.string(), " exists");
}
}  // namespace

namespace {
// Reads {prefix}-images-idx3-ubyte and {prefix}-labels-idx1-ubyte (each
// optionally .gz) from root: uint8 images [N, H, W], int64 labels [N].
std::pair<Tensor, Tensor> read_mnist(const std::string& root, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  std::string images_path = find_idx_file(root, prefix + "-images-idx3-ubyte");
  std::string labels_path = find_idx_file(root, prefix + "-labels-idx1-ubyte");
  Tensor images = read_idx_images(images_path);
  Tensor targets = read_idx_labels(labels_path);
  BRISK_CHECK(images.size(0) == targets.size(0), "MNIST", images_path, " has ", images.size(0), " images but ",
              labels_path, " has ", targets.size(0), " labels");
  return {std::move(images), std::move(targets)};
}
}  // namespace

MNIST::MNIST(const std::string& root, bool train) { std::tie(images_, targets_) = read_mnist(root, train); }

Example<> MNIST::get(size_t index) {
  const auto n = static_cast<size_t>(images_.size(0));
  BRISK_CHECK(index < n, "MNIST", "index ", index, " out of range for ", n, " samples");
  auto i = static_cast<int64_t>(index);
  return {images_.select(0, i), targets_.select(0, i)};
}

std::optional<size_t> MNIST::size() const { return static_cast<size_t>(images_.size(0)); }

namespace datasets {

MNIST::MNIST(const std::string& root, Mode mode) : train_(mode == Mode::kTrain) {
  Tensor u8;
  std::tie(u8, targets_) = read_mnist(root, train_);
  // float32 [N, 1, H, W] in [0, 1], as libtorch's MNIST.
  images_ = u8.to(kFloat).div_(255.0).unsqueeze(1);
}

Example<> MNIST::get(size_t index) {
  const auto n = static_cast<size_t>(images_.size(0));
  BRISK_CHECK(index < n, "MNIST", "index ", index, " out of range for ", n, " samples");
  auto i = static_cast<int64_t>(index);
  return {images_.select(0, i), targets_.select(0, i)};
}

std::optional<size_t> MNIST::size() const { return static_cast<size_t>(images_.size(0)); }

}  // namespace datasets

std::string FashionMNIST::default_root() {
  if (const char* env = std::getenv("BRISK_FASHION_MNIST_ROOT"); env != nullptr && *env != '\0') return env;
  return "/usr/share/datasets/fashion-mnist";
}

}  // namespace brisk::data
