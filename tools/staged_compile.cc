#include "tools/staged_compile.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_program.h"
#include "backends/cpu/wrapper_codegen.h"
#include "driver/model.h"
#include "driver/program_cache.h"
#include "ir/text_printer.h"
#include "passes/pipeline.h"
#include "support/status.h"
#include "tools/file_io.h"
#include "tools/terminal.h"

namespace kiln::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kStageNames[] = {"graph", "optimized", "loops", "wrapper", "source",
                                       "program"};

Clock::time_point After(Clock::time_point start, double seconds) {
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// The device compile's parts, from the CPU program's statistics: code
// generation, the C++ compiler (or the cache hit) and dlopen. The backend
// measures their durations, one after the other from the stage's start.
void TraceCpuCompile(backends::cpu::CpuProgram& program, Clock::time_point stage_start,
                     TraceRecorder& trace) {
  const backends::cpu::CompileStats& stats = program.stats();
  const Clock::time_point codegen_end = After(stage_start, stats.codegen_seconds);
  trace.Complete("C++ source assembly", "codegen", stage_start, codegen_end);
  const Clock::time_point compile_end = After(codegen_end, stats.cache_seconds);
  const size_t units = std::max<size_t>(1, program.generated().units.size());
  trace.Complete(stats.cache_hit ? "C++ compile (cache hit)" : "C++ compile (g++)", "codegen",
                 codegen_end, compile_end,
                 {{"translation_units", units},
                  {"cache_hit", stats.cache_hit},
                  {"library", stats.library_path}});
  trace.Complete("dlopen", "codegen", compile_end, After(compile_end, stats.load_seconds));
}

class Stages {
 public:
  explicit Stages(const StagedCompileOptions& options)
      : options_(options),
        progress_("compile", static_cast<int>(options.stop_after) + 1, options.progress) {}

  // Writes `contents` as dump `name` when --dump-dir is set.
  absl::Status Dump(absl::string_view name, absl::string_view contents) {
    if (options_.dump_dir.empty()) return absl::OkStatus();
    return WriteFileAtomically(absl::StrCat(options_.dump_dir, "/", name), contents);
  }
  void Starting(CompileStage stage) {
    if (stage > options_.stop_after) return;
    progress_.Update(static_cast<int>(stage), CompileStageName(stage));
  }
  void Trace(absl::string_view name, absl::string_view category, Clock::time_point start,
             Clock::time_point end, Json args = Json::object()) {
    if (options_.trace != nullptr) options_.trace->Complete(name, category, start, end, std::move(args));
  }

 private:
  const StagedCompileOptions& options_;
  Progress progress_;
};

}  // namespace

absl::string_view CompileStageName(CompileStage stage) {
  return kStageNames[static_cast<int>(stage)];
}

absl::StatusOr<CompileStage> ParseCompileStage(absl::string_view name) {
  for (int i = 0; i <= static_cast<int>(CompileStage::kProgram); ++i) {
    if (name == kStageNames[i]) return static_cast<CompileStage>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown stage '", name, "' (expected ",
                                                 absl::StrJoin(kStageNames, ", "), ")"));
}

std::string LoopsText(const driver::CompiledGraph& compiled) {
  if (compiled.whole_graph_interpreted) {
    return "# the whole graph runs in the interpreter (an interpreter island)\n";
  }
  std::string text = absl::StrCat("# buffers\n", compiled.loop_graph.ToString(), "\n# schedule\n");
  for (const lowering::ScheduleStep& step : compiled.schedule.steps) {
    if (step.kind == lowering::ScheduleStep::Kind::kKernel) {
      absl::StrAppend(&text, "kernel ", step.kernel.name, " writes ",
                      absl::StrJoin(step.kernel.buffers, " "), " reads ",
                      absl::StrJoin(step.kernel.reads, " "), "\n");
    } else {
      const lowering::Buffer* b = compiled.loop_graph.Find(step.buffer);
      absl::StrAppend(&text, "extern ", b && b->extern_call ? b->extern_call->op : "?", " -> ",
                      step.buffer, "\n");
    }
  }
  return text;
}

namespace {

// The whole compile in one driver call, through the program cache.
absl::StatusOr<StagedCompile> CachedCompile(const StagedCompileOptions& options) {
  driver::ModelCompileOptions compile;
  compile.pipeline = options.pipeline;
  compile.precision = options.precision;
  compile.compile.device = options.device;
  compile.compile.max_peak_bytes = options.max_peak_bytes;
  compile.inputs_for = options.make_inputs;
  compile.program_cache = true;
  ASSIGN_OR_RETURN(driver::CompiledModel m, driver::CompileModelFile(options.model_path, compile));
  StagedCompile out;
  out.model = std::move(m.model);
  out.passes_ms = m.passes_ms;
  out.autocast = m.autocast;
  out.inputs_made = static_cast<bool>(options.make_inputs);
  out.inputs = std::move(m.inputs);
  out.cache = std::move(m.cache);
  out.compiled = std::move(m.compiled);
  if (auto* cpu = dynamic_cast<backends::cpu::CpuProgram*>(out.compiled->compiled.get())) {
    out.program_source = cpu->generated().source;
  }
  out.reached = CompileStage::kProgram;
  return out;
}

}  // namespace

