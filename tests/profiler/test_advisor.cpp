// The profiler's advisor, trace loader, HTML report and brisk-prof tool.
//
// Every advisor rule is checked twice: on a program that commits the
// anti-pattern (the finding must be there, with the right count and call
// site) and on the corrected program (it must not be). Rules the CPU cannot
// produce (copies to a device, tensor cores) are checked on hand-made
// profiles. No assertion depends on how long anything took, except the
// data-loader rule, whose programs differ by two orders of magnitude.
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <unistd.h>

#include "profiler/advisor.h"
#include "test_util.h"

namespace prof = brisk::profiler;
using namespace brisk;
using prof::EventKind;
using prof::Finding;
using prof::Rule;

namespace {

// ---- helpers ------------------------------------------------------------------

// Builds a hand-made profile on one thread: begin/end nest, leaf adds a
// closed event. Times advance by fixed steps, so nesting is well formed.
struct Builder {
  prof::ProfileResult r;
  int64_t t = 0;
  std::vector<int32_t> open;
  bool with_stack = false;

  Builder() { r.threads = {"main"}; }
  int32_t begin(EventKind kind, const std::string& name, const std::string& detail = "") {
    prof::Event e;
    e.name = name;
    e.kind = kind;
    e.detail = detail;
    e.start_ns = t;
    e.parent = open.empty() ? -1 : open.back();
    e.depth = static_cast<int32_t>(open.size());
    if (with_stack)
      for (int32_t p : open)
        if (r.events[p].kind == EventKind::UserScope) e.stack.push_back(r.events[p].name);
    r.events.push_back(e);
    open.push_back(static_cast<int32_t>(r.events.size() - 1));
    t += 10;
    return open.back();
  }
  prof::Event& end(int64_t dur = 100) {
    t += dur;
    prof::Event& e = r.events[open.back()];
    e.end_ns = t;
    open.pop_back();
    t += 10;
    r.duration_ns = t;
    return e;
  }
  prof::Event& leaf(EventKind kind, const std::string& name, int64_t dur = 100, const std::string& detail = "") {
    begin(kind, name, detail);
    return end(dur);
  }
  prof::Event& op(const std::string& name, std::vector<std::vector<int64_t>> shapes = {}, int64_t dur = 100) {
    prof::Event& e = leaf(EventKind::Op, name, dur);
    e.dtypes.assign(shapes.size(), "float32");
    e.shapes = std::move(shapes);
    return e;
  }
};

std::vector<Finding> of_rule(const std::vector<Finding>& fs, Rule rule) {
  std::vector<Finding> out;
  for (const Finding& f : fs)
    if (f.rule == rule) out.push_back(f);
  return out;
}

std::string describe(const std::vector<Finding>& fs) { return prof::advice_text(fs); }

// Files the tests wrote, removed when the program exits.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};
TempFiles& temp_files() {
  static TempFiles files;
  return files;
}

std::string temp_path(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // The process id keeps concurrent runs of this test (several build
  // directories, ctest -j) apart.
  std::string path = ::testing::TempDir() + "brisk_advisor_" + std::to_string(::getpid()) + "_" + info->name() + "_" + name;
  temp_files().paths.push_back(path);
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  // A new file rather than a truncated one: ext4 flushes a file rewritten
  // through truncation when it is closed, which makes the loops below wait
  // on the disk.
  std::remove(path.c_str());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

prof::ProfileOptions all_options() {
  return prof::ProfileOptions().record_shapes(true).profile_memory(true).with_stack(true);
}

// ---- advisor on hand-made profiles ----------------------------------------------------

TEST(AdvisorSynthetic, EmptyProfileHasNoFindings) {
  prof::ProfileResult r;
  EXPECT_TRUE(prof::advise(r).empty());
  EXPECT_EQ(prof::advice_text({}), "Advisor: no findings.\n");
}

TEST(AdvisorSynthetic, RuleNames) {
  EXPECT_STREQ(prof::rule_name(Rule::SyncInLoop), "SyncInLoop");
  EXPECT_STREQ(prof::rule_name(Rule::CpuTensorThenCopy), "CpuTensorThenCopy");
  EXPECT_STREQ(prof::rule_name(Rule::LaunchBound), "LaunchBound");
  EXPECT_STREQ(prof::rule_name(Rule::ZeroedGrads), "ZeroedGrads");
  EXPECT_STREQ(prof::rule_name(Rule::ForLoopOptimizer), "ForLoopOptimizer");
  EXPECT_STREQ(prof::rule_name(Rule::GradModeInference), "GradModeInference");
  EXPECT_STREQ(prof::rule_name(Rule::AllocatingOps), "AllocatingOps");
  EXPECT_STREQ(prof::rule_name(Rule::DataLoaderStall), "DataLoaderStall");
  EXPECT_STREQ(prof::rule_name(Rule::UnpinnedCopy), "UnpinnedCopy");
  EXPECT_STREQ(prof::rule_name(Rule::TensorCoreMath), "TensorCoreMath");
}

// The scopes of a call site come from Event::stack, or from the UserScope
// ancestors when no stack was recorded; both name the site the same way.
TEST(AdvisorSynthetic, WhereFromStackOrParents) {
  for (bool with_stack : {false, true}) {
    Builder b;
    b.with_stack = with_stack;
    b.begin(EventKind::UserScope, "epoch");
    b.begin(EventKind::UserScope, "step");
    b.begin(EventKind::Op, "linear");
    size_t inner = static_cast<size_t>(b.begin(EventKind::Op, "addmm"));
    b.end();
    b.end();
    b.end();
    b.end();
    EXPECT_EQ(prof::advisor::where_of(b.r, inner), "addmm (epoch > step)") << with_stack;
    EXPECT_EQ(prof::advisor::where_of(b.r, 0), "epoch");
  }
}

// Iterations of "iteration" { linear; nonzero { Sync } }, as the recorder
// nests a sync inside the op that synchronises.
prof::ProfileResult sync_loop(int iterations, bool scoped, const std::string& call = "nonzero") {
  Builder b;
  for (int i = 0; i < iterations; ++i) {
    if (scoped) b.begin(EventKind::UserScope, "iteration");
    b.op("linear", {{64, 32}, {16, 32}});
    b.begin(EventKind::Op, call);
    b.leaf(EventKind::Sync, "Sync." + call, 0, call);
    b.end(500);
    if (scoped) b.end();
  }
  return b.r;
}

TEST(AdvisorSynthetic, SyncInLoop) {
  auto fs = of_rule(prof::advise(sync_loop(10, true)), Rule::SyncInLoop);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 10);
  ASSERT_EQ(fs[0].where.size(), 1u);
  EXPECT_EQ(fs[0].where[0], "nonzero (iteration)");
  EXPECT_EQ(fs[0].time_ns, 10 * (500 + 10 + 10 + 10));  // the nonzero ops, Sync included
  EXPECT_NE(fs[0].fix.find("mask"), std::string::npos) << fs[0].fix;

  // Repeated without a scope: the call site repeats.
  fs = of_rule(prof::advise(sync_loop(3, false, "item")), Rule::SyncInLoop);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 3);
  EXPECT_EQ(fs[0].where[0], "item");
  EXPECT_NE(fs[0].fix.find("every N steps"), std::string::npos) << fs[0].fix;

  // Twice inside a scope entered twice: a loop body.
  fs = of_rule(prof::advise(sync_loop(2, true)), Rule::SyncInLoop);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 2);
}

