// Runs a body (one pass, or a group of passes) until it stops changing the
// graph, with an iteration cap and cycle detection.
//
// Cycle detection: after each iteration that reports a change, the graph's
// fingerprint is compared with the fingerprints at entry and after every
// earlier iteration. A repeat means the body keeps "changing" the graph
// between states it has already been in (two rewrites undoing each other,
// or a pass that reports a change it did not make), which would never
// converge: that is an error naming the body.
#ifndef KILN_PASSES_FIXED_POINT_H_
#define KILN_PASSES_FIXED_POINT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/ir.h"
#include "passes/pass.h"

namespace kiln::passes {

constexpr int kDefaultFixedPointIterations = 10;
// Caps what a pipeline string may ask for (`fixpoint<N>`).
constexpr int kMaxFixedPointIterations = 10000;

struct FixedPointOptions {
  int max_iterations = kDefaultFixedPointIterations;
  bool detect_cycles = true;
  // Still changing after max_iterations: an error when true (tests, to
  // catch passes that never converge), otherwise the result stands and
  // FixedPointResult::hit_cap is set.
  bool fail_at_cap = false;
};

struct FixedPointResult {
  bool changed = false;   // any iteration changed the graph
  int iterations = 0;     // iterations run (including the final no-change one)
  bool hit_cap = false;   // stopped by max_iterations while still changing
  bool stopped = false;   // the body asked to stop (see FixedPointBody)
};

// One iteration: returns whether it changed the graph. Setting *stop ends
// the loop early without error (used by --stop-after).
using FixedPointBody = std::function<absl::StatusOr<bool>(ir::Graph&, bool* stop)>;

// `label` names the body in errors, e.g. "fixpoint(dce,cse)".
absl::StatusOr<FixedPointResult> RunToFixedPoint(absl::string_view label,
                                                 const FixedPointOptions& options,
                                                 ir::Graph& graph, const FixedPointBody& body);

// A pass that runs another pass to a fixed point, for use outside pipeline
// strings. Its name is "fixpoint(<inner name>)"; counters accumulate on the
// inner pass.
class FixedPointPass final : public Pass {
 public:
  FixedPointPass(std::unique_ptr<Pass> inner, FixedPointOptions options = {});
  absl::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(ir::Graph& graph) override;
  Pass& inner() { return *inner_; }

 private:
  std::unique_ptr<Pass> inner_;
  FixedPointOptions options_;
  std::string name_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_FIXED_POINT_H_
