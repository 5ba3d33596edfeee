#include "driver/specializing_program.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "passes/all_passes.h"
#include "passes/pipeline.h"
#include "support/status.h"

namespace kiln::driver {
namespace {

std::vector<InputGuard> DeclaredGuards(const ir::Graph& graph) {
  std::vector<InputGuard> guards;
  for (const ir::Value* in : graph.inputs()) {
    InputGuard g;
    if (in->type()->is_tensor()) {
      const ir::TensorInfo& info = in->type()->tensor();
      g.dtype = info.dtype;
      if (info.sizes) {
        std::vector<int64_t> sizes;
        for (const std::optional<int64_t>& s : *info.sizes) {
          if (!s) break;
          sizes.push_back(*s);
        }
        if (sizes.size() == info.sizes->size()) g.sizes = std::move(sizes);
      }
    }
    guards.push_back(std::move(g));
  }
  return guards;
}

bool Passes(const std::vector<InputGuard>& guards, const std::vector<ir::IValue>& inputs) {
  if (guards.size() != inputs.size()) return false;
  for (size_t i = 0; i < guards.size(); ++i) {
    const InputGuard& g = guards[i];
    if (!g.dtype && !g.sizes) continue;
    if (!inputs[i].isTensor()) return false;
    const Tensor& t = inputs[i].toTensor();
    if (g.dtype && *g.dtype != t.dtype()) return false;
    if (g.sizes && *g.sizes != t.sizes()) return false;
  }
  return true;
}

}  // namespace

absl::Status SpecializeInputTypes(ir::Graph& graph, const std::vector<ir::IValue>& inputs,
                                  const GraphRefiner& refine) {
  for (size_t i = 0; i < inputs.size() && i < graph.inputs().size(); ++i) {
    const ir::IValue& v = inputs[i];
    if (!v.isTensor()) continue;
    const Tensor& t = v.toTensor();
    ir::TensorInfo info = graph.inputs()[i]->type()->is_tensor() ? graph.inputs()[i]->type()->tensor()
                                                                 : ir::TensorInfo();
    info.dtype = t.dtype();
    info.sizes.emplace();
    for (int64_t s : t.sizes()) info.sizes->push_back(s);
    info.strides.reset();
    graph.inputs()[i]->setType(ir::Type::TensorWith(std::move(info)));
  }
  if (refine) RETURN_IF_ERROR(refine(graph, inputs));
  // Sizes computed from the inputs' (aten::size, then arithmetic, views
  // shaped by them) become constants, so lowering sees static shapes.
  static const char* kFold =
      "fixpoint(shape_propagation,peephole,constant_propagation,dead_code_elimination)";
  ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> fold,
                   passes::Pipeline::Create(kFold, passes::DefaultPassRegistry()));
  ASSIGN_OR_RETURN(bool changed, fold->Run(graph));
  (void)changed;
  return absl::OkStatus();
}

SpecializingProgram::SpecializingProgram(std::unique_ptr<ir::Graph> graph, CompileOptions options,
                                         int max_versions, GraphRefiner refine)
    : graph_(std::move(graph)),
      options_(std::move(options)),
      max_versions_(max_versions),
      refine_(std::move(refine)) {}

absl::StatusOr<std::unique_ptr<SpecializingProgram>> SpecializingProgram::Create(
    const ir::Graph& graph, const CompileOptions& options, int max_specializations,
    CompiledGraph* first, GraphRefiner refine, const std::vector<ir::IValue>* first_inputs) {
  if (options.generate_only) {
    return absl::InvalidArgumentError("SpecializingProgram: generate_only compiles no program");
  }
  if (max_specializations < 1) {
    return absl::InvalidArgumentError("SpecializingProgram: max_specializations must be >= 1");
  }
  std::unique_ptr<SpecializingProgram> p(
      new SpecializingProgram(graph.copy(), options, max_specializations, std::move(refine)));
  ASSIGN_OR_RETURN(Version v, p->Compile(first_inputs, first));
  p->versions_.push_front(std::move(v));
  p->compiles_ = 1;
  return p;
}

absl::StatusOr<SpecializingProgram::Version> SpecializingProgram::Compile(
    const std::vector<ir::IValue>* inputs, CompiledGraph* stats) const {
  std::unique_ptr<ir::Graph> graph = graph_->copy();
  if (inputs != nullptr) RETURN_IF_ERROR(SpecializeInputTypes(*graph, *inputs, refine_));
  Version v;
  v.guards = DeclaredGuards(*graph);
  ASSIGN_OR_RETURN(CompiledGraph compiled, CompileGraph(*graph, options_));
  v.program = std::move(compiled.compiled);
  if (stats != nullptr) *stats = std::move(compiled);
  return v;
}

absl::StatusOr<std::shared_ptr<wrapper::CompiledProgram>> SpecializingProgram::Select(
    const std::vector<ir::IValue>& inputs) {
  if (inputs.size() != graph_->inputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("the graph takes ", graph_->inputs().size(),
                                                   " inputs, got ", inputs.size()));
  }
  // A value that is not a tensor where the graph takes one fails in every
  // version: say so instead of compiling another.
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (graph_->inputs()[i]->type()->is_tensor() && !inputs[i].isTensor()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " must be a tensor (the graph declares one)"));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = versions_.begin(); it != versions_.end(); ++it) {
      if (!Passes(it->guards, inputs)) continue;
      versions_.splice(versions_.begin(), versions_, it);
      return versions_.front().program;
    }
  }
  // Compile without holding the lock, so calls served by existing versions
  // do not wait for the C++ compiler. Two threads may compile the same
  // signature at once; the second result is dropped.
  ASSIGN_OR_RETURN(Version v, Compile(&inputs, nullptr));
  std::lock_guard<std::mutex> lock(mu_);
  ++compiles_;
  for (auto it = versions_.begin(); it != versions_.end(); ++it) {
    if (!Passes(it->guards, inputs)) continue;
    versions_.splice(versions_.begin(), versions_, it);
    return versions_.front().program;
  }
  versions_.push_front(std::move(v));
  if (static_cast<int>(versions_.size()) > max_versions_) versions_.pop_back();
  return versions_.front().program;
}

absl::StatusOr<std::vector<ir::IValue>> SpecializingProgram::RunValues(
    const std::vector<ir::IValue>& inputs) {
  ASSIGN_OR_RETURN(std::shared_ptr<wrapper::CompiledProgram> program, Select(inputs));
  return program->RunValues(inputs);
}

absl::StatusOr<std::vector<Tensor>> SpecializingProgram::Run(const std::vector<Tensor>& inputs) {
  std::vector<ir::IValue> values;
  values.reserve(inputs.size());
  for (const Tensor& t : inputs) values.push_back(ir::IValue::FromTensor(t));
  ASSIGN_OR_RETURN(std::shared_ptr<wrapper::CompiledProgram> program, Select(values));
  return program->Run(inputs);
}

int SpecializingProgram::num_compiles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return compiles_;
}

}  // namespace kiln::driver
