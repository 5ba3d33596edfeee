// Run-time loading of the CUDA driver (libcuda.so.1), NVRTC and cuBLAS with
// dlopen: kiln links no CUDA library, so one binary builds and runs on a
// machine without a GPU, where the loader reports why CUDA is unavailable.
//
//   const CudaLibraries& cuda = LoadCudaLibraries();
//   if (!cuda.driver_status.ok()) ...            // "libcuda.so.1: not found"
//   RETURN_IF_ERROR(CuCheck(cuda.driver.cuCtxSynchronize(), "cuCtxSynchronize"));
//
// Each library loads independently (NVRTC works without a GPU). Search
// order for NVRTC and cuBLAS: $KILN_CUDA_LIB_DIR, the default loader path,
// $CUDA_HOME/lib64, /usr/local/cuda/lib64 (sonames .13 then .12). The
// driver is libcuda.so.1 from the loader path, or $KILN_CUDA_DRIVER_LIB
// (tests resolve the toolkit's stub with it). cuDNN (libcudnn.so.9) comes
// from $KILN_CUDNN_LIB_DIR, the same directories, or the nvidia-cudnn
// Python wheels (site-packages/nvidia/cudnn/lib); KILN_CUDNN=0 leaves it
// unloaded (convolutions then use kiln's own kernels + cuBLAS).
#ifndef KILN_BACKENDS_CUDA_CUDA_LOADER_H_
#define KILN_BACKENDS_CUDA_CUDA_LOADER_H_

#include <string>

#include "absl/status/status.h"
#include "backends/cuda/cuda_api.h"

namespace kiln::backends::cuda {

struct CudaDriverApi {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream) = nullptr;  // NOLINT(runtime/int)
  CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamQuery)(CUstream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**) = nullptr;
  // CUDA graphs (stream capture, replay).
  CUresult (*cuStreamBeginCapture)(CUstream, int) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;  // NOLINT
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
  CUresult (*cuGraphGetNodes)(CUgraph, CUgraphNode*, size_t*) = nullptr;
};

struct NvrtcApi {
  const char* (*nvrtcGetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*nvrtcVersion)(int*, int*) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*) = nullptr;
  // PTX output (compute_XY targets); used by latency probes.
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*) = nullptr;
};

struct CublasApi {
  cublasStatus_t (*cublasCreate)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*cublasDestroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*cublasSetStream)(cublasHandle_t, CUstream) = nullptr;
  cublasStatus_t (*cublasSetMathMode)(cublasHandle_t, int) = nullptr;
  cublasStatus_t (*cublasSgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                const float*, const float*, int, const float*, int, const float*, float*,
                                int) = nullptr;
  cublasStatus_t (*cublasSgemmStridedBatched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                              int, int, const float*, const float*, int, long long,  // NOLINT
                                              const float*, int, long long, const float*, float*, int,  // NOLINT
                                              long long, int) = nullptr;  // NOLINT(runtime/int)
  // Mixed precision: float16/bfloat16 operands, float accumulation.
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                 const void*, int, int, const void*, int, int, const void*, void*, int, int, int,
                                 int) = nullptr;
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                               const void*, const void*, int, int, long long,  // NOLINT
                                               const void*, int, int, long long, const void*, void*, int, int,  // NOLINT
                                               long long, int, int, int) = nullptr;  // NOLINT(runtime/int)
};

struct CublasLtApi {
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t*) = nullptr;
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t*, int, int) = nullptr;
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t) = nullptr;
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t, int, const void*, size_t) = nullptr;
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t*, int, uint64_t, uint64_t, int64_t) = nullptr;
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t) = nullptr;
  cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t, int, const void*, size_t) = nullptr;
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t*) = nullptr;
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t) = nullptr;
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t, int, const void*, size_t) = nullptr;
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                                   cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                   cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                                   CublasLtHeuristicResult*, int*) = nullptr;
  cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                                   cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*,
                                   const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                                   const CublasLtMatmulAlgo*, void*, size_t, CUstream) = nullptr;
};

