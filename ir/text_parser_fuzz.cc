// Fuzzes ParseGraph: any input must give a graph or an error, never a crash,
// hang or sanitizer report. Whatever parses must print to text that parses
// again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto graph = kiln::ir::ParseGraph(text);
  if (!graph.ok()) return 0;
  const std::string printed = kiln::ir::PrintGraph(**graph);
  auto again = kiln::ir::ParseGraph(printed);
  if (!again.ok()) std::abort();
  return 0;
}
