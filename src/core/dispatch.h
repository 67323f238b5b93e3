// The kernel table: one slot per (op, device), filled by the backends.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "brisk/tensor.h"
#include "core/trace_hooks.h"

namespace brisk {

struct TensorIter;
struct ReducePlan;
namespace conv {
struct ConvGeom;
struct ConvScratch;
}  // namespace conv
namespace pool {
struct MaxPlan;
struct AvgPlan;
}  // namespace pool
namespace multi_tensor {
enum class ForeachOp : int;
struct FusedAdamArgs;
struct FusedSgdArgs;
struct FusedRmspropArgs;
}  // namespace multi_tensor

/// Extra arguments a kernel may read (alpha, clamp bounds, modes, ...).
struct KernelArgs {
  Scalar s0, s1;
  Scalar s2;  ///< a third scalar (elu's input_scale)
  int64_t i0 = 0, i1 = 0;
  int mode = 0;
  bool has_s0 = false, has_s1 = false;
};

// Kernel signatures, one per op family.
using ElementwiseFn = void (*)(TensorIter& it, const KernelArgs& args);
using ReduceFn = void (*)(ReducePlan& plan, const KernelArgs& args);
/// Scans/softmax along one dim: out and in have the same shape.
using DimFn = void (*)(const Tensor& out, const Tensor& in, int64_t dim, const KernelArgs& args);
/// Backward of softmax/log_softmax along `dim`: grad_in from grad_out and the
/// forward's output `out` (all contiguous, one shape and dtype).
using DimBackwardFn = void (*)(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int64_t dim,
                               const KernelArgs& args);
/// layer_norm / rms_norm over rows: x contiguous (R, N), weight and bias
/// contiguous (N) of x's dtype or undefined; fills y (R, N) and the
/// per-row statistics mean (layer_norm only) and rstd, (R) tensors of x's
/// compute dtype (float32 for 16-bit x). rms_norm ignores mean and bias.
using RowNormFn = void (*)(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                           const Tensor& weight, const Tensor& bias, double eps);
/// Their backward: fills the defined ones of dx (R, N), dweight and dbias
/// (N) (x's dtype) from dy (R, N) and the forward's statistics.
using RowNormBackwardFn = void (*)(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                                   const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight);
/// An (N, C, *) input of batch_norm/group_norm as Nb blocks of C channels by
/// S positions, planar memory (Nb, C, S) or interleaved (Nb, S, C) (Note
/// [Normalization layouts] in src/backend/cpu/kernels/norm_channels.cpp).
struct NormView {
  int64_t Nb = 0, C = 0, S = 0;
  bool interleaved = false;
};
/// batch_norm forward. `x`, `y`: dense memory in `v`'s layout (y allocated).
/// training: batch statistics (biased variance); when `update`, the running
/// statistics are updated in place (momentum; the variance with n / (n - 1)).
/// Eval: the running statistics. Weight, bias, running stats: 1-D (C) of any
/// floating dtype and stride, or undefined. Returns the statistics used, per
/// channel, float64 tensors on x's device: {mean, invstd}.
using BatchNormFn = std::pair<Tensor, Tensor> (*)(const Tensor& x, const Tensor& y, const NormView& v,
                                                  const Tensor& weight, const Tensor& bias,
                                                  const Tensor& running_mean, const Tensor& running_var,
                                                  bool training, bool update, double momentum, double eps);
/// batch_norm backward from the statistics the forward used. Fills the
/// defined ones of dx (x's layout and dtype), dw, db ((C), their dtypes).
using BatchNormBackwardFn = void (*)(const Tensor& gy, const Tensor& x, const NormView& v, const Tensor& weight,
                                     const Tensor& mean, const Tensor& invstd, bool training, const Tensor& dx,
                                     const Tensor& dw, const Tensor& db);
/// group_norm forward (v: one block per sample). Returns per (n, group)
/// float64 tensors {mean, rstd} of N * G values on x's device.
using GroupNormFn = std::pair<Tensor, Tensor> (*)(const Tensor& x, const Tensor& y, const NormView& v, int64_t G,
                                                  const Tensor& weight, const Tensor& bias, double eps);
using GroupNormBackwardFn = void (*)(const Tensor& gy, const Tensor& x, const NormView& v, int64_t G,
                                     const Tensor& weight, const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                                     const Tensor& dw, const Tensor& db);
/// cross_entropy with class indices over rows: input (R, C) contiguous,
/// target (R) int64 (checked in range, or ignore_index), weight (C) of the
/// input's dtype or undefined. Fills loss (R) with each row's
/// (1 - ls) * -w[t] logp[t] + ls / C * -sum_c w[c] logp[c] (0 where ignored),
/// wt (R) with w[t] (0 where ignored) and lse (R, 2) with the row's max m and
/// log sum exp(x - m) (compute dtype: float32 for 16-bit input), for the
/// backward (Note [Fused cross_entropy]: never m + log s, which rounds).
using CrossEntropyFn = void (*)(const Tensor& loss, const Tensor& wt, const Tensor& lse, const Tensor& input,
                                const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                double label_smoothing);
/// Its backward: grad_input (R, C) from grad_loss (R), contiguous, the input's dtype.
using CrossEntropyBackwardFn = void (*)(const Tensor& grad_input, const Tensor& grad_loss, const Tensor& input,
                                        const Tensor& target, const Tensor& weight, const Tensor& lse,
                                        int64_t ignore_index, double label_smoothing);
/// sort/topk along a dim: values, indices, input.
using SortFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                        const KernelArgs& args);
/// Random fill of a contiguous tensor from (seed, offset).
using RandomFn = void (*)(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& args);
/// Per-element samplers (src/kernels/samplers.h): out[i] from a[i] (and b[i]
/// for binomial), all contiguous, of out's floating dtype; `sampler` is a
/// samplers::Sampler; the draws are Note [Sampler streams] at (seed, offset).
/// Checks multinomial's probabilities (a contiguous 2-D tensor): on a GPU,
/// where reading them on the host would be a sync, a bad row is a deferred
/// device error; the CPU kernel raises at once.
using ProbsCheckFn = void (*)(const Tensor& probs);
using SampleFn = void (*)(const Tensor& out, const Tensor& a, const Tensor& b, uint64_t seed, uint64_t offset,
                          int sampler);
