#include "frontend/pt2/program.h"

#include <string>

#include "absl/strings/str_replace.h"
#include "frontend/pt2/test_archive.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend::pt2 {
namespace {

using ::testing::HasSubstr;
using testing::Meta;
using testing::ProgramJson;

ProgramJson AddOne() {
  ProgramJson p;
  p.input_specs = R"({"user_input": {"arg": {"as_tensor": {"name": "x"}}}})";
  p.graph_inputs = R"({"as_tensor": {"name": "x"}})";
  p.nodes = R"({"target": "torch.ops.aten.add.Tensor", "name": "add",
      "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}, "kind": 1},
                 {"name": "other", "arg": {"as_int": 1}, "kind": 1}],
      "outputs": [{"as_tensor": {"name": "add"}}], "metadata": {}})";
  p.graph_outputs = R"({"as_tensor": {"name": "add"}})";
  p.output_specs = R"({"user_output": {"arg": {"as_tensor": {"name": "add"}}}})";
  p.tensor_values = Meta("x", 7, {"2", "s0"}) + ", " + Meta("add", 7, {"2", "s0"});
  p.range_constraints = R"("s0": {"min_val": 2, "max_val": null})";
  return p;
}

TEST(ProgramTest, ParsesAProgram) {
  absl::StatusOr<ExportedProgram> p = ParseExportedProgram(AddOne().ToString(), "m.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->schema_major, 8);
  EXPECT_EQ(p->schema_minor, 17);
  ASSERT_EQ(p->graph.nodes.size(), 1u);
  const Node& n = p->graph.nodes[0];
  EXPECT_EQ(n.target, "torch.ops.aten.add.Tensor");
  EXPECT_EQ(n.name, "add");
  ASSERT_EQ(n.inputs.size(), 2u);
  EXPECT_EQ(n.inputs[1].arg.kind, Argument::Kind::kInt);
  EXPECT_EQ(n.inputs[1].arg.int_value, 1);
  const TensorMeta& x = p->graph.tensor_values.at("x");
  EXPECT_EQ(x.dtype, DType::kFloat32);
  EXPECT_EQ(x.sizes[0].value, 2);
  EXPECT_FALSE(x.sizes[1].value);
  EXPECT_EQ(*x.sizes[1].expr->AsSymbol(), "s0");
  EXPECT_EQ(p->range_constraints.at("s0").min, 2);
  EXPECT_FALSE(p->range_constraints.at("s0").max);
  ASSERT_EQ(p->input_specs.size(), 1u);
  EXPECT_EQ(p->input_specs[0].kind, InputSpec::Kind::kUserInput);
  EXPECT_EQ(p->verifiers, std::vector<std::string>{"TRAINING"});
}

std::string ErrorOf(const std::string& json) {
  absl::StatusOr<ExportedProgram> p = ParseExportedProgram(json, "m.json");
  EXPECT_FALSE(p.ok());
  return std::string(p.status().message());
}

TEST(ProgramTest, ErrorsNameTheJsonPath) {
  const std::string good = AddOne().ToString();
  EXPECT_THAT(ErrorOf("{\"graph_module\": "), HasSubstr("m.json: malformed JSON"));
  EXPECT_THAT(ErrorOf("[]"), HasSubstr("(top level): expected an object with 'schema_version'"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"\"major\": 8", "\"major\": 5"}})),
              HasSubstr("export schema version 5.17; kiln reads version 8.x"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"\"dtype\": 7", "\"dtype\": 11"}})),
              HasSubstr("graph_module.graph.tensor_values.add.dtype: unsupported dtype (ScalarType 11)"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"{\"as_int\": 1}", "{\"as_int\": 1, \"as_float\": 1.0}"}})),
              HasSubstr("graph_module.graph.nodes[0].inputs[1].arg: expected a one-member object"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"{\"as_int\": 1}", "{\"as_widget\": 1}"}})),
              HasSubstr("nodes[0].inputs[1].arg: unsupported argument kind 'as_widget'"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"\"target\": \"torch.ops.aten.add.Tensor\", ", ""}})),
              HasSubstr("nodes[0]: missing 'target'"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"\"layout\": 7}", "\"layout\": 1}"}})),
              HasSubstr("unsupported layout 1 (only strided tensors)"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"\"expr_str\": \"s0\"", "\"expr_str\": \"s0 +\""}})),
              HasSubstr("tensor_values.add.sizes[1].as_expr.expr_str: symbolic expression 's0 +'"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"\"as_int\": 1}", "\"as_int\": 99999999999999999999}"}})),
              HasSubstr("nodes[0].inputs[1].arg.as_int: expected an integer"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"\"as_int\": 1}", "\"as_int\": 9223372036854775808}"}})),
              HasSubstr("nodes[0].inputs[1].arg.as_int: integer out of the int64 range"));
  EXPECT_THAT(ErrorOf(absl::StrReplaceAll(good, {{"user_input", "user_widget"}})),
              HasSubstr("unknown input spec kind 'user_widget'"));
}

TEST(ProgramTest, PayloadConfig) {
  absl::StatusOr<std::map<std::string, PayloadMeta>> c = ParsePayloadConfig(
      "{\"config\": {\"w\": {\"path_name\": \"weight_0\", \"is_param\": true, \"use_pickle\": false, "
      "\"tensor_meta\": " + Meta("w", 7, {"2", "3"}).substr(5) + "}}}",
      "cfg.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->at("w").path_name, "weight_0");
  EXPECT_TRUE(c->at("w").is_param);
  EXPECT_EQ(c->at("w").tensor_meta->sizes.size(), 2u);
  EXPECT_THAT(std::string(ParsePayloadConfig("{\"config\": {\"w\": {}}}", "cfg.json").status().message()),
              HasSubstr("cfg.json: config.w: missing 'path_name'"));
}

TEST(ProgramTest, EnumsMapToKilnCodes) {
  EXPECT_EQ(DTypeFromSerialized(7), DType::kFloat32);
  EXPECT_EQ(DTypeFromSerialized(5), DType::kInt64);
  EXPECT_EQ(DTypeFromSerialized(12), DType::kBool);
  EXPECT_EQ(DTypeFromSerialized(13), DType::kBFloat16);
  EXPECT_EQ(DTypeFromSerialized(29), std::nullopt);  // float8
  EXPECT_EQ(LayoutFromSerialized(7), 0);
  EXPECT_EQ(MemoryFormatFromSerialized(1), 0);  // contiguous_format
  EXPECT_EQ(MemoryFormatFromSerialized(4), 1);  // preserve_format
}

}  // namespace
}  // namespace kiln::frontend::pt2
