#include "backends/cpu/threads.h"

#include <omp.h>

#include "backends/cpu/env.h"

namespace kiln::backends::cpu {

int DefaultNumThreads() {
  static const int threads = env::NumThreads().value_or(omp_get_max_threads());
  return threads;
}

ScopedNumThreads::ScopedNumThreads(int n) : previous_(omp_get_max_threads()) {
  if (n > 0 && n != previous_) omp_set_num_threads(n);
}

ScopedNumThreads::~ScopedNumThreads() {
  if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
}

}  // namespace kiln::backends::cpu
