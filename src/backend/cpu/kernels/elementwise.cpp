// CPU kernels of the binary, ternary, comparison and copy ops.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/loops.h"
#include "kernels/math.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

void copy_kernel(TensorIter& it, const KernelArgs&) {
  const ScalarType out = it.dtypes[0], in = it.dtypes[1];
  if (out == in) {
    const int64_t es = static_cast<int64_t>(element_size(out));
    run_parallel(it, [&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == es && s[1] == es) {
        std::memcpy(p[0], p[1], static_cast<size_t>(n * es));
        return;
      }
      // Strided: a typed loop per element size (a memcpy call per element
      // ran at under 1 GB/s).
      auto strided = [&](auto tag) {
        using U = decltype(tag);
        char* d = p[0];
        const char* src = p[1];
        for (int64_t i = 0; i < n; ++i) {
          U v;
          std::memcpy(&v, src + i * s[1], sizeof(U));
          std::memcpy(d + i * s[0], &v, sizeof(U));
        }
      };
      switch (es) {
        case 1: strided(uint8_t{}); break;
        case 2: strided(uint16_t{}); break;
        case 4: strided(uint32_t{}); break;
        case 8: strided(uint64_t{}); break;
        default:
          for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], p[1] + i * s[1], static_cast<size_t>(es));
      }
    });
    return;
  }
  BRISK_DISPATCH_ALL(out, "copy_", [&] {
    using O = scalar_t;
    BRISK_DISPATCH_ALL(in, "copy_", [&] { elementwise<O, scalar_t>(it, [](auto v) { return v; }); });
  });
}

void fill_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "fill_", [&] {
    const scalar_t v = a.s0.to<scalar_t>();
    elementwise<scalar_t>(it, [v]() { return v; });
  });
}

void add_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "add", [&] {
    using M = opmath_t<scalar_t>;
    if constexpr (std::is_same_v<scalar_t, bool>) {
      binary_kernel<bool>(it, [](bool x, bool y) { return x || y; });
    } else {
      const M alpha = a.s0.to<M>();
      if (alpha == M(1))
        binary_kernel<scalar_t>(it, [](M x, M y) { return x + y; });
      else
        binary_kernel<scalar_t>(it, [alpha](M x, M y) { return x + alpha * y; });
    }
  });
}

void mul_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "mul", [&] {
    using M = opmath_t<scalar_t>;
    if constexpr (std::is_same_v<scalar_t, bool>)
      binary_kernel<bool>(it, [](bool x, bool y) { return x && y; });
    else
      binary_kernel<scalar_t>(it, [](M x, M y) { return x * y; });
  });
}

// mode: 0 true division, 1 trunc, 2 floor.
void div_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "div", [&] {
    using M = opmath_t<scalar_t>;
    if (a.mode == 1)
      binary_kernel<scalar_t>(it, [](M x, M y) { return math::trunc_div(x, y); });
    else if (a.mode == 2)
      binary_kernel<scalar_t>(it, [](M x, M y) { return math::floor_div(x, y); });
    else
      binary_kernel<scalar_t>(it, [](M x, M y) { return x / y; });
  });
}

template <class F>
void numeric_binary(TensorIter& it, const char* op, F make) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], op, [&] { binary_kernel<scalar_t>(it, make.template operator()<opmath_t<scalar_t>>()); });
}

