#include "tools/commands/verify.h"

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "ir/verifier.h"
#include "tools/common_flags.h"
#include "tools/graph_io.h"

ABSL_FLAG(bool, check_schemas, true,
          "Also check every node against the registered operator schemas");

namespace kiln::tools {
namespace {

int RunVerify(const std::vector<std::string>& args) {
  if (!ExpectArgCount(args, 1, "verify", "one graph file")) return kExitUsageError;
  const absl::StatusOr<GraphFormat> format =
      ChooseGraphFormat(args[0], absl::GetFlag(FLAGS_format));
  if (!format.ok()) return ReportError(format.status());
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = LoadGraph(args[0], *format);
  if (!graph.ok()) return ReportError(graph.status());

  ir::VerifyOptions options;
  options.check_schemas = absl::GetFlag(FLAGS_check_schemas);
  const absl::Status verified = ir::Verify(**graph, options);
  if (!verified.ok()) {
    // The file was read fine but breaks an IR invariant: exit 1, not 2.
    ReportError(absl::StrCat(args[0], ": verification failed: ", verified.message()));
    return kExitFailure;
  }
  std::printf("ok\n");
  return kExitOk;
}

}  // namespace

Command VerifyCommand() {
  Command command;
  command.name = "verify";
  command.summary = "Parse a graph and check the IR invariants (the verifier).";
  command.usage = "FILE [--format=text|pb|pbtxt] [--nocheck_schemas]";
  command.details =
      "Prints `ok` and exits 0 when the graph is well formed; exits 1 with the\n"
      "verifier's message when it is not, and 2 when the file cannot be read or parsed.";
  command.flags = {"format", "check_schemas"};
  command.run = RunVerify;
  return command;
}

}  // namespace kiln::tools
