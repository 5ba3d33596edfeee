// Elementwise math of the math family: unary functions and activations,
// binary ops with broadcasting, lerp/addcmul/addcdiv, prelu, glu, shrink.
#include "runtime/kernels_math.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/promotion.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

absl::Status Unsupported(absl::string_view op, DType t) {
  return absl::UnimplementedError(
      absl::StrCat("reference kernel ", op, " does not support dtype ", DTypeName(t)));
}

absl::Status CheckInput(absl::string_view op, const Tensor& t) {
  if (!t.defined() || !t.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": input tensor has no data"));
  }
  if (!IsStorableDType(t.dtype())) return Unsupported(op, t.dtype());
  return absl::OkStatus();
}

DTypeOperand ClassOf(const Operand& o) {
  if (o.is_scalar) return {o.value.dtype(), OperandClass::kScalar};
  return {o.value.dtype(),
          o.value.dim() > 0 ? OperandClass::kDimensioned : OperandClass::kZeroDim};
}

// What a unary op does with integral (and bool) inputs.
enum class IntRule {
  kToFloat,    // computes in float32 (exp2, atan, ...)
  kKeep,       // same dtype, integer function
  kFloatOnly,  // integral inputs are unsupported (as in ATen)
  kToBool,     // bool output for every input dtype (isnan, logical_not)
};

using DoubleFn = std::function<double(double, absl::Span<const std::optional<double>>)>;
using IntFn = std::function<int64_t(int64_t, absl::Span<const std::optional<double>>)>;

struct UnaryDef {
  MathUnaryInfo info;
  IntRule rule;
  DoubleFn f;
  IntFn fi;  // kKeep / kToBool on integers (null: use f on the value)
};

double P(absl::Span<const std::optional<double>> p, size_t i, double def) {
  return i < p.size() && p[i] ? *p[i] : def;
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double LogSigmoid(double x) {
  // -softplus(-x), stable for both signs.
  return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x));
}

double ErfInv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return NAN;
  if (y == 1) return INFINITY;
  if (y == -1) return -INFINITY;
  // Giles' single-precision approximation as a start, then Newton steps on
  // erf(x) - y for double accuracy.
  double w = -std::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                     -0.00125372503, -0.00417768164, 0.246640727, 1.50140941}) {
      p = c + p * w;
    }
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682}) {
      p = c + p * w;
    }
    x = p * y;
  }
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int i = 0; i < 3; ++i) {
    const double err = std::erf(x) - y;
    x -= err / (two_over_sqrt_pi * std::exp(-x * x));
  }
  return x;
}

double Sign(double x) {
  if (std::isnan(x)) return x;
  return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
}

using Params = absl::Span<const std::optional<double>>;

