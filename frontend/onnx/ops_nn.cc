// ONNX converters of the nn family: convolution, pooling, normalization and
// resampling. Where ONNX's semantics equal ATen's (symmetric pads, eval batch
// norm, CRD depth-to-space, GridSample...) the converters emit the aten op;
// otherwise they emit kiln:: ops (asymmetric pads, ONNX pooling indices,
// Resize's coordinate modes, ...), defined by rows in ops/defs/.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops_families.h"
#include "ir/ir.h"
#include "ir/type.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::Value;

Value* InputOrNone(ConvertContext& c, int i) {
  Value* v = c.input(i);
  return v != nullptr ? v : c.b().None();
}

absl::Status SetOutputs(ConvertContext& c, const std::vector<Value*>& outs) {
  for (size_t i = 0; i < outs.size() && static_cast<int>(i) < c.num_outputs(); ++i) {
    RETURN_IF_ERROR(c.SetOutput(static_cast<int>(i), outs[i]));
  }
  return absl::OkStatus();
}

// The static size of each of input i's `n` trailing (spatial) dims, or
// nullopt when shape inference did not give them all.
std::optional<std::vector<int64_t>> SpatialSizes(ConvertContext& c, int i, size_t n) {
  ir::TensorInfo info = c.InputInfo(i);
  if (!info.sizes || info.sizes->size() < n) return std::nullopt;
  std::vector<int64_t> out;
  for (size_t d = info.sizes->size() - n; d < info.sizes->size(); ++d) {
    if (!(*info.sizes)[d]) return std::nullopt;
    out.push_back(*(*info.sizes)[d]);
  }
  return out;
}

// A per-spatial-dim attribute (strides, dilations...): `def` for each dim
// when absent; an error when its length is wrong or a value is below `min`.
absl::StatusOr<std::vector<int64_t>> PerDimAttr(ConvertContext& c, absl::string_view name,
                                                size_t n, int64_t def, int64_t min) {
  std::vector<int64_t> v = c.AttrInts(name, std::vector<int64_t>(n, def));
  if (v.empty()) v.assign(n, def);
  if (v.size() != n) {
    return c.Error(absl::StrCat("attribute '", name, "' must have ", n, " values, got ",
                                v.size()));
  }
  for (int64_t e : v) {
    if (e < min) {
      return c.Error(absl::StrCat("attribute '", name, "' values must be >= ", min, ", got ", e));
    }
  }
  return v;
}

// Begin and end pads of a Conv / pool node: explicit `pads`, or derived from
// auto_pad (SAME_* needs the static input size). `extent`: the dilated
// kernel extents.
absl::Status ComputePads(ConvertContext& c, size_t n, const std::vector<int64_t>& extent,
                         const std::vector<int64_t>& strides, std::vector<int64_t>* begin,
                         std::vector<int64_t>* end) {
  const std::string auto_pad = c.AttrString("auto_pad", "NOTSET");
  begin->assign(n, 0);
  end->assign(n, 0);
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    std::vector<int64_t> pads = c.AttrInts("pads");
    if (pads.empty()) return absl::OkStatus();
    if (pads.size() != 2 * n) {
      return c.Error(absl::StrCat("attribute 'pads' must have ", 2 * n, " values, got ",
                                  pads.size()));
    }
    for (size_t d = 0; d < n; ++d) {
      (*begin)[d] = pads[d];
      (*end)[d] = pads[n + d];
      if (pads[d] < 0 || pads[n + d] < 0) return c.Error("pads must be non-negative");
    }
    return absl::OkStatus();
  }
  if (auto_pad == "VALID") return absl::OkStatus();
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return c.Error(absl::StrCat("unknown auto_pad '", auto_pad, "'"));
  }
  std::optional<std::vector<int64_t>> in = SpatialSizes(c, 0, n);
  if (!in) return c.Unsupported("auto_pad SAME_* needs the input's static spatial sizes");
  for (size_t d = 0; d < n; ++d) {
    const int64_t out = ((*in)[d] + strides[d] - 1) / strides[d];
    const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + extent[d] - (*in)[d]);
    const int64_t small = total / 2;
    (*begin)[d] = auto_pad == "SAME_UPPER" ? small : total - small;
    (*end)[d] = total - (*begin)[d];
  }
  return absl::OkStatus();
}

