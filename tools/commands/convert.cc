#include "tools/commands/convert.h"

#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "tools/common_flags.h"
#include "support/status.h"
#include "tools/graph_io.h"

ABSL_FLAG(std::string, to, "",
          "Output graph format: text, pb or pbtxt. Empty: from the -o file extension");

namespace kiln::tools {
namespace {

absl::Status RunConvert(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(ExpectArgCount(args, 1, "convert", "one input graph file"));
  const std::string out = absl::GetFlag(FLAGS_o);
  if (out.empty()) {
    return absl::InvalidArgumentError("convert: missing -o OUT (use -o - --to=FORMAT for stdout)");
  }
  ASSIGN_OR_RETURN(const GraphFormat in_format,
                   ChooseGraphFormat(args[0], absl::GetFlag(FLAGS_format)));
  ASSIGN_OR_RETURN(const GraphFormat out_format, ChooseGraphFormat(out, absl::GetFlag(FLAGS_to)));
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadGraph(args[0], in_format));
  return SaveGraph(*graph, out, out_format);
}

}  // namespace

Command ConvertCommand() {
  Command command;
  command.name = "convert";
  command.summary = "Convert a graph between TorchScript text, binary proto and text proto.";
  command.usage = "IN -o OUT [--format=text|pb|pbtxt] [--to=text|pb|pbtxt]";
  command.details =
      "Formats come from the file extensions (.txt, .pb, .pbtxt) unless --format\n"
      "(input) or --to (output) says otherwise. OUT is replaced atomically.";
  command.flags = {"format", "o", "to"};
  command.run = RunConvert;
  return command;
}

}  // namespace kiln::tools
