// Fills the `kernel` slot of ir's op registry with the reference kernels
// (runtime/kernels.h), for the overloads that exist in the registry.
#ifndef KILN_RUNTIME_REGISTER_KERNELS_H_
#define KILN_RUNTIME_REGISTER_KERNELS_H_

#include "absl/status/status.h"
#include "ir/op_registry.h"

namespace kiln::runtime {

// Idempotent. Overloads the registry does not have are skipped.
absl::Status RegisterReferenceKernels(ir::OpRegistry& registry);

// RegisterReferenceKernels(ir::BuiltinOps()), done once per process; its
// status afterwards. What the interpreter, the host fallback and
// driver::Initialize call before the kernels are needed.
absl::Status RegisterBuiltinKernels();

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_REGISTER_KERNELS_H_
