// What the CPU brisk runs on can do, where a kernel choice or an advisor
// rule depends on it.
#pragma once

namespace brisk::detail {

/// The CPU multiplies bfloat16 pairs in hardware (AVX512_BF16 or AMX): oneDNN
/// runs bfloat16 GEMMs and convolutions natively, about twice float32's rate
/// (elsewhere it would emulate them, slower than converting to float32).
inline bool cpu_has_bf16_dot() {
  static const bool yes = __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
  return yes;
}

}  // namespace brisk::detail
