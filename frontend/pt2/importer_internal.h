// The importer's machinery, shared by importer.cc (driver, arguments,
// functionalization) and the rule files (ops_rules.cc: export-only ops
// mapped onto kiln ops; ops_views.cc: writing through views; ops_control.cc:
// higher-order and Python-operator nodes).
#ifndef KILN_FRONTEND_PT2_IMPORTER_INTERNAL_H_
#define KILN_FRONTEND_PT2_IMPORTER_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "frontend/graph_builder.h"
#include "frontend/pt2/program.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "ir/schema.h"

namespace kiln::frontend::pt2 {

class Importer;

// A named value of the program being imported. A view remembers the node
// that made it from its parent, so that it can be recomputed after a write
// into its base (functionalization).
struct Binding {
  ir::Value* value = nullptr;
  std::string parent;               // "" for a base
  std::string root;                 // the base at the end of the parent chain
  const Node* view_node = nullptr;  // made `value` from `parent`
  int list_index = -1;              // element of a list-returning view (split)
  int64_t version = 0;              // the root's version `value` reflects
  int depth = 0;                    // length of the parent chain
};

// One graph's names (the top level, or a higher-order op's subgraph).
struct Scope {
  const Graph* graph = nullptr;
  absl::flat_hash_map<std::string, Binding> bindings;
  absl::flat_hash_map<std::string, int64_t> versions;  // per root
};

// What a rule sees of the node it converts: its schema-ordered arguments
// (defaults filled in), their constant values, and the metadata of its
// inputs and outputs.
class NodeContext {
 public:
  NodeContext(Importer* importer, const Node& node, const ir::FunctionSchema& schema,
              std::vector<ir::Value*> args)
      : importer_(importer), node_(node), schema_(schema), args_(std::move(args)) {}

  const Node& node() const { return node_; }
  const ir::FunctionSchema& schema() const { return schema_; }
  GraphBuilder& builder();
  Importer& importer() { return *importer_; }

  // The argument by schema name; Internal error for a name the schema lacks
  // (a rule bug).
  absl::StatusOr<ir::Value*> Arg(absl::string_view name) const;
  std::vector<ir::Value*>& args() { return args_; }
  bool IsNone(absl::string_view name) const;
  std::optional<int64_t> ConstInt(absl::string_view name) const;
  std::optional<double> ConstDouble(absl::string_view name) const;
  std::optional<bool> ConstBool(absl::string_view name) const;
  std::optional<std::vector<int64_t>> ConstIntList(absl::string_view name) const;
  // Metadata of the node's i-th output tensor (null when it has none).
  const TensorMeta* OutputMeta(size_t i) const;
  // Metadata of the tensor the node passes as argument `name` (null when
  // that argument is not a named tensor).
  const TensorMeta* InputMeta(absl::string_view name) const;
  // Metadata of a value (by the type kiln gives it): static sizes when known.
  static std::optional<std::vector<int64_t>> StaticSizes(const ir::Value* v);
  static std::optional<DType> DTypeOf(const ir::Value* v);

  // An op through the registry (GraphBuilder::Op): an error names the node.
  absl::StatusOr<ir::Value*> Op(absl::string_view kind, std::vector<ir::Value*> inputs);
  absl::Status Error(absl::string_view what) const;

 private:
  Importer* importer_;
  const Node& node_;
  const ir::FunctionSchema& schema_;
  std::vector<ir::Value*> args_;
};

// A rule computes a node's results (one value per schema return; a list
// return is one list value) from its arguments.
using RuleFn = std::function<absl::StatusOr<std::vector<ir::Value*>>(NodeContext&)>;
// By qualified schema name ("aten::_to_copy").
const absl::flat_hash_map<std::string, RuleFn>& Rules();

// Writes `new_view` back into `parent` through the view that `view_node`
// made (element `list_index` of a list-returning view): the parent's new
// value. Unimplemented for views that cannot be written through (expand).
absl::StatusOr<ir::Value*> ScatterIntoParent(Importer& importer, const Node& view_node,
                                             int list_index, ir::Value* parent,
                                             ir::Value* new_view);
// Whether the output of `node` (schema `schema`) aliases its first argument
// (a view), judging `to`/`contiguous`/`reshape` by the traced metadata.
bool IsViewNode(const Importer& importer, const Node& node, const ir::FunctionSchema& schema);

// Higher-order ops (torch.ops.higher_order.*) and Python operators on
// symbolic values (_operator.mul, torch.sym_max, ...); they bind the node's
// outputs themselves.
absl::Status ConvertHigherOrderNode(Importer& importer, const Node& node);
absl::Status ConvertSymbolicNode(Importer& importer, const Node& node);

// matmul / linear as mm, addmm and bmm (ops_linalg.cc).
void AddLinearAlgebraRules(absl::flat_hash_map<std::string, RuleFn>& rules);
// a @ b as mm or a flattened-batch bmm when both shapes are static (the
// products backends run through BLAS), else aten::matmul; typed.
absl::StatusOr<ir::Value*> EmitMatmul(NodeContext& ctx, ir::Value* a, ir::Value* b);
// Types `v` as a tensor of `dtype` with static `sizes`.
void SetStaticType(ir::Value* v, DType dtype, std::vector<int64_t> sizes);

// Strides that lay `sizes` out row-major (size-1 dims take any stride).
bool IsRowMajor(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);

// Emits kiln ops for slice_scatter / select_scatter (cat of slices).
absl::StatusOr<ir::Value*> EmitSliceScatter(NodeContext& ctx, ir::Value* base, ir::Value* src,
                                            int64_t dim, std::optional<int64_t> start,
                                            std::optional<int64_t> end, int64_t step);
absl::StatusOr<ir::Value*> EmitSelectScatter(NodeContext& ctx, ir::Value* base, ir::Value* src,
                                             int64_t dim, int64_t index);

class Importer {
 public:
  Importer(ir::Graph* graph, std::string origin);

