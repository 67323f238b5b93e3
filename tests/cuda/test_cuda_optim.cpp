// The multi-tensor kernels on CUDA (backend/cuda/foreach.cu, optim.cu):
// - every foreach op on lists of 1, 423, 424, 5000 and 20000 tensors (small
//   ones, zero-size included, plus tensors larger than a chunk) of each
//   floating dtype, against the per-tensor CPU ops;
// - fused and foreach SGD, Adam and AdamW on CUDA against the CPU for-loop
//   implementation over several steps, and a check through the profiler
//   that they run the multi-tensor kernels, not the per-tensor fallback;
// - the fused kernels' grad_scale / found_inf arguments and per-tensor bias
//   corrections.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <brisk/foreach.h>
#include <brisk/optim.h>
#include <brisk/profiler.h>

#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "core/dispatch.h"
#include "core/multi_tensor_plan.h"
#include "optim/multi_tensor.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
namespace optim = brisk::optim;

// The fused CUDA kernels, called through the op table (rows fused_adam, fused_sgd).
namespace cu {
using brisk::multi_tensor::FusedAdamArgs;
using brisk::multi_tensor::FusedSgdArgs;
void fused_adam_cuda(const FusedAdamArgs& a, const TensorList& p, const TensorList& g, const TensorList& m,
                     const TensorList& v, const TensorList& vmax, const std::vector<double>& ss,
                     const std::vector<double>& bc2, const Tensor& grad_scale = {}, const Tensor& found_inf = {}) {
  kernel<OpId::fused_adam>(kCUDA, "fused_adam")(a, p, g, m, v, vmax, ss, bc2, {}, grad_scale, found_inf);
}
void fused_sgd_cuda(const FusedSgdArgs& a, const TensorList& p, const TensorList& g, const TensorList& bufs,
                    const std::vector<char>& first, const Tensor& grad_scale = {}, const Tensor& found_inf = {}) {
  kernel<OpId::fused_sgd>(kCUDA, "fused_sgd")(a, p, g, bufs, first, grad_scale, found_inf);
}
}  // namespace cu

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor gpu(const Tensor& t) { return t.to(Device(kCUDA)); }

/// Sizes of a test list: mostly 0..22 elements (every 23rd empty); lists of
/// up to 423 tensors also hold tensors of more than one chunk (65536).
std::vector<int64_t> list_sizes(size_t n) {
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = int64_t((i * 7919 + 3) % 23);
  if (n == 1) r[0] = 2 * 65536 + 3;
  if (n >= 2 && n <= 423) r[n / 3] = 70000, r[n - 1] = 65536;
  return r;
}

/// A list as contiguous views of one buffer, on the CPU and its copy on CUDA,
/// so that a list of 20000 tensors crosses to the device in one copy.
struct Lists {
  Tensor cpu_base, gpu_base;
  TensorList cpu, gpu;
};
Lists make_lists(const std::vector<int64_t>& sizes, const Tensor& values) {
  Lists l;
  l.cpu_base = values.contiguous();
  l.gpu_base = gpu(l.cpu_base);
  int64_t off = 0;
  for (int64_t s : sizes) {
    l.cpu.push_back(l.cpu_base.narrow(0, off, s));
    l.gpu.push_back(l.gpu_base.narrow(0, off, s));
    off += s;
  }
  return l;
}
int64_t total(const std::vector<int64_t>& sizes) {
  int64_t t = 0;
  for (int64_t s : sizes) t += s;
  return t;
}

std::pair<double, double> tol(ScalarType dt) {
  switch (dt) {
    case kDouble: return {1e-12, 1e-12};
    case kFloat: return {2e-6, 1e-6};
    case kHalf: return {2e-3, 1e-3};
    default: return {1e-2, 1e-2};
  }
}

class CudaForeach : public ::testing::TestWithParam<std::tuple<ScalarType, int>> {};

}  // namespace

