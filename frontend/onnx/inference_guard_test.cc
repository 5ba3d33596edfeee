// libonnx's shape inference runs only on models whose nodes pass their
// schemas' checks (inference_guard.h); models that would crash it import
// without its facts, as a Status or a graph, never a SIGSEGV.
#include "frontend/onnx/inference_guard.h"

#include <string>

#include "absl/strings/match.h"
#include "frontend/onnx/importer.h"
#include "gtest/gtest.h"
#include "ir/verifier.h"
#include "support/atomic_file.h"

namespace kiln::frontend::onnx_import {
namespace {

onnx::ModelProto Load(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<onnx::ModelProto> m = ParseModel(bytes.ok() ? *bytes : "");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : onnx::ModelProto();
}

// Found by importer_fuzz: a Scan whose "num_scan_inputs" attribute name is
// mangled ("num_scan_inputq") and whose first body output has no type.
// libonnx 1.12's Scan inference dereferences the missing attribute.
constexpr char kScanCrash[] = "frontend/onnx/testdata/regressions/scan_body_output_without_type.onnx";

TEST(InferenceGuardTest, RefusesTheScanThatCrashedLibonnx) {
  const onnx::ModelProto m = Load(kScanCrash);
  absl::Status s = CheckSafeForOnnxInference(m);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "Scan")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "num_scan_inputq")) << s;  // the mangled name
}

TEST(InferenceGuardTest, ImportOfTheScanCrashIsAStatusNotASignal) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ImportModel(Load(kScanCrash));
  if (g.ok()) {
    EXPECT_TRUE(ir::Verify(**g).ok());
  } else {
    EXPECT_TRUE(absl::StrContains(g.status().message(), "Scan")) << g.status();
  }
}

// Found by importer_fuzz: a Conv with strides [2, 0]; libonnx 1.12's
// convPoolShapeInference divides by the stride (SIGFPE).
TEST(InferenceGuardTest, RefusesAZeroStrideAndImportsWithoutACrash) {
  const onnx::ModelProto m = Load("frontend/onnx/testdata/regressions/conv_zero_stride.onnx");
  absl::Status s = CheckSafeForOnnxInference(m);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "Conv")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "'strides' must be positive")) << s;
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ImportModel(m);
  if (g.ok()) {
    EXPECT_TRUE(ir::Verify(**g).ok());
  }
}

// Found by importer_fuzz: a Conv whose input has rank 2 and weight rank 4;
// libonnx 1.12's convPoolShapeInference reads spatial dims the input does
// not have (SIGSEGV).
TEST(InferenceGuardTest, RefusesAConvInputWithoutSpatialDimsAndImportsWithoutACrash) {
  const onnx::ModelProto m = Load("frontend/onnx/testdata/regressions/conv_rank2_input.onnx");
  absl::Status s = CheckSafeForOnnxInference(m);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "has rank 2; expected at least 3")) << s;
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ImportModel(m);
  if (g.ok()) {
    EXPECT_TRUE(ir::Verify(**g).ok());
  }
}

TEST(InferenceGuardTest, ValidControlFlowModelsKeepInference) {
  for (const char* name : {"test_scan_sum", "test_scan9_sum", "test_loop11", "conv"}) {
    const onnx::ModelProto m = Load(std::string("frontend/onnx/testdata/fuzz/") + name + ".onnx");
    EXPECT_TRUE(CheckSafeForOnnxInference(m).ok()) << name << ": " << CheckSafeForOnnxInference(m);
  }
}

onnx::ModelProto OneNode(const std::string& op_type, int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op_type);
  n->set_name("n0");
  return m;
}

TEST(InferenceGuardTest, NamesTheNodeAndChecksSubgraphs) {
  // A Relu without its input: inference would read input 0.
  onnx::ModelProto m = OneNode("Relu", 14);
  m.mutable_graph()->mutable_node(0)->add_output("y");
  absl::Status s = CheckSafeForOnnxInference(m);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "graph 'g' node 0 (Relu 'n0')")) << s;

  // The same Relu inside an If's branch is found too.
  onnx::ModelProto outer = OneNode("If", 14);
  onnx::NodeProto* if_node = outer.mutable_graph()->mutable_node(0);
  if_node->add_input("c");
  if_node->add_output("y");
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* a = if_node->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = m.graph();
  }
  s = CheckSafeForOnnxInference(outer);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "Relu")) << s;

  // Ops of domains the model does not import are left to libonnx, which
  // throws for them.
  onnx::ModelProto custom = OneNode("Whatever", 14);
  custom.mutable_graph()->mutable_node(0)->set_domain("com.example");
  EXPECT_TRUE(CheckSafeForOnnxInference(custom).ok());
}

}  // namespace
}  // namespace kiln::frontend::onnx_import
