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
#include "compile/toolchain.h"
#include "compile/trace.h"
#include "ops/op_rows.h"
#include "private_compile_cache.h"
#include "test_util.h"

namespace brisk::jit {
namespace {

using namespace brisk::testing::rows;

// A private disk cache for this binary (NVRTC's cubins go there).
const std::string& test_cache_dir() { return testing::private_compile_cache("brisk_codegen_cuda_test"); }
const auto* const g_env =
    ::testing::AddGlobalTestEnvironment(new testing::PrivateCompileCache("brisk_codegen_cuda_test"));

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
  const CudaCodegen c = generate_cuda(t->g, t->g.groups[0], "gelu_k", /*max_lanes=*/4);
  ASSERT_TRUE(c.ok) << c.reason;
  const CudaKernel& k = c.kernel;
  EXPECT_EQ(k.ops, "div+erf+add+mul+mul");
  ASSERT_EQ(k.args.size(), 2u);  // x read once, the result stored once: no temp touches memory
  EXPECT_TRUE(k.args[0].read && !k.args[0].written);
  EXPECT_TRUE(!k.args[1].read && k.args[1].written);
  EXPECT_EQ(k.n0 * k.n1, 1000);
  // every call through the eager kernel's functor, each result sealed
  const std::string erf_mode = std::to_string(static_cast<int>(UnaryMode::erf));
  EXPECT_NE(k.body.find("UnaryOp<float, " + erf_mode + ">{" + erf_mode), std::string::npos) << k.body;
  EXPECT_NE(k.body.find("Arith::Div"), std::string::npos) << k.body;
  // (four lanes per thread, as MaxAutotune asks: Note [Lanes of a generated
  // kernel]; a short chain gets the four; the default is one)
  EXPECT_NE(generate_cuda(t->g, t->g.groups[0], "gelu_k").kernel.body.find("cg::for_each_lanes<1>"), std::string::npos);
  EXPECT_EQ(generate_cuda(t->g, t->g.groups[0], "gelu_k").kernel.lanes, 1);
  ASSERT_NE(k.body.find("cg::for_each_lanes<4>"), std::string::npos) << k.body;
  EXPECT_EQ(k.lanes, 4);  // run_cuda_kernel launches total / 4 threads
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t p = k.body.find(what); p != std::string::npos; p = k.body.find(what, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("cg::seal("), 4 * 5u) << k.body;
  EXPECT_EQ(count("cg::ld<float>"), 4u) << "x loaded once per lane:\n" << k.body;
  EXPECT_EQ(count("cg::st<float>"), 4u) << "the result stored once per lane:\n" << k.body;
  // every lane's load comes before the first call, and the stores last
  EXPECT_LT(k.body.find("l0_3 = cg::ld<float>"), k.body.find("cg::seal(")) << k.body;
  EXPECT_GT(k.body.find("if (v[0]) cg::st<float>"), k.body.rfind("cg::seal(")) << k.body;
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
            // (every 8th in the four-lane form of CompileMode::MaxAutotune)
            CudaCodegen c = generate_cuda(t->g, grp, "k" + std::to_string(r.kernels.size()),
                                          r.groups % 8 == 0 ? 4 : 1);
            if (!c.ok) {
              r.failures.push_back(row.name + " " + std::string(dtype_name(dt)) + " " + lname + ": " + c.reason);
              continue;
            }
            // (the same body under another name: compiled once)
            std::string key = c.kernel.body;
            const std::string& nm = c.kernel.name;
            for (size_t p = key.find(nm); p != std::string::npos; p = key.find(nm, p + 1)) key.replace(p, nm.size(), "K");
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

// ---- the generated kernels run on the host -------------------------------------------------
// (tests/compile/cuda_host_emulation.h): the same source, compiled by the
// system C++ compiler, launched through run_cuda_kernel and a CudaJit whose
// "cubin" is the source and whose launch calls the host entry. The math
// functions are the host's libm (not CUDA's, not Sleef), so float results
// are compared within a few ulp; integers and bool bit for bit.

/// The toolkit's include directory NVRTC would use, "" without cuda_fp16.h.
std::string cuda_include_dir() {
  const std::string d = cuda_toolkit_include_dir();
  return std::filesystem::exists(d + "/cuda_fp16.h") ? d : "";
}

std::string test_dir() {
  const char* d = std::getenv("BRISK_TEST_DIR");
  return d && *d ? d : codegen_dir() + "/tests";
}

std::vector<std::string> host_emulation_flags() {
  return {"-std=c++20", "-O1", "-w", "-DBRISK_CUDA_HOST_EMULATION",
          "-include", test_dir() + "/compile/cuda_host_emulation.h",
          "-I" + cuda_include_dir(), "-I" + codegen_dir() + "/src", "-I" + codegen_dir() + "/include"};
}

// The host JIT collects the kernels of many graphs (load() hands out
// handles), then compiles the distinct ones in one compiler run (finish()).
struct HostJit {
  static std::vector<std::string>& bodies() {
    static std::vector<std::string> v;
    return v;
  }
  static std::map<std::string, int>& index() {
    static std::map<std::string, int> m;
    return m;
  }
  static std::vector<void (*)(const void*)>& fns() {
    static std::vector<void (*)(const void*)> v;
    return v;
  }
  static std::string status() { return ""; }
  static std::string version() { return "host-emulation"; }
  static std::string compile(const std::string& source, const std::string&) { return source; }
  static std::vector<void*> load(const std::string& source, const std::vector<std::string>& names) {
    std::vector<void*> handles;
    for (const std::string& n : names) {
      const size_t start = source.find("extern \"C\" __global__ void __launch_bounds__(256) " + n + "(");
      const size_t end = source.find("#endif\n", start);
      BRISK_CHECK(start != std::string::npos && end != std::string::npos, "test", "kernel ", n, " not in the source");
      std::string body = source.substr(start, end + 7 - start);
      for (size_t p = body.find(n); p != std::string::npos; p = body.find(n, p + 3)) body.replace(p, n.size(), "@K@");
      auto [it, fresh] = index().emplace(body, static_cast<int>(bodies().size()));
      if (fresh) bodies().push_back(body);
      handles.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(it->second + 1)));
    }
    return handles;
  }
  static void finish() {
    std::string tu = "#include \"compile/cuda_prelude.cuh\"\n";
    for (size_t i = 0; i < bodies().size(); ++i) {
      std::string b = bodies()[i];
      const std::string nm = "u" + std::to_string(i);
      for (size_t p = b.find("@K@"); p != std::string::npos; p = b.find("@K@", p)) b.replace(p, 3, nm);
      tu += b + "\n";
    }
    const SharedObject& so = compile_shared_object(tu, host_emulation_flags(), "cuda-host-emulation");
    fns().clear();
    for (size_t i = 0; i < bodies().size(); ++i)
      fns().push_back(reinterpret_cast<void (*)(const void*)>(symbol(so, ("u" + std::to_string(i) + "_host").c_str())));
  }
  static void launch(void* kernel, int64_t, const void* args, size_t) {
    fns().at(static_cast<size_t>(reinterpret_cast<intptr_t>(kernel) - 1))(args);
  }
};
const CudaJit kHostJit = {&HostJit::status, &HostJit::version, &HostJit::compile, &HostJit::load, &HostJit::launch};

