#include "backends/cuda/cuda_gather.h"

#include <algorithm>

#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/runtime_kernels.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

std::string BaseName(const std::string& op) { return op.substr(0, op.find('.')); }


// Rows of `table` (dim 0) contiguous from dim 1 on.
bool RowsContiguous(const lowering::Layout& l) {
  if (l.sizes.empty()) return false;
  int64_t expect = 1;
  for (size_t d = l.sizes.size(); d-- > 1;) {
    if (l.sizes[d] != 1 && l.strides[d] != expect) return false;
    expect *= l.sizes[d];
  }
  return l.sizes[0] == 1 || l.strides[0] == expect;
}

CUdeviceptr Address(const DeviceView& v) {
  return v.base + static_cast<CUdeviceptr>(v.layout.offset) * DTypeSize(v.layout.dtype);
}

}  // namespace

bool IsGatherOp(const std::string& op) {
  const std::string base = BaseName(op);
  return base == "aten::embedding" || base == "aten::index_select" || op == "aten::index.Tensor";
}

std::optional<absl::Status> TryCudaGather(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                          const std::vector<DeviceView>& buffer_args,
                                          const std::vector<DeviceView>& outputs, int device_index, CUstream stream) {
  if (!IsGatherOp(op) || outputs.size() != 1 || buffer_args.size() != 2 || args.size() < 2) return std::nullopt;
  const std::string base = BaseName(op);
  const DeviceView* table = nullptr;
  const DeviceView* index = nullptr;
  if (base == "aten::embedding") {
    // embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): the
    // forward ignores the last three.
    if (args[0].buffer.empty() || args[1].buffer.empty()) return std::nullopt;
    table = &buffer_args[0], index = &buffer_args[1];
  } else if (base == "aten::index_select") {
    // index_select(self, dim, index) on dim 0.
    if (args.size() != 3 || args[0].buffer.empty() || args[2].buffer.empty() || !args[1].constant ||
        !args[1].constant->isInt()) {
      return std::nullopt;
    }
    const int64_t dim = args[1].constant->toInt();
    if (dim != 0 && dim != -static_cast<int64_t>(buffer_args[0].layout.sizes.size())) return std::nullopt;
    table = &buffer_args[0], index = &buffer_args[1];
  } else {
    // index.Tensor(self, Tensor?[] indices) with exactly one index tensor.
    if (args.size() != 2 || args[0].buffer.empty() || !args[1].is_buffer_list || args[1].buffer_list.size() != 1) {
      return std::nullopt;
    }
    table = &buffer_args[0], index = &buffer_args[1];
  }
  const lowering::Layout& t = table->layout;
  const lowering::Layout& ix = index->layout;
  const lowering::Layout& o = outputs[0].layout;
  if (ix.dtype != DType::kInt64 && ix.dtype != DType::kInt32) return std::nullopt;
  if (o.dtype != t.dtype || !RowsContiguous(t) || !ix.IsContiguous() || !o.IsContiguous() || t.sizes.empty()) {
    return std::nullopt;
  }
  // out = index.shape + table.shape[1:].
  std::vector<int64_t> expect = ix.sizes;
  expect.insert(expect.end(), t.sizes.begin() + 1, t.sizes.end());
  if (o.sizes != expect) return std::nullopt;
  const int64_t n = std::max<int64_t>(ix.numel(), 0);
  const int64_t rows = t.sizes[0];
  int64_t row_elems = 1;
  for (size_t d = 1; d < t.sizes.size(); ++d) row_elems *= t.sizes[d];
  if (n == 0 || row_elems == 0) return absl::OkStatus();
  const int64_t row_bytes = row_elems * static_cast<int64_t>(DTypeSize(t.dtype));
  CUdeviceptr tp = Address(*table), ip = Address(*index), op_ = Address(outputs[0]);
  const bool words = row_bytes % 4 == 0 && tp % 4 == 0 && op_ % 4 == 0;
  int64_t row_words = words ? row_bytes / 4 : row_bytes;
  absl::StatusOr<const RuntimeKernels*> kernels = GetRuntimeKernels(device_index);
  if (!kernels.ok()) return kernels.status();
  CUfunction f = (*kernels)->gather[words ? 0 : 1][ix.dtype == DType::kInt64 ? 0 : 1];
  int64_t count = n;
  int64_t table_rows = rows;
  std::vector<void*> params = {&tp, &ip, &op_, &count, &table_rows, &row_words};
  const int64_t total = n * row_words;
  const unsigned blocks = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((total + 255) / 256, 132 * 64)));
  return CuCheck(LoadCudaLibraries().driver.cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, stream, params.data(), nullptr),
                 "cuLaunchKernel (gather)");
}

}  // namespace kiln::backends::cuda
