// Fuzzes ParseSchema: any input gives a schema or an error, never a crash,
// hang or sanitizer report; whatever parses prints back to text that parses
// to an equal schema.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "ir/schema.h"
#include "ir/schema_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto schema = kiln::ir::ParseSchema(text);
  if (!schema.ok()) return 0;
  const std::string printed = schema->ToString();
  auto again = kiln::ir::ParseSchema(printed);
  if (!again.ok() || !(*again == *schema)) {
    std::fprintf(stderr, "round trip failed:\n  input:   %.*s\n  printed: %s\n",
                 static_cast<int>(size), reinterpret_cast<const char*>(data), printed.c_str());
    std::abort();
  }
  return 0;
}
