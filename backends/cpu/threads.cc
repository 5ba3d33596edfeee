#include "backends/cpu/threads.h"

#include <omp.h>

#include <cstdlib>
#include <string>

namespace kiln::backends::cpu {

int DefaultNumThreads() {
  static const int threads = [] {
    const char* v = std::getenv("KILN_NUM_THREADS");
    if (v != nullptr && *v != '\0') {
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (*end == '\0' && n > 0 && n <= 4096) return static_cast<int>(n);
    }
    return omp_get_max_threads();
  }();
  return threads;
}

ScopedNumThreads::ScopedNumThreads(int n) : previous_(omp_get_max_threads()) {
  if (n > 0 && n != previous_) omp_set_num_threads(n);
}

ScopedNumThreads::~ScopedNumThreads() {
  if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
}

}  // namespace kiln::backends::cpu
