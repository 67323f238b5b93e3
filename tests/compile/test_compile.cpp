// brisk::compile: traced graphs against eager (bit for bit: the interpreter
// runs the eager kernels), guards and the cache, graph breaks, in-place ops,
// views, captured tensors, and randomly generated programs.
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <cstring>
#include <random>
#include <thread>

#include "compile/toolchain.h"
#include "test_util.h"

namespace brisk {
namespace {

using testing::expect_error;

class Compile : public ::testing::Test {
 protected:
  void SetUp() override {
    set_num_threads(1);
    manual_seed(0);
  }
};

::testing::AssertionResult same_bits(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << " vs " << dtype_name(want.dtype());
  if (!(got.sizes() == want.sizes()))
    return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
  Tensor g = got.contiguous(), w = want.contiguous();
  const size_t n = static_cast<size_t>(g.numel()) * element_size(g.dtype());
  if (n && std::memcmp(g.data_ptr(), w.data_ptr(), n) != 0) {
    Tensor gd = g.to(kDouble), wd = w.to(kDouble);
    for (int64_t i = 0; i < g.numel(); ++i) {
      const double a = gd.data_ptr<double>()[i], b = wd.data_ptr<double>()[i];
      if (!(a == b || (a != a && b != b)) || std::signbit(a) != std::signbit(b))
        return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << b;
    }
    if (std::memcmp(g.data_ptr(), w.data_ptr(), n) != 0) return ::testing::AssertionFailure() << "NaN payloads differ";
  }
  return ::testing::AssertionSuccess();
}

Tensor gelu_chain(const Tensor& x) { return x * 0.5 * (1.0 + erf(x / 1.41421)); }

TEST_F(Compile, GeluChainIsOneFusedGroupAndBitEqual) {
  auto f = compile(gelu_chain);
  for (int64_t n : {1, 7, 100, 2047, 2048, 2049, 70000}) {
    Tensor x = randn({n}) * 3;
    EXPECT_TRUE(same_bits(f(x), gelu_chain(x))) << n;  // traced
    Tensor y = randn({n}) * 3;
    EXPECT_TRUE(same_bits(f(y), gelu_chain(y))) << n;  // replayed
  }
  EXPECT_EQ(f.stats().traces, 7);
  EXPECT_EQ(f.stats().cache_hits, 7);
  EXPECT_EQ(f.stats().nodes, 5);
  EXPECT_EQ(f.stats().groups, 1) << f.graph_text();
  EXPECT_NE(f.graph_text().find("(fused)"), std::string::npos);
  // the default backend generates the group's code where a compiler is installed
  if (jit::have_compiler()) EXPECT_EQ(f.stats().generated, 1) << f.stats().codegen;
}

// Blocks and generated ranges spread over two threads give the same bits
// (the split points are where eager's vectors start).
TEST_F(Compile, TwoThreadsGiveTheSameBits) {
  auto fn = [](const Tensor& x, const Tensor& b) { return gelu_chain(x + b).sin() * x; };
  for (auto backend : {CompileBackend::Interpreter, CompileBackend::Default}) {
    auto f = compile(fn, CompileOptions().set_backend(backend));
    for (auto shape : {std::vector<int64_t>{300000}, std::vector<int64_t>{300, 1003}, std::vector<int64_t>{20, 9000}}) {
      Tensor x = randn(shape) * 50, b = randn({shape.back()});
      set_num_threads(1);
      Tensor want = fn(x, b);
      set_num_threads(2);
      f(x, b);
      Tensor got = f(x, b);
      set_num_threads(1);
      EXPECT_TRUE(same_bits(got, want)) << shape.size() << " dims, backend " << static_cast<int>(backend);
    }
  }
}

TEST_F(Compile, DeadCallsAreDropped) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor unused = (x.exp() * 2).sigmoid();  // three calls nobody reads
    y.add_(1);                                // a side effect: kept
    return x * 3;
  };
  auto f = compile(fn);
  for (int rep = 0; rep < 2; ++rep) {
    Tensor x = randn({50}), y = randn({50}), y2 = y.clone();
    EXPECT_TRUE(same_bits(f(x, y), fn(x, y2)));
    EXPECT_TRUE(same_bits(y, y2));
  }
  EXPECT_EQ(f.stats().nodes, 2) << f.graph_text();
}

// Note [Common subexpressions]: a repeated call on unchanged inputs is
// computed once; a write in between, a result of the function, or another
// layout keeps both.
TEST_F(Compile, CommonSubexpressionsAreComputedOnce) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor a = (x * y).exp(), b = (x * y).exp();  // x * y and exp twice: two calls go
    return a + b.sin();
  };
  auto f = compile(fn);
  for (int rep = 0; rep < 2; ++rep) {
    Tensor x = randn({300}), y = randn({300});
    EXPECT_TRUE(same_bits(f(x, y), fn(x, y)));
  }
  EXPECT_EQ(f.stats().nodes, 4) << f.graph_text();

  // an in-place write to an input in between: the second call reads new values
  auto g = [](const Tensor& x) {
    Tensor a = x * 2;
    x.add_(1);
    Tensor b = x * 2;
    return a + b;
  };
  auto fg = compile(g);
  for (int rep = 0; rep < 2; ++rep) {
    Tensor x = randn({64}), x2 = x.clone();
    EXPECT_TRUE(same_bits(fg(x), g(x2)));
    EXPECT_TRUE(same_bits(x, x2));
  }
  EXPECT_EQ(fg.stats().nodes, 4) << fg.graph_text();

  // an in-place write to the first result: the second is not the same value
  auto h = [](const Tensor& x) {
    Tensor a = x.cos();
    a.mul_(3);
    return a + x.cos();
  };
  auto fh = compile(h);
  Tensor x = randn({64});
  fh(x);
  EXPECT_TRUE(same_bits(fh(x), h(x)));
  EXPECT_EQ(fh.stats().nodes, 4) << fh.graph_text();

  // two results never share memory, even when equal
  auto r = [](const Tensor& x) { return std::make_pair(x.exp(), x.exp()); };
  auto fr = compile(r);
  fr(x);
  auto [p, q] = fr(x);
  EXPECT_TRUE(same_bits(p, x.exp()));
  p.fill_(0);
  EXPECT_TRUE(same_bits(q, x.exp()));

  // other views of the same buffer are other calls
  auto v = [](const Tensor& m) { return m.exp() + m.t().exp().t(); };
  auto fv = compile(v);
  Tensor m = randn({8, 8});
  fv(m);
  EXPECT_TRUE(same_bits(fv(m), v(m)));
}

// Note [Constant folding]: calls on constants only run once, at the trace.
TEST_F(Compile, CallsOnConstantsAreFolded) {
  auto fn = [](const Tensor& x) {
    Tensor k = full({x.size(1)}, 0.5) * tensor(std::vector<float>{2.0f, 3.0f, 4.0f}).sum() + 1;  // fill, mul, add
    return x * k.sqrt();
  };
  auto f = compile(fn);
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({4, 3});
    EXPECT_TRUE(same_bits(f(x), fn(x)));
  }
  // all but the last mul: the sum too (its input is a constant)
  EXPECT_EQ(f.stats().nodes, 1) << f.graph_text();

  // a folded result is handed out as a fresh copy: writing it changes nothing later
  auto c = [](const Tensor& x) { return std::make_pair(x + 1, full({4}, 2.0) * 3); };
  auto fc = compile(c);
  Tensor y = randn({4});
  auto [a0, k0] = fc(y);  // the trace
  k0.fill_(-1);
  auto [a1, k1] = fc(y);
  k1.mul_(5);
  auto [a2, k2] = fc(y);
  EXPECT_TRUE(same_bits(k2, full({4}, 6.0)));
  EXPECT_EQ(fc.stats().nodes, 1) << fc.graph_text();

  // big constants stay calls (a folded one would hold its memory)
  auto big = [](const Tensor& x) { return x + full({100000}, 0.25).exp(); };
  auto fb = compile(big);
  Tensor z = randn({100000});
  fb(z);
  EXPECT_TRUE(same_bits(fb(z), big(z)));
  EXPECT_EQ(fb.stats().nodes, 3) << fb.graph_text();
}

// The compiled function keeps no intermediate of its trace run alive.
TEST_F(Compile, TheTraceRunsIntermediatesAreReleased) {
  InferenceMode guard;
  Tensor x = randn({1 << 18});
  auto f = compile(gelu_chain);
  const int64_t before = cpu::memory_allocated();
  { Tensor y = f(x); }
  EXPECT_EQ(cpu::memory_allocated(), before);
  { Tensor y = f(x); }
  EXPECT_EQ(cpu::memory_allocated(), before);
}

