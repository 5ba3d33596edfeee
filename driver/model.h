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
#include "driver/specializing_program.h"
#include "frontend/pt2/signature.h"
#include "driver/precision.h"
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
  // The parsed ONNX model (its input and output value infos type test data),
  // without the raw_data of its large initializers (frontend/onnx/model_file.h).
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
  // has nothing to add. For SpecializeInputs / SpecializingProgram.
  GraphRefiner Refiner() const;
  // Placeholder inputs at the shapes torch traced a dynamic-shape program
  // with (None for its int inputs); empty for a model without dynamic shapes.
  absl::StatusOr<std::vector<ir::IValue>> TracedInputs() const;
};

// The format of `path` by its extension: ".onnx", ".pt2". InvalidArgument
// naming the path and the formats kiln reads otherwise.
absl::StatusOr<ModelFormat> ModelFormatOf(const std::string& path);

// frontend::onnx_import::ImportModel with kiln's shape functions typing each
// converted node (ranks ONNX's inference left unknown). Calls Initialize().
// `main_raw_data`: frontend::onnx_import::ImportOptions::main_raw_data.
absl::StatusOr<std::unique_ptr<ir::Graph>> ImportOnnxModel(
    const onnx::ModelProto& model, std::vector<std::optional<absl::string_view>> main_raw_data = {});

// Reads and imports a model file. Errors start with the path.
absl::StatusOr<ImportedModel> ImportModelFile(const std::string& path);

// Runs a pass pipeline spec ("-O2", "dce,cse", "" for none) over `graph`.
// `ms`, when given, receives the time it took. The verifier runs after every
// changing pass unless `verify_each_pass` is false (graphs kiln built itself,
// such as lazy traces, where the cost of verifying shows).
// `on_pass`, when set, is told of every pass execution.
absl::Status RunPipeline(ir::Graph& graph, const std::string& pipeline, double* ms = nullptr,
                         bool verify_each_pass = true, const passes::PassObserver& on_pass = {});

// Specializes an imported (and optimized) model to one call: given
// `inputs`, the graph takes their dtypes and shapes (checked against a .pt2
// program's signature) and the values of the small integer inputs its shapes
// depend on (driver/value_specialization.h); without them, a model with
// dynamic shapes takes the shapes it was traced with, and others are left
// as they are.
absl::Status SpecializeForCall(ImportedModel& model,
                               const std::vector<ir::IValue>* inputs = nullptr);

struct ModelCompileOptions {
  std::string pipeline = "-O2";
  // Applied after the pipeline (precision.h): bf16/fp16 rewrite the graph
  // as autocast would, tf32/fp32 set the device's float32 matmul precision.
  std::optional<Precision> precision;
  CompileOptions compile;
  // When set: the inputs of the call to compile for (read once the model is
  // parsed). The program is specialised to their shapes (dynamic dims
  // resolved) and to the values of the small integer inputs its shapes
  // depend on, as SpecializingProgram does for each call.
  std::function<absl::StatusOr<std::vector<ir::IValue>>(const ImportedModel&)> inputs_for;
  // CompileModelFile through the whole-model compile cache
  // (program_cache.h): a warm compile rebuilds the program without import,
  // passes or lowering.
  bool program_cache = false;
};

// What the program cache did for a compile (program_cache.h).
struct ProgramCacheUse {
  bool used = false;     // looked up (false: not cacheable, see note)
  bool hit = false;      // the program came from the cache
  std::string key;       // of the program entry
  double lookup_ms = 0;  // hashing the model, reading and parsing the entries
  double store_ms = 0;   // serializing entries and starting their writes (on a miss; written in the background)
  // Why the cache was not used, or why an entry was rejected (corrupt) or
  // not stored; empty when all went well.
  std::string note;
};

struct CompiledModel {
  ImportedModel model;
  CompiledGraph compiled;
  double passes_ms = 0;
  // What inputs_for returned (empty without it).
  std::vector<ir::IValue> inputs;
  AutocastStats autocast;  // what --precision bf16/fp16 changed
  // With options.program_cache. On a hit `model` has no graph (its onnx
  // field holds the model's interface only) and `compiled` no loop graph or
  // schedule.
  ProgramCacheUse cache;
};

// RunPipeline, SpecializeForCall (at `inputs`, else at what
// `options.inputs_for` returns, else at the traced shapes of a model with
// dynamic shapes), then CompileGraph for `options.compile.device` (which
// must be registered).
absl::StatusOr<CompiledModel> CompileImportedModel(ImportedModel model,
                                                   const ModelCompileOptions& options = {},
                                                   const std::vector<ir::IValue>* inputs = nullptr);

// ImportModelFile, then CompileImportedModel; with options.program_cache,
// through the cache (CompileModelFileCached). Calls Initialize().
absl::StatusOr<CompiledModel> CompileModelFile(const std::string& path,
                                               const ModelCompileOptions& options = {});

}  // namespace kiln::driver

#endif  // KILN_DRIVER_MODEL_H_
