// Typed entry points of the sequence rows (ops/defs/sequence.def) and the
// shape queries (ops/defs/scalar.def).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels_sequence.h"
#include "runtime/kernels_shape.h"
#include "runtime/op_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

RecurrentInputs Inputs(const Tensor& x, const Tensor& w, const Tensor& r, const OptTensor& b,
                       const OptTensor& sequence_lens, const OptTensor& initial_h) {
  RecurrentInputs in;
  in.x = x;
  in.w = w;
  in.r = r;
  in.b = b;
  in.sequence_lens = sequence_lens;
  in.initial_h = initial_h;
  return in;
}

RecurrentOptions Options(const Strings& activations, const Doubles& alpha, const Doubles& beta,
                         std::optional<double> clip, const std::string& direction,
                         int64_t hidden_size, int64_t layout) {
  RecurrentOptions opt;
  opt.activations = activations;
  opt.activation_alpha = alpha;
  opt.activation_beta = beta;
  opt.clip = clip;
  opt.direction = direction;
  opt.hidden_size = hidden_size;
  opt.layout = layout;
  return opt;
}

absl::StatusOr<int64_t> OneElement(const std::string& op, const Tensor& t) {
  if (!t.has_data() || t.numel() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": needs a one-element tensor, got ", t.numel(), " elements"));
  }
  return int64_t{0};
}

}  // namespace

absl::StatusOr<TensorTriple> OnnxLstm(const Tensor& x, const Tensor& w, const Tensor& r,
                                      const OptTensor& b, const OptTensor& sequence_lens,
                                      const OptTensor& initial_h, const OptTensor& initial_c,
                                      const OptTensor& p, const Strings& activations,
                                      const Doubles& alpha, const Doubles& beta,
                                      std::optional<double> clip, const std::string& direction,
                                      int64_t hidden_size, int64_t input_forget, int64_t layout) {
  RecurrentInputs in = Inputs(x, w, r, b, sequence_lens, initial_h);
  in.initial_c = initial_c;
  in.p = p;
  RecurrentOptions opt = Options(activations, alpha, beta, clip, direction, hidden_size, layout);
  opt.input_forget = input_forget != 0;
  ASSIGN_OR_RETURN(RecurrentOutputs out, Recurrent(RecurrentKind::kLstm, in, opt));
  return TensorTriple(out.y, out.y_h, out.y_c);
}

absl::StatusOr<TensorPair> OnnxGru(const Tensor& x, const Tensor& w, const Tensor& r,
                                   const OptTensor& b, const OptTensor& sequence_lens,
                                   const OptTensor& initial_h, const Strings& activations,
                                   const Doubles& alpha, const Doubles& beta,
                                   std::optional<double> clip, const std::string& direction,
                                   int64_t hidden_size, int64_t linear_before_reset,
                                   int64_t layout) {
  RecurrentOptions opt = Options(activations, alpha, beta, clip, direction, hidden_size, layout);
  opt.linear_before_reset = linear_before_reset != 0;
  ASSIGN_OR_RETURN(RecurrentOutputs out,
                   Recurrent(RecurrentKind::kGru, Inputs(x, w, r, b, sequence_lens, initial_h), opt));
  return TensorPair(out.y, out.y_h);
}

absl::StatusOr<TensorPair> OnnxRnn(const Tensor& x, const Tensor& w, const Tensor& r,
                                   const OptTensor& b, const OptTensor& sequence_lens,
                                   const OptTensor& initial_h, const Strings& activations,
                                   const Doubles& alpha, const Doubles& beta,
                                   std::optional<double> clip, const std::string& direction,
                                   int64_t hidden_size, int64_t layout) {
  RecurrentOptions opt = Options(activations, alpha, beta, clip, direction, hidden_size, layout);
  ASSIGN_OR_RETURN(RecurrentOutputs out,
                   Recurrent(RecurrentKind::kRnn, Inputs(x, w, r, b, sequence_lens, initial_h), opt));
  return TensorPair(out.y, out.y_h);
}

absl::StatusOr<Tensor> SequenceLength(const std::vector<Tensor>& seq) {
  return Tensor::ScalarInt(static_cast<int64_t>(seq.size()), DType::kInt64);
}

