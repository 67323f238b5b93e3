// CUDA graphs: GraphRunner's buckets, padding, views and eager fallback on
// the CPU (no GPU needed), the clear errors of CUDAGraph without a GPU, and
// (on a GPU) capture and replay against eager, the shared pool's memory and
// capture safety. The pool bookkeeping itself is tested on the fake backend
// in test_caching_allocator.cpp.
#include <gtest/gtest.h>

#include <functional>

#include <brisk/brisk.h>
#include <brisk/cuda.h>
#include <brisk/graph_runner.h>
#include <brisk/graphed_callable.h>
#include <brisk/profiler.h>

#include "core/profile_hooks.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::expect_error;

namespace {

#define REQUIRE_GPU() \
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason()

// A small MLP-like function of two inputs whose rows are independent (so a
// padded batch gives each real row its unpadded value).
struct RowFn {
  Tensor w, b;
  explicit RowFn(Device d) {
    manual_seed(5);
    w = randn({6, 4}).to(d);
    b = randn({4}).to(d);
  }
  TensorList operator()(const TensorList& in) const {
    Tensor h = (in[0].matmul(w) + b).tanh() * in[1];
    return {h, h.sum({1}, true)};
  }
};

bool same(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && equal(a.cpu(), b.cpu()); }

/// Runs body inside a capture into g, expects a brisk::Error with every
/// piece, and that the capture was abandoned.
template <class F>
void expect_capture_error(cuda::CUDAGraph& g, const F& body, std::initializer_list<std::string> pieces) {
  expect_error(
      [&] {
        cuda::graph capture(g);
        body();
      },
      pieces);
  EXPECT_FALSE(cuda::is_current_stream_capturing());
}

}  // namespace

TEST(GraphRunner, DefaultBucketsAreSGLangs) {
  const auto b = cuda::GraphRunnerOptions::default_buckets();
  ASSERT_EQ(b.size(), 4u + 19u);
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[3], 8);
  EXPECT_EQ(b[4], 16);
  EXPECT_EQ(b[5], 24);
  EXPECT_EQ(b.back(), 160);
}

TEST(GraphRunner, PadsToTheNearestBucketAndReturnsTheRealRows) {
  set_num_threads(1);
  RowFn f(kCPU);
  int calls = 0;
  std::vector<int64_t> seen;
  auto fn = [&](const TensorList& in) {
    ++calls;
    seen.push_back(in[0].size(0));
    return f(in);
  };
  cuda::GraphRunner runner(fn, {zeros({3, 6}), zeros({3, 4})},
                           cuda::GraphRunnerOptions().set_buckets({8, 2, 4, 4}).set_pad_value(7));
  EXPECT_FALSE(runner.uses_graphs());
  EXPECT_EQ(runner.buckets(), (std::vector<int64_t>{2, 4, 8}));  // sorted, deduplicated
  EXPECT_EQ(runner.bucket_for(1), 2);
  EXPECT_EQ(runner.bucket_for(3), 4);
  EXPECT_EQ(runner.bucket_for(8), 8);
  EXPECT_EQ(runner.bucket_for(9), -1);
  for (int64_t batch : {1, 2, 3, 4, 5, 8}) {
    Tensor x = randn({batch, 6}), m = randn({batch, 4});
    seen.clear();
    TensorList got = runner({x, m});
    TensorList want = f({x, m});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(seen, std::vector<int64_t>{runner.bucket_for(batch)}) << batch;
    EXPECT_TRUE(same(got[0], want[0])) << batch;
    EXPECT_TRUE(same(got[1], want[1])) << batch;
  }
  // above the largest bucket: eager, at the real size
  seen.clear();
  Tensor x = randn({11, 6}), m = randn({11, 4});
  TensorList big = runner({x, m});
  EXPECT_EQ(seen, std::vector<int64_t>{11});
  EXPECT_TRUE(same(big[0], f({x, m})[0]));
  const cuda::GraphRunnerStats st = runner.stats();
  EXPECT_EQ(st.graphs, 3);
  EXPECT_EQ(st.replays, 6);
  EXPECT_EQ(st.padded_rows, (2 - 1) + 0 + (4 - 3) + 0 + (8 - 5) + 0);
  EXPECT_EQ(st.eager_calls, 1);
  const std::string report = runner.report();
  for (const char* k : {"GraphRunner", "3 buckets", "(2..8)", "6 replays", "5 padding rows", "1 eager"})
    EXPECT_NE(report.find(k), std::string::npos) << k << " in " << report;
}

