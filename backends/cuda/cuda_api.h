// The few CUDA driver, NVRTC, cuBLAS and cuDNN types and constants kiln
// uses, declared here so that nothing in kiln needs the CUDA headers or
// links a CUDA library: the functions are resolved at run time
// (cuda_loader.h). The values are the ABI of CUDA 12/13 (cuda.h, nvrtc.h,
// cublas_api.h) and cuDNN 9 (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h);
// cudnn_api_constants_test checks the cuDNN ones against cudnn_graph.h
// where the header is installed.
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
// cudaDataType (library_types.h) and cublasComputeType_t / cublasGemmAlgo_t.
inline constexpr int kCudaR32F = 0;
inline constexpr int kCudaR16F = 2;
inline constexpr int kCudaR16BF = 14;
inline constexpr int kCublasCompute32F = 68;        // CUBLAS_COMPUTE_32F: float accumulation
inline constexpr int kCublasGemmDefault = -1;       // CUBLAS_GEMM_DEFAULT

// ---- cuBLASLt (libcublasLt.so.N): matmuls with fused epilogues
struct cublasLtContext;
struct cublasLtMatmulDescOpaque;
struct cublasLtMatrixLayoutOpaque;
struct cublasLtMatmulPreferenceOpaque;
using cublasLtHandle_t = cublasLtContext*;
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque*;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque*;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque*;
// cublasLtMatmulAlgo_t and cublasLtMatmulHeuristicResult_t, as cublasLt.h lays them out.
struct CublasLtMatmulAlgo {
  uint64_t data[8];
};
struct CublasLtHeuristicResult {
  CublasLtMatmulAlgo algo;
  size_t workspace_size;
  cublasStatus_t state;
  float waves_count;
  int reserved[4];
};
inline constexpr int kCublasCompute32FFastTf32 = 77;  // CUBLAS_COMPUTE_32F_FAST_TF32
// cublasLtMatmulDescAttributes_t / cublasLtEpilogue_t / preference attributes.
inline constexpr int kLtDescTransA = 3;
inline constexpr int kLtDescTransB = 4;
inline constexpr int kLtDescEpilogue = 7;
inline constexpr int kLtDescBiasPointer = 8;
inline constexpr uint32_t kLtEpilogueDefault = 1;
inline constexpr uint32_t kLtEpilogueBias = 4;
inline constexpr int kLtPrefMaxWorkspaceBytes = 1;
inline constexpr int kLtPrefMinAlignmentABytes = 5;  // then B, C, D: 6, 7, 8
// cublasLtMatrixLayoutAttribute_t
inline constexpr int kLtLayoutBatchCount = 5;         // int32_t
inline constexpr int kLtLayoutStridedBatchOffset = 6;  // int64_t, elements