TEST(AdvisorSynthetic, SyncOutsideLoopIsFine) {
  EXPECT_TRUE(of_rule(prof::advise(sync_loop(1, true)), Rule::SyncInLoop).empty());
  EXPECT_TRUE(of_rule(prof::advise(sync_loop(2, false)), Rule::SyncInLoop).empty());
}

// Reading every N steps is the fix: a sync in at most half of the loop's
// iterations (scope instances, else optimizer steps) is not flagged.
TEST(AdvisorSynthetic, SyncEveryNStepsIsFine) {
  auto scoped = [](int every) {
    Builder b;
    for (int i = 0; i < 12; ++i) {
      b.begin(EventKind::UserScope, "step");
      b.op("linear", {{64, 32}});
      if (i % every == 0) {
        b.begin(EventKind::Op, "item");
        b.leaf(EventKind::Sync, "Sync.item", 0, "item");
        b.end();
      }
      b.end();
    }
    return of_rule(prof::advise(b.r), Rule::SyncInLoop);
  };
  EXPECT_EQ(scoped(1).size(), 1u);
  EXPECT_TRUE(scoped(2).empty());
  EXPECT_TRUE(scoped(4).empty());
  auto unscoped = [](int every) {
    Builder b;
    for (int i = 0; i < 12; ++i) {
      b.op("linear", {{64, 32}});
      b.leaf(EventKind::OptimizerStep, "SGD.step", 100, "fused");
      if (i % every == 0) {
        b.begin(EventKind::Op, "item");
        b.leaf(EventKind::Sync, "Sync.item", 0, "item");
        b.end();
      }
    }
    return of_rule(prof::advise(b.r), Rule::SyncInLoop);
  };
  ASSERT_EQ(unscoped(1).size(), 1u);
  EXPECT_EQ(unscoped(1)[0].count, 12);
  EXPECT_TRUE(unscoped(3).empty());
}

// factory, then to() with a Copy inside, `n` times.
prof::ProfileResult copies(int n, const std::string& factory, const std::string& copy_detail) {
  Builder b;
  b.r.options.activities({prof::Activity::CPU, prof::Activity::CUDA});
  for (int i = 0; i < n; ++i) {
    b.begin(EventKind::UserScope, "step");
    b.op(factory, {});
    b.begin(EventKind::Op, "to");
    b.leaf(EventKind::Copy, "copy", 200, copy_detail);
    b.end();
    b.end();
  }
  return b.r;
}

TEST(AdvisorSynthetic, CpuTensorThenCopy) {
  auto fs = of_rule(prof::advise(copies(4, "zeros", "cpu->cuda:0")), Rule::CpuTensorThenCopy);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 4);
  EXPECT_EQ(fs[0].where[0], "zeros (step)");
  EXPECT_NE(fs[0].fix.find("device"), std::string::npos);
  // Copied from a computed tensor (not a factory), device to device, or to
  // the host: not this rule.
  EXPECT_TRUE(of_rule(prof::advise(copies(4, "matmul", "cpu->cuda:0")), Rule::CpuTensorThenCopy).empty());
  EXPECT_TRUE(of_rule(prof::advise(copies(4, "zeros", "cuda:0->cuda:1")), Rule::CpuTensorThenCopy).empty());
  EXPECT_TRUE(of_rule(prof::advise(copies(4, "zeros", "cuda:0->cpu")), Rule::CpuTensorThenCopy).empty());
}

TEST(AdvisorSynthetic, UnpinnedCopy) {
  auto fs = of_rule(prof::advise(copies(3, "matmul", "cpu->cuda:0 non_blocking")), Rule::UnpinnedCopy);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 3);
  EXPECT_EQ(fs[0].where[0], "copy (step)");
  EXPECT_TRUE(of_rule(prof::advise(copies(3, "matmul", "cpu->cuda:0 non_blocking pinned")), Rule::UnpinnedCopy).empty());
  EXPECT_TRUE(of_rule(prof::advise(copies(3, "matmul", "cpu->cuda:0")), Rule::UnpinnedCopy).empty());
}

TEST(AdvisorSynthetic, CopyDetailParsing) {
  auto d = prof::advisor::parse_copy_detail("cpu->cuda:0 non_blocking pinned");
  EXPECT_TRUE(d.valid);
  EXPECT_EQ(d.src, "cpu");
  EXPECT_EQ(d.dst, "cuda:0");
  EXPECT_TRUE(d.non_blocking && d.pinned && d.host_to_device());
  EXPECT_FALSE(prof::advisor::parse_copy_detail("").valid);
  EXPECT_FALSE(prof::advisor::parse_copy_detail("->cuda").valid);
  EXPECT_FALSE(prof::advisor::parse_copy_detail("cpu->").valid);
  EXPECT_FALSE(prof::advisor::parse_copy_detail("cuda:0->cpu").host_to_device());
}

TEST(AdvisorSynthetic, TensorCoreMath) {
  auto program = [](bool cuda, const std::string& dtype, int64_t n) {
    prof::ProfileResult r = copies(1, "matmul", "cpu->cuda:0");
    if (!cuda) r.options.activities({prof::Activity::CPU});
    Builder b;
    b.r = r;
    b.t = r.duration_ns;
    for (int i = 0; i < 3; ++i) b.op("matmul", {{n, n}, {n, n}}).dtypes = {dtype, dtype};
    return b.r;
  };
  auto fs = of_rule(prof::advise(program(true, "float32", 64)), Rule::TensorCoreMath);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NE(fs[0].title.find("float32"), std::string::npos);
  EXPECT_EQ(fs[0].count, 3);
  EXPECT_EQ(fs[0].where[0], "matmul");
  fs = of_rule(prof::advise(program(true, "float16", 30)), Rule::TensorCoreMath);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NE(fs[0].title.find("multiples of 8"), std::string::npos);
  EXPECT_EQ(fs[0].count, 3);
  fs = of_rule(prof::advise(program(true, "bfloat16", 64)), Rule::TensorCoreMath);
  for (const Finding& f : fs) EXPECT_EQ(f.title.find("multiples of 8"), std::string::npos);
  // Without CUDA activity nothing says the matmuls ran on a GPU.
  EXPECT_TRUE(of_rule(prof::advise(program(false, "float16", 30)), Rule::TensorCoreMath).empty());
}

