// Arbitrary bytes into the binary graph loader: it must return an error or a
// graph, never crash, leak or trip a sanitizer. A loaded graph is saved
// again, which walks everything the loader built.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "ir/proto/proto_convert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto graph = kiln::ir::DeserializeGraph(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (graph.ok()) {
    auto bytes = kiln::ir::SerializeGraph(**graph);
    (void)bytes;
  }
  return 0;
}