TEST_P(CudaForeach, MatchesPerTensorCpuOps) {
  REQUIRE_CUDA();
  const auto [dt, count] = GetParam();
  const size_t n = size_t(count);
  const std::vector<int64_t> sizes = list_sizes(n);
  const int64_t N = total(sizes);
  auto [rtol, atol] = tol(dt);
  manual_seed(uint64_t(n) + 17);
  // Operands: x any sign, y any sign, pos in [0.5, 1.5) (divisors, sqrt).
  const Tensor xv = randn({N}).to(dt), yv = randn({N}).to(dt), zv = randn({N}).to(dt), pv = (rand({N}) + 0.5).to(dt);
  std::vector<double> scalars(n);
  for (size_t i = 0; i < n; ++i) scalars[i] = 0.5 + double(i % 5) * 0.25;

  // One op: `gpu_op` on fresh CUDA lists, `cpu_ref(i, x)` applied to the CPU
  // views of a copy of x, then the whole buffers compared.
  using GpuOp = std::function<void(const TensorList& self, const TensorList& y, const TensorList& z,
                                   const TensorList& pos)>;
  using CpuRef = std::function<void(size_t i, Tensor& self, const Tensor& y, const Tensor& z, const Tensor& pos)>;
  auto check = [&](const char* what, const Tensor& self_values, const GpuOp& gpu_op, const CpuRef& cpu_ref) {
    SCOPED_TRACE(what);
    Lists s = make_lists(sizes, self_values.clone()), y = make_lists(sizes, yv), z = make_lists(sizes, zv),
          p = make_lists(sizes, pv);
    gpu_op(s.gpu, y.gpu, z.gpu, p.gpu);
    for (size_t i = 0; i < n; ++i) cpu_ref(i, s.cpu[i], y.cpu[i], z.cpu[i], p.cpu[i]);
    EXPECT_TRUE(close(s.gpu_base.cpu(), s.cpu_base, rtol, atol));
  };
  using TL = const TensorList&;
  check("add_ scalar", xv, [](TL s, TL, TL, TL) { foreach_add_(s, 0.5); },
        [](size_t, Tensor& s, const Tensor&, const Tensor&, const Tensor&) { s.add_(0.5); });
  check("add_ scalars", xv, [&](TL s, TL, TL, TL) { foreach_add_(s, scalars); },
        [&](size_t i, Tensor& s, const Tensor&, const Tensor&, const Tensor&) { s.add_(scalars[i]); });
  check("add_ list", xv, [](TL s, TL y, TL, TL) { foreach_add_(s, y, -0.75); },
        [](size_t, Tensor& s, const Tensor& y, const Tensor&, const Tensor&) { s.add_(y, -0.75); });
  check("mul_ scalar", xv, [](TL s, TL, TL, TL) { foreach_mul_(s, 1.5); },
        [](size_t, Tensor& s, const Tensor&, const Tensor&, const Tensor&) { s.mul_(1.5); });
  check("mul_ scalars", xv, [&](TL s, TL, TL, TL) { foreach_mul_(s, scalars); },
        [&](size_t i, Tensor& s, const Tensor&, const Tensor&, const Tensor&) { s.mul_(scalars[i]); });
  check("mul_ list", xv, [](TL s, TL y, TL, TL) { foreach_mul_(s, y); },
        [](size_t, Tensor& s, const Tensor& y, const Tensor&, const Tensor&) { s.mul_(y); });
  check("div_ scalars", xv, [&](TL s, TL, TL, TL) { foreach_div_(s, scalars); },
        [&](size_t i, Tensor& s, const Tensor&, const Tensor&, const Tensor&) { s.div_(scalars[i]); });
  check("addcmul_", xv, [](TL s, TL y, TL z, TL) { foreach_addcmul_(s, y, z, 0.3); },
        [](size_t, Tensor& s, const Tensor& y, const Tensor& z, const Tensor&) { s.addcmul_(y, z, 0.3); });
  check("addcdiv_ scalar", xv, [](TL s, TL y, TL, TL p) { foreach_addcdiv_(s, y, p, -0.7); },
        [](size_t, Tensor& s, const Tensor& y, const Tensor&, const Tensor& p) { s.addcdiv_(y, p, -0.7); });
  check("addcdiv_ scalars", xv, [&](TL s, TL y, TL, TL p) { foreach_addcdiv_(s, y, p, scalars); },
        [&](size_t i, Tensor& s, const Tensor& y, const Tensor&, const Tensor& p) { s.addcdiv_(y, p, scalars[i]); });
  for (double w : {0.3, 0.8})  // both branches of lerp's formula
    check("lerp_", xv, [w](TL s, TL y, TL, TL) { foreach_lerp_(s, y, w); },
          [w](size_t, Tensor& s, const Tensor& y, const Tensor&, const Tensor&) { s.lerp_(y, w); });
  check("sqrt_", pv, [](TL s, TL, TL, TL) { foreach_sqrt_(s); },
        [](size_t, Tensor& s, const Tensor&, const Tensor&, const Tensor&) { s.sqrt_(); });
  check("zero_", xv, [](TL s, TL, TL, TL) { foreach_zero_(s); },
        [](size_t, Tensor& s, const Tensor&, const Tensor&, const Tensor&) { s.zero_(); });
  {
    // maximum_ propagates NaN from either side.
    Tensor xn = xv.clone(), yn = yv.clone();
    if (N > 10) {
      xn.narrow(0, 3, 1).fill_(kNaN);
      yn.narrow(0, 7, 1).fill_(kNaN);
    }
    Lists s = make_lists(sizes, xn), y = make_lists(sizes, yn);
    foreach_maximum_(s.gpu, y.gpu);
    EXPECT_TRUE(close(s.gpu_base.cpu(), maximum(xn, yn), rtol, atol)) << "maximum_";
  }

  // Out-of-place ops: new CUDA tensors of the inputs' sizes.
  Lists x = make_lists(sizes, xv), y = make_lists(sizes, yv), p = make_lists(sizes, pv);
  auto check_new = [&](const char* what, const TensorList& got, const std::function<Tensor(size_t)>& want) {
    SCOPED_TRACE(what);
    ASSERT_EQ(got.size(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(got[i].is_cuda());
      ASSERT_TRUE(close(got[i].cpu(), want(i), rtol, atol)) << "tensor " << i;
    }
  };
  check_new("add", foreach_add(x.gpu, y.gpu, 2.0), [&](size_t i) { return x.cpu[i].add(y.cpu[i], 2.0); });
  check_new("mul", foreach_mul(x.gpu, -2.0), [&](size_t i) { return x.cpu[i].mul(-2.0); });
  check_new("sqrt", foreach_sqrt(p.gpu), [&](size_t i) { return p.cpu[i].sqrt(); });
  EXPECT_TRUE(close(x.gpu_base.cpu(), xv)) << "inputs of out-of-place ops changed";

  // Norms, accumulated in double: compared with the CPU's norm in float64.
  const double ntol = dt == kFloat || dt == kDouble ? 1e-6 : 1e-2;
  // The inf norm of an empty tensor has no identity: an error (torch 2.x),
  // so that norm runs on the list's non-empty tensors.
  TensorList nonempty_gpu, nonempty_cpu;
  for (size_t i = 0; i < n; ++i)
    if (x.cpu[i].numel() > 0) nonempty_gpu.push_back(x.gpu[i]), nonempty_cpu.push_back(x.cpu[i]);
  if (nonempty_gpu.size() < n) EXPECT_THROW(foreach_norm(x.gpu, std::numeric_limits<double>::infinity()), Error);
  for (double ord : {1.0, 2.0, std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE("norm " + std::to_string(ord));
    const bool inf = std::isinf(ord);
    const TensorList& in_gpu = inf ? nonempty_gpu : x.gpu;
    const TensorList& in_cpu = inf ? nonempty_cpu : x.cpu;
    const TensorList r = foreach_norm(in_gpu, ord);
    ASSERT_EQ(r.size(), in_gpu.size());
    for (size_t i = 0; i < in_gpu.size(); ++i) {
      ASSERT_EQ(r[i].dim(), 0);
      ASSERT_EQ(r[i].dtype(), dt);
      ASSERT_TRUE(close(r[i].cpu(), in_cpu[i].to(kDouble).norm(ord).to(dt), ntol, ntol)) << "tensor " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Lists, CudaForeach,
                         ::testing::Combine(::testing::Values(kFloat, kDouble, kHalf, kBFloat16),
                                            ::testing::Values(1, 423, 424, 5000, 20000)));

TEST(CudaForeachMisc, NormInfPropagatesNaNAndEmptyTensorsAreZero) {
  REQUIRE_CUDA();
  Tensor a = gpu(tensor({1.0f, -5.0f, 2.0f})), b = gpu(tensor({1.0f, float(kNaN), -7.0f})), e = gpu(zeros({0}));
  const TensorList r = foreach_norm({a, b}, std::numeric_limits<double>::infinity());
  EXPECT_EQ(r[0].cpu().item<float>(), 5.0f);
  EXPECT_TRUE(std::isnan(r[1].cpu().item<float>()));
  // torch 2.x: "_foreach_norm cannot compute the infinity norm on an empty tensor"
  EXPECT_THROW(foreach_norm({a, e}, std::numeric_limits<double>::infinity()), Error);
  EXPECT_EQ(foreach_norm({e}, 2)[0].cpu().item<float>(), 0.0f);
}

TEST(CudaForeachMisc, BumpsVersionsAndFallsBackForMixedLists) {
  REQUIRE_CUDA();
  Tensor a = gpu(ones({5})), b = gpu(ones({3}));
  const auto va = a._version(), vb = b._version();
  foreach_add_({a, b}, 1.0);
  EXPECT_GT(a._version(), va);
  EXPECT_GT(b._version(), vb);
  EXPECT_TRUE(close(a.cpu(), full({5}, 2.0f)));
  // A list of two dtypes is not one multi-tensor launch: per-tensor ops.
  Tensor c = gpu(ones({4}, kDouble));
  foreach_mul_({a, c}, 3.0);
  EXPECT_TRUE(close(a.cpu(), full({5}, 6.0f)));
  EXPECT_TRUE(close(c.cpu(), full({4}, 3.0, kDouble)));
}

// ---- optimizers ------------------------------------------------------------------------

namespace {

using MakeOpt = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>, optim::Impl)>;

const std::vector<std::vector<int64_t>> kParamShapes = {{3}, {17, 5}, {1}, {70000}, {0}, {2, 3, 4}};

/// Runs `steps` steps of `make(ForLoop)` on CPU float32/float64 copies and of
/// `make(impl)` on CUDA parameters of dtype dt, with the same gradients, and
/// compares the parameters. 16-bit parameters are compared with a float32
/// CPU run from the same (rounded) values.
void check_against_cpu(const char* what, const MakeOpt& make, optim::Impl impl, ScalarType dt, int steps = 5,
                       const std::vector<std::vector<int64_t>>& shapes = kParamShapes) {
  SCOPED_TRACE(std::string(what) + " " + optim::impl_name(impl) + " " + std::string(dtype_name(dt)));
  const ScalarType ref_dt = dt == kDouble ? kDouble : kFloat;
  manual_seed(21);
  std::vector<Tensor> cpu_params, gpu_params;
  for (const auto& shape : shapes) {
    const Tensor init = randn(shape).to(dt);  // never requires grad: both copies are leaves
    gpu_params.push_back(gpu(init).requires_grad_());
    cpu_params.push_back(init.to(ref_dt).clone().requires_grad_());
  }
  auto cpu_opt = make(cpu_params, optim::Impl::ForLoop);
  auto gpu_opt = make(gpu_params, impl);
  for (int step = 0; step < steps; ++step) {
    for (size_t k = 0; k < shapes.size(); ++k) {
      Tensor g = (randn(shapes[k]) * double(1 + step % 3)).to(dt);
      cpu_params[k].mutable_grad() = g.to(ref_dt);
      gpu_params[k].mutable_grad() = gpu(g);
    }
    cpu_opt->step();
    gpu_opt->step();
  }
  const double t = dt == kDouble ? 1e-10 : dt == kFloat ? 2e-5 : dt == kHalf ? 1e-2 : 5e-2;
  for (size_t k = 0; k < shapes.size(); ++k) {
    ASSERT_TRUE(gpu_params[k].is_cuda());
    EXPECT_EQ(gpu_params[k].dtype(), dt);
    EXPECT_TRUE(close(gpu_params[k].detach().cpu().to(ref_dt), cpu_params[k].detach(), t, t)) << "parameter " << k;
  }
}

struct Case {
  const char* name;
  MakeOpt make;
};
std::vector<Case> optimizer_cases() {
  using optim::Impl;
  std::vector<Case> c;
  c.push_back({"SGD", [](std::vector<Tensor> p, Impl i) {
                 return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).impl(i));
               }});
  c.push_back({"SGD momentum dampening", [](std::vector<Tensor> p, Impl i) {
                 return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9).dampening(0.1).impl(i));
               }});
  c.push_back({"SGD nesterov wd maximize", [](std::vector<Tensor> p, Impl i) {
                 return std::make_unique<optim::SGD>(
                     p, optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01).maximize(true).impl(i));
               }});
  c.push_back({"Adam", [](std::vector<Tensor> p, Impl i) {
                 return std::make_unique<optim::Adam>(p, optim::AdamOptions(0.05).impl(i));
               }});
  c.push_back({"Adam amsgrad wd", [](std::vector<Tensor> p, Impl i) {
                 return std::make_unique<optim::Adam>(p, optim::AdamOptions(0.05).amsgrad(true).weight_decay(0.1).impl(i));
               }});
  c.push_back({"Adam maximize", [](std::vector<Tensor> p, Impl i) {
                 return std::make_unique<optim::Adam>(p, optim::AdamOptions(0.05).maximize(true).impl(i));
               }});
  c.push_back({"AdamW", [](std::vector<Tensor> p, Impl i) {
                 return std::make_unique<optim::AdamW>(p, optim::AdamWOptions(0.05).weight_decay(0.1).impl(i));
               }});
  c.push_back({"AdamW amsgrad maximize", [](std::vector<Tensor> p, Impl i) {
                 return std::make_unique<optim::AdamW>(
                     p, optim::AdamWOptions(0.05).amsgrad(true).maximize(true).impl(i));
               }});
  return c;
}

}  // namespace

