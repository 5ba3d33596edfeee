// Shape and dtype peepholes: queries answered from refined tensor types
// (size, dim, len, numel, dtype, device, is_floating_point, is_cuda), and
// conversions or views that are the identity on what the type says
// (to / type_as to the same dtype and device, t(t(x)), transpose of a
// transpose, reshape / view / expand to the same complete shape).
//
// A view replaced by its input aliases the same storage with the same
// layout, so the rewrite preserves aliasing and mutation behaviour.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ir.h"
#include "ir/op_registry.h"
#include "ir/constants.h"
#include "passes/peephole_rule.h"
#include "support/tensor.h"

namespace kiln::passes {
namespace {

using ir::IValue;
using ir::Node;
using ir::TensorInfo;
using ir::Value;

ir::Symbol S(const char* q) { return ir::Symbol::FromQualString(q); }

const TensorInfo* InfoOf(const Value* v) {
  return v->type()->is_tensor() ? &v->type()->tensor() : nullptr;
}

std::optional<std::vector<int64_t>> CompleteSizes(const Value* v) {
  const TensorInfo* info = InfoOf(v);
  if (info == nullptr || !info->HasCompleteSizes()) return std::nullopt;
  return info->ConcreteSizes();
}

std::optional<std::vector<int64_t>> ConstantIntList(const Value* v) {
  if (!IsConstant(v)) return std::nullopt;
  std::optional<IValue> c = ConstantValue(v);
  if (!c || !c->isList()) return std::nullopt;
  std::vector<int64_t> out;
  for (const IValue& e : c->elements()) {
    if (!e.isInt()) return std::nullopt;
    out.push_back(e.toInt());
  }
  return out;
}

std::optional<int64_t> NormalizeDim(int64_t dim, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (dim < 0) dim += r;
  if (dim < 0 || dim >= r) return std::nullopt;
  return dim;
}

bool IsConstantNone(const Value* v) {
  return v->type()->kind() == ir::TypeKind::kNone ||
         (IsConstant(v) && ConstantValue(v) && ConstantValue(v)->isNone());
}

// ---- queries

bool SizeOfKnownShape(Node* n, RewriteContext& ctx) {
  if (n->outputs().size() != 1 || n->inputs().empty()) return false;
  const TensorInfo* info = InfoOf(n->input(0));
  if (info == nullptr || !info->sizes) return false;
  if (n->inputs().size() == 1) {  // aten::size(Tensor) -> int[]
    if (!info->HasCompleteSizes() || !IsNeverMutated(n->output(), ctx.ops())) return false;
    return FoldTo(n, IValue::IntList(info->ConcreteSizes()), ctx);
  }
  if (n->inputs().size() != 2) return false;  // aten::size.int(Tensor, int)
  std::optional<int64_t> dim = ConstantInt(n->input(1));
  if (!dim) return false;
  std::optional<int64_t> d = NormalizeDim(*dim, info->sizes->size());
  if (!d || !(*info->sizes)[static_cast<size_t>(*d)]) return false;
  return FoldTo(n, IValue::Int(*(*info->sizes)[static_cast<size_t>(*d)]), ctx);
}

bool DimOfKnownRank(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  const TensorInfo* info = InfoOf(n->input());
  if (info == nullptr || !info->rank()) return false;
  return FoldTo(n, IValue::Int(static_cast<int64_t>(*info->rank())), ctx);
}

// aten::len(Tensor) with a known first dim; aten::len(aten::size(x)) with a
// known rank.
bool LenOfShape(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  Value* in = n->input();
  if (const TensorInfo* info = InfoOf(in)) {
    if (!info->sizes || info->sizes->empty() || !(*info->sizes)[0]) return false;
    return FoldTo(n, IValue::Int(*(*info->sizes)[0]), ctx);
  }
  static const ir::Symbol kSize = S("aten::size");
  Node* size = in->node();
  if (size->kind() != kSize || size->inputs().size() != 1) return false;
  const TensorInfo* info = InfoOf(size->input());
  if (info == nullptr || !info->rank() || !IsNeverMutated(in, ctx.ops())) return false;
  FoldTo(n, IValue::Int(static_cast<int64_t>(*info->rank())), ctx);
  if (!size->hasUses()) ctx.Erase(size);
  return true;
}

bool NumelOfKnownShape(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  std::optional<std::vector<int64_t>> sizes = CompleteSizes(n->input());
  if (!sizes) return false;
  int64_t numel = 1;
  for (int64_t s : *sizes) {
    if (__builtin_mul_overflow(numel, s, &numel)) return false;
  }
  return FoldTo(n, IValue::Int(numel), ctx);
}

bool DtypeOfKnown(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  std::optional<DType> dtype = KnownDType(n->input());
  if (!dtype) return false;
  return FoldTo(n, IValue::Int(DTypeCode(*dtype)), ctx);
}

bool DeviceOfKnown(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  const TensorInfo* info = InfoOf(n->input());
  if (info == nullptr || !info->device) return false;
  return FoldTo(n, IValue::FromDevice(*info->device), ctx);
}

bool IsFloatingPointOfKnown(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  std::optional<DType> dtype = KnownDType(n->input());
  if (!dtype) return false;
  return FoldTo(n, IValue::Bool(IsFloatingPoint(*dtype)), ctx);
}

bool IsCudaOfKnown(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  const TensorInfo* info = InfoOf(n->input());
  if (info == nullptr || !info->device) return false;
  return FoldTo(n, IValue::Bool(info->device->type == "cuda"), ctx);
}

// ---- conversions

// The argument `name` of `n`'s matched schema, or null when the schema has
// no such argument or the node omits it (so its default applies).
const Value* Arg(const Node& n, const ir::Operator& op, const char* name) {
  const int i = op.schema.ArgumentIndex(name);
  if (i < 0 || static_cast<size_t>(i) >= n.inputs().size()) return nullptr;
  return n.input(static_cast<size_t>(i));
}

bool SameDtypeAndDevice(const Value* x, const Value* y) {
  const TensorInfo* a = InfoOf(x);
  const TensorInfo* b = InfoOf(y);
  return a && b && a->dtype && b->dtype && *a->dtype == *b->dtype && a->device && b->device &&
         *a->device == *b->device;
}

// aten::to that converts to x's own dtype / device without copy=True or a
// memory format: returns x itself (as PyTorch's `to` does).
bool ToSameType(Node* n, RewriteContext& ctx) {
  if (n->outputs().size() != 1 || n->inputs().empty()) return false;
  const Value* x = n->input(0);
  const TensorInfo* info = InfoOf(x);
  if (info == nullptr) return false;
  const ir::Operator* op = ctx.ops().Match(*n);
  if (op == nullptr) return false;
  if (const Value* copy = Arg(*n, *op, "copy")) {
    std::optional<IValue> c = ConstantValue(copy);
    if (!c || !c->isBool() || c->toBool()) return false;
  }
  for (const char* must_be_none : {"memory_format", "layout", "pin_memory"}) {
    const Value* v = Arg(*n, *op, must_be_none);
    if (v != nullptr && !IsConstantNone(v)) return false;
  }
  if (const Value* dtype = Arg(*n, *op, "dtype")) {
    if (!IsConstantNone(dtype)) {
      std::optional<int64_t> code = ConstantInt(dtype);
      if (!code || !info->dtype || *code != DTypeCode(*info->dtype)) return false;
    }
  }
  if (const Value* device = Arg(*n, *op, "device")) {
    if (!IsConstantNone(device)) {
      std::optional<IValue> d = ConstantValue(device);
      if (!d || !d->isDevice() || !info->device || d->toDevice() != *info->device) return false;
    }
  }
  if (const Value* other = Arg(*n, *op, "other")) {
    if (!SameDtypeAndDevice(x, other)) return false;
  }
  return ForwardTo(n, n->input(0), ctx);
}

bool TypeAsSame(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 2 || n->outputs().size() != 1) return false;
  if (!SameDtypeAndDevice(n->input(0), n->input(1))) return false;
  return ForwardTo(n, n->input(0), ctx);
}

// ---- views that undo each other or change nothing

bool TransposeOfTranspose(Node* n, RewriteContext& ctx) {
  static const ir::Symbol kT = S("aten::t");
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  Node* inner = n->input()->node();
  if (inner->kind() != kT || inner->inputs().size() != 1) return false;
  ForwardTo(n, inner->input(), ctx);
  if (!inner->hasUses()) ctx.Erase(inner);
  return true;
}

// The two dims of a transpose as a sorted pair, normalised when the rank is
// known; nullopt when not constant.
std::optional<std::pair<int64_t, int64_t>> TransposedDims(const Node& n,
                                                          std::optional<size_t> rank) {
  if (n.inputs().size() != 3) return std::nullopt;
  std::optional<int64_t> a = ConstantInt(n.input(1));
  std::optional<int64_t> b = ConstantInt(n.input(2));
  if (!a || !b) return std::nullopt;
  if (rank) {
    a = NormalizeDim(*a, *rank);
    b = NormalizeDim(*b, *rank);
    if (!a || !b) return std::nullopt;
  }
  return std::make_pair(std::min(*a, *b), std::max(*a, *b));
}

bool TransposeTwice(Node* n, RewriteContext& ctx) {
  static const ir::Symbol kTranspose = S("aten::transpose");
  if (n->outputs().size() != 1) return false;
  Node* inner = n->input(0)->node();
  if (inner->kind() != kTranspose) return false;
  const TensorInfo* info = InfoOf(inner->input(0));
  const std::optional<size_t> rank = info ? info->rank() : std::nullopt;
  std::optional<std::pair<int64_t, int64_t>> outer_dims = TransposedDims(*n, rank);
  std::optional<std::pair<int64_t, int64_t>> inner_dims = TransposedDims(*inner, rank);
  if (!outer_dims || !inner_dims || *outer_dims != *inner_dims) return false;
  // Mixed signs without a rank (-1 vs 1) are left alone by the comparison.
  ForwardTo(n, inner->input(0), ctx);
  if (!inner->hasUses()) ctx.Erase(inner);
  return true;
}

// `shape` names exactly `sizes` (a single -1 may stand for one dim when no
// dim is 0, as reshape infers it).
bool ShapeMatches(const std::vector<int64_t>& shape, const std::vector<int64_t>& sizes,
                  bool allow_infer) {
  if (shape.size() != sizes.size()) return false;
  int inferred = 0;
  bool any_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    any_zero |= sizes[i] == 0;
    if (shape[i] == -1 && allow_infer) {
      ++inferred;
    } else if (shape[i] != sizes[i]) {
      return false;
    }
  }
  return inferred == 0 || (inferred == 1 && !any_zero);
}

