// Unary, binary, where, clamp and to.
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels.h"
#include "support/promotion.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

constexpr double kPi = 3.14159265358979323846;

absl::Status Unsupported(const char* op, DType t) {
  return absl::UnimplementedError(
      absl::StrCat("reference kernel ", op, " does not support dtype ", DTypeName(t)));
}

absl::Status CheckInput(const char* op, const Tensor& t) {
  if (!t.defined() || !t.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": input tensor has no data"));
  }
  if (!IsStorableDType(t.dtype())) return Unsupported(op, t.dtype());
  return absl::OkStatus();
}

DTypeOperand ToDTypeOperand(const Operand& o) {
  if (o.is_scalar) return {o.value.dtype(), OperandClass::kScalar};
  return {o.value.dtype(), o.value.dim() > 0 ? OperandClass::kDimensioned : OperandClass::kZeroDim};
}

// Wrapping int64 arithmetic (signed overflow is UB; ATen wraps).
int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Softplus(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

double UnaryDouble(UnaryOp op, double x, const UnaryParams& p) {
  switch (op) {
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return std::fabs(x);
    case UnaryOp::kExp: return std::exp(x);
    case UnaryOp::kLog: return std::log(x);
    case UnaryOp::kSqrt: return std::sqrt(x);
    case UnaryOp::kRsqrt: return 1.0 / std::sqrt(x);
    case UnaryOp::kSin: return std::sin(x);
    case UnaryOp::kCos: return std::cos(x);
    case UnaryOp::kTanh: return std::tanh(x);
    case UnaryOp::kSigmoid: return Sigmoid(x);
    case UnaryOp::kRelu: return std::isnan(x) ? x : (x > 0 ? x : 0.0);
    case UnaryOp::kErf: return std::erf(x);
    case UnaryOp::kFloor: return std::floor(x);
    case UnaryOp::kCeil: return std::ceil(x);
    case UnaryOp::kRound: return std::nearbyint(x);  // half to even
    case UnaryOp::kReciprocal: return 1.0 / x;
    case UnaryOp::kGelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case UnaryOp::kGeluTanh: {
      const double inner = std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x);
      return 0.5 * x * (1.0 + std::tanh(inner));
    }
    case UnaryOp::kSilu: return x * Sigmoid(x);
    case UnaryOp::kHardswish: return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
    case UnaryOp::kHardsigmoid: return std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
    case UnaryOp::kLeakyRelu: return x > 0 ? x : x * p.negative_slope;
    case UnaryOp::kElu:
      return x > 0 ? x * p.scale : p.alpha * p.scale * (std::exp(x * p.input_scale) - 1.0);
    case UnaryOp::kSoftplus: return Softplus(x, p.beta, p.threshold);
    case UnaryOp::kMish: return x * std::tanh(Softplus(x, 1.0, 20.0));
  }
  return x;
}

enum class UnaryKind { kKeepsIntegers, kPromotesIntegers, kFloatOnly };

UnaryKind KindOf(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kRelu:
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound: return UnaryKind::kKeepsIntegers;
    case UnaryOp::kExp:
    case UnaryOp::kLog:
    case UnaryOp::kSqrt:
    case UnaryOp::kRsqrt:
    case UnaryOp::kSin:
    case UnaryOp::kCos:
    case UnaryOp::kTanh:
    case UnaryOp::kSigmoid:
    case UnaryOp::kErf:
    case UnaryOp::kReciprocal: return UnaryKind::kPromotesIntegers;
    default: return UnaryKind::kFloatOnly;
  }
}

}  // namespace

