// The importer's own behaviour, with a small converter registry of its own
// (the op families have their own conformance suites).
#include "frontend/onnx/importer.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "frontend/onnx/converter.h"
#include "frontend/onnx/tensor_proto.h"
#include "gtest/gtest.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "ir/verifier.h"

namespace kiln::frontend::onnx_import {
namespace {

// A model computing y = Neg(Neg(x)) (+ a constant initializer input to Add).
onnx::ModelProto TinyModel(int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("tiny");
  auto* x = g->add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  auto* n1 = g->add_node();
  n1->set_op_type("Neg");
  n1->set_name("first");
  n1->add_input("x");
  n1->add_output("t");
  auto* n2 = g->add_node();
  n2->set_op_type("Neg");
  n2->set_name("second");
  n2->add_input("t");
  n2->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

ConverterRegistry NegOnly() {
  ConverterRegistry r;
  r.Add("Neg", 6, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(ir::Value * x, c.RequiredInput(0));
    ASSIGN_OR_RETURN(ir::Value * y, c.b().Op("aten::neg", {x}));
    return c.SetOutput(0, y);
  });
  return r;
}

absl::StatusOr<std::unique_ptr<ir::Graph>> Import(const onnx::ModelProto& m,
                                                  const ConverterRegistry& r) {
  ImportOptions options;
  options.converters = &r;
  return ImportModel(m, options);
}

TEST(ImporterTest, ConvertsNodesAndKeepsInferredTypes) {
  const ConverterRegistry r = NegOnly();
  auto g = Import(TinyModel(), r);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(ir::Verify(**g).ok());
  // Each ONNX node's name is the scope of what it became.
  EXPECT_EQ(ir::PrintGraph(**g),
            "graph(%x : Float(2, *)):\n"
            "  %t : Float(2, *) = aten::neg(%x), scope: first\n"
            "  %y : Float(2, *) = aten::neg(%t), scope: second\n"
            "  return (%y)\n");
}

TEST(ImporterTest, NodeNamesBecomeScopesThatPrintAndParseBack) {
  onnx::ModelProto m = TinyModel();
  m.mutable_graph()->mutable_node(0)->set_name("line\nbreak #comment");
  m.mutable_graph()->mutable_node(1)->clear_name();
  const ConverterRegistry r = NegOnly();
  auto g = Import(m, r);
  ASSERT_TRUE(g.ok()) << g.status();
  const std::string text = ir::PrintGraph(**g);
  EXPECT_EQ(text,
            "graph(%x : Float(2, *)):\n"
            "  %t : Float(2, *) = aten::neg(%x), scope: line_break _comment\n"
            "  %y : Float(2, *) = aten::neg(%t), scope: Neg->y\n"
            "  return (%y)\n");
  auto parsed = ir::ParseGraph(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(ir::PrintGraph(**parsed), text);
}

TEST(ImporterTest, NodeTypingHookSeesEveryConvertedNode) {
  int typed = 0;
  ImportOptions options;
  const ConverterRegistry r = NegOnly();
  options.converters = &r;
  options.infer_node_types = [&typed](ir::Node& n) {
    ++typed;
    EXPECT_FALSE(n.scope().empty());
    return absl::OkStatus();
  };
  auto g = ImportModel(TinyModel(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(typed, 2);
}

TEST(ImporterTest, OpsetsNewerThanKilnKnowsAreErrors) {
  ConverterRegistry r = NegOnly();
  auto g = Import(TinyModel(/*opset=*/99), r);
  ASSERT_FALSE(g.ok());
  EXPECT_TRUE(absl::StrContains(g.status().message(),
                                "imports opset 99 of domain ai.onnx; kiln knows opsets up to "))
      << g.status();
  // A converter written for opset 30 makes kiln know opsets up to 30 (past
  // what libonnx's schemas know).
  r.Add("Neg", 30, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(ir::Value * x, c.RequiredInput(0));
    ASSIGN_OR_RETURN(ir::Value * y, c.b().Op("aten::neg", {x}));
    return c.SetOutput(0, y);
  });
  EXPECT_EQ(r.NewestOpset("ai.onnx"), 30);
  g = Import(TinyModel(/*opset=*/30), r);
  EXPECT_TRUE(g.ok()) << g.status();
  g = Import(TinyModel(/*opset=*/31), r);
  ASSERT_FALSE(g.ok());
  EXPECT_TRUE(absl::StrContains(g.status().message(), "kiln knows opsets up to 30")) << g.status();
}

TEST(ImporterTest, LoadModelFileNamesThePathAndTheReason) {
  const std::string dir = ::testing::TempDir();
  auto m = LoadModelFile(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(absl::StrContains(m.status().message(), dir)) << m.status();
  EXPECT_TRUE(absl::StrContains(m.status().message(), "Is a directory")) << m.status();
  m = LoadModelFile(dir + "/no_such_model.onnx");
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(absl::StrContains(m.status().message(), "no_such_model.onnx")) << m.status();
}

TEST(ImporterTest, UnsupportedOpAndOpsetNameTheNode) {
  ConverterRegistry empty;
  auto g = Import(TinyModel(), empty);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "Neg (domain ai.onnx, opset 13, node 'first'): unsupported op");
  const ConverterRegistry r = NegOnly();
  g = Import(TinyModel(/*opset=*/5), r);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            "Neg (domain ai.onnx, opset 5, node 'first'): unsupported opset 5");
}

TEST(ImporterTest, UndefinedInputsAndMissingOutputsAreErrors) {
  const ConverterRegistry r = NegOnly();
  onnx::ModelProto m = TinyModel();
  m.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
  auto g = Import(m, r);
  ASSERT_FALSE(g.ok());
  EXPECT_TRUE(absl::StrContains(g.status().message(), "input 'nowhere' is not defined"))
      << g.status();
  m = TinyModel();
  m.mutable_graph()->mutable_output(0)->set_name("ghost");
  g = Import(m, r);
  ASSERT_FALSE(g.ok());
  EXPECT_TRUE(absl::StrContains(g.status().message(), "output 'ghost' is never produced"));
}

TEST(ImporterTest, InitializersBecomeConstantsAndBadOnesAreErrors) {
  const ConverterRegistry r = NegOnly();
  onnx::ModelProto m = TinyModel();
  onnx::GraphProto* g = m.mutable_graph();
  // x is now provided by an initializer: the graph has no runtime input.
  onnx::TensorProto* init = g->add_initializer();
  init->set_name("x");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(2);
  init->add_float_data(1.5f);
  init->add_float_data(-2.0f);
  EXPECT_TRUE(RuntimeInputs(m).empty());
  auto imported = Import(m, r);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE((*imported)->block()->inputs().empty());

  init->set_raw_data(std::string(3, '\0'));  // 3 bytes for 2 floats
  imported = Import(m, r);
  ASSERT_FALSE(imported.ok());
  EXPECT_TRUE(absl::StrContains(imported.status().message(),
                                "initializer 'x': tensor 'x' (FLOAT): raw_data has 3 bytes"))
      << imported.status();
}

TEST(ImporterTest, CorruptAndTruncatedBytesAreErrors) {
  std::string bytes;
  ASSERT_TRUE(TinyModel().SerializeToString(&bytes));
  EXPECT_TRUE(ParseModel(bytes).ok());
  auto truncated = ParseModel(absl::string_view(bytes).substr(0, bytes.size() / 2));
  ASSERT_FALSE(truncated.ok());
  EXPECT_TRUE(absl::StrContains(truncated.status().message(), "corrupt or truncated"));
  EXPECT_FALSE(ParseModel("\xff\xff\xff\xff garbage").ok());
}

TEST(TensorProtoTest, RoundTripsAndRejectsLies) {
  Tensor t = Tensor::Empty(DType::kInt64, {2, 2});
  for (int i = 0; i < 4; ++i) t.data<int64_t>()[i] = i * 7;
  auto back = TensorFromProto(TensorToProto(t, "t"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->ValueEquals(t));
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(-1);
  EXPECT_FALSE(TensorFromProto(p).ok());
  p.set_dims(0, int64_t{1} << 40);
  p.add_dims(int64_t{1} << 40);
  EXPECT_FALSE(TensorFromProto(p).ok());  // too many elements, nothing allocated
  p.set_data_type(onnx::TensorProto::STRING);
  EXPECT_EQ(TensorFromProto(p).status().code(), absl::StatusCode::kUnimplemented);
}

// Weights of a megabyte and more land in populated mapped memory: same
// values, aligned like any CPU storage, and a wrong size is still refused.
TEST(TensorProtoTest, LargeRawDataRoundTrips) {
  Tensor t = Tensor::Empty(DType::kFloat32, {3, 1 << 17});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i % 1000) * 0.5f;
  onnx::TensorProto p = TensorToProto(t, "big");
  ASSERT_GE(p.raw_data().size(), size_t{1} << 20);
  auto back = TensorFromProto(p);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->ValueEquals(t));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(back->raw_data()) % Storage::kAlignment, 0u);
  p.add_dims(2);
  EXPECT_FALSE(TensorFromProto(p).ok());
}

// Many protos adding up to a large model's weights convert on several
// threads: each result lands at its own index (the small ones, converted
// last, included), an error stays with its proto, and a raw_data override
// stands for the proto's field.
TEST(TensorProtoTest, ManyProtosConvertInOrderOnThreads) {
  std::vector<Tensor> want;
  std::vector<onnx::TensorProto> protos;
  for (int k = 0; k < 12; ++k) {
    // 16 MiB, 2 MiB, 4 KiB ... (72 MiB in all: above the threads' threshold).
    const int64_t n = k % 3 == 0 ? (4 << 20) : k % 3 == 1 ? (1 << 19) : 1024;
    Tensor t = Tensor::Empty(DType::kFloat32, {n});
    for (int64_t i = 0; i < n; i += 997) t.data<float>()[i] = static_cast<float>(k * 1000 + i % 1000);
    want.push_back(t);
    protos.push_back(TensorToProto(t, "w"));
  }
  std::vector<const onnx::TensorProto*> pointers;
  for (const onnx::TensorProto& p : protos) pointers.push_back(&p);
  protos[4].add_dims(2);  // its raw_data no longer matches its dims
  std::vector<std::optional<absl::string_view>> raw(protos.size());
  const std::string other = TensorToProto(want[2], "").raw_data();
  raw[5] = other;  // stands for proto 5's (same size) bytes
  std::vector<absl::StatusOr<Tensor>> got = TensorsFromProtos(pointers, raw);
  ASSERT_EQ(got.size(), protos.size());
  for (size_t k = 0; k < got.size(); ++k) {
    if (k == 4) {
      EXPECT_FALSE(got[k].ok());
      continue;
    }
    ASSERT_TRUE(got[k].ok()) << k << ": " << got[k].status();
    EXPECT_TRUE(got[k]->ValueEquals(want[k == 5 ? 2 : k])) << k;
  }
}

}  // namespace
}  // namespace kiln::frontend::onnx_import
