// brisk::compile on CUDA (Note [Generated CUDA kernels] in
// src/compile/codegen_cuda.cpp): functions over CUDA tensors are traced as
// graphs of eager CUDA elementwise calls, fused groups run as kernels NVRTC
// compiled for the device; results against the eager CUDA kernels, bit for
// bit (NaN payloads aside). Skips without a GPU; test_codegen_cuda compiles
// the same kernels without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "brisk/compile.h"
#include "ops/op_rows.h"
#include "test_util.h"

namespace brisk {
namespace {

using namespace brisk::testing::rows;

/// Equal bits, any NaN equal to any NaN; on failure, how many elements differ
/// and the largest difference in units of the last place of float32.
::testing::AssertionResult same_bits(const Tensor& got_d, const Tensor& want_d) {
  const Tensor got = got_d.cpu().contiguous(), want = want_d.cpu().contiguous();
  if (got.dtype() != want.dtype() || !(got.sizes() == want.sizes()))
    return ::testing::AssertionFailure() << "dtype or shape: " << got.dtype() << got.sizes() << " vs " << want.dtype()
                                         << want.sizes();
  const size_t es = element_size(got.dtype());
  const char* a = static_cast<const char*>(got.data_ptr());
  const char* b = static_cast<const char*>(want.data_ptr());
  const Tensor gd = is_floating_point(got.dtype()) ? got.to(kDouble) : Tensor();
  const Tensor wd = is_floating_point(got.dtype()) ? want.to(kDouble) : Tensor();
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (std::memcmp(a + i * es, b + i * es, es) == 0) continue;
    if (gd.defined()) {
      const double p = gd.data_ptr<double>()[i], q = wd.data_ptr<double>()[i];
      if (p != p && q != q) continue;
    }
    if (first < 0) first = i;
    ++bad;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << bad << " of " << got.numel() << " elements differ; first at " << first;
  if (gd.defined())
    r << ": " << gd.data_ptr<double>()[first] << " vs eager " << wd.data_ptr<double>()[first];
  return r;
}

Tensor gelu_chain(const Tensor& x) { return x * 0.5 * (1.0 + erf(x / 1.41421)); }

TEST(CudaCompile, GeluChainIsOneGeneratedKernelBitEqualToEager) {
  REQUIRE_CUDA();
  manual_seed(0);
  const Tensor x = randn({1 << 20}).cuda() * 3;
  auto f = compile([](const Tensor& t) { return gelu_chain(t); });
  const Tensor first = f(x);  // traced (eager kernels)
  const Tensor got = f(x);    // the generated kernel
  EXPECT_EQ(f.stats().graph_breaks, 0) << f.stats().last_break;
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().generated, 1) << f.graph_text();
  EXPECT_TRUE(got.is_cuda());
  EXPECT_TRUE(same_bits(got, gelu_chain(x)));
  EXPECT_TRUE(same_bits(first, got));
  // MaxAutotune's four lanes per thread: the same bits. The grid has total / 4
  // threads (at most 32 blocks of 256 per SM), so 2^20 fills every lane, a
  // size that is not a multiple of 4 leaves lanes past the end in the last
  // iteration, and 2^23 + 5 (more than 4 x 32 x 256 per SM) loops.
  const Tensor big = randn({(int64_t(1) << 23) + 5}).cuda() * 3;
  for (int64_t n : {int64_t(1) << 20, int64_t(1000003), big.numel()}) {
    const Tensor xn = big.narrow(0, 0, n);
    auto f4 = compile([](const Tensor& t) { return gelu_chain(t); }, CompileOptions().set_mode(CompileMode::MaxAutotune));
    f4(xn);
    EXPECT_TRUE(same_bits(f4(xn), gelu_chain(xn))) << n;
    EXPECT_EQ(f4.stats().generated, 1) << n << f4.graph_text();
    EXPECT_EQ(f4.stats().graph_breaks, 0) << f4.stats().last_break;
  }
  // 16-bit and float64 chains, a broadcast and a transposed operand
  for (ScalarType dt : {kHalf, kBFloat16, kDouble}) {
    const Tensor h = (randn({513, 77}) * 2).to(dt).cuda(), r = randn({77}).to(dt).cuda();
    auto g = compile([](const Tensor& a, const Tensor& b) { return (a.t().sigmoid() * 2.0).t() - b.exp() + a.square(); });
    g(h, r);
    EXPECT_TRUE(same_bits(g(h, r), (h.t().sigmoid() * 2.0).t() - r.exp() + h.square())) << dt;
    EXPECT_EQ(g.stats().graph_breaks, 0) << g.stats().last_break;
  }
}

// Every row, per dtype and layout, in one compiled function (one graph, one
// NVRTC program of all the rows' kernels: a compile per row would take
// minutes). Rows whose call is not elementwise on CUDA (a graph break) are
// found first with the interpreter backend, which traces without NVRTC.
TEST(CudaCompile, EveryPointwiseRowAgainstEager) {
  REQUIRE_CUDA();
  int rows_compiled = 0, kernels = 0;
  for (ScalarType dt : all_dtypes()) {
    for (const LayoutCase& c : layout_cases()) {
      const std::string ln = c.name;
      if (ln != "long" && ln != "broadcast" && ln != "long-transposed") continue;
      std::vector<const Row*> rows;
      std::vector<size_t> first_input;
      TensorList first, in;
      std::vector<Tensor> want;
      for (const Row& r : op_test_rows()) {
        const auto dts = row_dtypes(r);
        if (std::find(dts.begin(), dts.end(), dt) == dts.end() || c.min_arity > r.arity) continue;
        const TensorList f = make_inputs(r, c, dt, 5, Device(kCUDA)), x = make_inputs(r, c, dt, 6, Device(kCUDA));
        Tensor w;
        try {
          w = r.fn(x).mul(1).clone();
        } catch (const Error&) {
          continue;
        }
        auto probe = compile([&r](const std::vector<Tensor>& t) { return r.fn(t).mul(1).clone(); },
                             CompileOptions().set_backend(CompileBackend::Interpreter));
        probe(f);
        if (probe.stats().graph_breaks != 0) continue;
        rows.push_back(&r);
        first_input.push_back(first.size());
        first.insert(first.end(), f.begin(), f.end());
        in.insert(in.end(), x.begin(), x.end());
        want.push_back(w);
      }
      if (rows.empty()) continue;
      auto all = compile([&](const std::vector<Tensor>& t) {
        std::vector<Tensor> out;
        for (size_t k = 0; k < rows.size(); ++k) {
          const TensorList args(t.begin() + static_cast<std::ptrdiff_t>(first_input[k]),
                                t.begin() + static_cast<std::ptrdiff_t>(first_input[k] + rows[k]->arity));
          out.push_back(rows[k]->fn(args).mul(1).clone());
        }
        return out;
      });
      all(first);
      const std::vector<Tensor> got = all(in);
      ASSERT_EQ(all.stats().graph_breaks, 0) << dt << " " << ln << ": " << all.stats().last_break;
      rows_compiled += static_cast<int>(rows.size());
      kernels += static_cast<int>(all.stats().generated);
      for (size_t k = 0; k < rows.size(); ++k)
        EXPECT_TRUE(same_bits(got[k], want[k])) << label(*rows[k], dt, c.name);
    }
  }
  std::printf("[ CUDA     ] %d row cases compiled, %d generated kernels\n", rows_compiled, kernels);
  EXPECT_GT(rows_compiled, 1000);
  EXPECT_GT(kernels, 1000);
}

// A transformer MLP block (the GEMMs, layer_norm's row kernel, softmax, the
// elementwise calls between them) is one graph on CUDA: the opaque calls
// replay their eager kernels, the chains run fused.
TEST(CudaCompile, MlpBlockAndSoftmaxAreOneGraph) {
  REQUIRE_CUDA();
  manual_seed(4);
  auto fc1 = nn::Linear(384, 1536), fc2 = nn::Linear(1536, 384);
  fc1->to(Device(kCUDA));
  fc2->to(Device(kCUDA));
  auto block = [&](const Tensor& x) {
    Tensor h = nn::functional::gelu(fc1->forward(x));
    return nn::functional::layer_norm(fc2->forward(h) + x, {384});
  };
  const Tensor x = randn({8, 128, 384}).cuda();
  {
    NoGradGuard ng;
    auto f = compile(block);
    f(x);
    EXPECT_TRUE(same_bits(f(x), block(x)));
    EXPECT_EQ(f.stats().graph_breaks, 0) << f.stats().last_break;
    // (layer_norm is one kernel on CUDA now, and the block has no chain of
    // two pointwise ops left to generate; the softmax's prologue has one)
    auto sm = compile([](const Tensor& s, const Tensor& m) { return softmax(s * 0.125 + m, -1); });
    const Tensor s = randn({8, 64, 64}).cuda(), m = randn({64, 64}).cuda();
    sm(s, m);
    EXPECT_TRUE(same_bits(sm(s, m), softmax(s * 0.125 + m, -1)));
    EXPECT_EQ(sm.stats().graph_breaks, 0) << sm.stats().last_break;
    EXPECT_GT(sm.stats().generated, 0) << sm.graph_text();
  }
  // forward and backward through the compiled block, against eager
  auto f = compile(block);
  const Tensor xa = x.clone().requires_grad_(), xb = x.clone().requires_grad_();
  for (int it = 0; it < 2; ++it) {
    xa.mutable_grad() = Tensor();
    fc1->zero_grad();
    fc2->zero_grad();
    f(xa).sum().backward();
  }
  const Tensor ga = xa.grad(), gw = fc1->weight.grad().clone();
  fc1->zero_grad();
  fc2->zero_grad();
  block(xb).sum().backward();
  EXPECT_EQ(f.stats().graph_breaks, 0) << f.stats().last_break;
  EXPECT_TRUE(ga.allclose(xb.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(gw.allclose(fc1->weight.grad(), 1e-5, 1e-6));
}

TEST(CudaCompile, OtherCudaKernelsAreGraphBreaksNamingTheOp) {
  REQUIRE_CUDA();
  const Tensor x = randn({64, 32}).cuda();
  // (the scans are DimFn slots, recorded since; index_select is recorded
  // on the CPU only)
  const Tensor idx = tensor({3, 0, 7, 7}, TensorOptions(kLong)).cuda();
  auto f = compile([&idx](const Tensor& t) { return (t * 2).index_select(1, idx).exp(); });
  const Tensor a = f(x), b = f(x);
  EXPECT_EQ(f.stats().graph_breaks, 1);
  EXPECT_NE(f.stats().last_break.find("index_select"), std::string::npos) << f.stats().last_break;
  EXPECT_NE(f.stats().last_break.find("CUDA"), std::string::npos) << f.stats().last_break;
  EXPECT_TRUE(same_bits(b, (x * 2).index_select(1, idx).exp()));
  // a recorded scan between pointwise ops, against eager
  auto c = compile([](const Tensor& t) { return (t * 2).cumsum(1).exp(); });
  c(x);
  EXPECT_EQ(c.stats().graph_breaks, 0) << c.stats().last_break;
  EXPECT_TRUE(same_bits(c(x), (x * 2).cumsum(1).exp()));
  auto g = compile([&idx](const Tensor& t) { return (t * 2).index_select(1, idx); }, CompileOptions().set_fullgraph(true));
  testing::expect_error([&] { g(x); }, {"[compile]", "fullgraph", "index_select", "CUDA"});
  // one graph, one device
  auto h = compile([](const Tensor& p, const Tensor& q) { return p + q.cuda(); });
  h(x, randn({64, 32}));
  EXPECT_EQ(h.stats().graph_breaks, 1);
}

TEST(CudaCompile, CompiledBackwardOnCuda) {
  REQUIRE_CUDA();
  manual_seed(1);
  const Tensor x0 = randn({4096}).cuda();
  auto f = compile([](const Tensor& t) { return gelu_chain(t).sin(); });
  Tensor xa = x0.clone().requires_grad_(), xb = x0.clone().requires_grad_();
  const Tensor g = randn({4096}).cuda();
  for (int it = 0; it < 2; ++it) {
    xa.mutable_grad() = Tensor();
    f(xa).backward(g);
  }
  gelu_chain(xb).sin().backward(g);
  EXPECT_EQ(f.stats().graph_breaks, 0) << f.stats().last_break;
  EXPECT_TRUE(xa.grad().allclose(xb.grad(), 1e-6, 1e-6));
}

}  // namespace
}  // namespace brisk
