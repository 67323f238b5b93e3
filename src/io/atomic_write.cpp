// write_file_atomic: temp file in the same directory, fsync, rename, fsync
// the directory (the same steps as safetensors' save).
#include "io/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "brisk/error.h"

namespace brisk::io {

namespace {
// The temporary file: closed and removed unless committed.
struct TempFile {
  std::string path;
  int fd = -1;
  bool committed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!committed && !path.empty()) ::unlink(path.c_str());
  }
};
}  // namespace

void write_file_atomic(const std::string& path, std::string_view data, const char* op) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  BRISK_CHECK(!base.empty(), op, "the path '", path, "' names a directory, not a file");
  static std::atomic<uint64_t> counter{0};
  TempFile tmp;
  for (int attempt = 0; tmp.fd < 0; ++attempt) {
    tmp.path = (slash == std::string::npos ? "" : path.substr(0, slash + 1)) + "." + base + ".tmp." +
               std::to_string(::getpid()) + "." + std::to_string(counter++);
    tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (tmp.fd < 0) {
      const int err = errno;
      if (err == EEXIST && attempt < 100) continue;
      tmp.path.clear();
      BRISK_FAIL(op, "cannot create a temporary file in '", dir, "' to write '", path, "': ", std::strerror(err));
    }
  }
  const char* p = data.data();
  size_t n = data.size();
  while (n > 0) {
    const ssize_t put = ::write(tmp.fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0)
      BRISK_FAIL(op, "writing '", path, "' failed: ", std::strerror(put < 0 ? errno : EIO));
    p += put;
    n -= static_cast<size_t>(put);
  }
  if (::fsync(tmp.fd) != 0) BRISK_FAIL(op, "fsync of '", tmp.path, "' failed: ", std::strerror(errno));
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) BRISK_FAIL(op, "closing '", tmp.path, "' failed: ", std::strerror(errno));
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    BRISK_FAIL(op, "cannot replace '", path, "': ", std::strerror(errno));
  tmp.committed = true;
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // make the rename durable; best effort
    ::close(dfd);
  }
}

}  // namespace brisk::io
