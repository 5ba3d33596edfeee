#include "passes/pipeline_spec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;

std::string RoundTrip(absl::string_view text) {
  absl::StatusOr<std::vector<PipelineStep>> steps = ParsePipeline(text);
  if (!steps.ok()) return std::string("error: ") + std::string(steps.status().message());
  return PipelineToString(*steps);
}

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<std::vector<PipelineStep>> steps = ParsePipeline(text);
  if (steps.ok()) return "ok";
  EXPECT_EQ(steps.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(steps.status().message());
}

TEST(PipelineSpec, ParsesGoodStrings) {
  EXPECT_EQ(RoundTrip(""), "");
  EXPECT_EQ(RoundTrip("   "), "");
  EXPECT_EQ(RoundTrip("dce"), "dce");
  EXPECT_EQ(RoundTrip("dce,cse,constprop,pool,peephole"), "dce,cse,constprop,pool,peephole");
  EXPECT_EQ(RoundTrip(" dce , cse "), "dce,cse");
  EXPECT_EQ(RoundTrip("fixpoint(dce,cse)"), "fixpoint(dce,cse)");
  EXPECT_EQ(RoundTrip("fixpoint<10>(dce)"), "fixpoint(dce)");  // 10 is the default
  EXPECT_EQ(RoundTrip("a,fixpoint < 3 > ( b , fixpoint(c) ),d"),
            "a,fixpoint<3>(b,fixpoint(c)),d");
}

TEST(PipelineSpec, StepsAreData) {
  absl::StatusOr<std::vector<PipelineStep>> steps = ParsePipeline("a,fixpoint<4>(b,c)");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[0].kind, PipelineStep::Kind::kPass);
  EXPECT_EQ((*steps)[0].pass, "a");
  EXPECT_EQ((*steps)[1].kind, PipelineStep::Kind::kFixpoint);
  EXPECT_EQ((*steps)[1].max_iterations, 4);
  ASSERT_EQ((*steps)[1].body.size(), 2u);
  EXPECT_EQ((*steps)[1].body[1].pass, "c");
}

TEST(PipelineSpec, BadStringsSayWhereAndWhat) {
  EXPECT_EQ(ErrorOf("dce,,cse"),
            "pipeline 'dce,,cse': column 5: expected a pass name or fixpoint(...), got ','");
  EXPECT_EQ(ErrorOf("dce,"),
            "pipeline 'dce,': column 5: expected a pass name or fixpoint(...), got end of "
            "pipeline");
  EXPECT_EQ(ErrorOf("dce cse"),
            "pipeline 'dce cse': column 5: expected ',' or end of pipeline, got 'c'");
  EXPECT_THAT(ErrorOf("fixpoint(dce"), HasSubstr("column 13: expected ',' or ')'"));
  EXPECT_THAT(ErrorOf("fixpoint()"), HasSubstr("fixpoint group is empty"));
  EXPECT_THAT(ErrorOf("fixpoint<>(dce)"), HasSubstr("column 10: expected an iteration cap"));
  EXPECT_THAT(ErrorOf("fixpoint<0>(dce)"), HasSubstr("at least 1"));
  EXPECT_THAT(ErrorOf("fixpoint<99999999999999999999>(dce)"), HasSubstr("at most 10000"));
  EXPECT_THAT(ErrorOf("fixpoint<3(dce)"), HasSubstr("expected '>'"));
  EXPECT_THAT(ErrorOf("fixpoint<3>dce"), HasSubstr("expected '(' after fixpoint"));
  EXPECT_THAT(ErrorOf("dce)"), HasSubstr("column 4"));
  EXPECT_THAT(ErrorOf("dce-cse"), HasSubstr("column 4"));
  EXPECT_THAT(ErrorOf("1dce"), HasSubstr("column 1"));
}

TEST(PipelineSpec, NestingIsCapped) {
  std::string ok, too_deep;
  for (int i = 0; i < kMaxPipelineNesting; ++i) ok += "fixpoint(";
  ok += "a";
  for (int i = 0; i < kMaxPipelineNesting; ++i) ok += ")";
  EXPECT_EQ(RoundTrip(ok), ok);
  too_deep = "fixpoint(" + ok + ")";
  EXPECT_THAT(ErrorOf(too_deep), HasSubstr("nest deeper than 8"));
  // Pathological input fails fast instead of recursing.
  EXPECT_THAT(ErrorOf(std::string(100000, '(')), HasSubstr("column 1"));
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "fixpoint(";
  EXPECT_THAT(ErrorOf(deep), HasSubstr("nest deeper"));
}

TEST(PipelineSpec, Presets) {
  EXPECT_EQ(RoundTrip("-O0"), "");
  EXPECT_EQ(RoundTrip(" -O1 "),
            "constant_propagation,constant_pooling,common_subexpression_elimination,"
            "dead_code_elimination");
  EXPECT_EQ(RoundTrip("-O2"),
            "constant_propagation,peephole,fixpoint(dead_code_elimination,"
            "common_subexpression_elimination,constant_propagation,peephole,constant_pooling),"
            "canonicalize");
  EXPECT_EQ(ErrorOf("-O3"), "unknown preset '-O3'; known presets: -O0, -O1, -O2");
  EXPECT_EQ(PresetPipeline("-O9").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(PresetNames().size(), 3u);
}

}  // namespace
}  // namespace kiln::passes
