// IValue adapters: arguments arrive in schema order with defaults filled in.
#include "runtime/register_kernels.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernel_args.h"
#include "runtime/kernels.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

void RegisterUnary(Registrar& r) {
  struct Simple { const char* name; UnaryOp op; };
  const Simple simple[] = {
      {"neg", UnaryOp::kNeg}, {"abs", UnaryOp::kAbs}, {"exp", UnaryOp::kExp},
      {"log", UnaryOp::kLog}, {"sqrt", UnaryOp::kSqrt}, {"rsqrt", UnaryOp::kRsqrt},
      {"sin", UnaryOp::kSin}, {"cos", UnaryOp::kCos}, {"tanh", UnaryOp::kTanh},
      {"sigmoid", UnaryOp::kSigmoid}, {"relu", UnaryOp::kRelu}, {"erf", UnaryOp::kErf},
      {"floor", UnaryOp::kFloor}, {"ceil", UnaryOp::kCeil}, {"round", UnaryOp::kRound},
      {"reciprocal", UnaryOp::kReciprocal}, {"silu", UnaryOp::kSilu},
      {"hardswish", UnaryOp::kHardswish}, {"hardsigmoid", UnaryOp::kHardsigmoid},
      {"mish", UnaryOp::kMish}};
  for (const Simple& s : simple) {
    const std::string name = absl::StrCat("aten::", s.name);
    const UnaryOp op = s.op;
    r.AddIfPresent(name, [name, op](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      return One(Unary(op, x));
    });
  }
  r.AddIfPresent("aten::gelu", [](Args a) -> Result {
    const std::string name = "aten::gelu";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    std::string mode = a.size() > 1 && a[1].isString() ? a[1].toString() : "none";
    if (mode != "none" && mode != "tanh") {
      return absl::InvalidArgumentError(absl::StrCat(name, ": unknown approximate '", mode, "'"));
    }
    return One(Unary(mode == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu, x));
  });
  r.AddIfPresent("aten::leaky_relu", [](Args a) -> Result {
    const std::string name = "aten::leaky_relu";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    UnaryParams p;
    ASSIGN_OR_RETURN(p.negative_slope, NumberArg(name, a, 1));
    return One(Unary(UnaryOp::kLeakyRelu, x, p));
  });
  r.AddIfPresent("aten::elu", [](Args a) -> Result {
    const std::string name = "aten::elu";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    UnaryParams p;
    ASSIGN_OR_RETURN(p.alpha, NumberArg(name, a, 1));
    ASSIGN_OR_RETURN(p.scale, NumberArg(name, a, 2));
    ASSIGN_OR_RETURN(p.input_scale, NumberArg(name, a, 3));
    return One(Unary(UnaryOp::kElu, x, p));
  });
  r.AddIfPresent("aten::softplus", [](Args a) -> Result {
    const std::string name = "aten::softplus";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    UnaryParams p;
    ASSIGN_OR_RETURN(p.beta, NumberArg(name, a, 1));
    ASSIGN_OR_RETURN(p.threshold, NumberArg(name, a, 2));
    return One(Unary(UnaryOp::kSoftplus, x, p));
  });
}

// `alpha_index`: position of alpha, or -1.
void AddBinary(Registrar& r, const std::string& name, BinaryOp op, int alpha_index = -1) {
  r.AddIfPresent(name, [name, op, alpha_index](Args a) -> Result {
    ASSIGN_OR_RETURN(Operand x, OperandArg(name, a, 0));
    ASSIGN_OR_RETURN(Operand y, OperandArg(name, a, 1));
    Operand alpha = Operand::Int(1);
    if (alpha_index >= 0) {
      ASSIGN_OR_RETURN(alpha, OperandArg(name, a, static_cast<size_t>(alpha_index)));
    }
    return One(Binary(op, x, y, alpha));
  });
}

