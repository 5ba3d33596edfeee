// DLPack tensors at the C API's boundary (kiln_model.h): dtype codes, the
// checks a caller's DLTensor must pass, inputs read in place where their
// memory allows (64-byte aligned, non-negative strides; else copied), and
// results written into the caller's (any-strided) outputs.
#ifndef KILN_DEPLOY_DLPACK_TENSORS_H_
#define KILN_DEPLOY_DLPACK_TENSORS_H_

#include <dlpack/dlpack.h>

#include <string>

#include "absl/status/statusor.h"
#include "deploy/deployed_model.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::deploy {

// bool is {kDLUInt, 8, 1} (DLPack 0.6 has no bool code).
DLDataType DLDataTypeOf(DType dtype);

// InvalidArgument naming `what` unless `t` is a CPU tensor of `info`'s dtype
// and shape with usable strides and data.
absl::Status CheckDLTensor(const DLTensor& t, const TensorInfo& info, const std::string& what);

// `t` (checked as above) as a kiln Tensor: over the caller's memory when it
// is aligned for kiln (never written), else a contiguous copy.
absl::StatusOr<Tensor> TensorFromDLTensor(const DLTensor& t, const TensorInfo& info, const std::string& what);

// Copies `value` into `out` (already checked against value's dtype and shape).
absl::Status CopyToDLTensor(const Tensor& value, const DLTensor& out);

}  // namespace kiln::deploy

#endif  // KILN_DEPLOY_DLPACK_TENSORS_H_
