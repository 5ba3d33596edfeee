// Inductor's intermediate-value debug printer (debug_utils.py), as a plan
// that every wrapper backend honours the same way.
//
//   level                    before / after each selected kernel launch
//   OFF                      nothing
//   SAVE_ONLY                save every tensor argument to
//                            <save_dir>/{before|after}_launch_<kernel>_<arg>.pt
//   PRINT_ONLY               print every tensor argument's stats
//                            (TensorDebugSummary: numel, sizes, mean, min,
//                            max, std, and the values when numel <= 64)
//   PRINT_KERNEL_NAMES_ONLY  print "[ before_launch: <kernel> ]"
//
// Set by DebugPrinterOptions, or by the environment: KILN_DEBUG_PRINTER
// (0-3 or the level's name) and KILN_DEBUG_PRINTER_FILTER (comma-separated
// kernel names, case-insensitive; empty means all kernels). An explicit
// option wins over the environment.
//
// Backends ask PlanDebugHooks for the hooks of each line and emit them
// around the launch: the Python printer as `torch.save(...)` /
// `_print_debugging_tensor_value_info(...)` / `print(...)` calls, the CPU
// C++ wrapper as calls to the host callbacks below (DebugHookRunner), so the
// generated code needs no kiln headers beyond a function pointer.
#ifndef KILN_WRAPPER_DEBUG_PRINTER_H_
#define KILN_WRAPPER_DEBUG_PRINTER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "support/tensor.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::wrapper {

enum class DebugPrinterLevel : int {
  kOff = 0,
  kSaveOnly = 1,
  kPrintOnly = 2,
  kPrintKernelNamesOnly = 3,
};
const char* DebugPrinterLevelName(DebugPrinterLevel level);  // "OFF", "SAVE_ONLY", ...
// "0".."3" or a level name (case-insensitive); "" is OFF.
absl::StatusOr<DebugPrinterLevel> ParseDebugPrinterLevel(absl::string_view text);

inline constexpr char kDebugPrinterEnv[] = "KILN_DEBUG_PRINTER";
inline constexpr char kDebugPrinterFilterEnv[] = "KILN_DEBUG_PRINTER_FILTER";

struct DebugPrinterConfig {
  DebugPrinterLevel level = DebugPrinterLevel::kOff;
  // Lower-cased kernel names; empty: every kernel. Extern kernels match by
  // their op (`aten::mm`) or its bare name (`mm`).
  std::vector<std::string> kernel_filter;
  std::string save_dir = "tmp/kiln_debug";
};

struct DebugPrinterOptions {
  std::optional<DebugPrinterLevel> level;        // unset: the environment decides
  std::optional<std::string> kernel_filter;      // comma-separated; unset: environment
  std::optional<std::string> save_dir;
};

// Options first, then KILN_DEBUG_PRINTER / KILN_DEBUG_PRINTER_FILTER. A bad
// environment value is an error naming the variable.
absl::StatusOr<DebugPrinterConfig> ResolveDebugPrinterConfig(const DebugPrinterOptions& options = {});
// Splits "a, B,,c" into {"a", "b", "c"}.
std::vector<std::string> ParseKernelFilter(absl::string_view text);

enum class DebugPhase { kBeforeLaunch, kAfterLaunch };
enum class DebugAction { kSaveTensor, kPrintTensorStats, kPrintKernelName };
const char* DebugPhaseName(DebugPhase phase);  // "before_launch", "after_launch"

struct DebugHook {
  DebugPhase phase = DebugPhase::kBeforeLaunch;
  DebugAction action = DebugAction::kPrintKernelName;
  std::string kernel_name;  // the kernel or the extern op
  std::string arg;          // the buffer (empty for kPrintKernelName)
  std::string save_path;    // kSaveTensor only
  // The text to print ("[ before_launch: k ]", or the stats header
  // "kiln: before_launch - k - buf0") so that every backend prints the same.
  std::string message;
};

// Hooks of one launch line (KernelCallLine, ExternKernelLine,
// ExternKernelAllocLine); none for other lines, filtered-out kernels, or
// OFF. Before-launch hooks come first. After-launch hooks of an allocating
// extern see its outputs, not its inputs.
std::vector<DebugHook> DebugHooksForLine(const Line& line, const DebugPrinterConfig& config);

struct LineDebugHooks {
  size_t line_index = 0;
  std::vector<DebugHook> hooks;
};
// Every line that gets hooks, in line order.
std::vector<LineDebugHooks> PlanDebugHooks(const WrapperProgram& program,
                                           const DebugPrinterConfig& config);

// What PRINT_ONLY prints for a tensor (Inductor's
// _print_debugging_tensor_value_info): numel, sizes, and for numeric
// tensors with data mean/min/max/std, plus the values when numel <= 64.
std::string TensorDebugSummary(const Tensor& tensor);

// Runs hooks against live tensors: what a C++ wrapper calls (through a
// callback) at each hook. Printing goes to `out` (stderr when null). Saving
// writes kiln's debug tensor dump: a text header line
// "kiln-tensor <dtype> <sizes...>" then the contiguous raw bytes.
absl::Status RunDebugHook(const DebugHook& hook, const Tensor* tensor, std::string* out = nullptr);

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_DEBUG_PRINTER_H_