void RegisterBinary(Registrar& r) {
  for (const char* ov : {"Tensor", "Scalar"}) {
    const std::string o = ov;
    AddBinary(r, "aten::add." + o, BinaryOp::kAdd, 2);
    AddBinary(r, "aten::sub." + o, BinaryOp::kSub, 2);
    AddBinary(r, "aten::mul." + o, BinaryOp::kMul);
    AddBinary(r, "aten::div." + o, BinaryOp::kDiv);
    AddBinary(r, "aten::eq." + o, BinaryOp::kEq);
    AddBinary(r, "aten::ne." + o, BinaryOp::kNe);
    AddBinary(r, "aten::lt." + o, BinaryOp::kLt);
    AddBinary(r, "aten::le." + o, BinaryOp::kLe);
    AddBinary(r, "aten::gt." + o, BinaryOp::kGt);
    AddBinary(r, "aten::ge." + o, BinaryOp::kGe);
  }
  for (const char* ov : {"Tensor", "Scalar", "Scalar_Tensor"}) {
    const std::string o = ov;
    AddBinary(r, "aten::bitwise_and." + o, BinaryOp::kBitwiseAnd);
    AddBinary(r, "aten::bitwise_or." + o, BinaryOp::kBitwiseOr);
    AddBinary(r, "aten::bitwise_xor." + o, BinaryOp::kBitwiseXor);
  }
  for (const char* ov : {"Tensor_Tensor", "Tensor_Scalar", "Scalar"}) {
    AddBinary(r, std::string("aten::pow.") + ov, BinaryOp::kPow);
  }
  AddBinary(r, "aten::maximum", BinaryOp::kMaximum);
  AddBinary(r, "aten::minimum", BinaryOp::kMinimum);
  AddBinary(r, "aten::logical_and", BinaryOp::kLogicalAnd);
  AddBinary(r, "aten::logical_or", BinaryOp::kLogicalOr);
  AddBinary(r, "aten::logical_xor", BinaryOp::kLogicalXor);
  for (const char* ov : {"aten::div.Tensor_mode", "aten::div.Scalar_mode"}) {
    const std::string name = ov;
    r.AddIfPresent(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Operand x, OperandArg(name, a, 0));
      ASSIGN_OR_RETURN(Operand y, OperandArg(name, a, 1));
      BinaryOp op = BinaryOp::kDiv;
      if (a.size() > 2 && a[2].isString()) {
        if (a[2].toString() == "trunc") op = BinaryOp::kDivTrunc;
        else if (a[2].toString() == "floor") op = BinaryOp::kDivFloor;
        else {
          return absl::InvalidArgumentError(
              absl::StrCat(name, ": unknown rounding_mode '", a[2].toString(), "'"));
        }
      }
      return One(Binary(op, x, y));
    });
  }
}

void RegisterMisc(Registrar& r) {
  for (const char* ov : {"aten::where.self", "aten::where.ScalarOther", "aten::where.ScalarSelf",
                         "aten::where.Scalar"}) {
    const std::string name = ov;
    r.AddIfPresent(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor c, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Operand x, OperandArg(name, a, 1));
      ASSIGN_OR_RETURN(Operand y, OperandArg(name, a, 2));
      return One(Where(c, x, y));
    });
  }
  for (const char* ov : {"aten::clamp", "aten::clamp.Tensor"}) {
    const std::string name = ov;
    r.AddIfPresent(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::optional<Operand> lo, OptionalOperandArg(name, a, 1));
      ASSIGN_OR_RETURN(std::optional<Operand> hi, OptionalOperandArg(name, a, 2));
      return One(Clamp(x, lo, hi));
    });
  }
  // to.dtype(self, dtype, non_blocking, copy, memory_format) and
  // to.prim_dtype(self, int? dtype, non_blocking, copy).
  for (const char* ov : {"aten::to.dtype", "aten::to.prim_dtype"}) {
    const std::string name = ov;
    r.AddIfPresent(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 1));
      ASSIGN_OR_RETURN(bool copy, BoolArg(name, a, 3));
      return One(To(x, dtype.value_or(x.dtype()), copy));
    });
  }
}

// Layout of a reduction schema's arguments.
struct ReduceSchema {
  const char* name;
  ReduceOp op;
  int dims = -1;       // int[]? / int? / int position, or -1 (all dims)
  int keepdim = -1;    // bool position or -1
  int dtype = -1;      // ScalarType? position or -1
  int unbiased = -1;   // var: bool position
  int correction = -1; // var.correction: int? position
};

