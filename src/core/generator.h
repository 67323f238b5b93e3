// The default random generator: a Philox seed and a counter offset.
#pragma once
#include <cstdint>

namespace brisk {
namespace detail {

/// Seed used when manual_seed was never called (PyTorch's default), so
/// programs are reproducible by default.
constexpr uint64_t kDefaultSeed = 67280421310721ull;

/// What a random op needs to produce its numbers: the seed and the first of
/// the counter blocks reserved for it (see Note [Random counter layout]).
struct PhiloxState {
  uint64_t seed = kDefaultSeed;
  uint64_t offset = 0;
};

/// Reserves `blocks` 128-bit counter blocks of the default generator and
/// returns where they start. Thread-safe: concurrent ops get disjoint ranges.
PhiloxState reserve_random_blocks(uint64_t blocks);

/// Sets the seed and resets the offset to 0.
void set_default_seed(uint64_t seed);
/// The seed of the default generator.
uint64_t default_seed();
/// The full state, e.g. to save and restore it around CUDA graph capture.
PhiloxState default_generator_state();
void set_default_generator_state(PhiloxState s);

}  // namespace detail
}  // namespace brisk
