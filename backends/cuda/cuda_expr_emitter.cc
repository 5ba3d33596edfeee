#include "backends/cuda/cuda_expr_emitter.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernel_identifiers.h"
#include "support/status.h"

namespace kiln::backends::cuda {

using lowering::Expr;
using lowering::ExprOp;
using lowering::ExprPtr;

namespace {

// Index analysis only looks this deep, and at this many nodes (index trees
// are small; a DAG that shares subtrees could otherwise take exponential
// time). Past either limit the answer is the conservative one: the scalar
// path.
constexpr int kMaxIndexDepth = 64;
constexpr int kMaxIndexNodes = 4096;

bool DependsOnVarAt(const Expr* e, int var, int depth, int* budget) {
  if (e == nullptr) return false;
  if (depth > kMaxIndexDepth || --*budget < 0) return true;  // conservative
  if (e->op == ExprOp::kIndexVar) return e->var == var;
  for (const ExprPtr& a : e->args) {
    if (DependsOnVarAt(a.get(), var, depth + 1, budget)) return true;
  }
  return false;
}

bool DependsOnVarAt(const Expr* e, int var, int depth) {
  int budget = kMaxIndexNodes;
  return DependsOnVarAt(e, var, depth, &budget);
}

// Flattens a tree of kAdd into its terms; false when too deep or large.
bool AddTerms(const Expr* e, std::vector<const Expr*>* terms, int depth) {
  if (e == nullptr || depth > kMaxIndexDepth || terms->size() > 64) return false;
  if (e->op == ExprOp::kAdd && e->args.size() == 2) {
    return AddTerms(e->args[0].get(), terms, depth + 1) && AddTerms(e->args[1].get(), terms, depth + 1);
  }
  terms->push_back(e);
  return true;
}

bool IsIntConst(const Expr* e, int64_t v) {
  return e != nullptr && e->op == ExprOp::kIntConst && e->dtype == DType::kInt64 && e->int_value == v;
}

bool IsVar(const Expr* e, int var) { return e != nullptr && e->op == ExprOp::kIndexVar && e->var == var; }

// The largest of 1, 2, 4 that always divides `e` (an int64 index value).
int64_t Divisibility(const Expr* e, int depth, int* budget) {
  if (e == nullptr || depth > kMaxIndexDepth || --*budget < 0 || e->dtype != DType::kInt64) return 1;
  switch (e->op) {
    case ExprOp::kIntConst: {
      const uint64_t v = static_cast<uint64_t>(e->int_value);
      if (v % 4 == 0) return 4;
      return v % 2 == 0 ? 2 : 1;
    }
    case ExprOp::kAdd:
    case ExprOp::kSub:
      if (e->args.size() != 2) return 1;
      return std::min(Divisibility(e->args[0].get(), depth + 1, budget),
                      Divisibility(e->args[1].get(), depth + 1, budget));
    case ExprOp::kMul:
      if (e->args.size() != 2) return 1;
      return std::min<int64_t>(4, Divisibility(e->args[0].get(), depth + 1, budget) *
                                      Divisibility(e->args[1].get(), depth + 1, budget));
    case ExprOp::kNeg:
      return e->args.size() == 1 ? Divisibility(e->args[0].get(), depth + 1, budget) : 1;
    default:
      return 1;
  }
}

// The unit-stride term of `index` in `var` and the other terms.
bool SplitUnitStride(const ExprPtr& index, int var, std::vector<const Expr*>* others) {
  std::vector<const Expr*> terms;
  if (!AddTerms(index.get(), &terms, 0)) return false;
  int unit = 0;
  int budget = kMaxIndexNodes;
  for (const Expr* t : terms) {
    if (!DependsOnVarAt(t, var, 0, &budget)) {
      others->push_back(t);
      continue;
    }
    const bool is_unit =
        IsVar(t, var) || (t->op == ExprOp::kMul && t->args.size() == 2 &&
                          ((IsVar(t->args[0].get(), var) && IsIntConst(t->args[1].get(), 1)) ||
                           (IsVar(t->args[1].get(), var) && IsIntConst(t->args[0].get(), 1))));
    if (!is_unit) return false;
    ++unit;
  }
  return unit == 1;
}

bool IsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

// The math library name for float (`expf`) or double (`exp`).
std::string MathFn(const char* base, DType t) {
  return t == DType::kFloat32 ? absl::StrCat(base, "f") : std::string(base);
}

// The type binary comparisons run in for operand types a, b.
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

bool DependsOnVar(const ExprPtr& e, int var) { return DependsOnVarAt(e.get(), var, 0); }

bool HasUnitStride(const ExprPtr& index, int var) {
  std::vector<const Expr*> others;
  return SplitUnitStride(index, var, &others);
}

bool IsVectorIndex(const ExprPtr& index, int var) {
  std::vector<const Expr*> others;
  if (!SplitUnitStride(index, var, &others)) return false;
  int budget = kMaxIndexNodes;
  for (const Expr* t : others) {
    if (Divisibility(t, 0, &budget) % kLanes != 0) return false;
  }
  return true;
}

bool CollectLoadNodes(const ExprPtr& root, std::vector<const Expr*>* loads) {
  // Iterative walk: the DAG may be deep; the emitter rejects deep trees
  // anyway, so stop at the same depth.
  std::unordered_set<const Expr*> seen;
  std::vector<std::pair<const Expr*, int>> stack = {{root.get(), 0}};
  while (!stack.empty()) {
    auto [e, depth] = stack.back();
    stack.pop_back();
    if (e == nullptr || !seen.insert(e).second) continue;
    if (depth > kCudaMaxExprDepth) return false;
    if (e->op == ExprOp::kLoad) loads->push_back(e);
    for (const ExprPtr& a : e->args) stack.push_back({a.get(), depth + 1});
  }
  return true;
}

std::string CudaExprEmitter::Temp(const std::string& type, const std::string& value) {
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

bool CudaExprEmitter::DependsOnLane(const Expr* e, int depth) {
  if (lane_var_ < 0 || e == nullptr) return false;
  if (depth > kCudaMaxExprDepth) return true;
  auto it = depends_.find(e);
  if (it != depends_.end()) return it->second;
  bool d = false;
  if (e->op == ExprOp::kIndexVar) {
    d = e->var == lane_var_;
  } else if (e->op == ExprOp::kLoad && buffers_->count(e->buffer) != 0 &&
             !buffers_->at(e->buffer).scalar.empty()) {
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

absl::StatusOr<std::string> CudaExprEmitter::Emit(const ExprPtr& e, int lane) { return EmitAt(e, lane, 0); }

bool CudaExprEmitter::IndexText(const Expr* e, int depth, std::string* out) const {
  if (e == nullptr || depth > 16 || e->dtype != DType::kInt64) return false;
  switch (e->op) {
    case ExprOp::kIndexVar:
      if (e->var < 0 || e->var >= static_cast<int>(vars_.size())) return false;
      absl::StrAppend(out, vars_[e->var]);
      return true;
    case ExprOp::kIntConst:
      absl::StrAppend(out, e->int_value);
      return true;
    case ExprOp::kAdd:
    case ExprOp::kSub:
    case ExprOp::kMul:
    case ExprOp::kFloorDiv:
    case ExprOp::kMod: {
      if (e->args.size() != 2) return false;
      absl::StrAppend(out, "(");
      if (!IndexText(e->args[0].get(), depth + 1, out)) return false;
      absl::StrAppend(out, " ", lowering::ExprOpName(e->op), " ");
      if (!IndexText(e->args[1].get(), depth + 1, out)) return false;
      absl::StrAppend(out, ")");
      return true;
    }
    default:
      return false;
  }
}

absl::StatusOr<std::string> CudaExprEmitter::EmitAt(const ExprPtr& e, int lane, int depth) {
  if (e == nullptr) return absl::InvalidArgumentError("cuda codegen: null expression");
  if (depth > kCudaMaxExprDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda codegen: expression deeper than ", kCudaMaxExprDepth, " levels"));
  }
  const int key_lane = DependsOnLane(e.get(), depth) ? lane : -1;
  auto it = memo_.find({e.get(), key_lane});
  if (it != memo_.end()) return it->second;
  ASSIGN_OR_RETURN(std::string value, EmitNode(*e, key_lane, depth));
  memo_.emplace(std::make_pair(e.get(), key_lane), value);
  return value;
}

absl::StatusOr<std::string> CudaExprEmitter::EmitLoad(const Expr& e, int lane, int depth) {
  ASSIGN_OR_RETURN(const std::string type, CudaTypeName(e.dtype));
  auto buf = buffers_->find(e.buffer);
  if (buf == buffers_->end()) {
    return absl::InvalidArgumentError(absl::StrCat("cuda codegen: load from buffer '", CudaSafeText(e.buffer),
                                                   "', which is neither read nor written by the kernel"));
  }
  const CudaBufferRef& ref = buf->second;
  ASSIGN_OR_RETURN(const std::string storage_type, CudaTypeName(ref.dtype));
  if (!ref.scalar.empty()) return CastTo(ref.scalar, ref.scalar_dtype, e.dtype, type);
  if (lane >= 0 && vector_loads_ && IsVectorIndex(e.args[0], lane_var_)) {
    auto v = vector_memo_.find(&e);
    std::string vec;
    if (v != vector_memo_.end()) {
      vec = v->second;
    } else {
      const std::string vec_type = absl::StrCat("kiln_vec4<", storage_type, ">");
      std::string key;
      const bool cacheable = cache_ != nullptr && cache_->buffers.count(e.buffer) != 0 &&
                             IndexText(e.args[0].get(), 0, &key);
      if (cacheable) key = absl::StrCat(e.buffer, "|", key);
      auto cached = cacheable ? cache_->arrays.find(key) : std::map<std::string, std::string>::iterator();
      if (cacheable && cached != cache_->arrays.end()) {
        vec = Temp(vec_type, absl::StrCat(cached->second, "[l_j]"));
        cache_->read.insert(cached->second);
      } else {
        ASSIGN_OR_RETURN(std::string index, EmitAt(e.args[0], 0, depth + 1));
        vec = Temp(vec_type, absl::StrCat("kiln_load4(", ref.identifier, " + ", index, ")"));
        if (cacheable) {
          const std::string array = absl::StrCat("l_c", cache_->count++);
          absl::StrAppend(&cache_->declarations, vec_type, " ", array, "[", cache_->trips, "];\n");
          absl::StrAppend(&statements_, indent_, array, "[l_j] = ", vec, ";\n");
          cache_->arrays.emplace(key, array);
        }
      }
      vector_memo_.emplace(&e, vec);
      vector_buffers_.insert(e.buffer);
    }
    return Temp(type, CastTo(absl::StrCat(vec, ".v[", lane, "]"), ref.dtype, e.dtype, type));
  }
  ASSIGN_OR_RETURN(std::string index, EmitAt(e.args[0], lane, depth + 1));
  return Temp(type, CastTo(absl::StrCat(ref.identifier, "[", index, "]"), ref.dtype, e.dtype, type));
}

absl::StatusOr<std::string> CudaExprEmitter::EmitNode(const Expr& e, int lane, int depth) {
  ASSIGN_OR_RETURN(const std::string type, CudaTypeName(e.dtype));
  const DType t = e.dtype;
  auto arity = [&](size_t n) -> absl::Status {
    if (e.args.size() != n) {
      return absl::InvalidArgumentError(absl::StrCat("cuda codegen: '", lowering::ExprOpName(e.op),
                                                     "' expects ", n, " operands, got ", e.args.size()));
    }
    return absl::OkStatus();
  };
  switch (e.op) {
    case ExprOp::kIndexVar: {
      if (e.var < 0 || e.var >= static_cast<int>(vars_.size())) {
        return absl::InvalidArgumentError(absl::StrCat("cuda codegen: index variable v", e.var,
                                                       " is not bound (", vars_.size(), " bound)"));
      }
      std::string v = vars_[e.var];
      if (e.var == lane_var_ && lane > 0) v = absl::StrCat("(", v, " + ", lane, "LL)");
      return CastTo(v, DType::kInt64, t, type);
    }
    case ExprOp::kIntConst:
      if (t == DType::kBool) return std::string(e.int_value != 0 ? "true" : "false");
      return CastTo(CudaIntLiteral(e.int_value), DType::kInt64, t, type);
    case ExprOp::kFloatConst:
      if (!IsFloat(t)) return CastTo(CudaFloatLiteral(e.float_value, DType::kFloat64), DType::kFloat64, t, type);
      return CudaFloatLiteral(e.float_value, t);
    case ExprOp::kLoad:
      RETURN_IF_ERROR(arity(1));
      return EmitLoad(e, lane, depth);
    default:
      break;
  }

  std::vector<std::string> a;
  for (const ExprPtr& arg : e.args) {
    ASSIGN_OR_RETURN(std::string v, EmitAt(arg, lane, depth + 1));
    a.push_back(std::move(v));
  }
  auto operand_as = [&](size_t i, DType to) -> absl::StatusOr<std::string> {
    ASSIGN_OR_RETURN(std::string to_type, CudaTypeName(to));
    return CastTo(a[i], e.args[i]->dtype, to, to_type);
  };
  const bool fp = IsFloat(t);
  // Float math for integer results (e.g. exp of an int tensor) runs in double.
  const DType math_t = fp ? t : DType::kFloat64;
  ASSIGN_OR_RETURN(const std::string math_type, CudaTypeName(math_t));
  auto unary_math = [&](const char* fn) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(1));
    ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
    return Temp(type, CastTo(absl::StrCat(MathFn(fn, math_t), "(", x, ")"), math_t, t, type));
  };
  auto unary_expr = [&](auto make) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(1));
    ASSIGN_OR_RETURN(std::string x, operand_as(0, t));
    return Temp(type, make(x));
  };
  auto binary = [&](auto make) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(2));
    ASSIGN_OR_RETURN(std::string x, operand_as(0, t));
    ASSIGN_OR_RETURN(std::string y, operand_as(1, t));
    return Temp(type, make(x, y));
  };
  auto compare = [&](const char* op) -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(arity(2));
    const DType ct = ComputeType(e.args[0]->dtype, e.args[1]->dtype);
    ASSIGN_OR_RETURN(std::string x, operand_as(0, ct));
    ASSIGN_OR_RETURN(std::string y, operand_as(1, ct));
    return Temp(type, CastTo(absl::StrCat("(", x, " ", op, " ", y, ")"), DType::kBool, t, type));
  };
  const std::string zero = fp ? CudaFloatLiteral(0.0, t) : absl::StrCat("static_cast<", type, ">(0)");
  auto identity = [](const std::string& x) { return x; };

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
    case ExprOp::kRsqrt: return unary_math("rsqrt");
    case ExprOp::kFloor: return fp ? unary_math("floor") : unary_expr(identity);
    case ExprOp::kCeil: return fp ? unary_math("ceil") : unary_expr(identity);
    case ExprOp::kTrunc: return fp ? unary_math("trunc") : unary_expr(identity);
    case ExprOp::kRound: return fp ? unary_math("rint") : unary_expr(identity);  // half to even
    case ExprOp::kReciprocal: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
      return Temp(type, CastTo(absl::StrCat(CudaFloatLiteral(1.0, math_t), " / ", x), math_t, t, type));
    }
    case ExprOp::kSigmoid: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, math_t));
      const std::string one = CudaFloatLiteral(1.0, math_t);
      return Temp(type, CastTo(absl::StrCat(one, " / (", one, " + ", MathFn("exp", math_t), "(-", x, "))"), math_t,
                               t, type));
    }
    case ExprOp::kRelu:
      return unary_expr([&](const std::string& x) {
        return fp ? absl::StrCat("((", x, " > ", zero, " || ", x, " != ", x, ") ? ", x, " : ", zero, ")")
                  : absl::StrCat("(", x, " > ", zero, " ? ", x, " : ", zero, ")");
      });
    case ExprOp::kSign: return unary_expr([&](const std::string& x) { return absl::StrCat("kiln_sign(", x, ")"); });
    case ExprOp::kLogicalNot: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, DType::kBool));
      return Temp(type, CastTo(absl::StrCat("!(", x, ")"), DType::kBool, t, type));
    }
    case ExprOp::kIsNan: {
      RETURN_IF_ERROR(arity(1));
      return Temp(type, CastTo(absl::StrCat("(", a[0], " != ", a[0], ")"), DType::kBool, t, type));
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
    case ExprOp::kMax:
      return binary([](const std::string& x, const std::string& y) { return absl::StrCat("kiln_max(", x, ", ", y, ")"); });
    case ExprOp::kMin:
      return binary([](const std::string& x, const std::string& y) { return absl::StrCat("kiln_min(", x, ", ", y, ")"); });
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
      const char* op = e.op == ExprOp::kLogicalAnd ? " && " : " || ";
      return Temp(type, CastTo(absl::StrCat("(", x, op, y, ")"), DType::kBool, t, type));
    }
    case ExprOp::kWhere: {
      RETURN_IF_ERROR(arity(3));
      ASSIGN_OR_RETURN(std::string c, operand_as(0, DType::kBool));
      ASSIGN_OR_RETURN(std::string x, operand_as(1, t));
      ASSIGN_OR_RETURN(std::string y, operand_as(2, t));
      return Temp(type, absl::StrCat("(", c, " ? ", x, " : ", y, ")"));
    }
    case ExprOp::kCast: {
      RETURN_IF_ERROR(arity(1));
      ASSIGN_OR_RETURN(std::string x, operand_as(0, t));
      return Temp(type, x);
    }
    default:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat("cuda codegen: expression op '", lowering::ExprOpName(e.op), "' is not supported"));
}

}  // namespace kiln::backends::cuda
