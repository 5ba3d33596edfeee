// Functionalization's view half: which nodes make views, and how a new value
// of a view is written back into the tensor it views (the scatter that
// PyTorch's functionalization emits: slice_scatter, select_scatter, or the
// inverse reshape / permutation).
#include <algorithm>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontend/pt2/importer_internal.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {
namespace {

using ir::Value;

bool SharesSet(const ir::AliasInfo& a, const ir::AliasInfo& b) {
  for (const std::string& s : a.before_sets) {
    if (std::find(b.before_sets.begin(), b.before_sets.end(), s) != b.before_sets.end()) return true;
  }
  return false;
}

const TensorMeta* MetaOfArg(const Importer& importer, const Node& node, absl::string_view name) {
  for (const NamedArgument& na : node.inputs) {
    if (na.name == name && na.arg.kind == Argument::Kind::kTensor) return importer.MetaOf(na.arg.name);
  }
  return nullptr;
}

const TensorMeta* MetaOfOutput(const Importer& importer, const Node& node) {
  if (node.outputs.empty() || node.outputs[0].kind != Argument::Kind::kTensor) return nullptr;
  return importer.MetaOf(node.outputs[0].name);
}

bool SameLayout(const TensorMeta* a, const TensorMeta* b) {
  if (a == nullptr || b == nullptr || a->dtype != b->dtype) return false;
  const auto as = StaticValues(a->sizes), bs = StaticValues(b->sizes);
  const auto at = StaticValues(a->strides), bt = StaticValues(b->strides);
  return as && bs && at && bt && *as == *bs && *at == *bt;
}

bool RowMajor(const TensorMeta* m) {
  if (m == nullptr) return false;
  const auto sizes = StaticValues(m->sizes), strides = StaticValues(m->strides);
  return sizes && strides && IsRowMajor(*sizes, *strides);
}

std::optional<int64_t> StaticDimSize(const Value* v, int64_t dim) {
  if (!v->type()->is_tensor() || !v->type()->tensor().sizes) return std::nullopt;
  const auto& sizes = *v->type()->tensor().sizes;
  const int64_t rank = static_cast<int64_t>(sizes.size());
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return std::nullopt;
  return sizes[dim];
}

std::optional<int64_t> Rank(const Value* v) {
  if (!v->type()->is_tensor() || !v->type()->tensor().sizes) return std::nullopt;
  return static_cast<int64_t>(v->type()->tensor().sizes->size());
}

}  // namespace

bool IsRowMajor(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  if (sizes.size() != strides.size()) return false;
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    if (__builtin_mul_overflow(expected, sizes[d], &expected)) return false;
  }
  return true;
}

bool IsViewNode(const Importer& importer, const Node& node, const ir::FunctionSchema& schema) {
  const std::string name = schema.QualifiedName();
  // May alias: a view exactly when eager PyTorch returned its input.
  if (absl::StartsWith(name, "aten::to.") || name == "aten::contiguous") {
    return SameLayout(MetaOfArg(importer, node, "self"), MetaOfOutput(importer, node));
  }
  if (name == "aten::reshape" || name == "aten::reshape_as" || name == "aten::flatten.using_ints") {
    return RowMajor(MetaOfArg(importer, node, schema.arguments[0].name));
  }
  if (schema.returns.empty() || schema.arguments.empty()) return false;
  const std::optional<ir::AliasInfo>& in = schema.arguments[0].alias_info;
  const std::optional<ir::AliasInfo>& out = schema.returns[0].alias_info;
  if (!in || !out || out->is_write) return false;
  if (SharesSet(*out, *in)) return true;
  for (const ir::AliasInfo& c : out->contained) {  // Tensor(a)[]
    if (SharesSet(c, *in)) return true;
  }
  return false;
}

