// compile's CUDA code generator (src/compile/codegen_cuda.cpp) without a GPU:
// graphs traced from CPU functions (the elementwise calls a CUDA run records
// are the same calls, with the same TensorIters), planned, and turned into
// CUDA source; where NVRTC is installed (a build with the CUDA backend), the
// source of every op row's kernel is compiled for Hopper.
// tests/cuda/test_cuda_compile.cpp runs the kernels on a GPU against eager.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "compile/codegen_cuda.h"
#include "compile/executor.h"
#include "compile/trace.h"
#include "ops/op_rows.h"
#include "test_util.h"

namespace brisk::jit {
namespace {

using namespace brisk::testing::rows;

// A private disk cache for this binary (NVRTC's cubins go there).
const std::string& test_cache_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/brisk_codegen_cuda_test_XXXXXX";
    const char* d = mkdtemp(tmpl);
    std::string s = d ? d : "/tmp/brisk_codegen_cuda_test";
    setenv("BRISK_COMPILE_CACHE", s.c_str(), 1);
    return s;
  }();
  return dir;
}
struct CacheEnv : ::testing::Environment {
  void SetUp() override { test_cache_dir(); }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(test_cache_dir(), ec);
  }
};
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new CacheEnv);

/// The planned graph of fn on `in` (what compile records; "" or the break).
struct Traced {
  Graph g;
  std::string reason;
};
std::unique_ptr<Traced> trace(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                              const std::vector<Tensor>& in) {
  auto t = std::make_unique<Traced>();
  NoGradGuard ng;
  std::vector<Tensor> out;
  {
    Tracer tr(t->g);
    for (size_t i = 0; i < in.size(); ++i) tr.add_input(in[i], static_cast<int>(i));
    tr.install();
    out = fn(in);
    tr.uninstall();
    t->reason = tr.break_reason();
    for (const Tensor& o : out) {
      OutputRef r;
      r.dtype = o.dtype();
      r.sizes.assign(o.sizes().begin(), o.sizes().end());
      r.strides.assign(o.strides().begin(), o.strides().end());
      r.buf = o.numel() ? tr.output_buffer(o, r.offset) : -1;
      if (o.numel() && r.buf < 0) t->reason = "a result the trace did not make";
      t->g.outputs.push_back(r);
    }
    if (t->reason.empty()) plan(t->g);
  }
  return t;
}

bool nvrtc_here(std::string& why) {
  const CudaJit* j = cuda_jit();
  if (!j) {
    why = "this build has no CUDA backend (NVRTC comes with it)";
    return false;
  }
  why = j->nvrtc_status();
  return why.empty();
}

TEST(CodegenCuda, GeluChainIsOneKernelOfFiveCalls) {
  set_num_threads(1);
  Tensor x = randn({1000});
  auto t = trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 0.5 * (1.0 + erf(in[0] / 1.41421))}; },
                 {x});
  ASSERT_EQ(t->reason, "");
  ASSERT_EQ(t->g.groups.size(), 1u);
  const CudaCodegen c = generate_cuda(t->g, t->g.groups[0], "gelu_k");
  ASSERT_TRUE(c.ok) << c.reason;
  const CudaKernel& k = c.kernel;
  EXPECT_EQ(k.ops, "div+erf+add+mul+mul");
  ASSERT_EQ(k.args.size(), 2u);  // x read once, the result stored once: no temp touches memory
  EXPECT_TRUE(k.args[0].read && !k.args[0].written);
  EXPECT_TRUE(!k.args[1].read && k.args[1].written);
  EXPECT_EQ(k.n0 * k.n1, 1000);
  // every call through the eager kernel's functor, each result sealed
  EXPECT_NE(k.body.find("UnaryOp<float>{" + std::to_string(static_cast<int>(UnaryMode::erf))), std::string::npos) << k.body;
  EXPECT_NE(k.body.find("Arith::Div"), std::string::npos) << k.body;
  size_t seals = 0;
  for (size_t p = k.body.find("cg::seal("); p != std::string::npos; p = k.body.find("cg::seal(", p + 1)) ++seals;
  EXPECT_EQ(seals, 5u) << k.body;
  EXPECT_EQ(k.body.find("cg::ld<float>"), k.body.rfind("cg::ld<float>")) << "x loaded once:\n" << k.body;
}