absl::StatusOr<StagedCompile> RunStagedCompile(const StagedCompileOptions& options) {
  if (options.program_cache && options.stop_after == CompileStage::kProgram && options.dump_dir.empty() &&
      options.trace == nullptr) {
    driver::ModelCompileOptions probe;
    probe.precision = options.precision;
    probe.compile.device = options.device;
    // What the cache does not take (.pt2, --precision, other devices)
    // compiles stage by stage as before.
    if (driver::ProgramCacheRefusal(options.model_path, probe).empty()) return CachedCompile(options);
  }
  Stages stages(options);
  StagedCompile out;

  stages.Starting(CompileStage::kGraph);
  Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(out.model, driver::ImportModelFile(options.model_path));
  stages.Trace("import", "import", start, Clock::now(),
               {{"model", options.model_path}, {"nodes", out.model.graph->numNodes()}});
  RETURN_IF_ERROR(stages.Dump("1_graph.txt", ir::PrintGraph(*out.model.graph)));
  if (options.stop_after == CompileStage::kGraph) return out;

  stages.Starting(CompileStage::kOptimized);
  start = Clock::now();
  passes::PassObserver on_pass = [&](absl::string_view pass, Clock::time_point begin,
                                     Clock::time_point end, bool changed) {
    stages.Trace(pass, "pass", begin, end, {{"changed", changed}});
  };
  RETURN_IF_ERROR(driver::RunPipeline(*out.model.graph, options.pipeline, &out.passes_ms,
                                      /*verify_each_pass=*/true, on_pass));
  stages.Trace("passes", "stage", start, Clock::now(), {{"pipeline", options.pipeline}});
  if (options.make_inputs) {
    ASSIGN_OR_RETURN(out.inputs, options.make_inputs(out.model));
    out.inputs_made = true;
  }
  RETURN_IF_ERROR(driver::SpecializeForCall(out.model, out.inputs_made ? &out.inputs : nullptr));
  if (options.precision) {
    ASSIGN_OR_RETURN(out.autocast,
                     driver::ApplyPrecision(*out.model.graph, *options.precision, options.device));
  }
  RETURN_IF_ERROR(stages.Dump("2_optimized.txt", ir::PrintGraph(*out.model.graph)));
  out.reached = CompileStage::kOptimized;
  if (options.stop_after == CompileStage::kOptimized) return out;

  stages.Starting(CompileStage::kLoops);
  driver::CompileOptions compile;
  compile.device = options.device;
  compile.generate_only = options.stop_after != CompileStage::kProgram;
  if (options.stop_after >= CompileStage::kSource) compile.max_peak_bytes = options.max_peak_bytes;
  Clock::time_point device_compile_start;
  compile.on_stage = [&](const char* stage, Clock::time_point begin, Clock::time_point end) {
    const absl::string_view name = stage;
    if (name == "device compile") device_compile_start = begin;
    // What runs next, for the progress line.
    if (name == "scheduling") stages.Starting(CompileStage::kWrapper);
    if (name == "memory planning" && !compile.generate_only) stages.Starting(CompileStage::kProgram);
    stages.Trace(stage, "stage", begin, end);
  };
  ASSIGN_OR_RETURN(out.compiled, driver::CompileGraph(*out.model.graph, compile));
  const driver::CompiledGraph& compiled = *out.compiled;
  RETURN_IF_ERROR(stages.Dump("3_loops.txt", LoopsText(compiled)));
  RETURN_IF_ERROR(stages.Dump("4_wrapper.txt", compiled.program.ToString()));
  out.reached = options.stop_after < CompileStage::kWrapper ? options.stop_after : CompileStage::kWrapper;
  if (options.stop_after <= CompileStage::kWrapper) return out;

  // The CPU's C++ source: from the compiled program, or generated alone.
  if (options.device == "cpu" && !compiled.whole_graph_interpreted) {
    if (auto* cpu = dynamic_cast<backends::cpu::CpuProgram*>(compiled.compiled.get())) {
      out.program_source = cpu->generated().source;
      if (options.trace != nullptr) TraceCpuCompile(*cpu, device_compile_start, *options.trace);
    } else {
      start = Clock::now();
      ASSIGN_OR_RETURN(backends::cpu::GeneratedProgram generated,
                       backends::cpu::GenerateProgramSource(compiled.program));
      out.program_source = std::move(generated.source);
      stages.Trace("C++ source", "codegen", start, Clock::now());
    }
  }
  RETURN_IF_ERROR(stages.Dump("5_program.cpp", out.program_source));
  out.reached = options.stop_after;
  return out;
}

}  // namespace kiln::tools
