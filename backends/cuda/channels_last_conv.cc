#include "backends/cuda/channels_last_conv.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/runtime_kernels.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

using lowering::Layout;

// `v` ([N, C, H, W], any strides) copied into NHWC scratch.
absl::StatusOr<DeviceView> ToChannelsLast(const DeviceView& v, int device_index, CUstream stream,
                                          const std::function<absl::StatusOr<CUdeviceptr>(int64_t)>& allocate) {
  const Layout& l = v.layout;
  // Row-major over [N, H, W, C] is NHWC's memory order.
  DeviceView permuted = v;
  permuted.layout.sizes = {l.sizes[0], l.sizes[2], l.sizes[3], l.sizes[1]};
  permuted.layout.strides = {l.strides[0], l.strides[2], l.strides[3], l.strides[1]};
  ASSIGN_OR_RETURN(CUdeviceptr ptr, CopyToContiguous(permuted, device_index, stream, allocate));
  return DeviceView{ptr, ChannelsLastLayout(Layout::Contiguous(l.dtype, l.sizes, l.device))};
}

}  // namespace

absl::StatusOr<Tensor> PermuteToKrsc(const Tensor& w) {
  if (w.dim() != 4 || !w.is_contiguous() || !w.has_data()) {
    return absl::InvalidArgumentError("KRSC weight: a contiguous 4-D tensor expected");
  }
  const int64_t k = w.size(0), c = w.size(1), r = w.size(2), s = w.size(3);
  const size_t elem = DTypeSize(w.dtype());
  Tensor out = Tensor::Empty(w.dtype(), {k, c, r, s});
  const auto* src = static_cast<const unsigned char*>(w.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  for (int64_t ki = 0; ki < k; ++ki) {
    for (int64_t ci = 0; ci < c; ++ci) {
      for (int64_t ri = 0; ri < r; ++ri) {
        for (int64_t si = 0; si < s; ++si) {
          const int64_t from = ((ki * c + ci) * r + ri) * s + si;
          const int64_t to = ((ki * r + ri) * s + si) * c + ci;
          std::memcpy(dst + static_cast<size_t>(to) * elem, src + static_cast<size_t>(from) * elem, elem);
        }
      }
    }
  }
  return out;
}

absl::Status RunChannelsLastConv(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                 std::vector<DeviceView> buffer_args, const DeviceView& y, CUdeviceptr krsc_weight,
                                 const ConvContext& ctx,
                                 const std::function<absl::StatusOr<CUdeviceptr>(int64_t)>& allocate) {
  if (ctx.cudnn == nullptr) return absl::UnavailableError("channels-last convolution: no cuDNN");
  if (buffer_args.size() < 2 || buffer_args[0].layout.sizes.size() != 4 || y.layout.sizes.size() != 4) {
    return absl::InvalidArgumentError("channels-last convolution: 4-D input, weight and output expected");
  }
  const bool y_nhwc = IsChannelsLastLayout(y.layout);
  // A plain output is written whole by the transpose below: dense only.
  if (!y_nhwc && !y.layout.IsContiguous()) {
    return absl::InvalidArgumentError("channels-last convolution: a strided plain output");
  }
  const Layout& wl = buffer_args[1].layout;
  buffer_args[1] = DeviceView{krsc_weight, ChannelsLastLayout(Layout::Contiguous(wl.dtype, wl.sizes, wl.device))};
  if (!IsChannelsLastLayout(buffer_args[0].layout)) {
    ASSIGN_OR_RETURN(buffer_args[0], ToChannelsLast(buffer_args[0], ctx.device_index, ctx.stream, allocate));
  }
  DeviceView out = y;
  if (!y_nhwc) {
    out.layout = ChannelsLastLayout(Layout::Contiguous(y.layout.dtype, y.layout.sizes, y.layout.device));
    ASSIGN_OR_RETURN(out.base, allocate(std::max<int64_t>(out.layout.StorageBytes(), 1)));
  }
  // cuDNN only: kiln's own kernels take no KRSC weight.
  ConvContext cudnn_only = ctx;
  cudnn_only.channels_last = true;
  bool used_cudnn = false;
  cudnn_only.used_cudnn = &used_cudnn;
  std::optional<ConvProblem> problem = ParseConv(op, args, buffer_args, {out});
  if (!problem) return absl::InvalidArgumentError("channels-last convolution: not a convolution kiln runs");
  std::optional<absl::Status> done = TryCudaConv(op, args, buffer_args, {out}, cudnn_only);
  if (!done) return absl::UnimplementedError("channels-last convolution: cuDNN took no such convolution");
  RETURN_IF_ERROR(*done);
  if (!used_cudnn) return absl::InternalError("channels-last convolution ran outside cuDNN");
  if (y_nhwc) return absl::OkStatus();
  // NHWC scratch -> the plain output: row-major over [N, C, H, W].
  const CUdeviceptr dst = y.base + static_cast<CUdeviceptr>(y.layout.offset) * DTypeSize(y.layout.dtype);
  ASSIGN_OR_RETURN(CUdeviceptr written,
                   CopyToContiguous(out, ctx.device_index, ctx.stream,
                                    [dst](int64_t) -> absl::StatusOr<CUdeviceptr> { return dst; }));
  (void)written;
  return absl::OkStatus();
}

}  // namespace kiln::backends::cuda
