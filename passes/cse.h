// Common subexpression elimination ("common_subexpression_elimination",
// alias "cse").
//
// Walks the graph in order. A node equal to an earlier one (see
// passes/node_equality.h: kind, the same input Values, commutative operands
// sorted, equal attributes and output types) that is visible from it is
// replaced by it: the earlier node may be in the same block or in an
// enclosing block before the owning node, never in a sibling block. The
// surviving node keeps its output names.
//
// Never merged (PyTorch's common_subexpression_elimination.cpp):
//  * nodes with side effects or nondeterminism, and nodes with blocks (their
//    blocks are still processed);
//  * nodes that write, or that read or produce a value whose alias class is
//    written anywhere in the graph (passes/alias_sets.h);
//  * two nodes whose outputs may both alias graph outputs (same block), or
//    either of which escapes (enclosing block): that would make graph
//    outputs alias each other;
//  * tensor constants without data (`<Tensor>` placeholders) or above
//    kMaxMergeableTensorBytes. Equal-valued prim::Constant nodes are merged.
#ifndef KILN_PASSES_CSE_H_
#define KILN_PASSES_CSE_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

// Statistics: "nodes_merged".
absl::StatusOr<bool> EliminateCommonSubexpressions(ir::Graph& graph, PassStatistics& stats);

absl::Status RegisterCommonSubexpressionEliminationPass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_CSE_H_
