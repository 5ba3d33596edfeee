#include "wrapper/wrapper_ir.h"

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wrapper/layout_math.h"

namespace kiln::wrapper {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

std::string ExternArgsToString(const std::vector<lowering::ExternArg>& args) {
  std::vector<std::string> parts;
  parts.reserve(args.size());
  for (const lowering::ExternArg& arg : args) {
    if (!arg.buffer.empty()) {
      parts.push_back(arg.buffer);
    } else if (arg.constant.has_value()) {
      parts.push_back(arg.constant->DebugString());
    } else {
      parts.push_back("None");
    }
  }
  return absl::StrJoin(parts, ", ");
}

std::string NamesOrUnderscore(const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  parts.reserve(names.size());
  for (const std::string& name : names) parts.push_back(name.empty() ? "_" : name);
  return absl::StrJoin(parts, ", ");
}

// Bodies are multi-line source: dumps show their size, not their text.
std::string BodySummary(const std::string& body) {
  int64_t lines = body.empty() ? 0 : 1;
  for (char c : body) lines += c == '\n';
  return absl::StrCat("<", body.size(), " bytes, ", lines, " lines>");
}

// Comments are single-line in every dump.
std::string OneLine(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

const char* LineKindName(const Line& line) {
  return std::visit(
      Overloaded{
          [](const AllocateLine&) { return "AllocateLine"; },
          [](const FreeIfNotReusedLine&) { return "FreeIfNotReusedLine"; },
          [](const ReuseLine&) { return "ReuseLine"; },
          [](const FreeLine&) { return "FreeLine"; },
          [](const ReinterpretLine&) { return "ReinterpretLine"; },
          [](const KernelDefinitionLine&) { return "KernelDefinitionLine"; },
          [](const KernelCallLine&) { return "KernelCallLine"; },
          [](const ExternKernelLine&) { return "ExternKernelLine"; },
          [](const ExternKernelAllocLine&) { return "ExternKernelAllocLine"; },
          [](const MultiOutputLine&) { return "MultiOutputLine"; },
          [](const CommentLine&) { return "CommentLine"; },
          [](const EnterDeviceContextManagerLine&) { return "EnterDeviceContextManagerLine"; },
          [](const ExitDeviceContextManagerLine&) { return "ExitDeviceContextManagerLine"; },
          [](const NullLine&) { return "NullLine"; },
      },
      line);
}

std::string LineToString(const Line& line) {
  const std::string kind = LineKindName(line);
  return std::visit(
      Overloaded{
          [&](const AllocateLine& l) {
            return absl::StrCat(kind, " ", l.buffer, " ", FormatLayout(l.layout));
          },
          [&](const FreeIfNotReusedLine& l) {
            return absl::StrCat(kind, " ", l.buffer, l.is_reused ? " (reused)" : "");
          },
          [&](const ReuseLine& l) {
            return absl::StrCat(kind, " ", l.new_buffer, " <- ", l.old_buffer, " ",
                                FormatLayout(l.layout), l.delete_old ? "" : " (keep old)");
          },
          [&](const FreeLine& l) { return absl::StrCat(kind, " ", l.buffer); },
          [&](const ReinterpretLine& l) {
            return absl::StrCat(kind, " ", l.buffer, " = view of ", l.base, " ",
                                FormatLayout(l.layout));
          },
          [&](const KernelDefinitionLine& l) {
            return absl::StrCat(kind, " ", l.kernel_name, " ", l.device, " ",
                                BodySummary(l.kernel_body));
          },
          [&](const KernelCallLine& l) {
            return absl::StrCat(kind, " ", l.kernel_name, "(", absl::StrJoin(l.args, ", "), ") ",
                                l.device);
          },
          [&](const ExternKernelLine& l) {
            return absl::StrCat(kind, " ", l.op, "(", ExternArgsToString(l.args), ", out=[",
                                absl::StrJoin(l.outputs, ", "), "])");
          },
          [&](const ExternKernelAllocLine& l) {
            std::vector<std::string> layouts;
            for (const Layout& layout : l.layouts) layouts.push_back(FormatLayout(layout));
            return absl::StrCat(kind, " ", NamesOrUnderscore(l.outputs), " = ", l.op,
                                l.island >= 0 ? absl::StrCat("[island_", l.island, "]") : "",
                                "(", ExternArgsToString(l.args), ") : ",
                                absl::StrJoin(layouts, "; "));
          },
          [&](const MultiOutputLine& l) {
            std::string out = absl::StrCat(kind, " ", l.result, " = ", l.source);
            for (int64_t index : l.indices) absl::StrAppend(&out, "[", index, "]");
            return out;
          },
          [&](const CommentLine& l) { return absl::StrCat(kind, " # ", OneLine(l.text)); },
          [&](const EnterDeviceContextManagerLine& l) {
            return absl::StrCat(kind, " ", l.device, ":", l.device_index);
          },
          [&](const ExitDeviceContextManagerLine&) { return kind; },
          [&](const NullLine&) { return kind; },
      },
      line);
}

std::string WrapperProgram::ToString() const {
  std::string out = absl::StrCat("inputs: [", absl::StrJoin(inputs, ", "), "]\n");
  absl::StrAppend(&out, "outputs: [", absl::StrJoin(outputs, ", "), "]\n");
  for (const auto& [name, tensor] : constants) {
    absl::StrAppend(&out, "constant ", name, " ", DTypeName(tensor.dtype()), "[",
                    absl::StrJoin(tensor.sizes(), ", "), "]\n");
  }
  for (const Line& line : lines) absl::StrAppend(&out, LineToString(line), "\n");
  return out;
}

}  // namespace kiln::wrapper
