// brisk::profiler recording: op events (names, nesting, shapes, dtypes,
// threads), backward nodes, optimizer steps, zero_grad, data-loader waits,
// sync points and sync debug mode, memory attribution, key_averages and the
// table, the Chrome trace. Nothing here depends on how long anything took:
// the table's numbers are checked on hand-made results.
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/parallel.h"
#include "io/json.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace prof = brisk::profiler;
using prof::Event;
using prof::EventKind;
using prof::ProfileOptions;

std::vector<const Event*> named(const prof::ProfileResult& r, const std::string& name) {
  std::vector<const Event*> out;
  for (const Event& e : r.events)
    if (e.name == name) out.push_back(&e);
  return out;
}
std::vector<const Event*> of_kind(const prof::ProfileResult& r, EventKind k) {
  std::vector<const Event*> out;
  for (const Event& e : r.events)
    if (e.kind == k) out.push_back(&e);
  return out;
}
const Event* parent_of(const prof::ProfileResult& r, const Event& e) {
  return e.parent >= 0 ? &r.events[static_cast<size_t>(e.parent)] : nullptr;
}
using Shapes = std::vector<std::vector<int64_t>>;
using Strings = std::vector<std::string>;

// The invariants every result keeps: parents enclose their children on the
// same thread, depth follows parent, events sorted by start per thread.
void check_structure(const prof::ProfileResult& r) {
  std::map<uint32_t, int64_t> last_start;
  for (size_t i = 0; i < r.events.size(); ++i) {
    const Event& e = r.events[i];
    EXPECT_LE(e.start_ns, e.end_ns) << e.name;
    EXPECT_GE(e.start_ns, 0) << e.name;
    EXPECT_LE(e.end_ns, r.duration_ns) << e.name;
    ASSERT_LT(e.thread, r.threads.size());
    auto it = last_start.find(e.thread);
    if (it != last_start.end()) EXPECT_LE(it->second, e.start_ns);
    last_start[e.thread] = e.start_ns;
    if (e.parent >= 0) {
      ASSERT_LT(static_cast<size_t>(e.parent), i) << "a parent comes before its children";
      const Event& p = r.events[static_cast<size_t>(e.parent)];
      EXPECT_EQ(p.thread, e.thread);
      EXPECT_LE(p.start_ns, e.start_ns);
      EXPECT_LE(e.end_ns, p.end_ns) << e.name << " inside " << p.name;
      EXPECT_EQ(e.depth, p.depth + 1);
    } else {
      EXPECT_EQ(e.depth, 0);
    }
  }
}

// ---- recording ops ---------------------------------------------------------------

TEST(Profiler, RecordsOpsWithNamesShapesAndDtypes) {
  Tensor a = ones({2, 3}), b = ones({3}), c = ones({2, 3}, kInt64), out = empty({2, 3});
  prof::profile p(ProfileOptions().record_shapes(true));
  EXPECT_TRUE(p.active());
  EXPECT_TRUE(prof::is_enabled());
  Tensor s = a + b;
  Tensor t = a.add(2.5);
  a.add_(b);
  add_out(out, a, b);
  Tensor m = c * c;
  p.stop();
  EXPECT_FALSE(p.active());
  EXPECT_FALSE(prof::is_enabled());
  const prof::ProfileResult& r = p.result();
  check_structure(r);
  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_EQ(r.threads[0], "main");

  auto adds = named(r, "add");
  ASSERT_EQ(adds.size(), 2u);
  EXPECT_EQ(adds[0]->kind, EventKind::Op);
  EXPECT_EQ(adds[0]->shapes, (Shapes{{2, 3}, {3}}));
  EXPECT_EQ(adds[0]->dtypes, (Strings{"float32", "float32"}));
  EXPECT_EQ(adds[1]->shapes, (Shapes{{2, 3}, {}}));
  EXPECT_EQ(adds[1]->dtypes, (Strings{"float32", "Scalar"}));
  EXPECT_LE(adds[0]->end_ns, adds[1]->start_ns) << "in program order";
  ASSERT_EQ(named(r, "add_").size(), 1u);
  EXPECT_EQ(named(r, "add_")[0]->shapes, (Shapes{{2, 3}, {3}}));
  ASSERT_EQ(named(r, "add_out").size(), 1u);
  ASSERT_EQ(named(r, "mul").size(), 1u);
  EXPECT_EQ(named(r, "mul")[0]->dtypes, (Strings{"int64", "int64"}));
  for (const Event& e : r.events) {
    EXPECT_EQ(e.thread, 0u);
    EXPECT_FALSE(e.recorded_graph) << e.name;
  }
}

TEST(Profiler, ShapesOnlyWithRecordShapes) {
  Tensor a = ones({2, 3});
  prof::profile p;
  Tensor s = a + a;
  const auto& r = p.result();
  ASSERT_EQ(named(r, "add").size(), 1u);
  EXPECT_TRUE(named(r, "add")[0]->shapes.empty());
  EXPECT_TRUE(named(r, "add")[0]->dtypes.empty());
}

TEST(Profiler, NoProfileRecordsNothing) {
  Tensor a = ones({3, 3});
  EXPECT_FALSE(prof::is_enabled());
  Tensor b = a + a;  // before any profile
  {
    prof::profile p;
    p.stop();
    Tensor c = a * a;  // after stop
    EXPECT_TRUE(p.result().events.empty());
  }
  prof::profile q;
  EXPECT_TRUE(q.result().events.empty()) << "a new profile starts empty";
}

TEST(Profiler, OnlyOneActiveProfile) {
  prof::profile p;
  testing::expect_error([] { prof::profile q; }, {"[profiler]", "already active"});
  EXPECT_TRUE(p.active());
  p.stop();
  prof::profile q;  // fine after stop
  EXPECT_TRUE(q.active());
}

