// Kernel registration for the math op family (kernels_math.h and the
// remaining ATen overloads of kernels.h's ops).
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernel_args.h"
#include "runtime/kernels.h"
#include "runtime/kernels_math.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

Result Two(absl::StatusOr<std::pair<Tensor, Tensor>> r) {
  if (!r.ok()) return r.status();
  return std::vector<IValue>{IValue::FromTensor(std::move(r->first)),
                             IValue::FromTensor(std::move(r->second))};
}

void RegisterElementwise(Registrar& r) {
  for (const MathUnaryInfo& info : MathUnaryOps()) {
    const std::string name = absl::StrCat("aten::", info.name);
    const std::string op = info.name;
    const int np = info.num_params;
    r.AddIfPresent(name, [name, op, np](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      std::vector<std::optional<double>> params;
      for (int k = 0; k < np; ++k) {
        ASSIGN_OR_RETURN(std::optional<double> p, OptionalNumberArg(name, a, 1 + k));
        params.push_back(p);
      }
      return One(MathUnary(op, x, params));
    });
  }
  struct BinaryName { const char* aten; const char* op; };
  const BinaryName binaries[] = {
      {"aten::remainder.Tensor", "remainder"}, {"aten::remainder.Scalar", "remainder"},
      {"aten::remainder.Scalar_Tensor", "remainder"}, {"aten::fmod.Tensor", "fmod"},
      {"aten::fmod.Scalar", "fmod"}, {"aten::floor_divide", "floor_divide"},
      {"aten::floor_divide.Scalar", "floor_divide"}, {"aten::atan2", "atan2"},
      {"aten::bitwise_left_shift.Tensor", "bitwise_left_shift"},
      {"aten::bitwise_left_shift.Tensor_Scalar", "bitwise_left_shift"},
      {"aten::bitwise_left_shift.Scalar_Tensor", "bitwise_left_shift"},
      {"aten::bitwise_right_shift.Tensor", "bitwise_right_shift"},
      {"aten::bitwise_right_shift.Tensor_Scalar", "bitwise_right_shift"},
      {"aten::bitwise_right_shift.Scalar_Tensor", "bitwise_right_shift"},
      {"aten::__lshift__.Tensor", "bitwise_left_shift"},
      {"aten::__lshift__.Scalar", "bitwise_left_shift"},
      {"aten::__rshift__.Tensor", "bitwise_right_shift"},
      {"aten::__rshift__.Scalar", "bitwise_right_shift"}, {"aten::heaviside", "heaviside"},
      {"aten::logaddexp", "logaddexp"}, {"aten::logaddexp2", "logaddexp2"},
      {"aten::fmax", "fmax"}, {"aten::fmin", "fmin"},
  };
  for (const BinaryName& b : binaries) {
    const std::string name = b.aten, op = b.op;
    r.AddIfPresent(name, [name, op](Args a) -> Result {
      ASSIGN_OR_RETURN(Operand x, OperandArg(name, a, 0));
      ASSIGN_OR_RETURN(Operand y, OperandArg(name, a, 1));
      return One(MathBinary(op, x, y));
    });
  }
  struct Simple { const char* aten; BinaryOp op; };
  const Simple simple[] = {{"aten::true_divide.Tensor", BinaryOp::kDiv},
                           {"aten::true_divide.Scalar", BinaryOp::kDiv},
                           {"aten::max.other", BinaryOp::kMaximum},
                           {"aten::min.other", BinaryOp::kMinimum}};
  for (const Simple& s : simple) {
    const std::string name = s.aten;
    const BinaryOp op = s.op;
    r.AddIfPresent(name, [name, op](Args a) -> Result {
      ASSIGN_OR_RETURN(Operand x, OperandArg(name, a, 0));
      ASSIGN_OR_RETURN(Operand y, OperandArg(name, a, 1));
      return One(Binary(op, x, y));
    });
  }
  // rsub(self, other, alpha) = other - alpha * self.
  for (const char* ov : {"aten::rsub.Tensor", "aten::rsub.Scalar"}) {
    const std::string name = ov;
    r.AddIfPresent(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Operand x, OperandArg(name, a, 0));
      ASSIGN_OR_RETURN(Operand y, OperandArg(name, a, 1));
      ASSIGN_OR_RETURN(Operand alpha, OperandArg(name, a, 2));
      return One(Binary(BinaryOp::kSub, y, x, alpha));
    });
  }
  for (const char* ov : {"aten::lerp.Scalar", "aten::lerp.Tensor"}) {
    const std::string name = ov;
    r.AddIfPresent(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Tensor end, TensorArg(name, a, 1));
      ASSIGN_OR_RETURN(Operand w, OperandArg(name, a, 2));
      return One(Lerp(x, end, w));
    });
  }
  for (const char* ov : {"aten::addcmul", "aten::addcdiv"}) {
    const std::string name = ov;
    const bool divide = name == "aten::addcdiv";
    r.AddIfPresent(name, [name, divide](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Tensor t1, TensorArg(name, a, 1));
      ASSIGN_OR_RETURN(Tensor t2, TensorArg(name, a, 2));
      ASSIGN_OR_RETURN(Operand v, OperandArg(name, a, 3));
      return One(AddcOp(x, t1, t2, v, divide));
    });
  }
  r.AddIfPresent("aten::prelu", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::prelu", a, 0));
    ASSIGN_OR_RETURN(Tensor w, TensorArg("aten::prelu", a, 1));
    return One(Prelu(x, w));
  });
  r.AddIfPresent("aten::glu", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::glu", a, 0));
    ASSIGN_OR_RETURN(int64_t dim, IntArg("aten::glu", a, 1));
    return One(Glu(x, dim));
  });
  for (const char* ov : {"aten::clamp_min", "aten::clamp_min.Tensor", "aten::clamp_max",
                         "aten::clamp_max.Tensor"}) {
    const std::string name = ov;
    const bool is_min = name.find("clamp_min") != std::string::npos;
    r.AddIfPresent(name, [name, is_min](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Operand bound, OperandArg(name, a, 1));
      return One(is_min ? Clamp(x, bound, std::nullopt) : Clamp(x, std::nullopt, bound));
    });
  }
}

