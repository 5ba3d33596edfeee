// ONNX converters of the shape family: reshapes and views, joins and splits,
// slicing, gathers and scatters, padding, generators, sorting and unique.
//
// Where ONNX and ATen agree and the arguments are known at import time the
// converters emit aten ops (the same kernels serve TorchScript graphs); where
// arguments arrive as runtime tensors (shapes, axes, pads...) or ONNX's
// semantics differ (0 in Reshape shapes, bidirectional Expand, negative
// Slice steps, negative gather indices) they emit the kiln:: ops of
// ops/defs/view.def, index.def and create.def.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops_families.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/ir.h"
#include "ir/type.h"
#include "support/status.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::Type;
using ir::Value;

// Input i's integer elements when known at import time.
std::optional<std::vector<int64_t>> ConstInts(const ConvertContext& c, int i) {
  std::optional<Tensor> t = c.ConstantInput(i);
  if (!t || t->dim() > 1 || !IsIntegral(t->dtype(), /*include_bool=*/false)) return std::nullopt;
  std::vector<int64_t> v;
  for (int64_t k = 0; k < t->numel(); ++k) v.push_back(t->GetInt(k));
  return v;
}

// Input i (a one-element integer tensor) as an int value.
absl::StatusOr<Value*> IntScalarInput(ConvertContext& c, int i) {
  ASSIGN_OR_RETURN(Value * v, c.RequiredInput(i));
  if (std::optional<std::vector<int64_t>> k = ConstInts(c, i)) {
    if (k->size() != 1) return c.Error(absl::StrCat("input ", i, " must hold one integer"));
    return c.b().Int((*k)[0]);
  }
  return c.b().Op("kiln::tensor_to_int", {v});
}

// The static sizes of input i when every dim is known.
std::optional<std::vector<int64_t>> StaticSizes(const ConvertContext& c, int i) {
  ir::TensorInfo info = c.InputInfo(i);
  if (!info.sizes) return std::nullopt;
  std::vector<int64_t> out;
  for (const std::optional<int64_t>& d : *info.sizes) {
    if (!d) return std::nullopt;
    out.push_back(*d);
  }
  return out;
}

std::optional<int64_t> StaticRank(const ConvertContext& c, int i) {
  std::optional<size_t> r = c.InputInfo(i).rank();
  if (!r) return std::nullopt;
  return static_cast<int64_t>(*r);
}

absl::StatusOr<int64_t> NormalizeAxis(const ConvertContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return c.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// An axis attribute, made non-negative when the rank is known. An unknown
// rank leaves a negative axis as it is: the aten ops emitted for it (cat,
// split_with_sizes, chunk, movedim) take negative dims, and kiln's shape
// propagation resolves the rank before lowering.
absl::StatusOr<int64_t> AxisFromAttr(ConvertContext& c, absl::string_view name, int64_t def,
                                     int input = 0) {
  const int64_t axis = c.AttrInt(name, def);
  if (std::optional<int64_t> r = StaticRank(c, input)) return NormalizeAxis(c, axis, *r);
  return axis;
}

absl::Status Bind(ConvertContext& c, absl::StatusOr<Value*> v) {
  if (!v.ok()) return c.Error(v.status().message());
  return c.SetOutput(0, *v);
}

Value* TensorList(ConvertContext& c, const std::vector<Value*>& values) {
  return c.b().List(Type::Tensor(), values);
}

// ------------------------------------------------------------ reshapes

absl::Status EmitReshape(ConvertContext& c, Value* x, std::optional<std::vector<int64_t>> shape,
                         Value* dynamic_shape, bool allowzero) {
  if (shape) {
    std::vector<int64_t> s = *shape;
    bool resolved = true;
    std::optional<std::vector<int64_t>> in = StaticSizes(c, 0);
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != 0 || allowzero) continue;
      if (in && i < in->size()) s[i] = (*in)[i];
      else resolved = false;
    }
    if (resolved) return Bind(c, c.b().Op("aten::reshape", {x, c.b().IntList(s)}));
    dynamic_shape = c.b().IntList(*shape);
  }
  return Bind(c, c.b().Op("kiln::onnx_reshape", {x, dynamic_shape, c.b().Bool(allowzero)}));
}

