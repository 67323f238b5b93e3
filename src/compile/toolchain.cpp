// The system C++ compiler behind compile's CPU code generator.
#include "compile/toolchain.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "brisk/error.h"

extern char** environ;

namespace brisk::jit {

// Note [Compile cache]
// A shared object is keyed by a 128-bit hash of everything that decides its
// code: the source, the flags, the compiler's `--version` line and the ISA
// variant the flags target. `<dir>/<key>.so` is the object and `<dir>/<key>.cpp`
// the full key text (a header naming flags, compiler and ISA, then the
// source): a hit requires both, with the .cpp equal to the expected text, so
// a hash collision or a stale file recompiles instead of loading the wrong
// code. Both files are written under temporary names in the same directory
// and renamed into place (.cpp first, then .so), so a concurrent process
// sees either no entry or a complete one; two processes compiling one key
// race harmlessly (the same bytes win either way). In the process, one mutex
// serializes requests and a memo maps keys to loaded objects (never
// unloaded: kernels taken from them may still run).

namespace {

std::mutex g_mu;
std::unordered_map<std::string, std::unique_ptr<SharedObject>> g_memo;  // key -> object
std::map<std::string, std::string> g_versions;                           // compiler command -> version ("" = none)
ToolchainStats g_stats;
std::atomic<int64_t> g_tmp_counter{0};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Two FNV-1a hashes with different offset bases: 32 hex digits.
std::string hash_key(const std::string& text) {
  uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  for (unsigned char c : text) {
    h1 = (h1 ^ c) * 0x100000001b3ull;
    h2 = (h2 ^ c) * 0x100000001b3ull;
    h2 ^= h2 >> 29;
  }
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return buf;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct ProcResult {
  int spawn_errno = 0;  ///< nonzero: the program did not start
  int status = -1;      ///< the exit status (-1: killed by a signal)
  std::string output;   ///< what it wrote (stdout, and stderr unless discarded)
};

/// Runs argv[0] (looked up in PATH) and collects its output. With
/// `with_stderr` false, stderr goes to /dev/null.
ProcResult run_process(const std::vector<std::string>& args, bool with_stderr) {
  ProcResult r;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    r.spawn_errno = errno;
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  if (with_stderr)
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  else
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    r.spawn_errno = rc;
    return r;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n > 0) {
      r.output.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  // glibc's posix_spawnp reports a missing program through exit status 127
  if (r.status == 127 && r.output.empty()) r.spawn_errno = ENOENT;
  return r;
}

/// The memoized version line of `cxx` ("" when it does not run). Caller holds g_mu.
const std::string& version_locked(const std::string& cxx) {
  auto it = g_versions.find(cxx);
  if (it != g_versions.end()) return it->second;
  std::vector<std::string> args = split_words(cxx);
  std::string v;
  if (!args.empty()) {
    args.push_back("--version");
    ProcResult r = run_process(args, false);
    if (r.spawn_errno == 0 && r.status == 0) {
      v = r.output.substr(0, r.output.find('\n'));
      if (v.empty()) v = "unknown version";
    }
  }
  return g_versions.emplace(cxx, v).first->second;
}

bool make_dirs(const std::string& path) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}
bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return false;
  f << text;
  f.close();
  return static_cast<bool>(f);
}
bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string cache_dir_path() {
  if (const char* d = std::getenv("BRISK_COMPILE_CACHE"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/brisk/compile";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/brisk/compile";
  return "/tmp/brisk-compile-cache";
}

}  // namespace

std::string compiler_command() {
  const char* c = std::getenv("BRISK_CXX");
  return (c && *c) ? std::string(c) : std::string("c++");
}

std::string compiler_version() {
  const std::string cxx = compiler_command();
  std::lock_guard<std::mutex> lk(g_mu);
  return version_locked(cxx);
}

bool have_compiler() { return !compiler_version().empty(); }

std::string cache_dir() {
  const std::string d = cache_dir_path();
  BRISK_CHECK(make_dirs(d), "compile", "cannot create the compile cache directory '", d, "': ", std::strerror(errno),
              " (set BRISK_COMPILE_CACHE to a writable directory)");
  return d;
}

std::string hash_text(const std::string& text) { return hash_key(text); }

std::string hash_files(const std::vector<std::string>& paths, const char* needed_by) {
  std::string all;
  for (const std::string& p : paths) {
    std::string content;
    BRISK_CHECK(read_file(p, content), "compile", "cannot read ", p, ": ", needed_by,
                " need brisk's codegen headers (installed under share/brisk/codegen; BRISK_CODEGEN_DIR overrides)");
    all += p + "\n" + content;
  }
  return hash_key(all);
}

bool read_cache_file(const std::string& path, std::string& out) { return read_file(path, out); }

bool write_cache_file(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(g_tmp_counter.fetch_add(1));
  if (write_file(tmp, bytes) && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  std::remove(tmp.c_str());
  return false;
}

std::string precompiled_header_dir(const std::string& header_path, const std::string& include_name,
                                   const std::vector<std::string>& flags, const std::string& isa,
                                   const std::string& content_hash) {
  const std::string cxx = compiler_command();
  std::lock_guard<std::mutex> lk(g_mu);
  const std::string& version = version_locked(cxx);
  if (version.empty()) return "";
  std::string key_text = "pch\n" + version + "\n" + isa + "\n" + header_path + "\n" + include_name + "\n" + content_hash;
  for (const auto& f : flags) key_text += " " + f;
  const std::string dir = cache_dir_path() + "/pch-" + hash_key(key_text);
  const std::string gch = dir + "/" + include_name + ".gch";
  if (file_exists(gch)) return dir;
  static std::set<std::string> failed;  // not retried in this process
  if (failed.count(gch)) return "";
  const size_t slash = gch.rfind('/');
  if (!make_dirs(gch.substr(0, slash))) return "";
  const auto t0 = Clock::now();
  const std::string tmp = gch + ".tmp." + std::to_string(getpid()) + "." + std::to_string(g_tmp_counter.fetch_add(1));
  std::vector<std::string> args = split_words(cxx);
  for (const auto& f : flags)  // compile options only (no libraries)
    if (f.size() > 1 && f[0] == '-' && f.rfind("-l", 0) != 0 && f.rfind("-L", 0) != 0) args.push_back(f);
  for (const char* f : {"-fPIC", "-x", "c++-header", "-o"}) args.push_back(f);
  args.push_back(tmp);
  args.push_back(header_path);
  ProcResult r = run_process(args, true);
  if (r.spawn_errno != 0 || r.status != 0 || std::rename(tmp.c_str(), gch.c_str()) != 0) {
    std::remove(tmp.c_str());
    failed.insert(gch);
    return "";
  }
  ++g_stats.pch_builds;
  g_stats.pch_seconds += seconds_since(t0);
  return dir;
}

const SharedObject& compile_shared_object(const std::string& source, const std::vector<std::string>& flags,
                                          const std::string& isa, const std::vector<std::string>& unkeyed_flags) {
  const std::string cxx = compiler_command();
  std::lock_guard<std::mutex> lk(g_mu);
  const std::string& version = version_locked(cxx);
  std::string key_text = "// brisk compile cache entry\n// compiler: " + version + "\n// isa: " + isa + "\n// flags:";
  for (const auto& f : flags) key_text += " " + f;
  key_text += "\n" + source;
  const std::string key = hash_key(key_text);
  if (auto it = g_memo.find(key); it != g_memo.end()) {
    ++g_stats.memory_hits;
    return *it->second;
  }
  const std::string dir = cache_dir_path();
  BRISK_CHECK(make_dirs(dir), "compile", "cannot create the compile cache directory '", dir,
              "': ", std::strerror(errno), " (set BRISK_COMPILE_CACHE to a writable directory)");
  const std::string so_path = dir + "/" + key + ".so", cpp_path = dir + "/" + key + ".cpp";
  auto remember = [&](void* h) -> const SharedObject& {
    auto so = std::make_unique<SharedObject>();
    so->handle = h;
    so->path = so_path;
    so->key = key;
    return *g_memo.emplace(key, std::move(so)).first->second;
  };

  // A disk hit: a complete entry with the same key text.
  {
    const auto t0 = Clock::now();
    std::string stored;
    if (file_exists(so_path) && read_file(cpp_path, stored) && stored == key_text) {
      if (void* h = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        ++g_stats.disk_hits;
        g_stats.load_seconds += seconds_since(t0);
        return remember(h);
      }
      // unloadable (another architecture, a damaged file): compile again
    }
  }

  BRISK_CHECK(!version.empty(), "compile", "cannot run the C++ compiler '", cxx,
              "' (set BRISK_CXX to a working C++ compiler; without one compiled functions run in the interpreter)");
  const auto t0 = Clock::now();
  const std::string tmp = dir + "/" + key + ".tmp." + std::to_string(getpid()) + "." +
                          std::to_string(g_tmp_counter.fetch_add(1));
  const std::string tmp_cpp = tmp + ".cpp", tmp_so = tmp + ".so";
  BRISK_CHECK(write_file(tmp_cpp, key_text), "compile", "cannot write '", tmp_cpp, "': ", std::strerror(errno));
  std::vector<std::string> args = split_words(cxx);
  for (const auto& f : unkeyed_flags) args.push_back(f);
  for (const auto& f : flags) args.push_back(f);
  for (const char* f : {"-shared", "-fPIC", "-o"}) args.push_back(f);
  args.push_back(tmp_so);
  args.push_back(tmp_cpp);
  ProcResult r = run_process(args, true);
  if (r.spawn_errno != 0 || r.status != 0) {
    ++g_stats.failures;
    std::remove(tmp_so.c_str());
    const std::string kept = dir + "/" + key + ".failed.cpp";
    std::rename(tmp_cpp.c_str(), kept.c_str());
    std::string msg = r.output.size() > 8000 ? r.output.substr(0, 8000) + "\n[...]" : r.output;
    if (r.spawn_errno != 0)
      BRISK_FAIL("compile", "cannot run the C++ compiler '", cxx, "': ", std::strerror(r.spawn_errno));
    BRISK_FAIL("compile", "the C++ compiler '", cxx, "' failed (exit status ", r.status, ") on the generated source ",
               kept, ":\n", msg);
  }
  // .cpp first: an entry is complete once its .so exists
  const bool renamed = std::rename(tmp_cpp.c_str(), cpp_path.c_str()) == 0 &&
                       std::rename(tmp_so.c_str(), so_path.c_str()) == 0;
  if (!renamed) {
    const int e = errno;
    std::remove(tmp_cpp.c_str());
    std::remove(tmp_so.c_str());
    BRISK_FAIL("compile", "cannot move the compiled object into the cache '", dir, "': ", std::strerror(e));
  }
  void* h = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    ++g_stats.failures;
    const char* e = dlerror();
    BRISK_FAIL("compile", "cannot load the compiled object '", so_path, "': ", e ? e : "unknown error");
  }
  ++g_stats.compiles;
  g_stats.compile_seconds += seconds_since(t0);
  return remember(h);
}

void* symbol(const SharedObject& so, const char* name) {
  dlerror();
  void* p = dlsym(so.handle, name);
  BRISK_CHECK(p != nullptr, "compile", "the compiled object '", so.path, "' has no symbol '", name, "'");
  return p;
}

ToolchainStats toolchain_stats() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_stats;
}

void reset_toolchain_stats() {
  std::lock_guard<std::mutex> lk(g_mu);
  g_stats = ToolchainStats{};
}

void forget_loaded_for_testing() {
  std::lock_guard<std::mutex> lk(g_mu);
  // the objects stay valid (callers hold references; never unloaded)
  static std::vector<std::unique_ptr<SharedObject>> forgotten;
  for (auto& [key, so] : g_memo) forgotten.push_back(std::move(so));
  g_memo.clear();
}

}  // namespace brisk::jit
