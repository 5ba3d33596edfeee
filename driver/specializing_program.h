// A compiled program that follows its inputs' shapes, the way TorchDynamo
// recompiles when a guard fails: the graph is compiled for the shapes it
// declares, and a call whose tensor inputs have other dtypes or sizes
// compiles (once) a version specialised to them. Up to
// `max_specializations` versions are kept, least recently used first out.
// A graph whose declared input shapes are not all static (ONNX dim_params:
// dynamic batch or sequence axes) compiles nothing up front: each call's
// concrete shapes compile their own version, where shape arithmetic folds to
// constants (see CompileGraph). Small integer inputs that shapes depend on
// (an axes or pads tensor, a window's size) are specialized on their values
// too, guarded by them (driver/value_specialization.h).
//
//   ASSIGN_OR_RETURN(auto program, SpecializingProgram::Create(graph));
//   ASSIGN_OR_RETURN(auto outputs, program->RunValues(inputs));
#ifndef KILN_DRIVER_SPECIALIZING_PROGRAM_H_
#define KILN_DRIVER_SPECIALIZING_PROGRAM_H_

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "driver/compile_graph.h"

namespace kiln::driver {

// What a compiled version assumes of each graph input: a tensor's dtype and
// sizes, or nothing (a non-tensor input, or a tensor whose declared type is
// not fully static).
struct InputGuard {
  std::optional<DType> dtype;
  std::optional<std::vector<int64_t>> sizes;
  // Set when the version was compiled for this input's values (a small
  // integer tensor its shapes depend on; driver/value_specialization.h).
  std::optional<Tensor> values;
};

// What one compile produced, for reports (a CompiledGraph without the
// program and the intermediate forms).
struct CompileSummary {
  int num_islands = 0;
  int num_island_nodes = 0;
  bool whole_graph_interpreted = false;
  int num_reference_externs = 0;
  std::vector<NotCompiledNode> not_compiled;
  std::vector<std::vector<int64_t>> input_sizes;  // the tensor inputs' sizes ({} otherwise)
};

class SpecializingProgram : public wrapper::CompiledProgram {
 public:
  // Compiles `graph` (not modified) right away when its declared input types
  // are static, or, given `first_inputs` (a graph with dynamic shapes), for
  // theirs, so errors show up front; `first` receives that compile's
  // statistics (left as is when nothing was compiled: dynamic shapes without
  // `first_inputs`, or inputs it specializes on by value). `refine` is
  // passed to SpecializeInputs for each specialization.
  static absl::StatusOr<std::unique_ptr<SpecializingProgram>> Create(
      const ir::Graph& graph, const CompileOptions& options = {}, int max_specializations = 8,
      CompiledGraph* first = nullptr, GraphRefiner refine = nullptr,
      const std::vector<ir::IValue>* first_inputs = nullptr);

  absl::StatusOr<std::vector<ir::IValue>> RunValues(const std::vector<ir::IValue>& inputs) override;
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override;
  // The version for the inputs' dtypes and sizes (device inputs are guarded
  // by shape only: an input whose values decide shapes must come as a host
  // tensor), run on the device.
  absl::StatusOr<std::vector<wrapper::DeviceBuffer>> RunOnDevice(const std::vector<wrapper::DeviceRunInput>& inputs,
                                                                 void* stream) override;

  // Compiles so far (the first one included).
  int num_compiles() const;
  // One summary per compile so far, in order (evicted versions included).
  std::vector<CompileSummary> compile_summaries() const;

 private:
  struct Version {
    std::vector<InputGuard> guards;
    // Shared: a caller may still run a version that another thread evicts.
    std::shared_ptr<wrapper::CompiledProgram> program;
  };

  SpecializingProgram(std::unique_ptr<ir::Graph> graph, CompileOptions options, int max_versions,
                      GraphRefiner refine);
  // The version whose guards `inputs` pass, compiling one when none does.
  absl::StatusOr<std::shared_ptr<wrapper::CompiledProgram>> Select(const std::vector<ir::IValue>& inputs);
  absl::StatusOr<Version> Compile(const std::vector<ir::IValue>* inputs, CompiledGraph* stats,
                                  CompileSummary* summary) const;

  std::unique_ptr<const ir::Graph> graph_;  // as declared, never compiled in place
  CompileOptions options_;
  int max_versions_;
  GraphRefiner refine_;
  mutable std::mutex mu_;
  std::list<Version> versions_;  // most recently used first
  int compiles_ = 0;
  std::vector<CompileSummary> summaries_;
};

}  // namespace kiln::driver

#endif  // KILN_DRIVER_SPECIALIZING_PROGRAM_H_
