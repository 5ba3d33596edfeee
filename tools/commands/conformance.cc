#include "tools/commands/conformance.h"

#include <cstdio>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "testing/onnx_conformance.h"
#include "tools/file_io.h"

ABSL_FLAG(std::string, root, "", "Directory of ONNX backend tests (<test>/model.onnx ...)");
ABSL_FLAG(std::string, filter, "", "Regex: run only the tests whose name matches");
ABSL_FLAG(std::string, backend, "interpreter", "Execution backend: interpreter or compiled");
ABSL_FLAG(std::string, report, "", "Write the per-test report (PASS/FAIL with reasons) here");
ABSL_FLAG(std::string, pipeline, "-O2", "Passes run before execution (preset or pipeline)");
ABSL_FLAG(double, rtol, 1e-3, "Relative tolerance of the output comparison");
ABSL_FLAG(double, atol, 1e-7, "Absolute tolerance of the output comparison (real models: 1e-5)");
// Shared with `kiln compile` (defined in compile.cc): the compiled backend's
// device, a registered codegen (cpu; cuda where the binary registered it).
ABSL_DECLARE_FLAG(std::string, device);

namespace kiln::tools {
namespace {

int RunConformanceCommand(const std::vector<std::string>& args) {
  if (!ExpectArgCount(args, 0, "conformance", "no positional arguments")) return kExitUsageError;
  testing::ConformanceOptions options;
  options.root = ResolveUserPath(absl::GetFlag(FLAGS_root));
  if (options.root.empty()) return ReportError("conformance: missing --root DIR");
  options.filter = absl::GetFlag(FLAGS_filter);
  options.backend = absl::GetFlag(FLAGS_backend);
  options.pipeline = absl::GetFlag(FLAGS_pipeline);
  options.device = absl::GetFlag(FLAGS_device);
  options.rtol = absl::GetFlag(FLAGS_rtol);
  options.atol = absl::GetFlag(FLAGS_atol);
  if (!(options.rtol >= 0) || !(options.atol >= 0)) {
    return ReportError("conformance: --rtol and --atol must be non-negative numbers");
  }
  absl::StatusOr<testing::ConformanceSummary> summary = testing::RunConformance(options);
  if (!summary.ok()) return ReportError(summary.status());
  const std::string report = summary->Report();
  const std::string report_path = absl::GetFlag(FLAGS_report);
  if (!report_path.empty()) {
    const absl::Status written = WriteFileAtomically(report_path, report);
    if (!written.ok()) return ReportError(written);
  }
  for (const testing::ConformanceResult& r : summary->results) {
    if (!r.passed) std::printf("FAIL %s: %s\n", r.name.c_str(), r.reason.c_str());
  }
  std::printf("%s\n", summary->Line().c_str());
  return summary->failed == 0 ? kExitOk : kExitFailure;
}

}  // namespace

Command ConformanceCommand() {
  Command command;
  command.name = "conformance";
  command.summary = "Run ONNX backend tests: import, -O2, execute, compare.";
  command.usage = "--root DIR [--filter REGEX] [--backend interpreter|compiled] [--device cpu|cuda] [--report FILE] [--rtol R] [--atol A]";
  command.details =
      "Compares every output with rtol 1e-3, atol 1e-7 (ONNX's runner's tolerance;\n"
      "--rtol/--atol change them).\n"
      "Prints each failure with its reason and 'N passed, M failed'; exits 1 when\n"
      "any test fails. Random-output tests are checked by shape, dtype and range.";
  command.flags = {"root", "filter", "backend", "device", "report", "pipeline", "rtol", "atol"};
  command.run = RunConformanceCommand;
  return command;
}

}  // namespace kiln::tools
