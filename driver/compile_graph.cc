#include "driver/compile_graph.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lowering/lower.h"
#include "runtime/interpreter.h"
#include "passes/pass.h"
#include "passes/decompositions.h"
#include "support/status.h"

namespace kiln::driver {
namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds since `start`; tells options.on_stage that `stage` ended.
double StageDone(const CompileOptions& options, const char* stage, Clock::time_point start) {
  const Clock::time_point end = Clock::now();
  if (options.on_stage) options.on_stage(stage, start, end);
  return std::chrono::duration<double, std::milli>(end - start).count();
}

// The program of a whole-graph island: runtime::Interpreter over the graph.
class InterpretedProgram : public wrapper::CompiledProgram {
 public:
  explicit InterpretedProgram(std::shared_ptr<const ir::Graph> graph)
      : graph_(std::move(graph)), interpreter_(*graph_) {}
  absl::Status Prepare() { return interpreter_.Prepare(); }

  absl::StatusOr<std::vector<ir::IValue>> RunValues(const std::vector<ir::IValue>& inputs) override {
    return interpreter_.Run(inputs);
  }
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    std::vector<ir::IValue> values;
    for (const Tensor& t : inputs) values.push_back(ir::IValue::FromTensor(t));
    ASSIGN_OR_RETURN(std::vector<ir::IValue> outs, interpreter_.Run(values));
    std::vector<Tensor> tensors;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!outs[i].isTensor()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "interpreted program: output ", i, " is not a tensor (use RunValues)"));
      }
      tensors.push_back(outs[i].toTensor());
    }
    return tensors;
  }

 private:
  std::shared_ptr<const ir::Graph> graph_;
  runtime::Interpreter interpreter_;
};

}  // namespace

absl::StatusOr<CompiledGraph> CompileGraph(ir::Graph& graph, const CompileOptions& options) {
  CompiledGraph out;
  auto t = Clock::now();
  passes::PassStatistics stats;
  ASSIGN_OR_RETURN(bool changed, passes::PrepareForLowering(graph, stats));
  (void)changed;
  out.times.shapes_ms = StageDone(options, "shape propagation", t);

  t = Clock::now();
  ASSIGN_OR_RETURN(out.loop_graph, lowering::LowerGraph(graph));
  out.times.lower_ms = StageDone(options, "lowering", t);
  out.num_islands = out.loop_graph.num_islands;
  out.num_island_nodes = out.loop_graph.num_island_nodes;
  if (out.loop_graph.interpreted_graph) {
    // A whole-graph island: the "compiled" program is the interpreter.
    out.whole_graph_interpreted = true;
    out.program.interpreted_graph = out.loop_graph.interpreted_graph;
    if (!options.generate_only) {
      t = Clock::now();
      auto program = std::make_unique<InterpretedProgram>(out.loop_graph.interpreted_graph);
      RETURN_IF_ERROR(program->Prepare());
      out.compiled = std::move(program);
      out.times.compile_ms = StageDone(options, "device compile", t);
    }
    return out;
  }

  t = Clock::now();
  ASSIGN_OR_RETURN(out.schedule, lowering::ScheduleGraph(out.loop_graph, options.device));
  out.times.schedule_ms = StageDone(options, "scheduling", t);
  for (const lowering::ScheduleStep& step : out.schedule.steps) {
    if (step.kind == lowering::ScheduleStep::Kind::kKernel) {
      ++out.num_kernels;
    } else {
      ++out.num_externs;
    }
  }

  t = Clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<wrapper::DeviceCodegen> codegen, wrapper::CreateDeviceCodegen(options.device));
  ASSIGN_OR_RETURN(out.program, wrapper::GenerateWrapper(out.loop_graph, out.schedule, *codegen));
  out.times.wrapper_ms = StageDone(options, "wrapper", t);

  t = Clock::now();
  if (options.plan_memory) {
    ASSIGN_OR_RETURN(wrapper::ReusePlanStats reuse, wrapper::PlanBufferReuse(out.program));
    (void)reuse;
  }
  ASSIGN_OR_RETURN(out.memory, wrapper::ReportMemory(out.program));
  if (options.max_peak_bytes >= 0 && out.memory.peak_bytes > options.max_peak_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the compiled program's planned peak memory is %d bytes (%.2f GiB), more than the "
        "limit of %d bytes (%.2f GiB)",
        out.memory.peak_bytes, static_cast<double>(out.memory.peak_bytes) / (1 << 30),
        options.max_peak_bytes, static_cast<double>(options.max_peak_bytes) / (1 << 30)));
  }
  out.times.plan_ms = StageDone(options, "memory planning", t);

  if (!options.generate_only) {
    t = Clock::now();
    ASSIGN_OR_RETURN(out.compiled, codegen->Compile(out.program));
    out.times.compile_ms = StageDone(options, "device compile", t);
  }
  return out;
}

}  // namespace kiln::driver
