// ResolveProgram (cuda_program.h): Wrapper IR lines -> numbered slots and
// steps, validated once so that a run does no name lookups.
#include <map>
#include <set>
#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/cuda_program.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

namespace w = wrapper;
using lowering::Layout;

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

absl::Status Error(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("cuda program: ", what));
}

class Resolver {
 public:
  explicit Resolver(const w::WrapperProgram& program) : program_(program) {}

  absl::StatusOr<ResolvedProgram> Run() {
    for (const auto& [name, layout] : program_.layouts) RETURN_IF_ERROR(Declare(name, layout));
    for (const std::string& in : program_.inputs) {
      ASSIGN_OR_RETURN(int slot, Existing(in));
      out_.input_slots.push_back(slot);
    }
    for (const auto& [name, tensor] : program_.constants) {
      ASSIGN_OR_RETURN(int slot, Existing(name));
      if (!tensor.has_data()) return Error(absl::StrCat("constant '", name, "' has no data"));
      const Layout& l = out_.slot_layouts[static_cast<size_t>(slot)];
      if (tensor.dtype() != l.dtype || tensor.sizes() != l.sizes) {
        return Error(absl::StrCat("constant '", name, "' does not match its layout ", l.ToString()));
      }
      out_.constants.emplace_back(slot, tensor);
    }
    for (const w::Line& line : program_.lines) RETURN_IF_ERROR(Resolve(line));
    for (const std::string& o : program_.outputs) {
      ASSIGN_OR_RETURN(int slot, Existing(o));
      out_.output_slots.push_back(slot);
    }
    return std::move(out_);
  }

 private:
  absl::Status Declare(const std::string& name, const Layout& layout) {
    if (layout.sizes.size() != layout.strides.size() || layout.StorageElements() < 0 || layout.offset < 0) {
      return Error(absl::StrCat("buffer '", name, "' has a malformed layout"));
    }
    auto it = slots_.find(name);
    if (it != slots_.end()) {
      if (!(out_.slot_layouts[static_cast<size_t>(it->second)] == layout)) {
        return Error(absl::StrCat("buffer '", name, "' has two layouts"));
      }
      return absl::OkStatus();
    }
    slots_.emplace(name, static_cast<int>(out_.slot_names.size()));
    out_.slot_names.push_back(name);
    out_.slot_layouts.push_back(layout);
    return absl::OkStatus();
  }

  absl::StatusOr<int> Existing(const std::string& name) const {
    auto it = slots_.find(name);
    if (it == slots_.end()) return Error(absl::StrCat("buffer '", name, "' has no layout"));
    return it->second;
  }

  // A fresh slot for an extern output that no buffer names.
  int Anonymous(const Layout& layout) {
    const int slot = static_cast<int>(out_.slot_names.size());
    out_.slot_names.push_back(absl::StrCat("<dropped output ", slot, ">"));
    out_.slot_layouts.push_back(layout);
    return slot;
  }

  static int64_t Bytes(const Layout& l) { return std::max<int64_t>(l.StorageBytes(), 1); }

  absl::Status Extern(const std::string& op, const std::vector<lowering::ExternArg>& args,
                      const std::vector<std::string>& outputs, const std::vector<Layout>* layouts, int island) {
    ExternStep e;
    e.op = op;
    e.args = args;
    if (island >= 0) {
      if (static_cast<size_t>(island) >= program_.islands.size() || !program_.islands[island]) {
        return Error(absl::StrCat("extern line names island ", island, ", which does not exist"));
      }
      e.island = program_.islands[static_cast<size_t>(island)];
    }
    for (const lowering::ExternArg& a : args) {
      std::vector<std::string> names = a.buffer_list;
      if (!a.buffer.empty()) names = {a.buffer};
      for (const std::string& n : names) {
        ASSIGN_OR_RETURN(int slot, Existing(n));
        e.buffer_slots.push_back(slot);
      }
    }
    if (layouts != nullptr && layouts->size() != outputs.size()) {
      return Error(absl::StrCat("extern ", op, ": ", outputs.size(), " outputs but ", layouts->size(), " layouts"));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      int slot = -1;
      if (layouts != nullptr) {
        if (outputs[i].empty()) {
          slot = Anonymous((*layouts)[i]);
        } else {
          RETURN_IF_ERROR(Declare(outputs[i], (*layouts)[i]));
          ASSIGN_OR_RETURN(slot, Existing(outputs[i]));
        }
        e.alloc_bytes.push_back(Bytes((*layouts)[i]));
      } else {
        ASSIGN_OR_RETURN(slot, Existing(outputs[i]));
      }
      e.output_slots.push_back(slot);
    }
    ProgramStep step;
    step.kind = ProgramStep::Kind::kExtern;
    step.index = static_cast<int>(out_.externs.size());
    out_.externs.push_back(std::move(e));
    out_.steps.push_back(std::move(step));
    return absl::OkStatus();
  }

