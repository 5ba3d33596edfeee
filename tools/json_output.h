// Machine-readable output of the kiln CLI (`--json`): one JSON document on
// stdout per command. The documents are described by
// docs/cli_json.schema.json (JSON Schema 2020-12); tools/kiln_json_test.sh
// checks every command's output against it.
#ifndef KILN_TOOLS_JSON_OUTPUT_H_
#define KILN_TOOLS_JSON_OUTPUT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kiln::tools {

// Objects keep their keys in insertion order, so documents read top-down.
using Json = nlohmann::ordered_json;

// Bumped when a document changes incompatibly (a field removed or retyped);
// adding fields keeps it.
inline constexpr int kJsonSchemaVersion = 1;

// The fields every document starts with: {"schema_version": 1,
// "kiln_version": "0.1.0", "command": "<command>"}.
Json JsonDocument(absl::string_view command);

// Two-space indented, ASCII only (every other character as \uXXXX, so
// names from a model cannot reach a terminal raw), bytes that are not UTF-8
// replaced by U+FFFD; ends with a newline.
std::string DumpJson(const Json& document);

// DumpJson to stdout.
absl::Status PrintJson(const Json& document);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_JSON_OUTPUT_H_
