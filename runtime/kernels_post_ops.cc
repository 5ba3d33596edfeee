// ApplyPostOps (kernels_nn.h): the reference semantics of the fused library
// ops' epilogues, composed from the unfused ops' own kernels.
#include "absl/strings/str_cat.h"
#include "runtime/kernels.h"
#include "runtime/kernels_nn.h"
#include "support/status.h"

namespace kiln::runtime::nn {
namespace {

using ir::PostOpKind;

absl::StatusOr<Tensor> Step(const ir::PostOp& p, const Tensor& y, const std::vector<Tensor>& operands) {
  UnaryParams params;
  switch (p.kind) {
    case PostOpKind::kRelu: return Unary(UnaryOp::kRelu, y);
    case PostOpKind::kSigmoid: return Unary(UnaryOp::kSigmoid, y);
    case PostOpKind::kTanh: return Unary(UnaryOp::kTanh, y);
    case PostOpKind::kHardswish: return Unary(UnaryOp::kHardswish, y);
    case PostOpKind::kHardsigmoid: return Unary(UnaryOp::kHardsigmoid, y);
    case PostOpKind::kSilu: return Unary(UnaryOp::kSilu, y);
    case PostOpKind::kGelu: return Unary(UnaryOp::kGelu, y);
    case PostOpKind::kGeluTanh: return Unary(UnaryOp::kGeluTanh, y);
    case PostOpKind::kLeakyRelu:
      params.negative_slope = p.scalars[0];
      return Unary(UnaryOp::kLeakyRelu, y, params);
    case PostOpKind::kElu:
      params.alpha = p.scalars[0];
      return Unary(UnaryOp::kElu, y, params);
    case PostOpKind::kClamp: return Clamp(y, Operand::Double(p.scalars[0]), Operand::Double(p.scalars[1]));
    case PostOpKind::kClampMin: return Clamp(y, Operand::Double(p.scalars[0]), std::nullopt);
    case PostOpKind::kClampMax: return Clamp(y, std::nullopt, Operand::Double(p.scalars[0]));
    case PostOpKind::kLinear: {
      // a * y + b as the two ops it replaces (each rounds to y's dtype).
      Tensor r = y;
      if (p.scalars[0] != 1.0) {
        ASSIGN_OR_RETURN(r, Binary(BinaryOp::kMul, Operand::FromTensor(r), Operand::Double(p.scalars[0])));
      }
      if (p.scalars[1] != 0.0) {
        ASSIGN_OR_RETURN(r, Binary(BinaryOp::kAdd, Operand::FromTensor(r), Operand::Double(p.scalars[1])));
      }
      return r;
    }
    case PostOpKind::kAdd:
    case PostOpKind::kMul: {
      if (p.operand < 0 || static_cast<size_t>(p.operand) >= operands.size()) {
        return absl::InvalidArgumentError("the step has no operand");
      }
      const BinaryOp b = p.kind == PostOpKind::kAdd ? BinaryOp::kAdd : BinaryOp::kMul;
      return Binary(b, Operand::FromTensor(y), Operand::FromTensor(operands[static_cast<size_t>(p.operand)]));
    }
  }
  return absl::InvalidArgumentError("unknown step");
}

}  // namespace

absl::StatusOr<Tensor> ApplyPostOps(const std::string& op, Tensor y, const std::vector<ir::PostOp>& post_ops,
                                    const std::vector<Tensor>& operands) {
  const DType dtype = y.dtype();
  const std::vector<int64_t> sizes = y.sizes();
  for (size_t i = 0; i < post_ops.size(); ++i) {
    absl::StatusOr<Tensor> next = Step(post_ops[i], y, operands);
    if (!next.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": post-op ", i, " (", ir::PostOpName(post_ops[i].kind),
                                                     "): ", next.status().message()));
    }
    if (next->dtype() != dtype || next->sizes() != sizes) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": post-op ", i, " (", ir::PostOpName(post_ops[i].kind),
                                                     ") changes the result's dtype or shape"));
    }
    y = *std::move(next);
  }
  return y;
}

}  // namespace kiln::runtime::nn
