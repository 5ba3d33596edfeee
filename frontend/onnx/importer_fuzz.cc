// Untrusted model bytes through parsing, shape inference and conversion:
// every outcome must be a Status, and a graph that imports must verify.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/model_file.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::frontend::onnx_import;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The in-place path (model_file.h): every raw_data field of a byte or
  // more stripped and handed over as views; views always lie inside `bytes`.
  if (std::optional<StrippedModel> stripped = StripLargeRawData(bytes, 1)) {
    for (const std::optional<absl::string_view>& v : stripped->raw_data) {
      if (v && (v->data() < bytes.data() || v->data() + v->size() > bytes.data() + bytes.size())) __builtin_trap();
    }
    absl::StatusOr<onnx::ModelProto> m = ParseModel(stripped->bytes);
    if (m.ok()) {
      ImportOptions options;
      options.main_raw_data = stripped->raw_data;
      absl::StatusOr<std::unique_ptr<kiln::ir::Graph>> g = ImportModel(*m, options);
      if (g.ok() && !kiln::ir::Verify(**g).ok()) __builtin_trap();
    }
  }
  absl::StatusOr<onnx::ModelProto> model = ParseModel(bytes);
  if (!model.ok()) return 0;
  absl::StatusOr<std::unique_ptr<kiln::ir::Graph>> g = ImportModel(*model);
  if (!g.ok()) return 0;
  if (!kiln::ir::Verify(**g).ok()) __builtin_trap();
  return 0;
}