std::vector<int64_t> Concat(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> r = a;
  r.insert(r.end(), b.begin(), b.end());
  return r;
}

// Kernel sizes: the kernel_shape attribute, else weight input `w`'s static
// trailing dims.
absl::StatusOr<std::vector<int64_t>> KernelShape(ConvertContext& c, int w, size_t n) {
  if (c.HasAttr("kernel_shape")) return PerDimAttr(c, "kernel_shape", n, 1, 1);
  std::optional<std::vector<int64_t>> k = SpatialSizes(c, w, n);
  if (!k) return c.Unsupported("needs kernel_shape or a weight of static shape");
  return *k;
}

// The number of spatial dims: from kernel_shape, else the weight's rank,
// else the input's rank.
absl::StatusOr<size_t> SpatialRank(ConvertContext& c, int weight_input) {
  if (c.HasAttr("kernel_shape")) return c.AttrInts("kernel_shape").size();
  if (weight_input >= 0) {
    if (std::optional<size_t> r = c.InputInfo(weight_input).rank(); r && *r >= 3) return *r - 2;
  }
  ASSIGN_OR_RETURN(int64_t r, c.InputRank(0));
  if (r < 3) return c.Error(absl::StrCat("input must have rank >= 3, got ", r));
  return static_cast<size_t>(r - 2);
}

struct ConvAttrs {
  size_t n = 0;
  std::vector<int64_t> strides, dilations, begin, end;
  int64_t group = 1;
};

absl::StatusOr<ConvAttrs> ReadConvAttrs(ConvertContext& c, int weight_input) {
  ConvAttrs a;
  ASSIGN_OR_RETURN(a.n, SpatialRank(c, weight_input));
  if (a.n == 0) return c.Error("needs at least one spatial dim");
  ASSIGN_OR_RETURN(a.strides, PerDimAttr(c, "strides", a.n, 1, 1));
  ASSIGN_OR_RETURN(a.dilations, PerDimAttr(c, "dilations", a.n, 1, 1));
  a.group = c.AttrInt("group", 1);
  if (a.group <= 0) return c.Error(absl::StrCat("group must be positive, got ", a.group));
  const std::string auto_pad = c.AttrString("auto_pad", "NOTSET");
  std::vector<int64_t> extent(a.n, 1);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    ASSIGN_OR_RETURN(std::vector<int64_t> k, KernelShape(c, weight_input, a.n));
    for (size_t d = 0; d < a.n; ++d) extent[d] = (k[d] - 1) * a.dilations[d] + 1;
  }
  RETURN_IF_ERROR(ComputePads(c, a.n, extent, a.strides, &a.begin, &a.end));
  return a;
}

absl::Status ConvertConv(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * w, c.RequiredInput(1));
  ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(c, 1));
  Value* y;
  if (a.begin == a.end) {
    ASSIGN_OR_RETURN(y, b.Op("aten::convolution",
                             {x, w, InputOrNone(c, 2), b.IntList(a.strides), b.IntList(a.begin),
                              b.IntList(a.dilations), b.Bool(false),
                              b.IntList(std::vector<int64_t>(a.n, 0)), b.Int(a.group)}));
  } else {
    ASSIGN_OR_RETURN(y, b.Op("kiln::conv_nd", {x, w, InputOrNone(c, 2), b.IntList(a.strides),
                                               b.IntList(Concat(a.begin, a.end)),
                                               b.IntList(a.dilations), b.Int(a.group)}));
  }
  return c.SetOutput(0, y);
}

