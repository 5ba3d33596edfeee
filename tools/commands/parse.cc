#include "tools/commands/parse.h"

#include <cstdio>
#include <memory>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "tools/common_flags.h"
#include "support/status.h"
#include "tools/graph_io.h"

namespace kiln::tools {
namespace {

absl::Status RunParse(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(ExpectArgCount(args, 1, "parse", "one graph file"));
  ASSIGN_OR_RETURN(const GraphFormat format, ChooseGraphFormat(args[0], absl::GetFlag(FLAGS_format)));
  LoadTimes times;
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadGraph(args[0], format, &times));
  absl::PrintF("ok: %d nodes, %d values (%s; read %.3f ms, parse %.3f ms)\n", graph->numNodes(),
               CountValues(*graph), GraphFormatName(format),
               absl::ToDoubleMilliseconds(times.read), absl::ToDoubleMilliseconds(times.decode));
  return absl::OkStatus();
}

}  // namespace

Command ParseCommand() {
  Command command;
  command.name = "parse";
  command.summary = "Parse a graph file; report its node and value counts and the parse time.";
  command.usage = "FILE [--format=text|pb|pbtxt]";
  command.details =
      "Prints `ok: N nodes, M values (...)` on success. N counts nodes in all\n"
      "blocks; M counts graph/block inputs and node outputs. FILE '-' is stdin.";
  command.flags = {"format"};
  command.run = RunParse;
  return command;
}

}  // namespace kiln::tools
