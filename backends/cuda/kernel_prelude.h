// The device-side helpers every generated CUDA kernel starts with: NaN-aware
// max/min, Python-style integer division, vector access types, and the
// warp/block reductions of the row kernels. Needs no header (NVRTC).
#ifndef KILN_BACKENDS_CUDA_KERNEL_PRELUDE_H_
#define KILN_BACKENDS_CUDA_KERNEL_PRELUDE_H_

namespace kiln::backends::cuda {

extern const char kCudaKernelPrelude[];

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_KERNEL_PRELUDE_H_
