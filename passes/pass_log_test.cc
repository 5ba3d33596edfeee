#include "passes/pass_log.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_registry.h"
#include "passes/test_passes.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;

class PassLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogSink([this](absl::string_view line) { captured_.append(line.data(), line.size()); });
  }
  void TearDown() override {
    ASSERT_TRUE(SetLogLevels("").ok());
    SetLogSink(nullptr);
    SetLogGraphPrinter(nullptr);
  }
  std::string captured_;
};

TEST_F(PassLogTest, LevelsFollowTheNumberOfArrows) {
  ASSERT_TRUE(SetLogLevels("dead_code_elimination:>cse_like:>>constant_propagation").ok());
  EXPECT_TRUE(IsLogEnabled("dead_code_elimination", LogLevel::kDump));
  EXPECT_FALSE(IsLogEnabled("dead_code_elimination", LogLevel::kUpdate));
  EXPECT_TRUE(IsLogEnabled("cse_like", LogLevel::kUpdate));
  EXPECT_FALSE(IsLogEnabled("cse_like", LogLevel::kDebug));
  EXPECT_TRUE(IsLogEnabled("constant_propagation", LogLevel::kDebug));
  EXPECT_FALSE(IsLogEnabled("peephole", LogLevel::kDump));
  EXPECT_EQ(GetLogLevels(), ">>constant_propagation:>cse_like:dead_code_elimination");
}

TEST_F(PassLogTest, ExtensionsPathsAndExtraArrows) {
  ASSERT_TRUE(SetLogLevels(" >>>passes/dead_code_elimination.cc : peephole.cpp :").ok());
  EXPECT_TRUE(IsLogEnabled("dead_code_elimination", LogLevel::kDebug));
  EXPECT_TRUE(IsLogEnabled("peephole", LogLevel::kDump));
  EXPECT_EQ(GetLogLevels(), ">>dead_code_elimination:peephole");
}

TEST_F(PassLogTest, WildcardAndOff) {
  ASSERT_TRUE(SetLogLevels(">*").ok());
  EXPECT_TRUE(IsLogEnabled("anything", LogLevel::kUpdate));
  EXPECT_FALSE(IsLogEnabled("anything", LogLevel::kDebug));
  ASSERT_TRUE(SetLogLevels("").ok());
  EXPECT_FALSE(IsLogEnabled("anything", LogLevel::kDump));
}

TEST_F(PassLogTest, AliasesShareTheSwitch) {
  PassRegistry r;
  ASSERT_TRUE(r.RegisterFunction("log_test_long_name", {"ltl"}, "",
                                 [](ir::Graph&, PassStatistics&) -> absl::StatusOr<bool> {
                                   return false;
                                 })
                  .ok());
  ASSERT_TRUE(SetLogLevels(">>ltl").ok());
  EXPECT_TRUE(IsLogEnabled("log_test_long_name", LogLevel::kDebug));
  ASSERT_TRUE(SetLogLevels("log_test_long_name").ok());
  EXPECT_TRUE(IsLogEnabled("ltl", LogLevel::kDump));
  EXPECT_FALSE(IsLogEnabled("ltl", LogLevel::kUpdate));
}

TEST_F(PassLogTest, BadSpecIsRejectedAndKeepsTheOldOne) {
  ASSERT_TRUE(SetLogLevels("peephole").ok());
  absl::Status s = SetLogLevels("dce:>>");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("entry 2 ('>>')"));
  s = SetLogLevels("dce:c se");
  EXPECT_THAT(std::string(s.message()), HasSubstr("unexpected character ' '"));
  EXPECT_TRUE(IsLogEnabled("peephole", LogLevel::kDump));
}

TEST_F(PassLogTest, MacrosPrefixEveryLineAndSkipDisabledWork) {
  ASSERT_TRUE(SetLogLevels(">dead_code_elimination").ok());
  int evaluated = 0;
  auto expensive = [&] {
    ++evaluated;
    return "x";
  };
  KILN_LOG_UPDATE("dead_code_elimination", "removed ", 3, " nodes\nsecond line");
  KILN_LOG_DEBUG("dead_code_elimination", expensive());
  KILN_LOG_DUMP("cse", expensive());
  EXPECT_EQ(evaluated, 0);
  EXPECT_EQ(captured_,
            "[UPDATE dead_code_elimination] removed 3 nodes\n"
            "[UPDATE dead_code_elimination] second line\n");
}

TEST_F(PassLogTest, GraphDumpsUseThePrinter) {
  ASSERT_TRUE(SetLogLevels("dead_code_elimination").ok());
  auto g = testing::MakeSmallGraph();
  KILN_LOG_DUMP_GRAPH("dead_code_elimination", "before:", *g);
  EXPECT_THAT(captured_, HasSubstr("[DUMP dead_code_elimination] <graph with 2 nodes"));
  captured_.clear();
  SetLogGraphPrinter(testing::TestPrintGraph);
  KILN_LOG_DUMP_GRAPH("dead_code_elimination", "before:", *g);
  EXPECT_EQ(captured_,
            "[DUMP dead_code_elimination] before:\n"
            "[DUMP dead_code_elimination] graph:\n"
            "[DUMP dead_code_elimination]   aten::relu(%x)\n"
            "[DUMP dead_code_elimination]   aten::add(%1, %x)\n");
}

}  // namespace
}  // namespace kiln::passes
