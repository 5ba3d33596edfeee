// Kernel registration for the nn op family: ATen's convolution, pooling,
// normalization and upsampling overloads, and the kiln:: ops of
// ir/kiln_schemas_nn.inc (ONNX semantics ATen lacks).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernel_args.h"
#include "runtime/kernels_math.h"
#include "runtime/kernels_nn.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

absl::Status Invalid(const std::string& op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

// An int[] argument with one value per spatial dim: a single value repeats
// (PyTorch's expand_param_if_needed); an empty list gives `if_empty`.
absl::StatusOr<std::vector<int64_t>> PerDim(const std::string& op, Args a, size_t i, size_t n,
                                            const char* name,
                                            std::optional<std::vector<int64_t>> if_empty = {}) {
  ASSIGN_OR_RETURN(std::vector<int64_t> v, IntListArg(op, a, i));
  if (v.empty() && if_empty) return *if_empty;
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  if (v.size() != n) {
    return Invalid(op, absl::StrCat(name, " must have ", n, " values, got ", v.size()));
  }
  return v;
}

// float[]? : nullopt for None.
absl::StatusOr<std::optional<std::vector<double>>> OptionalDoubleListArg(const std::string& op, Args a,
                                                                 size_t i) {
  if (i >= a.size() || a[i].isNone()) return std::optional<std::vector<double>>();
  if (!a[i].isList()) return ArgError(op, i, "a list of floats");
  std::vector<double> v;
  for (const IValue& e : a[i].elements()) {
    if (!e.isNumber()) return ArgError(op, i, "a list of floats");
    v.push_back(e.toNumberAsDouble());
  }
  return std::optional<std::vector<double>>(std::move(v));
}

// float? : 0 for None (the Resize kernel's "no scale given").
absl::StatusOr<double> OptionalScale(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || a[i].isNone()) return 0.0;
  return NumberArg(op, a, i);
}

Result Two(absl::StatusOr<nn::PoolResult> r) {
  if (!r.ok()) return r.status();
  return std::vector<IValue>{IValue::FromTensor(r->values), IValue::FromTensor(r->indices)};
}

Result Three(const absl::StatusOr<nn::NormResult>& r) {
  if (!r.ok()) return r.status();
  return std::vector<IValue>{IValue::FromTensor(r->y), IValue::FromTensor(r->mean),
                             IValue::FromTensor(r->rstd)};
}

// ONNX-style pads (begins then ends) split for n spatial dims.
absl::Status SplitPads(const std::string& op, const std::vector<int64_t>& pads, size_t n,
                       std::vector<int64_t>* begin, std::vector<int64_t>* end) {
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

// The epilogue lists of a fused op (ir/post_ops.h) starting at argument i:
// post_ops, post_scalars, post_operands.
absl::StatusOr<std::vector<ir::PostOp>> PostOpsArgs(const std::string& op, Args a, size_t i) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, StringListArg(op, a, i));
  ASSIGN_OR_RETURN(std::vector<double> scalars, DoubleListArg(op, a, i + 1));
  ASSIGN_OR_RETURN(std::vector<Tensor> operands, TensorListArg(op, a, i + 2));
  absl::StatusOr<std::vector<ir::PostOp>> post = ir::ParsePostOps(names, scalars, operands.size());
  if (!post.ok()) return Invalid(op, post.status().message());
  return post;
}

// ---------------------------------------------------------------- convolution

// (input, weight, bias, stride, pads, dilation, groups) with ONNX-style pads
// (begins then ends): kiln::conv_nd and kiln::conv_post_ops.
absl::StatusOr<Tensor> OnnxConvolution(const std::string& name, Args a) {
  ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
  ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 1));
  ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
  if (w.dim() < 3) return Invalid(name, "weight must have at least 3 dims");
  const size_t n = static_cast<size_t>(w.dim() - 2);
  nn::ConvOptions o;
  ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 3, n, "stride"));
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntListArg(name, a, 4));
  RETURN_IF_ERROR(SplitPads(name, pads, n, &o.pad_begin, &o.pad_end));
  ASSIGN_OR_RETURN(o.dilation, PerDim(name, a, 5, n, "dilation"));
  ASSIGN_OR_RETURN(o.groups, IntArg(name, a, 6));
  return nn::Convolution(name, x, w, b, o);
}

// aten::convolution-style (input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups) starting at argument 0.
Result RunConvolution(const std::string& name, Args a) {
  ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
  ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 1));
  ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
  if (w.dim() < 3) return Invalid(name, "weight must have at least 3 dims");
  const size_t n = static_cast<size_t>(w.dim() - 2);
  nn::ConvOptions o;
  ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 3, n, "stride"));
  ASSIGN_OR_RETURN(o.pad_begin, PerDim(name, a, 4, n, "padding"));
  o.pad_end = o.pad_begin;
  ASSIGN_OR_RETURN(o.dilation, PerDim(name, a, 5, n, "dilation"));
  ASSIGN_OR_RETURN(o.transposed, BoolArg(name, a, 6));
  ASSIGN_OR_RETURN(o.output_padding, PerDim(name, a, 7, n, "output_padding"));
  ASSIGN_OR_RETURN(o.groups, IntArg(name, a, 8));
  return One(nn::Convolution(name, x, w, b, o));
}

// conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups), with
// padding an int list or (".padding" overloads) "valid" / "same".
void AddConvNd(Registrar& r, const std::string& name, size_t n, bool string_padding) {
  r.Add(name, [name, n, string_padding](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
    if (w.dim() != static_cast<int64_t>(n) + 2) {
      return Invalid(name, absl::StrCat("weight must have ", n + 2, " dims, got shape ",
                                        ShapeToString(w.sizes())));
    }
    nn::ConvOptions o;
    ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 3, n, "stride"));
    ASSIGN_OR_RETURN(o.dilation, PerDim(name, a, 5, n, "dilation"));
    ASSIGN_OR_RETURN(o.groups, IntArg(name, a, 6));
    if (string_padding) {
      ASSIGN_OR_RETURN(std::string mode, StringArg(name, a, 4));
      o.pad_begin.assign(n, 0);
      o.pad_end.assign(n, 0);
      if (mode == "same") {
        for (size_t d = 0; d < n; ++d) {
          if (o.stride[d] != 1) return Invalid(name, "padding='same' requires stride 1");
          const int64_t total = o.dilation[d] * (w.size(2 + static_cast<int64_t>(d)) - 1);
          o.pad_begin[d] = total / 2;
          o.pad_end[d] = total - total / 2;
        }
      } else if (mode != "valid") {
        return Invalid(name, absl::StrCat("padding must be 'valid' or 'same', got '", mode, "'"));
      }
    } else {
      ASSIGN_OR_RETURN(o.pad_begin, PerDim(name, a, 4, n, "padding"));
      o.pad_end = o.pad_begin;
    }
    return One(nn::Convolution(name, x, w, b, o));
  });
}

// conv_transpose1d/2d/3d(input, weight, bias, stride, padding, output_padding,
// groups, dilation).
void AddConvTransposeNd(Registrar& r, const std::string& name, size_t n) {
  r.Add(name, [name, n](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
    if (w.dim() != static_cast<int64_t>(n) + 2) {
      return Invalid(name, absl::StrCat("weight must have ", n + 2, " dims, got shape ",
                                        ShapeToString(w.sizes())));
    }
    nn::ConvOptions o;
    o.transposed = true;
    ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 3, n, "stride"));
    ASSIGN_OR_RETURN(o.pad_begin, PerDim(name, a, 4, n, "padding"));
    o.pad_end = o.pad_begin;
    ASSIGN_OR_RETURN(o.output_padding, PerDim(name, a, 5, n, "output_padding"));
    ASSIGN_OR_RETURN(o.groups, IntArg(name, a, 6));
    ASSIGN_OR_RETURN(o.dilation, PerDim(name, a, 7, n, "dilation"));
    for (size_t d = 0; d < n; ++d) {
      if (o.output_padding[d] >= o.stride[d] && o.output_padding[d] >= o.dilation[d]) {
        return Invalid(name, "output_padding must be smaller than stride or dilation");
      }
    }
    return One(nn::Convolution(name, x, w, b, o));
  });
}

void RegisterConvolutions(Registrar& r) {
  for (const char* ov : {"aten::convolution", "aten::_convolution",
                         "aten::_convolution.deprecated"}) {
    const std::string name = ov;
    r.Add(name, [name](Args a) { return RunConvolution(name, a); });
  }
  const char* dims[] = {"1d", "2d", "3d"};
  for (size_t n = 1; n <= 3; ++n) {
    AddConvNd(r, absl::StrCat("aten::conv", dims[n - 1]), n, false);
    AddConvNd(r, absl::StrCat("aten::conv", dims[n - 1], ".padding"), n, true);
  }
  AddConvTransposeNd(r, "aten::conv_transpose1d", 1);
  AddConvTransposeNd(r, "aten::conv_transpose2d.input", 2);
  AddConvTransposeNd(r, "aten::conv_transpose3d.input", 3);

  r.Add("kiln::conv_nd", [](Args a) -> Result { return One(OnnxConvolution("kiln::conv_nd", a)); });
  // The fused library ops: the op's reference kernel, then its epilogue
  // through the kernels of the ops it replaced (kernels_post_ops.cc).
  r.Add("kiln::conv_post_ops", [](Args a) -> Result {
    const std::string name = "kiln::conv_post_ops";
    ASSIGN_OR_RETURN(std::vector<ir::PostOp> post, PostOpsArgs(name, a, 7));
    ASSIGN_OR_RETURN(std::vector<Tensor> operands, TensorListArg(name, a, 9));
    ASSIGN_OR_RETURN(Tensor y, OnnxConvolution(name, a));
    return One(nn::ApplyPostOps(name, std::move(y), post, operands));
  });
  r.Add("kiln::linear_post_ops", [](Args a) -> Result {
    const std::string name = "kiln::linear_post_ops";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(std::vector<ir::PostOp> post, PostOpsArgs(name, a, 3));
    ASSIGN_OR_RETURN(std::vector<Tensor> operands, TensorListArg(name, a, 5));
    ASSIGN_OR_RETURN(Tensor y, Linear(x, w, b));
    return One(nn::ApplyPostOps(name, std::move(y), post, operands));
  });
  // Attention as the chain it replaces (passes/fuse_attention.h).
  r.Add("kiln::attention", [](Args a) -> Result {
    const std::string name = "kiln::attention";
    ASSIGN_OR_RETURN(Tensor q, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor kt, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor v, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<Tensor> mask, OptionalTensorArg(name, a, 3));
    ASSIGN_OR_RETURN(double scale, NumberArg(name, a, 4));
    ASSIGN_OR_RETURN(Tensor s, Matmul(q, kt));
    if (scale != 1.0) {
      ASSIGN_OR_RETURN(s, Binary(BinaryOp::kMul, Operand::FromTensor(s), Operand::Double(scale)));
    }
    if (mask) {
      ASSIGN_OR_RETURN(s, Binary(BinaryOp::kAdd, Operand::FromTensor(s), Operand::FromTensor(*mask)));
    }
    ASSIGN_OR_RETURN(Tensor p, Softmax(s, -1, std::nullopt, /*log=*/false));
    return One(Matmul(p, v));
  });
  r.Add("kiln::conv_transpose_nd", [](Args a) -> Result {
    const std::string name = "kiln::conv_transpose_nd";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
    if (w.dim() < 3) return Invalid(name, "weight must have at least 3 dims");
    const size_t n = static_cast<size_t>(w.dim() - 2);
    nn::ConvOptions o;
    o.transposed = true;
    ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 3, n, "stride"));
    ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntListArg(name, a, 4));
    RETURN_IF_ERROR(SplitPads(name, pads, n, &o.pad_begin, &o.pad_end));
    ASSIGN_OR_RETURN(o.dilation, PerDim(name, a, 5, n, "dilation"));
    ASSIGN_OR_RETURN(o.output_padding,
                     PerDim(name, a, 6, n, "output_padding", std::vector<int64_t>(n, 0)));
    ASSIGN_OR_RETURN(o.groups, IntArg(name, a, 7));
    return One(nn::Convolution(name, x, w, b, o));
  });
  r.Add("kiln::conv_integer", [](Args a) -> Result {
    const std::string name = "kiln::conv_integer";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> xzp, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<Tensor> wzp, OptionalTensorArg(name, a, 3));
    if (w.dim() < 3) return Invalid(name, "weight must have at least 3 dims");
    const size_t n = static_cast<size_t>(w.dim() - 2);
    nn::ConvOptions o;
    ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 4, n, "stride"));
    ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntListArg(name, a, 5));
    RETURN_IF_ERROR(SplitPads(name, pads, n, &o.pad_begin, &o.pad_end));
    ASSIGN_OR_RETURN(o.dilation, PerDim(name, a, 6, n, "dilation"));
    ASSIGN_OR_RETURN(o.groups, IntArg(name, a, 7));
    return One(nn::ConvInteger(name, x, w, xzp, wzp, o));
  });
  r.Add("kiln::qlinear_conv", [](Args a) -> Result {
    const std::string name = "kiln::qlinear_conv";
    nn::QLinearConvInputs in;
    Tensor* slots[] = {&in.x, &in.x_scale, &in.x_zero_point, &in.w,
                       &in.w_scale, &in.w_zero_point, &in.y_scale, &in.y_zero_point};
    for (size_t i = 0; i < 8; ++i) {
      ASSIGN_OR_RETURN(*slots[i], TensorArg(name, a, i));
    }
    ASSIGN_OR_RETURN(in.bias, OptionalTensorArg(name, a, 8));
    if (in.w.dim() < 3) return Invalid(name, "weight must have at least 3 dims");
    const size_t n = static_cast<size_t>(in.w.dim() - 2);
    nn::ConvOptions o;
    ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 9, n, "stride"));
    ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntListArg(name, a, 10));
    RETURN_IF_ERROR(SplitPads(name, pads, n, &o.pad_begin, &o.pad_end));
    ASSIGN_OR_RETURN(o.dilation, PerDim(name, a, 11, n, "dilation"));
    ASSIGN_OR_RETURN(o.groups, IntArg(name, a, 12));
    return One(nn::QLinearConv(name, in, o));
  });
}

