// Times float32 GEMM (C = A @ B, row-major, square n) through OpenBLAS's
// cblas_sgemm and oneDNN's dnnl_sgemm, to pick brisk's default GEMM library.
// Not part of any build:
//   g++ -O2 -fopenmp -I/usr/include/x86_64-linux-gnu bench/gemm_probe.cpp -lopenblas -ldnnl -o /tmp/gemm_probe
//   /tmp/gemm_probe [threads] [n | MxNxK ...]   (OPENBLAS_CORETYPE=SkylakeX to force the AVX-512 kernels)
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" char* openblas_get_corename(void);

template <class F>
double best_seconds(F&& f, int reps) {
  f();  // warm-up (thread pools, packing buffers)
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  struct Shape { long m, n, k; };
  std::vector<Shape> shapes;
  for (int i = 2; i < argc; ++i) {
    Shape s{};
    if (std::sscanf(argv[i], "%ldx%ldx%ld", &s.m, &s.n, &s.k) != 3) s.m = s.n = s.k = std::atol(argv[i]);
    shapes.push_back(s);
  }
  if (shapes.empty()) shapes = {{1024, 1024, 1024}, {2048, 2048, 2048}};
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads);  // oneDNN (OpenMP runtime) follows the OpenMP thread count
  std::printf("openblas core: %s, threads: %d\n", openblas_get_corename(), threads);
  for (auto [m, n, k] : shapes) {
    // C (m, n) = A (m, k) @ B (k, n)
    std::vector<float> a(m * k), b(k * n), c(m * n);
    for (long i = 0; i < m * k; ++i) a[i] = float(i % 7) * 0.1f;
    for (long i = 0; i < k * n; ++i) b[i] = float(i % 5) * 0.2f;
    const double flops = 2.0 * m * n * k;
    const int reps = std::clamp(int(2e10 / flops), 3, 20000);
    double tb = best_seconds([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, c.data(), n);
    }, reps);
    double td = best_seconds([&] {
      dnnl_sgemm('N', 'N', m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, c.data(), n);
    }, reps);
    std::printf("%5ldx%5ldx%5ld  openblas %7.1f GFLOP/s (%9.3f ms)   onednn %7.1f GFLOP/s (%9.3f ms)\n", m, n, k,
                flops / tb * 1e-9, tb * 1e3, flops / td * 1e-9, td * 1e3);
  }
  return 0;
}
