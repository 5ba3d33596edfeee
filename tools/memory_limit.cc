#include "tools/memory_limit.h"

#include <unistd.h>

#include <cmath>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

ABSL_FLAG(std::string, max_memory, "auto",
          "Refuse to allocate inputs or run a compiled program whose planned peak exceeds "
          "this (e.g. 8GiB, 512M, bytes); auto: this machine's physical memory");

namespace kiln::tools {

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < sizeof(kUnits) / sizeof(kUnits[0])) {
    bytes /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrFormat("%.0f B", bytes);
  return absl::StrFormat("%.2f %s", bytes, kUnits[unit]);
}

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  absl::string_view rest = absl::StripAsciiWhitespace(text);
  int shift = 0;
  // The unit, longest spelling first: "GiB", "GB", "G".
  for (const auto& [letter, bits] : {std::pair<char, int>{'K', 10}, {'M', 20}, {'G', 30},
                                     {'T', 40}}) {
    for (const std::string& suffix : {std::string(1, letter) + "iB", std::string(1, letter) + "B",
                                     std::string(1, letter)}) {
      if (shift == 0 && absl::EndsWithIgnoreCase(rest, suffix)) {
        rest.remove_suffix(suffix.size());
        shift = bits;
      }
    }
  }
  if (shift == 0 && absl::EndsWithIgnoreCase(rest, "B")) rest.remove_suffix(1);
  double number = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(rest), &number) || !(number >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not a size (expected e.g. 8GiB, 512M, 2.5G or a number of bytes)"));
  }
  const double bytes = std::ldexp(number, shift);
  if (bytes >= 9.2e18) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is larger than 8 EiB"));
  }
  return static_cast<int64_t>(bytes);
}

namespace {

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{1} << 34;  // 16 GiB if unknown
  return static_cast<int64_t>(pages) * page_size;
}

}  // namespace

absl::StatusOr<int64_t> MaxMemoryBytes() {
  const std::string flag = absl::GetFlag(FLAGS_max_memory);
  if (flag == "auto" || flag.empty()) return PhysicalMemoryBytes();
  absl::StatusOr<int64_t> bytes = ParseByteSize(flag);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--max_memory: ", bytes.status().message()));
  }
  return bytes;
}

absl::Status CheckMemory(int64_t bytes, absl::string_view what) {
  absl::StatusOr<int64_t> limit = MaxMemoryBytes();
  if (!limit.ok()) return limit.status();
  if (bytes <= *limit) return absl::OkStatus();
  const std::string flag = absl::GetFlag(FLAGS_max_memory);
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " needs ", FormatBytes(static_cast<double>(bytes)), ", more than --max_memory (",
      FormatBytes(static_cast<double>(*limit)),
      flag == "auto" || flag.empty() ? ": this machine's memory" : "", ")"));
}

std::optional<int64_t> DenseBytes(absl::Span<const int64_t> sizes, int64_t element_size) {
  int64_t bytes = element_size;
  for (int64_t size : sizes) {
    if (size <= 0) return 0;
    if (__builtin_mul_overflow(bytes, size, &bytes)) return std::nullopt;
  }
  return bytes;
}

}  // namespace kiln::tools