// On a CPU with AVX512_BF16 or AMX: float32 GEMMs that are most of the
// time point to bfloat16 autocast; bfloat16 ones, small ones and
// convolutions do not.
TEST(AdvisorSynthetic, CpuBf16Math) {
  if (!__builtin_cpu_supports("avx512bf16") && !__builtin_cpu_supports("amx-bf16"))
    GTEST_SKIP() << "this CPU has neither AVX512_BF16 nor AMX: the rule is quiet here by design";
  auto program = [](const std::string& name, const std::string& dtype, int64_t dur, int64_t other) {
    Builder b;
    b.r.options.activities({prof::Activity::CPU});
    for (int i = 0; i < 3; ++i) {
      b.op(name, {{512, 512}, {512, 512}}, dur).dtypes = {dtype, dtype};
      b.op("relu", {{512, 512}}, other);
    }
    return b.r;
  };
  auto fs = of_rule(prof::advise(program("linear", "float32", 2'000'000, 100'000)), Rule::TensorCoreMath);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NE(fs[0].title.find("bfloat16 autocast"), std::string::npos);
  EXPECT_EQ(fs[0].count, 3);
  EXPECT_NE(fs[0].fix.find("autocast(kCPU)"), std::string::npos);
  // quiet under autocast, for small GEMMs, when GEMMs are a small share, for convolutions
  EXPECT_TRUE(of_rule(prof::advise(program("linear", "bfloat16", 2'000'000, 100'000)), Rule::TensorCoreMath).empty());
  EXPECT_TRUE(of_rule(prof::advise(program("linear", "float32", 100'000, 100)), Rule::TensorCoreMath).empty());
  EXPECT_TRUE(of_rule(prof::advise(program("linear", "float32", 2'000'000, 8'000'000)), Rule::TensorCoreMath).empty());
  EXPECT_TRUE(of_rule(prof::advise(program("conv2d", "float32", 2'000'000, 100'000)), Rule::TensorCoreMath).empty());
  Builder small;
  for (int i = 0; i < 3; ++i) small.op("mm", {{64, 64}, {64, 64}}, 2'000'000);
  EXPECT_TRUE(of_rule(prof::advise(small.r), Rule::TensorCoreMath).empty());
}

TEST(AdvisorSynthetic, FusablePointwise) {
  using prof::advisor::kFusableMinOps;
  auto run = [](int n, int64_t numel) {
    Builder b;
    b.begin(EventKind::UserScope, "gelu");
    for (int i = 0; i < n; ++i) b.op(i % 2 ? "mul" : "erf", {{numel}, {numel}});
    b.op("sum", {{numel}});  // not pointwise: ends the chain
    for (int i = 0; i < n; ++i) b.op("add", {{numel}, {numel}});
    b.end();
    return prof::advise(b.r);
  };
  auto fs = of_rule(run(kFusableMinOps + 1, 1 << 20), Rule::FusablePointwise);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 2 * (kFusableMinOps + 1));
  EXPECT_NE(fs[0].title.find("2 chains"), std::string::npos) << fs[0].title;
  ASSERT_EQ(fs[0].where.size(), 2u);
  EXPECT_TRUE(fs[0].where[0].find("erf, mul") != std::string::npos ||
              fs[0].where[1].find("erf, mul") != std::string::npos)
      << fs[0].where[0];
  EXPECT_NE(fs[0].fix.find("brisk::compile"), std::string::npos);
  EXPECT_TRUE(of_rule(run(kFusableMinOps - 1, 1 << 20), Rule::FusablePointwise).empty());
  // small tensors are rule 3's (launch-bound), not a memory-traffic chain
  EXPECT_TRUE(of_rule(run(kFusableMinOps + 1, 16), Rule::FusablePointwise).empty());
  EXPECT_STREQ(prof::rule_name(Rule::FusablePointwise), "FusablePointwise");
}

TEST(AdvisorSynthetic, LaunchBound) {
  using prof::advisor::kLaunchBoundMinOps;
  auto run = [](int n, int64_t numel) {
    Builder b;
    b.begin(EventKind::UserScope, "loop");
    for (int i = 0; i < n; ++i) b.op("add", {{numel}, {numel}});
    b.end();
    return prof::advise(b.r);
  };
  auto fs = of_rule(run(kLaunchBoundMinOps + 5, 16), Rule::LaunchBound);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, kLaunchBoundMinOps + 5);
  EXPECT_EQ(fs[0].where[0], "add (loop)");
  EXPECT_TRUE(of_rule(run(kLaunchBoundMinOps - 1, 16), Rule::LaunchBound).empty());
  EXPECT_TRUE(of_rule(run(kLaunchBoundMinOps + 5, prof::advisor::kSmallOpNumel + 1), Rule::LaunchBound).empty());

  // A big op in the middle breaks the stretch.
  Builder b;
  for (int i = 0; i < kLaunchBoundMinOps - 1; ++i) b.op("mul", {{4}, {4}});
  b.op("mul", {{1 << 20}, {1 << 20}});
  for (int i = 0; i < kLaunchBoundMinOps - 1; ++i) b.op("mul", {{4}, {4}});
  EXPECT_TRUE(of_rule(prof::advise(b.r), Rule::LaunchBound).empty());

  // Views launch nothing: they neither count nor break a stretch.
  Builder views, with_views;
  for (int i = 0; i < kLaunchBoundMinOps; ++i) views.op("unsqueeze", {{4}});
  EXPECT_TRUE(of_rule(prof::advise(views.r), Rule::LaunchBound).empty());
  for (int i = 0; i < kLaunchBoundMinOps; ++i) {
    with_views.op("add", {{4}, {4}});
    with_views.op("view", {{1 << 20}});
  }
  fs = of_rule(prof::advise(with_views.r), Rule::LaunchBound);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, kLaunchBoundMinOps);

  // Without shapes, short ops are small and long ones are not.
  Builder fast, slow;
  for (int i = 0; i < kLaunchBoundMinOps; ++i) {
    fast.leaf(EventKind::Op, "relu", 100);
    slow.leaf(EventKind::Op, "relu", 10 * prof::advisor::kSmallOpNs);
  }
  EXPECT_EQ(of_rule(prof::advise(fast.r), Rule::LaunchBound).size(), 1u);
  EXPECT_TRUE(of_rule(prof::advise(slow.r), Rule::LaunchBound).empty());
}

TEST(AdvisorSynthetic, ZeroedGradsAndForLoopOptimizer) {
  auto program = [](const std::string& zero_detail, const std::string& impl) {
    Builder b;
    for (int i = 0; i < 3; ++i) {
      b.begin(EventKind::UserScope, "train_step");
      b.begin(EventKind::UserScope, "Optimizer.zero_grad", zero_detail);
      b.op("zero_", {{10}});
      b.end();
      b.leaf(EventKind::Backward, "MulBackward0");
      b.leaf(EventKind::OptimizerStep, "AdamW.step", 300, impl);
      b.end();
    }
    return prof::advise(b.r);
  };
  auto fs = program("set_to_none=false", "for-loop");
  auto z = of_rule(fs, Rule::ZeroedGrads);
  ASSERT_EQ(z.size(), 1u);
  EXPECT_EQ(z[0].count, 3);
  EXPECT_EQ(z[0].where[0], "Optimizer.zero_grad (train_step)");
  auto o = of_rule(fs, Rule::ForLoopOptimizer);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].count, 3);
  EXPECT_EQ(o[0].time_ns, 3 * (300 + 10));  // a leaf lasts 10 ns more than asked
  EXPECT_EQ(o[0].where[0], "AdamW.step (train_step)");
  // Sorted by cost: the steps before the zero_grads.
  ASSERT_GE(fs.size(), 2u);
  for (size_t k = 1; k < fs.size(); ++k) EXPECT_GE(fs[k - 1].time_ns, fs[k].time_ns);

  for (const char* impl : {"fused", "foreach"}) {
    fs = program("set_to_none=true", impl);
    EXPECT_TRUE(of_rule(fs, Rule::ZeroedGrads).empty()) << describe(fs);
    EXPECT_TRUE(of_rule(fs, Rule::ForLoopOptimizer).empty()) << describe(fs);
  }
}

TEST(AdvisorSynthetic, GradModeInference) {
  auto program = [](bool backward_after, bool recorded) {
    Builder b;
    for (int i = 0; i < 4; ++i) {
      b.begin(EventKind::UserScope, "eval");
      b.op("linear", {{8, 4}}).recorded_graph = recorded;
      b.op("relu", {{8, 4}}).recorded_graph = recorded;
      b.end();
    }
    if (backward_after) b.leaf(EventKind::Backward, "AddmmBackward0");
    return prof::advise(b.r);
  };
  auto fs = of_rule(program(false, true), Rule::GradModeInference);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 8);
  EXPECT_EQ(fs[0].where.size(), 2u);
  EXPECT_NE(fs[0].fix.find("InferenceMode"), std::string::npos);
  EXPECT_TRUE(of_rule(program(true, true), Rule::GradModeInference).empty());
  EXPECT_TRUE(of_rule(program(false, false), Rule::GradModeInference).empty());
}

TEST(AdvisorSynthetic, AllocatingOps) {
  using prof::advisor::kAllocatingOpMinCount;
  auto program = [](int n, int64_t alloc, bool recorded, int64_t misses) {
    Builder b;
    for (int i = 0; i < n; ++i) {
      b.begin(EventKind::UserScope, "loop");
      prof::Event& e = b.op("add", {{256}, {256}});
      e.self_alloc_bytes = alloc;
      e.recorded_graph = recorded;
      e.self_cache_misses = misses;
      b.end();
    }
    return prof::advise(b.r);
  };
  auto fs = of_rule(program(kAllocatingOpMinCount, 1024, false, 0), Rule::AllocatingOps);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, kAllocatingOpMinCount);
  EXPECT_EQ(fs[0].where[0], "add (loop)");
  EXPECT_NE(fs[0].fix.find("add_out"), std::string::npos);
  EXPECT_TRUE(of_rule(program(kAllocatingOpMinCount - 1, 1024, false, 0), Rule::AllocatingOps).empty());
  EXPECT_TRUE(of_rule(program(kAllocatingOpMinCount, 0, false, 0), Rule::AllocatingOps).empty());
  EXPECT_TRUE(of_rule(program(kAllocatingOpMinCount, 1024, true, 0), Rule::AllocatingOps).empty());
  // Cache misses at one site, repeatedly (here with recorded graphs: the
  // miss rule is about the allocator, not the op's form). The first
  // iteration's miss is warm-up.
  fs = of_rule(program(prof::advisor::kCacheMissMinCount + 1, 1024, true, 1), Rule::AllocatingOps);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NE(fs[0].title.find("cache misses"), std::string::npos);
  EXPECT_EQ(fs[0].count, prof::advisor::kCacheMissMinCount);
  EXPECT_TRUE(of_rule(program(prof::advisor::kCacheMissMinCount, 1024, true, 1), Rule::AllocatingOps).empty());
  // Misses of distinct sizes within one pass (the first iteration of a
  // model: one per layer) are warm-up too; the same sizes in a second
  // iteration are not.
  auto layers = [](int iterations) {
    Builder b;
    for (int it = 0; it < iterations; ++it) {
      b.begin(EventKind::UserScope, "iteration");
      for (int64_t bytes : {1024, 2048, 4096, 8192}) {
        prof::Event& e = b.op("relu", {{bytes / 4}});
        e.self_alloc_bytes = bytes;
        e.self_allocs = 1;
        e.self_cache_misses = 1;
        e.recorded_graph = true;
      }
      b.end();
    }
    return of_rule(prof::advise(b.r), Rule::AllocatingOps);
  };
  EXPECT_TRUE(layers(1).empty());
  fs = layers(2);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 4);
  // A few misses among many hits at a site are not a pattern.
  Builder rare;
  for (int i = 0; i < 40; ++i) {
    prof::Event& e = rare.op("clone", {{256}});
    e.self_alloc_bytes = 1024;
    e.self_allocs = 1;
    e.self_cache_misses = i % 10 == 5;
  }
  EXPECT_TRUE(of_rule(prof::advise(rare.r), Rule::AllocatingOps).empty());
}

TEST(AdvisorSynthetic, DataLoaderStall) {
  auto program = [](int64_t wait, int64_t compute) {
    Builder b;
    for (int i = 0; i < 5; ++i) {
      b.leaf(EventKind::DataLoaderWait, "DataLoader.next", wait);
      b.op("matmul", {{512, 512}, {512, 512}}, compute);
    }
    return prof::advise(b.r);
  };
  auto fs = of_rule(program(5000, 5000), Rule::DataLoaderStall);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].count, 5);
  EXPECT_EQ(fs[0].time_ns, 5 * (5000 + 10));
  EXPECT_EQ(fs[0].where[0], "DataLoader.next");
  EXPECT_NE(fs[0].fix.find("num_workers"), std::string::npos);
  EXPECT_TRUE(of_rule(program(100, 50000), Rule::DataLoaderStall).empty());
}

TEST(AdvisorSynthetic, TextFormat) {
  auto fs = prof::advise(sync_loop(10, true));
  ASSERT_FALSE(fs.empty());
  std::ostringstream one;
  one << fs[0];
  EXPECT_NE(one.str().find("[SyncInLoop]"), std::string::npos) << one.str();
  EXPECT_NE(one.str().find("where: nonzero (iteration)"), std::string::npos) << one.str();
  EXPECT_NE(one.str().find("fix: "), std::string::npos) << one.str();
  std::string text = prof::advice_text(fs);
  EXPECT_EQ(text.rfind("Advisor: ", 0), 0u) << text;
  EXPECT_NE(text.find("1. [SyncInLoop]"), std::string::npos) << text;
}

// A malformed hand-made result (parent links out of range or in a cycle)
// does not crash the advisor.
TEST(AdvisorSynthetic, BadParentLinks) {
  prof::ProfileResult r = sync_loop(5, true);
  for (size_t i = 0; i < r.events.size(); ++i) r.events[i].parent = static_cast<int32_t>((i * 7 + 3) % (r.events.size() + 2)) - 1;
  r.events[0].parent = 1;
  r.events[1].parent = 0;
  EXPECT_NO_THROW(prof::advise(r));
  EXPECT_NO_THROW(prof::advisor::where_of(r, 0));
}

}  // namespace

// ---- the rules on real programs -------------------------------------------------------

std::vector<Finding> rule_in(prof::profile& p, Rule rule) { return of_rule(prof::advise(p.result()), rule); }

// 1. A loss read with item() every iteration, against a running total kept
// on the tensor and read once.
TEST(AdvisorProgram, SyncInLoop) {
  Tensor w = randn({16}), x = randn({16});
  {
    prof::profile p(all_options());
    double total = 0;
    for (int i = 0; i < 10; ++i) {
      prof::record_function step("step");
      total += (w * x).sum().item<double>();
    }
    p.stop();
    auto fs = rule_in(p, Rule::SyncInLoop);
    ASSERT_EQ(fs.size(), 1u) << describe(prof::advise(p.result()));
    EXPECT_EQ(fs[0].count, 10);
    ASSERT_FALSE(fs[0].where.empty());
    EXPECT_EQ(fs[0].where[0], "item (step)");
    EXPECT_NE(fs[0].fix.find("item()"), std::string::npos);
    EXPECT_TRUE(std::isfinite(total));
  }
  {
    prof::profile p(all_options());
    Tensor total = zeros({});
    for (int i = 0; i < 10; ++i) {
      prof::record_function step("step");
      total += (w * x).sum();
    }
    double t = total.item<double>();
    p.stop();
    EXPECT_TRUE(rule_in(p, Rule::SyncInLoop).empty()) << describe(prof::advise(p.result()));
    EXPECT_TRUE(std::isfinite(t));
  }
  {
    // Logging every 5 steps.
    prof::profile p(all_options());
    for (int i = 0; i < 20; ++i) {
      prof::record_function step("step");
      Tensor loss = (w * x).sum();
      if (i % 5 == 0) EXPECT_TRUE(std::isfinite(loss.item<double>()));
    }
    p.stop();
    EXPECT_TRUE(rule_in(p, Rule::SyncInLoop).empty()) << describe(prof::advise(p.result()));
  }
}

// The handbook's case: nonzero on a model's output in every iteration,
// against a mask that keeps the shape static.
TEST(AdvisorProgram, NonzeroInLoop) {
  auto model = std::make_shared<nn::LinearImpl>(32, 8);
  Tensor x = randn({16, 32});
  InferenceMode guard;
  {
    prof::profile p(all_options());
    int64_t selected = 0;
    for (int i = 0; i < 5; ++i) {
      prof::record_function it("iteration");
      Tensor out = model->forward(x);
      selected += out.gt(0).nonzero().size(0);
    }
    p.stop();
    auto fs = rule_in(p, Rule::SyncInLoop);
    ASSERT_EQ(fs.size(), 1u) << describe(prof::advise(p.result()));
    EXPECT_EQ(fs[0].count, 5);
    EXPECT_EQ(fs[0].where[0], "nonzero (iteration)");
    EXPECT_NE(fs[0].fix.find("nonzero()"), std::string::npos);
  }
  {
    prof::profile p(all_options());
    Tensor selected = zeros({}, kLong);
    for (int i = 0; i < 5; ++i) {
      prof::record_function it("iteration");
      Tensor out = model->forward(x);
      selected += out.gt(0).sum();
    }
    p.stop();
    EXPECT_TRUE(rule_in(p, Rule::SyncInLoop).empty()) << describe(prof::advise(p.result()));
  }
}

// 3. Many tiny adds against one batched reduction.
TEST(AdvisorProgram, LaunchBound) {
  const int n = static_cast<int>(prof::advisor::kLaunchBoundMinOps) + 10;
  Tensor v = randn({n, 4});
  std::vector<Tensor> rows;
  for (int i = 0; i < n; ++i) rows.push_back(v[i]);
  {
    prof::profile p(all_options());
    Tensor s = zeros({4});
    {
      prof::record_function loop("accumulate");
      for (const Tensor& r : rows) s = s + r;
    }
    p.stop();
    auto fs = rule_in(p, Rule::LaunchBound);
    ASSERT_EQ(fs.size(), 1u) << describe(prof::advise(p.result()));
    EXPECT_GE(fs[0].count, n);
    EXPECT_EQ(fs[0].where[0], "add (accumulate)");
  }
  {
    prof::profile p(all_options());
    Tensor s;
    {
      prof::record_function loop("accumulate");
      s = v.sum(0);
    }
    p.stop();
    EXPECT_TRUE(rule_in(p, Rule::LaunchBound).empty()) << describe(prof::advise(p.result()));
  }
}

// A small regression problem trained for `steps` steps.
struct Training {
  std::shared_ptr<nn::LinearImpl> model = std::make_shared<nn::LinearImpl>(8, 4);
  Tensor x = randn({32, 8}), y = randn({32, 4});
  Tensor loss() { return (model->forward(x) - y).square().mean(); }
};

// 4 and 5. zero_grad(false) and a for-loop Adam, against the defaults.
TEST(AdvisorProgram, ZeroedGradsAndForLoopOptimizer) {
  for (bool bad : {true, false}) {
    Training t;
    optim::Adam opt(t.model->parameters(), optim::AdamOptions(1e-3).impl(bad ? optim::Impl::ForLoop : optim::Impl::Fused));
    prof::profile p(all_options());
    for (int i = 0; i < 3; ++i) {
      prof::record_function step("train_step");
      opt.zero_grad(/*set_to_none=*/!bad);
      t.loss().backward();
      opt.step();
    }
    p.stop();
    auto z = rule_in(p, Rule::ZeroedGrads);
    auto o = rule_in(p, Rule::ForLoopOptimizer);
    if (bad) {
      ASSERT_EQ(z.size(), 1u) << describe(prof::advise(p.result()));
      // The first zero_grad finds no gradients yet, but it is still the call.
      EXPECT_EQ(z[0].count, 3);
      EXPECT_EQ(z[0].where[0], "Optimizer.zero_grad (train_step)");
      ASSERT_EQ(o.size(), 1u) << describe(prof::advise(p.result()));
      EXPECT_EQ(o[0].count, 3);
      EXPECT_EQ(o[0].where[0], "Adam.step (train_step)");
      EXPECT_NE(o[0].fix.find("Impl::Fused"), std::string::npos);
    } else {
      EXPECT_TRUE(z.empty()) << describe(prof::advise(p.result()));
      EXPECT_TRUE(o.empty()) << describe(prof::advise(p.result()));
    }
  }
  // Module::zero_grad(false) as well.
  Training t;
  t.loss().backward();
  prof::profile p(all_options());
  for (int i = 0; i < 2; ++i) t.model->zero_grad(false);
  p.stop();
  auto z = rule_in(p, Rule::ZeroedGrads);
  ASSERT_EQ(z.size(), 1u) << describe(prof::advise(p.result()));
  EXPECT_EQ(z[0].count, 2);
  EXPECT_EQ(z[0].where[0], "Module.zero_grad");
}

// 6. Evaluation in grad mode (parameters require grad, no backward), against
// the same under InferenceMode, and against training (backward follows).
TEST(AdvisorProgram, GradModeInference) {
  Training t;
  {
    prof::profile p(all_options());
    for (int i = 0; i < 4; ++i) {
      prof::record_function eval("eval");
      (void)t.model->forward(t.x);
    }
    p.stop();
    auto fs = rule_in(p, Rule::GradModeInference);
    ASSERT_EQ(fs.size(), 1u) << describe(prof::advise(p.result()));
    EXPECT_GE(fs[0].count, 4);
    EXPECT_NE(fs[0].where[0].find("(eval)"), std::string::npos) << fs[0].where[0];
  }
  {
    prof::profile p(all_options());
    for (int i = 0; i < 4; ++i) {
      prof::record_function eval("eval");
      InferenceMode guard;
      (void)t.model->forward(t.x);
    }
    p.stop();
    EXPECT_TRUE(rule_in(p, Rule::GradModeInference).empty()) << describe(prof::advise(p.result()));
  }
  {
    prof::profile p(all_options());
    for (int i = 0; i < 4; ++i) {
      prof::record_function step("train_step");
      t.model->zero_grad();
      t.loss().backward();
    }
    p.stop();
    EXPECT_TRUE(rule_in(p, Rule::GradModeInference).empty()) << describe(prof::advise(p.result()));
  }
}

// 7. x = x + y in a loop, against add_ and add_out.
TEST(AdvisorProgram, AllocatingOps) {
  const int n = static_cast<int>(prof::advisor::kAllocatingOpMinCount) + 2;
  Tensor y = randn({64, 64});
  {
    Tensor x = zeros({64, 64});
    prof::profile p(all_options());
    for (int i = 0; i < n; ++i) {
      prof::record_function loop("loop");
      x = x + y;
    }
    p.stop();
    auto fs = rule_in(p, Rule::AllocatingOps);
    ASSERT_GE(fs.size(), 1u) << describe(prof::advise(p.result()));
    EXPECT_NE(fs[0].title.find("Out-of-place"), std::string::npos);
    EXPECT_EQ(fs[0].count, n);
    EXPECT_EQ(fs[0].where[0], "add (loop)");
  }
  {
    Tensor x = zeros({64, 64}), out = empty({64, 64});
    prof::profile p(all_options());
    for (int i = 0; i < n; ++i) {
      prof::record_function loop("loop");
      x.add_(y);
      add_out(out, x, y);
    }
    p.stop();
    EXPECT_TRUE(rule_in(p, Rule::AllocatingOps).empty()) << describe(prof::advise(p.result()));
  }
}

// 7b. Allocations of a new size every iteration miss the allocator's cache;
// the same size every iteration is served from it after the first.
TEST(AdvisorProgram, AllocatorCacheMisses) {
  {
    cpu::empty_cache();
    prof::profile p(all_options());
    for (int i = 0; i < 6; ++i) {
      prof::record_function loop("grow");
      Tensor a = ones({int64_t{1} << (14 + i)});
      (void)(a + a);
    }
    p.stop();
    auto fs = rule_in(p, Rule::AllocatingOps);
    bool found = false;
    for (const Finding& f : fs)
      if (f.title.find("cache misses") != std::string::npos) {
        found = true;
        EXPECT_GE(f.count, prof::advisor::kCacheMissMinCount);
      }
    EXPECT_TRUE(found) << describe(prof::advise(p.result()));
  }
  {
    cpu::empty_cache();
    prof::profile p(all_options());
    for (int i = 0; i < 6; ++i) {
      prof::record_function loop("steady");
      Tensor a = ones({int64_t{1} << 16});
      (void)(a + a);
    }
    p.stop();
    for (const Finding& f : rule_in(p, Rule::AllocatingOps))
      EXPECT_EQ(f.title.find("cache misses"), std::string::npos) << describe(prof::advise(p.result()));
  }
}

// 8. A dataset that takes milliseconds per sample, loaded on the training
// thread, against an in-memory dataset and real compute per batch.
struct SlowDataset : data::Dataset<SlowDataset> {
  data::Example<> get(size_t i) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return {full({4}, static_cast<double>(i)), full({}, 1.0)};
  }
  std::optional<size_t> size() const override { return 16; }
};

TEST(AdvisorProgram, DataLoaderStall) {
  Tensor w = randn({256, 256});
  {
    data::DataLoader loader(SlowDataset{}, data::DataLoaderOptions().batch_size(4));
    prof::profile p(all_options());
    for (auto& batch : loader) (void)batch.data.sum();
    p.stop();
    auto fs = rule_in(p, Rule::DataLoaderStall);
    ASSERT_EQ(fs.size(), 1u) << describe(prof::advise(p.result()));
    // One wait per batch, and maybe one more for the end of the epoch.
    EXPECT_GE(fs[0].count, 4);
    EXPECT_LE(fs[0].count, 5);
    EXPECT_NE(fs[0].fix.find("num_workers"), std::string::npos);
  }
  {
    data::DataLoader loader(data::TensorDataset(randn({16, 256}), randn({16})),
                            data::DataLoaderOptions().batch_size(4));
    prof::profile p(all_options());
    for (auto& batch : loader) {
      Tensor h = batch.data;
      for (int k = 0; k < 20; ++k) h = h.matmul(w).tanh();  // milliseconds of compute per batch
    }
    p.stop();
    EXPECT_TRUE(rule_in(p, Rule::DataLoaderStall).empty()) << describe(prof::advise(p.result()));
  }
}

// Rules 2 and 9 need a device (rule 9 on the CPU: milliseconds of float32
// GEMMs on an AVX512_BF16 CPU): this small CPU program never triggers them.
TEST(AdvisorProgram, NoDeviceRulesOnCpu) {
  prof::profile p(prof::ProfileOptions().activities({prof::Activity::CPU, prof::Activity::CUDA}).record_shapes(true));
  for (int i = 0; i < 5; ++i) {
    Tensor a = zeros({64, 64}).to(Device(kCPU));
    (void)a.matmul(a);
  }
  p.stop();
  auto fs = prof::advise(p.result());
  EXPECT_TRUE(of_rule(fs, Rule::CpuTensorThenCopy).empty()) << describe(fs);
  EXPECT_TRUE(of_rule(fs, Rule::UnpinnedCopy).empty()) << describe(fs);
  EXPECT_TRUE(of_rule(fs, Rule::TensorCoreMath).empty()) << describe(fs);
}

// ---- load_chrome_trace ------------------------------------------------------------------

// A profile with every kind of data the trace carries: nested scopes, ops
// with shapes, backward nodes, an optimizer step, memory, two threads.
prof::ProfileResult real_profile() {
  Training t;
  optim::SGD opt(t.model->parameters(), optim::SGDOptions(0.1));
  prof::profile p(all_options());
  for (int i = 0; i < 3; ++i) {
    prof::record_function step("train_step");
    opt.zero_grad();
    {
      prof::record_function fwd("forward \"quoted\" <b>");
      Tensor loss = t.loss();
      loss.backward();
    }
    opt.step();
  }
  std::thread([] {
    prof::record_function other("worker scope");
    (void)(ones({8}) * 2);
  }).join();
  return p.result();
}

// Events in a canonical order (the loader sorts by start), with the parent
// named by its (name, start) rather than by index.
struct FlatEvent {
  std::string name, parent_name;
  int64_t parent_start;
  prof::Event e;
};
std::vector<FlatEvent> flatten(const prof::ProfileResult& r) {
  std::vector<FlatEvent> v;
  for (const prof::Event& e : r.events) {
    FlatEvent f{e.name, "", -1, e};
    if (e.parent >= 0) {
      f.parent_name = r.events[e.parent].name;
      f.parent_start = r.events[e.parent].start_ns;
    }
    v.push_back(f);
  }
  std::stable_sort(v.begin(), v.end(), [](const FlatEvent& a, const FlatEvent& b) {
    return std::tie(a.e.thread, a.e.start_ns, b.e.end_ns, a.e.depth) < std::tie(b.e.thread, b.e.start_ns, a.e.end_ns, b.e.depth);
  });
  return v;
}

void expect_same_profile(const prof::ProfileResult& a, const prof::ProfileResult& b) {
  EXPECT_EQ(a.duration_ns, b.duration_ns);
  EXPECT_EQ(a.threads, b.threads);
  EXPECT_EQ(a.options.record_shapes(), b.options.record_shapes());
  EXPECT_EQ(a.options.profile_memory(), b.options.profile_memory());
  EXPECT_EQ(a.options.with_stack(), b.options.with_stack());
  auto fa = flatten(a), fb = flatten(b);
  ASSERT_EQ(fa.size(), fb.size());
  for (size_t i = 0; i < fa.size(); ++i) {
    const prof::Event &x = fa[i].e, &y = fb[i].e;
    SCOPED_TRACE("event " + std::to_string(i) + " " + x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.start_ns, y.start_ns);
    EXPECT_EQ(x.end_ns, y.end_ns);
    EXPECT_EQ(x.thread, y.thread);
    EXPECT_EQ(x.depth, y.depth);
    EXPECT_EQ(fa[i].parent_name, fb[i].parent_name);
    EXPECT_EQ(fa[i].parent_start, fb[i].parent_start);
    EXPECT_EQ(x.shapes, y.shapes);
    EXPECT_EQ(x.dtypes, y.dtypes);
    EXPECT_EQ(x.self_alloc_bytes, y.self_alloc_bytes);
    EXPECT_EQ(x.self_free_bytes, y.self_free_bytes);
    EXPECT_EQ(x.self_allocs, y.self_allocs);
    EXPECT_EQ(x.self_cache_misses, y.self_cache_misses);
    EXPECT_EQ(x.recorded_graph, y.recorded_graph);
    EXPECT_EQ(x.detail, y.detail);
    EXPECT_EQ(x.stack, y.stack);
  }
  ASSERT_EQ(a.memory.size(), b.memory.size());
  for (size_t i = 0; i < a.memory.size(); ++i) {
    EXPECT_EQ(a.memory[i].time_ns, b.memory[i].time_ns);
    EXPECT_EQ(a.memory[i].bytes, b.memory[i].bytes);
    EXPECT_EQ(a.memory[i].allocated, b.memory[i].allocated);
    EXPECT_EQ(a.memory[i].reserved, b.memory[i].reserved);
    EXPECT_EQ(a.memory[i].thread, b.memory[i].thread);
  }
}

TEST(TraceLoad, RoundTripOfARealProfile) {
  prof::ProfileResult r = real_profile();
  ASSERT_FALSE(r.events.empty());
  ASSERT_GE(r.threads.size(), 2u);
  std::string path = temp_path("trace.json");
  prof::export_chrome_trace(r, path);
  prof::ProfileResult back = prof::load_chrome_trace(path);
  expect_same_profile(r, back);
  // The same table and the same advice from the loaded trace.
  EXPECT_EQ(prof::key_averages(r, true).table("self_cpu_time_total", 0),
            prof::key_averages(back, true).table("self_cpu_time_total", 0));
  EXPECT_EQ(prof::advice_text(prof::advise(r)), prof::advice_text(prof::advise(back)));
}

TEST(TraceLoad, RoundTripOfAHandMadeProfile) {
  Builder b;
  b.r.threads = {"main", "loader \xc3\xa9\xe2\x9c\x93"};
  b.r.options.record_shapes(true).profile_memory(true).with_stack(true);
  b.with_stack = true;
  b.begin(EventKind::UserScope, "scope \"one\"\n\t\\ </script>");
  prof::Event& e = b.op("weird\x01name", {{2, 3}, {}, {0, 5}});
  e.dtypes = {"float32", "", "int64"};
  e.self_alloc_bytes = 1234567890123;
  e.self_free_bytes = 7;
  e.self_allocs = 3;
  e.self_cache_misses = 1;
  e.recorded_graph = true;
  b.leaf(EventKind::Sync, "Sync.item", 0, "item");
  b.leaf(EventKind::Copy, "copy", 5, "cpu->cuda:0 non_blocking");
  b.leaf(EventKind::OptimizerStep, "SGD.step", 5, "fused");
  b.leaf(EventKind::DataLoaderWait, "DataLoader.next", 5);
  b.leaf(EventKind::Backward, "MulBackward0", 5);
  b.end();
  b.r.events.push_back(b.r.events[1]);  // the same op on the second thread
  b.r.events.back().thread = 1;
  b.r.events.back().parent = -1;
  b.r.events.back().depth = 0;
  b.r.events.back().stack.clear();
  b.r.memory = {{5, 64, 64, 4096, 0}, {7, -64, 0, 4096, 1}};
  std::string path = temp_path("trace.json");
  prof::export_chrome_trace(b.r, path);
  expect_same_profile(b.r, prof::load_chrome_trace(path));
}

// A trace without the exact nanosecond args (as another tool might write it)
// falls back on ts/dur, and unknown phases, counters and keys are skipped.
TEST(TraceLoad, MinimalChromeTrace) {
  std::string path = temp_path("trace.json");
  write_file(path, R"({"traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "worker"}},
    {"ph": "X", "name": "step", "cat": "user_scope", "pid": 0, "tid": 0, "ts": 1.0, "dur": 10.5, "extra": [1, {"a": null}]},
    {"ph": "X", "name": "add", "cat": "op", "pid": 0, "tid": 0, "ts": 2.0, "dur": 1.25, "args": {"Input Dims": [[2], [2]], "other": true}},
    {"ph": "X", "name": "mul", "cat": "op", "pid": 0, "tid": 1, "ts": 3.0, "dur": 0.5},
    {"ph": "i", "name": "instant", "pid": 0, "tid": 0, "ts": 4.0},
    {"ph": "C", "name": "Other counter", "pid": 0, "tid": 0, "ts": 4.0, "args": {"x": 1}}
  ], "displayTimeUnit": "ns", "otherData": {"version": "x"}})");
  prof::ProfileResult r = prof::load_chrome_trace(path);
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.threads, (std::vector<std::string>{"thread 0", "worker"}));
  EXPECT_EQ(r.events[0].name, "step");
  EXPECT_EQ(r.events[0].start_ns, 1000);
  EXPECT_EQ(r.events[0].end_ns, 11500);
  EXPECT_EQ(r.events[1].name, "add");
  EXPECT_EQ(r.events[1].parent, 0);
  EXPECT_EQ(r.events[1].depth, 1);
  EXPECT_EQ(r.events[1].end_ns, 3250);
  EXPECT_EQ(r.events[1].shapes, (std::vector<std::vector<int64_t>>{{2}, {2}}));
  EXPECT_EQ(r.events[2].parent, -1);  // another thread
  EXPECT_EQ(r.duration_ns, 11500);
}

