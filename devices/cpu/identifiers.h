// Safe C++ identifiers and type names for generated source. Nothing a model
// supplies (buffer names, op names, strings) is pasted into generated code
// as is: every identifier passes through here, and only [A-Za-z0-9_] leave.
#ifndef KILN_DEVICES_CPU_IDENTIFIERS_H_
#define KILN_DEVICES_CPU_IDENTIFIERS_H_

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "support/dtype.h"

namespace kiln::devices::cpu {

// `name` with every character outside [A-Za-z0-9_] replaced by '_', runs of
// '_' collapsed (no reserved `__`), at most 64 characters, prefixed with "b"
// when it would start with a digit or '_', be empty, be a C++ keyword, or
// start with "l_" (the prefix of generated locals). Deterministic.
std::string SanitizeIdentifier(absl::string_view name);

// Assigns each distinct name a unique sanitized identifier (distinct names
// that sanitize alike get numeric suffixes).
class IdentifierTable {
 public:
  const std::string& Get(const std::string& name);
  bool Contains(const std::string& name) const { return ids_.count(name) != 0; }

 private:
  std::map<std::string, std::string> ids_;
  std::set<std::string> taken_;
};

// Text for a `//` comment: printable ASCII minus backslash, at most 120 chars.
std::string SanitizeComment(absl::string_view text);

// The C++ element type of a dtype ("float", "int64_t", "bool", ...);
// Unimplemented for float16/bfloat16/complex.
absl::StatusOr<std::string> CTypeName(DType dtype);

}  // namespace kiln::devices::cpu

#endif  // KILN_DEVICES_CPU_IDENTIFIERS_H_
