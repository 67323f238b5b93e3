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
#include "cases_reduce.h"

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
PARITY_FAMILY(Index, index_cases);
#undef PARITY_FAMILY
INSTANTIATE_TEST_SUITE_P(Errors, ParityErrors, ::testing::ValuesIn(group_cases(error_cases())),
                         group_name<ErrorCase>);

}  // namespace
}  // namespace parity