TEST(TraceLoad, MalformedTracesThrow) {
  std::string path = temp_path("bad.json");
  const char* ev = R"({"ph": "X", "name": "add", "cat": "op", "pid": 0, "tid": 0, "ts": 1.0, "dur": 1.0)";
  auto with = [&](const std::string& args_or_fields) {
    return std::string(R"({"traceEvents": [)") + ev + args_or_fields + "}]}";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "unexpected end"},
      {"[]", "JSON object"},
      {"{}", "no 'traceEvents'"},
      {R"({"traceEvents": {}})", "must be an array"},
      {R"({"traceEvents": [1]})", "must be a object"},
      {R"({"traceEvents": [{"name": "x"}]})", "no 'ph'"},
      {R"({"traceEvents": [{"ph": "X", "name": "x", "cat": "op", "ts": 1, "dur": 1}]})", "no 'tid'"},
      {with(R"(, "cat": "nonsense")"), "unknown category"},
      {with(R"(, "tid": -1)"), "thread id -1"},
      {with(R"(, "tid": 99999999999)"), "thread id"},
      {with(R"(, "dur": -5)"), "'dur' out of range"},
      {with(R"(, "ts": 1e300)"), "'ts' out of range"},
      {with(R"(, "ts": "soon")"), "'ts' must be a number"},
      {with(R"(, "args": {"start_ns": 1.5})"), "must be an integer"},
      {with(R"(, "args": {"start_ns": 99999999999999999999})"), "must be an integer"},
      {with(R"(, "args": {"start_ns": 10, "end_ns": 5})"), "ends before it starts"},
      {with(R"(, "args": {"Input Dims": [[-2]]})"), "negative size"},
      {with(R"(, "args": {"Input Dims": [2]})"), "'Input Dims' must be a array"},
      {with(R"(, "args": {"Input Dims": [[2]], "Input type": ["float32", "int64"]})"), "different lengths"},
      {with(R"(, "args": {"recorded_graph": 1})"), "'recorded_graph' must be a boolean"},
      {with(R"(, "args": {"stack": "outer"})"), "'stack' must be a array"},
      {with(R"(, "name": "")"), "without a name"},
      {std::string(R"({"traceEvents": [], "brisk": {"version": 2}})"), "version 2"},
      {std::string(R"({"traceEvents": [], "brisk": {"duration_ns": -1}})"), "negative"},
      {std::string(R"({"traceEvents": [], "brisk": {"threads": [1]}})"), "the \"brisk\" header: 'threads' must be a string"},
      {std::string(R"({"traceEvents": [], "brisk": {"options": {"with_stack": "yes"}}})"), "'with_stack'"},
      {std::string(R"({"traceEvents": []} trailing)"), "unexpected data"},
      {std::string(R"({"traceEvents": [], "x": tru})"), "invalid JSON"},
      {std::string(R"({"traceEvents": [,]})"), "invalid JSON"},
      {std::string("{\"traceEvents\": [], \"x\": \"\xff\"}"), "UTF-8"},
  };
  for (const auto& [text, piece] : cases) {
    SCOPED_TRACE(text);
    write_file(path, text);
    brisk::testing::expect_error([&] { prof::load_chrome_trace(path); }, {"[load_chrome_trace]", piece});
  }
  brisk::testing::expect_error([&] { prof::load_chrome_trace(temp_path("missing.json")); },
                        {"[load_chrome_trace]", "cannot open"});
  brisk::testing::expect_error([&] { prof::load_chrome_trace(::testing::TempDir()); },
                               {"[load_chrome_trace]", "is a directory"});
}

