// Dead code elimination ("dead_code_elimination", alias "dce").
//
// Mark and sweep from the graph outputs, walking each block backwards so
// that one walk decides straight-line code (PyTorch's DeadCodeEliminator,
// dead_code_elimination.cpp). A node is live when an output is live, when it
// has side effects (ir::HasSideEffects, or untracked writes), when it writes
// an alias class that is live at that point or the wildcard class (see
// passes/alias_sets.h), or when a node in one of its blocks is live. Loop
// bodies are re-marked until nothing new becomes live.
//
// The sweep also removes prim::If outputs that are unused (with the matching
// block outputs) and prim::Loop carried values that are neither used after
// the loop nor inside the body (node input, body input and output, result).
// Unlike PyTorch, a loop left with no live output and no live node inside is
// deleted (PyTorch keeps one whose condition is computed in the body).
//
// Linear apart from loop re-marking; the changed bit is exact.
#ifndef KILN_PASSES_DCE_H_
#define KILN_PASSES_DCE_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

// Statistics: "nodes_removed" (recursive count), "outputs_removed" (If and
// Loop outputs pruned from live nodes).
absl::StatusOr<bool> EliminateDeadCode(ir::Graph& graph, PassStatistics& stats);

absl::Status RegisterDeadCodeEliminationPass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_DCE_H_