TEST(Profiler, ScopeEndStopsTheProfile) {
  {
    prof::profile p;
    EXPECT_TRUE(prof::is_enabled());
  }
  EXPECT_FALSE(prof::is_enabled());
}

TEST(Profiler, CompositeOpsNestTheirInnerOps) {
  Tensor x = ones({4, 3}), w = ones({5, 3}), b = ones({5});
  prof::profile p(ProfileOptions().record_shapes(true));
  Tensor y = nn::functional::linear(x, w, b);
  Tensor z = nn::functional::linear(ones({2, 4, 3}), w, b);
  Tensor u = nn::functional::linear(ones({4, 2, 3}).transpose(0, 1), w, b);
  const auto& r = p.result();
  check_structure(r);
  auto lin = named(r, "linear");
  ASSERT_EQ(lin.size(), 3u);
  EXPECT_EQ(lin[0]->shapes, (Shapes{{4, 3}, {5, 3}, {5}}));
  EXPECT_EQ(lin[0]->depth, 0);
  // linear -> addmm (2-D input with bias, and a contiguous 3-D input as
  // rows, as torch), linear -> matmul + add (a non-contiguous 3-D input)
  std::multiset<std::string> children0, children1, children2;
  for (const Event& e : r.events) {
    const Event* par = parent_of(r, e);
    if (par == lin[0]) children0.insert(e.name);
    if (par == lin[1]) children1.insert(e.name);
    if (par == lin[2]) children2.insert(e.name);
  }
  EXPECT_EQ(children0.count("addmm"), 1u);
  EXPECT_EQ(children1.count("addmm"), 1u);
  EXPECT_EQ(children2.count("matmul"), 1u);
  EXPECT_EQ(children2.count("add"), 1u);
}

TEST(Profiler, SelfTimeIsTotalMinusChildren) {
  Tensor x = ones({8, 8});
  prof::profile p;
  for (int i = 0; i < 3; ++i) {
    prof::record_function scope("step");
    Tensor y = nn::functional::linear(x, x, x.select(0, 0));
    Tensor z = y.relu().sum();
  }
  const auto& r = p.result();
  check_structure(r);
  // Naive reference: self = duration - sum of direct children's durations.
  std::map<std::string, int64_t> total, self, count;
  std::vector<int64_t> child(r.events.size(), 0);
  for (const Event& e : r.events)
    if (e.parent >= 0) child[static_cast<size_t>(e.parent)] += e.duration_ns();
  int64_t all_self = 0;
  for (size_t i = 0; i < r.events.size(); ++i) {
    const Event& e = r.events[i];
    EXPECT_LE(child[i], e.duration_ns()) << e.name;
    total[e.name] += e.duration_ns();
    self[e.name] += e.duration_ns() - child[i];
    count[e.name] += 1;
    all_self += e.duration_ns() - child[i];
  }
  prof::KeyAverages ka = prof::key_averages(r);
  ASSERT_EQ(ka.rows().size(), total.size());
  for (const prof::KeyAverage& k : ka.rows()) {
    EXPECT_EQ(k.cpu_time_total_ns, total[k.name]) << k.name;
    EXPECT_EQ(k.self_cpu_time_total_ns, self[k.name]) << k.name;
    EXPECT_EQ(k.count, count[k.name]) << k.name;
    EXPECT_LE(k.self_cpu_time_total_ns, k.cpu_time_total_ns);
  }
  EXPECT_EQ(count["step"], 3);
  EXPECT_EQ(count["linear"], 3);
  EXPECT_NE(ka.table().find(ka.rows()[0].name), std::string::npos);
  (void)all_self;
}

TEST(Profiler, RecordFunctionScopesAndStack) {
  Tensor x = ones({3});
  prof::profile p(ProfileOptions().with_stack(true));
  {
    prof::record_function outer("outer");
    {
      prof::record_function inner(std::string("inner"));
      Tensor y = x.exp();
    }
    Tensor z = x.neg();
  }
  const auto& r = p.result();
  check_structure(r);
  ASSERT_EQ(named(r, "outer").size(), 1u);
  ASSERT_EQ(named(r, "inner").size(), 1u);
  const Event* outer = named(r, "outer")[0];
  const Event* inner = named(r, "inner")[0];
  EXPECT_EQ(outer->kind, EventKind::UserScope);
  EXPECT_EQ(parent_of(r, *inner), outer);
  const Event* exp = named(r, "exp")[0];
  EXPECT_EQ(parent_of(r, *exp), inner);
  EXPECT_EQ(exp->depth, 2);
  EXPECT_EQ(exp->stack, (Strings{"outer", "inner"}));
  EXPECT_EQ(named(r, "neg")[0]->stack, (Strings{"outer"}));
  EXPECT_EQ(parent_of(r, *named(r, "neg")[0]), outer);
  EXPECT_TRUE(outer->stack.empty());
}

TEST(Profiler, StackOnlyWithStackOption) {
  Tensor x = ones({3});
  prof::profile p;
  {
    prof::record_function outer("outer");
    Tensor y = x.exp();
  }
  EXPECT_TRUE(named(p.result(), "exp")[0]->stack.empty());
}

TEST(Profiler, AnOpThatThrowsClosesItsEvent) {
  Tensor a = ones({2, 3}), b = ones({4});
  prof::profile p;
  EXPECT_THROW(a + b, Error);
  Tensor c = a + a;
  const auto& r = p.result();
  check_structure(r);
  auto adds = named(r, "add");
  ASSERT_EQ(adds.size(), 2u);
  EXPECT_EQ(adds[1]->parent, -1) << "the failed op's event was closed";
}

