// Host planning of multi_tensor_apply launches (see
// backend/cuda/multi_tensor_apply.cuh and docs/design/cuda_gemm_optim.md).
//
// Pure C++: no CUDA header, so the planner, the metadata layout and the
// block -> (tensor, chunk) walk that the kernels use are tested on the CPU
// (tests/cuda/test_mta_plan.cpp).
//
// Note [Multi-tensor launch metadata]
// A list of tensors is cut into chunks of kChunkSize elements; one thread
// block processes one chunk of one tensor. A launch carries, by value in its
// kernel parameter, a Meta struct: for each tensor it touches (a "slot") the
// address of that tensor in each of the kDepth lists, its element count and
// kScalars per-tensor scalars; for each block, the slot and the chunk index
// it works on. The capacities (tensors and blocks per launch) are computed
// from the parameter budget, so that Meta plus the op's arguments fit the
// limit: 4 KB on every CUDA version, 32764 bytes with CUDA 12.1+ on Volta or
// newer. A list that needs more than one launch's capacity is split; a tensor
// with more chunks than fit in the current launch continues in the next one
// (its slot is repeated there). Zero-size tensors get no slot and no block.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__CUDACC__)
#define BRISK_MTA_HD __host__ __device__ __forceinline__
#else
#define BRISK_MTA_HD inline
#endif

namespace brisk::cuda::detail::mta {

/// Elements per chunk (one block's work).
constexpr int64_t kChunkSize = 65536;

/// Kernel parameter limits, in bytes.
constexpr int kClassicParamBytes = 4096;  ///< every CUDA version and GPU
constexpr int kLargeParamBytes = 32764;   ///< CUDA 12.1+ runtime and driver, compute capability >= 7.0
/// Bytes of each launch's parameter kept for the op's own arguments (the
/// functor passed next to the metadata); launchers static_assert this.
constexpr int kArgsReserve = 256;
/// Blocks provisioned per tensor slot: small tensors use one block each,
/// large ones many, and a launch should fill up on either.
constexpr int kBlocksPerSlot = 3;

/// Tensors and blocks per launch for `kDepth` lists and `kScalars` per-tensor
/// doubles within a `kParamBytes` parameter.
template <int kDepth, int kScalars, int kParamBytes>
struct Capacity {
  static constexpr int kBudget = kParamBytes - kArgsReserve - 8;  // 8: tail padding of the struct
  static constexpr int kPerTensor = 8 * (kDepth + 1 + kScalars);  // addresses, numel, scalars
  static constexpr int kPerBlock = 4 + 2;                         // chunk (int32), slot (uint16)
  static constexpr int kTensors = kBudget / (kPerTensor + kBlocksPerSlot * kPerBlock);
  static constexpr int kBlocks = (kBudget - kTensors * kPerTensor) / kPerBlock;
  static_assert(kTensors >= 1 && kTensors <= 65535 && kBlocks >= kTensors, "parameter budget too small");
};

/// Per-tensor scalars; an empty struct when there are none.
template <int kScalars, int kTensors>
struct SlotScalars {
  double scalar[kScalars][kTensors];
};
template <int kTensors>
struct SlotScalars<0, kTensors> {};

/// The metadata of one launch, passed by value as a kernel parameter.
template <int kDepth, int kScalars, int kParamBytes>
struct Meta {
  using Cap = Capacity<kDepth, kScalars, kParamBytes>;
  static constexpr int kDepthV = kDepth, kScalarsV = kScalars, kParamBytesV = kParamBytes;
  static constexpr int kMaxTensors = Cap::kTensors, kMaxBlocks = Cap::kBlocks;

