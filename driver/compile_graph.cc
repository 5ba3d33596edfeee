#include "driver/compile_graph.h"

#include <chrono>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "devices/device_guard.h"
#include "ir/op_registry.h"
#include "lowering/lower.h"
#include "ops/row.h"
#include "runtime/interpreter.h"
#include "passes/all_passes.h"
#include "passes/pass.h"
#include "passes/decompositions.h"
#include "passes/pipeline.h"
#include "passes/shape_propagation.h"
#include "passes/shape_resolution.h"
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

// Whether a device runs this extern call through a library: the GEMM and
// convolution ops (wrapper's out-variant list) in float32, with the ranks the
// CPU's OpenBLAS / convolution paths and cuBLAS take (GEMM: 2-D mm, 3-D bmm;
// convolution: 1 or 2 spatial dims; the CPU's pooling and channel ops: 1 to 3
// spatial dims). Anything else runs a reference kernel.
bool IsLibraryCall(const lowering::Buffer& b) {
  if (!wrapper::ExternUsesOutVariant(*b.extern_call) || b.layout.dtype != DType::kFloat32) return false;
  const size_t rank = b.layout.sizes.size();
  // The op row's EXTERN column says which library (ops/defs/*.def).
  absl::string_view name = b.extern_call->op;
  absl::ConsumeSuffix(&name, ".default");
  const ir::Operator* op = ir::BuiltinOps().Find(name);
  if (op != nullptr && op->extern_form.library == ops::Library::kConv) return rank == 3 || rank == 4;
  if (op != nullptr && op->extern_form.library == ops::Library::kDnn) return rank >= 3 && rank <= 5;
  return rank == 2 || rank == 3;
}

// The lowering's notes, with externs sorted into library calls, generated
// kernels and reference kernels: by what the device says it runs (`runs`,
// CompiledProgram::ExternRuns), else by the op table's guess (GEMM and
// convolution rows are library calls).
void CollectNotCompiled(CompiledGraph& out, const std::map<std::string, wrapper::ExternRun>& runs = {}) {
  out.not_compiled.clear();
  out.num_reference_externs = 0;
  for (const lowering::FallbackNote& note : out.loop_graph.fallbacks) {
    NotCompiledNode n;
    n.island = note.island;
    n.op = note.op;
    n.node = note.node;
    n.reason = note.reason;
    if (note.kind == lowering::FallbackNote::Kind::kIsland) {
      n.kind = NotCompiledNode::Kind::kIsland;
    } else {
      wrapper::ExternRun run = wrapper::ExternRun::kReference;
      if (auto it = runs.find(note.buffer); it != runs.end()) {
        run = it->second;
      } else {
        const lowering::Buffer* b = out.loop_graph.Find(note.buffer);
        if (b != nullptr && b->extern_call && IsLibraryCall(*b)) run = wrapper::ExternRun::kLibrary;
      }
      switch (run) {
        case wrapper::ExternRun::kLibrary:
          n.kind = NotCompiledNode::Kind::kLibraryExtern;
          n.reason = "library call";
          break;
        case wrapper::ExternRun::kGenerated:
          n.kind = NotCompiledNode::Kind::kGeneratedExtern;
          n.reason = "generated kernel";
          break;
        case wrapper::ExternRun::kReference:
          n.kind = NotCompiledNode::Kind::kReferenceExtern;
          ++out.num_reference_externs;
          break;
      }
    }
    out.not_compiled.push_back(std::move(n));
  }
}

}  // namespace

absl::Status SpecializeInputs(ir::Graph& graph, const std::vector<ir::IValue>& inputs,
                              const GraphRefiner& refine) {
  if (inputs.size() != graph.inputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("the graph takes ", graph.inputs().size(),
                                                   " inputs, got ", inputs.size()));
  }
  // Contiguous strides: the program makes inputs contiguous where its layout
  // asks. A call that contradicts a declared static dim (or rank) makes the
  // types inferred from the declared shapes stale: they are inferred again.
  bool contradicts = false, dtype_differs = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].isTensor() || !graph.inputs()[i]->type()->is_tensor()) continue;
    const ir::TensorInfo& declared = graph.inputs()[i]->type()->tensor();
    const Tensor& t = inputs[i].toTensor();
    if (declared.dtype && *declared.dtype != t.dtype()) dtype_differs = true;
    if (!declared.sizes) continue;
    if (declared.sizes->size() != t.sizes().size()) {
      contradicts = true;
      continue;
    }
    for (size_t d = 0; d < t.sizes().size(); ++d) {
      const std::optional<int64_t>& s = (*declared.sizes)[d];
      if (s && *s != t.sizes()[d]) contradicts = true;
    }
  }
  if (contradicts || dtype_differs) passes::ForgetDerivedTypes(graph, dtype_differs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::IValue& v = inputs[i];
    if (!v.isTensor()) continue;
    const Tensor& t = v.toTensor();
    ir::TensorInfo info = graph.inputs()[i]->type()->is_tensor() ? graph.inputs()[i]->type()->tensor()
                                                                 : ir::TensorInfo();
    info.dtype = t.dtype();
    info.sizes.emplace();
    for (int64_t s : t.sizes()) info.sizes->push_back(s);
    info.strides.reset();
    graph.inputs()[i]->setType(ir::Type::TensorWith(std::move(info)));
  }
  if (!refine) return absl::OkStatus();
  RETURN_IF_ERROR(refine(graph, inputs));
  // Sizes computed from the inputs' (aten::size, then arithmetic, views
  // shaped by them) become constants, so lowering sees static shapes.
  static const char* kFold =
      "fixpoint(shape_propagation,peephole,constant_propagation,dead_code_elimination)";
  ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> fold,
                   passes::Pipeline::Create(kFold, passes::DefaultPassRegistry()));
  ASSIGN_OR_RETURN(bool changed, fold->Run(graph));
  (void)changed;
  return absl::OkStatus();
}