/// Batched GEMM: out[b] = beta*out[b] + alpha * op(a[b]) @ op(b[b]); all 3-D.
using GemmFn = void (*)(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                        const Scalar& beta);
/// Index ops along a dim: (out/self, dim, index, src).
using IndexFn = void (*)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                         const KernelArgs& args);
/// nonzero: returns the (n, ndim) int64 index tensor.
using NonzeroFn = Tensor (*)(const Tensor& in);
// Convolutions (plan and contract in core/conv_plan.h); `op` names the op in
// errors, `scratch` (may be null) shares converted activations between calls.
using ConvForwardFn = void (*)(const char* op, const conv::ConvGeom& g, const Tensor& src, const Tensor& w,
                               const Tensor& bias, const Tensor& dst, conv::ConvScratch* scratch);
using ConvBackwardDataFn = void (*)(const char* op, const conv::ConvGeom& g, const Tensor& grad_dst,
                                    const Tensor& w, const Tensor& grad_src, conv::ConvScratch* scratch);
using ConvBackwardWeightsFn = void (*)(const char* op, const conv::ConvGeom& g, const Tensor& src,
                                       const Tensor& grad_dst, const Tensor& grad_w, const Tensor& grad_bias,
                                       conv::ConvScratch* scratch);
// Pooling (plan and contract in core/pool_plan.h).
/// y = max over each window of x; when `taps` is non-null the kernel also
/// allocates and fills *taps, in its own format (the CPU: the winning tap of
/// each window; CUDA: flat input indices), for the backward and for indices.
using MaxPoolFn = void (*)(const pool::MaxPlan& p, const Tensor& x, const Tensor& y, Tensor* taps);
/// PyTorch's int64 flat indices (h * W + w, -1 for no tap) from the taps.
using MaxPoolIndicesFn = Tensor (*)(const pool::MaxPlan& p, const Tensor& taps);
using MaxPoolBackwardFn = void (*)(const pool::MaxPlan& p, const Tensor& gy, const Tensor& taps, const Tensor& gx);
/// Average pooling forward (in = x, out = y) and backward (in = gy, out = gx).
using AvgPoolFn = void (*)(const pool::AvgPlan& p, const Tensor& in, const Tensor& out);
// Factories: fill a contiguous 1-D tensor.
/// arange: out[i] = a + i * c (int64 wrap-around, `integer`) or s + double(i)
/// * st (double), converted to out's dtype as copy_ converts int64 / double.
using ArangeFn = void (*)(const Tensor& out, bool integer, int64_t a, int64_t c, double s, double st);
/// linspace: i < half: a + step * i, else b - step * (steps - 1 - i), in
/// double, converted to out's dtype as copy_ converts double.
using LinspaceFn = void (*)(const Tensor& out, double a, double b, double step, int64_t half);
// Multi-tensor kernels (contract in core/multi_tensor_plan.h).
/// out[i] = op(x[i], y[i], z[i]) (absent lists are null); `scalars`, when
/// given, holds one scalar per tensor and replaces `scalar`. Bumps no versions.
using ForeachFn = void (*)(multi_tensor::ForeachOp op, const TensorList& out, const TensorList* x, const TensorList* y,
                           const TensorList* z, const Scalar& scalar, const std::vector<double>* scalars);
