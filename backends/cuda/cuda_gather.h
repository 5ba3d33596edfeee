// Row gathers on the GPU (embedding lookups): aten::embedding(weight,
// indices, ...), aten::index_select(self, 0, index) and aten::index.Tensor
// with one index tensor (ONNX Gather on axis 0). The table's rows must be
// contiguous, the index and the output contiguous; any element type (rows
// are copied as words). A negative index counts from the end; one out of
// range gives a row of zeros, where the host reference raises (kernels
// cannot report it). Anything else returns nullopt and runs on the host.
#ifndef KILN_BACKENDS_CUDA_CUDA_GATHER_H_
#define KILN_BACKENDS_CUDA_CUDA_GATHER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/cuda/cublas_matmul.h"

namespace kiln::backends::cuda {

bool IsGatherOp(const std::string& op);

std::optional<absl::Status> TryCudaGather(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                          const std::vector<DeviceView>& buffer_args,
                                          const std::vector<DeviceView>& outputs, int device_index, CUstream stream);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_GATHER_H_
