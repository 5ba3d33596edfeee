// A compiled program that follows its inputs' shapes, the way TorchDynamo
// recompiles when a guard fails: the graph is compiled for the shapes it
// declares, and a call whose tensor inputs have other dtypes or sizes
// compiles (once) a version specialised to them. Up to
// `max_specializations` versions are kept, least recently used first out.
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
};

// Types the values of a graph whose inputs have just been given static
// shapes, from what its frontend knows (e.g. a torch.export program's
// symbolic sizes evaluated at the inputs' sizes). Optional.
using GraphRefiner = std::function<absl::Status(ir::Graph&, const std::vector<ir::IValue>&)>;

// Gives every tensor input of `graph` the dtype and sizes of the matching
// tensor in `inputs` (strides dropped: the program makes inputs contiguous
// where its layout asks), runs `refine` when given, then folds what those
// sizes decide (shape propagation, aten::size and integer arithmetic on
// them): the graph a call with these inputs compiles. A caller with
// dynamic-shape inputs can specialize the declared graph at its first
// call's shapes before SpecializingProgram::Create.
absl::Status SpecializeInputTypes(ir::Graph& graph, const std::vector<ir::IValue>& inputs,
                                  const GraphRefiner& refine = nullptr);

class SpecializingProgram : public wrapper::CompiledProgram {
 public:
  // Compiles `graph` (not modified) for its declared input types right away,
  // so errors show up front, or, given `first_inputs` (a graph with
  // dynamic shapes), for theirs; `first` receives that compile's
  // statistics. `refine` is passed to SpecializeInputTypes for each
  // specialization.
  static absl::StatusOr<std::unique_ptr<SpecializingProgram>> Create(
      const ir::Graph& graph, const CompileOptions& options = {}, int max_specializations = 8,
      CompiledGraph* first = nullptr, GraphRefiner refine = nullptr,
      const std::vector<ir::IValue>* first_inputs = nullptr);

  absl::StatusOr<std::vector<ir::IValue>> RunValues(const std::vector<ir::IValue>& inputs) override;
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override;

  // Compiles so far (the first one included).
  int num_compiles() const;

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
  absl::StatusOr<Version> Compile(const std::vector<ir::IValue>* inputs,
                                  CompiledGraph* stats) const;

  std::unique_ptr<const ir::Graph> graph_;  // as declared, never compiled in place
  CompileOptions options_;
  int max_versions_;
  GraphRefiner refine_;
  mutable std::mutex mu_;
  std::list<Version> versions_;  // most recently used first
  int compiles_ = 0;
};

}  // namespace kiln::driver

#endif  // KILN_DRIVER_SPECIALIZING_PROGRAM_H_
