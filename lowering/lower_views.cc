// View lowerings: reinterpretations of a storage (kView buffers) where the
// strides allow, copies otherwise; plus cat/stack as pointwise selects.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lowering/elementwise.h"
#include "lowering/index_math.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

// `src` as a new contiguous buffer of the same shape, or (when `sizes`
// differs) reshaped in row-major order.
TensorRef Copy(LowerContext& ctx, const TensorRef& src, const OutputInfo& out) {
  std::vector<ExprPtr> idx;
  if (out.sizes == src.layout.sizes) {
    idx = Vars(0, static_cast<int>(out.sizes.size()));
  } else {
    Layout flat = Layout::Contiguous(out.dtype, out.sizes);
    idx = UnravelIndex(IndexOf(flat), src.layout.sizes, out.sizes);
  }
  return ctx.AddPointwise(out, Cast(ctx.LoadAt(src, idx, out.sizes), out.dtype));
}

// PyTorch's stride computation for view(): the strides of `new_sizes` over
// `layout`, or nullopt when the view needs a copy.
std::optional<std::vector<int64_t>> ViewStrides(const Layout& layout,
                                                const std::vector<int64_t>& new_sizes) {
  const std::vector<int64_t>& old_sizes = layout.sizes;
  const std::vector<int64_t>& old_strides = layout.strides;
  if (old_sizes.empty() || layout.numel() == 0) {
    return Tensor::ContiguousStrides(new_sizes);
  }
  std::vector<int64_t> strides(new_sizes.size(), 1);
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[d];
    if (d == 0 ||
        (old_sizes[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

// view/reshape/flatten/...: the output shape comes from the node's type.
absl::StatusOr<bool> Reshape(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  Layout l = Layout::Contiguous(self.layout.dtype, out.sizes);
  if (l.numel() != self.layout.numel()) return ctx.Invalid("reshape changes the element count");
  if (out.dtype != self.layout.dtype) return ctx.Invalid("reshape changes the dtype");
  std::optional<std::vector<int64_t>> strides = ViewStrides(self.layout, out.sizes);
  if (!strides) {
    ctx.BindTensor(ctx.node().output(0), Copy(ctx, self, out));
    return true;
  }
  l.strides = *strides;
  l.offset = self.layout.offset;
  ASSIGN_OR_RETURN(TensorRef view, ctx.AddView(self, l));
  ctx.BindTensor(ctx.node().output(0), view);
  return true;
}

// Binds the output to a view of "self" with `layout`, after checking the
// node's declared shape agrees.
absl::StatusOr<bool> BindView(LowerContext& ctx, const TensorRef& self, Layout layout) {
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  if (out.sizes != layout.sizes) {
    return ctx.Invalid(absl::StrCat("view shape [", absl::StrJoin(layout.sizes, ", "),
                                    "] disagrees with the output type"));
  }
  ASSIGN_OR_RETURN(TensorRef view, ctx.AddView(self, std::move(layout)));
  ctx.BindTensor(ctx.node().output(0), view);
  return true;
}

absl::StatusOr<bool> Permute(LowerContext& ctx, std::vector<int64_t> dims) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  int64_t rank = static_cast<int64_t>(self.layout.sizes.size());
  if (static_cast<int64_t>(dims.size()) != rank) return ctx.Invalid("permute rank mismatch");
  Layout l = self.layout;
  std::vector<bool> seen(rank, false);
  for (int64_t i = 0; i < rank; ++i) {
    ASSIGN_OR_RETURN(int64_t d, NormalizeDim(ctx, dims[i], rank));
    if (seen[d]) return ctx.Invalid("repeated dim in permute");
    seen[d] = true;
    l.sizes[i] = self.layout.sizes[d];
    l.strides[i] = self.layout.strides[d];
  }
  return BindView(ctx, self, l);
}

absl::StatusOr<bool> Transpose(LowerContext& ctx, const char* a, const char* b) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  int64_t rank = static_cast<int64_t>(self.layout.sizes.size());
  std::vector<int64_t> dims(rank);
  for (int64_t i = 0; i < rank; ++i) dims[i] = i;
  if (rank < 2 && a == nullptr) return BindView(ctx, self, self.layout);  // t() of 0/1-d
  int64_t d0 = rank - 2, d1 = rank - 1;
  if (a != nullptr) {
    ASSIGN_OR_RETURN(int64_t x, ctx.IntArg(a));
    ASSIGN_OR_RETURN(int64_t y, ctx.IntArg(b));
    ASSIGN_OR_RETURN(d0, NormalizeDim(ctx, x, rank));
    ASSIGN_OR_RETURN(d1, NormalizeDim(ctx, y, rank));
    if (rank == 0) return BindView(ctx, self, self.layout);
  }
  std::swap(dims[d0], dims[d1]);
  return Permute(ctx, dims);
}

absl::StatusOr<bool> Expand(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  size_t rank = self.layout.sizes.size();
  if (out.sizes.size() < rank) return ctx.Invalid("expand to fewer dims");
  size_t shift = out.sizes.size() - rank;
  Layout l = self.layout;
  l.sizes = out.sizes;
  l.strides.assign(out.sizes.size(), 0);
  for (size_t k = 0; k < rank; ++k) {
    int64_t s = self.layout.sizes[k];
    if (s == out.sizes[k + shift]) {
      l.strides[k + shift] = self.layout.strides[k];
    } else if (s != 1) {
      return ctx.Invalid("expand of a non-singleton dim");
    }
  }
  return BindView(ctx, self, l);
}

absl::StatusOr<bool> Slice(LowerContext& ctx, bool narrow) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  int64_t rank = static_cast<int64_t>(self.layout.sizes.size());
  if (rank == 0) return ctx.Invalid("slice of a 0-dim tensor");
  ASSIGN_OR_RETURN(int64_t dim_arg, ctx.IntArg("dim"));
  ASSIGN_OR_RETURN(int64_t dim, NormalizeDim(ctx, dim_arg, rank));
  int64_t size = self.layout.sizes[dim];
  int64_t start = 0, end = size, step = 1;
  if (narrow) {
    ASSIGN_OR_RETURN(start, ctx.IntArg("start"));
    ASSIGN_OR_RETURN(int64_t length, ctx.IntArg("length"));
    if (start < 0) start += size;
    if (start < 0 || length < 0 || start > size || length > size - start) {
      return ctx.Invalid("narrow out of range");
    }
    end = start + length;
  } else {
    if (!ctx.IsNone("start")) {
      ASSIGN_OR_RETURN(start, ctx.IntArg("start"));
    }
    if (!ctx.IsNone("end")) {
      ASSIGN_OR_RETURN(end, ctx.IntArg("end"));
    }
    ASSIGN_OR_RETURN(step, ctx.IntArg("step"));
    if (step <= 0) return ctx.Invalid("slice step must be positive");
    auto clamp = [size](int64_t v) {
      if (v < 0) v = v < -size ? 0 : v + size;
      return std::min(v, size);
    };
    start = clamp(start);
    end = std::max(clamp(end), start);
  }
  Layout l = self.layout;
  l.sizes[dim] = (end - start + step - 1) / step;
  l.offset += start * self.layout.strides[dim];
  l.strides[dim] *= step;
  return BindView(ctx, self, l);
}

absl::StatusOr<bool> Select(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  int64_t rank = static_cast<int64_t>(self.layout.sizes.size());
  if (rank == 0) return ctx.Invalid("select of a 0-dim tensor");
  ASSIGN_OR_RETURN(int64_t dim_arg, ctx.IntArg("dim"));
  ASSIGN_OR_RETURN(int64_t dim, NormalizeDim(ctx, dim_arg, rank));
  ASSIGN_OR_RETURN(int64_t index, ctx.IntArg("index"));
  int64_t size = self.layout.sizes[dim];
  if (index < 0) index += size;
  if (index < 0 || index >= size) return ctx.Invalid("select index out of range");
  Layout l = self.layout;
  l.offset += index * self.layout.strides[dim];
  l.sizes.erase(l.sizes.begin() + dim);
  l.strides.erase(l.strides.begin() + dim);
  return BindView(ctx, self, l);
}

// squeeze/unsqueeze/flatten of a view: any shape change that only adds or
// drops size-1 dims keeps the strides of the other dims.
absl::StatusOr<bool> DropOrAddOnes(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  Layout l = self.layout;
  l.sizes = out.sizes;
  l.strides.assign(out.sizes.size(), 1);
  size_t j = 0;
  for (size_t i = 0; i < out.sizes.size(); ++i) {
    while (j < self.layout.sizes.size() && self.layout.sizes[j] == 1 && out.sizes[i] != 1) ++j;
    if (out.sizes[i] == 1 && (j >= self.layout.sizes.size() || self.layout.sizes[j] != 1)) {
      continue;  // a new size-1 dim (its stride never matters)
    }
    if (j >= self.layout.sizes.size() || self.layout.sizes[j] != out.sizes[i]) {
      return Reshape(ctx);
    }
    l.strides[i] = self.layout.strides[j++];
  }
  while (j < self.layout.sizes.size() && self.layout.sizes[j] == 1) ++j;
  if (j != self.layout.sizes.size()) return Reshape(ctx);
  return BindView(ctx, self, l);
}

absl::StatusOr<bool> Alias(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg(ctx.HasArg("self") ? "self" : "input"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  if (out.sizes != self.layout.sizes || out.dtype != self.layout.dtype) {
    return ctx.Invalid("alias changes the shape or dtype");
  }
  ctx.BindTensor(ctx.node().output(0), self);
  return true;
}

absl::StatusOr<bool> Contiguous(LowerContext& ctx, bool always_copy) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  if (out.sizes != self.layout.sizes || out.dtype != self.layout.dtype) {
    return ctx.Invalid("copy changes the shape or dtype");
  }
  if (!always_copy && self.layout.IsContiguous()) {
    ctx.BindTensor(ctx.node().output(0), self);
    return true;
  }
  ctx.BindTensor(ctx.node().output(0), Copy(ctx, self, out));
  return true;
}

// dropout in eval mode is the identity; in training it is random (extern).
// cat/stack: each output element selects one piece; every piece's index is
// clamped into range so that both sides of each `where` load in bounds.
absl::StatusOr<bool> Concatenate(LowerContext& ctx, bool stack) {
  const ir::Value* list = ctx.Input("tensors");
  const std::vector<TensorRef>* pieces = list ? ctx.FindTensorList(list) : nullptr;
  if (pieces == nullptr) return false;
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  ASSIGN_OR_RETURN(int64_t dim_arg, ctx.IntArg("dim"));
  int64_t rank = static_cast<int64_t>(out.sizes.size());
  ASSIGN_OR_RETURN(int64_t dim, NormalizeDim(ctx, dim_arg, rank));
  if (rank == 0) return ctx.Invalid("cat of 0-dim tensors");
  DType compute = ComputeDType(out.dtype);
  std::vector<std::pair<int64_t, ExprPtr>> parts;  // (end offset along dim, value)
  int64_t offset = 0;
  ExprPtr v = Var(static_cast<int>(dim));
  for (size_t j = 0; j < pieces->size(); ++j) {
    const TensorRef& p = (*pieces)[j];
    const std::vector<int64_t>& ps = p.layout.sizes;
    // Legacy behaviour: 1-d empty tensors are skipped by cat.
    if (!stack && ps.size() == 1 && ps[0] == 0 && rank != 1) continue;
    size_t expected_rank = stack ? out.sizes.size() - 1 : out.sizes.size();
    if (ps.size() != expected_rank) return ctx.Invalid("cat pieces differ in rank");
    std::vector<ExprPtr> idx;
    int64_t extent = stack ? 1 : ps[dim];
    for (int64_t d = 0; d < rank; ++d) {
      if (d == dim) {
        if (stack) continue;
        if (extent == 0) break;
        ExprPtr local = Binary(ExprOp::kSub, v, IntConst(offset));
        if (offset > 0) local = Binary(ExprOp::kMax, local, IntConst(0));
        local = Binary(ExprOp::kMin, local, IntConst(extent - 1));
        idx.push_back(local);
        continue;
      }
      size_t pd = stack && d > dim ? d - 1 : d;
      if (ps[pd] != out.sizes[d]) return ctx.Invalid("cat pieces differ in size");
      idx.push_back(Var(static_cast<int>(d)));
    }
    offset += extent;
    if (extent == 0) continue;
    parts.emplace_back(offset, Cast(ctx.LoadAt(p, idx, out.sizes), compute));
  }
  if (offset != out.sizes[dim]) return ctx.Invalid("cat sizes disagree with the output type");
  ExprPtr body;
  for (size_t j = parts.size(); j-- > 0;) {
    body = body ? Where(Binary(ExprOp::kLt, v, IntConst(parts[j].first)), parts[j].second, body)
                : parts[j].second;
  }
  if (!body) body = Literal(0, compute);  // empty output
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, body));
  return true;
}

}  // namespace