/// The ord-norm (1, 2 or +inf) of each tensor, as 0-dim tensors of its dtype.
using ForeachNormFn = TensorList (*)(const TensorList& self, double ord);
/// PyTorch's _amp_foreach_non_finite_check_and_unscale_: in one pass over
/// each tensor, found_inf (a one-element float32 tensor) is set to 1 when an
/// element is inf or NaN, and every element is multiplied by inv_scale (a
/// one-element float32 tensor). Bumps no versions.
using AmpUnscaleFn = void (*)(const TensorList& self, const Tensor& found_inf, const Tensor& inv_scale);
/// One fused Adam/AdamW step; step_sizes[i] = lr / (1 - beta1^step),
/// bc2_sqrts[i] = sqrt(1 - beta2^step); max_exp_avg_sqs empty unless amsgrad.
/// state_steps (capturable Adam): empty, or one float32 0-dim tensor per
/// parameter on its device holding the step count (already counted for this
/// step); the kernel then computes the two factors from it, in float64, and
/// step_sizes / bc2_sqrts are empty (no host value: Note [Capturable Adam]).
/// grad_scale / found_inf (one-element float32 tensors, or undefined): the
/// gradients are divided by grad_scale and stored back unscaled; nothing
/// changes when found_inf != 0. Bumps the versions of what it writes.
using FusedAdamFn = void (*)(const multi_tensor::FusedAdamArgs& args, const TensorList& params, const TensorList& grads,
                             const TensorList& exp_avgs, const TensorList& exp_avg_sqs,
                             const TensorList& max_exp_avg_sqs, const std::vector<double>& step_sizes,
                             const std::vector<double>& bc2_sqrts, const TensorList& state_steps,
                             const Tensor& grad_scale, const Tensor& found_inf);
/// One fused SGD step; momentum_buffers empty when momentum == 0;
/// first_step[i] != 0: buffer i starts as the gradient. grad_scale /
/// found_inf as for FusedAdamFn. Bumps the versions of what it writes.
using FusedSgdFn = void (*)(const multi_tensor::FusedSgdArgs& args, const TensorList& params, const TensorList& grads,
                            const TensorList& momentum_buffers, const std::vector<char>& first_step,
                            const Tensor& grad_scale, const Tensor& found_inf);
