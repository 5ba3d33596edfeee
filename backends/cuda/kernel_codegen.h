// CUDA kernel source generation from the loop-level IR (the CUDA twin of
// backends/cpu/kernel_codegen): one NVRTC translation unit per fused kernel,
// with its launch configuration. See README.md ("Kernel codegen") for the
// kernel shapes:
//  - pointwise kernels: a grid-stride loop, each thread computing kLanes
//    consecutive elements of the innermost dimension with 16-byte vector
//    loads/stores where the accesses are contiguous and aligned, a scalar
//    path otherwise (tails, misaligned pointers, strided reads);
//  - row kernels (reductions whose reduced elements are contiguous, or too
//    few outputs to fill the GPU): one block per outer index; each member
//    of the kernel runs in `buffers` order over the row (warp shuffles and a
//    shared-memory block reduce), results stay in registers for the
//    epilogue (softmax, layer_norm);
//  - thread-per-output kernels (other reductions): each thread runs the
//    whole kernel for one outer index, looping over the reduced space.
#ifndef KILN_BACKENDS_CUDA_KERNEL_CODEGEN_H_
#define KILN_BACKENDS_CUDA_KERNEL_CODEGEN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"
#include "lowering/schedule.h"

namespace kiln::backends::cuda {

struct CudaLaunch {
  int64_t grid_x = 1, grid_y = 1, grid_z = 1;
  int block_x = 1, block_y = 1, block_z = 1;
  int shared_bytes = 0;  // dynamic shared memory (the generated kernels use static only)
};

struct CudaTarget {
  int sm_major = 9, sm_minor = 0;
  int multiprocessor_count = 132;
  int max_threads_per_block = 1024;
};

struct CudaKernelSource {
  std::string name;    // sanitized identifier of the extern "C" __global__ function
  std::string source;  // a complete NVRTC translation unit: no host headers, no #include
  CudaLaunch launch;
  // Parameters: one `T* __restrict__` per FusedKernel `reads` entry (const),
  // then per `buffers` entry, in KernelCallLine args order (as the CPU).
  // Each points at its buffer's storage base; sizes are baked in. Vector
  // accesses are taken only when the pointers are suitably aligned (checked
  // at run time), so any base address works.
};

absl::StatusOr<CudaKernelSource> GenerateCudaKernel(const lowering::LoopGraph& graph,
                                                    const lowering::FusedKernel& kernel,
                                                    const CudaTarget& target);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_KERNEL_CODEGEN_H_
