#include "passes/shape_functions.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <type_traits>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "passes/shape_functions_internal.h"
#include "ops/row.h"
#include "passes/type_promotion.h"
#include "support/status.h"

namespace kiln::passes {
namespace shape_internal {

// Helpers several op families share (declared in shape_functions_internal.h).

// A value known to be an int: a constant, or aten::size.int(x, d) on a dim
// that x's type knows.
Dim KnownInt(const Value* v) {
  const Node* n = v->node();
  if (n->kind() == ir::sym::kConstant) {
    std::optional<IValue> c = ConstantValueOf(*v);
    if (c && c->isInt()) return c->toInt();
    return std::nullopt;
  }
  static const ir::Symbol kSize = ir::Symbol::FromQualString("aten::size");
  if (n->kind() == kSize && n->inputs().size() == 2 && n->input(0)->type()->is_tensor()) {
    const TensorInfo& t = n->input(0)->type()->tensor();
    Dim d = KnownInt(n->input(1));
    if (!d || !t.sizes) return std::nullopt;
    int64_t rank = static_cast<int64_t>(t.sizes->size());
    int64_t i = *d < 0 ? *d + rank : *d;
    if (i < 0 || i >= rank) return std::nullopt;
    return (*t.sizes)[static_cast<size_t>(i)];
  }
  return std::nullopt;
}

const ::kiln::Tensor* Args::ConstTensor(size_t i) const {
  if (i >= node_.inputs().size()) return nullptr;
  return ConstantTensorOf(*node_.input(i));
}

std::optional<std::vector<int64_t>> Args::ConstTensorInts(size_t i) const {
  const ::kiln::Tensor* t = ConstTensor(i);
  if (!t || t->dim() > 1 || !IsIntegral(t->dtype(), /*include_bool=*/false)) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t k = 0; k < t->numel(); ++k) out.push_back(t->GetInt(k));
  return out;
}

Dim Args::ConstTensorInt(size_t i) const {
  std::optional<std::vector<int64_t>> v = ConstTensorInts(i);
  if (!v || v->size() != 1) return std::nullopt;
  return (*v)[0];
}

// Normalizes a possibly negative dim against `rank`.
absl::StatusOr<size_t> WrapDim(const Args& a, int64_t dim, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  // A 0-dim tensor accepts dims -1 and 0, as PyTorch does.
  int64_t effective = r == 0 ? 1 : r;
  if (dim < -effective || dim >= effective) {
    return a.Error(absl::StrCat("dim ", dim, " is out of range for a tensor of rank ", rank));
  }
  return static_cast<size_t>(dim < 0 ? dim + effective : dim);
}

std::optional<DType> ApplyRule(DTypeRule rule, std::optional<DType> in) {
  switch (rule) {
    case DTypeRule::kSame: return in;
    case DTypeRule::kBool: return DType::kBool;
    case DTypeRule::kLong: return DType::kInt64;
    case DTypeRule::kIntToFloat:
      if (in && IsIntegral(*in, /*include_bool=*/true)) return DType::kFloat32;
      return in;
    case DTypeRule::kIntToLong:
      if (in && IsIntegral(*in, /*include_bool=*/true)) return DType::kInt64;
      return in;
  }
  return in;
}

absl::StatusOr<SymbolicSizes> BroadcastOrError(const Args& a, const SymbolicSizes& x,
                                               const SymbolicSizes& y) {
  absl::StatusOr<SymbolicSizes> r = BroadcastSizes(x, y);
  if (!r.ok()) return a.Error(r.status().message());
  return r;
}

std::optional<DType> PromoteInputs(const Args& a, std::initializer_list<size_t> inputs) {
  absl::InlinedVector<PromotionOperand, 4> ops;
  for (size_t i : inputs) {
    const Type* t = a.TypeAt(i);
    if (!t) return std::nullopt;
    std::optional<PromotionOperand> op = PromotionOperandFor(*t);
    if (!op) return std::nullopt;
    ops.push_back(*op);
  }
  return ResultType(ops);
}

absl::Status CheckDimsEqual(const Args& a, Dim x, Dim y, absl::string_view what) {
  if (x && y && *x != *y) return a.Error(absl::StrCat(what, ": ", *x, " vs ", *y));
  return absl::OkStatus();
}

namespace {

// ------------------------------------------------------------ scalars

// Ops whose outputs are fully described by the schema (size -> int[], ...).
ShapeImpl SchemaReturns(const ir::FunctionSchema* schema) {
  return [schema](const Args&) -> absl::StatusOr<Types> {
    Types out;
    for (const ir::Argument& r : schema->returns) out.push_back(r.type);
    return out;
  };
}

// ------------------------------------------------------------ the table

struct Entry {
  const char* name;
  ShapeImpl impl;  // null: SchemaReturns
};

// The op rows' SHAPE column (ops/all.def).
struct TableBuilder {
  std::vector<Entry> entries;
  void Add(const char*, ops::row::None) {}
  void Add(const char* name, ops::row::SchemaReturns) { entries.push_back({name, nullptr}); }
  void Add(const char* name, ShapeImpl impl) { entries.push_back({name, std::move(impl)}); }
  template <typename F, typename = std::enable_if_t<std::is_invocable_v<F, const Args&>>>
  void Add(const char* name, F fn) {
    entries.push_back({name, ShapeImpl(fn)});
  }
};

std::vector<Entry> BuildTable() {
  using namespace ::kiln::ops::row;  // NOLINT: the rows' vocabulary
  TableBuilder t;
#define KILN_OP(name, schema, traits, kernel, shape, decomp, lower, ext, note) t.Add(name, shape);
#include "ops/all.def"
  return std::move(t.entries);
}

const std::vector<Entry>& Table() {
  static const std::vector<Entry>* table = new std::vector<Entry>(BuildTable());
  return *table;
}

}  // namespace
}  // namespace shape_internal

