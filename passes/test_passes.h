// Passes and helpers for testing the pass manager (testonly).
//
// The test registry holds:
//   noop (alias nop)   never changes anything
//   fail               returns InvalidArgument("test failure")
//   add_marker         appends a test::marker node (never converges)
//   remove_marker      removes one test::marker node if there is one
//   toggle_marker      adds a marker if there is none, else removes it
//   lie_unchanged      adds a marker but reports no change
//   lie_changed        reports a change but does nothing
//   make_invalid       appends a test::invalid node (TestVerifier rejects it)
//   crash              abort()s
//   count_nodes        counts nodes into the "nodes_seen" counter, no change
#ifndef KILN_PASSES_TEST_PASSES_H_
#define KILN_PASSES_TEST_PASSES_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "ir/ir.h"
#include "passes/pass_registry.h"

namespace kiln::passes::testing {

PassRegistry MakeTestRegistry();

// graph(%x): %r = aten::relu(%x); %y = aten::add(%r, %x); return (%y)
std::unique_ptr<ir::Graph> MakeSmallGraph();

size_t CountMarkers(const ir::Graph& g);

// Rejects graphs containing test::invalid nodes: "node 3 (test::invalid) is
// not allowed".
absl::Status TestVerifier(const ir::Graph& g);

// A stand-in for ir::PrintGraph: one line per top-level node, "kind(inputs)".
std::string TestPrintGraph(const ir::Graph& g);

}  // namespace kiln::passes::testing

#endif  // KILN_PASSES_TEST_PASSES_H_
