// Compiled by cublas_api_constants_test with g++ against the installed
// cublasLt.h (which includes cublas_api.h): every cuBLAS and cuBLASLt
// constant and struct layout cuda_api.h declares matches the header (the
// test fails to compile otherwise). Not part of any library: kiln never
// includes the cuBLAS headers.
#include <cublasLt.h>

#include "backends/cuda/cuda_api.h"

namespace kc = kiln::backends::cuda;

static_assert(kc::kCublasSuccess == CUBLAS_STATUS_SUCCESS, "kCublasSuccess");
static_assert(kc::kCublasOpN == CUBLAS_OP_N, "kCublasOpN");
static_assert(kc::kCublasOpT == CUBLAS_OP_T, "kCublasOpT");
static_assert(kc::kCublasDefaultMath == CUBLAS_DEFAULT_MATH, "kCublasDefaultMath");
static_assert(kc::kCublasTf32TensorOpMath == CUBLAS_TF32_TENSOR_OP_MATH, "kCublasTf32TensorOpMath");
static_assert(kc::kCudaR32F == CUDA_R_32F, "kCudaR32F");
static_assert(kc::kCudaR16F == CUDA_R_16F, "kCudaR16F");
static_assert(kc::kCudaR16BF == CUDA_R_16BF, "kCudaR16BF");
static_assert(kc::kCublasCompute32F == CUBLAS_COMPUTE_32F, "kCublasCompute32F");
static_assert(kc::kCublasCompute32FFastTf32 == CUBLAS_COMPUTE_32F_FAST_TF32, "kCublasCompute32FFastTf32");
static_assert(kc::kCublasGemmDefault == CUBLAS_GEMM_DEFAULT, "kCublasGemmDefault");
static_assert(kc::kLtDescTransA == CUBLASLT_MATMUL_DESC_TRANSA, "kLtDescTransA");
static_assert(kc::kLtDescTransB == CUBLASLT_MATMUL_DESC_TRANSB, "kLtDescTransB");
static_assert(kc::kLtDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE, "kLtDescEpilogue");
static_assert(kc::kLtDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER, "kLtDescBiasPointer");
static_assert(kc::kLtEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT, "kLtEpilogueDefault");
static_assert(kc::kLtEpilogueBias == CUBLASLT_EPILOGUE_BIAS, "kLtEpilogueBias");
static_assert(kc::kLtPrefMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, "kLtPrefMaxWorkspaceBytes");
static_assert(kc::kLtPrefMinAlignmentABytes == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, "kLtPrefMinAlignmentABytes");
static_assert(kc::kLtPrefMinAlignmentABytes + 1 == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, "B alignment");
static_assert(kc::kLtPrefMinAlignmentABytes + 2 == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, "C alignment");
static_assert(kc::kLtPrefMinAlignmentABytes + 3 == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, "D alignment");
static_assert(kc::kLtLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, "kLtLayoutBatchCount");
static_assert(kc::kLtLayoutStridedBatchOffset == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
              "kLtLayoutStridedBatchOffset");
static_assert(sizeof(kc::CublasLtMatmulAlgo) == sizeof(cublasLtMatmulAlgo_t), "CublasLtMatmulAlgo");
static_assert(sizeof(kc::CublasLtHeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t),
              "CublasLtHeuristicResult");
static_assert(offsetof(kc::CublasLtHeuristicResult, workspace_size) ==
                  offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize),
              "CublasLtHeuristicResult::workspace_size");
static_assert(offsetof(kc::CublasLtHeuristicResult, state) == offsetof(cublasLtMatmulHeuristicResult_t, state),
              "CublasLtHeuristicResult::state");
