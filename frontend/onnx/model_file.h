// ONNX model files parsed in place. A model is mostly its weights, the
// `raw_data` of its main graph's initializers; protobuf's parser copies every
// byte of them into strings that the importer copies once more into tensors.
// MapModelFile maps the file, parses a copy of its bytes without the large
// raw_data fields (a few hundred KB for a 500 MB model) and hands the
// importer views of those fields in the mapping instead.
#ifndef KILN_FRONTEND_ONNX_MODEL_FILE_H_
#define KILN_FRONTEND_ONNX_MODEL_FILE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"
#include "support/atomic_file.h"

namespace kiln::frontend::onnx_import {

// Main-graph initializers whose raw_data is at least this large are left in
// the file.
inline constexpr size_t kInPlaceRawDataBytes = size_t{1} << 16;

// `bytes` (a serialized ModelProto) without the raw_data fields of at least
// `min_bytes` of its main graph's initializers, and views of those fields'
// bytes in `bytes` by initializer position. nullopt when there are none, or
// when the bytes are not plain protobuf this walker follows (groups, a
// repeated graph or raw_data field, lengths past the end): the caller then
// parses `bytes` whole, which reports corrupt input as it always did.
struct StrippedModel {
  std::string bytes;
  std::vector<std::optional<absl::string_view>> raw_data;
};
std::optional<StrippedModel> StripLargeRawData(absl::string_view bytes, size_t min_bytes);

// A model file's ModelProto whose large initializers' raw_data stay in the
// mapped file: `model`'s copies of them are empty and `raw_data[i]`, when
// set, holds initializer i's bytes (ImportOptions::main_raw_data). Errors
// name the path, as LoadModelFile's.
struct MappedModel {
  MappedFile file;
  onnx::ModelProto model;
  std::vector<std::optional<absl::string_view>> raw_data;  // views into `file`
};
absl::StatusOr<MappedModel> MapModelFile(const std::string& path);

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_FRONTEND_ONNX_MODEL_FILE_H_
