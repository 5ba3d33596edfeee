// Typed entry points of the convolution, pooling and linear-algebra rows
// (ops/defs/conv_pool.def, linalg.def): schema arguments -> nn:: options.
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/post_ops.h"
#include "runtime/kernels.h"
#include "runtime/kernels_math.h"
#include "runtime/kernels_nn.h"
#include "runtime/kernels_shape.h"
#include "runtime/op_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

absl::Status Invalid(const std::string& op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

// An int[] argument with one value per spatial dim: a single value repeats
// (PyTorch's expand_param_if_needed); an empty list gives `if_empty`.
absl::StatusOr<Ints> PerDim(const std::string& op, Ints v, size_t n, const char* name,
                            std::optional<Ints> if_empty = {}) {
  if (v.empty() && if_empty) return *if_empty;
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  if (v.size() != n) {
    return Invalid(op, absl::StrCat(name, " must have ", n, " values, got ", v.size()));
  }
  return v;
}

// ONNX-style pads (begins then ends) split for n spatial dims.
absl::Status SplitPads(const std::string& op, const Ints& pads, size_t n, Ints* begin, Ints* end) {
  if (pads.empty()) {
    begin->assign(n, 0);
    end->assign(n, 0);
    return absl::OkStatus();
  }
  if (pads.size() != 2 * n) {
    return Invalid(op, absl::StrCat("pads must have ", 2 * n, " values, got ", pads.size()));
  }
  begin->assign(pads.begin(), pads.begin() + static_cast<int64_t>(n));
  end->assign(pads.begin() + static_cast<int64_t>(n), pads.end());
  return absl::OkStatus();
}

absl::StatusOr<size_t> SpatialDims(const std::string& op, const Tensor& w) {
  if (w.dim() < 3) return Invalid(op, "weight must have at least 3 dims");
  return static_cast<size_t>(w.dim() - 2);
}

absl::Status CheckWeightRank(const std::string& op, const Tensor& w, size_t n) {
  if (w.dim() != static_cast<int64_t>(n) + 2) {
    return Invalid(op, absl::StrCat("weight must have ", n + 2, " dims, got shape ",
                                    ShapeToString(w.sizes())));
  }
  return absl::OkStatus();
}

// ONNX's stride/pads/dilation with defaults (1, 0, 1).
absl::StatusOr<nn::ConvOptions> OnnxConvOptions(const std::string& op, size_t n,
                                                const Ints& stride, const Ints& pads,
                                                const Ints& dilation, int64_t groups) {
  nn::ConvOptions o;
  ASSIGN_OR_RETURN(o.stride, PerDim(op, stride, n, "stride"));
  RETURN_IF_ERROR(SplitPads(op, pads, n, &o.pad_begin, &o.pad_end));
  ASSIGN_OR_RETURN(o.dilation, PerDim(op, dilation, n, "dilation"));
  o.groups = groups;
  return o;
}

// PyTorch's pooling argument checks: [C, *S] or [N, C, *S], pads at most
// half the kernel.
absl::Status CheckTorchPool(const std::string& op, const Tensor& x, size_t n,
                            const nn::PoolOptions& o) {
  if (x.dim() != static_cast<int64_t>(n) + 1 && x.dim() != static_cast<int64_t>(n) + 2) {
    return Invalid(op, absl::StrCat("expected ", n + 1, "-D or ", n + 2, "-D input, got shape ",
                                    ShapeToString(x.sizes())));
  }
  for (size_t d = 0; d < n; ++d) {
    if (o.pad_begin[d] * 2 > o.kernel[d]) return Invalid(op, "pad should be at most half of kernel size");
  }
  return absl::OkStatus();
}

// ONNX pooling windows: kernel, stride (default 1), pads (begins, ends),
// dilation (default 1) over the spatial dims of [N, C, *S].
absl::StatusOr<nn::PoolOptions> OnnxPoolOptions(const std::string& op, const Tensor& x,
                                                const Ints& kernel, const Ints& stride,
                                                const Ints& pads, const Ints& dilation,
                                                bool ceil_mode) {
  nn::PoolOptions o;
  o.kernel = kernel;
  const size_t n = kernel.size();
  if (n == 0 || x.dim() != static_cast<int64_t>(n) + 2) {
    return Invalid(op, absl::StrCat("kernel of ", n, " dims does not fit input of shape ",
                                    ShapeToString(x.sizes())));
  }
  ASSIGN_OR_RETURN(o.stride, PerDim(op, stride, n, "stride", Ints(n, 1)));
  RETURN_IF_ERROR(SplitPads(op, pads, n, &o.pad_begin, &o.pad_end));
  ASSIGN_OR_RETURN(o.dilation, PerDim(op, dilation, n, "dilation", Ints(n, 1)));
  o.ceil_mode = ceil_mode;
  return o;
}

absl::StatusOr<Tensor> Values(absl::StatusOr<nn::PoolResult> r) {
  if (!r.ok()) return r.status();
  return r->values;
}

absl::StatusOr<TensorPair> ValuesAndIndices(absl::StatusOr<nn::PoolResult> r) {
  if (!r.ok()) return r.status();
  return TensorPair(std::move(r->values), std::move(r->indices));
}

absl::StatusOr<Tensor> UnpoolTorch(const std::string& op, const Tensor& x, const Tensor& idx,
                                   const Ints& output_size, size_t n) {
  ASSIGN_OR_RETURN(Ints out, PerDim(op, output_size, n, "output_size"));
  return nn::MaxUnpool(op, x, idx, out, nn::IndexStyle::kPlane);
}

}  // namespace

