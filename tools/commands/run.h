// `kiln run`: see RunCommand().summary / details in run.cc.
#ifndef KILN_TOOLS_COMMANDS_RUN_H_
#define KILN_TOOLS_COMMANDS_RUN_H_

#include "tools/command.h"

namespace kiln::tools {

Command RunCommand();

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMANDS_RUN_H_