TEST(CudaOptim, FusedAndForeachMatchTheCpuForLoop) {
  REQUIRE_CUDA();
  for (const Case& c : optimizer_cases())
    for (optim::Impl impl : {optim::Impl::Fused, optim::Impl::Foreach})
      for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
        if (impl == optim::Impl::Foreach && (dt == kHalf || dt == kBFloat16)) continue;  // rounds every step
        check_against_cpu(c.name, c.make, impl, dt);
      }
}

TEST(CudaOptim, FusedStepsOnLongLists) {
  REQUIRE_CUDA();
  // 600 parameters: more than two launches of the 4 KB layout hold, so the
  // steps run in the 32 KB layout (short lists above use the 4 KB one).
  std::vector<std::vector<int64_t>> shapes;
  for (int i = 0; i < 600; ++i) shapes.push_back({int64_t(i % 50)});
  shapes[300] = {70000};
  for (const Case& c : optimizer_cases()) check_against_cpu(c.name, c.make, optim::Impl::Fused, kFloat, 2, shapes);
}

TEST(CudaOptim, FusedAndForeachRunMultiTensorKernels) {
  REQUIRE_CUDA();
  // The per-tensor ops the for-loop fallback would call.
  const std::set<std::string> per_tensor = {"add_", "mul_",  "addcdiv_", "addcmul_", "sqrt", "sqrt_", "div",
                                            "add",  "neg",   "mul",      "maximum",  "lerp_", "div_", "clone"};
  // The for-loop implementation on CUDA shows that the check can fail.
  for (const Case& c : optimizer_cases())
    for (optim::Impl impl : {optim::Impl::Fused, optim::Impl::Foreach, optim::Impl::ForLoop}) {
      SCOPED_TRACE(std::string(c.name) + " " + optim::impl_name(impl));
      std::vector<Tensor> params;
      for (const auto& shape : kParamShapes) params.push_back(gpu(randn(shape)).requires_grad_());
      auto opt = c.make(params, impl);
      for (Tensor& p : params) p.mutable_grad() = gpu(randn(p.sizes()));
      opt->step();  // creates the state
      profiler::profile prof;
      opt->step();
      prof.stop();
      std::string seen;
      int per_tensor_ops = 0;
      for (const profiler::Event& e : prof.result().events)
        if (e.kind == profiler::EventKind::Op) {
          seen += e.name + " ";
          per_tensor_ops += int(per_tensor.count(e.name));
        }
      if (impl == optim::Impl::ForLoop) EXPECT_GT(per_tensor_ops, 0) << seen;
      else EXPECT_EQ(per_tensor_ops, 0) << "per-tensor ops in the step: " << seen;
      if (impl == optim::Impl::Foreach) EXPECT_NE(seen.find("_foreach_"), std::string::npos) << seen;
    }
}

