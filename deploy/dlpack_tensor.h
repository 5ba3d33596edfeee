// DLPack tensors <-> kiln Tensors, for kiln's C APIs (python/kiln_c.h, the
// compiler; deploy/kiln_model.h, a compiled model).
//
// In: a CPU DLTensor becomes a Tensor over the same memory (no copy) when
// it can: the data must be aligned to its element size and every element
// reachable with non-negative strides; Storage wants a 64-byte aligned base,
// so the view starts at the aligned address at or below element 0 with a
// storage offset (memory before element 0 is never read). Otherwise the
// elements are copied into a new contiguous tensor.
// Out: a Tensor becomes a DLManagedTensor that owns a reference to its
// storage (released by the deleter): no copy.
#ifndef KILN_DEPLOY_DLPACK_TENSOR_H_
#define KILN_DEPLOY_DLPACK_TENSOR_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::capi {

// DLPack 0.8's boolean type code (Debian's 0.6 header lacks it): kiln_c.h's
// KILNC_DL_BOOL and kiln_model.h's KILN_DL_BOOL.
inline constexpr uint8_t kDLPackBool = 6;

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

// A new DLManagedTensor over element 0 at `data` in `device`'s memory that
// keeps `owner` alive until its deleter runs (any memory: the CPU's, or a
// device's that the host never reads).
absl::StatusOr<DLManagedTensor*> NewManagedTensor(void* data, DLDevice device, DType dtype,
                                                  std::vector<int64_t> sizes, std::vector<int64_t> strides,
                                                  std::shared_ptr<const void> owner);

}  // namespace kiln::capi

#endif  // KILN_DEPLOY_DLPACK_TENSOR_H_
