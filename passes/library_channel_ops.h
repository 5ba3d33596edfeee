// Squeeze-excite blocks as library calls: the global spatial mean and the
// per-channel gate multiply of a convolution's output become ops that a
// device's library runs on the convolution's own (channels-last) layout,
// so the whole block stays in library calls and no value is reordered
// between layouts around it:
//
//   %y = kiln::conv_post_ops(...)                       (depthwise, [N, C, H, W])
//   %m = aten::mean(%y, [2, 3], True)                   [N, C, 1, 1]
//   ... %s = kiln::conv_post_ops(...)                   (fc2 + gate activation, [N, C, 1, 1])
//   %z = aten::mul(%y, %s)                              [N, C, H, W]
// ->
//   %m = kiln::global_avg_pool(%y)
//   %z = kiln::channel_mul(%y, %s)
//
// Matched (float32, static shapes, 1 to 3 spatial dims), when the tensor
// operand is the result of an op the CPU's library computes channels-last
// (a convolution, max pooling, kiln::channel_mul): a value produced by a
// generated kernel stays with the generated mean and multiply, which fuse
// with their neighbours.
//   * aten::mean over exactly the spatial dims (any order or sign), no
//     dtype (ONNX's GlobalAveragePool and ReduceMean, torch's
//     x.mean((2, 3), keepdim=True)); without keepdim, the pooled
//     [N, C, 1, ...] value is reshaped to [N, C] (a view: the same bytes in
//     either layout);
//   * aten::adaptive_avg_pool1d/2d/3d to all-1 output sizes;
//   * aten::mul of that operand by a [N or 1, C, 1, ...] tensor, either
//     operand order (the gate broadcast over the spatial dims).
// Run after fuse_post_ops, so a multiply that fuses into its convolution as
// a binary post-op (the convolution's only use) is already gone.
// The new ops compute what they replace (their reference kernels run the
// replaced ops' kernels). Statistics: "global_avg_pools", "channel_muls".
#ifndef KILN_PASSES_LIBRARY_CHANNEL_OPS_H_
#define KILN_PASSES_LIBRARY_CHANNEL_OPS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

absl::StatusOr<bool> LibraryChannelOps(ir::Graph& graph, PassStatistics& stats);

// Registers "library_channel_ops". Not part of -O1/-O2: a device whose
// library runs the ops asks for it (wrapper::DeviceCodegen::
// PreLoweringPipeline); other devices would run them on the host.
absl::Status RegisterLibraryChannelOpsPass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_LIBRARY_CHANNEL_OPS_H_
