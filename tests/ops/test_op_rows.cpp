// The pointwise ops of the op table through their test rows
// (tests/ops/op_rows.h, Note [The test row]), on the CPU:
//  - every row against its float64 reference, over the dtypes its DTypeClass
//    gives (with the result dtype PyTorch gives), broadcast, non-contiguous,
//    0-dim and zero-size inputs, and its in-place and out= forms;
//  - gradcheck (float64 finite differences) of every differentiable input of
//    a differentiable row, as a named gradient row `<row>.grad_<arg>`, the
//    input broadcast against the others so that the reduction of the
//    gradient to its shape is checked; float32 gradients against float64;
//  - completeness: every op-table row of kind Unary/Binary/Ternary has a test
//    row or an exception with a reason, and its in-place / out= flags have a
//    form in a row;
//  - the support matrix: for each row and dtype, supports() on the CPU and the
//    row's DTypeClass agree with what runs; what does not run raises a
//    brisk::Error naming the op.
#include <gtest/gtest.h>

#include <map>
#include <set>
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


class OpRows : public ::testing::TestWithParam<Row> {
 protected:
  void SetUp() override { set_num_threads(1); }
};

TEST_P(OpRows, CpuAgainstReference) {
  const Row& r = GetParam();
  for (ScalarType dt : row_dtypes(r)) {
    const ScalarType odt = result_dtype(r.res, dt);
    const double tol = row_tol(r, odt);
    uint32_t seed = 1;
    for (const LayoutCase& c : layout_cases()) {
      if (c.min_arity > r.arity) continue;
      const TensorList in = make_inputs(r, c, dt, seed++);
      std::vector<Tensor> before;
      for (const Tensor& t : in) before.push_back(t.clone());
      Tensor got;
      try {
        got = r.fn(in);
      } catch (const Error& e) {
        ADD_FAILURE() << label(r, dt, c.name) << " threw: " << e.what();
        continue;
      }
      EXPECT_EQ(got.dtype(), odt) << label(r, dt, c.name);
      const Tensor want = reference(r, in, dt, odt), alt = reference(r, in, dt, odt, /*alt=*/true);
      EXPECT_TRUE(alt.defined() ? close_either(got, want, alt, tol) : close(got, want, tol, tol))
          << label(r, dt, c.name);
      for (size_t i = 0; i < in.size(); ++i)
        EXPECT_TRUE(close(in[i], before[i], 0, 0)) << label(r, dt, c.name) << ": input " << i << " was written";
    }

    // in-place (self = input 0, the others broadcast to it) and out= forms
    const LayoutCase self_case{"in-place", {{{3, 4}}, {{4}}, {{3, 1}}}};
    const TensorList in = make_inputs(r, self_case, dt, 100);
    const Tensor want = r.fn(in);
    if (r.inplace && r.dom[0] != Dom::Mask) {
      if (can_cast(odt, dt)) {
        Tensor x = in[0].clone();
        void* p = x.data_ptr();
        Tensor& res = r.inplace(x, in);
        EXPECT_TRUE(res.is_same(x)) << label(r, dt, "in-place returns self");
        EXPECT_EQ(x.data_ptr(), p) << label(r, dt, "in-place reallocated");
        EXPECT_TRUE(close(x, want.to(dt), 0, 0)) << label(r, dt, "in-place");
        Tensor xt = in[0].t().contiguous().t();  // non-contiguous self
        ASSERT_FALSE(xt.is_contiguous());
        r.inplace(xt, in);
        EXPECT_TRUE(close(xt, want.to(dt), 0, 0)) << label(r, dt, "in-place transposed");
      } else {
        Tensor x = in[0].clone();
        // "result type Float can't be cast to the desired output type Int" (or, square_ of bool: not supported)
        expect_error([&] { r.inplace(x, in); }, {op_info(r.op).name});
        EXPECT_TRUE(x.equal(in[0])) << label(r, dt, "a failed in-place op wrote");
      }
    }
    if (r.out && known_bug(r, dt, "out")) {
      Tensor out = empty({0}, odt);
      expect_error([&] { r.out(out, in); }, {r.name});  // fixed? drop it from known_bugs()
    } else if (r.out) {
      Tensor out = empty({0}, odt);  // resized
      EXPECT_TRUE(r.out(out, in).is_same(out)) << label(r, dt, "out returns out");
      EXPECT_TRUE(close(out, want, 0, 0)) << label(r, dt, "out resized");
      Tensor out_t = empty({4, 3}, odt).t();  // written through its strides
      r.out(out_t, in);
      EXPECT_TRUE(close(out_t, want, 0, 0)) << label(r, dt, "out transposed");
      EXPECT_FALSE(out_t.is_contiguous());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pointwise, OpRows, ::testing::ValuesIn(op_test_rows()),
                         [](const ::testing::TestParamInfo<Row>& i) { return test_name(i.param.name); });

// ---- named gradient rows ---------------------------------------------------------------------

class OpGradRows : public ::testing::TestWithParam<GradRow> {
 protected:
  void SetUp() override { set_num_threads(1); }
};

TEST_P(OpGradRows, Gradcheck) {
  const GradRow& g = GetParam();
  const Row& r = *g.row;
  const TensorList in = grad_inputs(g, kDouble);
  const auto fn = [&](const TensorList& x) { return r.fn(x); };
  try {
    EXPECT_TRUE(autograd::gradcheck(fn, in)) << g.name();
  } catch (const Error& e) {
    ADD_FAILURE() << g.name() << ": " << e.what();
  }
}

/// Second derivatives: the backward pass, recorded with create_graph, against
/// finite differences of the first derivative (gradgradcheck).
TEST_P(OpGradRows, GradGradcheck) {
  const GradRow& g = GetParam();
  const Row& r = *g.row;
  const TensorList in = grad_inputs(g, kDouble);
  const auto fn = [&](const TensorList& x) { return r.fn(x); };
  autograd::GradcheckOptions opts;
  opts.check_grad_grad = true;
  // Second derivatives brisk lacks, with the error they raise (implemented?
  // drop the entry).
  static const std::map<std::string, std::string> lacking = {};
  if (auto it = lacking.find(g.name()); it != lacking.end()) {
    expect_error([&] { autograd::gradcheck(fn, in, opts); }, {it->second});
    return;
  }
  try {
    EXPECT_TRUE(autograd::gradcheck(fn, in, opts)) << g.name();
  } catch (const Error& e) {
    ADD_FAILURE() << g.name() << ": " << e.what();
  }
}

TEST_P(OpGradRows, Float32GradientHasTheInputsShapeAndMatchesFloat64) {
  const GradRow& g = GetParam();
  const Row& r = *g.row;
  Tensor grads[2];
  for (ScalarType dt : {kDouble, kFloat}) {
    const TensorList in = grad_inputs(g, dt);
    const Tensor& x = in[size_t(g.arg)];
    Tensor y = r.fn(in);
    ASSERT_TRUE(y.requires_grad()) << g.name() << " " << dtype_name(dt) << ": the result does not require grad";
    y.backward(ones_like(y));
    const Tensor gx = x.grad();
    ASSERT_TRUE(gx.defined()) << g.name();
    EXPECT_EQ(gx.sizes().vec(), x.sizes().vec()) << g.name() << " " << dtype_name(dt);
    EXPECT_EQ(gx.dtype(), dt) << g.name();
    grads[dt == kDouble ? 0 : 1] = gx;
  }
  EXPECT_TRUE(close(grads[1], grads[0], 1e-4, 1e-4)) << g.name() << ": float32 gradient against float64";
}

INSTANTIATE_TEST_SUITE_P(Pointwise, OpGradRows, ::testing::ValuesIn(grad_rows()),
                         [](const ::testing::TestParamInfo<GradRow>& i) { return test_name(i.param.name()); });

/// Rows with a bool result (comparisons, predicates, isclose) are not
/// differentiable: inputs that require grad give a result that does not
/// (torch), never a graph that would hand back a gradient.
TEST(OpRowsTable, BoolResultsDoNotRequireGrad) {
  for (const Row& r : op_test_rows()) {
    if (r.res != Res::Bool) continue;
    TensorList in = make_inputs(r, layout_cases()[0], kFloat, 3);
    for (Tensor& t : in)
      if (t.is_floating_point()) t.requires_grad_(true);
    const Tensor y = r.fn(in);
    EXPECT_FALSE(y.requires_grad()) << r.name;
    EXPECT_EQ(y.dtype(), kBool) << r.name;
  }
}

// ---- completeness ------------------------------------------------------------------------------

/// Forms the op table's flags promise that brisk does not have (yet): the
/// test below fails when one appears, so that its row gets the form.
const std::set<std::pair<Op, char>> kFormsMissing = {};

TEST(OpRowsTable, EveryPointwiseOpHasATestRowOrAnException) {
  std::map<Op, std::vector<const Row*>> by_op;
  std::set<std::string> names;
  for (const Row& r : op_test_rows()) {
    EXPECT_TRUE(names.insert(r.name).second) << "two test rows named " << r.name;
    EXPECT_TRUE(op_info(r.op).pointwise()) << "test row " << r.name << " covers " << op_info(r.op).name
                                           << ", which is not of kind Unary/Binary/Ternary";
    EXPECT_EQ(r.dom.size(), size_t(r.arity)) << r.name;
    EXPECT_EQ(r.args.size(), size_t(r.arity)) << r.name;
    by_op[r.op].push_back(&r);
  }
  std::set<Op> excepted;
  for (const Exception& e : row_exceptions()) {
    excepted.insert(e.op);
    EXPECT_GT(std::string(e.reason).size(), 10u) << op_info(e.op).name << ": an exception needs a reason";
    EXPECT_FALSE(by_op.count(e.op)) << op_info(e.op).name << " has test rows: drop its exception";
  }
  int pointwise = 0;
  for (int i = 0; i < kNumTableOps; ++i) {
    const Op op = static_cast<Op>(i);
    const OpInfo& info = op_info(op);
    if (!info.pointwise()) continue;
    ++pointwise;
    if (excepted.count(op)) continue;
    auto it = by_op.find(op);
    if (it == by_op.end()) {
      ADD_FAILURE() << "op-table row '" << info.name << "' (kind " << op_kind_name(info.kind)
                    << ") has no test row: add one to tests/ops/op_rows.h (Note [The test row]) or an "
                       "exception with the reason to row_exceptions()";
      continue;
    }
    bool inplace = false, out = false;
    for (const Row* r : it->second) inplace |= bool(r->inplace), out |= bool(r->out);
    if (info.has_inplace() && !kFormsMissing.count({op, 'i'})) {
      EXPECT_TRUE(inplace) << info.name << ": the op table says it has `" << info.name
                           << "_`, but no test row calls it";
    }
    if (info.has_out() && !kFormsMissing.count({op, 'o'})) {
      EXPECT_TRUE(out) << info.name << ": the op table says it has `" << info.name
                       << "_out`, but no test row calls it";
    }
  }
  for (const auto& [op, form] : kFormsMissing) {
    bool has = false;
    for (const Row* r : by_op[op]) has |= form == 'i' ? bool(r->inplace) : bool(r->out);
    EXPECT_FALSE(has) << op_info(op).name << ": the form exists now: drop it from kFormsMissing";
  }
  EXPECT_GT(pointwise, 80);  // the table still has its pointwise rows
}

// ---- the support matrix --------------------------------------------------------------------------

/// For each row and dtype: it runs exactly when the slot's CPU registration
/// takes the dtype, the op's DTypeClass has it and the row does not exclude
/// it; otherwise a brisk::Error names the op.
TEST(OpRowsTable, SupportMatrixAgreesWithWhatRuns) {
  set_num_threads(1);
  const LayoutCase& contiguous = layout_cases()[0];
  for (const Row& r : op_test_rows()) {
    const OpInfo& info = op_info(r.op);
    for (ScalarType dt : all_dtypes()) {
      const bool slot_takes = info.slot < 0 || supports(static_cast<OpId>(info.slot), kCPU, dt);
      const bool expected = slot_takes && row_takes(r, dt);
      const TensorList in = make_inputs(r, contiguous, dt, 7);
      std::string error;
      bool ran = false;
      try {
        (void)r.fn(in);
        ran = true;
      } catch (const Error& e) {
        error = e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << label(r, dt, "") << ": threw a non-brisk exception: " << e.what();
        continue;
      }
      if (expected) {
        EXPECT_TRUE(ran) << label(r, dt, "") << ": supported (slot " << (info.slot < 0 ? "none" : op_name(static_cast<OpId>(info.slot)))
                         << ", class of the table) but raised: " << error;
      } else {
        EXPECT_FALSE(ran) << label(r, dt, "") << ": runs, but the table ("
                          << (slot_takes ? "the op's DTypeClass, the row's not_dtypes" : "the slot's registration")
                          << ") says it is not supported";
        if (!ran) {
          EXPECT_NE(error.find(info.name), std::string::npos)
              << label(r, dt, "") << ": the error does not name the op: " << error;
        }
      }
    }
  }
}

}  // namespace
