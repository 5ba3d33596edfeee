// Binary and text encodings of GraphProto (the conversions themselves are in
// proto_save.cc and proto_load.cc).
#include "ir/proto/proto_convert.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "support/status.h"

namespace kiln::ir {
namespace {

// Message nesting of the deepest legal graph: graph > block > (node > block)
// per level > node > attribute > list > tensor, with slack.
constexpr int kParseRecursionLimit = 2 * kMaxProtoBlockDepth + 16;

// Arena-allocated messages: a graph proto is many small messages, freed at
// once.
google::protobuf::ArenaOptions ArenaOptionsFor(size_t expected_bytes) {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = std::max<size_t>(1 << 20, expected_bytes / 8);
  return options;
}

class CollectFirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (error_.empty()) error_ = absl::StrCat(line + 1, ":", column + 1, ": ", message);
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace

absl::StatusOr<std::string> SerializeGraph(const Graph& graph) {
  google::protobuf::Arena arena(ArenaOptionsFor(graph.numNodes() * 64));
  auto* proto = google::protobuf::Arena::CreateMessage<proto::GraphProto>(&arena);
  RETURN_IF_ERROR(ToProto(graph, proto));
  std::string out;
  if (!proto->SerializeToString(&out)) {
    return absl::ResourceExhaustedError(
        "graph proto exceeds protobuf's 2 GiB message size limit");
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Graph>> DeserializeGraph(absl::string_view bytes) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError("graph proto larger than 2 GiB");
  }
  google::protobuf::Arena arena(ArenaOptionsFor(bytes.size()));
  auto* proto = google::protobuf::Arena::CreateMessage<proto::GraphProto>(&arena);
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(kParseRecursionLimit);
  if (!proto->ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a valid binary GraphProto (malformed wire data, or messages nested deeper than ",
        kParseRecursionLimit, ")"));
  }
  return FromProto(*proto);
}

absl::StatusOr<std::string> GraphToTextProto(const Graph& graph) {
  google::protobuf::Arena arena(ArenaOptionsFor(graph.numNodes() * 64));
  auto* proto = google::protobuf::Arena::CreateMessage<proto::GraphProto>(&arena);
  RETURN_IF_ERROR(ToProto(graph, proto));
  std::string out;
  if (!google::protobuf::TextFormat::PrintToString(*proto, &out)) {
    return absl::InternalError("protobuf text printing failed");
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Graph>> GraphFromTextProto(absl::string_view text) {
  if (text.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError("graph text proto larger than 2 GiB");
  }
  google::protobuf::Arena arena(ArenaOptionsFor(text.size() / 4));
  auto* proto = google::protobuf::Arena::CreateMessage<proto::GraphProto>(&arena);
  CollectFirstError errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.SetRecursionLimit(kParseRecursionLimit);
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&input, proto)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a valid GraphProto text proto: ", errors.error()));
  }
  return FromProto(*proto);
}

}  // namespace kiln::ir