TEST(Profiler, RecordedGraphFollowsGradMode) {
  Tensor w = ones({3}).requires_grad_();
  Tensor x = ones({3});
  prof::profile p;
  Tensor y = x * w;
  {
    NoGradGuard ng;
    Tensor z = x * w;
  }
  Tensor u = x * x;
  const auto& r = p.result();
  auto muls = named(r, "mul");
  ASSERT_EQ(muls.size(), 3u);
  EXPECT_TRUE(muls[0]->recorded_graph);
  EXPECT_FALSE(muls[1]->recorded_graph);
  EXPECT_FALSE(muls[2]->recorded_graph);
}

// ---- threads ---------------------------------------------------------------------

TEST(Profiler, OpsOnStdThreadsGetTheirOwnThreadIds) {
  prof::profile p(ProfileOptions().record_shapes(true));
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t)
    ts.emplace_back([t] {
      Tensor a = ones({t + 1});
      for (int i = 0; i < 5; ++i) a = a.exp();
    });
  for (auto& t : ts) t.join();
  Tensor m = ones({2}).exp();
  const auto& r = p.result();
  check_structure(r);
  ASSERT_EQ(r.threads.size(), 4u);
  EXPECT_EQ(r.threads[0], "main");
  std::map<uint32_t, int> exps;
  std::map<uint32_t, int64_t> size_on;
  for (const Event* e : named(r, "exp")) {
    ++exps[e->thread];
    size_on[e->thread] = e->shapes.at(0).at(0);
  }
  EXPECT_EQ(exps.size(), 4u);
  EXPECT_EQ(exps[0], 1);
  std::set<int64_t> sizes;
  for (uint32_t t = 1; t < 4; ++t) {
    EXPECT_EQ(exps[t], 5) << "thread " << t;
    EXPECT_EQ(r.threads[t].rfind("thread ", 0), 0u) << r.threads[t];
    sizes.insert(size_on[t]);
  }
  EXPECT_EQ(sizes, (std::set<int64_t>{1, 2, 3})) << "each thread's events are its own";
}

TEST(Profiler, OpsInsideParallelRegionsAreRecordedPerWorker) {
  const int before = get_num_threads();
  set_num_threads(4);
  Tensor x = ones({4});
  prof::profile p;
  parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) Tensor y = x.exp();
  });
  const auto& r = p.result();
  set_num_threads(before);
  check_structure(r);
  auto exps = named(r, "exp");
  EXPECT_EQ(exps.size(), 4u);
  std::set<uint32_t> threads;
  for (const Event* e : exps) threads.insert(e->thread);
#ifdef _OPENMP
  EXPECT_GT(threads.size(), 1u) << "a parallel region runs on several threads";
  for (uint32_t t : threads)
    EXPECT_TRUE(r.threads[t] == "main" || r.threads[t].rfind("worker ", 0) == 0) << r.threads[t];
#endif
}

// A thread that keeps running ops while profiles start and stop around it.
TEST(Profiler, StopWhileAnotherThreadRecords) {
  std::atomic<bool> quit{false};
  std::atomic<int64_t> iterations{0};
  std::thread worker([&] {
    Tensor x = ones({4});
    while (!quit.load()) {
      prof::record_function scope("iteration");
      Tensor y = x.exp().neg();
      iterations.fetch_add(1);
    }
  });
  auto wait_for_more = [&](int64_t n) {
    const int64_t target = iterations.load() + n;
    while (iterations.load() < target) std::this_thread::yield();
  };
  for (int round = 0; round < 3; ++round) {
    prof::profile p;
    wait_for_more(200);
    p.stop();  // the worker is in the middle of some event
    const auto& r = p.result();
    check_structure(r);
    ASSERT_EQ(r.threads.size(), 2u);
    EXPECT_EQ(r.threads[1].rfind("thread ", 0), 0u);
    EXPECT_GE(named(r, "exp").size(), 150u);
    for (const Event* e : named(r, "exp")) EXPECT_EQ(e->thread, 1u);
    wait_for_more(200);  // unprofiled iterations in between
  }
  quit = true;
  worker.join();
}

TEST(Profiler, ScopesSpanningStopAreHarmless) {
  Tensor x = ones({2});
  auto p = std::make_unique<prof::profile>();
  {
    prof::record_function scope("outer");
    Tensor y = x.exp();
    p->stop();  // closes "outer" at the stop time
    prof::profile q;  // a new profile while the old scope is still open
    Tensor z = x.neg();
    // leaving the scope must not close anything of q's
    {
      prof::record_function inner("inner");
    }
    const auto& rq = q.result();
    check_structure(rq);
    ASSERT_EQ(named(rq, "neg").size(), 1u);
    EXPECT_EQ(named(rq, "neg")[0]->parent, -1);
    EXPECT_TRUE(named(rq, "outer").empty());
    EXPECT_EQ(named(rq, "inner").size(), 1u);
  }
  const auto& r = p->result();
  check_structure(r);
  ASSERT_EQ(named(r, "outer").size(), 1u);
  EXPECT_EQ(named(r, "outer")[0]->end_ns, r.duration_ns);
  EXPECT_EQ(parent_of(r, *named(r, "exp")[0]), named(r, "outer")[0]);
}

TEST(Profiler, ManyEventsAcrossChunks) {
  Tensor x = ones({2});
  prof::profile p;
  for (int i = 0; i < 5000; ++i) Tensor y = x.neg();
  const auto& r = p.result();
  EXPECT_EQ(named(r, "neg").size(), 5000u);
  check_structure(r);
}

// ---- autograd, optimizers, zero_grad, data loader ----------------------------------