absl::Status ConvertConvTranspose(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * w, c.RequiredInput(1));
  ASSIGN_OR_RETURN(size_t n, SpatialRank(c, 1));
  if (n == 0) return c.Error("needs at least one spatial dim");
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, PerDimAttr(c, "strides", n, 1, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> dilations, PerDimAttr(c, "dilations", n, 1, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> out_pad, PerDimAttr(c, "output_padding", n, 0, 0));
  const int64_t group = c.AttrInt("group", 1);
  if (group <= 0) return c.Error(absl::StrCat("group must be positive, got ", group));
  const std::string auto_pad = c.AttrString("auto_pad", "NOTSET");
  std::vector<int64_t> begin(n, 0), end(n, 0);
  std::vector<int64_t> output_shape = c.AttrInts("output_shape");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!output_shape.empty() || same) {
    // pads follow from the wanted output size (the spec's total_padding).
    std::optional<std::vector<int64_t>> in = SpatialSizes(c, 0, n);
    if (!in) return c.Unsupported("output_shape / auto_pad needs the input's static spatial sizes");
    ASSIGN_OR_RETURN(std::vector<int64_t> k, KernelShape(c, 1, n));
    if (output_shape.size() == n + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    if (!output_shape.empty() && output_shape.size() != n) {
      return c.Error(absl::StrCat("output_shape must have ", n, " values"));
    }
    for (size_t d = 0; d < n; ++d) {
      const int64_t want = output_shape.empty() ? (*in)[d] * strides[d] : output_shape[d];
      const int64_t total =
          strides[d] * ((*in)[d] - 1) + out_pad[d] + (k[d] - 1) * dilations[d] + 1 - want;
      if (total < 0) {
        // A larger output than the full one: zeros at the end.
        out_pad[d] -= total;
        continue;
      }
      const bool upper = auto_pad == "SAME_UPPER";
      begin[d] = upper ? total / 2 : total - total / 2;
      end[d] = total - begin[d];
    }
  } else if (auto_pad == "NOTSET" || auto_pad.empty()) {
    std::vector<int64_t> pads = c.AttrInts("pads");
    if (!pads.empty()) {
      if (pads.size() != 2 * n) return c.Error(absl::StrCat("pads must have ", 2 * n, " values"));
      for (size_t d = 0; d < n; ++d) {
        begin[d] = pads[d];
        end[d] = pads[n + d];
      }
    }
  } else if (auto_pad != "VALID") {
    return c.Error(absl::StrCat("unknown auto_pad '", auto_pad, "'"));
  }
  bool torch_ok = begin == end;
  for (size_t d = 0; d < n; ++d) {
    if (begin[d] < 0) return c.Error("pads must be non-negative");
    if (out_pad[d] >= strides[d] && out_pad[d] >= dilations[d]) torch_ok = false;
  }
  Value* y;
  if (torch_ok) {
    ASSIGN_OR_RETURN(y, b.Op("aten::convolution",
                             {x, w, InputOrNone(c, 2), b.IntList(strides), b.IntList(begin),
                              b.IntList(dilations), b.Bool(true), b.IntList(out_pad),
                              b.Int(group)}));
  } else {
    ASSIGN_OR_RETURN(y, b.Op("kiln::conv_transpose_nd",
                             {x, w, InputOrNone(c, 2), b.IntList(strides),
                              b.IntList(Concat(begin, end)), b.IntList(dilations),
                              b.IntList(out_pad), b.Int(group)}));
  }
  return c.SetOutput(0, y);
}

