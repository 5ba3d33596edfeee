#include "tools/common_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, format, "",
          "Input graph format: text, pb or pbtxt. Empty: from the file extension "
          "(.txt, .pb, .pbtxt)");
ABSL_FLAG(std::string, o, "", "Output file; '-' or empty writes to stdout");
ABSL_FLAG(bool, json, false,
          "Print the results as one JSON document on stdout (described by "
          "docs/cli_json.schema.json)");
ABSL_FLAG(std::string, dump_dir, "",
          "Write the IR as it goes: opt after every pass that changed it (NNN_<pass>.txt and "
          ".pb), compile after every stage (1_graph.txt ... 5_program.cpp)");
ABSL_FLAG(std::string, device, "cpu",
          "Device to compile for: cpu; conformance also cuda (on a machine with an NVIDIA GPU "
          "and its driver)");