// ------------------------------------------------------------------ pooling

// PyTorch's pooling argument checks: [C, *S] or [N, C, *S], pads at most
// half the kernel.
absl::Status CheckTorchPool(const std::string& name, const Tensor& x, size_t n,
                            const nn::PoolOptions& o) {
  if (x.dim() != static_cast<int64_t>(n) + 1 && x.dim() != static_cast<int64_t>(n) + 2) {
    return Invalid(name, absl::StrCat("expected ", n + 1, "-D or ", n + 2,
                                      "-D input, got shape ", ShapeToString(x.sizes())));
  }
  for (size_t d = 0; d < n; ++d) {
    if (o.pad_begin[d] * 2 > o.kernel[d]) {
      return Invalid(name, "pad should be at most half of kernel size");
    }
  }
  return absl::OkStatus();
}

// max_pool{n}d(self, kernel_size, stride=[], padding, dilation, ceil_mode).
void AddMaxPool(Registrar& r, const std::string& name, size_t n, bool with_indices) {
  r.Add(name, [name, n, with_indices](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    nn::PoolOptions o;
    ASSIGN_OR_RETURN(o.kernel, PerDim(name, a, 1, n, "kernel_size"));
    ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 2, n, "stride", o.kernel));
    ASSIGN_OR_RETURN(o.pad_begin, PerDim(name, a, 3, n, "padding"));
    o.pad_end = o.pad_begin;
    ASSIGN_OR_RETURN(o.dilation, PerDim(name, a, 4, n, "dilation"));
    ASSIGN_OR_RETURN(o.ceil_mode, BoolArg(name, a, 5));
    RETURN_IF_ERROR(CheckTorchPool(name, x, n, o));
    absl::StatusOr<nn::PoolResult> res = nn::Pool(name, nn::PoolKind::kMax, x, o);
    if (with_indices) return Two(std::move(res));
    if (!res.ok()) return res.status();
    return One(res->values);
  });
}

// avg_pool{n}d(self, kernel_size, stride=[], padding, ceil_mode,
// count_include_pad[, divisor_override]).
void AddAvgPool(Registrar& r, const std::string& name, size_t n) {
  r.Add(name, [name, n](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    nn::PoolOptions o;
    ASSIGN_OR_RETURN(o.kernel, PerDim(name, a, 1, n, "kernel_size"));
    ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 2, n, "stride", o.kernel));
    ASSIGN_OR_RETURN(o.pad_begin, PerDim(name, a, 3, n, "padding"));
    o.pad_end = o.pad_begin;
    o.dilation.assign(n, 1);
    ASSIGN_OR_RETURN(o.ceil_mode, BoolArg(name, a, 4));
    ASSIGN_OR_RETURN(o.count_include_pad, BoolArg(name, a, 5));
    if (a.size() > 6 && !a[6].isNone()) {
      ASSIGN_OR_RETURN(int64_t div, IntArg(name, a, 6));
      o.divisor_override = div;
    }
    RETURN_IF_ERROR(CheckTorchPool(name, x, n, o));
    absl::StatusOr<nn::PoolResult> res = nn::Pool(name, nn::PoolKind::kAvg, x, o);
    if (!res.ok()) return res.status();
    return One(res->values);
  });
}

