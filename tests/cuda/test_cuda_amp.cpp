// brisk::amp on CUDA tensors (issue 16): torch.autocast's CUDA lists and
// torch.amp.GradScaler on a GPU.
// - every row on an autocast list (tests/amp/autocast_calls.h, the calls
//   tests/amp/test_autocast.cpp runs on the CPU) run on CUDA tensors under
//   autocast(kCUDA, float16) and autocast(kCUDA, bfloat16): the output dtype
//   by the row's CUDA policy (the `amp` column, torch 2.15's CUDA lists);
// - the values of the GEMM-like Lower rows (matmuls, linear, einsum,
//   convolutions) under float16 / bfloat16 autocast against float32 on the
//   CPU (float32 accumulation);
// - an MLP trained with autocast(kCUDA, float16) + GradScaler + SGD against
//   the same MLP in float32, the scale's growth, and an injected inf that
//   skips the step and halves the scale;
// - the gradients of linear + a float32-list op under autocast against
//   float32.
// The GPU tests skip without a device (REQUIRE_CUDA); the host test runs in
// every build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "amp/autocast_calls.h"
#include "brisk/brisk.h"
#include "core/autocast.h"
#include "core/op_table.h"
#include "test_util.h"

using namespace brisk;
namespace F = brisk::nn::functional;
using amp::autocast;
using brisk::testing::expect_error;
using brisk::testing::amp_calls::Call;
using brisk::testing::amp_calls::calls;
using brisk::testing::amp_calls::listed_rows;
using brisk::testing::amp_calls::op_of;