absl::Status ConvertReshape(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  const bool allowzero = c.AttrInt("allowzero", 0) != 0;
  if (c.opset() < 5) {
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.RequiredAttrInts("shape"));
    return EmitReshape(c, x, shape, nullptr, false);
  }
  if (std::optional<std::vector<int64_t>> s = ConstInts(c, 1)) {
    return EmitReshape(c, x, s, nullptr, allowzero);
  }
  ASSIGN_OR_RETURN(Value * shape, c.IntListInput(1));
  return EmitReshape(c, x, std::nullopt, shape, allowzero);
}

absl::Status ConvertFlatten(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  int64_t axis = c.AttrInt("axis", 1);
  std::optional<int64_t> rank = StaticRank(c, 0);
  if (!rank) return Bind(c, c.b().Op("kiln::onnx_flatten", {x, c.b().Int(axis)}));
  const int64_t r = *rank;
  if (axis < -r || axis > r) return c.Error(absl::StrCat("axis ", axis, " out of range for rank ", r));
  if (axis < 0) axis += r;
  GraphBuilder& b = c.b();
  if (r == 0) return Bind(c, b.Op("aten::reshape", {x, b.IntList({1, 1})}));
  if (axis == 0 || axis == r) {
    ASSIGN_OR_RETURN(Value * flat, b.Op("aten::flatten", {x, b.Int(0), b.Int(-1)}));
    return Bind(c, b.Op("aten::unsqueeze", {flat, b.Int(axis == 0 ? 0 : 1)}));
  }
  ASSIGN_OR_RETURN(Value * inner, b.Op("aten::flatten", {x, b.Int(axis), b.Int(-1)}));
  return Bind(c, b.Op("aten::flatten", {inner, b.Int(0), b.Int(axis - 1)}));
}

// Squeeze/Unsqueeze axes: the attribute before opset 13, an input after.
absl::StatusOr<std::optional<std::vector<int64_t>>> ConstAxes(ConvertContext& c, bool* present) {
  if (c.opset() < 13) {
    *present = c.HasAttr("axes");
    if (!*present) return std::optional<std::vector<int64_t>>();
    return std::optional<std::vector<int64_t>>(c.AttrInts("axes"));
  }
  *present = c.has_input(1);
  if (!*present) return std::optional<std::vector<int64_t>>();
  return ConstInts(c, 1);
}

absl::Status ConvertSqueeze(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  bool present = false;
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, ConstAxes(c, &present));
  GraphBuilder& b = c.b();
  if (!present) return Bind(c, b.Op("aten::squeeze", {x}));
  std::optional<int64_t> rank = StaticRank(c, 0);
  if (axes && rank) {
    std::vector<int64_t> dims;
    for (int64_t a : *axes) {
      ASSIGN_OR_RETURN(int64_t d, NormalizeAxis(c, a, *rank));
      dims.push_back(d);
    }
    std::sort(dims.rbegin(), dims.rend());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    Value* v = x;
    for (int64_t d : dims) {
      ASSIGN_OR_RETURN(v, b.Op("aten::squeeze", {v, b.Int(d)}));
    }
    if (dims.empty()) { ASSIGN_OR_RETURN(v, b.Op("aten::detach", {x})); }
    return c.SetOutput(0, v);
  }
  Value* list = nullptr;
  if (axes) list = b.IntList(*axes);
  else { ASSIGN_OR_RETURN(list, c.IntListInput(1)); }
  return Bind(c, b.Op("kiln::onnx_squeeze", {x, list}));
}

absl::Status ConvertUnsqueeze(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  bool present = false;
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, ConstAxes(c, &present));
  if (!present) return c.Error("axes are required");
  GraphBuilder& b = c.b();
  std::optional<int64_t> rank = StaticRank(c, 0);
  if (axes && rank) {
    const int64_t out_rank = *rank + static_cast<int64_t>(axes->size());
    std::vector<int64_t> dims;
    for (int64_t a : *axes) {
      ASSIGN_OR_RETURN(int64_t d, NormalizeAxis(c, a, out_rank));
      dims.push_back(d);
    }
    std::sort(dims.begin(), dims.end());
    if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) {
      return c.Error("axes must not repeat");
    }
    Value* v = x;
    for (int64_t d : dims) {
      ASSIGN_OR_RETURN(v, b.Op("aten::unsqueeze", {v, b.Int(d)}));
    }
    if (dims.empty()) { ASSIGN_OR_RETURN(v, b.Op("aten::detach", {x})); }
    return c.SetOutput(0, v);
  }
  Value* list = nullptr;
  if (axes) list = b.IntList(*axes);
  else { ASSIGN_OR_RETURN(list, c.IntListInput(1)); }
  return Bind(c, b.Op("kiln::onnx_unsqueeze", {x, list}));
}

