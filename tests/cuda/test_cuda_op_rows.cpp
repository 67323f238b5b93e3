// The pointwise test rows (tests/ops/op_rows.h, Note [The test row]) on CUDA
// against the CPU: every row, every dtype the CUDA registration of its slot
// takes (the others must raise an error naming the op), the layout cases
// built on the device (transposed, strided, expanded, broadcast, 0-dim,
// zero-size), the in-place and out= forms, and the float32 gradients of the
// named gradient rows. The GPU tests skip without a device (REQUIRE_CUDA);
// the first test runs in every build.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/dispatch.h"
#include "ops/op_rows.h"
#include "test_util.h"

using namespace brisk;
using namespace brisk::testing::rows;
using brisk::testing::close;
using brisk::testing::expect_error;

namespace {

const Device kGpu(kCUDA);

/// CUDA's math functions are not the CPU's: a few ulp apart in float32 and
/// float64; the reduced types round the same float32 value.
double cuda_tol(const Row& r, ScalarType result) {
  switch (result) {
    case kFloat: return std::max(row_tol(r, result), 1e-5);
    case kDouble: return std::max(row_tol(r, result), 1e-12);
    default: return row_tol(r, result);
  }
}
bool cuda_takes(const Row& r, ScalarType dt) {
  const int slot = op_info(r.op).slot;
  return slot < 0 || supports(static_cast<OpId>(slot), kCUDA, dt);
}

TEST(CudaOpRowsNoDevice, EveryRowsSlotHasACudaKernel) {
  if (!supports(OpId::copy, kCUDA)) GTEST_SKIP() << "this build has no CUDA backend";
  for (const Row& r : op_test_rows()) {
    const int slot = op_info(r.op).slot;
    if (slot >= 0) {
      EXPECT_TRUE(supports(static_cast<OpId>(slot), kCUDA))
          << r.name << ": slot " << op_name(static_cast<OpId>(slot)) << " has no CUDA kernel";
    }
  }
}

class CudaOpRows : public ::testing::TestWithParam<Row> {};

TEST_P(CudaOpRows, AgainstCpu) {
  REQUIRE_CUDA();
  const Row& r = GetParam();
  for (ScalarType dt : row_dtypes(r)) {
    const ScalarType odt = result_dtype(r.res, dt);
    if (!cuda_takes(r, dt)) {
      const TensorList in = make_inputs(r, layout_cases()[0], dt, 1, kGpu);
      expect_error([&] { (void)r.fn(in); }, {op_info(r.op).name});
      continue;
    }
    const double tol = cuda_tol(r, odt);
    uint32_t seed = 1;
    for (const LayoutCase& c : layout_cases()) {
      if (c.min_arity > r.arity) continue;
      const TensorList cpu = make_inputs(r, c, dt, seed);
      const TensorList gpu = make_inputs(r, c, dt, seed, kGpu);
      ++seed;
      const Tensor want = r.fn(cpu);
      Tensor got;
      try {
        got = r.fn(gpu);
      } catch (const Error& e) {
        ADD_FAILURE() << label(r, dt, c.name) << " threw on CUDA: " << e.what();
        continue;
      }
      EXPECT_EQ(got.device().type, kCUDA) << label(r, dt, c.name);
      EXPECT_EQ(got.dtype(), want.dtype()) << label(r, dt, c.name);
      const Tensor alt = reference(r, cpu, dt, odt, /*alt=*/true);
      if (alt.defined())  // a 16-bit quotient rounded or not: either result (Note [The test row])
        EXPECT_TRUE(close_either(got.cpu(), reference(r, cpu, dt, odt), alt, tol)) << label(r, dt, c.name);
      else
        EXPECT_TRUE(close(got.cpu(), want, tol, tol)) << label(r, dt, c.name);
    }
    const LayoutCase self_case{"in-place", {{{3, 4}}, {{4}}, {{3, 1}}}};
    const TensorList cpu = make_inputs(r, self_case, dt, 100);
    const TensorList gpu = make_inputs(r, self_case, dt, 100, kGpu);
    const Tensor want = r.fn(cpu);
    if (r.inplace && r.dom[0] != Dom::Mask && can_cast(odt, dt)) {
      Tensor x = gpu[0].clone();
      r.inplace(x, gpu);
      EXPECT_TRUE(close(x.cpu(), want.to(dt), tol, tol)) << label(r, dt, "in-place");
      Tensor xt = gpu[0].t().contiguous().t();
      r.inplace(xt, gpu);
      EXPECT_TRUE(close(xt.cpu(), want.to(dt), tol, tol)) << label(r, dt, "in-place transposed");
    }
    if (r.out && !known_bug(r, dt, "out")) {
      Tensor out = empty({0}, TensorOptions(odt).device(kGpu));
      r.out(out, gpu);
      EXPECT_TRUE(close(out.cpu(), want, tol, tol)) << label(r, dt, "out resized");
      Tensor out_t = empty({4, 3}, TensorOptions(odt).device(kGpu)).t();
      r.out(out_t, gpu);
      EXPECT_TRUE(close(out_t.cpu(), want, tol, tol)) << label(r, dt, "out transposed");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pointwise, CudaOpRows, ::testing::ValuesIn(op_test_rows()),
                         [](const ::testing::TestParamInfo<Row>& i) { return test_name(i.param.name); });

class CudaOpGradRows : public ::testing::TestWithParam<GradRow> {};

/// The float32 gradient on CUDA equals the CPU's (shape of the input: the
/// broadcast gradient reduced on the device).
TEST_P(CudaOpGradRows, Float32GradientAgainstCpu) {
  REQUIRE_CUDA();
  const GradRow& g = GetParam();
  const Row& r = *g.row;
  Tensor grads[2];
  for (int k = 0; k < 2; ++k) {
    const TensorList in = grad_inputs(g, kFloat, k == 0 ? Device(kCPU) : kGpu);
    Tensor y = r.fn(in);
    ASSERT_TRUE(y.requires_grad()) << g.name();
    y.backward(ones_like(y));
    grads[k] = in[size_t(g.arg)].grad();
    ASSERT_TRUE(grads[k].defined()) << g.name();
  }
  EXPECT_EQ(grads[1].device().type, kCUDA) << g.name();
  EXPECT_EQ(grads[1].sizes().vec(), grads[0].sizes().vec()) << g.name();
  EXPECT_TRUE(close(grads[1].cpu(), grads[0], 1e-5, 1e-5)) << g.name();
}

INSTANTIATE_TEST_SUITE_P(Pointwise, CudaOpGradRows, ::testing::ValuesIn(grad_rows()),
                         [](const ::testing::TestParamInfo<GradRow>& i) { return test_name(i.param.name()); });

}  // namespace
