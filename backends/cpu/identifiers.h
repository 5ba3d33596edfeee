// Safe C++ identifiers and type names for generated source. Nothing a model
// supplies (buffer names, op names, strings) is pasted into generated code
// as is: every identifier passes through here, and only [A-Za-z0-9_] leave.
// The sanitizer itself is shared with other devices (devices/identifiers.h);
// this file holds what is C++'s own.
#ifndef KILN_BACKENDS_CPU_IDENTIFIERS_H_
#define KILN_BACKENDS_CPU_IDENTIFIERS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/identifiers.h"
#include "support/dtype.h"

namespace kiln::backends::cpu {

// The names generated C++ reserves: keywords, the prelude's and the
// wrapper's names, and the prefixes of generated locals ("l_") and helpers
// ("kiln").
const devices::IdentifierRules& CppIdentifierRules();

// `name` as a C++ identifier: devices::SanitizeIdentifier with the C++ rules.
inline std::string SanitizeIdentifier(absl::string_view name) {
  return devices::SanitizeIdentifier(name, CppIdentifierRules());
}

// Unique C++ identifiers for distinct names.
class IdentifierTable : public devices::IdentifierTable {
 public:
  IdentifierTable() : devices::IdentifierTable(CppIdentifierRules()) {}
};

using devices::SanitizeComment;

// The C++ element type of a dtype ("float", "int64_t", "bool", ...);
// Unimplemented for float16/bfloat16/complex.
absl::StatusOr<std::string> CTypeName(DType dtype);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_IDENTIFIERS_H_
