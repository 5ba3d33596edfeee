// The ONNX op converter interface. Each ONNX op maps onto canonical kiln ops
// (aten ops, plus kiln:: ops where ATen has no equivalent) through a
// converter registered for an (op type, domain, since-version) triple:
//
//   void RegisterMathConverters(ConverterRegistry& r) {
//     r.Add("Relu", 6, [](ConvertContext& c) -> absl::Status {
//       ASSIGN_OR_RETURN(ir::Value* y, c.b().Op("aten::relu", {c.input(0)}));
//       return c.SetOutput(0, y);
//     });
//   }
//
// A node whose opset is older than every registered since-version of its op
// is an unsupported-opset error; otherwise the newest converter at or below
// the node's opset runs (as ONNX versions its ops). Converters read
// attributes with the spec's defaults, may read constant inputs (initializers
// and Constant outputs), and return errors through c.Error(...) so that the
// message names the op type, domain, opset and node name.
#ifndef KILN_FRONTEND_ONNX_CONVERTER_H_
#define KILN_FRONTEND_ONNX_CONVERTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "frontend/graph_builder.h"
#include "ir/ir.h"
#include "onnx/onnx_pb.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::frontend::onnx_import {

class Importer;

class ConvertContext {
 public:
  ConvertContext(Importer* importer, const onnx::NodeProto* node, int64_t opset,
                 GraphBuilder* builder)
      : importer_(importer), node_(node), opset_(opset), builder_(builder) {}

  const onnx::NodeProto& node() const { return *node_; }
  const std::string& op_type() const { return node_->op_type(); }
  // The opset version in force for the node's domain.
  int64_t opset() const { return opset_; }
  GraphBuilder& b() { return *builder_; }

  // --- inputs ---
  int num_inputs() const { return node_->input_size(); }
  // Input i, or null when it is absent (beyond the list or named "").
  ir::Value* input(int i) const;
  bool has_input(int i) const { return input(i) != nullptr; }
  // Input i, or an error naming it when absent.
  absl::StatusOr<ir::Value*> RequiredInput(int i) const;
  // The value of input i when it is known at import time (an initializer, a
  // Constant, or a value the importer folded); nullopt otherwise.
  std::optional<Tensor> ConstantInput(int i) const;
  // Input i as an int list (a 1-D int tensor such as Reshape's shape): as a
  // constant int[] when known, else through kiln::tensor_to_int_list.
  absl::StatusOr<ir::Value*> IntListInput(int i);
  // The static facts ONNX shape inference gave input i (dtype, rank, dims).
  ir::TensorInfo InputInfo(int i) const;
  // Input i's rank when known, else an error saying the op needs it.
  absl::StatusOr<int64_t> InputRank(int i) const;
  absl::StatusOr<DType> InputDType(int i) const;

  // --- attributes (the spec's defaults go in `def`) ---
  bool HasAttr(absl::string_view name) const { return FindAttr(name) != nullptr; }
  const onnx::AttributeProto* FindAttr(absl::string_view name) const;
  int64_t AttrInt(absl::string_view name, int64_t def) const;
  float AttrFloat(absl::string_view name, float def) const;
  std::string AttrString(absl::string_view name, absl::string_view def) const;
  std::vector<int64_t> AttrInts(absl::string_view name, std::vector<int64_t> def = {}) const;
  std::vector<float> AttrFloats(absl::string_view name, std::vector<float> def = {}) const;
  std::vector<std::string> AttrStrings(absl::string_view name) const;
  absl::StatusOr<std::optional<Tensor>> AttrTensor(absl::string_view name) const;
  // Required attributes: an error naming the attribute when absent.
  absl::StatusOr<int64_t> RequiredAttrInt(absl::string_view name) const;
  absl::StatusOr<std::vector<int64_t>> RequiredAttrInts(absl::string_view name) const;

  // --- subgraphs (If/Loop/Scan bodies) ---
  // Converts graph attribute `name` into `block`, whose inputs the caller
  // has already added (one per subgraph input, in order). Names of the outer
  // scope are visible inside. Returns the subgraph's output values (in the
  // block's scope; the caller registers them as block outputs).
  absl::StatusOr<std::vector<ir::Value*>> ConvertSubgraph(absl::string_view name,
                                                          ir::Block* block);
  // Converts graph attribute `name` at the end of the current insertion
  // block (b()), with the subgraph's inputs bound to `inputs` (one per
  // subgraph input, any values of that block's scope): a prim::Loop body,
  // whose block inputs are (iteration, carried...), feeds ONNX bodies values
  // computed inside it.
  absl::StatusOr<std::vector<ir::Value*>> ConvertSubgraphInline(absl::string_view name,
                                                                absl::Span<ir::Value* const> inputs);
  const onnx::GraphProto* AttrGraph(absl::string_view name) const;

  // The value an ONNX name denotes in the current scope (outer scopes
  // included), or null. Inputs of this node should use input(i); this is for
  // attributes that name values (Gradient's `y`).
  ir::Value* LookupName(absl::string_view onnx_name) const;

  // --- outputs ---
  int num_outputs() const { return node_->output_size(); }
  // Whether output i is wanted (present and not named "").
  bool has_output(int i) const;
  // Binds output i; refines the value's type with the facts shape inference
  // has for the output name. Binding an absent output is a no-op.
  absl::Status SetOutput(int i, ir::Value* v);

  // An error whose message names the op type, domain, opset and node name:
  // "Conv (domain ai.onnx, opset 11, node 'conv1'): <what>".
  absl::Status Error(absl::string_view what) const;
  absl::Status Unsupported(absl::string_view what) const;

 private:
  Importer* importer_;
  const onnx::NodeProto* node_;
  int64_t opset_;
  GraphBuilder* builder_;
};

using ConverterFn = std::function<absl::Status(ConvertContext&)>;

class ConverterRegistry {
 public:
  // Registers `fn` for `op_type` in `domain` ("" is the default ai.onnx
  // domain) from opset `since_version` on.
  void Add(absl::string_view op_type, int64_t since_version, ConverterFn fn) {
    Add("", op_type, since_version, std::move(fn));
  }
  void Add(absl::string_view domain, absl::string_view op_type, int64_t since_version,
           ConverterFn fn);
  // The newest converter with since_version <= opset, or null.
  const ConverterFn* Find(absl::string_view domain, absl::string_view op_type,
                          int64_t opset) const;
  bool Knows(absl::string_view domain, absl::string_view op_type) const;
  // The newest since_version of any converter of `domain` (0: none): the
  // newest opset a converter was written for.
  int64_t NewestOpset(absl::string_view domain) const;
  // Every (domain, op type) registered, sorted.
  std::vector<std::pair<std::string, std::string>> OpTypes() const;

 private:
  // (domain, op_type) -> since_version -> fn.
  absl::flat_hash_map<std::pair<std::string, std::string>, std::map<int64_t, ConverterFn>>
      table_;
};

// The registry with every converter family (ops_*.cc) registered.
const ConverterRegistry& DefaultConverters();

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_FRONTEND_ONNX_CONVERTER_H_
