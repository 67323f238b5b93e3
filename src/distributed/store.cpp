// Rendezvous stores of brisk::distributed (include/brisk/distributed.h): a
// TCP store served by one process, and a file store in a shared directory.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "brisk/distributed.h"
#include "brisk/error.h"

namespace brisk::distributed {

namespace {

using Clock = std::chrono::steady_clock;

// ---- sockets ------------------------------------------------------------------------

void write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    BRISK_CHECK(k > 0, "TCPStore", "the connection to the store was lost (", std::strerror(errno), ")");
    c += k;
    n -= static_cast<size_t>(k);
  }
}
/// false when the peer closed the connection before anything was read
bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  size_t got = 0;
  while (got < n) {
    const ssize_t k = ::recv(fd, c + got, n - got, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k == 0 && got == 0) return false;
    BRISK_CHECK(k > 0, "TCPStore", "the connection to the store was lost or timed out (",
                k == 0 ? "closed by the other side" : std::strerror(errno), ")");
    got += static_cast<size_t>(k);
  }
  return true;
}
void write_u32(int fd, uint32_t v) { write_all(fd, &v, 4); }
uint32_t read_u32(int fd) {
  uint32_t v = 0;
  BRISK_CHECK(read_all(fd, &v, 4), "TCPStore", "the connection to the store was closed");
  return v;
}
void write_bytes(int fd, const std::vector<uint8_t>& b) {
  write_u32(fd, static_cast<uint32_t>(b.size()));
  if (!b.empty()) write_all(fd, b.data(), b.size());
}
std::vector<uint8_t> read_bytes(int fd) {
  std::vector<uint8_t> b(read_u32(fd));
  if (!b.empty()) BRISK_CHECK(read_all(fd, b.data(), b.size()), "TCPStore", "the connection to the store was closed");
  return b;
}

enum Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3 };

// ---- the server ------------------------------------------------------------------------

class TcpStoreServer {
 public:
  TcpStoreServer(int port, std::chrono::milliseconds timeout) : timeout_(timeout) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    BRISK_CHECK(listen_fd_ >= 0, "TCPStore", "socket: ", std::strerror(errno));
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      const int e = errno;
      ::close(listen_fd_);
      BRISK_CHECK(false, "TCPStore", "cannot listen on port ", port, ": ", std::strerror(e),
                  " (another job on this MASTER_PORT?)");
    }
    BRISK_CHECK(::listen(listen_fd_, 128) == 0, "TCPStore", "listen: ", std::strerror(errno));
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~TcpStoreServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    if (accept_thread_.joinable()) accept_thread_.join();
    std::unique_lock<std::mutex> lock(mu_);
    for (int fd : clients_) ::shutdown(fd, SHUT_RDWR);
    cv_.notify_all();
    done_.wait(lock, [this] { return active_ == 0; });
  }

 private:
  void accept_loop() {
    while (!stop_) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) {
        if (stop_) return;
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::lock_guard<std::mutex> lock(mu_);
      clients_.push_back(fd);
      ++active_;
      std::thread([this, fd] { serve(fd); }).detach();
    }
  }
  void serve(int fd) {
    try {
      for (;;) {
        uint8_t op = 0;
        if (!read_all(fd, &op, 1)) break;
        const std::vector<uint8_t> kb = read_bytes(fd);
        const std::string key(kb.begin(), kb.end());
        if (op == kSet) {
          std::vector<uint8_t> v = read_bytes(fd);
          {
            std::lock_guard<std::mutex> lock(mu_);
            data_[key] = std::move(v);
          }
          cv_.notify_all();
          const uint8_t ok = 0;
          write_all(fd, &ok, 1);
        } else if (op == kGet) {
          std::vector<uint8_t> v;
          bool found;
          {
            std::unique_lock<std::mutex> lock(mu_);
            found = cv_.wait_for(lock, timeout_, [&] { return stop_ || data_.count(key) != 0; }) && !stop_;
            if (found) v = data_[key];
          }
          const uint8_t status = found ? 0 : 1;
          write_all(fd, &status, 1);
          if (found) write_bytes(fd, v);
        } else if (op == kAdd) {
          int64_t amount = 0;
          BRISK_CHECK(read_all(fd, &amount, 8), "TCPStore", "truncated add");
          int64_t result;
          {
            std::lock_guard<std::mutex> lock(mu_);
            std::vector<uint8_t>& v = data_[key];
            int64_t cur = 0;
            if (v.size() == 8) std::memcpy(&cur, v.data(), 8);
            result = cur + amount;
            v.resize(8);
            std::memcpy(v.data(), &result, 8);
          }
          cv_.notify_all();
          write_all(fd, &result, 8);
        } else {
          break;
        }
      }
    } catch (const std::exception&) {
      // a client went away: its connection ends here
    }
    std::lock_guard<std::mutex> lock(mu_);
    ::close(fd);
    for (auto it = clients_.begin(); it != clients_.end(); ++it)
      if (*it == fd) {
        clients_.erase(it);
        break;
      }
    if (--active_ == 0) done_.notify_all();
  }

  std::chrono::milliseconds timeout_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::condition_variable cv_, done_;
  std::map<std::string, std::vector<uint8_t>> data_;
  std::vector<int> clients_;
  int active_ = 0;
};

// ---- the client ------------------------------------------------------------------------