absl::Status ConvertTranspose(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  std::vector<int64_t> perm = c.AttrInts("perm");
  if (!c.HasAttr("perm")) {
    ASSIGN_OR_RETURN(int64_t r, c.InputRank(0));
    for (int64_t d = r - 1; d >= 0; --d) perm.push_back(d);
  }
  return Bind(c, c.b().Op("aten::permute", {x, c.b().IntList(perm)}));
}

absl::Status ConvertExpand(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  std::optional<std::vector<int64_t>> shape = ConstInts(c, 1);
  std::optional<std::vector<int64_t>> in = StaticSizes(c, 0);
  if (shape && in) {
    // Bidirectional broadcast resolved now: aten::expand to the result.
    std::vector<int64_t> out(std::max(shape->size(), in->size()), 1);
    bool ok = true;
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t a = i < in->size() ? (*in)[in->size() - 1 - i] : 1;
      const int64_t s = i < shape->size() ? (*shape)[shape->size() - 1 - i] : 1;
      if (a != s && a != 1 && s != 1) ok = false;
      out[out.size() - 1 - i] = a == 1 ? s : a;
    }
    if (!ok) {
      return c.Error(absl::StrCat("input shape does not broadcast to the requested shape"));
    }
    return Bind(c, c.b().Op("aten::expand", {x, c.b().IntList(out)}));
  }
  ASSIGN_OR_RETURN(Value * s, c.IntListInput(1));
  return Bind(c, c.b().Op("kiln::onnx_expand", {x, s}));
}

// ------------------------------------------------------------ joins / splits

absl::Status ConvertConcat(ConvertContext& c) {
  std::vector<Value*> parts;
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (Value* v = c.input(i)) parts.push_back(v);
  }
  if (parts.empty()) return c.Error("needs at least one input");
  if (c.opset() >= 4 && !c.HasAttr("axis")) return c.Error("attribute 'axis' is required");
  ASSIGN_OR_RETURN(int64_t axis, AxisFromAttr(c, "axis", 1));
  return Bind(c, c.b().Op("aten::cat", {TensorList(c, parts), c.b().Int(axis)}));
}

absl::Status ConvertSplit(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(int64_t axis, AxisFromAttr(c, "axis", 0));
  GraphBuilder& b = c.b();
  const int n = c.num_outputs();
  Value* list = nullptr;
  std::optional<std::vector<int64_t>> sizes;
  Value* dynamic_sizes = nullptr;
  if (c.opset() < 13 && c.HasAttr("split")) {
    sizes = c.AttrInts("split");
  } else if (c.has_input(1)) {
    sizes = ConstInts(c, 1);
    if (!sizes) { ASSIGN_OR_RETURN(dynamic_sizes, c.IntListInput(1)); }
  }
  if (sizes) {
    ASSIGN_OR_RETURN(list, b.Op("aten::split_with_sizes", {x, b.IntList(*sizes), b.Int(axis)}));
  } else if (dynamic_sizes) {
    ASSIGN_OR_RETURN(list, b.Op("aten::split_with_sizes", {x, dynamic_sizes, b.Int(axis)}));
  } else {
    const int64_t parts = c.opset() >= 18 ? c.AttrInt("num_outputs", n) : n;
    if (parts <= 0) return c.Error("needs at least one output");
    std::optional<std::vector<int64_t>> in = StaticSizes(c, 0);
    if (in && axis < static_cast<int64_t>(in->size())) {
      const int64_t dim = (*in)[static_cast<size_t>(axis)];
      const int64_t each = (dim + parts - 1) / parts;
      if (c.opset() < 18 && dim % parts != 0) {
        return c.Error(absl::StrCat("dim of size ", dim, " does not split into ", parts, " equal parts"));
      }
      std::vector<int64_t> s;
      for (int64_t k = 0, left = dim; k < parts; ++k, left -= each) s.push_back(std::max<int64_t>(std::min(each, left), 0));
      ASSIGN_OR_RETURN(list, b.Op("aten::split_with_sizes", {x, b.IntList(s), b.Int(axis)}));
    } else {
      ASSIGN_OR_RETURN(list, b.Op("aten::chunk", {x, b.Int(parts), b.Int(axis)}));
    }
  }
  std::vector<Value*> outs = b.ListUnpack(list, static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) RETURN_IF_ERROR(c.SetOutput(i, outs[static_cast<size_t>(i)]));
  return absl::OkStatus();
}

