// matmul and linear of the training IR as the 2-D and 3-D products backends
// run through BLAS (mm, addmm, bmm), the way run_decompositions() writes
// them: batch dims are broadcast and flattened into one, a matrix operand
// folds the leading dims of the other into its rows. With symbolic sizes
// the same holds when the traced metadata shows equal batch dims (no
// broadcast): the reshapes then take aten::size values, which fold when
// the program is specialized. Otherwise the op stays as it is.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/pt2/importer_internal.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {
namespace {

using ir::Value;

std::optional<int64_t> Product(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0 || __builtin_mul_overflow(n, s, &n)) return std::nullopt;
  }
  return n;
}

absl::StatusOr<Value*> Reshape(NodeContext& ctx, Value* x, DType dtype, const std::vector<int64_t>& sizes) {
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::reshape", {x, ctx.builder().IntList(sizes)}));
  SetStaticType(y, dtype, sizes);
  return y;
}

}  // namespace

void SetStaticType(Value* v, DType dtype, std::vector<int64_t> sizes) {
  ir::TensorInfo info;
  info.dtype = dtype;
  info.sizes.emplace(sizes.begin(), sizes.end());
  v->setType(ir::Type::TensorWith(std::move(info)));
}

absl::StatusOr<Value*> EmitMatmul(NodeContext& ctx, Value* a, Value* b) {
  const std::optional<std::vector<int64_t>> as = NodeContext::StaticSizes(a);
  const std::optional<std::vector<int64_t>> bs = NodeContext::StaticSizes(b);
  const std::optional<DType> dtype = NodeContext::DTypeOf(a);
  if (!as || !bs || !dtype || NodeContext::DTypeOf(b) != dtype || as->size() < 2 || bs->size() < 2) {
    return ctx.Op("aten::matmul", {a, b});
  }
  const int64_t m = (*as)[as->size() - 2], k = as->back(), n = bs->back();
  if ((*bs)[bs->size() - 2] != k) {
    return ctx.Error(absl::StrCat("matmul of [..., ", m, ", ", k, "] and [..., ", (*bs)[bs->size() - 2], ", ",
                                  n, "]"));
  }
  const std::vector<int64_t> a_batch(as->begin(), as->end() - 2), b_batch(bs->begin(), bs->end() - 2);
  if (b_batch.empty()) {
    // [..., m, k] @ [k, n]: the batch dims become rows of one mm.
    if (a_batch.empty()) {
      ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::mm", {a, b}));
      SetStaticType(y, *dtype, {m, n});
      return y;
    }
    const std::optional<int64_t> rows = Product(std::vector<int64_t>(as->begin(), as->end() - 1));
    if (!rows) return ctx.Error("matmul sizes overflow");
    ASSIGN_OR_RETURN(Value* a2, Reshape(ctx, a, *dtype, {*rows, k}));
    ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::mm", {a2, b}));
    SetStaticType(y, *dtype, {*rows, n});
    std::vector<int64_t> out = a_batch;
    out.push_back(m);
    out.push_back(n);
    return Reshape(ctx, y, *dtype, out);
  }
  // Broadcast the batch dims (right-aligned), then one bmm over their product.
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  std::vector<int64_t> batch(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a_batch.size() ? 1 : a_batch[i - (rank - a_batch.size())];
    const int64_t y = i < rank - b_batch.size() ? 1 : b_batch[i - (rank - b_batch.size())];
    if (x != y && x != 1 && y != 1) return ctx.Error("matmul batch dims do not broadcast");
    batch[i] = x == 1 ? y : x;
  }
  const std::optional<int64_t> count = Product(batch);
  if (!count) return ctx.Error("matmul sizes overflow");
  auto to_3d = [&](Value* t, const std::vector<int64_t>& own, int64_t r, int64_t c) -> absl::StatusOr<Value*> {
    std::vector<int64_t> full = batch;
    full.push_back(r);
    full.push_back(c);
    if (own != full) {
      ASSIGN_OR_RETURN(t, ctx.Op("aten::expand", {t, ctx.builder().IntList(full), ctx.builder().Bool(false)}));
      SetStaticType(t, *dtype, full);
    }
    return Reshape(ctx, t, *dtype, {*count, r, c});
  };
  ASSIGN_OR_RETURN(Value* a3, to_3d(a, *as, m, k));
  ASSIGN_OR_RETURN(Value* b3, to_3d(b, *bs, k, n));
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::bmm", {a3, b3}));
  SetStaticType(y, *dtype, {*count, m, n});
  std::vector<int64_t> out = batch;
  out.push_back(m);
  out.push_back(n);
  return Reshape(ctx, y, *dtype, out);
}