// Every truncation of a real trace, and every single-byte corruption of a
// small one, either loads or throws brisk::Error.
TEST(TraceLoad, TruncatedAndCorruptedTraces) {
  Builder b;
  b.r.options.record_shapes(true).profile_memory(true).with_stack(true);
  b.with_stack = true;
  b.begin(EventKind::UserScope, "step");
  b.op("add", {{2, 3}, {3}}).self_alloc_bytes = 24;
  b.end();
  b.r.memory = {{5, 64, 64, 4096, 0}};
  std::string path = temp_path("trace.json");
  prof::export_chrome_trace(b.r, path);
  const std::string good = read_file(path);
  ASSERT_FALSE(good.empty());
  std::string bad = temp_path("bad.json");
  size_t loaded = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    write_file(bad, good.substr(0, n));
    try {
      prof::load_chrome_trace(bad);
      ++loaded;
    } catch (const brisk::Error&) {
    }
  }
  // Only a prefix that is the whole document minus trailing whitespace loads.
  EXPECT_LE(loaded, 2u);
  const char replacements[] = {'"', '{', '}', '[', ']', ',', ':', '0', '9', '-', 'x', '\0', '\\'};
  for (size_t i = 0; i < good.size(); ++i)
    for (char c : replacements) {
      std::string t = good;
      t[i] = c;
      write_file(bad, t);
      try {
        prof::load_chrome_trace(bad);
      } catch (const brisk::Error&) {
      }
    }
}

