// Intra-op parallelism: one OpenMP pool sized by set_num_threads.
#pragma once
#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace brisk {

/// Elements below which an elementwise op stays on one thread.
constexpr int64_t kGrainSize = 32768;

int get_num_threads();
/// True inside a parallel region (nested regions run serially).
inline bool in_parallel_region() {
#ifdef _OPENMP
  return omp_in_parallel();
#else
  return false;
#endif
}

/// Calls f(begin, end) on disjoint chunks of [begin, end) covering it, in
/// parallel when the range holds more than `grain` items.
template <class F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  if (n <= grain) {
    f(begin, end);
    return;
  }
  int nt = get_num_threads();
  if (nt <= 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  nt = static_cast<int>(std::min<int64_t>(nt, (n + grain - 1) / grain));
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t b = begin + tid * chunk;
    const int64_t e = std::min(end, b + chunk);
    if (b < e) f(b, e);
  }
#else
  f(begin, end);
#endif
}

}  // namespace brisk