namespace {

bool SameSize(const SymSize& a, const SymSize& b) {
  if (a.value || b.value) return a.value == b.value;
  return a.expr && b.expr && a.expr->ToString() == b.expr->ToString();
}

// Dim `d` of `x`: its traced value, or aten::size(x, d).
absl::StatusOr<Value*> Dim(NodeContext& ctx, Value* x, const TensorMeta& meta, size_t d) {
  if (meta.sizes[d].value) return ctx.builder().Int(*meta.sizes[d].value);
  return ctx.Op("aten::size", {x, ctx.builder().Int(static_cast<int64_t>(d))});
}

absl::StatusOr<Value*> SizeList(NodeContext& ctx, const std::vector<Value*>& dims) {
  return ctx.builder().List(ir::Type::Int(), dims);
}

// a @ b with symbolic sizes: equal ranks >= 3, equal batch dims, agreeing
// inner dims (by the traced metadata). Null when the shapes do not fit.
absl::StatusOr<Value*> SymbolicMatmul(NodeContext& ctx, Value* a, Value* b) {
  const TensorMeta* am = ctx.InputMeta("self");
  const TensorMeta* bm = ctx.InputMeta("other");
  if (am == nullptr || bm == nullptr || am->sizes.size() < 3 || am->sizes.size() != bm->sizes.size()) {
    return nullptr;
  }
  const size_t r = am->sizes.size();
  for (size_t d = 0; d + 2 < r; ++d) {
    if (!SameSize(am->sizes[d], bm->sizes[d])) return nullptr;
  }
  if (!SameSize(am->sizes[r - 1], bm->sizes[r - 2])) return nullptr;
  GraphBuilder& b_ = ctx.builder();
  ASSIGN_OR_RETURN(Value* m, Dim(ctx, a, *am, r - 2));
  ASSIGN_OR_RETURN(Value* k, Dim(ctx, a, *am, r - 1));
  ASSIGN_OR_RETURN(Value* n, Dim(ctx, b, *bm, r - 1));
  ASSIGN_OR_RETURN(Value* a_shape, SizeList(ctx, {b_.Int(-1), m, k}));
  ASSIGN_OR_RETURN(Value* b_shape, SizeList(ctx, {b_.Int(-1), k, n}));
  ASSIGN_OR_RETURN(Value* a3, ctx.Op("aten::reshape", {a, a_shape}));
  ASSIGN_OR_RETURN(Value* b3, ctx.Op("aten::reshape", {b, b_shape}));
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::bmm", {a3, b3}));
  std::vector<Value*> out;
  for (size_t d = 0; d + 2 < r; ++d) {
    ASSIGN_OR_RETURN(Value* s, Dim(ctx, a, *am, d));
    out.push_back(s);
  }
  out.push_back(m);
  out.push_back(n);
  ASSIGN_OR_RETURN(Value* shape, SizeList(ctx, out));
  return ctx.Op("aten::reshape", {y, shape});
}

absl::StatusOr<std::vector<Value*>> Matmul(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Value* a, ctx.Arg("self"));
  ASSIGN_OR_RETURN(Value* b, ctx.Arg("other"));
  if (!NodeContext::StaticSizes(a) || !NodeContext::StaticSizes(b)) {
    ASSIGN_OR_RETURN(Value* y, SymbolicMatmul(ctx, a, b));
    if (y != nullptr) return std::vector<Value*>{y};
  }
  ASSIGN_OR_RETURN(Value* y, EmitMatmul(ctx, a, b));
  return std::vector<Value*>{y};
}

