// Per-thread library handles (cuBLAS, cuDNN). Each thread gets its own state
// per device, created on its first use there; when the thread exits, its
// states go to a per-device free list and the next thread that needs one
// takes it over. States are never destroyed: the libraries' handles stay
// valid until the process ends, and a pool of threads reuses them.
#pragma once
#include <array>
#include <mutex>
#include <vector>

#include "brisk/error.h"

namespace brisk::cuda::detail {

template <class State>
class ThreadStates {
 public:
  static constexpr int kMaxDevices = 64;

  /// This thread's state for device `dev`: its own, a recycled one, or
  /// `create()` (which returns a new State*). `library` names the handles in
  /// the error for an out-of-range device ("cuBLAS").
  template <class Create>
  static State& get(int dev, const char* op, const char* library, Create&& create) {
    BRISK_CHECK(dev >= 0 && dev < kMaxDevices, op, "device index ", dev, " out of range for ", library, " handles");
    State*& st = lease().states[dev];
    if (!st) {
      {
        Pool& p = pool();
        std::lock_guard<std::mutex> g(p.mu);
        if (!p.free[dev].empty()) {
          st = p.free[dev].back();
          p.free[dev].pop_back();
        }
      }
      if (!st) st = create();
    }
    return *st;
  }

 private:
  struct Pool {
    std::mutex mu;
    std::array<std::vector<State*>, kMaxDevices> free;
  };
  static Pool& pool() {
    static Pool* p = new Pool;  // never destroyed: threads may exit after static destruction
    return *p;
  }
  /// This thread's states; returned to the pool when the thread exits.
  struct Lease {
    std::array<State*, kMaxDevices> states{};
    ~Lease() {
      Pool& p = pool();
      std::lock_guard<std::mutex> g(p.mu);
      for (int d = 0; d < kMaxDevices; ++d)
        if (states[d]) p.free[d].push_back(states[d]);
    }
  };
  static Lease& lease() {
    thread_local Lease l;
    return l;
  }
};

}  // namespace brisk::cuda::detail
