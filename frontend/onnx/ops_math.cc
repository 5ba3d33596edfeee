// ONNX converters of the math family: elementwise arithmetic, comparisons,
// logic and bitwise ops, activations, Clip, softmax-like ops, reductions,
// arg-reductions, variadic Max/Min/Sum/Mean, matrix products, Einsum, Det
// and casts.
//
// Where ONNX and ATen agree the converters emit aten ops; where they differ
// they either adjust (integer Div truncates, Pow keeps the base's dtype) or
// emit the math family's kiln:: ops (rows in ops/defs/).
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops_families.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/ir.h"
#include "ir/type.h"
#include "support/status.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::Value;

// b.Op with the error reworded to name the ONNX node.
absl::StatusOr<Value*> Emit(ConvertContext& c, absl::string_view kind,
                            std::vector<Value*> inputs) {
  absl::StatusOr<Value*> v = c.b().Op(kind, inputs);
  if (!v.ok()) return c.Error(v.status().message());
  return v;
}

std::optional<DType> KnownDType(const ConvertContext& c, int i) {
  return c.InputInfo(i).dtype;
}

ConverterFn UnaryTo(std::string aten) {
  return [aten](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * y, Emit(c, aten, {x}));
    return c.SetOutput(0, y);
  };
}

ConverterFn BinaryTo(std::string aten) {
  return [aten](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * a, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * b, c.RequiredInput(1));
    ASSIGN_OR_RETURN(Value * y, Emit(c, aten, {a, b}));
    return c.SetOutput(0, y);
  };
}

// Old (opset < 7) binary ops broadcast B only with broadcast=1, its dims
// aligned with A's starting at `axis` (default: trailing, numpy-like). B gets
// trailing size-1 dims so numpy broadcasting lines it up the same way.
absl::StatusOr<Value*> LegacyBroadcastB(ConvertContext& c, Value* b) {
  if (c.opset() >= 7 || c.AttrInt("broadcast", 0) == 0 || !c.HasAttr("axis")) return b;
  ASSIGN_OR_RETURN(int64_t rank_a, c.InputRank(0));
  ASSIGN_OR_RETURN(int64_t rank_b, c.InputRank(1));
  int64_t axis = c.AttrInt("axis", 0);
  if (axis < 0) axis += rank_a;
  const int64_t pad = rank_a - axis - rank_b;
  if (axis < 0 || pad < 0) {
    return c.Error(absl::StrCat("broadcast axis ", c.AttrInt("axis", 0),
                                " does not fit operands of rank ", rank_a, " and ", rank_b));
  }
  for (int64_t i = 0; i < pad; ++i) {
    ASSIGN_OR_RETURN(b, Emit(c, "aten::unsqueeze", {b, c.b().Int(-1)}));
  }
  return b;
}

ConverterFn ArithmeticTo(std::string aten) {
  return [aten](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * a, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * b, c.RequiredInput(1));
    ASSIGN_OR_RETURN(b, LegacyBroadcastB(c, b));
    ASSIGN_OR_RETURN(Value * y, Emit(c, aten, {a, b}));
    return c.SetOutput(0, y);
  };
}

absl::Status ConvertDiv(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * a, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * b, c.RequiredInput(1));
  ASSIGN_OR_RETURN(b, LegacyBroadcastB(c, b));
  std::optional<DType> dt = KnownDType(c, 0);
  Value* y;
  if (dt && IsIntegral(*dt, /*include_bool=*/true)) {
    // ONNX integer division truncates toward zero.
    ASSIGN_OR_RETURN(y, Emit(c, "aten::div", {a, b, c.b().Str("trunc")}));
  } else {
    ASSIGN_OR_RETURN(y, Emit(c, "aten::div", {a, b}));
  }
  return c.SetOutput(0, y);
}

// Pow's result has the base's dtype (ATen would promote with the exponent).
absl::Status ConvertPow(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * a, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * b, c.RequiredInput(1));
  ASSIGN_OR_RETURN(b, LegacyBroadcastB(c, b));
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::pow", {a, b}));
  std::optional<DType> base = KnownDType(c, 0), exp = KnownDType(c, 1);
  if (base && (!exp || *exp != *base)) {
    ASSIGN_OR_RETURN(y, Emit(c, "aten::to", {y, c.b().ScalarType(*base)}));
  }
  return c.SetOutput(0, y);
}