absl::StatusOr<Value*> EmitSliceScatter(NodeContext& ctx, Value* base, Value* src, int64_t dim,
                                        std::optional<int64_t> start, std::optional<int64_t> end,
                                        int64_t step) {
  if (step != 1) return ctx.Error("slice_scatter with a step other than 1 is not supported");
  GraphBuilder& b = ctx.builder();
  const std::optional<int64_t> rank = Rank(base);
  if (!rank) return ctx.Error("slice_scatter into a tensor of unknown rank");
  if (dim < 0) dim += *rank;
  if (dim < 0 || dim >= *rank) return ctx.Error("slice_scatter dim out of range");
  int64_t s = start.value_or(0);
  int64_t e = end.value_or(std::numeric_limits<int64_t>::max());
  // Python's slice bounds, when the size is known: empty pieces are left out.
  const std::optional<int64_t> size = StaticDimSize(base, dim);
  bool before = true, after = true;
  if (size) {
    auto clamp = [&](int64_t i) { return i < 0 ? std::max<int64_t>(i + *size, 0) : std::min(i, *size); };
    s = clamp(s);
    e = std::max(clamp(e), s);
    before = s > 0;
    after = e < *size;
  }
  // The pieces' types, when the base's are known (kiln has no shape
  // function for slice; lowering needs static shapes).
  auto typed = [&](Value* piece, int64_t length) {
    if (!size || !base->type()->is_tensor()) return;
    ir::TensorInfo info = base->type()->tensor();
    (*info.sizes)[dim] = length;
    info.strides.reset();
    piece->setType(ir::Type::TensorWith(std::move(info)));
  };
  std::vector<Value*> parts;
  if (before) {
    ASSIGN_OR_RETURN(Value* p, ctx.Op("aten::slice", {base, b.Int(dim), b.Int(0), b.Int(s), b.Int(1)}));
    typed(p, s);
    parts.push_back(p);
  }
  parts.push_back(src);
  if (after) {
    ASSIGN_OR_RETURN(Value* p, ctx.Op("aten::slice", {base, b.Int(dim), b.Int(e),
                                                      b.Int(std::numeric_limits<int64_t>::max()), b.Int(1)}));
    typed(p, *size - e);
    parts.push_back(p);
  }
  if (parts.size() == 1) return ctx.Op("aten::clone", {src, b.None()});
  return ctx.Op("aten::cat", {b.List(ir::Type::Tensor(), parts), b.Int(dim)});
}

absl::StatusOr<Value*> EmitSelectScatter(NodeContext& ctx, Value* base, Value* src, int64_t dim,
                                         int64_t index) {
  GraphBuilder& b = ctx.builder();
  ASSIGN_OR_RETURN(Value* row, ctx.Op("aten::unsqueeze", {src, b.Int(dim)}));
  const std::optional<int64_t> size = StaticDimSize(base, dim);
  if (index < 0 && size) index += *size;
  std::optional<int64_t> end;
  if (index != -1) {  // -1: the last row, its size unknown
    int64_t next = 0;
    if (__builtin_add_overflow(index, 1, &next)) return ctx.Error("select index out of range");
    end = next;
  }
  return EmitSliceScatter(ctx, base, row, dim, index, end, 1);
}