// Profiles show each call with its bucket.
TEST(GraphRunner, ProfilesNameTheBucket) {
  cuda::GraphRunner runner([](const TensorList& in) { return TensorList{in[0] * 2}; }, {zeros({1, 3})},
                           cuda::GraphRunnerOptions().set_buckets({2, 4}));
  profiler::profile p;
  runner({ones({3, 3})});
  runner({ones({1, 3})});
  runner({ones({9, 3})});
  p.stop();
  int replay4 = 0, replay2 = 0, eager = 0;
  for (const auto& e : p.result().events) {
    replay4 += e.name == "GraphRunner.replay[4]";
    replay2 += e.name == "GraphRunner.replay[2]";
    eager += e.name == "GraphRunner.eager";
  }
  EXPECT_EQ(replay4, 1);
  EXPECT_EQ(replay2, 1);
  EXPECT_EQ(eager, 1);
}

// The padding rows hold pad_value when the function sees them.
TEST(GraphRunner, PaddingRowsHoldThePadValue) {
  Tensor last;
  auto fn = [&](const TensorList& in) {
    last = in[0].clone();
    return TensorList{in[0] * 2};
  };
  cuda::GraphRunner runner(fn, {zeros({1, 3})}, cuda::GraphRunnerOptions().set_buckets({4}).set_pad_value(-1));
  runner({ones({4, 3})});  // fills every row
  TensorList r = runner({full({2, 3}, 5.0)});
  EXPECT_TRUE(equal(r[0], full({2, 3}, 10.0)));
  EXPECT_TRUE(equal(last, cat({full({2, 3}, 5.0), full({2, 3}, -1.0)}, 0)));
}

TEST(GraphRunner, BadInputsAreClearErrors) {
  auto fn = [](const TensorList& in) { return TensorList{in[0] + 1}; };
  expect_error([&] { cuda::GraphRunner r(fn, {}); }, {"GraphRunner", "sample"});
  expect_error([&] { cuda::GraphRunner r(fn, {zeros({})}); }, {"GraphRunner", "batch dim"});
  expect_error([&] { cuda::GraphRunner r(fn, {zeros({2})}, cuda::GraphRunnerOptions().set_buckets({})); },
               {"GraphRunner", "no buckets"});
  expect_error([&] { cuda::GraphRunner r(fn, {zeros({2})}, cuda::GraphRunnerOptions().set_buckets({0, 4})); },
               {"GraphRunner", "positive"});
  expect_error([&] { cuda::GraphRunner r(nullptr, {zeros({2})}); }, {"GraphRunner", "empty"});
  cuda::GraphRunner r(fn, {zeros({2, 3})}, cuda::GraphRunnerOptions().set_buckets({4}));
  expect_error([&] { r({zeros({2, 4})}); }, {"GraphRunner", "size 4 at dim 1", "only the batch may vary"});
  expect_error([&] { r({zeros({2, 3}, kDouble)}); }, {"GraphRunner", "input 0 is"});
  expect_error([&] { r({zeros({2, 3}), zeros({2, 3})}); }, {"GraphRunner", "expected 1 inputs"});
  expect_error([&] { r({zeros({0, 3})}); }, {"GraphRunner", "empty"});
  cuda::GraphRunner wrong([](const TensorList& in) { return TensorList{in[0].sum()}; }, {zeros({2, 3})},
                          cuda::GraphRunnerOptions().set_buckets({4}));
  expect_error([&] { wrong({zeros({2, 3})}); }, {"GraphRunner", "output 0", "dim 0"});
}

