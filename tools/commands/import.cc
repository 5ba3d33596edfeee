#include "tools/commands/import.h"

#include <memory>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "driver/model.h"
#include "ir/verifier.h"
#include "support/status.h"
#include "tools/common_flags.h"
#include "tools/file_io.h"
#include "tools/graph_io.h"

// The output graph format, shared with `kiln convert` (convert.cc).
ABSL_DECLARE_FLAG(std::string, to);

namespace kiln::tools {
namespace {

absl::Status RunImport(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(ExpectArgCount(args, 1, "import", "one model file (.onnx or .pt2)"));
  const std::string out = absl::GetFlag(FLAGS_o);
  if (out.empty()) {
    return absl::InvalidArgumentError(
        "import: missing -o OUT (.txt, .pb or .pbtxt; - --to=FORMAT for stdout)");
  }
  ASSIGN_OR_RETURN(const GraphFormat format, ChooseGraphFormat(out, absl::GetFlag(FLAGS_to)));
  ASSIGN_OR_RETURN(driver::ImportedModel model, driver::ImportModelFile(ResolveUserPath(args[0])));
  if (absl::Status verified = ir::Verify(*model.graph); !verified.ok()) {
    return absl::InternalError(absl::StrCat(args[0], ": the imported graph is invalid (a kiln bug): ",
                                            verified.message()));
  }
  return SaveGraph(*model.graph, out, format);
}

}  // namespace

Command ImportCommand() {
  Command command;
  command.name = "import";
  command.summary = "Import an ONNX model or a torch.export program (.pt2) into a kiln graph.";
  command.usage = "MODEL.onnx|MODEL.pt2 -o OUT [--to=text|pb|pbtxt]";
  command.details =
      "Each ONNX op becomes canonical kiln ops (aten::, kiln::); initializers become\n"
      "constants; each node's ONNX name becomes its scope. OUT's format comes from its\n"
      "extension (.txt, .pb, .pbtxt) unless --to says; -o - --to=text prints it.";
  command.flags = {"o", "to"};
  command.run = RunImport;
  return command;
}

}  // namespace kiln::tools