absl::StatusOr<Tensor> EinsumKernel(const std::string& equation, const std::vector<Tensor>& tensors,
                                    const Dims&) {
  return Einsum(equation, tensors);
}

absl::StatusOr<Tensor> ConvolutionKernel(const std::string& op, const Tensor& x, const Tensor& w,
                                         const OptTensor& b, const Ints& stride,
                                         const Ints& padding, const Ints& dilation,
                                         bool transposed, const Ints& output_padding,
                                         int64_t groups) {
  ASSIGN_OR_RETURN(size_t n, SpatialDims(op, w));
  nn::ConvOptions o;
  ASSIGN_OR_RETURN(o.stride, PerDim(op, stride, n, "stride"));
  ASSIGN_OR_RETURN(o.pad_begin, PerDim(op, padding, n, "padding"));
  o.pad_end = o.pad_begin;
  ASSIGN_OR_RETURN(o.dilation, PerDim(op, dilation, n, "dilation"));
  o.transposed = transposed;
  ASSIGN_OR_RETURN(o.output_padding, PerDim(op, output_padding, n, "output_padding"));
  o.groups = groups;
  return nn::Convolution(op, x, w, b, o);
}

KernelBinder ConvNdKernel(size_t n) {
  return UnboxedNamed([n](const std::string& op, const Tensor& x, const Tensor& w,
                          const OptTensor& b, const Ints& stride, const Ints& padding,
                          const Ints& dilation, int64_t groups) -> absl::StatusOr<Tensor> {
    RETURN_IF_ERROR(CheckWeightRank(op, w, n));
    nn::ConvOptions o;
    ASSIGN_OR_RETURN(o.stride, PerDim(op, stride, n, "stride"));
    ASSIGN_OR_RETURN(o.pad_begin, PerDim(op, padding, n, "padding"));
    o.pad_end = o.pad_begin;
    ASSIGN_OR_RETURN(o.dilation, PerDim(op, dilation, n, "dilation"));
    o.groups = groups;
    return nn::Convolution(op, x, w, b, o);
  });
}

KernelBinder ConvNdStringPaddingKernel(size_t n) {
  return UnboxedNamed([n](const std::string& op, const Tensor& x, const Tensor& w,
                          const OptTensor& b, const Ints& stride, const std::string& padding,
                          const Ints& dilation, int64_t groups) -> absl::StatusOr<Tensor> {
    RETURN_IF_ERROR(CheckWeightRank(op, w, n));
    nn::ConvOptions o;
    ASSIGN_OR_RETURN(o.stride, PerDim(op, stride, n, "stride"));
    ASSIGN_OR_RETURN(o.dilation, PerDim(op, dilation, n, "dilation"));
    o.groups = groups;
    o.pad_begin.assign(n, 0);
    o.pad_end.assign(n, 0);
    if (padding == "same") {
      for (size_t d = 0; d < n; ++d) {
        if (o.stride[d] != 1) return Invalid(op, "padding='same' requires stride 1");
        const int64_t total = o.dilation[d] * (w.size(2 + static_cast<int64_t>(d)) - 1);
        o.pad_begin[d] = total / 2;
        o.pad_end[d] = total - total / 2;
      }
    } else if (padding != "valid") {
      return Invalid(op, absl::StrCat("padding must be 'valid' or 'same', got '", padding, "'"));
    }
    return nn::Convolution(op, x, w, b, o);
  });
}

