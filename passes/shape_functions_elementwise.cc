#include "passes/shape_functions_internal.h"

#include "support/status.h"

namespace kiln::passes::shape_internal {

ShapeImpl Unary(DTypeRule rule) {
  return [rule](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types{Type::Tensor()};
    return Types{TensorOf(ApplyRule(rule, t->dtype), t->sizes, t->device)};
  };
}

namespace {

// Sizes an operand contributes to broadcasting: a scalar is 0-dim.
const SymbolicSizes& OperandSizes(const Args& a, size_t i) {
  static const SymbolicSizes* const kScalar = new SymbolicSizes(Dims());
  const Type* t = a.TypeAt(i);
  if (t && t->is_tensor()) return t->tensor().sizes;
  return *kScalar;
}

}  // namespace

ShapeImpl Binary(BinaryRule rule) {
  return [rule](const Args& a) -> absl::StatusOr<Types> {
    ASSIGN_OR_RETURN(SymbolicSizes sizes,
                     BroadcastOrError(a, OperandSizes(a, 0), OperandSizes(a, 1)));
    if (rule == BinaryRule::kInplace) {
      const TensorInfo* self = a.Tensor(0);
      if (!self) return Types{Type::Tensor()};
      if (sizes && self->sizes && sizes->size() != self->sizes->size()) {
        return a.Error(absl::StrCat("in-place result of sizes ", SizesToString(sizes),
                                    " does not fit self of sizes ", SizesToString(self->sizes)));
      }
      if (sizes && self->sizes) {
        for (size_t i = 0; i < sizes->size(); ++i) {
          const Dim& s = (*self->sizes)[i];
          const Dim& b = (*sizes)[i];
          if (s && b && *s != *b) {
            return a.Error(absl::StrCat("in-place result of sizes ", SizesToString(sizes),
                                        " does not fit self of sizes ",
                                        SizesToString(self->sizes)));
          }
        }
      }
      return Types{TensorOf(self->dtype, self->sizes, self->device)};
    }
    std::optional<DType> dtype;
    bool true_divide = rule == BinaryRule::kTrueDivide;
    if (rule == BinaryRule::kDivMode) {
      if (a.IsNone(2)) {
        true_divide = true;
      } else if (!a.Str(2)) {
        return Types{TensorOf(std::nullopt, sizes, a.CommonDevice())};
      }
    }
    if (rule == BinaryRule::kBool) {
      dtype = DType::kBool;
    } else {
      dtype = PromoteInputs(a, {0, 1});
      if (true_divide) dtype = ApplyRule(DTypeRule::kIntToFloat, dtype);
    }
    return Types{TensorOf(dtype, sizes, a.CommonDevice())};
  };
}

// where.self(condition, self, other).
absl::StatusOr<Types> Where(const Args& a) {
  ASSIGN_OR_RETURN(SymbolicSizes s, BroadcastOrError(a, OperandSizes(a, 0), OperandSizes(a, 1)));
  ASSIGN_OR_RETURN(s, BroadcastOrError(a, s, OperandSizes(a, 2)));
  return Types{TensorOf(PromoteInputs(a, {1, 2}), s, a.CommonDevice())};
}

// Sizes of input 0, dtype of input 1 (type_as, to.other).
absl::StatusOr<Types> SizesOf0DTypeOf1(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  return Types{TensorOf(a.DTypeOf(1), t->sizes, t->device)};
}

// to.dtype(self, ScalarType dtype, ...).
absl::StatusOr<Types> ToDType(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim code = a.Int(1);
  return Types{TensorOf(code ? DTypeFromCode(*code) : std::nullopt, t->sizes, t->device)};
}

ShapeImpl ToDTypeAt(size_t dtype_arg) {
  return [dtype_arg](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types{Type::Tensor()};
    std::optional<DType> dtype = t->dtype;
    if (!a.IsNone(dtype_arg)) {
      Dim code = a.Int(dtype_arg);
      dtype = code ? DTypeFromCode(*code) : std::nullopt;
    }
    return Types{TensorOf(dtype, t->sizes, t->device)};
  };
}

absl::StatusOr<Types> Ternary(const Args& a) {
  ASSIGN_OR_RETURN(SymbolicSizes s, BroadcastOrError(a, OperandSizes(a, 0), OperandSizes(a, 1)));
  ASSIGN_OR_RETURN(s, BroadcastOrError(a, s, OperandSizes(a, 2)));
  return Types{TensorOf(PromoteInputs(a, {0, 1, 2}), s, a.CommonDevice())};
}

absl::StatusOr<Types> ClampTensor(const Args& a) {
  SymbolicSizes s = OperandSizes(a, 0);
  std::vector<size_t> present{0};
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (a.IsNone(i) || !a.TypeAt(i)) continue;
    ASSIGN_OR_RETURN(s, BroadcastOrError(a, s, OperandSizes(a, i)));
    present.push_back(i);
  }
  std::optional<DType> dtype;
  if (present.size() == 1) dtype = a.DTypeOf(0);
  if (present.size() == 2) dtype = PromoteInputs(a, {present[0], present[1]});
  if (present.size() == 3) dtype = PromoteInputs(a, {0, 1, 2});
  return Types{TensorOf(dtype, s, a.CommonDevice())};
}

// glu(self, dim=-1): the dim halves (it must be even).
absl::StatusOr<Types> Glu(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim dim = a.Int(1);
  if (!t->sizes || !dim) {
    return Types{TensorOf(t->dtype, t->sizes ? SymbolicSizes(Dims(t->sizes->size())) : std::nullopt,
                          t->device)};
  }
  Dims out = *t->sizes;
  ASSIGN_OR_RETURN(size_t d, WrapDim(a, *dim, out.size()));
  if (out.empty()) return a.Error("glu does not take a 0-dim tensor");
  if (out[d]) {
    if (*out[d] % 2 != 0) return a.Error(absl::StrCat("glu halves dim ", *dim, " of odd size ", *out[d]));
    out[d] = *out[d] / 2;
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

}  // namespace kiln::passes::shape_internal
