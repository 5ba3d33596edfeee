#include "devices/cpu/island_kernels.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/cpu/extern_kernels.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "runtime/interpreter.h"
#include "runtime/register_kernels.h"
#include "support/status.h"

namespace kiln::devices::cpu {
namespace {

absl::Status EnsureKernels() {
  static const absl::Status* status =
      new absl::Status(runtime::RegisterReferenceKernels(ir::BuiltinOps()));
  return *status;
}

}  // namespace

absl::Status RunIslandKernel(const ir::Graph& island, const std::vector<Tensor>& inputs,
                             std::vector<Tensor>& outputs) {
  RETURN_IF_ERROR(EnsureKernels());
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
  if (results->size() != outputs.size()) {
    return absl::InternalError(absl::StrCat("interpreter island returned ", results->size(),
                                            " values for ", outputs.size(), " outputs"));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!(*results)[i].isTensor()) {
      return absl::InternalError(absl::StrCat("interpreter island output ", i, " is not a tensor"));
    }
    absl::Status s = CopyInto((*results)[i].toTensor(), outputs[i]);
    if (!s.ok()) {
      return absl::InternalError(
          absl::StrCat("interpreter island output ", i, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::devices::cpu
