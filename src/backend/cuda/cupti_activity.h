// GPU activity for the profiler through CUPTI (Activity::CUDA): the loader's
// outcome and the host-side logic of turning CUPTI records into profiler
// events. No CUDA header: host tests include this. The recorder itself is in
// cupti_activity.cpp (built only with the CUDA backend), which registers it
// with the profiler (Note [GPU activity hooks] in profiler/gpu_activity.h).
//
// The loader's entry points are declared weak so that a test links against a
// build without the CUDA backend, where they do not exist (their address is
// null). The inline helpers below work in every build.
#pragma once
#include <cxxabi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cuda/dl_library.h"

namespace brisk::cuda::detail {

/// The outcome of opening CUPTI (Note [CUPTI] in cupti_activity.cpp).
using CuptiLibrary = DlLibrary;

/// Opens CUPTI on the first call (once per process, thread-safe) and
/// resolves the functions the profiler calls. Never throws and needs no GPU;
/// the library stays mapped until the process ends.
[[gnu::weak]] const CuptiLibrary& cupti_library();

/// The names dlopen is given, in order: the soname (LD_LIBRARY_PATH, the
/// ld.so cache), then $CUDA_HOME and $CUDA_PATH's lib64 and
/// extras/CUPTI/lib64, /usr/local/cuda/lib64 and
/// /usr/local/cuda/extras/CUPTI/lib64.
[[gnu::weak]] std::vector<std::string> cupti_search_paths();

// ---- host-side helpers (every build) ----------------------------------------------

/// Maps CUPTI timestamps (ns, CUPTI's clock) to the host's steady clock from
/// two simultaneous readings of both clocks, at the start and at the end of
/// the profile: a linear map when both are known and the rates agree to
/// 0.1% (the clocks tick at the same rate; the two points absorb a slow
/// drift), an offset from the first reading otherwise.
struct ClockMap {
  int64_t host0 = 0;
  uint64_t gpu0 = 0;
  int64_t host1 = 0;
  uint64_t gpu1 = 0;
  bool has_end = false;

  int64_t to_host(uint64_t gpu) const {
    const double delta = gpu >= gpu0 ? double(gpu - gpu0) : -double(gpu0 - gpu);
    if (has_end && gpu1 > gpu0 + 1000000 && host1 > host0) {  // at least 1 ms apart
      const double rate = double(host1 - host0) / double(gpu1 - gpu0);
      if (rate > 0.999 && rate < 1.001) return host0 + static_cast<int64_t>(delta * rate + (delta >= 0 ? 0.5 : -0.5));
    }
    return host0 + static_cast<int64_t>(delta);
  }
};

/// Values of CUPTI's CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind
/// (checked against cupti_activity.h in cupti_activity.cpp).
constexpr int kCopyHtoD = 1, kCopyDtoH = 2, kCopyHtoA = 3, kCopyAtoH = 4, kCopyAtoA = 5, kCopyAtoD = 6,
              kCopyDtoA = 7, kCopyDtoD = 8, kCopyHtoH = 9, kCopyPtoP = 10;
constexpr int kMemPageable = 1, kMemPinned = 2, kMemDevice = 3, kMemArray = 4, kMemManaged = 5,
              kMemDeviceStatic = 6, kMemManagedStatic = 7;

inline const char* cupti_copy_kind_name(int k) {
  switch (k) {
    case kCopyHtoD: return "HtoD";
    case kCopyDtoH: return "DtoH";
    case kCopyHtoA: return "HtoA";
    case kCopyAtoH: return "AtoH";
    case kCopyAtoA: return "AtoA";
    case kCopyAtoD: return "AtoD";
    case kCopyDtoA: return "DtoA";
    case kCopyDtoD: return "DtoD";
    case kCopyHtoH: return "HtoH";
    case kCopyPtoP: return "PtoP";
    default: return "unknown";
  }
}
inline const char* cupti_memory_kind_name(int k) {
  switch (k) {
    case kMemPageable: return "Pageable";
    case kMemPinned: return "Pinned";
    case kMemDevice: return "Device";
    case kMemArray: return "Array";
    case kMemManaged: return "Managed";
    case kMemDeviceStatic: return "Device Static";
    case kMemManagedStatic: return "Managed Static";
    default: return "Unknown";
  }
}
/// PyTorch's names: "Memcpy HtoD (Pageable -> Device)".
inline std::string cupti_memcpy_name(int copy_kind, int src_kind, int dst_kind) {
  return std::string("Memcpy ") + cupti_copy_kind_name(copy_kind) + " (" + cupti_memory_kind_name(src_kind) +
         " -> " + cupti_memory_kind_name(dst_kind) + ")";
}
/// "Memset (Device)".
inline std::string cupti_memset_name(int memory_kind) {
  return std::string("Memset (") + cupti_memory_kind_name(memory_kind) + ")";
}
/// A kernel's name as the table shows it: demangled when it is a mangled
/// C++ name ("_Z..."), as is otherwise (extern "C" kernels, cuBLAS's).
inline std::string cupti_kernel_name(const char* raw) {
  if (!raw) return "<unnamed kernel>";
  if (raw[0] == '_' && raw[1] == 'Z') {
    int status = 0;
    char* d = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
    if (status == 0 && d) {
      std::string s(d);
      std::free(d);
      return s;
    }
    std::free(d);
  }
  return raw;
}
/// A kernel's launch geometry as Event::detail:
/// "grid [x, y, z] block [x, y, z] registers R shared memory B".
inline std::string cupti_kernel_detail(int gx, int gy, int gz, int bx, int by, int bz, int registers,
                                       int64_t shared_bytes) {
  std::string s;
  auto three = [&s](const char* label, int a, int b, int c) {
    s.append(label).append("[").append(std::to_string(a)).append(", ").append(std::to_string(b));
    s.append(", ").append(std::to_string(c)).append("]");
  };
  three("grid ", gx, gy, gz);
  three(" block ", bx, by, bz);
  s.append(" registers ").append(std::to_string(registers));
  s.append(" shared memory ").append(std::to_string(shared_bytes));
  return s;
}

}  // namespace brisk::cuda::detail