void AddAdaptivePool(Registrar& r, const std::string& name, size_t n, bool max) {
  r.Add(name, [name, n, max](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> out, PerDim(name, a, 1, n, "output_size"));
    if (x.dim() != static_cast<int64_t>(n) + 1 && x.dim() != static_cast<int64_t>(n) + 2) {
      return Invalid(name, absl::StrCat("expected ", n + 1, "-D or ", n + 2,
                                        "-D input, got shape ", ShapeToString(x.sizes())));
    }
    absl::StatusOr<nn::PoolResult> res = nn::AdaptivePool(name, max, x, out);
    if (max) return Two(std::move(res));
    if (!res.ok()) return res.status();
    return One(res->values);
  });
}

// kiln::{max,avg,lp}_pool_nd(x, kernel, stride, pads, dilation, ceil_mode, extra).
nn::PoolKind KindOf(const std::string& name) {
  if (name == "kiln::max_pool_nd") return nn::PoolKind::kMax;
  if (name == "kiln::avg_pool_nd") return nn::PoolKind::kAvg;
  return nn::PoolKind::kLp;
}

void RegisterPools(Registrar& r) {
  const char* dims[] = {"1d", "2d", "3d"};
  for (size_t n = 1; n <= 3; ++n) {
    const char* d = dims[n - 1];
    AddMaxPool(r, absl::StrCat("aten::max_pool", d), n, false);
    AddMaxPool(r, absl::StrCat("aten::max_pool", d, "_with_indices"), n, true);
    AddAvgPool(r, absl::StrCat("aten::avg_pool", d), n);
    AddAdaptivePool(r, absl::StrCat("aten::adaptive_avg_pool", d), n, false);
    AddAdaptivePool(r, absl::StrCat("aten::adaptive_max_pool", d), n, true);
  }
  for (const char* ov : {"kiln::max_pool_nd", "kiln::avg_pool_nd", "kiln::lp_pool_nd"}) {
    const std::string name = ov;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      nn::PoolOptions o;
      ASSIGN_OR_RETURN(o.kernel, IntListArg(name, a, 1));
      const size_t n = o.kernel.size();
      if (n == 0 || x.dim() != static_cast<int64_t>(n) + 2) {
        return Invalid(name, absl::StrCat("kernel of ", n, " dims does not fit input of shape ",
                                          ShapeToString(x.sizes())));
      }
      ASSIGN_OR_RETURN(o.stride, PerDim(name, a, 2, n, "stride", std::vector<int64_t>(n, 1)));
      ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntListArg(name, a, 3));
      RETURN_IF_ERROR(SplitPads(name, pads, n, &o.pad_begin, &o.pad_end));
      ASSIGN_OR_RETURN(o.dilation,
                       PerDim(name, a, 4, n, "dilation", std::vector<int64_t>(n, 1)));
      ASSIGN_OR_RETURN(o.ceil_mode, BoolArg(name, a, 5));
      const nn::PoolKind kind = KindOf(name);
      if (kind == nn::PoolKind::kMax) {
        ASSIGN_OR_RETURN(int64_t order, IntArg(name, a, 6));
        if (order != 0 && order != 1) return Invalid(name, "storage_order must be 0 or 1");
        o.index_style = order == 1 ? nn::IndexStyle::kFlatColMajor : nn::IndexStyle::kFlatRowMajor;
        return Two(nn::Pool(name, kind, x, o));
      }
      if (kind == nn::PoolKind::kAvg) {
        ASSIGN_OR_RETURN(o.count_include_pad, BoolArg(name, a, 6));
      } else {
        ASSIGN_OR_RETURN(o.p, NumberArg(name, a, 6));
        if (!(o.p > 0)) return Invalid(name, "p must be positive");
      }
      absl::StatusOr<nn::PoolResult> res = nn::Pool(name, kind, x, o);
      if (!res.ok()) return res.status();
      return One(res->values);
    });
  }
  r.Add("kiln::global_lp_pool", [](Args a) -> Result {
    const std::string name = "kiln::global_lp_pool";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    nn::PoolOptions o;
    ASSIGN_OR_RETURN(o.p, NumberArg(name, a, 1));
    if (!(o.p > 0)) return Invalid(name, "p must be positive");
    if (x.dim() < 3) return Invalid(name, "input must have at least 3 dims");
    o.kernel.assign(x.sizes().begin() + 2, x.sizes().end());
    const size_t n = o.kernel.size();
    o.stride.assign(n, 1);
    o.dilation.assign(n, 1);
    o.pad_begin.assign(n, 0);
    o.pad_end.assign(n, 0);
    absl::StatusOr<nn::PoolResult> res = nn::Pool(name, nn::PoolKind::kLp, x, o);
    if (!res.ok()) return res.status();
    return One(res->values);
  });

  // Unpooling.
  r.Add("aten::max_unpool2d", [](Args a) -> Result {
    const std::string name = "aten::max_unpool2d";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor idx, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::vector<int64_t> out, PerDim(name, a, 2, 2, "output_size"));
    return One(nn::MaxUnpool(name, x, idx, out, nn::IndexStyle::kPlane));
  });
  r.Add("aten::max_unpool3d", [](Args a) -> Result {
    const std::string name = "aten::max_unpool3d";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor idx, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::vector<int64_t> out, PerDim(name, a, 2, 3, "output_size"));
    return One(nn::MaxUnpool(name, x, idx, out, nn::IndexStyle::kPlane));
  });
  r.Add("kiln::max_unpool_nd", [](Args a) -> Result {
    const std::string name = "kiln::max_unpool_nd";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor idx, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::vector<int64_t> kernel, IntListArg(name, a, 2));
    const size_t n = kernel.size();
    if (n == 0 || x.dim() != static_cast<int64_t>(n) + 2) {
      return Invalid(name, absl::StrCat("kernel of ", n, " dims does not fit input of shape ",
                                        ShapeToString(x.sizes())));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> stride,
                     PerDim(name, a, 3, n, "strides", std::vector<int64_t>(n, 1)));
    ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntListArg(name, a, 4));
    std::vector<int64_t> pb, pe;
    RETURN_IF_ERROR(SplitPads(name, pads, n, &pb, &pe));
    ASSIGN_OR_RETURN(std::optional<Tensor> shape, OptionalTensorArg(name, a, 5));
    // Indices address the default output shape; output_shape only pads it.
    std::vector<int64_t> out(n), padded;
    for (size_t d = 0; d < n; ++d) {
      out[d] = (x.size(static_cast<int64_t>(d) + 2) - 1) * stride[d] - pb[d] - pe[d] + kernel[d];
      if (out[d] <= 0) return Invalid(name, "unpooled output size is not positive");
    }
    if (shape && shape->defined()) {
      if (!shape->has_data() || shape->numel() != static_cast<int64_t>(n) + 2) {
        return Invalid(name, absl::StrCat("output_shape must have ", n + 2, " values"));
      }
      for (size_t d = 0; d < n; ++d) padded.push_back(shape->GetInt(static_cast<int64_t>(d) + 2));
      if (shape->GetInt(0) != x.size(0) || shape->GetInt(1) != x.size(1)) {
        return Invalid(name, "output_shape must keep the batch and channel dims");
      }
    }
    return One(nn::MaxUnpool(name, x, idx, out, nn::IndexStyle::kFlatRowMajor, padded));
  });
}

