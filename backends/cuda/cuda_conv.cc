#include "backends/cuda/cuda_conv.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/cudnn_graph_conv.h"
#include "backends/cuda/depthwise_conv.h"
#include "backends/cuda/runtime_kernels.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {


// An int list of `n` values, or one value repeated.
std::optional<std::vector<int64_t>> IntList(const std::vector<lowering::ExternArg>& args, size_t i, size_t n) {
  if (i >= args.size() || !args[i].buffer.empty() || args[i].is_buffer_list || !args[i].constant) return std::nullopt;
  const ir::IValue& v = *args[i].constant;
  std::vector<int64_t> out;
  if (v.isInt()) {
    out.assign(n, v.toInt());
    return out;
  }
  if (!v.isList() && !v.isTuple()) return std::nullopt;
  for (const ir::IValue& e : v.elements()) {
    if (!e.isInt()) return std::nullopt;
    out.push_back(e.toInt());
  }
  if (out.size() == 1 && n > 1) out.assign(n, out[0]);
  if (out.size() != n) return std::nullopt;
  return out;
}

std::optional<int64_t> Int(const std::vector<lowering::ExternArg>& args, size_t i) {
  if (i >= args.size() || !args[i].constant || !args[i].constant->isInt()) return std::nullopt;
  return args[i].constant->toInt();
}

// An epilogue cudnnConvolutionBiasActivationForward computes: [], [relu],
// [add(operand 0)], [add(operand 0), relu].
bool CudnnFusable(const ConvProblem& c, bool* relu, const DeviceView** z) {
  const std::vector<ir::PostOp>& post = c.post;
  size_t i = 0;
  if (i < post.size() && post[i].kind == ir::PostOpKind::kAdd) {
    if (post[i].operand < 0 || static_cast<size_t>(post[i].operand) >= c.post_operands.size()) return false;
    *z = &c.post_operands[static_cast<size_t>(post[i].operand)];
    ++i;
  }
  if (i < post.size() && post[i].kind == ir::PostOpKind::kRelu) {
    *relu = true;
    ++i;
  }
  return i == post.size();
}

unsigned Blocks(int64_t total) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((total + 255) / 256, 132 * 64)));
}

absl::Status Launch(CUfunction f, int64_t total, CUstream stream, std::vector<void*> params) {
  if (total <= 0) return absl::OkStatus();
  return CuCheck(LoadCudaLibraries().driver.cuLaunchKernel(f, Blocks(total), 1, 1, 256, 1, 1, 0, stream,
                                                           params.data(), nullptr),
                 "cuLaunchKernel (conv runtime kernel)");
}

}  // namespace

bool IsConvOp(const std::string& op) {
  return op == "aten::convolution" || op == "aten::_convolution" || op == "aten::_convolution.deprecated" ||
         op == "aten::conv1d" || op == "aten::conv2d" || op == "kiln::conv_nd" || op == "kiln::conv_post_ops";
}