using ir::IValue;
using ir::Node;
using ir::TensorInfo;
using ir::Type;
using ir::TypeKind;
using ir::TypePtr;
using ir::Value;
using shape_internal::Args;
using shape_internal::Dim;
using shape_internal::Dims;
using shape_internal::Entry;
using shape_internal::SchemaReturns;
using shape_internal::ShapeImpl;
using shape_internal::Table;

std::vector<std::string> ShapeFunctionOverloads() {
  std::vector<std::string> out;
  for (const Entry& e : Table()) out.emplace_back(e.name);
  return out;
}

absl::Status RegisterShapeFunctionsInto(ir::OpRegistry& ops) {
  for (const Entry& e : Table()) {
    const ir::Operator* op = ops.Find(e.name);
    // An aten row may name an overload of another PyTorch version's schema
    // list; ops_completeness_test checks every row's name.
    if (!op) continue;
    const ir::FunctionSchema* schema = &op->schema;
    ShapeImpl impl = e.impl ? e.impl : SchemaReturns(schema);
    RETURN_IF_ERROR(ops.SetShapeFn(
        e.name, [schema, impl](const Node& node, absl::Span<const TypePtr> types,
                               absl::Span<const IValue* const> constants) {
          return impl(Args(node, *schema, types, constants));
        }));
  }
  return absl::OkStatus();
}

absl::Status RegisterShapeFunctions() {
  static const absl::Status* status = new absl::Status([] {
    absl::Status s = ir::BuiltinOpsStatus();
    if (!s.ok()) return s;
    return RegisterShapeFunctionsInto(ir::BuiltinOps());
  }());
  return *status;
}

absl::StatusOr<std::vector<ir::TypePtr>> ShapeFunctionTypes(const ir::Operator& op, const Node& node) {
  std::vector<ir::TypePtr> types;
  std::vector<std::optional<IValue>> values;
  for (const Value* in : node.inputs()) {
    types.push_back(in->type());
    values.push_back(ConstantValueOf(*in));
  }
  std::vector<const IValue*> constants;
  for (const std::optional<IValue>& v : values) constants.push_back(v ? &*v : nullptr);
  return op.shape_fn(node, types, constants);
}

const ::kiln::Tensor* ConstantTensorOf(const Value& v) {
  if (v.node()->kind() != ir::sym::kConstant) return nullptr;
  const ir::AttributeValue* attr = v.node()->findAttribute(ir::sym::kValue);
  if (!attr || ir::KindOf(*attr) != ir::AttributeKind::t) return nullptr;
  const ::kiln::Tensor& t = std::get<::kiln::Tensor>(*attr);
  return t.has_data() ? &t : nullptr;
}

