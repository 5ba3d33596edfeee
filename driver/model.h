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

#include "absl/status/statusor.h"
#include "driver/compile_graph.h"
#include "driver/precision.h"
#include "ir/ir.h"
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
  // Applied after the pipeline (precision.h): bf16/fp16 rewrite the graph
  // as autocast would, tf32/fp32 set the device's float32 matmul precision.
  std::optional<Precision> precision;
  CompileOptions compile;
};

struct CompiledModel {
  ImportedModel model;
  CompiledGraph compiled;
  double passes_ms = 0;
  AutocastStats autocast;  // what --precision bf16/fp16 changed
};

// ImportModelFile, RunPipeline, then CompileGraph for `options.compile.device`
// (which must be registered). Calls Initialize().
absl::StatusOr<CompiledModel> CompileModelFile(const std::string& path,
                                               const ModelCompileOptions& options = {});

}  // namespace kiln::driver

#endif  // KILN_DRIVER_MODEL_H_