std::optional<ConvProblem> ParseConv(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                     const std::vector<DeviceView>& buffer_args,
                                     const std::vector<DeviceView>& outputs) {
  if (!IsConvOp(op) || outputs.size() != 1 || args.size() < 7) return std::nullopt;
  const bool torch_conv = op.rfind("aten::convolution", 0) == 0 || op.rfind("aten::_convolution", 0) == 0;
  const bool fused = op == "kiln::conv_post_ops";
  const bool onnx_conv = op == "kiln::conv_nd" || fused;
  // Buffer arguments in order: x, w, [bias], then a fused op's operands.
  if (args[0].buffer.empty() || args[1].buffer.empty()) return std::nullopt;
  const bool has_bias = !args[2].buffer.empty();
  if (!has_bias && args[2].constant && !args[2].constant->isNone()) return std::nullopt;
  const size_t scalar_args = fused ? 9 : args.size();  // conv_post_ops' arg 9 is the operand list
  if (fused && (args.size() != 10 || !args[9].IsTensorList())) return std::nullopt;
  for (size_t i = 3; i < scalar_args; ++i) {
    if (!args[i].buffer.empty() || args[i].is_buffer_list) return std::nullopt;
  }
  const size_t operands = fused ? args[9].buffer_list.size() : 0;
  if (buffer_args.size() != (has_bias ? 3u : 2u) + operands) return std::nullopt;
  const DeviceView& x = buffer_args[0];
  const DeviceView& w = buffer_args[1];
  const DeviceView& y = outputs[0];
  const size_t rank = w.layout.sizes.size();
  if ((rank != 3 && rank != 4) || x.layout.sizes.size() != rank || y.layout.sizes.size() != rank) return std::nullopt;
  const size_t nd = rank - 2;
  std::optional<std::vector<int64_t>> stride = IntList(args, 3, nd), dilation = IntList(args, 5, nd), pad;
  std::optional<int64_t> groups;
  if (onnx_conv) {
    std::optional<std::vector<int64_t>> pads = IntList(args, 4, 2 * nd);
    if (!pads) return std::nullopt;
    for (size_t d = 0; d < nd; ++d) {
      if ((*pads)[d] != (*pads)[d + nd]) return std::nullopt;
    }
    pad = std::vector<int64_t>(pads->begin(), pads->begin() + static_cast<int64_t>(nd));
    groups = Int(args, 6);
  } else {
    pad = IntList(args, 4, nd);
    if (torch_conv) {
      if (args.size() < 9 || !args[6].constant || !args[6].constant->isBool() || args[6].constant->toBool()) {
        return std::nullopt;
      }
      groups = Int(args, 8);
    } else {
      groups = Int(args, 6);
    }
  }
  if (!stride || !dilation || !pad || !groups) return std::nullopt;
  ConvProblem c;
  c.spatial_dims = nd;
  c.x = x, c.weight = w, c.y = y;
  if (has_bias) c.bias = buffer_args[2];
  const auto& xs = x.layout.sizes;
  const auto& ws = w.layout.sizes;
  c.n = xs[0], c.cin = xs[1], c.cout = ws[0], c.groups = *groups;
  c.h = nd == 2 ? xs[2] : 1, c.w = xs[nd + 1];
  c.kh = nd == 2 ? ws[2] : 1, c.kw = ws[nd + 1];
  c.sh = nd == 2 ? (*stride)[0] : 1, c.sw = stride->back();
  c.ph = nd == 2 ? (*pad)[0] : 0, c.pw = pad->back();
  c.dh = nd == 2 ? (*dilation)[0] : 1, c.dw = dilation->back();
  if (c.groups <= 0 || c.sh <= 0 || c.sw <= 0 || c.dh <= 0 || c.dw <= 0 || c.ph < 0 || c.pw < 0 ||
      c.cin % c.groups != 0 || c.cout % c.groups != 0 || ws[1] * c.groups != c.cin) {
    return std::nullopt;
  }
  const int64_t eh = c.h + 2 * c.ph - c.dh * (c.kh - 1) - 1, ew = c.w + 2 * c.pw - c.dw * (c.kw - 1) - 1;
  if (eh < 0 || ew < 0) return std::nullopt;
  c.oh = eh / c.sh + 1, c.ow = ew / c.sw + 1;
  const std::vector<int64_t> expect =
      nd == 2 ? std::vector<int64_t>{c.n, c.cout, c.oh, c.ow} : std::vector<int64_t>{c.n, c.cout, c.ow};
  if (y.layout.sizes != expect) return std::nullopt;
  if (x.layout.dtype != w.layout.dtype || y.layout.dtype != x.layout.dtype) return std::nullopt;
  if (has_bias && buffer_args[2].layout.sizes != std::vector<int64_t>{c.cout}) return std::nullopt;
  if (fused) {
    std::vector<std::string> names;
    std::vector<double> scalars;
    const std::optional<ir::IValue>& nv = args[7].constant;
    const std::optional<ir::IValue>& sv = args[8].constant;
    if (!nv || !sv || !nv->isList() || !sv->isList()) return std::nullopt;
    for (const ir::IValue& e : nv->elements()) {
      if (!e.isString()) return std::nullopt;
      names.push_back(e.toString());
    }
    for (const ir::IValue& e : sv->elements()) {
      if (!e.isNumber()) return std::nullopt;
      scalars.push_back(e.toNumberAsDouble());
    }
    absl::StatusOr<std::vector<ir::PostOp>> post = ir::ParsePostOps(names, scalars, operands);
    if (!post.ok()) return std::nullopt;
    c.post = *std::move(post);
    std::vector<lowering::Layout> layouts;
    for (size_t i = buffer_args.size() - operands; i < buffer_args.size(); ++i) {
      c.post_operands.push_back(buffer_args[i]);
      layouts.push_back(buffer_args[i].layout);
    }
    // The bias joins the epilogue (one pass over y instead of cuDNN's add).
    if (has_bias && buffer_args[2].layout.dtype != y.layout.dtype) return std::nullopt;
    c.epilogue = MakeEpilogueArgs(y.layout, has_bias, c.post, layouts);
    if (!c.epilogue) return std::nullopt;
  }
  return c;
}