const char* UnaryOpName(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg: return "neg";
    case UnaryOp::kAbs: return "abs";
    case UnaryOp::kExp: return "exp";
    case UnaryOp::kLog: return "log";
    case UnaryOp::kSqrt: return "sqrt";
    case UnaryOp::kRsqrt: return "rsqrt";
    case UnaryOp::kSin: return "sin";
    case UnaryOp::kCos: return "cos";
    case UnaryOp::kTanh: return "tanh";
    case UnaryOp::kSigmoid: return "sigmoid";
    case UnaryOp::kRelu: return "relu";
    case UnaryOp::kErf: return "erf";
    case UnaryOp::kFloor: return "floor";
    case UnaryOp::kCeil: return "ceil";
    case UnaryOp::kRound: return "round";
    case UnaryOp::kReciprocal: return "reciprocal";
    case UnaryOp::kGelu: return "gelu";
    case UnaryOp::kGeluTanh: return "gelu(tanh)";
    case UnaryOp::kSilu: return "silu";
    case UnaryOp::kHardswish: return "hardswish";
    case UnaryOp::kHardsigmoid: return "hardsigmoid";
    case UnaryOp::kLeakyRelu: return "leaky_relu";
    case UnaryOp::kElu: return "elu";
    case UnaryOp::kSoftplus: return "softplus";
    case UnaryOp::kMish: return "mish";
  }
  return "?";
}

absl::StatusOr<Tensor> Unary(UnaryOp op, const Tensor& x, const UnaryParams& params) {
  const char* name = UnaryOpName(op);
  RETURN_IF_ERROR(CheckInput(name, x));
  const DType in = x.dtype();
  const bool integral = IsIntegral(in, /*include_bool=*/true);
  const UnaryKind kind = KindOf(op);
  if (integral && kind == UnaryKind::kFloatOnly) return Unsupported(name, in);
  if (in == DType::kBool && kind == UnaryKind::kKeepsIntegers) return Unsupported(name, in);
  const DType out_dtype = integral && kind == UnaryKind::kPromotesIntegers ? DType::kFloat32 : in;
  Tensor out = Tensor::Empty(out_dtype, x.sizes());
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (IsFloatingPoint(out_dtype)) {
      RETURN_IF_ERROR(SetDouble(out, i, UnaryDouble(op, x.GetDouble(i), params)));
      continue;
    }
    const int64_t v = x.GetInt(i);
    int64_t r = v;
    if (op == UnaryOp::kNeg) r = WrapSub(0, v);
    if (op == UnaryOp::kAbs) r = v < 0 ? WrapSub(0, v) : v;
    if (op == UnaryOp::kRelu) r = v > 0 ? v : 0;
    RETURN_IF_ERROR(SetInt(out, i, r));
  }
  return out;
}

const char* BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "add";
    case BinaryOp::kSub: return "sub";
    case BinaryOp::kMul: return "mul";
    case BinaryOp::kDiv: return "div";
    case BinaryOp::kDivTrunc: return "div(trunc)";
    case BinaryOp::kDivFloor: return "div(floor)";
    case BinaryOp::kPow: return "pow";
    case BinaryOp::kMaximum: return "maximum";
    case BinaryOp::kMinimum: return "minimum";
    case BinaryOp::kEq: return "eq";
    case BinaryOp::kNe: return "ne";
    case BinaryOp::kLt: return "lt";
    case BinaryOp::kLe: return "le";
    case BinaryOp::kGt: return "gt";
    case BinaryOp::kGe: return "ge";
    case BinaryOp::kLogicalAnd: return "logical_and";
    case BinaryOp::kLogicalOr: return "logical_or";
    case BinaryOp::kLogicalXor: return "logical_xor";
    case BinaryOp::kBitwiseAnd: return "bitwise_and";
    case BinaryOp::kBitwiseOr: return "bitwise_or";
    case BinaryOp::kBitwiseXor: return "bitwise_xor";
  }
  return "?";
}

namespace {

bool IsComparison(BinaryOp op) {
  return op == BinaryOp::kEq || op == BinaryOp::kNe || op == BinaryOp::kLt ||
         op == BinaryOp::kLe || op == BinaryOp::kGt || op == BinaryOp::kGe;
}
bool IsLogical(BinaryOp op) {
  return op == BinaryOp::kLogicalAnd || op == BinaryOp::kLogicalOr ||
         op == BinaryOp::kLogicalXor;
}
bool IsBitwise(BinaryOp op) {
  return op == BinaryOp::kBitwiseAnd || op == BinaryOp::kBitwiseOr ||
         op == BinaryOp::kBitwiseXor;
}

bool Compare(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kEq: return a == b;
    case BinaryOp::kNe: return a != b;
    case BinaryOp::kLt: return a < b;
    case BinaryOp::kLe: return a <= b;
    case BinaryOp::kGt: return a > b;
    default: return a >= b;
  }
}
bool CompareInt(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
    case BinaryOp::kEq: return a == b;
    case BinaryOp::kNe: return a != b;
    case BinaryOp::kLt: return a < b;
    case BinaryOp::kLe: return a <= b;
    case BinaryOp::kGt: return a > b;
    default: return a >= b;
  }
}

