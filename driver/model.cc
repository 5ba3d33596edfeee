#include "driver/model.h"

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "driver/initialize.h"
#include "frontend/onnx/importer.h"
#include "passes/all_passes.h"
#include "passes/pipeline.h"
#include "support/status.h"

namespace kiln::driver {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

absl::StatusOr<ModelFormat> ModelFormatOf(const std::string& path) {
  if (absl::EndsWithIgnoreCase(path, ".onnx")) return ModelFormat::kOnnx;
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": unknown model format (kiln reads .onnx models)"));
}

absl::StatusOr<ImportedModel> ImportModelFile(const std::string& path) {
  RETURN_IF_ERROR(Initialize());
  ImportedModel m;
  m.path = path;
  ASSIGN_OR_RETURN(m.format, ModelFormatOf(path));
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(onnx::ModelProto proto, frontend::onnx_import::LoadModelFile(path));
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = frontend::onnx_import::ImportModel(proto);
  if (!graph.ok()) {
    return absl::Status(graph.status().code(), absl::StrCat(path, ": ", graph.status().message()));
  }
  m.graph = *std::move(graph);
  m.onnx = std::move(proto);
  m.import_ms = MsSince(start);
  return m;
}

absl::Status RunPipeline(ir::Graph& graph, const std::string& pipeline, double* ms,
                         bool verify_each_pass) {
  const auto start = Clock::now();
  if (!pipeline.empty()) {
    passes::PipelineOptions options;
    options.verify_each_pass = verify_each_pass;
    ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> p,
                     passes::Pipeline::Create(pipeline, passes::DefaultPassRegistry(), options));
    ASSIGN_OR_RETURN(bool changed, p->Run(graph));
    (void)changed;
  }
  if (ms != nullptr) *ms = MsSince(start);
  return absl::OkStatus();
}

absl::StatusOr<CompiledModel> CompileModelFile(const std::string& path,
                                               const ModelCompileOptions& options) {
  CompiledModel m;
  ASSIGN_OR_RETURN(m.model, ImportModelFile(path));
  RETURN_IF_ERROR(RunPipeline(*m.model.graph, options.pipeline, &m.passes_ms));
  if (options.precision) {
    ASSIGN_OR_RETURN(m.autocast, ApplyPrecision(*m.model.graph, *options.precision, options.compile.device));
  }
  ASSIGN_OR_RETURN(m.compiled, CompileGraph(*m.model.graph, options.compile));
  return m;
}

}  // namespace kiln::driver
