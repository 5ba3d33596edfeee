#include "wrapper/codegen.h"

#include <map>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/op_registry.h"
#include "support/status.h"
#include "wrapper/device_op_overrides.h"
#include "wrapper/layout_math.h"
#include "wrapper/validate.h"

namespace kiln::wrapper {
namespace {

using lowering::Buffer;
using lowering::BufferKind;
using lowering::FusedKernel;
using lowering::LoopGraph;
using lowering::Schedule;
using lowering::ScheduleStep;

struct Registry {
  std::mutex mu;
  std::map<std::string, DeviceCodegenFactory> factories;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;  // never destroyed: used at exit
  return *registry;
}

// "gpu:1" -> ("gpu", 1); "host" -> ("host", 0).
std::pair<std::string, int> SplitDevice(const std::string& device) {
  const size_t colon = device.find(':');
  if (colon == std::string::npos) return {device, 0};
  int index = 0;
  if (!absl::SimpleAtoi(device.substr(colon + 1), &index) || index < 0) index = 0;
  return {device.substr(0, colon), index};
}

constexpr int kEntry = -1;  // "produced" before the first step
constexpr int kNever = -2;  // not produced by any step

class WrapperBuilder {
 public:
  WrapperBuilder(const LoopGraph& graph, const Schedule& schedule, DeviceCodegen& codegen)
      : graph_(graph), schedule_(schedule), codegen_(codegen) {}

  absl::StatusOr<WrapperProgram> Build() {
    RETURN_IF_ERROR(IndexBuffers());
    RETURN_IF_ERROR(AssignProducers());
    RETURN_IF_ERROR(ComputeLastUses());
    IndexPerStepWork();
    RETURN_IF_ERROR(EmitKernelDefinitions());
    EmitViewsProducedAt(kEntry);
    for (size_t s = 0; s < schedule_.steps.size(); ++s) {
      RETURN_IF_ERROR(EmitStep(static_cast<int>(s)));
    }
    CloseDeviceContext();
    FillProgramHeader();
    RETURN_IF_ERROR(ValidateWrapperProgram(program_));
    return std::move(program_);
  }

