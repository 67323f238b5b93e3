// arange and linspace filled on the device (src/ops/factories.cpp routes
// CUDA outputs here). The values are the CPU's, bit for bit: the same
// formulas in int64 or double, with the double multiply and add rounded
// separately (__dmul_rn / __dadd_rn: no fused multiply-add, which the CPU
// loop does not use either), then converted to the output's dtype. float64,
// int64 and float32 outputs are written directly (the conversions
// int64 -> double / float and double -> float round to nearest, as the
// CPU's static_cast); every other dtype goes through a float64 or int64
// buffer and copy_, the conversion the CPU path also ends with.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/nn_kernels.h"
#include "backend/cuda/norm_plan.h"  // elementwise_blocks
#include "brisk/ops.h"
#include "core/dispatch.h"

namespace brisk::cuda::detail {
namespace {

constexpr int kFillThreads = 256;

enum FillOut : int { kOutInt64 = 0, kOutDouble = 1, kOutFloat = 2 };

struct FillArgs {
  int64_t n;
  int mode;  // 0: arange int64, 1: arange double, 2: linspace
  int out;   // FillOut
  int64_t a, c;            // integer arange: a + i * c
  double s, st;            // double arange: s + double(i) * st
  double la, lb, lstep;    // linspace ends and step
  int64_t half;            // linspace: i < half counts from the front
};

__device__ __forceinline__ void store(void* out, int kind, int64_t i, double v) {
  if (kind == kOutDouble)
    static_cast<double*>(out)[i] = v;
  else
    static_cast<float*>(out)[i] = __double2float_rn(v);
}

__global__ void __launch_bounds__(kFillThreads) fill_kernel(void* out, const FillArgs f) {
  for (int64_t i = int64_t(blockIdx.x) * kFillThreads + threadIdx.x; i < f.n;
       i += int64_t(gridDim.x) * kFillThreads) {
    if (f.mode == 0) {
      // two's complement wrap, as the CPU's int64 loop on any real machine
      const int64_t v = int64_t(uint64_t(f.a) + uint64_t(i) * uint64_t(f.c));
      if (f.out == kOutInt64)
        static_cast<int64_t*>(out)[i] = v;
      else if (f.out == kOutDouble)
        static_cast<double*>(out)[i] = __ll2double_rn(v);
      else
        static_cast<float*>(out)[i] = __ll2float_rn(v);
    } else if (f.mode == 1) {
      store(out, f.out, i, __dadd_rn(f.s, __dmul_rn(__ll2double_rn(i), f.st)));
    } else {
      const double v = i < f.half ? __dadd_rn(f.la, __dmul_rn(f.lstep, __ll2double_rn(i)))
                                  : __dsub_rn(f.lb, __dmul_rn(f.lstep, __ll2double_rn(f.n - 1 - i)));
      store(out, f.out, i, v);
    }
  }
}

void launch_fill(const Tensor& out, FillArgs f, bool integer, const char* op) {
  BRISK_INTERNAL_ASSERT(out.is_cuda() && out.dim() == 1 && out.is_contiguous(), op,
                        ": expected a contiguous 1-D CUDA tensor");
  f.n = out.numel();
  if (f.n == 0) return;
  DeviceGuard g(out.device().index);
  // the buffer the kernel writes: the output itself when its dtype is one the
  // kernel converts to, else an int64 / float64 buffer copied with copy_
  Tensor dst = out;
  if (integer && out.dtype() == kInt64) {
    f.out = kOutInt64;
  } else if (out.dtype() == kDouble) {
    f.out = kOutDouble;
  } else if (out.dtype() == kFloat) {
    f.out = kOutFloat;
  } else {
    dst = empty({f.n}, TensorOptions(integer ? kInt64 : kDouble).device(out.device()));
    f.out = integer ? kOutInt64 : kOutDouble;
  }
  const int blocks = static_cast<int>(elementwise_blocks(f.n, sm_count(), kFillThreads));
  fill_kernel<<<blocks, kFillThreads, 0, current_stream_handle(out.device().index)>>>(dst.data_ptr(), f);
  check_launch(op);
  if (!dst.is_same(out)) Tensor(out).copy_(dst);
}

}  // namespace

void arange_fill(const Tensor& out, bool integer, int64_t a, int64_t c, double s, double st) {
  FillArgs f{};
  f.mode = integer ? 0 : 1;
  f.a = a;
  f.c = c;
  f.s = s;
  f.st = st;
  launch_fill(out, f, integer, "arange");
}

void linspace_fill(const Tensor& out, double a, double b, double step, int64_t half) {
  FillArgs f{};
  f.mode = 2;
  f.la = a;
  f.lb = b;
  f.lstep = step;
  f.half = half;
  launch_fill(out, f, false, "linspace");
}

void register_factory_kernels() {
  register_kernel<OpId::arange>(kCUDA, arange_fill);
  register_kernel<OpId::linspace>(kCUDA, linspace_fill);
}

}  // namespace brisk::cuda::detail
