// Fuzzes the program cache's loaders (program_cache.h): a program entry and
// a model record, as a damaged or hostile cache directory would hand them
// over (the checksum sidecar is bypassed). A program entry that loads must
// survive what a hit does next before the device compile: its memory report
// and printing its lines.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "driver/program_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Entries are mapped (page-aligned); the parser requires 64-byte alignment.
  std::shared_ptr<char> aligned(static_cast<char*>(std::aligned_alloc(64, (size / 64 + 1) * 64)), std::free);
  if (size > 0) std::memcpy(aligned.get(), data, size);
  const absl::string_view bytes(aligned.get(), size);
  auto entry = kiln::driver::ParseProgramEntry(bytes, aligned, "fuzz.entry");
  if (entry.ok()) {
    (void)entry->program.ToString();
    (void)kiln::driver::NotCompiledReport(*entry);
  }
  (void)kiln::driver::ParseModelRecord(bytes, "fuzz.onnx");
  return 0;
}
