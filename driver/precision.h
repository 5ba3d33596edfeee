// Running an float32 model in lower precision the way torch.autocast does
// (`kiln run --precision=bf16|fp16|tf32|fp32`):
//
//  * bf16 / fp16 (AutocastGraph): the ops autocast runs in lower precision
//    (convolutions, matmul/mm/bmm/addmm/linear/einsum, prelu) take their
//    float32 tensor operands cast to the narrow type; the ops autocast keeps
//    in float32 (softmax, log_softmax, layer_norm, group_norm, sum, prod,
//    cumsum, exp, log, pow, rsqrt, reciprocal, softplus, norm, ...) take
//    narrow operands cast back to float32; every other op runs in the type
//    its operands promote to. Weights (tensor constants) are converted once,
//    here, instead of being cast on every call. Outputs keep the type
//    autocast gives them.
//  * tf32: float32 everywhere, matmuls on TF32 tensor cores
//    (torch.set_float32_matmul_precision("high")).
//  * fp32: full float32 matmuls ("highest"); convolutions follow the
//    device's default (CUDA: TF32, as torch.backends.cudnn.allow_tf32).
//
// Dtypes are recomputed by shape propagation after each round of casts, so
// the rewrite sees what autocast would see at run time.
#ifndef KILN_DRIVER_PRECISION_H_
#define KILN_DRIVER_PRECISION_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/ir.h"
#include "support/dtype.h"

namespace kiln::driver {

enum class Precision { kFp32, kTf32, kBf16, kFp16 };

// "fp32", "tf32", "bf16", "fp16" (also "float32", "bfloat16", "float16").
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);
const char* PrecisionName(Precision p);

struct AutocastStats {
  int lower_ops = 0;            // ops that run in the narrow type
  int fp32_ops = 0;             // autocast's float32 ops that got float32 operands back
  int casts_inserted = 0;       // aten::to nodes added
  int constants_converted = 0;  // weights converted at compile time
};

// Rewrites `graph` for narrow type `dtype` (kBFloat16 or kFloat16) as
// described above. The graph keeps its inputs (float32 stays float32).
absl::StatusOr<AutocastStats> AutocastGraph(ir::Graph& graph, DType dtype);

// Applies `precision` before compiling `graph` for `device`: the autocast
// rewrite for bf16/fp16, the device's float32 matmul precision otherwise
// (devices registered by name; a device without TF32 refuses tf32).
absl::StatusOr<AutocastStats> ApplyPrecision(ir::Graph& graph, Precision precision, const std::string& device);

}  // namespace kiln::driver

#endif  // KILN_DRIVER_PRECISION_H_
