// Shape and dtype functions of the aten ops the ONNX importer and the
// exporters' graphs use for indexing, slicing, generators and
// normalization statistics: index.Tensor (advanced indexing), slice,
// narrow, index_select, gather, embedding, native_layer_norm, full / zeros /
// ones / arange, repeat, topk / sort, movedim, constant_pad_nd; and the
// element types of the lists split / chunk / unbind return (consumed by
// prim::ListUnpack, see ListUnpackTypes).
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "ir/constants.h"
#include "passes/shape_functions_internal.h"
#include "support/status.h"

namespace kiln::passes::shape_internal {
namespace {

Types Same(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  return Types{t ? TensorOf(t->dtype, t->sizes, t->device) : Type::Tensor()};
}

// The dtype a ScalarType argument names (None: `def`); nullopt if unknown.
std::optional<DType> DTypeArg(const Args& a, size_t i, std::optional<DType> def) {
  if (a.IsNone(i)) return def;
  Dim code = a.Int(i);
  return code ? DTypeFromCode(*code) : std::nullopt;
}

// The default dtype of a Python number: bool, int64 or float32.
std::optional<DType> NumberDType(const Args& a, size_t i) {
  const IValue* c = a.Const(i);
  if (c == nullptr) return std::nullopt;
  if (c->isBool()) return DType::kBool;
  if (c->isInt()) return DType::kInt64;
  if (c->isDouble()) return DType::kFloat32;
  return std::nullopt;
}

// aten::native_layer_norm(input, normalized_shape, weight?, bias?, eps) ->
// (y, mean, rstd): the statistics keep the leading dims, 1 in the
// normalized ones.
absl::StatusOr<Types> NativeLayerNorm(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types(3, Type::Tensor());
  SymbolicSizes norm = a.IntListElements(1);
  SymbolicSizes stats;
  if (t->sizes && norm) {
    if (norm->size() > t->sizes->size()) return a.Error("normalized_shape is longer than the input");
    Dims s(t->sizes->begin(), t->sizes->end() - static_cast<std::ptrdiff_t>(norm->size()));
    s.resize(t->sizes->size(), Dim(1));
    stats = std::move(s);
  }
  std::optional<DType> stat = t->dtype;
  if (stat && (*stat == DType::kFloat16 || *stat == DType::kBFloat16)) stat = DType::kFloat32;
  return Types{TensorOf(t->dtype, t->sizes, t->device), TensorOf(stat, stats, t->device),
               TensorOf(stat, stats, t->device)};
}

// aten::index.Tensor(self, Tensor?[] indices): NumPy advanced indexing.
// The index tensors broadcast together; their result dims replace the
// indexed dims in place when the indexed dims are adjacent, else lead.
absl::StatusOr<Types> Index(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Types unknown{TensorOf(t->dtype, std::nullopt, t->device)};
  std::optional<std::vector<const Type*>> elems = a.ListElementTypes(1);
  // A constant list of index tensors (folded): their own types.
  std::vector<TypePtr> constant_types;
  if (!elems && a.node().inputs().size() > 1) {
    std::optional<IValue> c = ir::ConstantValue(a.node().input(1));
    if (c && c->isList()) {
      elems.emplace();
      for (const IValue& e : c->elements()) {
        if (e.isNone()) {
          constant_types.push_back(Type::None());
        } else if (e.isTensor()) {
          Dims sizes(e.toTensor().sizes().begin(), e.toTensor().sizes().end());
          constant_types.push_back(TensorOf(e.toTensor().dtype(), sizes, std::nullopt));
        } else {
          return unknown;
        }
      }
      for (const TypePtr& ty : constant_types) elems->push_back(ty.get());
    }
  }
  if (!t->sizes || !elems) return unknown;
  const Dims& in = *t->sizes;
  if (elems->size() > in.size()) return a.Error("too many indices for the tensor's rank");
  SymbolicSizes broadcast = Dims{};
  std::optional<size_t> first, last;
  for (size_t i = 0; i < elems->size(); ++i) {
    const Type* e = (*elems)[i];
    if (e->kind() == TypeKind::kNone) continue;
    if (!e->is_tensor()) return unknown;
    const TensorInfo& idx = e->tensor();
    // Masks select a data-dependent number of elements.
    if (!idx.dtype || *idx.dtype == DType::kBool || *idx.dtype == DType::kUInt8) return unknown;
    ASSIGN_OR_RETURN(broadcast, BroadcastOrError(a, broadcast, idx.sizes));
    if (!first) first = i;
    last = i;
  }
  if (!first) return Types{TensorOf(t->dtype, in, t->device)};
  if (!broadcast) return unknown;
  bool adjacent = true;
  for (size_t i = *first; i <= *last; ++i) {
    if ((*elems)[i]->kind() == TypeKind::kNone) adjacent = false;
  }
  Dims out;
  if (adjacent) {
    out.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(*first));
    out.insert(out.end(), broadcast->begin(), broadcast->end());
    out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(*last) + 1, in.end());
  } else {
    out = *broadcast;
    for (size_t i = 0; i < in.size(); ++i) {
      const bool indexed = i < elems->size() && (*elems)[i]->kind() != TypeKind::kNone;
      if (!indexed) out.push_back(in[i]);
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// aten::slice.Tensor(self, dim, start?, end?, step): PyTorch's clamping.
absl::StatusOr<Types> Slice(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  Dim dim = a.Int(1);
  Dim step = a.Int(4);
  if (!dim || !step) return Types{TensorOf(t->dtype, Dims(out.size()), t->device)};
  if (out.empty()) return a.Error("slice of a 0-dim tensor");
  if (*step <= 0) return a.Error("slice step must be positive");
  ASSIGN_OR_RETURN(size_t w, WrapDim(a, *dim, out.size()));
  if (!out[w]) return Types{TensorOf(t->dtype, out, t->device)};
  const int64_t size = *out[w];
  int64_t start = 0, end = size;
  if (!a.IsNone(2)) {
    Dim s = a.Int(2);
    if (!s) {
      out[w] = std::nullopt;
      return Types{TensorOf(t->dtype, out, t->device)};
    }
    start = *s;
  }
  if (!a.IsNone(3)) {
    Dim e = a.Int(3);
    if (!e) {
      out[w] = std::nullopt;
      return Types{TensorOf(t->dtype, out, t->device)};
    }
    end = *e;
  }
  auto clamp = [size](int64_t v) {
    if (v < 0) v = v < -size ? 0 : v + size;
    return std::min(v, size);
  };
  start = clamp(start);
  end = std::max(clamp(end), start);
  out[w] = (end - start + *step - 1) / *step;
  return Types{TensorOf(t->dtype, out, t->device)};
}

// Input 0's type with the dim that argument `dim_arg` names replaced by
// `size` (narrow's length, index_select's index length).
absl::StatusOr<Types> ReplaceDim(const Args& a, size_t dim_arg, Dim size) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  Dim dim = a.Int(dim_arg);
  if (!dim) return Types{TensorOf(t->dtype, Dims(out.size()), t->device)};
  if (out.empty()) return Types{TensorOf(t->dtype, out, t->device)};
  ASSIGN_OR_RETURN(size_t w, WrapDim(a, *dim, out.size()));
  out[w] = size;
  return Types{TensorOf(t->dtype, out, t->device)};
}

// aten::narrow(self, dim, start, length).
absl::StatusOr<Types> Narrow(const Args& a) { return ReplaceDim(a, 1, a.Int(3)); }

// aten::index_select(self, dim, index): the dim takes index's length.
absl::StatusOr<Types> IndexSelect(const Args& a) {
  SymbolicSizes idx = a.Sizes(2);
  return ReplaceDim(a, 1, idx && idx->size() <= 1 ? (idx->empty() ? Dim(1) : (*idx)[0]) : std::nullopt);
}

// aten::gather(self, dim, index): index's sizes.
absl::StatusOr<Types> Gather(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  return Types{TensorOf(t ? t->dtype : std::nullopt, a.Sizes(2), t ? t->device : std::nullopt)};
}

// aten::embedding(weight, indices, ...): indices.shape + weight.shape[1:].
absl::StatusOr<Types> Embedding(const Args& a) {
  const TensorInfo* w = a.Tensor(0);
  if (!w) return Types{Type::Tensor()};
  SymbolicSizes idx = a.Sizes(1);
  if (!w->sizes || !idx || w->sizes->size() != 2) return Types{TensorOf(w->dtype, std::nullopt, w->device)};
  Dims out = *idx;
  out.push_back((*w->sizes)[1]);
  return Types{TensorOf(w->dtype, out, w->device)};
}

// full(size, fill_value, dtype?) / zeros / ones / empty(size, dtype?).
ShapeImpl Fill(size_t size_arg, std::optional<size_t> fill_arg, size_t dtype_arg) {
  return [=](const Args& a) -> absl::StatusOr<Types> {
    std::optional<DType> def = DType::kFloat32;
    if (fill_arg) def = NumberDType(a, *fill_arg);
    return Types{TensorOf(DTypeArg(a, dtype_arg, def), a.IntListElements(size_arg), std::nullopt)};
  };
}

// *_like(self, [fill,] dtype?) and new_*(self, size, [fill,] dtype?).
ShapeImpl FillLike(std::optional<size_t> size_arg, size_t dtype_arg) {
  return [=](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types{Type::Tensor()};
    SymbolicSizes sizes = size_arg ? a.IntListElements(*size_arg) : t->sizes;
    return Types{TensorOf(DTypeArg(a, dtype_arg, t->dtype), sizes, t->device)};
  };
}

// arange(end) / arange.start(start, end) / arange.start_step(start, end, step).
ShapeImpl Arange(std::optional<size_t> start_arg, size_t end_arg, std::optional<size_t> step_arg,
                 size_t dtype_arg) {
  return [=](const Args& a) -> absl::StatusOr<Types> {
    std::vector<size_t> args{end_arg};
    if (start_arg) args.push_back(*start_arg);
    if (step_arg) args.push_back(*step_arg);
    std::optional<DType> def = DType::kInt64;
    for (size_t i : args) {
      std::optional<DType> d = NumberDType(a, i);
      if (!d) def.reset();
      else if (*d == DType::kFloat32 && def) def = DType::kFloat32;
    }
    std::optional<DType> dtype = DTypeArg(a, dtype_arg, def);
    std::optional<double> start = start_arg ? a.Double(*start_arg) : std::optional<double>(0);
    std::optional<double> end = a.Double(end_arg);
    std::optional<double> step = step_arg ? a.Double(*step_arg) : std::optional<double>(1);
    if (!start || !end || !step) return Types{TensorOf(dtype, Dims(1), std::nullopt)};
    if (*step == 0) return a.Error("arange step must not be 0");
    const double n = std::ceil((*end - *start) / *step);
    if (n < 0) return a.Error("arange's end is on the wrong side of start for the step");
    return Types{TensorOf(dtype, Dims{static_cast<int64_t>(n)}, std::nullopt)};
  };
}

// aten::repeat(self, repeats): leading repeats add dims.
absl::StatusOr<Types> Repeat(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> reps = a.IntList(1);
  if (!reps || !t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  if (reps->size() < t->sizes->size()) return a.Error("repeat needs at least one count per dim");
  Dims out;
  const size_t lead = reps->size() - t->sizes->size();
  for (size_t i = 0; i < reps->size(); ++i) {
    Dim d = i < lead ? Dim(1) : (*t->sizes)[i - lead];
    out.push_back(d ? Dim(*d * (*reps)[i]) : std::nullopt);
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// topk(self, k, dim, ...) / sort(self, dim, ...): (values, int64 indices).
ShapeImpl ValuesIndices(std::optional<size_t> k_arg, size_t dim_arg) {
  return [=](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types(2, Type::Tensor());
    SymbolicSizes out = t->sizes;
    if (k_arg && out) {
      Dim dim = a.Int(dim_arg);
      if (!dim) {
        out = Dims(out->size());
      } else if (!out->empty()) {
        ASSIGN_OR_RETURN(size_t w, WrapDim(a, *dim, out->size()));
        (*out)[w] = a.Int(*k_arg);
      }
    }
    return Types{TensorOf(t->dtype, out, t->device), TensorOf(DType::kInt64, out, t->device)};
  };
}

// aten::constant_pad_nd(self, pad, value): pad pairs from the last dim.
absl::StatusOr<Types> ConstantPadNd(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> pad = a.IntList(1);
  if (!t->sizes || !pad) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  if (pad->size() % 2 != 0 || pad->size() / 2 > out.size()) return a.Error("bad pad length");
  for (size_t p = 0; p < pad->size() / 2; ++p) {
    Dim& d = out[out.size() - 1 - p];
    if (d) d = *d + (*pad)[2 * p] + (*pad)[2 * p + 1];
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// aten::movedim.intlist / .int(self, source, destination).
absl::StatusOr<Types> Movedim(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> src = a.IntList(1), dst = a.IntList(2);
  if (!t->sizes || !src || !dst) return Types{TensorOf(t->dtype, t->sizes ? SymbolicSizes(Dims(t->sizes->size())) : std::nullopt, t->device)};
  const size_t r = t->sizes->size();
  if (src->size() != dst->size()) return a.Error("movedim: source and destination differ in length");
  std::vector<int64_t> order(r, -1);
  std::vector<bool> used(r, false);
  for (size_t i = 0; i < src->size(); ++i) {
    ASSIGN_OR_RETURN(size_t s, WrapDim(a, (*src)[i], r));
    ASSIGN_OR_RETURN(size_t d, WrapDim(a, (*dst)[i], r));
    if (order[d] >= 0 || used[s]) return a.Error("movedim: repeated dims");
    order[d] = static_cast<int64_t>(s);
    used[s] = true;
  }
  size_t next = 0;
  for (size_t d = 0; d < r; ++d) {
    if (order[d] >= 0) continue;
    while (used[next]) ++next;
    order[d] = static_cast<int64_t>(next);
    used[next] = true;
  }
  Dims out;
  for (int64_t s : order) out.push_back((*t->sizes)[static_cast<size_t>(s)]);
  return Types{TensorOf(t->dtype, out, t->device)};
}

}  // namespace

std::optional<std::vector<TypePtr>> ListUnpackTypes(const Node& producer, size_t n) {
  static const ir::Symbol kSplitSizes = ir::Symbol::FromQualString("aten::split_with_sizes");
  static const ir::Symbol kSplit = ir::Symbol::FromQualString("aten::split");
  static const ir::Symbol kChunk = ir::Symbol::FromQualString("aten::chunk");
  static const ir::Symbol kUnbind = ir::Symbol::FromQualString("aten::unbind");
  const ir::Symbol k = producer.kind();
  if (k != kSplitSizes && k != kSplit && k != kChunk && k != kUnbind) return std::nullopt;
  if (producer.inputs().empty() || !producer.input(0)->type()->is_tensor()) return std::nullopt;
  const TensorInfo& t = producer.input(0)->type()->tensor();
  if (!t.sizes || t.sizes->empty()) return std::nullopt;
  auto constant = [&](size_t i) -> std::optional<IValue> {
    if (i >= producer.inputs().size()) return std::nullopt;
    return ConstantValueOf(*producer.input(i));
  };
  const size_t dim_arg = k == kUnbind ? 1 : 2;
  int64_t dim = 0;
  if (std::optional<IValue> d = constant(dim_arg); d && d->isInt()) {
    dim = d->toInt();
  } else if (dim_arg < producer.inputs().size()) {
    return std::nullopt;
  }
  const int64_t r = static_cast<int64_t>(t.sizes->size());
  if (dim < -r || dim >= r) return std::nullopt;
  const size_t w = static_cast<size_t>(dim < 0 ? dim + r : dim);
  const Dim size = (*t.sizes)[w];
  std::vector<Dim> pieces;  // each piece's extent along w
  if (k == kUnbind) {
    if (!size || static_cast<size_t>(*size) != n) return std::nullopt;
    Dims out = *t.sizes;
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(w));
    return std::vector<TypePtr>(n, TensorOf(t.dtype, out, t.device));
  }
  std::optional<IValue> arg = constant(1);
  if (!arg) return std::nullopt;
  if (arg->isList()) {
    for (const IValue& e : arg->elements()) {
      if (!e.isInt()) return std::nullopt;
      pieces.push_back(e.toInt());
    }
  } else if (arg->isInt() && size) {
    const int64_t x = arg->toInt();
    if (x <= 0) return std::nullopt;
    // split.Tensor: pieces of x; chunk: x pieces of ceil(size / x).
    const int64_t each = k == kChunk ? (*size + x - 1) / x : x;
    if (each <= 0) return std::nullopt;
    for (int64_t left = *size; left > 0; left -= each) pieces.push_back(std::min(each, left));
    if (pieces.empty()) pieces.push_back(0);
  } else {
    return std::nullopt;
  }
  if (pieces.size() != n) return std::nullopt;
  std::vector<TypePtr> out;
  for (const Dim& p : pieces) {
    Dims s = *t.sizes;
    s[w] = p;
    out.push_back(TensorOf(t.dtype, s, t.device));
  }
  return out;
}

std::vector<std::pair<const char*, ShapeImpl>> IndexingShapeEntries() {
  std::vector<std::pair<const char*, ShapeImpl>> t;
  auto add = [&](std::initializer_list<const char*> names, const ShapeImpl& impl) {
    for (const char* n : names) t.emplace_back(n, impl);
  };
  add({"aten::native_layer_norm"}, NativeLayerNorm);
  add({"aten::index.Tensor", "aten::index.Tensor_hacked_twin"}, Index);
  add({"aten::slice.Tensor"}, Slice);
  add({"aten::narrow"}, Narrow);
  add({"aten::index_select"}, IndexSelect);
  add({"aten::gather"}, Gather);
  add({"aten::embedding"}, Embedding);
  add({"aten::full"}, Fill(0, 1, 2));
  add({"aten::zeros", "aten::ones", "aten::empty.memory_format"}, Fill(0, std::nullopt, 1));
  add({"aten::zeros_like", "aten::ones_like", "aten::empty_like"}, FillLike(std::nullopt, 1));
  add({"aten::full_like"}, FillLike(std::nullopt, 2));
  add({"aten::new_zeros", "aten::new_ones", "aten::new_empty"}, FillLike(1, 2));
  add({"aten::new_full"}, FillLike(1, 3));
  add({"aten::arange"}, Arange(std::nullopt, 0, std::nullopt, 1));
  add({"aten::arange.start"}, Arange(0, 1, std::nullopt, 2));
  add({"aten::arange.start_step"}, Arange(0, 1, 2, 3));
  add({"aten::triu", "aten::tril", "aten::roll", "aten::scatter.src", "aten::scatter.value",
       "aten::index_put", "aten::fill.Scalar", "aten::fill.Tensor"},
      [](const Args& a) -> absl::StatusOr<Types> { return Same(a); });
  add({"aten::repeat"}, Repeat);
  add({"aten::topk"}, ValuesIndices(1, 2));
  add({"aten::sort"}, ValuesIndices(std::nullopt, 1));
  add({"aten::constant_pad_nd"}, ConstantPadNd);
  add({"aten::movedim.intlist", "aten::movedim.int"}, Movedim);
  return t;
}

}  // namespace kiln::passes::shape_internal