KernelBinder ConvTransposeNdKernel(size_t n) {
  return UnboxedNamed([n](const std::string& op, const Tensor& x, const Tensor& w,
                          const OptTensor& b, const Ints& stride, const Ints& padding,
                          const Ints& output_padding, int64_t groups,
                          const Ints& dilation) -> absl::StatusOr<Tensor> {
    RETURN_IF_ERROR(CheckWeightRank(op, w, n));
    nn::ConvOptions o;
    o.transposed = true;
    ASSIGN_OR_RETURN(o.stride, PerDim(op, stride, n, "stride"));
    ASSIGN_OR_RETURN(o.pad_begin, PerDim(op, padding, n, "padding"));
    o.pad_end = o.pad_begin;
    ASSIGN_OR_RETURN(o.output_padding, PerDim(op, output_padding, n, "output_padding"));
    o.groups = groups;
    ASSIGN_OR_RETURN(o.dilation, PerDim(op, dilation, n, "dilation"));
    for (size_t d = 0; d < n; ++d) {
      if (o.output_padding[d] >= o.stride[d] && o.output_padding[d] >= o.dilation[d]) {
        return Invalid(op, "output_padding must be smaller than stride or dilation");
      }
    }
    return nn::Convolution(op, x, w, b, o);
  });
}

absl::StatusOr<Tensor> OnnxConv(const std::string& op, const Tensor& x, const Tensor& w,
                                const OptTensor& b, const Ints& stride, const Ints& pads,
                                const Ints& dilation, int64_t groups) {
  ASSIGN_OR_RETURN(size_t n, SpatialDims(op, w));
  ASSIGN_OR_RETURN(nn::ConvOptions o, OnnxConvOptions(op, n, stride, pads, dilation, groups));
  return nn::Convolution(op, x, w, b, o);
}

namespace {

// The epilogue lists of a fused op (post_ops, post_scalars, post_operands).
absl::StatusOr<std::vector<ir::PostOp>> ParsedPostOps(const std::string& op,
                                                      const std::vector<std::string>& names,
                                                      const std::vector<double>& scalars,
                                                      const std::vector<Tensor>& operands) {
  absl::StatusOr<std::vector<ir::PostOp>> post = ir::ParsePostOps(names, scalars, operands.size());
  if (!post.ok()) return Invalid(op, post.status().message());
  return post;
}

}  // namespace

absl::StatusOr<Tensor> ConvPostOps(const std::string& op, const Tensor& x, const Tensor& w,
                                   const OptTensor& b, const Ints& stride, const Ints& pads,
                                   const Ints& dilation, int64_t groups,
                                   const std::vector<std::string>& post_ops,
                                   const std::vector<double>& post_scalars,
                                   const std::vector<Tensor>& post_operands) {
  ASSIGN_OR_RETURN(std::vector<ir::PostOp> post,
                   ParsedPostOps(op, post_ops, post_scalars, post_operands));
  ASSIGN_OR_RETURN(Tensor y, OnnxConv(op, x, w, b, stride, pads, dilation, groups));
  return nn::ApplyPostOps(op, std::move(y), post, post_operands);
}

absl::StatusOr<Tensor> LinearPostOps(const std::string& op, const Tensor& x, const Tensor& w,
                                     const OptTensor& b, const std::vector<std::string>& post_ops,
                                     const std::vector<double>& post_scalars,
                                     const std::vector<Tensor>& post_operands) {
  ASSIGN_OR_RETURN(std::vector<ir::PostOp> post,
                   ParsedPostOps(op, post_ops, post_scalars, post_operands));
  ASSIGN_OR_RETURN(Tensor y, Linear(x, w, b));
  return nn::ApplyPostOps(op, std::move(y), post, post_operands);
}

absl::StatusOr<Tensor> GlobalAvgPool(const std::string& op, const Tensor& x) {
  if (x.dim() < 3) return Invalid(op, absl::StrCat("input must have at least 3 dims, got ", x.dim()));
  ReduceOptions o;
  o.dims.emplace();
  for (int64_t d = 2; d < x.dim(); ++d) o.dims->push_back(d);
  o.keepdim = true;
  return Reduce(ReduceOp::kMean, x, o);
}

