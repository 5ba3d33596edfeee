#include "tools/graph_io.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "ir/proto/proto_convert.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "support/status.h"
#include "tools/file_io.h"

namespace kiln::tools {
namespace {

// Consumes a leading "line L, column C: " or "L:C: " from `message`.
bool ConsumePosition(absl::string_view* message, int* line, int* column) {
  absl::string_view rest = *message;
  auto consume_number = [&rest](int* out) {
    size_t digits = 0;
    while (digits < rest.size() && digits < 9 && absl::ascii_isdigit(rest[digits])) ++digits;
    if (digits == 0) return false;
    *out = 0;
    for (size_t i = 0; i < digits; ++i) *out = *out * 10 + (rest[i] - '0');
    rest.remove_prefix(digits);
    return true;
  };
  const bool worded = absl::ConsumePrefix(&rest, "line ");
  if (!consume_number(line)) return false;
  if (!absl::ConsumePrefix(&rest, worded ? ", column " : ":")) return false;
  if (!consume_number(column)) return false;
  if (!absl::ConsumePrefix(&rest, ": ")) return false;
  *message = rest;
  return true;
}

// The decoder's message with the path in front, in the usual compiler form:
// "line 12, column 7: expected x" (the text parser's spelling) and
// "12:7: expected x" both become "model.txt:12:7: expected x"; messages
// without a position become "model.txt: message".
absl::Status WithPath(const absl::Status& status, absl::string_view path) {
  absl::string_view message = status.message();
  int line = 0;
  int column = 0;
  if (ConsumePosition(&message, &line, &column)) {
    return absl::Status(status.code(), absl::StrCat(path, ":", line, ":", column, ": ", message));
  }
  return absl::Status(status.code(), absl::StrCat(path, ": ", message));
}

}  // namespace

absl::string_view GraphFormatName(GraphFormat format) {
  switch (format) {
    case GraphFormat::kText:
      return "text";
    case GraphFormat::kBinaryProto:
      return "pb";
    case GraphFormat::kTextProto:
      return "pbtxt";
  }
  return "?";
}

absl::StatusOr<GraphFormat> ParseGraphFormat(absl::string_view name) {
  if (name == "text" || name == "txt") return GraphFormat::kText;
  if (name == "pb") return GraphFormat::kBinaryProto;
  if (name == "pbtxt") return GraphFormat::kTextProto;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown graph format '", name, "' (expected text, pb or pbtxt)"));
}

absl::StatusOr<GraphFormat> ChooseGraphFormat(absl::string_view path,
                                              absl::string_view flag_value) {
  if (!flag_value.empty()) return ParseGraphFormat(flag_value);
  if (path == "-") return GraphFormat::kText;
  // .pbtxt before .txt: both end in "txt".
  if (absl::EndsWith(path, ".pbtxt")) return GraphFormat::kTextProto;
  if (absl::EndsWith(path, ".pb")) return GraphFormat::kBinaryProto;
  if (absl::EndsWith(path, ".txt")) return GraphFormat::kText;
  return absl::InvalidArgumentError(
      absl::StrCat(path,
                   ": cannot tell the graph format from the file name (expected .txt, .pb or "
                   ".pbtxt); use --format / --to = text, pb or pbtxt"));
}

absl::StatusOr<std::unique_ptr<ir::Graph>> DecodeGraph(absl::string_view contents,
                                                       GraphFormat format) {
  switch (format) {
    case GraphFormat::kText:
      return ir::ParseGraph(contents);
    case GraphFormat::kBinaryProto:
      return ir::DeserializeGraph(contents);
    case GraphFormat::kTextProto:
      return ir::GraphFromTextProto(contents);
  }
  return absl::InternalError("unhandled graph format");
}

absl::StatusOr<std::string> EncodeGraph(const ir::Graph& graph, GraphFormat format) {
  switch (format) {
    case GraphFormat::kText:
      return ir::PrintGraph(graph);
    case GraphFormat::kBinaryProto:
      return ir::SerializeGraph(graph);
    case GraphFormat::kTextProto:
      return ir::GraphToTextProto(graph);
  }
  return absl::InternalError("unhandled graph format");
}

absl::StatusOr<std::unique_ptr<ir::Graph>> LoadGraph(absl::string_view path, GraphFormat format,
                                                     LoadTimes* times) {
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  const absl::Time read = absl::Now();
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = DecodeGraph(contents, format);
  if (times != nullptr) {
    times->read = read - start;
    times->decode = absl::Now() - read;
  }
  if (!graph.ok()) return WithPath(graph.status(), path == "-" ? "<stdin>" : path);
  return graph;
}

absl::Status SaveGraph(const ir::Graph& graph, absl::string_view path, GraphFormat format) {
  absl::StatusOr<std::string> encoded = EncodeGraph(graph, format);
  if (!encoded.ok()) return WithPath(encoded.status(), path == "-" ? "<stdout>" : path);
  return WriteFileAtomically(path, *encoded);
}

size_t CountValues(const ir::Graph& graph) {
  size_t count = 0;
  // An explicit stack: block nesting comes from the input file.
  std::vector<const ir::Block*> pending = {graph.block()};
  while (!pending.empty()) {
    const ir::Block* block = pending.back();
    pending.pop_back();
    count += block->inputs().size();
    for (const ir::Node* node : block->nodes()) {
      count += node->outputs().size();
      for (const ir::Block* sub : node->blocks()) pending.push_back(sub);
    }
  }
  return count;
}

}  // namespace kiln::tools
