// Activation lowerings, written as the formulas PyTorch documents, for the
// activations without a decomposition (gelu, silu and hardswish arrive
// decomposed: passes::PrepareForLowering).
#include <string>
#include <vector>

#include "lowering/elementwise.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

using Exprs = std::vector<ExprPtr>;

ExprPtr Add(ExprPtr a, ExprPtr b) { return Binary(ExprOp::kAdd, std::move(a), std::move(b)); }
ExprPtr Mul(ExprPtr a, ExprPtr b) { return Binary(ExprOp::kMul, std::move(a), std::move(b)); }

// The activation `fn(x, dtype, numeric args...)` over argument "self".
LoweringFn Activation(std::vector<std::string> number_args,
                      std::function<absl::StatusOr<ExprPtr>(const ExprPtr&, DType,
                                                            const std::vector<double>&)> fn) {
  return [number_args, fn](LowerContext& ctx) -> absl::StatusOr<bool> {
    std::vector<double> values;
    for (const std::string& name : number_args) {
      ASSIGN_OR_RETURN(double v, ctx.DoubleArg(name));
      values.push_back(v);
    }
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    if (!IsFloatingPoint(out.dtype)) return false;  // integer activations: the reference kernel
    return LowerElementwise(ctx, {"self"}, ComputeKind::kResult,
                            [&](const Exprs& a, DType t) { return fn(a[0], t, values); });
  };
}

ExprPtr Hardsigmoid(const ExprPtr& x, DType t) {
  ExprPtr clamped = Binary(ExprOp::kMin, Binary(ExprOp::kMax, Add(x, Literal(3, t)), Literal(0, t)),
                           Literal(6, t));
  return Binary(ExprOp::kDiv, clamped, Literal(6, t));
}

ExprPtr Softplus(const ExprPtr& x, DType t, double beta, double threshold) {
  ExprPtr bx = beta == 1.0 ? x : Mul(x, Literal(beta, t));
  ExprPtr soft = Unary(ExprOp::kLog1p, Unary(ExprOp::kExp, bx));
  if (beta != 1.0) soft = Binary(ExprOp::kDiv, soft, Literal(beta, t));
  return Where(Binary(ExprOp::kGt, bx, Literal(threshold, t)), x, soft);
}

}  // namespace

LoweringFn LowerHardsigmoid() {
  return Activation(
      {}, [](const ExprPtr& x, DType d, const std::vector<double>&) { return Hardsigmoid(x, d); });
}

LoweringFn LowerLeakyRelu() {
  return Activation(
      {"negative_slope"}, [](const ExprPtr& x, DType d, const std::vector<double>& v) {
        return Where(Binary(ExprOp::kGt, x, Literal(0, d)), x, Mul(x, Literal(v[0], d)));
      });
}

LoweringFn LowerElu() {
  return Activation({"alpha", "scale", "input_scale"}, [](const ExprPtr& x, DType d,
                                                          const std::vector<double>& v) {
    ExprPtr neg = Mul(Unary(ExprOp::kExpm1, Mul(x, Literal(v[2], d))), Literal(v[0] * v[1], d));
    return Where(Binary(ExprOp::kGt, x, Literal(0, d)), Mul(x, Literal(v[1], d)), neg);
  });
}

LoweringFn LowerSelu() {
  return Activation({}, [](const ExprPtr& x, DType d, const std::vector<double>&) {
    const double alpha = 1.6732632423543772848170429916717;
    const double scale = 1.0507009873554804934193349852946;
    return Where(Binary(ExprOp::kGt, x, Literal(0, d)), Mul(x, Literal(scale, d)),
                 Mul(Unary(ExprOp::kExpm1, x), Literal(alpha * scale, d)));
  });
}

LoweringFn LowerSoftplus() {
  return Activation({"beta", "threshold"},
                    [](const ExprPtr& x, DType d, const std::vector<double>& v) {
                      return Softplus(x, d, v[0], v[1]);
                    });
}

LoweringFn LowerMish() {
  return Activation({}, [](const ExprPtr& x, DType d, const std::vector<double>&) {
    return Mul(x, Unary(ExprOp::kTanh, Softplus(x, d, 1.0, 20.0)));
  });
}

// log_sigmoid(x) = -softplus(-x), stable for large |x|.
LoweringFn LowerLogSigmoid() {
  return Activation({}, [](const ExprPtr& x, DType d, const std::vector<double>&) {
    return Unary(ExprOp::kNeg, Softplus(Unary(ExprOp::kNeg, x), d, 1.0, 20.0));
  });
}

LoweringFn LowerHardtanh() {
  return Activation(
      {"min_val", "max_val"}, [](const ExprPtr& x, DType d, const std::vector<double>& v) {
        return Binary(ExprOp::kMin, Binary(ExprOp::kMax, x, Literal(v[0], d)), Literal(v[1], d));
      });
}

LoweringFn LowerRelu6() {
  return Activation({}, [](const ExprPtr& x, DType d, const std::vector<double>&) {
    return Binary(ExprOp::kMin, Binary(ExprOp::kMax, x, Literal(0, d)), Literal(6, d));
  });
}

LoweringFn LowerThreshold() {
  return Activation({"threshold", "value"},
                    [](const ExprPtr& x, DType d, const std::vector<double>& v) {
                      return Where(Binary(ExprOp::kGt, x, Literal(v[0], d)), x, Literal(v[1], d));
                    });
}

}  // namespace kiln::lowering
