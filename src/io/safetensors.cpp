// brisk::save / brisk::load: the safetensors format.
//
// Note [Safetensors layout]
// A file is: 8 bytes N (u64, little-endian), N bytes of JSON header, then the
// data buffer. The header maps each tensor name to
// {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets
// relative to the buffer) plus an optional "__metadata__" object of strings.
// As in the reference writer (huggingface/safetensors), the header is padded
// with spaces to a multiple of 8 bytes and the tensors are laid out in
// decreasing dtype order, then by name, so every tensor is aligned to its
// element size and the buffer is byte-identical to the reference. Unlike
// the reference, the header lists the tensors in the StateDict's order, which
// load returns (readers locate tensors by their offsets, not by key order).
// As the reference reader requires, the tensors must tile the buffer exactly:
// no gaps, no overlaps, nothing after the last tensor.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <unordered_set>

#include "brisk/io.h"
#include "brisk/ops.h"
#include "io/json.h"

namespace brisk {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; brisk::save/load assume a little-endian host");

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference reader's limit
constexpr size_t kMaxDims = 64;

struct DtypeInfo {
  const char* name;
  ScalarType type;
  int rank;  // position in the reference's Dtype enum, which orders the layout
};
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", kBool, 0}, {"U8", kUInt8, 1},  {"I8", kInt8, 2},     {"I16", kInt16, 5},   {"F16", kHalf, 7},
    {"BF16", kBFloat16, 8}, {"I32", kInt32, 9}, {"F32", kFloat, 11}, {"F64", kDouble, 12}, {"I64", kInt64, 13},
};
// Valid safetensors dtypes brisk has no type for.
constexpr const char* kForeignDtypes[] = {"U16", "U32", "U64", "F8_E5M2", "F8_E4M3"};

