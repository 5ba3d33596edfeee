// Models from files, the path users take: import by file type, the pass
// pipeline, and compile for a device found by name. The CLI, the
// conformance runner and the benchmarks all go through here, so they time
// and test the same sequence.
//
//   ASSIGN_OR_RETURN(driver::CompiledModel m,
//                    driver::CompileModelFile("model.onnx", {.device = "cpu"}));
//   ASSIGN_OR_RETURN(auto outputs, m.compiled.compiled->Run(inputs));
#ifndef KILN_DRIVER_MODEL_H_
#define KILN_DRIVER_MODEL_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "driver/compile_graph.h"
#include "driver/specializing_program.h"
#include "frontend/pt2/signature.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "passes/pipeline.h"
#include "onnx/onnx_pb.h"

namespace kiln::driver {

enum class ModelFormat { kOnnx, kPt2 };

struct ImportedModel {
  std::string path;
  ModelFormat format = ModelFormat::kOnnx;
  std::unique_ptr<ir::Graph> graph;
  // The parsed ONNX model (its input and output value infos type test data).
  std::optional<onnx::ModelProto> onnx;
  // A torch.export program's inputs (with their symbolic sizes and ranges)
  // and outputs.
  std::optional<frontend::pt2::Signature> pt2;
  double import_ms = 0;

  // Whether some input's shape is decided only at a call (a .pt2 program
  // with symbolic sizes): compile such a model at a call's shapes.
  bool HasDynamicShapes() const { return pt2 && pt2->HasSymbolicSizes(); }
  // Types a copy of the graph at a call's input shapes beyond what the
  // inputs alone say (a .pt2 program's symbolic sizes); null when the model
  // has nothing to add. For SpecializeInputTypes / SpecializingProgram.
  GraphRefiner Refiner() const;
};

// The format of `path` by its extension: ".onnx", ".pt2". InvalidArgument
// naming the path and the formats kiln reads otherwise.
absl::StatusOr<ModelFormat> ModelFormatOf(const std::string& path);

// Reads and imports a model file. Errors start with the path.
absl::StatusOr<ImportedModel> ImportModelFile(const std::string& path);

// Runs a pass pipeline spec ("-O2", "dce,cse", "" for none) over `graph`.
// `ms`, when given, receives the time it took. The verifier runs after every
// changing pass unless `verify_each_pass` is false (graphs kiln built itself,
// such as lazy traces, where the cost of verifying shows).
// `on_pass`, when set, is told of every pass execution.
absl::Status RunPipeline(ir::Graph& graph, const std::string& pipeline, double* ms = nullptr,
                         bool verify_each_pass = true, const passes::PassObserver& on_pass = {});

// A model with dynamic shapes (HasDynamicShapes) typed at the shapes of
// `inputs` (checked against its signature) or, without them, at the shapes it
// was traced with; run after the pass pipeline. Nothing to do otherwise.
absl::Status SpecializeDynamicShapes(ImportedModel& model,
                                     const std::vector<ir::IValue>* inputs = nullptr);

struct ModelCompileOptions {
  std::string pipeline = "-O2";
  CompileOptions compile;
};

struct CompiledModel {
  ImportedModel model;
  CompiledGraph compiled;
  double passes_ms = 0;
};

// RunPipeline, then CompileGraph for `options.compile.device` (which must be
// registered). A model with dynamic shapes is compiled at the shapes of
// `inputs` (checked against its signature) or, without them, at the shapes
// it was traced with.
absl::StatusOr<CompiledModel> CompileImportedModel(ImportedModel model,
                                                   const ModelCompileOptions& options = {},
                                                   const std::vector<ir::IValue>* inputs = nullptr);

// ImportModelFile, then CompileImportedModel. Calls Initialize().
absl::StatusOr<CompiledModel> CompileModelFile(const std::string& path,
                                               const ModelCompileOptions& options = {});

}  // namespace kiln::driver

#endif  // KILN_DRIVER_MODEL_H_
