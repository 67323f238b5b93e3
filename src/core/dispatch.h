// The kernel table: one slot per (op, device), filled by the backends.
#pragma once
#include <cstdint>

#include "brisk/tensor.h"

namespace brisk {

struct TensorIter;
struct ReducePlan;

/// Extra arguments a kernel may read (alpha, clamp bounds, modes, ...).
struct KernelArgs {
  Scalar s0, s1;
  int64_t i0 = 0, i1 = 0;
  int mode = 0;
  bool has_s0 = false, has_s1 = false;
};

// Kernel signatures, one per op family.
using ElementwiseFn = void (*)(TensorIter& it, const KernelArgs& args);
using ReduceFn = void (*)(ReducePlan& plan, const KernelArgs& args);
/// Scans/softmax along one dim: out and in have the same shape.
using DimFn = void (*)(const Tensor& out, const Tensor& in, int64_t dim, const KernelArgs& args);
/// sort/topk along a dim: values, indices, input.
using SortFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                        const KernelArgs& args);
/// Random fill of a contiguous tensor from (seed, offset).
using RandomFn = void (*)(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& args);
/// Batched GEMM: out[b] = beta*out[b] + alpha * op(a[b]) @ op(b[b]); all 3-D.
using GemmFn = void (*)(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                        const Scalar& beta);
/// Index ops along a dim: (out/self, dim, index, src).
using IndexFn = void (*)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                         const KernelArgs& args);
/// nonzero: returns the (n, ndim) int64 index tensor.
using NonzeroFn = Tensor (*)(const Tensor& in);
/// Fused (flash-style) attention, forward and backward. Every tensor has the
/// same batch dims (..., rows, cols) (broadcast views with 0 strides are
/// fine): q (..., L, E), k (..., S, E), v (..., S, Ev), mask (..., L, S)
/// (bool: true = take part, or floating in q's dtype; may be undefined).
/// Forward writes out (..., L, Ev) and lse (..., L), the logsumexp of each
/// (scaled, masked) score row (+inf where every key is masked); backward
/// reads grad_out, out and lse and writes grad_q, grad_k, grad_v (full batch
/// shape, no broadcasting). q, k, v, out, grad_out have unit stride in their
/// last dim; out, lse and the grads are contiguous.
struct AttentionArgs {
  Tensor q, k, v, mask, out, lse;
  Tensor grad_out, grad_q, grad_k, grad_v;
  double scale = 1.0;
  bool causal = false;  // key j takes part for query i iff j <= i (top-left aligned)
};
using AttentionFn = void (*)(const AttentionArgs& args);

// Note [One list of ops]
// Every dispatched op appears once here: its enum value, its name (for
// errors and the profiler) and its kernel signature all come from this list.
#define BRISK_FORALL_OPS(_)                         \
  _(copy, ElementwiseFn)                            \
  _(fill, ElementwiseFn)                            \
  _(add, ElementwiseFn)                             \
  _(mul, ElementwiseFn)                             \
  _(div, ElementwiseFn)                             \
  _(remainder, ElementwiseFn)                       \
  _(fmod, ElementwiseFn)                            \
  _(pow, ElementwiseFn)                             \
  _(minimum, ElementwiseFn)                         \
  _(maximum, ElementwiseFn)                         \
  _(atan2, ElementwiseFn)                           \
  _(compare, ElementwiseFn)                         \
  _(logical, ElementwiseFn)                         \
  _(bitwise, ElementwiseFn)                         \
  _(lerp, ElementwiseFn)                            \
  _(addcmul, ElementwiseFn)                         \
  _(addcdiv, ElementwiseFn)                         \
  _(clamp, ElementwiseFn)                           \
  _(clamp_tensor, ElementwiseFn)                    \
  _(where, ElementwiseFn)                           \
  _(unary, ElementwiseFn)                           \
  _(gelu, ElementwiseFn)                            \
  _(softplus, ElementwiseFn)                        \
  _(isclose, ElementwiseFn)                         \
  _(threshold_backward, ElementwiseFn)              \
  _(sum, ReduceFn)                                  \
  _(prod, ReduceFn)                                 \
  _(amax, ReduceFn)                                 \
  _(amin, ReduceFn)                                 \
  _(argmax, ReduceFn)                               \
  _(argmin, ReduceFn)                               \
  _(var, ReduceFn)                                  \
  _(norm, ReduceFn)                                 \
  _(all, ReduceFn)                                  \
  _(any, ReduceFn)                                  \
  _(softmax, DimFn)                                 \
  _(log_softmax, DimFn)                             \
  _(cumsum, DimFn)                                  \
  _(cumprod, DimFn)                                 \
  _(sort, SortFn)                                   \
  _(topk, SortFn)                                   \
  _(uniform, RandomFn)                              \
  _(normal, RandomFn)                               \
  _(bernoulli, RandomFn)                            \
  _(randint, RandomFn)                              \
  _(gemm, GemmFn)                                   \
  _(index_select, IndexFn)                          \
  _(gather, IndexFn)                                \
  _(scatter, IndexFn)                               \
  _(scatter_add, IndexFn)                           \
  _(index_add, IndexFn)                             \
  _(index, IndexFn)                                 \
  _(index_put, IndexFn)                             \
  _(nonzero, NonzeroFn)                             \
  _(attention_fused, AttentionFn)                   \
  _(attention_fused_backward, AttentionFn)