absl::StatusOr<Value*> ScatterIntoParent(Importer& importer, const Node& view_node, int list_index,
                                         Value* parent, Value* new_view) {
  ASSIGN_OR_RETURN(NodeContext ctx, importer.ContextFor(view_node, parent));
  const std::string name = ctx.schema().QualifiedName();
  GraphBuilder& b = ctx.builder();
  auto const_int = [&](absl::string_view arg) -> absl::StatusOr<int64_t> {
    std::optional<int64_t> v = ctx.ConstInt(arg);
    if (!v) return ctx.Error(absl::StrCat("a write through this view needs a constant '", arg, "'"));
    return *v;
  };
  if (name == "aten::alias" || name == "aten::detach" || name == "aten::lift_fresh" ||
      absl::StartsWith(name, "aten::to.") || name == "aten::contiguous") {
    return new_view;
  }
  if (name == "aten::view" || name == "aten::reshape" || name == "aten::_unsafe_view" ||
      name == "aten::flatten.using_ints" || name == "aten::unflatten.int" ||
      name == "aten::view_as" || name == "aten::reshape_as" || absl::StartsWith(name, "aten::squeeze") ||
      name == "aten::unsqueeze") {
    return ctx.Op("aten::reshape_as", {new_view, parent});
  }
  if (name == "aten::permute") {
    std::optional<std::vector<int64_t>> dims = ctx.ConstIntList("dims");
    if (!dims) return ctx.Error("a write through permute needs constant dims");
    const int64_t rank = static_cast<int64_t>(dims->size());
    std::vector<int64_t> inverse(dims->size(), -1);
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = (*dims)[i] < 0 ? (*dims)[i] + rank : (*dims)[i];
      if (d < 0 || d >= rank || inverse[d] != -1) return ctx.Error("permute dims are not a permutation");
      inverse[d] = i;
    }
    return ctx.Op("aten::permute", {new_view, b.IntList(inverse)});
  }
  if (name == "aten::transpose.int") {
    ASSIGN_OR_RETURN(Value* d0, ctx.Arg("dim0"));
    ASSIGN_OR_RETURN(Value* d1, ctx.Arg("dim1"));
    return ctx.Op("aten::transpose", {new_view, d0, d1});
  }
  if (name == "aten::t") return ctx.Op("aten::t", {new_view});
  if (name == "aten::slice.Tensor") {
    ASSIGN_OR_RETURN(int64_t dim, const_int("dim"));
    ASSIGN_OR_RETURN(int64_t step, const_int("step"));
    std::optional<int64_t> start, end;
    if (!ctx.IsNone("start")) {
      ASSIGN_OR_RETURN(start, const_int("start"));
    }
    if (!ctx.IsNone("end")) {
      ASSIGN_OR_RETURN(end, const_int("end"));
    }
    return EmitSliceScatter(ctx, parent, new_view, dim, start, end, step);
  }
  if (name == "aten::select.int") {
    ASSIGN_OR_RETURN(int64_t dim, const_int("dim"));
    ASSIGN_OR_RETURN(int64_t index, const_int("index"));
    return EmitSelectScatter(ctx, parent, new_view, dim, index);
  }
  if (name == "aten::narrow") {
    ASSIGN_OR_RETURN(int64_t dim, const_int("dim"));
    ASSIGN_OR_RETURN(int64_t start, const_int("start"));
    ASSIGN_OR_RETURN(int64_t length, const_int("length"));
    int64_t end = 0;
    if (__builtin_add_overflow(start, length, &end)) return ctx.Error("narrow out of range");
    return EmitSliceScatter(ctx, parent, new_view, dim, start, end, 1);
  }
  if (name == "aten::unbind.int" && list_index >= 0) {
    ASSIGN_OR_RETURN(int64_t dim, const_int("dim"));
    return EmitSelectScatter(ctx, parent, new_view, dim, list_index);
  }
  if ((name == "aten::split.Tensor" || name == "aten::split_with_sizes" || name == "aten::split.sizes") &&
      list_index >= 0) {
    ASSIGN_OR_RETURN(int64_t dim, const_int("dim"));
    int64_t start = 0, length = 0;
    if (name == "aten::split.Tensor") {
      ASSIGN_OR_RETURN(length, const_int("split_size"));
      if (__builtin_mul_overflow(length, list_index, &start)) return ctx.Error("split out of range");
    } else {
      std::optional<std::vector<int64_t>> sizes =
          ctx.ConstIntList(name == "aten::split.sizes" ? "split_size" : "split_sizes");
      if (!sizes || list_index >= static_cast<int>(sizes->size())) {
        return ctx.Error("a write through split needs constant sizes");
      }
      for (int i = 0; i < list_index; ++i) {
        if (__builtin_add_overflow(start, (*sizes)[i], &start)) return ctx.Error("split out of range");
      }
      length = (*sizes)[list_index];
    }
    int64_t end = 0;
    if (__builtin_add_overflow(start, length, &end)) return ctx.Error("split out of range");
    return EmitSliceScatter(ctx, parent, new_view, dim, start, end, 1);
  }
  return absl::UnimplementedError(absl::StrCat(
      "cannot write through a view made by ", name, " (node '", view_node.name, "')"));
}

}  // namespace kiln::frontend::pt2
