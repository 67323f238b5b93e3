// The brisk side of brisk_bench, plus the plain C++ loop that bandwidth cases
// are judged against.
#include <dlfcn.h>

#include <cstring>
#include <exception>

#include "bench.h"
#include "brisk/brisk.h"

namespace bench {

// A 32-bit LCG: the same values on both sides, cheap to generate for 2^24 elements.
void fill_inputs(float* p, int64_t n, uint32_t seed) {
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = static_cast<float>(s >> 8) * (1.0f / 16777216.0f) - 0.5f;  // [-0.5, 0.5)
  }
}
// Zero or non-zero with probability 1/2 each, in no pattern a branch predictor could learn.
void fill_half_zero(float* p, int64_t n, uint32_t seed) {
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = (s >> 31) ? 1.0f + static_cast<float>((s >> 8) & 0xff) : 0.0f;
  }
}

namespace {

brisk::Tensor make(brisk::IntArrayRef sizes, uint32_t seed, bool half_zero = false) {
  brisk::Tensor t = brisk::empty(sizes, brisk::kFloat);
  if (half_zero)
    fill_half_zero(t.data_ptr<float>(), t.numel(), seed);
  else
    fill_inputs(t.data_ptr<float>(), t.numel(), seed);
  return t;
}

// The reference for the bandwidth cases: what a C++ programmer writes by
// hand. noinline so that the timing loop cannot hoist or fuse it.
[[gnu::noinline]] void plain_add(float* __restrict z, const float* __restrict x, const float* __restrict y,
                                 int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

// The same loop built as brisk's AVX-512 kernels are (512-bit vectors): it
// separates the cost of the vector width from the cost of brisk itself.
[[gnu::noinline, gnu::target("avx512f,avx512vl,prefer-vector-width=512")]] void plain_add_avx512(
    float* __restrict z, const float* __restrict x, const float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

// Ops that may not be written yet in a development build are called through
// pointers found at run time, so the bench links and loads without them
// (an undefined symbol left for the loader would abort the whole run).
// The pointer call costs the same as the PLT call a direct call would make.
using BinaryFn = brisk::Tensor (*)(const brisk::Tensor&, const brisk::Tensor&);
using UnaryFn = brisk::Tensor (*)(const brisk::Tensor&);
template <class Fn>
Fn find_op(const char* mangled_name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, mangled_name));
}
const BinaryFn g_matmul = find_op<BinaryFn>("_ZN5brisk6matmulERKNS_6TensorES2_");  // brisk::matmul(a, b)
const UnaryFn g_nonzero = find_op<UnaryFn>("_ZN5brisk7nonzeroERKNS_6TensorE");     // brisk::nonzero(x)

Timing time_it(auto&& f, const Budget& b) {
  Timing t;
  t.seconds = median_seconds(f, b);
  t.ok = true;
  return t;
}

Timing run_case(const Spec& s) {
  using brisk::Tensor;
  brisk::set_num_threads(s.threads);
  const Budget& b = s.budget;
  switch (s.kind) {
    case Kind::HostAdd: {
      Tensor x = make({3, 3}, 1);
      Tensor y;
      return time_it([&] { y = x + x; }, b);
    }
    case Kind::HostAddScalar_: {
      Tensor x = make({3, 3}, 1);
      return time_it([&] { x.add_(1); }, b);
    }
    case Kind::HostAddTensor_: {
      Tensor x = make({3, 3}, 1);
      return time_it([&] { x.add_(x); }, b);
    }
    case Kind::HostT: {
      Tensor x = make({3, 3}, 1);
      Tensor y;
      return time_it([&] { y = x.t(); }, b);
    }
    case Kind::HostSelect: {
      Tensor x = make({3, 3}, 1);
      Tensor y;
      return time_it([&] { y = x[0]; }, b);
    }
    case Kind::HostMatmul: {
      if (!g_matmul) return {0, false, "brisk::matmul is not implemented yet"};
      Tensor x = make({3, 3}, 1);
      Tensor y;
      return time_it([&] { y = g_matmul(x, x); }, b);
    }
    case Kind::HostEmpty: {
      Tensor y;
      return time_it([&] { y = brisk::empty({3, 3}); }, b);
    }
    case Kind::BwAdd: {
      Tensor x = make({s.n}, 1), y = make({s.n}, 2), z;
      return time_it([&] { z = x + y; }, b);
    }
    case Kind::BwAddOut: {
      Tensor x = make({s.n}, 1), y = make({s.n}, 2), z = make({s.n}, 3);
      return time_it([&] { brisk::add_out(z, x, y); }, b);
    }
    case Kind::BwAdd_: {
      Tensor x = make({s.n}, 1), y = make({s.n}, 2);
      return time_it([&] { x.add_(y); }, b);
    }
    case Kind::BwPlainLoop: {
      Tensor x = make({s.n}, 1), y = make({s.n}, 2), z = make({s.n}, 3);
      float *xp = x.data_ptr<float>(), *yp = y.data_ptr<float>(), *zp = z.data_ptr<float>();
      return time_it([&] { plain_add(zp, xp, yp, s.n); }, b);
    }
    case Kind::BwPlainLoop512: {
      if (!__builtin_cpu_supports("avx512f")) return {0, false, "this CPU has no AVX-512"};
      Tensor x = make({s.n}, 1), y = make({s.n}, 2), z = make({s.n}, 3);
      float *xp = x.data_ptr<float>(), *yp = y.data_ptr<float>(), *zp = z.data_ptr<float>();
      return time_it([&] { plain_add_avx512(zp, xp, yp, s.n); }, b);
    }
    case Kind::Matmul: {
      if (!g_matmul) return {0, false, "brisk::matmul is not implemented yet"};
      Tensor x = make({s.n, s.n}, 1), y = make({s.n, s.n}, 2), z;
      return time_it([&] { z = g_matmul(x, y); }, b);
    }
    case Kind::Nonzero: {
      if (!g_nonzero) return {0, false, "brisk::nonzero is not implemented yet"};
      Tensor x = make({s.n}, 1, /*half_zero=*/true), z;
      return time_it([&] { z = g_nonzero(x); }, b);
    }
  }
  return {0, false, "unknown case"};
}

}  // namespace

Timing run_brisk(const Spec& s) {
  try {
    return run_case(s);
  } catch (const std::exception& e) {
    return {0, false, std::string("brisk threw: ") + e.what()};
  }
}

}  // namespace bench
