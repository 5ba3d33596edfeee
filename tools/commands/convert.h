// `kiln convert`: see ConvertCommand().summary / details in convert.cc.
#ifndef KILN_TOOLS_COMMANDS_CONVERT_H_
#define KILN_TOOLS_COMMANDS_CONVERT_H_

#include "tools/command.h"

namespace kiln::tools {

Command ConvertCommand();

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMANDS_CONVERT_H_
