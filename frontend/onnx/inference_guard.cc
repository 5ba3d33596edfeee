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
using Ranks = std::unordered_map<std::string, int>;

// The ops libonnx infers through convPoolShapeInference, which indexes the
// input's spatial dims by the weight's and the attributes' lengths without
// checking them (a rank-2 input to a Conv with a rank-4 weight is a SIGSEGV,
// found by importer_fuzz).
bool UsesConvPoolInference(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "ConvInteger" || op == "QLinearConv" ||
         op == "MaxPool" || op == "AveragePool" || op == "LpPool";
}

absl::Status CheckConvPoolRanks(const onnx::NodeProto& node, const Ranks& ranks) {
  if (node.input_size() == 0) return absl::OkStatus();
  auto x = ranks.find(node.input(0));
  if (x == ranks.end()) return absl::OkStatus();  // unknown rank: libonnx checks it
  const int spatial = x->second - 2;
  if (spatial < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", node.input(0), "' has rank ", x->second, "; expected at least 3 (N, C, spatial)"));
  }
  // QLinearConv's weight is input 3; the others' input 1.
  const int w_index = node.op_type() == "QLinearConv" ? 3 : 1;
  if (node.op_type().find("Pool") == std::string::npos) {  // pools have no weight
    if (node.input_size() > w_index) {
      auto w = ranks.find(node.input(w_index));
      if (w != ranks.end() && w->second != x->second) {
        return absl::InvalidArgumentError(absl::StrCat("weight '", node.input(w_index), "' has rank ", w->second,
                                                       ", the input rank ", x->second));
      }
    }
  }
  for (const onnx::AttributeProto& a : node.attribute()) {
    const int want = a.name() == "pads" ? 2 * spatial
                     : (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape" ||
                        a.name() == "output_padding" || a.name() == "output_shape")
                         ? spatial
                         : -1;
    if (want >= 0 && a.ints_size() != 0 && a.ints_size() != want) {
      return absl::InvalidArgumentError(absl::StrCat("attribute '", a.name(), "' has ", a.ints_size(),
                                                     " values; the input's ", spatial, " spatial dims want ", want));
    }
  }
  return absl::OkStatus();
}

// Ranks declared for a graph's inputs, value infos and initializers.
Ranks DeclaredRanks(const onnx::GraphProto& g) {
  Ranks ranks;
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) {
      ranks[vi.name()] = vi.type().tensor_type().shape().dim_size();
    }
  };
  for (const auto& vi : g.input()) add(vi);
  for (const auto& vi : g.value_info()) add(vi);
  for (const auto& t : g.initializer()) ranks[t.name()] = t.dims_size();
  return ranks;
}

absl::Status CheckGraph(const onnx::GraphProto& g, const Opsets& opsets, int depth) {
  if (depth > kMaxGraphDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("subgraphs nested deeper than ", kMaxGraphDepth, " (graph '", g.name(), "')"));
  }
  const Ranks ranks = DeclaredRanks(g);
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    auto where = [&] {
      return absl::StrCat("graph '", g.name(), "' node ", i, " (", node.op_type(), " '", node.name(), "')");
    };
    if (absl::Status positive = CheckPositiveAttributes(node); !positive.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": ", positive.message()));
    }
    if (UsesConvPoolInference(node.op_type()) && Domain(node.domain()).empty()) {
      if (absl::Status conv = CheckConvPoolRanks(node, ranks); !conv.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where(), ": ", conv.message()));
      }
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
