// The few CUDA driver, NVRTC and cuBLAS types and constants kiln uses,
// declared here so that nothing in kiln needs the CUDA headers or links a
// CUDA library: the functions are resolved at run time (cuda_loader.h). The
// values are the ABI of CUDA 12/13 (cuda.h, nvrtc.h, cublas_api.h).
#ifndef KILN_BACKENDS_CUDA_CUDA_API_H_
#define KILN_BACKENDS_CUDA_CUDA_API_H_

#include <cstddef>
#include <cstdint>

namespace kiln::backends::cuda {

// ---- driver API (libcuda.so.1)
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // NOLINT(runtime/int): the ABI's type
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
struct CUmod_st;
struct CUfunc_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;
using CUgraphNode = CUgraphNode_st*;

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorNotReady = 600;
inline constexpr CUresult kCudaErrorOutOfMemory = 2;

// CUdevice_attribute values.
enum CudaDeviceAttribute : int {
  kAttrMaxThreadsPerBlock = 1,
  kAttrMaxSharedMemoryPerBlock = 8,
  kAttrWarpSize = 10,
  kAttrMultiprocessorCount = 16,
  kAttrL2CacheSize = 38,
  kAttrComputeCapabilityMajor = 75,
  kAttrComputeCapabilityMinor = 76,
  kAttrMaxSharedMemoryPerBlockOptin = 97,
};

inline constexpr unsigned kStreamNonBlocking = 0x1;       // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDefault = 0x0;            // CU_EVENT_DEFAULT
inline constexpr unsigned kEventDisableTiming = 0x2;      // CU_EVENT_DISABLE_TIMING
inline constexpr int kFuncAttrMaxDynamicSharedBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
// CUstreamCaptureMode: the capturing thread may still call cuMemAlloc (the
// caching allocator grows during a capture; kiln keeps those blocks alive
// for the graph's lifetime).
inline constexpr int kStreamCaptureModeRelaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED

// ---- NVRTC (libnvrtc.so.N)
using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;
inline constexpr nvrtcResult kNvrtcSuccess = 0;

// ---- cuBLAS (libcublas.so.N)
using cublasStatus_t = int;
struct cublasContext;
using cublasHandle_t = cublasContext*;
using cublasOperation_t = int;
inline constexpr cublasStatus_t kCublasSuccess = 0;
inline constexpr cublasOperation_t kCublasOpN = 0;
inline constexpr cublasOperation_t kCublasOpT = 1;
inline constexpr int kCublasDefaultMath = 0;        // CUBLAS_DEFAULT_MATH (full fp32)
inline constexpr int kCublasTf32TensorOpMath = 3;   // CUBLAS_TF32_TENSOR_OP_MATH

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_API_H_
