// brisk::amp::autocast against PyTorch's (torch.autocast, torch 2.15): the
// op table's two policy columns against torch's lists
// (autocast_policies.txt, written by tools/amp/autocast_policies.py), every
// listed op's hook, output dtypes per policy, float64 and integer inputs,
// nesting, threads, the weight-cast cache, gradients, compile's guard.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "amp/autocast_calls.h"
#include "brisk/brisk.h"
#include "core/autocast.h"
#include "core/op_table.h"
#include "test_util.h"

using namespace brisk;
namespace F = brisk::nn::functional;
using amp::autocast;
using brisk::testing::close;
using brisk::testing::expect_error;

namespace {

struct ThreadsOne {
  ThreadsOne() { set_num_threads(1); }
} threads_one;

AmpPolicy parse_policy(const std::string& s) {
  for (AmpPolicy p : {AmpPolicy::Keep, AmpPolicy::Lower, AmpPolicy::Fp32, AmpPolicy::Promote, AmpPolicy::Banned})
    if (s == amp_policy_name(p)) return p;
  ADD_FAILURE() << "unknown policy " << s;
  return AmpPolicy::Keep;
}

// One call of each op whose row is not Keep in some column (its first
// floating tensor argument in dtype `a`, the others in `b`; on the CPU
// here), the listed rows and their enumerators: tests/amp/autocast_calls.h,
// shared with tests/cuda/test_cuda_amp.cpp.
using brisk::testing::amp_calls::Call;
using brisk::testing::amp_calls::calls;
using brisk::testing::amp_calls::listed_rows;
using brisk::testing::amp_calls::op_of;

// Runs `call` for the row under an autocast scope (cuda_lists: the CPU
// follows the CUDA column); returns the result and whether the hook cast.
struct Outcome {
  Tensor result;
  bool hooked;
};
Outcome run_listed(const OpInfo& row, const Call& call, ScalarType a, ScalarType b, bool cuda_lists,
                   ScalarType dtype = kBFloat16) {
  amp::detail::set_cpu_follows_cuda_lists_for_testing(cuda_lists);
  const int64_t before = amp::detail::redispatch_counts()[static_cast<size_t>(op_of(row))];
  Outcome o;
  {
    autocast ac(kCPU, dtype);
    o.result = call(a, b);
  }
  o.hooked = amp::detail::redispatch_counts()[static_cast<size_t>(op_of(row))] > before;
  amp::detail::set_cpu_follows_cuda_lists_for_testing(false);
  return o;
}

}  // namespace

TEST(Autocast, PoliciesAreTorchs) {
  const char* dir = std::getenv("BRISK_TEST_DIR");
  if (dir == nullptr) GTEST_SKIP() << "BRISK_TEST_DIR is not set (CTest sets it)";
  std::ifstream in(std::filesystem::path(dir) / "amp" / "autocast_policies.txt");
  ASSERT_TRUE(in) << "tests/amp/autocast_policies.txt is missing";
  std::set<std::string> seen;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string name, cpu, cuda;
    ss >> name >> cpu >> cuda;
    const OpLookup l = find_op(name);
    ASSERT_NE(l.info, nullptr) << name << " is in autocast_policies.txt but not in the op table: rerun "
                                         "tools/amp/autocast_policies.py";
    EXPECT_FALSE(l.inplace || l.out) << name;
    EXPECT_EQ(amp_policy_name(l.info->cpu_amp), cpu) << name << " on the CPU";
    EXPECT_EQ(amp_policy_name(l.info->amp), cuda) << name << " on CUDA";
    seen.insert(name);
    ++n;
  }
  EXPECT_EQ(n, kNumTableOps) << "a row of the op table is not in autocast_policies.txt: rerun "
                                "tools/amp/autocast_policies.py";
  for (int i = 0; i < kNumTableOps; ++i) EXPECT_TRUE(seen.count(op_info(static_cast<Op>(i)).name)) << op_info(static_cast<Op>(i)).name;
}

