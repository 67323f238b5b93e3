// The CUDA spellings compile's generated kernels use, for the host compiler:
// tests/compile/test_codegen_cuda.cpp compiles the generated source with the
// system C++ compiler (-include this file, -DBRISK_CUDA_HOST_EMULATION) and
// runs each kernel as one thread over the whole space, on host memory, to
// test the generated indexing, conversions and functor calls without a GPU.
// cuda_fp16.h and cuda_bf16.h have host versions of their conversions.
#pragma once
#include <cstdint>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)

struct BriskEmulatedDim {
  unsigned x = 0, y = 0, z = 0;
};
inline BriskEmulatedDim blockIdx, threadIdx, blockDim{1, 1, 1}, gridDim{1, 1, 1};

inline float __int_as_float(int v) {
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
inline double __longlong_as_double(long long v) {
  double f;
  std::memcpy(&f, &v, 8);
  return f;
}

#include <cuda_bf16.h>
#include <cuda_fp16.h>