  GraphBuilder& builder() { return builder_; }
  const ir::OpRegistry& registry() const { return builder_.registry(); }
  Scope& scope() { return *scope_; }
  const std::string& origin() const { return origin_; }
  int nodes_converted() const { return nodes_converted_; }

  // "<origin>: node 'conv2d' (torch.ops.aten.conv2d.default): <what>".
  absl::Status NodeError(const Node& node, absl::string_view what) const;
  const TensorMeta* MetaOf(const std::string& name) const;

  // The current value of a name (recomputing a view whose base changed).
  absl::StatusOr<ir::Value*> Lookup(const std::string& name, const Node* user);
  void BindBase(const std::string& name, ir::Value* v);
  // The `n` elements of a list value (a prim::ListUnpack unless the list was
  // just built).
  std::vector<ir::Value*> Unpack(ir::Value* list, size_t n);
  // Types `v` from the program's metadata for `name` (dtype, static sizes).
  void TypeFromMeta(ir::Value* v, const std::string& name) const;
  ir::TypePtr TypeOfMeta(const TensorMeta& meta) const;

  // Converts every node of `graph` into the insertion block, in a scope
  // whose inputs are already bound.
  absl::Status ConvertNodes(const Graph& graph);
  absl::Status ConvertNode(const Node& node);
  // A pt2 argument as a value of `type` (schema-directed).
  absl::StatusOr<ir::Value*> ConvertArgument(const Argument& arg, const ir::TypePtr& type,
                                             std::optional<int64_t> fixed_list_size,
                                             const Node& node);
  // Converts the argument of a symbolic op: ints, floats, bools, names.
  absl::StatusOr<ir::Value*> ConvertScalar(const Argument& arg, const Node& node);

  // Runs a scope for a subgraph: binds `inputs` to its input names, converts
  // its nodes and returns its outputs' values.
  absl::StatusOr<std::vector<ir::Value*>> InlineGraph(const Graph& graph,
                                                      const std::vector<ir::Value*>& inputs,
                                                      const Node& owner);

  // The values a node computes, one per schema return, without binding them;
  // `self_override` replaces its first argument (recomputing a view).
  absl::StatusOr<std::vector<ir::Value*>> Emit(const Node& node, ir::Value* self_override);
  // The node's arguments in schema order (defaults filled in); an in-place
  // op is read as its functional form (add_ -> add).
  absl::StatusOr<NodeContext> ContextFor(const Node& node, ir::Value* self_override);
  // Whether any node or output of the program reads `name`.
  bool IsUsed(const std::string& name) const { return used_.contains(name); }
  void CollectUses(const Graph& graph);
  // Where to record the sizes of values that depend on symbols.
  void RecordSymbolicSizes(absl::flat_hash_map<std::string, std::vector<SymSize>>* out) {
    symbolic_sizes_ = out;
  }
  absl::StatusOr<const ir::Operator*> FindOperator(const Node& node) const;

 private:
  absl::Status Mutate(const std::string& name, ir::Value* new_value, const Node& node);
  absl::Status BindOutputs(const Node& node, const ir::FunctionSchema& schema,
                           const std::vector<ir::Value*>& results, bool view_of_first,
                           const std::string& first_input);
  absl::StatusOr<std::vector<ir::Value*>> EmitGeneric(NodeContext& ctx);

  GraphBuilder builder_;
  std::string origin_;
  Scope top_;
  Scope* scope_ = &top_;
  int nodes_converted_ = 0;
  int depth_ = 0;  // nested subgraphs
  absl::flat_hash_set<std::string> used_;
  absl::flat_hash_map<std::string, std::vector<SymSize>>* symbolic_sizes_ = nullptr;
};

}  // namespace kiln::frontend::pt2

#endif  // KILN_FRONTEND_PT2_IMPORTER_INTERNAL_H_