// ------------------------------------------------------------ normalization

void RegisterNorms(Registrar& r) {
  // batch_norm(input, weight, bias, running_mean, running_var, training,
  // momentum, eps, cudnn_enabled); native_batch_norm without cudnn_enabled.
  for (const char* ov : {"aten::batch_norm", "aten::native_batch_norm"}) {
    const std::string name = ov;
    const bool native = name == "aten::native_batch_norm";
    r.Add(name, [name, native](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::optional<Tensor> w, OptionalTensorArg(name, a, 1));
      ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
      ASSIGN_OR_RETURN(std::optional<Tensor> rm, OptionalTensorArg(name, a, 3));
      ASSIGN_OR_RETURN(std::optional<Tensor> rv, OptionalTensorArg(name, a, 4));
      ASSIGN_OR_RETURN(bool training, BoolArg(name, a, 5));
      ASSIGN_OR_RETURN(double eps, NumberArg(name, a, 7));
      // Running-stat updates are side effects on the inputs; the functional
      // reference kernels leave them alone.
      absl::StatusOr<nn::NormResult> res = nn::BatchNorm(name, x, w, b, rm, rv, training, eps);
      if (native) return Three(res);
      if (!res.ok()) return res.status();
      return One(res->y);
    });
  }
  // instance_norm(input, weight, bias, running_mean, running_var,
  // use_input_stats, momentum, eps, cudnn_enabled).
  r.Add("aten::instance_norm", [](Args a) -> Result {
    const std::string name = "aten::instance_norm";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<Tensor> w, OptionalTensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<Tensor> rm, OptionalTensorArg(name, a, 3));
    ASSIGN_OR_RETURN(std::optional<Tensor> rv, OptionalTensorArg(name, a, 4));
    ASSIGN_OR_RETURN(bool use_input_stats, BoolArg(name, a, 5));
    ASSIGN_OR_RETURN(double eps, NumberArg(name, a, 7));
    if (x.dim() < 2) return Invalid(name, "input must have at least 2 dims");
    if (!use_input_stats) {
      ASSIGN_OR_RETURN(nn::NormResult res, nn::BatchNorm(name, x, w, b, rm, rv, false, eps));
      return One(res.y);
    }
    // Each (n, c) plane is one channel of a batch-1 batch norm.
    const int64_t n = x.size(0), c = x.size(1);
    std::vector<int64_t> folded = x.sizes();
    folded.erase(folded.begin());
    folded[0] = n * c;
    folded.insert(folded.begin(), 1);
    ASSIGN_OR_RETURN(Tensor xf, Reshape(x, folded));
    auto repeat = [&](const std::optional<Tensor>& t) -> absl::StatusOr<std::optional<Tensor>> {
      if (!t || !t->defined()) return std::optional<Tensor>();
      if (t->dim() != 1 || t->size(0) != c) {
        return Invalid(name, absl::StrCat("weight and bias must have ", c, " elements"));
      }
      ASSIGN_OR_RETURN(Tensor e, Expand(*t, {n, c}));
      ASSIGN_OR_RETURN(Tensor f, Reshape(e, {n * c}));
      return std::optional<Tensor>(f);
    };
    ASSIGN_OR_RETURN(std::optional<Tensor> wf, repeat(w));
    ASSIGN_OR_RETURN(std::optional<Tensor> bf, repeat(b));
    ASSIGN_OR_RETURN(nn::NormResult res,
                     nn::BatchNorm(name, xf, wf, bf, std::nullopt, std::nullopt, true, eps));
    return One(Reshape(res.y, x.sizes()));
  });
  // layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable);
  // native_layer_norm(input, normalized_shape, weight, bias, eps).
  for (const char* ov : {"aten::layer_norm", "aten::native_layer_norm"}) {
    const std::string name = ov;
    const bool native = name == "aten::native_layer_norm";
    r.Add(name, [name, native](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::vector<int64_t> shape, IntListArg(name, a, 1));
      ASSIGN_OR_RETURN(std::optional<Tensor> w, OptionalTensorArg(name, a, 2));
      ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 3));
      ASSIGN_OR_RETURN(double eps, NumberArg(name, a, 4));
      const int64_t k = static_cast<int64_t>(shape.size());
      if (k == 0 || k > x.dim() ||
          !std::equal(shape.begin(), shape.end(), x.sizes().end() - k)) {
        return Invalid(name, absl::StrCat("normalized_shape ", ShapeToString(shape),
                                          " does not match the end of input shape ",
                                          ShapeToString(x.sizes())));
      }
      for (const std::optional<Tensor>* t : {&w, &b}) {
        if (*t && (*t)->defined() && (*t)->sizes() != shape) {
          return Invalid(name, absl::StrCat("weight and bias must have shape ",
                                            ShapeToString(shape)));
        }
      }
      absl::StatusOr<nn::NormResult> res = nn::LayerNorm(name, x, x.dim() - k, w, b, eps);
      if (native) return Three(res);
      if (!res.ok()) return res.status();
      return One(res->y);
    });
  }
  r.Add("aten::group_norm", [](Args a) -> Result {
    const std::string name = "aten::group_norm";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t groups, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> w, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 3));
    ASSIGN_OR_RETURN(double eps, NumberArg(name, a, 4));
    ASSIGN_OR_RETURN(nn::NormResult res, nn::GroupNorm(name, x, groups, w, b, eps));
    return One(res.y);
  });
  // native_group_norm(input, weight, bias, N, C, HxW, group, eps).
  r.Add("aten::native_group_norm", [](Args a) -> Result {
    const std::string name = "aten::native_group_norm";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<Tensor> w, OptionalTensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t n, IntArg(name, a, 3));
    ASSIGN_OR_RETURN(int64_t c, IntArg(name, a, 4));
    ASSIGN_OR_RETURN(int64_t hw, IntArg(name, a, 5));
    ASSIGN_OR_RETURN(int64_t groups, IntArg(name, a, 6));
    ASSIGN_OR_RETURN(double eps, NumberArg(name, a, 7));
    if (x.dim() < 2 || x.size(0) != n || x.size(1) != c || x.numel() != n * c * hw) {
      return Invalid(name, absl::StrCat("N, C, HxW = ", n, ", ", c, ", ", hw,
                                        " do not match input shape ", ShapeToString(x.sizes())));
    }
    return Three(nn::GroupNorm(name, x, groups, w, b, eps));
  });

  r.Add("kiln::batch_norm_training", [](Args a) -> Result {
    const std::string name = "kiln::batch_norm_training";
    Tensor t[5];
    for (size_t i = 0; i < 5; ++i) {
      ASSIGN_OR_RETURN(t[i], TensorArg(name, a, i));
    }
    ASSIGN_OR_RETURN(double momentum, NumberArg(name, a, 5));
    ASSIGN_OR_RETURN(double eps, NumberArg(name, a, 6));
    ASSIGN_OR_RETURN(nn::BatchNormTrainingResult res,
                     nn::BatchNormOnnxTraining(name, t[0], t[1], t[2], t[3], t[4], momentum, eps));
    return std::vector<IValue>{IValue::FromTensor(res.y), IValue::FromTensor(res.running_mean),
                               IValue::FromTensor(res.running_var)};
  });
  r.Add("kiln::layer_norm", [](Args a) -> Result {
    const std::string name = "kiln::layer_norm";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> w, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<Tensor> b, OptionalTensorArg(name, a, 3));
    ASSIGN_OR_RETURN(double eps, NumberArg(name, a, 4));
    return Three(nn::LayerNorm(name, x, axis, w, b, eps));
  });
  r.Add("kiln::lrn", [](Args a) -> Result {
    const std::string name = "kiln::lrn";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t size, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(double alpha, NumberArg(name, a, 2));
    ASSIGN_OR_RETURN(double beta, NumberArg(name, a, 3));
    ASSIGN_OR_RETURN(double bias, NumberArg(name, a, 4));
    return One(nn::LocalResponseNorm(name, x, size, alpha, beta, bias));
  });
  r.Add("kiln::lp_normalization", [](Args a) -> Result {
    const std::string name = "kiln::lp_normalization";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t p, IntArg(name, a, 2));
    return One(nn::LpNormalize(name, x, axis, p));
  });
  r.Add("kiln::mean_variance_normalization", [](Args a) -> Result {
    const std::string name = "kiln::mean_variance_normalization";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntListArg(name, a, 1));
    return One(nn::MeanVarianceNorm(name, x, axes));
  });
}

