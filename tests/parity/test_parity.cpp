// Parity suite: the same cases through brisk and libtorch, compared (see
// tests/parity/parity.h for the harness and Note [Parity verdicts]).
//
// The only translation unit that includes libtorch's headers. One gtest per
// group of cases (Note [Parity test granularity]):
//   test_parity --gtest_filter='*/Parity.Run/add'        # one group
//   BRISK_PARITY_CASE=add.f16_f32 test_parity ...        # one case
#include "parity.h"

#include "cases_elementwise.h"
#include "cases_index.h"
#include "cases_linalg_shape.h"
#include "cases_misc.h"
#include "cases_reduce.h"
#include "autograd_parity.h"
#include "nn_parity.h"
#include "optim_parity.h"
#include "conv_parity.h"
#include "pool_norm_parity.h"
#include "attention_parity.h"
#include "transformer_parity.h"
#include "custom_function_parity.h"

namespace parity {
namespace {

class Parity : public ::testing::TestWithParam<Group<Case>> {};
TEST_P(Parity, Run) { run_group(GetParam(), run_case); }

class ParityErrors : public ::testing::TestWithParam<Group<ErrorCase>> {};
TEST_P(ParityErrors, Throw) { run_group(GetParam(), run_error_case); }

template <class C>
std::string group_name(const ::testing::TestParamInfo<Group<C>>& info) {
  return sanitize(info.param.name);
}

#define PARITY_FAMILY(Family, cases) \
  INSTANTIATE_TEST_SUITE_P(Family, Parity, ::testing::ValuesIn(group_cases(cases())), group_name<Case>)
PARITY_FAMILY(Binary, binary_cases);
PARITY_FAMILY(Ternary, ternary_cases);
PARITY_FAMILY(Unary, unary_cases);
PARITY_FAMILY(Reduce, reduce_cases);
PARITY_FAMILY(Sort, sort_cases);
PARITY_FAMILY(Linalg, linalg_cases);
PARITY_FAMILY(Shape, shape_cases);
PARITY_FAMILY(View, view_cases);
PARITY_FAMILY(WriteThrough, write_through_cases);
PARITY_FAMILY(Index, index_cases);
PARITY_FAMILY(Cast, cast_cases);
PARITY_FAMILY(Factory, factory_cases);
PARITY_FAMILY(Closeness, closeness_cases);
#undef PARITY_FAMILY
INSTANTIATE_TEST_SUITE_P(Errors, ParityErrors, ::testing::ValuesIn(group_cases(error_cases())),
                         group_name<ErrorCase>);

// ---- the promotion functions over every dtype pair ---------------------------------------

TEST(ParityPromotion, PromoteTypes) {
  for (auto a : kAllDtypes)
    for (auto b : kAllDtypes)
      EXPECT_EQ(to_torch(brisk::promote_types(a, b)), at::promote_types(to_torch(a), to_torch(b)))
          << short_name(a) << ", " << short_name(b);
}

TEST(ParityPromotion, CanCast) {
  for (auto a : kAllDtypes)
    for (auto b : kAllDtypes)
      EXPECT_EQ(brisk::can_cast(a, b), at::can_cast(to_torch(a), to_torch(b))) << short_name(a) << " -> "
                                                                                << short_name(b);
}

TEST(ParityPromotion, ResultTypeTensors) {
  // Every pair with every combination of dimensioned and 0-dim operands.
  const std::vector<std::vector<int64_t>> shapes = {{2}, {}};
  for (auto a : kAllDtypes)
    for (auto b : kAllDtypes)
      for (auto& sa : shapes)
        for (auto& sb : shapes) {
          auto got = brisk::result_type(brisk::empty(sa, a), brisk::empty(sb, b));
          auto want = at::result_type(at::empty(sa, at::dtype(to_torch(a))), at::empty(sb, at::dtype(to_torch(b))));
          EXPECT_EQ(to_torch(got), want) << short_name(a) << shape_str(sa) << ", " << short_name(b) << shape_str(sb);
        }
}

TEST(ParityPromotion, ResultTypeScalars) {
  for (auto a : kAllDtypes)
    for (const std::vector<int64_t>& sa : {std::vector<int64_t>{2}, std::vector<int64_t>{}}) {
      auto bt = brisk::empty(sa, a);
      auto tt = at::empty(sa, at::dtype(to_torch(a)));
      EXPECT_EQ(to_torch(brisk::result_type(bt, 2.5)), at::result_type(tt, 2.5)) << short_name(a) << " double";
      EXPECT_EQ(to_torch(brisk::result_type(bt, int64_t(3))), at::result_type(tt, int64_t(3)))
          << short_name(a) << " int";
      EXPECT_EQ(to_torch(brisk::result_type(bt, true)), at::result_type(tt, true)) << short_name(a) << " bool";
    }
}

}  // namespace
}  // namespace parity