// ---- the fused kernels' mixed-precision arguments -----------------------------------------

namespace {

struct AdamState {
  TensorList p, g, m, v, vmax;
};
AdamState adam_state(uint64_t seed, bool amsgrad, double grad_mul = 1.0) {
  manual_seed(seed);
  AdamState s;
  for (const auto& shape : kParamShapes) {
    s.p.push_back(gpu(randn(shape)));
    s.g.push_back(gpu(randn(shape) * grad_mul));
    s.m.push_back(gpu(randn(shape) * 0.1));
    s.v.push_back(gpu(rand(shape) * 0.1));
    if (amsgrad) s.vmax.push_back(gpu(rand(shape) * 0.1));
  }
  return s;
}
bool identical(const TensorList& a, const TensorList& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!close(a[i].cpu(), b[i].cpu(), 0, 0)) return false;
  return true;
}
TensorList cpu_copy(const TensorList& l) {
  TensorList r;
  for (const Tensor& t : l) r.push_back(t.cpu());
  return r;
}

}  // namespace

TEST(CudaOptim, FusedAdamGradScaleAndFoundInf) {
  REQUIRE_CUDA();
  ASSERT_TRUE(supports(OpId::fused_adam, kCUDA, kFloat));
  const size_t n = kParamShapes.size();
  const cu::FusedAdamArgs args{0.01, 0.9, 0.999, 1e-8, 0.01, true, false, true};
  const std::vector<double> ss(n, 0.01 / (1 - 0.9)), bc2(n, std::sqrt(1 - 0.999));
  // Reference: plain gradients.
  AdamState ref = adam_state(1, true);
  cu::fused_adam_cuda(args, ref.p, ref.g, ref.m, ref.v, ref.vmax, ss, bc2);
  // Gradients scaled by 4 with grad_scale = 4: the same step (the scale is a
  // power of two: exact), and the gradients stored back unscaled.
  AdamState sc = adam_state(1, true, 4.0);
  AdamState plain = adam_state(1, true);
  cu::fused_adam_cuda(args, sc.p, sc.g, sc.m, sc.v, sc.vmax, ss, bc2, gpu(full({1}, 4.0f)), gpu(zeros({1})));
  EXPECT_TRUE(identical(sc.p, ref.p));
  EXPECT_TRUE(identical(sc.m, ref.m));
  EXPECT_TRUE(identical(sc.v, ref.v));
  EXPECT_TRUE(identical(sc.vmax, ref.vmax));
  EXPECT_TRUE(identical(sc.g, plain.g));
  // found_inf set: nothing changes, the gradients stay scaled.
  AdamState skip = adam_state(1, true, 4.0);
  const TensorList p0 = cpu_copy(skip.p), g0 = cpu_copy(skip.g), m0 = cpu_copy(skip.m), v0 = cpu_copy(skip.v);
  cu::fused_adam_cuda(args, skip.p, skip.g, skip.m, skip.v, skip.vmax, ss, bc2, gpu(full({1}, 4.0f)),
                      gpu(ones({1})));
  EXPECT_TRUE(identical(skip.p, p0));
  EXPECT_TRUE(identical(skip.g, g0));
  EXPECT_TRUE(identical(skip.m, m0));
  EXPECT_TRUE(identical(skip.v, v0));
  // Wrong kinds of scale tensors are errors.
  AdamState bad = adam_state(1, true);
  brisk::testing::expect_error(
      [&] { cu::fused_adam_cuda(args, bad.p, bad.g, bad.m, bad.v, bad.vmax, ss, bc2, gpu(full({1}, 4.0, kDouble))); },
      {"grad_scale", "float32"});
  brisk::testing::expect_error(
      [&] { cu::fused_adam_cuda(args, bad.p, bad.g, bad.m, bad.v, bad.vmax, ss, bc2, {}, ones({1})); },
      {"found_inf", "cpu"});
}