absl::StatusOr<std::vector<Tensor>> OnnxSplitToSequence(const Tensor& input,
                                                        const OptTensor& split, int64_t axis,
                                                        int64_t keepdims) {
  return SplitToSequence(input, split, axis, keepdims != 0);
}

absl::StatusOr<Tensor> OnnxConcatFromSequence(const std::vector<Tensor>& seq, int64_t axis,
                                              int64_t new_axis) {
  return ConcatFromSequence(seq, axis, new_axis != 0);
}

absl::StatusOr<Tensor> OnnxStackScanOutputs(const std::vector<Tensor>& seq, int64_t axis,
                                            int64_t dtype, const Dims& element_shape) {
  return StackScanOutputs(seq, axis, dtype < 0 ? std::nullopt : DTypeFromCode(dtype),
                          element_shape);
}

absl::StatusOr<Tensor> OptionalHasElement(const ir::IValue& input) {
  return Tensor::ScalarInt(input.isNone() ? 0 : 1, DType::kBool);
}

absl::StatusOr<ir::IValue> OptionalGetElement(const std::string& op, const ir::IValue& input) {
  if (input.isNone()) return absl::InvalidArgumentError(op + ": the optional is empty");
  return input;
}

// ---------------------------------------------------------------- shape queries

absl::StatusOr<int64_t> SizeInt(const std::string& op, const Tensor& self, int64_t dim) {
  if (self.dim() == 0) return absl::InvalidArgumentError(op + ": a 0-dim tensor has no dims");
  ASSIGN_OR_RETURN(int64_t n, NormalizeDim(dim, self.dim(), "size"));
  return self.size(n);
}

absl::StatusOr<std::vector<int64_t>> SizeList(const Tensor& self) { return self.sizes(); }
absl::StatusOr<int64_t> DimKernel(const Tensor& self) { return self.dim(); }
absl::StatusOr<int64_t> NumelKernel(const Tensor& self) { return self.numel(); }
absl::StatusOr<int64_t> StrideInt(const std::string& op, const Tensor& self, int64_t dim) {
  if (self.dim() == 0) return absl::InvalidArgumentError(op + ": a 0-dim tensor has no dims");
  ASSIGN_OR_RETURN(int64_t n, NormalizeDim(dim, self.dim(), "stride"));
  return self.strides()[static_cast<size_t>(n)];
}
absl::StatusOr<int64_t> StorageOffset(const Tensor& self) { return self.storage_offset(); }

absl::StatusOr<int64_t> LenTensor(const std::string& op, const Tensor& self) {
  if (self.dim() == 0) return absl::InvalidArgumentError(op + ": len() of a 0-d tensor");
  return self.size(0);
}

// One-element tensor -> bool / int, as ONNX control flow needs for its
// condition and trip-count tensors.
absl::StatusOr<bool> BoolTensor(const std::string& op, const Tensor& self) {
  RETURN_IF_ERROR(OneElement(op, self).status());
  return self.GetDouble(0) != 0;
}

absl::StatusOr<int64_t> IntTensor(const std::string& op, const Tensor& self) {
  RETURN_IF_ERROR(OneElement(op, self).status());
  if (IsIntegral(self.dtype(), /*include_bool=*/true)) return self.GetInt(0);
  const double d = self.GetDouble(0);
  if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", d, " is not representable as an int"));
  }
  return static_cast<int64_t>(d);
}

absl::StatusOr<std::vector<int64_t>> TensorToIntList(const Tensor& self) {
  return shape::TensorToIntList(self);
}

absl::StatusOr<int64_t> TensorToInt(const std::string& op, const Tensor& self) {
  ASSIGN_OR_RETURN(std::vector<int64_t> v, shape::TensorToIntList(self));
  if (v.size() != 1) return absl::InvalidArgumentError(op + ": expects exactly one element");
  return v[0];
}

absl::StatusOr<Tensor> NumelTensor(const Tensor& self) { return Tensor::ScalarInt(self.numel()); }

}  // namespace kiln::runtime
