// Untrusted model bytes through parsing, shape inference and conversion:
// every outcome must be a Status, and a graph that imports must verify.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "frontend/onnx/importer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::frontend::onnx_import;
  absl::StatusOr<onnx::ModelProto> model =
      ParseModel(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!model.ok()) return 0;
  absl::StatusOr<std::unique_ptr<kiln::ir::Graph>> g = ImportModel(*model);
  if (!g.ok()) return 0;
  if (!kiln::ir::Verify(**g).ok()) __builtin_trap();
  return 0;
}