const std::vector<UnaryDef>& UnaryDefs() {
  static const std::vector<UnaryDef>* const defs = new std::vector<UnaryDef>{
      {{"tan", 0}, IntRule::kToFloat, [](double x, Params) { return std::tan(x); }, nullptr},
      {{"asin", 0}, IntRule::kToFloat, [](double x, Params) { return std::asin(x); }, nullptr},
      {{"acos", 0}, IntRule::kToFloat, [](double x, Params) { return std::acos(x); }, nullptr},
      {{"atan", 0}, IntRule::kToFloat, [](double x, Params) { return std::atan(x); }, nullptr},
      {{"sinh", 0}, IntRule::kToFloat, [](double x, Params) { return std::sinh(x); }, nullptr},
      {{"cosh", 0}, IntRule::kToFloat, [](double x, Params) { return std::cosh(x); }, nullptr},
      {{"asinh", 0}, IntRule::kToFloat, [](double x, Params) { return std::asinh(x); }, nullptr},
      {{"acosh", 0}, IntRule::kToFloat, [](double x, Params) { return std::acosh(x); }, nullptr},
      {{"atanh", 0}, IntRule::kToFloat, [](double x, Params) { return std::atanh(x); }, nullptr},
      {{"exp2", 0}, IntRule::kToFloat, [](double x, Params) { return std::exp2(x); }, nullptr},
      {{"expm1", 0}, IntRule::kToFloat, [](double x, Params) { return std::expm1(x); }, nullptr},
      {{"log2", 0}, IntRule::kToFloat, [](double x, Params) { return std::log2(x); }, nullptr},
      {{"log10", 0}, IntRule::kToFloat, [](double x, Params) { return std::log10(x); }, nullptr},
      {{"log1p", 0}, IntRule::kToFloat, [](double x, Params) { return std::log1p(x); }, nullptr},
      {{"erfc", 0}, IntRule::kToFloat, [](double x, Params) { return std::erfc(x); }, nullptr},
      {{"erfinv", 0}, IntRule::kToFloat, [](double x, Params) { return ErfInv(x); }, nullptr},
      {{"logit", 1}, IntRule::kToFloat,
       [](double x, Params p) {
         if (p.size() > 0 && p[0]) x = std::min(std::max(x, *p[0]), 1.0 - *p[0]);
         return std::log(x / (1.0 - x));
       },
       nullptr},
      {{"sign", 0}, IntRule::kKeep, [](double x, Params) { return Sign(x); },
       [](int64_t v, Params) -> int64_t { return v > 0 ? 1 : (v < 0 ? -1 : 0); }},
      {{"sgn", 0}, IntRule::kKeep, [](double x, Params) { return Sign(x); },
       [](int64_t v, Params) -> int64_t { return v > 0 ? 1 : (v < 0 ? -1 : 0); }},
      {{"trunc", 0}, IntRule::kKeep, [](double x, Params) { return std::trunc(x); },
       [](int64_t v, Params) { return v; }},
      {{"frac", 0}, IntRule::kFloatOnly, [](double x, Params) { return x - std::trunc(x); },
       nullptr},
      {{"square", 0}, IntRule::kKeep, [](double x, Params) { return x * x; },
       [](int64_t v, Params) {
         return static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(v));
       }},
      {{"isnan", 0}, IntRule::kToBool, [](double x, Params) { return std::isnan(x) ? 1.0 : 0.0; },
       [](int64_t, Params) -> int64_t { return 0; }},
      {{"isinf", 0}, IntRule::kToBool, [](double x, Params) { return std::isinf(x) ? 1.0 : 0.0; },
       [](int64_t, Params) -> int64_t { return 0; }},
      {{"isfinite", 0}, IntRule::kToBool,
       [](double x, Params) { return std::isfinite(x) ? 1.0 : 0.0; },
       [](int64_t, Params) -> int64_t { return 1; }},
      {{"isposinf", 0}, IntRule::kToBool,
       [](double x, Params) { return x == INFINITY ? 1.0 : 0.0; },
       [](int64_t, Params) -> int64_t { return 0; }},
      {{"isneginf", 0}, IntRule::kToBool,
       [](double x, Params) { return x == -INFINITY ? 1.0 : 0.0; },
       [](int64_t, Params) -> int64_t { return 0; }},
      {{"logical_not", 0}, IntRule::kToBool, [](double x, Params) { return x == 0 ? 1.0 : 0.0; },
       [](int64_t v, Params) -> int64_t { return v == 0; }},
      {{"bitwise_not", 0}, IntRule::kKeep, nullptr, [](int64_t v, Params) { return ~v; }},
      {{"nan_to_num", 3}, IntRule::kKeep,
       [](double x, Params p) {
         if (std::isnan(x)) return P(p, 0, 0.0);
         // Defaults are the output dtype's extremes; the caller fills them.
         if (x == INFINITY) return P(p, 1, std::numeric_limits<double>::max());
         if (x == -INFINITY) return P(p, 2, std::numeric_limits<double>::lowest());
         return x;
       },
       [](int64_t v, Params) { return v; }},
      {{"selu", 0}, IntRule::kFloatOnly,
       [](double x, Params) {
         const double alpha = 1.6732632423543772848170429916717;
         const double scale = 1.0507009873554804934193349852946;
         return x > 0 ? scale * x : scale * alpha * std::expm1(x);
       },
       nullptr},
      {{"celu", 1}, IntRule::kFloatOnly,
       [](double x, Params p) {
         const double a = P(p, 0, 1.0);
         return x > 0 ? x : a * std::expm1(x / a);
       },
       nullptr},
      {{"relu6", 0}, IntRule::kKeep,
       [](double x, Params) { return std::isnan(x) ? x : std::min(std::max(x, 0.0), 6.0); },
       [](int64_t v, Params) { return std::min<int64_t>(std::max<int64_t>(v, 0), 6); }},
      {{"hardtanh", 2}, IntRule::kKeep,
       [](double x, Params p) {
         return std::isnan(x) ? x : std::min(std::max(x, P(p, 0, -1.0)), P(p, 1, 1.0));
       },
       [](int64_t v, Params p) {
         const int64_t lo = static_cast<int64_t>(P(p, 0, -1.0));
         const int64_t hi = static_cast<int64_t>(P(p, 1, 1.0));
         return std::min(std::max(v, lo), hi);
       }},
      {{"hardshrink", 1}, IntRule::kFloatOnly,
       [](double x, Params p) {
         const double l = P(p, 0, 0.5);
         return (x >= -l && x <= l) ? 0.0 : x;
       },
       nullptr},
      {{"softshrink", 1}, IntRule::kFloatOnly,
       [](double x, Params p) {
         const double l = P(p, 0, 0.5);
         return x > l ? x - l : (x < -l ? x + l : (std::isnan(x) ? x : 0.0));
       },
       nullptr},
      {{"log_sigmoid", 0}, IntRule::kFloatOnly, [](double x, Params) { return LogSigmoid(x); },
       nullptr},
      {{"threshold", 2}, IntRule::kKeep,
       [](double x, Params p) { return x <= P(p, 0, 0.0) ? P(p, 1, 0.0) : x; },
       [](int64_t v, Params p) {
         return static_cast<double>(v) <= P(p, 0, 0.0) ? static_cast<int64_t>(P(p, 1, 0.0)) : v;
       }},
      {{"softsign", 0}, IntRule::kFloatOnly,
       [](double x, Params) { return x / (1.0 + std::fabs(x)); }, nullptr},
  };
  return *defs;
}