// Note [Autotuning block sizes]: every variant is timed once on copies, the
// values are eager's whatever is kept, and in-place updates happen once.
TEST_F(Compile, MaxAutotuneTimesBlockSizesOnCopiesAndKeepsTheValues) {
  if (!jit::have_compiler()) GTEST_SKIP() << "no C++ compiler: no generated kernels to tune";
  auto f = compile(gelu_chain, CompileOptions().set_mode(CompileMode::MaxAutotune));
  Tensor x = randn({1 << 19}) * 3;  // 4 MiB of data: timed (smaller kernels keep the default)
  EXPECT_TRUE(same_bits(f(x), gelu_chain(x)));  // traced
  EXPECT_TRUE(same_bits(f(x), gelu_chain(x)));  // tuned, then run
  EXPECT_TRUE(same_bits(f(x), gelu_chain(x)));
  const std::string note = f.stats().autotune;
  for (const char* b : {"block 256", "block 512", "block 1024", "block 2048", "kept"})
    EXPECT_NE(note.find(b), std::string::npos) << b << " in: " << note;

  // an optimizer-like update in place: applied exactly once per call
  auto step = [](const Tensor& p, const Tensor& m, const Tensor& g) {
    m.mul_(0.9).add_(g, 0.1);
    p.sub_(m * 0.01).mul_(0.999);
  };
  auto fs = compile(step, CompileOptions().set_mode(CompileMode::MaxAutotune));
  Tensor p = randn({5000}), m = zeros({5000}), p2 = p.clone(), m2 = m.clone();
  for (int i = 0; i < 4; ++i) {
    Tensor g = randn({5000});
    fs(p, m, g);
    step(p2, m2, g);
    EXPECT_TRUE(same_bits(p, p2)) << "step " << i;
    EXPECT_TRUE(same_bits(m, m2)) << "step " << i;
  }
  EXPECT_NE(fs.stats().autotune.find("too small to time alone"), std::string::npos) << fs.stats().autotune;
  Tensor P = randn({1 << 19}), M = zeros({1 << 19}), P2 = P.clone(), M2 = M.clone();  // 6 MiB over p, m, g
  for (int i = 0; i < 3; ++i) {
    Tensor g = randn({1 << 19});
    fs(P, M, g);
    step(P2, M2, g);
    EXPECT_TRUE(same_bits(P, P2)) << "step " << i;
    EXPECT_TRUE(same_bits(M, M2)) << "step " << i;
  }
  EXPECT_NE(fs.stats().autotune.find("kept"), std::string::npos) << fs.stats().autotune;
}

// Note [Row fusion]: the elementwise calls that make a row op's input run a
// block of rows at a time in front of it, bit-equal to eager.
TEST_F(Compile, RowOpsRunBehindThePointwiseCallsThatMakeTheirInput) {
  auto attn = [](const Tensor& s, const Tensor& mask) { return softmax(s * 0.125 + mask, -1); };
  auto ln = [](const Tensor& x, const Tensor& r, const Tensor& w, const Tensor& b) {
    return nn::functional::layer_norm(x + r, {x.size(-1)}, w, b);
  };
  auto lsm = [](const Tensor& x) { return log_softmax(x.tanh() * 3, 1); };
  auto rms = [](const Tensor& x) { return nn::functional::rms_norm(x * x.sigmoid(), {x.size(-1)}); };
  // reductions over the last dim (rows of a few, and of many: the kernel
  // splits long rows when there are few of them, and so must a row block)
  auto red = [](const Tensor& x, const Tensor& y) {
    return std::make_tuple((x - y).pow(2).mean(-1), (x * y).sum(-1), x.exp().amax(-1), (x + y).var(-1),
                           x.sin().argmax(-1));
  };
  for (auto backend : {CompileBackend::Default, CompileBackend::Interpreter}) {
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      auto fa = compile(attn, CompileOptions().set_backend(backend));
      auto fl = compile(ln, CompileOptions().set_backend(backend));
      auto fs = compile(lsm, CompileOptions().set_backend(backend));
      auto fr = compile(rms, CompileOptions().set_backend(backend));
      auto fd = compile(red, CompileOptions().set_backend(backend));
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{7, 3}, {300, 77}, {64, 1000}, {5, 20000}, {1, 130}}) {
        Tensor s = randn({2, rows, cols}) * 4, mask = randn({rows, cols});
        fa(s, mask);
        EXPECT_TRUE(same_bits(fa(s, mask), attn(s, mask))) << rows << "x" << cols;
        Tensor x = randn({rows, cols}), r = randn({rows, cols}), w = randn({cols}), b = randn({cols});
        fl(x, r, w, b);
        EXPECT_TRUE(same_bits(fl(x, r, w, b), ln(x, r, w, b))) << rows << "x" << cols;
        fs(x);
        EXPECT_TRUE(same_bits(fs(x), lsm(x))) << rows << "x" << cols;
        fr(x);
        EXPECT_TRUE(same_bits(fr(x), rms(x))) << rows << "x" << cols;
        fd(x, r);
        auto [m1, s1, a1, v1, i1] = fd(x, r);
        auto [m2, s2, a2, v2, i2] = red(x, r);
        EXPECT_TRUE(same_bits(m1, m2)) << rows << "x" << cols;
        EXPECT_TRUE(same_bits(s1, s2)) << rows << "x" << cols;
        EXPECT_TRUE(same_bits(a1, a2)) << rows << "x" << cols;
        EXPECT_TRUE(same_bits(v1, v2)) << rows << "x" << cols;
        EXPECT_TRUE(same_bits(i1, i2)) << rows << "x" << cols;
      }
      const std::string text = fd.graph_text();
      int staged = 0;
      for (size_t pos = text.find("rows staged"); pos != std::string::npos; pos = text.find("rows staged", pos + 1)) ++staged;
      EXPECT_EQ(staged, 5) << text;  // every reduction behind its pointwise input
      for (const CompileStats& st : {fa.stats(), fl.stats(), fs.stats(), fr.stats()}) EXPECT_EQ(st.groups, 1);
      EXPECT_NE(fa.graph_text().find("rows staged"), std::string::npos) << fa.graph_text();
    }
  }
  set_num_threads(1);
  // 16-bit rows (float math inside), and an input the row op's caller also keeps: no fusion then
  auto half_attn = [](const Tensor& s) { return softmax(s.to(kBFloat16) * 2, -1); };
  auto fh = compile(half_attn);
  Tensor s = randn({33, 65});
  fh(s);
  EXPECT_TRUE(same_bits(fh(s), half_attn(s)));
  auto keep = [](const Tensor& x) {
    Tensor y = x * 2;
    return std::make_pair(softmax(y, 1), y);
  };
  auto fk = compile(keep);
  fk(s);
  auto [p, y] = fk(s);
  EXPECT_TRUE(same_bits(p, softmax(s * 2, 1)));
  EXPECT_TRUE(same_bits(y, s * 2));
  EXPECT_EQ(fk.graph_text().find("rows staged"), std::string::npos) << fk.graph_text();
}

// Note [Dynamic batch sizes]: dim 0 of the arguments is out of the guard.
TEST_F(Compile, DynamicBatchSizesAreSpecializationsNotRecompiles) {
  auto fn = [](const Tensor& x, const Tensor& w) { return gelu_chain(x.matmul(w) + 1).softmax(-1); };
  auto f = compile(fn, CompileOptions().set_dynamic(true).set_cache_size_limit(2));
  Tensor w = randn({7, 5});
  for (int rep = 0; rep < 2; ++rep)
    for (int64_t b = 1; b <= 20; ++b) {
      Tensor x = randn({b, 7});
      EXPECT_TRUE(same_bits(f(x, w), fn(x, w))) << b;
    }
  EXPECT_EQ(f.stats().traces, 20);
  EXPECT_EQ(f.stats().batch_sizes, 19);
  EXPECT_EQ(f.stats().cache_hits, 20);
  EXPECT_EQ(f.stats().eager_calls, 0);
  EXPECT_EQ(f.stats().last_recompile, "");
  // another feature size is another graph (a recompile, named)
  Tensor x9 = randn({4, 9}), w9 = randn({9, 5});
  EXPECT_TRUE(same_bits(f(x9, w9), fn(x9, w9)));
  EXPECT_NE(f.stats().last_recompile.find("argument 0"), std::string::npos) << f.stats().last_recompile;
  Tensor x3 = randn({3, 9});
  EXPECT_TRUE(same_bits(f(x3, w9), fn(x3, w9)));  // another size of that graph
  EXPECT_EQ(f.stats().batch_sizes, 20);
  // past cache_size_limit graphs (not sizes): eager
  Tensor x11 = randn({4, 11}), w11 = randn({11, 5});
  const int64_t eager0 = f.stats().eager_calls;
  EXPECT_TRUE(same_bits(f(x11, w11), fn(x11, w11)));
  EXPECT_EQ(f.stats().eager_calls, eager0 + 1);

  // at most 64 sizes per graph: the least recently used goes
  auto g = compile([](const Tensor& x) { return x * 2 + 1; }, CompileOptions().set_dynamic(true));
  for (int64_t b = 1; b <= 70; ++b) g(randn({b, 3}));
  const int64_t traces = g.stats().traces;
  g(randn({70, 3}));  // kept
  EXPECT_EQ(g.stats().traces, traces);
  g(randn({1, 3}));   // dropped: traced again
  EXPECT_EQ(g.stats().traces, traces + 1);
  EXPECT_EQ(g.stats().last_recompile, "");
}

