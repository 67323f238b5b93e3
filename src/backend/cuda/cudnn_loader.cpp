// Loading cuDNN at its first use (Note [Lazy CUDA libraries] in cublas.cpp).
//
// libcudnn.so.9 is a small front library (130 KB) that exports the whole
// API and opens its sub-libraries (libcudnn_cnn, libcudnn_ops, the engine
// libraries, some 500 MB in all) from its own folder ($ORIGIN) when they are
// first needed. brisk opens the front library on the first convolution on a
// CUDA tensor and resolves the functions it calls into CudnnApi. If the
// soname is not on the loader's path, the toolkit's folders are tried as for
// cuBLAS. A missing library or function is an error of the op that needed it
// ("[conv2d] cuDNN could not be loaded: ..."). The library is never closed.
#include "backend/cuda/cudnn_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "brisk/error.h"

namespace brisk::cuda::detail {
namespace {

constexpr const char* kCudnnSoname = "libcudnn.so.9";

struct Loaded {
  CudnnLibrary info;
  CudnnApi api{};
};

/// Calls `f(name, member)` for every function of the table, in one place so
/// that the loader and cudnn_required_symbols() cannot disagree.
template <class F>
void for_each_symbol(CudnnApi& a, F&& f) {
  f("cudnnGetVersion", a.get_version);
  f("cudnnGetErrorString", a.error_string);
  f("cudnnCreate", a.create);
  f("cudnnSetStream", a.set_stream);
  f("cudnnCreateTensorDescriptor", a.create_tensor);
  f("cudnnSetTensor4dDescriptor", a.set_tensor_4d);
  f("cudnnDestroyTensorDescriptor", a.destroy_tensor);
  f("cudnnCreateFilterDescriptor", a.create_filter);
  f("cudnnSetFilter4dDescriptor", a.set_filter_4d);
  f("cudnnDestroyFilterDescriptor", a.destroy_filter);
  f("cudnnCreateConvolutionDescriptor", a.create_conv);
  f("cudnnSetConvolution2dDescriptor", a.set_conv_2d);
  f("cudnnSetConvolutionGroupCount", a.set_group_count);
  f("cudnnSetConvolutionMathType", a.set_math_type);
  f("cudnnDestroyConvolutionDescriptor", a.destroy_conv);
  f("cudnnGetConvolutionForwardAlgorithmMaxCount", a.fwd_max_count);
  f("cudnnGetConvolutionForwardAlgorithm_v7", a.fwd_get_v7);
  f("cudnnFindConvolutionForwardAlgorithmEx", a.fwd_find_ex);
  f("cudnnGetConvolutionForwardWorkspaceSize", a.fwd_workspace);
  f("cudnnConvolutionForward", a.fwd);
  f("cudnnGetConvolutionBackwardDataAlgorithmMaxCount", a.bwd_data_max_count);
  f("cudnnGetConvolutionBackwardDataAlgorithm_v7", a.bwd_data_get_v7);
  f("cudnnFindConvolutionBackwardDataAlgorithmEx", a.bwd_data_find_ex);
  f("cudnnGetConvolutionBackwardDataWorkspaceSize", a.bwd_data_workspace);
  f("cudnnConvolutionBackwardData", a.bwd_data);
  f("cudnnGetConvolutionBackwardFilterAlgorithmMaxCount", a.bwd_filter_max_count);
  f("cudnnGetConvolutionBackwardFilterAlgorithm_v7", a.bwd_filter_get_v7);
  f("cudnnFindConvolutionBackwardFilterAlgorithmEx", a.bwd_filter_find_ex);
  f("cudnnGetConvolutionBackwardFilterWorkspaceSize", a.bwd_filter_workspace);
  f("cudnnConvolutionBackwardFilter", a.bwd_filter);
}

Loaded load() {
  Loaded l;
  static_cast<DlLibrary&>(l.info) = open_first(cudnn_search_paths());
  if (!l.info.handle) return l;
  for_each_symbol(l.api, [&](const char* name, auto& fn) { resolve(l.info, name, fn); });
  finish(l.info);
  if (!l.info.loaded) return l;
  l.info.version = l.api.get_version();  // host only: no device, no sub-library
  if (l.info.version / 10000 != 9) {
    l.info.loaded = false;
    l.info.error = l.info.path + ": cuDNN version " + std::to_string(l.info.version) + ", brisk needs cuDNN 9";
  }
  return l;
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never freed: the library stays mapped
  return *l;
}

}  // namespace

std::vector<std::string> cudnn_search_paths() { return cuda_library_search_paths(kCudnnSoname); }

std::vector<std::string> cudnn_required_symbols() {
  std::vector<std::string> r;
  CudnnApi a{};
  for_each_symbol(a, [&](const char* name, auto&) { r.push_back(name); });
  return r;
}

const CudnnLibrary& cudnn_library() { return loaded().info; }

const CudnnApi& cudnn_api(const char* op) {
  const Loaded& l = loaded();
  if (BRISK_UNLIKELY(!l.info.loaded)) BRISK_FAIL(op, "cuDNN could not be loaded: ", l.info.error);
  return l.api;
}

void cudnn_check(cudnnStatus_t s, const char* op, const char* what) {
  if (BRISK_LIKELY(s == CUDNN_STATUS_SUCCESS)) return;
  const CudnnApi& a = cudnn_api(op);
  BRISK_FAIL(op, "cuDNN error: ", a.error_string ? a.error_string(s) : "unknown", " (status ", int(s), ") in ",
             what);
}

}  // namespace brisk::cuda::detail
