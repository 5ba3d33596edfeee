// The fixed text at the top of every generated translation unit: includes,
// vector-math declarations, small helpers for the kernels, and the C layout
// of the host API (which must match host_api.h).
#ifndef KILN_BACKENDS_CPU_PRELUDE_H_
#define KILN_BACKENDS_CPU_PRELUDE_H_

#include <string>

namespace kiln::backends::cpu {

// Declares the float/double math functions that glibc's libmvec provides in
// vector form with `#pragma omp declare simd notinbranch`. glibc's headers
// only do that under -ffast-math; declaring them ourselves lets gcc call
// the vector variants under `#pragma omp simd` without relaxing IEEE
// semantics elsewhere (libmvec is accurate to a few ulp).
// The integer/NaN helpers come from codegen/c_prelude.h.
const std::string& CpuPrelude();

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_PRELUDE_H_
