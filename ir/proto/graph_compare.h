// Structural comparison of two graphs for round-trip tests: kinds, value
// names and printed numbers, types, attributes (tensors by bytes, placeholders
// by dtype/shape/strides), source locations, scopes, use structure and blocks.
#ifndef KILN_IR_PROTO_GRAPH_COMPARE_H_
#define KILN_IR_PROTO_GRAPH_COMPARE_H_

#include <string>

#include "ir/ir.h"

namespace kiln::ir::testing {

// "" when `a` and `b` are the same graph; otherwise the first difference.
std::string GraphDifference(const Graph& a, const Graph& b);

}  // namespace kiln::ir::testing

#endif  // KILN_IR_PROTO_GRAPH_COMPARE_H_
