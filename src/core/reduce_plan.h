// ReducePlan: what a reduction kernel sees after the front end has laid the
// input out (see Note [Reduction layout] in src/ops/reduce.cpp).
#pragma once
#include <cstdint>

#include "brisk/device.h"
#include "brisk/dtype.h"

namespace brisk {

// Note [ReducePlan]
// The input is one dense array read as (outer, reduce, inner): element
// (o, r, i) is at in[(o * reduce + r) * inner + i]. Every output is a dense
// (outer, inner) array: output (o, i) is the reduction over r. So
//   inner == 1: each output reduces one contiguous row of `reduce` elements;
//   outer == 1: rows of `inner` elements are accumulated into a vector.
// reduce may be 0 (an empty reduction: outputs get the op's identity) and
// outer * inner may be 0 (nothing to do). The front end owns the buffers;
// the kernel writes every output element exactly once.
//
// Per op:
//   sum, prod, amax, amin, all, any, norm: out = the reduction.
//   argmax, argmin: out = the values (may be null), out2 = int64 indices.
//   var: out = variance or std, out2 = the mean (may be null).
struct ReducePlan {
  Device device;
  const void* in = nullptr;
  ScalarType in_dtype = ScalarType::Undefined;
  void* out = nullptr;
  ScalarType out_dtype = ScalarType::Undefined;
  void* out2 = nullptr;
  ScalarType out2_dtype = ScalarType::Undefined;
  int64_t outer = 1, reduce = 1, inner = 1;
  /// The outer count that decides how a CPU kernel splits long reductions
  /// (0: outer). compile's row blocks (Note [Row fusion]) run a reduction
  /// a few rows at a time and pass the whole call's outer here, so each row
  /// is summed in the same order as in the whole call.
  int64_t chunk_outer = 0;

  int64_t num_outputs() const { return outer * inner; }
};

// Modes of the reduce kernels (KernelArgs::mode).
/// sum: Sum, or Mean (divides by `reduce` in the accumulation type).
enum class SumMode : int { Sum, Mean };
/// var: the variance, or its square root. KernelArgs::s0 is the correction.
enum class VarMode : int { Var, Std };
/// norm: which p (KernelArgs::s0 holds p for General).
enum class NormMode : int { L2, L1, L0, Inf, NegInf, General };

}  // namespace brisk
