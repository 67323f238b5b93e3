// CUDA kernels of the binary, ternary, comparison, where, fill and copy ops:
// the same modes, dtypes and formulas (src/kernels/math.h) as the CPU's
// src/backend/cpu/kernels/elementwise.cpp, on the engine of loops.cuh.
//
// Instantiations are kept few (Note [CUDA kernel families]): one functor per
// family and dtype with the op as a runtime mode, so the whole file holds
// about fifty (family, dtype) kernels, each in three loops.
#include <cstring>
#include <type_traits>

#include "backend/cuda/loops.cuh"
#include "backend/cuda/pointwise_ops.cuh"
#include "core/dispatch.h"
#include "kernels/math.h"

namespace brisk::cuda::detail {
namespace {

// Note [CUDA kernel families]
// A family is a functor over math values with a `mode` switch: every op of
// the family shares one kernel per dtype. The switch is uniform across a
// launch, so it costs a few instructions next to the memory traffic. Modes
// that make no sense for a dtype (atan2 on integers) compile to nothing
// there; the host dispatch (the same BRISK_DISPATCH_* sets as the CPU's)
// never selects them.

/// T: brisk's dtype type (float, Half, int64_t, ...).
template <class T>
void launch_arith(TensorIter& it, const char* op, Arith mode, const Scalar& s) {
  using S = storage_t<T>;
  using M = math_t<S>;
  gpu_kernel<S, S, S>(it, op, ArithOp<M, T>{mode, s.to<M>()});
}

void add_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "add", [&] {
    using M = opmath_t<scalar_t>;
    const bool unit = std::is_same_v<scalar_t, bool> || a.s0.to<M>() == M(1);
    launch_arith<scalar_t>(it, "add", unit ? Arith::Add : Arith::AddAlpha, a.s0);
  });
}
void mul_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "mul", [&] { launch_arith<scalar_t>(it, "mul", Arith::Mul, Scalar(0)); });
}
// mode: 0 true division, 1 trunc, 2 floor.
void div_kernel(TensorIter& it, const KernelArgs& a) {
  const Arith m = a.mode == 1 ? Arith::DivTrunc : a.mode == 2 ? Arith::DivFloor : Arith::Div;
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "div", [&] { launch_arith<scalar_t>(it, "div", m, Scalar(0)); });
}
void remainder_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "remainder",
                         [&] { launch_arith<scalar_t>(it, "remainder", Arith::Remainder, Scalar(0)); });
}
void fmod_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "fmod", [&] { launch_arith<scalar_t>(it, "fmod", Arith::Fmod, Scalar(0)); });
}
void pow_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "pow", [&] {
    using M = opmath_t<scalar_t>;
    Arith m = Arith::Pow;
    // tensor ** 2 as x * x, like the CPU (an exponent on the device is not
    // read back: pow gives the same value); bfloat16 ** 3 and ** -2 round
    // x * x to bfloat16 first, as the CPU and PyTorch.
    if (it.ndim == 1 && it.strides[2][0] == 0 && is_host_operand(it, 2)) {
      scalar_t e;
      std::memcpy(&e, it.data[2], sizeof(e));
      if (static_cast<M>(e) == M(2)) m = Arith::Square;
      if constexpr (std::is_same_v<scalar_t, BFloat16>) {
        if (static_cast<M>(e) == M(3)) m = Arith::CubeSteps;
        if (static_cast<M>(e) == M(-2)) m = Arith::InvSquareSteps;
      }
    }
    launch_arith<scalar_t>(it, "pow", m, Scalar(0));
  });
}
void minimum_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "minimum", [&] { launch_arith<scalar_t>(it, "minimum", Arith::Minimum, Scalar(0)); });
}
void maximum_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "maximum", [&] { launch_arith<scalar_t>(it, "maximum", Arith::Maximum, Scalar(0)); });
}
void atan2_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "atan2", [&] { launch_arith<scalar_t>(it, "atan2", Arith::Atan2, Scalar(0)); });
}
// slot binary_math: the row's mode as an Arith mode (the host checks dtypes)
void binary_math_kernel(TensorIter& it, const KernelArgs& a) {
  using math::BinaryMath;
  const auto m = static_cast<BinaryMath>(a.mode);
  if (m == BinaryMath::heaviside)
    return BRISK_DISPATCH_ALL(it.dtypes[0], "heaviside",
                              [&] { launch_arith<scalar_t>(it, "heaviside", Arith::Heaviside, Scalar(0)); });
  Arith am = Arith::Hypot;
  switch (m) {
    case BinaryMath::hypot: am = Arith::Hypot; break;
    case BinaryMath::logaddexp: am = Arith::LogAddExp; break;
    case BinaryMath::logaddexp2: am = Arith::LogAddExp2; break;
    case BinaryMath::copysign: am = Arith::Copysign; break;
    case BinaryMath::nextafter: am = Arith::Nextafter; break;
    case BinaryMath::xlogy: am = Arith::Xlogy; break;
    default: BRISK_INTERNAL_ASSERT(false, "binary_math: mode ", a.mode, " has no CUDA kernel");
  }
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "binary_math", [&] { launch_arith<scalar_t>(it, "binary_math", am, Scalar(0)); });
}
void bitwise_kernel(TensorIter& it, const KernelArgs& a) {
  Arith m = Arith::BitXor;
  switch (static_cast<BitwiseMode>(a.mode)) {
    case BitwiseMode::And: m = Arith::BitAnd; break;
    case BitwiseMode::Or: m = Arith::BitOr; break;
    case BitwiseMode::Xor: m = Arith::BitXor; break;
    case BitwiseMode::LeftShift: m = Arith::ShiftLeft; break;
    case BitwiseMode::RightShift: m = Arith::ShiftRight; break;
  }
  BRISK_DISPATCH_INTEGRAL(it.dtypes[0], "bitwise", [&] { launch_arith<scalar_t>(it, "bitwise", m, Scalar(0)); });
}
// grad where self > threshold (or self is nan), else 0: ReLU's backward in one pass.
void threshold_backward_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "threshold_backward",
                       [&] { launch_arith<scalar_t>(it, "threshold_backward", Arith::ThresholdBackward, a.s0); });
}

