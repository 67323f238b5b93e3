// Sleef against Highway contrib/math on exp, log, tanh and sin (docs/design/vectorized_math.md).
// Not built by CMake: g++ -O2 -std=c++17 -mavx512f -mavx512vl -mavx512dq -mavx512bw -mavx2 -mfma -mbmi -mbmi2 \
//   -mf16c -maes -mpclmul -mpopcnt -mlzcnt -msse4.2 bench/vmath_sleef_vs_highway.cpp -lsleef -lhwy
// Sleef vs Highway contrib/math: throughput (cache-resident) and max ulp error.
#include <sleef.h>
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
#include <immintrin.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
namespace hn = hwy::HWY_NAMESPACE;
static double ulp_err(float got, long double ref) {
  if (std::isnan(got) && std::isnan((double)ref)) return 0;
  if (std::isnan(got) || std::isnan((double)ref)) return 1e9;
  if (std::isinf(got) || std::isinf((double)ref)) return got == (float)ref ? 0 : 1e9;
  float r = (float)ref; int e; std::frexp((double)r == 0 ? 1e-45f : r, &e);
  long double u = std::ldexp(1.0L, std::max(e - 24, -149));
  return (double)(std::fabs((long double)got - ref) / u);
}
template <class F> double timeit(F f, float* out, const float* in, int n, int reps) {
  double best = 1e30;
  for (int t = 0; t < 5; ++t) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) f(out, in, n);
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / (double(n) * reps));
  }
  return best;
}
#define SLEEF16(fn) [](float* o, const float* i, int n) { for (int k = 0; k < n; k += 16) _mm512_storeu_ps(o + k, fn(_mm512_loadu_ps(i + k))); }
#define SLEEF8(fn) [](float* o, const float* i, int n) { for (int k = 0; k < n; k += 8) _mm256_storeu_ps(o + k, fn(_mm256_loadu_ps(i + k))); }
#define HWY(fn) [](float* o, const float* i, int n) { const hn::ScalableTag<float> d; for (int k = 0; k < n; k += hn::Lanes(d)) hn::StoreU(hn::fn(d, hn::LoadU(d, i + k)), d, o + k); }
struct Case { const char* name; float lo, hi; long double (*ref)(long double); };
int main() {
  const int n = 4096, reps = 4000;
  std::vector<float> in(n), out(n);
  std::mt19937 g(1);
  Case cases[] = {{"exp", -87, 88, expl}, {"log", 1e-30f, 1e30f, logl}, {"tanh", -10, 10, tanhl}, {"sin", -100, 100, sinl}};
  printf("highway target: %s\n", hwy::TargetName(HWY_STATIC_TARGET));
  for (auto& c : cases) {
    if (std::strcmp(c.name, "log") == 0) { std::uniform_real_distribution<float> u(std::log(c.lo), std::log(c.hi)); for (auto& v : in) v = std::exp(u(g)); }
    else { std::uniform_real_distribution<float> u(c.lo, c.hi); for (auto& v : in) v = u(g); }
    struct Impl { const char* n; void (*f)(float*, const float*, int); };
    std::vector<Impl> impls;
    if (!std::strcmp(c.name, "exp")) impls = {{"sleef_u10_avx512", SLEEF16(Sleef_expf16_u10avx512f)}, {"sleef_u10_avx2", SLEEF8(Sleef_expf8_u10avx2)}, {"hwy", HWY(Exp)}};
    if (!std::strcmp(c.name, "log")) impls = {{"sleef_u10_avx512", SLEEF16(Sleef_logf16_u10avx512f)}, {"sleef_u35_avx512", SLEEF16(Sleef_logf16_u35avx512f)}, {"sleef_u10_avx2", SLEEF8(Sleef_logf8_u10avx2)}, {"hwy", HWY(Log)}};
    if (!std::strcmp(c.name, "tanh")) impls = {{"sleef_u10_avx512", SLEEF16(Sleef_tanhf16_u10avx512f)}, {"sleef_u35_avx512", SLEEF16(Sleef_tanhf16_u35avx512f)}, {"sleef_u10_avx2", SLEEF8(Sleef_tanhf8_u10avx2)}, {"hwy", HWY(Tanh)}};
    if (!std::strcmp(c.name, "sin")) impls = {{"sleef_u10_avx512", SLEEF16(Sleef_sinf16_u10avx512f)}, {"sleef_u35_avx512", SLEEF16(Sleef_sinf16_u35avx512f)}, {"sleef_u10_avx2", SLEEF8(Sleef_sinf8_u10avx2)}, {"hwy", HWY(Sin)}};
    double t_libm = timeit([&](float* o, const float* i, int m) { for (int k = 0; k < m; ++k) o[k] = (float)c.ref(i[k]); }, out.data(), in.data(), n, 5);
    printf("%-5s %-18s %6.3f ns/elem (long double libm, the reference)\n", c.name, "", t_libm);
    for (auto& im : impls) {
      double t = timeit(im.f, out.data(), in.data(), n, reps);
      double maxu = 0;
      for (int k = 0; k < n; ++k) maxu = std::max(maxu, ulp_err(out[k], c.ref(in[k])));
      printf("%-5s %-18s %6.3f ns/elem  max %.2f ulp\n", c.name, im.n, t, maxu);
    }
  }
}