bool ReshapeToSameShape(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 2 || n->outputs().size() != 1) return false;
  std::optional<std::vector<int64_t>> sizes = CompleteSizes(n->input(0));
  std::optional<std::vector<int64_t>> shape = ConstantIntList(n->input(1));
  if (!sizes || !shape || !ShapeMatches(*shape, *sizes, /*allow_infer=*/true)) return false;
  return ForwardTo(n, n->input(0), ctx);
}

bool ExpandToSameShape(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() < 2 || n->inputs().size() > 3 || n->outputs().size() != 1) return false;
  std::optional<std::vector<int64_t>> sizes = CompleteSizes(n->input(0));
  std::optional<std::vector<int64_t>> shape = ConstantIntList(n->input(1));
  if (!sizes || !shape || shape->size() != sizes->size()) return false;
  for (size_t i = 0; i < shape->size(); ++i) {
    if ((*shape)[i] != -1 && (*shape)[i] != (*sizes)[i]) return false;
  }
  return ForwardTo(n, n->input(0), ctx);
}

// kiln::shape(x, start, end?) of a tensor whose sizes are all known: an
// int64 tensor constant (ONNX Shape-15 clamping of start/end).
bool OnnxShapeOfKnownShape(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 3 || n->outputs().size() != 1) return false;
  std::optional<std::vector<int64_t>> sizes = CompleteSizes(n->input(0));
  std::optional<int64_t> start = ConstantInt(n->input(1));
  if (!sizes || !start || !IsNeverMutated(n->output(), ctx.ops())) return false;
  const int64_t rank = static_cast<int64_t>(sizes->size());
  int64_t s = *start, e = rank;
  if (!IsConstantNone(n->input(2))) {
    std::optional<int64_t> end = ConstantInt(n->input(2));
    if (!end) return false;
    e = *end;
  }
  if (s < 0) s += rank;
  if (e < 0) e += rank;
  s = std::clamp<int64_t>(s, 0, rank);
  e = std::clamp<int64_t>(e, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t i = s; i < e; ++i) dims.push_back((*sizes)[static_cast<size_t>(i)]);
  Tensor t = Tensor::Empty(DType::kInt64, {static_cast<int64_t>(dims.size())});
  for (size_t i = 0; i < dims.size(); ++i) t.data<int64_t>()[i] = dims[i];
  return FoldTo(n, IValue::FromTensor(std::move(t)), ctx);
}

