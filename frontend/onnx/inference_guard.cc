#include "frontend/onnx/inference_guard.h"

#include <exception>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "onnx/defs/schema.h"
#include "support/status.h"

namespace kiln::frontend::onnx_import {
namespace {

// Deeper nesting is refused by the importer (importer.cc) and would only
// deepen libonnx's recursion.
constexpr int kMaxGraphDepth = 32;

std::string Domain(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }

// Integer attributes that libonnx's inference divides by or sizes with
// (convPoolShapeInference divides by strides: SIGFPE for 0; SpaceToDepth
// and DepthToSpace by blocksize; Conv by group). Every op that has them
// needs them positive, so a model with 0 or less is invalid anyway.
constexpr const char* kPositiveAttributes[] = {"strides", "dilations", "kernel_shape", "group", "blocksize"};

absl::Status CheckPositiveAttributes(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    for (const char* name : kPositiveAttributes) {
      if (a.name() != name) continue;
      bool positive = !a.has_i() || a.i() > 0;
      for (int64_t v : a.ints()) positive = positive && v > 0;
      if (!positive) return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' must be positive"));
    }
  }
  return absl::OkStatus();
}

using Opsets = std::unordered_map<std::string, int>;

absl::Status CheckGraph(const onnx::GraphProto& g, const Opsets& opsets, int depth) {
  if (depth > kMaxGraphDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("subgraphs nested deeper than ", kMaxGraphDepth, " (graph '", g.name(), "')"));
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    auto where = [&] {
      return absl::StrCat("graph '", g.name(), "' node ", i, " (", node.op_type(), " '", node.name(), "')");
    };
    if (absl::Status positive = CheckPositiveAttributes(node); !positive.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": ", positive.message()));
    }
    // A domain the model does not import: libonnx's inference fails this
    // node with an exception, which the importer already tolerates.
    auto opset = opsets.find(Domain(node.domain()));
    if (opset != opsets.end()) {
      const onnx::OpSchema* schema =
          onnx::OpSchemaRegistry::Schema(node.op_type(), opset->second, Domain(node.domain()));
      if (schema != nullptr) {
        try {
          schema->Verify(node);
        } catch (const std::exception& e) {
          return absl::InvalidArgumentError(absl::StrCat(where(), ": ", e.what()));
        }
      }
    }
    // Inference descends into every subgraph attribute, known schema or not.
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) RETURN_IF_ERROR(CheckGraph(a.g(), opsets, depth + 1));
      for (const onnx::GraphProto& sub : a.graphs()) RETURN_IF_ERROR(CheckGraph(sub, opsets, depth + 1));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSafeForOnnxInference(const onnx::ModelProto& model) {
  Opsets opsets;
  for (const onnx::OperatorSetIdProto& o : model.opset_import()) {
    opsets[Domain(o.domain())] = static_cast<int>(o.version());
  }
  return CheckGraph(model.graph(), opsets, 0);
}

}  // namespace kiln::frontend::onnx_import
