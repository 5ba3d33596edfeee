// onnx::TensorProto <-> kiln Tensor, and ONNX element types <-> DType.
// Everything here treats the proto as untrusted: sizes are checked against
// the data actually present before anything is allocated.
#ifndef KILN_FRONTEND_ONNX_TENSOR_PROTO_H_
#define KILN_FRONTEND_ONNX_TENSOR_PROTO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "onnx/onnx_pb.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::frontend::onnx_import {

// The kiln dtype of an ONNX TensorProto.DataType code; Unimplemented for
// types kiln cannot hold (string, complex128, float8...), naming the type.
absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type);
// ONNX's name for an element type code ("FLOAT", "INT64", ...).
std::string OnnxTypeName(int32_t elem_type);
// The ONNX code of a kiln dtype.
int32_t OnnxTypeFromDType(DType dtype);

// A contiguous CPU tensor with the proto's dims and data (raw_data or the
// typed fields). External data and segments are Unimplemented.
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto);
// The same with `raw_data` standing for the proto's raw_data field (the
// bytes of a tensor parsed in place: model_file.h).
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, absl::string_view raw_data);
// TensorFromProto of each proto (`raw_data[i]`, when set, standing for
// protos[i]'s raw_data), in order. When their bytes add up to a large
// model's weights, they are copied on several threads, largest first: the
// copy into fresh pages was the import's whole time.
std::vector<absl::StatusOr<Tensor>> TensorsFromProtos(
    absl::Span<const onnx::TensorProto* const> protos,
    absl::Span<const std::optional<absl::string_view>> raw_data);
// The inverse (raw_data form), for writing test data.
onnx::TensorProto TensorToProto(const Tensor& t, absl::string_view name = "");

// Reads a serialized TensorProto file (the backend-test input_K.pb layout).
absl::StatusOr<Tensor> ReadTensorFile(const std::string& path);

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_FRONTEND_ONNX_TENSOR_PROTO_H_
