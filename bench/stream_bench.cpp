// Eager elementwise ops over long float32 runs (2^24 elements), the cases of
// Note [Prefetching in the eager loops] (src/backend/cpu/loops.h); prints
// `key value` lines (milliseconds, median of 9 calls after 2) for
// bench/stream_bench.py, which adds PyTorch's eager times.
//
//   brisk_stream_bench [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "brisk/brisk.h"

using namespace brisk;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
  set_num_threads(threads);
  manual_seed(0);
  const int64_t n = int64_t(1) << 24;
  Tensor x = rand({n}) * 4 - 2, y = rand({n}) + 1, w = rand({n});
  Tensor keep;
  const std::vector<std::pair<const char*, std::function<void()>>> cases = {
      {"add", [&] { keep = x + y; }},
      {"mul_scalar", [&] { keep = x * 2.5; }},
      {"add_inplace", [&] { w.add_(y); }},
      {"erf", [&] { keep = x.erf(); }},
      {"exp", [&] { keep = x.exp(); }},
      {"sigmoid", [&] { keep = x.sigmoid(); }},
      {"gelu_chain", [&] { keep = x * 0.5 * (1.0 + erf(x / 1.41421)); }},
  };
  for (const auto& [name, f] : cases) {
    f();
    f();
    std::vector<double> t;
    for (int r = 0; r < 9; ++r) {
      const double a = now();
      f();
      t.push_back(now() - a);
    }
    std::sort(t.begin(), t.end());
    std::printf("%s_ms %.4f\n", name, t[t.size() / 2] * 1e3);
  }
  return 0;
}
