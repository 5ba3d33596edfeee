#include "runtime/promotion.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln::runtime {
namespace {

int Category(DType t) {
  if (t == DType::kBool) return 0;
  if (IsIntegral(t, /*include_bool=*/false)) return 1;
  if (IsFloatingPoint(t)) return 2;
  return 3;
}

int FloatWidth(DType t) {
  switch (t) {
    case DType::kFloat16:
    case DType::kBFloat16: return 1;
    case DType::kFloat32: return 2;
    default: return 3;
  }
}

// A class's accumulated dtype, or nullopt when the class is empty.
using Acc = std::optional<DType>;

}  // namespace

std::optional<DType> PromoteDTypes(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  const int ca = Category(a), cb = Category(b);
  if (ca != cb) {
    // Complex beats everything except float64 (which would need complex128).
    if (ca == 3 || cb == 3) {
      const DType other = ca == 3 ? b : a;
      if (other == DType::kFloat64) return std::nullopt;
      return DType::kComplex64;
    }
    return ca > cb ? a : b;
  }
  if (ca == 1) {
    const bool ua = IsUnsigned(a), ub = IsUnsigned(b);
    if (ua == ub) return DTypeSize(a) >= DTypeSize(b) ? a : b;
    // Mixed signedness (numpy's rule, which c10 follows for uint8): the
    // signed type when it is wider, else the signed type twice the unsigned
    // one's width; uint64 has none, so it meets signed types at int64.
    const DType u = ua ? a : b, s = ua ? b : a;
    if (DTypeSize(s) > DTypeSize(u)) return s;
    switch (DTypeSize(u)) {
      case 1: return DType::kInt16;
      case 2: return DType::kInt32;
      default: return DType::kInt64;
    }
  }
  if (ca == 2) {
    if (FloatWidth(a) == 1 && FloatWidth(b) == 1) return DType::kFloat32;  // half vs bfloat16
    return FloatWidth(a) > FloatWidth(b) ? a : b;
  }
  return DType::kComplex64;
}

namespace {

absl::StatusOr<Acc> Combine(Acc acc, DType t) {
  if (!acc) return Acc(t);
  std::optional<DType> p = PromoteDTypes(*acc, t);
  if (!p) {
    return absl::InvalidArgumentError(absl::StrCat("type promotion of ", DTypeName(*acc), " and ",
                                                   DTypeName(t), " is not representable"));
  }
  return Acc(*p);
}

// c10's combine_categories: `higher` is the result of a higher-priority class.
absl::StatusOr<Acc> CombineClasses(Acc higher, Acc lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  const int ch = Category(*higher), cl = Category(*lower);
  if (ch == 3) return higher;
  if (cl == 3) {
    if (ch == 2) return Combine(higher, *lower);
    return lower;
  }
  if (ch == 2) return higher;
  if (ch == 0 || cl == 2) return Combine(higher, *lower);
  return higher;
}

}  // namespace

absl::StatusOr<DType> ResultType(absl::Span<const DTypeOperand> operands) {
  if (operands.empty()) return absl::InvalidArgumentError("result_type of no operands");
  Acc dim, zero, scalar;
  for (const DTypeOperand& op : operands) {
    switch (op.cls) {
      case OperandClass::kDimensioned: {
        absl::StatusOr<Acc> r = Combine(dim, op.dtype);
        if (!r.ok()) return r.status();
        dim = *r;
        break;
      }
      case OperandClass::kZeroDim: {
        absl::StatusOr<Acc> r = Combine(zero, op.dtype);
        if (!r.ok()) return r.status();
        zero = *r;
        break;
      }
      case OperandClass::kScalar: {
        const DType t = op.dtype == DType::kFloat64 ? DType::kFloat32 : op.dtype;
        absl::StatusOr<Acc> r = Combine(scalar, t);
        if (!r.ok()) return r.status();
        scalar = *r;
        break;
      }
    }
  }
  absl::StatusOr<Acc> lower = CombineClasses(zero, scalar);
  if (!lower.ok()) return lower.status();
  absl::StatusOr<Acc> all = CombineClasses(dim, *lower);
  if (!all.ok()) return all.status();
  return **all;
}

}  // namespace kiln::runtime