template <class T>
void launch_ternary(TensorIter& it, const char* op, Ternary mode, const Scalar& v) {
  using S = storage_t<T>;
  using M = math_t<S>;
  gpu_kernel<S, S, S, S>(it, op, TernaryOp<M>{mode, v.to<M>()});
}

void lerp_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "lerp", [&] {
    if (a.has_s0)  // scalar weight, kept in opmath precision
      launch_arith<scalar_t>(it, "lerp", Arith::Lerp, a.s0);
    else
      launch_ternary<scalar_t>(it, "lerp", Ternary::Lerp, Scalar(0));
  });
}
void addcmul_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "addcmul", [&] { launch_ternary<scalar_t>(it, "addcmul", Ternary::Addcmul, a.s0); });
}
void addcdiv_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "addcdiv", [&] { launch_ternary<scalar_t>(it, "addcdiv", Ternary::Addcdiv, a.s0); });
}
void clamp_tensor_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "clamp", [&] { launch_ternary<scalar_t>(it, "clamp", Ternary::Clamp, Scalar(0)); });
}

template <class T>
void launch_pred(TensorIter& it, const char* op, Pred mode, double rtol = 0, double atol = 0, bool equal_nan = false) {
  using S = storage_t<T>;
  using M = math_t<S>;
  using tol_t = typename PredOp<M>::tol_t;
  // The tolerances in the math type, as the CPU reads them (Scalar::to<M>).
  gpu_kernel<bool, S, S>(it, op, PredOp<M, T>{mode, Scalar(rtol).to<tol_t>(), Scalar(atol).to<tol_t>(), equal_nan});
}

void compare_kernel(TensorIter& it, const KernelArgs& a) {
  const Pred m = static_cast<Pred>(static_cast<int>(Pred::Eq) + a.mode);  // CompareMode order
  BRISK_DISPATCH_ALL(it.dtypes[1], "compare", [&] { launch_pred<scalar_t>(it, "compare", m); });
}
void logical_kernel(TensorIter& it, const KernelArgs& a) {
  const Pred m = static_cast<Pred>(static_cast<int>(Pred::And) + a.mode);  // LogicalMode order
  BRISK_DISPATCH_ALL(it.dtypes[1], "logical", [&] { launch_pred<scalar_t>(it, "logical", m); });
}
void isclose_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[1], "isclose", [&] {
    launch_pred<scalar_t>(it, "isclose", Pred::IsClose, a.s0.to_double(), a.s1.to_double(), a.mode != 0);
  });
}
static_assert(int(CompareMode::Ge) == 5 && int(LogicalMode::Xor) == 2, "Pred follows CompareMode and LogicalMode");

void where_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "where", [&] {
    using S = storage_t<scalar_t>;
    gpu_kernel<S, bool, S, S>(it, "where", WhereOp<math_t<S>>{});
  });
}

void fill_bits(TensorIter& it, uint64_t bits, size_t size) {
  // A dense output whose value repeats one byte (zero_(), fill_(0)): memset.
  unsigned char bytes[8];
  std::memcpy(bytes, &bits, sizeof(bytes));
  bool same = true;
  for (size_t i = 1; i < size; ++i) same = same && bytes[i] == bytes[0];
  if (same && it.ndim == 1 && it.strides[0][0] == static_cast<int64_t>(size)) {
    DeviceGuard guard(iter_device(it));
    BRISK_CUDA_CHECK(cudaMemsetAsync(it.data[0], bytes[0], static_cast<size_t>(it.numel) * size, current_stream_handle()),
                     "fill_");
    return;
  }
  switch (size) {
    case 1: return gpu_kernel<uint8_t>(it, "fill_", FillOp<uint8_t>{static_cast<uint8_t>(bits)});
    case 2: return gpu_kernel<uint16_t>(it, "fill_", FillOp<uint16_t>{static_cast<uint16_t>(bits)});
    case 4: return gpu_kernel<uint32_t>(it, "fill_", FillOp<uint32_t>{static_cast<uint32_t>(bits)});
    default: return gpu_kernel<uint64_t>(it, "fill_", FillOp<uint64_t>{bits});
  }
}

