// The multi_tensor_apply planner and launch metadata (backend/cuda/mta_plan.h),
// on the CPU: no GPU needed, never skipped. Every element of every tensor is
// covered by exactly one block, through the same block -> (tensor, chunk)
// walk the kernels use; each launch's metadata fits the kernel parameter
// limit and its capacities; block and launch counts are what they must be.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda/mta_plan.h"

namespace mta = brisk::cuda::detail::mta;
using mta::kChunkSize;

namespace {

/// A fake address that names (list, tensor): never dereferenced.
void* fake_addr(int list, int64_t tensor) { return reinterpret_cast<void*>(uintptr_t((tensor + 1) << 4 | list)); }

/// Deterministic mixed sizes: mostly small (zeros included), chunk-edge sizes,
/// some spanning several chunks and, with `huge`, tensors with more chunks
/// than one launch holds.
std::vector<int64_t> mixed_sizes(size_t n, int64_t max_blocks, bool huge) {
  std::vector<int64_t> r(n);
  uint64_t s = 0x9e3779b97f4a7c15ull ^ n;
  for (size_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t v = s >> 33;
    switch (v % 16) {
      case 0: r[i] = 0; break;
      case 1: r[i] = kChunkSize; break;
      case 2: r[i] = kChunkSize + 1; break;
      case 3: r[i] = kChunkSize - 1; break;
      case 4: r[i] = int64_t(v % 7) * kChunkSize + int64_t(v % 1000); break;
      default: r[i] = int64_t(v % 300) + 1; break;
    }
  }
  if (huge && n >= 1) {
    r[n / 2] = 2 * max_blocks * kChunkSize + 17;  // spans three launches on its own
    r.back() = max_blocks * kChunkSize;           // exactly one launch of blocks
  }
  if (huge && n == 1) r[0] = 3 * max_blocks * kChunkSize + 1;
  return r;
}

struct Totals {
  size_t launches = 0;
  int64_t blocks = 0;
};

/// Plans `numels` for metadata type M, fills every launch's metadata and
/// checks it (see the top of the file); counts into `tot`.
template <class M>
void check_plan_into(const std::vector<int64_t>& numels, Totals& tot) {
  const size_t n = numels.size();
  std::vector<std::vector<void*>> addrs(M::kDepthV, std::vector<void*>(n));
  for (int d = 0; d < M::kDepthV; ++d)
    for (size_t t = 0; t < n; ++t) addrs[d][t] = fake_addr(d, int64_t(t));
  std::vector<void* const*> lists(M::kDepthV);
  for (int d = 0; d < M::kDepthV; ++d) lists[d] = addrs[d].data();
  std::vector<std::vector<double>> scal(std::max(M::kScalarsV, 1), std::vector<double>(n));
  std::vector<const double*> scal_ptrs;
  for (auto& v : scal) {
    for (size_t t = 0; t < n; ++t) v[t] = double(t) + 0.25 * double(&v - &scal[0]);
    scal_ptrs.push_back(v.data());
  }

  const std::vector<mta::Launch> plan = mta::plan_launches(numels, M::kMaxTensors, M::kMaxBlocks);
  std::vector<std::vector<int>> hits(n);  // per tensor, per chunk
  for (size_t t = 0; t < n; ++t) hits[t].assign(size_t(mta::num_chunks(numels[t])), 0);

  auto meta = std::make_unique<M>();
  for (const mta::Launch& l : plan) {
    ++tot.launches;
    EXPECT_GE(l.blocks, 1);
    EXPECT_LE(l.blocks, M::kMaxBlocks);
    EXPECT_GE(l.segments.size(), 1u);
    EXPECT_LE(l.segments.size(), size_t(M::kMaxTensors));
    EXPECT_EQ(l.first_block, tot.blocks);
    int64_t seg_blocks = 0;
    for (const mta::Segment& s : l.segments) {
      EXPECT_GE(s.chunks, 1) << "a slot without blocks";
      seg_blocks += s.chunks;
    }
    EXPECT_EQ(seg_blocks, l.blocks);
    tot.blocks += l.blocks;

    mta::fill_meta(*meta, l, lists.data(), numels.data(), scal_ptrs.data());
    for (int b = 0; b < int(l.blocks); ++b) {
      const mta::BlockWork w = mta::block_work(*meta, b);
      ASSERT_GE(w.slot, 0);
      ASSERT_LT(w.slot, int(l.segments.size()));
      const int64_t t = l.segments[size_t(w.slot)].tensor;
      ASSERT_GE(t, 0);
      ASSERT_LT(t, int64_t(n));
      for (int d = 0; d < M::kDepthV; ++d) ASSERT_EQ(meta->addr[d][w.slot], fake_addr(d, t));
      ASSERT_EQ(meta->numel[w.slot], numels[size_t(t)]);
      if constexpr (M::kScalarsV > 0)
        for (int k = 0; k < M::kScalarsV; ++k) ASSERT_EQ(meta->scalars.scalar[k][w.slot], scal[size_t(k)][size_t(t)]);
      ASSERT_EQ(w.begin % kChunkSize, 0);
      ASSERT_LT(w.begin, w.end);
      ASSERT_EQ(w.end, std::min(numels[size_t(t)], w.begin + kChunkSize));
      hits[size_t(t)][size_t(w.begin / kChunkSize)] += 1;
    }
  }
  int64_t expect_blocks = 0;
  for (size_t t = 0; t < n; ++t) {
    expect_blocks += mta::num_chunks(numels[t]);
    for (size_t c = 0; c < hits[t].size(); ++c)
      if (hits[t][c] != 1) {
        ADD_FAILURE() << "tensor " << t << " (" << numels[t] << " elements) chunk " << c << " covered " << hits[t][c]
                      << " times";
        return;
      }
  }
  EXPECT_EQ(tot.blocks, expect_blocks);
}
template <class M>
Totals check_plan(const std::vector<int64_t>& numels) {
  Totals tot;
  check_plan_into<M>(numels, tot);
  return tot;
}

// The metadata types the CUDA kernels use (foreach: 4 lists + a per-tensor
// scalar; Adam 5 lists; SGD 3; norm 1), in both layouts.
template <int kParamBytes>
struct Layouts {
  using Foreach = mta::Meta<4, 1, kParamBytes>;
  using Adam = mta::Meta<5, 0, kParamBytes>;
  using Sgd = mta::Meta<3, 0, kParamBytes>;
  using Norm = mta::Meta<1, 0, kParamBytes>;
};
using Large = Layouts<mta::kLargeParamBytes>;
using Classic = Layouts<mta::kClassicParamBytes>;

template <class M, int kParamBytes>
void expect_fits() {
  SCOPED_TRACE("depth " + std::to_string(M::kDepthV) + ", " + std::to_string(kParamBytes) + " bytes");
  EXPECT_LE(sizeof(M) + mta::kArgsReserve, size_t(kParamBytes));
  // The budget is used: less than one more tensor slot's worth is left over.
  EXPECT_GT(sizeof(M) + mta::kArgsReserve + 8 * (M::kDepthV + 1 + M::kScalarsV) + 6 * mta::kBlocksPerSlot,
            size_t(kParamBytes) - 8);
  EXPECT_GE(M::kMaxBlocks, mta::kBlocksPerSlot * M::kMaxTensors);
  EXPECT_LE(M::kMaxTensors, 65535);  // block_slot is 16-bit
}

}  // namespace

