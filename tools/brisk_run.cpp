// brisk-run: starts the processes of a distributed job, as torchrun does.
//
//   brisk-run --nproc-per-node N [--nnodes M --node-rank K] [--master-addr A] [--master-port P]
//             program [args...]
//
// Each process gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// GROUP_RANK, MASTER_ADDR and MASTER_PORT (what
// brisk::distributed::init_process_group's env:// reads). Every line a
// process prints goes out prefixed with "[rank R]: " (stdout to stdout,
// stderr to stderr). SIGINT and SIGTERM are forwarded to the processes.
// When one process fails (a nonzero exit or a signal) the others get
// SIGTERM, then SIGKILL after 5 s, and brisk-run exits with the failed
// process's status (128 + signal for a signal); 0 when all succeed.
// Written without brisk itself (no library dependency).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int s) { g_signal = s; }

[[noreturn]] void usage(const char* why) {
  if (why) std::fprintf(stderr, "brisk-run: %s\n", why);
  std::fprintf(stderr,
               "usage: brisk-run --nproc-per-node N [--nnodes M] [--node-rank K] [--master-addr ADDR]\n"
               "                 [--master-port PORT] program [args...]\n");
  std::exit(2);
}

struct Child {
  pid_t pid = -1;
  int rank = 0;
  int out = -1, err = -1;     // read ends of its stdout and stderr pipes
  std::string out_buf, err_buf;
  bool running = true;
  int status = 0;  // exit code, or 128 + signal
};

/// Writes the complete lines of buf to fd with the rank prefix; keeps the rest.
void flush_lines(std::string& buf, int fd, int rank, bool all) {
  size_t start = 0;
  for (;;) {
    const size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    const std::string line = "[rank " + std::to_string(rank) + "]: " + buf.substr(start, nl - start + 1);
    (void)!::write(fd, line.data(), line.size());
    start = nl + 1;
  }
  buf.erase(0, start);
  if (all && !buf.empty()) {
    const std::string line = "[rank " + std::to_string(rank) + "]: " + buf + "\n";
    (void)!::write(fd, line.data(), line.size());
    buf.clear();
  }
}

void drain(Child& c, bool all) {
  char tmp[65536];
  for (int* fd : {&c.out, &c.err}) {
    if (*fd < 0) continue;
    for (;;) {
      const ssize_t k = ::read(*fd, tmp, sizeof(tmp));
      if (k > 0) {
        (fd == &c.out ? c.out_buf : c.err_buf).append(tmp, static_cast<size_t>(k));
        continue;
      }
      if (k == 0) {  // closed
        ::close(*fd);
        *fd = -1;
      }
      break;  // EAGAIN or closed
    }
  }
  flush_lines(c.out_buf, STDOUT_FILENO, c.rank, all);
  flush_lines(c.err_buf, STDERR_FILENO, c.rank, all);
}

}  // namespace

int main(int argc, char** argv) {
  int nproc = -1, nnodes = 1, node_rank = 0, port = 29500;
  std::string addr = "127.0.0.1";
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--nproc-per-node" || a == "--nproc_per_node") nproc = std::atoi(value().c_str());
    else if (a == "--nnodes") nnodes = std::atoi(value().c_str());
    else if (a == "--node-rank" || a == "--node_rank") node_rank = std::atoi(value().c_str());
    else if (a == "--master-addr" || a == "--master_addr") addr = value();
    else if (a == "--master-port" || a == "--master_port") port = std::atoi(value().c_str());
    else if (a == "-h" || a == "--help") usage(nullptr);
    else if (a.rfind("--", 0) == 0) usage(("unknown option " + a).c_str());
    else break;
  }
  if (nproc < 1) usage("--nproc-per-node must be at least 1");
  if (nnodes < 1 || node_rank < 0 || node_rank >= nnodes) usage("need 0 <= --node-rank < --nnodes");
  if (port <= 0 || port > 65535) usage("--master-port must be a port number");
  if (i >= argc) usage("no program to run");

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const int world = nproc * nnodes;
  std::vector<Child> kids(static_cast<size_t>(nproc));
  for (int local = 0; local < nproc; ++local) {
    Child& c = kids[static_cast<size_t>(local)];
    c.rank = node_rank * nproc + local;
    int po[2], pe[2];
    if (::pipe(po) != 0 || ::pipe(pe) != 0) {
      std::perror("brisk-run: pipe");
      return 1;
    }
    c.pid = ::fork();
    if (c.pid < 0) {
      std::perror("brisk-run: fork");
      return 1;
    }
    if (c.pid == 0) {
      ::dup2(po[1], STDOUT_FILENO);
      ::dup2(pe[1], STDERR_FILENO);
      ::close(po[0]);
      ::close(po[1]);
      ::close(pe[0]);
      ::close(pe[1]);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      setenv("RANK", std::to_string(c.rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("GROUP_RANK", std::to_string(node_rank).c_str(), 1);
      setenv("MASTER_ADDR", addr.c_str(), 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::execvp(argv[i], argv + i);
      std::fprintf(stderr, "brisk-run: cannot run %s: %s\n", argv[i], std::strerror(errno));
      std::_Exit(127);
    }
    ::close(po[1]);
    ::close(pe[1]);
    c.out = po[0];
    c.err = pe[0];
    ::fcntl(c.out, F_SETFL, O_NONBLOCK);
    ::fcntl(c.err, F_SETFL, O_NONBLOCK);
  }

  int result = 0, failed_rank = -1;
  bool stopping = false;
  auto stop_at = std::chrono::steady_clock::time_point::max();
  auto terminate_all = [&](int sig) {
    for (Child& c : kids)
      if (c.running) ::kill(c.pid, sig);
  };
  for (;;) {
    std::vector<pollfd> fds;
    for (Child& c : kids) {
      if (c.out >= 0) fds.push_back({c.out, POLLIN, 0});
      if (c.err >= 0) fds.push_back({c.err, POLLIN, 0});
    }
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 100);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (Child& c : kids) drain(c, false);
    if (g_signal != 0) {  // forwarded; then the children's exits decide
      terminate_all(g_signal);
      if (!stopping) {
        stopping = true;
        stop_at = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        if (result == 0) result = 128 + g_signal;
      }
      g_signal = 0;
    }
    bool any_running = false;
    for (Child& c : kids) {
      if (!c.running) continue;
      int status = 0;
      const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid) {
        c.running = false;
        c.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (c.status != 0 && failed_rank < 0 && !stopping) {
          failed_rank = c.rank;
          result = c.status;
          std::fprintf(stderr, "brisk-run: rank %d exited with status %d: stopping the other ranks\n", c.rank,
                       c.status);
          stopping = true;
          stop_at = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          terminate_all(SIGTERM);
        }
      } else {
        any_running = true;
      }
    }
    if (!any_running) break;
    if (stopping && std::chrono::steady_clock::now() > stop_at) terminate_all(SIGKILL);
  }
  for (Child& c : kids) drain(c, true);
  return result;
}
