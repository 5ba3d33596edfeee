// PyTorch's type promotion and broadcasting, on facts that may be unknown.
//
// ResultType is support/promotion.h's result_type (c10's rules, written
// once for passes and runtime) lifted to operands with unknowns:
//
// Unknowns: an operand whose tensor rank is unknown may be either a
// dimensioned or a 0-dim tensor, and a `Scalar`-typed operand may be an int,
// a float or a complex. ResultType tries every combination (a handful at
// most) and answers only when they all agree. An unknown tensor dtype makes
// the result unknown.
#ifndef KILN_PASSES_TYPE_PROMOTION_H_
#define KILN_PASSES_TYPE_PROMOTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/type.h"
#include "support/dtype.h"
#include "support/promotion.h"

namespace kiln::passes {

// The dtype-level rules (PromoteTypes, CategoryOf, result_type's classes)
// are support/promotion.h's, shared with the runtime; this file adds the
// unknowns of IR types.

// One operand of result_type.
struct PromotionOperand {
  enum class Kind : uint8_t {
    kTensor,        // a tensor; rank decides its priority (unknown rank: both)
    kScalar,        // a Python number of known kind (dtype kBool/kInt64/kFloat64/kComplex64)
    kUnknownScalar  // a `Scalar` of unknown kind: int, float or complex
  };
  Kind kind = Kind::kTensor;
  std::optional<DType> dtype;  // tensors: element type; scalars: see above
  std::optional<size_t> rank;  // tensors only
};

// The operand for an IR type: a tensor type, int/float/bool/complex/Scalar,
// or nullopt for anything else (None, lists, ...).
std::optional<PromotionOperand> PromotionOperandFor(const ir::Type& type);

// result_type over the operands; nullopt when unknown or not representable.
std::optional<DType> ResultType(absl::Span<const PromotionOperand> operands);

// Sizes with unknown rank (nullopt) or unknown dims (nullopt entries).
using SymbolicSizes = std::optional<std::vector<std::optional<int64_t>>>;

// NumPy-style broadcasting of two shapes. A dim of 1 takes the other dim
// (even an unknown one); a known dim other than 1 against an unknown dim
// gives the known dim (the unknown one must be 1 or equal for the program
// to be valid); two unknown dims stay unknown. Two known dims that differ
// and are not 1 are an error ("dims 3 and 4 at position -1 do not
// broadcast"); callers prefix it with the node.
absl::StatusOr<SymbolicSizes> BroadcastSizes(const SymbolicSizes& a, const SymbolicSizes& b);

// "[2, ?, 4]" or "[*]" for unknown rank, for messages.
std::string SizesToString(const SymbolicSizes& sizes);

}  // namespace kiln::passes

#endif  // KILN_PASSES_TYPE_PROMOTION_H_
