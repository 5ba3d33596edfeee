// Shape and dtype functions of the kiln:: ops the ONNX importer emits where
// ATen has no op with ONNX's semantics (ir/kiln_schemas_*.inc): reshapes
// with 0 entries, bidirectional Expand, clamping Slice, Shape, Range,
// Reduce*, LayerNormalization with an axis, Pad, GatherND... With the
// inputs' sizes known and the shape-carrying arguments constant (after
// specialization and constant propagation), each gives its output's
// complete type, so the program compiles with static shapes (issue 12).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/constants.h"
#include "passes/shape_functions_internal.h"
#include "support/status.h"

namespace kiln::passes::shape_internal {
namespace {

// Input i as a tensor constant with data (an initializer, a folded value).
std::optional<Tensor> TensorConstant(const Args& a, size_t i) {
  if (i >= a.node().inputs().size()) return std::nullopt;
  std::optional<IValue> c = ir::ConstantValue(a.node().input(i));
  if (!c || !c->isTensor() || !c->toTensor().has_data()) return std::nullopt;
  return c->toTensor();
}

Types Same(const Args& a, size_t i = 0) {
  const TensorInfo* t = a.Tensor(i);
  return Types{t ? TensorOf(t->dtype, t->sizes, t->device) : Type::Tensor()};
}

// The input's rank, or nullopt.
std::optional<size_t> Rank(const Args& a, size_t i) {
  const TensorInfo* t = a.Tensor(i);
  if (!t || !t->sizes) return std::nullopt;
  return t->sizes->size();
}

// An int[] argument's elements; for kiln::tensor_to_int_list(t) of a 1-D t
// of known length, that many unknown elements (a shape tensor computed at
// run time still fixes the result's rank).
SymbolicSizes ShapeListElements(const Args& a, size_t i) {
  SymbolicSizes e = a.IntListElements(i);
  if (e || i >= a.node().inputs().size()) return e;
  static const ir::Symbol kToList = ir::Symbol::FromQualString("kiln::tensor_to_int_list");
  const Node* p = a.node().input(i)->node();
  if (p->kind() != kToList || p->inputs().size() != 1 || !p->input(0)->type()->is_tensor()) {
    return std::nullopt;
  }
  const SymbolicSizes& s = p->input(0)->type()->tensor().sizes;
  if (!s || s->size() != 1 || !(*s)[0]) return std::nullopt;
  return Dims(static_cast<size_t>(*(*s)[0]));
}

// kiln::onnx_reshape(self, int[] shape, bool allowzero): 0 copies the input's
// dim unless allowzero, one -1 is inferred.
absl::StatusOr<Types> OnnxReshape(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  SymbolicSizes requested = ShapeListElements(a, 1);
  std::optional<bool> allowzero = a.Bool(2);
  if (!requested) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  if (!allowzero) return Types{TensorOf(t->dtype, Dims(requested->size()), t->device)};
  Dims out = *requested;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i]) continue;
    if (*out[i] == 0 && !*allowzero) {
      if (!t->sizes || i >= t->sizes->size()) {
        if (t->sizes) return a.Error(absl::StrCat("shape entry ", i, " is 0 but the input has rank ", t->sizes->size()));
        out[i] = std::nullopt;
      } else {
        out[i] = (*t->sizes)[i];
      }
    } else if (*out[i] == -1) {
      if (infer) return a.Error("only one dimension can be -1");
      infer = i;
    } else if (*out[i] < 0) {
      return a.Error(absl::StrCat("invalid shape entry ", *out[i]));
    }
  }
  if (infer) {
    out[*infer] = std::nullopt;
    Dims rest = out;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(*infer));
    std::optional<int64_t> known = Product(rest);
    std::optional<int64_t> numel = t->sizes ? Product(*t->sizes) : std::nullopt;
    if (known && numel) {
      if (*known == 0 || *numel % *known != 0) {
        return a.Error(absl::StrCat("cannot reshape ", *numel, " elements to ", SizesToString(out)));
      }
      out[*infer] = *numel / *known;
    }
  } else if (std::optional<int64_t> p = Product(out); p && t->sizes) {
    if (std::optional<int64_t> numel = Product(*t->sizes); numel && *numel != *p) {
      return a.Error(absl::StrCat("cannot reshape ", *numel, " elements to ", SizesToString(out)));
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_flatten(self, axis): 2-D [prod(dims before axis), prod(rest)].
absl::StatusOr<Types> OnnxFlatten(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim axis = a.Int(1);
  if (!t->sizes || !axis) return Types{TensorOf(t->dtype, Dims(2), t->device)};
  const int64_t r = static_cast<int64_t>(t->sizes->size());
  int64_t ax = *axis < 0 ? *axis + r : *axis;
  if (ax < 0 || ax > r) return a.Error(absl::StrCat("axis ", *axis, " out of range for rank ", r));
  const Dims& in = *t->sizes;
  Dims out{Product(Dims(in.begin(), in.begin() + ax)), Product(Dims(in.begin() + ax, in.end()))};
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_squeeze(self, axes?): None drops every size-1 dim.
absl::StatusOr<Types> OnnxSqueeze(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  std::vector<bool> drop(in.size(), false);
  if (a.IsNone(1)) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i]) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
      drop[i] = *in[i] == 1;
    }
  } else {
    std::optional<std::vector<int64_t>> axes = a.IntList(1);
    if (!axes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
    for (int64_t ax : *axes) {
      ASSIGN_OR_RETURN(size_t w, WrapDim(a, ax, in.size()));
      if (in[w] && *in[w] != 1) {
        return a.Error(absl::StrCat("cannot squeeze dim ", ax, " of size ", *in[w]));
      }
      drop[w] = true;
    }
  }
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) out.push_back(in[i]);
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_unsqueeze(self, axes): axes index the output.
absl::StatusOr<Types> OnnxUnsqueeze(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> axes = a.IntList(1);
  if (!t->sizes || !axes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const size_t r = t->sizes->size() + axes->size();
  std::vector<bool> inserted(r, false);
  for (int64_t ax : *axes) {
    ASSIGN_OR_RETURN(size_t w, WrapDim(a, ax, r));
    if (inserted[w]) return a.Error("axes must not repeat");
    inserted[w] = true;
  }
  Dims out;
  size_t next = 0;
  for (size_t i = 0; i < r; ++i) out.push_back(inserted[i] ? Dim(1) : (*t->sizes)[next++]);
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_expand(self, shape): bidirectional broadcast.
absl::StatusOr<Types> OnnxExpand(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  SymbolicSizes shape = ShapeListElements(a, 1);
  if (!shape) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  ASSIGN_OR_RETURN(SymbolicSizes out, BroadcastOrError(a, t->sizes, shape));
  return Types{TensorOf(t->dtype, out, t->device)};
}

// ONNX Slice's clamping of one axis: the number of elements taken.
int64_t SliceLength(int64_t size, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, 0, size);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = std::clamp<int64_t>(start, 0, size - 1);
  end = std::clamp<int64_t>(end, -1, size - 1);
  return start > end ? (start - end - step - 1) / -step : 0;
}

// kiln::onnx_slice(self, starts, ends, axes, steps).
absl::StatusOr<Types> OnnxSlice(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  auto starts = a.IntList(1), ends = a.IntList(2), axes = a.IntList(3), steps = a.IntList(4);
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  if (!starts || !ends || !axes || !steps) {
    return Types{TensorOf(t->dtype, Dims(out.size()), t->device)};
  }
  const size_t n = starts->size();
  if (ends->size() != n || (!axes->empty() && axes->size() != n) ||
      (!steps->empty() && steps->size() != n)) {
    return a.Error("starts, ends, axes and steps must have the same length");
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t ax = axes->empty() ? static_cast<int64_t>(i) : (*axes)[i];
    const int64_t step = steps->empty() ? 1 : (*steps)[i];
    if (step == 0) return a.Error("slice step must not be 0");
    ASSIGN_OR_RETURN(size_t w, WrapDim(a, ax, out.size()));
    if (!(*t->sizes)[w]) {
      out[w] = std::nullopt;
      continue;
    }
    out[w] = SliceLength(*(*t->sizes)[w], (*starts)[i], (*ends)[i], step);
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_gather_elements(self, dim, index): index's sizes.
absl::StatusOr<Types> GatherElements(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  return Types{TensorOf(t ? t->dtype : std::nullopt, a.Sizes(2), t ? t->device : std::nullopt)};
}

// kiln::gather_nd(self, indices, batch_dims):
// indices.shape[:-1] + self.shape[batch_dims + indices.shape[-1]:].
absl::StatusOr<Types> GatherNd(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  SymbolicSizes idx = a.Sizes(1);
  Dim batch = a.Int(2);
  if (!t->sizes || !idx || idx->empty() || !batch || !idx->back()) {
    return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  }
  const int64_t k = *idx->back();
  const int64_t from = *batch + k;
  if (*batch < 0 || from > static_cast<int64_t>(t->sizes->size())) {
    return a.Error(absl::StrCat("index depth ", k, " with ", *batch, " batch dims exceeds rank ",
                                t->sizes->size()));
  }
  Dims out(idx->begin(), idx->end() - 1);
  out.insert(out.end(), t->sizes->begin() + from, t->sizes->end());
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_pad(self, pads, mode, value): pads = all begins, then all ends.
absl::StatusOr<Types> OnnxPad(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> pads = a.IntList(1);
  if (!t->sizes || !pads) return Types{TensorOf(t->dtype, Rank(a, 0) ? SymbolicSizes(Dims(*Rank(a, 0))) : std::nullopt, t->device)};
  const size_t r = t->sizes->size();
  if (pads->size() != 2 * r) {
    return a.Error(absl::StrCat("expects ", 2 * r, " pads for rank ", r, ", got ", pads->size()));
  }
  Dims out = *t->sizes;
  for (size_t d = 0; d < r; ++d) {
    if (!out[d]) continue;
    const int64_t s = *out[d] + (*pads)[d] + (*pads)[r + d];
    if (s < 0) return a.Error(absl::StrCat("pads make dim ", d, " negative"));
    out[d] = s;
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::shape(self, start, end?): int64 [n], dims clamped as Shape-15 does.
absl::StatusOr<Types> ShapeOf(const Args& a) {
  std::optional<size_t> r = Rank(a, 0);
  Dim start = a.Int(1);
  if (!r || !start) return Types{TensorOf(DType::kInt64, Dims(1), std::nullopt)};
  const int64_t rank = static_cast<int64_t>(*r);
  int64_t s = *start, e = rank;
  if (!a.IsNone(2)) {
    Dim end = a.Int(2);
    if (!end) return Types{TensorOf(DType::kInt64, Dims(1), std::nullopt)};
    e = *end;
  }
  if (s < 0) s += rank;
  if (e < 0) e += rank;
  s = std::clamp<int64_t>(s, 0, rank);
  e = std::clamp<int64_t>(e, 0, rank);
  return Types{TensorOf(DType::kInt64, Dims{std::max<int64_t>(e - s, 0)}, std::nullopt)};
}

// kiln::range(start, limit, delta): 0-dim tensors; length from their values.
absl::StatusOr<Types> Range(const Args& a) {
  std::optional<DType> dtype = a.DTypeOf(0);
  std::optional<Tensor> s = TensorConstant(a, 0), l = TensorConstant(a, 1), d = TensorConstant(a, 2);
  if (!s || !l || !d || s->numel() != 1 || l->numel() != 1 || d->numel() != 1) {
    return Types{TensorOf(dtype, Dims(1), std::nullopt)};
  }
  const double delta = d->GetDouble(0);
  if (delta == 0) return a.Error("delta must not be 0");
  const double n = std::ceil((l->GetDouble(0) - s->GetDouble(0)) / delta);
  return Types{TensorOf(dtype, Dims{static_cast<int64_t>(std::max(n, 0.0))}, std::nullopt)};
}

// kiln::reduce(self, kind, axes?, keepdims, noop_with_empty_axes): the
// input's dtype; no axes reduce everything, or nothing with noop.
absl::StatusOr<Types> OnnxReduce(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<bool> keepdims = a.Bool(3), noop = a.Bool(4);
  std::optional<std::vector<int64_t>> axes;
  bool all = a.IsNone(2);
  if (!all) {
    axes = a.IntList(2);
    if (axes && axes->empty()) all = true;
  }
  if (!t->sizes || !keepdims || !noop || (!all && !axes)) {
    return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  }
  const Dims& in = *t->sizes;
  if (all && *noop) return Types{TensorOf(t->dtype, in, t->device)};
  std::vector<bool> reduced(in.size(), all);
  if (!all) {
    for (int64_t ax : *axes) {
      ASSIGN_OR_RETURN(size_t w, WrapDim(a, ax, in.size()));
      reduced[w] = true;
    }
  }
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) out.push_back(in[i]);
    else if (*keepdims) out.push_back(1);
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::arg_extreme(self, dim, keepdim, select_last_index, largest): int64.
absl::StatusOr<Types> ArgExtreme(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim dim = a.Int(1);
  std::optional<bool> keep = a.Bool(2);
  if (!t->sizes || !dim || !keep) return Types{TensorOf(DType::kInt64, std::nullopt, t->device)};
  ASSIGN_OR_RETURN(size_t w, WrapDim(a, *dim, t->sizes->size()));
  Dims out = *t->sizes;
  if (*keep) {
    if (!out.empty()) out[w] = 1;
  } else if (!out.empty()) {
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(w));
  }
  return Types{TensorOf(DType::kInt64, out, t->device)};
}

// kiln::layer_norm(x, axis, scale?, bias?, eps) -> (y, mean, inv_std_dev):
// the statistics keep x's dims before `axis` and are 1 after, in float32
// for floating inputs below float32 (ONNX's stash_type default).
absl::StatusOr<Types> OnnxLayerNorm(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types(3, Type::Tensor());
  Dim axis = a.Int(1);
  std::optional<DType> stat = t->dtype;
  if (stat && (*stat == DType::kFloat16 || *stat == DType::kBFloat16)) stat = DType::kFloat32;
  SymbolicSizes stats;
  if (t->sizes && axis) {
    const int64_t r = static_cast<int64_t>(t->sizes->size());
    const int64_t ax = *axis < 0 ? *axis + r : *axis;
    if (ax < 0 || ax >= r) return a.Error(absl::StrCat("axis ", *axis, " out of range for rank ", r));
    Dims s(t->sizes->begin(), t->sizes->begin() + ax);
    s.resize(static_cast<size_t>(r), Dim(1));
    stats = std::move(s);
  }
  return Types{TensorOf(t->dtype, t->sizes, t->device), TensorOf(stat, stats, t->device),
               TensorOf(stat, stats, t->device)};
}

// kiln::onnx_one_hot(indices, depth, values, axis): a new dim of `depth`.
absl::StatusOr<Types> OneHot(const Args& a) {
  std::optional<DType> dtype = a.DTypeOf(2);
  std::optional<size_t> r = Rank(a, 0);
  Dim axis = a.Int(3);
  if (!r || !axis) return Types{TensorOf(dtype, std::nullopt, std::nullopt)};
  Dims out = *a.Sizes(0);
  const int64_t out_rank = static_cast<int64_t>(*r) + 1;
  const int64_t ax = *axis < 0 ? *axis + out_rank : *axis;
  if (ax < 0 || ax >= out_rank) return a.Error(absl::StrCat("axis ", *axis, " out of range"));
  Dim depth;
  if (std::optional<Tensor> d = TensorConstant(a, 1); d && d->numel() == 1) {
    depth = static_cast<int64_t>(d->GetDouble(0));
  }
  out.insert(out.begin() + ax, depth);
  return Types{TensorOf(dtype, out, std::nullopt)};
}

// kiln::compress(self, condition, axis?): data-dependent length.
absl::StatusOr<Types> Compress(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (a.IsNone(2)) return Types{TensorOf(t->dtype, Dims(1), t->device)};
  Dim axis = a.Int(2);
  if (!t->sizes || !axis) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  ASSIGN_OR_RETURN(size_t w, WrapDim(a, *axis, t->sizes->size()));
  Dims out = *t->sizes;
  out[w] = std::nullopt;
  return Types{TensorOf(t->dtype, out, t->device)};
}

// Pooling with ONNX-style pads (all begins, then all ends) over the
// trailing len(kernel) dims.
struct OnnxPoolSpec {
  size_t kernel = 1, stride = 2, pads = 3, dilation = 4, ceil_mode = 5;
  bool two_outputs = false;
};

absl::StatusOr<Types> PoolLike(const Args& a, const OnnxPoolSpec& s) {
  const TensorInfo* t = a.Tensor(0);
  Types fallback{t ? TensorOf(t->dtype, std::nullopt, t->device) : Type::Tensor()};
  if (s.two_outputs) fallback.push_back(TensorOf(DType::kInt64, std::nullopt, t ? t->device : std::nullopt));
  auto kernel = a.IntList(s.kernel), stride = a.IntList(s.stride), pads = a.IntList(s.pads),
       dil = a.IntList(s.dilation);
  std::optional<bool> ceil = a.Bool(s.ceil_mode);
  if (!t || !t->sizes || !kernel || !stride || !pads || !dil || !ceil) return fallback;
  const size_t k = kernel->size();
  const size_t r = t->sizes->size();
  if (r < k || stride->size() != k || pads->size() != 2 * k || dil->size() != k) return fallback;
  Dims out = *t->sizes;
  for (size_t i = 0; i < k; ++i) {
    Dim& d = out[r - k + i];
    if (!d) continue;
    const int64_t span = (*dil)[i] * ((*kernel)[i] - 1) + 1;
    const int64_t num = *d + (*pads)[i] + (*pads)[k + i] - span;
    if ((*stride)[i] <= 0 || num < 0) return a.Error("pooling window larger than the padded input");
    int64_t o = (*ceil ? (num + (*stride)[i] - 1) / (*stride)[i] : num / (*stride)[i]) + 1;
    // The last window must start inside the input or its begin padding.
    if (*ceil && (o - 1) * (*stride)[i] >= *d + (*pads)[i]) --o;
    d = o;
  }
  Types types{TensorOf(t->dtype, out, t->device)};
  if (s.two_outputs) types.push_back(TensorOf(DType::kInt64, out, t->device));
  return types;
}

// kiln::conv_nd(input, weight, bias?, stride, pads, dilation, groups).
absl::StatusOr<Types> ConvNd(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* w = a.Tensor(1);
  if (!x) return Types{Type::Tensor()};
  auto stride = a.IntList(3), pads = a.IntList(4), dil = a.IntList(5);
  if (!x->sizes || !w || !w->sizes || !stride || !pads || !dil) {
    return Types{TensorOf(x->dtype, x->sizes ? SymbolicSizes(Dims(x->sizes->size())) : std::nullopt, x->device)};
  }
  const size_t r = x->sizes->size();
  if (r < 3 || w->sizes->size() != r) return a.Error("conv input and weight ranks differ");
  const size_t k = r - 2;
  if (stride->size() != k || dil->size() != k || pads->size() != 2 * k) {
    return a.Error("conv stride/pads/dilation do not match the spatial rank");
  }
  Dims out{(*x->sizes)[0], (*w->sizes)[0]};
  for (size_t i = 0; i < k; ++i) {
    const Dim& in = (*x->sizes)[2 + i];
    const Dim& kern = (*w->sizes)[2 + i];
    if (!in || !kern || (*stride)[i] <= 0) {
      out.push_back(std::nullopt);
      continue;
    }
    const int64_t num = *in + (*pads)[i] + (*pads)[k + i] - (*dil)[i] * (*kern - 1) - 1;
    if (num < 0) return a.Error("conv kernel larger than the padded input");
    out.push_back(num / (*stride)[i] + 1);
  }
  return Types{TensorOf(x->dtype, out, x->device)};
}

// kiln::global_lp_pool(x, p): spatial dims become 1.
absl::StatusOr<Types> GlobalPool(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::depth_to_space / space_to_depth(x, blocksize, ...), NCHW.
ShapeImpl SpaceDepth(bool to_space) {
  return [to_space](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types{Type::Tensor()};
    Dim b = a.Int(1);
    if (!t->sizes || t->sizes->size() != 4 || !b || *b <= 0) {
      return Types{TensorOf(t->dtype, t->sizes ? SymbolicSizes(Dims(t->sizes->size())) : std::nullopt, t->device)};
    }
    Dims out = *t->sizes;
    const int64_t bb = *b * *b;
    auto scale = [](Dim d, int64_t m, bool mul) -> Dim {
      if (!d) return d;
      return mul ? *d * m : *d / m;
    };
    out[1] = scale(out[1], bb, !to_space);
    out[2] = scale(out[2], *b, to_space);
    out[3] = scale(out[3], *b, to_space);
    return Types{TensorOf(t->dtype, out, t->device)};
  };
}

// Same sizes as input 0, dtype from a ScalarType argument (None: input 0's).
ShapeImpl SameWithDType(size_t dtype_arg) {
  return [dtype_arg](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types{Type::Tensor()};
    std::optional<DType> dtype = t->dtype;
    if (!a.IsNone(dtype_arg)) {
      Dim code = a.Int(dtype_arg);
      dtype = code ? DTypeFromCode(*code) : std::nullopt;
    }
    return Types{TensorOf(dtype, t->sizes, t->device)};
  };
}

// kiln::lstm / gru / rnn (ONNX's recurrent layers): Y and the last states
// (and the last cell for LSTM), from X's [seq, batch, input] (layout 0) or
// [batch, seq, input] (layout 1), the direction and hidden_size.
ShapeImpl Recurrent(size_t outputs, size_t direction_arg, size_t hidden_arg, size_t layout_arg) {
  return [=](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* x = a.Tensor(0);
    Types unknown(outputs, x ? TensorOf(x->dtype, std::nullopt, x->device) : Type::Tensor());
    const std::string* direction = a.Str(direction_arg);
    Dim hidden = a.Int(hidden_arg), layout = a.Int(layout_arg);
    if (!x || !x->sizes || x->sizes->size() != 3 || !direction || !hidden || !layout) return unknown;
    const Dim dirs = *direction == "bidirectional" ? 2 : 1;
    const bool batch_first = *layout != 0;
    const Dim seq = (*x->sizes)[batch_first ? 1 : 0], batch = (*x->sizes)[batch_first ? 0 : 1];
    const Dims y = batch_first ? Dims{batch, seq, dirs, hidden} : Dims{seq, dirs, batch, hidden};
    const Dims last = batch_first ? Dims{batch, dirs, hidden} : Dims{dirs, batch, hidden};
    Types out{TensorOf(x->dtype, y, x->device)};
    while (out.size() < outputs) out.push_back(TensorOf(x->dtype, last, x->device));
    return out;
  };
}

}  // namespace

std::vector<std::pair<const char*, ShapeImpl>> OnnxShapeEntries() {
  std::vector<std::pair<const char*, ShapeImpl>> t;
  auto add = [&](std::initializer_list<const char*> names, const ShapeImpl& impl) {
    for (const char* n : names) t.emplace_back(n, impl);
  };
  auto same = [](const Args& a) -> absl::StatusOr<Types> { return Same(a); };
  // Schema return types say everything (int[], int).
  add({"kiln::tensor_to_int_list", "kiln::tensor_to_int"}, nullptr);
  add({"kiln::onnx_reshape"}, OnnxReshape);
  add({"kiln::onnx_flatten"}, OnnxFlatten);
  add({"kiln::onnx_squeeze"}, OnnxSqueeze);
  add({"kiln::onnx_unsqueeze"}, OnnxUnsqueeze);
  add({"kiln::onnx_expand"}, OnnxExpand);
  add({"kiln::onnx_slice"}, OnnxSlice);
  add({"kiln::onnx_gather_elements"}, GatherElements);
  add({"kiln::gather_nd"}, GatherNd);
  add({"kiln::onnx_scatter_elements", "kiln::scatter_nd", "kiln::reverse_sequence",
       "kiln::onnx_cumsum", "kiln::flat_softmax", "kiln::hardmax", "kiln::shrink", "kiln::lrn",
       "kiln::lp_normalization", "kiln::mean_variance_normalization"},
      same);
  add({"kiln::onnx_pad"}, OnnxPad);
  add({"kiln::shape"}, ShapeOf);
  add({"kiln::size"}, [](const Args&) -> absl::StatusOr<Types> {
    return Types{TensorOf(DType::kInt64, Dims{}, std::nullopt)};
  });
  add({"kiln::range"}, Range);
  add({"kiln::reduce"}, OnnxReduce);
  add({"kiln::arg_extreme"}, ArgExtreme);
  add({"kiln::layer_norm"}, OnnxLayerNorm);
  add({"kiln::eye_like"}, SameWithDType(2));
  add({"kiln::onnx_one_hot"}, OneHot);
  add({"kiln::compress"}, Compress);
  add({"kiln::conv_nd"}, ConvNd);
  add({"kiln::max_pool_nd"}, [](const Args& a) { return PoolLike(a, {1, 2, 3, 4, 5, true}); });
  add({"kiln::avg_pool_nd", "kiln::lp_pool_nd"},
      [](const Args& a) { return PoolLike(a, {1, 2, 3, 4, 5, false}); });
  add({"kiln::global_lp_pool"}, GlobalPool);
  add({"kiln::depth_to_space"}, SpaceDepth(true));
  add({"kiln::space_to_depth"}, SpaceDepth(false));
  add({"kiln::random_uniform_like", "kiln::random_normal_like"}, SameWithDType(3));
  add({"kiln::bernoulli"}, SameWithDType(1));
  add({"kiln::lstm"}, Recurrent(3, 12, 13, 15));
  add({"kiln::gru"}, Recurrent(2, 10, 11, 13));
  add({"kiln::rnn"}, Recurrent(2, 10, 11, 12));
  add({"kiln::dropout"}, [](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types(2, Type::Tensor());
    return Types{TensorOf(t->dtype, t->sizes, t->device), TensorOf(DType::kBool, t->sizes, t->device)};
  });
  return t;
}

}  // namespace kiln::passes::shape_internal
