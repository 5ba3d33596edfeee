#include "ir/scalar_eval.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln::ir {
namespace {


using Values = std::vector<IValue>;

enum class Op {
  kAdd, kSub, kMul, kDiv, kFloorDiv, kRemainder, kNeg,
  kEq, kNe, kLt, kLe, kGt, kGe,
  kAnd, kOr, kXor, kNot,
  kInt, kFloat, kBool,
  kLen, kGetItem, kSize, kDim, kNumel, kIs, kIsNot,
  kNumToTensor, kDtype, kDevice, kListCopy, kIsFloatingPoint,
};

const absl::flat_hash_map<ir::Symbol, Op>& OpTable() {
  static const auto* table = [] {
    auto* t = new absl::flat_hash_map<ir::Symbol, Op>();
    const std::pair<const char*, Op> entries[] = {
        {"aten::add", Op::kAdd},         {"aten::sub", Op::kSub},
        {"aten::mul", Op::kMul},         {"aten::div", Op::kDiv},
        {"aten::floordiv", Op::kFloorDiv}, {"aten::remainder", Op::kRemainder},
        {"aten::neg", Op::kNeg},         {"aten::eq", Op::kEq},
        {"aten::ne", Op::kNe},           {"aten::lt", Op::kLt},
        {"aten::le", Op::kLe},           {"aten::gt", Op::kGt},
        {"aten::ge", Op::kGe},           {"aten::__and__", Op::kAnd},
        {"aten::__or__", Op::kOr},       {"aten::__xor__", Op::kXor},
        {"aten::__not__", Op::kNot},     {"aten::Int", Op::kInt},
        {"aten::Float", Op::kFloat},     {"aten::Bool", Op::kBool},
        {"aten::len", Op::kLen},         {"aten::__getitem__", Op::kGetItem},
        {"aten::size", Op::kSize},       {"aten::dim", Op::kDim},
        {"aten::numel", Op::kNumel},     {"aten::__is__", Op::kIs},
        {"aten::__isnot__", Op::kIsNot}, {"prim::NumToTensor", Op::kNumToTensor},
        {"prim::dtype", Op::kDtype},     {"prim::device", Op::kDevice},
        {"aten::list", Op::kListCopy},   {"aten::is_floating_point", Op::kIsFloatingPoint},
    };
    for (const auto& [name, op] : entries) t->emplace(ir::Symbol::FromQualString(name), op);
    return t;
  }();
  return *table;
}

absl::Status NotHandled() { return absl::UnimplementedError("no built-in evaluation"); }
absl::Status Refuse(absl::string_view why) { return absl::FailedPreconditionError(why); }

Values One(IValue v) {
  Values out;
  out.push_back(std::move(v));
  return out;
}

bool IsIntLike(const IValue& v) { return v.isInt(); }
bool IsNum(const IValue& v) { return v.isInt() || v.isDouble(); }
double AsDouble(const IValue& v) { return v.isInt() ? static_cast<double>(v.toInt()) : v.toDouble(); }

// Ints whose conversion to double is exact, so C++'s promotion and Python's
// exact int/float semantics agree.
constexpr int64_t kExactDoubleInt = int64_t{1} << 53;
bool ExactInDouble(const IValue& v) {
  return !v.isInt() || (v.toInt() >= -kExactDoubleInt && v.toInt() <= kExactDoubleInt);
}

bool IsAscii(const std::string& s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// Python's index normalisation; nullopt when out of range.
std::optional<size_t> NormalizeIndex(int64_t i, size_t size) {
  const int64_t n = static_cast<int64_t>(size);
  if (i < 0) i += n;
  if (i < 0 || i >= n) return std::nullopt;
  return static_cast<size_t>(i);
}

// Python semantics for float // and %, as CPython and TorchScript compute
// floordiv.
double PyFloorDiv(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, a / b);
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1.0;
  return floor_div;
}

double PyMod(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

absl::StatusOr<Values> IntArith(Op op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case Op::kAdd:
      if (__builtin_add_overflow(a, b, &r)) return Refuse("int overflow");
      return One(IValue::Int(r));
    case Op::kSub:
      if (__builtin_sub_overflow(a, b, &r)) return Refuse("int overflow");
      return One(IValue::Int(r));
    case Op::kMul:
      if (__builtin_mul_overflow(a, b, &r)) return Refuse("int overflow");
      return One(IValue::Int(r));
    case Op::kDiv:
      if (b == 0) return Refuse("division by zero");
      if (!ExactInDouble(IValue::Int(a)) || !ExactInDouble(IValue::Int(b))) {
        return Refuse("int too large for exact true division");
      }
      return One(IValue::Double(static_cast<double>(a) / static_cast<double>(b)));
    case Op::kFloorDiv: {
      if (b == 0) return Refuse("integer division by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return Refuse("int overflow");
      int64_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return One(IValue::Int(q));
    }
    case Op::kRemainder: {
      if (b == 0) return Refuse("integer modulo by zero");
      if (b == -1) return One(IValue::Int(0));
      int64_t m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) m += b;
      return One(IValue::Int(m));
    }
    case Op::kAnd: return One(IValue::Int(a & b));
    case Op::kOr: return One(IValue::Int(a | b));
    case Op::kXor: return One(IValue::Int(a ^ b));
    case Op::kEq: return One(IValue::Bool(a == b));
    case Op::kNe: return One(IValue::Bool(a != b));
    case Op::kLt: return One(IValue::Bool(a < b));
    case Op::kLe: return One(IValue::Bool(a <= b));
    case Op::kGt: return One(IValue::Bool(a > b));
    case Op::kGe: return One(IValue::Bool(a >= b));
    default: return NotHandled();
  }
}

absl::StatusOr<Values> FloatArith(Op op, double a, double b) {
  switch (op) {
    case Op::kAdd: return One(IValue::Double(a + b));
    case Op::kSub: return One(IValue::Double(a - b));
    case Op::kMul: return One(IValue::Double(a * b));
    case Op::kDiv:
      if (b == 0) return Refuse("float division by zero");
      return One(IValue::Double(a / b));
    case Op::kFloorDiv:
      if (b == 0) return Refuse("float floor division by zero");
      return One(IValue::Double(PyFloorDiv(a, b)));
    case Op::kRemainder: {
      if (b == 0) return Refuse("float modulo by zero");
      // TorchScript computes fmod(b + fmod(a, b), b), which can round
      // differently from Python's %; fold only where both agree.
      const double py = PyMod(a, b);
      const double ts = std::fmod(b + std::fmod(a, b), b);
      if (!(py == ts && std::signbit(py) == std::signbit(ts))) {
        return Refuse("float remainder differs between Python and TorchScript here");
      }
      return One(IValue::Double(py));
    }
    case Op::kEq: return One(IValue::Bool(a == b));
    case Op::kNe: return One(IValue::Bool(a != b));
    case Op::kLt: return One(IValue::Bool(a < b));
    case Op::kLe: return One(IValue::Bool(a <= b));
    case Op::kGt: return One(IValue::Bool(a > b));
    case Op::kGe: return One(IValue::Bool(a >= b));
    default: return NotHandled();
  }
}

// Element-wise equality of two lists of scalars; nullopt for element kinds
// without a defined comparison here (tensors).
std::optional<bool> ListsEqual(const IValue& a, const IValue& b) {
  const Values& x = a.elements();
  const Values& y = b.elements();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].isTensor() || y[i].isTensor()) return std::nullopt;
    if (IsNum(x[i]) && IsNum(y[i])) {
      if (x[i].isInt() && y[i].isInt()) {
        if (x[i].toInt() != y[i].toInt()) return false;
      } else if (AsDouble(x[i]) != AsDouble(y[i])) {
        return false;
      }
    } else if (x[i].tag() != y[i].tag()) {
      return std::nullopt;
    } else if (x[i] != y[i]) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<Values> Binary(Op op, const IValue& a, const IValue& b) {
  if (IsIntLike(a) && IsIntLike(b)) return IntArith(op, a.toInt(), b.toInt());
  if (IsNum(a) && IsNum(b)) {
    if (op == Op::kAnd || op == Op::kOr || op == Op::kXor) return NotHandled();
    if (!ExactInDouble(a) || !ExactInDouble(b)) return Refuse("int not exact as a float");
    return FloatArith(op, AsDouble(a), AsDouble(b));
  }
  if (a.isBool() && b.isBool()) {
    const bool x = a.toBool(), y = b.toBool();
    switch (op) {
      case Op::kEq: return One(IValue::Bool(x == y));
      case Op::kNe: return One(IValue::Bool(x != y));
      case Op::kAnd: return One(IValue::Bool(x && y));
      case Op::kOr: return One(IValue::Bool(x || y));
      case Op::kXor: return One(IValue::Bool(x != y));
      default: return NotHandled();
    }
  }
  if (a.isString() && b.isString()) {
    const std::string& x = a.toString();
    const std::string& y = b.toString();
    switch (op) {
      case Op::kAdd: return One(IValue::String(x + y));
      case Op::kEq: return One(IValue::Bool(x == y));
      case Op::kNe: return One(IValue::Bool(x != y));
      case Op::kLt: return One(IValue::Bool(x < y));
      case Op::kLe: return One(IValue::Bool(x <= y));
      case Op::kGt: return One(IValue::Bool(x > y));
      case Op::kGe: return One(IValue::Bool(x >= y));
      default: return NotHandled();
    }
  }
  if (a.isDevice() && b.isDevice()) {
    if (op == Op::kEq) return One(IValue::Bool(a.toDevice() == b.toDevice()));
    if (op == Op::kNe) return One(IValue::Bool(a.toDevice() != b.toDevice()));
    return NotHandled();
  }
  if (a.isList() && b.isList()) {
    if (op == Op::kAdd) {
      if (!a.elements().empty() && !b.elements().empty() &&
          a.elements()[0].tag() != b.elements()[0].tag()) {
        return NotHandled();
      }
      Values all = a.elements();
      all.insert(all.end(), b.elements().begin(), b.elements().end());
      return One(IValue::List(std::move(all)));
    }
    if (op == Op::kEq || op == Op::kNe) {
      std::optional<bool> eq = ListsEqual(a, b);
      if (!eq) return NotHandled();
      return One(IValue::Bool(op == Op::kEq ? *eq : !*eq));
    }
  }
  return NotHandled();
}

