#include "tools/command.h"

#include <cstdio>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/terminal.h"

namespace kiln::tools {
namespace {

// The payload that marks an InputRejected status (its value is unused).
constexpr char kInputRejectedPayload[] = "kiln.tools/input-rejected";

}  // namespace

absl::Status InputRejected(absl::string_view message) {
  // FailedPrecondition: the input is not in a state the command accepts.
  // The payload, not the code, decides the exit status, so library errors
  // with the same code still exit 2.
  absl::Status status = absl::FailedPreconditionError(message);
  status.SetPayload(kInputRejectedPayload, absl::Cord("1"));
  return status;
}

int ExitCodeOf(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  return status.GetPayload(kInputRejectedPayload).has_value() ? kExitFailure : kExitUsageError;
}

int ReportError(absl::string_view message) {
  // Multi-line messages (e.g. a schema mismatch listing the candidates) are
  // folded into one line: "candidates:\n  a\n  b" -> "candidates: a; b".
  std::string line;
  for (absl::string_view part : absl::StrSplit(message, '\n', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    if (!line.empty()) absl::StrAppend(&line, absl::EndsWith(line, ":") ? " " : "; ");
    absl::StrAppend(&line, part);
  }
  std::fprintf(stderr, "kiln: error: %s\n", Printable(line).c_str());
  return kExitUsageError;
}

absl::Status ExpectArgCount(const std::vector<std::string>& args, size_t count,
                            absl::string_view command, absl::string_view what) {
  if (args.size() == count) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(command, ": expected ", what, ", got ",
                                                 args.size(), " argument",
                                                 args.size() == 1 ? "" : "s", " (see kiln ",
                                                 command, " --help)"));
}

}  // namespace kiln::tools