// ------------------------------------------------------------ slice

absl::Status EmitSlice(ConvertContext& c, Value* x, const std::vector<int64_t>& starts,
                       const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                       std::vector<int64_t> steps) {
  GraphBuilder& b = c.b();
  if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size())) {
    return c.Error("starts, ends, axes and steps must have the same length");
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  const bool forward = std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s > 0; });
  if (!forward) {
    return Bind(c, b.Op("kiln::onnx_slice", {x, b.IntList(starts), b.IntList(ends),
                                             b.IntList(axes), b.IntList(steps)}));
  }
  Value* v = x;
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSIGN_OR_RETURN(v, b.Op("aten::slice", {v, b.Int(axes[i]), b.Int(starts[i]),
                                                    b.Int(ends[i]), b.Int(steps[i])}));
  }
  if (starts.empty()) { ASSIGN_OR_RETURN(v, b.Op("aten::detach", {x})); }
  return c.SetOutput(0, v);
}

absl::Status ConvertSlice1(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(std::vector<int64_t> starts, c.RequiredAttrInts("starts"));
  ASSIGN_OR_RETURN(std::vector<int64_t> ends, c.RequiredAttrInts("ends"));
  return EmitSlice(c, x, starts, ends, c.AttrInts("axes"), {});
}

absl::Status ConvertSlice10(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  auto starts = ConstInts(c, 1), ends = ConstInts(c, 2);
  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>(),
                                      steps = std::vector<int64_t>();
  if (c.has_input(3)) axes = ConstInts(c, 3);
  if (c.has_input(4)) steps = ConstInts(c, 4);
  if (starts && ends && axes && steps) return EmitSlice(c, x, *starts, *ends, *axes, *steps);
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * s, c.IntListInput(1));
  ASSIGN_OR_RETURN(Value * e, c.IntListInput(2));
  Value* a = b.IntList({});
  Value* st = b.IntList({});
  if (c.has_input(3)) { ASSIGN_OR_RETURN(a, c.IntListInput(3)); }
  if (c.has_input(4)) { ASSIGN_OR_RETURN(st, c.IntListInput(4)); }
  return Bind(c, b.Op("kiln::onnx_slice", {x, s, e, a, st}));
}

// ------------------------------------------------------------ gather / scatter

absl::Status ConvertGather(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * idx, c.RequiredInput(1));
  ASSIGN_OR_RETURN(int64_t axis, AxisFromAttr(c, "axis", 0));
  GraphBuilder& b = c.b();
  if (axis < 0) {
    // Rank unknown: gather along dim 0 of x with `axis` moved first, then
    // move the index's k dims to end at `axis` (negative destinations).
    std::optional<int64_t> k = StaticRank(c, 1);
    if (!k) return c.Unsupported("a negative axis needs the rank of the data or of the indices");
    ASSIGN_OR_RETURN(Value * moved, b.Op("aten::movedim", {x, b.Int(axis), b.Int(0)}));
    ASSIGN_OR_RETURN(Value * y, b.Op("aten::index", {moved, b.List(Type::Optional(Type::Tensor()), {idx})}));
    if (*k == 0) return c.SetOutput(0, y);
    std::vector<int64_t> src, dst;
    for (int64_t i = 0; i < *k; ++i) {
      src.push_back(i);
      dst.push_back(axis + 1 - *k + i);
    }
    return Bind(c, b.Op("aten::movedim", {y, b.IntList(src), b.IntList(dst)}));
  }
  // x[:, ..., idx] (advanced indexing keeps the index's shape in place and
  // wraps negative indices, as Gather does).
  std::vector<Value*> indices;
  for (int64_t d = 0; d < axis; ++d) indices.push_back(b.None());
  indices.push_back(idx);
  Value* list = b.List(Type::Optional(Type::Tensor()), indices);
  return Bind(c, b.Op("aten::index", {x, list}));
}

