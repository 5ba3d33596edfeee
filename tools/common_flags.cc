#include "tools/common_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, format, "",
          "Input graph format: text, pb or pbtxt. Empty: from the file extension "
          "(.txt, .pb, .pbtxt)");
ABSL_FLAG(std::string, o, "", "Output file; '-' or empty writes to stdout");
