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

/// Note [Random draws in a CUDA graph]
/// A captured kernel replays its launch arguments, so a seed and offset
/// passed by value would give the same numbers on every replay. While a
/// thread captures a CUDA graph with a random state (begin_graph_random,
/// from CUDAGraph::capture_begin), reservations for CUDA ops come from the
/// graph's own counter instead of the default generator: the offset they
/// return is relative, and the kernel adds it to the (seed, base offset)
/// pair it reads from `graph_random_state()` in device memory. At each
/// replay the graph reserves the total it counted from the default
/// generator and writes that (seed, offset) to the device before launching:
/// every replay draws fresh numbers, the same ones eager ops would draw
/// from the same generator state, and the generator moves on as it would
/// eagerly. Host (CPU) reservations during a capture are not affected.
PhiloxState reserve_random_blocks_for(bool cuda, uint64_t blocks);
/// Starts counting this thread's CUDA reservations for a graph whose
/// kernels read (seed, base offset) at `device_state` (two uint64 in device
/// memory). Not nestable: a thread captures one graph at a time.
void begin_graph_random(const uint64_t* device_state);
/// Ends the count and returns how many blocks the capture reserved.
uint64_t end_graph_random();
/// The device state of the graph this thread is capturing (null when none).
const uint64_t* graph_random_state();

/// Sets the seed and resets the offset to 0.
void set_default_seed(uint64_t seed);
/// The seed of the default generator.
uint64_t default_seed();
/// The full state, e.g. to save and restore it around CUDA graph capture.
PhiloxState default_generator_state();
void set_default_generator_state(PhiloxState s);

}  // namespace detail
}  // namespace brisk