TEST(CudaOptim, FusedAdamPerTensorBiasCorrections) {
  REQUIRE_CUDA();
  const size_t n = kParamShapes.size();
  const cu::FusedAdamArgs args{0.01, 0.9, 0.999, 1e-8, 0.0, false, false, false};
  std::vector<double> ss(n), bc2(n);
  for (size_t i = 0; i < n; ++i) {  // step counts 1, 2, 3, 1, 2, 3
    const double t = double(1 + i % 3);
    ss[i] = 0.01 / (1 - std::pow(0.9, t));
    bc2[i] = std::sqrt(1 - std::pow(0.999, t));
  }
  AdamState all = adam_state(2, false), one = adam_state(2, false);
  cu::fused_adam_cuda(args, all.p, all.g, all.m, all.v, {}, ss, bc2);
  for (size_t i = 0; i < n; ++i)
    cu::fused_adam_cuda(args, {one.p[i]}, {one.g[i]}, {one.m[i]}, {one.v[i]}, {}, {ss[i]}, {bc2[i]});
  EXPECT_TRUE(identical(all.p, one.p));
  EXPECT_TRUE(identical(all.v, one.v));
}

TEST(CudaOptim, FusedSgdGradScaleAndFoundInf) {
  REQUIRE_CUDA();
  ASSERT_TRUE(supports(OpId::fused_sgd, kCUDA, kFloat));
  const cu::FusedSgdArgs args{0.1, 0.9, 0.0, 0.01, true, false};
  auto make = [](double grad_mul, TensorList& p, TensorList& g, TensorList& buf) {
    manual_seed(5);
    p.clear(), g.clear(), buf.clear();
    for (const auto& shape : kParamShapes) {
      p.push_back(gpu(randn(shape)));
      g.push_back(gpu(randn(shape) * grad_mul));
      buf.push_back(gpu(zeros(shape)));
    }
  };
  const std::vector<char> first(kParamShapes.size(), 1), later(kParamShapes.size(), 0);
  TensorList rp, rg, rb, sp, sg, sb;
  make(1.0, rp, rg, rb);
  make(8.0, sp, sg, sb);
  cu::fused_sgd_cuda(args, rp, rg, rb, first);
  cu::fused_sgd_cuda(args, sp, sg, sb, first, gpu(full({1}, 8.0f)));
  EXPECT_TRUE(identical(sp, rp));
  EXPECT_TRUE(identical(sb, rb));
  EXPECT_TRUE(identical(sg, rg));  // stored unscaled
  // A second step on the existing buffers, then one skipped by found_inf.
  cu::fused_sgd_cuda(args, rp, rg, rb, later);
  cu::fused_sgd_cuda(args, sp, sg, sb, later, {}, gpu(zeros({1})));
  EXPECT_TRUE(identical(sp, rp));
  EXPECT_TRUE(identical(sb, rb));
  const TensorList p0 = cpu_copy(sp), b0 = cpu_copy(sb);
  cu::fused_sgd_cuda(args, sp, sg, sb, later, {}, gpu(full({1}, 1.0f)));
  EXPECT_TRUE(identical(sp, p0));
  EXPECT_TRUE(identical(sb, b0));
  // A skipped first step leaves defined (zero) buffers behind.
  TensorList fp, fg, fb;
  make(1.0, fp, fg, fb);
  for (Tensor& b : fb) b = gpu(full(b.sizes(), kNaN));
  cu::fused_sgd_cuda(args, fp, fg, fb, first, {}, gpu(full({1}, 1.0f)));
  for (const Tensor& b : fb) EXPECT_TRUE(close(b.cpu(), zeros(b.sizes())));
}