absl::StatusOr<Tensor> ChannelMul(const std::string& op, const Tensor& x, const Tensor& scale) {
  bool fits = x.dim() >= 2 && scale.dim() == x.dim() && scale.dtype() == x.dtype() &&
              (scale.size(0) == 1 || scale.size(0) == x.size(0)) && scale.size(1) == x.size(1);
  for (int64_t d = 2; fits && d < x.dim(); ++d) fits = scale.size(d) == 1;
  if (!fits) {
    return Invalid(op, absl::StrCat("scale ", DTypeName(scale.dtype()), "[", absl::StrJoin(scale.sizes(), ", "),
                                    "] is not one value per channel of input ", DTypeName(x.dtype()), "[",
                                    absl::StrJoin(x.sizes(), ", "), "] ([N or 1, C, 1, ...] of its dtype)"));
  }
  return Binary(BinaryOp::kMul, Operand::FromTensor(x), Operand::FromTensor(scale));
}

absl::StatusOr<Tensor> Attention(const Tensor& q, const Tensor& kt, const Tensor& v,
                                 const OptTensor& mask, double scale) {
  ASSIGN_OR_RETURN(Tensor s, Matmul(q, kt));
  if (scale != 1.0) {
    ASSIGN_OR_RETURN(s, Binary(BinaryOp::kMul, Operand::FromTensor(s), Operand::Double(scale)));
  }
  if (mask) {
    ASSIGN_OR_RETURN(s, Binary(BinaryOp::kAdd, Operand::FromTensor(s), Operand::FromTensor(*mask)));
  }
  // 16-bit operands: the softmax runs in float32 and its result is rounded
  // to v's dtype before the second product, as autocast's chain (and a
  // 16-bit softmax, which computes in float and rounds once) does.
  if (s.dtype() != DType::kFloat32) {
    ASSIGN_OR_RETURN(s, To(s, DType::kFloat32));
  }
  ASSIGN_OR_RETURN(Tensor p, Softmax(s, -1, std::nullopt, /*log=*/false));
  if (p.dtype() != v.dtype()) {
    ASSIGN_OR_RETURN(p, To(p, v.dtype()));
  }
  return Matmul(p, v);
}

absl::StatusOr<Tensor> OnnxConvTranspose(const std::string& op, const Tensor& x, const Tensor& w,
                                         const OptTensor& b, const Ints& stride,
                                         const Ints& pads, const Ints& dilation,
                                         const Ints& output_padding, int64_t groups) {
  ASSIGN_OR_RETURN(size_t n, SpatialDims(op, w));
  ASSIGN_OR_RETURN(nn::ConvOptions o, OnnxConvOptions(op, n, stride, pads, dilation, groups));
  o.transposed = true;
  ASSIGN_OR_RETURN(o.output_padding, PerDim(op, output_padding, n, "output_padding", Ints(n, 0)));
  return nn::Convolution(op, x, w, b, o);
}

absl::StatusOr<Tensor> OnnxConvInteger(const std::string& op, const Tensor& x, const Tensor& w,
                                       const OptTensor& x_zero_point,
                                       const OptTensor& w_zero_point, const Ints& stride,
                                       const Ints& pads, const Ints& dilation, int64_t groups) {
  ASSIGN_OR_RETURN(size_t n, SpatialDims(op, w));
  ASSIGN_OR_RETURN(nn::ConvOptions o, OnnxConvOptions(op, n, stride, pads, dilation, groups));
  return nn::ConvInteger(op, x, w, x_zero_point, w_zero_point, o);
}

absl::StatusOr<Tensor> OnnxQLinearConv(const std::string& op, const Tensor& x,
                                       const Tensor& x_scale, const Tensor& x_zero_point,
                                       const Tensor& w, const Tensor& w_scale,
                                       const Tensor& w_zero_point, const Tensor& y_scale,
                                       const Tensor& y_zero_point, const OptTensor& bias,
                                       const Ints& stride, const Ints& pads, const Ints& dilation,
                                       int64_t groups) {
  nn::QLinearConvInputs in{x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
                           y_zero_point, bias};
  ASSIGN_OR_RETURN(size_t n, SpatialDims(op, w));
  ASSIGN_OR_RETURN(nn::ConvOptions o, OnnxConvOptions(op, n, stride, pads, dilation, groups));
  return nn::QLinearConv(op, in, o);
}

