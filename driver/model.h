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

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "driver/compile_graph.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "onnx/onnx_pb.h"

namespace kiln::driver {

enum class ModelFormat { kOnnx };

struct ImportedModel {
  std::string path;
  ModelFormat format = ModelFormat::kOnnx;
  std::unique_ptr<ir::Graph> graph;
  // The parsed ONNX model (its input and output value infos type test data).
  std::optional<onnx::ModelProto> onnx;
  double import_ms = 0;
};

// The format of `path` by its extension: ".onnx". InvalidArgument naming the
// path and the formats kiln reads otherwise.
absl::StatusOr<ModelFormat> ModelFormatOf(const std::string& path);

// frontend::onnx_import::ImportModel with kiln's shape functions typing each
// converted node (ranks ONNX's inference left unknown). Calls Initialize().
absl::StatusOr<std::unique_ptr<ir::Graph>> ImportOnnxModel(const onnx::ModelProto& model);

// Reads and imports a model file. Errors start with the path.
absl::StatusOr<ImportedModel> ImportModelFile(const std::string& path);

// Runs a pass pipeline spec ("-O2", "dce,cse", "" for none) over `graph`.
// `ms`, when given, receives the time it took. The verifier runs after every
// changing pass unless `verify_each_pass` is false (graphs kiln built itself,
// such as lazy traces, where the cost of verifying shows).
absl::Status RunPipeline(ir::Graph& graph, const std::string& pipeline, double* ms = nullptr,
                         bool verify_each_pass = true);

struct ModelCompileOptions {
  std::string pipeline = "-O2";
  CompileOptions compile;
  // When set: the inputs of the call to compile for (read once the model is
  // parsed). The program is specialised to their shapes (dynamic dims
  // resolved) and to the values of the small integer inputs its shapes
  // depend on, as SpecializingProgram does for each call.
  std::function<absl::StatusOr<std::vector<ir::IValue>>(const onnx::ModelProto&)> inputs_for;
};

struct CompiledModel {
  ImportedModel model;
  CompiledGraph compiled;
  double passes_ms = 0;
  // What inputs_for returned (empty without it).
  std::vector<ir::IValue> inputs;
};

// ImportModelFile, RunPipeline, then CompileGraph for `options.compile.device`
// (which must be registered). Calls Initialize().
absl::StatusOr<CompiledModel> CompileModelFile(const std::string& path,
                                               const ModelCompileOptions& options = {});

}  // namespace kiln::driver

#endif  // KILN_DRIVER_MODEL_H_