std::optional<IValue> ConstantValueOf(const Value& v) {
  const Node* n = v.node();
  if (n->kind() != ir::sym::kConstant) return std::nullopt;
  const Type& type = *v.type();
  const ir::AttributeValue* a = n->findAttribute(ir::sym::kValue);
  if (!a) {
    if (type.kind() == TypeKind::kNone || type.kind() == TypeKind::kOptional) return IValue::None();
    return std::nullopt;
  }
  switch (ir::KindOf(*a)) {
    case ir::AttributeKind::i: {
      int64_t i = std::get<int64_t>(*a);
      if (type.kind() == TypeKind::kBool) return IValue::Bool(i != 0);
      if (type.kind() == TypeKind::kInt) return IValue::Int(i);
      return std::nullopt;
    }
    case ir::AttributeKind::f:
      if (type.kind() != TypeKind::kFloat) return std::nullopt;
      return IValue::Double(std::get<double>(*a));
    case ir::AttributeKind::s:
      if (type.kind() != TypeKind::kStr) return std::nullopt;
      return IValue::String(std::get<std::string>(*a));
    case ir::AttributeKind::is: {
      if (type.kind() != TypeKind::kList) return std::nullopt;
      const auto& v = std::get<std::vector<int64_t>>(*a);
      bool bools = !type.contained().empty() && type.contained()[0]->kind() == TypeKind::kBool;
      std::vector<IValue> elems;
      elems.reserve(v.size());
      for (int64_t e : v) elems.push_back(bools ? IValue::Bool(e != 0) : IValue::Int(e));
      return IValue::List(std::move(elems));
    }
    case ir::AttributeKind::fs: {
      if (type.kind() != TypeKind::kList) return std::nullopt;
      std::vector<IValue> elems;
      for (double e : std::get<std::vector<double>>(*a)) elems.push_back(IValue::Double(e));
      return IValue::List(std::move(elems));
    }
    case ir::AttributeKind::ss: {
      if (type.kind() != TypeKind::kList) return std::nullopt;
      std::vector<IValue> elems;
      for (const std::string& e : std::get<std::vector<std::string>>(*a)) {
        elems.push_back(IValue::String(e));
      }
      return IValue::List(std::move(elems));
    }
    default:
      return std::nullopt;
  }
}

absl::StatusOr<TypePtr> RefineType(const TypePtr& existing, const TypePtr& inferred, bool strict) {
  if (!existing) return inferred;
  if (!inferred || existing == inferred) return existing;
  if (!existing->is_tensor()) {
    if (existing->kind() == TypeKind::kAny) return inferred;
    return existing;
  }
  if (!inferred->is_tensor()) return existing;
  const TensorInfo& have = existing->tensor();
  const TensorInfo& got = inferred->tensor();
  // Fast path (most calls): nothing to add and nothing to contradict.
  if ((!got.dtype || have.dtype == got.dtype) && (!got.device || have.device == got.device) &&
      (!got.sizes || have.sizes == got.sizes)) {
    return existing;
  }
  TensorInfo out = have;
  bool added = false;
  auto conflict = [&](absl::string_view what) -> absl::Status {
    return absl::InvalidArgumentError(absl::StrCat("inferred ", inferred->ToString(),
                                                   " contradicts the annotated ",
                                                   existing->ToString(), " (", what, ")"));
  };
  if (got.dtype) {
    if (!have.dtype) {
      out.dtype = got.dtype;
      added = true;
    } else if (*have.dtype != *got.dtype && strict) {
      return conflict("dtype");
    }
  }
  if (got.sizes) {
    if (!have.sizes) {
      out.sizes = got.sizes;
      added = true;
    } else if (have.sizes->size() != got.sizes->size()) {
      if (strict) return conflict("rank");
    } else {
      for (size_t i = 0; i < have.sizes->size(); ++i) {
        const Dim& h = (*have.sizes)[i];
        const Dim& g = (*got.sizes)[i];
        if (!g) continue;
        if (!h) {
          (*out.sizes)[i] = g;
          added = true;
        } else if (*h != *g && strict) {
          return conflict("sizes");
        }
      }
    }
  }
  if (got.device) {
    if (!have.device) {
      out.device = got.device;
      added = true;
    } else if (*have.device != *got.device && strict) {
      return conflict("device");
    }
  }
  if (!added) return existing;
  return Type::TensorWith(std::move(out));
}

TypePtr JoinTypes(const TypePtr& a, const TypePtr& b) {
  if (a == b) return a;
  if (!a || !b) return nullptr;
  if (!a->is_tensor() || !b->is_tensor()) return ir::TypeEquals(*a, *b) ? a : nullptr;
  const TensorInfo& x = a->tensor();
  const TensorInfo& y = b->tensor();
  TensorInfo out;
  if (x.dtype == y.dtype) out.dtype = x.dtype;
  if (x.device == y.device) out.device = x.device;
  if (x.requires_grad == y.requires_grad) out.requires_grad = x.requires_grad;
  if (x.undefined == y.undefined) out.undefined = x.undefined;
  if (x.sizes && y.sizes && x.sizes->size() == y.sizes->size()) {
    Dims s(x.sizes->size());
    for (size_t i = 0; i < s.size(); ++i) {
      if ((*x.sizes)[i] == (*y.sizes)[i]) s[i] = (*x.sizes)[i];
    }
    out.sizes = std::move(s);
    if (x.strides == y.strides) out.strides = x.strides;
  }
  return Type::TensorWith(std::move(out));
}

std::string NodeLabel(const Node& node) {
  std::string s(node.kind().qualString());
  s += " node";
  if (!node.outputs().empty()) absl::StrAppend(&s, " %", node.output(0)->debugName());
  absl::string_view loc = node.sourceLocation();
  if (!loc.empty()) absl::StrAppend(&s, " (", loc, ")");
  return s;
}

}  // namespace kiln::passes
