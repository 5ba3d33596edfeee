// Registers every device implementation built into kiln (the CPU and CUDA;
// CUDA registers even without a GPU and then reports itself unavailable).
// Binaries that want all of them call this after driver::Initialize();
// a binary that links only some backends calls their own Register*Backend().
#ifndef KILN_BACKENDS_BUILTIN_H_
#define KILN_BACKENDS_BUILTIN_H_

#include "absl/status/status.h"

namespace kiln::backends {

// Idempotent; the CPU's failure is an error, CUDA's is not (a machine
// without the CUDA driver still compiles for the CPU).
absl::Status RegisterBuiltinBackends();

}  // namespace kiln::backends

#endif  // KILN_BACKENDS_BUILTIN_H_
