// Structural comparison of two graphs, for round-trip tests of the text and
// proto formats.
#ifndef KILN_IR_GRAPH_EQUAL_H_
#define KILN_IR_GRAPH_EQUAL_H_

#include <string>

#include "ir/ir.h"

namespace kiln::ir {

// True when `a` and `b` have the same inputs, nodes (kind, attributes, types,
// printed value names, source locations, scopes, blocks, in order), use
// structure and outputs. Attribute values compare with AttributeValueEquals,
// except that two placeholder tensors (no data) are equal when dtype, sizes
// and strides match. On a mismatch, `diff` (if not null) describes the first
// difference found.
bool GraphsStructurallyEqual(const Graph& a, const Graph& b, std::string* diff);

}  // namespace kiln::ir

#endif  // KILN_IR_GRAPH_EQUAL_H_
