// Typed, path-tracking reads of nlohmann::json values: every error names the
// entry and the JSON path ("model/models/model.json: graph_module.graph.
// nodes[3].inputs[0].arg: expected an integer"). No exceptions escape:
// parsing uses nlohmann's non-throwing mode and every access checks the type
// first.
#ifndef KILN_FRONTEND_PT2_JSON_READER_H_
#define KILN_FRONTEND_PT2_JSON_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kiln::frontend::pt2 {

using Json = nlohmann::json;

// Parses `text` (no exceptions). `origin` names the entry in the error.
absl::StatusOr<Json> ParseJson(absl::string_view text, absl::string_view origin);

class JsonView {
 public:
  JsonView(const Json* json, std::string path, std::shared_ptr<const std::string> origin)
      : json_(json), path_(std::move(path)), origin_(std::move(origin)) {}
  static JsonView Root(const Json& json, absl::string_view origin);

  const Json& json() const { return *json_; }
  const std::string& path() const { return path_; }
  bool is_null() const { return json_->is_null(); }
  bool is_object() const { return json_->is_object(); }

  // InvalidArgument "<origin>: <path>: <what>".
  absl::Status Error(absl::string_view what) const;

  // A required member of an object.
  absl::StatusOr<JsonView> Field(absl::string_view key) const;
  // A member that may be absent or null.
  absl::StatusOr<std::optional<JsonView>> OptionalField(absl::string_view key) const;

  absl::StatusOr<int64_t> Int() const;
  absl::StatusOr<double> Double() const;  // integers are accepted
  absl::StatusOr<bool> Bool() const;
  absl::StatusOr<std::string> String() const;
  absl::StatusOr<std::vector<JsonView>> Array() const;
  // An object's members in document order.
  absl::StatusOr<std::vector<std::pair<std::string, JsonView>>> Members() const;
  // A union of torch's export schema: an object with exactly one member.
  absl::StatusOr<std::pair<std::string, JsonView>> Union() const;

 private:
  JsonView Child(const Json* json, std::string path) const { return JsonView(json, std::move(path), origin_); }

  const Json* json_;
  std::string path_;
  std::shared_ptr<const std::string> origin_;
};

}  // namespace kiln::frontend::pt2

#endif  // KILN_FRONTEND_PT2_JSON_READER_H_
