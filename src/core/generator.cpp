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

namespace {
struct GraphRandom {
  const uint64_t* device_state = nullptr;
  uint64_t blocks = 0;
};
thread_local GraphRandom t_graph;
}  // namespace

PhiloxState reserve_random_blocks_for(bool cuda, uint64_t blocks) {
  if (!cuda || t_graph.device_state == nullptr) return reserve_random_blocks(blocks);
  PhiloxState s;
  s.seed = 0;  // (read on the device at replay)
  s.offset = t_graph.blocks;
  t_graph.blocks += blocks;
  return s;
}

void begin_graph_random(const uint64_t* device_state) { t_graph = GraphRandom{device_state, 0}; }

uint64_t end_graph_random() {
  const uint64_t n = t_graph.blocks;
  t_graph = GraphRandom{};
  return n;
}

const uint64_t* graph_random_state() { return t_graph.device_state; }

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