// A tensor whose shape and data are real (not a `<Tensor>` placeholder).
absl::StatusOr<const Tensor*> RealTensor(const IValue& v) {
  if (!v.isTensor() || !v.toTensor().defined()) return NotHandled();
  if (!v.toTensor().has_data()) return Refuse("placeholder tensor (no data)");
  return &v.toTensor();
}

absl::StatusOr<IValue> TensorItem(const Tensor& t, Op op) {
  if (t.numel() != 1) return Refuse("tensor with more than one element");
  if (IsFloatingPoint(t.dtype())) {
    const double d = t.GetDouble(0);
    if (op == Op::kFloat) return IValue::Double(d);
    if (op == Op::kBool) return IValue::Bool(d != 0);
    if (!std::isfinite(d) || d >= 9.2e18 || d <= -9.2e18) return Refuse("not an int");
    return IValue::Int(static_cast<int64_t>(d));
  }
  if (!IsIntegral(t.dtype(), /*include_bool=*/true)) return NotHandled();
  const int64_t i = t.GetInt(0);
  if (op == Op::kFloat) return IValue::Double(static_cast<double>(i));
  if (op == Op::kBool) return IValue::Bool(i != 0);
  return IValue::Int(i);
}

absl::StatusOr<Values> Convert(Op op, const IValue& a) {
  if (a.isTensor()) {
    absl::StatusOr<const Tensor*> t = RealTensor(a);
    if (!t.ok()) return t.status();
    absl::StatusOr<IValue> v = TensorItem(**t, op);
    if (!v.ok()) return v.status();
    return One(*std::move(v));
  }
  switch (op) {
    case Op::kInt:
      if (a.isInt()) return One(a);
      if (a.isBool()) return One(IValue::Int(a.toBool() ? 1 : 0));
      if (a.isDouble()) {
        const double d = a.toDouble();
        if (!std::isfinite(d) || d >= 9.2e18 || d <= -9.2e18) return Refuse("float not an int");
        return One(IValue::Int(static_cast<int64_t>(d)));
      }
      return NotHandled();
    case Op::kFloat:
      if (a.isNumber()) return One(IValue::Double(a.toNumberAsDouble()));
      return NotHandled();
    case Op::kBool:
      if (a.isBool()) return One(a);
      if (a.isInt()) return One(IValue::Bool(a.toInt() != 0));
      if (a.isDouble()) return One(IValue::Bool(a.toDouble() != 0));
      return NotHandled();
    default:
      return NotHandled();
  }
}