namespace {

const Device kGpu(kCUDA);

/// ||got - want|| / ||want||, in float64 on the CPU.
double rel_err(const Tensor& got, const Tensor& want) {
  const Tensor g = got.cpu().to(kDouble), w = want.cpu().to(kDouble);
  return (g - w).norm().item<double>() / w.norm().item<double>();
}

std::string dname(ScalarType t) { return std::string(dtype_name(t)); }

std::string lower_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

/// An error that says brisk has no CUDA kernel for the op or for the dtype
/// (core/dispatch.cpp's "not implemented on cuda (kernel ...)", the front
/// ends' "not implemented on cuda:0", the CUDA kernels' "CUDA kernel does
/// not support dtype ..."): such a row is listed as skipped; any other error
/// fails the test.
bool no_cuda_kernel(const Error& e) {
  const std::string m = lower_case(e.what());
  for (const char* p : {"not implemented on cuda", "no cuda kernel", "no cuda multi-tensor kernel",
                        "no fused cuda kernel", "cuda kernel does not support",
                        "cuda reduction kernel does not support"})
    if (m.find(p) != std::string::npos) return true;
  return false;
}

/// Runs `call` on CUDA tensors under autocast(kCUDA, dtype); whether the
/// row's hook cast (the redispatch count of the row grew).
struct Outcome {
  Tensor result;
  bool hooked;
};
Outcome run_on_cuda(const OpInfo& row, const Call& call, ScalarType a, ScalarType b, ScalarType dtype) {
  const int64_t before = amp::detail::redispatch_counts()[static_cast<size_t>(op_of(row))];
  Outcome o;
  {
    autocast ac(kCUDA, dtype);
    o.result = call(a, b, kGpu);
  }
  o.hooked = amp::detail::redispatch_counts()[static_cast<size_t>(op_of(row))] > before;
  return o;
}

/// The dtype checks of one row under autocast(kCUDA, lower), by its CUDA policy.
void check_row_on_cuda(const OpInfo& row, const Call& call, ScalarType lower, const std::string& where) {
  auto expect = [&](const Outcome& o, ScalarType want, bool hooked, const char* inputs) {
    ASSERT_TRUE(o.result.defined()) << where << ", " << inputs;
    EXPECT_EQ(o.result.device().type, kCUDA) << where << ", " << inputs;
    EXPECT_EQ(o.result.dtype(), want) << where << ", " << inputs;
    EXPECT_EQ(o.hooked, hooked) << where << ", " << inputs << (hooked ? ": the hook did not run" : ": the hook ran");
  };
  switch (row.amp) {
    case AmpPolicy::Keep:  // runs as called: float32 stays float32, 16-bit stays 16-bit
      expect(run_on_cuda(row, call, kFloat, kFloat, lower), kFloat, false, "float32 inputs");
      expect(run_on_cuda(row, call, lower, lower, lower), lower, false, "16-bit inputs");
      break;
    case AmpPolicy::Lower:  // float32 inputs run in the autocast dtype
      expect(run_on_cuda(row, call, kFloat, kFloat, lower), lower, true, "float32 inputs");
      break;
    case AmpPolicy::Fp32:  // 16-bit inputs run in float32
      expect(run_on_cuda(row, call, lower, lower, lower), kFloat, true, "16-bit inputs");
      break;
    case AmpPolicy::Promote:  // the widest input
      expect(run_on_cuda(row, call, lower, kFloat, lower), kFloat, true, "16-bit and float32 inputs");
      expect(run_on_cuda(row, call, lower, lower, lower), lower, true, "16-bit inputs");
      break;
    case AmpPolicy::Banned: {
      autocast ac(kCUDA, lower);
      expect_error([&] { call(kFloat, kFloat, kGpu); }, {row.name, "binary_cross_entropy_with_logits"});
      break;
    }
  }
}

// ---- the values of the GEMM-like Lower rows -------------------------------------------------

/// A GEMM-like row with inputs large enough that the accumulation dtype
/// shows (a float16 running sum of 256 products errs by about 3e-3; float32
/// accumulation leaves the roundings of inputs and output, about 3e-4).
struct ValueCase {
  const char* row;
  std::vector<std::vector<int64_t>> shapes;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
};
const std::vector<ValueCase>& value_cases() {
  using V = std::vector<Tensor>;
  static const std::vector<ValueCase> v = {
      {"mm", {{128, 256}, {256, 96}}, [](const V& x) { return mm(x[0], x[1]); }},
      {"bmm", {{4, 64, 256}, {4, 256, 48}}, [](const V& x) { return bmm(x[0], x[1]); }},
      {"matmul", {{4, 64, 256}, {256, 80}}, [](const V& x) { return matmul(x[0], x[1]); }},
      {"addmm", {{64, 96}, {64, 256}, {256, 96}}, [](const V& x) { return addmm(x[0], x[1], x[2]); }},
      {"mv", {{256, 256}, {256}}, [](const V& x) { return mv(x[0], x[1]); }},
      {"linear", {{64, 256}, {96, 256}, {96}}, [](const V& x) { return F::linear(x[0], x[1], x[2]); }},
      {"einsum", {{4, 32, 256}, {4, 256, 40}}, [](const V& x) { return einsum("bij,bjk->bik", {x[0], x[1]}); }},
      {"conv1d", {{4, 16, 64}, {32, 16, 5}, {32}}, [](const V& x) { return F::conv1d(x[0], x[1], x[2], 1, 2); }},
      {"conv2d", {{4, 16, 16, 16}, {32, 16, 3, 3}, {32}},
       [](const V& x) { return F::conv2d(x[0], x[1], x[2], 1, 1); }},
      {"conv3d", {{2, 8, 6, 6, 6}, {16, 8, 3, 3, 3}, {16}},
       [](const V& x) { return F::conv3d(x[0], x[1], x[2], 1, 1); }},
      {"conv_transpose1d", {{4, 16, 32}, {16, 24, 4}, {24}},
       [](const V& x) { return F::conv_transpose1d(x[0], x[1], x[2], 2); }},
      {"conv_transpose2d", {{4, 16, 8, 8}, {16, 24, 3, 3}, {24}},
       [](const V& x) { return F::conv_transpose2d(x[0], x[1], x[2], 2); }},
      {"conv_transpose3d", {{2, 8, 4, 4, 4}, {8, 12, 3, 3, 3}, {12}},
       [](const V& x) { return F::conv_transpose3d(x[0], x[1], x[2], 2); }},
  };
  return v;
}
/// Lower rows whose values are not checked here: attention is not one
/// product but two with a softmax (in the autocast dtype) between them.
const std::set<std::string> kLowerNotGemmLike = {"scaled_dot_product_attention"};

/// Fewer (row, dtype) pairs than this may be skipped for want of a CUDA
/// kernel. None is expected: every listed op runs on CUDA, through a CUDA
/// kernel or a composite of ops that have one (layer_norm, rms_norm,
/// cross_entropy, attention and the softmax gradients fall back to
/// composites where the slot has no CUDA kernel; conv3d and the transposed
/// 1-D/3-D convolutions are built on conv2d / conv_transpose2d).
constexpr size_t kMaxSkipped = 4;

}  // namespace

