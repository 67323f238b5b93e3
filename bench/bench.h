// Shared pieces of brisk_bench: the timer and the interface between the
// brisk side (bench_brisk.cpp, C++20) and the libtorch side (bench_torch.cpp,
// compiled as C++17 because libtorch 1.13's headers predate C++20).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace bench {

/// How long to run one measurement: `reps` repetitions of `iters` calls each,
/// after `warmup` untimed calls; the result is the median per-call time.
struct Budget {
  int64_t iters = 1;
  int reps = 5;
  int64_t warmup = 1;
  /// Time with the calling thread's CPU clock (user + system, page faults
  /// included) instead of the wall clock. Right for single-threaded cases on
  /// a shared machine: time the thread spends descheduled is not counted.
  bool thread_cpu_time = false;
};

inline double now_seconds(bool thread_cpu_time) {
  if (thread_cpu_time) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Median over repetitions of the mean time of one call of f, in seconds.
/// The median (not the minimum) keeps one lucky or unlucky repetition from
/// deciding the figure; each repetition averages many calls so that the
/// clock's resolution and cost (tens to hundreds of ns) are negligible for
/// the 3x3 host-cost cases.
template <class F>
double median_seconds(F&& f, const Budget& b) {
  for (int64_t i = 0; i < b.warmup; ++i) f();
  std::vector<double> t;
  t.reserve(b.reps);
  for (int r = 0; r < b.reps; ++r) {
    const double t0 = now_seconds(b.thread_cpu_time);
    for (int64_t i = 0; i < b.iters; ++i) f();
    const double t1 = now_seconds(b.thread_cpu_time);
    t.push_back((t1 - t0) / static_cast<double>(b.iters));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// One side's measurement of one case: seconds per call, or why it did not run.
struct Timing {
  double seconds = 0;
  bool ok = false;
  std::string skipped;  ///< reason when !ok
};

/// What a case asks a side to time. Both sides implement run(const Spec&).
enum class Kind {
  // host cost, 3x3 float32, single thread
  HostAdd,          // y = x + x
  HostAddScalar_,   // x.add_(1)
  HostAddTensor_,   // x.add_(x)
  HostT,            // x.t()
  HostSelect,       // x[0]
  HostMatmul,       // matmul(x, x)
  HostEmpty,        // empty({3, 3})
  // bandwidth, float32 vectors of n elements, single thread
  BwAdd,            // z = x + y (allocating, in a loop)
  BwAddOut,         // add_out(z, x, y)
  BwAdd_,           // x.add_(y)
  BwPlainLoop,      // z[i] = x[i] + y[i] (reference, brisk side only)
  BwPlainLoop512,   // the same loop built like brisk's AVX-512 kernels (information)
  // compute
  Matmul,           // (n, n) @ (n, n), float32
  Nonzero,          // nonzero of n float32 elements, about half nonzero
};

struct Spec {
  Kind kind;
  int64_t n = 0;     ///< problem size (elements, or the matrix side)
  int threads = 1;
  Budget budget;
};

// The two sides. Each catches its own exceptions and reports them as skips.
Timing run_brisk(const Spec& s);
Timing run_torch(const Spec& s);
/// "1.13.0", or "" when the bench was built without libtorch.
std::string torch_version();
/// One inter-op thread for libtorch (must run before any libtorch work).
void torch_init();
/// The fills both sides use, so they see identical inputs.
void fill_inputs(float* p, int64_t n, uint32_t seed);
void fill_half_zero(float* p, int64_t n, uint32_t seed);

}  // namespace bench
