#include "lowering/lower_context.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/verifier.h"
#include "lowering/index_math.h"

namespace kiln::lowering {

const TensorRef* LowerContext::FindTensor(const ir::Value* v) const {
  auto it = tensors_.find(v);
  return it == tensors_.end() ? nullptr : &it->second;
}

void LowerContext::AddBuffer(Buffer b) {
  buffer_index_[b.name] = graph_->buffers.size();
  graph_->buffers.push_back(std::move(b));
}

const Buffer* LowerContext::FindBuffer(const std::string& name) const {
  auto it = buffer_index_.find(name);
  return it == buffer_index_.end() ? nullptr : &graph_->buffers[it->second];
}

std::vector<const ir::Value*> LowerContext::ValuesOnStorage(const std::string& storage) const {
  std::vector<const ir::Value*> out;
  auto it = on_storage_.find(storage);
  if (it == on_storage_.end()) return out;
  for (const ir::Value* v : it->second) {
    const TensorRef* t = FindTensor(v);
    if (t != nullptr && t->storage == storage &&
        std::find(out.begin(), out.end(), v) == out.end()) {
      out.push_back(v);
    }
  }
  return out;
}

const ir::IValue* LowerContext::FindConstant(const ir::Value* v) const {
  auto it = constants_.find(v);
  return it == constants_.end() ? nullptr : &it->second;
}

const std::vector<TensorRef>* LowerContext::FindTensorList(const ir::Value* v) const {
  auto it = lists_.find(v);
  return it == lists_.end() ? nullptr : &it->second;
}

absl::Status LowerContext::Unimplemented(absl::string_view what) const {
  return absl::UnimplementedError(absl::StrCat("lowering: ", what, " in ", ir::DescribeNode(*node_)));
}

absl::Status LowerContext::Invalid(absl::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat("lowering: ", what, " in ", ir::DescribeNode(*node_)));
}

const ir::Value* LowerContext::Input(absl::string_view name) const {
  if (op_ == nullptr) return nullptr;
  int i = op_->schema.ArgumentIndex(name);
  if (i < 0 || static_cast<size_t>(i) >= node_->inputs().size()) return nullptr;
  return node_->input(i);
}

bool LowerContext::HasArg(absl::string_view name) const {
  return op_ != nullptr && op_->schema.ArgumentIndex(name) >= 0;
}

std::optional<ir::IValue> LowerContext::Const(absl::string_view name) const {
  if (op_ == nullptr) return std::nullopt;
  int i = op_->schema.ArgumentIndex(name);
  if (i < 0) return std::nullopt;
  if (static_cast<size_t>(i) < node_->inputs().size()) {
    const ir::IValue* c = FindConstant(node_->input(i));
    if (c == nullptr) return std::nullopt;
    return *c;
  }
  return op_->schema.arguments[i].default_value;
}

bool LowerContext::IsNone(absl::string_view name) const {
  std::optional<ir::IValue> c = Const(name);
  return c && c->isNone();
}

bool LowerContext::IsTensorArg(absl::string_view name) const {
  const ir::Value* v = Input(name);
  return v != nullptr && FindTensor(v) != nullptr;
}

absl::StatusOr<TensorRef> LowerContext::TensorArg(absl::string_view name) const {
  const ir::Value* v = Input(name);
  const TensorRef* t = v ? FindTensor(v) : nullptr;
  if (t == nullptr) {
    return Unimplemented(absl::StrCat("argument '", name, "' is not a lowered tensor"));
  }
  return *t;
}

absl::StatusOr<int64_t> LowerContext::IntArg(absl::string_view name) const {
  std::optional<ir::IValue> c = Const(name);
  if (c && (c->isInt() || c->isBool())) return c->isInt() ? c->toInt() : int64_t{c->toBool()};
  return Unimplemented(absl::StrCat("argument '", name, "' must be a constant int"));
}

