#include "codegen/c_expr_emitter.h"

#include "absl/strings/str_cat.h"
#include "devices/identifiers.h"
#include "support/status.h"

namespace kiln::codegen {

using lowering::Expr;
using lowering::ExprOp;
using lowering::ExprPtr;

namespace {

bool IsNarrowFloat(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// The type a value of `t` is held in: narrow floats as float32.
DType HeldType(DType t) { return IsNarrowFloat(t) ? DType::kFloat32 : t; }

// The type binary comparisons run in for operand types a, b.
DType CompareType(DType a, DType b) {
  a = HeldType(a);
  b = HeldType(b);
  if (a == DType::kFloat64 || b == DType::kFloat64) return DType::kFloat64;
  if (a == DType::kFloat32 || b == DType::kFloat32) return DType::kFloat32;
  if (a == b) return a;
  return DType::kInt64;
}

}  // namespace

std::string CCast(const std::string& value, DType from, DType to, const std::string& to_type) {
  if (from == to) return value;
  if (to == DType::kBool) return absl::StrCat("(", value, " != 0)");
  if (IsFloatingPoint(from) && !IsFloatingPoint(to)) {
    // A float out of the integer's range is undefined behaviour in C++;
    // kiln saturates it as the interpreter does (runtime/tensor_ops.cc).
    const char* helper = to == DType::kUInt64 ? "kiln_float_to_uint64" : "kiln_float_to_int64";
    return absl::StrCat("static_cast<", to_type, ">(", helper, "(static_cast<double>(", value, ")))");
  }
  return absl::StrCat("static_cast<", to_type, ">(", value, ")");
}

absl::Status CExprEmitter::Invalid(const std::string& what) const {
  return absl::InvalidArgumentError(absl::StrCat(dialect_->label(), ": ", what));
}

absl::StatusOr<std::string> CExprEmitter::CastTo(const std::string& value, DType from, DType to) const {
  if (from == to) return value;
  from = HeldType(from);
  if (from == to) return value;
  if (IsNarrowFloat(to)) {
    // Rounded to the narrow type's precision: stored and loaded back.
    ASSIGN_OR_RETURN(const std::string f, dialect_->TypeName(DType::kFloat32));
    const std::string as_float = CCast(value, from, DType::kFloat32, f);
    return dialect_->LoadValue(dialect_->StoreValue(as_float, to), to);
  }
  ASSIGN_OR_RETURN(const std::string type, dialect_->TypeName(to));
  return CCast(value, from, to, type);
}

std::string CExprEmitter::Temp(const std::string& type, const std::string& value) {
  // Value numbering: the same expression over the same temporaries is the
  // same value (temporaries are const; a member's buffer is only loaded
  // after it was stored), so identical loads and index arithmetic of
  // distinct but equal subtrees are emitted once.
  std::string key = absl::StrCat(type, "|", value);
  auto it = values_.find(key);
  if (it != values_.end()) return it->second;
  std::string name = absl::StrCat("l_t", (*temp_counter_)++);
  absl::StrAppend(&statements_, indent_, "const ", type, " ", name, " = ", value, ";\n");
  values_.emplace(std::move(key), name);
  return name;
}

absl::StatusOr<std::string> CExprEmitter::LoadTemp(const std::string& element, DType storage, DType to) {
  ASSIGN_OR_RETURN(const std::string type, dialect_->TypeName(to));
  ASSIGN_OR_RETURN(std::string value, CastTo(dialect_->LoadValue(element, storage), storage, to));
  return Temp(type, value);
}

bool CExprEmitter::DependsOnLane(const Expr* e, int depth) {
  if (lane_var_ < 0 || e == nullptr) return false;
  if (depth > kMaxExprDepth) return true;
  auto it = depends_.find(e);
  if (it != depends_.end()) return it->second;
  bool d = false;
  if (e->op == ExprOp::kIndexVar) {
    d = e->var == lane_var_;
  } else if (e->op == ExprOp::kLoad && buffers_->count(e->buffer) != 0 && !buffers_->at(e->buffer).scalar.empty()) {
    d = false;
  } else {
    for (const ExprPtr& a : e->args) {
      if (DependsOnLane(a.get(), depth + 1)) {
        d = true;
        break;
      }
    }
  }
  depends_.emplace(e, d);
  return d;
}

absl::StatusOr<std::string> CExprEmitter::Emit(const ExprPtr& e, int lane) { return EmitAt(e, lane, 0); }

absl::StatusOr<std::string> CExprEmitter::EmitAt(const ExprPtr& e, int lane, int depth) {
  if (e == nullptr) return Invalid("null expression");
  if (depth > kMaxExprDepth) return Invalid(absl::StrCat("expression deeper than ", kMaxExprDepth, " levels"));
  const int key_lane = DependsOnLane(e.get(), depth) ? lane : -1;
  auto it = memo_.find({e.get(), key_lane});
  if (it != memo_.end()) return it->second;
  if (std::optional<std::string> kept = Reused(*e, key_lane, depth)) {
    memo_.emplace(std::make_pair(e.get(), key_lane), *kept);
    return *kept;
  }
  ASSIGN_OR_RETURN(std::string value, EmitNode(*e, key_lane, depth));
  memo_.emplace(std::make_pair(e.get(), key_lane), value);
  Emitted(*e, key_lane, value);
  return value;
}

absl::StatusOr<std::string> CExprEmitter::EmitLoad(const Expr& e, const CBufferRef& ref, int lane, int depth) {
  if (!ref.scalar.empty()) return CastTo(ref.scalar, ref.scalar_dtype, e.dtype);
  ASSIGN_OR_RETURN(std::string index, EmitAt(e.args[0], lane, depth + 1));
  return LoadTemp(absl::StrCat(ref.identifier, "[", index, "]"), ref.dtype, e.dtype);
}

absl::StatusOr<std::string> CExprEmitter::EmitNode(const Expr& e, int lane, int depth) {
  const DType t = e.dtype;
  ASSIGN_OR_RETURN(const std::string type, dialect_->TypeName(t));
  auto arity = [&](size_t n) -> absl::Status {
    if (e.args.size() != n) {
      return Invalid(absl::StrCat("'", lowering::ExprOpName(e.op), "' expects ", n, " operands, got ",
                                  e.args.size()));
    }
    return absl::OkStatus();
  };
  switch (e.op) {
    case ExprOp::kIndexVar: {
      if (e.var < 0 || e.var >= static_cast<int>(vars_.size())) {
        return Invalid(absl::StrCat("index variable v", e.var, " is not bound (", vars_.size(), " bound)"));
      }
      std::string v = vars_[static_cast<size_t>(e.var)];
      if (e.var == lane_var_ && lane > 0) v = absl::StrCat("(", v, " + ", dialect_->IntLiteral(lane), ")");
      return CastTo(v, DType::kInt64, t);
    }
    case ExprOp::kIntConst:
      if (t == DType::kBool) return std::string(e.int_value != 0 ? "true" : "false");
      return CastTo(dialect_->IntLiteral(e.int_value), DType::kInt64, t);
    case ExprOp::kFloatConst:
      if (t == DType::kFloat32 || t == DType::kFloat64) return dialect_->FloatLiteral(e.float_value, t);
      return CastTo(dialect_->FloatLiteral(e.float_value, DType::kFloat64), DType::kFloat64, t);
    case ExprOp::kLoad: {
      RETURN_IF_ERROR(arity(1));
      auto buf = buffers_->find(e.buffer);
      if (buf == buffers_->end()) {
        return Invalid(absl::StrCat("load from buffer '", devices::SanitizeComment(e.buffer),
                                    "', which is neither read nor written by the kernel"));
      }
      return EmitLoad(e, buf->second, lane, depth);
    }
    default:
      break;
  }

  // Operands, in order.
  std::vector<std::string> a;
  for (const ExprPtr& arg : e.args) {
    ASSIGN_OR_RETURN(std::string v, EmitAt(arg, lane, depth + 1));
    a.push_back(std::move(v));
  }
  auto operand_as = [&](size_t i, DType to) { return CastTo(a[i], e.args[i]->dtype, to); };
  const bool fp = IsCFloat(t);
  // Arithmetic runs in `ct` (narrow floats in float32); float math for
  // integer results (e.g. exp of an int tensor) runs in double.
  const DType ct = HeldType(t);
  const DType math_t = fp ? ct : DType::kFloat64;
  ASSIGN_OR_RETURN(const std::string ct_type, dialect_->TypeName(ct));
  // `value` (of type `from`) as the node's value.
  auto result = [&](const std::string& value, DType from) -> absl::StatusOr<std::string> {
    ASSIGN_OR_RETURN(std::string v, CastTo(value, from, t));
    return Temp(type, v);
  };
  auto unary_math = [&](ExprOp op) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(1));
    ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
    return result(dialect_->UnaryMath(op, x, math_t), math_t);
  };
  auto unary_expr = [&](auto make) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(1));
    ASSIGN_OR_RETURN(std::string x, operand_as(0, ct));
    return result(make(x), ct);
  };
  auto binary = [&](auto make) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(2));
    ASSIGN_OR_RETURN(std::string x, operand_as(0, ct));
    ASSIGN_OR_RETURN(std::string y, operand_as(1, ct));
    return result(make(x, y), ct);
  };
  auto boolean = [&](const std::string& value) { return result(value, DType::kBool); };
  auto compare = [&](const char* op) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(2));
    const DType cmp = CompareType(e.args[0]->dtype, e.args[1]->dtype);
    ASSIGN_OR_RETURN(std::string x, operand_as(0, cmp));
    ASSIGN_OR_RETURN(std::string y, operand_as(1, cmp));
    return boolean(absl::StrCat("(", x, " ", op, " ", y, ")"));
  };
  const std::string zero = fp ? dialect_->FloatLiteral(0.0, ct) : absl::StrCat("static_cast<", ct_type, ">(0)");
  auto identity = [](const std::string& x) { return x; };
  auto fn2 = [](std::string name) {
    return [name = std::move(name)](const std::string& x, const std::string& y) {
      return absl::StrCat(name, "(", x, ", ", y, ")");
    };
  };

  switch (e.op) {
    case ExprOp::kNeg: return unary_expr([](const std::string& x) { return absl::StrCat("-", x); });
    case ExprOp::kAbs:
      return unary_expr([&](const std::string& x) {
        return fp ? absl::StrCat(CMathFunction("fabs", ct), "(", x, ")")
                  : absl::StrCat("(", x, " < 0 ? -", x, " : ", x, ")");
      });
    case ExprOp::kExp:
    case ExprOp::kLog:
    case ExprOp::kSin:
    case ExprOp::kCos:
    case ExprOp::kTan:
    case ExprOp::kTanh:
    case ExprOp::kErf:
    case ExprOp::kLog1p:
    case ExprOp::kExpm1:
    case ExprOp::kSqrt:
    case ExprOp::kRsqrt:
      return unary_math(e.op);
    case ExprOp::kFloor:
    case ExprOp::kCeil:
    case ExprOp::kTrunc:
    case ExprOp::kRound:
      // Integers are their own floor, ceiling, truncation and rounding.
      return fp ? unary_math(e.op) : unary_expr(identity);
    case ExprOp::kReciprocal: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
      return result(absl::StrCat(dialect_->FloatLiteral(1.0, math_t), " / ", x), math_t);
    }
    case ExprOp::kSigmoid: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
      const std::string one = dialect_->FloatLiteral(1.0, math_t);
      return result(absl::StrCat(one, " / (", one, " + ", dialect_->UnaryMath(ExprOp::kExp, absl::StrCat("-", x), math_t),
                                 ")"),
                    math_t);
    }
    case ExprOp::kRelu:
      // NaN propagates (torch.relu(nan) is nan).
      return unary_expr([&](const std::string& x) {
        return fp ? absl::StrCat("((", x, " > ", zero, " || ", x, " != ", x, ") ? ", x, " : ", zero, ")")
                  : absl::StrCat("(", x, " > ", zero, " ? ", x, " : ", zero, ")");
      });
    case ExprOp::kSign: return unary_expr([](const std::string& x) { return absl::StrCat("kiln_sign(", x, ")"); });
    case ExprOp::kLogicalNot: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, DType::kBool));
      return boolean(absl::StrCat("!(", x, ")"));
    }
    case ExprOp::kIsNan:
      RETURN_IF_ERROR(arity(1));
      return boolean(absl::StrCat("(", a[0], " != ", a[0], ")"));
    case ExprOp::kAdd: return binary([](const std::string& x, const std::string& y) { return absl::StrCat(x, " + ", y); });
    case ExprOp::kSub: return binary([](const std::string& x, const std::string& y) { return absl::StrCat(x, " - ", y); });
    case ExprOp::kMul: return binary([](const std::string& x, const std::string& y) { return absl::StrCat(x, " * ", y); });
    case ExprOp::kDiv:
      return fp ? binary([](const std::string& x, const std::string& y) { return absl::StrCat(x, " / ", y); })
                : binary(fn2("kiln_idiv"));
    case ExprOp::kFloorDiv:
      return fp ? binary([&](const std::string& x, const std::string& y) {
        return absl::StrCat(CMathFunction("floor", ct), "(", x, " / ", y, ")");
      })
                : binary(fn2("kiln_ifloordiv"));
    case ExprOp::kMod: return binary(fn2(fp ? "kiln_fmod_py" : "kiln_imod"));
    case ExprOp::kPow:
      return fp ? binary(fn2(CMathFunction("pow", ct))) : binary(fn2("kiln_ipow"));
    case ExprOp::kMax: return binary(fn2("kiln_max"));
    case ExprOp::kMin: return binary(fn2("kiln_min"));
    case ExprOp::kEq: return compare("==");
    case ExprOp::kNe: return compare("!=");
    case ExprOp::kLt: return compare("<");
    case ExprOp::kLe: return compare("<=");
    case ExprOp::kGt: return compare(">");
    case ExprOp::kGe: return compare(">=");
    case ExprOp::kLogicalAnd:
    case ExprOp::kLogicalOr: {
      RETURN_IF_ERROR(arity(2));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, DType::kBool));
      ASSIGN_OR_RETURN(std::string y, operand_as(1, DType::kBool));
      // Bitwise on bools: both sides are already computed, and no branch.
      const char* op = e.op == ExprOp::kLogicalAnd ? " & " : " | ";
      return boolean(absl::StrCat("static_cast<bool>(", x, op, y, ")"));
    }
    case ExprOp::kWhere: {
      RETURN_IF_ERROR(arity(3));
      ASSIGN_OR_RETURN(std::string c, operand_as(0, DType::kBool));
      ASSIGN_OR_RETURN(std::string x, operand_as(1, ct));
      ASSIGN_OR_RETURN(std::string y, operand_as(2, ct));
      return result(absl::StrCat("(", c, " ? ", x, " : ", y, ")"), ct);
    }
    case ExprOp::kCast: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, t));
      if (x == a[0]) return x;  // already held as `type` (a narrow float widened)
      return Temp(type, x);
    }
    default:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat(dialect_->label(), ": expression op '", lowering::ExprOpName(e.op), "' is not supported"));
}

}  // namespace kiln::codegen