absl::Status ConvertMod(ConvertContext& c) {
  const int64_t fmod = c.AttrInt("fmod", 0);
  std::optional<DType> dt = KnownDType(c, 0);
  if (fmod == 0 && dt && IsFloatingPoint(*dt)) {
    return c.Error("fmod must be 1 for floating-point inputs");
  }
  return BinaryTo(fmod ? "aten::fmod" : "aten::remainder")(c);
}

absl::Status ConvertBitShift(ConvertContext& c) {
  const std::string dir = c.AttrString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") {
    return c.Error(absl::StrCat("direction must be LEFT or RIGHT, got '", dir, "'"));
  }
  return BinaryTo(dir == "LEFT" ? "aten::bitwise_left_shift" : "aten::bitwise_right_shift")(c);
}

absl::Status ConvertIsInf(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  const bool pos = c.AttrInt("detect_positive", 1) != 0;
  const bool neg = c.AttrInt("detect_negative", 1) != 0;
  Value* y;
  if (pos && neg) {
    ASSIGN_OR_RETURN(y, Emit(c, "aten::isinf", {x}));
  } else {
    // NaN compares unequal to everything: neither flag gives all false.
    const double target = pos ? INFINITY : (neg ? -INFINITY : NAN);
    ASSIGN_OR_RETURN(y, Emit(c, "aten::eq", {x, c.b().Double(target)}));
  }
  return c.SetOutput(0, y);
}

// --------------------------------------------------------------- activations

absl::Status ConvertLeakyRelu(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * y,
                   Emit(c, "aten::leaky_relu", {x, c.b().Double(c.AttrFloat("alpha", 0.01f))}));
  return c.SetOutput(0, y);
}

// From opset 7 slope broadcasts to x (numpy rules); before, a 1-D slope is
// per channel (dim 1), which is aten::prelu's rule.
absl::Status ConvertPRelu(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * slope, c.RequiredInput(1));
  if (c.opset() < 7) {
    const std::optional<size_t> rank = c.InputInfo(1).rank();
    if (rank && *rank == 1) {
      ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::prelu", {x, slope}));
      return c.SetOutput(0, y);
    }
  }
  ASSIGN_OR_RETURN(Value * neg, Emit(c, "aten::lt", {x, c.b().Int(0)}));
  ASSIGN_OR_RETURN(Value * scaled, Emit(c, "aten::mul", {x, slope}));
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::where", {neg, scaled, x}));
  return c.SetOutput(0, y);
}

absl::Status ConvertElu(ConvertContext& c, double alpha, double scale) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::elu", {x, c.b().Double(alpha), c.b().Double(scale),
                                                    c.b().Double(1.0)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertHardSigmoid(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  const double alpha = c.AttrFloat("alpha", 0.2f), beta = c.AttrFloat("beta", 0.5f);
  ASSIGN_OR_RETURN(Value * ax, Emit(c, "aten::mul", {x, c.b().Double(alpha)}));
  ASSIGN_OR_RETURN(Value * axb, Emit(c, "aten::add", {ax, c.b().Double(beta)}));
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::clamp", {axb, c.b().Double(0), c.b().Double(1)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertSoftsign(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * ax, Emit(c, "aten::abs", {x}));
  ASSIGN_OR_RETURN(Value * den, Emit(c, "aten::add", {ax, c.b().Int(1)}));
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::div", {x, den}));
  return c.SetOutput(0, y);
}