void RegisterConversions(Registrar& r) {
  // to.other(self, other, non_blocking, copy, memory_format), type_as.
  r.AddIfPresent("aten::to.other", [](Args a) -> Result {
    const std::string name = "aten::to.other";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor other, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(bool copy, BoolArg(name, a, 3));
    return One(To(x, other.dtype(), copy));
  });
  r.AddIfPresent("aten::type_as", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::type_as", a, 0));
    ASSIGN_OR_RETURN(Tensor other, TensorArg("aten::type_as", a, 1));
    return One(To(x, other.dtype()));
  });
  // to.device(self, device, dtype, non_blocking, copy, memory_format).
  r.AddIfPresent("aten::to.device", [](Args a) -> Result {
    const std::string name = "aten::to.device";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 2));
    ASSIGN_OR_RETURN(bool copy, BoolArg(name, a, 4));
    return One(To(x, dtype.value_or(x.dtype()), copy));
  });
  // to.dtype_layout(self, *, dtype, layout, device, pin_memory, non_blocking,
  // copy, memory_format).
  r.AddIfPresent("aten::to.dtype_layout", [](Args a) -> Result {
    const std::string name = "aten::to.dtype_layout";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 1));
    ASSIGN_OR_RETURN(bool copy, BoolArg(name, a, 6));
    return One(To(x, dtype.value_or(x.dtype()), copy));
  });
  // to.prim_Device(self, device?, int? dtype, non_blocking, copy).
  r.AddIfPresent("aten::to.prim_Device", [](Args a) -> Result {
    const std::string name = "aten::to.prim_Device";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 2));
    ASSIGN_OR_RETURN(bool copy, BoolArg(name, a, 4));
    return One(To(x, dtype.value_or(x.dtype()), copy));
  });
  r.AddIfPresent("aten::to.prim_other", [](Args a) -> Result {
    const std::string name = "aten::to.prim_other";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(bool copy, BoolArg(name, a, 2));
    return One(To(x, x.dtype(), copy));
  });
}

// dims argument of `var.dim`-style overloads (int[1]?).
absl::StatusOr<std::optional<std::vector<int64_t>>> Dims(const std::string& n, Args a, size_t i) {
  return DimsArg(n, a, i);
}

