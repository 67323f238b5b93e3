// Opening the CUDA libraries that brisk does not link (Note [Lazy CUDA
// libraries] in docs/design/cuda.md): cuBLAS, cuDNN and CUPTI are opened
// with dlopen on first use and their functions resolved into tables. No
// CUDA header here: host tests include the loaders' headers.
#pragma once
#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace brisk::cuda::detail {

/// The outcome of opening a library and resolving its functions.
struct DlLibrary {
  bool loaded = false;
  std::string path;                  ///< what dlopen accepted: the soname or a full path
  std::string error;                 ///< why not, when !loaded (dlerror() text, missing symbols)
  std::vector<std::string> symbols;  ///< the functions resolved
  void* handle = nullptr;            ///< never closed: the library stays mapped
};

/// The names dlopen is given, in order: the soname (found through
/// LD_LIBRARY_PATH, the ld.so cache and the default paths), then
/// <root>/<subdir>/<soname> for root in $CUDA_HOME, $CUDA_PATH and
/// /usr/local/cuda and each of `subdirs`; duplicates removed.
std::vector<std::string> cuda_library_search_paths(const char* soname,
                                                   std::initializer_list<const char*> subdirs = {"lib64"});

/// dlopen (RTLD_NOW | RTLD_LOCAL) of the first path that opens; when none
/// does, `error` lists every attempt's dlerror().
DlLibrary open_first(const std::vector<std::string>& paths);

/// Resolves `name` into `fn`, noting it in `lib.symbols`, or in `lib.error`
/// when the library lacks it.
template <class Fn>
void resolve(DlLibrary& lib, const char* name, Fn& fn) {
  dlerror();
  fn = reinterpret_cast<Fn>(dlsym(lib.handle, name));
  if (fn) {
    lib.symbols.push_back(name);
  } else {
    if (!lib.error.empty()) lib.error += "; ";
    lib.error += std::string("symbol ") + name + " not found";
  }
}

/// After the resolves: `loaded` when nothing failed, else the error is
/// prefixed with the library's path.
void finish(DlLibrary& lib);

}  // namespace brisk::cuda::detail
