#include "wrapper/debug_printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln::wrapper {
namespace {

// Kernel and buffer names from untrusted programs end up in file names.
std::string FileSafe(absl::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  return out.substr(0, 200);
}

bool Selected(const std::string& kernel, const DebugPrinterConfig& config) {
  if (config.kernel_filter.empty()) return true;
  const std::string lower = absl::AsciiStrToLower(kernel);
  const size_t sep = lower.find("::");
  const std::string bare = sep == std::string::npos ? lower : lower.substr(sep + 2);
  const std::string bare_no_overload = bare.substr(0, bare.find('.'));
  for (const std::string& wanted : config.kernel_filter) {
    if (wanted == lower || wanted == bare || wanted == bare_no_overload) return true;
  }
  return false;
}

void AddHooks(DebugPhase phase, const std::string& kernel, const std::vector<std::string>& args,
              const DebugPrinterConfig& config, std::vector<DebugHook>* hooks) {
  const std::string phase_name = DebugPhaseName(phase);
  if (config.level == DebugPrinterLevel::kPrintKernelNamesOnly) {
    DebugHook hook;
    hook.phase = phase;
    hook.action = DebugAction::kPrintKernelName;
    hook.kernel_name = kernel;
    hook.message = absl::StrCat("[ ", phase_name, ": ", kernel, " ]");
    hooks->push_back(std::move(hook));
    return;
  }
  for (const std::string& arg : args) {
    if (arg.empty()) continue;
    DebugHook hook;
    hook.phase = phase;
    hook.kernel_name = kernel;
    hook.arg = arg;
    hook.message = absl::StrCat("kiln: ", phase_name, " - ", kernel, " - ", arg);
    if (config.level == DebugPrinterLevel::kSaveOnly) {
      hook.action = DebugAction::kSaveTensor;
      hook.save_path = absl::StrCat(config.save_dir, "/", phase_name, "_", FileSafe(kernel), "_",
                                    FileSafe(arg), ".pt");
    } else {
      hook.action = DebugAction::kPrintTensorStats;
    }
    hooks->push_back(std::move(hook));
  }
}

std::vector<std::string> BufferArgs(const std::vector<lowering::ExternArg>& args) {
  std::vector<std::string> out;
  for (const auto& arg : args) {
    if (!arg.buffer.empty()) out.push_back(arg.buffer);
  }
  return out;
}

}  // namespace

const char* DebugPrinterLevelName(DebugPrinterLevel level) {
  switch (level) {
    case DebugPrinterLevel::kOff: return "OFF";
    case DebugPrinterLevel::kSaveOnly: return "SAVE_ONLY";
    case DebugPrinterLevel::kPrintOnly: return "PRINT_ONLY";
    case DebugPrinterLevel::kPrintKernelNamesOnly: return "PRINT_KERNEL_NAMES_ONLY";
  }
  return "OFF";
}

const char* DebugPhaseName(DebugPhase phase) {
  return phase == DebugPhase::kBeforeLaunch ? "before_launch" : "after_launch";
}

absl::StatusOr<DebugPrinterLevel> ParseDebugPrinterLevel(absl::string_view text) {
  const std::string t = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  if (t.empty() || t == "0" || t == "OFF") return DebugPrinterLevel::kOff;
  if (t == "1" || t == "SAVE_ONLY") return DebugPrinterLevel::kSaveOnly;
  if (t == "2" || t == "PRINT_ONLY") return DebugPrinterLevel::kPrintOnly;
  if (t == "3" || t == "PRINT_KERNEL_NAMES_ONLY") return DebugPrinterLevel::kPrintKernelNamesOnly;
  return absl::InvalidArgumentError(absl::StrCat(
      "debug printer level '", text,
      "': expected 0-3, OFF, SAVE_ONLY, PRINT_ONLY or PRINT_KERNEL_NAMES_ONLY"));
}

std::vector<std::string> ParseKernelFilter(absl::string_view text) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (!part.empty()) out.push_back(absl::AsciiStrToLower(part));
  }
  return out;
}

absl::StatusOr<DebugPrinterConfig> ResolveDebugPrinterConfig(const DebugPrinterOptions& options) {
  DebugPrinterConfig config;
  if (options.level.has_value()) {
    config.level = *options.level;
  } else if (const char* env = std::getenv(kDebugPrinterEnv)) {
    auto level = ParseDebugPrinterLevel(env);
    if (!level.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kDebugPrinterEnv, ": ", level.status().message()));
    }
    config.level = *level;
  }
  if (options.kernel_filter.has_value()) {
    config.kernel_filter = ParseKernelFilter(*options.kernel_filter);
  } else if (const char* env = std::getenv(kDebugPrinterFilterEnv)) {
    config.kernel_filter = ParseKernelFilter(env);
  }
  if (options.save_dir.has_value()) config.save_dir = *options.save_dir;
  return config;
}

