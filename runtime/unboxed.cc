#include "runtime/unboxed.h"

#include "absl/strings/str_cat.h"

namespace kiln::runtime::unboxing {
namespace {

using ir::IValue;
using ir::Type;
using ir::TypeKind;

bool IsListOf(const Type& t, TypeKind elem) {
  return t.kind() == TypeKind::kList && t.contained()[0]->kind() == elem;
}

// Argument kinds a reference kernel may leave out: they say where or how a
// result is stored, never what it is.
bool IsPlacementKind(TypeKind k) {
  return k == TypeKind::kLayout || k == TypeKind::kDevice || k == TypeKind::kMemoryFormat ||
         k == TypeKind::kGenerator;
}

}  // namespace

absl::Status ArgumentError(const std::string& op, size_t index, const ir::Argument* arg,
                           absl::string_view want) {
  std::string name = arg != nullptr && !arg->name.empty() ? absl::StrCat(" (", arg->name, ")") : "";
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": argument ", index, name, " must be ", want));
}

bool IsIgnorable(const ir::Argument& arg) {
  const Type* t = arg.type.get();
  if (t->kind() == TypeKind::kOptional) t = t->contained()[0].get();
  if (IsPlacementKind(t->kind())) return true;
  // Flags that choose an implementation, never the result.
  return t->kind() == TypeKind::kBool &&
         (arg.name == "pin_memory" || arg.name == "non_blocking" ||
          arg.name == "cudnn_enabled" || arg.name == "cudnn_enable" ||
          arg.name == "benchmark" || arg.name == "deterministic" || arg.name == "allow_tf32");
}

absl::Status ResultCountError(const ir::FunctionSchema& schema, size_t got) {
  return absl::InvalidArgumentError(absl::StrCat(schema.QualifiedName(), ": the kernel returns ",
                                                 got, " results, the schema ",
                                                 schema.returns.size()));
}

// ------------------------------------------------------------------ arguments

bool Arg<Tensor>::Fits(const Type& t) { return t.kind() == TypeKind::kTensor; }
absl::StatusOr<Tensor> Arg<Tensor>::Decode(const IValue& v, const ir::Argument* arg,
                                           const std::string& op, size_t i) {
  if (!v.isTensor()) return ArgumentError(op, i, arg, "a tensor");
  return v.toTensor();
}

bool Arg<int64_t>::Fits(const Type& t) { return t.kind() == TypeKind::kInt; }
absl::StatusOr<int64_t> Arg<int64_t>::Decode(const IValue& v, const ir::Argument* arg,
                                             const std::string& op, size_t i) {
  if (!v.isInt()) return ArgumentError(op, i, arg, "an int");
  return v.toInt();
}

bool Arg<double>::Fits(const Type& t) {
  return t.kind() == TypeKind::kFloat || t.kind() == TypeKind::kNumber;
}
absl::StatusOr<double> Arg<double>::Decode(const IValue& v, const ir::Argument* arg,
                                           const std::string& op, size_t i) {
  if (!v.isNumber()) return ArgumentError(op, i, arg, "a number");
  return v.toNumberAsDouble();
}

bool Arg<bool>::Fits(const Type& t) { return t.kind() == TypeKind::kBool; }
absl::StatusOr<bool> Arg<bool>::Decode(const IValue& v, const ir::Argument* arg,
                                       const std::string& op, size_t i) {
  if (!v.isBool()) return ArgumentError(op, i, arg, "a bool");
  return v.toBool();
}

bool Arg<std::string>::Fits(const Type& t) { return t.kind() == TypeKind::kStr; }
absl::StatusOr<std::string> Arg<std::string>::Decode(const IValue& v, const ir::Argument* arg,
                                                     const std::string& op, size_t i) {
  if (!v.isString()) return ArgumentError(op, i, arg, "a string");
  return v.toString();
}

