// The system C++ compiler as a run-time code generator's back end: C++
// source in, a loaded shared object out, cached on disk (Note [Compile
// cache] in toolchain.cpp).
//
//   if (!compile::have_compiler()) ...  // fall back to the interpreter
//   const compile::SharedObject& so = compile::compile_shared_object(src, flags);
//   auto fn = reinterpret_cast<Fn>(compile::symbol(so, "brisk_k"));
//
// The compiler is `c++` from PATH; the environment variable BRISK_CXX
// names another one. The cache directory is BRISK_COMPILE_CACHE, else
// $XDG_CACHE_HOME/brisk/compile, else ~/.cache/brisk/compile.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace brisk::jit {

/// A loaded shared object. Never unloaded: kernels taken from it may be in
/// use anywhere, and the in-process memo keeps it for the next request.
struct SharedObject {
  void* handle = nullptr;  ///< dlopen's handle
  std::string path;        ///< the cached .so it was loaded from
  std::string key;         ///< the cache key (32 hex digits)
};

/// The compiler's command (BRISK_CXX, else "c++"), read on each call.
std::string compiler_command();
/// Whether the compiler runs (`<cxx> --version` succeeds); false lets the
/// caller fall back to the interpreter. Memoized per compiler command.
bool have_compiler();
/// The first line of `<cxx> --version` (part of the cache key); empty when
/// the compiler does not run.
std::string compiler_version();
/// The directory of the disk cache (created on first use).
std::string cache_dir();

/// Compiles `source` (C++) with `flags` (besides -shared -fPIC, which are
/// always given) into a shared object and loads it, or loads it from the
/// disk cache (key: source, flags, compiler version, `isa`; `isa` names the
/// kernel variant the flags select, "avx512", ...). Thread-safe; a second
/// request for one key in a process returns the same object. Throws
/// brisk::Error naming `compile` with the compiler's messages when the
/// compiler fails or does not run.
/// `unkeyed_flags` go first on the command line and not into the key: they
/// must not change the object (the include directory of a precompiled
/// header, whose content is keyed by the caller).
const SharedObject& compile_shared_object(const std::string& source, const std::vector<std::string>& flags,
                                          const std::string& isa, const std::vector<std::string>& unkeyed_flags = {});
/// A precompiled header of `header_path` (included as `include_name`, e.g.
/// "compile/cpu_prelude.h") for `flags`, built once and cached on disk like
/// the objects (key: `content_hash`, which must cover every header it
/// includes, the flags, the compiler version and `isa`). Returns the
/// directory to put first on the include path (-I), or "" when the compiler
/// could not build it (compile without it: GCC falls back to the header).
std::string precompiled_header_dir(const std::string& header_path, const std::string& include_name,
                                   const std::vector<std::string>& flags, const std::string& isa,
                                   const std::string& content_hash);
/// The 32-hex-digit hash the cache keys use.
std::string hash_text(const std::string& text);
/// hash_text of files' paths and contents (the headers generated code
/// includes: part of every cache key); throws brisk::Error naming `compile`
/// when one cannot be read (`needed_by`: "generated CPU kernels", ...).
std::string hash_files(const std::vector<std::string>& paths, const char* needed_by);
/// A file's content; false when it cannot be read.
bool read_cache_file(const std::string& path, std::string& out);
/// Writes `bytes` to `path` through a temporary of this process and a
/// rename, so that concurrent writers of one key never leave a torn file;
/// false (and no file) on failure.
bool write_cache_file(const std::string& path, const std::string& bytes);
/// The address of an `extern "C"` symbol of `so`; throws brisk::Error naming
/// `compile` when it is missing.
void* symbol(const SharedObject& so, const char* name);

/// What the toolchain did in this process (counters since the start or the
/// last reset_toolchain_stats()).
struct ToolchainStats {
  int64_t compiles = 0;      ///< compiler runs that succeeded
  int64_t disk_hits = 0;     ///< objects loaded from the disk cache
  int64_t memory_hits = 0;   ///< requests answered by the in-process memo
  int64_t failures = 0;      ///< compiler runs that failed
  double compile_seconds = 0;  ///< wall time inside the compiler (successful runs)
  double load_seconds = 0;     ///< wall time of disk hits (check + dlopen)
  int64_t pch_builds = 0;      ///< precompiled headers built
  double pch_seconds = 0;      ///< wall time building them
};
ToolchainStats toolchain_stats();
void reset_toolchain_stats();
/// Tests: forgets the in-process memo, so that the next request goes to the
/// disk cache (the objects stay loaded).
void forget_loaded_for_testing();

}  // namespace brisk::jit
