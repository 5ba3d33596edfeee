// The device-side helpers every generated CUDA kernel starts with: NaN-aware
// max/min, Python-style integer division, vector access types, and the
// warp/block reductions of the row kernels. Needs no header (NVRTC).
#ifndef KILN_BACKENDS_CUDA_KERNEL_PRELUDE_H_
#define KILN_BACKENDS_CUDA_KERNEL_PRELUDE_H_

#include <string>

namespace kiln::backends::cuda {

// The integer/NaN helpers come from codegen/c_prelude.h.
const std::string& CudaKernelPrelude();

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_KERNEL_PRELUDE_H_