// Host (every build): the value table holds exactly the GEMM-like Lower rows.
TEST(CudaAmpTables, ValueTableCoversTheLowerRows) {
  std::set<std::string> in_table;
  for (const ValueCase& c : value_cases()) {
    const OpLookup l = find_op(c.row);
    ASSERT_NE(l.info, nullptr) << c.row;
    EXPECT_EQ(l.info->amp, AmpPolicy::Lower) << c.row << " is not on the CUDA lower-precision list";
    in_table.insert(c.row);
  }
  for (const OpInfo* row : listed_rows())
    if (row->amp == AmpPolicy::Lower)
      EXPECT_TRUE(in_table.count(row->name) || kLowerNotGemmLike.count(row->name))
          << row->name << " is on the CUDA lower-precision list but not in test_cuda_amp.cpp's value table";
  for (const OpInfo* row : listed_rows())
    EXPECT_TRUE(calls().count(row->name)) << row->name << ": tests/amp/autocast_calls.h has no call";
}

// Every listed row on CUDA tensors: the output dtype by the row's CUDA
// policy, under float16 and bfloat16 autocast.
TEST(CudaAmp, EveryListedOpOnCudaTensors) {
  REQUIRE_CUDA();
  manual_seed(0);
  std::vector<std::string> skipped;
  int checked = 0, rows = 0;
  for (const OpInfo* row : listed_rows()) {
    auto it = calls().find(row->name);
    ASSERT_NE(it, calls().end()) << row->name << " is on an autocast list but tests/amp/autocast_calls.h has no call";
    ++rows;
    for (ScalarType lower : {kHalf, kBFloat16}) {
      const std::string where = std::string(row->name) + " (CUDA list: " + amp_policy_name(row->amp) +
                                ", autocast " + dname(lower) + ")";
      try {
        check_row_on_cuda(*row, it->second, lower, where);
        ++checked;
      } catch (const Error& e) {
        if (no_cuda_kernel(e))
          skipped.push_back(where + ": " + e.what());
        else
          ADD_FAILURE() << where << " threw: " << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << " threw: " << e.what();
      }
    }
  }
  std::printf("[ CudaAmp  ] %d listed rows, %d (row, dtype) pairs checked on CUDA, %zu skipped (no CUDA kernel)%s\n",
              rows, checked, skipped.size(), skipped.empty() ? "" : ":");
  for (const std::string& s : skipped) std::printf("[ CudaAmp  ]   skipped %s\n", s.c_str());
  EXPECT_LT(skipped.size(), kMaxSkipped) << "too many listed ops have no CUDA kernel (see the list above)";
}