const UnaryDef* FindUnary(absl::string_view op) {
  for (const UnaryDef& d : UnaryDefs()) {
    if (op == d.info.name) return &d;
  }
  return nullptr;
}

}  // namespace

absl::Span<const MathUnaryInfo> MathUnaryOps() {
  static const std::vector<MathUnaryInfo>* const infos = [] {
    auto* v = new std::vector<MathUnaryInfo>;
    for (const UnaryDef& d : UnaryDefs()) v->push_back(d.info);
    return v;
  }();
  return *infos;
}

absl::StatusOr<Tensor> MathUnary(absl::string_view op, const Tensor& x, Params params) {
  const UnaryDef* def = FindUnary(op);
  if (def == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("no unary math kernel named '", op, "'"));
  }
  RETURN_IF_ERROR(CheckInput(op, x));
  const DType in = x.dtype();
  const bool integral = IsIntegral(in, /*include_bool=*/true);
  DType out_dtype = in;
  bool int_math = false;
  switch (def->rule) {
    case IntRule::kToFloat:
      if (integral) out_dtype = DType::kFloat32;
      break;
    case IntRule::kKeep:
      int_math = integral;
      if (op == "bitwise_not" && !integral) return Unsupported(op, in);
      if (in == DType::kBool && op != "bitwise_not" && op != "nan_to_num" && op != "sign" &&
          op != "sgn") {
        if (op == "square") out_dtype = DType::kInt64;
        else return Unsupported(op, in);
      }
      break;
    case IntRule::kFloatOnly:
      if (integral) return Unsupported(op, in);
      break;
    case IntRule::kToBool:
      out_dtype = DType::kBool;
      int_math = integral;
      break;
  }
  std::vector<std::optional<double>> p(params.begin(), params.end());
  if (op == "nan_to_num" && !integral) {
    // None means the dtype's largest / lowest finite value.
    double big = std::numeric_limits<double>::max();
    if (in == DType::kFloat32) big = std::numeric_limits<float>::max();
    if (in == DType::kFloat16) big = 65504.0;
    if (in == DType::kBFloat16) big = 3.3895313892515355e38;
    p.resize(3);
    if (!p[1]) p[1] = big;
    if (!p[2]) p[2] = -big;
  }
  const bool bool_not = in == DType::kBool && op == "bitwise_not";  // ~true is false
  Tensor out = Tensor::Empty(out_dtype, x.sizes());
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (int_math) {
      const int64_t r = bool_not ? (x.GetInt(i) ? 0 : 1) : def->fi(x.GetInt(i), p);
      RETURN_IF_ERROR(SetInt(out, i, r));
    } else {
      RETURN_IF_ERROR(SetDouble(out, i, def->f(x.GetDouble(i), p)));
    }
  }
  return out;
}