// make_graphed_callables' plumbing on the CPU (no graphs: eager runs over
// the same static buffers, the same autograd node): outputs, input and
// parameter gradients as eager's, over several calls; no-grad calls;
// errors. On a GPU the same test runs through graphs below.
void graphed_matches_eager(Device dev) {
  manual_seed(3);
  nn::Sequential model(nn::Linear(6, 8), nn::GELU(), nn::Linear(8, 3)), ref(nn::Linear(6, 8), nn::GELU(),
                                                                            nn::Linear(8, 3));
  model->to(dev);
  ref->to(dev);
  {
    NoGradGuard ng;
    auto d = ref->parameters(), s = model->parameters();
    for (size_t i = 0; i < d.size(); ++i) d[i].copy_(s[i]);
  }
  Tensor sample = randn({5, 6}).to(dev).requires_grad_(true);
  cuda::GraphedCallable g = cuda::make_graphed_callables(model, {sample});
  EXPECT_EQ(g.uses_graphs(), dev.is_cuda());
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = randn({5, 6}).to(dev).requires_grad_(true), xr = x.detach().clone().requires_grad_(true);
    Tensor w = randn({5, 3}).to(dev);
    Tensor out = g(x);
    Tensor want = ref->forward(xr);
    EXPECT_TRUE(allclose(out.cpu(), want.cpu(), 1e-5, 1e-6)) << rep;
    (out * w).sum().backward();
    (want * w).sum().backward();
    ASSERT_TRUE(x.grad().defined()) << rep;
    EXPECT_TRUE(allclose(x.grad().cpu(), xr.grad().cpu(), 1e-5, 1e-6)) << rep;
    auto pm = model->parameters(), pr = ref->parameters();
    for (size_t i = 0; i < pm.size(); ++i)  // accumulated over the calls, as eager's
      EXPECT_TRUE(allclose(pm[i].grad().cpu(), pr[i].grad().cpu(), 1e-5, 1e-6)) << rep << " parameter " << i;
  }
  {
    NoGradGuard ng;
    Tensor out = g(randn({5, 6}).to(dev));
    EXPECT_FALSE(out.requires_grad());
  }
  expect_error([&] { g(randn({4, 6}).to(dev)); }, {"make_graphed_callables", "input 0", "shape"});
  // one call's values live in the static buffers: an older call's backward is an error, not wrong gradients
  Tensor first = g(randn({5, 6}).to(dev).requires_grad_(true));
  Tensor second = g(randn({5, 6}).to(dev).requires_grad_(true));
  expect_error([&] { first.sum().backward(); }, {"make_graphed_callables", "before the next forward"});
  second.sum().backward();
  expect_error([&] { cuda::make_graphed_callables(model, {sample}, cuda::GraphedCallableOptions().set_warmup(0)); },
               {"make_graphed_callables", "warmup"});
}

TEST(GraphedCallable, OnTheCpuOutputsAndGradientsAreEagers) { graphed_matches_eager(Device(kCPU)); }

TEST(GraphedCallable, OnAGpuOutputsAndGradientsAreEagers) {
  REQUIRE_GPU();
  graphed_matches_eager(Device(kCUDA, 0));
}

// An optimizer whose step depends on host numbers that change per step
// (Adam's step count and bias corrections) refuses to be captured: a graph
// would repeat the captured step's values. SGD's step may be captured. (The
// capture is simulated on the CPU by marking the thread as capturing.)
TEST(CudaGraph, AnAdamStepInACaptureIsRefusedAndAnSgdStepIsNot) {
  Tensor p = randn({4}).requires_grad_(true);
  p.mutable_grad() = ones({4});
  optim::Adam adam({p}, optim::AdamOptions(0.1));
  optim::SGD sgd({p}, optim::SGDOptions(0.1).momentum(0.9));
  brisk::detail::set_thread_capturing(true);
  struct Reset {
    ~Reset() { brisk::detail::set_thread_capturing(false); }
  } reset;
  const Tensor before = p.detach().clone();
  expect_error([&] { adam.step(); }, {"Adam", "CUDA graph capture", "bias corrections", "capturable"});
  EXPECT_TRUE(equal(p.detach(), before));  // refused before any update
  sgd.step();
  EXPECT_TRUE(allclose(p.detach(), before - 0.1));
  // capturable(true): the step counts live on the device (Note [Capturable Adam])
  optim::AdamW cap({p}, optim::AdamWOptions(0.1).weight_decay(0).capturable(true));
  const Tensor before_cap = p.detach().clone();
  cap.step();
  EXPECT_TRUE(allclose(p.detach(), before_cap - 0.1, 1e-5, 1e-6));
  EXPECT_EQ(cap.state(p).step_tensor().item<float>(), 1.0f);
  // Adagrad: only its learning-rate decay depends on the step count
  optim::Adagrad decaying({p}, optim::AdagradOptions(0.1).lr_decay(0.01));
  expect_error([&] { decaying.step(); }, {"Adagrad", "CUDA graph capture", "learning-rate decay"});
  optim::Adagrad constant({p}, optim::AdagradOptions(0.1));
  const Tensor before_ada = p.detach().clone();
  constant.step();
  EXPECT_FALSE(equal(p.detach(), before_ada));
}