 private:
  absl::Status IndexBuffers() {
    for (const Buffer& buffer : graph_.buffers) {
      if (!IsIdentifier(buffer.name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("buffer name '", buffer.name, "' is not an identifier"));
      }
      if (!buffers_.emplace(buffer.name, &buffer).second) {
        return absl::InvalidArgumentError(absl::StrCat("buffer '", buffer.name, "' defined twice"));
      }
      RETURN_IF_ERROR(ValidateLayout(buffer.layout, absl::StrCat("buffer '", buffer.name, "'")));
    }
    for (const std::string& name : graph_.inputs) {
      ASSIGN_OR_RETURN(const Buffer* buffer, Find(name, "graph input"));
      if (buffer->kind != BufferKind::kInput) {
        return absl::InvalidArgumentError(absl::StrCat("graph input '", name, "' is not kInput"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<const Buffer*> Find(const std::string& name, absl::string_view role) const {
    auto it = buffers_.find(name);
    if (it == buffers_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(role, " '", name, "' is not a buffer"));
    }
    return it->second;
  }

  // The buffer owning `name`'s storage (follows view_of; cycles are errors).
  absl::StatusOr<std::string> Root(const std::string& name) const {
    std::string current = name;
    for (size_t hops = 0; hops <= buffers_.size(); ++hops) {
      ASSIGN_OR_RETURN(const Buffer* buffer, Find(current, "buffer"));
      if (buffer->kind != BufferKind::kView) return current;
      current = buffer->view_of;
    }
    return absl::InvalidArgumentError(absl::StrCat("view '", name, "' has a cyclic view_of chain"));
  }

  absl::Status SetProducer(const std::string& name, int step) {
    auto [it, inserted] = producer_.emplace(name, step);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffer '", name, "' is produced by steps ", it->second, " and ", step));
    }
    return absl::OkStatus();
  }

  absl::Status AssignProducers() {
    for (const Buffer& buffer : graph_.buffers) {
      if (buffer.kind == BufferKind::kExtern && !buffer.extern_source.empty()) {
        secondary_outputs_[buffer.extern_source].push_back(&buffer);
      }
    }
    for (const Buffer& buffer : graph_.buffers) {
      if (buffer.kind == BufferKind::kInput || buffer.kind == BufferKind::kConstant) {
        RETURN_IF_ERROR(SetProducer(buffer.name, kEntry));
      }
      if (buffer.kind == BufferKind::kConstant &&
          (!buffer.constant.defined() || !buffer.constant.has_data() ||
           buffer.constant.dtype() != buffer.layout.dtype ||
           buffer.constant.sizes() != buffer.layout.sizes)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "constant '", buffer.name, "' has no data or does not match its layout"));
      }
    }
    for (size_t s = 0; s < schedule_.steps.size(); ++s) {
      const ScheduleStep& step = schedule_.steps[s];
      const int si = static_cast<int>(s);
      if (step.kind == ScheduleStep::Kind::kKernel) {
        if (!IsIdentifier(step.kernel.name)) {
          return absl::InvalidArgumentError(
              absl::StrCat("step ", s, ": kernel name '", step.kernel.name, "' is not an identifier"));
        }
        if (step.kernel.buffers.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("step ", s, ": kernel '", step.kernel.name, "' writes no buffer"));
        }
        for (const std::string& name : step.kernel.buffers) {
          ASSIGN_OR_RETURN(const Buffer* buffer, Find(name, "kernel output"));
          if (buffer->kind != BufferKind::kComputed) {
            return absl::InvalidArgumentError(absl::StrCat(
                "step ", s, ": kernel '", step.kernel.name, "' writes '", name,
                "', which is not a computed buffer"));
          }
          RETURN_IF_ERROR(SetProducer(name, si));
        }
        continue;
      }
      ASSIGN_OR_RETURN(const Buffer* holder, Find(step.buffer, "extern step buffer"));
      if (holder->kind != BufferKind::kExtern || !holder->extern_call.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "step ", s, ": '", step.buffer, "' does not hold an extern call"));
      }
      const int num_outputs = holder->extern_call->num_outputs;
      if (num_outputs < 1 || num_outputs > 4096) {
        return absl::InvalidArgumentError(
            absl::StrCat("extern '", step.buffer, "' has ", num_outputs, " outputs"));
      }
      std::vector<std::string> outputs(static_cast<size_t>(num_outputs));
      outputs[0] = holder->name;
      for (const Buffer* other_ptr : secondary_outputs_[holder->name]) {
        const Buffer& other = *other_ptr;
        if (&other == holder) continue;
        if (other.extern_output < 1 || other.extern_output >= num_outputs ||
            !outputs[static_cast<size_t>(other.extern_output)].empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "extern output '", other.name, "' has bad index ", other.extern_output));
        }
        outputs[static_cast<size_t>(other.extern_output)] = other.name;
      }
      for (const std::string& name : outputs) {
        if (!name.empty()) RETURN_IF_ERROR(SetProducer(name, si));
      }
      extern_outputs_[holder->name] = std::move(outputs);
    }
    for (const Buffer& buffer : graph_.buffers) {
      if (buffer.kind != BufferKind::kView) continue;
      // Graph order is topological: a view's base usually has its root
      // already, which keeps long view chains linear.
      auto known = root_.find(buffer.view_of);
      std::string root;
      if (known != root_.end()) {
        root = known->second;
      } else {
        ASSIGN_OR_RETURN(root, Root(buffer.name));
      }
      root_[buffer.name] = root;
    }
    return absl::OkStatus();
  }

  // The step after which `name` is available (views: their storage's).
  int ProducerOf(const std::string& name) const {
    auto root = root_.find(name);
    const std::string& owner = root == root_.end() ? name : root->second;
    auto it = producer_.find(owner);
    return it == producer_.end() ? kNever : it->second;
  }
  const std::string& RootOf(const std::string& name) const {
    auto it = root_.find(name);
    return it == root_.end() ? name : it->second;
  }

  absl::Status NoteUse(const std::string& name, int step, absl::string_view role) {
    RETURN_IF_ERROR(Find(name, role).status());
    const int producer = ProducerOf(name);
    if (producer == kNever || producer >= step) {
      return absl::InvalidArgumentError(absl::StrCat(
          "step ", step, " reads '", name, "' (", role, ") before any step produces it"));
    }
    int& last = last_use_[RootOf(name)];
    last = std::max(last, step);
    return absl::OkStatus();
  }

  absl::Status ComputeLastUses() {
    for (size_t s = 0; s < schedule_.steps.size(); ++s) {
      const ScheduleStep& step = schedule_.steps[s];
      const int si = static_cast<int>(s);
      if (step.kind == ScheduleStep::Kind::kKernel) {
        for (const std::string& read : step.kernel.reads) {
          RETURN_IF_ERROR(NoteUse(read, si, "kernel read"));
        }
        for (const std::string& name : step.kernel.buffers) {
          int& last = last_use_[name];
          last = std::max(last, si);
        }
        continue;
      }
      for (const lowering::ExternArg& arg : buffers_.at(step.buffer)->extern_call->args) {
        if (!arg.buffer.empty()) RETURN_IF_ERROR(NoteUse(arg.buffer, si, "extern argument"));
        for (const std::string& b : arg.buffer_list) RETURN_IF_ERROR(NoteUse(b, si, "extern argument"));
      }
      for (const std::string& name : extern_outputs_.at(step.buffer)) {
        if (name.empty()) continue;
        int& last = last_use_[name];
        last = std::max(last, si);
      }
    }
    for (const std::string& out : graph_.outputs) {
      RETURN_IF_ERROR(Find(out, "graph output").status());
      if (ProducerOf(out) == kNever) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph output '", out, "' is not produced by any step"));
      }
      never_free_.insert(RootOf(out));
    }
    for (const auto& [name, producer] : producer_) {
      if (producer == kEntry) never_free_.insert(name);
    }
    return absl::OkStatus();
  }

  absl::Status EmitKernelDefinitions() {
    absl::flat_hash_set<std::string> names;
    for (const ScheduleStep& step : schedule_.steps) {
      if (step.kind != ScheduleStep::Kind::kKernel) continue;
      const FusedKernel& kernel = step.kernel;
      if (!names.insert(kernel.name).second) {
        return absl::InvalidArgumentError(absl::StrCat("kernel '", kernel.name, "' scheduled twice"));
      }
      if (SplitDevice(kernel.device).first != SplitDevice(codegen_.device()).first) {
        return absl::InvalidArgumentError(absl::StrCat("kernel '", kernel.name, "' is for device '",
                                                       kernel.device, "', the codegen for '",
                                                       codegen_.device(), "'"));
      }
      auto body = codegen_.KernelSource(graph_, kernel);
      if (!body.ok()) {
        return absl::Status(body.status().code(), absl::StrCat("kernel '", kernel.name, "': ",
                                                               body.status().message()));
      }
      program_.lines.push_back(KernelDefinitionLine{kernel.name, kernel.device, std::move(*body)});
    }
    return absl::OkStatus();
  }

  // Device guards come from the device's registered DeviceOpOverrides: a
  // device that needs none (the host) or has registered none gets no
  // Enter/ExitDeviceContextManagerLine. (A multi-index device must register
  // its overrides: devices/README.md says so.)
  void SwitchDevice(const std::string& device) {
    auto [type, index] = SplitDevice(device);
    auto known = guarded_types_.find(type);
    if (known == guarded_types_.end()) {
      absl::StatusOr<const DeviceOpOverrides*> ops = FindDeviceOpOverrides(type);
      known = guarded_types_.emplace(type, ops.ok() && (*ops)->NeedsDeviceGuard()).first;
    }
    const bool guarded = known->second;
    std::string wanted = guarded ? absl::StrCat(type, ":", index) : "";
    if (wanted == current_context_) return;
    if (!current_context_.empty()) program_.lines.push_back(ExitDeviceContextManagerLine{});
    if (!wanted.empty()) program_.lines.push_back(EnterDeviceContextManagerLine{type, index});
    current_context_ = wanted;
  }

  // Per step (kEntry included), in graph order: the views it makes
  // available and the storages it uses last. Graph order is topological, so
  // a view of a view follows its base.
  void IndexPerStepWork() {
    for (const Buffer& buffer : graph_.buffers) {
      if (buffer.kind == BufferKind::kView) {
        views_at_[ProducerOf(buffer.name)].push_back(&buffer);
        continue;
      }
      auto it = last_use_.find(buffer.name);
      if (it != last_use_.end() && !never_free_.contains(buffer.name)) {
        frees_at_[it->second].push_back(&buffer);
      }
    }
  }

  void EmitViewsProducedAt(int step) {
    auto it = views_at_.find(step);
    if (it == views_at_.end()) return;
    for (const Buffer* buffer : it->second) {
      program_.lines.push_back(ReinterpretLine{buffer->name, RootOf(buffer->name), buffer->layout});
      Mention(buffer->name);
      Mention(RootOf(buffer->name));  // a constant seen only through its views still needs defining
    }
  }

  void EmitOriginsComment(const std::vector<std::string>& buffers) {
    std::vector<std::string> origins;
    absl::flat_hash_set<std::string> seen;
    for (const std::string& name : buffers) {
      auto it = buffers_.find(name);
      if (it == buffers_.end()) continue;
      for (const std::string& origin : it->second->origins) {
        if (seen.insert(origin).second) origins.push_back(origin);
      }
    }
    if (!origins.empty()) {
      program_.lines.push_back(CommentLine{absl::StrCat("Source Nodes: [", absl::StrJoin(origins, ", "), "]")});
    }
  }

  absl::Status EmitStep(int s) {
    const ScheduleStep& step = schedule_.steps[static_cast<size_t>(s)];
    if (step.kind == ScheduleStep::Kind::kKernel) {
      const FusedKernel& kernel = step.kernel;
      SwitchDevice(kernel.device);
      EmitOriginsComment(kernel.buffers);
      for (const std::string& name : kernel.buffers) {
        program_.lines.push_back(AllocateLine{name, buffers_.at(name)->layout});
        Mention(name);
      }
      KernelCallLine call{kernel.name, kernel.device, {}};
      for (const std::string& read : kernel.reads) {
        call.args.push_back(read);
        Mention(read);
      }
      for (const std::string& name : kernel.buffers) call.args.push_back(name);
      program_.lines.push_back(std::move(call));
    } else {
      const Buffer& holder = *buffers_.at(step.buffer);
      const lowering::ExternCall& extern_call = *holder.extern_call;
      const std::vector<std::string>& outputs = extern_outputs_.at(step.buffer);
      SwitchDevice(holder.layout.device);
      EmitOriginsComment({holder.name});
      for (const lowering::ExternArg& arg : extern_call.args) {
        if (!arg.buffer.empty()) Mention(arg.buffer);
        for (const std::string& b : arg.buffer_list) Mention(b);
      }
      for (const std::string& name : outputs) {
        if (!name.empty()) Mention(name);
      }
      if (ExternUsesOutVariant(extern_call)) {
        program_.lines.push_back(AllocateLine{holder.name, holder.layout});
        program_.lines.push_back(ExternKernelLine{extern_call.op, extern_call.args, {holder.name}});
      } else {
        ExternKernelAllocLine line{extern_call.op, extern_call.args, outputs, {}};
        if (extern_call.island) {
          line.island = static_cast<int>(program_.islands.size());
          program_.islands.push_back(extern_call.island);
        }
        for (const std::string& name : outputs) {
          // An output no buffer names is dropped; its layout is unknown, so
          // the holder's stands in (backends only discard it).
          line.layouts.push_back(name.empty() ? holder.layout : buffers_.at(name)->layout);
        }
        program_.lines.push_back(std::move(line));
      }
    }
    EmitViewsProducedAt(s);
    // Frees after the step that used a storage last, in graph order.
    if (auto it = frees_at_.find(s); it != frees_at_.end()) {
      for (const Buffer* buffer : it->second) {
        program_.lines.push_back(FreeIfNotReusedLine{buffer->name});
      }
    }
    return absl::OkStatus();
  }

  void CloseDeviceContext() {
    if (!current_context_.empty()) program_.lines.push_back(ExitDeviceContextManagerLine{});
    current_context_.clear();
  }

  void Mention(const std::string& name) { mentioned_.insert(name); }

  void FillProgramHeader() {
    program_.inputs = graph_.inputs;
    program_.outputs = graph_.outputs;
    for (const std::string& name : graph_.inputs) Mention(name);
    for (const std::string& name : graph_.outputs) Mention(name);
    for (const Buffer& buffer : graph_.buffers) {
      if (!mentioned_.contains(buffer.name)) continue;
      program_.layouts.emplace_back(buffer.name, buffer.layout);
      if (buffer.kind == BufferKind::kConstant) {
        program_.constants.emplace_back(buffer.name, buffer.constant);
      }
    }
  }

  const LoopGraph& graph_;
  const Schedule& schedule_;
  DeviceCodegen& codegen_;
  WrapperProgram program_;
  absl::flat_hash_map<std::string, const Buffer*> buffers_;
  absl::flat_hash_map<std::string, int> producer_;    // storage owners only
  absl::flat_hash_map<std::string, std::string> root_;  // views -> storage owner
  absl::flat_hash_map<std::string, std::vector<std::string>> extern_outputs_;
  absl::flat_hash_map<std::string, int> last_use_;  // storage owner -> step
  absl::flat_hash_set<std::string> never_free_;
  absl::flat_hash_map<std::string, std::vector<const Buffer*>> secondary_outputs_;
  absl::flat_hash_map<int, std::vector<const Buffer*>> views_at_;
  absl::flat_hash_map<int, std::vector<const Buffer*>> frees_at_;
  absl::flat_hash_set<std::string> mentioned_;
  absl::flat_hash_map<std::string, bool> guarded_types_;  // device type -> needs guard lines
  std::string current_context_;
};

}  // namespace

