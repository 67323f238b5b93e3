#include "core/parallel.h"

#include <atomic>
#include <thread>

#include "brisk/error.h"


namespace brisk {
namespace {
std::atomic<int> g_num_threads{0};
int default_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
}  // namespace

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    n = default_threads();
    g_num_threads.store(n, std::memory_order_relaxed);
  }
  return n;
}

void set_num_threads(int n) {
  BRISK_CHECK(n >= 1, "set_num_threads", "expected a positive number of threads, got ", n);
  g_num_threads.store(n, std::memory_order_relaxed);
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  // GEMM follows this count through brisk's own threads (see Note [BLAS
  // threads] in backend/cpu/blas.cpp); OpenBLAS's pool stays at one thread.
}

}  // namespace brisk