std::optional<absl::Status> TryCudaConv(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                        const std::vector<DeviceView>& buffer_args,
                                        const std::vector<DeviceView>& outputs, const ConvContext& ctx) {
  std::optional<ConvProblem> problem = ParseConv(op, args, buffer_args, outputs);
  if (!problem) return std::nullopt;
  ConvProblem c = *problem;  // own kernels take its fields by address
  if (c.n == 0 || c.cout == 0 || c.oh * c.ow == 0) return absl::OkStatus();
  if (c.epilogue && c.bias && ctx.cudnn != nullptr && CudnnFusedEnabled()) {
    // bias [+ residual] [+ relu]: cuDNN's fused call (opt-in), else below.
    bool relu = false;
    const DeviceView* z = nullptr;
    if (CudnnFusable(c, &relu, &z)) {
      ConvProblem fused = c;
      fused.epilogue.reset();
      std::optional<absl::Status> done = CudnnFusedConvolution(fused, ctx, relu, z);
      if (done && done->ok()) {
        if (ctx.used_cudnn != nullptr) *ctx.used_cudnn = true;
        return done;
      }
    }
  }
  if (c.epilogue && !DepthwiseKernelTakes(c, ctx.channels_last)) {
    // Convolution, bias and chain as one cuDNN graph (cudnn_graph_conv.h),
    // its plans checked against the kernel path's output; nullopt: a chain
    // or shape it does not take, the kernel path below.
    const FusedConvReference reference = [&](const DeviceView& y) -> absl::Status {
      std::optional<absl::Status> done = ConvThenEpilogue(c, y, ctx);
      if (!done) return absl::UnimplementedError("fused convolution: no kernel path to check cuDNN's plans with");
      return *done;
    };
    if (std::optional<absl::Status> done = CudnnGraphFusedConvolution(c, ctx, reference)) return done;
  }
  if (c.epilogue) return ConvThenEpilogue(c, c.y, ctx);
  return TryCudaConv(c, ctx);
}

std::optional<absl::Status> ConvThenEpilogue(const ConvProblem& c, const DeviceView& y, const ConvContext& ctx) {
  ConvProblem bare = c;
  bare.y = y;
  bare.bias.reset();
  bare.epilogue.reset();
  std::optional<absl::Status> done = TryCudaConv(bare, ctx);
  if (!done || !done->ok()) return done;
  return LaunchEpilogue(y, c.bias, c.post_operands, *c.epilogue, ctx.device_index, ctx.stream);
}

