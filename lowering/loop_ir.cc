#include "lowering/loop_ir.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "support/promotion.h"

namespace kiln::lowering {

Layout Layout::Contiguous(DType dtype, std::vector<int64_t> sizes, std::string device) {
  Layout l;
  l.device = std::move(device);
  l.dtype = dtype;
  l.strides = Tensor::ContiguousStrides(sizes);
  l.sizes = std::move(sizes);
  return l;
}

int64_t Layout::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

bool Layout::IsContiguous() const {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

int64_t Layout::StorageElements() const {
  int64_t extent = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    extent += (sizes[i] - 1) * std::abs(strides[i]);
  }
  return offset + extent;
}

std::string Layout::ToString() const {
  return absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(sizes, ", "), "] strides [",
                      absl::StrJoin(strides, ", "), "] offset ", offset, " ", device);
}

bool operator==(const Layout& a, const Layout& b) {
  return a.device == b.device && a.dtype == b.dtype && a.sizes == b.sizes &&
         a.strides == b.strides && a.offset == b.offset;
}

const char* ExprOpName(ExprOp op) {
  switch (op) {
    case ExprOp::kIndexVar: return "var";
    case ExprOp::kIntConst: return "int";
    case ExprOp::kFloatConst: return "float";
    case ExprOp::kLoad: return "load";
    case ExprOp::kNeg: return "neg";
    case ExprOp::kAbs: return "abs";
    case ExprOp::kExp: return "exp";
    case ExprOp::kLog: return "log";
    case ExprOp::kSqrt: return "sqrt";
    case ExprOp::kRsqrt: return "rsqrt";
    case ExprOp::kSin: return "sin";
    case ExprOp::kCos: return "cos";
    case ExprOp::kTan: return "tan";
    case ExprOp::kTanh: return "tanh";
    case ExprOp::kSigmoid: return "sigmoid";
    case ExprOp::kErf: return "erf";
    case ExprOp::kFloor: return "floor";
    case ExprOp::kCeil: return "ceil";
    case ExprOp::kRound: return "round";
    case ExprOp::kTrunc: return "trunc";
    case ExprOp::kReciprocal: return "reciprocal";
    case ExprOp::kRelu: return "relu";
    case ExprOp::kLog1p: return "log1p";
    case ExprOp::kExpm1: return "expm1";
    case ExprOp::kLogicalNot: return "logical_not";
    case ExprOp::kIsNan: return "isnan";
    case ExprOp::kSign: return "sign";
    case ExprOp::kAdd: return "add";
    case ExprOp::kSub: return "sub";
    case ExprOp::kMul: return "mul";
    case ExprOp::kDiv: return "div";
    case ExprOp::kFloorDiv: return "floordiv";
    case ExprOp::kMod: return "mod";
    case ExprOp::kPow: return "pow";
    case ExprOp::kMax: return "max";
    case ExprOp::kMin: return "min";
    case ExprOp::kEq: return "eq";
    case ExprOp::kNe: return "ne";
    case ExprOp::kLt: return "lt";
    case ExprOp::kLe: return "le";
    case ExprOp::kGt: return "gt";
    case ExprOp::kGe: return "ge";
    case ExprOp::kLogicalAnd: return "logical_and";
    case ExprOp::kLogicalOr: return "logical_or";
    case ExprOp::kWhere: return "where";
    case ExprOp::kCast: return "cast";
  }
  return "?";
}

const char* ReductionTypeName(ReductionType t) {
  switch (t) {
    case ReductionType::kSum: return "sum";
    case ReductionType::kProd: return "prod";
    case ReductionType::kMax: return "max";
    case ReductionType::kMin: return "min";
    case ReductionType::kArgmax: return "argmax";
    case ReductionType::kArgmin: return "argmin";
    case ReductionType::kWelfordMean: return "welford_mean";
    case ReductionType::kWelfordM2: return "welford_m2";
  }
  return "?";
}

namespace {

std::shared_ptr<Expr> NewExpr(ExprOp op, DType dtype) {
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->dtype = dtype;
  return e;
}

bool IsComparison(ExprOp op) {
  switch (op) {
    case ExprOp::kEq: case ExprOp::kNe: case ExprOp::kLt: case ExprOp::kLe:
    case ExprOp::kGt: case ExprOp::kGe: case ExprOp::kLogicalAnd: case ExprOp::kLogicalOr:
      return true;
    default:
      return false;
  }
}

}  // namespace

ExprPtr Var(int var) {
  auto e = NewExpr(ExprOp::kIndexVar, DType::kInt64);
  e->var = var;
  return e;
}

ExprPtr IntConst(int64_t v, DType dtype) {
  auto e = NewExpr(ExprOp::kIntConst, dtype);
  e->int_value = v;
  return e;
}

ExprPtr FloatConst(double v, DType dtype) {
  auto e = NewExpr(ExprOp::kFloatConst, dtype);
  e->float_value = v;
  return e;
}

