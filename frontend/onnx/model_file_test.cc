#include "frontend/onnx/model_file.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "gtest/gtest.h"
#include "ir/text_printer.h"
#include "support/atomic_file.h"

namespace kiln::frontend::onnx_import {
namespace {

Tensor Floats(int64_t n, float scale) {
  Tensor t = Tensor::Empty(DType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i % 97) * scale;
  return t;
}

// y = (x + big) + small: a large and a small initializer, plus fields
// around them (the graph's name, an input, a node, an output).
onnx::ModelProto TwoWeightModel(int64_t big) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  *g->add_initializer() = TensorToProto(Floats(big, 0.5f), "big");
  *g->add_initializer() = TensorToProto(Floats(big, 0.25f), "also_big");
  *g->add_initializer() = TensorToProto(Floats(big, 0.125f).View(Floats(big, 0.125f), {4}, {1}, 0), "small");
  for (const char* name : {"x"}) {
    onnx::ValueInfoProto* in = g->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(big);
  }
  onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("x");
  add->add_input("big");
  add->add_output("t");
  onnx::NodeProto* add2 = g->add_node();
  add2->set_op_type("Add");
  add2->add_input("t");
  add2->add_input("also_big");
  add2->add_output("y");
  g->add_output()->set_name("y");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

TEST(ModelFileTest, StripsLargeRawDataAndViewsIt) {
  const onnx::ModelProto m = TwoWeightModel(20000);  // 80 KB each
  const std::string bytes = m.SerializeAsString();
  std::optional<StrippedModel> s = StripLargeRawData(bytes, kInPlaceRawDataBytes);
  ASSERT_TRUE(s.has_value());
  EXPECT_LT(s->bytes.size(), 1000u);
  ASSERT_EQ(s->raw_data.size(), 3u);
  ASSERT_TRUE(s->raw_data[0].has_value());
  ASSERT_TRUE(s->raw_data[1].has_value());
  EXPECT_FALSE(s->raw_data[2].has_value());  // small: kept in the proto
  EXPECT_EQ(*s->raw_data[0], m.graph().initializer(0).raw_data());
  EXPECT_EQ(*s->raw_data[1], m.graph().initializer(1).raw_data());
  // The stripped bytes parse to the model less those two fields.
  absl::StatusOr<onnx::ModelProto> parsed = ParseModel(s->bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  onnx::ModelProto expected = m;
  expected.mutable_graph()->mutable_initializer(0)->clear_raw_data();
  expected.mutable_graph()->mutable_initializer(1)->clear_raw_data();
  EXPECT_EQ(parsed->SerializeAsString(), expected.SerializeAsString());
}

TEST(ModelFileTest, LeavesWhatItDoesNotFollowToTheParser) {
  const std::string bytes = TwoWeightModel(20000).SerializeAsString();
  // Nothing large enough.
  EXPECT_FALSE(StripLargeRawData(bytes, bytes.size()).has_value());
  // Truncated, garbage, a group, a second graph field.
  EXPECT_FALSE(StripLargeRawData(bytes.substr(0, bytes.size() - 7), 1).has_value());
  EXPECT_FALSE(StripLargeRawData("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 1).has_value());
  EXPECT_FALSE(StripLargeRawData("\x0b", 1).has_value());
  onnx::ModelProto second;
  second.mutable_graph()->set_name("again");
  EXPECT_FALSE(StripLargeRawData(bytes + second.SerializeAsString(), 1).has_value());
  EXPECT_FALSE(StripLargeRawData("", 1).has_value());
}

TEST(ModelFileTest, MappedImportEqualsTheWholeParse) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/model_file_test.onnx");
  ASSERT_TRUE(WriteFile(path, TwoWeightModel(20000).SerializeAsString()).ok());
  absl::StatusOr<MappedModel> mapped = MapModelFile(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  ASSERT_EQ(mapped->raw_data.size(), 3u);
  EXPECT_FALSE(mapped->model.graph().initializer(0).has_raw_data());
  ImportOptions options;
  options.main_raw_data = mapped->raw_data;
  absl::StatusOr<std::unique_ptr<ir::Graph>> in_place = ImportModel(mapped->model, options);
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  absl::StatusOr<onnx::ModelProto> whole = LoadModelFile(path);
  ASSERT_TRUE(whole.ok()) << whole.status();
  absl::StatusOr<std::unique_ptr<ir::Graph>> parsed = ImportModel(*whole);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(ir::PrintGraph(**in_place), ir::PrintGraph(**parsed));
  // A view of the wrong size is refused like a lying raw_data field.
  options.main_raw_data[0] = mapped->raw_data[0]->substr(4);
  absl::StatusOr<std::unique_ptr<ir::Graph>> bad = ImportModel(mapped->model, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "big")) << bad.status();
  // Errors name the path.
  absl::StatusOr<MappedModel> missing = MapModelFile(path + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "model_file_test.onnx.missing"));
}

}  // namespace
}  // namespace kiln::frontend::onnx_import