KernelBinder MaxPoolKernel(size_t n, bool with_indices) {
  return UnboxedNamed([n, with_indices](const std::string& op, const Tensor& x,
                                        const Ints& kernel_size, const Ints& stride,
                                        const Ints& padding, const Ints& dilation,
                                        bool ceil_mode) -> absl::StatusOr<std::vector<Tensor>> {
    nn::PoolOptions o;
    ASSIGN_OR_RETURN(o.kernel, PerDim(op, kernel_size, n, "kernel_size"));
    ASSIGN_OR_RETURN(o.stride, PerDim(op, stride, n, "stride", o.kernel));
    ASSIGN_OR_RETURN(o.pad_begin, PerDim(op, padding, n, "padding"));
    o.pad_end = o.pad_begin;
    ASSIGN_OR_RETURN(o.dilation, PerDim(op, dilation, n, "dilation"));
    o.ceil_mode = ceil_mode;
    RETURN_IF_ERROR(CheckTorchPool(op, x, n, o));
    ASSIGN_OR_RETURN(nn::PoolResult r, nn::Pool(op, nn::PoolKind::kMax, x, o));
    if (with_indices) return std::vector<Tensor>{std::move(r.values), std::move(r.indices)};
    return std::vector<Tensor>{std::move(r.values)};
  });
}

KernelBinder AvgPoolKernel(size_t n) {
  auto run = [n](const std::string& op, const Tensor& x, const Ints& kernel_size,
                 const Ints& stride, const Ints& padding, bool ceil_mode, bool count_include_pad,
                 std::optional<int64_t> divisor_override) -> absl::StatusOr<Tensor> {
    nn::PoolOptions o;
    ASSIGN_OR_RETURN(o.kernel, PerDim(op, kernel_size, n, "kernel_size"));
    ASSIGN_OR_RETURN(o.stride, PerDim(op, stride, n, "stride", o.kernel));
    ASSIGN_OR_RETURN(o.pad_begin, PerDim(op, padding, n, "padding"));
    o.pad_end = o.pad_begin;
    o.dilation.assign(n, 1);
    o.ceil_mode = ceil_mode;
    o.count_include_pad = count_include_pad;
    o.divisor_override = divisor_override;
    RETURN_IF_ERROR(CheckTorchPool(op, x, n, o));
    return Values(nn::Pool(op, nn::PoolKind::kAvg, x, o));
  };
  if (n == 1) {  // avg_pool1d has no divisor_override
    return UnboxedNamed([run](const std::string& op, const Tensor& x, const Ints& k,
                              const Ints& s, const Ints& p, bool ceil_mode, bool include_pad) {
      return run(op, x, k, s, p, ceil_mode, include_pad, std::nullopt);
    });
  }
  return UnboxedNamed(run);
}

KernelBinder AdaptivePoolKernel(size_t n, bool max) {
  return UnboxedNamed([n, max](const std::string& op, const Tensor& x,
                               const Ints& output_size) -> absl::StatusOr<std::vector<Tensor>> {
    ASSIGN_OR_RETURN(Ints out, PerDim(op, output_size, n, "output_size"));
    if (x.dim() != static_cast<int64_t>(n) + 1 && x.dim() != static_cast<int64_t>(n) + 2) {
      return Invalid(op, absl::StrCat("expected ", n + 1, "-D or ", n + 2, "-D input, got shape ",
                                      ShapeToString(x.sizes())));
    }
    ASSIGN_OR_RETURN(nn::PoolResult r, nn::AdaptivePool(op, max, x, out));
    if (max) return std::vector<Tensor>{std::move(r.values), std::move(r.indices)};
    return std::vector<Tensor>{std::move(r.values)};
  });
}

absl::StatusOr<Tensor> MaxUnpool2d(const std::string& op, const Tensor& self,
                                   const Tensor& indices, const Ints& output_size) {
  return UnpoolTorch(op, self, indices, output_size, 2);
}

absl::StatusOr<Tensor> MaxUnpool3d(const std::string& op, const Tensor& self,
                                   const Tensor& indices, const Ints& output_size, const Ints&,
                                   const Ints&) {
  return UnpoolTorch(op, self, indices, output_size, 3);
}

