#include "tools/file_io.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "support/atomic_file.h"

namespace kiln::tools {

std::string ResolveUserPath(absl::string_view path) {
  if (path.empty() || path == "-" || path[0] == '/') return std::string(path);
  const char* base = std::getenv("BUILD_WORKING_DIRECTORY");
  if (base == nullptr || base[0] == '\0') return std::string(path);
  return absl::StrCat(base, "/", path);
}

absl::StatusOr<std::string> ReadFileToString(absl::string_view path) {
  if (path == "-") return ReadAllFrom(STDIN_FILENO, "<stdin>");
  return ReadFile(ResolveUserPath(path));
}

absl::Status WriteFileAtomically(absl::string_view path, absl::string_view contents) {
  if (path == "-") return WriteAllTo(STDOUT_FILENO, "<stdout>", contents);
  return kiln::WriteFileAtomically(ResolveUserPath(path), contents);
}

}  // namespace kiln::tools