// Note [Recomputing in the backward]: pointwise intermediates are made again
// in the backward instead of kept from the forward; gradients are the same.
TEST_F(Compile, PointwiseIntermediatesAreRecomputedInTheBackward) {
  auto fn = [](const Tensor& x) { return gelu_chain(x).sin(); };
  for (auto backend : {CompileBackend::Default, CompileBackend::Interpreter}) {
    auto f = compile(fn, CompileOptions().set_backend(backend));
    const int64_t n = 1 << 16;
    for (int rep = 0; rep < 3; ++rep) {
      Tensor x = randn({n}).requires_grad_(), x2 = x.detach().clone().requires_grad_();
      const int64_t before = cpu::memory_allocated();
      Tensor y = f(x);
      const int64_t held = cpu::memory_allocated() - before;  // y and what the backward keeps
      Tensor g = randn({n});
      y.backward(g);
      Tensor y2 = fn(x2);
      y2.backward(g);
      EXPECT_TRUE(same_bits(y, y2));
      EXPECT_TRUE(same_bits(x.grad(), x2.grad())) << "rep " << rep;
      // eager keeps the chain's intermediates; the compiled forward keeps
      // only its result (x is the caller's)
      if (rep > 0) EXPECT_LE(held, n * 4 * 2) << "bytes held between forward and backward: " << held;
    }
  }
}

// Note [A cut through the forward]: a GEMM's result ahead of a pointwise
// chain is kept instead of the chain's values (the backward reads four of
// them); they are made again from it, with the same gradients.
TEST_F(Compile, MinCutKeepsTheGemmResultInsteadOfTheChain) {
  auto fn = [](const Tensor& x, const Tensor& w) { return gelu_chain(matmul(x, w)).sin(); };
  for (auto backend : {CompileBackend::Default, CompileBackend::Interpreter}) {
    auto f = compile(fn, CompileOptions().set_backend(backend));
    const int64_t rows = 256, cols = 256;
    Tensor w = randn({64, cols}).requires_grad_(), w2 = w.detach().clone().requires_grad_();
    for (int rep = 0; rep < 3; ++rep) {
      Tensor x = randn({rows, 64});
      const int64_t before = cpu::memory_allocated();
      Tensor y = f(x, w);
      const int64_t held = cpu::memory_allocated() - before;  // y and what the backward keeps
      Tensor g = randn({rows, cols});
      y.backward(g);
      Tensor y2 = fn(x, w2);
      y2.backward(g);
      EXPECT_TRUE(same_bits(y, y2));
      EXPECT_TRUE(same_bits(w.grad(), w2.grad())) << "rep " << rep;
      w.mutable_grad() = Tensor();
      w2.mutable_grad() = Tensor();
      // y and the GEMM's result; without the cut: y, x * 0.5, x / 1.41421,
      // 1 + erf(...) and their product
      if (rep > 0) EXPECT_LE(held, rows * cols * 4 * 2) << "bytes held between forward and backward: " << held;
    }
  }
}

// Note [Batches of small groups]: an update written with plain ops over many
// small parameters is one small group per parameter; with two threads the
// independent groups run side by side, with eager's bits.
TEST_F(Compile, SmallIndependentGroupsRunAsABatch) {
  manual_seed(3);
  std::vector<Tensor> ps, ms, gs, ps_e, ms_e;
  for (int i = 0; i < 24; ++i) {
    ps.push_back(randn({1000 + 37 * i}));
    ms.push_back(zeros({1000 + 37 * i}));
    gs.push_back(randn({1000 + 37 * i}));
    ps_e.push_back(ps.back().clone());
    ms_e.push_back(ms.back().clone());
  }
  auto step = [](std::vector<Tensor>& p, std::vector<Tensor>& m, const std::vector<Tensor>& g) {
    for (size_t i = 0; i < p.size(); ++i) {
      m[i].mul_(0.9).add_(g[i], 0.1);
      p[i].sub_(m[i] * 0.01 / (m[i].abs().sqrt() + 1e-8));
    }
  };
  auto f = compile([&](const std::vector<Tensor>& g) {
    step(ps, ms, g);
    return std::vector<Tensor>{};
  });
  set_num_threads(2);
  for (int it = 0; it < 3; ++it) {
    f(gs);
    step(ps_e, ms_e, gs);
  }
  set_num_threads(1);
  EXPECT_EQ(f.stats().graph_breaks, 0) << f.stats().last_break;
  EXPECT_NE(f.graph_text().find("batches (run in parallel when there are threads): groups 0-23"), std::string::npos)
      << f.graph_text();
  for (size_t i = 0; i < ps.size(); ++i) {
    EXPECT_TRUE(same_bits(ps[i], ps_e[i])) << i;
    EXPECT_TRUE(same_bits(ms[i], ms_e[i])) << i;
  }
  // a group that reads what an earlier one writes is not in its batch
  Tensor a = randn({500}), b = randn({500});
  auto h = compile([](const Tensor& x, const Tensor& y) {
    Tensor u = (x * 2).exp();
    Tensor v = (y + 1).sin();
    return std::vector<Tensor>{u, v, (u.sum() + v).cos()};
  });
  set_num_threads(2);
  h(a, b);
  const auto r = h(a, b);
  set_num_threads(1);
  EXPECT_TRUE(same_bits(r[2], ((a * 2).exp().sum() + (b + 1).sin()).cos()));
}

// One compiled function called from two threads at once: traces, cache
// hits, new batch sizes and autotuning on both, each call eager's bits.
TEST_F(Compile, ConcurrentCallersShareOneCompiledFunction) {
  auto fn = [](const Tensor& x) { return softmax(gelu_chain(x) * 2 + 1, -1); };
  auto f = compile(fn, CompileOptions().set_dynamic(true).set_mode(CompileMode::MaxAutotune));
  std::vector<std::vector<Tensor>> inputs(2);
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 40; ++i) inputs[t].push_back(randn({1 + (i * 7 + t) % 9, 600}));
  std::vector<std::vector<Tensor>> got(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      set_num_threads(1);
      for (const Tensor& x : inputs[t]) got[t].push_back(f(x));
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 2; ++t)
    for (size_t i = 0; i < inputs[t].size(); ++i)
      ASSERT_TRUE(same_bits(got[t][i], fn(inputs[t][i]))) << "thread " << t << " call " << i;
  EXPECT_EQ(f.stats().calls, 80);
  EXPECT_EQ(f.stats().eager_calls, 0);
  EXPECT_EQ(f.stats().last_recompile, "");
}

TEST_F(Compile, InterpreterUnfusedAndEagerBackendsAgree) {
  Tensor x = randn({3000});
  Tensor want = gelu_chain(x);
  for (auto opts : {CompileOptions().set_fuse(false), CompileOptions().set_backend(CompileBackend::Interpreter),
                    CompileOptions().set_backend(CompileBackend::Eager)}) {
    auto f = compile(gelu_chain, opts);
    f(randn({3000}));
    EXPECT_TRUE(same_bits(f(x), want));
  }
}

TEST_F(Compile, DtypesAndMixedPrecisionChains) {
  auto f = compile([](const Tensor& a, const Tensor& b) {
    Tensor h = (a.to(kHalf) * 2 + 1).sigmoid();
    return std::make_tuple(h, h.to(kFloat) * b, (a > b).logical_and(b > 0), where(a > 0, a, b.to(kDouble)));
  });
  for (int rep = 0; rep < 3; ++rep) {
    Tensor a = randn({5, 33}), b = randn({5, 33});
    auto [h, hb, m, w] = f(a, b);
    Tensor eh = (a.to(kHalf) * 2 + 1).sigmoid();
    EXPECT_TRUE(same_bits(h, eh));
    EXPECT_TRUE(same_bits(hb, eh.to(kFloat) * b));
    EXPECT_TRUE(same_bits(m, (a > b).logical_and(b > 0)));
    EXPECT_TRUE(same_bits(w, where(a > 0, a, b.to(kDouble))));
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().graph_breaks, 0) << f.stats().last_break;
}

TEST_F(Compile, BroadcastBiasActivationFusesOverRows) {
  auto f = compile([](const Tensor& x, const Tensor& b) { return (x + b).relu() * 2 - x; });
  for (int rep = 0; rep < 2; ++rep) {
    Tensor x = randn({64, 300}), b = randn({300});
    EXPECT_TRUE(same_bits(f(x, b), ((x + b).relu() * 2 - x)));
  }
  EXPECT_EQ(f.stats().groups, 1) << f.graph_text();
}

TEST_F(Compile, ViewsAndNonContiguousInputs) {
  auto fn = [](const Tensor& x) {
    Tensor t = x.t();
    return (t.contiguous() * 2 + t).exp() + x.t().unsqueeze(0);
  };
  auto f = compile(fn);
  for (int rep = 0; rep < 2; ++rep) {
    Tensor x = randn({7, 40});
    EXPECT_TRUE(same_bits(f(x), fn(x)));
    Tensor base = randn({40, 14});
    Tensor xs = base.t().narrow(0, 3, 7);  // a strided, offset view argument (new guard)
    EXPECT_TRUE(same_bits(f(xs), fn(xs)));
  }
  EXPECT_EQ(f.stats().traces, 2);
}