class TcpStore final : public Store {
 public:
  TcpStore(const std::string& host, int port, bool is_master, std::chrono::milliseconds t) {
    timeout = t;
    if (is_master) server_ = std::make_unique<TcpStoreServer>(port, t);
    connect_to(host, port);
  }
  ~TcpStore() override {
    if (fd_ >= 0) ::close(fd_);
    server_.reset();
  }
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    request(kSet, key);
    write_bytes(fd_, value);
    uint8_t ok = 1;
    BRISK_CHECK(read_all(fd_, &ok, 1) && ok == 0, "TCPStore", "set of '", key, "' failed");
  }
  std::vector<uint8_t> get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    request(kGet, key);
    uint8_t status = 1;
    BRISK_CHECK(read_all(fd_, &status, 1), "TCPStore", "the store closed the connection");
    BRISK_CHECK(status == 0, "TCPStore", "timed out after ", timeout.count(), " ms waiting for key '", key,
                "' (did every rank start, with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE?)");
    return read_bytes(fd_);
  }
  int64_t add(const std::string& key, int64_t amount) override {
    std::lock_guard<std::mutex> lock(mu_);
    request(kAdd, key);
    write_all(fd_, &amount, 8);
    int64_t r = 0;
    BRISK_CHECK(read_all(fd_, &r, 8), "TCPStore", "the store closed the connection");
    return r;
  }
  void wait(const std::vector<std::string>& keys) override {
    for (const auto& k : keys) (void)get(k);
  }

 private:
  void request(Op op, const std::string& key) {
    write_all(fd_, &op, 1);
    write_bytes(fd_, std::vector<uint8_t>(key.begin(), key.end()));
  }
  void connect_to(const std::string& host, int port) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    BRISK_CHECK(rc == 0 && res != nullptr, "TCPStore", "cannot resolve MASTER_ADDR '", host, "': ", gai_strerror(rc));
    const auto deadline = Clock::now() + timeout;
    int last_errno = 0;
    for (;;) {
      fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
      if (::connect(fd_, res->ai_addr, res->ai_addrlen) == 0) break;
      last_errno = errno;
      ::close(fd_);
      fd_ = -1;
      if (Clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::freeaddrinfo(res);
    BRISK_CHECK(fd_ >= 0, "TCPStore", "could not connect to ", host, ":", port, " within ", timeout.count(),
                " ms (", std::strerror(last_errno), "): is rank 0 running?");
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // a dead server (or network) must not hang a get for ever
    const auto slack = timeout + std::chrono::seconds(5);
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(std::chrono::duration_cast<std::chrono::seconds>(slack).count());
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }

  std::unique_ptr<TcpStoreServer> server_;
  int fd_ = -1;
  std::mutex mu_;
};

// ---- the file store ----------------------------------------------------------------------

std::string hex_name(const std::string& key) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned char c : key) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

class FileStore final : public Store {
 public:
  FileStore(const std::string& path, std::chrono::milliseconds t) : dir_(path) {
    timeout = t;
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    BRISK_CHECK(std::filesystem::is_directory(dir_), "FileStore", "cannot create the directory '", path, "'");
  }
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    const auto file = dir_ / hex_name(key);
    const auto tmp = dir_ / (hex_name(key) + ".tmp" + std::to_string(::getpid()));
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(reinterpret_cast<const char*>(value.data()), static_cast<std::streamsize>(value.size()));
      BRISK_CHECK(out.good(), "FileStore", "cannot write ", tmp.string());
    }
    std::filesystem::rename(tmp, file);  // atomic: readers see all or nothing
  }
  std::vector<uint8_t> get(const std::string& key) override {
    const auto file = dir_ / hex_name(key);
    const auto deadline = Clock::now() + timeout;
    while (!std::filesystem::exists(file)) {
      BRISK_CHECK(Clock::now() < deadline, "FileStore", "timed out after ", timeout.count(),
                  " ms waiting for key '", key, "' in ", dir_.string(), " (did every rank start?)");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::ifstream in(file, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  int64_t add(const std::string& key, int64_t amount) override {
    const auto lock_file = dir_ / (hex_name(key) + ".lock");
    const int fd = ::open(lock_file.c_str(), O_CREAT | O_RDWR, 0644);
    BRISK_CHECK(fd >= 0, "FileStore", "cannot open ", lock_file.string());
    ::flock(fd, LOCK_EX);
    int64_t cur = 0;
    const auto file = dir_ / hex_name(key);
    if (std::filesystem::exists(file)) {
      std::ifstream in(file, std::ios::binary);
      in.read(reinterpret_cast<char*>(&cur), 8);
    }
    const int64_t r = cur + amount;
    std::vector<uint8_t> v(8);
    std::memcpy(v.data(), &r, 8);
    set(key, v);
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return r;
  }
  void wait(const std::vector<std::string>& keys) override {
    for (const auto& k : keys) (void)get(k);
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace

std::shared_ptr<Store> make_tcp_store(const std::string& host, int port, bool is_master,
                                      std::chrono::milliseconds timeout) {
  return std::make_shared<TcpStore>(host, port, is_master, timeout);
}
std::shared_ptr<Store> make_file_store(const std::string& path, std::chrono::milliseconds timeout) {
  return std::make_shared<FileStore>(path, timeout);
}

}  // namespace brisk::distributed
