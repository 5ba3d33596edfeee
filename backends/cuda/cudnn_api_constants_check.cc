// Compiled by cudnn_api_constants_test with g++ against the installed
// cudnn_graph.h: every cuDNN graph-API constant cuda_api.h declares has the
// header's value (the test fails to compile otherwise). Not part of any
// library: it needs the cuDNN headers, which kiln never includes.
#include <cudnn_graph.h>

#include "backends/cuda/cuda_api.h"

namespace kc = kiln::backends::cuda;

static_assert(kc::kCudnnBackendConvolutionDescriptor == CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "kCudnnBackendConvolutionDescriptor");
static_assert(kc::kCudnnBackendEngineDescriptor == CUDNN_BACKEND_ENGINE_DESCRIPTOR, "kCudnnBackendEngineDescriptor");
static_assert(kc::kCudnnBackendEngineCfgDescriptor == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "kCudnnBackendEngineCfgDescriptor");
static_assert(kc::kCudnnBackendEngineHeurDescriptor == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "kCudnnBackendEngineHeurDescriptor");
static_assert(kc::kCudnnBackendExecutionPlanDescriptor == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "kCudnnBackendExecutionPlanDescriptor");
static_assert(kc::kCudnnBackendOperationConvolutionForwardDescriptor == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "kCudnnBackendOperationConvolutionForwardDescriptor");
static_assert(kc::kCudnnBackendOperationGraphDescriptor == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "kCudnnBackendOperationGraphDescriptor");
static_assert(kc::kCudnnBackendVariantPackDescriptor == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "kCudnnBackendVariantPackDescriptor");
static_assert(kc::kCudnnBackendTensorDescriptor == CUDNN_BACKEND_TENSOR_DESCRIPTOR, "kCudnnBackendTensorDescriptor");
static_assert(kc::kCudnnTypeHandle == CUDNN_TYPE_HANDLE, "kCudnnTypeHandle");
static_assert(kc::kCudnnTypeDataType == CUDNN_TYPE_DATA_TYPE, "kCudnnTypeDataType");
static_assert(kc::kCudnnTypeInt64 == CUDNN_TYPE_INT64, "kCudnnTypeInt64");
static_assert(kc::kCudnnTypeFloat == CUDNN_TYPE_FLOAT, "kCudnnTypeFloat");
static_assert(kc::kCudnnTypeVoidPtr == CUDNN_TYPE_VOID_PTR, "kCudnnTypeVoidPtr");
static_assert(kc::kCudnnTypeConvolutionMode == CUDNN_TYPE_CONVOLUTION_MODE, "kCudnnTypeConvolutionMode");
static_assert(kc::kCudnnTypeHeurMode == CUDNN_TYPE_HEUR_MODE, "kCudnnTypeHeurMode");
static_assert(kc::kCudnnTypeNumericalNote == CUDNN_TYPE_NUMERICAL_NOTE, "kCudnnTypeNumericalNote");
static_assert(kc::kCudnnTypeBackendDescriptor == CUDNN_TYPE_BACKEND_DESCRIPTOR, "kCudnnTypeBackendDescriptor");
static_assert(kc::kCudnnAttrConvolutionCompType == CUDNN_ATTR_CONVOLUTION_COMP_TYPE, "kCudnnAttrConvolutionCompType");
static_assert(kc::kCudnnAttrConvolutionConvMode == CUDNN_ATTR_CONVOLUTION_CONV_MODE, "kCudnnAttrConvolutionConvMode");
static_assert(kc::kCudnnAttrConvolutionDilations == CUDNN_ATTR_CONVOLUTION_DILATIONS, "kCudnnAttrConvolutionDilations");
static_assert(kc::kCudnnAttrConvolutionFilterStrides == CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, "kCudnnAttrConvolutionFilterStrides");
static_assert(kc::kCudnnAttrConvolutionPostPaddings == CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, "kCudnnAttrConvolutionPostPaddings");
static_assert(kc::kCudnnAttrConvolutionPrePaddings == CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, "kCudnnAttrConvolutionPrePaddings");
static_assert(kc::kCudnnAttrConvolutionSpatialDims == CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, "kCudnnAttrConvolutionSpatialDims");
static_assert(kc::kCudnnAttrEngineheurMode == CUDNN_ATTR_ENGINEHEUR_MODE, "kCudnnAttrEngineheurMode");
static_assert(kc::kCudnnAttrEngineheurOperationGraph == CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, "kCudnnAttrEngineheurOperationGraph");
static_assert(kc::kCudnnAttrEngineheurResults == CUDNN_ATTR_ENGINEHEUR_RESULTS, "kCudnnAttrEngineheurResults");
static_assert(kc::kCudnnAttrEnginecfgEngine == CUDNN_ATTR_ENGINECFG_ENGINE, "kCudnnAttrEnginecfgEngine");
static_assert(kc::kCudnnAttrExecutionPlanHandle == CUDNN_ATTR_EXECUTION_PLAN_HANDLE, "kCudnnAttrExecutionPlanHandle");
static_assert(kc::kCudnnAttrExecutionPlanEngineConfig == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, "kCudnnAttrExecutionPlanEngineConfig");
static_assert(kc::kCudnnAttrExecutionPlanWorkspaceSize == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, "kCudnnAttrExecutionPlanWorkspaceSize");
static_assert(kc::kCudnnAttrOperationConvolutionForwardAlpha == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, "kCudnnAttrOperationConvolutionForwardAlpha");
static_assert(kc::kCudnnAttrOperationConvolutionForwardBeta == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, "kCudnnAttrOperationConvolutionForwardBeta");
static_assert(kc::kCudnnAttrOperationConvolutionForwardConvDesc == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, "kCudnnAttrOperationConvolutionForwardConvDesc");
static_assert(kc::kCudnnAttrOperationConvolutionForwardW == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, "kCudnnAttrOperationConvolutionForwardW");
static_assert(kc::kCudnnAttrOperationConvolutionForwardX == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, "kCudnnAttrOperationConvolutionForwardX");
static_assert(kc::kCudnnAttrOperationConvolutionForwardY == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, "kCudnnAttrOperationConvolutionForwardY");
static_assert(kc::kCudnnAttrOperationgraphHandle == CUDNN_ATTR_OPERATIONGRAPH_HANDLE, "kCudnnAttrOperationgraphHandle");
static_assert(kc::kCudnnAttrOperationgraphOps == CUDNN_ATTR_OPERATIONGRAPH_OPS, "kCudnnAttrOperationgraphOps");
static_assert(kc::kCudnnAttrTensorByteAlignment == CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, "kCudnnAttrTensorByteAlignment");
static_assert(kc::kCudnnAttrTensorDataType == CUDNN_ATTR_TENSOR_DATA_TYPE, "kCudnnAttrTensorDataType");
static_assert(kc::kCudnnAttrTensorDimensions == CUDNN_ATTR_TENSOR_DIMENSIONS, "kCudnnAttrTensorDimensions");
static_assert(kc::kCudnnAttrTensorStrides == CUDNN_ATTR_TENSOR_STRIDES, "kCudnnAttrTensorStrides");
static_assert(kc::kCudnnAttrTensorUniqueId == CUDNN_ATTR_TENSOR_UNIQUE_ID, "kCudnnAttrTensorUniqueId");
static_assert(kc::kCudnnAttrVariantPackUniqueIds == CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, "kCudnnAttrVariantPackUniqueIds");
static_assert(kc::kCudnnAttrVariantPackDataPointers == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, "kCudnnAttrVariantPackDataPointers");
static_assert(kc::kCudnnAttrVariantPackWorkspace == CUDNN_ATTR_VARIANT_PACK_WORKSPACE, "kCudnnAttrVariantPackWorkspace");
static_assert(kc::kCudnnAttrEngineGlobalIndex == CUDNN_ATTR_ENGINE_GLOBAL_INDEX, "kCudnnAttrEngineGlobalIndex");
static_assert(kc::kCudnnAttrEngineNumericalNote == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, "kCudnnAttrEngineNumericalNote");
static_assert(kc::kCudnnNumericalNoteTensorCore == CUDNN_NUMERICAL_NOTE_TENSOR_CORE, "kCudnnNumericalNoteTensorCore");
static_assert(kc::kCudnnNumericalNoteDownConvertInputs == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, "kCudnnNumericalNoteDownConvertInputs");
static_assert(kc::kCudnnBackendPointwiseDescriptor == CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "kCudnnBackendPointwiseDescriptor");
static_assert(kc::kCudnnBackendOperationPointwiseDescriptor == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "kCudnnBackendOperationPointwiseDescriptor");
static_assert(kc::kCudnnTypeBoolean == CUDNN_TYPE_BOOLEAN, "kCudnnTypeBoolean");
static_assert(kc::kCudnnTypePointwiseMode == CUDNN_TYPE_POINTWISE_MODE, "kCudnnTypePointwiseMode");
static_assert(kc::kCudnnAttrPointwiseMode == CUDNN_ATTR_POINTWISE_MODE, "kCudnnAttrPointwiseMode");
static_assert(kc::kCudnnAttrPointwiseMathPrec == CUDNN_ATTR_POINTWISE_MATH_PREC, "kCudnnAttrPointwiseMathPrec");
static_assert(kc::kCudnnAttrPointwiseEluAlpha == CUDNN_ATTR_POINTWISE_ELU_ALPHA, "kCudnnAttrPointwiseEluAlpha");
static_assert(kc::kCudnnAttrOperationPointwisePwDescriptor == CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, "kCudnnAttrOperationPointwisePwDescriptor");
static_assert(kc::kCudnnAttrOperationPointwiseXDesc == CUDNN_ATTR_OPERATION_POINTWISE_XDESC, "kCudnnAttrOperationPointwiseXDesc");
static_assert(kc::kCudnnAttrOperationPointwiseBDesc == CUDNN_ATTR_OPERATION_POINTWISE_BDESC, "kCudnnAttrOperationPointwiseBDesc");
static_assert(kc::kCudnnAttrOperationPointwiseYDesc == CUDNN_ATTR_OPERATION_POINTWISE_YDESC, "kCudnnAttrOperationPointwiseYDesc");
static_assert(kc::kCudnnAttrTensorIsVirtual == CUDNN_ATTR_TENSOR_IS_VIRTUAL, "kCudnnAttrTensorIsVirtual");
static_assert(kc::kCudnnPointwiseAdd == CUDNN_POINTWISE_ADD, "kCudnnPointwiseAdd");
static_assert(kc::kCudnnPointwiseReluFwd == CUDNN_POINTWISE_RELU_FWD, "kCudnnPointwiseReluFwd");
static_assert(kc::kCudnnPointwiseTanhFwd == CUDNN_POINTWISE_TANH_FWD, "kCudnnPointwiseTanhFwd");
static_assert(kc::kCudnnPointwiseSigmoidFwd == CUDNN_POINTWISE_SIGMOID_FWD, "kCudnnPointwiseSigmoidFwd");
static_assert(kc::kCudnnPointwiseEluFwd == CUDNN_POINTWISE_ELU_FWD, "kCudnnPointwiseEluFwd");
static_assert(kc::kCudnnPointwiseGeluFwd == CUDNN_POINTWISE_GELU_FWD, "kCudnnPointwiseGeluFwd");
static_assert(kc::kCudnnPointwiseSwishFwd == CUDNN_POINTWISE_SWISH_FWD, "kCudnnPointwiseSwishFwd");
static_assert(kc::kCudnnPointwiseGeluApproxTanhFwd == CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, "kCudnnPointwiseGeluApproxTanhFwd");
static_assert(kc::kCudnnHeurModeFallback == CUDNN_HEUR_MODE_FALLBACK, "kCudnnHeurModeFallback");
static_assert(kc::kCudnnHeurModeA == CUDNN_HEUR_MODE_A, "kCudnnHeurModeA");
static_assert(kc::kCudnnDataFloat == CUDNN_DATA_FLOAT, "kCudnnDataFloat");
static_assert(kc::kCudnnDataHalf == CUDNN_DATA_HALF, "kCudnnDataHalf");
static_assert(kc::kCudnnDataBfloat16 == CUDNN_DATA_BFLOAT16, "kCudnnDataBfloat16");
static_assert(kc::kCudnnCrossCorrelation == CUDNN_CROSS_CORRELATION, "kCudnnCrossCorrelation");
static_assert(kc::kCudnnSuccess == CUDNN_STATUS_SUCCESS, "kCudnnSuccess");
static_assert(sizeof(kc::cudnnBackendDescriptor_t) == sizeof(cudnnBackendDescriptor_t), "descriptor");