TEST_F(Compile, InPlaceOnArgumentsAndIntermediates) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor t = x * 2;
    t.add_(y).mul_(0.5);
    x.sub_(1);
    y.narrow(0, 0, 2).fill_(3);
    return t + x;
  };
  auto f = compile(fn);
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({4, 5}), y = randn({4, 5});
    Tensor x2 = x.clone(), y2 = y.clone();
    const int64_t v0 = x._version();
    Tensor got = f(x, y);
    Tensor want = fn(x2, y2);
    EXPECT_TRUE(same_bits(got, want));
    EXPECT_TRUE(same_bits(x, x2));  // the argument changed in place as in eager
    EXPECT_TRUE(same_bits(y, y2));
    EXPECT_GT(x._version(), v0);  // and its version moved (saved tensors notice)
  }
  EXPECT_EQ(f.stats().cache_hits, 2);
}

TEST_F(Compile, ArgumentsSharingStorageAreAGuard) {
  auto fn = [](const Tensor& a, const Tensor& b) {
    a.mul_(2);
    return a + b;
  };
  auto f = compile(fn);
  Tensor x = randn({6}), y = randn({6});
  f(x, y);
  Tensor s = randn({6}), s2 = s.clone();
  Tensor got = f(s, s);  // aliasing arguments: a new graph, and the eager semantics
  Tensor want = fn(s2, s2);
  EXPECT_TRUE(same_bits(got, want));
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_NE(f.stats().last_recompile, "");

  // the same over a list of 40 tensors (make_guard's hashed lookup): views
  // of one storage, and the same tensor twice, against eager
  auto gn = [](const std::vector<Tensor>& ts) {
    for (const Tensor& t : ts) t.mul_(2).add_(1);
    return std::vector<Tensor>{};
  };
  auto g = compile(gn);
  auto make = [](bool share, uint64_t seed) {
    manual_seed(seed);
    std::vector<Tensor> ts;
    Tensor base = randn({8});
    for (int i = 0; i < 40; ++i) ts.push_back(share && i % 10 == 3 ? base.slice(0, 0, 4) : randn({4}));
    if (share) ts[17] = ts[5];
    return ts;
  };
  std::vector<Tensor> plain = make(false, 1);
  g(plain);
  const int64_t traces = g.stats().traces;
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<Tensor> got = make(true, 2 + rep), want = make(true, 2 + rep);
    g(got);
    gn(want);
    for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(same_bits(got[k], want[k])) << "tensor " << k;
  }
  EXPECT_EQ(g.stats().traces, traces + 1) << "aliasing arguments are another guard key, traced once";
}

TEST_F(Compile, CapturedTensorsAreReadOnEveryCall) {
  Tensor w = randn({10});
  auto f = compile([&w](const Tensor& x) { return x * w + 1; });
  Tensor x = randn({10});
  f(x);
  w.mul_(3);  // e.g. an optimizer step on a parameter
  EXPECT_TRUE(same_bits(f(x), x * w + 1));
  EXPECT_EQ(f.stats().cache_hits, 1);
}

TEST_F(Compile, NonTensorArgumentsAreConstantsOfTheGuard) {
  auto fn = [](const Tensor& x, double s, int64_t k) { return x * s + k; };
  auto f = compile(fn);
  Tensor x = randn({8});
  EXPECT_TRUE(same_bits(f(x, 2.0, 1), fn(x, 2.0, 1)));
  EXPECT_TRUE(same_bits(f(x, 3.0, 1), fn(x, 3.0, 1)));
  EXPECT_TRUE(same_bits(f(x, 2.0, 1), fn(x, 2.0, 1)));
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f.stats().cache_hits, 1);
  EXPECT_EQ(f.stats().last_recompile, "a non-tensor argument changed");
}

TEST_F(Compile, RetraceNamesTheGuardThatFailed) {
  auto f = compile(gelu_chain);
  f(randn({4}));
  f(randn({5}));
  EXPECT_NE(f.stats().last_recompile.find("argument 0 was float32[4]"), std::string::npos) << f.stats().last_recompile;
  f(randn({5}).to(kDouble));
  EXPECT_NE(f.stats().last_recompile.find("float64[5]"), std::string::npos) << f.stats().last_recompile;
  {
    NoGradGuard ng;
    f(randn({5}).to(kDouble));
  }
  EXPECT_EQ(f.stats().last_recompile, "grad mode or inference mode changed");
  EXPECT_EQ(f.stats().traces, 4);
}

TEST_F(Compile, CacheSizeLimitRunsEagerlyPastIt) {
  auto f = compile(gelu_chain, CompileOptions().set_cache_size_limit(2));
  for (int64_t n : {3, 4, 5, 6}) {
    Tensor x = randn({n});
    EXPECT_TRUE(same_bits(f(x), gelu_chain(x)));
  }
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f.stats().eager_calls, 2);
}

TEST_F(Compile, ReductionsSoftmaxLayerNormAndGemmsAreRecorded) {
  Tensor w = randn({48, 32}), bias = randn({48}), g = randn({48}), beta = randn({48});
  auto fn = [&](const Tensor& x) {
    Tensor h = nn::functional::linear(x, w, bias);  // addmm: bias copied, then a GEMM
    h = gelu(h);
    h = nn::functional::layer_norm(h, {48}, g, beta, 1e-5);
    Tensor s = softmax(h, -1) + h.log_softmax(0);
    return std::make_tuple(s.sum({1}), h.mean(), amax(s, {0}, true), cumsum(h, 1), x.matmul(x.t()), (h * 2).sum() + s);
  };
  auto f = compile(fn, CompileOptions().set_fullgraph(true));
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({6, 32});
    auto got = f(x);
    auto want = fn(x);
    EXPECT_TRUE(same_bits(std::get<0>(got), std::get<0>(want)));
    EXPECT_TRUE(same_bits(std::get<1>(got), std::get<1>(want)));
    EXPECT_TRUE(same_bits(std::get<2>(got), std::get<2>(want)));
    EXPECT_TRUE(same_bits(std::get<3>(got), std::get<3>(want)));
    EXPECT_TRUE(same_bits(std::get<4>(got), std::get<4>(want)));
    EXPECT_TRUE(same_bits(std::get<5>(got), std::get<5>(want)));
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().cache_hits, 2);
  const std::string text = f.graph_text();
  for (const char* k : {"[gemm]", "[layer_norm]", "[softmax]", "[sum]", "[amax]", "[cumsum]"})
    EXPECT_NE(text.find(k), std::string::npos) << k << "\n" << text;
}

// An encoder's lookups and attention are one graph: embedding (index_select)
// and the fused attention kernel are recorded; the index values are read by
// the kernel on every replay, so one out of range is still an error.
TEST_F(Compile, EmbeddingAndAttentionAreRecorded) {
  Tensor table = randn({20, 16}), wq = randn({16, 16});
  auto fn = [&](const Tensor& ids, const Tensor& mask) {
    Tensor x = nn::functional::embedding(ids, table, /*padding_idx=*/0);  // (b, s, 16)
    Tensor q = nn::functional::linear(x, wq).view({ids.size(0), ids.size(1), 2, 8}).transpose(1, 2);
    Tensor k = x.view({ids.size(0), ids.size(1), 2, 8}).transpose(1, 2);
    Tensor a = nn::functional::scaled_dot_product_attention(q, k, k, mask.ne(0).unsqueeze(1).unsqueeze(2));
    return a.transpose(1, 2).reshape({ids.size(0), ids.size(1), 16}).sum({1});
  };
  auto f = compile(fn, CompileOptions().set_fullgraph(true));
  InferenceMode guard;
  for (int rep = 0; rep < 3; ++rep) {
    Tensor ids = randint(0, 20, {3, 5}, kLong);
    Tensor mask = (randint(0, 4, {3, 5}, kLong) > 0).to(kLong);
    mask.select(1, 0).fill_(1);
    EXPECT_TRUE(same_bits(f(ids, mask), fn(ids, mask))) << rep;
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().eager_calls, 0);
  const std::string text = f.graph_text();
  for (const char* k : {"index_select", "attention"}) EXPECT_NE(text.find(k), std::string::npos) << k << "\n" << text;
  Tensor bad = randint(0, 20, {3, 5}, kLong);
  bad.view({-1})[7].fill_(20);
  expect_error([&] { f(bad, ones({3, 5}, kLong)); }, {"index_select", "20"});
}