const DtypeInfo& dtype_info(ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return d;
  BRISK_FAIL("save", "dtype ", t, " has no safetensors name");
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

std::string errno_text(int err) { return std::strerror(err); }

// ---- reading ----------------------------------------------------------------

struct Entry {
  std::string name;
  const DtypeInfo* dtype = nullptr;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

struct Header {
  std::vector<Entry> entries;  // in header order
  Metadata metadata;
};

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Parses and validates the header against a data buffer of `buffer_bytes`.
Header parse_header(std::string_view text, uint64_t buffer_bytes, const std::string& path) {
  const std::string ctx = quoted(path);
  auto fail = [&](const auto&... what) -> void { BRISK_FAIL("load", ctx, ": ", what...); };
  if (text.empty() || text[0] != '{') fail("the header does not start with '{' (not a safetensors file?)");

  using Kind = json::Reader::Kind;
  json::Reader r(text, "load", ctx);
  Header h;
  std::unordered_set<std::string> names;
  std::string key;
  r.begin_object();
  while (r.next_key(&key)) {
    if (!names.insert(key).second)
      fail(key == "__metadata__" ? "duplicate \"__metadata__\"" : "duplicate tensor name '" + key + "'");
    if (key == "__metadata__") {
      Kind k = r.peek_kind();
      if (k == Kind::Null) {
        r.read_null();
        continue;
      }
      if (k != Kind::Object) fail("\"__metadata__\" must be an object, got a ", json::kind_name(k));
      r.begin_object();
      std::string mkey;
      while (r.next_key(&mkey)) {
        Kind vk = r.peek_kind();
        if (vk != Kind::String) fail("metadata value of '", mkey, "' must be a string, got a ", json::kind_name(vk));
        h.metadata[mkey] = r.read_string();
      }
      continue;
    }

    Entry e;
    e.name = key;
    auto fail_tensor = [&](const auto&... what) { fail("tensor '", e.name, "': ", what...); };
    Kind k = r.peek_kind();
    if (k != Kind::Object) fail_tensor("expected an object, got a ", json::kind_name(k));
    bool have_dtype = false, have_shape = false, have_offsets = false;
    std::string field;
    r.begin_object();
    while (r.next_key(&field)) {
      Kind fk = r.peek_kind();
      if (field == "dtype") {
        if (have_dtype) fail_tensor("duplicate field \"dtype\"");
        have_dtype = true;
        if (fk != Kind::String) fail_tensor("\"dtype\" must be a string, got a ", json::kind_name(fk));
        std::string name = r.read_string();
        for (const auto& d : kDtypes)
          if (name == d.name) e.dtype = &d;
        if (!e.dtype) {
          for (const char* foreign : kForeignDtypes)
            if (name == foreign) fail_tensor("dtype ", name, " is not supported by brisk");
          fail_tensor("unknown dtype \"", name, "\"");
        }
      } else if (field == "shape") {
        if (have_shape) fail_tensor("duplicate field \"shape\"");
        have_shape = true;
        if (fk != Kind::Array) fail_tensor("\"shape\" must be an array, got a ", json::kind_name(fk));
        r.begin_array();
        while (r.next_item()) {
          if (e.shape.size() == kMaxDims) fail_tensor("more than ", kMaxDims, " dimensions");
          Kind ik = r.peek_kind();
          if (ik != Kind::Number) fail_tensor("shape entries must be numbers, got a ", json::kind_name(ik));
          std::string lit = r.read_number();
          uint64_t v;
          if (!json::to_uint(lit, std::numeric_limits<int64_t>::max(), &v))
            fail_tensor("shape entry ", lit, " is not a non-negative 64-bit integer");
          e.shape.push_back(static_cast<int64_t>(v));
        }
      } else if (field == "data_offsets") {
        if (have_offsets) fail_tensor("duplicate field \"data_offsets\"");
        have_offsets = true;
        if (fk != Kind::Array) fail_tensor("\"data_offsets\" must be an array, got a ", json::kind_name(fk));
        r.begin_array();
        uint64_t off[2];
        int n = 0;
        while (r.next_item()) {
          if (n == 2) fail_tensor("\"data_offsets\" must have 2 entries");
          Kind ik = r.peek_kind();
          if (ik != Kind::Number) fail_tensor("data_offsets entries must be numbers, got a ", json::kind_name(ik));
          std::string lit = r.read_number();
          if (!json::to_uint(lit, std::numeric_limits<uint64_t>::max(), &off[n]))
            fail_tensor("data offset ", lit, " is not a non-negative 64-bit integer");
          ++n;
        }
        if (n != 2) fail_tensor("\"data_offsets\" must have 2 entries, got ", n);
        e.begin = off[0];
        e.end = off[1];
      } else {
        fail_tensor("unknown field \"", field, "\"");
      }
    }
    if (!have_dtype) fail_tensor("missing \"dtype\"");
    if (!have_shape) fail_tensor("missing \"shape\"");
    if (!have_offsets) fail_tensor("missing \"data_offsets\"");
    h.entries.push_back(std::move(e));
  }
  r.finish();

  // Each tensor's byte span matches its shape and dtype and lies in the buffer.
  for (const Entry& e : h.entries) {
    auto fail_tensor = [&](const auto&... what) { fail("tensor '", e.name, "': ", what...); };
    // Zero dimensions count as 1 here, so that brisk's strides cannot overflow either.
    uint64_t product = 1;
    bool empty = false;
    for (int64_t s : e.shape) {
      uint64_t d = static_cast<uint64_t>(s);
      if (d == 0) {
        empty = true;
        continue;
      }
      if (product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d)
        fail_tensor("shape ", shape_str(e.shape), " has more than 2^63 elements");
      product *= d;
    }
    uint64_t numel = empty ? 0 : product;
    uint64_t esize = element_size(e.dtype->type);
    if (numel > std::numeric_limits<uint64_t>::max() / esize)
      fail_tensor("shape ", shape_str(e.shape), " of ", e.dtype->name, " is too large");
    if (e.begin > e.end)
      fail_tensor("data_offsets [", e.begin, ", ", e.end, "] end before they begin");
    if (e.end > buffer_bytes)
      fail_tensor("data_offsets [", e.begin, ", ", e.end, "] lie outside the data buffer of ", buffer_bytes,
                  " bytes (truncated file?)");
    if (e.end - e.begin != numel * esize)
      fail_tensor("shape ", shape_str(e.shape), " of ", e.dtype->name, " needs ", numel * esize,
                  " bytes but data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin);
  }
  // The tensors tile the buffer: no overlap, no gap, nothing left over.
  std::vector<size_t> order(h.entries.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Entry &x = h.entries[a], &y = h.entries[b];
    return std::pair(x.begin, x.end) < std::pair(y.begin, y.end);
  });
  uint64_t cursor = 0;
  const Entry* prev = nullptr;
  for (size_t i : order) {
    const Entry& e = h.entries[i];
    if (e.begin < cursor)
      fail("tensors '", prev->name, "' and '", e.name, "' overlap in the data buffer");
    if (e.begin > cursor)
      fail("bytes [", cursor, ", ", e.begin, ") of the data buffer belong to no tensor");
    cursor = e.end;
    prev = &e;
  }
  if (cursor != buffer_bytes)
    fail("the data buffer has ", buffer_bytes, " bytes but the tensors cover ", cursor);
  return h;
}

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A read-only view of the whole file, mapped copy-on-write.
struct Mapping {
  void* base = nullptr;
  size_t size = 0;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  Mapping(void* b, size_t s) : base(b), size(s) {}
  ~Mapping() { ::munmap(base, size); }
};

// Reads exactly n bytes at offset; false on a short read (the file shrank).
bool pread_full(int fd, void* dst, size_t n, uint64_t offset, int* err) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    size_t chunk = std::min<size_t>(n, size_t{1} << 30);
    ssize_t got = ::pread(fd, p, chunk, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      *err = got < 0 ? errno : 0;
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

void check_bool_bytes(const Tensor& t, const std::string& name, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i)
    BRISK_CHECK(p[i] <= 1, "load", quoted(path), ": tensor '", name, "': BOOL element ", i, " holds the byte ",
                int(p[i]), " (only 0 and 1 are booleans)");
}

// Loads the header (and the tensors when `out` is given).
Metadata read_file(const std::string& path, bool use_mmap, StateDict* out) {
  const std::string ctx = quoted(path);
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (f.fd < 0) BRISK_FAIL("load", "cannot open ", ctx, ": ", errno_text(errno));
  struct stat st;
  if (::fstat(f.fd, &st) != 0) BRISK_FAIL("load", "cannot stat ", ctx, ": ", errno_text(errno));
  BRISK_CHECK(S_ISREG(st.st_mode), "load", ctx, " is not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  BRISK_CHECK(file_size >= 8, "load", ctx, ": the file has ", file_size,
              " bytes, fewer than the 8-byte header length (truncated or not a safetensors file?)");

  std::shared_ptr<Mapping> map;
  const char* bytes = nullptr;  // the whole file when mapped
  if (use_mmap) {
    void* p = ::mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd, 0);
    if (p == MAP_FAILED) BRISK_FAIL("load", "cannot map ", ctx, ": ", errno_text(errno));
    map = std::make_shared<Mapping>(p, file_size);
    bytes = static_cast<const char*>(p);
  }
  int err = 0;
  uint64_t n = 0;
  if (use_mmap) {
    std::memcpy(&n, bytes, 8);
  } else if (!pread_full(f.fd, &n, 8, 0, &err)) {
    BRISK_FAIL("load", "cannot read ", ctx, ": ", err ? errno_text(err) : "the file shrank while reading");
  }
  {
    // libtorch's and PyTorch's torch.save write a zip archive (or, before
    // PyTorch 1.6, a pickle starting with its magic number): say so.
    unsigned char magic[8];
    std::memcpy(magic, &n, 8);
    BRISK_CHECK(!(magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4), "load", ctx,
                " is a zip archive, the format of libtorch's and PyTorch's torch.save (.pt): brisk reads and writes "
                "safetensors. Convert it in Python with safetensors.torch.save_file(torch.load(path), out) for a "
                "state dict (for a scripted module, save its state_dict() first)");
    BRISK_CHECK(!(magic[0] == 0x80 && magic[1] == 0x02 && magic[2] == 0x8a && magic[3] == 0x0a), "load", ctx,
                " is a Python pickle (PyTorch's legacy torch.save format): brisk reads and writes safetensors. "
                "Convert it in Python with safetensors.torch.save_file(torch.load(path), out)");
  }
  BRISK_CHECK(n <= kMaxHeaderBytes, "load", ctx, ": header length ", n, " exceeds the limit of ", kMaxHeaderBytes,
              " bytes (corrupt or not a safetensors file?)");
  BRISK_CHECK(n <= file_size - 8, "load", ctx, ": header length ", n, " exceeds the ", file_size - 8,
              " bytes that follow it (truncated file?)");
  std::string header_copy;
  std::string_view header_text;
  if (use_mmap) {
    header_text = std::string_view(bytes + 8, n);
  } else {
    header_copy.resize(n);
    if (!pread_full(f.fd, header_copy.data(), n, 8, &err))
      BRISK_FAIL("load", "cannot read ", ctx, ": ", err ? errno_text(err) : "the file shrank while reading");
    header_text = header_copy;
  }
  const uint64_t data_start = 8 + n;
  Header h = parse_header(header_text, file_size - data_start, path);
  if (!out) return std::move(h.metadata);

  StateDict sd;
  sd.reserve(h.entries.size());
  for (Entry& e : h.entries) {
    ScalarType dt = e.dtype->type;
    size_t nbytes = static_cast<size_t>(e.end - e.begin);
    Tensor t;
    if (use_mmap) {
      char* p = static_cast<char*>(map->base) + data_start + e.begin;
      if (reinterpret_cast<uintptr_t>(p) % element_size(dt) == 0) {
        // The deleter holds the mapping until the last tensor viewing it dies.
        t = from_blob(p, e.shape, [keep = map](void*) {}, dt);
      } else {  // a file from a writer that does not align: copy this one
        t = empty(e.shape, dt);
        if (nbytes) std::memcpy(t.data_ptr(), p, nbytes);
      }
    } else {
      t = empty(e.shape, dt);
      if (nbytes && !pread_full(f.fd, t.data_ptr(), nbytes, data_start + e.begin, &err))
        BRISK_FAIL("load", "cannot read ", ctx, ": ", err ? errno_text(err) : "the file shrank while reading");
    }
    if (dt == kBool) check_bool_bytes(t, e.name, path);
    sd.insert(std::move(e.name), std::move(t));
  }
  *out = std::move(sd);
  return std::move(h.metadata);
}

// ---- writing ----------------------------------------------------------------

void write_all(int fd, const void* data, size_t n, const std::string& path, const std::string& tmp) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    size_t chunk = std::min<size_t>(n, size_t{1} << 30);
    ssize_t put = ::write(fd, p, chunk);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0)
      BRISK_FAIL("save", "writing ", quoted(path), " (as ", quoted(tmp), ") failed: ", errno_text(put < 0 ? errno : EIO));
    p += put;
    n -= static_cast<size_t>(put);
  }
}

