// Start-up registration for every binary and test that compiles or runs
// graphs: the per-op facts that live above ir/ (reference kernels from the
// runtime, shape functions from the passes) are installed into
// ir::BuiltinOps(). Device implementations register themselves separately
// (each backend's Register*Backend(); //backends:builtin registers all of
// them), because the driver only finds devices by name.
//
//   RETURN_IF_ERROR(kiln::driver::Initialize());
#ifndef KILN_DRIVER_INITIALIZE_H_
#define KILN_DRIVER_INITIALIZE_H_

#include "absl/status/status.h"

namespace kiln::driver {

// Idempotent and thread-safe; the first call does the work and every call
// returns its status (an error is a bug in kiln's own tables).
absl::Status Initialize();

}  // namespace kiln::driver

#endif  // KILN_DRIVER_INITIALIZE_H_
