// Host memory: the caching CPU allocator and its statistics.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace brisk {

/// Statistics of an allocator, in bytes.
struct MemoryStats {
  int64_t allocated = 0;       ///< bytes in live tensors now
  int64_t peak_allocated = 0;  ///< maximum of `allocated` since the last reset
  int64_t reserved = 0;        ///< bytes held from the OS (live + cached)
  int64_t peak_reserved = 0;
  int64_t num_allocs = 0;      ///< allocation requests
  int64_t cache_hits = 0;      ///< requests served from the cache
  int64_t cache_misses = 0;    ///< requests that went to the OS
};

/// Interface of a memory source. `free` receives the size given to `allocate`.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void free(void* ptr, size_t nbytes) = 0;
};

/// The default CPU allocator: 64-byte aligned blocks, rounded to size
/// classes and cached when freed, so a block is faulted in by the OS once
/// and reused after that (see docs/design/allocator.md).
Allocator* cpu_allocator();

namespace cpu {
MemoryStats memory_stats();
int64_t memory_allocated();
int64_t memory_reserved();
int64_t max_memory_allocated();
/// Resets the peak counters to the current values.
void reset_peak_memory_stats();
/// Returns every cached (unused) block to the OS.
void empty_cache();
}  // namespace cpu

}  // namespace brisk