TEST(CodegenCuda, HostSideChoicesOfTheEagerKernelsAreMirrored) {
  set_num_threads(1);
  Tensor x = randn({64});
  // pow with a host exponent 2 over one dim runs as x * x in eager (Square)
  auto t = trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] + 1.0).pow(2.0).add(in[0], 1.0)}; },
                 {x});
  ASSERT_EQ(t->reason, "");
  ASSERT_EQ(t->g.groups.size(), 1u);
  CudaCodegen c = generate_cuda(t->g, t->g.groups[0]);
  ASSERT_TRUE(c.ok) << c.reason;
  EXPECT_NE(c.kernel.body.find("Arith::Square"), std::string::npos) << c.kernel.body;
  EXPECT_NE(c.kernel.body.find("Arith::Add,"), std::string::npos) << c.kernel.body;  // alpha 1: Add, not AddAlpha
  // alpha 2, a float16 chain (rounded to float16 between calls), bitwise_not of bool
  Tensor h = randn({64}).to(kHalf), b = randn({64}) > 0;
  t = trace([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0].add(in[0].exp(), 2.0).sigmoid(), in[1].bitwise_not().logical_and(in[1])};
  }, {h, b});
  ASSERT_EQ(t->reason, "");
  std::string all;
  for (const Group& grp : t->g.groups) {
    if (!grp.fused()) continue;
    c = generate_cuda(t->g, grp);
    ASSERT_TRUE(c.ok) << c.reason;
    all += c.kernel.body;
  }
  EXPECT_NE(all.find("Arith::AddAlpha, __int_as_float(0x40000000)"), std::string::npos) << all;
  EXPECT_NE(all.find("from_math<__half>"), std::string::npos) << all;
  EXPECT_NE(all.find("UnaryPredOp<bool>{" + std::to_string(static_cast<int>(UnaryMode::logical_not)) + "}"),
            std::string::npos)
      << all;
}

TEST(CodegenCuda, DeclinesWhatItCannotMirror) {
  set_num_threads(1);
  Tensor a = randn({8, 8});
  auto t = trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 2.0).sin()}; }, {a});
  ASSERT_EQ(t->reason, "");
  ASSERT_EQ(t->g.groups.size(), 1u);
  ASSERT_TRUE(generate_cuda(t->g, t->g.groups[0]).ok);
  // the temp read with another layout than it was written with: elements
  // of one thread would read what another writes
  Graph g = t->g;
  Node& sin_call = g.nodes[g.groups[0].nodes[1]];
  ASSERT_EQ(sin_call.ops[1].buf, g.nodes[g.groups[0].nodes[0]].out().buf);
  sin_call.ops[1].strides[0] *= 2;
  const CudaCodegen c = generate_cuda(g, g.groups[0]);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("two layouts"), std::string::npos) << c.reason;
  // an opaque call (a reduction) is not an elementwise kernel
  Graph g2 = t->g;
  g2.nodes[g2.groups[0].nodes[1]].run = [](const Bound&) {};
  EXPECT_FALSE(generate_cuda(g2, g2.groups[0]).ok);
}

