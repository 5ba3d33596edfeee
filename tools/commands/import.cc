#include "tools/commands/import.h"

#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "driver/model.h"
#include "ir/verifier.h"
#include "tools/common_flags.h"
#include "tools/file_io.h"
#include "tools/graph_io.h"

namespace kiln::tools {
namespace {

int RunImport(const std::vector<std::string>& args) {
  if (!ExpectArgCount(args, 1, "import", "one model file (.onnx or .pt2)")) return kExitUsageError;
  const std::string out = absl::GetFlag(FLAGS_o);
  if (out.empty()) return ReportError("import: missing -o OUT (.txt, .pb or .pbtxt; - for stdout)");
  const absl::StatusOr<GraphFormat> format = ChooseGraphFormat(out, absl::GetFlag(FLAGS_format));
  if (!format.ok()) return ReportError(format.status());
  absl::StatusOr<driver::ImportedModel> model = driver::ImportModelFile(ResolveUserPath(args[0]));
  if (!model.ok()) return ReportError(model.status());
  std::unique_ptr<ir::Graph>& graph = model->graph;
  const absl::Status verified = ir::Verify(*graph);
  if (!verified.ok()) return ReportError(verified);
  const absl::Status saved = SaveGraph(*graph, out, *format);
  if (!saved.ok()) return ReportError(saved);
  return kExitOk;
}

}  // namespace

Command ImportCommand() {
  Command command;
  command.name = "import";
  command.summary = "Import an ONNX model or a torch.export program (.pt2) into a kiln graph.";
  command.usage = "MODEL.onnx|MODEL.pt2 -o OUT [--format=text|pb|pbtxt]";
  command.details =
      "Each ONNX op becomes canonical kiln ops (aten::, kiln::); initializers become\n"
      "constants. The output format comes from OUT's extension unless --format says.";
  command.flags = {"format", "o"};
  command.run = RunImport;
  return command;
}

}  // namespace kiln::tools