absl::StatusOr<double> LowerContext::DoubleArg(absl::string_view name) const {
  std::optional<ir::IValue> c = Const(name);
  if (c && c->isNumber()) return c->toNumberAsDouble();
  return Unimplemented(absl::StrCat("argument '", name, "' must be a constant number"));
}

absl::StatusOr<bool> LowerContext::BoolArg(absl::string_view name) const {
  std::optional<ir::IValue> c = Const(name);
  if (c && c->isBool()) return c->toBool();
  if (c && c->isInt()) return c->toInt() != 0;
  return Unimplemented(absl::StrCat("argument '", name, "' must be a constant bool"));
}

absl::StatusOr<std::optional<std::vector<int64_t>>> LowerContext::IntListArg(
    absl::string_view name) const {
  std::optional<ir::IValue> c = Const(name);
  if (c && c->isNone()) return std::optional<std::vector<int64_t>>();
  if (c && c->isInt()) return std::optional<std::vector<int64_t>>(std::vector<int64_t>{c->toInt()});
  if (c && c->isList()) {
    std::vector<int64_t> out;
    for (const ir::IValue& e : c->elements()) {
      if (!e.isInt()) break;
      out.push_back(e.toInt());
    }
    if (out.size() == c->elements().size()) return std::optional<std::vector<int64_t>>(out);
  }
  return Unimplemented(absl::StrCat("argument '", name, "' must be a constant int list"));
}

absl::StatusOr<std::string> LowerContext::StringArg(absl::string_view name) const {
  std::optional<ir::IValue> c = Const(name);
  if (c && c->isString()) return c->toString();
  return Unimplemented(absl::StrCat("argument '", name, "' must be a constant string"));
}

absl::StatusOr<OutputInfo> LowerContext::Output(size_t i) const {
  if (i >= node_->outputs().size()) return Invalid("missing output");
  const ir::TypePtr& type = node_->output(i)->type();
  if (!type || !type->is_tensor()) return Unimplemented("output is not a tensor");
  const ir::TensorInfo& info = type->tensor();
  if (!info.dtype || !info.HasCompleteSizes()) {
    return Unimplemented(absl::StrCat("output %", node_->output(i)->debugName(),
                                      " has no static shape and dtype (run shape propagation)"));
  }
  OutputInfo out;
  out.sizes = info.ConcreteSizes();
  for (int64_t s : out.sizes) {
    if (s < 0) return Invalid("negative size");
  }
  out.dtype = *info.dtype;
  if (info.device) out.device = info.device->type;
  return out;
}

std::string LowerContext::Origin() const {
  std::string name(node_->kind().name());
  while (!name.empty() && name.back() == '_') name.pop_back();
  while (!name.empty() && name.front() == '_') name.erase(0, 1);
  return name.empty() ? "op" : name;
}

TensorRef LowerContext::AddPointwise(const OutputInfo& out, ExprPtr body) {
  Buffer b;
  b.name = NewBufferName();
  b.kind = BufferKind::kComputed;
  b.layout = Layout::Contiguous(out.dtype, out.sizes, out.device);
  b.pointwise = Pointwise{out.sizes, Cast(std::move(body), out.dtype)};
  b.origins = {Origin()};
  TensorRef t{b.name, b.name, b.layout};
  AddBuffer(std::move(b));
  return t;
}

TensorRef LowerContext::AddConstant(const Tensor& t, std::string origin) {
  Buffer b;
  b.name = NewConstantName();
  b.kind = BufferKind::kConstant;
  b.layout = Layout::Contiguous(t.dtype(), t.sizes());
  b.constant = t.has_data() ? t.Contiguous() : t;
  b.origins = {std::move(origin)};
  TensorRef ref{b.name, b.name, b.layout};
  AddBuffer(std::move(b));
  return ref;
}

absl::StatusOr<int64_t> NormalizeDim(const LowerContext& ctx, int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) return ctx.Invalid(absl::StrCat("dim ", dim, " out of range"));
  return dim < 0 ? dim + r : dim;
}

