#include "lowering/lower_test_util.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "lowering/lower.h"
#include "passes/pass.h"
#include "passes/shape_functions.h"
#include "passes/decompositions.h"
#include "runtime/register_kernels.h"
#include "support/status.h"

namespace kiln::lowering::testing {

absl::StatusOr<std::unique_ptr<ir::Graph>> ParsePropagated(const std::string& text) {
  RETURN_IF_ERROR(passes::RegisterShapeFunctions());
  RETURN_IF_ERROR(runtime::RegisterBuiltinKernels());
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, ir::ParseGraph(text));
  passes::PassStatistics stats;
  // As the compile pipeline does: shapes, then decompositions (composite ops
  // reach lowering as pointwise ops and reductions).
  RETURN_IF_ERROR(passes::PrepareForLowering(*graph, stats).status());
  return graph;
}

absl::StatusOr<LoopGraph> LowerText(const std::string& text) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, ParsePropagated(text));
  return LowerGraph(*graph);
}

std::string LowerTextDump(const std::string& text) {
  absl::StatusOr<LoopGraph> g = LowerText(text);
  if (!g.ok()) return std::string(g.status().message());
  return g->ToString();
}

std::string ScheduleToString(const Schedule& schedule) {
  std::string out;
  for (const ScheduleStep& step : schedule.steps) {
    if (step.kind == ScheduleStep::Kind::kExtern) {
      absl::StrAppend(&out, "extern ", step.buffer, "\n");
      continue;
    }
    const FusedKernel& k = step.kernel;
    absl::StrAppend(&out, "kernel ", k.name, " [", absl::StrJoin(k.buffers, ", "), "] reads [",
                    absl::StrJoin(k.reads, ", "), "] outer [", absl::StrJoin(k.outer_ranges, ", "),
                    "]\n");
  }
  return out;
}

}  // namespace kiln::lowering::testing
