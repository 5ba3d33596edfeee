// Loading and saving graphs in the three file formats kiln reads and writes:
// TorchScript text (.txt), binary GraphProto (.pb) and text GraphProto
// (.pbtxt).
#ifndef KILN_TOOLS_GRAPH_IO_H_
#define KILN_TOOLS_GRAPH_IO_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "ir/ir.h"

namespace kiln::tools {

enum class GraphFormat { kText, kBinaryProto, kTextProto };

// "text", "pb", "pbtxt" (the --format / --to spellings).
absl::string_view GraphFormatName(GraphFormat format);
absl::StatusOr<GraphFormat> ParseGraphFormat(absl::string_view name);

// The format named by `flag_value` if it is not empty, else the one implied
// by `path`'s extension. "-" (stdin/stdout) without a flag means text.
absl::StatusOr<GraphFormat> ChooseGraphFormat(absl::string_view path, absl::string_view flag_value);

absl::StatusOr<std::unique_ptr<ir::Graph>> DecodeGraph(absl::string_view contents,
                                                       GraphFormat format);
absl::StatusOr<std::string> EncodeGraph(const ir::Graph& graph, GraphFormat format);

struct LoadTimes {
  absl::Duration read;
  absl::Duration decode;
};

// Reads and decodes `path`. Error messages start with the path as given, then
// the decoder's position when it has one: "model.txt:12:7: expected ...".
// `times`, when given, receives the time spent reading and decoding.
absl::StatusOr<std::unique_ptr<ir::Graph>> LoadGraph(absl::string_view path, GraphFormat format,
                                                     LoadTimes* times = nullptr);
// Encodes and writes `path` atomically ("-" is stdout).
absl::Status SaveGraph(const ir::Graph& graph, absl::string_view path, GraphFormat format);

// Values defined anywhere in the graph: graph and block inputs, node outputs.
size_t CountValues(const ir::Graph& graph);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_GRAPH_IO_H_
