#include "backends/cpu/expr_emitter.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cpu/identifiers.h"
#include "backends/cpu/layout_util.h"
#include "support/status.h"

namespace kiln::backends::cpu {

using lowering::Expr;
using lowering::ExprOp;
using lowering::ExprPtr;

std::string IntLiteral(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "(-INT64_C(9223372036854775807) - 1)";
  return absl::StrCat("INT64_C(", v, ")");
}

std::string FloatLiteral(double v, DType dtype) {
  const bool is_float = dtype == DType::kFloat32;
  // Compiler builtins rather than std::numeric_limits: generated code
  // includes no standard header (see prelude.cc).
  if (std::isnan(v)) return is_float ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) return absl::StrCat(v < 0 ? "-" : "", is_float ? "__builtin_inff()" : "__builtin_inf()");
  // Hex floats are exact and locale-independent.
  std::string s = absl::StrFormat("%a", is_float ? static_cast<double>(static_cast<float>(v)) : v);
  return is_float ? absl::StrCat("static_cast<float>(", s, ")") : s;
}

namespace {

bool IsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

// The libm name of a unary function for float (`expf`) or double (`exp`).
std::string MathFn(const char* base, DType t) {
  return t == DType::kFloat32 ? absl::StrCat(base, "f") : std::string(base);
}

// The type binary arithmetic/comparison runs in for operand types a, b.
DType ComputeType(DType a, DType b) {
  if (a == DType::kFloat64 || b == DType::kFloat64) return DType::kFloat64;
  if (a == DType::kFloat32 || b == DType::kFloat32) return DType::kFloat32;
  if (a == b) return a;
  return DType::kInt64;
}

std::string CastTo(const std::string& value, DType from, DType to, const std::string& to_type) {
  if (from == to) return value;
  if (to == DType::kBool) return absl::StrCat("(", value, " != 0)");
  return absl::StrCat("static_cast<", to_type, ">(", value, ")");
}

}  // namespace

std::string ExprEmitter::Temp(DType, const std::string& type, const std::string& value) {
  std::string name = absl::StrCat("l_t", (*temp_counter_)++);
  absl::StrAppend(&statements_, indent_, "const ", type, " ", name, " = ", value, ";\n");
  return name;
}

absl::StatusOr<std::string> ExprEmitter::Emit(const ExprPtr& e) { return EmitAt(e, 0); }

absl::StatusOr<std::string> ExprEmitter::EmitAt(const ExprPtr& e, int depth) {
  if (e == nullptr) return absl::InvalidArgumentError("cpu codegen: null expression");
  if (depth > kMaxExprDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu codegen: expression deeper than ", kMaxExprDepth, " levels"));
  }
  auto it = memo_.find(e.get());
  if (it != memo_.end()) return it->second;
  ASSIGN_OR_RETURN(std::string value, EmitNode(*e, depth));
  memo_.emplace(e.get(), value);
  return value;
}

