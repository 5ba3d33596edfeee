#include "tools/command.h"

#include <cstdio>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kiln::tools {

int ReportError(absl::string_view message) {
  // Multi-line messages (e.g. a schema mismatch listing the candidates) are
  // folded into one line: "candidates:\n  a\n  b" -> "candidates: a; b".
  std::string line;
  for (absl::string_view part : absl::StrSplit(message, '\n', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    if (!line.empty()) absl::StrAppend(&line, absl::EndsWith(line, ":") ? " " : "; ");
    absl::StrAppend(&line, part);
  }
  std::fprintf(stderr, "kiln: error: %s\n", line.c_str());
  return kExitUsageError;
}

int ReportError(const absl::Status& status) { return ReportError(status.message()); }

bool ExpectArgCount(const std::vector<std::string>& args, size_t count, absl::string_view command,
                    absl::string_view what) {
  if (args.size() == count) return true;
  ReportError(absl::StrCat(command, ": expected ", what, ", got ", args.size(), " argument",
                           args.size() == 1 ? "" : "s", " (see kiln ", command, " --help)"));
  return false;
}

}  // namespace kiln::tools
