// The op table (src/core/op_table.h, Note [The op table]): its rows are
// consistent, every name the profiler records has a row, and the advisor's
// lists come from it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "brisk/brisk.h"
#include "core/dispatch.h"
#include "core/op_table.h"

using namespace brisk;

TEST(OpTable, RowsAreConsistent) {
  std::set<std::string> names;
  for (int i = 0; i < kNumTableOps; ++i) {
    const OpInfo& r = op_info(static_cast<Op>(i));
    EXPECT_TRUE(names.insert(r.name).second) << "two rows named " << r.name;
    EXPECT_GE(r.slot, -1) << r.name;
    EXPECT_LT(r.slot, kNumOps) << r.name;
    // Pointwise ops and views are what compile fuses and graph capture
    // skips: a pointwise row names the slot that runs it, a view none.
    if (r.kind == OpKind::View) EXPECT_EQ(r.slot, -1) << r.name;
    // every slot a row names has a CPU kernel
    if (r.slot >= 0) EXPECT_TRUE(supports(static_cast<OpId>(r.slot), kCPU)) << r.name << " -> " << op_name(static_cast<OpId>(r.slot));
  }
  EXPECT_EQ(std::string(op_info(Op::exp).name), "exp");
  EXPECT_TRUE(op_info(Op::exp).pointwise());
  EXPECT_EQ(op_info(Op::exp).amp, AmpPolicy::Fp32);
  EXPECT_EQ(op_info(Op::matmul).amp, AmpPolicy::Lower);
  EXPECT_EQ(op_info(Op::add).slot, static_cast<int>(OpId::add));
  EXPECT_FALSE(op_info(Op::sum).pointwise());
  EXPECT_TRUE(op_info(Op::nonzero).syncs());
  EXPECT_TRUE(op_info(Op::randn).random());
}

TEST(OpTable, FindOpKnowsInPlaceAndOutForms) {
  EXPECT_EQ(find_op("add").info, &op_info(Op::add));
  OpLookup a = find_op("add_");
  ASSERT_NE(a.info, nullptr);
  EXPECT_TRUE(a.inplace);
  OpLookup o = find_op("sum_out");
  ASSERT_NE(o.info, nullptr);
  EXPECT_TRUE(o.out);
  EXPECT_EQ(find_op("view_").info, nullptr);      // no in-place view
  EXPECT_EQ(find_op("nonzero_out").info, nullptr);  // no out= form
  EXPECT_EQ(find_op("no_such_op").info, nullptr);
  EXPECT_EQ(find_op("transpose_").info->kind, OpKind::View);
}

namespace {
std::string read(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
}  // namespace

// Every op name the sources hand the profiler (BRISK_PROFILE_OP("name"),
// and the names of the ops the binary and unary macros define) is a row,
// or the in-place / out= form of one: a new op without a row fails here.
TEST(OpTable, EveryProfiledNameHasARow) {
  const char* dir = std::getenv("BRISK_TEST_DIR");
  if (dir == nullptr) GTEST_SKIP() << "BRISK_TEST_DIR is not set (CTest sets it)";
  const std::filesystem::path src = std::filesystem::path(dir) / ".." / "src";
  ASSERT_TRUE(std::filesystem::exists(src)) << src;
  const std::regex patterns[] = {
      std::regex(R"re(BRISK_PROFILE_OP\(\s*"([A-Za-z0-9_]+)")re"),
      std::regex(R"re(BRISK_PROFILE_OP\(\s*[a-z_]+\s*\?\s*"([A-Za-z0-9_]+)"\s*:\s*"([A-Za-z0-9_]+)")re"),
      std::regex(R"re(^BRISK_BINARY_OP\(([a-z_0-9]+),)re", std::regex::multiline),
      std::regex(R"re(^BRISK_UNARY_(?:BOTH|OP)\(([a-z_0-9]+)\))re", std::regex::multiline),
  };
  int seen = 0;
  std::set<std::string> missing;
  for (const auto& e : std::filesystem::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension();
    if (ext != ".cpp" && ext != ".h" && ext != ".cu") continue;
    const std::string text = read(e.path());
    for (const auto& re : patterns) {
      for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
        for (size_t g = 1; g < it->size(); ++g) {
          if (!(*it)[g].matched) continue;
          const std::string name = (*it)[g].str();
          ++seen;
          if (find_op(name).info == nullptr) missing.insert(name + " (" + e.path().filename().string() + ")");
        }
      }
    }
  }
  EXPECT_GT(seen, 150);  // the scan found the ops
  std::string list;
  for (const auto& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << "profiled op names without a row in src/core/op_table.h:" << list;
}
