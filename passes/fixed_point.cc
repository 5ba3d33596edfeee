#include "passes/fixed_point.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/fingerprint.h"
#include "passes/pass_log.h"

namespace kiln::passes {

absl::StatusOr<FixedPointResult> RunToFixedPoint(absl::string_view label,
                                                 const FixedPointOptions& options,
                                                 ir::Graph& graph, const FixedPointBody& body) {
  if (options.max_iterations < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": iteration cap must be at least 1, got ", options.max_iterations));
  }
  FixedPointResult result;
  // fingerprints[i] = the graph after iteration i (0 = at entry).
  std::vector<uint64_t> fingerprints;
  // Each weight hashed once for all iterations (a large model's weights
  // dominated the pipeline's time, hashed again after every iteration).
  TensorHashMemo memo;
  if (options.detect_cycles) fingerprints.push_back(GraphFingerprint(graph, memo));
  while (true) {
    if (result.iterations == options.max_iterations) {
      result.hit_cap = true;
      if (options.fail_at_cap) {
        return absl::FailedPreconditionError(absl::StrCat(
            label, ": no fixed point after ", options.max_iterations,
            " iterations (the graph was still changing)"));
      }
      KILN_LOG_DEBUG("fixpoint", label, ": stopped at the cap of ", options.max_iterations,
                     " iterations while still changing");
      return result;
    }
    ++result.iterations;
    bool stop = false;
    absl::StatusOr<bool> changed = body(graph, &stop);
    if (!changed.ok()) return changed.status();
    if (*changed) result.changed = true;
    if (stop) {
      result.stopped = true;
      return result;
    }
    if (!*changed) return result;
    if (options.detect_cycles) {
      uint64_t fp = GraphFingerprint(graph, memo);
      for (size_t i = 0; i < fingerprints.size(); ++i) {
        if (fingerprints[i] != fp) continue;
        std::string earlier = i == 0 ? std::string("at entry")
                                     : absl::StrCat("after iteration ", i);
        return absl::FailedPreconditionError(absl::StrCat(
            label, ": cycle detected: the graph after iteration ", result.iterations,
            " is the same as ", earlier,
            ", but the passes still report changes (passes undoing each other, or a "
            "pass reporting a change it did not make)"));
      }
      fingerprints.push_back(fp);
    }
  }
}

FixedPointPass::FixedPointPass(std::unique_ptr<Pass> inner, FixedPointOptions options)
    : inner_(std::move(inner)),
      options_(options),
      name_(absl::StrCat("fixpoint(", inner_->name(), ")")) {}

absl::StatusOr<bool> FixedPointPass::Run(ir::Graph& graph) {
  absl::StatusOr<FixedPointResult> result =
      RunToFixedPoint(name_, options_, graph,
                      [this](ir::Graph& g, bool*) { return inner_->Run(g); });
  if (!result.ok()) return result.status();
  return result->changed;
}

}  // namespace kiln::passes
