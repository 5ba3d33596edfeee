#include "devices/identifiers.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "support/hash.h"

namespace kiln::devices {
namespace {

constexpr size_t kMaxIdentifier = 64;
// What a shortened name keeps before "_h" and the 16 hex digits of the hash.
constexpr size_t kShortenedStem = 48;

std::string CollapseUnderscores(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '_' && !out.empty() && out.back() == '_') continue;
    out.push_back(c);
  }
  return out;
}

// [A-Za-z0-9_] only, runs of '_' collapsed.
std::string MapCharacters(absl::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u < 128 && absl::ascii_isalnum(u) ? c : '_');
  }
  return CollapseUnderscores(out);
}

bool NeedsPrefix(const std::string& mapped, const IdentifierRules& rules) {
  if (mapped.empty() || mapped[0] == '_' || absl::ascii_isdigit(static_cast<unsigned char>(mapped[0]))) {
    return true;
  }
  if (rules.reserved_words.count(mapped) != 0) return true;
  for (const std::string& prefix : rules.reserved_prefixes) {
    if (absl::StartsWith(mapped, prefix)) return true;
  }
  return rules.prefix_other_names && (rules.is_own_name == nullptr || !rules.is_own_name(mapped));
}

}  // namespace

std::string SanitizeIdentifier(absl::string_view name, const IdentifierRules& rules) {
  std::string out = MapCharacters(name);
  const bool prefix = NeedsPrefix(out, rules);
  // Long names differing only past the cut (kernel names end in their
  // index) must stay distinct: replace the tail by a hash of the whole name.
  if (out.size() > kMaxIdentifier) {
    out.resize(kShortenedStem);
    absl::StrAppend(&out, "_h", absl::Hex(HashString(name), absl::kZeroPad16));
  }
  if (prefix) out = out.empty() || out[0] == '_' ? "b" + out : "b_" + out;
  // The cut or the prefix may have made "__"; keep identifiers free of it.
  return CollapseUnderscores(out);
}

const std::string& IdentifierTable::Get(const std::string& name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  const std::string base = SanitizeIdentifier(name, *rules_);
  std::string id = base;
  for (int n = 1; taken_.count(id) != 0; ++n) id = absl::StrCat(base, "_", n);
  taken_.insert(id);
  return ids_.emplace(name, id).first->second;
}

std::string SanitizeComment(absl::string_view text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= 120) break;
    const unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u >= 32 && u < 127 && c != '\\' ? c : '?');
  }
  return out;
}

}  // namespace kiln::devices
