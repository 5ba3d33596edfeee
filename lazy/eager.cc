#include "driver/initialize.h"
#include "lazy/eager.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "support/status.h"

namespace kiln::lazy {
namespace {

absl::StatusOr<const ir::KernelFn*> FindKernel(const OpKind& op) {
  static absl::Mutex mu;
  static auto* kernels = new absl::flat_hash_map<const OpKind*, const ir::KernelFn*>();
  absl::MutexLock lock(&mu);
  auto it = kernels->find(&op);
  if (it != kernels->end()) return it->second;
  RETURN_IF_ERROR(driver::Initialize());
  const ir::Operator* found = ir::BuiltinOps().Find(op.overload);
  if (found == nullptr || !found->kernel) {
    return absl::UnimplementedError(
        absl::StrCat("lazy op ", op.name, ": no reference kernel for ", op.overload));
  }
  (*kernels)[&op] = &found->kernel;
  return &found->kernel;
}

ir::IValue ToIValue(const Attr& a) {
  switch (a.kind) {
    case Attr::Kind::kNone:
      return ir::IValue::None();
    case Attr::Kind::kBool:
      return ir::IValue::Bool(a.i != 0);
    case Attr::Kind::kInt:
      return ir::IValue::Int(a.i);
    case Attr::Kind::kDouble:
      return ir::IValue::Double(a.d);
    case Attr::Kind::kIntList:
      return ir::IValue::IntList(a.ints);
  }
  return ir::IValue::None();
}

}  // namespace

absl::StatusOr<Tensor> RunReferenceKernel(const OpKind& op, absl::Span<const Tensor> operands,
                                          absl::Span<const Arg> args, const Shape& expected) {
  ASSIGN_OR_RETURN(const ir::KernelFn* kernel, FindKernel(op));
  std::vector<ir::IValue> inputs;
  inputs.reserve(args.size());
  for (const Arg& a : args) {
    if (a.operand >= 0) {
      if (static_cast<size_t>(a.operand) >= operands.size()) {
        return absl::InternalError(absl::StrCat("lazy op ", op.name, ": operand ", a.operand,
                                                " of ", operands.size()));
      }
      inputs.push_back(ir::IValue::FromTensor(operands[a.operand]));
    } else {
      inputs.push_back(ToIValue(a.attr));
    }
  }
  ASSIGN_OR_RETURN(std::vector<ir::IValue> outputs, (*kernel)(inputs));
  if (outputs.empty() || !outputs[0].isTensor()) {
    return absl::InternalError(absl::StrCat("lazy op ", op.name, ": kernel ", op.overload,
                                            " returned no tensor"));
  }
  Tensor out = outputs[0].toTensor();
  if (out.dtype() != expected.dtype || out.sizes() != expected.sizes) {
    return absl::InternalError(absl::StrCat("lazy op ", op.name, ": shape inference said ",
                                            expected.ToString(), " but ", op.overload,
                                            " returned ", Shape(out.dtype(), out.sizes()).ToString()));
  }
  return out;
}

}  // namespace kiln::lazy