absl::Status ConvertConvInteger(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * w, c.RequiredInput(1));
  ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(c, 1));
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::conv_integer",
                                   {x, w, InputOrNone(c, 2), InputOrNone(c, 3),
                                    b.IntList(a.strides), b.IntList(Concat(a.begin, a.end)),
                                    b.IntList(a.dilations), b.Int(a.group)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertQLinearConv(ConvertContext& c) {
  GraphBuilder& b = c.b();
  std::vector<Value*> args;
  for (int i = 0; i < 8; ++i) {
    ASSIGN_OR_RETURN(Value * v, c.RequiredInput(i));
    args.push_back(v);
  }
  args.push_back(InputOrNone(c, 8));
  ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(c, 3));
  args.push_back(b.IntList(a.strides));
  args.push_back(b.IntList(Concat(a.begin, a.end)));
  args.push_back(b.IntList(a.dilations));
  args.push_back(b.Int(a.group));
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::qlinear_conv", args));
  return c.SetOutput(0, y);
}

// ------------------------------------------------------------------ pooling

struct PoolAttrs {
  size_t n = 0;
  std::vector<int64_t> kernel, strides, dilations, begin, end;
  bool ceil_mode = false;
};

absl::StatusOr<PoolAttrs> ReadPoolAttrs(ConvertContext& c) {
  PoolAttrs a;
  ASSIGN_OR_RETURN(a.kernel, c.RequiredAttrInts("kernel_shape"));
  a.n = a.kernel.size();
  if (a.n == 0) return c.Error("kernel_shape must not be empty");
  for (int64_t k : a.kernel) {
    if (k <= 0) return c.Error(absl::StrCat("kernel_shape values must be positive, got ", k));
  }
  ASSIGN_OR_RETURN(a.strides, PerDimAttr(c, "strides", a.n, 1, 1));
  ASSIGN_OR_RETURN(a.dilations, PerDimAttr(c, "dilations", a.n, 1, 1));
  a.ceil_mode = c.AttrInt("ceil_mode", 0) != 0;
  std::vector<int64_t> extent(a.n);
  for (size_t d = 0; d < a.n; ++d) extent[d] = (a.kernel[d] - 1) * a.dilations[d] + 1;
  RETURN_IF_ERROR(ComputePads(c, a.n, extent, a.strides, &a.begin, &a.end));
  return a;
}

// Whether ATen's max_pool / avg_pool express the node: 1-3 spatial dims of
// a [N, C, *S] input, symmetric pads of at most half the kernel.
bool TorchPoolable(ConvertContext& c, const PoolAttrs& a) {
  if (a.n > 3 || a.begin != a.end) return false;
  std::optional<size_t> rank = c.InputInfo(0).rank();
  if (!rank || *rank != a.n + 2) return false;
  for (size_t d = 0; d < a.n; ++d) {
    if (a.begin[d] * 2 > a.kernel[d]) return false;
  }
  return true;
}

absl::Status ConvertMaxPool(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(PoolAttrs a, ReadPoolAttrs(c));
  const int64_t order = c.AttrInt("storage_order", 0);
  if (order != 0 && order != 1) return c.Error("storage_order must be 0 or 1");
  if (!c.has_output(1) && TorchPoolable(c, a)) {
    ASSIGN_OR_RETURN(Value * y, b.Op(absl::StrCat("aten::max_pool", a.n, "d"),
                                     {x, b.IntList(a.kernel), b.IntList(a.strides),
                                      b.IntList(a.begin), b.IntList(a.dilations),
                                      b.Bool(a.ceil_mode)}));
    return c.SetOutput(0, y);
  }
  ASSIGN_OR_RETURN(std::vector<Value*> outs,
                   b.OpN("kiln::max_pool_nd",
                         {x, b.IntList(a.kernel), b.IntList(a.strides),
                          b.IntList(Concat(a.begin, a.end)), b.IntList(a.dilations),
                          b.Bool(a.ceil_mode), b.Int(order)},
                         2));
  return SetOutputs(c, outs);
}

