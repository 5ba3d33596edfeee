// Host fallback of the CUDA backend: extern calls without a GPU kernel and
// interpreter islands run on the CPU over host copies of their arguments
// (the reference kernel of the op's registry overload, or
// runtime::Interpreter over the island), like the CPU backend's externs.
// The caller copies the device buffers to host tensors and back.
#ifndef KILN_DEVICES_CUDA_HOST_FALLBACK_H_
#define KILN_DEVICES_CUDA_HOST_FALLBACK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/ir.h"
#include "lowering/loop_ir.h"
#include "support/tensor.h"

namespace kiln::devices::cuda {

// `buffer_args`: host views of the buffer arguments in argument order
// (Tensor[] arguments' buffers in order); `outputs`: host views written in
// place.
absl::Status RunHostExtern(const std::string& op, const std::vector<lowering::ExternArg>& args,
                           const std::vector<Tensor>& buffer_args, std::vector<Tensor>& outputs);
absl::Status RunHostIsland(const ir::Graph& island, const std::vector<Tensor>& inputs,
                           std::vector<Tensor>& outputs);

// Element-wise copy (same dtype and sizes, any strides).
absl::Status CopyStrided(const Tensor& src, Tensor& dst);

}  // namespace kiln::devices::cuda

#endif  // KILN_DEVICES_CUDA_HOST_FALLBACK_H_
