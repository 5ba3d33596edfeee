// The compiler driver: kiln IR -> shape propagation and decompositions
// (passes::PrepareForLowering) -> lowering -> fusion -> Wrapper IR -> memory
// planning -> a device's compiled program, with the time of each stage. The
// device is found through the codegen registry
// (wrapper/codegen.h); link its implementation and register it first (for the
// CPU: backends::cpu::RegisterCpuBackend()).
#ifndef KILN_DRIVER_COMPILE_GRAPH_H_
#define KILN_DRIVER_COMPILE_GRAPH_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

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
};

struct CompileTimes {
  double shapes_ms = 0;
  double lower_ms = 0;
  double schedule_ms = 0;
  double wrapper_ms = 0;  // lines + kernel sources
  double plan_ms = 0;
  double compile_ms = 0;  // the device's compile (C++ compiler or cache hit, dlopen)
  double FrontHalfMs() const {
    return shapes_ms + lower_ms + schedule_ms + wrapper_ms + plan_ms;
  }
};

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
  CompileTimes times;
  std::unique_ptr<wrapper::CompiledProgram> compiled;  // null with generate_only
};

// `graph` gets static shapes and loses its composite ops (it is modified).
absl::StatusOr<CompiledGraph> CompileGraph(ir::Graph& graph, const CompileOptions& options = {});

}  // namespace kiln::driver

#endif  // KILN_DRIVER_COMPILE_GRAPH_H_