void RegisterReductions(Registrar& r) {
  for (const char* ov : {"aten::max", "aten::min"}) {
    const std::string name = ov;
    const ReduceOp op = name == "aten::max" ? ReduceOp::kAmax : ReduceOp::kAmin;
    r.AddIfPresent(name, [name, op](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      return One(Reduce(op, x, ReduceOptions{}));
    });
  }
  for (const char* ov : {"aten::max.dim", "aten::min.dim"}) {
    const std::string name = ov;
    const bool is_max = name == "aten::max.dim";
    r.AddIfPresent(name, [name, is_max](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(int64_t dim, IntArg(name, a, 1));
      ASSIGN_OR_RETURN(bool keepdim, BoolArg(name, a, 2));
      return Two(MaxMinDim(x, dim, keepdim, is_max));
    });
  }
  // std / var_mean / std_mean in their three layouts: (self, unbiased),
  // (self, dim, unbiased, keepdim), (self, dim, *, correction, keepdim).
  for (const char* base : {"std", "var_mean", "std_mean"}) {
    const std::string b = base;
    const bool sqrt = b != "var_mean";
    const bool with_mean = b != "std";
    for (int layout = 0; layout < 3; ++layout) {
      const std::string name =
          absl::StrCat("aten::", b, layout == 0 ? "" : (layout == 1 ? ".dim" : ".correction"));
      r.AddIfPresent(name, [name, sqrt, with_mean, layout](Args a) -> Result {
        ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
        std::optional<std::vector<int64_t>> dims;
        double correction = 1;
        bool keepdim = false;
        if (layout == 0) {
          ASSIGN_OR_RETURN(bool unbiased, BoolArg(name, a, 1));
          correction = unbiased ? 1 : 0;
        } else {
          ASSIGN_OR_RETURN(dims, Dims(name, a, 1));
          if (layout == 1) {
            ASSIGN_OR_RETURN(bool unbiased, BoolArg(name, a, 2));
            correction = unbiased ? 1 : 0;
          } else if (a.size() > 2 && !a[2].isNone()) {
            ASSIGN_OR_RETURN(correction, NumberArg(name, a, 2));
          }
          ASSIGN_OR_RETURN(keepdim, BoolArg(name, a, 3));
        }
        auto res = VarStdMean(x, dims, correction, keepdim, sqrt);
        if (!with_mean) {
          if (!res.ok()) return res.status();
          return One(res->first);
        }
        return Two(std::move(res));
      });
    }
  }
  // norm overloads: p (None = 2) over dims (all when absent).
  struct NormSchema { const char* name; int dims; int keepdim; int dtype; };
  const NormSchema norms[] = {{"aten::norm.Scalar", -1, -1, -1},
                              {"aten::norm.ScalarOpt_dim", 2, 3, -1},
                              {"aten::norm.ScalarOpt_dim_dtype", 2, 3, 4},
                              {"aten::norm.ScalarOpt_dtype", -1, -1, 2}};
  for (const NormSchema& s : norms) {
    const std::string name = s.name;
    r.AddIfPresent(name, [name, s](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::optional<double> p, OptionalNumberArg(name, a, 1));
      std::optional<std::vector<int64_t>> dims;
      bool keepdim = false;
      std::optional<DType> dtype;
      if (s.dims >= 0) {
        ASSIGN_OR_RETURN(dims, Dims(name, a, static_cast<size_t>(s.dims)));
      }
      if (s.keepdim >= 0) {
        ASSIGN_OR_RETURN(keepdim, BoolArg(name, a, static_cast<size_t>(s.keepdim)));
      }
      if (s.dtype >= 0) {
        ASSIGN_OR_RETURN(dtype, DTypeArg(name, a, static_cast<size_t>(s.dtype)));
      }
      return One(VectorNorm(x, p.value_or(2.0), dims, keepdim, dtype));
    });
  }
  r.AddIfPresent("aten::linalg_vector_norm", [](Args a) -> Result {
    const std::string name = "aten::linalg_vector_norm";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(double ord, NumberArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, Dims(name, a, 2));
    ASSIGN_OR_RETURN(bool keepdim, BoolArg(name, a, 3));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 4));
    return One(VectorNorm(x, ord, dims, keepdim, dtype));
  });
  r.AddIfPresent("aten::frobenius_norm", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::frobenius_norm", a, 0));
    return One(VectorNorm(x, 2.0, std::nullopt, false, std::nullopt));
  });
  r.AddIfPresent("aten::frobenius_norm.dim", [](Args a) -> Result {
    const std::string name = "aten::frobenius_norm.dim";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, Dims(name, a, 1));
    ASSIGN_OR_RETURN(bool keepdim, BoolArg(name, a, 2));
    return One(VectorNorm(x, 2.0, dims, keepdim, std::nullopt));
  });
  for (const char* base : {"all", "any"}) {
    const bool is_all = std::string(base) == "all";
    const std::string whole = absl::StrCat("aten::", base);
    r.AddIfPresent(whole, [whole, is_all](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(whole, a, 0));
      return One(AllAny(x, std::nullopt, false, is_all));
    });
    const std::string dim = absl::StrCat("aten::", base, ".dim");
    r.AddIfPresent(dim, [dim, is_all](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(dim, a, 0));
      ASSIGN_OR_RETURN(int64_t d, IntArg(dim, a, 1));
      ASSIGN_OR_RETURN(bool keepdim, BoolArg(dim, a, 2));
      return One(AllAny(x, std::vector<int64_t>{d}, keepdim, is_all));
    });
  }
  for (const char* ov : {"aten::count_nonzero", "aten::count_nonzero.dim_IntList"}) {
    const std::string name = ov;
    r.AddIfPresent(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, Dims(name, a, 1));
      // An empty dim list counts over every dim (as ATen).
      return One(CountNonzero(x, dims));
    });
  }
  for (const char* ov : {"aten::cummax", "aten::cummin"}) {
    const std::string name = ov;
    const bool is_max = name == "aten::cummax";
    r.AddIfPresent(name, [name, is_max](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(int64_t dim, IntArg(name, a, 1));
      return Two(CumMaxMin(x, dim, is_max));
    });
  }
  r.AddIfPresent("aten::logcumsumexp", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::logcumsumexp", a, 0));
    ASSIGN_OR_RETURN(int64_t dim, IntArg("aten::logcumsumexp", a, 1));
    return One(LogCumSumExp(x, dim));
  });
}