// -------------------------------------------------------------- resampling

// Output sizes of PyTorch's upsample over the last n dims: output_size, or
// floor(in * scale).
absl::StatusOr<std::vector<int64_t>> TorchOutSizes(const std::string& name, const Tensor& x,
                                                   size_t n,
                                                   const std::optional<std::vector<int64_t>>& size,
                                                   const std::vector<double>& scales) {
  if (x.dim() != static_cast<int64_t>(n) + 2) {
    return Invalid(name, absl::StrCat("expected a ", n + 2, "-D input, got shape ",
                                      ShapeToString(x.sizes())));
  }
  std::vector<int64_t> out = x.sizes();
  for (size_t d = 0; d < n; ++d) {
    const int64_t in = x.size(static_cast<int64_t>(d) + 2);
    if (size) {
      out[d + 2] = (*size)[d];
    } else {
      if (!(scales[d] > 0) || !(static_cast<double>(in) * scales[d] < 1e12)) {
        return Invalid(name, "scale factors must be positive and finite");
      }
      out[d + 2] = static_cast<int64_t>(std::floor(static_cast<double>(in) * scales[d]));
    }
    if (out[d + 2] <= 0) return Invalid(name, "output sizes must be positive");
  }
  return out;
}

// Registers the fixed-size and .vec overloads of one PyTorch upsample op.
// `align_arg`: whether the schemas carry align_corners (linear / cubic).
void AddUpsample(Registrar& r, const std::string& base, size_t n, nn::ResizeMode mode,
                 bool exact, bool align_arg) {
  auto options = [mode, exact](bool align) {
    nn::ResizeOptions o;
    o.mode = mode;
    if (mode == nn::ResizeMode::kNearest) {
      o.coord = exact ? nn::CoordMode::kTorchNearestExact : nn::CoordMode::kTorchNearest;
    } else {
      o.coord = align ? nn::CoordMode::kTorchLinearAlignCorners : nn::CoordMode::kTorchLinear;
    }
    return o;
  };
  // base(self, output_size, [align_corners,] scales...).
  r.Add(base, [base, n, align_arg, options](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg(base, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> size, PerDim(base, a, 1, n, "output_size"));
    bool align = false;
    size_t next = 2;
    if (align_arg) {
      ASSIGN_OR_RETURN(align, BoolArg(base, a, 2));
      next = 3;
    }
    std::vector<double> scales(x.dim() > 0 ? static_cast<size_t>(x.dim()) : 0, 0.0);
    ASSIGN_OR_RETURN(std::vector<int64_t> out, TorchOutSizes(base, x, n, size, scales));
    for (size_t d = 0; d < n; ++d) {
      ASSIGN_OR_RETURN(scales[d + 2], OptionalScale(base, a, next + d));
    }
    if (align) std::fill(scales.begin(), scales.end(), 0.0);
    return One(nn::Resize(base, x, out, scales, options(align)));
  });
  // base.vec(input, output_size?, [align_corners,] scale_factors?).
  const std::string vec = base + ".vec";
  r.Add(vec, [vec, n, align_arg, options](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg(vec, a, 0));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> size, DimsArg(vec, a, 1));
    bool align = false;
    size_t scale_i = 2;
    if (align_arg) {
      ASSIGN_OR_RETURN(align, BoolArg(vec, a, 2));
      scale_i = 3;
    }
    ASSIGN_OR_RETURN(std::optional<std::vector<double>> factors, OptionalDoubleListArg(vec, a, scale_i));
    if (size.has_value() == factors.has_value()) {
      return Invalid(vec, "exactly one of output_size and scale_factors must be given");
    }
    if ((size && size->size() != n) || (factors && factors->size() != n)) {
      return Invalid(vec, absl::StrCat("output_size / scale_factors must have ", n, " values"));
    }
    std::vector<double> spatial = factors ? *factors : std::vector<double>(n, 0.0);
    ASSIGN_OR_RETURN(std::vector<int64_t> out, TorchOutSizes(vec, x, n, size, spatial));
    std::vector<double> scales(2, 0.0);
    scales.insert(scales.end(), spatial.begin(), spatial.end());
    if (align) std::fill(scales.begin(), scales.end(), 0.0);
    return One(nn::Resize(vec, x, out, scales, options(align)));
  });
}

