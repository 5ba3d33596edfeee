// `kiln conformance`: see ConformanceCommand().summary / details in conformance.cc.
#ifndef KILN_TOOLS_COMMANDS_CONFORMANCE_H_
#define KILN_TOOLS_COMMANDS_CONFORMANCE_H_

#include "tools/command.h"

namespace kiln::tools {

Command ConformanceCommand();

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMANDS_CONFORMANCE_H_
