// Fuzzes the packed weights' entry parser (packed_cache.h) as a damaged or
// hostile cache directory would hand an entry over (the checksum sidecar
// bypassed): a parsed entry's slots must lie inside it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "backends/cpu/packed_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<kiln::backends::cpu::PackedEntry> entry = kiln::backends::cpu::ParsePackedEntry(bytes, "fuzz.entry");
  if (entry.ok()) {
    for (const kiln::backends::cpu::PackedSlot& s : entry->slots) {
      if (entry->data_offset + s.offset + s.bytes > size) std::abort();
    }
  }
  return 0;
}