// The temporary file of an atomic save: removed unless committed.
struct TempFile {
  std::string path;
  int fd = -1;
  bool committed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!committed && !path.empty()) ::unlink(path.c_str());
  }
};

void check_utf8(const std::string& s, const char* what, const std::string& path) {
  BRISK_CHECK(json::is_utf8(s), "save", what, " '", s, "' is not valid UTF-8 (saving ", quoted(path), ")");
}

}  // namespace

void save(const StateDict& tensors, const std::string& path, const Metadata& metadata) {
  // 1. Check everything and build the header before touching the file system.
  struct Item {
    const std::string* name;
    Tensor data;  // contiguous, on the CPU
    const DtypeInfo* dtype;
    uint64_t begin = 0, end = 0;
  };
  std::vector<Item> items;
  items.reserve(tensors.size());
  std::unordered_set<std::string_view> seen;
  for (const auto& [name, t] : tensors) {
    BRISK_CHECK(t.defined(), "save", "tensor '", name, "' is undefined (saving ", quoted(path), ")");
    BRISK_CHECK(name != "__metadata__", "save", "the tensor name \"__metadata__\" is reserved by safetensors");
    BRISK_CHECK(seen.insert(name).second, "save", "duplicate tensor name '", name, "'");
    check_utf8(name, "tensor name", path);
    Tensor c = t.detach();
    if (!c.is_cpu()) c = c.cpu();
    items.push_back({&name, c.contiguous(), &dtype_info(t.dtype())});
  }
  for (const auto& [k, v] : metadata) {
    check_utf8(k, "metadata key", path);
    check_utf8(v, "metadata value", path);
  }
  // Data layout: the reference's order (Note [Safetensors layout]).
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (items[a].dtype->rank != items[b].dtype->rank) return items[a].dtype->rank > items[b].dtype->rank;
    return *items[a].name < *items[b].name;
  });
  uint64_t offset = 0;
  for (size_t i : order) {
    items[i].begin = offset;
    offset += items[i].data.nbytes();
    items[i].end = offset;
  }
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      first = false;
      json::append_quoted(header, k);
      header += ':';
      json::append_quoted(header, v);
    }
    header += '}';
  }
  for (const Item& it : items) {
    if (header.size() > 1) header += ',';
    json::append_quoted(header, *it.name);
    header += ":{\"dtype\":\"";
    header += it.dtype->name;
    header += "\",\"shape\":[";
    for (int64_t d = 0; d < it.data.dim(); ++d) {
      if (d) header += ',';
      header += std::to_string(it.data.size(d));
    }
    header += "],\"data_offsets\":[" + std::to_string(it.begin) + "," + std::to_string(it.end) + "]}";
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');
  BRISK_CHECK(header.size() <= kMaxHeaderBytes, "save", "the header of ", quoted(path), " would have ",
              header.size(), " bytes, more than safetensors readers accept (", kMaxHeaderBytes, ")");

  // 2. Write a temporary file next to the target, then rename it over.
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  BRISK_CHECK(!base.empty(), "save", "the path ", quoted(path), " names a directory, not a file");
  static std::atomic<uint64_t> counter{0};
  TempFile tmp;
  for (int attempt = 0; tmp.fd < 0; ++attempt) {
    tmp.path = (slash == std::string::npos ? "" : path.substr(0, slash + 1)) + "." + base + ".tmp." +
               std::to_string(::getpid()) + "." + std::to_string(counter++);
    tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (tmp.fd < 0) {
      int err = errno;
      if (err == EEXIST && attempt < 100) continue;
      tmp.path.clear();  // nothing to remove
      BRISK_FAIL("save", "cannot create a temporary file in ", quoted(dir), " to save ", quoted(path), ": ",
                 errno_text(err));
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
    (void)::fchmod(tmp.fd, st.st_mode & 07777);  // keep the replaced file's permissions

  const uint64_t n = header.size();
  write_all(tmp.fd, &n, 8, path, tmp.path);
  write_all(tmp.fd, header.data(), header.size(), path, tmp.path);
  for (size_t i : order) write_all(tmp.fd, items[i].data.data_ptr(), items[i].data.nbytes(), path, tmp.path);
  if (::fsync(tmp.fd) != 0) BRISK_FAIL("save", "fsync of ", quoted(tmp.path), " failed: ", errno_text(errno));
  int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) BRISK_FAIL("save", "closing ", quoted(tmp.path), " failed: ", errno_text(errno));
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    BRISK_FAIL("save", "cannot replace ", quoted(path), ": ", errno_text(errno));
  tmp.committed = true;
  // Make the rename itself durable.
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.fd >= 0 && ::fsync(d.fd) != 0 && errno != EINVAL && errno != EROFS)
    BRISK_FAIL("save", "fsync of the directory ", quoted(dir), " failed: ", errno_text(errno));
}

StateDict load(const std::string& path, bool mmap) {
  StateDict sd;
  read_file(path, mmap, &sd);
  return sd;
}

Metadata load_metadata(const std::string& path) { return read_file(path, /*mmap=*/false, nullptr); }

}  // namespace brisk
