// Pass names -> factories, plus short aliases ("dce" -> dead_code_elimination).
//
// Registration is explicit: each pass library exports
// `void RegisterXxxPass(PassRegistry&)`, and passes/all_passes.cc calls them
// all from RegisterAllPasses(). No static initialisers, so a pass is never
// silently missing because the linker dropped its object file.
#ifndef KILN_PASSES_PASS_REGISTRY_H_
#define KILN_PASSES_PASS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/pass.h"

namespace kiln::passes {

using PassFactory = std::function<std::unique_ptr<Pass>()>;

struct PassInfo {
  std::string name;                  // canonical, e.g. "dead_code_elimination"
  std::vector<std::string> aliases;  // e.g. {"dce"}
  std::string description;           // one line, for `kiln opt --list-passes`
  PassFactory factory;
};

class PassRegistry {
 public:
  // Fails with AlreadyExists when the name or an alias is taken, and with
  // InvalidArgument when a name is not [a-z][a-z0-9_]* or the factory is
  // empty.
  absl::Status Register(PassInfo info);
  // Shorthand for a FunctionPass.
  absl::Status RegisterFunction(absl::string_view name, std::vector<std::string> aliases,
                                absl::string_view description, PassFunction function);

  bool Contains(absl::string_view name_or_alias) const;
  // The canonical name; InvalidArgument listing the known names otherwise.
  absl::StatusOr<std::string> CanonicalName(absl::string_view name_or_alias) const;
  absl::StatusOr<std::unique_ptr<Pass>> Create(absl::string_view name_or_alias) const;
  // Sorted by canonical name.
  std::vector<const PassInfo*> List() const;
  // "canonicalize, common_subexpression_elimination (cse), ..."
  std::string KnownNames() const;

 private:
  std::map<std::string, PassInfo> passes_;
  std::map<std::string, std::string> aliases_;  // alias -> canonical
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_PASS_REGISTRY_H_