// ---- cuDNN 9 (libcudnn.so.9): the legacy convolution API
using cudnnStatus_t = int;
struct cudnnContext;
struct cudnnTensorStruct;
struct cudnnFilterStruct;
struct cudnnConvolutionStruct;
struct cudnnActivationStruct;
using cudnnHandle_t = cudnnContext*;
using cudnnTensorDescriptor_t = cudnnTensorStruct*;
using cudnnFilterDescriptor_t = cudnnFilterStruct*;
using cudnnConvolutionDescriptor_t = cudnnConvolutionStruct*;
using cudnnActivationDescriptor_t = cudnnActivationStruct*;
inline constexpr cudnnStatus_t kCudnnSuccess = 0;
// cudnnDataType_t
inline constexpr int kCudnnDataFloat = 0;
inline constexpr int kCudnnDataHalf = 2;
inline constexpr int kCudnnDataBfloat16 = 9;
inline constexpr int kCudnnTensorNchw = 0;          // cudnnTensorFormat_t
inline constexpr int kCudnnTensorNhwc = 1;
inline constexpr int kCudnnCrossCorrelation = 1;    // cudnnConvolutionMode_t
// cudnnMathType_t: DEFAULT permits tensor cores (TF32 for float data on
// Ampere and later); FMA forbids them (full float32).
inline constexpr int kCudnnDefaultMath = 0;
inline constexpr int kCudnnTensorOpMath = 1;  // tensor cores for 16-bit data
inline constexpr int kCudnnFmaMath = 3;
inline constexpr int kCudnnActivationRelu = 1;      // cudnnActivationMode_t
inline constexpr int kCudnnActivationIdentity = 5;
inline constexpr int kCudnnPropagateNan = 1;        // cudnnNanPropagation_t
// cudnnConvolutionFwdAlgo_t: the one algorithm cudnnConvolutionBiasActivationForward
// accepts with an identity activation.
inline constexpr int kCudnnFwdAlgoImplicitPrecompGemm = 1;
// cudnnConvolutionFwdAlgoPerf_t, as cudnn_cnn.h lays it out.
struct CudnnConvolutionFwdAlgoPerf {
  int algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

// ---- cuDNN 9's graph (backend) API, cudnn_graph.h (checked against the
// headers of cuDNN 9.6 and 9.19; cuDNN 8's cudnn_backend.h has the same
// values). Only what cudnn_graph_conv.cc uses.
using cudnnBackendDescriptor_t = void*;
// cudnnBackendDescriptorType_t
inline constexpr int kCudnnBackendConvolutionDescriptor = 1;
inline constexpr int kCudnnBackendEngineDescriptor = 2;
inline constexpr int kCudnnBackendEngineCfgDescriptor = 3;
inline constexpr int kCudnnBackendEngineHeurDescriptor = 4;
inline constexpr int kCudnnBackendExecutionPlanDescriptor = 5;
inline constexpr int kCudnnBackendOperationConvolutionForwardDescriptor = 10;
inline constexpr int kCudnnBackendOperationGraphDescriptor = 15;
inline constexpr int kCudnnBackendVariantPackDescriptor = 16;
inline constexpr int kCudnnBackendTensorDescriptor = 17;
inline constexpr int kCudnnBackendPointwiseDescriptor = 0;
inline constexpr int kCudnnBackendOperationPointwiseDescriptor = 13;
// cudnnBackendAttributeType_t
inline constexpr int kCudnnTypeHandle = 0;
inline constexpr int kCudnnTypeBoolean = 2;  // a C++ bool
inline constexpr int kCudnnTypeDataType = 1;
inline constexpr int kCudnnTypeInt64 = 3;
inline constexpr int kCudnnTypeFloat = 4;
inline constexpr int kCudnnTypeVoidPtr = 6;
inline constexpr int kCudnnTypeConvolutionMode = 7;
inline constexpr int kCudnnTypeHeurMode = 8;
inline constexpr int kCudnnTypeNumericalNote = 11;
inline constexpr int kCudnnTypePointwiseMode = 14;
inline constexpr int kCudnnTypeBackendDescriptor = 15;
// cudnnBackendAttributeName_t
inline constexpr int kCudnnAttrPointwiseMode = 0;
inline constexpr int kCudnnAttrPointwiseMathPrec = 1;
inline constexpr int kCudnnAttrPointwiseEluAlpha = 6;
inline constexpr int kCudnnAttrConvolutionCompType = 100;
inline constexpr int kCudnnAttrConvolutionConvMode = 101;
inline constexpr int kCudnnAttrConvolutionDilations = 102;
inline constexpr int kCudnnAttrConvolutionFilterStrides = 103;
inline constexpr int kCudnnAttrConvolutionPostPaddings = 104;
inline constexpr int kCudnnAttrConvolutionPrePaddings = 105;
inline constexpr int kCudnnAttrConvolutionSpatialDims = 106;
inline constexpr int kCudnnAttrEngineheurMode = 200;
inline constexpr int kCudnnAttrEngineheurOperationGraph = 201;
inline constexpr int kCudnnAttrEngineheurResults = 202;
inline constexpr int kCudnnAttrEnginecfgEngine = 300;
inline constexpr int kCudnnAttrExecutionPlanHandle = 400;
inline constexpr int kCudnnAttrExecutionPlanEngineConfig = 401;
inline constexpr int kCudnnAttrExecutionPlanWorkspaceSize = 402;
inline constexpr int kCudnnAttrOperationConvolutionForwardAlpha = 700;
inline constexpr int kCudnnAttrOperationConvolutionForwardBeta = 701;
inline constexpr int kCudnnAttrOperationConvolutionForwardConvDesc = 702;
inline constexpr int kCudnnAttrOperationConvolutionForwardW = 703;
inline constexpr int kCudnnAttrOperationConvolutionForwardX = 704;
inline constexpr int kCudnnAttrOperationConvolutionForwardY = 705;
inline constexpr int kCudnnAttrOperationPointwisePwDescriptor = 750;
inline constexpr int kCudnnAttrOperationPointwiseXDesc = 751;
inline constexpr int kCudnnAttrOperationPointwiseBDesc = 752;
inline constexpr int kCudnnAttrOperationPointwiseYDesc = 753;
inline constexpr int kCudnnAttrOperationgraphHandle = 800;
inline constexpr int kCudnnAttrOperationgraphOps = 801;
inline constexpr int kCudnnAttrTensorByteAlignment = 900;
inline constexpr int kCudnnAttrTensorDataType = 901;
inline constexpr int kCudnnAttrTensorDimensions = 902;
inline constexpr int kCudnnAttrTensorStrides = 903;
inline constexpr int kCudnnAttrTensorUniqueId = 906;
inline constexpr int kCudnnAttrTensorIsVirtual = 907;
inline constexpr int kCudnnAttrVariantPackUniqueIds = 1000;
inline constexpr int kCudnnAttrVariantPackDataPointers = 1001;
inline constexpr int kCudnnAttrVariantPackWorkspace = 1003;
inline constexpr int kCudnnAttrEngineGlobalIndex = 1301;
inline constexpr int kCudnnAttrEngineNumericalNote = 1303;
// cudnnBackendNumericalNote_t
inline constexpr int kCudnnNumericalNoteTensorCore = 0;
inline constexpr int kCudnnNumericalNoteDownConvertInputs = 1;
// cudnnPointwiseMode_t: the epilogue steps cudnn_graph_conv.cc maps
// ir/post_ops.h's chain onto (same math as post_ops.h's table).
inline constexpr int kCudnnPointwiseAdd = 0;
inline constexpr int kCudnnPointwiseReluFwd = 100;
inline constexpr int kCudnnPointwiseTanhFwd = 101;
inline constexpr int kCudnnPointwiseSigmoidFwd = 102;
inline constexpr int kCudnnPointwiseEluFwd = 103;
inline constexpr int kCudnnPointwiseGeluFwd = 104;
inline constexpr int kCudnnPointwiseSwishFwd = 106;
inline constexpr int kCudnnPointwiseGeluApproxTanhFwd = 107;
// cudnnBackendHeurMode_t
inline constexpr int kCudnnHeurModeFallback = 2;
inline constexpr int kCudnnHeurModeA = 3;

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_API_H_