/// One fused RMSprop step; grad_avgs empty unless centered, momentum_buffers
/// empty unless momentum > 0. Bumps the versions of what it writes.
using FusedRmspropFn = void (*)(const multi_tensor::FusedRmspropArgs& args, const TensorList& params,
                                const TensorList& grads, const TensorList& square_avgs,
                                const TensorList& grad_avgs, const TensorList& momentum_buffers);
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
  _(binary_math, ElementwiseFn)                     \
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
  _(activation, ElementwiseFn)                      \
  _(isclose, ElementwiseFn)                         \
  _(threshold_backward, ElementwiseFn)              \
  _(activation_backward, ElementwiseFn)             \
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
  _(softmax_backward, DimBackwardFn)                \
  _(log_softmax_backward, DimBackwardFn)            \
  _(layer_norm, RowNormFn)                          \
  _(layer_norm_backward, RowNormBackwardFn)         \
  _(rms_norm, RowNormFn)                            \
  _(rms_norm_backward, RowNormBackwardFn)           \
  _(batch_norm, BatchNormFn)                        \
  _(batch_norm_backward, BatchNormBackwardFn)       \
  _(group_norm, GroupNormFn)                        \
  _(group_norm_backward, GroupNormBackwardFn)       \
  _(cross_entropy, CrossEntropyFn)                  \
  _(cross_entropy_backward, CrossEntropyBackwardFn) \
  _(cumsum, DimFn)                                  \
  _(cumprod, DimFn)                                 \
  _(sort, SortFn)                                   \
  _(topk, SortFn)                                   \
  _(uniform, RandomFn)                              \
  _(normal, RandomFn)                               \
  _(bernoulli, RandomFn)                            \
  _(randint, RandomFn)                              \
  _(sample, SampleFn)                               \
  _(multinomial_check, ProbsCheckFn)                \
  _(gemm, GemmFn)                                   \
  _(index_select, IndexFn)                          \
  _(gather, IndexFn)                                \
  _(scatter, IndexFn)                               \
  _(scatter_add, IndexFn)                           \
  _(index_add, IndexFn)                             \
  _(index, IndexFn)                                 \
  _(index_put, IndexFn)                             \
  _(nonzero, NonzeroFn)                             \
  _(conv_forward, ConvForwardFn)                    \
  _(conv_backward_data, ConvBackwardDataFn)         \
  _(conv_backward_weights, ConvBackwardWeightsFn)   \
  _(max_pool2d, MaxPoolFn)                          \
  _(max_pool2d_indices, MaxPoolIndicesFn)           \
  _(max_pool2d_backward, MaxPoolBackwardFn)         \
  _(avg_pool2d, AvgPoolFn)                          \
  _(avg_pool2d_backward, AvgPoolFn)                 \
  _(arange, ArangeFn)                               \
  _(linspace, LinspaceFn)                           \
  _(foreach_pointwise, ForeachFn)                   \
  _(foreach_norm, ForeachNormFn)                    \
  _(amp_unscale, AmpUnscaleFn)                      \
  _(fused_adam, FusedAdamFn)                        \
  _(fused_sgd, FusedSgdFn)                          \
  _(fused_rmsprop, FusedRmspropFn)                  \
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
/// Per slot, the dtypes its kernel takes (bit i: ScalarType i), as registered.
extern uint32_t g_kernel_dtypes[kNumOps][kNumDeviceTypes];
[[noreturn]] void kernel_missing(OpId op, DeviceType dev, const char* caller);
/// compile's hook on a kernel lookup while a thread traces (compile/trace.cpp):
/// returns `fn`, or for an elementwise slot on the tracing thread a wrapper
/// that records the call and then runs `fn`.
AnyFn trace_kernel(OpId op, DeviceType dev, const char* caller, AnyFn fn);
}  // namespace detail