absl::StatusOr<TensorPair> OnnxMaxPool(const std::string& op, const Tensor& x, const Ints& kernel,
                                       const Ints& stride, const Ints& pads, const Ints& dilation,
                                       bool ceil_mode, int64_t storage_order) {
  ASSIGN_OR_RETURN(nn::PoolOptions o,
                   OnnxPoolOptions(op, x, kernel, stride, pads, dilation, ceil_mode));
  if (storage_order != 0 && storage_order != 1) return Invalid(op, "storage_order must be 0 or 1");
  o.index_style =
      storage_order == 1 ? nn::IndexStyle::kFlatColMajor : nn::IndexStyle::kFlatRowMajor;
  return ValuesAndIndices(nn::Pool(op, nn::PoolKind::kMax, x, o));
}

absl::StatusOr<Tensor> OnnxAvgPool(const std::string& op, const Tensor& x, const Ints& kernel,
                                   const Ints& stride, const Ints& pads, const Ints& dilation,
                                   bool ceil_mode, bool count_include_pad) {
  ASSIGN_OR_RETURN(nn::PoolOptions o,
                   OnnxPoolOptions(op, x, kernel, stride, pads, dilation, ceil_mode));
  o.count_include_pad = count_include_pad;
  return Values(nn::Pool(op, nn::PoolKind::kAvg, x, o));
}

absl::StatusOr<Tensor> OnnxLpPool(const std::string& op, const Tensor& x, const Ints& kernel,
                                  const Ints& stride, const Ints& pads, const Ints& dilation,
                                  bool ceil_mode, double p) {
  ASSIGN_OR_RETURN(nn::PoolOptions o,
                   OnnxPoolOptions(op, x, kernel, stride, pads, dilation, ceil_mode));
  if (!(p > 0)) return Invalid(op, "p must be positive");
  o.p = p;
  return Values(nn::Pool(op, nn::PoolKind::kLp, x, o));
}

absl::StatusOr<Tensor> OnnxGlobalLpPool(const std::string& op, const Tensor& x, double p) {
  if (!(p > 0)) return Invalid(op, "p must be positive");
  if (x.dim() < 3) return Invalid(op, "input must have at least 3 dims");
  nn::PoolOptions o;
  o.p = p;
  o.kernel.assign(x.sizes().begin() + 2, x.sizes().end());
  const size_t n = o.kernel.size();
  o.stride.assign(n, 1);
  o.dilation.assign(n, 1);
  o.pad_begin.assign(n, 0);
  o.pad_end.assign(n, 0);
  return Values(nn::Pool(op, nn::PoolKind::kLp, x, o));
}

absl::StatusOr<Tensor> OnnxMaxUnpool(const std::string& op, const Tensor& x,
                                     const Tensor& idx, const Ints& kernel,
                                     const Ints& strides, const Ints& pads,
                                     const OptTensor& shape) {
  const size_t n = kernel.size();
  if (n == 0 || x.dim() != static_cast<int64_t>(n) + 2) {
    return Invalid(op, absl::StrCat("kernel of ", n, " dims does not fit input of shape ",
                                    ShapeToString(x.sizes())));
  }
  ASSIGN_OR_RETURN(Ints stride, PerDim(op, strides, n, "strides", Ints(n, 1)));
  Ints pb, pe;
  RETURN_IF_ERROR(SplitPads(op, pads, n, &pb, &pe));
  // Indices address the default output shape; output_shape only pads it.
  Ints out(n), padded;
  for (size_t d = 0; d < n; ++d) {
    out[d] = (x.size(static_cast<int64_t>(d) + 2) - 1) * stride[d] - pb[d] - pe[d] + kernel[d];
    if (out[d] <= 0) return Invalid(op, "unpooled output size is not positive");
  }
  if (shape && shape->defined()) {
    if (!shape->has_data() || shape->numel() != static_cast<int64_t>(n) + 2) {
      return Invalid(op, absl::StrCat("output_shape must have ", n + 2, " values"));
    }
    for (size_t d = 0; d < n; ++d) padded.push_back(shape->GetInt(static_cast<int64_t>(d) + 2));
    if (shape->GetInt(0) != x.size(0) || shape->GetInt(1) != x.size(1)) {
      return Invalid(op, "output_shape must keep the batch and channel dims");
    }
  }
  return nn::MaxUnpool(op, x, idx, out, nn::IndexStyle::kFlatRowMajor, padded);
}

}  // namespace kiln::runtime
