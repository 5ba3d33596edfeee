#include "tools/commands/conformance.h"

#include <cstdio>
#include <optional>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "support/status.h"
#include "testing/onnx_conformance.h"
#include "tools/common_flags.h"
#include "tools/file_io.h"
#include "tools/json_output.h"
#include "tools/terminal.h"

ABSL_FLAG(std::string, root, "", "Directory of ONNX backend tests (<test>/model.onnx ...)");
ABSL_FLAG(std::string, filter, "", "Regex: run only the tests whose name matches");
ABSL_FLAG(std::string, backend, "interpreter", "Execution backend: interpreter or compiled");
ABSL_FLAG(std::string, report, "", "Write the per-test report (PASS/FAIL with reasons) here");
ABSL_FLAG(std::string, pipeline, "-O2", "Passes run before execution (preset or pipeline)");

namespace kiln::tools {
namespace {

Json SummaryJson(const testing::ConformanceOptions& options,
                 const testing::ConformanceSummary& summary) {
  Json doc = JsonDocument("conformance");
  doc["root"] = options.root;
  doc["filter"] = options.filter;
  doc["backend"] = options.backend;
  if (options.backend == "compiled") doc["device"] = options.device;
  doc["pipeline"] = options.pipeline;
  doc["rtol"] = options.rtol;
  doc["atol"] = options.atol;
  doc["passed"] = summary.passed;
  doc["failed"] = summary.failed;
  doc["random_passed"] = summary.random_passed;
  doc["random_failed"] = summary.random_failed;
  doc["passed_with_islands"] = summary.passed_with_islands;
  doc["passed_whole_graph_island"] = summary.passed_whole_graph_island;
  Json tests = Json::array();
  for (const testing::ConformanceResult& r : summary.results) {
    Json t = {{"name", r.name},
              {"passed", r.passed},
              {"random", r.random},
              {"seconds", r.seconds},
              {"islands", r.islands},
              {"island_nodes", r.island_nodes},
              {"whole_graph_island", r.whole_graph_island}};
    if (!r.passed) t["reason"] = r.reason;
    tests.push_back(std::move(t));
  }
  doc["tests"] = std::move(tests);
  return doc;
}

absl::Status RunConformanceCommand(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(ExpectArgCount(args, 0, "conformance", "no positional arguments"));
  testing::ConformanceOptions options;
  options.root = ResolveUserPath(absl::GetFlag(FLAGS_root));
  if (options.root.empty()) return absl::InvalidArgumentError("conformance: missing --root DIR");
  options.filter = absl::GetFlag(FLAGS_filter);
  options.backend = absl::GetFlag(FLAGS_backend);
  options.pipeline = absl::GetFlag(FLAGS_pipeline);
  options.device = absl::GetFlag(FLAGS_device);
  ASSIGN_OR_RETURN(const testing::Tolerance tolerance, ToleranceFromFlags(kConformanceAtol));
  options.rtol = tolerance.rtol;
  options.atol = tolerance.atol;
  const bool json = absl::GetFlag(FLAGS_json);
  std::optional<Progress> progress;
  options.on_test_start = [&progress](int index, int total, const std::string& name) {
    if (!progress.has_value()) progress.emplace("conformance", total);
    progress->Update(index, name);
  };
  absl::StatusOr<testing::ConformanceSummary> summary = testing::RunConformance(options);
  progress.reset();  // clears the line
  if (!summary.ok()) return absl::Status(summary.status().code(), absl::StrCat("conformance: ", summary.status().message()));
  if (summary->results.empty()) {
    // CI must not pass a run that tested nothing (a typo in --filter).
    return absl::InvalidArgumentError(absl::StrCat(
        "conformance: no test under ", options.root,
        options.filter.empty() ? "" : absl::StrCat(" matches --filter '", options.filter, "'"),
        " (a test is a directory holding model.onnx)"));
  }
  const std::string report_path = absl::GetFlag(FLAGS_report);
  if (!report_path.empty()) RETURN_IF_ERROR(WriteFileAtomically(report_path, summary->Report()));
  if (json) {
    RETURN_IF_ERROR(PrintJson(SummaryJson(options, *summary)));
  } else {
    for (const testing::ConformanceResult& r : summary->results) {
      if (!r.passed) {
        std::printf("FAIL %s: %s\n", Printable(r.name).c_str(), Printable(r.reason).c_str());
      }
    }
    std::printf("%s\n", summary->Line().c_str());
  }
  if (summary->failed > 0) {
    return InputRejected(absl::StrCat("conformance: ", summary->failed, " of ",
                                      summary->results.size(), " tests failed"));
  }
  return absl::OkStatus();
}

}  // namespace

Command ConformanceCommand() {
  Command command;
  command.name = "conformance";
  command.summary = "Run backend tests (ONNX or .pt2 models): import, -O2, execute, compare.";
  command.usage =
      "--root DIR [--filter REGEX] [--backend interpreter|compiled] [--device cpu|cuda]\n"
      "           [--report FILE] [--rtol R] [--atol A] [--json]";
  command.details =
      "A test is DIR/<test>/model.onnx, or each DIR/<test>/<name>.pt2, with\n"
      "<test>/test_data_set_N/{input,output}_K.pb.\n"
      "Compares every output with |actual - expected| <= atol + rtol * |expected|\n"
      "(default rtol 1e-3, atol 1e-7: ONNX's runner's tolerance; NaN matches NaN).\n"
      "Prints each failure with its reason and 'N passed, M failed'; exits 1 when\n"
      "any test fails, 2 when no test matches --filter or --device names no\n"
      "registered device (cpu; cuda). Random-output tests are checked by shape,\n"
      "dtype and range. Progress goes to stderr when it is a terminal.";
  command.flags = {"root", "filter", "backend", "device", "report", "pipeline", "rtol", "atol", "json"};
  command.run = RunConformanceCommand;
  return command;
}

}  // namespace kiln::tools
