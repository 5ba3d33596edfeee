// The device-side helpers every generated CUDA kernel starts with: NaN-aware
// max/min, Python-style integer division, vector access types, and the
// warp/block reductions of the row kernels. Needs no header (NVRTC).
#ifndef KILN_DEVICES_CUDA_KERNEL_PRELUDE_H_
#define KILN_DEVICES_CUDA_KERNEL_PRELUDE_H_

namespace kiln::devices::cuda {

extern const char kCudaKernelPrelude[];

}  // namespace kiln::devices::cuda

#endif  // KILN_DEVICES_CUDA_KERNEL_PRELUDE_H_
