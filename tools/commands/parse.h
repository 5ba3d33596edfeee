// `kiln parse`: see ParseCommand().summary / details in parse.cc.
#ifndef KILN_TOOLS_COMMANDS_PARSE_H_
#define KILN_TOOLS_COMMANDS_PARSE_H_

#include "tools/command.h"

namespace kiln::tools {

Command ParseCommand();

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMANDS_PARSE_H_
