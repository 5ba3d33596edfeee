#include "wrapper/host_fallback.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "runtime/interpreter.h"
#include "runtime/register_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::wrapper {
namespace {

absl::Status CopyResults(const std::string& what, const std::vector<Tensor>& results,
                         std::vector<Tensor>& outputs) {
  if (results.size() != outputs.size()) {
    return absl::InternalError(absl::StrCat(what, " returned ", results.size(), " tensors for ",
                                            outputs.size(), " outputs"));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    absl::Status s = runtime::CopyInto(results[i], outputs[i]);
    if (!s.ok()) return absl::InternalError(absl::StrCat(what, " output ", i, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<ir::IValue>> ExternArgumentValues(
    const std::vector<lowering::ExternArg>& args, const std::vector<Tensor>& buffer_args) {
  const absl::Status too_few = absl::InternalError("extern: too few buffer arguments");
  std::vector<ir::IValue> values;
  size_t next = 0;
  for (const lowering::ExternArg& a : args) {
    if (!a.buffer.empty()) {
      if (next >= buffer_args.size()) return too_few;
      values.push_back(ir::IValue::FromTensor(buffer_args[next++]));
    } else if (a.is_buffer_list) {
      if (buffer_args.size() - next < a.buffer_list.size()) return too_few;
      std::vector<ir::IValue> list;
      for (size_t i = 0; i < a.buffer_list.size(); ++i) {
        list.push_back(ir::IValue::FromTensor(buffer_args[next++]));
      }
      values.push_back(ir::IValue::List(std::move(list)));
    } else {
      values.push_back(a.constant.has_value() ? *a.constant : ir::IValue::None());
    }
  }
  return values;
}

absl::Status RunReferenceKernel(const std::string& op, const std::vector<ir::IValue>& values,
                                std::vector<Tensor>& outputs) {
  RETURN_IF_ERROR(runtime::RegisterBuiltinKernels());
  const std::string name = absl::CHexEscape(op);
  const ir::Operator* overload = ir::BuiltinOps().Find(op);
  if (overload == nullptr || !overload->kernel) {
    return absl::UnimplementedError(absl::StrCat("extern kernel '", name, "' has no reference kernel"));
  }
  absl::StatusOr<std::vector<ir::IValue>> results = overload->kernel(values);
  if (!results.ok()) {
    return absl::Status(results.status().code(),
                        absl::StrCat("extern ", name, ": ", results.status().message()));
  }
  std::vector<Tensor> tensors;
  for (const ir::IValue& r : *results) {
    if (r.isTensor()) {
      tensors.push_back(r.toTensor());
    } else if (r.isList() || r.isTuple()) {
      for (const ir::IValue& e : r.elements()) {
        if (e.isTensor()) tensors.push_back(e.toTensor());
      }
    }
  }
  return CopyResults(absl::StrCat("extern ", name), tensors, outputs);
}

absl::Status RunHostExtern(const std::string& op, const std::vector<lowering::ExternArg>& args,
                           const std::vector<Tensor>& buffer_args, std::vector<Tensor>& outputs) {
  ASSIGN_OR_RETURN(std::vector<ir::IValue> values, ExternArgumentValues(args, buffer_args));
  return RunReferenceKernel(op, values, outputs);
}

absl::Status RunHostIsland(const ir::Graph& island, const std::vector<Tensor>& inputs,
                           std::vector<Tensor>& outputs) {
  RETURN_IF_ERROR(runtime::RegisterBuiltinKernels());
  if (inputs.size() != island.inputs().size() || outputs.size() != island.outputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "interpreter island: ", inputs.size(), " inputs and ", outputs.size(), " outputs given, ",
        island.inputs().size(), " and ", island.outputs().size(), " expected"));
  }
  // An interpreter per call: Prepare is linear in the island's size, and a
  // program may run on several threads at once.
  runtime::Interpreter interpreter(island);
  std::vector<ir::IValue> args;
  args.reserve(inputs.size());
  for (const Tensor& t : inputs) args.push_back(ir::IValue::FromTensor(t));
  absl::StatusOr<std::vector<ir::IValue>> results = interpreter.Run(args);
  if (!results.ok()) {
    return absl::Status(results.status().code(),
                        absl::StrCat("interpreter island: ", results.status().message()));
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < results->size(); ++i) {
    if (!(*results)[i].isTensor()) {
      return absl::InternalError(absl::StrCat("interpreter island output ", i, " is not a tensor"));
    }
    tensors.push_back((*results)[i].toTensor());
  }
  return CopyResults("interpreter island", tensors, outputs);
}

}  // namespace kiln::wrapper
