// The compiler driver: kiln IR -> shape propagation and decompositions
// (passes::PrepareForLowering) -> lowering -> fusion -> Wrapper IR -> memory
// planning -> a device's compiled program, with the time of each stage. The
// device is found through the codegen registry
// (wrapper/codegen.h); link its implementation and register it first (for the
// CPU: backends::cpu::RegisterCpuBackend()).
#ifndef KILN_DRIVER_COMPILE_GRAPH_H_
#define KILN_DRIVER_COMPILE_GRAPH_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "lowering/loop_ir.h"
#include "lowering/schedule.h"
#include "wrapper/codegen.h"
#include "wrapper/memory_planning.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::driver {

struct CompileOptions {
  std::string device = "cpu";
  // Inductor's buffer reuse over the lines.
  bool plan_memory = true;
  // Stop after generating the lines (no C++ compiler run).
  bool generate_only = false;
  // Refuse a program whose planned peak memory exceeds this many bytes
  // (ResourceExhausted giving both sizes), before the device compiles it;
  // negative: no limit.
  int64_t max_peak_bytes = -1;
  // Told of each stage when it ends ("shape propagation", "lowering",
  // "scheduling", "wrapper", "memory planning", "device compile"), with its
  // start and end: `kiln compile --trace` draws them. Optional.
  std::function<void(const char* stage, std::chrono::steady_clock::time_point start,
                     std::chrono::steady_clock::time_point end)>
      on_stage;
  // Run the device's pre-lowering passes (DeviceCodegen::PreLoweringPipeline,
  // e.g. the CPU's epilogue fusion). Off: the graph lowers as it is (tests
  // compare both).
  bool device_passes = true;
  // WrapperProgram::constants_identity of the program (the program cache
  // sets its key).
  std::string constants_identity;
};

struct CompileTimes {
  double shapes_ms = 0;
  double device_passes_ms = 0;
  double lower_ms = 0;
  double schedule_ms = 0;
  double wrapper_ms = 0;  // lines + kernel sources
  double plan_ms = 0;
  double compile_ms = 0;  // the device's compile (C++ compiler or cache hit, dlopen)
  double FrontHalfMs() const {
    return shapes_ms + device_passes_ms + lower_ms + schedule_ms + wrapper_ms + plan_ms;
  }
};

// A node that did not become a generated kernel (issue 12, item 5): a member
// of an interpreter island, an op run by its reference kernel as an extern
// call, or a library call (GEMM, convolution), which is compiled code of
// another kind and counted apart.
struct NotCompiledNode {
  // kGeneratedExtern: an extern the device emitted as code of its own (the
  // CPU's attention kernel), compiled like a kernel.
  enum class Kind : uint8_t { kIsland, kReferenceExtern, kLibraryExtern, kGeneratedExtern };
  Kind kind = Kind::kIsland;
  int island = -1;     // kIsland: which island (0-based)
  std::string op;      // the overload or kind ("aten::index.Tensor", "prim::Loop")
  std::string node;    // the model's node name (the ONNX node), else "%<output>"
  std::string reason;  // why it was not lowered
};
const char* NotCompiledKindName(NotCompiledNode::Kind kind);  // "island", ...

struct CompiledGraph {
  lowering::LoopGraph loop_graph;
  lowering::Schedule schedule;
  wrapper::WrapperProgram program;
  wrapper::MemoryReport memory;
  int num_kernels = 0;
  int num_externs = 0;  // interpreter islands included
  // Interpreter islands (graph breaks, lowering/islands.h): how many, and how
  // many graph nodes (prim::Constant excluded) run in them instead of being
  // compiled. A whole-graph island counts as one with every node.
  int num_islands = 0;
  int num_island_nodes = 0;
  bool whole_graph_interpreted = false;
  // Every island member and every extern call, in program order; and the
  // number of extern calls that run a reference kernel (not a library).
  std::vector<NotCompiledNode> not_compiled;
  int num_reference_externs = 0;
  CompileTimes times;
  std::unique_ptr<wrapper::CompiledProgram> compiled;  // null with generate_only
};

// A Markdown report of `c.not_compiled`: a summary line, then a table
// (kind, op, node, reason) of islands and reference-kernel externs, then the
// library calls grouped by op. "Everything compiled ..." when there is none.
std::string NotCompiledReport(const CompiledGraph& c);
// One line per op that ran in an island or as a reference-kernel extern:
// "aten::index.Tensor (island 2, extern 1)", sorted; empty when none.
std::vector<std::string> NotCompiledOps(const CompiledGraph& c);

// Types the values of a graph whose inputs have just been given static
// shapes, from what its frontend knows (e.g. a torch.export program's
// symbolic sizes evaluated at the inputs' sizes). Optional.
using GraphRefiner = std::function<absl::Status(ir::Graph&, const std::vector<ir::IValue>&)>;

// Gives each graph input that receives a tensor in `inputs` that tensor's
// dtype and sizes (contiguous strides), as a compile specialised to a call
// does. With `refine`, runs it and then folds what those sizes decide
// (shape propagation, aten::size and integer arithmetic on them).
// InvalidArgument when the counts differ.
absl::Status SpecializeInputs(ir::Graph& graph, const std::vector<ir::IValue>& inputs,
                              const GraphRefiner& refine = nullptr);

// ResourceExhausted (giving both sizes) when `memory`'s planned peak exceeds
// `max_peak_bytes` (negative: no limit); CompileOptions::max_peak_bytes.
absl::Status CheckPeakMemory(const wrapper::MemoryReport& memory, int64_t max_peak_bytes);

// `graph` gets static shapes from shape resolution and loses its composite
// ops to their decompositions (it is modified).
absl::StatusOr<CompiledGraph> CompileGraph(ir::Graph& graph, const CompileOptions& options = {});

}  // namespace kiln::driver

#endif  // KILN_DRIVER_COMPILE_GRAPH_H_
