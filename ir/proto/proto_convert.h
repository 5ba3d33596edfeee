// Conversion between ir::Graph and its protobuf form (ir/proto/ir.proto).
//
// Round trips are lossless: kinds, names (numeric ones included), types,
// attributes (doubles bit-exact, tensor bytes), source locations, scopes and
// block structure come back identical, and unnamed values keep their printed
// numbers. Tensor constants come back contiguous (their values, not their
// strides, are what the IR means).
//
// The loaders treat their input as untrusted: every id, index, kind, dtype,
// size and nesting depth is checked, errors are absl::InvalidArgumentError
// naming the offending node (block path, index and kind) and what was
// expected, and no input crashes them. Control-flow invariants of prim::If /
// prim::Loop are the verifier's business, not the loader's.
#ifndef KILN_IR_PROTO_PROTO_CONVERT_H_
#define KILN_IR_PROTO_PROTO_CONVERT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/ir.h"
#include "ir/proto/ir.pb.h"

namespace kiln::ir {

// The schema version written by ToProto. FromProto accepts 1..kFormatVersion.
inline constexpr int32_t kProtoFormatVersion = 1;

// Limits applied by the loaders (and by the savers, so that what they write
// can always be read back).
inline constexpr int kMaxProtoBlockDepth = 200;  // nested blocks
inline constexpr int kMaxProtoTypeDepth = 100;   // nested contained types

// Fills `out` (cleared first). Fails only for graphs the loader would reject:
// nesting deeper than the limits above, a value without a type, or a tensor
// type with strides but not one size per stride.
absl::Status ToProto(const Graph& graph, proto::GraphProto* out);
absl::StatusOr<proto::GraphProto> ToProto(const Graph& graph);

absl::StatusOr<std::unique_ptr<Graph>> FromProto(const proto::GraphProto& proto);

// Binary wire format.
absl::StatusOr<std::string> SerializeGraph(const Graph& graph);
absl::StatusOr<std::unique_ptr<Graph>> DeserializeGraph(absl::string_view bytes);

// Protobuf text format (google::protobuf::TextFormat), for goldens and eyes.
absl::StatusOr<std::string> GraphToTextProto(const Graph& graph);
absl::StatusOr<std::unique_ptr<Graph>> GraphFromTextProto(absl::string_view text);

}  // namespace kiln::ir

#endif  // KILN_IR_PROTO_PROTO_CONVERT_H_
