// How tensor and float constants look in TorchScript IR text.
//
// PyTorch prints a tensor attribute as `{3.5}` when it has one element,
// inline through at::print (`0.01 *  1.6205 ... [ CPUFloatType{10} ]`, with
// newlines turned into spaces) when it has at most 10 elements, and as
// `<Tensor>` otherwise. Doubles print with c10's IValue repr (`1.`, `-0.`,
// `0.10000000000000001`). This file reproduces those formats and reads the
// inline form back.
#ifndef KILN_IR_TENSOR_TEXT_H_
#define KILN_IR_TENSOR_TEXT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/lexer.h"
#include "support/tensor.h"

namespace kiln::ir {

// Tensors with more elements print as `<Tensor>` (torch's
// max_tensor_display_size).
inline constexpr int64_t kMaxTensorDisplaySize = 10;

// c10::IValue::repr of a double: integral values below 1e10 as `<int>.`,
// otherwise `%.17g`; non-finite values as inf / -inf / nan.
void AppendDoubleRepr(double d, std::string* out);

// The text of a tensor attribute value (see file comment). Placeholders and
// undefined tensors print as `<Tensor>`.
void AppendTensorAttribute(const Tensor& t, std::string* out);

// Reads an inline tensor literal (at::print output with newlines as spaces),
// starting at its first number (or at `[` for an empty tensor) and ending
// after the closing `]` of `[ CPUFloatType{2,3} ]`.
absl::StatusOr<Tensor> ParseInlineTensor(Lexer& lex);

// A tensor of `dtype` and `sizes` (whose product must be 1) holding the
// number written as `number` (the `{N}` form). Integral dtypes need an
// integer; Float/Double accept any number.
absl::StatusOr<Tensor> MakeSingleElementTensor(DType dtype, std::vector<int64_t> sizes,
                                               absl::string_view number);

}  // namespace kiln::ir

#endif  // KILN_IR_TENSOR_TEXT_H_
