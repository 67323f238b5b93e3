// Loading cuDNN at first use (backend/cuda/cudnn_loader.cpp, Note [Lazy CUDA
// libraries] in backend/cuda/cublas.cpp). Host test: needs the cuDNN library
// files but no GPU. It checks that brisk does not map cuDNN at start-up or
// for CPU convolutions, that the loader finds libcudnn.so.9, resolves every
// function brisk calls and reads a cuDNN 9 version, and where it looks.
#include <gtest/gtest.h>

#include <brisk/brisk.h>
#include <brisk/nn.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/cuda/cudnn_loader.h"

namespace cu = brisk::cuda::detail;
namespace F = brisk::nn::functional;

namespace {

bool built_with_cuda() { return &cu::cudnn_library != nullptr; }

/// True when a library whose file name contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return true;
  return false;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST(CudnnLoader, NotMappedUntilFirstUseThenLoaded) {
  if (!built_with_cuda()) GTEST_SKIP() << "this build of brisk has no CUDA backend";
  // Touching brisk, its CUDA runtime and a CPU convolution does not map cuDNN.
  (void)brisk::cuda::is_available();
  const brisk::Tensor y = F::conv2d(brisk::ones({1, 2, 5, 5}), brisk::ones({3, 2, 3, 3}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 3, 3, 3}));
  ASSERT_FALSE(mapped("libcudnn")) << "libcudnn is mapped before any CUDA convolution: is it linked?";

  const cu::CudnnLibrary& lib = cu::cudnn_library();
  if (!lib.loaded) {
    // Only acceptable where no candidate file exists (a machine without
    // cuDNN); a library that is there must load.
    for (const std::string& p : cu::cudnn_search_paths())
      if (p.find('/') != std::string::npos)
        EXPECT_FALSE(std::filesystem::exists(p)) << p << " exists but did not load: " << lib.error;
    GTEST_SKIP() << "cuDNN not installed here: " << lib.error;
  }
  EXPECT_TRUE(lib.error.empty()) << lib.error;
  EXPECT_NE(lib.path.find("libcudnn.so.9"), std::string::npos) << lib.path;
  EXPECT_TRUE(mapped("libcudnn.so.9"));
  EXPECT_EQ(lib.version / 10000, 9u) << "cudnnGetVersion() = " << lib.version;
  // Every function of the table, and the ones the convolutions need by name.
  const std::vector<std::string> required = cu::cudnn_required_symbols();
  EXPECT_EQ(lib.symbols.size(), required.size());
  for (const std::string& sym : required) EXPECT_TRUE(contains(lib.symbols, sym)) << sym << " not resolved";
  for (const char* sym :
       {"cudnnCreate", "cudnnSetStream", "cudnnGetErrorString", "cudnnSetTensor4dDescriptor",
        "cudnnSetFilter4dDescriptor", "cudnnSetConvolution2dDescriptor", "cudnnSetConvolutionGroupCount",
        "cudnnSetConvolutionMathType", "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
        "cudnnConvolutionBackwardFilter", "cudnnGetConvolutionForwardAlgorithm_v7",
        "cudnnGetConvolutionBackwardDataAlgorithm_v7", "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
        "cudnnFindConvolutionForwardAlgorithmEx", "cudnnFindConvolutionBackwardDataAlgorithmEx",
        "cudnnFindConvolutionBackwardFilterAlgorithmEx", "cudnnGetConvolutionForwardWorkspaceSize",
        "cudnnGetConvolutionBackwardDataWorkspaceSize", "cudnnGetConvolutionBackwardFilterWorkspaceSize"})
    EXPECT_TRUE(contains(lib.symbols, sym)) << sym << " not resolved";
  // Once per process: the same object on every call.
  EXPECT_EQ(&cu::cudnn_library(), &lib);
}

TEST(CudnnLoader, SearchPaths) {
  if (!built_with_cuda()) GTEST_SKIP() << "this build of brisk has no CUDA backend";
  const std::vector<std::string> paths = cu::cudnn_search_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), "libcudnn.so.9");  // the loader's own search first
  EXPECT_TRUE(contains(paths, "/usr/local/cuda/lib64/libcudnn.so.9"));
  for (size_t i = 0; i < paths.size(); ++i)
    for (size_t j = i + 1; j < paths.size(); ++j) EXPECT_NE(paths[i], paths[j]);
}
