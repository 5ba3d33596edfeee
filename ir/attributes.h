// Typed node attributes (TorchScript's AttributeKind: f fs i is s ss t ts ty
// tys c cs). Attributes are kept in insertion order, as PyTorch does, so
// printing is deterministic.
#ifndef KILN_IR_ATTRIBUTES_H_
#define KILN_IR_ATTRIBUTES_H_

#include <complex>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ir/symbol.h"
#include "ir/type.h"
#include "support/tensor.h"

namespace kiln::ir {

enum class AttributeKind : uint8_t { f, fs, i, is, s, ss, t, ts, ty, tys, c, cs };

const char* AttributeKindName(AttributeKind k);

using AttributeValue =
    std::variant<double, std::vector<double>, int64_t, std::vector<int64_t>,
                 std::string, std::vector<std::string>, Tensor,
                 std::vector<Tensor>, TypePtr, std::vector<TypePtr>,
                 std::complex<double>, std::vector<std::complex<double>>>;

// The variant's index order matches AttributeKind.
inline AttributeKind KindOf(const AttributeValue& v) {
  return static_cast<AttributeKind>(v.index());
}

struct Attribute {
  Symbol name;
  AttributeValue value;
};

// Equality of attribute values: tensors by value (Tensor::ValueEquals),
// types structurally, doubles bitwise (so NaN == NaN and 0. != -0.).
bool AttributeValueEquals(const AttributeValue& a, const AttributeValue& b);
uint64_t AttributeValueHash(const AttributeValue& v);

}  // namespace kiln::ir

#endif  // KILN_IR_ATTRIBUTES_H_
