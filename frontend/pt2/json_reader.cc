#include "frontend/pt2/json_reader.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace kiln::frontend::pt2 {

absl::StatusOr<Json> ParseJson(absl::string_view text, absl::string_view origin) {
  // nlohmann reports where parsing failed only through its exception; it is
  // caught here and never crosses this function.
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": malformed JSON: ", e.what()));
  }
}

JsonView JsonView::Root(const Json& json, absl::string_view origin) {
  return JsonView(&json, "", std::make_shared<const std::string>(origin));
}

absl::Status JsonView::Error(absl::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat(*origin_, ": ", path_.empty() ? "(top level)" : path_, ": ", what));
}

absl::StatusOr<JsonView> JsonView::Field(absl::string_view key) const {
  if (!json_->is_object()) return Error(absl::StrCat("expected an object with '", key, "'"));
  auto it = json_->find(std::string(key));
  const std::string path = path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
  if (it == json_->end()) return Child(json_, path_).Error(absl::StrCat("missing '", key, "'"));
  return Child(&*it, path);
}

absl::StatusOr<std::optional<JsonView>> JsonView::OptionalField(absl::string_view key) const {
  if (!json_->is_object()) return Error(absl::StrCat("expected an object with '", key, "'"));
  auto it = json_->find(std::string(key));
  if (it == json_->end() || it->is_null()) return std::optional<JsonView>();
  return std::optional<JsonView>(
      Child(&*it, path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key)));
}

absl::StatusOr<int64_t> JsonView::Int() const {
  if (json_->is_number_integer()) {
    if (json_->is_number_unsigned() &&
        json_->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error("integer out of the int64 range");
    }
    return json_->get<int64_t>();
  }
  return Error("expected an integer");
}

absl::StatusOr<double> JsonView::Double() const {
  if (json_->is_number()) return json_->get<double>();
  // torch writes non-finite floats as strings.
  if (json_->is_string()) {
    const std::string& s = json_->get_ref<const std::string&>();
    if (s == "inf" || s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-inf" || s == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (s == "nan" || s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  return Error("expected a number");
}

absl::StatusOr<bool> JsonView::Bool() const {
  if (json_->is_boolean()) return json_->get<bool>();
  return Error("expected true or false");
}

absl::StatusOr<std::string> JsonView::String() const {
  if (json_->is_string()) return json_->get<std::string>();
  return Error("expected a string");
}

absl::StatusOr<std::vector<JsonView>> JsonView::Array() const {
  if (!json_->is_array()) return Error("expected an array");
  std::vector<JsonView> out;
  out.reserve(json_->size());
  size_t i = 0;
  for (const Json& e : *json_) out.push_back(Child(&e, absl::StrCat(path_, "[", i++, "]")));
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, JsonView>>> JsonView::Members() const {
  if (!json_->is_object()) return Error("expected an object");
  std::vector<std::pair<std::string, JsonView>> out;
  out.reserve(json_->size());
  for (auto it = json_->begin(); it != json_->end(); ++it) {
    out.emplace_back(it.key(), Child(&it.value(), path_.empty() ? it.key() : absl::StrCat(path_, ".", it.key())));
  }
  return out;
}

absl::StatusOr<std::pair<std::string, JsonView>> JsonView::Union() const {
  if (!json_->is_object() || json_->size() != 1) {
    return Error("expected a one-member object (a union of the export schema)");
  }
  auto it = json_->begin();
  return std::make_pair(it.key(), Child(&it.value(), absl::StrCat(path_, ".", it.key())));
}

}  // namespace kiln::frontend::pt2
