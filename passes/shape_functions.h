// Per-op shape and dtype inference, installed in the op registry's
// `shape_fn` slots (ir/op_registry.h).
//
// A shape function maps a node's input types (and its constant inputs) to
// output types carrying what can be inferred: dtype, sizes (rank and dims,
// each possibly unknown) and device. Strides and requires_grad are never
// inferred. Unknown stays unknown: a shape function answers with a plain
// `Tensor` rather than guess. Inputs that contradict each other (cat of
// tensors whose other dims differ, linear whose in-features do not match
// the weight, dims that do not broadcast, a view whose element count is
// wrong) are InvalidArgument errors naming the node.
//
// Which op has which shape function is the SHAPE column of the op rows
// (ops/defs/*.def); the implementations live in shape_functions_*.cc, one
// file per row family (elementwise, reduce, nn, resample, shape_ops, index,
// indexing, onnx, special). Arguments whose values decide sizes are read when they are
// constants (or aten::size of a known dim, or a constant tensor such as an
// ONNX initializer); data-dependent sizes (nonzero, unique, masked_select)
// stay unknown. //testing:shape_inference_node checks every function
// against the reference kernels on ONNX's node tests.
#ifndef KILN_PASSES_SHAPE_FUNCTIONS_H_
#define KILN_PASSES_SHAPE_FUNCTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"

namespace kiln::passes {

// Installs every shape function into ir::BuiltinOps(). Idempotent and
// thread-safe; an error (a named overload missing from the registry) is a
// bug and is returned on every call.
absl::Status RegisterShapeFunctions();
// Installs them into `ops` (for registries other than the builtin one).
absl::Status RegisterShapeFunctionsInto(ir::OpRegistry& ops);
// The qualified overload names that get a shape function, in table order.
std::vector<std::string> ShapeFunctionOverloads();

// The value of a prim::Constant output: None, bool, int, float, str and
// lists of those. nullopt for anything else (tensor constants included:
// their type already says what shape functions need).
std::optional<ir::IValue> ConstantValueOf(const ir::Value& v);
// The tensor of a prim::Constant output that holds one with its data, or
// null.
const Tensor* ConstantTensorOf(const ir::Value& v);

// `op`'s shape function (non-null) over `node`'s input types and constant
// inputs (ConstantValueOf): the output types shape propagation would give
// it. The node is not changed.
absl::StatusOr<std::vector<ir::TypePtr>> ShapeFunctionTypes(const ir::Operator& op, const ir::Node& node);

// `inferred` refines `existing`: dtype, sizes (rank and each unknown dim)
// and device are taken from `inferred` where `existing` does not know them;
// everything else stays. Returns `existing` itself when nothing is added.
// A known fact contradicted by `inferred` is an error when `strict`
// (message without the node; callers add it), otherwise `existing` keeps
// its own fact. Non-tensor types stay as they are, except that `Any`
// becomes `inferred`.
absl::StatusOr<ir::TypePtr> RefineType(const ir::TypePtr& existing, const ir::TypePtr& inferred,
                                       bool strict);

// What two types agree on (a tensor type keeping the facts equal in both;
// equal types otherwise). Null when two non-tensor types differ.
ir::TypePtr JoinTypes(const ir::TypePtr& a, const ir::TypePtr& b);

// "aten::linear node %x.17 (torch/nn/modules/linear.py:114:15)".
std::string NodeLabel(const ir::Node& node);

}  // namespace kiln::passes

#endif  // KILN_PASSES_SHAPE_FUNCTIONS_H_
