#include "wrapper/validate.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "support/status.h"
#include "wrapper/layout_math.h"

namespace kiln::wrapper {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

// Simulates the lines: which names exist, which storage they use, and which
// storages are still live.
class Checker {
 public:
  explicit Checker(const WrapperProgram& program) : program_(program) {}

  absl::Status CheckIsland(int island) {
    if (island < -1 || island >= static_cast<int>(program_.islands.size()) ||
        (island >= 0 && program_.islands[static_cast<size_t>(island)] == nullptr)) {
      return Error(absl::StrCat("island index ", island, " out of range"));
    }
    return absl::OkStatus();
  }

  absl::Status Run() {
    RETURN_IF_ERROR(CheckLayouts());
    RETURN_IF_ERROR(CheckEntryBuffers());
    for (size_t i = 0; i < program_.lines.size(); ++i) {
      line_ = i;
      RETURN_IF_ERROR(CheckLine(program_.lines[i]));
    }
    if (context_depth_ != 0) {
      return absl::InvalidArgumentError("device context opened but never exited");
    }
    for (const std::string& out : program_.outputs) {
      if (!IsLive(out)) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph output '", out, "' is not live at the end of the program"));
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "line ", line_, " (", LineKindName(program_.lines[line_]), "): ", what));
  }

  absl::Status CheckLayouts() {
    for (const auto& [name, layout] : program_.layouts) {
      if (!IsIdentifier(name)) {
        return absl::InvalidArgumentError(absl::StrCat("layout entry names '", name,
                                                       "', not an identifier"));
      }
      if (!layouts_.emplace(name, &layout).second) {
        return absl::InvalidArgumentError(absl::StrCat("buffer '", name, "' has two layouts"));
      }
      RETURN_IF_ERROR(ValidateLayout(layout, absl::StrCat("buffer '", name, "'")));
    }
    for (const std::string& out : program_.outputs) protected_.insert(out);
    return absl::OkStatus();
  }

