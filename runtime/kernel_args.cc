// Argument decoding for kernels registered in ir's op registry.
#include "runtime/kernel_args.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace kiln::runtime {

using ir::IValue;

absl::Status ArgError(const std::string& op, size_t i, const char* want) {
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": argument ", i, " must be ", want));
}

absl::StatusOr<Tensor> TensorArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || !a[i].isTensor()) return ArgError(op, i, "a tensor");
  return a[i].toTensor();
}

absl::StatusOr<Operand> OperandArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size()) return ArgError(op, i, "present");
  const IValue& v = a[i];
  if (v.isTensor()) return Operand::FromTensor(v.toTensor());
  if (v.isBool()) return Operand::Bool(v.toBool());
  if (v.isInt()) return Operand::Int(v.toInt());
  if (v.isDouble()) return Operand::Double(v.toDouble());
  return ArgError(op, i, "a tensor or a number");
}

absl::StatusOr<std::optional<Operand>> OptionalOperandArg(const std::string& op, Args a,
                                                          size_t i) {
  if (i >= a.size() || a[i].isNone()) return std::optional<Operand>();
  ASSIGN_OR_RETURN(Operand o, OperandArg(op, a, i));
  return std::optional<Operand>(std::move(o));
}

absl::StatusOr<double> NumberArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || !a[i].isNumber()) return ArgError(op, i, "a number");
  return a[i].toNumberAsDouble();
}

absl::StatusOr<int64_t> IntArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || !a[i].isInt()) return ArgError(op, i, "an int");
  return a[i].toInt();
}

absl::StatusOr<bool> BoolArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || !a[i].isBool()) return ArgError(op, i, "a bool");
  return a[i].toBool();
}

absl::StatusOr<std::optional<DType>> DTypeArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || a[i].isNone()) return std::optional<DType>();
  if (!a[i].isInt()) return ArgError(op, i, "a ScalarType");
  std::optional<DType> t = DTypeFromCode(a[i].toInt());
  if (!t) return absl::UnimplementedError(absl::StrCat(op, ": unsupported dtype code ", a[i].toInt()));
  return t;
}

// int[]? / int? / int: nullopt for None.
absl::StatusOr<std::optional<std::vector<int64_t>>> DimsArg(const std::string& op, Args a,
                                                            size_t i) {
  if (i >= a.size() || a[i].isNone()) return std::optional<std::vector<int64_t>>();
  if (a[i].isInt()) return std::optional<std::vector<int64_t>>(std::vector<int64_t>{a[i].toInt()});
  if (!a[i].isList()) return ArgError(op, i, "a list of ints");
  std::vector<int64_t> dims;
  for (const IValue& e : a[i].elements()) {
    if (!e.isInt()) return ArgError(op, i, "a list of ints");
    dims.push_back(e.toInt());
  }
  return std::optional<std::vector<int64_t>>(std::move(dims));
}

Result One(absl::StatusOr<Tensor> t) {
  if (!t.ok()) return t.status();
  return std::vector<IValue>{IValue::FromTensor(*std::move(t))};
}


absl::StatusOr<std::vector<int64_t>> IntListArg(const std::string& op, Args a, size_t i) {
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, DimsArg(op, a, i));
  if (!dims) return ArgError(op, i, "a list of ints");
  return *std::move(dims);
}

absl::StatusOr<std::vector<Tensor>> TensorListArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || !a[i].isList()) return ArgError(op, i, "a list of tensors");
  std::vector<Tensor> out;
  for (const IValue& e : a[i].elements()) {
    if (!e.isTensor()) return ArgError(op, i, "a list of tensors");
    out.push_back(e.toTensor());
  }
  return out;
}

absl::StatusOr<std::optional<Tensor>> OptionalTensorArg(const std::string& op, Args a,
                                                        size_t i) {
  if (i >= a.size() || a[i].isNone()) return std::optional<Tensor>();
  ASSIGN_OR_RETURN(Tensor t, TensorArg(op, a, i));
  return std::optional<Tensor>(std::move(t));
}

absl::StatusOr<std::string> StringArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || !a[i].isString()) return ArgError(op, i, "a string");
  return a[i].toString();
}

absl::StatusOr<std::optional<double>> OptionalNumberArg(const std::string& op, Args a,
                                                        size_t i) {
  if (i >= a.size() || a[i].isNone()) return std::optional<double>();
  ASSIGN_OR_RETURN(double v, NumberArg(op, a, i));
  return std::optional<double>(v);
}

absl::StatusOr<std::vector<double>> DoubleListArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || !a[i].isList()) return ArgError(op, i, "a list of floats");
  std::vector<double> out;
  for (const IValue& e : a[i].elements()) {
    if (!e.isNumber()) return ArgError(op, i, "a list of floats");
    out.push_back(e.toNumberAsDouble());
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> StringListArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || !a[i].isList()) return ArgError(op, i, "a list of strings");
  std::vector<std::string> out;
  for (const IValue& e : a[i].elements()) {
    if (!e.isString()) return ArgError(op, i, "a list of strings");
    out.push_back(e.toString());
  }
  return out;
}

void Registrar::Add(const std::string& name, ir::KernelFn fn) {
  if (reg.Find(name) == nullptr) {
    if (status.ok()) {
      status = absl::NotFoundError(absl::StrCat("no schema registered for kernel ", name));
    }
    return;
  }
  absl::Status s = reg.SetKernel(name, std::move(fn));
  if (!s.ok() && status.ok()) status = s;
}

void Registrar::AddIfPresent(const std::string& name, ir::KernelFn fn) {
  if (reg.Find(name) == nullptr) return;
  Add(name, std::move(fn));
}

}  // namespace kiln::runtime