void remainder_kernel(TensorIter& it, const KernelArgs&) {
  numeric_binary(it, "remainder", []<class M>() { return [](M x, M y) { return math::remainder(x, y); }; });
}
void fmod_kernel(TensorIter& it, const KernelArgs&) {
  numeric_binary(it, "fmod", []<class M>() { return [](M x, M y) { return math::fmod(x, y); }; });
}
void pow_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "pow", [&] {
    using M = opmath_t<scalar_t>;
    if (it.strides[2][0] == 0 && it.ndim == 1) {  // tensor ** scalar: common exponents without pow()
      const M e = load<scalar_t>(it.data[2]);
      if (e == M(2)) {
        binary_kernel<scalar_t>(it, [](M x, M) { return x * x; });
        return;
      }
    }
    binary_kernel<scalar_t>(it, [](M x, M y) { return math::pow(x, y); });
  });
}
void minimum_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "minimum", [&] {
    using M = opmath_t<scalar_t>;
    binary_kernel<scalar_t>(it, [](M x, M y) { return math::minimum(x, y); });
  });
}
void maximum_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "maximum", [&] {
    using M = opmath_t<scalar_t>;
    binary_kernel<scalar_t>(it, [](M x, M y) { return math::maximum(x, y); });
  });
}
void atan2_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "atan2", [&] {
    using M = opmath_t<scalar_t>;
    binary_kernel<scalar_t>(it, [](M x, M y) { return std::atan2(x, y); });
  });
}

void compare_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(it.dtypes[1], "compare", [&] {
    using M = opmath_t<scalar_t>;
    switch (static_cast<CompareMode>(a.mode)) {
      case CompareMode::Eq: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x == y; });
      case CompareMode::Ne: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x != y; });
      case CompareMode::Lt: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x < y; });
      case CompareMode::Le: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x <= y; });
      case CompareMode::Gt: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x > y; });
      case CompareMode::Ge: return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x >= y; });
    }
  });
}

void logical_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(it.dtypes[1], "logical", [&] {
    using M = opmath_t<scalar_t>;
    switch (static_cast<LogicalMode>(a.mode)) {
      case LogicalMode::And:
        return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x != M(0) && y != M(0); });
      case LogicalMode::Or:
        return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return x != M(0) || y != M(0); });
      case LogicalMode::Xor:
        return elementwise<bool, scalar_t, scalar_t>(it, [](M x, M y) { return (x != M(0)) != (y != M(0)); });
    }
  });
}

void bitwise_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_INTEGRAL(it.dtypes[0], "bitwise", [&] {
    using T = scalar_t;
    switch (static_cast<BitwiseMode>(a.mode)) {
      case BitwiseMode::And: return binary_kernel<T>(it, [](T x, T y) { return T(x & y); });
      case BitwiseMode::Or: return binary_kernel<T>(it, [](T x, T y) { return T(x | y); });
      case BitwiseMode::Xor: return binary_kernel<T>(it, [](T x, T y) { return T(x ^ y); });
    }
  });
}

void lerp_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "lerp", [&] {
    using M = opmath_t<scalar_t>;
    if (a.has_s0) {  // scalar weight, kept in opmath precision
      const M w = a.s0.to<M>();
      binary_kernel<scalar_t>(it, [w](M x, M y) { return math::lerp(x, y, w); });
    } else {
      ternary_kernel<scalar_t>(it, [](M x, M y, M w) { return math::lerp(x, y, w); });
    }
  });
}
void addcmul_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "addcmul", [&] {
    using M = opmath_t<scalar_t>;
    const M v = a.s0.to<M>();
    ternary_kernel<scalar_t>(it, [v](M x, M y, M z) { return x + v * y * z; });
  });
}
void addcdiv_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "addcdiv", [&] {
    using M = opmath_t<scalar_t>;
    const M v = a.s0.to<M>();
    ternary_kernel<scalar_t>(it, [v](M x, M y, M z) { return x + v * (y / z); });
  });
}

void clamp_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "clamp", [&] {
    using M = opmath_t<scalar_t>;
    const M lo = a.has_s0 ? a.s0.to<M>() : M(0), hi = a.has_s1 ? a.s1.to<M>() : M(0);
    // nan in the input or in a bound gives nan, as in torch
    if (a.has_s0 && a.has_s1)
      unary_kernel<scalar_t>(it, [lo, hi](M x) { return math::minimum(math::maximum(x, lo), hi); });
    else if (a.has_s0)
      unary_kernel<scalar_t>(it, [lo](M x) { return math::maximum(x, lo); });
    else
      unary_kernel<scalar_t>(it, [hi](M x) { return math::minimum(x, hi); });
  });
}
void clamp_tensor_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_NUMERIC(it.dtypes[0], "clamp", [&] {
    using M = opmath_t<scalar_t>;
    ternary_kernel<scalar_t>(it, [](M x, M lo, M hi) { return math::minimum(math::maximum(x, lo), hi); });
  });
}

