#include "tools/commands/import.h"

#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "driver/model.h"
#include "frontend/onnx/importer.h"
#include "ir/verifier.h"
#include "tools/common_flags.h"
#include "tools/file_io.h"
#include "tools/graph_io.h"

namespace kiln::tools {
namespace {

int RunImport(const std::vector<std::string>& args) {
  if (!ExpectArgCount(args, 1, "import", "one ONNX model file")) return kExitUsageError;
  const std::string out = absl::GetFlag(FLAGS_o);
  if (out.empty()) return ReportError("import: missing -o OUT (.txt, .pb or .pbtxt; - for stdout)");
  const absl::StatusOr<GraphFormat> format = ChooseGraphFormat(out, absl::GetFlag(FLAGS_format));
  if (!format.ok()) return ReportError(format.status());
  absl::StatusOr<onnx::ModelProto> model = frontend::onnx_import::LoadModelFile(ResolveUserPath(args[0]));
  if (!model.ok()) return ReportError(model.status());
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = driver::ImportOnnxModel(*model);
  if (!graph.ok()) return ReportError(graph.status());
  const absl::Status verified = ir::Verify(**graph);
  if (!verified.ok()) return ReportError(verified);
  const absl::Status saved = SaveGraph(**graph, out, *format);
  if (!saved.ok()) return ReportError(saved);
  return kExitOk;
}

}  // namespace

Command ImportCommand() {
  Command command;
  command.name = "import";
  command.summary = "Import an ONNX model into a kiln graph.";
  command.usage = "MODEL.onnx -o OUT [--format=text|pb|pbtxt]";
  command.details =
      "Each ONNX op becomes canonical kiln ops (aten::, kiln::); initializers become\n"
      "constants. The output format comes from OUT's extension unless --format says.";
  command.flags = {"format", "o"};
  command.run = RunImport;
  return command;
}

}  // namespace kiln::tools
