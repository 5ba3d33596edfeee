// DLPack tensors <-> kiln Tensors, for the C API (kiln_c.h).
//
// In: a CPU DLTensor becomes a Tensor over the same memory (no copy) when
// it can: the data must be aligned to its element size and every element
// reachable with non-negative strides; Storage wants a 64-byte aligned base,
// so the view starts at the aligned address at or below element 0 with a
// storage offset (memory before element 0 is never read). Otherwise the
// elements are copied into a new contiguous tensor.
// Out: a Tensor becomes a DLManagedTensor that owns a reference to its
// storage (released by the deleter): no copy.
#ifndef KILN_PYTHON_DLPACK_TENSOR_H_
#define KILN_PYTHON_DLPACK_TENSOR_H_

#include <dlpack/dlpack.h>

#include <string>

#include "absl/status/statusor.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::capi {

absl::StatusOr<DType> DTypeFromDLPack(DLDataType t);
absl::StatusOr<DLDataType> DTypeToDLPack(DType t);

// `what` names the tensor in errors ("input 2"). The Tensor does not own the
// memory: the caller keeps it alive while the Tensor (or anything made from
// it without copying) is in use. `copied`, when given, says whether the
// elements had to be copied.
absl::StatusOr<Tensor> TensorFromDLPack(const DLTensor& t, const std::string& what,
                                        bool* copied = nullptr);

// A shape-only tensor (Tensor::Placeholder) with `t`'s dtype and sizes; the
// data pointer is not read (it may be null: fake tensors).
absl::StatusOr<Tensor> PlaceholderFromDLPack(const DLTensor& t, const std::string& what);

// A new DLManagedTensor over `t`'s storage (kDLCPU); delete it through its
// deleter. `t` must have data.
absl::StatusOr<DLManagedTensor*> TensorToDLPack(const Tensor& t);

}  // namespace kiln::capi

#endif  // KILN_PYTHON_DLPACK_TENSOR_H_
