// Typed entry points of the pointwise rows (ops/defs/pointwise.def).
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels_math.h"
#include "runtime/op_kernels.h"

namespace kiln::runtime {

KernelBinder UnaryKernel(UnaryOp op) {
  return Unboxed([op](const Tensor& x) { return Unary(op, x); });
}

KernelBinder MathUnaryKernel(const char* name, int num_params) {
  const std::string op = name;
  using P = std::optional<double>;
  switch (num_params) {
    case 0: return Unboxed([op](const Tensor& x) { return MathUnary(op, x); });
    case 1: return Unboxed([op](const Tensor& x, P a) { return MathUnary(op, x, {a}); });
    case 2:
      return Unboxed([op](const Tensor& x, P a, P b) { return MathUnary(op, x, {a, b}); });
    default:
      return Unboxed(
          [op](const Tensor& x, P a, P b, P c) { return MathUnary(op, x, {a, b, c}); });
  }
}

KernelBinder BinaryKernel(BinaryOp op) {
  return Unboxed([op](const Operand& x, const Operand& y) { return Binary(op, x, y); });
}

KernelBinder BinaryAlphaKernel(BinaryOp op) {
  return Unboxed([op](const Operand& x, const Operand& y, const Operand& alpha) {
    return Binary(op, x, y, alpha);
  });
}

KernelBinder MathBinaryKernel(const char* name) {
  const std::string op = name;
  return Unboxed([op](const Operand& x, const Operand& y) { return MathBinary(op, x, y); });
}

// rsub(self, other, alpha) = other - alpha * self.
absl::StatusOr<Tensor> Rsub(const Operand& self, const Operand& other, const Operand& alpha) {
  return Binary(BinaryOp::kSub, other, self, alpha);
}

absl::StatusOr<Tensor> DivMode(const std::string& op, const Operand& self, const Operand& other,
                               const std::optional<std::string>& rounding_mode) {
  BinaryOp kind = BinaryOp::kDiv;
  if (rounding_mode) {
    if (*rounding_mode == "trunc") {
      kind = BinaryOp::kDivTrunc;
    } else if (*rounding_mode == "floor") {
      kind = BinaryOp::kDivFloor;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": unknown rounding_mode '", *rounding_mode, "'"));
    }
  }
  return Binary(kind, self, other);
}

absl::StatusOr<Tensor> Addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2,
                               const Operand& value) {
  return AddcOp(self, t1, t2, value, /*divide=*/false);
}

absl::StatusOr<Tensor> Addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2,
                               const Operand& value) {
  return AddcOp(self, t1, t2, value, /*divide=*/true);
}

absl::StatusOr<Tensor> ClampMin(const Tensor& self, const Operand& min) {
  return Clamp(self, min, std::nullopt);
}

absl::StatusOr<Tensor> ClampMax(const Tensor& self, const Operand& max) {
  return Clamp(self, std::nullopt, max);
}

absl::StatusOr<Tensor> ToCopy(const Tensor& self, std::optional<DType> dtype) {
  return To(self, dtype.value_or(self.dtype()), /*copy=*/true);
}

absl::StatusOr<Tensor> ToDtype(const Tensor& self, std::optional<DType> dtype, bool, bool copy) {
  return To(self, dtype.value_or(self.dtype()), copy);
}

absl::StatusOr<Tensor> ToOther(const Tensor& self, const Tensor& other, bool, bool copy) {
  return To(self, other.dtype(), copy);
}

absl::StatusOr<Tensor> TypeAs(const Tensor& self, const Tensor& other) {
  return To(self, other.dtype());
}

absl::StatusOr<Tensor> ToDevice(const Tensor& self, const Unused&, DType dtype, bool,
                                bool copy) {
  return To(self, dtype, copy);
}

absl::StatusOr<Tensor> ToDtypeLayout(const Tensor& self, std::optional<DType> dtype,
                                     const Unused&, const Unused&, const Unused&, bool,
                                     bool copy) {
  return To(self, dtype.value_or(self.dtype()), copy);
}

absl::StatusOr<Tensor> ToPrimDevice(const Tensor& self, const Unused&,
                                    std::optional<DType> dtype, bool, bool copy) {
  return To(self, dtype.value_or(self.dtype()), copy);
}

absl::StatusOr<Tensor> ToPrimOther(const Tensor& self, bool, bool copy) {
  return To(self, self.dtype(), copy);
}

absl::StatusOr<Tensor> Gelu(const std::string& op, const Tensor& self,
                            const std::string& approximate) {
  if (approximate == "none") return Unary(UnaryOp::kGelu, self);
  if (approximate == "tanh") return Unary(UnaryOp::kGeluTanh, self);
  return absl::InvalidArgumentError(absl::StrCat(op, ": unknown approximate '", approximate, "'"));
}

absl::StatusOr<Tensor> LeakyRelu(const Tensor& self, double negative_slope) {
  UnaryParams p;
  p.negative_slope = negative_slope;
  return Unary(UnaryOp::kLeakyRelu, self, p);
}

absl::StatusOr<Tensor> Elu(const Tensor& self, double alpha, double scale, double input_scale) {
  UnaryParams p;
  p.alpha = alpha;
  p.scale = scale;
  p.input_scale = input_scale;
  return Unary(UnaryOp::kElu, self, p);
}

absl::StatusOr<Tensor> Softplus(const Tensor& self, double beta, double threshold) {
  UnaryParams p;
  p.beta = beta;
  p.threshold = threshold;
  return Unary(UnaryOp::kSoftplus, self, p);
}

}  // namespace kiln::runtime
