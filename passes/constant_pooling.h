// Constant pooling ("constant_pooling", alias "pool").
//
// Merges equal prim::Constant nodes across the whole graph, sub-blocks
// included, and moves every surviving constant to the start of the graph's
// top-level block, in order of first appearance (PyTorch's
// constant_pooling.cpp). Equality is passes/node_equality.h's: equal value
// and equal output type; tensors by value, never `<Tensor>` placeholders,
// none above kMaxMergeableTensorBytes. Constants of mutable type (tensors,
// lists) are merged only when neither is written and not both escape the
// graph (passes/alias_sets.h); the analysis is built only when such a pair
// turns up.
//
// Nodes already pooled and in place are not moved, so a second run reports
// no change.
#ifndef KILN_PASSES_CONSTANT_POOLING_H_
#define KILN_PASSES_CONSTANT_POOLING_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

// Statistics: "constants_merged", "constants_moved".
absl::StatusOr<bool> PoolConstants(ir::Graph& graph, PassStatistics& stats);

absl::Status RegisterConstantPoolingPass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_CONSTANT_POOLING_H_