absl::Status ConvertAveragePool(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(PoolAttrs a, ReadPoolAttrs(c));
  const bool count_include_pad = c.AttrInt("count_include_pad", 0) != 0;
  bool dilated = false;
  for (int64_t d : a.dilations) dilated |= d != 1;
  Value* y;
  if (!dilated && TorchPoolable(c, a)) {
    std::vector<Value*> args = {x, b.IntList(a.kernel), b.IntList(a.strides), b.IntList(a.begin),
                                b.Bool(a.ceil_mode), b.Bool(count_include_pad)};
    ASSIGN_OR_RETURN(y, b.Op(absl::StrCat("aten::avg_pool", a.n, "d"), args));
  } else {
    ASSIGN_OR_RETURN(y, b.Op("kiln::avg_pool_nd",
                             {x, b.IntList(a.kernel), b.IntList(a.strides),
                              b.IntList(Concat(a.begin, a.end)), b.IntList(a.dilations),
                              b.Bool(a.ceil_mode), b.Bool(count_include_pad)}));
  }
  return c.SetOutput(0, y);
}

// LpPool's / GlobalLpPool's p: a float attribute in opset 1, an int since 2.
double LpAttr(ConvertContext& c) {
  const onnx::AttributeProto* a = c.FindAttr("p");
  if (a == nullptr) return 2.0;
  return a->has_f() ? static_cast<double>(a->f()) : static_cast<double>(a->i());
}

absl::Status ConvertLpPool(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(PoolAttrs a, ReadPoolAttrs(c));
  const double p = LpAttr(c);
  if (!(p > 0)) return c.Error("p must be positive");
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::lp_pool_nd",
                                   {x, b.IntList(a.kernel), b.IntList(a.strides),
                                    b.IntList(Concat(a.begin, a.end)), b.IntList(a.dilations),
                                    b.Bool(a.ceil_mode), b.Double(p)}));
  return c.SetOutput(0, y);
}

// GlobalAveragePool / GlobalMaxPool: a keepdim reduction over the spatial dims.
absl::Status ConvertGlobalPool(ConvertContext& c, const char* reduction) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t rank, c.InputRank(0));
  if (rank < 3) return c.Error(absl::StrCat("input must have rank >= 3, got ", rank));
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
  ASSIGN_OR_RETURN(Value * y, b.Op(reduction, {x, b.IntList(dims), b.Bool(true)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertMaxUnpool(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * idx, c.RequiredInput(1));
  ASSIGN_OR_RETURN(std::vector<int64_t> kernel, c.RequiredAttrInts("kernel_shape"));
  const size_t n = kernel.size();
  if (n == 0) return c.Error("kernel_shape must not be empty");
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, PerDimAttr(c, "strides", n, 1, 1));
  std::vector<int64_t> pads = c.AttrInts("pads");
  if (!pads.empty() && pads.size() != 2 * n) {
    return c.Error(absl::StrCat("pads must have ", 2 * n, " values"));
  }
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::max_unpool_nd",
                                   {x, idx, b.IntList(kernel), b.IntList(strides),
                                    b.IntList(pads), InputOrNone(c, 2)}));
  return c.SetOutput(0, y);
}

// ------------------------------------------------------------ normalization

absl::Status ConvertBatchNorm(ConvertContext& c) {
  GraphBuilder& b = c.b();
  std::vector<Value*> in;
  for (int i = 0; i < 5; ++i) {
    ASSIGN_OR_RETURN(Value * v, c.RequiredInput(i));
    in.push_back(v);
  }
  if (c.opset() < 9 && c.AttrInt("spatial", 1) == 0) {
    return c.Unsupported("spatial=0 (per-activation statistics)");
  }
  const double eps = c.AttrFloat("epsilon", 1e-5f);
  const double momentum = c.AttrFloat("momentum", 0.9f);
  bool training;
  if (c.opset() >= 14) {
    training = c.AttrInt("training_mode", 0) != 0;
  } else {
    // Before opset 14, asking for the statistics outputs means training.
    training = c.has_output(1) || c.has_output(2) || c.has_output(3) || c.has_output(4);
    if (c.opset() < 7 && c.AttrInt("is_test", 0) != 0) training = false;
  }
  if (!training) {
    ASSIGN_OR_RETURN(Value * y, b.Op("aten::batch_norm",
                                     {in[0], in[1], in[2], in[3], in[4], b.Bool(false),
                                      b.Double(1 - momentum), b.Double(eps), b.Bool(false)}));
    return c.SetOutput(0, y);
  }
  if (c.has_output(3) || c.has_output(4)) {
    return c.Unsupported("the saved_mean / saved_var training outputs");
  }
  ASSIGN_OR_RETURN(std::vector<Value*> outs,
                   b.OpN("kiln::batch_norm_training",
                         {in[0], in[1], in[2], in[3], in[4], b.Double(momentum), b.Double(eps)},
                         3));
  return SetOutputs(c, outs);
}

