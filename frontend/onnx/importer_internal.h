// The importer's state, shared by importer.cc and the ConvertContext methods
// (converter_context.cc). Not part of the public API.
#ifndef KILN_FRONTEND_ONNX_IMPORTER_INTERNAL_H_
#define KILN_FRONTEND_ONNX_IMPORTER_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "frontend/graph_builder.h"
#include "frontend/onnx/converter.h"
#include "ir/ir.h"
#include "onnx/onnx_pb.h"

namespace kiln::frontend::onnx_import {

class Importer {
 public:
  // Subgraphs nest at most this deep (If inside Loop inside ...).
  static constexpr int kMaxDepth = 32;

  Importer(ir::Graph* graph, const ConverterRegistry* converters,
           std::function<absl::Status(ir::Node&)> infer_node_types = nullptr)
      : graph_(graph), converters_(converters), infer_node_types_(std::move(infer_node_types)) {}

  absl::Status ImportMain(const onnx::ModelProto& model);
  // ImportOptions::main_raw_data.
  void SetMainRawData(std::vector<std::optional<absl::string_view>> raw_data) { main_raw_data_ = std::move(raw_data); }
  // Facts about value types (from shape inference) for converters; the first
  // fact recorded for a name wins.
  void AddValueInfo(const onnx::GraphProto& g);

  // Converts `g`'s initializers and nodes with `builder` in a new scope in
  // which `g`'s inputs are bound to `inputs`; returns `g`'s outputs.
  absl::StatusOr<std::vector<ir::Value*>> ConvertGraph(const onnx::GraphProto& g,
                                                       absl::Span<ir::Value* const> inputs,
                                                       GraphBuilder& builder);

  // Name lookup through the scope stack (innermost first); null if unknown.
  ir::Value* Lookup(const std::string& name) const;
  void Bind(const std::string& name, ir::Value* v);
  // What shape inference (or the model's value_info) says about `name`.
  const onnx::TypeProto* TypeOf(const std::string& name) const;
  // Version of the opset imported for `domain` ("" = ai.onnx); 0 if none.
  int64_t OpsetFor(const std::string& domain) const;

  ir::Graph* graph() const { return graph_; }
  int depth() const { return static_cast<int>(scopes_.size()); }

 private:
  absl::Status ConvertNode(const onnx::NodeProto& node, GraphBuilder& builder);
  void CollectValueInfo(const onnx::GraphProto& g, int depth);

  ir::Graph* graph_;
  const ConverterRegistry* converters_;
  std::function<absl::Status(ir::Node&)> infer_node_types_;
  absl::flat_hash_map<std::string, int64_t> opsets_;
  absl::flat_hash_map<std::string, onnx::TypeProto> types_;
  std::vector<absl::flat_hash_map<std::string, ir::Value*>> scopes_;
  std::vector<std::optional<absl::string_view>> main_raw_data_;
};

// `model` without the data of its large initializers (they become typed
// graph inputs): what shape inference needs, at a fraction of the copy.
onnx::ModelProto WeightlessCopy(const onnx::ModelProto& model);

// kiln type of an ONNX type (tensor, sequence, optional); Any for others.
ir::TypePtr TypeFromOnnx(const onnx::TypeProto& t);
// The scope the nodes converted from `node` carry: its name (else op type and
// first output), printable ASCII without '#', at most 256 characters.
std::string NodeScope(const onnx::NodeProto& node);
// Sets `scope` on `n` and the nodes of its blocks that have none yet.
void SetScope(ir::Node* n, absl::string_view scope);
// A valid TorchScript debug name from an ONNX name ("" when nothing usable).
std::string SanitizedName(absl::string_view onnx_name);

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_FRONTEND_ONNX_IMPORTER_INTERNAL_H_
