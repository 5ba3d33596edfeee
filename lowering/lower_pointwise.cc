// Pointwise lowerings: arithmetic, comparisons, logical ops, where, clamp,
// casts, unary math and fill factories.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "lowering/elementwise.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

using Exprs = std::vector<ExprPtr>;

LoweringFn Unary(ExprOp op) {
  return [op](LowerContext& ctx) {
    return LowerElementwise(ctx, {"self"}, ComputeKind::kResult,
                            [op](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              return lowering::Unary(op, a[0]);
                            });
  };
}

// A unary op given as a function of its (compute-typed) operand.
LoweringFn UnaryFn(std::function<ExprPtr(const ExprPtr&, DType)> fn) {
  return [fn](LowerContext& ctx) {
    return LowerElementwise(ctx, {"self"}, ComputeKind::kResult,
                            [fn](const Exprs& a, DType t) -> absl::StatusOr<ExprPtr> {
                              return fn(a[0], t);
                            });
  };
}

LoweringFn BinaryOp(ExprOp op, ComputeKind kind = ComputeKind::kResult,
                    const char* rhs = "other") {
  return [op, kind, rhs](LowerContext& ctx) {
    return LowerElementwise(ctx, {"self", rhs}, kind,
                            [op](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              return Binary(op, a[0], a[1]);
                            });
  };
}

// add/sub (and rsub, with the operands swapped): self op alpha * other.
LoweringFn AddSub(ExprOp op, bool reversed) {
  return [op, reversed](LowerContext& ctx) -> absl::StatusOr<bool> {
    std::vector<std::string> args = {"self", "other"};
    bool has_alpha = ctx.HasArg("alpha");
    if (has_alpha) args.push_back("alpha");
    return LowerElementwise(ctx, args, ComputeKind::kResult,
                            [&](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              ExprPtr lhs = reversed ? a[1] : a[0];
                              ExprPtr rhs = reversed ? a[0] : a[1];
                              bool unit = !has_alpha || (a[2]->op == ExprOp::kIntConst
                                                             ? a[2]->int_value == 1
                                                             : a[2]->float_value == 1.0);
                              if (!unit) rhs = Binary(ExprOp::kMul, rhs, a[2]);
                              return Binary(op, lhs, rhs);
                            });
  };
}

LoweringFn Div() {
  return [](LowerContext& ctx) -> absl::StatusOr<bool> {
    std::string mode;
    if (ctx.HasArg("rounding_mode") && !ctx.IsNone("rounding_mode")) {
      ASSIGN_OR_RETURN(mode, ctx.StringArg("rounding_mode"));
    }
    if (!mode.empty() && mode != "trunc" && mode != "floor") return ctx.Invalid("bad rounding_mode");
    // Integer true division computes in float (the output dtype); rounded
    // integer division stays integral.
    return LowerElementwise(ctx, {"self", "other"}, ComputeKind::kResult,
                            [&](const Exprs& a, DType t) -> absl::StatusOr<ExprPtr> {
                              if (mode == "floor") return Binary(ExprOp::kFloorDiv, a[0], a[1]);
                              ExprPtr q = Binary(ExprOp::kDiv, a[0], a[1]);
                              if (mode == "trunc") {
                                if (!IsFloatingPoint(t)) return ExprPtr();  // C division
                                q = lowering::Unary(ExprOp::kTrunc, q);
                              }
                              return q;
                            });
  };
}

LoweringFn Pow() {
  return [](LowerContext& ctx) {
    return LowerElementwise(ctx, {"self", "exponent"}, ComputeKind::kResult,
                            [](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              // Small integer exponents as products (Inductor does the same):
                              // pow(x, 3) is gpt2's gelu, where a vector powf costs more
                              // than the rest of the kernel.
                              const Expr& e = *a[1];
                              const std::optional<int64_t> n =
                                  e.op == ExprOp::kIntConst ? std::optional<int64_t>(e.int_value)
                                  : e.op == ExprOp::kFloatConst && (e.float_value == 2.0 || e.float_value == 3.0 ||
                                                                    e.float_value == 4.0)
                                      ? std::optional<int64_t>(static_cast<int64_t>(e.float_value))
                                      : std::nullopt;
                              if (n == 2) return Binary(ExprOp::kMul, a[0], a[0]);
                              if (n == 3) return Binary(ExprOp::kMul, Binary(ExprOp::kMul, a[0], a[0]), a[0]);
                              if (n == 4) {
                                ExprPtr square = Binary(ExprOp::kMul, a[0], a[0]);
                                return Binary(ExprOp::kMul, square, square);
                              }
                              return Binary(ExprOp::kPow, a[0], a[1]);
                            });
  };
}

LoweringFn WhereOp() {
  return [](LowerContext& ctx) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(TensorRef cond, ctx.TensorArg("condition"));
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    ASSIGN_OR_RETURN(ExprPtr c, ctx.LoadBroadcast(cond, out.sizes));
    c = Cast(c, DType::kBool);
    return LowerElementwise(ctx, {"self", "other"}, ComputeKind::kResult,
                            [&](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              return Where(c, a[0], a[1]);
                            });
  };
}

LoweringFn MaskedFill() {
  return [](LowerContext& ctx) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(TensorRef mask, ctx.TensorArg("mask"));
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    ASSIGN_OR_RETURN(ExprPtr m, ctx.LoadBroadcast(mask, out.sizes));
    m = Cast(m, DType::kBool);
    return LowerElementwise(ctx, {"self", "value"}, ComputeKind::kResult,
                            [&](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              return Where(m, a[1], a[0]);
                            });
  };
}

