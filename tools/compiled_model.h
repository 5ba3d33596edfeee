// ONNX file -> imported, optimized, compiled program: the path `kiln compile`
// and `kiln run --backend=compiled` share.
#ifndef KILN_TOOLS_COMPILED_MODEL_H_
#define KILN_TOOLS_COMPILED_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "onnx/onnx_pb.h"
#include "driver/compile_graph.h"

namespace kiln::tools {

struct CompiledModel {
  onnx::ModelProto model;
  std::unique_ptr<ir::Graph> graph;
  driver::CompiledGraph compiled;
  double import_ms = 0;
  double passes_ms = 0;
};

// Registers the reference kernels and the CPU backend, imports `path`, runs
// `pipeline` and compiles for the CPU.
absl::StatusOr<CompiledModel> CompileModelFile(const std::string& path, const std::string& pipeline);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMPILED_MODEL_H_
