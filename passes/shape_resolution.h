// Shape resolution before lowering (issue 12): once a graph's inputs have
// concrete shapes (a compile specialised to a call), shape arithmetic folds
// to constants and every tensor gets a static type, so nothing becomes an
// interpreter island for shape reasons.
//
// One round: shape propagation; constant propagation (Shape, Gather on
// shapes, Unsqueeze, Concat, Range, ConstantOfShape... fold through the
// reference kernels); peephole (kiln::shape / aten::size of known sizes
// become constants); dead code elimination. Rounds repeat until nothing
// changes: each round resolves at least one more level of shape arithmetic
// that depends on shapes resolved before it, so the rounds are bounded by
// the graph's size (and by kMaxShapeResolutionRounds).
#ifndef KILN_PASSES_SHAPE_RESOLUTION_H_
#define KILN_PASSES_SHAPE_RESOLUTION_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

inline constexpr int kMaxShapeResolutionRounds = 256;

// Counters: "rounds", and each inner pass's own counters.
absl::StatusOr<bool> ResolveShapes(ir::Graph& graph, PassStatistics& stats);

// Drops the sizes (and, with `dtypes`, the dtypes) of every tensor value that
// is neither a graph input nor a constant: for a graph retyped to inputs
// that contradict the ones its intermediate types were inferred from.
// Returns whether a type changed.
bool ForgetDerivedTypes(ir::Graph& graph, bool dtypes);

// Registers "resolve_shapes".
absl::Status RegisterShapeResolutionPass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_SHAPE_RESOLUTION_H_
