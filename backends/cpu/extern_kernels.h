// Extern kernels the host runs when a compiled program calls back and the
// call is no prepared library call (library_calls.h): matmul-family float32
// ops the library call did not take through oneDNN's sgemm, everything else
// through the op's reference kernel (wrapper/host_fallback.h), its results
// copied into the outputs the wrapper planned.
#ifndef KILN_BACKENDS_CPU_EXTERN_KERNELS_H_
#define KILN_BACKENDS_CPU_EXTERN_KERNELS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "lowering/loop_ir.h"
#include "support/tensor.h"

namespace kiln::backends::cpu {

// `buffer_args`: views of the call's buffer arguments, in argument order;
// `outputs`: views of its output buffers (written in place).
absl::Status RunExternKernel(const std::string& op, const std::vector<lowering::ExternArg>& args,
                             const std::vector<Tensor>& buffer_args, std::vector<Tensor>& outputs);

// True for the ops TryBlas takes (for tests/reports).
bool IsBlasOp(const std::string& op);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_EXTERN_KERNELS_H_
