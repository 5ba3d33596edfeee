// A kiln subcommand: `kiln <name> [flags] [args]`.
//
// Adding one: write tools/commands/<name>.{h,cc} with a `Command
// <Name>Command()` factory, add its flags there with ABSL_FLAG (or reuse the
// shared ones in common_flags.h), and add one line to the table in
// kiln_main.cc.
#ifndef KILN_TOOLS_COMMAND_H_
#define KILN_TOOLS_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kiln::tools {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
// The input was read but is wrong: `verify` found a broken invariant, a pass
// failed, outputs differ from the reference, conformance tests failed.
inline constexpr int kExitFailure = 1;
// Bad usage or unreadable input: unknown command or flag, missing file,
// syntax error, a model kiln cannot import or run.
inline constexpr int kExitUsageError = 2;

struct Command {
  std::string name;
  // One line, for `kiln --help`.
  std::string summary;
  // The argument synopsis after the command name, e.g. "FILE [-o OUT]".
  std::string usage;
  // Longer help for `kiln <name> --help` (may be empty).
  std::string details;
  // Names of the absl flags this command reads; any other flag is an error.
  std::vector<std::string> flags;
  // Runs with the positional arguments (flags are already set). An error
  // becomes one "kiln: error: ..." line on stderr and exit status 2, or 1
  // for a status made by InputRejected().
  absl::Status (*run)(const std::vector<std::string>& args) = nullptr;
};

// An error whose exit status is kExitFailure (1) rather than 2: the input
// was read and is wrong (see kExitFailure).
absl::Status InputRejected(absl::string_view message);
// The exit status for what Command::run returned.
int ExitCodeOf(const absl::Status& status);

// Prints "kiln: error: <message>" as one line on stderr (newlines in the
// message become "; ", control bytes are escaped) and returns
// kExitUsageError.
int ReportError(absl::string_view message);

// InvalidArgument "<command>: expected <what>, got N arguments (see kiln
// <command> --help)" unless there are `count` positional arguments.
absl::Status ExpectArgCount(const std::vector<std::string>& args, size_t count,
                            absl::string_view command, absl::string_view what);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMAND_H_
