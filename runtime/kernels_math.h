// Reference kernels of the math family beyond runtime/kernels.h: the rest of
// ATen's elementwise math and activations, reductions with indices and
// norms, linear algebra (addmm, einsum, det...), and the kiln:: ops that give
// ONNX's semantics where ATen has none (ONNX reductions, arg-reductions with
// select_last_index, coerced-2-D softmax, hardmax, shrink).
//
// Conventions as in kernels.h: any input strides, contiguous outputs, dtype
// rules of PyTorch 1.13 for aten ops and of ONNX for kiln ops; invalid
// arguments are InvalidArgumentError naming the op, unsupported dtypes
// UnimplementedError.
#ifndef KILN_RUNTIME_KERNELS_MATH_H_
#define KILN_RUNTIME_KERNELS_MATH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/kernels.h"
#include "support/tensor.h"

namespace kiln::runtime {

// ---------------------------------------------------------------- elementwise

// An elementwise unary aten op by its name without namespace ("tan",
// "sign", "hardtanh", "nan_to_num"...). `params` are the op's scalar
// arguments in schema order; nullopt stands for None.
absl::StatusOr<Tensor> MathUnary(absl::string_view op, const Tensor& x,
                                 absl::Span<const std::optional<double>> params = {});
struct MathUnaryInfo {
  const char* name;
  int num_params;  // scalar arguments after `self`
};
// Every op MathUnary knows, for registration.
absl::Span<const MathUnaryInfo> MathUnaryOps();

// A broadcasting binary aten op by name: "remainder", "fmod",
// "floor_divide", "atan2", "bitwise_left_shift", "bitwise_right_shift",
// "heaviside", "logaddexp", "logaddexp2", "fmax", "fmin".
absl::StatusOr<Tensor> MathBinary(absl::string_view op, const Operand& a, const Operand& b);

// self + weight * (end - self).
absl::StatusOr<Tensor> Lerp(const Tensor& self, const Tensor& end, const Operand& weight);
// self + value * t1 * t2 (addcmul) or self + value * t1 / t2 (addcdiv).
absl::StatusOr<Tensor> AddcOp(const Tensor& self, const Tensor& t1, const Tensor& t2,
                              const Operand& value, bool divide);
// PyTorch's prelu: weight has one element or one per channel (dim 1).
absl::StatusOr<Tensor> Prelu(const Tensor& x, const Tensor& weight);
// glu: first half * sigmoid(second half) along dim.
absl::StatusOr<Tensor> Glu(const Tensor& x, int64_t dim);
// ONNX Shrink: x + bias below -lambd, x - bias above lambd, else 0; keeps
// the input dtype (integers included).
absl::StatusOr<Tensor> Shrink(const Tensor& x, double bias, double lambd);

// ---------------------------------------------------------------- reductions

// max.dim / min.dim: (values, int64 indices); NaN wins and reports its index.
absl::StatusOr<std::pair<Tensor, Tensor>> MaxMinDim(const Tensor& x, int64_t dim, bool keepdim,
                                                    bool is_max);
// var/std over dims (nullopt or empty: all), with `correction` (1: unbiased).
// Returns (var or std, mean).
absl::StatusOr<std::pair<Tensor, Tensor>> VarStdMean(
    const Tensor& x, const std::optional<std::vector<int64_t>>& dims, double correction,
    bool keepdim, bool take_sqrt);
// Vector p-norm over dims (all when nullopt or empty); ord may be +-inf or 0.
absl::StatusOr<Tensor> VectorNorm(const Tensor& x, double ord,
                                  const std::optional<std::vector<int64_t>>& dims, bool keepdim,
                                  std::optional<DType> dtype);
// all / any over dims (all dims when nullopt); bool output (uint8 for uint8).
absl::StatusOr<Tensor> AllAny(const Tensor& x, const std::optional<std::vector<int64_t>>& dims,
                              bool keepdim, bool is_all);
absl::StatusOr<Tensor> CountNonzero(const Tensor& x,
                                    const std::optional<std::vector<int64_t>>& dims);
// cummax / cummin: (values, int64 indices) along dim.
absl::StatusOr<std::pair<Tensor, Tensor>> CumMaxMin(const Tensor& x, int64_t dim, bool is_max);
absl::StatusOr<Tensor> LogCumSumExp(const Tensor& x, int64_t dim);

// ONNX Reduce* (kind: "sum", "mean", "max", "min", "prod", "l1", "l2",
// "log_sum", "log_sum_exp", "sum_square"). The output keeps the input dtype;
// empty axes reduce everything unless noop_with_empty_axes; reducing an
// empty set gives the kind's identity (0, 1, -inf/+inf for max/min,
// -inf for the logarithmic kinds).
absl::StatusOr<Tensor> OnnxReduce(absl::string_view kind, const Tensor& x,
                                  const std::optional<std::vector<int64_t>>& axes,
                                  bool keepdims, bool noop_with_empty_axes);
// ArgMax/ArgMin with ONNX's select_last_index.
absl::StatusOr<Tensor> ArgExtreme(const Tensor& x, int64_t dim, bool keepdim, bool select_last,
                                  bool largest);
// Softmax / log-softmax / hardmax (kind 0/1/2) over the input viewed as 2-D
// [prod(dims < axis), prod(dims >= axis)] (ONNX before opset 13).
absl::StatusOr<Tensor> FlatSoftmax(const Tensor& x, int64_t axis, int64_t kind);
// One-hot of the first maximum along dim (ONNX Hardmax from opset 13).
absl::StatusOr<Tensor> Hardmax(const Tensor& x, int64_t dim);

// ---------------------------------------------------------------- linalg

// beta * self + alpha * (m1 @ m2) with self broadcast to the product.
absl::StatusOr<Tensor> Addmm(const Tensor& self, const Tensor& m1, const Tensor& m2,
                             double beta, double alpha);
absl::StatusOr<Tensor> Baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2,
                               double beta, double alpha);
// x @ w^T + b.
absl::StatusOr<Tensor> Linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b);
absl::StatusOr<Tensor> Dot(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Mv(const Tensor& m, const Tensor& v);
absl::StatusOr<Tensor> Outer(const Tensor& a, const Tensor& b);
// torch.einsum: explicit ("ij,jk->ik") or implicit output, "..." broadcast
// dims, whitespace ignored.
absl::StatusOr<Tensor> Einsum(absl::string_view equation, absl::Span<const Tensor> operands);
// Determinant of the last two (square) dims, by LU with partial pivoting.
absl::StatusOr<Tensor> Det(const Tensor& a);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_KERNELS_MATH_H_
