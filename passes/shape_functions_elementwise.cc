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

}  // namespace kiln::passes::shape_internal