absl::StatusOr<TensorRef> ReshapeTo(LowerContext& ctx, const TensorRef& t,
                                    const std::vector<int64_t>& sizes) {
  Layout l = Layout::Contiguous(t.layout.dtype, sizes, t.layout.device);
  if (l.numel() != t.layout.numel()) return ctx.Invalid("reshape changes the element count");
  if (sizes == t.layout.sizes && t.layout.IsContiguous()) return t;
  if (std::optional<std::vector<int64_t>> strides = ViewStrides(t.layout, sizes)) {
    l.strides = *strides;
    l.offset = t.layout.offset;
    return ctx.AddView(t, l);
  }
  OutputInfo out;
  out.sizes = sizes;
  out.dtype = t.layout.dtype;
  out.device = t.layout.device;
  return Copy(ctx, t, out);
}

LoweringFn LowerReshape() { return Reshape; }
LoweringFn LowerSqueezeOrUnsqueeze() { return DropOrAddOnes; }
LoweringFn LowerPermute() {
  return [](LowerContext& ctx) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(auto dims, ctx.IntListArg("dims"));
    if (!dims) return ctx.Invalid("permute without dims");
    return Permute(ctx, *dims);
  };
}
LoweringFn LowerTranspose() {
  return [](LowerContext& ctx) { return Transpose(ctx, "dim0", "dim1"); };
}
LoweringFn LowerMatrixTranspose() {
  return [](LowerContext& ctx) { return Transpose(ctx, nullptr, nullptr); };
}
LoweringFn LowerExpand() { return Expand; }
LoweringFn LowerSlice() {
  return [](LowerContext& ctx) { return Slice(ctx, false); };
}
LoweringFn LowerNarrow() {
  return [](LowerContext& ctx) { return Slice(ctx, true); };
}
LoweringFn LowerSelect() { return Select; }
LoweringFn LowerContiguous() {
  return [](LowerContext& ctx) { return Contiguous(ctx, false); };
}
LoweringFn LowerClone() {
  return [](LowerContext& ctx) { return Contiguous(ctx, true); };
}
LoweringFn LowerAlias() { return Alias; }
LoweringFn LowerCat() {
  return [](LowerContext& ctx) { return Concatenate(ctx, false); };
}
LoweringFn LowerStack() {
  return [](LowerContext& ctx) { return Concatenate(ctx, true); };
}

}  // namespace kiln::lowering