namespace {

struct Broadcast {
  std::vector<Tensor> expanded;
  std::vector<int64_t> shape;
  int64_t numel = 1;
};

absl::StatusOr<Broadcast> BroadcastAll(absl::string_view op, absl::Span<const Tensor> ts) {
  Broadcast b;
  for (const Tensor& t : ts) {
    absl::StatusOr<std::vector<int64_t>> s = BroadcastShapes(b.shape, t.sizes());
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(op, ": ", s.status().message()));
    b.shape = *std::move(s);
  }
  for (const Tensor& t : ts) {
    ASSIGN_OR_RETURN(Tensor e, Expand(t, b.shape));
    b.expanded.push_back(std::move(e));
  }
  for (int64_t s : b.shape) b.numel *= s;
  return b;
}

int BitWidth(DType t) { return static_cast<int>(DTypeSize(t)) * 8; }

// torch.remainder on floats, as ATen computes it: fmod, moved into the
// divisor's sign when the two differ. Python's % except that x % 0 is NaN
// (not an error) and a zero result keeps the dividend's sign (-0.0 % 5 is
// -0.0).
double PyMod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

absl::StatusOr<Tensor> MathBinary(absl::string_view op, const Operand& a, const Operand& b) {
  RETURN_IF_ERROR(CheckInput(op, a.value));
  RETURN_IF_ERROR(CheckInput(op, b.value));
  const DTypeOperand classes[] = {ClassOf(a), ClassOf(b)};
  ASSIGN_OR_RETURN(DType common, ResultType(classes));
  if (!IsStorableDType(common)) return Unsupported(op, common);
  const bool is_float = IsFloatingPoint(common);
  DType out_dtype = common;
  enum Kind { kRemainder, kFmod, kFloorDiv, kAtan2, kShl, kShr, kHeaviside, kLogAddExp,
              kLogAddExp2, kFmax, kFmin };
  Kind k;
  if (op == "remainder") k = kRemainder;
  else if (op == "fmod") k = kFmod;
  else if (op == "floor_divide") k = kFloorDiv;
  else if (op == "atan2") k = kAtan2;
  else if (op == "bitwise_left_shift") k = kShl;
  else if (op == "bitwise_right_shift") k = kShr;
  else if (op == "heaviside") k = kHeaviside;
  else if (op == "logaddexp") k = kLogAddExp;
  else if (op == "logaddexp2") k = kLogAddExp2;
  else if (op == "fmax") k = kFmax;
  else if (op == "fmin") k = kFmin;
  else return absl::InvalidArgumentError(absl::StrCat("no binary math kernel named '", op, "'"));
  if ((k == kShl || k == kShr) && (is_float || common == DType::kBool)) {
    return Unsupported(op, common);
  }
  if ((k == kLogAddExp || k == kLogAddExp2) && !is_float) return Unsupported(op, common);
  if (k == kAtan2 && !is_float) out_dtype = DType::kFloat32;
  if (k == kHeaviside && a.value.dtype() != b.value.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": expected inputs of one dtype, got ", DTypeName(a.value.dtype()),
                     " and ", DTypeName(b.value.dtype())));
  }
  if (common == DType::kBool && (k == kRemainder || k == kFmod || k == kFloorDiv)) {
    return Unsupported(op, common);
  }
  const Tensor ts[] = {a.value, b.value};
  ASSIGN_OR_RETURN(Broadcast bc, BroadcastAll(op, ts));
  Tensor out = Tensor::Empty(out_dtype, bc.shape);
  const Tensor& x = bc.expanded[0];
  const Tensor& y = bc.expanded[1];
  const bool unsigned_math = IsUnsigned(common);
  for (int64_t i = 0; i < bc.numel; ++i) {
    if (IsFloatingPoint(out_dtype)) {
      const double u = x.GetDouble(i), v = y.GetDouble(i);
      double r = 0;
      switch (k) {
        case kRemainder: r = PyMod(u, v); break;
        case kFmod: r = std::fmod(u, v); break;
        case kFloorDiv: r = std::floor(u / v); break;
        case kAtan2: r = std::atan2(u, v); break;
        case kHeaviside: r = u == 0 ? v : (std::isnan(u) ? u : (u > 0 ? 1.0 : 0.0)); break;
        case kLogAddExp: {
          const double m = std::max(u, v);
          r = std::isinf(m) && u == v ? u : m + std::log1p(std::exp(-std::fabs(u - v)));
          break;
        }
        case kLogAddExp2: {
          const double m = std::max(u, v);
          r = std::isinf(m) && u == v ? u : m + std::log2(1.0 + std::exp2(-std::fabs(u - v)));
          break;
        }
        case kFmax: r = std::fmax(u, v); break;
        case kFmin: r = std::fmin(u, v); break;
        case kShl:
        case kShr: break;
      }
      RETURN_IF_ERROR(SetDouble(out, i, r));
      continue;
    }
    const int64_t u = x.GetInt(i), v = y.GetInt(i);
    int64_t r = 0;
    switch (k) {
      case kRemainder:
      case kFmod:
      case kFloorDiv: {
        if (v == 0) {
          return absl::InvalidArgumentError(absl::StrCat(op, ": integer division by zero"));
        }
        if (unsigned_math && common == DType::kUInt64) {
          const uint64_t uu = static_cast<uint64_t>(u), uv = static_cast<uint64_t>(v);
          r = static_cast<int64_t>(k == kFloorDiv ? uu / uv : uu % uv);
          break;
        }
        if (v == -1) {  // INT64_MIN / -1 overflows
          r = k == kFloorDiv ? static_cast<int64_t>(0 - static_cast<uint64_t>(u)) : 0;
          break;
        }
        const int64_t q = u / v, m = u % v;
        if (k == kFmod) r = m;
        else if (k == kRemainder) r = (m != 0 && ((m < 0) != (v < 0))) ? m + v : m;
        else r = (m != 0 && ((u < 0) != (v < 0))) ? q - 1 : q;
        break;
      }
      case kShl:
      case kShr: {
        const int width = BitWidth(common);
        if (v < 0 || v >= width) {
          r = (k == kShr && !unsigned_math && u < 0) ? -1 : 0;
        } else if (k == kShl) {
          r = static_cast<int64_t>(static_cast<uint64_t>(u) << v);
        } else if (unsigned_math) {
          // Logical shift of the value's own width (GetInt zero-extends).
          r = static_cast<int64_t>(static_cast<uint64_t>(u) >> v);
        } else {
          r = u >> v;
        }
        break;
      }
      case kHeaviside: r = u == 0 ? v : (u > 0 ? 1 : 0); break;
      case kFmax: r = std::max(u, v); break;
      case kFmin: r = std::min(u, v); break;
      case kAtan2:
      case kLogAddExp:
      case kLogAddExp2: break;
    }
    RETURN_IF_ERROR(SetInt(out, i, r));
  }
  return out;
}