enum class OpId : int16_t {
#define BRISK_ENUM(name, sig) name,
  BRISK_FORALL_OPS(BRISK_ENUM)
#undef BRISK_ENUM
      kNumOps
};
constexpr int kNumOps = static_cast<int>(OpId::kNumOps);

/// "add", "sum", ...
const char* op_name(OpId op);

template <OpId op>
struct OpSignature;
#define BRISK_SIG(name, sig)        \
  template <>                       \
  struct OpSignature<OpId::name> {  \
    using type = sig;               \
  };
BRISK_FORALL_OPS(BRISK_SIG)
#undef BRISK_SIG

namespace detail {
using AnyFn = void (*)();
extern AnyFn g_kernel_table[kNumOps][kNumDeviceTypes];
[[noreturn]] void kernel_missing(OpId op, DeviceType dev, const char* caller);
}  // namespace detail

/// The kernel of `op` for a device; throws "[caller] not implemented on cuda".
template <OpId op>
inline typename OpSignature<op>::type kernel(DeviceType dev, const char* caller) {
  auto fn = detail::g_kernel_table[static_cast<int>(op)][static_cast<int>(dev)];
  if (BRISK_UNLIKELY(fn == nullptr)) detail::kernel_missing(op, dev, caller);
  return reinterpret_cast<typename OpSignature<op>::type>(fn);
}

/// Whether a backend registered a kernel for `op` on a device.
inline bool kernel_registered(OpId op, DeviceType dev) {
  return detail::g_kernel_table[static_cast<int>(op)][static_cast<int>(dev)] != nullptr;
}

/// Backends register kernels with this (at start-up).
template <OpId op>
inline void register_kernel(DeviceType dev, typename OpSignature<op>::type fn) {
  detail::g_kernel_table[static_cast<int>(op)][static_cast<int>(dev)] = reinterpret_cast<detail::AnyFn>(fn);
}

// Modes of the shared elementwise kernels (KernelArgs::mode).
enum class CompareMode : int { Eq, Ne, Lt, Le, Gt, Ge };
enum class LogicalMode : int { And, Or, Xor };
enum class BitwiseMode : int { And, Or, Xor, LeftShift, RightShift };
// Unary ops: X(name, float_only?) — the int ones work on integers too.
#define BRISK_FORALL_UNARY(_) \
  _(neg) _(abs) _(sign) _(exp) _(exp2) _(log) _(log2) _(log10) _(log1p) _(expm1) _(sqrt) _(rsqrt) \
  _(square) _(reciprocal) _(sin) _(cos) _(tan) _(asin) _(acos) _(atan) _(sinh) _(cosh) _(tanh) \
  _(sigmoid) _(erf) _(erfc) _(relu) _(silu) _(floor) _(ceil) _(round) _(trunc) _(frac) \
  _(logical_not) _(bitwise_not) _(isnan) _(isinf) _(isfinite)
enum class UnaryMode : int {
#define BRISK_UNARY_ENUM(name) name,
  BRISK_FORALL_UNARY(BRISK_UNARY_ENUM)
#undef BRISK_UNARY_ENUM
};

/// Registers every CPU kernel (picks the ISA variant for this CPU).
void register_cpu_kernels();
/// Registers every CUDA kernel (builds with the CUDA backend only). Fills
/// table slots; touches no driver.
void register_cuda_kernels();

}  // namespace brisk
