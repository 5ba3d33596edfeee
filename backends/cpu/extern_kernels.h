// Extern kernels the host runs when a compiled program calls back and the
// call is no prepared library call (library_calls.h): matmul-family float32
// ops the library call did not take through oneDNN's sgemm, everything else
// through the op's reference kernel (wrapper/host_fallback.h), its results
// copied into the outputs the wrapper planned.
#ifndef KILN_BACKENDS_CPU_EXTERN_KERNELS_H_
#define KILN_BACKENDS_CPU_EXTERN_KERNELS_H_

#include <cstdint>
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

// oneDNN's row-major sgemm (BLAS arguments; `KilnSgemmFn` of host_api.h):
// 0 on success, else the dnnl_status_t. The one way to oneDNN's GEMM for
// the matmul externs here and for generated kernels (the host API's
// `sgemm`), so a program library never links or names oneDNN itself.
int HostSgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_EXTERN_KERNELS_H_
