// Where brisk finds cuDNN, whether it could, and (inside the library only)
// the table of the cuDNN functions it calls.
//
// cuDNN is not linked: libcudnn.so.9 is opened with dlopen at the first
// convolution on a CUDA tensor (Note [Lazy CUDA libraries] in cublas.cpp;
// the loader is in cudnn_loader.cpp). The first part of this header needs no
// CUDA header, so host tests include it; its entry points are declared weak
// so that a test links against a build without the CUDA backend, where they
// do not exist (their address is null). The function table needs <cudnn.h>
// and is seen only by the library's own sources (BRISK_HAVE_CUDA).
#pragma once
#include <string>
#include <vector>

#include "backend/cuda/dl_library.h"

namespace brisk::cuda::detail {

/// The outcome of opening cuDNN.
struct CudnnLibrary : DlLibrary {
  size_t version = 0;  ///< cudnnGetVersion(), e.g. 91900 for 9.19.0, when loaded
};

/// Opens cuDNN on the first call (once per process, thread-safe) and
/// resolves the functions brisk calls. Never throws and needs no GPU; the
/// library stays mapped until the process ends.
[[gnu::weak]] const CudnnLibrary& cudnn_library();

/// The names dlopen is given, in order: the soname (found through
/// LD_LIBRARY_PATH, the ld.so cache and the default paths), then
/// $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64, as for cuBLAS.
[[gnu::weak]] std::vector<std::string> cudnn_search_paths();

/// The names of every cuDNN function brisk resolves (what a loaded library's
/// `symbols` lists).
[[gnu::weak]] std::vector<std::string> cudnn_required_symbols();

}  // namespace brisk::cuda::detail

#ifdef BRISK_HAVE_CUDA
#include <cudnn.h>

namespace brisk::cuda::detail {

/// The cuDNN functions brisk calls (the legacy convolution API, still part
/// of cuDNN 9), resolved with dlsym; the types come from the cuDNN headers.
struct CudnnApi {
  decltype(&cudnnGetVersion) get_version;
  decltype(&cudnnGetErrorString) error_string;
  decltype(&cudnnCreate) create;
  decltype(&cudnnSetStream) set_stream;
  decltype(&cudnnCreateTensorDescriptor) create_tensor;
  decltype(&cudnnSetTensor4dDescriptor) set_tensor_4d;
  decltype(&cudnnDestroyTensorDescriptor) destroy_tensor;
  decltype(&cudnnCreateFilterDescriptor) create_filter;
  decltype(&cudnnSetFilter4dDescriptor) set_filter_4d;
  decltype(&cudnnDestroyFilterDescriptor) destroy_filter;
  decltype(&cudnnCreateConvolutionDescriptor) create_conv;
  decltype(&cudnnSetConvolution2dDescriptor) set_conv_2d;
  decltype(&cudnnSetConvolutionGroupCount) set_group_count;
  decltype(&cudnnSetConvolutionMathType) set_math_type;
  decltype(&cudnnDestroyConvolutionDescriptor) destroy_conv;

  decltype(&cudnnGetConvolutionForwardAlgorithmMaxCount) fwd_max_count;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) fwd_get_v7;
  decltype(&cudnnFindConvolutionForwardAlgorithmEx) fwd_find_ex;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) fwd_workspace;
  decltype(&cudnnConvolutionForward) fwd;

  decltype(&cudnnGetConvolutionBackwardDataAlgorithmMaxCount) bwd_data_max_count;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) bwd_data_get_v7;
  decltype(&cudnnFindConvolutionBackwardDataAlgorithmEx) bwd_data_find_ex;
  decltype(&cudnnGetConvolutionBackwardDataWorkspaceSize) bwd_data_workspace;
  decltype(&cudnnConvolutionBackwardData) bwd_data;

  decltype(&cudnnGetConvolutionBackwardFilterAlgorithmMaxCount) bwd_filter_max_count;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) bwd_filter_get_v7;
  decltype(&cudnnFindConvolutionBackwardFilterAlgorithmEx) bwd_filter_find_ex;
  decltype(&cudnnGetConvolutionBackwardFilterWorkspaceSize) bwd_filter_workspace;
  decltype(&cudnnConvolutionBackwardFilter) bwd_filter;
};

/// The table; throws brisk::Error "[op] cuDNN could not be loaded: <why>"
/// when the library or one of the functions is missing.
const CudnnApi& cudnn_api(const char* op);

/// Throws "[op] cuDNN error: <status> in <what>" unless s is success.
void cudnn_check(cudnnStatus_t s, const char* op, const char* what);

}  // namespace brisk::cuda::detail
#endif  // BRISK_HAVE_CUDA
