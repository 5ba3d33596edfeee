// Interpreter islands on the CPU: an extern call whose ExternCall::island is
// set (lowering/islands.h) runs that graph with runtime::Interpreter over
// the call's buffer arguments, and its tensor results are copied into the
// output buffers the wrapper planned.
#ifndef KILN_DEVICES_CPU_ISLAND_KERNELS_H_
#define KILN_DEVICES_CPU_ISLAND_KERNELS_H_

#include <vector>

#include "absl/status/status.h"
#include "ir/ir.h"
#include "support/tensor.h"

namespace kiln::devices::cpu {

// `inputs`: views of the island graph's inputs, in order; `outputs`: views
// of its outputs (written in place; dtype and sizes must match the results).
absl::Status RunIslandKernel(const ir::Graph& island, const std::vector<Tensor>& inputs,
                             std::vector<Tensor>& outputs);

}  // namespace kiln::devices::cpu

#endif  // KILN_DEVICES_CPU_ISLAND_KERNELS_H_
