// kiln::attention (passes/fuse_attention.h) as a generated kernel: the
// program's own C++ (so -march=native and 16-wide libmvec exp apply), with
// every shape and stride a constant. Per (batch, block of 32 query rows) it
// streams blocks of up to 512 keys: the scores tile by oneDNN's sgemm (the
// host API's `sgemm`, host_api.h; inside the parallel region it runs on one
// thread), an online softmax over it (running max and sum, FlashAttention's
// rescaling) and the product with the value rows, accumulated in a [32, Dv]
// tile, so no [.., S, T] scores or probabilities ever exist; the blocks run
// in parallel on the pool.
#ifndef KILN_BACKENDS_CPU_ATTENTION_CODEGEN_H_
#define KILN_BACKENDS_CPU_ATTENTION_CODEGEN_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"

namespace kiln::backends::cpu {

struct AttentionShape {
  lowering::Layout q, kt, v, out;          // [.., S, D], [.., D, T], [.., T, Dv], [.., S, Dv]
  std::optional<lowering::Layout> mask;    // broadcasts to [.., S, T]
  double scale = 1.0;
};

// The kernel `static void <function>(const float* q, const float* kt,
// const float* v, const float* mask, float* out)` (buffer bases; mask may
// be null when there is none). Unimplemented for shapes it does not take
// (not float32, head dims above 512, mismatched dims, operands without a
// unit stride in their last two dims): the caller then runs the reference
// kernel.
absl::StatusOr<std::string> AttentionKernelSource(const std::string& function, const AttentionShape& shape);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_ATTENTION_CODEGEN_H_
