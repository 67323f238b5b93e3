// CUDA code generation for fused groups of elementwise kernel calls (Note
// [Generated CUDA kernels] in codegen_cuda.cpp): CUDA C++ source per group,
// compiled at run time with NVRTC by the CUDA backend
// (src/backend/cuda/nvrtc.cpp) into SASS for the device, cached on disk.
//
// The generator is plain C++ (it is built, and its source tested, in every
// build); compiling and launching go through CudaJit, which only a build with
// the CUDA backend provides.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compile/graph.h"

namespace brisk::jit {

/// One operand of a generated CUDA kernel: a buffer at an offset, with the
/// byte strides of the group's two dims.
struct CudaKernelArg {
  int buf = -1;
  int64_t offset = 0;  ///< bytes from the buffer's first byte
  ScalarType dtype = kFloat;
  int64_t s0 = 0, s1 = 0;  ///< byte strides (innermost dim first)
  bool read = false, written = false;
};

struct CudaKernel {
  std::string name;    ///< the extern "C" __global__ function
  std::string body;    ///< its source (no #include lines; cuda_translation_unit adds them)
  int64_t n0 = 1, n1 = 1;  ///< the iteration space, innermost first
  std::vector<CudaKernelArg> args;
  std::string ops;     ///< "mul+div+erf+add+mul" (profiler events)
  int lanes = 1;       ///< elements per thread and loop iteration (Note [Lanes of a generated kernel])
};

struct CudaCodegen {
  bool ok = false;
  std::string reason;  ///< why not, when !ok (the group's calls then run one by one)
  CudaKernel kernel;
};

/// The kernel of a group of elementwise calls over one iteration space.
/// max_lanes: elements per thread and loop iteration, at most (1, 2 or 4;
/// Note [Lanes of a generated kernel]).
CudaCodegen generate_cuda(const Graph& g, const Group& group, const std::string& name = "brisk_cuda_k",
                          int max_lanes = 1);
/// The NVRTC program of some kernels: the prelude's #include, then each body.
std::string cuda_translation_unit(const std::vector<const CudaKernel*>& kernels);
/// The include directories NVRTC needs (brisk's codegen headers, the
/// standard-header stand-ins, the CUDA toolkit's headers) as -I options.
std::vector<std::string> cuda_include_options();
/// The CUDA toolkit's include directory (cuda_fp16.h, and libcu++ in its
/// cccl/): CUDA_HOME, CUDA_PATH, the toolkit brisk was built with,
/// /usr/local/cuda.
std::string cuda_toolkit_include_dir();
/// The brisk headers generated CUDA code includes (their content is part of
/// the disk cache key).
std::vector<std::string> cuda_prelude_headers();

/// What the CUDA backend provides to compile (set when it registers its
/// kernels; null in a build without CUDA).
struct CudaJit {
  /// Whether NVRTC could be opened ("" if so, else why not).
  std::string (*nvrtc_status)();
  /// NVRTC's version, "13.0".
  std::string (*nvrtc_version)();
  /// Compiles `source` for `arch` ("sm_90"; "" = the current device) into a
  /// cubin (bytes), or from the disk cache; throws brisk::Error naming
  /// `compile` with NVRTC's log on failure.
  std::string (*compile)(const std::string& source, const std::string& arch);
  /// Loads a cubin on the current device and returns its kernels (opaque
  /// handles) by name.
  std::vector<void*> (*load)(const std::string& cubin, const std::vector<std::string>& names);
  /// Launches `kernel` with (up to) `total` threads on the current stream
  /// with one argument block of `bytes` bytes (run_cuda_kernel passes the
  /// elements divided by the kernel's lanes).
  void (*launch)(void* kernel, int64_t total, const void* args, size_t bytes);
};
const CudaJit* cuda_jit();
void set_cuda_jit(const CudaJit* j);

/// A group's kernel, ready to launch.
struct CudaGroupKernel {
  CudaCodegen code;
  void* fn = nullptr;
};
/// Generates and loads the kernels of g's fused groups (one NVRTC program);
/// groups the generator declines get ok = false.
std::vector<CudaGroupKernel> build_cuda_kernels(const Graph& g, int max_lanes = 1);
/// Runs a group's kernel on the buffers (base: each buffer's first byte).
void run_cuda_kernel(const CudaGroupKernel& k, char* const* base);

}  // namespace brisk::jit