TEST(MtaPlan, MetadataFitsTheParameterLimit) {
  expect_fits<Large::Foreach, mta::kLargeParamBytes>();
  expect_fits<Large::Adam, mta::kLargeParamBytes>();
  expect_fits<Large::Sgd, mta::kLargeParamBytes>();
  expect_fits<Large::Norm, mta::kLargeParamBytes>();
  expect_fits<Classic::Foreach, mta::kClassicParamBytes>();
  expect_fits<Classic::Adam, mta::kClassicParamBytes>();
  expect_fits<Classic::Sgd, mta::kClassicParamBytes>();
  expect_fits<Classic::Norm, mta::kClassicParamBytes>();
  // The large layout holds about 8x as much per launch.
  EXPECT_GE(Large::Adam::kMaxTensors, 7 * Classic::Adam::kMaxTensors);
}

TEST(MtaPlan, EmptyListsAndZeroSizeTensorsLaunchNothing) {
  EXPECT_TRUE(mta::plan_launches({}, 10, 30).empty());
  EXPECT_TRUE(mta::plan_launches({0, 0, 0}, 10, 30).empty());
  const auto p = mta::plan_launches({0, 5, 0}, 10, 30);
  ASSERT_EQ(p.size(), 1u);
  ASSERT_EQ(p[0].segments.size(), 1u);
  EXPECT_EQ(p[0].segments[0].tensor, 1);
  EXPECT_EQ(p[0].blocks, 1);
}

TEST(MtaPlan, SplitsAtTheTensorCapacity) {
  using M = Large::Foreach;
  const int cap = M::kMaxTensors;
  Totals t = check_plan<M>(std::vector<int64_t>(size_t(cap), 7));
  EXPECT_EQ(t.launches, 1u);
  t = check_plan<M>(std::vector<int64_t>(size_t(cap) + 1, 7));
  EXPECT_EQ(t.launches, 2u);
  EXPECT_EQ(t.blocks, cap + 1);
}

