// Peephole optimisation ("peephole"): local algebraic, shape, control-flow
// and list/tuple simplifications, after PyTorch's PeepholeOptimize (with
// shape peepholes on) and its non-tensor, list-idiom and alias-sensitive
// parts. The rules are listed in passes/PEEPHOLE_RULES.md; each lives in a
// rule-family file (peephole_rules_*.cc) behind the interface of
// passes/peephole_rule.h.
//
// One forward walk over all blocks dispatches on the node kind; users of
// rewritten values are revisited from a worklist, so chains collapse in one
// run without rescanning the graph. Rewritten nodes and the constants they
// leave unused are destroyed; other dead code is left for
// dead_code_elimination.
#ifndef KILN_PASSES_PEEPHOLE_H_
#define KILN_PASSES_PEEPHOLE_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "ir/op_registry.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"
#include "passes/peephole_rule.h"

namespace kiln::passes {

struct PeepholeOptions {
  // Null means ir::BuiltinOps().
  const ir::OpRegistry* ops = nullptr;
  // Null means every rule (AllPeepholeRules()).
  const std::vector<PeepholeRule>* rules = nullptr;
};

// Every rule, in family order (arith, shape, control, list).
const std::vector<PeepholeRule>& AllPeepholeRules();

// Counters: one per rule that fired (its name), and "nodes_erased".
absl::StatusOr<bool> RunPeephole(ir::Graph& graph, PassStatistics& stats,
                                 const PeepholeOptions& options = {});

absl::Status RegisterPeepholePass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_PEEPHOLE_H_
