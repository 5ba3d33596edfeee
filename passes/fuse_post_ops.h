// Epilogue fusion for library ops: a convolution or GEMM and the elementwise
// chain that follows it become ONE op that a device's convolution / GEMM
// library runs with fused post-ops (oneDNN's attr post-ops, Inductor's
// mkldnn _convolution_pointwise), so the result is written once instead of
// once per step:
//
//   %y = aten::convolution(%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
//   %r = aten::add(%y, %skip, 1)
//   %z = aten::relu(%r)
// ->
//   %z = kiln::conv_post_ops(%x, %w, %b, [1, 1], [1, 1, 1, 1], [1, 1], 1,
//                            ["add", "relu"], [], [%skip])
//
// Anchors (float32 results with static shapes; FusePostOpsOptions below
// widens this to float16/bfloat16 convolutions): aten::convolution (not
// transposed), aten::conv1d/2d/3d with int padding, kiln::conv_nd ->
// kiln::conv_post_ops; aten::linear, aten::addmm (beta = alpha = 1, a 1-D
// bias) and aten::matmul / aten::mm by a constant 2-D weight ->
// kiln::linear_post_ops.
// A fused op already made is an anchor too (the pass is idempotent and
// extends chains).
//
// Steps (each consumes the running value, which must have no other use and
// keeps its dtype and shape; the vocabulary is ir/post_ops.h):
//   aten::relu, sigmoid, tanh, hardswish, hardsigmoid, silu, gelu
//   (approximate constant), leaky_relu, elu (scale = input_scale = 1),
//   clamp / clamp_min / clamp_max / hardtanh / relu6 with constant bounds;
//   x * sigmoid(x) (silu) and x * (erf(x / c) + 1) * 0.5 with c = sqrt(2)
//   (gelu, the ONNX exporter's form), whatever their operand order;
//   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) (gelu_tanh, as
//   both ONNX exporters write GPT-2's: x^3 as pow(x, 3) or x * x * x, the
//   0.5 on x or on the product, commutative operands in any order; every
//   intermediate used only inside the pattern);
//   first, for a GEMM, a reshape of its result (the exporters' [M, N] ->
//   [B, S, N] before the MLP's activation): the steps after it apply to the
//   GEMM's [M, N] result and the reshape moves after the fused op (only
//   when a step follows, and no tensor-operand step, which would broadcast
//   against the other shape);
//   add / sub / mul / div by a constant number (or a one-element constant
//   tensor): linear steps;
//   add / mul by a tensor that broadcasts to the value (alpha 1): add / mul
//   steps with that tensor as an operand (a residual, a gate).
// Folded into the weights instead (convolutions whose weight and bias are
// constants, before any other step): aten::batch_norm in inference mode
// with constant parameters, and add / mul by a constant per-output-channel
// tensor ([C, 1, ...] / [1, C, 1, ...]).
//
// Division by a constant becomes multiplication by its reciprocal (one
// rounding of difference); everything else computes what the chain did
// (the fused ops' reference kernels apply the replaced ops' own kernels).
// Statistics: "ops_fused" (anchors rewritten), "post_ops_fused" (steps),
// "constants_folded" (steps folded into weights).
#ifndef KILN_PASSES_FUSE_POST_OPS_H_
#define KILN_PASSES_FUSE_POST_OPS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

struct FusePostOpsOptions {
  // GEMM anchors (kiln::linear_post_ops); false: convolutions only.
  bool gemms = true;
  // Convolution chains whose values are float16/bfloat16 too (every step
  // keeps the anchor's dtype; folding into weights stays float32-only).
  bool narrow_floats = false;
  // A convolution with a bias and no step becomes kiln::conv_post_ops with
  // an empty chain (the bias in the library call's epilogue) when only
  // convolutions, or adds / muls (residual / gate operands of another
  // convolution's epilogue), read its result: its value can then stay in
  // the library's layout (CUDA's channels-last plan: resnet's downsample
  // convolutions). Other readers (a transpose, a norm) keep the plain op,
  // whose bias the generated consumer kernel can absorb.
  bool bias_only_convs = false;
};

absl::StatusOr<bool> FusePostOps(ir::Graph& graph, PassStatistics& stats,
                                 const FusePostOpsOptions& options = FusePostOpsOptions());

// Registers "fuse_post_ops" (default options) and "fuse_conv_post_ops"
// (convolutions only, narrow floats and bias-only convolutions too: the CUDA device, whose cuDNN
// convolutions take an epilogue kernel and whose GEMMs stay cuBLAS calls).
// Not part of -O1/-O2: a device whose library runs the fused ops asks for
// it (wrapper::DeviceCodegen::PreLoweringPipeline); other devices would
// run them on the host.
absl::Status RegisterFusePostOpsPass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_FUSE_POST_OPS_H_