// The GEMM-like Lower rows under float16 (and bfloat16) autocast on CUDA
// against float32 on the CPU: float32 accumulation, one rounding of inputs
// and output.
TEST(CudaAmp, GemmLikeLowerRowsMatchFloat32) {
  REQUIRE_CUDA();
  struct Tol {
    ScalarType dt;
    double max_rel;
  };
  for (const Tol& t : {Tol{kHalf, 2e-3}, Tol{kBFloat16, 1.5e-2}})
    for (const ValueCase& c : value_cases()) {
      const std::string where = std::string(c.row) + " under autocast " + dname(t.dt);
      manual_seed(11);
      std::vector<Tensor> cpu, gpu;
      for (const auto& s : c.shapes) {
        cpu.push_back(rand(s).mul(2).add(-1));  // uniform in [-1, 1)
        gpu.push_back(cpu.back().to(kGpu));
      }
      const Tensor want = c.fn(cpu);
      ASSERT_EQ(want.dtype(), kFloat) << where;
      Tensor got;
      try {
        autocast ac(kCUDA, t.dt);
        got = c.fn(gpu);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << " threw: " << e.what();
        continue;
      }
      EXPECT_EQ(got.device().type, kCUDA) << where;
      EXPECT_EQ(got.dtype(), t.dt) << where;
      ASSERT_EQ(got.sizes(), want.sizes()) << where;
      const double err = rel_err(got, want);
      EXPECT_LT(err, t.max_rel) << where << ": relative error of the norm " << err;
      std::printf("[ CudaAmp  ] %-18s %-8s relative error %.2e\n", c.row, dname(t.dt).c_str(), err);
    }
}

// An MLP trained 20 steps with autocast(kCUDA, float16) + GradScaler + SGD
// against the same MLP trained in float32 on CUDA; the scale grows every
// growth_interval good steps; an inf injected into a gradient skips the step
// (the parameters stay bit for bit) and halves the scale.
TEST(CudaAmp, GradScalerOnCuda) {
  REQUIRE_CUDA();
  manual_seed(5);
  const Tensor x = randn({64, 32}).to(kGpu), y = randn({64, 8}).to(kGpu);
  auto make_net = [] {
    manual_seed(7);  // the same initial parameters for both runs
    nn::Sequential net(nn::Linear(32, 64), nn::ReLU(), nn::Linear(64, 64), nn::ReLU(), nn::Linear(64, 8));
    net->to(kGpu);
    return net;
  };
  const int kSteps = 20;
  const double kInit = 256, kGrowth = 2, kBackoff = 0.5;
  const int64_t kInterval = 5;

  // float32
  std::vector<double> ref;
  {
    nn::Sequential net = make_net();
    optim::SGD opt(net->parameters(), optim::SGDOptions(0.05));
    for (int i = 0; i < kSteps; ++i) {
      opt.zero_grad();
      Tensor loss = F::mse_loss(net->forward(x), y);
      ref.push_back(loss.cpu().item<double>());
      loss.backward();
      opt.step();
    }
  }

  // float16 autocast + GradScaler
  nn::Sequential net = make_net();
  std::vector<Tensor> params = net->parameters();
  optim::SGD opt(params, optim::SGDOptions(0.05));
  amp::GradScaler scaler(amp::GradScalerOptions()
                             .set_init_scale(kInit)
                             .set_growth_factor(kGrowth)
                             .set_backoff_factor(kBackoff)
                             .set_growth_interval(kInterval));
  auto forward = [&] {
    autocast ac(kCUDA, kHalf);
    const Tensor out = net->forward(x);
    EXPECT_EQ(out.dtype(), kHalf);
    return F::mse_loss(out, y);  // float32 list
  };
  for (int i = 0; i < kSteps; ++i) {
    opt.zero_grad();
    const Tensor loss = forward();
    ASSERT_EQ(loss.dtype(), kFloat);
    const double l = loss.cpu().item<double>();
    EXPECT_NEAR(l, ref[size_t(i)], 2e-2 * std::abs(ref[size_t(i)])) << "step " << i;
    scaler.scale(loss).backward();
    for (const Tensor& p : params) ASSERT_EQ(p.grad().dtype(), kFloat);
    scaler.step(opt);
    scaler.update();
    const int good = i + 1;  // good steps in a row so far
    EXPECT_EQ(scaler.get_scale(), kInit * std::pow(kGrowth, good / kInterval)) << "after step " << i;
    EXPECT_EQ(scaler.get_growth_tracker(), good % kInterval) << "after step " << i;
  }
  EXPECT_LT(ref.back(), ref.front()) << "the float32 run did not train";

  // an inf in one gradient, after backward and before step: the step is skipped, the scale backs off
  const double scale_before = scaler.get_scale();
  opt.zero_grad();
  scaler.scale(forward()).backward();
  {
    NoGradGuard ng;
    params[2].grad().select(0, 1).select(0, 3).fill_(std::numeric_limits<double>::infinity());
  }
  std::vector<Tensor> before;
  for (const Tensor& p : params) before.push_back(p.detach().cpu().clone());  // (a copy on any device)
  scaler.step(opt);
  for (size_t k = 0; k < params.size(); ++k)
    EXPECT_TRUE(params[k].detach().cpu().equal(before[k])) << "parameter " << k << " changed in a skipped step";
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), scale_before * kBackoff);
  EXPECT_EQ(scaler.get_growth_tracker(), 0);

  // the next good step steps again, at the backed-off scale
  opt.zero_grad();
  scaler.scale(forward()).backward();
  scaler.step(opt);
  scaler.update();
  bool moved = false;
  for (size_t k = 0; k < params.size(); ++k) moved = moved || !params[k].detach().cpu().equal(before[k]);
  EXPECT_TRUE(moved) << "a good step after the skipped one did not update the parameters";
  EXPECT_EQ(scaler.get_scale(), scale_before * kBackoff);
  EXPECT_EQ(scaler.get_growth_tracker(), 1);
}

