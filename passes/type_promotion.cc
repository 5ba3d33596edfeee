#include "passes/type_promotion.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln::passes {
namespace {

bool IsIntegralNoBool(DType t) { return IsIntegral(t, /*include_bool=*/false); }

// result_type's three priority classes; nullopt = no operand in the class.
struct ResultState {
  std::optional<DType> dim;
  std::optional<DType> zero_dim;
  std::optional<DType> wrapped;
  bool failed = false;  // a promotion had no kiln dtype
};

std::optional<DType> PromoteSkipUndefined(std::optional<DType> a, std::optional<DType> b,
                                          bool* failed) {
  if (!a) return b;
  if (!b) return a;
  std::optional<DType> r = PromoteTypes(*a, *b);
  if (!r) *failed = true;
  return r;
}

// c10's combine_categories: `higher` wins unless `lower` is of a higher
// category.
std::optional<DType> CombineCategories(std::optional<DType> higher, std::optional<DType> lower,
                                       bool* failed) {
  if (higher && IsComplex(*higher)) return higher;
  if (lower && IsComplex(*lower)) {
    if (higher && IsFloatingPoint(*higher)) {
      // The complex type with higher's value type; kiln only has complex64.
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

enum class Slot : uint8_t { kDim, kZeroDim, kWrapped };
struct Choice {
  Slot slot;
  DType dtype;
};

// The dtype a Python number contributes: float -> default dtype (float32),
// complex -> default complex dtype (complex64).
DType WrappedDType(DType scalar) {
  if (IsFloatingPoint(scalar)) return DType::kFloat32;
  return scalar;
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
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  if (IsIntegralNoBool(a) && IsIntegralNoBool(b)) {
    // uint8 is the only unsigned type: with int8 neither holds the other.
    if ((a == DType::kUInt8 && b == DType::kInt8) || (a == DType::kInt8 && b == DType::kUInt8)) {
      return DType::kInt16;
    }
    if (a == DType::kUInt8) return b;
    if (b == DType::kUInt8) return a;
    return DTypeSize(a) >= DTypeSize(b) ? a : b;
  }
  if (IsComplex(a) || IsComplex(b)) {
    DType other = IsComplex(a) ? b : a;
    if (IsComplex(other)) return DType::kComplex64;  // only complex64 exists
    if (other == DType::kFloat64) return std::nullopt;  // complex128
    return DType::kComplex64;
  }
  if (IsFloatingPoint(a) && IsFloatingPoint(b)) {
    bool a_half = a == DType::kFloat16 || a == DType::kBFloat16;
    bool b_half = b == DType::kFloat16 || b == DType::kBFloat16;
    if (a_half && b_half) return DType::kFloat32;  // float16 with bfloat16
    return DTypeSize(a) >= DTypeSize(b) ? a : b;
  }
  // One floating, one integral.
  return IsFloatingPoint(a) ? a : b;
}

std::optional<PromotionOperand> PromotionOperandFor(const ir::Type& type) {
  PromotionOperand op;
  switch (type.kind()) {
    case ir::TypeKind::kTensor:
      op.kind = PromotionOperand::Kind::kTensor;
      op.dtype = type.tensor().dtype;
      op.rank = type.tensor().rank();
      return op;
    case ir::TypeKind::kInt:
      op.kind = PromotionOperand::Kind::kScalar;
      op.dtype = DType::kInt64;
      return op;
    case ir::TypeKind::kFloat:
      op.kind = PromotionOperand::Kind::kScalar;
      op.dtype = DType::kFloat64;
      return op;
    case ir::TypeKind::kBool:
      op.kind = PromotionOperand::Kind::kScalar;
      op.dtype = DType::kBool;
      return op;
    case ir::TypeKind::kComplex:
      op.kind = PromotionOperand::Kind::kScalar;
      op.dtype = DType::kComplex64;
      return op;
    case ir::TypeKind::kNumber:
      op.kind = PromotionOperand::Kind::kUnknownScalar;
      return op;
    default:
      return std::nullopt;
  }
}

std::optional<DType> ResultType(absl::Span<const PromotionOperand> operands) {
  // Fast path: every operand's class and dtype are known.
  {
    ResultState state;
    bool single = !operands.empty();
    for (const PromotionOperand& op : operands) {
      if (op.kind != PromotionOperand::Kind::kUnknownScalar && !op.dtype) return std::nullopt;
      std::optional<DType>* slot;
      if (op.kind == PromotionOperand::Kind::kScalar) {
        slot = &state.wrapped;
      } else if (op.kind == PromotionOperand::Kind::kTensor && op.rank) {
        slot = *op.rank > 0 ? &state.dim : &state.zero_dim;
      } else {
        single = false;
        break;
      }
      DType d = op.kind == PromotionOperand::Kind::kScalar ? WrappedDType(*op.dtype) : *op.dtype;
      *slot = PromoteSkipUndefined(*slot, d, &state.failed);
    }
    if (single) {
      std::optional<DType> lower = CombineCategories(state.zero_dim, state.wrapped, &state.failed);
      std::optional<DType> result = CombineCategories(state.dim, lower, &state.failed);
      return state.failed ? std::nullopt : result;
    }
  }
  // Each operand's possible contributions.
  std::vector<std::vector<Choice>> options;
  options.reserve(operands.size());
  size_t combinations = 1;
  for (const PromotionOperand& op : operands) {
    std::vector<Choice> choices;
    switch (op.kind) {
      case PromotionOperand::Kind::kTensor:
        if (!op.dtype) return std::nullopt;
        if (!op.rank || *op.rank > 0) choices.push_back({Slot::kDim, *op.dtype});
        if (!op.rank || *op.rank == 0) choices.push_back({Slot::kZeroDim, *op.dtype});
        break;
      case PromotionOperand::Kind::kScalar:
        if (!op.dtype) return std::nullopt;
        choices.push_back({Slot::kWrapped, WrappedDType(*op.dtype)});
        break;
      case PromotionOperand::Kind::kUnknownScalar:
        choices.push_back({Slot::kWrapped, DType::kInt64});
        choices.push_back({Slot::kWrapped, DType::kFloat32});
        choices.push_back({Slot::kWrapped, DType::kComplex64});
        break;
    }
    combinations *= choices.size();
    if (combinations > 64) return std::nullopt;
    options.push_back(std::move(choices));
  }
  if (options.empty()) return std::nullopt;

  std::optional<DType> answer;
  for (size_t c = 0; c < combinations; ++c) {
    // Decode combination c into one choice per operand.
    size_t rest = c;
    ResultState state;
    for (size_t i = 0; i < options.size(); ++i) {
      const Choice& choice = options[i][rest % options[i].size()];
      rest /= options[i].size();
      std::optional<DType>* slot = choice.slot == Slot::kDim       ? &state.dim
                                   : choice.slot == Slot::kZeroDim ? &state.zero_dim
                                                                   : &state.wrapped;
      *slot = PromoteSkipUndefined(*slot, choice.dtype, &state.failed);
    }
    std::optional<DType> lower =
        CombineCategories(state.zero_dim, state.wrapped, &state.failed);
    std::optional<DType> result = CombineCategories(state.dim, lower, &state.failed);
    if (state.failed || !result) return std::nullopt;
    if (answer && *answer != *result) return std::nullopt;
    answer = result;
  }
  return answer;
}

absl::StatusOr<SymbolicSizes> BroadcastSizes(const SymbolicSizes& a, const SymbolicSizes& b) {
  if (!a || !b) return SymbolicSizes();
  const auto& x = *a;
  const auto& y = *b;
  size_t rank = std::max(x.size(), y.size());
  std::vector<std::optional<int64_t>> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Aligned from the right; a missing dim acts as 1.
    std::optional<int64_t> dx = i < x.size() ? x[x.size() - 1 - i] : std::optional<int64_t>(1);
    std::optional<int64_t> dy = i < y.size() ? y[y.size() - 1 - i] : std::optional<int64_t>(1);
    std::optional<int64_t>& o = out[rank - 1 - i];
    if (dx && *dx == 1) {
      o = dy;
    } else if (dy && *dy == 1) {
      o = dx;
    } else if (dx && dy) {
      if (*dx != *dy) {
        return absl::InvalidArgumentError(
            absl::StrCat("sizes ", SizesToString(a), " and ", SizesToString(b),
                         " do not broadcast: dims ", *dx, " and ", *dy, " at position -",
                         i + 1));
      }
      o = dx;
    } else {
      o = dx ? dx : dy;  // a known dim (not 1) against an unknown one
    }
  }
  return SymbolicSizes(std::move(out));
}

std::string SizesToString(const SymbolicSizes& sizes) {
  if (!sizes) return "[*]";
  std::string s = "[";
  for (size_t i = 0; i < sizes->size(); ++i) {
    if (i) s += ", ";
    const auto& d = (*sizes)[i];
    if (d) {
      absl::StrAppend(&s, *d);
    } else {
      s += "?";
    }
  }
  s += "]";
  return s;
}

}  // namespace kiln::passes