TEST(Profiler, BackwardNodesAreRecorded) {
  Tensor w = ones({3}).requires_grad_();
  Tensor x = full({3}, 2.0);
  Tensor loss = (x * w).sum();
  prof::profile p;
  loss.backward();
  const auto& r = p.result();
  check_structure(r);
  auto sum_b = named(r, "SumBackward0");
  auto mul_b = named(r, "MulBackward0");
  auto acc = named(r, "AccumulateGrad");
  ASSERT_EQ(sum_b.size(), 1u);
  ASSERT_EQ(mul_b.size(), 1u);
  ASSERT_EQ(acc.size(), 1u);
  EXPECT_EQ(sum_b[0]->kind, EventKind::Backward);
  EXPECT_EQ(mul_b[0]->kind, EventKind::Backward);
  EXPECT_LE(sum_b[0]->end_ns, mul_b[0]->start_ns) << "SumBackward0 runs first";
  // MulBackward0's formula runs ops (g * x) inside the node's event.
  bool mul_inside = false;
  for (const Event* m : named(r, "mul")) mul_inside = mul_inside || parent_of(r, *m) == mul_b[0];
  EXPECT_TRUE(mul_inside);
}

TEST(Profiler, OptimizerStepNamesItsImplementation) {
  const std::pair<optim::Impl, const char*> impls[] = {
      {optim::Impl::Fused, "fused"}, {optim::Impl::Foreach, "foreach"}, {optim::Impl::ForLoop, "for-loop"}};
  for (auto [impl, detail] : impls) {
    Tensor w = ones({4}).requires_grad_();
    optim::AdamW opt({w}, optim::AdamWOptions(0.1).impl(impl));
    (w * w).sum().backward();
    prof::profile p;
    opt.step();
    opt.zero_grad();
    const auto& r = p.result();
    check_structure(r);
    auto steps = named(r, "AdamW.step");
    ASSERT_EQ(steps.size(), 1u) << detail;
    EXPECT_EQ(steps[0]->kind, EventKind::OptimizerStep);
    EXPECT_EQ(steps[0]->detail, detail);
    int children = 0, foreach_children = 0;
    for (const Event& e : r.events) {
      if (parent_of(r, e) != steps[0] || e.kind != EventKind::Op) continue;
      ++children;
      foreach_children += e.name.rfind("_foreach_", 0) == 0;
    }
    if (impl == optim::Impl::ForLoop) {
      EXPECT_GT(children, 3) << "a for-loop step runs one op per arithmetic step";
      EXPECT_EQ(foreach_children, 0);
    }
    if (impl == optim::Impl::Foreach) {
      EXPECT_GT(foreach_children, 1) << "a foreach step runs foreach ops";
    }
    auto zg = named(r, "Optimizer.zero_grad");
    ASSERT_EQ(zg.size(), 1u);
    EXPECT_EQ(zg[0]->kind, EventKind::UserScope);
    EXPECT_EQ(zg[0]->detail, "set_to_none=true");
  }
  Tensor v = ones({2}).requires_grad_();
  optim::SGD sgd({v}, optim::SGDOptions(0.1));
  (v * v).sum().backward();
  prof::profile p;
  sgd.step();
  ASSERT_EQ(named(p.result(), "SGD.step").size(), 1u);
  EXPECT_EQ(named(p.result(), "SGD.step")[0]->detail, "fused");
}

TEST(Profiler, ZeroGradDetailSaysWhetherItZeroFills) {
  nn::Linear lin(3, 2);
  optim::SGD opt(lin->parameters(), optim::SGDOptions(0.1));
  lin->forward(ones({1, 3})).sum().backward();
  prof::profile p;
  lin->zero_grad(/*set_to_none=*/false);
  opt.zero_grad(/*set_to_none=*/false);
  lin->zero_grad();
  const auto& r = p.result();
  check_structure(r);
  auto mz = named(r, "Module.zero_grad");
  ASSERT_EQ(mz.size(), 2u);
  EXPECT_EQ(mz[0]->detail, "set_to_none=false");
  EXPECT_EQ(mz[1]->detail, "set_to_none=true");
  // zero-filling runs zero_ on each gradient inside the scope
  int zeros_in_module = 0;
  for (const Event* z : named(r, "zero_")) zeros_in_module += parent_of(r, *z) == mz[0];
  EXPECT_EQ(zeros_in_module, 2);
  auto oz = named(r, "Optimizer.zero_grad");
  ASSERT_EQ(oz.size(), 1u);
  EXPECT_EQ(oz[0]->detail, "set_to_none=false");
}

data::TensorDataset numbered(int64_t n) {
  Tensor ids = arange(n);
  return data::TensorDataset(stack({ids.to(kFloat), ids.to(kFloat)}, 1), ids);
}

TEST(Profiler, DataLoaderWaitsOnTheCallersThread) {
  for (size_t workers : {size_t(0), size_t(2)}) {
    data::DataLoader loader(numbered(10), data::DataLoaderOptions().batch_size(2).num_workers(workers));
    prof::profile p;
    int batches = 0;
    for (auto& b : loader) batches += b.data.size(0) > 0;
    const auto& r = p.result();
    check_structure(r);
    EXPECT_EQ(batches, 5);
    auto waits = named(r, "DataLoader.next");
    EXPECT_EQ(waits.size(), 6u) << "one per batch and one that finds the end";
    for (const Event* w : waits) {
      EXPECT_EQ(w->kind, EventKind::DataLoaderWait);
      EXPECT_EQ(r.threads[w->thread], "main");
    }
    if (workers == 0) {
      // The batch is built inside the wait.
      bool stack_inside = false;
      for (const Event* s : named(r, "stack")) stack_inside = stack_inside || parent_of(r, *s)->kind == EventKind::DataLoaderWait;
      EXPECT_TRUE(stack_inside);
    } else {
      // Workers build batches on their own threads, named "dataloader N".
      std::set<std::string> names;
      for (const Event* s : named(r, "stack")) names.insert(r.threads[s->thread]);
      for (const std::string& n : names) EXPECT_EQ(n.rfind("dataloader ", 0), 0u) << n;
    }
  }
}