absl::StatusOr<Tensor> Lerp(const Tensor& self, const Tensor& end, const Operand& weight) {
  RETURN_IF_ERROR(CheckInput("lerp", self));
  RETURN_IF_ERROR(CheckInput("lerp", end));
  RETURN_IF_ERROR(CheckInput("lerp", weight.value));
  if (!IsFloatingPoint(self.dtype()) || self.dtype() != end.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat("lerp: expected floating inputs of one dtype, got ",
                                                   DTypeName(self.dtype()), " and ",
                                                   DTypeName(end.dtype())));
  }
  const Tensor ts[] = {self, end, weight.value};
  ASSIGN_OR_RETURN(Broadcast bc, BroadcastAll("lerp", ts));
  Tensor out = Tensor::Empty(self.dtype(), bc.shape);
  for (int64_t i = 0; i < bc.numel; ++i) {
    const double s = bc.expanded[0].GetDouble(i), e = bc.expanded[1].GetDouble(i);
    const double w = bc.expanded[2].GetDouble(i);
    // ATen's form: exact at both ends.
    const double r = std::fabs(w) < 0.5 ? s + w * (e - s) : e - (e - s) * (1.0 - w);
    RETURN_IF_ERROR(SetDouble(out, i, r));
  }
  return out;
}

absl::StatusOr<Tensor> AddcOp(const Tensor& self, const Tensor& t1, const Tensor& t2,
                              const Operand& value, bool divide) {
  const char* op = divide ? "addcdiv" : "addcmul";
  for (const Tensor* t : {&self, &t1, &t2}) RETURN_IF_ERROR(CheckInput(op, *t));
  const DTypeOperand classes[] = {ClassOf(Operand::FromTensor(self)),
                                  ClassOf(Operand::FromTensor(t1)),
                                  ClassOf(Operand::FromTensor(t2))};
  ASSIGN_OR_RETURN(DType out_dtype, ResultType(classes));
  if (!IsStorableDType(out_dtype)) return Unsupported(op, out_dtype);
  if (divide && !IsFloatingPoint(out_dtype)) {
    return absl::InvalidArgumentError(
        "addcdiv: integer division of tensors is not supported; use floating inputs");
  }
  const Tensor ts[] = {self, t1, t2};
  ASSIGN_OR_RETURN(Broadcast bc, BroadcastAll(op, ts));
  Tensor out = Tensor::Empty(out_dtype, bc.shape);
  const double vd = value.value.GetDouble(0);
  const int64_t vi = value.value.GetInt(0);
  for (int64_t i = 0; i < bc.numel; ++i) {
    if (IsFloatingPoint(out_dtype)) {
      const double a = bc.expanded[1].GetDouble(i), b = bc.expanded[2].GetDouble(i);
      RETURN_IF_ERROR(
          SetDouble(out, i, bc.expanded[0].GetDouble(i) + vd * (divide ? a / b : a * b)));
    } else {
      const uint64_t prod = static_cast<uint64_t>(bc.expanded[1].GetInt(i)) *
                            static_cast<uint64_t>(bc.expanded[2].GetInt(i));
      const uint64_t r = static_cast<uint64_t>(bc.expanded[0].GetInt(i)) +
                         static_cast<uint64_t>(vi) * prod;
      RETURN_IF_ERROR(SetInt(out, i, static_cast<int64_t>(r)));
    }
  }
  return out;
}

