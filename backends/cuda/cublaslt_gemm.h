// One GEMM through cuBLASLt, in cuBLAS's column-major terms:
// D[m, n] = alpha * op(A)[m, k] @ op(B)[k, n] (+ bias[m] added to every
// column by the bias epilogue), strided over `batch` items. The plan
// (descriptors and the chosen algorithm) is kept per shape, operation,
// leading dims, strides, epilogue and pointer alignment for the process.
//
// Choosing the algorithm: cuBLASLt's heuristic ranks up to
// kLtCandidates algorithms; when the first call of a shape runs outside
// a CUDA graph capture, each candidate is timed on the call's own
// operands (cuda events, best of kLtTimedRuns after a warm-up run) and
// the fastest kept, as cuBLAS's own benchmarking mode and Inductor's
// max-autotune do. `KILN_CUDA_GEMM_AUTOTUNE=0` keeps the heuristic's first
// pick; a plan first made under capture keeps it too.
// `KILN_CUDA_GEMM_LOG=1` prints each plan's candidates and times to stderr.
#ifndef KILN_BACKENDS_CUDA_CUBLASLT_GEMM_H_
#define KILN_BACKENDS_CUDA_CUBLASLT_GEMM_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "backends/cuda/cuda_api.h"

namespace kiln::backends::cuda {

struct GemmContext;

inline constexpr int kLtCandidates = 8;
inline constexpr int kLtTimedRuns = 3;

struct LtGemmCall {
  int data_type = kCudaR32F;  // of A, B and D: kCudaR32F, kCudaR16F, kCudaR16BF
  int compute_type = kCublasCompute32F;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  cublasOperation_t op_a = kCublasOpN, op_b = kCublasOpN;
  CUdeviceptr a = 0, b = 0, d = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  // Elements between batch items (used when batch > 1; each must be > 0).
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  CUdeviceptr bias = 0;  // 0: no bias epilogue
  float alpha = 1.0f;
};

// Whether the heuristic's candidates are timed (KILN_CUDA_GEMM_AUTOTUNE).
bool GemmAutotune();

// How many cuBLASLt plans with an algorithm this process has made, and how
// many of them timed their candidates (for tests and reports).
struct LtPlanCounts {
  int64_t plans = 0, timed = 0;
};
LtPlanCounts LtPlansMade();

// Runs `call` on `ctx.stream`; nullopt when cuBLASLt is missing, the shape
// does not fit its int32/int64 fields, a batch stride is 0, or no
// algorithm takes it (the caller then uses cuBLAS).
std::optional<absl::Status> RunLtGemm(const GemmContext& ctx, const LtGemmCall& call);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUBLASLT_GEMM_H_
