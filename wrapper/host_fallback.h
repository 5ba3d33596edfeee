// What every device falls back to on the host: an extern call through the
// reference kernel of its registry overload, and an interpreter island
// through runtime::Interpreter. Inputs are host views of the call's
// buffers; results are copied into the planned output views (any strides).
// A device with device memory copies its buffers to host tensors and back.
#ifndef KILN_WRAPPER_HOST_FALLBACK_H_
#define KILN_WRAPPER_HOST_FALLBACK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "lowering/loop_ir.h"
#include "support/tensor.h"

namespace kiln::wrapper {

// The extern call's arguments as interpreter values: buffer arguments (and
// each Tensor[] argument's buffers) taken from `buffer_args` in order,
// constants as given, absent arguments as None.
absl::StatusOr<std::vector<ir::IValue>> ExternArgumentValues(
    const std::vector<lowering::ExternArg>& args, const std::vector<Tensor>& buffer_args);

// Runs `op`'s reference kernel on `values` and copies its tensor results
// (lists and tuples flattened) into `outputs`.
absl::Status RunReferenceKernel(const std::string& op, const std::vector<ir::IValue>& values,
                                std::vector<Tensor>& outputs);

// ExternArgumentValues, then RunReferenceKernel.
absl::Status RunHostExtern(const std::string& op, const std::vector<lowering::ExternArg>& args,
                           const std::vector<Tensor>& buffer_args, std::vector<Tensor>& outputs);

// Runs `island` over `inputs` (its graph inputs, in order) and copies its
// outputs, which must be tensors, into `outputs`.
absl::Status RunHostIsland(const ir::Graph& island, const std::vector<Tensor>& inputs,
                           std::vector<Tensor>& outputs);

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_HOST_FALLBACK_H_