absl::StatusOr<std::vector<ir::IValue>> CompiledProgram::RunValues(
    const std::vector<ir::IValue>& inputs) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].isTensor()) {
      return absl::InvalidArgumentError(
          absl::StrCat("compiled program: input ", i, " is not a tensor"));
    }
    tensors.push_back(inputs[i].toTensor());
  }
  ASSIGN_OR_RETURN(std::vector<Tensor> outs, Run(tensors));
  std::vector<ir::IValue> values;
  values.reserve(outs.size());
  for (Tensor& t : outs) values.push_back(ir::IValue::FromTensor(std::move(t)));
  return values;
}

absl::StatusOr<std::vector<DeviceBuffer>> CompiledProgram::RunOnDevice(const std::vector<DeviceRunInput>&,
                                                                       void*) {
  return absl::UnimplementedError(
      "this compiled program runs on host memory only (a CPU program or a whole-graph interpreter): it takes "
      "no device tensors");
}

bool ExternUsesOutVariant(const lowering::ExternCall& call) {
  if (call.num_outputs != 1) return false;
  // The op row's EXTERN column (ops/defs/*.def) says, through the registry.
  absl::string_view name = call.op;
  absl::ConsumeSuffix(&name, ".default");  // torch.export's spelling of the unnamed overload
  const ir::Operator* op = ir::BuiltinOps().Find(name);
  return op != nullptr && op->extern_form.out_variant;
}