absl::StatusOr<nn::ResizeOptions> OnnxResizeOptions(const std::string& name, Args a) {
  nn::ResizeOptions o;
  ASSIGN_OR_RETURN(std::string mode, StringArg(name, a, 4));
  ASSIGN_OR_RETURN(std::string coord, StringArg(name, a, 5));
  ASSIGN_OR_RETURN(std::string nearest, StringArg(name, a, 6));
  ASSIGN_OR_RETURN(o.cubic_a, NumberArg(name, a, 7));
  ASSIGN_OR_RETURN(o.exclude_outside, BoolArg(name, a, 8));
  ASSIGN_OR_RETURN(o.extrapolation_value, NumberArg(name, a, 9));
  if (mode == "nearest") {
    o.mode = nn::ResizeMode::kNearest;
  } else if (mode == "linear" || mode == "bilinear" || mode == "trilinear") {
    o.mode = nn::ResizeMode::kLinear;
  } else if (mode == "cubic") {
    o.mode = nn::ResizeMode::kCubic;
  } else {
    return Invalid(name, absl::StrCat("unknown mode '", mode, "'"));
  }
  const std::pair<const char*, nn::CoordMode> coords[] = {
      {"half_pixel", nn::CoordMode::kHalfPixel},
      {"pytorch_half_pixel", nn::CoordMode::kPytorchHalfPixel},
      {"align_corners", nn::CoordMode::kAlignCorners},
      {"asymmetric", nn::CoordMode::kAsymmetric},
      {"tf_half_pixel_for_nn", nn::CoordMode::kTfHalfPixelForNn},
      {"half_pixel_symmetric", nn::CoordMode::kHalfPixelSymmetric},
      {"tf_crop_and_resize", nn::CoordMode::kTfCropAndResize}};
  bool found = false;
  for (const auto& [s, m] : coords) {
    if (coord == s) {
      o.coord = m;
      found = true;
    }
  }
  if (!found) {
    return Invalid(name, absl::StrCat("unknown coordinate_transformation_mode '", coord, "'"));
  }
  const std::pair<const char*, nn::NearestMode> nearests[] = {
      {"round_prefer_floor", nn::NearestMode::kRoundPreferFloor},
      {"round_prefer_ceil", nn::NearestMode::kRoundPreferCeil},
      {"floor", nn::NearestMode::kFloor},
      {"ceil", nn::NearestMode::kCeil},
      {"simple", nn::NearestMode::kSimple}};
  found = false;
  for (const auto& [s, m] : nearests) {
    if (nearest == s) {
      o.nearest = m;
      found = true;
    }
  }
  if (!found) return Invalid(name, absl::StrCat("unknown nearest_mode '", nearest, "'"));
  return o;
}