/// Every dtype (the default of register_kernel: the kernel switches on
/// dtype itself and reports what it lacks).
constexpr uint32_t kAllDTypes = 0xffffffffu;
/// A dtype set for register_kernel: dtype_mask({kFloat, kDouble}).
constexpr uint32_t dtype_mask(std::initializer_list<ScalarType> dts) {
  uint32_t m = 0;
  for (ScalarType t : dts) m |= 1u << static_cast<int>(t);
  return m;
}

/// Whether a kernel for `op` is registered on `dev` and takes `dt` (derived
/// from the registrations; ggml's supports_op).
inline bool supports(OpId op, DeviceType dev, ScalarType dt) {
  const int o = static_cast<int>(op), d = static_cast<int>(dev);
  return detail::g_kernel_table[o][d] != nullptr && (detail::g_kernel_dtypes[o][d] >> static_cast<int>(dt) & 1u);
}
/// Whether a kernel for `op` is registered on `dev` at all.
inline bool supports(OpId op, DeviceType dev) {
  return detail::g_kernel_table[static_cast<int>(op)][static_cast<int>(dev)] != nullptr;
}

/// The kernel of `op` for a device; throws "[caller] not implemented on cuda".
template <OpId op>
inline typename OpSignature<op>::type kernel(DeviceType dev, const char* caller) {
  auto fn = detail::g_kernel_table[static_cast<int>(op)][static_cast<int>(dev)];
  if (BRISK_UNLIKELY(fn == nullptr)) detail::kernel_missing(op, dev, caller);
  if (BRISK_UNLIKELY(detail::tracing_any())) fn = detail::trace_kernel(op, dev, caller, fn);
  return reinterpret_cast<typename OpSignature<op>::type>(fn);
}

/// Backends register kernels with this (at start-up); `dtypes` is what
/// supports() reports for the slot.
template <OpId op>
inline void register_kernel(DeviceType dev, typename OpSignature<op>::type fn, uint32_t dtypes = kAllDTypes) {
  detail::g_kernel_table[static_cast<int>(op)][static_cast<int>(dev)] = reinterpret_cast<detail::AnyFn>(fn);
  detail::g_kernel_dtypes[static_cast<int>(op)][static_cast<int>(dev)] = dtypes;
}

// Modes of the shared elementwise kernels (KernelArgs::mode).
enum class CompareMode : int { Eq, Ne, Lt, Le, Gt, Ge };
enum class LogicalMode : int { And, Or, Xor };
enum class BitwiseMode : int { And, Or, Xor, LeftShift, RightShift };
// The mode of the `unary` slot: one per row of the unary list
// (brisk/detail/unary_ops.h), then the internal ones.
enum class UnaryMode : int {
#define BRISK_UNARY_ENUM(ctx, name, group, dtypes, amp, forms) name,
  BRISK_FORALL_UNARY_OPS(BRISK_UNARY_ENUM, _)
#undef BRISK_UNARY_ENUM
  trigamma,   // digamma's gradient (polygamma(1, x))
  polygamma,  // polygamma(n, x) for n >= 2 (n in KernelArgs::s0): trigamma's derivatives
  kNumModes
};
/// "exp", ... (the row's name).
inline const char* unary_mode_name(UnaryMode m) {
  static constexpr const char* kNames[] = {
#define BRISK_UNARY_NAME(ctx, name, group, dtypes, amp, forms) #name,
      BRISK_FORALL_UNARY_OPS(BRISK_UNARY_NAME, _)
#undef BRISK_UNARY_NAME
      "trigamma", "polygamma"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<int>(UnaryMode::kNumModes));
  return kNames[static_cast<int>(m)];
}

/// Registers every CPU kernel (picks the ISA variant for this CPU).
void register_cpu_kernels();
/// Registers every CUDA kernel (builds with the CUDA backend only). Fills
/// table slots; touches no driver.
void register_cuda_kernels();

}  // namespace brisk