std::optional<absl::Status> TryCudaConv(ConvProblem c, const ConvContext& ctx) {
  if (DepthwiseKernelTakes(c, ctx.channels_last)) return LaunchDepthwise(c, ctx.device_index, ctx.stream);
  if (ctx.cudnn != nullptr) {
    if (std::optional<absl::Status> done = CudnnConvolution(c, ctx)) {
      if (done->ok() && ctx.used_cudnn != nullptr) *ctx.used_cudnn = true;
      return done;
    }
  }
  // kiln's own kernels take [K, C, R, S] weights and NCHW only.
  if (ctx.channels_last || !c.weight.layout.IsContiguous()) return std::nullopt;
  // kiln's own kernels: float32, contiguous.
  if (c.n == 0 || c.cout == 0 || c.oh * c.ow == 0) return absl::OkStatus();
  const DeviceView& x = c.x;
  const DeviceView& w = c.weight;
  const DeviceView& y = c.y;
  const bool has_bias = c.bias.has_value();
  for (const DeviceView* v : {&x, &w, &y}) {
    if (v->layout.dtype != DType::kFloat32 || !v->layout.IsContiguous()) return std::nullopt;
  }
  if (has_bias && (c.bias->layout.dtype != DType::kFloat32 || !c.bias->layout.IsContiguous())) return std::nullopt;
  if (ctx.handle == nullptr) return std::nullopt;
  const auto& ws = w.layout.sizes;
  absl::StatusOr<const RuntimeKernels*> kernels = GetRuntimeKernels(ctx.device_index);
  if (!kernels.ok()) return kernels.status();
  auto ptr = [](const DeviceView& v) { return v.base + static_cast<CUdeviceptr>(v.layout.offset) * sizeof(float); };
  CUdeviceptr xp = ptr(x), wp = ptr(w), yp = ptr(y);
  CUdeviceptr bp = has_bias ? ptr(*c.bias) : 0;
  const int64_t spatial = c.oh * c.ow;

  if (c.groups == c.cin && ws[1] == 1) {
    int64_t total = c.n * c.cout * spatial;
    return Launch((*kernels)->depthwise, total, ctx.stream,
                  {&xp, &wp, &bp, &yp, &c.n, &c.cin, &c.cout, &c.h, &c.w, &c.kh, &c.kw, &c.oh, &c.ow, &c.sh, &c.sw,
                   &c.ph, &c.pw, &c.dh, &c.dw});
  }
  float beta = 0.0f;
  if (has_bias) {
    int64_t total = c.n * c.cout * spatial;
    int64_t channels = c.cout, hw = spatial;
    RETURN_IF_ERROR(Launch((*kernels)->fill_bias, total, ctx.stream, {&yp, &bp, &total, &channels, &hw}));
    beta = 1.0f;
  }
  const int64_t cin_g = c.cin / c.groups, cout_g = c.cout / c.groups;
  const int64_t k = cin_g * c.kh * c.kw;
  const bool direct = c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 && c.ph == 0 && c.pw == 0;
  const int64_t x_image = c.cin * c.h * c.w, y_image = c.cout * spatial;
  for (int64_t g = 0; g < c.groups; ++g) {
    const CUdeviceptr wg = wp + static_cast<CUdeviceptr>(g * cout_g * k) * sizeof(float);
    const CUdeviceptr xg = xp + static_cast<CUdeviceptr>(g * cin_g * c.h * c.w) * sizeof(float);
    const CUdeviceptr yg = yp + static_cast<CUdeviceptr>(g * cout_g * spatial) * sizeof(float);
    if (direct) {
      RETURN_IF_ERROR(SgemmRowMajor(ctx.handle, cout_g, spatial, k, 1.0f, wg, k, 0, xg, spatial, x_image, beta, yg,
                                    spatial, y_image, c.n));
      continue;
    }
    // im2col of a chunk of images at a time (columns up to 256 MiB).
    const int64_t per_image = k * spatial;
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(c.n, (int64_t{64} << 20) / std::max<int64_t>(per_image, 1)));
    absl::StatusOr<CUdeviceptr> cols = ctx.scratch(chunk * per_image * static_cast<int64_t>(sizeof(float)));
    if (!cols.ok()) return cols.status();
    for (int64_t first = 0; first < c.n; first += chunk) {
      int64_t count = std::min(chunk, c.n - first);
      CUdeviceptr xi = xg + static_cast<CUdeviceptr>(first * x_image) * sizeof(float);
      CUdeviceptr yi = yg + static_cast<CUdeviceptr>(first * y_image) * sizeof(float);
      CUdeviceptr cp = *cols;
      int64_t image_stride = x_image;
      int64_t cin_group = cin_g;
      RETURN_IF_ERROR(Launch((*kernels)->im2col, count * per_image, ctx.stream,
                             {&xi, &cp, &count, &image_stride, &cin_group, &c.h, &c.w, &c.kh, &c.kw, &c.oh, &c.ow,
                              &c.sh, &c.sw, &c.ph, &c.pw, &c.dh, &c.dw}));
      RETURN_IF_ERROR(SgemmRowMajor(ctx.handle, cout_g, spatial, k, 1.0f, wg, k, 0, cp, spatial, per_image, beta, yi,
                                    spatial, y_image, count));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::backends::cuda
