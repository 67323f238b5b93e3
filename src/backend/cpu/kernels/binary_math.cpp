// CPU kernel of slot `binary_math` (Note [Binary math modes] in
// kernels/math.h): hypot, logaddexp, logaddexp2, copysign and nextafter on
// vectors with the Sleef functions PyTorch's vector loops call, xlogy and
// heaviside as PyTorch's scalar loops (it has no vector form of them).
//
// The one multiply-add, logaddexp2's log1p(.) * (1 / ln 2) + m, is fused as
// GCC fuses it in PyTorch's AVX2/AVX-512 kernels (vec::fmadd: one rounding,
// and other bits than a multiply then an add); nothing else is contracted.
#pragma GCC optimize("fp-contract=off")
#include <cmath>

#include "backend/cpu/loops.h"
#include "backend/cpu/vec_composite.h"
#include "backend/cpu/vec_loops.h"
#include "kernels/math.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

using math::BinaryMath;

using composite::logaddexp_v;
using composite::logaddexp2_v;

template <class F>
void vec_float(TensorIter& it, const char* op, const F& f) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], op, [&] { vec_binary_kernel<scalar_t>(it, f); });
}

void binary_math_kernel(TensorIter& it, const KernelArgs& a) {
  switch (static_cast<BinaryMath>(a.mode)) {
    case BinaryMath::hypot:
      return vec_float(it, "hypot", [](auto x, auto y) { return vec::hypot(x, y); });
    case BinaryMath::logaddexp:
      return vec_float(it, "logaddexp", [](auto x, auto y) { return logaddexp_v(x, y); });
    case BinaryMath::logaddexp2:
      return vec_float(it, "logaddexp2", [](auto x, auto y) { return logaddexp2_v(x, y); });
    case BinaryMath::copysign:
      return vec_float(it, "copysign", [](auto x, auto y) { return vec::copysign(x, y); });
    case BinaryMath::nextafter: {
      const ScalarType dt = it.dtypes[0];
      if (dt == kHalf)
        return binary_kernel<Half>(it, [](float x, float y) { return float(math::nextafter16(Half(x), Half(y))); });
      if (dt == kBFloat16)
        return binary_kernel<BFloat16>(
            it, [](float x, float y) { return float(math::nextafter16(BFloat16(x), BFloat16(y))); });
      return vec_float(it, "nextafter", [](auto x, auto y) { return vec::nextafter(x, y); });
    }
    case BinaryMath::xlogy:
      return BRISK_DISPATCH_FLOAT(it.dtypes[0], "xlogy", [&] {
        using M = opmath_t<scalar_t>;
        // a 16-bit log(y) is rounded to the dtype before the product (PyTorch)
        binary_kernel<scalar_t>(it, [](M x, M y) -> M { return math::xlogy_in<scalar_t>(x, y); });
      });
    case BinaryMath::heaviside:
      return BRISK_DISPATCH_ALL(it.dtypes[0], "heaviside", [&] {
        using M = opmath_t<scalar_t>;
        binary_kernel<scalar_t>(it, [](M x, M v) -> M { return math::heaviside(x, v); });
      });
    default: break;
  }
  BRISK_INTERNAL_ASSERT(false, "binary_math: mode ", a.mode, " has no CPU kernel");
}

}  // namespace

void register_binary_math_kernels() { register_kernel<OpId::binary_math>(kCPU, binary_math_kernel); }

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
