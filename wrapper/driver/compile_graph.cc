#include "wrapper/driver/compile_graph.h"

#include <chrono>
#include <utility>

#include "lowering/lower.h"
#include "passes/pass.h"
#include "passes/shape_propagation.h"
#include "support/status.h"

namespace kiln::wrapper {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

absl::StatusOr<CompiledGraph> CompileGraph(ir::Graph& graph, const CompileOptions& options) {
  CompiledGraph out;
  auto t = Clock::now();
  passes::PassStatistics stats;
  ASSIGN_OR_RETURN(bool changed, passes::PropagateShapes(graph, stats));
  (void)changed;
  out.times.shapes_ms = MsSince(t);

  t = Clock::now();
  ASSIGN_OR_RETURN(out.loop_graph, lowering::LowerGraph(graph));
  out.times.lower_ms = MsSince(t);

  t = Clock::now();
  ASSIGN_OR_RETURN(out.schedule, lowering::ScheduleGraph(out.loop_graph, options.device));
  out.times.schedule_ms = MsSince(t);
  for (const lowering::ScheduleStep& step : out.schedule.steps) {
    if (step.kind == lowering::ScheduleStep::Kind::kKernel) {
      ++out.num_kernels;
    } else {
      ++out.num_externs;
    }
  }

  t = Clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceCodegen> codegen, CreateDeviceCodegen(options.device));
  ASSIGN_OR_RETURN(out.program, GenerateWrapper(out.loop_graph, out.schedule, *codegen));
  out.times.wrapper_ms = MsSince(t);

  t = Clock::now();
  if (options.plan_memory) {
    ASSIGN_OR_RETURN(ReusePlanStats reuse, PlanBufferReuse(out.program));
    (void)reuse;
  }
  ASSIGN_OR_RETURN(out.memory, ReportMemory(out.program));
  out.times.plan_ms = MsSince(t);

  if (!options.generate_only) {
    t = Clock::now();
    ASSIGN_OR_RETURN(out.compiled, codegen->Compile(out.program));
    out.times.compile_ms = MsSince(t);
  }
  return out;
}

}  // namespace kiln::wrapper