  absl::Status Alias(const std::string& dst, const std::string& src, bool release_src, bool only_if_empty,
                     bool view) {
    ProgramStep step;
    step.kind = ProgramStep::Kind::kAlias;
    step.view = view;
    ASSIGN_OR_RETURN(step.dst, Existing(dst));
    ASSIGN_OR_RETURN(step.src, Existing(src));
    step.release_src = release_src;
    step.only_if_empty = only_if_empty;
    out_.steps.push_back(std::move(step));
    return absl::OkStatus();
  }

  absl::Status Release(const std::string& name) {
    ProgramStep step;
    step.kind = ProgramStep::Kind::kRelease;
    ASSIGN_OR_RETURN(step.dst, Existing(name));
    out_.steps.push_back(std::move(step));
    return absl::OkStatus();
  }

  absl::Status Resolve(const w::Line& line) {
    return std::visit(
        Overloaded{
            [&](const w::AllocateLine& l) -> absl::Status {
              RETURN_IF_ERROR(Declare(l.buffer, l.layout));
              ProgramStep step;
              step.kind = ProgramStep::Kind::kAllocate;
              ASSIGN_OR_RETURN(step.dst, Existing(l.buffer));
              step.bytes = Bytes(l.layout);
              out_.steps.push_back(std::move(step));
              return absl::OkStatus();
            },
            [&](const w::FreeIfNotReusedLine& l) -> absl::Status {
              return l.is_reused ? absl::OkStatus() : Release(l.buffer);
            },
            [&](const w::ReuseLine& l) -> absl::Status {
              RETURN_IF_ERROR(Declare(l.new_buffer, l.layout));
              return Alias(l.new_buffer, l.old_buffer, l.delete_old, false, false);
            },
            [&](const w::FreeLine& l) -> absl::Status { return Release(l.buffer); },
            [&](const w::ReinterpretLine& l) -> absl::Status {
              RETURN_IF_ERROR(Declare(l.buffer, l.layout));
              return Alias(l.buffer, l.base, false, false, true);
            },
            [&](const w::KernelDefinitionLine& l) -> absl::Status {
              if (!kernels_.emplace(l.kernel_name, static_cast<int>(out_.kernel_names.size())).second) {
                return Error(absl::StrCat("kernel '", l.kernel_name, "' is defined twice"));
              }
              out_.kernel_names.push_back(l.kernel_name);
              return absl::OkStatus();
            },
            [&](const w::KernelCallLine& l) -> absl::Status {
              auto it = kernels_.find(l.kernel_name);
              if (it == kernels_.end()) return Error(absl::StrCat("call of undefined kernel '", l.kernel_name, "'"));
              ProgramStep step;
              step.kind = ProgramStep::Kind::kLaunch;
              step.index = it->second;
              for (const std::string& a : l.args) {
                ASSIGN_OR_RETURN(int slot, Existing(a));
                step.args.push_back(slot);
              }
              out_.steps.push_back(std::move(step));
              return absl::OkStatus();
            },
            [&](const w::ExternKernelLine& l) -> absl::Status {
              return Extern(l.op, l.args, l.outputs, nullptr, l.island);
            },
            [&](const w::ExternKernelAllocLine& l) -> absl::Status {
              return Extern(l.op, l.args, l.outputs, &l.layouts, l.island);
            },
            [&](const w::MultiOutputLine& l) -> absl::Status {
              if (l.result == l.source) return absl::OkStatus();
              return Alias(l.result, l.source, false, true, true);
            },
            [&](const w::CommentLine&) -> absl::Status { return absl::OkStatus(); },
            [&](const w::EnterDeviceContextManagerLine& l) -> absl::Status {
              ProgramStep step;
              step.kind = ProgramStep::Kind::kSetDevice;
              step.index = l.device_index;
              out_.steps.push_back(std::move(step));
              return absl::OkStatus();
            },
            [&](const w::ExitDeviceContextManagerLine&) -> absl::Status { return absl::OkStatus(); },
            [&](const w::NullLine&) -> absl::Status { return absl::OkStatus(); },
        },
        line);
  }

  const w::WrapperProgram& program_;
  ResolvedProgram out_;
  std::map<std::string, int> slots_;
  std::map<std::string, int> kernels_;
};

}  // namespace

absl::StatusOr<ResolvedProgram> ResolveProgram(const wrapper::WrapperProgram& program, ChannelsLastMode channels_last) {
  if (program.interpreted_graph) return Error("a whole-graph island has no lines to resolve");
  ASSIGN_OR_RETURN(ResolvedProgram resolved, Resolver(program).Run());
  ChannelsLastPlan plan = PlanChannelsLast(resolved, channels_last);
  resolved.channels_last_slots = plan.slots;
  resolved.boundary_transposes = plan.input_transposes + plan.output_transposes;
  resolved.channels_last_skipped = plan.skipped;
  return resolved;
}

absl::StatusOr<ResolvedProgram> ResolveProgram(const wrapper::WrapperProgram& program) {
  return ResolveProgram(program, ChannelsLastSetting());
}

}  // namespace kiln::backends::cuda
