// compile's leg of the op test rows (tests/ops/op_rows.h, Note [The test
// row]): every pointwise row, over its dtypes and the layout cases, traced
// on one set of inputs and replayed on another, against eager on the same
// inputs: bit for bit (the graph runs eager's kernels, or generated code
// that gives their bits).
#include <gtest/gtest.h>

#include <cstring>

#include "ops/op_rows.h"
#include "test_util.h"

namespace brisk {
namespace {

using namespace brisk::testing::rows;

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.sizes() == b.sizes())) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  const size_t n = static_cast<size_t>(x.numel()) * element_size(x.dtype());
  if (n == 0 || std::memcmp(x.data_ptr(), y.data_ptr(), n) == 0) return true;
  // NaNs of either sign or payload are the same NaN (which one x86 passes on
  // depends on the operand order the compiler picks)
  if (!is_floating_point(x.dtype())) return false;
  Tensor xd = x.to(kDouble), yd = y.to(kDouble);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double p = xd.data_ptr<double>()[i], q = yd.data_ptr<double>()[i];
    if (!(p == q && std::signbit(p) == std::signbit(q)) && !(p != p && q != q)) return false;
  }
  return true;
}

class CompileOpRows : public ::testing::TestWithParam<Row> {
 protected:
  void SetUp() override { set_num_threads(1); }
};

TEST_P(CompileOpRows, CompiledAgainstEager) {
  const Row& r = GetParam();
  int compiled = 0, cases = 0;
  for (ScalarType dt : row_dtypes(r)) {
    uint32_t seed = 1;
    for (const LayoutCase& c : layout_cases()) {
      if (c.min_arity > r.arity) continue;
      // generated code for float32 on the long layout (one compiler run
      // per row), the interpreter elsewhere
      const bool gen = dt == kFloat && std::string(c.name) == "long";
      auto f = compile([&r](const std::vector<Tensor>& in) { return r.fn(in); },
                       CompileOptions().set_backend(gen ? CompileBackend::Default : CompileBackend::Interpreter));
      const TensorList first = make_inputs(r, c, dt, seed), in = make_inputs(r, c, dt, seed + 1000);
      ++seed;
      Tensor want;
      try {
        want = r.fn(in);
      } catch (const Error&) {
        // (a known bug's error: compiled raises it too, from the trace run)
        EXPECT_THROW(f(in), Error) << label(r, dt, c.name);
        continue;
      }
      f(first);                 // traced
      const Tensor got = f(in);  // replayed
      ++cases;
      compiled += f.stats().graph_breaks == 0;
      EXPECT_TRUE(same_bits(got, want)) << label(r, dt, c.name) << "\n" << got << "\n" << want << "\n" << f.graph_text();
    }
    if (r.inplace && r.dom[0] != Dom::Mask && can_cast(result_dtype(r.res, dt), dt)) {
      auto g = compile(
          [&r](const std::vector<Tensor>& in) {
            Tensor x = in[0];
            return r.inplace(x, in);
          },
          CompileOptions().set_backend(CompileBackend::Interpreter));
      const LayoutCase self_case{"in-place", {{{3, 4}}, {{4}}, {{3, 1}}}};
      TensorList first = make_inputs(r, self_case, dt, 100), in = make_inputs(r, self_case, dt, 101);
      TensorList eager_in;
      for (const Tensor& t : in) eager_in.push_back(t.clone());
      g(first);
      Tensor got = g(in);
      Tensor x = eager_in[0];
      Tensor want = r.inplace(x, eager_in);
      EXPECT_TRUE(same_bits(got, want)) << label(r, dt, "in-place");
      EXPECT_TRUE(same_bits(in[0], eager_in[0])) << label(r, dt, "in-place: self");
    }
  }
  // Pointwise rows compile without a break (rows of internal ops may not).
  if (cases > 0) EXPECT_GT(compiled, 0) << r.name;
}

INSTANTIATE_TEST_SUITE_P(Rows, CompileOpRows, ::testing::ValuesIn(op_test_rows()),
                         [](const ::testing::TestParamInfo<Row>& i) { return test_name(i.param.name); });

}  // namespace
}  // namespace brisk