absl::Status ConvertInstanceNorm(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * scale, c.RequiredInput(1));
  ASSIGN_OR_RETURN(Value * bias, c.RequiredInput(2));
  const double eps = c.AttrFloat("epsilon", 1e-5f);
  ASSIGN_OR_RETURN(Value * y, b.Op("aten::instance_norm",
                                   {x, scale, bias, b.None(), b.None(), b.Bool(true),
                                    b.Double(0.1), b.Double(eps), b.Bool(false)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertLayerNorm(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * scale, c.RequiredInput(1));
  const int64_t axis = c.AttrInt("axis", -1);
  const double eps = c.AttrFloat("epsilon", 1e-5f);
  // ATen's native_layer_norm when the normalized shape is static and the
  // scale / bias have exactly that shape; kiln::layer_norm (axis-based,
  // broadcasting scale) otherwise.
  std::optional<std::vector<int64_t>> norm_shape;
  if (std::optional<size_t> rank = c.InputInfo(0).rank()) {
    const int64_t r = static_cast<int64_t>(*rank);
    const int64_t ax = axis < 0 ? axis + r : axis;
    if (ax < 0 || ax >= r) return c.Error(absl::StrCat("axis ", axis, " out of range"));
    norm_shape = SpatialSizes(c, 0, static_cast<size_t>(r - ax));
    for (int i = 1; i <= 2 && norm_shape; ++i) {
      if (!c.has_input(i)) continue;
      if (SpatialSizes(c, i, norm_shape->size()) != norm_shape ||
          c.InputInfo(i).rank() != norm_shape->size()) {
        norm_shape.reset();
      }
    }
  }
  std::vector<Value*> outs;
  if (norm_shape) {
    ASSIGN_OR_RETURN(outs, b.OpN("aten::native_layer_norm",
                                 {x, b.IntList(*norm_shape), scale, InputOrNone(c, 2),
                                  b.Double(eps)},
                                 3));
  } else {
    ASSIGN_OR_RETURN(outs, b.OpN("kiln::layer_norm",
                                 {x, b.Int(axis), scale, InputOrNone(c, 2), b.Double(eps)}, 3));
  }
  return SetOutputs(c, outs);
}

absl::Status ConvertLpNormalization(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * y, c.b().Op("kiln::lp_normalization",
                                       {x, c.b().Int(c.AttrInt("axis", -1)),
                                        c.b().Int(c.AttrInt("p", 2))}));
  return c.SetOutput(0, y);
}

absl::Status ConvertLrn(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t size, c.RequiredAttrInt("size"));
  if (size <= 0) return c.Error(absl::StrCat("size must be positive, got ", size));
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::lrn", {x, b.Int(size),
                                                 b.Double(c.AttrFloat("alpha", 1e-4f)),
                                                 b.Double(c.AttrFloat("beta", 0.75f)),
                                                 b.Double(c.AttrFloat("bias", 1.0f))}));
  return c.SetOutput(0, y);
}