// kiln::size(x) of a tensor whose sizes are all known: a 0-dim int64 constant.
bool OnnxSizeOfKnownShape(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  std::optional<std::vector<int64_t>> sizes = CompleteSizes(n->input(0));
  if (!sizes || !IsNeverMutated(n->output(), ctx.ops())) return false;
  int64_t numel = 1;
  for (int64_t d : *sizes) numel *= d;
  return FoldTo(n, IValue::FromTensor(Tensor::ScalarInt(numel)), ctx);
}

}  // namespace

std::vector<PeepholeRule> ShapePeepholeRules() {
  return {
      {"size_of_known_shape", S("aten::size"), SizeOfKnownShape},
      {"dim_of_known_rank", S("aten::dim"), DimOfKnownRank},
      {"len_of_shape", S("aten::len"), LenOfShape},
      {"numel_of_known_shape", S("aten::numel"), NumelOfKnownShape},
      {"dtype_of_known", S("prim::dtype"), DtypeOfKnown},
      {"device_of_known", S("prim::device"), DeviceOfKnown},
      {"is_floating_point_of_known", S("aten::is_floating_point"), IsFloatingPointOfKnown},
      {"is_cuda_of_known", S("prim::is_cuda"), IsCudaOfKnown},
      {"to_same_type", S("aten::to"), ToSameType},
      {"type_as_same", S("aten::type_as"), TypeAsSame},
      {"t_of_t", S("aten::t"), TransposeOfTranspose},
      {"transpose_of_transpose", S("aten::transpose"), TransposeTwice},
      {"reshape_to_same_shape", S("aten::reshape"), ReshapeToSameShape},
      {"view_to_same_shape", S("aten::view"), ReshapeToSameShape},
      {"expand_to_same_shape", S("aten::expand"), ExpandToSameShape},
      {"onnx_shape_of_known_shape", S("kiln::shape"), OnnxShapeOfKnownShape},
      {"onnx_size_of_known_shape", S("kiln::size"), OnnxSizeOfKnownShape},
  };
}

}  // namespace kiln::passes
