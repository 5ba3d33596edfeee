// `kiln print`: see PrintCommand().summary / details in print.cc.
#ifndef KILN_TOOLS_COMMANDS_PRINT_H_
#define KILN_TOOLS_COMMANDS_PRINT_H_

#include "tools/command.h"

namespace kiln::tools {

Command PrintCommand();

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMANDS_PRINT_H_