/// One fused group per op row and dtype: the row's call(s), then a copy of
/// the result (clone), over a long and a broadcast layout.
struct RowKernels {
  std::vector<CudaKernel> kernels;
  std::vector<std::string> failures;
  int groups = 0;
};
const RowKernels& row_kernels() {
  static const RowKernels rk = [] {
    RowKernels r;
    set_num_threads(1);
    std::map<std::string, int> bodies;
    for (const Row& row : op_test_rows()) {
      for (ScalarType dt : row_dtypes(row)) {
        // (one float, one 16-bit float, one integer dtype and bool: every
        // functor family and conversion, in a minute of NVRTC on two cores)
        if (dt != kFloat && dt != kBFloat16 && dt != kInt32 && dt != kBool) continue;
        for (const LayoutCase& lc : layout_cases()) {
          const std::string lname = lc.name;
          if (lname != "long" && lname != "broadcast") continue;
          if (lc.min_arity > row.arity) continue;
          const TensorList in = make_inputs(row, lc, dt, 3);
          try {
            (void)row.fn(in);
          } catch (const Error&) {
            continue;  // (a dtype the form refuses)
          }
          auto t = trace([&row](const std::vector<Tensor>& x) { return std::vector<Tensor>{row.fn(x).clone()}; }, in);
          if (!t->reason.empty()) continue;  // (a row of a non-elementwise op)
          for (const Group& grp : t->g.groups) {
            if (!grp.fused()) continue;
            ++r.groups;
            CudaCodegen c = generate_cuda(t->g, grp, "k" + std::to_string(r.kernels.size()));
            if (!c.ok) {
              r.failures.push_back(row.name + " " + std::string(dtype_name(dt)) + " " + lname + ": " + c.reason);
              continue;
            }
            // (the same body under another name: compiled once)
            std::string key = c.kernel.body;
            key.replace(key.find(c.kernel.name), c.kernel.name.size(), "K");
            if (bodies.emplace(key, 1).second) r.kernels.push_back(std::move(c.kernel));
          }
        }
      }
    }
    return r;
  }();
  return rk;
}

TEST(CodegenCuda, EveryPointwiseRowGeneratesAKernel) {
  const RowKernels& rk = row_kernels();
  EXPECT_GT(rk.groups, 200) << "the rows should give hundreds of fused groups";
  std::string all;
  for (auto& f : rk.failures) all += f + "\n";
  EXPECT_TRUE(rk.failures.empty()) << rk.failures.size() << " groups declined:\n" << all;
}

TEST(CodegenCuda, NvrtcCompilesEveryRowsKernel) {
  std::string why;
  if (!nvrtc_here(why)) GTEST_SKIP() << "NVRTC: " << why;
  const RowKernels& rk = row_kernels();
  ASSERT_FALSE(rk.kernels.empty());
  std::vector<const CudaKernel*> ks;
  for (const CudaKernel& k : rk.kernels) ks.push_back(&k);
  const std::string src = cuda_translation_unit(ks);
  for (const char* arch : {"sm_90"}) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string cubin;
    try {
      cubin = cuda_jit()->compile(src, arch);
    } catch (const Error& e) {
      FAIL() << arch << ": " << e.what();
    }
    EXPECT_GT(cubin.size(), 1000u) << arch;
    std::printf("[ NVRTC    ] %zu kernels for %s: %zu bytes of cubin in %.2f s\n", ks.size(), arch, cubin.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

TEST(CodegenCuda, NvrtcCacheAndErrors) {
  std::string why;
  if (!nvrtc_here(why)) GTEST_SKIP() << "NVRTC: " << why;
  Tensor x = randn({100});
  auto t = trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 3.0).exp().sub(1.0)}; }, {x});
  ASSERT_EQ(t->reason, "");
  const CudaCodegen c = generate_cuda(t->g, t->g.groups[0], "cache_k");
  ASSERT_TRUE(c.ok) << c.reason;
  const std::string src = cuda_translation_unit({&c.kernel});
  const auto t0 = std::chrono::steady_clock::now();
  const std::string a = cuda_jit()->compile(src, "sm_90");
  const double cold = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string b = cuda_jit()->compile(src, "sm_90");
  EXPECT_EQ(a, b);
  // on disk: a cubin keyed by the source and the options
  int cubins = 0;
  for (auto& e : std::filesystem::directory_iterator(test_cache_dir())) cubins += e.path().extension() == ".cubin";
  EXPECT_GE(cubins, 1);
  std::printf("[ NVRTC    ] one kernel cold: %.3f s\n", cold);
  // a source NVRTC rejects: an error naming compile, with NVRTC's log
  try {
    cuda_jit()->compile(src + "\nthis is not CUDA;\n", "sm_90");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[compile]"), std::string::npos) << m;
    EXPECT_NE(m.find("NVRTC"), std::string::npos) << m;
    EXPECT_NE(m.find("error"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace brisk::jit