// The gradients of linear + a float32-list op (log_softmax + nll_loss, and
// mse_loss) under autocast on CUDA against float32 on CUDA: the input's,
// the weight's and the bias's, float32 (the parameters' dtype), within 1e-2
// (float16) / 3e-2 (bfloat16) relative error of the norm.
TEST(CudaAmp, GradientsUnderAutocastMatchFloat32) {
  REQUIRE_CUDA();
  manual_seed(9);
  const Tensor x0 = randn({64, 128}).to(kGpu);
  const Tensor w0 = randn({32, 128}).mul(1.0 / std::sqrt(128.0)).to(kGpu);
  const Tensor b0 = randn({32}).mul(0.1).to(kGpu);
  const Tensor classes = randint(0, 32, {64}).to(kGpu);
  const Tensor target = randn({64, 32}).to(kGpu);
  enum class Head { LogSoftmaxNll, Mse };
  auto grads = [&](Head head, std::optional<ScalarType> dtype) {
    Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
    Tensor loss;
    {
      autocast ac(kCUDA, dtype.value_or(kHalf), dtype.has_value());
      const Tensor y = F::linear(x, w, b);
      EXPECT_EQ(y.dtype(), dtype.value_or(kFloat));
      if (head == Head::LogSoftmaxNll) {
        const Tensor lp = y.log_softmax(1);
        EXPECT_EQ(lp.dtype(), kFloat);  // float32 list
        loss = F::nll_loss(lp, classes);
      } else {
        loss = F::mse_loss(y, target);
      }
      EXPECT_EQ(loss.dtype(), kFloat);
    }
    loss.backward();
    return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
  };
  const char* names[] = {"input", "weight", "bias"};
  for (Head head : {Head::LogSoftmaxNll, Head::Mse}) {
    const char* what = head == Head::LogSoftmaxNll ? "linear + log_softmax + nll_loss" : "linear + mse_loss";
    const std::vector<Tensor> ref = grads(head, std::nullopt);
    for (auto [dt, tol] : {std::pair{kHalf, 1e-2}, std::pair{kBFloat16, 3e-2}}) {
      const std::vector<Tensor> got = grads(head, dt);
      for (size_t k = 0; k < 3; ++k) {
        ASSERT_TRUE(got[k].defined()) << what << " " << dtype_name(dt) << ": " << names[k];
        EXPECT_EQ(got[k].dtype(), kFloat) << what << " " << dtype_name(dt) << ": " << names[k];
        EXPECT_EQ(got[k].device().type, kCUDA) << what << " " << dtype_name(dt) << ": " << names[k];
        const double err = rel_err(got[k], ref[k]);
        EXPECT_LT(err, tol) << what << " under autocast " << dtype_name(dt) << ": gradient of the " << names[k]
                            << ", relative error of the norm " << err;
        std::printf("[ CudaAmp  ] %-32s %-8s d%-6s relative error %.2e\n", what, dname(dt).c_str(), names[k], err);
      }
    }
  }
}
