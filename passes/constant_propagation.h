// Constant propagation ("constant_propagation", alias "constprop"), after
// PyTorch's ConstantPropagation:
//  * a node whose inputs are all constants is evaluated and its outputs
//    become prim::Constant nodes: scalar/str/list ops by a built-in
//    evaluator (ir/scalar_eval.h), List/Tuple construct/unpack/index
//    structurally, everything else through the op registry's `kernel` slot
//    (filled by the runtime) when the operator has one;
//  * prim::If with a constant condition is replaced by its taken block;
//  * prim::Loop that runs zero times (constant max_trip_count <= 0 or
//    constant start condition false) is replaced by its initial values.
//
// Never folded: ops with side effects, nondeterministic or mutating ops
// (traits from ir/op_traits.h), vararg schemas, structural/profiling prims,
// ops reading a placeholder tensor (`<Tensor>` without data), tensor inputs
// or results above `max_tensor_elements` (a result whose type has static
// sizes above it is refused before its kernel runs), results that have no constant
// form (tuples), and mutable results (tensors, lists) or inputs whose
// uses might write them. Each refusal is logged at DEBUG level
// (KILN_LOG_LEVEL=">>constant_propagation").
//
// Cleanup is local, not a DCE: the folded node, the If / Loop it removed,
// and the prim::Constant inputs they leave unused are destroyed; other dead
// code stays for dead_code_elimination.
//
// One forward walk over every block (explicit stack, no recursion): O(nodes)
// plus the cost of evaluating what folds.
#ifndef KILN_PASSES_CONSTANT_PROPAGATION_H_
#define KILN_PASSES_CONSTANT_PROPAGATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "ir/op_registry.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

struct ConstantPropagationOptions {
  // Tensor inputs and results larger than this are not folded (keeps graph
  // size and compile time bounded).
  int64_t max_tensor_elements = 100000;
  // Schemas, traits and kernels; null means ir::BuiltinOps().
  const ir::OpRegistry* ops = nullptr;
};

// Counters: "nodes_folded", "ifs_inlined", "loops_removed",
// "nodes_removed" (folded nodes, Ifs, Loops and dead constants destroyed).
absl::StatusOr<bool> PropagateConstants(ir::Graph& graph, PassStatistics& stats,
                                        const ConstantPropagationOptions& options = {});

absl::Status RegisterConstantPropagationPass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_CONSTANT_PROPAGATION_H_
