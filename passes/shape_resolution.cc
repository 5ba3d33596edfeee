#include "passes/shape_resolution.h"

#include <vector>

#include "passes/constant_propagation.h"
#include "passes/dce.h"
#include "passes/peephole.h"
#include "passes/shape_propagation.h"
#include "support/status.h"

namespace kiln::passes {
namespace {

bool Forget(ir::Value* v, bool dtypes) {
  if (!v->type()->is_tensor()) return false;
  const ir::TensorInfo& t = v->type()->tensor();
  if (!t.sizes && !t.strides && (!dtypes || !t.dtype)) return false;
  ir::TensorInfo info = t;
  info.sizes.reset();
  info.strides.reset();
  if (dtypes) info.dtype.reset();
  v->setType(ir::Type::TensorWith(std::move(info)));
  return true;
}

bool ForgetIn(ir::Block* b, bool dtypes) {
  bool changed = false;
  for (ir::Node* n : b->nodes()) {
    for (ir::Block* sub : n->blocks()) {
      changed |= ForgetIn(sub, dtypes);
      for (ir::Value* in : sub->inputs()) changed |= Forget(in, dtypes);
    }
    if (n->kind() == ir::sym::kConstant) continue;
    for (ir::Value* out : n->outputs()) changed |= Forget(out, dtypes);
  }
  return changed;
}

}  // namespace

bool ForgetDerivedTypes(ir::Graph& graph, bool dtypes) { return ForgetIn(graph.block(), dtypes); }

absl::StatusOr<bool> ResolveShapes(ir::Graph& graph, PassStatistics& stats) {
  bool any = false;
  for (int round = 0; round < kMaxShapeResolutionRounds; ++round) {
    stats.Add("rounds");
    bool changed = false;
    ASSIGN_OR_RETURN(bool shapes, PropagateShapes(graph, stats));
    ASSIGN_OR_RETURN(bool constants, PropagateConstants(graph, stats));
    ASSIGN_OR_RETURN(bool peephole, RunPeephole(graph, stats));
    ASSIGN_OR_RETURN(bool dead, EliminateDeadCode(graph, stats));
    changed = shapes || constants || peephole || dead;
    any |= changed;
    // Shapes alone changing means nothing new can fold.
    if (!constants && !peephole && !dead) break;
  }
  return any;
}

absl::Status RegisterShapeResolutionPass(PassRegistry& registry) {
  return registry.RegisterFunction(
      "resolve_shapes", {},
      "shape propagation, constant propagation, peephole and DCE until shapes are static",
      ResolveShapes);
}

}  // namespace kiln::passes
