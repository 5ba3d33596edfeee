// `--max_memory`: the most memory one kiln command may plan to use. Inputs
// `kiln run` generates and the planned peak of a compiled program are
// checked against it before anything is allocated, so a model that declares
// a 4 TiB tensor is an error naming the size, not std::bad_alloc.
#ifndef KILN_TOOLS_MEMORY_LIMIT_H_
#define KILN_TOOLS_MEMORY_LIMIT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

ABSL_DECLARE_FLAG(std::string, max_memory);

namespace kiln::tools {

// "512 B", "1.50 KiB", "4.00 TiB".
std::string FormatBytes(double bytes);

// "16GiB", "512M", "2.5G", "1000000" (bytes); K/M/G/T are powers of 1024
// with or without "iB"/"B". InvalidArgument otherwise.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

// The limit: --max_memory, or with "auto" this machine's physical memory.
absl::StatusOr<int64_t> MaxMemoryBytes();

// OK when `bytes` fits the limit; else InvalidArgument "<what> needs 4.00
// TiB, more than --max_memory (23.4 GiB: this machine's memory)".
absl::Status CheckMemory(int64_t bytes, absl::string_view what);

// The bytes of a dense tensor of `sizes` with `element_size`-byte elements,
// or nullopt when that does not fit in int64 (negative sizes count as 0).
std::optional<int64_t> DenseBytes(absl::Span<const int64_t> sizes, int64_t element_size);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_MEMORY_LIMIT_H_
