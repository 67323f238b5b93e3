// The libtorch side of brisk_bench: the same cases as bench_brisk.cpp, written
// as a libtorch user would write them (default grad mode, torch:: factories).
#include <torch/torch.h>
#include <torch/version.h>

#include <exception>

#include "bench.h"

// libtorch's GEMM goes to the same OpenBLAS (pthread build) that brisk uses;
// at::set_num_threads sizes only the OpenMP pool, so the BLAS pool is set here too.
extern "C" void openblas_set_num_threads(int);

namespace bench {

std::string torch_version() { return TORCH_VERSION; }

void torch_init() {
  try {
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
    // Already set (it may be set only once per process): keep going.
  }
}

namespace {

torch::Tensor make(at::IntArrayRef sizes, uint32_t seed, bool half_zero = false) {
  torch::Tensor t = torch::empty(sizes, torch::kFloat);
  if (half_zero)
    fill_half_zero(t.data_ptr<float>(), t.numel(), seed);
  else
    fill_inputs(t.data_ptr<float>(), t.numel(), seed);
  return t;
}

template <class F>
Timing time_it(F&& f, const Budget& b) {
  Timing t;
  t.seconds = median_seconds(f, b);
  t.ok = true;
  return t;
}

Timing run_case(const Spec& s) {
  using torch::Tensor;
  torch::set_num_threads(s.threads);
  openblas_set_num_threads(s.threads);
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
      Tensor x = make({3, 3}, 1);
      Tensor y;
      return time_it([&] { y = torch::matmul(x, x); }, b);
    }
    case Kind::HostEmpty: {
      Tensor y;
      return time_it([&] { y = torch::empty({3, 3}); }, b);
    }
    case Kind::BwAdd: {
      Tensor x = make({s.n}, 1), y = make({s.n}, 2), z;
      return time_it([&] { z = x + y; }, b);
    }
    case Kind::BwAddOut: {
      Tensor x = make({s.n}, 1), y = make({s.n}, 2), z = make({s.n}, 3);
      return time_it([&] { torch::add_out(z, x, y); }, b);
    }
    case Kind::BwAdd_: {
      Tensor x = make({s.n}, 1), y = make({s.n}, 2);
      return time_it([&] { x.add_(y); }, b);
    }
    case Kind::BwPlainLoop:
    case Kind::BwPlainLoop512:
      return {0, false, "reference loop runs on the brisk side only"};
    case Kind::Matmul: {
      Tensor x = make({s.n, s.n}, 1), y = make({s.n, s.n}, 2), z;
      return time_it([&] { z = torch::matmul(x, y); }, b);
    }
    case Kind::Nonzero: {
      Tensor x = make({s.n}, 1, /*half_zero=*/true), z;
      return time_it([&] { z = torch::nonzero(x); }, b);
    }
  }
  return {0, false, "unknown case"};
}

}  // namespace

Timing run_torch(const Spec& s) {
  try {
    return run_case(s);
  } catch (const std::exception& e) {
    return {0, false, std::string("libtorch threw: ") + e.what()};
  }
}

}  // namespace bench
