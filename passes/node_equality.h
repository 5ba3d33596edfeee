// Structural node identity for common subexpression elimination and
// constant pooling (PyTorch's HashNode / EqualNode, ir/node_hashing.cpp).
//
// Two nodes are equal when they have the same kind, the very same input
// Values (the first two may be swapped when the node is commutative), the
// same number of outputs with equal types, no blocks, and equal attributes
// (compared by name, in any order; tensors by value, doubles bitwise).
// Source locations, scopes and debug names do not count.
#ifndef KILN_PASSES_NODE_EQUALITY_H_
#define KILN_PASSES_NODE_EQUALITY_H_

#include <cstddef>
#include <cstdint>

#include "ir/ir.h"

namespace kiln::passes {

// Tensor attributes above this size are never compared by value: hashing
// and comparing weights costs time linear in their bytes for a merge that
// almost never happens (tied weights are already one constant).
constexpr size_t kMaxMergeableTensorBytes = size_t{1} << 20;

// False when the node carries a tensor attribute that cannot be compared:
// a placeholder (`<Tensor>`: its data is unknown), an undefined tensor, or
// one above kMaxMergeableTensorBytes.
bool HasComparableAttributes(const ir::Node& node);

// Consistent with NodesEqual for the same `commutative` flag.
uint64_t HashNode(const ir::Node& node, bool commutative);
bool NodesEqual(const ir::Node& a, const ir::Node& b, bool commutative);

}  // namespace kiln::passes

#endif  // KILN_PASSES_NODE_EQUALITY_H_
