// `kiln opt`: see OptCommand().summary / details in opt.cc.
#ifndef KILN_TOOLS_COMMANDS_OPT_H_
#define KILN_TOOLS_COMMANDS_OPT_H_

#include <string>
#include <vector>

#include "tools/command.h"

namespace kiln::tools {

Command OptCommand();

// The spellings of `kiln opt` that the generic flag parser (cli.cc) does not
// know, rewritten into ones it does. For `kiln opt ...` only (other command
// lines come back unchanged):
//   --dump-dir=D, --disable-pass, --stop-after, --list-passes, ... (any '-'
//       inside a flag name)                  -> the '_' spelling
//   -O0 / -O1 / -O2                          -> --opt_level=N
//   --disable-pass=a --disable-pass=b,c      -> one --disable_pass=a,b,c
//       (absl list flags replace their value on every occurrence; the issue
//       asks for a repeatable flag)
// Values of flags that take one (`--passes X`, `-o X`) and everything after
// `--` are left alone.
std::vector<std::string> NormalizeOptArguments(int argc, char** argv);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMANDS_OPT_H_
