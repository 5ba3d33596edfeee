// Flags shared by several subcommands (each command lists the ones it reads
// in its Command::flags).
#ifndef KILN_TOOLS_COMMON_FLAGS_H_
#define KILN_TOOLS_COMMON_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"

// Input graph format: text, pb or pbtxt; empty = by file extension.
ABSL_DECLARE_FLAG(std::string, format);
// Output file ("-" or empty = stdout where the command allows it).
ABSL_DECLARE_FLAG(std::string, o);

#endif  // KILN_TOOLS_COMMON_FLAGS_H_