absl::StatusOr<Tensor> Prelu(const Tensor& x, const Tensor& weight) {
  RETURN_IF_ERROR(CheckInput("prelu", x));
  RETURN_IF_ERROR(CheckInput("prelu", weight));
  if (!IsFloatingPoint(x.dtype())) return Unsupported("prelu", x.dtype());
  const int64_t channels = x.dim() >= 2 ? x.sizes()[1] : 1;
  const int64_t wn = weight.numel();
  if (weight.dim() > 1 || (wn != 1 && wn != channels)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prelu: weight of shape ", ShapeToString(weight.sizes()), " does not match ", channels,
        " channels of input ", ShapeToString(x.sizes())));
  }
  int64_t inner = 1;
  for (int64_t d = 2; d < x.dim(); ++d) inner *= x.sizes()[d];
  Tensor out = Tensor::Empty(x.dtype(), x.sizes());
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double v = x.GetDouble(i);
    const int64_t c = wn == 1 ? 0 : (i / inner) % channels;
    RETURN_IF_ERROR(SetDouble(out, i, v > 0 ? v : v * weight.GetDouble(c)));
  }
  return out;
}

absl::StatusOr<Tensor> Glu(const Tensor& x, int64_t dim) {
  RETURN_IF_ERROR(CheckInput("glu", x));
  if (!IsFloatingPoint(x.dtype())) return Unsupported("glu", x.dtype());
  if (x.dim() == 0) return absl::InvalidArgumentError("glu: does not support 0-dim tensors");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), "glu"));
  const int64_t n = x.sizes()[d];
  if (n % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("glu: halving dimension must be even, but dimension ", d, " is size ", n));
  }
  ASSIGN_OR_RETURN(Tensor a, Slice(x, d, 0, n / 2));
  ASSIGN_OR_RETURN(Tensor b, Slice(x, d, n / 2, n));
  Tensor out = Tensor::Empty(x.dtype(), a.sizes());
  const int64_t m = a.numel();
  for (int64_t i = 0; i < m; ++i) {
    RETURN_IF_ERROR(SetDouble(out, i, a.GetDouble(i) * Sigmoid(b.GetDouble(i))));
  }
  return out;
}

absl::StatusOr<Tensor> Shrink(const Tensor& x, double bias, double lambd) {
  RETURN_IF_ERROR(CheckInput("shrink", x));
  Tensor out = Tensor::Empty(x.dtype(), x.sizes());
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double v = x.GetDouble(i);
    const double r = v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
    RETURN_IF_ERROR(SetDouble(out, i, r));
  }
  return out;
}

}  // namespace kiln::runtime