/// Installs the host JIT for a scope (the CUDA backend's comes back after).
struct UseHostJit {
  const CudaJit* saved = cuda_jit();
  UseHostJit() { set_cuda_jit(&kHostJit); }
  ~UseHostJit() { set_cuda_jit(saved); }
};

/// Runs a traced graph on `in` (host memory): fused groups through their
/// generated kernels, the other calls through the eager CPU kernels.
std::vector<Tensor> run_with_generated_kernels(const Graph& g, const std::vector<CudaGroupKernel>& ks,
                                               const std::vector<Tensor>& in, int& launched) {
  std::vector<char> internal(g.bufs.size(), 0);
  for (const Group& grp : g.groups)
    for (int b : grp.internal) internal[b] = 1;
  std::vector<Tensor> owners(g.bufs.size());
  std::vector<char*> base(g.bufs.size(), nullptr);
  for (size_t b = 0; b < g.bufs.size(); ++b) {
    const Buffer& bf = g.bufs[b];
    if (bf.kind == BufKind::Input)
      owners[b] = in[bf.input];
    else if (bf.kind == BufKind::External)
      owners[b] = bf.tensor;
    else if (!internal[b])
      owners[b] = zeros({bf.nbytes}, TensorOptions(kUInt8));
    if (owners[b].defined()) base[b] = static_cast<char*>(owners[b].impl()->storage->data);
  }
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    if (ks[gi].fn) {
      run_cuda_kernel(ks[gi], base.data());
      ++launched;
    } else {
      for (int ni : g.groups[gi].nodes) run_elementwise(g.nodes[ni], base.data());
    }
  }
  std::vector<Tensor> out;
  const Bound bound{owners, base.data()};
  for (const OutputRef& r : g.outputs) {
    if (r.buf < 0) {
      out.push_back(Tensor());
      continue;
    }
    out.push_back(bound.view(TensorRef{r.buf, r.offset, r.sizes, r.strides, r.dtype}).clone());
  }
  return out;
}

