// `kiln compile`: see CompileCommand().summary / details in compile.cc.
#ifndef KILN_TOOLS_COMMANDS_COMPILE_H_
#define KILN_TOOLS_COMMANDS_COMPILE_H_

#include "tools/command.h"

namespace kiln::tools {

Command CompileCommand();

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMANDS_COMPILE_H_