  absl::Status CheckEntryBuffers() {
    for (const std::string& in : program_.inputs) {
      if (!layouts_.contains(in)) {
        return absl::InvalidArgumentError(absl::StrCat("graph input '", in, "' has no layout"));
      }
      if (!root_.emplace(in, in).second) {
        return absl::InvalidArgumentError(absl::StrCat("graph input '", in, "' listed twice"));
      }
      live_.insert(in);
      protected_.insert(in);
      inputs_.insert(in);
    }
    for (const auto& [name, tensor] : program_.constants) {
      auto it = layouts_.find(name);
      if (it == layouts_.end()) {
        return absl::InvalidArgumentError(absl::StrCat("constant '", name, "' has no layout"));
      }
      if (!tensor.defined() || !tensor.has_data() || tensor.dtype() != it->second->dtype ||
          tensor.sizes() != it->second->sizes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "constant '", name, "' has no data or does not match its layout"));
      }
      if (!root_.emplace(name, name).second) {
        return absl::InvalidArgumentError(absl::StrCat("constant '", name, "' defined twice"));
      }
      live_.insert(name);
      protected_.insert(name);
    }
    return absl::OkStatus();
  }

  bool IsLive(const std::string& name) const {
    auto it = root_.find(name);
    return it != root_.end() && live_.contains(it->second);
  }

  absl::Status Use(const std::string& name) {
    if (!root_.contains(name)) return Error(absl::StrCat("'", name, "' used before definition"));
    if (!IsLive(name)) return Error(absl::StrCat("'", name, "' used after its storage was freed"));
    return absl::OkStatus();
  }

  // A new name; `storage_root` empty means it owns new storage.
  absl::Status Define(const std::string& name, const std::string& storage_root) {
    if (!IsIdentifier(name)) return Error(absl::StrCat("'", name, "' is not an identifier"));
    if (!layouts_.contains(name)) return Error(absl::StrCat("'", name, "' has no layout entry"));
    const std::string root = storage_root.empty() ? name : root_.at(storage_root);
    if (!root_.emplace(name, root).second) {
      return Error(absl::StrCat("'", name, "' defined twice"));
    }
    if (storage_root.empty()) live_.insert(name);
    return absl::OkStatus();
  }

  absl::Status Free(const std::string& name, bool reusable) {
    RETURN_IF_ERROR(Use(name));
    if (protected_.contains(name) && (reusable || !IsInput(name))) {
      return Error(absl::StrCat("'", name, "' is a graph input, output or constant"));
    }
    if (root_.at(name) != name) return Error(absl::StrCat("'", name, "' is a view"));
    live_.erase(name);
    return absl::OkStatus();
  }

  bool IsInput(const std::string& name) const { return inputs_.contains(name); }

  absl::Status CheckExternArgs(const std::vector<lowering::ExternArg>& args) {
    for (const lowering::ExternArg& arg : args) {
      if (!arg.buffer.empty()) RETURN_IF_ERROR(Use(arg.buffer));
      for (const std::string& b : arg.buffer_list) RETURN_IF_ERROR(Use(b));  // Tensor[]
    }
    return absl::OkStatus();
  }

  absl::Status CheckLine(const Line& line) {
    if (const auto* l = std::get_if<AllocateLine>(&line)) {
      RETURN_IF_ERROR(ValidateLayout(l->layout, l->buffer));
      return Define(l->buffer, "");
    }
    if (const auto* l = std::get_if<FreeIfNotReusedLine>(&line)) {
      if (l->is_reused) {
        // The storage lives on under the ReuseLine's new name, which already
        // took it over.
        if (!root_.contains(l->buffer)) return Error(absl::StrCat("unknown '", l->buffer, "'"));
        return absl::OkStatus();
      }
      return Free(l->buffer, /*reusable=*/true);
    }
    if (const auto* l = std::get_if<ReuseLine>(&line)) {
      RETURN_IF_ERROR(ValidateLayout(l->layout, l->new_buffer));
      RETURN_IF_ERROR(Use(l->old_buffer));
      if (protected_.contains(l->old_buffer)) {
        return Error(absl::StrCat("'", l->old_buffer, "' is a graph input, output or constant"));
      }
      if (root_.at(l->old_buffer) != l->old_buffer) {
        return Error(absl::StrCat("'", l->old_buffer, "' is a view"));
      }
      if (StorageBytesOrZero(l->layout) > StorageBytesOrZero(*layouts_.at(l->old_buffer))) {
        return Error(absl::StrCat("'", l->new_buffer, "' needs more storage than '",
                                  l->old_buffer, "' has"));
      }
      RETURN_IF_ERROR(Define(l->new_buffer, ""));
      // Storage moves to the new name (the old one's views die with it).
      live_.erase(l->old_buffer);
      return absl::OkStatus();
    }
    if (const auto* l = std::get_if<FreeLine>(&line)) return Free(l->buffer, /*reusable=*/false);
    if (const auto* l = std::get_if<ReinterpretLine>(&line)) {
      RETURN_IF_ERROR(ValidateLayout(l->layout, l->buffer));
      RETURN_IF_ERROR(Use(l->base));
      return Define(l->buffer, l->base);
    }
    if (const auto* l = std::get_if<KernelDefinitionLine>(&line)) {
      if (!IsIdentifier(l->kernel_name)) {
        return Error(absl::StrCat("kernel name '", l->kernel_name, "' is not an identifier"));
      }
      if (l->device.empty()) return Error("empty device");
      if (!kernels_.insert(l->kernel_name).second) {
        return Error(absl::StrCat("kernel '", l->kernel_name, "' defined twice"));
      }
      return absl::OkStatus();
    }
    if (const auto* l = std::get_if<KernelCallLine>(&line)) {
      if (!kernels_.contains(l->kernel_name)) {
        return Error(absl::StrCat("kernel '", l->kernel_name, "' called before its definition"));
      }
      for (const std::string& arg : l->args) RETURN_IF_ERROR(Use(arg));
      return absl::OkStatus();
    }
    if (const auto* l = std::get_if<ExternKernelLine>(&line)) {
      if (!IsQualifiedOpName(l->op)) return Error(absl::StrCat("bad op name '", l->op, "'"));
      RETURN_IF_ERROR(CheckExternArgs(l->args));
      if (l->outputs.empty()) return Error("no outputs");
      RETURN_IF_ERROR(CheckIsland(l->island));
      for (const std::string& out : l->outputs) RETURN_IF_ERROR(Use(out));
      return absl::OkStatus();
    }
    if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
      if (!IsQualifiedOpName(l->op)) return Error(absl::StrCat("bad op name '", l->op, "'"));
      RETURN_IF_ERROR(CheckExternArgs(l->args));
      if (l->outputs.empty()) return Error("no outputs");
      if (l->layouts.size() != l->outputs.size()) return Error("one layout per output expected");
      RETURN_IF_ERROR(CheckIsland(l->island));
      for (size_t i = 0; i < l->outputs.size(); ++i) {
        RETURN_IF_ERROR(ValidateLayout(l->layouts[i], absl::StrCat("output ", i)));
        if (!l->outputs[i].empty()) RETURN_IF_ERROR(Define(l->outputs[i], ""));
      }
      return absl::OkStatus();
    }
    if (const auto* l = std::get_if<MultiOutputLine>(&line)) {
      RETURN_IF_ERROR(Use(l->source));
      if (l->indices.empty() || l->indices.size() > kMaxMultiOutputIndices) {
        return Error("1 to 16 indices expected");
      }
      for (int64_t index : l->indices) {
        if (index < 0) return Error("negative index");
      }
      return Define(l->result, l->source);
    }
    if (const auto* l = std::get_if<EnterDeviceContextManagerLine>(&line)) {
      if (!IsIdentifier(l->device) || l->device_index < 0) return Error("bad device");
      if (++context_depth_ > kMaxDeviceContextDepth) return Error("device contexts nest too deep");
      return absl::OkStatus();
    }
    if (std::holds_alternative<ExitDeviceContextManagerLine>(line)) {
      if (--context_depth_ < 0) return Error("exit without a matching enter");
      return absl::OkStatus();
    }
    return absl::OkStatus();  // CommentLine, NullLine
  }

  const WrapperProgram& program_;
  size_t line_ = 0;
  absl::flat_hash_map<std::string, const Layout*> layouts_;
  absl::flat_hash_map<std::string, std::string> root_;  // name -> storage owner
  absl::flat_hash_set<std::string> live_;                // live storage owners
  absl::flat_hash_set<std::string> protected_;           // inputs, outputs, constants
  absl::flat_hash_set<std::string> kernels_;
  absl::flat_hash_set<std::string> inputs_;
  int context_depth_ = 0;
};

}  // namespace

bool IsIdentifier(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength || !IsIdentStart(name[0])) return false;
  for (char c : name) {
    if (!IsIdentChar(c)) return false;
  }
  return true;
}

bool IsQualifiedOpName(absl::string_view op) {
  const size_t sep = op.find("::");
  if (sep == absl::string_view::npos || op.size() > kMaxNameLength) return false;
  if (!IsIdentifier(op.substr(0, sep))) return false;
  absl::string_view rest = op.substr(sep + 2);
  const size_t dot = rest.find('.');
  if (dot == absl::string_view::npos) return IsIdentifier(rest);
  return IsIdentifier(rest.substr(0, dot)) && IsIdentifier(rest.substr(dot + 1));
}

absl::Status ValidateWrapperProgram(const WrapperProgram& program) {
  return Checker(program).Run();
}

}  // namespace kiln::wrapper