// gather reads, scatter / scatter_add / index_add write into self at the
// index values: all recorded, the values checked by the kernel on every
// replay; the backward of gather (a scatter_add) and of embedding (an
// index_add) is then one compiled graph too.
TEST_F(Compile, GatherScatterAndIndexAddAreRecorded) {
  auto fn = [](const Tensor& x, const Tensor& idx, const Tensor& rows) {
    Tensor g = x.gather(1, idx) * 2;                                  // (4, 3)
    Tensor s = zeros({4, 6}).scatter_add_(1, idx, g).scatter_(1, idx.narrow(1, 0, 1), 0.5);
    Tensor a = x.clone().index_add_(0, rows, x.narrow(0, 0, 2), /*alpha=*/3.0);
    return s + a.exp();
  };
  auto f = compile(fn, CompileOptions().set_fullgraph(true));
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({4, 6}), idx = randint(0, 6, {4, 3}, kLong), rows = randint(0, 4, {2}, kLong);
    EXPECT_TRUE(same_bits(f(x, idx, rows), fn(x, idx, rows))) << rep;
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().graph_breaks, 0) << f.stats().last_break;
  const std::string text = f.graph_text();
  for (const char* k : {"gather", "scatter_add", "index_add"}) EXPECT_NE(text.find(k), std::string::npos) << k;
  Tensor bad = randint(0, 6, {4, 3}, kLong);
  bad[2][1].fill_(6);
  expect_error([&] { f(randn({4, 6}), bad, zeros({2}, kLong)); }, {"gather", "6"});

  // gradients through gather and embedding, compiled forward and backward
  Tensor table = randn({10, 5});
  auto loss = [&table](const Tensor& x, const Tensor& idx, const Tensor& ids) {
    return (x.gather(1, idx).sin().sum() + nn::functional::embedding(ids, table).pow(2).sum()) * x.sum();
  };
  auto fl = compile(loss);
  for (int rep = 0; rep < 2; ++rep) {
    Tensor x = randn({4, 6}).requires_grad_(true), x2 = x.detach().clone().requires_grad_(true);
    table.requires_grad_(true);
    Tensor idx = randint(0, 6, {4, 3}, kLong), ids = randint(0, 10, {7}, kLong);
    Tensor got = fl(x, idx, ids);
    TensorList gg = autograd::grad({got}, {x, table});
    Tensor want = loss(x2, idx, ids);
    TensorList gw = autograd::grad({want}, {x2, table});
    EXPECT_TRUE(allclose(got, want, 1e-6, 1e-6)) << rep;
    EXPECT_TRUE(allclose(gg[0], gw[0], 1e-5, 1e-6)) << rep;
    EXPECT_TRUE(allclose(gg[1], gw[1], 1e-5, 1e-6)) << rep;
  }
  EXPECT_EQ(fl.stats().graph_breaks, 0) << fl.stats().last_break;
  EXPECT_EQ(fl.stats().cache_hits, 1);
}

// Advanced indexing and index_put_ with integer index tensors are recorded
// (their shapes come from the indices' shapes; the kernel checks the values
// on every replay); a bool mask reads the data on the host (nonzero): a
// break, and the function runs eagerly there.
TEST_F(Compile, AdvancedIndexingAndIndexPutAreRecorded) {
  using indexing::Slice;
  auto fn = [](const Tensor& x, const Tensor& rows, const Tensor& cols) {
    Tensor a = x.index({rows}) * 2;                        // (3, 6)
    Tensor b = x.index({Slice(), cols}).exp();             // (4, 2)
    Tensor c = x.index({rows.narrow(0, 0, 2), cols});      // (2,): pairs
    Tensor y = zeros({4, 6});
    y.index_put_({rows}, a, /*accumulate=*/true);          // duplicates add
    y.index_put_({Slice(), cols}, b);
    return y + c.sum();
  };
  auto f = compile(fn, CompileOptions().set_fullgraph(true));
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({4, 6}), rows = randint(-4, 4, {3}, kLong), cols = randint(0, 6, {2}, kLong);
    EXPECT_TRUE(same_bits(f(x, rows, cols), fn(x, rows, cols))) << rep;
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().graph_breaks, 0) << f.stats().last_break;
  const std::string text = f.graph_text();
  for (const char* k : {"index", "index_put"}) EXPECT_NE(text.find(k), std::string::npos) << k;
  // an index out of range raises at the replay, as eagerly
  expect_error([&] { f(randn({4, 6}), tensor<int64_t>({0, 4, 1}), zeros({2}, kLong)); }, {"index", "4"});
  // a bool mask: nonzero reads the data, a break (fullgraph names it)
  auto masked = [](const Tensor& x) { return x.index({x > 0}) * 2; };
  expect_error([&] { compile(masked, CompileOptions().set_fullgraph(true))(randn({5})); }, {"nonzero"});
  auto fm = compile(masked);
  Tensor xm = randn({5});
  EXPECT_TRUE(same_bits(fm(xm), masked(xm)));
  EXPECT_EQ(fm.stats().graph_breaks, 1);

  // gradients through x[rows] (its backward is an index_add), compiled forward and backward
  auto loss = [](const Tensor& x, const Tensor& rows) { return (x.index({rows}).sin() * x.index({rows}).cos()).sum(); };
  auto fl = compile(loss);
  for (int rep = 0; rep < 2; ++rep) {
    Tensor x = randn({5, 3}).requires_grad_(true), x2 = x.detach().clone().requires_grad_(true);
    Tensor rows = randint(0, 5, {7}, kLong);
    Tensor got = fl(x, rows);
    TensorList gg = autograd::grad({got}, {x});
    Tensor want = loss(x2, rows);
    TensorList gw = autograd::grad({want}, {x2});
    EXPECT_TRUE(allclose(got, want, 1e-6, 1e-6)) << rep;
    EXPECT_TRUE(allclose(gg[0], gw[0], 1e-5, 1e-6)) << rep;
  }
  EXPECT_EQ(fl.stats().graph_breaks, 0) << fl.stats().last_break;
}

// Note [Convolutions and pooling in a graph]: a small CNN is one graph, in
// inference (bit-equal) and in training (max pooling's taps kept for the
// compiled backward; gradients as eager's).
TEST_F(Compile, ConvolutionsAndPoolingAreRecorded) {
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(2, 4, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                     nn::Conv2d(nn::Conv2dOptions(4, 6, 3).stride(2)), nn::GELU(), nn::AdaptiveAvgPool2d(1),
                     nn::Flatten(), nn::Linear(6, 3));
  nn::Sequential ref(nn::Conv2d(nn::Conv2dOptions(2, 4, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                     nn::Conv2d(nn::Conv2dOptions(4, 6, 3).stride(2)), nn::GELU(), nn::AdaptiveAvgPool2d(1),
                     nn::Flatten(), nn::Linear(6, 3));
  {
    NoGradGuard ng;
    auto d = ref->parameters(), s = net->parameters();
    for (size_t i = 0; i < d.size(); ++i) d[i].copy_(s[i]);
  }
  auto cnet = compile(net, CompileOptions().set_fullgraph(true));
  {
    InferenceMode guard;
    for (int rep = 0; rep < 3; ++rep) {
      Tensor x = randn({2, 2, 12, 12});
      EXPECT_TRUE(same_bits(cnet(x), ref->forward(x))) << rep;
    }
  }
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({2, 2, 12, 12});
    Tensor got = cnet(x).pow(2).sum(), want = ref->forward(x).pow(2).sum();
    got.backward();
    want.backward();
    EXPECT_TRUE(allclose(got, want, 1e-6, 1e-6)) << rep;
    auto a = net->parameters(), b = ref->parameters();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(allclose(a[i].grad(), b[i].grad(), 1e-5, 1e-6)) << rep << " " << i;
  }
  EXPECT_EQ(cnet.stats().graph_breaks, 0) << cnet.stats().last_break;
  EXPECT_EQ(cnet.stats().traces, 2);  // inference, training
  const std::string text = cnet.graph_text();
  for (const char* k : {"conv", "max_pool", "avg_pool"}) EXPECT_NE(text.find(k), std::string::npos) << k << "\n" << text;
}

// Training steps with the loss inside the compiled function: cross_entropy
// (its kernel checks the targets on every replay), nll_loss over
// log_softmax (gather checks them), batch_norm (running statistics updated
// in place on every replay) and group_norm: one graph, losses, gradients
// and running statistics as eager's.
TEST_F(Compile, LossesAndNormalizationAreRecorded) {
  auto make = [] {
    manual_seed(9);
    return nn::Sequential(nn::Linear(6, 8), nn::BatchNorm1d(8), nn::ReLU(), nn::Linear(8, 8), nn::GroupNorm(2, 8),
                          nn::Linear(8, 4));
  };
  nn::Sequential net = make(), ref = make();
  auto step = [](nn::Sequential& m, const Tensor& x, const Tensor& y) {
    Tensor h = m->forward(x);
    return nn::functional::cross_entropy(h, y) + nn::functional::nll_loss(h.log_softmax(1), y) * 0.5;
  };
  auto f = compile([&](const Tensor& x, const Tensor& y) { return step(net, x, y); },
                   CompileOptions().set_fullgraph(true));
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({5, 6}), y = randint(0, 4, {5}, kLong);
    Tensor got = f(x, y), want = step(ref, x, y);
    got.backward();
    want.backward();
    EXPECT_TRUE(allclose(got, want, 1e-6, 1e-6)) << rep;
    auto a = net->parameters(), b = ref->parameters();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(allclose(a[i].grad(), b[i].grad(), 1e-5, 1e-6)) << rep << " " << i;
    auto ba = net->buffers(), bb = ref->buffers();
    for (size_t i = 0; i < ba.size(); ++i) EXPECT_TRUE(allclose(ba[i], bb[i], 1e-6, 1e-7)) << rep << " buffer " << i;
  }
  EXPECT_EQ(f.stats().traces, 1);
  const std::string text = f.graph_text();
  for (const char* k : {"cross_entropy", "batch_norm", "group_norm", "gather"})
    EXPECT_NE(text.find(k), std::string::npos) << k << "\n" << text;
  // a target out of range in a replay: the kernel that reads it first says so
  // (cross_entropy's, or gather's for nll_loss)
  Tensor bad = tensor(std::vector<int64_t>{0, 1, 4, 2, 3});
  expect_error([&] { f(randn({5, 6}), bad); }, {"4 is out of bounds"});
}

