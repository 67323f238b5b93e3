// The op table: one row per op a user calls, with what the tools that see
// every op need to know about it (Note [The op table]).
#pragma once
#include <cstdint>
#include <string_view>

#include "brisk/detail/unary_ops.h"
#include "brisk/device.h"

namespace brisk {

// Note [The op table]
// Two lists describe the ops, each kept in one place:
//  - BRISK_FORALL_OPS (core/dispatch.h): the kernel slots, one per kernel
//    signature family a backend fills (`unary` serves every unary op,
//    `compare` every comparison). Backends see only these.
//  - BRISK_FORALL_OP_ROWS (here): the ops as a user calls them and as the
//    profiler names them (`exp`, `view`, `conv2d`): what kind of op each is,
//    which slot runs it, which dtypes it takes, its autocast policy and
//    whether it has in-place / out= forms or reads device memory on the host.
//    The profiler's names, the advisor's lists (views, ops with an in-place
//    form), autocast and compile read this table (graph capture will).
// The unary pointwise rows come from the unary list (brisk/detail/unary_ops.h,
// Note [The unary list]); each pointwise row's scalar functor is
// math::ScalarFunctor<Op::name> (kernels/functors.h, Note [Scalar functors]).
// A name seen by the profiler that has no row fails the test
// OpTable.EveryProfiledNameHasARow (tests/core/test_op_table.cpp; names with
// a trailing `_` are the in-place form of their row, `_out` the out= form).
//
// Columns: X(name, kind, slot, dtypes, amp, cpu_amp, flags)
//   kind   OpKind: Unary/Binary/Ternary are the pointwise ops (fusable);
//   slot   the dispatch slot (an OpId name) that runs it, or `none` (a
//          composite of other ops, a view, or host-only);
//   dtypes DTypeClass the op accepts (All, Numeric = no bool, Float,
//          Integral = integers and bool);
//   amp, cpu_amp
//          AmpPolicy: what autocast does with it on CUDA and on the CPU
//          (PyTorch's two lists differ; Note [Autocast] in core/autocast.h):
//          Lower (runs in the autocast dtype: GEMMs, convolutions,
//          attention), Fp32 (16-bit floating inputs cast to float32),
//          Promote (floating inputs cast to the widest among them), Banned
//          (a brisk::Error under autocast), Keep (runs as called). The
//          values are torch 2.15's lists (tests/amp/autocast_policies.txt,
//          written by tools/amp/autocast_policies.py, checks every row);
//          the unary list's rows have cpu_amp Keep (no unary op is on
//          PyTorch's CPU lists). A row whose policy is not Keep calls
//          BRISK_AUTOCAST in its front end (tests/amp/test_autocast.cpp
//          runs each such op under autocast);
//   flags  OpFlags or'ed: kInplace (has `name_`), kOut (has `name_out`),
//          kSync (reads device memory on the host: a sync point, not
//          capturable), kRandom (draws from a generator).
enum class OpKind : uint8_t {
  Unary,
  Binary,
  Ternary,
  Reduction,
  Scan,
  Sort,
  View,
  Shape,  // new memory in a new shape (cat, flip, repeat, pad)
  Copy,   // copy_, to, clone, contiguous, fill
  Gemm,
  Convolution,
  Pooling,
  Normalization,
  Attention,
  Loss,
  Index,
  Random,
  Factory,
  Foreach,
  Optimizer,
  Other,
};
enum class DTypeClass : uint8_t { All, Numeric, Float, Integral };
enum class AmpPolicy : uint8_t { Keep, Lower, Fp32, Promote, Banned };
enum OpFlags : uint8_t { kNoFlags = 0, kInplace = 1, kOut = 2, kSync = 4, kRandom = 8 };
constexpr uint8_t operator|(OpFlags a, OpFlags b) { return uint8_t(uint8_t(a) | uint8_t(b)); }
constexpr uint8_t operator|(uint8_t a, OpFlags b) { return uint8_t(a | uint8_t(b)); }

// The rows of the unary list (brisk/detail/unary_ops.h), whose `forms`
// give the flags.
#define BRISK_UNARY_FLAGS_Full (kInplace | kOut)
#define BRISK_UNARY_FLAGS_NoInplace kOut
#define BRISK_UNARY_FLAGS_FreeInplace (kInplace | kOut)
#define BRISK_UNARY_FLAGS_Custom (kInplace | kOut)
#define BRISK_UNARY_OP_ROW(X, name, group, dtypes, amp, forms) \
  X(name, Unary, unary, dtypes, amp, Keep, BRISK_UNARY_FLAGS_##forms)

// clang-format off
#define BRISK_FORALL_OP_ROWS(X)                                                         \
  /* pointwise unary: the unary list (slot `unary`, mode UnaryMode::name) */            \
  BRISK_FORALL_UNARY_OPS(BRISK_UNARY_OP_ROW, X)                                         \
  X(sgn, Unary, unary, All, Keep, Keep, kNoFlags)                                       \
  X(gelu, Unary, gelu, Float, Keep, Keep, kInplace)                                     \
  X(softplus, Unary, softplus, Float, Fp32, Keep, kNoFlags)                             \
  /* the activations of slot `activation` (math::Act) */                                \
  X(hardswish, Unary, activation, Float, Keep, Keep, kInplace)                          \
  X(hardsigmoid, Unary, activation, Float, Keep, Keep, kInplace)                        \
  X(elu, Unary, activation, Float, Keep, Keep, kInplace)                                \
  X(selu, Unary, activation, Float, Keep, Keep, kInplace)                               \
  X(celu, Unary, activation, Float, Keep, Keep, kInplace)                               \
  X(leaky_relu, Unary, activation, Float, Keep, Keep, kInplace)                         \
  X(softshrink, Unary, activation, Float, Keep, Keep, kNoFlags)                         \
  X(hardshrink, Unary, activation, Float, Keep, Keep, kNoFlags)                         \
  X(log_sigmoid, Unary, activation, Float, Keep, Keep, kNoFlags)                        \
  X(nan_to_num, Unary, none, All, Keep, Keep, kInplace)                                 \
  X(threshold_backward, Binary, threshold_backward, Float, Keep, Keep, kNoFlags)        \
  /* the activation gradients in one pass (slot activation_backward, math::ActGrad) */ \
  X(sigmoid_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)           \
  X(tanh_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)              \
  X(silu_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)              \
  X(mish_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)              \
  X(gelu_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)              \
  X(logit_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)             \
  X(softplus_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)          \
  X(hardswish_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)         \
  X(hardsigmoid_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)       \
  X(elu_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)               \
  X(leaky_relu_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)        \
  X(softshrink_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)        \
  X(hardshrink_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)        \
  X(log_sigmoid_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)       \
  X(hardtanh_backward, Binary, activation_backward, Float, Keep, Keep, kNoFlags)          \
  /* pointwise binary */                                                                \
  X(add, Binary, add, All, Keep, Keep, kInplace | kOut)                                 \
  X(sub, Binary, add, Numeric, Keep, Keep, kInplace | kOut)                             \
  X(rsub, Binary, add, Numeric, Keep, Keep, kNoFlags)                                   \
  X(mul, Binary, mul, All, Keep, Keep, kInplace | kOut)                                 \
  X(div, Binary, div, All, Keep, Keep, kInplace | kOut)                                 \
  X(remainder, Binary, remainder, Numeric, Keep, Keep, kInplace | kOut)                 \
  X(fmod, Binary, fmod, Numeric, Keep, Keep, kInplace | kOut)                           \
  X(pow, Binary, pow, Numeric, Fp32, Keep, kInplace | kOut)                             \
  X(minimum, Binary, minimum, All, Keep, Keep, kOut)                                    \
  X(maximum, Binary, maximum, All, Keep, Keep, kOut)                                    \
  X(atan2, Binary, atan2, All, Promote, Keep, kInplace | kOut)                          \
  /* PyTorch's binary math (slot binary_math, math::BinaryMath) */                     \
  X(hypot, Binary, binary_math, Float, Keep, Keep, kInplace | kOut)                     \
  X(logaddexp, Binary, binary_math, Float, Keep, Keep, kOut)                            \
  X(logaddexp2, Binary, binary_math, Float, Keep, Keep, kOut)                           \
  X(copysign, Binary, binary_math, All, Keep, Keep, kInplace | kOut)                    \
  X(nextafter, Binary, binary_math, Float, Keep, Keep, kInplace | kOut)                 \
  X(xlogy, Binary, binary_math, All, Keep, Keep, kInplace | kOut)                       \
  X(heaviside, Binary, binary_math, All, Keep, Keep, kInplace | kOut)                   \
  X(eq, Binary, compare, All, Keep, Keep, kInplace | kOut)                              \
  X(ne, Binary, compare, All, Keep, Keep, kInplace | kOut)                              \
  X(lt, Binary, compare, All, Keep, Keep, kInplace | kOut)                              \
  X(le, Binary, compare, All, Keep, Keep, kInplace | kOut)                              \
  X(gt, Binary, compare, All, Keep, Keep, kInplace | kOut)                              \
  X(ge, Binary, compare, All, Keep, Keep, kInplace | kOut)                              \
  X(logical_and, Binary, logical, All, Keep, Keep, kInplace | kOut)                     \
  X(logical_or, Binary, logical, All, Keep, Keep, kInplace | kOut)                      \
  X(logical_xor, Binary, logical, All, Keep, Keep, kInplace | kOut)                     \
  X(bitwise_and, Binary, bitwise, Integral, Keep, Keep, kInplace | kOut)                \
  X(bitwise_or, Binary, bitwise, Integral, Keep, Keep, kInplace | kOut)                 \
  X(bitwise_xor, Binary, bitwise, Integral, Keep, Keep, kInplace | kOut)                \
  X(bitwise_left_shift, Binary, bitwise, Integral, Keep, Keep, kInplace | kOut)         \
  X(bitwise_right_shift, Binary, bitwise, Integral, Keep, Keep, kInplace | kOut)        \
  X(isclose, Binary, isclose, All, Keep, Keep, kNoFlags)                                \
  X(masked_fill, Binary, where, All, Keep, Keep, kInplace)                              \
  /* pointwise ternary */                                                               \
  X(lerp, Ternary, lerp, Float, Keep, Keep, kInplace)                                   \
  X(addcmul, Ternary, addcmul, Numeric, Promote, Keep, kInplace)                        \
  X(addcdiv, Ternary, addcdiv, Numeric, Promote, Keep, kInplace)                        \
  X(clamp, Ternary, clamp, Numeric, Keep, Keep, kInplace | kOut)                        \
  X(where, Ternary, where, All, Keep, Keep, kNoFlags)                                   \
  /* reductions */                                                                      \
  X(sum, Reduction, sum, All, Fp32, Keep, kOut)                                         \
  X(mean, Reduction, sum, Float, Keep, Keep, kNoFlags)                                  \
  X(prod, Reduction, prod, All, Fp32, Fp32, kNoFlags)                                   \
  X(amax, Reduction, amax, Numeric, Keep, Keep, kNoFlags)                               \
  X(amin, Reduction, amin, Numeric, Keep, Keep, kNoFlags)                               \
  X(max, Reduction, amax, Numeric, Keep, Keep, kNoFlags)                                \
  X(min, Reduction, amin, Numeric, Keep, Keep, kNoFlags)                                \
  X(argmax, Reduction, argmax, Numeric, Keep, Keep, kNoFlags)                           \
  X(argmin, Reduction, argmin, Numeric, Keep, Keep, kNoFlags)                           \
  X(var, Reduction, var, Float, Keep, Keep, kNoFlags)                                   \
  X(std, Reduction, var, Float, Keep, Keep, kNoFlags)                                   \
  X(var_mean, Reduction, var, Float, Keep, Keep, kNoFlags)                              \
  X(norm, Reduction, norm, Float, Fp32, Keep, kNoFlags)                                 \
  X(logsumexp, Reduction, none, Float, Fp32, Keep, kNoFlags)                            \
  X(all, Reduction, all, All, Keep, Keep, kNoFlags)                                     \
  X(any, Reduction, any, All, Keep, Keep, kNoFlags)                                     \
  X(median, Reduction, sort, Numeric, Keep, Keep, kNoFlags)                             \
  X(nanmedian, Reduction, sort, Float, Keep, Keep, kNoFlags)                            \
  X(equal, Reduction, none, All, Keep, Keep, kSync)                                     \
  X(allclose, Reduction, none, All, Keep, Keep, kSync)                                  \
  /* scans and sorts */                                                                 \
  X(cumsum, Scan, cumsum, All, Fp32, Keep, kNoFlags)                                    \
  X(cumprod, Scan, cumprod, All, Fp32, Keep, kNoFlags)                                  \
  X(softmax, Normalization, softmax, Float, Fp32, Keep, kNoFlags)                       \
  X(log_softmax, Normalization, log_softmax, Float, Fp32, Keep, kNoFlags)               \
  X(sort, Sort, sort, Numeric, Keep, Keep, kNoFlags)                                    \
  X(argsort, Sort, sort, Numeric, Keep, Keep, kNoFlags)                                 \
  X(topk, Sort, topk, Numeric, Keep, Keep, kNoFlags)                                    \
  /* views: metadata only, no kernel */                                                 \
  X(view, View, none, All, Keep, Keep, kNoFlags)                                        \
  X(view_as, View, none, All, Keep, Keep, kNoFlags)                                     \
  X(reshape, View, none, All, Keep, Keep, kNoFlags)                                     \
  X(t, View, none, All, Keep, Keep, kInplace)                                           \
  X(mT, View, none, All, Keep, Keep, kNoFlags)                                          \
  X(transpose, View, none, All, Keep, Keep, kInplace)                                   \
  X(permute, View, none, All, Keep, Keep, kNoFlags)                                     \
  X(movedim, View, none, All, Keep, Keep, kNoFlags)                                     \
  X(select, View, none, All, Keep, Keep, kNoFlags)                                      \
  X(slice, View, none, All, Keep, Keep, kNoFlags)                                       \
  X(narrow, View, none, All, Keep, Keep, kNoFlags)                                      \
  X(expand, View, none, All, Keep, Keep, kNoFlags)                                      \
  X(expand_as, View, none, All, Keep, Keep, kNoFlags)                                   \
  X(broadcast_to, View, none, All, Keep, Keep, kNoFlags)                                \
  X(broadcast_tensors, View, none, All, Keep, Keep, kNoFlags)                           \
  X(squeeze, View, none, All, Keep, Keep, kInplace)                                     \
  X(unsqueeze, View, none, All, Keep, Keep, kInplace)                                   \
  X(flatten, View, none, All, Keep, Keep, kNoFlags)                                     \
  X(unflatten, View, none, All, Keep, Keep, kNoFlags)                                   \
  X(as_strided, View, none, All, Keep, Keep, kNoFlags)                                  \
  X(diagonal, View, none, All, Keep, Keep, kNoFlags)                                    \
  X(unfold, View, none, All, Keep, Keep, kNoFlags)                                      \
  X(split, View, none, All, Keep, Keep, kNoFlags)                                       \
  X(split_with_sizes, View, none, All, Keep, Keep, kNoFlags)                            \
  X(chunk, View, none, All, Keep, Keep, kNoFlags)                                       \
  X(unbind, View, none, All, Keep, Keep, kNoFlags)                                      \
  X(detach, View, none, All, Keep, Keep, kInplace)                                      \
  X(alias, View, none, All, Keep, Keep, kNoFlags)                                       \
  X(meshgrid, View, none, All, Keep, Keep, kNoFlags)                                    \
  /* new memory in a new shape */                                                       \
  X(cat, Shape, copy, All, Keep, Promote, kOut)                                         \
  X(stack, Shape, copy, All, Keep, Promote, kNoFlags)                                   \
  X(hstack, Shape, copy, All, Keep, Promote, kNoFlags)                                  \
  X(vstack, Shape, copy, All, Keep, Promote, kNoFlags)                                  \
  X(dstack, Shape, copy, All, Keep, Promote, kNoFlags)                                  \
  X(flip, Shape, copy, All, Keep, Keep, kNoFlags)                                       \
  X(roll, Shape, copy, All, Keep, Keep, kNoFlags)                                       \
  X(repeat, Shape, copy, All, Keep, Keep, kNoFlags)                                     \
  X(tile, Shape, copy, All, Keep, Keep, kNoFlags)                                       \
  X(pad, Shape, copy, All, Keep, Keep, kNoFlags)                                        \
  X(tril, Shape, where, All, Keep, Keep, kInplace)                                      \
  X(triu, Shape, where, All, Keep, Keep, kInplace)                                      \
  X(interpolate, Shape, none, Float, Fp32, Keep, kNoFlags)                              \
  /* pad's reflect and replicate modes: their own autocast policy (profiled as pad) */   \
  X(reflection_pad, Shape, none, Float, Keep, Fp32, kNoFlags)                           \
  X(replication_pad, Shape, none, Float, Keep, Fp32, kNoFlags)                              \
  /* copies */                                                                          \
  X(copy, Copy, copy, All, Keep, Keep, kInplace)                                        \
  X(clone, Copy, copy, All, Keep, Keep, kNoFlags)                                       \
  X(contiguous, Copy, copy, All, Keep, Keep, kNoFlags)                                  \
  X(to, Copy, copy, All, Keep, Keep, kNoFlags)                                          \
  X(pin_memory, Copy, copy, All, Keep, Keep, kNoFlags)                                  \
  X(fill, Copy, fill, All, Keep, Keep, kInplace)                                        \
  X(zero, Copy, fill, All, Keep, Keep, kInplace)                                        \
  X(resize, Copy, none, All, Keep, Keep, kInplace)                                      \
  X(item, Copy, copy, All, Keep, Keep, kSync)                                           \
  /* products */                                                                        \
  X(mm, Gemm, gemm, Numeric, Lower, Lower, kOut)                                        \
  X(bmm, Gemm, gemm, Numeric, Lower, Lower, kNoFlags)                                   \
  X(matmul, Gemm, gemm, Numeric, Lower, Lower, kOut)                                    \
  X(addmm, Gemm, gemm, Numeric, Lower, Lower, kNoFlags)                                 \
  X(mv, Gemm, gemm, Numeric, Lower, Keep, kNoFlags)                                     \
  X(dot, Gemm, gemm, Numeric, Promote, Keep, kNoFlags)                                  \
  X(outer, Binary, mul, Numeric, Keep, Keep, kNoFlags)                                  \
  X(linear, Gemm, gemm, Float, Lower, Lower, kNoFlags)                                  \
  X(bilinear, Gemm, gemm, Float, Promote, Keep, kNoFlags)                               \
  X(einsum, Gemm, gemm, Numeric, Lower, Keep, kNoFlags)                                 \
  /* convolution, pooling */                                                            \
  X(conv1d, Convolution, conv_forward, Float, Lower, Lower, kNoFlags)                   \
  X(conv2d, Convolution, conv_forward, Float, Lower, Lower, kNoFlags)                   \
  X(conv_transpose2d, Convolution, conv_backward_data, Float, Lower, Lower, kNoFlags)   \
  X(conv3d, Convolution, conv_forward, Float, Lower, Lower, kNoFlags)                   \
  X(conv_transpose1d, Convolution, conv_backward_data, Float, Lower, Lower, kNoFlags)   \
  X(conv_transpose3d, Convolution, conv_backward_data, Float, Lower, Lower, kNoFlags)   \
  X(max_pool1d, Pooling, max_pool2d, Numeric, Keep, Keep, kNoFlags)                     \
  X(max_pool2d, Pooling, max_pool2d, Numeric, Keep, Keep, kNoFlags)                     \
  X(max_pool2d_with_indices, Pooling, max_pool2d, Numeric, Keep, Keep, kNoFlags)        \
  X(avg_pool1d, Pooling, avg_pool2d, Numeric, Keep, Keep, kNoFlags)                     \
  X(avg_pool2d, Pooling, avg_pool2d, Numeric, Keep, Keep, kNoFlags)                     \
  X(adaptive_avg_pool2d, Pooling, avg_pool2d, Float, Keep, Keep, kNoFlags)              \
  /* normalization, attention */                                                        \
  X(layer_norm, Normalization, layer_norm, Float, Fp32, Keep, kNoFlags)                 \
  X(rms_norm, Normalization, rms_norm, Float, Fp32, Keep, kNoFlags)                     \
  X(group_norm, Normalization, group_norm, Float, Fp32, Keep, kNoFlags)                 \
  X(batch_norm, Normalization, batch_norm, Float, Keep, Keep, kNoFlags)                 \
  X(scaled_dot_product_attention, Attention, none, Float, Lower, Lower, kNoFlags)       \
  /* losses */                                                                          \
  X(cross_entropy, Loss, cross_entropy, Float, Fp32, Fp32, kNoFlags)                    \
  X(nll_loss, Loss, none, Float, Fp32, Fp32, kNoFlags)                                  \
  X(mse_loss, Loss, none, Float, Fp32, Fp32, kNoFlags)                                  \
  X(mse_loss_backward, Loss, activation_backward, Float, Keep, Keep, kNoFlags)          \
  X(l1_loss, Loss, none, Numeric, Fp32, Fp32, kNoFlags)                                 \
  X(huber_loss, Loss, none, Float, Fp32, Fp32, kNoFlags)                                \
  X(smooth_l1_loss, Loss, none, Float, Fp32, Fp32, kNoFlags)                            \
  X(kl_div, Loss, none, Float, Fp32, Fp32, kNoFlags)                                    \
  X(binary_cross_entropy, Loss, none, Float, Banned, Fp32, kNoFlags)                    \
  X(binary_cross_entropy_with_logits, Loss, none, Float, Fp32, Fp32, kNoFlags)          \
  /* indexing */                                                                        \
  X(index, Index, index, All, Keep, Keep, kNoFlags)                                     \
  X(index_put, Index, index_put, All, Promote, Keep, kInplace)                          \
  X(index_select, Index, index_select, All, Keep, Keep, kNoFlags)                       \
  X(index_add, Index, index_add, All, Keep, Keep, kInplace)                             \
  X(gather, Index, gather, All, Keep, Keep, kNoFlags)                                   \
  X(scatter, Index, scatter, All, Keep, Keep, kInplace)                                 \
  X(scatter_add, Index, scatter_add, All, Promote, Keep, kInplace)                      \
  X(masked_select, Index, nonzero, All, Keep, Keep, kSync)                              \
  X(nonzero, Index, nonzero, All, Keep, Keep, kSync)                                    \
  X(embedding, Index, index_select, Float, Keep, Keep, kNoFlags)                        \
  /* random */                                                                          \
  X(rand, Factory, uniform, Float, Keep, Keep, kRandom)                                 \
  X(rand_like, Factory, uniform, Float, Keep, Keep, kRandom)                            \
  X(uniform, Random, uniform, Float, Keep, Keep, kInplace | kRandom)                    \
  X(randn, Factory, normal, Float, Keep, Keep, kRandom)                                 \
  X(randn_like, Factory, normal, Float, Keep, Keep, kRandom)                            \
  X(normal, Random, normal, Float, Keep, Keep, kInplace | kRandom)                      \
  X(randint, Factory, randint, Numeric, Keep, Keep, kRandom)                            \
  X(random, Random, randint, Numeric, Keep, Keep, kInplace | kRandom)                   \
  X(randperm, Factory, none, Numeric, Keep, Keep, kRandom)                              \
  X(bernoulli, Random, bernoulli, Float, Keep, Keep, kInplace | kRandom)                \
  X(multinomial, Random, none, Float, Keep, Keep, kRandom | kSync)                      \
  X(dropout, Random, bernoulli, Float, Keep, Keep, kRandom)                             \
  X(_standard_gamma, Random, sample, Float, Keep, Keep, kRandom)                        \
  X(poisson, Random, sample, Float, Keep, Keep, kRandom)                                \
  X(binomial, Random, sample, Float, Keep, Keep, kRandom)                               \
  X(_standard_gamma_grad, Other, sample, Float, Keep, Keep, kNoFlags)                   \
  X(igamma, Other, sample, Float, Keep, Keep, kNoFlags)                                 \
  /* factories */                                                                       \
  X(empty, Factory, none, All, Keep, Keep, kNoFlags)                                    \
  X(empty_like, Factory, none, All, Keep, Keep, kNoFlags)                               \
  X(empty_strided, Factory, none, All, Keep, Keep, kNoFlags)                            \
  X(zeros, Factory, fill, All, Keep, Keep, kNoFlags)                                    \
  X(zeros_like, Factory, fill, All, Keep, Keep, kNoFlags)                               \
  X(ones, Factory, fill, All, Keep, Keep, kNoFlags)                                     \
  X(ones_like, Factory, fill, All, Keep, Keep, kNoFlags)                                \
  X(full, Factory, fill, All, Keep, Keep, kNoFlags)                                     \
  X(full_like, Factory, fill, All, Keep, Keep, kNoFlags)                                \
  X(scalar_tensor, Factory, fill, All, Keep, Keep, kNoFlags)                            \
  X(tensor, Factory, copy, All, Keep, Keep, kNoFlags)                                   \
  X(eye, Factory, fill, All, Keep, Keep, kNoFlags)                                      \
  X(arange, Factory, arange, Numeric, Keep, Keep, kNoFlags)                             \
  X(linspace, Factory, linspace, Numeric, Keep, Keep, kNoFlags)                         \
  X(from_blob, Factory, none, All, Keep, Keep, kNoFlags)                                \
  /* multi-tensor (foreach) ops and fused optimizer steps */                            \
  X(_foreach_add, Foreach, foreach_pointwise, Float, Keep, Keep, kInplace)              \
  X(_foreach_mul, Foreach, foreach_pointwise, Float, Keep, Keep, kInplace)              \
  X(_foreach_div, Foreach, foreach_pointwise, Float, Keep, Keep, kInplace)              \
  X(_foreach_sqrt, Foreach, foreach_pointwise, Float, Keep, Keep, kInplace)             \
  X(_foreach_addcmul, Foreach, foreach_pointwise, Float, Keep, Keep, kInplace)          \
  X(_foreach_addcdiv, Foreach, foreach_pointwise, Float, Keep, Keep, kInplace)          \
  X(_foreach_lerp, Foreach, foreach_pointwise, Float, Keep, Keep, kInplace)             \
  X(_foreach_maximum, Foreach, foreach_pointwise, Float, Keep, Keep, kInplace)          \
  X(_foreach_zero, Foreach, foreach_pointwise, Float, Keep, Keep, kInplace)             \
  X(_foreach_norm, Foreach, foreach_norm, Float, Keep, Keep, kNoFlags)                  \
  X(_amp_foreach_non_finite_check_and_unscale, Foreach, amp_unscale, Float, Keep, Keep, kInplace)
// clang-format on

/// The ops of the table, one enumerator per row (`Op::exp`).
enum class Op : uint16_t {
#define BRISK_OP_ENUM(name, kind, slot, dtypes, amp, cpu_amp, flags) name,
  BRISK_FORALL_OP_ROWS(BRISK_OP_ENUM)
#undef BRISK_OP_ENUM
      kNumOps
};
constexpr int kNumTableOps = static_cast<int>(Op::kNumOps);

/// One row of the table. `slot` is the OpId of the dispatch slot as an int
/// (-1: none), so that this header needs nothing from dispatch.h.
struct OpInfo {
  const char* name;
  OpKind kind;
  int16_t slot;
  DTypeClass dtypes;
  AmpPolicy amp;      ///< under CUDA autocast
  AmpPolicy cpu_amp;  ///< under CPU autocast
  uint8_t flags;

  /// The autocast policy on a device type.
  AmpPolicy amp_on(DeviceType d) const { return d == DeviceType::CPU ? cpu_amp : amp; }

  bool pointwise() const { return kind == OpKind::Unary || kind == OpKind::Binary || kind == OpKind::Ternary; }
  bool has_inplace() const { return flags & kInplace; }
  bool has_out() const { return flags & kOut; }
  bool syncs() const { return flags & kSync; }
  bool random() const { return flags & kRandom; }
};

/// The row of an op.
const OpInfo& op_info(Op op);
/// How a name the profiler records relates to a row.
struct OpLookup {
  const OpInfo* info = nullptr;  ///< null: no row
  bool inplace = false;          ///< `add_`
  bool out = false;              ///< `add_out`
};
/// The row of a profiler name: `exp`, its in-place form `exp_`, its out=
/// form `sum_out` (only where the row has that form).
OpLookup find_op(std::string_view name);
/// "Unary", "View", ...
const char* op_kind_name(OpKind k);
const char* amp_policy_name(AmpPolicy a);

}  // namespace brisk
