// The default generator's state. A mutex keeps (seed, offset) consistent:
// reserving blocks is one short critical section per random op.
#include "core/generator.h"

#include <mutex>

namespace brisk {
namespace detail {
namespace {
std::mutex g_mutex;
PhiloxState g_state;
}  // namespace

PhiloxState reserve_random_blocks(uint64_t blocks) {
  std::lock_guard<std::mutex> lock(g_mutex);
  PhiloxState s = g_state;
  g_state.offset += blocks;
  return s;
}

void set_default_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_state.seed = seed;
  g_state.offset = 0;
}

uint64_t default_seed() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_state.seed;
}

PhiloxState default_generator_state() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_state;
}

void set_default_generator_state(PhiloxState s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_state = s;
}

}  // namespace detail
}  // namespace brisk
