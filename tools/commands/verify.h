// `kiln verify`: see VerifyCommand().summary / details in verify.cc.
#ifndef KILN_TOOLS_COMMANDS_VERIFY_H_
#define KILN_TOOLS_COMMANDS_VERIFY_H_

#include "tools/command.h"

namespace kiln::tools {

Command VerifyCommand();

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMANDS_VERIFY_H_
