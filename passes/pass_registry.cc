#include "passes/pass_registry.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/pass_log.h"

namespace kiln::passes {
namespace {

bool IsValidPassName(absl::string_view name) {
  if (name.empty() || !absl::ascii_islower(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    unsigned char u = static_cast<unsigned char>(c);
    if (!absl::ascii_islower(u) && !absl::ascii_isdigit(u) && c != '_') return false;
  }
  return true;
}

}  // namespace

absl::Status PassRegistry::Register(PassInfo info) {
  if (!IsValidPassName(info.name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid pass name '", info.name, "': expected [a-z][a-z0-9_]*"));
  }
  if (!info.factory) {
    return absl::InvalidArgumentError(absl::StrCat("pass '", info.name, "' has no factory"));
  }
  std::vector<std::string> names = info.aliases;
  names.push_back(info.name);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (!IsValidPassName(n)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid alias '", n, "' for pass '",
                                                     info.name, "': expected [a-z][a-z0-9_]*"));
    }
    if (passes_.count(n) || aliases_.count(n)) {
      return absl::AlreadyExistsError(
          absl::StrCat("cannot register pass '", info.name, "': the name '", n,
                       "' is already used by pass '",
                       passes_.count(n) ? n : aliases_.at(n), "'"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (names[j] == n) {
        return absl::InvalidArgumentError(
            absl::StrCat("pass '", info.name, "' lists the name '", n, "' twice"));
      }
    }
  }
  for (const std::string& alias : info.aliases) {
    aliases_[alias] = info.name;
    RegisterLogAlias(alias, info.name);
  }
  std::string name = info.name;
  passes_.emplace(std::move(name), std::move(info));
  return absl::OkStatus();
}

absl::Status PassRegistry::RegisterFunction(absl::string_view name,
                                            std::vector<std::string> aliases,
                                            absl::string_view description,
                                            PassFunction function) {
  PassInfo info;
  info.name = std::string(name);
  info.aliases = std::move(aliases);
  info.description = std::string(description);
  if (function) {
    info.factory = [n = info.name, f = std::move(function)]() -> std::unique_ptr<Pass> {
      return std::make_unique<FunctionPass>(n, f);
    };
  }
  return Register(std::move(info));
}

bool PassRegistry::Contains(absl::string_view name_or_alias) const {
  std::string key(name_or_alias);
  return passes_.count(key) > 0 || aliases_.count(key) > 0;
}

absl::StatusOr<std::string> PassRegistry::CanonicalName(absl::string_view name_or_alias) const {
  std::string key(name_or_alias);
  if (passes_.count(key)) return key;
  auto alias = aliases_.find(key);
  if (alias != aliases_.end()) return alias->second;
  return absl::InvalidArgumentError(absl::StrCat("unknown pass '", name_or_alias,
                                                 "'; known passes: ", KnownNames()));
}

absl::StatusOr<std::unique_ptr<Pass>> PassRegistry::Create(absl::string_view name_or_alias) const {
  absl::StatusOr<std::string> name = CanonicalName(name_or_alias);
  if (!name.ok()) return name.status();
  std::unique_ptr<Pass> pass = passes_.at(*name).factory();
  if (pass == nullptr) {
    return absl::InternalError(absl::StrCat("the factory of pass '", *name, "' returned null"));
  }
  if (pass->name() != *name) {
    return absl::InternalError(absl::StrCat("pass registered as '", *name,
                                            "' reports the name '", pass->name(), "'"));
  }
  return pass;
}

std::vector<const PassInfo*> PassRegistry::List() const {
  std::vector<const PassInfo*> out;
  out.reserve(passes_.size());
  for (const auto& [name, info] : passes_) out.push_back(&info);
  return out;
}

std::string PassRegistry::KnownNames() const {
  if (passes_.empty()) return "(none registered)";
  std::vector<std::string> parts;
  for (const auto& [name, info] : passes_) {
    parts.push_back(info.aliases.empty()
                        ? name
                        : absl::StrCat(name, " (", absl::StrJoin(info.aliases, ", "), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace kiln::passes
