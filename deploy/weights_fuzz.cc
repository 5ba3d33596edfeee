// The weights file loader on arbitrary bytes: it must return a status, and
// every tensor it accepts must lie inside the bytes (ASan checks the reads).
// Each input is parsed as is and again with the header's table checksum
// recomputed, so that mutations reach the table parser behind it.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <xxhash.h>

#include "deploy/weights_file.h"

namespace {

void ParseOnce(const uint8_t* data, size_t size, bool fix_checksum) {
  // Aligned like a mapping, sized exactly (no slack for reads past the end).
  void* copy = std::aligned_alloc(kiln::deploy::kWeightsAlignment,
                                  (size + kiln::deploy::kWeightsAlignment) / kiln::deploy::kWeightsAlignment *
                                      kiln::deploy::kWeightsAlignment);
  if (copy == nullptr) return;
  if (size > 0) std::memcpy(copy, data, size);
  if (fix_checksum && size >= 64) {  // header: table bytes at 24, checksum at 48
    uint64_t table_bytes = 0;
    std::memcpy(&table_bytes, static_cast<char*>(copy) + 24, 8);
    if (table_bytes <= size - 64) {
      const uint64_t hash = XXH3_64bits(static_cast<char*>(copy) + 64, table_bytes);
      std::memcpy(static_cast<char*>(copy) + 48, &hash, 8);
    }
  }
  std::shared_ptr<const void> owner(copy, [](const void* p) { std::free(const_cast<void*>(p)); });
  auto contents = kiln::deploy::ParseWeights(copy, size, owner, "fuzz.weights");
  if (contents.ok()) {
    volatile uint8_t sink = 0;
    for (const auto& [name, tensor] : contents->tensors) {
      const auto* bytes = static_cast<const uint8_t*>(tensor.raw_data());
      const size_t n = static_cast<size_t>(tensor.numel()) * tensor.element_size();
      if (n > 0 && (bytes < static_cast<const uint8_t*>(copy) ||
                    bytes + n > static_cast<const uint8_t*>(copy) + size)) {
        std::abort();  // a tensor outside the file's bytes
      }
      for (size_t i = 0; i < n; ++i) sink = sink ^ bytes[i];
    }
    (void)sink;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseOnce(data, size, /*fix_checksum=*/false);
  ParseOnce(data, size, /*fix_checksum=*/true);
  return 0;
}
