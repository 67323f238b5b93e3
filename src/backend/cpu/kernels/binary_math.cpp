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
#include "backend/cpu/vec_loops.h"
#include "kernels/math.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

using math::BinaryMath;

template <class V>
inline V nan_max(V a, V b) {  // PyTorch's vec::maximum: NaN if either is
  const V m = a < b ? b : a;
  return ((a != a) | (b != b)) ? a + b : m;
}
template <class V>
inline V neg_abs(V x) {
  return x < V{} ? x : -x;  // -|x|; -0.0 for +-0 (exp gives 1 either way)
}
template <class V>
inline V logaddexp_v(V a, V b) {
  const V inf = vec::splat<V>(INFINITY);
  const V r = nan_max(a, b) + vec::log1p(vec::exp(neg_abs(a - b)));
  return ((a == b) & (vec::abs(a) == inf)) ? a : r;
}
template <class V>
inline V logaddexp2_v(V a, V b) {
  const V inf = vec::splat<V>(INFINITY);
  // 1 / ln 2 rounded to the vector's element type, as PyTorch's constant
  const V inv_log_2 = vec::splat<V>(vec::is_float_vec<V> ? double(float(1.4426950408889634074)) : 1.4426950408889634074);
  const V l = vec::log1p(vec::exp2(neg_abs(a - b)));
  const V r = vec::fmadd(l, inv_log_2, nan_max(a, b));
  return ((a == b) & (vec::abs(a) == inf)) ? a : r;
}

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
        binary_kernel<scalar_t>(it, [](M x, M y) -> M {
          if (y != y) return y;
          if (x == M(0)) return M(0);
          // a 16-bit log(y) is rounded to the dtype before the product (PyTorch)
          return x * static_cast<M>(static_cast<scalar_t>(std::log(y)));
        });
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
