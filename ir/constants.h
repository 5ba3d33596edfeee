// Reading and writing prim::Constant nodes, shared by the passes.
//
//   if (std::optional<ir::IValue> v = ConstantValue(node->input(1))) ...
//   ir::WithInsertPoint guard(node);
//   ASSIGN_OR_RETURN(ir::Value* c, InsertConstant(graph, ir::IValue::Int(3)));
//
// A constant's IValue comes from its `value` attribute and its output type:
// an `i` attribute is a bool when the output is `bool` (TorchScript prints
// True as `prim::Constant[value=1]`), a `s` attribute is a Device when the
// output is `Device`, an `is` attribute is a bool list when the output is
// `bool[]`, and a constant without `value` is None.
#ifndef KILN_IR_CONSTANTS_H_
#define KILN_IR_CONSTANTS_H_

#include <optional>

#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"

namespace kiln::ir {

// The value is the output of a prim::Constant node.
bool IsConstant(const ir::Value* v);

// The constant `v` holds; nullopt when `v` is not a prim::Constant output or
// its attribute has no IValue form (types, complex numbers). Tensor
// constants may be placeholders (no data): check Tensor::has_data().
std::optional<ir::IValue> ConstantValue(const ir::Value* v);

// Whether InsertConstant accepts `value`: None, bool, int, float, str,
// Device, a tensor, and homogeneous lists of int / bool / float / str /
// tensor. Tuples (and nested lists) have no attribute form.
bool IsRepresentableConstant(const ir::IValue& value);

// Inserts a prim::Constant holding `value` at the graph's insertion point
// and returns its output, typed from the value (a tensor gets its dtype,
// sizes and strides). `type_hint`, when it is a list type, types an empty
// list and is kept for a non-empty one whose elements fit it. A
// non-representable value is InvalidArgument.
absl::StatusOr<ir::Value*> InsertConstant(ir::Graph& graph, const ir::IValue& value,
                                          const ir::TypePtr& type_hint = nullptr);

// Destroys `v`'s node when it is a prim::Constant left without uses (the
// small cleanup a rewrite does for the constants it stopped using). Returns
// whether it did.
bool DestroyIfUnusedConstant(ir::Value* v);

// Nothing can change `v`'s contents or identity through its uses: every use
// is a read by an op whose schema neither writes that argument nor returns
// an alias of it, a view (an op returning an alias without writing) whose
// outputs are never mutated in turn (followed 8 views deep), a
// List/TupleConstruct whose container is never mutated (aten::cat's list),
// or a prim::ListUnpack / prim::TupleIndex / TupleUnpack.
// Block returns, If/Loop inputs, unknown ops and
// conservative ops count as possible writers. Cost: one schema match per
// use. Used before sharing a mutable value (a list or tensor) as a constant
// or forwarding the elements of a ListConstruct.
bool IsNeverMutated(const ir::Value* v, const ir::OpRegistry& ops = ir::BuiltinOps());

}  // namespace kiln::ir

#endif  // KILN_IR_CONSTANTS_H_