TEST_F(Compile, GraphBreaksRunEagerlyOrRaiseWithFullgraph) {
  auto reduce = [](const Tensor& x) { return argsort(x * 2) + 1; };  // (sorting is not recorded)
  auto f = compile(reduce);
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({3});
    EXPECT_TRUE(same_bits(f(x), reduce(x)));
  }
  EXPECT_EQ(f.stats().graph_breaks, 1);
  EXPECT_EQ(f.stats().eager_calls, 2);
  EXPECT_NE(f.stats().last_break.find("argsort"), std::string::npos) << f.stats().last_break;
  auto g = compile(reduce, CompileOptions().set_fullgraph(true));
  expect_error([&] { g(randn({3})); }, {"[compile]", "fullgraph", "argsort"});

  // Values written through data_ptr are invisible to the trace: a break, never a baked constant.
  auto host_written = [](const Tensor& x) {
    Tensor t = empty({3});
    for (int i = 0; i < 3; ++i) t.data_ptr<float>()[i] = x.data_ptr<float>()[i] * 2;
    return x + t;
  };
  auto hw = compile(host_written);
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({3});
    EXPECT_TRUE(same_bits(hw(x), host_written(x)));
  }
  EXPECT_EQ(hw.stats().graph_breaks, 1);
  EXPECT_NE(hw.stats().last_break.find("computed a tensor on the host"), std::string::npos) << hw.stats().last_break;

  auto data_dependent = [](const Tensor& x) { return x * (x.max().item<float>() > 0 ? 2.0 : 3.0); };
  auto h = compile(data_dependent, CompileOptions().set_fullgraph(true));
  expect_error([&] { h(randn({9})); }, {"[compile]", "one graph"});
  // randperm shuffles on the host: a break
  auto r = compile([](const Tensor& x) { return x + randperm(9).to(kFloat); }, CompileOptions().set_fullgraph(true));
  expect_error([&] { r(randn({9})); }, {"[compile]", "randperm"});
}

TEST_F(Compile, CompiledBackwardMatchesEager) {
  Tensor w = randn({5}).requires_grad_(), b = randn({5}).requires_grad_();
  auto fn = [&](const Tensor& x, const Tensor& y) {
    Tensor h = (x * w + b).tanh();
    return std::make_pair(h * y.sigmoid() + x.exp() * 0.1, (h * h).sum());
  };
  auto f = compile(fn, CompileOptions().set_fullgraph(true));
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({4, 5}).requires_grad_(), y = randn({4, 5});
    Tensor x2 = x.detach().clone().requires_grad_();
    auto [a, s] = f(x, y);
    (a.sum() * 2 + s).backward();
    Tensor gw = w.grad().clone(), gb = b.grad().clone(), gx = x.grad();
    w.mutable_grad() = Tensor();
    b.mutable_grad() = Tensor();
    auto [ea, es] = fn(x2, y);
    (ea.sum() * 2 + es).backward();
    EXPECT_TRUE(same_bits(a, ea));
    EXPECT_TRUE(same_bits(s, es));
    EXPECT_TRUE(same_bits(gx, x2.grad())) << rep;
    EXPECT_TRUE(same_bits(gw, w.grad())) << rep;
    EXPECT_TRUE(same_bits(gb, b.grad())) << rep;
    EXPECT_EQ(a.grad_fn() ? a.grad_fn()->name() : "", rep == 0 ? "AddBackward0" : "CompiledFunctionBackward");
    w.mutable_grad() = Tensor();
    b.mutable_grad() = Tensor();
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().cache_hits, 2);
  EXPECT_GT(f.stats().nodes, 10);  // the forward and the backward kernels
  {
    NoGradGuard ng;  // without grad mode: another graph, forward only
    Tensor x = randn({4, 5});
    EXPECT_TRUE(same_bits(f(x, x).first, fn(x, x).first));
  }
  EXPECT_EQ(f.stats().traces, 2);
}

TEST_F(Compile, CompiledModuleTrainsLikeEager) {
  nn::Sequential net(nn::Linear(16, 32), nn::GELU(), nn::Linear(32, 4), nn::LayerNorm(std::vector<int64_t>{4}));
  nn::Sequential twin(nn::Linear(16, 32), nn::GELU(), nn::Linear(32, 4), nn::LayerNorm(std::vector<int64_t>{4}));
  {
    NoGradGuard ng;
    auto pn = net->parameters(), pt = twin->parameters();
    for (size_t i = 0; i < pn.size(); ++i) pt[i].copy_(pn[i]);
  }
  auto cnet = compile(net);
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1));
  optim::SGD opt2(twin->parameters(), optim::SGDOptions(0.1));
  for (int step = 0; step < 4; ++step) {
    Tensor x = randn({8, 16}), t = randn({8, 4});
    opt.zero_grad();
    opt2.zero_grad();
    Tensor loss = nn::functional::mse_loss(cnet(x), t);
    loss.backward();
    Tensor loss2 = nn::functional::mse_loss(twin->forward(x), t);
    loss2.backward();
    EXPECT_TRUE(same_bits(loss, loss2)) << step;
    auto pn = net->parameters(), pt = twin->parameters();
    for (size_t i = 0; i < pn.size(); ++i) EXPECT_TRUE(same_bits(pn[i].grad(), pt[i].grad())) << step << " " << i;
    opt.step();
    opt2.step();
  }
  EXPECT_EQ(cnet.stats().traces, 1);
  EXPECT_EQ(cnet.stats().graph_breaks, 0) << cnet.stats().last_break;
}

TEST_F(Compile, CompiledBackwardNoticesInPlaceChangesOfWhatItReads) {
  auto f = compile([](const Tensor& x, const Tensor& y) { return (x * y).sum(); });
  Tensor y = randn({3});
  f(randn({3}).requires_grad_(), y);
  Tensor x = randn({3}).requires_grad_();
  Tensor s = f(x, y);
  y.add_(1);  // the backward reads y: eager raises too
  expect_error([&] { s.backward(); }, {"modified by an inplace operation"});
}

TEST_F(Compile, VectorAndPairResultsKeepTheirStructure) {
  auto f = compile([](const std::vector<Tensor>& xs) {
    std::vector<Tensor> out;
    for (const Tensor& x : xs) out.push_back(x.abs());
    return std::make_pair(out, xs[0] + xs[1]);
  });
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<Tensor> xs{randn({3}), randn({3}), randn({3})};
    auto [v, s] = f(xs);
    ASSERT_EQ(v.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(v[i], xs[i].abs()));
    EXPECT_TRUE(same_bits(s, xs[0] + xs[1]));
  }
}

TEST_F(Compile, ModulesCompileTheirForwardAndSeeParameterUpdates) {
  nn::Sequential mlp(nn::Linear(32, 64), nn::GELU(), nn::Linear(64, 32), nn::LayerNorm(std::vector<int64_t>{32}));
  auto cm = compile(mlp);
  NoGradGuard ng;  // (parameters require grad: with grad mode on the forward runs eagerly for now)
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({8, 32});
    EXPECT_TRUE(same_bits(cm(x), mlp->forward(x)));
    for (auto& p : mlp->parameters()) p.add_(0.01);  // an optimizer step: read on the next call
  }
  EXPECT_EQ(cm.stats().traces, 1);
  EXPECT_EQ(cm.stats().graph_breaks, 0) << cm.stats().last_break;
  mlp->eval();  // a new graph for eval mode
  Tensor x = randn({8, 32});
  EXPECT_TRUE(same_bits(cm(x), mlp->forward(x)));
  EXPECT_EQ(cm.stats().traces, 2);
  // A parameter converted in place (module->to(kDouble)) is a guard: traced again.
  mlp->to(kDouble);
  Tensor xd = x.to(kDouble);
  EXPECT_TRUE(same_bits(cm(xd), mlp->forward(xd)));
  EXPECT_EQ(cm.stats().traces, 3);
}

TEST_F(Compile, DropoutIsTracedInEvalAndTrainingMode) {
  nn::Sequential net(nn::Linear(8, 8), nn::Dropout(0.5), nn::GELU());
  auto cnet = compile(net);
  NoGradGuard ng;
  net->eval();
  for (int rep = 0; rep < 2; ++rep) {
    Tensor x = randn({4, 8});
    EXPECT_TRUE(same_bits(cnet(x), net->forward(x)));
  }
  EXPECT_EQ(cnet.stats().graph_breaks, 0) << cnet.stats().last_break;
  net->train();  // dropout draws: recorded (Note [Random draws in a graph]), eager's bits after the same seed
  Tensor x = randn({4, 8});
  for (int rep = 0; rep < 3; ++rep) {
    manual_seed(4 + rep);
    Tensor got = cnet(x);
    manual_seed(4 + rep);
    EXPECT_TRUE(same_bits(got, net->forward(x))) << "call " << rep;
  }
  EXPECT_EQ(cnet.stats().graph_breaks, 0) << cnet.stats().last_break;
  EXPECT_EQ(cnet.stats().traces, 2);  // eval and train
}