absl::Status ConvertMvn(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  std::vector<int64_t> axes = c.AttrInts("axes", {0, 2, 3});
  ASSIGN_OR_RETURN(Value * y, c.b().Op("kiln::mean_variance_normalization",
                                       {x, c.b().IntList(axes)}));
  return c.SetOutput(0, y);
}

// -------------------------------------------------------------- resampling

absl::Status EmitResize(ConvertContext& c, Value* x, Value* roi, Value* scales, Value* sizes,
                        const std::string& mode, const std::string& coord,
                        const std::string& nearest) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::resize",
                                   {x, roi, scales, sizes, b.Str(mode), b.Str(coord),
                                    b.Str(nearest),
                                    b.Double(c.AttrFloat("cubic_coeff_a", -0.75f)),
                                    b.Bool(c.AttrInt("exclude_outside", 0) != 0),
                                    b.Double(c.AttrFloat("extrapolation_value", 0.0f))}));
  return c.SetOutput(0, y);
}

// Resize-10 and Upsample: asymmetric coordinates, nearest picks floor when
// upsampling (onnxruntime's behaviour, which the tests encode).
absl::Status ConvertResize10(ConvertContext& c, Value* scales) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  std::string mode = c.AttrString("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear") {
    return c.Error(absl::StrCat("unknown mode '", mode, "'"));
  }
  return EmitResize(c, x, c.b().None(), scales, c.b().None(), mode, "asymmetric", "simple");
}