absl::Status CheckPeakMemory(const wrapper::MemoryReport& memory, int64_t max_peak_bytes) {
  if (max_peak_bytes < 0 || memory.peak_bytes <= max_peak_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "the compiled program's planned peak memory is %d bytes (%.2f GiB), more than the "
      "limit of %d bytes (%.2f GiB)",
      memory.peak_bytes, static_cast<double>(memory.peak_bytes) / (1 << 30), max_peak_bytes,
      static_cast<double>(max_peak_bytes) / (1 << 30)));
}

absl::StatusOr<CompiledGraph> CompileGraph(ir::Graph& graph, const CompileOptions& options) {
  CompiledGraph out;
  auto t = Clock::now();
  passes::PassStatistics stats;
  // Shapes resolved at compile time: shape arithmetic folds to constants
  // now that the inputs' shapes are known (passes/shape_resolution.h).
  ASSIGN_OR_RETURN(bool changed, passes::ResolveShapes(graph, stats));
  (void)changed;
  out.times.shapes_ms = StageDone(options, "shape propagation", t);

  // "cuda:1": the codegen and the program it compiles belong to the index
  // current when the codegen is made.
  std::optional<devices::DeviceGuard> guard;
  if (options.device.find(':') != std::string::npos) {
    ASSIGN_OR_RETURN(devices::DeviceGuard g, devices::DeviceGuard::Create(options.device));
    guard.emplace(std::move(g));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<wrapper::DeviceCodegen> codegen, wrapper::CreateDeviceCodegen(options.device));
  const std::string device_pipeline = options.device_passes ? codegen->PreLoweringPipeline(graph) : "";
  if (!device_pipeline.empty()) {
    t = Clock::now();
    ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> device_passes,
                     passes::Pipeline::Create(device_pipeline, passes::DefaultPassRegistry()));
    ASSIGN_OR_RETURN(changed, device_passes->Run(graph));
    out.times.device_passes_ms = StageDone(options, "device passes", t);
  }

  t = Clock::now();
  // The decompositions of the ops whose rows have no bespoke lowering
  // (passes/decompositions.h), in Inductor's order: composite ops reach
  // lowering as pointwise ops and reductions. After the device's passes,
  // whose fusions match the composite ops (fuse_attention's softmax,
  // fuse_post_ops' gelu and silu).
  ASSIGN_OR_RETURN(bool decomposed, passes::PrepareForLowering(graph, stats));
  (void)decomposed;
  ASSIGN_OR_RETURN(out.loop_graph, lowering::LowerGraph(graph, codegen->LoweringOptions()));
  out.times.lower_ms = StageDone(options, "lowering", t);
  out.num_islands = out.loop_graph.num_islands;
  out.num_island_nodes = out.loop_graph.num_island_nodes;
  CollectNotCompiled(out);
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
  ASSIGN_OR_RETURN(out.program, wrapper::GenerateWrapper(out.loop_graph, out.schedule, *codegen));
  out.times.wrapper_ms = StageDone(options, "wrapper", t);

  t = Clock::now();
  if (options.plan_memory) {
    ASSIGN_OR_RETURN(wrapper::ReusePlanStats reuse, wrapper::PlanBufferReuse(out.program));
    (void)reuse;
  }
  ASSIGN_OR_RETURN(out.memory, wrapper::ReportMemory(out.program));
  RETURN_IF_ERROR(CheckPeakMemory(out.memory, options.max_peak_bytes));
  out.times.plan_ms = StageDone(options, "memory planning", t);

  out.program.constants_identity = options.constants_identity;
  if (!options.generate_only) {
    t = Clock::now();
    ASSIGN_OR_RETURN(out.compiled, codegen->Compile(out.program));
    out.times.compile_ms = StageDone(options, "device compile", t);
    // The device knows which externs it runs in a library or as code of
    // its own (the guess above only knows the op table).
    if (std::map<std::string, wrapper::ExternRun> runs = out.compiled->ExternRuns(); !runs.empty()) {
      CollectNotCompiled(out, runs);
    }
  }
  return out;
}

}  // namespace kiln::driver
