// C++ source for one fused kernel of a schedule (DeviceCodegen::KernelSource
// of the CPU backend). The kernel is a `static void` function whose
// parameters are the kernel's `reads` (const pointers) then its `buffers`,
// each pointing at its storage base (see host_api.h). Each written buffer
// gets one loop nest: `#pragma omp parallel for` over the outer loops (when
// the work is large enough to pay for threads), `#pragma omp simd` over the
// innermost; reductions keep vectorizable accumulators.
#ifndef KILN_BACKENDS_CPU_KERNEL_CODEGEN_H_
#define KILN_BACKENDS_CPU_KERNEL_CODEGEN_H_

#include <string>

#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"
#include "lowering/schedule.h"

namespace kiln::backends::cpu {

// Loop nests with fewer elements than this run on one thread.
inline constexpr int64_t kParallelThreshold = 32768;

// The C function name of a kernel (a sanitized form of its name).
std::string KernelFunctionName(const std::string& kernel_name);

absl::StatusOr<std::string> CpuKernelSource(const lowering::LoopGraph& graph,
                                            const lowering::FusedKernel& kernel);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_KERNEL_CODEGEN_H_