absl::Status ConvertResize11(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  if (c.opset() >= 18) {
    if (c.AttrInt("antialias", 0) != 0) return c.Unsupported("antialias");
    if (c.HasAttr("axes")) return c.Unsupported("the axes attribute");
    if (c.AttrString("keep_aspect_ratio_policy", "stretch") != "stretch") {
      return c.Unsupported("keep_aspect_ratio_policy other than stretch");
    }
  }
  const std::string mode = c.AttrString("mode", "nearest");
  const std::string coord = c.AttrString("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = c.AttrString("nearest_mode", "round_prefer_floor");
  return EmitResize(c, x, InputOrNone(c, 1), InputOrNone(c, 2), InputOrNone(c, 3), mode, coord,
                    nearest);
}

absl::Status ConvertGridSample(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * grid, c.RequiredInput(1));
  const std::string mode = c.AttrString("mode", "bilinear");
  const std::string padding = c.AttrString("padding_mode", "zeros");
  int64_t m, p;
  if (mode == "bilinear" || mode == "linear") m = 0;
  else if (mode == "nearest") m = 1;
  else if (mode == "bicubic" || mode == "cubic") m = 2;
  else return c.Error(absl::StrCat("unknown mode '", mode, "'"));
  if (padding == "zeros") p = 0;
  else if (padding == "border") p = 1;
  else if (padding == "reflection") p = 2;
  else return c.Error(absl::StrCat("unknown padding_mode '", padding, "'"));
  ASSIGN_OR_RETURN(Value * y, b.Op("aten::grid_sampler",
                                   {x, grid, b.Int(m), b.Int(p),
                                    b.Bool(c.AttrInt("align_corners", 0) != 0)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertRoiAlign(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * rois, c.RequiredInput(1));
  ASSIGN_OR_RETURN(Value * idx, c.RequiredInput(2));
  // Opset 10 had no coordinate_transformation_mode and behaved as
  // output_half_pixel.
  const std::string coord = c.opset() >= 16
                                ? c.AttrString("coordinate_transformation_mode", "half_pixel")
                                : "output_half_pixel";
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::roi_align",
                                   {x, rois, idx, b.Str(c.AttrString("mode", "avg")),
                                    b.Int(c.AttrInt("output_height", 1)),
                                    b.Int(c.AttrInt("output_width", 1)),
                                    b.Int(c.AttrInt("sampling_ratio", 0)),
                                    b.Double(c.AttrFloat("spatial_scale", 1.0f)), b.Str(coord)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertDepthToSpace(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t block, c.RequiredAttrInt("blocksize"));
  if (block <= 0) return c.Error(absl::StrCat("blocksize must be positive, got ", block));
  const std::string mode = c.opset() >= 11 ? c.AttrString("mode", "DCR") : "DCR";
  Value* y;
  if (mode == "CRD") {
    ASSIGN_OR_RETURN(y, b.Op("aten::pixel_shuffle", {x, b.Int(block)}));
  } else if (mode == "DCR") {
    ASSIGN_OR_RETURN(y, b.Op("kiln::depth_to_space", {x, b.Int(block), b.Str(mode)}));
  } else {
    return c.Error(absl::StrCat("unknown mode '", mode, "'"));
  }
  return c.SetOutput(0, y);
}

absl::Status ConvertSpaceToDepth(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t block, c.RequiredAttrInt("blocksize"));
  if (block <= 0) return c.Error(absl::StrCat("blocksize must be positive, got ", block));
  ASSIGN_OR_RETURN(Value * y, c.b().Op("kiln::space_to_depth", {x, c.b().Int(block)}));
  return c.SetOutput(0, y);
}

}  // namespace

void RegisterNnConverters(ConverterRegistry& r) {
  r.Add("Conv", 1, ConvertConv);
  r.Add("ConvTranspose", 1, ConvertConvTranspose);
  r.Add("ConvInteger", 10, ConvertConvInteger);
  r.Add("QLinearConv", 10, ConvertQLinearConv);
  r.Add("MaxPool", 1, ConvertMaxPool);
  r.Add("AveragePool", 1, ConvertAveragePool);
  r.Add("LpPool", 1, ConvertLpPool);
  r.Add("GlobalAveragePool", 1,
        [](ConvertContext& c) { return ConvertGlobalPool(c, "aten::mean"); });
  r.Add("GlobalMaxPool", 1, [](ConvertContext& c) { return ConvertGlobalPool(c, "aten::amax"); });
  r.Add("GlobalLpPool", 1, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    const double p = LpAttr(c);
    if (!(p > 0)) return c.Error("p must be positive");
    ASSIGN_OR_RETURN(Value * y, c.b().Op("kiln::global_lp_pool", {x, c.b().Double(p)}));
    return c.SetOutput(0, y);
  });
  r.Add("MaxUnpool", 9, ConvertMaxUnpool);
  r.Add("BatchNormalization", 1, ConvertBatchNorm);
  r.Add("InstanceNormalization", 1, ConvertInstanceNorm);
  r.Add("LayerNormalization", 17, ConvertLayerNorm);
  r.Add("LpNormalization", 1, ConvertLpNormalization);
  r.Add("LRN", 1, ConvertLrn);
  r.Add("MeanVarianceNormalization", 9, ConvertMvn);
  r.Add("Upsample", 7, [](ConvertContext& c) -> absl::Status {
    std::vector<float> scales = c.AttrFloats("scales");
    if (scales.empty()) return c.Error("attribute 'scales' is required");
    absl::StatusOr<Tensor> t = Tensor::FromBytes(DType::kFloat32,
                                                 {static_cast<int64_t>(scales.size())},
                                                 scales.data(), scales.size() * sizeof(float));
    if (!t.ok()) return c.Error(t.status().message());
    return ConvertResize10(c, c.b().TensorConstant(*t));
  });
  r.Add("Upsample", 9, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * scales, c.RequiredInput(1));
    return ConvertResize10(c, scales);
  });
  r.Add("Resize", 10, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * scales, c.RequiredInput(1));
    return ConvertResize10(c, scales);
  });
  r.Add("Resize", 11, ConvertResize11);
  r.Add("GridSample", 16, ConvertGridSample);
  r.Add("RoiAlign", 10, ConvertRoiAlign);
  r.Add("DepthToSpace", 1, ConvertDepthToSpace);
  r.Add("SpaceToDepth", 1, ConvertSpaceToDepth);
}

}  // namespace kiln::frontend::onnx_import