bool Arg<DType>::Fits(const Type& t) {
  return t.kind() == TypeKind::kScalarType || t.kind() == TypeKind::kInt;
}
absl::StatusOr<DType> Arg<DType>::Decode(const IValue& v, const ir::Argument* arg,
                                         const std::string& op, size_t i) {
  if (!v.isInt()) return ArgumentError(op, i, arg, "a ScalarType");
  std::optional<DType> t = DTypeFromCode(v.toInt());
  if (!t) return absl::UnimplementedError(absl::StrCat(op, ": unsupported dtype code ", v.toInt()));
  return *t;
}

bool Arg<Operand>::Fits(const Type& t) {
  switch (t.kind()) {
    case TypeKind::kTensor:
    case TypeKind::kNumber:
    case TypeKind::kInt:
    case TypeKind::kFloat:
    case TypeKind::kBool:
      return true;
    default:
      return false;
  }
}
absl::StatusOr<Operand> Arg<Operand>::Decode(const IValue& v, const ir::Argument* arg,
                                             const std::string& op, size_t i) {
  if (v.isTensor()) return Operand::FromTensor(v.toTensor());
  if (v.isBool()) return Operand::Bool(v.toBool());
  if (v.isInt()) return Operand::Int(v.toInt());
  if (v.isDouble()) return Operand::Double(v.toDouble());
  return ArgumentError(op, i, arg, "a tensor or a number");
}

bool Arg<std::vector<int64_t>>::Fits(const Type& t) { return IsListOf(t, TypeKind::kInt); }
absl::StatusOr<std::vector<int64_t>> Arg<std::vector<int64_t>>::Decode(
    const IValue& v, const ir::Argument* arg, const std::string& op, size_t i) {
  if (v.isInt()) {
    // `int[N] stride=1`: a single int stands for N copies of itself.
    const int64_t n = arg != nullptr && arg->fixed_list_size ? *arg->fixed_list_size : 1;
    return std::vector<int64_t>(static_cast<size_t>(n > 0 ? n : 1), v.toInt());
  }
  if (!v.isList()) return ArgumentError(op, i, arg, "a list of ints");
  std::vector<int64_t> out;
  out.reserve(v.elements().size());
  for (const IValue& e : v.elements()) {
    if (!e.isInt()) return ArgumentError(op, i, arg, "a list of ints");
    out.push_back(e.toInt());
  }
  return out;
}

bool Arg<std::vector<double>>::Fits(const Type& t) { return IsListOf(t, TypeKind::kFloat); }
absl::StatusOr<std::vector<double>> Arg<std::vector<double>>::Decode(
    const IValue& v, const ir::Argument* arg, const std::string& op, size_t i) {
  if (!v.isList()) return ArgumentError(op, i, arg, "a list of floats");
  std::vector<double> out;
  for (const IValue& e : v.elements()) {
    if (!e.isNumber()) return ArgumentError(op, i, arg, "a list of floats");
    out.push_back(e.toNumberAsDouble());
  }
  return out;
}

bool Arg<std::vector<std::string>>::Fits(const Type& t) { return IsListOf(t, TypeKind::kStr); }
absl::StatusOr<std::vector<std::string>> Arg<std::vector<std::string>>::Decode(
    const IValue& v, const ir::Argument* arg, const std::string& op, size_t i) {
  if (!v.isList()) return ArgumentError(op, i, arg, "a list of strings");
  std::vector<std::string> out;
  for (const IValue& e : v.elements()) {
    if (!e.isString()) return ArgumentError(op, i, arg, "a list of strings");
    out.push_back(e.toString());
  }
  return out;
}

bool Arg<std::vector<Tensor>>::Fits(const Type& t) { return IsListOf(t, TypeKind::kTensor); }
absl::StatusOr<std::vector<Tensor>> Arg<std::vector<Tensor>>::Decode(
    const IValue& v, const ir::Argument* arg, const std::string& op, size_t i) {
  if (!v.isList()) return ArgumentError(op, i, arg, "a list of tensors");
  std::vector<Tensor> out;
  for (const IValue& e : v.elements()) {
    if (!e.isTensor()) return ArgumentError(op, i, arg, "a list of tensors");
    out.push_back(e.toTensor());
  }
  return out;
}

