// The CPU kernels of the arange and linspace rows (core/dispatch.h): the
// values in int64 or double, then converted to the output's dtype by copy_
// (Note [Integer arange and linspace] in ops/factories.cpp).
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/tensor_create.h"

// The values must not depend on the ISA variant this file is compiled for:
// with FMA available GCC would contract s + i * st into one fused
// multiply-add in the avx2/avx512 variants (a different rounding from the
// base variant and from the CUDA fill, which rounds both steps).
#pragma GCC optimize("fp-contract=off")

namespace brisk::cpu {
namespace BRISK_CPU_ISA {
namespace {

void arange_kernel(const Tensor& out, bool integer, int64_t a, int64_t c, double s, double st) {
  const int64_t n = out.numel();
  Tensor buf = detail::make_tensor({n}, {}, integer ? kInt64 : kDouble, kCPU);
  if (integer) {
    int64_t* p = buf.data_ptr<int64_t>();
    // two's complement wrap, as the CUDA fill
    for (int64_t i = 0; i < n; ++i) p[i] = int64_t(uint64_t(a) + uint64_t(i) * uint64_t(c));
  } else {
    double* p = buf.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) p[i] = s + static_cast<double>(i) * st;
  }
  Tensor(out).copy_(buf);
}

void linspace_kernel(const Tensor& out, double a, double b, double step, int64_t half) {
  const int64_t steps = out.numel();
  Tensor dbl = detail::make_tensor({steps}, {}, kDouble, kCPU);
  double* p = dbl.data_ptr<double>();
  for (int64_t i = 0; i < steps; ++i)
    p[i] = i < half ? a + step * static_cast<double>(i) : b - step * static_cast<double>(steps - 1 - i);
  Tensor(out).copy_(dbl);
}

}  // namespace

void register_factory_kernels() {
  register_kernel<OpId::arange>(kCPU, arange_kernel);
  register_kernel<OpId::linspace>(kCPU, linspace_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace brisk::cpu
