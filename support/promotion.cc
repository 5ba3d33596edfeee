#include "support/promotion.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln {
namespace {

bool IsBarebonesUnsigned(DType t) {
  return t == DType::kUInt16 || t == DType::kUInt32 || t == DType::kUInt64;
}

bool IsHalfWidthFloat(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// promote_skip_undefined: an empty side gives way.
std::optional<DType> PromoteSkipUndefined(std::optional<DType> a, std::optional<DType> b,
                                          bool* failed) {
  if (!a) return b;
  if (!b) return a;
  std::optional<DType> r = PromoteTypes(*a, *b);
  if (!r) *failed = true;
  return r;
}

// c10's combine_categories: `higher` (a higher-priority class) wins unless
// `lower` is of a higher category.
std::optional<DType> CombineCategories(std::optional<DType> higher, std::optional<DType> lower,
                                       bool* failed) {
  if (higher && IsComplex(*higher)) return higher;
  if (lower && IsComplex(*lower)) {
    if (higher && IsFloatingPoint(*higher)) {
      // toComplexType(higher): kiln only has complex64 (float32's).
      if (*higher == DType::kFloat32) return DType::kComplex64;
      *failed = true;
      return std::nullopt;
    }
    return lower;
  }
  if (higher && IsFloatingPoint(*higher)) return higher;
  if ((higher && *higher == DType::kBool) || (lower && IsFloatingPoint(*lower))) {
    return PromoteSkipUndefined(higher, lower, failed);
  }
  if (higher) return higher;
  return lower;
}

}  // namespace

PromotionCategory CategoryOf(DType t) {
  if (t == DType::kBool) return PromotionCategory::kBool;
  if (IsComplex(t)) return PromotionCategory::kComplex;
  if (IsFloatingPoint(t)) return PromotionCategory::kFloating;
  return PromotionCategory::kIntegral;
}

std::optional<DType> PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  if (IsBarebonesUnsigned(a) || IsBarebonesUnsigned(b)) {
    if (IsFloatingPoint(a)) return a;
    if (IsFloatingPoint(b)) return b;
    return std::nullopt;  // PyTorch: "Promotion for uint16, uint32, uint64 types is not supported"
  }
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  const PromotionCategory ca = CategoryOf(a), cb = CategoryOf(b);
  if (ca == PromotionCategory::kComplex || cb == PromotionCategory::kComplex) {
    const DType other = ca == PromotionCategory::kComplex ? b : a;
    if (other == DType::kFloat64) return std::nullopt;  // complex128
    return DType::kComplex64;                            // the only complex dtype
  }
  if (ca != cb) return ca == PromotionCategory::kFloating ? a : b;
  if (ca == PromotionCategory::kFloating) {
    if (IsHalfWidthFloat(a) && IsHalfWidthFloat(b)) return DType::kFloat32;
    return DTypeSize(a) >= DTypeSize(b) ? a : b;
  }
  // Integral: only uint8 is unsigned here. With int8 neither holds the
  // other (NumPy: int16); with a wider signed type the signed one wins.
  if ((a == DType::kUInt8 && b == DType::kInt8) || (a == DType::kInt8 && b == DType::kUInt8)) {
    return DType::kInt16;
  }
  if (a == DType::kUInt8) return b;
  if (b == DType::kUInt8) return a;
  return DTypeSize(a) >= DTypeSize(b) ? a : b;
}

DType WrappedNumberDType(DType scalar) {
  if (IsFloatingPoint(scalar)) return DType::kFloat32;
  return scalar;
}

void ResultTypeState::Add(const DTypeOperand& operand) {
  switch (operand.cls) {
    case OperandClass::kDimensioned:
      dim_ = PromoteSkipUndefined(dim_, operand.dtype, &failed_);
      break;
    case OperandClass::kZeroDim:
      zero_dim_ = PromoteSkipUndefined(zero_dim_, operand.dtype, &failed_);
      break;
    case OperandClass::kScalar:
      wrapped_ = PromoteSkipUndefined(wrapped_, WrappedNumberDType(operand.dtype), &failed_);
      break;
  }
}

std::optional<DType> ResultTypeState::Result() const {
  bool failed = failed_;
  std::optional<DType> lower = CombineCategories(zero_dim_, wrapped_, &failed);
  std::optional<DType> result = CombineCategories(dim_, lower, &failed);
  if (failed) return std::nullopt;
  return result;
}

absl::StatusOr<DType> ResultType(absl::Span<const DTypeOperand> operands) {
  if (operands.empty()) return absl::InvalidArgumentError("result_type of no operands");
  ResultTypeState state;
  for (const DTypeOperand& op : operands) state.Add(op);
  std::optional<DType> result = state.Result();
  if (!result) {
    std::string names;
    for (const DTypeOperand& op : operands) {
      absl::StrAppend(&names, names.empty() ? "" : ", ", DTypeName(op.dtype));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("type promotion of (", names,
                     ") has no result (PyTorch promotes uint16/uint32/uint64 only with "
                     "themselves or floating dtypes; complex128 does not exist in kiln)"));
  }
  return *result;
}

}  // namespace kiln
