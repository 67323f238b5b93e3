// NVRTC for compile's generated CUDA kernels (src/compile/codegen_cuda.cpp):
// libnvrtc opened on first use like cuBLAS (Note [Lazy CUDA libraries] in
// docs/design/cuda.md), programs compiled to SASS for the device (a cubin),
// cached on disk next to the CPU code generator's objects, loaded as
// context-independent libraries (cudaLibraryLoadData) and launched with
// cudaLaunchKernel on the current stream.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/dl_library.h"
#include "brisk/error.h"
#include "compile/codegen_cuda.h"
#include "compile/toolchain.h"

namespace brisk::cuda::detail {
namespace {

// The few NVRTC entry points brisk calls (nvrtc.h's signatures; no header
// needed: the handle is opaque and the results are ints).
using nvrtcProgram = void*;
struct NvrtcApi {
  int (*version)(int*, int*) = nullptr;
  int (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  int (*log_size)(nvrtcProgram, size_t*) = nullptr;
  int (*log)(nvrtcProgram, char*) = nullptr;
  int (*cubin_size)(nvrtcProgram, size_t*) = nullptr;
  int (*cubin)(nvrtcProgram, char*) = nullptr;
  int (*destroy)(nvrtcProgram*) = nullptr;
  const char* (*error_string)(int) = nullptr;
};

struct Loaded {
  DlLibrary info;
  NvrtcApi api;
};

Loaded load() {
  Loaded l;
  std::vector<std::string> paths;
  for (const char* so : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
    for (auto& p : cuda_library_search_paths(so)) paths.push_back(p);
  l.info = open_first(paths);
  if (!l.info.handle) return l;
  NvrtcApi& a = l.api;
  resolve(l.info, "nvrtcVersion", a.version);
  resolve(l.info, "nvrtcCreateProgram", a.create);
  resolve(l.info, "nvrtcCompileProgram", a.compile);
  resolve(l.info, "nvrtcGetProgramLogSize", a.log_size);
  resolve(l.info, "nvrtcGetProgramLog", a.log);
  resolve(l.info, "nvrtcGetCUBINSize", a.cubin_size);
  resolve(l.info, "nvrtcGetCUBIN", a.cubin);
  resolve(l.info, "nvrtcDestroyProgram", a.destroy);
  resolve(l.info, "nvrtcGetErrorString", a.error_string);
  finish(l.info);
  return l;
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never freed: the library stays mapped
  return *l;
}

std::string nvrtc_status() {
  const Loaded& l = loaded();
  return l.info.loaded ? "" : "NVRTC is not available (" + l.info.error + ")";
}

std::string nvrtc_version() {
  const Loaded& l = loaded();
  if (!l.info.loaded) return "";
  int major = 0, minor = 0;
  l.api.version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

/// The content of the headers the generated code includes (in the key).
const std::string& prelude_hash() {
  static const std::string h = jit::hash_files(jit::cuda_prelude_headers(), "generated CUDA kernels");
  return h;
}

std::string device_arch() {
  const cudaDeviceProp& p = device_properties();
  return "sm_" + std::to_string(p.major) + std::to_string(p.minor);
}

std::mutex g_mu;
std::map<std::string, std::string> g_memo;  // key -> cubin

std::string compile(const std::string& source, const std::string& arch_in) {
  const std::string arch = arch_in.empty() ? device_arch() : arch_in;
  const Loaded& l = loaded();
  BRISK_CHECK(l.info.loaded, "compile", "generating CUDA kernels needs NVRTC, which could not be opened: ", l.info.error,
              " (install the CUDA toolkit's libnvrtc, or compile with CompileOptions().set_fuse(false))");
  // (no -pch: the prelude parses in about 40 ms since the standard headers
  // of src/compile/nvrtc_std stopped including libcu++, and building a
  // precompiled header costs the first program of a process 50 ms more
  // than it saves each later one)
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "-std=c++17", "-default-device", "--fmad=true",
                                   "-DBRISK_NVRTC=1"};
  for (auto& o : jit::cuda_include_options()) opts.push_back(o);
  std::string key_text = source + "\n" + nvrtc_version() + "\n" + prelude_hash();
  for (auto& o : opts) key_text += "\n" + o;
  const std::string key = jit::hash_text(key_text);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (auto it = g_memo.find(key); it != g_memo.end()) return it->second;
  }
  const std::string path = jit::cache_dir() + "/" + key + ".cubin";
  std::string cubin;
  if (!jit::read_cache_file(path, cubin) || cubin.empty()) {
    nvrtcProgram prog = nullptr;
    int rc = l.api.create(&prog, source.c_str(), "brisk_compiled.cu", 0, nullptr, nullptr);
    BRISK_CHECK(rc == 0, "compile", "nvrtcCreateProgram failed: ", l.api.error_string(rc));
    std::vector<const char*> argv;
    for (auto& o : opts) argv.push_back(o.c_str());
    rc = l.api.compile(prog, static_cast<int>(argv.size()), argv.data());
    size_t log_size = 0;
    l.api.log_size(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size) l.api.log(prog, log.data());
    if (rc != 0) {
      l.api.destroy(&prog);
      // the source next to the cache, for the bug report
      const std::string src_path = jit::cache_dir() + "/" + key + ".failed.cu";
      jit::write_cache_file(src_path, source);
      BRISK_CHECK(false, "compile", "NVRTC ", nvrtc_version(), " failed to compile a generated CUDA kernel for ", arch,
                  " (", l.api.error_string(rc), "; the source is ", src_path, "):\n", log);
    }
    size_t n = 0;
    l.api.cubin_size(prog, &n);
    cubin.assign(n, '\0');
    l.api.cubin(prog, cubin.data());
    l.api.destroy(&prog);
    jit::write_cache_file(path, cubin);  // (a failed write only costs the next process a compile)
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_memo[key] = cubin;
  return cubin;
}

std::vector<void*> load_kernels(const std::string& cubin, const std::vector<std::string>& names) {
  cudaLibrary_t lib = nullptr;
  BRISK_CUDA_CHECK(cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), "compile");
  std::vector<void*> out;
  for (const std::string& n : names) {
    cudaKernel_t k = nullptr;
    BRISK_CUDA_CHECK(cudaLibraryGetKernel(&k, lib, n.c_str()), "compile");
    out.push_back(reinterpret_cast<void*>(k));
  }
  return out;  // the library stays loaded: the graph's kernels live as long as the process
}

void launch(void* kernel, int64_t total, const void* args, size_t) {
  const int64_t blocks = std::min<int64_t>(ceil_div(total, 256), int64_t(sm_count()) * 32);
  void* argv[] = {const_cast<void*>(args)};
  BRISK_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(static_cast<unsigned>(blocks)), dim3(256),
                                    argv, 0, current_stream_handle()),
                   "compile");
}

const jit::CudaJit kJit = {&nvrtc_status, &nvrtc_version, &compile, &load_kernels, &launch};

}  // namespace

void register_nvrtc() { jit::set_cuda_jit(&kJit); }

}  // namespace brisk::cuda::detail
