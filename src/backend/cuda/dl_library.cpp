#include "backend/cuda/dl_library.h"

#include <algorithm>
#include <cstdlib>

namespace brisk::cuda::detail {

std::vector<std::string> cuda_library_search_paths(const char* soname, std::initializer_list<const char*> subdirs) {
  std::vector<std::string> r{soname};
  auto add = [&](std::string p) {
    if (std::find(r.begin(), r.end(), p) == r.end()) r.push_back(std::move(p));
  };
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) roots.emplace_back(v);
  roots.emplace_back("/usr/local/cuda");
  for (const std::string& root : roots)
    for (const char* sub : subdirs) add(root + "/" + sub + "/" + soname);
  return r;
}

DlLibrary open_first(const std::vector<std::string>& paths) {
  DlLibrary lib;
  std::string errors;
  for (const std::string& path : paths) {
    lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle) {
      lib.path = path;
      return lib;
    }
    const char* e = dlerror();
    if (!errors.empty()) errors += "; ";
    errors += e ? e : (path + ": unknown error");
  }
  lib.error = errors;
  return lib;
}

void finish(DlLibrary& lib) {
  lib.loaded = lib.handle != nullptr && lib.error.empty();
  if (lib.handle != nullptr && !lib.error.empty()) lib.error = lib.path + ": " + lib.error;
}

}  // namespace brisk::cuda::detail