TensorRef LowerContext::AddReduction(const OutputInfo& out, std::vector<int64_t> reduction_ranges,
                                     ReductionType type, ExprPtr body) {
  Buffer b;
  b.name = NewBufferName();
  b.kind = BufferKind::kComputed;
  b.layout = Layout::Contiguous(out.dtype, out.sizes, out.device);
  b.reduction = Reduction{out.sizes, std::move(reduction_ranges), type, std::move(body)};
  b.origins = {Origin()};
  TensorRef t{b.name, b.name, b.layout};
  AddBuffer(std::move(b));
  return t;
}

absl::StatusOr<TensorRef> LowerContext::AddView(const TensorRef& base, Layout layout) {
  const Buffer* storage = FindBuffer(base.storage);
  if (storage == nullptr) return Invalid("view of an unknown buffer");
  if (layout.offset < 0 || layout.sizes.size() != layout.strides.size()) {
    return Invalid("view outside its storage");
  }
  for (size_t i = 0; i < layout.sizes.size(); ++i) {
    if (layout.strides[i] < 0 || layout.sizes[i] < 0) return Invalid("view with negative stride");
  }
  if (layout.numel() > 0 && layout.StorageElements() > storage->layout.StorageElements()) {
    return Invalid("view outside its storage");
  }
  layout.dtype = storage->layout.dtype;
  layout.device = storage->layout.device;
  Buffer b;
  b.name = "view" + std::to_string(next_view_++);
  b.kind = BufferKind::kView;
  b.layout = layout;
  b.view_of = base.storage;
  b.origins = {Origin()};
  TensorRef t{b.name, base.storage, std::move(layout)};
  AddBuffer(std::move(b));
  return t;
}

ExprPtr LowerContext::LoadAt(const TensorRef& t, absl::Span<const ExprPtr> indices,
                             absl::Span<const int64_t> var_ranges) const {
  if (t.layout.sizes.empty()) {
    const Buffer* b = FindBuffer(t.storage);
    if (b && b->kind == BufferKind::kConstant && b->constant.has_data() &&
        b->constant.numel() == 1) {
      DType d = b->constant.dtype();
      if (IsFloatingPoint(d)) return FloatConst(b->constant.GetDouble(0), d);
      if (IsIntegral(d, /*include_bool=*/true)) return IntConst(b->constant.GetInt(0), d);
    }
  }
  return Load(t.storage, t.layout.dtype, FlatIndex(t.layout, indices, var_ranges));
}

absl::StatusOr<ExprPtr> LowerContext::LoadBroadcast(const TensorRef& t,
                                                    absl::Span<const int64_t> out_sizes) const {
  size_t rank = t.layout.sizes.size();
  if (rank > out_sizes.size()) return Invalid("operand has more dims than the result");
  size_t shift = out_sizes.size() - rank;
  std::vector<ExprPtr> idx;
  for (size_t k = 0; k < rank; ++k) {
    int64_t s = t.layout.sizes[k];
    if (s != 1 && s != out_sizes[k + shift]) {
      return Invalid(absl::StrCat("operand size ", s, " at dim ", k, " does not broadcast to ",
                                  out_sizes[k + shift]));
    }
    idx.push_back(s == 1 ? IntConst(0) : Var(static_cast<int>(k + shift)));
  }
  return LoadAt(t, idx, out_sizes);
}

const ir::Operator* FunctionalOverload(const LowerContext& ctx, const ir::Operator* op) {
  if (op == nullptr || !op->traits.mutates) return op;
  if (!op->traits.functional_variant.valid()) return nullptr;
  std::vector<ir::TypePtr> types;
  for (const ir::Value* v : ctx.node().inputs()) types.push_back(v->type());
  return ctx.registry().Match(op->traits.functional_variant, types, ctx.node().outputs().size());
}

}  // namespace kiln::lowering
