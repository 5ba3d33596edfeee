// `kiln import`: see ImportCommand().summary / details in import.cc.
#ifndef KILN_TOOLS_COMMANDS_IMPORT_H_
#define KILN_TOOLS_COMMANDS_IMPORT_H_

#include "tools/command.h"

namespace kiln::tools {

Command ImportCommand();

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMANDS_IMPORT_H_