absl::StatusOr<Values> Unary(Op op, const IValue& a) {
  switch (op) {
    case Op::kNeg:
      if (a.isInt()) {
        if (a.toInt() == std::numeric_limits<int64_t>::min()) return Refuse("int overflow");
        return One(IValue::Int(-a.toInt()));
      }
      if (a.isDouble()) return One(IValue::Double(-a.toDouble()));
      return NotHandled();
    case Op::kNot:
      if (a.isBool()) return One(IValue::Bool(!a.toBool()));
      return NotHandled();
    case Op::kInt:
    case Op::kFloat:
    case Op::kBool:
      return Convert(op, a);
    case Op::kLen:
      if (a.isList()) return One(IValue::Int(static_cast<int64_t>(a.elements().size())));
      if (a.isString()) {
        if (!IsAscii(a.toString())) return Refuse("non-ASCII string length");
        return One(IValue::Int(static_cast<int64_t>(a.toString().size())));
      }
      if (a.isTensor()) {
        absl::StatusOr<const Tensor*> t = RealTensor(a);
        if (!t.ok()) return t.status();
        if ((*t)->dim() == 0) return Refuse("len() of a 0-d tensor");
        return One(IValue::Int((*t)->size(0)));
      }
      return NotHandled();
    case Op::kSize:
    case Op::kDim:
    case Op::kNumel:
    case Op::kDtype:
    case Op::kDevice:
    case Op::kIsFloatingPoint: {
      if (!a.isTensor()) return NotHandled();
      absl::StatusOr<const Tensor*> t = RealTensor(a);
      if (!t.ok()) return t.status();
      const Tensor& x = **t;
      if (op == Op::kSize) return One(IValue::IntList(x.sizes()));
      if (op == Op::kDim) return One(IValue::Int(x.dim()));
      if (op == Op::kNumel) return One(IValue::Int(x.numel()));
      if (op == Op::kDtype) return One(IValue::Int(DTypeCode(x.dtype())));
      if (op == Op::kIsFloatingPoint) return One(IValue::Bool(IsFloatingPoint(x.dtype())));
      return One(IValue::FromDevice(ir::Device{"cpu", -1}));  // constants live on the CPU
    }
    case Op::kNumToTensor:
      if (a.isInt()) return One(IValue::FromTensor(Tensor::ScalarInt(a.toInt(), DType::kInt64)));
      if (a.isDouble()) {
        return One(IValue::FromTensor(Tensor::ScalarDouble(a.toDouble(), DType::kFloat64)));
      }
      return NotHandled();
    case Op::kListCopy:
      if (a.isList()) return One(a);
      return NotHandled();
    default:
      return NotHandled();
  }
}

