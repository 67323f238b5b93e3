// The timing loop the standalone benches share (compile, amp,
// distributions): median over rounds of the mean time per call, after
// warm-up calls, on the wall clock; and their `key value` output lines.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace bench_timing {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Median over `rounds` of the mean time per call of `iters` calls, in ms.
template <class F>
double time_ms(F&& f, int rounds, int iters, int warmup = 2) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const double a = now();
    for (int i = 0; i < iters; ++i) f();
    t.push_back((now() - a) * 1e3 / iters);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// The standalone benches' options: --threads N (default 1), --quick.
struct Args {
  int threads = 1;
  bool quick = false;
};
inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) a.threads = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--quick")) a.quick = true;
  }
  return a;
}

/// One `key value` line.
inline void out(const char* key, double v) { std::printf("%s %.5f\n", key, v); }

}  // namespace bench_timing
