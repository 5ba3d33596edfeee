// Shape functions of the indexing, factory and sorting rows
// (ops/defs/index.def, create.def, sort.def).
#include <algorithm>
#include <cmath>

#include "passes/shape_functions_internal.h"
#include "support/status.h"

namespace kiln::passes::shape_internal {
namespace {

SymbolicSizes UnknownDims(const TensorInfo& t) {
  return t.sizes ? SymbolicSizes(Dims(t.sizes->size())) : std::nullopt;
}

// The dtype of a `ScalarType?` argument: None gives `fallback`.
std::optional<DType> DTypeArg(const Args& a, size_t i, std::optional<DType> fallback) {
  if (a.IsNone(i)) return fallback;
  Dim code = a.Int(i);
  return code ? DTypeFromCode(*code) : std::nullopt;
}

// The default dtype of a fill value (a Python number or a 0-dim tensor).
std::optional<DType> FillDType(const Args& a, size_t i) {
  const Type* t = a.TypeAt(i);
  if (!t) {
    const IValue* c = a.Const(i);
    if (c && c->isBool()) return DType::kBool;
    if (c && c->isInt()) return DType::kInt64;
    if (c && c->isDouble()) return DType::kFloat32;
    return std::nullopt;
  }
  switch (t->kind()) {
    case TypeKind::kBool: return DType::kBool;
    case TypeKind::kInt: return DType::kInt64;
    case TypeKind::kFloat: return DType::kFloat32;
    case TypeKind::kTensor: return t->tensor().dtype;
    default: return std::nullopt;
  }
}

}  // namespace

// ------------------------------------------------------------ indexing

ShapeImpl IndexShaped(size_t index) {
  return [index](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    return Types{TensorOf(t ? t->dtype : std::nullopt, a.Sizes(index), a.CommonDevice())};
  };
}

// index_select(self, dim, index [k]): the dim becomes k.
absl::StatusOr<Types> IndexSelect(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim dim = a.Int(1);
  if (!t->sizes || !dim) return Types{TensorOf(t->dtype, UnknownDims(*t), t->device)};
  Dims out = *t->sizes;
  if (out.empty()) return Types{TensorOf(t->dtype, Dims(), t->device)};
  ASSIGN_OR_RETURN(size_t d, WrapDim(a, *dim, out.size()));
  const TensorInfo* idx = a.Tensor(2);
  out[d] = idx && idx->sizes ? Product(*idx->sizes) : std::nullopt;
  return Types{TensorOf(t->dtype, out, t->device)};
}

// index.Tensor(self, Tensor?[] indices): the broadcast shape of the index
// tensors replaces the indexed dims, in place when they are adjacent and in
// front otherwise (PyTorch's rule); bool masks have data-dependent sizes.
absl::StatusOr<Types> AdvancedIndex(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<const Type*>> elems = a.ListElementTypes(1);
  if (!t->sizes || !elems) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  std::vector<const TensorInfo*> idx;
  for (const Type* e : *elems) {
    if (e->kind() == TypeKind::kNone) {
      idx.push_back(nullptr);
      continue;
    }
    if (!e->is_tensor() || !e->tensor().dtype || !e->tensor().sizes) {
      return Types{TensorOf(t->dtype, std::nullopt, t->device)};
    }
    if (*e->tensor().dtype == DType::kBool || *e->tensor().dtype == DType::kUInt8) {
      // A mask: its nonzero count is only known at run time.
      return Types{TensorOf(t->dtype, std::nullopt, t->device)};
    }
    idx.push_back(&e->tensor());
  }
  if (idx.size() > in.size()) return a.Error(absl::StrCat("too many indices for a tensor of rank ", in.size()));
  idx.resize(in.size(), nullptr);
  SymbolicSizes b = Dims();
  int64_t first = -1, last = -1;
  for (size_t k = 0; k < idx.size(); ++k) {
    if (!idx[k]) continue;
    ASSIGN_OR_RETURN(b, BroadcastOrError(a, b, idx[k]->sizes));
    if (first < 0) first = static_cast<int64_t>(k);
    last = static_cast<int64_t>(k);
  }
  if (first < 0) return Types{TensorOf(t->dtype, t->sizes, t->device)};
  bool adjacent = true;
  for (int64_t k = first; k <= last; ++k) adjacent = adjacent && idx[static_cast<size_t>(k)] != nullptr;
  Dims out;
  const size_t before = adjacent ? static_cast<size_t>(first) : 0;
  for (size_t k = 0; k < before; ++k) out.push_back(in[k]);
  out.insert(out.end(), b->begin(), b->end());
  for (size_t k = before; k < in.size(); ++k) {
    if (!idx[k]) out.push_back(in[k]);
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// masked_fill(self, mask, value): self's type; the mask broadcasts into it.
absl::StatusOr<Types> MaskedFill(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  ASSIGN_OR_RETURN(SymbolicSizes b, BroadcastOrError(a, t->sizes, a.Sizes(1)));
  if (b && t->sizes && b->size() != t->sizes->size()) {
    return a.Error("masked_fill: the mask does not broadcast into self");
  }
  return Types{TensorOf(t->dtype, t->sizes, t->device)};
}

ShapeImpl DataDependent1d(DTypeRule rule) {
  return [rule](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    return Types{TensorOf(ApplyRule(rule, t ? t->dtype : std::nullopt), Dims(1), a.CommonDevice())};
  };
}

// take_along_dim(self, indices, dim?): the indices' sizes broadcast with
// self's on the other dims; without dim, a flat gather.
absl::StatusOr<Types> TakeAlongDim(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  const TensorInfo* idx = a.Tensor(1);
  if (!t) return Types{Type::Tensor()};
  if (a.IsNone(2)) {
    return Types{TensorOf(t->dtype, Dims{idx && idx->sizes ? Product(*idx->sizes) : std::nullopt}, t->device)};
  }
  Dim dim = a.Int(2);
  if (!t->sizes || !idx || !idx->sizes || !dim) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  if (t->sizes->size() != idx->sizes->size()) return a.Error("input and indices must have the same rank");
  if (t->sizes->empty()) return Types{TensorOf(t->dtype, idx->sizes, t->device)};
  ASSIGN_OR_RETURN(size_t d, WrapDim(a, *dim, t->sizes->size()));
  Dims xs = *t->sizes, is = *idx->sizes;
  const Dim id = is[d];
  xs[d] = 1;
  is[d] = 1;
  ASSIGN_OR_RETURN(SymbolicSizes b, BroadcastOrError(a, xs, is));
  // Known operands broadcast to known sizes (value_or keeps gcc -O2 quiet).
  Dims out = b.value_or(Dims(xs.size()));
  out[d] = id;
  return Types{TensorOf(t->dtype, out, t->device)};
}

// embedding(weight [n, d], indices, ...) -> [*indices, d].
absl::StatusOr<Types> Embedding(const Args& a) {
  const TensorInfo* w = a.Tensor(0);
  const TensorInfo* idx = a.Tensor(1);
  if (!w) return Types{Type::Tensor()};
  SymbolicSizes out;
  if (idx && idx->sizes && w->sizes && w->sizes->size() == 2) {
    Dims o = *idx->sizes;
    o.push_back((*w->sizes)[1]);
    out = std::move(o);
  }
  return Types{TensorOf(w->dtype, out, a.CommonDevice())};
}

// nonzero(self) -> [count, rank] int64.
absl::StatusOr<Types> Nonzero(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  Dim rank = t && t->sizes ? Dim(static_cast<int64_t>(t->sizes->size())) : std::nullopt;
  return Types{TensorOf(DType::kInt64, Dims{std::nullopt, rank}, a.CommonDevice())};
}

// constant_pad_nd / pad / reflection_pad / replication_pad(self, pad, ...):
// pads in PyTorch order (last dim's begin and end first); negative pads crop.
absl::StatusOr<Types> TorchPad(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> pad = a.IntList(1);
  if (!t->sizes || !pad) return Types{TensorOf(t->dtype, UnknownDims(*t), t->device)};
  Dims out = *t->sizes;
  if (pad->size() % 2 != 0 || pad->size() / 2 > out.size()) {
    return a.Error(absl::StrCat("pad of ", pad->size(), " values does not fit a tensor of rank ", out.size()));
  }
  for (size_t i = 0; i < pad->size() / 2; ++i) {
    Dim& d = out[out.size() - 1 - i];
    if (d) d = *d + (*pad)[2 * i] + (*pad)[2 * i + 1];
    if (d && *d < 0) return a.Error("padding makes a dim negative");
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// repeat(self, repeats): len(repeats) >= rank; leading repeats add dims.
absl::StatusOr<Types> Repeat(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> reps = a.IntList(1);
  if (!reps) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  if (!t->sizes) return Types{TensorOf(t->dtype, Dims(reps->size()), t->device)};
  if (reps->size() < t->sizes->size()) return a.Error("repeat: fewer repeats than dims");
  Dims in(reps->size() - t->sizes->size(), Dim(1));
  in.insert(in.end(), t->sizes->begin(), t->sizes->end());
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) out.push_back(in[i] ? Dim(*in[i] * (*reps)[i]) : std::nullopt);
  return Types{TensorOf(t->dtype, out, t->device)};
}

// tile(self, dims): repeat after padding the shorter of the two with 1s.
absl::StatusOr<Types> Tile(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> reps = a.IntList(1);
  if (!reps || !t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const size_t r = std::max(reps->size(), t->sizes->size());
  std::vector<int64_t> rr(r - reps->size(), 1);
  rr.insert(rr.end(), reps->begin(), reps->end());
  Dims in(r - t->sizes->size(), Dim(1));
  in.insert(in.end(), t->sizes->begin(), t->sizes->end());
  Dims out;
  for (size_t i = 0; i < r; ++i) out.push_back(in[i] ? Dim(*in[i] * rr[i]) : std::nullopt);
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::gather_nd(data, indices, batch_dims):
// indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:].
absl::StatusOr<Types> GatherNd(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* idx = a.Tensor(1);
  if (!x) return Types{Type::Tensor()};
  Dim b = a.Int(2);
  if (!x->sizes || !idx || !idx->sizes || idx->sizes->empty() || !b || !idx->sizes->back()) {
    return Types{TensorOf(x->dtype, std::nullopt, x->device)};
  }
  const int64_t q = *idx->sizes->back();
  const size_t from = static_cast<size_t>(*b + q);
  if (from > x->sizes->size()) return a.Error("GatherND: index tuples are longer than the data's rank");
  Dims out(idx->sizes->begin(), idx->sizes->end() - 1);
  out.insert(out.end(), x->sizes->begin() + static_cast<int64_t>(from), x->sizes->end());
  return Types{TensorOf(x->dtype, out, x->device)};
}

// kiln::onnx_pad(self, pads, mode, value?): all begins, then all ends.
absl::StatusOr<Types> OnnxPad(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> pads = a.IntList(1);
  if (!t->sizes || !pads) return Types{TensorOf(t->dtype, UnknownDims(*t), t->device)};
  Dims out = *t->sizes;
  if (pads->size() != 2 * out.size()) {
    return a.Error(absl::StrCat("Pad: expects ", 2 * out.size(), " pads, got ", pads->size()));
  }
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d]) out[d] = *out[d] + (*pads)[d] + (*pads)[out.size() + d];
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::compress(self, condition, axis?): data-dependent.
absl::StatusOr<Types> Compress(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (a.IsNone(2)) return Types{TensorOf(t->dtype, Dims(1), t->device)};
  Dim axis = a.Int(2);
  if (!t->sizes || !axis) return Types{TensorOf(t->dtype, UnknownDims(*t), t->device)};
  Dims out = *t->sizes;
  ASSIGN_OR_RETURN(size_t d, WrapDim(a, *axis, out.size()));
  if (!out.empty()) out[d] = std::nullopt;
  return Types{TensorOf(t->dtype, out, t->device)};
}

// ------------------------------------------------------------ factories

// arange(end), arange.start(start, end), arange.start_step(start, end, step)
// with dtype?: int64 when every bound is an int, else the default float.
absl::StatusOr<Types> Arange(const Args& a) {
  std::optional<size_t> start_arg = a.ArgIndex("start");
  std::optional<size_t> end_arg = a.ArgIndex("end");
  std::optional<size_t> step_arg = a.ArgIndex("step");
  std::optional<size_t> dtype_arg = a.ArgIndex("dtype");
  if (!end_arg) return a.Error("arange without an end");
  std::vector<size_t> bounds{*end_arg};
  if (start_arg) bounds.push_back(*start_arg);
  if (step_arg) bounds.push_back(*step_arg);
  std::optional<DType> dtype = DType::kInt64;
  std::vector<std::optional<double>> v;
  for (size_t i : bounds) {
    std::optional<DType> d = FillDType(a, i);
    if (!d) dtype = std::nullopt;
    else if (dtype && !IsIntegral(*d, /*include_bool=*/true)) dtype = DType::kFloat32;
    v.push_back(a.Double(i));
  }
  if (dtype_arg && !a.IsNone(*dtype_arg)) dtype = DTypeArg(a, *dtype_arg, std::nullopt);
  const std::optional<double> end = v[0];
  const std::optional<double> start = start_arg ? v[1] : std::optional<double>(0.0);
  const std::optional<double> step = step_arg ? v[bounds.size() - 1] : std::optional<double>(1.0);
  Dim n;
  if (end && start && step && *step != 0) {
    const double len = std::ceil((*end - *start) / *step);
    if (len < 0) return a.Error("arange: the range is empty in the step's direction");
    if (len < 9e18) n = static_cast<int64_t>(len);
  }
  return Types{TensorOf(dtype, Dims{n}, std::nullopt)};
}

ShapeImpl FullShape(FillForm form) {
  return [form](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* self = a.Tensor(0);
    std::optional<DType> self_dtype = self ? self->dtype : std::nullopt;
    std::optional<ir::Device> device = self ? self->device : std::nullopt;
    switch (form) {
      case FillForm::kConstant:
        return Types{TensorOf(DTypeArg(a, 1, DType::kFloat32), a.IntListElements(0), std::nullopt)};
      case FillForm::kFull:
        return Types{TensorOf(DTypeArg(a, 2, FillDType(a, 1)), a.IntListElements(0), std::nullopt)};
      case FillForm::kLike:
        return Types{TensorOf(DTypeArg(a, 1, self_dtype), a.Sizes(0), device)};
      case FillForm::kFullLike:
        return Types{TensorOf(DTypeArg(a, 2, self_dtype), a.Sizes(0), device)};
      case FillForm::kNew:
        return Types{TensorOf(DTypeArg(a, 2, self_dtype), a.IntListElements(1), device)};
      case FillForm::kNewFull:
        return Types{TensorOf(DTypeArg(a, 3, self_dtype), a.IntListElements(1), device)};
    }
    return Types{Type::Tensor()};
  };
}

// scalar_tensor(s, dtype?): 0-dim, the default float unless told.
absl::StatusOr<Types> ScalarTensor(const Args& a) {
  return Types{TensorOf(DTypeArg(a, 1, DType::kFloat32), Dims(), std::nullopt)};
}

// eye(n, dtype?) / eye.m(n, m, dtype?).
absl::StatusOr<Types> Eye(const Args& a) {
  std::optional<size_t> m_arg = a.ArgIndex("m");
  std::optional<size_t> dtype_arg = a.ArgIndex("dtype");
  Dim n = a.Int(0);
  Dim m = m_arg ? a.Int(*m_arg) : n;
  return Types{TensorOf(dtype_arg ? DTypeArg(a, *dtype_arg, DType::kFloat32) : DType::kFloat32,
                        Dims{n, m}, std::nullopt)};
}

// one_hot(self, num_classes=-1): [*self, num_classes] int64.
absl::StatusOr<Types> OneHot(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  Dim n = a.Int(1);
  if (n && *n < 0) n = std::nullopt;  // inferred from the data
  SymbolicSizes out;
  if (t && t->sizes) {
    Dims o = *t->sizes;
    o.push_back(n);
    out = std::move(o);
  }
  return Types{TensorOf(DType::kInt64, out, t ? t->device : std::nullopt)};
}

// kiln::eye_like(self, k, dtype?): self's sizes.
absl::StatusOr<Types> OnnxEyeLike(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (t->sizes && t->sizes->size() != 2) return a.Error("EyeLike: input must be 2-D");
  return Types{TensorOf(DTypeArg(a, 2, t->dtype), t->sizes, t->device)};
}

// kiln::range(start, limit, delta): 1-D, max(ceil((limit - start) / delta), 0).
absl::StatusOr<Types> OnnxRange(const Args& a) {
  Dim n;
  const ::kiln::Tensor* s = a.ConstTensor(0);
  const ::kiln::Tensor* l = a.ConstTensor(1);
  const ::kiln::Tensor* d = a.ConstTensor(2);
  if (s && l && d && s->numel() == 1 && l->numel() == 1 && d->numel() == 1 && d->GetDouble(0) != 0) {
    const double len = std::ceil((l->GetDouble(0) - s->GetDouble(0)) / d->GetDouble(0));
    n = len > 0 && len < 9e18 ? static_cast<int64_t>(len) : 0;
  }
  return Types{TensorOf(a.DTypeOf(0), Dims{n}, a.CommonDevice())};
}

// kiln::onnx_one_hot(indices, depth, values, axis): depth inserted at axis.
absl::StatusOr<Types> OnnxOneHot(const Args& a) {
  const TensorInfo* idx = a.Tensor(0);
  std::optional<DType> dtype = a.DTypeOf(2);
  Dim axis = a.Int(3);
  if (!idx || !idx->sizes || !axis) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  const int64_t r = static_cast<int64_t>(idx->sizes->size()) + 1;
  if (*axis < -r || *axis >= r) return a.Error(absl::StrCat("OneHot: axis ", *axis, " out of range for rank ", r));
  Dim depth;
  if (const ::kiln::Tensor* d = a.ConstTensor(1); d && d->numel() == 1 && d->GetDouble(0) >= 1) {
    depth = static_cast<int64_t>(d->GetDouble(0));
  }
  Dims out = *idx->sizes;
  out.insert(out.begin() + (*axis < 0 ? *axis + r : *axis), depth);
  return Types{TensorOf(dtype, out, a.CommonDevice())};
}

// ------------------------------------------------------------ sorting

// topk(self, k, dim=-1, ...): (values, int64 indices), the dim becomes k.
absl::StatusOr<Types> TopK(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types(2, Type::Tensor());
  Dim dim = a.Int(2);
  SymbolicSizes out = UnknownDims(*t);
  if (t->sizes && dim && !t->sizes->empty()) {
    Dims o = *t->sizes;
    ASSIGN_OR_RETURN(size_t d, WrapDim(a, *dim, o.size()));
    o[d] = a.Int(1);
    out = std::move(o);
  } else if (t->sizes && t->sizes->empty()) {
    out = Dims();
  }
  return Types{TensorOf(t->dtype, out, t->device), TensorOf(DType::kInt64, out, t->device)};
}

// sort(self, ...): (values, int64 indices) of self's sizes.
absl::StatusOr<Types> Sort(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types(2, Type::Tensor());
  return Types{TensorOf(t->dtype, t->sizes, t->device), TensorOf(DType::kInt64, t->sizes, t->device)};
}

// cumsum / cumprod(self, dim, dtype?): integral inputs accumulate in int64.
absl::StatusOr<Types> Cumulative(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  return Types{TensorOf(DTypeArg(a, 2, ApplyRule(DTypeRule::kIntToLong, t->dtype)), t->sizes, t->device)};
}

// cummax / cummin(self, dim): (values, int64 indices).
absl::StatusOr<Types> CumExtremum(const Args& a) { return Sort(a); }

// unique_dim / _unique2 / unique_consecutive: (values, inverse, counts);
// kiln::onnx_unique: (values, first indices, inverse, counts). Sizes are
// data-dependent.
ShapeImpl Unique(size_t outputs) {
  return [outputs](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types(outputs, Type::Tensor());
    std::optional<size_t> dim_arg = a.ArgIndex(outputs == 4 ? "axis" : "dim");
    // Values: flattened (1-D) without a dim, else the input's rank.
    SymbolicSizes values = Dims(1);
    if (dim_arg && !a.IsNone(*dim_arg)) values = UnknownDims(*t);
    Types out{TensorOf(t->dtype, values, t->device)};
    for (size_t i = 1; i < outputs; ++i) out.push_back(TensorOf(DType::kInt64, std::nullopt, t->device));
    return out;
  };
}

}  // namespace kiln::passes::shape_internal
