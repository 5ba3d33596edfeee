// The CUDA backend's environment switches, in one place. Each is read at
// every use (tests switch them between calls; a replayed CUDA graph reads
// none) unless marked "read once".
//
//   KILN_CUDA_DISABLE=1          the device unavailable (read once, when the
//                                libraries load)
//   KILN_CUDNN=0                 no cuDNN (read once, when the libraries load)
//   KILN_CUDA_GRAPHS=0           every call launches its steps (no CUDA graph)
//   KILN_CUDA_CHANNELS_LAST=0|1  the channels-last plan off / everywhere
//                                (unset: where measured faster)
//   KILN_CUDA_ATTENTION=0|1      the fused attention kernel never / always
//                                (unset: 16-bit graphs)
//   KILN_CUDA_DEPTHWISE=0        depthwise convolutions to cuDNN, not kiln's
//                                kernels
//   KILN_CUDA_TRANSPOSE_TILES=0  no shared-memory transpose tiles in
//                                pointwise kernels
//   KILN_CUDA_LT_GEMM=0          GEMMs without a bias through cuBLAS alone
//                                (read once)
//   KILN_CUDA_GEMM_AUTOTUNE=0    cuBLASLt's heuristic pick, no timed
//                                candidates (read once)
//   KILN_CUDA_GEMM_LOG=1         print each cuBLASLt plan's candidates
//   KILN_CUDNN_BACKEND=0         cuDNN's legacy API only (no graph API)
//   KILN_CUDNN_GRAPH_FUSED=0     no epilogues inside cuDNN's graph
//   KILN_CUDNN_GRAPH_PLANS=N     graph-API plans timed per shape (1-64)
//   KILN_CUDNN_FIND=0            the legacy API's heuristic algorithm, no
//                                search
//   KILN_CUDNN_FUSED=1           the legacy API's fused convolution + bias +
//                                activation
//   KILN_CUDNN_LOG=1             print the graph API's plans
//   KILN_NVRTC_OPTIONS="..."     extra NVRTC options, space-separated
//
// Where the libraries are found (KILN_CUDA_LIB_DIR, KILN_CUDA_DRIVER_LIB,
// KILN_CUDNN_LIB_DIR, CUDA_HOME, VIRTUAL_ENV) is cuda_loader.h's.
#ifndef KILN_BACKENDS_CUDA_CUDA_ENV_H_
#define KILN_BACKENDS_CUDA_CUDA_ENV_H_

#include <optional>
#include <string>
#include <vector>

namespace kiln::backends::cuda::env {

// A switch that forces a choice either way; unset leaves it to kiln.
enum class Force { kDefault, kOff, kOn };

bool CudaDisabled();
bool CudnnDisabled();
bool CudaGraphsOff();
Force ChannelsLast();
Force Attention();
bool DepthwiseKernelOff();
bool TransposeTilesOff();
bool LtGemmOff();
bool GemmAutotuneOff();
bool GemmLog();
bool CudnnGraphApiOff();
bool CudnnGraphFusedOff();
// KILN_CUDNN_GRAPH_PLANS when it is an integer >= 1 (capped at 64).
std::optional<int> CudnnGraphPlans();
bool CudnnFindOff();
bool CudnnLegacyFused();
bool CudnnLog();
std::vector<std::string> ExtraNvrtcOptions();

}  // namespace kiln::backends::cuda::env

#endif  // KILN_BACKENDS_CUDA_CUDA_ENV_H_