// Training through dropout: the compiled forward draws the mask, the
// compiled backward reads it; losses and gradients as eager's per seed.
TEST_F(Compile, DropoutTrainsLikeEager) {
  nn::Sequential net(nn::Linear(8, 16), nn::Dropout(0.3), nn::GELU(), nn::Linear(16, 4));
  nn::Sequential ref(nn::Linear(8, 16), nn::Dropout(0.3), nn::GELU(), nn::Linear(16, 4));
  {
    NoGradGuard ng;
    auto d = ref->parameters(), s = net->parameters();
    for (size_t i = 0; i < d.size(); ++i) d[i].copy_(s[i]);
  }
  auto cnet = compile(net);
  Tensor x = randn({6, 8});
  for (int k = 0; k < 4; ++k) {
    manual_seed(100 + k);
    Tensor got = cnet(x).pow(2).sum();
    got.backward();
    manual_seed(100 + k);
    Tensor want = ref->forward(x).pow(2).sum();
    want.backward();
    EXPECT_TRUE(allclose(got, want, 1e-6, 1e-6)) << k;
    auto a = net->parameters(), b = ref->parameters();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(allclose(a[i].grad(), b[i].grad(), 1e-5, 1e-6)) << k << " " << i;
  }
  EXPECT_EQ(cnet.stats().graph_breaks, 0) << cnet.stats().last_break;
  EXPECT_EQ(cnet.stats().cache_hits, 3);
}

// Note [Random draws in a graph]: every random fill is recorded with its
// block count; a replay draws fresh numbers from the generator's current
// state, in eager's order, and leaves the generator where eager would, also
// for a draw nothing reads. The same on the generated-code, interpreter and
// unfused backends, for contiguous and strided outputs.
TEST_F(Compile, RandomDrawsAreFreshOnEveryCallAndMatchEager) {
  auto program = [](const Tensor& x) {
    Tensor a = x * rand_like(x) + randn({x.size(0), 1}) * 0.5;
    Tensor b = empty({x.size(1), x.size(0)}).t();  // strided: filled through a temporary
    b.normal_(1.0, 2.0);
    Tensor c = empty_like(x).uniform_(-3.0, 3.0) + empty_like(x).bernoulli_(0.3);
    (void)rand({7});  // drawn, never read
    Tensor d = randint(0, 1000, {x.size(0), 1}).to(kFloat);
    Tensor e = empty({x.size(0), 1}, kDouble).uniform_(0.0, 1.0).to(kFloat);  // 64-bit draws
    return nn::functional::dropout(a + b + c + d + e, 0.25, true);
  };
  for (auto opts : {CompileOptions(), CompileOptions().set_fuse(false),
                    CompileOptions().set_backend(CompileBackend::Interpreter),
                    CompileOptions().set_fullgraph(true)}) {
    auto f = compile(program, opts);
    Tensor x = randn({5, 6});
    manual_seed(11);
    std::vector<Tensor> want;
    for (int k = 0; k < 3; ++k) want.push_back(program(x));
    const Tensor after_eager = randn({4});
    manual_seed(11);
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(same_bits(f(x), want[k])) << "call " << k;  // the trace, then replays
    EXPECT_TRUE(same_bits(randn({4}), after_eager)) << "the generator moved otherwise than in eager";
    EXPECT_FALSE(same_bits(want[1], want[2]));  // fresh numbers on every call
    EXPECT_EQ(f.stats().graph_breaks, 0) << f.stats().last_break;
    EXPECT_EQ(f.stats().traces, 1);
    EXPECT_EQ(f.stats().cache_hits, 2);
  }
}

TEST_F(Compile, ACapturedTensorChangedInShapeIsTracedAgain) {
  Tensor w = randn({4});
  auto f = compile([&w](const Tensor& x) { return x * w; });
  Tensor x = randn({4});
  f(x);
  w.resize_({1});  // the same tensor, another shape: the graph no longer fits
  w.fill_(2);
  EXPECT_TRUE(same_bits(f(x), x * w));
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_NE(f.stats().last_recompile.find("captured tensor"), std::string::npos) << f.stats().last_recompile;
}

TEST_F(Compile, ResultsDoNotAliasAcrossCalls) {
  auto f = compile([](const Tensor& x) { return x + 1; });
  Tensor x = randn({16});
  Tensor a = f(x), b = f(x);
  EXPECT_NE(a.data_ptr(), b.data_ptr());
  EXPECT_TRUE(same_bits(a, b));
}

TEST_F(Compile, TheAdvisorPointsAtChainsAndIsQuietUnderCompile) {
  Tensor x = randn({1 << 16});
  auto rule = [](const profiler::ProfileResult& r) {
    for (const auto& f : profiler::advise(r))
      if (f.rule == profiler::Rule::FusablePointwise) return true;
    return false;
  };
  {
    profiler::profile prof(profiler::ProfileOptions().record_shapes(true));
    for (int i = 0; i < 3; ++i) gelu_chain(x);
    EXPECT_TRUE(rule(prof.result()));
  }
  auto f = compile(gelu_chain);
  f(x);
  profiler::profile prof(profiler::ProfileOptions().record_shapes(true));
  for (int i = 0; i < 3; ++i) f(x);
  EXPECT_FALSE(rule(prof.result()));
}

TEST_F(Compile, ProfilerSeesTheFusedGroup) {
  auto f = compile(gelu_chain);
  Tensor x = randn({1000});
  f(x);
  profiler::profile prof;
  f(x);
  const profiler::ProfileResult& r = prof.result();
  bool found = false;
  for (const auto& e : r.events) found |= e.name.find("fused(mul+erf") != std::string::npos || e.name.find("fused(") != std::string::npos;
  EXPECT_TRUE(found);
}

// ---- randomly generated programs --------------------------------------------------
// DAGs of pointwise ops, views, casts and in-place ops over 2-D arguments, run
// compiled (traced on one set of values, replayed on another) against eager.
struct Program {
  uint64_t seed;
  int64_t rows, cols;
  int nargs;
  bool may_break = false;  // may call an op compile does not record (argsort)
};