TEST(CudaGraph, WithoutAGpuEveryEntryPointSaysWhy) {
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is available: the GPU tests below run instead";
  cuda::CUDAGraph g;
  expect_error([&] { g.capture_begin(); }, {"CUDA"});
  expect_error([&] { g.capture_end(); }, {"CUDA"});
  expect_error([&] { g.replay(); }, {"CUDA"});
  g.reset();  // nothing to reset: fine
  EXPECT_FALSE(g.captured());
  EXPECT_FALSE(cuda::is_current_stream_capturing());
  expect_error([&] { cuda::graph scope(g); }, {"CUDA"});
}

// ---- on a GPU -------------------------------------------------------------------------

TEST(CudaGraph, ReplayIsBitEqualToEagerAndSeesNewInputs) {
  REQUIRE_GPU();
  RowFn f(kCUDA);
  Tensor x = randn({8, 6}).cuda(), m = randn({8, 4}).cuda();
  TensorList warm = f({x, m});  // cuBLAS handle and workspace before capture
  cuda::synchronize();
  cuda::CUDAGraph g;
  TensorList out;
  {
    cuda::graph capture(g);
    out = f({x, m});
  }
  EXPECT_TRUE(g.captured());
  for (int rep = 0; rep < 3; ++rep) {
    x.copy_(randn({8, 6}).cuda());
    m.copy_(randn({8, 4}).cuda());
    g.replay();
    TensorList want = f({x, m});
    EXPECT_TRUE(same(out[0], want[0])) << rep;
    EXPECT_TRUE(same(out[1], want[1])) << rep;
  }
  g.reset();
  EXPECT_FALSE(g.captured());
  expect_error([&] { g.replay(); }, {"CUDAGraph", "nothing was captured"});
}

// A block freed while another stream still used it (record_stream) waits for
// an event; querying it during a capture would invalidate the capture, so
// while one is underway such blocks stay pending (as in PyTorch). Written
// after the last GPU run: not yet run on a GPU.
TEST(CudaGraph, APendingCrossStreamFreeDoesNotBreakACapture) {
  REQUIRE_GPU();
  Tensor x = randn({1000}).cuda();
  (void)(x * 2).exp();  // the kernels loaded before the capture
  {
    const cuda::Stream other = cuda::stream_from_pool();
    Tensor t = x * 3;
    cuda::record_stream(t, other);
  }  // freed with an event pending on `other`
  cuda::CUDAGraph g;
  Tensor out;
  {
    cuda::graph capture(g);
    out = (x * 2).exp();  // allocates: the allocator looks at its pending blocks
  }
  g.replay();
  EXPECT_TRUE(same(out, (x * 2).exp()));
}

TEST(CudaGraph, CapturingTheLegacyDefaultStreamIsAnError) {
  REQUIRE_GPU();
  cuda::CUDAGraph g;
  cuda::StreamGuard guard(cuda::default_stream());
  expect_error([&] { g.capture_begin(); }, {"CUDAGraph", "legacy default stream"});
}

TEST(CudaGraph, ASyncDuringCaptureRaisesAndTheStreamStaysUsable) {
  REQUIRE_GPU();
  Tensor x = randn({16}).cuda();
  cuda::CUDAGraph g;
  expect_capture_error(
      g,
      [&] {
        Tensor y = x * 2;
        (void)y.sum().item<float>();
      },
      {"item", "captures a CUDA graph"});
  Tensor z = (x + 1).cpu();  // the stream works
  EXPECT_TRUE(equal(z, x.cpu() + 1));
}

// Queries and host waits on streams and events in a capture are named
// errors before CUDA sees them (Note [Queries and waits in a capture] in
// src/backend/cuda/runtime.cpp); the stream works afterwards.
TEST(CudaGraph, StreamAndEventQueriesAndWaitsInACaptureAreNamedErrors) {
  REQUIRE_GPU();
  Tensor x = randn({16}).cuda();
  cuda::Event e;
  e.record();
  const cuda::Stream other = cuda::Stream::create();
  cuda::synchronize();
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"cuda::Event::query", [&] { (void)e.query(); }},
      {"cuda::Event::synchronize", [&] { e.synchronize(); }},
      {"cuda::Stream::query", [&] { (void)other.query(); }},
      {"cuda::Stream::synchronize", [&] { cuda::current_stream().synchronize(); }},
      {"cuda::synchronize", [&] { cuda::synchronize(); }},
  };
  for (const auto& [name, call] : calls) {
    SCOPED_TRACE(name);
    cuda::CUDAGraph g;
    expect_capture_error(
        g,
        [&] {
          Tensor y = x * 2;
          call();
        },
        {name, "captures a CUDA graph"});
    Tensor z = (x + 1).cpu();  // the stream works
    EXPECT_TRUE(equal(z, x.cpu() + 1));
  }
  EXPECT_TRUE(e.query());  // outside a capture
}