void RegisterReductions(Registrar& r) {
  const ReduceSchema schemas[] = {
      {"aten::sum", ReduceOp::kSum, -1, -1, 1},
      {"aten::sum.dim_IntList", ReduceOp::kSum, 1, 2, 3},
      {"aten::mean", ReduceOp::kMean, -1, -1, 1},
      {"aten::mean.dim", ReduceOp::kMean, 1, 2, 3},
      {"aten::prod", ReduceOp::kProd, -1, -1, 1},
      {"aten::prod.dim_int", ReduceOp::kProd, 1, 2, 3},
      {"aten::amax", ReduceOp::kAmax, 1, 2},
      {"aten::amin", ReduceOp::kAmin, 1, 2},
      {"aten::argmax", ReduceOp::kArgmax, 1, 2},
      {"aten::argmin", ReduceOp::kArgmin, 1, 2},
      {"aten::logsumexp", ReduceOp::kLogsumexp, 1, 2},
      {"aten::var", ReduceOp::kVar, -1, -1, -1, 1},
      {"aten::var.dim", ReduceOp::kVar, 1, 3, -1, 2},
      {"aten::var.correction", ReduceOp::kVar, 1, 3, -1, -1, 2},
  };
  for (const ReduceSchema& s : schemas) {
    const std::string name = s.name;
    r.AddIfPresent(name, [name, s](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ReduceOptions opt;
      if (s.dims >= 0) {
        ASSIGN_OR_RETURN(opt.dims, DimsArg(name, a, static_cast<size_t>(s.dims)));
        // argmax(dim=None, keepdim=True) is not a plain "all dims" reduction.
        if ((s.op == ReduceOp::kArgmax || s.op == ReduceOp::kArgmin) && !opt.dims &&
            s.keepdim >= 0 && a.size() > static_cast<size_t>(s.keepdim) &&
            a[s.keepdim].isBool() && a[s.keepdim].toBool()) {
          return absl::UnimplementedError(absl::StrCat(name, ": dim=None with keepdim=True"));
        }
      }
      if (s.keepdim >= 0) {
        ASSIGN_OR_RETURN(opt.keepdim, BoolArg(name, a, static_cast<size_t>(s.keepdim)));
      }
      if (s.dtype >= 0) {
        ASSIGN_OR_RETURN(opt.dtype, DTypeArg(name, a, static_cast<size_t>(s.dtype)));
      }
      if (s.unbiased >= 0) {
        ASSIGN_OR_RETURN(bool unbiased, BoolArg(name, a, static_cast<size_t>(s.unbiased)));
        opt.correction = unbiased ? 1.0 : 0.0;
      }
      if (s.correction >= 0 && static_cast<size_t>(s.correction) < a.size() &&
          !a[s.correction].isNone()) {
        ASSIGN_OR_RETURN(int64_t c, IntArg(name, a, static_cast<size_t>(s.correction)));
        opt.correction = static_cast<double>(c);
      }
      return One(Reduce(s.op, x, opt));
    });
  }
  for (const char* ov : {"aten::softmax.int", "aten::log_softmax.int"}) {
    const std::string name = ov;
    const bool log = name == "aten::log_softmax.int";
    r.AddIfPresent(name, [name, log](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(int64_t dim, IntArg(name, a, 1));
      ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 2));
      return One(Softmax(x, dim, dtype, log));
    });
  }
}

void RegisterLinalg(Registrar& r) {
  using Fn = absl::StatusOr<Tensor> (*)(const Tensor&, const Tensor&);
  const std::pair<const char*, Fn> ops[] = {
      {"aten::mm", &Mm}, {"aten::bmm", &Bmm}, {"aten::matmul", &Matmul}};
  for (const auto& [n, fn] : ops) {
    const std::string name = n;
    const Fn f = fn;
    r.AddIfPresent(name, [name, f](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Tensor y, TensorArg(name, a, 1));
      return One(f(x, y));
    });
  }
}

}  // namespace

absl::Status RegisterReferenceKernels(ir::OpRegistry& registry) {
  Registrar r{registry, absl::OkStatus()};
  RegisterUnary(r);
  RegisterBinary(r);
  RegisterMisc(r);
  RegisterReductions(r);
  RegisterLinalg(r);
  // Op families, one file each (register_<family>.cc).
  RegisterNnKernels(r);
  RegisterShapeKernels(r);
  RegisterMathKernels(r);
  RegisterSpecialKernels(r);
  RegisterSequenceKernels(r);
  return r.status;
}

}  // namespace kiln::runtime
