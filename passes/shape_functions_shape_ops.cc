#include "passes/shape_functions_internal.h"

#include <algorithm>

#include "support/status.h"

namespace kiln::passes::shape_internal {

std::optional<int64_t> Product(const Dims& dims) {
  int64_t p = 1;
  for (const Dim& d : dims) {
    if (!d) return std::nullopt;
    p *= *d;
  }
  return p;
}

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

}  // namespace kiln::passes::shape_internal
