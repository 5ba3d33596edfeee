// Safe identifiers for generated source, shared by the device
// implementations (which never depend on each other). Nothing a model
// supplies (buffer names, op names, strings) is pasted into generated code as
// is: identifiers keep only [A-Za-z0-9_], and each device says which names
// its source reserves (IdentifierRules).
#ifndef KILN_DEVICES_IDENTIFIERS_H_
#define KILN_DEVICES_IDENTIFIERS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kiln::devices {

// What one device's generated source reserves. A name that would clash gets
// the prefix "b_" ("b" before a leading '_' or for the empty name).
struct IdentifierRules {
  // Exact words a name must not become: language keywords, built-ins, and
  // names the generated code defines itself.
  std::set<std::string> reserved_words;
  // Prefixes of the names the generated code makes (locals, helpers).
  std::vector<std::string> reserved_prefixes;
  // When true, every name that is not `is_own_name` gets the prefix, so no
  // model name can shadow any built-in or library function; when false,
  // only reserved and malformed names do.
  bool prefix_other_names = false;
  // The lowering's own names (e.g. "buf0"), kept as they are when
  // `prefix_other_names` is set; sees the name after character mapping.
  // Null: none.
  bool (*is_own_name)(absl::string_view mapped) = nullptr;
};

// `name` with every character outside [A-Za-z0-9_] replaced by '_', runs of
// '_' collapsed (no reserved `__`), prefixed as `rules` say and when it would
// be empty or start with a digit or '_'. Names longer than 64 characters keep
// 48 and a hash of the whole name, so long names differing only past the cut
// stay distinct. Deterministic.
std::string SanitizeIdentifier(absl::string_view name, const IdentifierRules& rules);

// Assigns each distinct name a unique sanitized identifier (distinct names
// that sanitize alike get numeric suffixes).
class IdentifierTable {
 public:
  // `rules` must outlive the table (devices keep theirs in a static).
  explicit IdentifierTable(const IdentifierRules& rules) : rules_(&rules) {}

  const std::string& Get(const std::string& name);
  bool Contains(const std::string& name) const { return ids_.count(name) != 0; }

 private:
  const IdentifierRules* rules_;
  std::map<std::string, std::string> ids_;
  std::set<std::string> taken_;
};

// Text safe inside a `//` comment or an error message: printable ASCII minus
// backslash (others become '?'), at most 120 characters.
std::string SanitizeComment(absl::string_view text);

}  // namespace kiln::devices

#endif  // KILN_DEVICES_IDENTIFIERS_H_
