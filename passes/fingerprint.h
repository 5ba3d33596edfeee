// A fast structural hash of a whole graph, used to check a pass's changed
// bit and to detect fixed-point cycles.
//
// Two graphs get the same fingerprint when they would print the same up to
// the numbers of unnamed values: node kinds and order, block structure,
// inputs (by position in a definition-order numbering, so recreating an
// identical node gives the same fingerprint), attributes, types, debug
// names, source locations and scopes. Deterministic across processes.
// Linear time, no recursion (deep block nesting is safe).
#ifndef KILN_PASSES_FINGERPRINT_H_
#define KILN_PASSES_FINGERPRINT_H_

#include <cstdint>

#include "ir/ir.h"

namespace kiln::passes {

uint64_t GraphFingerprint(const ir::Graph& graph);

// Structural hash of a type (what TypeEquals compares).
uint64_t TypeFingerprint(const ir::Type& type);

}  // namespace kiln::passes

#endif  // KILN_PASSES_FINGERPRINT_H_