// Every listed row's front end has the hook: the op runs cast under both
// columns' policies (the CUDA column's on CPU tensors, through the test
// switch), with the output dtype the policy gives.
TEST(Autocast, EveryListedOpCastsByItsPolicy) {
  manual_seed(0);
  for (const OpInfo* row : listed_rows()) {
    auto it = calls().find(row->name);
    ASSERT_NE(it, calls().end()) << row->name << " is on an autocast list but tests/amp/autocast_calls.h has no call";
    for (bool cuda_lists : {false, true}) {
      const AmpPolicy p = cuda_lists ? row->amp : row->cpu_amp;
      const std::string where = std::string(row->name) + (cuda_lists ? " (CUDA list)" : " (CPU list)");
      switch (p) {
        case AmpPolicy::Keep: {
          // not cast: float32 stays float32
          Outcome o = run_listed(*row, it->second, kFloat, kFloat, cuda_lists);
          EXPECT_FALSE(o.hooked) << where;
          EXPECT_EQ(o.result.dtype(), kFloat) << where;
          break;
        }
        case AmpPolicy::Lower: {
          Outcome o = run_listed(*row, it->second, kFloat, kFloat, cuda_lists);
          EXPECT_TRUE(o.hooked) << where;
          EXPECT_EQ(o.result.dtype(), kBFloat16) << where;
          Outcome h = run_listed(*row, it->second, kFloat, kFloat, cuda_lists, kHalf);
          EXPECT_EQ(h.result.dtype(), kHalf) << where << " with float16";
          break;
        }
        case AmpPolicy::Fp32: {
          Outcome o = run_listed(*row, it->second, kBFloat16, kBFloat16, cuda_lists);
          EXPECT_TRUE(o.hooked) << where;
          EXPECT_EQ(o.result.dtype(), kFloat) << where;
          break;
        }
        case AmpPolicy::Promote: {
          Outcome o = run_listed(*row, it->second, kBFloat16, kFloat, cuda_lists);
          EXPECT_TRUE(o.hooked) << where;
          EXPECT_EQ(o.result.dtype(), kFloat) << where;
          Outcome l = run_listed(*row, it->second, kBFloat16, kBFloat16, cuda_lists);
          EXPECT_EQ(l.result.dtype(), kBFloat16) << where;
          break;
        }
        case AmpPolicy::Banned: {
          amp::detail::set_cpu_follows_cuda_lists_for_testing(cuda_lists);
          {
            autocast ac(kCPU);
            expect_error([&] { it->second(kFloat, kFloat); }, {row->name, "binary_cross_entropy_with_logits"});
          }
          amp::detail::set_cpu_follows_cuda_lists_for_testing(false);
          break;
        }
      }
    }
  }
}

TEST(Autocast, Float64AndIntegersAreNeverCast) {
  Tensor a = randn({3, 4}, kDouble), b = randn({4, 2}, kDouble);
  autocast ac(kCPU);
  EXPECT_EQ(mm(a, b).dtype(), kDouble);
  EXPECT_EQ(F::mse_loss(a, a).dtype(), kDouble);
  EXPECT_EQ(mm(arange(6).view({2, 3}), arange(6).view({3, 2})).dtype(), kInt64);
  // float64 among the inputs of a promote op does not widen the others (PyTorch: ignored)
  EXPECT_EQ(cat({randn({2}).to(kBFloat16), randn({2}).to(kBFloat16)}).dtype(), kBFloat16);
}

TEST(Autocast, ScopeStateNestsAndRestores) {
  EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
  EXPECT_EQ(amp::get_autocast_dtype(kCPU), kBFloat16);
  EXPECT_EQ(amp::get_autocast_dtype(kCUDA), kHalf);
  Tensor a = randn({2, 3}), b = randn({3, 2});
  {
    autocast outer(kCPU);
    EXPECT_TRUE(amp::is_autocast_enabled(kCPU));
    EXPECT_FALSE(amp::is_autocast_enabled(kCUDA));
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    {
      autocast off(kCPU, std::nullopt, false);
      EXPECT_EQ(mm(a, b).dtype(), kFloat);
      {
        autocast half(kCPU, kHalf);
        EXPECT_EQ(mm(a, b).dtype(), kHalf);
      }
      EXPECT_EQ(mm(a, b).dtype(), kFloat);
    }
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    // a CUDA scope leaves CPU tensors alone
    autocast cuda_only(kCUDA);
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
  }
  EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
  EXPECT_EQ(mm(a, b).dtype(), kFloat);
  {
    autocast cuda_only(kCUDA);
    EXPECT_EQ(mm(a, b).dtype(), kFloat);
  }
  expect_error([] { autocast bad(kCPU, kFloat); }, {"autocast", "float16 or bfloat16", "float32"});
}