// ---- HTML report and brisk-prof ------------------------------------------------------------

TEST(HtmlReport, SelfContainedWithOpsAndAdvice) {
  Tensor w = randn({16}), x = randn({16});
  prof::profile p(all_options());
  for (int i = 0; i < 5; ++i) {
    prof::record_function step("report_step");
    (void)(w * x).sum().item<double>();
  }
  p.stop();
  std::string path = temp_path("report.html");
  prof::export_html_report(p.result(), path);
  const std::string html = read_file(path);
  ASSERT_FALSE(html.empty());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  for (const char* piece : {"report_step", "SyncInLoop", "item (report_step)", "<canvas", "<svg", "Self CPU"})
    EXPECT_NE(html.find(piece), std::string::npos) << piece;
  // Every op recorded is named in the table (a cell of its own).
  size_t ops = 0;
  for (const prof::Event& e : p.result().events)
    if (e.kind == EventKind::Op) {
      ++ops;
      EXPECT_NE(html.find("<td>" + e.name + "</td>"), std::string::npos) << e.name;
    }
  EXPECT_GE(ops, 5u);
  // Nothing fetched from elsewhere.
  for (const char* piece : {"http://", "https://", "<link", "src=", "@import", "url("})
    EXPECT_EQ(html.find(piece), std::string::npos) << piece;
  // No temporary file left next to it.
  EXPECT_EQ(read_file(path + ".tmp"), "");
}

