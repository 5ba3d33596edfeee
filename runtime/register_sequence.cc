// Kernel registration for the sequence op family (kiln:: ops with ONNX
// semantics: recurrent layers, sequences, optionals).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernel_args.h"
#include "runtime/kernels_sequence.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

IValue TensorList(const std::vector<Tensor>& tensors) {
  std::vector<IValue> elems;
  elems.reserve(tensors.size());
  for (const Tensor& t : tensors) elems.push_back(IValue::FromTensor(t));
  return IValue::List(std::move(elems));
}

// Reads the arguments shared by the three recurrent schemas, which all start
// (X, W, R, B, sequence_lens, initial_h) and end (..., activations,
// activation_alpha, activation_beta, clip, direction, hidden_size, <flag>,
// layout). `tail` is the position of `activations`.
absl::Status ReadRecurrentArgs(const std::string& op, Args a, size_t tail,
                               RecurrentInputs& in, RecurrentOptions& opt) {
  ASSIGN_OR_RETURN(in.x, TensorArg(op, a, 0));
  ASSIGN_OR_RETURN(in.w, TensorArg(op, a, 1));
  ASSIGN_OR_RETURN(in.r, TensorArg(op, a, 2));
  ASSIGN_OR_RETURN(in.b, OptionalTensorArg(op, a, 3));
  ASSIGN_OR_RETURN(in.sequence_lens, OptionalTensorArg(op, a, 4));
  ASSIGN_OR_RETURN(in.initial_h, OptionalTensorArg(op, a, 5));
  ASSIGN_OR_RETURN(opt.activations, StringListArg(op, a, tail));
  ASSIGN_OR_RETURN(opt.activation_alpha, DoubleListArg(op, a, tail + 1));
  ASSIGN_OR_RETURN(opt.activation_beta, DoubleListArg(op, a, tail + 2));
  ASSIGN_OR_RETURN(opt.clip, OptionalNumberArg(op, a, tail + 3));
  ASSIGN_OR_RETURN(opt.direction, StringArg(op, a, tail + 4));
  ASSIGN_OR_RETURN(opt.hidden_size, IntArg(op, a, tail + 5));
  ASSIGN_OR_RETURN(opt.layout, IntArg(op, a, tail + 7));
  return absl::OkStatus();
}

void RegisterRecurrent(Registrar& r) {
  r.Add("kiln::lstm", [](Args a) -> Result {
    const std::string op = "kiln::lstm";
    RecurrentInputs in;
    RecurrentOptions opt;
    RETURN_IF_ERROR(ReadRecurrentArgs(op, a, 8, in, opt));
    ASSIGN_OR_RETURN(in.initial_c, OptionalTensorArg(op, a, 6));
    ASSIGN_OR_RETURN(in.p, OptionalTensorArg(op, a, 7));
    ASSIGN_OR_RETURN(int64_t input_forget, IntArg(op, a, 14));
    opt.input_forget = input_forget != 0;
    ASSIGN_OR_RETURN(RecurrentOutputs out, Recurrent(RecurrentKind::kLstm, in, opt));
    return std::vector<IValue>{IValue::FromTensor(out.y), IValue::FromTensor(out.y_h),
                               IValue::FromTensor(out.y_c)};
  });
  r.Add("kiln::gru", [](Args a) -> Result {
    const std::string op = "kiln::gru";
    RecurrentInputs in;
    RecurrentOptions opt;
    RETURN_IF_ERROR(ReadRecurrentArgs(op, a, 6, in, opt));
    ASSIGN_OR_RETURN(int64_t linear_before_reset, IntArg(op, a, 12));
    opt.linear_before_reset = linear_before_reset != 0;
    ASSIGN_OR_RETURN(RecurrentOutputs out, Recurrent(RecurrentKind::kGru, in, opt));
    return std::vector<IValue>{IValue::FromTensor(out.y), IValue::FromTensor(out.y_h)};
  });
  r.Add("kiln::rnn", [](Args a) -> Result {
    const std::string op = "kiln::rnn";
    RecurrentInputs in;
    RecurrentOptions opt;
    // kiln::rnn has no flag before `layout`: read it by hand.
    ASSIGN_OR_RETURN(in.x, TensorArg(op, a, 0));
    ASSIGN_OR_RETURN(in.w, TensorArg(op, a, 1));
    ASSIGN_OR_RETURN(in.r, TensorArg(op, a, 2));
    ASSIGN_OR_RETURN(in.b, OptionalTensorArg(op, a, 3));
    ASSIGN_OR_RETURN(in.sequence_lens, OptionalTensorArg(op, a, 4));
    ASSIGN_OR_RETURN(in.initial_h, OptionalTensorArg(op, a, 5));
    ASSIGN_OR_RETURN(opt.activations, StringListArg(op, a, 6));
    ASSIGN_OR_RETURN(opt.activation_alpha, DoubleListArg(op, a, 7));
    ASSIGN_OR_RETURN(opt.activation_beta, DoubleListArg(op, a, 8));
    ASSIGN_OR_RETURN(opt.clip, OptionalNumberArg(op, a, 9));
    ASSIGN_OR_RETURN(opt.direction, StringArg(op, a, 10));
    ASSIGN_OR_RETURN(opt.hidden_size, IntArg(op, a, 11));
    ASSIGN_OR_RETURN(opt.layout, IntArg(op, a, 12));
    ASSIGN_OR_RETURN(RecurrentOutputs out, Recurrent(RecurrentKind::kRnn, in, opt));
    return std::vector<IValue>{IValue::FromTensor(out.y), IValue::FromTensor(out.y_h)};
  });
}