absl::Status ConvertSoftplus(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  // A large threshold: ONNX has no linear cut-over.
  ASSIGN_OR_RETURN(Value * y,
                   Emit(c, "aten::softplus", {x, c.b().Int(1), c.b().Double(30.0)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertShrink(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * y, Emit(c, "kiln::shrink", {x, c.b().Double(c.AttrFloat("bias", 0)),
                                                      c.b().Double(c.AttrFloat("lambd", 0.5f))}));
  return c.SetOutput(0, y);
}

absl::Status ConvertThresholdedRelu(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::threshold", {x, c.b().Double(c.AttrFloat("alpha", 1)),
                                                          c.b().Int(0)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertGelu(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  const std::string approx = c.AttrString("approximate", "none");
  if (approx != "none" && approx != "tanh") {
    return c.Error(absl::StrCat("approximate must be 'none' or 'tanh', got '", approx, "'"));
  }
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::gelu", {x, c.b().Str(approx)}));
  return c.SetOutput(0, y);
}

// Clip before opset 11: float attributes (absent: unbounded).
absl::Status ConvertClipAttrs(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  if (!c.HasAttr("min") && !c.HasAttr("max")) return c.SetOutput(0, x);
  Value* lo = c.HasAttr("min") ? c.b().Double(c.AttrFloat("min", 0)) : c.b().None();
  Value* hi = c.HasAttr("max") ? c.b().Double(c.AttrFloat("max", 0)) : c.b().None();
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::clamp", {x, lo, hi}));
  return c.SetOutput(0, y);
}

// Clip from opset 11: optional 0-dim tensor bounds of x's dtype.
absl::Status ConvertClipInputs(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  Value* lo = c.input(1);
  Value* hi = c.input(2);
  if (lo == nullptr && hi == nullptr) return c.SetOutput(0, x);
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::clamp", {x, lo ? lo : c.b().None(),
                                                      hi ? hi : c.b().None()}));
  return c.SetOutput(0, y);
}

// kind: 0 softmax, 1 log-softmax, 2 hardmax.
ConverterFn SoftmaxBefore13(int64_t kind) {
  return [kind](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * y, Emit(c, "kiln::flat_softmax",
                                     {x, c.b().Int(c.AttrInt("axis", 1)), c.b().Int(kind)}));
    return c.SetOutput(0, y);
  };
}

ConverterFn SoftmaxFrom13(int64_t kind) {
  return [kind](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    Value* axis = c.b().Int(c.AttrInt("axis", -1));
    Value* y;
    if (kind == 2) {
      ASSIGN_OR_RETURN(y, Emit(c, "kiln::hardmax", {x, axis}));
    } else {
      ASSIGN_OR_RETURN(y, Emit(c, kind == 0 ? "aten::softmax" : "aten::log_softmax",
                               {x, axis, c.b().None()}));
    }
    return c.SetOutput(0, y);
  };
}

// --------------------------------------------------------------- reductions

// axes_from_input: axes is input 1 (ReduceSum from 13, the rest from 18)
// rather than an attribute.
ConverterFn ReduceTo(std::string kind, bool axes_from_input) {
  return [kind, axes_from_input](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    Value* axes = nullptr;
    if (!axes_from_input) {
      if (c.HasAttr("axes")) axes = c.b().IntList(c.AttrInts("axes"));
    } else if (c.has_input(1)) {
      ASSIGN_OR_RETURN(axes, c.IntListInput(1));
    }
    const bool keepdims = c.AttrInt("keepdims", 1) != 0;
    const bool noop = axes_from_input && c.AttrInt("noop_with_empty_axes", 0) != 0;
    ASSIGN_OR_RETURN(Value * y, Emit(c, "kiln::reduce",
                                     {x, c.b().Str(kind), axes ? axes : c.b().None(),
                                      c.b().Bool(keepdims), c.b().Bool(noop)}));
    return c.SetOutput(0, y);
  };
}

ConverterFn ArgTo(bool largest) {
  return [largest](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    Value* axis = c.b().Int(c.AttrInt("axis", 0));
    Value* keepdims = c.b().Bool(c.AttrInt("keepdims", 1) != 0);
    Value* y;
    if (c.AttrInt("select_last_index", 0) == 0) {
      ASSIGN_OR_RETURN(y, Emit(c, largest ? "aten::argmax" : "aten::argmin", {x, axis, keepdims}));
    } else {
      ASSIGN_OR_RETURN(y, Emit(c, "kiln::arg_extreme",
                               {x, axis, keepdims, c.b().Bool(true), c.b().Bool(largest)}));
    }
    return c.SetOutput(0, y);
  };
}