absl::StatusOr<std::string> ExprEmitter::EmitNode(const Expr& e, int depth) {
  ASSIGN_OR_RETURN(const std::string type, CTypeName(e.dtype));
  const DType t = e.dtype;
  auto arity = [&](size_t n) -> absl::Status {
    if (e.args.size() != n) {
      return absl::InvalidArgumentError(absl::StrCat("cpu codegen: '", ExprOpLabel(e.op),
                                                     "' expects ", n, " operands, got ",
                                                     e.args.size()));
    }
    return absl::OkStatus();
  };
  switch (e.op) {
    case ExprOp::kIndexVar:
      if (e.var < 0 || e.var >= num_vars_) {
        return absl::InvalidArgumentError(absl::StrCat("cpu codegen: index variable v", e.var,
                                                       " is not bound (", num_vars_, " bound)"));
      }
      return CastTo(absl::StrCat("l_v", e.var), DType::kInt64, t, type);
    case ExprOp::kIntConst:
      if (t == DType::kBool) return std::string(e.int_value != 0 ? "true" : "false");
      return CastTo(IntLiteral(e.int_value), DType::kInt64, t, type);
    case ExprOp::kFloatConst:
      if (!IsFloat(t)) return CastTo(FloatLiteral(e.float_value, DType::kFloat64), DType::kFloat64, t, type);
      return FloatLiteral(e.float_value, t);
    case ExprOp::kLoad: {
      RETURN_IF_ERROR(arity(1));
      auto buf = buffers_->find(e.buffer);
      if (buf == buffers_->end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cpu codegen: load from buffer '", SanitizeComment(e.buffer),
            "', which is neither read nor written by the kernel"));
      }
      ASSIGN_OR_RETURN(std::string index, EmitAt(e.args[0], depth + 1));
      std::string value = absl::StrCat(buf->second.identifier, "[", index, "]");
      return Temp(t, type, CastTo(value, buf->second.dtype, t, type));
    }
    default: break;
  }

  // Operands, in order.
  std::vector<std::string> a;
  for (const ExprPtr& arg : e.args) {
    ASSIGN_OR_RETURN(std::string v, EmitAt(arg, depth + 1));
    a.push_back(std::move(v));
  }
  auto operand_as = [&](size_t i, DType to) -> absl::StatusOr<std::string> {
    ASSIGN_OR_RETURN(std::string to_type, CTypeName(to));
    return CastTo(a[i], e.args[i]->dtype, to, to_type);
  };
  const bool fp = IsFloat(t);
  // Float math for integer results (e.g. exp of an int tensor) runs in double.
  const DType math_t = fp ? t : DType::kFloat64;
  ASSIGN_OR_RETURN(const std::string math_type, CTypeName(math_t));
  auto unary_math = [&](const char* fn) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(1));
    ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
    return Temp(t, type, CastTo(absl::StrCat(MathFn(fn, math_t), "(", x, ")"), math_t, t, type));
  };
  auto unary_expr = [&](auto make) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(1));
    ASSIGN_OR_RETURN(std::string x, operand_as(0, t));
    return Temp(t, type, make(x));
  };
  auto binary = [&](auto make) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(2));
    ASSIGN_OR_RETURN(std::string x, operand_as(0, t));
    ASSIGN_OR_RETURN(std::string y, operand_as(1, t));
    return Temp(t, type, make(x, y));
  };
  auto compare = [&](const char* op) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(2));
    const DType ct = ComputeType(e.args[0]->dtype, e.args[1]->dtype);
    ASSIGN_OR_RETURN(std::string x, operand_as(0, ct));
    ASSIGN_OR_RETURN(std::string y, operand_as(1, ct));
    return Temp(t, type, CastTo(absl::StrCat("(", x, " ", op, " ", y, ")"), DType::kBool, t, type));
  };
  const std::string one = fp ? FloatLiteral(1.0, t) : absl::StrCat(type, "(1)");
  const std::string zero = fp ? FloatLiteral(0.0, t) : absl::StrCat(type, "(0)");

  switch (e.op) {
    case ExprOp::kNeg: return unary_expr([&](const std::string& x) { return absl::StrCat("-", x); });
    case ExprOp::kAbs:
      return unary_expr([&](const std::string& x) {
        return fp ? absl::StrCat(MathFn("fabs", t), "(", x, ")") : absl::StrCat("(", x, " < 0 ? -", x, " : ", x, ")");
      });
    case ExprOp::kExp: return unary_math("exp");
    case ExprOp::kLog: return unary_math("log");
    case ExprOp::kSin: return unary_math("sin");
    case ExprOp::kCos: return unary_math("cos");
    case ExprOp::kTan: return unary_math("tan");
    case ExprOp::kTanh: return unary_math("tanh");
    case ExprOp::kErf: return unary_math("erf");
    case ExprOp::kLog1p: return unary_math("log1p");
    case ExprOp::kExpm1: return unary_math("expm1");
    case ExprOp::kSqrt: return unary_math("sqrt");
    case ExprOp::kFloor: return fp ? unary_math("floor") : unary_expr([](const std::string& x) { return x; });
    case ExprOp::kCeil: return fp ? unary_math("ceil") : unary_expr([](const std::string& x) { return x; });
    case ExprOp::kTrunc: return fp ? unary_math("trunc") : unary_expr([](const std::string& x) { return x; });
    case ExprOp::kRound: return fp ? unary_math("nearbyint") : unary_expr([](const std::string& x) { return x; });
    case ExprOp::kRsqrt: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
      const std::string m1 = FloatLiteral(1.0, math_t);
      return Temp(t, type, CastTo(absl::StrCat(m1, " / ", MathFn("sqrt", math_t), "(", x, ")"), math_t, t, type));
    }
    case ExprOp::kReciprocal: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
      const std::string m1 = FloatLiteral(1.0, math_t);
      return Temp(t, type, CastTo(absl::StrCat(m1, " / ", x), math_t, t, type));
    }
    case ExprOp::kSigmoid: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
      const std::string m1 = FloatLiteral(1.0, math_t);
      return Temp(t, type, CastTo(absl::StrCat(m1, " / (", m1, " + ", MathFn("exp", math_t), "(-", x, "))"),
                                  math_t, t, type));
    }
    case ExprOp::kRelu:
      return unary_expr([&](const std::string& x) {
        return fp ? absl::StrCat("((", x, " > ", zero, " || ", x, " != ", x, ") ? ", x, " : ", zero, ")")
                  : absl::StrCat("(", x, " > ", zero, " ? ", x, " : ", zero, ")");
      });
    case ExprOp::kSign: return unary_expr([&](const std::string& x) { return absl::StrCat("kiln_sign(", x, ")"); });
    case ExprOp::kLogicalNot: {
      RETURN_IF_ERROR(arity(1));
      return Temp(t, type, CastTo(absl::StrCat("!(", a[0], ")"), DType::kBool, t, type));
    }
    case ExprOp::kIsNan: {
      RETURN_IF_ERROR(arity(1));
      return Temp(t, type, CastTo(absl::StrCat("(", a[0], " != ", a[0], ")"), DType::kBool, t, type));
    }
    case ExprOp::kAdd: return binary([](const std::string& x, const std::string& y) { return absl::StrCat(x, " + ", y); });
    case ExprOp::kSub: return binary([](const std::string& x, const std::string& y) { return absl::StrCat(x, " - ", y); });
    case ExprOp::kMul: return binary([](const std::string& x, const std::string& y) { return absl::StrCat(x, " * ", y); });
    case ExprOp::kDiv:
      return binary([&](const std::string& x, const std::string& y) {
        return fp ? absl::StrCat(x, " / ", y) : absl::StrCat("kiln_idiv(", x, ", ", y, ")");
      });
    case ExprOp::kFloorDiv:
      return binary([&](const std::string& x, const std::string& y) {
        return fp ? absl::StrCat(MathFn("floor", t), "(", x, " / ", y, ")")
                  : absl::StrCat("kiln_ifloordiv(", x, ", ", y, ")");
      });
    case ExprOp::kMod:
      return binary([&](const std::string& x, const std::string& y) {
        return fp ? absl::StrCat("kiln_fmod_py(", x, ", ", y, ")") : absl::StrCat("kiln_imod(", x, ", ", y, ")");
      });
    case ExprOp::kPow:
      return binary([&](const std::string& x, const std::string& y) {
        return fp ? absl::StrCat(MathFn("pow", t), "(", x, ", ", y, ")") : absl::StrCat("kiln_ipow(", x, ", ", y, ")");
      });
    case ExprOp::kMax: return binary([](const std::string& x, const std::string& y) { return absl::StrCat("kiln_max(", x, ", ", y, ")"); });
    case ExprOp::kMin: return binary([](const std::string& x, const std::string& y) { return absl::StrCat("kiln_min(", x, ", ", y, ")"); });
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
      const char* op = e.op == ExprOp::kLogicalAnd ? " & " : " | ";
      return Temp(t, type, CastTo(absl::StrCat("static_cast<bool>(", x, op, y, ")"), DType::kBool, t, type));
    }
    case ExprOp::kWhere: {
      RETURN_IF_ERROR(arity(3));
      ASSIGN_OR_RETURN(std::string c, operand_as(0, DType::kBool));
      ASSIGN_OR_RETURN(std::string x, operand_as(1, t));
      ASSIGN_OR_RETURN(std::string y, operand_as(2, t));
      return Temp(t, type, absl::StrCat("(", c, " ? ", x, " : ", y, ")"));
    }
    case ExprOp::kCast: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, t));
      return Temp(t, type, x);
    }
    default: break;
  }
  return absl::UnimplementedError(
      absl::StrCat("cpu codegen: expression op '", ExprOpLabel(e.op), "' is not supported"));
}

}  // namespace kiln::backends::cpu
