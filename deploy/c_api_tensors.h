// The tensors of kiln_model.h's calls: a caller's DLTensors checked against
// the model's inputs and outputs (device, dtype, shape, strides), inputs
// read through dlpack_tensor.h (in place where the memory allows, else
// copied), results written into the caller's (any-strided) outputs.
#ifndef KILN_DEPLOY_C_API_TENSORS_H_
#define KILN_DEPLOY_C_API_TENSORS_H_

#include <dlpack/dlpack.h>

#include <string>

#include "absl/status/statusor.h"
#include "deploy/deployed_model.h"
#include "support/tensor.h"

namespace kiln::deploy {

// InvalidArgument naming `what` unless `t` is a CPU tensor of `info`'s dtype
// and shape with non-negative strides and data.
absl::Status CheckDLTensor(const DLTensor& t, const TensorInfo& info, const std::string& what);

// `t` (checked as above) as a kiln Tensor; kiln never writes it.
absl::StatusOr<Tensor> InputFromDLTensor(const DLTensor& t, const TensorInfo& info, const std::string& what);

// Copies `value` into `out` (already checked against value's dtype and shape).
absl::Status CopyToDLTensor(const Tensor& value, const DLTensor& out);

}  // namespace kiln::deploy

#endif  // KILN_DEPLOY_C_API_TENSORS_H_
