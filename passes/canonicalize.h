// Canonicalize: gives a graph's anonymous values stable numbers so that
// graphs built in different ways print identically.
//
// Exactly what it changes: every value whose debug name is empty or all
// digits (the ones that print as `%<number>`) is named with the next number
// of a counter starting at 0, in definition order: graph inputs, then for
// each node in block order its outputs and then, for each of its blocks in
// order, the block's inputs followed by the block's nodes (the order in
// which the printer first shows each value). Values with other names keep
// them (PyTorch's Canonicalize with keep_unique_names=true); with
// keep_names=false every name is dropped first, so all values are
// numbered. Nothing else changes: node order, inputs, attributes, types and
// source locations are untouched.
//
// Numbers are set as explicit (all-digit) debug names, so the result is
// stable under printing, copying and re-parsing; values created afterwards
// get fresh numbers past the largest one used.
//
// Returns true iff some value's name changed. Linear time, no recursion.
#ifndef KILN_PASSES_CANONICALIZE_H_
#define KILN_PASSES_CANONICALIZE_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

struct CanonicalizeOptions {
  bool keep_names = true;
};

// Statistics: "values_renamed".
absl::StatusOr<bool> Canonicalize(ir::Graph& graph, PassStatistics& stats,
                                  const CanonicalizeOptions& options = {});

// Registers "canonicalize" (keep_names = true).
absl::Status RegisterCanonicalizePass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_CANONICALIZE_H_