// linear with symbolic leading dims: rows through addmm, reshaped back with
// aten::size values. Null when the weight or the inner dim is not static.
absl::StatusOr<Value*> SymbolicLinear(NodeContext& ctx, Value* x, Value* w, Value* bias) {
  const TensorMeta* xm = ctx.InputMeta("input");
  const std::optional<std::vector<int64_t>> ws = NodeContext::StaticSizes(w);
  if (xm == nullptr || xm->sizes.size() < 2 || !ws || ws->size() != 2 || !xm->sizes.back().value ||
      *xm->sizes.back().value != (*ws)[1]) {
    return nullptr;
  }
  GraphBuilder& b = ctx.builder();
  const int64_t k = (*ws)[1], n = (*ws)[0];
  ASSIGN_OR_RETURN(Value* rows_shape, SizeList(ctx, {b.Int(-1), b.Int(k)}));
  ASSIGN_OR_RETURN(Value* x2, ctx.Op("aten::reshape", {x, rows_shape}));
  ASSIGN_OR_RETURN(Value* wt, ctx.Op("aten::t", {w}));
  Value* y;
  if (bias->type()->kind() == ir::TypeKind::kNone) {
    ASSIGN_OR_RETURN(y, ctx.Op("aten::mm", {x2, wt}));
  } else {
    ASSIGN_OR_RETURN(y, ctx.Op("aten::addmm", {bias, x2, wt, b.Int(1), b.Int(1)}));
  }
  std::vector<Value*> out;
  for (size_t d = 0; d + 1 < xm->sizes.size(); ++d) {
    ASSIGN_OR_RETURN(Value* s, Dim(ctx, x, *xm, d));
    out.push_back(s);
  }
  out.push_back(b.Int(n));
  ASSIGN_OR_RETURN(Value* shape, SizeList(ctx, out));
  return ctx.Op("aten::reshape", {y, shape});
}

// linear(x, w, b) = x @ w^T + b: rows of x through one addmm (or mm).
absl::StatusOr<std::vector<Value*>> Linear(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("input"));
  ASSIGN_OR_RETURN(Value* w, ctx.Arg("weight"));
  ASSIGN_OR_RETURN(Value* bias, ctx.Arg("bias"));
  const std::optional<std::vector<int64_t>> xs = NodeContext::StaticSizes(x);
  const std::optional<std::vector<int64_t>> ws = NodeContext::StaticSizes(w);
  const std::optional<DType> dtype = NodeContext::DTypeOf(x);
  if (!xs || !ws || !dtype || xs->empty() || ws->size() != 2 || ws->back() != xs->back()) {
    ASSIGN_OR_RETURN(Value* y, SymbolicLinear(ctx, x, w, bias));
    if (y == nullptr) {
      ASSIGN_OR_RETURN(y, ctx.Op("aten::linear", {x, w, bias}));
    }
    return std::vector<Value*>{y};
  }
  const int64_t k = xs->back(), n = (*ws)[0];
  const std::optional<int64_t> rows = Product(std::vector<int64_t>(xs->begin(), xs->end() - 1));
  if (!rows) return ctx.Error("linear sizes overflow");
  Value* x2 = x;
  if (xs->size() != 2) {
    ASSIGN_OR_RETURN(x2, Reshape(ctx, x, *dtype, {*rows, k}));
  }
  ASSIGN_OR_RETURN(Value* wt, ctx.Op("aten::t", {w}));
  SetStaticType(wt, *dtype, {k, n});
  Value* y;
  if (bias->type()->kind() == ir::TypeKind::kNone) {
    ASSIGN_OR_RETURN(y, ctx.Op("aten::mm", {x2, wt}));
  } else {
    GraphBuilder& b = ctx.builder();
    ASSIGN_OR_RETURN(y, ctx.Op("aten::addmm", {bias, x2, wt, b.Int(1), b.Int(1)}));
  }
  SetStaticType(y, *dtype, {*rows, n});
  if (xs->size() == 2) return std::vector<Value*>{y};
  std::vector<int64_t> out(xs->begin(), xs->end() - 1);
  out.push_back(n);
  ASSIGN_OR_RETURN(Value* r, Reshape(ctx, y, *dtype, out));
  return std::vector<Value*>{r};
}

}  // namespace

void AddLinearAlgebraRules(absl::flat_hash_map<std::string, RuleFn>& rules) {
  rules["aten::matmul"] = Matmul;
  rules["aten::linear"] = Linear;
}

}  // namespace kiln::frontend::pt2