absl::StatusOr<Values> GetItem(const IValue& container, const IValue& index) {
  if (!index.isInt()) return NotHandled();
  if (container.isList()) {
    std::optional<size_t> i = NormalizeIndex(index.toInt(), container.elements().size());
    if (!i) return Refuse("list index out of range");
    return One(container.elements()[*i]);
  }
  if (container.isString()) {
    const std::string& s = container.toString();
    if (!IsAscii(s)) return Refuse("non-ASCII string index");
    std::optional<size_t> i = NormalizeIndex(index.toInt(), s.size());
    if (!i) return Refuse("string index out of range");
    return One(IValue::String(std::string(1, s[*i])));
  }
  return NotHandled();
}

}  // namespace

absl::StatusOr<Values> EvaluateScalarOp(ir::Symbol kind, absl::Span<const IValue> inputs) {
  const auto& table = OpTable();
  auto it = table.find(kind);
  if (it == table.end()) return NotHandled();
  const Op op = it->second;
  if (op == Op::kIs || op == Op::kIsNot) {
    if (inputs.size() != 2) return NotHandled();
    // Identity is only knowable when one side is None.
    if (!inputs[0].isNone() && !inputs[1].isNone()) return NotHandled();
    const bool same = inputs[0].isNone() && inputs[1].isNone();
    return One(IValue::Bool(op == Op::kIs ? same : !same));
  }
  if (op == Op::kGetItem) {
    if (inputs.size() != 2) return NotHandled();
    return GetItem(inputs[0], inputs[1]);
  }
  if (op == Op::kSize && inputs.size() == 2) {  // aten::size.int(Tensor self, int dim)
    if (!inputs[1].isInt() || !inputs[0].isTensor()) return NotHandled();
    absl::StatusOr<const Tensor*> t = RealTensor(inputs[0]);
    if (!t.ok()) return t.status();
    std::optional<size_t> d = NormalizeIndex(inputs[1].toInt(), (*t)->sizes().size());
    if (!d) return Refuse("dimension out of range");
    return One(IValue::Int((*t)->sizes()[*d]));
  }
  if (inputs.size() == 1) return Unary(op, inputs[0]);
  if (inputs.size() == 2) {
    switch (op) {
      case Op::kAdd: case Op::kSub: case Op::kMul: case Op::kDiv: case Op::kFloorDiv:
      case Op::kRemainder: case Op::kEq: case Op::kNe: case Op::kLt: case Op::kLe:
      case Op::kGt: case Op::kGe: case Op::kAnd: case Op::kOr: case Op::kXor:
        return Binary(op, inputs[0], inputs[1]);
      default:
        return NotHandled();
    }
  }
  return NotHandled();
}

}  // namespace kiln::ir