TEST(Autocast, ScopesArePerThread) {
  Tensor a = randn({2, 3}), b = randn({3, 2});
  autocast ac(kCPU);
  ScalarType other = kBFloat16;
  std::thread t([&] { other = mm(a, b).dtype(); });
  t.join();
  EXPECT_EQ(other, kFloat);
  EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
  ScalarType inner = kFloat;
  std::thread u([&] {
    autocast mine(kCPU, kHalf);
    inner = mm(a, b).dtype();
  });
  u.join();
  EXPECT_EQ(inner, kHalf);
  EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
}

// The listed op, its casts and the ops it runs inside are recorded once.
TEST(Autocast, MixedInputsOfAPromoteOpThatPyTorchRefuses) {
  autocast ac(kCPU);  // bfloat16
  expect_error([] { cat({randn({2}).to(kHalf), randn({2}).to(kBFloat16)}); }, {"cat", "autocast", "float16"});
}

TEST(Autocast, WeightCastCacheCastsAParameterOncePerScopeAndSeesUpdates) {
  manual_seed(1);
  nn::Linear lin(4, 3);
  Tensor x = randn({2, 4});
  Tensor w = lin->weight;
  {
    autocast ac(kCPU);
    const Tensor y1 = lin->forward(x);
    const Tensor y2 = lin->forward(x);
    EXPECT_EQ(y1.dtype(), kBFloat16);
    EXPECT_TRUE(equal(y1, y2));
    // a change to the parameter inside the scope is seen (PyTorch's cache would hand back the old cast)
    {
      NoGradGuard ng;
      w.add_(1.0);
    }
    const Tensor y3 = lin->forward(x);
    const Tensor want = F::linear(x.to(kBFloat16), w.detach().to(kBFloat16), lin->bias.detach().to(kBFloat16));
    EXPECT_TRUE(equal(y3, want));
    EXPECT_FALSE(equal(y3, y1));
    // a cast made under no_grad is not handed to a call that records a graph
    Tensor y4;
    {
      NoGradGuard ng;
      y4 = lin->forward(x);
    }
    EXPECT_FALSE(y4.requires_grad());
    EXPECT_TRUE(lin->forward(x).requires_grad());
  }
}

// Training under autocast: gradients of float32 parameters are float32,
// close to the float32 run's (bfloat16 products), and two iterations in one
// scope (reusing cached casts) work.
TEST(Autocast, GradientsUnderAutocastMatchFloat32) {
  manual_seed(2);
  nn::Sequential net(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 4));
  Tensor x = randn({6, 8});
  Tensor target = tensor<int64_t>({0, 1, 2, 3, 0, 1});
  auto grads = [&] {
    std::vector<Tensor> g;
    for (auto& p : net->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  net->zero_grad();
  F::cross_entropy(net->forward(x), target).backward();
  const auto ref = grads();
  net->zero_grad();
  Tensor loss;
  {
    autocast ac(kCPU);
    loss = F::cross_entropy(net->forward(x), target);
  }
  EXPECT_EQ(loss.dtype(), kFloat);
  loss.backward();
  const auto got = grads();
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), kFloat);
    EXPECT_TRUE(close(got[i], ref[i], 5e-2, 2e-2)) << "parameter " << i;
  }
  // backward inside the scope, twice in one scope: the same gradients
  net->zero_grad();
  {
    autocast ac(kCPU);
    F::cross_entropy(net->forward(x), target).backward();
    F::cross_entropy(net->forward(x), target).backward();
  }
  const auto twice = grads();
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_TRUE(close(twice[i], got[i] * 2, 1e-2, 1e-3)) << "parameter " << i;
}

TEST(Autocast, CompiledFunctionsGuardOnTheAutocastState) {
  Tensor w = randn({4, 3});
  auto f = brisk::compile([&](const Tensor& x) { return F::gelu(mm(x, w)); });
  Tensor x = randn({2, 4});
  EXPECT_EQ(f(x).dtype(), kFloat);
  Tensor eager;
  {
    autocast ac(kCPU);
    eager = F::gelu(mm(x, w));
    EXPECT_EQ(f(x).dtype(), kBFloat16);
    EXPECT_TRUE(equal(f(x), eager));
  }
  EXPECT_EQ(f(x).dtype(), kFloat);
  EXPECT_TRUE(close(f(x), F::gelu(mm(x, w))));
}