// A pageable host-to-device copy cannot be captured: a named error at the
// copy, not an invalidated capture found at capture_end; a copy from pinned
// memory with non_blocking is captured.
TEST(CudaGraph, PageableHostCopiesInACaptureAreNamedErrors) {
  REQUIRE_GPU();
  Tensor pageable = randn({16});
  cuda::CUDAGraph g;
  expect_capture_error(g, [&] { Tensor d = pageable.cuda(); }, {"copy_", "pinned memory"});
  Tensor pinned = randn({16}).pin_memory();
  Tensor dst = empty({16}, TensorOptions().device(kCUDA));
  cuda::synchronize();
  cuda::CUDAGraph g2;
  {
    cuda::graph capture(g2);
    dst.copy_(pinned, /*non_blocking=*/true);
  }
  pinned.copy_(full({16}, 3.0));
  g2.replay();
  EXPECT_TRUE(equal(dst.cpu(), full({16}, 3.0)));
}

// Note [Random draws in a CUDA graph] (core/generator.h): every replay draws
// fresh numbers, the ones eager ops draw from the same generator state, and
// leaves the generator where eager would.
TEST(CudaGraph, RandomOpsDrawFreshNumbersOnEveryReplayAsEagerWould) {
  REQUIRE_GPU();
  Tensor x = randn({1000}).cuda();
  auto body = [&] {
    Tensor a = x + randn({1000}, TensorOptions().device(kCUDA));
    Tensor b = nn::functional::dropout(a, 0.3, true);
    Tensor c = b * empty({1000}, TensorOptions().device(kCUDA)).uniform_(-1.0, 1.0);
    return c + _standard_gamma(full({1000}, 2.0, TensorOptions().device(kCUDA)));
  };
  (void)body();  // warm-up
  cuda::synchronize();
  cuda::CUDAGraph g;
  Tensor out;
  {
    cuda::graph capture(g);
    out = body();
  }
  Tensor prev;
  for (int rep = 0; rep < 3; ++rep) {
    manual_seed(40 + rep);
    g.replay();
    const Tensor got = out.cpu();
    const Tensor after_graph = randn({3});
    manual_seed(40 + rep);
    const Tensor want = body().cpu();
    const Tensor after_eager = randn({3});
    EXPECT_TRUE(same(got, want)) << rep;
    EXPECT_TRUE(same(after_graph, after_eager)) << rep;
    if (prev.defined()) EXPECT_FALSE(same(got, prev)) << rep;
    prev = got;
  }
}

TEST(GraphRunner, CudaBucketsReplayBitEqualToEagerInOneSharedPool) {
  REQUIRE_GPU();
  RowFn f(kCUDA);
  cuda::GraphRunner runner([&](const TensorList& in) { return f(in); },
                           {zeros({1, 6}).cuda(), zeros({1, 4}).cuda()});
  EXPECT_TRUE(runner.uses_graphs());
  for (int64_t batch : {1, 3, 8, 17, 100, 160, 161}) {
    Tensor x = randn({batch, 6}).cuda(), m = randn({batch, 4}).cuda();
    TensorList got = runner({x, m});
    TensorList want = f({x, m});
    EXPECT_TRUE(same(got[0], want[0])) << batch;
    EXPECT_TRUE(same(got[1], want[1])) << batch;
  }
  std::printf("%s\n", runner.report().c_str());
  // 23 graphs in one pool: about the largest alone (measured separately)
  cuda::GraphRunner largest([&](const TensorList& in) { return f(in); },
                            {zeros({1, 6}).cuda(), zeros({1, 4}).cuda()},
                            cuda::GraphRunnerOptions().set_buckets({160}));
  EXPECT_LE(static_cast<double>(runner.stats().pool_bytes),
            1.2 * static_cast<double>(std::max<int64_t>(largest.stats().pool_bytes, 2 << 20)));
}