::testing::AssertionResult close_or_equal(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || !(got.sizes() == want.sizes()))
    return ::testing::AssertionFailure() << "dtype or shape " << got.dtype() << got.sizes() << " vs " << want.dtype()
                                         << want.sizes();
  if (!is_floating_point(got.dtype())) {
    if (got.equal(want)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "integers differ:\n" << got << "\n" << want;
  }
  const double tol = got.dtype() == kFloat || got.dtype() == kDouble ? 2e-5 : 1.6e-2;
  const auto a = got.to(kDouble).contiguous().to_vector<double>(), b = want.to(kDouble).contiguous().to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    const bool ok = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i] ||
                    std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i]));
    if (!ok) return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs eager " << b[i];
  }
  return ::testing::AssertionSuccess();
}

TEST(CodegenCuda, GeneratedKernelsRunOnTheHostLikeEager) {
  if (cuda_include_dir().empty()) GTEST_SKIP() << "no CUDA toolkit headers (cuda_fp16.h) for the host emulation";
  if (!have_compiler()) GTEST_SKIP() << "no C++ compiler";
  set_num_threads(1);
  UseHostJit host;
  // Every row over four dtypes and three layouts, then a chain behind it
  // (so that the row's call is inside a fused group), traced on one set of
  // inputs and run on another.
  struct Case {
    std::string label;
    std::unique_ptr<Traced> t;
    TensorList in;
    Tensor want;
  };
  std::vector<Case> cases;
  for (const Row& row : op_test_rows()) {
    for (ScalarType dt : row_dtypes(row)) {
      if (dt != kFloat && dt != kBFloat16 && dt != kInt32 && dt != kBool) continue;
      for (const LayoutCase& lc : layout_cases()) {
        const std::string ln = lc.name;
        if (ln != "long" && ln != "broadcast" && ln != "long-transposed") continue;
        if (lc.min_arity > row.arity) continue;
        auto fn = [&row](const std::vector<Tensor>& x) {
          Tensor y = row.fn(x);
          return std::vector<Tensor>{y.clone(), y.dtype() == kBool ? y.logical_not() : y.mul(y)};
        };
        const TensorList first = make_inputs(row, lc, dt, 11), in = make_inputs(row, lc, dt, 12);
        std::vector<Tensor> want;
        try {
          want = fn(in);
        } catch (const Error&) {
          continue;
        }
        auto t = trace(fn, first);
        if (!t->reason.empty()) continue;
        Case c;
        c.label = row.name + " " + std::string(dtype_name(dt)) + " " + ln;
        c.t = std::move(t);
        c.in = in;
        c.want = want[1];
        cases.push_back(std::move(c));
      }
    }
  }
  ASSERT_GT(cases.size(), 200u);
  // all cases' kernels first, then one compiler run for the distinct ones
  std::vector<std::vector<CudaGroupKernel>> kernels;
  // (every 4th case in the four-lane form of CompileMode::MaxAutotune: the
  // emulation runs one thread, so the lanes are consecutive elements and a
  // size that is not a multiple of 4 has lanes past the end)
  for (size_t i = 0; i < cases.size(); ++i) kernels.push_back(build_cuda_kernels(cases[i].t->g, i % 4 == 3 ? 4 : 1));
  const auto t0 = std::chrono::steady_clock::now();
  HostJit::finish();
  std::printf("[ HOST-EMU ] %zu distinct kernels compiled in %.1f s\n", HostJit::bodies().size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  int launched = 0, checked = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    const std::vector<Tensor> got = run_with_generated_kernels(c.t->g, kernels[i], c.in, launched);
    EXPECT_TRUE(close_or_equal(got[1], c.want)) << c.label << "\n" << describe(c.t->g);
    ++checked;
  }
  std::printf("[ HOST-EMU ] %d cases, %d generated kernels launched\n", checked, launched);
  EXPECT_GT(launched, 200);
}

}  // namespace
}  // namespace brisk::jit
