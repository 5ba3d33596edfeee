#include "tools/json_output.h"

#include <unistd.h>

#include <cstdio>

#include "support/atomic_file.h"
#include "tools/version.h"

namespace kiln::tools {

Json JsonDocument(absl::string_view command) {
  Json document = Json::object();
  document["schema_version"] = kJsonSchemaVersion;
  document["kiln_version"] = kKilnVersion;
  document["command"] = std::string(command);
  return document;
}

std::string DumpJson(const Json& document) {
  return document.dump(2, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace) + "\n";
}

absl::Status PrintJson(const Json& document) {
  std::fflush(stdout);  // after anything printf'd before
  return WriteAllTo(STDOUT_FILENO, "<stdout>", DumpJson(document));
}

}  // namespace kiln::tools