// Note [Capturable Adam] and Note [Sync-free GradScaler step] on a GPU: the
// capturable fused AdamW (step counts on the device, read by the kernel)
// gives the CPU's capturable fused step, and a GradScaler step with it or
// with fused SGD reads nothing on the host (no Sync event in the profile),
// skips the step on the device when a gradient is inf, and trains as the
// CPU does.
TEST(CudaOptim, CapturableAdamAndSyncFreeGradScalerSteps) {
  REQUIRE_CUDA();
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  const std::vector<std::pair<const char*, Make>> makes = {
      {"AdamW capturable",
       [](std::vector<Tensor> p) {
         return std::make_unique<optim::AdamW>(p, optim::AdamWOptions(0.05).weight_decay(0.1).capturable(true));
       }},
      {"SGD momentum", [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9));
       }}};
  for (const auto& [name, make] : makes) {
    SCOPED_TRACE(name);
    manual_seed(3);
    std::vector<Tensor> cpu_p, gpu_p;
    for (const auto& shape : kParamShapes) {
      Tensor t = randn(shape);
      cpu_p.push_back(t.clone().requires_grad_());
      gpu_p.push_back(gpu(t).requires_grad_());
    }
    auto cpu_opt = make(cpu_p), gpu_opt = make(gpu_p);
    amp::GradScaler cpu_s(amp::GradScalerOptions().set_init_scale(64).set_growth_interval(2));
    amp::GradScaler gpu_s(amp::GradScalerOptions().set_init_scale(64).set_growth_interval(2));
    for (int step = 0; step < 6; ++step) {
      std::vector<Tensor> grads;
      for (const auto& shape : kParamShapes) grads.push_back(randn(shape));
      if (step == 0 || step == 3) grads[1].view({-1})[0].fill_(kNaN);
      for (size_t k = 0; k < grads.size(); ++k) {
        cpu_p[k].mutable_grad() = grads[k] * cpu_s.get_scale();
        gpu_p[k].mutable_grad() = gpu(grads[k] * gpu_s.get_scale());
      }
      cpu_s.scale(zeros({}));  // (the scales exist from the first scale())
      gpu_s.scale(gpu(zeros({})));
      cpu_s.step(*cpu_opt);
      {
        ASSERT_TRUE(gpu_opt->supports_amp_scaling());
        profiler::profile p;
        gpu_s.step(*gpu_opt);
        p.stop();
        for (const profiler::Event& e : p.result().events)
          EXPECT_NE(e.kind, profiler::EventKind::Sync) << "step " << step << ": " << e.name << " " << e.detail;
      }
      cpu_s.update();
      gpu_s.update();
      EXPECT_EQ(gpu_s.get_scale(), cpu_s.get_scale()) << "step " << step;
    }
    for (size_t k = 0; k < cpu_p.size(); ++k)
      EXPECT_TRUE(close(gpu_p[k].cpu(), cpu_p[k].detach(), 1e-5, 1e-6)) << "parameter " << k;
    const optim::ParamState& st = gpu_opt->state(gpu_p[0]);
    if (st.step_tensor().defined()) {
      EXPECT_TRUE(st.step_tensor().is_cuda());
      EXPECT_EQ(st.step_tensor().cpu().item<float>(), 4.0f);  // two of six steps skipped
    }
  }
}