double BinaryDouble(BinaryOp op, double a, double b, double alpha) {
  switch (op) {
    case BinaryOp::kAdd: return a + alpha * b;
    case BinaryOp::kSub: return a - alpha * b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kDivTrunc: return std::trunc(a / b);
    case BinaryOp::kDivFloor: return std::floor(a / b);
    case BinaryOp::kPow: return std::pow(a, b);
    case BinaryOp::kMaximum: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    default: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  }
}

absl::StatusOr<int64_t> IntPow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return exp % 2 == 0 ? 1 : -1;
    return absl::InvalidArgumentError("pow: integers to negative integer powers are not allowed");
  }
  int64_t r = 1;
  while (exp > 0) {
    if (exp & 1) r = WrapMul(r, base);
    base = WrapMul(base, base);
    exp >>= 1;
  }
  return r;
}

absl::StatusOr<int64_t> BinaryInt(BinaryOp op, int64_t a, int64_t b, int64_t alpha) {
  switch (op) {
    case BinaryOp::kAdd: return WrapAdd(a, WrapMul(alpha, b));
    case BinaryOp::kSub: return WrapSub(a, WrapMul(alpha, b));
    case BinaryOp::kMul: return WrapMul(a, b);
    case BinaryOp::kDivTrunc:
    case BinaryOp::kDivFloor: {
      if (b == 0) return absl::InvalidArgumentError("div: integer division by zero");
      if (b == -1) return WrapSub(0, a);
      int64_t q = a / b;
      if (op == BinaryOp::kDivFloor && (a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    }
    case BinaryOp::kPow: return IntPow(a, b);
    case BinaryOp::kMaximum: return std::max(a, b);
    case BinaryOp::kMinimum: return std::min(a, b);
    case BinaryOp::kBitwiseAnd: return a & b;
    case BinaryOp::kBitwiseOr: return a | b;
    case BinaryOp::kBitwiseXor: return a ^ b;
    default: return absl::InternalError("not an integer op");
  }
}

// float32 arithmetic (ops of BinaryDouble) on float32 operands already
// expanded to the output's shape (strides, zero where broadcast): constant
// folding of weights and masks at compile time, where the element-by-element
// GetDouble/SetDouble loop showed in profiles (swin_t's shape resolution).
// The same double-precision math as the general loop, rounded the same way.
bool FloatFastPath(BinaryOp op, const Tensor& ea, const Tensor& eb, Tensor& out, double alpha) {
  if (out.dtype() != DType::kFloat32 || ea.dtype() != DType::kFloat32 || eb.dtype() != DType::kFloat32) return false;
  if (IsLogical(op) || IsComparison(op) || IsBitwise(op)) return false;
  if (!ea.has_data() || !eb.has_data() || !out.is_contiguous()) return false;
  const std::vector<int64_t>& shape = out.sizes();
  const size_t rank = shape.size();
  if (ea.dim() != static_cast<int64_t>(rank) || eb.dim() != static_cast<int64_t>(rank)) return false;
  const int64_t n = out.numel();
  if (n == 0) return true;
  const float* x = ea.data<float>();
  const float* y = eb.data<float>();
  float* o = out.data<float>();
  if (rank == 0) {
    o[0] = static_cast<float>(BinaryDouble(op, x[0], y[0], alpha));
    return true;
  }
  const int64_t inner = shape[rank - 1];
  const int64_t ix = ea.strides()[rank - 1], iy = eb.strides()[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t ox = 0, oy = 0;  // element offsets of the current row
  for (int64_t row = 0; row < n / inner; ++row) {
    for (int64_t j = 0; j < inner; ++j) {
      o[row * inner + j] =
          static_cast<float>(BinaryDouble(op, static_cast<double>(x[ox + j * ix]), static_cast<double>(y[oy + j * iy]), alpha));
    }
    // Next row: the odometer over the outer dims.
    for (size_t d = rank - 1; d-- > 0;) {
      ox += ea.strides()[d];
      oy += eb.strides()[d];
      if (++index[d] < shape[d]) break;
      ox -= ea.strides()[d] * shape[d];
      oy -= eb.strides()[d] * shape[d];
      index[d] = 0;
    }
  }
  return true;
}

// Both operands expanded to the broadcast shape.
absl::StatusOr<std::vector<int64_t>> BroadcastAll(absl::Span<const Tensor* const> ts) {
  std::vector<int64_t> shape;
  for (const Tensor* t : ts) {
    ASSIGN_OR_RETURN(shape, BroadcastShapes(shape, t->sizes()));
  }
  return shape;
}

}  // namespace

absl::StatusOr<Tensor> Binary(BinaryOp op, const Operand& a, const Operand& b,
                              const Operand& alpha) {
  const char* name = BinaryOpName(op);
  RETURN_IF_ERROR(CheckInput(name, a.value));
  RETURN_IF_ERROR(CheckInput(name, b.value));
  const DTypeOperand ops[] = {ToDTypeOperand(a), ToDTypeOperand(b)};
  ASSIGN_OR_RETURN(DType common, ResultType(ops));
  if (!IsStorableDType(common)) return Unsupported(name, common);
  DType out_dtype = common;
  if (IsComparison(op) || IsLogical(op)) out_dtype = DType::kBool;
  if (op == BinaryOp::kDiv && IsIntegral(common, true)) out_dtype = common = DType::kFloat32;
  if (IsBitwise(op) && IsFloatingPoint(common)) return Unsupported(name, common);
  if (op == BinaryOp::kSub && common == DType::kBool) {
    return absl::InvalidArgumentError("sub: subtraction of bool tensors is not supported");
  }
  const bool float_math = IsFloatingPoint(common);
  if (!float_math && (op == BinaryOp::kAdd || op == BinaryOp::kSub) && alpha.value.has_data() &&
      IsFloatingPoint(alpha.value.dtype())) {
    const double av = alpha.value.GetDouble(0);
    if (av != std::floor(av)) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": alpha ", av, " must be an integer for ", DTypeName(common), " inputs"));
    }
  }
  const Tensor* all[] = {&a.value, &b.value};
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastAll(all));
  ASSIGN_OR_RETURN(Tensor ea, Expand(a.value, shape));
  ASSIGN_OR_RETURN(Tensor eb, Expand(b.value, shape));
  Tensor out = Tensor::Empty(out_dtype, shape);
  const int64_t n = out.numel();
  const double alpha_d = alpha.value.GetDouble(0);
  const int64_t alpha_i = alpha.value.GetInt(0);
  if (FloatFastPath(op, ea, eb, out, alpha_d)) return out;
  for (int64_t i = 0; i < n; ++i) {
    if (IsLogical(op)) {
      const bool x = ea.GetDouble(i) != 0, y = eb.GetDouble(i) != 0;
      const bool r = op == BinaryOp::kLogicalAnd ? (x && y)
                     : op == BinaryOp::kLogicalOr ? (x || y)
                                                   : (x != y);
      RETURN_IF_ERROR(SetInt(out, i, r));
    } else if (IsComparison(op)) {
      const bool r = float_math ? Compare(op, ea.GetDouble(i), eb.GetDouble(i))
                                : CompareInt(op, ea.GetInt(i), eb.GetInt(i));
      RETURN_IF_ERROR(SetInt(out, i, r));
    } else if (float_math) {
      RETURN_IF_ERROR(SetDouble(out, i, BinaryDouble(op, ea.GetDouble(i), eb.GetDouble(i), alpha_d)));
    } else {
      // Scalars enter integer math through GetInt, which truncates; a float
      // scalar with an integral result cannot happen (promotion makes it float).
      ASSIGN_OR_RETURN(int64_t r, BinaryInt(op, ea.GetInt(i), eb.GetInt(i), alpha_i));
      RETURN_IF_ERROR(SetInt(out, i, r));
    }
  }
  return out;
}