absl::Status RegisterDeviceCodegen(const std::string& device, DeviceCodegenFactory factory) {
  if (device.empty() || !factory) {
    return absl::InvalidArgumentError("RegisterDeviceCodegen needs a device name and a factory");
  }
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  if (!registry.factories.emplace(device, std::move(factory)).second) {
    return absl::AlreadyExistsError(absl::StrCat("device codegen '", device, "' already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DeviceCodegen>> CreateDeviceCodegen(const std::string& device) {
  DeviceCodegenFactory factory;
  std::vector<std::string> known;
  {
    Registry& registry = GetRegistry();
    std::lock_guard<std::mutex> lock(registry.mu);
    auto it = registry.factories.find(device);
    if (it == registry.factories.end() && device.find(':') != std::string::npos) {
      // "cuda:1": the codegen of the type (its kernels carry the index).
      it = registry.factories.find(SplitDevice(device).first);
    }
    if (it != registry.factories.end()) {
      factory = it->second;
    } else {
      for (const auto& entry : registry.factories) known.push_back(entry.first);
    }
  }
  if (!factory) {
    return absl::NotFoundError(absl::StrCat("no device codegen registered for '", device,
                                            "' (registered: [", absl::StrJoin(known, ", "), "])"));
  }
  std::unique_ptr<DeviceCodegen> codegen = factory();
  if (codegen == nullptr) {
    return absl::InternalError(absl::StrCat("device codegen factory for '", device,
                                            "' returned null"));
  }
  return codegen;
}

absl::StatusOr<WrapperProgram> GenerateWrapper(const lowering::LoopGraph& graph,
                                               const lowering::Schedule& schedule,
                                               DeviceCodegen& codegen) {
  return WrapperBuilder(graph, schedule, codegen).Build();
}

}  // namespace kiln::wrapper