// cuDNN 9's legacy convolution API and its graph API (libcudnn.so.9, which loads its
// sub-libraries itself; kiln preloads them from the same directory).
struct CudnnApi {
  size_t (*cudnnGetVersion)() = nullptr;
  const char* (*cudnnGetErrorString)(cudnnStatus_t) = nullptr;
  cudnnStatus_t (*cudnnCreate)(cudnnHandle_t*) = nullptr;
  cudnnStatus_t (*cudnnDestroy)(cudnnHandle_t) = nullptr;
  cudnnStatus_t (*cudnnSetStream)(cudnnHandle_t, CUstream) = nullptr;
  cudnnStatus_t (*cudnnCreateTensorDescriptor)(cudnnTensorDescriptor_t*) = nullptr;
  cudnnStatus_t (*cudnnSetTensorNdDescriptor)(cudnnTensorDescriptor_t, int, int, const int*, const int*) = nullptr;
  cudnnStatus_t (*cudnnDestroyTensorDescriptor)(cudnnTensorDescriptor_t) = nullptr;
  cudnnStatus_t (*cudnnCreateFilterDescriptor)(cudnnFilterDescriptor_t*) = nullptr;
  cudnnStatus_t (*cudnnSetFilterNdDescriptor)(cudnnFilterDescriptor_t, int, int, int, const int*) = nullptr;
  cudnnStatus_t (*cudnnDestroyFilterDescriptor)(cudnnFilterDescriptor_t) = nullptr;
  cudnnStatus_t (*cudnnCreateConvolutionDescriptor)(cudnnConvolutionDescriptor_t*) = nullptr;
  cudnnStatus_t (*cudnnSetConvolutionNdDescriptor)(cudnnConvolutionDescriptor_t, int, const int*, const int*,
                                                   const int*, int, int) = nullptr;
  cudnnStatus_t (*cudnnSetConvolutionGroupCount)(cudnnConvolutionDescriptor_t, int) = nullptr;
  cudnnStatus_t (*cudnnSetConvolutionMathType)(cudnnConvolutionDescriptor_t, int) = nullptr;
  cudnnStatus_t (*cudnnDestroyConvolutionDescriptor)(cudnnConvolutionDescriptor_t) = nullptr;
  cudnnStatus_t (*cudnnCreateActivationDescriptor)(cudnnActivationDescriptor_t*) = nullptr;
  cudnnStatus_t (*cudnnSetActivationDescriptor)(cudnnActivationDescriptor_t, int, int, double) = nullptr;
  cudnnStatus_t (*cudnnDestroyActivationDescriptor)(cudnnActivationDescriptor_t) = nullptr;
  cudnnStatus_t (*cudnnFindConvolutionForwardAlgorithmEx)(cudnnHandle_t, cudnnTensorDescriptor_t, const void*,
                                                          cudnnFilterDescriptor_t, const void*,
                                                          cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t,
                                                          void*, int, int*, CudnnConvolutionFwdAlgoPerf*, void*,
                                                          size_t) = nullptr;
  cudnnStatus_t (*cudnnGetConvolutionForwardAlgorithm_v7)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                          cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t,
                                                          cudnnTensorDescriptor_t, int, int*,
                                                          CudnnConvolutionFwdAlgoPerf*) = nullptr;
  cudnnStatus_t (*cudnnGetConvolutionForwardWorkspaceSize)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                           cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t,
                                                           cudnnTensorDescriptor_t, int, size_t*) = nullptr;
  cudnnStatus_t (*cudnnConvolutionForward)(cudnnHandle_t, const void*, cudnnTensorDescriptor_t, const void*,
                                           cudnnFilterDescriptor_t, const void*, cudnnConvolutionDescriptor_t, int,
                                           void*, size_t, const void*, cudnnTensorDescriptor_t, void*) = nullptr;
  cudnnStatus_t (*cudnnConvolutionBiasActivationForward)(cudnnHandle_t, const void*, cudnnTensorDescriptor_t,
                                                         const void*, cudnnFilterDescriptor_t, const void*,
                                                         cudnnConvolutionDescriptor_t, int, void*, size_t,
                                                         const void*, cudnnTensorDescriptor_t, const void*,
                                                         cudnnTensorDescriptor_t, const void*,
                                                         cudnnActivationDescriptor_t, cudnnTensorDescriptor_t,
                                                         void*) = nullptr;
  cudnnStatus_t (*cudnnAddTensor)(cudnnHandle_t, const void*, cudnnTensorDescriptor_t, const void*, const void*,
                                  cudnnTensorDescriptor_t, void*) = nullptr;
  // The graph (backend) API (cudnn_graph_conv.h); attribute names, types and
  // descriptor types are the ints of cuda_api.h.
  cudnnStatus_t (*cudnnBackendCreateDescriptor)(int, cudnnBackendDescriptor_t*) = nullptr;
  cudnnStatus_t (*cudnnBackendDestroyDescriptor)(cudnnBackendDescriptor_t) = nullptr;
  cudnnStatus_t (*cudnnBackendFinalize)(cudnnBackendDescriptor_t) = nullptr;
  cudnnStatus_t (*cudnnBackendSetAttribute)(cudnnBackendDescriptor_t, int, int, int64_t, const void*) = nullptr;
  cudnnStatus_t (*cudnnBackendGetAttribute)(cudnnBackendDescriptor_t, int, int, int64_t, int64_t*, void*) = nullptr;
  cudnnStatus_t (*cudnnBackendExecute)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t) = nullptr;
};

struct CudaLibraries {
  // OK when the library loaded, its functions resolved and (driver) cuInit
  // succeeded; otherwise the reason, e.g. "libcuda.so.1 not found (no NVIDIA
  // driver on this machine)".
  absl::Status driver_status;
  absl::Status nvrtc_status;
  absl::Status cublas_status;
  absl::Status cudnn_status;
  absl::Status cublaslt_status;
  CudaDriverApi driver;
  NvrtcApi nvrtc;
  CublasApi cublas;
  CublasLtApi cublaslt;
  CudnnApi cudnn;
  int driver_version = 0;  // e.g. 13000
  int nvrtc_major = 0, nvrtc_minor = 0;
  std::string nvrtc_path;   // where NVRTC was found
  std::string cublas_path;  // where cuBLAS was found
  std::string cublaslt_path;
  std::string cudnn_path;   // where cuDNN was found
  size_t cudnn_version = 0;  // e.g. 91900
};

// Loads once per process (thread-safe); never fails, read the statuses.
const CudaLibraries& LoadCudaLibraries();

// A driver error as a Status: "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE
// (invalid argument)". OK for kCudaSuccess.
absl::Status CuCheck(CUresult result, const char* what);
absl::Status NvrtcCheck(nvrtcResult result, const char* what);
absl::Status CublasCheck(cublasStatus_t status, const char* what);
absl::Status CudnnCheck(cudnnStatus_t status, const char* what);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_LOADER_H_
