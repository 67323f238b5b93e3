// Loading cuBLAS and handing out handles.
//
// Note [Lazy CUDA libraries]
// brisk links the CUDA runtime statically and does NOT link cuBLAS: mapping
// libcublas/libcublasLt (about 600 MB) and running their initialisers costs
// every process about 180 ms at start-up, whether or not it multiplies a
// matrix on a GPU, and the test suite starts some 2000 processes. The first
// GEMM on a CUDA tensor opens libcublas.so.13 with dlopen (its own RUNPATH
// finds libcublasLt next to it) and resolves the few functions brisk calls
// into a table (CublasApi); the cuBLAS headers provide the types and
// prototypes. If the soname is not on the loader's path, the toolkit's
// default folders are tried ($CUDA_HOME/lib64, $CUDA_PATH/lib64,
// /usr/local/cuda/lib64). A missing library is an error of the op that
// needed it ("[matmul] cuBLAS could not be loaded: ..."), not of start-up.
// The library is never closed: cuBLAS keeps threads and device state that
// must not outlive its code.
//
// Handles: one per (device, thread), created on first use and bound to the
// thread's current stream at each call (cublasSetStream only when it
// changed). cublasSetStream resets the workspace, so each (handle, stream)
// pair gets its own workspace tensor from the caching allocator, allocated on
// that stream (two streams never share scratch memory), and it is set again
// after every stream change. When a thread exits its handles return to a
// per-device pool for the next thread; handles and workspaces are never
// destroyed (the pool outlives every thread, including at process exit,
// when destroying them could race the CUDA runtime's own teardown).
#include "backend/cuda/cublas.h"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/thread_handles.h"
#include "brisk/ops.h"
#include "brisk/tensor.h"

namespace brisk::cuda::detail {
namespace {

constexpr const char* kCublasSoname = "libcublas.so.13";

struct Loaded {
  CublasLibrary info;
  CublasApi api{};
};

Loaded load() {
  Loaded l;
  l.info = open_first(cublas_search_paths());
  if (!l.info.handle) return l;
  CublasApi& a = l.api;
  resolve(l.info, "cublasCreate_v2", a.create);
  resolve(l.info, "cublasSetStream_v2", a.set_stream);
  resolve(l.info, "cublasSetWorkspace_v2", a.set_workspace);
  resolve(l.info, "cublasSetMathMode", a.set_math_mode);
  resolve(l.info, "cublasGetStatusString", a.status_string);
  resolve(l.info, "cublasGemmStridedBatchedEx", a.gemm_strided_batched_ex);
  resolve(l.info, "cublasGemmStridedBatchedEx_64", a.gemm_strided_batched_ex_64);
  finish(l.info);
  return l;
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never freed: the library stays mapped
  return *l;
}

// ---- handles ------------------------------------------------------------------------

struct HandleState {
  cublasHandle_t handle = nullptr;
  cudaStream_t bound = nullptr;
  bool bound_once = false;
  std::vector<std::pair<cudaStream_t, Tensor>> workspaces;  // one per stream it has run on
};

/// cuBLAS's recommended workspace: 32 MiB from Hopper on, 4 MiB before.
size_t workspace_bytes(int device) {
  return device_properties(device).major >= 9 ? size_t(32) << 20 : size_t(4) << 20;
}

}  // namespace

std::vector<std::string> cublas_search_paths() { return cuda_library_search_paths(kCublasSoname); }

const CublasLibrary& cublas_library() { return loaded().info; }

const CublasApi& cublas_api(const char* op) {
  const Loaded& l = loaded();
  if (BRISK_UNLIKELY(!l.info.loaded)) BRISK_FAIL(op, "cuBLAS could not be loaded: ", l.info.error);
  return l.api;
}

void cublas_check(cublasStatus_t s, const char* op, const char* what) {
  if (BRISK_LIKELY(s == CUBLAS_STATUS_SUCCESS)) return;
  const CublasApi& a = cublas_api(op);
  BRISK_FAIL(op, "cuBLAS error: ", a.status_string ? a.status_string(s) : "unknown", " (status ", int(s), ") in ",
             what);
}

cublasHandle_t cublas_handle(const char* op) {
  const CublasApi& api = cublas_api(op);
  const int dev = current_device_index();
  HandleState* st = &ThreadStates<HandleState>::get(dev, op, "cuBLAS", [&] {
    auto fresh = std::make_unique<HandleState>();
    cublas_check(api.create(&fresh->handle), op, "cublasCreate");
    // TF32 is chosen per call through the compute type (Note [TF32] in gemm.cpp).
    cublas_check(api.set_math_mode(fresh->handle, CUBLAS_DEFAULT_MATH), op, "cublasSetMathMode");
    return fresh.release();
  });
  cudaStream_t stream = current_stream_handle(dev);
  if (!st->bound_once || st->bound != stream) {
    cublas_check(api.set_stream(st->handle, stream), op, "cublasSetStream");
    Tensor* ws = nullptr;
    for (auto& [s, t] : st->workspaces)
      if (s == stream) ws = &t;
    if (!ws) {
      const int64_t bytes = int64_t(workspace_bytes(dev));
      st->workspaces.emplace_back(stream, empty({bytes}, TensorOptions(kUInt8).device(Device(kCUDA, dev))));
      ws = &st->workspaces.back().second;
    }
    cublas_check(api.set_workspace(st->handle, ws->data_ptr(), size_t(ws->numel())), op, "cublasSetWorkspace");
    st->bound = stream;
    st->bound_once = true;
  }
  return st->handle;
}

}  // namespace brisk::cuda::detail