// Max/Min/Sum/Mean over any number of broadcasting inputs.
ConverterFn VariadicTo(std::string aten, bool mean) {
  return [aten, mean](ConvertContext& c) -> absl::Status {
    if (c.num_inputs() < 1) return c.Error("needs at least one input");
    ASSIGN_OR_RETURN(Value * acc, c.RequiredInput(0));
    for (int i = 1; i < c.num_inputs(); ++i) {
      ASSIGN_OR_RETURN(Value * x, c.RequiredInput(i));
      ASSIGN_OR_RETURN(acc, Emit(c, aten, {acc, x}));
    }
    if (mean && c.num_inputs() > 1) {
      ASSIGN_OR_RETURN(acc, Emit(c, "aten::div",
                                 {acc, c.b().Double(static_cast<double>(c.num_inputs()))}));
    }
    return c.SetOutput(0, acc);
  };
}

// --------------------------------------------------------------- products

absl::Status ConvertGemm(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * a, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * b, c.RequiredInput(1));
  const double alpha = c.AttrFloat("alpha", 1.0f), beta = c.AttrFloat("beta", 1.0f);
  if (c.AttrInt("transA", 0) != 0) {
    ASSIGN_OR_RETURN(a, Emit(c, "aten::t", {a}));
  }
  if (c.AttrInt("transB", 0) != 0) {
    ASSIGN_OR_RETURN(b, Emit(c, "aten::t", {b}));
  }
  std::optional<DType> dt = KnownDType(c, 0);
  const bool integral = dt && IsIntegral(*dt, /*include_bool=*/false);
  auto scalar = [&](double v) { return integral ? c.b().Int(static_cast<int64_t>(v)) : c.b().Double(v); };
  Value* y;
  if (Value* bias = c.input(2)) {
    ASSIGN_OR_RETURN(y, Emit(c, "aten::addmm", {bias, a, b, scalar(beta), scalar(alpha)}));
  } else {
    ASSIGN_OR_RETURN(y, Emit(c, "aten::mm", {a, b}));
    if (alpha != 1.0) {
      ASSIGN_OR_RETURN(y, Emit(c, "aten::mul", {y, scalar(alpha)}));
    }
  }
  return c.SetOutput(0, y);
}

// (A - a_zero_point) @ (B - b_zero_point) in int32.
absl::Status ConvertMatMulInteger(ConvertContext& c) {
  Value* operands[2];
  for (int k = 0; k < 2; ++k) {
    ASSIGN_OR_RETURN(Value * m, c.RequiredInput(k));
    ASSIGN_OR_RETURN(m, Emit(c, "aten::to", {m, c.b().ScalarType(DType::kInt32)}));
    if (Value* zp = c.input(2 + k)) {
      ASSIGN_OR_RETURN(zp, Emit(c, "aten::to", {zp, c.b().ScalarType(DType::kInt32)}));
      // A's zero point may be per row ([M]): align it with A's rows.
      const ir::TensorInfo info = c.InputInfo(2 + k);
      if (k == 0 && info.rank() && *info.rank() == 1 &&
          !(info.sizes && (*info.sizes)[0] && *(*info.sizes)[0] == 1)) {
        ASSIGN_OR_RETURN(zp, Emit(c, "aten::unsqueeze", {zp, c.b().Int(-1)}));
      }
      ASSIGN_OR_RETURN(m, Emit(c, "aten::sub", {m, zp}));
    }
    operands[k] = m;
  }
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::matmul", {operands[0], operands[1]}));
  return c.SetOutput(0, y);
}

absl::Status ConvertEinsum(ConvertContext& c) {
  const std::string eq = c.AttrString("equation", "");
  if (eq.empty()) return c.Error("the equation attribute is required");
  std::vector<Value*> ts;
  for (int i = 0; i < c.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(i));
    ts.push_back(x);
  }
  Value* list = c.b().List(ir::Type::Tensor(), ts);
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::einsum", {c.b().Str(eq), list}));
  return c.SetOutput(0, y);
}

// --------------------------------------------------------------- casts

constexpr int64_t kOnnxString = 8;  // TensorProto.STRING

