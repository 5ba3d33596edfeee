#include "driver/specializing_program.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "driver/value_specialization.h"
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

// Whether every tensor input declares its dtype and all of its sizes.
bool AllStatic(const std::vector<InputGuard>& guards, const ir::Graph& graph) {
  for (size_t i = 0; i < guards.size(); ++i) {
    if (!graph.inputs()[i]->type()->is_tensor()) continue;
    if (!guards[i].dtype || !guards[i].sizes) return false;
  }
  return true;
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
    if (g.values) {
      if (g.values->dtype() != t.dtype() || g.values->sizes() != t.sizes() || !t.has_data()) {
        return false;
      }
      for (int64_t k = 0; k < t.numel(); ++k) {
        if (g.values->GetInt(k) != t.GetInt(k)) return false;
      }
    }
  }
  return true;
}

}  // namespace

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
  CompileSummary summary;
  if (first_inputs != nullptr) {
    ASSIGN_OR_RETURN(Version v, p->Compile(first_inputs, first, &summary));
    p->versions_.push_front(std::move(v));
  } else {
    // Declared dynamic dims, or shapes that depend on small integer inputs'
    // values: every call specializes (nothing to compile yet).
    if (!AllStatic(DeclaredGuards(graph), graph)) return p;
    ASSIGN_OR_RETURN(std::vector<size_t> by_value, InputsToSpecializeOnValues(graph, nullptr));
    if (!by_value.empty()) return p;
    ASSIGN_OR_RETURN(Version v, p->Compile(nullptr, first, &summary));
    p->versions_.push_front(std::move(v));
  }
  p->compiles_ = 1;
  p->summaries_.push_back(std::move(summary));
  return p;
}

absl::StatusOr<SpecializingProgram::Version> SpecializingProgram::Compile(
    const std::vector<ir::IValue>* inputs, CompiledGraph* stats, CompileSummary* summary) const {
  std::unique_ptr<ir::Graph> graph = graph_->copy();
  std::vector<size_t> by_value;
  if (inputs != nullptr) {
    RETURN_IF_ERROR(SpecializeInputs(*graph, *inputs, refine_));
    ASSIGN_OR_RETURN(by_value, InputsToSpecializeOnValues(*graph, inputs));
  }
  Version v;
  v.guards = DeclaredGuards(*graph);
  for (size_t i : by_value) {
    const Tensor& t = (*inputs)[i].toTensor();
    RETURN_IF_ERROR(BindInputValue(*graph, i, t));
    v.guards[i].values = t.Contiguous();
  }
  ASSIGN_OR_RETURN(CompiledGraph compiled, CompileGraph(*graph, options_));
  v.program = std::move(compiled.compiled);
  if (summary != nullptr) {
    summary->num_islands = compiled.num_islands;
    summary->num_island_nodes = compiled.num_island_nodes;
    summary->whole_graph_interpreted = compiled.whole_graph_interpreted;
    summary->num_reference_externs = compiled.num_reference_externs;
    summary->not_compiled = compiled.not_compiled;
    for (const InputGuard& g : v.guards) summary->input_sizes.push_back(g.sizes.value_or(std::vector<int64_t>()));
  }
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
  CompileSummary summary;
  ASSIGN_OR_RETURN(Version v, Compile(&inputs, nullptr, &summary));
  std::lock_guard<std::mutex> lock(mu_);
  ++compiles_;
  summaries_.push_back(std::move(summary));
  // Bounded like the versions: keep the latest summaries only.
  constexpr size_t kMaxSummaries = 64;
  if (summaries_.size() > kMaxSummaries) summaries_.erase(summaries_.begin());
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

absl::StatusOr<std::vector<wrapper::DeviceBuffer>> SpecializingProgram::RunOnDevice(
    const std::vector<wrapper::DeviceRunInput>& inputs, void* stream) {
  std::vector<ir::IValue> values;
  values.reserve(inputs.size());
  for (const wrapper::DeviceRunInput& in : inputs) {
    values.push_back(ir::IValue::FromTensor(
        in.host.defined() ? in.host : Tensor::Placeholder(in.device.dtype, in.device.sizes)));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<wrapper::CompiledProgram> program, Select(values));
  return program->RunOnDevice(inputs, stream);
}

std::vector<CompileSummary> SpecializingProgram::compile_summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return summaries_;
}

int SpecializingProgram::num_compiles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return compiles_;
}

}  // namespace kiln::driver
