#include "backends/cpu/env.h"

#include <cstdlib>
#include <cstring>

namespace kiln::backends::cpu::env {
namespace {

bool Equals(const char* var, const char* value) {
  const char* v = std::getenv(var);
  return v != nullptr && std::strcmp(v, value) == 0;
}

}  // namespace

std::optional<int> NumThreads() {
  static const std::optional<int> n = []() -> std::optional<int> {
    const char* v = std::getenv("KILN_NUM_THREADS");
    if (v == nullptr || *v == '\0') return std::nullopt;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > 4096) return std::nullopt;
    return static_cast<int>(n);
  }();
  return n;
}

bool LibraryDisabled() {
  static const bool b = Equals("KILN_CPU_LIBRARY", "0");
  return b;
}

bool LibraryVerbose() {
  static const bool b = Equals("KILN_CPU_LIBRARY_VERBOSE", "1");
  return b;
}

bool Profile() {
  static const bool b = Equals("KILN_CPU_PROFILE", "1");
  return b;
}

bool PackedCacheDisabled() {
  static const bool b = Equals("KILN_CPU_PACKED_CACHE", "0");
  return b;
}

bool WinogradDisabled() {
  static const bool b = Equals("KILN_CPU_WINOGRAD", "0");
  return b;
}

}  // namespace kiln::backends::cpu::env
