// Loading cuBLAS at first use (Note [Lazy CUDA libraries] in
// backend/cuda/cublas.cpp). Host test: needs the CUDA toolkit's libraries
// but no GPU. It checks that brisk does not map cuBLAS at start-up, that the
// loader finds libcublas.so.13 and resolves every function brisk calls, and
// where it looks.
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "backend/cuda/cublas_loader.h"

namespace cu = brisk::cuda::detail;

namespace {

bool built_with_cuda() { return &cu::cublas_library != nullptr; }

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

TEST(CublasLoader, NotMappedUntilFirstUseThenLoaded) {
  if (!built_with_cuda()) GTEST_SKIP() << "this build of brisk has no CUDA backend";
  // Touching brisk (and its CUDA runtime) does not map cuBLAS.
  (void)brisk::cuda::is_available();
  (void)brisk::zeros({2, 2}).matmul(brisk::ones({2, 2}));
  ASSERT_FALSE(mapped("libcublas")) << "libcublas is mapped before any CUDA GEMM: is it linked?";

  const cu::CublasLibrary& lib = cu::cublas_library();
  if (!lib.loaded) {
    // Only acceptable where no candidate file exists (a machine without the
    // CUDA libraries); a library that is there must load.
    for (const std::string& p : cu::cublas_search_paths())
      if (p.find('/') != std::string::npos)
        EXPECT_FALSE(std::filesystem::exists(p)) << p << " exists but did not load: " << lib.error;
    GTEST_SKIP() << "cuBLAS not installed here: " << lib.error;
  }
  EXPECT_TRUE(lib.error.empty()) << lib.error;
  EXPECT_NE(lib.path.find("libcublas.so.13"), std::string::npos) << lib.path;
  EXPECT_TRUE(mapped("libcublas.so.13"));
  EXPECT_TRUE(mapped("libcublasLt.so.13")) << "libcublas should pull in libcublasLt from its own folder";
  for (const char* sym : {"cublasCreate_v2", "cublasSetStream_v2", "cublasSetWorkspace_v2", "cublasSetMathMode",
                          "cublasGetStatusString", "cublasGemmStridedBatchedEx", "cublasGemmStridedBatchedEx_64"})
    EXPECT_TRUE(contains(lib.symbols, sym)) << sym << " not resolved";
  // Once per process: the same object on every call.
  EXPECT_EQ(&cu::cublas_library(), &lib);
}

TEST(CublasLoader, SearchPaths) {
  if (!built_with_cuda()) GTEST_SKIP() << "this build of brisk has no CUDA backend";
  const std::vector<std::string> paths = cu::cublas_search_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), "libcublas.so.13");  // the loader's own search first
  EXPECT_TRUE(contains(paths, "/usr/local/cuda/lib64/libcublas.so.13"));
  for (size_t i = 0; i < paths.size(); ++i)
    for (size_t j = i + 1; j < paths.size(); ++j) EXPECT_NE(paths[i], paths[j]);
}
