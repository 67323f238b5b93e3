// Multi-tensor apply on the CPU: a list of tensors is cut into (tensor, range)
// pieces and the pieces are split across brisk's threads. The CPU kernels of
// the foreach ops and the fused optimizers (kernels/multi_tensor.cpp) sit on
// it (the CPU counterpart of the CUDA multi_tensor_apply described in
// DESIGN.md).
//
// Included only by files compiled once per ISA (see cmake/BriskCpuKernels.cmake):
// everything here lives in the ISA namespace so variants never mix.
#pragma once
#include <cstdint>
#include <vector>

#include "brisk/tensor.h"
#include "core/parallel.h"

#ifndef BRISK_CPU_ISA
#error "multi_tensor.h is for the per-ISA kernel files"
#endif

namespace brisk::cpu::BRISK_CPU_ISA {

/// Elements in one piece: big enough to amortize the loop set-up, small
/// enough that a long tensor is shared between threads.
constexpr int64_t kPieceSize = 16384;

struct Piece {
  int32_t tensor;  ///< index into the lists
  int64_t begin, end;  ///< element range inside that tensor
};

/// Pieces covering tensors of the given sizes, in list order.
inline std::vector<Piece> make_pieces(const std::vector<int64_t>& numels, int64_t* total = nullptr) {
  std::vector<Piece> pieces;
  int64_t sum = 0;
  for (size_t i = 0; i < numels.size(); ++i) {
    for (int64_t b = 0; b < numels[i]; b += kPieceSize)
      pieces.push_back(Piece{int32_t(i), b, std::min(numels[i], b + kPieceSize)});
    sum += numels[i];
  }
  if (total) *total = sum;
  return pieces;
}

/// Calls f(piece_index, piece) for every piece; in parallel when the total
/// work exceeds the elementwise grain size. Each piece is visited once.
template <class F>
inline void for_each_piece(const std::vector<Piece>& pieces, int64_t total, const F& f) {
  const int64_t n = int64_t(pieces.size());
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) f(k, pieces[size_t(k)]);
  };
  if (total <= kGrainSize) body(0, n);
  else parallel_for(0, n, 1, body);
}

/// Calls f(tensor, begin, end) over the pieces of tensors of the given sizes.
template <class F>
inline void multi_tensor_apply(const std::vector<int64_t>& numels, const F& f) {
  int64_t total = 0;
  std::vector<Piece> pieces = make_pieces(numels, &total);
  for_each_piece(pieces, total, [&](int64_t, const Piece& p) { f(size_t(p.tensor), p.begin, p.end); });
}

}  // namespace brisk::cpu::BRISK_CPU_ISA