ExprPtr Load(std::string buffer, DType dtype, ExprPtr index) {
  auto e = NewExpr(ExprOp::kLoad, dtype);
  e->buffer = std::move(buffer);
  e->args.push_back(std::move(index));
  return e;
}

ExprPtr Unary(ExprOp op, ExprPtr a) {
  DType t = (op == ExprOp::kLogicalNot || op == ExprOp::kIsNan) ? DType::kBool : a->dtype;
  auto e = NewExpr(op, t);
  e->args.push_back(std::move(a));
  return e;
}

ExprPtr Binary(ExprOp op, ExprPtr a, ExprPtr b) {
  DType t = a->dtype;
  if (IsComparison(op)) {
    t = DType::kBool;
  } else if (a->dtype != b->dtype) {
    t = PromoteTypes(a->dtype, b->dtype).value_or(a->dtype);
  }
  auto e = NewExpr(op, t);
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return e;
}

ExprPtr Where(ExprPtr cond, ExprPtr a, ExprPtr b) {
  DType t = a->dtype == b->dtype ? a->dtype
                                 : PromoteTypes(a->dtype, b->dtype).value_or(a->dtype);
  auto e = NewExpr(ExprOp::kWhere, t);
  e->args = {std::move(cond), std::move(a), std::move(b)};
  return e;
}

ExprPtr Cast(ExprPtr a, DType dtype) {
  if (a->dtype == dtype) return a;
  auto e = NewExpr(ExprOp::kCast, dtype);
  e->args.push_back(std::move(a));
  return e;
}

ExprPtr IndexOf(const Layout& layout, int first_var) {
  ExprPtr sum;
  for (size_t i = 0; i < layout.sizes.size(); ++i) {
    if (layout.sizes[i] == 1 || layout.strides[i] == 0) continue;
    ExprPtr term = Var(first_var + static_cast<int>(i));
    if (layout.strides[i] != 1) term = Binary(ExprOp::kMul, term, IntConst(layout.strides[i]));
    sum = sum ? Binary(ExprOp::kAdd, sum, term) : term;
  }
  if (!sum) return IntConst(layout.offset);
  if (layout.offset != 0) sum = Binary(ExprOp::kAdd, sum, IntConst(layout.offset));
  return sum;
}

bool IsExpensiveOp(ExprOp op) {
  switch (op) {
    case ExprOp::kExp: case ExprOp::kLog: case ExprOp::kSqrt: case ExprOp::kRsqrt:
    case ExprOp::kSin: case ExprOp::kCos: case ExprOp::kTan: case ExprOp::kTanh:
    case ExprOp::kSigmoid: case ExprOp::kErf: case ExprOp::kLog1p: case ExprOp::kExpm1:
    case ExprOp::kPow:
      return true;
    default:
      return false;
  }
}

int64_t ExprTreeSize(const ExprPtr& e, int64_t cap) {
  // Iterative: trees built from hostile graphs may be deep.
  int64_t count = 0;
  std::vector<const Expr*> stack = {e.get()};
  while (!stack.empty() && count < cap) {
    const Expr* x = stack.back();
    stack.pop_back();
    ++count;
    for (const ExprPtr& a : x->args) stack.push_back(a.get());
  }
  return count;
}