void RegisterSequences(Registrar& r) {
  r.Add("kiln::sequence_at", [](Args a) -> Result {
    const std::string op = "kiln::sequence_at";
    ASSIGN_OR_RETURN(std::vector<Tensor> seq, TensorListArg(op, a, 0));
    ASSIGN_OR_RETURN(Tensor position, TensorArg(op, a, 1));
    return One(SequenceAt(seq, position));
  });
  r.Add("kiln::sequence_insert", [](Args a) -> Result {
    const std::string op = "kiln::sequence_insert";
    ASSIGN_OR_RETURN(std::vector<Tensor> seq, TensorListArg(op, a, 0));
    ASSIGN_OR_RETURN(Tensor value, TensorArg(op, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> position, OptionalTensorArg(op, a, 2));
    ASSIGN_OR_RETURN(std::vector<Tensor> out, SequenceInsert(seq, value, position));
    return std::vector<IValue>{TensorList(out)};
  });
  r.Add("kiln::sequence_erase", [](Args a) -> Result {
    const std::string op = "kiln::sequence_erase";
    ASSIGN_OR_RETURN(std::vector<Tensor> seq, TensorListArg(op, a, 0));
    ASSIGN_OR_RETURN(std::optional<Tensor> position, OptionalTensorArg(op, a, 1));
    ASSIGN_OR_RETURN(std::vector<Tensor> out, SequenceErase(seq, position));
    return std::vector<IValue>{TensorList(out)};
  });
  r.Add("kiln::sequence_length", [](Args a) -> Result {
    const std::string op = "kiln::sequence_length";
    ASSIGN_OR_RETURN(std::vector<Tensor> seq, TensorListArg(op, a, 0));
    return One(Tensor::ScalarInt(static_cast<int64_t>(seq.size()), DType::kInt64));
  });
  r.Add("kiln::split_to_sequence", [](Args a) -> Result {
    const std::string op = "kiln::split_to_sequence";
    ASSIGN_OR_RETURN(Tensor input, TensorArg(op, a, 0));
    ASSIGN_OR_RETURN(std::optional<Tensor> split, OptionalTensorArg(op, a, 1));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(op, a, 2));
    ASSIGN_OR_RETURN(int64_t keepdims, IntArg(op, a, 3));
    ASSIGN_OR_RETURN(std::vector<Tensor> out, SplitToSequence(input, split, axis, keepdims != 0));
    return std::vector<IValue>{TensorList(out)};
  });
  r.Add("kiln::concat_from_sequence", [](Args a) -> Result {
    const std::string op = "kiln::concat_from_sequence";
    ASSIGN_OR_RETURN(std::vector<Tensor> seq, TensorListArg(op, a, 0));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(op, a, 1));
    ASSIGN_OR_RETURN(int64_t new_axis, IntArg(op, a, 2));
    return One(ConcatFromSequence(seq, axis, new_axis != 0));
  });
  r.Add("kiln::stack_scan_outputs", [](Args a) -> Result {
    const std::string op = "kiln::stack_scan_outputs";
    ASSIGN_OR_RETURN(std::vector<Tensor> seq, TensorListArg(op, a, 0));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(op, a, 1));
    ASSIGN_OR_RETURN(int64_t code, IntArg(op, a, 2));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> shape, DimsArg(op, a, 3));
    return One(StackScanOutputs(seq, axis, code < 0 ? std::nullopt : DTypeFromCode(code), shape));
  });
  r.Add("kiln::optional_has_element", [](Args a) -> Result {
    if (a.empty()) return ArgError("kiln::optional_has_element", 0, "present");
    return One(Tensor::ScalarInt(a[0].isNone() ? 0 : 1, DType::kBool));
  });
  r.Add("kiln::optional_get_element", [](Args a) -> Result {
    if (a.empty() || a[0].isNone()) {
      return absl::InvalidArgumentError("kiln::optional_get_element: the optional is empty");
    }
    return std::vector<IValue>{a[0]};
  });
}

// One-element tensor -> bool / int, as ONNX control flow needs for its
// condition and trip-count tensors. Filled only when no other family has
// registered a kernel for these overloads.
void RegisterTensorToScalar(Registrar& r) {
  auto add_if_empty = [&r](const std::string& name, ir::KernelFn fn) {
    const ir::Operator* op = r.reg.Find(name);
    if (op != nullptr && !op->kernel) r.Add(name, std::move(fn));
  };
  add_if_empty("aten::Bool.Tensor", [](Args a) -> Result {
    const std::string op = "aten::Bool.Tensor";
    ASSIGN_OR_RETURN(Tensor t, TensorArg(op, a, 0));
    if (!t.has_data() || t.numel() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": needs a one-element tensor, got ", t.numel(), " elements"));
    }
    return std::vector<IValue>{IValue::Bool(t.GetDouble(0) != 0)};
  });
  add_if_empty("aten::Int.Tensor", [](Args a) -> Result {
    const std::string op = "aten::Int.Tensor";
    ASSIGN_OR_RETURN(Tensor t, TensorArg(op, a, 0));
    if (!t.has_data() || t.numel() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": needs a one-element tensor, got ", t.numel(), " elements"));
    }
    if (IsIntegral(t.dtype(), /*include_bool=*/true)) return std::vector<IValue>{IValue::Int(t.GetInt(0))};
    const double d = t.GetDouble(0);
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": ", d, " is not representable as an int"));
    }
    return std::vector<IValue>{IValue::Int(static_cast<int64_t>(d))};
  });
}

}  // namespace

void RegisterSequenceKernels(Registrar& r) {
  RegisterRecurrent(r);
  RegisterSequences(r);
  RegisterTensorToScalar(r);
}

}  // namespace kiln::runtime