bool Arg<std::vector<std::optional<Tensor>>>::Fits(const Type& t) {
  return t.kind() == TypeKind::kList && t.contained()[0]->kind() == TypeKind::kOptional &&
         t.contained()[0]->contained()[0]->kind() == TypeKind::kTensor;
}
absl::StatusOr<std::vector<std::optional<Tensor>>> Arg<std::vector<std::optional<Tensor>>>::Decode(
    const IValue& v, const ir::Argument* arg, const std::string& op, size_t i) {
  if (!v.isList()) return ArgumentError(op, i, arg, "a list of optional tensors");
  std::vector<std::optional<Tensor>> out;
  for (const IValue& e : v.elements()) {
    if (e.isNone()) {
      out.emplace_back();
    } else if (e.isTensor()) {
      out.emplace_back(e.toTensor());
    } else {
      return ArgumentError(op, i, arg, "a list of optional tensors");
    }
  }
  return out;
}

bool Arg<IValue>::Fits(const Type&) { return true; }
absl::StatusOr<IValue> Arg<IValue>::Decode(const IValue& v, const ir::Argument*,
                                           const std::string&, size_t) {
  return v;
}

// ------------------------------------------------------------------ results

namespace {
size_t One(const ir::FunctionSchema&) { return 1; }
}  // namespace

size_t Result<Tensor>::Count(const ir::FunctionSchema& s) { return One(s); }
absl::StatusOr<std::vector<IValue>> Result<Tensor>::Box(Tensor r, const ir::FunctionSchema&) {
  return std::vector<IValue>{IValue::FromTensor(std::move(r))};
}

size_t Result<bool>::Count(const ir::FunctionSchema& s) { return One(s); }
absl::StatusOr<std::vector<IValue>> Result<bool>::Box(bool r, const ir::FunctionSchema&) {
  return std::vector<IValue>{IValue::Bool(r)};
}

size_t Result<int64_t>::Count(const ir::FunctionSchema& s) { return One(s); }
absl::StatusOr<std::vector<IValue>> Result<int64_t>::Box(int64_t r, const ir::FunctionSchema&) {
  return std::vector<IValue>{IValue::Int(r)};
}

size_t Result<double>::Count(const ir::FunctionSchema& s) { return One(s); }
absl::StatusOr<std::vector<IValue>> Result<double>::Box(double r, const ir::FunctionSchema&) {
  return std::vector<IValue>{IValue::Double(r)};
}

size_t Result<std::vector<int64_t>>::Count(const ir::FunctionSchema& s) { return One(s); }
absl::StatusOr<std::vector<IValue>> Result<std::vector<int64_t>>::Box(std::vector<int64_t> r,
                                                                      const ir::FunctionSchema&) {
  return std::vector<IValue>{IValue::IntList(r)};
}

size_t Result<IValue>::Count(const ir::FunctionSchema& s) { return One(s); }
absl::StatusOr<std::vector<IValue>> Result<IValue>::Box(IValue r, const ir::FunctionSchema&) {
  return std::vector<IValue>{std::move(r)};
}

// A Tensor[] result, or (several Tensor returns) one output per tensor.
size_t Result<std::vector<Tensor>>::Count(const ir::FunctionSchema& s) {
  return s.returns.empty() ? 1 : s.returns.size();
}
absl::StatusOr<std::vector<IValue>> Result<std::vector<Tensor>>::Box(std::vector<Tensor> r,
                                                                     const ir::FunctionSchema& s) {
  std::vector<IValue> elems;
  elems.reserve(r.size());
  for (Tensor& t : r) elems.push_back(IValue::FromTensor(std::move(t)));
  if (s.returns.size() == 1 && s.returns[0].type->kind() == TypeKind::kList) {
    return std::vector<IValue>{IValue::List(std::move(elems))};
  }
  if (elems.size() != s.returns.size()) return ResultCountError(s, elems.size());
  return elems;
}

// The outputs as the kernel built them (varret schemas, Any results).
size_t Result<std::vector<IValue>>::Count(const ir::FunctionSchema& s) { return s.returns.size(); }
absl::StatusOr<std::vector<IValue>> Result<std::vector<IValue>>::Box(std::vector<IValue> r,
                                                                     const ir::FunctionSchema&) {
  return r;
}

}  // namespace kiln::runtime::unboxing
