#include "passes/type_promotion.h"

#include <algorithm>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln::passes {

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
  // Each operand's possible readings as a support::DTypeOperand: an unknown
  // rank may be dimensioned or 0-dim, an unknown Scalar an int, a float or a
  // complex number.
  std::vector<std::vector<DTypeOperand>> options;
  options.reserve(operands.size());
  size_t combinations = 1;
  for (const PromotionOperand& op : operands) {
    std::vector<DTypeOperand> choices;
    switch (op.kind) {
      case PromotionOperand::Kind::kTensor:
        if (!op.dtype) return std::nullopt;
        if (!op.rank || *op.rank > 0) choices.push_back({*op.dtype, OperandClass::kDimensioned});
        if (!op.rank || *op.rank == 0) choices.push_back({*op.dtype, OperandClass::kZeroDim});
        break;
      case PromotionOperand::Kind::kScalar:
        if (!op.dtype) return std::nullopt;
        choices.push_back({*op.dtype, OperandClass::kScalar});
        break;
      case PromotionOperand::Kind::kUnknownScalar:
        for (DType d : {DType::kInt64, DType::kFloat64, DType::kComplex64}) {
          choices.push_back({d, OperandClass::kScalar});
        }
        break;
    }
    combinations *= choices.size();
    if (combinations > 64) return std::nullopt;
    options.push_back(std::move(choices));
  }
  if (options.empty()) return std::nullopt;

  std::optional<DType> answer;
  for (size_t c = 0; c < combinations; ++c) {
    // Decode combination c into one reading per operand.
    size_t rest = c;
    ResultTypeState state;
    for (const std::vector<DTypeOperand>& choices : options) {
      state.Add(choices[rest % choices.size()]);
      rest /= choices.size();
    }
    std::optional<DType> result = state.Result();
    if (!result) return std::nullopt;
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
