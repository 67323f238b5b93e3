// How the profiler reaches a GPU activity recorder (CUPTI, in
// src/backend/cuda/cupti_activity.cpp) without including CUDA headers.
//
// Note [GPU activity hooks]
// The profiler (src/profiler) is built the same with or without the CUDA
// backend. A backend that can record GPU activity registers a table of
// functions here before main() runs (a static initializer, as the device
// backends do in core/device_backend.h); a build without one leaves the slot
// empty, and a profile asking for Activity::CUDA records nothing GPU-side and
// says so in ProfileResult::warnings.
//
// While a profile records GPU activity, every event the profiler opens on a
// thread pushes an external correlation id (push) and pops it when it closes
// (pop), so that each kernel, copy or memset the thread launches in between
// is tagged with the innermost open event. The id encodes the event (see
// external_id below); stop() decodes it back to an index of
// ProfileResult::events.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "brisk/profiler.h"

namespace brisk::profiler::detail {

/// One GPU activity, as the recorder hands it over at stop.
struct GpuRecord {
  EventKind kind = EventKind::Kernel;  ///< Kernel, Memcpy or Memset
  std::string name;                    ///< demangled kernel name, "Memcpy HtoD (Pageable -> Device)", ...
  std::string detail;                  ///< kernel launch geometry; empty for copies
  int64_t start_ns = 0, end_ns = 0;    ///< host steady clock (the profiler's clock), ns since its epoch
  int32_t device = 0;
  uint32_t stream = 0;
  uint64_t correlation = 0;            ///< CUPTI's correlation id of the launch
  uint64_t external_id = 0;            ///< the id pushed around the launch; 0 when none was
  int64_t bytes = 0;                   ///< Memcpy/Memset: bytes
};

/// The recorder's entry points (all required).
struct GpuActivityBackend {
  /// Starts recording. Returns "" on success, else why no GPU activity can
  /// be recorded (no device, CUPTI missing, ...). Never throws.
  std::string (*start)();
  /// Stops recording: waits for the devices in use, flushes every record,
  /// and appends them to `out` (host clock) and any problem (dropped records,
  /// a failed synchronisation) to `warnings`. Never throws.
  void (*stop)(std::vector<GpuRecord>& out, std::vector<std::string>& warnings);
  /// Pushes / pops an external correlation id on the calling thread.
  void (*push)(uint64_t id);
  void (*pop)();
};

/// Registers the recorder (called once, by a static initializer).
void set_gpu_activity_backend(const GpuActivityBackend* backend);
/// The registered recorder, or null.
const GpuActivityBackend* gpu_activity_backend();

/// The external correlation id of event `index` of thread `thread` in the
/// profile of generation `generation`: a marker bit, 15 bits of generation,
/// 16 of thread, 32 of index (never 0).
inline uint64_t external_id(uint32_t generation, uint32_t thread, uint32_t index) {
  return (uint64_t(0x8000 | (generation & 0x7FFF)) << 48) | (uint64_t(thread & 0xFFFF) << 32) | uint64_t(index);
}
/// The inverse: false when `id` was not made by external_id for `generation`.
inline bool decode_external_id(uint64_t id, uint32_t generation, uint32_t* thread, uint32_t* index) {
  if ((id >> 48) != (0x8000 | (generation & 0x7FFF))) return false;
  *thread = static_cast<uint32_t>((id >> 32) & 0xFFFF);
  *index = static_cast<uint32_t>(id & 0xFFFFFFFFu);
  return true;
}

}  // namespace brisk::profiler::detail