// ---- sync points and sync debug mode ----------------------------------------------

TEST(Profiler, SyncPointsAreRecorded) {
  Tensor x = tensor({1.f, 0.f, 3.f});
  prof::profile p(ProfileOptions().record_shapes(true));
  double v = x.sum().item<double>();
  Tensor nz = x.nonzero();
  std::ostringstream os;
  os << x;
  Tensor h = x.cpu();
  Tensor same = x.to(kDouble);  // a dtype conversion is not a host copy
  const auto& r = p.result();
  check_structure(r);
  EXPECT_EQ(v, 4.0);
  auto syncs = of_kind(r, EventKind::Sync);
  std::vector<std::string> details;
  for (const Event* s : syncs) details.push_back(s->detail);
  EXPECT_EQ(details, (Strings{"item", "nonzero", "print", "to"}));
  EXPECT_EQ(syncs[0]->name, "Sync.item");
  EXPECT_EQ(syncs[0]->shapes, (Shapes{{}}));
  EXPECT_EQ(syncs[1]->shapes, (Shapes{{3}}));
  EXPECT_EQ(parent_of(r, *syncs[0])->name, "item");
  EXPECT_EQ(parent_of(r, *syncs[1])->name, "nonzero");
}

TEST(Profiler, InputChecksAreNotSyncPoints) {
  Tensor logits = ones({4, 3}), target = tensor({0l, 1l, 2l, 1l});
  prof::profile p;
  Tensor loss = nn::functional::cross_entropy(logits, target);
  Tensor q = tensor({4l, 6l}).div(tensor({2l, 3l}), RoundingMode::Floor);
  EXPECT_TRUE(of_kind(p.result(), EventKind::Sync).empty());
}

struct SyncModeReset {
  ~SyncModeReset() { set_sync_debug_mode(SyncDebugMode::Off); }
};

