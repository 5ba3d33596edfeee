#include "driver/model.h"

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "driver/initialize.h"
#include "driver/program_cache.h"
#include "driver/value_specialization.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/model_file.h"
#include "frontend/pt2/importer.h"
#include "passes/all_passes.h"
#include "passes/pipeline.h"
#include "passes/shape_propagation.h"
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
  if (absl::EndsWithIgnoreCase(path, ".pt2")) return ModelFormat::kPt2;
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": unknown model format (kiln reads .onnx models and torch.export .pt2 archives)"));
}

absl::StatusOr<std::vector<ir::IValue>> ImportedModel::TracedInputs() const {
  std::vector<ir::IValue> shapes;
  if (!HasDynamicShapes()) return shapes;
  ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> traced, pt2->ExampleShapes());
  for (size_t i = 0; i < traced.size(); ++i) {
    const frontend::pt2::SignatureInput& in = pt2->inputs[i];
    shapes.push_back(in.is_tensor ? ir::IValue::FromTensor(Tensor::Placeholder(in.dtype, traced[i]))
                                  : ir::IValue::None());
  }
  return shapes;
}

GraphRefiner ImportedModel::Refiner() const {
  if (!HasDynamicShapes()) return nullptr;
  return [signature = *pt2](ir::Graph& graph, const std::vector<ir::IValue>& inputs) {
    return signature.Specialize(graph, inputs);
  };
}

absl::StatusOr<std::unique_ptr<ir::Graph>> ImportOnnxModel(
    const onnx::ModelProto& model, std::vector<std::optional<absl::string_view>> main_raw_data) {
  RETURN_IF_ERROR(Initialize());
  frontend::onnx_import::ImportOptions options;
  options.main_raw_data = std::move(main_raw_data);
  // kiln's shape functions type each converted node, where ONNX's inference
  // left a rank unknown (issue 12).
  options.infer_node_types = passes::InferNodeTypes;
  return frontend::onnx_import::ImportModel(model, options);
}

absl::StatusOr<ImportedModel> ImportModelFile(const std::string& path) {
  RETURN_IF_ERROR(Initialize());
  ImportedModel m;
  m.path = path;
  ASSIGN_OR_RETURN(m.format, ModelFormatOf(path));
  const auto start = Clock::now();
  if (m.format == ModelFormat::kPt2) {
    ASSIGN_OR_RETURN(frontend::pt2::ImportedProgram program, frontend::pt2::LoadPt2File(path));
    m.graph = std::move(program.graph);
    m.pt2 = std::move(program.signature);
    m.import_ms = MsSince(start);
    return m;
  }
  // Parsed in place: the large weights are read from the mapped file (once,
  // into the graph's constants), not copied into the proto first.
  ASSIGN_OR_RETURN(frontend::onnx_import::MappedModel mapped, frontend::onnx_import::MapModelFile(path));
  onnx::ModelProto& proto = mapped.model;
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ImportOnnxModel(proto, std::move(mapped.raw_data));
  if (!graph.ok()) {
    return absl::Status(graph.status().code(), absl::StrCat(path, ": ", graph.status().message()));
  }
  m.graph = *std::move(graph);
  m.onnx = std::move(proto);
  m.import_ms = MsSince(start);
  return m;
}

absl::Status RunPipeline(ir::Graph& graph, const std::string& pipeline, double* ms,
                         bool verify_each_pass, const passes::PassObserver& on_pass) {
  const auto start = Clock::now();
  if (!pipeline.empty()) {
    passes::PipelineOptions options;
    options.verify_each_pass = verify_each_pass;
    options.on_pass_executed = on_pass;
    ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> p,
                     passes::Pipeline::Create(pipeline, passes::DefaultPassRegistry(), options));
    ASSIGN_OR_RETURN(bool changed, p->Run(graph));
    (void)changed;
  }
  if (ms != nullptr) *ms = MsSince(start);
  return absl::OkStatus();
}

absl::Status SpecializeForCall(ImportedModel& model, const std::vector<ir::IValue>* inputs) {
  ir::Graph& graph = *model.graph;
  if (inputs == nullptr) {
    if (!model.HasDynamicShapes()) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::vector<ir::IValue> shapes, model.TracedInputs());
    return SpecializeInputs(graph, shapes, model.Refiner());
  }
  if (model.pt2) RETURN_IF_ERROR(model.pt2->CheckInputs(*inputs));
  RETURN_IF_ERROR(SpecializeInputs(graph, *inputs, model.Refiner()));
  ASSIGN_OR_RETURN(std::vector<size_t> by_value, InputsToSpecializeOnValues(graph, inputs));
  for (size_t i : by_value) RETURN_IF_ERROR(BindInputValue(graph, i, (*inputs)[i].toTensor()));
  return absl::OkStatus();
}

absl::StatusOr<CompiledModel> CompileImportedModel(ImportedModel model,
                                                   const ModelCompileOptions& options,
                                                   const std::vector<ir::IValue>* inputs) {
  CompiledModel m;
  m.model = std::move(model);
  RETURN_IF_ERROR(RunPipeline(*m.model.graph, options.pipeline, &m.passes_ms));
  if (inputs == nullptr && options.inputs_for) {
    ASSIGN_OR_RETURN(m.inputs, options.inputs_for(m.model));
    inputs = &m.inputs;
  }
  RETURN_IF_ERROR(SpecializeForCall(m.model, inputs));
  if (options.precision) {
    ASSIGN_OR_RETURN(m.autocast, ApplyPrecision(*m.model.graph, *options.precision, options.compile.device));
  }
  ASSIGN_OR_RETURN(m.compiled, CompileGraph(*m.model.graph, options.compile));
  return m;
}

absl::StatusOr<CompiledModel> CompileModelFile(const std::string& path,
                                               const ModelCompileOptions& options) {
  if (options.program_cache) return CompileModelFileCached(path, options);
  ASSIGN_OR_RETURN(ImportedModel model, ImportModelFile(path));
  return CompileImportedModel(std::move(model), options);
}

}  // namespace kiln::driver