// String tensors are `(int[] sizes, str[] data)` values of type Any.
bool IsStringTensor(const ir::Value* v) { return v->type()->kind() == ir::TypeKind::kAny; }

// x (numeric or string) cast to `dtype`, or to STRING when `dtype` is unset.
absl::Status EmitCast(ConvertContext& c, Value* x, std::optional<DType> dtype) {
  Value* y = x;
  if (!dtype) {
    if (!IsStringTensor(x)) {
      ASSIGN_OR_RETURN(y, Emit(c, "kiln::tensor_to_strings", {x}));
    }
  } else if (IsStringTensor(x)) {
    ASSIGN_OR_RETURN(y, Emit(c, "kiln::strings_to_tensor", {x, c.b().ScalarType(*dtype)}));
  } else {
    ASSIGN_OR_RETURN(y, Emit(c, "aten::to", {x, c.b().ScalarType(*dtype)}));
  }
  return c.SetOutput(0, y);
}

absl::Status ConvertCast(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t to, c.RequiredAttrInt("to"));
  if (to == kOnnxString) return EmitCast(c, x, std::nullopt);
  if (to < 0 || to > INT32_MAX) return c.Unsupported(absl::StrCat("Cast to type ", to));
  absl::StatusOr<DType> dt = DTypeFromOnnx(static_cast<int32_t>(to));
  if (!dt.ok()) return c.Unsupported(dt.status().message());
  return EmitCast(c, x, *dt);
}

absl::Status ConvertCastLike(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * like, c.RequiredInput(1));
  if (IsStringTensor(like)) return EmitCast(c, x, std::nullopt);
  if (IsStringTensor(x)) {
    ASSIGN_OR_RETURN(DType dtype, c.InputDType(1));
    return EmitCast(c, x, dtype);
  }
  ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::type_as", {x, like}));
  return c.SetOutput(0, y);
}

}  // namespace