absl::StatusOr<Tensor> Where(const Tensor& cond, const Operand& a, const Operand& b) {
  RETURN_IF_ERROR(CheckInput("where", cond));
  RETURN_IF_ERROR(CheckInput("where", a.value));
  RETURN_IF_ERROR(CheckInput("where", b.value));
  if (cond.dtype() != DType::kBool && cond.dtype() != DType::kUInt8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "where: condition must be bool, got ", DTypeName(cond.dtype())));
  }
  const DTypeOperand ops[] = {ToDTypeOperand(a), ToDTypeOperand(b)};
  ASSIGN_OR_RETURN(DType out_dtype, ResultType(ops));
  if (!IsStorableDType(out_dtype)) return Unsupported("where", out_dtype);
  const Tensor* all[] = {&cond, &a.value, &b.value};
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastAll(all));
  ASSIGN_OR_RETURN(Tensor ec, Expand(cond, shape));
  ASSIGN_OR_RETURN(Tensor ea, Expand(a.value, shape));
  ASSIGN_OR_RETURN(Tensor eb, Expand(b.value, shape));
  Tensor out = Tensor::Empty(out_dtype, shape);
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& src = ec.GetInt(i) != 0 ? ea : eb;
    if (IsFloatingPoint(out_dtype)) {
      RETURN_IF_ERROR(SetDouble(out, i, src.GetDouble(i)));
    } else {
      RETURN_IF_ERROR(SetInt(out, i, src.GetInt(i)));
    }
  }
  return out;
}

