// Attention fusion: scaled dot-product attention as PyTorch's exporters
// write it becomes one op that a device runs as a tiled kernel, without
// materializing the [.., S, T] scores and probabilities:
//
//   %s = aten::matmul(%q, %kt)          q [.., S, D], kt [.., D, T]
//   %s = aten::mul(%s, c) / div(%s, c)  optional, c a constant number
//   %s = aten::add(%s, %mask)           optional, mask broadcasts to s
//   %p = aten::softmax(%s, -1, None)
//   %o = aten::matmul(%p, %v)           v [.., T, Dv]
// ->
//   %o = kiln::attention(%q, %kt, %v, %mask, scale)
//
// A constant scale applied to q just before (vit's q / sqrt(d)) folds into
// `scale` too. Every intermediate must have no other use; q, kt, v and the
// result must have static shapes, the same leading dims and one dtype:
// float32, float16 or bfloat16. With 16-bit operands the chain may leave
// their dtype around the softmax as autocast writes it: a float32 mask
// promotes the sum, `aten::to(%s, float32)` may precede the softmax, and a
// float32 softmax must be followed by `aten::to(%p, dtype)`; the fused op
// then means "softmax in float32, probabilities rounded to the operands'
// dtype" (a 16-bit softmax computes in float and rounds once: the same).
// kiln::attention's reference kernel computes the chain with the replaced
// ops' kernels. Statistics: "attention_fused".
#ifndef KILN_PASSES_FUSE_ATTENTION_H_
#define KILN_PASSES_FUSE_ATTENTION_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

struct FuseAttentionOptions {
  // Also torch.export's form: aten::bmm over [B*H, S, D] operands, the
  // scores reshaped to [B, H, S, T] for the scale, mask and softmax (an
  // eval-mode dropout after it, or core ATen's clone in its place, is
  // skipped) and back before the bmm with v;
  // the fused op then runs over [B, H, ...] views of q, kt and v and its
  // result is reshaped to the bmm's. Devices ask for it by the pass name
  // "fuse_attention_with_bmm" (CPU and CUDA do).
  bool bmm_form = false;
};

absl::StatusOr<bool> FuseAttention(ir::Graph& graph, PassStatistics& stats,
                                   const FuseAttentionOptions& options = FuseAttentionOptions());

// Registers "fuse_attention" (device-requested, like fuse_post_ops) and
// "fuse_attention_with_bmm" (bmm_form on: what CPU and CUDA request).
absl::Status RegisterFuseAttentionPass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_FUSE_ATTENTION_H_