void RegisterResampling(Registrar& r) {
  const char* dims[] = {"1d", "2d", "3d"};
  for (size_t n = 1; n <= 3; ++n) {
    AddUpsample(r, absl::StrCat("aten::upsample_nearest", dims[n - 1]), n,
                nn::ResizeMode::kNearest, false, false);
    AddUpsample(r, absl::StrCat("aten::_upsample_nearest_exact", dims[n - 1]), n,
                nn::ResizeMode::kNearest, true, false);
  }
  AddUpsample(r, "aten::upsample_linear1d", 1, nn::ResizeMode::kLinear, false, true);
  AddUpsample(r, "aten::upsample_bilinear2d", 2, nn::ResizeMode::kLinear, false, true);
  AddUpsample(r, "aten::upsample_trilinear3d", 3, nn::ResizeMode::kLinear, false, true);
  AddUpsample(r, "aten::upsample_bicubic2d", 2, nn::ResizeMode::kCubic, false, true);

  // kiln::resize(x, roi?, scales?, sizes?, mode, coordinate_transformation_mode,
  // nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value).
  r.Add("kiln::resize", [](Args a) -> Result {
    const std::string name = "kiln::resize";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<Tensor> roi, OptionalTensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> scales_t, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<Tensor> sizes_t, OptionalTensorArg(name, a, 3));
    ASSIGN_OR_RETURN(nn::ResizeOptions o, OnnxResizeOptions(name, a));
    const int64_t rank = x.dim();
    // ONNX passes empty tensors for unused inputs.
    auto present = [](const std::optional<Tensor>& t) {
      return t && t->defined() && t->has_data() && t->numel() > 0;
    };
    std::vector<int64_t> out(static_cast<size_t>(rank));
    std::vector<double> scales(static_cast<size_t>(rank));
    if (present(sizes_t)) {
      if (sizes_t->numel() != rank) {
        return Invalid(name, absl::StrCat("sizes must have ", rank, " values"));
      }
      for (int64_t d = 0; d < rank; ++d) {
        out[d] = sizes_t->GetInt(d);
        if (out[d] < 0) return Invalid(name, "sizes must be non-negative");
        scales[d] = x.size(d) > 0 ? static_cast<double>(out[d]) / static_cast<double>(x.size(d))
                                  : 1.0;
      }
    } else if (present(scales_t)) {
      if (scales_t->numel() != rank) {
        return Invalid(name, absl::StrCat("scales must have ", rank, " values"));
      }
      for (int64_t d = 0; d < rank; ++d) {
        scales[d] = scales_t->GetDouble(d);
        if (!(scales[d] > 0) || !std::isfinite(scales[d])) {
          return Invalid(name, "scales must be positive");
        }
        const double size = scales[d] * static_cast<double>(x.size(d));
        if (size > 1e15) return Invalid(name, "scaled size is too large");
        out[d] = static_cast<int64_t>(size);
      }
    } else {
      return Invalid(name, "one of scales and sizes must be given");
    }
    if (present(roi)) {
      for (int64_t i = 0; i < roi->numel(); ++i) o.roi.push_back(roi->GetDouble(i));
    }
    return One(nn::Resize(name, x, out, scales, o));
  });

  r.Add("aten::grid_sampler", [](Args a) -> Result {
    const std::string name = "aten::grid_sampler";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor grid, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t interp, IntArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t padding, IntArg(name, a, 3));
    ASSIGN_OR_RETURN(bool align, BoolArg(name, a, 4));
    if (x.dim() == 5) return absl::UnimplementedError(name + ": 3-D grid sampling");
    return One(nn::GridSample2d(name, x, grid, interp, padding, align));
  });
  r.Add("kiln::roi_align", [](Args a) -> Result {
    const std::string name = "kiln::roi_align";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor rois, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor idx, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(std::string mode, StringArg(name, a, 3));
    nn::RoiAlignOptions o;
    ASSIGN_OR_RETURN(o.output_height, IntArg(name, a, 4));
    ASSIGN_OR_RETURN(o.output_width, IntArg(name, a, 5));
    ASSIGN_OR_RETURN(o.sampling_ratio, IntArg(name, a, 6));
    ASSIGN_OR_RETURN(o.spatial_scale, NumberArg(name, a, 7));
    ASSIGN_OR_RETURN(std::string coord, StringArg(name, a, 8));
    if (mode != "avg" && mode != "max") return Invalid(name, "mode must be 'avg' or 'max'");
    if (coord != "half_pixel" && coord != "output_half_pixel") {
      return Invalid(name, "coordinate_transformation_mode must be half_pixel or output_half_pixel");
    }
    o.max_mode = mode == "max";
    o.half_pixel = coord == "half_pixel";
    return One(nn::RoiAlign(name, x, rois, idx, o));
  });

  r.Add("aten::pixel_shuffle", [](Args a) -> Result {
    const std::string name = "aten::pixel_shuffle";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t f, IntArg(name, a, 1));
    return One(nn::DepthToSpace(name, x, f, /*dcr=*/false));
  });
  r.Add("aten::pixel_unshuffle", [](Args a) -> Result {
    const std::string name = "aten::pixel_unshuffle";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t f, IntArg(name, a, 1));
    return One(nn::SpaceToDepth(name, x, f, /*dcr=*/false));
  });
  r.Add("kiln::depth_to_space", [](Args a) -> Result {
    const std::string name = "kiln::depth_to_space";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t f, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(std::string mode, StringArg(name, a, 2));
    if (mode != "DCR" && mode != "CRD") return Invalid(name, "mode must be DCR or CRD");
    if (x.dim() != 4) return Invalid(name, "input must be 4-D");
    return One(nn::DepthToSpace(name, x, f, mode == "DCR"));
  });
  r.Add("kiln::space_to_depth", [](Args a) -> Result {
    const std::string name = "kiln::space_to_depth";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t f, IntArg(name, a, 1));
    if (x.dim() != 4) return Invalid(name, "input must be 4-D");
    return One(nn::SpaceToDepth(name, x, f, /*dcr=*/true));
  });
}

}  // namespace

void RegisterNnKernels(Registrar& r) {
  RegisterConvolutions(r);
  RegisterPools(r);
  RegisterNorms(r);
  RegisterResampling(r);
}

}  // namespace kiln::runtime
