// Matmul-family externs on the GPU: aten::mm, matmul (2-D, batched 3-D,
// N-D @ 2-D with contiguous leading dims, and N-D @ N-D whose batch dims
// collapse into one strided batch, a broadcast side included), bmm, linear
// and addmm. Row-major operands map onto column-major cuBLAS by computing
// C^T = B^T A^T; an operand may be row- or column-major strided. Each GEMM
// goes to cuBLASLt first (cublaslt_gemm.h: a plan per shape, its algorithm
// timed), a bias along the output's columns (linear, addmm with beta = 1)
// added by its bias epilogue (one GEMM, no extra pass); what Lt does not
// take (a broadcast batch side, beta != 0) goes to cuBLAS: sgemm for float32
// (TF32 when the handle's math mode says so), cublasGemmEx with float
// accumulation for float16/bfloat16 (operands and result of one dtype).
// Other biases are broadcast into the output by a rank-1 GEMM with a vector
// of ones, then accumulated into (no kernel of our own). Calls that fit none
// of this return nullopt and run on the host instead.
#ifndef KILN_BACKENDS_CUDA_CUBLAS_MATMUL_H_
#define KILN_BACKENDS_CUDA_CUBLAS_MATMUL_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/cuda_api.h"
#include "lowering/loop_ir.h"

namespace kiln::backends::cuda {

// A device buffer: element `layout.offset + sum(i * stride)` lives at
// base + that * element size.
struct DeviceView {
  CUdeviceptr base = 0;
  lowering::Layout layout;
};

struct GemmContext {
  cublasHandle_t handle = nullptr;
  // cuBLASLt for matmuls with a bias (the bias added by the GEMM's
  // epilogue); null without cuBLASLt. Lt calls run on `stream` with
  // `workspace` (kWorkspaceBytes, kept by the program) and TF32 as `tf32`.
  cublasLtHandle_t lt = nullptr;
  CUstream stream = nullptr;
  bool tf32 = false;
  CUdeviceptr workspace = 0;
  // Inside a CUDA graph capture: nothing may synchronize (cuBLASLt plans
  // made now are not timed).
  bool capturing = false;
  // A contiguous copy of a view (kept until the call returns), for batched
  // operands whose batch dims do not collapse into one stride; null: none.
  std::function<absl::StatusOr<DeviceView>(const DeviceView&)> contiguous;
  // At least n ones of `dtype` (float32, float16, bfloat16) on the device.
  std::function<absl::StatusOr<CUdeviceptr>(int64_t n, DType dtype)> ones;
};

// Row-major, strided-batched C = alpha * A @ B + beta * C (A: m x k with
// leading dimension lda, B: k x n, C: m x n; strides between batch items,
// 0 to reuse one operand).
absl::Status SgemmRowMajor(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, float alpha, CUdeviceptr a,
                           int64_t lda, int64_t stride_a, CUdeviceptr b, int64_t ldb, int64_t stride_b, float beta,
                           CUdeviceptr c, int64_t ldc, int64_t stride_c, int64_t batch);

// Workspace bytes a GemmContext's `workspace` holds (cuBLASLt).
inline constexpr int64_t kLtWorkspaceBytes = int64_t{32} << 20;

// True for the ops TryCublasExtern may take (by name only).
bool IsCublasOp(const std::string& op);

std::optional<absl::Status> TryCublasExtern(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                            const std::vector<DeviceView>& buffer_args,
                                            const std::vector<DeviceView>& outputs, const GemmContext& context);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUBLAS_MATMUL_H_
