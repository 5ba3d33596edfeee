// Argument decoding for the reference kernels behind ir's op registry.
// Kernels receive their inputs as IValues in schema order, with defaults
// filled in; these helpers check each argument's kind and name the op and
// argument position in the error when it is wrong.
#ifndef KILN_RUNTIME_KERNEL_ARGS_H_
#define KILN_RUNTIME_KERNEL_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "runtime/kernels.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::runtime {

using Args = absl::Span<const ir::IValue>;
using Result = absl::StatusOr<std::vector<ir::IValue>>;

absl::Status ArgError(const std::string& op, size_t i, const char* want);
absl::StatusOr<Tensor> TensorArg(const std::string& op, Args a, size_t i);
absl::StatusOr<std::optional<Tensor>> OptionalTensorArg(const std::string& op, Args a,
                                                        size_t i);
absl::StatusOr<std::vector<Tensor>> TensorListArg(const std::string& op, Args a, size_t i);
// A tensor, or a number as a wrapped scalar.
absl::StatusOr<Operand> OperandArg(const std::string& op, Args a, size_t i);
absl::StatusOr<std::optional<Operand>> OptionalOperandArg(const std::string& op, Args a,
                                                          size_t i);
absl::StatusOr<double> NumberArg(const std::string& op, Args a, size_t i);
// float? : nullopt for None.
absl::StatusOr<std::optional<double>> OptionalNumberArg(const std::string& op, Args a, size_t i);
// float[] (ints are accepted as numbers).
absl::StatusOr<std::vector<double>> DoubleListArg(const std::string& op, Args a, size_t i);
absl::StatusOr<std::vector<std::string>> StringListArg(const std::string& op, Args a, size_t i);
absl::StatusOr<int64_t> IntArg(const std::string& op, Args a, size_t i);
absl::StatusOr<bool> BoolArg(const std::string& op, Args a, size_t i);
absl::StatusOr<std::string> StringArg(const std::string& op, Args a, size_t i);
// ScalarType? : nullopt for None.
absl::StatusOr<std::optional<DType>> DTypeArg(const std::string& op, Args a, size_t i);
// int[]? / int? / int : nullopt for None; an int becomes a one-element list.
absl::StatusOr<std::optional<std::vector<int64_t>>> DimsArg(const std::string& op, Args a,
                                                            size_t i);
// int[] (None is an error).
absl::StatusOr<std::vector<int64_t>> IntListArg(const std::string& op, Args a, size_t i);

// One tensor result.
Result One(absl::StatusOr<Tensor> t);

// Fills kernel slots, keeping the first error.
struct Registrar {
  ir::OpRegistry& reg;
  absl::Status status;
  // The overload must exist (a typo in a kernel name is an error).
  void Add(const std::string& name, ir::KernelFn fn);
  // Skips overloads the registry does not have.
  void AddIfPresent(const std::string& name, ir::KernelFn fn);
};

// Op-family registration, one file each (runtime/register_<family>.cc).
void RegisterNnKernels(Registrar& r);
void RegisterShapeKernels(Registrar& r);
void RegisterMathKernels(Registrar& r);
void RegisterSpecialKernels(Registrar& r);
void RegisterSequenceKernels(Registrar& r);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_KERNEL_ARGS_H_
