#include "passes/shape_functions_internal.h"

#include <algorithm>
#include <limits>

#include "support/status.h"

namespace kiln::passes::shape_internal {

absl::StatusOr<Types> TransposeLast2(const Args& a) {  // aten::t
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  if (t->sizes->size() > 2) {
    return a.Error(absl::StrCat("t expects a tensor of at most 2 dims, got ",
                                SizesToString(t->sizes)));
  }
  Dims out(t->sizes->rbegin(), t->sizes->rend());
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Transpose(const Args& a) {  // transpose.int(self, dim0, dim1)
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim d0 = a.Int(1);
  Dim d1 = a.Int(2);
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  if (!d0 || !d1) return Types{TensorOf(t->dtype, Dims(out.size(), std::nullopt), t->device)};
  ASSIGN_OR_RETURN(size_t i, WrapDim(a, *d0, out.size()));
  ASSIGN_OR_RETURN(size_t j, WrapDim(a, *d1, out.size()));
  if (!out.empty()) std::swap(out[i], out[j]);
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Permute(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> perm = a.IntList(1);
  if (!t->sizes || !perm) return Types{TensorOf(t->dtype, t->sizes ? SymbolicSizes(Dims(t->sizes->size())) : std::nullopt, t->device)};
  if (perm->size() != t->sizes->size()) {
    return a.Error(absl::StrCat("permute of ", perm->size(), " dims on a tensor of rank ",
                                t->sizes->size()));
  }
  Dims out;
  for (int64_t p : *perm) {
    ASSIGN_OR_RETURN(size_t i, WrapDim(a, p, t->sizes->size()));
    out.push_back((*t->sizes)[i]);
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// flatten.using_ints(self, start_dim=0, end_dim=-1).
absl::StatusOr<Types> Flatten(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim start = a.Int(1);
  Dim end = a.Int(2);
  if (!t->sizes || !start || !end) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  if (in.empty()) return Types{TensorOf(t->dtype, Dims{1}, t->device)};
  ASSIGN_OR_RETURN(size_t s, WrapDim(a, *start, in.size()));
  ASSIGN_OR_RETURN(size_t e, WrapDim(a, *end, in.size()));
  if (s > e) return a.Error("flatten: start_dim comes after end_dim");
  Dims out(in.begin(), in.begin() + s);
  out.push_back(Product(Dims(in.begin() + s, in.begin() + e + 1)));
  out.insert(out.end(), in.begin() + e + 1, in.end());
  return Types{TensorOf(t->dtype, out, t->device)};
}

// view/reshape(self, size): at most one -1, inferred from the element count.
absl::StatusOr<Types> View(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  SymbolicSizes requested = a.IntListElements(1);
  if (!requested) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *requested;
  std::optional<size_t> infer;
  int64_t known_product = 1;
  bool all_known = true;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i]) {
      all_known = false;
      continue;
    }
    if (*out[i] == -1) {
      if (infer) return a.Error("only one dimension can be inferred (-1)");
      infer = i;
      continue;
    }
    if (*out[i] < 0) return a.Error(absl::StrCat("invalid size ", *out[i]));
    known_product *= *out[i];
  }
  std::optional<int64_t> maybe_numel = t->sizes ? Product(*t->sizes) : std::nullopt;
  const bool numel_known = maybe_numel.has_value();
  const int64_t numel = maybe_numel.value_or(0);
  if (infer) {
    out[*infer] = std::nullopt;
    if (all_known && numel_known) {
      if (known_product == 0 || numel % known_product != 0) {
        return a.Error(absl::StrCat("shape ", SizesToString(requested), " is invalid for input of ",
                                    numel, " elements"));
      }
      out[*infer] = numel / known_product;
    }
  } else if (all_known && numel_known && numel != known_product) {
    return a.Error(absl::StrCat("shape ", SizesToString(requested), " is invalid for input of ",
                                numel, " elements"));
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// view_as / reshape_as / expand_as: input 1's sizes.
absl::StatusOr<Types> SizesOf1(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  return Types{TensorOf(t->dtype, a.Sizes(1), t->device)};
}

// expand(self, size, *, implicit): -1 keeps the input's dim.
absl::StatusOr<Types> Expand(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  SymbolicSizes requested = a.IntListElements(1);
  if (!requested) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *requested;
  if (t->sizes && t->sizes->size() > out.size()) {
    return a.Error("expand: the number of sizes is smaller than the tensor's rank");
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] && *out[i] == -1) {
      size_t lead = out.size() - (t->sizes ? t->sizes->size() : 0);
      out[i] = (t->sizes && i >= lead) ? (*t->sizes)[i - lead] : std::nullopt;
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Unsqueeze(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim d = a.Int(1);
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  if (!d) return Types{TensorOf(t->dtype, Dims(out.size() + 1), t->device)};
  int64_t r = static_cast<int64_t>(out.size()) + 1;
  if (*d < -r || *d >= r) return a.Error(absl::StrCat("unsqueeze dim ", *d, " is out of range"));
  size_t at = static_cast<size_t>(*d < 0 ? *d + r : *d);
  out.insert(out.begin() + at, Dim(1));
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Squeeze(const Args& a) {  // squeeze(self) and squeeze.dim
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  Dims out;
  if (a.size() >= 2) {
    Dim d = a.Int(1);
    if (!d) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
    ASSIGN_OR_RETURN(size_t w, WrapDim(a, *d, in.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      if (i == w) {
        if (!in[i]) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
        if (*in[i] == 1) continue;
      }
      out.push_back(in[i]);
    }
  } else {
    for (const Dim& d : in) {
      if (!d) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
      if (*d != 1) out.push_back(d);
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> SqueezeDims(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> dims = a.IntList(1);
  if (!t->sizes || !dims) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  std::vector<bool> listed(std::max<size_t>(in.size(), 1), false);
  for (int64_t d : *dims) {
    ASSIGN_OR_RETURN(size_t w, WrapDim(a, d, std::max<size_t>(in.size(), 1)));
    listed[w] = true;
  }
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (listed[i] && !in[i]) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
    if (!listed[i] || *in[i] != 1) out.push_back(in[i]);
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Select(const Args& a) {  // select.int(self, dim, index)
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim d = a.Int(1);
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  if (t->sizes->empty()) return a.Error("select on a 0-dim tensor");
  if (!d) return Types{TensorOf(t->dtype, Dims(t->sizes->size() - 1), t->device)};
  ASSIGN_OR_RETURN(size_t w, WrapDim(a, *d, t->sizes->size()));
  Dims out = *t->sizes;
  out.erase(out.begin() + w);
  return Types{TensorOf(t->dtype, out, t->device)};
}

// cat(tensors, dim=0): other dims must agree; legacy 1-D empty tensors are
// skipped, as PyTorch does.
absl::StatusOr<Types> Cat(const Args& a) {
  std::optional<std::vector<const Type*>> elems = a.ListElementTypes(0);
  if (!elems || elems->empty()) return Types{Type::Tensor()};
  Dim dim = a.Int(1);
  std::vector<PromotionOperand> ops;
  std::optional<Dims> out;
  bool rank_unknown = false;
  std::optional<ir::Device> device;
  bool device_conflict = false;
  for (const Type* t : *elems) {
    if (!t->is_tensor()) return Types{Type::Tensor()};
    const TensorInfo& info = t->tensor();
    PromotionOperand op;
    op.dtype = info.dtype;
    op.rank = 1;  // cat promotes all inputs as dimensioned tensors
    ops.push_back(op);
    if (info.device) {
      if (device && *device != *info.device) device_conflict = true;
      device = info.device;
    }
    if (!info.sizes) {
      rank_unknown = true;
      continue;
    }
    const Dims& s = *info.sizes;
    if (s.size() == 1 && s[0] && *s[0] == 0) continue;  // legacy empty
    if (!out) {
      out = s;
      continue;
    }
    if (s.size() != out->size()) {
      return a.Error(absl::StrCat("cat of tensors with different ranks: ",
                                  SizesToString(*out), " and ", SizesToString(s)));
    }
    if (!dim) {
      for (size_t i = 0; i < s.size(); ++i) (*out)[i] = std::nullopt;
      continue;
    }
    ASSIGN_OR_RETURN(size_t w, WrapDim(a, *dim, s.size()));
    for (size_t i = 0; i < s.size(); ++i) {
      Dim& o = (*out)[i];
      if (i == w) {
        o = (o && s[i]) ? Dim(*o + *s[i]) : std::nullopt;
      } else if (o && s[i] && *o != *s[i]) {
        return a.Error(absl::StrCat("cat along dim ", *dim, ": sizes ", SizesToString(*out),
                                    " and ", SizesToString(s), " differ at dim ", i));
      } else if (!o) {
        o = s[i];
      }
    }
  }
  std::optional<DType> dtype = ResultType(ops);
  if (device_conflict) device.reset();
  if (rank_unknown || !out) return Types{TensorOf(dtype, std::nullopt, device)};
  if (!dim) return Types{TensorOf(dtype, *out, device)};
  // Only the first tensor was seen along `dim` when there is just one.
  return Types{TensorOf(dtype, *out, device)};
}

// stack(tensors, dim=0): all sizes equal; a new dim of length n.
absl::StatusOr<Types> Stack(const Args& a) {
  std::optional<std::vector<const Type*>> elems = a.ListElementTypes(0);
  if (!elems || elems->empty()) return Types{Type::Tensor()};
  std::vector<PromotionOperand> ops;
  SymbolicSizes common;
  bool first = true;
  for (const Type* t : *elems) {
    if (!t->is_tensor()) return Types{Type::Tensor()};
    PromotionOperand op;
    op.dtype = t->tensor().dtype;
    op.rank = 1;
    ops.push_back(op);
    const SymbolicSizes& s = t->tensor().sizes;
    if (first) {
      common = s;
      first = false;
      continue;
    }
    if (!common || !s) {
      common.reset();
      continue;
    }
    if (s->size() != common->size()) return a.Error("stack of tensors with different ranks");
    for (size_t i = 0; i < s->size(); ++i) {
      Dim& c = (*common)[i];
      if (c && (*s)[i] && *c != *(*s)[i]) {
        return a.Error(absl::StrCat("stack expects equal sizes, got ", SizesToString(common),
                                    " and ", SizesToString(s)));
      }
      if (!c) c = (*s)[i];
    }
  }
  std::optional<DType> dtype = ResultType(ops);
  Dim dim = a.Int(1);
  if (!common || !dim) return Types{TensorOf(dtype, std::nullopt, std::nullopt)};
  int64_t r = static_cast<int64_t>(common->size()) + 1;
  if (*dim < -r || *dim >= r) return a.Error("stack dim is out of range");
  size_t at = static_cast<size_t>(*dim < 0 ? *dim + r : *dim);
  Dims out = *common;
  out.insert(out.begin() + at, Dim(static_cast<int64_t>(elems->size())));
  return Types{TensorOf(dtype, out, std::nullopt)};
}

namespace {

SymbolicSizes UnknownDims(const TensorInfo& t) {
  return t.sizes ? SymbolicSizes(Dims(t.sizes->size())) : std::nullopt;
}

// A list type whose elements all have the facts of `element`.
TypePtr TensorList(std::optional<DType> dtype, SymbolicSizes sizes, std::optional<ir::Device> device) {
  return Type::List(TensorOf(dtype, std::move(sizes), std::move(device)));
}

}  // namespace

// narrow(self, dim, start, length) / narrow.Tensor: the dim becomes length.
absl::StatusOr<Types> Narrow(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim dim = a.Int(1);
  if (!t->sizes || !dim) return Types{TensorOf(t->dtype, UnknownDims(*t), t->device)};
  Dims out = *t->sizes;
  ASSIGN_OR_RETURN(size_t d, WrapDim(a, *dim, out.size()));
  if (out.empty()) return a.Error("narrow does not take a 0-dim tensor");
  out[d] = a.Int(3);
  return Types{TensorOf(t->dtype, out, t->device)};
}

// slice.Tensor(self, dim=0, start?, end?, step=1), with Python's clamping.
absl::StatusOr<Types> SliceShape(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim dim = a.Int(1);
  if (!t->sizes || !dim) return Types{TensorOf(t->dtype, UnknownDims(*t), t->device)};
  Dims out = *t->sizes;
  if (out.empty()) return a.Error("cannot slice a 0-dim tensor");
  ASSIGN_OR_RETURN(size_t d, WrapDim(a, *dim, out.size()));
  Dim start = a.IsNone(2) ? Dim(0) : a.Int(2);
  Dim end = a.IsNone(3) ? Dim(std::numeric_limits<int64_t>::max()) : a.Int(3);
  Dim step = a.Int(4);
  if (step && *step <= 0) return a.Error("slice step must be positive");
  if (!out[d] || !start || !end || !step) {
    out[d] = std::nullopt;
  } else {
    const int64_t n = *out[d];
    auto clamp = [n](int64_t i) {
      if (i < 0) i += n;
      return std::clamp<int64_t>(i, 0, n);
    };
    const int64_t s = clamp(*start), e = clamp(*end);
    const int64_t st = std::min(*step, std::max<int64_t>(n, 1));
    out[d] = e > s ? (e - s + st - 1) / st : 0;
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// diagonal(self, offset=0, dim1=0, dim2=1): the two dims go, the diagonal's
// length is appended.
absl::StatusOr<Types> Diagonal(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim offset = a.Int(1), dim1 = a.Int(2), dim2 = a.Int(3);
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  if (in.size() < 2) return a.Error("diagonal needs a tensor of rank >= 2");
  if (!dim1 || !dim2) return Types{TensorOf(t->dtype, Dims(in.size() - 1), t->device)};
  ASSIGN_OR_RETURN(size_t i, WrapDim(a, *dim1, in.size()));
  ASSIGN_OR_RETURN(size_t j, WrapDim(a, *dim2, in.size()));
  if (i == j) return a.Error("diagonal: dim1 and dim2 must differ");
  Dims out;
  for (size_t k = 0; k < in.size(); ++k) {
    if (k != i && k != j) out.push_back(in[k]);
  }
  Dim len;
  if (offset && in[i] && in[j]) {
    len = *offset >= 0 ? std::max<int64_t>(std::min(*in[i], *in[j] - *offset), 0)
                       : std::max<int64_t>(std::min(*in[i] + *offset, *in[j]), 0);
  }
  out.push_back(len);
  return Types{TensorOf(t->dtype, out, t->device)};
}

// diag(self, diagonal=0): a vector becomes a square matrix, a matrix its diagonal.
absl::StatusOr<Types> Diag(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim k = a.Int(1);
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  if (in.size() == 1) {
    Dim n = in[0] && k ? Dim(*in[0] + std::abs(*k)) : std::nullopt;
    return Types{TensorOf(t->dtype, Dims{n, n}, t->device)};
  }
  if (in.size() != 2) return a.Error("diag expects a 1-D or 2-D tensor");
  Dim len;
  if (k && in[0] && in[1]) {
    len = *k >= 0 ? std::max<int64_t>(std::min(*in[0], *in[1] - *k), 0)
                  : std::max<int64_t>(std::min(*in[0] + *k, *in[1]), 0);
  }
  return Types{TensorOf(t->dtype, Dims{len}, t->device)};
}

// movedim(self, source, destination): int or int[] arguments.
absl::StatusOr<Types> Movedim(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  auto ints = [&](size_t i) -> std::optional<std::vector<int64_t>> {
    if (Dim d = a.Int(i)) return std::vector<int64_t>{*d};
    return a.IntList(i);
  };
  std::optional<std::vector<int64_t>> src = ints(1), dst = ints(2);
  if (!t->sizes || !src || !dst) return Types{TensorOf(t->dtype, UnknownDims(*t), t->device)};
  const size_t r = t->sizes->size();
  if (src->size() != dst->size()) return a.Error("movedim: source and destination differ in length");
  std::vector<int64_t> order(r, -1);
  std::vector<bool> used(r, false);
  for (size_t i = 0; i < src->size(); ++i) {
    ASSIGN_OR_RETURN(size_t s, WrapDim(a, (*src)[i], r));
    ASSIGN_OR_RETURN(size_t d, WrapDim(a, (*dst)[i], r));
    if (order[d] >= 0 || used[s]) return a.Error("movedim: repeated dim");
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

// unbind(self, dim=0): a list of tensors without the dim.
absl::StatusOr<Types> Unbind(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::List(Type::Tensor())};
  Dim dim = a.Int(1);
  SymbolicSizes out;
  if (t->sizes && dim) {
    Dims s = *t->sizes;
    if (s.empty()) return a.Error("unbind does not take a 0-dim tensor");
    ASSIGN_OR_RETURN(size_t d, WrapDim(a, *dim, s.size()));
    s.erase(s.begin() + static_cast<int64_t>(d));
    out = std::move(s);
  }
  return Types{TensorList(t->dtype, out, t->device)};
}

// split / split_with_sizes / chunk(self, ..., dim): pieces of the input's
// rank; only the split dim differs between them.
absl::StatusOr<Types> SplitLike(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::List(Type::Tensor())};
  Dim dim = a.Int(2);
  SymbolicSizes out;
  if (t->sizes && dim) {
    Dims s = *t->sizes;
    if (s.empty()) return a.Error("cannot split a 0-dim tensor");
    ASSIGN_OR_RETURN(size_t d, WrapDim(a, *dim, s.size()));
    s[d] = std::nullopt;
    out = std::move(s);
  } else if (t->sizes) {
    out = UnknownDims(*t);
  }
  return Types{TensorList(t->dtype, out, t->device)};
}

// prim::ListUnpack(list): one output per element. The pieces of a split
// (split / split_with_sizes / chunk / unbind) or of a ListConstruct get their
// own sizes; otherwise every output takes the list's element type.
absl::StatusOr<Types> ListUnpack(const Args& a) {
  const size_t n = a.node().outputs().size();
  const Type* list = a.TypeAt(0);
  TypePtr element = list && list->kind() == TypeKind::kList ? list->contained()[0] : Type::Any();
  Types out(n, element);
  if (n == 0 || a.node().inputs().empty()) return out;
  const Node* producer = a.node().input(0)->node();
  if (producer->kind() == ir::sym::kListConstruct && producer->inputs().size() == n) {
    for (size_t i = 0; i < n; ++i) out[i] = producer->input(i)->type();
    return out;
  }
  absl::string_view kind = producer->kind().qualString();
  const bool split = kind == "aten::split" || kind == "aten::split_with_sizes" || kind == "aten::chunk";
  if (!split || producer->inputs().size() < 2 || !element->is_tensor()) return out;
  const Value* self = producer->input(0);
  if (!self->type()->is_tensor() || !self->type()->tensor().sizes) return out;
  const TensorInfo& t = self->type()->tensor();
  const Dims& in = *t.sizes;
  Dim dim = producer->inputs().size() > 2 ? KnownInt(producer->input(2)) : Dim(0);
  if (!dim || in.empty()) return out;
  ASSIGN_OR_RETURN(size_t d, WrapDim(a, *dim, in.size()));
  if (!in[d]) return out;
  const int64_t size = *in[d];
  std::vector<int64_t> pieces;
  std::optional<IValue> arg = ConstantValueOf(*producer->input(1));
  if (arg && arg->isList()) {  // split sizes
    for (const IValue& e : arg->elements()) {
      if (!e.isInt()) return out;
      pieces.push_back(e.toInt());
    }
  } else if (arg && arg->isInt() && arg->toInt() > 0) {
    // split.Tensor(split_size) or chunk(chunks).
    const int64_t step = kind == "aten::chunk" ? (size + arg->toInt() - 1) / arg->toInt() : arg->toInt();
    for (int64_t start = 0; step > 0 && start < size; start += step) {
      pieces.push_back(std::min(step, size - start));
    }
    if (pieces.empty()) pieces.push_back(0);
  }
  if (pieces.size() != n) return out;
  for (size_t i = 0; i < n; ++i) {
    Dims s = in;
    s[d] = pieces[i];
    out[i] = TensorOf(t.dtype, s, t.device);
  }
  return out;
}

// kiln::onnx_reshape(self, shape, allowzero): 0 copies the input's dim
// unless allowzero; one -1 is inferred.
namespace {

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

}  // namespace

absl::StatusOr<Types> OnnxReshape(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  SymbolicSizes requested = ShapeListElements(a, 1);
  std::optional<bool> allowzero = a.Bool(2);
  if (!requested) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *requested;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i]) continue;
    if (*out[i] == 0 && allowzero && !*allowzero) {
      if (!t->sizes || i >= t->sizes->size()) {
        if (t->sizes) return a.Error("Reshape: 0 copies a dim the input does not have");
        out[i] = std::nullopt;
      } else {
        out[i] = (*t->sizes)[i];
      }
    } else if (*out[i] == 0 && !allowzero) {
      out[i] = std::nullopt;
    } else if (*out[i] == -1) {
      if (infer) return a.Error("Reshape: only one dimension can be inferred (-1)");
      infer = i;
    } else if (*out[i] < -1) {
      return a.Error(absl::StrCat("Reshape: invalid size ", *out[i]));
    }
  }
  if (infer) {
    out[*infer] = std::nullopt;
    std::optional<int64_t> numel = t->sizes ? Product(*t->sizes) : std::nullopt;
    int64_t known = 1;
    bool all_known = numel.has_value();
    for (size_t i = 0; i < out.size() && all_known; ++i) {
      if (i == *infer) continue;
      if (!out[i]) all_known = false;
      else known *= *out[i];
    }
    if (all_known && known != 0) {
      if (*numel % known != 0) {
        return a.Error(absl::StrCat("Reshape: shape ", SizesToString(requested),
                                    " is invalid for ", *numel, " elements"));
      }
      out[*infer] = *numel / known;
    }
  } else if (std::optional<int64_t> p = Product(out); p && t->sizes) {
    // allowzero keeps a 0 literally: [0, 24] of 24 elements is an error.
    if (std::optional<int64_t> numel = Product(*t->sizes); numel && *numel != *p) {
      return a.Error(absl::StrCat("Reshape: shape ", SizesToString(requested),
                                  " is invalid for ", *numel, " elements"));
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_flatten(self, axis=1): [prod(dims < axis), prod(dims >= axis)].
absl::StatusOr<Types> OnnxFlatten(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim axis = a.Int(1);
  if (!t->sizes || !axis) return Types{TensorOf(t->dtype, Dims(2), t->device)};
  const int64_t r = static_cast<int64_t>(t->sizes->size());
  if (*axis < -r || *axis > r) return a.Error(absl::StrCat("Flatten: axis ", *axis, " out of range for rank ", r));
  const int64_t ax = *axis < 0 ? *axis + r : *axis;
  Dims outer(t->sizes->begin(), t->sizes->begin() + ax);
  Dims inner(t->sizes->begin() + ax, t->sizes->end());
  return Types{TensorOf(t->dtype, Dims{Product(outer), Product(inner)}, t->device)};
}

// kiln::onnx_squeeze(self, axes?): the listed dims (which must be 1) go;
// without axes every size-1 dim goes.
absl::StatusOr<Types> OnnxSqueeze(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  if (a.IsNone(1)) {
    Dims out;
    for (const Dim& d : in) {
      if (!d) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
      if (*d != 1) out.push_back(d);
    }
    return Types{TensorOf(t->dtype, out, t->device)};
  }
  std::optional<std::vector<int64_t>> axes = a.IntList(1);
  if (!axes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  std::vector<bool> drop(in.size(), false);
  for (int64_t ax : *axes) {
    ASSIGN_OR_RETURN(size_t d, WrapDim(a, ax, in.size()));
    if (in[d] && *in[d] != 1) return a.Error(absl::StrCat("Squeeze: dim ", d, " has size ", *in[d]));
    drop[d] = true;
  }
  Dims out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!drop[d]) out.push_back(in[d]);
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_unsqueeze(self, axes): axes index the output's dims.
absl::StatusOr<Types> OnnxUnsqueeze(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> axes = a.IntList(1);
  if (!t->sizes || !axes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const int64_t r = static_cast<int64_t>(t->sizes->size() + axes->size());
  std::vector<bool> is_new(static_cast<size_t>(r), false);
  for (int64_t ax : *axes) {
    if (ax < -r || ax >= r) return a.Error(absl::StrCat("Unsqueeze: axis ", ax, " out of range for output rank ", r));
    const size_t d = static_cast<size_t>(ax < 0 ? ax + r : ax);
    if (is_new[d]) return a.Error("Unsqueeze: repeated axis");
    is_new[d] = true;
  }
  Dims out;
  size_t k = 0;
  for (int64_t d = 0; d < r; ++d) out.push_back(is_new[static_cast<size_t>(d)] ? Dim(1) : (*t->sizes)[k++]);
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_expand(self, shape): the broadcast of the input and the shape.
absl::StatusOr<Types> OnnxExpand(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  SymbolicSizes shape = a.IntListElements(1);
  ASSIGN_OR_RETURN(SymbolicSizes out, BroadcastOrError(a, t->sizes, shape));
  // A dim of 1 in `shape` against an unknown input dim stays unknown.
  if (out && shape && t->sizes) {
    const size_t r = out->size();
    for (size_t i = 0; i < shape->size(); ++i) {
      const size_t o = r - shape->size() + i;
      const int64_t ti = static_cast<int64_t>(o) - static_cast<int64_t>(r - t->sizes->size());
      if ((*shape)[i] && *(*shape)[i] == 1 && ti >= 0 && !(*t->sizes)[static_cast<size_t>(ti)]) {
        (*out)[o] = std::nullopt;
      }
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// kiln::onnx_slice(self, starts, ends, axes, steps), clamped as ONNX does.
absl::StatusOr<Types> OnnxSlice(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  const int64_t r = static_cast<int64_t>(out.size());
  std::optional<std::vector<int64_t>> starts = a.IntList(1), ends = a.IntList(2),
                                      axes = a.IntList(3), steps = a.IntList(4);
  if (!axes) {
    // Which dims change is unknown.
    return Types{TensorOf(t->dtype, Dims(out.size()), t->device)};
  }
  if (axes->empty() && !starts && !ends) {
    // Which dims the default axes cover is unknown.
    return Types{TensorOf(t->dtype, Dims(out.size()), t->device)};
  }
  const size_t k = axes->empty() ? (starts ? starts->size() : ends->size()) : axes->size();
  for (size_t i = 0; i < k; ++i) {
    const int64_t ax = axes->empty() ? static_cast<int64_t>(i) : (*axes)[i];
    if (ax < -r || ax >= r) return a.Error(absl::StrCat("Slice: axis ", ax, " out of range for rank ", r));
    const size_t d = static_cast<size_t>(ax < 0 ? ax + r : ax);
    if (!starts || !ends || i >= starts->size() || i >= ends->size() || !out[d] ||
        (steps && !steps->empty() && i >= steps->size()) || !steps) {
      out[d] = std::nullopt;
      continue;
    }
    const int64_t st = steps->empty() ? 1 : std::max((*steps)[i], -std::numeric_limits<int64_t>::max());
    if (st == 0) return a.Error("Slice: step cannot be 0");
    const int64_t n = *out[d];
    int64_t s = (*starts)[i], e = (*ends)[i];
    if (s < 0) s += n;
    if (e < 0) e += n;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      out[d] = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, -1, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      out[d] = s > e ? (s - e - 1) / (-st) + 1 : 0;
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

}  // namespace kiln::passes::shape_internal
