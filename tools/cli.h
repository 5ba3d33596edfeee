// kiln's entry point: dispatches to a subcommand, parses flags, prints help.
#ifndef KILN_TOOLS_CLI_H_
#define KILN_TOOLS_CLI_H_

#include "absl/types/span.h"
#include "tools/command.h"

namespace kiln::tools {

// `kiln <command> [flags] [args]`, `kiln --help`, `kiln help [command]`,
// `kiln <command> --help`. Flags go anywhere after the command name:
// `--name=value`, `--name value`, `-name value`, `--bool`/`--nobool`;
// `--` ends the flags. Returns the process exit code.
int RunCli(absl::Span<const Command> commands, int argc, char** argv);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_CLI_H_
