#include "lowering/elementwise.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "support/promotion.h"
#include "support/status.h"

namespace kiln::lowering {

absl::StatusOr<Operand> GetOperand(const LowerContext& ctx, const std::string& name) {
  Operand op;
  if (ctx.IsTensorArg(name)) {
    ASSIGN_OR_RETURN(TensorRef t, ctx.TensorArg(name));
    op.tensor = std::move(t);
    return op;
  }
  std::optional<ir::IValue> c = ctx.Const(name);
  if (!c || !c->isNumber()) {
    return ctx.Unimplemented(absl::StrCat("argument '", name, "' is neither a tensor nor a number"));
  }
  op.scalar = *c;
  return op;
}

ExprPtr Literal(double v, DType dtype) {
  if (IsFloatingPoint(dtype)) return FloatConst(v, dtype);
  if (dtype == DType::kBool) return IntConst(v != 0, DType::kBool);
  return IntConst(static_cast<int64_t>(v), dtype);
}

DType ComputeDType(DType d) {
  return (d == DType::kFloat16 || d == DType::kBFloat16) ? DType::kFloat32 : d;
}

namespace {

DTypeOperand PromotionOperand(const Operand& op) {
  if (op.tensor) {
    return {op.tensor->layout.dtype, op.tensor->layout.sizes.empty()
                                         ? OperandClass::kZeroDim
                                         : OperandClass::kDimensioned};
  }
  DType d = op.scalar.isBool()  ? DType::kBool
            : op.scalar.isInt() ? DType::kInt64
                                : DType::kFloat64;
  return {d, OperandClass::kScalar};
}

}  // namespace

absl::StatusOr<bool> LowerElementwise(LowerContext& ctx, const std::vector<std::string>& args,
                                      ComputeKind kind, const ElementwiseFn& fn) {
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  std::vector<Operand> operands;
  for (const std::string& name : args) {
    ASSIGN_OR_RETURN(Operand op, GetOperand(ctx, name));
    operands.push_back(std::move(op));
  }
  DType compute = out.dtype;
  if (kind == ComputeKind::kBool) {
    compute = DType::kBool;
  } else if (kind == ComputeKind::kPromoted) {
    std::vector<DTypeOperand> classes;
    for (const Operand& op : operands) classes.push_back(PromotionOperand(op));
    absl::StatusOr<DType> promoted = ResultType(classes);
    if (!promoted.ok()) return ctx.Invalid(promoted.status().message());
    compute = *promoted;
  }
  if (IsComplex(compute)) return false;  // the reference kernel handles complex
  compute = ComputeDType(compute);
  std::vector<ExprPtr> exprs;
  for (const Operand& op : operands) {
    if (op.tensor) {
      ASSIGN_OR_RETURN(ExprPtr load, ctx.LoadBroadcast(*op.tensor, out.sizes));
      exprs.push_back(Cast(load, compute));
    } else if (op.scalar.isInt() && IsIntegral(compute, /*include_bool=*/false)) {
      exprs.push_back(IntConst(op.scalar.toInt(), compute));  // exact beyond 2^53
    } else {
      exprs.push_back(Literal(op.scalar.toNumberAsDouble(), compute));
    }
  }
  ASSIGN_OR_RETURN(ExprPtr body, fn(exprs, compute));
  if (!body) return false;
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, body));
  return true;
}

}  // namespace kiln::lowering