TEST(MtaPlan, SplitsAtTheBlockCapacity) {
  using M = Large::Adam;
  const int64_t cap = M::kMaxBlocks;
  Totals t = check_plan<M>({cap * kChunkSize});
  EXPECT_EQ(t.launches, 1u);
  const auto p = mta::plan_launches({cap * kChunkSize + 1}, M::kMaxTensors, M::kMaxBlocks);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].blocks, 1);
  EXPECT_EQ(p[1].segments[0].first_chunk, cap);  // the tensor continues in the next launch
  EXPECT_EQ(p[1].first_block, cap);
  // A tensor after a full launch starts the next one.
  t = check_plan<M>({cap * kChunkSize, 3});
  EXPECT_EQ(t.launches, 2u);
  // Small tensors then a large one: the large one fills the rest of the first launch.
  const auto q = mta::plan_launches({1, 1, 4 * cap * kChunkSize}, M::kMaxTensors, M::kMaxBlocks);
  ASSERT_EQ(q.size(), 5u);
  EXPECT_EQ(q[0].segments.size(), 3u);
  EXPECT_EQ(q[0].segments[2].chunks, cap - 2);
  EXPECT_EQ(q[4].blocks, 2);
}

TEST(MtaPlan, ShortListsTakeTheSmallLayout) {
  using S = Classic::Foreach;
  const int64_t T = S::kMaxTensors, B = S::kMaxBlocks;
  std::vector<mta::Launch> plan;
  // Up to kMaxSmallLaunches launches of the 4 KB layout: taken.
  ASSERT_EQ(mta::kMaxSmallLaunches, 2u);
  ASSERT_TRUE(mta::plan_small(std::vector<int64_t>(size_t(2 * T), 5), int(T), int(B), plan));
  EXPECT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan.size(), mta::plan_launches(std::vector<int64_t>(size_t(2 * T), 5), int(T), int(B)).size());
  ASSERT_TRUE(mta::plan_small({2 * B * kChunkSize}, int(T), int(B), plan));
  EXPECT_EQ(plan.size(), 2u);
  ASSERT_TRUE(mta::plan_small({0, 0}, int(T), int(B), plan));
  EXPECT_TRUE(plan.empty());
  // One more tensor or chunk than two launches hold: the large layout.
  plan.clear();
  EXPECT_FALSE(mta::plan_small(std::vector<int64_t>(size_t(2 * T + 1), 5), int(T), int(B), plan));
  EXPECT_FALSE(mta::plan_small({2 * B * kChunkSize + 1}, int(T), int(B), plan));
  EXPECT_TRUE(plan.empty());
  // Within the counts but three launches once split (a full launch of blocks,
  // then more slots than the rest of it): rejected after planning.
  std::vector<int64_t> odd{(B - 1) * kChunkSize + 1};
  for (int64_t i = 0; i < T + 1; ++i) odd.push_back(1);
  EXPECT_EQ(mta::plan_launches(odd, int(T), int(B)).size(), 3u);
  EXPECT_FALSE(mta::plan_small(odd, int(T), int(B), plan));
}

class MtaPlanLists : public ::testing::TestWithParam<int> {};

TEST_P(MtaPlanLists, EveryElementOnceInBothLayouts) {
  const size_t n = size_t(GetParam());
  // Per layout: mixed sizes with huge tensors, and all-small ones (the
  // optimizer case), for which the launch count is the tensor count over
  // the slot capacity.
  auto run = [&](auto tag) {
    using M = typename decltype(tag)::type;
    SCOPED_TRACE(std::to_string(n) + " tensors, depth " + std::to_string(M::kDepthV) + ", " +
                 std::to_string(M::kMaxTensors) + " slots, " + std::to_string(M::kMaxBlocks) + " blocks");
    check_plan<M>(mixed_sizes(n, M::kMaxBlocks, true));
    std::vector<int64_t> small(n);
    for (size_t i = 0; i < n; ++i) small[i] = int64_t(i % 97) + 1;
    const Totals t = check_plan<M>(small);
    EXPECT_EQ(t.blocks, int64_t(n));
    EXPECT_EQ(t.launches, (n + size_t(M::kMaxTensors) - 1) / size_t(M::kMaxTensors));
  };
  run(std::type_identity<Large::Foreach>{});
  run(std::type_identity<Large::Adam>{});
  run(std::type_identity<Large::Sgd>{});
  run(std::type_identity<Large::Norm>{});
  run(std::type_identity<Classic::Foreach>{});
  run(std::type_identity<Classic::Adam>{});
}

INSTANTIATE_TEST_SUITE_P(Sizes, MtaPlanLists, ::testing::Values(1, 423, 424, 5000, 20000));
