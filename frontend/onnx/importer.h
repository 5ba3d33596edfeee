// ONNX model import: onnx::ModelProto -> kiln IR graph of canonical ops.
//
// Graph inputs are the model's inputs that no initializer provides, in
// order; initializers become tensor constants; graph outputs are the model's
// outputs, in order. Each node runs the converter registered for its op type,
// domain and opset (frontend/onnx/converter.h). ONNX shape inference runs
// first (on a copy) so converters know ranks and dtypes, and value types in
// the graph carry what it found.
#ifndef KILN_FRONTEND_ONNX_IMPORTER_H_
#define KILN_FRONTEND_ONNX_IMPORTER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/ir.h"
#include "onnx/onnx_pb.h"

namespace kiln::frontend::onnx_import {

class ConverterRegistry;

struct ImportOptions {
  // Run ONNX's shape inference before converting (ranks and dtypes for
  // converters that need them).
  bool shape_inference = true;
  // The converters to use; null means DefaultConverters().
  const ConverterRegistry* converters = nullptr;
  // Types each node the converters emit from its inputs' types (kiln's own
  // shape functions, e.g. passes::InferNodeTypes), so that a converter
  // needing a rank ONNX's inference left unknown can still find it. The
  // frontend cannot reach passes/ itself: the driver hands it in. Null: no
  // typing beyond ONNX's inference.
  std::function<absl::Status(ir::Node&)> infer_node_types;
  // The raw_data of the main graph's initializers parsed in place, by
  // position (model_file.h: MapModelFile); unset entries, and positions
  // past the end, read the proto's own field.
  std::vector<std::optional<absl::string_view>> main_raw_data;
};

// Parses a serialized ModelProto; InvalidArgument for corrupt or truncated
// bytes.
absl::StatusOr<onnx::ModelProto> ParseModel(absl::string_view bytes);
absl::StatusOr<onnx::ModelProto> LoadModelFile(const std::string& path);

absl::StatusOr<std::unique_ptr<ir::Graph>> ImportModel(const onnx::ModelProto& model,
                                                       const ImportOptions& options = {});

// The model's graph inputs as ImportModel orders them (initializer-backed
// inputs dropped): the positions test data and callers feed.
std::vector<const onnx::ValueInfoProto*> RuntimeInputs(const onnx::ModelProto& model);

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_FRONTEND_ONNX_IMPORTER_H_
