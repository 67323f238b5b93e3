// The libtorch side of brisk_bench: the same cases as bench_brisk.cpp, written
// as a libtorch user would write them (default grad mode, torch:: factories).
#include <torch/torch.h>
#include <torch/version.h>

#include <exception>

#include "bench.h"

// libtorch's GEMM goes to the same OpenBLAS (pthread build) that brisk uses.
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

Runner prepare(const Spec& s) {
  using torch::Tensor;
  // at::set_num_threads sizes only libtorch's OpenMP pool; its GEMM runs in
  // the OpenBLAS pool, set here too (brisk::set_num_threads does the same).
  const auto th = [n = s.threads] {
    torch::set_num_threads(n);
    openblas_set_num_threads(n);
  };
  switch (s.kind) {
    case Kind::HostAdd:
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = x + x; });
    case Kind::HostAddScalar_:
      return make_runner(th, [x = make({3, 3}, 1)]() mutable { x.add_(1); });
    case Kind::HostAddTensor_:
      return make_runner(th, [x = make({3, 3}, 1)]() mutable { x.add_(x); });
    case Kind::HostT:
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = x.t(); });
    case Kind::HostSelect:
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = x[0]; });
    case Kind::HostMatmul:
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = torch::matmul(x, x); });
    case Kind::HostEmpty:
      return make_runner(th, [y = Tensor()]() mutable { y = torch::empty({3, 3}); });
    case Kind::BwAdd:
      return make_runner(th, [x = make({s.n}, 1), y = make({s.n}, 2), z = Tensor()]() mutable { z = x + y; });
    case Kind::BwAddOut:
      return make_runner(th, [x = make({s.n}, 1), y = make({s.n}, 2), z = make({s.n}, 3)]() mutable {
        torch::add_out(z, x, y);
      });
    case Kind::BwAdd_:
      return make_runner(th, [x = make({s.n}, 1), y = make({s.n}, 2)]() mutable { x.add_(y); });
    case Kind::BwPlainLoop:
    case Kind::BwPlainLoop512:
      return skip("reference loop: brisk side only");
    case Kind::Matmul:
      return make_runner(th, [x = make({s.n, s.n}, 1), y = make({s.n, s.n}, 2), z = Tensor()]() mutable {
        z = torch::matmul(x, y);
      });
    case Kind::Nonzero:
      return make_runner(th, [x = make({s.n}, 1, /*half_zero=*/true), z = Tensor()]() mutable {
        z = torch::nonzero(x);
      });
  }
  return skip("unknown case");
}

}  // namespace

Runner torch_runner(const Spec& s) {
  try {
    return prepare(s);
  } catch (const std::exception& e) {
    return skip(std::string("libtorch threw: ") + e.what());
  }
}

}  // namespace bench
