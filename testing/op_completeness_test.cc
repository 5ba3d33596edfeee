// The op table's completeness (testing/op_completeness.h): every row has a
// shape function, a decomposition next to a bespoke path carries a note,
// and every op of torch 2.11's core ATen set has a row, a shape function
// and a compiled path, or is a listed gap. The ops the ONNX importer emits
// are checked by //testing:op_completeness_onnx_* over the ONNX suites.
// A synthetic row set shows that each rule fails when broken.
#include "testing/op_completeness.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/row_facts.h"

namespace kiln::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<ops::RowFacts> SyntheticRows() {
  using namespace ::kiln::ops::row;  // NOLINT: the rows' vocabulary
  std::vector<ops::RowFacts> rows;
#define KILN_OP(...) rows.push_back(KILN_ROW_FACTS(__VA_ARGS__));
#include "testing/testdata/synthetic_rows.def"
#undef KILN_OP
  return rows;
}

TEST(OpCompletenessTest, RowsReadFromTheirSpelling) {
  std::vector<ops::RowFacts> rows = SyntheticRows();
  ASSERT_EQ(rows.size(), 11u);
  EXPECT_EQ(rows[0].name, "kiln::test_complete");
  EXPECT_EQ(rows[0].kiln_schema, "kiln::test_complete(Tensor self) -> Tensor");
  EXPECT_TRUE(rows[0].kernel && rows[0].shape && rows[0].lowering);
  EXPECT_FALSE(rows[0].decomposition || rows[0].library_extern());
  EXPECT_TRUE(rows[4].library_extern() && rows[4].compiled_path());
  EXPECT_FALSE(rows[2].compiled_path());
  EXPECT_EQ(rows[7].note, "bespoke: BM_Something");
}

TEST(OpCompletenessTest, RowRulesFailOnSyntheticRows) {
  EXPECT_THAT(
      CheckRows(SyntheticRows()),
      ElementsAre("kiln::test_no_shape: no shape function (SHAPE is none)",
                  "kiln::test_both_without_note: a decomposition and a bespoke lowering without a "
                  "note naming the benchmark where the bespoke path wins",
                  "kiln::test_decomposed_and_blas: a decomposition and a library extern without a "
                  "note naming the benchmark where the bespoke path wins",
                  "kiln::test_no_path: two rows"));
}

TEST(OpCompletenessTest, RequiredOpRulesFailOnSyntheticRows) {
  std::vector<RequiredOp> required;
  for (const ops::RowFacts& row : SyntheticRows()) required.push_back({row.name, "synthetic"});
  required.push_back({"kiln::test_missing", "synthetic"});
  required.push_back({"kiln::test_missing_gap", "synthetic"});
  required.push_back({"kiln::test_complete_", "synthetic"});  // in-place: its functional row
  auto gaps = ParseGaps(
      "# comment\n"
      "kiln::test_gap          reference kernel only\n"
      "kiln::test_missing_gap  no row yet   # trailing comment\n"
      "kiln::test_complete     stale: it has a lowering\n");
  ASSERT_TRUE(gaps.ok()) << gaps.status();
  EXPECT_THAT(
      CheckRequired(SyntheticRows(), required, *gaps, RegistryReturnsTensors),
      UnorderedElementsAre(
          "kiln::test_complete is listed in ops/compiled_path_gaps.txt but has a compiled path: "
          "remove it from the list",
          "kiln::test_no_shape (synthetic): no shape function",
          "kiln::test_no_path (synthetic): no compiled path (a decomposition, a loop lowering or a "
          "library extern); its reference kernel is not one",
          "kiln::test_missing (synthetic): no op row"));
}

TEST(OpCompletenessTest, GapListNeedsReasonsAndNoRepeats) {
  EXPECT_FALSE(ParseGaps("aten::sort\n").ok());
  EXPECT_FALSE(ParseGaps("aten::sort a\naten::sort b\n").ok());
  EXPECT_THAT(ParseOpList("# x\naten::abs\n\n  aten::add.Tensor  # y\n"),
              ElementsAre("aten::abs", "aten::add.Tensor"));
}

// One failure per finding, each printed whole.
void ExpectNoFindings(const std::vector<std::string>& findings) {
  for (const std::string& f : findings) ADD_FAILURE() << f;
}

TEST(OpCompletenessTest, EveryRowHasAShapeFunctionAndNotedBespokePaths) {
  ExpectNoFindings(CheckRows(ops::AllRowFacts()));
}

TEST(OpCompletenessTest, CoreAtenOpsHaveRowsShapesAndCompiledPaths) {
  const std::vector<std::string> core = ParseOpList(ReadFile("ops/core_aten_ops.txt"));
  ASSERT_GT(core.size(), 150u);
  auto gaps = ParseGaps(ReadFile("ops/compiled_path_gaps.txt"));
  ASSERT_TRUE(gaps.ok()) << gaps.status();
  std::vector<RequiredOp> required;
  for (const std::string& op : core) required.push_back({op, "core ATen"});
  ExpectNoFindings(CheckRequired(ops::AllRowFacts(), required, *gaps, RegistryReturnsTensors));
}

}  // namespace
}  // namespace kiln::testing