void RegisterLinalg(Registrar& r) {
  for (const char* ov : {"aten::addmm", "aten::baddbmm"}) {
    const std::string name = ov;
    const bool batched = name == "aten::baddbmm";
    r.AddIfPresent(name, [name, batched](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor self, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Tensor m1, TensorArg(name, a, 1));
      ASSIGN_OR_RETURN(Tensor m2, TensorArg(name, a, 2));
      ASSIGN_OR_RETURN(double beta, NumberArg(name, a, 3));
      ASSIGN_OR_RETURN(double alpha, NumberArg(name, a, 4));
      return One(batched ? Baddbmm(self, m1, m2, beta, alpha) : Addmm(self, m1, m2, beta, alpha));
    });
  }
  r.AddIfPresent("aten::linear", [](Args a) -> Result {
    const std::string name = "aten::linear";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
    return One(Linear(x, w, b));
  });
  using Fn = absl::StatusOr<Tensor> (*)(const Tensor&, const Tensor&);
  const std::pair<const char*, Fn> pairs[] = {
      {"aten::dot", &Dot}, {"aten::mv", &Mv}, {"aten::outer", &Outer}};
  for (const auto& [n, fn] : pairs) {
    const std::string name = n;
    const Fn f = fn;
    r.AddIfPresent(name, [name, f](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Tensor y, TensorArg(name, a, 1));
      return One(f(x, y));
    });
  }
  r.AddIfPresent("aten::einsum", [](Args a) -> Result {
    ASSIGN_OR_RETURN(std::string eq, StringArg("aten::einsum", a, 0));
    ASSIGN_OR_RETURN(std::vector<Tensor> ts, TensorListArg("aten::einsum", a, 1));
    return One(Einsum(eq, ts));
  });
  for (const char* ov : {"aten::det", "aten::linalg_det"}) {
    const std::string name = ov;
    r.AddIfPresent(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      return One(Det(x));
    });
  }
}

void RegisterOnnxSemantics(Registrar& r) {
  r.Add("kiln::reduce", [](Args a) -> Result {
    const std::string name = "kiln::reduce";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::string kind, StringArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, Dims(name, a, 2));
    ASSIGN_OR_RETURN(bool keepdims, BoolArg(name, a, 3));
    ASSIGN_OR_RETURN(bool noop, BoolArg(name, a, 4));
    return One(OnnxReduce(kind, x, axes, keepdims, noop));
  });
  r.Add("kiln::arg_extreme", [](Args a) -> Result {
    const std::string name = "kiln::arg_extreme";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t dim, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(bool keepdim, BoolArg(name, a, 2));
    ASSIGN_OR_RETURN(bool last, BoolArg(name, a, 3));
    ASSIGN_OR_RETURN(bool largest, BoolArg(name, a, 4));
    return One(ArgExtreme(x, dim, keepdim, last, largest));
  });
  r.Add("kiln::flat_softmax", [](Args a) -> Result {
    const std::string name = "kiln::flat_softmax";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t kind, IntArg(name, a, 2));
    return One(FlatSoftmax(x, axis, kind));
  });
  r.Add("kiln::hardmax", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("kiln::hardmax", a, 0));
    ASSIGN_OR_RETURN(int64_t dim, IntArg("kiln::hardmax", a, 1));
    return One(Hardmax(x, dim));
  });
  r.Add("kiln::shrink", [](Args a) -> Result {
    const std::string name = "kiln::shrink";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(double bias, NumberArg(name, a, 1));
    ASSIGN_OR_RETURN(double lambd, NumberArg(name, a, 2));
    return One(Shrink(x, bias, lambd));
  });
}

}  // namespace

void RegisterMathKernels(Registrar& r) {
  RegisterElementwise(r);
  RegisterConversions(r);
  RegisterReductions(r);
  RegisterLinalg(r);
  RegisterOnnxSemantics(r);
}

}  // namespace kiln::runtime