TEST(SyncDebugMode, WarnPrintsOncePerCall) {
  SyncModeReset reset;
  Tensor x = tensor({1.f, 2.f});
  EXPECT_EQ(get_sync_debug_mode(), SyncDebugMode::Off);
  set_sync_debug_mode(SyncDebugMode::Warn);
  EXPECT_EQ(get_sync_debug_mode(), SyncDebugMode::Warn);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) (void)x.sum().item<float>();
  Tensor nz = x.nonzero();
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("item"), std::string::npos) << err;
  EXPECT_NE(err.find("nonzero"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << "one line per call: " << err;
  set_sync_debug_mode(SyncDebugMode::Off);
  ::testing::internal::CaptureStderr();
  (void)x.sum().item<float>();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(SyncDebugMode, ErrorThrowsNamingTheCall) {
  SyncModeReset reset;
  Tensor x = tensor({1.f, 2.f});
  set_sync_debug_mode(SyncDebugMode::Error);
  testing::expect_error([&] { (void)x.sum().item<float>(); }, {"[item]", "synchroniz", "Error"});
  testing::expect_error([&] { x.nonzero(); }, {"[nonzero]"});
  testing::expect_error([&] { std::ostringstream os; os << x; }, {"[print]"});
  testing::expect_error([&] { x.cpu(); }, {"[to]"});
  Tensor y = x * 2;  // ops that do not read data still run
  set_sync_debug_mode(SyncDebugMode::Off);
  EXPECT_EQ(y.sum().item<float>(), 6.f);
}

// ---- memory ----------------------------------------------------------------------------

TEST(Profiler, MemoryIsAttributedToTheAllocatingOp) {
  Tensor a = ones({2, 3}), b = ones({2, 3});
  prof::profile p(ProfileOptions().profile_memory(true));
  Tensor c = a + b;  // one 24-byte output
  {
    prof::record_function scope("drop");
    c.reset();  // freed inside the scope
  }
  Tensor d = empty({100});
  a.add_(b);  // in place: no allocation
  const auto& r = p.result();
  check_structure(r);
  const Event* add = named(r, "add")[0];
  EXPECT_EQ(add->self_alloc_bytes, 24);
  EXPECT_EQ(add->self_allocs, 1);
  EXPECT_LE(add->self_cache_misses, 1);
  const Event* drop = named(r, "drop")[0];
  EXPECT_EQ(drop->self_free_bytes, 24);
  EXPECT_EQ(drop->self_alloc_bytes, 0);
  EXPECT_EQ(named(r, "empty")[0]->self_alloc_bytes, 400);
  EXPECT_EQ(named(r, "add_")[0]->self_alloc_bytes, 0);
  EXPECT_EQ(named(r, "add_")[0]->self_allocs, 0);
  // One sample per allocation and free, in time order, on the main thread.
  ASSERT_EQ(r.memory.size(), 3u);
  EXPECT_EQ(r.memory[0].bytes, 24);
  EXPECT_EQ(r.memory[1].bytes, -24);
  EXPECT_EQ(r.memory[2].bytes, 400);
  for (size_t i = 0; i < r.memory.size(); ++i) {
    EXPECT_EQ(r.memory[i].thread, 0u);
    EXPECT_GT(r.memory[i].reserved, 0);
    EXPECT_GE(r.memory[i].reserved, r.memory[i].allocated);
    if (i) EXPECT_LE(r.memory[i - 1].time_ns, r.memory[i].time_ns);
  }
  EXPECT_LT(r.memory[1].allocated, r.memory[0].allocated);
  // key_averages: net bytes, children included in CPU Mem.
  prof::KeyAverages ka = prof::key_averages(r);
  for (const prof::KeyAverage& k : ka.rows()) {
    if (k.name == "add") EXPECT_EQ(k.self_cpu_memory_bytes, 24);
    if (k.name == "drop") EXPECT_EQ(k.cpu_memory_bytes, -24);
  }
}

TEST(Profiler, NoMemoryWithoutProfileMemory) {
  Tensor a = ones({2, 3});
  prof::profile p;
  Tensor c = a + a;
  const auto& r = p.result();
  EXPECT_EQ(named(r, "add")[0]->self_alloc_bytes, 0);
  EXPECT_TRUE(r.memory.empty());
}

// ---- key_averages and the table ----------------------------------------------------------

// A result built by hand: times are exact.
prof::ProfileResult handmade() {
  prof::ProfileResult r;
  r.threads = {"main"};
  r.duration_ns = 3'000'000;
  auto ev = [&](const char* name, int64_t s, int64_t e, int32_t parent, Shapes shapes, int64_t alloc) {
    Event x;
    x.name = name;
    x.start_ns = s;
    x.end_ns = e;
    x.parent = parent;
    x.depth = parent < 0 ? 0 : r.events[static_cast<size_t>(parent)].depth + 1;
    x.shapes = std::move(shapes);
    x.dtypes.assign(x.shapes.size(), "float32");
    x.self_alloc_bytes = alloc;
    r.events.push_back(x);
  };
  ev("linear", 0, 2'000'000, -1, {{4, 3}, {5, 3}}, 0);       // 2 ms, self 0.5 ms
  ev("addmm", 100'000, 1'600'000, 0, {{4, 3}, {3, 5}}, 1536);  // 1.5 ms
  ev("add", 2'000'000, 2'000'500, -1, {{4, 3}, {4, 3}}, 48);   // 500 ns
  ev("add", 2'100'000, 2'101'500, -1, {{2}, {2}}, 3 << 20);    // 1.5 us, 3 Mb
  return r;
}

TEST(KeyAverages, GroupsByNameAndByShape) {
  prof::ProfileResult r = handmade();
  prof::KeyAverages ka = prof::key_averages(r);
  ASSERT_EQ(ka.rows().size(), 3u);
  const prof::KeyAverage& lin = ka.rows()[0];
  EXPECT_EQ(lin.name, "linear");
  EXPECT_EQ(lin.count, 1);
  EXPECT_EQ(lin.cpu_time_total_ns, 2'000'000);
  EXPECT_EQ(lin.self_cpu_time_total_ns, 500'000);
  EXPECT_EQ(lin.cpu_memory_bytes, 1536);
  EXPECT_EQ(lin.self_cpu_memory_bytes, 0);
  EXPECT_EQ(lin.input_shapes, "");
  const prof::KeyAverage& add = ka.rows()[2];
  EXPECT_EQ(add.count, 2);
  EXPECT_EQ(add.cpu_time_total_ns, 2000);
  EXPECT_EQ(add.self_cpu_memory_bytes, 48 + (3 << 20));

  prof::KeyAverages by_shape = prof::key_averages(r, true);
  ASSERT_EQ(by_shape.rows().size(), 4u);
  EXPECT_EQ(by_shape.rows()[0].input_shapes, "[[4, 3], [5, 3]]");
  EXPECT_EQ(by_shape.rows()[2].input_shapes, "[[4, 3], [4, 3]]");
  EXPECT_EQ(by_shape.rows()[3].input_shapes, "[[2], [2]]");
  EXPECT_EQ(by_shape.rows()[3].count, 1);
}

TEST(KeyAverages, TableMatchesPyTorchsLayout) {
  prof::KeyAverages ka = prof::key_averages(handmade());
  const std::string t = ka.table("cpu_time_total", 0);
  const std::string sep = std::string(10, '-') + "  " + [] {
    std::string s;
    for (int i = 0; i < 8; ++i) s += std::string(12, '-') + "  ";
    return s;
  }() + "\n";
  // total self time: 0.5 ms + 1.5 ms + 2 us = 2.002 ms
  const std::string want =
      sep +
      "      Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU Mem  Self CPU Mem  "
      "  # of Calls  \n" +
      sep +
      "    linear        24.98%     500.000us        99.90%       2.000ms       2.000ms       1.50 Kb           0 b  "
      "           1  \n"
      "     addmm        74.93%       1.500ms        74.93%       1.500ms       1.500ms       1.50 Kb       1.50 Kb  "
      "           1  \n"
      "       add         0.10%       2.000us         0.10%       2.000us       1.000us       3.00 Mb       3.00 Mb  "
      "           2  \n" +
      sep + "Self CPU time total: 2.002ms\n";
  EXPECT_EQ(t, want);
}

TEST(KeyAverages, TableSortsLimitsAndShowsShapes) {
  prof::KeyAverages ka = prof::key_averages(handmade());
  auto row_names = [](const std::string& table) {
    std::vector<std::string> names;
    std::istringstream in(table);
    std::string line;
    int seps = 0;
    while (std::getline(in, line)) {
      if (line.rfind("--", 0) == 0) {
        ++seps;
        continue;
      }
      if (seps == 2) {
        std::istringstream w(line);
        std::string n;
        w >> n;
        names.push_back(n);
      }
    }
    return names;
  };
  EXPECT_EQ(row_names(ka.table("self_cpu_time_total")), (Strings{"addmm", "linear", "add"}));
  EXPECT_EQ(row_names(ka.table("count")), (Strings{"add", "linear", "addmm"}));
  EXPECT_EQ(row_names(ka.table("cpu_time_avg")), (Strings{"linear", "addmm", "add"}));
  EXPECT_EQ(row_names(ka.table("self_cpu_memory_usage")), (Strings{"add", "addmm", "linear"}));
  EXPECT_EQ(row_names(ka.table("cpu_memory_usage")), (Strings{"add", "linear", "addmm"}));
  EXPECT_EQ(row_names(ka.table("cpu_time_total", 2)), (Strings{"linear", "addmm"}));
  EXPECT_EQ(row_names(ka.table("cpu_time_total", -1)).size(), 3u);
  testing::expect_error([&] { ka.table("bogus"); }, {"[table]", "bogus", "self_cpu_time_total"});

  const std::string shaped = prof::key_averages(handmade(), true).table("cpu_time_total");
  EXPECT_NE(shaped.find("Input Shapes"), std::string::npos);
  EXPECT_NE(shaped.find("[[4, 3], [5, 3]]"), std::string::npos);
  EXPECT_NE(shaped.find("[[2], [2]]"), std::string::npos);
}

TEST(KeyAverages, TableOfARealProfile) {
  Tensor x = ones({3, 3});
  prof::profile p;
  for (int i = 0; i < 4; ++i) Tensor y = x + x;
  const std::string t = p.key_averages().table("count", 10);
  for (const char* col : {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"})
    EXPECT_NE(t.find(col), std::string::npos) << col;
  EXPECT_EQ(t.find("CPU Mem"), std::string::npos) << "memory columns only with memory";
  EXPECT_EQ(t.find("Input Shapes"), std::string::npos);
  EXPECT_NE(t.find("add  "), std::string::npos);
  EXPECT_NE(t.find("Self CPU time total: "), std::string::npos);
}

TEST(KeyAverages, FormatsTimesAndMemoryAsPyTorch) {
  auto one = [](int64_t ns, int64_t bytes) {
    prof::ProfileResult r;
    Event e;
    e.name = "op";
    e.end_ns = ns;
    e.self_alloc_bytes = bytes;
    r.events.push_back(e);
    return prof::key_averages(r).table();
  };
  EXPECT_NE(one(1234, 512).find("1.234us"), std::string::npos);
  EXPECT_NE(one(1234, 512).find("512 b"), std::string::npos);
  EXPECT_NE(one(12'345'678, 1536 * 1024).find("12.346ms"), std::string::npos);
  EXPECT_NE(one(12'345'678, 1536 * 1024).find("1.50 Mb"), std::string::npos);
  EXPECT_NE(one(1'234'400'000, int64_t(5) << 30).find("1.234s"), std::string::npos);
  EXPECT_NE(one(1'234'400'000, int64_t(5) << 30).find("5.00 Gb"), std::string::npos);
  EXPECT_NE(one(10, -2048).find("-2.00 Kb"), std::string::npos);
  EXPECT_NE(one(10, -2048).find("100.00%"), std::string::npos);
}

// ---- Chrome trace ----------------------------------------------------------------------

// A JSON value read back with the library's reader.
struct JValue {
  json::Reader::Kind kind = json::Reader::Kind::Null;
  std::string text;  // string value or number literal
  bool b = false;
  std::vector<JValue> items;
  std::vector<std::pair<std::string, JValue>> fields;
  const JValue& at(const std::string& k) const {
    for (const auto& [name, v] : fields)
      if (name == k) return v;
    throw std::runtime_error("no field " + k);
  }
  bool has(const std::string& k) const {
    for (const auto& f : fields)
      if (f.first == k) return true;
    return false;
  }
  int64_t i() const { return std::stoll(text); }
  double d() const { return std::stod(text); }
};

JValue read_value(json::Reader& r) {
  JValue v;
  v.kind = r.peek_kind();
  switch (v.kind) {
    case json::Reader::Kind::Null: r.read_null(); break;
    case json::Reader::Kind::Bool: v.b = r.read_bool(); break;
    case json::Reader::Kind::Number: v.text = r.read_number(); break;
    case json::Reader::Kind::String: v.text = r.read_string(); break;
    case json::Reader::Kind::Array:
      r.begin_array();
      while (r.next_item()) v.items.push_back(read_value(r));
      break;
    case json::Reader::Kind::Object: {
      r.begin_object();
      std::string k;
      while (r.next_key(&k)) {
        JValue item = read_value(r);
        v.fields.emplace_back(k, std::move(item));
      }
      break;
    }
  }
  return v;
}

JValue read_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  json::Reader r(text, "test", path);
  JValue v = read_value(r);
  r.finish();
  return v;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/brisk_profiler_" + std::to_string(::getpid()) + "_" + name;
}

TEST(ChromeTrace, FollowsTheSchema) {
  Tensor a = ones({2, 3}), w = ones({3}).requires_grad_();
  const std::string path = temp_path("trace.json");
  prof::profile p(ProfileOptions().record_shapes(true).profile_memory(true).with_stack(true));
  {
    prof::record_function scope("step \"1\"");
    Tensor c = a * w;
    (void)c.sum().item<float>();
  }
  std::thread t([&] { Tensor d = a.exp(); });
  t.join();
  p.stop();
  p.export_chrome_trace(path);
  const prof::ProfileResult& r = p.result();

  JValue doc = read_json_file(path);
  EXPECT_EQ(doc.at("displayTimeUnit").text, "ns");
  const JValue& meta = doc.at("brisk");
  EXPECT_EQ(meta.at("version").i(), 1);
  EXPECT_EQ(meta.at("duration_ns").i(), r.duration_ns);
  EXPECT_TRUE(meta.at("options").at("record_shapes").b);
  EXPECT_TRUE(meta.at("options").at("profile_memory").b);
  EXPECT_TRUE(meta.at("options").at("with_stack").b);
  ASSERT_EQ(meta.at("threads").items.size(), 2u);
  EXPECT_EQ(meta.at("threads").items[0].text, "main");

  const auto& evs = doc.at("traceEvents").items;
  std::vector<const JValue*> complete, counters, names;
  for (const JValue& e : evs) {
    const std::string ph = e.at("ph").text;
    EXPECT_EQ(e.at("pid").i(), 0);
    if (ph == "X") complete.push_back(&e);
    if (ph == "C") counters.push_back(&e);
    if (ph == "M") names.push_back(&e);
  }
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0]->at("name").text, "thread_name");
  EXPECT_EQ(names[0]->at("tid").i(), 0);
  EXPECT_EQ(names[0]->at("args").at("name").text, "main");
  EXPECT_EQ(names[1]->at("args").at("name").text, r.threads[1]);

  ASSERT_EQ(complete.size(), r.events.size());
  double last_ts = -1;
  for (size_t i = 0; i < complete.size(); ++i) {
    const JValue& j = *complete[i];
    const Event& e = r.events[i];
    EXPECT_EQ(j.at("name").text, e.name);
    EXPECT_EQ(j.at("cat").text, prof::kind_name(e.kind));
    EXPECT_EQ(j.at("tid").i(), e.thread);
    const JValue& args = j.at("args");
    EXPECT_EQ(args.at("start_ns").i(), e.start_ns);
    EXPECT_EQ(args.at("end_ns").i(), e.end_ns);
    EXPECT_NEAR(j.at("ts").d(), e.start_ns / 1000.0, 0.0011);
    EXPECT_NEAR(j.at("dur").d(), e.duration_ns() / 1000.0, 0.0011);
    EXPECT_GE(j.at("ts").d(), last_ts) << "in order of start time";
    last_ts = j.at("ts").d();
    EXPECT_EQ(args.at("recorded_graph").b, e.recorded_graph);
    EXPECT_EQ(args.at("self_alloc_bytes").i(), e.self_alloc_bytes);
    EXPECT_EQ(args.at("self_free_bytes").i(), e.self_free_bytes);
    EXPECT_EQ(args.at("self_allocs").i(), e.self_allocs);
    EXPECT_EQ(args.at("self_cache_misses").i(), e.self_cache_misses);
    EXPECT_EQ(args.has("detail"), !e.detail.empty());
    if (!e.detail.empty()) EXPECT_EQ(args.at("detail").text, e.detail);
    EXPECT_EQ(args.has("Input Dims"), !e.shapes.empty()) << e.name;
    if (!e.shapes.empty()) {
      const auto& dims = args.at("Input Dims").items;
      ASSERT_EQ(dims.size(), e.shapes.size());
      for (size_t k = 0; k < dims.size(); ++k) {
        ASSERT_EQ(dims[k].items.size(), e.shapes[k].size());
        for (size_t d = 0; d < dims[k].items.size(); ++d) EXPECT_EQ(dims[k].items[d].i(), e.shapes[k][d]);
        EXPECT_EQ(args.at("Input type").items[k].text, e.dtypes[k]);
      }
    }
    EXPECT_EQ(args.has("stack"), !e.stack.empty());
    if (!e.stack.empty()) EXPECT_EQ(args.at("stack").items[0].text, "step \"1\"");
  }
  const JValue* mul = nullptr;
  for (const JValue* j : complete)
    if (j->at("name").text == "mul") mul = j;
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->at("args").at("Input Dims").items.size(), 2u);
  EXPECT_EQ(mul->at("args").at("Input type").items[1].text, "float32");
  EXPECT_TRUE(mul->at("args").at("recorded_graph").b);
  EXPECT_EQ(mul->at("args").at("self_alloc_bytes").i(), 24);

  ASSERT_EQ(counters.size(), r.memory.size());
  for (size_t i = 0; i < counters.size(); ++i) {
    const JValue& c = *counters[i];
    EXPECT_EQ(c.at("name").text, "Memory");
    EXPECT_EQ(c.at("args").at("time_ns").i(), r.memory[i].time_ns);
    EXPECT_EQ(c.at("args").at("bytes").i(), r.memory[i].bytes);
    EXPECT_EQ(c.at("args").at("allocated").i(), r.memory[i].allocated);
    EXPECT_EQ(c.at("args").at("reserved").i(), r.memory[i].reserved);
    EXPECT_EQ(c.at("tid").i(), r.memory[i].thread);
  }
  std::remove(path.c_str());
}

TEST(ChromeTrace, WithoutOptionsOmitsTheirArgs) {
  Tensor a = ones({2});
  const std::string path = temp_path("plain.json");
  prof::profile p;
  Tensor b = a + a;
  p.export_chrome_trace(path);  // stops the profile
  EXPECT_FALSE(p.active());
  JValue doc = read_json_file(path);
  bool found = false;
  for (const JValue& e : doc.at("traceEvents").items) {
    if (e.at("ph").text != "X") continue;
    found = true;
    const JValue& args = e.at("args");
    EXPECT_FALSE(args.has("Input Dims"));
    EXPECT_FALSE(args.has("self_alloc_bytes"));
    EXPECT_FALSE(args.has("stack"));
    EXPECT_TRUE(args.has("start_ns"));
    EXPECT_TRUE(args.has("recorded_graph"));
  }
  EXPECT_TRUE(found);
  EXPECT_FALSE(doc.at("brisk").at("options").at("record_shapes").b);
  std::remove(path.c_str());
}

TEST(ChromeTrace, AFailedWriteLeavesNoFile) {
  prof::profile p;
  p.stop();
  testing::expect_error([&] { p.export_chrome_trace("/nonexistent-dir/x/trace.json"); },
                        {"[export_chrome_trace]", "/nonexistent-dir/x"});
}

}  // namespace
}  // namespace brisk