std::vector<DebugHook> DebugHooksForLine(const Line& line, const DebugPrinterConfig& config) {
  std::vector<DebugHook> hooks;
  if (config.level == DebugPrinterLevel::kOff) return hooks;
  std::string kernel;
  std::vector<std::string> before, after;
  if (const auto* l = std::get_if<KernelCallLine>(&line)) {
    kernel = l->kernel_name;
    before = after = l->args;
  } else if (const auto* l = std::get_if<ExternKernelLine>(&line)) {
    kernel = l->op;
    before = BufferArgs(l->args);
    before.insert(before.end(), l->outputs.begin(), l->outputs.end());
    after = before;
  } else if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
    kernel = l->op;
    before = BufferArgs(l->args);
    after = l->outputs;
  } else {
    return hooks;
  }
  if (!Selected(kernel, config)) return hooks;
  AddHooks(DebugPhase::kBeforeLaunch, kernel, before, config, &hooks);
  AddHooks(DebugPhase::kAfterLaunch, kernel, after, config, &hooks);
  return hooks;
}

std::vector<LineDebugHooks> PlanDebugHooks(const WrapperProgram& program,
                                           const DebugPrinterConfig& config) {
  std::vector<LineDebugHooks> plan;
  for (size_t i = 0; i < program.lines.size(); ++i) {
    std::vector<DebugHook> hooks = DebugHooksForLine(program.lines[i], config);
    if (!hooks.empty()) plan.push_back(LineDebugHooks{i, std::move(hooks)});
  }
  return plan;
}

std::string TensorDebugSummary(const Tensor& tensor) {
  if (!tensor.defined()) return "undefined tensor";
  const int64_t numel = tensor.numel();
  std::string out = absl::StrCat("numel ", numel, ", size [", absl::StrJoin(tensor.sizes(), ", "),
                                 "], dtype ", DTypeName(tensor.dtype()));
  if (!tensor.has_data() || numel == 0 || IsComplex(tensor.dtype())) return out;
  double sum = 0, min = std::numeric_limits<double>::infinity(), max = -min;
  for (int64_t i = 0; i < numel; ++i) {
    const double v = tensor.GetDouble(i);
    sum += v;
    min = std::min(min, v);
    max = std::max(max, v);
  }
  const double mean = sum / static_cast<double>(numel);
  double squares = 0;
  for (int64_t i = 0; i < numel; ++i) {
    const double d = tensor.GetDouble(i) - mean;
    squares += d * d;
  }
  // torch.std: Bessel-corrected.
  const double std = numel > 1 ? std::sqrt(squares / static_cast<double>(numel - 1)) : 0.0;
  absl::StrAppend(&out, ", mean ", mean, ", min ", min, ", max ", max, ", std ", std);
  if (numel <= 64) {
    std::vector<std::string> values;
    for (int64_t i = 0; i < numel; ++i) values.push_back(absl::StrCat(tensor.GetDouble(i)));
    absl::StrAppend(&out, ", values [", absl::StrJoin(values, ", "), "]");
  }
  return out;
}

absl::Status RunDebugHook(const DebugHook& hook, const Tensor* tensor, std::string* out) {
  std::string text;
  switch (hook.action) {
    case DebugAction::kPrintKernelName:
      text = absl::StrCat(hook.message, "\n");
      break;
    case DebugAction::kPrintTensorStats:
      text = absl::StrCat(hook.message, ": ",
                          tensor == nullptr ? "not a tensor" : TensorDebugSummary(*tensor), "\n");
      break;
    case DebugAction::kSaveTensor: {
      if (tensor == nullptr || !tensor->defined() || !tensor->has_data()) {
        return absl::InvalidArgumentError(absl::StrCat(hook.message, ": no tensor data to save"));
      }
      const Tensor contiguous = tensor->Contiguous();
      std::ofstream file(hook.save_path, std::ios::binary | std::ios::trunc);
      if (!file) {
        return absl::UnavailableError(absl::StrCat("cannot write '", hook.save_path, "'"));
      }
      file << "kiln-tensor " << DTypeName(contiguous.dtype());
      for (int64_t size : contiguous.sizes()) file << ' ' << size;
      file << '\n';
      file.write(static_cast<const char*>(contiguous.raw_data()),
                 static_cast<std::streamsize>(contiguous.numel()) *
                     static_cast<std::streamsize>(contiguous.element_size()));
      if (!file) return absl::UnavailableError(absl::StrCat("writing '", hook.save_path, "' failed"));
      return absl::OkStatus();
    }
  }
  if (out != nullptr) {
    absl::StrAppend(out, text);
  } else {
    std::fputs(text.c_str(), stderr);
  }
  return absl::OkStatus();
}

}  // namespace kiln::wrapper