  void* addr[kDepth][kMaxTensors];  ///< address of each slot's tensor in each list (null: list absent)
  int64_t numel[kMaxTensors];       ///< elements of each slot's tensor
  [[no_unique_address]] SlotScalars<kScalars, kMaxTensors> scalars;
  int32_t block_chunk[kMaxBlocks];  ///< chunk index (within its tensor) of each block
  uint16_t block_slot[kMaxBlocks];  ///< slot of each block
};

/// What block `block` of a launch works on: elements [begin, end) of the
/// tensor in slot `slot`.
struct BlockWork {
  int slot;
  int64_t begin, end;
};
template <class M>
BRISK_MTA_HD BlockWork block_work(const M& m, int block) {
  const int slot = m.block_slot[block];
  const int64_t begin = int64_t(m.block_chunk[block]) * kChunkSize;
  const int64_t n = m.numel[slot];
  return BlockWork{slot, begin, begin + kChunkSize < n ? begin + kChunkSize : n};
}

/// Chunks of a tensor of `numel` elements.
constexpr int64_t num_chunks(int64_t numel) { return (numel + kChunkSize - 1) / kChunkSize; }

/// One tensor's share of a launch: chunks [first_chunk, first_chunk + chunks)
/// of list entry `tensor`; its blocks follow those of the previous segments.
struct Segment {
  int64_t tensor;
  int64_t first_chunk;
  int64_t chunks;
};
struct Launch {
  std::vector<Segment> segments;  ///< one per slot, in slot order
  int64_t blocks = 0;             ///< blocks of this launch (sum of the segments' chunks)
  int64_t first_block = 0;        ///< blocks of all earlier launches (a global block index)
};

/// The launches covering tensors of the given sizes in list order, with at
/// most `max_tensors` slots and `max_blocks` blocks each. Global block g of
/// the plan is chunk c of tensor t in the order (t, c): block indices of a
/// tensor's chunks are contiguous across launches.
inline std::vector<Launch> plan_launches(const std::vector<int64_t>& numels, int max_tensors, int max_blocks) {
  std::vector<Launch> launches;
  Launch cur;
  int64_t done_blocks = 0;
  auto flush = [&] {
    if (cur.blocks == 0) return;
    cur.first_block = done_blocks;
    done_blocks += cur.blocks;
    launches.push_back(std::move(cur));
    cur = Launch{};
  };
  for (size_t t = 0; t < numels.size(); ++t) {
    const int64_t chunks = num_chunks(numels[t]);
    for (int64_t c = 0; c < chunks;) {
      if (int64_t(cur.segments.size()) == max_tensors) flush();
      const int64_t take = chunks - c < max_blocks - cur.blocks ? chunks - c : max_blocks - cur.blocks;
      cur.segments.push_back(Segment{int64_t(t), c, take});
      cur.blocks += take;
      c += take;
      if (cur.blocks == max_blocks) flush();
    }
  }
  flush();
  return launches;
}

// Note [Parameter size and launch cost]
// The driver copies a kernel's whole parameter block at each launch. Measured
// on an H100 (driver 580, CUDA 13), back-to-back launches of a one-block
// kernel take about 4 us with 64-byte or 4 KB parameters and 8 to 12 us with
// 32 KB ones. So a list whose plan in the 4 KB layout needs at most
// kMaxSmallLaunches launches is launched in that layout (a short list: one
// cheap launch instead of one dear one); longer lists use the 32 KB layout,
// whose 8x capacity saves more launches than its size costs.
constexpr size_t kMaxSmallLaunches = 2;

/// The plan in the small layout (capacities small_tensors, small_blocks) when
/// it takes at most kMaxSmallLaunches launches; false (and `plan` untouched)
/// when the list is longer. Cheap for long lists: they are rejected from
/// their counts before any planning.
inline bool plan_small(const std::vector<int64_t>& numels, int small_tensors, int small_blocks,
                       std::vector<Launch>& plan) {
  int64_t tensors = 0, chunks = 0;
  for (int64_t n : numels) {
    tensors += n > 0;
    chunks += num_chunks(n);
  }
  if (tensors > int64_t(kMaxSmallLaunches) * small_tensors || chunks > int64_t(kMaxSmallLaunches) * small_blocks)
    return false;
  std::vector<Launch> p = plan_launches(numels, small_tensors, small_blocks);
  if (p.size() > kMaxSmallLaunches) return false;
  plan = std::move(p);
  return true;
}

/// Fills `m` for launch `l`. lists[d] holds the addresses of the tensors of
/// list d (null: list absent), numels their sizes, scalars[s] (s <
/// kScalars) per-tensor scalars (null: zeros).
template <class M>
void fill_meta(M& m, const Launch& l, void* const* const* lists, const int64_t* numels,
               const double* const* scalars = nullptr) {
  int block = 0;
  for (size_t s = 0; s < l.segments.size(); ++s) {
    const Segment& seg = l.segments[s];
    for (int d = 0; d < M::kDepthV; ++d) m.addr[d][s] = lists[d] ? lists[d][seg.tensor] : nullptr;
    m.numel[s] = numels[seg.tensor];
    if constexpr (M::kScalarsV > 0)
      for (int k = 0; k < M::kScalarsV; ++k) m.scalars.scalar[k][s] = scalars && scalars[k] ? scalars[k][seg.tensor] : 0.0;
    for (int64_t c = 0; c < seg.chunks; ++c, ++block) {
      m.block_chunk[block] = int32_t(seg.first_chunk + c);
      m.block_slot[block] = uint16_t(s);
    }
  }
}

}  // namespace brisk::cuda::detail::mta