// clamp/clip/clamp_min/clamp_max with optional scalar or tensor bounds.
LoweringFn Clamp(bool has_min, bool has_max) {
  return [has_min, has_max](LowerContext& ctx) -> absl::StatusOr<bool> {
    std::vector<std::string> args = {"self"};
    bool use_min = has_min && !ctx.IsNone("min");
    bool use_max = has_max && !ctx.IsNone("max");
    if (use_min) args.push_back("min");
    if (use_max) args.push_back("max");
    return LowerElementwise(ctx, args, ComputeKind::kResult,
                            [&](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              ExprPtr x = a[0];
                              size_t next = 1;
                              if (use_min) x = Binary(ExprOp::kMax, x, a[next++]);
                              if (use_max) x = Binary(ExprOp::kMin, x, a[next++]);
                              return x;
                            });
  };
}

// to/type_as/_to_copy: the node's output dtype says what to convert to.
LoweringFn CastOp() {
  return [](LowerContext& ctx) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    if (out.sizes != self.layout.sizes) return ctx.Invalid("cast changes the shape");
    if (out.dtype == self.layout.dtype && out.device == self.layout.device) {
      ctx.BindTensor(ctx.node().output(0), self);  // `to` returns self unchanged
      return true;
    }
    if (out.device != self.layout.device) return false;
    ASSIGN_OR_RETURN(ExprPtr x, ctx.LoadBroadcast(self, out.sizes));
    ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, Cast(x, out.dtype)));
    return true;
  };
}

// zeros/ones/full and their _like forms: a constant over the output shape.
LoweringFn Fill(std::optional<double> value) {
  return [value](LowerContext& ctx) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    double v = 0;
    if (value) {
      v = *value;
    } else {
      ASSIGN_OR_RETURN(v, ctx.DoubleArg("fill_value"));
    }
    if (IsComplex(out.dtype)) return false;
    ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, Literal(v, ComputeDType(out.dtype))));
    return true;
  };
}

// logical_and/or/xor (and bitwise ops on bools).
LoweringFn Logical(ExprOp op, bool bool_only) {
  return [op, bool_only](LowerContext& ctx) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    if (bool_only && out.dtype != DType::kBool) return false;
    return LowerElementwise(ctx, {"self", "other"}, ComputeKind::kBool,
                            [op](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              return Binary(op, a[0], a[1]);
                            });
  };
}

}  // namespace

LoweringFn LowerUnary(ExprOp op) { return Unary(op); }
LoweringFn LowerBinary(ExprOp op) { return BinaryOp(op); }
LoweringFn LowerComparison(ExprOp op) { return BinaryOp(op, ComputeKind::kPromoted); }
LoweringFn LowerLogical(ExprOp op, bool bitwise) { return Logical(op, bitwise); }
LoweringFn LowerAddSub(ExprOp op, bool reversed) { return AddSub(op, reversed); }
LoweringFn LowerDiv() { return Div(); }
LoweringFn LowerPow() { return Pow(); }
LoweringFn LowerWhere() { return WhereOp(); }
LoweringFn LowerMaskedFill() { return MaskedFill(); }
LoweringFn LowerClamp(bool has_min, bool has_max) { return Clamp(has_min, has_max); }
LoweringFn LowerCast() { return CastOp(); }
LoweringFn LowerFill(std::optional<double> value) { return Fill(value); }

LoweringFn LowerLogicalNot() {
  return [](LowerContext& ctx) {
    return LowerElementwise(ctx, {"self"}, ComputeKind::kBool,
                            [](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              return lowering::Unary(ExprOp::kLogicalNot, a[0]);
                            });
  };
}

LoweringFn LowerBitwiseNot() {
  return [](LowerContext& ctx) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    if (out.dtype != DType::kBool) return false;
    return LowerElementwise(ctx, {"self"}, ComputeKind::kBool,
                            [](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              return lowering::Unary(ExprOp::kLogicalNot, a[0]);
                            });
  };
}

LoweringFn LowerIsNan() {
  return [](LowerContext& ctx) {
    return LowerElementwise(ctx, {"self"}, ComputeKind::kPromoted,
                            [](const Exprs& a, DType) -> absl::StatusOr<ExprPtr> {
                              return lowering::Unary(ExprOp::kIsNan, a[0]);
                            });
  };
}

LoweringFn LowerSquare() {
  return UnaryFn([](const ExprPtr& x, DType) { return Binary(ExprOp::kMul, x, x); });
}

LoweringFn LowerLog2() {
  return UnaryFn([](const ExprPtr& x, DType d) {
    return Binary(ExprOp::kMul, lowering::Unary(ExprOp::kLog, x), Literal(1.0 / std::log(2.0), d));
  });
}

LoweringFn LowerLog10() {
  return UnaryFn([](const ExprPtr& x, DType d) {
    return Binary(ExprOp::kMul, lowering::Unary(ExprOp::kLog, x), Literal(1.0 / std::log(10.0), d));
  });
}

LoweringFn LowerErfc() {
  return UnaryFn([](const ExprPtr& x, DType d) {
    return Binary(ExprOp::kSub, Literal(1.0, d), lowering::Unary(ExprOp::kErf, x));
  });
}

}  // namespace kiln::lowering