absl::Status ConvertGatherElements(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * idx, c.RequiredInput(1));
  return Bind(c, c.b().Op("kiln::onnx_gather_elements", {x, c.b().Int(c.AttrInt("axis", 0)), idx}));
}

absl::Status ConvertGatherND(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * idx, c.RequiredInput(1));
  return Bind(c, c.b().Op("kiln::gather_nd", {x, idx, c.b().Int(c.AttrInt("batch_dims", 0))}));
}

absl::Status ConvertScatterElements(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * idx, c.RequiredInput(1));
  ASSIGN_OR_RETURN(Value * upd, c.RequiredInput(2));
  const std::string red = c.AttrString("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min") {
    return c.Error(absl::StrCat("unknown reduction '", red, "'"));
  }
  return Bind(c, c.b().Op("kiln::onnx_scatter_elements",
                          {x, c.b().Int(c.AttrInt("axis", 0)), idx, upd, c.b().Str(red)}));
}

absl::Status ConvertScatterND(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * idx, c.RequiredInput(1));
  ASSIGN_OR_RETURN(Value * upd, c.RequiredInput(2));
  const std::string red = c.AttrString("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min") {
    return c.Error(absl::StrCat("unknown reduction '", red, "'"));
  }
  return Bind(c, c.b().Op("kiln::scatter_nd", {x, idx, upd, c.b().Str(red)}));
}

// ------------------------------------------------------------ pad / tile

absl::Status ConvertPad(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  GraphBuilder& b = c.b();
  const std::string mode = c.AttrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return c.Error(absl::StrCat("unknown mode '", mode, "'"));
  }
  Value* pads = nullptr;
  Value* value = nullptr;
  if (c.opset() < 11) {
    const char* attr = c.opset() < 2 ? "paddings" : "pads";
    ASSIGN_OR_RETURN(std::vector<int64_t> p, c.RequiredAttrInts(attr));
    pads = b.IntList(p);
    value = b.TensorConstant(Tensor::ScalarDouble(c.AttrFloat("value", 0.0f)));
  } else {
    if (c.has_input(3)) return c.Unsupported("the axes input (opset 18) is not supported");
    ASSIGN_OR_RETURN(pads, c.IntListInput(1));
    value = c.has_input(2) ? c.input(2) : b.None();
  }
  return Bind(c, b.Op("kiln::onnx_pad", {x, pads, b.Str(mode), value}));
}

absl::Status ConvertTile(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  if (c.opset() < 6) return c.Unsupported("Tile-1 (tiles/axis inputs) is not supported");
  ASSIGN_OR_RETURN(Value * reps, c.IntListInput(1));
  return Bind(c, c.b().Op("aten::repeat", {x, reps}));
}

// ------------------------------------------------------------ shape queries

absl::Status ConvertShape(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  GraphBuilder& b = c.b();
  Value* end = c.HasAttr("end") ? b.Int(c.AttrInt("end", 0)) : b.None();
  return Bind(c, b.Op("kiln::shape", {x, b.Int(c.AttrInt("start", 0)), end}));
}

absl::Status ConvertSize(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  return Bind(c, c.b().Op("kiln::size", {x}));
}

absl::Status ConvertIdentity(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  return c.SetOutput(0, x);
}

absl::Status ConvertCompress(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * cond, c.RequiredInput(1));
  Value* axis = c.HasAttr("axis") ? c.b().Int(c.AttrInt("axis", 0)) : c.b().None();
  return Bind(c, c.b().Op("kiln::compress", {x, cond, axis}));
}

absl::Status ConvertReverseSequence(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * lens, c.RequiredInput(1));
  return Bind(c, c.b().Op("kiln::reverse_sequence",
                          {x, lens, c.b().Int(c.AttrInt("batch_axis", 1)),
                           c.b().Int(c.AttrInt("time_axis", 0))}));
}

absl::Status ConvertTrilu(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  Value* k = c.b().Int(0);
  if (c.has_input(1)) { ASSIGN_OR_RETURN(k, IntScalarInput(c, 1)); }
  const bool upper = c.AttrInt("upper", 1) != 0;
  return Bind(c, c.b().Op(upper ? "aten::triu" : "aten::tril", {x, k}));
}

