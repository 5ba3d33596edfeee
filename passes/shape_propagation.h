// Shape and dtype propagation: refines the types of values from the types
// of graph inputs and constants, through the per-op shape functions
// (passes/shape_functions.h, installed in the op registry).
//
// What is refined: a tensor value's dtype, sizes (rank and each dim) and
// device, where a shape function infers them and the value's type does not
// already say. Strides and requires_grad are never set. Types that already
// carry a fact keep it; an inferred fact that contradicts an annotation on
// an op's output is an error naming the node, as are inputs that contradict
// each other (see shape_functions.h). Non-tensor values keep their types.
//
// Control flow:
//  * prim::If: both blocks are processed; each output gets what the two
//    branches agree on (JoinTypes).
//  * prim::Loop: the body runs with each carried value typed as the join
//    of its entry type and the types the body produced so far, until the
//    carried types stop changing. After two rounds, carried values still
//    changing are widened to `Tensor` (nothing known); after four, all are.
//    The body is re-analysed from its original types each round.
//
// Graphs containing an in-place op that changes its operand's shape
// (t_, transpose_, squeeze_, unsqueeze_) are left alone: the operand's
// refined type would be stale after the op.
//
// Returns true iff some value's type changed. Linear in the graph size
// (loops: bounded number of rounds per loop nesting level).
#ifndef KILN_PASSES_SHAPE_PROPAGATION_H_
#define KILN_PASSES_SHAPE_PROPAGATION_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

// Statistics: "types_refined" (values whose type changed), "nodes_without_shape_fn".
absl::StatusOr<bool> PropagateShapes(ir::Graph& graph, PassStatistics& stats);

// Refines the types of one node's outputs from its inputs' current types,
// without overriding a fact the outputs already carry (contradictions are
// ignored): for frontends that type nodes as they build them (the ONNX
// importer, where ONNX's own inference left a value's rank unknown).
// Control-flow nodes are left alone.
absl::Status InferNodeTypes(ir::Node& node);

// Registers "shape_propagation" (alias "shape_prop").
absl::Status RegisterShapePropagationPass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_SHAPE_PROPAGATION_H_
