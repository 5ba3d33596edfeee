// The CUDA runtime's own small kernels (not generated from the loop IR):
// im2col, direct depthwise convolution and a per-channel bias fill, which
// the convolution extern (cuda_conv.h) combines with cuBLAS sgemm when
// cuDNN is absent, and the row gather of embedding lookups (cuda_gather.h). Compiled
// once per process with NVRTC through the cubin cache, loaded per device.
#ifndef KILN_BACKENDS_CUDA_RUNTIME_KERNELS_H_
#define KILN_BACKENDS_CUDA_RUNTIME_KERNELS_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "backends/cuda/cuda_api.h"
#include "backends/cuda/cublas_matmul.h"

namespace kiln::backends::cuda {

struct RuntimeKernels {
  // cols[n][(c*KH + ky)*KW + kx][oy*OW + ox] = x[n][c][oy*sh - ph + ky*dh][ox*sw - pw + kx*dw] (0 outside),
  // images `image_stride` elements apart (a group's channels of a wider input).
  CUfunction im2col = nullptr;
  // y[n][oc][oy][ox] = bias[oc] + sum_{ky,kx} w[oc][ky][kx] * x[n][oc / mult][...].
  CUfunction depthwise = nullptr;
  // y[i] = bias[(i / hw) % channels].
  CUfunction fill_bias = nullptr;
  // out[r][:] = table[index[r]][:]: gather[word][index] with words of 4
  // bytes (0) or 1 byte (1) and int64 (0) or int32 (1) indices; arguments
  // (table, index, out, n, rows, row_words).
  CUfunction gather[2][2] = {};
  // dst[i] = the i-th unit (row-major) of a strided view: copy[k] for
  // units of 2, 4, 8 and 16 bytes; arguments (src, dst, StridedView, n).
  CUfunction copy[4] = {};
  // 2-D pooling per storage type (float32, float16, bfloat16); arguments
  // (x, y, PoolArgs).
  CUfunction max_pool2d[3] = {};
  CUfunction avg_pool2d[3] = {};
};

// The pooling kernels' parameters (passed by value; the kernel's own
// struct lays them out the same). x is read at the strides given; y is
// contiguous [n, c, oh, ow] or, with y_channels_last, packed NHWC.
struct PoolArgs {
  long long n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;  // NOLINT(runtime/int)
  long long x_strides[4];                                          // NOLINT(runtime/int)
  int count_include_pad = 1;
  long long divisor = 0;  // NOLINT(runtime/int): divisor_override, 0 for none
  int y_channels_last = 0;  // y packed NHWC instead of NCHW
};

// A view's shape for the copy kernels (passed by value; at most rank 8).
struct StridedView {
  long long sizes[8];    // NOLINT(runtime/int): the kernel's type
  long long strides[8];  // NOLINT(runtime/int)
  int rank;
};

// How CopyToContiguous copies a view: dims merged where the walk crosses
// them as one (size-1 dims dropped), and up to 16 bytes of a unit-stride
// innermost dim per access when the sizes, strides and both addresses
// allow. `view` counts units (sizes and strides); no GPU needed.
struct ContiguousCopyPlan {
  CUdeviceptr src = 0;   // the view's first element
  int unit_bytes = 0;    // 2, 4, 8 or 16
  int64_t units = 0;     // units to copy
  StridedView view = {};
};
absl::StatusOr<ContiguousCopyPlan> PlanContiguousCopy(const lowering::Layout& layout, CUdeviceptr src,
                                                      CUdeviceptr dst);

// Copies `view` into `allocate`d contiguous storage on `stream` (2, 4 or
// 8-byte elements, rank <= 8 once merged); returns its address.
absl::StatusOr<CUdeviceptr> CopyToContiguous(const DeviceView& view, int device_index, CUstream stream,
                                             const std::function<absl::StatusOr<CUdeviceptr>(int64_t)>& allocate);

// The index of a storage type in RuntimeKernels' per-type arrays (float32
// 0, float16 1, bfloat16 2); -1 for a type they have no kernel for.
int RuntimeStorageIndex(DType t);

// The runtime kernels are several NVRTC translation units, each the
// prelude (the index type and the float32/float16/bfloat16 storage
// helpers) followed by a body: the base unit below (RuntimeKernels), the
// convolution epilogue (conv_epilogue.h), the output difference
// (output_difference.h) and one unit per depthwise kernel shape
// (depthwise_conv.h). A unit compiles (through the cubin cache) on its
// first use on a device, so a program pays NVRTC only for what it launches:
// as one unit they took about 18 s of a cold first call on an H100 host.
const std::string& RuntimeKernelPrelude();
// The base unit's body.
const std::string& RuntimeKernelSource();

// Function `name` of the unit `body` (a string that lives for the process:
// the unit is keyed by its address) on device `index`, the unit compiled
// and loaded on first use.
absl::StatusOr<CUfunction> GetRuntimeFunction(int index, const std::string& body, const std::string& name);

// The base unit's kernels on device `index` (compiled and loaded on first use).
absl::StatusOr<const RuntimeKernels*> GetRuntimeKernels(int index);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_RUNTIME_KERNELS_H_