void fill_kernel(TensorIter& it, const KernelArgs& a) {
  if (it.numel == 0) return;
  BRISK_DISPATCH_ALL(it.dtypes[0], "fill_", [&] {
    const scalar_t v = a.s0.to<scalar_t>();
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(v));
    fill_bits(it, bits, sizeof(v));
  });
}

void copy_kernel(TensorIter& it, const KernelArgs&) {
  if (it.numel == 0) return;
  const ScalarType out = it.dtypes[0], in = it.dtypes[1];
  if (out == in) {
    const int64_t es = static_cast<int64_t>(element_size(out));
    if (it.ndim == 1 && it.strides[0][0] == es && it.strides[1][0] == es && !is_host_operand(it, 1)) {
      DeviceGuard guard(iter_device(it));
      BRISK_CUDA_CHECK(cudaMemcpyAsync(it.data[0], it.data[1], static_cast<size_t>(it.numel * es),
                                       cudaMemcpyDeviceToDevice, current_stream_handle()),
                       "copy_");
      return;
    }
    switch (es) {
      case 1: return gpu_kernel<uint8_t, uint8_t>(it, "copy_", Identity{});
      case 2: return gpu_kernel<uint16_t, uint16_t>(it, "copy_", Identity{});
      case 4: return gpu_kernel<uint32_t, uint32_t>(it, "copy_", Identity{});
      default: return gpu_kernel<uint64_t, uint64_t>(it, "copy_", Identity{});
    }
  }
  // float <-> float16/bfloat16 (mixed precision's casts) get static types and
  // with them the vectorised contiguous loop.
  if (out == kFloat && in == kHalf) return gpu_kernel<float, __half>(it, "copy_", Identity{});
  if (out == kHalf && in == kFloat) return gpu_kernel<__half, float>(it, "copy_", Identity{});
  if (out == kFloat && in == kBFloat16) return gpu_kernel<float, __nv_bfloat16>(it, "copy_", Identity{});
  if (out == kBFloat16 && in == kFloat) return gpu_kernel<__nv_bfloat16, float>(it, "copy_", Identity{});
  // Other converting copies: one kernel per destination dtype; the source
  // dtype is a runtime switch inside the load (AnyDtype).
  BRISK_DISPATCH_ALL(out, "copy_", [&] {
    using S = storage_t<scalar_t>;
    gpu_kernel<S, AnyDtype<S>>(it, "copy_", Identity{});
  });
}

}  // namespace

void register_elementwise_kernels() {
  register_kernel<OpId::copy>(kCUDA, copy_kernel);
  register_kernel<OpId::fill>(kCUDA, fill_kernel);
  register_kernel<OpId::add>(kCUDA, add_kernel);
  register_kernel<OpId::mul>(kCUDA, mul_kernel);
  register_kernel<OpId::div>(kCUDA, div_kernel);
  register_kernel<OpId::remainder>(kCUDA, remainder_kernel);
  register_kernel<OpId::fmod>(kCUDA, fmod_kernel);
  register_kernel<OpId::pow>(kCUDA, pow_kernel);
  register_kernel<OpId::minimum>(kCUDA, minimum_kernel);
  register_kernel<OpId::maximum>(kCUDA, maximum_kernel);
  register_kernel<OpId::atan2>(kCUDA, atan2_kernel);
  register_kernel<OpId::binary_math>(kCUDA, binary_math_kernel);
  register_kernel<OpId::compare>(kCUDA, compare_kernel);
  register_kernel<OpId::logical>(kCUDA, logical_kernel);
  register_kernel<OpId::bitwise>(kCUDA, bitwise_kernel);
  register_kernel<OpId::lerp>(kCUDA, lerp_kernel);
  register_kernel<OpId::addcmul>(kCUDA, addcmul_kernel);
  register_kernel<OpId::addcdiv>(kCUDA, addcdiv_kernel);
  register_kernel<OpId::clamp_tensor>(kCUDA, clamp_tensor_kernel);
  register_kernel<OpId::where>(kCUDA, where_kernel);
  register_kernel<OpId::isclose>(kCUDA, isclose_kernel);
  register_kernel<OpId::threshold_backward>(kCUDA, threshold_backward_kernel);
  // clamp (scalar bounds) shares the unary kernels: src/backend/cuda/unary.cu.
}

}  // namespace brisk::cuda::detail
