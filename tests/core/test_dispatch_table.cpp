// The op table (core/dispatch.h) as the backends filled it: every row has a
// CPU kernel, supports() answers from the registrations, a missing kernel
// raises a clear error naming the op; and BRISK_INTERNAL_ASSERT's errors are
// told apart from user errors.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "brisk/brisk.h"
#include "core/dispatch.h"
#include "test_util.h"

using namespace brisk;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OpTable, EveryRowHasACpuKernel) {
  std::set<std::string> names;
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    const std::string name = op_name(op);
    EXPECT_FALSE(name.empty()) << "row " << i;
    EXPECT_TRUE(names.insert(name).second) << "two rows named " << name;
    EXPECT_TRUE(supports(op, kCPU)) << "no CPU kernel registered for row '" << name << "'";
  }
  EXPECT_EQ(names.size(), size_t(kNumOps));
}

TEST(OpTable, SupportsFollowsTheRegisteredDtypes) {
  // Rows registered for every dtype (the kernel switches on dtype itself).
  for (ScalarType dt : {kBool, kUInt8, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble})
    EXPECT_TRUE(supports(OpId::add, kCPU, dt)) << dt;
  // The CPU multi-tensor kernels: float32 and float64 only.
  for (OpId op : {OpId::foreach_pointwise, OpId::foreach_norm, OpId::fused_adam, OpId::fused_sgd,
                  OpId::fused_rmsprop}) {
    EXPECT_TRUE(supports(op, kCPU, kFloat)) << op_name(op);
    EXPECT_TRUE(supports(op, kCPU, kDouble)) << op_name(op);
    EXPECT_FALSE(supports(op, kCPU, kHalf)) << op_name(op);
    EXPECT_FALSE(supports(op, kCPU, kBFloat16)) << op_name(op);
    EXPECT_FALSE(supports(op, kCPU, kInt64)) << op_name(op);
  }
  // Pooling: PyTorch's CPU integer kernels.
  EXPECT_TRUE(supports(OpId::max_pool2d, kCPU, kUInt8));
  EXPECT_TRUE(supports(OpId::max_pool2d, kCPU, kInt64));
  EXPECT_FALSE(supports(OpId::max_pool2d, kCPU, kBool));
  EXPECT_TRUE(supports(OpId::avg_pool2d, kCPU, kInt64));
  EXPECT_FALSE(supports(OpId::avg_pool2d, kCPU, kInt32));
  EXPECT_FALSE(supports(OpId::max_pool2d_backward, kCPU, kInt64));
  EXPECT_TRUE(supports(OpId::max_pool2d_backward, kCPU, kBFloat16));
}

TEST(OpTable, CudaRowsOnlyWithTheBackend) {
  const bool built = supports(OpId::copy, kCUDA);
  if (!built) {
    for (int i = 0; i < kNumOps; ++i)
      EXPECT_FALSE(supports(static_cast<OpId>(i), kCUDA)) << op_name(static_cast<OpId>(i));
    return;
  }
  // The rows this work moved into the table have CUDA kernels (fused RMSprop
  // has none: it runs per tensor there).
  for (OpId op : {OpId::conv_forward, OpId::conv_backward_data, OpId::conv_backward_weights, OpId::max_pool2d,
                  OpId::max_pool2d_indices, OpId::max_pool2d_backward, OpId::avg_pool2d, OpId::avg_pool2d_backward,
                  OpId::arange, OpId::linspace, OpId::foreach_pointwise, OpId::foreach_norm, OpId::fused_adam,
                  OpId::fused_sgd})
    EXPECT_TRUE(supports(op, kCUDA)) << op_name(op);
  EXPECT_TRUE(supports(OpId::fused_adam, kCUDA, kHalf));
  EXPECT_FALSE(supports(OpId::fused_rmsprop, kCUDA));
}

TEST(OpTable, MissingKernelNamesTheOp) {
  // A row without a CUDA kernel in every build: fused_rmsprop.
  const std::string msg = message_of([] { (void)kernel<OpId::fused_rmsprop>(kCUDA, "RMSprop"); });
  EXPECT_NE(msg.find("[RMSprop]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not implemented on cuda"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fused_rmsprop"), std::string::npos) << msg;
}

TEST(OpTable, FusedOptimizerWithoutKernelFallsBackPerTensor) {
  // float16 parameters have no CPU fused kernel: the step runs the per-tensor
  // reference and agrees with it.
  set_num_threads(1);
  manual_seed(0);
  Tensor p = randn({5}, kHalf), g = randn({5}, kHalf);
  Tensor q = p.clone();
  p.set_requires_grad(true);
  q.set_requires_grad(true);
  p.mutable_grad() = g.clone();
  q.mutable_grad() = g.clone();
  optim::Adam fused({p}, optim::AdamOptions(0.1).impl(optim::Impl::Fused));
  optim::Adam loop({q}, optim::AdamOptions(0.1).impl(optim::Impl::ForLoop));
  fused.step();
  loop.step();
  EXPECT_TRUE(equal(p.detach(), q.detach()));
}

TEST(InternalAssert, IsNotAUserError) {
  const auto fail = [](int n) { BRISK_INTERNAL_ASSERT(n < 3, "n is ", n); };
  EXPECT_NO_THROW(fail(2));
  try {
    fail(7);
    FAIL() << "no throw";
  } catch (const InternalError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("internal assert failed at ", 0), 0u) << m;
    EXPECT_NE(m.find(" at tests/core/test_dispatch_table.cpp:"), std::string::npos) << m;
    EXPECT_NE(m.find("please report a bug"), std::string::npos) << m;
    EXPECT_NE(m.find("n < 3"), std::string::npos) << m;
    EXPECT_NE(m.find("(n is 7)"), std::string::npos) << m;
  }
  // Still a brisk::Error (code that catches Error sees it), but a user error is not an InternalError.
  EXPECT_THROW(fail(9), Error);
  try {
    BRISK_CHECK(false, "add", "shapes differ");
  } catch (const InternalError&) {
    FAIL() << "a user error became an InternalError";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[add] shapes differ");
  }
  // Without a message.
  const std::string m = message_of([] { BRISK_INTERNAL_ASSERT(1 + 1 == 3); });
  EXPECT_NE(m.find("please report a bug: 1 + 1 == 3"), std::string::npos) << m;
}