// ------------------------------------------------------------ generators

absl::StatusOr<Value*> OnnxDTypeArg(ConvertContext& c, absl::string_view attr) {
  if (!c.HasAttr(attr)) return c.b().None();
  absl::StatusOr<DType> d = DTypeFromOnnx(static_cast<int32_t>(c.AttrInt(attr, 1)));
  if (!d.ok()) return c.Unsupported(d.status().message());
  return c.b().ScalarType(*d);
}

absl::Status ConvertEyeLike(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * dtype, OnnxDTypeArg(c, "dtype"));
  return Bind(c, c.b().Op("kiln::eye_like", {x, c.b().Int(c.AttrInt("k", 0)), dtype}));
}

absl::Status ConvertOneHot(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * idx, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * depth, c.RequiredInput(1));
  ASSIGN_OR_RETURN(Value * values, c.RequiredInput(2));
  return Bind(c, c.b().Op("kiln::onnx_one_hot", {idx, depth, values, c.b().Int(c.AttrInt("axis", -1))}));
}

absl::Status ConvertNonZero(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * nz, c.b().Op("aten::nonzero", {x}));
  return Bind(c, c.b().Op("aten::permute", {nz, c.b().IntList({1, 0})}));
}

absl::Status ConvertRange(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * s, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * l, c.RequiredInput(1));
  ASSIGN_OR_RETURN(Value * d, c.RequiredInput(2));
  return Bind(c, c.b().Op("kiln::range", {s, l, d}));
}

absl::Status ConvertConstantOfShape(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * shape, c.IntListInput(0));
  ASSIGN_OR_RETURN(std::optional<Tensor> value, c.AttrTensor("value"));
  Tensor v = value ? *value : Tensor::ScalarDouble(0, DType::kFloat32);
  if (!v.has_data() || v.numel() != 1) return c.Error("'value' must hold exactly one element");
  GraphBuilder& b = c.b();
  Value* fill = nullptr;
  if (IsFloatingPoint(v.dtype())) fill = b.Double(v.GetDouble(0));
  else if (v.dtype() == DType::kBool) fill = b.Bool(v.GetInt(0) != 0);
  else if (IsIntegral(v.dtype(), false)) fill = b.Int(v.GetInt(0));
  else return c.Unsupported(absl::StrCat("value of dtype ", DTypeName(v.dtype())));
  return Bind(c, b.Op("aten::full", {shape, fill, b.ScalarType(v.dtype())}));
}

absl::Status ConvertConstant(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(std::optional<Tensor> t, c.AttrTensor("value"));
  if (t) return c.SetOutput(0, b.TensorConstant(*t));
  if (c.HasAttr("value_float")) {
    return c.SetOutput(0, b.TensorConstant(Tensor::ScalarDouble(c.AttrFloat("value_float", 0), DType::kFloat32)));
  }
  if (c.HasAttr("value_int")) {
    return c.SetOutput(0, b.TensorConstant(Tensor::ScalarInt(c.AttrInt("value_int", 0))));
  }
  if (c.HasAttr("value_floats")) {
    std::vector<float> f = c.AttrFloats("value_floats");
    absl::StatusOr<Tensor> v = Tensor::FromBytes(DType::kFloat32, {static_cast<int64_t>(f.size())},
                                                 f.data(), f.size() * sizeof(float));
    if (!v.ok()) return c.Error(v.status().message());
    return c.SetOutput(0, b.TensorConstant(*v));
  }
  if (c.HasAttr("value_ints")) {
    std::vector<int64_t> i = c.AttrInts("value_ints");
    absl::StatusOr<Tensor> v = Tensor::FromBytes(DType::kInt64, {static_cast<int64_t>(i.size())},
                                                 i.data(), i.size() * sizeof(int64_t));
    if (!v.ok()) return c.Error(v.status().message());
    return c.SetOutput(0, b.TensorConstant(*v));
  }
  if (c.HasAttr("value_string") || c.HasAttr("value_strings")) {
    return c.Unsupported("string constants are not supported");
  }
  if (c.HasAttr("sparse_value")) return c.Unsupported("sparse constants are not supported");
  return c.Error("needs one of the value attributes");
}

