// Reference kernels: simple, correct, slow. They read inputs of any strides
// through logical element indices, compute in double (floating results) or
// int64 (integral results) and store contiguous outputs. Used for constant
// folding and as the oracle for device backends.
//
// Unsupported dtype/argument combinations return UnimplementedError naming
// the op and dtype; invalid arguments return InvalidArgumentError.
#ifndef KILN_RUNTIME_KERNELS_H_
#define KILN_RUNTIME_KERNELS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "support/tensor.h"

namespace kiln::runtime {

// A binary-op operand: a tensor, or a Python number held as a 0-dim tensor
// of kBool / kInt64 / kFloat64 (promotes as a wrapped scalar).
struct Operand {
  Tensor value;
  bool is_scalar = false;
  static Operand FromTensor(Tensor t) { return {std::move(t), false}; }
  static Operand Int(int64_t v) { return {Tensor::ScalarInt(v), true}; }
  static Operand Double(double v) { return {Tensor::ScalarDouble(v), true}; }
  static Operand Bool(bool v) { return {Tensor::ScalarInt(v ? 1 : 0, DType::kBool), true}; }
};

enum class UnaryOp {
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kSin, kCos, kTanh, kSigmoid, kRelu, kErf,
  kFloor, kCeil, kRound, kReciprocal, kGelu, kGeluTanh, kSilu, kHardswish, kHardsigmoid,
  kLeakyRelu, kElu, kSoftplus, kMish,
};
const char* UnaryOpName(UnaryOp op);

// Parameters of the parameterised activations (defaults as in ATen).
struct UnaryParams {
  double negative_slope = 0.01;                           // leaky_relu
  double alpha = 1.0, scale = 1.0, input_scale = 1.0;     // elu
  double beta = 1.0, threshold = 20.0;                    // softplus
};

absl::StatusOr<Tensor> Unary(UnaryOp op, const Tensor& x, const UnaryParams& params = {});

enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kDivTrunc, kDivFloor, kPow, kMaximum, kMinimum,
  kEq, kNe, kLt, kLe, kGt, kGe,
  kLogicalAnd, kLogicalOr, kLogicalXor,
  kBitwiseAnd, kBitwiseOr, kBitwiseXor,
};
const char* BinaryOpName(BinaryOp op);

// Broadcasting + type promotion. `alpha` scales b for add/sub; it must be
// an integer value when the result is integral.
absl::StatusOr<Tensor> Binary(BinaryOp op, const Operand& a, const Operand& b,
                              const Operand& alpha = Operand::Int(1));

absl::StatusOr<Tensor> Where(const Tensor& cond, const Operand& a, const Operand& b);
// Either bound may be absent (not both).
absl::StatusOr<Tensor> Clamp(const Tensor& x, const std::optional<Operand>& min,
                             const std::optional<Operand>& max);
// `copy` false returns x itself when the dtype already matches.
absl::StatusOr<Tensor> To(const Tensor& x, DType dtype, bool copy = false);

enum class ReduceOp { kSum, kMean, kProd, kAmax, kAmin, kArgmax, kArgmin, kVar, kLogsumexp };
const char* ReduceOpName(ReduceOp op);

struct ReduceOptions {
  // Dims to reduce; nullopt or empty: all dims.
  std::optional<std::vector<int64_t>> dims;
  bool keepdim = false;
  // sum/mean/prod: convert the input to this dtype first.
  std::optional<DType> dtype;
  double correction = 1.0;  // var
};

absl::StatusOr<Tensor> Reduce(ReduceOp op, const Tensor& x, const ReduceOptions& options);

// Numerically stable (max-subtracted) softmax / log_softmax along `dim`.
absl::StatusOr<Tensor> Softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype,
                               bool log);

absl::StatusOr<Tensor> Mm(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Bmm(const Tensor& a, const Tensor& b);
// torch.matmul's 1-D / 2-D / batched (broadcast) rules.
absl::StatusOr<Tensor> Matmul(const Tensor& a, const Tensor& b);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_KERNELS_H_