TEST(HtmlReport, EscapesNames) {
  Builder b;
  b.begin(EventKind::UserScope, "<script>alert(1)</script>");
  b.op("add & \"sub\"", {{2}});
  b.end();
  std::string path = temp_path("report.html");
  prof::export_html_report(b.r, path);
  const std::string html = read_file(path);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("</script>\""), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("add &amp; &quot;sub&quot;"), std::string::npos);
}

TEST(HtmlReport, EmptyProfileAndBadPath) {
  prof::ProfileResult r;
  std::string path = temp_path("empty.html");
  prof::export_html_report(r, path);
  EXPECT_NE(read_file(path).find("No findings"), std::string::npos);
  brisk::testing::expect_error([&] { prof::export_html_report(r, temp_path("no/such/dir/report.html")); },
                        {"[export_html_report]"});
}

#ifdef BRISK_PROF_EXE
// Runs brisk-prof with `args`; returns its exit status and stdout + stderr.
std::pair<int, std::string> run_tool(const std::string& args) {
  std::string cmd = std::string("'") + BRISK_PROF_EXE + "' " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return {-1, ""};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  int status = pclose(f);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(BriskProf, SummarisesATrace) {
  Tensor w = randn({16}), x = randn({16});
  prof::profile p(all_options());
  for (int i = 0; i < 5; ++i) {
    prof::record_function step("cli_step");
    (void)(w * x).sum().item<double>();
  }
  p.stop();
  std::string trace = temp_path("trace.json"), html = temp_path("report.html");
  p.export_chrome_trace(trace);
  std::remove(html.c_str());
  auto [rc, out] = run_tool("'" + trace + "' --html '" + html + "' --sort self_cpu_time_total --limit 5");
  EXPECT_EQ(rc, 0) << out;
  for (const char* piece : {"Name", "Self CPU %", "# of Calls", "Self CPU time total", "cli_step", "Advisor:",
                            "[SyncInLoop]", "item (cli_step)", "fix:"})
    EXPECT_NE(out.find(piece), std::string::npos) << piece << " in:\n" << out;
  EXPECT_NE(read_file(html).find("cli_step"), std::string::npos);

  std::tie(rc, out) = run_tool("'" + trace + "' --group-by-shape --limit 0");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Input Shapes"), std::string::npos) << out;
}

TEST(BriskProf, Errors) {
  auto [rc, out] = run_tool("");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("usage: brisk-prof"), std::string::npos) << out;
  std::tie(rc, out) = run_tool("--frobnicate x.json");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("unknown option --frobnicate"), std::string::npos) << out;
  std::tie(rc, out) = run_tool("x.json --limit many");
  EXPECT_EQ(rc, 2);
  std::tie(rc, out) = run_tool("--help");
  EXPECT_EQ(rc, 0);
  std::string bad = temp_path("bad.json");
  write_file(bad, "{\"traceEvents\": [");
  std::tie(rc, out) = run_tool("'" + bad + "'");
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("[load_chrome_trace]"), std::string::npos) << out;
  std::tie(rc, out) = run_tool("'" + temp_path("missing.json") + "'");
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("cannot open"), std::string::npos) << out;
}
#endif
