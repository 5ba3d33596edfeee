#include "backends/cuda/cuda_pool.h"

#include <algorithm>

#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/runtime_kernels.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

std::string BaseName(const std::string& op) { return op.substr(0, op.find('.')); }

// An int list argument of two values (one value repeated; empty: `dflt`).
std::optional<std::vector<int64_t>> Pair(const std::vector<lowering::ExternArg>& args, size_t i,
                                         const std::vector<int64_t>& dflt) {
  if (i >= args.size()) return dflt;
  if (!args[i].buffer.empty() || args[i].is_buffer_list || !args[i].constant) return std::nullopt;
  const ir::IValue& v = *args[i].constant;
  if (v.isInt()) return std::vector<int64_t>{v.toInt(), v.toInt()};
  if (!v.isList() && !v.isTuple()) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::IValue& e : v.elements()) {
    if (!e.isInt()) return std::nullopt;
    out.push_back(e.toInt());
  }
  if (out.empty()) return dflt;
  if (out.size() == 1) out.push_back(out[0]);
  if (out.size() != 2) return std::nullopt;
  return out;
}

std::optional<bool> Bool(const std::vector<lowering::ExternArg>& args, size_t i, bool dflt) {
  if (i >= args.size()) return dflt;
  if (!args[i].constant) return std::nullopt;
  if (args[i].constant->isNone()) return dflt;
  if (!args[i].constant->isBool()) return std::nullopt;
  return args[i].constant->toBool();
}

}  // namespace

bool IsPoolOp(const std::string& op) {
  const std::string base = BaseName(op);
  return base == "aten::max_pool2d" || base == "aten::avg_pool2d";
}

std::optional<absl::Status> TryCudaPool(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                        const std::vector<DeviceView>& buffer_args,
                                        const std::vector<DeviceView>& outputs, int device_index, CUstream stream) {
  if (!IsPoolOp(op) || outputs.size() != 1 || buffer_args.size() != 1 || args.empty() || args[0].buffer.empty()) {
    return std::nullopt;
  }
  const bool is_max = BaseName(op) == "aten::max_pool2d";
  const DeviceView& x = buffer_args[0];
  const DeviceView& y = outputs[0];
  const lowering::Layout& xl = x.layout;
  const lowering::Layout& yl = y.layout;
  const int which = RuntimeStorageIndex(xl.dtype);
  if (which < 0 || yl.dtype != xl.dtype || xl.sizes.size() != 4 || yl.sizes.size() != 4 ||
      !(yl.IsContiguous() || IsChannelsLastLayout(yl)) || xl.strides.size() != 4) {
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> kernel = Pair(args, 1, {});
  if (!kernel || kernel->size() != 2) return std::nullopt;
  std::optional<std::vector<int64_t>> stride = Pair(args, 2, *kernel), pad = Pair(args, 3, {0, 0});
  std::optional<std::vector<int64_t>> dilation = std::vector<int64_t>{1, 1};
  std::optional<bool> count_include_pad = true;
  int64_t divisor = 0;
  if (is_max) {
    dilation = Pair(args, 4, {1, 1});
  } else {
    count_include_pad = Bool(args, 5, true);
    if (args.size() > 6 && args[6].constant && args[6].constant->isInt()) {
      divisor = args[6].constant->toInt();
      if (divisor == 0) return std::nullopt;
    } else if (args.size() > 6 && !(args[6].constant && args[6].constant->isNone())) {
      return std::nullopt;
    }
  }
  if (!stride || !pad || !dilation || !count_include_pad) return std::nullopt;
  for (int64_t v : {(*kernel)[0], (*kernel)[1], (*stride)[0], (*stride)[1], (*dilation)[0], (*dilation)[1]}) {
    if (v <= 0) return std::nullopt;
  }
  if ((*pad)[0] < 0 || (*pad)[1] < 0) return std::nullopt;
  if (yl.sizes[0] != xl.sizes[0] || yl.sizes[1] != xl.sizes[1]) return std::nullopt;
  PoolArgs a;
  a.n = xl.sizes[0], a.c = xl.sizes[1], a.h = xl.sizes[2], a.w = xl.sizes[3];
  a.oh = yl.sizes[2], a.ow = yl.sizes[3];
  a.kh = (*kernel)[0], a.kw = (*kernel)[1], a.sh = (*stride)[0], a.sw = (*stride)[1];
  a.ph = (*pad)[0], a.pw = (*pad)[1], a.dh = (*dilation)[0], a.dw = (*dilation)[1];
  for (int d = 0; d < 4; ++d) a.x_strides[d] = xl.strides[d];
  a.count_include_pad = *count_include_pad ? 1 : 0;
  a.divisor = divisor;
  // A channels-last output (the layout plan keeps a pool between convolutions NHWC).
  a.y_channels_last = yl.IsContiguous() ? 0 : 1;
  const int64_t total = a.n * a.c * a.oh * a.ow;
  if (total == 0) return absl::OkStatus();
  absl::StatusOr<const RuntimeKernels*> k = GetRuntimeKernels(device_index);
  if (!k.ok()) return k.status();
  CUdeviceptr xp = x.base + static_cast<CUdeviceptr>(xl.offset) * DTypeSize(xl.dtype);
  CUdeviceptr yp = y.base + static_cast<CUdeviceptr>(yl.offset) * DTypeSize(yl.dtype);
  std::vector<void*> params = {&xp, &yp, &a};
  const unsigned blocks = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((total + 255) / 256, 132 * 64)));
  CUfunction f = is_max ? (*k)->max_pool2d[which] : (*k)->avg_pool2d[which];
  return CuCheck(LoadCudaLibraries().driver.cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, stream, params.data(), nullptr),
                 "cuLaunchKernel (pool)");
}

}  // namespace kiln::backends::cuda
