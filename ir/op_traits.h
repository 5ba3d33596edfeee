// Per-node questions that passes ask before moving, merging or deleting a
// node, answered from the op registry with PyTorch's rules (ir.cpp:
// Node::hasSideEffects, Node::isNondeterministic).
#ifndef KILN_IR_OP_TRAITS_H_
#define KILN_IR_OP_TRAITS_H_

#include "ir/ir.h"
#include "ir/op_registry.h"

namespace kiln::ir {

// True for PyTorch's fixed side-effect kinds (prim::Print, RaiseException,
// aten::warn, CallFunction, ...), for matched ops whose traits say so or
// whose alias kind is CONSERVATIVE, and for non-prim ops that match no
// schema (unknown, so assumed unsafe). Prim ops without a matching schema
// have none.
bool HasSideEffects(const Node& node, const OpRegistry& ops = BuiltinOps());

// Random ops (dropout, rand*, bernoulli, ...). A dropout whose `train` input
// is the constant False is deterministic.
bool IsNondeterministic(const Node& node, const OpRegistry& ops = BuiltinOps());

// Writes one of its inputs (a `!` annotation). Unknown non-prim ops count as
// mutating.
bool IsMutating(const Node& node, const OpRegistry& ops = BuiltinOps());

// Some output may alias an input (see OpTraits::is_view).
bool IsView(const Node& node, const OpRegistry& ops = BuiltinOps());

// The first two inputs may be swapped: the matched overload is commutative
// and, when it has an `alpha` input, alpha is the constant 1.
bool IsCommutative(const Node& node, const OpRegistry& ops = BuiltinOps());

// The matched overload's alias kind; CONSERVATIVE for unknown non-prim ops,
// INTERNAL_SPECIAL_CASE for unknown prim ops.
AliasKind GetAliasKind(const Node& node, const OpRegistry& ops = BuiltinOps());

// relu <-> relu_ (invalid Symbol when there is no such variant).
Symbol InplaceVariant(Symbol functional, const OpRegistry& ops = BuiltinOps());
Symbol FunctionalVariant(Symbol inplace, const OpRegistry& ops = BuiltinOps());

}  // namespace kiln::ir

#endif  // KILN_IR_OP_TRAITS_H_