std::vector<Tensor> run_program(const Program& p, const std::vector<Tensor>& args) {
  std::mt19937_64 rng(p.seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  std::vector<Tensor> vals;
  for (const Tensor& a : args) vals.push_back(a);
  const int nops = 3 + pick(10);
  for (int i = 0; i < nops; ++i) {
    const Tensor& a = vals[pick(static_cast<int>(vals.size()))];
    const Tensor& b = vals[pick(static_cast<int>(vals.size()))];
    Tensor r;
    switch (pick(p.may_break ? 39 : 38)) {
      case 0: r = a + b; break;
      case 1: r = a - b * 0.25; break;
      case 2: r = a * b; break;
      case 3: r = a / (b.abs() + 1); break;
      case 4: r = a.exp().clamp(-5, 5); break;
      case 5: r = a.tanh(); break;
      case 6: r = a.sigmoid(); break;
      case 7: r = maximum(a, b); break;
      case 8: r = where(a > b, a, b * 2); break;
      case 9: r = a.neg().relu(); break;
      case 10: r = gelu(a); break;
      case 11: r = (a.to(kDouble) * 3).to(kFloat); break;
      case 12: r = (a.to(kBFloat16) + 1).to(kFloat); break;
      case 13: r = a.t().contiguous().t(); break;  // a copy through a transpose
      case 14: r = a.t().t() * 2; break;
      case 15: r = a + b.narrow(1, 0, 1); break;  // a column broadcast
      case 16: r = a + b.narrow(0, 0, 1); break;  // a row broadcast
      case 17: {
        r = a * 1.5;
        r.add_(b).sin_();
        break;
      }
      case 18: r = a.sqrt().nan_to_num(0.0); break;
      case 19: r = (a > 0).to(kFloat) * b; break;
      case 20: r = a.pow(2) + a.abs().log1p(); break;
      case 21: r = lerp(a, b, 0.3); break;
      case 22: r = a - a.sum({1}, true); break;  // a reduction broadcast back
      case 23: r = a * a.mean({0}, true) + a.amax({1}, true); break;
      case 24: r = softmax(a, 1) + b.log_softmax(0); break;
      case 25: r = a.matmul(b.t()).narrow(1, 0, 1) + a; break;  // a GEMM, a column of it broadcast
      case 26: r = nn::functional::layer_norm(a, {p.cols}); break;
      case 27: r = cumsum(a, 1) * 0.1; break;
      case 28: r = (a * 2).sum() + b; break;  // a full reduction to 0-dim, then a broadcast
      case 29: {
        r = zeros_like(a);
        r.narrow(1, 0, (p.cols + 1) / 2).copy_(b.narrow(1, 0, (p.cols + 1) / 2));  // a partial write
        break;
      }
      case 30: r = a + full({p.cols}, 0.5) * tensor(std::vector<float>{2.0f}); break;  // host-made constants
      case 31: r = a.to(kInt32).to(kFloat) + (a.abs() < 1).sum({0}, true).to(kFloat); break;
      case 32: {
        r = a.clone();
        r.narrow(0, 0, 1).mul_(3);  // in place through a view of an intermediate
        break;
      }
      case 33: r = (a * b).sin() * (a * b).tanh() + a.exp() * a.exp(); break;  // common subexpressions
      case 34: {  // recorded (the index is a constant made on the host)
        std::vector<int64_t> rev(static_cast<size_t>(p.cols));
        for (int64_t c = 0; c < p.cols; ++c) rev[static_cast<size_t>(c)] = p.cols - 1 - c;
        r = a.index_select(1, tensor(rev, kLong)) * b;
        break;
      }
      case 35: {  // recorded: a gather and a scatter-add by an index made on the host
        std::vector<int64_t> rev(static_cast<size_t>(p.cols));
        for (int64_t c = 0; c < p.cols; ++c) rev[static_cast<size_t>(c)] = (c * 7 + 3) % p.cols;
        const Tensor idx = tensor(rev, kLong).expand({a.size(0), p.cols}).contiguous();
        r = zeros_like(a).scatter_add_(1, idx, a.gather(1, idx) * b);
        break;
      }
      case 36: r = nn::functional::dropout(a, 0.3, true) + b * rand_like(b); break;  // random draws (seeded per run)
      case 37: {  // recorded: advanced indexing and an accumulating index_put_ by a host-made index
        std::vector<int64_t> cols(static_cast<size_t>(p.cols));
        for (int64_t c = 0; c < p.cols; ++c) cols[static_cast<size_t>(c)] = (c * 5 + 1) % p.cols;
        const Tensor ci = tensor(cols, kLong);
        r = b.clone();
        r.index_put_({indexing::Slice(), ci}, a.index({indexing::Slice(), ci}) * 0.5, true);
        break;
      }
      default: r = argsort(a, 1).to(kFloat) * 0.01 + a; break;  // a break (sorting is not recorded)
    }
    vals.push_back(r);
  }
  return {vals.back(), vals[vals.size() / 2]};
}

/// BRISK_COMPILE_PROGRAMS=n[,seed[,all]]: more generated programs (or other
/// ones); `all` compiles every one to generated code (normally one in 20:
/// each is a compiler run).
struct ProgramsKnob {
  int count;
  uint64_t seed;
  bool all_generated = false;
};
ProgramsKnob programs_knob(int count, uint64_t seed) {
  ProgramsKnob k{count, seed};
  const char* e = std::getenv("BRISK_COMPILE_PROGRAMS");
  if (!e) return k;
  k.count = std::atoi(e);
  if (const char* c = std::strchr(e, ',')) {
    k.seed = std::strtoull(c + 1, nullptr, 10);
    k.all_generated = std::strstr(c + 1, ",all") != nullptr;
  }
  return k;
}

TEST_F(Compile, GeneratedProgramsMatchEager) {
  const ProgramsKnob knob = programs_knob(1000, 1234);
  std::mt19937_64 rng(knob.seed);
  int fused_groups = 0, programs = 0;
  int breaks = 0, row_fused = 0;
  for (int i = 0; i < knob.count; ++i) {
    Program p{rng(), 1 + static_cast<int64_t>(rng() % 40), 1 + static_cast<int64_t>(rng() % 300),
              1 + static_cast<int>(rng() % 3), rng() % 8 == 0};
    if (i % 50 == 0) p.cols = 2048 + static_cast<int64_t>(rng() % 3000);  // rows longer than a block
    // (generated code for one program in 20: each graph is a compiler run,
    // 150 ms cold; the interpreter runs the eager kernels, so both are checked)
    // (one in ten with dynamic batch sizes: run again at another row count below)
    const bool dynamic = i % 10 == 3;
    auto f = compile([p](const std::vector<Tensor>& xs) { return run_program(p, xs); },
                     CompileOptions().set_fullgraph(!p.may_break).set_dynamic(dynamic).set_backend(
                         i % 20 == 0 || knob.all_generated ? CompileBackend::Default : CompileBackend::Interpreter));
    // (one in three with a quarter of exact zeros of both signs: the
    // signs of zero results)
    auto make = [&](int64_t rows) {
      std::vector<Tensor> xs;
      for (int k = 0; k < p.nargs; ++k) {
        Tensor x = randn({rows, p.cols}) * 2;
        xs.push_back(i % 3 == 1 ? x * (rand({rows, p.cols}) > 0.25).to(kFloat) : x);
      }
      return xs;
    };
    std::vector<Tensor> xs = make(p.rows), got;
    try {
      f(make(p.rows));  // traced
      manual_seed(1000 + i);  // (random draws: the same generator state for both runs)
      got = f(xs);
    } catch (const Error& e) {
      FAIL() << "program " << i << ": " << e.what();
    }
    manual_seed(1000 + i);
    std::vector<Tensor> want = run_program(p, xs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) ASSERT_TRUE(same_bits(got[k], want[k])) << "program " << i << "\n" << f.graph_text();
    if (dynamic) {
      for (int64_t rows : {p.rows + 1 + i % 5, p.rows}) {
        std::vector<Tensor> ys = make(rows);
        manual_seed(2000 + i);
        std::vector<Tensor> g2 = f(ys);
        manual_seed(2000 + i);
        std::vector<Tensor> w2 = run_program(p, ys);
        for (size_t k = 0; k < g2.size(); ++k)
          ASSERT_TRUE(same_bits(g2[k], w2[k])) << "program " << i << " at " << rows << " rows\n" << f.graph_text();
      }
      EXPECT_EQ(f.stats().batch_sizes, 1) << "program " << i;
      EXPECT_EQ(f.stats().last_recompile, "") << "program " << i;
    }
    fused_groups += f.stats().nodes > f.stats().groups;
    row_fused += f.graph_text().find("rows staged") != std::string::npos;
    breaks += f.stats().graph_breaks > 0;
    ++programs;
  }
  EXPECT_GT(fused_groups, programs / 2);  // most programs fused something
  EXPECT_GT(breaks, 0);                   // and the eager fallback ran too
  EXPECT_GT(row_fused, programs / 50);    // softmax/layer_norm behind their pointwise inputs (Note [Row fusion])
  std::printf("generated programs: %d, %d fused, %d row-fused, %d with breaks\n", programs, fused_groups, row_fused, breaks);
}

}  // namespace
}  // namespace brisk

namespace brisk {
namespace {

// The generated programs again, with gradients: arguments that require
// grad, a loss over the results, backward through the compiled graph
// against eager backward.
TEST_F(Compile, GeneratedProgramsGradientsMatchEager) {
  const ProgramsKnob knob = programs_knob(200, 777);  // (BRISK_COMPILE_PROGRAMS, above)
  std::mt19937_64 rng(knob.seed);
  int joint = 0;
  for (int i = 0; i < knob.count; ++i) {
    Program p{rng(), 1 + static_cast<int64_t>(rng() % 12), 1 + static_cast<int64_t>(rng() % 60),
              1 + static_cast<int>(rng() % 3), rng() % 8 == 0};
    // (not fullgraph: some backward formulas use ops compile does not record, cumsum's flip)
    auto f = compile([p](const std::vector<Tensor>& xs) { return run_program(p, xs); },
                     CompileOptions().set_backend(i % 20 == 0 || knob.all_generated ? CompileBackend::Default
                                                                                  : CompileBackend::Interpreter));
    auto make = [&] {
      std::vector<Tensor> xs;
      for (int k = 0; k < p.nargs; ++k) {
        // (one in three with a quarter of exact zeros: the kinks of relu, abs, sqrt, ...)
        Tensor x = randn({p.rows, p.cols}) * 2;
        if (i % 3 == 1) x = x * (rand({p.rows, p.cols}) > 0.25).to(kFloat);
        xs.push_back(x.requires_grad_());
      }
      return xs;
    };
    auto loss_of = [](const std::vector<Tensor>& outs) {
      Tensor l = zeros({});
      for (size_t k = 0; k < outs.size(); ++k)
        if (outs[k].requires_grad()) l = l + (outs[k] * (1.0 + 0.5 * static_cast<double>(k))).sum();
      return l;
    };
    std::vector<Tensor> xs = make(), got;
    try {
      std::vector<Tensor> warm = make();
      Tensor l0 = loss_of(f(warm));  // traced
      if (l0.requires_grad()) l0.backward();
      manual_seed(3000 + i);
      got = f(xs);
    } catch (const Error& e) {
      FAIL() << "program " << i << ": " << e.what();
    }
    std::vector<Tensor> xe;
    for (const Tensor& x : xs) xe.push_back(x.detach().clone().requires_grad_());
    manual_seed(3000 + i);
    std::vector<Tensor> want = run_program(p, xe);
    for (size_t k = 0; k < got.size(); ++k) ASSERT_TRUE(same_bits(got[k], want[k])) << "program " << i;
    Tensor lg = loss_of(got), lw = loss_of(want);
    if (!lw.requires_grad()) continue;
    lg.backward();
    lw.backward();
    for (size_t k = 0; k < xs.size(); ++k) {
      ASSERT_EQ(xs[k].grad().defined(), xe[k].grad().defined()) << "program " << i << " arg " << k << "\n"
                                                                 << f.graph_text() << xs[k].grad();
      if (xs[k].grad().defined())
        // (summation order: where several paths meet, the compiled backward adds their
        // contributions in the traced order, eager in its engine's: last bits may differ)
        ASSERT_TRUE(testing::close(xs[k].grad(), xe[k].grad(), 1e-5, 1e-4))
            << "program " << i << " arg " << k << "\n"
            << f.graph_text();
    }
    joint += got[0].grad_fn() && got[0].grad_fn()->name() == "CompiledFunctionBackward";
  }
  EXPECT_GT(joint, knob.count / 2);  // most ran the compiled backward
}

}  // namespace
}  // namespace brisk