void where_kernel(TensorIter& it, const KernelArgs&) {
  BRISK_DISPATCH_ALL(it.dtypes[0], "where", [&] {
    using M = opmath_t<scalar_t>;
    elementwise<scalar_t, bool, scalar_t, scalar_t>(it, [](bool c, M x, M y) { return c ? x : y; });
  });
}

// grad where self > threshold (or self is nan), else 0: ReLU's backward in one pass.
void threshold_backward_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_FLOAT(it.dtypes[0], "threshold_backward", [&] {
    using M = opmath_t<scalar_t>;
    const M th = a.s0.to<M>();
    binary_kernel<scalar_t>(it, [th](M g, M x) { return x <= th ? M(0) : g; });
  });
}

// |a - b| <= atol + rtol * |b|, with inf == inf and optional nan == nan.
void isclose_kernel(TensorIter& it, const KernelArgs& a) {
  BRISK_DISPATCH_ALL(it.dtypes[1], "isclose", [&] {
    using M = opmath_t<scalar_t>;
    if constexpr (std::is_floating_point_v<M>) {
      const M rtol = a.s0.to<M>(), atol = a.s1.to<M>();
      const bool equal_nan = a.mode != 0;
      elementwise<bool, scalar_t, scalar_t>(it, [=](M x, M y) {
        if (x == y) return true;
        if (x != x || y != y) return equal_nan && x != x && y != y;
        if (std::isinf(x) || std::isinf(y)) return false;
        return std::abs(x - y) <= atol + rtol * std::abs(y);
      });
    } else {
      const double rtol = a.s0.to_double(), atol = a.s1.to_double();
      elementwise<bool, scalar_t, scalar_t>(it, [=](M x, M y) {
        return x == y || std::abs(double(x) - double(y)) <= atol + rtol * std::abs(double(y));
      });
    }
  });
}

}  // namespace

void register_elementwise_kernels() {
  register_kernel<OpId::copy>(kCPU, copy_kernel);
  register_kernel<OpId::fill>(kCPU, fill_kernel);
  register_kernel<OpId::add>(kCPU, add_kernel);
  register_kernel<OpId::mul>(kCPU, mul_kernel);
  register_kernel<OpId::div>(kCPU, div_kernel);
  register_kernel<OpId::remainder>(kCPU, remainder_kernel);
  register_kernel<OpId::fmod>(kCPU, fmod_kernel);
  register_kernel<OpId::pow>(kCPU, pow_kernel);
  register_kernel<OpId::minimum>(kCPU, minimum_kernel);
  register_kernel<OpId::maximum>(kCPU, maximum_kernel);
  register_kernel<OpId::atan2>(kCPU, atan2_kernel);
  register_kernel<OpId::compare>(kCPU, compare_kernel);
  register_kernel<OpId::logical>(kCPU, logical_kernel);
  register_kernel<OpId::bitwise>(kCPU, bitwise_kernel);
  register_kernel<OpId::lerp>(kCPU, lerp_kernel);
  register_kernel<OpId::addcmul>(kCPU, addcmul_kernel);
  register_kernel<OpId::addcdiv>(kCPU, addcdiv_kernel);
  register_kernel<OpId::clamp>(kCPU, clamp_kernel);
  register_kernel<OpId::clamp_tensor>(kCPU, clamp_tensor_kernel);
  register_kernel<OpId::where>(kCPU, where_kernel);
  register_kernel<OpId::isclose>(kCPU, isclose_kernel);
  register_kernel<OpId::threshold_backward>(kCPU, threshold_backward_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
