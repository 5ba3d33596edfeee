// The epilogue vocabulary of kiln's fused library ops (kiln::conv_post_ops,
// kiln::linear_post_ops): the elementwise steps that may follow a
// convolution or GEMM inside the same call, as oneDNN's post-ops and
// Inductor's mkldnn fusions do. A fused op carries its epilogue in three
// arguments,
//
//   str[] post_ops, float[] post_scalars, Tensor[] post_operands
//
// applied in order to the op's result `y`; each step takes its scalars and
// operands from the front of those lists:
//
//   relu          y = max(y, 0)
//   leaky_relu    y = y > 0 ? y : a * y            scalars: a
//   elu           y = y > 0 ? y : a * (exp(y) - 1) scalars: a
//   sigmoid       y = 1 / (1 + exp(-y))
//   tanh          y = tanh(y)
//   hardswish     y = y * clamp(y + 3, 0, 6) / 6
//   hardsigmoid   y = clamp(y + 3, 0, 6) / 6
//   silu          y = y * sigmoid(y)
//   gelu          y = y / 2 * (1 + erf(y / sqrt(2)))
//   gelu_tanh     y = y / 2 * (1 + tanh(sqrt(2/pi) * (y + 0.044715 y^3)))
//   clamp         y = min(max(y, lo), hi)           scalars: lo, hi
//   clamp_min     y = max(y, lo)                    scalars: lo
//   clamp_max     y = min(y, hi)                    scalars: hi
//   linear        y = a * y + b                     scalars: a, b
//   add           y = y + t                         operands: t (broadcasts to y)
//   mul           y = y * t                         operands: t (broadcasts to y)
//
// The graph pass that builds the fused ops (passes/fuse_post_ops.h), their
// reference kernels (runtime) and the CPU backend's library calls all read
// the lists through ParsePostOps, so this table is the one definition.
#ifndef KILN_IR_POST_OPS_H_
#define KILN_IR_POST_OPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::ir {

enum class PostOpKind : uint8_t {
  kRelu, kLeakyRelu, kElu, kSigmoid, kTanh, kHardswish, kHardsigmoid, kSilu, kGelu,
  kGeluTanh, kClamp, kClampMin, kClampMax, kLinear, kAdd, kMul,
};

struct PostOp {
  PostOpKind kind = PostOpKind::kRelu;
  std::vector<double> scalars;  // as many as the kind takes
  int operand = -1;             // index into post_operands (add, mul), else -1
};

// "relu", "clamp", ... (the names the lists use).
const char* PostOpName(PostOpKind kind);
// How many scalars / operands the kind takes.
int PostOpScalarCount(PostOpKind kind);
int PostOpOperandCount(PostOpKind kind);
// True for the steps that read a tensor operand (add, mul).
inline bool IsBinaryPostOp(PostOpKind kind) { return PostOpOperandCount(kind) > 0; }

// Decodes the three lists. InvalidArgument (naming the step) for an unknown
// name, a step without its scalars or operand, or left-over scalars or
// operands.
absl::StatusOr<std::vector<PostOp>> ParsePostOps(const std::vector<std::string>& names,
                                                 const std::vector<double>& scalars,
                                                 size_t num_operands);

// The inverse: appends `op`'s name and scalars (its operand is the caller's
// next post_operands entry).
void AppendPostOp(const PostOp& op, std::vector<std::string>* names, std::vector<double>* scalars);

}  // namespace kiln::ir

#endif  // KILN_IR_POST_OPS_H_