absl::StatusOr<Tensor> Clamp(const Tensor& x, const std::optional<Operand>& min,
                             const std::optional<Operand>& max) {
  RETURN_IF_ERROR(CheckInput("clamp", x));
  if (!min && !max) {
    return absl::InvalidArgumentError("clamp: at least one of 'min' or 'max' must not be None");
  }
  std::vector<DTypeOperand> ops = {ToDTypeOperand(Operand::FromTensor(x))};
  std::vector<const Tensor*> all = {&x};
  for (const std::optional<Operand>* bound : {&min, &max}) {
    if (!*bound) continue;
    RETURN_IF_ERROR(CheckInput("clamp", (*bound)->value));
    ops.push_back(ToDTypeOperand(**bound));
    all.push_back(&(*bound)->value);
  }
  ASSIGN_OR_RETURN(DType out_dtype, ResultType(ops));
  if (!IsStorableDType(out_dtype) || out_dtype == DType::kBool) {
    return Unsupported("clamp", out_dtype);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastAll(all));
  ASSIGN_OR_RETURN(Tensor ex, Expand(x, shape));
  Tensor elo, ehi;
  if (min) {
    ASSIGN_OR_RETURN(elo, Expand(min->value, shape));
  }
  if (max) {
    ASSIGN_OR_RETURN(ehi, Expand(max->value, shape));
  }
  Tensor out = Tensor::Empty(out_dtype, shape);
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (IsFloatingPoint(out_dtype)) {
      double v = ex.GetDouble(i);
      if (min) v = BinaryDouble(BinaryOp::kMaximum, v, elo.GetDouble(i), 1);
      if (max) v = BinaryDouble(BinaryOp::kMinimum, v, ehi.GetDouble(i), 1);
      RETURN_IF_ERROR(SetDouble(out, i, v));
    } else {
      int64_t v = ex.GetInt(i);
      if (min) v = std::max(v, elo.GetInt(i));
      if (max) v = std::min(v, ehi.GetInt(i));
      RETURN_IF_ERROR(SetInt(out, i, v));
    }
  }
  return out;
}

absl::StatusOr<Tensor> To(const Tensor& x, DType dtype, bool copy) {
  if (!copy && x.defined() && x.dtype() == dtype) return x;
  return CastTo(x, dtype);
}

}  // namespace kiln::runtime
