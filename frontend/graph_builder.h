// GraphBuilder: builds kiln IR in code, for tests, frontends and downstream
// users. Ops are named by their qualified kind; the builder matches the
// inputs against the op registry's schemas (as the verifier and interpreter
// will) and types the outputs from the matched schema, so a typo or a wrong
// argument list is an error here rather than at run time.
//
//   ir::Graph g;
//   GraphBuilder b(&g);
//   ir::Value* x = b.AddInput("x", b.TensorTy(DType::kFloat32, {2, 3}));
//   ASSIGN_OR_RETURN(ir::Value* y, b.Op("aten::relu", {x}));
//   b.AddOutput(y);
#ifndef KILN_FRONTEND_GRAPH_BUILDER_H_
#define KILN_FRONTEND_GRAPH_BUILDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "support/dtype.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::frontend {

class GraphBuilder {
 public:
  explicit GraphBuilder(ir::Graph* graph, const ir::OpRegistry* registry = &ir::BuiltinOps());

  ir::Graph* graph() const { return graph_; }
  const ir::OpRegistry& registry() const { return *registry_; }

  // New nodes are appended to the end of `block` (initially the graph's
  // top-level block).
  void SetInsertionBlock(ir::Block* block) { block_ = block; }
  ir::Block* insertion_block() const { return block_; }

  // Graph inputs and outputs (of the top-level block).
  ir::Value* AddInput(absl::string_view name, ir::TypePtr type);
  void AddOutput(ir::Value* v);

  // --- constants (prim::Constant, typed from the value) ---
  ir::Value* None();
  ir::Value* Bool(bool v);
  ir::Value* Int(int64_t v);
  ir::Value* Double(double v);
  ir::Value* Str(absl::string_view v);
  ir::Value* IntList(absl::Span<const int64_t> v);
  ir::Value* DoubleList(absl::Span<const double> v);
  ir::Value* BoolList(absl::Span<const bool> v);
  ir::Value* TensorConstant(const Tensor& t);
  // Any representable IValue (see ir/constants.h); InvalidArgument otherwise.
  absl::StatusOr<ir::Value*> Constant(const ir::IValue& v);
  // A dtype argument (`ScalarType`), as TorchScript passes it: an int.
  ir::Value* ScalarType(DType t) { return Int(DTypeCode(t)); }

  // --- ops ---
  // A node of kind `kind` ("aten::add") with `inputs`. The overload is chosen
  // by the registry; its return types type the outputs (tensor outputs are
  // unrefined Tensors; RefineType narrows them). NotFound when no overload
  // of `kind` accepts these inputs, naming the input types.
  absl::StatusOr<ir::Value*> Op(absl::string_view kind, absl::Span<ir::Value* const> inputs);
  absl::StatusOr<std::vector<ir::Value*>> OpN(absl::string_view kind,
                                              absl::Span<ir::Value* const> inputs,
                                              size_t num_outputs);

  // --- structure ---
  // prim::ListConstruct of values of `element_type`.
  ir::Value* List(ir::TypePtr element_type, absl::Span<ir::Value* const> elements);
  ir::Value* Tuple(absl::Span<ir::Value* const> elements);
  std::vector<ir::Value*> ListUnpack(ir::Value* list, size_t n);
  std::vector<ir::Value*> TupleUnpack(ir::Value* tuple);

  // prim::If with `num_outputs` outputs; the caller fills both blocks (set
  // the insertion block to each, then SetBlockOutputs) and sets the output
  // types (TypeOutputs).
  ir::Node* If(ir::Value* condition, size_t num_outputs);
  // prim::Loop(max_trip_count, initial_condition, carried...). The body
  // block gets inputs (iteration, carried...) and must return
  // (continue_condition, carried...); outputs are the carried values.
  ir::Node* Loop(ir::Value* max_trip_count, ir::Value* initial_condition,
                 absl::Span<ir::Value* const> carried);
  static void SetBlockOutputs(ir::Block* block, absl::Span<ir::Value* const> outputs);

  // --- types ---
  static ir::TypePtr TensorTy(std::optional<DType> dtype,
                              std::optional<std::vector<std::optional<int64_t>>> sizes);
  static ir::TypePtr TensorTy(DType dtype, absl::Span<const int64_t> sizes);
  // Narrows an output's tensor type (dtype / sizes) when the caller knows
  // more than the schema says.
  static void RefineType(ir::Value* v, ir::TypePtr type) { v->setType(std::move(type)); }

 private:
  ir::Node* Append(ir::Node* n);

  ir::Graph* graph_;
  const ir::OpRegistry* registry_;
  ir::Block* block_;
};

}  // namespace kiln::frontend

#endif  // KILN_FRONTEND_GRAPH_BUILDER_H_
