// `kiln compile` and `kiln run --backend compiled` as stages, IREE-style:
//
//   graph      the imported kiln IR
//   optimized  after the pass pipeline (-O2)
//   loops      lowered to the loop IR and scheduled into fused kernels
//   wrapper    Wrapper IR lines, memory planned
//   source     generated source (the CPU's C++ program) and wrapper.py
//   program    compiled by the device (the C++ compiler for cpu): runnable
//
// The sequence is the driver's (driver/model.h: ImportModelFile,
// RunPipeline, CompileGraph); this adds stopping early (--compile-to),
// writing the IR after each stage (--dump-dir), a timeline (--trace) and
// progress on a terminal.
#ifndef KILN_TOOLS_STAGED_COMPILE_H_
#define KILN_TOOLS_STAGED_COMPILE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "driver/compile_graph.h"
#include "driver/model.h"
#include "driver/precision.h"
#include "ir/ivalue.h"
#include "tools/trace.h"

namespace kiln::tools {

enum class CompileStage { kGraph, kOptimized, kLoops, kWrapper, kSource, kProgram };

// "graph", "optimized", ...
absl::string_view CompileStageName(CompileStage stage);
// InvalidArgument listing the stages otherwise.
absl::StatusOr<CompileStage> ParseCompileStage(absl::string_view name);

struct StagedCompileOptions {
  std::string model_path;
  std::string pipeline = "-O2";
  std::string device = "cpu";
  CompileStage stop_after = CompileStage::kProgram;
  // Non-empty: write the IR after each stage here (1_graph.txt,
  // 2_optimized.txt, 3_loops.txt, 4_wrapper.txt, 5_program.cpp).
  std::string dump_dir;
  // Refuse a program (stages source and program) whose planned peak exceeds
  // this; negative: no limit.
  int64_t max_peak_bytes = -1;
  // Optional: the inputs of a call, made from the imported model; the
  // program is specialized to them (driver::SpecializeForCall: dynamic dims,
  // small integer inputs its shapes depend on). Without it, a model with
  // dynamic shapes compiles at its traced shapes.
  std::function<absl::StatusOr<std::vector<ir::IValue>>(const driver::ImportedModel&)> make_inputs;
  // Applied after the passes and the call's specialization
  // (driver/precision.h): bf16/fp16 rewrite the graph as autocast would,
  // tf32/fp32 set the device's float32 matmul precision.
  std::optional<driver::Precision> precision;
  // Compile through the driver's whole-model cache (driver/program_cache.h)
  // when the whole program is wanted and nothing is dumped or traced: a warm
  // compile then skips import, passes and lowering (the model then has no
  // graph; StagedCompile::cache says what happened).
  bool program_cache = false;
  TraceRecorder* trace = nullptr;  // optional
  bool progress = true;            // on stderr, when it is a terminal
};

struct StagedCompile {
  driver::ImportedModel model;
  double passes_ms = 0;
  CompileStage reached = CompileStage::kGraph;
  // From stage loops on.
  std::optional<driver::CompiledGraph> compiled;
  driver::AutocastStats autocast;  // what a bf16/fp16 precision changed
  // What make_inputs returned, when it was called.
  bool inputs_made = false;
  std::vector<ir::IValue> inputs;
  // From stage source on, for the CPU: the whole C++ program (empty when the
  // graph is interpreted whole).
  std::string program_source;
  driver::ProgramCacheUse cache;  // with options.program_cache
};

absl::StatusOr<StagedCompile> RunStagedCompile(const StagedCompileOptions& options);

// The loop IR after scheduling: each buffer, then the schedule ("kernel
// cpp_fused_relu_0 writes buf1 reads arg0", "extern aten::mm -> buf2").
std::string LoopsText(const driver::CompiledGraph& compiled);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_STAGED_COMPILE_H_