void RegisterMathConverters(ConverterRegistry& r) {
  // Arithmetic.
  r.Add("Add", 1, ArithmeticTo("aten::add"));
  r.Add("Sub", 1, ArithmeticTo("aten::sub"));
  r.Add("Mul", 1, ArithmeticTo("aten::mul"));
  r.Add("Div", 1, ConvertDiv);
  r.Add("Pow", 1, ConvertPow);
  r.Add("Mod", 10, ConvertMod);
  r.Add("BitShift", 11, ConvertBitShift);
  // Logic, comparisons, bitwise.
  r.Add("And", 1, BinaryTo("aten::logical_and"));
  r.Add("Or", 1, BinaryTo("aten::logical_or"));
  r.Add("Xor", 1, BinaryTo("aten::logical_xor"));
  r.Add("Not", 1, UnaryTo("aten::logical_not"));
  r.Add("Equal", 1, BinaryTo("aten::eq"));
  r.Add("Less", 1, BinaryTo("aten::lt"));
  r.Add("Greater", 1, BinaryTo("aten::gt"));
  r.Add("LessOrEqual", 12, BinaryTo("aten::le"));
  r.Add("GreaterOrEqual", 12, BinaryTo("aten::ge"));
  r.Add("BitwiseAnd", 18, BinaryTo("aten::bitwise_and"));
  r.Add("BitwiseOr", 18, BinaryTo("aten::bitwise_or"));
  r.Add("BitwiseXor", 18, BinaryTo("aten::bitwise_xor"));
  r.Add("BitwiseNot", 18, UnaryTo("aten::bitwise_not"));
  // Unary math.
  const std::pair<const char*, const char*> unary[] = {
      {"Abs", "aten::abs"},       {"Neg", "aten::neg"},         {"Exp", "aten::exp"},
      {"Log", "aten::log"},       {"Sqrt", "aten::sqrt"},       {"Reciprocal", "aten::reciprocal"},
      {"Floor", "aten::floor"},   {"Ceil", "aten::ceil"},       {"Round", "aten::round"},
      {"Sign", "aten::sign"},     {"Erf", "aten::erf"},         {"IsNaN", "aten::isnan"},
      {"Sin", "aten::sin"},       {"Cos", "aten::cos"},         {"Tan", "aten::tan"},
      {"Asin", "aten::asin"},     {"Acos", "aten::acos"},       {"Atan", "aten::atan"},
      {"Sinh", "aten::sinh"},     {"Cosh", "aten::cosh"},       {"Asinh", "aten::asinh"},
      {"Acosh", "aten::acosh"},   {"Atanh", "aten::atanh"},     {"Sigmoid", "aten::sigmoid"},
      {"Tanh", "aten::tanh"},     {"Relu", "aten::relu"},       {"Mish", "aten::mish"},
      {"HardSwish", "aten::hardswish"}, {"Det", "aten::linalg_det"},
  };
  for (const auto& [onnx, aten] : unary) r.Add(onnx, 1, UnaryTo(aten));
  r.Add("IsInf", 10, ConvertIsInf);
  // Activations.
  r.Add("LeakyRelu", 1, ConvertLeakyRelu);
  r.Add("PRelu", 1, ConvertPRelu);
  r.Add("Elu", 1, [](ConvertContext& c) { return ConvertElu(c, c.AttrFloat("alpha", 1.0f), 1.0); });
  r.Add("Selu", 1, [](ConvertContext& c) {
    return ConvertElu(c, c.AttrFloat("alpha", 1.67326319217681884765625f),
                      c.AttrFloat("gamma", 1.05070102214813232421875f));
  });
  r.Add("Celu", 12, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * y, Emit(c, "aten::celu", {x, c.b().Double(c.AttrFloat("alpha", 1))}));
    return c.SetOutput(0, y);
  });
  r.Add("HardSigmoid", 1, ConvertHardSigmoid);
  r.Add("Softplus", 1, ConvertSoftplus);
  r.Add("Softsign", 1, ConvertSoftsign);
  r.Add("Shrink", 9, ConvertShrink);
  r.Add("ThresholdedRelu", 10, ConvertThresholdedRelu);
  r.Add("Gelu", 20, ConvertGelu);
  r.Add("Clip", 1, ConvertClipAttrs);
  r.Add("Clip", 11, ConvertClipInputs);
  // Softmax family.
  r.Add("Softmax", 1, SoftmaxBefore13(0));
  r.Add("LogSoftmax", 1, SoftmaxBefore13(1));
  r.Add("Hardmax", 1, SoftmaxBefore13(2));
  r.Add("Softmax", 13, SoftmaxFrom13(0));
  r.Add("LogSoftmax", 13, SoftmaxFrom13(1));
  r.Add("Hardmax", 13, SoftmaxFrom13(2));
  // Reductions.
  const std::pair<const char*, const char*> reductions[] = {
      {"ReduceSum", "sum"},         {"ReduceMean", "mean"},     {"ReduceMax", "max"},
      {"ReduceMin", "min"},         {"ReduceProd", "prod"},     {"ReduceL1", "l1"},
      {"ReduceL2", "l2"},           {"ReduceLogSum", "log_sum"}, {"ReduceLogSumExp", "log_sum_exp"},
      {"ReduceSumSquare", "sum_square"},
  };
  for (const auto& [onnx, kind] : reductions) {
    const bool is_sum = std::string(onnx) == "ReduceSum";
    r.Add(onnx, 1, ReduceTo(kind, false));
    r.Add(onnx, is_sum ? 13 : 18, ReduceTo(kind, true));
  }
  r.Add("ArgMax", 1, ArgTo(true));
  r.Add("ArgMin", 1, ArgTo(false));
  r.Add("Max", 1, VariadicTo("aten::maximum", false));
  r.Add("Min", 1, VariadicTo("aten::minimum", false));
  r.Add("Sum", 1, VariadicTo("aten::add", false));
  r.Add("Mean", 1, VariadicTo("aten::add", true));
  // Products.
  r.Add("MatMul", 1, BinaryTo("aten::matmul"));
  r.Add("Gemm", 1, ConvertGemm);
  r.Add("MatMulInteger", 10, ConvertMatMulInteger);
  r.Add("Einsum", 12, ConvertEinsum);
  // Casts.
  r.Add("Cast", 1, ConvertCast);
  r.Add("CastLike", 15, ConvertCastLike);
}

}  // namespace kiln::frontend::onnx_import