absl::Status ConvertWhere(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * cond, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(1));
  ASSIGN_OR_RETURN(Value * y, c.RequiredInput(2));
  return Bind(c, c.b().Op("aten::where", {cond, x, y}));
}

// ------------------------------------------------------------ sorting

absl::Status ConvertTopK(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  GraphBuilder& b = c.b();
  Value* k = nullptr;
  if (c.opset() < 10) {
    ASSIGN_OR_RETURN(int64_t kv, c.RequiredAttrInt("k"));
    k = b.Int(kv);
  } else {
    ASSIGN_OR_RETURN(k, IntScalarInput(c, 1));
  }
  const bool largest = c.AttrInt("largest", 1) != 0;
  absl::StatusOr<std::vector<Value*>> outs =
      b.OpN("aten::topk", {x, k, b.Int(c.AttrInt("axis", -1)), b.Bool(largest), b.Bool(true)}, 2);
  if (!outs.ok()) return c.Error(outs.status().message());
  RETURN_IF_ERROR(c.SetOutput(0, (*outs)[0]));
  return c.SetOutput(1, (*outs)[1]);
}

absl::Status ConvertUnique(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  GraphBuilder& b = c.b();
  Value* axis = c.HasAttr("axis") ? b.Int(c.AttrInt("axis", 0)) : b.None();
  absl::StatusOr<std::vector<Value*>> outs =
      b.OpN("kiln::onnx_unique", {x, axis, b.Bool(c.AttrInt("sorted", 1) != 0)}, 4);
  if (!outs.ok()) return c.Error(outs.status().message());
  for (int i = 0; i < 4; ++i) RETURN_IF_ERROR(c.SetOutput(i, (*outs)[static_cast<size_t>(i)]));
  return absl::OkStatus();
}

absl::Status ConvertCumSum(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * axis, IntScalarInput(c, 1));
  GraphBuilder& b = c.b();
  return Bind(c, b.Op("kiln::onnx_cumsum", {x, axis, b.Bool(c.AttrInt("exclusive", 0) != 0),
                                            b.Bool(c.AttrInt("reverse", 0) != 0)}));
}

}  // namespace

void RegisterShapeConverters(ConverterRegistry& r) {
  r.Add("Reshape", 1, ConvertReshape);
  r.Add("Flatten", 1, ConvertFlatten);
  r.Add("Squeeze", 1, ConvertSqueeze);
  r.Add("Unsqueeze", 1, ConvertUnsqueeze);
  r.Add("Transpose", 1, ConvertTranspose);
  r.Add("Expand", 8, ConvertExpand);
  r.Add("Concat", 1, ConvertConcat);
  r.Add("Split", 1, ConvertSplit);
  r.Add("Slice", 1, ConvertSlice1);
  r.Add("Slice", 10, ConvertSlice10);
  r.Add("Gather", 1, ConvertGather);
  r.Add("GatherElements", 11, ConvertGatherElements);
  r.Add("GatherND", 11, ConvertGatherND);
  r.Add("Scatter", 9, ConvertScatterElements);
  r.Add("ScatterElements", 11, ConvertScatterElements);
  r.Add("ScatterND", 11, ConvertScatterND);
  r.Add("Pad", 1, ConvertPad);
  r.Add("Tile", 1, ConvertTile);
  r.Add("Shape", 1, ConvertShape);
  r.Add("Size", 1, ConvertSize);
  r.Add("Identity", 1, ConvertIdentity);
  r.Add("Compress", 9, ConvertCompress);
  r.Add("ReverseSequence", 10, ConvertReverseSequence);
  r.Add("Trilu", 14, ConvertTrilu);
  r.Add("EyeLike", 9, ConvertEyeLike);
  r.Add("OneHot", 9, ConvertOneHot);
  r.Add("NonZero", 9, ConvertNonZero);
  r.Add("Range", 11, ConvertRange);
  r.Add("ConstantOfShape", 9, ConvertConstantOfShape);
  r.Add("Constant", 1, ConvertConstant);
  r.Add("Where", 9, ConvertWhere);
  r.Add("TopK", 1, ConvertTopK);
  r.Add("Unique", 11, ConvertUnique);
  r.Add("CumSum", 11, ConvertCumSum);
}

}  // namespace kiln::frontend::onnx_import
