#include "frontend/onnx/model_file.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/importer.h"
#include "support/status.h"

namespace kiln::frontend::onnx_import {
namespace {

// Protobuf wire format: a field is a varint key (number << 3 | wire type)
// and a value: a varint (0), 8 bytes (1), a varint length and that many
// bytes (2), or 4 bytes (5). Groups (3, 4) are not followed.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
// ModelProto.graph, GraphProto.initializer, TensorProto.raw_data.
constexpr uint64_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;

bool ReadVarint(absl::string_view& in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    const uint8_t b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

struct Field {
  uint64_t number = 0;
  int wire_type = 0;
  absl::string_view whole;  // key and value, as in the input
  absl::string_view value;  // length-delimited: the payload
};

// The next field of `in`; false at malformed or unsupported input.
bool NextField(absl::string_view& in, Field* f) {
  const char* start = in.data();
  uint64_t key = 0;
  if (!ReadVarint(in, &key)) return false;
  f->number = key >> 3;
  f->wire_type = static_cast<int>(key & 7);
  switch (f->wire_type) {
    case kVarint: {
      uint64_t ignored = 0;
      if (!ReadVarint(in, &ignored)) return false;
      break;
    }
    case kFixed64:
    case kFixed32: {
      const size_t n = f->wire_type == kFixed64 ? 8 : 4;
      if (in.size() < n) return false;
      in.remove_prefix(n);
      break;
    }
    case kLengthDelimited: {
      uint64_t length = 0;
      if (!ReadVarint(in, &length) || length > in.size()) return false;
      f->value = in.substr(0, static_cast<size_t>(length));
      in.remove_prefix(static_cast<size_t>(length));
      break;
    }
    default:
      return false;
  }
  f->whole = absl::string_view(start, static_cast<size_t>(in.data() - start));
  return true;
}

void AppendLengthDelimited(uint64_t number, absl::string_view payload, std::string* out) {
  AppendVarint(number << 3 | kLengthDelimited, out);
  AppendVarint(payload.size(), out);
  out->append(payload.data(), payload.size());
}

// A TensorProto without its raw_data field when that is >= min_bytes.
// false: malformed, or raw_data given twice.
bool StripTensor(absl::string_view tensor, size_t min_bytes, std::string* out,
                 std::optional<absl::string_view>* raw) {
  bool seen = false;
  Field f;
  while (!tensor.empty()) {
    if (!NextField(tensor, &f)) return false;
    if (f.number == kTensorRawData && f.wire_type == kLengthDelimited) {
      if (seen) return false;
      seen = true;
      if (f.value.size() >= min_bytes) {
        *raw = f.value;
        continue;
      }
    }
    out->append(f.whole.data(), f.whole.size());
  }
  return true;
}

bool StripGraph(absl::string_view graph, size_t min_bytes, std::string* out,
                std::vector<std::optional<absl::string_view>>* raw_data) {
  Field f;
  std::string tensor;
  while (!graph.empty()) {
    if (!NextField(graph, &f)) return false;
    if (f.number == kGraphInitializer && f.wire_type == kLengthDelimited) {
      tensor.clear();
      std::optional<absl::string_view> raw;
      if (!StripTensor(f.value, min_bytes, &tensor, &raw)) return false;
      raw_data->push_back(raw);
      if (raw.has_value()) {
        AppendLengthDelimited(kGraphInitializer, tensor, out);
        continue;
      }
    }
    out->append(f.whole.data(), f.whole.size());
  }
  return true;
}

}  // namespace

std::optional<StrippedModel> StripLargeRawData(absl::string_view bytes, size_t min_bytes) {
  StrippedModel stripped;
  bool graph_seen = false;
  Field f;
  std::string graph;
  absl::string_view in = bytes;
  while (!in.empty()) {
    if (!NextField(in, &f)) return std::nullopt;
    if (f.number == kModelGraph && f.wire_type == kLengthDelimited) {
      // Two graph fields would be merged by the parser: not followed.
      if (graph_seen) return std::nullopt;
      graph_seen = true;
      if (!StripGraph(f.value, min_bytes, &graph, &stripped.raw_data)) return std::nullopt;
      AppendLengthDelimited(kModelGraph, graph, &stripped.bytes);
      continue;
    }
    stripped.bytes.append(f.whole.data(), f.whole.size());
  }
  bool any = false;
  for (const std::optional<absl::string_view>& r : stripped.raw_data) any |= r.has_value();
  if (!any) return std::nullopt;
  return stripped;
}

absl::StatusOr<MappedModel> MapModelFile(const std::string& path) {
  absl::StatusOr<MappedFile> file = MappedFile::Open(path);
  if (!file.ok() && absl::IsInvalidArgument(file.status())) {
    // Not a regular file (a pipe): read and parsed whole.
    MappedModel m;
    ASSIGN_OR_RETURN(m.model, LoadModelFile(path));
    return m;
  }
  RETURN_IF_ERROR(file.status());
  MappedModel m;
  m.file = *std::move(file);
  std::optional<StrippedModel> stripped = StripLargeRawData(m.file.bytes(), kInPlaceRawDataBytes);
  absl::StatusOr<onnx::ModelProto> model = ParseModel(stripped ? absl::string_view(stripped->bytes) : m.file.bytes());
  if (!model.ok()) return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  m.model = *std::move(model);
  if (stripped) {
    // The parser saw what the walker saw: one initializer per view, each
    // stripped one now without raw_data. Otherwise (not expected) the
    // whole file is parsed.
    const auto& inits = m.model.graph().initializer();
    bool consistent = static_cast<size_t>(inits.size()) == stripped->raw_data.size();
    for (int i = 0; consistent && i < inits.size(); ++i) {
      if (stripped->raw_data[static_cast<size_t>(i)] && inits[i].has_raw_data()) consistent = false;
    }
    if (consistent) {
      m.raw_data = std::move(stripped->raw_data);
    } else {
      ASSIGN_OR_RETURN(m.model, ParseModel(m.file.bytes()));
    }
  }
  return m;
}

}  // namespace kiln::frontend::onnx_import