namespace {

// Binding strength for infix printing; 0 = printed as a call.
int Precedence(ExprOp op) {
  switch (op) {
    case ExprOp::kMul: case ExprOp::kDiv: case ExprOp::kFloorDiv: case ExprOp::kMod:
      return 5;
    case ExprOp::kAdd: case ExprOp::kSub:
      return 4;
    case ExprOp::kEq: case ExprOp::kNe: case ExprOp::kLt: case ExprOp::kLe:
    case ExprOp::kGt: case ExprOp::kGe:
      return 3;
    case ExprOp::kLogicalAnd:
      return 2;
    case ExprOp::kLogicalOr:
      return 1;
    default:
      return 0;
  }
}

const char* InfixSymbol(ExprOp op) {
  switch (op) {
    case ExprOp::kMul: return " * ";
    case ExprOp::kDiv: return " / ";
    case ExprOp::kFloorDiv: return " // ";
    case ExprOp::kMod: return " % ";
    case ExprOp::kAdd: return " + ";
    case ExprOp::kSub: return " - ";
    case ExprOp::kEq: return " == ";
    case ExprOp::kNe: return " != ";
    case ExprOp::kLt: return " < ";
    case ExprOp::kLe: return " <= ";
    case ExprOp::kGt: return " > ";
    case ExprOp::kGe: return " >= ";
    case ExprOp::kLogicalAnd: return " && ";
    case ExprOp::kLogicalOr: return " || ";
    default: return " ? ";
  }
}

std::string FormatFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s;
  for (int precision = 6; precision <= 17; ++precision) {
    s = absl::StrFormat("%.*g", precision, v);
    if (std::strtod(s.c_str(), nullptr) == v) break;
  }
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Depth-capped: printing is for tests and dumps, and an over-deep tree
// prints as "..." rather than overflowing the stack.
void Print(const Expr& e, int depth, std::string* out) {
  if (depth > 200) {
    out->append("...");
    return;
  }
  switch (e.op) {
    case ExprOp::kIndexVar:
      absl::StrAppend(out, "v", e.var);
      return;
    case ExprOp::kIntConst:
      if (e.dtype == DType::kBool) {
        out->append(e.int_value ? "true" : "false");
      } else {
        absl::StrAppend(out, e.int_value);
      }
      return;
    case ExprOp::kFloatConst:
      out->append(FormatFloat(e.float_value));
      return;
    case ExprOp::kLoad:
      absl::StrAppend(out, "load(", e.buffer, ", ");
      Print(*e.args[0], depth + 1, out);
      out->append(")");
      return;
    case ExprOp::kCast:
      out->append("cast(");
      Print(*e.args[0], depth + 1, out);
      absl::StrAppend(out, ", ", DTypeName(e.dtype), ")");
      return;
    default:
      break;
  }
  int prec = Precedence(e.op);
  if (prec > 0 && e.args.size() == 2) {
    for (int side = 0; side < 2; ++side) {
      const Expr& child = *e.args[side];
      int child_prec = Precedence(child.op);
      // Left-associative: a right operand of equal strength needs parens.
      bool parens = child_prec > 0 && (child_prec < prec || (side == 1 && child_prec == prec));
      if (parens) out->append("(");
      Print(child, depth + 1, out);
      if (parens) out->append(")");
      if (side == 0) out->append(InfixSymbol(e.op));
    }
    return;
  }
  absl::StrAppend(out, ExprOpName(e.op), "(");
  for (size_t i = 0; i < e.args.size(); ++i) {
    if (i > 0) out->append(", ");
    Print(*e.args[i], depth + 1, out);
  }
  out->append(")");
}

std::string ShortLayout(const Layout& l) {
  std::string s = absl::StrCat(DTypeName(l.dtype), "[", absl::StrJoin(l.sizes, ", "), "]");
  if (!l.IsContiguous() || l.offset != 0) {
    absl::StrAppend(&s, " strides [", absl::StrJoin(l.strides, ", "), "] offset ", l.offset);
  }
  if (l.device != "cpu") absl::StrAppend(&s, " ", l.device);
  return s;
}

std::string ArgToString(const ExternArg& a) {
  if (a.is_buffer_list) return absl::StrCat("[", absl::StrJoin(a.buffer_list, ", "), "]");
  if (!a.buffer.empty()) return a.buffer;
  return a.constant ? a.constant->DebugString() : "None";
}

}  // namespace

std::string ExprToString(const ExprPtr& e) {
  std::string out;
  if (e) Print(*e, 0, &out);
  return out;
}

const Buffer* LoopGraph::Find(absl::string_view name) const {
  for (const Buffer& b : buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

Buffer* LoopGraph::FindMutable(absl::string_view name) {
  for (Buffer& b : buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

std::string LoopGraph::ToString() const {
  std::string out;
  for (const Buffer& b : buffers) {
    absl::StrAppend(&out, b.name, " : ", ShortLayout(b.layout), " = ");
    switch (b.kind) {
      case BufferKind::kInput:
        out.append("input");
        break;
      case BufferKind::kConstant:
        out.append("constant");
        break;
      case BufferKind::kView:
        absl::StrAppend(&out, "view of ", b.view_of);
        break;
      case BufferKind::kExtern:
        if (b.extern_call) {
          std::vector<std::string> args;
          for (const ExternArg& a : b.extern_call->args) args.push_back(ArgToString(a));
          absl::StrAppend(&out, "extern ", b.extern_call->op, "(", absl::StrJoin(args, ", "), ")");
        } else {
          absl::StrAppend(&out, "output ", b.extern_output, " of ", b.extern_source);
        }
        break;
      case BufferKind::kComputed:
        if (b.pointwise) {
          absl::StrAppend(&out, "pointwise [", absl::StrJoin(b.pointwise->ranges, ", "), "] ",
                          ExprToString(b.pointwise->body));
        } else if (b.reduction) {
          absl::StrAppend(&out, ReductionTypeName(b.reduction->type), " [",
                          absl::StrJoin(b.reduction->ranges, ", "), "] over [",
                          absl::StrJoin(b.reduction->reduction_ranges, ", "), "] ",
                          ExprToString(b.reduction->body));
        }
        break;
    }
    out.append("\n");
  }
  absl::StrAppend(&out, "inputs: ", absl::StrJoin(inputs, ", "), "\n");
  absl::StrAppend(&out, "outputs: ", absl::StrJoin(outputs, ", "), "\n");
  if (interpreted_graph) out.append("whole graph interpreted\n");
  if (num_islands > 0) {
    absl::StrAppend(&out, "islands: ", num_islands, " (", num_island_nodes, " nodes)\n");
  }
  return out;
}

}  // namespace kiln::lowering