// _amp_foreach_non_finite_check_and_unscale_ on CUDA: one multi-tensor
// kernel (not the per-tensor isfinite / any / mul fallback), bit-equal to the
// CPU for every floating dtype, on lists of 1 to 5000 tensors (several
// launches; tensors larger than a chunk), with an inf or a NaN injected
// into a large and into a small tensor; found_inf keeps a 1 it had; an
// undefined inv_scale only checks.
TEST(CudaOptim, AmpCheckAndUnscaleIsOneKernelBitEqualToTheCpu) {
  REQUIRE_CUDA();
  const Tensor inv = tensor({0.0009765625f * 3.0f});
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    ASSERT_TRUE(supports(OpId::amp_unscale, kCUDA, dt)) << dt;
    for (size_t n : {size_t(1), size_t(423), size_t(5000)}) {
      const std::vector<int64_t> sizes = list_sizes(n);
      for (int inject = 0; inject < 3; ++inject) {
        SCOPED_TRACE(::testing::Message() << dt << " n=" << n << " inject=" << inject);
        manual_seed(uint64_t(n) * 7 + uint64_t(inject));
        Tensor values = (randn({total(sizes)}) * 1000.0).to(dt);
        // the largest tensor gets an inf, or a small one a NaN
        size_t big = 0, small = 0;
        for (size_t i = 0; i < n; ++i) {
          if (sizes[i] > sizes[big]) big = i;
          if (sizes[i] > 0 && sizes[i] < 20) small = i;
        }
        Lists l = make_lists(sizes, values);
        if (inject == 1) l.cpu[big][sizes[big] - 1] = std::numeric_limits<double>::infinity();
        if (inject == 2) l.cpu[small][0] = kNaN;
        l.gpu_base.copy_(l.cpu_base);
        Tensor found_cpu = zeros({1}), found_gpu = gpu(zeros({1})), inv_gpu = gpu(inv);
        amp_foreach_non_finite_check_and_unscale_(l.cpu, found_cpu, inv);
        profiler::profile prof;
        amp_foreach_non_finite_check_and_unscale_(l.gpu, found_gpu, inv_gpu);
        prof.stop();
        for (const profiler::Event& e : prof.result().events)
          if (e.kind == profiler::EventKind::Op)
            EXPECT_TRUE(e.name.rfind("_amp_foreach", 0) == 0) << "per-tensor op " << e.name;
        EXPECT_EQ(found_gpu.cpu().item<float>(), inject == 0 ? 0.0f : 1.0f);
        EXPECT_EQ(found_cpu.item<float>(), inject == 0 ? 0.0f : 1.0f);
        const Tensor got = l.gpu_base.cpu();
        EXPECT_TRUE(equal(got.isnan(), l.cpu_base.isnan()));
        EXPECT_TRUE(equal(got.nan_to_num(0.0), l.cpu_base.nan_to_num(0.0)));
        // checking alone writes nothing
        Tensor before = l.gpu_base.clone();
        detail::amp_foreach_non_finite_check_(l.gpu, found_gpu);
        EXPECT_EQ(found_gpu.cpu().item<float>(), inject == 0 ? 0.0f : 1.0f);
        EXPECT_TRUE(equal(l.gpu_base.isnan(), before.isnan()));
        EXPECT_TRUE(equal(l.gpu_base.nan_to_num(0.0), before.nan_to_num(0.0)));
        // a 1 stays through a finite list (several dtype groups share found_inf)
        Lists clean = make_lists(sizes, randn({total(sizes)}).to(dt));
        found_gpu.fill_(1.0);
        amp_foreach_non_finite_check_and_unscale_(clean.gpu, found_gpu, inv_gpu);
        detail::amp_foreach_non_finite_check_(clean.gpu, found_gpu);
        EXPECT_EQ(found_gpu.cpu().item<float>(), 1.0f);
      }
    }
  }
}
