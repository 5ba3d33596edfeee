#include "tools/commands/print.h"

#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "ir/text_printer.h"
#include "tools/common_flags.h"
#include "tools/file_io.h"
#include "support/status.h"
#include "tools/graph_io.h"

ABSL_FLAG(bool, source_locations, true, "Print the `# file:line:col` source location comments");

namespace kiln::tools {
namespace {

absl::Status RunPrint(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(ExpectArgCount(args, 1, "print", "one graph file"));
  ASSIGN_OR_RETURN(const GraphFormat format, ChooseGraphFormat(args[0], absl::GetFlag(FLAGS_format)));
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadGraph(args[0], format));

  ir::PrintOptions options;
  options.source_locations = absl::GetFlag(FLAGS_source_locations);
  std::string text;
  ir::PrintGraphTo(*graph, &text, options);
  std::string out = absl::GetFlag(FLAGS_o);
  if (out.empty()) out = "-";
  return WriteFileAtomically(out, text);
}

}  // namespace

Command PrintCommand() {
  Command command;
  command.name = "print";
  command.summary =
      "Print a graph as canonical TorchScript text (what PyTorch's str(graph) prints).";
  command.usage = "FILE [-o OUT] [--format=text|pb|pbtxt] [--nosource_locations]";
  command.details = "Writes to stdout unless -o is given (OUT is replaced atomically).";
  command.flags = {"format", "o", "source_locations"};
  command.run = RunPrint;
  return command;
}

}  // namespace kiln::tools
